/* Data reads inside traced C code: a graph break, never a crash.
 *
 * The model reads a tensor's data between two layers the way most C code
 * does, without checking the pointer. Under every trace mode, with and
 * without fullgraph, in explain and in compile, the read must not crash:
 * real inputs give the real data (and without fullgraph the C code runs
 * on), fake inputs give stand-in memory that is safe to read and write
 * (zero pages mapped on demand, so even a 5 GB fake costs nothing), and
 * the break is reported with its line and hint. */
#include "tt_test.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static int line_read;

/* Two layers; the second's scale comes from the first's values. The
 * pointer tt_data returns is used without a check. */
static tt_status unchecked_model(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_scope_begin();
    tt_tensor *h = tt_relu(tt_matmul(in[0], in[1])); /* contiguous */
    line_read = __LINE__ + 1;
    const float *p = tt_data(h);
    float scale = p[0] + p[1] > 0 ? 2.0f : 0.5f;
    out[0] = tt_keep(tt_mul_scalar(tt_tanh(tt_matmul(h, in[2])), scale));
    tt_scope_end();
    return out[0] ? TT_OK : tt_errcode();
}

static void make_inputs(int64_t batch, tt_tensor **in)
{
    in[0] = NN(tt_randn(TT_SHAPE(batch, 8), TT_F32));
    in[1] = NN(tt_randn(TT_SHAPE(8, 16), TT_F32));
    in[2] = NN(tt_randn(TT_SHAPE(16, 4), TT_F32));
}

static void release_inputs(tt_tensor **in, int n)
{
    for (int i = 0; i < n; i++)
        tt_release(in[i]);
}

/* The report names the kind, the user's line and the hint. */
static void assert_read_report(const char *func, int line)
{
    char where[256];
    snprintf(where, sizeof where, "\n  User code: %s:%d in %s()", __FILE__, line, func);
    ck_assert_error(TT_EGRAPHBREAK, "Graph break: data read\n");
    ck_assert_error(TT_EGRAPHBREAK, where);
    ck_assert_error(TT_EGRAPHBREAK, "\n  Hint: wrap the code that needs the data in a custom op "
                                    "with a fake kernel");
}

/* ------------------------------------------------------------- tt_trace */

START_TEST(test_unchecked_read_every_mode)
{
    tt_tensor *in[3];
    make_inputs(4, in);
    for (int mode = 0; mode < 3; mode++)
        for (int full = 0; full < 2; full++) {
            tt_clear_error();
            tt_graph *g = tt_trace(unchecked_model, 3, in,
                                   &(tt_trace_opts){.mode = (tt_trace_mode)mode,
                                                    .fullgraph = full});
            ck_assert_msg(!g, "mode %d fullgraph %d: traced one graph across a break", mode,
                          full);
            assert_read_report("unchecked_model", line_read);
            /* The function ran to its end: real data, or the stand-in's
             * zeros; its success with a break pending is no excuse. */
            if (mode == TT_TRACE_REAL && !full)
                ck_assert(strstr(tt_errmsg(), "went on past") == NULL);
            else
                ck_assert_error(TT_EGRAPHBREAK, "went on past the break and returned success");
            if (!full)
                ck_assert_error(TT_EGRAPHBREAK, "use tt_explain_run to split at breaks");
            ck_assert_ptr_null(tt_mode_current());
            ck_assert(!tt_fake_mode_enabled());
        }
    release_inputs(in, 3);
}
END_TEST

/* Explain splits at the read: two graphs, the real data in between, and
 * the eager result. */
START_TEST(test_unchecked_read_explain)
{
    tt_tensor *in[3], *want;
    make_inputs(4, in);
    OK(unchecked_model(in, 3, &want, 1, NULL));
    tt_explain *e = NN(tt_explain_run(unchecked_model, 3, in, NULL));
    ck_assert_int_eq(tt_explain_graph_count(e), 2);
    ck_assert_int_eq(tt_explain_break_count(e), 1);
    const tt_break_info *b = tt_explain_break(e, 0);
    ck_assert_int_eq(b->kind, TT_BREAK_DATA_READ);
    ck_assert_int_eq(b->loc.line, line_read);
    ck_assert_str_eq(b->loc.func, "unchecked_model");
    /* The first graph ends at the read; the second starts from the value
     * read and computes the second layer. */
    ck_assert_int_eq(tt_graph_count_op(tt_explain_graph(e, 0), "tt::matmul"), 1);
    ck_assert_int_eq(tt_graph_count_op(tt_explain_graph(e, 1), "tt::matmul"), 1);
    ck_assert_int_eq(tt_graph_count_op(tt_explain_graph(e, 1), "tt::tanh"), 1);
    tt_explain_free(e);
    tt_release(want);
    release_inputs(in, 3);
}
END_TEST

/* C code between two graphs makes a tensor from the data it read: for the
 * second graph that tensor is an input (it changes with the data), not a
 * constant. */
static tt_status c_between(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_scope_begin();
    tt_tensor *h = tt_relu(in[0]);
    const float *p = tt_data(h);
    float buf[12];
    for (int i = 0; i < 12; i++)
        buf[i] = 2 * p[i] + 1;
    tt_tensor *c = tt_from_data(TT_SHAPE(3, 4), TT_F32, buf);
    out[0] = tt_keep(tt_mul(tt_add(c, h), in[0]));
    tt_scope_end();
    return out[0] ? TT_OK : tt_errcode();
}

START_TEST(test_explain_c_tensor_is_input)
{
    tt_tensor *x = NN(tt_randn(TT_SHAPE(3, 4), TT_F32));
    tt_explain *e = NN(tt_explain_run(c_between, 1, &x, NULL));
    ck_assert_int_eq(tt_explain_graph_count(e), 2);
    const tt_graph *g1 = tt_explain_graph(e, 0), *g2 = tt_explain_graph(e, 1);
    /* Graph 1 hands on relu (read by the C code) and x (read by graph 2);
     * graph 2 takes those and the C code's tensor. */
    ck_assert_int_eq(tt_graph_num_outputs(g1), 2);
    ck_assert_int_eq(tt_graph_num_inputs(g2), 3);
    for (int i = 0; i < tt_graph_num_nodes(g2); i++)
        ck_assert_int_ne(tt_graph_node_kind(g2, i), TT_NODE_CONSTANT);
    char *text = NN(tt_graph_to_text(g2));
    ck_assert_msg(strstr(text, "from_c0: \"f32[3, 4]\"") != NULL, "%s", text);
    free(text);
    /* Replayed in order, the two graphs need the C code's tensor as an
     * input: the value it had in this run gives this run's result. */
    tt_tensor *want, *mid[2] = {0}, *got = NULL;
    OK(c_between(&x, 1, &want, 1, NULL));
    OK(tt_graph_run(g1, 1, &x, 2, mid));
    tt_tensor *c_now = (tt_tensor *)tt_graph_node_value(g2, 2, 0);
    OK(tt_graph_run(g2, 3, (tt_tensor *[]){mid[0], mid[1], c_now}, 1, &got));
    tt_test_assert_same_bits(got, want, "graphs replayed around the C code");
    tt_release(got);
    tt_release(want);
    tt_release(mid[0]);
    tt_release(mid[1]);
    /* The text: each graph's guards and trace time. */
    text = NN(tt_explain_to_text(e));
    ck_assert_msg(strstr(text, "Guards per graph:\n  Graph 1 (traced in ") != NULL, "%s", text);
    ck_assert_msg(strstr(text, "    in0: check_tensor(f32, requires_grad=False, size=[3, 4], "
                               "stride=[4, 1])\n") != NULL, "%s", text);
    ck_assert_msg(strstr(text, "    from_c0: check_tensor(f32, ") != NULL, "%s", text);
    free(text);
    tt_explain_free(e);
    tt_release(x);
}
END_TEST

/* ------------------------------------------------------- fake stand-ins */

/* Reads the first and last element of a huge fake activation and writes
 * one in the middle: all of it must be addressable. */
static int line_touch;

static tt_status touches_ends(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_tensor *h = tt_relu(in[0]);
    if (!h)
        return tt_errcode();
    int64_t n = tt_sym_hint(tt_numel(h));
    line_touch = __LINE__ + 1;
    float *p = tt_data(h);
    float first = p[0], last = p[n - 1];
    p[n / 2] = first + last + 1;
    *(float *)ud = p[n / 2];
    out[0] = tt_neg(h);
    tt_release(h);
    return out[0] ? TT_OK : tt_errcode();
}

START_TEST(test_fake_read_is_safe)
{
    /* 40960 x 32768 f32: 5 GiB that exist only as metadata. */
    tt_tensor *big = NN(tt_fake_empty(TT_SHAPE(40960, 32768), TT_F32));
    for (int mode = 0; mode < 3; mode += 2) { /* fake and symbolic */
        float seen = -1;
        tt_clear_error();
        ck_assert_ptr_null(tt_trace(touches_ends, 1, &big,
                                    &(tt_trace_opts){.mode = (tt_trace_mode)mode,
                                                     .fullgraph = true, .ud = &seen}));
        assert_read_report("touches_ends", line_touch);
        ck_assert_error(TT_EGRAPHBREAK, "tt_data reads the data of fake f32[");
        ck_assert_error(TT_EGRAPHBREAK, "(graph value relu)");
        ck_assert_float_eq(seen, 1); /* zeros read, the write kept */
    }
    /* Outside a trace, a fake tensor's data stays unavailable. */
    ck_assert_ptr_null(tt_data(big));
    ck_assert_error(TT_EFAKE, "tt_data: cannot access the data of fake");
    ck_assert_error(TT_EFAKE, "f32[40960, 32768]");
    double v = 5;
    ck_assert_int_eq(tt_item(big, &v), TT_EFAKE);
    ck_assert_double_eq(v, 5);
    tt_release(big);
}
END_TEST

/* Element reads of a fake value under a trace give the stand-in's zero
 * and the break as their status. */
static int line_item;

typedef struct {
    double value;
    tt_status status;
} item_seen;

static tt_status reads_item(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    tt_tensor *s = tt_sum_all(in[0]);
    double v = -1;
    line_item = __LINE__ + 1;
    tt_status st = tt_item(s, &v);
    *(item_seen *)ud = (item_seen){v, st};
    out[0] = tt_add_scalar(s, v);
    tt_release(s);
    return out[0] ? TT_OK : tt_errcode();
}

START_TEST(test_fake_item_reads_zero)
{
    tt_tensor *x = NN(tt_randn(TT_SHAPE(3, 2), TT_F32));
    item_seen seen = {-1, TT_OK};
    ck_assert_ptr_null(tt_trace(reads_item, 1, &x, &(tt_trace_opts){.ud = &seen}));
    ck_assert_double_eq(seen.value, 0);
    ck_assert_int_eq(seen.status, TT_EGRAPHBREAK);
    assert_read_report("reads_item", line_item);
    ck_assert_error(TT_EGRAPHBREAK, "tt_item reads the data of fake f32[] (graph value sum)");
    tt_release(x);
}
END_TEST

/* -------------------------------------------------------------- compile */

/* Without fullgraph a compiled function that reads data gives the eager
 * result on every call and size; with fullgraph the call fails with the
 * read's report, and nothing crashes either way. */
START_TEST(test_compile_unchecked_read)
{
    for (int sym = 0; sym < 2; sym++) {
        tt_compiled *c = NN(tt_compile(unchecked_model, 3, 1,
                                       &(tt_trace_opts){.mode = sym ? TT_TRACE_SYMBOLIC
                                                                    : TT_TRACE_FAKE}));
        int64_t batches[] = {4, 8, 4, 16, 3};
        for (int k = 0; k < 5; k++) {
            tt_tensor *in[3], *got, *want;
            make_inputs(batches[k], in);
            OK(tt_compiled_call(c, in, &got));
            OK(unchecked_model(in, 3, &want, 1, NULL));
            tt_test_assert_same_bits(got, want, "compiled with a data read");
            tt_release(got);
            tt_release(want);
            release_inputs(in, 3);
        }
        tt_compile_stats s;
        tt_compiled_stats(c, &s);
        ck_assert_int_eq(s.calls, 5);
        ck_assert_int_ge(s.graph_breaks, 1);
        ck_assert_int_eq(tt_errcode(), TT_OK);
        tt_compiled_free(c);

        c = NN(tt_compile(unchecked_model, 3, 1,
                          &(tt_trace_opts){.mode = sym ? TT_TRACE_SYMBOLIC : TT_TRACE_FAKE,
                                           .fullgraph = true}));
        tt_tensor *in[3], *got = (tt_tensor *)c;
        make_inputs(4, in);
        ck_assert_int_eq(tt_compiled_call(c, in, &got), TT_EGRAPHBREAK);
        ck_assert_ptr_null(got);
        assert_read_report("unchecked_model", line_read);
        release_inputs(in, 3);
        tt_compiled_free(c);
    }
}
END_TEST

/* ------------------------------------------- fake kernels that read data */

/* A custom op whose fake kernel reads its input's values: a fake trace
 * hits the read, and explain (which runs real tensors) must report the
 * same break at the same line, or the two disagree about the same code. */
static tt_op *peek_op;
static int peek_how; /* 0: tt_data (pointer used unchecked), 1: tt_item, 2: no read */
static int line_peek_read, line_peek_call;

static tt_status peek_kernel(tt_frame *f)
{
    tt_tensor *x;
    tt_status st = tt_arg_tensor(f, 0, &x);
    return st ? st : tt_return(f, 0, tt_mul_scalar(x, 2));
}

static tt_status peek_fake(tt_frame *f)
{
    tt_tensor *x;
    tt_status st = tt_arg_tensor(f, 0, &x);
    if (st)
        return st;
    if (peek_how == 0) {
        line_peek_read = __LINE__ + 1;
        const float *p = tt_data(x);
        if (p[0] > 1e30f) /* the stand-in's zero under a trace */
            return tt_error(TT_EINVAL, "brk::peek: a huge first value");
    } else if (peek_how == 1) {
        double v;
        line_peek_read = __LINE__ + 1;
        if ((st = tt_item(x, &v)))
            return st;
    }
    return tt_return(f, 0, tt_empty_like(x));
}

static tt_status peek_model(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_scope_begin();
    tt_tensor *h = tt_relu(in[0]);
    line_peek_call = __LINE__ + 1;
    tt_tensor *p = tt_call(peek_op, tt_v_tensor(h));
    out[0] = tt_keep(tt_add(tt_exp(p), h));
    tt_scope_end();
    return out[0] ? TT_OK : tt_errcode();
}

static tt_library *define_peek(void)
{
    tt_library *lib = NN(tt_library_new(TT_LIB_DEF, "brk"));
    peek_op = NN(tt_custom_op_define(lib, &(tt_custom_op_spec){
        .schema = "brk::peek(Tensor x) -> Tensor", .kernel = peek_kernel, .fake = peek_fake}));
    return lib;
}

START_TEST(test_fake_kernel_read_explain_agrees)
{
    tt_library *lib = define_peek();
    tt_tensor *x = NN(tt_randn(TT_SHAPE(1), TT_F32)), *want;
    for (peek_how = 0; peek_how < 2; peek_how++) {
        OK(peek_model(&x, 1, &want, 1, NULL));
        /* explain runs the real kernels, and still sees the fake kernel's
         * read: two graphs, the op run eagerly between them. */
        OK(tt_expect_graphs(peek_model, 1, &x, NULL, 2, (const char *[]){"brk::peek"}));
        tt_explain *e = NN(tt_explain_run(peek_model, 1, &x, NULL));
        ck_assert_int_eq(tt_explain_graph_count(e), 2);
        ck_assert_int_eq(tt_explain_break_count(e), 1);
        const tt_break_info *b = tt_explain_break(e, 0);
        ck_assert_int_eq(b->kind, TT_BREAK_DATA_READ);
        ck_assert_str_eq(b->op, "brk::peek");
        ck_assert_str_eq(b->loc.file, __FILE__);
        ck_assert_int_eq(b->loc.line, line_peek_call);
        ck_assert_str_eq(b->loc.func, "peek_model");
        char want_reason[512];
        snprintf(want_reason, sizeof want_reason,
                 "brk::peek: the fake kernel read tensor data (%s of fake f32[1] at %s:%d in "
                 "peek_fake()), but while tracing a fake kernel gets only its inputs' sizes, "
                 "strides and dtypes, not their values",
                 peek_how ? "tt_item" : "tt_data", __FILE__, line_peek_read);
        ck_assert_str_eq(b->reason, want_reason);
        ck_assert_int_eq(tt_graph_count_op(tt_explain_graph(e, 0), "tt::relu"), 1);
        ck_assert_int_eq(tt_graph_count_op(tt_explain_graph(e, 0), "brk::peek"), 0);
        ck_assert_int_eq(tt_graph_count_op(tt_explain_graph(e, 1), "brk::peek"), 0);
        ck_assert_int_eq(tt_graph_count_op(tt_explain_graph(e, 1), "tt::exp"), 1);
        char explanation[700], where[300];
        snprintf(explanation, sizeof explanation, "\n  Explanation: %s\n", b->reason);
        snprintf(where, sizeof where, "\n  User code: %s:%d in %s()\n  Op: brk::peek",
                 b->loc.file, b->loc.line, b->loc.func);
        /* fullgraph, fake and symbolic: the same break, reason and line
         * (a symbolic trace's sizes are symbols, so its reason says so). */
        for (int mode = 0; mode < 3; mode += 2) {
            tt_clear_error();
            ck_assert_ptr_null(tt_trace(peek_model, 1, &x,
                                        &(tt_trace_opts){.mode = (tt_trace_mode)mode,
                                                         .fullgraph = true}));
            ck_assert_error(TT_EGRAPHBREAK, "Graph break: data read\n");
            if (mode == TT_TRACE_FAKE)
                ck_assert_error(TT_EGRAPHBREAK, explanation);
            ck_assert_error(TT_EGRAPHBREAK, where);
            ck_assert_error(TT_EGRAPHBREAK, "\n  Hint: make the fake kernel compute its "
                                            "outputs from its inputs' sizes, strides and "
                                            "dtypes alone; an output size that depends on "
                                            "the values is a new dynamic size "
                                            "(tt_frame_new_dynamic_size)");
        }
        /* explain with fullgraph fails the same way. */
        ck_assert_ptr_null(tt_explain_run(peek_model, 1, &x, &(tt_trace_opts){.fullgraph = true}));
        ck_assert_error(TT_EGRAPHBREAK, explanation);
        ck_assert_error(TT_EGRAPHBREAK, where);
        /* compile without fullgraph: the break, then the eager result. */
        tt_compiled *c = NN(tt_compile(peek_model, 1, 1, NULL));
        tt_tensor *got;
        OK(tt_compiled_call(c, &x, &got));
        tt_test_assert_same_bits(got, want, "compiled past a fake kernel's read");
        tt_compile_stats st;
        tt_compiled_stats(c, &st);
        ck_assert_int_eq(st.graph_breaks, 1);
        tt_compiled_free(c);
        tt_release(got);
        tt_release(want);
        tt_explain_free(e);
    }
    /* A fake kernel that reads nothing: one graph, no break. */
    peek_how = 2;
    OK(tt_expect_fullgraph(peek_model, 1, &x, NULL));
    tt_graph *pg = NN(tt_trace(peek_model, 1, &x, &(tt_trace_opts){.fullgraph = true}));
    OK(tt_expect_opaque(pg, "brk::peek"));
    tt_graph_free(pg);
    /* Outside a trace, a fake kernel's read is still TT_EFAKE. */
    tt_tensor *fx = NN(tt_fake_like(x));
    peek_how = 1;
    ck_assert_ptr_null(tt_call(peek_op, tt_v_tensor(fx)));
    ck_assert_error(TT_EFAKE, "brk::peek: the fake kernel read tensor data, but fake tensors "
                              "have none");
    tt_release(fx);
    tt_release(x);
    tt_library_free(lib);
}
END_TEST

/* Every function of this suite that breaks: explain's first break has the
 * kind and the file:line that a fullgraph trace on fake tensors reports. */
START_TEST(test_explain_agrees_with_fullgraph)
{
    tt_library *lib = define_peek();
    tt_tensor *three[3], *one = NN(tt_randn(TT_SHAPE(3, 4), TT_F32)); /* c_between's shape */
    make_inputs(3, three);
    item_seen seen;
    static const struct {
        tt_fn fn;
        int nin, how;
    } cases[] = {
        {unchecked_model, 3, 0}, {c_between, 1, 0}, {reads_item, 1, 0},
        {peek_model, 1, 0},      {peek_model, 1, 1},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        peek_how = cases[k].how;
        tt_trace_opts o = {.ud = &seen};
        tt_tensor **in = cases[k].nin == 3 ? three : &one;
        tt_explain *e = tt_explain_run(cases[k].fn, cases[k].nin, in, &o);
        ck_assert_msg(e != NULL, "case %zu: %s", k, tt_errmsg());
        ck_assert_int_ge(tt_explain_break_count(e), 1);
        const tt_break_info *b = tt_explain_break(e, 0);
        char kind[128], where[300];
        snprintf(kind, sizeof kind, "Graph break: %s\n", tt_break_kind_name(b->kind));
        snprintf(where, sizeof where, "\n  User code: %s:%d in %s()", b->loc.file, b->loc.line,
                 b->loc.func);
        o.fullgraph = true;
        tt_clear_error();
        ck_assert_ptr_null(tt_trace(cases[k].fn, cases[k].nin, in, &o));
        ck_assert_msg(strstr(tt_errmsg(), kind) && strstr(tt_errmsg(), where),
                      "case %zu: explain says \"%s\" at \"%s\"; fullgraph says: %s", k, kind,
                      where, tt_errmsg());
        tt_explain_free(e);
    }
    release_inputs(three, 3);
    tt_release(one);
    tt_library_free(lib);
}
END_TEST

static Suite *breaks_suite(void)
{
    Suite *s = suite_create("breaks");
    TCase *tc = tt_tcase("data reads");
    tcase_add_test(tc, test_unchecked_read_every_mode);
    tcase_add_test(tc, test_unchecked_read_explain);
    tcase_add_test(tc, test_explain_c_tensor_is_input);
    tcase_add_test(tc, test_fake_read_is_safe);
    tcase_add_test(tc, test_fake_item_reads_zero);
    tcase_add_test(tc, test_fake_kernel_read_explain_agrees);
    tcase_add_test(tc, test_explain_agrees_with_fullgraph);
    suite_add_tcase(s, tc);
    tc = tt_tcase("compile");
    tcase_add_test(tc, test_compile_unchecked_read);
    suite_add_tcase(s, tc);
    return s;
}

TT_TEST_MAIN(breaks_suite)
