/* All allocation goes through one hook (tt_set_allocator), with a test
 * switch that fails the n-th request, and live counts of tensors and
 * storages. Storage bytes come from a caching allocator: freed blocks wait
 * in size-class free lists, so the eager path of small ops does not pay for
 * malloc/free of data each call. A compiled plan's memory plan
 * (plan_memory.c) serves the storage of its runs from one block. */
#include "tensor_impl.h"
#include "plan_memory_impl.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Room for tt__callsite_text's " in tt_xxx, called from file:line in f". */
#define TT_SRCLOC_TEXT 512

/* Under AddressSanitizer the caches are bypassed: every block goes back to
 * the hook at once, so ASan's quarantine sees a use after tt_release or a
 * double release (in user code and in ours) that a recycled block would
 * hide. Requests are counted as before, so fault injection does not move. */
#if defined(__SANITIZE_ADDRESS__)
#define CACHES 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CACHES 0
#endif
#endif
#ifndef CACHES
#define CACHES 1
#endif

static size_t block_capacity(size_t nbytes, int *cls, bool *pooled);
#define CACHE_MAX_BLOCK ((size_t)1 << 30)

static void *default_alloc(size_t size, size_t align, void *ud)
{
    (void)ud;
    void *p = NULL;
    if (align <= 16)
        return malloc(size ? size : 1); /* malloc's own alignment is 16 */
    if (posix_memalign(&p, align, size ? size : 1) != 0)
        return NULL;
    return p;
}

static void default_free(void *p, void *ud)
{
    (void)ud;
    free(p);
}

/* Every allocator ever set, so a block goes back to the one that made it:
 * a small block records its allocator's index in its header, a thread's
 * cache of storage blocks records the index of its blocks. Entries are
 * never removed (a block may outlive the switch); setting the same hook
 * again reuses its entry. */
#define MAX_ALLOCATORS 64
static tt_allocator allocators[MAX_ALLOCATORS] = {{default_alloc, default_free, NULL}};
static int nallocators = 1; /* under set_lock */
static atomic_int current;  /* the index new blocks come from */
static pthread_mutex_t set_lock = PTHREAD_MUTEX_INITIALIZER;
/* Storage blocks handed out by the current allocator and not yet given
 * back (a live count, COUNT_BLOCKS below): while any is alive the
 * allocator cannot change (the storage does not record where its block
 * came from). */

static inline int hook_index(void) { return atomic_load_explicit(&current, memory_order_acquire); }
static inline void *hook_alloc(int i, size_t size, size_t align)
{
    return allocators[i].alloc(size, align, allocators[i].ud);
}
static inline void hook_free(int i, void *p) { allocators[i].free(p, allocators[i].ud); }

/* The failure switch counts per thread: tests drive it from one thread,
 * and the hot path then pays no atomic operation for it. */
static _Thread_local int64_t requests;
static _Thread_local int64_t fail_at; /* 0: never */

/* ---- live counts
 * Tensors, storages and storage blocks alive, counted per thread: a
 * thread adds to its own counters with a plain load and store (an atomic
 * add on one shared counter was a locked instruction, six per eager op
 * and its release, a fifth of a 1-element tt_add), and a query sums every
 * thread's counters with those of threads that have exited. A tensor
 * made on one thread and released on another counts +1 on the first and
 * -1 on the second; the sum is exact whenever no thread is making or
 * releasing tensors (where tests and tt_set_allocator ask). */
enum { COUNT_TENSORS, COUNT_STORAGES, COUNT_BLOCKS, COUNT_BYTES, COUNT_KINDS };

typedef struct thread_counts {
    atomic_int_fast64_t v[COUNT_KINDS]; /* written by its thread only */
    struct thread_counts *prev, *next;  /* the live threads, under counts_lock */
} thread_counts;

static _Thread_local thread_counts counts;
/* 0: not yet linked; 1: linked (the fast path); 2: its thread is exiting,
 * or could not link: counts go to the shared counters. */
static _Thread_local int counts_state;
static atomic_int_fast64_t counts_shared[COUNT_KINDS];
static pthread_mutex_t counts_lock = PTHREAD_MUTEX_INITIALIZER;
static thread_counts *counts_head;
static pthread_key_t counts_key;
static pthread_once_t counts_once = PTHREAD_ONCE_INIT;

/* At the thread's exit: its counts join the shared ones. */
static void counts_exit(void *p)
{
    thread_counts *c = p;
    pthread_mutex_lock(&counts_lock);
    for (int k = 0; k < COUNT_KINDS; k++)
        atomic_fetch_add(&counts_shared[k], atomic_load_explicit(&c->v[k], memory_order_relaxed));
    if (c->prev)
        c->prev->next = c->next;
    else
        counts_head = c->next;
    if (c->next)
        c->next->prev = c->prev;
    pthread_mutex_unlock(&counts_lock);
    counts_state = 2;
}
static void make_counts_key(void) { pthread_key_create(&counts_key, counts_exit); }

static void count_slow(int kind, int64_t delta)
{
    if (counts_state == 0) {
        pthread_once(&counts_once, make_counts_key);
        counts_state = 2;
        if (pthread_setspecific(counts_key, &counts) == 0) {
            pthread_mutex_lock(&counts_lock);
            counts.next = counts_head;
            if (counts_head)
                counts_head->prev = &counts;
            counts_head = &counts;
            pthread_mutex_unlock(&counts_lock);
            counts_state = 1;
            atomic_store_explicit(&counts.v[kind], delta, memory_order_relaxed);
            return;
        }
    }
    atomic_fetch_add(&counts_shared[kind], delta);
}

static inline void count(int kind, int64_t delta)
{
    if (__builtin_expect(counts_state == 1, 1)) {
        atomic_int_fast64_t *v = &counts.v[kind];
        atomic_store_explicit(v, atomic_load_explicit(v, memory_order_relaxed) + delta,
                              memory_order_release);
        return;
    }
    count_slow(kind, delta);
}

static int64_t count_sum(int kind)
{
    pthread_mutex_lock(&counts_lock);
    int64_t n = atomic_load(&counts_shared[kind]);
    for (thread_counts *c = counts_head; c; c = c->next)
        n += atomic_load_explicit(&c->v[kind], memory_order_acquire);
    pthread_mutex_unlock(&counts_lock);
    return n;
}

static void flush_storage_cache(void);

tt_status tt_set_allocator(const tt_allocator *a)
{
    const char *fn = "tt_set_allocator";
    if (a && (!a->alloc || !a->free))
        return tt_error(TT_EINVAL, "%s: argument 'allocator' has no %s function (NULL restores "
                                   "the default allocator)", fn, !a->alloc ? "alloc" : "free");
    tt_allocator want = a ? *a : (tt_allocator){default_alloc, default_free, NULL};
    tt_status st = TT_OK;
    pthread_mutex_lock(&set_lock);
    int64_t out = count_sum(COUNT_BLOCKS);
    int idx = -1;
    for (int i = 0; i < nallocators && idx < 0; i++)
        if (allocators[i].alloc == want.alloc && allocators[i].free == want.free &&
            allocators[i].ud == want.ud)
            idx = i;
    if (idx == hook_index()) {
        /* the same allocator again: nothing changes */
    } else if (out > 0) {
        st = tt_error(TT_EINVAL, "%s: %lld tensor storage block%s made by the current allocator "
                                 "%s alive; release every tensor before switching allocators",
                      fn, (long long)out, out == 1 ? "" : "s", out == 1 ? "is" : "are");
    } else if (idx < 0 && nallocators == MAX_ALLOCATORS) {
        st = tt_error(TT_EINVAL, "%s: %d different allocators have been set; no more can be",
                      fn, MAX_ALLOCATORS);
    } else {
        if (idx < 0) {
            idx = nallocators;
            allocators[nallocators++] = want;
        }
        flush_storage_cache(); /* cached storage blocks belong to the old hook */
        atomic_store_explicit(&current, idx, memory_order_release);
    }
    pthread_mutex_unlock(&set_lock);
    if (!st)
        tt_empty_cache(); /* and this thread's small blocks go back to theirs */
    return st;
}

void tt_debug_fail_alloc(int64_t n)
{
    fail_at = n > 0 ? requests + n : 0;
}

int64_t tt_debug_alloc_count(void) { return requests; }
int64_t tt_live_tensors(void) { return count_sum(COUNT_TENSORS); }
int64_t tt_live_storages(void) { return count_sum(COUNT_STORAGES); }
void tt__count_tensor(int delta) { count(COUNT_TENSORS, delta); }
int64_t tt_live_bytes(void) { return count_sum(COUNT_BYTES); }
void tt__count_storage(int delta, int64_t bytes)
{
    if (__builtin_expect(counts_state == 1, 1)) { /* count() twice, one test */
        atomic_int_fast64_t *s = &counts.v[COUNT_STORAGES], *b = &counts.v[COUNT_BYTES];
        atomic_store_explicit(s, atomic_load_explicit(s, memory_order_relaxed) + delta,
                              memory_order_release);
        atomic_store_explicit(b, atomic_load_explicit(b, memory_order_relaxed) + delta * bytes,
                              memory_order_release);
        return;
    }
    count_slow(COUNT_STORAGES, delta);
    count_slow(COUNT_BYTES, delta * bytes);
}

bool tt__alloc_request(size_t n)
{
    int64_t k = ++requests;
    if (__builtin_expect(fail_at != 0 && k == fail_at, 0)) {
        char where[TT_SRCLOC_TEXT];
        tt_error(TT_ENOMEM, "out of memory: allocation of %zu bytes failed%s "
                            "(injected failure #%lld)", n,
                 tt__callsite_text(where, sizeof where), (long long)k);
        return false;
    }
    return true;
}

/* Header in front of every small allocation, so tt__free needs no size and
 * the user's hook gets its own pointer back. 16 bytes keeps malloc's
 * alignment for the payload. */
typedef struct {
    size_t size;
    size_t hook; /* the index of the allocator that made the block */
} small_hdr;
/* small_hdr.hook of a block from the storage cache or a plan's block. */
#define FROM_STORAGE ((size_t)-1)

/* A per-thread cache of the library's own blocks (tt__malloc: a tensor, a
 * storage header, a graph's node array and its nodes' arrays), so creating
 * and dropping a tensor on the eager path does not go to malloc. Blocks
 * keep their header; small classes are 32 bytes apart, larger blocks use
 * the storage size classes (and are made at their class's capacity). The
 * cache is flushed by tt_empty_cache and when the thread exits.
 * It keeps what a thread frees up to a budget in bytes rather than a few
 * blocks per class: a trace of 100,000 nodes frees half a million blocks
 * at once, which malloc coalesces and gives back to the system, and the
 * next trace then pays for page faults and splitting again (tracing cost
 * 2.5 times as much per node as in a 1,000-node trace). Kept, they serve
 * the next trace as they serve the next eager op, so the cache holds at
 * most the thread's peak of such blocks, up to the budget. */
#define SMALL_CLASSES 16 /* up to 512 bytes */
#define THREAD_KEEP_BYTES ((size_t)256 << 20)
#define LARGE_KEEP_MAX_BLOCK ((size_t)64 << 20)
#define STORAGE_TLS_CLASSES 24 /* storage classes up to 16 KiB */
#define STORAGE_TLS_KEEP 8

typedef struct tls_block {
    struct tls_block *next;
} tls_block;

/* Released tensor structs wait here, FIFO, before tt__free may hand their
 * memory to a new tensor: while one waits, its poisoned count makes every
 * entry point refuse it (tensor_impl.h), where a reused struct would let
 * a double release free another tensor. A power of two, and small: the
 * struct a new tensor gets is the one pushed out, so the queue's structs
 * must stay in L1 (dispatch_add_1elem: 16 within noise of none, 32 and 64
 * 3-10% slower on the 2-core build machine). */
#define QUARANTINE 16

typedef struct {
    tls_block *small[SMALL_CLASSES];
    tls_block *large[NCLASSES]; /* tt__malloc's larger blocks, by storage class */
    size_t kept_bytes; /* held in small[] and large[] */
    tls_block *storage[STORAGE_TLS_CLASSES];
    int nstorage[STORAGE_TLS_CLASSES];
    int storage_hook; /* the allocator of the storage blocks held */
    bool registered;
    void *quarantine[QUARANTINE]; /* released tensor structs, oldest at qnext */
    unsigned qnext;
} thread_cache;

static _Thread_local thread_cache tcache;
static pthread_key_t tcache_key;
static pthread_once_t tcache_once = PTHREAD_ONCE_INIT;

static void flush_thread_storage(thread_cache *c)
{
    for (int i = 0; i < STORAGE_TLS_CLASSES; i++) {
        while (c->storage[i]) {
            tls_block *b = c->storage[i];
            c->storage[i] = b->next;
            hook_free(c->storage_hook, b);
        }
        c->nstorage[i] = 0;
    }
}

static void flush_thread_cache(thread_cache *c)
{
    for (int i = 0; i < SMALL_CLASSES; i++) {
        while (c->small[i]) {
            tls_block *b = c->small[i];
            c->small[i] = b->next;
            hook_free((int)((small_hdr *)b)->hook, b);
        }
    }
    for (int i = 0; i < NCLASSES; i++) {
        while (c->large[i]) {
            tls_block *b = c->large[i];
            c->large[i] = b->next;
            hook_free((int)((small_hdr *)b)->hook, b);
        }
    }
    c->kept_bytes = 0;
    flush_thread_storage(c);
}

/* The thread's storage cache serves the current allocator only: blocks of
 * an earlier one go back to it first. */
static inline void storage_cache_sync(int h)
{
    if (__builtin_expect(tcache.storage_hook != h, 0)) {
        flush_thread_storage(&tcache);
        tcache.storage_hook = h;
    }
}

/* The quarantine goes at the thread's exit and with tt_empty_cache (the
 * user's "give everything back"), not with the library's own flushes
 * (tt__empty_caches): a compiled plan's after its first call would otherwise
 * make its next QUARANTINE releases miss the free lists. */
static void flush_quarantine(thread_cache *c)
{
    for (int i = 0; i < QUARANTINE; i++) {
        void *q = c->quarantine[i];
        c->quarantine[i] = NULL;
        tt__free(q);
    }
}

static void thread_exit(void *p)
{
    flush_quarantine(p);
    flush_thread_cache(p);
}
static void make_key(void) { pthread_key_create(&tcache_key, thread_exit); }

/* True when the thread's cache may keep blocks (its exit will flush it). */
static bool cache_ready(void)
{
    if (!tcache.registered) {
        pthread_once(&tcache_once, make_key);
        if (pthread_setspecific(tcache_key, &tcache) != 0)
            return false;
        tcache.registered = true;
    }
    return true;
}

/* The class in tcache.large of a tt__malloc block of `total` bytes with
 * its header, and the capacity such blocks are made with; -1 when blocks
 * of that size are not kept. */
static int large_class(size_t total, size_t *cap)
{
    int c = tt__size_class(total, cap);
    if (CACHES && c < NCLASSES && *cap <= LARGE_KEEP_MAX_BLOCK)
        return c;
    *cap = total;
    return -1;
}

void *tt__malloc(size_t n)
{
    if (!tt__alloc_request(n))
        return NULL;
    size_t total = sizeof(small_hdr) + n, cap = total;
    int c = (int)((total + 31) / 32) - 1;
    int lc = c < SMALL_CLASSES ? -1 : large_class(total, &cap);
    tls_block **from = !CACHES ? NULL : c < SMALL_CLASSES ? &tcache.small[c]
                                     : lc >= 0 ? &tcache.large[lc] : NULL;
    small_hdr *h = NULL;
    if (from && *from && !(tt__mem_plan_running && c >= SMALL_CLASSES)) {
        h = (small_hdr *)*from;
        *from = (*from)->next;
        /* The next pop reads that block's link: fetch it now, as a list
         * of thousands of cold blocks (a large trace's) costs a cache miss
         * per pop otherwise. */
        __builtin_prefetch(*from);
        tcache.kept_bytes -= c < SMALL_CLASSES ? (size_t)(c + 1) * 32 : cap;
    } else {
        int k = hook_index();
        if (tt__mem_plan_running && c >= SMALL_CLASSES) {
            /* A kernel's scratch while a plan runs: from the plan's block
             * (recorded on its first run), so a replay makes no allocator
             * calls. */
            if ((h = tt__mem_plan_alloc(total, &cap)) != NULL)
                h->hook = FROM_STORAGE;
        } else if ((h = hook_alloc(k, c < SMALL_CLASSES ? (size_t)(c + 1) * 32 : cap, 16))) {
            h->hook = (size_t)k;
        }
    }
    if (!h) {
        char where[TT_SRCLOC_TEXT];
        tt_error(TT_ENOMEM, "out of memory: allocation of %zu bytes failed%s", n,
                 tt__callsite_text(where, sizeof where));
        return NULL;
    }
    h->size = n;
    return h + 1;
}

void *tt__calloc(size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size) {
        tt_error(TT_ENOMEM, "out of memory: %zu x %zu bytes overflows", n, size);
        return NULL;
    }
    void *p = tt__malloc(n * size);
    if (p)
        memset(p, 0, n * size);
    return p;
}

void *tt__realloc(void *p, size_t old, size_t n)
{
    void *q = tt__malloc(n);
    if (!q)
        return NULL;
    if (p) {
        memcpy(q, p, old < n ? old : n);
        tt__free(p);
    }
    return q;
}

void tt__free(void *p)
{
    if (!p)
        return;
    small_hdr *h = (small_hdr *)p - 1;
    size_t total = sizeof(small_hdr) + h->size, cap = total;
    int c = (int)((total + 31) / 32) - 1;
    if (h->hook == FROM_STORAGE) {
        int sc;
        bool pooled;
        tt__free_storage(h, block_capacity(total, &sc, &pooled));
        return;
    }
    int lc = c < SMALL_CLASSES ? -1 : large_class(total, &cap);
    tls_block **to = !CACHES ? NULL : c < SMALL_CLASSES ? &tcache.small[c]
                                   : lc >= 0 ? &tcache.large[lc] : NULL;
    if (to && tcache.kept_bytes < THREAD_KEEP_BYTES && cache_ready()) {
        tls_block *b = (tls_block *)h;
        b->next = *to;
        *to = b;
        tcache.kept_bytes += c < SMALL_CLASSES ? (size_t)(c + 1) * 32 : cap;
        return;
    }
    hook_free((int)h->hook, h);
}

void tt__quarantine_tensor(tt_tensor *t)
{
    /* Under ASan the struct goes back at once, as every block does: the
     * sanitizer's own quarantine is far longer than ours and reports a
     * later use with both stacks. */
    if (!CACHES || !cache_ready()) { /* no exit hook to flush it: no quarantine */
        tt__free(t);
        return;
    }
    unsigned i = tcache.qnext++ & (QUARANTINE - 1);
    void *oldest = tcache.quarantine[i];
    tcache.quarantine[i] = t;
    tt__free(oldest);
}

char *tt__strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = tt__malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

/* ----------------------------------------------------------------- arenas */

/* Chunks start small (a graph of a few nodes) and double up to a size the
 * thread cache still keeps. */
#define ARENA_FIRST ((size_t)4 << 10)
#define ARENA_MAX ((size_t)1 << 20)

struct tt__arena_chunk {
    tt__arena_chunk *prev;
    size_t used, cap; /* bytes of data[] */
    _Alignas(16) unsigned char data[];
};

void *tt__arena_alloc(tt__arena *a, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    tt__arena_chunk *c = a->chunk;
    if (CACHES && c && c->cap - c->used >= n) {
        if (!tt__alloc_request(n))
            return NULL;
        void *p = c->data + c->used;
        c->used += n;
        return p;
    }
    /* A new chunk, counted as the piece's request: a power of two with
     * tt__malloc's header, so it fills its size class; under ASan, one
     * chunk per piece. */
    size_t over = sizeof(small_hdr) + sizeof *c;
    size_t bytes = !c ? ARENA_FIRST : c->cap + over >= ARENA_MAX ? ARENA_MAX : 2 * (c->cap + over);
    while (bytes - over < n)
        bytes *= 2;
    if (!CACHES)
        bytes = n + over;
    tt__arena_chunk *nc = tt__malloc(bytes - sizeof(small_hdr));
    if (!nc)
        return NULL;
    *nc = (tt__arena_chunk){c, n, bytes - over};
    a->chunk = nc;
    return nc->data;
}

void tt__arena_free(tt__arena *a)
{
    while (a->chunk) {
        tt__arena_chunk *c = a->chunk;
        a->chunk = c->prev;
        tt__free(c);
    }
}

/* ------------------------------------------------------ caching allocator */

/* Size classes: multiples of 64 up to 512 bytes, then four classes per
 * power of two, so a cached block wastes at most a quarter of itself.
 * Blocks above CACHE_MAX_BLOCK go straight back to the hook. */
#define CACHE_MAX_BYTES ((size_t)2 << 30)

typedef struct block {
    struct block *next;
} block;

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static block *free_lists[NCLASSES];
static size_t cached_bytes;

int tt__size_class(size_t n, size_t *cap)
{
    if (n <= 512) {
        size_t c = n <= 64 ? 64 : (n + 63) & ~(size_t)63;
        *cap = c;
        return (int)(c / 64) - 1; /* 0..7 */
    }
    int k = 63 - __builtin_clzll((unsigned long long)(n - 1)); /* 2^k < n */
    size_t base = (size_t)1 << k, step = base / 4;
    size_t j = (n - base + step - 1) / step; /* 1..4 */
    *cap = base + j * step;
    return 8 + (k - 9) * 4 + (int)(j - 1);
}

void *tt__alloc_storage(size_t nbytes, size_t *capacity)
{
    if (!tt__alloc_request(nbytes))
        return NULL;
    return __builtin_expect(tt__mem_plan_running != NULL, 0) ? tt__mem_plan_alloc(nbytes, capacity)
                                                         : tt__cache_alloc(nbytes, capacity);
}

/* The capacity of the block cache_alloc gives a request of nbytes: its
 * size class's when that class is pooled (*pooled), else the request's
 * own. *cls receives the class. tt__free uses it too, to give a block
 * back at the capacity it was made with. */
static size_t block_capacity(size_t nbytes, int *cls, bool *pooled)
{
    size_t cap;
    *cls = tt__size_class(nbytes ? nbytes : 1, &cap);
    *pooled = CACHES && *cls < NCLASSES && cap <= CACHE_MAX_BLOCK;
    return *pooled ? cap : nbytes ? nbytes : 1;
}

void *tt__cache_alloc(size_t nbytes, size_t *capacity)
{
    int c;
    bool pooled;
    size_t cap = block_capacity(nbytes, &c, &pooled);
    int h = hook_index();
    storage_cache_sync(h);
    if (CACHES && c < STORAGE_TLS_CLASSES && tcache.storage[c]) {
        tls_block *b = tcache.storage[c];
        tcache.storage[c] = b->next;
        tcache.nstorage[c]--;
        *capacity = cap;
        count(COUNT_BLOCKS, 1);
        return b;
    }
    if (pooled) {
        pthread_mutex_lock(&cache_lock);
        block *b = free_lists[c];
        if (b) {
            free_lists[c] = b->next;
            cached_bytes -= cap;
        }
        pthread_mutex_unlock(&cache_lock);
        if (b) {
            *capacity = cap;
            count(COUNT_BLOCKS, 1);
            return b;
        }
    }
    void *p = hook_alloc(h, cap, 64);
    if (!p) {
        /* The cache may hold enough in other classes: give it back, retry. */
        tt__empty_caches();
        p = hook_alloc(h, cap, 64);
    }
    if (!p) {
        char where[TT_SRCLOC_TEXT];
        tt_error(TT_ENOMEM, "out of memory: storage of %zu bytes%s", nbytes,
                 tt__callsite_text(where, sizeof where));
        return NULL;
    }
    *capacity = cap;
    count(COUNT_BLOCKS, 1);
    return p;
}

void tt__free_storage(void *p, size_t capacity)
{
    if (!p || (tt__mem_plan_frees() && tt__mem_plan_take_free(p)))
        return;
    count(COUNT_BLOCKS, -1);
    /* No switch happens while a block is out, so p is the current hook's. */
    int h = hook_index();
    storage_cache_sync(h);
    size_t cap;
    int c = tt__size_class(capacity, &cap);
    if (CACHES && cap == capacity && c < STORAGE_TLS_CLASSES && tcache.nstorage[c] < STORAGE_TLS_KEEP &&
        cache_ready()) {
        tls_block *b = p;
        b->next = tcache.storage[c];
        tcache.storage[c] = b;
        tcache.nstorage[c]++;
        return;
    }
    if (CACHES && cap == capacity && c < NCLASSES && cap <= CACHE_MAX_BLOCK) {
        pthread_mutex_lock(&cache_lock);
        if (cached_bytes + cap <= CACHE_MAX_BYTES) {
            block *b = p;
            b->next = free_lists[c];
            free_lists[c] = b;
            cached_bytes += cap;
            p = NULL;
        }
        pthread_mutex_unlock(&cache_lock);
    }
    if (p)
        hook_free(h, p);
}

/* The shared storage cache back to its allocator (the current one). */
static void flush_storage_cache(void)
{
    int h = hook_index();
    pthread_mutex_lock(&cache_lock);
    for (int c = 0; c < NCLASSES; c++) {
        block *b = free_lists[c];
        while (b) {
            block *n = b->next;
            hook_free(h, b);
            b = n;
        }
        free_lists[c] = NULL;
    }
    cached_bytes = 0;
    pthread_mutex_unlock(&cache_lock);
}

void tt__empty_caches(void)
{
    flush_thread_cache(&tcache);
    flush_storage_cache();
}

void tt_empty_cache(void)
{
    flush_quarantine(&tcache);
    tt__empty_caches();
}

tt_allocator tt__current_allocator(void) { return allocators[hook_index()]; }

size_t tt_cached_bytes(void)
{
    pthread_mutex_lock(&cache_lock);
    size_t n = cached_bytes;
    pthread_mutex_unlock(&cache_lock);
    return n;
}
