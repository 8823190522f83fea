/* The hand-written derivative of every differentiable elementwise op
 * against the formula, the kink conventions (relu, abs, clamp at their
 * corners, as PyTorch), and the derivatives of the argument forms issue
 * 13 added, each also through tt_gradcheck. Split from test_autograd.c,
 * whose helpers it shares (autograd_test.h). */
#include "autograd_test.h"

#include <stdio.h>

/* ------------------------------------------------ hand-written derivatives */

typedef struct {
    const char *name;
    tt_tensor *(*fn)(const tt_tensor *);
    double (*d)(double x); /* df/dx */
    domain dom;
} unary_case;

static double d_neg(double x) { (void)x; return -1; }
static double d_exp(double x) { return exp(x); }
static double d_log(double x) { return 1 / x; }
static double d_sqrt(double x) { return 0.5 / sqrt(x); }
static double d_rsqrt(double x) { return -0.5 * pow(x, -1.5); }
static double d_sin(double x) { return cos(x); }
static double d_cos(double x) { return -sin(x); }
static double d_tanh(double x) { return 1 / (cosh(x) * cosh(x)); }
static double d_sigmoid(double x) { double s = 1 / (1 + exp(-x)); return s * (1 - s); }
static double d_relu(double x) { return x > 0; }
static double d_gelu(double x)
{
    const double inv_sqrt_2pi = 0.39894228040143267794;
    return 0.5 * (1 + erf(x / sqrt(2))) + x * exp(-x * x / 2) * inv_sqrt_2pi;
}
static double d_abs(double x) { return x > 0 ? 1 : -1; }

static const unary_case unary_cases[] = {
    {"neg", tt_neg, d_neg, DOM_ANY},       {"exp", tt_exp, d_exp, DOM_ANY},
    {"log", tt_log, d_log, DOM_POS},       {"sqrt", tt_sqrt, d_sqrt, DOM_POS},
    {"rsqrt", tt_rsqrt, d_rsqrt, DOM_POS}, {"sin", tt_sin, d_sin, DOM_ANY},
    {"cos", tt_cos, d_cos, DOM_ANY},       {"tanh", tt_tanh, d_tanh, DOM_ANY},
    {"sigmoid", tt_sigmoid, d_sigmoid, DOM_ANY},
    {"relu", tt_relu, d_relu, DOM_AWAY0},  {"gelu", tt_gelu, d_gelu, DOM_ANY},
    {"abs", tt_abs, d_abs, DOM_AWAY0},
};
#define NUN (int)(sizeof unary_cases / sizeof unary_cases[0])

/* x.grad = G * f'(x) for G of varied values, in f64 and f32. */
START_TEST(test_unary_derivatives)
{
    const unary_case *c = &unary_cases[_i / 2];
    tt_dtype dt = _i % 2 ? TT_F32 : TT_F64;
    double xv[5], gv[5] = {1, -2, 0.5, 3, -0.25}, want[5];
    for (int k = 0; k < 5; k++) {
        xv[k] = draw(c->dom);
        if (dt == TT_F32)
            xv[k] = (double)(float)xv[k];
        want[k] = gv[k] * c->d(xv[k]);
    }
    tt_tensor *x = leaf(1, A(5), dt, xv);
    tt_tensor *g = mk(1, A(5), dt, gv);
    tt_tensor *y = ok(c->fn(x));
    ck_assert_int_eq(tt_dtype_of(y), dt);
    OK(tt_backward(y, g));
    tt_tensor *gx = tt_get_grad(x);
    ck_assert_int_eq(tt_dtype_of(gx), dt);
    for (int k = 0; k < 5; k++)
        ck_assert_msg(close_to(at(gx, k), want[k], dt == TT_F32 ? 1e-5 : 1e-12),
                      "%s %s at x = %.9g: got %.12g, want %.12g", c->name, tt_dtype_name(dt),
                      xv[k], at(gx, k), want[k]);
    release_all(4, (tt_tensor *[]){x, g, y, gx});
}
END_TEST

/* relu's and abs's derivatives at exactly 0 are 0 (PyTorch: relu uses
 * result > 0, abs uses sgn(x)); clamp's gradient passes at the bounds
 * (min <= x <= max). */
START_TEST(test_kink_conventions)
{
    tt_tensor *x = leaf(1, A(5), TT_F64, D(-0.5, 0, 0.5, 1, 2));
    tt_tensor *g = mk(1, A(5), TT_F64, D(1, 1, 1, 1, 1));
    tt_tensor *r = ok(tt_relu(x));
    OK(tt_backward(r, g));
    expect_grad(x, D(0, 0, 1, 1, 1), 0);
    OK(tt_set_grad(x, NULL));
    tt_tensor *a = ok(tt_abs(x));
    OK(tt_backward(a, g));
    expect_grad(x, D(-1, 0, 1, 1, 1), 0);
    OK(tt_set_grad(x, NULL));
    tt_tensor *c = ok(tt_clamp(x, 0, 1));
    OK(tt_backward(c, g));
    expect_grad(x, D(0, 1, 1, 1, 0), 0);
    release_all(5, (tt_tensor *[]){x, g, r, a, c});
}
END_TEST

START_TEST(test_binary_derivatives)
{
    double av[4] = {0.5, -1.5, 2, 3}, bv[4] = {2, 0.5, -1.25, 1.5}, gv[4] = {1, -2, 0.5, 3};
    double pv[4] = {0.5, 1.5, 2, 3}; /* positive bases for pow */
    for (int op = 0; op < 6; op++) {
        const double *A_ = op == 4 ? pv : av;
        tt_tensor *a = leaf(1, A(4), TT_F64, A_);
        tt_tensor *b = leaf(1, A(4), TT_F64, bv);
        tt_tensor *g = mk(1, A(4), TT_F64, gv);
        tt_tensor *y = ok(op == 0   ? tt_add(a, b)
                          : op == 1 ? tt_sub(a, b)
                          : op == 2 ? tt_mul(a, b)
                          : op == 3 ? tt_div(a, b)
                          : op == 4 ? tt_pow(a, b)
                                    : tt_add_scaled(a, b, 0.5));
        OK(tt_backward(y, g));
        double da[4], db[4];
        for (int k = 0; k < 4; k++) {
            double x = A_[k], w = bv[k], G = gv[k];
            switch (op) {
            case 0: da[k] = G, db[k] = G; break;
            case 1: da[k] = G, db[k] = -G; break;
            case 2: da[k] = G * w, db[k] = G * x; break;
            case 3: da[k] = G / w, db[k] = -G * x / (w * w); break;
            case 4: da[k] = G * w * pow(x, w - 1), db[k] = G * pow(x, w) * log(x); break;
            default: da[k] = G, db[k] = 0.5 * G; break;
            }
        }
        expect_grad(a, da, 1e-13);
        expect_grad(b, db, 1e-13);
        release_all(4, (tt_tensor *[]){a, b, g, y});
    }
}
END_TEST

START_TEST(test_scalar_derivatives)
{
    double xv[3] = {0.5, 1.5, 2}, gv[3] = {1, -2, 4};
    for (int op = 0; op < 7; op++) {
        tt_tensor *x = leaf(1, A(3), TT_F64, xv);
        tt_tensor *g = mk(1, A(3), TT_F64, gv);
        tt_tensor *y = ok(op == 0   ? tt_add_scalar(x, 3)
                          : op == 1 ? tt_sub_scalar(x, 3)
                          : op == 2 ? tt_mul_scalar(x, -3)
                          : op == 3 ? tt_div_scalar(x, 4)
                          : op == 4 ? tt_pow_scalar(x, 3)
                          : op == 5 ? tt_pow_scalar(x, 0.5)
                                    : tt_pow_scalar(x, 0));
        OK(tt_backward(y, g));
        double want[3];
        for (int k = 0; k < 3; k++) {
            double v = xv[k], G = gv[k];
            want[k] = op <= 1   ? G
                    : op == 2 ? -3 * G
                    : op == 3 ? G / 4
                    : op == 4 ? 3 * v * v * G
                    : op == 5 ? 0.5 / sqrt(v) * G
                              : 0;
        }
        expect_grad(x, want, 1e-14);
        release_all(3, (tt_tensor *[]){x, g, y});
    }
}
END_TEST

/* pow's exponent gradient is 0 where the base is 0 (PyTorch), not NaN. */
FN1(f_narrow_neg, tt_narrow(a, -1, -2, 2))

/* linear(x, w[, b]) with a 1-d w. */
static tt_status f_linear_vec(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nout, (void)ud;
    out[0] = tt_linear(in[0], in[1], nin > 2 ? in[2] : NULL);
    return out[0] ? TT_OK : tt_errcode();
}

/* The newer argument forms, one function each (in[0] [2, 3] away from
 * kinks; in[1] a second input where the form has one). */
FN1(f_pow_base, tt_scalar_pow(2.5, a))
FN1(f_gelu_tanh, tt_gelu_tanh(a))
FN1(f_div_floor_none, tt_div_scalar_mode(a, 2, NULL))

/* squeeze.dims over [1, 2, 3, 1] -> [2, 3]. */
static tt_status f_squeeze_dims(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_scope_begin();
    tt_tensor *u = tt_unsqueeze(tt_unsqueeze(in[0], 0), -1);
    out[0] = tt_keep(tt_squeeze_dims(u, 2, (int64_t[]){0, -1}));
    tt_scope_end();
    return out[0] ? TT_OK : tt_errcode();
}
FN2(f_clamp_t, tt_clamp_tensor(a, b, NULL))
FN2(f_clamp_t_max, tt_clamp_tensor(a, NULL, b))

/* clamp between b - 0.5 and b + 0.5 (bounds that both require grad). */
static tt_status f_clamp_both(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_scope_begin();
    out[0] = tt_keep(tt_clamp_tensor(in[0], tt_add_scalar(in[1], -0.5),
                                     tt_add_scalar(in[1], 0.5)));
    tt_scope_end();
    return out[0] ? TT_OK : tt_errcode();
}

/* where(a > 0, a, 3) and where(a > 0, -2, b): one side a number. */
static tt_status f_where_scalars(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_scope_begin();
    tt_tensor *c = tt_gt(in[0], tt_zeros(0, NULL, TT_F64));
    out[0] = tt_keep(tt_add(tt_where_other_scalar(c, in[0], 3), tt_where_scalar(c, -2, in[1])));
    tt_scope_end();
    return out[0] ? TT_OK : tt_errcode();
}

/* In place by a number, on a copy (a leaf cannot be written in place). */
static tt_status f_inplace_scalars(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_tensor *y = tt_mul_scalar(in[0], 1.5);
    tt_status st = y ? tt_add_scalar_(y, 2) : tt_errcode();
    if (!st)
        st = tt_sub_scalar_(y, 0.25);
    if (!st)
        st = tt_div_scalar_(y, -3);
    if (st)
        y = tt_release(y);
    out[0] = y;
    return st;
}

/* cross_entropy's forms: (x, probabilities) with weight and smoothing;
 * [N, C, d] logits with index targets, weight, ignore_index. ud: the
 * reduction. */
static tt_status f_ce_probs(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    tt_scope_begin();
    tt_tensor *w = tt_from_data(TT_SHAPE(3), TT_F64, (double[]){0.5, 1, 2});
    out[0] = tt_keep(tt_cross_entropy_ex(in[0], in[1], &(tt_cross_entropy_opts){
        .reduction = ud, .weight = w, .label_smoothing = 0.2}));
    tt_scope_end();
    return out[0] ? TT_OK : tt_errcode();
}

static tt_status f_ce_spatial(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    tt_scope_begin();
    tt_tensor *w = tt_from_data(TT_SHAPE(3), TT_F64, (double[]){0.5, 1, 2});
    tt_tensor *t = tt_from_data(TT_SHAPE(2, 2), TT_I64, (int64_t[]){0, 2, 1, 2});
    out[0] = tt_keep(tt_cross_entropy_ex(in[0], t, &(tt_cross_entropy_opts){
        .reduction = ud, .weight = w, .ignore = true, .ignore_index = 1,
        .label_smoothing = 0.1}));
    tt_scope_end();
    return out[0] ? TT_OK : tt_errcode();
}

/* tt_gradcheck on every derivative the newer argument forms brought. */
START_TEST(test_gradcheck_new_forms)
{
    static const struct {
        const char *name;
        tt_fn fn;
        int nin;
        domain dom[2];
    } cases[] = {
        {"pow.Scalar", f_pow_base, 1, {DOM_ANY}},
        {"gelu tanh", f_gelu_tanh, 1, {DOM_ANY}},
        {"div.Scalar_mode None", f_div_floor_none, 1, {DOM_ANY}},
        {"squeeze.dims", f_squeeze_dims, 1, {DOM_ANY}},
        {"clamp.Tensor min", f_clamp_t, 2, {DOM_AWAY0, DOM_ANY}},
        {"clamp.Tensor max", f_clamp_t_max, 2, {DOM_AWAY0, DOM_ANY}},
        {"clamp.Tensor both", f_clamp_both, 2, {DOM_AWAY0, DOM_ANY}},
        {"where.ScalarSelf/ScalarOther", f_where_scalars, 2, {DOM_AWAY0, DOM_ANY}},
        {"add_/sub_/div_.Scalar", f_inplace_scalars, 1, {DOM_ANY}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t live = tt_live_tensors();
        tt_tensor *in[2] = {rand_leaf(2, A(2, 3), cases[i].dom[0]), NULL};
        if (cases[i].nin > 1)
            in[1] = rand_leaf(2, A(2, 3), cases[i].dom[1]);
        tt_status st = tt_gradcheck(cases[i].fn, cases[i].nin, in, 1, NULL, NULL);
        ck_assert_msg(st == TT_OK, "%s: %s", cases[i].name, tt_errmsg());
        release_all(cases[i].nin, in);
        ck_assert_msg(tt_live_tensors() == live, "%s leaks %lld tensors", cases[i].name,
                      (long long)(tt_live_tensors() - live));
    }
    static const char *const reds[] = {"mean", "sum", "none"};
    for (int r = 0; r < 3; r++) {
        int64_t live = tt_live_tensors();
        tt_tensor *in[2] = {rand_leaf(2, A(2, 3), DOM_ANY), rand_leaf(2, A(2, 3), DOM_POS)};
        OK(tt_gradcheck(f_ce_probs, 2, in, 1, NULL, (void *)reds[r]));
        release_all(2, in);
        tt_tensor *x = rand_leaf(3, A(2, 3, 2), DOM_ANY);
        OK(tt_gradcheck(f_ce_spatial, 1, &x, 1, NULL, (void *)reds[r]));
        tt_release(x);
        ck_assert_msg(tt_live_tensors() == live, "cross_entropy %s leaks %lld tensors", reds[r],
                      (long long)(tt_live_tensors() - live));
    }
}
END_TEST

START_TEST(test_pow_zero_base)
{
    tt_tensor *a = leaf(1, A(2), TT_F64, D(0, 2));
    tt_tensor *b = leaf(1, A(2), TT_F64, D(2, 3));
    tt_tensor *g = mk(1, A(2), TT_F64, D(1, 1));
    tt_tensor *y = ok(tt_pow(a, b));
    OK(tt_backward(y, g));
    expect_grad(a, D(0, 12), 0);
    expect_grad(b, D(0, 8 * log(2)), 1e-15);
    release_all(4, (tt_tensor *[]){a, b, g, y});

    /* PyTorch's edge cases: base 0 with a negative exponent gives -inf to
     * both (e * 0^(e-1) and inf * log 0); 0^0 gives 0 to both; a negative
     * base gives NaN to the exponent (log of a negative number), and to
     * the base only where the power itself is NaN. */
    a = leaf(1, A(6), TT_F64, D(0, 0, 0, -2, -2, 0));
    b = leaf(1, A(6), TT_F64, D(-1, 0, 2, 0.5, 2, -2));
    g = mk(1, A(6), TT_F64, D(1, 1, 1, 1, 1, 1));
    y = ok(tt_pow(a, b));
    OK(tt_backward(y, g));
    expect(y, 1, A(6), D(INFINITY, 1, 0, NAN, 4, INFINITY), 0);
    expect_grad(a, D(-INFINITY, 0, 0, NAN, -4, -INFINITY), 0);
    expect_grad(b, D(-INFINITY, 0, 0, NAN, NAN, -INFINITY), 0);
    release_all(4, (tt_tensor *[]){a, b, g, y});
}
END_TEST

/* narrow with a negative start counts from the end in the backward too. */
START_TEST(test_narrow_negative_start_derivative)
{
    tt_tensor *x = leaf(1, A(5), TT_F64, D(0, 1, 2, 3, 4));
    tt_tensor *y = ok(tt_narrow(x, 0, -2, 2));
    tt_tensor *s = ok(tt_sum_all(y));
    OK(tt_backward(s, NULL));
    expect_grad(x, D(0, 0, 0, 1, 1), 0);
    tt_tensor *m = leaf(2, A(2, 3), TT_F64, D(1, 2, 3, 4, 5, 6));
    OK(tt_gradcheck(f_narrow_neg, 1, &m, 1, NULL, NULL));
    release_all(4, (tt_tensor *[]){x, y, s, m});
}
END_TEST

/* linear with a 1-d weight [in]: y = x @ w drops the out dim; dx = g w,
 * dw = sum over rows of g x (PyTorch's values). */
START_TEST(test_linear_vector_weight_derivative)
{
    tt_tensor *x = leaf(2, A(2, 3), TT_F64, D(0, 1, 2, 3, 4, 5));
    tt_tensor *w = leaf(1, A(3), TT_F64, D(1, 2, 3));
    tt_tensor *g = mk(1, A(2), TT_F64, D(1, 2));
    tt_tensor *y = ok(tt_linear(x, w, NULL));
    OK(tt_backward(y, g));
    expect_grad(x, D(1, 2, 3, 2, 4, 6), 0);
    expect_grad(w, D(6, 9, 12), 0);
    tt_tensor *in[3] = {leaf(2, A(2, 3), TT_F64, D(0.5, 1, 2, -3, 4, 5)),
                        leaf(1, A(3), TT_F64, D(1, -2, 3)), leaf(0, NULL, TT_F64, D(0.25))};
    OK(tt_gradcheck(f_linear_vec, 3, in, 1, NULL, NULL));
    tt_tensor *v = leaf(1, A(3), TT_F64, D(1, 2, -1)); /* a 1-d input too: a 0-dim y */
    OK(tt_gradcheck(f_linear_vec, 2, (tt_tensor *[]){v, in[1]}, 1, NULL, NULL));
    release_all(4, (tt_tensor *[]){x, w, g, y});
    release_all(3, in);
    tt_release(v);
}
END_TEST

START_TEST(test_where_clamp_derivatives)
{
    tt_tensor *c = mk(2, A(2, 1), TT_BOOL, D(1, 0));
    tt_tensor *a = leaf(2, A(2, 3), TT_F64, D(1, 2, 3, 4, 5, 6));
    tt_tensor *b = leaf(1, A(3), TT_F64, D(7, 8, 9));
    tt_tensor *g = mk(2, A(2, 3), TT_F64, D(1, 2, 3, 4, 5, 6));
    tt_tensor *y = ok(tt_where(c, a, b));
    expect(y, 2, A(2, 3), D(1, 2, 3, 7, 8, 9), 0);
    OK(tt_backward(y, g));
    expect_grad(a, D(1, 2, 3, 0, 0, 0), 0);
    expect_grad(b, D(4, 5, 6), 0); /* row 1, summed to [3] */
    tt_tensor *x = leaf(1, A(4), TT_F64, D(-2, -0.25, 0.25, 2));
    tt_tensor *gx = mk(1, A(4), TT_F64, D(1, 2, 3, 4));
    tt_tensor *z = ok(tt_clamp(x, -1, 1));
    OK(tt_backward(z, gx));
    expect_grad(x, D(0, 2, 3, 0), 0);
    release_all(8, (tt_tensor *[]){c, a, b, g, y, x, gx, z});
}
END_TEST

static Suite *derivatives_suite(void)
{
    Suite *s = suite_create("derivatives");
    TCase *tc = tt_tcase("derivatives");
    tcase_add_loop_test(tc, test_unary_derivatives, 0, NUN * 2);
    tcase_add_test(tc, test_kink_conventions);
    tcase_add_test(tc, test_binary_derivatives);
    tcase_add_test(tc, test_scalar_derivatives);
    tcase_add_test(tc, test_pow_zero_base);
    tcase_add_test(tc, test_narrow_negative_start_derivative);
    tcase_add_test(tc, test_gradcheck_new_forms);
    tcase_add_test(tc, test_linear_vector_weight_derivative);
    tcase_add_test(tc, test_where_clamp_derivatives);
    suite_add_tcase(s, tc);
    return s;
}

TT_TEST_MAIN(derivatives_suite)
