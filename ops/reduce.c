/* Built-in ops: reductions (sum, mean, amax, amin, argmax) and softmax,
 * log_softmax.
 *
 * As in binary.c and unary.c, one function per op computes the output's metadata
 * (PyTorch's result dtype and shape; outputs are contiguous, with size-1
 * dims where keepdim keeps them) and allocates it; for fake inputs it stops
 * there, so the real kernel and the fake kernel are the same code.
 *
 * The reduction engine sorts the input's dims by stride and coalesces the
 * reduced ones and the kept ones separately, then takes one of two paths:
 *  - rows: the innermost dim is reduced; each output reduces its elements
 *    with a contiguous, vectorizable loop (pairwise summation for floats);
 *  - lanes: the innermost dim is kept (sum over dim 0 of a row-major
 *    matrix); a block of outputs is updated at once from each reduced
 *    position, vectorized across the outputs.
 * Long reductions are cut into chunks of a fixed size, whatever the thread
 * count; each chunk gives a partial result and the partials are combined in
 * chunk order, so results are the same on 1 thread and on 64. */
#include "ops_impl.h"
#include "vec_math.h"

#include <math.h>
#include <string.h>

#define CHUNK 65536  /* reduced elements per partial result */
#define GRAIN 32768  /* elements per parallel task, at least */
#define LANES 256    /* outputs per block on the lanes path */
#define PW_LEAF 512  /* pairwise summation: a leaf sums this many linearly */

/* A partial result: double for float inputs (an f32 sum accumulates its
 * pairwise partials in double), int64 for integral and bool inputs. */
typedef union {
    double f;
    int64_t i;
} acc_t;

typedef enum { K_SUM, K_MAX, K_MIN, K_COUNT } kind;

/* Reduces n elements at p, `st` bytes apart, to one partial (n >= 1). */
typedef acc_t (*row_fn)(const char *p, int64_t n, int64_t st);
/* l[j] = combine(l[j], element j) for the n elements at p, `st` apart;
 * l is a double array for float inputs, an int64 array otherwise. */
typedef void (*lanes_fn)(void *l, const char *p, int64_t n, int64_t st);

#define NAN_F(v) isnan(v)
#define NAN_I(v) ((void)(v), 0)

/* ------------------------------------------------------------ row loops */

/* Pairwise (cascade) summation as PyTorch and NumPy do it: the error grows
 * with log(n) instead of n. A leaf runs 16 independent accumulators, which
 * the compiler turns into vector adds. */
#define PAIRWISE(SUF, T)                                                       \
    static T pairwise_##SUF(const char *p, int64_t n, int64_t st)             \
    {                                                                          \
        if (n > PW_LEAF) {                                                     \
            int64_t h = (n / 2) & ~(int64_t)15;                                \
            return pairwise_##SUF(p, h, st) + pairwise_##SUF(p + h * st, n - h, st); \
        }                                                                      \
        T r[16] = {0};                                                         \
        int64_t i = 0;                                                         \
        if (st == (int64_t)sizeof(T)) {                                        \
            const T *restrict x = (const T *)p;                                \
            for (; i + 16 <= n; i += 16)                                       \
                for (int j = 0; j < 16; j++)                                   \
                    r[j] += x[i + j];                                          \
        }                                                                      \
        for (; i < n; i++)                                                     \
            r[i & 15] += *(const T *)(p + i * st);                             \
        for (int w = 8; w; w >>= 1)                                            \
            for (int j = 0; j < w; j++)                                        \
                r[j] += r[j + w];                                              \
        return r[0];                                                           \
    }                                                                          \
    static acc_t row_sum_##SUF(const char *p, int64_t n, int64_t st)          \
    {                                                                          \
        return (acc_t){.f = (double)pairwise_##SUF(p, n, st)};                 \
    }
PAIRWISE(f32, float)
PAIRWISE(f64, double)

/* Integer sums wrap as PyTorch's int64 sums do (unsigned: no UB). */
#define ROW_SUM_INT(SUF, T)                                                    \
    static acc_t row_sum_##SUF(const char *p, int64_t n, int64_t st)          \
    {                                                                          \
        uint64_t r[8] = {0};                                                   \
        int64_t i = 0;                                                         \
        if (st == (int64_t)sizeof(T)) {                                        \
            const T *restrict x = (const T *)p;                                \
            for (; i + 8 <= n; i += 8)                                         \
                for (int j = 0; j < 8; j++)                                    \
                    r[j] += (uint64_t)(int64_t)x[i + j];                       \
        }                                                                      \
        for (; i < n; i++)                                                     \
            r[i & 7] += (uint64_t)(int64_t)*(const T *)(p + i * st);           \
        uint64_t s = 0;                                                        \
        for (int j = 0; j < 8; j++)                                            \
            s += r[j];                                                         \
        return (acc_t){.i = (int64_t)s};                                       \
    }
ROW_SUM_INT(i64, int64_t)
ROW_SUM_INT(i32, int32_t)
ROW_SUM_INT(u8, uint8_t)
ROW_SUM_INT(b8, bool)

/* Max/min with NaN propagation (PyTorch's amax returns NaN when any element
 * is NaN): once r is NaN neither test can replace it. 32 lanes keep the
 * lane loop a loop (8 would be unrolled first), which the compiler then
 * vectorizes into compare-and-select. */
#define ROW_EXT(NAME, T, CMP, ISNAN, FIELD)                                    \
    static acc_t NAME(const char *p, int64_t n, int64_t st)                   \
    {                                                                          \
        T r[32];                                                               \
        for (int j = 0; j < 32; j++)                                           \
            r[j] = *(const T *)p;                                              \
        int64_t i = 0;                                                         \
        if (st == (int64_t)sizeof(T)) {                                        \
            const T *restrict x = (const T *)p;                                \
            for (; i + 32 <= n; i += 32)                                       \
                for (int j = 0; j < 32; j++) {                                 \
                    T v = x[i + j];                                            \
                    r[j] = (v CMP r[j] || ISNAN(v)) ? v : r[j];                \
                }                                                              \
        }                                                                      \
        for (; i < n; i++) {                                                   \
            T v = *(const T *)(p + i * st);                                    \
            r[i & 31] = (v CMP r[i & 31] || ISNAN(v)) ? v : r[i & 31];         \
        }                                                                      \
        for (int j = 1; j < 32; j++)                                           \
            r[0] = (r[j] CMP r[0] || ISNAN(r[j])) ? r[j] : r[0];               \
        acc_t a;                                                               \
        a.FIELD = r[0];                                                        \
        return a;                                                              \
    }
#define ROW_EXTS(SUF, T, ISNAN, FIELD)                                         \
    ROW_EXT(row_max_##SUF, T, >, ISNAN, FIELD)                                 \
    ROW_EXT(row_min_##SUF, T, <, ISNAN, FIELD)
ROW_EXTS(f32, float, NAN_F, f)
ROW_EXTS(f64, double, NAN_F, f)
ROW_EXTS(i64, int64_t, NAN_I, i)
ROW_EXTS(i32, int32_t, NAN_I, i)
ROW_EXTS(u8, uint8_t, NAN_I, i)
ROW_EXTS(b8, bool, NAN_I, i)

/* ---------------------------------------------------------- lane loops */

/* The lanes are double (float inputs) or int64 (the others) arrays; a
 * union array would keep the compiler from vectorizing. */
#define LANES_FN(NAME, T, L, BODY)                                             \
    CPU_CLONES static void NAME(void *lv, const char *p, int64_t n, int64_t st) \
    {                                                                          \
        L *restrict l = lv;                                                    \
        if (st == (int64_t)sizeof(T)) {                                        \
            const T *restrict xs = (const T *)p;                               \
            for (int64_t j = 0; j < n; j++) {                                  \
                T x = xs[j];                                                   \
                BODY;                                                          \
            }                                                                  \
        } else {                                                               \
            for (int64_t j = 0; j < n; j++) {                                  \
                T x = *(const T *)(p + j * st);                                \
                BODY;                                                          \
            }                                                                  \
        }                                                                      \
    }
/* f32 lanes accumulate in double: a lane adds one element per reduced
 * position, so a float accumulator would drift linearly with the count. */
#define LANES_F(SUF, T)                                                        \
    LANES_FN(lanes_sum_##SUF, T, double, l[j] += (double)x)                    \
    LANES_FN(lanes_max_##SUF, T, double, l[j] = (x > l[j] || isnan(x)) ? (double)x : l[j]) \
    LANES_FN(lanes_min_##SUF, T, double, l[j] = (x < l[j] || isnan(x)) ? (double)x : l[j])
#define LANES_I(SUF, T)                                                        \
    LANES_FN(lanes_sum_##SUF, T, uint64_t, l[j] += (uint64_t)(int64_t)x)       \
    LANES_FN(lanes_max_##SUF, T, int64_t, l[j] = (int64_t)x > l[j] ? (int64_t)x : l[j]) \
    LANES_FN(lanes_min_##SUF, T, int64_t, l[j] = (int64_t)x < l[j] ? (int64_t)x : l[j])
LANES_F(f32, float)
LANES_F(f64, double)
LANES_I(i64, int64_t)
LANES_I(i32, int32_t)
LANES_I(u8, uint8_t)
LANES_I(b8, bool)

#define KROW(P, SUF) {P##sum_##SUF, P##max_##SUF, P##min_##SUF}
static const row_fn row_fns[TT_DTYPE_COUNT][K_COUNT] = {
    [TT_F32] = KROW(row_, f32), [TT_F64] = KROW(row_, f64), [TT_I64] = KROW(row_, i64),
    [TT_I32] = KROW(row_, i32), [TT_U8] = KROW(row_, u8),   [TT_BOOL] = KROW(row_, b8),
};
static const lanes_fn lanes_fns[TT_DTYPE_COUNT][K_COUNT] = {
    [TT_F32] = KROW(lanes_, f32), [TT_F64] = KROW(lanes_, f64), [TT_I64] = KROW(lanes_, i64),
    [TT_I32] = KROW(lanes_, i32), [TT_U8] = KROW(lanes_, u8),   [TT_BOOL] = KROW(lanes_, b8),
};

static acc_t identity(kind k, bool accf)
{
    acc_t a;
    if (accf)
        a.f = k == K_SUM ? 0.0 : k == K_MAX ? -INFINITY : INFINITY;
    else
        a.i = k == K_SUM ? 0 : k == K_MAX ? INT64_MIN : INT64_MAX;
    return a;
}

static acc_t combine(kind k, bool accf, acc_t a, acc_t b)
{
    if (k == K_SUM) {
        if (accf)
            a.f += b.f;
        else
            a.i = (int64_t)((uint64_t)a.i + (uint64_t)b.i);
        return a;
    }
    if (accf) {
        if (isnan(a.f))
            return a;
        return isnan(b.f) || (k == K_MAX ? b.f > a.f : b.f < a.f) ? b : a;
    }
    return (k == K_MAX ? b.i > a.i : b.i < a.i) ? b : a;
}

/* --------------------------------------------------------------- engine */

typedef struct {
    const char *base;
    kind k;
    bool accf;
    /* Kept dims (outer first) with input strides in bytes and output
     * strides in elements; reduced dims (outer first), strides in bytes. */
    int nk, nr;
    int64_t ksize[TT_MAX_DIMS], kin[TT_MAX_DIMS], kout[TT_MAX_DIMS];
    int64_t rsize[TT_MAX_DIMS], rin[TT_MAX_DIMS];
    int64_t nout, R;
    bool lanes;      /* the lanes path; the lane dim is kept dim nk-1 */
    int64_t nblocks; /* lane blocks per row of the lane dim */
    int64_t chunk;   /* rows: reduced elements; lanes: reduced positions */
    int64_t nchunks;
    row_fn row;
    lanes_fn lane;
    acc_t *partials; /* [nout][nchunks], when nchunks > 1 */
    char *out;       /* contiguous */
    tt_dtype odt;
    double div;      /* mean: the element count; 0 otherwise */
} rplan;

/* Offsets of flat index `flat` over dims (sizes) for two stride sets; idx
 * receives the multi-index. */
static void unravel(int64_t flat, int n, const int64_t *sizes, const int64_t *s1,
                    const int64_t *s2, int64_t *idx, int64_t *o1, int64_t *o2)
{
    int64_t a = 0, b = 0;
    for (int d = n - 1; d >= 0; d--) {
        idx[d] = flat % sizes[d];
        flat /= sizes[d];
        a += idx[d] * s1[d];
        b += s2 ? idx[d] * s2[d] : 0;
    }
    *o1 = a;
    if (o2)
        *o2 = b;
}

/* Steps the multi-index by one, carrying, and keeps the offsets in step. */
static void advance(int n, const int64_t *sizes, const int64_t *s1, const int64_t *s2,
                    int64_t *idx, int64_t *o1, int64_t *o2)
{
    for (int d = n - 1; d >= 0; d--) {
        *o1 += s1[d];
        if (s2)
            *o2 += s2[d];
        if (++idx[d] < sizes[d])
            return;
        *o1 -= idx[d] * s1[d];
        if (s2)
            *o2 -= idx[d] * s2[d];
        idx[d] = 0;
    }
}

static void store_acc(const rplan *p, int64_t o, acc_t a)
{
    char *dst = p->out + o * (int64_t)tt_dtype_size(p->odt);
    if (p->accf) {
        double v = p->div > 0 ? a.f / p->div : a.f;
        if (p->odt == TT_F32)
            *(float *)dst = (float)v;
        else
            *(double *)dst = v;
        return;
    }
    /* Integral accumulators: conversions to narrower types wrap, as a
     * PyTorch sum with dtype=int32 or uint8 does. */
    switch (p->odt) {
    case TT_I64: *(int64_t *)dst = a.i; break;
    case TT_I32: *(int32_t *)dst = (int32_t)(uint32_t)(uint64_t)a.i; break;
    case TT_U8: *(uint8_t *)dst = (uint8_t)(uint64_t)a.i; break;
    case TT_BOOL: *(bool *)dst = a.i != 0; break;
    case TT_F32: *(float *)dst = (float)a.i; break;
    default: *(double *)dst = (double)a.i; break;
    }
}

static void emit(const rplan *p, int64_t o, int64_t c, acc_t a)
{
    if (p->nchunks == 1)
        store_acc(p, o, a);
    else
        p->partials[o * p->nchunks + c] = a;
}

/* Reduces reduced-space elements [b, e) of the output at `ptr`. */
static acc_t reduce_range(const rplan *p, const char *ptr, int64_t b, int64_t e)
{
    int in = p->nr - 1;
    int64_t idx[TT_MAX_DIMS], off;
    unravel(b, p->nr, p->rsize, p->rin, NULL, idx, &off, NULL);
    acc_t acc = identity(p->k, p->accf);
    for (int64_t pos = b; pos < e;) {
        int64_t n = p->rsize[in] - idx[in];
        if (n > e - pos)
            n = e - pos;
        acc_t part = p->row(ptr + off, n, p->rin[in]);
        acc = pos == b ? part : combine(p->k, p->accf, acc, part);
        pos += n;
        off += (n - 1) * p->rin[in];
        idx[in] += n - 1;
        advance(p->nr, p->rsize, p->rin, NULL, idx, &off, NULL);
    }
    return acc;
}

/* Rows path: item = output * nchunks + chunk. */
static void task_rows(int64_t b, int64_t e, void *vp)
{
    const rplan *p = vp;
    int64_t idx[TT_MAX_DIMS], oin, oout;
    int64_t c = b % p->nchunks;
    unravel(b / p->nchunks, p->nk, p->ksize, p->kin, p->kout, idx, &oin, &oout);
    for (int64_t it = b; it < e; it++) {
        int64_t rb = c * p->chunk, re = rb + p->chunk < p->R ? rb + p->chunk : p->R;
        emit(p, oout, c, reduce_range(p, p->base + oin, rb, re));
        if (++c == p->nchunks) {
            c = 0;
            advance(p->nk, p->ksize, p->kin, p->kout, idx, &oin, &oout);
        }
    }
}

/* Lanes path: item = ((outer output * nblocks) + block) * nchunks + chunk,
 * where the outer outputs range over the kept dims but the last. */
static void task_lanes(int64_t b, int64_t e, void *vp)
{
    const rplan *p = vp;
    int ln = p->nk - 1;
    double lf[LANES];
    int64_t li[LANES];
    acc_t id = identity(p->k, p->accf);
    int64_t idx[TT_MAX_DIMS], ridx[TT_MAX_DIMS];
    for (int64_t it = b; it < e; it++) {
        int64_t c = it % p->nchunks, rest = it / p->nchunks;
        int64_t blk = rest % p->nblocks, o = rest / p->nblocks, oin, oout, roff;
        unravel(o, ln, p->ksize, p->kin, p->kout, idx, &oin, &oout);
        int64_t j0 = blk * LANES, m = p->ksize[ln] - j0 < LANES ? p->ksize[ln] - j0 : LANES;
        oin += j0 * p->kin[ln];
        oout += j0 * p->kout[ln];
        for (int64_t j = 0; j < m; j++) {
            lf[j] = id.f;
            li[j] = id.i;
        }
        int64_t rb = c * p->chunk, re = rb + p->chunk < p->R ? rb + p->chunk : p->R;
        unravel(rb, p->nr, p->rsize, p->rin, NULL, ridx, &roff, NULL);
        for (int64_t r = rb; r < re; r++) {
            p->lane(p->accf ? (void *)lf : (void *)li, p->base + oin + roff, m, p->kin[ln]);
            advance(p->nr, p->rsize, p->rin, NULL, ridx, &roff, NULL);
        }
        for (int64_t j = 0; j < m; j++) {
            acc_t a;
            if (p->accf)
                a.f = lf[j];
            else
                a.i = li[j];
            emit(p, oout + j * p->kout[ln], c, a);
        }
    }
}

/* Combines each output's partials in chunk order. */
static void task_combine(int64_t b, int64_t e, void *vp)
{
    const rplan *p = vp;
    for (int64_t o = b; o < e; o++) {
        const acc_t *q = p->partials + o * p->nchunks;
        acc_t a = q[0];
        for (int64_t c = 1; c < p->nchunks; c++)
            a = combine(p->k, p->accf, a, q[c]);
        store_acc(p, o, a);
    }
}

/* A stride's place in the iteration order: larger is further out. A
 * broadcast dim (stride 0) goes outermost, where repeating it is cheap. */
static int64_t order_key(int64_t stride) { return stride == 0 ? INT64_MAX : stride; }

/* One dim of the input: size, input stride (bytes), output stride
 * (elements; 0 when reduced). */
typedef struct {
    int64_t size, in, out;
    bool red;
} rdim;

/* out (contiguous) = reduction `k` of x over the dims in mask, divided by
 * the element count when `mean`. x is real and the reduction not empty. */
static tt_status run_reduce(kind k, const tt_tensor *x, const bool *mask, tt_tensor *out,
                            bool mean)
{
    tt_dtype dt = (tt_dtype)x->dtype;
    int64_t es = (int64_t)tt_dtype_size(dt);
    rplan p = {.base = tt__ptr(x), .k = k, .accf = tt_dtype_is_float(dt),
               .row = row_fns[dt][k], .lane = lanes_fns[dt][k], .out = tt__ptr(out),
               .odt = (tt_dtype)out->dtype};
    /* Dims with their strides, outermost first by input stride (stable). */
    rdim dims[TT_MAX_DIMS], tmp;
    int nd = 0;
    int64_t run = 1, ostr[TT_MAX_DIMS];
    for (int d = x->ndim - 1; d >= 0; d--)
        if (!mask[d]) {
            ostr[d] = run;
            run *= x->sizes[d];
        }
    for (int d = 0; d < x->ndim; d++)
        if (x->sizes[d] != 1)
            dims[nd++] = (rdim){x->sizes[d], x->strides[d] * es, mask[d] ? 0 : ostr[d],
                                mask[d]};
    for (int i = 1; i < nd; i++)
        for (int j = i; j > 0 && order_key(dims[j - 1].in) < order_key(dims[j].in); j--) {
            tmp = dims[j - 1];
            dims[j - 1] = dims[j];
            dims[j] = tmp;
        }
    /* Split into kept and reduced lists; merge a dim into the one before
     * it in its list when stepping it equals running off that one's end. */
    for (int i = 0; i < nd; i++) {
        if (dims[i].red) {
            if (p.nr > 0 && p.rin[p.nr - 1] == dims[i].in * dims[i].size) {
                p.rsize[p.nr - 1] *= dims[i].size;
                p.rin[p.nr - 1] = dims[i].in;
            } else {
                p.rsize[p.nr] = dims[i].size;
                p.rin[p.nr++] = dims[i].in;
            }
        } else if (p.nk > 0 && p.kin[p.nk - 1] == dims[i].in * dims[i].size &&
                   p.kout[p.nk - 1] == dims[i].out * dims[i].size) {
            p.ksize[p.nk - 1] *= dims[i].size;
            p.kin[p.nk - 1] = dims[i].in;
            p.kout[p.nk - 1] = dims[i].out;
        } else {
            p.ksize[p.nk] = dims[i].size;
            p.kin[p.nk] = dims[i].in;
            p.kout[p.nk++] = dims[i].out;
        }
    }
    if (p.nr == 0) { /* nothing reduced (size-1 dims): one element each */
        p.rsize[0] = 1;
        p.rin[0] = 0;
        p.nr = 1;
    }
    p.nout = p.R = 1;
    for (int i = 0; i < p.nk; i++)
        p.nout *= p.ksize[i];
    for (int i = 0; i < p.nr; i++)
        p.R *= p.rsize[i];
    p.div = mean ? (double)p.R : 0;

    /* Every choice below depends on the shapes only, never on the thread
     * count, so the summation order (and the result) is fixed. */
    p.lanes = p.nk > 0 && p.ksize[p.nk - 1] >= 8 &&
              order_key(p.kin[p.nk - 1]) < order_key(p.rin[p.nr - 1]);
    int64_t items, per_item;
    if (p.lanes) {
        int64_t m = p.ksize[p.nk - 1] < LANES ? p.ksize[p.nk - 1] : LANES;
        p.nblocks = (p.ksize[p.nk - 1] + LANES - 1) / LANES;
        p.chunk = CHUNK / m < p.R ? CHUNK / m : p.R;
        p.nchunks = (p.R + p.chunk - 1) / p.chunk;
        items = p.nout / p.ksize[p.nk - 1] * p.nblocks * p.nchunks;
        per_item = p.chunk * m;
    } else {
        p.chunk = p.R > CHUNK ? CHUNK : p.R;
        p.nchunks = (p.R + p.chunk - 1) / p.chunk;
        items = p.nout * p.nchunks;
        per_item = p.chunk;
    }
    if (p.nchunks > 1) {
        p.partials = tt__malloc(sizeof(acc_t) * (size_t)(p.nout * p.nchunks));
        if (!p.partials)
            return tt_errcode();
    }
    int64_t grain = GRAIN / per_item > 1 ? GRAIN / per_item : 1;
    tt_parallel_for(items, grain, p.lanes ? task_lanes : task_rows, &p);
    if (p.nchunks > 1) {
        grain = GRAIN / p.nchunks > 1 ? GRAIN / p.nchunks : 1;
        tt_parallel_for(p.nout, grain, task_combine, &p);
        tt__free(p.partials);
    }
    return TT_OK;
}

/* ------------------------------------------------------------ metadata */

typedef enum { OP_SUM, OP_MEAN, OP_AMAX, OP_AMIN, OP_COUNT } redop;
/* The op of each reduction that takes dims: what its wrapper calls, and
 * whose name its errors carry. */
static const tt_builtin_id red_ids[OP_COUNT] = {TT_OP_SUM_DIM_INTLIST, TT_OP_MEAN_DIM,
                                                TT_OP_AMAX, TT_OP_AMIN};
#define RED_NAME(op) tt__op_label(red_ids[op])

tt_status tt__reduce_mask(const char *name, const tt_tensor *a, const tt_value *dimv,
                          bool *mask)
{
    int nd = a->ndim;
    bool all = dimv->kind == TT_V_NONE || dimv->n == 0, seen[TT_MAX_DIMS] = {false};
    for (int d = 0; d < TT_MAX_DIMS; d++)
        mask[d] = all && d < nd;
    for (int i = 0; !all && i < dimv->n; i++) {
        int d = tt__op_dim(name, "dim", 2, dimv->u.ints[i], nd);
        if (d < 0)
            return tt_errcode();
        if (seen[d])
            return tt_error(TT_EINVAL, "%s: argument 'dim' (#2): dim %d appears multiple "
                                       "times in the list of dims", name, d);
        seen[d] = true;
        mask[d] = d < nd;
    }
    return TT_OK;
}

int tt__reduced_shape(const tt_tensor *a, const bool *mask, bool keepdim, tt_size *sizes)
{
    int n = 0;
    for (int d = 0; d < a->ndim; d++)
        if (!mask[d])
            sizes[n++] = a->sizes[d];
        else if (keepdim)
            sizes[n++] = 1;
    return n;
}

/* True when a reduced dim has a (concrete) size 0; *dim receives it. */
static bool empty_reduction(const tt_tensor *a, const bool *mask, int *dim)
{
    for (int d = 0; d < a->ndim; d++)
        if (mask[d] && a->sizes[d] == 0) {
            *dim = d;
            return true;
        }
    return false;
}

/* max/min have no identity, so PyTorch refuses an empty reduction. */
static tt_status empty_error(const char *name, const tt_tensor *a, const bool *mask,
                             bool all)
{
    int d;
    char s[128];
    if (!empty_reduction(a, mask, &d))
        return TT_OK;
    tt_shape_str(a, s, sizeof s);
    if (all)
        return tt_error(TT_EINVAL, "%s: argument 'self' (#1): expected reduction dim to "
                                   "be specified for an input with no elements (shape %s); "
                                   "specify the reduction dim with the 'dim' argument",
                        name, s);
    return tt_error(TT_EINVAL, "%s: argument 'self' (#1): Expected reduction dim %d to have "
                               "non-zero size (the input has shape %s)", name, d, s);
}

/* t itself (a new reference) when it has dtype dt and, if need_contig, is
 * contiguous; otherwise a contiguous copy converted to dt. */
static tt_tensor *prepared(const tt_tensor *t, tt_dtype dt, bool need_contig)
{
    if ((tt_dtype)t->dtype == dt && (!need_contig || (t->flags & TT_TF_CONTIGUOUS)))
        return tt_retain((tt_tensor *)t);
    tt_tensor *c = tt__empty_impl(t->ndim, t->sizes, NULL, dt, false);
    if (c && tt__copy_raw(c, t))
        c = tt_release(c);
    return c;
}

/* sum, mean, amax, amin: metadata, allocation and (for real inputs) the
 * computation. dimv is None or an int list; dtype_argno is the position of
 * 'dtype' in the overload, for messages. Returns a new reference. */
static tt_tensor *reduce(redop op, const tt_tensor *a, const tt_value *dimv, bool keepdim,
                         bool has_dtype, tt_dtype dtype, int dtype_argno)
{
    const char *name = RED_NAME(op);
    tt_dtype in_dt = (tt_dtype)a->dtype, cdt = in_dt, odt = in_dt;
    if (op == OP_SUM) {
        /* PyTorch: integral and bool sums give int64; with dtype the
         * input is converted first. */
        cdt = has_dtype ? dtype : in_dt;
        odt = has_dtype ? dtype : tt_dtype_is_float(in_dt) ? in_dt : TT_I64;
    } else if (op == OP_MEAN) {
        if (has_dtype && !tt_dtype_is_float(dtype)) {
            tt_error(TT_EDTYPE, "%s: argument 'dtype' (#%d): could not infer output dtype; "
                                "the dtype must be a floating point dtype, got %s", name,
                     dtype_argno, tt_dtype_name(dtype));
            return NULL;
        }
        if (!has_dtype && !tt_dtype_is_float(in_dt)) {
            tt_error(TT_EDTYPE, "%s: argument 'self' (#1): could not infer output dtype; "
                                "the input dtype must be a floating point dtype, got %s "
                                "(pass dtype to convert it)", name, tt_dtype_name(in_dt));
            return NULL;
        }
        cdt = odt = has_dtype ? dtype : in_dt;
    }
    bool mask[TT_MAX_DIMS];
    tt_size sizes[TT_MAX_DIMS];
    if (tt__reduce_mask(name, a, dimv, mask))
        return NULL;
    bool all = dimv->kind == TT_V_NONE || dimv->n == 0;
    if ((op == OP_AMAX || op == OP_AMIN) && empty_error(name, a, mask, all))
        return NULL;
    int ond = tt__reduced_shape(a, mask, keepdim, sizes);
    tt_tensor *out = tt__ops_new(a->storage->fake, ond, sizes, NULL, odt);
    if (!out || a->storage->fake || tt_numel(out) == 0)
        return out;
    int d;
    if (empty_reduction(a, mask, &d)) { /* sum of nothing is 0; mean is 0/0 */
        if (tt__fill_raw(out, op == OP_MEAN ? NAN : 0))
            out = tt_release(out);
        return out;
    }
    tt_tensor *x = prepared(a, cdt, false);
    static const kind kinds[OP_COUNT] = {K_SUM, K_SUM, K_MAX, K_MIN};
    if (!x || run_reduce(kinds[op], x, mask, out, op == OP_MEAN))
        out = tt_release(out);
    tt_release(x);
    return out;
}

/* -------------------------------------------------------------- argmax */

/* Index of the first maximum of n elements at p, `st` bytes apart. NaN is
 * larger than everything (PyTorch), so the first NaN wins. Two passes: the
 * vectorized max, then a scan for its first occurrence, which stops early
 * and beats a compare-and-branch loop carrying the index. */
#define ARGMAX(SUF, T, ISNAN, FIELD)                                           \
    static int64_t argmax_##SUF(const char *p, int64_t n, int64_t st)         \
    {                                                                          \
        T m = (T)row_max_##SUF(p, n, st).FIELD;                                \
        if (ISNAN(m)) {                                                        \
            for (int64_t i = 0; i < n; i++)                                    \
                if (ISNAN(*(const T *)(p + i * st)))                           \
                    return i;                                                  \
        }                                                                      \
        for (int64_t i = 0; i < n; i++)                                        \
            if (*(const T *)(p + i * st) == m)                                 \
                return i;                                                      \
        return 0;                                                              \
    }                                                                          \
    /* Whether the later candidate b replaces the current best a. */          \
    static bool beats_##SUF(const char *a, const char *b)                      \
    {                                                                          \
        T x = *(const T *)a, y = *(const T *)b;                                \
        return !ISNAN(x) && (y > x || ISNAN(y));                               \
    }
ARGMAX(f32, float, NAN_F, f)
ARGMAX(f64, double, NAN_F, f)
ARGMAX(i64, int64_t, NAN_I, i)
ARGMAX(i32, int32_t, NAN_I, i)
ARGMAX(u8, uint8_t, NAN_I, i)

typedef struct {
    const char *base;
    int nk;
    int64_t ksize[TT_MAX_DIMS], kin[TT_MAX_DIMS], kout[TT_MAX_DIMS];
    int64_t n, st; /* the reduced dim: length and stride in bytes */
    int64_t chunk, nchunks;
    int64_t (*row)(const char *p, int64_t n, int64_t st);
    bool (*beats)(const char *a, const char *b);
    int64_t *partials; /* [nout][nchunks] indices, when nchunks > 1 */
    int64_t *out;
} aplan;

/* item = output * nchunks + chunk; outputs in the output's order. */
static void task_argmax(int64_t b, int64_t e, void *vp)
{
    const aplan *p = vp;
    int64_t idx[TT_MAX_DIMS], oin, oout;
    int64_t c = b % p->nchunks;
    unravel(b / p->nchunks, p->nk, p->ksize, p->kin, p->kout, idx, &oin, &oout);
    for (int64_t it = b; it < e; it++) {
        int64_t rb = c * p->chunk, m = rb + p->chunk < p->n ? p->chunk : p->n - rb;
        int64_t i = rb + p->row(p->base + oin + rb * p->st, m, p->st);
        if (p->nchunks == 1)
            p->out[oout] = i;
        else
            p->partials[oout * p->nchunks + c] = i;
        if (++c == p->nchunks) {
            c = 0;
            advance(p->nk, p->ksize, p->kin, p->kout, idx, &oin, &oout);
        }
    }
}

static void task_argmax_combine(int64_t b, int64_t e, void *vp)
{
    const aplan *p = vp;
    int64_t idx[TT_MAX_DIMS], oin, oout;
    unravel(b, p->nk, p->ksize, p->kin, p->kout, idx, &oin, &oout);
    for (int64_t o = b; o < e; o++) {
        const int64_t *q = p->partials + oout * p->nchunks;
        int64_t best = q[0];
        for (int64_t c = 1; c < p->nchunks; c++)
            if (p->beats(p->base + oin + best * p->st, p->base + oin + q[c] * p->st))
                best = q[c];
        p->out[oout] = best;
        advance(p->nk, p->ksize, p->kin, p->kout, idx, &oin, &oout);
    }
}

/* tt::argmax: i64 indices of the first maximum along dim (None: over the
 * flattened input). Returns a new reference. */
static tt_tensor *argmax(const tt_tensor *a, const tt_value *dimv, bool keepdim)
{
    const char *name = tt__op_label(TT_OP_ARGMAX);
    tt_dtype dt = (tt_dtype)a->dtype;
    if (dt == TT_BOOL) { /* PyTorch has no argmax kernel for bool either */
        tt_error(TT_EDTYPE, "%s: argument 'self' (#1): not implemented for bool tensors "
                            "(convert to an integer dtype first)", name);
        return NULL;
    }
    bool has_dim = dimv->kind != TT_V_NONE, mask[TT_MAX_DIMS] = {false};
    int dim = 0;
    tt_size sizes[TT_MAX_DIMS];
    char s[128];
    if (has_dim) {
        if ((dim = tt__op_dim(name, "dim", 2, dimv->u.i, a->ndim)) < 0)
            return NULL;
        if (a->ndim > 0 && a->sizes[dim] == 0) {
            tt_error(TT_EINVAL, "%s: argument 'self' (#1): Expected reduction dim %d to "
                                "have non-zero size (the input has shape %s)", name, dim,
                     tt_shape_str(a, s, sizeof s));
            return NULL;
        }
        if (a->ndim > 0)
            mask[dim] = true;
    } else {
        for (int d = 0; d < a->ndim; d++) {
            mask[d] = true;
            if (a->sizes[d] == 0) {
                tt_error(TT_EINVAL, "%s: argument 'self' (#1): expected reduction dim to be "
                                    "specified for an input with no elements (shape %s)",
                         name, tt_shape_str(a, s, sizeof s));
                return NULL;
            }
        }
    }
    int ond = tt__reduced_shape(a, mask, keepdim, sizes);
    tt_tensor *out = tt__ops_new(a->storage->fake, ond, sizes, NULL, TT_I64);
    if (!out || a->storage->fake || tt_numel(out) == 0)
        return out;
    /* Without dim the index is into the flattened (row-major) input. */
    tt_tensor *x = prepared(a, dt, !has_dim);
    if (!x)
        return tt_release(out);
    int64_t es = (int64_t)tt_dtype_size(dt), run = 1;
    static int64_t (*const rows[])(const char *, int64_t, int64_t) = {
        [TT_F32] = argmax_f32, [TT_F64] = argmax_f64, [TT_I64] = argmax_i64,
        [TT_I32] = argmax_i32, [TT_U8] = argmax_u8};
    static bool (*const beats[])(const char *, const char *) = {
        [TT_F32] = beats_f32, [TT_F64] = beats_f64, [TT_I64] = beats_i64,
        [TT_I32] = beats_i32, [TT_U8] = beats_u8};
    aplan p = {.base = tt__ptr(x), .row = rows[dt], .beats = beats[dt],
               .out = (int64_t *)tt__ptr(out), .n = 1, .st = es};
    if (!has_dim) {
        p.n = tt_numel(x);
    } else if (a->ndim > 0) {
        p.n = x->sizes[dim];
        p.st = x->strides[dim] * es;
    }
    for (int d = x->ndim - 1; has_dim && d >= 0; d--)
        if (d != dim) {
            p.ksize[p.nk] = x->sizes[d];
            p.kin[p.nk] = x->strides[d] * es;
            p.kout[p.nk++] = run;
            run *= x->sizes[d];
        }
    for (int i = 0; i < p.nk / 2; i++) { /* collected innermost first */
        int j = p.nk - 1 - i;
        int64_t t0 = p.ksize[i], t1 = p.kin[i], t2 = p.kout[i];
        p.ksize[i] = p.ksize[j], p.kin[i] = p.kin[j], p.kout[i] = p.kout[j];
        p.ksize[j] = t0, p.kin[j] = t1, p.kout[j] = t2;
    }
    p.chunk = p.n > CHUNK ? CHUNK : p.n;
    p.nchunks = (p.n + p.chunk - 1) / p.chunk;
    int64_t nout = tt_numel(out);
    tt_status st = TT_OK;
    if (p.nchunks > 1 && !(p.partials = tt__malloc(sizeof(int64_t) * (size_t)(nout * p.nchunks))))
        st = tt_errcode();
    if (!st) {
        tt_parallel_for(nout * p.nchunks, GRAIN / p.chunk > 1 ? GRAIN / p.chunk : 1,
                        task_argmax, &p);
        if (p.nchunks > 1)
            tt_parallel_for(nout, GRAIN / p.nchunks > 1 ? GRAIN / p.nchunks : 1,
                            task_argmax_combine, &p);
    }
    tt__free(p.partials);
    tt_release(x);
    if (st)
        out = tt_release(out);
    return out;
}

/* ------------------------------------------------------------- softmax */

#define SM_LANES 64

/* y[i] = exp(y[i]) for n elements: f32 through the shared vector kernels
 * (ours, within 1 ulp; AVX-512 or AVX2) when the CPU and build have them,
 * f64 two at a time with SLEEF's SSE2 kernel when the build has SLEEF;
 * libm otherwise. */
static void exp_f32(float *y, int64_t n)
{
    if (tt__vec_f32(TT_VEC_EXP, y, y, n))
        return;
    for (int64_t i = 0; i < n; i++)
        y[i] = expf(y[i]);
}

#if defined(TT_HAVE_SLEEF) && defined(__SSE2__)
#include <emmintrin.h>
#include <sleef.h>
static void exp_f64(double *y, int64_t n)
{
    int64_t i = 0;
    for (; i + 2 <= n; i += 2)
        _mm_storeu_pd(y + i, Sleef_expd2_u10(_mm_loadu_pd(y + i)));
    for (; i < n; i++)
        y[i] = Sleef_exp_u10(y[i]);
}
#else
static void exp_f64(double *y, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = exp(y[i]);
}
#endif

/* x and y are (outer, n, inner), contiguous. A row (inner == 1) or a block
 * of up to SM_LANES columns of one outer index (vectorized across the
 * columns) at a time. Subtracting the max keeps exp from overflowing; a NaN
 * max (any NaN in the row) makes the row NaN, as in PyTorch. The exps are
 * written into y first, then scaled in place (softmax) or replaced by
 * (x - max) - log(sum) (log_softmax). */
#define SOFTMAX(SUF, T)                                                        \
    static void softmax_row_##SUF(const T *restrict x, T *restrict y, int64_t n, bool lg) \
    {                                                                          \
        T m = (T)row_max_##SUF((const char *)x, n, sizeof(T)).f;               \
        for (int64_t i = 0; i < n; i++)                                        \
            y[i] = x[i] - m;                                                   \
        exp_##SUF(y, n);                                                       \
        double s = (double)pairwise_##SUF((const char *)y, n, sizeof(T));      \
        T f = lg ? (T)log(s) : (T)(1.0 / s);                                   \
        if (lg)                                                                \
            for (int64_t i = 0; i < n; i++)                                    \
                y[i] = (x[i] - m) - f;                                         \
        else                                                                   \
            for (int64_t i = 0; i < n; i++)                                    \
                y[i] *= f;                                                     \
    }                                                                          \
    static void softmax_cols_##SUF(const T *restrict x, T *restrict y, int64_t n, \
                                   int64_t inner, int64_t w, bool lg)          \
    {                                                                          \
        T m[SM_LANES], f[SM_LANES];                                            \
        double s[SM_LANES];                                                    \
        for (int64_t j = 0; j < w; j++) {                                      \
            m[j] = x[j];                                                       \
            s[j] = 0;                                                          \
        }                                                                      \
        for (int64_t i = 1; i < n; i++)                                        \
            for (int64_t j = 0; j < w; j++) {                                  \
                T v = x[i * inner + j];                                        \
                m[j] = (v > m[j] || isnan(v)) ? v : m[j];                      \
            }                                                                  \
        for (int64_t i = 0; i < n; i++) {                                      \
            const T *xr = x + i * inner;                                       \
            T *yr = y + i * inner;                                             \
            for (int64_t j = 0; j < w; j++)                                    \
                yr[j] = xr[j] - m[j];                                          \
            exp_##SUF(yr, w);                                                  \
            for (int64_t j = 0; j < w; j++)                                    \
                s[j] += yr[j];                                                 \
        }                                                                      \
        for (int64_t j = 0; j < w; j++)                                        \
            f[j] = lg ? (T)log(s[j]) : (T)(1.0 / s[j]);                        \
        for (int64_t i = 0; i < n; i++)                                        \
            for (int64_t j = 0; j < w; j++)                                    \
                y[i * inner + j] = lg ? (x[i * inner + j] - m[j]) - f[j]       \
                                      : y[i * inner + j] * f[j];               \
    }
SOFTMAX(f32, float)
SOFTMAX(f64, double)

typedef struct {
    const char *x;
    char *y;
    int64_t n, inner, nblk;
    bool f64, lg;
} splan;

static void task_softmax(int64_t b, int64_t e, void *vp)
{
    const splan *p = vp;
    size_t es = p->f64 ? 8 : 4;
    for (int64_t it = b; it < e; it++) {
        int64_t o = it / p->nblk, j0 = it % p->nblk * SM_LANES;
        size_t off = (size_t)((o * p->n * p->inner + j0)) * es;
        if (p->inner == 1) {
            if (p->f64)
                softmax_row_f64((const double *)(p->x + off), (double *)(p->y + off), p->n, p->lg);
            else
                softmax_row_f32((const float *)(p->x + off), (float *)(p->y + off), p->n, p->lg);
            continue;
        }
        int64_t w = p->inner - j0 < SM_LANES ? p->inner - j0 : SM_LANES;
        if (p->f64)
            softmax_cols_f64((const double *)(p->x + off), (double *)(p->y + off), p->n,
                             p->inner, w, p->lg);
        else
            softmax_cols_f32((const float *)(p->x + off), (float *)(p->y + off), p->n,
                             p->inner, w, p->lg);
    }
}

/* tt::softmax / tt::log_softmax along dim, in dtype (when given) or the
 * input's float dtype. The output is contiguous, as PyTorch's. */
static tt_tensor *softmax_of(tt_builtin_id id, bool lg, const tt_tensor *a, int64_t dim,
                             bool has_dtype, tt_dtype dtype)
{
    const char *name = tt__op_label(id);
    if (has_dtype && !tt_dtype_is_float(dtype)) {
        tt_error(TT_EDTYPE, "%s: argument 'dtype' (#3): expected a floating point dtype, "
                            "got %s", name, tt_dtype_name(dtype));
        return NULL;
    }
    if (!has_dtype && !tt_dtype_is_float((tt_dtype)a->dtype)) {
        tt_error(TT_EDTYPE, "%s: argument 'self' (#1): expected a floating point tensor, "
                            "got %s (pass dtype to convert it)", name,
                 tt_dtype_name((tt_dtype)a->dtype));
        return NULL;
    }
    tt_dtype dt = has_dtype ? dtype : (tt_dtype)a->dtype;
    int d = tt__op_dim(name, "dim", 2, dim, a->ndim);
    if (d < 0)
        return NULL;
    tt_tensor *out = tt__ops_new(a->storage->fake, a->ndim, a->sizes, NULL, dt);
    if (!out || a->storage->fake || tt_numel(out) == 0)
        return out;
    tt_tensor *x = prepared(a, dt, true);
    if (!x)
        return tt_release(out);
    splan p = {.x = tt__ptr(x), .y = tt__ptr(out), .n = 1, .inner = 1, .f64 = dt == TT_F64,
               .lg = lg};
    int64_t outer = 1;
    for (int i = 0; i < a->ndim; i++) {
        if (i < d)
            outer *= a->sizes[i];
        else if (i == d)
            p.n = a->sizes[i];
        else
            p.inner *= a->sizes[i];
    }
    p.nblk = p.inner == 1 ? 1 : (p.inner + SM_LANES - 1) / SM_LANES;
    int64_t per = p.n * (p.inner < SM_LANES ? p.inner : SM_LANES);
    tt_parallel_for(outer * p.nblk, GRAIN / per > 1 ? GRAIN / per : 1, task_softmax, &p);
    tt_release(x);
    return out;
}

/* ---------------------------------------------------------------- kernels */

/* A reduction row's data: op * 2 + 1 for the overloads that reduce every
 * dim. */
#define RED_CODE(op, all) ((op) * 2 + (all))
/* The softmax rows' data. */
enum { SOFTMAX_PLAIN, SOFTMAX_LOG };

static tt_status reduce_kernel(tt_frame *f)
{
    intptr_t code = (intptr_t)tt_frame_userdata(f);
    redop op = (redop)(code >> 1);
    bool all = code & 1, keepdim = false, none = true;
    tt_tensor *self;
    tt_dtype dt = TT_F32;
    tt_value dimv = tt_v_none();
    tt_status st = tt_arg_tensor(f, 0, &self);
    if (!st && !all && !tt_arg_is_none(f, 1)) {
        const int64_t *dims;
        int n;
        if (!(st = tt_arg_ints(f, 1, &dims, &n)))
            dimv = tt_v_ints(n, dims);
    }
    if (!st && !all)
        st = tt_arg_bool(f, 2, &keepdim);
    if (!st && (op == OP_SUM || op == OP_MEAN))
        st = tt_arg_dtype(f, all ? 1 : 3, &dt, &none);
    if (st)
        return st;
    tt_tensor *r = reduce(op, self, &dimv, keepdim, !none, dt, all ? 2 : 4);
    return r ? tt_return(f, 0, r) : tt_errcode();
}

static tt_status argmax_kernel(tt_frame *f)
{
    tt_tensor *self;
    bool keepdim;
    int64_t dim = 0;
    tt_status st = tt_arg_tensor(f, 0, &self);
    bool has_dim = !tt_arg_is_none(f, 1);
    if (!st && has_dim)
        st = tt_arg_int(f, 1, &dim);
    if (!st)
        st = tt_arg_bool(f, 2, &keepdim);
    if (st)
        return st;
    tt_value dimv = has_dim ? tt_v_int(dim) : tt_v_none();
    tt_tensor *r = argmax(self, &dimv, keepdim);
    return r ? tt_return(f, 0, r) : tt_errcode();
}

static tt_tensor *softmax(bool lg, const tt_tensor *a, int64_t dim, bool has_dtype,
                          tt_dtype dtype)
{
    return softmax_of(lg ? TT_OP_LOG_SOFTMAX_INT : TT_OP_SOFTMAX_INT, lg, a, dim, has_dtype,
                      dtype);
}

/* _softmax / _log_softmax(self, dim, half_to_float): Core ATen's forms.
 * half_to_float (a half input, a float result) is refused, as PyTorch's
 * CPU kernels refuse it; otherwise softmax.int without a dtype. */
static tt_status softmax_core_kernel(tt_frame *f)
{
    tt_tensor *self;
    int64_t dim;
    bool half_to_float;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &self)) || (st = tt_arg_int(f, 1, &dim)) ||
        (st = tt_arg_bool(f, 2, &half_to_float)))
        return st;
    if (half_to_float)
        return tt_frame_fail(f, TT_EINVAL, "argument 'half_to_float' (#3): softmax with half "
                                           "to float conversion is not supported on CPU");
    bool lg = (intptr_t)tt_frame_userdata(f) == SOFTMAX_LOG;
    tt_tensor *r = softmax_of(lg ? TT_OP__LOG_SOFTMAX : TT_OP__SOFTMAX, lg, self, dim, false,
                              TT_F32);
    return r ? tt_return(f, 0, r) : tt_errcode();
}

static tt_status softmax_kernel(tt_frame *f)
{
    tt_tensor *self;
    int64_t dim;
    tt_dtype dt = TT_F32;
    bool none = true;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &self)) || (st = tt_arg_int(f, 1, &dim)) ||
        (st = tt_arg_dtype(f, 2, &dt, &none)))
        return st;
    bool lg = (intptr_t)tt_frame_userdata(f) == SOFTMAX_LOG;
    tt_tensor *r = softmax(lg, self, dim, !none, dt);
    return r ? tt_return(f, 0, r) : tt_errcode();
}

/* ------------------------------------------------------------ derivatives */

/* The reduction a backward context belongs to, from its row's data. */
static redop red_op_of(const tt_autograd_ctx *ctx)
{
    return (redop)((intptr_t)tt_ctx_userdata(ctx) >> 1);
}

/* Rules written with ops (so a traced backward reads like the forward).
 * The reduced dims of the input, as a mask, from the call's dim list
 * (None or [] reduces everything). */
static int reduced_dims(tt_autograd_ctx *ctx, int ndim, bool *mask)
{
    const int64_t *dims;
    int n = 0;
    if (tt_ctx_get_ints(ctx, "dims", &dims, &n) || n == 0) {
        tt_clear_error();
        for (int d = 0; d < ndim; d++)
            mask[d] = true;
        return ndim;
    }
    for (int d = 0; d < ndim; d++)
        mask[d] = false;
    for (int i = 0; i < n; i++)
        mask[dims[i] < 0 ? dims[i] + ndim : dims[i]] = true;
    return n;
}

static tt_status setup_reduce(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                              const tt_value *out, int nout)
{
    (void)nout;
    tt_status st = tt_ctx_save_shape(ctx, "shape", in[0].u.t);
    if (!st && nin > 1 && in[1].kind == TT_V_INTS)
        st = tt_ctx_save_ints(ctx, "dims", in[1].n, in[1].u.ints);
    if (!st)
        st = tt_ctx_save_int(ctx, "keepdim", nin > 2 && in[2].kind == TT_V_BOOL && in[2].u.b);
    /* amax/amin route the gradient to the extreme elements: they need
     * the input and the result. */
    redop op = red_op_of(ctx);
    if (!st && (op == OP_AMAX || op == OP_AMIN))
        st = tt_ctx_save_for_backward(ctx, 2, (tt_tensor *[]){in[0].u.t, out[0].u.t});
    return st;
}

/* g with the reduced dims put back as size 1 (it already has them with
 * keepdim), so that it broadcasts against the input. */
static tt_tensor *unreduce(tt_autograd_ctx *ctx, const tt_tensor *g, int ndim, const bool *mask)
{
    int64_t keep = 0;
    tt_ctx_get_int(ctx, "keepdim", &keep);
    if (keep || tt_ndim(g) == ndim) /* a view, so the caller's scope owns it */
        return tt_reshape(g, tt_ndim(g), tt_sizes(g));
    int64_t sizes[TT_MAX_DIMS];
    for (int d = 0, k = 0; d < ndim; d++)
        sizes[d] = mask[d] ? 1 : tt_sizes(g)[k++];
    return tt_reshape(g, ndim, sizes);
}

/* sum: the gradient broadcast back over the reduced dims; mean: divided
 * by the count; amax/amin: to the extreme elements, split evenly among
 * ties (as PyTorch's amax backward). */
static tt_status reduce_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                 tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    const int64_t *shape;
    int nd;
    tt_status st = tt_ctx_get_ints(ctx, "shape", &shape, &nd);
    if (st)
        return st;
    bool mask[TT_MAX_DIMS];
    reduced_dims(ctx, nd, mask);
    redop op = red_op_of(ctx);
    tt_scope_begin();
    tt_tensor *gk = unreduce(ctx, g[0], nd, mask), *r = NULL;
    if (op == OP_SUM || op == OP_MEAN) {
        r = tt_expand(gk, nd, shape);
        if (r && op == OP_MEAN) {
            tt_size count = 1;
            for (int d = 0; d < nd; d++)
                count = mask[d] ? tt_sym_mul(count, shape[d]) : count;
            /* Under a symbolic trace the count is an expression: it travels
             * as an int Scalar, which a compiled plan evaluates on the real
             * sizes (as a double it was the handle's value). */
            r = tt_size_is_sym(count)
                    ? tt__call_op(TT_OP_DIV_SCALAR, TT_ARGS(tt_v_tensor(r), tt_v_int(count)))
                    : tt_div_scalar(r, (double)(count ? count : 1));
        }
    } else {
        tt_tensor *self = tt_ctx_saved(ctx, 0), *res = tt_ctx_saved(ctx, 1);
        tt_tensor *hit = tt_eq(self, unreduce(ctx, res, nd, mask));
        int64_t dims[TT_MAX_DIMS];
        int n = 0;
        for (int d = 0; d < nd; d++)
            if (mask[d])
                dims[n++] = d;
        tt_tensor *count = tt_sum(hit, n, dims, true);
        r = tt_div(tt_mul(hit, gk), count);
    }
    tt_keep(r);
    tt_scope_end();
    if (!r)
        return tt_errcode();
    if (!tt_ctx_needs_input_grad(ctx, 0)) {
        tt_release(r);
        return TT_OK;
    }
    gi[0] = r;
    return TT_OK;
}

static tt_status setup_softmax(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                               const tt_value *out, int nout)
{
    (void)nin, (void)nout;
    tt_status st = tt_ctx_save_int(ctx, "dim", in[1].u.i);
    return st ? st : tt_ctx_save_for_backward(ctx, 1, &out[0].u.t);
}

/* softmax: y * (g - sum(g * y)); log_softmax: g - exp(y) * sum(g), the
 * sums along the softmax dim. */
static tt_status softmax_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                  tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    int64_t dim;
    tt_status st = tt_ctx_get_int(ctx, "dim", &dim);
    if (st)
        return st;
    if (!tt_ctx_needs_input_grad(ctx, 0))
        return TT_OK;
    tt_tensor *y = tt_ctx_saved(ctx, 0);
    bool log = (intptr_t)tt_ctx_userdata(ctx) == SOFTMAX_LOG;
    tt_scope_begin();
    tt_tensor *r;
    if (log)
        r = tt_sub(g[0], tt_mul(tt_exp(y), tt_sum(g[0], 1, &dim, true)));
    else
        r = tt_mul(y, tt_sub(g[0], tt_sum(tt_mul(g[0], y), 1, &dim, true)));
    tt_keep(r);
    tt_scope_end();
    gi[0] = r;
    return r ? TT_OK : tt_errcode();
}

#undef TT__FAMILY_REDUCE
#define TT__FAMILY_REDUCE TT__ROW
static const tt__builtin_row rows[] = {TT__FAMILY_ROWS};

tt_status tt__register_reduce(tt_library *lib)
{
    return TT__DEFINE_ROWS(lib, rows);
}

/* ---------------------------------------------------------- typed wrappers */

/* The fast path calls the shared function directly when no mode, grad or
 * fake tensor is in play; otherwise the call goes through the dispatcher. */
static tt_tensor *red_call(redop op,
                           const tt_tensor *a, int ndims, const int64_t *dims, bool keepdim)
{
    tt_value dimv = tt_v_ints(ndims, dims);
    if (ndims < 0) {
        tt_error(TT_EINVAL, "%s: argument 'dim' (#2): the dim count must be >= 0, got %d",
                 RED_NAME(op), ndims);
        return NULL;
    }
    if (ndims > 0 && !dims) {
        tt_error(TT_EINVAL, "%s: argument 'dim' (#2): expects %d dims, got NULL", RED_NAME(op),
                 ndims);
        return NULL;
    }
    if (tt__fast_path(red_ids[op], 1, &a))
        return reduce(op, a, &dimv, keepdim, false, TT_F32, 4);
    return tt__call_op(red_ids[op], TT_ARGS(tt_v_tensor(a), dimv, tt_v_bool(keepdim)));
}

#define RED_WRAPPER(fn, op)                                                    \
    tt_tensor *fn(const tt_tensor *a, int ndims, const int64_t *dims, bool keepdim) \
    {                                                                          \
        return red_call(op, a, ndims, dims, keepdim);                          \
    }
RED_WRAPPER(tt_sum, OP_SUM)
RED_WRAPPER(tt_mean, OP_MEAN)
RED_WRAPPER(tt_amax, OP_AMAX)
RED_WRAPPER(tt_amin, OP_AMIN)

tt_tensor *tt_sum_all(const tt_tensor *a)
{
    tt_value none = tt_v_none();
    if (tt__fast_path(TT_OP_SUM, 1, &a))
        return reduce(OP_SUM, a, &none, false, false, TT_F32, 2);
    return tt__call_op(TT_OP_SUM, TT_ARGS(tt_v_tensor(a)));
}

tt_tensor *tt_mean_all(const tt_tensor *a)
{
    tt_value none = tt_v_none();
    if (tt__fast_path(TT_OP_MEAN, 1, &a))
        return reduce(OP_MEAN, a, &none, false, false, TT_F32, 2);
    return tt__call_op(TT_OP_MEAN, TT_ARGS(tt_v_tensor(a)));
}

tt_tensor *tt_argmax(const tt_tensor *a, int dim, bool keepdim)
{
    tt_value dimv = tt_v_int(dim);
    if (tt__fast_path(TT_OP_ARGMAX, 1, &a))
        return argmax(a, &dimv, keepdim);
    return tt__call_op(TT_OP_ARGMAX, TT_ARGS(tt_v_tensor(a), dimv, tt_v_bool(keepdim)));
}

tt_tensor *tt_softmax(const tt_tensor *a, int dim)
{
    if (tt__fast_path(TT_OP_SOFTMAX_INT, 1, &a))
        return softmax(false, a, dim, false, TT_F32);
    return tt__call_op(TT_OP_SOFTMAX_INT, TT_ARGS(tt_v_tensor(a), tt_v_int(dim)));
}

tt_tensor *tt_log_softmax(const tt_tensor *a, int dim)
{
    if (tt__fast_path(TT_OP_LOG_SOFTMAX_INT, 1, &a))
        return softmax(true, a, dim, false, TT_F32);
    return tt__call_op(TT_OP_LOG_SOFTMAX_INT, TT_ARGS(tt_v_tensor(a), tt_v_int(dim)));
}
