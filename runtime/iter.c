/* Strided iteration (a small TensorIterator) and the parallel-for. */
#include "tensor_impl.h"

#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>

#define MAX_OPS 8

/* ---------------------------------------------------------- parallel-for */

/* A small pool of worker threads. Idle workers sleep on a condition
 * variable instead of spinning: OpenMP's spinning workers took the cores
 * from OpenBLAS's threads between the two (a compiled training step spent
 * most of its time in libgomp's wait loop on a 2-core machine). But a
 * compiled step runs hundreds of short loops back to back, and waking a
 * sleeping worker is a futex call, costly in a virtual machine: so a
 * worker that just finished a job, and a caller waiting for its workers,
 * first watch for the next job (SPIN_PAUSES pause instructions, about
 * 80 us here) before they sleep: 1000 loops of ~10 us work on 2 threads
 * took 58 us each with sleeping workers, 37 us with watching ones.
 *
 * A job is handed over and finished without the lock: the caller
 * publishes it with two atomic stores and takes the lock only to wake a
 * sleeping worker, and a worker counts itself active before it looks at
 * the job, so the caller (whose stack holds the job) knows when the last
 * one has let go. With a lock taken at both ends, a watching worker that
 * saw the new job while the caller still held the lock went to sleep on
 * the mutex: a loop after a few microseconds of serial work cost ~5 us
 * more than back to back, ~50 times per decoded token. The caller runs
 * the first chunk itself; a parallel-for inside a worker runs serially. */
#define MAX_THREADS 64

typedef struct {
    void (*fn)(int64_t begin, int64_t end, void *ctx);
    void *ctx;
    int64_t n, per;
    int chunks;
    int threads;             /* guided: a take is at most 1/(2 threads) of what is left */
    bool guided;             /* takes from pos (else chunk `next` of `per` items) */
    atomic_int next;         /* next chunk to take */
    _Atomic int64_t pos;     /* guided: the first item not taken */
    _Atomic int64_t pending; /* items not finished */
} pool_job;

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work_cv = PTHREAD_COND_INITIALIZER, done_cv = PTHREAD_COND_INITIALIZER;
static _Atomic(pool_job *) job; /* the current job; NULL between jobs */
static _Atomic uint64_t job_gen; /* bumped per job, after job is set */
static atomic_int active;        /* workers that may be looking at *job */
static atomic_int sleepers;      /* workers asleep on work_cv, or about to be */
static atomic_bool caller_sleeps; /* the caller asleep on done_cv */
static int nworkers;             /* started, under pool_lock */
static int num_threads;          /* 0: the online CPUs */
static _Thread_local bool in_pool_work;
/* One job at a time: a second caller thread runs its loop serially. */
static pthread_mutex_t submit_lock = PTHREAD_MUTEX_INITIALIZER;

void tt_set_num_threads(int n) { num_threads = n > 0 ? (n < MAX_THREADS ? n : MAX_THREADS) : 0; }

int tt__num_threads_set(void) { return num_threads; }

/* The online CPUs, asked once: glibc answers sysconf by opening and
 * reading /sys/devices/system/cpu/online, three system calls that every
 * parallel loop paid before this was cached. */
static atomic_int online_cpus;

int tt_get_num_threads(void)
{
    if (num_threads)
        return num_threads;
    int cpus = atomic_load_explicit(&online_cpus, memory_order_relaxed);
    if (!cpus) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        cpus = n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : (int)n;
        atomic_store_explicit(&online_cpus, cpus, memory_order_relaxed);
    }
    return cpus;
}

#define SPIN_PAUSES 4096

static inline void cpu_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* The next items [*b, *e) this thread runs; false when none are left. A
 * fixed job hands out its equal chunks; a guided one hands out what is
 * left over twice the threads, but never less than `per`, so a thread
 * that started late or runs slow takes less, and the last takes are
 * short. */
static bool take(pool_job *j, int64_t *b, int64_t *e)
{
    if (!j->guided) {
        int c = atomic_fetch_add(&j->next, 1);
        if (c >= j->chunks)
            return false;
        *b = (int64_t)c * j->per;
        *e = *b + j->per < j->n ? *b + j->per : j->n;
        *b = *b < *e ? *b : *e;
        return true;
    }
    int64_t at = atomic_load(&j->pos), end;
    do {
        if (at >= j->n)
            return false;
        int64_t t = (j->n - at) / (2 * j->threads);
        t = t > j->per ? t : j->per;
        end = at + t < j->n ? at + t : j->n;
    } while (!atomic_compare_exchange_weak(&j->pos, &at, end));
    *b = at, *e = end;
    return true;
}

static void run_chunks(pool_job *j)
{
    int64_t b, e;
    while (take(j, &b, &e)) {
        if (b < e)
            j->fn(b, e, j->ctx);
        /* seq_cst: either the caller sees pending 0 or we see it asleep */
        if (atomic_fetch_sub(&j->pending, e - b) == e - b && atomic_load(&caller_sleeps)) {
            pthread_mutex_lock(&pool_lock);
            pthread_cond_broadcast(&done_cv);
            pthread_mutex_unlock(&pool_lock);
        }
    }
}

static void *worker(void *arg)
{
    (void)arg;
    in_pool_work = true;
    uint64_t seen = 0, g;
    for (;;) {
        /* watch a moment for the next job, then sleep */
        for (int i = 0; (g = atomic_load_explicit(&job_gen, memory_order_acquire)) == seen &&
                        i < SPIN_PAUSES;
             i++)
            cpu_pause();
        if (g == seen) {
            pthread_mutex_lock(&pool_lock);
            atomic_fetch_add(&sleepers, 1); /* then the caller wakes us, or we see its job */
            while ((g = atomic_load(&job_gen)) == seen)
                pthread_cond_wait(&work_cv, &pool_lock);
            atomic_fetch_sub(&sleepers, 1);
            pthread_mutex_unlock(&pool_lock);
        }
        seen = g;
        /* counted before the job is read: a caller that clears job and
         * then sees active 0 knows nobody holds it */
        atomic_fetch_add(&active, 1);
        pool_job *j = atomic_load(&job);
        if (j)
            run_chunks(j);
        atomic_fetch_sub(&active, 1);
    }
    return NULL;
}

/* Starts workers up to `want` (the pool only grows). */
static int ensure_workers(int want)
{
    pthread_mutex_lock(&pool_lock);
    while (nworkers < want) {
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        int err = pthread_create(&t, &attr, worker, NULL);
        pthread_attr_destroy(&attr);
        if (err)
            break; /* fewer threads: the loop still runs, on fewer */
        nworkers++;
    }
    int have = nworkers;
    pthread_mutex_unlock(&pool_lock);
    return have;
}

/* Runs fn over [0, n): in equal chunks of at least `grain`, one a thread,
 * or (min_take > 0) guided, in takes of at least min_take, when n passes
 * grain. */
static void parallel_run(int64_t n, int64_t grain, int64_t min_take,
                         void (*fn)(int64_t begin, int64_t end, void *ctx), void *ctx)
{
    if (n <= 0)
        return;
    if (grain < 1)
        grain = 1;
    if (n <= grain) {
        fn(0, n, ctx);
        return;
    }
    int threads = tt_get_num_threads();
    int64_t chunks = (n + grain - 1) / grain;
    if (chunks > threads)
        chunks = threads;
    if (chunks <= 1 || in_pool_work || pthread_mutex_trylock(&submit_lock) != 0) {
        fn(0, n, ctx);
        return;
    }
    int workers = ensure_workers(threads - 1);
    if (chunks > workers + 1)
        chunks = workers + 1;
    pool_job j = {.fn = fn, .ctx = ctx, .n = n, .per = (n + chunks - 1) / chunks,
                  .chunks = (int)chunks, .threads = (int)chunks, .pending = n};
    if (min_take > 0)
        j.guided = true, j.per = min_take;
    atomic_store(&job, &j);
    atomic_fetch_add(&job_gen, 1); /* seq_cst: we see a sleeper, or it sees the job */
    if (atomic_load(&sleepers) > 0) {
        pthread_mutex_lock(&pool_lock);
        pthread_cond_broadcast(&work_cv);
        pthread_mutex_unlock(&pool_lock);
    }
    in_pool_work = true; /* nested loops in fn run serially */
    run_chunks(&j);
    in_pool_work = false;
    for (int i = 0; i < SPIN_PAUSES && atomic_load(&j.pending) > 0; i++)
        cpu_pause(); /* the workers' chunks are about as long as ours */
    if (atomic_load(&j.pending) > 0) {
        pthread_mutex_lock(&pool_lock);
        atomic_store(&caller_sleeps, true);
        while (atomic_load(&j.pending) > 0)
            pthread_cond_wait(&done_cv, &pool_lock);
        atomic_store(&caller_sleeps, false);
        pthread_mutex_unlock(&pool_lock);
    }
    atomic_store(&job, NULL); /* no worker takes it from now on */
    /* a worker that read j before it was cleared is counted in active;
     * it only finds every chunk taken, so it lets go within moments */
    for (int i = 0; atomic_load(&active) > 0;)
        if (i < SPIN_PAUSES)
            cpu_pause(), i++;
        else
            sched_yield();
    pthread_mutex_unlock(&submit_lock);
}

void tt_parallel_for(int64_t n, int64_t grain,
                     void (*fn)(int64_t begin, int64_t end, void *ctx), void *ctx)
{
    parallel_run(n, grain, 0, fn, ctx);
}

void tt__parallel_for_guided(int64_t n, int64_t grain, int64_t min_take,
                             void (*fn)(int64_t begin, int64_t end, void *ctx), void *ctx)
{
    parallel_run(n, grain, min_take > 0 ? min_take : 1, fn, ctx);
}

/* -------------------------------------------------------------- for_each */

typedef struct {
    int nops, ndim;          /* after coalescing; dim ndim-1 is innermost */
    int nout;                /* operands from nout on are only read */
    int64_t sizes[TT_MAX_DIMS];
    int64_t strides[MAX_OPS][TT_MAX_DIMS]; /* bytes */
    int64_t es[MAX_OPS];     /* element sizes */
    char *base[MAX_OPS];
    tt_loop_fn loop;
    void *ctx;
} plan;

/* Runs elements [begin, end) of the flattened iteration. */
static void run_range(int64_t begin, int64_t end, void *vp)
{
    const plan *p = vp;
    int nd = p->ndim, inner = nd - 1;
    int64_t idx[TT_MAX_DIMS];
    int64_t rem = begin;
    for (int d = nd - 1; d >= 0; d--) {
        idx[d] = rem % p->sizes[d];
        rem /= p->sizes[d];
    }
    char *data[MAX_OPS];
    int64_t step[MAX_OPS];
    for (int k = 0; k < p->nops; k++)
        step[k] = p->strides[k][inner];
    int64_t pos = begin;
    while (pos < end) {
        for (int k = 0; k < p->nops; k++) {
            char *ptr = p->base[k];
            for (int d = 0; d < nd; d++)
                ptr += idx[d] * p->strides[k][d];
            data[k] = ptr;
        }
        int64_t n = p->sizes[inner] - idx[inner];
        if (n > end - pos)
            n = end - pos;
        p->loop(data, step, n, p->ctx);
        pos += n;
        idx[inner] += n;
        for (int d = inner; d > 0 && idx[d] >= p->sizes[d]; d--) {
            idx[d] = 0;
            idx[d - 1]++;
        }
    }
}

/* A 2-d iteration where some operand is contiguous along the outer dim
 * (a transposed input) reads that operand a cache line per element when
 * walked row by row. Walking TILE x TILE tiles instead reuses each line it
 * loads for the next rows of the tile. */
#define TILE 64

static bool wants_tiles(const plan *p)
{
    if (p->sizes[0] < TILE || p->sizes[1] < TILE)
        return false;
    for (int k = 0; k < p->nops; k++) {
        int64_t outer = p->strides[k][0], inner = p->strides[k][1];
        outer = outer < 0 ? -outer : outer;
        inner = inner < 0 ? -inner : inner;
        if (outer != 0 && outer < inner)
            return true;
    }
    return false;
}

/* A read-only operand whose elements run down the tile's columns (a
 * transposed input): the tile is first copied into a row-major buffer, so
 * that the loop gets unit steps for every operand and vectorizes, instead
 * of a strided step it runs element by element. */
#define TILE_BUFS 2

static bool buffered(const plan *p, int k)
{
    return k >= p->nout && p->es[k] <= 8 && p->strides[k][0] == p->es[k] &&
           p->strides[k][1] > p->es[k];
}

#define PREFETCH_COLS 16

/* buf[ii][jj] = operand k's element (i0 + ii, j0 + jj), rows x len. */
static void gather_tile(const plan *p, int k, int64_t i0, int64_t j0, int64_t rows,
                        int64_t len, char *buf)
{
    int64_t more = p->sizes[1] - j0; /* columns left, this tile's and on */
    int64_t s1 = p->strides[k][1];
    const char *col = p->base[k] + i0 * p->strides[k][0] + j0 * s1;
    switch (p->es[k]) {
    case 4:
        for (int64_t jj = 0; jj < len; jj++, col += s1) {
            /* Each column is a new page: ask for the lines a few columns
             * ahead, so their misses overlap instead of queueing. */
            for (int64_t b = 0; jj + PREFETCH_COLS < more && b < rows * 4; b += 64)
                __builtin_prefetch(col + PREFETCH_COLS * s1 + b);
            for (int64_t ii = 0; ii < rows; ii++)
                ((uint32_t *)buf)[ii * TILE + jj] = ((const uint32_t *)col)[ii];
        }
        break;
    case 8:
        for (int64_t jj = 0; jj < len; jj++, col += s1)
            for (int64_t ii = 0; ii < rows; ii++)
                ((uint64_t *)buf)[ii * TILE + jj] = ((const uint64_t *)col)[ii];
        break;
    default:
        for (int64_t jj = 0; jj < len; jj++, col += s1)
            for (int64_t ii = 0; ii < rows; ii++)
                memcpy(buf + (ii * TILE + jj) * p->es[k], col + ii * p->es[k], (size_t)p->es[k]);
    }
}

/* Rows of tiles [begin, end) (in tiles along dim 0). */
static void run_tiles(int64_t begin, int64_t end, void *vp)
{
    const plan *p = vp;
    _Alignas(64) char bufs[TILE_BUFS][TILE * TILE * 8];
    int buf_of[MAX_OPS], nbuf = 0;
    char *data[MAX_OPS];
    int64_t step[MAX_OPS];
    for (int k = 0; k < p->nops; k++) {
        buf_of[k] = nbuf < TILE_BUFS && buffered(p, k) ? nbuf++ : -1;
        step[k] = buf_of[k] >= 0 ? p->es[k] : p->strides[k][1];
    }
    for (int64_t ti = begin; ti < end; ti++) {
        int64_t i0 = ti * TILE, i1 = i0 + TILE < p->sizes[0] ? i0 + TILE : p->sizes[0];
        for (int64_t j0 = 0; j0 < p->sizes[1]; j0 += TILE) {
            int64_t len = p->sizes[1] - j0 < TILE ? p->sizes[1] - j0 : TILE;
            for (int k = 0; k < p->nops; k++)
                if (buf_of[k] >= 0)
                    gather_tile(p, k, i0, j0, i1 - i0, len, bufs[buf_of[k]]);
            for (int64_t i = i0; i < i1; i++) {
                for (int k = 0; k < p->nops; k++)
                    data[k] = buf_of[k] >= 0
                                  ? bufs[buf_of[k]] + (i - i0) * TILE * p->es[k]
                                  : p->base[k] + i * p->strides[k][0] + j0 * p->strides[k][1];
                p->loop(data, step, len, p->ctx);
            }
        }
    }
}

/* Below this many elements the iteration stays on one thread. */
#define PARALLEL_GRAIN 32768

tt_status tt_for_each(int nops, tt_tensor *const *ops, tt_loop_fn loop, void *ctx)
{
    return tt__for_each_in(nops, nops, ops, loop, ctx);
}

tt_status tt__for_each_in(int nops, int nout, tt_tensor *const *ops, tt_loop_fn loop, void *ctx)
{
    if (nops < 1 || nops > MAX_OPS || !ops || !loop)
        return tt_error(TT_EINVAL, "tt_for_each: expects 1 to %d operands and a loop "
                                   "function (got %d)", MAX_OPS, nops);
    const tt_tensor *o0 = ops[0];
    for (int k = 0; k < nops; k++) {
        const tt_tensor *t = ops[k];
        if (!t)
            return tt_error(TT_EINVAL, "tt_for_each: operand %d is NULL", k);
        if (t->storage->fake)
            return tt_error(TT_EFAKE, "tt_for_each: operand %d is a fake tensor; "
                                      "kernels cannot run on fake tensors", k);
        bool same = t->ndim == o0->ndim;
        for (int d = 0; same && d < t->ndim; d++)
            same = t->sizes[d] == o0->sizes[d];
        if (!same) {
            char a[256], b[256];
            return tt_error(TT_ESHAPE, "tt_for_each: operand %d has shape %s, "
                                       "operand 0 has %s (expand to broadcast first)",
                            k, tt_shape_str(t, a, sizeof a), tt_shape_str(o0, b, sizeof b));
        }
    }
    int64_t numel = 1;
    for (int d = 0; d < o0->ndim; d++)
        if (o0->sizes[d] == 0)
            return TT_OK; /* nothing to do (and the product may overflow) */
    for (int d = 0; d < o0->ndim; d++)
        numel *= o0->sizes[d];

    /* Dims in iteration order, outermost first: drop size-1 dims, sort by
     * operand 0's stride descending (ties: later operands), stably. */
    int perm[TT_MAX_DIMS], nd = 0;
    for (int d = 0; d < o0->ndim; d++)
        if (o0->sizes[d] != 1)
            perm[nd++] = d;
    for (int i = 1; i < nd; i++)
        for (int j = i; j > 0; j--) {
            int a = perm[j - 1], b = perm[j];
            int cmp = 0;
            for (int k = 0; k < nops && cmp == 0; k++) {
                int64_t sa = ops[k]->strides[a], sb = ops[k]->strides[b];
                cmp = sa < sb ? -1 : sa > sb ? 1 : 0;
            }
            if (cmp >= 0)
                break;
            perm[j - 1] = b;
            perm[j] = a;
        }
    plan p = {.nops = nops, .nout = nout, .loop = loop, .ctx = ctx};
    for (int k = 0; k < nops; k++) {
        p.base[k] = tt__ptr(ops[k]);
        p.es[k] = (int64_t)tt_dtype_size((tt_dtype)ops[k]->dtype);
    }
    /* Coalesce: an outer dim merges into the inner one when stepping it is
     * the same as running off the end of the inner one, for every operand. */
    int n = 0;
    for (int i = 0; i < nd; i++) {
        int d = perm[i];
        if (n > 0) {
            bool merge = true;
            for (int k = 0; k < nops && merge; k++) {
                int64_t es = (int64_t)tt_dtype_size((tt_dtype)ops[k]->dtype);
                merge = p.strides[k][n - 1] == ops[k]->strides[d] * es * o0->sizes[d];
            }
            if (merge) {
                p.sizes[n - 1] *= o0->sizes[d];
                for (int k = 0; k < nops; k++) {
                    int64_t es = (int64_t)tt_dtype_size((tt_dtype)ops[k]->dtype);
                    p.strides[k][n - 1] = ops[k]->strides[d] * es;
                }
                continue;
            }
        }
        p.sizes[n] = o0->sizes[d];
        for (int k = 0; k < nops; k++)
            p.strides[k][n] = ops[k]->strides[d] *
                              (int64_t)tt_dtype_size((tt_dtype)ops[k]->dtype);
        n++;
    }
    if (n == 0) { /* every dim had size 1: one element */
        p.sizes[0] = 1;
        for (int k = 0; k < nops; k++)
            p.strides[k][0] = 0;
        n = 1;
    }
    p.ndim = n;
    if (n == 2 && wants_tiles(&p)) {
        tt_parallel_for((p.sizes[0] + TILE - 1) / TILE, PARALLEL_GRAIN / (TILE * TILE) + 1,
                        run_tiles, &p);
        return TT_OK;
    }
    tt_parallel_for(numel, PARALLEL_GRAIN, run_range, &p);
    return TT_OK;
}
