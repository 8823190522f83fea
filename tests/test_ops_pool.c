/* Pooling, padding and upsampling (issue 26): what the differential file
 * (tests/data/torch_ref.txt) cannot say. Every op's values against a plain
 * loop in the test, over layouts; gradcheck of every derivative in f64;
 * every error path's status and message; a traced and compiled forward +
 * backward equal to eager; symbolic sizes through the fake path; zero live
 * tensors at the end of each test (the fixture checks). */
#include "tt_test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        if (!(cond))                                                           \
            ck_abort_msg(__VA_ARGS__);                                         \
    } while (0)

/* Distinct values in a scrambled order (no ties: max pooling's gradient
 * is then well defined for gradcheck), as f64 converted to dt. */
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

/* x's element (n, c, h, w) of a 4-d tensor, any strides. */
static double at4(const tt_tensor *x, int64_t n, int64_t c, int64_t h, int64_t w)
{
    const tt_size *st = tt_strides(x);
    int64_t off = n * st[0] + c * st[1] + h * st[2] + w * st[3];
    const char *p = tt_data(x);
    return tt_dtype_of(x) == TT_F64 ? ((const double *)p)[off]
           : tt_dtype_of(x) == TT_I64 ? (double)((const int64_t *)p)[off]
                                      : (double)((const float *)p)[off];
}

/* ------------------------------------------------------------- max pool */

typedef struct {
    int64_t k[2], s[2], p[2], d[2];
    bool ceil;
} mp_case;

static int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil)
{
    int64_t num = in + 2 * p - d * (k - 1) - 1 + (ceil ? s - 1 : 0);
    int64_t o = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
    if (ceil && (o - 1) * s >= in + p)
        o--;
    return o;
}

/* Checks y and ind against a plain loop over x (4-d). */
static void check_max_pool(const tt_tensor *x, const mp_case *c, const tt_tensor *y,
                           const tt_tensor *ind, const char *what)
{
    int64_t N = tt_sizes(x)[0], C = tt_sizes(x)[1], H = tt_sizes(x)[2], W = tt_sizes(x)[3];
    int64_t OH = out_size(H, c->k[0], c->s[0], c->p[0], c->d[0], c->ceil);
    int64_t OW = out_size(W, c->k[1], c->s[1], c->p[1], c->d[1], c->ceil);
    CHECK(tt_ndim(y) == 4 && tt_sizes(y)[2] == OH && tt_sizes(y)[3] == OW,
          "%s: output %lldx%lld expected", what, (long long)OH, (long long)OW);
    for (int64_t n = 0; n < N; n++)
        for (int64_t ch = 0; ch < C; ch++)
            for (int64_t oh = 0; oh < OH; oh++)
                for (int64_t ow = 0; ow < OW; ow++) {
                    double m = -INFINITY;
                    int64_t mi = -1;
                    for (int64_t i = 0; i < c->k[0]; i++)
                        for (int64_t j = 0; j < c->k[1]; j++) {
                            int64_t h = oh * c->s[0] - c->p[0] + i * c->d[0];
                            int64_t w = ow * c->s[1] - c->p[1] + j * c->d[1];
                            if (h < 0 || h >= H || w < 0 || w >= W)
                                continue;
                            double v = at4(x, n, ch, h, w);
                            if (mi < 0 || v > m)
                                m = v, mi = h * W + w;
                        }
                    CHECK(at4(y, n, ch, oh, ow) == m && at4(ind, n, ch, oh, ow) == (double)mi,
                          "%s: (%lld, %lld, %lld, %lld): got %g at %g, expected %g at %lld",
                          what, (long long)n, (long long)ch, (long long)oh, (long long)ow,
                          at4(y, n, ch, oh, ow), at4(ind, n, ch, oh, ow), m, (long long)mi);
                }
}

static const mp_case mp_cases[] = {
    {{2, 2}, {2, 2}, {0, 0}, {1, 1}, false}, {{3, 3}, {2, 2}, {1, 1}, {1, 1}, false},
    {{3, 2}, {1, 2}, {1, 0}, {1, 1}, true},  {{2, 3}, {3, 2}, {1, 1}, {2, 1}, true},
    {{3, 3}, {2, 3}, {0, 1}, {2, 2}, false}, {{1, 1}, {1, 1}, {0, 0}, {1, 1}, false},
    {{5, 4}, {2, 2}, {2, 2}, {1, 1}, true},
};

static tt_pool_opts mp_opts(const mp_case *c)
{
    return (tt_pool_opts){.kernel = {c->k[0], c->k[1]}, .stride = {c->s[0], c->s[1]},
                          .padding = {c->p[0], c->p[1]}, .dilation = {c->d[0], c->d[1]},
                          .ceil_mode = c->ceil};
}

/* Every case over f32 and f64, contiguous, channels-last, transposed and
 * 3-d inputs; planes of a few columns (the padded small-plane kernel) and
 * of many (the chunked rows). */
START_TEST(test_max_pool_values)
{
    const tt_dtype dts[2] = {TT_F32, TT_F64};
    /* 17 channels of small planes: turned channels last per image */
    const int64_t shapes[3][4] = {{2, 3, 7, 6}, {2, 2, 5, 75}, {2, 17, 7, 6}};
    for (int sh = 0; sh < 3; sh++)
    for (int t = 0; t < 2; t++)
        for (int i = 0; i < TT_TABLE_LEN(mp_cases); i++) {
            const mp_case *c = &mp_cases[i];
            tt_pool_opts o = mp_opts(c);
            tt_tensor *x = scrambled(4, shapes[sh], dts[t]);
            tt_tensor *cl = NN(tt_contiguous_format(x, "channels_last"));
            tt_tensor *xt = NN(tt_transpose(x, 0, 1));
            const tt_tensor *ins[3] = {x, cl, xt};
            const char *names[3] = {"contiguous", "channels_last", "transposed"};
            for (int l = 0; l < 3; l++) {
                tt_tensor *ind = NULL, *y = NN(tt_max_pool2d_with_indices(ins[l], &o, &ind));
                char what[96];
                snprintf(what, sizeof what, "case %d %s %s", i, names[l],
                         tt_dtype_name(dts[t]));
                check_max_pool(ins[l], c, y, ind, what);
                ck_assert_int_eq(tt_dtype_of(y), dts[t]);
                ck_assert_int_eq(tt_dtype_of(ind), TT_I64);
                /* PyTorch CPU: channels last in, channels last out */
                bool want_cl = l == 1;
                ck_assert_msg((tt_strides(y)[1] == 1) == want_cl && tt_strides(ind)[1] ==
                              tt_strides(y)[1], "%s: layout", what);
                tt_tensor *y2 = NN(tt_max_pool2d(ins[l], &o));
                tt_test_assert_same_bits(y, y2, what);
                tt_release(y2);
                tt_release(y);
                tt_release(ind);
            }
            /* 3-d [C, H, W] is one image. */
            tt_tensor *x3 = NN(tt_select(x, 0, 1));
            tt_tensor *ind3 = NULL, *y3 = NN(tt_max_pool2d_with_indices(x3, &o, &ind3));
            tt_tensor *ind4 = NULL, *y4 = NN(tt_max_pool2d_with_indices(x, &o, &ind4));
            tt_tensor *y4s = NN(tt_select(y4, 0, 1)), *i4s = NN(tt_select(ind4, 0, 1));
            ck_assert(tt_ndim(y3) == 3);
            tt_test_assert_same_bits(y3, y4s, "3-d values");
            tt_test_assert_same_bits(ind3, i4s, "3-d indices");
            tt_release(i4s);
            tt_release(y4s);
            tt_release(ind4);
            tt_release(y4);
            tt_release(ind3);
            tt_release(y3);
            tt_release(x3);
            tt_release(xt);
            tt_release(cl);
            tt_release(x);
        }
}
END_TEST

/* Small planes of many channels run channels last per image: the same
 * values and indices, bit for bit, as each plane pooled alone (one
 * channel: the padded small-plane kernel), with NaNs, -inf and ties. */
START_TEST(test_max_pool_small_planes_many_channels)
{
    const int64_t n = 2 * 20 * 9 * 9;
    double *v = malloc(sizeof *v * (size_t)n);
    for (int64_t i = 0; i < n; i++) {
        int64_t r = (i * 7919) % 23;
        v[i] = r == 0 ? NAN : r == 1 ? -INFINITY : (double)(r % 5); /* ties */
    }
    tt_tensor *x = NN(tt_from_data(TT_SHAPE(2, 20, 9, 9), TT_F64, v));
    const tt_pool_opts opts[2] = {{.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}},
                                  {.kernel = {2, 3}, .stride = {1, 2}, .dilation = {2, 1}}};
    for (int o = 0; o < 2; o++)
        for (int f32 = 0; f32 < 2; f32++) {
            tt_tensor *xd = NN(tt_to_dtype(x, f32 ? TT_F32 : TT_F64));
            tt_tensor *ind = NULL, *y = NN(tt_max_pool2d_with_indices(xd, &opts[o], &ind));
            for (int64_t c = 0; c < 20; c++) {
                tt_tensor *xc = NN(tt_narrow(xd, 1, c, 1));
                tt_tensor *ic = NULL, *yc = NN(tt_max_pool2d_with_indices(xc, &opts[o], &ic));
                tt_tensor *ys = NN(tt_narrow(y, 1, c, 1)), *is = NN(tt_narrow(ind, 1, c, 1));
                tt_test_assert_same_bits(ys, yc, "values, a channel alone");
                tt_test_assert_same_bits(is, ic, "indices, a channel alone");
                tt_release(ys), tt_release(is), tt_release(yc), tt_release(ic), tt_release(xc);
            }
            tt_release(y), tt_release(ind), tt_release(xd);
        }
    tt_release(x);
    free(v);
}
END_TEST

/* NaN wins its window, as in PyTorch; -inf everywhere gives -inf at the
 * window's first element. */
START_TEST(test_max_pool_nan_inf)
{
    double v[8] = {1, NAN, 3, 2, -INFINITY, -INFINITY, -INFINITY, -INFINITY};
    tt_tensor *x = NN(tt_from_data(3, (int64_t[]){1, 2, 4}, TT_F64, v));
    tt_tensor *ind = NULL;
    tt_tensor *y = NN(tt_max_pool2d_with_indices(x, &(tt_pool_opts){.kernel = {1, 2}}, &ind));
    const double *yv = tt_data(y);
    const int64_t *iv = tt_data(ind);
    ck_assert(isnan(yv[0]) && iv[0] == 1);
    ck_assert(yv[1] == 3 && iv[1] == 2);
    ck_assert(yv[2] == -INFINITY && iv[2] == 4);
    ck_assert(yv[3] == -INFINITY && iv[3] == 6);
    tt_release(ind);
    tt_release(y);
    tt_release(x);
    /* as PyTorch: the first of equal values, the last of several NaNs */
    double w[8] = {NAN, 5, NAN, 1, 2, 5, 5, 1};
    x = NN(tt_from_data(3, (int64_t[]){1, 2, 4}, TT_F64, w));
    y = NN(tt_max_pool2d_with_indices(x, &(tt_pool_opts){.kernel = {1, 4}}, &ind));
    yv = tt_data(y), iv = tt_data(ind);
    ck_assert(isnan(yv[0]) && iv[0] == 2);
    ck_assert(yv[1] == 5 && iv[1] == 4 + 1); /* row 1 of the plane */
    tt_release(ind);
    tt_release(y);
    tt_release(x);
}
END_TEST

static tt_status f_max_pool(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    out[0] = tt_max_pool2d(in[0], ud);
    return out[0] ? TT_OK : tt_errcode();
}

START_TEST(test_max_pool_gradcheck)
{
    for (int i = 0; i < TT_TABLE_LEN(mp_cases); i++) {
        tt_pool_opts o = mp_opts(&mp_cases[i]);
        tt_tensor *x = scrambled(4, (int64_t[]){2, 2, 5, 6}, TT_F64);
        OK(tt_set_requires_grad(x, true));
        OK(tt_gradcheck(f_max_pool, 1, &x, 1, NULL, &o));
        tt_release(x);
    }
    /* channels last: the gradient comes back channels last */
    tt_tensor *b = scrambled(4, (int64_t[]){2, 3, 4, 4}, TT_F64);
    tt_tensor *x = NN(tt_contiguous_format(b, "channels_last"));
    OK(tt_set_requires_grad(x, true));
    tt_pool_opts o = {.kernel = {2, 2}};
    OK(tt_gradcheck(f_max_pool, 1, &x, 1, NULL, &o));
    tt_tensor *y = NN(tt_max_pool2d(x, &o)), *s = NN(tt_sum_all(y));
    OK(tt_backward(s, NULL));
    tt_tensor *g = NN(tt_get_grad(x));
    ck_assert(tt_strides(g)[1] == 1);
    /* each window's maximum gets 1: a quarter of the elements */
    tt_tensor *gs = NN(tt_sum_all(g));
    ck_assert_double_eq(*(const double *)tt_data(gs), 2 * 3 * 2 * 2);
    tt_release(gs);
    tt_release(g);
    tt_release(s);
    tt_release(y);
    tt_release(x);
    tt_release(b);
}
END_TEST

/* Overlapping windows send several gradients to one element: added. */
START_TEST(test_max_pool_backward_overlap)
{
    double v[9] = {0, 0, 0, 0, 9, 0, 0, 0, 0};
    tt_tensor *x = NN(tt_from_data(3, (int64_t[]){1, 3, 3}, TT_F64, v));
    OK(tt_set_requires_grad(x, true));
    tt_tensor *y = NN(tt_max_pool2d(x, &(tt_pool_opts){.kernel = {2, 2}, .stride = {1, 1}}));
    tt_tensor *s = NN(tt_sum_all(y));
    OK(tt_backward(s, NULL));
    tt_tensor *g = NN(tt_get_grad(x));
    const double *gv = tt_data(g);
    for (int i = 0; i < 9; i++)
        ck_assert_double_eq(gv[i], i == 4 ? 4 : 0);
    tt_release(g);
    tt_release(s);
    tt_release(y);
    tt_release(x);
}
END_TEST

/* --------------------------------------------------------------- errors */

static struct {
    tt_tensor *x, *x2, *x0, *xi, *g, *gbad, *ind, *indbad, *ind32, *x3, *xb;
} in;

static void errors_setup(void)
{
    tt_test_setup();
    in.x = scrambled(4, (int64_t[]){1, 3, 4, 4}, TT_F32);
    in.x2 = scrambled(2, (int64_t[]){4, 4}, TT_F32);
    in.x0 = NN(tt_zeros(TT_SHAPE(1, 0, 4, 4), TT_F32));
    in.xi = NN(tt_zeros(TT_SHAPE(1, 3, 4, 4), TT_I64));
    in.g = NN(tt_zeros(TT_SHAPE(1, 3, 2, 2), TT_F32));
    in.gbad = NN(tt_zeros(TT_SHAPE(1, 3, 3, 2), TT_F32));
    in.ind = NN(tt_zeros(TT_SHAPE(1, 3, 2, 2), TT_I64));
    in.indbad = NN(tt_full(TT_SHAPE(1, 3, 2, 2), 16, TT_I64));
    in.ind32 = NN(tt_zeros(TT_SHAPE(1, 3, 2, 2), TT_I32));
    in.x3 = scrambled(3, (int64_t[]){1, 3, 8}, TT_F32);
    in.xb = NN(tt_zeros(TT_SHAPE(1, 3, 4, 4), TT_BOOL));
}

static void errors_teardown(void)
{
    tt_tensor *all[] = {in.x,   in.x2,     in.x0,    in.xi, in.g, in.gbad,
                        in.ind, in.indbad, in.ind32, in.x3, in.xb};
    for (int k = 0; k < TT_TABLE_LEN(all); k++)
        tt_release(all[k]);
    memset(&in, 0, sizeof in);
    tt_test_teardown();
}

/* The boxed max_pool2d_with_indices (two results) with a kernel_size of
 * n values. */
static tt_status mp_kernel_values(int n)
{
    tt_value outs[2] = {tt_v_none(), tt_v_none()};
    tt_value args[2] = {tt_v_tensor(in.x), tt_v_ints(n, (int64_t[]){2, 2, 2})};
    tt_status st = tt_op_call(tt_op_find("tt::max_pool2d_with_indices"), args, 2, outs, 2);
    tt_value_clear(&outs[0]);
    tt_value_clear(&outs[1]);
    return st;
}

static const tt_op *mp_bw(void) { return tt_op_find("tt::max_pool2d_with_indices_backward"); }

/* The boxed backward with kernel 2, stride 2, no padding. */
static tt_tensor *mp_bw_call(tt_tensor *g, tt_tensor *x, tt_tensor *ind)
{
    return tt_call(mp_bw(), tt_v_tensor(g), tt_v_tensor(x), tt_v_int(2), tt_v_int(2),
                   tt_v_int(0), tt_v_int(1), tt_v_bool(false), tt_v_tensor(ind));
}

#define MP(x, ...) tt_max_pool2d((x), &(tt_pool_opts){__VA_ARGS__})
#define POOL_ERRORS(X)                                                         \
    X(max_2d, MP(in.x2, .kernel = {2, 2}), TT_ESHAPE,                          \
      "tt::max_pool2d_with_indices: argument 'self' (#1): expected a 3-d "     \
      "[C, H, W] or 4-d [N, C, H, W] tensor with non-zero sizes (N may be "    \
      "0), got [4, 4]")                                                        \
    X(max_zero_channels, MP(in.x0, .kernel = {2, 2}), TT_ESHAPE,               \
      "got [1, 0, 4, 4]")                                                      \
    X(max_i64, MP(in.xi, .kernel = {2, 2}), TT_EDTYPE,                         \
      "tt::max_pool2d_with_indices: argument 'self' (#1): expected f32 or "    \
      "f64, got i64")                                                          \
    X(max_kernel_zero, MP(in.x, .kernel = {0, 2}), TT_EINVAL,                  \
      "tt::max_pool2d_with_indices: argument 'kernel_size' (#2): expected "    \
      "values greater than zero, got [0, 2]")                                  \
    X(max_stride_negative, MP(in.x, .kernel = {2, 2}, .stride = {1, -1}),      \
      TT_EINVAL, "argument 'stride' (#3): expected values greater than zero, " \
      "got [1, -1]")                                                           \
    X(max_dilation_negative, MP(in.x, .kernel = {2, 2}, .dilation = {-1, 1}),  \
      TT_EINVAL, "argument 'dilation' (#5): expected values greater than "     \
      "zero, got [-1, 1]")                                                     \
    X(max_pad_half, MP(in.x, .kernel = {2, 2}, .padding = {0, 2}), TT_EINVAL,  \
      "tt::max_pool2d_with_indices: argument 'padding' (#4): pad should be "   \
      "at most half of kernel size, but got pad=2 and kernel_size=2")          \
    X(max_pad_negative, MP(in.x, .kernel = {2, 2}, .padding = {-1, 0}),        \
      TT_EINVAL, "argument 'padding' (#4): expected non-negative values, got " \
      "[-1, 0]")                                                               \
    X(max_too_small, MP(in.x, .kernel = {5, 2}), TT_ESHAPE,                    \
      "tt::max_pool2d_with_indices: argument 'self' (#1): given input size "   \
      "(3x4x4), the calculated output size (3x0x2) is too small")              \
    X(max_no_opts, tt_max_pool2d(in.x, NULL), TT_EINVAL,                       \
      "tt_max_pool2d_with_indices: argument 'opts' is NULL")                   \
    X(max_null, MP(NULL, .kernel = {2, 2}), TT_EINVAL,                         \
      "tt::max_pool2d_with_indices: argument 'self' (#1) expects Tensor, got " \
      "NULL")                                                                  \
    X(max_kernel_3_values, mp_kernel_values(3), TT_EINVAL,                     \
      "argument 'kernel_size' (#2)")                                           \
    X(max_bw_grad_shape, mp_bw_call(in.gbad, in.x, in.ind), TT_ESHAPE,         \
      "tt::max_pool2d_with_indices_backward: argument 'grad_output' (#1): "    \
      "expected shape [1, 3, 2, 2], got [1, 3, 3, 2]")                         \
    X(max_bw_index_range, mp_bw_call(in.g, in.x, in.indbad), TT_EINVAL,        \
      "tt::max_pool2d_with_indices_backward: argument 'indices' (#8): an "     \
      "index is outside its input plane of 16 elements")                       \
    X(max_bw_index_dtype, mp_bw_call(in.g, in.x, in.ind32), TT_EDTYPE,         \
      "argument 'indices' (#8): expected i64, got i32")                        \
    X(max_bw_grad_dtype, mp_bw_call(in.ind, in.x, in.ind), TT_EDTYPE,          \
      "argument 'grad_output' (#1): expected f32 like 'self', got i64")

static tt_tensor *op_call(const char *name, int n, const tt_value *args)
{
    return tt_op_call1(tt_op_find(name), args, n);
}
#define CALL(name, ...)                                                        \
    op_call(name, (int)(sizeof((tt_value[]){__VA_ARGS__}) / sizeof(tt_value)), \
            (const tt_value[]){__VA_ARGS__})
#define AP(x, ...) tt_avg_pool2d((x), &(tt_pool_opts){__VA_ARGS__})
#define PAD(x, mode, ...)                                                      \
    tt_pad((x), (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),     \
           (const int64_t[]){__VA_ARGS__}, mode, 0)
#define I2(a, b) tt_v_ints(2, (const int64_t[]){a, b})
#define I4(a, b, c, d) tt_v_ints(4, (const int64_t[]){a, b, c, d})
/* The other ops' errors: average, adaptive and 1-d pooling, padding,
 * upsampling, and their backward ops. */
#define MORE_ERRORS(X)                                                         \
    X(avg_divisor_zero,                                                        \
      CALL("tt::avg_pool2d", tt_v_tensor(in.x), tt_v_int(2), tt_v_ints(0, NULL), \
           tt_v_int(0), tt_v_bool(false), tt_v_bool(true), tt_v_int(0)),       \
      TT_EINVAL, "tt::avg_pool2d: argument 'divisor_override' (#7): divisor "  \
      "must be not zero")                                                      \
    X(avg_dilation, AP(in.x, .kernel = {2, 2}, .dilation = {2, 1}), TT_EINVAL, \
      "tt_avg_pool2d: argument 'opts': dilation is max pooling's only "        \
      "(expected 0 or 1), got [2, 1]")                                         \
    X(avg_bool, AP(in.xb, .kernel = {2, 2}), TT_EDTYPE,                        \
      "tt::avg_pool2d: argument 'self' (#1): expected f32, f64 or i64, got "   \
      "bool")                                                                  \
    X(avg_too_small, AP(in.x, .kernel = {5, 2}), TT_ESHAPE,                    \
      "tt::avg_pool2d: argument 'self' (#1): given input size (3x4x4), the "   \
      "calculated output size (3x0x2) is too small")                           \
    X(avg_bw_shape,                                                            \
      CALL("tt::avg_pool2d_backward", tt_v_tensor(in.gbad), tt_v_tensor(in.x), \
           I2(2, 2), I2(2, 2), I2(0, 0), tt_v_bool(false), tt_v_bool(true),    \
           tt_v_none()),                                                       \
      TT_ESHAPE, "tt::avg_pool2d_backward: argument 'grad_output' (#1): "      \
      "expected shape [1, 3, 2, 2], got [1, 3, 3, 2]")                         \
    X(adaptive_negative, tt_adaptive_avg_pool2d(in.x, -1, 2), TT_EINVAL,       \
      "tt::_adaptive_avg_pool2d: argument 'output_size' (#2): expected sizes " \
      "of at least 0, got [-1, 2]")                                            \
    X(adaptive_2d, tt_adaptive_avg_pool2d(in.x2, 2, 2), TT_ESHAPE,             \
      "tt::_adaptive_avg_pool2d: argument 'self' (#1): expected a 3-d [C, H, "  \
      "W] or 4-d [N, C, H, W] tensor with non-zero H and W, got [4, 4]")       \
    X(adaptive_i64, tt_adaptive_avg_pool2d(in.xi, 2, 2), TT_EDTYPE,            \
      "expected f32 or f64, got i64")                                          \
    X(pool1d_4d, tt_max_pool1d(in.x, &(tt_pool_opts){.kernel = {2}}),          \
      TT_ESHAPE, "tt::max_pool1d: argument 'self' (#1): expected a 2-d [C, L] " \
      "or 3-d [N, C, L] tensor, got [1, 3, 4, 4]")                             \
    X(pool1d_kernel_2,                                                         \
      CALL("tt::max_pool1d", tt_v_tensor(in.x3), I2(2, 2)), TT_EINVAL,         \
      "tt::max_pool1d: argument 'kernel_size' (#2): expected one int, got 2")  \
    X(pool1d_pad_half, tt_avg_pool1d(in.x3, &(tt_pool_opts){.kernel = {2},     \
                                                            .padding = {2}}),  \
      TT_EINVAL, "tt::avg_pool1d: argument 'padding' (#4): pad should be at "  \
      "most half of kernel size, but got pad=2 and kernel_size=2")             \
    X(pool1d_avg_dilation,                                                     \
      tt_avg_pool1d(in.x3, &(tt_pool_opts){.kernel = {2}, .dilation = {2}}),   \
      TT_EINVAL, "dilation is max pooling's only")                             \
    X(pad_odd, PAD(in.x, "constant", 1, 1, 1), TT_EINVAL,                      \
      "tt::constant_pad_nd: argument 'pad' (#2): length of pad must be even "  \
      "but instead it equals 3")                                               \
    X(pad_too_long, PAD(in.x, "constant", 1, 1, 1, 1, 1, 1, 1, 1, 1, 1),       \
      TT_EINVAL, "pad length is 10 while the input has 4 dimensions")          \
    X(pad_too_negative, PAD(in.x, NULL, -3, -3), TT_ESHAPE,                    \
      "tt::constant_pad_nd: argument 'pad' (#2): the input size 4 of dim 3 "   \
      "plus padding -3, -3 is negative")                                       \
    X(pad_null, tt_pad(in.x, 2, NULL, "constant", 0), TT_EINVAL,               \
      "tt_pad: arguments 'n' and 'pads': expected n >= 0 pads, got n = 2 and " \
      "pads NULL")                                                             \
    X(pad_mode, PAD(in.x, "wrap", 1, 1), TT_EINVAL,                            \
      "tt_pad: argument 'mode': expected 'constant', 'reflect' or "            \
      "'replicate', got 'wrap'")                                               \
    X(reflect_too_big, PAD(in.x, "reflect", 4, 0, 0, 0), TT_EINVAL,            \
      "tt::reflection_pad2d: argument 'padding' (#2): padding size should be " \
      "less than the corresponding input dimension, but got padding (4, 0) "   \
      "at dimension 3 of input [1, 3, 4, 4]")                                  \
    X(reflect_8_pads, PAD(in.x, "reflect", 1, 1, 1, 1, 1, 1, 1, 1), TT_EINVAL, \
      "tt_pad: mode 'reflect' pads the last one, two or three dims: expected " \
      "2, 4 or 6 pads, got 8")                                                 \
    X(replicate_2_pads_4d, PAD(in.x, "replicate", 1, 1), TT_ESHAPE,            \
      "tt::replication_pad1d: argument 'self' (#1): expected a 2-d or 3-d "    \
      "(batch mode) tensor with non-zero sizes (the batch may be 0), got [1, " \
      "3, 4, 4]")                                                              \
    X(replicate_6_pads_2d, PAD(in.x2, "replicate", 1, 1, 1, 1, 1, 1),          \
      TT_ESHAPE,                                                               \
      "tt::replication_pad3d: argument 'self' (#1): expected a 4-d or 5-d "    \
      "(batch mode) tensor with non-zero sizes (the batch may be 0), got [4, " \
      "4]")                                                                    \
    X(reflect_i64, PAD(in.xi, "reflect", 1, 1, 1, 1), TT_EDTYPE,               \
      "tt::reflection_pad2d: argument 'self' (#1): expected f32 or f64, got "  \
      "i64")                                                                   \
    X(reflect1d_4d, PAD(in.x, "reflect", 1, 1), TT_ESHAPE,                     \
      "tt::reflection_pad1d: argument 'self' (#1): expected a 2-d or 3-d "     \
      "(batch mode) tensor with non-zero sizes (the batch may be 0), got [1, " \
      "3, 4, 4]")                                                              \
    X(replicate_negative, PAD(in.x, "replicate", -3, -2, 0, 0), TT_ESHAPE,     \
      "tt::replication_pad2d: argument 'padding' (#2): input [1, 3, 4, 4] "    \
      "padded by (-3, -2) at dimension 3 gives an output size below 0")        \
    X(pad_bw_shape,                                                            \
      CALL("tt::reflection_pad2d_backward", tt_v_tensor(in.g), tt_v_tensor(in.x), \
           I4(1, 1, 1, 1)),                                                    \
      TT_ESHAPE, "tt::reflection_pad2d_backward: argument 'grad_output' (#1): " \
      "expected shape [1, 3, 6, 6], got [1, 3, 2, 2]")                         \
    X(pad3d_bw_shape,                                                          \
      CALL("tt::replication_pad3d_backward", tt_v_tensor(in.g), tt_v_tensor(in.x), \
           tt_v_ints(6, (const int64_t[]){1, 1, 1, 1, 0, 2})),                 \
      TT_ESHAPE, "tt::replication_pad3d_backward: argument 'grad_output' (#1): " \
      "expected shape [1, 5, 6, 6], got [1, 3, 2, 2]")                         \
    X(up_both,                                                                 \
      CALL("tt::upsample_nearest2d.vec", tt_v_tensor(in.x), I2(5, 5),          \
           tt_v_floats(2, (const double[]){2, 2})),                            \
      TT_EINVAL, "tt::upsample_nearest2d: must specify exactly one of "        \
      "output_size and scale_factors")                                         \
    X(up_neither,                                                              \
      CALL("tt::upsample_bilinear2d.vec", tt_v_tensor(in.x), tt_v_none(),      \
           tt_v_bool(false), tt_v_none()),                                     \
      TT_EINVAL, "tt::upsample_bilinear2d: must specify exactly one of "       \
      "output_size and scale_factors")                                         \
    X(up_zero, tt_upsample_nearest2d(in.x, 0, 3), TT_EINVAL,                   \
      "tt::upsample_nearest2d: input and output sizes should be greater than " \
      "0, but got input (H: 4, W: 4) output (H: 0, W: 3)")                     \
    X(up_scale_negative, tt_upsample_nearest2d_scale(in.x, -1, 2), TT_EINVAL,  \
      "output (H: -4, W: 8)")                                                  \
    X(up_2d, tt_upsample_nearest2d(in.x2, 5, 5), TT_ESHAPE,                    \
      "tt::upsample_nearest2d: argument 'input' (#1): expected a 4-d [N, "      \
      "C, H, W] tensor, got [4, 4]")                                           \
    X(up_i64, tt_upsample_bilinear2d(in.xi, 5, 5, false), TT_EDTYPE,           \
      "tt::upsample_bilinear2d: argument 'input' (#1): expected f32 or f64, "  \
      "got i64")                                                               \
    X(up_empty_channels, tt_upsample_nearest2d(in.x0, 5, 5), TT_ESHAPE,        \
      "expected a non-empty 4-d [N, C, H, W] input (N may be 0), got [1, 0, "  \
      "4, 4]")                                                                 \
    X(up_bw_input_size,                                                        \
      CALL("tt::upsample_nearest2d_backward.vec", tt_v_tensor(in.g), I2(2, 2), \
           tt_v_ints(3, (const int64_t[]){1, 3, 4}), tt_v_none()),             \
      TT_EINVAL, "tt::upsample_nearest2d_backward.vec: argument 'input_size' " \
      "(#3): expected 4 sizes [N, C, H, W], got 3")                            \
    X(up_bw_grad_shape,                                                        \
      CALL("tt::upsample_bilinear2d_backward.vec", tt_v_tensor(in.g),          \
           I2(3, 3), I4(1, 3, 4, 4), tt_v_bool(true), tt_v_none()),            \
      TT_ESHAPE, "tt::upsample_bilinear2d_backward: argument 'grad_output' "   \
      "(#1): expected shape [1, 3, 3, 3], got [1, 3, 2, 2]")

TT_ERROR_TABLE(POOL_ERRORS, pool_errors);
TT_ERROR_TABLE(MORE_ERRORS, more_errors);

START_TEST(test_more_errors)
{
    tt_test_run_error_case(&more_errors[_i], _i);
}
END_TEST

START_TEST(test_pool_errors)
{
    tt_test_run_error_case(&pool_errors[_i], _i);
}
END_TEST

/* ------------------------------------------------- traced and compiled */

/* The models tt_test_value_and_grad runs (out[0] the result, out[1]
 * d(sum(result * result)) / d(in[0]), recorded by the trace). */
typedef tt_test_model model_fn;

static tt_tensor *m_max_pool(tt_tensor *x)
{
    return tt_max_pool2d(x, &(tt_pool_opts){.kernel = {3, 2}, .stride = {2, 1},
                                             .padding = {1, 1}, .ceil_mode = true});
}
static tt_tensor *m_max_pool_dilated(tt_tensor *x)
{
    return tt_max_pool2d(x, &(tt_pool_opts){.kernel = {2, 2}, .dilation = {2, 1}});
}
static tt_tensor *m_avg_pool(tt_tensor *x)
{
    return tt_avg_pool2d(x, &(tt_pool_opts){.kernel = {3, 2}, .stride = {2, 1},
                                             .padding = {1, 1}, .ceil_mode = true});
}
static tt_tensor *m_avg_pool_exclude(tt_tensor *x)
{
    return tt_avg_pool2d(x, &(tt_pool_opts){.kernel = {3, 3}, .stride = {2, 2},
                                             .padding = {1, 1}, .ceil_mode = true,
                                             .exclude_pad = true});
}
static tt_tensor *m_avg_pool_divisor(tt_tensor *x)
{
    return tt_avg_pool2d(x, &(tt_pool_opts){.kernel = {2, 3}, .padding = {1, 1},
                                             .divisor_override = 7});
}
static tt_tensor *m_adaptive(tt_tensor *x) { return tt_adaptive_avg_pool2d(x, 3, 4); }
static tt_tensor *m_adaptive_1(tt_tensor *x) { return tt_adaptive_avg_pool2d(x, 1, 1); }
static tt_tensor *m_adaptive1d(tt_tensor *x) { return tt_adaptive_avg_pool1d(x, 4); }
static tt_tensor *m_max_pool1d(tt_tensor *x)
{
    return tt_max_pool1d(x, &(tt_pool_opts){.kernel = {3}, .stride = {2}, .padding = {1}});
}
static tt_tensor *m_avg_pool1d(tt_tensor *x)
{
    return tt_avg_pool1d(x, &(tt_pool_opts){.kernel = {3}, .padding = {1}, .ceil_mode = true});
}
static tt_tensor *m_pad_constant(tt_tensor *x)
{
    return tt_pad(x, 4, (const int64_t[]){2, -1, -1, 1}, "constant", 0.5);
}
static tt_tensor *m_pad_reflect(tt_tensor *x)
{
    return tt_pad(x, 4, (const int64_t[]){2, -1, 3, 1}, "reflect", 0);
}
static tt_tensor *m_pad_reflect1d(tt_tensor *x)
{
    return tt_pad(x, 2, (const int64_t[]){4, 2}, "reflect", 0);
}
static tt_tensor *m_pad_reflect3d(tt_tensor *x)
{
    return tt_pad(x, 6, (const int64_t[]){2, -1, 1, 3, -1, 2}, "reflect", 0);
}
static tt_tensor *m_pad_replicate3d(tt_tensor *x)
{
    return tt_pad(x, 6, (const int64_t[]){3, -2, 0, 2, 1, 1}, "replicate", 0);
}
static tt_tensor *m_pad_replicate1d(tt_tensor *x)
{
    return tt_pad(x, 2, (const int64_t[]){-2, 4}, "replicate", 0);
}
static tt_tensor *m_pad_replicate(tt_tensor *x)
{
    return tt_pad(x, 4, (const int64_t[]){3, -2, 1, 4}, "replicate", 0);
}
static tt_tensor *m_nearest(tt_tensor *x) { return tt_upsample_nearest2d(x, 7, 4); }
static tt_tensor *m_nearest_scale(tt_tensor *x)
{
    return tt_upsample_nearest2d_scale(x, 2.5, 1.5);
}
static tt_tensor *m_bilinear(tt_tensor *x) { return tt_upsample_bilinear2d(x, 8, 3, false); }
static tt_tensor *m_bilinear_corners(tt_tensor *x)
{
    return tt_upsample_bilinear2d(x, 4, 11, true);
}
static tt_tensor *m_bilinear_scale(tt_tensor *x)
{
    return tt_upsample_bilinear2d_scale(x, 1.5, 2.0, false);
}

/* Each op's model and an input shape it takes (3-d for the 1-d ops). */
static const struct {
    const char *name;
    model_fn fn;
    int nd;
    int64_t sizes[5];
} models[] = {
    {"max_pool2d", m_max_pool, 4, {2, 2, 5, 6}},
    {"max_pool2d dilated", m_max_pool_dilated, 4, {1, 2, 5, 6}},
    {"avg_pool2d", m_avg_pool, 4, {2, 2, 5, 6}},
    {"avg_pool2d exclude_pad", m_avg_pool_exclude, 3, {2, 5, 6}},
    {"avg_pool2d divisor", m_avg_pool_divisor, 4, {2, 2, 5, 6}},
    {"adaptive_avg_pool2d", m_adaptive, 4, {2, 2, 5, 6}},
    {"adaptive_avg_pool2d 1x1", m_adaptive_1, 4, {2, 2, 5, 6}},
    {"max_pool1d", m_max_pool1d, 3, {2, 3, 9}},
    {"avg_pool1d", m_avg_pool1d, 3, {2, 3, 9}},
    {"adaptive_avg_pool1d", m_adaptive1d, 3, {2, 3, 9}},
    {"pad constant", m_pad_constant, 4, {2, 2, 5, 6}},
    {"pad reflect", m_pad_reflect, 4, {2, 2, 5, 6}},
    {"pad reflect 1-d", m_pad_reflect1d, 3, {2, 3, 9}},
    {"pad replicate", m_pad_replicate, 3, {2, 5, 6}},
    {"pad reflect 3-d", m_pad_reflect3d, 5, {2, 2, 3, 4, 5}},
    {"pad replicate 3-d", m_pad_replicate3d, 4, {2, 3, 4, 5}},
    {"pad replicate 1-d", m_pad_replicate1d, 2, {3, 6}},
    {"upsample nearest", m_nearest, 4, {2, 2, 5, 6}},
    {"upsample nearest scale", m_nearest_scale, 4, {2, 2, 5, 6}},
    {"upsample bilinear", m_bilinear, 4, {2, 2, 5, 6}},
    {"upsample bilinear corners", m_bilinear_corners, 4, {2, 2, 5, 6}},
    {"upsample bilinear scale", m_bilinear_scale, 4, {2, 2, 5, 6}},
};

static tt_tensor *f64_input(int nd, const int64_t *sizes)
{
    return scrambled(nd, sizes, TT_F64);
}

/* Every derivative against finite differences, contiguous and (4-d)
 * channels last. */
START_TEST(test_gradcheck)
{
    tt_test_gradcheck_layouts(models[_i].fn, models[_i].nd, models[_i].sizes, f64_input, 4,
                              "channels_last", models[_i].name);
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

/* Symbolic H and W flow into the output sizes (fake path). */
START_TEST(test_symbolic_sizes)
{
    tt_sym_reset();
    tt_size h = tt_sym_new("s", 9), w = tt_sym_new("s", 8);
    tt_tensor *x = NN(tt_fake_empty(4, (tt_size[]){2, 3, h, w}, TT_F32));
    tt_tensor *y = NN(tt_max_pool2d(x, &(tt_pool_opts){.kernel = {2, 2}}));
    char buf[64];
    tt_size_str(tt_sizes(y)[2], buf, sizeof buf);
    ck_assert_msg(tt_size_is_sym(tt_sizes(y)[2]), "H out: %s", buf);
    ck_assert_int_eq(tt_sym_hint(tt_sizes(y)[2]), 4);
    ck_assert_int_eq(tt_sym_hint(tt_sizes(y)[3]), 4);
    ck_assert(tt_is_fake(y));
    tt_release(y);
    /* the other ops' sizes follow the symbols too */
    y = NN(tt_avg_pool2d(x, &(tt_pool_opts){.kernel = {3, 3}, .stride = {2, 2},
                                             .padding = {1, 1}}));
    ck_assert(tt_size_is_sym(tt_sizes(y)[2]) && tt_sym_hint(tt_sizes(y)[2]) == 5);
    ck_assert_int_eq(tt_sym_hint(tt_sizes(y)[3]), 4);
    tt_release(y);
    y = NN(tt_pad(x, 4, (const int64_t[]){1, 2, -1, 0}, "reflect", 0));
    ck_assert(tt_sym_hint(tt_sizes(y)[2]) == 8 && tt_sym_hint(tt_sizes(y)[3]) == 11);
    tt_release(y);
    y = NN(tt_pad(x, 2, (const int64_t[]){-1, 3}, "constant", 0));
    ck_assert(tt_sym_hint(tt_sizes(y)[3]) == 10 && tt_sizes(y)[2] == h);
    tt_release(y);
    /* a 3-d padding of [C, D, H, W]: D = 3 is concrete */
    y = NN(tt_pad(x, 6, (const int64_t[]){1, 2, -1, 0, 2, 2}, "replicate", 0));
    ck_assert(tt_sym_hint(tt_sizes(y)[2]) == 8 && tt_sym_hint(tt_sizes(y)[3]) == 11);
    ck_assert(tt_sizes(y)[1] == 7 && tt_sizes(y)[0] == 2);
    tt_release(y);
    /* an adaptive or upsampled size may itself be a symbol */
    y = NN(tt_call(tt_op_find("tt::_adaptive_avg_pool2d"), tt_v_tensor(x),
                   tt_v_ints(2, (const int64_t[]){w, 3})));
    ck_assert(tt_sizes(y)[2] == w && tt_sizes(y)[3] == 3);
    tt_release(y);
    y = NN(tt_call(tt_op_find("tt::upsample_bilinear2d.vec"), tt_v_tensor(x),
                   tt_v_ints(2, (const int64_t[]){w, h}), tt_v_bool(true), tt_v_none()));
    ck_assert(tt_sizes(y)[2] == w && tt_sizes(y)[3] == h);
    tt_release(y);
    tt_release(x);
    tt_sym_reset();
}
END_TEST

static Suite *pool_suite(void)
{
    Suite *s = suite_create("ops_pool");
    TCase *tc = tt_tcase("max_pool");
    tcase_add_test(tc, test_max_pool_values);
    tcase_add_test(tc, test_max_pool_nan_inf);
    tcase_add_test(tc, test_max_pool_small_planes_many_channels);
    tcase_add_test(tc, test_max_pool_gradcheck);
    tcase_add_test(tc, test_max_pool_backward_overlap);
    tcase_add_test(tc, test_symbolic_sizes);
    suite_add_tcase(s, tc);
    tc = tt_tcase("every op");
    tcase_add_loop_test(tc, test_gradcheck, 0, TT_TABLE_LEN(models));
    tcase_add_loop_test(tc, test_compiled_equals_eager, 0, TT_TABLE_LEN(models));
    suite_add_tcase(s, tc);
    tc = tt_tcase_with("errors", errors_setup, errors_teardown);
    tcase_add_loop_test(tc, test_pool_errors, 0, TT_TABLE_LEN(pool_errors));
    tcase_add_loop_test(tc, test_more_errors, 0, TT_TABLE_LEN(more_errors));
    suite_add_tcase(s, tc);
    return s;
}

TT_TEST_MAIN(pool_suite)
