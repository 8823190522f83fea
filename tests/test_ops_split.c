/* split_with_sizes, split.Tensor and chunk (issue 27, ops/shape.c): ops
 * whose result is a list of views. What the differential file cannot say:
 * the pieces share self's storage (a write through one reaches self), the
 * piece counts of chunk's odd cases, gradcheck of the list's derivative
 * (pieces with no gradient count as zeros), every error's status and
 * message, symbolic sizes through the fake path, and traced + compiled
 * runs (fake and symbolic) equal to eager, backward and a write into a
 * piece included. Zero live tensors at the end of each test. */
#include "tt_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 0, 1, 2, ... in row-major order, converted to dt (bool: k % 2). */
static tt_tensor *counting(int nd, const int64_t *sizes, tt_dtype dt)
{
    int64_t n = 1;
    for (int d = 0; d < nd; d++)
        n *= sizes[d];
    double buf[64];
    ck_assert(n <= 64);
    for (int64_t i = 0; i < n; i++)
        buf[i] = dt == TT_BOOL ? (double)(i % 2) : (double)i * (dt == TT_F64 ? 0.5 : 1);
    tt_tensor *t = NN(tt_from_data(nd, sizes, TT_F64, buf));
    tt_tensor *r = NN(tt_to_dtype(t, dt));
    tt_release(t);
    return r;
}

/* Each piece is narrow(self, dim, start, len) with the lengths given:
 * same metadata (a view of self's storage) and values. */
static void check_pieces(const tt_tensor *self, int dim, tt_tensor **p, int n,
                         const int64_t *len, const char *what)
{
    int64_t start = 0;
    for (int i = 0; i < n; i++) {
        char w[128];
        snprintf(w, sizeof w, "%s: piece %d", what, i);
        tt_tensor *want = NN(tt_narrow(self, dim, start, len[i]));
        ck_assert_msg(tt_same_storage(p[i], self), "%s is not a view of self", w);
        tt_test_assert_close(p[i], want, 0, w);
        ck_assert_msg(tt_storage_offset(p[i]) == tt_storage_offset(want), "%s: offset", w);
        for (int d = 0; d < tt_ndim(want); d++)
            ck_assert_msg(tt_strides(p[i])[d] == tt_strides(want)[d], "%s: stride %d", w, d);
        tt_release(want);
        start += len[i];
    }
}

static void release_all(tt_tensor **p, int n)
{
    for (int i = 0; i < n; i++)
        tt_release(p[i]);
}

static const tt_dtype all_dtypes[] = {TT_F32, TT_F64, TT_I64, TT_I32, TT_U8, TT_BOOL};

START_TEST(test_split_with_sizes_values)
{
    for (int k = 0; k < TT_TABLE_LEN(all_dtypes); k++) {
        for (int tr = 0; tr < 2; tr++) {
            /* tr: the transposed view of a [5, 4] */
            tt_tensor *b = counting(2, tr ? (int64_t[]){5, 4} : (int64_t[]){4, 5},
                                    all_dtypes[k]);
            tt_tensor *x = tr ? NN(tt_transpose(b, 0, 1)) : tt_retain(b);
            tt_tensor *p[3];
            OK(tt_split_with_sizes(x, 3, (const tt_size[]){2, 0, 3}, 1, p));
            check_pieces(x, 1, p, 3, (const int64_t[]){2, 0, 3}, "[2, 0, 3] dim 1");
            release_all(p, 3);
            OK(tt_split_with_sizes(x, 2, (const tt_size[]){1, 3}, -2, p));
            check_pieces(x, 0, p, 2, (const int64_t[]){1, 3}, "[1, 3] dim -2");
            release_all(p, 2);
            OK(tt_split_with_sizes(x, 1, (const tt_size[]){5}, -1, p));
            check_pieces(x, 1, p, 1, (const int64_t[]){5}, "[5]");
            release_all(p, 1);
            tt_release(x), tt_release(b);
        }
    }
}
END_TEST

/* split.Tensor and chunk: PyTorch's piece counts (checked against
 * PyTorch 1.13), the last piece shorter. */
START_TEST(test_split_chunk_counts)
{
    static const struct {
        bool chunk;
        int64_t rows, arg; /* self is [rows, 3], split along dim 0 */
        int n;
        int64_t len[6];
    } cases[] = {
        {false, 5, 2, 3, {2, 2, 1}}, {false, 5, 5, 1, {5}},       {false, 5, 7, 1, {5}},
        {false, 0, 0, 1, {0}},       {false, 0, 2, 1, {0}},       {false, 6, 1, 6, {1, 1, 1, 1, 1, 1}},
        {true, 5, 3, 3, {2, 2, 1}},  {true, 6, 4, 3, {2, 2, 2}},  {true, 5, 6, 5, {1, 1, 1, 1, 1}},
        {true, 0, 3, 3, {0, 0, 0}},  {true, 1, 2, 1, {1}},        {true, 7, 1, 1, {7}},
    };
    for (int i = 0; i < TT_TABLE_LEN(cases); i++) {
        tt_tensor *x = counting(2, (int64_t[]){cases[i].rows, 3}, TT_F32);
        tt_tensor *p[8];
        int n = -1;
        tt_status st = cases[i].chunk ? tt_chunk(x, cases[i].arg, 0, p, &n)
                                      : tt_split(x, cases[i].arg, 0, 8, p, &n);
        ck_assert_msg(st == TT_OK, "case %d: %s", i, tt_errmsg());
        ck_assert_msg(n == cases[i].n, "case %d: %d pieces, expected %d", i, n, cases[i].n);
        char what[32];
        snprintf(what, sizeof what, "case %d", i);
        check_pieces(x, 0, p, n, cases[i].len, what);
        release_all(p, n);
        tt_release(x);
    }
}
END_TEST

/* A piece is a view: a write into it reaches self, and the caller's room
 * too small for split is an error that still says how many pieces. */
START_TEST(test_write_through_piece)
{
    tt_tensor *x = counting(2, (int64_t[]){2, 5}, TT_F64);
    tt_tensor *p[3];
    int n = 0;
    OK(tt_chunk(x, 3, 1, p, &n));
    ck_assert_int_eq(n, 3);
    OK(tt_fill_(p[1], -1));
    double v = 0;
    OK(tt_get_at(x, 2, (const int64_t[]){1, 3}, &v, TT_HERE));
    ck_assert(v == -1);
    OK(tt_get_at(x, 2, (const int64_t[]){1, 4}, &v, TT_HERE));
    ck_assert(v == 4.5);
    release_all(p, 3);
    tt_clear_error();
    ck_assert_int_eq(tt_split(x, 2, 1, 2, p, &n), TT_EINVAL);
    ck_assert_int_eq(n, 3);
    ck_assert(p[0] == NULL && p[1] == NULL);
    ck_assert_msg(strstr(tt_errmsg(), "tt::split: argument 'pieces' has room for 2 tensors, "
                                      "but the split makes 3"),
                  "%s", tt_errmsg());
    tt_clear_error();
    tt_release(x);
}
END_TEST

/* ------------------------------------------------------------ gradients */

typedef tt_test_model model_fn;

/* The pieces used unevenly (one not at all: its gradient is zeros), put
 * back together so the model has one output. */
static tt_tensor *combine(tt_tensor **p, int n)
{
    tt_tensor *a = n > 2 ? tt_mul(p[2], p[2]) : tt_mul_scalar(p[0], -1.5);
    tt_tensor *b = tt_mul_scalar(p[0], 3);
    tt_tensor *ab[2] = {a, b};
    tt_tensor *r = a && b ? tt_cat(2, ab, 1) : NULL;
    tt_release(a), tt_release(b);
    release_all(p, n);
    return r;
}

static tt_tensor *m_split_sizes(tt_tensor *x)
{
    tt_tensor *p[3];
    if (tt_split_with_sizes(x, 3, (const tt_size[]){1, 2, 3}, 1, p))
        return NULL;
    return combine(p, 3);
}

static tt_tensor *m_split(tt_tensor *x)
{
    tt_tensor *p[4];
    int n = 0;
    if (tt_split(x, 2, -1, 4, p, &n))
        return NULL;
    return combine(p, n);
}

static tt_tensor *m_chunk(tt_tensor *x)
{
    tt_tensor *p[4];
    int n = 0;
    if (tt_chunk(x, 4, 1, p, &n)) /* 6 by 4: three pieces of 2 */
        return NULL;
    return combine(p, n);
}

/* A zero-size piece between two others. */
static tt_tensor *m_split_empty(tt_tensor *x)
{
    tt_tensor *p[3];
    if (tt_split_with_sizes(x, 3, (const tt_size[]){4, 0, 2}, 1, p))
        return NULL;
    return combine(p, 3);
}

static const struct {
    const char *name;
    model_fn fn;
} models[] = {
    {"split_with_sizes", m_split_sizes},
    {"split", m_split},
    {"chunk", m_chunk},
    {"split_with_sizes empty piece", m_split_empty},
};

START_TEST(test_gradcheck)
{
    model_fn m = models[_i].fn;
    for (int t = 0; t < 2; t++) {
        tt_tensor *b = counting(2, t ? (int64_t[]){6, 3} : (int64_t[]){3, 6}, TT_F64);
        tt_tensor *x = t ? NN(tt_transpose(b, 0, 1)) : tt_retain(b);
        OK(tt_set_requires_grad(x, true));
        tt_status st = tt_gradcheck(tt_test_value, 1, &x, 1, NULL, &m);
        ck_assert_msg(st == TT_OK, "%s (%d): %s", models[_i].name, t, tt_errmsg());
        tt_release(x), tt_release(b);
    }
}
END_TEST

/* Traced (fake, then symbolic) and compiled once: forward and backward
 * through the pieces equal eager, for inputs of several shapes (split and
 * chunk of a longer dim make another number of pieces: a guard fails and
 * the function is traced again). */
START_TEST(test_compiled_equals_eager)
{
    model_fn m = models[_i].fn;
    bool any_width = _i == 1 || _i == 2; /* split(2), chunk(4) */
    for (int k = 0; k < 2; k++) {
        tt_trace_mode mode = k ? TT_TRACE_SYMBOLIC : TT_TRACE_FAKE;
        tt_compiled *c = NN(tt_compile(tt_test_value_and_grad, 1, 2,
                                       &(tt_trace_opts){.mode = mode, .ud = &m,
                                                        .ud_constant = true,
                                                        .fullgraph = true}));
        const int64_t shapes[3][2] = {{3, 6}, {5, 6}, {4, 8}};
        for (int sh = 0; sh < (any_width ? 3 : 2); sh++) {
            tt_tensor *x = counting(2, shapes[sh], TT_F64);
            OK(tt_set_requires_grad(x, true));
            tt_tensor *ce[2], *ee[2];
            tt_status st = tt_compiled_call(c, &x, ce);
            ck_assert_msg(st == TT_OK, "%s: mode %d, shape %d: %s", models[_i].name, mode, sh,
                          tt_errmsg());
            OK(tt_test_value_and_grad(&x, 1, ee, 2, &m));
            for (int i = 0; i < 2; i++) {
                char what[96];
                snprintf(what, sizeof what, "%s: mode %d, output %d, shape %d",
                         models[_i].name, mode, i, sh);
                tt_test_assert_close(ce[i], ee[i], 0, what);
                tt_release(ce[i]), tt_release(ee[i]);
            }
            tt_release(x);
        }
        tt_clear_error();
        tt_compiled_free(c);
        ck_assert_msg(tt_errcode() == TT_OK, "freeing the plan: %s", tt_errmsg());
    }
}
END_TEST

/* Split sizes computed from a symbolic size ([2, n - 2]) stay symbols in
 * the graph: one plan serves every width, forward and backward. */
static tt_status f_sym_sizes(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_size n = tt_sizes(in[0])[1];
    tt_tensor *p[2] = {NULL, NULL};
    tt_status st = tt_split_with_sizes(in[0], 2, (const tt_size[]){2, tt_sym_sub(n, 2)}, 1, p);
    tt_scope_begin();
    tt_tensor *s = st ? NULL : tt_sum(p[1], 1, (const int64_t[]){1}, true);
    tt_tensor *y = s ? tt_mul(p[0], s) : NULL;
    tt_tensor *l = y ? tt_sum_all(y) : NULL;
    tt_tensor *g = NULL;
    if (!st)
        st = l ? tt_grad(1, &l, NULL, 1, &in[0], &g) : tt_errcode();
    out[0] = st ? NULL : tt_keep(y);
    out[1] = st ? NULL : tt_keep(g);
    tt_scope_end();
    release_all(p, 2);
    return st;
}

START_TEST(test_compiled_symbolic_sizes)
{
    tt_compiled *c = NN(tt_compile(f_sym_sizes, 1, 2,
                                   &(tt_trace_opts){.mode = TT_TRACE_SYMBOLIC,
                                                    .fullgraph = true}));
    for (int w = 3; w <= 9; w += 3) {
        tt_tensor *x = counting(2, (int64_t[]){2, w}, TT_F64);
        OK(tt_set_requires_grad(x, true));
        tt_tensor *ce[2], *ee[2];
        tt_status st = tt_compiled_call(c, &x, ce);
        ck_assert_msg(st == TT_OK, "width %d: %s", w, tt_errmsg());
        OK(f_sym_sizes(&x, 1, ee, 2, NULL));
        for (int i = 0; i < 2; i++) {
            char what[48];
            snprintf(what, sizeof what, "width %d, output %d", w, i);
            tt_test_assert_close(ce[i], ee[i], 0, what);
            tt_release(ce[i]), tt_release(ee[i]);
        }
        tt_release(x);
    }
    tt_compile_stats cs;
    tt_compiled_stats(c, &cs);
    ck_assert_msg(cs.plans == 1 && cs.misses == 1, "%d plans, %lld misses (last: %s)",
                  cs.plans, (long long)cs.misses, cs.last_miss);
    tt_compiled_free(c);
}
END_TEST

/* A write into a piece of the input is a write into the input: the
 * compiled function leaves the input as eager does, and later reads of
 * the input and of the other pieces see the write. */
static tt_status f_write_piece(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_tensor *p[3] = {NULL, NULL, NULL};
    int n = 0;
    tt_status st = tt_chunk(in[0], 3, 1, p, &n);
    if (!st)
        st = tt_mul_scalar_(p[1], -2);
    out[0] = st ? NULL : tt_add_scalar(p[2], 1);
    out[1] = st || !out[0] ? NULL : tt_mul(in[0], in[0]);
    if (!st && (!out[0] || !out[1]))
        st = tt_errcode();
    release_all(p, n);
    return st;
}

START_TEST(test_compiled_write_into_piece)
{
    for (int k = 0; k < 2; k++) {
        tt_trace_mode mode = k ? TT_TRACE_SYMBOLIC : TT_TRACE_FAKE;
        tt_compiled *c = NN(tt_compile(f_write_piece, 1, 2,
                                       &(tt_trace_opts){.mode = mode, .fullgraph = true}));
        const int64_t shapes[2][2] = {{2, 6}, {3, 6}};
        for (int sh = 0; sh < 2; sh++) {
            tt_tensor *xe = counting(2, shapes[sh], TT_F64), *xc = NN(tt_clone(xe));
            tt_tensor *ce[2], *ee[2];
            OK(f_write_piece(&xe, 1, ee, 2, NULL));
            tt_status st = tt_compiled_call(c, &xc, ce);
            ck_assert_msg(st == TT_OK, "mode %d, shape %d: %s", mode, sh, tt_errmsg());
            char what[64];
            snprintf(what, sizeof what, "mode %d, shape %d: the input", mode, sh);
            tt_test_assert_close(xc, xe, 0, what);
            for (int i = 0; i < 2; i++) {
                snprintf(what, sizeof what, "mode %d, shape %d: output %d", mode, sh, i);
                tt_test_assert_close(ce[i], ee[i], 0, what);
                tt_release(ce[i]), tt_release(ee[i]);
            }
            tt_release(xe), tt_release(xc);
        }
        tt_compiled_free(c);
    }
}
END_TEST

/* --------------------------------------------------------- symbolic sizes */

START_TEST(test_symbolic_sizes)
{
    tt_sym_reset();
    tt_size s = tt_sym_new("s", 7);
    tt_tensor *x = NN(tt_fake_empty(2, (tt_size[]){3, s}, TT_F32));
    tt_tensor *p[3];
    /* sizes that are symbols: [2, s - 2] */
    tt_size rest = tt_sym_sub(s, 2);
    OK(tt_split_with_sizes(x, 2, (const tt_size[]){2, rest}, 1, p));
    ck_assert(tt_is_fake(p[0]) && tt_sizes(p[0])[1] == 2 && tt_sizes(p[1])[1] == rest);
    ck_assert(tt_sizes(p[1])[0] == 3);
    release_all(p, 2);
    /* a symbolic split size along the other dim */
    OK(tt_split_with_sizes(x, 1, (const tt_size[]){s}, 1, p));
    ck_assert(tt_sizes(p[0])[1] == s);
    release_all(p, 1);
    /* chunk: the count is specialized (7 by 3: three pieces), the last
     * piece's length stays an expression of s */
    int n = 0;
    OK(tt_chunk(x, 3, 1, p, &n));
    ck_assert_int_eq(n, 3);
    ck_assert(tt_sym_hint(tt_sizes(p[2])[1]) == 1);
    release_all(p, n);
    tt_release(x);
    tt_sym_reset();
}
END_TEST

/* ------------------------------------------- the tracer and Tensor[] results */

/* mylib::pair_list(Tensor x) -> Tensor[]: [x + 1, x * 2], new tensors. The
 * regression for the tracer: the elements of a Tensor[] result were not
 * graph values, so code using one under a fake trace read a fake tensor
 * (TT_EFAKE). */
static tt_status pair_list_kernel(tt_frame *f)
{
    tt_tensor *x;
    tt_status st = tt_arg_tensor(f, 0, &x);
    if (st)
        return st;
    tt_tensor *r[2] = {tt_add_scalar(x, 1), tt_mul_scalar(x, 2)};
    if (!r[0] || !r[1]) {
        tt_release(r[0]), tt_release(r[1]);
        return tt_errcode();
    }
    return tt_return_tensors(f, 0, 2, r);
}

static tt_status pair_list_fake(tt_frame *f)
{
    tt_tensor *x;
    tt_status st = tt_arg_tensor(f, 0, &x);
    if (st)
        return st;
    tt_tensor *r[2] = {tt_empty_like(x), tt_empty_like(x)};
    return tt_return_tensors(f, 0, 2, r);
}

static tt_library *lib;
static const tt_op *pair_list_op;

static void lib_setup(void)
{
    tt_test_setup();
    tt_sym_reset();
    lib = NN(tt_library_new(TT_LIB_DEF, "mylib"));
    pair_list_op = NN(tt_custom_op_define(lib, &(tt_custom_op_spec){
        .schema = "mylib::pair_list(Tensor x) -> Tensor[]",
        .mutates_args = "",
        .kernel = pair_list_kernel,
        .fake = pair_list_fake,
    }));
}

static void lib_teardown(void)
{
    lib = tt_library_free(lib);
    tt_sym_reset();
    tt_test_teardown();
}

/* out = l[0] * l[1] + l[1] with l = pair_list(x) */
static tt_status f_pair_list(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_value l = tt_v_none();
    tt_status st = tt_op_call(pair_list_op, (tt_value[]){tt_v_tensor(in[0])}, 1, &l, 1);
    if (st)
        return st;
    tt_tensor *m = tt_mul(l.u.tensors[0], l.u.tensors[1]);
    out[0] = m ? tt_add(m, l.u.tensors[1]) : NULL;
    tt_release(m);
    tt_value_clear(&l);
    return out[0] ? TT_OK : tt_errcode();
}

START_TEST(test_trace_list_result)
{
    tt_tensor *x = counting(2, (int64_t[]){2, 3}, TT_F32), *want = NULL;
    OK(f_pair_list(&x, 1, &want, 1, NULL));
    for (int mode = TT_TRACE_FAKE; mode <= TT_TRACE_REAL; mode++) {
        tt_graph *g = tt_trace(f_pair_list, 1, &x, &(tt_trace_opts){.mode = mode});
        ck_assert_msg(g != NULL, "mode %d: %s", mode, tt_errmsg());
        /* one node for the op, one value per element */
        int node = -1;
        for (int i = 0; i < tt_graph_num_nodes(g); i++)
            if (tt_graph_node_op(g, i) == pair_list_op)
                node = i;
        ck_assert_int_ge(node, 0);
        ck_assert_int_eq(tt_graph_node_num_outputs(g, node), 2);
        char *text = NN(tt_graph_to_text(g));
        ck_assert_msg(strstr(text, "pair_list[0]") && strstr(text, "pair_list[1]"), "%s",
                      text);
        free(text);
        char *dot = NN(tt_graph_to_dot(g));
        ck_assert_msg(strstr(dot, "[1] ") && strstr(dot, "(out 1)"), "%s", dot);
        free(dot);
        tt_tensor *got = NULL;
        OK(tt_graph_run(g, 1, &x, 1, &got));
        tt_test_assert_close(got, want, 0, "graph run");
        tt_release(got);
        tt_graph_free(g);
    }
    for (int k = 0; k < 2; k++) {
        tt_trace_mode mode = k ? TT_TRACE_SYMBOLIC : TT_TRACE_FAKE;
        tt_compiled *c = NN(tt_compile(f_pair_list, 1, 1,
                                       &(tt_trace_opts){.mode = mode, .fullgraph = true}));
        tt_tensor *got = NULL;
        OK(tt_compiled_call(c, &x, &got));
        tt_test_assert_close(got, want, 0, "compiled");
        tt_release(got);
        tt_compiled_free(c);
    }
    tt_release(want), tt_release(x);
}
END_TEST

/* The same op with no fake kernel: a graph break. Without fullgraph the
 * op runs eagerly between two graphs, and each element of its list is an
 * input of the second. */
static const tt_op *pair_list_nofake_op;

static tt_status f_pair_list_break(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_tensor *a = tt_mul_scalar(in[0], 3);
    tt_value l = tt_v_none();
    tt_status st = a ? tt_op_call(pair_list_nofake_op, (tt_value[]){tt_v_tensor(a)}, 1, &l, 1)
                     : tt_errcode();
    tt_release(a);
    if (st)
        return st;
    tt_tensor *m = tt_mul(l.u.tensors[0], l.u.tensors[1]);
    out[0] = m ? tt_sub(m, l.u.tensors[0]) : NULL;
    tt_release(m);
    tt_value_clear(&l);
    return out[0] ? TT_OK : tt_errcode();
}

START_TEST(test_break_at_list_result)
{
    pair_list_nofake_op = NN(tt_custom_op_define(lib, &(tt_custom_op_spec){
        .schema = "mylib::pair_list_nofake(Tensor x) -> Tensor[]",
        .mutates_args = "",
        .kernel = pair_list_kernel,
    }));
    tt_compiled *c = NN(tt_compile(f_pair_list_break, 1, 1,
                                   &(tt_trace_opts){.mode = TT_TRACE_SYMBOLIC}));
    for (int k = 0; k < 2; k++) {
        tt_tensor *x = counting(2, (int64_t[]){2 + k, 3}, TT_F32), *got = NULL, *want = NULL;
        OK(tt_compiled_call(c, &x, &got));
        OK(f_pair_list_break(&x, 1, &want, 1, NULL));
        tt_test_assert_close(got, want, 0, "compiled with a break");
        tt_release(got), tt_release(want), tt_release(x);
    }
    tt_compile_stats cs;
    tt_compiled_stats(c, &cs);
    ck_assert_int_ge(cs.graph_breaks, 1);
    tt_compiled_free(c);
    /* explain splits the trace there: the list's two elements are inputs
     * of the second graph (in2, in3; its first input is the op's argument,
     * which the break pins), not constants */
    tt_tensor *x = counting(2, (int64_t[]){2, 3}, TT_F32);
    tt_explain *e = NN(tt_explain_run(f_pair_list_break, 1, &x, NULL));
    ck_assert_int_eq(tt_explain_graph_count(e), 2);
    const tt_graph *g2 = tt_explain_graph(e, 1);
    char *text = NN(tt_graph_to_text(g2));
    ck_assert_msg(strstr(text, "tt::mul.Tensor(in2, in3)") &&
                      strstr(text, "tt::sub.Tensor(mul_1, in2)") && !strstr(text, "constant"),
                  "%s", text);
    free(text);
    tt_explain_free(e);
    tt_release(x);
}
END_TEST

/* ----------------------------- F24: scatter_reduce's gradient, small index */

/* tests/difftest/FINDINGS.md F24: the gradient of tt_scatter_reduce with
 * an index smaller than src failed for "prod" (naming tt::where) and for
 * "amax"/"amin" (naming tt::eq), as PyTorch 1.13's formulas do. Now the
 * formulas read the part of src the scatter reads. The expected gradients
 * are PyTorch 1.13's for the same function written with src narrowed to
 * the index's shape: x.scatter_reduce(1, ix, x[:2, :2], red, include_self)
 * (self and src both x), summed. */
START_TEST(test_scatter_reduce_small_index_grad)
{
    static const char *const reds[5] = {"sum", "prod", "mean", "amax", "amin"};
    static const double want[5][2][6] = {
        {{2, 1, 1, 1, 1, 1}, {2, 2, 2, 2, 1, 1}},
        {{3, 1, 1, 1, 1, 1}, {5, 4, 8, 6, 1, 1}},
        {{1.5, 0.5, 1, 1, 1, 1}, {4.0 / 3, 2.0 / 3, 1, 1, 1, 1}},
        {{1, 0.5, 1, 1, 1, 1}, {1, 1, 0, 2, 1, 1}},
        {{2, 0, 1, 1, 1, 1}, {2, 0, 2, 0, 1, 1}},
    };
    static const double xv[6] = {1, 2, 3, 4, 5, 6};
    static const int64_t iv[4] = {1, 1, 1, 0};
    for (int r = 0; r < 5; r++)
        for (int incl = 0; incl < 2; incl++) {
            tt_tensor *x = NN(tt_from_data(2, (const int64_t[]){3, 2}, TT_F64, xv));
            tt_tensor *ix = NN(tt_from_data(2, (const int64_t[]){2, 2}, TT_I64, iv));
            OK(tt_set_requires_grad(x, true));
            tt_tensor *y = NN(tt_scatter_reduce(x, 1, ix, x, reds[r], incl));
            tt_tensor *loss = NN(tt_sum_all(y));
            tt_status st = tt_backward(loss, NULL);
            ck_assert_msg(st == TT_OK, "%s, include_self %d: %s", reds[r], incl, tt_errmsg());
            tt_tensor *w = NN(tt_from_data(2, (const int64_t[]){3, 2}, TT_F64, want[r][incl]));
            char what[64];
            snprintf(what, sizeof what, "%s, include_self %d", reds[r], incl);
            tt_tensor *gx = NN(tt_get_grad(x));
            tt_test_assert_close(gx, w, 1e-12, what);
            tt_release(gx), tt_release(w), tt_release(loss), tt_release(y), tt_release(ix), tt_release(x);
        }
}
END_TEST

static tt_tensor *F24_INDEX;
static const char *F24_REDUCE;
static bool F24_INCL;

/* scatter_reduce(self, 1, index [2, 3], src, reduce) with src [3, 4]:
 * index smaller than src in both dims. */
static tt_status f_scatter_small(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    out[0] = tt_scatter_reduce(in[0], 1, F24_INDEX, in[1], F24_REDUCE, F24_INCL);
    return out[0] ? TT_OK : tt_errcode();
}

START_TEST(test_scatter_reduce_small_index_gradcheck)
{
    static const char *const reds[3] = {"prod", "amax", "amin"};
    static const int64_t iv[6] = {0, 4, 0, 2, 2, 1};
    /* distinct values (no ties for amax/amin), one zero in src for prod's
     * single-zero path */
    static const double sv[12] = {0.5, -1.25, 2, 0.75, 1.5, 0, -0.5, 1.75, 3, -2, 2.5, 1.1};
    static const double xv[10] = {1.2, -0.7, 0.9, 1.4, -1.1, 0.6, 1.3, -0.8, 2.2, 0.4};
    F24_INDEX = NN(tt_from_data(2, (const int64_t[]){2, 3}, TT_I64, iv));
    for (int r = 0; r < 3; r++)
        for (int incl = 0; incl < 2; incl++) {
            F24_REDUCE = reds[r], F24_INCL = incl;
            tt_tensor *in[2] = {NN(tt_from_data(2, (const int64_t[]){2, 5}, TT_F64, xv)),
                                NN(tt_from_data(2, (const int64_t[]){3, 4}, TT_F64, sv))};
            OK(tt_set_requires_grad(in[0], true));
            OK(tt_set_requires_grad(in[1], true));
            tt_status st = tt_gradcheck(f_scatter_small, 2, in, 1, NULL, NULL);
            ck_assert_msg(st == TT_OK, "%s, include_self %d: %s", reds[r], incl, tt_errmsg());
            tt_release(in[0]), tt_release(in[1]);
        }
    F24_INDEX = tt_release(F24_INDEX);
}
END_TEST

/* --------------------------------------------------------------- errors */

static tt_tensor *E, *E0; /* f32 [2, 5]; a 0-dim f32 */
static tt_tensor *PC[8];

static void errors_setup(void)
{
    tt_test_setup();
    E = counting(2, (int64_t[]){2, 5}, TT_F32);
    E0 = NN(tt_scalar(1, TT_F32));
}

static void errors_teardown(void)
{
    tt_release(E), tt_release(E0);
    E = E0 = NULL;
    tt_test_teardown();
}

static int NP;

/* The op called by name through the dispatcher (its Tensor[] result
 * released), sizes [k]. */
static tt_status op_split_sizes(int64_t k)
{
    tt_value out = tt_v_none();
    tt_value args[3] = {tt_v_tensor(E), tt_v_ints(1, &k), tt_v_int(1)};
    tt_status st = tt_op_call(tt_op_find("tt::split_with_sizes"), args, 3, &out, 1);
    tt_value_clear(&out);
    return st ? st : TT_TEST_SUCCEEDED;
}

/* tt::split.Tensor through the dispatcher: the kernel names the op as the
 * wrapper's fast path does. */
static tt_status op_split(int64_t size)
{
    tt_value out = tt_v_none();
    tt_value args[3] = {tt_v_tensor(E), tt_v_int(size), tt_v_int(1)};
    tt_status st = tt_op_call(tt_op_find("tt::split.Tensor"), args, 3, &out, 1);
    tt_value_clear(&out);
    return st ? st : TT_TEST_SUCCEEDED;
}

#define SPLIT_ERRORS(X)                                                                         \
    X(sizes_sum, tt_split_with_sizes(E, 2, (const tt_size[]){2, 2}, 1, PC), TT_EINVAL,          \
      "tt::split_with_sizes: split_with_sizes expects split_sizes to sum exactly to 5 "         \
      "(input tensor's size at dimension 1), but got split_sizes=[2, 2]")                       \
    X(sizes_over, tt_split_with_sizes(E, 2, (const tt_size[]){2, 4}, 1, PC), TT_EINVAL,         \
      "sum exactly to 5", "split_sizes=[2, 4]")                                                 \
    X(sizes_negative, tt_split_with_sizes(E, 2, (const tt_size[]){6, -1}, 1, PC), TT_EINVAL,    \
      "tt::split_with_sizes: split_with_sizes expects split_sizes have only non-negative "      \
      "entries, but got split_sizes=[6, -1]")                                                   \
    X(sizes_empty, tt_split_with_sizes(E, 0, NULL, 1, PC), TT_EINVAL,                           \
      "split_sizes=[]")                                                                         \
    X(sizes_dim, tt_split_with_sizes(E, 2, (const tt_size[]){2, 3}, 2, PC), TT_EINVAL,          \
      "tt::split_with_sizes: argument 'dim' (#3): dimension out of range (expected to be in "   \
      "range of [-2, 1], but got 2)")                                                           \
    X(sizes_0dim, tt_split_with_sizes(E0, 1, (const tt_size[]){1}, 0, PC), TT_EINVAL,           \
      "tt::split_with_sizes: split_with_sizes expects at least a 1-dimensional tensor")         \
    X(sizes_null, tt_split_with_sizes(E, 2, NULL, 1, PC), TT_EINVAL,                            \
      "tt::split_with_sizes: argument 'split_sizes'")                                           \
    X(split_zero, tt_split(E, 0, 1, 8, PC, &NP), TT_EINVAL,                                     \
      "tt::split: split_size can only be 0 if dimension size is 0, but got dimension size "     \
      "of 5")                                                                                   \
    X(split_negative, tt_split(E, -1, 1, 8, PC, &NP), TT_EINVAL,                                \
      "tt::split: split expects split_size be non-negative, but got split_size=-1")             \
    X(split_0dim, tt_split(E0, 1, 0, 8, PC, &NP), TT_EINVAL,                                    \
      "tt::split: split expects at least a 1-dimensional tensor")                               \
    X(split_dim, tt_split(E, 1, -3, 8, PC, &NP), TT_EINVAL,                                     \
      "tt::split: argument 'dim' (#3): dimension out of range")                                 \
    X(split_room, tt_split(E, 1, 1, 4, PC, &NP), TT_EINVAL,                                     \
      "tt::split: argument 'pieces' has room for 4 tensors, but the split makes 5")             \
    X(split_null, tt_split(E, 1, 1, 4, PC, NULL), TT_EINVAL,                                    \
      "tt::split: argument 'pieces' or 'npieces' is NULL")                                      \
    X(chunk_zero, tt_chunk(E, 0, 1, PC, &NP), TT_EINVAL,                                        \
      "tt::chunk: chunk expects `chunks` to be greater than 0, got: 0")                         \
    X(chunk_negative, tt_chunk(E, -1, 1, PC, &NP), TT_EINVAL,                                   \
      "tt::chunk: chunk expects `chunks` to be greater than 0, got: -1")                        \
    X(chunk_0dim, tt_chunk(E0, 3, 0, PC, &NP), TT_EINVAL,                                       \
      "tt::chunk: chunk expects at least a 1-dimensional tensor")                               \
    X(chunk_dim, tt_chunk(E, 3, 5, PC, &NP), TT_EINVAL,                                         \
      "tt::chunk: argument 'dim' (#3): dimension out of range (expected to be in range of "     \
      "[-2, 1], but got 5)")                                                                    \
    X(op_sizes_sum, op_split_sizes(4), TT_EINVAL,                                               \
      "tt::split_with_sizes: split_with_sizes expects split_sizes to sum exactly")             \
    X(op_split_zero, op_split(0), TT_EINVAL,                                                    \
      "tt::split: split_size can only be 0 if dimension size is 0")

TT_ERROR_TABLE(SPLIT_ERRORS, split_errors);

START_TEST(test_errors) { tt_test_run_error_case(&split_errors[_i], _i); }
END_TEST

static Suite *split_suite(void)
{
    Suite *s = suite_create("ops_split");
    TCase *tc = tt_tcase("values");
    tcase_add_test(tc, test_split_with_sizes_values);
    tcase_add_test(tc, test_split_chunk_counts);
    tcase_add_test(tc, test_write_through_piece);
    tcase_add_test(tc, test_symbolic_sizes);
    suite_add_tcase(s, tc);
    tc = tt_tcase("derivatives");
    tcase_add_loop_test(tc, test_gradcheck, 0, TT_TABLE_LEN(models));
    tcase_add_loop_test(tc, test_compiled_equals_eager, 0, TT_TABLE_LEN(models));
    tcase_add_test(tc, test_compiled_write_into_piece);
    tcase_add_test(tc, test_compiled_symbolic_sizes);
    suite_add_tcase(s, tc);
    tc = tt_tcase("F24: scatter_reduce's gradient with a small index");
    tcase_add_test(tc, test_scatter_reduce_small_index_grad);
    tcase_add_test(tc, test_scatter_reduce_small_index_gradcheck);
    suite_add_tcase(s, tc);
    tc = tt_tcase_with("tracing", lib_setup, lib_teardown);
    tcase_add_test(tc, test_trace_list_result);
    tcase_add_test(tc, test_break_at_list_result);
    suite_add_tcase(s, tc);
    tc = tt_tcase_with("errors", errors_setup, errors_teardown);
    tcase_add_loop_test(tc, test_errors, 0, TT_TABLE_LEN(split_errors));
    suite_add_tcase(s, tc);
    return s;
}

TT_TEST_MAIN(split_suite)
