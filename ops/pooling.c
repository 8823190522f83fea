/* Pooling: max (with indices) and average, 1-d and 2-d, adaptive average, and their backward ops.
 *
 * The kernels are our own loops over [N, C, H, W] planes read and written
 * through their strides (any layout in, no copy), in parallel over the
 * N*C planes. The 1-d forms are wrappers over the 2-d ops on an input with
 * a size-1 H dim, as PyTorch composes them (rows of their own, so a graph
 * keeps one node per call).
 *
 * oneDNN 2.6's pooling primitives, measured against these loops (f32,
 * 2 threads of a 2-core machine shared with other builds, so +-40%; ms per
 * call, forward / backward; oneDNN's primitives and buffers made once,
 * fresh outputs for ours):
 *   max 3x3/2 pad 1, [32, 64, 56, 56]  NCHW ours  8-14 / 3-5   oneDNN 6-8 / 5-8
 *                                      NHWC ours 14 / 31       oneDNN 12-22 / 10-21
 *   avg 3x3/2 pad 1, same              NCHW ours  6-7 / 13     oneDNN 4 / 8-9
 *                                      NHWC ours 11 / 9        oneDNN 7-20 / 4-22
 *   adaptive 512x7x7 -> 1x1, batch 32  NCHW ours 0.5 / 0.5     oneDNN 6-8 / 1-3
 *                                      NHWC ours 1-1.7 / 4-7   oneDNN 0.04 / 0.06
 * (A first version taking one output at a time ran max pooling forward at
 * 90 ms, channels last 220: see max_fwd, max_fwd_cl.) oneDNN is not used:
 * on NCHW, the layout our convolutions keep, it wins by under 2x, and its
 * max pooling returns its own workspace, not PyTorch's flat indices (which
 * the backward op takes as an argument and callers read), with other NaN
 * and tie rules; its
 * average pooling divides windows that overhang in ceil mode by the full
 * kernel size where PyTorch clips them, and has no divisor_override.
 * Adaptive pooling on channels last (a plane at a time still) is where a
 * channel-innermost loop like the others' would pay next. */
/* transformer_impl.h for the small argument checks the op families share
 * (want_float, want_sizes, is_fake). */
#include "pool_args.h"
#include "transformer_impl.h"
#include "tt_nn.h"

#include <stdatomic.h>

/* ------------------------------------------------------------- arguments */

static tt_value pair_value(const int64_t *v) { return tt_v_ints(2, v); }

/* ----------------------------------------------------------------- plans */

/* One pooling call over real data: planes of [N*C], the "in" side (the
 * input, or the gradient of the input) and the "out" side (the result or
 * its gradient, and the indices), each with its own element strides
 * n, c, h, w (n 0 for a 3-d tensor). */
typedef struct {
    const pool_args *a;
    char *in, *out;
    int64_t *ind;
    int64_t C, H, W, OH, OW;
    int64_t is[4], os[4], xs[4];
    atomic_int bad; /* backward: an index out of its plane */
} pool_plan;

static void plan_strides(const tt_tensor *t, int64_t s[4])
{
    int nd = tt_ndim(t);
    s[0] = nd == 4 ? tt_strides(t)[0] : 0;
    for (int d = 1; d < 4; d++)
        s[d] = tt_strides(t)[nd - 4 + d];
}

/* A plan over x (input side, sizes [.., C, H, W]) and y (output side). */
static void plan_init(pool_plan *p, const pool_args *a, const tt_tensor *x, const tt_tensor *y)
{
    int nd = tt_ndim(x);
    *p = (pool_plan){.a = a, .C = tt_sizes(x)[nd - 3], .H = tt_sizes(x)[nd - 2],
                     .W = tt_sizes(x)[nd - 1], .OH = tt_sizes(y)[nd - 2],
                     .OW = tt_sizes(y)[nd - 1]};
    plan_strides(x, p->is);
    plan_strides(y, p->os);
}

static int64_t plan_planes(const tt_tensor *x)
{
    return tt_ndim(x) == 4 ? tt_sizes(x)[0] * tt_sizes(x)[1] : tt_sizes(x)[0];
}

/* Planes per task: about 64k element reads each. */
static int64_t plan_grain(const pool_plan *p, int64_t per_out)
{
    /* in double: a huge kernel times the output could overflow int64 */
    double work = (double)p->OH * (double)p->OW * (double)(per_out > 0 ? per_out : 1) +
                  (double)p->H * (double)p->W;
    return work >= 65536 ? 1 : 65536 / (int64_t)(work > 1 ? work : 1) + 1;
}

/* Tasks over output rows (n, oh) for the channels-last kernels: about 64k
 * element reads each (in double: no overflow). */
static int64_t row_grain(const pool_plan *p, const pool_args *a)
{
    double per_row = (double)p->OW * (double)p->C * (double)a->k[0] * (double)a->k[1];
    return per_row >= 65536 ? 1 : 65536 / (int64_t)(per_row > 1 ? per_row : 1) + 1;
}

/* Whether the channels-last kernels apply: C the unit stride of x and y. */
static bool plan_channels_last(const pool_plan *p, int nd)
{
    return nd == 4 && p->C > 1 && p->is[1] == 1 && p->os[1] == 1;
}

/* ------------------------------------------------------------ max pool */

/* PyTorch's cpu_max_pool: the window of (oh, ow) is rows ih0, ih0 + dH,
 * ... below ih0 + (kH - 1) dH + 1, clipped to the input, and the columns
 * likewise; a value replaces the maximum when it is larger or NaN (so the
 * first of equal values wins, and the last NaN), starting from -inf at
 * the window's first element.
 *
 * Here a row of outputs is computed at once, in chunks of MAX_CHUNK: for
 * each tap (h, j) of the window, in the window's row-major order, every
 * output of the chunk whose tap lies inside the input takes it. The
 * innermost loop runs over outputs, branch-free, so it vectorizes (the
 * common unit and stride-2 cases with constant strides); one output at a
 * time is a chain of unpredictable branches, several times slower. */
#define MAX_CHUNK 256
/* The outputs of the chunk [ow0, ow1) whose tap at column ow * sw + off
 * is a column of x (0 <= it < W): [*lo, *hi). */
static inline void tap_outputs(int64_t off, int64_t sw, int64_t W, int64_t ow0, int64_t ow1,
                               int64_t *lo, int64_t *hi)
{
    int64_t l = off >= 0 ? 0 : (-off + sw - 1) / sw;
    int64_t h = W - off <= 0 ? 0 : (W - off + sw - 1) / sw;
    *lo = l > ow0 ? l : ow0;
    *hi = h < ow1 ? h : ow1;
}
/* TAPS(T, XSTEP) over outputs [lo, hi), with the column step a constant
 * in the common unit-stride cases (so that those loops vectorize). */
#define BY_XSTEP(TAPS, T)                                                      \
    do {                                                                       \
        if (is3 == 1 && sw == 1)                                               \
            TAPS(T, 1)                                                         \
        else if (is3 == 1 && sw == 2)                                          \
            TAPS(T, 2)                                                         \
        else                                                                   \
            TAPS(T, sw)                                                        \
    } while (0)
#define MAX_TAPS(T, XSTEP)                                                     \
    for (int64_t ow = lo; ow < hi; ow++) {                                     \
        T v = row[(ow * (XSTEP) + off) * is3];                                 \
        int64_t take = (v > m[ow - ow0]) | (v != v);                           \
        m[ow - ow0] = take ? v : m[ow - ow0];                                  \
        mi[ow - ow0] = take ? h * W + ow * (XSTEP) + off : mi[ow - ow0];       \
    }
#define MAX_FWD(T)                                                             \
    CPU_CLONES static void max_fwd_##T(int64_t b, int64_t e, void *vp)         \
    {                                                                          \
        const pool_plan *p = vp;                                               \
        /* locals: the index stores below could alias the plan */             \
        const int64_t kh = p->a->k[0], kw = p->a->k[1], sh = p->a->s[0];      \
        const int64_t sw = p->a->s[1], ph = p->a->p[0], pw = p->a->p[1];      \
        const int64_t dh = p->a->d[0], dw = p->a->d[1], H = p->H, W = p->W;   \
        const int64_t C = p->C, OH = p->OH, OW = p->OW;                        \
        const int64_t is2 = p->is[2], is3 = p->is[3], os2 = p->os[2];          \
        const int64_t os3 = p->os[3], xs2 = p->xs[2], xs3 = p->xs[3];          \
        T m[MAX_CHUNK];                                                        \
        int64_t mi[MAX_CHUNK];                                                 \
        for (int64_t pl = b; pl < e; pl++) {                                   \
            int64_t n = pl / C, c = pl % C;                                    \
            const T *x = (const T *)p->in + n * p->is[0] + c * p->is[1];       \
            T *y = (T *)p->out + n * p->os[0] + c * p->os[1];                  \
            int64_t *ix = p->ind + n * p->xs[0] + c * p->xs[1];                \
            for (int64_t oh = 0; oh < OH; oh++) {                              \
                int64_t h0 = oh * sh - ph, h1 = h0 + (kh - 1) * dh + 1;        \
                h1 = h1 < H ? h1 : H;                                          \
                while (h0 < 0)                                                 \
                    h0 += dh;                                                  \
                for (int64_t ow0 = 0; ow0 < OW; ow0 += MAX_CHUNK) {            \
                    int64_t ow1 = ow0 + MAX_CHUNK < OW ? ow0 + MAX_CHUNK : OW; \
                    for (int64_t ow = ow0; ow < ow1; ow++) {                   \
                        int64_t w0 = ow * sw - pw;                             \
                        while (w0 < 0)                                         \
                            w0 += dw;                                          \
                        m[ow - ow0] = -INFINITY;                               \
                        mi[ow - ow0] = h0 * W + w0;                            \
                    }                                                          \
                    for (int64_t h = h0; h < h1; h += dh) {                    \
                        const T *row = x + h * is2;                            \
                        for (int64_t j = 0; j < kw; j++) {                     \
                            int64_t off = j * dw - pw, lo, hi;                 \
                            tap_outputs(off, sw, W, ow0, ow1, &lo, &hi);       \
                            BY_XSTEP(MAX_TAPS, T);                             \
                        }                                                      \
                    }                                                          \
                    for (int64_t ow = ow0; ow < ow1; ow++) {                   \
                        y[oh * os2 + ow * os3] = m[ow - ow0];                  \
                        ix[oh * xs2 + ow * xs3] = mi[ow - ow0];                \
                    }                                                          \
                }                                                              \
            }                                                                  \
        }                                                                      \
    }
MAX_FWD(float)
MAX_FWD(double)

/* Small planes (a ResNet's 16x16 stem output pooled to 8x8): rows of a
 * few outputs make the chunked loop above mostly set-up, and one output
 * at a time is a chain of dependent compares (about 10 cycles a tap).
 * Here each plane is copied into a buffer padded with -inf on every side
 * a window can reach, so every tap of every window is in bounds; then for
 * each tap, in the window's row-major order, one loop over all the
 * plane's outputs (independent, so it vectorizes with gathers) through
 * tables of where each output's window starts. A padded -inf never
 * replaces the maximum (it is not larger than the -inf start, nor NaN),
 * so values and indices are PyTorch's: the first of equal values, the
 * last NaN, the window's first element when all are -inf. */
#define SMALL_PAD 4096 /* padded plane elements at most */
typedef struct {
    int64_t PH, PW; /* the padded plane */
    int64_t *at;    /* per output: its window's first tap in the padded plane */
    int64_t *base;  /* per output: the flat input index of that tap (maybe outside) */
    int64_t *first; /* per output: PyTorch's starting index, its first valid tap */
} small_tables;

static void padded_size(const pool_plan *p, int64_t *PH, int64_t *PW)
{
    const pool_args *a = p->a;
    int64_t h = (p->OH - 1) * a->s[0] + (a->k[0] - 1) * a->d[0] + 1;
    int64_t w = (p->OW - 1) * a->s[1] + (a->k[1] - 1) * a->d[1] + 1;
    *PH = h > p->H + a->p[0] ? h : p->H + a->p[0];
    *PW = w > p->W + a->p[1] ? w : p->W + a->p[1];
}

static bool small_plane(const pool_plan *p)
{
    int64_t PH, PW;
    padded_size(p, &PH, &PW);
    return p->OW < 32 && PH * PW <= SMALL_PAD;
}

/* The tables of plan p (one allocation; false when out of memory). */
static bool small_tables_make(const pool_plan *p, small_tables *t)
{
    const pool_args *a = p->a;
    int64_t n = p->OH * p->OW;
    padded_size(p, &t->PH, &t->PW);
    if (!(t->at = tt__malloc(sizeof(int64_t) * 3 * (size_t)(n > 0 ? n : 1))))
        return false;
    t->base = t->at + n, t->first = t->base + n;
    for (int64_t oh = 0, o = 0; oh < p->OH; oh++)
        for (int64_t ow = 0; ow < p->OW; ow++, o++) {
            int64_t h = oh * a->s[0], w = ow * a->s[1];
            int64_t h0 = h - a->p[0], w0 = w - a->p[1];
            t->at[o] = h * t->PW + w;
            t->base[o] = h0 * p->W + w0;
            while (h0 < 0)
                h0 += a->d[0];
            while (w0 < 0)
                w0 += a->d[1];
            t->first[o] = h0 * p->W + w0;
        }
    return true;
}

#define MAX_FWD_SMALL(T, U)                                                    \
    CPU_CLONES static void max_fwd_small_##T(int64_t b, int64_t e, void *vp)   \
    {                                                                          \
        const pool_plan *p = vp;                                               \
        small_tables t;                                                        \
        if (!small_tables_make(p, &t)) {                                       \
            tt_clear_error();                                                  \
            max_fwd_##T(b, e, vp); /* no tables: the general loop */           \
            return;                                                            \
        }                                                                      \
        const int64_t kh = p->a->k[0], kw = p->a->k[1], ph = p->a->p[0];      \
        const int64_t pw = p->a->p[1], dh = p->a->d[0], dw = p->a->d[1];      \
        const int64_t H = p->H, W = p->W, C = p->C, OW = p->OW;                \
        const int64_t n = p->OH * OW, PW = t.PW;                               \
        T pad[SMALL_PAD], m[SMALL_PAD];                                        \
        int64_t mi[SMALL_PAD];                                                 \
        for (int64_t i = 0; i < t.PH * PW; i++)                                \
            pad[i] = -INFINITY;                                                \
        for (int64_t pl = b; pl < e; pl++) {                                   \
            int64_t nn = pl / C, c = pl % C;                                   \
            const T *x = (const T *)p->in + nn * p->is[0] + c * p->is[1];      \
            T *y = (T *)p->out + nn * p->os[0] + c * p->os[1];                 \
            int64_t *ix = p->ind + nn * p->xs[0] + c * p->xs[1];               \
            for (int64_t h = 0; h < H; h++)                                    \
                for (int64_t w = 0; w < W; w++)                                \
                    pad[(h + ph) * PW + w + pw] = x[h * p->is[2] + w * p->is[3]]; \
            for (int64_t o = 0; o < n; o++) {                                  \
                m[o] = -INFINITY;                                              \
                mi[o] = t.first[o];                                            \
            }                                                                  \
            for (int64_t i = 0; i < kh; i++)                                   \
                for (int64_t j = 0; j < kw; j++) {                             \
                    const T *tap = pad + i * dh * PW + j * dw;                 \
                    const int64_t *base = t.base, *at = t.at;                  \
                    int64_t d = i * dh * W + j * dw;                           \
                    for (int64_t o = 0; o < n; o++) {                          \
                        /* selects by masks: a branch on random data would \
                         * mispredict half the time */                        \
                        T v = tap[at[o]];                                      \
                        bool take = (v > m[o]) | (v != v);                     \
                        U t = -(U)take, vb, mb;                                \
                        int64_t ti = -(int64_t)take;                           \
                        memcpy(&vb, &v, sizeof v);                             \
                        memcpy(&mb, &m[o], sizeof mb);                         \
                        mb = (mb & ~t) | (vb & t);                             \
                        memcpy(&m[o], &mb, sizeof mb);                         \
                        mi[o] = (mi[o] & ~ti) | ((base[o] + d) & ti);          \
                    }                                                          \
                }                                                              \
            for (int64_t o = 0; o < n; o++) {                                  \
                y[o / OW * p->os[2] + o % OW * p->os[3]] = m[o];               \
                ix[o / OW * p->xs[2] + o % OW * p->xs[3]] = mi[o];             \
            }                                                                  \
        }                                                                      \
        tt__free(t.at);                                                        \
    }
MAX_FWD_SMALL(float, uint32_t)
MAX_FWD_SMALL(double, uint64_t)

/* Channels last (C the unit stride of input and outputs): a task takes
 * output rows (n, oh), and the innermost loop runs over the channels,
 * contiguous, for each window tap in PyTorch's order. A plane at a time,
 * every read would be C elements from the last. */
#define MAX_FWD_CL(T)                                                          \
    CPU_CLONES static void max_fwd_cl_##T(int64_t b, int64_t e, void *vp)      \
    {                                                                          \
        const pool_plan *p = vp;                                               \
        const int64_t kh = p->a->k[0], kw = p->a->k[1], sh = p->a->s[0];      \
        const int64_t sw = p->a->s[1], ph = p->a->p[0], pw = p->a->p[1];      \
        const int64_t dh = p->a->d[0], dw = p->a->d[1], H = p->H, W = p->W;   \
        const int64_t C = p->C, OH = p->OH, OW = p->OW;                        \
        const int64_t is2 = p->is[2], is3 = p->is[3], os3 = p->os[3];          \
        const int64_t xs3 = p->xs[3];                                          \
        T m[MAX_CHUNK];                                                        \
        int64_t mi[MAX_CHUNK];                                                 \
        for (int64_t r = b; r < e; r++) {                                      \
            int64_t n = r / OH, oh = r % OH;                                   \
            const T *xn = (const T *)p->in + n * p->is[0];                     \
            T *y = (T *)p->out + n * p->os[0] + oh * p->os[2];                 \
            int64_t *ix = p->ind + n * p->xs[0] + oh * p->xs[2];               \
            int64_t h0 = oh * sh - ph, h1 = h0 + (kh - 1) * dh + 1;            \
            h1 = h1 < H ? h1 : H;                                              \
            while (h0 < 0)                                                     \
                h0 += dh;                                                      \
            for (int64_t ow = 0; ow < OW; ow++) {                              \
                int64_t w0 = ow * sw - pw, w1 = w0 + (kw - 1) * dw + 1;        \
                w1 = w1 < W ? w1 : W;                                          \
                while (w0 < 0)                                                 \
                    w0 += dw;                                                  \
                for (int64_t c0 = 0; c0 < C; c0 += MAX_CHUNK) {                \
                    int64_t nc = C - c0 < MAX_CHUNK ? C - c0 : MAX_CHUNK;      \
                    for (int64_t c = 0; c < nc; c++)                           \
                        m[c] = -INFINITY, mi[c] = h0 * W + w0;                 \
                    for (int64_t h = h0; h < h1; h += dh)                      \
                        for (int64_t w = w0; w < w1; w += dw) {                \
                            const T *px = xn + h * is2 + w * is3 + c0;         \
                            int64_t idx = h * W + w;                           \
                            for (int64_t c = 0; c < nc; c++) {                 \
                                T v = px[c];                                   \
                                int64_t take = (v > m[c]) | (v != v);          \
                                m[c] = take ? v : m[c];                        \
                                mi[c] = take ? idx : mi[c];                    \
                            }                                                  \
                        }                                                      \
                    for (int64_t c = 0; c < nc; c++) {                         \
                        y[ow * os3 + c0 + c] = m[c];                           \
                        ix[ow * xs3 + c0 + c] = mi[c];                         \
                    }                                                          \
                }                                                              \
            }                                                                  \
        }                                                                      \
    }
MAX_FWD_CL(float)
MAX_FWD_CL(double)

/* Small planes with many channels (ResNet-18's stem: [32, 64, 16, 16]
 * pooled 3x3/2 to 8x8): an image at a time, its planes turned channels
 * last into a buffer, pooled by the channels-last kernel (16 channels a
 * vector for every tap), and turned back. [32, 64, 16, 16] took 3.1 ms
 * CPU by planes (max_fwd_small), 0.23 ms when the input already was
 * channels last; the turns cost a pass over each side, in cache. */
#define MAX_FWD_VIA_CL(T)                                                      \
    CPU_CLONES static void max_fwd_via_cl_##T(int64_t b, int64_t e, void *vp)  \
    {                                                                          \
        const pool_plan *p = vp;                                               \
        const int64_t C = p->C, HW = p->H * p->W, OHW = p->OH * p->OW;         \
        const int64_t W = p->W, OW = p->OW;                                    \
        T *bin = tt__malloc(sizeof(T) * (size_t)(C * (HW + OHW)));             \
        int64_t *bix = bin ? tt__malloc(sizeof(int64_t) * (size_t)(C * OHW)) : NULL; \
        if (!bix) { /* out of memory for the buffers: plane by plane */        \
            tt__free(bin);                                                     \
            tt_clear_error();                                                  \
            max_fwd_small_##T(b * C, e * C, vp);                               \
            return;                                                            \
        }                                                                      \
        T *bout = bin + C * HW;                                                \
        pool_plan q = *p;                                                      \
        q.in = (char *)bin, q.out = (char *)bout, q.ind = bix;                 \
        q.is[0] = q.os[0] = q.xs[0] = 0;                                       \
        q.is[1] = q.os[1] = q.xs[1] = 1;                                       \
        q.is[2] = W * C, q.is[3] = C;                                          \
        q.os[2] = q.xs[2] = OW * C, q.os[3] = q.xs[3] = C;                     \
        for (int64_t n = b; n < e; n++) {                                      \
            const T *x = (const T *)p->in + n * p->is[0];                      \
            for (int64_t c = 0; c < C; c++)                                    \
                for (int64_t h = 0; h < p->H; h++)                             \
                    for (int64_t w = 0; w < W; w++)                            \
                        bin[(h * W + w) * C + c] =                             \
                            x[c * p->is[1] + h * p->is[2] + w * p->is[3]];     \
            max_fwd_cl_##T(0, p->OH, &q);                                      \
            T *y = (T *)p->out + n * p->os[0];                                 \
            int64_t *ix = p->ind + n * p->xs[0];                               \
            for (int64_t c = 0; c < C; c++)                                    \
                for (int64_t oh = 0; oh < p->OH; oh++)                         \
                    for (int64_t ow = 0; ow < OW; ow++) {                      \
                        int64_t o = (oh * OW + ow) * C + c;                    \
                        y[c * p->os[1] + oh * p->os[2] + ow * p->os[3]] = bout[o]; \
                        ix[c * p->xs[1] + oh * p->xs[2] + ow * p->xs[3]] = bix[o]; \
                    }                                                          \
        }                                                                      \
        tt__free(bix);                                                         \
        tt__free(bin);                                                         \
    }
MAX_FWD_VIA_CL(float)
MAX_FWD_VIA_CL(double)

/* The sizes of a pooling result: x's with the last two replaced. */
static void pooled_sizes(const tt_tensor *x, const tt_size ohw[3], tt_size *sizes)
{
    int nd = tt_ndim(x);
    for (int d = 0; d < nd - 2; d++)
        sizes[d] = tt_sizes(x)[d];
    sizes[nd - 2] = ohw[0], sizes[nd - 1] = ohw[1];
}

/* tt::max_pool2d_with_indices: the values and their flat indices, both in
 * the layout PyTorch gives them (channels last for a channels-last input). */
static tt_status max_pool2d(const char *op, const tt_tensor *x, const pool_args *a, bool fake,
                            tt_tensor **y, tt_tensor **ind)
{
    tt_size ohw[3], sizes[4], strides[4];
    *y = *ind = NULL;
    tt_status st = tt__pool_check(op, x, a, 2, 1, true, false, false, ohw);
    if (st)
        return st;
    int nd = tt_ndim(x);
    pooled_sizes(x, ohw, sizes);
    tt__nchw_out_strides(x, nd, sizes, strides);
    fake = fake || is_fake(x);
    *y = tt__ops_new(fake, nd, sizes, strides, tt_dtype_of(x));
    *ind = *y ? tt__ops_new(fake, nd, sizes, strides, TT_I64) : NULL;
    if (!*ind) {
        *y = tt_release(*y);
        return tt_errcode();
    }
    if (fake)
        return TT_OK;
    pool_plan p;
    plan_init(&p, a, x, *y);
    p.in = tt__ptr(x), p.out = tt__ptr(*y), p.ind = (int64_t *)tt__ptr(*ind);
    plan_strides(*ind, p.xs);
    bool f64 = tt_dtype_of(x) == TT_F64;
    if (plan_channels_last(&p, nd) && p.xs[1] == 1) {
        tt_parallel_for(tt_sizes(x)[0] * p.OH, row_grain(&p, a),
                        f64 ? max_fwd_cl_double : max_fwd_cl_float, &p);
        return TT_OK;
    }
    if (small_plane(&p) && nd == 4 && p.C >= 16)
        tt_parallel_for(tt_sizes(x)[0], 1, f64 ? max_fwd_via_cl_double : max_fwd_via_cl_float,
                        &p);
    else if (small_plane(&p))
        tt_parallel_for(plan_planes(x), plan_grain(&p, a->k[0] * a->k[1]),
                        f64 ? max_fwd_small_double : max_fwd_small_float, &p);
    else
        tt_parallel_for(plan_planes(x), plan_grain(&p, a->k[0] * a->k[1]),
                        f64 ? max_fwd_double : max_fwd_float, &p);
    return TT_OK;
}

static tt_status max_pool2d_kernel(tt_frame *f)
{
    tt_tensor *x, *y, *ind;
    pool_args a;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &x)) || (st = tt__pool_frame_args(f, 1, true, 2, &a)) ||
        (st = max_pool2d(tt__op_label(TT_OP_MAX_POOL2D_WITH_INDICES), x, &a,
                         tt_frame_is_fake(f), &y, &ind)))
        return st;
    st = tt_return(f, 0, y);
    if (st) {
        tt_release(ind);
        return st;
    }
    return tt_return(f, 1, ind);
}

/* grad_input: zeros in self's layout, then each output gradient added at
 * its index in its plane. An index outside the plane is refused (PyTorch
 * would write out of bounds). */
#define MAX_BWD(T)                                                             \
    static void max_bwd_##T(int64_t b, int64_t e, void *vp)                    \
    {                                                                          \
        pool_plan *p = vp;                                                     \
        for (int64_t pl = b; pl < e; pl++) {                                   \
            int64_t n = pl / p->C, c = pl % p->C;                              \
            T *gi = (T *)p->in + n * p->is[0] + c * p->is[1];                  \
            const T *go = (const T *)p->out + n * p->os[0] + c * p->os[1];     \
            const int64_t *ix = p->ind + n * p->xs[0] + c * p->xs[1];          \
            for (int64_t oh = 0; oh < p->OH; oh++)                             \
                for (int64_t ow = 0; ow < p->OW; ow++) {                       \
                    int64_t i = ix[oh * p->xs[2] + ow * p->xs[3]];             \
                    if (i < 0 || i >= p->H * p->W) {                           \
                        atomic_store(&p->bad, 1);                              \
                        continue;                                              \
                    }                                                          \
                    gi[(i / p->W) * p->is[2] + (i % p->W) * p->is[3]] +=       \
                        go[oh * p->os[2] + ow * p->os[3]];                     \
                }                                                              \
        }                                                                      \
    }
MAX_BWD(float)
MAX_BWD(double)

/* The channels-last backward kernels: tasks over images n (windows of
 * neighbouring outputs overlap, so rows of one image cannot be split),
 * the channels innermost; each element still gets its additions in
 * output order, as in the plane kernels and PyTorch's. */
#define MAX_BWD_CL(T)                                                          \
    static void max_bwd_cl_##T(int64_t b, int64_t e, void *vp)                 \
    {                                                                          \
        pool_plan *p = vp;                                                     \
        const int64_t C = p->C, W = p->W, HW = p->H * p->W;                    \
        for (int64_t n = b; n < e; n++) {                                      \
            T *gi = (T *)p->in + n * p->is[0];                                 \
            const T *go = (const T *)p->out + n * p->os[0];                    \
            const int64_t *ix = p->ind + n * p->xs[0];                         \
            for (int64_t oh = 0; oh < p->OH; oh++)                             \
                for (int64_t ow = 0; ow < p->OW; ow++) {                       \
                    const T *g = go + oh * p->os[2] + ow * p->os[3];           \
                    const int64_t *ii = ix + oh * p->xs[2] + ow * p->xs[3];    \
                    for (int64_t c = 0; c < C; c++) {                          \
                        int64_t i = ii[c * p->xs[1]];                          \
                        if (i < 0 || i >= HW) {                                \
                            atomic_store(&p->bad, 1);                          \
                            continue;                                          \
                        }                                                      \
                        gi[(i / W) * p->is[2] + (i % W) * p->is[3] + c] += g[c * p->os[1]]; \
                    }                                                          \
                }                                                              \
        }                                                                      \
    }
MAX_BWD_CL(float)
MAX_BWD_CL(double)


static tt_tensor *max_pool2d_backward_impl(const tt_tensor *g, const tt_tensor *x,
                                           const pool_args *a, const tt_tensor *ind, bool fake)
{
    const char *op = tt__op_label(TT_OP_MAX_POOL2D_WITH_INDICES_BACKWARD);
    tt_size ohw[3], osz[4], strides[4];
    if (tt__pool_check(op, x, a, 2, 2, true, false, false, ohw) ||
        want_same_dtype(op, "grad_output", 1, g, x))
        return NULL;
    int nd = tt_ndim(x);
    pooled_sizes(x, ohw, osz);
    if (want_sizes(op, "grad_output", 1, g, nd, osz) || want_sizes(op, "indices", 8, ind, nd, osz))
        return NULL;
    if (tt_dtype_of(ind) != TT_I64) {
        tt_error(TT_EDTYPE, "%s: argument 'indices' (#8): expected i64, got %s", op,
                 tt_dtype_name(tt_dtype_of(ind)));
        return NULL;
    }
    tt__nchw_out_strides(x, nd, tt_sizes(x), strides);
    fake = fake || is_fake(g) || is_fake(x) || is_fake(ind);
    tt_tensor *gi = tt__ops_new(fake, nd, tt_sizes(x), strides, tt_dtype_of(x));
    if (!gi || fake)
        return gi;
    /* A dense result (contiguous or channels last): zero its bytes. */
    memset(tt__ptr(gi), 0, (size_t)tt_numel(gi) * tt_dtype_size(tt_dtype_of(gi)));
    pool_plan p;
    plan_init(&p, a, x, g);
    p.in = tt__ptr(gi), p.out = tt__ptr(g), p.ind = (int64_t *)tt__ptr(ind);
    plan_strides(gi, p.is);
    plan_strides(ind, p.xs);
    bool f64 = tt_dtype_of(x) == TT_F64;
    if (nd == 4 && p.C > 1 && p.is[1] == 1)
        tt_parallel_for(tt_sizes(x)[0], 1, f64 ? max_bwd_cl_double : max_bwd_cl_float, &p);
    else
        tt_parallel_for(plan_planes(x), plan_grain(&p, 1), f64 ? max_bwd_double : max_bwd_float,
                        &p);
    if (atomic_load(&p.bad)) {
        tt_error(TT_EINVAL, "%s: argument 'indices' (#8): an index is outside its input plane "
                            "of %lld elements", op, (long long)(p.H * p.W));
        return tt_release(gi);
    }
    return gi;
}

static tt_status max_pool2d_backward_kernel(tt_frame *f)
{
    tt_tensor *g, *x, *ind;
    pool_args a;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &g)) || (st = tt_arg_tensor(f, 1, &x)) ||
        (st = tt__pool_frame_args(f, 2, true, 2, &a)) || (st = tt_arg_tensor(f, 7, &ind)))
        return st;
    tt_tensor *gi = max_pool2d_backward_impl(g, x, &a, ind, tt_frame_is_fake(f));
    return gi ? tt_return(f, 0, gi) : tt_errcode();
}

/* ------------------------------------------------------------ avg pool */

/* PyTorch's cpu_avg_pool: the window of (oh, ow) spans rows oh sH - padH
 * up to kH rows, clipped to the padded input for the pool size (what
 * count_include_pad divides by) and to the input for the sum; an empty
 * window gives 0. The sum is in T, as PyTorch's (float for f32, int64 for
 * i64, where the division truncates as C++'s). */
typedef struct {
    int64_t h0, h1, w0, w1; /* the window clipped to the input */
    int64_t div;            /* what its sum is divided by */
} avg_win;

static inline avg_win avg_window(const pool_args *a, const pool_plan *p, int64_t oh, int64_t ow)
{
    int64_t h0 = oh * a->s[0] - a->p[0], w0 = ow * a->s[1] - a->p[1];
    int64_t h1 = h0 + a->k[0] < p->H + a->p[0] ? h0 + a->k[0] : p->H + a->p[0];
    int64_t w1 = w0 + a->k[1] < p->W + a->p[1] ? w0 + a->k[1] : p->W + a->p[1];
    int64_t pool = (h1 - h0) * (w1 - w0);
    avg_win r = {h0 > 0 ? h0 : 0, h1 < p->H ? h1 : p->H, w0 > 0 ? w0 : 0, w1 < p->W ? w1 : p->W, 0};
    r.div = a->divisor ? a->divisor : a->count_include_pad ? pool : (r.h1 - r.h0) * (r.w1 - r.w0);
    return r;
}

/* A row of outputs at once (as max pooling's, and in PyTorch's order for
 * each output's sum: the window's rows, then its columns). */
#define AVG_TAPS(T, XSTEP)                                                     \
    for (int64_t ow = lo; ow < hi; ow++)                                       \
        sum[ow - ow0] += row[(ow * (XSTEP) + off) * is3];
#define AVG_FWD(T)                                                             \
    CPU_CLONES static void avg_fwd_##T(int64_t b, int64_t e, void *vp)         \
    {                                                                          \
        const pool_plan *p = vp;                                               \
        const pool_args *a = p->a;                                             \
        const int64_t kw = a->k[1], sw = a->s[1], pw = a->p[1];                \
        const int64_t W = p->W, C = p->C, OH = p->OH, OW = p->OW;              \
        const int64_t is2 = p->is[2], is3 = p->is[3];                          \
        T sum[MAX_CHUNK];                                                      \
        for (int64_t pl = b; pl < e; pl++) {                                   \
            int64_t n = pl / C, c = pl % C;                                    \
            const T *x = (const T *)p->in + n * p->is[0] + c * p->is[1];       \
            T *y = (T *)p->out + n * p->os[0] + c * p->os[1];                  \
            for (int64_t oh = 0; oh < OH; oh++) {                              \
                avg_win rw = avg_window(a, p, oh, 0);                          \
                int64_t h0 = rw.h0, h1 = rw.h1;                                \
                for (int64_t ow0 = 0; ow0 < OW; ow0 += MAX_CHUNK) {            \
                    int64_t ow1 = ow0 + MAX_CHUNK < OW ? ow0 + MAX_CHUNK : OW; \
                    for (int64_t ow = ow0; ow < ow1; ow++)                     \
                        sum[ow - ow0] = 0;                                     \
                    for (int64_t h = h0; h < h1; h++) {                        \
                        const T *row = x + h * is2;                            \
                        for (int64_t j = 0; j < kw; j++) {                     \
                            int64_t off = j - pw, lo, hi;                      \
                            tap_outputs(off, sw, W, ow0, ow1, &lo, &hi);       \
                            BY_XSTEP(AVG_TAPS, T);                             \
                        }                                                      \
                    }                                                          \
                    for (int64_t ow = ow0; ow < ow1; ow++) {                   \
                        avg_win wn = avg_window(a, p, oh, ow);                 \
                        int64_t h0 = wn.h0, h1 = wn.h1, w0 = wn.w0, w1 = wn.w1;\
                        int64_t div = wn.div;                                  \
                        y[oh * p->os[2] + ow * p->os[3]] =                     \
                            h0 >= h1 || w0 >= w1 ? (T)0 : sum[ow - ow0] / (T)div; \
                    }                                                          \
                }                                                              \
            }                                                                  \
        }                                                                      \
    }
AVG_FWD(float)
AVG_FWD(double)
AVG_FWD(int64_t)

#define AVG_FWD_CL(T)                                                          \
    CPU_CLONES static void avg_fwd_cl_##T(int64_t b, int64_t e, void *vp)      \
    {                                                                          \
        const pool_plan *p = vp;                                               \
        const pool_args *a = p->a;                                             \
        const int64_t C = p->C, OH = p->OH, OW = p->OW;                        \
        const int64_t is2 = p->is[2], is3 = p->is[3], os3 = p->os[3];          \
        T sum[MAX_CHUNK];                                                      \
        for (int64_t r = b; r < e; r++) {                                      \
            int64_t n = r / OH, oh = r % OH;                                   \
            const T *xn = (const T *)p->in + n * p->is[0];                     \
            T *y = (T *)p->out + n * p->os[0] + oh * p->os[2];                 \
            for (int64_t ow = 0; ow < OW; ow++) {                              \
                avg_win wn = avg_window(a, p, oh, ow);                         \
                int64_t h0 = wn.h0, h1 = wn.h1, w0 = wn.w0, w1 = wn.w1;        \
                int64_t div = wn.div;                                          \
                for (int64_t c0 = 0; c0 < C; c0 += MAX_CHUNK) {                \
                    int64_t nc = C - c0 < MAX_CHUNK ? C - c0 : MAX_CHUNK;      \
                    for (int64_t c = 0; c < nc; c++)                           \
                        sum[c] = 0;                                            \
                    for (int64_t h = h0; h < h1; h++)                          \
                        for (int64_t w = w0; w < w1; w++) {                    \
                            const T *px = xn + h * is2 + w * is3 + c0;         \
                            for (int64_t c = 0; c < nc; c++)                   \
                                sum[c] += px[c];                               \
                        }                                                      \
                    bool empty = h0 >= h1 || w0 >= w1;                         \
                    for (int64_t c = 0; c < nc; c++)                           \
                        y[ow * os3 + c0 + c] = empty ? (T)0 : sum[c] / (T)div; \
                }                                                              \
            }                                                                  \
        }                                                                      \
    }
AVG_FWD_CL(float)
AVG_FWD_CL(double)
AVG_FWD_CL(int64_t)

/* Each output gradient divided by its window's divisor, added to the
 * window's (clipped) elements: PyTorch's cpu_avg_pool_backward. */
#define AVG_BWD(T)                                                             \
    static void avg_bwd_##T(int64_t b, int64_t e, void *vp)                    \
    {                                                                          \
        pool_plan *p = vp;                                                     \
        const pool_args *a = p->a;                                             \
        for (int64_t pl = b; pl < e; pl++) {                                   \
            int64_t n = pl / p->C, c = pl % p->C;                              \
            T *gi = (T *)p->in + n * p->is[0] + c * p->is[1];                  \
            const T *go = (const T *)p->out + n * p->os[0] + c * p->os[1];     \
            for (int64_t oh = 0; oh < p->OH; oh++)                             \
                for (int64_t ow = 0; ow < p->OW; ow++) {                       \
                    avg_win wn = avg_window(a, p, oh, ow);                     \
                    int64_t h0 = wn.h0, h1 = wn.h1, w0 = wn.w0, w1 = wn.w1;    \
                    int64_t div = wn.div;                                      \
                    if (h0 >= h1 || w0 >= w1)                                  \
                        continue;                                              \
                    T d = go[oh * p->os[2] + ow * p->os[3]] / (T)div;          \
                    for (int64_t h = h0; h < h1; h++)                          \
                        for (int64_t w = w0; w < w1; w++)                      \
                            gi[h * p->is[2] + w * p->is[3]] += d;              \
                }                                                              \
        }                                                                      \
    }
AVG_BWD(float)
AVG_BWD(double)

#define AVG_BWD_CL(T)                                                          \
    static void avg_bwd_cl_##T(int64_t b, int64_t e, void *vp)                 \
    {                                                                          \
        pool_plan *p = vp;                                                     \
        const pool_args *a = p->a;                                             \
        const int64_t C = p->C;                                                \
        for (int64_t n = b; n < e; n++) {                                      \
            T *gi = (T *)p->in + n * p->is[0];                                 \
            const T *go = (const T *)p->out + n * p->os[0];                    \
            for (int64_t oh = 0; oh < p->OH; oh++)                             \
                for (int64_t ow = 0; ow < p->OW; ow++) {                       \
                    avg_win wn = avg_window(a, p, oh, ow);                     \
                    int64_t h0 = wn.h0, h1 = wn.h1, w0 = wn.w0, w1 = wn.w1;    \
                    int64_t div = wn.div;                                      \
                    if (h0 >= h1 || w0 >= w1)                                  \
                        continue;                                              \
                    const T *g = go + oh * p->os[2] + ow * p->os[3];           \
                    for (int64_t h = h0; h < h1; h++)                          \
                        for (int64_t w = w0; w < w1; w++) {                    \
                            T *px = gi + h * p->is[2] + w * p->is[3];          \
                            for (int64_t c = 0; c < C; c++)                    \
                                px[c] += g[c * p->os[1]] / (T)div;             \
                        }                                                      \
                }                                                              \
        }                                                                      \
    }
AVG_BWD_CL(float)
AVG_BWD_CL(double)


static void (*avg_fwd_fn(tt_dtype dt, bool cl))(int64_t, int64_t, void *)
{
    if (cl)
        return dt == TT_F64   ? avg_fwd_cl_double
               : dt == TT_F32 ? avg_fwd_cl_float
                              : avg_fwd_cl_int64_t;
    return dt == TT_F64 ? avg_fwd_double : dt == TT_F32 ? avg_fwd_float : avg_fwd_int64_t;
}


/* tt::avg_pool2d: f32, f64 and (as PyTorch) i64. */
static tt_tensor *avg_pool2d(const char *op, const tt_tensor *x, const pool_args *a, bool fake)
{
    tt_size ohw[3], sizes[4], strides[4];
    if (tt__pool_check(op, x, a, 2, 1, false, true, false, ohw))
        return NULL;
    int nd = tt_ndim(x);
    pooled_sizes(x, ohw, sizes);
    tt__nchw_out_strides(x, nd, sizes, strides);
    fake = fake || is_fake(x);
    tt_tensor *y = tt__ops_new(fake, nd, sizes, strides, tt_dtype_of(x));
    if (!y || fake)
        return y;
    pool_plan p;
    plan_init(&p, a, x, y);
    p.in = tt__ptr(x), p.out = tt__ptr(y);
    if (plan_channels_last(&p, nd))
        tt_parallel_for(tt_sizes(x)[0] * p.OH, row_grain(&p, a),
                        avg_fwd_fn(tt_dtype_of(x), true), &p);
    else
        tt_parallel_for(plan_planes(x), plan_grain(&p, a->k[0] * a->k[1]),
                        avg_fwd_fn(tt_dtype_of(x), false), &p);
    return y;
}

static tt_status avg_pool2d_kernel(tt_frame *f)
{
    tt_tensor *x;
    pool_args a;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &x)) || (st = tt__pool_avg_frame_args(f, 1, 2, &a)))
        return st;
    tt_tensor *y = avg_pool2d(tt__op_label(TT_OP_AVG_POOL2D), x, &a, tt_frame_is_fake(f));
    return y ? tt_return(f, 0, y) : tt_errcode();
}

/* A new gradient of x: x's sizes in x's pooling layout, zeroed when real. */
/* A dense tensor of x's sizes and layout (contiguous or channels last),
 * not filled. */
static tt_tensor *dense_like(const tt_tensor *x, bool fake)
{
    tt_size strides[4];
    tt__nchw_out_strides(x, tt_ndim(x), tt_sizes(x), strides);
    return tt__ops_new(fake, tt_ndim(x), tt_sizes(x), strides, tt_dtype_of(x));
}

static tt_tensor *grad_like(const tt_tensor *x, bool fake)
{
    tt_tensor *gi = dense_like(x, fake);
    if (gi && !fake) /* dense (contiguous or channels last): zero its bytes */
        memset(tt__ptr(gi), 0, (size_t)tt_numel(gi) * tt_dtype_size(tt_dtype_of(gi)));
    return gi;
}

static tt_tensor *avg_pool2d_backward_impl(const tt_tensor *g, const tt_tensor *x,
                                           const pool_args *a, bool fake)
{
    const char *op = tt__op_label(TT_OP_AVG_POOL2D_BACKWARD);
    tt_size ohw[3], osz[4];
    if (tt__pool_check(op, x, a, 2, 2, false, false, false, ohw) ||
        want_same_dtype(op, "grad_output", 1, g, x))
        return NULL;
    pooled_sizes(x, ohw, osz);
    if (want_sizes(op, "grad_output", 1, g, tt_ndim(x), osz))
        return NULL;
    fake = fake || is_fake(g) || is_fake(x);
    tt_tensor *gi = grad_like(x, fake);
    if (!gi || fake)
        return gi;
    pool_plan p;
    plan_init(&p, a, x, g);
    p.in = tt__ptr(gi), p.out = tt__ptr(g);
    plan_strides(gi, p.is);
    bool f64 = tt_dtype_of(x) == TT_F64;
    if (tt_ndim(x) == 4 && p.C > 1 && p.is[1] == 1)
        tt_parallel_for(tt_sizes(x)[0], 1, f64 ? avg_bwd_cl_double : avg_bwd_cl_float, &p);
    else
        tt_parallel_for(plan_planes(x), plan_grain(&p, a->k[0] * a->k[1]),
                        f64 ? avg_bwd_double : avg_bwd_float, &p);
    return gi;
}

static tt_status avg_pool2d_backward_kernel(tt_frame *f)
{
    tt_tensor *g, *x;
    pool_args a;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &g)) || (st = tt_arg_tensor(f, 1, &x)) ||
        (st = tt__pool_avg_frame_args(f, 2, 2, &a)))
        return st;
    tt_tensor *gi = avg_pool2d_backward_impl(g, x, &a, tt_frame_is_fake(f));
    return gi ? tt_return(f, 0, gi) : tt_errcode();
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

/* sum / kh / kw, as PyTorch's cpu_adaptive_avg_pool. */
#define ADAPTIVE_FWD(T)                                                        \
    CPU_CLONES static void adaptive_fwd_##T(int64_t b, int64_t e, void *vp)    \
    {                                                                          \
        pool_plan *p = vp;                                                     \
        for (int64_t pl = b; pl < e; pl++) {                                   \
            int64_t n = pl / p->C, c = pl % p->C;                              \
            const T *x = (const T *)p->in + n * p->is[0] + c * p->is[1];       \
            T *y = (T *)p->out + n * p->os[0] + c * p->os[1];                  \
            for (int64_t oh = 0; oh < p->OH; oh++) {                           \
                int64_t h0 = ad_start(oh, p->OH, p->H), h1 = ad_end(oh, p->OH, p->H); \
                for (int64_t ow = 0; ow < p->OW; ow++) {                       \
                    int64_t w0 = ad_start(ow, p->OW, p->W), w1 = ad_end(ow, p->OW, p->W); \
                    T sum = 0;                                                 \
                    for (int64_t h = h0; h < h1; h++)                          \
                        for (int64_t w = w0; w < w1; w++)                      \
                            sum += x[h * p->is[2] + w * p->is[3]];             \
                    y[oh * p->os[2] + ow * p->os[3]] = sum / (T)(h1 - h0) / (T)(w1 - w0); \
                }                                                              \
            }                                                                  \
        }                                                                      \
    }
ADAPTIVE_FWD(float)
ADAPTIVE_FWD(double)

#define ADAPTIVE_BWD(T)                                                        \
    static void adaptive_bwd_##T(int64_t b, int64_t e, void *vp)               \
    {                                                                          \
        pool_plan *p = vp;                                                     \
        for (int64_t pl = b; pl < e; pl++) {                                   \
            int64_t n = pl / p->C, c = pl % p->C;                              \
            T *gi = (T *)p->in + n * p->is[0] + c * p->is[1];                  \
            const T *go = (const T *)p->out + n * p->os[0] + c * p->os[1];     \
            for (int64_t oh = 0; oh < p->OH; oh++) {                           \
                int64_t h0 = ad_start(oh, p->OH, p->H), h1 = ad_end(oh, p->OH, p->H); \
                for (int64_t ow = 0; ow < p->OW; ow++) {                       \
                    int64_t w0 = ad_start(ow, p->OW, p->W), w1 = ad_end(ow, p->OW, p->W); \
                    T d = go[oh * p->os[2] + ow * p->os[3]] / (T)(h1 - h0) / (T)(w1 - w0); \
                    for (int64_t h = h0; h < h1; h++)                          \
                        for (int64_t w = w0; w < w1; w++)                      \
                            gi[h * p->is[2] + w * p->is[3]] += d;              \
                }                                                              \
            }                                                                  \
        }                                                                      \
    }
ADAPTIVE_BWD(float)
ADAPTIVE_BWD(double)

/* The global pool (a 1x1 output: a classifier's head, 16K planes of 4x4
 * in ResNet-18 at 32x32) in runs of planes: the general loops above add
 * each plane's few elements in one dependent chain, ~20 ns a plane. With
 * channels innermost (channels last), a run of planes of one sample is a
 * row of channels added across H x W rows, in vectors; otherwise each
 * plane is added in GLOBAL_LANES independent sums. The mean is sum / H / W,
 * as PyTorch's sum / kh / kw. */
#define GLOBAL_LANES 8
#define GLOBAL_POOL(T)                                                         \
    CPU_CLONES static void global_fwd_##T(int64_t b, int64_t e, void *vp)      \
    {                                                                          \
        pool_plan *p = vp;                                                     \
        const T *in = (const T *)p->in;                                        \
        T *out = (T *)p->out;                                                  \
        if (p->is[1] == 1 && p->os[1] == 1) {                                  \
            for (int64_t pl = b; pl < e;) {                                    \
                int64_t n = pl / p->C, c0 = pl % p->C;                         \
                int64_t nc = p->C - c0 < e - pl ? p->C - c0 : e - pl;          \
                T *restrict y = out + n * p->os[0] + c0;                       \
                for (int64_t c = 0; c < nc; c++)                               \
                    y[c] = 0;                                                  \
                for (int64_t h = 0; h < p->H; h++)                             \
                    for (int64_t w = 0; w < p->W; w++) {                       \
                        const T *restrict x =                                  \
                            in + n * p->is[0] + h * p->is[2] + w * p->is[3] + c0; \
                        for (int64_t c = 0; c < nc; c++)                       \
                            y[c] += x[c];                                      \
                    }                                                          \
                for (int64_t c = 0; c < nc; c++)                               \
                    y[c] = y[c] / (T)p->H / (T)p->W;                           \
                pl += nc;                                                      \
            }                                                                  \
            return;                                                            \
        }                                                                      \
        bool flat = p->is[2] == p->W * p->is[3]; /* rows follow on: one run */ \
        int64_t len = flat ? p->H * p->W : p->W, rows = flat ? 1 : p->H;       \
        /* n and c stepped, not divided out per plane (a division cost    \
         * more than a 4x4 plane's adds) */                                   \
        for (int64_t pl = b, n = b / p->C, c = b % p->C; pl < e;               \
             pl++, c = c + 1 < p->C ? c + 1 : 0, n += c == 0) {                \
            const T *x = in + n * p->is[0] + c * p->is[1];                     \
            T l[GLOBAL_LANES] = {0}, sum = 0;                                  \
            for (int64_t r = 0; r < rows; r++) {                               \
                const T *xr = x + r * p->is[2];                                \
                int64_t i = 0;                                                 \
                if (p->is[3] == 1) /* the usual case, as unit steps */         \
                    for (; i + GLOBAL_LANES <= len; i += GLOBAL_LANES)         \
                        for (int k = 0; k < GLOBAL_LANES; k++)                 \
                            l[k] += xr[i + k];                                 \
                for (; i + GLOBAL_LANES <= len; i += GLOBAL_LANES)             \
                    for (int k = 0; k < GLOBAL_LANES; k++)                     \
                        l[k] += xr[(i + k) * p->is[3]];                        \
                for (; i < len; i++)                                           \
                    sum += xr[i * p->is[3]];                                   \
            }                                                                  \
            for (int k = 0; k < GLOBAL_LANES; k++)                             \
                sum += l[k];                                                   \
            out[n * p->os[0] + c * p->os[1]] = sum / (T)p->H / (T)p->W;        \
        }                                                                      \
    }                                                                          \
    /* gi (dense, not zeroed) = grad_output / H / W everywhere */             \
    CPU_CLONES static void global_bwd_##T(int64_t b, int64_t e, void *vp)      \
    {                                                                          \
        pool_plan *p = vp;                                                     \
        T *gi = (T *)p->in;                                                    \
        const T *go = (const T *)p->out;                                       \
        if (p->is[1] == 1) {                                                   \
            for (int64_t pl = b; pl < e;) {                                    \
                int64_t n = pl / p->C, c0 = pl % p->C;                         \
                int64_t nc = p->C - c0 < e - pl ? p->C - c0 : e - pl;          \
                const T *g = go + n * p->os[0] + c0 * p->os[1];                \
                for (int64_t h = 0; h < p->H; h++)                             \
                    for (int64_t w = 0; w < p->W; w++) {                       \
                        T *restrict x = gi + n * p->is[0] + h * p->is[2] + w * p->is[3] + c0; \
                        for (int64_t c = 0; c < nc; c++)                       \
                            x[c] = g[c * p->os[1]] / (T)p->H / (T)p->W;        \
                    }                                                          \
                pl += nc;                                                      \
            }                                                                  \
            return;                                                            \
        }                                                                      \
        for (int64_t pl = b, n = b / p->C, c = b % p->C; pl < e;               \
             pl++, c = c + 1 < p->C ? c + 1 : 0, n += c == 0) {                \
            T d = go[n * p->os[0] + c * p->os[1]] / (T)p->H / (T)p->W;         \
            T *x = gi + n * p->is[0] + c * p->is[1];                           \
            for (int64_t h = 0; h < p->H; h++)                                 \
                for (int64_t w = 0; w < p->W; w++)                             \
                    x[h * p->is[2] + w * p->is[3]] = d;                        \
        }                                                                      \
    }
GLOBAL_POOL(float)
GLOBAL_POOL(double)

/* PyTorch's adaptive pooling input check: 3-d or 4-d, H and W non-zero
 * (N and C may be 0); f32 or f64. */
static tt_status adaptive_check(const char *op, const tt_tensor *x, int argno)
{
    tt_status st = want_float(op, "self", argno, x);
    if (st)
        return st;
    int nd = tt_ndim(x);
    bool ok = nd == 3 || nd == 4;
    for (int d = nd - 2; ok && d < nd; d++)
        ok = !tt__sz_eq(tt_sizes(x)[d], 0);
    if (ok)
        return TT_OK;
    char s1[128];
    return tt_error(TT_ESHAPE, "%s: argument 'self' (#%d): expected a 3-d [C, H, W] or 4-d "
                               "[N, C, H, W] tensor with non-zero H and W, got %s",
                    op, argno, tt_shape_str(x, s1, sizeof s1));
}

/* tt::_adaptive_avg_pool2d: any output size (0 gives an empty result). */
static tt_tensor *adaptive_avg_pool2d(const tt_tensor *x, const tt_size *osize, bool fake)
{
    const char *op = tt__op_label(TT_OP__ADAPTIVE_AVG_POOL2D);
    tt_size sizes[4], strides[4];
    if (adaptive_check(op, x, 1))
        return NULL;
    for (int i = 0; i < 2; i++)
        if (!tt_size_is_sym(osize[i]) && osize[i] < 0) {
            tt_error(TT_EINVAL, "%s: argument 'output_size' (#2): expected sizes of at least "
                                "0, got [%lld, %lld]", op, (long long)osize[0],
                     (long long)osize[1]);
            return NULL;
        }
    int nd = tt_ndim(x);
    pooled_sizes(x, osize, sizes);
    tt__nchw_out_strides(x, nd, sizes, strides);
    fake = fake || is_fake(x);
    tt_tensor *y = tt__ops_new(fake, nd, sizes, strides, tt_dtype_of(x));
    if (!y || fake)
        return y;
    pool_plan p;
    plan_init(&p, NULL, x, y);
    p.in = tt__ptr(x), p.out = tt__ptr(y);
    int64_t per = (p.H / (p.OH ? p.OH : 1) + 1) * (p.W / (p.OW ? p.OW : 1) + 1);
    bool f64 = tt_dtype_of(x) == TT_F64, global = p.OH == 1 && p.OW == 1;
    tt_parallel_for(plan_planes(x), plan_grain(&p, per),
                    global ? (f64 ? global_fwd_double : global_fwd_float)
                           : (f64 ? adaptive_fwd_double : adaptive_fwd_float),
                    &p);
    return y;
}

static tt_status adaptive_avg_pool2d_kernel(tt_frame *f)
{
    tt_tensor *x;
    const int64_t *os;
    int n;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &x)) || (st = tt_arg_ints(f, 1, &os, &n)))
        return st;
    if (n != 2)
        return tt_frame_fail(f, TT_EINVAL, "argument 'output_size' (#2): expected 2 sizes, "
                                           "got %d", n);
    tt_tensor *y = adaptive_avg_pool2d(x, os, tt_frame_is_fake(f));
    return y ? tt_return(f, 0, y) : tt_errcode();
}

/* tt::_adaptive_avg_pool2d_backward(grad_output, self): the output size
 * is grad_output's. */
static tt_status adaptive_avg_pool2d_backward_kernel(tt_frame *f)
{
    tt_tensor *g, *x;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &g)) || (st = tt_arg_tensor(f, 1, &x)))
        return st;
    const char *op = tt__op_label(TT_OP__ADAPTIVE_AVG_POOL2D_BACKWARD);
    if ((st = adaptive_check(op, x, 2)) || (st = want_same_dtype(op, "grad_output", 1, g, x)))
        return st;
    int nd = tt_ndim(x);
    tt_size want[4];
    for (int d = 0; d < nd; d++)
        want[d] = tt_ndim(g) == nd ? tt_sizes(g)[d] : 0;
    for (int d = 0; d < nd - 2; d++)
        want[d] = tt_sizes(x)[d];
    if ((st = want_sizes(op, "grad_output", 1, g, nd, want)))
        return st;
    bool fake = tt_frame_is_fake(f) || is_fake(g) || is_fake(x);
    /* a global pool's gradient writes every element: no zeros first */
    bool global = tt__sz_eq(tt_sizes(g)[nd - 2], 1) && tt__sz_eq(tt_sizes(g)[nd - 1], 1);
    tt_tensor *gi = global ? dense_like(x, fake) : grad_like(x, fake);
    if (!gi || fake)
        return gi ? tt_return(f, 0, gi) : tt_errcode();
    pool_plan p;
    plan_init(&p, NULL, x, g);
    p.in = tt__ptr(gi), p.out = tt__ptr(g);
    plan_strides(gi, p.is);
    bool f64 = tt_dtype_of(x) == TT_F64;
    tt_parallel_for(plan_planes(x), plan_grain(&p, 1),
                    global ? (f64 ? global_bwd_double : global_bwd_float)
                           : (f64 ? adaptive_bwd_double : adaptive_bwd_float),
                    &p);
    return tt_return(f, 0, gi);
}

/* ------------------------------------------------------------- 1-d pools */

/* max_pool1d and avg_pool1d are the 2-d kernels on a [.., C, 1, L] view
 * of a [C, L] or [N, C, L] input, as PyTorch composes them (with
 * unsqueeze(-2)); their own rows keep one node per call in a graph and
 * PyTorch's argument forms. int[1] lists bind any length (aten's "one or
 * several"), so each must hold exactly one value here. */
static tt_status one_arg(tt_frame *f, int i, const char *name, int64_t dflt, int64_t *out)
{
    const int64_t *v;
    int n;
    tt_status st = tt_arg_ints(f, i, &v, &n);
    if (st)
        return st;
    if (n == 0 && dflt >= 0) {
        *out = dflt;
        return TT_OK;
    }
    if (n != 1)
        return tt_frame_fail(f, TT_EINVAL, "argument '%s' (#%d): expected one int, got %d",
                             name, i + 1, n);
    *out = v[0];
    return TT_OK;
}

/* A 1-d pooling call's arguments as the 2-d call's: kernel [1, k], stride
 * [1, s], padding [0, p], dilation [1, d]. */
static tt_status pool1d_frame_args(tt_frame *f, bool has_dilation, pool_args *a)
{
    tt_status st;
    *a = (pool_args){.k = {1, 0}, .s = {1, 0}, .d = {1, 1}, .count_include_pad = true};
    if ((st = one_arg(f, 1, "kernel_size", -1, &a->k[1])) ||
        (st = one_arg(f, 2, "stride", a->k[1], &a->s[1])) ||
        (st = one_arg(f, 3, "padding", 0, &a->p[1])))
        return st;
    int next = 4;
    if (has_dilation && (st = one_arg(f, next++, "dilation", 1, &a->d[1])))
        return st;
    if ((st = tt_arg_bool(f, next, &a->ceil)))
        return st;
    return has_dilation ? TT_OK : tt_arg_bool(f, next + 1, &a->count_include_pad);
}

static tt_status want_1d_input(const char *op, const tt_tensor *x)
{
    if (tt_ndim(x) == 2 || tt_ndim(x) == 3)
        return TT_OK;
    char s[128];
    return tt_error(TT_ESHAPE, "%s: argument 'self' (#1): expected a 2-d [C, L] or 3-d "
                               "[N, C, L] tensor, got %s", op, tt_shape_str(x, s, sizeof s));
}

static tt_tensor *squeeze_h(tt_tensor *y)
{
    tt_tensor *r = y ? tt__squeeze_raw(y, tt_ndim(y) - 2) : NULL;
    tt_release(y);
    return r;
}

/* tt::max_pool1d / tt::avg_pool1d (the row's data: 1 for max). */
static tt_tensor *pool1d(bool max, const tt_tensor *x, const pool_args *a, bool fake)
{
    const char *op = tt__op_label(max ? TT_OP_MAX_POOL1D : TT_OP_AVG_POOL1D);
    if (want_1d_input(op, x))
        return NULL;
    tt_tensor *u = tt__unsqueeze_raw(x, tt_ndim(x) - 1), *y = NULL, *ind = NULL;
    if (!u)
        return NULL;
    if (max) {
        max_pool2d(op, u, a, fake, &y, &ind);
        tt_release(ind);
    } else {
        y = avg_pool2d(op, u, a, fake);
    }
    tt_release(u);
    return squeeze_h(y);
}

static tt_status pool1d_kernel(tt_frame *f)
{
    bool max = (intptr_t)tt_frame_userdata(f) == 1;
    tt_tensor *x;
    pool_args a;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &x)) || (st = pool1d_frame_args(f, max, &a)))
        return st;
    tt_tensor *y = pool1d(max, x, &a, tt_frame_is_fake(f));
    return y ? tt_return(f, 0, y) : tt_errcode();
}

static tt_status setup_pool1d(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                              const tt_value *out, int nout)
{
    (void)nin, (void)out, (void)nout;
    bool max = (intptr_t)tt_ctx_userdata(ctx) == 1;
    pool_args a = {.k = {1, in[1].u.ints[0]}, .d = {1, 1}, .count_include_pad = true};
    a.s[0] = 1, a.s[1] = in[2].n ? in[2].u.ints[0] : a.k[1];
    a.p[1] = in[3].u.ints[0];
    if (max)
        a.d[1] = in[4].u.ints[0], a.ceil = in[5].u.b;
    else
        a.ceil = in[4].u.b, a.count_include_pad = in[5].u.b;
    tt_status st = tt__pool_save_args(ctx, &a);
    return st ? st : tt_ctx_save_for_backward(ctx, 1, &in[0].u.t);
}

/* A 1-d op's input x and gradient g as the 2-d ops' [.., C, 1, L] views
 * (ops, so a traced backward records them); returns the inserted dim. */
static int unsqueeze_pair(const tt_tensor *x, const tt_tensor *g, tt_tensor **xu,
                          tt_tensor **gu)
{
    int h = tt_ndim(x) - 1;
    *xu = tt__call_op(TT_OP_UNSQUEEZE, TT_ARGS(tt_v_tensor(x), tt_v_int(h)));
    *gu = *xu ? tt__call_op(TT_OP_UNSQUEEZE, TT_ARGS(tt_v_tensor(g), tt_v_int(h))) : NULL;
    return h;
}

/* The 2-d gradient r back to [.., C, L] as input 0's; releases r and the
 * views. */
static tt_status put_squeezed(tt_autograd_ctx *ctx, tt_tensor **gi, tt_tensor *r, int h,
                              tt_tensor *xu, tt_tensor *gu)
{
    tt_tensor *sq = r ? tt__call_op(TT_OP_SQUEEZE_DIM, TT_ARGS(tt_v_tensor(r), tt_v_int(h)))
                      : NULL;
    tt_release(r);
    tt_release(gu);
    tt_release(xu);
    return tt__put_grad(ctx, gi, 0, sq);
}

/* tt::adaptive_avg_pool1d(self, int[1] output_size): the 2-d op on the
 * [.., C, 1, L] view with output [1, L_out], as PyTorch composes it. */
static tt_status adaptive_pool1d_kernel(tt_frame *f)
{
    const char *op = tt__op_label(TT_OP_ADAPTIVE_AVG_POOL1D);
    tt_tensor *x;
    int64_t out_l = 0;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &x)) || (st = one_arg(f, 1, "output_size", -1, &out_l)))
        return st;
    if ((st = want_1d_input(op, x)) || (st = want_float(op, "self", 1, x)))
        return st;
    if (out_l < 0) /* checked here: the 2-d op's message would name itself */
        return tt_frame_fail(f, TT_EINVAL, "argument 'output_size' (#2): expected a size of at "
                                           "least 0, got %lld", (long long)out_l);
    tt_tensor *u = tt__unsqueeze_raw(x, tt_ndim(x) - 1);
    tt_tensor *y = u ? adaptive_avg_pool2d(u, (const tt_size[]){1, out_l}, tt_frame_is_fake(f))
                     : NULL;
    tt_release(u);
    y = squeeze_h(y);
    return y ? tt_return(f, 0, y) : tt_errcode();
}

/* Through _adaptive_avg_pool2d_backward on unsqueezed views (ops, so it
 * traces). */
static tt_status adaptive_pool1d_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                          tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    tt_tensor *xu, *gu;
    int h = unsqueeze_pair(tt_ctx_saved(ctx, 0), g[0], &xu, &gu);
    tt_tensor *r = gu ? tt__call_op(TT_OP__ADAPTIVE_AVG_POOL2D_BACKWARD,
                                    TT_ARGS(tt_v_tensor(gu), tt_v_tensor(xu)))
                      : NULL;
    return put_squeezed(ctx, gi, r, h, xu, gu);
}

/* Through the 2-d backward ops on unsqueezed views; max pooling finds its
 * indices again (max_pool1d keeps none). All ops, so it traces. */
static tt_status pool1d_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                 tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    bool max = (intptr_t)tt_ctx_userdata(ctx) == 1;
    pool_args a;
    tt_status st = tt__pool_load_args(ctx, &a);
    if (st)
        return st;
    tt_tensor *xu, *gu, *r = NULL;
    int h = unsqueeze_pair(tt_ctx_saved(ctx, 0), g[0], &xu, &gu);
    if (gu && max) {
        tt_value outs[2] = {tt_v_none(), tt_v_none()};
        st = tt_op_call(tt__op(TT_OP_MAX_POOL2D_WITH_INDICES),
                        TT_ARGS(tt_v_tensor(xu), pair_value(a.k), pair_value(a.s),
                                pair_value(a.p), pair_value(a.d), tt_v_bool(a.ceil)),
                        outs, 2);
        if (!st)
            r = tt__call_op(TT_OP_MAX_POOL2D_WITH_INDICES_BACKWARD,
                            TT_ARGS(tt_v_tensor(gu), tt_v_tensor(xu), pair_value(a.k),
                                    pair_value(a.s), pair_value(a.p), pair_value(a.d),
                                    tt_v_bool(a.ceil), tt_v_tensor(outs[1].u.t)));
        tt_value_clear(&outs[0]);
        tt_value_clear(&outs[1]);
    } else if (gu) {
        r = tt__call_op(TT_OP_AVG_POOL2D_BACKWARD,
                        TT_ARGS(tt_v_tensor(gu), tt_v_tensor(xu), pair_value(a.k),
                                pair_value(a.s), pair_value(a.p), tt_v_bool(a.ceil),
                                tt_v_bool(a.count_include_pad), tt_v_none()));
    }
    return put_squeezed(ctx, gi, r, h, xu, gu);
}

#undef TT__FAMILY_POOL
#define TT__FAMILY_POOL TT__ROW
static const tt__builtin_row rows[] = {TT__FAMILY_ROWS};

tt_status tt__register_pooling(tt_library *lib)
{
    return TT__DEFINE_ROWS(lib, rows);
}

/* ---------------------------------------------------------- typed wrappers */

/* tt_pool_opts as the ops' arguments (see tt__pool_opts_args). */
static tt_status opts_args(const char *fn, const tt_pool_opts *o, bool avg, pool_args *a,
                           bool *stride_unset)
{
    return o ? tt__pool_opts_args(fn, 2, o->kernel, o->stride, o->padding, o->dilation,
                                  o->ceil_mode, o->exclude_pad, o->divisor_override, avg, a,
                                  stride_unset)
             : tt__pool_opts_args(fn, 2, NULL, NULL, NULL, NULL, false, false, 0, avg, a,
                                  stride_unset);
}

tt_tensor *tt_max_pool2d_with_indices(const tt_tensor *x, const tt_pool_opts *o,
                                      tt_tensor **indices)
{
    pool_args a;
    bool unset = false;
    tt_tensor *y = NULL;
    if (indices)
        *indices = NULL;
    if (!indices) {
        tt_error(TT_EINVAL, "tt_max_pool2d_with_indices: argument 'indices' is NULL");
        return NULL;
    }
    if (opts_args("tt_max_pool2d_with_indices", o, false, &a, &unset))
        return NULL;
    if (tt__fast_path(TT_OP_MAX_POOL2D_WITH_INDICES, 1, &x)) {
        max_pool2d(tt__op_label(TT_OP_MAX_POOL2D_WITH_INDICES), x, &a, false, &y, indices);
        return y;
    }
    return tt__pool_call_max(TT_OP_MAX_POOL2D_WITH_INDICES, x, 2, &a, unset, indices);
}

tt_tensor *tt_max_pool2d(const tt_tensor *x, const tt_pool_opts *o)
{
    tt_tensor *ind = NULL, *y = tt_max_pool2d_with_indices(x, o, &ind);
    tt_release(ind);
    return y;
}

tt_tensor *tt_avg_pool2d(const tt_tensor *x, const tt_pool_opts *o)
{
    pool_args a;
    bool unset = false;
    if (opts_args("tt_avg_pool2d", o, true, &a, &unset))
        return NULL;
    if (tt__fast_path(TT_OP_AVG_POOL2D, 1, &x))
        return avg_pool2d(tt__op_label(TT_OP_AVG_POOL2D), x, &a, false);
    return tt__pool_call_avg(TT_OP_AVG_POOL2D, x, 2, &a, unset);
}

tt_tensor *tt_adaptive_avg_pool1d(const tt_tensor *x, int64_t out_l)
{
    return tt__call_op(TT_OP_ADAPTIVE_AVG_POOL1D, TT_ARGS(tt_v_tensor(x), tt_v_ints(1, &out_l)));
}

tt_tensor *tt_adaptive_avg_pool2d(const tt_tensor *x, int64_t out_h, int64_t out_w)
{
    const int64_t os[2] = {out_h, out_w};
    if (tt__fast_path(TT_OP__ADAPTIVE_AVG_POOL2D, 1, &x))
        return adaptive_avg_pool2d(x, os, false);
    return tt__call_op(TT_OP__ADAPTIVE_AVG_POOL2D, TT_ARGS(tt_v_tensor(x), tt_v_ints(2, os)));
}

/* The 1-d wrappers: entry [0] of each pair, boxed as the 1-d ops take
 * them (stride [] when zero: "as kernel_size"). */
static tt_tensor *pool1d_call(const char *fn, bool max, const tt_tensor *x,
                              const tt_pool_opts *o)
{
    if (!o) {
        tt_error(TT_EINVAL, "%s: argument 'opts' is NULL (expected at least the kernel size)",
                 fn);
        return NULL;
    }
    if (!max && o->dilation[0] > 1) {
        tt_error(TT_EINVAL, "%s: argument 'opts': dilation is max pooling's only (expected 0 "
                            "or 1), got %lld", fn, (long long)o->dilation[0]);
        return NULL;
    }
    int64_t k = o->kernel[0], s = o->stride[0] ? o->stride[0] : k, p = o->padding[0];
    int64_t d = o->dilation[0] ? o->dilation[0] : 1;
    tt_builtin_id id = max ? TT_OP_MAX_POOL1D : TT_OP_AVG_POOL1D;
    if (tt__fast_path(id, 1, &x)) {
        pool_args a = {.k = {1, k}, .s = {1, s}, .p = {0, p}, .d = {1, d},
                       .ceil = o->ceil_mode, .count_include_pad = !o->exclude_pad};
        return pool1d(max, x, &a, false);
    }
    tt_value sv = o->stride[0] ? tt_v_ints(1, &s) : tt_v_ints(0, NULL);
    if (max)
        return tt__call_op(id, TT_ARGS(tt_v_tensor(x), tt_v_ints(1, &k), sv, tt_v_ints(1, &p),
                                       tt_v_ints(1, &d), tt_v_bool(o->ceil_mode)));
    return tt__call_op(id, TT_ARGS(tt_v_tensor(x), tt_v_ints(1, &k), sv, tt_v_ints(1, &p),
                                   tt_v_bool(o->ceil_mode), tt_v_bool(!o->exclude_pad)));
}

tt_tensor *tt_max_pool1d(const tt_tensor *x, const tt_pool_opts *o)
{
    return pool1d_call("tt_max_pool1d", true, x, o);
}

tt_tensor *tt_avg_pool1d(const tt_tensor *x, const tt_pool_opts *o)
{
    return pool1d_call("tt_avg_pool1d", false, x, o);
}
