/* Memory plans: the storage of a compiled plan's runs served from one
 * block (the allocator, alloc.c, hands a request here while a plan runs on
 * the thread, and its cache serves what the plan does not).
 *
 * A compiled plan replays the same ops on the same shapes, so the storage
 * requests of one run (on the thread running it) come in the same order
 * with the same sizes every time. The first run records them: the size,
 * and when each is freed in the run's sequence of requests and frees (a
 * request still alive at the end escapes: an output). Then the placement
 * is computed once, linearly: the requests replayed through free lists per
 * size class over one block, a request taking a block freed earlier in the
 * run when one of its class is free, else the block's end. Later runs take
 * request k from its place in the block, and their frees of it are no-ops:
 * no allocator calls, the same memory every run. A run whose requests
 * differ from the record (another size at some index) takes that request
 * and the rest of the run from the allocator; blocks of the run still held
 * at its end (they cannot be, unless the run differed) are kept apart until
 * the last one is freed and the plan records no more. */

#include "plan_memory_impl.h"
#include "tensor_impl.h"

#include <pthread.h>
#include <stdlib.h>

_Thread_local tt_mem_plan *tt__mem_plan_running; /* the plan run on this thread */

typedef struct {
    size_t nbytes;
    size_t cap;      /* capacity given to the storage */
    size_t offset;   /* in the block */
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
    /* Ready: the block, and this run's position and state. */
    char *block;
    size_t size;
    int64_t next;
    int64_t held;  /* blocks of the current run not freed yet */
    bool diverged; /* this run's requests left the record */
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
    free(mp);
}

size_t tt__mem_plan_bytes(const tt_mem_plan *mp)
{
    return mp && mp->state == MP_READY ? mp->size : 0;
}

bool tt__mem_plan_begin(tt_mem_plan *mp)
{
    if (!mp || mp->state == MP_OFF || tt__mem_plan_running || atomic_flag_test_and_set(&mp->busy))
        return false;
    tt__mem_plan_running = mp;
    mp->event = 0;
    mp->next = 0;
    mp->held = 0;
    mp->diverged = false;
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
        if (mp->diverged || k >= mp->nreqs || mp->reqs[k].nbytes != nbytes) {
            mp->diverged = true;
            return NULL;
        }
        if (mp->reqs[k].freed < 0)
            return NULL; /* escapes: the allocator's */
        mp->held++;
        *capacity = mp->reqs[k].cap;
        return mp->block + mp->reqs[k].offset;
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
    mp->reqs[mp->nreqs++] = (plan_req){.nbytes = nbytes, .freed = -1, .made = mp->event++};
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
        mp->held--;
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
    int64_t head[NCLASSES];
    if (!ev || !next) {
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
        if (r->freed < 0)
            continue; /* escapes: not in the block */
        size_t cap;
        int c = tt__size_class(r->nbytes ? r->nbytes : 1, &cap);
        cap = (cap + 63) & ~(size_t)63;
        bool pooled = c < NCLASSES;
        if (ev[e] >= 0) { /* a request */
            r->cap = cap;
            if (pooled && head[c] >= 0) {
                r->offset = mp->reqs[head[c]].offset;
                head[c] = next[head[c]];
            } else {
                r->offset = top;
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
    }
    atomic_flag_clear(&mp->busy);
}
