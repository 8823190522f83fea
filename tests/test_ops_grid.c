/* grid_sampler_2d and its backward (ops/grid_sample.c): what the
 * differential file (tests/data/torch_ref.txt) cannot say. Values of every
 * interpolation x padding x align_corners against a plain loop written
 * here from PyTorch's scalar formulas (GridSampler.h: fmod reflection),
 * over layouts and both dtypes; gradcheck of the derivative for input and
 * grid in f64; the backward op's masks and nearest's zero grid gradient;
 * the same bits on 1 and 3 threads; every error's status and message; a
 * symbolically traced and compiled forward + backward equal to eager; fake
 * metadata equal to real, and symbolic sizes through the fake path. Zero
 * live tensors at the end of each test (the fixture checks). */
#include "tt_test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        if (!(cond))                                                           \
            ck_abort_msg(__VA_ARGS__);                                         \
    } while (0)

static const char *const mode_names[3] = {"bilinear", "nearest", "bicubic"};
static const char *const pad_names[3] = {"zeros", "border", "reflection"};

static tt_tensor *from_values(int nd, const int64_t *sizes, const double *v, tt_dtype dt)
{
    tt_tensor *t = NN(tt_from_data(nd, sizes, TT_F64, v));
    tt_tensor *r = NN(tt_to_dtype(t, dt));
    tt_release(t);
    return r;
}

/* Input values: distinct, in a scrambled order, about [-2, 2]. */
static tt_tensor *scrambled(int nd, const int64_t *sizes, tt_dtype dt)
{
    int64_t n = 1;
    for (int d = 0; d < nd; d++)
        n *= sizes[d];
    double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++)
        v[i] = (double)((i * 7919) % (n * 2 + 1)) / (double)n * 2.0 - 2.0;
    tt_tensor *t = from_values(nd, sizes, v, dt);
    free(v);
    return t;
}

/* A [N, Ho, Wo, 2] grid of points spread over [-lim, lim] (beyond the
 * image for lim > 1) by the golden ratio: no point on a pixel centre, a
 * half-way tie or a border, so the derivatives exist where gradcheck
 * looks. */
static tt_tensor *grid_of(int64_t n, int64_t ho, int64_t wo, double lim, tt_dtype dt)
{
    int64_t cnt = n * ho * wo * 2;
    double *v = malloc(sizeof(double) * (size_t)(cnt ? cnt : 1));
    for (int64_t i = 0; i < cnt; i++) {
        double f = fmod((double)i * 0.6180339887498949 + 0.1234, 1.0);
        v[i] = -lim + 2 * lim * f;
    }
    tt_tensor *t = from_values(4, (const int64_t[]){n, ho, wo, 2}, v, dt);
    free(v);
    return t;
}

/* Element (i, j, k, l) of a 4-d tensor, any strides. */
static double at4(const tt_tensor *x, int64_t i, int64_t j, int64_t k, int64_t l)
{
    const tt_size *st = tt_strides(x);
    int64_t off = i * st[0] + j * st[1] + k * st[2] + l * st[3];
    const char *p = tt_data(x);
    return tt_dtype_of(x) == TT_F64 ? ((const double *)p)[off] : (double)((const float *)p)[off];
}

/* ------------------------------------------- the plain loop (GridSampler.h) */

static double ref_unnorm(double c, int64_t n, bool ac)
{
    return ac ? (c + 1) / 2 * (double)(n - 1) : ((c + 1) * (double)n - 1) / 2;
}

static double ref_reflect(double v, double twice_lo, double twice_hi)
{
    if (twice_lo == twice_hi)
        return 0;
    double mn = twice_lo / 2, span = (twice_hi - twice_lo) / 2;
    v = fabs(v - mn);
    double extra = fmod(v, span);
    int flips = (int)floor(v / span);
    return flips % 2 == 0 ? extra + mn : span - extra + mn;
}

static double ref_coord(double v, int64_t n, int pad, bool ac)
{
    if (pad == 2)
        v = ac ? ref_reflect(v, 0, 2.0 * (double)(n - 1)) : ref_reflect(v, -1, 2.0 * (double)n - 1);
    if (pad >= 1)
        v = fmin((double)(n - 1), fmax(v, 0));
    return v;
}

/* Input (n, c) at whole pixel (y, x), 0 outside. */
static double ref_pixel(const tt_tensor *x, int64_t n, int64_t c, double y, double xx)
{
    if (!(y >= 0 && y < (double)tt_sizes(x)[2] && xx >= 0 && xx < (double)tt_sizes(x)[3]))
        return 0;
    return at4(x, n, c, (int64_t)y, (int64_t)xx);
}

static void ref_cubic(double t, double c[4])
{
    const double A = -0.75;
    double x1 = t + 1, x2 = t, x3 = 1 - t, x4 = 2 - t;
    c[0] = ((A * x1 - 5 * A) * x1 + 8 * A) * x1 - 4 * A;
    c[1] = ((A + 2) * x2 - (A + 3)) * x2 * x2 + 1;
    c[2] = ((A + 2) * x3 - (A + 3)) * x3 * x3 + 1;
    c[3] = ((A * x4 - 5 * A) * x4 + 8 * A) * x4 - 4 * A;
}

static double ref_sample(const tt_tensor *x, const tt_tensor *g, int64_t n, int64_t c,
                         int64_t h, int64_t w, int mode, int pad, bool ac)
{
    int64_t H = tt_sizes(x)[2], W = tt_sizes(x)[3];
    double gx = at4(g, n, h, w, 0), gy = at4(g, n, h, w, 1);
    if (mode == 2) {
        double fx = ref_unnorm(gx, W, ac), fy = ref_unnorm(gy, H, ac);
        double ix = floor(fx), iy = floor(fy), cx[4], cy[4], acc = 0;
        ref_cubic(fx - ix, cx);
        ref_cubic(fy - iy, cy);
        for (int j = 0; j < 4; j++) {
            double row = 0;
            for (int i = 0; i < 4; i++)
                row += cx[i] * ref_pixel(x, n, c, ref_coord(iy - 1 + j, H, pad, ac),
                                         ref_coord(ix - 1 + i, W, pad, ac));
            acc += cy[j] * row;
        }
        return acc;
    }
    double fx = ref_coord(ref_unnorm(gx, W, ac), W, pad, ac);
    double fy = ref_coord(ref_unnorm(gy, H, ac), H, pad, ac);
    if (mode == 1)
        return ref_pixel(x, n, c, nearbyint(fy), nearbyint(fx));
    double x0 = floor(fx), y0 = floor(fy), tx = fx - x0, ty = fy - y0;
    return ref_pixel(x, n, c, y0, x0) * (1 - tx) * (1 - ty) +
           ref_pixel(x, n, c, y0, x0 + 1) * tx * (1 - ty) +
           ref_pixel(x, n, c, y0 + 1, x0) * (1 - tx) * ty +
           ref_pixel(x, n, c, y0 + 1, x0 + 1) * tx * ty;
}

/* Every mode, padding and align_corners against the plain loop, for f32
 * and f64, contiguous and channels-last inputs, contiguous and
 * transposed (Ho <-> Wo) grids, points out to 1.7 (several reflections
 * at the small width) and on ties (x = 0.5 steps). */
START_TEST(test_values)
{
    for (int dti = 0; dti < 2; dti++) {
        tt_dtype dt = dti ? TT_F64 : TT_F32;
        double tol = dti ? 1e-12 : 2e-5;
        tt_tensor *xc = scrambled(4, (const int64_t[]){2, 3, 4, 3}, dt);
        tt_tensor *xs[2] = {xc, NN(tt_contiguous_format(xc, "channels_last"))};
        tt_tensor *g0 = grid_of(2, 5, 4, 1.7, dt);
        tt_tensor *gt = grid_of(2, 4, 5, 1.7, dt);
        tt_tensor *gs[3] = {g0, NN(tt_transpose(gt, 1, 2)), NULL};
        /* exact half-way points: x in steps of 0.25 over [-1.5, 1.5] */
        double tv[2 * 5 * 4 * 2];
        for (int i = 0; i < TT_TABLE_LEN(tv); i++)
            tv[i] = (double)((i * 7) % 13 - 6) / 4.0;
        gs[2] = from_values(4, (const int64_t[]){2, 5, 4, 2}, tv, dt);
        for (int lay = 0; lay < 2; lay++)
            for (int gl = 0; gl < 3; gl++)
                for (int m = 0; m < 3; m++)
                    for (int p = 0; p < 3; p++)
                        for (int ac = 0; ac < 2; ac++) {
                            tt_tensor *y = NN(tt_grid_sample(xs[lay], gs[gl], mode_names[m],
                                                             pad_names[p], ac));
                            ck_assert_int_eq(tt_sizes(y)[0], 2);
                            ck_assert_int_eq(tt_sizes(y)[1], 3);
                            ck_assert_int_eq(tt_sizes(y)[2], 5);
                            ck_assert_int_eq(tt_sizes(y)[3], 4);
                            ck_assert(tt_is_contiguous(y) && tt_dtype_of(y) == dt);
                            for (int64_t n = 0; n < 2; n++)
                                for (int64_t c = 0; c < 3; c++)
                                    for (int64_t h = 0; h < 5; h++)
                                        for (int64_t w = 0; w < 4; w++) {
                                            double want = ref_sample(xs[lay], gs[gl], n, c, h, w,
                                                                     m, p, ac);
                                            double got = at4(y, n, c, h, w);
                                            CHECK(fabs(got - want) <= tol * (1 + fabs(want)),
                                                  "%s %s %s align %d layout %d grid %d: "
                                                  "(%lld, %lld, %lld, %lld) is %.12g, the "
                                                  "loop has %.12g",
                                                  tt_dtype_name(dt), mode_names[m],
                                                  pad_names[p], ac, lay, gl, (long long)n,
                                                  (long long)c, (long long)h, (long long)w,
                                                  got, want);
                                        }
                            tt_release(y);
                        }
        for (int i = 0; i < 3; i++)
            tt_release(gs[i]);
        tt_release(gt);
        tt_release(xs[1]);
        tt_release(xc);
    }
}
END_TEST

/* NaN and huge grid values as PyTorch 1.13 answers them (recorded from
 * it): zeros padding makes NaN through the bilinear and bicubic weights,
 * border and reflection clip NaN to 0 first (bicubic's weights stay NaN);
 * nearest reads 0 outside. Never a wild read. */
START_TEST(test_nan_grid)
{
    double xv[9];
    for (int i = 0; i < 9; i++)
        xv[i] = i / 4.0 - 1;
    tt_tensor *x = from_values(4, (const int64_t[]){1, 1, 3, 3}, xv, TT_F64);
    double gv[4] = {NAN, 0.2, 1e300, -1e300};
    tt_tensor *g = from_values(4, (const int64_t[]){1, 1, 2, 2}, gv, TT_F64);
    static const double want[3][3][2] = {{{NAN, 0}, {-0.025, -0.5}, {-0.025, -1}},
                                         {{0, 0}, {-0.25, -0.5}, {-0.25, -1}},
                                         {{NAN, 0}, {NAN, -0.5}, {NAN, -1}}};
    for (int m = 0; m < 3; m++)
        for (int p = 0; p < 3; p++) {
            tt_tensor *y = NN(tt_grid_sample(x, g, mode_names[m], pad_names[p], false));
            for (int k = 0; k < 2; k++) {
                double got = at4(y, 0, 0, 0, k), w = want[m][p][k];
                CHECK(isnan(w) ? isnan(got) : fabs(got - w) < 1e-12,
                      "%s %s: point %d gave %g, PyTorch %g", mode_names[m], pad_names[p], k,
                      got, w);
            }
            tt_release(y);
        }
    tt_release(g);
    tt_release(x);
}
END_TEST

/* ------------------------------------------------------------ derivatives */

typedef struct {
    int mode, pad;
    bool align;
} gs_cfg;

static tt_status f_sample(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    const gs_cfg *c = ud;
    out[0] = tt_grid_sample(in[0], in[1], mode_names[c->mode], pad_names[c->pad], c->align);
    return out[0] ? TT_OK : tt_errcode();
}

/* d/d(input, grid) of every mode, padding and align_corners against
 * finite differences, with strided inputs on odd rounds. */
START_TEST(test_gradcheck)
{
    gs_cfg c = {_i / 6, (_i / 2) % 3, _i % 2};
    tt_tensor *xb = scrambled(4, (const int64_t[]){2, 2, 3, 4}, TT_F64);
    tt_tensor *gb = grid_of(2, 3, 2, 1.4, TT_F64);
    tt_tensor *x = _i % 2 ? NN(tt_contiguous_format(xb, "channels_last")) : tt_retain(xb);
    tt_tensor *gt = grid_of(2, 2, 3, 1.4, TT_F64);
    tt_tensor *g = _i % 2 ? NN(tt_transpose(gt, 1, 2)) : tt_retain(gb);
    OK(tt_set_requires_grad(x, true));
    OK(tt_set_requires_grad(g, true));
    tt_tensor *ins[2] = {x, g};
    tt_status st = tt_gradcheck(f_sample, 2, ins, 1, NULL, &c);
    ck_assert_msg(st == TT_OK, "%s %s align %d: %s", mode_names[c.mode], pad_names[c.pad],
                  c.align, tt_errmsg());
    tt_release(g), tt_release(gt), tt_release(x), tt_release(gb), tt_release(xb);
}
END_TEST

static tt_tensor *call_backward(tt_tensor *go, tt_tensor *x, tt_tensor *g, int mode, int pad,
                                bool ac, bool m0, bool m1, tt_tensor **gg)
{
    bool mask[2] = {m0, m1};
    tt_value outs[2] = {tt_v_none(), tt_v_none()};
    tt_status st = tt_op_call(tt_op_find("tt::grid_sampler_2d_backward"),
                              (tt_value[]){tt_v_tensor(go), tt_v_tensor(x), tt_v_tensor(g),
                                           tt_v_int(mode), tt_v_int(pad), tt_v_bool(ac),
                                           tt_v_bools(2, mask)},
                              7, outs, 2);
    if (st)
        return NULL;
    *gg = outs[1].u.t;
    return outs[0].u.t;
}

/* The backward op: grad_input equals the derivative (sum over points of
 * weight * grad); a masked-out grad_input is an empty [0] tensor and
 * grad_grid is computed anyway (PyTorch's); nearest's grid gradient is
 * zeros. */
START_TEST(test_backward_masks)
{
    /* 19 channels: the input's gradient runs in blocks of 16 */
    tt_tensor *x = scrambled(4, (const int64_t[]){2, 19, 4, 5}, TT_F64);
    tt_tensor *g = grid_of(2, 3, 2, 1.2, TT_F64);
    tt_tensor *go = scrambled(4, (const int64_t[]){2, 19, 3, 2}, TT_F64);
    for (int m = 0; m < 3; m++) {
        tt_tensor *gg1, *gg2;
        tt_tensor *gi1 = NN(call_backward(go, x, g, m, 1, false, true, true, &gg1));
        tt_tensor *gi2 = NN(call_backward(go, x, g, m, 1, false, false, true, &gg2));
        ck_assert_int_eq(tt_ndim(gi2), 1);
        ck_assert_int_eq(tt_sizes(gi2)[0], 0);
        ck_assert(tt_is_contiguous(gi1) && tt_is_contiguous(gg1));
        tt_test_assert_close(gg1, gg2, 0, "grad_grid with and without grad_input");
        double *v = tt_test_values(gg1);
        double s = 0;
        for (int64_t k = 0; k < tt_numel(gg1); k++)
            s += fabs(v[k]);
        free(v);
        CHECK(m == 1 ? s == 0 : s > 0, "%s: |grad_grid| sums to %g", mode_names[m], s);
        /* grad_input by linearity: <grad_output, sample(x)> is linear in x */
        tt_tensor *y = NN(tt_grid_sample(x, g, mode_names[m], "border", false));
        tt_tensor *p = NN(tt_mul(y, go));
        tt_tensor *lhs = NN(tt_sum_all(p));
        tt_tensor *q = NN(tt_mul(gi1, x));
        tt_tensor *rhs = NN(tt_sum_all(q));
        tt_test_assert_close(lhs, rhs, 1e-12, "<go, sample(x)> = <grad_input, x>");
        tt_release(lhs), tt_release(rhs), tt_release(p), tt_release(q), tt_release(y);
        tt_release(gi1), tt_release(gg1), tt_release(gi2), tt_release(gg2);
    }
    tt_release(go), tt_release(g), tt_release(x);
}
END_TEST

/* The kernels split N * Ho rows (forward, grid gradient) and N x blocks
 * of 16 channels (input gradient) over threads: the same bits on 1 thread
 * and on 3. */
START_TEST(test_threads_same_bits)
{
    tt_tensor *x = scrambled(4, (const int64_t[]){2, 35, 17, 19}, TT_F32);
    tt_tensor *g = grid_of(2, 23, 21, 1.3, TT_F32);
    tt_tensor *go = scrambled(4, (const int64_t[]){2, 35, 23, 21}, TT_F32);
    int was = tt_get_num_threads();
    for (int m = 0; m < 3; m++) {
        tt_tensor *y[2], *gi[2], *gg[2];
        for (int t = 0; t < 2; t++) {
            tt_set_num_threads(t ? 3 : 1);
            y[t] = NN(tt_grid_sample(x, g, mode_names[m], "reflection", true));
            gi[t] = NN(call_backward(go, x, g, m, 2, true, true, true, &gg[t]));
        }
        tt_set_num_threads(was);
        tt_test_assert_same_bits(y[0], y[1], "output");
        tt_test_assert_same_bits(gi[0], gi[1], "grad_input");
        tt_test_assert_same_bits(gg[0], gg[1], "grad_grid");
        for (int t = 0; t < 2; t++)
            tt_release(y[t]), tt_release(gi[t]), tt_release(gg[t]);
    }
    tt_release(go), tt_release(g), tt_release(x);
}
END_TEST

/* y, d sum(y * y) / d input and / d grid, kept. */
static tt_status f_value_and_grads(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    const gs_cfg *c = ud;
    tt_scope_begin();
    tt_tensor *y = tt_grid_sample(in[0], in[1], mode_names[c->mode], pad_names[c->pad],
                                  c->align);
    tt_tensor *sq = y ? tt_mul(y, y) : NULL;
    tt_tensor *s = sq ? tt_sum_all(sq) : NULL;
    tt_tensor *gr[2] = {NULL, NULL};
    tt_status st = s ? tt_grad(1, &s, NULL, 2, in, gr) : tt_errcode();
    out[0] = st ? NULL : tt_keep(y);
    out[1] = st ? NULL : tt_keep(gr[0]);
    out[2] = st ? NULL : tt_keep(gr[1]);
    tt_scope_end();
    return st;
}

/* Fake and symbolic traces compiled once run inputs of two shapes:
 * forward and both gradients equal eager. */
START_TEST(test_compiled_equals_eager)
{
    gs_cfg c = {_i % 3, (_i / 3) % 3, _i % 2};
    for (int k = 0; k < 2; k++) {
        tt_trace_mode mode = k ? TT_TRACE_SYMBOLIC : TT_TRACE_FAKE;
        tt_compiled *cp = NN(tt_compile(f_value_and_grads, 2, 3,
                                        &(tt_trace_opts){.mode = mode, .ud = &c,
                                                         .ud_constant = true,
                                                         .fullgraph = true}));
        for (int sh = 0; sh < 2; sh++) {
            tt_tensor *x = scrambled(4, (const int64_t[]){2, 2 + sh, 4 + sh, 5}, TT_F64);
            tt_tensor *g = grid_of(2, 3 + sh, 2 + 2 * sh, 1.3, TT_F64);
            OK(tt_set_requires_grad(x, true));
            OK(tt_set_requires_grad(g, true));
            tt_tensor *in[2] = {x, g}, *ce[3], *ee[3];
            tt_status st = tt_compiled_call(cp, in, ce);
            ck_assert_msg(st == TT_OK, "%s %s align %d, trace mode %d, shape %d: %s",
                          mode_names[c.mode], pad_names[c.pad], c.align, mode, sh, tt_errmsg());
            OK(f_value_and_grads(in, 2, ee, 3, &c));
            for (int i = 0; i < 3; i++) {
                char what[128];
                snprintf(what, sizeof what, "%s %s align %d, trace mode %d, shape %d, output %d",
                         mode_names[c.mode], pad_names[c.pad], c.align, mode, sh, i);
                tt_test_assert_close(ce[i], ee[i], 0, what);
                tt_release(ce[i]), tt_release(ee[i]);
            }
            tt_release(g), tt_release(x);
        }
        tt_clear_error();
        tt_compiled_free(cp);
        ck_assert_msg(tt_errcode() == TT_OK, "freeing the plan: %s", tt_errmsg());
    }
}
END_TEST

/* ------------------------------------------------------- fake and symbolic */

/* The fake kernels give the real kernels' metadata, forward and backward. */
START_TEST(test_fake_meta)
{
    tt_tensor *xb = scrambled(4, (const int64_t[]){2, 3, 4, 5}, TT_F32);
    tt_tensor *x = NN(tt_contiguous_format(xb, "channels_last"));
    tt_tensor *g = grid_of(2, 3, 2, 1.2, TT_F32);
    tt_tensor *go = scrambled(4, (const int64_t[]){2, 3, 3, 2}, TT_F32);
    tt_tensor *fx = NN(tt_fake_empty_strided(4, tt_sizes(x), tt_strides(x), TT_F32));
    tt_tensor *fg = NN(tt_fake_empty(4, tt_sizes(g), TT_F32));
    tt_tensor *fgo = NN(tt_fake_empty(4, tt_sizes(go), TT_F32));
    tt_tensor *y = NN(tt_grid_sample(x, g, "bicubic", "border", true));
    tt_tensor *fy = NN(tt_grid_sample(fx, fg, "bicubic", "border", true));
    tt_test_assert_fake_meta(fy, y, "grid_sampler_2d");
    for (int m0 = 0; m0 < 2; m0++) {
        tt_tensor *gg, *fgg;
        tt_tensor *gi = NN(call_backward(go, x, g, 0, 0, false, m0, true, &gg));
        tt_tensor *fgi = NN(call_backward(fgo, fx, fg, 0, 0, false, m0, true, &fgg));
        tt_test_assert_fake_meta(fgi, gi, "grad_input");
        tt_test_assert_fake_meta(fgg, gg, "grad_grid");
        tt_release(gi), tt_release(gg), tt_release(fgi), tt_release(fgg);
    }
    tt_release(y), tt_release(fy), tt_release(fgo), tt_release(fg), tt_release(fx);
    tt_release(go), tt_release(g), tt_release(x), tt_release(xb);
}
END_TEST

/* Symbolic N, H, W, Ho and Wo flow into the output sizes (fake path);
 * the batch check holds by guard. */
START_TEST(test_symbolic_sizes)
{
    tt_sym_reset();
    tt_size n = tt_sym_new("s", 2), h = tt_sym_new("s", 9), w = tt_sym_new("s", 8);
    tt_size ho = tt_sym_new("s", 5), wo = tt_sym_new("s", 7);
    tt_tensor *x = NN(tt_fake_empty(4, (tt_size[]){n, 3, h, w}, TT_F32));
    tt_tensor *g = NN(tt_fake_empty(4, (tt_size[]){n, ho, wo, 2}, TT_F32));
    tt_tensor *y = NN(tt_grid_sample(x, g, "bilinear", "zeros", false));
    ck_assert(tt_is_fake(y));
    ck_assert(tt_sizes(y)[0] == n && tt_sizes(y)[1] == 3);
    ck_assert(tt_sizes(y)[2] == ho && tt_sizes(y)[3] == wo);
    tt_tensor *gg;
    tt_tensor *gi = NN(call_backward(y, x, g, 2, 2, true, true, true, &gg));
    ck_assert(tt_sizes(gi)[2] == h && tt_sizes(gi)[3] == w && tt_sizes(gi)[0] == n);
    ck_assert(tt_sizes(gg)[1] == ho && tt_sizes(gg)[2] == wo && tt_sizes(gg)[3] == 2);
    tt_release(gi), tt_release(gg), tt_release(y), tt_release(g), tt_release(x);
    tt_sym_reset();
}
END_TEST

/* --------------------------------------------------------------- errors */

static struct {
    tt_tensor *x, *g, *x3, *g3, *g1, *g2w, *x0, *xi, *gi, *gd, *go, *gob, *god;
} in;

static void errors_setup(void)
{
    tt_test_setup();
    in.x = scrambled(4, (const int64_t[]){2, 3, 4, 5}, TT_F32);
    in.g = grid_of(2, 3, 4, 1.0, TT_F32);
    in.x3 = scrambled(3, (const int64_t[]){3, 4, 5}, TT_F32);
    in.g3 = grid_of(1, 2, 3, 1.0, TT_F32); /* [1, 2, 3, 2]: batch 1 */
    in.g1 = NN(tt_zeros(TT_SHAPE(2, 3, 4), TT_F32));
    in.g2w = NN(tt_zeros(TT_SHAPE(2, 3, 4, 3), TT_F32));
    in.x0 = NN(tt_zeros(TT_SHAPE(2, 3, 0, 5), TT_F32));
    in.xi = NN(tt_zeros(TT_SHAPE(2, 3, 4, 5), TT_I64));
    in.gi = NN(tt_zeros(TT_SHAPE(2, 3, 4, 2), TT_I64));
    in.gd = grid_of(2, 3, 4, 1.0, TT_F64);
    in.go = NN(tt_zeros(TT_SHAPE(2, 3, 3, 4), TT_F32));
    in.gob = NN(tt_zeros(TT_SHAPE(2, 2, 3, 4), TT_F32));
    in.god = NN(tt_zeros(TT_SHAPE(2, 3, 3, 4), TT_F64));
}

static void errors_teardown(void)
{
    tt_tensor *all[] = {in.x,  in.g,  in.x3, in.g3, in.g1, in.g2w, in.x0,
                        in.xi, in.gi, in.gd, in.go, in.gob, in.god};
    for (int k = 0; k < TT_TABLE_LEN(all); k++)
        tt_release(all[k]);
    tt_test_teardown();
}

static tt_tensor *op_fwd(tt_tensor *x, tt_tensor *g, int64_t mode, int64_t pad)
{
    return tt_call(tt_op_find("tt::grid_sampler_2d"), tt_v_tensor(x), tt_v_tensor(g),
                   tt_v_int(mode), tt_v_int(pad), tt_v_bool(false));
}

static tt_status op_bwd(tt_tensor *go, tt_tensor *x, tt_tensor *g, int64_t mode, int nmask)
{
    bool mask[3] = {true, true, true};
    tt_value outs[2] = {tt_v_none(), tt_v_none()};
    tt_status st = tt_op_call(tt_op_find("tt::grid_sampler_2d_backward"),
                              (tt_value[]){tt_v_tensor(go), tt_v_tensor(x), tt_v_tensor(g),
                                           tt_v_int(mode), tt_v_int(0), tt_v_bool(false),
                                           tt_v_bools(nmask, mask)},
                              7, outs, 2);
    tt_value_clear(&outs[0]);
    tt_value_clear(&outs[1]);
    return st;
}

#define GS "tt::grid_sampler_2d: "
#define GSB "tt::grid_sampler_2d_backward: "
#define GRID_ERRORS(X)                                                                          \
    X(input_3d, tt_grid_sample(in.x3, in.g, NULL, NULL, false), TT_ESHAPE,                      \
      GS "argument 'input' (#1): expected 4-d input and grid with the same number of "          \
         "dimensions, but got input with sizes [3, 4, 5] and grid with sizes [2, 3, 4, 2]")     \
    X(grid_3d, tt_grid_sample(in.x, in.g1, NULL, NULL, false), TT_ESHAPE,                       \
      GS "argument 'grid' (#2): expected 4-d input and grid", "grid with sizes [2, 3, 4]")      \
    X(batch, tt_grid_sample(in.x, in.g3, NULL, NULL, false), TT_ESHAPE,                         \
      GS "argument 'grid' (#2): expected grid and input to have the same batch size, but got "  \
         "input with sizes [2, 3, 4, 5] and grid with sizes [1, 2, 3, 2]")                      \
    X(last_dim, tt_grid_sample(in.x, in.g2w, NULL, NULL, false), TT_ESHAPE,                     \
      GS "argument 'grid' (#2): expected grid to have size 2 in last dimension, but got grid "  \
         "with sizes [2, 3, 4, 3]")                                                             \
    X(empty_spatial, tt_grid_sample(in.x0, in.g, NULL, NULL, false), TT_ESHAPE,                 \
      GS "argument 'input' (#1): expected input to have non-empty spatial dimensions, but "     \
         "input has sizes [2, 3, 0, 5] with dimension 2 being empty")                           \
    X(int_input, tt_grid_sample(in.xi, in.gi, NULL, NULL, false), TT_EDTYPE,                    \
      GS "argument 'input' (#1): expected f32 or f64, got i64")                                 \
    X(mixed_dtypes, tt_grid_sample(in.x, in.gd, NULL, NULL, false), TT_EDTYPE,                  \
      GS "argument 'grid' (#2): expected f32 like 'input', got f64")                            \
    X(mode_string, tt_grid_sample(in.x, in.g, "linear", NULL, false), TT_EINVAL,                \
      "tt_grid_sample: argument 'mode': expected 'bilinear', 'nearest' or 'bicubic', got "      \
      "'linear'")                                                                               \
    X(padding_string, tt_grid_sample(in.x, in.g, "nearest", "reflect", false), TT_EINVAL,       \
      "tt_grid_sample: argument 'padding_mode': expected 'zeros', 'border' or 'reflection', "   \
      "got 'reflect'")                                                                          \
    X(mode_int, op_fwd(in.x, in.g, 3, 0), TT_EINVAL,                                            \
      GS "argument 'interpolation_mode' (#3): expected 0 (bilinear), 1 (nearest) or 2 "        \
         "(bicubic), got 3")                                                                    \
    X(padding_int, op_fwd(in.x, in.g, 0, -1), TT_EINVAL,                                        \
      GS "argument 'padding_mode' (#4): expected 0 (zeros), 1 (border) or 2 (reflection), got " \
         "-1")                                                                                  \
    X(bwd_grad_shape, op_bwd(in.gob, in.x, in.g, 0, 2), TT_ESHAPE,                              \
      GSB "argument 'grad_output' (#1): expected shape [2, 3, 3, 4], got [2, 2, 3, 4]")         \
    X(bwd_grad_dtype, op_bwd(in.god, in.x, in.g, 0, 2), TT_EDTYPE,                              \
      GSB "argument 'grad_output' (#1): expected f32 like 'input', got f64")                    \
    X(bwd_batch, op_bwd(in.go, in.x, in.g3, 0, 2), TT_ESHAPE,                                   \
      GSB "argument 'grid' (#3): expected grid and input to have the same batch size")          \
    X(bwd_mode, op_bwd(in.go, in.x, in.g, 7, 2), TT_EINVAL,                                     \
      GSB "argument 'interpolation_mode' (#4): expected 0 (bilinear), 1 (nearest) or 2 "       \
          "(bicubic), got 7")                                                                   \
    X(bwd_mask, op_bwd(in.go, in.x, in.g, 0, 3), TT_EINVAL, "output_mask")

TT_ERROR_TABLE(GRID_ERRORS, grid_errors);

START_TEST(test_errors) { tt_test_run_error_case(&grid_errors[_i], _i); }
END_TEST

static Suite *grid_suite(void)
{
    Suite *s = suite_create("ops_grid");
    TCase *tc = tt_tcase("values");
    tcase_add_test(tc, test_values);
    tcase_add_test(tc, test_nan_grid);
    tcase_add_test(tc, test_threads_same_bits);
    tcase_add_test(tc, test_fake_meta);
    tcase_add_test(tc, test_symbolic_sizes);
    suite_add_tcase(s, tc);
    tc = tt_tcase("derivatives");
    tcase_add_loop_test(tc, test_gradcheck, 0, 18);
    tcase_add_test(tc, test_backward_masks);
    tcase_add_loop_test(tc, test_compiled_equals_eager, 0, 9);
    suite_add_tcase(s, tc);
    tc = tt_tcase_with("errors", errors_setup, errors_teardown);
    tcase_add_loop_test(tc, test_errors, 0, TT_TABLE_LEN(grid_errors));
    suite_add_tcase(s, tc);
    return s;
}

TT_TEST_MAIN(grid_suite)
