/* Spatial sampling: Core ATen's grid_sampler_2d and its backward op, and
 * torch.nn.functional.grid_sample's typed wrapper.
 *
 * input [N, C, H, W], grid [N, Ho, Wo, 2] (x then y, -1 and +1 the image's
 * edges, or its corner pixels' centres with align_corners) -> output
 * [N, C, Ho, Wo]. Interpolation 0 bilinear, 1 nearest, 2 bicubic; padding
 * 0 zeros, 1 border, 2 reflection; PyTorch's enums, as its aten op takes
 * them.
 *
 * Each output point reads a stencil of input pixels (1, 4 or 16 taps)
 * whose positions and weights depend on the grid point alone, so one
 * stencil serves every channel. The arithmetic is PyTorch's vectorized CPU
 * kernel's (GridSamplerKernel.cpp): the same unnormalization, reflection
 * by trunc of the span count, cubic coefficients with A = -0.75, products
 * and sums in the tensor's own dtype. Nearest rounds half to even
 * (nearbyint) and passes no gradient to the grid; bicubic's grid gradient
 * goes through the unnormalization only (the padding of each tap is not
 * differentiated), as PyTorch's.
 *
 * The forward and the grid's gradient run in parallel over the N * Ho
 * output rows; the input's gradient over N x blocks of channels, so that
 * every plane's scatter-add stays in one task (no races, the same bits on
 * any thread count). */
#include "transformer_impl.h"
#include "tt_nn.h"

#include <math.h>

enum { GS_BILINEAR, GS_NEAREST, GS_BICUBIC };
enum { GS_ZEROS, GS_BORDER, GS_REFLECTION };

#define GS_MAX_TAPS 16
#define GS_CUBIC_A (-0.75)
/* Channels per task of the input's gradient: each task makes every
 * point's stencil once, so fewer, wider tasks make fewer stencils. */
#define GS_CBLOCK 16

/* One call's geometry; pointers at element 0 of each tensor; strides in
 * elements, in the order of the tensor's dims. */
typedef struct {
    const char *x, *grid, *go;
    char *out, *gi, *gg;
    int64_t N, C, H, W, Ho, Wo;
    int64_t xs[4], gs[4], os[4], gos[4], gis[4], ggs[4];
    int interp, pad;
    bool align;
} gs_plan;

/* A grid point's stencil: tap k reads pixel off[k] of a plane (-1: outside,
 * it reads 0) with weight w[k]; dwx[k], dwy[k] are the weight's
 * derivatives along the pixel coordinates, mx and my d(pixel)/d(grid). */
#define GS_FNS(T, FLOOR, TRUNC, RINT)                                          \
    typedef struct {                                                           \
        int n;                                                                 \
        int64_t off[GS_MAX_TAPS];                                              \
        T w[GS_MAX_TAPS], dwx[GS_MAX_TAPS], dwy[GS_MAX_TAPS];                  \
        T mx, my;                                                              \
    } stencil_##T;                                                             \
                                                                               \
    static inline T unnorm_##T(T c, int64_t size, bool align, T *d)            \
    {                                                                          \
        T sc = align ? (T)(size - 1) / 2 : (T)size / 2;                        \
        *d = sc;                                                               \
        return align ? (c + 1) * sc : (c + 1) * sc - (T)0.5;                   \
    }                                                                          \
    /* Borders count as outside for the gradient (PyTorch's note); NaN       \
     * clips to 0, as PyTorch's vector max gives it. */                        \
    static inline T clip_##T(T v, int64_t size, T *d)                          \
    {                                                                          \
        T mx = (T)(size - 1);                                                  \
        if (!(v > 0)) {                                                        \
            *d = 0;                                                            \
            return 0;                                                          \
        }                                                                      \
        if (v >= mx) {                                                         \
            *d = 0;                                                            \
            return mx;                                                         \
        }                                                                      \
        *d = 1;                                                                \
        return v;                                                              \
    }                                                                          \
    /* Mirrors about the corner pixels' centres (align) or the edges. */      \
    static inline T reflect_##T(T v, int64_t size, bool align, T *d)           \
    {                                                                          \
        T twice = align ? (T)(size - 1) * 2 : (T)size * 2;                     \
        T low = align ? (T)0 : (T)-0.5;                                        \
        if (twice == 0) {                                                      \
            *d = 0;                                                            \
            return 0;                                                          \
        }                                                                      \
        T x = v - low, a = x < 0 ? -x : x;                                     \
        T extra = a - TRUNC(a / twice) * twice, back = twice - extra;          \
        bool flip = extra > back;                                              \
        *d = flip != (x < 0) ? (T)-1 : (T)1;                                   \
        return (flip ? back : extra) + low;                                    \
    }                                                                          \
    /* PyTorch's compute_coordinates: the padding mode's pixel coordinate. */ \
    static inline T padded_##T(T v, int64_t size, int pad, bool align, T *d)   \
    {                                                                          \
        T d1 = 1, d2 = 1;                                                      \
        if (pad == GS_BORDER) {                                                \
            v = clip_##T(v, size, &d1);                                        \
        } else if (pad == GS_REFLECTION) {                                     \
            v = reflect_##T(v, size, align, &d1);                              \
            v = clip_##T(v, size, &d2);                                        \
        }                                                                      \
        *d = d1 * d2;                                                          \
        return v;                                                              \
    }                                                                          \
    /* The index of a whole pixel coordinate, or -1 outside [0, size) (NaN    \
     * too: nothing is converted that does not fit). */                       \
    static inline int64_t pix_##T(T v, int64_t size)                           \
    {                                                                          \
        return v >= 0 && v < (T)size ? (int64_t)v : -1;                        \
    }                                                                          \
    static inline int64_t tap_##T(int64_t iy, int64_t ix, int64_t sh, int64_t sw) \
    {                                                                          \
        return iy < 0 || ix < 0 ? -1 : iy * sh + ix * sw;                      \
    }                                                                          \
    /* UpSample.h's cubic convolution weights at fraction t, and their        \
     * derivatives in t. */                                                    \
    static inline void cubic_##T(T t, T c[4], T dc[4])                         \
    {                                                                          \
        const T A = (T)GS_CUBIC_A;                                             \
        T x = t + 1;                                                           \
        c[0] = ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;                      \
        dc[0] = (3 * A * x - 10 * A) * x + 8 * A;                              \
        x = t;                                                                 \
        c[1] = ((A + 2) * x - (A + 3)) * x * x + 1;                            \
        dc[1] = (3 * (A + 2) * x - 2 * (A + 3)) * x;                           \
        x = 1 - t;                                                             \
        c[2] = ((A + 2) * x - (A + 3)) * x * x + 1;                            \
        dc[2] = -(3 * (A + 2) * x - 2 * (A + 3)) * x;                          \
        x = 2 - t;                                                             \
        c[3] = ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;                      \
        dc[3] = -((3 * A * x - 10 * A) * x + 8 * A);                           \
    }                                                                          \
    /* The stencil of grid point (gx, gy) in a plane of row and column      \
     * strides sh, sw; taps in PyTorch's order (nw, ne, sw, se; bicubic       \
     * x-major), which is the order gradients add up in. */                   \
    static void stencil_of_##T(const gs_plan *p, int64_t sh, int64_t sw, T gx, T gy, \
                               stencil_##T *s)                                 \
    {                                                                          \
        if (p->interp == GS_BICUBIC) {                                         \
            T x = unnorm_##T(gx, p->W, p->align, &s->mx);                      \
            T y = unnorm_##T(gy, p->H, p->align, &s->my);                      \
            T ix = FLOOR(x), iy = FLOOR(y), cx[4], cy[4], dcx[4], dcy[4], dd;  \
            cubic_##T(x - ix, cx, dcx);                                        \
            cubic_##T(y - iy, cy, dcy);                                        \
            int64_t px[4], py[4];                                              \
            for (int k = 0; k < 4; k++) {                                      \
                px[k] = pix_##T(padded_##T(ix - 1 + k, p->W, p->pad, p->align, &dd), p->W); \
                py[k] = pix_##T(padded_##T(iy - 1 + k, p->H, p->pad, p->align, &dd), p->H); \
            }                                                                  \
            s->n = 16;                                                         \
            for (int i = 0; i < 4; i++)                                        \
                for (int j = 0; j < 4; j++) {                                  \
                    int k = i * 4 + j;                                         \
                    s->off[k] = tap_##T(py[j], px[i], sh, sw);                 \
                    s->w[k] = cx[i] * cy[j];                                   \
                    s->dwx[k] = dcx[i] * cy[j];                                \
                    s->dwy[k] = cx[i] * dcy[j];                                \
                }                                                              \
            return;                                                            \
        }                                                                      \
        T dx, dy;                                                              \
        T x = padded_##T(unnorm_##T(gx, p->W, p->align, &s->mx), p->W, p->pad, p->align, &dx); \
        T y = padded_##T(unnorm_##T(gy, p->H, p->align, &s->my), p->H, p->pad, p->align, &dy); \
        s->mx *= dx;                                                           \
        s->my *= dy;                                                           \
        if (p->interp == GS_NEAREST) {                                         \
            s->n = 1;                                                          \
            s->off[0] = tap_##T(pix_##T(RINT(y), p->H), pix_##T(RINT(x), p->W), sh, sw); \
            s->w[0] = 1;                                                       \
            s->dwx[0] = s->dwy[0] = 0;                                         \
            return;                                                            \
        }                                                                      \
        T xw = FLOOR(x), yn = FLOOR(y);                                        \
        T w = x - xw, e = 1 - w, n = y - yn, so = 1 - n;                       \
        int64_t iw = pix_##T(xw, p->W), ie = pix_##T(xw + 1, p->W);            \
        int64_t in = pix_##T(yn, p->H), is = pix_##T(yn + 1, p->H);            \
        s->n = 4;                                                              \
        s->off[0] = tap_##T(in, iw, sh, sw), s->w[0] = so * e;                 \
        s->off[1] = tap_##T(in, ie, sh, sw), s->w[1] = so * w;                 \
        s->off[2] = tap_##T(is, iw, sh, sw), s->w[2] = n * e;                  \
        s->off[3] = tap_##T(is, ie, sh, sw), s->w[3] = n * w;                  \
        s->dwx[0] = -so, s->dwx[1] = so, s->dwx[2] = -n, s->dwx[3] = n;        \
        s->dwy[0] = -e, s->dwy[1] = -w, s->dwy[2] = e, s->dwy[3] = w;          \
    }                                                                          \
    static inline void grid_at_##T(const gs_plan *p, int64_t n, int64_t h, int64_t w, T *gx, \
                                   T *gy)                                      \
    {                                                                          \
        const T *g = (const T *)p->grid + n * p->gs[0] + h * p->gs[1] + w * p->gs[2]; \
        *gx = g[0];                                                            \
        *gy = g[p->gs[3]];                                                     \
    }                                                                          \
    /* Rows [b, e) of the N * Ho output rows, every channel. */               \
    static void fwd_##T(int64_t b, int64_t e, void *vp)                        \
    {                                                                          \
        const gs_plan *p = vp;                                                 \
        stencil_##T s;                                                         \
        for (int64_t r = b; r < e; r++) {                                      \
            int64_t n = r / p->Ho, h = r % p->Ho;                              \
            const T *xn = (const T *)p->x + n * p->xs[0];                      \
            T *on = (T *)p->out + n * p->os[0] + h * p->os[2];                 \
            for (int64_t w = 0; w < p->Wo; w++) {                              \
                T gx, gy;                                                      \
                grid_at_##T(p, n, h, w, &gx, &gy);                             \
                stencil_of_##T(p, p->xs[2], p->xs[3], gx, gy, &s);             \
                for (int64_t c = 0; c < p->C; c++) {                           \
                    const T *xc = xn + c * p->xs[1];                           \
                    T acc = 0;                                                 \
                    for (int k = 0; k < s.n; k++)                              \
                        acc += (s.off[k] >= 0 ? xc[s.off[k]] : (T)0) * s.w[k]; \
                    on[c * p->os[1] + w * p->os[3]] = acc;                     \
                }                                                              \
            }                                                                  \
        }                                                                      \
    }                                                                          \
    /* The grid's gradient at rows [b, e) of the N * Ho points: a sum over    \
     * the channels in the dtype, as PyTorch's. */                            \
    static void grad_grid_##T(int64_t b, int64_t e, void *vp)                  \
    {                                                                          \
        const gs_plan *p = vp;                                                 \
        stencil_##T s;                                                         \
        for (int64_t r = b; r < e; r++) {                                      \
            int64_t n = r / p->Ho, h = r % p->Ho;                              \
            const T *xn = (const T *)p->x + n * p->xs[0];                      \
            const T *gon = (const T *)p->go + n * p->gos[0] + h * p->gos[2];   \
            T *ggn = (T *)p->gg + n * p->ggs[0] + h * p->ggs[1];               \
            for (int64_t w = 0; w < p->Wo; w++) {                              \
                T gx, gy, ax = 0, ay = 0;                                      \
                grid_at_##T(p, n, h, w, &gx, &gy);                             \
                if (p->interp != GS_NEAREST) {                                 \
                    stencil_of_##T(p, p->xs[2], p->xs[3], gx, gy, &s);         \
                    for (int64_t c = 0; c < p->C; c++) {                       \
                        const T *xc = xn + c * p->xs[1];                       \
                        T g = gon[c * p->gos[1] + w * p->gos[3]], tx = 0, ty = 0; \
                        for (int k = 0; k < s.n; k++) {                        \
                            T v = s.off[k] >= 0 ? xc[s.off[k]] : (T)0;         \
                            tx += v * s.dwx[k];                                \
                            ty += v * s.dwy[k];                                \
                        }                                                      \
                        ax += tx * g;                                          \
                        ay += ty * g;                                          \
                    }                                                          \
                    ax *= s.mx;                                                \
                    ay *= s.my;                                                \
                }                                                              \
                ggn[w * p->ggs[2]] = ax;                                       \
                ggn[w * p->ggs[2] + p->ggs[3]] = ay;                           \
            }                                                                  \
        }                                                                      \
    }                                                                          \
    /* The input's gradient of tasks [b, e) of N x (C in blocks of           \
     * GS_CBLOCK): points of one plane add into the same pixels, so a plane   \
     * belongs to one task (no races; the additions in PyTorch's point        \
     * order, whatever the thread count). A task makes each point's stencil   \
     * once for its block of channels. gi is zeroed. */                       \
    static void grad_input_##T(int64_t b, int64_t e, void *vp)                 \
    {                                                                          \
        const gs_plan *p = vp;                                                 \
        int64_t nblk = (p->C + GS_CBLOCK - 1) / GS_CBLOCK;                     \
        stencil_##T s;                                                         \
        for (int64_t t = b; t < e; t++) {                                      \
            int64_t n = t / nblk, c0 = t % nblk * GS_CBLOCK;                   \
            int64_t c1 = c0 + GS_CBLOCK < p->C ? c0 + GS_CBLOCK : p->C;        \
            const T *gon = (const T *)p->go + n * p->gos[0];                   \
            T *gin = (T *)p->gi + n * p->gis[0];                               \
            for (int64_t h = 0; h < p->Ho; h++)                                \
                for (int64_t w = 0; w < p->Wo; w++) {                          \
                    T gx, gy;                                                  \
                    grid_at_##T(p, n, h, w, &gx, &gy);                         \
                    stencil_of_##T(p, p->gis[2], p->gis[3], gx, gy, &s);       \
                    const T *go = gon + h * p->gos[2] + w * p->gos[3];         \
                    for (int64_t c = c0; c < c1; c++) {                        \
                        T g = go[c * p->gos[1]], *gic = gin + c * p->gis[1];   \
                        for (int k = 0; k < s.n; k++)                          \
                            if (s.off[k] >= 0)                                 \
                                gic[s.off[k]] += g * s.w[k];                   \
                    }                                                          \
                }                                                              \
        }                                                                      \
    }
GS_FNS(float, floorf, truncf, nearbyintf)
GS_FNS(double, floor, trunc, nearbyint)

static void copy_strides(const tt_tensor *t, int64_t s[4])
{
    for (int d = 0; d < 4; d++)
        s[d] = tt_strides(t)[d];
}

/* The plan of x and grid (real tensors whose checks passed); the
 * outputs' pointers and strides are the caller's to fill. */
static gs_plan plan_of(const tt_tensor *x, const tt_tensor *grid, int64_t interp, int64_t pad,
                       bool align)
{
    gs_plan p = {.x = tt__ptr(x), .grid = tt__ptr(grid), .interp = (int)interp,
                 .pad = (int)pad, .align = align};
    p.N = tt_sizes(x)[0], p.C = tt_sizes(x)[1], p.H = tt_sizes(x)[2], p.W = tt_sizes(x)[3];
    p.Ho = tt_sizes(grid)[1], p.Wo = tt_sizes(grid)[2];
    copy_strides(x, p.xs);
    copy_strides(grid, p.gs);
    return p;
}

static int64_t taps_of(int interp)
{
    return interp == GS_BICUBIC ? 16 : interp == GS_BILINEAR ? 4 : 1;
}

/* PyTorch's checks of grid_sampler_2d (check_grid_sampler_common and _2d,
 * and its dtype dispatch), for input at argument argno and grid, the modes
 * after it. PyTorch 1.13 takes any mode value (an out-of-range one leaves
 * the output unwritten); tt refuses it. The checks hold for symbolic
 * sizes (a guard each). */
static tt_status gs_check(const char *op, int argno, const tt_tensor *x, const tt_tensor *grid,
                          int64_t interp, int64_t pad)
{
    char a[128], b[128];
    tt_status st;
    if (tt_ndim(x) != 4 || tt_ndim(grid) != 4)
        return tt_error(TT_ESHAPE, "%s: argument '%s' (#%d): expected 4-d input and grid "
                                   "with the same number of dimensions, but got input with "
                                   "sizes %s and grid with sizes %s", op,
                        tt_ndim(x) != 4 ? "input" : "grid", tt_ndim(x) != 4 ? argno : argno + 1,
                        tt_shape_str(x, a, sizeof a), tt_shape_str(grid, b, sizeof b));
    if (!tt__sz_eq(tt_sizes(grid)[0], tt_sizes(x)[0]))
        return tt_error(TT_ESHAPE, "%s: argument 'grid' (#%d): expected grid and input to have "
                                   "the same batch size, but got input with sizes %s and grid "
                                   "with sizes %s", op, argno + 1,
                        tt_shape_str(x, a, sizeof a), tt_shape_str(grid, b, sizeof b));
    if (!tt__sz_eq(tt_sizes(grid)[3], 2))
        return tt_error(TT_ESHAPE, "%s: argument 'grid' (#%d): expected grid to have size 2 in "
                                   "last dimension, but got grid with sizes %s", op, argno + 1,
                        tt_shape_str(grid, b, sizeof b));
    for (int d = 2; d < 4; d++)
        if (tt__sz_eq(tt_sizes(x)[d], 0))
            return tt_error(TT_ESHAPE, "%s: argument 'input' (#%d): expected input to have "
                                       "non-empty spatial dimensions, but input has sizes %s "
                                       "with dimension %d being empty", op, argno,
                            tt_shape_str(x, a, sizeof a), d);
    if ((st = want_float(op, "input", argno, x)))
        return st;
    if (tt_dtype_of(grid) != tt_dtype_of(x))
        return tt_error(TT_EDTYPE, "%s: argument 'grid' (#%d): expected %s like 'input', got %s",
                        op, argno + 1, tt_dtype_name(tt_dtype_of(x)),
                        tt_dtype_name(tt_dtype_of(grid)));
    if (interp < GS_BILINEAR || interp > GS_BICUBIC)
        return tt_error(TT_EINVAL, "%s: argument 'interpolation_mode' (#%d): expected 0 "
                                   "(bilinear), 1 (nearest) or 2 (bicubic), got %lld", op,
                        argno + 2, (long long)interp);
    if (pad < GS_ZEROS || pad > GS_REFLECTION)
        return tt_error(TT_EINVAL, "%s: argument 'padding_mode' (#%d): expected 0 (zeros), 1 "
                                   "(border) or 2 (reflection), got %lld", op, argno + 3,
                        (long long)pad);
    return TT_OK;
}

/* tt::grid_sampler_2d: a new contiguous [N, C, Ho, Wo] in input's dtype,
 * as PyTorch's (whatever the inputs' layouts). */
static tt_tensor *grid_sample(const tt_tensor *x, const tt_tensor *grid, int64_t interp,
                              int64_t pad, bool align, bool fake)
{
    if (gs_check(tt__op_label(TT_OP_GRID_SAMPLER_2D), 1, x, grid, interp, pad))
        return NULL;
    tt_size sizes[4] = {tt_sizes(x)[0], tt_sizes(x)[1], tt_sizes(grid)[1], tt_sizes(grid)[2]};
    fake = fake || is_fake(x) || is_fake(grid);
    tt_tensor *y = tt__ops_new(fake, 4, sizes, NULL, tt_dtype_of(x));
    if (!y || fake)
        return y;
    gs_plan p = plan_of(x, grid, interp, pad, align);
    p.out = tt__ptr(y);
    copy_strides(y, p.os);
    int64_t work = p.Wo * p.C * taps_of(p.interp) + 1;
    tt_parallel_for(p.N * p.Ho, 32768 / work + 1,
                    tt_dtype_of(x) == TT_F64 ? fwd_double : fwd_float, &p);
    return y;
}

static tt_status grid_sample_kernel(tt_frame *f)
{
    tt_tensor *x, *grid;
    int64_t interp, pad;
    bool align;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &x)) || (st = tt_arg_tensor(f, 1, &grid)) ||
        (st = tt_arg_int(f, 2, &interp)) || (st = tt_arg_int(f, 3, &pad)) ||
        (st = tt_arg_bool(f, 4, &align)))
        return st;
    tt_tensor *y = grid_sample(x, grid, interp, pad, align, tt_frame_is_fake(f));
    return y ? tt_return(f, 0, y) : tt_errcode();
}

/* A masked-out grad_input: PyTorch returns an undefined tensor; a tt op's
 * Tensor result cannot be None, so it is an empty [0] tensor, as
 * convolution_backward's. */
static tt_tensor *masked_out(bool fake, tt_dtype dt)
{
    tt_size z = 0;
    return tt__ops_new(fake, 1, &z, NULL, dt);
}

/* tt::grid_sampler_2d_backward(grad_output, input, grid, interpolation_mode,
 * padding_mode, align_corners, output_mask) -> (grad_input, grad_grid).
 * Both contiguous; grad_grid is always computed (zeros for nearest), as
 * PyTorch's, and output_mask[0] says whether grad_input is. PyTorch does
 * not check grad_output's shape (a wrong one reads out of bounds); tt
 * does. */
static tt_status grid_sample_backward_kernel(tt_frame *f)
{
    const char *op = tt__op_label(TT_OP_GRID_SAMPLER_2D_BACKWARD);
    tt_tensor *go, *x, *grid;
    int64_t interp, pad;
    bool align;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &go)) || (st = tt_arg_tensor(f, 1, &x)) ||
        (st = tt_arg_tensor(f, 2, &grid)) || (st = tt_arg_int(f, 3, &interp)) ||
        (st = tt_arg_int(f, 4, &pad)) || (st = tt_arg_bool(f, 5, &align)))
        return st;
    const tt_value *mv = tt_frame_arg(f, 6);
    if (!mv || mv->kind != TT_V_BOOLS || mv->n != 2)
        return tt_error(TT_EINVAL, "%s: argument 'output_mask' (#7): expected bool[2]", op);
    bool mask0 = mv->u.bools[0];
    if ((st = gs_check(op, 2, x, grid, interp, pad)))
        return st;
    tt_size osz[4] = {tt_sizes(x)[0], tt_sizes(x)[1], tt_sizes(grid)[1], tt_sizes(grid)[2]};
    if ((st = want_sizes(op, "grad_output", 1, go, 4, osz)))
        return st;
    if (tt_dtype_of(go) != tt_dtype_of(x))
        return tt_error(TT_EDTYPE, "%s: argument 'grad_output' (#1): expected %s like 'input', "
                                   "got %s", op, tt_dtype_name(tt_dtype_of(x)),
                        tt_dtype_name(tt_dtype_of(go)));
    bool fake = tt_frame_is_fake(f) || is_fake(go) || is_fake(x) || is_fake(grid);
    tt_dtype dt = tt_dtype_of(x);
    tt_tensor *outs[2] = {mask0 ? tt__ops_new(fake, 4, tt_sizes(x), NULL, dt)
                                : masked_out(fake, dt),
                          tt__ops_new(fake, 4, tt_sizes(grid), NULL, dt)};
    if (!outs[0] || !outs[1]) {
        st = tt_errcode() ? tt_errcode() : TT_ENOMEM;
        goto out;
    }
    if (fake)
        goto out;
    gs_plan p = plan_of(x, grid, interp, pad, align);
    p.go = tt__ptr(go);
    copy_strides(go, p.gos);
    p.gg = tt__ptr(outs[1]);
    copy_strides(outs[1], p.ggs);
    bool f64 = dt == TT_F64;
    int64_t work = p.Wo * p.C * taps_of(p.interp) + 1;
    tt_parallel_for(p.N * p.Ho, 32768 / work + 1, f64 ? grad_grid_double : grad_grid_float, &p);
    if (mask0 && tt_numel(outs[0]) > 0) {
        memset(tt__ptr(outs[0]), 0, (size_t)tt_numel(outs[0]) * tt_dtype_size(dt));
        p.gi = tt__ptr(outs[0]);
        copy_strides(outs[0], p.gis);
        int64_t nblk = (p.C + GS_CBLOCK - 1) / GS_CBLOCK;
        work = p.Ho * p.Wo * taps_of(p.interp) * (p.C < GS_CBLOCK ? p.C : GS_CBLOCK) + 1;
        tt_parallel_for(p.N * nblk, 32768 / work + 1, f64 ? grad_input_double : grad_input_float,
                        &p);
    }
out:
    for (int i = 0; i < 2; i++)
        if (!st) /* tt_return takes the reference, also when it fails */
            st = tt_return(f, i, outs[i]);
        else
            tt_release(outs[i]);
    return st;
}

static tt_status setup_grid_sample(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                                   const tt_value *out, int nout)
{
    (void)nin, (void)out, (void)nout;
    tt_status st = tt_ctx_save_for_backward(ctx, 2, (tt_tensor *[]){in[0].u.t, in[1].u.t});
    if (!st)
        st = tt_ctx_save_int(ctx, "interpolation_mode", in[2].u.i);
    if (!st)
        st = tt_ctx_save_int(ctx, "padding_mode", in[3].u.i);
    return st ? st : tt_ctx_save_int(ctx, "align_corners", in[4].u.b);
}

/* d/d(input, grid) is one grid_sampler_2d_backward call, as PyTorch's
 * derivatives.yaml, with grad_input only when input needs it. */
static tt_status grid_sample_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                      tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    int64_t interp, pad, align;
    tt_status st;
    if ((st = tt_ctx_get_int(ctx, "interpolation_mode", &interp)) ||
        (st = tt_ctx_get_int(ctx, "padding_mode", &pad)) ||
        (st = tt_ctx_get_int(ctx, "align_corners", &align)))
        return st;
    int slot[2] = {tt_ctx_input_slot(ctx, 0), tt_ctx_input_slot(ctx, 1)};
    bool mask[2] = {slot[0] >= 0 && tt_ctx_needs_input_grad(ctx, slot[0]),
                    slot[1] >= 0 && tt_ctx_needs_input_grad(ctx, slot[1])};
    tt_value outs[2] = {tt_v_none(), tt_v_none()};
    st = tt_op_call(tt__op(TT_OP_GRID_SAMPLER_2D_BACKWARD),
                    TT_ARGS(tt_v_tensor(g[0]), tt_v_tensor(tt_ctx_saved(ctx, 0)),
                            tt_v_tensor(tt_ctx_saved(ctx, 1)), tt_v_int(interp), tt_v_int(pad),
                            tt_v_bool(align != 0), tt_v_bools(2, mask)),
                    outs, 2);
    if (st)
        return st;
    for (int i = 0; i < 2; i++)
        if (mask[i])
            gi[slot[i]] = outs[i].u.t;
        else
            tt_value_clear(&outs[i]);
    return TT_OK;
}

#undef TT__FAMILY_GRID_SAMPLE
#define TT__FAMILY_GRID_SAMPLE TT__ROW
static const tt__builtin_row rows[] = {TT__FAMILY_ROWS};

tt_status tt__register_grid_sample(tt_library *lib)
{
    return TT__DEFINE_ROWS(lib, rows);
}

/* ---------------------------------------------------------- typed wrapper */

/* The index of `s` in names[0..n), or -1. */
static int name_index(const char *s, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(s, names[i]))
            return i;
    return -1;
}

tt_tensor *tt_grid_sample(const tt_tensor *input, const tt_tensor *grid, const char *mode,
                          const char *padding_mode, bool align_corners)
{
    static const char *const modes[3] = {"bilinear", "nearest", "bicubic"};
    static const char *const pads[3] = {"zeros", "border", "reflection"};
    int m = mode ? name_index(mode, modes, 3) : GS_BILINEAR;
    int pm = padding_mode ? name_index(padding_mode, pads, 3) : GS_ZEROS;
    if (m < 0) {
        tt_error(TT_EINVAL, "tt_grid_sample: argument 'mode': expected 'bilinear', 'nearest' "
                            "or 'bicubic', got '%s'", mode);
        return NULL;
    }
    if (pm < 0) {
        tt_error(TT_EINVAL, "tt_grid_sample: argument 'padding_mode': expected 'zeros', "
                            "'border' or 'reflection', got '%s'", padding_mode);
        return NULL;
    }
    const tt_tensor *ts[2] = {input, grid};
    if (input && grid && tt__fast_path(TT_OP_GRID_SAMPLER_2D, 2, ts))
        return grid_sample(input, grid, m, pm, align_corners, false);
    return tt__call_op(TT_OP_GRID_SAMPLER_2D,
                       TT_ARGS(tt_v_tensor(input), tt_v_tensor(grid), tt_v_int(m), tt_v_int(pm),
                               tt_v_bool(align_corners)));
}
