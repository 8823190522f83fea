/* The test helpers (tracer/tt_testing.h): each expectation met, and each
 * one failing with TT_EEXPECT and the message a test author needs (the
 * break's C line, the failed guard, the graph, a unified diff); the
 * snapshot file written under TT_EXPECT_ACCEPT=1. */
#include "tt_test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int line_break_read;

static tt_status mlp(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_scope_begin();
    out[0] = tt_keep(tt_relu(tt_add(tt_mul_scalar(in[0], 2), in[0])));
    tt_scope_end();
    return out[0] ? TT_OK : tt_errcode();
}

/* a branch on a value: one break at the tt_item line */
static tt_status branchy(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_scope_begin();
    tt_tensor *s = tt_sum_all(in[0]);
    double v = 0;
    line_break_read = __LINE__ + 1;
    tt_status st = tt_item(s, &v);
    if (st && st != TT_EGRAPHBREAK) {
        tt_scope_end();
        return st;
    }
    tt_clear_error();
    out[0] = tt_keep(v > 0 ? tt_exp(in[0]) : tt_neg(in[0]));
    tt_scope_end();
    return out[0] ? TT_OK : tt_errcode();
}

START_TEST(test_fullgraph_and_graph_counts)
{
    tt_tensor *x = NN(tt_ones(TT_SHAPE(2, 3), TT_F32));
    OK(tt_expect_fullgraph(mlp, 1, &x, NULL));
    OK(tt_expect_graphs(mlp, 1, &x, NULL, 1, NULL));
    OK(tt_expect_graphs(branchy, 1, &x, NULL, 2, (const char *[]){"data read"}));
    OK(tt_expect_graphs(branchy, 1, &x, NULL, 2, (const char *[]){"tt_item"}));
    OK(tt_expect_graphs(branchy, 1, &x, &(tt_trace_opts){.fullgraph = true}, 2, NULL));

    ck_assert_int_eq(tt_expect_fullgraph(branchy, 1, &x, NULL), TT_EEXPECT);
    ck_assert_error(TT_EEXPECT, "tt_expect_fullgraph: expected 1 graph, got 2:\nGraph count: 2");
    char where[256];
    snprintf(where, sizeof where, "test_testing.c:%d in branchy", line_break_read);
    ck_assert_error(TT_EEXPECT, where);
    ck_assert_int_eq(tt_expect_graphs(mlp, 1, &x, NULL, 3, NULL), TT_EEXPECT);
    ck_assert_error(TT_EEXPECT, "tt_expect_graphs: expected 3 graphs, got 1:");
    ck_assert_int_eq(tt_expect_graphs(branchy, 1, &x, NULL, 2, (const char *[]){"no fake kernel"}),
                     TT_EEXPECT);
    ck_assert_error(TT_EEXPECT, "tt_expect_graphs: expected break 1 to be 'no fake kernel':");
    ck_assert_int_eq(tt_expect_graphs(NULL, 1, &x, NULL, 1, NULL), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_expect_graphs: expected a function and at least one graph");
    tt_clear_error();
    tt_release(x);
}
END_TEST

START_TEST(test_no_recompile)
{
    tt_tensor *a = NN(tt_ones(TT_SHAPE(2, 3), TT_F32)), *b = NN(tt_ones(TT_SHAPE(4, 3), TT_F32));
    tt_tensor *c5 = NN(tt_ones(TT_SHAPE(4, 5), TT_F32));
    tt_compiled *sym = NN(tt_compile(mlp, 1, 1, &(tt_trace_opts){.mode = TT_TRACE_SYMBOLIC}));
    OK(tt_expect_no_recompile(sym, 3, (tt_tensor **const[]){&a, &b, &c5}));
    ck_assert_int_eq(tt_compiled_count_op(sym, "tt::relu"), 1);
    ck_assert_int_eq(tt_compiled_count_op(sym, "tt::add"), 1);
    ck_assert_int_eq(tt_compiled_count_op(sym, NULL), 3);
    tt_compiled_free(sym);
    /* fake mode guards on sizes: the second shape traces again */
    tt_compiled *fake = NN(tt_compile(mlp, 1, 1, &(tt_trace_opts){.mode = TT_TRACE_FAKE}));
    ck_assert_int_eq(tt_expect_no_recompile(fake, 2, (tt_tensor **const[]){&a, &b}), TT_EEXPECT);
    ck_assert_error(TT_EEXPECT, "tt_expect_no_recompile: call 2 of 2 traced again: guard failed: "
                                "in0.size(0) == 2 (got 4)");
    ck_assert_int_eq(tt_compiled_count_op(fake, "tt::relu"), 2); /* over both plans */
    tt_compiled_free(fake);
    ck_assert_int_eq(tt_expect_no_recompile(NULL, 1, (tt_tensor **const[]){&a}), TT_EINVAL);
    ck_assert_int_eq(tt_compiled_count_op(NULL, "tt::relu"), -1);
    tt_clear_error();
    tt_release(c5), tt_release(b), tt_release(a);
}
END_TEST

static tt_status crop_kernel(tt_frame *f)
{
    tt_tensor *x;
    tt_status st = tt_arg_tensor(f, 0, &x);
    return st ? st : tt_return(f, 0, tt_clone(x));
}

static tt_status crop_model(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    out[0] = tt_call((tt_op *)ud, tt_v_tensor(in[0]));
    return out[0] ? TT_OK : tt_errcode();
}

START_TEST(test_graph_ops)
{
    tt_tensor *x = NN(tt_ones(TT_SHAPE(2, 3), TT_F32));
    tt_graph *g = NN(tt_trace(mlp, 1, &x, &(tt_trace_opts){.mode = TT_TRACE_FAKE}));
    OK(tt_expect_graph_has_op(g, "tt::relu"));
    OK(tt_expect_graph_has_op(g, "tt::mul.Scalar"));
    OK(tt_expect_graph_lacks_op(g, "tt::exp"));
    ck_assert_int_eq(tt_expect_graph_has_op(g, "tt::exp"), TT_EEXPECT);
    ck_assert_error(TT_EEXPECT, "tt_expect_graph_has_op: expected graph forward to call tt::exp, "
                                "it has 0 calls:\ndef forward(in0: \"f32[2, 3]\"):");
    ck_assert_int_eq(tt_expect_graph_lacks_op(g, "tt::add"), TT_EEXPECT);
    ck_assert_error(TT_EEXPECT, "expected graph forward not to call tt::add, it has 1 call:");
    ck_assert_int_eq(tt_expect_opaque(g, "tt::relu"), TT_EEXPECT);
    ck_assert_error(TT_EEXPECT, "tt_expect_opaque: tt::relu is one of tt's built-ins, not a "
                                "custom op");
    tt_graph_free(g);

    tt_library *lib = NN(tt_library_new(TT_LIB_DEF, "snap"));
    tt_op *crop = NN(tt_custom_op_define(lib, &(tt_custom_op_spec){
        .schema = "snap::crop(Tensor x) -> Tensor", .kernel = crop_kernel, .fake = crop_kernel}));
    g = NN(tt_trace(crop_model, 1, &x, &(tt_trace_opts){.mode = TT_TRACE_FAKE, .ud = crop}));
    OK(tt_expect_opaque(g, "snap::crop"));
    OK(tt_expect_graph_lacks_op(g, "tt::clone"));
    ck_assert_int_eq(tt_expect_graph_has_op(NULL, "tt::relu"), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_expect_graph_has_op: expected a graph and an op name");
    tt_clear_error();
    tt_graph_free(g);
    tt_library_free(lib);
    tt_release(x);
}
END_TEST

static const char mlp_text[] =
    "def forward(in0: \"f32[2, 3]\"):\n"
    "    mul: \"f32[2, 3]\" = tt::mul.Scalar(in0, 2)\n"
    "    add: \"f32[2, 3]\" = tt::add.Tensor(mul, in0)\n"
    "    relu: \"f32[2, 3]\" = tt::relu(add)\n"
    "    return (relu,)\n";

START_TEST(test_snapshot_inline)
{
    tt_tensor *x = NN(tt_ones(TT_SHAPE(2, 3), TT_F32));
    tt_graph *g = NN(tt_trace(mlp, 1, &x, &(tt_trace_opts){.mode = TT_TRACE_FAKE}));
    OK(tt_expect_graph_text(g, mlp_text, 0));
    /* with the lines, the text is tt_graph_to_text's */
    char *full = NN(tt_graph_to_text(g));
    ck_assert(strstr(full, "test_testing.c:"));
    OK(tt_expect_graph_text(g, full, TT_SNAPSHOT_LINES));
    free(full);
    static const char wrong[] =
        "def forward(in0: \"f32[2, 3]\"):\n"
        "    mul: \"f32[2, 3]\" = tt::mul.Scalar(in0, 3)\n"
        "    add: \"f32[2, 3]\" = tt::add.Tensor(mul, in0)\n"
        "    relu: \"f32[2, 3]\" = tt::relu(add)\n"
        "    return (relu,)\n";
    ck_assert_int_eq(tt_expect_graph_text(g, wrong, 0), TT_EEXPECT);
    ck_assert_error(TT_EEXPECT, "tt_expect_graph_text: the graph's text differs from the inline "
                                "snapshot:\n--- expected (the inline snapshot)\n+++ actual\n"
                                "@@ -1,5 +1,5 @@\n"
                                " def forward(in0: \"f32[2, 3]\"):\n"
                                "-    mul: \"f32[2, 3]\" = tt::mul.Scalar(in0, 3)\n"
                                "+    mul: \"f32[2, 3]\" = tt::mul.Scalar(in0, 2)\n"
                                "     add: \"f32[2, 3]\" = tt::add.Tensor(mul, in0)\n");
    ck_assert_int_eq(tt_expect_graph_text(g, NULL, 0), TT_EINVAL);
    tt_clear_error();
    tt_graph_free(g);
    tt_release(x);
}
END_TEST

START_TEST(test_snapshot_file)
{
    char dir[] = "/tmp/tt_snapshotXXXXXX", path[64];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/mlp.txt", dir);
    tt_tensor *x = NN(tt_ones(TT_SHAPE(2, 3), TT_F32));
    tt_graph *g = NN(tt_trace(mlp, 1, &x, &(tt_trace_opts){.mode = TT_TRACE_FAKE}));
    unsetenv("TT_EXPECT_ACCEPT");
    ck_assert_int_eq(tt_expect_graph_file(g, path, 0), TT_EEXPECT);
    ck_assert_error(TT_EEXPECT, "(it does not exist); run with TT_EXPECT_ACCEPT=1 to write it");
    setenv("TT_EXPECT_ACCEPT", "1", 1);
    OK(tt_expect_graph_file(g, path, 0));
    unsetenv("TT_EXPECT_ACCEPT");
    OK(tt_expect_graph_file(g, path, 0));
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("def forward(in0: \"f32[2, 3]\"):\n    return (in0,)\n", f);
    fclose(f);
    ck_assert_int_eq(tt_expect_graph_file(g, path, 0), TT_EEXPECT);
    ck_assert_error(TT_EEXPECT, "; TT_EXPECT_ACCEPT=1 rewrites it)\n+++ actual\n@@ -1,2 +1,5 @@\n"
                                " def forward(in0: \"f32[2, 3]\"):\n-    return (in0,)\n+    mul:");
    setenv("TT_EXPECT_ACCEPT", "1", 1);
    OK(tt_expect_graph_file(g, path, 0));
    unsetenv("TT_EXPECT_ACCEPT");
    OK(tt_expect_graph_text(g, mlp_text, 0));
    OK(tt_expect_graph_file(g, path, 0));
    tt_clear_error();
    unlink(path);
    rmdir(dir);
    tt_graph_free(g);
    tt_release(x);
}
END_TEST

static tt_status mlp3(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_scope_begin();
    out[0] = tt_keep(tt_relu(tt_add(tt_mul_scalar(in[0], 3), in[0])));
    tt_scope_end();
    return out[0] ? TT_OK : tt_errcode();
}

START_TEST(test_graphs_equal_dot)
{
    char dir[] = "/tmp/tt_graphdiffXXXXXX", path[64];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/diff.dot", dir);
    tt_tensor *x = NN(tt_ones(TT_SHAPE(2, 3), TT_F32));
    tt_graph *a = NN(tt_trace(mlp, 1, &x, &(tt_trace_opts){.mode = TT_TRACE_FAKE}));
    tt_graph *b = NN(tt_trace(mlp3, 1, &x, &(tt_trace_opts){.mode = TT_TRACE_FAKE}));
    tt_graph *a2 = NN(tt_trace(mlp, 1, &x, &(tt_trace_opts){.mode = TT_TRACE_FAKE}));
    OK(tt_expect_graphs_equal(a, a2, 0, path));
    ck_assert_int_eq(access(path, F_OK), -1); /* nothing written when equal */
    ck_assert_int_eq(tt_expect_graphs_equal(a, b, 0, path), TT_EEXPECT);
    ck_assert_error(TT_EEXPECT, "tt_expect_graphs_equal: the graph's text differs from the "
                                "expected graph:\n--- expected (the expected graph)\n+++ actual\n"
                                "@@ -1,5 +1,5 @@\n");
    ck_assert_error(TT_EEXPECT, "-    mul: \"f32[2, 3]\" = tt::mul.Scalar(in0, 2)\n"
                                "+    mul: \"f32[2, 3]\" = tt::mul.Scalar(in0, 3)\n");
    ck_assert_error(TT_EEXPECT, "(both graphs, the differing nodes red: /tmp/tt_graphdiff");
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    char dot[8192];
    size_t n = fread(dot, 1, sizeof dot - 1, f);
    dot[n] = 0;
    fclose(f);
    /* the mul node (node 1) is red in both clusters, relu (node 3) in neither */
    ck_assert_msg(strstr(dot, "subgraph cluster_1") && strstr(dot, "subgraph cluster_2"), "%s", dot);
    ck_assert_msg(strstr(dot, "g1_n1 [label=\"mul\\ntt::mul.Scalar") &&
                  strstr(strstr(dot, "g1_n1 [label="), "color=red, penwidth=3"), "%s", dot);
    const char *n3 = strstr(dot, "g2_n3 [label=");
    ck_assert_ptr_nonnull(n3);
    int len = (int)(strchr(n3, '\n') - n3);
    ck_assert_msg(!memmem(n3, (size_t)len, "color=red", 9), "relu is marked: %.*s", len, n3);
    ck_assert_int_eq(tt_expect_graphs_equal(a, NULL, 0, NULL), TT_EINVAL);
    tt_clear_error();
    unlink(path);
    rmdir(dir);
    tt_graph_free(a2), tt_graph_free(b), tt_graph_free(a);
    tt_release(x);
}
END_TEST

/* ----------------------------------------------------------- bisector */

/* bis::center: x - mean(x), tagged pointwise although it is not: fused,
 * each chunk subtracts its own mean. */
static tt_status center_kernel(tt_frame *f)
{
    tt_tensor *x;
    tt_status st = tt_arg_tensor(f, 0, &x);
    if (st)
        return st;
    tt_tensor *m = tt_mean_all(x), *r = m ? tt_sub(x, m) : NULL;
    tt_release(m);
    return r ? tt_return(f, 0, r) : tt_errcode();
}

static tt_status center_fake(tt_frame *f)
{
    tt_tensor *x;
    tt_status st = tt_arg_tensor(f, 0, &x);
    return st ? st : tt_return(f, 0, tt_empty_like(x));
}

static int line_scaled;

static tt_status centered(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    tt_scope_begin();
    tt_tensor *c = tt_call((tt_op *)ud, tt_v_tensor(tt_relu(in[0])));
    line_scaled = __LINE__ + 1;
    out[0] = tt_keep(tt_mul_scalar(c, 3));
    tt_scope_end();
    return out[0] ? TT_OK : tt_errcode();
}

/* the same, then a sum: the difference starts two nodes before the output */
static tt_status centered_sum(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    tt_tensor *c = NULL;
    tt_status st = centered(in, nin, &c, nout, ud);
    out[0] = st ? NULL : tt_sum(c, 1, (const int64_t[]){1}, false);
    tt_release(c);
    return out[0] ? TT_OK : tt_errcode();
}

static int calls_seen;

/* reads state that changes from call to call: the trace freezes it */
static tt_status stateful(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    out[0] = tt_mul_scalar(in[0], ++calls_seen);
    return out[0] ? TT_OK : tt_errcode();
}

START_TEST(test_bisector)
{
    tt_library *lib = NN(tt_library_new(TT_LIB_DEF, "bis"));
    tt_op *center = NN(tt_custom_op_define(lib, &(tt_custom_op_spec){
        .schema = "bis::center(Tensor x) -> Tensor", .kernel = center_kernel,
        .fake = center_fake, .tags = TT_TAG_POINTWISE}));
    tt_manual_seed(3);
    tt_tensor *x = NN(tt_randn(TT_SHAPE(300, 100), TT_F32));
    tt_trace_opts o = {.fullgraph = true, .ud = center, .ud_constant = true};
    tt_compare_report r;
    OK(tt_compare_run(centered, 1, &x, 1, &o, 1e-5, 1e-5, &r));
    ck_assert(r.differs);
    ck_assert_int_eq(r.output, 0);
    ck_assert_int_eq(r.pass, TT_PASS_FUSE);
    ck_assert_str_eq(tt_pass_name(r.pass), "fuse");
    ck_assert(!r.without_passes);
    /* the node: the fused chain's result, the mul at centered's line */
    char where[100];
    snprintf(where, sizeof where, "test_testing.c:%d in centered", line_scaled);
    ck_assert_str_eq(r.node, "mul");
    ck_assert_str_eq(r.node_op, "tt::mul.Scalar");
    ck_assert_str_eq(r.node_where, where);
    ck_assert(r.node_max_diff > 1e-3 && isfinite(r.node_max_diff));
    /* through a sum: the node is still the mul, before the output */
    OK(tt_compare_run(centered_sum, 1, &x, 1, &o, 1e-5, 1e-5, &r));
    ck_assert(r.differs);
    ck_assert_str_eq(r.node, "mul");
    ck_assert_int_eq(r.pass, TT_PASS_FUSE);
    ck_assert_int_eq(tt_expect_compiled_matches_eager(centered, 1, &x, 1, &o, 1e-5, 1e-5),
                     TT_EEXPECT);
    ck_assert_error(TT_EEXPECT, "tt_expect_compiled_matches_eager: output 0, element ");
    ck_assert_error(TT_EEXPECT, "; the first node that differs is mul (tt::mul.Scalar at ");
    ck_assert_error(TT_EEXPECT, where);
    ck_assert_error(TT_EEXPECT, "; with the pass 'fuse' off (passes_off = TT_PASS_FUSE) the "
                                "compiled result agrees: that pass changes it (a custom op "
                                "tagged pointwise whose result is not elementwise does this; the "
                                "graph's: bis::center)");
    /* with the pass off from the start, nothing to find */
    o.passes_off = TT_PASS_FUSE;
    OK(tt_expect_compiled_matches_eager(centered, 1, &x, 1, &o, 1e-5, 1e-5));
    /* a small input is one chunk: fused or not, the same */
    tt_tensor *small = NN(tt_randn(TT_SHAPE(3, 4), TT_F32));
    o.passes_off = 0;
    OK(tt_compare_run(centered, 1, &small, 1, &o, 1e-5, 1e-5, &r));
    ck_assert(!r.differs && r.output == -1);

    /* state the trace froze: no pass is to blame */
    calls_seen = 0;
    ck_assert_int_eq(tt_expect_compiled_matches_eager(stateful, 1, &small, 1, NULL, 0, 0),
                     TT_EEXPECT);
    ck_assert_error(TT_EEXPECT, "it differs with every pass off too: the traced graph itself "
                                "computes another result");
    ck_assert_error(TT_EEXPECT, "the first node that differs is mul (tt::mul.Scalar at "
                                "test_testing.c:");
    ck_assert_int_eq(tt_compare_run(NULL, 1, &small, 1, NULL, 0, 0, &r), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_compare_run: expected a function");
    tt_clear_error();
    tt_release(small), tt_release(x);
    tt_library_free(lib);
}
END_TEST

/* ----------------------------------------------------------- hash log */

static double scale_by = 2;
static int line_scale;

static tt_status scaled_mlp(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_scope_begin();
    tt_tensor *h = tt_matmul(in[0], in[0]);
    line_scale = __LINE__ + 1;
    out[0] = tt_keep(tt_relu(tt_mul_scalar(h, scale_by)));
    tt_scope_end();
    return out[0] ? TT_OK : tt_errcode();
}

/* Runs scaled_mlp eagerly and compiled (twice) under a hash log at path. */
static void log_run(const char *path, tt_tensor *x)
{
    tt_tensor *out = NULL;
    tt_compiled *c = NN(tt_compile(scaled_mlp, 1, 1, &(tt_trace_opts){.name = "mlp"}));
    OK(tt_hash_log_begin(path));
    OK(scaled_mlp(&x, 1, &out, 1, NULL));
    out = tt_release(out);
    for (int k = 0; k < 2; k++) {
        OK(tt_compiled_call(c, &x, &out));
        out = tt_release(out);
    }
    OK(tt_hash_log_end());
    tt_compiled_free(c);
}

START_TEST(test_hash_log)
{
    char dir[] = "/tmp/tt_hashlog_XXXXXX", a[64], b[64], c[64];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(a, sizeof a, "%s/a.log", dir);
    snprintf(b, sizeof b, "%s/b.log", dir);
    snprintf(c, sizeof c, "%s/c.log", dir);
    tt_manual_seed(1);
    tt_tensor *x = NN(tt_randn(TT_SHAPE(4, 4), TT_F32));
    scale_by = 2;
    log_run(a, x);
    log_run(b, x);
    OK(tt_hash_log_compare(a, b));
    /* the log: a header, 3 eager ops (matmul, mul, relu), then each
     * compiled call's steps with their nodes */
    char *text = tt_test_read_file(a);
    ck_assert_msg(strncmp(text, "# tensortrace hash log 1:", 25) == 0, "%s", text);
    ck_assert_msg(strstr(text, "0\top\ttt::matmul\t-\ttest_testing.c:"), "%s", text);
    ck_assert_msg(strstr(text, "\tstep\ttt::matmul\tmatmul\ttest_testing.c:"), "%s", text);
    ck_assert_msg(strstr(text, "\tf32[4, 4] "), "%s", text);
    ck_assert_int_eq(tt_test_count(text, "\tstep\t"), 2 * 2); /* matmul, fused mul+relu */
    /* only the program's ops: not the allocations a plan step makes */
    ck_assert_int_eq(tt_test_count(text, "\top\t"), 3);
    free(text);

    /* a change in one constant: the first divergence is the mul */
    scale_by = 3;
    log_run(c, x);
    ck_assert_int_eq(tt_hash_log_compare(a, c), TT_EEXPECT);
    char want[160];
    snprintf(want, sizeof want, "tt_hash_log_compare: entry 1 is the first divergence: "
                                "tt::mul.Scalar at test_testing.c:%d gives f32[4, 4] ",
             line_scale);
    ck_assert_error(TT_EEXPECT, want);
    ck_assert_error(TT_EEXPECT, "(line 3) and f32[4, 4] ");

    /* another program: other ops */
    FILE *f = fopen(c, "w");
    fputs("# tensortrace hash log 1: made by hand\n0\top\ttt::exp\t-\tx.c:1\tf32[1] 0\n", f);
    fclose(f);
    ck_assert_int_eq(tt_hash_log_compare(a, c), TT_EEXPECT);
    ck_assert_error(TT_EEXPECT, "tt_hash_log_compare: entry 0: the runs call different ops: "
                                "tt::matmul at test_testing.c:");
    /* a log cut short: the other goes on */
    f = fopen(c, "w");
    fputs("# tensortrace hash log 1: made by hand\n", f);
    fclose(f);
    ck_assert_int_eq(tt_hash_log_compare(a, c), TT_EEXPECT);
    ck_assert_error(TT_EEXPECT, "stops after 0 entries while");
    f = fopen(c, "w");
    fputs("# tensortrace hash log 1: made by hand\n0\top\ttt::matmul", f);
    fclose(f);
    ck_assert_int_eq(tt_hash_log_compare(a, c), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "is not a hash log entry (cut short, or edited?)");
    f = fopen(c, "w");
    fputs("hello\n", f);
    fclose(f);
    ck_assert_int_eq(tt_hash_log_compare(a, c), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "is not a tensortrace hash log (its first line should start "
                               "\"# tensortrace hash log 1:\")");
    ck_assert_int_eq(tt_hash_log_compare(a, "/nonexistent/x.log"), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_hash_log_compare: cannot read \"/nonexistent/x.log\": No such "
                               "file or directory");
    ck_assert_int_eq(tt_hash_log_compare(NULL, a), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_hash_log_compare: argument 'a' is NULL");

    /* misuse */
    ck_assert_int_eq(tt_hash_log_end(), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_hash_log_end: this thread writes no hash log");
    ck_assert_int_eq(tt_hash_log_begin("/nonexistent/x.log"), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_hash_log_begin: cannot write \"/nonexistent/x.log\"");
    OK(tt_hash_log_begin(c));
    ck_assert_int_eq(tt_hash_log_begin(b), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_hash_log_begin: this thread already writes a hash log");
    OK(tt_hash_log_end());
    tt_clear_error();
    unlink(a), unlink(b), unlink(c);
    rmdir(dir);
    tt_release(x);
}
END_TEST

static Suite *testing_suite(void)
{
    Suite *s = suite_create("testing");
    TCase *tc = tt_tcase("expectations");
    tcase_add_test(tc, test_fullgraph_and_graph_counts);
    tcase_add_test(tc, test_no_recompile);
    tcase_add_test(tc, test_graph_ops);
    tcase_add_test(tc, test_snapshot_inline);
    tcase_add_test(tc, test_snapshot_file);
    tcase_add_test(tc, test_graphs_equal_dot);
    tcase_add_test(tc, test_bisector);
    tcase_add_test(tc, test_hash_log);
    suite_add_tcase(s, tc);
    return s;
}

TT_TEST_MAIN(testing_suite)
