/* Compiled plans never crash and never change an answer: each program a
 * random-program tester found (one TCase per finding) runs compiled, with
 * every pass on and with each pass off in turn, and eagerly from the same
 * inputs; the outputs and the inputs' final values must agree. Random
 * programs of the same kinds (in-place writes into inputs, intermediates
 * and views, backward through them) check the mechanisms, not only the
 * cases: a program eager refuses must fail compiled alike, with a
 * message. */
#include "tt_test.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

enum { MAXIO = 8 };

/* Same dtype and sizes; elements bit for bit (rtol 0; NaN equals NaN) or
 * within rtol. */
static void assert_agree(const tt_tensor *a, const tt_tensor *b, double rtol, const char *what)
{
    char x[128], y[128];
    ck_assert_msg(a && b, "%s: NULL tensor", what);
    ck_assert_msg(tt_dtype_of(a) == tt_dtype_of(b) && tt_ndim(a) == tt_ndim(b) &&
                      memcmp(tt_sizes(a), tt_sizes(b), sizeof(tt_size) * (size_t)tt_ndim(a)) == 0,
                  "%s: compiled %s, eager %s", what, tt_describe(a, x, sizeof x),
                  tt_describe(b, y, sizeof y));
    double *va = tt_test_values(a), *vb = tt_test_values(b);
    for (int64_t i = 0; i < tt_numel(a); i++) {
        bool ok = rtol == 0 ? memcmp(&va[i], &vb[i], sizeof va[i]) == 0 ||
                                  (isnan(va[i]) && isnan(vb[i]))
                            : va[i] == vb[i] || (isnan(va[i]) && isnan(vb[i])) ||
                                  fabs(va[i] - vb[i]) <= rtol * fmax(fabs(vb[i]), 1e-6);
        ck_assert_msg(ok, "%s: element %lld is %.17g compiled, %.17g eager", what, (long long)i,
                      va[i], vb[i]);
    }
    free(va);
    free(vb);
}

static const unsigned variants[] = {
    0, TT_PASS_FUSE, TT_PASS_EPILOGUE, TT_PASS_INPLACE, TT_PASS_MEMPLAN,
    TT_PASS_FUSE | TT_PASS_EPILOGUE | TT_PASS_INPLACE | TT_PASS_MEMPLAN,
};
enum { NVARIANTS = sizeof variants / sizeof variants[0] };

/* A program: its function, inputs made fresh by `make` (the same values
 * on every call), and a tolerance (0: bit for bit). */
typedef struct {
    const char *name;
    tt_fn fn;
    int nin, nout;
    void (*make)(tt_tensor **in);
    double rtol;
    void *ud;
} program;

static void clone_inputs(tt_tensor **dst, tt_tensor *const *src, int n)
{
    for (int i = 0; i < n; i++) {
        tt_no_grad_begin(); /* a leaf, as src */
        dst[i] = NN(tt_clone(src[i]));
        tt_no_grad_end();
        if (tt_requires_grad(src[i]))
            OK(tt_set_requires_grad(dst[i], true));
    }
}

/* Runs p compiled (passes_off `off`, two calls: the first plans, the
 * second replays) and eagerly, and compares outputs and inputs. */
static void run_program(const program *p, unsigned off)
{
    tt_tensor *init[MAXIO], *ci[MAXIO], *ei[MAXIO], *co[MAXIO], *eo[MAXIO];
    p->make(init);
    tt_compiled *c = NN(tt_compile(p->fn, p->nin, p->nout,
                                   &(tt_trace_opts){.fullgraph = true, .passes_off = off,
                                                    .ud = p->ud}));
    for (int call = 0; call < 2; call++) {
        clone_inputs(ci, init, p->nin);
        clone_inputs(ei, init, p->nin);
        tt_status st = tt_compiled_call(c, ci, co);
        ck_assert_msg(st == TT_OK, "%s (passes_off %#x, call %d): compiled call failed: %s: %s",
                      p->name, off, call, tt_status_name(st), tt_errmsg());
        OK(p->fn(ei, p->nin, eo, p->nout, p->ud));
        char what[800];
        for (int k = 0; k < p->nout; k++) {
            snprintf(what, sizeof what, "%s (passes_off %#x, call %d): output %d", p->name,
                     off, call, k);
            assert_agree(co[k], eo[k], p->rtol, what);
            co[k] = tt_release(co[k]);
            eo[k] = tt_release(eo[k]);
        }
        for (int i = 0; i < p->nin; i++) {
            snprintf(what, sizeof what, "%s (passes_off %#x, call %d): input %d after the call",
                     p->name, off, call, i);
            assert_agree(ci[i], ei[i], p->rtol, what);
            ci[i] = tt_release(ci[i]);
            ei[i] = tt_release(ei[i]);
        }
    }
    tt_compiled_free(c);
    for (int i = 0; i < p->nin; i++)
        tt_release(init[i]);
}

static void run_all_variants(const program *p)
{
    for (int v = 0; v < NVARIANTS; v++)
        run_program(p, variants[v]);
}

/* A [rows, cols] f32 tensor of seeded values in [-2, 2), none near 0. */
static tt_tensor *values(int64_t rows, int64_t cols, uint32_t seed)
{
    int64_t n = rows * cols;
    float *v = malloc(sizeof *v * (size_t)n);
    ck_assert_ptr_nonnull(v);
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        float x = (float)(seed >> 8) / (float)(1u << 24) * 4 - 2;
        v[i] = fabsf(x) < 0.1f ? x + 0.25f : x;
    }
    tt_tensor *t = NN(tt_from_data(2, (int64_t[]){rows, cols}, TT_F32, v));
    free(v);
    return t;
}

/* The value a call returns, or the status of the call that failed. */
#define TRY(var, expr)                                                         \
    do {                                                                       \
        if (!st && !((var) = (expr)))                                          \
            st = tt_errcode();                                                 \
    } while (0)

/* ========================================================= N1 copy-backs */

/* A few ops, then x_i.add_(1) on each of 4 inputs; *ud ops. */
static tt_status add_to_inputs(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nout;
    int nops = *(const int *)ud;
    tt_status st = TT_OK;
    tt_scope_begin();
    tt_tensor *y = NULL;
    TRY(y, tt_mul_scalar(in[0], 2));
    for (int k = 0; k < nops && !st; k++)
        TRY(y, tt_add_scalar(y, 1));
    for (int i = 0; i < nin && !st; i++)
        st = tt_add_scalar_(in[i], 1);
    out[0] = st ? NULL : tt_keep(y);
    tt_scope_end();
    return st;
}

static void make_four(tt_tensor **in)
{
    for (int i = 0; i < 4; i++)
        in[i] = values(3, 4, 10u + (uint32_t)i);
}

/* The copy-backs functionalization appends grow the node array when it is
 * full (ASan saw the output node written past it): every graph size from
 * 9 to 70 nodes crosses a capacity. */
START_TEST(test_n1_functionalize_copy_backs)
{
    tt_tensor *in[4];
    make_four(in);
    for (int nops = 0; nops < 62; nops++) {
        tt_graph *g = NN(tt_trace(add_to_inputs, 4, in, &(tt_trace_opts){.ud = &nops}));
        OK(tt_graph_functionalize(g));
        /* Four add_ became add, each input got its copy-back before the
         * output, which stays last. */
        int copies = 0, n = tt_graph_num_nodes(g);
        for (int i = 0; i < n; i++)
            copies += tt_graph_node_kind(g, i) == TT_NODE_OP &&
                      strcmp(tt_op_name(tt_graph_node_op(g, i)), "tt::copy_") == 0;
        ck_assert_int_eq(copies, 4);
        ck_assert_int_eq(tt_graph_node_kind(g, n - 1), TT_NODE_OUTPUT);
        tt_graph_free(g);
    }
    for (int i = 0; i < 4; i++)
        tt_release(in[i]);
    int nops = 3;
    run_all_variants(&(program){"add_ into 4 inputs", add_to_inputs, 4, 1, make_four, 0, &nops});
}
END_TEST

/* The graph after tt_graph_functionalize, run by the interpreter, has the
 * eager function's effect: its output and the inputs' final values. */
static void assert_graph_runs_like_eager(const tt_graph *g, int nops)
{
    tt_tensor *init[4], *gi[4], *ei[4], *go = NULL, *eo = NULL;
    make_four(init);
    clone_inputs(gi, init, 4);
    clone_inputs(ei, init, 4);
    OK(tt_graph_run(g, 4, gi, 1, &go));
    OK(add_to_inputs(ei, 4, &eo, 1, &nops));
    assert_agree(go, eo, 0, "functionalized graph: output");
    for (int i = 0; i < 4; i++) {
        assert_agree(gi[i], ei[i], 0, "functionalized graph: input after the run");
        tt_release(gi[i]);
        tt_release(ei[i]);
        tt_release(init[i]);
    }
    tt_release(go);
    tt_release(eo);
}

/* Out of memory at each allocation the pass makes: an error with a
 * message, or a graph that still writes every input. */
START_TEST(test_n1_functionalize_out_of_memory)
{
    tt_tensor *in[4];
    make_four(in);
    int nops = 3;
    tt_graph *g = NN(tt_trace(add_to_inputs, 4, in, &(tt_trace_opts){.ud = &nops}));
    int64_t before = tt_debug_alloc_count();
    OK(tt_graph_functionalize(g));
    int64_t used = tt_debug_alloc_count() - before;
    assert_graph_runs_like_eager(g, nops);
    tt_graph_free(g);
    ck_assert_int_gt(used, 0);
    for (int64_t n = 1; n <= used; n++) {
        g = NN(tt_trace(add_to_inputs, 4, in, &(tt_trace_opts){.ud = &nops}));
        tt_debug_fail_alloc(n);
        tt_status st = tt_graph_functionalize(g);
        tt_debug_fail_alloc(0);
        if (st) {
            ck_assert_msg(strlen(tt_errmsg()) > 0, "allocation %lld: %s without a message",
                          (long long)n, tt_status_name(st));
            tt_clear_error();
        } else {
            assert_graph_runs_like_eager(g, nops);
        }
        tt_graph_free(g);
    }
    for (int i = 0; i < 4; i++)
        tt_release(in[i]);
}
END_TEST

/* ========================================== N2 intermediates read outside */

/* a = abs(x); b = a + 0.5; c = a / b; d = c * 2; return (d + d, b) */
static tt_status read_outside_1(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_status st = TT_OK;
    tt_scope_begin();
    tt_tensor *a = NULL, *b = NULL, *c = NULL, *d = NULL, *e = NULL;
    TRY(a, tt_abs(in[0]));
    TRY(b, tt_add_scalar(a, 0.5));
    TRY(c, tt_div(a, b));
    TRY(d, tt_mul_scalar(c, 2));
    TRY(e, tt_add(d, d));
    out[0] = st ? NULL : tt_keep(e);
    out[1] = st ? NULL : tt_keep(b);
    tt_scope_end();
    return st;
}

/* a = abs(x); p = a**0.5; d = p / a; return p @ d.T */
static tt_status read_outside_2(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_status st = TT_OK;
    tt_scope_begin();
    tt_tensor *a = NULL, *p = NULL, *d = NULL, *dt = NULL, *r = NULL;
    TRY(a, tt_abs(in[0]));
    TRY(p, tt_pow_scalar(a, 0.5));
    TRY(d, tt_div(p, a));
    TRY(dt, tt_t(d));
    TRY(r, tt_matmul(p, dt));
    out[0] = st ? NULL : tt_keep(r);
    tt_scope_end();
    return st;
}

static void make_one(tt_tensor **in) { in[0] = values(4, 6, 7); }

START_TEST(test_n2_fused_intermediate_read_outside)
{
    run_all_variants(&(program){"abs/add/div/mul, b read outside", read_outside_1, 1, 2,
                                make_one, 0, NULL});
    run_all_variants(&(program){"abs/pow/div, p read by a matmul", read_outside_2, 1, 1,
                                make_one, 1e-6, NULL});
}
END_TEST

/* ===================================== N3 the last write into an input */

/* x.mul_(2); y = x.abs(); x.mul_(2); return y */
static tt_status last_write(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_status st = tt_mul_scalar_(in[0], 2);
    tt_tensor *y = NULL;
    TRY(y, tt_abs(in[0]));
    if (!st)
        st = tt_mul_scalar_(in[0], 2);
    if (st)
        y = tt_release(y);
    out[0] = y;
    return st;
}

/* The same through a written intermediate's chain: z = x.mul_(2) is x;
 * z.add_(1) then writes x too, with nothing reading it. */
static tt_status last_write_chain(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_status st = tt_mul_(in[0], in[1]);
    tt_tensor *y = NULL;
    TRY(y, tt_exp(in[0]));
    if (!st)
        st = tt_add_(in[0], in[1]);
    if (!st)
        st = tt_div_scalar_(in[0], 4);
    if (!st)
        st = tt_relu_(in[1]);
    if (st)
        y = tt_release(y);
    out[0] = y;
    return st;
}

static void make_two(tt_tensor **in)
{
    in[0] = values(4, 6, 21);
    in[1] = values(4, 6, 22);
}

START_TEST(test_n3_last_input_write_kept)
{
    run_all_variants(&(program){"x.mul_(2); y = abs(x); x.mul_(2)", last_write, 1, 1,
                                make_one, 0, NULL});
    run_all_variants(&(program){"writes into two inputs nothing reads", last_write_chain, 2,
                                1, make_two, 0, NULL});
}
END_TEST

/* ================================== N4 an in-place op keeps self's dtype */

/* y = softmax(x) (f32); y.mul_(x.double()); return y (f32, as eager) */
static tt_status keeps_dtype(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_status st = TT_OK;
    tt_scope_begin();
    tt_tensor *y = NULL, *xd = NULL;
    TRY(y, tt_softmax(in[0], 1));
    TRY(xd, tt_to_dtype(in[0], TT_F64));
    if (!st)
        st = tt_mul_(y, xd);
    out[0] = st ? NULL : tt_keep(y);
    tt_scope_end();
    return st;
}

START_TEST(test_n4_inplace_keeps_self_dtype)
{
    run_all_variants(&(program){"y = softmax(x); y.mul_(x.double())", keeps_dtype, 1, 1,
                                make_one, 1e-6, NULL});
    /* The functionalized graph says f32 too. */
    tt_tensor *x = values(4, 6, 7), *out[1];
    tt_compiled *c = NN(tt_compile(keeps_dtype, 1, 1, &(tt_trace_opts){.fullgraph = true}));
    OK(tt_compiled_call(c, &x, out));
    ck_assert_int_eq(tt_dtype_of(out[0]), TT_F32);
    const tt_graph *g = NN(tt_compiled_graph(c, 0));
    for (int i = 0; i < tt_graph_num_nodes(g); i++)
        if (tt_graph_node_kind(g, i) == TT_NODE_OP &&
            strncmp(tt_op_name(tt_graph_node_op(g, i)), "tt::mul", 7) == 0)
            ck_assert_int_eq(tt_dtype_of(tt_graph_node_value(g, i, 0)), TT_F32);
    tt_release(out[0]);
    tt_release(x);
    tt_compiled_free(c);
}
END_TEST

/* ==================== N7 the gradient through an in-place op's operand */

/* y = w * 1; y.div_(v); sum(y).backward(); returns (dL/dw, dL/dv) */
static tt_status div_grad(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_status st = TT_OK;
    tt_scope_begin();
    tt_tensor *y = NULL, *loss = NULL;
    TRY(y, tt_mul_scalar(in[0], 1));
    if (!st)
        st = tt_div_(y, in[1]);
    TRY(loss, tt_sum(y, 0, NULL, false));
    if (!st)
        st = tt_backward(loss, NULL);
    tt_scope_end();
    out[0] = out[1] = NULL;
    for (int i = 0; i < 2 && !st; i++) {
        out[i] = tt_get_grad(in[i]);
        if (!out[i])
            st = tt_errcode() ? tt_errcode()
                              : tt_error(TT_EAUTOGRAD, "input %d got no gradient", i);
        else
            st = tt_set_grad(in[i], NULL);
    }
    if (st)
        for (int i = 0; i < 2; i++)
            out[i] = tt_release(out[i]);
    return st;
}

static void make_wv(tt_tensor **in)
{
    in[0] = NN(tt_full(1, (int64_t[]){3}, 3.0, TT_F32));
    in[1] = NN(tt_full(1, (int64_t[]){3}, 2.0, TT_F32));
    OK(tt_set_requires_grad(in[0], true));
    OK(tt_set_requires_grad(in[1], true));
}

START_TEST(test_n7_grad_through_inplace_div)
{
    run_all_variants(&(program){"y = w * 1; y.div_(v); backward", div_grad, 2, 2, make_wv, 0,
                                NULL});
    /* And the value itself: dL/dv = -w / v^2 = -0.75. */
    tt_tensor *in[2], *out[2];
    make_wv(in);
    tt_compiled *c = NN(tt_compile(div_grad, 2, 2, &(tt_trace_opts){.fullgraph = true}));
    OK(tt_compiled_call(c, in, out));
    double *gv = tt_test_values(out[1]);
    ck_assert_double_eq_tol(gv[0], -0.75, 1e-7);
    free(gv);
    for (int i = 0; i < 2; i++) {
        tt_release(out[i]);
        tt_release(in[i]);
    }
    tt_compiled_free(c);
}
END_TEST

/* ============================== N8 fused formulas agree with the kernels */

static tt_tensor *gt0_mul(const tt_tensor *x, const tt_tensor *y)
{
    const tt_op *gt = tt_op_find("tt::gt.Scalar");
    tt_tensor *m = gt ? tt_op_call1(gt, (tt_value[]){tt_v_tensor(x), tt_v_float(0)}, 2) : NULL;
    tt_tensor *r = m ? tt_mul(y, m) : NULL;
    tt_release(m);
    return r;
}

#define UN(name, call)                                                         \
    static tt_tensor *name(const tt_tensor *x, const tt_tensor *y)             \
    {                                                                          \
        (void)y;                                                               \
        return call;                                                           \
    }
UN(f_add, tt_add(x, y))
UN(f_sub, tt_sub(x, y))
UN(f_mul, tt_mul(x, y))
UN(f_div, tt_div(x, y))
UN(f_adds, tt_add_scalar(x, 0.5))
UN(f_subs, tt_sub_scalar(x, -1.25))
UN(f_muls, tt_mul_scalar(x, -3))
UN(f_divs, tt_div_scalar(x, 3))
UN(f_divs0, tt_div_scalar(x, 0))
UN(f_pow2, tt_pow_scalar(x, 2))
UN(f_pow05, tt_pow_scalar(x, 0.5))
UN(f_pow3, tt_pow_scalar(x, -3))
UN(f_neg, tt_neg(x))
UN(f_exp, tt_exp(x))
UN(f_log, tt_log(x))
UN(f_sqrt, tt_sqrt(x))
UN(f_rsqrt, tt_rsqrt(x))
UN(f_sin, tt_sin(x))
UN(f_cos, tt_cos(x))
UN(f_tanh, tt_tanh(x))
UN(f_sigmoid, tt_sigmoid(x))
UN(f_relu, tt_relu(x))
UN(f_gelu, tt_gelu(x))
UN(f_gelu_tanh, tt_gelu_tanh(x))
UN(f_abs, tt_abs(x))

static const struct fused_case {
    const char *name;
    tt_tensor *(*f)(const tt_tensor *x, const tt_tensor *y);
    bool fuses; /* f joins neg in a fused step (else neg may run alone) */
} fused_cases[] = {
    {"add", f_add, true}, {"sub", f_sub, true}, {"mul", f_mul, true}, {"div", f_div, true},
    {"add_scalar", f_adds, true}, {"sub_scalar", f_subs, true}, {"mul_scalar", f_muls, true},
    {"div_scalar", f_divs, true}, {"div_scalar by 0", f_divs0, true},
    {"pow 2", f_pow2, true}, {"pow 0.5", f_pow05, true}, {"pow -3", f_pow3, true},
    {"neg", f_neg, true}, {"exp", f_exp, true}, {"log", f_log, true}, {"sqrt", f_sqrt, true},
    {"rsqrt", f_rsqrt, true}, {"sin", f_sin, true}, {"cos", f_cos, true},
    {"tanh", f_tanh, true}, {"sigmoid", f_sigmoid, true}, {"relu", f_relu, true},
    {"gelu", f_gelu, true}, {"gelu tanh", f_gelu_tanh, true}, {"abs", f_abs, true},
    {"y * (x > 0)", gt0_mul, true},
};
enum { NFUSED = sizeof fused_cases / sizeof fused_cases[0] };

/* neg(op(x, y)): a two-op chain, neg exact. */
static tt_status fused_chain(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    const struct fused_case *fc = ud;
    tt_tensor *r = fc->f(in[0], in[1]);
    out[0] = r ? tt_neg(r) : NULL;
    tt_release(r);
    return out[0] ? TT_OK : tt_errcode();
}

/* NaN, +-inf, +-0, denormals, the smallest normal, large and ordinary
 * values, repeated past a vector kernel's width (and y rotated against x
 * so every pair meets). */
static tt_dtype special_dtype;

static void make_specials(tt_tensor **in)
{
    const double sp[] = {NAN, -NAN, INFINITY, -INFINITY, 0.0, -0.0, 1e-40, -1e-40, 1e-310,
                         -1e-310, 1.1754943508222875e-38, 2.2250738585072014e-308, 1, -1,
                         0.5, -2.5, 3.7, 1e30, -1e30, 88.5, -88.5, 1e-3, 100, -7e-5};
    enum { NSP = sizeof sp / sizeof sp[0], N = 4 * NSP };
    double x[N], y[N];
    for (int i = 0; i < N; i++) {
        x[i] = sp[i % NSP];
        y[i] = sp[(i / NSP + 7 * i) % NSP];
    }
    for (int k = 0; k < 2; k++) {
        tt_tensor *d = NN(tt_from_data(1, (int64_t[]){N}, TT_F64, k ? y : x));
        in[k] = NN(tt_to_dtype(d, special_dtype));
        tt_release(d);
    }
}

START_TEST(test_n8_fused_formulas_bit_for_bit)
{
    special_dtype = _i ? TT_F64 : TT_F32;
    for (int k = 0; k < NFUSED; k++) {
        const struct fused_case *fc = &fused_cases[k];
        char name[96];
        snprintf(name, sizeof name, "%s (%s)", fc->name, tt_dtype_name(special_dtype));
        program p = {name, fused_chain, 2, 1, make_specials, 0, (void *)fc};
        run_all_variants(&p);
        /* It did run fused. */
        tt_tensor *in[2], *out[1];
        make_specials(in);
        tt_compiled *c = NN(tt_compile(fused_chain, 2, 1,
                                       &(tt_trace_opts){.fullgraph = true, .ud = (void *)fc}));
        OK(tt_compiled_call(c, in, out));
        tt_compile_stats st;
        tt_compiled_stats(c, &st);
        ck_assert_msg(fc->fuses ? st.fused_ops >= 2 : st.fused_ops <= 1, "%s: %d fused ops",
                      name, st.fused_ops);
        tt_release(out[0]);
        tt_release(in[0]);
        tt_release(in[1]);
        tt_compiled_free(c);
    }
}
END_TEST

/* ============================ N12 a GEMM epilogue that cannot apply */

/* loss = sum(linear(x, w)) for x = expand(v, [3, 8, 4]) (ud NULL) or
 * another layout of v [8, 4] (*ud: 1 transposed twice, 2 columns of a
 * wider tensor, 3 rows strided by 2); backward; w.add_(grad,
 * alpha=-0.25); returns loss */
static tt_status expand_sgd(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    int kind = ud ? *(const int *)ud : 0;
    tt_status st = TT_OK;
    tt_scope_begin();
    tt_tensor *e = NULL, *l = NULL, *loss = NULL, *g = NULL, *tmp = NULL;
    switch (kind) {
    case 0: TRY(e, tt_expand(in[0], 3, (int64_t[]){3, 8, 4})); break;
    case 1:
        TRY(tmp, tt_t(in[0]));
        TRY(tmp, tt_contiguous(tmp));
        TRY(e, tt_t(tmp));
        break;
    case 2:
        TRY(tmp, tt_cat(2, (tt_tensor *[]){in[0], in[0]}, 1));
        TRY(e, tt_narrow(tmp, 1, 2, 4));
        break;
    default:
        TRY(tmp, tt_cat(2, (tt_tensor *[]){in[0], in[0]}, 0));
        TRY(e, tt_as_strided(tmp, 2, (int64_t[]){8, 4}, (int64_t[]){8, 1}, 0));
        break;
    }
    TRY(l, tt_linear(e, in[1], NULL));
    TRY(loss, tt_sum(l, 0, NULL, false));
    if (!st)
        st = tt_backward(loss, NULL);
    TRY(g, tt_get_grad(in[1]));
    if (!st) {
        tt_no_grad_begin();
        st = tt_add_scaled_(in[1], g, -0.25);
        tt_no_grad_end();
    }
    if (!st)
        st = tt_set_grad(in[1], NULL);
    tt_release(g);
    out[0] = st ? NULL : tt_keep(loss);
    tt_scope_end();
    return st;
}

static void make_expand_sgd(tt_tensor **in)
{
    in[0] = values(8, 4, 31);
    in[1] = values(5, 4, 32);
    OK(tt_set_requires_grad(in[1], true));
}

START_TEST(test_n12_epilogue_steps_aside)
{
    run_all_variants(&(program){"linear(expand(v), w); SGD", expand_sgd, 2, 1,
                                make_expand_sgd, 1e-5, NULL});
    static const char *const layouts[] = {"", "transposed twice", "columns of a wider tensor",
                                          "rows strided by 2"};
    for (int kind = 1; kind < 4; kind++) {
        char name[96];
        snprintf(name, sizeof name, "linear(v %s, w); SGD", layouts[kind]);
        run_all_variants(&(program){name, expand_sgd, 2, 1, make_expand_sgd, 1e-5, &kind});
    }
    /* The expanded operand does not fit one GEMM: the pass stepped aside. */
    tt_tensor *in[2], *out[1];
    make_expand_sgd(in);
    tt_compiled *c = NN(tt_compile(expand_sgd, 2, 1, &(tt_trace_opts){.fullgraph = true}));
    OK(tt_compiled_call(c, in, out));
    tt_compile_stats st;
    tt_compiled_stats(c, &st);
    ck_assert_int_eq(st.epilogues, 0);
    tt_release(out[0]);
    tt_release(in[0]);
    tt_release(in[1]);
    tt_compiled_free(c);
}
END_TEST

/* ============================ a fused result is a fresh tensor
 * A fused chain may write over an input that dies there, but only one
 * that is all of its own storage: over a slice, the result sat at the
 * slice's offset in a larger storage, and as_strided, which addresses the
 * storage, read another element (tt-difftest seed 328633, under ASan:
 * 204.9 compiled, 50.1 eager). */
static tt_status slice_add_as_strided(tt_tensor **in, int nin, tt_tensor **out, int nout,
                                      void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_status st = TT_OK;
    tt_scope_begin();
    tt_tensor *p = NULL, *s = NULL, *v = NULL, *a = NULL, *r = NULL;
    TRY(p, tt_pow(in[1], in[0]));
    TRY(s, tt_sum(p, 1, (const int64_t[]){-2}, false));
    TRY(v, tt_slice(s, 0, 3, 6, 1));
    TRY(a, tt_add_scalar(v, 2));
    TRY(r, tt_as_strided(a, 1, (const int64_t[]){1}, (const int64_t[]){2}, 1));
    out[0] = st ? NULL : tt_keep(r);
    tt_scope_end();
    return st;
}

static void make_slice_add(tt_tensor **in)
{
    in[0] = NN(tt_from_data(TT_SHAPE(6, 1), TT_F64,
                            (const double[]){0.5, 1.625, 1.25, 0.125, -1.125, -0.75}));
    in[1] = NN(tt_from_data(TT_SHAPE(5), TT_F64,
                            (const double[]){0.375, -1.5, 0.5, -1.25, 0.375}));
}

/* F21: a dropout whose result nobody reads still draws, eagerly; the
 * compiled plan must keep its draws too (dead-code elimination skips ops
 * tagged nondeterministic_seeded), or every later mask differs from eager's
 * under the same seed. */
static tt_status dead_dropout(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_scope_begin();
    tt_dropout(in[0], 0.5, true); /* dead */
    tt_rand(TT_SHAPE(3), TT_F32);  /* dead too */
    out[0] = tt_keep(tt_dropout(in[0], 0.5, true));
    tt_scope_end();
    return out[0] ? TT_OK : tt_errcode();
}

START_TEST(test_dead_random_ops_keep_their_draws)
{
    tt_tensor *x = NN(tt_ones(TT_SHAPE(4, 16), TT_F32)), *eager = NULL, *compiled = NULL;
    const tt_trace_mode modes[] = {TT_TRACE_FAKE, TT_TRACE_SYMBOLIC};
    for (int m = 0; m < 2; m++) {
        tt_compiled *c = tt_compile(dead_dropout, 1, 1,
                                    &(tt_trace_opts){.mode = modes[m], .fullgraph = true});
        ck_assert_msg(c != NULL, "%s", tt_errmsg());
        for (int call = 0; call < 2; call++) {
            tt_manual_seed(1000 + (uint64_t)call);
            OK(dead_dropout(&x, 1, &eager, 1, NULL));
            tt_manual_seed(1000 + (uint64_t)call);
            OK(tt_compiled_call(c, &x, &compiled));
            tt_test_assert_same_bits(compiled, eager, "compiled vs eager");
            eager = tt_release(eager);
            compiled = tt_release(compiled);
        }
        tt_compiled_free(c);
    }
    tt_release(x);
}
END_TEST

/* F23: an input written by a mutating op of several results (sgd_step
 * writes param and momentum buffer), then by an in-place op kept in place,
 * then by one functionalization rewrites: the input's final value must
 * still be copied back (the root of a write through an after-write value
 * is the input it wrote). */
static tt_status sgd_then_inplace(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_scope_begin();
    tt_tensor *step = tt_scalar(1, TT_I64);
    tt_status st = step ? tt_sgd_(in[0], in[1], in[2], step,
                                  &(tt_sgd_opts){.lr = 0.1, .momentum = 0.9})
                        : tt_errcode();
    if (!st)
        st = tt_relu_(in[0]);
    if (!st)
        st = tt_mul_scalar_(in[0], 3);
    out[0] = st ? NULL : tt_keep(tt_sum_all(in[1]));
    tt_scope_end();
    return out[0] ? TT_OK : tt_errcode();
}

static void sgd_inputs(tt_tensor **in)
{
    in[0] = NN(tt_from_data(TT_SHAPE(4), TT_F32, (const float[]){1, -2, 3, 0.5f}));
    in[1] = NN(tt_from_data(TT_SHAPE(4), TT_F32, (const float[]){0.5f, 1, -1, 2}));
    in[2] = NN(tt_from_data(TT_SHAPE(4), TT_F32, (const float[]){0.25f, 0, 1, -1}));
}

START_TEST(test_write_after_multi_result_write_is_kept)
{
    const tt_trace_mode modes[] = {TT_TRACE_FAKE, TT_TRACE_SYMBOLIC};
    for (int m = 0; m < 2; m++) {
        tt_tensor *e[3], *c[3], *eo = NULL, *co = NULL;
        sgd_inputs(e);
        sgd_inputs(c);
        tt_compiled *comp = tt_compile(sgd_then_inplace, 3, 1,
                                       &(tt_trace_opts){.mode = modes[m], .fullgraph = true});
        ck_assert_msg(comp != NULL, "%s", tt_errmsg());
        OK(sgd_then_inplace(e, 3, &eo, 1, NULL));
        OK(tt_compiled_call(comp, c, &co));
        for (int i = 0; i < 3; i++)
            tt_test_assert_same_bits(c[i], e[i], "input after the call");
        tt_compiled_free(comp);
        for (int i = 0; i < 3; i++) {
            tt_release(e[i]);
            tt_release(c[i]);
        }
        tt_release(eo);
        tt_release(co);
    }
}
END_TEST

START_TEST(test_fused_result_over_slice)
{
    run_all_variants(&(program){"as_strided(slice(sum(x ** e)) + 2)", slice_add_as_strided, 2,
                                1, make_slice_add, 1e-12, NULL});
}
END_TEST

/* ============================ a failing step always says why */

/* soundtest::flaky(Tensor x) -> Tensor, pointwise: traces (its fake
 * kernel gives x's metadata), and its real kernel fails without a word. */
static tt_status flaky_kernel(tt_frame *f)
{
    (void)f;
    return TT_EINVAL;
}

static tt_status flaky_fake(tt_frame *f)
{
    tt_tensor *x;
    tt_status st = tt_arg_tensor(f, 0, &x);
    return st ? st : tt_return(f, 0, tt_empty_like(x));
}

/* neg(flaky(exp(x))): fused as one chain, or three steps. */
static tt_status flaky_chain(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    tt_status st = TT_OK;
    tt_scope_begin();
    tt_tensor *a = NULL, *b = NULL, *c = NULL;
    TRY(a, tt_exp(in[0]));
    TRY(b, tt_op_call1((const tt_op *)ud, (tt_value[]){tt_v_tensor(a)}, 1));
    TRY(c, tt_neg(b));
    out[0] = st ? NULL : tt_keep(c);
    tt_scope_end();
    return st;
}

START_TEST(test_failing_step_has_message)
{
    tt_library *lib = NN(tt_library_new(TT_LIB_DEF, "soundtest"));
    const tt_op *flaky = NN(tt_custom_op_define(lib, &(tt_custom_op_spec){
        .schema = "soundtest::flaky(Tensor x) -> Tensor",
        .mutates_args = "",
        .kernel = flaky_kernel,
        .fake = flaky_fake,
        .tags = TT_TAG_POINTWISE,
    }));
    for (int v = 0; v < NVARIANTS; v++) {
        tt_tensor *x = values(4, 6, 41), *out[1] = {NULL};
        tt_compiled *c = NN(tt_compile(flaky_chain, 1, 1,
                                       &(tt_trace_opts){.fullgraph = true,
                                                        .passes_off = variants[v],
                                                        .ud = (void *)flaky}));
        for (int call = 0; call < 2; call++) {
            tt_clear_error();
            ck_assert_int_eq(tt_compiled_call(c, &x, out), TT_EINVAL);
            ck_assert_ptr_null(out[0]);
            ck_assert_error(TT_EINVAL, "soundtest::flaky: the kernel failed (TT_EINVAL) "
                                       "without a message");
        }
        tt_compile_stats st;
        tt_compiled_stats(c, &st);
        if (!(variants[v] & TT_PASS_FUSE))
            ck_assert_int_eq(st.fused_ops, 3); /* the custom op ran inside a chain */
        tt_compiled_free(c);
        tt_release(x);
    }
    tt_library_free(lib);
}
END_TEST

/* ============================================ random programs */

/* Small random programs over [4, 6] tensors in the shapes of the
 * findings: elementwise ops, in-place writes into inputs, intermediates
 * and views (which alias what they view), and outputs taken from any
 * value, inputs included. */
enum {
    R_UNARY, R_BINARY, R_SCALAR, R_INPLACE_S, R_INPLACE_T, R_RELU_, R_VIEW, R_COPY_,
    R_MUL_F64_, /* a.mul_(b.double()): self keeps its dtype */
    R_SOFTMAX,  /* not elementwise: ends a fused chain */
    R_PART_,    /* a write through a view of part of a value: narrow or select */
    R_T_,       /* a write through a transposed (non-contiguous) view */
    R_OPS
};
enum { RMAX_INSTR = 12, RMAX_VALS = 2 + RMAX_INSTR };

typedef struct {
    int op, a, b, k;
} rinstr;

/* With grad, the program starts from in0 * 1 and in1 * 1 (inputs that
 * require grad cannot be written in place), backpropagates the sum of
 * its two results and the starting values, and returns the inputs'
 * gradients (zeros for none). */
typedef struct {
    int n;
    rinstr code[RMAX_INSTR];
    int out[2];
    bool grad;
} rprogram;

static tt_tensor *r_unary(int k, const tt_tensor *x)
{
    switch (k % 5) {
    case 0: return tt_abs(x);
    case 1: return tt_neg(x);
    case 2: return tt_tanh(x);
    case 3: return tt_relu(x);
    default: return tt_sigmoid(x);
    }
}

static tt_tensor *r_binary(int k, const tt_tensor *x, const tt_tensor *y)
{
    switch (k % 4) {
    case 0: return tt_add(x, y);
    case 1: return tt_sub(x, y);
    case 2: return tt_mul(x, y);
    default: return tt_div(x, y);
    }
}

static tt_status random_program(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    const rprogram *p = ud;
    tt_tensor *v[RMAX_VALS] = {in[0], in[1]};
    int nv = 2;
    tt_status st = TT_OK;
    tt_scope_begin();
    for (int k = 0; k < 2 && p->grad; k++)
        TRY(v[k], tt_mul_scalar(in[k], 1));
    for (int i = 0; i < p->n && !st; i++) {
        const rinstr *c = &p->code[i];
        tt_tensor *a = v[c->a], *b = v[c->b], *r = NULL;
        switch (c->op) {
        case R_UNARY: TRY(r, r_unary(c->k, a)); break;
        case R_BINARY: TRY(r, r_binary(c->k, a, b)); break;
        case R_SCALAR: TRY(r, c->k % 2 ? tt_add_scalar(a, 0.5) : tt_mul_scalar(a, -1.5)); break;
        case R_INPLACE_S: st = c->k % 2 ? tt_add_scalar_(a, 1) : tt_mul_scalar_(a, 2); break;
        case R_INPLACE_T:
            st = c->k % 2 ? tt_add_(a, b) : c->k & 2 ? tt_div_(a, b) : tt_mul_(a, b);
            break;
        case R_RELU_: st = tt_relu_(a); break;
        case R_VIEW: TRY(r, tt_view(a, 2, (int64_t[]){4, 6})); break;
        case R_COPY_: st = tt_copy_(a, b); break;
        case R_MUL_F64_: {
            tt_tensor *d = NULL;
            TRY(d, tt_to_dtype(b, TT_F64));
            if (!st)
                st = tt_mul_(a, d);
            break;
        }
        case R_PART_: {
            tt_tensor *part = NULL;
            TRY(part, c->k % 2 ? tt_narrow(a, 0, 1, 2) : tt_select(a, 1, c->k % 6));
            if (!st)
                st = c->k & 2 ? tt_mul_scalar_(part, -2) : tt_relu_(part);
            break;
        }
        case R_T_: {
            tt_tensor *t = NULL;
            TRY(t, tt_t(a));
            if (!st)
                st = tt_add_scalar_(t, 0.25);
            break;
        }
        default: TRY(r, tt_softmax(a, 1)); break;
        }
        if (r)
            v[nv++] = r;
    }
    if (p->grad) {
        tt_tensor *loss = NULL, *terms[4] = {v[p->out[0]], v[p->out[1]], v[0], v[1]};
        for (int k = 0; k < 4 && !st; k++) {
            tt_tensor *sk = NULL;
            TRY(sk, tt_sum(terms[k], 0, NULL, false));
            TRY(loss, k ? tt_add(loss, sk) : sk);
        }
        if (!st)
            st = tt_backward(loss, NULL);
        for (int k = 0; k < 2; k++) {
            tt_tensor *g = st ? NULL : tt_get_grad(in[k]);
            out[k] = st ? NULL : g ? g : tt_zeros(2, (int64_t[]){4, 6}, TT_F32);
            if (!st && !out[k])
                st = tt_errcode();
            if (!st && g)
                st = tt_set_grad(in[k], NULL);
        }
        tt_scope_end();
        if (st)
            for (int k = 0; k < 2; k++)
                out[k] = tt_release(out[k]);
        return st;
    }
    for (int k = 0; k < 2; k++) {
        out[k] = st ? NULL : tt_clone(v[p->out[k]]);
        if (out[k])
            tt_keep(out[k]);
    }
    tt_scope_end();
    for (int k = 0; k < 2 && !st; k++)
        if (!out[k])
            st = tt_errcode();
    return st;
}

static uint32_t rnd(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

static void make_random_inputs(tt_tensor **in)
{
    in[0] = values(4, 6, 51);
    in[1] = values(4, 6, 52);
}

static void make_random_grad_inputs(tt_tensor **in)
{
    make_random_inputs(in);
    OK(tt_set_requires_grad(in[0], true));
    OK(tt_set_requires_grad(in[1], true));
}

/* How p runs eagerly (a program may write a value its backward needs,
 * which autograd refuses); on failure, the message's op ("tt::relu_")
 * into why. */
static tt_status runs_eagerly(rprogram *p, char *why, size_t n)
{
    tt_tensor *in[2], *out[2];
    (p->grad ? make_random_grad_inputs : make_random_inputs)(in);
    tt_status st = random_program(in, 2, out, 2, p);
    if (st)
        snprintf(why, n, "%.*s", (int)strcspn(tt_errmsg(), ":"), tt_errmsg());
    for (int k = 0; k < 2; k++) {
        if (!st)
            tt_release(out[k]);
        tt_release(in[k]);
    }
    tt_clear_error();
    return st;
}

/* A program eager refuses fails compiled too, with the same status and
 * a message from the same op. */
static void compiled_fails_alike(rprogram *p, tt_status want, const char *op, const char *name)
{
    tt_tensor *in[2], *out[2] = {NULL, NULL};
    (p->grad ? make_random_grad_inputs : make_random_inputs)(in);
    tt_compiled *c = NN(tt_compile(random_program, 2, 2,
                                   &(tt_trace_opts){.fullgraph = true, .ud = p}));
    tt_status st = tt_compiled_call(c, in, out);
    ck_assert_msg(st == want && strncmp(tt_errmsg(), op, strlen(op)) == 0,
                  "%s: eager fails with %s in %s; compiled: %s: %s", name,
                  tt_status_name(want), op, tt_status_name(st), tt_errmsg());
    ck_assert_ptr_null(out[0]);
    tt_clear_error();
    tt_compiled_free(c);
    tt_release(in[0]);
    tt_release(in[1]);
}

START_TEST(test_random_programs)
{
    uint32_t seed = 2026u + (uint32_t)_i;
    int ran = 0;
    /* More tries with grad: autograd refuses the programs that use a
     * value again after a write through a view of it (or into its base),
     * whose gradient would be wrong. */
    for (int k = 0; k < (_i >= 3 ? 60 : 40); k++) {
        rprogram p = {.n = 2 + (int)(rnd(&seed) % (RMAX_INSTR - 1)), .grad = _i >= 3};
        int nv = 2;
        char text[512] = "";
        for (int i = 0; i < p.n; i++) {
            rinstr *c = &p.code[i];
            c->op = (int)(rnd(&seed) % R_OPS);
            /* Autograd refuses tt::mul_.Tensor ("not differentiable"). */
            if (p.grad && c->op == R_MUL_F64_)
                c->op = R_INPLACE_S;
            /* A write into a view of a value the program uses again: its
             * history goes stale, which autograd refuses (no CopySlices;
             * test_autograd_views.c). */
            if (p.grad && (c->op == R_PART_ || c->op == R_T_))
                c->op = R_INPLACE_S;
            c->a = (int)(rnd(&seed) % (uint32_t)nv);
            c->b = (int)(rnd(&seed) % (uint32_t)nv);
            c->k = (int)(rnd(&seed) % 8);
            if (p.grad && c->op == R_INPLACE_T)
                c->k |= 2; /* add_ or div_ */
            nv += c->op == R_UNARY || c->op == R_BINARY || c->op == R_SCALAR ||
                  c->op == R_VIEW || c->op == R_SOFTMAX;
            size_t len = strlen(text);
            snprintf(text + len, sizeof text - len, "%s%d(%d,%d,%d)", i ? " " : "", c->op,
                     c->a, c->b, c->k);
        }
        p.out[0] = (int)(rnd(&seed) % (uint32_t)nv);
        p.out[1] = (int)(rnd(&seed) % (uint32_t)nv);
        char name[600];
        snprintf(name, sizeof name, "random program %d.%d%s [%s] -> %d, %d", _i, k,
                 p.grad ? " (grad)" : "", text, p.out[0], p.out[1]);
        char why[512];
        tt_status est = runs_eagerly(&p, why, sizeof why);
        if (est) {
            compiled_fails_alike(&p, est, why, name);
            continue;
        }
        ran++;
        /* Sums and softmax reduce in another order once fused around. */
        run_all_variants(&(program){name, random_program, 2, 2,
                                    p.grad ? make_random_grad_inputs : make_random_inputs,
                                    p.grad ? 1e-5 : 0, &p});
    }
    ck_assert_int_ge(ran, 15);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("compile_sound");
    TCase *tc = tt_tcase("n1_functionalize_copy_backs");
    tcase_add_test(tc, test_n1_functionalize_copy_backs);
    tcase_add_test(tc, test_n1_functionalize_out_of_memory);
    suite_add_tcase(s, tc);
    tc = tt_tcase("n2_fused_intermediate_read_outside");
    tcase_add_test(tc, test_n2_fused_intermediate_read_outside);
    suite_add_tcase(s, tc);
    tc = tt_tcase("n3_last_input_write_kept");
    tcase_add_test(tc, test_n3_last_input_write_kept);
    suite_add_tcase(s, tc);
    tc = tt_tcase("n4_inplace_keeps_self_dtype");
    tcase_add_test(tc, test_n4_inplace_keeps_self_dtype);
    suite_add_tcase(s, tc);
    tc = tt_tcase("n7_grad_through_inplace_div");
    tcase_add_test(tc, test_n7_grad_through_inplace_div);
    suite_add_tcase(s, tc);
    tc = tt_tcase("n8_fused_formulas_bit_for_bit");
    tcase_add_loop_test(tc, test_n8_fused_formulas_bit_for_bit, 0, 2);
    suite_add_tcase(s, tc);
    tc = tt_tcase("n12_epilogue_steps_aside");
    tcase_add_test(tc, test_n12_epilogue_steps_aside);
    suite_add_tcase(s, tc);
    tc = tt_tcase("random_programs");
    tcase_add_loop_test(tc, test_random_programs, 0, 8);
    suite_add_tcase(s, tc);
    tc = tt_tcase("failing_step_has_message");
    tcase_add_test(tc, test_failing_step_has_message);
    suite_add_tcase(s, tc);
    tc = tt_tcase("fused_result_over_slice");
    tcase_add_test(tc, test_fused_result_over_slice);
    suite_add_tcase(s, tc);
    tc = tt_tcase("dead_random_ops_keep_their_draws");
    tcase_add_test(tc, test_dead_random_ops_keep_their_draws);
    tcase_add_test(tc, test_write_after_multi_result_write_is_kept);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
