/* Memory plans: the storage of a compiled plan's runs served from one
 * block (the allocator, alloc.c, hands a request here while a plan runs on
 * the thread, and its cache serves what the plan does not).
 *
 * A compiled plan replays the same ops, so the storage requests of one run
 * (on the thread running it) come in the same order every time, with the
 * same sizes for the same shapes. The first run records them: the size,
 * and when each is freed in the run's sequence of requests and frees (a
 * request still alive at the end escapes: an output). Then the placement
 * is computed once, linearly: the requests replayed through free lists per
 * size class over one block, a request taking a region of the block freed
 * earlier in the run when one of its class is free, else a new region at
 * the block's end. Later runs take request k from its region, and their
 * frees of it are no-ops: no allocator calls, the same memory every run.
 *
 * A symbolic plan's sizes follow its symbols (a decode step's attention
 * rows grow with the position), so request k may differ in size from run
 * to run: it takes its region when it fits there (at most the size it was
 * planned for) and the region is free in this run. The second condition
 * is checked, not assumed: each region knows the request occupying it, so
 * a run whose requests came in another order can never be handed memory a
 * live request holds; such a request, or one that does not fit, goes to
 * the allocator, and the plan records again on its next run, giving the
 * requests that grew twice their new size (a size that keeps growing
 * re-plans a logarithmic number of times). After MAX_RERECORDS re-plans
 * it keeps the last one. Blocks of a run still held at its end (they
 * cannot be, unless the run differed) are kept apart until the last one is
 * freed and the plan records no more. */

#include "plan_memory_impl.h"
#include "tensor_impl.h"

#include <pthread.h>
#include <stdlib.h>

_Thread_local tt_mem_plan *tt__mem_plan_running; /* the plan run on this thread */

enum { MAX_RERECORDS = 16 };

typedef struct {
    size_t nbytes;
    size_t want;     /* the size planned for: nbytes, or twice it when it grew */
    size_t cap;      /* capacity given to the storage */
    size_t offset;   /* in the block */
    int64_t region;  /* the block's region it takes; -1: escapes */
    int64_t freed;   /* event number of its free in the recorded run; -1: escapes */
    int64_t made;    /* event number of its request */
} plan_req;

struct tt_mem_plan {
    enum { MP_RECORD, MP_READY, MP_OFF } state;
    tt_allocator owner; /* the hook the block came from */
    atomic_flag busy; /* one run at a time */
    plan_req *reqs;
    int64_t nreqs, cap_reqs;
    int64_t event;
    /* Recording: the live requests' pointers, to find a free's request. */
    void **live_ptr;
    int64_t *live_req;
    int64_t nlive, cap_live;
    /* Ready: the block, its regions (by offset, ascending) with the
     * request now in each (-1: free), and this run's position and state. */
    char *block;
    size_t size;
    size_t *region_off;
    int64_t *region_req;
    int64_t nregions;
    int64_t next;
    int64_t held;   /* blocks of the current run not freed yet */
    int64_t missed; /* this run's requests the block did not serve */
    /* Re-planning: the previous record's sizes, by request index. */
    size_t *prev_nbytes, *prev_want;
    int64_t nprev;
    int rerecords;
};

/* Blocks a run left held (see above): freed when their last piece is. */
typedef struct orphan {
    char *block;
    size_t size;
    tt_allocator owner;
    int64_t held;
    struct orphan *next;
} orphan;

static pthread_mutex_t orphan_lock = PTHREAD_MUTEX_INITIALIZER;
static orphan *orphans;
atomic_int tt__mem_plan_orphans;

tt_mem_plan *tt__mem_plan_new(void)
{
    tt_mem_plan *mp = calloc(1, sizeof *mp);
    if (mp)
        atomic_flag_clear(&mp->busy);
    return mp;
}

void tt__mem_plan_free(tt_mem_plan *mp)
{
    if (!mp)
        return;
    if (mp->block)
        mp->owner.free(mp->block, mp->owner.ud);
    free(mp->reqs);
    free(mp->live_ptr);
    free(mp->live_req);
    free(mp->region_off);
    free(mp->region_req);
    free(mp->prev_nbytes);
    free(mp->prev_want);
    free(mp);
}

size_t tt__mem_plan_bytes(const tt_mem_plan *mp)
{
    return mp && mp->state == MP_READY ? mp->size : 0;
}

void tt__mem_plan_sharing(const tt_mem_plan *mp, int64_t *buffers, int64_t *unshared)
{
    *buffers = *unshared = 0;
    for (int64_t k = 0; mp && mp->state == MP_READY && k < mp->nreqs; k++)
        if (mp->reqs[k].region >= 0) {
            ++*buffers;
            *unshared += (int64_t)mp->reqs[k].want;
        }
}

bool tt__mem_plan_begin(tt_mem_plan *mp)
{
    if (!mp || mp->state == MP_OFF || tt__mem_plan_running || atomic_flag_test_and_set(&mp->busy))
        return false;
    tt__mem_plan_running = mp;
    mp->event = 0;
    mp->next = 0;
    mp->held = 0;
    mp->missed = 0;
    return true;
}

/* Stops recording for good (out of memory for the record). */
static void plan_give_up(tt_mem_plan *mp)
{
    mp->state = MP_OFF;
    mp->nlive = 0;
}

static void *plan_alloc(size_t nbytes, size_t *capacity)
{
    tt_mem_plan *mp = tt__mem_plan_running;
    if (!mp)
        return NULL;
    if (mp->state == MP_READY) {
        int64_t k = mp->next++;
        if (k >= mp->nreqs) {
            mp->missed++;
            return NULL;
        }
        plan_req *r = &mp->reqs[k];
        if (r->region < 0)
            return NULL; /* escapes: the allocator's */
        if (nbytes > r->cap || mp->region_req[r->region] >= 0) {
            mp->missed++; /* too big, or its region is in use: another order */
            return NULL;
        }
        mp->region_req[r->region] = k;
        mp->held++;
        *capacity = r->cap;
        return mp->block + r->offset;
    }
    if (mp->state != MP_RECORD)
        return NULL;
    /* Recording: note the request; the allocator serves it (the caller
     * continues below, and plan_note sees its pointer). */
    if (mp->nreqs == mp->cap_reqs) {
        int64_t nc = mp->cap_reqs ? 2 * mp->cap_reqs : 64;
        plan_req *r = realloc(mp->reqs, sizeof *r * (size_t)nc);
        if (!r) {
            plan_give_up(mp);
            return NULL;
        }
        mp->reqs = r;
        mp->cap_reqs = nc;
    }
    /* A request that grew since the last plan is planned at twice its
     * size; one planned larger before keeps that room. */
    size_t want = nbytes;
    int64_t k = mp->nreqs;
    if (k < mp->nprev) {
        if (nbytes > mp->prev_nbytes[k] && nbytes <= SIZE_MAX / 2)
            want = 2 * nbytes;
        if (mp->prev_want[k] > want)
            want = mp->prev_want[k];
    }
    mp->reqs[mp->nreqs++] =
        (plan_req){.nbytes = nbytes, .want = want, .freed = -1, .made = mp->event++};
    return NULL;
}

/* Recording: the request just noted got pointer p. */
static void plan_note(void *p)
{
    tt_mem_plan *mp = tt__mem_plan_running;
    if (mp->state != MP_RECORD)
        return;
    if (mp->nlive == mp->cap_live) {
        int64_t nc = mp->cap_live ? 2 * mp->cap_live : 64;
        void **np = realloc(mp->live_ptr, sizeof *np * (size_t)nc);
        if (np)
            mp->live_ptr = np;
        int64_t *nr = np ? realloc(mp->live_req, sizeof *nr * (size_t)nc) : NULL;
        if (!nr) {
            plan_give_up(mp);
            return;
        }
        mp->live_req = nr;
        mp->cap_live = nc;
    }
    mp->live_ptr[mp->nlive] = p;
    mp->live_req[mp->nlive++] = mp->nreqs - 1;
}

/* While a plan runs on this thread: its block's place for this request,
 * or (first run, or a request the plan did not see) the cache's, noted
 * so the plan places it next time. */
void *tt__mem_plan_alloc(size_t nbytes, size_t *capacity)
{
    void *p = plan_alloc(nbytes, capacity);
    if (!p && (p = tt__cache_alloc(nbytes, capacity)) != NULL)
        plan_note(p);
    return p;
}

/* True when p was a planned block (nothing to free). */
bool tt__mem_plan_take_free(void *p)
{
    tt_mem_plan *mp = tt__mem_plan_running;
    if (mp && mp->state == MP_READY && mp->block && (char *)p >= mp->block &&
        (char *)p < mp->block + mp->size) {
        /* Its region: the last one starting at or before p. */
        size_t off = (size_t)((char *)p - mp->block);
        int64_t lo = 0, hi = mp->nregions - 1;
        while (lo < hi) {
            int64_t mid = (lo + hi + 1) / 2;
            if (mp->region_off[mid] <= off)
                lo = mid;
            else
                hi = mid - 1;
        }
        if (mp->region_off[lo] == off && mp->region_req[lo] >= 0) {
            mp->region_req[lo] = -1;
            mp->held--;
        }
        return true;
    }
    if (mp && mp->state == MP_RECORD) {
        /* Newest first: a run's temporaries die young. */
        for (int64_t i = mp->nlive - 1; i >= 0; i--)
            if (mp->live_ptr[i] == p) {
                mp->reqs[mp->live_req[i]].freed = mp->event++;
                mp->live_ptr[i] = mp->live_ptr[mp->nlive - 1];
                mp->live_req[i] = mp->live_req[mp->nlive - 1];
                mp->nlive--;
                break;
            }
        return false;
    }
    if (atomic_load(&tt__mem_plan_orphans) == 0)
        return false;
    bool mine = false;
    pthread_mutex_lock(&orphan_lock);
    for (orphan **o = &orphans; *o; o = &(*o)->next) {
        if ((char *)p < (*o)->block || (char *)p >= (*o)->block + (*o)->size)
            continue;
        mine = true;
        if (--(*o)->held == 0) {
            orphan *dead = *o;
            *o = dead->next;
            dead->owner.free(dead->block, dead->owner.ud);
            free(dead);
            atomic_fetch_sub(&tt__mem_plan_orphans, 1);
        }
        break;
    }
    pthread_mutex_unlock(&orphan_lock);
    return mine;
}

/* Places the recorded requests (see the top of this file). */
static void plan_place(tt_mem_plan *mp)
{
    int64_t n = mp->nreqs, nev = mp->event;
    int64_t *ev = malloc(sizeof *ev * (size_t)(nev ? nev : 1));
    int64_t *next = malloc(sizeof *next * (size_t)(n ? n : 1));
    /* at most one region per request */
    free(mp->region_off);
    free(mp->region_req);
    mp->region_off = malloc(sizeof *mp->region_off * (size_t)(n ? n : 1));
    mp->region_req = malloc(sizeof *mp->region_req * (size_t)(n ? n : 1));
    mp->nregions = 0;
    int64_t head[NCLASSES];
    if (!ev || !next || !mp->region_off || !mp->region_req) {
        free(ev);
        free(next);
        plan_give_up(mp);
        return;
    }
    for (int c = 0; c < NCLASSES; c++)
        head[c] = -1;
    for (int64_t k = 0; k < n; k++) {
        ev[mp->reqs[k].made] = k;
        if (mp->reqs[k].freed >= 0)
            ev[mp->reqs[k].freed] = -1 - k;
    }
    size_t top = 0;
    for (int64_t e = 0; e < nev; e++) {
        int64_t k = ev[e] >= 0 ? ev[e] : -1 - ev[e];
        plan_req *r = &mp->reqs[k];
        if (r->freed < 0) {
            r->region = -1; /* escapes: not in the block */
            continue;
        }
        size_t cap;
        int c = tt__size_class(r->want ? r->want : 1, &cap);
        cap = (cap + 63) & ~(size_t)63;
        bool pooled = c < NCLASSES;
        if (ev[e] >= 0) { /* a request */
            r->cap = cap;
            if (pooled && head[c] >= 0) {
                r->offset = mp->reqs[head[c]].offset;
                r->region = mp->reqs[head[c]].region;
                head[c] = next[head[c]];
            } else {
                r->offset = top;
                r->region = mp->nregions;
                mp->region_off[mp->nregions] = top;
                mp->region_req[mp->nregions++] = -1;
                top += cap;
            }
        } else if (pooled) { /* a free: its block waits for its class */
            next[k] = head[c];
            head[c] = k;
        }
    }
    free(ev);
    free(next);
    mp->owner = tt__current_allocator();
    mp->block = top ? mp->owner.alloc(top, 64, mp->owner.ud) : NULL;
    if (top && !mp->block) {
        plan_give_up(mp);
        return;
    }
    mp->size = top;
    mp->state = MP_READY;
    /* The recorded run's storage sits in the caches now, and the block
     * replaces it: give the cached blocks back before the block's pages
     * are touched, or the process would hold both. */
    tt__empty_caches();
}

/* The run just ended missed the block (sizes grew, or the requests came
 * in another order) and held nothing of it at its end: the next run
 * records again, remembering this record's sizes by request index. */
static void plan_rerecord(tt_mem_plan *mp)
{
    size_t *pn = realloc(mp->prev_nbytes, sizeof *pn * (size_t)(mp->nreqs ? mp->nreqs : 1));
    if (pn)
        mp->prev_nbytes = pn;
    size_t *pw = pn ? realloc(mp->prev_want, sizeof *pw * (size_t)(mp->nreqs ? mp->nreqs : 1))
                    : NULL;
    if (!pw) {
        mp->nprev = 0;
        return; /* keep the plan as it is */
    }
    mp->prev_want = pw;
    for (int64_t k = 0; k < mp->nreqs; k++) {
        pn[k] = mp->reqs[k].nbytes;
        pw[k] = mp->reqs[k].want;
    }
    mp->nprev = mp->nreqs;
    if (mp->block)
        mp->owner.free(mp->block, mp->owner.ud);
    mp->block = NULL;
    mp->size = 0;
    mp->nreqs = 0;
    mp->nregions = 0;
    mp->event = 0;
    mp->rerecords++;
    mp->state = MP_RECORD;
}

void tt__mem_plan_end(tt_mem_plan *mp)
{
    if (!mp || tt__mem_plan_running != mp)
        return;
    tt__mem_plan_running = NULL;
    if (mp->state == MP_RECORD) {
        plan_place(mp);
        free(mp->live_ptr);
        free(mp->live_req);
        mp->live_ptr = NULL;
        mp->live_req = NULL;
        mp->nlive = mp->cap_live = 0;
    } else if (mp->state == MP_READY && mp->held > 0) {
        /* A run that left the record kept blocks past its end: the block
         * is theirs now, and this plan stops planning. */
        orphan *o = malloc(sizeof *o);
        if (o) {
            *o = (orphan){mp->block, mp->size, mp->owner, mp->held, NULL};
            pthread_mutex_lock(&orphan_lock);
            o->next = orphans;
            orphans = o;
            atomic_fetch_add(&tt__mem_plan_orphans, 1);
            pthread_mutex_unlock(&orphan_lock);
        } /* else: leaked rather than freed under live tensors */
        mp->block = NULL;
        mp->state = MP_OFF;
    } else if (mp->state == MP_READY && mp->missed > 0 && mp->rerecords < MAX_RERECORDS) {
        plan_rerecord(mp);
    }
    atomic_flag_clear(&mp->busy);
}
