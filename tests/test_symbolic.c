/* Symbolic sizes that cannot be misused: C arithmetic on a handle is
 * refused wherever a size is taken, opcheck evaluates fake outputs under
 * the real sizes, and a comparison on a data-dependent size is a graph
 * break (an error under fullgraph), never a silent answer. Each program is
 * written as a newcomer writes it. */
#include "tt_test.h"

#include <stdint.h>

static tt_library *lib;
static const tt_op *positive_op, *positive_bounded_op, *shrink_op, *half_op;

/* ------------------------------------------------------------------ ops */

/* mylib::positive(Tensor x) -> Tensor: the positive elements of x, in
 * order (a data-dependent size, as nonzero's): positive_op.h. */
#include "positive_op.h"

/* The same, with what the fake kernel knows: at most 1000 elements. */
static tt_status positive_bounded_fake(tt_frame *f)
{
    tt_tensor *x;
    tt_status st = tt_arg_tensor(f, 0, &x);
    if (st)
        return st;
    tt_size u = tt_frame_new_dynamic_size_bounded(f, 0, 1000);
    return tt_return(f, 0, tt_new_empty(x, 1, &u));
}

/* mylib::shrink(Tensor x) -> Tensor: x without its last row. */
static tt_status shrink_kernel(tt_frame *f)
{
    tt_tensor *x;
    tt_status st = tt_arg_tensor(f, 0, &x);
    if (st)
        return st;
    tt_tensor *v = tt_narrow(x, 0, 0, tt_dim_size(x, 0) - 1);
    tt_tensor *r = v ? tt_clone(v) : NULL;
    tt_release(v);
    return tt_return(f, 0, r);
}

/* The fake kernel as the issue's newcomer wrote it: C arithmetic on what
 * may be a symbolic size. Right on concrete sizes, wrong on symbols. */
static tt_status shrink_fake_minus_one(tt_frame *f)
{
    tt_tensor *x;
    tt_status st = tt_arg_tensor(f, 0, &x);
    if (st)
        return st;
    return tt_return(f, 0, tt_new_empty(x, TT_SHAPE(tt_dim_size(x, 0) - 1, tt_dim_size(x, 1))));
}

/* mylib::half(Tensor x) -> Tensor: the first 5 rows of x. Its fake
 * kernel says x.size(0) // 2 rows: a valid symbolic size, equal to the
 * real one only when x has 10 or 11 rows. */
static tt_status half_kernel(tt_frame *f)
{
    tt_tensor *x;
    tt_status st = tt_arg_tensor(f, 0, &x);
    if (st)
        return st;
    tt_tensor *v = tt_narrow(x, 0, 0, 5);
    tt_tensor *r = v ? tt_clone(v) : NULL;
    tt_release(v);
    return tt_return(f, 0, r);
}

static tt_status half_fake(tt_frame *f)
{
    tt_tensor *x;
    tt_status st = tt_arg_tensor(f, 0, &x);
    if (st)
        return st;
    return tt_return(f, 0, tt_new_empty(x, TT_SHAPE(tt_sym_floordiv(tt_dim_size(x, 0), 2),
                                                    tt_dim_size(x, 1))));
}

static void sym_setup(void)
{
    tt_test_setup();
    tt_sym_reset(); /* symbols print as s0, s1... in every test */
    lib = NN(tt_library_new(TT_LIB_DEF, "mylib"));
    positive_op = NN(tt_custom_op_define(lib, &(tt_custom_op_spec){
        .schema = "mylib::positive(Tensor x) -> Tensor",
        .mutates_args = "",
        .kernel = positive_kernel,
        .fake = positive_fake,
    }));
    positive_bounded_op = NN(tt_custom_op_define(lib, &(tt_custom_op_spec){
        .schema = "mylib::positive_bounded(Tensor x) -> Tensor",
        .mutates_args = "",
        .kernel = positive_kernel,
        .fake = positive_bounded_fake,
    }));
    shrink_op = NN(tt_custom_op_define(lib, &(tt_custom_op_spec){
        .schema = "mylib::shrink(Tensor x) -> Tensor",
        .mutates_args = "",
        .kernel = shrink_kernel,
        .fake = shrink_fake_minus_one,
    }));
    half_op = NN(tt_custom_op_define(lib, &(tt_custom_op_spec){
        .schema = "mylib::half(Tensor x) -> Tensor",
        .mutates_args = "",
        .kernel = half_kernel,
        .fake = half_fake,
    }));
}

static void sym_teardown(void)
{
    lib = tt_library_free(lib);
    tt_sym_reset();
    tt_test_teardown();
}

#define ARITH "C arithmetic (+, -, *, /) on a symbolic size is the likely cause"
#define NAMES "tt_sym_add, tt_sym_sub, tt_sym_mul and tt_sym_floordiv"

/* ====================================================== handle arithmetic */

/* The issue's program: z = zeros(H - 1, 4) with H = in0.size(0). */
static tt_status zeros_minus_one(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_size H = tt_dim_size(in[0], 0);
    out[0] = tt_zeros(TT_SHAPE(H - 1, 4), TT_F32);
    return out[0] ? TT_OK : tt_errcode();
}

/* The same, written with tt_sym_sub. */
static tt_status zeros_sym_sub(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_size H = tt_dim_size(in[0], 0);
    out[0] = tt_zeros(TT_SHAPE(tt_sym_sub(H, 1), 4), TT_F32);
    return out[0] ? TT_OK : tt_errcode();
}

START_TEST(test_issue_zeros_minus_one)
{
    tt_tensor *x = NN(tt_zeros(TT_SHAPE(11, 4), TT_F32)), *y = NULL;
    /* Eager: H is 11, H - 1 is 10. */
    tt_tensor *in[1] = {x};
    OK(zeros_minus_one(in, 1, &y, 1, NULL));
    ck_assert_int_eq(tt_dim_size(y, 0), 10);
    y = tt_release(y);
    /* Compiled symbolically: H is s0, a handle; H - 1 is refused. */
    tt_compiled *c = NN(tt_compile(zeros_minus_one, 1, 1,
                                   &(tt_trace_opts){.mode = TT_TRACE_SYMBOLIC, .fullgraph = true}));
    ck_assert_int_eq(tt_compiled_call(c, in, &y), TT_EINVAL);
    ck_assert_ptr_null(y);
    ck_assert_error(TT_EINVAL, "tt_zeros: argument 'size' has ");
    ck_assert_error(TT_EINVAL, "at index 0, which is not a symbolic size of the shape "
                               "environment");
    ck_assert_error(TT_EINVAL, ARITH);
    ck_assert_error(TT_EINVAL, NAMES);
    tt_compiled_free(c);
    /* With tt_sym_sub: [10, 4] as eager, and [6, 4] for 7 rows, one plan. */
    c = NN(tt_compile(zeros_sym_sub, 1, 1,
                      &(tt_trace_opts){.mode = TT_TRACE_SYMBOLIC, .fullgraph = true}));
    OK(tt_compiled_call(c, in, &y));
    ck_assert_int_eq(tt_dim_size(y, 0), 10);
    ck_assert_int_eq(tt_dim_size(y, 1), 4);
    y = tt_release(y);
    tt_tensor *x7 = NN(tt_zeros(TT_SHAPE(7, 4), TT_F32));
    in[0] = x7;
    OK(tt_compiled_call(c, in, &y));
    ck_assert_int_eq(tt_dim_size(y, 0), 6);
    tt_compile_stats stats;
    tt_compiled_stats(c, &stats);
    ck_assert_int_eq(stats.plans, 1);
    tt_release(y);
    tt_compiled_free(c);
    tt_release(x7);
    tt_release(x);
}
END_TEST

/* h op k as C computes it on int64 (wrapping, as the machine does: the
 * test must not itself overflow a signed integer). */
static tt_size wrap_mul(tt_size h, int64_t k) { return (tt_size)((uint64_t)h * (uint64_t)k); }

START_TEST(test_arith_refused_everywhere)
{
    tt_size H = tt_sym_new("s", 11);
    ck_assert(tt_size_is_sym(H));
    tt_tensor *fx = NN(tt_fake_empty(2, (tt_size[]){H, 4}, TT_F32));
    tt_tensor *real = NN(tt_zeros(TT_SHAPE(16), TT_F32));
    const tt_size bad[] = {H + 1, H - 1, H + 2, H - 2, wrap_mul(H, 2), H / 2};
    const char *what[] = {"H + 1", "H - 1", "H + 2", "H - 2", "H * 2", "H / 2"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char m[64];
        snprintf(m, sizeof m, "%s", what[i]);
        tt_clear_error();
        ck_assert_msg(tt_zeros(TT_SHAPE(bad[i], 4), TT_F32) == NULL, "tt_zeros took %s", m);
        ck_assert_error(TT_EINVAL, "tt_zeros: argument 'size' has ");
        ck_assert_error(TT_EINVAL, ARITH);
        ck_assert_msg(tt_empty_strided(TT_SHAPE(2, 2), (int64_t[]){bad[i], 1}, TT_F32) == NULL,
                      "tt_empty_strided took %s", m);
        ck_assert_error(TT_EINVAL, "tt_empty_strided: argument 'stride' has ");
        ck_assert_error(TT_EINVAL, NAMES);
        ck_assert_msg(tt_as_strided(real, TT_SHAPE(2, 2), (int64_t[]){bad[i], 1}, 0) == NULL,
                      "tt_as_strided took %s as a stride", m);
        ck_assert_error(TT_EINVAL, "tt_as_strided: argument 'stride' has ");
        ck_assert_msg(tt_as_strided(real, TT_SHAPE(2, 2), (int64_t[]){2, 1}, bad[i]) == NULL,
                      "tt_as_strided took %s as an offset", m);
        ck_assert_error(TT_EINVAL, "tt_as_strided: argument 'storage_offset' is ");
        ck_assert_error(TT_EINVAL, ARITH);
        ck_assert_msg(tt_new_empty(fx, 2, (tt_size[]){bad[i], 4}) == NULL,
                      "tt_new_empty took %s", m);
        ck_assert_error(TT_EINVAL, "tt_new_empty: argument 'size' has ");
        ck_assert_msg(tt_fake_empty(1, &bad[i], TT_F32) == NULL, "tt_fake_empty took %s", m);
        ck_assert_error(TT_EINVAL, "tt_fake_empty: argument 'size' has ");
        ck_assert_msg(tt_view(fx, 2, (tt_size[]){bad[i], -1}) == NULL, "tt_view took %s", m);
        ck_assert_error(TT_EINVAL, ARITH);
        /* The arithmetic functions refuse it too. */
        ck_assert_int_eq(tt_sym_add(bad[i], 1), tt_size_is_sym(bad[i]) ? -1 : tt_sym_add(bad[i], 1));
    }
    /* The right way gives valid sizes. */
    tt_tensor *ok = NN(tt_new_empty(fx, 2, (tt_size[]){tt_sym_sub(H, 1), tt_sym_mul(H, 2)}));
    char buf[64];
    ck_assert_str_eq(tt_shape_str(ok, buf, sizeof buf), "[s0 - 1, s0*2]");
    tt_release(ok);
    tt_release(real);
    tt_release(fx);
}
END_TEST

/* The guarantee, over the first handles: H + k, H - k, H * k and H / k
 * for small k are never a size or a handle. */
START_TEST(test_arith_never_validates)
{
    for (int i = 0; i < 1000; i++) {
        tt_size h = tt_sym_new(i % 2 ? "s" : "u", i % 2 ? 5 : -1);
        ck_assert(tt_size_is_sym(h));
        for (int64_t k = 1; k <= 64; k++) {
            tt_size v[4] = {h + k, h - k, wrap_mul(h, k), h / k};
            for (int j = 0; j < (k == 1 ? 2 : 4); j++) { /* (h * 1, h / 1 are h) */
                tt_tensor *t = tt_fake_empty(1, &v[j], TT_F32);
                ck_assert_msg(t == NULL, "handle %d: op %d by %lld gives a size (%lld)", i, j,
                              (long long)k, (long long)v[j]);
            }
        }
    }
    ck_assert_error(TT_EINVAL, ARITH);
    /* Two input sizes combined in C (a conv's H - K + 1, im2col's H * W):
     * refused for any two of 16 symbols made in a row. */
    tt_sym_reset();
    tt_size s[16];
    for (int i = 0; i < 16; i++)
        s[i] = tt_sym_new("s", 7);
    for (int i = 0; i < 16; i++)
        for (int j = 0; j < 16; j++) {
            if (i == j)
                continue;
            uint64_t a = (uint64_t)s[i], b = (uint64_t)s[j];
            tt_size v[3] = {(tt_size)(a - b), (tt_size)(a + b), (tt_size)(a * b)};
            for (int k = 0; k < 3; k++)
                ck_assert_msg(tt_fake_empty(1, &v[k], TT_F32) == NULL,
                              "s%d op %d s%d gives a size (%lld)", i, k, j, (long long)v[k]);
        }
}
END_TEST

START_TEST(test_unknown_handle_refused)
{
    /* A value in the symbolic range that no call made (today: f32[?]). */
    tt_size s = TT_SYM_BASE - 12345;
    ck_assert_ptr_null(tt_fake_empty(1, &s, TT_F32));
    ck_assert_error(TT_EINVAL, "tt_fake_empty: argument 'size' has -4611686018427400249 at "
                               "index 0, which is not a symbolic size of the shape environment");
    /* A handle made before tt_sym_reset is forgotten with it. */
    tt_size old = tt_sym_new("s", 4);
    tt_sym_reset();
    ck_assert_ptr_null(tt_fake_empty(1, &old, TT_F32));
    ck_assert_error(TT_EINVAL, "made before tt_sym_reset");
    ck_assert_int_eq(tt_sym_mul(old, 2), -1);
    ck_assert_error(TT_EINVAL, "tt_sym_mul: argument 'a' (");
    ck_assert_error(TT_EINVAL, NAMES);
}
END_TEST

/* A user's im2col: a strided view with H*W in its strides. */
static tt_status im2col(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_size H = tt_dim_size(in[0], 1), W = tt_dim_size(in[0], 2);
    tt_size HW = (tt_size)((uint64_t)H * (uint64_t)W); /* H * W, wrapping as C does */
    tt_tensor *v = tt_as_strided(in[0], TT_SHAPE(2, 2, 2), (int64_t[]){HW, W, 1}, 0);
    out[0] = v ? tt_contiguous(v) : NULL;
    tt_release(v);
    return out[0] ? TT_OK : tt_errcode();
}

START_TEST(test_im2col_hw_stride)
{
    tt_tensor *x = NN(tt_arange(0, 2 * 5 * 6, 1, TT_F32));
    tt_tensor *x3 = NN(tt_view(x, TT_SHAPE(2, 5, 6)));
    tt_tensor *y = NULL;
    tt_compiled *c = NN(tt_compile(im2col, 1, 1,
                                   &(tt_trace_opts){.mode = TT_TRACE_SYMBOLIC, .fullgraph = true}));
    ck_assert_int_eq(tt_compiled_call(c, &x3, &y), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_as_strided: argument 'stride' has ");
    ck_assert_error(TT_EINVAL, ARITH);
    tt_compiled_free(c);
    tt_release(x3);
    tt_release(x);
}
END_TEST

/* ================================================================ opcheck */

static tt_opcheck_entry *entry(tt_opcheck_report *r, const char *name)
{
    for (int i = 0; i < TT_OPCHECK_NCHECKS; i++)
        if (r->entries[i].check && !strcmp(r->entries[i].check, name))
            return &r->entries[i];
    ck_abort_msg("no opcheck entry %s", name);
    return NULL;
}

START_TEST(test_opcheck_minus_one_fake)
{
    tt_tensor *x = NN(tt_randn(TT_SHAPE(11, 4), TT_F32));
    tt_value args[1] = {tt_v_tensor(x)};
    tt_opcheck_report r;
    ck_assert_int_eq(tt_opcheck(shrink_op, args, 1, NULL, &r), TT_EOPCHECK);
    tt_opcheck_entry *e = entry(&r, "aot_dispatch_dynamic");
    ck_assert_int_eq(e->result, TT_CHECK_FAILED);
    ck_assert_msg(strstr(e->message, "tt_new_empty: argument 'size' has ") &&
                      strstr(e->message, ARITH),
                  "%s", e->message);
    /* On concrete sizes the fake kernel is right. */
    ck_assert_int_eq(entry(&r, "faketensor")->result, TT_CHECK_PASSED);
    tt_release(x);
}
END_TEST

START_TEST(test_opcheck_wrong_symbolic_size)
{
    /* 10 rows: 10 // 2 == 5, the fake kernel is right on these sizes... */
    tt_tensor *x = NN(tt_randn(TT_SHAPE(10, 4), TT_F32));
    tt_value args[1] = {tt_v_tensor(x)};
    tt_opcheck_report r;
    tt_opcheck(half_op, args, 1, NULL, &r);
    ck_assert_int_eq(entry(&r, "faketensor")->result, TT_CHECK_PASSED);
    ck_assert_int_eq(entry(&r, "aot_dispatch_dynamic")->result, TT_CHECK_PASSED);
    tt_release(x);
    /* ...on 16 it says 8 where the real kernel gives 5. */
    x = NN(tt_randn(TT_SHAPE(16, 4), TT_F32));
    args[0] = tt_v_tensor(x);
    tt_sym_reset(); /* (the first opcheck's trace made s0 and s1) */
    ck_assert_int_eq(tt_opcheck(half_op, args, 1, NULL, &r), TT_EOPCHECK);
    tt_opcheck_entry *e = entry(&r, "aot_dispatch_dynamic");
    ck_assert_int_eq(e->result, TT_CHECK_FAILED);
    ck_assert_msg(strstr(e->message, "output 0: the fake kernel's size of dimension 0 is "
                                     "(s0//2), which is 8 for this call's sizes (s0 = 16, "
                                     "s1 = 4), but the real kernel's is 5"),
                  "%s", e->message);
    tt_release(x);
}
END_TEST

/* ======================================================= data-dependent */

/* The brief's program: a branch on the size of positive(x). */
static int count_small_line; /* the comparison's line, for the messages */

static tt_status count_small(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    const tt_op *op = ud ? ud : positive_op;
    tt_tensor *y = tt_call(op, tt_v_tensor(in[0]));
    if (!y)
        return tt_errcode();
    count_small_line = __LINE__ + 1;
    double v = tt_size_lt(tt_dim_size(y, 0), 3) ? 1 : 100;
    tt_release(y);
    out[0] = tt_add_scalar(in[0], v);
    return out[0] ? TT_OK : tt_errcode();
}

START_TEST(test_data_dependent_fullgraph)
{
    tt_tensor *x = NN(tt_ones(TT_SHAPE(100), TT_F32)), *y = NULL;
    OK(count_small(&x, 1, &y, 1, NULL)); /* eager, which sets the line */
    y = tt_release(y);
    char where[128];
    snprintf(where, sizeof where, "test_symbolic.c:%d in count_small()", count_small_line);
    for (int mode = 0; mode < 2; mode++) {
        tt_sym_reset();
        tt_compiled *c = NN(tt_compile(count_small, 1, 1,
                                       &(tt_trace_opts){.mode = mode ? TT_TRACE_SYMBOLIC
                                                                     : TT_TRACE_FAKE,
                                                        .fullgraph = true}));
        ck_assert_int_eq(tt_compiled_call(c, &x, &y), TT_EGRAPHBREAK);
        ck_assert_ptr_null(y);
        ck_assert_error(TT_EGRAPHBREAK, "Graph break: data-dependent size comparison");
        ck_assert_error(TT_EGRAPHBREAK, "Could not guard on data-dependent expression u0 < 3");
        ck_assert_error(TT_EGRAPHBREAK, "tt_frame_new_dynamic_size_bounded");
        ck_assert_error(TT_EGRAPHBREAK, where);
        tt_compiled_free(c);
    }
    tt_release(x);
}
END_TEST

START_TEST(test_data_dependent_graph_break)
{
    /* Without fullgraph the function runs on real values: 100 positive
     * elements, not < 3, so x + 100, as eager. */
    tt_tensor *x = NN(tt_ones(TT_SHAPE(100), TT_F32)), *y = NULL, *e = NULL;
    OK(count_small(&x, 1, &e, 1, NULL));
    tt_compiled *c = NN(tt_compile(count_small, 1, 1, &(tt_trace_opts){.mode = TT_TRACE_SYMBOLIC}));
    for (int call = 0; call < 2; call++) {
        OK(tt_compiled_call(c, &x, &y));
        double v;
        OK(tt_get(y, &v, 0));
        ck_assert_double_eq(v, 101);
        OK(tt_get(e, &v, 0));
        ck_assert_double_eq(v, 101);
        y = tt_release(y);
    }
    tt_release(e);
    tt_compiled_free(c);
    tt_release(x);
}
END_TEST

START_TEST(test_data_dependent_bounds_decide)
{
    /* positive_bounded's size is in [0, 1000]: u0 < 5000 is known, so
     * the fullgraph trace needs no break and no guard. */
    tt_tensor *x = NN(tt_ones(TT_SHAPE(100), TT_F32));
    tt_tensor *t = NULL;
    tt_fake_mode_begin();
    tt_tensor *fx = NN(tt_fake_like(x));
    t = NN(tt_call(positive_bounded_op, tt_v_tensor(fx)));
    tt_size u = tt_dim_size(t, 0);
    tt_clear_error();
    ck_assert(tt_size_lt(u, 5000));
    ck_assert(tt_size_le(u, 1000));
    ck_assert(!tt_size_lt(u, 0));
    ck_assert(!tt_size_eq(u, 1001));
    ck_assert(tt_size_le(tt_sym_add(u, 1), 1001));
    ck_assert_int_eq(tt_errcode(), TT_OK);
    /* A comparison the bounds do not decide is refused, also outside a
     * trace, and tt_size_int of it too. */
    ck_assert(!tt_size_lt(u, 3));
    ck_assert_error(TT_EINVAL, "Could not guard on data-dependent expression u0 < 3");
    tt_clear_error();
    ck_assert_int_eq(tt_size_int(u), -1);
    ck_assert_error(TT_EINVAL, "Could not guard on data-dependent expression int(u0)");
    /* The functions (not the macros) behave the same, without a line. */
    tt_clear_error();
    ck_assert(!(tt_size_eq)(u, 3));
    ck_assert_error(TT_EINVAL, "u0 == 3");
    tt_release(t);
    tt_release(fx);
    tt_fake_mode_end();
    tt_clear_error();
    /* Bounds that are no range are refused by the fake kernel's call. */
    tt_release(x);
}
END_TEST

/* A branch the bounds of positive_bounded decide: u0 <= 1000. */
static tt_status bounded_branch(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_tensor *y = tt_call(positive_bounded_op, tt_v_tensor(in[0]));
    if (!y)
        return tt_errcode();
    double v = tt_size_le(tt_dim_size(y, 0), 1000) ? 1 : 100;
    tt_release(y);
    out[0] = tt_add_scalar(in[0], v);
    return out[0] ? TT_OK : tt_errcode();
}

START_TEST(test_data_dependent_bounds_compile)
{
    tt_tensor *x = NN(tt_ones(TT_SHAPE(100), TT_F32)), *y = NULL;
    for (int mode = 0; mode < 2; mode++) {
        tt_compiled *c = NN(tt_compile(bounded_branch, 1, 1,
                                       &(tt_trace_opts){.mode = mode ? TT_TRACE_SYMBOLIC
                                                                     : TT_TRACE_FAKE,
                                                        .fullgraph = true}));
        OK(tt_compiled_call(c, &x, &y));
        double v;
        OK(tt_get(y, &v, 0));
        ck_assert_double_eq(v, 2);
        y = tt_release(y);
        tt_compile_stats s;
        tt_compiled_stats(c, &s);
        ck_assert_int_eq(s.plans, 1);
        tt_compiled_free(c);
    }
    tt_release(x);
}
END_TEST

/* A fake kernel stating bounds that are no range. */
static tt_status bad_bounds_fake(tt_frame *f)
{
    tt_tensor *x;
    tt_status st = tt_arg_tensor(f, 0, &x);
    if (st)
        return st;
    tt_size u = tt_frame_new_dynamic_size_bounded(f, 10, 5);
    return u ? tt_return(f, 0, tt_new_empty(x, 1, &u)) : tt_errcode();
}

START_TEST(test_bad_bounds)
{
    const tt_op *op = NN(tt_custom_op_define(lib, &(tt_custom_op_spec){
        .schema = "mylib::bad_bounds(Tensor x) -> Tensor",
        .mutates_args = "",
        .kernel = positive_kernel,
        .fake = bad_bounds_fake,
    }));
    tt_tensor *x = NN(tt_ones(TT_SHAPE(4), TT_F32));
    tt_fake_mode_begin();
    tt_tensor *fx = NN(tt_fake_like(x));
    ck_assert_ptr_null(tt_call(op, tt_v_tensor(fx)));
    tt_release(fx);
    tt_fake_mode_end();
    ck_assert_error(TT_EINVAL, "mylib::bad_bounds: tt_frame_new_dynamic_size_bounded: bounds "
                               "[10, 5] are not a range of sizes");
    tt_release(x);
}
END_TEST

static tt_status count_small_int(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_tensor *y = tt_call(positive_op, tt_v_tensor(in[0]));
    if (!y)
        return tt_errcode();
    int64_t n = tt_size_int(tt_dim_size(y, 0));
    tt_release(y);
    out[0] = tt_add_scalar(in[0], (double)n);
    return out[0] ? TT_OK : tt_errcode();
}

START_TEST(test_data_dependent_size_int)
{
    tt_tensor *x = NN(tt_ones(TT_SHAPE(100), TT_F32)), *y = NULL;
    tt_compiled *c = NN(tt_compile(count_small_int, 1, 1,
                                   &(tt_trace_opts){.mode = TT_TRACE_FAKE, .fullgraph = true}));
    ck_assert_int_eq(tt_compiled_call(c, &x, &y), TT_EGRAPHBREAK);
    ck_assert_error(TT_EGRAPHBREAK, "Could not guard on data-dependent expression int(u0)");
    tt_compiled_free(c);
    /* Without fullgraph: eager, 1 + 100. */
    c = NN(tt_compile(count_small_int, 1, 1, &(tt_trace_opts){.mode = TT_TRACE_FAKE}));
    OK(tt_compiled_call(c, &x, &y));
    double v;
    OK(tt_get(y, &v, 3));
    ck_assert_double_eq(v, 101);
    tt_release(y);
    tt_compiled_free(c);
    tt_release(x);
}
END_TEST

/* Backed symbols keep their guards: a branch on s0 < 8 compiles once per
 * side. */
static tt_status branch_on_size(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    double v = tt_size_lt(tt_dim_size(in[0], 0), 8) ? 1 : 2;
    out[0] = tt_add_scalar(in[0], v);
    return out[0] ? TT_OK : tt_errcode();
}

START_TEST(test_backed_guards_kept)
{
    tt_tensor *a = NN(tt_zeros(TT_SHAPE(4), TT_F32)), *b = NN(tt_zeros(TT_SHAPE(12), TT_F32));
    tt_tensor *a2 = NN(tt_zeros(TT_SHAPE(5), TT_F32)), *y = NULL;
    tt_compiled *c = NN(tt_compile(branch_on_size, 1, 1,
                                   &(tt_trace_opts){.mode = TT_TRACE_SYMBOLIC, .fullgraph = true}));
    double v;
    OK(tt_compiled_call(c, &a, &y));
    OK(tt_get(y, &v, 0));
    ck_assert_double_eq(v, 1);
    y = tt_release(y);
    OK(tt_compiled_call(c, &a2, &y)); /* same side of the guard: reused */
    y = tt_release(y);
    OK(tt_compiled_call(c, &b, &y));
    OK(tt_get(y, &v, 0));
    ck_assert_double_eq(v, 2);
    y = tt_release(y);
    tt_compile_stats s;
    tt_compiled_stats(c, &s);
    ck_assert_int_eq(s.plans, 2);
    tt_compiled_free(c);
    tt_release(a);
    tt_release(a2);
    tt_release(b);
}
END_TEST

/* ================================================================= misc */

START_TEST(test_names_not_handles)
{
    tt_size s0 = tt_sym_new("s", 3), s1 = tt_sym_new("s", 5);
    tt_size e = tt_sym_add(tt_sym_mul(s0, s1), 4);
    char buf[64];
    tt_size_str(e, buf, sizeof buf);
    ck_assert_str_eq(buf, "s0*s1 + 4");
    /* A real tensor cannot take a symbol: the message names it. */
    ck_assert_ptr_null(tt_zeros(TT_SHAPE(e, 2), TT_F32));
    ck_assert_error(TT_EINVAL, "tt_zeros: a real tensor cannot have symbolic sizes");
    ck_assert_msg(!strstr(tt_errmsg(), "-46"), "%s", tt_errmsg());
}
END_TEST

START_TEST(test_bounded_outside_fake_kernel)
{
    ck_assert_int_eq(tt_frame_new_dynamic_size_bounded(NULL, 0, 10), 0);
    ck_assert_error(TT_EINVAL, "tt_frame_new_dynamic_size_bounded can only be called in a fake "
                               "kernel");
}
END_TEST

static Suite *symbolic_suite(void)
{
    Suite *s = suite_create("symbolic");
    TCase *tc = tt_tcase_with("handles", sym_setup, sym_teardown);
    tcase_add_test(tc, test_issue_zeros_minus_one);
    tcase_add_test(tc, test_arith_refused_everywhere);
    tcase_add_test(tc, test_arith_never_validates);
    tcase_add_test(tc, test_unknown_handle_refused);
    tcase_add_test(tc, test_im2col_hw_stride);
    tcase_add_test(tc, test_names_not_handles);
    suite_add_tcase(s, tc);
    tc = tt_tcase_with("opcheck", sym_setup, sym_teardown);
    tcase_add_test(tc, test_opcheck_minus_one_fake);
    tcase_add_test(tc, test_opcheck_wrong_symbolic_size);
    suite_add_tcase(s, tc);
    tc = tt_tcase_with("data-dependent", sym_setup, sym_teardown);
    tcase_add_test(tc, test_data_dependent_fullgraph);
    tcase_add_test(tc, test_data_dependent_graph_break);
    tcase_add_test(tc, test_data_dependent_bounds_decide);
    tcase_add_test(tc, test_data_dependent_size_int);
    tcase_add_test(tc, test_data_dependent_bounds_compile);
    tcase_add_test(tc, test_bad_bounds);
    tcase_add_test(tc, test_backed_guards_kept);
    tcase_add_test(tc, test_bounded_outside_fake_kernel);
    suite_add_tcase(s, tc);
    return s;
}

TT_TEST_MAIN(symbolic_suite)
