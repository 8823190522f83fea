/* Elementwise fusion runs each pointwise op's formula exactly as eager
 * does: every built-in op tagged pointwise is either in fused_cases
 * (each argument form, in every dtype it fuses for, run fused in a chain
 * against eager on NaN, +-inf, +-0, denormals and ordinary values, bit
 * for bit) or in not_fused with the reason. A new pointwise op that is in
 * neither fails the coverage test, so the fusion pass and this test
 * cannot drift from the tags. */
#include "tt_test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_EXTRA = 3 };

/* One argument form: op(x[, y], extra...), where a comparison is a mask
 * (y * (x op ...)) because its bool result fuses only inside a chain. */
typedef struct {
    const char *op;
    int ntensors; /* x, or x and y */
    int nextra;
    tt_value extra[MAX_EXTRA];
    bool mask;
} fused_case;

#define F(v) {.kind = TT_V_FLOAT, .u.f = (v)}
#define I(v) {.kind = TT_V_INT, .u.i = (v)}
#define S(v) {.kind = TT_V_STR, .u.s = (v)}
static const fused_case fused_cases[] = {
    {"tt::add.Tensor", 2, 0, {{0}}, false},
    {"tt::add.Tensor", 2, 1, {F(-1.5)}, false},
    {"tt::add.Scalar", 1, 1, {F(0.5)}, false},
    {"tt::add.Scalar", 1, 2, {F(0.5), F(2.5)}, false},
    {"tt::sub.Tensor", 2, 0, {{0}}, false},
    {"tt::sub.Tensor", 2, 1, {I(3)}, false},
    {"tt::sub.Scalar", 1, 1, {F(-1.25)}, false},
    {"tt::sub.Scalar", 1, 2, {F(-1.25), F(0.75)}, false},
    {"tt::mul.Tensor", 2, 0, {{0}}, false},
    {"tt::mul.Scalar", 1, 1, {I(-3)}, false},
    {"tt::div.Tensor", 2, 0, {{0}}, false},
    {"tt::div.Scalar", 1, 1, {I(3)}, false},
    {"tt::div.Scalar", 1, 1, {I(0)}, false},
    {"tt::pow.Tensor_Tensor", 2, 0, {{0}}, false},
    {"tt::pow.Tensor_Scalar", 1, 1, {I(2)}, false},
    {"tt::pow.Tensor_Scalar", 1, 1, {F(0.5)}, false},
    {"tt::pow.Tensor_Scalar", 1, 1, {I(-3)}, false},
    {"tt::eq.Tensor", 2, 0, {{0}}, true},
    {"tt::eq.Scalar", 1, 1, {I(0)}, true},
    {"tt::ne.Tensor", 2, 0, {{0}}, true},
    {"tt::ne.Scalar", 1, 1, {F(1)}, true},
    {"tt::lt.Tensor", 2, 0, {{0}}, true},
    {"tt::lt.Scalar", 1, 1, {F(0.5)}, true},
    {"tt::le.Tensor", 2, 0, {{0}}, true},
    {"tt::le.Scalar", 1, 1, {I(0)}, true},
    {"tt::gt.Tensor", 2, 0, {{0}}, true},
    {"tt::gt.Scalar", 1, 1, {I(0)}, true},
    {"tt::ge.Tensor", 2, 0, {{0}}, true},
    {"tt::ge.Scalar", 1, 1, {F(-2.5)}, true},
    {"tt::neg", 1, 0, {{0}}, false},
    {"tt::exp", 1, 0, {{0}}, false},
    {"tt::log", 1, 0, {{0}}, false},
    {"tt::sqrt", 1, 0, {{0}}, false},
    {"tt::rsqrt", 1, 0, {{0}}, false},
    {"tt::sin", 1, 0, {{0}}, false},
    {"tt::cos", 1, 0, {{0}}, false},
    {"tt::tanh", 1, 0, {{0}}, false},
    {"tt::sigmoid", 1, 0, {{0}}, false},
    {"tt::relu", 1, 0, {{0}}, false},
    {"tt::gelu", 1, 0, {{0}}, false},
    {"tt::gelu", 1, 1, {S("none")}, false},
    {"tt::gelu", 1, 1, {S("tanh")}, false},
    {"tt::abs", 1, 0, {{0}}, false},
    {"tt::sign", 1, 0, {{0}}, false},
    {"tt::leaky_relu", 1, 0, {{0}}, false},
    {"tt::leaky_relu", 1, 1, {F(0.2)}, false},
    {"tt::leaky_relu", 1, 1, {I(-2)}, false},
    {"tt::elu", 1, 0, {{0}}, false},
    {"tt::elu", 1, 3, {F(0.7), F(1.5), F(0.5)}, false},
    {"tt::hardtanh", 1, 0, {{0}}, false},
    {"tt::hardtanh", 1, 2, {F(-0.5), I(2)}, false},
    {"tt::hardtanh", 1, 2, {I(2), I(-1)}, false},
    {"tt::softplus", 1, 0, {{0}}, false},
    {"tt::softplus", 1, 2, {F(2), F(3)}, false},
    {"tt::hardswish", 1, 0, {{0}}, false},
    {"tt::hardsigmoid", 1, 0, {{0}}, false},
    {"tt::silu", 1, 0, {{0}}, false},
    {"tt::acos", 1, 0, {{0}}, false},
    {"tt::asin", 1, 0, {{0}}, false},
    {"tt::atan", 1, 0, {{0}}, false},
    {"tt::acosh", 1, 0, {{0}}, false},
    {"tt::asinh", 1, 0, {{0}}, false},
    {"tt::atanh", 1, 0, {{0}}, false},
    {"tt::sinh", 1, 0, {{0}}, false},
    {"tt::cosh", 1, 0, {{0}}, false},
    {"tt::tan", 1, 0, {{0}}, false},
    {"tt::erf", 1, 0, {{0}}, false},
    {"tt::expm1", 1, 0, {{0}}, false},
    {"tt::log1p", 1, 0, {{0}}, false},
    {"tt::log2", 1, 0, {{0}}, false},
    {"tt::log10", 1, 0, {{0}}, false},
    {"tt::reciprocal", 1, 0, {{0}}, false},
    {"tt::floor", 1, 0, {{0}}, false},
    {"tt::ceil", 1, 0, {{0}}, false},
    {"tt::trunc", 1, 0, {{0}}, false},
    {"tt::round", 1, 0, {{0}}, false},
    {"tt::fmod.Tensor", 2, 0, {{0}}, false},
    {"tt::fmod.Scalar", 1, 1, {F(0.75)}, false},
    {"tt::fmod.Scalar", 1, 1, {I(-2)}, false},
    {"tt::remainder.Tensor", 2, 0, {{0}}, false},
    {"tt::remainder.Scalar", 1, 1, {F(-0.75)}, false},
    {"tt::remainder.Scalar", 1, 1, {I(2)}, false},
    {"tt::atan2", 2, 0, {{0}}, false},
    {"tt::maximum", 2, 0, {{0}}, false},
    {"tt::minimum", 2, 0, {{0}}, false},
    {"tt::logical_and", 2, 0, {{0}}, true},
    {"tt::logical_or", 2, 0, {{0}}, true},
    {"tt::logical_xor", 2, 0, {{0}}, true},
};
enum { NCASES = sizeof fused_cases / sizeof fused_cases[0] };

/* Tagged pointwise, deliberately left to eager, and why. */
static const struct {
    const char *op, *why;
} not_fused[] = {
    {"tt::div.Tensor_mode", "rounding modes: a formula per mode, not in the list yet"},
    {"tt::div.Scalar_mode", "rounding modes: a formula per mode, not in the list yet"},
    {"tt::pow.Scalar", "a Scalar base: the chain's first operand is a tensor"},
    {"tt::gelu_backward", "two formulas by argument, computed in double per element"},
    {"tt::silu_backward", "a backward op: two operands, computed in double per element"},
    {"tt::where.self", "three operands, one of them bool"},
    {"tt::where.ScalarSelf", "three operands, one of them bool"},
    {"tt::where.ScalarOther", "three operands, one of them bool"},
    {"tt::where.Scalar", "no float tensor operand"},
    {"tt::clamp", "optional bounds (None) and a NaN rule of its own"},
    {"tt::clamp.Tensor", "three tensor operands, optional"},
    {"tt::leaky_relu_backward", "a backward op: two operands and parameters, not in the list"},
    {"tt::elu_backward", "a backward op: two operands and parameters, not in the list"},
    {"tt::hardtanh_backward", "a backward op: two operands and parameters, not in the list"},
    {"tt::hardswish_backward", "a backward op: two operands, not in the list"},
    {"tt::hardsigmoid_backward", "a backward op: two operands, not in the list"},
    {"tt::softplus_backward", "a backward op: two operands and parameters, not in the list"},
    {"tt::isnan", "a bool result of one operand: not a mask the chain's kinds hold"},
    {"tt::isinf", "a bool result of one operand: not a mask the chain's kinds hold"},
    {"tt::logical_not", "a bool result of one operand: not a mask the chain's kinds hold"},
    {"tt::bitwise_and.Tensor", "integers and bool only; chains are float"},
    {"tt::bitwise_and.Scalar", "integers and bool only; chains are float"},
    {"tt::bitwise_or.Tensor", "integers and bool only; chains are float"},
    {"tt::bitwise_or.Scalar", "integers and bool only; chains are float"},
    {"tt::bitwise_xor.Tensor", "integers and bool only; chains are float"},
    {"tt::bitwise_xor.Scalar", "integers and bool only; chains are float"},
    {"tt::bitwise_not", "integers and bool only; chains are float"},
};
enum { NNOT = sizeof not_fused / sizeof not_fused[0] };

typedef struct {
    int missing;
    char names[1024];
} coverage;

static bool in_cases(const char *name)
{
    for (int k = 0; k < NCASES; k++)
        if (!strcmp(fused_cases[k].op, name))
            return true;
    return false;
}

static bool in_not_fused(const char *name)
{
    for (int k = 0; k < NNOT; k++)
        if (!strcmp(not_fused[k].op, name))
            return true;
    return false;
}

static void check_covered(const tt_op *op, void *ud)
{
    coverage *c = ud;
    const char *name = tt_op_name(op);
    if (strncmp(name, "tt::", 4) || !(tt_op_tags(op) & TT_TAG_POINTWISE))
        return;
    if (in_cases(name) || in_not_fused(name))
        return;
    c->missing++;
    size_t len = strlen(c->names);
    snprintf(c->names + len, sizeof c->names - len, " %s", name);
}

START_TEST(test_every_pointwise_op_is_covered)
{
    coverage c = {0, ""};
    tt_op_foreach(check_covered, &c);
    ck_assert_msg(c.missing == 0, "tagged pointwise but neither in fused_cases nor in "
                                  "not_fused:%s", c.names);
    /* And the lists name tagged ops that exist, in one list only. */
    for (int k = 0; k < NCASES; k++) {
        const tt_op *op = tt_op_find(fused_cases[k].op);
        ck_assert_msg(op && tt_op_tags(op) & TT_TAG_POINTWISE, "%s: not a pointwise op",
                      fused_cases[k].op);
        ck_assert_msg(!in_not_fused(fused_cases[k].op), "%s: in both lists", fused_cases[k].op);
    }
    for (int k = 0; k < NNOT; k++) {
        const tt_op *op = tt_op_find(not_fused[k].op);
        ck_assert_msg(op && tt_op_tags(op) & TT_TAG_POINTWISE, "%s: not a pointwise op",
                      not_fused[k].op);
    }
    tt_clear_error();
}
END_TEST

/* neg(op(x[, y], ...)), or neg(y * op(x[, y], ...)) for a comparison: a
 * chain of two or three ops, neg exact. */
static tt_status chain(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    const fused_case *fc = ud;
    tt_value args[2 + MAX_EXTRA];
    int n = 0;
    for (int i = 0; i < fc->ntensors; i++)
        args[n++] = tt_v_tensor(in[i]);
    for (int i = 0; i < fc->nextra; i++)
        args[n++] = fc->extra[i];
    tt_tensor *r = tt_op_call1(tt_op_find(fc->op), args, n);
    if (r && fc->mask) {
        tt_tensor *m = r;
        r = tt_mul(in[1], m);
        tt_release(m);
    }
    out[0] = r ? tt_neg(r) : NULL;
    tt_release(r);
    return out[0] ? TT_OK : tt_errcode();
}

/* NaN of both signs, +-inf, +-0, denormals of f32 and f64, the smallest
 * normals, ordinary and large values; y rotated against x so that every
 * pair meets, and repeated past a vector kernel's width (the tail runs
 * too). */
static void make_inputs(tt_dtype dt, tt_tensor **in)
{
    const double sp[] = {NAN, -NAN, INFINITY, -INFINITY, 0.0, -0.0, 1e-40, -1e-40, 1e-310,
                         -1e-310, 1.1754943508222875e-38, 2.2250738585072014e-308, 1, -1,
                         0.5, -2.5, 3.7, 1e30, -1e30, 88.5, -88.5, 1e-3, 100, -7e-5, 2, 3};
    enum { NSP = sizeof sp / sizeof sp[0], N = NSP * NSP + 5 };
    static double x[N], y[N];
    for (int i = 0; i < N; i++) {
        x[i] = sp[i % NSP];
        y[i] = sp[(i / NSP + i) % NSP];
    }
    for (int k = 0; k < 2; k++) {
        tt_tensor *d = NN(tt_from_data(1, (int64_t[]){N}, TT_F64, k ? y : x));
        in[k] = NN(tt_to_dtype(d, dt));
        tt_release(d);
    }
}

static void describe(const fused_case *fc, tt_dtype dt, char *buf, size_t n)
{
    int len = snprintf(buf, n, "%s(%s", fc->op, fc->ntensors == 2 ? "x, y" : "x");
    for (int i = 0; i < fc->nextra && len < (int)n; i++) {
        const tt_value *v = &fc->extra[i];
        len += v->kind == TT_V_STR ? snprintf(buf + len, n - (size_t)len, ", '%s'", v->u.s)
             : v->kind == TT_V_INT ? snprintf(buf + len, n - (size_t)len, ", %lld",
                                              (long long)v->u.i)
                                   : snprintf(buf + len, n - (size_t)len, ", %g", v->u.f);
    }
    if (len < (int)n)
        snprintf(buf + len, n - (size_t)len, ") %s", tt_dtype_name(dt));
}

/* Each case in f32 (_i 0) and f64 (_i 1): compiled with every pass, it
 * fuses (the op and neg at least in one step) and every output element
 * has eager's bits. */
START_TEST(test_fused_matches_eager_bit_for_bit)
{
    tt_dtype dt = _i ? TT_F64 : TT_F32;
    size_t es = tt_dtype_size(dt);
    for (int k = 0; k < NCASES; k++) {
        const fused_case *fc = &fused_cases[k];
        char what[160];
        describe(fc, dt, what, sizeof what);
        tt_tensor *in[2], *eager[1], *fused[1];
        make_inputs(dt, in);
        OK(chain(in, 2, eager, 1, (void *)fc));
        tt_compiled *c = NN(tt_compile(chain, 2, 1,
                                       &(tt_trace_opts){.fullgraph = true, .ud = (void *)fc,
                                                        .ud_constant = true}));
        OK(tt_compiled_call(c, in, fused));
        tt_compile_stats st;
        tt_compiled_stats(c, &st);
        ck_assert_msg(st.fused_ops >= 2, "%s: not fused (%d ops in fused steps)", what,
                      st.fused_ops);
        ck_assert_int_eq(tt_numel(fused[0]), tt_numel(eager[0]));
        ck_assert_int_eq(tt_dtype_of(fused[0]), dt);
        const char *a = tt_data(fused[0]), *b = tt_data(eager[0]);
        double *va = tt_test_values(fused[0]), *vb = tt_test_values(eager[0]);
        double *vx = tt_test_values(in[0]), *vy = tt_test_values(in[1]);
        for (int64_t i = 0; i < tt_numel(eager[0]); i++)
            ck_assert_msg(memcmp(a + (size_t)i * es, b + (size_t)i * es, es) == 0,
                          "%s: element %lld is %.17g fused, %.17g eager (x = %.17g, y = "
                          "%.17g)", what, (long long)i, va[i], vb[i], vx[i], vy[i]);
        free(va);
        free(vb);
        free(vx);
        free(vy);
        tt_release(eager[0]);
        tt_release(fused[0]);
        tt_release(in[0]);
        tt_release(in[1]);
        tt_compiled_free(c);
    }
}
END_TEST

/* gelu with another approximate string is refused by eager; compiled, it
 * is not fused into either formula but fails alike. */
static const fused_case gelu_bad = {"tt::gelu", 1, 1, {S("erf")}, false};

START_TEST(test_gelu_bad_approximate_not_fused)
{
    tt_tensor *in[2], *out[1] = {NULL};
    make_inputs(TT_F32, in);
    tt_status st = chain(in, 2, out, 1, (void *)&gelu_bad);
    ck_assert_int_eq(st, TT_EINVAL);
    ck_assert_ptr_nonnull(strstr(tt_errmsg(), "argument 'approximate' (#2): expected 'none' "
                                              "or 'tanh', got 'erf'"));
    tt_compiled *c = tt_compile(chain, 2, 1,
                                &(tt_trace_opts){.fullgraph = true, .ud = (void *)&gelu_bad,
                                                 .ud_constant = true});
    if (c) {
        ck_assert_int_eq(tt_compiled_call(c, in, out), TT_EINVAL);
        tt_compiled_free(c);
    }
    ck_assert_ptr_nonnull(strstr(tt_errmsg(), "got 'erf'"));
    tt_clear_error();
    tt_release(in[0]);
    tt_release(in[1]);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("fusion");
    TCase *tc = tt_tcase("coverage");
    tcase_add_test(tc, test_every_pointwise_op_is_covered);
    suite_add_tcase(s, tc);
    tc = tt_tcase("bit_for_bit");
    tcase_add_loop_test(tc, test_fused_matches_eager_bit_for_bit, 0, 2);
    tcase_add_test(tc, test_gelu_bad_approximate_not_fused);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
