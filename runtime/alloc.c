/* All allocation goes through one hook (tt_set_allocator), with a test
 * switch that fails the n-th request, and live counts of tensors and
 * storages. Storage bytes come from a caching allocator: freed blocks wait
 * in size-class free lists, so the eager path of small ops does not pay for
 * malloc/free of data each call. */
#include "tensor_impl.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static void *default_alloc(size_t size, size_t align, void *ud)
{
    (void)ud;
    void *p = NULL;
    if (align < sizeof(void *))
        align = sizeof(void *);
    if (posix_memalign(&p, align, size ? size : 1) != 0)
        return NULL;
    return p;
}

static void default_free(void *p, void *ud)
{
    (void)ud;
    free(p);
}

static tt_allocator hook = {default_alloc, default_free, NULL};

static atomic_int_fast64_t requests;
static atomic_int_fast64_t fail_at; /* 0: never */
static atomic_int_fast64_t live_tensors;
static atomic_int_fast64_t live_storages;

void tt_set_allocator(const tt_allocator *a)
{
    tt_empty_cache(); /* cached blocks belong to the old hook */
    if (a && a->alloc && a->free)
        hook = *a;
    else
        hook = (tt_allocator){default_alloc, default_free, NULL};
}

void tt_debug_fail_alloc(int64_t n)
{
    atomic_store(&fail_at, n > 0 ? atomic_load(&requests) + n : 0);
}

int64_t tt_debug_alloc_count(void) { return atomic_load(&requests); }
int64_t tt_live_tensors(void) { return atomic_load(&live_tensors); }
int64_t tt_live_storages(void) { return atomic_load(&live_storages); }
void tt__count_tensor(int delta) { atomic_fetch_add(&live_tensors, delta); }
void tt__count_storage(int delta) { atomic_fetch_add(&live_storages, delta); }

bool tt__alloc_request(size_t n)
{
    int64_t k = atomic_fetch_add(&requests, 1) + 1;
    int64_t f = atomic_load(&fail_at);
    if (f != 0 && k == f) {
        tt_error(TT_ENOMEM, "out of memory: allocation of %zu bytes failed "
                            "(injected failure #%lld)", n, (long long)k);
        return false;
    }
    return true;
}

/* Header in front of every small allocation, so tt__free needs no size and
 * the user's hook gets its own pointer back. 16 bytes keeps malloc's
 * alignment for the payload. */
typedef struct {
    size_t size;
    size_t pad;
} small_hdr;

void *tt__malloc(size_t n)
{
    if (!tt__alloc_request(n))
        return NULL;
    small_hdr *h = hook.alloc(sizeof(small_hdr) + n, 16, hook.ud);
    if (!h) {
        tt_error(TT_ENOMEM, "out of memory: allocation of %zu bytes failed", n);
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
    if (p)
        hook.free((small_hdr *)p - 1, hook.ud);
}

char *tt__strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = tt__malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

/* ------------------------------------------------------ caching allocator */

/* Size classes: multiples of 64 up to 512 bytes, then four classes per
 * power of two, so a cached block wastes at most a quarter of itself.
 * Blocks above CACHE_MAX_BLOCK go straight back to the hook. */
#define NCLASSES 160
#define CACHE_MAX_BLOCK ((size_t)1 << 30)
#define CACHE_MAX_BYTES ((size_t)2 << 30)

typedef struct block {
    struct block *next;
} block;

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static block *free_lists[NCLASSES];
static size_t cached_bytes;

static int size_class(size_t n, size_t *cap)
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
    size_t cap;
    int c = size_class(nbytes ? nbytes : 1, &cap);
    if (c < NCLASSES && cap <= CACHE_MAX_BLOCK) {
        pthread_mutex_lock(&cache_lock);
        block *b = free_lists[c];
        if (b) {
            free_lists[c] = b->next;
            cached_bytes -= cap;
        }
        pthread_mutex_unlock(&cache_lock);
        if (b) {
            *capacity = cap;
            return b;
        }
    } else {
        cap = nbytes ? nbytes : 1;
    }
    void *p = hook.alloc(cap, 64, hook.ud);
    if (!p) {
        /* The cache may hold enough in other classes: give it back, retry. */
        tt_empty_cache();
        p = hook.alloc(cap, 64, hook.ud);
    }
    if (!p) {
        tt_error(TT_ENOMEM, "out of memory: storage of %zu bytes", nbytes);
        return NULL;
    }
    *capacity = cap;
    return p;
}

void tt__free_storage(void *p, size_t capacity)
{
    if (!p)
        return;
    size_t cap;
    int c = size_class(capacity, &cap);
    if (cap == capacity && c < NCLASSES && cap <= CACHE_MAX_BLOCK) {
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
        hook.free(p, hook.ud);
}

void tt_empty_cache(void)
{
    pthread_mutex_lock(&cache_lock);
    for (int c = 0; c < NCLASSES; c++) {
        block *b = free_lists[c];
        while (b) {
            block *n = b->next;
            hook.free(b, hook.ud);
            b = n;
        }
        free_lists[c] = NULL;
    }
    cached_bytes = 0;
    pthread_mutex_unlock(&cache_lock);
}

size_t tt_cached_bytes(void)
{
    pthread_mutex_lock(&cache_lock);
    size_t n = cached_bytes;
    pthread_mutex_unlock(&cache_lock);
    return n;
}
