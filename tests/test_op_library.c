/* The rest of torch.library's contract, from PyTorch's own custom-op tests:
 * calling an op by its base name picks the overload by the arguments (as
 * OpOverloadPacket does), in the API and in `tt opcheck`; out= and in-place
 * variants held to torchgen's rules (the inplace and out tags) and the
 * out= variant looked up; a device kernel switched off and on again
 * (CustomOpDef.set_kernel_enabled) with the call falling back. Each error
 * asserts its status and its message. (A suite of its own: test_custom_ops.c
 * is near the 2,000-line ceiling.) */
#include "tt_cli.h"
#include "tt_test.h"

#include <stdio.h>
#include <stdlib.h>

static tt_library *lib_ok(const char *ns)
{
    tt_library *lib = tt_library_new(TT_LIB_DEF, ns);
    ck_assert_msg(lib != NULL, "%s", tt_errmsg());
    return lib;
}

static tt_op *define_ok(tt_library *lib, const tt_custom_op_spec *spec)
{
    tt_op *op = tt_custom_op_define(lib, spec);
    ck_assert_msg(op != NULL, "'%s' was refused: %s", spec->schema, tt_errmsg());
    return op;
}

static void define_fails(tt_library *lib, const tt_custom_op_spec *spec, tt_status code,
                         const char *needle)
{
    tt_clear_error();
    ck_assert_msg(tt_custom_op_define(lib, spec) == NULL, "'%s' was accepted", spec->schema);
    ck_assert_error(code, needle);
}

/* Kernels that say which one ran: a tensor of x's shape filled with 1, 2
 * or 3. */
static tt_status fill_kernel(tt_frame *f, double v)
{
    tt_tensor *x = NULL;
    tt_status st = tt_arg_tensor(f, 0, &x);
    if (st)
        return st;
    tt_tensor *r = tt_full(tt_ndim(x), tt_sizes(x), v, tt_dtype_of(x));
    return tt_return(f, 0, r);
}
static tt_status k_one(tt_frame *f) { return fill_kernel(f, 1); }
static tt_status k_two(tt_frame *f) { return fill_kernel(f, 2); }
static tt_status k_three(tt_frame *f) { return fill_kernel(f, 3); }

static tt_status k_out(tt_frame *f) { return tt_return_self(f, 0, tt_frame_nargs(f) - 1); }
static tt_status k_inplace(tt_frame *f) { return tt_return_self(f, 0, 0); }

/* The first element of t, which the fill kernels set. */
static double first(tt_tensor *t)
{
    ck_assert_ptr_nonnull(t);
    double *v = tt_test_values(t);
    double r = v[0];
    free(v);
    return r;
}

/* ================================================== overload resolution */

/* PyTorch's test_overloads: ns::f takes one tensor, ns::f.pair two;
 * calling "ns::f" with two picks the pair. */
START_TEST(test_base_name_picks_overload)
{
    tt_library *lib = lib_ok("ov");
    tt_op *f = define_ok(lib, &(tt_custom_op_spec){.schema = "ov::f(Tensor x) -> Tensor",
                                                   .kernel = k_one});
    tt_op *pair = define_ok(lib, &(tt_custom_op_spec){
        .schema = "ov::f.pair(Tensor x, Tensor y) -> Tensor", .kernel = k_two});
    tt_op *sc = define_ok(lib, &(tt_custom_op_spec){
        .schema = "ov::f.scalar(Tensor x, Scalar s, *, int k=0) -> Tensor", .kernel = k_three});
    tt_tensor *x = NN(tt_zeros(TT_SHAPE(2), TT_F32));

    const tt_op *all[4];
    ck_assert_int_eq(tt_op_overloads("ov::f", all, 4), 3);
    ck_assert_ptr_eq(all[0], f); /* the name itself first */
    ck_assert_ptr_eq(all[1], pair);
    ck_assert_ptr_eq(all[2], sc);
    ck_assert_int_eq(tt_op_overloads("ov::f.pair", NULL, 0), 3);
    ck_assert_int_eq(tt_op_overloads("ov::nothing", NULL, 0), 0);

    /* The handle of "ov::f" runs ov::f for one tensor, the overload the
     * arguments fit otherwise. */
    tt_tensor *r = NN(tt_call(f, tt_v_tensor(x)));
    ck_assert_double_eq(first(r), 1);
    tt_release(r);
    r = NN(tt_call(f, tt_v_tensor(x), tt_v_tensor(x)));
    ck_assert_double_eq(first(r), 2);
    tt_release(r);
    r = NN(tt_call(f, tt_v_tensor(x), tt_v_float(0.5)));
    ck_assert_double_eq(first(r), 3);
    tt_release(r);
    tt_value out;
    OK(tt_op_call(f, (tt_value[]){tt_v_tensor(x), tt_v_tensor(x)}, 2, &out, 1));
    ck_assert_double_eq(first(out.u.t), 2);
    tt_value_clear(&out);

    /* tt_op_resolve gives the handle. */
    ck_assert_ptr_eq(tt_op_resolve("ov::f", (tt_value[]){tt_v_tensor(x)}, 1, 1), f);
    ck_assert_ptr_eq(tt_op_resolve("ov::f", (tt_value[]){tt_v_tensor(x), tt_v_tensor(x)}, 2, 1),
                     pair);
    ck_assert_ptr_eq(tt_op_resolve("ov::f", (tt_value[]){tt_v_tensor(x), tt_v_int(2)}, 2, 1), sc);
    /* A full name is looked up as it is, whatever the arguments. */
    ck_assert_ptr_eq(tt_op_resolve("ov::f.pair", NULL, 0, 1), pair);

    /* No overload fits: each says why. */
    tt_clear_error();
    ck_assert_ptr_null(tt_call(f, tt_v_int(3)));
    ck_assert_error(TT_EINVAL,
                    "ov::f: no overload takes the arguments (int 3): ov::f(Tensor x) -> Tensor: "
                    "argument 'x' (#1) expects Tensor, got int 3; ov::f.pair(Tensor x, Tensor "
                    "y) -> Tensor: argument 'x' (#1) expects Tensor, got int 3; "
                    "ov::f.scalar(Tensor x, Scalar s, *, int k=0) -> Tensor: argument 'x' (#1) "
                    "expects Tensor, got int 3");
    ck_assert_ptr_null(tt_op_resolve("ov::g", NULL, 0, 1));
    ck_assert_error(TT_ENOTFOUND, "tt_op_find: no op named 'ov::g'");
    ck_assert_ptr_null(tt_op_resolve(NULL, NULL, 0, 1));
    ck_assert_error(TT_EINVAL, "tt_op_resolve: argument 'name' is NULL");

    /* A NULL tensor is the error of the call that made it: no other
     * overload is tried over it (the first cause wins). */
    tt_error(TT_ESHAPE, "an earlier failure");
    ck_assert_ptr_null(tt_call(f, tt_v_tensor(NULL)));
    ck_assert_error(TT_ESHAPE, "an earlier failure (then ov::f: argument 'x' (#1) expects "
                               "Tensor, got NULL)");

    tt_release(x);
    tt_library_free(lib);
}
END_TEST

/* Arguments that fit several overloads are an error listing them; with
 * only overloads (no op of the base name) the one that fits runs. */
START_TEST(test_ambiguous_overloads)
{
    tt_library *lib = lib_ok("amb");
    define_ok(lib, &(tt_custom_op_spec){.schema = "amb::g.a(Tensor x, int k=0) -> Tensor",
                                        .kernel = k_one});
    define_ok(lib, &(tt_custom_op_spec){.schema = "amb::g.b(Tensor x, float s=1.0) -> Tensor",
                                        .kernel = k_two});
    tt_op *c = define_ok(lib, &(tt_custom_op_spec){
        .schema = "amb::g.c(Tensor x, Tensor y, Tensor z) -> Tensor", .kernel = k_three});
    tt_tensor *x = NN(tt_zeros(TT_SHAPE(2), TT_F32));
    tt_clear_error();
    ck_assert_ptr_null(tt_op_resolve("amb::g", (tt_value[]){tt_v_tensor(x)}, 1, 1));
    ck_assert_error(TT_EINVAL, "amb::g: the arguments (Tensor f32[2]) fit 2 overloads, so the "
                               "call is ambiguous: amb::g.a(Tensor x, int k=0) -> Tensor; "
                               "amb::g.b(Tensor x, float s=1.0) -> Tensor; call one by its "
                               "full name");
    ck_assert_ptr_eq(tt_op_resolve("amb::g", (tt_value[]){tt_v_tensor(x), tt_v_tensor(x),
                                                          tt_v_tensor(x)},
                                   3, 1),
                     c);
    /* The number of results counts: no overload returns two. */
    ck_assert_ptr_null(tt_op_resolve("amb::g", (tt_value[]){tt_v_tensor(x), tt_v_int(1)}, 2, 2));
    ck_assert_error(TT_EINVAL, "amb::g.a(Tensor x, int k=0) -> Tensor: returns 1 value, not 2");
    tt_release(x);
    tt_library_free(lib);
}
END_TEST

/* An op with no overloads keeps its own message. */
START_TEST(test_no_overloads_message)
{
    tt_library *lib = lib_ok("one");
    tt_op *f = define_ok(lib, &(tt_custom_op_spec){.schema = "one::f(Tensor x) -> Tensor",
                                                   .kernel = k_one});
    tt_tensor *x = NN(tt_zeros(TT_SHAPE(2), TT_F32));
    tt_clear_error();
    ck_assert_ptr_null(tt_call(f, tt_v_tensor(x), tt_v_tensor(x)));
    ck_assert_error(TT_EINVAL, "one::f: expected at most 1 argument, got 2");
    tt_release(x);
    tt_library_free(lib);
}
END_TEST

/* `tt opcheck --op ov::f` picks the overload by the --input specs. */
START_TEST(test_cli_picks_overload)
{
    tt_library *lib = lib_ok("ov");
    tt_op *f = define_ok(lib, &(tt_custom_op_spec){.schema = "ov::f(Tensor x) -> Tensor",
                                                   .kernel = k_one});
    tt_op *pair = define_ok(lib, &(tt_custom_op_spec){
        .schema = "ov::f.pair(Tensor x, Tensor y) -> Tensor", .kernel = k_two});
    define_ok(lib, &(tt_custom_op_spec){.schema = "ov::f.other(Tensor x, Tensor y, int k=0) -> "
                                                  "Tensor",
                                        .kernel = k_two});
    char err[4096];
    tt_cli_args a;
    char *one[] = {"tt", "opcheck", "--op", "ov::f", "--input", "f32[2]"};
    ck_assert_int_eq(tt_cli_parse(6, one, &a, err, sizeof err), 0);
    ck_assert_ptr_eq(tt_cli_find_op(&a, err, sizeof err), f);
    tt_cli_args_clear(&a);
    char *full[] = {"tt", "opcheck", "--op", "ov::f.pair", "--input", "f32[2]"};
    ck_assert_int_eq(tt_cli_parse(6, full, &a, err, sizeof err), 0);
    ck_assert_ptr_eq(tt_cli_find_op(&a, err, sizeof err), pair);
    tt_cli_args_clear(&a);
    /* Two tensors fit f.pair and f.other: ambiguous. */
    char *two[] = {"tt", "opcheck", "--op", "ov::f", "--input", "f32[2]", "--input", "f32[2]"};
    ck_assert_int_eq(tt_cli_parse(8, two, &a, err, sizeof err), 0);
    ck_assert_ptr_null(tt_cli_find_op(&a, err, sizeof err));
    ck_assert_msg(strstr(err, "--op ov::f: the --input specs fit 2 overloads, so the op is "
                              "ambiguous: ov::f.pair(Tensor x, Tensor y) -> Tensor; "
                              "ov::f.other(Tensor x, Tensor y, int k=0) -> Tensor; name one "
                              "(--op ov::f.pair)"),
                  "%s", err);
    tt_cli_args_clear(&a);
    /* Three fit f.other alone. */
    char *three[] = {"tt", "opcheck", "--op", "ov::f", "--input", "f32[2]", "--input", "f32[2]",
                     "--input", "i64[]=1"};
    ck_assert_int_eq(tt_cli_parse(10, three, &a, err, sizeof err), 0);
    const tt_op *other = tt_cli_find_op(&a, err, sizeof err);
    ck_assert_ptr_nonnull(other);
    ck_assert_str_eq(tt_op_name(other), "ov::f.other");
    tt_cli_args_clear(&a);
    /* Four fit nothing; an unknown name leaves err empty. */
    char *four[] = {"tt", "opcheck", "--op", "ov::f", "--input", "f32[2]", "--input", "f32[2]",
                    "--input", "i64[]=1", "--input", "i64[]=1"};
    ck_assert_int_eq(tt_cli_parse(12, four, &a, err, sizeof err), 0);
    ck_assert_ptr_null(tt_cli_find_op(&a, err, sizeof err));
    ck_assert_msg(strstr(err, "--op ov::f: no overload takes the --input specs given: "
                              "ov::f(Tensor x) -> Tensor: ov::f takes 1 argument, got 4 --input"),
                  "%s", err);
    tt_cli_args_clear(&a);
    /* A built-in: two tensors fit tt::add.Tensor alone (add.Scalar wants
     * a number). */
    char *add[] = {"tt", "opcheck", "--op", "tt::add", "--input", "f64[3]", "--input", "f64[3]"};
    ck_assert_int_eq(tt_cli_parse(8, add, &a, err, sizeof err), 0);
    const tt_op *add_t = tt_cli_find_op(&a, err, sizeof err);
    ck_assert_msg(add_t != NULL, "%s", err);
    ck_assert_str_eq(tt_op_name(add_t), "tt::add.Tensor");
    tt_cli_args_clear(&a);
    char *none[] = {"tt", "opcheck", "--op", "ov::zz", "--input", "f32[2]"};
    ck_assert_int_eq(tt_cli_parse(6, none, &a, err, sizeof err), 0);
    ck_assert_ptr_null(tt_cli_find_op(&a, err, sizeof err));
    ck_assert_str_eq(err, "");
    tt_cli_args_clear(&a);
    tt_library_free(lib);
}
END_TEST

/* ============================================================ variants */

/* PyTorch's out-variant rules: an out= overload takes its functional op's
 * arguments plus keyword-only out arguments. */
START_TEST(test_out_variant_rules)
{
    tt_library *lib = lib_ok("ou");
    tt_op *f = define_ok(lib, &(tt_custom_op_spec){
        .schema = "ou::f(Tensor x, float s=1.0) -> Tensor", .kernel = k_one});
    define_fails(lib, &(tt_custom_op_spec){
                     .schema = "ou::f.out(Tensor x, int s=1, *, Tensor(a!) out) -> Tensor(a!)"},
                 TT_ESCHEMA,
                 "tt_custom_op_define: ou::f.out: an out= variant takes the arguments of its "
                 "functional op ou::f, but argument #2 differs: 'int s=1' in ou::f.out, "
                 "'float s=1.0' in ou::f");
    define_fails(lib, &(tt_custom_op_spec){
                     .schema = "ou::f.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)"},
                 TT_ESCHEMA, "ou::f.out: an out= variant takes the arguments of its functional "
                             "op ou::f, but argument 's' of ou::f is missing");
    define_fails(lib, &(tt_custom_op_spec){
                     .schema = "ou::f.out(Tensor x, float s=1.0, Tensor? y=None, *, Tensor(a!) out) "
                               "-> Tensor(a!)"},
                 TT_ESCHEMA, "but argument 'y' ('Tensor? y=None') is not one of them");
    define_fails(lib, &(tt_custom_op_spec){
                     .schema = "ou::f.out(Tensor x, float s=1.0, *, Tensor(a!) out, Tensor(b!) "
                               "o2) -> (Tensor(a!), Tensor(b!))"},
                 TT_ESCHEMA, "ou::f.out: an out= variant has one out argument per result of its "
                             "functional op ou::f (1), but has 2");
    /* The out= variant is not there until defined. */
    tt_clear_error();
    ck_assert_ptr_null(tt_op_out_variant(f));
    ck_assert_error(TT_ENOTFOUND, "tt_op_out_variant: ou::f has no out= variant (looked for "
                                  "ou::f.out)");
    tt_op *fo = define_ok(lib, &(tt_custom_op_spec){
        .schema = "ou::f.out(Tensor x, float s=1.0, *, Tensor(a!) out) -> Tensor(a!)",
        .kernel = k_out});
    ck_assert_ptr_eq(tt_op_out_variant(f), fo);
    ck_assert_ptr_null(tt_op_out_variant(fo));
    ck_assert_error(TT_ENOTFOUND, "ou::f.out is not a functional op, so it has no out= variant");

    /* An overload's out= variant is "X_out" (aten's add.Scalar_out); a
     * functional op defined after its out= variant is held to it. */
    tt_op *gso = define_ok(lib, &(tt_custom_op_spec){
        .schema = "ou::g.Scalar_out(Tensor x, Scalar v, *, Tensor(a!) out) -> Tensor(a!)",
        .kernel = k_out});
    define_fails(lib, &(tt_custom_op_spec){.schema = "ou::g.Scalar(Tensor x, float v) -> Tensor"},
                 TT_ESCHEMA, "ou::g.Scalar: its out= variant ou::g.Scalar_out is defined and "
                             "does not match it (ou::g.Scalar_out: an out= variant takes the "
                             "arguments of its functional op ou::g.Scalar, but argument #2 "
                             "differs: 'Scalar v' in ou::g.Scalar_out, 'float v' in ou::g.Scalar)");
    tt_op *gs = define_ok(lib, &(tt_custom_op_spec){
        .schema = "ou::g.Scalar(Tensor x, Scalar v) -> Tensor", .kernel = k_one});
    ck_assert_ptr_eq(tt_op_out_variant(gs), gso);

    /* An untagged out= overload without its functional op is accepted (as
     * before); tagged, the functional op must exist. */
    define_ok(lib, &(tt_custom_op_spec){
        .schema = "ou::lone.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)", .kernel = k_out});
    define_fails(lib, &(tt_custom_op_spec){
                     .schema = "ou::h.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)",
                     .tags = TT_TAG_OUT},
                 TT_ESCHEMA, "ou::h.out: tagged out, so its functional op ou::h must be defined "
                             "first");
    define_fails(lib, &(tt_custom_op_spec){.schema = "ou::f.other(Tensor x) -> Tensor",
                                           .tags = TT_TAG_OUT},
                 TT_ESCHEMA, "ou::f.other: tagged out, but an out= op is an overload named "
                             "'out' (or 'X_out')");
    tt_library_free(lib);
}
END_TEST

/* The out= variant runs: it writes out and returns it. */
START_TEST(test_out_variant_call)
{
    tt_library *lib = lib_ok("oc");
    tt_op *f = define_ok(lib, &(tt_custom_op_spec){.schema = "oc::f(Tensor x) -> Tensor",
                                                   .kernel = k_one});
    define_ok(lib, &(tt_custom_op_spec){
        .schema = "oc::f.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)", .kernel = k_out,
        .tags = TT_TAG_OUT});
    const tt_op *fo = tt_op_out_variant(f);
    ck_assert_ptr_nonnull(fo);
    ck_assert_uint_eq(tt_op_tags(fo), TT_TAG_OUT);
    char desc[256];
    tt_op_describe(fo, desc, sizeof desc);
    ck_assert_str_eq(desc, "oc::f.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)  [tags: out]");
    tt_tensor *x = NN(tt_zeros(TT_SHAPE(2), TT_F32)), *o = NN(tt_zeros(TT_SHAPE(2), TT_F32));
    tt_value r;
    OK(tt_op_call(fo, (tt_value[]){tt_v_tensor(x), tt_v_tensor(o)}, 2, &r, 1));
    ck_assert_ptr_eq(r.u.t, o);
    tt_value_clear(&r);
    tt_release(o);
    tt_release(x);
    tt_library_free(lib);
}
END_TEST

/* torchgen's in-place rules under the inplace tag: foo_ takes
 * Tensor(a!) self first, returns it, and foo exists with the same other
 * arguments. */
START_TEST(test_inplace_variant_rules)
{
    tt_library *lib = lib_ok("ip");
    define_ok(lib, &(tt_custom_op_spec){.schema = "ip::foo(Tensor self, float s) -> Tensor",
                                        .kernel = k_one});
    tt_op *foo_ = define_ok(lib, &(tt_custom_op_spec){
        .schema = "ip::foo_(Tensor(a!) self, float s) -> Tensor(a!)", .kernel = k_inplace,
        .tags = TT_TAG_INPLACE});
    ck_assert_uint_eq(tt_op_tags(foo_), TT_TAG_INPLACE);
    tt_tensor *x = NN(tt_zeros(TT_SHAPE(2), TT_F32));
    tt_tensor *r = NN(tt_call(foo_, tt_v_tensor(x), tt_v_float(2)));
    ck_assert_ptr_eq(r, x);
    tt_release(r);
    tt_release(x);
    define_fails(lib, &(tt_custom_op_spec){.schema = "ip::bar_(Tensor(a!) self) -> Tensor(a!)",
                                           .tags = TT_TAG_INPLACE},
                 TT_ESCHEMA, "ip::bar_: tagged inplace, so its functional op ip::bar must be "
                             "defined first");
    define_ok(lib, &(tt_custom_op_spec){.schema = "ip::baz(Tensor self, int n) -> Tensor",
                                        .kernel = k_one});
    define_fails(lib, &(tt_custom_op_spec){
                     .schema = "ip::baz_(Tensor(a!) self, float n) -> Tensor(a!)",
                     .tags = TT_TAG_INPLACE},
                 TT_ESCHEMA, "ip::baz_: an in-place variant takes the arguments of its "
                             "functional op ip::baz, but argument #2 differs: 'float n' in "
                             "ip::baz_, 'int n' in ip::baz");
    define_fails(lib, &(tt_custom_op_spec){.schema = "ip::baz_(Tensor(a!) self, int n) -> ()",
                                           .tags = TT_TAG_INPLACE},
                 TT_ESCHEMA, "ip::baz_: tagged inplace, but an in-place op is named 'name_', "
                             "takes 'Tensor(a!) self' first and returns it");
    /* Untagged, torch.library's freedom stays: no functional op needed. */
    define_ok(lib, &(tt_custom_op_spec){.schema = "ip::qux_(Tensor(a!) self) -> Tensor(a!)",
                                        .kernel = k_inplace});
    tt_library_free(lib);
}
END_TEST

/* ===================================================== set_kernel_enabled */

/* PyTorch's test_set_kernel_enabled: the cpu kernel switched off runs the
 * default kernel, and runs again once switched on. */
START_TEST(test_kernel_disabled_falls_back)
{
    tt_library *lib = lib_ok("sk");
    tt_op *f = define_ok(lib, &(tt_custom_op_spec){.schema = "sk::f(Tensor x) -> Tensor",
                                                   .device_types = "cpu", .kernel = k_one});
    OK(tt_register_kernel(lib, f, NULL, k_two)); /* the default: every device */
    tt_tensor *x = NN(tt_zeros(TT_SHAPE(2), TT_F32));
    tt_tensor *r = NN(tt_call(f, tt_v_tensor(x)));
    ck_assert_double_eq(first(r), 1);
    tt_release(r);
    ck_assert(tt_op_kernel_enabled(f, TT_DEV_CPU));
    OK(tt_op_set_kernel_enabled(f, "cpu", false));
    ck_assert(!tt_op_kernel_enabled(f, TT_DEV_CPU));
    ck_assert(tt_op_has_kernel(f, TT_DEV_CPU)); /* still registered */
    r = NN(tt_call(f, tt_v_tensor(x)));
    ck_assert_double_eq(first(r), 2);
    tt_release(r);
    OK(tt_op_set_kernel_enabled(f, "cpu", false)); /* again: no change */
    OK(tt_op_set_kernel_enabled(f, "cpu", true));
    ck_assert(tt_op_kernel_enabled(f, TT_DEV_CPU));
    r = NN(tt_call(f, tt_v_tensor(x)));
    ck_assert_double_eq(first(r), 1);
    tt_release(r);
    OK(tt_op_set_kernel_enabled(f, "cpu", true)); /* on already: fine */
    tt_release(x);
    tt_library_free(lib);
}
END_TEST

/* With no default kernel, a switched-off kernel leaves the call with
 * none: the error lists what is registered. */
START_TEST(test_kernel_disabled_no_fallback)
{
    tt_library *lib = lib_ok("sk");
    tt_op *g = define_ok(lib, &(tt_custom_op_spec){.schema = "sk::g(Tensor x) -> Tensor",
                                                   .device_types = "cpu", .kernel = k_one,
                                                   .fake = k_three});
    tt_tensor *x = NN(tt_zeros(TT_SHAPE(2), TT_F32));
    OK(tt_op_set_kernel_enabled(g, "cpu", false));
    tt_clear_error();
    ck_assert_ptr_null(tt_call(g, tt_v_tensor(x)));
    ck_assert_error(TT_ENOKERNEL, "sk::g: no kernel for device 'cpu' (registered: cpu "
                                  "(disabled), fake)");
    /* The fake kernel is not a device kernel: fake calls still run. */
    tt_fake_mode_begin();
    tt_tensor *fx = NN(tt_empty(TT_SHAPE(2), TT_F32));
    tt_tensor *fr = NN(tt_call(g, tt_v_tensor(fx)));
    ck_assert(tt_is_fake(fr));
    tt_release(fr);
    tt_release(fx);
    OK(tt_fake_mode_end());

    /* Mistakes: a device with no kernel, meta, a built-in, NULLs, a name
     * that is not a device. */
    ck_assert_int_eq(tt_op_set_kernel_enabled(g, "cuda", false), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_op_set_kernel_enabled: sk::g has no cuda kernel to switch "
                               "off (device kernels: cpu)");
    ck_assert_int_eq(tt_op_set_kernel_enabled(g, "meta", false), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "device type 'meta' names the fake kernel, which cannot be "
                               "switched off");
    ck_assert_int_eq(tt_op_set_kernel_enabled(g, "tpu", false), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "device type 'tpu' does not exist");
    ck_assert_int_eq(tt_op_set_kernel_enabled(tt_op_find("tt::sign"), "cpu", false), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt::sign is a built-in op; kernels can be switched off for "
                               "custom ops");
    ck_assert_int_eq(tt_op_set_kernel_enabled(NULL, "cpu", false), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_op_set_kernel_enabled: argument 'op' is NULL");
    ck_assert_int_eq(tt_op_set_kernel_enabled(g, NULL, false), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "argument 'device_type' is NULL");
    ck_assert(!tt_op_kernel_enabled(NULL, TT_DEV_CPU));

    /* Once its library is freed the op is gone. */
    tt_library_free(lib);
    ck_assert_int_eq(tt_op_set_kernel_enabled(g, "cpu", true), TT_ENOTFOUND);
    ck_assert_error(TT_ENOTFOUND, "sk::g is no longer defined");
    tt_release(x);
}
END_TEST

/* ============================================================ sign */

/* PyTorch gives sign a zero gradient; it used to refuse inputs that
 * require grad. */
START_TEST(test_sign_gradient)
{
    tt_tensor *x = NN(tt_from_data(TT_SHAPE(3), TT_F64, (const double[]){-2, 0, 3}));
    OK(tt_set_requires_grad(x, true));
    tt_tensor *y = NN(tt_call(tt_op_find("tt::sign"), tt_v_tensor(x)));
    ck_assert(tt_requires_grad(y));
    tt_tensor *g = NN(tt_ones(TT_SHAPE(3), TT_F64));
    OK(tt_backward(y, g));
    tt_tensor *gx = NN(tt_get_grad(x));
    double *v = tt_test_values(gx);
    for (int i = 0; i < 3; i++)
        ck_assert_double_eq(v[i], 0);
    free(v);
    tt_release(gx);
    tt_release(g);
    tt_release(y);
    tt_release(x);
}
END_TEST

static Suite *op_library_suite(void)
{
    Suite *s = suite_create("op_library");
    TCase *tc = tt_tcase("overloads");
    tcase_add_test(tc, test_base_name_picks_overload);
    tcase_add_test(tc, test_ambiguous_overloads);
    tcase_add_test(tc, test_no_overloads_message);
    tcase_add_test(tc, test_cli_picks_overload);
    suite_add_tcase(s, tc);

    tc = tt_tcase("variants");
    tcase_add_test(tc, test_out_variant_rules);
    tcase_add_test(tc, test_out_variant_call);
    tcase_add_test(tc, test_inplace_variant_rules);
    suite_add_tcase(s, tc);

    tc = tt_tcase("set_kernel_enabled");
    tcase_add_test(tc, test_kernel_disabled_falls_back);
    tcase_add_test(tc, test_kernel_disabled_no_fallback);
    suite_add_tcase(s, tc);

    tc = tt_tcase("sign");
    tcase_add_test(tc, test_sign_gradient);
    suite_add_tcase(s, tc);
    return s;
}

TT_TEST_MAIN(op_library_suite)
