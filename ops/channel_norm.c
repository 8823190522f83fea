/* Built-in ops: batch normalization (PyTorch 2's _native_batch_norm_legit,
 * .no_stats and _no_training) and its derivative native_batch_norm_backward;
 * group normalization (native_group_norm, native_group_norm_backward) at
 * the end.
 *
 * The input is [N, C, *]: per channel c, the N * S values (S the product of
 * the spatial sizes) are normalized with their mean and biased variance in
 * training, with running_mean / running_var otherwise. The numbers follow
 * PyTorch's CPU kernel (aten/src/ATen/native/Normalization.cpp and
 * cpu/batch_norm_kernel.cpp): sums in double, the mean rounded to the
 * input's dtype before the squared deviations are taken, invstd =
 * 1 / sqrt(var + eps) in double, y = x * alpha + beta with alpha = invstd *
 * weight and beta = bias - mean * alpha in the input's dtype.
 *
 * Layouts: a channels-last input (4 or 5 dims, C moving fastest) is read
 * and written in that order and gives a channels-last output, as PyTorch's
 * suggest_memory_format; any other input is read through a contiguous copy
 * and gives a contiguous output. Contiguous inputs run one channel per
 * task; channels-last ones run CHUNKS fixed row ranges whose per-channel
 * partial sums are added in chunk order, so results do not depend on the
 * thread count.
 *
 * oneDNN's batch normalization (2.6, bnorm_jit:avx512_core) against these
 * kernels, f32 training forward / backward, median of 7 (a throwaway
 * program; 2 cores shared with other builds, load ~9, so ranges over runs):
 *   [32, 64, 56, 56] NCHW  tt 6-11 / 5-11 ms    oneDNN 12-880 / 12-1000 ms
 *                                                (50 / 60 ms on one thread)
 *   [32, 64, 56, 56] NHWC  tt 7-16 / 10-31 ms   oneDNN 12-60 / 16-52 ms
 *   [32, 512, 7, 7]  NCHW  tt 0.7 / 0.7 ms      oneDNN 1.4-160 / 6-130 ms
 *   [32, 512, 7, 7]  NHWC  tt 0.7-0.9 / 1.0 ms  oneDNN 0.17-0.29 / 0.21-0.43 ms
 * oneDNN wins clearly only on the small channels-last shape (by ~0.6 ms a
 * step) and loses in the contiguous layout, which tt's ops produce by
 * default, its OpenMP threads stalling when the machine is busy; so it is
 * not used here. */
#include "transformer_impl.h"
#include "tt_nn.h"

enum { BN_STATS, BN_NO_STATS, BN_NO_TRAINING };

/* The geometry and the per-channel terms of one call. */
typedef struct {
    const char *x, *g; /* input; grad_out (backward) */
    char *y;           /* output, or grad_input */
    int64_t N, C, S;
    bool cl;              /* channels last: element (n, c, s) at (n S + s) C + c */
    int kind;             /* the pass (bn_pass) */
    const double *mean;   /* [C]: what the deviations are taken from */
    double *s1, *s2;      /* [C] sums (contiguous), or CHUNKS x C partials */
    const double *pa, *pb, *pc; /* [C] coefficients of the elementwise pass */
} bn_plan;

typedef enum {
    /* s1 = sum (x - k), s2 = sum (x - k)^2 in double, k ("mean") a value
     * of the channel: training's statistics in one pass over x instead of
     * two (mean, then deviations). Shifted by a sample and summed in
     * double, var = s2 - s1^2 / n loses nothing a float input holds
     * (PyTorch takes two passes, its squares in float). */
    SUM_SHIFTED,
    SUM_GRAD, /* s1 = sum g, s2 = sum (x - mean) g */
} bn_pass;

/* The sums of one run of n values of channel-wise constant mean m
 * (contiguous layout), in LN_LANES double lanes so the loop vectorizes. */
#define BN_RUN(T)                                                              \
    static inline void bn_run_##T(int kind, const T *restrict x, const T *restrict g, T m, \
                                  int64_t n, double *restrict a, double *restrict b) \
    {                                                                          \
        int64_t j = 0, body = n - n % LN_LANES;                                \
        if (kind == SUM_SHIFTED) {                                             \
            for (; j < body; j += LN_LANES)                                    \
                for (int l = 0; l < LN_LANES; l++) {                           \
                    double d = (double)x[j + l] - (double)m;                   \
                    a[l] += d;                                                 \
                    b[l] += d * d;                                             \
                }                                                              \
            for (; j < n; j++) {                                               \
                double d = (double)x[j] - (double)m;                           \
                a[j - body] += d;                                              \
                b[j - body] += d * d;                                          \
            }                                                                  \
        } else {                                                               \
            for (; j < body; j += LN_LANES)                                    \
                for (int l = 0; l < LN_LANES; l++) {                           \
                    a[l] += (double)g[j + l];                                  \
                    b[l] += (double)(x[j + l] - m) * (double)g[j + l];         \
                }                                                              \
            for (; j < n; j++) {                                               \
                a[j - body] += (double)g[j];                                   \
                b[j - body] += (double)(x[j] - m) * (double)g[j];              \
            }                                                                  \
        }                                                                      \
    }

/* Contiguous layout: task c sums channel c over its N runs of S values. */
#define BN_SUMS_NCHW(T)                                                        \
    CPU_CLONES static void bn_sums_nchw_##T(int64_t c0, int64_t c1, void *vp)  \
    {                                                                          \
        const bn_plan *p = vp;                                                 \
        for (int64_t c = c0; c < c1; c++) {                                    \
            double a[LN_LANES] = {0}, b[LN_LANES] = {0};                       \
            T m = p->mean ? (T)p->mean[c] : (T)0;                              \
            for (int64_t n = 0; n < p->N; n++) {                               \
                int64_t off = (n * p->C + c) * p->S;                           \
                bn_run_##T(p->kind, (const T *)p->x + off,                     \
                           p->g ? (const T *)p->g + off : NULL, m, p->S, a, b); \
            }                                                                  \
            p->s1[c] = lanes_total(a);                                         \
            p->s2[c] = lanes_total(b);                                         \
        }                                                                      \
    }

/* Channels last: task k sums rows [k per, (k + 1) per) of C values into
 * partials k of s1, s2 (CHUNKS x C each). */
#define BN_SUMS_NHWC(T)                                                        \
    CPU_CLONES static void bn_sums_nhwc_##T(int64_t k0, int64_t k1, void *vp)  \
    {                                                                          \
        const bn_plan *p = vp;                                                 \
        int64_t C = p->C, rows = p->N * p->S, per = (rows + CHUNKS - 1) / CHUNKS; \
        for (int64_t k = k0; k < k1; k++) {                                    \
            double *restrict a = p->s1 + k * C, *restrict b = p->s2 + k * C;   \
            for (int64_t c = 0; c < C; c++)                                    \
                a[c] = b[c] = 0;                                               \
            int64_t r1 = (k + 1) * per < rows ? (k + 1) * per : rows;          \
            for (int64_t r = k * per; r < r1; r++) {                           \
                const T *restrict x = (const T *)p->x + r * C;                 \
                const T *restrict g = p->g ? (const T *)p->g + r * C : NULL;   \
                if (p->kind == SUM_SHIFTED) {                                  \
                    for (int64_t c = 0; c < C; c++) {                          \
                        double d = (double)x[c] - (double)(T)p->mean[c];       \
                        a[c] += d;                                             \
                        b[c] += d * d;                                         \
                    }                                                          \
                } else {                                                       \
                    for (int64_t c = 0; c < C; c++) {                          \
                        a[c] += (double)g[c];                                  \
                        b[c] += (double)(x[c] - (T)p->mean[c]) * (double)g[c]; \
                    }                                                          \
                }                                                              \
            }                                                                  \
        }                                                                      \
    }

/* The elementwise pass, per channel coefficients pa, pb, pc:
 *   forward (g NULL):  y = x * pa + pb                  (alpha, beta)
 *   backward, train:   dx = (g - pb - (x - mean) pc) pa  (invstd w, grad_mean, k)
 *   backward, eval:    dx = g * pa                       (pb, pc NULL)
 * Contiguous: task i is plane (n, c) = (i / C, i % C); channels last: task
 * i is row i. */
#define BN_APPLY(T)                                                            \
    static inline void bn_apply_run_##T(const bn_plan *p, const T *restrict x,  \
                                        const T *restrict g, T *restrict y, int64_t n, \
                                        int64_t c, int64_t step)               \
    {                                                                          \
        for (int64_t j = 0; j < n; j++, c += step) {                           \
            T a = (T)p->pa[c];                                                 \
            if (!g)                                                            \
                y[j] = x[j] * a + (T)p->pb[c];                                 \
            else if (p->pb)                                                    \
                y[j] = (g[j] - (T)p->pb[c] - (x[j] - (T)p->mean[c]) * (T)p->pc[c]) * a; \
            else                                                               \
                y[j] = g[j] * a;                                               \
        }                                                                      \
    }                                                                          \
    CPU_CLONES static void bn_apply_##T(int64_t i0, int64_t i1, void *vp)      \
    {                                                                          \
        const bn_plan *p = vp;                                                 \
        for (int64_t i = i0; i < i1; i++) {                                    \
            int64_t len = p->cl ? p->C : p->S, off = i * len;                  \
            const T *g = p->g ? (const T *)p->g + off : NULL;                  \
            bn_apply_run_##T(p, (const T *)p->x + off, g, (T *)p->y + off, len, \
                             p->cl ? 0 : i % p->C, p->cl ? 1 : 0);             \
        }                                                                      \
    }

/* Contiguous layout with small planes (S < SMALL_S: a ResNet's last
 * stages, 2x2 and 1x1): a run of S values per (n, c) makes the per-run
 * set-up of the kernels above the whole cost, 20 times the memory time.
 * Here the loops run across channels innermost (unit steps when S is 1,
 * where [N, C, 1, 1] is channels last too): task [c0, c1) adds each
 * sample's values into per-channel sums, samples and positions in order
 * (the same result on any thread count); the elementwise pass takes a
 * sample's C x S values at a time. Channel by channel, with S values
 * each, the two kernels took ~1.7 ms a ResNet-18 step (2 threads) on
 * 64-128 KB tensors. */
#define SMALL_S 16
#define BN_SUMS_SMALL(T)                                                       \
    CPU_CLONES static void bn_sums_small_##T(int64_t c0, int64_t c1, void *vp) \
    {                                                                          \
        const bn_plan *p = vp;                                                 \
        const int64_t S = p->S, C = p->C, nc = c1 - c0;                        \
        double *restrict s1 = p->s1 + c0, *restrict s2 = p->s2 + c0;           \
        for (int64_t c = 0; c < nc; c++)                                       \
            s1[c] = s2[c] = 0;                                                 \
        for (int64_t n = 0; n < p->N; n++)                                     \
            for (int64_t j = 0; j < S; j++) {                                  \
                const T *restrict x = (const T *)p->x + (n * C + c0) * S + j;  \
                if (p->kind == SUM_SHIFTED) {                                  \
                    for (int64_t c = 0; c < nc; c++) {                         \
                        T m = p->mean ? (T)p->mean[c0 + c] : (T)0;             \
                        double d = (double)x[c * S] - (double)m;               \
                        s1[c] += d;                                            \
                        s2[c] += d * d;                                        \
                    }                                                          \
                } else {                                                       \
                    const T *restrict g = (const T *)p->g + (n * C + c0) * S + j; \
                    for (int64_t c = 0; c < nc; c++) {                         \
                        T m = p->mean ? (T)p->mean[c0 + c] : (T)0;             \
                        s1[c] += (double)g[c * S];                             \
                        s2[c] += (double)(x[c * S] - m) * (double)g[c * S];    \
                    }                                                          \
                }                                                              \
            }                                                                  \
    }
#define BN_APPLY_SMALL(T)                                                      \
    CPU_CLONES static void bn_apply_small_##T(int64_t n0, int64_t n1, void *vp) \
    {                                                                          \
        const bn_plan *p = vp;                                                 \
        const int64_t S = p->S, C = p->C;                                      \
        for (int64_t n = n0; n < n1; n++)                                      \
            for (int64_t j = 0; j < S; j++) {                                  \
                int64_t off = n * C * S + j;                                   \
                const T *restrict x = (const T *)p->x + off;                   \
                T *restrict y = (T *)p->y + off;                               \
                const T *restrict g = p->g ? (const T *)p->g + off : NULL;     \
                if (!g)                                                        \
                    for (int64_t c = 0; c < C; c++)                            \
                        y[c * S] = x[c * S] * (T)p->pa[c] + (T)p->pb[c];       \
                else if (p->pb)                                                \
                    for (int64_t c = 0; c < C; c++)                            \
                        y[c * S] = (g[c * S] - (T)p->pb[c] -                   \
                                    (x[c * S] - (T)p->mean[c]) * (T)p->pc[c]) * (T)p->pa[c]; \
                else                                                           \
                    for (int64_t c = 0; c < C; c++)                            \
                        y[c * S] = g[c * S] * (T)p->pa[c];                     \
            }                                                                  \
    }

BN_RUN(float)
BN_RUN(double)
BN_SUMS_SMALL(float)
BN_SUMS_SMALL(double)
BN_APPLY_SMALL(float)
BN_APPLY_SMALL(double)
BN_SUMS_NCHW(float)
BN_SUMS_NCHW(double)
BN_SUMS_NHWC(float)
BN_SUMS_NHWC(double)
BN_APPLY(float)
BN_APPLY(double)

/* Runs pass `kind` of p into p->s1, p->s2 ([C] each; part holds CHUNKS x C
 * x 2 scratch doubles for channels last). */
static void bn_sums(bn_plan *p, int kind, bool f64, double *s1, double *s2, double *part)
{
    p->kind = kind;
    if (!p->cl) {
        p->s1 = s1, p->s2 = s2;
        int64_t grain = 65536 / (p->N * p->S + 1) + 1;
        if (p->S < SMALL_S)
            tt_parallel_for(p->C, grain, f64 ? bn_sums_small_double : bn_sums_small_float, p);
        else
            tt_parallel_for(p->C, grain, f64 ? bn_sums_nchw_double : bn_sums_nchw_float, p);
        return;
    }
    p->s1 = part, p->s2 = part + CHUNKS * p->C;
    int64_t rows = p->N * p->S;
    tt_parallel_for(CHUNKS, rows * p->C > 65536 ? 1 : CHUNKS,
                    f64 ? bn_sums_nhwc_double : bn_sums_nhwc_float, p);
    for (int64_t c = 0; c < p->C; c++) {
        double a = 0, b = 0;
        for (int k = 0; k < CHUNKS; k++)
            a += p->s1[k * p->C + c], b += p->s2[k * p->C + c];
        s1[c] = a, s2[c] = b;
    }
}

static void bn_apply(bn_plan *p, bool f64)
{
    if (!p->cl && p->S < SMALL_S) {
        tt_parallel_for(p->N, 32768 / (p->C * p->S + 1) + 1,
                        f64 ? bn_apply_small_double : bn_apply_small_float, p);
        return;
    }
    int64_t tasks = p->cl ? p->N * p->S : p->N * p->C, len = p->cl ? p->C : p->S;
    tt_parallel_for(tasks, 32768 / (len + 1) + 1, f64 ? bn_apply_double : bn_apply_float, p);
}

/* ------------------------------------------------------------ checking */

/* True when x (4 or 5 dims) is laid out channels last and not also
 * contiguous: C fastest, then the spatial dims from the last, then N
 * (strides of size-1 dims do not count), as PyTorch's suggest_memory_format. */
static bool bn_channels_last(const tt_tensor *x)
{
    int nd = tt_ndim(x);
    if ((nd != 4 && nd != 5) || tt_is_contiguous(x))
        return false;
    const tt_size *sz = tt_sizes(x), *st = tt_strides(x);
    tt_size step = 1;
    int order[5];
    order[0] = 1;
    for (int d = nd - 1, k = 1; d >= 2; d--)
        order[k++] = d;
    order[nd - 1] = 0;
    for (int k = 0; k < nd; k++) {
        int d = order[k];
        if (tt__sz_is_one(sz[d]))
            continue;
        if (!tt__sz_eq(st[d], step))
            return false;
        step = tt_sym_mul(step, sz[d]);
    }
    return true;
}

/* The strides of a new [N, C, *] tensor in x's batch-norm layout. */
static void bn_out_strides(const tt_tensor *x, bool cl, tt_size *st)
{
    int nd = tt_ndim(x);
    const tt_size *sz = tt_sizes(x);
    if (!cl) {
        tt__contiguous_strides(nd, sz, st);
        return;
    }
    tt_size step = 1;
    st[1] = step;
    step = tt_sym_mul(step, sz[1]);
    for (int d = nd - 1; d >= 2; d--) {
        st[d] = step;
        step = tt_sym_mul(step, sz[d]);
    }
    st[0] = step;
}

static tt_status bn_want_channel_vec(const char *op, const char *arg, int argno,
                                     const tt_tensor *t, const tt_tensor *x)
{
    if (!t)
        return TT_OK;
    if (tt_dtype_of(t) != tt_dtype_of(x))
        return tt_error(TT_EDTYPE, "%s: argument '%s' (#%d): expected %s like 'input', got %s",
                        op, arg, argno, tt_dtype_name(tt_dtype_of(x)),
                        tt_dtype_name(tt_dtype_of(t)));
    return want_sizes(op, arg, argno, t, 1, &tt_sizes(x)[1]);
}

/* input is [N, C, *] of f32 or f64. */
static tt_status bn_want_input(const char *op, const char *arg, int argno, const tt_tensor *x)
{
    tt_status st = want_float(op, arg, argno, x);
    if (st)
        return st;
    if (tt_ndim(x) < 2)
        return tt_error(TT_ESHAPE, "%s: argument '%s' (#%d): expected 2 or more dims "
                                   "(N, C, ...), got %d",
                        op, arg, argno, tt_ndim(x));
    return TT_OK;
}

/* (N * S, C, S) of x's concrete sizes. */
static void bn_geometry(const tt_tensor *x, int64_t *N, int64_t *C, int64_t *S)
{
    *N = tt_sizes(x)[0], *C = tt_sizes(x)[1], *S = 1;
    for (int d = 2; d < tt_ndim(x); d++)
        *S *= tt_sizes(x)[d];
}

/* x read in the layout bn_out_strides gives: x itself (retained) when it
 * already is, else a copy. */
static tt_tensor *bn_input(const tt_tensor *x, bool cl)
{
    if (!cl)
        return contig(x);
    return tt_retain((tt_tensor *)x); /* bn_channels_last: already dense */
}

/* ------------------------------------------------------------ forward */

typedef struct {
    tt_tensor *x, *w, *b, *rm, *rv;
    bool training;
    double momentum, eps;
} bn_args;

/* The three outputs of a forward call (new references in out[]), running
 * stats updated in training when given. `fake` computes metadata only. */
static tt_status bn_forward(const char *op, const bn_args *a, bool fake, tt_tensor **out)
{
    tt_status st;
    const tt_tensor *x = a->x;
    out[0] = out[1] = out[2] = NULL;
    if ((st = bn_want_input(op, "input", 1, x)) ||
        (st = bn_want_channel_vec(op, "weight", 2, a->w, x)) ||
        (st = bn_want_channel_vec(op, "bias", 3, a->b, x)) ||
        (st = bn_want_channel_vec(op, "running_mean", 4, a->rm, x)) ||
        (st = bn_want_channel_vec(op, "running_var", 5, a->rv, x)))
        return st;
    if (!a->training && (!a->rm || !a->rv))
        return tt_error(TT_EINVAL, "%s: evaluation (training=False) needs running_mean and "
                                   "running_var, got None",
                        op);
    tt_size per_channel = tt_sizes(x)[0];
    for (int d = 2; d < tt_ndim(x); d++)
        per_channel = tt_sym_mul(per_channel, tt_sizes(x)[d]);
    if (a->training && tt__sz_eq(per_channel, 0)) {
        char s[128];
        return tt_error(TT_ESHAPE, "%s: argument 'input' (#1): training needs at least one "
                                   "value per channel, got input of shape %s",
                        op, tt_shape_str(x, s, sizeof s));
    }
    fake = fake || is_fake(x) || is_fake(a->w) || is_fake(a->b) || is_fake(a->rm) ||
           is_fake(a->rv);
    bool cl = bn_channels_last(x);
    tt_size strides[TT_MAX_DIMS], zero = 0;
    tt_dtype dt = tt_dtype_of(x);
    bn_out_strides(x, cl, strides);
    out[0] = tt__ops_new(fake, tt_ndim(x), tt_sizes(x), strides, dt);
    /* PyTorch's CPU kernel returns empty save_mean / save_invstd in eval. */
    const tt_size *csz = a->training ? &tt_sizes(x)[1] : &zero;
    out[1] = tt__ops_new(fake, 1, csz, NULL, dt);
    out[2] = tt__ops_new(fake, 1, csz, NULL, dt);
    if (!out[0] || !out[1] || !out[2])
        goto fail;
    if (fake)
        return TT_OK;

    int64_t N, C, S;
    bn_geometry(x, &N, &C, &S);
    bool f64 = dt == TT_F64;
    tt_tensor *xc = bn_input(x, cl);
    double *buf = tt__malloc(sizeof(double) * (size_t)(6 * C + (cl ? 2 * CHUNKS * C : 0) + 1));
    if (!xc || !buf) {
        if (xc && !buf) /* else the failed copy set the error */
            tt_error(TT_ENOMEM, "%s: out of memory for the per-channel sums", op);
        tt_release(xc);
        tt__free(buf);
        goto fail;
    }
    double *mean = buf, *invstd = buf + C, *s1 = buf + 2 * C, *s2 = buf + 3 * C;
    double *alpha = buf + 4 * C, *beta = buf + 5 * C, *part = buf + 6 * C;
    bn_plan p = {.x = tt__ptr(xc), .y = tt__ptr(out[0]), .N = N, .C = C, .S = S, .cl = cl};
    int64_t cnt = N * S;
    if (a->training) {
        /* the shift: each channel's first value */
        for (int64_t c = 0; c < C; c++)
            alpha[c] = tt__load(p.x + (cl ? c : c * S) * (int64_t)tt_dtype_size(dt), dt);
        p.mean = alpha;
        bn_sums(&p, SUM_SHIFTED, f64, s1, s2, part);
        for (int64_t c = 0; c < C; c++) {
            double m = alpha[c] + s1[c] / (double)cnt; /* the mean in the input's dtype */
            mean[c] = f64 ? m : (double)(float)m;
            s2[c] -= s1[c] * (s1[c] / (double)cnt); /* the deviations' squares */
            if (s2[c] < 0)
                s2[c] = 0;
        }
        p.mean = mean;
        for (int64_t c = 0; c < C; c++) {
            /* PyTorch keeps the f32 sum of squares as a float and divides
             * in float; the 1 / sqrt is in double. */
            if (!f64)
                s2[c] = (double)(float)s2[c];
            double var = f64 ? s2[c] / (double)cnt : (double)((float)s2[c] / (float)cnt);
            invstd[c] = 1.0 / sqrt(var + a->eps);
            tt__store(tt__ptr(out[1]) + c * (int64_t)tt_dtype_size(dt), dt, mean[c]);
            tt__store(tt__ptr(out[2]) + c * (int64_t)tt_dtype_size(dt), dt, invstd[c]);
        }
        if (a->rm) {
            /* PyTorch's update: the unbiased variance (NaN for a single
             * value per channel, as PyTorch's 0 / 0). */
            double mom = a->momentum;
            for (int64_t c = 0; c < C; c++) {
                char *pm = tt__ptr(a->rm) + c * tt_strides(a->rm)[0] * (int64_t)tt_dtype_size(dt);
                char *pv = tt__ptr(a->rv) + c * tt_strides(a->rv)[0] * (int64_t)tt_dtype_size(dt);
                double uv = s2[c] / (double)(cnt - 1);
                tt__store(pm, dt, mom * mean[c] + (1 - mom) * tt__load(pm, dt));
                tt__store(pv, dt, mom * uv + (1 - mom) * tt__load(pv, dt));
            }
        }
    } else {
        for (int64_t c = 0; c < C; c++) {
            const char *pm = tt__ptr(a->rm) + c * tt_strides(a->rm)[0] * (int64_t)tt_dtype_size(dt);
            const char *pv = tt__ptr(a->rv) + c * tt_strides(a->rv)[0] * (int64_t)tt_dtype_size(dt);
            mean[c] = tt__load(pm, dt);
            double v = tt__load(pv, dt);
            /* PyTorch takes this 1 / sqrt in the parameter's dtype. */
            invstd[c] = f64 ? 1.0 / sqrt(v + a->eps) : (double)(1.0f / sqrtf((float)v + (float)a->eps));
        }
    }
    for (int64_t c = 0; c < C; c++) {
        size_t es = tt_dtype_size(dt);
        double w = a->w ? tt__load(tt__ptr(a->w) + c * tt_strides(a->w)[0] * (int64_t)es, dt) : 1;
        double b = a->b ? tt__load(tt__ptr(a->b) + c * tt_strides(a->b)[0] * (int64_t)es, dt) : 0;
        if (f64) {
            alpha[c] = invstd[c] * w;
            beta[c] = b - mean[c] * alpha[c];
        } else { /* in float, as PyTorch's param_t */
            float al = (float)invstd[c] * (float)w;
            alpha[c] = al;
            beta[c] = (float)b - (float)mean[c] * al;
        }
    }
    p.pa = alpha, p.pb = beta;
    bn_apply(&p, f64);
    tt_release(xc);
    tt__free(buf);
    return TT_OK;
fail:
    return drop3(out);
}

/* Reads the arguments of any of the three forward rows (data = the row). */
static tt_status bn_read_args(tt_frame *f, int kind, bn_args *a)
{
    tt_status st;
    memset(a, 0, sizeof *a);
    if ((st = tt_arg_tensor(f, 0, &a->x)) || (st = tt_arg_tensor(f, 1, &a->w)) ||
        (st = tt_arg_tensor(f, 2, &a->b)))
        return st;
    int k = 3;
    if (kind != BN_NO_STATS) {
        if ((st = tt_arg_tensor(f, 3, &a->rm)) || (st = tt_arg_tensor(f, 4, &a->rv)))
            return st;
        k = 5;
    }
    if (kind != BN_NO_TRAINING) {
        if ((st = tt_arg_bool(f, k++, &a->training)))
            return st;
    }
    if ((st = tt_arg_float(f, k, &a->momentum)) || (st = tt_arg_float(f, k + 1, &a->eps)))
        return st;
    return TT_OK;
}

static tt_builtin_id bn_ids[3] = {TT_OP__NATIVE_BATCH_NORM_LEGIT,
                                  TT_OP__NATIVE_BATCH_NORM_LEGIT_NO_STATS,
                                  TT_OP__NATIVE_BATCH_NORM_LEGIT_NO_TRAINING};

/* tt::_native_batch_norm_legit (and .no_stats, _no_training) -> (output,
 * save_mean, save_invstd): save_mean and save_invstd are [C] in training,
 * [0] otherwise, as PyTorch's CPU kernel. In training, running_mean and
 * running_var (when given) become momentum * batch + (1 - momentum) *
 * running, with the unbiased batch variance. */
static tt_status bn_kernel(tt_frame *f)
{
    int kind = (int)(intptr_t)tt_frame_userdata(f);
    bn_args a;
    tt_status st = bn_read_args(f, kind, &a);
    if (st)
        return st;
    tt_tensor *out[3];
    if ((st = bn_forward(tt__op_label(bn_ids[kind]), &a, tt_frame_is_fake(f), out)))
        return st;
    return return3(f, TT_OK, out);
}

/* ------------------------------------------------------------ backward */

typedef struct {
    tt_tensor *g, *x, *w, *rm, *rv, *sm, *si;
    bool train;
    double eps;
} bnb_args;

/* (grad_input, grad_weight, grad_bias) into out[] (new references). */
static tt_status bn_backward_impl(const bnb_args *a, bool fake, tt_tensor **out)
{
    const char *op = tt__op_label(TT_OP_NATIVE_BATCH_NORM_BACKWARD);
    const tt_tensor *x = a->x;
    tt_status st;
    out[0] = out[1] = out[2] = NULL;
    if ((st = bn_want_input(op, "input", 2, x)) ||
        (st = want_sizes(op, "grad_out", 1, a->g, tt_ndim(x), tt_sizes(x))) ||
        (st = bn_want_channel_vec(op, "weight", 3, a->w, x)) ||
        (st = bn_want_channel_vec(op, "running_mean", 4, a->rm, x)) ||
        (st = bn_want_channel_vec(op, "running_var", 5, a->rv, x)) ||
        (st = bn_want_channel_vec(op, "save_mean", 6, a->sm, x)) ||
        (st = bn_want_channel_vec(op, "save_invstd", 7, a->si, x)))
        return st;
    if (tt_dtype_of(a->g) != tt_dtype_of(x))
        return tt_error(TT_EDTYPE, "%s: argument 'grad_out' (#1): expected %s like 'input', "
                                   "got %s",
                        op, tt_dtype_name(tt_dtype_of(x)), tt_dtype_name(tt_dtype_of(a->g)));
    if (a->train && (!a->sm || !a->si))
        return tt_error(TT_EINVAL, "%s: train=True needs save_mean and save_invstd, got None",
                        op);
    if (!a->train && (!a->rm || !a->rv))
        return tt_error(TT_EINVAL, "%s: train=False needs running_mean and running_var, got "
                                   "None",
                        op);
    fake = fake || is_fake(a->g) || is_fake(x) || is_fake(a->w) || is_fake(a->rm) ||
           is_fake(a->rv) || is_fake(a->sm) || is_fake(a->si);
    bool cl = bn_channels_last(x);
    tt_size strides[TT_MAX_DIMS];
    tt_dtype dt = tt_dtype_of(x);
    bn_out_strides(x, cl, strides);
    out[0] = tt__ops_new(fake, tt_ndim(x), tt_sizes(x), strides, dt);
    out[1] = tt__ops_new(fake, 1, &tt_sizes(x)[1], NULL, dt);
    out[2] = tt__ops_new(fake, 1, &tt_sizes(x)[1], NULL, dt);
    if (!out[0] || !out[1] || !out[2])
        goto fail;
    if (fake)
        return TT_OK;

    int64_t N, C, S;
    bn_geometry(x, &N, &C, &S);
    bool f64 = dt == TT_F64;
    size_t es = tt_dtype_size(dt);
    tt_tensor *xc = bn_input(x, cl);
    /* grad_out in the input's layout, so one offset serves both. */
    tt_tensor *gc = NULL;
    if (xc) {
        tt_size gs[TT_MAX_DIMS];
        bn_out_strides(x, cl, gs);
        bool same = true;
        for (int d = 0; d < tt_ndim(x); d++)
            same = same && (tt_sizes(x)[d] == 1 || tt_strides(a->g)[d] == gs[d]);
        if (same && (cl || tt_is_contiguous(a->g)))
            gc = tt_retain(a->g);
        else if ((gc = tt__ops_new(false, tt_ndim(x), tt_sizes(x), gs, dt)) &&
                 tt__copy_raw(gc, a->g))
            gc = tt_release(gc);
    }
    double *buf = tt__malloc(sizeof(double) * (size_t)(6 * C + (cl ? 2 * CHUNKS * C : 0) + 1));
    if (!xc || !gc || !buf) {
        if (xc && gc && !buf) /* else the failed copy set the error */
            tt_error(TT_ENOMEM, "%s: out of memory for the per-channel sums", op);
        tt_release(xc);
        tt_release(gc);
        tt__free(buf);
        goto fail;
    }
    double *mean = buf, *invstd = buf + C, *s1 = buf + 2 * C, *s2 = buf + 3 * C;
    double *sc = buf + 4 * C, *gm = buf + 5 * C, *part = buf + 6 * C;
    for (int64_t c = 0; c < C; c++) {
        if (a->train) {
            mean[c] = tt__load(tt__ptr(a->sm) + c * tt_strides(a->sm)[0] * (int64_t)es, dt);
            invstd[c] = tt__load(tt__ptr(a->si) + c * tt_strides(a->si)[0] * (int64_t)es, dt);
        } else {
            mean[c] = tt__load(tt__ptr(a->rm) + c * tt_strides(a->rm)[0] * (int64_t)es, dt);
            double v = tt__load(tt__ptr(a->rv) + c * tt_strides(a->rv)[0] * (int64_t)es, dt);
            invstd[c] = f64 ? 1.0 / sqrt(v + a->eps) : (double)(1.0f / sqrtf((float)v + (float)a->eps));
        }
    }
    bn_plan p = {.x = tt__ptr(xc), .g = tt__ptr(gc), .y = tt__ptr(out[0]), .N = N, .C = C,
                 .S = S, .cl = cl, .mean = mean};
    bn_sums(&p, SUM_GRAD, f64, s1, s2, part);
    int64_t cnt = N * S;
    for (int64_t c = 0; c < C; c++) {
        /* grad_weight = sum (x - mean) g * invstd, grad_bias = sum g */
        tt__store(tt__ptr(out[1]) + c * (int64_t)es, dt, s2[c] * invstd[c]);
        tt__store(tt__ptr(out[2]) + c * (int64_t)es, dt, s1[c]);
    }
    /* dx = (g - mean(g) - (x - mean) k) invstd w, k = sum((x - mean) g)
     * invstd^2 / n, in training; dx = g invstd w in eval. */
    double *kk = s2; /* k in place of the sum it is made of */
    for (int64_t c = 0; c < C; c++) {
        double w = a->w ? tt__load(tt__ptr(a->w) + c * tt_strides(a->w)[0] * (int64_t)es, dt) : 1;
        if (f64) {
            kk[c] = s2[c] * invstd[c] * invstd[c] / (double)cnt;
            gm[c] = s1[c] / (double)cnt;
            sc[c] = invstd[c] * w;
        } else { /* PyTorch's scalar_t arithmetic */
            kk[c] = (float)((float)s2[c] * (float)invstd[c] * (float)invstd[c] / (float)cnt);
            gm[c] = (float)((float)s1[c] / (float)cnt);
            sc[c] = (float)invstd[c] * (float)w;
        }
    }
    p.pa = sc, p.pb = a->train ? gm : NULL, p.pc = kk;
    bn_apply(&p, f64);
    tt_release(xc);
    tt_release(gc);
    tt__free(buf);
    return TT_OK;
fail:
    return drop3(out);
}

/* tt::native_batch_norm_backward -> (grad_input, grad_weight, grad_bias):
 * one pass for the two per-channel sums, one for grad_input. All three are
 * computed whatever output_mask says (the schema's results are not
 * optional); grad_weight and grad_bias are [C] also without weight. */
static tt_status bn_backward_kernel(tt_frame *f)
{
    bnb_args a;
    tt_status st;
    tt_tensor **ts[7] = {&a.g, &a.x, &a.w, &a.rm, &a.rv, &a.sm, &a.si};
    for (int i = 0; i < 7; i++)
        if ((st = tt_arg_tensor(f, i, ts[i])))
            return st;
    if ((st = tt_arg_bool(f, 7, &a.train)) || (st = tt_arg_float(f, 8, &a.eps)))
        return st;
    if ((st = want_output_mask3(f, 9)))
        return st;
    tt_tensor *out[3];
    if ((st = bn_backward_impl(&a, tt_frame_is_fake(f), out)))
        return st;
    return return3(f, TT_OK, out);
}

/* Saves input, weight, running_mean, running_var (training with running
 * stats: as they were, since backward reads save_mean / save_invstd) and
 * the outputs save_mean, save_invstd; None slots hold the input. */
static tt_status setup_bn(tt_autograd_ctx *ctx, const tt_value *in, int nin, const tt_value *out,
                          int nout)
{
    (void)nin, (void)nout;
    int kind = (int)(intptr_t)tt_ctx_userdata(ctx);
    tt_tensor *x = in[0].u.t;
    tt_tensor *w = in[1].kind == TT_V_TENSOR ? in[1].u.t : NULL;
    bool training = kind == BN_STATS ? in[5].u.b : kind == BN_NO_STATS ? in[3].u.b : false;
    double eps = kind == BN_STATS ? in[7].u.f : kind == BN_NO_STATS ? in[5].u.f : in[6].u.f;
    tt_tensor *rm = NULL, *rv = NULL;
    if (!training) {
        rm = in[3].u.t, rv = in[4].u.t;
    }
    tt_tensor *sv[6] = {x, w ? w : x, rm ? rm : x, rv ? rv : x, training ? out[1].u.t : x,
                        training ? out[2].u.t : x};
    tt_status st = tt_ctx_save_for_backward(ctx, 6, sv);
    if (!st)
        st = tt_ctx_save_int(ctx, "flags", (w ? 1 : 0) | (training ? 2 : 0));
    return st ? st : tt_ctx_save_float(ctx, "eps", eps);
}

static tt_status bn_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng, tt_tensor **gi,
                             int ni)
{
    (void)ng, (void)ni;
    int64_t flags;
    double eps;
    tt_status st;
    if ((st = tt_ctx_get_int(ctx, "flags", &flags)) || (st = tt_ctx_get_float(ctx, "eps", &eps)))
        return st;
    bool has_w = flags & 1, training = flags & 2;
    tt_value t[6];
    for (int i = 0; i < 6; i++)
        t[i] = tt_v_tensor(tt_ctx_saved(ctx, i));
    tt_value none = tt_v_none();
    bool mask[3] = {true, true, true};
    tt_value outs[3] = {tt_v_none(), tt_v_none(), tt_v_none()};
    st = tt_op_call(tt__op(TT_OP_NATIVE_BATCH_NORM_BACKWARD),
                    TT_ARGS(tt_v_tensor(g[0]), t[0], has_w ? t[1] : none,
                            training ? none : t[2], training ? none : t[3],
                            training ? t[4] : none, training ? t[5] : none,
                            tt_v_bool(training), tt_v_float(eps), tt_v_bools(3, mask)),
                    outs, 3);
    if (st)
        return st;
    /* input is argument 0, weight 1, bias 2 */
    put_grads3(ctx, gi, outs, (int[]){0, 1, 2});
    return TT_OK;
}

/* ========================================================== group norm */

/* native_group_norm over input viewed as [N, C, HxW] (contiguous, as
 * PyTorch's kernel reads it; a channels-last input is read through a
 * contiguous copy): row (n, g) is the G-th part of sample n, D = C / G
 * channels of HxW values. Stats in double (ln_stats: the biased variance),
 * y = x * scale + bias per channel with scale = rstd * w, bias = b - scale
 * * mean in the input's dtype, as PyTorch's GroupNormKernelImplInternal. */
typedef struct {
    const char *x, *g, *w, *b;
    char *y;
    const double *mean, *rstd; /* [N G] (backward: given) */
    double *m_out, *r_out;     /* [N G] (forward) */
    double *ds, *db;           /* [N C] (backward) */
    int64_t G, D, HW, C;
    double eps;
} gn_plan;

#define GN_FWD(T)                                                              \
    CPU_CLONES static void gn_fwd_##T(int64_t r0, int64_t r1, void *vp)        \
    {                                                                          \
        const gn_plan *p = vp;                                                 \
        const T *w = (const T *)p->w, *b = (const T *)p->b;                    \
        int64_t len = p->D * p->HW;                                            \
        for (int64_t r = r0; r < r1; r++) {                                    \
            const T *x = (const T *)p->x + r * len;                            \
            T *y = (T *)p->y + r * len;                                        \
            double m, rs;                                                      \
            ln_stats_##T(x, len, p->eps, &m, &rs);                             \
            p->m_out[r] = m, p->r_out[r] = rs;                                 \
            int64_t c0 = (r % p->G) * p->D;                                    \
            for (int64_t j = 0; j < p->D; j++) {                               \
                T sc = (T)rs * (w ? w[c0 + j] : (T)1);                         \
                T bi = -sc * (T)m + (b ? b[c0 + j] : (T)0);                    \
                const T *restrict xr = x + j * p->HW;                          \
                T *restrict yr = y + j * p->HW;                                \
                for (int64_t k = 0; k < p->HW; k++)                            \
                    yr[k] = sc * xr[k] + bi;                                   \
            }                                                                  \
        }                                                                      \
    }

/* Backward, row (n, g): ds[n, c] = sum dy x, db[n, c] = sum dy over the
 * channel's HxW values, then
 *   dx = rstd w dy + c2 x + c3,  c2 = (sum_c db w * mean - sum_c ds w)
 *   rstd^3 / (D HxW),  c3 = -c2 mean - sum_c db w * rstd / (D HxW)
 * as PyTorch's GroupNormBackwardKernelImplInternal. */
#define GN_BWD(T)                                                              \
    CPU_CLONES static void gn_bwd_##T(int64_t r0, int64_t r1, void *vp)        \
    {                                                                          \
        const gn_plan *p = vp;                                                 \
        const T *w = (const T *)p->w;                                          \
        int64_t len = p->D * p->HW;                                            \
        for (int64_t r = r0; r < r1; r++) {                                    \
            const T *x = (const T *)p->x + r * len, *g = (const T *)p->g + r * len; \
            T *dx = (T *)p->y + r * len;                                       \
            int64_t n = r / p->G, c0 = (r % p->G) * p->D;                      \
            double dsw = 0, dbw = 0, m = p->mean[r], rs = p->rstd[r];          \
            for (int64_t j = 0; j < p->D; j++) {                               \
                double ds = row_dot_##T(g + j * p->HW, x + j * p->HW, p->HW);  \
                double db = row_dot_##T(g + j * p->HW, NULL, p->HW);           \
                p->ds[n * p->C + c0 + j] = ds, p->db[n * p->C + c0 + j] = db;  \
                double wj = w ? (double)w[c0 + j] : 1.0;                       \
                dsw += ds * wj, dbw += db * wj;                                \
            }                                                                  \
            double s = 1.0 / (double)len;                                      \
            double c2 = (dbw * m - dsw) * rs * rs * rs * s;                    \
            double c3 = -c2 * m - dbw * rs * s;                                \
            for (int64_t j = 0; j < p->D; j++) {                               \
                double c1 = rs * (w ? (double)w[c0 + j] : 1.0);                \
                const T *restrict xr = x + j * p->HW, *restrict gr = g + j * p->HW; \
                T *restrict o = dx + j * p->HW;                                \
                for (int64_t k = 0; k < p->HW; k++)                            \
                    o[k] = (T)(c1 * (double)gr[k] + c2 * (double)xr[k] + c3);  \
            }                                                                  \
        }                                                                      \
    }

GN_FWD(float)
GN_FWD(double)
GN_BWD(float)
GN_BWD(double)

typedef struct {
    tt_tensor *x, *w, *b;
    int64_t N, C, HW, group;
    double eps;
} gn_args;

/* The checks both directions share: input f32/f64 of N * C * HxW elements
 * with N and C its first two sizes, C divisible by group, weight and bias
 * [C]. */
static tt_status gn_check(const char *op, const gn_args *a, int wargno)
{
    tt_status st;
    char s1[128], s2[128];
    const tt_tensor *x = a->x;
    if ((st = want_float(op, "input", wargno == 5 ? 2 : 1, x)))
        return st;
    if (a->group <= 0)
        return tt_error(TT_EINVAL, "%s: argument 'group': expected a positive number of groups, "
                                   "got %lld",
                        op, (long long)a->group);
    tt_size hw = 1;
    for (int d = 2; d < tt_ndim(x); d++)
        hw = tt_sym_mul(hw, tt_sizes(x)[d]);
    if (tt_ndim(x) < 2 || !tt__sz_eq(tt_sizes(x)[0], a->N) || !tt__sz_eq(tt_sizes(x)[1], a->C) ||
        !tt__sz_eq(hw, a->HW))
        return tt_error(TT_ESHAPE, "%s: argument 'input': expected shape [N, C, ...] with N, C "
                                   "and HxW the arguments' (%s), got %s",
                        op, tt_size_list_str(3, (tt_size[]){a->N, a->C, a->HW}, false, s1,
                                             sizeof s1),
                        tt_shape_str(x, s2, sizeof s2));
    if (!tt_size_is_sym(a->C) && a->C % a->group != 0)
        return tt_error(TT_EINVAL, "%s: argument 'group': expected the number of channels %lld "
                                   "to be divisible by the number of groups, got %lld",
                        op, (long long)a->C, (long long)a->group);
    if ((st = bn_want_channel_vec(op, "weight", wargno, a->w, x)))
        return st;
    if (wargno == 2 && (st = bn_want_channel_vec(op, "bias", 3, a->b, x)))
        return st;
    return TT_OK;
}

static tt_status gn_read_sizes(tt_frame *f, int first, gn_args *a)
{
    tt_status st;
    if ((st = tt_arg_int(f, first, &a->N)) || (st = tt_arg_int(f, first + 1, &a->C)) ||
        (st = tt_arg_int(f, first + 2, &a->HW)) || (st = tt_arg_int(f, first + 3, &a->group)))
        return st;
    return TT_OK;
}

/* A new tensor of x's sizes in x's channel-norm layout (channels last or
 * contiguous), and whether it is channels last. */
static tt_tensor *gn_like(const tt_tensor *x, bool fake, bool *cl)
{
    tt_size strides[TT_MAX_DIMS];
    *cl = bn_channels_last(x);
    bn_out_strides(x, *cl, strides);
    return tt__ops_new(fake, tt_ndim(x), tt_sizes(x), strides, tt_dtype_of(x));
}

/* tt::native_group_norm -> (output, mean [N, group], rstd [N, group]). */
static tt_status gn_forward(const gn_args *a, bool fake, tt_tensor **out)
{
    const char *op = tt__op_label(TT_OP_NATIVE_GROUP_NORM);
    tt_status st;
    out[0] = out[1] = out[2] = NULL;
    if ((st = gn_check(op, a, 2)))
        return st;
    fake = fake || is_fake(a->x) || is_fake(a->w) || is_fake(a->b);
    tt_dtype dt = tt_dtype_of(a->x);
    bool cl;
    tt_size ng[2] = {a->N, a->group};
    out[0] = gn_like(a->x, fake, &cl);
    out[1] = tt__ops_new(fake, 2, ng, NULL, dt);
    out[2] = tt__ops_new(fake, 2, ng, NULL, dt);
    if (!out[0] || !out[1] || !out[2])
        goto fail;
    if (fake)
        return TT_OK;
    int64_t rows = a->N * a->group;
    tt_tensor *xc = contig(a->x), *wc = a->w ? contig(a->w) : NULL, *bc = a->b ? contig(a->b) : NULL;
    tt_tensor *yc = cl ? tt__ops_new(false, tt_ndim(a->x), tt_sizes(a->x), NULL, dt)
                       : tt_retain(out[0]);
    double *stats = tt__malloc(sizeof(double) * (size_t)(2 * rows + 1));
    if (!xc || (a->w && !wc) || (a->b && !bc) || !yc || !stats) {
        if (xc && (!a->w || wc) && (!a->b || bc) && yc) /* else that op set the error */
            tt_error(TT_ENOMEM, "%s: out of memory for the group statistics", op);
        st = tt_errcode();
    } else {
        gn_plan p = {.x = tt__ptr(xc), .w = wc ? tt__ptr(wc) : NULL, .b = bc ? tt__ptr(bc) : NULL,
                     .y = tt__ptr(yc), .m_out = stats, .r_out = stats + rows, .G = a->group,
                     .D = a->C / a->group, .HW = a->HW, .C = a->C, .eps = a->eps};
        int64_t len = p.D * p.HW;
        tt_parallel_for(rows, 16384 / (len + 1) + 1, dt == TT_F64 ? gn_fwd_double : gn_fwd_float,
                        &p);
        size_t es = tt_dtype_size(dt);
        for (int64_t r = 0; r < rows; r++) {
            tt__store(tt__ptr(out[1]) + r * (int64_t)es, dt, stats[r]);
            tt__store(tt__ptr(out[2]) + r * (int64_t)es, dt, stats[rows + r]);
        }
        if (cl)
            st = tt__copy_raw(out[0], yc);
    }
    tt__free(stats);
    tt_release(xc), tt_release(wc), tt_release(bc), tt_release(yc);
    if (!st)
        return TT_OK;
fail:
    return drop3(out);
}

static tt_status gn_kernel(tt_frame *f)
{
    gn_args a;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &a.x)) || (st = tt_arg_tensor(f, 1, &a.w)) ||
        (st = tt_arg_tensor(f, 2, &a.b)) || (st = gn_read_sizes(f, 3, &a)) ||
        (st = tt_arg_float(f, 7, &a.eps)))
        return st;
    tt_tensor *out[3];
    if ((st = gn_forward(&a, tt_frame_is_fake(f), out)))
        return st;
    return return3(f, TT_OK, out);
}

/* tt::native_group_norm_backward -> (grad_input, grad_weight [C],
 * grad_bias [C]): all three whatever output_mask says (the schema's
 * results are not optional), grad_weight also without weight. */
static tt_status gn_backward_impl(const tt_tensor *g, const gn_args *a, const tt_tensor *mean,
                                  const tt_tensor *rstd, bool fake, tt_tensor **out)
{
    const char *op = tt__op_label(TT_OP_NATIVE_GROUP_NORM_BACKWARD);
    tt_status st;
    out[0] = out[1] = out[2] = NULL;
    if ((st = gn_check(op, a, 5)) ||
        (st = want_sizes(op, "grad_out", 1, g, tt_ndim(a->x), tt_sizes(a->x))) ||
        (st = want_same_dtype(op, "grad_out", 1, g, a->x)))
        return st;
    tt_size ng[2] = {a->N, a->group};
    if ((st = want_sizes(op, "mean", 3, mean, 2, ng)) ||
        (st = want_same_dtype(op, "mean", 3, mean, a->x)) ||
        (st = want_sizes(op, "rstd", 4, rstd, 2, ng)) ||
        (st = want_same_dtype(op, "rstd", 4, rstd, a->x)))
        return st;
    fake = fake || is_fake(g) || is_fake(a->x) || is_fake(mean) || is_fake(rstd) || is_fake(a->w);
    tt_dtype dt = tt_dtype_of(a->x);
    bool cl;
    out[0] = gn_like(a->x, fake, &cl);
    out[1] = tt__ops_new(fake, 1, &a->C, NULL, dt);
    out[2] = tt__ops_new(fake, 1, &a->C, NULL, dt);
    if (!out[0] || !out[1] || !out[2])
        goto fail;
    if (fake)
        return TT_OK;
    int64_t N = a->N, C = a->C, G = a->group, rows = N * G;
    tt_tensor *xc = contig(a->x), *gc = contig(g), *wc = a->w ? contig(a->w) : NULL;
    tt_tensor *mc = tt_to_dtype(mean, TT_F64), *rc = tt_to_dtype(rstd, TT_F64);
    tt_tensor *mcc = mc ? contig(mc) : NULL, *rcc = rc ? contig(rc) : NULL;
    tt_tensor *dxc = cl ? tt__ops_new(false, tt_ndim(a->x), tt_sizes(a->x), NULL, dt)
                        : tt_retain(out[0]);
    double *sums = tt__malloc(sizeof(double) * (size_t)(2 * N * C + 1));
    if (!xc || !gc || (a->w && !wc) || !mcc || !rcc || !dxc || !sums) {
        if (xc && gc && (!a->w || wc) && mcc && rcc && dxc) /* else that op set the error */
            tt_error(TT_ENOMEM, "%s: out of memory for the channel sums", op);
        st = tt_errcode();
    } else {
        const double *mv = (const double *)tt__ptr(mcc), *rv = (const double *)tt__ptr(rcc);
        gn_plan p = {.x = tt__ptr(xc), .g = tt__ptr(gc), .w = wc ? tt__ptr(wc) : NULL,
                     .y = tt__ptr(dxc), .mean = mv, .rstd = rv, .ds = sums,
                     .db = sums + N * C, .G = G, .D = C / G, .HW = a->HW, .C = C};
        int64_t len = p.D * p.HW;
        tt_parallel_for(rows, 16384 / (len + 1) + 1, dt == TT_F64 ? gn_bwd_double : gn_bwd_float,
                        &p);
        /* dgamma[c] = sum_n (ds - db mean) rstd, dbeta[c] = sum_n db, in
         * sample order */
        size_t es = tt_dtype_size(dt);
        for (int64_t c = 0; c < C; c++) {
            double dw = 0, db = 0;
            for (int64_t n = 0; n < N; n++) {
                int64_t r = n * G + c / p.D;
                dw += (p.ds[n * C + c] - p.db[n * C + c] * mv[r]) * rv[r];
                db += p.db[n * C + c];
            }
            tt__store(tt__ptr(out[1]) + c * (int64_t)es, dt, dw);
            tt__store(tt__ptr(out[2]) + c * (int64_t)es, dt, db);
        }
        if (cl)
            st = tt__copy_raw(out[0], dxc);
    }
    tt__free(sums);
    tt_release(xc), tt_release(gc), tt_release(wc), tt_release(mc), tt_release(rc);
    tt_release(mcc), tt_release(rcc), tt_release(dxc);
    if (!st)
        return TT_OK;
fail:
    return drop3(out);
}

static tt_status gn_backward_kernel(tt_frame *f)
{
    gn_args a = {0};
    tt_tensor *g, *mean, *rstd;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &g)) || (st = tt_arg_tensor(f, 1, &a.x)) ||
        (st = tt_arg_tensor(f, 2, &mean)) || (st = tt_arg_tensor(f, 3, &rstd)) ||
        (st = tt_arg_tensor(f, 4, &a.w)) || (st = gn_read_sizes(f, 5, &a)))
        return st;
    if ((st = want_output_mask3(f, 9)))
        return st;
    tt_tensor *out[3];
    if ((st = gn_backward_impl(g, &a, mean, rstd, tt_frame_is_fake(f), out)))
        return st;
    return return3(f, TT_OK, out);
}

/* Saves input, weight (or input), mean and rstd (outputs 1, 2) and N, C,
 * HxW, group. */
static tt_status setup_gn(tt_autograd_ctx *ctx, const tt_value *in, int nin, const tt_value *out,
                          int nout)
{
    (void)nin, (void)nout;
    tt_tensor *w = in[1].kind == TT_V_TENSOR ? in[1].u.t : NULL;
    tt_status st = tt_ctx_save_for_backward(
        ctx, 4, (tt_tensor *[]){in[0].u.t, w ? w : in[0].u.t, out[1].u.t, out[2].u.t});
    int64_t sizes[5] = {in[3].u.i, in[4].u.i, in[5].u.i, in[6].u.i, w ? 1 : 0};
    return st ? st : tt_ctx_save_ints(ctx, "sizes", 5, sizes);
}

static tt_status gn_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng, tt_tensor **gi,
                             int ni)
{
    (void)ng, (void)ni;
    const int64_t *sz;
    int n;
    tt_status st = tt_ctx_get_ints(ctx, "sizes", &sz, &n);
    if (st)
        return st;
    bool mask[3] = {true, true, true};
    tt_value outs[3] = {tt_v_none(), tt_v_none(), tt_v_none()};
    st = tt_op_call(tt__op(TT_OP_NATIVE_GROUP_NORM_BACKWARD),
                    TT_ARGS(tt_v_tensor(g[0]), tt_v_tensor(tt_ctx_saved(ctx, 0)),
                            tt_v_tensor(tt_ctx_saved(ctx, 2)), tt_v_tensor(tt_ctx_saved(ctx, 3)),
                            sz[4] ? tt_v_tensor(tt_ctx_saved(ctx, 1)) : tt_v_none(),
                            tt_v_int(sz[0]), tt_v_int(sz[1]), tt_v_int(sz[2]), tt_v_int(sz[3]),
                            tt_v_bools(3, mask)),
                    outs, 3);
    if (st)
        return st;
    put_grads3(ctx, gi, outs, (int[]){0, 1, 2}); /* input, weight, bias */
    return TT_OK;
}

#undef TT__FAMILY_CHANNEL_NORM
#define TT__FAMILY_CHANNEL_NORM TT__ROW
static const tt__builtin_row rows[] = {TT__FAMILY_ROWS};

tt_status tt__register_channel_norm(tt_library *lib)
{
    return TT__DEFINE_ROWS(lib, rows);
}

/* ---------------------------------------------------------- typed wrappers */

tt_tensor *tt_batch_norm(const tt_tensor *x, const tt_tensor *weight, const tt_tensor *bias,
                         tt_tensor *running_mean, tt_tensor *running_var, bool training,
                         double momentum, double eps)
{
    const char *fn = "tt_batch_norm";
    if (!x) { /* the dispatcher reports it (or the error that made x NULL) */
        tt_value outs[3];
        tt_op_call(tt__op(TT_OP__NATIVE_BATCH_NORM_LEGIT_NO_STATS),
                   TT_ARGS(tt_v_tensor(x), tt_v_none(), tt_v_none(), tt_v_bool(true),
                           tt_v_float(momentum), tt_v_float(eps)),
                   outs, 3);
        return NULL;
    }
    if (!running_mean != !running_var) {
        tt_error(TT_EINVAL, "%s: running_mean and running_var must both be given or both be "
                            "NULL, got %s NULL",
                 fn, running_mean ? "running_var" : "running_mean");
        return NULL;
    }
    if (!training && !running_mean) {
        tt_error(TT_EINVAL, "%s: evaluation (training=false) needs running_mean and "
                            "running_var, got NULL",
                 fn);
        return NULL;
    }
    if (training && tt_ndim(x) >= 2) {
        /* F.batch_norm's _verify_batch_size: one value per channel has no
         * variance. */
        tt_size n = tt_sizes(x)[0];
        for (int d = 2; d < tt_ndim(x); d++)
            n = tt_sym_mul(n, tt_sizes(x)[d]);
        if (tt__sz_eq(n, 1)) {
            char s[128];
            tt_error(TT_ESHAPE, "%s: expected more than 1 value per channel when training, "
                                "got input of shape %s",
                     fn, tt_shape_str(x, s, sizeof s));
            return NULL;
        }
    }
    tt_value w = weight ? tt_v_tensor(weight) : tt_v_none();
    tt_value b = bias ? tt_v_tensor(bias) : tt_v_none();
    int kind = !training ? BN_NO_TRAINING : running_mean ? BN_STATS : BN_NO_STATS;
    const tt_tensor *ts[5] = {x, weight, bias, running_mean, running_var};
    const tt_tensor *given[5];
    int n = 0;
    for (int i = 0; i < 5; i++)
        if (ts[i])
            given[n++] = ts[i];
    tt_tensor *out[3] = {NULL, NULL, NULL};
    tt_status st;
    if (tt__fast_path(bn_ids[kind], n, given)) {
        bn_args a = {(tt_tensor *)x, (tt_tensor *)weight, (tt_tensor *)bias, running_mean,
                     running_var, training, momentum, eps};
        st = bn_forward(tt__op_label(bn_ids[kind]), &a, false, out);
        if (!st && training && running_mean) { /* the dispatcher's bump of (a!) arguments */
            tt_bump_version(running_mean);
            tt_bump_version(running_var);
        }
    } else if (kind == BN_STATS) {
        st = call_results(bn_ids[kind],
                          TT_ARGS(tt_v_tensor(x), w, b, tt_v_tensor(running_mean),
                                  tt_v_tensor(running_var), tt_v_bool(true),
                                  tt_v_float(momentum), tt_v_float(eps)),
                          out, 3);
    } else if (kind == BN_NO_STATS) {
        st = call_results(bn_ids[kind],
                          TT_ARGS(tt_v_tensor(x), w, b, tt_v_bool(true), tt_v_float(momentum),
                                  tt_v_float(eps)),
                          out, 3);
    } else {
        st = call_results(bn_ids[kind],
                          TT_ARGS(tt_v_tensor(x), w, b, tt_v_tensor(running_mean),
                                  tt_v_tensor(running_var), tt_v_float(momentum),
                                  tt_v_float(eps)),
                          out, 3);
    }
    return st ? NULL : first_result(out, 3);
}

tt_tensor *tt_group_norm(const tt_tensor *x, int64_t groups, const tt_tensor *weight,
                         const tt_tensor *bias, double eps)
{
    tt_size N = 0, C = 0, HW = 1;
    if (x && tt_ndim(x) < 2) { /* F.group_norm's check: N and C come from x */
        tt_error(TT_ESHAPE, "tt_group_norm: argument 'x': expected at least 2 dims (N, C, ...), "
                            "got %d",
                 tt_ndim(x));
        return NULL;
    }
    if (x) {
        N = tt_sizes(x)[0], C = tt_sizes(x)[1];
        for (int d = 2; d < tt_ndim(x); d++)
            HW = tt_sym_mul(HW, tt_sizes(x)[d]);
    }
    tt_tensor *out[3] = {NULL, NULL, NULL};
    const tt_tensor *ts[3] = {x, weight ? weight : x, bias ? bias : x};
    tt_status st;
    if (x && tt__fast_path(TT_OP_NATIVE_GROUP_NORM, 3, ts)) {
        gn_args a = {(tt_tensor *)x, (tt_tensor *)weight, (tt_tensor *)bias, N, C, HW, groups, eps};
        st = gn_forward(&a, false, out);
    } else {
        st = call_results(TT_OP_NATIVE_GROUP_NORM,
                          TT_ARGS(tt_v_tensor(x), weight ? tt_v_tensor(weight) : tt_v_none(),
                                  bias ? tt_v_tensor(bias) : tt_v_none(), tt_v_int(N),
                                  tt_v_int(C), tt_v_int(HW), tt_v_int(groups), tt_v_float(eps)),
                          out, 3);
    }
    return st ? NULL : first_result(out, 3);
}
