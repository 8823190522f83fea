/* Factories: empty/zeros/ones/full/arange/linspace/rand/randn, tensors from
 * C arrays and from callers' buffers, fake tensors. */
#include "tensor_impl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* -------------------------------------------------------------- checking */

tt_status tt__check_sizes(const char *fn, int ndim, const int64_t *sizes,
                          int64_t *numel_out)
{
    if (ndim < 0 || ndim > TT_MAX_DIMS)
        return tt_error(TT_EINVAL, "%s: argument 'size' has %d dimensions; "
                                   "tensors have 0 to %d", fn, ndim, TT_MAX_DIMS);
    if (ndim > 0 && !sizes)
        return tt_error(TT_EINVAL, "%s: argument 'size' is NULL for %d dimensions",
                        fn, ndim);
    int64_t n = 1;
    bool overflow = false;
    for (int i = 0; i < ndim; i++) {
        if (tt__size_odd(sizes[i])) {
            if (tt__size_check(fn, "size", i, sizes[i]))
                return tt_errcode();
            continue; /* a live handle: only fake tensors get here with one */
        }
        if (sizes[i] < 0)
            return tt_error(TT_EINVAL, "%s: argument 'size' has a negative "
                                       "dimension %lld at index %d", fn,
                            (long long)sizes[i], i);
        if (!overflow && __builtin_mul_overflow(n, sizes[i], &n))
            overflow = true;
    }
    if (overflow) {
        for (int i = 0; i < ndim; i++)
            if (sizes[i] == 0)
                overflow = false; /* an empty tensor is fine at any size */
        if (overflow) {
            char shape[300];
            size_t len = (size_t)snprintf(shape, sizeof shape, "[");
            for (int i = 0; i < ndim && len < sizeof shape; i++) {
                char one[64];
                tt_size_str(sizes[i], one, sizeof one);
                len += (size_t)snprintf(shape + len, sizeof shape - len, "%s%s",
                                        i ? ", " : "", one);
            }
            if (len < sizeof shape)
                snprintf(shape + len, sizeof shape - len, "]");
            return tt_error(TT_EINVAL, "%s: the number of elements of size %s "
                                       "overflows int64", fn, shape);
        }
    }
    if (numel_out)
        *numel_out = overflow ? 0 : n;
    return TT_OK;
}

bool tt__contiguous_strides(int ndim, const tt_size *sizes, tt_size *strides)
{
    tt_size st = 1;
    bool sym = false;
    for (int i = ndim - 1; i >= 0; i--) {
        strides[i] = st;
        if (i == 0)
            break; /* the product past the outermost dim is no stride */
        tt_size s = sizes[i];
        if (sym || tt_size_is_sym(s) || tt_size_is_sym(st)) {
            sym = true;
            st = tt_sym_mul(st, s > 1 || tt_size_is_sym(s) ? s : 1);
            if (st == 0)
                return false; /* no memory for the expression (error set) */
            continue;
        }
        /* PyTorch: a size-0 or size-1 dim contributes a factor of 1. */
        if (__builtin_mul_overflow(st, s > 1 ? s : 1, &st))
            return false;
    }
    return true;
}

bool tt__span_bytes(int ndim, const tt_size *sizes, const tt_size *strides,
                    tt_size offset, size_t elem, size_t *out)
{
    int64_t last = offset;
    for (int i = 0; i < ndim; i++)
        if (sizes[i] == 0) { /* before any product, which may overflow */
            *out = 0;
            return true;
        }
    for (int i = 0; i < ndim; i++) {
        int64_t step;
        if (__builtin_mul_overflow(sizes[i] - 1, strides[i], &step) ||
            __builtin_add_overflow(last, step, &last))
            return false;
    }
    int64_t bytes;
    if (__builtin_add_overflow(last, 1, &last) ||
        __builtin_mul_overflow(last, (int64_t)elem, &bytes))
        return false;
    *out = (size_t)bytes;
    return true;
}

/* True when the extent is symbolic: it has no byte count, its (fake)
 * storage records 0 and callers compare sizes instead. */
static bool sym_extent(int ndim, const tt_size *sizes, const tt_size *strides)
{
    for (int i = 0; i < ndim; i++)
        if (tt_size_is_sym(sizes[i]) || tt_size_is_sym(strides[i]))
            return true;
    return false;
}

tt_tensor *tt__empty_impl(int ndim, const tt_size *sizes,
                          const tt_size *strides, tt_dtype dt, bool fake)
{
    return tt__empty_named(fake ? "tt_fake_empty" : strides ? "tt_empty_strided" : "tt_empty",
                           ndim, sizes, strides, dt, fake);
}

tt_tensor *tt__empty_named(const char *fn, int ndim, const tt_size *sizes,
                           const tt_size *strides, tt_dtype dt, bool fake)
{
    if ((unsigned)dt >= TT_DTYPE_COUNT) {
        tt_error(TT_EINVAL, "%s: argument 'dtype' is not a dtype (got %d)", fn, (int)dt);
        return NULL;
    }
    if (tt__check_sizes(fn, ndim, sizes, NULL) ||
        (strides && tt__sizes_check(fn, "stride", ndim, strides)))
        return NULL;
    if (!fake)
        for (int i = 0; i < ndim; i++)
            if (tt_size_is_sym(sizes[i]) || (strides && tt_size_is_sym(strides[i]))) {
                tt_error(TT_EINVAL, "%s: a real tensor cannot have symbolic "
                                    "sizes (dimension %d); use a fake tensor", fn, i);
                return NULL;
            }
    tt_size st[TT_MAX_DIMS];
    if (strides) {
        for (int i = 0; i < ndim; i++) {
            if (!tt_size_is_sym(strides[i]) && strides[i] < 0) {
                tt_error(TT_EINVAL, "%s: argument 'stride' has a negative value "
                                    "%lld at index %d", fn, (long long)strides[i], i);
                return NULL;
            }
            st[i] = strides[i];
        }
    } else if (!tt__contiguous_strides(ndim, sizes, st)) {
        bool sym = false;
        for (int i = 0; i < ndim; i++)
            sym = sym || tt_size_is_sym(sizes[i]);
        if (!sym) /* symbolic strides fail only for memory, already reported */
            tt_error(TT_EINVAL, "%s: the strides of the requested size overflow int64", fn);
        return NULL;
    }
    /* One size limit for fake and real tensors: a fake tensor is what a
     * real one would be, so it cannot be one no real tensor can be. */
    size_t elem = tt_dtype_size(dt), nbytes = 0;
    bool sym = fake && sym_extent(ndim, sizes, st);
    if (!sym &&
        (!tt__span_bytes(ndim, sizes, st, 0, elem, &nbytes) ||
         nbytes > (size_t)INT64_MAX / 2)) {
        tt_error(TT_EINVAL, "%s: the byte size of the requested tensor overflows "
                            "(%d dims of %s)", fn, ndim, tt_dtype_name(dt));
        return NULL;
    }
    tt_storage *s = tt__storage_new(nbytes, fake);
    if (!s)
        return NULL;
    s->sym_extent = sym;
    tt_tensor *t = tt__tensor_new(s, dt, ndim, sizes, st, 0);
    tt__storage_release(s); /* the tensor holds it now (or nothing does) */
    return t;
}

/* The eager fast path's allocation: a real, contiguous tensor of `like`'s
 * (concrete, already validated) sizes in dtype dt, skipping the checks
 * tt__empty_impl makes for user-given sizes. */
tt_tensor *tt__new_contiguous(const tt_tensor *like, tt_dtype dt)
{
    tt_size strides[TT_MAX_DIMS], n = 1;
    for (int i = like->ndim - 1; i >= 0; i--) {
        strides[i] = n;
        n *= like->sizes[i] > 1 ? like->sizes[i] : 1;
    }
    int64_t numel = 1;
    for (int i = 0; i < like->ndim; i++)
        numel *= like->sizes[i];
    tt_storage *st = tt__storage_new((size_t)numel * tt__dtype_size(dt), false);
    if (!st)
        return NULL;
    tt_tensor *t = tt__tensor_new(st, dt, like->ndim, like->sizes, strides, 0);
    tt__storage_release(st);
    return t;
}

/* ------------------------------------------------------------- factories */

/* The factories' direct paths. The public tt_empty & co.
 * (ops/factory_front.c) call their op under a mode (to be recorded) or in
 * fake mode (to make fake tensors), and else land here (tt_empty and
 * tt_empty_strided in tt__empty_impl); so do the ops' real kernels
 * (ops/factories.c). */

/* full, zeros, ones and scalar: one body, errors naming the call made. */
tt_tensor *tt__full_raw(const char *fn, int ndim, const int64_t *sizes, double value,
                        tt_dtype dt)
{
    tt_tensor *t = tt__empty_named(fn, ndim, sizes, NULL, dt, false);
    if (t && tt__fill_raw(t, value))
        t = tt_release(t);
    return t;
}

/* The element count of arange(start, end, step), validated. */
tt_status tt__arange_numel(double start, double end, double step, int64_t *out)
{
    if (step == 0 || !isfinite(start) || !isfinite(end) || !isfinite(step)) {
        tt_error(TT_EINVAL, "tt_arange: argument 'step' must be nonzero and the "
                            "bounds finite (got start=%g, end=%g, step=%g)",
                 start, end, step);
        return tt_errcode();
    }
    if ((step > 0 && end < start) || (step < 0 && end > start)) {
        tt_error(TT_EINVAL, "tt_arange: upper bound and larger bound inconsistent "
                            "with step sign (start=%g, end=%g, step=%g)",
                 start, end, step);
        return tt_errcode();
    }
    double count = ceil((end - start) / step);
    if (count > 9e15) {
        tt_error(TT_EINVAL, "tt_arange: %g elements is too many", count);
        return tt_errcode();
    }
    int64_t n = (int64_t)count;
    *out = n;
    return TT_OK;
}

tt_tensor *tt__arange_raw(double start, double end, double step, tt_dtype dt)
{
    int64_t n;
    if (tt__arange_numel(start, end, step, &n))
        return NULL;
    tt_tensor *t = tt__empty_impl(1, &n, NULL, dt, false);
    if (!t)
        return NULL;
    char *p = tt__ptr(t);
    size_t es = tt_dtype_size(dt);
    for (int64_t i = 0; i < n; i++)
        tt__store(p + (size_t)i * es, dt, start + (double)i * step);
    return t;
}

tt_tensor *tt__linspace_raw(double start, double end, int64_t steps, tt_dtype dt)
{
    if (steps < 0) {
        tt_error(TT_EINVAL, "tt_linspace: argument 'steps' must be non-negative "
                            "(got %lld)", (long long)steps);
        return NULL;
    }
    tt_tensor *t = tt__empty_impl(1, &steps, NULL, dt, false);
    if (!t)
        return NULL;
    char *p = tt__ptr(t);
    size_t es = tt_dtype_size(dt);
    double step = steps > 1 ? (end - start) / (double)(steps - 1) : 0;
    /* As PyTorch: the second half counts back from `end`, so the last
     * value is exactly `end`; a single step is `start`. */
    int64_t half = steps == 1 ? 1 : steps / 2;
    for (int64_t i = 0; i < steps; i++) {
        double v = i < half ? start + step * (double)i
                            : end - step * (double)(steps - 1 - i);
        tt__store(p + (size_t)i * es, dt, v);
    }
    return t;
}

/* ------------------------------------------------------------------- RNG */

/* Counter-based generation: value i of a call is a hash of (seed, offset +
 * i), where each call reserves `numel` counters (2 numel for normal
 * values, two uniforms each: reserving fewer let the next call reuse
 * them, and tt_rand after tt_randn drew correlated values). Results are
 * therefore the same for any thread count and across runs. */
static _Atomic uint64_t rng_seed = 0x2545F4914F6CDD1Dull;
static _Atomic uint64_t rng_offset;

void tt_manual_seed(uint64_t seed)
{
    atomic_store(&rng_seed, seed);
    atomic_store(&rng_offset, 0);
}

static inline uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static inline double uniform01(uint64_t seed, uint64_t i)
{
    uint64_t z = mix64(seed + 0x9E3779B97F4A7C15ull * (i + 1));
    return (double)(z >> 11) * (1.0 / 9007199254740992.0); /* [0, 1) */
}

typedef struct {
    char *p;
    tt_dtype dt;
    uint64_t seed, base;
    bool normal;
} rng_ctx;

static void rng_chunk(int64_t begin, int64_t end, void *vctx)
{
    const rng_ctx *c = vctx;
    size_t es = tt_dtype_size(c->dt);
    for (int64_t i = begin; i < end; i++) {
        double v;
        if (c->normal) {
            /* Box-Muller on the call's counters 2i and 2i + 1. */
            uint64_t k = c->base + 2 * (uint64_t)i;
            double u1 = uniform01(c->seed, k), u2 = uniform01(c->seed, k + 1);
            v = sqrt(-2.0 * log(1.0 - u1)) * cos(6.283185307179586 * u2);
        } else {
            v = uniform01(c->seed, c->base + (uint64_t)i);
        }
        if (c->dt == TT_F32 && !c->normal && (float)v >= 1.0f)
            v = 0x1.fffffep-1; /* rounding to float must stay below 1 */
        tt__store(c->p + (size_t)i * es, c->dt, v);
    }
}

tt_tensor *tt__random_raw(int ndim, const int64_t *sizes, tt_dtype dt, bool normal)
{
    const char *fn = normal ? "tt_randn" : "tt_rand";
    if ((unsigned)dt < TT_DTYPE_COUNT && !tt_dtype_is_float(dt)) {
        tt_error(TT_EDTYPE, "%s: argument 'dtype' expects a floating point "
                            "dtype (f32 or f64), got %s", fn, tt_dtype_name(dt));
        return NULL;
    }
    tt_tensor *t = tt__empty_named(fn, ndim, sizes, NULL, dt, false);
    if (!t)
        return NULL;
    int64_t n = tt_numel(t);
    rng_ctx c = {tt__ptr(t), dt, atomic_load(&rng_seed),
                 atomic_fetch_add(&rng_offset, (uint64_t)n * (normal ? 2 : 1)), normal};
    tt_parallel_for(n, 1 << 16, rng_chunk, &c);
    return t;
}

/* ------------------------------------------------------- external memory */

tt_tensor *tt_from_data(int ndim, const int64_t *sizes, tt_dtype dt,
                        const void *data)
{
    int64_t n;
    if (tt__check_sizes("tt_from_data", ndim, sizes, &n))
        return NULL;
    if (!data && n > 0) {
        tt_error(TT_EINVAL, "tt_from_data: argument 'data' is NULL for %lld elements",
                 (long long)n);
        return NULL;
    }
    /* Always a real tensor, even under a mode or fake mode: it holds the
     * caller's values, which a fake tensor (or a recorded tt::empty node)
     * would lose. A tracer lifts it into the graph as a constant, as make_fx
     * lifts torch.tensor(...). */
    tt_tensor *t = tt__empty_impl(ndim, sizes, NULL, dt, false);
    if (t && n > 0)
        memcpy(tt__ptr(t), data, (size_t)n * tt_dtype_size(dt));
    return t;
}

tt_tensor *tt_from_buffer(int ndim, const int64_t *sizes,
                          const int64_t *strides, tt_dtype dt, void *data,
                          size_t nbytes, void (*release)(void *data, void *ctx),
                          void *ctx)
{
    const char *fn = "tt_from_buffer";
    if ((unsigned)dt >= TT_DTYPE_COUNT) {
        tt_error(TT_EINVAL, "%s: argument 'dtype' is not a dtype (got %d)", fn, (int)dt);
        return NULL;
    }
    if (tt__check_sizes(fn, ndim, sizes, NULL))
        return NULL;
    tt_size st[TT_MAX_DIMS];
    if (strides && tt__sizes_check(fn, "strides", ndim, strides))
        return NULL;
    if (strides) {
        for (int i = 0; i < ndim; i++) {
            if (strides[i] < 0) {
                tt_error(TT_EINVAL, "%s: argument 'strides' has a negative value "
                                    "%lld at index %d", fn, (long long)strides[i], i);
                return NULL;
            }
            st[i] = strides[i];
        }
    } else if (!tt__contiguous_strides(ndim, sizes, st)) {
        tt_error(TT_EINVAL, "%s: the strides of the requested size overflow", fn);
        return NULL;
    }
    size_t need;
    if (!tt__span_bytes(ndim, sizes, st, 0, tt_dtype_size(dt), &need) || need > nbytes) {
        tt_error(TT_EINVAL, "%s: argument 'nbytes' is %zu but the tensor needs %s "
                            "bytes", fn, nbytes, "more");
        if (tt__span_bytes(ndim, sizes, st, 0, tt_dtype_size(dt), &need))
            tt_error(TT_EINVAL, "%s: argument 'nbytes' is %zu but the tensor needs "
                                "%zu bytes", fn, nbytes, need);
        return NULL;
    }
    if (!data && need > 0) {
        tt_error(TT_EINVAL, "%s: argument 'data' is NULL", fn);
        return NULL;
    }
    tt_storage *s = tt__storage_new(0, true); /* no bytes of its own */
    if (!s)
        return NULL;
    s->fake = false;
    s->nbytes = nbytes;
    s->data = data;
    tt_tensor *t = tt__tensor_new(s, dt, ndim, sizes, st, 0);
    if (t) {
        s->release = release; /* only once the tensor exists: on failure the
                               * buffer stays the caller's */
        s->release_ctx = ctx;
    }
    tt__storage_release(s);
    return t;
}

/* ------------------------------------------------------------ *_like */

/* PyTorch's preserve_format: a dense, non-overlapping input gives an output
 * with exactly its strides; otherwise a dense one with its dims in the
 * order of the input's strides (empty_like's infer_dense_strides). */

/* Dims of size 0 or 1 do not constrain the layout; a symbolic size does. */
static bool size_lt2(tt_size s) { return !tt_size_is_sym(s) && s < 2; }

bool tt__is_non_overlapping_and_dense(const tt_tensor *t)
{
    int perm[TT_MAX_DIMS];
    int n = t->ndim;
    /* An empty tensor is contiguous whatever its strides (PyTorch's
     * compute_contiguous), so dense too: its copies keep its strides. */
    for (int i = 0; i < n; i++)
        if (t->sizes[i] == 0)
            return true;
    for (int i = 0; i < n; i++)
        perm[i] = i;
    /* Sort dims by stride ascending, dims of size < 2 last (PyTorch's
     * compute_non_overlapping_and_dense); symbolic strides by their hint. */
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0; j--) {
            int a = perm[j - 1], b = perm[j];
            if (size_lt2(t->sizes[a]) ||
                (!size_lt2(t->sizes[b]) &&
                 tt_sym_hint(t->strides[b]) < tt_sym_hint(t->strides[a]))) {
                perm[j - 1] = b;
                perm[j] = a;
            } else {
                break;
            }
        }
    tt_size expect = 1;
    for (int i = 0; i < n; i++) {
        int d = perm[i];
        if (size_lt2(t->sizes[d]))
            continue;
        if (t->strides[d] != expect)
            return false;
        expect = tt__sym_mul_find(expect, t->sizes[d]); /* allocates nothing */
    }
    return true;
}

void tt__dense_strides_in_order(int n, const tt_size *const *strides, int ndim,
                                const tt_size *sizes, tt_size *out)
{
    /* perm[0] is the fastest-moving dim. Insertion sort from row-major
     * order; an ambiguous comparison (a stride of 0, or equal strides of
     * dims of equal size) defers to the next stride list, and when all are
     * ambiguous the dims keep their row-major order. */
    int perm[TT_MAX_DIMS];
    for (int i = 0; i < ndim; i++)
        perm[i] = ndim - 1 - i;
    for (int i = 1; i < ndim; i++) {
        int d1 = i;
        for (int d0 = i - 1; d0 >= 0; d0--) {
            int cmp = 0;
            for (int k = 0; k < n && cmp == 0; k++) {
                /* Symbolic strides and sizes compare through guards (a
                 * handle's integer value says nothing of its order). A
                 * symbolic stride is never 0. */
                tt_size s0 = strides[k][perm[d0]], s1 = strides[k][perm[d1]];
                if (s0 == 0 || s1 == 0)
                    continue;
                if (tt__sz_lt(s0, s1))
                    cmp = -1;
                else if (tt__sz_gt(s0, s1))
                    cmp = 1;
                else if (tt__sz_gt_oblivious(sizes[perm[d0]], sizes[perm[d1]]))
                    cmp = 1;
            }
            if (cmp > 0) {
                int t = perm[d0];
                perm[d0] = perm[d1];
                perm[d1] = t;
                d1 = d0;
            } else if (cmp < 0) {
                break;
            }
        }
    }
    tt_size st = 1;
    for (int i = 0; i < ndim; i++) {
        out[perm[i]] = st;
        st = tt_sym_mul(st, sizes[perm[i]]);
    }
}

void tt__strides_like(const tt_tensor *t, tt_size *out)
{
    if (tt__is_non_overlapping_and_dense(t))
        memcpy(out, t->strides, sizeof(tt_size) * (size_t)t->ndim);
    else {
        /* A size-0 dim steps as a size-1 one (infer_dense_strides), so an
         * empty tensor's strides are the ones a non-empty layout has. */
        tt_size sizes[TT_MAX_DIMS];
        for (int d = 0; d < t->ndim; d++)
            sizes[d] = t->sizes[d] == 0 ? 1 : t->sizes[d];
        tt__dense_strides_in_order(1, (const tt_size *const[]){t->strides}, t->ndim, sizes,
                                   out);
    }
}

/* ------------------------------------------------------------------ fake */

tt_tensor *tt_fake_empty(int ndim, const tt_size *sizes, tt_dtype dt)
{
    return tt__empty_impl(ndim, sizes, NULL, dt, true);
}

tt_tensor *tt_fake_empty_strided(int ndim, const tt_size *sizes,
                                 const tt_size *strides, tt_dtype dt)
{
    if (ndim > 0 && !strides) {
        tt_error(TT_EINVAL, "tt_fake_empty_strided: argument 'stride' is NULL");
        return NULL;
    }
    return tt__empty_impl(ndim, sizes, strides, dt, true);
}

tt_tensor *tt_fake_like(const tt_tensor *t)
{
    if (TT_CHECK_TENSOR("tt_fake_like", "self", t))
        return NULL;
    tt_storage *s = tt__storage_new(t->storage->nbytes, true);
    if (!s)
        return NULL;
    s->sym_extent = t->storage->sym_extent || (t->flags & TT_TF_HAS_SYM);
    tt_tensor *f = tt__tensor_new(s, (tt_dtype)t->dtype, t->ndim, t->sizes,
                                  t->strides, t->offset);
    tt__storage_release(s);
    return f;
}
