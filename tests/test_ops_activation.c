/* The CNN activations (leaky_relu, elu, hardtanh, hardswish, hardsigmoid,
 * softplus, their backward ops), the losses (nll_loss, mse_loss,
 * smooth_l1_loss, binary_cross_entropy_with_logits) and tt::sgd_step.
 * What the differential
 * file (tests/data/torch_ref.txt) cannot say: each activation against an
 * f64 formula written here, over NaN, +-inf, +-0 and the kinks; each
 * derivative by tt_gradcheck; the fake path's metadata; a compiled
 * training step (activation, backward, SGD with momentum) equal to eager
 * step after step, the step tensor read anew on each replay; and every
 * error by status and text. Each test ends with zero live tensors (the
 * fixture checks). */
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

static tt_tensor *f64_of(int n, const double *v)
{
    return NN(tt_from_data(1, (int64_t[]){n}, TT_F64, v));
}

static tt_tensor *randn(int nd, const int64_t *sizes, tt_dtype dt)
{
    return NN(tt_randn(nd, sizes, dt));
}

/* ------------------------------------------------------------ activations */

typedef enum { A_LEAKY, A_ELU, A_HARDTANH, A_HARDSWISH, A_HARDSIGMOID, A_SOFTPLUS, A_COUNT } act;
static const char *const act_names[A_COUNT] = {"leaky_relu", "elu", "hardtanh", "hardswish",
                                               "hardsigmoid", "softplus"};

/* Each activation through its wrapper, with parameters that are not the
 * defaults (so a dropped parameter shows). */
static tt_tensor *call_act(act a, const tt_tensor *x)
{
    switch (a) {
    case A_LEAKY: return tt_leaky_relu(x, 0.2);
    case A_ELU: return tt_elu(x, 0.7);
    case A_HARDTANH: return tt_hardtanh(x, -0.5, 2);
    case A_HARDSWISH: return tt_hardswish(x);
    case A_HARDSIGMOID: return tt_hardsigmoid(x);
    default: return tt_softplus(x, 2, 3);
    }
}

/* The same maps in f64, from their definitions (not the kernels'). */
static double ref_act(act a, double x)
{
    switch (a) {
    case A_LEAKY: return x > 0 ? x : 0.2 * x;
    case A_ELU: return x > 0 ? x : 0.7 * (exp(x) - 1);
    case A_HARDTANH: return isnan(x) ? x : x < -0.5 ? -0.5 : x > 2 ? 2 : x;
    case A_HARDSWISH: /* -inf * 0: NaN, as PyTorch's */
        return isnan(x) ? x : x * (x + 3 < 0 ? 0 : x + 3 > 6 ? 6 : x + 3) / 6;
    case A_HARDSIGMOID: return isnan(x) ? x : x <= -3 ? 0 : x >= 3 ? 1 : (x + 3) / 6;
    default: return 2 * x > 3 ? x : log1p(exp(2 * x)) / 2;
    }
}

static const double special[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0, 1e-300, -1e-300,
                                 -3, 3, -3.0000001, 2.9999999, -0.5, 2, 1.5, 1.4999, 1.5001,
                                 -1, 1, 0.25, -7.5, 40, -40, 100, -100};
enum { NSPECIAL = sizeof special / sizeof special[0] };

/* Every activation against its f64 definition, in f64 and f32, on the
 * special values; the fake call gives the real output's metadata. */
START_TEST(test_activation_values)
{
    char what[96];
    for (int a = 0; a < A_COUNT; a++)
        for (int di = 0; di < 2; di++) {
            tt_dtype dt = di ? TT_F32 : TT_F64;
            tt_tensor *x64 = f64_of(NSPECIAL, special), *x = NN(tt_to_dtype(x64, dt));
            tt_tensor *y = call_act((act)a, x);
            snprintf(what, sizeof what, "%s %s", act_names[a], tt_dtype_name(dt));
            ck_assert_msg(y != NULL, "%s: %s", what, tt_errmsg());
            ck_assert_int_eq(tt_dtype_of(y), dt);
            double *xv = tt_test_values(x), *yv = tt_test_values(y);
            double tol = dt == TT_F32 ? 1e-6 : 1e-15;
            for (int i = 0; i < NSPECIAL; i++) {
                double want = ref_act((act)a, xv[i]);
                if (isnan(want) || isinf(want))
                    CHECK(isnan(want) ? isnan(yv[i]) : yv[i] == want,
                          "%s(%g) = %g, expected %g", what, xv[i], yv[i], want);
                else
                    CHECK(fabs(yv[i] - want) <= tol * (1 + fabs(want)),
                          "%s(%.17g) = %.17g, expected %.17g", what, xv[i], yv[i], want);
            }
            tt_tensor *fx = NN(tt_fake_like(x)), *fy = NN(call_act((act)a, fx));
            tt_test_assert_fake_meta(fy, y, what);
            free(xv);
            free(yv);
            tt_release(fy);
            tt_release(fx);
            tt_release(y);
            tt_release(x);
            tt_release(x64);
        }
}
END_TEST

/* A transposed input gives a transposed result (PyTorch's elementwise
 * output strides) with the same values as the contiguous one. */
START_TEST(test_activation_layouts)
{
    for (int a = 0; a < A_COUNT; a++) {
        tt_tensor *base = randn(TT_SHAPE(5, 7), TT_F32), *xt = NN(tt_t(base));
        tt_tensor *xc = NN(tt_contiguous(xt));
        tt_tensor *yt = NN(call_act((act)a, xt)), *yc = NN(call_act((act)a, xc));
        ck_assert_int_eq(tt_strides(yt)[0], 1);
        ck_assert_int_eq(tt_strides(yt)[1], 7);
        tt_tensor *ytc = NN(tt_contiguous(yt));
        tt_test_assert_same_bits(ytc, yc, act_names[a]);
        tt_release(ytc);
        tt_release(yc);
        tt_release(yt);
        tt_release(xc);
        tt_release(xt);
        tt_release(base);
    }
}
END_TEST

/* hardtanh is a clamp and takes integers, as PyTorch's: bounds that are
 * not whole truncate toward zero in the integer result. */
START_TEST(test_hardtanh_integers)
{
    static const int64_t v[] = {-5, -1, 0, 1, 2, 7};
    tt_tensor *x = NN(tt_from_data(1, (int64_t[]){6}, TT_I64, v));
    tt_tensor *y = NN(tt_hardtanh(x, -2, 3)), *z = NN(tt_hardtanh(x, -0.5, 1.5));
    ck_assert_int_eq(tt_dtype_of(y), TT_I64);
    const int64_t *yv = tt_data(y), *zv = tt_data(z);
    static const int64_t wy[] = {-2, -1, 0, 1, 2, 3}, wz[] = {0, 0, 0, 1, 1, 1};
    for (int i = 0; i < 6; i++) {
        ck_assert_int_eq(yv[i], wy[i]);
        ck_assert_int_eq(zv[i], wz[i]);
    }
    tt_release(z);
    tt_release(y);
    tt_release(x);
}
END_TEST

static tt_status f_act(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    out[0] = call_act((act)(intptr_t)ud, in[0]);
    return out[0] ? TT_OK : tt_errcode();
}

/* Each derivative (the backward op) against finite differences, on values
 * away from the kinks, where the derivative is defined. */
START_TEST(test_activation_gradcheck)
{
    static const double v[] = {-4.1, -2.9, -1.3, -0.7, -0.2, 0.3, 0.9, 1.6, 2.4, 3.3, 5.2, 1.1};
    for (int a = 0; a < A_COUNT; a++) {
        tt_tensor *x = NN(tt_from_data(2, (int64_t[]){3, 4}, TT_F64, v));
        OK(tt_set_requires_grad(x, true));
        tt_status st = tt_gradcheck(f_act, 1, &x, 1, NULL, (void *)(intptr_t)a);
        ck_assert_msg(st == TT_OK, "%s: %s", act_names[a], tt_errmsg());
        tt_release(x);
    }
}
END_TEST

/* y = act(x), then dy/dx with the gradient of sum(y * x) (a gradient
 * that is not all ones): what a traced training step records. */
static tt_status f_act_grad(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    tt_scope_begin();
    tt_tensor *y = call_act((act)(intptr_t)ud, in[0]);
    tt_tensor *g = NULL;
    tt_status st = y ? tt_grad(1, &y, &in[1], 1, &in[0], &g) : tt_errcode();
    out[0] = st ? NULL : tt_keep(y);
    out[1] = st ? NULL : tt_keep(g);
    tt_scope_end();
    return st;
}

/* The derivative is one node, PyTorch's backward op; traced (fake) and
 * compiled (replayed twice on new values), forward and gradient equal
 * eager's bit for bit. */
START_TEST(test_activation_traced_and_compiled)
{
    static const char *const bw[A_COUNT] = {
        "tt::leaky_relu_backward", "tt::elu_backward", "tt::hardtanh_backward",
        "tt::hardswish_backward", "tt::hardsigmoid_backward", "tt::softplus_backward"};
    char what[96];
    for (int a = 0; a < A_COUNT; a++) {
        void *ud = (void *)(intptr_t)a;
        tt_tensor *in[2] = {randn(TT_SHAPE(4, 6), TT_F32), randn(TT_SHAPE(4, 6), TT_F32)};
        OK(tt_set_requires_grad(in[0], true));
        tt_graph *g = NN(tt_trace(f_act_grad, 2, in,
                                  &(tt_trace_opts){.mode = TT_TRACE_FAKE, .nout = 2, .ud = ud}));
        ck_assert_msg(tt_graph_count_op(g, bw[a]) == 1, "%s: %d %s nodes",
                      act_names[a], tt_graph_count_op(g, bw[a]), bw[a]);
        tt_graph_free(g);
        tt_compiled *c = NN(tt_compile(
            f_act_grad, 2, 2, &(tt_trace_opts){.nout = 2, .ud = ud, .ud_constant = true}));
        for (int k = 0; k < 3; k++) {
            if (k) {
                for (int i = 0; i < 2; i++)
                    tt_release(in[i]);
                in[0] = randn(TT_SHAPE(4, 6), TT_F32), in[1] = randn(TT_SHAPE(4, 6), TT_F32);
                OK(tt_set_requires_grad(in[0], true));
            }
            tt_tensor *got[2], *want[2];
            OK(tt_compiled_call(c, in, got));
            OK(f_act_grad(in, 2, want, 2, ud));
            for (int i = 0; i < 2; i++) {
                snprintf(what, sizeof what, "%s call %d output %d", act_names[a], k, i);
                ck_assert_msg(tt_numel(got[i]) == 24 && tt_numel(want[i]) == 24,
                              "%s: %lld compiled, %lld eager elements", what,
                              (long long)tt_numel(got[i]), (long long)tt_numel(want[i]));
                tt_test_assert_same_bits(got[i], want[i], what);
                tt_release(got[i]);
                tt_release(want[i]);
            }
        }
        tt_compiled_free(c);
        for (int i = 0; i < 2; i++)
            tt_release(in[i]);
    }
}
END_TEST

static tt_status f_hard_chain(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_scope_begin();
    tt_tensor *h = tt_hardsigmoid(tt_hardswish(tt_mul(in[0], in[0])));
    h = tt_hardtanh(tt_leaky_relu(tt_sub_scalar(h, 0.5), 0.2), -0.05, 0.3);
    out[0] = tt_keep(tt_softplus(tt_elu(h, 0.7), 2, 0.5));
    tt_scope_end();
    return out[0] ? TT_OK : tt_errcode();
}

/* Every forward activation has its formula in ops/pointwise_ops.h: a
 * compiled chain of them makes one fused step, parameters included
 * (tests/test_fusion.c checks each against eager bit for bit on special
 * values). */
START_TEST(test_activation_chain_fuses)
{
    tt_tensor *x = randn(TT_SHAPE(64), TT_F32), *got, *want;
    tt_compiled *c = NN(tt_compile(f_hard_chain, 1, 1, NULL));
    OK(tt_compiled_call(c, &x, &got));
    tt_compile_stats st;
    tt_compiled_stats(c, &st);
    ck_assert_int_eq(st.fused_steps, 1);
    ck_assert_int_eq(st.fused_ops, 8);
    OK(f_hard_chain(&x, 1, &want, 1, NULL));
    tt_test_assert_same_bits(got, want, "the chain of activations");
    tt_release(got);
    tt_release(want);
    tt_compiled_free(c);
    tt_release(x);
}
END_TEST

/* The backward ops on their own: PyTorch's formulas, including elu's
 * is_result form (from the result) and leaky_relu's self_is_result;
 * hardswish's at x = 3 is grad (PyTorch's vectorized kernel; its scalar
 * tail gives 1.5 grad there), at -3 the formula's -grad / 2. */
START_TEST(test_backward_ops)
{
    static const double xs[] = {-4, -3, -1, -0.5, 0, 0.5, 2, 3, 4};
    enum { N = sizeof xs / sizeof xs[0] };
    tt_tensor *x = f64_of(N, xs), *g = NN(tt_full(TT_SHAPE(N), 2.0, TT_F64));
    const tt_op *op;
    struct {
        const char *name;
        tt_value args[6];
        int nargs;
        double want[N];
    } rows[] = {
        {"tt::leaky_relu_backward", {tt_v_tensor(g), tt_v_tensor(x), tt_v_float(0.1),
                                     tt_v_bool(false)}, 4,
         {0.2, 0.2, 0.2, 0.2, 0.2, 2, 2, 2, 2}},
        {"tt::hardtanh_backward", {tt_v_tensor(g), tt_v_tensor(x), tt_v_int(-1), tt_v_int(3)}, 4,
         {0, 0, 0, 2, 2, 2, 2, 0, 0}},
        {"tt::hardswish_backward", {tt_v_tensor(g), tt_v_tensor(x)}, 2,
         {0, -1, 2 * (-1 / 3.0 + 0.5), 2 * (-0.5 / 3 + 0.5), 1, 2 * (0.5 / 3 + 0.5),
          2 * (2 / 3.0 + 0.5), 2, 2}},
        {"tt::hardsigmoid_backward", {tt_v_tensor(g), tt_v_tensor(x)}, 2,
         {0, 0, 2 / 6.0, 2 / 6.0, 2 / 6.0, 2 / 6.0, 2 / 6.0, 0, 0}},
        /* elu from the result y = alpha (exp(x) - 1) <= 0: g (y + alpha) */
        {"tt::elu_backward", {tt_v_tensor(g), tt_v_float(0.5), tt_v_int(1), tt_v_int(1),
                              tt_v_bool(true), tt_v_tensor(x)}, 6,
         {2 * (-4 + 0.5), 2 * (-3 + 0.5), 2 * (-1 + 0.5), 0, 2 * 0.5, 2, 2, 2, 2}},
    };
    for (int r = 0; r < TT_TABLE_LEN(rows); r++) {
        op = NN(tt_op_find(rows[r].name));
        tt_tensor *y = tt_op_call1(op, rows[r].args, rows[r].nargs);
        ck_assert_msg(y != NULL, "%s: %s", rows[r].name, tt_errmsg());
        double *v = tt_test_values(y);
        for (int i = 0; i < N; i++)
            CHECK(fabs(v[i] - rows[r].want[i]) < 1e-15, "%s at x = %g: %.17g, expected %.17g",
                  rows[r].name, xs[i], v[i], rows[r].want[i]);
        free(v);
        tt_release(y);
    }
    tt_release(g);
    tt_release(x);
}
END_TEST

/* ------------------------------------------------------------------- SGD */

/* torch.optim.SGD's update, in f64, from its definition. */
static void ref_sgd(double *p, const double *g, double *buf, int n, const tt_sgd_opts *o,
                    int step)
{
    for (int i = 0; i < n; i++) {
        double d = o->maximize ? -g[i] : g[i];
        d += o->weight_decay * p[i];
        if (o->momentum != 0) {
            buf[i] = step == 1 ? d : o->momentum * buf[i] + (1 - o->dampening) * d;
            d = o->nesterov ? d + o->momentum * buf[i] : buf[i];
        }
        p[i] -= o->lr * d;
    }
}

static const tt_sgd_opts sgd_cases[] = {
    {.lr = 0.1},
    {.lr = 0.05, .weight_decay = 0.01},
    {.lr = 0.1, .momentum = 0.9},
    {.lr = 0.1, .momentum = 0.9, .dampening = 0.3, .weight_decay = 0.02},
    {.lr = 0.01, .momentum = 0.8, .nesterov = true, .weight_decay = 0.1},
    {.lr = 0.02, .momentum = 0.5, .maximize = true},
};

/* Four steps of each configuration, f64 and f32, on a transposed
 * parameter (the update runs over any strides), against the f64
 * reference; the buffer's first values never count (step 1 sets it). */
START_TEST(test_sgd_matches_reference)
{
    char what[96];
    for (int ci = 0; ci < TT_TABLE_LEN(sgd_cases); ci++)
        for (int di = 0; di < 2; di++) {
            const tt_sgd_opts *o = &sgd_cases[ci];
            tt_dtype dt = di ? TT_F32 : TT_F64;
            tt_tensor *pb = randn(TT_SHAPE(3, 5), dt), *p = NN(tt_t(pb));
            tt_tensor *buf = o->momentum != 0 ? NN(tt_full(TT_SHAPE(5, 3), 123.0, dt)) : NULL;
            tt_tensor *step = NN(tt_scalar(1, TT_F32));
            double *pr = tt_test_values(p), *br = calloc(15, sizeof(double));
            for (int k = 1; k <= 4; k++) {
                tt_tensor *g = randn(TT_SHAPE(5, 3), dt);
                double *gv = tt_test_values(g);
                OK(tt_fill_(step, k));
                OK(tt_sgd_(p, g, buf, step, o));
                ref_sgd(pr, gv, br, 15, o, k);
                double *pv = tt_test_values(p);
                snprintf(what, sizeof what, "case %d %s step %d", ci, tt_dtype_name(dt), k);
                for (int i = 0; i < 15; i++)
                    CHECK(fabs(pv[i] - pr[i]) <= (dt == TT_F32 ? 1e-5 : 1e-14) * (1 + fabs(pr[i])),
                          "%s: param[%d] = %.17g, expected %.17g", what, i, pv[i], pr[i]);
                if (buf) {
                    double *bv = tt_test_values(buf);
                    for (int i = 0; i < 15; i++)
                        CHECK(fabs(bv[i] - br[i]) <=
                                  (dt == TT_F32 ? 1e-5 : 1e-14) * (1 + fabs(br[i])),
                              "%s: buf[%d] = %.17g, expected %.17g", what, i, bv[i], br[i]);
                    free(bv);
                }
                free(pv);
                free(gv);
                tt_release(g);
            }
            free(pr);
            free(br);
            tt_release(step);
            tt_release(buf);
            tt_release(p);
            tt_release(pb);
        }
}
END_TEST

/* The update bumps the version of what it writes, so a saved tensor it
 * overwrote is caught at backward; fake operands are checked, not written. */
START_TEST(test_sgd_versions_and_fake)
{
    const tt_sgd_opts o = {.lr = 0.1, .momentum = 0.9};
    tt_tensor *p = randn(TT_SHAPE(4), TT_F32), *g = randn(TT_SHAPE(4), TT_F32);
    tt_tensor *b = NN(tt_zeros(TT_SHAPE(4), TT_F32)), *step = NN(tt_scalar(1, TT_F32));
    OK(tt_set_requires_grad(p, true));
    tt_tensor *y = NN(tt_mul(p, p)); /* saves p */
    tt_no_grad_begin();
    OK(tt_sgd_(p, g, b, step, &o));
    tt_no_grad_end();
    tt_tensor *sum = NN(tt_sum_all(y));
    ck_assert_int_ne(tt_backward(sum, NULL), TT_OK);
    ck_assert_error(TT_EAUTOGRAD, "been modified by an in-place operation");
    tt_release(sum);
    tt_release(y);
    tt_tensor *fp = NN(tt_fake_like(p)), *fg = NN(tt_fake_like(g)), *fb = NN(tt_fake_like(b));
    OK(tt_sgd_(fp, fg, fb, step, &o));
    tt_release(fp);
    tt_release(fg);
    tt_release(fb);
    tt_release(step);
    tt_release(b);
    tt_release(g);
    tt_release(p);
}
END_TEST

/* One training step: loss = mean((leaky_relu(x w) - t)^2), backward, SGD
 * with momentum and nesterov under no-grad, the gradient cleared.
 * in: x, t, w, buf, step. */
static tt_status f_train(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    static const tt_sgd_opts o = {.lr = 0.1, .momentum = 0.9, .nesterov = true,
                                  .weight_decay = 0.01};
    tt_scope_begin();
    tt_tensor *h = tt_leaky_relu(tt_mm(in[0], in[2]), 0.1);
    tt_tensor *d = tt_sub(h, in[1]);
    tt_tensor *loss = tt_mean_all(tt_mul(d, d));
    tt_status st = loss ? tt_backward(loss, NULL) : tt_errcode();
    tt_tensor *g = st ? NULL : tt_get_grad(in[2]);
    if (!st && !g)
        st = tt_errcode();
    if (!st) {
        tt_no_grad_begin();
        st = tt_sgd_(in[2], g, in[3], in[4], &o);
        tt_no_grad_end();
    }
    tt_release(g);
    if (!st)
        st = tt_set_grad(in[2], NULL);
    out[0] = st ? NULL : tt_keep(loss);
    tt_scope_end();
    return st;
}

/* Compiled, the training step replays with the step tensor read anew:
 * losses, weights and buffers equal eager's bit for bit over five steps
 * (the first sets the buffer from the gradient, the rest use it). */
START_TEST(test_sgd_compiled_training_step)
{
    tt_tensor *x = randn(TT_SHAPE(8, 4), TT_F32), *t = randn(TT_SHAPE(8, 3), TT_F32);
    tt_tensor *w[2], *buf[2], *step[2];
    tt_tensor *w0 = randn(TT_SHAPE(4, 3), TT_F32);
    for (int k = 0; k < 2; k++) {
        w[k] = NN(tt_clone(w0));
        OK(tt_set_requires_grad(w[k], true));
        buf[k] = NN(tt_zeros(TT_SHAPE(4, 3), TT_F32));
        step[k] = NN(tt_scalar(1, TT_F32));
    }
    tt_compiled *c = NN(tt_compile(f_train, 5, 1, NULL));
    char what[64];
    for (int s = 1; s <= 5; s++) {
        tt_tensor *loss[2];
        for (int k = 0; k < 2; k++) {
            OK(tt_fill_(step[k], s));
            tt_tensor *in[5] = {x, t, w[k], buf[k], step[k]};
            OK(k ? f_train(in, 5, &loss[k], 1, NULL) : tt_compiled_call(c, in, &loss[k]));
        }
        snprintf(what, sizeof what, "step %d loss", s);
        tt_test_assert_same_bits(loss[0], loss[1], what);
        snprintf(what, sizeof what, "step %d weight", s);
        tt_test_assert_same_bits(w[0], w[1], what);
        snprintf(what, sizeof what, "step %d buffer", s);
        tt_test_assert_same_bits(buf[0], buf[1], what);
        tt_release(loss[0]);
        tt_release(loss[1]);
    }
    tt_compile_stats st;
    tt_compiled_stats(c, &st);
    ck_assert_int_eq(st.misses, 1); /* one trace, four replays */
    ck_assert_int_eq(st.hits, 4);
    tt_compiled_free(c);
    for (int k = 0; k < 2; k++) {
        tt_release(w[k]);
        tt_release(buf[k]);
        tt_release(step[k]);
    }
    tt_release(w0);
    tt_release(x);
    tt_release(t);
}
END_TEST

/* ----------------------------------------------------------------- losses */

typedef enum { L_NLL, L_NLL_W, L_NLL_2D, L_NLL_3D, L_MSE, L_SMOOTH, L_BCE, L_BCE_W, L_COUNT } loss;
static const char *const loss_names[L_COUNT] = {"nll", "nll weight ignore", "nll 2d",
                                                "nll 3d", "mse", "smooth_l1", "bce",
                                                "bce weight pos_weight"};

/* in[0] the input (log-probabilities or predictions), in[1] the target,
 * in[2] a weight; ud: the loss and the reduction. */
typedef struct {
    loss l;
    const char *red;
} loss_case;

static tt_status f_loss(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    const loss_case *c = ud;
    switch (c->l) {
    case L_NLL:
    case L_NLL_2D:
    case L_NLL_3D:
        out[0] = tt_nll_loss(in[0], in[1], &(tt_nll_loss_opts){.reduction = c->red});
        break;
    case L_NLL_W:
        out[0] = tt_nll_loss(in[0], in[1], &(tt_nll_loss_opts){
            .reduction = c->red, .weight = in[2], .ignore = true, .ignore_index = 1});
        break;
    case L_MSE: out[0] = tt_mse_loss(in[0], in[1], c->red); break;
    case L_SMOOTH: out[0] = tt_smooth_l1_loss(in[0], in[1], c->red, 0.7); break;
    case L_BCE:
        out[0] = tt_binary_cross_entropy_with_logits(in[0], in[1], NULL, NULL, c->red);
        break;
    default:
        out[0] = tt_binary_cross_entropy_with_logits(in[0], in[1], in[2], in[2], c->red);
        break;
    }
    return out[0] ? TT_OK : tt_errcode();
}

/* Inputs for loss l in dtype dt; in[2] is a positive weight [4]. */
static void loss_inputs(loss l, tt_dtype dt, tt_tensor **in)
{
    static const int64_t cls[] = {2, 0, 1, 3, 1, 2, 0, 3, 1, 1, 2, 0};
    switch (l) {
    case L_NLL:
    case L_NLL_W:
        in[0] = randn(TT_SHAPE(4, 4), dt);
        in[1] = NN(tt_from_data(1, (int64_t[]){4}, TT_I64, cls));
        break;
    case L_NLL_2D:
        in[0] = randn(TT_SHAPE(2, 4, 3, 2), dt);
        in[1] = NN(tt_from_data(3, (int64_t[]){2, 3, 2}, TT_I64, cls));
        break;
    case L_NLL_3D:
        in[0] = randn(TT_SHAPE(2, 4, 3), dt);
        in[1] = NN(tt_from_data(2, (int64_t[]){2, 3}, TT_I64, cls));
        break;
    default: {
        in[0] = randn(TT_SHAPE(3, 4), dt);
        tt_tensor *r = randn(TT_SHAPE(3, 4), dt);
        in[1] = NN(tt_sigmoid(r)); /* in (0, 1), a target for bce too */
        tt_release(r);
        break;
    }
    }
    tt_tensor *u = NN(tt_rand(TT_SHAPE(4), dt));
    in[2] = NN(tt_add_scalar(u, 0.5));
    tt_release(u);
}

static bool loss_is_nll(loss l) { return l <= L_NLL_3D; }

/* Each loss's gradient against finite differences in f64, every
 * reduction; the elementwise ones for the target too. */
START_TEST(test_loss_gradcheck)
{
    static const char *const reds[] = {"none", "mean", "sum"};
    for (int l = 0; l < L_COUNT; l++)
        for (int r = 0; r < 3; r++) {
            tt_tensor *in[3];
            loss_inputs((loss)l, TT_F64, in);
            OK(tt_set_requires_grad(in[0], true));
            if (!loss_is_nll((loss)l))
                OK(tt_set_requires_grad(in[1], true));
            loss_case c = {(loss)l, reds[r]};
            tt_status st = tt_gradcheck(f_loss, 3, in, 1, NULL, &c);
            ck_assert_msg(st == TT_OK, "%s %s: %s", loss_names[l], reds[r], tt_errmsg());
            for (int i = 0; i < 3; i++)
                tt_release(in[i]);
        }
}
END_TEST

/* nll_loss of log_softmax is cross_entropy, for [N, C], [N, C, H, W] and
 * [N, C, d] inputs (the last through the [N, C, 1, -1] view), every
 * reduction, with a weight and an ignored class. */
START_TEST(test_nll_loss_is_cross_entropy)
{
    static const char *const reds[] = {"none", "mean", "sum"};
    char what[64];
    for (int l = L_NLL; l <= L_NLL_3D; l++)
        for (int r = 0; r < 3; r++) {
            tt_tensor *in[3];
            loss_inputs((loss)l, TT_F64, in);
            tt_tensor *lp = NN(tt_log_softmax(in[0], tt_ndim(in[0]) == 1 ? 0 : 1));
            tt_tensor *a = NN(tt_nll_loss(lp, in[1], &(tt_nll_loss_opts){
                .reduction = reds[r], .weight = in[2], .ignore = true, .ignore_index = 1}));
            tt_tensor *b = NN(tt_cross_entropy_ex(in[0], in[1], &(tt_cross_entropy_opts){
                .reduction = reds[r], .weight = in[2], .ignore = true, .ignore_index = 1}));
            snprintf(what, sizeof what, "%s %s", loss_names[l], reds[r]);
            ck_assert_int_eq(tt_ndim(a), tt_ndim(b));
            double *va = tt_test_values(a), *vb = tt_test_values(b);
            for (int64_t i = 0; i < tt_numel(a); i++)
                CHECK(fabs(va[i] - vb[i]) < 1e-12 * (1 + fabs(vb[i])), "%s [%lld]: %.17g vs %.17g",
                      what, (long long)i, va[i], vb[i]);
            free(va);
            free(vb);
            tt_release(a);
            tt_release(b);
            tt_release(lp);
            for (int i = 0; i < 3; i++)
                tt_release(in[i]);
        }
}
END_TEST

/* Every loss and its gradient, compiled in symbolic mode (sizes are
 * symbols) and replayed on two batch sizes, equal eager bit for bit. */
static tt_status f_loss_grad(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nout;
    tt_scope_begin();
    tt_tensor *y;
    tt_status st = f_loss(in, nin, &y, 1, ud);
    tt_tensor *s = st ? NULL : tt_sum_all(y), *g = NULL;
    if (!st)
        st = s ? tt_grad(1, &s, NULL, 1, &in[0], &g) : tt_errcode();
    out[0] = st ? NULL : tt_keep(s);
    out[1] = st ? NULL : tt_keep(g);
    tt_scope_end();
    return st;
}

START_TEST(test_loss_compiled_symbolic)
{
    static const char *const reds[] = {"none", "mean", "sum"};
    char what[96];
    for (int l = 0; l < L_COUNT; l++)
        for (int r = 0; r < 3; r++) {
            loss_case c = {(loss)l, reds[r]};
            tt_compiled *cc = NN(tt_compile(f_loss_grad, 3, 2, &(tt_trace_opts){
                .mode = TT_TRACE_SYMBOLIC, .nout = 2, .ud = &c, .ud_constant = true}));
            for (int k = 0; k < 2; k++) {
                tt_tensor *in[3];
                loss_inputs((loss)l, TT_F32, in);
                if (k) { /* another batch: the first rows of a bigger one */
                    tt_tensor *x = in[0];
                    int64_t sz[TT_MAX_DIMS];
                    for (int d = 0; d < tt_ndim(x); d++)
                        sz[d] = tt_sizes(x)[d];
                    sz[0] += 2;
                    in[0] = randn(tt_ndim(x), sz, TT_F32);
                    tt_release(x);
                    tt_tensor *t = in[1];
                    for (int d = 0; d < tt_ndim(t); d++)
                        sz[d] = tt_sizes(t)[d];
                    sz[0] += 2;
                    in[1] = loss_is_nll((loss)l) ? NN(tt_zeros(tt_ndim(t), sz, TT_I64))
                                                 : NN(tt_rand(tt_ndim(t), sz, TT_F32));
                    tt_release(t);
                }
                OK(tt_set_requires_grad(in[0], true));
                tt_tensor *got[2], *want[2];
                OK(tt_compiled_call(cc, in, got));
                OK(f_loss_grad(in, 3, want, 2, &c));
                for (int i = 0; i < 2; i++) {
                    snprintf(what, sizeof what, "%s %s call %d output %d", loss_names[l],
                             reds[r], k, i);
                    tt_test_assert_same_bits(got[i], want[i], what);
                    tt_release(got[i]);
                    tt_release(want[i]);
                }
                for (int i = 0; i < 3; i++)
                    tt_release(in[i]);
            }
            tt_compile_stats st;
            tt_compiled_stats(cc, &st);
            ck_assert_msg(st.misses == 1, "%s %s: %lld traces", loss_names[l], reds[r],
                          (long long)st.misses);
            tt_compiled_free(cc);
        }
}
END_TEST

/* cross_entropy with class-probability targets: the target's gradient
 * under "mean" divides by the number of positions, which a symbolic trace
 * knows only as a symbol; compiled, it must still equal eager. */
static tt_status f_ce_probs(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_scope_begin();
    tt_tensor *y = tt_cross_entropy_ex(in[0], in[1], NULL), *g = NULL;
    tt_status st = y ? tt_grad(1, &y, NULL, 1, &in[1], &g) : tt_errcode();
    out[0] = st ? NULL : tt_keep(y);
    out[1] = st ? NULL : tt_keep(g);
    tt_scope_end();
    return st;
}

START_TEST(test_cross_entropy_target_grad_symbolic)
{
    tt_compiled *c = NN(tt_compile(f_ce_probs, 2, 2,
                                   &(tt_trace_opts){.mode = TT_TRACE_SYMBOLIC, .nout = 2}));
    for (int k = 0; k < 2; k++) {
        tt_tensor *x = randn(TT_SHAPE(3 + k, 5), TT_F64), *r = randn(TT_SHAPE(3 + k, 5), TT_F64);
        tt_tensor *in[2] = {x, NN(tt_softmax(r, 1))}, *got[2], *want[2];
        OK(tt_set_requires_grad(in[1], true));
        OK(tt_compiled_call(c, in, got));
        OK(f_ce_probs(in, 2, want, 2, NULL));
        tt_test_assert_same_bits(got[0], want[0], "the loss");
        tt_test_assert_same_bits(got[1], want[1], "the target's gradient");
        for (int i = 0; i < 2; i++) {
            tt_release(got[i]);
            tt_release(want[i]);
            tt_release(in[i]);
        }
        tt_release(r);
    }
    tt_compiled_free(c);
}
END_TEST

/* ---------------------------------------------------------------- errors */

static tt_tensor *X, *XI, *XB, *G2, *G3, *P, *STEP, *STEP0, *STEP1D, *TGT2, *TGT3, *TGT9;

static void errors_setup(void)
{
    tt_test_setup();
    X = NN(tt_zeros(TT_SHAPE(2, 3), TT_F32));
    XI = NN(tt_zeros(TT_SHAPE(2, 3), TT_I64));
    XB = NN(tt_zeros(TT_SHAPE(2, 3), TT_BOOL));
    G2 = NN(tt_zeros(TT_SHAPE(2), TT_F32));
    G3 = NN(tt_zeros(TT_SHAPE(3), TT_F64));
    P = NN(tt_zeros(TT_SHAPE(3), TT_F32));
    STEP = NN(tt_scalar(1, TT_F32));
    STEP0 = NN(tt_scalar(0, TT_F32));
    STEP1D = NN(tt_ones(TT_SHAPE(1), TT_F32));
    TGT2 = NN(tt_from_data(1, (int64_t[]){2}, TT_I64, (int64_t[]){0, 2}));
    TGT3 = NN(tt_from_data(1, (int64_t[]){3}, TT_I64, (int64_t[]){0, 2, 1}));
    TGT9 = NN(tt_from_data(1, (int64_t[]){2}, TT_I64, (int64_t[]){0, 9}));
}

static void errors_teardown(void)
{
    tt_tensor **all[] = {&X, &XI, &XB, &G2, &G3, &P, &STEP, &STEP0, &STEP1D, &TGT2, &TGT3, &TGT9};
    for (int i = 0; i < TT_TABLE_LEN(all); i++) {
        tt_release(*all[i]);
        *all[i] = NULL;
    }
    tt_test_teardown();
}

static tt_tensor *backward_op(const char *name, int n, const tt_value *args)
{
    const tt_op *op = tt_op_find(name);
    return op ? tt_op_call1(op, args, n) : NULL;
}

static const tt_sgd_opts sgd_plain = {.lr = 0.1}, sgd_mom = {.lr = 0.1, .momentum = 0.9};

#define ACT_ERRORS(X_)                                                                         \
    X_(leaky_relu_int, tt_leaky_relu(XI, 0.1), TT_EDTYPE,                                      \
       "tt::leaky_relu: argument 'self' (#1): \"leaky_relu_cpu\" not implemented for i64")     \
    X_(elu_int, tt_elu(XI, 1), TT_EDTYPE, "tt::elu: argument 'self' (#1)", "elu_cpu")          \
    X_(hardswish_int, tt_hardswish(XI), TT_EDTYPE, "tt::hardswish", "hardswish_cpu")           \
    X_(hardsigmoid_int, tt_hardsigmoid(XI), TT_EDTYPE, "tt::hardsigmoid", "hardsigmoid_cpu")   \
    X_(softplus_int, tt_softplus(XI, 1, 20), TT_EDTYPE, "tt::softplus", "softplus_cpu")        \
    X_(hardtanh_bool, tt_hardtanh(XB, -1, 1), TT_EDTYPE,                                       \
       "tt::hardtanh: argument 'self' (#1): Bool inputs not supported for hardtanh")           \
    X_(backward_shapes,                                                                        \
       backward_op("tt::hardswish_backward", 2,                                                \
                   (tt_value[]){tt_v_tensor(G2), tt_v_tensor(X)}),                             \
       TT_ESHAPE, "tt::hardswish_backward: argument", "not broadcastable")                     \
    X_(leaky_backward_negative_slope,                                                          \
       backward_op("tt::leaky_relu_backward", 4,                                               \
                   (tt_value[]){tt_v_tensor(X), tt_v_tensor(X), tt_v_float(-0.1),              \
                                tt_v_bool(true)}),                                             \
       TT_EINVAL, "tt::leaky_relu_backward: argument 'negative_slope' (#3)",                   \
       "negative slope (-0.1) which is not supported")                                         \
    X_(hardtanh_backward_int,                                                                  \
       backward_op("tt::hardtanh_backward", 4,                                                 \
                   (tt_value[]){tt_v_tensor(XI), tt_v_tensor(XI), tt_v_int(-1), tt_v_int(1)}), \
       TT_EDTYPE, "tt::hardtanh_backward: argument 'self' (#2): expects floating point")       \
    X_(nll_reduction_name, tt_nll_loss(X, XI, &(tt_nll_loss_opts){.reduction = "avg"}),       \
       TT_EINVAL, "tt_nll_loss: argument 'reduction': expected 'none', 'mean' or 'sum', got "   \
       "'avg'")                                                                                \
    X_(nll_target_dtype, tt_nll_loss(X, P, NULL), TT_EDTYPE,                                   \
       "tt::nll_loss_forward: argument 'target' (#2): expected scalar type i64 (or u8) class "  \
       "indices, got f32")                                                                     \
    X_(nll_target_bounds, tt_nll_loss(X, TGT9, NULL), TT_EINVAL,                               \
       "tt::nll_loss_forward: argument 'target' (#2): Target 9 is out of bounds (expected "     \
       "class indices in [0, 3))")                                                             \
    X_(nll_size, tt_nll_loss(X, TGT3, NULL), TT_ESHAPE,                                        \
       "tt::nll_loss_forward: argument 'target' (#2): size mismatch (got input: [2, 3], "       \
       "target: [3])")                                                                         \
    X_(nll_weight, tt_nll_loss(X, TGT2, &(tt_nll_loss_opts){.weight = G2}), TT_ESHAPE,         \
       "tt::nll_loss_forward: argument 'weight' (#3): weight tensor should be defined either "  \
       "for all 3 classes or no classes but got weight tensor of shape: [2]")                  \
    X_(nll_int_input, tt_nll_loss(XI, TGT2, NULL), TT_EDTYPE,                                  \
       "tt::nll_loss_forward: argument 'self' (#1): \"nll_loss_out_frame\" not implemented "  \
       "for i64")                                                                              \
    X_(mse_int, tt_mse_loss(XI, XI, "mean"), TT_EDTYPE,                                        \
       "tt::mse_loss: argument 'self' (#1): \"mse_cpu\" not implemented for i64")             \
    X_(mse_shapes, tt_mse_loss(X, G2, "sum"), TT_ESHAPE, "tt::mse_loss: argument 'target' (#2)",\
       "not broadcastable")                                                                    \
    X_(mse_reduction, tt_mse_loss(X, X, "max"), TT_EINVAL,                                     \
       "tt_mse_loss: argument 'reduction': expected 'none', 'mean' or 'sum', got 'max'")       \
    X_(mse_reduction_enum,                                                                     \
       backward_op("tt::mse_loss", 3, (tt_value[]){tt_v_tensor(X), tt_v_tensor(X), tt_v_int(3)}),\
       TT_EINVAL, "tt::mse_loss: argument 'reduction' (#3): expected 0 (none), 1 (mean) or 2 "  \
       "(sum), got 3")                                                                         \
    X_(smooth_l1_beta, tt_smooth_l1_loss(X, X, "mean", -1), TT_EINVAL,                         \
       "tt::smooth_l1_loss: argument 'beta': smooth_l1_loss does not support negative values "  \
       "for beta (got -1)")                                                                    \
    X_(bce_size, tt_binary_cross_entropy_with_logits(X, G2, NULL, NULL, "mean"), TT_ESHAPE,    \
       "tt::binary_cross_entropy_with_logits: argument 'target' (#2): Target size [2] must be " \
       "the same as input size [2, 3]")                                                        \
    X_(bce_pos_weight, tt_binary_cross_entropy_with_logits(X, X, NULL, G2, "mean"), TT_ESHAPE, \
       "tt::binary_cross_entropy_with_logits: argument 'pos_weight' (#4)", "not broadcastable") \
    X_(mse_backward_grad,                                                                      \
       backward_op("tt::mse_loss_backward", 4,                                                 \
                   (tt_value[]){tt_v_tensor(G2), tt_v_tensor(X), tt_v_tensor(X), tt_v_int(0)}), \
       TT_ESHAPE, "tt::mse_loss_backward: argument 'grad_output' (#1): expected the loss's "   \
       "shape, got [2]")                                                                       \
    X_(sgd_int_param, tt_sgd_(XI, XI, NULL, STEP, &sgd_plain), TT_EDTYPE,                      \
       "tt::sgd_step: argument 'param' (#1): expected f32 or f64, got i64")                    \
    X_(sgd_grad_dtype, tt_sgd_(P, G3, NULL, STEP, &sgd_plain), TT_EDTYPE,                      \
       "tt::sgd_step: argument 'grad' (#2): expected f32 like 'self', got f64")                \
    X_(sgd_grad_shape, tt_sgd_(P, G2, NULL, STEP, &sgd_plain), TT_ESHAPE,                      \
       "tt::sgd_step: argument 'grad' (#2): expected shape [3], got [2]")                      \
    X_(sgd_buf_shape, tt_sgd_(P, P, G2, STEP, &sgd_mom), TT_ESHAPE,                            \
       "tt::sgd_step: argument 'momentum_buf' (#3): expected shape [3], got [2]")              \
    X_(sgd_no_buf, tt_sgd_(P, P, NULL, STEP, &sgd_mom), TT_EINVAL,                             \
       "tt::sgd_step: argument 'momentum_buf' (#3): expected a buffer of param's shape with "  \
       "momentum 0.9, got None")                                                               \
    X_(sgd_step_dims, tt_sgd_(P, P, NULL, STEP1D, &sgd_plain), TT_ESHAPE,                      \
       "tt::sgd_step: argument 'step' (#4): expected a 0-dim tensor, got 1 dims")              \
    X_(sgd_step_zero, tt_sgd_(P, P, NULL, STEP0, &sgd_plain), TT_EINVAL,                       \
       "tt::sgd_step: argument 'step' (#4): expected a step number >= 1, got 0")               \
    X_(sgd_lr, tt_sgd_(P, P, NULL, STEP, &(tt_sgd_opts){.lr = -1}), TT_EINVAL,                 \
       "tt::sgd_step: argument 'lr' (#5): Invalid learning rate: -1")                          \
    X_(sgd_momentum, tt_sgd_(P, P, P, STEP, &(tt_sgd_opts){.lr = 1, .momentum = -0.5}),        \
       TT_EINVAL, "tt::sgd_step: argument 'momentum' (#6): Invalid momentum value: -0.5")      \
    X_(sgd_weight_decay, tt_sgd_(P, P, NULL, STEP, &(tt_sgd_opts){.lr = 1, .weight_decay = -1}), \
       TT_EINVAL, "tt::sgd_step: argument 'weight_decay' (#8): Invalid weight_decay value: -1") \
    X_(sgd_nesterov_no_momentum,                                                               \
       tt_sgd_(P, P, NULL, STEP, &(tt_sgd_opts){.lr = 1, .nesterov = true}),                   \
       TT_EINVAL, "tt::sgd_step: argument 'nesterov' (#9): Nesterov momentum requires a "      \
       "momentum and zero dampening (got momentum 0, dampening 0)")                            \
    X_(sgd_nesterov_dampening,                                                                 \
       tt_sgd_(P, P, P, STEP, &(tt_sgd_opts){.lr = 1, .momentum = 0.9, .dampening = 0.1,       \
                                             .nesterov = true}),                               \
       TT_EINVAL, "Nesterov momentum requires a momentum and zero dampening (got momentum "    \
       "0.9, dampening 0.1)")                                                                  \
    X_(sgd_null_opts, tt_sgd_(P, P, NULL, STEP, NULL), TT_EINVAL,                              \
       "tt_sgd_: argument 'opts' is NULL")
TT_ERROR_TABLE(ACT_ERRORS, act_errors);

START_TEST(test_errors)
{
    tt_test_run_error_case(&act_errors[_i], _i);
}
END_TEST

static Suite *activation_suite(void)
{
    Suite *s = suite_create("ops_activation");
    TCase *tc = tt_tcase("activations");
    tcase_add_test(tc, test_activation_values);
    tcase_add_test(tc, test_activation_layouts);
    tcase_add_test(tc, test_hardtanh_integers);
    tcase_add_test(tc, test_activation_gradcheck);
    tcase_add_test(tc, test_activation_traced_and_compiled);
    tcase_add_test(tc, test_activation_chain_fuses);
    tcase_add_test(tc, test_backward_ops);
    suite_add_tcase(s, tc);
    tc = tt_tcase("sgd");
    tcase_add_test(tc, test_sgd_matches_reference);
    tcase_add_test(tc, test_sgd_versions_and_fake);
    tcase_add_test(tc, test_sgd_compiled_training_step);
    suite_add_tcase(s, tc);
    tc = tt_tcase("losses");
    tcase_add_test(tc, test_loss_gradcheck);
    tcase_add_test(tc, test_nll_loss_is_cross_entropy);
    tcase_add_test(tc, test_loss_compiled_symbolic);
    tcase_add_test(tc, test_cross_entropy_target_grad_symbolic);
    suite_add_tcase(s, tc);
    tc = tt_tcase_with("errors", errors_setup, errors_teardown);
    tcase_add_loop_test(tc, test_errors, 0, TT_TABLE_LEN(act_errors));
    suite_add_tcase(s, tc);
    return s;
}

TT_TEST_MAIN(activation_suite)
