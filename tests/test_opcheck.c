/* opcheck (torch.library.opcheck in C) and checked mode (TT_CHECK_OPS):
 *  - the tutorial's example sets for crop and numpy_sin pass every check
 *    (autograd_registration "not exercised" when nothing requires grad);
 *  - each kind of broken registration is caught by the check that owns it,
 *    with a message naming the argument or output and what differed;
 *  - options (checks mask, raise_exception, atol/rtol), the caller's
 *    tensors untouched, reports as text, error paths, out of memory;
 *  - checked mode: eager custom-op calls fail on the first call whose fake
 *    kernel disagrees or that writes an undeclared argument; built-ins are
 *    not checked; TT_CHECK_OPS is read once, on first use.
 * The tutorial's kernels are tools/tutorial_ops.c's. */
#include "tt_test.h"
#include "tutorial_ops.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

/* ===================================================== crop variants */

/* The tutorial's ops are tools/tutorial_ops.c's; these are the broken fake
 * kernels for crop that only this suite needs. */

/* A fake kernel that looks at a pixel: fake tensors have none. */
static tt_status crop_fake_peeks(tt_frame *f)
{
    tt_tensor *pic;
    const int64_t *box;
    tt_status st = tutorial_crop_args(f, &pic, &box);
    if (st)
        return st;
    if (!tt_data(pic))
        return tt_errcode();
    return tutorial_crop_fake(f);
}

/* crop's fake kernel with the bounds check written with plain C
 * comparisons, as README's "Writing a custom op" has it: right on concrete
 * sizes, wrong on a symbolic one (a handle far below zero). */
static tt_status crop_fake_plain_compare(tt_frame *f)
{
    tt_tensor *pic;
    const int64_t *b;
    tt_status st = tt_test_crop_read_args(f, &pic, &b);
    if (st)
        return st;
    if (b[2] > tt_dim_size(pic, 2) || b[3] > tt_dim_size(pic, 1))
        return tt_frame_fail(f, TT_EINVAL, "argument 'box' (#2) must lie in the image");
    return tutorial_crop_fake(f);
}

/* ================================================================ broken ops */

/* twice: x * 2, a new tensor. Built from a built-in, so the same function
 * serves as the fake kernel (a fake x gives a fake result). */
static tt_status twice_kernel(tt_frame *f)
{
    tt_tensor *x;
    tt_status st = tt_arg_tensor(f, 0, &x);
    return st ? st : tt_return(f, 0, tt_mul_scalar(x, 2));
}

/* Functional by its schema, but returns its input itself. */
static tt_status returns_input(tt_frame *f)
{
    tt_tensor *x;
    tt_status st = tt_arg_tensor(f, 0, &x);
    return st ? st : tt_return(f, 0, tt_retain(x));
}

/* Functional by its schema, but returns a view of its input. */
static tt_status returns_view(tt_frame *f)
{
    tt_tensor *x;
    tt_status st = tt_arg_tensor(f, 0, &x);
    return st ? st : tt_return(f, 0, tt_view(x, tt_ndim(x), tt_sizes(x)));
}

/* Two outputs: x * 2 and a view of it. */
static tt_status shared_outputs(tt_frame *f)
{
    tt_tensor *x, *a;
    tt_status st = tt_arg_tensor(f, 0, &x);
    if (st)
        return st;
    if (!(a = tt_mul_scalar(x, 2)))
        return tt_errcode();
    st = tt_return(f, 1, tt_view(a, tt_ndim(a), tt_sizes(a)));
    if (st) {
        tt_release(a);
        return st;
    }
    return tt_return(f, 0, a);
}

/* Fake kernels that disagree with twice_kernel. */
static tt_status fake_flat(tt_frame *f) /* shape: (numel,) */
{
    tt_tensor *x;
    tt_status st = tt_arg_tensor(f, 0, &x);
    return st ? st : tt_return(f, 0, tt_new_empty(x, TT_SHAPE(tt_numel(x))));
}

static tt_status fake_f64(tt_frame *f) /* dtype: always f64 */
{
    tt_tensor *x;
    tt_status st = tt_arg_tensor(f, 0, &x);
    return st ? st : tt_return(f, 0, tt_fake_empty(tt_ndim(x), tt_sizes(x), TT_F64));
}

/* 1-d x; out = x * 2, the tail of a buffer one element longer (offset 1).
 * Its fake kernel (twice_kernel) says offset 0. */
static tt_status offset_kernel(tt_frame *f)
{
    tt_tensor *x, *buf, *out = NULL;
    tt_status st = tt_arg_tensor(f, 0, &x);
    if (st)
        return st;
    buf = tt_new_empty(x, TT_SHAPE(tt_numel(x) + 1));
    out = buf ? tt_narrow(buf, 0, 1, tt_numel(x)) : NULL;
    tt_tensor *x2 = out ? tt_mul_scalar(x, 2) : NULL;
    st = x2 ? tt_copy_(out, x2) : tt_errcode();
    tt_release(x2);
    tt_release(buf);
    if (st) {
        tt_release(out);
        return st;
    }
    return tt_return(f, 0, out);
}

/* Tensor[] results: the real kernel gives 2, the fake kernel 3. */
static tt_status n_copies(tt_frame *f, int n)
{
    tt_tensor *x, *ts[3] = {0};
    tt_status st = tt_arg_tensor(f, 0, &x);
    for (int i = 0; !st && i < n; i++)
        if (!(ts[i] = tt_mul_scalar(x, i + 1)))
            st = tt_errcode();
    if (st) {
        for (int i = 0; i < n; i++)
            tt_release(ts[i]);
        return st;
    }
    return tt_return_tensors(f, 0, n, ts);
}
static tt_status two_copies(tt_frame *f) { return n_copies(f, 2); }
static tt_status three_copies(tt_frame *f) { return n_copies(f, 3); }

/* out = x + step * (the number of real calls so far): a kernel that
 * depends on global state, so an eager call and a later replay differ. */
static int64_t calls;
static double step = 1;
static tt_status counter_kernel(tt_frame *f)
{
    tt_tensor *x;
    tt_status st = tt_arg_tensor(f, 0, &x);
    if (st)
        return st;
    double add = tt_frame_is_fake(f) ? 0 : step * (double)calls++;
    return tt_return(f, 0, tt_add_scalar(x, add));
}

/* out = x * (1 + the number of real calls so far): the replay differs
 * from the eager call by |x|, so the largest difference is where |x| is. */
static tt_status scaling_kernel(tt_frame *f)
{
    tt_tensor *x;
    tt_status st = tt_arg_tensor(f, 0, &x);
    if (st)
        return st;
    double factor = tt_frame_is_fake(f) ? 1 : (double)(1 + calls++);
    return tt_return(f, 0, tt_mul_scalar(x, factor));
}

/* In place: x *= 2, returned. */
static tt_status twice_inplace(tt_frame *f)
{
    tt_tensor *x;
    tt_status st = tt_arg_tensor(f, 0, &x);
    if (!st && !tt_is_fake(x))
        st = tt_mul_scalar_(x, 2);
    return st ? st : tt_return_self(f, 0, 0);
}

/* out=: out = x * 2, returned. */
static tt_status twice_out(tt_frame *f)
{
    tt_tensor *x, *out, *y;
    tt_status st = tt_arg_tensor(f, 0, &x);
    if (!st)
        st = tt_arg_tensor(f, 1, &out);
    if (!st && !tt_is_fake(x)) {
        y = tt_mul_scalar(x, 2);
        st = y ? tt_copy_(out, y) : tt_errcode();
        tt_release(y);
    }
    return st ? st : tt_return_self(f, 0, 1);
}

/* xs is a list, out is written: out = xs[0] + (real calls so far). */
static tt_status list_into(tt_frame *f)
{
    tt_tensor *const *xs;
    tt_tensor *out, *y;
    int n;
    tt_status st = tt_arg_tensors(f, 0, &xs, &n);
    if (!st)
        st = tt_arg_tensor(f, 1, &out);
    if (st || tt_is_fake(out))
        return st;
    y = tt_add_scalar(xs[0], (double)calls++);
    st = y ? tt_copy_(out, y) : tt_errcode();
    tt_release(y);
    return st;
}

/* ================================================================ fixture */

static tt_library *lib;      /* mylib: tools/tutorial_ops.c's crop, paste, numpy_sin */
static tt_library *broken;   /* per test: the broken ops */
static tt_op *crop_op, *paste_op, *sin_op;

static void opcheck_setup(void)
{
    tt_test_setup();
    calls = 0;
    step = 1;
    /* The tutorial's library, as the demo and the `tt` tool have it. */
    OK(tutorial_ops_register(&lib));
    crop_op = NN(tt_op_find("mylib::crop"));
    paste_op = NN(tt_op_find("mylib::paste"));
    sin_op = NN(tt_op_find("mylib::numpy_sin"));
}

static void opcheck_teardown(void)
{
    tt_set_checked_mode(false);
    broken = tt_library_free(broken);
    lib = tt_library_free(lib);
    tt_test_teardown();
}

/* Defines an op in the "broken" library (made on first use). */
static tt_op *def(const tt_custom_op_spec *spec)
{
    if (!broken)
        broken = tt_library_new(TT_LIB_DEF, "broken");
    ck_assert_msg(broken != NULL, "%s", tt_errmsg());
    tt_op *op = tt_custom_op_define(broken, spec);
    ck_assert_msg(op != NULL, "'%s' was refused: %s", spec->schema, tt_errmsg());
    return op;
}

/* Defines mylib::crop again, with another fake kernel (no autograd). */
static void redefine_crop(tt_kernel_fn fake)
{
    lib = tt_library_free(lib);
    lib = tt_library_new(TT_LIB_DEF, "mylib");
    ck_assert_msg(lib != NULL, "%s", tt_errmsg());
    crop_op = tt_custom_op_define(lib, &(tt_custom_op_spec){
        .schema = "mylib::crop(Tensor pic, int[4] box) -> Tensor", .mutates_args = "",
        .kernel = tutorial_crop_kernel, .fake = fake});
    ck_assert_msg(crop_op != NULL, "%s", tt_errmsg());
}

/* ================================================================ helpers */

enum { SCHEMA, AUTOGRAD, FAKE, AOT };
static const char *const result_name[] = {"passed", "failed", "not exercised", "not run"};

/* Entry k has `result` and (when needle is not NULL) a message holding it. */
static void assert_entry_at(const tt_opcheck_report *r, int k, tt_check_result result,
                            const char *needle, int line)
{
    const tt_opcheck_entry *e = &r->entries[k];
    ck_assert_msg(e->result == result, "line %d: %s: %s expected, got %s: %s", line,
                  e->check, result_name[result], result_name[e->result], e->message);
    if (needle)
        ck_assert_msg(strstr(e->message, needle) != NULL,
                      "line %d: %s message \"%s\" does not contain \"%s\"", line, e->check,
                      e->message, needle);
}
#define assert_entry(r, k, result, needle) assert_entry_at((r), (k), (result), (needle), __LINE__)

/* Runs opcheck with opts (NULL: every check); expects `want` as the status,
 * and shows the report when it differs. */
static void run_opcheck_at(const tt_op *op, const tt_value *args, int n,
                           const tt_opcheck_opts *opts, tt_opcheck_report *r, tt_status want,
                           int line)
{
    tt_clear_error();
    tt_status st = tt_opcheck(op, args, n, opts, r);
    char *text = tt_opcheck_report_to_text(r);
    ck_assert_msg(st == want, "line %d: opcheck gave %s, expected %s: %s\n%s", line,
                  tt_status_name(st), tt_status_name(want), tt_errmsg(), text ? text : "");
    free(text);
}
/* run_opcheck(op, args, &report, status, opts): opts last, so the commas
 * of a compound literal there stay in it. */
#define run_opcheck(op, args, r, want, ...)                                    \
    run_opcheck_at((op), (args), (int)(sizeof(args) / sizeof((args)[0])),     \
                   (__VA_ARGS__), (r), (want), __LINE__)

static tt_tensor *randn_grad(int ndim, const int64_t *sizes, tt_dtype dt, bool grad)
{
    tt_tensor *t = NN(tt_randn(ndim, sizes, dt));
    if (grad)
        OK(tt_set_requires_grad(t, true));
    return t;
}

/* ===================================================== the tutorial's sets */

static const struct {
    int64_t c, h, w;
    tt_dtype dt;
    bool grad;
    int64_t box[4];
} crop_sets[] = {
    {3, 64, 64, TT_F32, false, {0, 0, 10, 10}},
    {3, 91, 91, TT_F32, true, {10, 0, 20, 10}},
    {3, 60, 60, TT_F64, false, {3, 4, 32, 20}},
    {3, 512, 512, TT_F64, true, {3, 4, 32, 45}},
};

/* Every check passes; autograd_registration is not exercised when no
 * input requires grad, and says so. With requires_grad, the symbolic
 * trace includes crop's backward (paste) and sum's derivative. */
START_TEST(test_crop_sets)
{
    tt_tensor *pic = randn_grad(TT_SHAPE(crop_sets[_i].c, crop_sets[_i].h, crop_sets[_i].w),
                                crop_sets[_i].dt, crop_sets[_i].grad);
    tt_value args[] = {tt_v_tensor(pic), tt_v_ints(4, crop_sets[_i].box)};
    tt_opcheck_report r;
    run_opcheck(crop_op, args, &r, TT_OK, NULL);
    ck_assert_str_eq(r.op, "mylib::crop");
    assert_entry(&r, SCHEMA, TT_CHECK_PASSED, NULL);
    if (crop_sets[_i].grad)
        assert_entry(&r, AUTOGRAD, TT_CHECK_PASSED, NULL);
    else
        assert_entry(&r, AUTOGRAD, TT_CHECK_NOT_EXERCISED,
                     "no tensor argument requires grad, so training was not exercised");
    assert_entry(&r, FAKE, TT_CHECK_PASSED, NULL);
    assert_entry(&r, AOT, TT_CHECK_PASSED, NULL);
    for (int k = 0; k < TT_OPCHECK_NCHECKS; k++)
        if (r.entries[k].result == TT_CHECK_PASSED)
            ck_assert_str_eq(r.entries[k].message, "");
    tt_release(pic);
}
END_TEST

static const struct {
    int ndim;
    int64_t sizes[4];
    tt_dtype dt;
} sin_sets[] = {
    {1, {3}, TT_F32},
    {2, {0, 3}, TT_F32},
    {4, {1, 2, 3, 4}, TT_F64},
};

/* numpy_sin writes output: schema passes (the write is declared), the
 * fake call (no fake kernel: a mutable op returning nothing needs none)
 * passes, and the compiled replay writes what the eager call writes. */
START_TEST(test_numpy_sin_sets)
{
    tt_tensor *x = NN(tt_randn(sin_sets[_i].ndim, sin_sets[_i].sizes, sin_sets[_i].dt));
    tt_tensor *out = NN(tt_empty(sin_sets[_i].ndim, sin_sets[_i].sizes, sin_sets[_i].dt));
    tt_value args[] = {tt_v_tensor(x), tt_v_tensor(out)};
    tt_opcheck_report r;
    run_opcheck(sin_op, args, &r, TT_OK, NULL);
    assert_entry(&r, SCHEMA, TT_CHECK_PASSED, NULL);
    /* A mutable op cannot have an autograd formula: the check says so
     * rather than ask for an input with requires_grad. */
    assert_entry(&r, AUTOGRAD, TT_CHECK_NOT_EXERCISED,
                 "does not apply: mylib::numpy_sin mutates argument 'output', and only "
                 "functional ops can have an autograd formula");
    assert_entry(&r, FAKE, TT_CHECK_PASSED, NULL);
    assert_entry(&r, AOT, TT_CHECK_PASSED, NULL);
    tt_release(out);
    tt_release(x);
}
END_TEST

/* In-place and out= variants: the writes and the returned aliases are
 * declared, so every check passes; the compiled replay writes what the
 * eager call writes. */
START_TEST(test_mutable_variants)
{
    tt_op *ip = def(&(tt_custom_op_spec){
        .schema = "broken::twice_(Tensor(a!) x) -> Tensor(a!)", .mutates_args = "x",
        .kernel = twice_inplace, .fake = twice_inplace});
    tt_op *out = def(&(tt_custom_op_spec){
        .schema = "broken::twice.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)",
        .mutates_args = "out", .kernel = twice_out, .fake = twice_out});
    tt_tensor *x = NN(tt_randn(TT_SHAPE(2, 3), TT_F32)), *o = NN(tt_zeros(TT_SHAPE(2, 3), TT_F32));
    tt_value a1[] = {tt_v_tensor(x)}, a2[] = {tt_v_tensor(x), tt_v_tensor(o)};
    tt_opcheck_report r;
    run_opcheck(ip, a1, &r, TT_OK, NULL);
    assert_entry(&r, SCHEMA, TT_CHECK_PASSED, NULL);
    assert_entry(&r, AOT, TT_CHECK_PASSED, NULL);
    run_opcheck(out, a2, &r, TT_OK, NULL);
    assert_entry(&r, SCHEMA, TT_CHECK_PASSED, NULL);
    assert_entry(&r, AOT, TT_CHECK_PASSED, NULL);
    tt_release(o);
    tt_release(x);
}
END_TEST

/* ================================================================ schema */

/* The tutorial's numpy_sin without mutates_args: its write is found by
 * comparing values, and the message names the argument and the change. */
START_TEST(test_schema_undeclared_mutation)
{
    tt_op *op = def(&(tt_custom_op_spec){
        .schema = "broken::numpy_sin(Tensor input, Tensor output) -> ()",
        .mutates_args = "",
        .kernel = tutorial_numpy_sin_kernel,
    });
    tt_tensor *x = NN(tt_arange(1, 7, 1, TT_F32)), *out = NN(tt_zeros(TT_SHAPE(6), TT_F32));
    tt_value args[] = {tt_v_tensor(x), tt_v_tensor(out)};
    tt_opcheck_report r;
    run_opcheck(op, args, &r, TT_EOPCHECK, NULL);
    assert_entry(&r, SCHEMA, TT_CHECK_FAILED,
                 "the kernel wrote argument 'output' (#2), which the schema does not mark "
                 "written (6 of its 6 elements changed, the first at flat index 0: 0 before, "
                 "0.841471 after); declare it (mutates_args = \"output\", or 'Tensor(a!) "
                 "output' in the schema), or write into a copy");
    ck_assert_error(TT_EOPCHECK, "opcheck broken::numpy_sin: schema failed: the kernel wrote "
                                 "argument 'output' (#2)");
    /* The caller's buffer was not the one written. */
    double v;
    OK(tt_get(out, &v, 0));
    ck_assert_double_eq(v, 0);
    tt_release(out);
    tt_release(x);
}
END_TEST

/* A write to one element of a larger input is found too, and counted. */
static tt_status writes_one(tt_frame *f)
{
    tt_tensor *x;
    tt_status st = tt_arg_tensor(f, 0, &x);
    if (!st)
        st = tt_set(x, 5.0, 1, 2);
    return st ? st : tt_return(f, 0, tt_mul_scalar(x, 2));
}

START_TEST(test_schema_one_element_written)
{
    tt_op *op = def(&(tt_custom_op_spec){
        .schema = "broken::writes_one(Tensor x) -> Tensor", .mutates_args = "",
        .kernel = writes_one, .fake = twice_kernel});
    tt_tensor *x = NN(tt_zeros(TT_SHAPE(3, 4), TT_F64));
    tt_tensor *xt = NN(tt_t(x)); /* (4, 3), transposed: flat order is x's logical order */
    tt_value args[] = {tt_v_tensor(xt)};
    tt_opcheck_report r;
    run_opcheck(op, args, &r, TT_EOPCHECK, NULL);
    /* xt[1][2] is element 1*3 + 2 = 5 in xt's logical order. */
    assert_entry(&r, SCHEMA, TT_CHECK_FAILED,
                 "the kernel wrote argument 'x' (#1), which the schema does not mark "
                 "written (1 of its 12 elements changed, the first at flat index 5: 0 before, "
                 "5 after)");
    tt_release(xt);
    tt_release(x);
}
END_TEST

/* Functional ops returning their input, or a view of it. */
START_TEST(test_schema_returns_input)
{
    tt_op *same = def(&(tt_custom_op_spec){
        .schema = "broken::same(Tensor x) -> Tensor", .mutates_args = "",
        .kernel = returns_input, .fake = returns_input});
    tt_op *view = def(&(tt_custom_op_spec){
        .schema = "broken::view(Tensor x) -> Tensor", .mutates_args = "",
        .kernel = returns_view, .fake = returns_view});
    tt_tensor *x = NN(tt_randn(TT_SHAPE(2, 3), TT_F32));
    tt_value args[] = {tt_v_tensor(x)};
    tt_opcheck_report r;
    run_opcheck(same, args, &r, TT_EOPCHECK, NULL);
    assert_entry(&r, SCHEMA, TT_CHECK_FAILED,
                 "output 0 is argument 'x' (#1) itself, but the schema declares no alias: "
                 "a custom op's outputs may not alias any inputs or other returns. Return a "
                 "new tensor (tt_clone of it), or declare the alias (Tensor(a) on the "
                 "argument and on the return)");
    ck_assert_error(TT_EOPCHECK, "opcheck broken::same: schema failed: output 0 is "
                                 "argument 'x' (#1) itself");
    /* The call itself refuses the alias, so the fake check cannot run the
     * real kernel either. */
    assert_entry(&r, FAKE, TT_CHECK_FAILED, "the op failed on the example arguments: "
                                            "broken::same: output 0 is argument 'x' (#1) itself");

    run_opcheck(view, args, &r, TT_EOPCHECK, NULL);
    assert_entry(&r, SCHEMA, TT_CHECK_FAILED,
                 "output 0 shares storage with argument 'x' (#1) (it is a view of it), but "
                 "the schema declares no alias");
    assert_entry(&r, FAKE, TT_CHECK_FAILED, "the op failed on the example arguments: "
                                            "broken::view: output 0 shares storage");
    tt_release(x);
}
END_TEST

/* Tensor(a) -> Tensor(a) promises a view; a copy breaks the promise. The
 * same op returning a view passes the schema check. */
START_TEST(test_schema_declared_alias)
{
    tt_op *copy = def(&(tt_custom_op_spec){
        .schema = "broken::alias(Tensor(a) x) -> Tensor(a)", .mutates_args = "",
        .kernel = twice_kernel, .fake = twice_kernel});
    tt_op *view = def(&(tt_custom_op_spec){
        .schema = "broken::alias_ok(Tensor(a) x) -> Tensor(a)", .mutates_args = "",
        .kernel = returns_view, .fake = returns_view});
    tt_tensor *x = NN(tt_randn(TT_SHAPE(4), TT_F32));
    tt_value args[] = {tt_v_tensor(x)};
    tt_opcheck_report r;
    run_opcheck(copy, args, &r, TT_EOPCHECK, &(tt_opcheck_opts){.checks = TT_OPCHECK_SCHEMA});
    assert_entry(&r, SCHEMA, TT_CHECK_FAILED,
                 "output 0 should alias argument 'x' per the schema ('Tensor(a)'), but it "
                 "does not share its storage");
    run_opcheck(view, args, &r, TT_OK, &(tt_opcheck_opts){.checks = TT_OPCHECK_SCHEMA});
    assert_entry(&r, SCHEMA, TT_CHECK_PASSED, NULL);
    tt_release(x);
}
END_TEST

START_TEST(test_schema_outputs_share_storage)
{
    tt_op *op = def(&(tt_custom_op_spec){
        .schema = "broken::pair(Tensor x) -> (Tensor, Tensor)", .mutates_args = "",
        .kernel = shared_outputs, .fake = shared_outputs});
    tt_tensor *x = NN(tt_randn(TT_SHAPE(2, 2), TT_F32));
    tt_value args[] = {tt_v_tensor(x)};
    tt_opcheck_report r;
    run_opcheck(op, args, &r, TT_EOPCHECK, NULL);
    assert_entry(&r, SCHEMA, TT_CHECK_FAILED,
                 "outputs 0 and 1 share storage: a custom op's outputs may not alias any "
                 "inputs or other returns; return each as its own tensor (tt_clone)");
    tt_release(x);
}
END_TEST

/* ============================================================ faketensor */

START_TEST(test_fake_wrong_shape_dtype)
{
    tt_op *flat = def(&(tt_custom_op_spec){
        .schema = "broken::flat(Tensor x) -> Tensor", .mutates_args = "",
        .kernel = twice_kernel, .fake = fake_flat});
    tt_op *f64 = def(&(tt_custom_op_spec){
        .schema = "broken::f64(Tensor x) -> Tensor", .mutates_args = "",
        .kernel = twice_kernel, .fake = fake_f64});
    tt_tensor *x = NN(tt_randn(TT_SHAPE(2, 3), TT_F32));
    tt_value args[] = {tt_v_tensor(x)};
    tt_opcheck_report r;
    run_opcheck(flat, args, &r, TT_EOPCHECK, NULL);
    assert_entry(&r, SCHEMA, TT_CHECK_PASSED, NULL);
    assert_entry(&r, FAKE, TT_CHECK_FAILED,
                 "output 0: shape differs: the real kernel gives [2, 3], the fake kernel [6]");
    ck_assert_error(TT_EOPCHECK, "opcheck broken::flat: faketensor failed: output 0: shape "
                                 "differs");
    run_opcheck(f64, args, &r, TT_EOPCHECK, NULL);
    assert_entry(&r, FAKE, TT_CHECK_FAILED,
                 "output 0: dtype differs: the real kernel gives f32, the fake kernel f64");
    tt_release(x);
}
END_TEST

/* The tutorial's fake kernel without .permute(2, 0, 1): right shape and
 * dtype, wrong layout. Caught on CPU, with both stride tuples. */
START_TEST(test_fake_wrong_strides)
{
    redefine_crop(tutorial_crop_fake_nopermute);
    tt_tensor *pic = NN(tt_randn(TT_SHAPE(3, 64, 64), TT_F32));
    tt_value args[] = {tt_v_tensor(pic), tt_v_ints(TT_INTS(0, 0, 10, 10))};
    tt_opcheck_report r;
    run_opcheck(crop_op, args, &r, TT_EOPCHECK, NULL);
    assert_entry(&r, SCHEMA, TT_CHECK_PASSED, NULL);
    assert_entry(&r, AUTOGRAD, TT_CHECK_NOT_EXERCISED, NULL);
    assert_entry(&r, FAKE, TT_CHECK_FAILED,
                 "output 0: strides differ: the real kernel gives (1, 30, 3), the fake "
                 "kernel (100, 10, 1) (shape [3, 10, 10]; first difference in dim 0). The "
                 "fake kernel must return the real kernel's memory layout: if the real "
                 "kernel returns a permuted view, permute the fake output the same way");
    ck_assert_error(TT_EOPCHECK, "opcheck mylib::crop: faketensor failed: output 0: strides "
                                 "differ: the real kernel gives (1, 30, 3), the fake kernel "
                                 "(100, 10, 1)");
    tt_release(pic);
}
END_TEST

/* A one-pixel-wide crop: sizes of 1 make any stride right in that dim, so
 * only the other dims are compared. */
START_TEST(test_fake_strides_size_one)
{
    tt_tensor *pic = NN(tt_randn(TT_SHAPE(1, 8, 8), TT_F32));
    tt_value args[] = {tt_v_tensor(pic), tt_v_ints(TT_INTS(2, 2, 3, 7))}; /* (1, 5, 1) */
    tt_opcheck_report r;
    redefine_crop(tutorial_crop_fake_nopermute);
    /* Real (1, 5, 1) strides (1, 1, 1); fake contiguous (5, 1, 1): only
     * dim 1 counts, and there both are 1. */
    run_opcheck(crop_op, args, &r, TT_OK, &(tt_opcheck_opts){.checks = TT_OPCHECK_FAKETENSOR});
    assert_entry(&r, FAKE, TT_CHECK_PASSED, NULL);
    /* Three channels, one row: (3, 1, 4), real strides (1, 12, 3), fake
     * (4, 4, 1). Dim 1 is skipped; dim 0 is not. */
    tt_tensor *rgb = NN(tt_randn(TT_SHAPE(3, 8, 8), TT_F32));
    tt_value row[] = {tt_v_tensor(rgb), tt_v_ints(TT_INTS(0, 0, 4, 1))};
    run_opcheck(crop_op, row, &r, TT_EOPCHECK,
                &(tt_opcheck_opts){.checks = TT_OPCHECK_FAKETENSOR});
    assert_entry(&r, FAKE, TT_CHECK_FAILED, "the real kernel gives (1, 12, 3), the fake "
                                            "kernel (4, 4, 1) (shape [3, 1, 4]; first "
                                            "difference in dim 0)");
    tt_release(rgb);
    tt_release(pic);
}
END_TEST

START_TEST(test_fake_offset_and_count)
{
    tt_op *off = def(&(tt_custom_op_spec){
        .schema = "broken::offset(Tensor x) -> Tensor", .mutates_args = "",
        .kernel = offset_kernel, .fake = twice_kernel});
    tt_op *list = def(&(tt_custom_op_spec){
        .schema = "broken::copies(Tensor x) -> Tensor[]", .mutates_args = "",
        .kernel = two_copies, .fake = three_copies});
    tt_tensor *x = NN(tt_randn(TT_SHAPE(5), TT_F32));
    tt_value args[] = {tt_v_tensor(x)};
    tt_opcheck_report r;
    run_opcheck(off, args, &r, TT_EOPCHECK, NULL);
    assert_entry(&r, FAKE, TT_CHECK_FAILED,
                 "output 0: storage offset differs: the real kernel gives 1, the fake kernel 0");
    run_opcheck(list, args, &r, TT_EOPCHECK,
                &(tt_opcheck_opts){.checks = TT_OPCHECK_FAKETENSOR});
    assert_entry(&r, FAKE, TT_CHECK_FAILED,
                 "output 0: the real kernel returns 2 tensors, the fake kernel 3");
    tt_release(x);
}
END_TEST

/* tt_data on a fake tensor fails, and the report says the fake kernel
 * read data. */
START_TEST(test_fake_reads_data)
{
    redefine_crop(crop_fake_peeks);
    tt_tensor *pic = NN(tt_randn(TT_SHAPE(3, 16, 16), TT_F32));
    tt_value args[] = {tt_v_tensor(pic), tt_v_ints(TT_INTS(0, 0, 4, 4))};
    tt_opcheck_report r;
    run_opcheck(crop_op, args, &r, TT_EOPCHECK, NULL);
    assert_entry(&r, SCHEMA, TT_CHECK_PASSED, NULL);
    assert_entry(&r, FAKE, TT_CHECK_FAILED,
                 "the fake kernel read tensor data, which fake tensors do not have; a fake "
                 "kernel may only use sizes, strides and dtypes (mylib::crop: the fake kernel "
                 "read tensor data");
    /* A trace calls the fake kernel too: there the read is a graph break
     * naming the op and the line of the read. */
    assert_entry(&r, AOT, TT_CHECK_FAILED, "tracing the op symbolically and compiling it "
                                           "failed: Graph break: data read\n  Explanation: "
                                           "mylib::crop: the fake kernel read tensor data "
                                           "(tt_data of fake f32[");
    ck_assert_ptr_nonnull(strstr(r.entries[AOT].message, " in crop_fake_peeks())"));
    ck_assert_ptr_null(strstr(r.entries[AOT].message, "tt_size_le"));
    tt_release(pic);
}
END_TEST

/* Comparing a symbolic size with <= passes every eager and fake-tensor
 * check and fails only in the symbolic trace, with the op's own (wrong)
 * message; the report adds why that happens. */
START_TEST(test_aot_plain_size_compare)
{
    redefine_crop(crop_fake_plain_compare);
    tt_tensor *pic = NN(tt_randn(TT_SHAPE(3, 16, 16), TT_F32));
    tt_value args[] = {tt_v_tensor(pic), tt_v_ints(TT_INTS(0, 0, 4, 4))};
    tt_opcheck_report r;
    run_opcheck(crop_op, args, &r, TT_EOPCHECK, NULL);
    assert_entry(&r, SCHEMA, TT_CHECK_PASSED, NULL);
    assert_entry(&r, FAKE, TT_CHECK_PASSED, NULL);
    assert_entry(&r, AOT, TT_CHECK_FAILED,
                 "tracing the op symbolically and compiling it failed: mylib::crop: argument "
                 "'box' (#2) must lie in the image. The eager call on the same arguments "
                 "succeeded; in this trace sizes are symbols (s0, s1, ...), so code that "
                 "compares sizes must use tt_size_eq/tt_size_lt/tt_size_le, not ==, < or <=");
    tt_release(pic);
}
END_TEST

/* No fake kernel for an op that returns tensors: the fake check says
 * how to register one (and the trace of aot_dispatch_dynamic breaks). */
START_TEST(test_fake_missing)
{
    tt_op *op = def(&(tt_custom_op_spec){
        .schema = "broken::nofake(Tensor x) -> Tensor", .mutates_args = "",
        .kernel = twice_kernel});
    tt_tensor *x = NN(tt_randn(TT_SHAPE(3), TT_F32));
    tt_value args[] = {tt_v_tensor(x)};
    tt_opcheck_report r;
    run_opcheck(op, args, &r, TT_EOPCHECK, NULL);
    assert_entry(&r, SCHEMA, TT_CHECK_PASSED, NULL);
    assert_entry(&r, FAKE, TT_CHECK_FAILED,
                 "broken::nofake returns tensors but has no fake kernel, so it cannot be "
                 "traced (every torch.compile-style trace of code calling it breaks there). "
                 "Register one with tt_register_fake(lib, \"broken::nofake\", fn)");
    assert_entry(&r, AOT, TT_CHECK_FAILED, "tracing the op symbolically and compiling it "
                                           "failed: Graph break: op without a fake kernel");
    ck_assert_ptr_null(strstr(r.entries[AOT].message, "tt_size_le"));
    tt_release(x);
}
END_TEST

/* A data-dependent output size (a dynamic-size symbol) matches any real
 * size. */
START_TEST(test_fake_dynamic_size)
{
    tt_op *op = def(&(tt_custom_op_spec){
        .schema = "broken::nonzero(Tensor x) -> Tensor", .mutates_args = "",
        .kernel = tt_test_nonzero_kernel, .fake = tt_test_nonzero_fake});
    tt_tensor *x = NN(tt_from_data(TT_SHAPE(2, 3), TT_F32,
                                   (const float[]){0, 1, 0, 2, 3, 0}));
    tt_value args[] = {tt_v_tensor(x)};
    tt_opcheck_report r;
    run_opcheck(op, args, &r, TT_OK, NULL);
    assert_entry(&r, SCHEMA, TT_CHECK_PASSED, NULL);
    assert_entry(&r, FAKE, TT_CHECK_PASSED, NULL);
    assert_entry(&r, AOT, TT_CHECK_PASSED, NULL);
    tt_release(x);
}
END_TEST

/* ================================================= autograd_registration */

START_TEST(test_autograd_missing)
{
    tt_op *op = def(&(tt_custom_op_spec){
        .schema = "broken::twice(Tensor x, float scale=1.0) -> Tensor", .mutates_args = "",
        .kernel = twice_kernel, .fake = twice_kernel});
    tt_tensor *x = randn_grad(TT_SHAPE(4), TT_F32, true);
    tt_value args[] = {tt_v_tensor(x)};
    tt_opcheck_report r;
    run_opcheck(op, args, &r, TT_EOPCHECK, NULL);
    assert_entry(&r, SCHEMA, TT_CHECK_PASSED, NULL);
    assert_entry(&r, AUTOGRAD, TT_CHECK_FAILED,
                 "argument 'x' (#1) requires grad, but broken::twice has no autograd "
                 "registration, so it will fail in training (calling it on inputs that "
                 "require grad is TT_EAUTOGRAD). Register a backward with "
                 "tt_register_autograd(lib, \"broken::twice\", backward, setup_context)");
    assert_entry(&r, FAKE, TT_CHECK_PASSED, NULL);
    /* Without a backward there is none to check: the forward is compared. */
    assert_entry(&r, AOT, TT_CHECK_PASSED, NULL);
    /* What the report predicts is what training does. */
    tt_tensor *y = tt_call(op, tt_v_tensor(x));
    ck_assert_ptr_null(y);
    ck_assert_error(TT_EAUTOGRAD, "broken::twice: argument 'x' requires grad, but the op "
                                  "has no autograd registration");
    tt_release(x);
}
END_TEST

/* Outputs marked non-differentiable need no backward: training through
 * the op works, and autograd_registration must not predict a failure. */
START_TEST(test_autograd_nondifferentiable)
{
    tt_op *op = def(&(tt_custom_op_spec){
        .schema = "broken::mark(Tensor x) -> Tensor", .mutates_args = "",
        .kernel = twice_kernel, .fake = twice_kernel, .nondifferentiable = true});
    tt_tensor *x = randn_grad(TT_SHAPE(4), TT_F32, true);
    tt_tensor *y = NN(tt_call(op, tt_v_tensor(x)));
    ck_assert(!tt_requires_grad(y));
    tt_value args[] = {tt_v_tensor(x)};
    tt_opcheck_report r;
    run_opcheck(op, args, &r, TT_OK, NULL);
    assert_entry(&r, AUTOGRAD, TT_CHECK_PASSED, NULL);
    tt_release(y);
    tt_release(x);
}
END_TEST

/* ================================================== aot_dispatch_dynamic */

/* A kernel that depends on a global counter gives one thing eagerly and
 * another in the compiled replay. */
START_TEST(test_aot_global_state)
{
    tt_op *op = def(&(tt_custom_op_spec){
        .schema = "broken::counter(Tensor x) -> Tensor", .mutates_args = "",
        .kernel = counter_kernel, .fake = counter_kernel});
    tt_tensor *x = NN(tt_zeros(TT_SHAPE(2, 3), TT_F32));
    tt_value args[] = {tt_v_tensor(x)};
    tt_opcheck_report r;
    run_opcheck(op, args, &r, TT_EOPCHECK, NULL);
    assert_entry(&r, SCHEMA, TT_CHECK_PASSED, NULL);
    assert_entry(&r, AUTOGRAD, TT_CHECK_NOT_EXERCISED, NULL);
    assert_entry(&r, FAKE, TT_CHECK_PASSED, NULL);
    /* Calls: schema 0, faketensor 1, eager 2, replay 3. */
    assert_entry(&r, AOT, TT_CHECK_FAILED,
                 "output 0 differs between eager and the compiled replay of a symbolic "
                 "trace: largest absolute difference 1 at flat index 0 (eager 2, compiled 3; "
                 "atol 1e-05, rtol 1.3e-06). The kernel may depend on something other than "
                 "its inputs (global state, a counter, uninitialized memory)");
    ck_assert_error(TT_EOPCHECK, "opcheck broken::counter: aot_dispatch_dynamic failed: "
                                 "output 0 differs");
    tt_release(x);
}
END_TEST

/* A written argument after a tensor list is compared (the list's tensors
 * come first among the traced function's inputs). */
START_TEST(test_aot_written_after_list)
{
    tt_op *op = def(&(tt_custom_op_spec){
        .schema = "broken::list_into(Tensor[] xs, Tensor(a!) out) -> ()",
        .mutates_args = "out", .kernel = list_into});
    tt_tensor *x = NN(tt_zeros(TT_SHAPE(3), TT_F32)), *o = NN(tt_zeros(TT_SHAPE(3), TT_F32));
    tt_value args[] = {tt_v_tensors(1, (tt_tensor *[]){x}), tt_v_tensor(o)};
    tt_opcheck_report r;
    run_opcheck(op, args, &r, TT_EOPCHECK,
                &(tt_opcheck_opts){.checks = TT_OPCHECK_AOT_DISPATCH_DYNAMIC});
    assert_entry(&r, AOT, TT_CHECK_FAILED,
                 "written argument 0 differs between eager and the compiled replay of a "
                 "symbolic trace: largest absolute difference 1 at flat index 0 (eager 0, "
                 "compiled 1;");
    tt_release(o);
    tt_release(x);
}
END_TEST

/* The report names the largest difference over all elements, not the
 * first one out of tolerance. */
START_TEST(test_aot_largest_difference)
{
    tt_op *op = def(&(tt_custom_op_spec){
        .schema = "broken::scaling(Tensor x) -> Tensor", .mutates_args = "",
        .kernel = scaling_kernel, .fake = scaling_kernel});
    tt_tensor *x = NN(tt_from_data(TT_SHAPE(2, 2), TT_F64, (const double[]){1, -5, 2, 0}));
    tt_value args[] = {tt_v_tensor(x)};
    tt_opcheck_report r;
    /* Only this check: the eager call is the first (x * 1), the replay the
     * second (x * 2). */
    run_opcheck(op, args, &r, TT_EOPCHECK,
                &(tt_opcheck_opts){.checks = TT_OPCHECK_AOT_DISPATCH_DYNAMIC});
    assert_entry(&r, AOT, TT_CHECK_FAILED,
                 "output 0 differs between eager and the compiled replay of a symbolic "
                 "trace: largest absolute difference 5 at flat index 1 (eager -5, compiled "
                 "-10; atol 1e-05, rtol 1.3e-06)");
    tt_release(x);
}
END_TEST

/* With inputs that require grad and a backward, gradients are compared
 * too: a backward that depends on global state differs in the replay. */
static tt_status counter_setup(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                               const tt_value *out, int nout)
{
    (void)ctx, (void)in, (void)nin, (void)out, (void)nout;
    return TT_OK;
}

static tt_status counter_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                  tt_tensor **gi, int ni)
{
    (void)ctx, (void)ng, (void)ni;
    gi[0] = tt_mul_scalar(g[0], (double)++calls);
    return gi[0] ? TT_OK : tt_errcode();
}

START_TEST(test_aot_gradient_differs)
{
    tt_op *op = def(&(tt_custom_op_spec){
        .schema = "broken::grad_counter(Tensor x) -> Tensor", .mutates_args = "",
        .kernel = twice_kernel, .fake = twice_kernel, .backward = counter_backward,
        .setup_context = counter_setup});
    tt_tensor *x = randn_grad(TT_SHAPE(3), TT_F64, true);
    tt_value args[] = {tt_v_tensor(x)};
    tt_opcheck_report r;
    run_opcheck(op, args, &r, TT_EOPCHECK, NULL);
    assert_entry(&r, AUTOGRAD, TT_CHECK_PASSED, NULL);
    /* The traced backward multiplies by the constant it saw when tracing
     * (2); eager used 1. */
    assert_entry(&r, AOT, TT_CHECK_FAILED,
                 "gradient 0 differs between eager and the compiled replay of a symbolic "
                 "trace: largest absolute difference 1 at flat index 0 (eager 1, compiled 2;");
    tt_release(x);
}
END_TEST

/* ================================================================ options */

/* checks selects; the others are "not run", with no message. */
START_TEST(test_checks_mask)
{
    tt_op *op = def(&(tt_custom_op_spec){
        .schema = "broken::counter(Tensor x) -> Tensor", .mutates_args = "",
        .kernel = counter_kernel, .fake = counter_kernel});
    tt_tensor *x = NN(tt_zeros(TT_SHAPE(3), TT_F32));
    tt_value args[] = {tt_v_tensor(x)};
    tt_opcheck_report r;
    run_opcheck(op, args, &r, TT_OK,
                &(tt_opcheck_opts){.checks = TT_OPCHECK_SCHEMA | TT_OPCHECK_FAKETENSOR});
    assert_entry(&r, SCHEMA, TT_CHECK_PASSED, NULL);
    assert_entry(&r, AUTOGRAD, TT_CHECK_NOT_RUN, NULL);
    assert_entry(&r, FAKE, TT_CHECK_PASSED, NULL);
    assert_entry(&r, AOT, TT_CHECK_NOT_RUN, NULL);
    ck_assert_str_eq(r.entries[AOT].message, "");
    ck_assert_str_eq(r.entries[AOT].check, "aot_dispatch_dynamic");
    ck_assert_int_eq(calls, 2); /* schema and faketensor ran the kernel once each */
    run_opcheck(op, args, &r, TT_EOPCHECK,
                &(tt_opcheck_opts){.checks = TT_OPCHECK_AOT_DISPATCH_DYNAMIC});
    assert_entry(&r, SCHEMA, TT_CHECK_NOT_RUN, NULL);
    assert_entry(&r, AUTOGRAD, TT_CHECK_NOT_RUN, NULL);
    assert_entry(&r, FAKE, TT_CHECK_NOT_RUN, NULL);
    assert_entry(&r, AOT, TT_CHECK_FAILED, "largest absolute difference 1 at flat index 0 "
                                           "(eager 2, compiled 3;");
    /* 0 means all. */
    run_opcheck(op, args, &r, TT_EOPCHECK, &(tt_opcheck_opts){.checks = 0});
    assert_entry(&r, SCHEMA, TT_CHECK_PASSED, NULL);
    assert_entry(&r, AUTOGRAD, TT_CHECK_NOT_EXERCISED, NULL);
    tt_release(x);
}
END_TEST

/* raise_exception stops at the first failure; the status carries its
 * paragraph. Without it every check runs, and the status still names the
 * first failure. */
START_TEST(test_raise_exception)
{
    tt_op *op = def(&(tt_custom_op_spec){
        .schema = "broken::bad2(Tensor x) -> Tensor", .mutates_args = "",
        .kernel = returns_input, .fake = fake_f64});
    tt_op *fake_only = def(&(tt_custom_op_spec){
        .schema = "broken::f64(Tensor x) -> Tensor", .mutates_args = "",
        .kernel = twice_kernel, .fake = fake_f64});
    tt_tensor *x = NN(tt_randn(TT_SHAPE(3), TT_F32));
    tt_value args[] = {tt_v_tensor(x)};
    tt_opcheck_report r;
    run_opcheck(op, args, &r, TT_EOPCHECK, &(tt_opcheck_opts){.raise_exception = true});
    assert_entry(&r, SCHEMA, TT_CHECK_FAILED, "output 0 is argument 'x' (#1) itself");
    assert_entry(&r, AUTOGRAD, TT_CHECK_NOT_RUN, NULL);
    assert_entry(&r, FAKE, TT_CHECK_NOT_RUN, NULL);
    assert_entry(&r, AOT, TT_CHECK_NOT_RUN, NULL);
    char want[1200];
    snprintf(want, sizeof want, "opcheck broken::bad2: schema failed: %s",
             r.entries[SCHEMA].message);
    ck_assert_error(TT_EOPCHECK, want);

    run_opcheck(op, args, &r, TT_EOPCHECK, NULL);
    assert_entry(&r, SCHEMA, TT_CHECK_FAILED, "output 0 is argument 'x' (#1) itself");
    assert_entry(&r, AUTOGRAD, TT_CHECK_NOT_EXERCISED, NULL);
    assert_entry(&r, FAKE, TT_CHECK_FAILED, "the op failed on the example arguments: "
                                            "broken::bad2: output 0 is argument 'x' (#1) itself");
    ck_assert_error(TT_EOPCHECK, want);

    /* The first failure further down: the checks before it ran. */
    run_opcheck(fake_only, args, &r, TT_EOPCHECK, &(tt_opcheck_opts){.raise_exception = true});
    assert_entry(&r, SCHEMA, TT_CHECK_PASSED, NULL);
    assert_entry(&r, AUTOGRAD, TT_CHECK_NOT_EXERCISED, NULL);
    assert_entry(&r, FAKE, TT_CHECK_FAILED, "dtype differs");
    assert_entry(&r, AOT, TT_CHECK_NOT_RUN, NULL);
    ck_assert_error(TT_EOPCHECK, "opcheck broken::f64: faketensor failed: output 0: dtype "
                                 "differs: the real kernel gives f32, the fake kernel f64");
    tt_release(x);
}
END_TEST

/* A kernel off by 1e-4 between eager and replay: within atol 1e-3, not
 * within the default 1e-5; rtol is honoured too. */
START_TEST(test_tolerances)
{
    tt_op *op = def(&(tt_custom_op_spec){
        .schema = "broken::drift(Tensor x) -> Tensor", .mutates_args = "",
        .kernel = counter_kernel, .fake = counter_kernel});
    step = 1e-4;
    /* Values in [1, 2): rtol 1e-3 allows at least 1e-3. */
    tt_tensor *u = NN(tt_rand(TT_SHAPE(4, 5), TT_F64)), *x = NN(tt_add_scalar(u, 1));
    tt_value args[] = {tt_v_tensor(x)};
    const unsigned aot = TT_OPCHECK_AOT_DISPATCH_DYNAMIC;
    tt_opcheck_report r;
    run_opcheck(op, args, &r, TT_EOPCHECK, &(tt_opcheck_opts){.checks = aot});
    assert_entry(&r, AOT, TT_CHECK_FAILED, "largest absolute difference 0.0001 at flat "
                                           "index");
    assert_entry(&r, AOT, TT_CHECK_FAILED, "atol 1e-05, rtol 1.3e-06)");
    run_opcheck(op, args, &r, TT_OK, &(tt_opcheck_opts){.checks = aot, .atol = 1e-3});
    assert_entry(&r, AOT, TT_CHECK_PASSED, NULL);
    run_opcheck(op, args, &r, TT_OK,
                &(tt_opcheck_opts){.checks = aot, .atol = 1e-5, .rtol = 1e-3});
    run_opcheck(op, args, &r, TT_EOPCHECK,
                &(tt_opcheck_opts){.checks = aot, .atol = 1e-5, .rtol = 1e-6});
    assert_entry(&r, AOT, TT_CHECK_FAILED, "atol 1e-05, rtol 1e-06)");
    tt_release(x);
    tt_release(u);
}
END_TEST

/* ======================================================= caller untouched */

/* numpy_sin writes output, crop trains: the caller's tensors keep their
 * values, versions, requires_grad and .grad. */
START_TEST(test_caller_untouched)
{
    tt_tensor *x = randn_grad(TT_SHAPE(4, 5), TT_F32, true);
    tt_tensor *out = NN(tt_full(TT_SHAPE(4, 5), 7, TT_F32));
    tt_tensor *g = NN(tt_full(TT_SHAPE(4, 5), 3, TT_F32));
    OK(tt_set_grad(x, g));
    double *xv = tt_test_values(x);
    uint64_t xver = tt_version(x), over = tt_version(out);
    int64_t live = tt_live_tensors();
    /* x requires grad and numpy_sin has no autograd: that check fails,
     * the others run on copies. */
    tt_value args[] = {tt_v_tensor(x), tt_v_tensor(out)};
    tt_opcheck_report r;
    run_opcheck(sin_op, args, &r, TT_EOPCHECK, NULL);
    assert_entry(&r, SCHEMA, TT_CHECK_PASSED, NULL);
    assert_entry(&r, AUTOGRAD, TT_CHECK_FAILED, "argument 'input' (#1) requires grad, but "
                                                "mylib::numpy_sin mutates argument 'output'");
    assert_entry(&r, FAKE, TT_CHECK_PASSED, NULL);
    assert_entry(&r, AOT, TT_CHECK_PASSED, NULL);
    double *xv2 = tt_test_values(x), *ov = tt_test_values(out);
    for (int i = 0; i < 20; i++) {
        ck_assert_double_eq(xv2[i], xv[i]);
        ck_assert_double_eq(ov[i], 7);
    }
    ck_assert_uint_eq(tt_version(x), xver);
    ck_assert_uint_eq(tt_version(out), over);
    /* No copy or reference is left behind (an extra reference on x or out
     * would also fail the fixture's zero-live check at the end). */
    ck_assert_int_eq(tt_live_tensors(), live);
    ck_assert(tt_requires_grad(x));
    ck_assert(!tt_requires_grad(out));
    ck_assert_ptr_null(tt_get_grad(out));
    tt_tensor *g2 = NN(tt_get_grad(x));
    double *gv = tt_test_values(g2);
    for (int i = 0; i < 20; i++)
        ck_assert_double_eq(gv[i], 3);
    free(gv);
    free(xv);
    free(xv2);
    free(ov);
    tt_release(g2);

    /* crop with its backward in the trace: pic's .grad stays unset. */
    tt_tensor *pic = randn_grad(TT_SHAPE(3, 20, 20), TT_F64, true);
    double *pv = tt_test_values(pic);
    uint64_t pver = tt_version(pic);
    tt_value cargs[] = {tt_v_tensor(pic), tt_v_ints(TT_INTS(1, 2, 11, 12))};
    run_opcheck(crop_op, cargs, &r, TT_OK, NULL);
    ck_assert_ptr_null(tt_get_grad(pic));
    ck_assert(tt_requires_grad(pic) && tt_is_leaf(pic));
    ck_assert_uint_eq(tt_version(pic), pver);
    double *pv2 = tt_test_values(pic);
    for (int i = 0; i < 3 * 20 * 20; i++)
        ck_assert_double_eq(pv2[i], pv[i]);
    free(pv);
    free(pv2);
    tt_release(pic);
    tt_release(g);
    tt_release(out);
    tt_release(x);
}
END_TEST

/* Non-contiguous inputs are checked in their own layout: the copies keep
 * the strides, so crop's transposed picture still passes. */
START_TEST(test_noncontiguous_inputs)
{
    tt_tensor *base = NN(tt_randn(TT_SHAPE(3, 32, 32), TT_F32));
    tt_tensor *pic = NN(tt_transpose(base, 1, 2));
    tt_value args[] = {tt_v_tensor(pic), tt_v_ints(TT_INTS(2, 3, 12, 20))};
    tt_opcheck_report r;
    run_opcheck(crop_op, args, &r, TT_OK, NULL);
    tt_release(pic);
    tt_release(base);
}
END_TEST

/* ================================================================ reports */

START_TEST(test_report_text)
{
    tt_tensor *pic = NN(tt_randn(TT_SHAPE(3, 64, 64), TT_F32));
    tt_value args[] = {tt_v_tensor(pic), tt_v_ints(TT_INTS(0, 0, 10, 10))};
    tt_opcheck_report r;
    run_opcheck(crop_op, args, &r, TT_OK, NULL);
    char *text = tt_opcheck_report_to_text(&r);
    ck_assert_ptr_nonnull(text);
    ck_assert_str_eq(text,
                     "opcheck mylib::crop: 3 passed, 0 failed, 1 not exercised, 0 not run\n"
                     "  schema                 passed\n"
                     "  autograd_registration  not exercised: no tensor argument requires "
                     "grad, so training was not exercised; pass an input with requires_grad "
                     "to check it\n"
                     "  faketensor             passed\n"
                     "  aot_dispatch_dynamic   passed\n");
    /* print writes the same text. */
    FILE *f = tmpfile();
    ck_assert_ptr_nonnull(f);
    OK(tt_opcheck_report_print(&r, f));
    rewind(f);
    char buf[4096] = {0};
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    ck_assert_uint_eq(n, strlen(text));
    ck_assert_str_eq(buf, text);
    free(text);

    /* A failure and a not-run check. */
    tt_op *op = def(&(tt_custom_op_spec){
        .schema = "broken::same(Tensor x) -> Tensor", .mutates_args = "",
        .kernel = returns_input, .fake = returns_input});
    tt_value xa[] = {tt_v_tensor(pic)};
    run_opcheck(op, xa, &r, TT_EOPCHECK, &(tt_opcheck_opts){.raise_exception = true});
    text = tt_opcheck_report_to_text(&r);
    ck_assert_ptr_nonnull(text);
    ck_assert_msg(strncmp(text, "opcheck broken::same: 0 passed, 1 failed, 0 not exercised, "
                                "3 not run\n  schema                 FAILED: output 0 is "
                                "argument 'x' (#1) itself",
                          strlen("opcheck broken::same: 0 passed, 1 failed, 0 not exercised, "
                                 "3 not run\n  schema                 FAILED: output 0 is "
                                 "argument 'x' (#1) itself")) == 0,
                  "%s", text);
    ck_assert_ptr_nonnull(strstr(text, "\n  autograd_registration  not run\n"
                                       "  faketensor             not run\n"
                                       "  aot_dispatch_dynamic   not run\n"));
    free(text);

    /* NULL report. */
    ck_assert_ptr_null(tt_opcheck_report_to_text(NULL));
    ck_assert_error(TT_EINVAL, "tt_opcheck_report_to_text: argument 'report' is NULL");
    tt_clear_error();
    ck_assert_int_eq(tt_opcheck_report_print(NULL, stdout), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "argument 'report' is NULL");
    tt_release(pic);
}
END_TEST

/* ============================================================ error paths */

START_TEST(test_errors)
{
    tt_tensor *pic = NN(tt_randn(TT_SHAPE(3, 8, 8), TT_F32));
    tt_opcheck_report r;
    tt_value args[] = {tt_v_tensor(pic), tt_v_ints(TT_INTS(0, 0, 2, 2)), tt_v_int(1)};

    ck_assert_int_eq(tt_opcheck(NULL, args, 2, NULL, &r), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_opcheck: argument 'op' is NULL");

    ck_assert_int_eq(tt_opcheck(crop_op, args, 3, NULL, &r), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_opcheck: mylib::crop takes at most 2 arguments, got 3");

    ck_assert_int_eq(tt_opcheck(crop_op, args, 1, NULL, &r), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_opcheck: mylib::crop: missing argument 'box' (#2)");

    ck_assert_int_eq(tt_opcheck(crop_op, NULL, 2, NULL, &r), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_opcheck: mylib::crop: bad argument list (2 arguments)");
    ck_assert_int_eq(tt_opcheck(crop_op, args, -1, NULL, &r), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "bad argument list (-1 arguments)");

    /* A default fills a missing trailing argument; report may be NULL. */
    tt_op *op = def(&(tt_custom_op_spec){
        .schema = "broken::twice(Tensor x, float scale=1.0) -> Tensor", .mutates_args = "",
        .kernel = twice_kernel, .fake = twice_kernel});
    OK(tt_opcheck(op, args, 1, NULL, NULL));

    /* The op's library was freed: the handle stays valid, the op is gone. */
    broken = tt_library_free(broken);
    ck_assert_int_eq(tt_opcheck(op, args, 1, NULL, &r), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_opcheck: argument 'op' is an op whose library was freed");
    tt_release(pic);
}
END_TEST

/* Arguments the op refuses: every check reports that the op failed on
 * them, with the op's own message. */
START_TEST(test_op_fails_on_arguments)
{
    tt_tensor *pic = NN(tt_randn(TT_SHAPE(3, 8, 8), TT_F32));
    tt_value args[] = {tt_v_tensor(pic), tt_v_ints(TT_INTS(0, 0, 20, 2))};
    tt_opcheck_report r;
    run_opcheck(crop_op, args, &r, TT_EOPCHECK, NULL);
    assert_entry(&r, SCHEMA, TT_CHECK_FAILED,
                 "the op failed on the example arguments: mylib::crop: argument 'box' (#2) "
                 "= (0, 0, 20, 2) must lie in the 8x8 image");
    assert_entry(&r, FAKE, TT_CHECK_FAILED, "the op failed on the example arguments");
    assert_entry(&r, AOT, TT_CHECK_FAILED, "the op failed when run eagerly: mylib::crop: "
                                           "argument 'box' (#2) = (0, 0, 20, 2) must lie in "
                                           "the 8x8 image");
    tt_release(pic);
}
END_TEST

/* Out of memory at every allocation of an opcheck run: TT_ENOMEM with a
 * message saying so (never a check failed on its account), nothing
 * leaked, no crash. */
START_TEST(test_opcheck_oom)
{
    tt_op *op = def(&(tt_custom_op_spec){
        .schema = "broken::twice(Tensor x) -> Tensor", .mutates_args = "",
        .kernel = twice_kernel, .fake = twice_kernel});
    tt_tensor *x = NN(tt_randn(TT_SHAPE(2, 3), TT_F32));
    tt_value args[] = {tt_v_tensor(x)};
    int64_t before = tt_debug_alloc_count();
    OK(tt_opcheck(op, args, 1, NULL, NULL));
    int64_t total = tt_debug_alloc_count() - before;
    ck_assert_int_gt(total, 0);
    for (int64_t n = 1; n <= total; n++) {
        tt_opcheck_report r;
        tt_debug_fail_alloc(n);
        tt_status st = tt_opcheck(op, args, 1, NULL, &r);
        tt_debug_fail_alloc(0);
        /* Never a false finding: a check that ran out of memory makes
         * the call fail with TT_ENOMEM, and the message says so. */
        ck_assert_msg(st == TT_OK || st == TT_ENOMEM, "allocation %lld: %s: %s",
                      (long long)n, tt_status_name(st), tt_errmsg());
        if (st == TT_ENOMEM)
            ck_assert_msg(strstr(tt_errmsg(), "out of memory") != NULL,
                          "allocation %lld: %s", (long long)n, tt_errmsg());
        tt_clear_error();
        ck_assert_msg(tt_live_tensors() == 1, "allocation %lld: %lld tensors left (%s)",
                      (long long)n, (long long)tt_live_tensors(), tt_status_name(st));
    }
    tt_release(x);
}
END_TEST

/* The fake kernel must alias as the real one does: a declared view whose
 * fake kernel returns a new tensor fails faketensor and checked mode,
 * naming the output and the argument. */
START_TEST(test_fake_aliasing_differs)
{
    tt_op *op = def(&(tt_custom_op_spec){
        .schema = "broken::view_fake_copy(Tensor(a) x) -> Tensor(a)", .mutates_args = "",
        .kernel = returns_view, .fake = twice_kernel});
    tt_tensor *x = NN(tt_randn(TT_SHAPE(4), TT_F32));
    tt_value args[] = {tt_v_tensor(x)};
    tt_opcheck_report r;
    run_opcheck(op, args, &r, TT_EOPCHECK, NULL);
    assert_entry(&r, SCHEMA, TT_CHECK_PASSED, NULL);
    assert_entry(&r, FAKE, TT_CHECK_FAILED,
                 "output 0: aliasing differs: the real kernel's output shares storage with "
                 "argument 'x' (#1), the fake kernel's shares storage with no argument (a new "
                 "tensor). The fake kernel must return views where the real kernel does, and "
                 "new tensors where it does");
    tt_set_checked_mode(true);
    ck_assert_ptr_null(tt_call(op, tt_v_tensor(x)));
    ck_assert_error(TT_EOPCHECK, "broken::view_fake_copy: checked mode (TT_CHECK_OPS): output 0: "
                                 "aliasing differs: the real kernel's output shares storage "
                                 "with argument 'x' (#1), the fake kernel's shares storage with "
                                 "no argument");
    tt_set_checked_mode(false);
    tt_release(x);
}
END_TEST

/* Bits in .checks that name no check are refused, not ignored. */
START_TEST(test_unknown_check_bits)
{
    tt_tensor *x = NN(tt_randn(TT_SHAPE(3), TT_F32));
    tt_value args[] = {tt_v_tensor(x)};
    tt_opcheck_report r;
    const tt_op *sin_ = tt_op_find("tt::sin");
    ck_assert_int_eq(tt_opcheck(sin_, args, 1, &(tt_opcheck_opts){.checks = 0x30 | TT_OPCHECK_SCHEMA},
                                &r), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_opcheck: tt::sin: opts->checks has bits 0x30 that name no "
                               "check (the checks are TT_OPCHECK_SCHEMA 0x1, "
                               "TT_OPCHECK_AUTOGRAD_REGISTRATION 0x2, TT_OPCHECK_FAKETENSOR 0x4 "
                               "and TT_OPCHECK_AOT_DISPATCH_DYNAMIC 0x8; 0 runs all)");
    tt_release(x);
}
END_TEST

/* x + uniform noise: the values differ on every run. */
static tt_status noisy_kernel(tt_frame *f)
{
    tt_tensor *x;
    tt_status st = tt_arg_tensor(f, 0, &x);
    if (st)
        return st;
    tt_tensor *noise = tt_rand(tt_ndim(x), tt_sizes(x), tt_dtype_of(x));
    tt_tensor *y = noise ? tt_add(x, noise) : NULL;
    tt_release(noise);
    return tt_return(f, 0, y);
}

static tt_status noisy_fake(tt_frame *f)
{
    tt_tensor *x;
    tt_status st = tt_arg_tensor(f, 0, &x);
    return st ? st : tt_return(f, 0, tt_empty_like(x));
}

/* Tags: nondeterministic_seeded makes aot_dispatch_dynamic compare
 * metadata only; a failing pt2_compliant op is told it broke its promise. */
START_TEST(test_tags_in_opcheck)
{
    tt_op *noisy = def(&(tt_custom_op_spec){.schema = "broken::noisy(Tensor x) -> Tensor",
                                             .mutates_args = "", .kernel = noisy_kernel,
                                             .fake = noisy_fake,
                                             .tags = TT_TAG_PT2_COMPLIANT});
    tt_op *seeded = def(&(tt_custom_op_spec){.schema = "broken::seeded(Tensor x) -> Tensor",
                                              .mutates_args = "", .kernel = noisy_kernel,
                                              .fake = noisy_fake,
                                              .tags = TT_TAG_NONDETERMINISTIC_SEEDED});
    tt_tensor *x = NN(tt_zeros(TT_SHAPE(64), TT_F32));
    tt_value args[] = {tt_v_tensor(x)};
    tt_opcheck_report r;
    run_opcheck(noisy, args, &r, TT_EOPCHECK, NULL);
    assert_entry(&r, AOT, TT_CHECK_FAILED, "differs between eager and the compiled replay");
    ck_assert_ptr_nonnull(strstr(tt_errmsg(), " (the op is tagged pt2_compliant_tag, a promise "
                                              "that it passes opcheck: fix the op or drop the "
                                              "tag)"));
    run_opcheck(seeded, args, &r, TT_OK, NULL);
    assert_entry(&r, AOT, TT_CHECK_PASSED, NULL);
    tt_release(x);
}
END_TEST

/* ============================================================ checked mode */

/* The bad fake kernel (no permute) fails the first eager call in checked
 * mode, and not at all without it. */
START_TEST(test_checked_bad_fake)
{
    redefine_crop(tutorial_crop_fake_nopermute);
    tt_tensor *pic = NN(tt_randn(TT_SHAPE(3, 64, 64), TT_F32));
    tt_set_checked_mode(false);
    ck_assert(!tt_checked_mode());
    tt_tensor *ok = NN(tt_call(crop_op, tt_v_tensor(pic), tt_v_ints(TT_INTS(0, 0, 10, 10))));
    tt_release(ok);
    tt_set_checked_mode(true);
    ck_assert(tt_checked_mode());
    tt_tensor *bad = tt_call(crop_op, tt_v_tensor(pic), tt_v_ints(TT_INTS(0, 0, 10, 10)));
    ck_assert_ptr_null(bad);
    ck_assert_error(TT_EOPCHECK, "mylib::crop: checked mode (TT_CHECK_OPS): output 0: strides "
                                 "differ: the real kernel gives (1, 30, 3), the fake kernel "
                                 "(100, 10, 1) (shape [3, 10, 10]; first difference in dim 0)");
    /* A crop whose layouts agree (one row, one channel) passes. */
    tt_tensor *one = NN(tt_randn(TT_SHAPE(1, 8, 8), TT_F32));
    tt_tensor *row = NN(tt_call(crop_op, tt_v_tensor(one), tt_v_ints(TT_INTS(0, 0, 5, 1))));
    tt_release(row);
    tt_set_checked_mode(false);
    ok = NN(tt_call(crop_op, tt_v_tensor(pic), tt_v_ints(TT_INTS(0, 0, 10, 10))));
    tt_release(ok);
    tt_release(one);
    tt_release(pic);
}
END_TEST

/* An undeclared write (numpy_sin without mutates_args) fails the call;
 * a declared one passes and writes. */
START_TEST(test_checked_undeclared_write)
{
    tt_op *op = def(&(tt_custom_op_spec){
        .schema = "broken::numpy_sin(Tensor input, Tensor output) -> ()",
        .mutates_args = "",
        .kernel = tutorial_numpy_sin_kernel,
    });
    tt_tensor *x = NN(tt_randn(TT_SHAPE(5), TT_F32)), *out = NN(tt_zeros(TT_SHAPE(5), TT_F32));
    tt_value args[] = {tt_v_tensor(x), tt_v_tensor(out)};
    tt_set_checked_mode(true);
    ck_assert_int_eq(tt_op_call(op, args, 2, NULL, 0), TT_EOPCHECK);
    ck_assert_error(TT_EOPCHECK, "broken::numpy_sin: checked mode (TT_CHECK_OPS): the kernel "
                                 "wrote argument 'output' (#2), which the schema does not "
                                 "mark written (5 of its 5 elements changed, the first at "
                                 "flat index 0: 0 before, ");
    ck_assert_ptr_nonnull(strstr(tt_errmsg(), " after); declare it (mutates_args = \"output\", "
                                              "or 'Tensor(a!) output' in the schema), or write "
                                              "into a copy"));
    /* The declared op writes, checked or not. */
    OK(tt_op_call(sin_op, args, 2, NULL, 0));
    double *xv = tt_test_values(x), *ov = tt_test_values(out);
    for (int i = 0; i < 5; i++)
        ck_assert_double_eq_tol(ov[i], sin(xv[i]), 1e-6);
    free(xv);
    free(ov);
    tt_set_checked_mode(false);
    OK(tt_op_call(op, args, 2, NULL, 0));
    tt_release(out);
    tt_release(x);
}
END_TEST

/* Tensors in lists: an undeclared write into a member of a Tensor[]
 * argument, and Tensor[] results whose count or metadata the fake kernel
 * gets wrong. The fake kernel sees fake copies of list members too. */
static tt_status list_writes_first(tt_frame *f)
{
    tt_tensor *const *xs;
    int n;
    tt_status st = tt_arg_tensors(f, 0, &xs, &n);
    if (!st && !tt_is_fake(xs[n - 1]))
        st = tt_fill_(xs[n - 1], 9);
    return st ? st : tt_return(f, 0, tt_mul_scalar(xs[0], 2));
}

/* The fake kernel of list_writes_first, which must see fake tensors. */
static tt_status list_fake(tt_frame *f)
{
    tt_tensor *const *xs;
    int n;
    tt_status st = tt_arg_tensors(f, 0, &xs, &n);
    for (int i = 0; !st && i < n; i++)
        if (!tt_is_fake(xs[i]))
            st = tt_frame_fail(f, TT_EINTERNAL, "list member %d is real", i);
    return st ? st : tt_return(f, 0, tt_new_empty(xs[0], tt_ndim(xs[0]), tt_sizes(xs[0])));
}

static tt_status copies_f64(tt_frame *f)
{
    tt_tensor *x;
    tt_status st = tt_arg_tensor(f, 0, &x);
    if (st)
        return st;
    tt_tensor *ts[2] = {tt_mul_scalar(x, 1), tt_fake_empty(tt_ndim(x), tt_sizes(x), TT_F64)};
    if (!ts[0] || !ts[1]) {
        tt_release(ts[0]);
        tt_release(ts[1]);
        return tt_errcode();
    }
    return tt_return_tensors(f, 0, 2, ts);
}

START_TEST(test_checked_lists)
{
    tt_op *lw = def(&(tt_custom_op_spec){
        .schema = "broken::list_writes(Tensor[] xs) -> Tensor", .mutates_args = "",
        .kernel = list_writes_first, .fake = list_fake});
    tt_op *count = def(&(tt_custom_op_spec){
        .schema = "broken::copies(Tensor x) -> Tensor[]", .mutates_args = "",
        .kernel = two_copies, .fake = three_copies});
    tt_op *dtype = def(&(tt_custom_op_spec){
        .schema = "broken::copies_f64(Tensor x) -> Tensor[]", .mutates_args = "",
        .kernel = two_copies, .fake = copies_f64});
    tt_op *good = def(&(tt_custom_op_spec){
        .schema = "broken::copies_ok(Tensor x) -> Tensor[]", .mutates_args = "",
        .kernel = two_copies, .fake = two_copies});
    tt_tensor *x = NN(tt_randn(TT_SHAPE(2, 3), TT_F32)), *y = NN(tt_zeros(TT_SHAPE(2), TT_F32));
    tt_value o;
    tt_set_checked_mode(true);
    ck_assert_int_eq(tt_op_call(lw, (tt_value[]){tt_v_tensors(2, (tt_tensor *[]){x, y})}, 1,
                                &o, 1), TT_EOPCHECK);
    ck_assert_error(TT_EOPCHECK, "broken::list_writes: checked mode (TT_CHECK_OPS): the kernel "
                                 "wrote argument 'xs' (#1) (tensor 1 of the list), which the "
                                 "schema does not mark written");
    OK(tt_fill_(y, 0));
    tt_value xa[] = {tt_v_tensor(x)};
    ck_assert_int_eq(tt_op_call(count, xa, 1, &o, 1), TT_EOPCHECK);
    ck_assert_error(TT_EOPCHECK, "broken::copies: checked mode (TT_CHECK_OPS): output 0: the "
                                 "real kernel returns 2 tensors, the fake kernel 3");
    ck_assert_int_eq(tt_op_call(dtype, xa, 1, &o, 1), TT_EOPCHECK);
    ck_assert_error(TT_EOPCHECK, "broken::copies_f64: checked mode (TT_CHECK_OPS): output 0, "
                                 "tensor 1: dtype differs: the real kernel gives f32, the fake "
                                 "kernel f64");
    OK(tt_op_call(good, xa, 1, &o, 1));
    ck_assert_int_eq(o.kind, TT_V_TENSORS);
    ck_assert_int_eq(o.n, 2);
    tt_value_clear(&o);
    /* Off, the same calls succeed. */
    tt_set_checked_mode(false);
    OK(tt_op_call(count, xa, 1, &o, 1));
    tt_value_clear(&o);
    tt_release(y);
    tt_release(x);
}
END_TEST

/* The good crop gives the same result in checked mode; a fake kernel that
 * fails is reported as checked mode's failure. */
START_TEST(test_checked_good_and_failing_fake)
{
    tt_tensor *pic = NN(tt_randn(TT_SHAPE(3, 30, 30), TT_F32));
    tt_tensor *plain = NN(tt_call(crop_op, tt_v_tensor(pic), tt_v_ints(TT_INTS(3, 4, 13, 24))));
    tt_set_checked_mode(true);
    tt_tensor *checked = NN(tt_call(crop_op, tt_v_tensor(pic),
                                    tt_v_ints(TT_INTS(3, 4, 13, 24))));
    ck_assert_int_eq(tt_ndim(checked), 3);
    ck_assert(memcmp(tt_strides(checked), tt_strides(plain), 3 * sizeof(tt_size)) == 0);
    double *a = tt_test_values(plain), *b = tt_test_values(checked);
    for (int64_t i = 0; i < tt_numel(plain); i++)
        ck_assert_double_eq(a[i], b[i]);
    free(a);
    free(b);
    tt_release(checked);
    tt_release(plain);

    redefine_crop(crop_fake_peeks);
    ck_assert_ptr_null(tt_call(crop_op, tt_v_tensor(pic), tt_v_ints(TT_INTS(0, 0, 4, 4))));
    ck_assert_error(TT_EOPCHECK, "mylib::crop: checked mode (TT_CHECK_OPS): the fake kernel "
                                 "failed on fake copies of the inputs: tt_data: cannot "
                                 "access the data of fake f32[3, 30, 30]");
    tt_release(pic);
}
END_TEST

/* Built-ins are not checked: a built-in call allocates exactly what it
 * allocates with checked mode off (checking would make fake copies). A
 * custom op's call allocates more. */
START_TEST(test_checked_builtins_unaffected)
{
    const tt_op *add = tt_op_find("tt::add.Tensor");
    ck_assert_ptr_nonnull(add);
    tt_tensor *a = NN(tt_randn(TT_SHAPE(4, 4), TT_F32)), *b = NN(tt_randn(TT_SHAPE(4), TT_F32));
    tt_tensor *pic = NN(tt_randn(TT_SHAPE(3, 4, 4), TT_F32));
    tt_value args[] = {tt_v_tensor(a), tt_v_tensor(b)};
    int64_t counts[2], custom[2];
    tt_tensor *sums[2];
    for (int on = 0; on < 2; on++) {
        tt_set_checked_mode(on);
        int64_t n0 = tt_debug_alloc_count();
        sums[on] = NN(tt_op_call1(add, args, 2));
        counts[on] = tt_debug_alloc_count() - n0;
        n0 = tt_debug_alloc_count();
        tt_tensor *y = NN(tt_call(crop_op, tt_v_tensor(pic), tt_v_ints(TT_INTS(0, 0, 2, 2))));
        custom[on] = tt_debug_alloc_count() - n0;
        tt_release(y);
    }
    ck_assert_int_eq(counts[1], counts[0]);
    ck_assert_int_gt(custom[1], custom[0]);
    double *x = tt_test_values(sums[0]), *y = tt_test_values(sums[1]);
    for (int i = 0; i < 16; i++)
        ck_assert_double_eq(x[i], y[i]);
    free(x);
    free(y);
    tt_release(sums[0]);
    tt_release(sums[1]);
    tt_release(pic);
    tt_release(b);
    tt_release(a);
}
END_TEST

/* Out of memory at every allocation of a checked call: TT_ENOMEM, no leak,
 * no crash. */
START_TEST(test_checked_oom)
{
    tt_tensor *pic = NN(tt_randn(TT_SHAPE(3, 6, 6), TT_F32));
    tt_tensor *x = NN(tt_randn(TT_SHAPE(5), TT_F32)), *out = NN(tt_zeros(TT_SHAPE(5), TT_F32));
    tt_value sargs[] = {tt_v_tensor(x), tt_v_tensor(out)};
    tt_set_checked_mode(true);
    for (int which = 0; which < 2; which++) {
        int64_t n0 = tt_debug_alloc_count(), total;
        if (which == 0)
            tt_release(NN(tt_call(crop_op, tt_v_tensor(pic), tt_v_ints(TT_INTS(1, 1, 4, 5)))));
        else
            OK(tt_op_call(sin_op, sargs, 2, NULL, 0));
        total = tt_debug_alloc_count() - n0;
        for (int64_t n = 1; n <= total; n++) {
            tt_debug_fail_alloc(n);
            tt_status st;
            if (which == 0) {
                tt_tensor *y = tt_call(crop_op, tt_v_tensor(pic), tt_v_ints(TT_INTS(1, 1, 4, 5)));
                st = y ? TT_OK : tt_errcode();
                tt_release(y);
            } else {
                st = tt_op_call(sin_op, sargs, 2, NULL, 0);
            }
            tt_debug_fail_alloc(0);
            /* crop's kernel hands tt_return a NULL from a failed tt_permute,
             * which tt_return reports as TT_EINVAL with the cause. */
            ck_assert_msg(st != TT_OK && strstr(tt_errmsg(), "out of memory"),
                          "call %d, allocation %lld: %s: %s", which, (long long)n,
                          tt_status_name(st), tt_errmsg());
        }
    }
    tt_release(out);
    tt_release(x);
    tt_release(pic);
}
END_TEST

/* TT_CHECK_OPS is read on first use, once per process. The probe runs in
 * a fresh process (this executable, re-run with --checked-mode-probe), so
 * nothing earlier in the process can have read it: it prints what
 * tt_checked_mode() says, then whether a call of the bad crop fails, then
 * whether changing the variable later changes anything. */
static int probe_main(void)
{
    bool first = tt_checked_mode();
    setenv("TT_CHECK_OPS", first ? "0" : "1", 1);
    bool later = tt_checked_mode(); /* the variable is not read again */
    tt_library *l = tt_library_new(TT_LIB_DEF, "mylib");
    tt_op *op = l ? tt_custom_op_define(l, &(tt_custom_op_spec){
                        .schema = "mylib::crop(Tensor pic, int[4] box) -> Tensor",
                        .mutates_args = "", .kernel = tutorial_crop_kernel,
                        .fake = tutorial_crop_fake_nopermute})
                  : NULL;
    tt_tensor *pic = op ? tt_randn(TT_SHAPE(3, 16, 16), TT_F32) : NULL;
    tt_tensor *y = pic ? tt_call(op, tt_v_tensor(pic), tt_v_ints(TT_INTS(0, 0, 4, 4))) : NULL;
    bool failed = !y && tt_errcode() == TT_EOPCHECK && strstr(tt_errmsg(), "checked mode");
    printf("%d %d %d\n", first, later, failed);
    tt_release(y);
    tt_release(pic);
    tt_library_free(l);
    return op && pic ? 0 : 2;
}

/* Runs the probe with TT_CHECK_OPS set to `value` (NULL: unset); returns
 * its line of output. */
static void run_probe(const char *value, char *line, size_t n)
{
    int fd[2];
    ck_assert_int_eq(pipe(fd), 0);
    fflush(stdout);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(fd[0]);
        dup2(fd[1], 1);
        if (value)
            setenv("TT_CHECK_OPS", value, 1);
        else
            unsetenv("TT_CHECK_OPS");
        execl("/proc/self/exe", "test_opcheck", "--checked-mode-probe", (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    size_t len = 0;
    ssize_t got;
    while (len + 1 < n && (got = read(fd[0], line + len, n - 1 - len)) > 0)
        len += (size_t)got;
    line[len] = '\0';
    close(fd[0]);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "probe with TT_CHECK_OPS=%s exited with %d: %s", value ? value : "(unset)",
                  WIFEXITED(status) ? WEXITSTATUS(status) : -1, line);
}

START_TEST(test_checked_env)
{
    static const struct {
        const char *value, *want;
    } cases[] = {
        {"1", "1 1 1\n"},   /* on; the later "0" is not read; the bad crop fails */
        {"yes", "1 1 1\n"}, /* any value but "" and "0" */
        {"0", "0 0 0\n"},
        {"", "0 0 0\n"},
        {NULL, "0 0 0\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char line[64];
        run_probe(cases[i].value, line, sizeof line);
        ck_assert_msg(strcmp(line, cases[i].want) == 0, "TT_CHECK_OPS=%s: probe said \"%s\"",
                      cases[i].value ? cases[i].value : "(unset)", line);
    }
    /* tt_set_checked_mode overrides what the environment said. */
    tt_set_checked_mode(true);
    ck_assert(tt_checked_mode());
    tt_set_checked_mode(false);
    ck_assert(!tt_checked_mode());
}
END_TEST

/* ================================================================ suite */

static Suite *opcheck_suite(void)
{
    Suite *s = suite_create("opcheck");
    TCase *tc = tt_tcase_with("tutorial", opcheck_setup, opcheck_teardown);
    tcase_add_loop_test(tc, test_crop_sets, 0, 4);
    tcase_add_loop_test(tc, test_numpy_sin_sets, 0, 3);
    tcase_add_test(tc, test_noncontiguous_inputs);
    tcase_add_test(tc, test_mutable_variants);
    suite_add_tcase(s, tc);

    tc = tt_tcase_with("schema", opcheck_setup, opcheck_teardown);
    tcase_add_test(tc, test_schema_undeclared_mutation);
    tcase_add_test(tc, test_schema_one_element_written);
    tcase_add_test(tc, test_schema_returns_input);
    tcase_add_test(tc, test_schema_declared_alias);
    tcase_add_test(tc, test_schema_outputs_share_storage);
    suite_add_tcase(s, tc);

    tc = tt_tcase_with("faketensor", opcheck_setup, opcheck_teardown);
    tcase_add_test(tc, test_fake_wrong_shape_dtype);
    tcase_add_test(tc, test_fake_wrong_strides);
    tcase_add_test(tc, test_fake_strides_size_one);
    tcase_add_test(tc, test_fake_offset_and_count);
    tcase_add_test(tc, test_fake_reads_data);
    tcase_add_test(tc, test_fake_missing);
    tcase_add_test(tc, test_fake_dynamic_size);
    suite_add_tcase(s, tc);

    tc = tt_tcase_with("autograd_registration", opcheck_setup, opcheck_teardown);
    tcase_add_test(tc, test_autograd_missing);
    tcase_add_test(tc, test_autograd_nondifferentiable);
    suite_add_tcase(s, tc);

    tc = tt_tcase_with("aot_dispatch_dynamic", opcheck_setup, opcheck_teardown);
    tcase_add_test(tc, test_aot_global_state);
    tcase_add_test(tc, test_aot_plain_size_compare);
    tcase_add_test(tc, test_aot_largest_difference);
    tcase_add_test(tc, test_aot_written_after_list);
    tcase_add_test(tc, test_aot_gradient_differs);
    suite_add_tcase(s, tc);

    tc = tt_tcase_with("options", opcheck_setup, opcheck_teardown);
    tcase_add_test(tc, test_checks_mask);
    tcase_add_test(tc, test_raise_exception);
    tcase_add_test(tc, test_tolerances);
    tcase_add_test(tc, test_caller_untouched);
    suite_add_tcase(s, tc);

    tc = tt_tcase_with("reports_and_errors", opcheck_setup, opcheck_teardown);
    tcase_add_test(tc, test_report_text);
    tcase_add_test(tc, test_errors);
    tcase_add_test(tc, test_op_fails_on_arguments);
    tcase_add_test(tc, test_opcheck_oom);
    suite_add_tcase(s, tc);

    tc = tt_tcase_with("checked_mode", opcheck_setup, opcheck_teardown);
    tcase_add_test(tc, test_checked_bad_fake);
    tcase_add_test(tc, test_checked_undeclared_write);
    tcase_add_test(tc, test_checked_good_and_failing_fake);
    tcase_add_test(tc, test_checked_builtins_unaffected);
    tcase_add_test(tc, test_checked_lists);
    tcase_add_test(tc, test_fake_aliasing_differs);
    tcase_add_test(tc, test_unknown_check_bits);
    tcase_add_test(tc, test_tags_in_opcheck);
    tcase_add_test(tc, test_checked_oom);
    tcase_add_test(tc, test_checked_env);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--checked-mode-probe") == 0)
        return probe_main();
    SRunner *sr = srunner_create(opcheck_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
