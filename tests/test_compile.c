/* tt_compile: plans cached per input signature (fake-mode guards on dtype,
 * rank, sizes, strides and requires_grad; symbolic guards on layout,
 * specialized sizes and recorded size comparisons), replay without running
 * the C function, outputs equal to eager ones (elementwise, matmul,
 * reductions, fused elementwise chains, a training step updating its
 * weights in place), graph breaks with and without fullgraph, dead-code
 * elimination and the error paths.
 *
 * Every traced function counts its runs through ud, so a test can tell a
 * replay (no run) from a retrace. */
#include "tt_test.h"
#include "tutorial_ops.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* ================================================================ helpers */

/* Same dtype and sizes; values within rtol (0: bit for bit). */
static void assert_close(const tt_tensor *a, const tt_tensor *b, double rtol, const char *what)
{
    char x[128], y[128];
    ck_assert_msg(a && b, "%s: NULL tensor", what);
    ck_assert_msg(tt_dtype_of(a) == tt_dtype_of(b) && tt_ndim(a) == tt_ndim(b) &&
                      memcmp(tt_sizes(a), tt_sizes(b), sizeof(tt_size) * (size_t)tt_ndim(a)) == 0,
                  "%s: %s vs %s", what, tt_describe(a, x, sizeof x), tt_describe(b, y, sizeof y));
    double *va = tt_test_values(a), *vb = tt_test_values(b);
    for (int64_t i = 0; i < tt_numel(a); i++) {
        bool ok = rtol == 0 ? va[i] == vb[i] || (isnan(va[i]) && isnan(vb[i]))
                            : fabs(va[i] - vb[i]) <= rtol * fmax(fabs(vb[i]), 1e-30);
        ck_assert_msg(ok, "%s: element %lld is %.17g, expected %.17g", what, (long long)i,
                      va[i], vb[i]);
    }
    free(va);
    free(vb);
}

static void assert_same(const tt_tensor *a, const tt_tensor *b, const char *what)
{
    assert_close(a, b, 0, what);
}

static tt_compile_stats stats_of(const tt_compiled *c)
{
    tt_compile_stats s;
    memset(&s, 0xff, sizeof s);
    tt_compiled_stats(c, &s);
    return s;
}

/* Asserts calls, hits, misses, plans and the runs of the function. */
#define CHECK_STATS(c, calls_, hits_, misses_, plans_, runs_, runs_want)             \
    do {                                                                       \
        tt_compile_stats s_ = stats_of(c);                                     \
        ck_assert_msg(s_.calls == (calls_) && s_.hits == (hits_) &&            \
                          s_.misses == (misses_) && s_.plans == (plans_) &&    \
                          (runs_) == (runs_want),                              \
                      "calls %lld hits %lld misses %lld plans %d runs %d; "    \
                      "expected %d %d %d %d %d (last miss: %s)",               \
                      (long long)s_.calls, (long long)s_.hits,                 \
                      (long long)s_.misses, s_.plans, (int)(runs_), (calls_),  \
                      (hits_), (misses_), (plans_), (runs_want), s_.last_miss); \
    } while (0)

static void assert_last_miss(const tt_compiled *c, const char *want)
{
    tt_compile_stats s = stats_of(c);
    ck_assert_msg(strcmp(s.last_miss, want) == 0, "last_miss \"%s\", expected \"%s\"",
                  s.last_miss, want);
}

/* Calls c and fn eagerly on the same inputs; the outputs must be equal
 * bit for bit (the plan runs the same kernels). */
static void check_vs_eager(tt_compiled *c, tt_fn fn, tt_tensor **in, int nin, int nout,
                           void *ud, const char *what)
{
    tt_tensor *got[4] = {0}, *want[4] = {0};
    OK(tt_compiled_call(c, in, got));
    OK(fn(in, nin, want, nout, ud));
    for (int i = 0; i < nout; i++) {
        ck_assert(!tt_is_fake(got[i]));
        char w[128];
        snprintf(w, sizeof w, "%s: output %d", what, i);
        assert_same(got[i], want[i], w);
        tt_release(got[i]);
        tt_release(want[i]);
    }
}

static void release_all(tt_tensor **t, int n)
{
    for (int i = 0; i < n; i++)
        t[i] = tt_release(t[i]);
}

/* One call of an out-of-memory sweep: tt_trace, tt_explain_run or
 * tt_compiled_call, and what it made. */
enum { CALL_TRACE, CALL_EXPLAIN, CALL_COMPILED };
typedef struct {
    int kind;
    tt_fn fn;
    int nin;
    tt_tensor **in;
    const tt_trace_opts *opts;
    tt_compiled *c; /* CALL_COMPILED */
    tt_tensor **got; /* its outputs */
    tt_graph *g;
    tt_explain *e;
} oom_call;

/* Runs k with allocation request n failing (n = 0: none, and *total gets
 * the requests the successful call makes). A failed call must fail with
 * TT_ENOMEM. */
static tt_status oom_run(oom_call *k, int64_t n, int64_t *total, const char *label)
{
    int64_t before = tt_debug_alloc_count();
    tt_debug_fail_alloc(n);
    tt_status st;
    if (k->kind == CALL_TRACE)
        st = (k->g = tt_trace(k->fn, k->nin, k->in, k->opts)) ? TT_OK : tt_errcode();
    else if (k->kind == CALL_EXPLAIN)
        st = (k->e = tt_explain_run(k->fn, k->nin, k->in, k->opts)) ? TT_OK : tt_errcode();
    else
        st = tt_compiled_call(k->c, k->in, k->got);
    tt_debug_fail_alloc(0);
    if (n == 0) {
        *total = tt_debug_alloc_count() - before;
        OK(st);
    }
    if (st)
        ck_assert_msg(st == TT_ENOMEM, "%s/%lld: %s: %s", label, (long long)n,
                      tt_status_name(st), tt_errmsg());
    return st;
}

/* ============================================================ custom ops */

static tt_library *lib;
static const tt_op *twice_op, *sin_op, *counted_op;
static int counted_runs; /* real kernel runs of mylib::counted */

/* mylib::counted(Tensor x) -> Tensor: x * 3, counting its real runs. */
static tt_status counted_kernel(tt_frame *f)
{
    tt_tensor *x;
    tt_status st = tt_arg_tensor(f, 0, &x);
    if (st)
        return st;
    if (!tt_is_fake(x))
        counted_runs++;
    return tt_return(f, 0, tt_mul_scalar(x, 3));
}

static void ops_setup(void)
{
    tt_test_setup();
    tt_sym_reset();
    counted_runs = 0;
    lib = NN(tt_library_new(TT_LIB_DEF, "mylib"));
    twice_op = tt_test_define_twice(lib);
    sin_op = NN(tt_custom_op_define(lib, &(tt_custom_op_spec){
        .schema = "mylib::numpy_sin(Tensor input, Tensor(a!) output) -> ()",
        .kernel = tutorial_numpy_sin_kernel,
    }));
    counted_op = NN(tt_custom_op_define(lib, &(tt_custom_op_spec){
        .schema = "mylib::counted(Tensor x) -> Tensor",
        .mutates_args = "",
        .kernel = counted_kernel,
        .fake = counted_kernel, /* its metadata path runs no counter */
    }));
}

static void ops_teardown(void)
{
    lib = tt_library_free(lib);
    tt_test_teardown();
}

/* ======================================================= traced functions */

/* ud points at an int counting the runs. */
static void count_run(void *ud)
{
    if (ud)
        (*(int *)ud)++;
}

/* sin((x + y) * x) - y / 2 */
static tt_status elementwise(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    count_run(ud);
    tt_scope_begin();
    tt_tensor *a = tt_add(in[0], in[1]);
    tt_tensor *b = a ? tt_mul(a, in[0]) : NULL;
    tt_tensor *s = b ? tt_sin(b) : NULL;
    tt_tensor *h = s ? tt_div_scalar(in[1], 2) : NULL;
    out[0] = tt_keep(h ? tt_sub(s, h) : NULL);
    tt_scope_end();
    return out[0] ? TT_OK : tt_errcode();
}

/* relu(x @ w + b) @ w2 */
static tt_status matmul_model(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    count_run(ud);
    tt_scope_begin();
    tt_tensor *h = tt_matmul(in[0], in[1]);
    tt_tensor *hb = h ? tt_add(h, in[2]) : NULL;
    tt_tensor *r = hb ? tt_relu(hb) : NULL;
    out[0] = tt_keep(r ? tt_matmul(r, in[3]) : NULL);
    tt_scope_end();
    return out[0] ? TT_OK : tt_errcode();
}

/* softmax(x, 1) summed over dim 0, plus mean(x) * amax(x) over dim 1
 * (keepdim), and a second output: sum of everything. */
static tt_status reduction_model(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    count_run(ud);
    tt_scope_begin();
    tt_tensor *x = in[0];
    tt_tensor *sm = tt_softmax(x, 1);
    tt_tensor *s0 = sm ? tt_sum(sm, 1, (int64_t[]){0}, false) : NULL;
    tt_tensor *mean = tt_mean(x, 1, (int64_t[]){1}, true);
    tt_tensor *mx = tt_amax(x, 1, (int64_t[]){1}, true);
    tt_tensor *mm = mean && mx ? tt_mul(mean, mx) : NULL;
    tt_tensor *ls = tt_log_softmax(x, 0);
    tt_tensor *o = s0 && mm ? tt_add(mm, s0) : NULL; /* [N,1] + [M]: [N, M] */
    out[0] = tt_keep(o && ls ? tt_add(o, ls) : NULL);
    out[1] = tt_keep(tt_sum_all(x));
    tt_scope_end();
    return out[0] && out[1] ? TT_OK : tt_errcode();
}

/* ================================================================= cache */

START_TEST(test_cache_hits_and_misses)
{
    int runs = 0;
    tt_compiled *c = NN(tt_compile(elementwise, 2, 1, &(tt_trace_opts){.ud = &runs}));
    CHECK_STATS(c, 0, 0, 0, 0, runs, 0);
    ck_assert_ptr_null(tt_compiled_graph(c, 0));
    tt_tensor *in[2] = {NN(tt_randn(TT_SHAPE(4, 5), TT_F32)), NN(tt_randn(TT_SHAPE(4, 5), TT_F32))};
    tt_tensor *got = NULL;
    OK(tt_compiled_call(c, in, &got));
    CHECK_STATS(c, 1, 0, 1, 1, runs, 1); /* traced once */
    assert_last_miss(c, "first call");
    tt_release(got);
    const tt_graph *g = NN(tt_compiled_graph(c, 0));
    ck_assert_int_eq(tt_graph_num_inputs(g), 2);
    ck_assert_int_eq(tt_graph_count_op(g, "tt::sin"), 1);
    ck_assert_ptr_null(tt_compiled_graph(c, 1));
    ck_assert_ptr_null(tt_compiled_graph(c, -1));
    /* New values, same signature: replayed, the function does not run. */
    for (int i = 0; i < 3; i++) {
        tt_tensor *x[2] = {NN(tt_randn(TT_SHAPE(4, 5), TT_F32)), NN(tt_randn(TT_SHAPE(4, 5), TT_F32))};
        int before = runs;
        OK(tt_compiled_call(c, x, &got));
        ck_assert_int_eq(runs, before);
        tt_tensor *want;
        OK(elementwise(x, 2, &want, 1, NULL));
        assert_same(got, want, "replay");
        tt_release(want);
        tt_release(got);
        release_all(x, 2);
    }
    CHECK_STATS(c, 4, 3, 1, 1, runs, 1);
    /* Another size: a second plan, with the failed guard named. */
    tt_tensor *w[2] = {NN(tt_randn(TT_SHAPE(4, 6), TT_F32)), NN(tt_randn(TT_SHAPE(4, 6), TT_F32))};
    check_vs_eager(c, elementwise, w, 2, 1, NULL, "size 4x6");
    CHECK_STATS(c, 5, 3, 2, 2, runs, 2); /* traced again (eager runs count nothing) */
    assert_last_miss(c, "in0.size(1) == 5 (got 6)");
    ck_assert_ptr_nonnull(tt_compiled_graph(c, 1));
    /* Both plans stay cached. */
    check_vs_eager(c, elementwise, in, 2, 1, NULL, "back to 4x5");
    check_vs_eager(c, elementwise, w, 2, 1, NULL, "back to 4x6");
    CHECK_STATS(c, 7, 5, 2, 2, runs, 2);
    /* Only the second input changes. */
    tt_tensor *y = NN(tt_randn(TT_SHAPE(1, 5), TT_F32));
    check_vs_eager(c, elementwise, (tt_tensor *[]){in[0], y}, 2, 1, NULL, "broadcast y");
    CHECK_STATS(c, 8, 5, 3, 3, runs, 3);
    /* With two plans, the reason is the newest plan's. */
    assert_last_miss(c, "in0.size(1) == 6 (got 5)");
    tt_release(y);
    release_all(w, 2);
    release_all(in, 2);
    tt_compiled_free(c);
}
END_TEST

/* One plan traced on contiguous f32 [4, 5] inputs; each other signature
 * misses with its own reason. */
START_TEST(test_guard_reasons)
{
    static const char *want[] = {
        "in0.dtype == f32 (got f64)",
        "in0.stride(0) == 5 (got 1)",
        "in0.dim() == 2 (got 3)",
        "in1.requires_grad == False (got True)",
        "in0.stride(0) == 5 (got 10)",
    };
    for (int k = 0; k < 5; k++) {
        int runs = 0;
        tt_compiled *c = NN(tt_compile(elementwise, 2, 1, &(tt_trace_opts){.ud = &runs}));
        tt_tensor *in[2] = {NN(tt_randn(TT_SHAPE(4, 5), TT_F32)), NN(tt_randn(TT_SHAPE(4, 5), TT_F32))};
        tt_tensor *got;
        OK(tt_compiled_call(c, in, &got));
        tt_release(got);
        tt_tensor *base = NULL, *x[2] = {tt_retain(in[0]), tt_retain(in[1])};
        switch (k) {
        case 0: /* dtype */
            tt_release(x[0]);
            x[0] = NN(tt_randn(TT_SHAPE(4, 5), TT_F64));
            break;
        case 1: /* a transposed view: same sizes, other strides */
            tt_release(x[0]);
            base = NN(tt_randn(TT_SHAPE(5, 4), TT_F32));
            x[0] = NN(tt_t(base));
            break;
        case 2: /* rank */
            tt_release(x[0]);
            x[0] = NN(tt_randn(TT_SHAPE(1, 4, 5), TT_F32));
            break;
        case 3: /* requires_grad */
            tt_release(x[1]);
            x[1] = NN(tt_randn(TT_SHAPE(4, 5), TT_F32));
            OK(tt_set_requires_grad(x[1], true));
            break;
        default: /* a strided slice */
            tt_release(x[0]);
            base = NN(tt_randn(TT_SHAPE(4, 10), TT_F32));
            x[0] = NN(tt_slice(base, 1, 0, 10, 2));
            break;
        }
        tt_tensor *want_t;
        OK(tt_compiled_call(c, x, &got));
        CHECK_STATS(c, 2, 0, 2, 2, runs, 2);
        assert_last_miss(c, want[k]);
        tt_no_grad_begin();
        OK(elementwise(x, 2, &want_t, 1, NULL));
        tt_no_grad_end();
        assert_same(got, want_t, want[k]);
        tt_release(got);
        tt_release(want_t);
        release_all(x, 2);
        tt_release(base);
        release_all(in, 2);
        tt_compiled_free(c);
    }
}
END_TEST

START_TEST(test_outputs_equal_eager)
{
    /* elementwise, matmul and reductions, each on fresh inputs three times:
     * the first call traces, the others replay; all equal eager. */
    for (int trial = 0; trial < 3; trial++) {
        int runs = 0;
        tt_compiled *c = NN(tt_compile(matmul_model, 4, 1, &(tt_trace_opts){.ud = &runs}));
        for (int i = 0; i < 3; i++) {
            tt_tensor *in[4] = {NN(tt_randn(TT_SHAPE(8, 16), TT_F32)),
                                NN(tt_randn(TT_SHAPE(16, 32), TT_F32)),
                                NN(tt_randn(TT_SHAPE(32), TT_F32)),
                                NN(tt_randn(TT_SHAPE(32, 4), TT_F32))};
            check_vs_eager(c, matmul_model, in, 4, 1, NULL, "matmul model");
            release_all(in, 4);
        }
        CHECK_STATS(c, 3, 2, 1, 1, runs, 1);
        tt_compiled_free(c);
        runs = 0;
        c = NN(tt_compile(reduction_model, 1, 2, &(tt_trace_opts){.ud = &runs}));
        for (int i = 0; i < 3; i++) {
            tt_tensor *x = NN(tt_randn(TT_SHAPE(6, 9), trial == 1 ? TT_F64 : TT_F32));
            check_vs_eager(c, reduction_model, &x, 1, 2, NULL, "reduction model");
            tt_release(x);
        }
        CHECK_STATS(c, 3, 2, 1, 1, runs, 1);
        tt_compiled_free(c);
    }
}
END_TEST

START_TEST(test_scope_and_outputs)
{
    /* In a scope, the outputs belong to it, as an eager result would: the
     * scope's end frees them (the plan holds no reference). */
    tt_compiled *c = NN(tt_compile(elementwise, 2, 1, NULL));
    tt_tensor *in[2] = {NN(tt_randn(TT_SHAPE(3, 3), TT_F32)), NN(tt_randn(TT_SHAPE(3, 3), TT_F32))};
    tt_tensor *warm;
    OK(tt_compiled_call(c, in, &warm)); /* the plan (and its graph's values) exists */
    tt_release(warm);
    int64_t live = tt_live_tensors();
    for (int i = 0; i < 2; i++) {
        tt_scope_begin();
        tt_tensor *got;
        OK(tt_compiled_call(c, in, &got));
        ck_assert_int_eq(tt_live_tensors(), live + 1);
        tt_scope_end(); /* released here */
        ck_assert_int_eq(tt_live_tensors(), live);
    }
    /* A kept output survives its scope, and the caller's release frees it. */
    tt_scope_begin();
    tt_tensor *got;
    OK(tt_compiled_call(c, in, &got));
    tt_keep(got);
    tt_scope_end();
    ck_assert_int_eq(tt_live_tensors(), live + 1);
    tt_release(got);
    ck_assert_int_eq(tt_live_tensors(), live);
    release_all(in, 2);
    tt_compiled_free(c);
}
END_TEST

/* ============================================================== symbolic */

/* reshape to [numel] (a symbolic size argument), * 2, view back */
static tt_status flat_model(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    count_run(ud);
    tt_scope_begin();
    tt_tensor *x = in[0];
    tt_size n = tt_numel(x);
    tt_tensor *f = tt_reshape(x, 1, &n);
    tt_tensor *m = f ? tt_mul_scalar(f, 2) : NULL;
    tt_tensor *v = m ? tt_view(m, tt_ndim(x), tt_sizes(x)) : NULL;
    tt_tensor *s = v ? tt_sum(v, 1, (int64_t[]){0}, true) : NULL;
    out[0] = tt_keep(s && v ? tt_sub(v, s) : NULL);
    tt_scope_end();
    return out[0] ? TT_OK : tt_errcode();
}

START_TEST(test_symbolic_reuses_one_plan)
{
    int runs = 0;
    tt_compiled *c = NN(tt_compile(flat_model, 1, 1,
                                   &(tt_trace_opts){.mode = TT_TRACE_SYMBOLIC, .ud = &runs}));
    static const int64_t sizes[][2] = {{4, 5}, {7, 3}, {9, 11}, {2, 2}, {30, 17}};
    for (int i = 0; i < 5; i++) {
        tt_tensor *x = NN(tt_randn(TT_SHAPE(sizes[i][0], sizes[i][1]), TT_F32));
        check_vs_eager(c, flat_model, &x, 1, 1, NULL, "symbolic replay");
        tt_release(x);
    }
    CHECK_STATS(c, 5, 4, 1, 1, runs, 1);
    const tt_graph *g = NN(tt_compiled_graph(c, 0));
    char *text = NN(tt_graph_to_text(g));
    ck_assert_msg(strstr(text, "in0: \"f32[s0, s1]\"") && strstr(text, "tt::reshape(in0, [s0*s1])"),
                  "%s", text);
    free(text);
    /* dtype and layout still guard. */
    tt_tensor *base = NN(tt_randn(TT_SHAPE(5, 4), TT_F32)), *xt = NN(tt_t(base));
    check_vs_eager(c, flat_model, &xt, 1, 1, NULL, "transposed");
    CHECK_STATS(c, 6, 4, 2, 2, runs, 2);
    assert_last_miss(c, "in0.stride(1) == 1 (got 4; the plan is for the traced layout)");
    tt_release(xt);
    tt_release(base);
    tt_tensor *d = NN(tt_randn(TT_SHAPE(3, 3), TT_F64));
    check_vs_eager(c, flat_model, &d, 1, 1, NULL, "f64");
    assert_last_miss(c, "in0.dtype == f32 (got f64)");
    tt_release(d);
    tt_compiled_free(c);
}
END_TEST

/* x + w: x's sizes vary, w's do not. */
static tt_status xw_model(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    count_run(ud);
    out[0] = tt_add(in[0], in[1]);
    return out[0] ? TT_OK : tt_errcode();
}

/* dynamic_inputs = 1: only input 0 gets symbols; input 1 (a parameter)
 * keeps its sizes, and another size of it is a guard miss. */
START_TEST(test_symbolic_dynamic_inputs)
{
    int runs = 0;
    tt_compiled *c = NN(tt_compile(xw_model, 2, 1,
                                   &(tt_trace_opts){.mode = TT_TRACE_SYMBOLIC, .ud = &runs,
                                                    .dynamic_inputs = 1}));
    tt_tensor *w = NN(tt_randn(TT_SHAPE(3, 4), TT_F32));
    for (int n = 2; n < 5; n++) {
        tt_tensor *x = NN(tt_randn(TT_SHAPE(n, 3, 4), TT_F32));
        check_vs_eager(c, xw_model, (tt_tensor *[]){x, w}, 2, 1, NULL, "dynamic x");
        tt_release(x);
    }
    CHECK_STATS(c, 3, 2, 1, 1, runs, 1);
    char *text = NN(tt_graph_to_text(NN(tt_compiled_graph(c, 0))));
    ck_assert_msg(strstr(text, "in0: \"f32[s0, s1, s2]\"") && strstr(text, "in1: \"f32[3, 4]\""),
                  "%s", text);
    free(text);
    tt_tensor *w5 = NN(tt_randn(TT_SHAPE(3, 5), TT_F32));
    tt_tensor *x = NN(tt_randn(TT_SHAPE(2, 3, 5), TT_F32));
    check_vs_eager(c, xw_model, (tt_tensor *[]){x, w5}, 2, 1, NULL, "another w");
    assert_last_miss(c, "in1.size(1) == 4 (got 5; the plan specialized it)");
    tt_release(x);
    tt_release(w5);
    tt_release(w);
    tt_compiled_free(c);
}
END_TEST

/* sin(x) when x has fewer than 10 rows, else cos(x). */
static tt_status branchy(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    count_run(ud);
    out[0] = tt_size_lt(tt_dim_size(in[0], 0), 10) ? tt_sin(in[0]) : tt_cos(in[0]);
    return out[0] ? TT_OK : tt_errcode();
}

START_TEST(test_symbolic_guard)
{
    int runs = 0;
    tt_compiled *c = NN(tt_compile(branchy, 1, 1,
                                   &(tt_trace_opts){.mode = TT_TRACE_SYMBOLIC, .ud = &runs}));
    static const struct {
        int64_t rows;
        int hits, misses, runs;
        const char *miss;
    } steps[] = {
        {4, 0, 1, 1, "first call"},
        {7, 1, 1, 1, "first call"},
        {12, 1, 2, 2, "s0 < 10 (got 12 vs 10)"}, /* the other branch */
        {30, 2, 2, 2, NULL},
        {9, 3, 2, 2, NULL},
        {10, 4, 2, 2, NULL},
    };
    for (int i = 0; i < 6; i++) {
        tt_tensor *x = NN(tt_randn(TT_SHAPE(steps[i].rows, 3), TT_F32));
        tt_tensor *got;
        OK(tt_compiled_call(c, &x, &got));
        tt_tensor *want = NN(steps[i].rows < 10 ? tt_sin(x) : tt_cos(x));
        assert_same(got, want, "branch");
        tt_release(got);
        tt_release(want);
        tt_release(x);
        CHECK_STATS(c, i + 1, steps[i].hits, steps[i].misses, steps[i].misses, runs, steps[i].runs);
        if (steps[i].miss)
            assert_last_miss(c, steps[i].miss);
    }
    ck_assert_int_eq(tt_graph_count_op(tt_compiled_graph(c, 0), "tt::sin"), 1);
    ck_assert_int_eq(tt_graph_count_op(tt_compiled_graph(c, 1), "tt::cos"), 1);
    tt_compiled_free(c);
}
END_TEST

/* x + y when their row counts are equal, else x + the column sums of y
 * (broadcast); and a size turned into a plain integer (specialized). */
static tt_status eq_model(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    count_run(ud);
    tt_scope_begin();
    tt_tensor *y = in[1];
    if (!tt_size_eq(tt_dim_size(in[0], 0), tt_dim_size(in[1], 0)))
        y = tt_sum(in[1], 1, (int64_t[]){0}, true);
    out[0] = tt_keep(y ? tt_add(in[0], y) : NULL);
    tt_scope_end();
    return out[0] ? TT_OK : tt_errcode();
}

static tt_status int_model(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    count_run(ud);
    int64_t cols = tt_size_int(tt_dim_size(in[0], 1));
    out[0] = tt_mul_scalar(in[0], (double)cols);
    return out[0] ? TT_OK : tt_errcode();
}

START_TEST(test_symbolic_eq_and_int_guards)
{
    int runs = 0;
    tt_compiled *c = NN(tt_compile(eq_model, 2, 1,
                                   &(tt_trace_opts){.mode = TT_TRACE_SYMBOLIC, .ud = &runs}));
    tt_tensor *a = NN(tt_randn(TT_SHAPE(4, 3), TT_F32)), *b = NN(tt_randn(TT_SHAPE(4, 3), TT_F32));
    tt_tensor *a2 = NN(tt_randn(TT_SHAPE(6, 5), TT_F32)), *b2 = NN(tt_randn(TT_SHAPE(6, 5), TT_F32));
    tt_tensor *b3 = NN(tt_randn(TT_SHAPE(2, 3), TT_F32));
    check_vs_eager(c, eq_model, (tt_tensor *[]){a, b}, 2, 1, NULL, "equal rows");
    check_vs_eager(c, eq_model, (tt_tensor *[]){a2, b2}, 2, 1, NULL, "equal rows again");
    CHECK_STATS(c, 2, 1, 1, 1, runs, 1);
    check_vs_eager(c, eq_model, (tt_tensor *[]){a, b3}, 2, 1, NULL, "other rows");
    CHECK_STATS(c, 3, 1, 2, 2, runs, 2);
    tt_compile_stats s = stats_of(c);
    ck_assert_msg(strstr(s.last_miss, " == ") && strstr(s.last_miss, " (got 4 vs 2)"), "%s",
                  s.last_miss);
    tt_compiled_free(c);
    /* tt_size_int: a guard on the exact value. */
    runs = 0;
    c = NN(tt_compile(int_model, 1, 1, &(tt_trace_opts){.mode = TT_TRACE_SYMBOLIC, .ud = &runs}));
    tt_tensor *a3 = NN(tt_randn(TT_SHAPE(5, 3), TT_F32));
    check_vs_eager(c, int_model, &a, 1, 1, NULL, "cols 3");
    check_vs_eager(c, int_model, &a3, 1, 1, NULL, "other rows, cols 3");
    check_vs_eager(c, int_model, &a2, 1, 1, NULL, "cols 5");
    CHECK_STATS(c, 3, 1, 2, 2, runs, 2);
    s = stats_of(c);
    ck_assert_msg(strstr(s.last_miss, "== 3 (got 5 vs 3)"), "%s", s.last_miss);
    tt_compiled_free(c);
    tt_release(a);
    tt_release(b);
    tt_release(a2);
    tt_release(b2);
    tt_release(b3);
    tt_release(a3);
}
END_TEST

START_TEST(test_symbolic_specialization)
{
    int runs = 0;
    tt_compiled *c = NN(tt_compile(elementwise, 2, 1,
                                   &(tt_trace_opts){.mode = TT_TRACE_SYMBOLIC, .ud = &runs}));
    tt_tensor *one[2] = {NN(tt_randn(TT_SHAPE(1, 5), TT_F32)), NN(tt_randn(TT_SHAPE(1, 5), TT_F32))};
    tt_tensor *three[2] = {NN(tt_randn(TT_SHAPE(3, 5), TT_F32)), NN(tt_randn(TT_SHAPE(3, 5), TT_F32))};
    tt_tensor *two[2] = {NN(tt_randn(TT_SHAPE(2, 8), TT_F32)), NN(tt_randn(TT_SHAPE(2, 8), TT_F32))};
    tt_tensor *zero[2] = {NN(tt_randn(TT_SHAPE(0, 8), TT_F32)), NN(tt_randn(TT_SHAPE(0, 8), TT_F32))};
    check_vs_eager(c, elementwise, one, 2, 1, NULL, "size 1");
    check_vs_eager(c, elementwise, three, 2, 1, NULL, "size 3");
    CHECK_STATS(c, 2, 0, 2, 2, runs, 2);
    assert_last_miss(c, "in0.size(0) == 1 (got 3; the plan specialized it)");
    check_vs_eager(c, elementwise, one, 2, 1, NULL, "size 1 again");
    check_vs_eager(c, elementwise, two, 2, 1, NULL, "size 2 (the symbolic plan)");
    CHECK_STATS(c, 4, 2, 2, 2, runs, 2);
    check_vs_eager(c, elementwise, zero, 2, 1, NULL, "size 0");
    CHECK_STATS(c, 5, 2, 3, 3, runs, 3);
    assert_last_miss(c, "in0.size(0) >= 2 (got 0; the plan's symbol for it assumes it)");
    release_all(one, 2);
    release_all(two, 2);
    release_all(three, 2);
    release_all(zero, 2);
    tt_compiled_free(c);
}
END_TEST

/* ================================================================ breaks */

static int line_read;

/* Doubles x through its data: a graph break. */
static tt_status reads_data(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    count_run(ud);
    tt_tensor *x = tt_contiguous(in[0]);
    if (!x)
        return tt_errcode();
    line_read = __LINE__; const float *p = tt_data(x);
    if (!p) {
        tt_release(x);
        return tt_errcode();
    }
    int64_t n = tt_numel(x);
    float *buf = malloc(sizeof(float) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++)
        buf[i] = 2 * p[i];
    tt_tensor *d = tt_from_data(tt_ndim(x), tt_sizes(x), TT_F32, buf);
    free(buf);
    out[0] = d ? tt_add(d, x) : NULL;
    tt_release(d);
    tt_release(x);
    return out[0] ? TT_OK : tt_errcode();
}

static tt_status calls_twice(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    count_run(ud);
    tt_tensor *t = tt_call(twice_op, tt_v_tensor(in[0]));
    out[0] = t ? tt_neg(t) : NULL;
    tt_release(t);
    return out[0] ? TT_OK : tt_errcode();
}

START_TEST(test_fullgraph_break)
{
    int runs = 0;
    tt_compiled *c = NN(tt_compile(reads_data, 1, 1,
                                   &(tt_trace_opts){.fullgraph = true, .ud = &runs}));
    tt_tensor *x = NN(tt_randn(TT_SHAPE(2, 3), TT_F32)), *got = (tt_tensor *)&runs;
    for (int i = 1; i <= 2; i++) {
        ck_assert_int_eq(tt_compiled_call(c, &x, &got), TT_EGRAPHBREAK);
        ck_assert_ptr_null(got);
        char where[256];
        snprintf(where, sizeof where, "User code: %s:%d in reads_data()", __FILE__, line_read);
        ck_assert_error(TT_EGRAPHBREAK, "Graph break: data read\n");
        ck_assert_error(TT_EGRAPHBREAK, where);
        /* Each call tries again: nothing is cached, nothing ran eagerly. */
        tt_compile_stats s = stats_of(c);
        ck_assert_int_eq(s.misses, i);
        ck_assert_int_eq(s.graph_breaks, i);
        ck_assert_int_eq(s.plans, 0);
        ck_assert_int_eq(s.eager_calls, 0);
        ck_assert_int_eq(runs, i);
    }
    tt_compiled_free(c);
    tt_release(x);
}
END_TEST

START_TEST(test_break_runs_eagerly)
{
    tt_fn fns[2] = {reads_data, calls_twice};
    for (int k = 0; k < 2; k++) {
        int runs = 0;
        tt_compiled *c = NN(tt_compile(fns[k], 1, 1, &(tt_trace_opts){.ud = &runs}));
        for (int i = 1; i <= 3; i++) {
            tt_tensor *x = NN(tt_randn(TT_SHAPE(3, 4), TT_F32)), *got, *want;
            OK(tt_compiled_call(c, &x, &got));
            OK(fns[k](&x, 1, &want, 1, NULL));
            assert_same(got, want, "eager fallback");
            tt_release(got);
            tt_release(want);
            tt_release(x);
            /* The first call traces (and breaks), then runs eagerly; the
             * later ones run eagerly without tracing again. */
            tt_compile_stats s = stats_of(c);
            ck_assert_int_eq(s.calls, i);
            ck_assert_int_eq(s.eager_calls, i);
            ck_assert_int_eq(s.misses, 1);
            ck_assert_int_eq(s.hits, 0);
            ck_assert_int_eq(s.graph_breaks, 1);
            ck_assert_int_eq(s.plans, 0);
            ck_assert_int_eq(runs, i + 1);
        }
        ck_assert_int_eq(tt_errcode(), TT_OK);
        tt_compiled_free(c);
    }
}
END_TEST

/* ========================================================= training step */

/* tt_test_train_step with lr = 0.5. */
static tt_status train_step(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    count_run(ud);
    return tt_test_train_step(in[0], in[1], in[2], 0.5, &out[0]);
}

/* A 2-layer MLP step: logits = relu(x @ w1 + b1) @ w2 + b2;
 * loss = cross_entropy(logits, labels); SGD on the four parameters. */
static tt_status mlp_step(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    count_run(ud);
    tt_scope_begin();
    tt_tensor *x = in[4], *labels = in[5];
    tt_tensor *h = tt_matmul(x, in[0]);
    tt_tensor *hb = h ? tt_add(h, in[1]) : NULL;
    tt_tensor *a = hb ? tt_relu(hb) : NULL;
    tt_tensor *o = a ? tt_matmul(a, in[2]) : NULL;
    tt_tensor *logits = o ? tt_add(o, in[3]) : NULL;
    tt_tensor *loss = logits ? tt_cross_entropy(logits, labels) : NULL;
    tt_status st = loss ? tt_backward(loss, NULL) : tt_errcode();
    if (!st)
        st = tt_test_sgd(in, 4, 0.1);
    out[0] = st ? NULL : tt_keep(loss);
    tt_scope_end();
    return st;
}

/* Runs `steps` steps of fn through c and eagerly from the same initial
 * parameters (in[0..nparams-1], which require grad) and compares the losses
 * and the parameters after each step. */
static void run_training(tt_compiled *c, tt_fn fn, tt_tensor **init, int nin, int nparams,
                         int steps, double rtol)
{
    tt_tensor *ce[8], *ee[8];
    for (int i = 0; i < nin; i++) {
        ce[i] = NN(tt_clone(init[i]));
        ee[i] = NN(tt_clone(init[i]));
        if (i < nparams) {
            OK(tt_set_requires_grad(ce[i], true));
            OK(tt_set_requires_grad(ee[i], true));
        }
    }
    for (int s = 0; s < steps; s++) {
        tt_tensor *lc, *le;
        OK(tt_compiled_call(c, ce, &lc));
        OK(fn(ee, nin, &le, 1, NULL));
        char what[64];
        snprintf(what, sizeof what, "loss at step %d", s);
        assert_close(lc, le, rtol, what);
        for (int p = 0; p < nparams; p++) {
            snprintf(what, sizeof what, "parameter %d after step %d", p, s);
            assert_close(ce[p], ee[p], rtol, what);
        }
        tt_release(lc);
        tt_release(le);
    }
    /* The parameters moved. */
    for (int p = 0; p < nparams; p++) {
        double *a = tt_test_values(init[p]), *b = tt_test_values(ce[p]);
        bool moved = false;
        for (int64_t i = 0; i < tt_numel(init[p]); i++)
            moved |= a[i] != b[i];
        ck_assert_msg(moved, "parameter %d did not change", p);
        free(a);
        free(b);
    }
    release_all(ce, nin);
    release_all(ee, nin);
}

/* A fullgraph compile of fn run for `steps` steps: one trace, then
 * replays. */
static void check_training(tt_fn fn, tt_tensor **init, int nin, int nparams, int steps,
                           double rtol)
{
    int runs = 0;
    tt_compiled *c = NN(tt_compile(fn, nin, 1, &(tt_trace_opts){.fullgraph = true, .ud = &runs}));
    run_training(c, fn, init, nin, nparams, steps, rtol);
    CHECK_STATS(c, steps, steps - 1, 1, 1, runs, 1);
    tt_compiled_free(c);
}

START_TEST(test_training_step)
{
    tt_tensor *in[3] = {NN(tt_randn(TT_SHAPE(6, 5), TT_F32)), NN(tt_randn(TT_SHAPE(6, 5), TT_F32)),
                        NN(tt_randn(TT_SHAPE(6, 5), TT_F32))};
    check_training(train_step, in, 3, 1, 6, 1e-5);
    release_all(in, 3);
}
END_TEST

/* Symbolic: one plan serves every size, mean's backward dividing by the
 * symbolic element count. */
START_TEST(test_training_step_symbolic)
{
    int runs = 0;
    tt_compiled *c = NN(tt_compile(train_step, 3, 1, &(tt_trace_opts){
        .mode = TT_TRACE_SYMBOLIC, .fullgraph = true, .ud = &runs}));
    static const int64_t sizes[][2] = {{6, 5}, {3, 9}, {17, 2}};
    for (int k = 0; k < 3; k++) {
        tt_tensor *in[3];
        for (int i = 0; i < 3; i++)
            in[i] = NN(tt_randn(TT_SHAPE(sizes[k][0], sizes[k][1]), TT_F32));
        run_training(c, train_step, in, 3, 1, 3, 1e-5);
        release_all(in, 3);
    }
    CHECK_STATS(c, 9, 8, 1, 1, runs, 1);
    char *text = NN(tt_graph_to_text(tt_compiled_graph(c, 0)));
    ck_assert_msg(strstr(text, "tt::div.Scalar(expand, s") != NULL, "%s", text);
    free(text);
    tt_compiled_free(c);
}
END_TEST

static tt_tensor *randn_scaled(int64_t n, int64_t m, double scale)
{
    tt_tensor *r = NN(tt_randn(TT_SHAPE(n, m), TT_F32));
    tt_tensor *s = NN(tt_mul_scalar(r, scale));
    tt_release(r);
    return s;
}

START_TEST(test_training_step_mlp)
{
    int64_t labels[16];
    for (int i = 0; i < 16; i++)
        labels[i] = (i * 7) % 10;
    tt_tensor *in[6] = {
        randn_scaled(20, 32, 0.2),
        NN(tt_zeros(TT_SHAPE(32), TT_F32)),
        randn_scaled(32, 10, 0.2),
        NN(tt_zeros(TT_SHAPE(10), TT_F32)),
        NN(tt_randn(TT_SHAPE(16, 20), TT_F32)),
        NN(tt_from_data(TT_SHAPE(16), TT_I64, labels)),
    };
    check_training(mlp_step, in, 6, 4, 5, 1e-5);
    release_all(in, 6);
}
END_TEST

/* ================================================================ fusion */

/* Ten elementwise ops; out[1] (when asked) is an intermediate. */
static tt_status chain(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin;
    count_run(ud);
    tt_scope_begin();
    tt_tensor *x = in[0], *y = in[1];
    tt_tensor *a = tt_mul(x, y);                 /* 1 */
    tt_tensor *b = a ? tt_add(a, x) : NULL;      /* 2 */
    tt_tensor *c = b ? tt_mul_scalar(b, 0.75) : NULL; /* 3 */
    tt_tensor *d = c ? tt_tanh(c) : NULL;        /* 4 */
    tt_tensor *e = d ? tt_sub(d, y) : NULL;      /* 5 */
    tt_tensor *f = e ? tt_exp(e) : NULL;         /* 6 */
    tt_tensor *g = f ? tt_add_scalar(f, 1) : NULL; /* 7 */
    tt_tensor *h = g ? tt_sqrt(g) : NULL;        /* 8 */
    tt_tensor *i = h ? tt_div(h, g) : NULL;      /* 9 */
    tt_tensor *j = i ? tt_neg(i) : NULL;         /* 10 */
    out[0] = tt_keep(j);
    if (nout > 1)
        out[1] = tt_keep(e);
    tt_scope_end();
    return out[0] && (nout < 2 || out[1]) ? TT_OK : tt_errcode();
}

START_TEST(test_fused_chain_equals_eager)
{
    static const tt_dtype dts[] = {TT_F32, TT_F64};
    static const int64_t sizes[][2] = {{3, 7}, {300, 301}}; /* small, and > 65536 (parallel) */
    for (int nout = 1; nout <= 2; nout++)
        for (int d = 0; d < 2; d++)
            for (int s = 0; s < 2; s++) {
                int runs = 0;
                tt_compiled *c = NN(tt_compile(chain, 2, nout, &(tt_trace_opts){.ud = &runs}));
                for (int k = 0; k < 2; k++) {
                    tt_tensor *in[2] = {NN(tt_randn(TT_SHAPE(sizes[s][0], sizes[s][1]), dts[d])),
                                        NN(tt_randn(TT_SHAPE(sizes[s][0], sizes[s][1]), dts[d]))};
                    char what[64];
                    snprintf(what, sizeof what, "%s %lldx%lld nout %d",
                             tt_dtype_name(dts[d]), (long long)sizes[s][0],
                             (long long)sizes[s][1], nout);
                    check_vs_eager(c, chain, in, 2, nout, NULL, what);
                    release_all(in, 2);
                }
                CHECK_STATS(c, 2, 1, 1, 1, runs, 1);
                const tt_graph *g = tt_compiled_graph(c, 0);
                ck_assert_int_eq(tt_graph_count_op(g, "tt::neg"), 1);
                tt_compiled_free(c);
            }
}
END_TEST

/* ==================================================================== DCE */

static tt_status dead_op(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    count_run(ud);
    tt_tensor *dead = tt_call(counted_op, tt_v_tensor(in[0])); /* unused */
    tt_release(dead);
    out[0] = dead ? tt_sin(in[0]) : NULL;
    return out[0] ? TT_OK : tt_errcode();
}

static tt_status live_op(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    count_run(ud);
    tt_tensor *live = tt_call(counted_op, tt_v_tensor(in[0]));
    out[0] = live ? tt_sin(live) : NULL;
    tt_release(live);
    return out[0] ? TT_OK : tt_errcode();
}

/* An op that writes is kept even when nothing reads what it wrote. */
static tt_status dead_write(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    count_run(ud);
    tt_tensor *o = tt_empty_like(in[0]);
    tt_status st = o ? tt_op_call(sin_op, (tt_value[]){tt_v_tensor(in[0]), tt_v_tensor(o)}, 2,
                                  NULL, 0)
                     : tt_errcode();
    tt_release(o);
    out[0] = st ? NULL : tt_neg(in[0]);
    return st ? st : out[0] ? TT_OK : tt_errcode();
}

START_TEST(test_dead_code_does_not_run)
{
    tt_tensor *x = NN(tt_randn(TT_SHAPE(4, 4), TT_F32));
    tt_tensor *got, *want;
    /* Eagerly the op runs. */
    OK(dead_op(&x, 1, &want, 1, NULL));
    ck_assert_int_eq(counted_runs, 1);
    tt_release(want);
    counted_runs = 0;
    tt_compiled *c = NN(tt_compile(dead_op, 1, 1, NULL));
    for (int i = 0; i < 3; i++) {
        OK(tt_compiled_call(c, &x, &got));
        tt_release(got);
    }
    ck_assert_int_eq(counted_runs, 0); /* traced on fake tensors, then never replayed */
    ck_assert_int_eq(tt_graph_count_op(tt_compiled_graph(c, 0), "mylib::counted"), 0);
    ck_assert_int_eq(tt_graph_count_op(tt_compiled_graph(c, 0), "tt::sin"), 1);
    tt_compiled_free(c);
    /* Used, it runs on every replay. */
    c = NN(tt_compile(live_op, 1, 1, NULL));
    for (int i = 0; i < 3; i++)
        check_vs_eager(c, live_op, &x, 1, 1, NULL, "live custom op");
    ck_assert_int_eq(counted_runs, 6); /* 3 replays + 3 eager calls */
    tt_compiled_free(c);
    /* Writes are kept. */
    c = NN(tt_compile(dead_write, 1, 1, NULL));
    check_vs_eager(c, dead_write, &x, 1, 1, NULL, "dead write");
    ck_assert_int_eq(tt_graph_count_op(tt_compiled_graph(c, 0), "mylib::numpy_sin"), 1);
    tt_compiled_free(c);
    tt_release(x);
}
END_TEST

/* ============================================================= numpy_sin */

static tt_status sin_model(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    count_run(ud);
    tt_tensor *o = tt_empty(tt_ndim(in[0]), tt_sizes(in[0]), tt_dtype_of(in[0]));
    tt_status st = o ? tt_op_call(sin_op, (tt_value[]){tt_v_tensor(in[0]), tt_v_tensor(o)}, 2,
                                  NULL, 0)
                     : tt_errcode();
    if (st)
        o = tt_release(o);
    out[0] = o;
    return st;
}

START_TEST(test_numpy_sin_compiled)
{
    for (int mode = TT_TRACE_FAKE; mode <= TT_TRACE_SYMBOLIC; mode += TT_TRACE_SYMBOLIC) {
        int runs = 0;
        tt_compiled *c = NN(tt_compile(sin_model, 1, 1,
                                       &(tt_trace_opts){.mode = (tt_trace_mode)mode,
                                                        .fullgraph = true, .ud = &runs}));
        for (int i = 0; i < 3; i++) {
            tt_tensor *x = NN(tt_randn(TT_SHAPE(5, 7), TT_F32)), *got;
            OK(tt_compiled_call(c, &x, &got));
            double *g = tt_test_values(got), *v = tt_test_values(x);
            for (int k = 0; k < 35; k++)
                ck_assert_msg(g[k] == (double)sinf((float)v[k]), "element %d", k);
            free(g);
            free(v);
            tt_release(got);
            tt_release(x);
        }
        CHECK_STATS(c, 3, 2, 1, 1, runs, 1);
        tt_compiled_free(c);
    }
}
END_TEST

/* ================================================================ errors */

static tt_status fails(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    count_run(ud);
    out[0] = tt_matmul(in[0], in[0]); /* [2, 3] @ [2, 3] */
    return out[0] ? TT_OK : tt_errcode();
}

/* =========================================================== many inputs */

/* A training step takes every parameter, its gradient and its optimizer
 * moments as inputs (GPT-2 small: over 400) and may return as many
 * outputs: neither is capped. */
#define MANY 1000

/* out[0]: the sum of all inputs, added in order; out[k > 0]: 2 * in[k - 1]. */
static tt_status sum_all(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    count_run(ud);
    tt_scope_begin();
    tt_tensor *acc = tt_add(in[0], in[1]);
    for (int i = 2; i < nin && acc; i++)
        acc = tt_add(acc, in[i]);
    out[0] = tt_keep(acc);
    for (int k = 1; k < nout && out[k - 1]; k++)
        out[k] = tt_keep(tt_mul_scalar(in[k - 1], 2));
    /* The first failure stops the function, so its error is the one set. */
    tt_status st = out[nout - 1] ? TT_OK : tt_errcode();
    tt_scope_end();
    if (st)
        for (int k = 0; k < nout; k++)
            out[k] = tt_release(out[k]);
    return st;
}

/* n f32 inputs of shape [len] with distinct values. */
static tt_tensor **many_inputs(int n, int64_t len)
{
    tt_tensor **in = calloc((size_t)n, sizeof *in);
    ck_assert_ptr_nonnull(in);
    for (int i = 0; i < n; i++)
        in[i] = NN(tt_randn(TT_SHAPE(len), TT_F32));
    return in;
}

static void free_inputs(tt_tensor **in, int n)
{
    release_all(in, n);
    free(in);
}

/* Calls c on in (nout outputs) and sum_all eagerly: equal bit for bit
 * (the plan adds in the same order). */
static void check_many_vs_eager(tt_compiled *c, tt_tensor **in, int nin, int nout)
{
    tt_tensor **got = calloc((size_t)nout * 2, sizeof *got), **want = got + nout;
    ck_assert_ptr_nonnull(got);
    OK(tt_compiled_call(c, in, got));
    OK(sum_all(in, nin, want, nout, NULL));
    for (int k = 0; k < nout; k++) {
        char w[64];
        snprintf(w, sizeof w, "output %d of %d", k, nout);
        assert_same(got[k], want[k], w);
    }
    release_all(got, nout * 2);
    free(got);
}

START_TEST(test_many_inputs)
{
    tt_tensor **in = many_inputs(MANY, 3);
    /* Traced: one placeholder per input, MANY - 1 adds, the output. */
    tt_graph *g = NN(tt_trace(sum_all, MANY, in, NULL));
    ck_assert_int_eq(tt_graph_num_inputs(g), MANY);
    ck_assert_int_eq(tt_graph_num_nodes(g), MANY + MANY - 1 + 1);
    ck_assert_int_eq(tt_graph_num_outputs(g), 1);
    tt_graph_free(g);
    /* Explained: one graph, no break. */
    tt_explain *e = NN(tt_explain_run(sum_all, MANY, in, NULL));
    ck_assert_int_eq(tt_explain_graph_count(e), 1);
    ck_assert_int_eq(tt_explain_break_count(e), 0);
    ck_assert_int_eq(tt_graph_num_inputs(tt_explain_graph(e, 0)), MANY);
    tt_explain_free(e);
    /* Compiled (fake mode): traced once, then replayed, equal to eager. */
    int runs = 0;
    tt_compiled *c = NN(tt_compile(sum_all, MANY, 1, &(tt_trace_opts){.ud = &runs}));
    check_many_vs_eager(c, in, MANY, 1);
    check_many_vs_eager(c, in, MANY, 1);
    CHECK_STATS(c, 2, 1, 1, 1, runs, 1);
    tt_compiled_free(c);
    /* More outputs than inputs of most functions: 300. */
    c = NN(tt_compile(sum_all, MANY, 300, NULL));
    check_many_vs_eager(c, in, MANY, 300);
    tt_compiled_free(c);
    free_inputs(in, MANY);
}
END_TEST

/* Symbolic: every input's size is a symbol; the adds guard them equal, so
 * another size replays the same plan and a mismatch fails a guard. */
START_TEST(test_many_inputs_symbolic)
{
    tt_tensor **in = many_inputs(MANY, 3);
    int runs = 0;
    tt_compiled *c = NN(tt_compile(sum_all, MANY, 2,
                                   &(tt_trace_opts){.mode = TT_TRACE_SYMBOLIC, .ud = &runs}));
    check_many_vs_eager(c, in, MANY, 2);
    tt_tensor **in5 = many_inputs(MANY, 5);
    check_many_vs_eager(c, in5, MANY, 2);
    CHECK_STATS(c, 2, 1, 1, 1, runs, 1);
    /* One input of another size: a guard on the last input fails. */
    tt_release(in5[MANY - 1]);
    in5[MANY - 1] = NN(tt_randn(TT_SHAPE(4), TT_F32));
    tt_tensor *out[2] = {0};
    ck_assert_int_eq(tt_compiled_call(c, in5, out), TT_ESHAPE);
    ck_assert_ptr_null(out[0]);
    assert_last_miss(c, "s0 == s999 (got 5 vs 4)");
    tt_compiled_free(c);
    /* The parameters static (dynamic_inputs), as a training step has them. */
    c = NN(tt_compile(sum_all, MANY, 1,
                      &(tt_trace_opts){.mode = TT_TRACE_SYMBOLIC, .dynamic_inputs = 2}));
    check_many_vs_eager(c, in, MANY, 1);
    tt_compiled_free(c);
    free_inputs(in5, MANY);
    free_inputs(in, MANY);
}
END_TEST

/* Out of memory while tracing, explaining and compiling a function of 40
 * inputs (enough to grow the symbolic inputs' array twice): every request
 * a successful call makes fails in turn; each call then fails with
 * TT_ENOMEM (or gives the right result, where the failure is one the call
 * can do without) and leaves nothing alive. */
START_TEST(test_many_inputs_out_of_memory)
{
    enum { N = 40 };
    tt_tensor **in = many_inputs(N, 3), *want[2];
    OK(sum_all(in, N, want, 2, NULL));
    int64_t live = tt_live_tensors();
    /* tt_compile itself: the object and, symbolic, the bindings' arrays. */
    for (int k = 1; k <= 3; k++) {
        tt_debug_fail_alloc(k);
        tt_compiled *c = tt_compile(sum_all, N, 2, &(tt_trace_opts){.mode = TT_TRACE_SYMBOLIC});
        tt_debug_fail_alloc(0);
        ck_assert_ptr_null(c);
        ck_assert_error(TT_ENOMEM, "tt_compile: out of memory");
    }
    const char *labels[] = {"trace", "explain", "compiled", "compiled symbolic"};
    for (int what = 0; what < 4; what++) {
        int64_t total = 0, failed = 0;
        for (int64_t n = 0; n <= total; n++) {
            tt_trace_opts o = {.nout = 2, .mode = what == 3 ? TT_TRACE_SYMBOLIC : TT_TRACE_FAKE};
            tt_tensor *got[2] = {0};
            oom_call k = {.kind = what < CALL_COMPILED ? what : CALL_COMPILED, .fn = sum_all,
                          .nin = N, .in = in, .opts = &o, .got = got,
                          .c = what >= 2 ? NN(tt_compile(sum_all, N, 2, &o)) : NULL};
            if (oom_run(&k, n, &total, labels[what])) {
                failed++;
                ck_assert_ptr_null(got[0]);
            } else if (what == CALL_TRACE) {
                ck_assert_int_eq(tt_graph_num_inputs(k.g), N);
            } else if (what == CALL_EXPLAIN) {
                ck_assert_int_eq(tt_explain_break_count(k.e), 0);
            } else {
                assert_same(got[0], want[0], "sum");
                assert_same(got[1], want[1], "2 * in0");
            }
            tt_graph_free(k.g);
            tt_explain_free(k.e);
            release_all(got, 2);
            tt_compiled_free(k.c);
            ck_assert_msg(tt_live_tensors() == live, "%d/%lld: %lld tensors leaked", what,
                          (long long)n, (long long)(tt_live_tensors() - live));
        }
        ck_assert_int_gt(total, 2 * N);
        ck_assert_int_gt(failed, total / 2);
    }
    release_all(want, 2);
    free_inputs(in, N);
}
END_TEST

START_TEST(test_errors)
{
    ck_assert_ptr_null(tt_compile(NULL, 1, 1, NULL));
    ck_assert_error(TT_EINVAL, "tt_compile: expects a function, 0 to 238609294 inputs and 1 "
                               "or more outputs (got 1 and 1)");
    ck_assert_ptr_null(tt_compile(elementwise, -1, 1, NULL));
    ck_assert_error(TT_EINVAL, "(got -1 and 1)");
    ck_assert_ptr_null(tt_compile(elementwise, 268435456, 1, NULL));
    ck_assert_error(TT_EINVAL, "(got 268435456 and 1)");
    ck_assert_ptr_null(tt_compile(elementwise, 2, 0, NULL));
    ck_assert_error(TT_EINVAL, "1 or more outputs (got 2 and 0)");
    ck_assert_ptr_null(tt_compile(elementwise, 2, 1, &(tt_trace_opts){.mode = TT_TRACE_REAL}));
    ck_assert_error(TT_EINVAL, "tt_compile: argument 'opts' asks for a real-mode trace; compile "
                               "traces with fake or symbolic tensors");
    int runs = 0;
    tt_compiled *c = NN(tt_compile(elementwise, 2, 1, &(tt_trace_opts){.ud = &runs}));
    tt_tensor *x = NN(tt_randn(TT_SHAPE(2, 3), TT_F32)), *out = NULL;
    ck_assert_int_eq(tt_compiled_call(NULL, (tt_tensor *[]){x, x}, &out), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_compiled_call: argument 'compiled' is NULL");
    ck_assert_int_eq(tt_compiled_call(c, NULL, &out), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_compiled_call: argument 'inputs' is NULL");
    ck_assert_int_eq(tt_compiled_call(c, (tt_tensor *[]){x, x}, NULL), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_compiled_call: argument 'outputs' is NULL");
    ck_assert_int_eq(tt_compiled_call(c, (tt_tensor *[]){x, NULL}, &out), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_compiled_call: input 1 is NULL");
    ck_assert_ptr_null(out);
    CHECK_STATS(c, 0, 0, 0, 0, runs, 0); /* refused calls are not calls */
    tt_compiled_free(c);
    /* A function that fails while tracing: its error, nothing cached, and
     * the next call traces again. */
    runs = 0;
    c = NN(tt_compile(fails, 1, 1, &(tt_trace_opts){.ud = &runs}));
    for (int i = 1; i <= 2; i++) {
        ck_assert_int_eq(tt_compiled_call(c, &x, &out), TT_ESHAPE);
        ck_assert_error(TT_ESHAPE, "tt::matmul");
        ck_assert_ptr_null(out);
        CHECK_STATS(c, i, 0, i, 0, runs, i);
        ck_assert_int_eq(stats_of(c).eager_calls, 0);
    }
    tt_compiled_free(c);
    /* NULL-safe helpers. */
    ck_assert_ptr_null(tt_compiled_free(NULL));
    ck_assert_ptr_null(tt_compiled_graph(NULL, 0));
    tt_compile_stats s;
    memset(&s, 0x5a, sizeof s);
    tt_compiled_stats(NULL, &s);
    ck_assert_int_eq(s.calls, 0x5a5a5a5a5a5a5a5a);
    tt_release(x);
}
END_TEST

/* Fails the n-th allocation request of a compiled call, first while it
 * traces and then while it replays a cached plan, for every request a
 * successful call makes: each call gives the right output (a failure the
 * compiler can do without, such as a pass) or TT_ENOMEM with NULL
 * outputs, the compiled object stays usable, and freeing it leaves
 * nothing alive. */
START_TEST(test_out_of_memory)
{
    tt_tensor *in[4] = {NN(tt_randn(TT_SHAPE(8, 16), TT_F32)), NN(tt_randn(TT_SHAPE(16, 32), TT_F32)),
                        NN(tt_randn(TT_SHAPE(32), TT_F32)), NN(tt_randn(TT_SHAPE(32, 4), TT_F32))};
    tt_tensor *want;
    OK(matmul_model(in, 4, &want, 1, NULL));
    int64_t live = tt_live_tensors();
    for (int replay = 0; replay < 2; replay++) {
        int64_t total = 0, failed = 0;
        for (int64_t n = 0; n <= total; n++) {
            tt_compiled *c = NN(tt_compile(matmul_model, 4, 1, NULL));
            tt_tensor *got = NULL;
            if (replay) { /* a plan to replay */
                OK(tt_compiled_call(c, in, &got));
                got = tt_release(got);
            }
            oom_call k = {.kind = CALL_COMPILED, .c = c, .in = in, .got = &got};
            if (oom_run(&k, n, &total, replay ? "replay" : "trace")) {
                failed++;
                ck_assert_ptr_null(got);
                OK(tt_compiled_call(c, in, &got)); /* still usable */
            }
            assert_same(got, want, "compiled output");
            tt_release(got);
            ck_assert_int_eq(stats_of(c).plans, 1);
            tt_compiled_free(c);
            ck_assert_msg(tt_live_tensors() == live, "%d/%lld: %lld tensors leaked", replay,
                          (long long)n, (long long)(tt_live_tensors() - live));
        }
        ck_assert_int_gt(total, 2);
        ck_assert_int_gt(failed, total / 2);
    }
    tt_release(want);
    release_all(in, 4);
}
END_TEST

/* ================================================================ logging */

#define ASSERT_LOGGED(text, needle)                                            \
    ck_assert_msg(strstr((text), (needle)) != NULL, "no \"%s\" in the log:\n%s", (needle), \
                  (text))

/* TT_LOG=recompiles,guards as the README shows it: each plan's guards,
 * then the guard that failed when the batch size changes. */
START_TEST(test_log_recompiles_and_guards)
{
    tt_test_log_begin("recompiles,guards");
    tt_compiled *c = NN(tt_compile(elementwise, 2, 1, &(tt_trace_opts){.name = "mlp_step"}));
    tt_tensor *a[2] = {NN(tt_randn(TT_SHAPE(256, 4), TT_F32)), NN(tt_randn(TT_SHAPE(256, 4), TT_F32))};
    tt_tensor *b[2] = {NN(tt_randn(TT_SHAPE(128, 4), TT_F32)), NN(tt_randn(TT_SHAPE(128, 4), TT_F32))};
    tt_tensor *got;
    OK(tt_compiled_call(c, a, &got));
    tt_release(got);
    OK(tt_compiled_call(c, a, &got)); /* a hit: nothing logged */
    tt_release(got);
    OK(tt_compiled_call(c, b, &got));
    tt_release(got);
    char *text = tt_test_log_end();
    ASSERT_LOGGED(text, "guards mlp_step plan 1: in0: check_tensor(f32, requires_grad=False, "
                        "size=[256, 4], stride=[4, 1])\n");
    ASSERT_LOGGED(text, "guards mlp_step plan 1: in1: check_tensor(f32, ");
    ASSERT_LOGGED(text, "recompile mlp_step: guard failed: in0.size(0) == 256 (got 128)\n");
    ASSERT_LOGGED(text, "guards mlp_step plan 2: in0: check_tensor(f32, requires_grad=False, "
                        "size=[128, 4], stride=[4, 1])\n");
    ck_assert_int_eq(tt_test_count(text, "recompile "), 1);
    ck_assert(strstr(text, "perf ") == NULL); /* not asked for */
    free(text);
    tt_compiled_free(c);
    release_all(a, 2);
    release_all(b, 2);
}
END_TEST

/* clone(clone(x * 2)) + clone(x): the two clones of the fresh product
 * copy for nothing (the second reads what the first read), the clone of
 * an input does not. */
static tt_status clones(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_scope_begin();
    tt_tensor *m = tt_mul_scalar(in[0], 2);
    tt_tensor *c1 = m ? tt_clone(m) : NULL;
    tt_tensor *c2 = c1 ? tt_clone(c1) : NULL;
    tt_tensor *c3 = c2 ? tt_clone(in[0]) : NULL;
    out[0] = tt_keep(c3 ? tt_add(c2, c3) : NULL);
    tt_scope_end();
    return out[0] ? TT_OK : tt_errcode();
}

START_TEST(test_clone_elision)
{
    tt_test_log_begin("plan");
    tt_compiled *c = NN(tt_compile(clones, 1, 1, NULL));
    tt_tensor *x = NN(tt_randn(TT_SHAPE(3, 4), TT_F32)), *got, *want;
    OK(tt_compiled_call(c, &x, &got));
    OK(clones(&x, 1, &want, 1, NULL));
    assert_same(got, want, "clones");
    char *text = tt_test_log_end();
    ASSERT_LOGGED(text, "0 dead ops removed, 2 clones elided; ");
    free(text);
    tt_release(got);
    tt_release(want);
    tt_release(x);
    tt_compiled_free(c);
}
END_TEST

/* Clones of one result of a multi-result op: max_pool2d_with_indices'
 * values are read by their clone alone (which is then written in place),
 * so that copy goes; its indices are read by a clone and by the output,
 * so that clone stays. */
static tt_status multi_clones(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_tensor *ind = NULL;
    tt_scope_begin();
    tt_tensor *v = tt_max_pool2d_with_indices(in[0], &(tt_pool_opts){.kernel = {2, 2}}, &ind);
    tt_tensor *cv = v ? tt_clone(v) : NULL;
    tt_status st = cv ? tt_add_scalar_(cv, 1) : tt_errcode();
    tt_tensor *ci = st ? NULL : tt_clone(ind);
    out[0] = tt_keep(ci ? cv : NULL);
    out[1] = tt_keep(ci);
    out[2] = tt_keep(ci ? ind : NULL);
    tt_scope_end();
    return out[2] ? TT_OK : tt_errcode();
}

START_TEST(test_clone_elision_multi_result)
{
    tt_test_log_begin("plan");
    tt_compiled *c = NN(tt_compile(multi_clones, 1, 3, NULL));
    tt_tensor *x = NN(tt_randn(TT_SHAPE(2, 3, 4, 4), TT_F32)), *got[3], *want[3];
    OK(tt_compiled_call(c, &x, got));
    OK(multi_clones(&x, 1, want, 3, NULL));
    for (int i = 0; i < 3; i++)
        assert_same(got[i], want[i], "multi_clones");
    char *text = tt_test_log_end();
    ASSERT_LOGGED(text, "0 dead ops removed, 1 clones elided; ");
    free(text);
    release_all(got, 3);
    release_all(want, 3);
    tt_release(x);
    tt_compiled_free(c);
}
END_TEST

/* tt_backward inside a compiled function accumulates into its input
 * leaves' .grad; a replay would not, so such a function runs eagerly
 * (with a warning saying why) and the call leaves eager's .grad. */
static tt_status backward_leaves_grad(tt_tensor **in, int nin, tt_tensor **out, int nout,
                                      void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_tensor *y = tt_mul(in[0], in[0]), *l = y ? tt_sum_all(y) : NULL;
    tt_release(y);
    tt_status st = l ? tt_backward(l, NULL) : tt_errcode();
    out[0] = st ? tt_release(l) : l;
    return st;
}

START_TEST(test_grad_left_on_input_runs_eagerly)
{
    tt_test_log_begin("");
    tt_compiled *c = NN(tt_compile(backward_leaves_grad, 1, 1, &(tt_trace_opts){.fullgraph = true}));
    tt_tensor *x = NN(tt_from_data(TT_SHAPE(3), TT_F32, (const float[]){1, 2, 3})), *l;
    OK(tt_set_requires_grad(x, true));
    OK(tt_compiled_call(c, &x, &l));
    tt_tensor *g = NN(tt_get_grad(x)), *want = NN(tt_from_data(TT_SHAPE(3), TT_F32,
                                                               (const float[]){2, 4, 6}));
    tt_test_assert_same_bits(g, want, "x.grad after a compiled call");
    tt_compile_stats st;
    tt_compiled_stats(c, &st);
    ck_assert_int_eq(st.eager_calls, 1);
    char *text = tt_test_log_end();
    ASSERT_LOGGED(text, "the function left a gradient in in0's .grad (tt_backward accumulates "
                        "into leaf inputs), a side effect a compiled replay would not repeat");
    free(text);
    tt_release(g), tt_release(want), tt_release(l), tt_release(x);
    tt_compiled_free(c);
}
END_TEST

/* The other topics, and the topic list's errors. */
START_TEST(test_log_topics)
{
    ck_assert_int_eq(tt_set_log("guards,bogus"), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_set_log: argument 'topics' names 'bogus', which is no topic "
                               "(topics: graph_breaks, guards, recompiles, graph, plan, perf, "
                               "all)");
    tt_test_log_begin("all");
    tt_compiled *c = NN(tt_compile(elementwise, 2, 1, NULL));
    tt_tensor *a[2] = {NN(tt_randn(TT_SHAPE(3, 4), TT_F32)), NN(tt_randn(TT_SHAPE(3, 4), TT_F32))};
    tt_tensor *got;
    OK(tt_compiled_call(c, a, &got));
    tt_release(got);
    tt_compiled_free(c);
    /* Symbolic: the size comparisons are guards too. */
    c = NN(tt_compile(flat_model, 1, 1, &(tt_trace_opts){.mode = TT_TRACE_SYMBOLIC}));
    OK(tt_compiled_call(c, a, &got));
    tt_release(got);
    tt_compiled_free(c);
    /* A break, with explain. */
    tt_explain *e = NN(tt_explain_run(reads_data, 1, a, &(tt_trace_opts){.name = "reader"}));
    tt_explain_free(e);
    char *text = tt_test_log_end();
    ASSERT_LOGGED(text, "graph forward plan 1:\ndef forward(in0: \"f32[3, 4]\", in1: "
                        "\"f32[3, 4]\"):\n");
    ASSERT_LOGGED(text, "plan forward plan 1: passes: 0 in-place ops functionalized, 0 dead "
                        "ops removed, 0 clones elided; ");
    ASSERT_LOGGED(text, " fused kernels (5 ops), 7 buffers, ");
    ASSERT_LOGGED(text, "perf forward plan 1: traced in ");
    ASSERT_LOGGED(text, " ms, planned in ");
    ASSERT_LOGGED(text, "guards forward plan 1: in0: check_tensor(f32, requires_grad=False, "
                        "size=[s0, s1], stride=[s1, 1])\n");
    char line[256];
    snprintf(line, sizeof line, "graph_break reader: data read at %s:%d in reads_data(): "
                                "tt_data reads the data of", __FILE__, line_read);
    ASSERT_LOGGED(text, line);
    ASSERT_LOGGED(text, "perf reader: explain traced 2 graphs in ");
    free(text);
    /* Off: nothing. */
    tt_test_log_begin("");
    c = NN(tt_compile(elementwise, 2, 1, NULL));
    OK(tt_compiled_call(c, a, &got));
    tt_release(got);
    tt_compiled_free(c);
    text = tt_test_log_end();
    ck_assert_str_eq(text, "");
    free(text);
    release_all(a, 2);
}
END_TEST

/* Past its recompile limit a compiled function runs new signatures
 * eagerly, with one warning naming the guard that keeps failing; the
 * plans it has are still replayed. */
START_TEST(test_recompile_limit)
{
    tt_test_log_begin("");
    int runs = 0;
    /* ud counts runs, which the plans never read: no ud warning. */
    tt_compiled *c = NN(tt_compile(elementwise, 2, 1, &(tt_trace_opts){.name = "step",
                                                                      .recompile_limit = 2,
                                                                      .ud = &runs,
                                                                      .ud_constant = true}));
    for (int rows = 1; rows <= 5; rows++) {
        tt_tensor *in[2] = {NN(tt_randn(TT_SHAPE(rows, 3), TT_F32)),
                            NN(tt_randn(TT_SHAPE(rows, 3), TT_F32))};
        check_vs_eager(c, elementwise, in, 2, 1, NULL, "past the limit");
        release_all(in, 2);
    }
    tt_compile_stats s = stats_of(c);
    ck_assert_int_eq(s.plans, 2);
    ck_assert_int_eq(s.misses, 5);
    ck_assert_int_eq(s.eager_calls, 3);
    ck_assert(s.at_recompile_limit);
    tt_tensor *again[2] = {NN(tt_randn(TT_SHAPE(2, 3), TT_F32)), NN(tt_randn(TT_SHAPE(2, 3), TT_F32))};
    check_vs_eager(c, elementwise, again, 2, 1, NULL, "a cached signature");
    ck_assert_int_eq(stats_of(c).hits, 1);
    release_all(again, 2);
    tt_compiled_free(c);
    char *text = tt_test_log_end();
    ck_assert_int_eq(tt_test_count(text, "warning "), 1);
    ASSERT_LOGGED(text, "warning step: hit the recompile limit (2 plans): calls that fail every "
                        "plan's guards run eagerly from now on; the guard that keeps failing: "
                        "in0.size(0) == 2 (got 3)\n");
    free(text);
    /* The default is dynamo's 8. */
    c = NN(tt_compile(elementwise, 2, 1, NULL));
    for (int rows = 1; rows <= 9; rows++) {
        tt_tensor *in[2] = {NN(tt_randn(TT_SHAPE(rows, 2), TT_F32)),
                            NN(tt_randn(TT_SHAPE(rows, 2), TT_F32))};
        tt_tensor *got;
        tt_test_log_begin("");
        OK(tt_compiled_call(c, in, &got));
        free(tt_test_log_end());
        tt_release(got);
        release_all(in, 2);
    }
    ck_assert_int_eq(stats_of(c).plans, 8);
    ck_assert_int_eq(stats_of(c).eager_calls, 1);
    tt_compiled_free(c);
}
END_TEST

/* Without fullgraph a function that breaks the graph falls back to eager
 * once, and says so once, with the break's line. */
START_TEST(test_eager_fallback_warns_once)
{
    tt_test_log_begin("");
    tt_compiled *c = NN(tt_compile(reads_data, 1, 1, &(tt_trace_opts){.name = "reader"}));
    for (int i = 0; i < 3; i++) {
        tt_tensor *x = NN(tt_randn(TT_SHAPE(2, 2), TT_F32)), *got;
        OK(tt_compiled_call(c, &x, &got));
        tt_release(got);
        tt_release(x);
    }
    tt_compiled_free(c);
    char *text = tt_test_log_end();
    char want[512];
    snprintf(want, sizeof want, "warning reader: graph break (data read at %s:%d in "
                                "reads_data()): without fullgraph the function runs eagerly "
                                "from now on\n", __FILE__, line_read);
    ck_assert_str_eq(text, want);
    free(text);
}
END_TEST

/* Named inputs: the graph's placeholders and the guard messages use them. */
START_TEST(test_input_names)
{
    static const char *const names[] = {"x", "bias"};
    tt_compiled *c = NN(tt_compile(elementwise, 2, 1, &(tt_trace_opts){.input_names = names}));
    tt_tensor *a[2] = {NN(tt_randn(TT_SHAPE(2, 3), TT_F32)), NN(tt_randn(TT_SHAPE(2, 3), TT_F32))};
    tt_tensor *b[2] = {NN(tt_randn(TT_SHAPE(2, 3), TT_F32)), NN(tt_randn(TT_SHAPE(2, 3), TT_F64))};
    tt_tensor *got;
    OK(tt_compiled_call(c, a, &got));
    tt_release(got);
    OK(tt_compiled_call(c, b, &got));
    tt_release(got);
    assert_last_miss(c, "bias.dtype == f32 (got f64)");
    char *text = NN(tt_graph_to_text(tt_compiled_graph(c, 0)));
    ck_assert_msg(strncmp(text, "def forward(x: \"f32[2, 3]\", bias: \"f32[2, 3]\"):", 46) == 0,
                  "%s", text);
    free(text);
    tt_compiled_free(c);
    /* A NULL entry keeps the default. */
    tt_graph *g = NN(tt_trace(elementwise, 2, a, &(tt_trace_opts){
                                   .input_names = (const char *const[]){NULL, "y"}}));
    text = NN(tt_graph_to_text(g));
    ck_assert_msg(strncmp(text, "def forward(in0: \"f32[2, 3]\", y: \"f32[2, 3]\"):", 44) == 0,
                  "%s", text);
    free(text);
    tt_graph_free(g);
    release_all(a, 2);
    release_all(b, 2);
}
END_TEST

/* ================================================================= suite */

static tt_status negate(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    out[0] = tt_neg(in[0]);
    return out[0] ? TT_OK : tt_errcode();
}

/* The names live on the stack of the function that compiles; the plan is
 * traced later, after that frame is gone. */
static tt_compiled *compile_named(void)
{
    char name[16], input[16];
    snprintf(name, sizeof name, "%s", "negate");
    snprintf(input, sizeof input, "%s", "x");
    const char *names[] = {input};
    tt_compiled *c = tt_compile(negate, 1, 1, &(tt_trace_opts){.name = name, .input_names = names});
    memset(name, 'z', sizeof name - 1);
    memset(input, 'z', sizeof input - 1);
    return c;
}

START_TEST(test_names_copied)
{
    tt_compiled *c = NN(compile_named());
    tt_tensor *x = NN(tt_ones(TT_SHAPE(2), TT_F32)), *y = NULL;
    OK(tt_compiled_call(c, &x, &y));
    char *text = NN(tt_graph_to_text(tt_compiled_graph(c, 0)));
    ck_assert_msg(strstr(text, "def negate(x: "), "%s", text);
    free(text);
    tt_release(y);
    tt_release(x);
    tt_compiled_free(c);
}
END_TEST

static Suite *compile_suite(void)
{
    Suite *s = suite_create("compile");
    TCase *tc = tt_tcase_with("cache", ops_setup, ops_teardown);
    tcase_add_test(tc, test_cache_hits_and_misses);
    tcase_add_test(tc, test_names_copied);
    tcase_add_test(tc, test_guard_reasons);
    tcase_add_test(tc, test_outputs_equal_eager);
    tcase_add_test(tc, test_scope_and_outputs);
    suite_add_tcase(s, tc);
    tc = tt_tcase_with("symbolic", ops_setup, ops_teardown);
    tcase_add_test(tc, test_symbolic_reuses_one_plan);
    tcase_add_test(tc, test_symbolic_guard);
    tcase_add_test(tc, test_symbolic_eq_and_int_guards);
    tcase_add_test(tc, test_symbolic_specialization);
    tcase_add_test(tc, test_symbolic_dynamic_inputs);
    suite_add_tcase(s, tc);
    tc = tt_tcase_with("breaks", ops_setup, ops_teardown);
    tcase_add_test(tc, test_fullgraph_break);
    tcase_add_test(tc, test_break_runs_eagerly);
    suite_add_tcase(s, tc);
    tc = tt_tcase_with("logging", ops_setup, ops_teardown);
    tcase_add_test(tc, test_log_recompiles_and_guards);
    tcase_add_test(tc, test_log_topics);
    tcase_add_test(tc, test_clone_elision);
    tcase_add_test(tc, test_clone_elision_multi_result);
    tcase_add_test(tc, test_grad_left_on_input_runs_eagerly);
    tcase_add_test(tc, test_recompile_limit);
    tcase_add_test(tc, test_eager_fallback_warns_once);
    tcase_add_test(tc, test_input_names);
    suite_add_tcase(s, tc);
    tc = tt_tcase_with("training", ops_setup, ops_teardown);
    tcase_add_test(tc, test_training_step);
    tcase_add_test(tc, test_training_step_symbolic);
    tcase_add_test(tc, test_training_step_mlp);
    suite_add_tcase(s, tc);
    tc = tt_tcase_with("passes", ops_setup, ops_teardown);
    tcase_add_test(tc, test_fused_chain_equals_eager);
    tcase_add_test(tc, test_dead_code_does_not_run);
    tcase_add_test(tc, test_numpy_sin_compiled);
    suite_add_tcase(s, tc);
    tc = tt_tcase_with("errors", ops_setup, ops_teardown);
    tcase_add_test(tc, test_errors);
    tcase_add_test(tc, test_out_of_memory);
    suite_add_tcase(s, tc);
    tc = tt_tcase_with("many inputs", ops_setup, ops_teardown);
    tcase_add_test(tc, test_many_inputs);
    tcase_add_test(tc, test_many_inputs_symbolic);
    tcase_add_test(tc, test_many_inputs_out_of_memory);
    suite_add_tcase(s, tc);
    return s;
}

TT_TEST_MAIN(compile_suite)
