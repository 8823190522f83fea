/* 3-d (volumetric) pooling: Core ATen's avg_pool3d, max_pool3d_with_indices
 * and _adaptive_avg_pool3d with their backward ops.
 *
 * Plain loops over the [N*C] volumes, each read through its strides (any
 * layout in, no copy), in parallel over the volumes: 3-d pooling is rare
 * (video and medical models), so unlike ops/pooling.c there are no
 * row-at-once or channels-last kernels. Results are contiguous whatever the
 * input's layout, as PyTorch 1.13's CPU kernels give them (a
 * channels_last_3d input included), and so are the input gradients. Sums
 * are in the dtype, in PyTorch's order (depth, rows, columns). */
#include "pool_args.h"
#include "transformer_impl.h"
#include "tt_nn.h"

#include <stdatomic.h>

/* ------------------------------------------------------------- arguments */

/* (read and checked by ops/pool_args.c, shared with the 2-d family) */

/* x's sizes with the last three replaced by o. */
static void pooled_sizes(const tt_tensor *x, const tt_size *o, tt_size *sizes)
{
    int nd = tt_ndim(x);
    for (int d = 0; d < nd - 3; d++)
        sizes[d] = tt_sizes(x)[d];
    for (int i = 0; i < 3; i++)
        sizes[nd - 3 + i] = o[i];
}

/* A new contiguous tensor (PyTorch 1.13's 3-d pooling layout). */
static tt_tensor *new_contig(bool fake, int nd, const tt_size *sizes, tt_dtype dt)
{
    tt_size strides[5];
    tt__contiguous_strides(nd, sizes, strides);
    return tt__ops_new(fake, nd, sizes, strides, dt);
}

/* ----------------------------------------------------------------- plans */

/* One call over real data: volumes [N*C]; "in" is the input or its
 * gradient, "out" the result or the output gradient, "ind" the indices;
 * element strides n, c, d, h, w of each (n 0 unbatched). */
typedef struct {
    const pool_args *a;
    char *in, *out;
    int64_t *ind;
    int64_t C, D, H, W, OD, OH, OW;
    int64_t is[5], os[5], xs[5];
    atomic_int bad; /* max backward: an index out of its volume */
} p3_plan;

static void plan_strides(const tt_tensor *t, int64_t s[5])
{
    int nd = tt_ndim(t);
    s[0] = nd == 5 ? tt_strides(t)[0] : 0;
    for (int d = 1; d < 5; d++)
        s[d] = tt_strides(t)[nd - 5 + d];
}

static void plan_init(p3_plan *p, const pool_args *a, const tt_tensor *x, const tt_tensor *y)
{
    int nd = tt_ndim(x);
    const tt_size *xs = tt_sizes(x), *ys = tt_sizes(y);
    *p = (p3_plan){.a = a, .C = xs[nd - 4], .D = xs[nd - 3], .H = xs[nd - 2], .W = xs[nd - 1],
                   .OD = ys[nd - 3], .OH = ys[nd - 2], .OW = ys[nd - 1]};
    plan_strides(x, p->is);
    plan_strides(y, p->os);
}

static int64_t plan_volumes(const tt_tensor *x)
{
    return tt_ndim(x) == 5 ? tt_sizes(x)[0] * tt_sizes(x)[1] : tt_sizes(x)[0];
}

/* Volumes per task: about 64k element reads each (in double: no overflow). */
static int64_t plan_grain(const p3_plan *p, double per_out)
{
    double work = (double)p->OD * (double)p->OH * (double)p->OW * (per_out > 1 ? per_out : 1) +
                  (double)p->D * (double)p->H * (double)p->W;
    return work >= 65536 ? 1 : 65536 / (int64_t)(work > 1 ? work : 1) + 1;
}

/* The first element of volume pl of a tensor with strides s. */
#define VOL(T, base, s, pl, C) ((T *)(base) + ((pl) / (C)) * (s)[0] + ((pl) % (C)) * (s)[1])

/* ------------------------------------------------------------ max pool */

/* PyTorch's max_pool3d_with_indices_single_out_frame: the window starts at
 * the first tap inside the input; a value replaces the maximum when larger
 * or NaN (the first of equal values wins, the last NaN), from -inf with
 * the index of the window's first tap. */
#define MAX3_FWD(T)                                                            \
    static void max3_fwd_##T(int64_t b, int64_t e, void *vp)                   \
    {                                                                          \
        const p3_plan *p = vp;                                                 \
        const pool_args *a = p->a;                                               \
        for (int64_t pl = b; pl < e; pl++) {                                   \
            const T *x = VOL(const T, p->in, p->is, pl, p->C);                 \
            T *y = VOL(T, p->out, p->os, pl, p->C);                            \
            int64_t *ix = VOL(int64_t, p->ind, p->xs, pl, p->C);               \
            for (int64_t od = 0; od < p->OD; od++)                             \
                for (int64_t oh = 0; oh < p->OH; oh++)                         \
                    for (int64_t ow = 0; ow < p->OW; ow++) {                   \
                        int64_t t0 = od * a->s[0] - a->p[0];                   \
                        int64_t h0 = oh * a->s[1] - a->p[1];                   \
                        int64_t w0 = ow * a->s[2] - a->p[2];                   \
                        int64_t t1 = t0 + (a->k[0] - 1) * a->d[0] + 1;         \
                        int64_t h1 = h0 + (a->k[1] - 1) * a->d[1] + 1;         \
                        int64_t w1 = w0 + (a->k[2] - 1) * a->d[2] + 1;         \
                        t1 = t1 < p->D ? t1 : p->D;                            \
                        h1 = h1 < p->H ? h1 : p->H;                            \
                        w1 = w1 < p->W ? w1 : p->W;                            \
                        while (t0 < 0)                                         \
                            t0 += a->d[0];                                     \
                        while (h0 < 0)                                         \
                            h0 += a->d[1];                                     \
                        while (w0 < 0)                                         \
                            w0 += a->d[2];                                     \
                        T m = -(T)INFINITY;                                    \
                        int64_t mi = (t0 * p->H + h0) * p->W + w0;             \
                        for (int64_t t = t0; t < t1; t += a->d[0])             \
                            for (int64_t h = h0; h < h1; h += a->d[1])         \
                                for (int64_t w = w0; w < w1; w += a->d[2]) {   \
                                    T v = x[t * p->is[2] + h * p->is[3] +      \
                                            w * p->is[4]];                     \
                                    if (v > m || v != v) {                     \
                                        m = v;                                 \
                                        mi = (t * p->H + h) * p->W + w;        \
                                    }                                          \
                                }                                              \
                        int64_t o = (od * p->OH + oh) * p->OW + ow;            \
                        y[o] = m;                                              \
                        ix[o] = mi;                                            \
                    }                                                          \
        }                                                                      \
    }
MAX3_FWD(float)
MAX3_FWD(double)

static tt_status max_pool3d(const tt_tensor *x, const pool_args *a, bool fake, tt_tensor **y,
                            tt_tensor **ind)
{
    const char *op = tt__op_label(TT_OP_MAX_POOL3D_WITH_INDICES);
    tt_size o[3], sizes[5];
    *y = *ind = NULL;
    tt_status st = tt__pool_check(op, x, a, 3, 1, true, false, false, o);
    if (st)
        return st;
    int nd = tt_ndim(x);
    pooled_sizes(x, o, sizes);
    fake = fake || is_fake(x);
    *y = new_contig(fake, nd, sizes, tt_dtype_of(x));
    *ind = *y ? new_contig(fake, nd, sizes, TT_I64) : NULL;
    if (!*ind) {
        *y = tt_release(*y);
        return tt_errcode();
    }
    if (fake)
        return TT_OK;
    p3_plan p;
    plan_init(&p, a, x, *y);
    p.in = tt__ptr(x), p.out = tt__ptr(*y), p.ind = (int64_t *)tt__ptr(*ind);
    plan_strides(*ind, p.xs);
    double per = (double)a->k[0] * (double)a->k[1] * (double)a->k[2];
    tt_parallel_for(plan_volumes(x), plan_grain(&p, per),
                    tt_dtype_of(x) == TT_F64 ? max3_fwd_double : max3_fwd_float, &p);
    return TT_OK;
}

static tt_status max_pool3d_kernel(tt_frame *f)
{
    tt_tensor *x, *y, *ind;
    pool_args a;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &x)) || (st = tt__pool_frame_args(f, 1, true, 3, &a)) ||
        (st = max_pool3d(x, &a, tt_frame_is_fake(f), &y, &ind)))
        return st;
    st = tt_return(f, 0, y);
    if (st) {
        tt_release(ind);
        return st;
    }
    return tt_return(f, 1, ind);
}

/* Each output gradient added at its index in its volume, in output order;
 * an index outside the volume is refused (PyTorch would write out of
 * bounds). */
#define MAX3_BWD(T)                                                            \
    static void max3_bwd_##T(int64_t b, int64_t e, void *vp)                   \
    {                                                                          \
        p3_plan *p = vp;                                                       \
        const int64_t HW = p->H * p->W, vol = p->D * HW;                       \
        for (int64_t pl = b; pl < e; pl++) {                                   \
            T *gi = VOL(T, p->in, p->is, pl, p->C);                            \
            const T *go = VOL(const T, p->out, p->os, pl, p->C);               \
            const int64_t *ix = VOL(const int64_t, p->ind, p->xs, pl, p->C);   \
            for (int64_t od = 0; od < p->OD; od++)                             \
                for (int64_t oh = 0; oh < p->OH; oh++)                         \
                    for (int64_t ow = 0; ow < p->OW; ow++) {                   \
                        int64_t i = ix[od * p->xs[2] + oh * p->xs[3] + ow * p->xs[4]]; \
                        if (i < 0 || i >= vol) {                               \
                            atomic_store(&p->bad, 1);                          \
                            continue;                                          \
                        }                                                      \
                        gi[(i / HW) * p->is[2] + (i % HW / p->W) * p->is[3] +  \
                           (i % p->W) * p->is[4]] +=                           \
                            go[od * p->os[2] + oh * p->os[3] + ow * p->os[4]]; \
                    }                                                          \
        }                                                                      \
    }
MAX3_BWD(float)
MAX3_BWD(double)

/* A contiguous gradient of x's sizes, zeroed when real. */
static tt_tensor *grad_like(const tt_tensor *x, bool fake)
{
    tt_tensor *gi = new_contig(fake, tt_ndim(x), tt_sizes(x), tt_dtype_of(x));
    if (gi && !fake)
        memset(tt__ptr(gi), 0, (size_t)tt_numel(gi) * tt_dtype_size(tt_dtype_of(gi)));
    return gi;
}

static tt_status max_pool3d_backward_kernel(tt_frame *f)
{
    const char *op = tt__op_label(TT_OP_MAX_POOL3D_WITH_INDICES_BACKWARD);
    tt_tensor *g, *x, *ind;
    pool_args a;
    tt_size o[3], osz[5];
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &g)) || (st = tt_arg_tensor(f, 1, &x)) ||
        (st = tt__pool_frame_args(f, 2, true, 3, &a)) || (st = tt_arg_tensor(f, 7, &ind)))
        return st;
    if ((st = tt__pool_check(op, x, &a, 3, 2, true, false, false, o)) ||
        (st = want_same_dtype(op, "grad_output", 1, g, x)))
        return st;
    int nd = tt_ndim(x);
    pooled_sizes(x, o, osz);
    if ((st = want_sizes(op, "grad_output", 1, g, nd, osz)) ||
        (st = want_sizes(op, "indices", 8, ind, nd, osz)))
        return st;
    if (tt_dtype_of(ind) != TT_I64)
        return tt_error(TT_EDTYPE, "%s: argument 'indices' (#8): expected i64, got %s", op,
                        tt_dtype_name(tt_dtype_of(ind)));
    bool fake = tt_frame_is_fake(f) || is_fake(g) || is_fake(x) || is_fake(ind);
    tt_tensor *gi = grad_like(x, fake);
    if (!gi || fake)
        return gi ? tt_return(f, 0, gi) : tt_errcode();
    p3_plan p;
    plan_init(&p, &a, x, g);
    p.in = tt__ptr(gi), p.out = tt__ptr(g), p.ind = (int64_t *)tt__ptr(ind);
    plan_strides(gi, p.is);
    plan_strides(ind, p.xs);
    tt_parallel_for(plan_volumes(x), plan_grain(&p, 1),
                    tt_dtype_of(x) == TT_F64 ? max3_bwd_double : max3_bwd_float, &p);
    if (atomic_load(&p.bad)) {
        tt_release(gi);
        return tt_error(TT_EINVAL, "%s: argument 'indices' (#8): an index is outside its input "
                                   "volume of %lld elements", op, (long long)(p.D * p.H * p.W));
    }
    return tt_return(f, 0, gi);
}

/* ------------------------------------------------------------ avg pool */

/* PyTorch's avg_pool3d_out_frame: the window from (od, oh, ow) * stride -
 * padding, kernel long, clipped to the padded input for the pool size
 * (what count_include_pad divides by) and to the input for the sum; an
 * empty window gives 0. */
typedef struct {
    int64_t lo[3], hi[3]; /* the window clipped to the input */
    int64_t div;
} avg3_win;

static inline avg3_win avg3_window(const p3_plan *p, int64_t od, int64_t oh, int64_t ow)
{
    const pool_args *a = p->a;
    const int64_t o[3] = {od, oh, ow}, in[3] = {p->D, p->H, p->W};
    avg3_win r;
    int64_t pool = 1, inside = 1;
    for (int i = 0; i < 3; i++) {
        int64_t s = o[i] * a->s[i] - a->p[i], e = s + a->k[i];
        e = e < in[i] + a->p[i] ? e : in[i] + a->p[i];
        pool *= e - s;
        r.lo[i] = s > 0 ? s : 0;
        r.hi[i] = e < in[i] ? e : in[i];
        inside *= r.hi[i] > r.lo[i] ? r.hi[i] - r.lo[i] : 0;
    }
    r.div = a->divisor ? a->divisor : a->count_include_pad ? pool : inside;
    return r;
}

static inline bool avg3_empty(const avg3_win *w)
{
    return w->lo[0] >= w->hi[0] || w->lo[1] >= w->hi[1] || w->lo[2] >= w->hi[2];
}

/* The sum in T (integer division truncating for i64, as C++'s). */
#define AVG3_FWD(T)                                                            \
    static void avg3_fwd_##T(int64_t b, int64_t e, void *vp)                   \
    {                                                                          \
        const p3_plan *p = vp;                                                 \
        for (int64_t pl = b; pl < e; pl++) {                                   \
            const T *x = VOL(const T, p->in, p->is, pl, p->C);                 \
            T *y = VOL(T, p->out, p->os, pl, p->C);                            \
            for (int64_t od = 0; od < p->OD; od++)                             \
                for (int64_t oh = 0; oh < p->OH; oh++)                         \
                    for (int64_t ow = 0; ow < p->OW; ow++) {                   \
                        avg3_win wn = avg3_window(p, od, oh, ow);              \
                        T sum = 0;                                             \
                        for (int64_t t = wn.lo[0]; t < wn.hi[0]; t++)          \
                            for (int64_t h = wn.lo[1]; h < wn.hi[1]; h++)      \
                                for (int64_t w = wn.lo[2]; w < wn.hi[2]; w++)  \
                                    sum += x[t * p->is[2] + h * p->is[3] +     \
                                             w * p->is[4]];                    \
                        y[(od * p->OH + oh) * p->OW + ow] =                    \
                            avg3_empty(&wn) ? (T)0 : sum / (T)wn.div;          \
                    }                                                          \
        }                                                                      \
    }
AVG3_FWD(float)
AVG3_FWD(double)
AVG3_FWD(int64_t)

/* Each output gradient divided by its window's divisor, added to the
 * window's clipped elements (avg_pool3d_backward_out_frame). */
#define AVG3_BWD(T)                                                            \
    static void avg3_bwd_##T(int64_t b, int64_t e, void *vp)                   \
    {                                                                          \
        const p3_plan *p = vp;                                                 \
        for (int64_t pl = b; pl < e; pl++) {                                   \
            T *gi = VOL(T, p->in, p->is, pl, p->C);                            \
            const T *go = VOL(const T, p->out, p->os, pl, p->C);               \
            for (int64_t od = 0; od < p->OD; od++)                             \
                for (int64_t oh = 0; oh < p->OH; oh++)                         \
                    for (int64_t ow = 0; ow < p->OW; ow++) {                   \
                        avg3_win wn = avg3_window(p, od, oh, ow);              \
                        if (avg3_empty(&wn))                                   \
                            continue;                                          \
                        T d = go[od * p->os[2] + oh * p->os[3] + ow * p->os[4]] / \
                              (T)wn.div;                                       \
                        for (int64_t t = wn.lo[0]; t < wn.hi[0]; t++)          \
                            for (int64_t h = wn.lo[1]; h < wn.hi[1]; h++)      \
                                for (int64_t w = wn.lo[2]; w < wn.hi[2]; w++)  \
                                    gi[t * p->is[2] + h * p->is[3] +           \
                                       w * p->is[4]] += d;                     \
                    }                                                          \
        }                                                                      \
    }
AVG3_BWD(float)
AVG3_BWD(double)

/* tt::avg_pool3d: f32, f64 and (as PyTorch) i64. */
static tt_tensor *avg_pool3d(const tt_tensor *x, const pool_args *a, bool fake)
{
    const char *op = tt__op_label(TT_OP_AVG_POOL3D);
    tt_size o[3], sizes[5];
    if (tt__pool_check(op, x, a, 3, 1, false, true, true, o))
        return NULL;
    pooled_sizes(x, o, sizes);
    fake = fake || is_fake(x);
    tt_tensor *y = new_contig(fake, tt_ndim(x), sizes, tt_dtype_of(x));
    if (!y || fake)
        return y;
    p3_plan p;
    plan_init(&p, a, x, y);
    p.in = tt__ptr(x), p.out = tt__ptr(y);
    tt_dtype dt = tt_dtype_of(x);
    double per = (double)a->k[0] * (double)a->k[1] * (double)a->k[2];
    tt_parallel_for(plan_volumes(x), plan_grain(&p, per),
                    dt == TT_F64   ? avg3_fwd_double
                    : dt == TT_F32 ? avg3_fwd_float
                                   : avg3_fwd_int64_t,
                    &p);
    return y;
}

static tt_status avg_pool3d_kernel(tt_frame *f)
{
    tt_tensor *x;
    pool_args a;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &x)) || (st = tt__pool_avg_frame_args(f, 1, 3, &a)))
        return st;
    tt_tensor *y = avg_pool3d(x, &a, tt_frame_is_fake(f));
    return y ? tt_return(f, 0, y) : tt_errcode();
}

static tt_status avg_pool3d_backward_kernel(tt_frame *f)
{
    const char *op = tt__op_label(TT_OP_AVG_POOL3D_BACKWARD);
    tt_tensor *g, *x;
    pool_args a;
    tt_size o[3], osz[5];
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &g)) || (st = tt_arg_tensor(f, 1, &x)) ||
        (st = tt__pool_avg_frame_args(f, 2, 3, &a)))
        return st;
    if ((st = tt__pool_check(op, x, &a, 3, 2, false, false, true, o)) ||
        (st = want_same_dtype(op, "grad_output", 1, g, x)))
        return st;
    pooled_sizes(x, o, osz);
    if ((st = want_sizes(op, "grad_output", 1, g, tt_ndim(x), osz)))
        return st;
    bool fake = tt_frame_is_fake(f) || is_fake(g) || is_fake(x);
    tt_tensor *gi = grad_like(x, fake);
    if (!gi || fake)
        return gi ? tt_return(f, 0, gi) : tt_errcode();
    p3_plan p;
    plan_init(&p, &a, x, g);
    p.in = tt__ptr(gi), p.out = tt__ptr(g);
    plan_strides(gi, p.is);
    double per = (double)a.k[0] * (double)a.k[1] * (double)a.k[2];
    tt_parallel_for(plan_volumes(x), plan_grain(&p, per),
                    tt_dtype_of(x) == TT_F64 ? avg3_bwd_double : avg3_bwd_float, &p);
    return tt_return(f, 0, gi);
}

/* ---------------------------------------------------- adaptive avg pool */

/* PyTorch's start_index / end_index: output o of `out` covers input
 * [floor(o in / out), ceil((o + 1) in / out)), in exact integers. */
static inline int64_t ad_start(int64_t o, int64_t out, int64_t in)
{
    return (o / out) * in + ((o % out) * in) / out;
}
static inline int64_t ad_end(int64_t o, int64_t out, int64_t in)
{
    return 1 + ((o + 1) * in - 1) / out;
}

/* sum / kD / kH / kW, as PyTorch's adaptive_avg_pool3d_out_frame; the
 * backward adds grad / kD / kH / kW to each window element. */
#define ADAPTIVE3(T)                                                           \
    static void ad3_fwd_##T(int64_t b, int64_t e, void *vp)                    \
    {                                                                          \
        const p3_plan *p = vp;                                                 \
        for (int64_t pl = b; pl < e; pl++) {                                   \
            const T *x = VOL(const T, p->in, p->is, pl, p->C);                 \
            T *y = VOL(T, p->out, p->os, pl, p->C);                            \
            for (int64_t od = 0; od < p->OD; od++) {                           \
                int64_t t0 = ad_start(od, p->OD, p->D), t1 = ad_end(od, p->OD, p->D); \
                for (int64_t oh = 0; oh < p->OH; oh++) {                       \
                    int64_t h0 = ad_start(oh, p->OH, p->H), h1 = ad_end(oh, p->OH, p->H); \
                    for (int64_t ow = 0; ow < p->OW; ow++) {                   \
                        int64_t w0 = ad_start(ow, p->OW, p->W);                \
                        int64_t w1 = ad_end(ow, p->OW, p->W);                  \
                        T sum = 0;                                             \
                        for (int64_t t = t0; t < t1; t++)                      \
                            for (int64_t h = h0; h < h1; h++)                  \
                                for (int64_t w = w0; w < w1; w++)              \
                                    sum += x[t * p->is[2] + h * p->is[3] +     \
                                             w * p->is[4]];                    \
                        y[(od * p->OH + oh) * p->OW + ow] =                    \
                            sum / (T)(t1 - t0) / (T)(h1 - h0) / (T)(w1 - w0);  \
                    }                                                          \
                }                                                              \
            }                                                                  \
        }                                                                      \
    }                                                                          \
    static void ad3_bwd_##T(int64_t b, int64_t e, void *vp)                    \
    {                                                                          \
        const p3_plan *p = vp;                                                 \
        for (int64_t pl = b; pl < e; pl++) {                                   \
            T *gi = VOL(T, p->in, p->is, pl, p->C);                            \
            const T *go = VOL(const T, p->out, p->os, pl, p->C);               \
            for (int64_t od = 0; od < p->OD; od++) {                           \
                int64_t t0 = ad_start(od, p->OD, p->D), t1 = ad_end(od, p->OD, p->D); \
                for (int64_t oh = 0; oh < p->OH; oh++) {                       \
                    int64_t h0 = ad_start(oh, p->OH, p->H), h1 = ad_end(oh, p->OH, p->H); \
                    for (int64_t ow = 0; ow < p->OW; ow++) {                   \
                        int64_t w0 = ad_start(ow, p->OW, p->W);                \
                        int64_t w1 = ad_end(ow, p->OW, p->W);                  \
                        T d = go[od * p->os[2] + oh * p->os[3] + ow * p->os[4]] / \
                              (T)(t1 - t0) / (T)(h1 - h0) / (T)(w1 - w0);      \
                        for (int64_t t = t0; t < t1; t++)                      \
                            for (int64_t h = h0; h < h1; h++)                  \
                                for (int64_t w = w0; w < w1; w++)              \
                                    gi[t * p->is[2] + h * p->is[3] +           \
                                       w * p->is[4]] += d;                     \
                    }                                                          \
                }                                                              \
            }                                                                  \
        }                                                                      \
    }
ADAPTIVE3(float)
ADAPTIVE3(double)

/* PyTorch's adaptive_avg_pool3d input check: 4-d or 5-d, every dim but N
 * non-zero; f32 or f64. */
static tt_status adaptive3_check(const char *op, const tt_tensor *x, int argno)
{
    tt_status st = want_float(op, "self", argno, x);
    if (st)
        return st;
    int nd = tt_ndim(x);
    bool ok = nd == 4 || nd == 5;
    for (int d = nd == 5 ? 1 : 0; ok && d < nd; d++)
        ok = !tt__sz_eq(tt_sizes(x)[d], 0);
    if (ok)
        return TT_OK;
    char s1[128];
    return tt_error(TT_ESHAPE, "%s: argument 'self' (#%d): expected a 4-d [C, D, H, W] or 5-d "
                               "[N, C, D, H, W] tensor with non-zero sizes (N may be 0), got %s",
                    op, argno, tt_shape_str(x, s1, sizeof s1));
}

static tt_tensor *adaptive_avg_pool3d(const tt_tensor *x, const tt_size *osize, bool fake)
{
    const char *op = tt__op_label(TT_OP__ADAPTIVE_AVG_POOL3D);
    tt_size sizes[5];
    if (adaptive3_check(op, x, 1))
        return NULL;
    for (int i = 0; i < 3; i++)
        if (!tt_size_is_sym(osize[i]) && osize[i] < 0) {
            tt_error(TT_EINVAL, "%s: argument 'output_size' (#2): expected sizes of at least "
                                "0, got [%lld, %lld, %lld]", op, (long long)osize[0],
                     (long long)osize[1], (long long)osize[2]);
            return NULL;
        }
    pooled_sizes(x, osize, sizes);
    fake = fake || is_fake(x);
    tt_tensor *y = new_contig(fake, tt_ndim(x), sizes, tt_dtype_of(x));
    if (!y || fake)
        return y;
    p3_plan p;
    plan_init(&p, NULL, x, y);
    p.in = tt__ptr(x), p.out = tt__ptr(y);
    double per = (double)(p.D / (p.OD ? p.OD : 1) + 1) * (double)(p.H / (p.OH ? p.OH : 1) + 1) *
                 (double)(p.W / (p.OW ? p.OW : 1) + 1);
    tt_parallel_for(plan_volumes(x), plan_grain(&p, per),
                    tt_dtype_of(x) == TT_F64 ? ad3_fwd_double : ad3_fwd_float, &p);
    return y;
}

static tt_status adaptive_avg_pool3d_kernel(tt_frame *f)
{
    tt_tensor *x;
    const int64_t *os;
    int n;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &x)) || (st = tt_arg_ints(f, 1, &os, &n)))
        return st;
    if (n != 3)
        return tt_frame_fail(f, TT_EINVAL, "argument 'output_size' (#2): expected 3 sizes, "
                                           "got %d", n);
    tt_tensor *y = adaptive_avg_pool3d(x, os, tt_frame_is_fake(f));
    return y ? tt_return(f, 0, y) : tt_errcode();
}

/* tt::_adaptive_avg_pool3d_backward(grad_output, self): the output size
 * is grad_output's (PyTorch reads it without a check; here its leading
 * dims must be self's). */
static tt_status adaptive_avg_pool3d_backward_kernel(tt_frame *f)
{
    tt_tensor *g, *x;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &g)) || (st = tt_arg_tensor(f, 1, &x)))
        return st;
    const char *op = tt__op_label(TT_OP__ADAPTIVE_AVG_POOL3D_BACKWARD);
    if ((st = adaptive3_check(op, x, 2)) || (st = want_same_dtype(op, "grad_output", 1, g, x)))
        return st;
    int nd = tt_ndim(x);
    tt_size want[5];
    for (int d = 0; d < nd; d++)
        want[d] = d >= nd - 3 && tt_ndim(g) == nd ? tt_sizes(g)[d] : tt_sizes(x)[d];
    if ((st = want_sizes(op, "grad_output", 1, g, nd, want)))
        return st;
    bool fake = tt_frame_is_fake(f) || is_fake(g) || is_fake(x);
    tt_tensor *gi = grad_like(x, fake);
    if (!gi || fake)
        return gi ? tt_return(f, 0, gi) : tt_errcode();
    p3_plan p;
    plan_init(&p, NULL, x, g);
    p.in = tt__ptr(gi), p.out = tt__ptr(g);
    plan_strides(gi, p.is);
    tt_parallel_for(plan_volumes(x), plan_grain(&p, 1),
                    tt_dtype_of(x) == TT_F64 ? ad3_bwd_double : ad3_bwd_float, &p);
    return tt_return(f, 0, gi);
}

#undef TT__FAMILY_POOL3D
#define TT__FAMILY_POOL3D TT__ROW
static const tt__builtin_row rows[] = {TT__FAMILY_ROWS};

tt_status tt__register_pool3d(tt_library *lib)
{
    return TT__DEFINE_ROWS(lib, rows);
}

/* ---------------------------------------------------------- typed wrappers */

/* tt_pool3d_opts as the ops' arguments (see tt__pool_opts_args). */
static tt_status opts3(const char *fn, const tt_pool3d_opts *o, bool avg, pool_args *a,
                       bool *stride_unset)
{
    return o ? tt__pool_opts_args(fn, 3, o->kernel, o->stride, o->padding, o->dilation,
                                  o->ceil_mode, o->exclude_pad, o->divisor_override, avg, a,
                                  stride_unset)
             : tt__pool_opts_args(fn, 3, NULL, NULL, NULL, NULL, false, false, 0, avg, a,
                                  stride_unset);
}

tt_tensor *tt_max_pool3d_with_indices(const tt_tensor *x, const tt_pool3d_opts *o,
                                      tt_tensor **indices)
{
    pool_args a;
    bool unset = false;
    if (indices)
        *indices = NULL;
    if (!indices) {
        tt_error(TT_EINVAL, "tt_max_pool3d_with_indices: argument 'indices' is NULL");
        return NULL;
    }
    if (opts3("tt_max_pool3d_with_indices", o, false, &a, &unset))
        return NULL;
    return tt__pool_call_max(TT_OP_MAX_POOL3D_WITH_INDICES, x, 3, &a, unset, indices);
}

tt_tensor *tt_max_pool3d(const tt_tensor *x, const tt_pool3d_opts *o)
{
    tt_tensor *ind = NULL, *y = tt_max_pool3d_with_indices(x, o, &ind);
    tt_release(ind);
    return y;
}

tt_tensor *tt_avg_pool3d(const tt_tensor *x, const tt_pool3d_opts *o)
{
    pool_args a;
    bool unset = false;
    if (opts3("tt_avg_pool3d", o, true, &a, &unset))
        return NULL;
    return tt__pool_call_avg(TT_OP_AVG_POOL3D, x, 3, &a, unset);
}

tt_tensor *tt_adaptive_avg_pool3d(const tt_tensor *x, int64_t out_d, int64_t out_h,
                                  int64_t out_w)
{
    const int64_t os[3] = {out_d, out_h, out_w};
    return tt__call_op(TT_OP__ADAPTIVE_AVG_POOL3D, TT_ARGS(tt_v_tensor(x), tt_v_ints(3, os)));
}
