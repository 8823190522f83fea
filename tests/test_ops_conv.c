/* Convolution, convolution_backward, im2col and col2im. Results are compared
 * with a direct f64 loop (no im2col, no GEMM, no oneDNN) over the same
 * logical values, for f32 and f64, 1-d and 2-d, strides, padding, dilation,
 * groups (depthwise too), transposed with output_padding, with and without
 * bias, contiguous and non-contiguous inputs; each derivative is
 * gradchecked in f64; a compiled training step equals eager; every error is
 * checked by status and text; tests end with zero live tensors. */
#include "tt_test.h"
#include "resnet18.h"

#include <math.h>
#include <stdlib.h>

#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        if (!(cond))                                                           \
            ck_abort_msg(__VA_ARGS__);                                         \
    } while (0)

static uint64_t rng_state = 0x2545F4914F6CDD1Dull;
static double urand(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (double)(rng_state % 20000) / 10000.0 - 1.0;
}

static tt_tensor *rnd(int nd, const int64_t *s, tt_dtype dt)
{
    int64_t n = 1;
    for (int i = 0; i < nd; i++)
        n *= s[i];
    double *buf = malloc(sizeof(double) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++)
        buf[i] = urand();
    tt_tensor *t64 = NN(tt_from_data(nd, s, TT_F64, buf));
    free(buf);
    tt_tensor *t = NN(tt_to_dtype(t64, dt));
    tt_release(t64);
    return t;
}

/* The f64 values of t, in logical (row-major) order; free() them. */
static double *values(const tt_tensor *t)
{
    tt_tensor *d = NN(tt_to_dtype(t, TT_F64));
    tt_tensor *c = NN(tt_contiguous(d));
    int64_t n = tt_numel(c);
    double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
    memcpy(v, tt_data(c), sizeof(double) * (size_t)n);
    tt_release(c);
    tt_release(d);
    return v;
}

/* A convolution case: 2-d unless nsp = 1 (then index 0 of each pair). */
typedef struct {
    const char *name;
    int nsp;
    int64_t n, c, o, in[2], k[2], s[2], p[2], d[2], op[2], groups;
    bool transposed, bias;
} conv_case;

static const conv_case cases[] = {
    {"plain", 2, 2, 3, 4, {7, 6}, {3, 3}, {1, 1}, {0, 0}, {1, 1}, {0, 0}, 1, false, true},
    {"stride_pad", 2, 2, 3, 5, {9, 8}, {3, 2}, {2, 3}, {1, 2}, {1, 1}, {0, 0}, 1, false, true},
    {"dilation", 2, 1, 2, 3, {9, 9}, {3, 3}, {1, 2}, {2, 0}, {2, 3}, {0, 0}, 1, false, false},
    {"groups", 2, 2, 4, 6, {6, 5}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, 2, false, true},
    {"depthwise", 2, 2, 4, 4, {6, 7}, {3, 3}, {2, 1}, {1, 1}, {1, 1}, {0, 0}, 4, false, true},
    {"depthwise_mult", 2, 1, 3, 6, {5, 5}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, 3, false,
     false},
    {"pointwise", 2, 3, 5, 4, {4, 3}, {1, 1}, {1, 1}, {0, 0}, {1, 1}, {0, 0}, 1, false, true},
    {"odd_kernel", 2, 2, 3, 2, {5, 9}, {1, 4}, {1, 2}, {0, 1}, {1, 1}, {0, 0}, 1, false, true},
    {"conv1d", 1, 2, 3, 4, {11}, {3}, {2}, {1}, {1}, {0}, 1, false, true},
    {"conv1d_groups", 1, 2, 4, 2, {9}, {2}, {1}, {0}, {3}, {0}, 2, false, false},
    {"transposed", 2, 2, 3, 4, {4, 5}, {3, 3}, {1, 1}, {0, 0}, {1, 1}, {0, 0}, 1, true, true},
    {"transposed_stride", 2, 2, 3, 2, {4, 3}, {3, 2}, {2, 3}, {1, 0}, {1, 1}, {1, 2}, 1, true,
     true},
    {"transposed_groups", 2, 1, 4, 6, {3, 4}, {2, 3}, {2, 1}, {0, 1}, {2, 1}, {1, 0}, 2, true,
     false},
    {"transposed_1d", 1, 2, 3, 2, {5}, {4}, {3}, {1}, {1}, {2}, 1, true, true},
    /* more weights than input elements: oneDNN's backward-weights is cut by
     * output channel (80 = 48 + 32 at two threads) */
    {"wide_weights", 2, 2, 8, 80, {3, 3}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, 1, false, true},
};

/* Output spatial sizes of a case. */
static void case_out(const conv_case *c, int64_t *out)
{
    for (int i = 0; i < c->nsp; i++) {
        int64_t dk = c->d[i] * (c->k[i] - 1) + 1;
        out[i] = c->transposed ? (c->in[i] - 1) * c->s[i] - 2 * c->p[i] + dk + c->op[i]
                               : (c->in[i] + 2 * c->p[i] - dk) / c->s[i] + 1;
    }
}

static void case_shapes(const conv_case *c, int64_t *xs, int64_t *ws, int64_t *ys)
{
    int64_t out[2];
    case_out(c, out);
    xs[0] = c->n, xs[1] = c->c;
    ys[0] = c->n, ys[1] = c->o;
    /* transposed: w [C, O/G, k] */
    ws[0] = c->transposed ? c->c : c->o;
    ws[1] = c->transposed ? c->o / c->groups : c->c / c->groups;
    for (int i = 0; i < c->nsp; i++)
        xs[2 + i] = c->in[i], ws[2 + i] = c->k[i], ys[2 + i] = out[i];
}

/* Direct convolution in f64: every output element as its sum over the
 * kernel (transposed: every input element scattered through the kernel). */
static double *ref_conv(const conv_case *c, const double *x, const double *w, const double *b)
{
    int64_t xs[4], ws[4], ys[4];
    case_shapes(c, xs, ws, ys);
    int64_t I0 = c->nsp == 2 ? xs[2] : 1, I1 = xs[c->nsp + 1];
    int64_t O0 = c->nsp == 2 ? ys[2] : 1, O1 = ys[c->nsp + 1];
    int64_t K0 = c->nsp == 2 ? c->k[0] : 1, K1 = c->k[c->nsp - 1];
    int64_t S0 = c->nsp == 2 ? c->s[0] : 1, S1 = c->s[c->nsp - 1];
    int64_t P0 = c->nsp == 2 ? c->p[0] : 0, P1 = c->p[c->nsp - 1];
    int64_t D0 = c->nsp == 2 ? c->d[0] : 1, D1 = c->d[c->nsp - 1];
    int64_t G = c->groups, CG = c->c / G, OG = c->o / G;
    double *y = calloc((size_t)(c->n * c->o * O0 * O1), sizeof(double));
    for (int64_t n = 0; n < c->n; n++)
        for (int64_t g = 0; g < G; g++)
            for (int64_t ci = 0; ci < CG; ci++)
                for (int64_t oi = 0; oi < OG; oi++)
                    for (int64_t ki = 0; ki < K0; ki++)
                        for (int64_t kj = 0; kj < K1; kj++) {
                            int64_t cc = g * CG + ci, oc = g * OG + oi;
                            double wv = c->transposed
                                            ? w[((cc * OG + oi) * K0 + ki) * K1 + kj]
                                            : w[((oc * CG + ci) * K0 + ki) * K1 + kj];
                            if (!c->transposed) {
                                for (int64_t a = 0; a < O0; a++)
                                    for (int64_t bb = 0; bb < O1; bb++) {
                                        int64_t iy = a * S0 - P0 + ki * D0;
                                        int64_t ix = bb * S1 - P1 + kj * D1;
                                        if (iy >= 0 && iy < I0 && ix >= 0 && ix < I1)
                                            y[((n * c->o + oc) * O0 + a) * O1 + bb] +=
                                                wv * x[((n * c->c + cc) * I0 + iy) * I1 + ix];
                                    }
                            } else {
                                for (int64_t iy = 0; iy < I0; iy++)
                                    for (int64_t ix = 0; ix < I1; ix++) {
                                        int64_t a = iy * S0 - P0 + ki * D0;
                                        int64_t bb = ix * S1 - P1 + kj * D1;
                                        if (a >= 0 && a < O0 && bb >= 0 && bb < O1)
                                            y[((n * c->o + oc) * O0 + a) * O1 + bb] +=
                                                wv * x[((n * c->c + cc) * I0 + iy) * I1 + ix];
                                    }
                            }
                        }
    if (b)
        for (int64_t i = 0; i < c->n * c->o * O0 * O1; i++)
            y[i] += b[(i / (O0 * O1)) % c->o];
    return y;
}

static tt_conv_opts case_opts(const conv_case *c)
{
    tt_conv_opts o = {.groups = c->groups, .transposed = c->transposed};
    for (int i = 0; i < c->nsp; i++) {
        o.stride[i] = c->s[i];
        o.padding[i] = c->p[i];
        o.dilation[i] = c->d[i];
        o.output_padding[i] = c->op[i];
    }
    return o;
}

static tt_tensor *case_call(const conv_case *c, const tt_tensor *x, const tt_tensor *w,
                            const tt_tensor *b)
{
    tt_conv_opts o = case_opts(c);
    return c->nsp == 2 ? tt_conv2d(x, w, b, &o) : tt_conv1d(x, w, b, &o);
}

static void assert_values(const tt_tensor *y, const double *want, int64_t n, double tol,
                          const char *what)
{
    ck_assert_int_eq(tt_numel(y), n);
    double *got = values(y);
    for (int64_t i = 0; i < n; i++)
        CHECK(fabs(got[i] - want[i]) <= tol * (1 + fabs(want[i])), "%s: element %lld: got %.9g, want %.9g",
              what, (long long)i, got[i], want[i]);
    free(got);
}

/* Every case, f32 and f64, against the direct loop. */
START_TEST(test_conv_cases)
{
    const conv_case *c = &cases[_i];
    /* f32 by each backend (auto: oneDNN), then f64 (im2col + GEMM) */
    static const tt_conv_backend backends[4] = {TT_CONV_AUTO, TT_CONV_GEMM, TT_CONV_ONEDNN,
                                                TT_CONV_AUTO};
    for (int run = 0; run < 4; run++) {
        int f = run == 3;
        tt_debug_conv_backend(backends[run]);
        tt_dtype dt = f ? TT_F64 : TT_F32;
        int64_t xs[4], ws[4], ys[4];
        case_shapes(c, xs, ws, ys);
        int nd = c->nsp + 2;
        tt_tensor *x = rnd(nd, xs, dt), *w = rnd(nd, ws, dt);
        tt_tensor *b = c->bias ? rnd(1, &ys[1], dt) : NULL;
        double *xv = values(x), *wv = values(w), *bv = b ? values(b) : NULL;
        double *want = ref_conv(c, xv, wv, bv);
        tt_tensor *y = case_call(c, x, w, b);
        CHECK(y, "%s: %s", c->name, tt_errmsg());
        ck_assert_int_eq(tt_ndim(y), nd);
        for (int d = 0; d < nd; d++)
            ck_assert_int_eq(tt_sizes(y)[d], ys[d]);
        ck_assert(tt_is_contiguous(y));
        ck_assert_int_eq(tt_dtype_of(y), dt);
        assert_values(y, want, tt_numel(y), f ? 1e-12 : 1e-5, c->name);
        tt_release(y);
        /* unbatched: the first sample alone, unbatched result */
        tt_tensor *x0 = NN(tt_select(x, 0, 0));
        y = NN(case_call(c, x0, w, b));
        ck_assert_int_eq(tt_ndim(y), nd - 1);
        assert_values(y, want, tt_numel(y), f ? 1e-12 : 1e-5, c->name);
        tt_release(y);
        tt_release(x0);
        /* a non-contiguous input and weight: same values */
        tt_tensor *xt = NN(tt_transpose(x, 0, 1)), *xtc = NN(tt_contiguous(xt));
        tt_tensor *xnc = NN(tt_transpose(xtc, 0, 1));
        tt_tensor *wt = NN(tt_transpose(w, 0, 1)), *wtc = NN(tt_contiguous(wt));
        tt_tensor *wnc = NN(tt_transpose(wtc, 0, 1));
        ck_assert(!tt_is_contiguous(xnc) || xs[0] == 1 || xs[1] == 1);
        y = NN(case_call(c, xnc, wnc, b));
        assert_values(y, want, tt_numel(y), f ? 1e-12 : 1e-5, c->name);
        tt_release(y);
        tt_release(xt), tt_release(xtc), tt_release(xnc);
        tt_release(wt), tt_release(wtc), tt_release(wnc);
        free(xv), free(wv), free(bv), free(want);
        tt_release(x), tt_release(w), tt_release(b);
    }
    tt_debug_conv_backend(TT_CONV_AUTO);
}
END_TEST

/* The f32 gradients (input, weight, bias) by oneDNN equal im2col + GEMM's
 * (checked against the direct loop through gradcheck in f64). */
static void backends_agree(const conv_case *c);
START_TEST(test_conv_backends_agree)
{
    backends_agree(&cases[_i]);
}
END_TEST

/* The output-channel cut at 2, 3 and 4 threads (slices of 48 + 32, then
 * 32 + 32 + 16 channels: whole 16-channel blocks, the last shorter). */
START_TEST(test_conv_weight_grad_cut_by_channel)
{
    int old = tt_get_num_threads();
    for (int t = 2; t <= 4; t++) {
        tt_set_num_threads(t);
        backends_agree(&cases[TT_TABLE_LEN(cases) - 1]);
    }
    tt_set_num_threads(old);
}
END_TEST

static void backends_agree(const conv_case *c)
{
    int64_t xs[4], ws[4], ys[4];
    case_shapes(c, xs, ws, ys);
    int nd = c->nsp + 2;
    tt_tensor *in[3] = {rnd(nd, xs, TT_F32), rnd(nd, ws, TT_F32), rnd(1, &ys[1], TT_F32)};
    tt_tensor *gy = rnd(nd, ys, TT_F32);
    for (int i = 0; i < 3; i++)
        OK(tt_set_requires_grad(in[i], true));
    double *got[2][3];
    for (int b = 0; b < 2; b++) {
        tt_debug_conv_backend(b ? TT_CONV_ONEDNN : TT_CONV_GEMM);
        tt_tensor *y = NN(case_call(c, in[0], in[1], in[2])), *g[3];
        OK(tt_grad(1, &y, &gy, 3, in, g));
        for (int i = 0; i < 3; i++) {
            got[b][i] = values(g[i]);
            tt_release(g[i]);
        }
        tt_release(y);
    }
    tt_debug_conv_backend(TT_CONV_AUTO);
    for (int i = 0; i < 3; i++) {
        int64_t n = tt_numel(in[i]);
        for (int64_t j = 0; j < n; j++)
            CHECK(fabs(got[0][i][j] - got[1][i][j]) <= 1e-4 * (1 + fabs(got[0][i][j])),
                  "%s: gradient %d element %lld: GEMM %.9g, oneDNN %.9g", c->name, i,
                  (long long)j, got[0][i][j], got[1][i][j]);
        free(got[0][i]), free(got[1][i]);
        tt_release(in[i]);
    }
    tt_release(gy);
}

/* oneDNN primitives are created once per shape: replaying a compiled
 * f32 training step creates none. */
static tt_status step_fn(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud);

START_TEST(test_conv_primitive_cache)
{
    const conv_case *c = &cases[3];
    int64_t xs[4], ws[4], ys[4];
    case_shapes(c, xs, ws, ys);
    tt_tensor *in[3] = {rnd(4, xs, TT_F32), rnd(4, ws, TT_F32), rnd(1, &ys[1], TT_F32)};
    for (int i = 0; i < 3; i++)
        OK(tt_set_requires_grad(in[i], true));
    tt_trace_opts o = {.mode = TT_TRACE_FAKE, .fullgraph = true, .ud = (void *)c,
                       .ud_constant = true};
    tt_compiled *cc = NN(tt_compile(step_fn, 3, 4, &o));
    tt_tensor *out[4];
    OK(tt_compiled_call(cc, in, out)); /* traces, and creates the primitives */
    for (int i = 0; i < 4; i++)
        tt_release(out[i]);
    int64_t made = tt_debug_conv_primitives();
    ck_assert_int_gt(made, 0);
    for (int rep = 0; rep < 3; rep++) {
        OK(tt_compiled_call(cc, in, out));
        for (int i = 0; i < 4; i++)
            tt_release(out[i]);
    }
    ck_assert_int_eq(tt_debug_conv_primitives(), made);
    tt_compiled_free(cc);
    for (int i = 0; i < 3; i++)
        tt_release(in[i]);
}
END_TEST

/* ---------------------------------------------------------- gradcheck */

static tt_status conv_fn(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nout;
    const conv_case *c = ud;
    out[0] = case_call(c, in[0], in[1], nin > 2 ? in[2] : NULL);
    return out[0] ? TT_OK : tt_errcode();
}

/* d/d(input, weight, bias) of every case in f64, through
 * convolution_backward. */
START_TEST(test_conv_gradcheck)
{
    const conv_case *c = &cases[_i];
    int64_t xs[4], ws[4], ys[4];
    case_shapes(c, xs, ws, ys);
    xs[0] = ys[0] = 1; /* one sample keeps the finite differences quick */
    int nd = c->nsp + 2;
    tt_tensor *in[3] = {rnd(nd, xs, TT_F64), rnd(nd, ws, TT_F64),
                        c->bias ? rnd(1, &ys[1], TT_F64) : NULL};
    int nin = c->bias ? 3 : 2;
    for (int i = 0; i < nin; i++)
        OK(tt_set_requires_grad(in[i], true));
    tt_status st = tt_gradcheck(conv_fn, nin, in, 1, NULL, (void *)c);
    CHECK(st == TT_OK, "%s: %s", c->name, tt_errmsg());
    for (int i = 0; i < nin; i++)
        tt_release(in[i]);
}
END_TEST

/* Only the gradients asked for are computed: a frozen weight gets none. */
START_TEST(test_conv_grad_input_only)
{
    const conv_case *c = &cases[1];
    int64_t xs[4], ws[4], ys[4];
    case_shapes(c, xs, ws, ys);
    tt_tensor *x = rnd(4, xs, TT_F64), *w = rnd(4, ws, TT_F64);
    OK(tt_set_requires_grad(x, true));
    tt_tensor *y = NN(case_call(c, x, w, NULL));
    tt_tensor *s = NN(tt_sum_all(y));
    tt_tensor *gx = NULL;
    OK(tt_grad(1, &s, NULL, 1, &x, &gx));
    ck_assert_int_eq(tt_ndim(gx), 4);
    for (int d = 0; d < 4; d++)
        ck_assert_int_eq(tt_sizes(gx)[d], xs[d]);
    tt_release(gx), tt_release(s), tt_release(y), tt_release(x), tt_release(w);
}
END_TEST

/* --------------------------------------------------- channels_last */

/* A channels_last input gives a channels_last output (PyTorch 1.13 CPU),
 * and the gradients come back in the input's and weight's layouts. */
START_TEST(test_conv_channels_last)
{
    const conv_case *c = &cases[1];
    int64_t xs[4], ws[4], ys[4];
    case_shapes(c, xs, ws, ys);
    tt_tensor *x = rnd(4, xs, TT_F32), *w = rnd(4, ws, TT_F32);
    tt_tensor *xcl = NN(tt_contiguous_format(x, "channels_last"));
    tt_tensor *y = NN(case_call(c, x, w, NULL)), *ycl = NN(case_call(c, xcl, w, NULL));
    ck_assert(tt_is_contiguous(y) && !tt_is_contiguous(ycl));
    ck_assert_int_eq(tt_strides(ycl)[1], 1);
    ck_assert_int_eq(tt_strides(ycl)[3], ys[1]);
    double *a = values(y);
    assert_values(ycl, a, tt_numel(y), 1e-6, "channels_last");
    free(a);
    tt_release(y), tt_release(ycl), tt_release(xcl), tt_release(x), tt_release(w);
}
END_TEST

/* ------------------------------------------------- im2col and col2im */

/* im2col's columns hold the receptive fields (checked against the direct
 * convolution with a one-hot weight per column row), col2im is its adjoint
 * (<im2col(x), c> = <x, col2im(c)>), and both gradcheck. */
START_TEST(test_unfold_fold)
{
    const int64_t k[2] = {2, 3}, d[2] = {1, 2}, p[2] = {1, 0}, s[2] = {2, 1};
    const int64_t xs[4] = {2, 3, 6, 7};
    tt_tensor *x = rnd(4, xs, TT_F64);
    tt_tensor *cols = NN(tt_im2col(x, k, d, p, s));
    int64_t oh = (6 + 2 - 1 * 1 - 1) / 2 + 1, ow = (7 + 0 - 2 * 2 - 1) / 1 + 1;
    ck_assert_int_eq(tt_ndim(cols), 3);
    ck_assert_int_eq(tt_sizes(cols)[1], 3 * 6);
    ck_assert_int_eq(tt_sizes(cols)[2], oh * ow);
    /* entry [n, (c*2+ki)*3+kj, oy*ow+ox] = x[n, c, oy*2-1+ki, ox-0+kj*2] or 0 */
    double *xv = values(x), *cv = values(cols);
    for (int64_t n = 0; n < 2; n++)
        for (int64_t r = 0; r < 18; r++)
            for (int64_t l = 0; l < oh * ow; l++) {
                int64_t c = r / 6, ki = r / 3 % 2, kj = r % 3, oy = l / ow, ox = l % ow;
                int64_t iy = oy * 2 - 1 + ki, ix = ox + kj * 2;
                double want = iy >= 0 && iy < 6 && ix >= 0 && ix < 7
                                  ? xv[((n * 3 + c) * 6 + iy) * 7 + ix]
                                  : 0;
                CHECK(cv[(n * 18 + r) * oh * ow + l] == want, "im2col [%lld, %lld, %lld]",
                      (long long)n, (long long)r, (long long)l);
            }
    tt_tensor *cr = rnd(3, tt_sizes(cols), TT_F64);
    tt_tensor *fold = NN(tt_col2im(cr, (int64_t[]){6, 7}, k, d, p, s));
    ck_assert_int_eq(tt_sizes(fold)[3], 7);
    double *crv = values(cr), *fv = values(fold), lhs = 0, rhs = 0;
    for (int64_t i = 0; i < tt_numel(cols); i++)
        lhs += cv[i] * crv[i];
    for (int64_t i = 0; i < tt_numel(x); i++)
        rhs += xv[i] * fv[i];
    ck_assert_double_eq_tol(lhs, rhs, 1e-9 * (1 + fabs(lhs)));
    free(xv), free(cv), free(crv), free(fv);
    tt_release(fold), tt_release(cr), tt_release(cols), tt_release(x);
}
END_TEST

static const int64_t UK[2] = {2, 2}, UD[2] = {1, 1}, UP[2] = {1, 0}, US[2] = {1, 2};

static tt_status unfold_fn(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    out[0] = tt_im2col(in[0], UK, UD, UP, US);
    return out[0] ? TT_OK : tt_errcode();
}

static tt_status fold_fn(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    out[0] = tt_col2im(in[0], (int64_t[]){4, 5}, UK, UD, UP, US);
    return out[0] ? TT_OK : tt_errcode();
}

START_TEST(test_unfold_fold_gradcheck)
{
    tt_tensor *x = rnd(3, (int64_t[]){2, 4, 5}, TT_F64);
    OK(tt_set_requires_grad(x, true));
    OK(tt_gradcheck(unfold_fn, 1, &x, 1, NULL, NULL));
    /* [C kk, L]: L = 5 x 2 blocks for a 4 x 5 image, padding 1 in height */
    tt_tensor *c = rnd(2, (int64_t[]){2 * 4, 5 * 2}, TT_F64);
    OK(tt_set_requires_grad(c, true));
    OK(tt_gradcheck(fold_fn, 1, &c, 1, NULL, NULL));
    tt_release(c), tt_release(x);
}
END_TEST

/* ----------------------------------------------- compiled training step */

/* loss = sum(conv(x, w, b)^2): d/dx, d/dw, d/db in one traced graph. */
static tt_status step_fn(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    const conv_case *c = ud;
    tt_scope_begin();
    tt_tensor *y = case_call(c, in[0], in[1], in[2]);
    tt_tensor *y2 = y ? tt_mul(y, y) : NULL;
    tt_tensor *l = y2 ? tt_sum_all(y2) : NULL;
    tt_tensor *g[3] = {NULL, NULL, NULL};
    tt_status st = l ? tt_grad(1, &l, NULL, 3, in, g) : tt_errcode();
    out[0] = st ? NULL : tt_keep(l);
    for (int i = 0; i < 3; i++)
        out[1 + i] = st ? NULL : tt_keep(g[i]);
    tt_scope_end();
    return st;
}

START_TEST(test_conv_compiled_step)
{
    static const int which[] = {1, 3, 11};
    /* f64 (im2col + GEMM) and f32 (oneDNN), fake and symbolic traces */
    for (int m = 0; m < 4; m++)
        for (size_t k = 0; k < sizeof which / sizeof which[0]; k++) {
            const conv_case *c = &cases[which[k]];
            int64_t xs[4], ws[4], ys[4];
            case_shapes(c, xs, ws, ys);
            tt_dtype dt = m < 2 ? TT_F64 : TT_F32;
            tt_tensor *in[3] = {rnd(4, xs, dt), rnd(4, ws, dt), rnd(1, &ys[1], dt)};
            for (int i = 0; i < 3; i++)
                OK(tt_set_requires_grad(in[i], true));
            tt_trace_opts o = {.mode = m % 2 ? TT_TRACE_SYMBOLIC : TT_TRACE_FAKE,
                               .fullgraph = true,
                               .ud = (void *)c, .ud_constant = true};
            tt_compiled *cc = NN(tt_compile(step_fn, 3, 4, &o));
            tt_tensor *got[4] = {0}, *want[4] = {0};
            for (int rep = 0; rep < 2; rep++) {
                OK(tt_compiled_call(cc, in, got));
                OK(step_fn(in, 3, want, 4, (void *)c));
                for (int i = 0; i < 4; i++) {
                    double *wv = values(want[i]);
                    assert_values(got[i], wv, tt_numel(want[i]), m < 2 ? 1e-12 : 1e-6,
                                  c->name);
                    free(wv);
                    tt_release(got[i]), tt_release(want[i]);
                }
            }
            tt_compiled_free(cc);
            for (int i = 0; i < 3; i++)
                tt_release(in[i]);
        }
}
END_TEST

/* A traced training step holds one convolution node and one
 * convolution_backward node (the three gradients in one call), as
 * PyTorch's graphs do. */
START_TEST(test_conv_traced_nodes)
{
    const conv_case *c = &cases[3];
    int64_t xs[4], ws[4], ys[4];
    case_shapes(c, xs, ws, ys);
    tt_tensor *in[3] = {rnd(4, xs, TT_F32), rnd(4, ws, TT_F32), rnd(1, &ys[1], TT_F32)};
    for (int i = 0; i < 3; i++)
        OK(tt_set_requires_grad(in[i], true));
    tt_graph *g = NN(tt_trace(step_fn, 3, in,
                              &(tt_trace_opts){.mode = TT_TRACE_FAKE, .fullgraph = true,
                                               .nout = 4, .ud = (void *)c,
                                               .ud_constant = true}));
    int fwd = 0, bwd = 0;
    for (int i = 0; i < tt_graph_num_nodes(g); i++) {
        if (tt_graph_node_kind(g, i) != TT_NODE_OP)
            continue;
        const char *name = tt_op_name(tt_graph_node_op(g, i));
        fwd += strcmp(name, "tt::convolution") == 0;
        bwd += strcmp(name, "tt::convolution_backward") == 0;
    }
    ck_assert_int_eq(fwd, 1);
    ck_assert_int_eq(bwd, 1);
    tt_graph_free(g);
    for (int i = 0; i < 3; i++)
        tt_release(in[i]);
}
END_TEST

/* ------------------------------------------- convolution epilogues */

/* The chains compiled plans fold into tt::_convolution_pointwise, and
 * ones they must not: ud is the variant. Inputs: x, w, b, gamma, beta,
 * running mean, running var. */
enum { EPI_BN_RELU, EPI_RELU, EPI_BN, EPI_READ_TWICE, EPI_TRAIN_BN, EPI_NOBIAS_BN_RELU, EPI_N };
static tt_status epi_fn(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    int v = (int)(intptr_t)ud;
    tt_scope_begin();
    bool bias = v != EPI_NOBIAS_BN_RELU;
    tt_tensor *y = tt_conv2d(in[0], in[1], bias ? in[2] : NULL,
                             &(tt_conv_opts){.padding = {1, 1}, .stride = {1, 2}});
    tt_tensor *c = y;
    if (v != EPI_RELU && v != EPI_READ_TWICE)
        y = tt_batch_norm(y, in[3], in[4], in[5], in[6], v == EPI_TRAIN_BN, 0.1, 1e-3);
    if (v != EPI_BN)
        y = tt_relu(y);
    if (v == EPI_READ_TWICE)
        y = tt_add(y, c);
    out[0] = tt_keep(y);
    tt_scope_end();
    return out[0] ? TT_OK : tt_errcode();
}

START_TEST(test_conv_epilogues_fold)
{
    static const int want[EPI_N] = {1, 1, 1, 0, 0, 1};
    for (int m = 0; m < 4; m++)
        for (int v = 0; v < EPI_N; v++) {
            tt_dtype dt = m < 2 ? TT_F64 : TT_F32;
            tt_tensor *in[7] = {rnd(4, (int64_t[]){2, 3, 7, 6}, dt),
                                rnd(4, (int64_t[]){5, 3, 3, 3}, dt), rnd(1, (int64_t[]){5}, dt),
                                rnd(1, (int64_t[]){5}, dt), rnd(1, (int64_t[]){5}, dt),
                                rnd(1, (int64_t[]){5}, dt), NN(tt_rand(TT_SHAPE(5), dt))};
            tt_tensor *got = NULL, *want_t = NULL;
            for (int off = 0; off < 2; off++) {
                tt_trace_opts o = {.mode = m % 2 ? TT_TRACE_SYMBOLIC : TT_TRACE_FAKE,
                                   .fullgraph = true, .ud = (void *)(intptr_t)v,
                                   .ud_constant = true,
                                   .passes_off = off ? TT_PASS_EPILOGUE : 0};
                tt_compiled *cc = NN(tt_compile(epi_fn, 7, 1, &o));
                OK(tt_compiled_call(cc, in, &got));
                OK(epi_fn(in, 7, &want_t, 1, (void *)(intptr_t)v));
                double *wv = values(want_t);
                char what[64];
                snprintf(what, sizeof what, "variant %d mode %d passes_off %d", v, m, off);
                assert_values(got, wv, tt_numel(want_t), dt == TT_F64 ? 1e-12 : 1e-5, what);
                free(wv);
                tt_compile_stats st;
                tt_compiled_stats(cc, &st);
                ck_assert_msg(st.conv_epilogues == (off ? 0 : want[v]), "%s: %d folded", what,
                              st.conv_epilogues);
                const tt_graph *g = tt_compiled_graph(cc, 0);
                int fused = 0;
                for (int i = 0; i < tt_graph_num_nodes(g); i++)
                    fused += tt_graph_node_kind(g, i) == TT_NODE_OP &&
                             strcmp(tt_op_name(tt_graph_node_op(g, i)),
                                    "tt::_convolution_pointwise") == 0;
                ck_assert_int_eq(fused, st.conv_epilogues);
                got = tt_release(got);
                want_t = tt_release(want_t);
                tt_compiled_free(cc);
            }
            for (int i = 0; i < 7; i++)
                tt_release(in[i]);
        }
}
END_TEST

/* oneDNN's scratchpads and reordered operands come from tt__alloc_storage
 * on the calling thread, so a compiled plan's memory plan holds them: the
 * planned block is larger than the step's own results, and a replay makes
 * no allocator call. (Under AddressSanitizer the library's caches are
 * bypassed, so only the block's size is checked there.) */
static int64_t conv_hook_allocs;
static void *conv_counting_alloc(size_t size, size_t align, void *ud)
{
    (void)ud;
    conv_hook_allocs++;
    void *p = NULL;
    return posix_memalign(&p, align < sizeof(void *) ? sizeof(void *) : align,
                          size ? size : 1) == 0 ? p : NULL;
}
static void conv_counting_free(void *p, void *ud)
{
    (void)ud;
    free(p);
}
static tt_status conv_only(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    out[0] = tt_conv2d(in[0], in[1], NULL, &(tt_conv_opts){.padding = {1, 1}});
    return out[0] ? TT_OK : tt_errcode();
}

START_TEST(test_conv_plan_covers_scratchpads)
{
#if defined(__SANITIZE_ADDRESS__)
    const bool caches = false;
#else
    const bool caches = true;
#endif
    tt_set_allocator(&(tt_allocator){conv_counting_alloc, conv_counting_free, NULL});
    /* switching allocators empties the per-thread quarantine of released
     * tensor structs (runtime/alloc.c): refill it, as a running program has */
    for (int i = 0; i < 200; i++)
        tt_release(tt_empty(TT_SHAPE(1), TT_F32));
    tt_debug_conv_backend(TT_CONV_ONEDNN);
    tt_tensor *in[2] = {rnd(4, (int64_t[]){8, 16, 16, 16}, TT_F32),
                        rnd(4, (int64_t[]){32, 16, 3, 3}, TT_F32)};
    tt_compiled *c = NN(tt_compile(conv_only, 2, 1, &(tt_trace_opts){.fullgraph = true}));
    int64_t out_bytes = 8 * 32 * 16 * 16 * 4;
    for (int k = 0; k < 4; k++) {
        int64_t before = conv_hook_allocs;
        tt_tensor *y = NULL;
        OK(tt_compiled_call(c, in, &y));
        tt_release(y);
        tt_compile_stats st;
        tt_compiled_stats(c, &st);
        ck_assert_msg(st.planned_bytes > out_bytes, "planned %lld bytes",
                      (long long)st.planned_bytes);
        if (k >= 2)
            ck_assert_msg(!caches || conv_hook_allocs == before,
                          "replay %d made %lld allocator calls", k,
                          (long long)(conv_hook_allocs - before));
    }
    tt_compiled_free(c);
    tt_release(in[0]), tt_release(in[1]);
    tt_debug_conv_backend(TT_CONV_AUTO);
    tt_set_allocator(NULL);
}
END_TEST

/* The ResNet-18 the bench times (tools/resnet18.c), at batch 2: two
 * compiled training steps give eager's losses and leave eager's weights,
 * momentum buffers and running statistics; compiled inference (its
 * convolutions fused with their batch norms and ReLUs) gives eager's
 * logits. */
START_TEST(test_resnet18_compiled_equals_eager)
{
    resnet18 r[2];
    for (int k = 0; k < 2; k++) {
        OK(resnet18_init(&r[k], 10, 7));
        tt_manual_seed(3);
        r[k].in[0] = NN(tt_randn(TT_SHAPE(2, 3, 32, 32), TT_F32));
        r[k].in[1] = NN(tt_from_data(TT_SHAPE(2), TT_I64, (const int64_t[]){3, 8}));
    }
    tt_compiled *c = NN(tt_compile(resnet18_step, RESNET_STEP_NIN, 1,
                                   &(tt_trace_opts){.mode = TT_TRACE_FAKE, .fullgraph = true,
                                                    .ud = &r[1], .ud_size = sizeof r[1].sgd}));
    for (int step = 0; step < 2; step++) {
        tt_tensor *le = NULL, *lc = NULL;
        OK(resnet18_step(r[0].in, RESNET_STEP_NIN, &le, 1, &r[0]));
        OK(tt_compiled_call(c, r[1].in, &lc));
        double ve = 0, vc = 0;
        OK(tt_item(le, &ve));
        OK(tt_item(lc, &vc));
        ck_assert_msg(fabs(ve - vc) <= 1e-4 * (1 + fabs(ve)), "step %d: loss %.9g vs eager %.9g",
                      step, vc, ve);
        tt_release(le), tt_release(lc);
    }
    for (int i = 2; i < RESNET_STEP_NIN; i++)
        tt_test_assert_close(r[1].in[i], r[0].in[i], 1e-3, "input after two steps");
    tt_compiled_free(c);
    c = NN(tt_compile(resnet18_eval, RESNET_STEP_NIN, 1,
                      &(tt_trace_opts){.fullgraph = true, .ud_constant = true}));
    tt_tensor *ye = NULL, *yc = NULL;
    OK(resnet18_eval(r[0].in, RESNET_STEP_NIN, &ye, 1, NULL));
    OK(tt_compiled_call(c, r[0].in, &yc));
    tt_compile_stats st;
    tt_compiled_stats(c, &st);
    ck_assert_int_eq(st.conv_epilogues, 20);
    tt_test_assert_close(yc, ye, 1e-4, "logits");
    tt_release(ye), tt_release(yc);
    tt_compiled_free(c);
    for (int k = 0; k < 2; k++) {
        tt_release(r[k].in[0]), tt_release(r[k].in[1]);
        resnet18_free(&r[k]);
    }
}
END_TEST

/* The fused op refuses what it cannot mean, naming the argument. */
START_TEST(test_conv_pointwise_errors)
{
    const tt_op *op = NN(tt_op_find("tt::_convolution_pointwise"));
    tt_tensor *x = rnd(4, (int64_t[]){1, 2, 4, 4}, TT_F32), *w = rnd(4, (int64_t[]){3, 2, 1, 1}, TT_F32);
    tt_tensor *m3 = rnd(1, (int64_t[]){3}, TT_F32), *m2 = rnd(1, (int64_t[]){2}, TT_F32);
    tt_value r = tt_v_none();
#define PW_CALL(mean, var, attr)                                                 \
    tt_op_call(op, (tt_value[]){tt_v_tensor(x), tt_v_tensor(w), tt_v_none(), tt_v_ints(2, (int64_t[]){1, 1}), \
                                tt_v_ints(2, (int64_t[]){0, 0}), tt_v_ints(2, (int64_t[]){1, 1}), tt_v_int(1), \
                                tt_v_none(), tt_v_none(), mean, var, tt_v_float(1e-5), tt_v_str(attr)}, \
               13, &r, 1)
    ck_assert_int_eq(PW_CALL(tt_v_none(), tt_v_none(), "gelu"), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt::_convolution_pointwise: argument 'attr' (#13) is 'gelu'; "
                               "expected 'none' or 'relu'");
    ck_assert_int_eq(PW_CALL(tt_v_tensor(m3), tt_v_none(), "relu"), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt::_convolution_pointwise: a batch norm needs both "
                               "bn_running_mean (#10) and bn_running_var (#11)");
    ck_assert_int_eq(PW_CALL(tt_v_tensor(m3), tt_v_tensor(m2), "none"), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt::_convolution_pointwise: argument #11: expected a [3] f32 "
                               "tensor (one per output channel)");
    OK(PW_CALL(tt_v_tensor(m3), tt_v_tensor(m3), "relu"));
    tt_value_clear(&r);
#undef PW_CALL
    tt_release(x), tt_release(w), tt_release(m3), tt_release(m2);
}
END_TEST

/* A symbolic batch and image size flow through the fake path. */
START_TEST(test_conv_symbolic)
{
    tt_sym_reset();
    tt_size n = tt_sym_new("s", 4), h = tt_sym_new("s", 9);
    tt_tensor *x = NN(tt_fake_empty(4, (tt_size[]){n, 3, h, h}, TT_F32));
    tt_tensor *w = NN(tt_fake_empty(4, (tt_size[]){8, 3, 3, 3}, TT_F32));
    tt_conv_opts o = {.stride = {2, 2}, .padding = {1, 1}};
    tt_tensor *y = NN(tt_conv2d(x, w, NULL, &o));
    ck_assert(tt_is_fake(y));
    ck_assert(tt_sizes(y)[0] == n);
    ck_assert_int_eq(tt_sym_hint(tt_sizes(y)[2]), 5);
    ck_assert(tt_size_is_sym(tt_sizes(y)[2]));
    tt_release(y), tt_release(w), tt_release(x);
    tt_sym_reset();
}
END_TEST

/* Out of memory at any allocation of a convolution and its backward is
 * TT_ENOMEM, never a crash or a wrong result, and leaves nothing behind;
 * f32 (oneDNN: its cache entry, scratchpads, chunks) and f64 (im2col
 * columns). A shape no other test uses, so its primitives are made here. */
START_TEST(test_conv_oom)
{
    for (int f = 0; f < 2; f++) {
        tt_dtype dt = f ? TT_F64 : TT_F32;
        tt_tensor *x = rnd(4, (int64_t[]){3, 2, 9, 7}, dt), *w = rnd(4, (int64_t[]){5, 2, 3, 2}, dt);
        OK(tt_set_requires_grad(x, true));
        OK(tt_set_requires_grad(w, true));
        tt_conv_opts o = {.stride = {2, 1}, .padding = {1, 1}};
        int failures = 0;
        for (int64_t k = 1; k < 200; k++) {
            tt_debug_fail_alloc(k);
            tt_tensor *y = tt_conv2d(x, w, NULL, &o), *g[2] = {NULL, NULL};
            tt_status st = y ? tt_grad(1, &y, &y, 2, (tt_tensor *[]){x, w}, g) : tt_errcode();
            tt_debug_fail_alloc(0);
            tt_release(y), tt_release(g[0]), tt_release(g[1]);
            if (st == TT_OK)
                break;
            ck_assert_int_eq(st, TT_ENOMEM);
            failures++;
        }
        ck_assert_int_ge(failures, 3);
        /* and then it works, with the right values */
        tt_tensor *y = NN(tt_conv2d(x, w, NULL, &o));
        tt_debug_conv_backend(TT_CONV_GEMM);
        tt_tensor *y2 = NN(tt_conv2d(x, w, NULL, &o));
        tt_debug_conv_backend(TT_CONV_AUTO);
        double *a = values(y2);
        assert_values(y, a, tt_numel(y), 1e-5, "after out of memory");
        free(a);
        tt_release(y), tt_release(y2), tt_release(x), tt_release(w);
    }
}
END_TEST

/* ---------------------------------------------------------------- errors */

static struct {
    tt_tensor *x, *w, *w3, *w5, *b3, *xd, *xi, *wi, *x2;
} in;

static void errors_setup(void)
{
    tt_test_setup();
    in.x = rnd(4, (int64_t[]){2, 3, 8, 8}, TT_F32);
    in.w = rnd(4, (int64_t[]){4, 3, 3, 3}, TT_F32);
    in.w3 = rnd(3, (int64_t[]){4, 3, 3}, TT_F32);
    in.w5 = rnd(2, (int64_t[]){4, 3}, TT_F32);
    in.b3 = rnd(1, (int64_t[]){3}, TT_F32);
    in.xd = rnd(4, (int64_t[]){2, 3, 8, 8}, TT_F64);
    in.x2 = rnd(4, (int64_t[]){2, 3, 2, 2}, TT_F32);
    in.xi = NN(tt_zeros(4, (int64_t[]){2, 3, 8, 8}, TT_I64));
    in.wi = NN(tt_zeros(4, (int64_t[]){4, 3, 3, 3}, TT_I64));
}

static void errors_teardown(void)
{
    tt_tensor **all[] = {&in.x, &in.w, &in.w3, &in.w5, &in.b3, &in.xd, &in.xi, &in.wi, &in.x2};
    for (int i = 0; i < TT_TABLE_LEN(all); i++) {
        tt_release(*all[i]);
        *all[i] = NULL;
    }
    tt_test_teardown();
}

static const tt_op *conv_op(void) { return tt_op_find("tt::convolution"); }

#define CONV_CALL(x, w, b, s, p, d, tr, op, g)                                 \
    tt_call(conv_op(), tt_v_tensor(x), tt_v_tensor(w), b, tt_v_ints(TT_INTS s),  \
            tt_v_ints(TT_INTS p), tt_v_ints(TT_INTS d), tt_v_bool(tr),         \
            tt_v_ints(TT_INTS op), tt_v_int(g))

#define CONV_ERRORS(X)                                                         \
    X(channels, tt_conv2d(in.x, in.w, NULL, &(tt_conv_opts){.groups = 3}), TT_ESHAPE, \
      "tt::convolution: Given groups=3, expected weight to be divisible by 3 at " \
      "dimension 0, but got weight of size [4, 3, 3, 3] instead")             \
    X(groups_channels, tt_conv2d(in.x, in.w, NULL, &(tt_conv_opts){.groups = 2}), TT_ESHAPE, \
      "tt::convolution: Given groups=2, weight of size [4, 3, 3, 3], expected " \
      "input[2, 3, 8, 8] to have 6 channels, but got 3 channels instead")    \
    X(kernel_too_big, tt_conv2d(in.x2, in.w, NULL, NULL), TT_ESHAPE,           \
      "tt::convolution: Calculated padded input size per channel: (2 x 2). Kernel " \
      "size: (3 x 3). Kernel size can't be greater than actual input size")    \
    X(bias_size, tt_conv2d(in.x, in.w, in.b3, NULL), TT_ESHAPE,                \
      "tt::convolution: Given weight of size [4, 3, 3, 3], expected bias to be " \
      "1-dimensional with 4 elements, but got bias of size [3] instead")      \
    X(transposed_channels,                                                     \
      tt_conv2d(in.x, in.w, NULL, &(tt_conv_opts){.transposed = true}), TT_ESHAPE, \
      "tt::convolution: Given transposed=1, weight of size [4, 3, 3, 3], expected " \
      "input[2, 3, 8, 8] to have 4 channels, but got 3 channels instead")    \
    X(transposed_output_padding,                                               \
      tt_conv2d(in.x, in.w, NULL,                                              \
                &(tt_conv_opts){.transposed = true, .output_padding = {1, 1}}), TT_EINVAL, \
      "output padding must be smaller than either stride or dilation")        \
    X(negative_padding, tt_conv2d(in.x, in.w, NULL, &(tt_conv_opts){.padding = {-1, 0}}), \
      TT_EINVAL, "tt::convolution: negative padding is not supported")         \
    X(negative_stride, tt_conv2d(in.x, in.w, NULL, &(tt_conv_opts){.stride = {-1, 1}}), \
      TT_EINVAL, "tt::convolution: non-positive stride is not supported")     \
    X(negative_dilation, tt_conv2d(in.x, in.w, NULL, &(tt_conv_opts){.dilation = {1, -2}}), \
      TT_EINVAL, "tt::convolution: non-positive dilation is not supported")   \
    X(zero_groups, CONV_CALL(in.x, in.w, tt_v_none(), (1, 1), (0, 0), (1, 1), false, (0, 0), 0), \
      TT_EINVAL, "tt::convolution: non-positive groups is not supported")     \
    X(stride_length,                                                           \
      CONV_CALL(in.x, in.w, tt_v_none(), (1, 1, 1), (0, 0), (1, 1), false, (0, 0), 1), \
      TT_EINVAL, "tt::convolution: expected stride to be a single integer value or a " \
      "list of 2 values to match the convolution dimensions, but got stride=[1, 1, 1]") \
    X(unbatched_op, CONV_CALL(in.w3, in.w, tt_v_none(), (1), (0), (1), false, (0), 1), \
      TT_ESHAPE, "tt::convolution: Expected 4-dimensional input for 4-dimensional weight " \
      "[4, 3, 3, 3], but got 3-dimensional input of size [4, 3, 3] instead")  \
    X(weight_2d, tt_conv2d(in.x, in.w5, NULL, NULL), TT_ESHAPE,                \
      "tt::convolution: weight should have at least three dimensions")        \
    X(wrapper_input_dims, tt_conv2d(in.w5, in.w, NULL, NULL), TT_ESHAPE,       \
      "tt_conv2d: Expected 3D (unbatched) or 4D (batched) input to conv2d, but got " \
      "input of size: [4, 3]")                                                 \
    X(dtype_mix, tt_conv2d(in.xd, in.w, NULL, NULL), TT_EDTYPE,                \
      "tt::convolution: argument 'weight' (#2): expected scalar type f64 (as input) " \
      "but found f32")                                                         \
    X(integer, tt_conv2d(in.xi, in.wi, NULL, NULL), TT_EDTYPE,                 \
      "tt::convolution: argument 'input' (#1): expected f32 or f64, got i64")   \
    X(null_weight, tt_conv2d(in.x, NULL, NULL, NULL), TT_EINVAL,               \
      "tt_conv2d: argument 'w' expects a tensor, got NULL")                    \
    X(im2col_dims, tt_im2col(in.w5, (int64_t[]){2, 2}, (int64_t[]){1, 1}, (int64_t[]){0, 0}, \
                             (int64_t[]){1, 1}), TT_ESHAPE,                    \
      "tt::im2col: Expected 3D or 4D (batch mode) tensor")                     \
    X(im2col_kernel, tt_im2col(in.x2, (int64_t[]){3, 3}, (int64_t[]){1, 1}, (int64_t[]){0, 0}, \
                               (int64_t[]){1, 1}), TT_ESHAPE,                  \
      "its components must be at least one")                                  \
    X(im2col_stride, tt_im2col(in.x, (int64_t[]){2, 2}, (int64_t[]){1, 1}, (int64_t[]){0, 0}, \
                               (int64_t[]){0, 1}), TT_EINVAL,                  \
      "tt::im2col: argument 'stride' (#5): stride should be greater than zero, but got " \
      "stride_height: 0 stride_width: 1")                       \
    X(im2col_null_pair, tt_im2col(in.x, NULL, (int64_t[]){1, 1}, (int64_t[]){0, 0},       \
                                  (int64_t[]){1, 1}), TT_EINVAL,                 \
      "tt_im2col: argument 'kernel_size' is NULL (expected 2 values)")         \
    X(col2im_null_pair, tt_col2im(in.w5, (int64_t[]){4, 4}, (int64_t[]){2, 2},  \
                                  (int64_t[]){1, 1}, NULL, (int64_t[]){1, 1}), TT_EINVAL, \
      "tt_col2im: argument 'padding' is NULL (expected 2 values)")             \
    X(im2col_null_input, tt_im2col(NULL, (int64_t[]){2, 2}, (int64_t[]){1, 1},             \
                                   (int64_t[]){0, 0}, (int64_t[]){1, 1}), TT_EINVAL, \
      "tt::im2col: argument 'self' (#1)")                                     \
    X(col2im_blocks, tt_col2im(in.w5, (int64_t[]){4, 4}, (int64_t[]){3, 3},  \
                               (int64_t[]){1, 1}, (int64_t[]){0, 0}, (int64_t[]){1, 1}), \
      TT_ESHAPE, "tt::col2im: Expected size of input's dimension 1 to be divisible by the " \
      "product of kernel_size, but got input.size(1)=4 and kernel_size=(3, 3)")                     \
    X(col2im_length, tt_col2im(in.w5, (int64_t[]){4, 4}, (int64_t[]){2, 2},  \
                               (int64_t[]){1, 1}, (int64_t[]){0, 0}, (int64_t[]){1, 1}), \
      TT_ESHAPE, "kernel_size=(2, 2)")

TT_ERROR_TABLE(CONV_ERRORS, conv_errors);

START_TEST(test_conv_errors)
{
    tt_test_run_error_case(&conv_errors[_i], _i);
}
END_TEST

/* A masked-out gradient of convolution_backward is an empty tensor. */
START_TEST(test_conv_backward_mask)
{
    tt_tensor *x = rnd(4, (int64_t[]){2, 3, 6, 6}, TT_F32), *w = rnd(4, (int64_t[]){4, 3, 3, 3}, TT_F32);
    tt_tensor *g = rnd(4, (int64_t[]){2, 4, 4, 4}, TT_F32);
    tt_value out[3];
    static const bool mask[3] = {false, true, false};
    const tt_value args[] = {tt_v_tensor(g), tt_v_tensor(x), tt_v_tensor(w), tt_v_none(),
                             tt_v_ints(TT_INTS(1, 1)), tt_v_ints(TT_INTS(0, 0)),
                             tt_v_ints(TT_INTS(1, 1)), tt_v_bool(false),
                             tt_v_ints(TT_INTS(0, 0)), tt_v_int(1), tt_v_bools(3, mask)};
    OK(tt_op_call(tt_op_find("tt::convolution_backward"), args, TT_TABLE_LEN(args), out, 3));
    ck_assert_int_eq(tt_numel(out[0].u.t), 0);
    ck_assert_int_eq(tt_ndim(out[1].u.t), 4);
    ck_assert_int_eq(tt_numel(out[2].u.t), 0);
    for (int i = 0; i < 3; i++)
        tt_value_clear(&out[i]);
    tt_release(x), tt_release(w), tt_release(g);
}
END_TEST


/* F22: a transposed convolution's output_padding adds output positions
 * that no input reaches (they hold the bias alone). A 1x1 kernel at stride
 * 1 took the GEMM path that treats the image as its own col matrix, which
 * left them unwritten. Against a direct loop, over dtypes (the GEMM and
 * oneDNN paths), channel counts, kernels and strides, with the allocator
 * dirtied first. */
START_TEST(test_conv_transposed_output_padding)
{
    for (int dt = 0; dt < 2; dt++)
        for (int64_t C = 1; C <= 8; C += 7)
            for (int64_t k = 1; k <= 3; k += 2)
                for (int64_t s = 1; s <= 2; s++) {
                    tt_release(NN(tt_full(TT_SHAPE(4096), 7.0, TT_F32)));
                    tt_dtype d = dt ? TT_F64 : TT_F32;
                    const int64_t N = 2, L = 3, O = 2, Lo = (L - 1) * s + 2 * (k - 1) + 2;
                    tt_tensor *x = NN(tt_randn(TT_SHAPE(N, C, L), d));
                    tt_tensor *w = NN(tt_randn(TT_SHAPE(C, O, k), d));
                    tt_tensor *b = NN(tt_full(TT_SHAPE(O), 5.0, d));
                    tt_conv_opts o = {.stride = {s, s}, .dilation = {2, 2},
                                      .output_padding = {1, 1}, .transposed = true};
                    tt_tensor *y = NN(tt_conv1d(x, w, b, &o));
                    ck_assert_int_eq(tt_dim_size(y, 2), Lo);
                    double *xv = tt_test_values(x), *wv = tt_test_values(w);
                    double *yv = tt_test_values(y);
                    for (int64_t n = 0; n < N; n++)
                        for (int64_t oc = 0; oc < O; oc++)
                            for (int64_t j = 0; j < Lo; j++) {
                                double ref = 5;
                                for (int64_t c = 0; c < C; c++)
                                    for (int64_t i = 0; i < L; i++)
                                        for (int64_t t = 0; t < k; t++)
                                            if (i * s + 2 * t == j)
                                                ref += xv[(n * C + c) * L + i] *
                                                       wv[(c * O + oc) * k + t];
                                double got = yv[(n * O + oc) * Lo + j];
                                ck_assert_msg(fabs(ref - got) <= 1e-4 * (1 + fabs(ref)),
                                              "%s C=%lld k=%lld s=%lld: y[%lld, %lld, %lld] "
                                              "is %g, want %g",
                                              dt ? "f64" : "f32", (long long)C, (long long)k,
                                              (long long)s, (long long)n, (long long)oc,
                                              (long long)j, got, ref);
                            }
                    free(xv);
                    free(wv);
                    free(yv);
                    tt_release(x);
                    tt_release(w);
                    tt_release(b);
                    tt_release(y);
                }
}
END_TEST

/* FINDINGS F28 (tt-difftest): a convolution of a one-channel input whose
 * channel count is a symbolic size equal to 1 by its example value (a
 * pooled height, transposed into the channel dim). Eager took the input
 * as contiguous (a size-1 dim's stride does not count), the symbolic
 * trace as channels last, so the traced result's strides differed. Both
 * decide by the example value now (through a guard). */
static int64_t F28_STRIDES[4]; /* the traced result's strides, as hints */

static tt_status f_pool_t_conv(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_scope_begin();
    tt_tensor *p = tt_max_pool2d(in[0], &(tt_pool_opts){.kernel = {2, 3}, .stride = {3, 3}});
    tt_tensor *t = p ? tt_transpose(p, -2, 1) : NULL; /* [B, 1, 3, 2] */
    tt_tensor *y = t ? tt_conv2d(t, in[1], in[2], &(tt_conv_opts){.dilation = {2, 2}}) : NULL;
    if (y && tt_is_fake(y))
        for (int d = 0; d < 4; d++)
            F28_STRIDES[d] = tt_sym_hint(tt_strides(y)[d]);
    out[0] = y ? tt_keep(y) : NULL;
    tt_scope_end();
    return out[0] ? TT_OK : tt_errcode();
}

START_TEST(test_conv_symbolic_one_channel_layout)
{
    tt_tensor *in[3] = {tt_test_randn(TT_SHAPE(6, 3, 2, 6), TT_F32),
                        tt_test_randn(TT_SHAPE(4, 1, 2, 1), TT_F32),
                        tt_test_randn(TT_SHAPE(4), TT_F32)};
    tt_graph *g = tt_trace(f_pool_t_conv, 3, in,
                           &(tt_trace_opts){.mode = TT_TRACE_SYMBOLIC, .fullgraph = true});
    ck_assert_msg(g != NULL, "trace: %s", tt_errmsg());
    tt_tensor *y = NULL;
    OK(f_pool_t_conv(in, 3, &y, 1, NULL));
    for (int d = 0; d < 4; d++)
        ck_assert_msg(F28_STRIDES[d] == tt_strides(y)[d], "dim %d: traced stride %lld, eager %lld",
                      d, (long long)F28_STRIDES[d], (long long)tt_strides(y)[d]);
    tt_release(y);
    tt_graph_free(g);
    for (int i = 0; i < 3; i++)
        tt_release(in[i]);
    tt_sym_reset();
}
END_TEST

static Suite *conv_suite(void)
{
    Suite *s = suite_create("ops_conv");
    TCase *tc = tt_tcase("convolution");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, test_conv_cases, 0, TT_TABLE_LEN(cases));
    tcase_add_loop_test(tc, test_conv_gradcheck, 0, TT_TABLE_LEN(cases));
    tcase_add_loop_test(tc, test_conv_backends_agree, 0, TT_TABLE_LEN(cases));
    tcase_add_test(tc, test_conv_weight_grad_cut_by_channel);
    tcase_add_test(tc, test_conv_primitive_cache);
    tcase_add_test(tc, test_conv_grad_input_only);
    tcase_add_test(tc, test_conv_channels_last);
    tcase_add_test(tc, test_unfold_fold);
    tcase_add_test(tc, test_unfold_fold_gradcheck);
    tcase_add_test(tc, test_conv_compiled_step);
    tcase_add_test(tc, test_conv_symbolic);
    tcase_add_test(tc, test_conv_epilogues_fold);
    tcase_add_test(tc, test_conv_symbolic_one_channel_layout);
    tcase_add_test(tc, test_conv_pointwise_errors);
    tcase_add_test(tc, test_conv_plan_covers_scratchpads);
    tcase_add_test(tc, test_resnet18_compiled_equals_eager);
    tcase_add_test(tc, test_conv_traced_nodes);
    tcase_add_test(tc, test_conv_oom);
    tcase_add_test(tc, test_conv_backward_mask);
    tcase_add_test(tc, test_conv_transposed_output_padding);
    suite_add_tcase(s, tc);
    tc = tt_tcase_with("errors", errors_setup, errors_teardown);
    tcase_add_loop_test(tc, test_conv_errors, 0, TT_TABLE_LEN(conv_errors));
    suite_add_tcase(s, tc);
    return s;
}

TT_TEST_MAIN(conv_suite)
