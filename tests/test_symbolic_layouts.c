/* Symbolic compile of inputs in every layout a caller hands over:
 * transposed, permuted, sliced with a step, a column slice of a wider
 * matrix, a storage offset, expanded, with size-1 dims. Each is compiled
 * in symbolic mode and called on two batch sizes: the outputs (values,
 * sizes, strides, offsets) equal eager's, the trace's outputs carry
 * eager's strides, one plan serves both calls, and the guards say what
 * the plan assumes about the layout (difftest finding F7: these inputs
 * were traced as contiguous, so the fresh plan failed its own guards). */
#include "tt_test.h"

/* Builds input `x` of a layout with batch size b (a new reference). */
typedef tt_tensor *(*make_fn)(int64_t b);

#define NOUT 4

/* The outputs whose layout follows the input's: an elementwise chain, a
 * broadcast against a reduction, a view (transpose), and the input
 * itself. */
static tt_status model(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_status st = TT_OK;
    tt_scope_begin();
    tt_tensor *x = in[0];
    int64_t last = -1;
    tt_tensor *s = NULL, *y = tt_add_scalar(tt_mul_scalar(x, 2), 1);
    /* Each status is read right after its call (a later call that
     * succeeds clears the error). */
    if (!(out[0] = tt_keep(y)) || !(s = tt_sum(x, 1, &last, true)) ||
        !(out[1] = tt_keep(tt_sub(x, s))) || !(out[2] = tt_keep(tt_transpose(x, 0, -1))))
        st = tt_errcode();
    out[3] = st ? NULL : tt_retain(x);
    tt_scope_end();
    if (st)
        for (int j = 0; j < NOUT; j++)
            out[j] = tt_release(out[j]);
    return st;
}

/* got equals want: values, sizes, and the strides of dims of size >= 2
 * (as eager's; a size-1 dim's stride says nothing) and the offset. */
static void assert_same_tensor(const tt_tensor *got, const tt_tensor *want, const char *what)
{
    char a[128], b[128], sa[128], sb[128];
    tt_describe(got, a, sizeof a);
    tt_describe(want, b, sizeof b);
    tt_strides_str(got, sa, sizeof sa);
    tt_strides_str(want, sb, sizeof sb);
    ck_assert_msg(!tt_is_fake(got), "%s: a fake output", what);
    ck_assert_msg(tt_dtype_of(got) == tt_dtype_of(want) && tt_ndim(got) == tt_ndim(want),
                  "%s: %s vs eager %s", what, a, b);
    for (int d = 0; d < tt_ndim(want); d++) {
        ck_assert_msg(tt_sizes(got)[d] == tt_sizes(want)[d], "%s: %s vs eager %s", what, a, b);
        ck_assert_msg(tt_sizes(want)[d] < 2 || tt_strides(got)[d] == tt_strides(want)[d],
                      "%s: %s strides %s vs eager %s strides %s", what, a, sa, b, sb);
    }
    ck_assert_msg(tt_storage_offset(got) == tt_storage_offset(want),
                  "%s: storage offset %lld vs eager %lld", what,
                  (long long)tt_storage_offset(got), (long long)tt_storage_offset(want));
    tt_test_assert_same_bits(got, want, what);
}

/* The symbolic trace's outputs, at the example sizes, have eager's sizes
 * and strides (dims of size >= 2) and offsets. */
static void assert_trace_meta(const tt_graph *g, tt_tensor **want, const char *what)
{
    int on = tt_graph_num_nodes(g) - 1;
    ck_assert_int_eq(tt_graph_node_kind(g, on), TT_NODE_OUTPUT);
    for (int j = 0; j < NOUT; j++) {
        const tt_tensor *v = tt_graph_node_value(g, tt_graph_node_arg_node(g, on, j), 0);
        const tt_tensor *e = want[j];
        char a[128], b[128], sa[128], sb[128];
        tt_describe(v, a, sizeof a);
        tt_describe(e, b, sizeof b);
        tt_strides_str(v, sa, sizeof sa);
        tt_strides_str(e, sb, sizeof sb);
        ck_assert_msg(tt_ndim(v) == tt_ndim(e), "%s: output %d: traced %s vs eager %s", what, j,
                      a, b);
        for (int d = 0; d < tt_ndim(e); d++) {
            ck_assert_msg(tt_sym_hint(tt_sizes(v)[d]) == tt_sizes(e)[d] &&
                              (tt_sizes(e)[d] < 2 ||
                               tt_sym_hint(tt_strides(v)[d]) == tt_strides(e)[d]),
                          "%s: output %d: traced %s strides %s, eager %s strides %s", what, j,
                          a, sa, b, sb);
        }
        ck_assert_msg(tt_sym_hint(tt_storage_offset(v)) == tt_storage_offset(e),
                      "%s: output %d: traced offset %lld, eager %lld", what, j,
                      (long long)tt_sym_hint(tt_storage_offset(v)),
                      (long long)tt_storage_offset(e));
    }
}

static FILE *log_file;

static char *read_log(void)
{
    OK(tt_set_log(NULL));
    tt_set_log_stream(NULL);
    long n = ftell(log_file);
    char *text = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(text);
    rewind(log_file);
    ck_assert_int_eq(fread(text, 1, (size_t)n, log_file), n);
    text[n] = '\0';
    fclose(log_file);
    return text;
}

/* Compiles model in symbolic mode, calls it on the layout at batch size 4
 * (make) and 7 (second, or make when NULL) against eager, checks one plan
 * served both, that its guard line (TT_LOG=guards) contains `guard`, and
 * that the symbolic trace's outputs have eager's layout and its graph
 * replays on the second call's input. */
static void check_layout_then(make_fn make, make_fn second, const char *guard)
{
    make_fn makes[2] = {make, second ? second : make};
    tt_sym_reset(); /* symbols from s0, so `guard` can name them */
    log_file = tmpfile();
    ck_assert_ptr_nonnull(log_file);
    tt_set_log_stream(log_file);
    OK(tt_set_log("guards"));
    tt_compiled *c = NN(tt_compile(model, 1, NOUT, &(tt_trace_opts){.mode = TT_TRACE_SYMBOLIC}));
    static const int64_t batches[2] = {4, 7};
    for (int k = 0; k < 2; k++) {
        tt_tensor *x = NN(makes[k](batches[k]));
        tt_tensor *got[NOUT] = {0}, *want[NOUT] = {0};
        OK(tt_compiled_call(c, &x, got));
        OK(model(&x, 1, want, NOUT, NULL));
        for (int j = 0; j < NOUT; j++) {
            char what[64];
            snprintf(what, sizeof what, "batch %lld, output %d", (long long)batches[k], j);
            assert_same_tensor(got[j], want[j], what);
            tt_release(got[j]);
            tt_release(want[j]);
        }
        tt_release(x);
    }
    tt_compile_stats st;
    tt_compiled_stats(c, &st);
    ck_assert_msg(st.plans == 1 && st.hits == 1, "plans %d hits %lld (last miss: %s)", st.plans,
                  (long long)st.hits, st.last_miss);
    tt_compiled_free(c);
    char *text = read_log();
    ck_assert_msg(strstr(text, guard), "no \"%s\" in the guards:\n%s", guard, text);
    free(text);

    /* The trace itself (what tt-difftest's graph-run check looks at). */
    tt_tensor *x = NN(make(4)), *want[NOUT] = {0}, *got[NOUT] = {0};
    tt_graph *g = NN(tt_trace(model, 1, &x, &(tt_trace_opts){.mode = TT_TRACE_SYMBOLIC,
                                                             .fullgraph = true, .nout = NOUT}));
    OK(model(&x, 1, want, NOUT, NULL));
    assert_trace_meta(g, want, "symbolic trace");
    for (int j = 0; j < NOUT; j++)
        want[j] = tt_release(want[j]);
    tt_release(x);
    x = NN(makes[1](7));
    OK(tt_graph_run(g, 1, &x, NOUT, got));
    OK(model(&x, 1, want, NOUT, NULL));
    for (int j = 0; j < NOUT; j++) {
        char what[64];
        snprintf(what, sizeof what, "graph run at batch 7, output %d", j);
        assert_same_tensor(got[j], want[j], what);
        tt_release(got[j]);
        tt_release(want[j]);
    }
    tt_release(x);
    tt_graph_free(g);
}

static void check_layout(make_fn make, const char *guard)
{
    check_layout_then(make, NULL, guard);
}

/* A call in another layout than the plan's traces again (the guard that
 * failed is `miss`), and is right. */
static void check_other_layout(make_fn traced, make_fn other, const char *miss)
{
    tt_sym_reset(); /* symbols from s0, so `miss` can name them */
    tt_compiled *c = NN(tt_compile(model, 1, NOUT, &(tt_trace_opts){.mode = TT_TRACE_SYMBOLIC}));
    make_fn makes[2] = {traced, other};
    for (int k = 0; k < 2; k++) {
        tt_tensor *x = NN(makes[k](6));
        tt_tensor *got[NOUT] = {0}, *want[NOUT] = {0};
        OK(tt_compiled_call(c, &x, got));
        OK(model(&x, 1, want, NOUT, NULL));
        for (int j = 0; j < NOUT; j++) {
            char what[64];
            snprintf(what, sizeof what, "layout %d, output %d", k, j);
            assert_same_tensor(got[j], want[j], what);
            tt_release(got[j]);
            tt_release(want[j]);
        }
        tt_release(x);
    }
    tt_compile_stats st;
    tt_compiled_stats(c, &st);
    ck_assert_int_eq(st.plans, 2);
    ck_assert_msg(strcmp(st.last_miss, miss) == 0, "last miss \"%s\", expected \"%s\"",
                  st.last_miss, miss);
    tt_compiled_free(c);
}

/* ---------------------------------------------------------------- layouts */

/* The view `v` of `base`, base released (NULL passes through). */
static tt_tensor *view_of(tt_tensor *base, tt_tensor *v)
{
    tt_release(base);
    return v;
}

static tt_tensor *contiguous_2d(int64_t b)
{
    return tt_randn(TT_SHAPE(b, 5), TT_F32);
}

/* [b, 5] with strides [1, b]. */
static tt_tensor *transposed(int64_t b)
{
    tt_tensor *base = tt_randn(TT_SHAPE(5, b), TT_F32);
    return view_of(base, base ? tt_t(base) : NULL);
}

/* [4, b, 3] with strides [1, 12, 4]: a [b, 3, 4] tensor's dims (2, 0, 1). */
static tt_tensor *permuted_3d(int64_t b)
{
    tt_tensor *base = tt_randn(TT_SHAPE(b, 3, 4), TT_F32);
    return view_of(base, base ? tt_permute(base, 3, (int64_t[]){2, 0, 1}) : NULL);
}

/* [b, 5] with strides [10, 2]: every other column. */
static tt_tensor *step_slice(int64_t b)
{
    tt_tensor *base = tt_randn(TT_SHAPE(b, 10), TT_F32);
    return view_of(base, base ? tt_slice(base, 1, 0, 10, 2) : NULL);
}

/* [b, 5] with strides [15, 3]: every third column (another plan). */
static tt_tensor *step3_slice(int64_t b)
{
    tt_tensor *base = tt_randn(TT_SHAPE(b, 15), TT_F32);
    return view_of(base, base ? tt_slice(base, 1, 0, 15, 3) : NULL);
}

/* [b, 3] with strides [8, 1]: the first 3 columns of a [b, 8] matrix. */
static tt_tensor *column_slice(int64_t b)
{
    tt_tensor *base = tt_randn(TT_SHAPE(b, 8), TT_F32);
    return view_of(base, base ? tt_narrow(base, 1, 0, 3) : NULL);
}

/* The same of a [b, 9] matrix (another plan). */
static tt_tensor *column_slice_wider(int64_t b)
{
    tt_tensor *base = tt_randn(TT_SHAPE(b, 9), TT_F32);
    return view_of(base, base ? tt_narrow(base, 1, 0, 3) : NULL);
}

/* [b, 4] from row 1 of a [b + 2, 4] matrix: offset 4, one row. */
static tt_tensor *offset_rows(int64_t b)
{
    tt_tensor *base = tt_randn(TT_SHAPE(b + 2, 4), TT_F32);
    return view_of(base, base ? tt_narrow(base, 0, 1, b) : NULL);
}

/* The same from row 2: offset 8, two rows (the same plan). */
static tt_tensor *offset_two_rows(int64_t b)
{
    tt_tensor *base = tt_randn(TT_SHAPE(b + 2, 4), TT_F32);
    return view_of(base, base ? tt_narrow(base, 0, 2, b) : NULL);
}

/* [b, 4] with strides [0, 1]: one row expanded. */
static tt_tensor *expanded(int64_t b)
{
    tt_tensor *base = tt_randn(TT_SHAPE(1, 4), TT_F32);
    return view_of(base, base ? tt_expand(base, TT_SHAPE(b, 4)) : NULL);
}

/* [b, 1, 3, 1] transposed-dense with size-1 dims whose strides match no
 * other dim's and change with b: nothing reads them, so they are not
 * guarded and one plan serves every b. */
static tt_tensor *size_one_dims(int64_t b)
{
    tt_tensor *base = tt_randn(TT_SHAPE(3 * b + 7 * b), TT_F32);
    return view_of(base, base ? tt_as_strided(base, TT_SHAPE(b, 1, 3, 1),
                                              (int64_t[]){1, 7 * b, b, 5 * b}, 0)
                              : NULL);
}

START_TEST(test_transposed)
{
    check_layout(transposed, "size=[s0, s1], stride=[1, s0])");
    check_other_layout(transposed, contiguous_2d,
                       "in0.stride(0) == 1 (got 5; the plan is for the traced layout)");
}
END_TEST

START_TEST(test_permuted_3d)
{
    check_layout(permuted_3d, "size=[s0, s1, s2], stride=[1, s0*s2, s0])");
}
END_TEST

/* The step is no product of sizes: a constant of the plan, the rows'
 * stride a multiple of the symbolic row length. */
START_TEST(test_step_slice)
{
    check_layout(step_slice, "size=[s0, s1], stride=[s1*2, 2])");
    check_other_layout(step_slice, step3_slice,
                       "in0.stride(1) == 2 (got 3; the plan is for the traced layout)");
}
END_TEST

/* The row stride is the wider matrix's row length: a constant. */
START_TEST(test_column_slice)
{
    check_layout(column_slice, "size=[s0, s1], stride=[8, 1])");
    check_other_layout(column_slice, column_slice_wider,
                       "in0.stride(0) == 8 (got 9; the plan is for the traced layout)");
}
END_TEST

/* The offset is a symbol of its own, as in dynamo: inputs narrowed from
 * other rows (a loop over mini-batches) reuse the plan; an offset of 0 or
 * 1 traces again (specialized, as sizes are). */
START_TEST(test_offset)
{
    check_layout_then(offset_rows, offset_two_rows,
                      "size=[s0, s1], stride=[s1, 1], storage_offset=s2)");
    check_other_layout(offset_rows, contiguous_2d,
                       "in0.storage_offset() >= 2 (got 0; the plan's symbol for it assumes "
                       "it)");
}
END_TEST

/* fn reads the input's offset and passes it on (as_strided over x's
 * storage from x's first element): the graph holds the offset's symbol,
 * so a call from another row reads its own elements, never the traced
 * call's. */
static tt_status window(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    out[0] = tt_as_strided(in[0], TT_SHAPE(2, 3), (int64_t[]){1, 2}, tt_storage_offset(in[0]));
    return out[0] ? TT_OK : tt_errcode();
}

START_TEST(test_offset_read_by_fn)
{
    tt_sym_reset();
    tt_compiled *c = NN(tt_compile(window, 1, 1, &(tt_trace_opts){.mode = TT_TRACE_SYMBOLIC}));
    make_fn makes[3] = {offset_rows, offset_two_rows, offset_rows};
    for (int k = 0; k < 3; k++) {
        tt_tensor *x = NN(makes[k](4 + k)), *got = NULL, *want = NULL;
        OK(tt_compiled_call(c, &x, &got));
        OK(window(&x, 1, &want, 1, NULL));
        assert_same_tensor(got, want, "as_strided from the input's offset");
        tt_release(got);
        tt_release(want);
        tt_release(x);
    }
    tt_compile_stats st;
    tt_compiled_stats(c, &st);
    ck_assert_msg(st.plans == 1, "plans %d (last miss: %s)", st.plans, st.last_miss);
    const tt_graph *g = NN(tt_compiled_graph(c, 0));
    char *text = NN(tt_graph_to_text(g));
    ck_assert_msg(strstr(text, "[1, 2], s2)"), "%s", text);
    free(text);
    tt_compiled_free(c);
}
END_TEST

START_TEST(test_expanded)
{
    check_layout(expanded, "size=[s0, s1], stride=[0, 1])");
    check_other_layout(expanded, contiguous_2d,
                       "in0.stride(0) == 0 (got 5; the plan is for the traced layout)");
}
END_TEST

START_TEST(test_size_one_dims)
{
    check_layout(size_one_dims, "size=[s0, 1, s1, 1], stride=[1, 28, s0, 20])");
}
END_TEST

/* Every allocation of a symbolic compile of a strided and an offset input
 * (the layout's expressions, the offset view) failing in turn: the call
 * fails with TT_ENOMEM or is right, and leaves nothing alive. */
START_TEST(test_out_of_memory)
{
    make_fn makes[2] = {step_slice, offset_rows};
    for (int m = 0; m < 2; m++) {
        tt_tensor *x = NN(makes[m](4)), *want[NOUT] = {0};
        OK(model(&x, 1, want, NOUT, NULL));
        int64_t live = tt_live_tensors(), total = 0, failed = 0;
        for (int64_t n = 0; n <= total; n++) {
            tt_sym_reset(); /* so the expressions are made again */
            tt_compiled *c = NN(tt_compile(model, 1, NOUT,
                                           &(tt_trace_opts){.mode = TT_TRACE_SYMBOLIC}));
            tt_tensor *got[NOUT] = {0};
            int64_t before = tt_debug_alloc_count();
            tt_debug_fail_alloc(n);
            tt_status st = tt_compiled_call(c, &x, got);
            tt_debug_fail_alloc(0);
            if (n == 0) {
                total = tt_debug_alloc_count() - before;
                OK(st);
            }
            if (st) {
                failed++;
                ck_assert_msg(st == TT_ENOMEM, "layout %d, allocation %lld: %s: %s", m,
                              (long long)n, tt_status_name(st), tt_errmsg());
                for (int j = 0; j < NOUT; j++)
                    ck_assert_ptr_null(got[j]);
            } else {
                for (int j = 0; j < NOUT; j++)
                    assert_same_tensor(got[j], want[j], "after an allocation failure");
            }
            for (int j = 0; j < NOUT; j++)
                tt_release(got[j]);
            tt_compiled_free(c);
            ck_assert_msg(tt_live_tensors() == live, "layout %d, allocation %lld: %lld leaked",
                          m, (long long)n, (long long)(tt_live_tensors() - live));
        }
        ck_assert_int_gt(failed, total / 2);
        for (int j = 0; j < NOUT; j++)
            tt_release(want[j]);
        tt_release(x);
    }
}
END_TEST

Suite *symbolic_layouts_suite(void)
{
    Suite *s = suite_create("symbolic_layouts");
    TCase *tc = tt_tcase("layouts");
    tcase_add_test(tc, test_transposed);
    tcase_add_test(tc, test_permuted_3d);
    tcase_add_test(tc, test_step_slice);
    tcase_add_test(tc, test_column_slice);
    tcase_add_test(tc, test_offset);
    tcase_add_test(tc, test_offset_read_by_fn);
    tcase_add_test(tc, test_expanded);
    tcase_add_test(tc, test_size_one_dims);
    tcase_add_test(tc, test_out_of_memory);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(symbolic_layouts_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
