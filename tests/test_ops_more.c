/* maximum, minimum, isnan, isinf, the logical and bitwise ops (issue 27,
 * part D), and atan2.out. What the differential file
 * (tests/data/torch_ref.txt) cannot say: values on NaN, +-inf, +-0 (its
 * closed forms make none of them);
 * each derivative by tt_gradcheck, and the half-and-half split on ties; a
 * traced and compiled chain (fused) equal to eager with its backward; and
 * every error by status and text. Each test ends with zero live tensors
 * (the fixture checks). */
#include "tt_test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* ck_assert_* records every passing check; this one acts on failure only,
 * for loops over many elements. */
#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        if (!(cond))                                                           \
            ck_abort_msg(__VA_ARGS__);                                         \
    } while (0)

static const double special[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0, 1e-300, -2.5, 2.5, 1, -1};
enum { NS = sizeof special / sizeof special[0] };

/* Every pair of special values as two [NS * NS] tensors of dtype dt. */
static void special_pairs(tt_dtype dt, tt_tensor **a, tt_tensor **b)
{
    double av[NS * NS], bv[NS * NS];
    for (int i = 0; i < NS; i++)
        for (int j = 0; j < NS; j++)
            av[i * NS + j] = special[i], bv[i * NS + j] = special[j];
    tt_tensor *a64 = NN(tt_from_data(1, (int64_t[]){NS * NS}, TT_F64, av));
    tt_tensor *b64 = NN(tt_from_data(1, (int64_t[]){NS * NS}, TT_F64, bv));
    *a = NN(tt_to_dtype(a64, dt));
    *b = NN(tt_to_dtype(b64, dt));
    tt_release(a64);
    tt_release(b64);
}

static double ref_max(double a, double b) { return isnan(a) || isnan(b) ? NAN : a < b ? b : a; }
static double ref_min(double a, double b) { return isnan(a) || isnan(b) ? NAN : b < a ? b : a; }

static double at(const tt_tensor *t, int64_t i)
{
    tt_tensor *f = NN(tt_to_dtype(t, TT_F64));
    double v = ((const double *)tt_data(f))[i];
    tt_release(f);
    return v;
}

/* maximum and minimum against their definitions on every pair of special
 * values, f32 and f64: NaN from either side, -0 and +0 kept as the first
 * operand (std::max's), infinities. */
START_TEST(test_minmax_special)
{
    tt_dtype dts[2] = {TT_F32, TT_F64};
    for (int d = 0; d < 2; d++) {
        tt_tensor *a, *b;
        special_pairs(dts[d], &a, &b);
        tt_tensor *mx = NN(tt_maximum(a, b)), *mn = NN(tt_minimum(a, b));
        tt_tensor *mx64 = NN(tt_to_dtype(mx, TT_F64)), *mn64 = NN(tt_to_dtype(mn, TT_F64));
        ck_assert_int_eq(tt_dtype_of(mx), dts[d]);
        const double *x = tt_data(mx64), *n = tt_data(mn64);
        for (int i = 0; i < NS; i++)
            for (int j = 0; j < NS; j++) {
                double p = special[i], q = special[j];
                if (dts[d] == TT_F32)
                    p = (float)p, q = (float)q;
                double wx = ref_max(p, q), wn = ref_min(p, q);
                double gx = x[i * NS + j], gn = n[i * NS + j];
                CHECK(isnan(wx) ? isnan(gx) : gx == wx && signbit(gx) == signbit(wx),
                      "%s maximum(%g, %g) = %g, want %g", tt_dtype_name(dts[d]), p, q, gx, wx);
                CHECK(isnan(wn) ? isnan(gn) : gn == wn && signbit(gn) == signbit(wn),
                      "%s minimum(%g, %g) = %g, want %g", tt_dtype_name(dts[d]), p, q, gn, wn);
            }
        tt_release(a), tt_release(b), tt_release(mx), tt_release(mn);
        tt_release(mx64), tt_release(mn64);
    }
}
END_TEST

/* Integers (no overflow through a double), bool (or / and) and a mix
 * that promotes. */
START_TEST(test_minmax_integers)
{
    int64_t av[3] = {INT64_MAX, INT64_MIN, -7}, bv[3] = {INT64_MAX - 1, 5, -7};
    tt_tensor *a = NN(tt_from_data(1, (int64_t[]){3}, TT_I64, av));
    tt_tensor *b = NN(tt_from_data(1, (int64_t[]){3}, TT_I64, bv));
    tt_tensor *mx = NN(tt_maximum(a, b)), *mn = NN(tt_minimum(a, b));
    const int64_t *x = tt_data(mx), *n = tt_data(mn);
    ck_assert(x[0] == INT64_MAX && x[1] == 5 && x[2] == -7);
    ck_assert(n[0] == INT64_MAX - 1 && n[1] == INT64_MIN && n[2] == -7);
    tt_release(mx), tt_release(mn);
    bool pb[4] = {true, true, false, false}, qb[4] = {true, false, true, false};
    tt_tensor *p = NN(tt_from_data(1, (int64_t[]){4}, TT_BOOL, pb));
    tt_tensor *q = NN(tt_from_data(1, (int64_t[]){4}, TT_BOOL, qb));
    mx = NN(tt_maximum(p, q)), mn = NN(tt_minimum(p, q));
    ck_assert_int_eq(tt_dtype_of(mx), TT_BOOL);
    const bool *bx = tt_data(mx), *bn = tt_data(mn);
    for (int i = 0; i < 4; i++) {
        ck_assert(bx[i] == (pb[i] || qb[i]));
        ck_assert(bn[i] == (pb[i] && qb[i]));
    }
    tt_release(mx), tt_release(mn);
    /* bool and i64 promote to i64; i64 and f32 to f32 */
    tt_tensor *p3 = NN(tt_gt(a, b));
    mx = NN(tt_maximum(p3, a));
    ck_assert_int_eq(tt_dtype_of(mx), TT_I64);
    tt_release(mx), tt_release(p3);
    tt_tensor *f = NN(tt_full(TT_SHAPE(3), 0.5, TT_F32));
    mn = NN(tt_minimum(a, f));
    ck_assert_int_eq(tt_dtype_of(mn), TT_F32);
    ck_assert(at(mn, 2) == -7 && at(mn, 0) == 0.5);
    tt_release(mn);
    tt_release(f), tt_release(a), tt_release(b), tt_release(p), tt_release(q);
}
END_TEST

static tt_status f_minmax(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    out[0] = ud ? tt_maximum(in[0], in[1]) : tt_minimum(in[0], in[1]);
    return out[0] ? TT_OK : tt_errcode();
}

/* Away from ties the derivative is defined: finite differences agree,
 * broadcasting included. */
START_TEST(test_minmax_gradcheck)
{
    static const double av[6] = {-1.3, 0.7, 2.2, -0.4, 1.9, -2.6}, bv[3] = {0.1, -1.1, 1.4};
    for (int k = 0; k < 2; k++) {
        tt_tensor *in[2] = {NN(tt_from_data(2, (int64_t[]){2, 3}, TT_F64, av)),
                            NN(tt_from_data(1, (int64_t[]){3}, TT_F64, bv))};
        OK(tt_set_requires_grad(in[0], true));
        OK(tt_set_requires_grad(in[1], true));
        tt_status st = tt_gradcheck(f_minmax, 2, in, 1, NULL, (void *)(intptr_t)k);
        ck_assert_msg(st == TT_OK, "%s: %s", k ? "maximum" : "minimum", tt_errmsg());
        tt_release(in[0]), tt_release(in[1]);
    }
}
END_TEST

/* PyTorch's rule at a tie: each operand gets half the gradient; where one
 * is NaN, both get all of it (no comparison holds). */
START_TEST(test_minmax_ties)
{
    static const double av[4] = {1, 2, 3, NAN}, bv[4] = {1, 5, -3, 0};
    for (int k = 0; k < 2; k++) {
        tt_tensor *a = NN(tt_from_data(1, (int64_t[]){4}, TT_F64, av));
        tt_tensor *b = NN(tt_from_data(1, (int64_t[]){4}, TT_F64, bv));
        OK(tt_set_requires_grad(a, true));
        OK(tt_set_requires_grad(b, true));
        tt_tensor *y = NN(k ? tt_maximum(a, b) : tt_minimum(a, b));
        tt_tensor *s = NN(tt_sum_all(y));
        tt_tensor *g[2];
        OK(tt_grad(1, &s, NULL, 2, (tt_tensor *[]){a, b}, g));
        const double *ga = tt_data(g[0]), *gb = tt_data(g[1]);
        /* element 1: b wins max, a wins min; element 2: the other way */
        double wa[4] = {0.5, k ? 0 : 1, k ? 1 : 0, 1}, wb[4] = {0.5, k ? 1 : 0, k ? 0 : 1, 1};
        for (int i = 0; i < 4; i++) {
            CHECK(ga[i] == wa[i], "%s: d/dself[%d] = %g, want %g", k ? "max" : "min", i, ga[i],
                  wa[i]);
            CHECK(gb[i] == wb[i], "%s: d/dother[%d] = %g, want %g", k ? "max" : "min", i, gb[i],
                  wb[i]);
        }
        tt_release(g[0]), tt_release(g[1]);
        tt_release(s), tt_release(y), tt_release(a), tt_release(b);
    }
}
END_TEST

/* isnan, isinf, logical_* on the special values (NaN is true for the
 * logical ops, as in PyTorch), in f32 and f64; integers are never NaN. */
START_TEST(test_predicates_and_logical)
{
    tt_dtype dts[2] = {TT_F32, TT_F64};
    for (int d = 0; d < 2; d++) {
        tt_tensor *a, *b;
        special_pairs(dts[d], &a, &b);
        tt_tensor *r[6] = {NN(tt_isnan(a)), NN(tt_isinf(a)), NN(tt_logical_not(a)),
                           NN(tt_logical_and(a, b)), NN(tt_logical_or(a, b)),
                           NN(tt_logical_xor(a, b))};
        for (int k = 0; k < 6; k++)
            ck_assert_int_eq(tt_dtype_of(r[k]), TT_BOOL);
        for (int i = 0; i < NS; i++)
            for (int j = 0; j < NS; j++) {
                double p = special[i], q = special[j];
                if (dts[d] == TT_F32)
                    p = (float)p, q = (float)q;
                bool tp = p != 0, tq = q != 0; /* NaN != 0 */
                bool want[6] = {isnan(p), isinf(p), !tp, tp && tq, tp || tq, tp != tq};
                for (int k = 0; k < 6; k++)
                    CHECK(((const bool *)tt_data(r[k]))[i * NS + j] == want[k],
                          "%s op %d of (%g, %g)", tt_dtype_name(dts[d]), k, p, q);
            }
        for (int k = 0; k < 6; k++)
            tt_release(r[k]);
        tt_release(a), tt_release(b);
    }
    tt_tensor *i = NN(tt_full(TT_SHAPE(2), 3, TT_I32));
    tt_tensor *n = NN(tt_isnan(i)), *f = NN(tt_isinf(i));
    ck_assert(!((const bool *)tt_data(n))[0] && !((const bool *)tt_data(f))[1]);
    tt_release(n), tt_release(f), tt_release(i);
}
END_TEST

/* Bitwise ops: two's complement on every integer dtype, u8 wrapping for
 * not, bool as logical; Scalar overloads promote as PyTorch's (a bool
 * tensor with an int Scalar gives i64). */
START_TEST(test_bitwise_values)
{
    int64_t av[4] = {-3, 6, 0x7f, INT64_MIN}, bv[4] = {6, -1, 0x0f, -1};
    tt_tensor *a = NN(tt_from_data(1, (int64_t[]){4}, TT_I64, av));
    tt_tensor *b = NN(tt_from_data(1, (int64_t[]){4}, TT_I64, bv));
    tt_tensor *r[4] = {NN(tt_bitwise_and(a, b)), NN(tt_bitwise_or(a, b)),
                       NN(tt_bitwise_xor(a, b)), NN(tt_bitwise_not(a))};
    for (int i = 0; i < 4; i++) {
        ck_assert(((const int64_t *)tt_data(r[0]))[i] == (av[i] & bv[i]));
        ck_assert(((const int64_t *)tt_data(r[1]))[i] == (av[i] | bv[i]));
        ck_assert(((const int64_t *)tt_data(r[2]))[i] == (av[i] ^ bv[i]));
        ck_assert(((const int64_t *)tt_data(r[3]))[i] == ~av[i]);
    }
    for (int k = 0; k < 4; k++)
        tt_release(r[k]);
    tt_tensor *s = NN(tt_bitwise_xor_scalar(a, INT64_MAX));
    ck_assert(((const int64_t *)tt_data(s))[1] == (6 ^ INT64_MAX));
    tt_release(s);
    uint8_t uv[3] = {0, 1, 255};
    tt_tensor *u = NN(tt_from_data(1, (int64_t[]){3}, TT_U8, uv));
    tt_tensor *nu = NN(tt_bitwise_not(u));
    ck_assert_int_eq(tt_dtype_of(nu), TT_U8);
    ck_assert(((const uint8_t *)tt_data(nu))[0] == 255 && ((const uint8_t *)tt_data(nu))[2] == 0);
    tt_release(nu), tt_release(u);
    bool pb[2] = {true, false};
    tt_tensor *p = NN(tt_from_data(1, (int64_t[]){2}, TT_BOOL, pb));
    tt_tensor *np = NN(tt_bitwise_not(p)), *ps = NN(tt_bitwise_and_scalar(p, 3));
    ck_assert_int_eq(tt_dtype_of(np), TT_BOOL);
    ck_assert(!((const bool *)tt_data(np))[0] && ((const bool *)tt_data(np))[1]);
    ck_assert_int_eq(tt_dtype_of(ps), TT_I64);
    ck_assert(((const int64_t *)tt_data(ps))[0] == 1 && ((const int64_t *)tt_data(ps))[1] == 0);
    tt_release(np), tt_release(ps), tt_release(p), tt_release(a), tt_release(b);
}
END_TEST

/* A chain of maximum, minimum and a logical mask (one line of ops, each
 * reading the one before: what a fused step holds), with the gradient of
 * sum(out * g) for both inputs: what a traced training step records. */
static tt_status f_chain(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_scope_begin();
    tt_tensor *m = tt_logical_xor(tt_relu(in[0]), in[1]);
    tt_tensor *h = tt_minimum(tt_maximum(tt_mul(in[1], m), in[0]), in[1]);
    tt_tensor *y = tt_tanh(h);
    tt_tensor *g[2] = {NULL, NULL};
    tt_status st = y ? tt_grad(1, &y, &in[2], 2, in, g) : tt_errcode();
    out[0] = st ? NULL : tt_keep(y);
    out[1] = st ? NULL : tt_keep(g[0]);
    out[2] = st ? NULL : tt_keep(g[1]);
    tt_scope_end();
    return st;
}

static tt_status f_chain_forward(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_scope_begin();
    tt_tensor *m = tt_logical_xor(tt_relu(in[0]), in[1]);
    tt_tensor *h = tt_minimum(tt_maximum(tt_mul(in[1], m), in[0]), in[1]);
    out[0] = tt_keep(tt_tanh(h));
    tt_scope_end();
    return out[0] ? TT_OK : tt_errcode();
}

/* Compiled (replayed on new values) = eager bit for bit, forward and both
 * gradients; the forward chain alone fuses into one step. */
START_TEST(test_chain_traced_and_compiled)
{
    tt_tensor *in[3];
    tt_compiled *c = NN(tt_compile(f_chain, 3, 3, &(tt_trace_opts){.nout = 3}));
    char what[64];
    for (int k = 0; k < 3; k++) {
        for (int i = 0; i < 3; i++)
            in[i] = NN(tt_randn(TT_SHAPE(5, 7), TT_F32));
        OK(tt_set_requires_grad(in[0], true));
        OK(tt_set_requires_grad(in[1], true));
        tt_tensor *got[3], *want[3];
        OK(tt_compiled_call(c, in, got));
        OK(f_chain(in, 3, want, 3, NULL));
        for (int i = 0; i < 3; i++) {
            snprintf(what, sizeof what, "call %d output %d", k, i);
            tt_test_assert_same_bits(got[i], want[i], what);
            tt_release(got[i]);
            tt_release(want[i]);
        }
        for (int i = 0; i < 3; i++)
            tt_release(in[i]);
    }
    tt_compiled_free(c);

    tt_tensor *x[2] = {NN(tt_randn(TT_SHAPE(64), TT_F32)), NN(tt_randn(TT_SHAPE(64), TT_F32))};
    tt_tensor *got, *want;
    c = NN(tt_compile(f_chain_forward, 2, 1, NULL));
    OK(tt_compiled_call(c, x, &got));
    tt_compile_stats st;
    tt_compiled_stats(c, &st);
    ck_assert_int_eq(st.fused_steps, 1);
    ck_assert_int_eq(st.fused_ops, 6);
    OK(f_chain_forward(x, 2, &want, 1, NULL));
    tt_test_assert_same_bits(got, want, "the fused chain");
    tt_release(got), tt_release(want);
    tt_compiled_free(c);
    tt_release(x[0]), tt_release(x[1]);
}
END_TEST

/* The fake path gives the real path's metadata. */
START_TEST(test_fake_metadata)
{
    tt_tensor *a = NN(tt_randn(TT_SHAPE(2, 1, 3), TT_F32));
    tt_tensor *b = NN(tt_randn(TT_SHAPE(4, 1), TT_F64));
    tt_tensor *fa = NN(tt_fake_like(a)), *fb = NN(tt_fake_like(b));
    tt_tensor *r[2] = {NN(tt_maximum(a, b)), NN(tt_logical_or(a, b))};
    tt_tensor *f[2] = {NN(tt_maximum(fa, fb)), NN(tt_logical_or(fa, fb))};
    for (int k = 0; k < 2; k++) {
        ck_assert_int_eq(tt_dtype_of(r[k]), tt_dtype_of(f[k]));
        ck_assert_int_eq(tt_ndim(r[k]), 3);
        for (int d = 0; d < 3; d++) {
            ck_assert_int_eq(tt_sizes(r[k])[d], tt_sizes(f[k])[d]);
            ck_assert_int_eq(tt_strides(r[k])[d], tt_strides(f[k])[d]);
        }
        tt_release(r[k]), tt_release(f[k]);
    }
    tt_release(fa), tt_release(fb), tt_release(a), tt_release(b);
}
END_TEST

/* ------------------------------------------------------- var, std, any */

typedef struct {
    bool is_std;
    int ndims;
    int64_t dims[2];
    int64_t corr;
    bool keepdim;
} var_case;

static tt_status f_var(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    const var_case *c = ud;
    out[0] = c->is_std ? tt_std(in[0], c->ndims, c->dims, c->corr, c->keepdim)
                       : tt_var(in[0], c->ndims, c->dims, c->corr, c->keepdim);
    return out[0] ? TT_OK : tt_errcode();
}

static const var_case var_cases[] = {
    {false, 0, {0}, 1, false}, {true, 0, {0}, 1, false},  {false, 1, {1}, 0, true},
    {true, 1, {-1}, 2, false}, {false, 2, {0, 2}, 1, false}, {true, 2, {2, 0}, 0, true},
};

/* var and std's derivatives (PyTorch's var_backward, std_backward) against
 * finite differences, over every dim, one, two, with corrections 0, 1, 2. */
START_TEST(test_var_std_gradcheck)
{
    for (int k = 0; k < TT_TABLE_LEN(var_cases); k++) {
        tt_tensor *x = NN(tt_randn(TT_SHAPE(3, 4, 5), TT_F64));
        OK(tt_set_requires_grad(x, true));
        tt_status st = tt_gradcheck(f_var, 1, &x, 1, NULL, (void *)&var_cases[k]);
        ck_assert_msg(st == TT_OK, "case %d: %s", k, tt_errmsg());
        tt_release(x);
    }
}
END_TEST

/* Two passes: values around 1e9 with unit spread keep their variance (a
 * one-pass sum of squares in double loses it all); the f32 result is the
 * double computation rounded once. */
START_TEST(test_var_accuracy)
{
    enum { N = 1001 };
    static double v[N];
    double mean = 0, m2 = 0;
    for (int i = 0; i < N; i++)
        mean += (v[i] = 1e9 + (i % 7) - 3);
    mean /= N;
    for (int i = 0; i < N; i++)
        m2 += (v[i] - mean) * (v[i] - mean);
    tt_tensor *x = NN(tt_from_data(1, (int64_t[]){N}, TT_F64, v));
    tt_tensor *r = NN(tt_var(x, 0, NULL, 1, false)), *s = NN(tt_std(x, 0, NULL, 0, false));
    ck_assert_double_eq_tol(at(r, 0), m2 / (N - 1), 1e-9);
    ck_assert_double_eq_tol(at(s, 0), sqrt(m2 / N), 1e-9);
    tt_release(r), tt_release(s), tt_release(x);
}
END_TEST

/* The gradient of var through a compiled symbolic trace: n - correction
 * is a size expression in the backward graph (div.Scalar by s0*s1 - 1),
 * which the fusion pass once fused as the handle's raw value. */
static tt_status f_var_grad(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_scope_begin();
    tt_tensor *y = tt_var(in[0], 0, NULL, 1, false), *g = NULL;
    tt_status st = y ? tt_grad(1, &y, NULL, 1, in, &g) : tt_errcode();
    out[0] = st ? NULL : tt_keep(g);
    tt_scope_end();
    return st;
}

START_TEST(test_var_grad_symbolic_compiled)
{
    tt_compiled *c = NN(tt_compile(f_var_grad, 1, 1, &(tt_trace_opts){.mode = TT_TRACE_SYMBOLIC}));
    for (int k = 0; k < 3; k++) {
        tt_tensor *x = NN(tt_randn(TT_SHAPE(3 + k, 4), TT_F64)), *got, *want;
        OK(tt_set_requires_grad(x, true));
        OK(tt_compiled_call(c, &x, &got));
        OK(f_var_grad(&x, 1, &want, 1, NULL));
        tt_test_assert_close(got, want, 1e-12, "var's gradient, compiled symbolic");
        tt_release(got), tt_release(want), tt_release(x);
    }
    tt_compiled_free(c);
}
END_TEST

/* any/all: NaN is true, empty is any's false and all's true, u8 in gives
 * u8 out (PyTorch 1.13). */
START_TEST(test_any_all)
{
    double v[6] = {0, NAN, 0, 0, 0, 0};
    tt_tensor *x = NN(tt_from_data(2, (int64_t[]){2, 3}, TT_F64, v));
    tt_tensor *a = NN(tt_any(x)), *l = NN(tt_all(x)), *ad = NN(tt_any_dim(x, 1, true));
    ck_assert_int_eq(tt_dtype_of(a), TT_BOOL);
    ck_assert(((const bool *)tt_data(a))[0] && !((const bool *)tt_data(l))[0]);
    ck_assert_int_eq(tt_ndim(ad), 2);
    ck_assert(((const bool *)tt_data(ad))[0] && !((const bool *)tt_data(ad))[1]);
    tt_release(a), tt_release(l), tt_release(ad), tt_release(x);
    /* any.dims / all.dims agree with any.dim / all.dim applied in turn */
    bool bv[24];
    for (int i = 0; i < 24; i++)
        bv[i] = (i * 7) % 5 == 0 && i != 10;
    tt_tensor *b = NN(tt_from_data(3, (int64_t[]){2, 3, 4}, TT_BOOL, bv));
    for (int keep = 0; keep < 2; keep++) {
        tt_tensor *d2 = NN(tt_any_dims(b, 2, (int64_t[]){2, 0}, keep));
        tt_tensor *r2 = NN(tt_any_dim(b, 2, keep)), *r1 = NN(tt_any_dim(r2, 0, keep));
        ck_assert_int_eq(tt_ndim(d2), keep ? 3 : 1);
        for (int64_t i = 0; i < 3; i++)
            ck_assert(((const bool *)tt_data(d2))[i] == ((const bool *)tt_data(r1))[i]);
        tt_tensor *all = NN(tt_all_dims(b, 0, NULL, keep)), *ref = NN(tt_all(b));
        ck_assert_int_eq(tt_ndim(all), keep ? 3 : 0);
        ck_assert(((const bool *)tt_data(all))[0] == ((const bool *)tt_data(ref))[0]);
        tt_release(d2), tt_release(r2), tt_release(r1), tt_release(all), tt_release(ref);
    }
    tt_release(b);
    tt_tensor *e = NN(tt_zeros(TT_SHAPE(0, 2), TT_U8));
    a = NN(tt_any(e)), l = NN(tt_all_dim(e, 0, false));
    ck_assert_int_eq(tt_dtype_of(a), TT_U8);
    ck_assert_int_eq(tt_dtype_of(l), TT_U8);
    ck_assert(((const uint8_t *)tt_data(a))[0] == 0 && ((const uint8_t *)tt_data(l))[1] == 1);
    tt_release(a), tt_release(l), tt_release(e);
}
END_TEST

/* ------------------------------------------------------------ shape ops */

static tt_tensor *call_shape(int k, const tt_tensor *x)
{
    static const int64_t rep[4] = {2, 1, 2, 1}, fl[2] = {0, -1}, sh[2] = {1, -2}, rd[2] = {2, 0};
    switch (k) {
    case 0: return tt_repeat(x, 4, rep);
    case 1: return tt_flip(x, 2, fl);
    case 2: return tt_roll(x, 2, sh, 2, rd);
    case 3: return tt_roll(x, 1, (const int64_t[]){5}, 0, NULL);
    case 4: return tt_tril(x, -1);
    default: return tt_triu(x, 1);
    }
}

static tt_status f_shape(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    out[0] = call_shape((int)(intptr_t)ud, in[0]);
    return out[0] ? TT_OK : tt_errcode();
}

/* Each derivative (flip back, roll back, the same triangle, repeat's sum
 * over the copies) against finite differences, on a transposed input. */
START_TEST(test_shape_gradcheck)
{
    for (int k = 0; k < 6; k++) {
        tt_tensor *b = NN(tt_randn(TT_SHAPE(2, 4, 3), TT_F64));
        tt_tensor *x = NN(tt_transpose(b, 1, 2));
        OK(tt_set_requires_grad(x, true));
        tt_status st = tt_gradcheck(f_shape, 1, &x, 1, NULL, (void *)(intptr_t)k);
        ck_assert_msg(st == TT_OK, "shape op %d: %s", k, tt_errmsg());
        tt_release(x), tt_release(b);
    }
}
END_TEST

/* Values on a small example, against the definitions. */
START_TEST(test_shape_values)
{
    int64_t v[6] = {1, 2, 3, 4, 5, 6};
    tt_tensor *x = NN(tt_from_data(2, (int64_t[]){2, 3}, TT_I64, v));
    tt_tensor *r = NN(tt_roll(x, 1, (const int64_t[]){1}, 0, NULL));
    tt_tensor *f = NN(tt_flip(x, 1, (const int64_t[]){1}));
    tt_tensor *t = NN(tt_triu(x, 1)), *p = NN(tt_repeat(x, 2, (const int64_t[]){1, 2}));
    static const int64_t wr[6] = {6, 1, 2, 3, 4, 5}, wf[6] = {3, 2, 1, 6, 5, 4},
                         wt[6] = {0, 2, 3, 0, 0, 6};
    for (int i = 0; i < 6; i++) {
        ck_assert_int_eq(((const int64_t *)tt_data(r))[i], wr[i]);
        ck_assert_int_eq(((const int64_t *)tt_data(f))[i], wf[i]);
        ck_assert_int_eq(((const int64_t *)tt_data(t))[i], wt[i]);
    }
    ck_assert_int_eq(tt_sizes(p)[1], 6);
    ck_assert_int_eq(((const int64_t *)tt_data(p))[4], 2);
    tt_tensor *s = NN(tt_scalar_tensor(2.5, TT_F64)), *fl = NN(tt_full_like(x, 7));
    ck_assert_int_eq(tt_ndim(s), 0);
    ck_assert(at(s, 0) == 2.5);
    ck_assert_int_eq(tt_dtype_of(fl), TT_I64);
    ck_assert(at(fl, 5) == 7);
    tt_release(s), tt_release(fl);
    tt_release(r), tt_release(f), tt_release(t), tt_release(p), tt_release(x);
}
END_TEST

/* ---------------------------------------------------------------- errors */

static tt_tensor *X, *XI, *X2;

static void errors_setup(void)
{
    tt_test_setup();
    X = NN(tt_zeros(TT_SHAPE(2, 3), TT_F32));
    XI = NN(tt_zeros(TT_SHAPE(2, 3), TT_I64));
    X2 = NN(tt_zeros(TT_SHAPE(2), TT_F64));
}

static void errors_teardown(void)
{
    tt_tensor **all[] = {&X, &XI, &X2};
    for (int i = 0; i < TT_TABLE_LEN(all); i++) {
        tt_release(*all[i]);
        *all[i] = NULL;
    }
    tt_test_teardown();
}

#define MORE_ERRORS(X_)                                                                        \
    X_(bitwise_and_float, tt_bitwise_and(X, XI), TT_EDTYPE,                                    \
       "tt::bitwise_and: argument 'self' (#1): bitwise operations are not supported "   \
       "for f32; expects integer or bool tensors")                                             \
    X_(bitwise_or_float_other, tt_bitwise_or(XI, X), TT_EDTYPE,                                \
       "tt::bitwise_or: argument 'other' (#2): bitwise operations are not supported "   \
       "for f32")                                                                              \
    X_(bitwise_xor_scalar_float, tt_bitwise_xor_scalar(X, 3), TT_EDTYPE,                       \
       "tt::bitwise_xor: argument 'self' (#1)", "not supported for f32")                \
    X_(bitwise_not_float, tt_bitwise_not(X2), TT_EDTYPE,                                       \
       "tt::bitwise_not: argument 'self' (#1): bitwise operations are not supported for f64; " \
       "expects integer or bool tensors")                                                      \
    X_(maximum_shapes, tt_maximum(X, X2), TT_ESHAPE, "tt::maximum: argument", "broadcast")    \
    X_(logical_and_shapes, tt_logical_and(XI, X2), TT_ESHAPE, "tt::logical_and: argument",     \
       "broadcast")                                                                            \
    X_(var_int, tt_var(XI, 0, NULL, 1, false), TT_EDTYPE,                                      \
       "tt::var: argument 'self' (#1): std and var only support floating point "    \
       "dtypes, got i64")                                                                      \
    X_(std_dim_range, tt_std(X, 1, (int64_t[]){2}, 1, false), TT_EINVAL,                      \
       "tt::std: argument 'dim' (#2)")                                              \
    X_(var_dim_twice, tt_var(X, 2, (int64_t[]){1, -1}, 1, false), TT_EINVAL,                  \
       "tt::var: argument 'dim' (#2): dim 1 appears multiple times")                \
    X_(var_dims_null, tt_var(X, 2, NULL, 1, false), TT_EINVAL,                                 \
       "tt::var: argument 'dim' (#2): expects 2 dims, got NULL")                    \
    X_(any_dim_range, tt_any_dim(X, -3, false), TT_EINVAL, "tt::any: argument 'dim' (#2)")     \
    X_(any_dims_twice, tt_any_dims(X, 2, (int64_t[]){1, -1}, false), TT_EINVAL,                \
       "tt::any: argument 'dim' (#2): dim 1 appears multiple times")                \
    X_(all_dims_range, tt_all_dims(X, 1, (int64_t[]){2}, false), TT_EINVAL,                    \
       "tt::all: argument 'dim' (#2)")                                                         \
    X_(any_dims_null, tt_any_dims(X, 1, NULL, false), TT_EINVAL,                               \
       "tt::any: argument 'dim' (#2): expects 1 dims, got NULL")                    \
    X_(roll_mismatch, tt_roll(X, 2, (int64_t[]){1, 2}, 1, (int64_t[]){0}), TT_EINVAL,         \
       "tt::roll: argument 'dims' (#3): shifts and dimensions must align (2 shifts, 1 dims)")  \
    X_(roll_flat_shifts, tt_roll(X, 2, (int64_t[]){1, 2}, 0, NULL), TT_EINVAL,                 \
       "tt::roll: argument 'shifts' (#2): with no dims (a roll of the flattened tensor) "       \
       "expects one shift, got 2")                                                             \
    X_(repeat_few, tt_repeat(X, 1, (int64_t[]){2}), TT_EINVAL,                                 \
       "tt::repeat: argument 'repeats' (#2): the number of repeat dims (1) can not be "        \
       "smaller than the number of dimensions of the tensor (2)")                              \
    X_(repeat_negative, tt_repeat(X, 2, (int64_t[]){2, -1}), TT_EINVAL,                       \
       "tt::repeat: argument 'repeats' (#2): repeats can not be negative (got -1 at 1)")       \
    X_(flip_twice, tt_flip(X, 2, (int64_t[]){0, -2}), TT_EINVAL,                               \
       "tt::flip: argument 'dims' (#2): dim 0 appears multiple times in the list of dims")     \
    X_(tril_1d, tt_tril(X2, 0), TT_ESHAPE,                                                     \
       "tt::tril: argument 'self' (#1): input tensor must have at least 2 dimensions (got 1)") \
    X_(triu_1d, tt_triu(X2, 0), TT_ESHAPE, "tt::triu: argument 'self' (#1)")
TT_ERROR_TABLE(MORE_ERRORS, more_errors);

/* F25: repeat's gradient of a 5-d input with every dim repeated (its
 * backward viewed 10 dims at once, past tt's 8); each element of x is
 * copied 2 * 1 * 1 * 2 * 2 = 8 times. And a tensor-valued gradient. */
START_TEST(test_repeat_grad_many_dims)
{
    tt_tensor *x = NN(tt_ones(TT_SHAPE(2, 3, 1, 2), TT_F32));
    OK(tt_set_requires_grad(x, true));
    tt_tensor *y = NN(tt_repeat(x, 5, (const int64_t[]){2, 1, 1, 2, 2}));
    tt_tensor *s = NN(tt_sum_all(y));
    OK(tt_backward(s, NULL));
    tt_tensor *g = NN(tt_get_grad(x)), *want = NN(tt_full(TT_SHAPE(2, 3, 1, 2), 8, TT_F32));
    tt_test_assert_same_bits(g, want, "grad of repeat");
    tt_release(g), tt_release(want), tt_release(s), tt_release(y);
    tt_release(x);
}
END_TEST

START_TEST(test_errors)
{
    tt_test_run_error_case(&more_errors[_i], _i);
}
END_TEST

/* atan2.out writes atan2's values into out (converted to out's dtype),
 * out may be self; a wrong shape, a dtype the result does not cast to, a
 * partial overlap and an input that requires grad are refused, out
 * unchanged. */
static tt_status f_atan2_out(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_status st = tt_atan2_out(in[2], in[0], in[1]);
    out[0] = st ? NULL : tt_mul_scalar(in[2], 2);
    return st ? st : tt_errcode();
}

START_TEST(test_atan2_out)
{
    float y[6] = {1, -2, 0.5f, 0, -0.25f, 3}, x[3] = {2, -1, 0};
    tt_tensor *a = tt_from_data(TT_SHAPE(2, 3), TT_F32, y), *b = tt_from_data(TT_SHAPE(3), TT_F32, x);
    tt_tensor *want = NN(tt_atan2(a, b));
    tt_tensor *o64 = NN(tt_zeros(TT_SHAPE(2, 3), TT_F64));
    OK(tt_atan2_out(o64, a, b));
    ck_assert_int_eq(tt_dtype_of(o64), TT_F64);
    tt_test_assert_close(o64, want, 0, "atan2.out into f64");
    ck_assert_uint_eq(tt_version(o64), 1);
    /* out is self */
    tt_tensor *s = NN(tt_clone(a));
    OK(tt_atan2_out(s, s, b));
    tt_test_assert_close(s, want, 0, "atan2.out into self");

    tt_tensor *o3 = NN(tt_zeros(TT_SHAPE(3), TT_F32)), *oi = NN(tt_zeros(TT_SHAPE(2, 3), TT_I64));
    ck_assert_int_eq(tt_atan2_out(o3, a, b), TT_ESHAPE);
    ck_assert_error(TT_ESHAPE, "tt::atan2.out: argument 'out' (#3): expected the broadcast shape "
                               "[2, 3], got [3] (tt does not resize an out tensor)");
    ck_assert_int_eq(tt_atan2_out(oi, a, b), TT_EDTYPE);
    ck_assert_error(TT_EDTYPE, "tt::atan2.out: argument 'out' (#3): result type f32 can't be "
                               "cast to the desired output type i64");
    tt_tensor *row = NN(tt_select(s, 0, 1));
    tt_tensor *flat = NN(tt_reshape(s, TT_SHAPE(6))), *shifted = NN(tt_narrow(flat, 0, 1, 3));
    ck_assert_int_eq(tt_atan2_out(shifted, row, b), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt::atan2.out: unsupported operation: some elements of the input "
                               "tensor and the written-to tensor refer to a single memory location");
    tt_tensor *g = NN(tt_clone(b));
    OK(tt_set_requires_grad(g, true));
    tt_tensor *o = NN(tt_zeros(TT_SHAPE(2, 3), TT_F32));
    ck_assert_int_eq(tt_atan2_out(o, a, g), TT_EAUTOGRAD);
    ck_assert_error(TT_EAUTOGRAD, "tt::atan2.out: argument 'other' requires grad, but the op is "
                                  "not differentiable");
    ck_assert_uint_eq(tt_version(o), 0);
    tt_clear_error();

    /* Traced and compiled: the write into the input out lands, as eager. */
    tt_compiled *c = NN(tt_compile(f_atan2_out, 3, 1,
                                   &(tt_trace_opts){.mode = TT_TRACE_SYMBOLIC, .fullgraph = true}));
    for (int k = 0; k < 2; k++) {
        tt_tensor *oc = NN(tt_zeros(TT_SHAPE(2, 3), TT_F32)), *r;
        OK(tt_compiled_call(c, (tt_tensor *[]){a, b, oc}, &r));
        tt_test_assert_close(oc, want, 0, "compiled atan2.out: out");
        tt_tensor *w2 = NN(tt_mul_scalar(want, 2));
        tt_test_assert_close(r, w2, 0, "compiled atan2.out: result");
        tt_release(w2), tt_release(r), tt_release(oc);
    }
    tt_compiled_free(c);
    tt_release(o), tt_release(g), tt_release(shifted), tt_release(flat), tt_release(row);
    tt_release(oi);
    tt_release(o3), tt_release(s), tt_release(o64), tt_release(want), tt_release(b), tt_release(a);
}
END_TEST

static Suite *more_suite(void)
{
    Suite *s = suite_create("ops_more");
    TCase *tc = tt_tcase("pointwise");
    tcase_add_test(tc, test_atan2_out);
    tcase_add_test(tc, test_minmax_special);
    tcase_add_test(tc, test_minmax_integers);
    tcase_add_test(tc, test_minmax_gradcheck);
    tcase_add_test(tc, test_minmax_ties);
    tcase_add_test(tc, test_predicates_and_logical);
    tcase_add_test(tc, test_bitwise_values);
    tcase_add_test(tc, test_chain_traced_and_compiled);
    tcase_add_test(tc, test_fake_metadata);
    suite_add_tcase(s, tc);
    tc = tt_tcase("statistics");
    tcase_add_test(tc, test_var_std_gradcheck);
    tcase_add_test(tc, test_var_accuracy);
    tcase_add_test(tc, test_var_grad_symbolic_compiled);
    tcase_add_test(tc, test_any_all);
    suite_add_tcase(s, tc);
    tc = tt_tcase("shapes");
    tcase_add_test(tc, test_shape_gradcheck);
    tcase_add_test(tc, test_shape_values);
    tcase_add_test(tc, test_repeat_grad_many_dims);
    suite_add_tcase(s, tc);
    tc = tt_tcase_with("errors", errors_setup, errors_teardown);
    tcase_add_loop_test(tc, test_errors, 0, TT_TABLE_LEN(more_errors));
    suite_add_tcase(s, tc);
    return s;
}

TT_TEST_MAIN(more_suite)
