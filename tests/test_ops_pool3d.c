/* The 3-d pooling ops (ops/pool3d.c): what tests/data/torch_ref.txt cannot
 * say. Values against plain loops here over layouts and argument forms;
 * NaN; gradcheck of every derivative in f64; every error's status and
 * message; traced and compiled forward + backward equal to eager; symbolic
 * sizes through the fake path; zero live tensors (the fixture checks). */
#include "tt_test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        if (!(cond))                                                           \
            ck_abort_msg(__VA_ARGS__);                                         \
    } while (0)

/* Distinct values in a scrambled order (no ties), as f64 converted to dt. */
static tt_tensor *scrambled(int nd, const int64_t *sizes, tt_dtype dt)
{
    int64_t n = 1;
    for (int d = 0; d < nd; d++)
        n *= sizes[d];
    double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++)
        v[i] = (double)((i * 7919) % (n * 2 + 1)) / 8.0 - (double)n / 8.0;
    tt_tensor *t = NN(tt_from_data(nd, sizes, TT_F64, v));
    free(v);
    tt_tensor *r = NN(tt_to_dtype(t, dt));
    tt_release(t);
    return r;
}

/* Element (n, c, d, h, w) of a 5-d tensor, any strides. */
static double at5(const tt_tensor *x, int64_t n, int64_t c, int64_t d, int64_t h, int64_t w)
{
    const tt_size *st = tt_strides(x);
    int64_t off = n * st[0] + c * st[1] + d * st[2] + h * st[3] + w * st[4];
    const char *p = tt_data(x);
    return tt_dtype_of(x) == TT_F64   ? ((const double *)p)[off]
           : tt_dtype_of(x) == TT_I64 ? (double)((const int64_t *)p)[off]
                                      : (double)((const float *)p)[off];
}

static int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil)
{
    int64_t num = in + 2 * p - d * (k - 1) - 1 + (ceil ? s - 1 : 0);
    int64_t o = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
    if (ceil && (o - 1) * s >= in + p)
        o--;
    return o;
}

typedef struct {
    int64_t k[3], s[3], p[3], d[3];
    bool ceil, exclude;
    int64_t div;
} case3;

static const case3 cases[] = {
    {{2, 2, 2}, {2, 2, 2}, {0, 0, 0}, {1, 1, 1}, false, false, 0},
    {{3, 3, 3}, {2, 2, 2}, {1, 1, 1}, {1, 1, 1}, true, false, 0},
    {{3, 2, 3}, {2, 1, 2}, {1, 1, 0}, {1, 1, 1}, true, true, 0},
    {{2, 3, 2}, {1, 2, 3}, {1, 1, 1}, {2, 1, 2}, false, false, 5},
    {{3, 3, 2}, {3, 2, 1}, {1, 0, 1}, {1, 2, 1}, true, true, -3},
    {{1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, false, false, 0},
};

static tt_pool3d_opts opts_of(const case3 *c, bool max)
{
    tt_pool3d_opts o = {.ceil_mode = c->ceil, .exclude_pad = c->exclude,
                        .divisor_override = max ? 0 : c->div};
    for (int i = 0; i < 3; i++) {
        o.kernel[i] = c->k[i], o.stride[i] = c->s[i], o.padding[i] = c->p[i];
        o.dilation[i] = max ? c->d[i] : 1;
    }
    return o;
}

/* y (and ind for max) against plain loops over x, 5-d. */
static void check_pool(const tt_tensor *x, const case3 *c, bool max, const tt_tensor *y,
                       const tt_tensor *ind, const char *what)
{
    const tt_size *sz = tt_sizes(x);
    int64_t in[3] = {sz[2], sz[3], sz[4]}, o[3];
    for (int i = 0; i < 3; i++)
        o[i] = out_size(in[i], c->k[i], c->s[i], c->p[i], max ? c->d[i] : 1, c->ceil);
    CHECK(tt_ndim(y) == 5 && tt_sizes(y)[2] == o[0] && tt_sizes(y)[3] == o[1] &&
              tt_sizes(y)[4] == o[2], "%s: output sizes", what);
    CHECK(tt_is_contiguous(y), "%s: contiguous result", what);
    double tol = tt_dtype_of(x) == TT_F32 ? 1e-5 : 1e-12;
    for (int64_t n = 0; n < sz[0]; n++)
        for (int64_t ch = 0; ch < sz[1]; ch++)
            for (int64_t a = 0; a < o[0]; a++)
                for (int64_t b = 0; b < o[1]; b++)
                    for (int64_t e = 0; e < o[2]; e++) {
                        int64_t ov[3] = {a, b, e}, lo[3], hi[3], pool = 1, inside = 1;
                        double m = -INFINITY, sum = 0;
                        int64_t mi = -1;
                        for (int i = 0; i < 3; i++) {
                            lo[i] = ov[i] * c->s[i] - c->p[i];
                            int64_t end = lo[i] + c->k[i];
                            end = end < in[i] + c->p[i] ? end : in[i] + c->p[i];
                            pool *= end - lo[i];
                            hi[i] = end < in[i] ? end : in[i];
                        }
                        for (int64_t i = 0; i < c->k[0]; i++)
                            for (int64_t j = 0; j < c->k[1]; j++)
                                for (int64_t l = 0; l < c->k[2]; l++) {
                                    int64_t dd = max ? c->d[0] : 1, dh = max ? c->d[1] : 1;
                                    int64_t dw = max ? c->d[2] : 1;
                                    int64_t t = lo[0] + i * dd, h = lo[1] + j * dh;
                                    int64_t w = lo[2] + l * dw;
                                    if (t < 0 || t >= in[0] || h < 0 || h >= in[1] || w < 0 ||
                                        w >= in[2])
                                        continue;
                                    double v = at5(x, n, ch, t, h, w);
                                    sum += v;
                                    if (mi < 0 || v > m)
                                        m = v, mi = (t * in[1] + h) * in[2] + w;
                                }
                        for (int i = 0; i < 3; i++)
                            inside *= hi[i] - (lo[i] > 0 ? lo[i] : 0);
                        double got = at5(y, n, ch, a, b, e);
                        if (max) {
                            CHECK(got == m && at5(ind, n, ch, a, b, e) == (double)mi,
                                  "%s: max at (%lld %lld %lld): got %g at %g, expected %g at "
                                  "%lld", what, (long long)a, (long long)b, (long long)e, got,
                                  at5(ind, n, ch, a, b, e), m, (long long)mi);
                        } else {
                            double div = c->div ? (double)c->div
                                         : c->exclude ? (double)inside : (double)pool;
                            double want = sum / div;
                            CHECK(fabs(got - want) <= tol * (1 + fabs(want)),
                                  "%s: avg at (%lld %lld %lld): got %g, expected %g", what,
                                  (long long)a, (long long)b, (long long)e, got, want);
                        }
                    }
}

/* Every case, f32 and f64, over contiguous, channels_last_3d, transposed
 * and stepped inputs; the unbatched form equals the batched one. */
START_TEST(test_values)
{
    const tt_dtype dts[2] = {TT_F32, TT_F64};
    const int64_t shape[5] = {2, 3, 5, 6, 7};
    for (int t = 0; t < 2; t++)
        for (int i = 0; i < TT_TABLE_LEN(cases); i++)
            for (int max = 0; max < 2; max++) {
                const case3 *c = &cases[i];
                tt_pool3d_opts o = opts_of(c, max);
                tt_tensor *x = scrambled(5, shape, dts[t]);
                tt_tensor *cl = NN(tt_contiguous_format(x, "channels_last_3d"));
                ck_assert_int_eq(tt_strides(cl)[1], 1);
                tt_tensor *xt = NN(tt_transpose(x, 2, 4)); /* [2, 3, 7, 6, 5] */
                tt_tensor *big = scrambled(5, (int64_t[]){2, 3, 5, 6, 14}, dts[t]);
                tt_tensor *xs = NN(tt_slice(big, 4, 1, 14, 2));
                const tt_tensor *ins[4] = {x, cl, xt, xs};
                for (int l = 0; l < 4; l++) {
                    char what[96];
                    snprintf(what, sizeof what, "case %d %s layout %d %s", i,
                             max ? "max" : "avg", l, tt_dtype_name(dts[t]));
                    tt_tensor *ind = NULL;
                    tt_tensor *y = max ? NN(tt_max_pool3d_with_indices(ins[l], &o, &ind))
                                       : NN(tt_avg_pool3d(ins[l], &o));
                    check_pool(ins[l], c, max, y, ind, what);
                    if (max) {
                        ck_assert(tt_dtype_of(ind) == TT_I64 && tt_is_contiguous(ind));
                        tt_tensor *y2 = NN(tt_max_pool3d(ins[l], &o));
                        tt_test_assert_same_bits(y, y2, what);
                        tt_release(y2);
                    }
                    if (l == 0) { /* unbatched: image 1 alone */
                        tt_tensor *x1 = NN(tt_select(ins[l], 0, 1));
                        tt_tensor *i1 = NULL;
                        tt_tensor *y1 = max ? NN(tt_max_pool3d_with_indices(x1, &o, &i1))
                                            : NN(tt_avg_pool3d(x1, &o));
                        tt_tensor *ys = NN(tt_select(y, 0, 1));
                        ck_assert_int_eq(tt_ndim(y1), 4);
                        tt_test_assert_same_bits(y1, ys, what);
                        if (max) {
                            tt_tensor *is = NN(tt_select(ind, 0, 1));
                            tt_test_assert_same_bits(i1, is, what);
                            tt_release(is);
                        }
                        tt_release(ys);
                        tt_release(y1);
                        tt_release(i1);
                        tt_release(x1);
                    }
                    tt_release(ind);
                    tt_release(y);
                }
                tt_release(xs);
                tt_release(big);
                tt_release(xt);
                tt_release(cl);
                tt_release(x);
            }
}
END_TEST

/* Volumes large enough to be split over tasks (channels_last_3d input). */
START_TEST(test_values_parallel)
{
    tt_tensor *b = scrambled(5, (int64_t[]){2, 8, 12, 20, 24}, TT_F32);
    tt_tensor *x = NN(tt_contiguous_format(b, "channels_last_3d"));
    for (int max = 0; max < 2; max++) {
        tt_pool3d_opts o = opts_of(&cases[1], max);
        tt_tensor *ind = NULL;
        tt_tensor *y = max ? NN(tt_max_pool3d_with_indices(x, &o, &ind)) : NN(tt_avg_pool3d(x, &o));
        check_pool(x, &cases[1], max, y, ind, max ? "max, parallel" : "avg, parallel");
        tt_release(ind);
        tt_release(y);
    }
    tt_release(x);
    tt_release(b);
}
END_TEST

/* i64 average pooling: integer sums, truncating division (as PyTorch). */
START_TEST(test_avg_i64)
{
    int64_t v[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    tt_tensor *x = NN(tt_from_data(5, (int64_t[]){1, 1, 2, 2, 2}, TT_I64, v));
    tt_tensor *y = NN(tt_avg_pool3d(
        x, &(tt_pool3d_opts){.kernel = {2, 2, 2}, .stride = {1, 1, 1}, .padding = {1, 1, 1}}));
    ck_assert_int_eq(tt_dtype_of(y), TT_I64);
    const int64_t *yv = tt_data(y);
    /* the centre window holds all 8 (sum 28 / 8 = 3), a corner one (7 / 8 = 0) */
    ck_assert_int_eq(yv[13], 3);
    ck_assert_int_eq(yv[26], 0);
    ck_assert_int_eq(yv[14], 2); /* 4+5+6+7 = 22 / 8 */
    tt_release(y);
    tt_release(x);
}
END_TEST

/* Adaptive pooling against the plain windows [floor(o in / out),
 * ceil((o + 1) in / out)) in each dim, up- and downsizing. */
START_TEST(test_adaptive_values)
{
    const int64_t outs[4][3] = {{3, 2, 4}, {1, 1, 1}, {7, 6, 9}, {5, 0, 2}};
    for (int t = 0; t < 2; t++)
        for (int k = 0; k < 4; k++) {
            tt_tensor *x = scrambled(5, (int64_t[]){2, 3, 5, 4, 7}, t ? TT_F64 : TT_F32);
            tt_tensor *cl = NN(tt_contiguous_format(x, "channels_last_3d"));
            const tt_tensor *ins[2] = {x, cl};
            for (int l = 0; l < 2; l++) {
                const int64_t *o = outs[k];
                tt_tensor *y = NN(tt_adaptive_avg_pool3d(ins[l], o[0], o[1], o[2]));
                ck_assert(tt_is_contiguous(y) && tt_sizes(y)[2] == o[0] &&
                          tt_sizes(y)[3] == o[1] && tt_sizes(y)[4] == o[2]);
                const int64_t in[3] = {5, 4, 7};
                for (int64_t n = 0; n < 2; n++)
                    for (int64_t c = 0; c < 3; c++)
                        for (int64_t a = 0; a < o[0]; a++)
                            for (int64_t b = 0; b < o[1]; b++)
                                for (int64_t e = 0; e < o[2]; e++) {
                                    int64_t ov[3] = {a, b, e}, lo[3], hi[3];
                                    for (int i = 0; i < 3; i++) {
                                        lo[i] = ov[i] * in[i] / o[i];
                                        hi[i] = ((ov[i] + 1) * in[i] + o[i] - 1) / o[i];
                                    }
                                    double sum = 0;
                                    for (int64_t p = lo[0]; p < hi[0]; p++)
                                        for (int64_t q = lo[1]; q < hi[1]; q++)
                                            for (int64_t r = lo[2]; r < hi[2]; r++)
                                                sum += at5(ins[l], n, c, p, q, r);
                                    double want = sum / (double)((hi[0] - lo[0]) *
                                                                 (hi[1] - lo[1]) *
                                                                 (hi[2] - lo[2]));
                                    double got = at5(y, n, c, a, b, e);
                                    CHECK(fabs(got - want) <= 1e-5 * (1 + fabs(want)),
                                          "adaptive %d layout %d: got %g expected %g", k, l,
                                          got, want);
                                }
                tt_release(y);
            }
            /* unbatched */
            tt_tensor *x1 = NN(tt_select(x, 0, 0));
            tt_tensor *y1 = NN(tt_adaptive_avg_pool3d(x1, 3, 2, 4));
            tt_tensor *y = NN(tt_adaptive_avg_pool3d(x, 3, 2, 4));
            tt_tensor *ys = NN(tt_select(y, 0, 0));
            tt_test_assert_same_bits(y1, ys, "adaptive unbatched");
            tt_release(ys);
            tt_release(y);
            tt_release(y1);
            tt_release(x1);
            tt_release(cl);
            tt_release(x);
        }
}
END_TEST

/* NaN wins a window (as PyTorch); -inf windows keep the first index. */
START_TEST(test_max_nan_inf)
{
    double v[8] = {1, 2, NAN, 4, 5, 6, 7, 8};
    tt_tensor *x = NN(tt_from_data(4, (int64_t[]){1, 2, 2, 2}, TT_F64, v));
    tt_tensor *ind = NULL;
    tt_tensor *y = NN(tt_max_pool3d_with_indices(x, &(tt_pool3d_opts){.kernel = {2, 2, 2}},
                                                 &ind));
    ck_assert(isnan(((const double *)tt_data(y))[0]));
    ck_assert_int_eq(((const int64_t *)tt_data(ind))[0], 2);
    tt_release(y);
    tt_release(ind);
    tt_release(x);
    double m[8] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY,
                   -INFINITY, -INFINITY, -INFINITY, -INFINITY};
    x = NN(tt_from_data(4, (int64_t[]){1, 2, 2, 2}, TT_F64, m));
    y = NN(tt_max_pool3d_with_indices(x, &(tt_pool3d_opts){.kernel = {2, 2, 2}}, &ind));
    ck_assert(isinf(((const double *)tt_data(y))[0]));
    ck_assert_int_eq(((const int64_t *)tt_data(ind))[0], 0);
    tt_release(y);
    tt_release(ind);
    tt_release(x);
}
END_TEST

/* Overlapping max windows add their gradients at one element. */
START_TEST(test_max_backward_overlap)
{
    double v[27] = {0};
    v[13] = 9;
    tt_tensor *x = NN(tt_from_data(4, (int64_t[]){1, 3, 3, 3}, TT_F64, v));
    OK(tt_set_requires_grad(x, true));
    tt_tensor *y = NN(tt_max_pool3d(
        x, &(tt_pool3d_opts){.kernel = {2, 2, 2}, .stride = {1, 1, 1}}));
    tt_tensor *s = NN(tt_sum_all(y));
    OK(tt_backward(s, NULL));
    tt_tensor *g = NN(tt_get_grad(x));
    const double *gv = tt_data(g);
    for (int i = 0; i < 27; i++)
        ck_assert_double_eq(gv[i], i == 13 ? 8 : 0);
    tt_release(g);
    tt_release(s);
    tt_release(y);
    tt_release(x);
}
END_TEST

/* --------------------------------------------------------------- errors */

static struct {
    tt_tensor *x, *x3, *x0, *xi, *xb, *g, *gbad, *ind, *indbad, *ind32, *g64, *x2;
} in;

static void errors_setup(void)
{
    tt_test_setup();
    in.x = scrambled(5, (int64_t[]){1, 3, 4, 4, 4}, TT_F32);
    in.x3 = scrambled(3, (int64_t[]){4, 4, 4}, TT_F32);
    in.x0 = NN(tt_zeros(TT_SHAPE(1, 0, 4, 4, 4), TT_F32));
    in.xi = NN(tt_zeros(TT_SHAPE(1, 3, 4, 4, 4), TT_I64));
    in.xb = NN(tt_zeros(TT_SHAPE(1, 3, 4, 4, 4), TT_BOOL));
    in.g = NN(tt_zeros(TT_SHAPE(1, 3, 2, 2, 2), TT_F32));
    in.gbad = NN(tt_zeros(TT_SHAPE(1, 3, 2, 3, 2), TT_F32));
    in.ind = NN(tt_zeros(TT_SHAPE(1, 3, 2, 2, 2), TT_I64));
    in.indbad = NN(tt_full(TT_SHAPE(1, 3, 2, 2, 2), 64, TT_I64));
    in.ind32 = NN(tt_zeros(TT_SHAPE(1, 3, 2, 2, 2), TT_I32));
    in.g64 = NN(tt_zeros(TT_SHAPE(1, 3, 2, 2, 2), TT_F64));
    in.x2 = scrambled(5, (int64_t[]){1, 1, 2, 2, 2}, TT_F32);
}

static void errors_teardown(void)
{
    tt_tensor *all[] = {in.x, in.x3, in.x0, in.xi, in.xb, in.g, in.gbad, in.ind,
                        in.indbad, in.ind32, in.g64, in.x2};
    for (int k = 0; k < TT_TABLE_LEN(all); k++)
        tt_release(all[k]);
    memset(&in, 0, sizeof in);
    tt_test_teardown();
}

static tt_tensor *op_call(const char *name, int n, const tt_value *args)
{
    return tt_op_call1(tt_op_find(name), args, n);
}
#define CALL(name, ...)                                                        \
    op_call(name, (int)(sizeof((tt_value[]){__VA_ARGS__}) / sizeof(tt_value)), \
            (const tt_value[]){__VA_ARGS__})
#define I3(a, b, c) tt_v_ints(3, (const int64_t[]){a, b, c})
#define MP(x, ...) tt_max_pool3d((x), &(tt_pool3d_opts){__VA_ARGS__})
#define AP(x, ...) tt_avg_pool3d((x), &(tt_pool3d_opts){__VA_ARGS__})
#define MP_BW(g, x, ind)                                                       \
    CALL("tt::max_pool3d_with_indices_backward", tt_v_tensor(g), tt_v_tensor(x), \
         tt_v_int(2), tt_v_int(2), tt_v_int(0), tt_v_int(1), tt_v_bool(false), \
         tt_v_tensor(ind))
#define AP_BW(g, x)                                                            \
    CALL("tt::avg_pool3d_backward", tt_v_tensor(g), tt_v_tensor(x), I3(2, 2, 2), \
         I3(2, 2, 2), I3(0, 0, 0), tt_v_bool(false), tt_v_bool(true), tt_v_none())

/* The boxed max_pool3d_with_indices (two results), kernel_size n values. */
static tt_status mp_kernel_values(int n)
{
    tt_value outs[2] = {tt_v_none(), tt_v_none()};
    tt_value args[2] = {tt_v_tensor(in.x), tt_v_ints(n, (int64_t[]){2, 2, 2, 2})};
    tt_status st = tt_op_call(tt_op_find("tt::max_pool3d_with_indices"), args, 2, outs, 2);
    tt_value_clear(&outs[0]);
    tt_value_clear(&outs[1]);
    return st;
}

#define POOL3D_ERRORS(X)                                                       \
    X(avg_3d, AP(in.x3, .kernel = {2, 2, 2}), TT_ESHAPE,                       \
      "tt::avg_pool3d: argument 'self' (#1): expected a 4-d [C, D, H, W] or "  \
      "5-d [N, C, D, H, W] tensor with non-zero sizes (N may be 0), got [4, "  \
      "4, 4]")                                                                 \
    X(avg_zero_channels, AP(in.x0, .kernel = {2, 2, 2}), TT_ESHAPE,            \
      "got [1, 0, 4, 4, 4]")                                                   \
    X(avg_bool, AP(in.xb, .kernel = {2, 2, 2}), TT_EDTYPE,                     \
      "tt::avg_pool3d: argument 'self' (#1): expected f32, f64 or i64, got "   \
      "bool")                                                                  \
    X(avg_kernel_zero, AP(in.x, .kernel = {2, 0, 2}), TT_EINVAL,               \
      "tt::avg_pool3d: argument 'kernel_size' (#2): expected values greater "  \
      "than zero, got [2, 0, 2]")                                              \
    X(avg_stride_negative, AP(in.x, .kernel = {2, 2, 2}, .stride = {1, 1, -1}), \
      TT_EINVAL, "tt::avg_pool3d: argument 'stride' (#3): expected values "    \
      "greater than zero, got [1, 1, -1]")                                     \
    X(avg_pad_half, AP(in.x, .kernel = {2, 2, 2}, .padding = {0, 2, 0}),       \
      TT_EINVAL, "tt::avg_pool3d: argument 'padding' (#4): pad should be at "  \
      "most half of kernel size, but got pad=2 and kernel_size=2")             \
    X(avg_pad_negative, AP(in.x, .kernel = {2, 2, 2}, .padding = {-1, 0, 0}),  \
      TT_EINVAL, "tt::avg_pool3d: argument 'padding' (#4): expected "          \
      "non-negative values, got [-1, 0, 0]")                                   \
    X(avg_input_small,                                                         \
      AP(in.x2, .kernel = {3, 3, 3}, .stride = {1, 1, 1}, .padding = {1, 1, 1}), \
      TT_ESHAPE, "tt::avg_pool3d: argument 'self' (#1): input image (D: 2 H: " \
      "2 W: 2) smaller than kernel size (kD: 3 kH: 3 kW: 3)")                  \
    X(avg_divisor_zero,                                                        \
      CALL("tt::avg_pool3d", tt_v_tensor(in.x), tt_v_int(2), tt_v_ints(0, NULL), \
           tt_v_int(0), tt_v_bool(false), tt_v_bool(true), tt_v_int(0)),       \
      TT_EINVAL, "tt::avg_pool3d: argument 'divisor_override' (#7): divisor "  \
      "must be not zero")                                                      \
    X(avg_dilation, AP(in.x, .kernel = {2, 2, 2}, .dilation = {1, 2, 1}),      \
      TT_EINVAL, "tt_avg_pool3d: argument 'opts': dilation is max pooling's "  \
      "only (expected 0 or 1), got [1, 2, 1]")                                 \
    X(avg_no_opts, tt_avg_pool3d(in.x, NULL), TT_EINVAL,                       \
      "tt_avg_pool3d: argument 'opts' is NULL")                                \
    X(avg_bw_shape, AP_BW(in.gbad, in.x), TT_ESHAPE,                           \
      "tt::avg_pool3d_backward: argument 'grad_output' (#1): expected shape "  \
      "[1, 3, 2, 2, 2], got [1, 3, 2, 3, 2]")                                  \
    X(avg_bw_dtype, AP_BW(in.g64, in.x), TT_EDTYPE,                            \
      "tt::avg_pool3d_backward: argument 'grad_output' (#1): expected f32 "    \
      "like 'self', got f64")                                                  \
    X(avg_bw_i64, AP_BW(in.ind, in.xi), TT_EDTYPE,                             \
      "tt::avg_pool3d_backward: argument 'self' (#2): expected f32 or f64, "   \
      "got i64")                                                               \
    X(max_i64, MP(in.xi, .kernel = {2, 2, 2}), TT_EDTYPE,                      \
      "tt::max_pool3d_with_indices: argument 'self' (#1): expected f32 or "    \
      "f64, got i64")                                                          \
    X(max_3d, MP(in.x3, .kernel = {2, 2, 2}), TT_ESHAPE,                       \
      "tt::max_pool3d_with_indices: argument 'self' (#1): expected a 4-d")     \
    X(max_dilation_zero, MP(in.x, .kernel = {2, 2, 2}, .dilation = {1, -1, 1}), \
      TT_EINVAL, "tt::max_pool3d_with_indices: argument 'dilation' (#5): "     \
      "expected values greater than zero, got [1, -1, 1]")                     \
    X(max_too_small,                                                           \
      MP(in.x, .kernel = {3, 3, 3}, .stride = {1, 1, 1}, .dilation = {2, 1, 1}), \
      TT_ESHAPE, "tt::max_pool3d_with_indices: argument 'self' (#1): given "   \
      "input size (3x4x4x4), the calculated output size (3x0x2x2) is too "     \
      "small")                                                                 \
    X(max_kernel_4_values, mp_kernel_values(4), TT_EINVAL,                     \
      "argument 'kernel_size' (#2)")                                           \
    X(max_kernel_1_value, mp_kernel_values(1), TT_EINVAL,                      \
      "argument 'kernel_size' (#2)")                                           \
    X(max_no_indices, tt_max_pool3d_with_indices(in.x, &(tt_pool3d_opts){.kernel = {2, 2, 2}}, \
                                                 NULL),                        \
      TT_EINVAL, "tt_max_pool3d_with_indices: argument 'indices' is NULL")     \
    X(max_bw_grad_shape, MP_BW(in.gbad, in.x, in.ind), TT_ESHAPE,              \
      "tt::max_pool3d_with_indices_backward: argument 'grad_output' (#1): "    \
      "expected shape [1, 3, 2, 2, 2], got [1, 3, 2, 3, 2]")                   \
    X(max_bw_ind_shape, MP_BW(in.g, in.x, in.gbad), TT_ESHAPE,                 \
      "tt::max_pool3d_with_indices_backward: argument 'indices' (#8): "        \
      "expected shape [1, 3, 2, 2, 2], got [1, 3, 2, 3, 2]")                   \
    X(max_bw_index_range, MP_BW(in.g, in.x, in.indbad), TT_EINVAL,             \
      "tt::max_pool3d_with_indices_backward: argument 'indices' (#8): an "     \
      "index is outside its input volume of 64 elements")                      \
    X(max_bw_index_dtype, MP_BW(in.g, in.x, in.ind32), TT_EDTYPE,              \
      "tt::max_pool3d_with_indices_backward: argument 'indices' (#8): "        \
      "expected i64, got i32")                                                 \
    X(max_bw_grad_dtype, MP_BW(in.g64, in.x, in.ind), TT_EDTYPE,               \
      "argument 'grad_output' (#1): expected f32 like 'self', got f64")        \
    X(adaptive_negative, tt_adaptive_avg_pool3d(in.x, 2, -1, 2), TT_EINVAL,    \
      "tt::_adaptive_avg_pool3d: argument 'output_size' (#2): expected sizes " \
      "of at least 0, got [2, -1, 2]")                                         \
    X(adaptive_3d, tt_adaptive_avg_pool3d(in.x3, 2, 2, 2), TT_ESHAPE,          \
      "tt::_adaptive_avg_pool3d: argument 'self' (#1): expected a 4-d [C, D, " \
      "H, W] or 5-d [N, C, D, H, W] tensor with non-zero sizes (N may be 0), " \
      "got [4, 4, 4]")                                                         \
    X(adaptive_zero_channels, tt_adaptive_avg_pool3d(in.x0, 2, 2, 2),          \
      TT_ESHAPE, "got [1, 0, 4, 4, 4]")                                        \
    X(adaptive_i64, tt_adaptive_avg_pool3d(in.xi, 2, 2, 2), TT_EDTYPE,         \
      "tt::_adaptive_avg_pool3d: argument 'self' (#1): expected f32 or f64, "  \
      "got i64")                                                               \
    X(adaptive_two_sizes,                                                      \
      CALL("tt::_adaptive_avg_pool3d", tt_v_tensor(in.x), tt_v_ints(2, (const int64_t[]){2, 2})), \
      TT_EINVAL, "argument 'output_size' (#2)")                                \
    X(adaptive_bw_shape,                                                       \
      CALL("tt::_adaptive_avg_pool3d_backward", tt_v_tensor(in.ind32), tt_v_tensor(in.x)), \
      TT_EDTYPE, "tt::_adaptive_avg_pool3d_backward: argument 'grad_output' "  \
      "(#1): expected f32 like 'self', got i32")                               \
    X(adaptive_bw_batch,                                                       \
      CALL("tt::_adaptive_avg_pool3d_backward", tt_v_tensor(in.g), tt_v_tensor(in.x0)), \
      TT_ESHAPE, "tt::_adaptive_avg_pool3d_backward: argument 'self' (#2)")    \
    X(adaptive_bw_ndim,                                                        \
      CALL("tt::_adaptive_avg_pool3d_backward", tt_v_tensor(in.x3), tt_v_tensor(in.x)), \
      TT_ESHAPE, "tt::_adaptive_avg_pool3d_backward: argument 'grad_output' "  \
      "(#1): expected shape [1, 3, 4, 4, 4], got [4, 4, 4]")

TT_ERROR_TABLE(POOL3D_ERRORS, pool3d_errors);

START_TEST(test_errors)
{
    tt_test_run_error_case(&pool3d_errors[_i], _i);
}
END_TEST

/* ------------------------------------------------- traced and compiled */

typedef tt_test_model model_fn;

static tt_tensor *m_avg(tt_tensor *x)
{
    return tt_avg_pool3d(x, &(tt_pool3d_opts){.kernel = {3, 2, 3}, .stride = {2, 1, 2},
                                               .padding = {1, 1, 1}, .ceil_mode = true});
}
static tt_tensor *m_avg_exclude(tt_tensor *x)
{
    return tt_avg_pool3d(x, &(tt_pool3d_opts){.kernel = {3, 3, 3}, .stride = {2, 2, 2},
                                               .padding = {1, 1, 1}, .ceil_mode = true,
                                               .exclude_pad = true});
}
static tt_tensor *m_avg_divisor(tt_tensor *x)
{
    return tt_avg_pool3d(x, &(tt_pool3d_opts){.kernel = {2, 2, 3}, .padding = {1, 1, 1},
                                               .divisor_override = 7});
}
static tt_tensor *m_max(tt_tensor *x)
{
    return tt_max_pool3d(x, &(tt_pool3d_opts){.kernel = {3, 2, 3}, .stride = {2, 1, 2},
                                               .padding = {1, 1, 1}, .ceil_mode = true});
}
static tt_tensor *m_max_dilated(tt_tensor *x)
{
    return tt_max_pool3d(x, &(tt_pool3d_opts){.kernel = {2, 2, 2}, .dilation = {2, 1, 2}});
}
static tt_tensor *m_adaptive(tt_tensor *x) { return tt_adaptive_avg_pool3d(x, 3, 2, 4); }
static tt_tensor *m_adaptive_1(tt_tensor *x) { return tt_adaptive_avg_pool3d(x, 1, 1, 1); }

static const struct {
    const char *name;
    model_fn fn;
    int nd;
    int64_t sizes[5];
} models[] = {
    {"avg_pool3d", m_avg, 5, {2, 2, 5, 4, 6}},
    {"avg_pool3d exclude_pad", m_avg_exclude, 4, {2, 5, 4, 6}},
    {"avg_pool3d divisor", m_avg_divisor, 5, {1, 2, 4, 5, 6}},
    {"max_pool3d", m_max, 5, {2, 2, 5, 4, 6}},
    {"max_pool3d dilated", m_max_dilated, 4, {2, 5, 4, 6}},
    {"adaptive_avg_pool3d", m_adaptive, 5, {2, 2, 5, 4, 6}},
    {"adaptive_avg_pool3d 1x1x1", m_adaptive_1, 4, {2, 5, 4, 6}},
};

static tt_tensor *f64_input(int nd, const int64_t *sizes)
{
    return scrambled(nd, sizes, TT_F64);
}

/* Every derivative against finite differences, contiguous and (5-d)
 * channels_last_3d. */
START_TEST(test_gradcheck)
{
    tt_test_gradcheck_layouts(models[_i].fn, models[_i].nd, models[_i].sizes, f64_input, 5,
                              "channels_last_3d", models[_i].name);
}
END_TEST

/* A symbolic trace compiled once runs inputs of two shapes: forward and
 * backward equal eager. */
START_TEST(test_compiled_equals_eager)
{
    tt_test_compiled_two_shapes(models[_i].fn, models[_i].nd, models[_i].sizes, f64_input, 1e-12,
                                models[_i].name);
}
END_TEST

/* Symbolic D, H and W flow into the output sizes (fake path), forward and
 * backward. */
START_TEST(test_symbolic_sizes)
{
    tt_sym_reset();
    tt_size d = tt_sym_new("s", 9), h = tt_sym_new("s", 8), w = tt_sym_new("s", 7);
    tt_tensor *x = NN(tt_fake_empty(5, (tt_size[]){2, 3, d, h, w}, TT_F32));
    tt_tensor *ind = NULL;
    tt_tensor *y = NN(tt_max_pool3d_with_indices(x, &(tt_pool3d_opts){.kernel = {2, 2, 2}},
                                                 &ind));
    ck_assert(tt_size_is_sym(tt_sizes(y)[2]) && tt_is_fake(y) && tt_is_fake(ind));
    ck_assert(tt_sym_hint(tt_sizes(y)[2]) == 4 && tt_sym_hint(tt_sizes(y)[3]) == 4 &&
              tt_sym_hint(tt_sizes(y)[4]) == 3);
    tt_tensor *gi = NN(tt_call(tt_op_find("tt::max_pool3d_with_indices_backward"),
                               tt_v_tensor(y), tt_v_tensor(x), tt_v_int(2), tt_v_int(2),
                               tt_v_int(0), tt_v_int(1), tt_v_bool(false), tt_v_tensor(ind)));
    ck_assert(tt_sizes(gi)[2] == d && tt_sizes(gi)[4] == w);
    tt_release(gi);
    tt_release(ind);
    tt_release(y);
    y = NN(tt_avg_pool3d(x, &(tt_pool3d_opts){.kernel = {3, 3, 3}, .stride = {2, 2, 2},
                                               .padding = {1, 1, 1}, .ceil_mode = true}));
    ck_assert(tt_size_is_sym(tt_sizes(y)[2]) && tt_sym_hint(tt_sizes(y)[2]) == 5);
    ck_assert(tt_sym_hint(tt_sizes(y)[3]) == 5 && tt_sym_hint(tt_sizes(y)[4]) == 4);
    gi = NN(tt_call(tt_op_find("tt::avg_pool3d_backward"), tt_v_tensor(y), tt_v_tensor(x),
                    I3(3, 3, 3), I3(2, 2, 2), I3(1, 1, 1), tt_v_bool(true), tt_v_bool(true),
                    tt_v_none()));
    ck_assert(tt_sizes(gi)[3] == h);
    tt_release(gi);
    tt_release(y);
    /* an adaptive output size may itself be a symbol */
    y = NN(tt_call(tt_op_find("tt::_adaptive_avg_pool3d"), tt_v_tensor(x),
                   tt_v_ints(3, (const int64_t[]){w, 3, h})));
    ck_assert(tt_sizes(y)[2] == w && tt_sizes(y)[3] == 3 && tt_sizes(y)[4] == h);
    gi = NN(tt_call(tt_op_find("tt::_adaptive_avg_pool3d_backward"), tt_v_tensor(y),
                    tt_v_tensor(x)));
    ck_assert(tt_sizes(gi)[2] == d && tt_is_fake(gi));
    tt_release(gi);
    tt_release(y);
    tt_release(x);
    tt_sym_reset();
}
END_TEST

static Suite *pool3d_suite(void)
{
    Suite *s = suite_create("ops_pool3d");
    TCase *tc = tt_tcase("values");
    tcase_add_test(tc, test_values);
    tcase_add_test(tc, test_values_parallel);
    tcase_add_test(tc, test_avg_i64);
    tcase_add_test(tc, test_adaptive_values);
    tcase_add_test(tc, test_max_nan_inf);
    tcase_add_test(tc, test_max_backward_overlap);
    tcase_add_test(tc, test_symbolic_sizes);
    suite_add_tcase(s, tc);
    tc = tt_tcase("every op");
    tcase_add_loop_test(tc, test_gradcheck, 0, TT_TABLE_LEN(models));
    tcase_add_loop_test(tc, test_compiled_equals_eager, 0, TT_TABLE_LEN(models));
    suite_add_tcase(s, tc);
    tc = tt_tcase_with("errors", errors_setup, errors_teardown);
    tcase_add_loop_test(tc, test_errors, 0, TT_TABLE_LEN(pool3d_errors));
    suite_add_tcase(s, tc);
    return s;
}

TT_TEST_MAIN(pool3d_suite)
