/* Convolution as im2col + GEMM (OpenBLAS through cblas): the f64 path and
 * every case oneDNN does not take (conv_impl.h has the geometry).
 *
 * Per sample and group, im2col lays the receptive fields out as a [C/G k0
 * k1, L] matrix (L = out0 out1), and
 *   forward         y_g  [O/G, L] = w_g [O/G, K] col [K, L]
 *   backward-data   col  [K, L]   = w_g^T dy_g, then col2im into dx
 *   backward-weight dw_g [O/G, K] += dy_g col^T (samples in order)
 * A 1x1 kernel with stride 1 and no padding needs no im2col: col is the
 * image itself.
 *
 * Threads: a GEMM small enough that OpenBLAS runs it on the calling thread
 * (TT_BLAS_SINGLE_THREAD_MNK) runs on our pool, one sample (forward,
 * backward-data) or one group (backward-weight) per task; larger GEMMs run
 * one after another, each on OpenBLAS's threads. Either way every output
 * element is summed in the same order, whatever the thread count. */
#include "conv_impl.h"
#include "tt_nn.h"

#include <cblas.h>

/* The column buffers of a block of samples are capped at this many bytes:
 * a batch is processed in blocks that fit. */
#define COL_BYTES_MAX ((int64_t)64 << 20)

typedef struct {
    const conv_geom *g;
    const char *a, *b; /* the pass's two inputs */
    char *c;           /* its output */
    char *col;         /* per task: K * L elements each */
    int64_t n0;        /* first sample of the block */
    bool f64;
} gemm_plan;

static inline int64_t geom_K(const conv_geom *g) { return g->C / g->G * g->k[0] * g->k[1]; }
static inline int64_t geom_L(const conv_geom *g) { return g->out[0] * g->out[1]; }
static inline int64_t geom_HW(const conv_geom *g) { return g->in[0] * g->in[1]; }
/* The image is its own col matrix: a 1x1 kernel, stride 1, no padding,
 * and as many outputs as inputs (a transposed convolution's
 * output_padding adds inputs no output reads: they need the col path,
 * whose col2im writes them, FINDINGS F22). */
static inline bool geom_pointwise(const conv_geom *g)
{
    return g->k[0] == 1 && g->k[1] == 1 && g->s[0] == 1 && g->s[1] == 1 && g->p[0] == 0 &&
           g->p[1] == 0 && g->in[0] == g->out[0] && g->in[1] == g->out[1];
}

/* x [C, in0, in1] (C channels from x) -> col [C k0 k1, L]. */
#define IM2COL(T)                                                              \
    static void im2col_##T(const conv_geom *g, int64_t C, const T *restrict x, \
                           T *restrict col)                                    \
    {                                                                          \
        int64_t L = geom_L(g), o1 = g->out[1];                                 \
        for (int64_t c = 0; c < C; c++)                                        \
            for (int64_t ki = 0; ki < g->k[0]; ki++)                           \
                for (int64_t kj = 0; kj < g->k[1]; kj++) {                     \
                    T *row = col + ((c * g->k[0] + ki) * g->k[1] + kj) * L;    \
                    for (int64_t oy = 0; oy < g->out[0]; oy++) {               \
                        int64_t iy = oy * g->s[0] - g->p[0] + ki * g->d[0];    \
                        T *r = row + oy * o1;                                  \
                        if (iy < 0 || iy >= g->in[0]) {                        \
                            for (int64_t ox = 0; ox < o1; ox++)                \
                                r[ox] = 0;                                     \
                            continue;                                          \
                        }                                                      \
                        const T *xr = x + (c * g->in[0] + iy) * g->in[1];      \
                        int64_t ix = kj * g->d[1] - g->p[1];                   \
                        for (int64_t ox = 0; ox < o1; ox++, ix += g->s[1])     \
                            r[ox] = ix >= 0 && ix < g->in[1] ? xr[ix] : (T)0;  \
                    }                                                          \
                }                                                              \
    }                                                                          \
    /* col [C k0 k1, L] summed into x [C, in0, in1] (already zeroed). */       \
    static void col2im_##T(const conv_geom *g, int64_t C, const T *restrict col, \
                           T *restrict x)                                      \
    {                                                                          \
        int64_t L = geom_L(g), o1 = g->out[1];                                 \
        for (int64_t c = 0; c < C; c++)                                        \
            for (int64_t ki = 0; ki < g->k[0]; ki++)                           \
                for (int64_t kj = 0; kj < g->k[1]; kj++) {                     \
                    const T *row = col + ((c * g->k[0] + ki) * g->k[1] + kj) * L; \
                    for (int64_t oy = 0; oy < g->out[0]; oy++) {               \
                        int64_t iy = oy * g->s[0] - g->p[0] + ki * g->d[0];    \
                        if (iy < 0 || iy >= g->in[0])                          \
                            continue;                                          \
                        const T *r = row + oy * o1;                            \
                        T *xr = x + (c * g->in[0] + iy) * g->in[1];            \
                        int64_t ix = kj * g->d[1] - g->p[1];                   \
                        for (int64_t ox = 0; ox < o1; ox++, ix += g->s[1])     \
                            if (ix >= 0 && ix < g->in[1])                      \
                                xr[ix] += r[ox];                               \
                    }                                                          \
                }                                                              \
    }
IM2COL(float)
IM2COL(double)

/* im2col of C channels, of doubles (f64) or floats. */
static void im2col(bool f64, const conv_geom *g, int64_t C, const char *x, char *col)
{
    if (f64)
        im2col_double(g, C, (const double *)x, (double *)col);
    else
        im2col_float(g, C, (const float *)x, (float *)col);
}

/* x [C, in0, in1] = col [C k0 k1, L] summed into zeros. */
static void col2im(bool f64, const conv_geom *g, int64_t C, const char *col, char *x)
{
    memset(x, 0, (size_t)(C * geom_HW(g) * (f64 ? 8 : 4)));
    if (f64)
        col2im_double(g, C, (const double *)col, (double *)x);
    else
        col2im_float(g, C, (const float *)col, (float *)x);
}

/* Row-major C [m, n] = op(A) op(B) (+ C when acc). */
static void gemm(bool f64, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const void *a,
                 int64_t lda, const void *b, int64_t ldb, bool acc, void *c, int64_t ldc)
{
    if (m == 0 || n == 0)
        return;
    if (k == 0) {
        if (!acc)
            for (int64_t i = 0; i < m; i++)
                memset((char *)c + i * ldc * (f64 ? 8 : 4), 0, (size_t)n * (f64 ? 8 : 4));
        return;
    }
    CBLAS_TRANSPOSE A = ta ? CblasTrans : CblasNoTrans, B = tb ? CblasTrans : CblasNoTrans;
    if (f64)
        cblas_dgemm(CblasRowMajor, A, B, (blasint)m, (blasint)n, (blasint)k, 1.0, a,
                    (blasint)lda, b, (blasint)ldb, acc ? 1.0 : 0.0, c, (blasint)ldc);
    else
        cblas_sgemm(CblasRowMajor, A, B, (blasint)m, (blasint)n, (blasint)k, 1.0f, a,
                    (blasint)lda, b, (blasint)ldb, acc ? 1.0f : 0.0f, c, (blasint)ldc);
}

#define ES(p) ((p)->f64 ? (int64_t)8 : (int64_t)4)

/* Forward of samples [b0, b1) of the block. */
static void fwd_task(int64_t b0, int64_t b1, void *vp)
{
    const gemm_plan *p = vp;
    const conv_geom *g = p->g;
    int64_t K = geom_K(g), L = geom_L(g), HW = geom_HW(g), CG = g->C / g->G, OG = g->O / g->G;
    int64_t es = ES(p);
    for (int64_t t = b0; t < b1; t++) {
        int64_t n = p->n0 + t;
        char *col = p->col ? p->col + t * K * L * es : NULL;
        for (int64_t gi = 0; gi < g->G; gi++) {
            const char *x = p->a + (n * g->C + gi * CG) * HW * es;
            if (col)
                im2col(p->f64, g, CG, x, col);
            gemm(p->f64, false, false, OG, L, K, p->b + gi * OG * K * es, K, col ? col : x, L,
                 false, p->c + (n * g->O + gi * OG) * L * es, L);
        }
    }
}

/* Backward-data of samples [b0, b1): p->a is dy, p->b is w, p->c is dx. */
static void bwd_data_task(int64_t b0, int64_t b1, void *vp)
{
    const gemm_plan *p = vp;
    const conv_geom *g = p->g;
    int64_t K = geom_K(g), L = geom_L(g), HW = geom_HW(g), CG = g->C / g->G, OG = g->O / g->G;
    int64_t es = ES(p);
    for (int64_t t = b0; t < b1; t++) {
        int64_t n = p->n0 + t;
        char *col = p->col ? p->col + t * K * L * es : NULL;
        for (int64_t gi = 0; gi < g->G; gi++) {
            char *dx = p->c + (n * g->C + gi * CG) * HW * es;
            const char *dy = p->a + (n * g->O + gi * OG) * L * es;
            gemm(p->f64, true, false, K, L, OG, p->b + gi * OG * K * es, K, dy, L, false,
                 col ? col : dx, L);
            if (!col)
                continue;
            col2im(p->f64, g, CG, col, dx);
        }
    }
}

/* Backward-weight of groups [g0, g1) over all samples in order: p->a is x,
 * p->b is dy, p->c is dw; p->col holds K * L per group. */
static void bwd_weight_task(int64_t g0, int64_t g1, void *vp)
{
    const gemm_plan *p = vp;
    const conv_geom *g = p->g;
    int64_t K = geom_K(g), L = geom_L(g), HW = geom_HW(g), CG = g->C / g->G, OG = g->O / g->G;
    int64_t es = ES(p);
    for (int64_t gi = g0; gi < g1; gi++) {
        char *col = p->col ? p->col + (p->n0 ? 0 : gi) * K * L * es : NULL;
        char *dw = p->c + gi * OG * K * es;
        for (int64_t n = 0; n < g->N; n++) {
            const char *x = p->a + (n * g->C + gi * CG) * HW * es;
            if (col)
                im2col(p->f64, g, CG, x, col);
            gemm(p->f64, false, true, OG, K, L, p->b + (n * g->O + gi * OG) * L * es, L,
                 col ? col : x, L, n > 0, dw, K);
        }
        if (g->N == 0)
            memset(dw, 0, (size_t)(OG * K * es));
    }
}

/* Runs a per-sample pass over the batch in blocks whose column buffers fit
 * COL_BYTES_MAX, in parallel when each GEMM is small. */
static tt_status per_sample(const conv_geom *g, tt_dtype dt, const char *a, const char *b,
                            char *c, void (*task)(int64_t, int64_t, void *))
{
    bool f64 = dt == TT_F64;
    int64_t es = f64 ? 8 : 4, K = geom_K(g), L = geom_L(g);
    double mnk = (double)(g->O / g->G) * (double)K * (double)L;
    bool small = mnk <= TT_BLAS_SINGLE_THREAD_MNK;
    int64_t per = geom_pointwise(g) ? 0 : K * L * es;
    int64_t block = small && per ? COL_BYTES_MAX / per : 1;
    block = block < 1 ? 1 : block > g->N ? g->N : block;
    char *col = NULL;
    if (per && g->N && !(col = tt__malloc((size_t)(block * per))))
        return tt_errcode();
    if (!small)
        tt__blas_sync_threads();
    gemm_plan p = {.g = g, .a = a, .b = b, .c = c, .col = col, .f64 = f64};
    for (int64_t n0 = 0; n0 < g->N; n0 += block) {
        int64_t nb = g->N - n0 < block ? g->N - n0 : block;
        p.n0 = n0;
        if (small)
            tt_parallel_for(nb, 1, task, &p);
        else
            task(0, nb, &p);
    }
    tt__free(col);
    return TT_OK;
}

tt_status conv_gemm_fwd(const conv_geom *g, tt_dtype dt, const char *x, const char *w, char *y)
{
    return per_sample(g, dt, x, w, y, fwd_task);
}

tt_status conv_gemm_bwd_data(const conv_geom *g, tt_dtype dt, const char *dy, const char *w,
                             char *dx)
{
    return per_sample(g, dt, dy, w, dx, bwd_data_task);
}

tt_status conv_gemm_bwd_weight(const conv_geom *g, tt_dtype dt, const char *x, const char *dy,
                               char *dw)
{
    bool f64 = dt == TT_F64;
    int64_t es = f64 ? 8 : 4, K = geom_K(g), L = geom_L(g);
    double mnk = (double)(g->O / g->G) * (double)K * (double)L;
    int64_t per = geom_pointwise(g) ? 0 : K * L * es;
    /* groups in parallel, each with its own columns, when the GEMMs are
     * small and the columns fit; else one group after another */
    bool par = g->G > 1 && mnk <= TT_BLAS_SINGLE_THREAD_MNK && per * g->G <= COL_BYTES_MAX;
    char *col = NULL;
    if (per && !(col = tt__malloc((size_t)(per * (par ? g->G : 1)))))
        return tt_errcode();
    /* n0 marks a shared buffer (one group at a time) */
    gemm_plan p = {.g = g, .a = x, .b = dy, .c = dw, .col = col, .f64 = f64, .n0 = !par};
    if (par)
        tt_parallel_for(g->G, 1, bwd_weight_task, &p);
    else {
        tt__blas_sync_threads();
        bwd_weight_task(0, g->G, &p);
    }
    tt__free(col);
    return TT_OK;
}

/* ------------------------------------------------------------- bias */

typedef struct {
    bool f64, relu;
    char *y;
    const char *b, *scale;
    int64_t n, c, hw;
} bias_plan;

/* y = y * scale + b per channel (scale NULL: 1, b NULL: 0), then relu's
 * formula (ops/pointwise_ops.h: a <= 0 gives 0, NaN stays) when asked:
 * one pass over the output for a convolution's whole epilogue. */
#define BIAS_ROW(T)                                                            \
    do {                                                                       \
        T *y = (T *)p->y + r * p->hw, b = p->b ? ((const T *)p->b)[ch] : (T)0; \
        T s = p->scale ? ((const T *)p->scale)[ch] : (T)1;                     \
        if (p->relu || p->scale)                                               \
            for (int64_t i = 0; i < p->hw; i++) {                              \
                T v = y[i] * s + b;                                            \
                y[i] = p->relu && v <= 0 ? (T)0 : v;                           \
            }                                                                  \
        else                                                                   \
            for (int64_t i = 0; i < p->hw; i++)                                \
                y[i] += b;                                                     \
    } while (0)

static void bias_task(int64_t r0, int64_t r1, void *vp)
{
    const bias_plan *p = vp;
    for (int64_t r = r0; r < r1; r++) { /* row r: sample r / c, channel r % c */
        int64_t ch = r % p->c;
        if (p->f64)
            BIAS_ROW(double);
        else
            BIAS_ROW(float);
    }
}

void conv_add_bias(tt_dtype dt, char *y, const char *scale, const char *b, bool relu, int64_t n,
                   int64_t c, int64_t hw)
{
    bias_plan p = {.f64 = dt == TT_F64, .relu = relu, .y = y, .b = b, .scale = scale,
                   .n = n, .c = c, .hw = hw};
    tt_parallel_for(n * c, 1 + 32768 / (hw ? hw : 1), bias_task, &p);
}

/* Channel sums in double, samples in order: the same on any thread count. */
static void bias_grad_task(int64_t c0, int64_t c1, void *vp)
{
    const bias_plan *p = vp;
    for (int64_t ch = c0; ch < c1; ch++) {
        double s = 0;
        for (int64_t n = 0; n < p->n; n++) {
            int64_t off = (n * p->c + ch) * p->hw;
            if (p->f64)
                s += row_dot_double((const double *)p->b + off, NULL, p->hw);
            else
                s += row_dot_float((const float *)p->b + off, NULL, p->hw);
        }
        tt__store(p->y + ch * (p->f64 ? 8 : 4), p->f64 ? TT_F64 : TT_F32, s);
    }
}

void conv_bias_grad(tt_dtype dt, const char *dy, char *db, int64_t n, int64_t c, int64_t hw)
{
    bias_plan p = {.f64 = dt == TT_F64, .y = db, .b = dy, .n = n, .c = c, .hw = hw};
    int64_t per = n * hw != 0 ? n * hw : 1;
    tt_parallel_for(c, 1 + 32768 / per, bias_grad_task, &p);
}

/* -------------------------------------------------- im2col, col2im ops */

typedef struct {
    const conv_geom *g;
    bool f64, fold;
    const char *in;
    char *out;
} unfold_plan;

static void unfold_task(int64_t n0, int64_t n1, void *vp)
{
    const unfold_plan *p = vp;
    const conv_geom *g = p->g;
    int64_t img = g->C * geom_HW(g), cols = g->C * g->k[0] * g->k[1] * geom_L(g);
    int64_t es = p->f64 ? 8 : 4;
    for (int64_t n = n0; n < n1; n++) {
        if (p->fold)
            col2im(p->f64, g, g->C, p->in + n * cols * es, p->out + n * img * es);
        else
            im2col(p->f64, g, g->C, p->in + n * img * es, p->out + n * cols * es);
    }
}

void conv_im2col_batch(const conv_geom *g, tt_dtype dt, const char *x, char *col)
{
    unfold_plan p = {.g = g, .f64 = dt == TT_F64, .in = x, .out = col};
    tt_parallel_for(g->N, 1, unfold_task, &p);
}

void conv_col2im_batch(const conv_geom *g, tt_dtype dt, const char *col, char *x)
{
    unfold_plan p = {.g = g, .f64 = dt == TT_F64, .fold = true, .in = col, .out = x};
    tt_parallel_for(g->N, 1, unfold_task, &p);
}

/* --------------------------------------------- which path runs a pass */

/* Whether an f32 pass goes to oneDNN (f64 never: oneDNN has no f64
 * convolution). Measured on 2 threads of a loaded AMD EPYC (AVX-512, load
 * average 9), milliseconds, im2col + GEMM / oneDNN, forward |
 * backward-data | backward-weights:
 *   small   [32,1,28,28] 1->32 3x3    0.28/0.18 | 0.32/1.24 | 0.41/0.17
 *           [32,32,14,14] 32->64 3x3  3.8/1.2   | 4.0/1.2   | 3.7/1.2
 *           [8,16,16,16] 16->16 3x3   0.37/0.07 | 0.37/0.07 | 0.33/0.06
 *           [4,3,8,8] 3->8 3x3        .005/.006 | .006/.013 | .008/.007
 *   grouped [16,64,28,28] G=4 3x3     6.9/1.5   | 6.5/1.5   | 8.3/1.4
 *           [16,128,14,14] G=32 3x3   2.3/0.8   | 2.5/0.9   | 2.8/1.9
 *   depthw. [16,64,56,56] 3x3         16.2/2.7  | 17.3/3.3  | 26.1/2.8
 *           [16,256,14,14] 3x3        4.2/0.4   | 4.9/0.5   | 6.6/0.3
 *   resnet  [8,3,56,56] 3->64 7x7/2   2.1/0.6   | 1.7/3.2   | 2.4/0.7
 *           [8,64,56,56] 64->64 3x3   33.7/13.0 | 36.3/13.8 | 41.7/17.7
 *           [8,256,14,14] 256->256    34.6/10.0 | 27.5/9.9  | 27.0/10.8
 *   1x1     [16,64,28,28] 64->128     2.5/1.3   | 2.6/1.4   | 2.7/1.4
 * So oneDNN takes every f32 pass but one: the backward-data of an
 * ungrouped convolution of an input with at most 3 channels (an image's
 * first layer; oneDNN's blocked kernels pad the channels to 16), where
 * im2col + GEMM was 2-4x faster. */
static bool use_dnnl(const conv_geom *g, tt_dtype dt, int pass)
{
    int b = conv_backend();
    if (dt != TT_F32 || b == TT_CONV_GEMM)
        return false;
    if (b == TT_CONV_ONEDNN)
        return true;
    return !(pass == CONV_PASS_BWD_DATA && g->G == 1 && g->C <= 3);
}

static tt_status run_pass(int pass, const conv_geom *g, tt_dtype dt, const char *a,
                          const char *b, char *c)
{
    if (use_dnnl(g, dt, pass)) {
        bool ran;
        tt_status st = conv_dnnl_run(pass, g, (void *const[]){(void *)a, (void *)b, c}, &ran);
        if (st || ran)
            return st;
    }
    switch (pass) {
    case CONV_PASS_FWD:
        return conv_gemm_fwd(g, dt, a, b, c);
    case CONV_PASS_BWD_DATA:
        return conv_gemm_bwd_data(g, dt, a, b, c);
    default:
        return conv_gemm_bwd_weight(g, dt, a, b, c);
    }
}

tt_status conv_fwd(const conv_geom *g, tt_dtype dt, const char *x, const char *w, char *y)
{
    return run_pass(CONV_PASS_FWD, g, dt, x, w, y);
}

tt_status conv_bwd_data(const conv_geom *g, tt_dtype dt, const char *dy, const char *w, char *dx)
{
    return run_pass(CONV_PASS_BWD_DATA, g, dt, dy, w, dx);
}

tt_status conv_bwd_weight(const conv_geom *g, tt_dtype dt, const char *x, const char *dy,
                          char *dw)
{
    return run_pass(CONV_PASS_BWD_WEIGHTS, g, dt, x, dy, dw);
}
