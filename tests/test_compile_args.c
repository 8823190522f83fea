/* What a compiled function reads besides its tensors, and mutations as
 * data edges.
 *
 * - ud: the bytes opts.ud_size declares are guarded (a change traces
 *   again); a compile with an undeclared ud warns once that it is frozen;
 *   a function that writes *ud while tracing runs eagerly.
 * - scalar arguments (tt_compiled_call_args): ints and floats are guarded
 *   constants; dynamic ints are symbols in symbolic mode, dynamic floats
 *   graph inputs (tt_fn_arg_tensor).
 * - a mutable custom op's write is a data edge: the read after
 *   kv_write(cache, k, pos) takes kv_write's after-write value. */
#include "tt_test.h"

#include <math.h>

/* ------------------------------------------------------------- helpers */

static void assert_close(const tt_tensor *a, const tt_tensor *b, const char *what)
{
    ck_assert_int_eq(tt_numel(a), tt_numel(b));
    double *x = tt_test_values(a), *y = tt_test_values(b);
    for (int64_t i = 0; i < tt_numel(a); i++)
        ck_assert_msg(fabs(x[i] - y[i]) <= 1e-5 * (1 + fabs(y[i])), "%s: element %lld: %g vs %g",
                      what, (long long)i, x[i], y[i]);
    free(x);
    free(y);
}

static tt_compile_stats stats_of(const tt_compiled *c)
{
    tt_compile_stats s;
    tt_compiled_stats(c, &s);
    return s;
}

/* ------------------------------------------------ the decoder-like step */

/* A decoder step at position pos: the embedding row of pos times the
 * weight, plus pos (so a frozen position shows in every logit). */
static tt_status step_at(tt_tensor **in, tt_tensor **out, int64_t pos)
{
    tt_tensor *row = tt_narrow(in[0], 0, pos, 1);
    tt_tensor *h = row ? tt_matmul(row, in[1]) : NULL;
    out[0] = h ? tt_add_scalar(h, (double)pos) : NULL;
    tt_release(row);
    tt_release(h);
    return out[0] ? TT_OK : tt_errcode();
}

/* The program: the position travels through ud. */
static tt_status step_ud(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    return step_at(in, out, *(const int *)ud);
}

/* The same with the position as scalar argument 0. */
static tt_status step_arg(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    return step_at(in, out, tt_fn_arg_int(0));
}

static void decoder_inputs(tt_tensor **in)
{
    in[0] = NN(tt_randn(TT_SHAPE(8, 4), TT_F32));  /* embeddings */
    in[1] = NN(tt_randn(TT_SHAPE(4, 32), TT_F32)); /* weight */
}

static void check_step(tt_compiled *c, tt_tensor **in, int pos, const tt_value *args,
                       int nargs)
{
    tt_tensor *got = NULL, *want = NULL;
    OK(tt_compiled_call_args(c, in, &got, args, nargs));
    OK(step_at(in, &want, pos));
    char what[64];
    snprintf(what, sizeof what, "position %d", pos);
    assert_close(got, want, what);
    tt_release(got);
    tt_release(want);
}

/* The issue: positions 0..3 through ud, declared: each equals eager, each
 * new position traces again (TT_LOG=recompiles says why), a position
 * seen before replays its plan. */
START_TEST(test_ud_size_guards_and_retraces)
{
    tt_tensor *in[2];
    decoder_inputs(in);
    int pos = 0;
    tt_test_log_begin("recompiles,guards");
    tt_compiled *c = NN(tt_compile(step_ud, 2, 1, &(tt_trace_opts){
        .name = "decoder", .ud = &pos, .ud_size = sizeof pos}));
    for (pos = 0; pos < 4; pos++)
        check_step(c, in, pos, NULL, 0);
    tt_compile_stats s = stats_of(c);
    ck_assert_int_eq(s.plans, 4);
    ck_assert_int_eq(s.hits, 0);
    pos = 1;
    check_step(c, in, pos, NULL, 0);
    ck_assert_int_eq(stats_of(c).hits, 1);
    char *text = tt_test_log_end();
    ck_assert_msg(strstr(text, "recompile decoder: guard failed: ud[0] == 0x00 (got 0x01; "
                               "opts.ud_size declares the 4 bytes of *ud the function reads)\n"),
                  "%s", text);
    ck_assert_msg(strstr(text, "guards decoder plan 1: the 4 bytes of *ud as traced\n"), "%s",
                  text);
    ck_assert_int_eq(tt_test_count(text, "warning"), 0);
    free(text);
    tt_compiled_free(c);
    tt_release(in[0]);
    tt_release(in[1]);
}
END_TEST

/* Undeclared: one warning (however many calls) that ud is frozen; the
 * plan replays the position it traced, as the warning says. */
START_TEST(test_ud_undeclared_warns_once)
{
    tt_tensor *in[2];
    decoder_inputs(in);
    int pos = 0;
    tt_test_log_begin("");
    tt_compiled *c = NN(tt_compile(step_ud, 2, 1, &(tt_trace_opts){.name = "decoder",
                                                                   .ud = &pos}));
    for (pos = 0; pos < 3; pos++) {
        tt_tensor *got = NULL;
        OK(tt_compiled_call(c, in, &got));
        tt_release(got);
    }
    ck_assert_int_eq(stats_of(c).plans, 1);
    char *text = tt_test_log_end();
    ck_assert_int_eq(tt_test_count(text, "warning"), 1);
    ck_assert_msg(strstr(text, "warning decoder: opts.ud is set but opts.ud_size is 0: the "
                               "compiled plan freezes whatever the function read through ud "
                               "while tracing"),
                  "%s", text);
    ck_assert_msg(strstr(text, "tt_compiled_call_args") && strstr(text, "opts.ud_constant"),
                  "%s", text);
    free(text);
    tt_compiled_free(c);
    /* ud_constant: the caller's promise, no warning. */
    tt_test_log_begin("");
    c = NN(tt_compile(step_ud, 2, 1, &(tt_trace_opts){.ud = &pos, .ud_constant = true}));
    tt_tensor *got = NULL;
    OK(tt_compiled_call(c, in, &got));
    tt_release(got);
    text = tt_test_log_end();
    ck_assert_str_eq(text, "");
    free(text);
    tt_compiled_free(c);
    tt_release(in[0]);
    tt_release(in[1]);
}
END_TEST

/* A function that advances the position it reads from ud has a side
 * effect a replay would not repeat: it runs eagerly, with a warning. */
static tt_status step_and_advance(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    int *pos = ud;
    return step_at(in, out, (*pos)++);
}

START_TEST(test_ud_written_runs_eagerly)
{
    tt_tensor *in[2];
    decoder_inputs(in);
    int pos = 0;
    tt_test_log_begin("");
    tt_compiled *c = NN(tt_compile(step_and_advance, 2, 1, &(tt_trace_opts){
        .name = "decoder", .ud = &pos, .ud_size = sizeof pos}));
    for (int k = 0; k < 3; k++) {
        tt_tensor *got = NULL, *want = NULL;
        OK(tt_compiled_call(c, in, &got));
        ck_assert_int_eq(pos, k + 1); /* each call advanced it once */
        OK(step_at(in, &want, k));
        assert_close(got, want, "eager fallback");
        tt_release(got);
        tt_release(want);
    }
    tt_compile_stats s = stats_of(c);
    ck_assert_int_eq(s.plans, 0);
    ck_assert_int_eq(s.eager_calls, 3);
    char *text = tt_test_log_end();
    ck_assert_msg(strstr(text, "warning decoder: the function wrote ud[0] while tracing, a side "
                               "effect a compiled replay would not repeat: the function runs "
                               "eagerly from now on\n"),
                  "%s", text);
    free(text);
    tt_compiled_free(c);
    tt_release(in[0]);
    tt_release(in[1]);
}
END_TEST

/* ------------------------------------------------------ scalar arguments */

/* An int argument is a guarded constant: one plan per position, each
 * equal to eager, and the miss names the argument. */
START_TEST(test_int_arg_guarded)
{
    tt_tensor *in[2];
    decoder_inputs(in);
    tt_test_log_begin("");
    tt_compiled *c = NN(tt_compile(step_arg, 2, 1, &(tt_trace_opts){.name = "decoder"}));
    for (int pos = 0; pos < 4; pos++)
        check_step(c, in, pos, (tt_value[]){tt_v_int(pos)}, 1);
    tt_compile_stats s = stats_of(c);
    ck_assert_int_eq(s.plans, 4);
    ck_assert_str_eq(s.last_miss, "arg0 == 2 (got 3)");
    check_step(c, in, 2, (tt_value[]){tt_v_int(2)}, 1);
    ck_assert_int_eq(stats_of(c).hits, 1);
    /* Unread arguments are not guarded: a new value of arg 1 replays. */
    check_step(c, in, 2, (tt_value[]){tt_v_int(2), tt_v_float(0.5)}, 2);
    check_step(c, in, 2, (tt_value[]){tt_v_int(2), tt_v_float(1.5)}, 2);
    ck_assert_int_eq(stats_of(c).hits, 3);
    char *text = tt_test_log_end();
    ck_assert_str_eq(text, ""); /* no ud: no warning */
    free(text);
    tt_compiled_free(c);
    tt_release(in[0]);
    tt_release(in[1]);
}
END_TEST

/* A dynamic int in a symbolic trace is a size symbol: one plan serves
 * every value of 2 and more (0 and 1 are specialized). The step sums the
 * rows of x pos times, as ones(pos, rows) @ x does: pos * x's
 * column sums, computed through a size made from the symbol. */
static tt_status prefix_weight(tt_tensor **in, tt_tensor **out, int64_t n)
{
    tt_tensor *w = tt_ones(TT_SHAPE(n, tt_sizes(in[0])[0]), TT_F32);
    tt_tensor *h = w ? tt_matmul(w, in[0]) : NULL;
    out[0] = h ? tt_sum(h, 1, (int64_t[]){0}, false) : NULL;
    tt_release(w);
    tt_release(h);
    return out[0] ? TT_OK : tt_errcode();
}

static tt_status step_sym(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    return prefix_weight(in, out, tt_fn_arg_int(0));
}

START_TEST(test_int_arg_dynamic_symbolic)
{
    tt_tensor *x = NN(tt_randn(TT_SHAPE(8, 4), TT_F32));
    tt_test_log_begin("guards");
    tt_compiled *c = NN(tt_compile(step_sym, 1, 1, &(tt_trace_opts){
        .name = "prefix", .mode = TT_TRACE_SYMBOLIC, .dynamic_args = 1}));
    for (int n = 0; n < 7; n++) {
        tt_tensor *got = NULL, *want = NULL;
        OK(tt_compiled_call_args(c, &x, &got, (tt_value[]){tt_v_int(n)}, 1));
        OK(prefix_weight(&x, &want, n));
        assert_close(got, want, "dynamic int");
        tt_release(got);
        tt_release(want);
    }
    /* 0, 1, then one symbolic plan for 2..6. */
    ck_assert_int_eq(stats_of(c).plans, 3);
    ck_assert_int_eq(stats_of(c).hits, 4);
    char *text = tt_test_log_end();
    ck_assert_msg(strstr(text, "guards prefix plan 3: arg0 an int >= 2, bound to s"), "%s",
                  text);
    free(text);
    tt_compiled_free(c);
    tt_release(x);
}
END_TEST

/* A decode step called past its cache: the position is a symbol, the
 * call retraces with the new value and fails in narrow, and the message
 * gives the values beside the symbols. */
static tt_status row_at(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_tensor *row = tt_narrow(in[0], 0, tt_fn_arg_int(0), 1);
    out[0] = row ? tt_mul_scalar(row, 2) : NULL;
    tt_release(row);
    return out[0] ? TT_OK : tt_errcode();
}

START_TEST(test_int_arg_past_the_cache_names_values)
{
    tt_tensor *cache = NN(tt_randn(TT_SHAPE(8, 4), TT_F32)), *got = NULL;
    tt_compiled *c = NN(tt_compile(row_at, 1, 1, &(tt_trace_opts){
        .mode = TT_TRACE_SYMBOLIC, .fullgraph = true, .dynamic_args = 1}));
    for (int pos = 3; pos < 8; pos++) {
        OK(tt_compiled_call_args(c, &cache, &got, (tt_value[]){tt_v_int(pos)}, 1));
        tt_release(got);
        got = NULL;
    }
    ck_assert_int_eq(tt_compiled_call_args(c, &cache, &got, (tt_value[]){tt_v_int(8)}, 1),
                     TT_EINVAL);
    ck_assert_ptr_null(got);
    ck_assert_msg(strstr(tt_errmsg(), "tt_narrow: start (s") &&
                      strstr(tt_errmsg(), " = 8) + length (1) exceeds dimension size ("),
                  "%s", tt_errmsg());
    tt_clear_error();
    tt_compiled_free(c);
    tt_release(cache);
}
END_TEST

/* The same int read as a symbol and as a float: the float is a constant
 * in the graph, so the plan is pinned to the value (never replayed with
 * the float it traced for another position). */
static tt_status step_sym_and_float(tt_tensor **in, int nin, tt_tensor **out, int nout,
                                    void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_tensor *h = NULL;
    tt_status st = prefix_weight(in, &h, tt_fn_arg_int(0));
    out[0] = st ? NULL : tt_mul_scalar(h, tt_fn_arg_float(0));
    tt_release(h);
    return st ? st : out[0] ? TT_OK : tt_errcode();
}

START_TEST(test_int_arg_symbol_read_as_float_too)
{
    tt_tensor *x = NN(tt_randn(TT_SHAPE(8, 4), TT_F32));
    tt_compiled *c = NN(tt_compile(step_sym_and_float, 1, 1, &(tt_trace_opts){
        .mode = TT_TRACE_SYMBOLIC, .dynamic_args = 1}));
    for (int n = 2; n < 5; n++) {
        tt_tensor *got = NULL, *h = NULL;
        OK(tt_compiled_call_args(c, &x, &got, (tt_value[]){tt_v_int(n)}, 1));
        OK(prefix_weight(&x, &h, n));
        tt_tensor *want = NN(tt_mul_scalar(h, n));
        assert_close(got, want, "symbol and float");
        tt_release(got);
        tt_release(h);
        tt_release(want);
    }
    ck_assert_int_eq(stats_of(c).plans, 3);
    ck_assert_str_eq(stats_of(c).last_miss, "arg0 == 3 (got 4; the function read it as a float "
                                            "too, a constant in the plan)");
    tt_compiled_free(c);
    tt_release(x);
}
END_TEST

/* A float read as a number is a guarded constant; a dynamic float read
 * as a tensor is a graph input: one plan for every value. */
static tt_status scale_num(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    out[0] = tt_mul_scalar(in[0], tt_fn_arg_float(0));
    return out[0] ? TT_OK : tt_errcode();
}

static tt_status scale_tensor(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_tensor *s = tt_fn_arg_tensor(0);
    out[0] = s ? tt_mul(in[0], s) : NULL;
    return out[0] ? TT_OK : tt_errcode();
}

START_TEST(test_float_args)
{
    tt_tensor *x = NN(tt_randn(TT_SHAPE(3, 5), TT_F32));
    const double scales[] = {0.5, -2.0, 3.25, 0.5};
    tt_compiled *num = NN(tt_compile(scale_num, 1, 1, NULL));
    tt_compiled *dyn = NN(tt_compile(scale_tensor, 1, 1, &(tt_trace_opts){.dynamic_args = 1}));
    for (int k = 0; k < 4; k++) {
        tt_value a = tt_v_float(scales[k]);
        tt_tensor *want = NN(tt_mul_scalar(x, scales[k])), *g1 = NULL, *g2 = NULL;
        OK(tt_compiled_call_args(num, &x, &g1, &a, 1));
        OK(tt_compiled_call_args(dyn, &x, &g2, &a, 1));
        assert_close(g1, want, "float guarded");
        assert_close(g2, want, "float input");
        ck_assert_int_eq(tt_dtype_of(g2), TT_F32); /* a 0-dim f64 does not promote */
        tt_release(want);
        tt_release(g1);
        tt_release(g2);
    }
    ck_assert_int_eq(stats_of(num).plans, 3); /* 0.5 came back */
    ck_assert_str_eq(stats_of(num).last_miss, "arg0 == -2 (got 3.25)");
    ck_assert_int_eq(stats_of(dyn).plans, 1);
    /* The graph: the float is a placeholder named arg0. */
    const tt_graph *g = NN(tt_compiled_graph(dyn, 0));
    ck_assert_int_eq(tt_graph_num_inputs(g), 2);
    ck_assert_str_eq(tt_graph_node_name(g, 1), "arg0");
    /* An int passed where the plan read a float is a miss, not a replay. */
    tt_tensor *got = NULL;
    OK(tt_compiled_call_args(num, &x, &got, (tt_value[]){tt_v_int(2)}, 1));
    ck_assert_str_eq(stats_of(num).last_miss, "arg0 is a float (got an int)");
    tt_release(got);
    tt_compiled_free(num);
    tt_compiled_free(dyn);
    tt_release(x);
}
END_TEST

START_TEST(test_arg_errors)
{
    /* Outside a compiled call. */
    ck_assert_int_eq(tt_fn_arg_int(0), 0);
    ck_assert_error(TT_EINVAL, "tt_fn_arg_int: called outside a compiled call "
                               "(tt_compiled_call_args passes the scalar arguments)");
    ck_assert_ptr_null(tt_fn_arg_tensor(0));
    ck_assert_error(TT_EINVAL, "tt_fn_arg_tensor: called outside a compiled call");
    tt_tensor *in[2];
    decoder_inputs(in);
    /* In a plain trace, where the 0 would be traced as the value: the
     * trace fails. */
    ck_assert_ptr_null(tt_trace(step_arg, 2, in, NULL));
    ck_assert_error(TT_EGRAPHBREAK, "tt_fn_arg_int: called outside a compiled call "
                                    "(tt_compiled_call_args passes the scalar arguments); a "
                                    "plain trace has no scalar arguments");
    tt_compiled *c = NN(tt_compile(step_arg, 2, 1, NULL));
    tt_tensor *got = (tt_tensor *)1;
    /* A missing argument fails the call once fn returns (its trace). */
    ck_assert_int_eq(tt_compiled_call(c, in, &got), TT_EINVAL);
    ck_assert_ptr_null(got);
    ck_assert_error(TT_EINVAL, "tt_fn_arg_int: scalar argument 0 is missing (the call passed 0)");
    /* A float where fn reads an int. */
    ck_assert_int_eq(tt_compiled_call_args(c, in, &got, (tt_value[]){tt_v_float(1)}, 1),
                     TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_fn_arg_int: scalar argument 0 is a float, not an int");
    ck_assert_int_eq(stats_of(c).plans, 0);
    /* Arguments that are no scalars, too many, NULL. */
    ck_assert_int_eq(tt_compiled_call_args(c, in, &got, (tt_value[]){tt_v_bool(true)}, 1),
                     TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_compiled_call_args: scalar argument 0 is not an int or a "
                               "float (TT_V_INT or TT_V_FLOAT)");
    ck_assert_int_eq(tt_compiled_call_args(c, in, &got, (tt_value[]){tt_v_int(1)}, 65),
                     TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_compiled_call_args: argument 'nargs' is 65; expected 0 to 64");
    ck_assert_int_eq(tt_compiled_call_args(c, in, &got, NULL, 1), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_compiled_call: argument 'args' is NULL");
    /* A good call still works after all that. */
    check_step(c, in, 3, (tt_value[]){tt_v_int(3)}, 1);
    tt_compiled_free(c);
    /* tt_fn_arg_tensor on a float not marked dynamic. */
    tt_tensor *x = NN(tt_randn(TT_SHAPE(2), TT_F32));
    c = NN(tt_compile(scale_tensor, 1, 1, NULL));
    ck_assert_int_eq(tt_compiled_call_args(c, &x, &got, (tt_value[]){tt_v_float(2)}, 1),
                     TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_fn_arg_tensor: scalar argument 0 is not a dynamic float "
                               "(mark it in opts.dynamic_args and pass a TT_V_FLOAT)");
    tt_compiled_free(c);
    /* ud_size with no ud. */
    ck_assert_ptr_null(tt_compile(step_ud, 2, 1, &(tt_trace_opts){.ud_size = 4}));
    ck_assert_error(TT_EINVAL, "tt_compile: argument 'opts->ud_size' is 4 but 'opts->ud' is "
                               "NULL");
    tt_release(x);
    tt_release(in[0]);
    tt_release(in[1]);
}
END_TEST

/* ------------------------------------------------ mutations as data edges */

static tt_library *lib;
static const tt_op *kv_write;

/* mylib::kv_write(Tensor(a!) cache, Tensor k, int pos) -> (): writes the
 * row k into row pos of the cache, as a decoder's KV cache update. */
static tt_status kv_write_kernel(tt_frame *f)
{
    tt_tensor *cache, *k;
    int64_t pos;
    tt_status st = tt_arg_tensor(f, 0, &cache);
    if (!st)
        st = tt_arg_tensor(f, 1, &k);
    if (!st)
        st = tt_arg_int(f, 2, &pos);
    if (st)
        return st;
    tt_tensor *row = tt_narrow(cache, 0, pos, 1);
    st = row ? tt_copy_(row, k) : tt_errcode();
    tt_release(row);
    return st;
}

static tt_status kv_write_fake(tt_frame *f)
{
    (void)f; /* it returns nothing */
    return TT_OK;
}

static void kv_setup(void)
{
    tt_test_setup();
    lib = NN(tt_library_new(TT_LIB_DEF, "kvlib"));
    kv_write = NN(tt_custom_op_define(lib, &(tt_custom_op_spec){
        .schema = "kvlib::kv_write(Tensor(a!) cache, Tensor k, int pos) -> ()",
        .kernel = kv_write_kernel,
        .fake = kv_write_fake,
    }));
}

static void kv_teardown(void)
{
    lib = tt_library_free(lib);
    tt_test_teardown();
}

/* Writes k at pos, then attends: q @ cache^T over the whole cache. */
static tt_status attend(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_tensor *cache = in[0], *k = in[1], *q = in[2];
    tt_status st = tt_op_call(kv_write, (tt_value[]){tt_v_tensor(cache), tt_v_tensor(k),
                                                     tt_v_int(tt_fn_arg_int(0))},
                              3, NULL, 0);
    tt_tensor *kt = st ? NULL : tt_transpose(cache, 0, 1);
    out[0] = kt ? tt_matmul(q, kt) : NULL;
    tt_release(kt);
    return st ? st : out[0] ? TT_OK : tt_errcode();
}

START_TEST(test_mutable_op_write_is_a_data_edge)
{
    tt_tensor *cache = NN(tt_zeros(TT_SHAPE(4, 3), TT_F32));
    tt_tensor *ref_cache = NN(tt_zeros(TT_SHAPE(4, 3), TT_F32));
    tt_tensor *q = NN(tt_randn(TT_SHAPE(1, 3), TT_F32));
    tt_compiled *c = NN(tt_compile(attend, 3, 1, &(tt_trace_opts){.name = "attend"}));
    for (int pos = 0; pos < 4; pos++) {
        tt_tensor *k = NN(tt_randn(TT_SHAPE(1, 3), TT_F32));
        tt_value a = tt_v_int(pos);
        tt_tensor *got = NULL, *want = NULL;
        OK(tt_compiled_call_args(c, (tt_tensor *[]){cache, k, q}, &got, &a, 1));
        /* Eager on its own cache: the same scores, the same cache. */
        OK(tt_op_call(kv_write, (tt_value[]){tt_v_tensor(ref_cache), tt_v_tensor(k), a}, 3,
                      NULL, 0));
        tt_tensor *kt = NN(tt_transpose(ref_cache, 0, 1));
        want = NN(tt_matmul(q, kt));
        assert_close(got, want, "scores");
        assert_close(cache, ref_cache, "cache");
        tt_release(kt);
        tt_release(k);
        tt_release(got);
        tt_release(want);
    }
    /* The graph: transpose reads kv_write's after-write value of the
     * cache, not the cache placeholder. */
    const tt_graph *g = NN(tt_compiled_graph(c, 0));
    int kv = -1, tr = -1;
    for (int i = 0; i < tt_graph_num_nodes(g); i++) {
        const tt_op *op = tt_graph_node_op(g, i);
        if (op == kv_write)
            kv = i;
        else if (op && strcmp(tt_op_name(op), "tt::transpose.int") == 0)
            tr = i;
    }
    ck_assert_int_ge(kv, 0);
    ck_assert_int_gt(tr, kv);
    ck_assert_int_eq(tt_graph_node_num_outputs(g, kv), 1);
    ck_assert_int_eq(tt_graph_node_written_arg(g, kv, 0), 0);
    ck_assert_int_eq(tt_graph_node_arg_node(g, tr, 0), kv);
    ck_assert_int_eq(tt_graph_node_written_arg(g, kv, 1), -2);
    ck_assert_error(TT_EINVAL, "tt_graph_node_written_arg: node");
    char *text = NN(tt_graph_to_text(g));
    ck_assert_msg(strstr(text, "kv_write: \"f32[4, 3]\" = kvlib::kv_write(in0, in1, 0)  # writes "
                               "in0 (in0 is kv_write after the write)"),
                  "%s", text);
    ck_assert_msg(strstr(text, "tt::transpose.int(kv_write, 0, 1)"), "%s", text);
    free(text);
    tt_compiled_free(c);
    tt_release(cache);
    tt_release(ref_cache);
    tt_release(q);
}
END_TEST

/* The interpreter and the DOT see the same edge. */
START_TEST(test_mutable_op_graph_run_and_dot)
{
    tt_tensor *cache = NN(tt_zeros(TT_SHAPE(4, 3), TT_F32));
    tt_tensor *k = NN(tt_ones(TT_SHAPE(1, 3), TT_F32));
    tt_tensor *q = NN(tt_ones(TT_SHAPE(1, 3), TT_F32));
    tt_compiled *c = NN(tt_compile(attend, 3, 1, NULL));
    tt_tensor *got = NULL;
    OK(tt_compiled_call_args(c, (tt_tensor *[]){cache, k, q}, &got, (tt_value[]){tt_v_int(2)},
                             1));
    double *v = tt_test_values(got);
    ck_assert(v[0] == 0 && v[1] == 0 && v[2] == 3 && v[3] == 0);
    free(v);
    tt_release(got);
    const tt_graph *g = NN(tt_compiled_graph(c, 0));
    char *dot = NN(tt_graph_to_dot(g));
    ck_assert_msg(strstr(dot, "cache after the write: f32[4, 3]"), "%s", dot);
    free(dot);
    /* tt_graph_run fills the after-write value too. */
    tt_tensor *cache2 = NN(tt_zeros(TT_SHAPE(4, 3), TT_F32));
    OK(tt_graph_run(g, 3, (tt_tensor *[]){cache2, k, q}, 1, &got));
    v = tt_test_values(got);
    ck_assert(v[0] == 0 && v[1] == 0 && v[2] == 3 && v[3] == 0);
    free(v);
    tt_release(got);
    tt_release(cache2);
    tt_compiled_free(c);
    tt_release(cache);
    tt_release(k);
    tt_release(q);
}
END_TEST

/* An in-place built-in over what a mutable op wrote into an input keeps
 * writing the input: the plan's functionalization must not turn it into
 * a functional add (the after-write value is the input itself). */
static tt_status write_then_bump(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_status st = tt_op_call(kv_write, (tt_value[]){tt_v_tensor(in[0]), tt_v_tensor(in[1]),
                                                     tt_v_int(1)},
                              3, NULL, 0);
    if (!st)
        st = tt_add_scalar_(in[0], 1.0);
    out[0] = st ? NULL : tt_mul_scalar(in[0], 2.0);
    return st ? st : out[0] ? TT_OK : tt_errcode();
}

START_TEST(test_inplace_after_mutable_op_keeps_writing_the_input)
{
    tt_tensor *cache = NN(tt_zeros(TT_SHAPE(3, 2), TT_F32));
    tt_tensor *ref = NN(tt_zeros(TT_SHAPE(3, 2), TT_F32));
    tt_tensor *k = NN(tt_randn(TT_SHAPE(1, 2), TT_F32));
    tt_compiled *c = NN(tt_compile(write_then_bump, 2, 1, NULL));
    for (int call = 0; call < 2; call++) { /* a trace, then a replay */
        tt_tensor *got = NULL, *want = NULL;
        OK(tt_compiled_call(c, (tt_tensor *[]){cache, k}, &got));
        OK(write_then_bump((tt_tensor *[]){ref, k}, 2, &want, 1, NULL));
        assert_close(got, want, "result");
        assert_close(cache, ref, "the written input");
        tt_release(got);
        tt_release(want);
    }
    tt_compiled_free(c);
    tt_release(cache);
    tt_release(ref);
    tt_release(k);
}
END_TEST

static Suite *compile_args_suite(void)
{
    Suite *s = suite_create("compile_args");
    TCase *ud = tt_tcase("ud");
    tcase_add_test(ud, test_ud_size_guards_and_retraces);
    tcase_add_test(ud, test_ud_undeclared_warns_once);
    tcase_add_test(ud, test_ud_written_runs_eagerly);
    suite_add_tcase(s, ud);
    TCase *args = tt_tcase("scalar_args");
    tcase_add_test(args, test_int_arg_guarded);
    tcase_add_test(args, test_int_arg_dynamic_symbolic);
    tcase_add_test(args, test_int_arg_past_the_cache_names_values);
    tcase_add_test(args, test_int_arg_symbol_read_as_float_too);
    tcase_add_test(args, test_float_args);
    tcase_add_test(args, test_arg_errors);
    suite_add_tcase(s, args);
    TCase *mut = tt_tcase_with("mutations", kv_setup, kv_teardown);
    tcase_add_test(mut, test_mutable_op_write_is_a_data_edge);
    tcase_add_test(mut, test_mutable_op_graph_run_and_dot);
    tcase_add_test(mut, test_inplace_after_mutable_op_keeps_writing_the_input);
    suite_add_tcase(s, mut);
    return s;
}

TT_TEST_MAIN(compile_args_suite)
