/* Between the allocator (alloc.c) and the memory plans of compiled plans
 * (plan_memory.c): while a plan runs on a thread, storage requests go to
 * it; the plan takes what it does not serve from the allocator's cache.
 * Internal (hidden) symbols only. */
#ifndef TT_PLAN_MEMORY_IMPL_H
#define TT_PLAN_MEMORY_IMPL_H

#include "tt_runtime.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

/* The allocator's size classes (alloc.c): a class index below NCLASSES is
 * a pooled class, *cap its block size. */
#define NCLASSES 160
int tt__size_class(size_t n, size_t *cap);
/* A storage block from the cache or the current hook (alloc.c), an error
 * set when out of memory. */
void *tt__cache_alloc(size_t nbytes, size_t *capacity);
/* The caches back to their hooks (alloc.c): the plan's block replaces
 * what its recorded run left there. */
void tt__empty_caches(void);
tt_allocator tt__current_allocator(void); /* the hook new blocks come from */

/* plan_memory.c: the plan run on this thread (NULL: none), and the count
 * of blocks a run left held. Both read on every storage request or free,
 * so the allocator tests them inline before calling in. */
extern _Thread_local struct tt_mem_plan *tt__mem_plan_running;
extern atomic_int tt__mem_plan_orphans;
/* A request while a plan runs: the plan's place for it, or the cache's. */
void *tt__mem_plan_alloc(size_t nbytes, size_t *capacity);
/* True when p belonged to a plan (its free is the plan's business). */
bool tt__mem_plan_take_free(void *p);
static inline bool tt__mem_plan_frees(void)
{
    return tt__mem_plan_running != NULL || atomic_load(&tt__mem_plan_orphans) != 0;
}

#endif
