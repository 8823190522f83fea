/* The tracer: the graph IR traced in fake, real and symbolic modes (node
 * kinds, FX-style names, ops, recorded values, constants, factories, the
 * text printer), the interpreter, fake tracing of a model far larger than
 * memory, custom ops as opaque nodes, graph breaks in fullgraph mode and
 * their reports, tt_explain_run's split graphs, the tutorial's crop and
 * numpy_sin, a traced training step, and dynamic sizes.
 *
 * Break reports name the user's line: the tests capture __LINE__ right
 * next to the call that breaks and compare. */
#include "tt_test.h"
#include "tutorial_ops.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* ================================================================ helpers */

/* a and b have the same dtype, sizes and values (bit for bit as doubles). */
static void assert_same(const tt_tensor *a, const tt_tensor *b, const char *what)
{
    char x[128], y[128];
    ck_assert_msg(tt_dtype_of(a) == tt_dtype_of(b) && tt_ndim(a) == tt_ndim(b) &&
                      memcmp(tt_sizes(a), tt_sizes(b), sizeof(tt_size) * (size_t)tt_ndim(a)) == 0,
                  "%s: %s vs %s", what, tt_describe(a, x, sizeof x), tt_describe(b, y, sizeof y));
    double *va = tt_test_values(a), *vb = tt_test_values(b);
    for (int64_t i = 0; i < tt_numel(a); i++)
        ck_assert_msg(va[i] == vb[i] || (isnan(va[i]) && isnan(vb[i])),
                      "%s: element %lld is %.17g, expected %.17g", what, (long long)i, va[i], vb[i]);
    free(va);
    free(vb);
}

static void assert_shape(const tt_tensor *t, int ndim, const int64_t *sizes, tt_dtype dt)
{
    char d[128];
    ck_assert_msg(t && tt_ndim(t) == ndim && tt_dtype_of(t) == dt &&
                      memcmp(tt_sizes(t), sizes, sizeof(int64_t) * (size_t)ndim) == 0,
                  "got %s", t ? tt_describe(t, d, sizeof d) : "NULL");
}

static const tt_op *op_named(const char *name) { return NN(tt_op_find(name)); }

/* The index of the first node named `name`, failing the test if none. */
static int node_named(const tt_graph *g, const char *name)
{
    for (int i = 0; i < tt_graph_num_nodes(g); i++)
        if (strcmp(tt_graph_node_name(g, i), name) == 0)
            return i;
    ck_abort_msg("no node named %s", name);
    return -1;
}

static int count_kind(const tt_graph *g, tt_node_kind k)
{
    int n = 0;
    for (int i = 0; i < tt_graph_num_nodes(g); i++)
        n += tt_graph_node_kind(g, i) == k;
    return n;
}

/* The printed graph without its source-line comments (test_text_golden
 * and test_node_locations check those). */
static char *text_of(const tt_graph *g) { return tt_test_strip_locs(NN(tt_graph_to_text(g))); }

static void assert_contains(const char *s, const char *needle)
{
    ck_assert_msg(strstr(s, needle) != NULL, "\"%s\" does not contain \"%s\"", s, needle);
}

/* ============================================================ custom ops */

static tt_library *lib;
static const tt_op *crop_op, *twice_op, *sin_op, *positive_op, *split_op;

/* pic is (C,H,W), box = (x0,y0,x1,y1); out is (C, y1-y0, x1-x0),
 * contiguous. Made of built-ins (permute, narrow, mul), none of which may
 * appear in a traced graph: the op is one opaque node. */
static tt_status crop_kernel(tt_frame *f)
{
    tt_tensor *pic, *hwc = NULL, *rows = NULL, *reg = NULL, *chw = NULL, *one = NULL, *m = NULL;
    const int64_t *b;
    tt_status st = tt_test_crop_read_args(f, &pic, &b);
    if (st)
        return st;
    hwc = tt_permute(pic, TT_SHAPE(1, 2, 0));
    rows = hwc ? tt_narrow(hwc, 0, b[1], b[3] - b[1]) : NULL;
    reg = rows ? tt_narrow(rows, 1, b[0], b[2] - b[0]) : NULL;
    chw = reg ? tt_permute(reg, TT_SHAPE(2, 0, 1)) : NULL;
    one = chw ? tt_ones(TT_SHAPE(1), tt_dtype_of(pic)) : NULL;
    m = one ? tt_mul(chw, one) : NULL;
    st = m ? tt_return(f, 0, tt_contiguous(m)) : tt_errcode();
    tt_release(m);
    tt_release(one);
    tt_release(chw);
    tt_release(reg);
    tt_release(rows);
    tt_release(hwc);
    return st;
}

#include "positive_op.h"

/* mylib::split2(Tensor x) -> (Tensor, Tensor): (x + 1, x * 2). */
static tt_status split_kernel(tt_frame *f)
{
    tt_tensor *x;
    tt_status st = tt_arg_tensor(f, 0, &x);
    if (st)
        return st;
    st = tt_return(f, 0, tt_add_scalar(x, 1));
    return st ? st : tt_return(f, 1, tt_mul_scalar(x, 2));
}

static tt_status split_fake(tt_frame *f)
{
    tt_tensor *x;
    tt_status st = tt_arg_tensor(f, 0, &x);
    if (st)
        return st;
    st = tt_return(f, 0, tt_empty_like(x));
    return st ? st : tt_return(f, 1, tt_empty_like(x));
}

static void ops_setup(void)
{
    tt_test_setup();
    tt_sym_reset(); /* symbols print as s0, s1... in every test */
    lib = NN(tt_library_new(TT_LIB_DEF, "mylib"));
    crop_op = tt_test_define_contiguous_crop(lib, crop_kernel);
    twice_op = tt_test_define_twice(lib);
    /* As the tutorial: no fake kernel, a mutable op returning nothing. */
    sin_op = NN(tt_custom_op_define(lib, &(tt_custom_op_spec){
        .schema = "mylib::numpy_sin(Tensor input, Tensor(a!) output) -> ()",
        .kernel = tutorial_numpy_sin_kernel,
    }));
    positive_op = NN(tt_custom_op_define(lib, &(tt_custom_op_spec){
        .schema = "mylib::positive(Tensor x) -> Tensor",
        .mutates_args = "",
        .kernel = positive_kernel,
        .fake = positive_fake,
    }));
    split_op = NN(tt_custom_op_define(lib, &(tt_custom_op_spec){
        .schema = "mylib::split2(Tensor x) -> (Tensor, Tensor)",
        .mutates_args = "",
        .kernel = split_kernel,
        .fake = split_fake,
    }));
}

static void ops_teardown(void)
{
    lib = tt_library_free(lib);
    tt_test_teardown();
}

/* ======================================================= traced functions */

/* relu((x + y) * y + (x + y)) */
static tt_status small(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_scope_begin();
    tt_tensor *a = tt_add(in[0], in[1]);
    tt_tensor *b = a ? tt_mul(a, in[1]) : NULL;
    tt_tensor *c = b ? tt_add(b, a) : NULL;
    out[0] = tt_keep(c ? tt_relu(c) : NULL);
    tt_scope_end();
    return out[0] ? TT_OK : tt_errcode();
}

static tt_tensor *xy[2];

static void make_xy(int64_t n, int64_t m)
{
    xy[0] = NN(tt_randn(TT_SHAPE(n, m), TT_F32));
    xy[1] = NN(tt_randn(TT_SHAPE(n, m), TT_F32));
}

static void free_xy(void)
{
    xy[0] = tt_release(xy[0]);
    xy[1] = tt_release(xy[1]);
}

/* ================================================================ graph IR */

START_TEST(test_fake_graph)
{
    make_xy(2, 3);
    tt_graph *g = NN(tt_trace(small, 2, xy, &(tt_trace_opts){.mode = TT_TRACE_FAKE}));
    OK(tt_graph_verify(g));
    ck_assert_int_eq(tt_graph_num_nodes(g), 7);
    ck_assert_int_eq(tt_graph_num_inputs(g), 2);
    ck_assert_int_eq(tt_graph_num_outputs(g), 1);
    static const struct {
        tt_node_kind kind;
        const char *name, *op;
    } want[] = {
        {TT_NODE_PLACEHOLDER, "in0", NULL}, {TT_NODE_PLACEHOLDER, "in1", NULL},
        {TT_NODE_OP, "add", "tt::add.Tensor"}, {TT_NODE_OP, "mul", "tt::mul.Tensor"},
        {TT_NODE_OP, "add_1", "tt::add.Tensor"}, {TT_NODE_OP, "relu", "tt::relu"},
        {TT_NODE_OUTPUT, "output", NULL},
    };
    for (int i = 0; i < 7; i++) {
        ck_assert_int_eq(tt_graph_node_kind(g, i), want[i].kind);
        ck_assert_str_eq(tt_graph_node_name(g, i), want[i].name);
        if (want[i].op)
            ck_assert_ptr_eq(tt_graph_node_op(g, i), op_named(want[i].op));
        else
            ck_assert_ptr_null(tt_graph_node_op(g, i));
        if (i < 6) {
            ck_assert_int_eq(tt_graph_node_num_outputs(g, i), 1);
            const tt_tensor *v = NN(tt_graph_node_value(g, i, 0));
            ck_assert_msg(tt_is_fake(v), "node %d: the fake trace recorded a real value", i);
            assert_shape(v, 2, (int64_t[]){2, 3}, TT_F32);
            ck_assert_ptr_null(tt_graph_node_value(g, i, 1));
        } else {
            ck_assert_int_eq(tt_graph_node_num_outputs(g, i), 0);
            ck_assert_ptr_null(tt_graph_node_value(g, i, 0));
        }
    }
    /* Overload-less names match every overload; prefixes do not. */
    ck_assert_int_eq(tt_graph_count_op(g, "tt::add"), 2);
    ck_assert_int_eq(tt_graph_count_op(g, "tt::add.Tensor"), 2);
    ck_assert_int_eq(tt_graph_count_op(g, "tt::add.Scalar"), 0);
    ck_assert_int_eq(tt_graph_count_op(g, "tt::mul"), 1);
    ck_assert_int_eq(tt_graph_count_op(g, "tt::relu"), 1);
    ck_assert_int_eq(tt_graph_count_op(g, "tt::rel"), 0);
    ck_assert_int_eq(tt_graph_count_op(g, NULL), 0);
    ck_assert_int_eq(tt_graph_count_op(NULL, "tt::add"), 0);
    /* Out-of-range queries. */
    ck_assert_ptr_null(tt_graph_node_name(g, 7));
    ck_assert_ptr_null(tt_graph_node_name(g, -1));
    ck_assert_ptr_null(tt_graph_node_op(g, 99));
    ck_assert_ptr_null(tt_graph_node_value(g, -1, 0));
    ck_assert_int_eq(tt_graph_node_num_outputs(g, 7), 0);
    ck_assert_int_eq(tt_graph_num_nodes(NULL), 0);
    ck_assert_int_eq(tt_graph_num_inputs(NULL), 0);
    ck_assert_int_eq(tt_graph_num_outputs(NULL), 0);
    /* The inputs were not touched (and are not fake). */
    ck_assert(!tt_is_fake(xy[0]) && !tt_is_fake(xy[1]));
    tt_graph_free(g);
    free_xy();
}
END_TEST

START_TEST(test_real_graph_values)
{
    make_xy(3, 4);
    tt_graph *g = NN(tt_trace(small, 2, xy, &(tt_trace_opts){.mode = TT_TRACE_REAL}));
    OK(tt_graph_verify(g));
    ck_assert_int_eq(tt_graph_num_nodes(g), 7);
    /* Real values: each node's value is what the eager op computes. */
    tt_tensor *a = NN(tt_add(xy[0], xy[1]));
    tt_tensor *b = NN(tt_mul(a, xy[1]));
    tt_tensor *c = NN(tt_add(b, a));
    tt_tensor *r = NN(tt_relu(c));
    tt_tensor *want[] = {xy[0], xy[1], a, b, c, r};
    for (int i = 0; i < 6; i++) {
        const tt_tensor *v = tt_graph_node_value(g, i, 0);
        ck_assert_msg(!tt_is_fake(v), "node %d: the real trace recorded a fake value", i);
        assert_same(v, want[i], tt_graph_node_name(g, i));
    }
    tt_release(a);
    tt_release(b);
    tt_release(c);
    tt_release(r);
    tt_graph_free(g);
    free_xy();
}
END_TEST

START_TEST(test_symbolic_sizes)
{
    make_xy(5, 7);
    tt_graph *g = NN(tt_trace(small, 2, xy, &(tt_trace_opts){.mode = TT_TRACE_SYMBOLIC}));
    OK(tt_graph_verify(g));
    char buf[64];
    const tt_tensor *in0 = tt_graph_node_value(g, 0, 0), *in1 = tt_graph_node_value(g, 1, 0);
    ck_assert(tt_is_fake(in0) && tt_has_sym_sizes(in0));
    tt_size_str(tt_sizes(in0)[0], buf, sizeof buf);
    ck_assert_str_eq(buf, "s0");
    tt_size_str(tt_sizes(in0)[1], buf, sizeof buf);
    ck_assert_str_eq(buf, "s1");
    tt_size_str(tt_sizes(in1)[0], buf, sizeof buf);
    ck_assert_str_eq(buf, "s2");
    /* The example values back the symbols. */
    ck_assert_int_eq(tt_sym_hint(tt_sizes(in0)[0]), 5);
    ck_assert_int_eq(tt_sym_hint(tt_sizes(in0)[1]), 7);
    /* The contiguous stride of dim 0 is the symbol of dim 1. */
    ck_assert_int_eq(tt_strides(in0)[0], tt_sizes(in0)[1]);
    const tt_tensor *out = tt_graph_node_value(g, node_named(g, "relu"), 0);
    ck_assert(tt_has_sym_sizes(out));
    ck_assert_str_eq(tt_shape_str(out, buf, sizeof buf), "[s0, s1]");
    char *text = text_of(g);
    assert_contains(text, "def forward(in0: \"f32[s0, s1]\", in1: \"f32[s2, s3]\"):\n");
    assert_contains(text, "    relu: \"f32[s0, s1]\" = tt::relu(add_1)\n");
    free(text);
    tt_graph_free(g);
    /* Sizes 0 and 1 are specialized, as PyTorch does. */
    tt_tensor *one = NN(tt_randn(TT_SHAPE(1, 6), TT_F32));
    g = NN(tt_trace(small, 2, (tt_tensor *[]){one, one},
                    &(tt_trace_opts){.mode = TT_TRACE_SYMBOLIC}));
    ck_assert_str_eq(tt_shape_str(tt_graph_node_value(g, 0, 0), buf, sizeof buf), "[1, s4]");
    tt_graph_free(g);
    tt_release(one);
    free_xy();
}
END_TEST

/* x * c + zeros + ones * 0 with c = tt_from_data(...) made inside: c is
 * lifted as a constant, the factories are nodes. */
static const float consts[3] = {1.5f, -2.0f, 4.0f};

static tt_status with_constant(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    tt_scope_begin();
    tt_tensor *c = tt_from_data(TT_SHAPE(3), TT_F32, consts);
    tt_tensor *z = tt_zeros(TT_SHAPE(2, 3), TT_F32);
    tt_tensor *e = tt_empty(TT_SHAPE(2, 3), TT_F32);
    tt_tensor *m = c ? tt_mul(in[0], c) : NULL;
    tt_tensor *a = m && z ? tt_add(m, z) : NULL;
    tt_status st = e ? tt_zero_(e) : tt_errcode(); /* empty's values are not a result */
    tt_tensor *b = a && !st ? tt_add(a, e) : NULL;
    /* A real tensor from outside (through ud) is a constant too; reading
     * a constant's data is no break: its values are known. */
    double v = 0;
    if (b && !tt_is_fake(ud))
        st = tt_get(c, &v, 1);
    out[0] = tt_keep(b && !st && v == -2.0 ? tt_mul(b, ud) : NULL);
    tt_scope_end();
    return out[0] ? TT_OK : st ? st : tt_errcode();
}

START_TEST(test_constants_and_factories)
{
    tt_tensor *x = NN(tt_randn(TT_SHAPE(2, 3), TT_F32));
    tt_tensor *w = NN(tt_full(TT_SHAPE(3), 0.5, TT_F32));
    for (int mode = TT_TRACE_FAKE; mode <= TT_TRACE_REAL; mode++) {
        tt_graph *g = NN(tt_trace(with_constant, 1, &x,
                                  &(tt_trace_opts){.mode = (tt_trace_mode)mode, .ud = w}));
        OK(tt_graph_verify(g));
        ck_assert_int_eq(count_kind(g, TT_NODE_CONSTANT), 2);
        int c0 = node_named(g, "_tensor_constant0"), c1 = node_named(g, "_tensor_constant1");
        ck_assert_int_eq(tt_graph_node_kind(g, c0), TT_NODE_CONSTANT);
        ck_assert_int_eq(tt_graph_node_kind(g, c1), TT_NODE_CONSTANT);
        /* The constant holds the real data, in every mode. */
        const tt_tensor *cv = tt_graph_node_value(g, c0, 0);
        ck_assert(!tt_is_fake(cv));
        double *v = tt_test_values(cv);
        for (int i = 0; i < 3; i++)
            ck_assert(v[i] == consts[i]);
        free(v);
        ck_assert_ptr_eq(tt_graph_node_value(g, c1, 0), w);
        /* Factories inside traced code are nodes. */
        ck_assert_int_eq(tt_graph_count_op(g, "tt::full"), 1);
        ck_assert_int_eq(tt_graph_count_op(g, "tt::empty"), 1);
        ck_assert_int_eq(tt_graph_count_op(g, "tt::zero_"), 1);
        const tt_tensor *fv = tt_graph_node_value(g, node_named(g, "full"), 0);
        ck_assert_int_eq(tt_is_fake(fv), mode == TT_TRACE_FAKE);
        assert_shape(fv, 2, (int64_t[]){2, 3}, TT_F32);
        char *text = text_of(g);
        assert_contains(text, "    _tensor_constant0: \"f32[3]\" = constant\n");
        assert_contains(text, " = tt::full([2, 3], 0, dtype=f32)\n");
        assert_contains(text, " = tt::empty([2, 3], dtype=f32)\n");
        assert_contains(text, "tt::mul.Tensor(in0, _tensor_constant0)\n");
        free(text);
        /* The interpreter replays the factories and uses the constants. */
        tt_tensor *x2 = NN(tt_randn(TT_SHAPE(2, 3), TT_F32)), *got, *want;
        OK(tt_graph_run(g, 1, &x2, 1, &got));
        OK(with_constant(&x2, 1, &want, 1, w));
        assert_same(got, want, "replayed constants");
        tt_release(got);
        tt_release(want);
        tt_release(x2);
        tt_graph_free(g);
    }
    tt_release(w);
    tt_release(x);
}
END_TEST

/* add_scaled (a keyword argument), a Scalar op, a constant, a view with
 * an int list, a factory, an in-place op on an intermediate. */
static int for_text_line; /* the line of its first op call */

static tt_status for_text(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_scope_begin();
    for_text_line = __LINE__ + 2;
    tt_tensor *c = tt_from_data(TT_SHAPE(3), TT_F32, consts);
    tt_tensor *a = tt_add_scaled(in[0], in[1], 2.0);
    tt_tensor *b = a && c ? tt_mul(a, c) : NULL;
    tt_tensor *d = b ? tt_mul_scalar(b, 0.5) : NULL;
    tt_tensor *o = tt_ones(TT_SHAPE(2, 3), TT_F32);
    tt_tensor *e = d && o ? tt_sub(d, o) : NULL;
    tt_status st = e ? tt_relu_(e) : tt_errcode();
    tt_tensor *t = st ? NULL : tt_transpose(e, 0, 1);
    tt_tensor *r = t ? tt_reshape(t, TT_SHAPE(6)) : NULL;
    out[0] = tt_keep(r);
    tt_scope_end();
    return out[0] ? TT_OK : tt_errcode();
}

START_TEST(test_text_golden)
{
    tt_tensor *in[2] = {NN(tt_randn(TT_SHAPE(2, 3), TT_F32)), NN(tt_randn(TT_SHAPE(3), TT_F32))};
    tt_graph *g = NN(tt_trace(for_text, 2, in, &(tt_trace_opts){.name = "small_model"}));
    char *text = NN(tt_graph_to_text(g));
    /* Each op line ends with the line of the call that made it: the file's
     * base name, the line, the function. */
    char golden[2048];
    int l = for_text_line;
    snprintf(golden, sizeof golden,
             "def small_model(in0: \"f32[2, 3]\", in1: \"f32[3]\"):\n"
             "    add: \"f32[2, 3]\" = tt::add.Tensor(in0, in1, alpha=2)"
             "  # test_tracer.c:%d in for_text\n"
             "    _tensor_constant0: \"f32[3]\" = constant\n"
             "    mul: \"f32[2, 3]\" = tt::mul.Tensor(add, _tensor_constant0)"
             "  # test_tracer.c:%d in for_text\n"
             "    mul_1: \"f32[2, 3]\" = tt::mul.Scalar(mul, 0.5)  # test_tracer.c:%d in for_text\n"
             "    full: \"f32[2, 3]\" = tt::full([2, 3], 1, dtype=f32)"
             "  # test_tracer.c:%d in for_text\n"
             "    sub: \"f32[2, 3]\" = tt::sub.Tensor(mul_1, full)  # test_tracer.c:%d in for_text\n"
             "    relu_: \"f32[2, 3]\" = tt::relu_(sub)  # writes sub; test_tracer.c:%d in for_text\n"
             "    transpose: \"f32[3, 2]\" = tt::transpose.int(relu_, 0, 1)"
             "  # test_tracer.c:%d in for_text\n"
             "    reshape: \"f32[6]\" = tt::reshape(transpose, [6])"
             "  # test_tracer.c:%d in for_text\n"
             "    return (reshape,)\n",
             l, l + 1, l + 2, l + 3, l + 4, l + 5, l + 6, l + 7);
    ck_assert_msg(strcmp(text, golden) == 0, "got:\n%s\nexpected:\n%s", text, golden);
    /* tt_graph_print writes the same text. */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = NN(open_memstream(&buf, &len));
    OK(tt_graph_print(g, f));
    fclose(f);
    ck_assert_str_eq(buf, golden);
    free(buf);
    free(text);
    tt_graph_free(g);
    tt_release(in[0]);
    tt_release(in[1]);
}
END_TEST

/* Each op node records the user's line that made it: the innermost call
 * made from the user's code (a helper's own line, inside the argument list
 * of another call), the user's tt_backward for the nodes its rules make
 * inside the library, nothing for a call through the function itself. */
static int loc_add, loc_relu, loc_backward;

static tt_tensor *relu_helper(const tt_tensor *x)
{
    loc_relu = __LINE__; return tt_relu(x);
}

static tt_status with_lines(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_scope_begin();
    loc_add = __LINE__; tt_tensor *a = tt_add(relu_helper(in[0]), in[1]);
    tt_tensor *loss = a ? tt_sum_all(a) : NULL;
    loc_backward = __LINE__; tt_status st = loss ? tt_backward(loss, NULL) : tt_errcode();
    tt_tensor *n = st ? NULL : (tt_neg)(a);
    out[0] = tt_keep(n);
    tt_scope_end();
    return out[0] ? TT_OK : tt_errcode();
}

START_TEST(test_node_locations)
{
    tt_tensor *in[2] = {NN(tt_randn(TT_SHAPE(2, 3), TT_F32)), NN(tt_randn(TT_SHAPE(2, 3), TT_F32))};
    OK(tt_set_requires_grad(in[0], true));
    tt_graph *g = NN(tt_trace(with_lines, 2, in, NULL));
    char *text = NN(tt_graph_to_text(g));
    char want[512];
    snprintf(want, sizeof want,
             "    relu: \"f32[2, 3]\" = tt::relu(in0)  # test_tracer.c:%d in relu_helper\n"
             "    add: \"f32[2, 3]\" = tt::add.Tensor(relu, in1)  # test_tracer.c:%d in with_lines\n"
             "    sum: \"f32[]\" = tt::sum(add)  # test_tracer.c:%d in with_lines\n",
             loc_relu, loc_add, loc_add + 1);
    assert_contains(text, want);
    assert_contains(text, "    neg: \"f32[2, 3]\" = tt::neg(add)\n");
    /* Every node of the backward has the backward's line. */
    int nback = 0;
    for (int i = 0; i < tt_graph_num_nodes(g); i++) {
        if (tt_graph_node_kind(g, i) != TT_NODE_OP)
            continue;
        tt_srcloc loc = tt_graph_node_loc(g, i);
        const char *name = tt_graph_node_name(g, i);
        if (!strcmp(name, "neg")) {
            ck_assert_ptr_null(loc.file);
            continue;
        }
        ck_assert_msg(loc.file && strstr(loc.file, "test_tracer.c"), "%s: %s", name, loc.file);
        if (!strcmp(name, "relu") || !strcmp(name, "add") || !strcmp(name, "sum"))
            continue;
        nback++;
        ck_assert_msg(loc.line == loc_backward && !strcmp(loc.func, "with_lines"),
                      "%s: line %d in %s, not the backward's %d", name, loc.line, loc.func,
                      loc_backward);
    }
    ck_assert_int_gt(nback, 0);
    /* Placeholders, the output, and nodes out of range have none. */
    ck_assert_ptr_null(tt_graph_node_loc(g, 0).file);
    ck_assert_ptr_null(tt_graph_node_loc(g, tt_graph_num_nodes(g) - 1).file);
    ck_assert_ptr_null(tt_graph_node_loc(g, -1).file);
    ck_assert_ptr_null(tt_graph_node_loc(NULL, 0).file);
    /* The DOT has the line as the node's tooltip. */
    char *dot = NN(tt_graph_to_dot(g));
    snprintf(want, sizeof want,
             "[label=\"relu\\ntt::relu\\nf32[2, 3]\", shape=box, style=\"rounded,filled\", "
             "fillcolor=\"#eeeeee\", tooltip=\"test_tracer.c:%d in relu_helper\"];\n", loc_relu);
    assert_contains(dot, want);
    assert_contains(dot, "[label=\"neg\\ntt::neg\\nf32[2, 3]\", shape=box, "
                         "style=\"rounded,filled\", fillcolor=\"#eeeeee\"];\n");
    /* No frame is left behind on this thread. */
    ck_assert_ptr_null(tt_callframe_top);
    ck_assert_ptr_null(tt_callsite().file);
    free(dot);
    free(text);
    tt_graph_free(g);
    tt_release(in[0]);
    tt_release(in[1]);
}
END_TEST

/* A multi-output op node prints as a tuple and is read by index. */
static tt_status two_outputs(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_value r[2];
    tt_status st = tt_op_call(split_op, (tt_value[]){tt_v_tensor(in[0])}, 1, r, 2);
    if (st)
        return st;
    out[0] = tt_sub(r[1].u.t, r[0].u.t);
    out[1] = tt_retain(r[0].u.t);
    tt_value_clear(&r[0]);
    tt_value_clear(&r[1]);
    return out[0] ? TT_OK : tt_errcode();
}

/* Four adds of in1 to in0, then two sins. */
static tt_status repeats(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_tensor *x = tt_retain(in[0]);
    for (int i = 0; i < 6 && x; i++) {
        tt_tensor *y = i < 4 ? tt_add(x, in[1]) : tt_sin(x);
        tt_release(x);
        x = y;
    }
    out[0] = x;
    return x ? TT_OK : tt_errcode();
}

/* Repeats are numbered from a counter per base name; a number some other
 * node already holds (here an input named like a repeat) is skipped, and
 * a name that merely looks numbered does not move a counter. */
START_TEST(test_repeat_names)
{
    make_xy(2, 3);
    const char *names[] = {"add_2", "sin_1x"};
    tt_graph *g = NN(tt_trace(repeats, 2, xy,
                              &(tt_trace_opts){.mode = TT_TRACE_FAKE, .input_names = names}));
    OK(tt_graph_verify(g));
    static const char *want[] = {"add_2", "sin_1x", "add", "add_1", "add_3", "add_4",
                                 "sin", "sin_1", "output"};
    ck_assert_int_eq(tt_graph_num_nodes(g), 9);
    for (int i = 0; i < 9; i++)
        ck_assert_str_eq(tt_graph_node_name(g, i), want[i]);
    tt_graph_free(g);
    free_xy();
}
END_TEST

START_TEST(test_multiple_outputs)
{
    tt_tensor *x = NN(tt_randn(TT_SHAPE(4), TT_F32));
    tt_graph *g = NN(tt_trace(two_outputs, 1, &x, &(tt_trace_opts){.nout = 2}));
    OK(tt_graph_verify(g));
    ck_assert_int_eq(tt_graph_num_outputs(g), 2);
    int s = node_named(g, "split2");
    ck_assert_int_eq(tt_graph_node_num_outputs(g, s), 2);
    char *text = text_of(g);
    assert_contains(text, "    split2: \"(f32[4], f32[4])\" = mylib::split2(in0)\n");
    assert_contains(text, "    sub: \"f32[4]\" = tt::sub.Tensor(split2[1], split2[0])\n");
    assert_contains(text, "    return (sub, split2[0])\n");
    free(text);
    tt_tensor *got[2], *want[2];
    OK(tt_graph_run(g, 1, &x, 2, got));
    OK(two_outputs(&x, 1, want, 2, NULL));
    assert_same(got[0], want[0], "output 0");
    assert_same(got[1], want[1], "output 1");
    for (int i = 0; i < 2; i++) {
        tt_release(got[i]);
        tt_release(want[i]);
    }
    tt_graph_free(g);
    tt_release(x);
}
END_TEST

/* Functions that misbehave. */
static tt_status fails(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    out[0] = tt_add(in[0], in[1]); /* [2, 3] + [4]: a shape error */
    return out[0] ? TT_OK : tt_errcode();
}

static tt_status fails_silently(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)in, (void)nin, (void)out, (void)nout, (void)ud;
    return TT_EINVAL;
}

static tt_status no_output(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    out[0] = tt_neg(in[0]); /* out[1] left NULL */
    return out[0] ? TT_OK : tt_errcode();
}

static int line_ignored;
static void check_report(const char *kind, const char *explanation, const char *hint,
                         const char *func, int line, const char *op);

static tt_status ignores_break(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    double v;
    line_ignored = __LINE__; (void)tt_item(in[0], &v); /* the status is dropped */
    out[0] = tt_neg(in[0]);
    return out[0] ? TT_OK : tt_errcode();
}

static tt_status returns_input(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    out[0] = tt_retain(in[0]);
    return TT_OK;
}

START_TEST(test_trace_errors)
{
    tt_tensor *x = NN(tt_randn(TT_SHAPE(2, 3), TT_F32)), *y = NN(tt_randn(TT_SHAPE(4), TT_F32));
    tt_tensor *one = NN(tt_randn(TT_SHAPE(1), TT_F32));
    ck_assert_ptr_null(tt_trace(NULL, 1, &x, NULL));
    ck_assert_error(TT_EINVAL, "tt_trace: expects a function and 0 to 238609294 inputs");
    ck_assert_ptr_null(tt_trace(small, -1, &x, NULL));
    ck_assert_error(TT_EINVAL, "tt_trace: expects a function");
    /* The one bound on inputs: a compiled call's symbol bindings (8 per
     * input) are indexed by int. */
    ck_assert_ptr_null(tt_trace(small, 268435456, &x, NULL));
    ck_assert_error(TT_EINVAL, "0 to 238609294 inputs");
    ck_assert_ptr_null(tt_trace(small, 2, NULL, NULL));
    ck_assert_error(TT_EINVAL, "tt_trace: expects a function");
    ck_assert_ptr_null(tt_trace(small, 2, (tt_tensor *[]){x, NULL}, NULL));
    ck_assert_error(TT_EINVAL, "tt_trace: argument 'inputs' expects a tensor, got NULL");
    /* Outputs have no bound; a function that writes fewer fails. */
    ck_assert_ptr_null(tt_trace(small, 2, (tt_tensor *[]){x, x}, &(tt_trace_opts){.nout = 65}));
    ck_assert_error(TT_EINVAL, "tt_trace: the traced function returned no tensor for output 1");
    /* The function's own error comes through, in every mode. */
    for (int mode = 0; mode < 3; mode++) {
        ck_assert_ptr_null(tt_trace(fails, 2, (tt_tensor *[]){x, y},
                                    &(tt_trace_opts){.mode = (tt_trace_mode)mode}));
        ck_assert_error(TT_ESHAPE, "tt::add");
    }
    ck_assert_ptr_null(tt_trace(fails_silently, 1, &x, NULL));
    ck_assert_error(TT_EINVAL, "tt_trace: the traced function failed (TT_EINVAL) without a "
                               "message");
    ck_assert_ptr_null(tt_trace(no_output, 1, &x, &(tt_trace_opts){.nout = 2}));
    ck_assert_error(TT_EINVAL, "tt_trace: the traced function returned no tensor for output 1");
    /* A function that ignores a break's status gets the break's own
     * report (its line and hint), in every mode. */
    for (int mode = 0; mode < 3; mode++)
        for (int full = 0; full < 2; full++) {
            ck_assert_ptr_null(tt_trace(ignores_break, 1, &one,
                                        &(tt_trace_opts){.mode = (tt_trace_mode)mode,
                                                         .fullgraph = full}));
            check_report("data read", "tt_item reads the data of", "wrap the code that needs "
                         "the data in a custom op", "ignores_break", line_ignored, NULL);
            /* Real mode without fullgraph gave the real value with TT_OK:
             * nothing was ignored. */
            if (mode == TT_TRACE_REAL && !full)
                ck_assert(strstr(tt_errmsg(), "went on past") == NULL);
            else
                ck_assert_error(TT_EGRAPHBREAK, "\n  (the traced function went on past the "
                                                "break and returned success)");
        }
    /* Returning an input is a graph whose output is a placeholder. */
    tt_graph *g = NN(tt_trace(returns_input, 1, &x, NULL));
    ck_assert_int_eq(tt_graph_num_nodes(g), 2);
    char *text = text_of(g);
    ck_assert_str_eq(text, "def forward(in0: \"f32[2, 3]\"):\n    return (in0,)\n");
    free(text);
    tt_graph_free(g);
    /* Other entry points. */
    ck_assert_int_eq(tt_graph_verify(NULL), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_graph_verify: argument 'graph' is NULL");
    ck_assert_ptr_null(tt_graph_to_text(NULL));
    ck_assert_error(TT_EINVAL, "tt_graph_to_text: argument 'graph' is NULL");
    ck_assert_int_eq(tt_graph_print(NULL, stdout), TT_EINVAL);
    ck_assert_ptr_null(tt_graph_free(NULL));
    ck_assert_int_eq(tt_graph_node_kind(NULL, 0), TT_NODE_OUTPUT);
    /* Nothing stays in a mode after a failed trace. */
    ck_assert_ptr_null(tt_mode_current());
    ck_assert(!tt_fake_mode_enabled());
    tt_release(x);
    tt_release(y);
    tt_release(one);
}
END_TEST

/* ============================================================ interpreter */

START_TEST(test_interpreter)
{
    make_xy(3, 5);
    for (int mode = 0; mode < 3; mode++) {
        tt_graph *g = NN(tt_trace(small, 2, xy, &(tt_trace_opts){.mode = (tt_trace_mode)mode}));
        /* New inputs of the same shape: the eager result, exactly. */
        for (int trial = 0; trial < 3; trial++) {
            tt_tensor *in[2] = {NN(tt_randn(TT_SHAPE(3, 5), TT_F32)),
                                NN(tt_randn(TT_SHAPE(3, 5), TT_F32))};
            tt_tensor *got = NULL, *want = NULL;
            OK(tt_graph_run(g, 2, in, 1, &got));
            ck_assert(!tt_is_fake(got));
            OK(small(in, 2, &want, 1, NULL));
            assert_same(got, want, "interpreted");
            tt_release(got);
            tt_release(want);
            tt_release(in[0]);
            tt_release(in[1]);
        }
        tt_graph_free(g);
    }
    free_xy();
}
END_TEST

START_TEST(test_interpreter_errors)
{
    make_xy(2, 3);
    tt_graph *g = NN(tt_trace(small, 2, xy, NULL));
    tt_tensor *out[2] = {NULL, NULL};
    tt_tensor *d = NN(tt_randn(TT_SHAPE(2, 3), TT_F64)), *r = NN(tt_randn(TT_SHAPE(6), TT_F32));
    ck_assert_int_eq(tt_graph_run(NULL, 2, xy, 1, out), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_graph_run: argument 'graph' is NULL");
    ck_assert_int_eq(tt_graph_run(g, 1, xy, 1, out), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_graph_run: graph forward takes 2 inputs, got 1");
    ck_assert_int_eq(tt_graph_run(g, 3, (tt_tensor *[]){xy[0], xy[1], xy[1]}, 1, out), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "takes 2 inputs, got 3");
    ck_assert_int_eq(tt_graph_run(g, 2, NULL, 1, out), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "takes 2 inputs, got 2");
    ck_assert_int_eq(tt_graph_run(g, 2, xy, 2, out), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "graph forward returns 1 outputs, 'outputs' has room for 2");
    ck_assert_int_eq(tt_graph_run(g, 2, xy, 1, NULL), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "returns 1 outputs, 'outputs' has room for 1");
    ck_assert_int_eq(tt_graph_run(g, 2, (tt_tensor *[]){xy[0], NULL}, 1, out), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_graph_run: input 1 is NULL");
    ck_assert_int_eq(tt_graph_run(g, 2, (tt_tensor *[]){d, xy[1]}, 1, out), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_graph_run: input 0 (in0) is f64 with 2 dims; the graph was "
                               "traced with f32 with 2 dims");
    ck_assert_int_eq(tt_graph_run(g, 2, (tt_tensor *[]){xy[0], r}, 1, out), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "input 1 (in1) is f32 with 1 dims; the graph was traced with "
                               "f32 with 2 dims");
    ck_assert_ptr_null(out[0]);
    /* A kernel's error at run time comes back (shapes are not guarded). */
    tt_tensor *big = NN(tt_randn(TT_SHAPE(4, 3), TT_F32));
    ck_assert_int_eq(tt_graph_run(g, 2, (tt_tensor *[]){xy[0], big}, 1, out), TT_ESHAPE);
    ck_assert_error(TT_ESHAPE, "tt::add");
    ck_assert_ptr_null(out[0]);
    tt_release(big);
    tt_release(d);
    tt_release(r);
    tt_graph_free(g);
    free_xy();
}
END_TEST

/* ============================================= fake mode computes nothing */

#define MLP_LAYERS 20
#define MLP_WIDTH 8192

static tt_status deep_mlp(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_scope_begin();
    tt_tensor *h = in[0];
    for (int l = 0; l < MLP_LAYERS && h; l++) {
        tt_tensor *m = tt_matmul(h, in[1 + 2 * l]);
        tt_tensor *b = m ? tt_add(m, in[2 + 2 * l]) : NULL;
        h = b ? tt_relu(b) : NULL;
    }
    out[0] = tt_keep(h);
    tt_scope_end();
    return out[0] ? TT_OK : tt_errcode();
}

/* The process's peak resident set in kB, after resetting it when the
 * kernel lets us (so the measure is this test's, not an earlier one's). */
static long peak_rss_kb(bool reset)
{
    if (reset) {
        FILE *c = fopen("/proc/self/clear_refs", "w");
        if (c) {
            fputs("5", c);
            fclose(c);
        }
    }
    FILE *f = fopen("/proc/self/status", "r");
    ck_assert_ptr_nonnull(f);
    char line[256];
    long kb = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %ld kB", &kb) == 1)
            break;
    fclose(f);
    ck_assert_int_ge(kb, 0);
    return kb;
}

START_TEST(test_fake_mlp_bigger_than_memory)
{
    tt_tensor *in[1 + 2 * MLP_LAYERS];
    long before = peak_rss_kb(true);
    in[0] = NN(tt_fake_empty(2, (tt_size[]){64, MLP_WIDTH}, TT_F32));
    size_t bytes = 0;
    for (int l = 0; l < MLP_LAYERS; l++) {
        in[1 + 2 * l] = NN(tt_fake_empty(2, (tt_size[]){MLP_WIDTH, MLP_WIDTH}, TT_F32));
        in[2 + 2 * l] = NN(tt_fake_empty(1, (tt_size[]){MLP_WIDTH}, TT_F32));
        bytes += tt_storage_nbytes(in[1 + 2 * l]) + tt_storage_nbytes(in[2 + 2 * l]);
    }
    ck_assert_uint_gt(bytes, (size_t)5 << 30); /* 20 x 256 MiB of weights */
    tt_graph *g = NN(tt_trace(deep_mlp, 1 + 2 * MLP_LAYERS, in, NULL));
    long after = peak_rss_kb(false);
    OK(tt_graph_verify(g));
    ck_assert_int_eq(tt_graph_count_op(g, "tt::matmul"), MLP_LAYERS);
    ck_assert_int_eq(tt_graph_count_op(g, "tt::add"), MLP_LAYERS);
    ck_assert_int_eq(tt_graph_count_op(g, "tt::relu"), MLP_LAYERS);
    for (int i = 0; i < tt_graph_num_nodes(g) - 1; i++)
        ck_assert(tt_is_fake(tt_graph_node_value(g, i, 0)));
    const tt_tensor *o = tt_graph_node_value(g, node_named(g, "relu_19"), 0);
    assert_shape(o, 2, (int64_t[]){64, MLP_WIDTH}, TT_F32);
    ck_assert_msg(after - before < 100 * 1024, "tracing raised the peak RSS by %ld kB", after - before);
    tt_graph_free(g);
    for (int i = 0; i < 1 + 2 * MLP_LAYERS; i++)
        tt_release(in[i]);
}
END_TEST

/* ===================================================== custom ops: opaque */

static const int64_t box[4] = {2, 1, 7, 4}; /* x0, y0, x1, y1 */

static tt_status crop_model(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_tensor *c = tt_call(crop_op, tt_v_tensor(in[0]), tt_v_ints(4, box));
    out[0] = c ? tt_mul_scalar(c, 3) : NULL;
    tt_release(c);
    return out[0] ? TT_OK : tt_errcode();
}

START_TEST(test_custom_op_opaque)
{
    tt_tensor *pic = NN(tt_randn(TT_SHAPE(3, 6, 9), TT_F32));
    for (int mode = 0; mode < 3; mode++) {
        tt_graph *g = NN(tt_trace(crop_model, 1, &pic,
                                  &(tt_trace_opts){.mode = (tt_trace_mode)mode, .fullgraph = true}));
        OK(tt_graph_verify(g));
        ck_assert_int_eq(tt_graph_count_op(g, "mylib::crop"), 1);
        ck_assert_int_eq(count_kind(g, TT_NODE_OP), 2); /* crop, mul.Scalar */
        static const char *inside[] = {"tt::permute", "tt::narrow", "tt::mul.Tensor",
                                       "tt::full", "tt::contiguous", "tt::clone"};
        for (size_t k = 0; k < sizeof inside / sizeof *inside; k++)
            ck_assert_msg(tt_graph_count_op(g, inside[k]) == 0, "%s leaked into the graph",
                          inside[k]);
        int c = node_named(g, "crop");
        ck_assert_ptr_eq(tt_graph_node_op(g, c), crop_op);
        const tt_tensor *v = tt_graph_node_value(g, c, 0);
        if (mode != TT_TRACE_SYMBOLIC)
            assert_shape(v, 3, (int64_t[]){3, 3, 5}, TT_F32);
        ck_assert_int_eq(tt_is_fake(v), mode != TT_TRACE_REAL);
        char *text = text_of(g);
        assert_contains(text, " = mylib::crop(in0, [2, 1, 7, 4])\n");
        free(text);
        /* Replayed: the crop of the picture, times 3. */
        tt_tensor *got;
        OK(tt_graph_run(g, 1, &pic, 1, &got));
        assert_shape(got, 3, (int64_t[]){3, 3, 5}, TT_F32);
        for (int64_t ch = 0; ch < 3; ch++)
            for (int64_t yy = 0; yy < 3; yy++)
                for (int64_t xx = 0; xx < 5; xx++) {
                    double a, b;
                    OK(tt_get(got, &a, ch, yy, xx));
                    OK(tt_get(pic, &b, ch, yy + box[1], xx + box[0]));
                    ck_assert(a == (double)(float)(b * 3));
                }
        tt_release(got);
        tt_graph_free(g);
    }
    tt_release(pic);
}
END_TEST

/* ========================================================== graph breaks */

static int line_read;

/* The tutorial's crop as plain C: reads the pixels. */
static tt_status plain_crop(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_tensor *pic = in[0];
    /* The sizes as numbers: in symbolic mode a size is a symbol, and the
     * C arithmetic below (which runs on after the read's break, over the
     * stand-in memory) needs the example's values. */
    int64_t c = tt_sym_hint(tt_dim_size(pic, 0)), h = box[3] - box[1], w = box[2] - box[0];
    int64_t ph = tt_sym_hint(tt_dim_size(pic, 1)), pw = tt_sym_hint(tt_dim_size(pic, 2));
    tt_tensor *src = tt_contiguous(pic);
    if (!src)
        return tt_errcode();
    line_read = __LINE__; const float *p = tt_data(src);
    if (!p) {
        tt_release(src);
        return tt_errcode();
    }
    float *buf = malloc(sizeof(float) * (size_t)(c * h * w));
    for (int64_t ch = 0; ch < c; ch++)
        for (int64_t y = 0; y < h; y++)
            for (int64_t x = 0; x < w; x++)
                buf[(ch * h + y) * w + x] =
                    p[(ch * ph + y + box[1]) * pw + x + box[0]];
    out[0] = tt_from_data(TT_SHAPE(c, h, w), TT_F32, buf);
    free(buf);
    tt_release(src);
    return out[0] ? TT_OK : tt_errcode();
}

static int line_get;

static tt_status reads_element(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    double v;
    tt_tensor *r = tt_relu(in[0]);
    line_get = __LINE__; tt_status st = r ? tt_get(r, &v, 0, 1) : tt_errcode();
    out[0] = st ? NULL : tt_add_scalar(r, v);
    tt_release(r);
    return st ? st : out[0] ? TT_OK : tt_errcode();
}

static int line_call;

static tt_status calls_twice(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    line_call = __LINE__; out[0] = tt_call(twice_op, tt_v_tensor(in[0]));
    return out[0] ? TT_OK : tt_errcode();
}

static tt_status calls_twice_untracked(tt_tensor **in, int nin, tt_tensor **out, int nout,
                                       void *ud)
{
    (void)nin, (void)nout, (void)ud;
    /* The function itself, not the macro: no line is recorded. */
    out[0] = (tt_op_call1)(twice_op, (tt_value[]){tt_v_tensor(in[0])}, 1);
    return out[0] ? TT_OK : tt_errcode();
}

static int line_explicit;

static tt_status breaks_explicitly(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    line_explicit = __LINE__; tt_status st = tt_graph_break("print the activations");
    out[0] = st ? NULL : tt_neg(in[0]);
    return st ? st : out[0] ? TT_OK : tt_errcode();
}

/* Asserts the report's parts, in order: the kind on the first line, the
 * explanation, the hint, the user's line, the op. */
static void check_report(const char *kind, const char *explanation, const char *hint,
                         const char *func, int line, const char *op)
{
    const char *m = tt_errmsg();
    char first[128], where[256];
    snprintf(first, sizeof first, "Graph break: %s\n", kind);
    ck_assert_msg(strncmp(m, first, strlen(first)) == 0, "first line of \"%s\"", m);
    const char *e = strstr(m, "\n  Explanation: "), *h = strstr(m, "\n  Hint: ");
    snprintf(where, sizeof where, "\n  User code: %s:%d in %s()", __FILE__, line, func);
    const char *u = strstr(m, where);
    ck_assert_msg(e && h && u && e < h && h < u, "report parts out of place in \"%s\" (want %s)",
                  m, where + 1);
    ck_assert_msg(strstr(e, explanation) && strstr(e, explanation) < h,
                  "explanation \"%s\" not in \"%s\"", explanation, m);
    ck_assert_msg(strstr(h, hint) && strstr(h, hint) < u, "hint \"%s\" not in \"%s\"", hint, m);
    /* The user's line ends the line it is on. */
    const char *after = u + strlen(where);
    ck_assert_msg(*after == '\0' || *after == '\n', "junk after the user code in \"%s\"", m);
    if (op) {
        char opline[128];
        snprintf(opline, sizeof opline, "\n  Op: %s", op);
        ck_assert_msg(strstr(m, opline) != NULL, "no \"%s\" in \"%s\"", opline + 1, m);
    } else {
        ck_assert_msg(strstr(m, "\n  Op: ") == NULL, "an op named in \"%s\"", m);
    }
}

START_TEST(test_break_data_read)
{
    tt_tensor *pic = NN(tt_randn(TT_SHAPE(3, 6, 9), TT_F32));
    for (int mode = 0; mode < 3; mode++) {
        tt_clear_error();
        ck_assert_ptr_null(tt_trace(plain_crop, 1, &pic,
                                    &(tt_trace_opts){.mode = (tt_trace_mode)mode, .fullgraph = true}));
        ck_assert_int_eq(tt_errcode(), TT_EGRAPHBREAK);
        check_report("data read", "tt_data reads the data of", "wrap the code that needs the "
                     "data in a custom op with a fake kernel", "plain_crop", line_read, NULL);
        assert_contains(tt_errmsg(), "(graph value contiguous)");
        assert_contains(tt_errmsg(), mode == TT_TRACE_REAL ? "of f32[3, 6, 9]"
                                     : mode == TT_TRACE_FAKE ? "of fake f32[3, 6, 9]"
                                                             : "of fake f32[s0, s1, s2]");
        ck_assert(strstr(tt_errmsg(), "tt_explain_run") == NULL);
    }
    /* Element access, on an intermediate. */
    tt_tensor *x = NN(tt_randn(TT_SHAPE(2, 3), TT_F32));
    ck_assert_ptr_null(tt_trace(reads_element, 1, &x, &(tt_trace_opts){.fullgraph = true}));
    ck_assert_int_eq(tt_errcode(), TT_EGRAPHBREAK);
    check_report("data read", "tt_get reads the data of fake f32[2, 3] (graph value relu)",
                 "custom op", "reads_element", line_get, NULL);
    tt_release(x);
    tt_release(pic);
    ck_assert_ptr_null(tt_mode_current());
}
END_TEST

START_TEST(test_break_no_fake_kernel)
{
    tt_tensor *x = NN(tt_randn(TT_SHAPE(2, 3), TT_F32));
    ck_assert_ptr_null(tt_trace(calls_twice, 1, &x, &(tt_trace_opts){.fullgraph = true}));
    ck_assert_int_eq(tt_errcode(), TT_EGRAPHBREAK);
    check_report("op without a fake kernel", "mylib::twice has no fake kernel",
                 "register a fake kernel for the op", "calls_twice", line_call, "mylib::twice");
    /* Called through the function rather than its macro, the report
     * cannot name the line. */
    ck_assert_ptr_null(tt_trace(calls_twice_untracked, 1, &x, &(tt_trace_opts){.fullgraph = true}));
    ck_assert_error(TT_EGRAPHBREAK, "  User code: unknown (a call through a function pointer or "
                                    "from C++ records no line)\n  Op: mylib::twice");
    /* In real mode the op runs: no break. */
    tt_graph *g = NN(tt_trace(calls_twice, 1, &x, &(tt_trace_opts){.mode = TT_TRACE_REAL,
                                                                  .fullgraph = true}));
    ck_assert_int_eq(tt_graph_count_op(g, "mylib::twice"), 1);
    tt_graph_free(g);
    tt_release(x);
}
END_TEST

START_TEST(test_break_explicit)
{
    tt_tensor *x = NN(tt_randn(TT_SHAPE(2, 3), TT_F32));
    for (int mode = 0; mode < 3; mode++) {
        ck_assert_ptr_null(tt_trace(breaks_explicitly, 1, &x,
                                    &(tt_trace_opts){.mode = (tt_trace_mode)mode, .fullgraph = true}));
        ck_assert_int_eq(tt_errcode(), TT_EGRAPHBREAK);
        check_report("explicit graph break",
                     "the code asked for a graph break: \"print the activations\"",
                     "remove the tt_graph_break call", "breaks_explicitly", line_explicit, NULL);
    }
    /* Outside a trace it is a no-op. */
    OK(tt_graph_break("nothing"));
    tt_tensor *out;
    OK(breaks_explicitly(&x, 1, &out, 1, NULL));
    tt_release(out);
    tt_release(x);
}
END_TEST

START_TEST(test_break_without_fullgraph)
{
    /* tt_trace records one graph: without fullgraph it still fails, and
     * says where to go instead. */
    tt_tensor *pic = NN(tt_randn(TT_SHAPE(3, 6, 9), TT_F32));
    ck_assert_ptr_null(tt_trace(plain_crop, 1, &pic, NULL));
    ck_assert_int_eq(tt_errcode(), TT_EGRAPHBREAK);
    check_report("data read", "tt_data reads", "custom op", "plain_crop", line_read, NULL);
    assert_contains(tt_errmsg(), "\n  (tt_trace records one graph; use tt_explain_run to split "
                                 "at breaks)");
    ck_assert_ptr_null(tt_trace(calls_twice, 1, &pic, NULL));
    assert_contains(tt_errmsg(), "Op: mylib::twice\n  (tt_trace records one graph");
    tt_release(pic);
}
END_TEST

/* ================================================================ explain */

static int line_item_e, line_break_e, line_twice_e;

/* relu; sum -> item (break 1); explicit (break 2); twice, no fake kernel
 * (break 3); + v * 2 */
static tt_status three_breaks(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    double v = 0;
    tt_tensor *h = tt_relu(in[0]), *s = NULL, *t = NULL, *u = NULL;
    tt_status st = h ? TT_OK : tt_errcode();
    if (!st && !(s = tt_sum_all(h)))
        st = tt_errcode();
    line_item_e = __LINE__ + 2;
    if (!st)
        st = tt_item(s, &v);
    line_break_e = __LINE__ + 2;
    if (!st)
        st = tt_graph_break("look at h");
    line_twice_e = __LINE__ + 1;
    if (!st && !(t = tt_call(twice_op, tt_v_tensor(h))))
        st = tt_errcode();
    if (!st && !(u = tt_mul(t, in[1])))
        st = tt_errcode();
    if (!st && !(out[0] = tt_add_scalar(u, v * 2)))
        st = tt_errcode();
    tt_release(h);
    tt_release(s);
    tt_release(t);
    tt_release(u);
    return st;
}

START_TEST(test_explain)
{
    tt_tensor *in[2] = {NN(tt_randn(TT_SHAPE(2, 3), TT_F32)), NN(tt_randn(TT_SHAPE(2, 3), TT_F32))};
    tt_explain *e = NN(tt_explain_run(three_breaks, 2, in, NULL));
    ck_assert_int_eq(tt_explain_graph_count(e), 4);
    ck_assert_int_eq(tt_explain_break_count(e), 3);
    static const struct {
        tt_break_kind kind;
        const char *reason, *op;
        const int *line;
    } want[3] = {
        {TT_BREAK_DATA_READ, "tt_item reads the data of f32[] (graph value sum)", NULL, &line_item_e},
        {TT_BREAK_EXPLICIT, "the code asked for a graph break: \"look at h\"", NULL, &line_break_e},
        {TT_BREAK_NO_FAKE_KERNEL, "mylib::twice has no fake kernel", "mylib::twice",
         &line_twice_e},
    };
    for (int i = 0; i < 3; i++) {
        const tt_break_info *b = NN(tt_explain_break(e, i));
        ck_assert_int_eq(b->kind, want[i].kind);
        ck_assert_msg(strstr(b->reason, want[i].reason) != NULL, "break %d: \"%s\"", i, b->reason);
        if (want[i].op)
            ck_assert_str_eq(b->op, want[i].op);
        else
            ck_assert_ptr_null(b->op);
        ck_assert_str_eq(b->loc.file, __FILE__);
        ck_assert_int_eq(b->loc.line, *want[i].line);
        ck_assert_str_eq(b->loc.func, "three_breaks");
    }
    ck_assert_ptr_null(tt_explain_break(e, 3));
    ck_assert_ptr_null(tt_explain_break(e, -1));
    ck_assert_str_eq(tt_break_kind_name(TT_BREAK_DATA_READ), "data read");
    ck_assert_str_eq(tt_break_kind_name(TT_BREAK_NO_FAKE_KERNEL), "op without a fake kernel");
    ck_assert_str_eq(tt_break_kind_name(TT_BREAK_EXPLICIT), "explicit graph break");
    ck_assert_str_eq(tt_break_kind_name((tt_break_kind)42), "?");
    /* Ops per graph: relu and sum before the first break; nothing between
     * the item and the explicit break nor before twice (which ran eagerly);
     * mul and add.Scalar after it. */
    static const int nops[4] = {2, 0, 0, 2};
    for (int i = 0; i < 4; i++) {
        const tt_graph *g = NN(tt_explain_graph(e, i));
        OK(tt_graph_verify(g));
        ck_assert_int_eq(count_kind(g, TT_NODE_OP), nops[i]);
        ck_assert_int_eq(tt_graph_count_op(g, "mylib::twice"), 0);
        /* Each graph's outputs are the next one's first inputs. */
        if (i < 3)
            ck_assert_int_le(tt_graph_num_outputs(g), tt_graph_num_inputs(tt_explain_graph(e, i + 1)));
    }
    ck_assert_ptr_null(tt_explain_graph(e, 4));
    const tt_graph *g0 = tt_explain_graph(e, 0), *g3 = tt_explain_graph(e, 3);
    ck_assert_int_eq(tt_graph_num_inputs(g0), 2);
    ck_assert_int_eq(tt_graph_count_op(g0, "tt::relu"), 1);
    ck_assert_int_eq(tt_graph_count_op(g0, "tt::sum"), 1);
    ck_assert_int_eq(tt_graph_count_op(g3, "tt::mul"), 1);
    ck_assert_int_eq(tt_graph_count_op(g3, "tt::add.Scalar"), 1);
    ck_assert_int_eq(tt_graph_num_outputs(g3), 1);
    /* Real values: the last graph's output is the eager result. */
    tt_tensor *want_out;
    OK(three_breaks(in, 2, &want_out, 1, NULL));
    char *text3 = text_of(g3);
    int outn = -1;
    for (int i = 0; i < tt_graph_num_nodes(g3); i++)
        if (tt_graph_node_kind(g3, i) == TT_NODE_OP &&
            tt_graph_node_op(g3, i) == op_named("tt::add.Scalar"))
            outn = i;
    ck_assert_int_ge(outn, 0);
    assert_same(tt_graph_node_value(g3, outn, 0), want_out, text3);
    free(text3);
    tt_release(want_out);
    /* The text. */
    char *text = NN(tt_explain_to_text(e));
    assert_contains(text, "Graph count: 4\nGraph break count: 3\nOp count: 4\n");
    assert_contains(text, "Break reasons:\n  1. data read: tt_item reads the data of");
    char at[256];
    snprintf(at, sizeof at, "     at %s:%d in three_breaks()\n", __FILE__, line_item_e);
    assert_contains(text, at);
    snprintf(at, sizeof at, "  2. explicit graph break: the code asked for a graph break: "
                            "\"look at h\"\n     at %s:%d in three_breaks()\n", __FILE__,
             line_break_e);
    assert_contains(text, at);
    snprintf(at, sizeof at, "     at %s:%d in three_breaks()\n", __FILE__, line_twice_e);
    assert_contains(text, at);
    assert_contains(text, "  3. op without a fake kernel: mylib::twice has no fake kernel");
    assert_contains(text, "Ops per graph:\n  Graph 1: tt::relu, tt::sum\n  Graph 2: (none)\n"
                          "  Graph 3: (none)\n  Graph 4: tt::mul.Tensor, tt::add.Scalar\n");
    free(text);
    tt_explain_free(e);
    tt_release(in[0]);
    tt_release(in[1]);
}
END_TEST

/* relu; an explicit break; sin(h * y) - x. */
static tt_status relu_break_sin(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_scope_begin();
    tt_tensor *h = tt_relu(in[0]);
    tt_status st = h ? tt_graph_break("between") : tt_errcode();
    tt_tensor *m = st ? NULL : tt_mul(h, in[1]);
    tt_tensor *s = m ? tt_sin(m) : NULL;
    out[0] = tt_keep(s ? tt_sub(s, in[0]) : NULL);
    tt_scope_end();
    return st ? st : out[0] ? TT_OK : tt_errcode();
}

START_TEST(test_explain_replay)
{
    tt_tensor *in[2] = {NN(tt_randn(TT_SHAPE(4, 3), TT_F32)), NN(tt_randn(TT_SHAPE(4, 3), TT_F32))};
    tt_explain *e = NN(tt_explain_run(relu_break_sin, 2, in, NULL));
    ck_assert_int_eq(tt_explain_graph_count(e), 2);
    ck_assert_int_eq(tt_explain_break_count(e), 1);
    const tt_graph *g1 = tt_explain_graph(e, 0), *g2 = tt_explain_graph(e, 1);
    ck_assert_int_eq(tt_graph_num_inputs(g1), 2);
    ck_assert_int_eq(tt_graph_num_outputs(g1), tt_graph_num_inputs(g2));
    /* Replayed in order on new inputs (graph 1's outputs are graph 2's
     * inputs, in order), the graphs give the eager result. */
    tt_tensor *x[2] = {NN(tt_randn(TT_SHAPE(4, 3), TT_F32)), NN(tt_randn(TT_SHAPE(4, 3), TT_F32))};
    int n1 = tt_graph_num_outputs(g1);
    ck_assert_int_le(n1, 8);
    tt_tensor *mid[8] = {0}, *got = NULL, *want = NULL;
    OK(tt_graph_run(g1, 2, x, n1, mid));
    OK(tt_graph_run(g2, n1, mid, 1, &got));
    OK(relu_break_sin(x, 2, &want, 1, NULL));
    assert_same(got, want, "two graphs replayed in order");
    for (int i = 0; i < n1; i++)
        tt_release(mid[i]);
    tt_release(got);
    tt_release(want);
    tt_release(x[0]);
    tt_release(x[1]);
    tt_explain_free(e);
    tt_release(in[0]);
    tt_release(in[1]);
}
END_TEST

START_TEST(test_explain_no_breaks_and_errors)
{
    make_xy(2, 3);
    tt_explain *e = NN(tt_explain_run(small, 2, xy, NULL));
    ck_assert_int_eq(tt_explain_graph_count(e), 1);
    ck_assert_int_eq(tt_explain_break_count(e), 0);
    char *text = NN(tt_explain_to_text(e));
    assert_contains(text, "Graph count: 1\nGraph break count: 0\nOp count: 4\n");
    ck_assert(strstr(text, "Break reasons") == NULL);
    assert_contains(text, "  Graph 1: tt::add.Tensor, tt::mul.Tensor, tt::add.Tensor, tt::relu\n");
    free(text);
    tt_explain_free(e);
    /* fullgraph: the first break fails, as in tt_trace. */
    tt_tensor *pic = NN(tt_randn(TT_SHAPE(3, 6, 9), TT_F32));
    ck_assert_ptr_null(tt_explain_run(plain_crop, 1, &pic, &(tt_trace_opts){.fullgraph = true}));
    ck_assert_int_eq(tt_errcode(), TT_EGRAPHBREAK);
    check_report("data read", "tt_data reads", "custom op", "plain_crop", line_read, NULL);
    /* The function's error. */
    tt_tensor *y = NN(tt_randn(TT_SHAPE(4), TT_F32));
    ck_assert_ptr_null(tt_explain_run(fails, 2, (tt_tensor *[]){xy[0], y}, NULL));
    ck_assert_error(TT_ESHAPE, "tt::add");
    ck_assert_ptr_null(tt_explain_run(NULL, 1, xy, NULL));
    ck_assert_error(TT_EINVAL, "tt_explain_run: expects a function and 0 to 238609294 inputs");
    ck_assert_ptr_null(tt_explain_run(small, 268435456, xy, NULL));
    ck_assert_error(TT_EINVAL, "tt_explain_run: expects a function and 0 to 238609294 inputs");
    ck_assert_ptr_null(tt_explain_run(small, 2, NULL, NULL));
    ck_assert_error(TT_EINVAL, "tt_explain_run: expects a function");
    ck_assert_ptr_null(tt_explain_to_text(NULL));
    ck_assert_error(TT_EINVAL, "tt_explain_to_text: argument 'explain' is NULL");
    ck_assert_int_eq(tt_explain_graph_count(NULL), 0);
    ck_assert_int_eq(tt_explain_break_count(NULL), 0);
    ck_assert_ptr_null(tt_explain_graph(NULL, 0));
    ck_assert_ptr_null(tt_explain_free(NULL));
    ck_assert_ptr_null(tt_mode_current());
    tt_release(y);
    tt_release(pic);
    free_xy();
}
END_TEST

/* ============================================================== tutorial */

static tt_status custom_crop(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    out[0] = tt_call(crop_op, tt_v_tensor(in[0]), tt_v_ints(4, box));
    return out[0] ? TT_OK : tt_errcode();
}

/* f(x): out = empty(shape of x); numpy_sin(x, out); return out */
static tt_status sin_model(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_tensor *o = tt_empty(tt_ndim(in[0]), tt_sizes(in[0]), tt_dtype_of(in[0]));
    tt_status st = o ? tt_op_call(sin_op, (tt_value[]){tt_v_tensor(in[0]), tt_v_tensor(o)}, 2,
                                  NULL, 0)
                     : tt_errcode();
    if (st)
        o = tt_release(o);
    out[0] = o;
    return st;
}

START_TEST(test_tutorial_pair)
{
    tt_tensor *pic = NN(tt_randn(TT_SHAPE(3, 6, 9), TT_F32));
    /* Plain C: a fullgraph break naming the line that reads the pixels. */
    ck_assert_ptr_null(tt_trace(plain_crop, 1, &pic, &(tt_trace_opts){.fullgraph = true}));
    check_report("data read", "tt_data reads", "custom op", "plain_crop", line_read, NULL);
    /* As a custom op with a fake kernel: one graph, one opaque node. */
    tt_graph *g = NN(tt_trace(custom_crop, 1, &pic, &(tt_trace_opts){.fullgraph = true}));
    ck_assert_int_eq(tt_graph_num_nodes(g), 3);
    ck_assert_int_eq(tt_graph_node_kind(g, 1), TT_NODE_OP);
    ck_assert_ptr_eq(tt_graph_node_op(g, 1), crop_op);
    /* Both compute the same crop. */
    tt_tensor *a, *b;
    OK(tt_graph_run(g, 1, &pic, 1, &a));
    OK(plain_crop(&pic, 1, &b, 1, NULL));
    assert_same(a, b, "custom op vs plain C crop");
    tt_release(a);
    tt_release(b);
    tt_graph_free(g);
    tt_release(pic);
}
END_TEST

START_TEST(test_tutorial_numpy_sin)
{
    ck_assert(!tt_op_has_fake(sin_op));
    tt_tensor *x = NN(tt_randn(TT_SHAPE(4, 5), TT_F32));
    for (int mode = 0; mode < 3; mode++) {
        tt_graph *g = NN(tt_trace(sin_model, 1, &x,
                                  &(tt_trace_opts){.mode = (tt_trace_mode)mode, .fullgraph = true}));
        OK(tt_graph_verify(g));
        ck_assert_int_eq(tt_graph_num_nodes(g), 4);
        ck_assert_ptr_eq(tt_graph_node_op(g, 1), op_named("tt::empty"));
        ck_assert_ptr_eq(tt_graph_node_op(g, 2), sin_op);
        /* No result, one after-write value: empty as the op wrote it. */
        ck_assert_int_eq(tt_graph_node_num_outputs(g, 2), 1);
        ck_assert_int_eq(tt_graph_node_written_arg(g, 2, 0), 1);
        char *text = text_of(g);
        const char *want = mode == TT_TRACE_SYMBOLIC
            ? "def forward(in0: \"f32[s0, s1]\"):\n"
              "    empty: \"f32[s0, s1]\" = tt::empty([s0, s1], dtype=f32)\n"
              "    numpy_sin: \"f32[s0, s1]\" = mylib::numpy_sin(in0, empty)  # writes empty "
              "(empty is numpy_sin after the write)\n"
              "    return (numpy_sin,)\n"
            : "def forward(in0: \"f32[4, 5]\"):\n"
              "    empty: \"f32[4, 5]\" = tt::empty([4, 5], dtype=f32)\n"
              "    numpy_sin: \"f32[4, 5]\" = mylib::numpy_sin(in0, empty)  # writes empty "
              "(empty is numpy_sin after the write)\n"
              "    return (numpy_sin,)\n";
        ck_assert_msg(strcmp(text, want) == 0, "mode %d:\n%s", mode, text);
        free(text);
        /* Replayed, the output is sin(x) (sinf, as the kernel computes it). */
        tt_tensor *got;
        OK(tt_graph_run(g, 1, &x, 1, &got));
        double *gv = tt_test_values(got), *xv = tt_test_values(x);
        for (int i = 0; i < 20; i++)
            ck_assert_msg(gv[i] == (double)sinf((float)xv[i]), "element %d", i);
        free(gv);
        free(xv);
        tt_release(got);
        tt_graph_free(g);
        tt_sym_reset();
    }
    tt_release(x);
}
END_TEST

/* ========================================================= training step */

/* tt_test_train_step with lr = 0.1. */
static tt_status train_step(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    return tt_test_train_step(in[0], in[1], in[2], 0.1, &out[0]);
}

START_TEST(test_training_step_one_graph)
{
    tt_tensor *w = NN(tt_randn(TT_SHAPE(3, 4), TT_F32)), *x = NN(tt_randn(TT_SHAPE(3, 4), TT_F32));
    tt_tensor *target = NN(tt_randn(TT_SHAPE(3, 4), TT_F32));
    tt_tensor *w0 = NN(tt_clone(w));
    OK(tt_set_requires_grad(w, true));
    tt_graph *g = NN(tt_trace(train_step, 3, (tt_tensor *[]){w, x, target},
                              &(tt_trace_opts){.fullgraph = true}));
    OK(tt_graph_verify(g));
    /* The weights were not touched by the (fake) trace. */
    assert_same(w, w0, "weights after tracing");
    /* Forward, the backward's ops (the seed, mean's and tanh's
     * derivatives, the .grad clone) and the in-place update, in one graph
     * with no constants: the backward reads the forward's values. */
    ck_assert_int_eq(count_kind(g, TT_NODE_CONSTANT), 0);
    ck_assert_int_eq(tt_graph_count_op(g, "tt::tanh"), 1);
    ck_assert_int_eq(tt_graph_count_op(g, "tt::mean"), 1);
    ck_assert_int_eq(tt_graph_count_op(g, "tt::full"), 1);
    ck_assert_int_eq(tt_graph_count_op(g, "tt::expand"), 1);
    ck_assert_int_ge(tt_graph_count_op(g, "tt::mul"), 5);
    ck_assert_int_eq(tt_graph_count_op(g, "tt::clone"), 1);
    ck_assert_int_eq(tt_graph_count_op(g, "tt::add_"), 1);
    char *text = text_of(g);
    assert_contains(text, "    mean: \"f32[]\" = tt::mean(mul_1)\n    full: \"f32[]\" = "
                          "tt::full([], 1, dtype=f32)\n");
    assert_contains(text, " = tt::add_.Tensor(in0, clone, alpha=-0.1)  # writes in0\n");
    assert_contains(text, "tt::mul.Tensor(tanh, tanh)"); /* tanh' from its saved output */
    assert_contains(text, "    return (mean,)\n");
    free(text);
    /* Replayed by the interpreter on the real weights: the eager step. */
    tt_tensor *we = NN(tt_clone(w0)), *wi = NN(tt_clone(w0));
    OK(tt_set_requires_grad(we, true));
    OK(tt_set_requires_grad(wi, true));
    tt_tensor *le, *li;
    OK(train_step((tt_tensor *[]){we, x, target}, 3, &le, 1, NULL));
    OK(tt_graph_run(g, 3, (tt_tensor *[]){wi, x, target}, 1, &li));
    assert_same(li, le, "loss");
    assert_same(wi, we, "weights after one step");
    double *a = tt_test_values(w0), *b = tt_test_values(wi);
    ck_assert(a[0] != b[0]);
    free(a);
    free(b);
    tt_release(le);
    tt_release(li);
    tt_release(we);
    tt_release(wi);
    tt_graph_free(g);
    tt_release(w0);
    tt_release(w);
    tt_release(x);
    tt_release(target);
}
END_TEST

/* ====================================================== functionalization */

/* h = x + y; t = h^T (a view); relu_(h) (seen through t); x *= 2 in
 * place (an input); return h * x + t^T */
static tt_status aliased_writes(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_scope_begin();
    tt_tensor *h = tt_add(in[0], in[1]);
    tt_tensor *t = h ? tt_transpose(h, 0, 1) : NULL;
    tt_status st = t ? tt_relu_(h) : tt_errcode();
    if (!st)
        st = tt_mul_scalar_(in[0], 2);
    tt_tensor *m = st ? NULL : tt_mul(h, in[0]);
    tt_tensor *tt = m ? tt_transpose(t, 0, 1) : NULL;
    out[0] = tt_keep(tt ? tt_add(m, tt) : NULL);
    tt_scope_end();
    return st ? st : out[0] ? TT_OK : tt_errcode();
}

START_TEST(test_functionalize)
{
    /* The training step: its update of the weights becomes a functional
     * add and a copy back into the input, with the same effect. */
    tt_tensor *w0 = NN(tt_randn(TT_SHAPE(3, 4), TT_F32)), *x = NN(tt_randn(TT_SHAPE(3, 4), TT_F32));
    tt_tensor *target = NN(tt_randn(TT_SHAPE(3, 4), TT_F32));
    tt_tensor *w = NN(tt_clone(w0));
    OK(tt_set_requires_grad(w, true));
    tt_graph *g = NN(tt_trace(train_step, 3, (tt_tensor *[]){w, x, target}, NULL));
    int adds = tt_graph_count_op(g, "tt::add.Tensor");
    OK(tt_graph_functionalize(g));
    OK(tt_graph_verify(g));
    ck_assert_int_eq(tt_graph_count_op(g, "tt::add_"), 0);
    ck_assert_int_eq(tt_graph_count_op(g, "tt::add.Tensor"), adds + 1);
    ck_assert_int_eq(tt_graph_count_op(g, "tt::copy_"), 1);
    char *text = text_of(g);
    ck_assert_msg(strstr(text, "tt::copy_(in0, ") && strstr(text, "  # writes in0\n    return"),
                  "%s", text);
    free(text);
    tt_tensor *we = NN(tt_clone(w0)), *wi = NN(tt_clone(w0));
    OK(tt_set_requires_grad(we, true));
    OK(tt_set_requires_grad(wi, true));
    tt_tensor *le, *li;
    OK(train_step((tt_tensor *[]){we, x, target}, 3, &le, 1, NULL));
    OK(tt_graph_run(g, 3, (tt_tensor *[]){wi, x, target}, 1, &li));
    assert_same(li, le, "loss");
    assert_same(wi, we, "weights after the functional step");
    tt_release(le);
    tt_release(li);
    tt_release(we);
    tt_release(wi);
    tt_graph_free(g);
    /* A write seen through a view stays in place; a write to an input
     * becomes functional plus a copy back. */
    tt_tensor *a = NN(tt_randn(TT_SHAPE(2, 3), TT_F32)), *b = NN(tt_randn(TT_SHAPE(2, 3), TT_F32));
    g = NN(tt_trace(aliased_writes, 2, (tt_tensor *[]){a, b}, NULL));
    ck_assert_int_eq(tt_graph_count_op(g, "tt::relu_"), 1);
    ck_assert_int_eq(tt_graph_count_op(g, "tt::mul_"), 1);
    OK(tt_graph_functionalize(g));
    ck_assert_int_eq(tt_graph_count_op(g, "tt::relu_"), 1);
    ck_assert_int_eq(tt_graph_count_op(g, "tt::mul_"), 0);
    ck_assert_int_eq(tt_graph_count_op(g, "tt::mul.Scalar"), 1);
    ck_assert_int_eq(tt_graph_count_op(g, "tt::copy_"), 1);
    tt_tensor *a1 = NN(tt_clone(a)), *a2 = NN(tt_clone(a)), *got, *want;
    OK(tt_graph_run(g, 2, (tt_tensor *[]){a1, b}, 1, &got));
    OK(aliased_writes((tt_tensor *[]){a2, b}, 2, &want, 1, NULL));
    assert_same(got, want, "output");
    assert_same(a1, a2, "the written input");
    tt_release(got);
    tt_release(want);
    tt_release(a1);
    tt_release(a2);
    tt_graph_free(g);
    /* Mutable custom ops keep their mutation. */
    g = NN(tt_trace(sin_model, 1, &a, NULL));
    OK(tt_graph_functionalize(g));
    ck_assert_int_eq(tt_graph_count_op(g, "mylib::numpy_sin"), 1);
    tt_graph_free(g);
    ck_assert_int_eq(tt_graph_functionalize(NULL), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_graph_functionalize: argument 'graph' is NULL");
    tt_release(a);
    tt_release(b);
    tt_release(w);
    tt_release(w0);
    tt_release(x);
    tt_release(target);
}
END_TEST

/* ========================================================= dynamic sizes */

static tt_status positives(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_tensor *p = tt_call(positive_op, tt_v_tensor(in[0]));
    out[0] = p ? tt_mul(p, p) : NULL;
    tt_release(p);
    return out[0] ? TT_OK : tt_errcode();
}

START_TEST(test_dynamic_size)
{
    double data[6] = {1, -2, 3, -4, 5, 6};
    tt_tensor *x = NN(tt_from_data(TT_SHAPE(6), TT_F64, data));
    tt_graph *g = NN(tt_trace(positives, 1, &x, &(tt_trace_opts){.mode = TT_TRACE_SYMBOLIC}));
    char *text = text_of(g);
    const char *want = "def forward(in0: \"f64[s0]\"):\n"
                       "    positive: \"f64[u0]\" = mylib::positive(in0)\n"
                       "    mul: \"f64[u0]\" = tt::mul.Tensor(positive, positive)\n"
                       "    return (mul,)\n";
    ck_assert_msg(strcmp(text, want) == 0, "%s", text);
    free(text);
    ck_assert_int_eq(tt_sym_hint(tt_sizes(tt_graph_node_value(g, 1, 0))[0]), -1);
    /* Replayed on data: 4 positives. */
    tt_tensor *got;
    OK(tt_graph_run(g, 1, &x, 1, &got));
    assert_shape(got, 1, (int64_t[]){4}, TT_F64);
    double *v = tt_test_values(got);
    ck_assert(v[0] == 1 && v[1] == 9 && v[2] == 25 && v[3] == 36);
    free(v);
    tt_release(got);
    tt_graph_free(g);
    tt_release(x);
}
END_TEST

/* ========================================================= out of memory */

/* A constant, a factory, an in-place op, a view, matmul and a reduction. */
static tt_status for_oom(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_scope_begin();
    tt_tensor *k = tt_from_data(TT_SHAPE(3), TT_F32, consts);
    tt_tensor *h = k ? tt_mul(in[1], k) : NULL;
    tt_tensor *t = h ? tt_tanh(h) : NULL;
    tt_tensor *z = t ? tt_zeros(TT_SHAPE(4, 3), TT_F32) : NULL;
    tt_tensor *a = z ? tt_add(t, z) : NULL;
    tt_status st = a ? tt_relu_(a) : tt_errcode();
    tt_tensor *wt = st ? NULL : tt_t(in[0]);
    tt_tensor *m = wt ? tt_matmul(a, wt) : NULL;
    tt_tensor *r = m ? tt_sum(m, 1, (int64_t[]){1}, false) : NULL;
    out[0] = tt_keep(r ? tt_exp(r) : NULL);
    tt_scope_end();
    return out[0] ? TT_OK : st ? st : tt_errcode();
}

/* for_oom with a data read in the middle: explain splits there; a fake
 * trace reads the stand-in memory and fails with the break. */
static tt_status for_oom_read(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_scope_begin();
    tt_tensor *h = tt_tanh(in[1]);
    const float *p = h ? tt_data(h) : NULL;
    tt_tensor *s = p ? tt_mul_scalar(h, p[0] > 0 ? 2 : 3) : NULL;
    tt_tensor *wt = s ? tt_t(in[0]) : NULL;
    tt_tensor *m = wt ? tt_matmul(s, wt) : NULL;
    out[0] = tt_keep(m ? tt_relu(m) : NULL);
    tt_scope_end();
    return out[0] ? TT_OK : tt_errcode();
}

/* Fails the n-th allocation request of a trace (each mode) and of an
 * explain run, for every request a successful run makes: each run gives a
 * graph (a failure the tracer can do without, such as the name index) or
 * TT_ENOMEM, and leaves nothing alive and no mode on. */
START_TEST(test_out_of_memory)
{
    tt_tensor *in[2] = {NN(tt_randn(TT_SHAPE(5, 3), TT_F32)), NN(tt_randn(TT_SHAPE(4, 3), TT_F32))};
    int64_t live = tt_live_tensors();
    for (int which = 0; which < 6; which++) {
        int64_t total = 0, failed = 0;
        for (int64_t n = 0; n <= total; n++) {
            int64_t before = tt_debug_alloc_count();
            tt_debug_fail_alloc(n);
            void *r;
            if (which < 3)
                r = tt_trace(for_oom, 2, in, &(tt_trace_opts){.mode = (tt_trace_mode)which});
            else if (which == 3)
                r = tt_explain_run(for_oom, 2, in, NULL);
            else if (which == 4)
                r = tt_explain_run(for_oom_read, 2, in, NULL);
            else
                r = tt_trace(for_oom_read, 2, in, NULL); /* always breaks */
            tt_debug_fail_alloc(0);
            tt_status st = r ? TT_OK : tt_errcode(), want = which == 5 ? TT_EGRAPHBREAK : TT_OK;
            if (n == 0) /* the counting run */
                total = tt_debug_alloc_count() - before;
            if (st == TT_ENOMEM && n > 0)
                failed++;
            else /* a request the tracer can do without, or none failed */
                ck_assert_msg(st == want, "%d/%lld: %s: %s", which, (long long)n,
                              tt_status_name(st), tt_errmsg());
            if (r && which < 3)
                OK(tt_graph_verify(r));
            which < 3 || which == 5 ? (void)tt_graph_free(r) : (void)tt_explain_free(r);
            ck_assert_msg(tt_live_tensors() == live, "%d/%lld: %lld tensors leaked", which,
                          (long long)n, (long long)(tt_live_tensors() - live));
            ck_assert_ptr_null(tt_mode_current());
            ck_assert(!tt_fake_mode_enabled());
            tt_sym_reset();
        }
        ck_assert_int_gt(total, 20);
        /* After a break, the trace reports the break (its first cause)
         * however the function fails later. */
        ck_assert_msg(failed > (which == 5 ? total / 4 : total / 2), "%d: %lld of %lld failed",
                      which, (long long)failed, (long long)total);
    }
    tt_release(in[0]);
    tt_release(in[1]);
}
END_TEST

/* ================================================================= suite */

static Suite *tracer_suite(void)
{
    Suite *s = suite_create("tracer");
    TCase *tc = tt_tcase_with("graph_ir", ops_setup, ops_teardown);
    tcase_add_test(tc, test_fake_graph);
    tcase_add_test(tc, test_real_graph_values);
    tcase_add_test(tc, test_symbolic_sizes);
    tcase_add_test(tc, test_constants_and_factories);
    tcase_add_test(tc, test_text_golden);
    tcase_add_test(tc, test_node_locations);
    tcase_add_test(tc, test_multiple_outputs);
    tcase_add_test(tc, test_repeat_names);
    tcase_add_test(tc, test_trace_errors);
    suite_add_tcase(s, tc);
    tc = tt_tcase_with("interpreter", ops_setup, ops_teardown);
    tcase_add_test(tc, test_interpreter);
    tcase_add_test(tc, test_interpreter_errors);
    suite_add_tcase(s, tc);
    tc = tt_tcase_with("fake_memory", ops_setup, ops_teardown);
    tcase_add_test(tc, test_fake_mlp_bigger_than_memory);
    suite_add_tcase(s, tc);
    tc = tt_tcase_with("custom_ops", ops_setup, ops_teardown);
    tcase_add_test(tc, test_custom_op_opaque);
    tcase_add_test(tc, test_dynamic_size);
    suite_add_tcase(s, tc);
    tc = tt_tcase_with("breaks", ops_setup, ops_teardown);
    tcase_add_test(tc, test_break_data_read);
    tcase_add_test(tc, test_break_no_fake_kernel);
    tcase_add_test(tc, test_break_explicit);
    tcase_add_test(tc, test_break_without_fullgraph);
    suite_add_tcase(s, tc);
    tc = tt_tcase_with("explain", ops_setup, ops_teardown);
    tcase_add_test(tc, test_explain);
    tcase_add_test(tc, test_explain_replay);
    tcase_add_test(tc, test_explain_no_breaks_and_errors);
    suite_add_tcase(s, tc);
    tc = tt_tcase_with("tutorial", ops_setup, ops_teardown);
    tcase_add_test(tc, test_tutorial_pair);
    tcase_add_test(tc, test_tutorial_numpy_sin);
    suite_add_tcase(s, tc);
    tc = tt_tcase_with("training", ops_setup, ops_teardown);
    tcase_add_test(tc, test_training_step_one_graph);
    tcase_add_test(tc, test_functionalize);
    suite_add_tcase(s, tc);
    tc = tt_tcase_with("oom", ops_setup, ops_teardown);
    tcase_add_test(tc, test_out_of_memory);
    suite_add_tcase(s, tc);
    return s;
}

TT_TEST_MAIN(tracer_suite)
