/* Strided iteration (a small TensorIterator) and the parallel-for. */
#include "tensor_impl.h"

#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define MAX_OPS 8

/* ---------------------------------------------------------- parallel-for */

static int num_threads; /* 0: OpenMP's default */

void tt_set_num_threads(int n) { num_threads = n > 0 ? n : 0; }

int tt_get_num_threads(void)
{
#ifdef _OPENMP
    return num_threads ? num_threads : omp_get_max_threads();
#else
    return 1;
#endif
}

void tt_parallel_for(int64_t n, int64_t grain,
                     void (*fn)(int64_t begin, int64_t end, void *ctx), void *ctx)
{
    if (n <= 0)
        return;
    if (grain < 1)
        grain = 1;
    int threads = tt_get_num_threads();
    int64_t chunks = (n + grain - 1) / grain;
    if (chunks > threads)
        chunks = threads;
#ifdef _OPENMP
    if (chunks > 1 && !omp_in_parallel()) {
        int64_t per = (n + chunks - 1) / chunks;
#pragma omp parallel for num_threads((int)chunks) schedule(static, 1)
        for (int64_t c = 0; c < chunks; c++) {
            int64_t b = c * per, e = b + per < n ? b + per : n;
            if (b < e)
                fn(b, e, ctx);
        }
        return;
    }
#endif
    fn(0, n, ctx);
}

/* -------------------------------------------------------------- for_each */

typedef struct {
    int nops, ndim;          /* after coalescing; dim ndim-1 is innermost */
    int64_t sizes[TT_MAX_DIMS];
    int64_t strides[MAX_OPS][TT_MAX_DIMS]; /* bytes */
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

/* Below this many elements the iteration stays on one thread. */
#define PARALLEL_GRAIN 32768

tt_status tt_for_each(int nops, tt_tensor *const *ops, tt_loop_fn loop, void *ctx)
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
    plan p = {.nops = nops, .loop = loop, .ctx = ctx};
    for (int k = 0; k < nops; k++)
        p.base[k] = tt__ptr(ops[k]);
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
    tt_parallel_for(numel, PARALLEL_GRAIN, run_range, &p);
    return TT_OK;
}
