/* DOT dumps and rendering: golden files for an MLP and a custom-op graph,
 * the structure of the DOT read back with graphviz's cgraph (nodes, edges,
 * styles of each kind of node, mutated arguments), explain dumps with one
 * cluster per graph and the breaks between them, escaping, determinism,
 * SVG/PNG rendering and every error path.
 *
 * Golden files live in tests/golden (found through TT_TEST_SRCDIR, which
 * meson sets); TT_UPDATE_GOLDEN=1 rewrites them from the current output. */
#include "tt_test.h"

#include <cgraph.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* ============================================== sanitizer builds only */

/* graphviz leaks inside its layout whatever the caller does. */
#include "lsan_graphviz.h"

/* ============================================================ custom ops */

static tt_library *lib;
static const tt_op *crop_op, *fill_op, *twice_op;

/* pic is (C,H,W), box = (x0,y0,x1,y1); out is (C, y1-y0, x1-x0),
 * contiguous. Real kernel: a copy of the narrowed view. */
static tt_status crop_kernel(tt_frame *f)
{
    tt_tensor *pic, *rows = NULL, *view = NULL;
    const int64_t *b;
    tt_status st = tt_test_crop_read_args(f, &pic, &b);
    if (st)
        return st;
    rows = tt_narrow(pic, 1, b[1], b[3] - b[1]);
    view = rows ? tt_narrow(rows, 2, b[0], b[2] - b[0]) : NULL;
    st = view ? tt_return(f, 0, tt_clone(view)) : tt_errcode();
    tt_release(view);
    tt_release(rows);
    return st;
}

/* mylib::fill_like(Tensor src, Tensor(a!) dst) -> (): copies src into
 * dst, a mutable op returning nothing. */
static tt_status fill_kernel(tt_frame *f)
{
    tt_tensor *src, *dst;
    tt_status st = tt_arg_tensor(f, 0, &src);
    if (!st)
        st = tt_arg_tensor(f, 1, &dst);
    return st ? st : tt_copy_(dst, src);
}

static tt_status fill_fake(tt_frame *f)
{
    (void)f; /* nothing to make: the op returns nothing */
    return TT_OK;
}

static void ops_setup(void)
{
    tt_test_setup();
    lib = NN(tt_library_new(TT_LIB_DEF, "mylib"));
    crop_op = tt_test_define_contiguous_crop(lib, crop_kernel);
    fill_op = NN(tt_custom_op_define(lib, &(tt_custom_op_spec){
        .schema = "mylib::fill_like(Tensor src, Tensor dst) -> ()",
        .mutates_args = "dst",
        .kernel = fill_kernel,
        .fake = fill_fake,
    }));
    twice_op = tt_test_define_twice(lib);
}

static void ops_teardown(void)
{
    lib = tt_library_free(lib);
    tt_test_teardown();
}

/* ======================================================= traced functions */
/* The golden files hold the lines of these functions' calls (each op
 * node's tooltip): after moving them, TT_UPDATE_GOLDEN=1 rewrites the
 * files, and the diff should show only those lines. */

/* A 2-layer MLP: relu(x @ w1 + b1) @ w2 + b2. */
static tt_status mlp(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_tensor *h = tt_matmul(in[0], in[1]);
    tt_tensor *hb = h ? tt_add(h, in[2]) : NULL;
    tt_tensor *a = hb ? tt_relu(hb) : NULL;
    tt_tensor *o = a ? tt_matmul(a, in[3]) : NULL;
    out[0] = o ? tt_add(o, in[4]) : NULL;
    tt_release(h);
    tt_release(hb);
    tt_release(a);
    tt_release(o);
    return out[0] ? TT_OK : tt_errcode();
}

/* crop(pic, box) * w, with w a real tensor made outside the trace (a
 * constant of the graph). */
static tt_status crop_scale(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    tt_tensor *c = tt_call(crop_op, tt_v_tensor(in[0]), tt_v_ints(TT_INTS(8, 4, 40, 20)));
    out[0] = c ? tt_mul(c, ud) : NULL;
    tt_release(c);
    return out[0] ? TT_OK : tt_errcode();
}

/* In-place writes to an intermediate and to an input:
 *   h = x + y; relu_(h); h += y; fill_like(h, x); return h + x */
static tt_status inplace(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_tensor *h = tt_add(in[0], in[1]);
    tt_status st = h ? tt_relu_(h) : tt_errcode();
    if (!st)
        st = tt_add_(h, in[1]);
    if (!st)
        st = tt_op_call(fill_op, (tt_value[]){tt_v_tensor(h), tt_v_tensor(in[0])}, 2, NULL, 0);
    if (!st)
        out[0] = tt_add(h, in[0]);
    tt_release(h);
    return st ? st : out[0] ? TT_OK : tt_errcode();
}

/* Three breaks: a data read, an explicit break, an op with no fake kernel. */
static int line_item, line_explicit, line_nofake;
static tt_status with_breaks(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    double v = 0;
    tt_tensor *h = tt_relu(in[0]), *s = NULL, *t = NULL;
    tt_status st = h ? TT_OK : tt_errcode();
    if (!st)
        s = tt_sum(h, 0, NULL, false);
    if (!st && !s)
        st = tt_errcode();
    line_item = __LINE__ + 2;
    if (!st)
        st = tt_item(s, &v);
    line_explicit = __LINE__ + 2;
    if (!st)
        st = tt_graph_break("print \"h\" & stop");
    line_nofake = __LINE__ + 2;
    if (!st)
        t = tt_call(twice_op, tt_v_tensor(h));
    if (!st && !t)
        st = tt_errcode();
    if (!st)
        out[0] = tt_add_scalar(t, v);
    tt_release(h);
    tt_release(s);
    tt_release(t);
    return st ? st : out[0] ? TT_OK : tt_errcode();
}

/* ================================================================ helpers */

typedef struct {
    tt_tensor *in[5];
    int nin;
} inputs;

static void inputs_free(inputs *x)
{
    for (int i = 0; i < x->nin; i++)
        tt_release(x->in[i]);
}

static inputs mlp_inputs(void)
{
    inputs x = {{NN(tt_randn(TT_SHAPE(4, 3), TT_F32)), NN(tt_randn(TT_SHAPE(3, 8), TT_F32)),
                 NN(tt_randn(TT_SHAPE(8), TT_F32)), NN(tt_randn(TT_SHAPE(8, 2), TT_F32)),
                 NN(tt_randn(TT_SHAPE(2), TT_F32))},
                5};
    return x;
}

static tt_graph *trace_mlp(const char *name)
{
    inputs x = mlp_inputs();
    tt_graph *g = tt_trace(mlp, x.nin, x.in, &(tt_trace_opts){.mode = TT_TRACE_FAKE,
                                                               .name = name});
    inputs_free(&x);
    return NN(g);
}

static tt_graph *trace_crop(void)
{
    tt_tensor *pic = NN(tt_randn(TT_SHAPE(3, 32, 48), TT_F32));
    tt_tensor *w = NN(tt_full(TT_SHAPE(3, 1, 1), 0.5, TT_F32));
    tt_graph *g = tt_trace(crop_scale, 1, &pic, &(tt_trace_opts){.mode = TT_TRACE_FAKE,
                                                                 .name = "crop_scale", .ud = w});
    tt_release(pic);
    tt_release(w);
    return NN(g);
}

static tt_graph *trace_inplace(void)
{
    tt_tensor *in[2] = {NN(tt_randn(TT_SHAPE(2, 3), TT_F32)),
                        NN(tt_randn(TT_SHAPE(2, 3), TT_F32))};
    tt_graph *g = tt_trace(inplace, 2, in, &(tt_trace_opts){.mode = TT_TRACE_FAKE,
                                                            .name = "inplace"});
    tt_release(in[0]);
    tt_release(in[1]);
    return NN(g);
}

static tt_explain *explain_breaks(void)
{
    tt_tensor *x = NN(tt_randn(TT_SHAPE(2, 3), TT_F32));
    tt_explain *e = tt_explain_run(with_breaks, 1, &x, NULL);
    tt_release(x);
    return NN(e);
}

/* The whole file (free()), or NULL. */
static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    char *s = malloc(cap);
    for (size_t got; s && (got = fread(s + n, 1, cap - n - 1, f)) > 0;) {
        n += got;
        if (n + 1 == cap) {
            char *ns = realloc(s, cap *= 2);
            if (!ns)
                free(s);
            s = ns;
        }
    }
    fclose(f);
    if (s)
        s[n] = '\0';
    if (len)
        *len = n;
    return s;
}

/* Compares dot with tests/golden/<name>, or rewrites the file when
 * TT_UPDATE_GOLDEN=1. */
static void check_golden(const char *name, const char *dot)
{
    const char *dir = getenv("TT_TEST_SRCDIR");
    ck_assert_msg(dir != NULL, "TT_TEST_SRCDIR is not set (run the suite with meson test)");
    char path[4096];
    snprintf(path, sizeof path, "%s/golden/%s", dir, name);
    const char *update = getenv("TT_UPDATE_GOLDEN");
    if (update && strcmp(update, "1") == 0) {
        FILE *f = fopen(path, "wb");
        ck_assert_msg(f != NULL, "cannot write %s: %s", path, strerror(errno));
        ck_assert_int_eq(fputs(dot, f) >= 0, 1);
        ck_assert_int_eq(fclose(f), 0);
        return;
    }
    char *want = slurp(path, NULL);
    ck_assert_msg(want != NULL, "cannot read golden file %s (TT_UPDATE_GOLDEN=1 writes it)",
                  path);
    if (strcmp(want, dot) != 0) {
        int line = 1;
        const char *a = want, *b = dot;
        while (*a && *a == *b) {
            line += *a == '\n';
            a++, b++;
        }
        ck_abort_msg("%s differs from the output at line %d:\n  golden: %.80s\n  output: %.80s\n"
                     "(TT_UPDATE_GOLDEN=1 rewrites it)", path, line, a, b);
    }
    free(want);
}

/* ------------------------------------------------- reading DOT back */

static Agraph_t *parse(const char *dot)
{
    Agraph_t *ag = agmemread(dot);
    ck_assert_msg(ag != NULL, "graphviz cannot parse the DOT:\n%s", dot);
    return ag;
}

static Agnode_t *node(Agraph_t *ag, const char *id)
{
    Agnode_t *n = agnode(ag, (char *)id, 0);
    ck_assert_msg(n != NULL, "no node %s in the DOT", id);
    return n;
}

static const char *attr(void *obj, const char *name)
{
    const char *v = agget(obj, (char *)name);
    return v ? v : "";
}

/* The edges from `from` to `to`, and the first one. */
static int edges_between(Agraph_t *ag, const char *from, const char *to, Agedge_t **first)
{
    Agnode_t *t = node(ag, from), *h = node(ag, to);
    int n = 0;
    if (first)
        *first = NULL;
    for (Agedge_t *e = agfstout(ag, t); e; e = agnxtout(ag, e))
        if (aghead(e) == h && n++ == 0 && first)
            *first = e;
    return n;
}

/* Asserts exactly one edge from -> to with this label; returns it. */
static Agedge_t *edge(Agraph_t *ag, const char *from, const char *to, const char *label)
{
    Agedge_t *e;
    int n = edges_between(ag, from, to, &e);
    ck_assert_msg(n == 1, "%d edges %s -> %s, expected 1", n, from, to);
    ck_assert_str_eq(attr(e, "label"), label);
    return e;
}

static bool is_write_edge(Agedge_t *e)
{
    return strcmp(attr(e, "color"), "red") == 0 && strcmp(attr(e, "style"), "dashed") == 0 &&
           strstr(attr(e, "label"), "writes") != NULL;
}

static int count_write_edges(Agraph_t *ag)
{
    int n = 0;
    for (Agnode_t *v = agfstnode(ag); v; v = agnxtnode(ag, v))
        for (Agedge_t *e = agfstout(ag, v); e; e = agnxtout(ag, e))
            n += is_write_edge(e);
    return n;
}

/* The node of graph node i ("n3" or "g2_n3"): its label's first line is
 * the graph node's name. */
static void check_node_ids(Agraph_t *ag, const tt_graph *g, int cluster)
{
    for (int i = 0; i < tt_graph_num_nodes(g); i++) {
        char id[32], first[64];
        if (cluster)
            snprintf(id, sizeof id, "g%d_n%d", cluster, i);
        else
            snprintf(id, sizeof id, "n%d", i);
        const char *label = attr(node(ag, id), "label");
        snprintf(first, sizeof first, "%s", label);
        char *nl = strstr(first, "\\n");
        if (nl)
            *nl = '\0';
        ck_assert_str_eq(first, tt_graph_node_name(g, i));
    }
}

/* ================================================================== tests */

START_TEST(test_mlp_golden)
{
    tt_graph *g = trace_mlp("mlp");
    char *dot = NN(tt_graph_to_dot(g));
    check_golden("mlp.dot", dot);
    /* write_dot writes the same text. */
    FILE *f = NN(tmpfile());
    OK(tt_graph_write_dot(g, f));
    rewind(f);
    char buf[8192];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    ck_assert_str_eq(buf, dot);
    free(dot);
    tt_graph_free(g);
}
END_TEST

START_TEST(test_mlp_structure)
{
    tt_graph *g = trace_mlp("mlp");
    char *dot = NN(tt_graph_to_dot(g));
    Agraph_t *ag = parse(dot);
    /* in0..in4, matmul, add, relu, matmul_1, add_1, output */
    ck_assert_int_eq(tt_graph_num_nodes(g), 11);
    ck_assert_int_eq(agnnodes(ag), 11);
    ck_assert_int_eq(agnedges(ag), 2 * 4 + 1 + 1); /* four binary ops, relu, output */
    ck_assert(agisdirected(ag));
    ck_assert_str_eq(attr(ag, "rankdir"), "TB");
    ck_assert_str_eq(attr(ag, "label"), "mlp");
    check_node_ids(ag, g, 0);
    /* Placeholder -> op edges, named by argument. */
    edge(ag, "n0", "n5", "#1 self");
    edge(ag, "n1", "n5", "#2 other");
    edge(ag, "n5", "n6", "#1 self");
    edge(ag, "n2", "n6", "#2 other");
    edge(ag, "n6", "n7", "#1 self");
    edge(ag, "n7", "n8", "#1 self");
    edge(ag, "n3", "n8", "#2 other");
    edge(ag, "n4", "n9", "#2 other");
    edge(ag, "n9", "n10", "out 0");
    ck_assert_int_eq(count_write_edges(ag), 0);
    ck_assert_str_eq(attr(node(ag, "n6"), "label"), "add\\ntt::add.Tensor\\nf32[4, 8]");
    ck_assert_str_eq(attr(node(ag, "n0"), "label"), "in0\\nplaceholder\\nf32[4, 3]");
    ck_assert_str_eq(attr(node(ag, "n10"), "label"), "output");
    /* Each kind styled apart: shapes and fills. */
    const char *ph = attr(node(ag, "n0"), "fillcolor"), *op = attr(node(ag, "n5"), "fillcolor"),
               *out = attr(node(ag, "n10"), "fillcolor");
    ck_assert_str_eq(attr(node(ag, "n0"), "shape"), "ellipse");
    ck_assert_str_eq(attr(node(ag, "n5"), "shape"), "box");
    ck_assert_str_eq(attr(node(ag, "n10"), "shape"), "invhouse");
    ck_assert_str_ne(ph, op);
    ck_assert_str_ne(op, out);
    ck_assert_str_ne(ph, out);
    for (int i = 5; i < 10; i++) { /* built-ins: one style */
        char id[8];
        snprintf(id, sizeof id, "n%d", i);
        ck_assert_str_eq(attr(node(ag, id), "fillcolor"), op);
        ck_assert_ptr_null(strstr(attr(node(ag, id), "style"), "bold"));
    }
    agclose(ag);
    free(dot);
    tt_graph_free(g);
}
END_TEST

START_TEST(test_crop_golden_and_style)
{
    tt_graph *g = trace_crop();
    ck_assert_int_eq(tt_graph_count_op(g, "mylib::crop"), 1);
    char *dot = NN(tt_graph_to_dot(g));
    check_golden("crop.dot", dot);
    Agraph_t *ag = parse(dot);
    /* in0, crop, the lifted weight, mul, output */
    ck_assert_int_eq(tt_graph_num_nodes(g), 5);
    ck_assert_int_eq(agnnodes(ag), 5);
    ck_assert_int_eq(agnedges(ag), 4);
    check_node_ids(ag, g, 0);
    ck_assert_int_eq(tt_graph_node_kind(g, 1), TT_NODE_OP);
    ck_assert_int_eq(tt_graph_node_kind(g, 2), TT_NODE_CONSTANT);
    edge(ag, "n0", "n1", "#1 pic");
    edge(ag, "n1", "n3", "#1 self");
    edge(ag, "n2", "n3", "#2 other");
    edge(ag, "n3", "n4", "out 0");
    /* The custom op: opaque, a bold double border, orange; its constant
     * argument shown. */
    Agnode_t *crop = node(ag, "n1"), *mul = node(ag, "n3"), *w = node(ag, "n2");
    ck_assert_str_eq(attr(crop, "label"),
                     "crop\\nmylib::crop\\nbox=[8, 4, 40, 20]\\nf32[3, 16, 32]");
    ck_assert_str_eq(attr(crop, "peripheries"), "2");
    ck_assert_ptr_nonnull(strstr(attr(crop, "style"), "bold"));
    ck_assert_str_eq(attr(crop, "fillcolor"), "#f6b26b");
    ck_assert_str_ne(attr(mul, "fillcolor"), "#f6b26b");
    ck_assert_str_ne(attr(mul, "peripheries"), "2");
    /* The constant: its own shape and fill. */
    ck_assert_str_eq(attr(w, "shape"), "cylinder");
    ck_assert_str_eq(attr(w, "label"), "_tensor_constant0\\nconstant\\nf32[3, 1, 1]");
    ck_assert_str_ne(attr(w, "fillcolor"), attr(node(ag, "n0"), "fillcolor"));
    ck_assert_str_ne(attr(w, "fillcolor"), attr(mul, "fillcolor"));
    agclose(ag);
    free(dot);
    tt_graph_free(g);
}
END_TEST

START_TEST(test_mutated_arguments)
{
    tt_graph *g = trace_inplace();
    char *dot = NN(tt_graph_to_dot(g));
    Agraph_t *ag = parse(dot);
    /* in0 in1 | add relu_ add_ fill_like add_1 | output */
    ck_assert_int_eq(agnnodes(ag), 8);
    ck_assert_int_eq(tt_graph_num_nodes(g), 8);
    check_node_ids(ag, g, 0);
    ck_assert_int_eq(agnedges(ag), 2 + 1 + 2 + 2 + 2 + 1);
    ck_assert_int_eq(count_write_edges(ag), 3);
    /* relu_ writes the add; add_ writes relu_'s result, not its other. */
    ck_assert(is_write_edge(edge(ag, "n2", "n3", "#1 self\\nwrites")));
    ck_assert(is_write_edge(edge(ag, "n3", "n4", "#1 self\\nwrites")));
    ck_assert(!is_write_edge(edge(ag, "n1", "n4", "#2 other")));
    /* The custom mutable op writes the input in0 (its dst) and reads add_. */
    ck_assert(is_write_edge(edge(ag, "n0", "n5", "#2 dst\\nwrites")));
    ck_assert(!is_write_edge(edge(ag, "n4", "n5", "#1 src")));
    /* Its after-write value: in0 as fill_like left it, which the add
     * after it reads (a data edge from the write, not from in0). */
    ck_assert_str_eq(attr(node(ag, "n5"), "label"),
                     "fill_like\\nmylib::fill_like\\ndst after the write: f32[2, 3]");
    ck_assert_str_eq(attr(node(ag, "n5"), "fillcolor"), "#f6b26b");
    ck_assert(!is_write_edge(edge(ag, "n5", "n6", "#2 other")));
    agclose(ag);
    free(dot);
    tt_graph_free(g);
}
END_TEST

START_TEST(test_explain_clusters_and_breaks)
{
    tt_explain *e = explain_breaks();
    int ng = tt_explain_graph_count(e), nb = tt_explain_break_count(e);
    ck_assert_int_eq(ng, 4);
    ck_assert_int_eq(nb, 3);
    char *dot = NN(tt_explain_to_dot(e));
    Agraph_t *ag = parse(dot);
    int clusters = 0, nodes = 0;
    for (Agraph_t *sg = agfstsubg(ag); sg; sg = agnxtsubg(sg)) {
        char want[32], label[64];
        clusters++;
        snprintf(want, sizeof want, "cluster_%d", clusters);
        ck_assert_str_eq(agnameof(sg), want);
        snprintf(label, sizeof label, "graph %d (graph_%d)", clusters, clusters);
        ck_assert_str_eq(attr(sg, "label"), label);
        const tt_graph *g = tt_explain_graph(e, clusters - 1);
        ck_assert_int_eq(agnnodes(sg), tt_graph_num_nodes(g));
        check_node_ids(ag, g, clusters);
        nodes += tt_graph_num_nodes(g);
    }
    ck_assert_int_eq(clusters, ng);
    ck_assert_int_eq(agnnodes(ag), nodes + nb);
    /* Each break: a red octagon, linked from the last node of graph i to
     * the first of graph i + 1, labelled with kind, reason and line. */
    const char *kinds[3] = {"data read", "explicit graph break", "op without a fake kernel"};
    const char *gist[3] = {"reads the data of", "\"h\" &amp; stop\"",
                           "mylib::twice has no fake kernel"};
    int lines[3] = {line_item, line_explicit, line_nofake};
    for (int i = 0; i < nb; i++) {
        char id[16], from[32], to[32], where[64];
        snprintf(id, sizeof id, "break%d", i + 1);
        snprintf(from, sizeof from, "g%d_n%d", i + 1, tt_graph_num_nodes(tt_explain_graph(e, i)) - 1);
        snprintf(to, sizeof to, "g%d_n0", i + 2);
        Agnode_t *b = node(ag, id);
        ck_assert_str_eq(attr(b, "shape"), "octagon");
        ck_assert_str_eq(attr(b, "color"), "red");
        const char *label = attr(b, "label");
        ck_assert_ptr_nonnull(strstr(label, kinds[i]));
        ck_assert_msg(strstr(label, gist[i]), "break %d label %s lacks %s", i + 1, label, gist[i]);
        snprintf(where, sizeof where, "test_dot.c:%d in with_breaks()", lines[i]);
        ck_assert_msg(strstr(label, where), "break %d label %s lacks %s", i + 1, label, where);
        ck_assert_ptr_null(strstr(label, "while tracing")); /* the reason is shortened */
        ck_assert_int_eq(edges_between(ag, from, id, NULL), 1);
        ck_assert_int_eq(edges_between(ag, id, to, NULL), 1);
    }
    ck_assert_ptr_null(agnode(ag, "break4", 0));
    /* The same explain, the same bytes. */
    char *again = NN(tt_explain_to_dot(e));
    ck_assert_str_eq(again, dot);
    free(again);
    agclose(ag);
    free(dot);
    tt_explain_free(e);
}
END_TEST

START_TEST(test_deterministic)
{
    tt_graph *a = trace_mlp("mlp"), *b = trace_mlp("mlp");
    char *da = NN(tt_graph_to_dot(a)), *db = NN(tt_graph_to_dot(b)), *da2 = NN(tt_graph_to_dot(a));
    ck_assert_str_eq(da, db);
    ck_assert_str_eq(da, da2);
    ck_assert_ptr_null(strstr(da, "0x")); /* no addresses */
    free(da);
    free(db);
    free(da2);
    tt_graph_free(a);
    tt_graph_free(b);
    tt_graph *c = trace_crop(), *d = trace_crop();
    char *dc = NN(tt_graph_to_dot(c)), *dd = NN(tt_graph_to_dot(d));
    ck_assert_str_eq(dc, dd);
    free(dc);
    free(dd);
    tt_graph_free(c);
    tt_graph_free(d);
}
END_TEST

/* A graph name with every character DOT or graphviz labels care about,
 * plus a valid UTF-8 letter and a malformed byte. */
static const char weird[] = "a \"q\" \\ b\nc <d> {e} |f| & g \xc3\xa9 \xff.";

START_TEST(test_escaping)
{
    inputs x = mlp_inputs();
    tt_graph *g = NN(tt_trace(mlp, x.nin, x.in,
                              &(tt_trace_opts){.mode = TT_TRACE_FAKE, .name = weird}));
    inputs_free(&x);
    char *dot = NN(tt_graph_to_dot(g));
    ck_assert_ptr_nonnull(strstr(dot, "label=\"a \\\"q\\\" \\\\ b\\nc <d> {e} |f| &amp; g "
                                      "\xc3\xa9 ?.\""));
    Agraph_t *ag = parse(dot);
    /* cgraph keeps label escapes (\\, \n, &amp;) for the label layer. */
    ck_assert_str_eq(attr(ag, "label"), "a \"q\" \\\\ b\\nc <d> {e} |f| &amp; g \xc3\xa9 ?.");
    ck_assert_str_eq(agnameof(ag), "a \"q\" \\\\ b\\nc <d> {e} |f| &amp; g \xc3\xa9 ?.");
    ck_assert_int_eq(agnnodes(ag), 11);
    agclose(ag);
    free(dot);
    tt_graph_free(g);
}
END_TEST

/* ------------------------------------------------------------- render */

static char tmpdir[64];

static void render_setup(void)
{
    ops_setup();
    snprintf(tmpdir, sizeof tmpdir, "/tmp/tt_dot_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void render_teardown(void)
{
    const char *names[] = {"g.svg", "g.png", "e.svg", "e.png", "w.svg", "stderr.txt",
                           "g.html", "shot.png"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        char p[128];
        snprintf(p, sizeof p, "%s/%s", tmpdir, names[i]);
        unlink(p);
    }
    ck_assert_int_eq(rmdir(tmpdir), 0);
    ops_teardown();
}

static char *in_tmp(const char *name)
{
    static char p[128];
    snprintf(p, sizeof p, "%s/%s", tmpdir, name);
    return p;
}

static void assert_svg(const char *path)
{
    size_t n;
    char *s = slurp(path, &n);
    ck_assert_msg(s != NULL, "%s was not written", path);
    ck_assert_msg(strncmp(s, "<?xml", 5) == 0 || strncmp(s, "<svg", 4) == 0,
                  "%s does not start like SVG: %.20s", path, s);
    ck_assert_ptr_nonnull(strstr(s, "<svg"));
    ck_assert_ptr_nonnull(strstr(s, "</svg>"));
    free(s);
}

static void assert_png(const char *path)
{
    size_t n;
    char *s = slurp(path, &n);
    ck_assert_msg(s != NULL, "%s was not written", path);
    ck_assert_uint_gt(n, 100);
    ck_assert_int_eq(memcmp(s, "\x89PNG\r\n\x1a\n", 8), 0);
    free(s);
}

START_TEST(test_render_graph)
{
    tt_graph *g = trace_crop();
    OK(tt_graph_render(g, "svg", in_tmp("g.svg")));
    assert_svg(in_tmp("g.svg"));
    char *svg = slurp(in_tmp("g.svg"), NULL);
    ck_assert_ptr_nonnull(strstr(svg, "mylib::crop")); /* the labels made it */
    ck_assert_ptr_nonnull(strstr(svg, "#f6b26b"));     /* and the custom op's fill */
    free(svg);
    OK(tt_graph_render(g, "png", in_tmp("g.png")));
    assert_png(in_tmp("g.png"));
    tt_graph_free(g);
}
END_TEST

START_TEST(test_render_explain)
{
    tt_explain *e = explain_breaks();
    OK(tt_explain_render(e, "svg", in_tmp("e.svg")));
    assert_svg(in_tmp("e.svg"));
    char *svg = slurp(in_tmp("e.svg"), NULL);
    ck_assert_ptr_nonnull(strstr(svg, "cluster_4"));
    ck_assert_ptr_nonnull(strstr(svg, "graph break: data read"));
    free(svg);
    OK(tt_explain_render(e, "png", in_tmp("e.png")));
    assert_png(in_tmp("e.png"));
    tt_explain_free(e);
}
END_TEST

/* Graphviz says nothing on stderr, even for a name that is hard to lay
 * out (its messages would become our error message). */
START_TEST(test_render_quiet)
{
    inputs x = mlp_inputs();
    tt_graph *g = NN(tt_trace(mlp, x.nin, x.in,
                              &(tt_trace_opts){.mode = TT_TRACE_FAKE, .name = weird}));
    inputs_free(&x);
    fflush(stderr);
    int saved = dup(2), fd = open(in_tmp("stderr.txt"), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ck_assert_int_ge(saved, 0);
    ck_assert_int_ge(fd, 0);
    dup2(fd, 2);
    tt_status st = tt_graph_render(g, "svg", in_tmp("w.svg"));
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    close(fd);
    ck_assert_msg(st == TT_OK, "%s", tt_errmsg());
    assert_svg(in_tmp("w.svg"));
    size_t n;
    char *said = NN(slurp(in_tmp("stderr.txt"), &n));
    ck_assert_msg(n == 0, "graphviz printed: %s", said);
    free(said);
    char *svg = NN(slurp(in_tmp("w.svg"), NULL));
    ck_assert_ptr_nonnull(strstr(svg, "&lt;d&gt; {e} |f| &amp; g"));
    free(svg);
    tt_graph_free(g);
}
END_TEST

/* The inputs of the error rows, made again for each row by the
 * "render_errors" TCase's fixture: a traced graph, an explain run, and
 * the texts that name the row's temporary directory. */
static struct {
    tt_graph *g;
    tt_explain *e;
    char missing[160];      /* a path in a directory that does not exist */
    char want_missing[256]; /* what rendering to it says */
    char want_dir[256];     /* what rendering to the directory itself says */
} ein;

static void render_errors_setup(void)
{
    render_setup();
    ein.g = trace_mlp("mlp");
    ein.e = explain_breaks();
    snprintf(ein.missing, sizeof ein.missing, "%s/no/such/dir/g.svg", tmpdir);
    snprintf(ein.want_missing, sizeof ein.want_missing,
             "tt_graph_render: argument 'path' (#3): cannot write \"%s\": "
             "No such file or directory", ein.missing);
    snprintf(ein.want_dir, sizeof ein.want_dir,
             "tt_explain_render: argument 'path' (#3): cannot write \"%s\"", tmpdir);
}

static void render_errors_teardown(void)
{
    tt_explain_free(ein.e);
    tt_graph_free(ein.g);
    memset(&ein, 0, sizeof ein);
    render_teardown();
}

/* Rendering with no format writes nothing. */
static tt_status render_no_format(void)
{
    tt_status st = tt_graph_render(ein.g, NULL, in_tmp("g.svg"));
    ck_assert_msg(access(in_tmp("g.svg"), F_OK) == -1, "render_no_format: g.svg was written");
    return st;
}

/* Writes the DOT text (the graph's, or else the explain's) to a stream
 * that cannot be written. */
static tt_status write_dot_read_only(bool graph)
{
    FILE *ro = NN(fopen(in_tmp("stderr.txt"), "w+"));
    fclose(ro);
    ro = NN(fopen(in_tmp("stderr.txt"), "r"));
    tt_status st = graph ? tt_graph_write_dot(ein.g, ro) : tt_explain_write_dot(ein.e, ro);
    fclose(ro);
    return st;
}

/* Formats: svg and png only, named in the message. */
#define BAD_FORMAT(f) "argument 'format' (#2) expects \"svg\" or \"png\", got \"" f "\""
#define BAD_FORMAT_ROWS(X, name, f)                                            \
    X(graph_render_format_##name, tt_graph_render(ein.g, f, in_tmp("g.svg")), TT_EINVAL, \
      BAD_FORMAT(f))                                                           \
    X(explain_render_format_##name, tt_explain_render(ein.e, f, in_tmp("e.svg")), TT_EINVAL, \
      BAD_FORMAT(f))

/* X(name, call, expected status, texts the message contains). */
#define DOT_ERRORS(X)                                                          \
    /* NULL objects. */                                                        \
    X(graph_to_dot_null, tt_graph_to_dot(NULL), TT_EINVAL,                     \
      "tt_graph_to_dot: argument 'graph' (#1) is NULL")                        \
    X(graph_write_dot_null, tt_graph_write_dot(NULL, stdout), TT_EINVAL,       \
      "tt_graph_write_dot: argument 'graph' (#1) is NULL")                     \
    X(explain_to_dot_null, tt_explain_to_dot(NULL), TT_EINVAL,                 \
      "tt_explain_to_dot: argument 'explain' (#1) is NULL")                    \
    X(explain_write_dot_null, tt_explain_write_dot(NULL, stdout), TT_EINVAL,   \
      "tt_explain_write_dot: argument 'explain' (#1) is NULL")                 \
    X(graph_render_null, tt_graph_render(NULL, "svg", in_tmp("g.svg")), TT_EINVAL, \
      "tt_graph_render: argument 'graph' (#1) is NULL")                        \
    X(explain_render_null, tt_explain_render(NULL, "png", in_tmp("e.png")), TT_EINVAL, \
      "tt_explain_render: argument 'explain' (#1) is NULL")                    \
    BAD_FORMAT_ROWS(X, jpg, "jpg")                                             \
    BAD_FORMAT_ROWS(X, upper_svg, "SVG")                                       \
    BAD_FORMAT_ROWS(X, empty, "")                                              \
    BAD_FORMAT_ROWS(X, dot, "dot")                                             \
    X(graph_render_format_null, render_no_format(), TT_EINVAL,                 \
      "tt_graph_render: argument 'format' (#2) expects \"svg\" or "            \
      "\"png\", got NULL")                                                     \
    /* Paths. */                                                               \
    X(graph_render_path_null, tt_graph_render(ein.g, "svg", NULL), TT_EINVAL,  \
      "tt_graph_render: argument 'path' (#3) expects a file name, got NULL")   \
    X(graph_render_path_empty, tt_graph_render(ein.g, "png", ""), TT_EINVAL,   \
      "argument 'path' (#3) expects a file name, got \"\"")                    \
    X(graph_render_path_missing_dir, tt_graph_render(ein.g, "svg", ein.missing), TT_EINVAL, \
      ein.want_missing)                                                        \
    X(explain_render_path_is_dir, tt_explain_render(ein.e, "png", tmpdir), TT_EINVAL, \
      ein.want_dir)                                                            \
    /* A stream that cannot be written. */                                     \
    X(graph_write_dot_read_only, write_dot_read_only(true), TT_EINVAL,         \
      "tt_graph_write_dot: writing the DOT text to argument 'f' (#2) failed")  \
    X(explain_write_dot_read_only, write_dot_read_only(false), TT_EINVAL,      \
      "tt_explain_write_dot: writing the DOT text")

TT_ERROR_TABLE(DOT_ERRORS, dot_errors);

/* One row of DOT_ERRORS per iteration. */
START_TEST(test_errors)
{
    tt_test_run_error_case(&dot_errors[_i], _i);
}
END_TEST

/* ------------------------------------------------------- named scopes */

/* Two blocks, the first with a nested "attn" scope; the output outside. */
static tt_status scoped(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_scope_begin();
    OK(tt_scope_name_push("block0"));
    tt_tensor *h = tt_relu(in[0]);
    OK(tt_scope_name_push("attn"));
    h = tt_mul_scalar(h, 2);
    OK(tt_scope_name_pop());
    h = tt_neg(h);
    OK(tt_scope_name_pop());
    OK(tt_scope_name_push("block1"));
    h = tt_exp(h);
    OK(tt_scope_name_pop());
    out[0] = tt_keep(tt_add(h, in[0]));
    tt_scope_end();
    return out[0] ? TT_OK : tt_errcode();
}

/* A weight read only inside a scope: collapsed, it is left out. */
static tt_status weighted(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_scope_begin();
    OK(tt_scope_name_push("blk"));
    tt_tensor *h = tt_mul(in[0], in[1]);
    OK(tt_scope_name_pop());
    out[0] = tt_keep(tt_add(tt_relu(h), in[0]));
    tt_scope_end();
    return out[0] ? TT_OK : tt_errcode();
}

/* Three identical layers, then a different head. */
static tt_status layered(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    static const char *const names[] = {"layer0", "layer1", "layer2"};
    tt_scope_begin();
    tt_tensor *h = in[0];
    for (int l = 0; l < 3; l++) {
        OK(tt_scope_name_push(names[l]));
        h = tt_mul(tt_relu(h), in[1]);
        OK(tt_scope_name_pop());
    }
    OK(tt_scope_name_push("head"));
    h = tt_exp(h);
    OK(tt_scope_name_pop());
    out[0] = tt_keep(h);
    tt_scope_end();
    return out[0] ? TT_OK : tt_errcode();
}

START_TEST(test_merged_repeats)
{
    tt_tensor *x = NN(tt_ones(TT_SHAPE(2, 3), TT_F32)), *w = NN(tt_ones(TT_SHAPE(2, 3), TT_F32));
    tt_graph *g = NN(tt_trace(layered, 2, (tt_tensor *[]){x, w},
                              &(tt_trace_opts){.mode = TT_TRACE_FAKE}));
    char *dot = NN(tt_graph_to_dot_merged(g, 1));
    Agraph_t *ag = parse(dot);
    /* the merged layers, the head, the output: x and w are read only
     * inside the boxes */
    ck_assert_int_eq(agnnodes(ag), 3);
    ck_assert_str_eq(attr(ag, "label"), "forward (2 inputs read only inside the boxes not drawn)");
    ck_assert_str_eq(attr(node(ag, "b0"), "label"),
                     "layer0 \u2026 layer2\\n\u00d73, 2 ops each");
    ck_assert_str_eq(attr(node(ag, "b0"), "tooltip"), "layer0 to layer2");
    ck_assert_ptr_null(agnode(ag, "b1", 0));
    ck_assert_ptr_null(agnode(ag, "b2", 0));
    ck_assert_str_eq(attr(node(ag, "b3"), "label"), "head\\n1 op");
    ck_assert_int_eq(agnedges(ag), 2); /* b0 -> b3 -> the output */
    ck_assert_ptr_nonnull(agedge(ag, node(ag, "b0"), node(ag, "b3"), NULL, 0));
    agclose(ag);
    free(dot);
    /* collapsed without merging: four boxes */
    dot = NN(tt_graph_to_dot_collapsed(g, 1));
    ag = parse(dot);
    ck_assert_str_eq(attr(node(ag, "b1"), "label"), "layer1\\n2 ops");
    ck_assert_int_eq(agnnodes(ag), 5);
    agclose(ag);
    free(dot);
    ck_assert_ptr_null(tt_graph_to_dot_merged(NULL, 1));
    ck_assert_error(TT_EINVAL, "tt_graph_to_dot_merged: argument 'graph' (#1) is NULL");
    tt_clear_error();
    tt_graph_free(g);
    tt_release(w);
    tt_release(x);
}
END_TEST

/* The HTML view in a browser: Debian's chromium, headless, opens the
 * page at a fragment and prints the DOM after the script ran; the script
 * wrote how many nodes it shows. */
static char *browse(const char *html, const char *fragment)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "chromium --headless --no-sandbox --disable-gpu --dump-dom "
                              "'file://%s#%s' 2>/dev/null", html, fragment);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    size_t cap = 1 << 20, n = 0, got;
    char *dom = malloc(cap);
    while ((got = fread(dom + n, 1, cap - n - 1, p)) > 0)
        if ((n += got) == cap - 1)
            dom = realloc(dom, cap *= 2);
    dom[n] = '\0';
    ck_assert_int_eq(pclose(p), 0);
    return dom;
}

static void assert_shows(const char *html, const char *fragment, const char *visible,
                         const char *view)
{
    char *dom = browse(html, fragment);
    char want[80];
    snprintf(want, sizeof want, "data-visible=\"%s\" data-view=\"%s\"", visible, view);
    ck_assert_msg(strstr(dom, want), "#%s: no %s in the page (%zu bytes of DOM)", fragment, want,
                  strlen(dom));
    free(dom);
}

START_TEST(test_html_view)
{
    ck_assert_msg(system("command -v chromium > /dev/null") == 0,
                  "chromium is not installed (tools/run installs it)");
    tt_tensor *x = NN(tt_ones(TT_SHAPE(2, 3), TT_F32)), *w = NN(tt_ones(TT_SHAPE(2, 3), TT_F32));
    tt_graph *g = NN(tt_trace(layered, 2, (tt_tensor *[]){x, w},
                              &(tt_trace_opts){.mode = TT_TRACE_FAKE}));
    const char *html = strdup(in_tmp("g.html"));
    OK(tt_graph_write_html(g, html));
    char *page = slurp(html, NULL);
    ck_assert_ptr_nonnull(strstr(page, "<!DOCTYPE html>"));
    ck_assert_ptr_nonnull(strstr(page, "id=\"scope:layer1\""));
    ck_assert_ptr_nonnull(strstr(page, "\"op\":\"tt::relu\",\"schema\":\"tt::relu(Tensor self) -> Tensor\""));
    /* self-contained: nothing loaded from elsewhere */
    ck_assert_ptr_null(strstr(page, "<script src"));
    ck_assert_ptr_null(strstr(page, "<link"));
    free(page);
    /* every op: 10 nodes; the layers folded but layer1: in0, in1, its two
     * ops and the output */
    assert_shows(html, "", "10", "ops");
    assert_shows(html, "fold=all&open=layer1", "5", "ops");
    /* a box per layer (the inputs are read only inside them) and the
     * output; the three identical layers as one box */
    assert_shows(html, "view=layers", "5", "layers");
    assert_shows(html, "view=repeats", "3", "repeats");
    /* a search opens what it finds and marks it */
    char *dom = browse(html, "fold=all&find=exp");
    ck_assert_ptr_nonnull(strstr(dom, "1 found"));
    ck_assert_int_eq(tt_test_count(dom, "class=\"node hit\""), 1);
    ck_assert_ptr_nonnull(strstr(dom, "data-visible=\"4\"")); /* in0, in1, exp, output */
    free(dom);
    /* a picture: the screenshot is a PNG of some size */
    char cmd[512];
    snprintf(cmd, sizeof cmd, "chromium --headless --no-sandbox --disable-gpu "
                              "--window-size=1000,700 --screenshot='%s' 'file://%s#view=layers' "
                              "> /dev/null 2>&1", in_tmp("shot.png"), html);
    ck_assert_int_eq(system(cmd), 0);
    size_t n;
    char *png = slurp(in_tmp("shot.png"), &n);
    ck_assert_ptr_nonnull(png);
    ck_assert_uint_gt(n, 5000);
    ck_assert_int_eq(memcmp(png, "\x89PNG\r\n\x1a\n", 8), 0);
    free(png);
    /* errors */
    ck_assert_int_eq(tt_graph_write_html(NULL, html), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_graph_write_html: argument 'graph' (#1) is NULL");
    ck_assert_int_eq(tt_graph_write_html(g, ""), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_graph_write_html: argument 'path' (#2) expects a file name, "
                               "got \"\"");
    ck_assert_int_eq(tt_graph_write_html(g, "/nonexistent/g.html"), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_graph_write_html: argument 'path' (#2): cannot write "
                               "\"/nonexistent/g.html\": No such file or directory");
    tt_clear_error();
    free((char *)html);
    tt_graph_free(g);
    tt_release(w);
    tt_release(x);
}
END_TEST

START_TEST(test_named_scopes)
{
    tt_tensor *x = NN(tt_ones(TT_SHAPE(2, 3), TT_F32));
    tt_graph *g = NN(tt_trace(scoped, 1, &x, &(tt_trace_opts){.mode = TT_TRACE_FAKE}));
    static const char *const want[] = {NULL, "block0", "block0/attn", "block0", "block1", NULL};
    for (int k = 1; k <= 5; k++) {
        const char *sc = tt_graph_node_scope(g, k);
        ck_assert_msg(want[k] ? sc && !strcmp(sc, want[k]) : !sc, "node %d: scope %s, want %s",
                      k, sc ? sc : "NULL", want[k] ? want[k] : "NULL");
    }
    ck_assert_ptr_null(tt_graph_node_scope(g, 0)); /* the input */
    ck_assert_ptr_null(tt_graph_node_scope(g, 99));
    OK(tt_expect_graph_text(g,
                            "def forward(in0: \"f32[2, 3]\"):\n"
                            "    relu: \"f32[2, 3]\" = tt::relu(in0)  # [block0]\n"
                            "    mul: \"f32[2, 3]\" = tt::mul.Scalar(relu, 2)  # [block0/attn]\n"
                            "    neg: \"f32[2, 3]\" = tt::neg(mul)  # [block0]\n"
                            "    exp: \"f32[2, 3]\" = tt::exp(neg)  # [block1]\n"
                            "    add: \"f32[2, 3]\" = tt::add.Tensor(exp, in0)\n"
                            "    return (add,)\n",
                            0));
    char *text = NN(tt_graph_to_text(g));
    ck_assert_msg(strstr(text, "tt::neg(mul)  # [block0] test_dot.c:"), "%s", text);
    free(text);
    /* the DOT: cluster block0 holds relu, neg and cluster attn (mul);
     * block1 holds exp; the input, add and the output are outside */
    char *dot = NN(tt_graph_to_dot(g));
    Agraph_t *ag = parse(dot);
    int top = 0;
    for (Agraph_t *sg = agfstsubg(ag); sg; sg = agnxtsubg(sg)) {
        top++;
        const char *label = attr(sg, "label");
        if (!strcmp(label, "block0")) {
            ck_assert_int_eq(agnnodes(sg), 3); /* relu, neg and attn's mul */
            Agraph_t *inner = agfstsubg(sg);
            ck_assert_ptr_nonnull(inner);
            ck_assert_str_eq(attr(inner, "label"), "attn");
            ck_assert_int_eq(agnnodes(inner), 1);
            ck_assert_ptr_nonnull(agnode(inner, "n2", 0));
        } else {
            ck_assert_str_eq(label, "block1");
            ck_assert_int_eq(agnnodes(sg), 1);
            ck_assert_ptr_nonnull(agnode(sg, "n4", 0));
        }
    }
    ck_assert_int_eq(top, 2);
    ck_assert_int_eq(agnnodes(ag), tt_graph_num_nodes(g));
    agclose(ag);
    free(dot);
    /* collapsed at depth 1: the blocks are boxes, in0 -> block0 ->
     * block1 -> add, and in0 -> add */
    dot = NN(tt_graph_to_dot_collapsed(g, 1));
    ag = parse(dot);
    ck_assert_ptr_null(agfstsubg(ag));
    ck_assert_int_eq(agnnodes(ag), 5); /* in0, the two boxes, add, output */
    ck_assert_str_eq(attr(node(ag, "b0"), "label"), "block0\\n3 ops");
    ck_assert_str_eq(attr(node(ag, "b1"), "label"), "block1\\n1 op");
    ck_assert_int_eq(agnedges(ag), 5);
    ck_assert_ptr_nonnull(agedge(ag, node(ag, "n0"), node(ag, "b0"), NULL, 0));
    ck_assert_ptr_nonnull(agedge(ag, node(ag, "b0"), node(ag, "b1"), NULL, 0));
    ck_assert_ptr_nonnull(agedge(ag, node(ag, "b1"), node(ag, "n5"), NULL, 0));
    agclose(ag);
    free(dot);
    /* at depth 2 block0 stays a cluster around relu, neg and the attn box */
    dot = NN(tt_graph_to_dot_collapsed(g, 2));
    ag = parse(dot);
    Agraph_t *b0 = agsubg(ag, "cluster_s0_0", 0); /* scopes in sorted order */
    ck_assert_ptr_nonnull(b0);
    ck_assert_str_eq(attr(b0, "label"), "block0");
    ck_assert_int_eq(agnnodes(b0), 3);
    ck_assert_ptr_null(agfstsubg(b0));
    ck_assert_str_eq(attr(node(b0, "b0"), "label"), "attn\\n1 op");
    ck_assert_int_eq(agnnodes(ag), tt_graph_num_nodes(g));
    agclose(ag);
    free(dot);
    /* an input read only inside a box is left out, and the title says so */
    tt_tensor *w = NN(tt_ones(TT_SHAPE(2, 3), TT_F32));
    tt_graph *wg = NN(tt_trace(weighted, 2, (tt_tensor *[]){x, w},
                               &(tt_trace_opts){.mode = TT_TRACE_FAKE}));
    dot = NN(tt_graph_to_dot_collapsed(wg, 1));
    ag = parse(dot);
    ck_assert_str_eq(attr(ag, "label"), "forward (1 input read only inside the boxes not drawn)");
    ck_assert_ptr_nonnull(node(ag, "n0"));
    ck_assert_ptr_null(agnode(ag, "n1", 0)); /* in1, the weight */
    ck_assert_int_eq(agnnodes(ag), 5);       /* in0, the box, relu, add, output */
    agclose(ag);
    free(dot);
    tt_graph_free(wg);
    tt_release(w);
    ck_assert_ptr_null(tt_graph_to_dot_collapsed(NULL, 1));
    ck_assert_error(TT_EINVAL, "tt_graph_to_dot_collapsed: argument 'graph' (#1) is NULL");
    tt_clear_error();
    tt_graph_free(g);
    /* bad names and an unmatched pop */
    ck_assert_int_eq(tt_scope_name_push("a/b"), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_scope_name_push: argument 'name' expects 1 to 63 characters "
                               "without '/', got 'a/b'");
    ck_assert_int_eq(tt_scope_name_push(NULL), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "got NULL");
    ck_assert_int_eq(tt_scope_name_push(""), TT_EINVAL);
    ck_assert_int_eq(tt_scope_name_pop(), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_scope_name_pop: no scope is open on this thread");
    int depth = 0;
    while (tt_scope_name_push("deep") == TT_OK)
        depth++;
    ck_assert_int_eq(depth, 32);
    ck_assert_error(TT_EINVAL, "tt_scope_name_push: scopes nest 32 deep at most");
    while (depth--)
        OK(tt_scope_name_pop());
    tt_clear_error();
    tt_release(x);
}
END_TEST

static Suite *dot_suite(void)
{
    Suite *s = suite_create("dot");
    TCase *tc = tt_tcase_with("dot", ops_setup, ops_teardown);
    tcase_add_test(tc, test_mlp_golden);
    tcase_add_test(tc, test_mlp_structure);
    tcase_add_test(tc, test_crop_golden_and_style);
    tcase_add_test(tc, test_mutated_arguments);
    tcase_add_test(tc, test_explain_clusters_and_breaks);
    tcase_add_test(tc, test_deterministic);
    tcase_add_test(tc, test_escaping);
    tcase_add_test(tc, test_named_scopes);
    tcase_add_test(tc, test_merged_repeats);
    suite_add_tcase(s, tc);
    TCase *r = tt_tcase_with("render", render_setup, render_teardown);
    tcase_add_test(r, test_render_graph);
    tcase_add_test(r, test_render_explain);
    tcase_add_test(r, test_render_quiet);
    tcase_add_test(r, test_html_view);
    suite_add_tcase(s, r);
    r = tt_tcase_with("render_errors", render_errors_setup, render_errors_teardown);
    tcase_add_loop_test(r, test_errors, 0, TT_TABLE_LEN(dot_errors));
    suite_add_tcase(s, r);
    return s;
}

TT_TEST_MAIN(dot_suite)
