/* The custom-op contract (torch.library.custom_op's, in C): definition and
 * the mutation contract (functional, mutable, in-place and out= variants,
 * maybe-out refused, mutates_args against (a!)), kernels per device and by
 * default, fake kernels (missing, reading data, dynamic sizes), autograd
 * registration (missing, under no-grad, in a training step, checked by
 * gradcheck), and library lifetime. Each error asserts its status and its
 * message. */
#include "tt_test.h"
#include "tutorial_ops.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static tt_op *define_ok(tt_library *lib, const tt_custom_op_spec *spec)
{
    tt_op *op = tt_custom_op_define(lib, spec);
    ck_assert_msg(op != NULL, "'%s' was refused: %s", spec->schema, tt_errmsg());
    return op;
}

/* The libraries a test made, so the fixture frees what a failed test
 * left behind (with CK_FORK=no the next test would find "mylib" taken). */
static tt_library *live_libs[8];
static int nlive_libs;

static tt_library *new_lib(tt_library_kind kind, const char *ns)
{
    tt_library *lib = tt_library_new(kind, ns);
    ck_assert_msg(lib != NULL, "%s", tt_errmsg());
    ck_assert_int_lt(nlive_libs, 8);
    live_libs[nlive_libs++] = lib;
    return lib;
}

static void free_lib(tt_library *lib)
{
    for (int i = 0; i < nlive_libs; i++)
        if (live_libs[i] == lib) {
            live_libs[i] = live_libs[--nlive_libs];
            break;
        }
    tt_library_free(lib);
}

static void free_live_libs(void)
{
    while (nlive_libs > 0)
        tt_library_free(live_libs[--nlive_libs]);
}

static TCase *custom_tcase(const char *name)
{
    TCase *tc = tt_tcase(name);
    tcase_add_checked_fixture(tc, NULL, free_live_libs);
    return tc;
}

static void schema_text(const tt_op *op, char *buf, size_t n)
{
    ck_assert_ptr_nonnull(tt_op_schema(op));
    tt_schema_print(tt_op_schema(op), buf, n);
}

/* ============================================================ kernels */

/* numpy_mul (x * val; one function is its real and fake kernel) and
 * numpy_sin are the tutorial's, from tools/tutorial_ops.c. */

/* A deliberately wrong derivative: (val + 1) * g. */
static tt_status wrong_mul_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                    tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    double val;
    tt_status st = tt_ctx_get_float(ctx, "val", &val);
    if (st)
        return st;
    gi[0] = tt_mul_scalar(g[0], val + 1);
    return gi[0] ? TT_OK : tt_errcode();
}

#define NUMPY_MUL_SPEC(sch, bw)                                                \
    (&(tt_custom_op_spec){.schema = (sch), .mutates_args = "",                 \
                          .kernel = tutorial_numpy_mul_kernel,                 \
                          .fake = tutorial_numpy_mul_kernel, .backward = (bw), \
                          .setup_context = tutorial_numpy_mul_setup_context})
/* The same op with no autograd registration. */
#define NUMPY_MUL_PLAIN(sch)                                                   \
    (&(tt_custom_op_spec){.schema = (sch), .mutates_args = "",                 \
                          .kernel = tutorial_numpy_mul_kernel,                 \
                          .fake = tutorial_numpy_mul_kernel})

/* A fake kernel for an op that returns nothing: nothing to describe. */
static tt_status nothing_fake(tt_frame *f)
{
    (void)f;
    return TT_OK;
}

static const tt_custom_op_spec numpy_sin_spec = {
    .schema = "mylib::numpy_sin(Tensor input, Tensor(a!) output) -> ()",
    .mutates_args = "output",
    .device_types = "cpu",
    .kernel = tutorial_numpy_sin_kernel,
};

/* A real kernel may not ask for a dynamic size: it knows its sizes. */
static tt_status dynamic_in_real_kernel(tt_frame *f)
{
    ck_assert(!tt_frame_is_fake(f));
    tt_size u = tt_frame_new_dynamic_size(f);
    if (u == 0)
        return tt_errcode();
    return tt_frame_fail(f, TT_EINTERNAL, "a dynamic size was handed to a real kernel");
}

/* A fake kernel that peeks at data: not allowed. */
static tt_status peeking_fake(tt_frame *f)
{
    tt_tensor *x;
    tt_status st = tt_arg_tensor(f, 0, &x);
    if (st)
        return st;
    const float *p = tt_data(x);
    if (!p)
        return tt_errcode();
    return tt_return(f, 0, tt_new_empty(x, 1, (const int64_t[]){(int64_t)p[0]}));
}

/* Kernels that say which of them ran. */
static int last_kernel;
static tt_status clone_as(tt_frame *f, int which)
{
    tt_tensor *x;
    tt_status st = tt_arg_tensor(f, 0, &x);
    if (st)
        return st;
    last_kernel = which;
    return tt_return(f, 0, tt_clone(x));
}
static tt_status kernel_cpu(tt_frame *f) { return clone_as(f, 1); }
static tt_status kernel_default(tt_frame *f) { return clone_as(f, 2); }
static tt_status kernel_cuda(tt_frame *f) { return clone_as(f, 3); }

static tt_status kernel_none(tt_frame *f)
{
    (void)f;
    return TT_OK;
}

static tt_status identity_setup(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                                const tt_value *out, int nout)
{
    (void)ctx, (void)in, (void)nin, (void)out, (void)nout;
    return TT_OK;
}

static tt_status identity_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                   tt_tensor **gi, int ni)
{
    (void)ctx, (void)ng;
    for (int i = 0; i < ni; i++)
        gi[i] = NULL;
    gi[0] = tt_retain(g[0]);
    return TT_OK;
}

/* ============================================================ definition */

START_TEST(test_define_functional)
{
    tt_library *lib = new_lib(TT_LIB_DEF, "mylib");
    tt_op *op = define_ok(lib, NUMPY_MUL_SPEC("mylib::numpy_mul(Tensor x, *, float val) -> Tensor",
                                              tutorial_numpy_mul_backward));
    ck_assert_ptr_eq(tt_op_find("mylib::numpy_mul"), op);
    ck_assert_str_eq(tt_op_name(op), "mylib::numpy_mul");
    char buf[256];
    schema_text(op, buf, sizeof buf);
    ck_assert_str_eq(buf, "mylib::numpy_mul(Tensor x, *, float val) -> Tensor");
    ck_assert(!tt_schema_is_mutable(tt_op_schema(op)));
    ck_assert(!tt_op_is_builtin(op));
    /* No device types: the kernel serves every device. */
    ck_assert(tt_op_has_kernel(op, TT_DEV_CPU));
    ck_assert(tt_op_has_kernel(op, TT_DEV_CUDA));
    ck_assert(tt_op_has_fake(op));
    ck_assert(tt_op_has_autograd(op));

    tt_tensor *x = NN(tt_arange(0, 6, 1, TT_F32));
    uint64_t v = tt_version(x);
    tt_tensor *y = NN(tt_call(op, tt_v_tensor(x), tt_v_float(2.5)));
    double *yv = tt_test_values(y);
    for (int k = 0; k < 6; k++)
        ck_assert_double_eq(yv[k], 2.5 * k);
    free(yv);
    ck_assert_uint_eq(tt_version(x), v); /* functional: the input is untouched */
    ck_assert(!tt_same_storage(x, y));
    tt_release(y);
    /* The keyword-only argument has no default: it must be given. */
    ck_assert_ptr_null(tt_call(op, tt_v_tensor(x)));
    ck_assert_error(TT_EINVAL, "mylib::numpy_mul: missing argument 'val' (#2) of type float");
    tt_release(x);

    /* Twice: refused, naming what is there and what was asked. */
    ck_assert_ptr_null(tt_custom_op_define(lib, NUMPY_MUL_PLAIN(
        "mylib::numpy_mul(Tensor x, float val) -> Tensor")));
    ck_assert_error(TT_EEXIST, "tt_custom_op_define: mylib::numpy_mul is already defined as "
                               "'mylib::numpy_mul(Tensor x, *, float val) -> Tensor' (by "
                               "library DEF 'mylib' #");
    ck_assert_error(TT_EEXIST, "the new definition was 'mylib::numpy_mul(Tensor x, float val) "
                               "-> Tensor'");
    /* An overload is another op. */
    tt_op *ovl = define_ok(lib, NUMPY_MUL_PLAIN("mylib::numpy_mul.Scalar(Tensor x, float val=1) "
                                               "-> Tensor"));
    ck_assert(ovl != op);
    ck_assert_ptr_eq(tt_op_find("mylib::numpy_mul.Scalar"), ovl);
    ck_assert_ptr_eq(tt_op_find("mylib::numpy_mul"), op);
    free_lib(lib);
}
END_TEST

START_TEST(test_define_libraries)
{
    tt_library *lib = new_lib(TT_LIB_DEF, "mylib");
    /* A namespace has one DEF library; FRAGMENTs add to it. */
    ck_assert_ptr_null(tt_library_new(TT_LIB_DEF, "mylib"));
    ck_assert_error(TT_EEXIST, "tt_library_new: namespace 'mylib' is already defined by another "
                               "DEF library");
    ck_assert_ptr_null(tt_library_new(TT_LIB_DEF, "my-lib"));
    ck_assert_error(TT_EINVAL, "tt_library_new: argument 'ns' must be an identifier");
    tt_library *frag = new_lib(TT_LIB_FRAGMENT, "mylib");
    define_ok(frag, NUMPY_MUL_PLAIN("mylib::frag(Tensor x) -> Tensor"));
    tt_library *impl = new_lib(TT_LIB_IMPL, "mylib");
    ck_assert_ptr_null(tt_custom_op_define(impl, NUMPY_MUL_PLAIN("mylib::f(Tensor x) -> Tensor")));
    ck_assert_error(TT_EINVAL, "tt_custom_op_define: library IMPL 'mylib' cannot define ops; use "
                               "a DEF or FRAGMENT library");
    ck_assert_ptr_null(tt_custom_op_define(lib, NUMPY_MUL_PLAIN("other::f(Tensor x) -> Tensor")));
    ck_assert_error(TT_EINVAL, "tt_custom_op_define: other::f: a library for namespace 'mylib' "
                               "cannot define ops in namespace 'other'");
    ck_assert_ptr_null(tt_custom_op_define(lib, NUMPY_MUL_PLAIN("mylib::f(Tensor x, int64_t n) "
                                                               "-> Tensor")));
    ck_assert_error(TT_ESCHEMA, "column");
    ck_assert_ptr_null(tt_custom_op_define(NULL, NUMPY_MUL_PLAIN("mylib::f(Tensor x) -> Tensor")));
    ck_assert_error(TT_EINVAL, "tt_custom_op_define: argument 'lib' is NULL");
    ck_assert_ptr_null(tt_custom_op_define(lib, NULL));
    ck_assert_error(TT_EINVAL, "tt_custom_op_define: argument 'spec' is NULL");
    ck_assert_ptr_null(tt_custom_op_define(lib, &(tt_custom_op_spec){.schema = NULL}));
    ck_assert_error(TT_EINVAL, "tt_custom_op_define: argument 'spec->schema' is NULL");
    /* None of the refused definitions exists. */
    ck_assert_ptr_null(tt_op_find("mylib::f"));
    ck_assert_error(TT_ENOTFOUND, "tt_op_find: no op named 'mylib::f'");
    free_lib(impl);
    free_lib(frag);
    free_lib(lib);
}
END_TEST

/* A mutable op: numpy_sin writes its output argument. */
START_TEST(test_define_mutable)
{
    tt_library *lib = new_lib(TT_LIB_DEF, "mylib");
    tt_op *op = define_ok(lib, &numpy_sin_spec);
    char buf[256];
    schema_text(op, buf, sizeof buf);
    ck_assert_str_eq(buf, "mylib::numpy_sin(Tensor input, Tensor(a!) output) -> ()");
    ck_assert(tt_schema_is_mutable(tt_op_schema(op)));
    ck_assert(tt_op_has_kernel(op, TT_DEV_CPU));
    ck_assert(!tt_op_has_kernel(op, TT_DEV_CUDA));
    ck_assert(!tt_op_has_kernel(op, TT_DEV_META));
    /* Without the annotation, mutates_args supplies it (as custom_op
     * infers a schema), named after the argument's position. */
    tt_custom_op_spec plain = numpy_sin_spec;
    plain.schema = "mylib::numpy_sin2(Tensor input, Tensor output) -> ()";
    tt_op *op2 = define_ok(lib, &plain);
    schema_text(op2, buf, sizeof buf);
    ck_assert_str_eq(buf, "mylib::numpy_sin2(Tensor input, Tensor(a1!) output) -> ()");
    ck_assert(tt_schema_is_mutable(tt_op_schema(op2)));
    ck_assert(tt_schema_arg(tt_op_schema(op2), 1)->is_write);
    ck_assert(!tt_schema_arg(tt_op_schema(op2), 0)->is_write);
    /* The annotation alone (mutates_args NULL: as the schema says). */
    plain.schema = "mylib::numpy_sin3(Tensor input, Tensor(a!) output) -> ()";
    plain.mutates_args = NULL;
    tt_op *op3 = define_ok(lib, &plain);
    ck_assert(tt_schema_is_mutable(tt_op_schema(op3)));

    const tt_op *all[] = {op, op2, op3};
    for (int i = 0; i < 3; i++) {
        tt_tensor *in = NN(tt_linspace(-2, 2, 7, TT_F64));
        tt_tensor *out = NN(tt_zeros(TT_SHAPE(7), TT_F64));
        uint64_t vin = tt_version(in), vout = tt_version(out);
        tt_value none = tt_v_none();
        OK(tt_op_call(all[i], (tt_value[]){tt_v_tensor(in), tt_v_tensor(out)}, 2, &none, 0));
        /* The write is visible to autograd's version checks; the input's
         * version does not move. */
        ck_assert_uint_eq(tt_version(out), vout + 1);
        ck_assert_uint_eq(tt_version(in), vin);
        double *vi = tt_test_values(in), *vo = tt_test_values(out);
        for (int k = 0; k < 7; k++)
            ck_assert_double_eq_tol(vo[k], sin(vi[k]), 1e-15);
        free(vi);
        free(vo);
        tt_release(out);
        tt_release(in);
    }
    free_lib(lib);
}
END_TEST

/* ================================================ in-place and out= */

typedef struct {
    const char *schema;
    const char *mutates; /* NULL: as the schema says */
    const char *error;   /* NULL: accepted */
} def_case;

/* Accepted: each variant in the conventions PyTorch's codegen enforces. */
static const def_case good_variants[] = {
    {"mylib::foo_(Tensor(a!) self, float val) -> Tensor(a!)", NULL, NULL},
    {"mylib::foo_(Tensor(a!) self, float val) -> Tensor(a!)", "self", NULL},
    {"mylib::foo.out(Tensor x, float val, *, Tensor(a!) out) -> Tensor(a!)", NULL, NULL},
    {"mylib::foo.out(Tensor x, float val, *, Tensor(a!) out) -> Tensor(a!)", "out", NULL},
    {"mylib::minmax.out(Tensor x, *, Tensor(a!) min, Tensor(b!) max) -> "
     "(Tensor(a!) min, Tensor(b!) max)", NULL, NULL},
    {"mylib::foo.out_int(Tensor x, int val, *, Tensor(a!) out) -> Tensor(a!)", NULL, NULL},
    /* A dunder name is not an in-place name. */
    {"mylib::__and__(Tensor self, Tensor other) -> Tensor", "", NULL},
    /* An op that mutates two arguments and returns nothing. */
    {"mylib::swap(Tensor(a!) x, Tensor(b!) y) -> ()", "x, y", NULL},
};

/* Refused, each with its reason. */
static const def_case bad_variants[] = {
    {"mylib::foo_(Tensor self, float val) -> Tensor", NULL,
     "mylib::foo_: an in-place op (its name ends in '_') must take 'Tensor(a!) self' as its "
     "first argument and return it as '-> Tensor(a!)'"},
    {"mylib::foo_(Tensor(a!) self) -> Tensor", NULL, "mylib::foo_: an in-place op"},
    {"mylib::foo_(Tensor x, Tensor(a!) self) -> Tensor(a!)", NULL, "mylib::foo_: an in-place op"},
    {"mylib::foo_(Tensor(a!) self, Tensor(b!) other) -> Tensor(b!)", NULL,
     "mylib::foo_: an in-place op"},
    /* mutates_args annotates self, but the return is not annotated. */
    {"mylib::foo_(Tensor self) -> Tensor", "self", "mylib::foo_: an in-place op"},
    {"mylib::foo.out(Tensor x, Tensor(a!) out) -> Tensor(a!)", NULL,
     "mylib::foo.out: an out= op's mutated argument 'out' must be keyword-only (after '*')"},
    {"mylib::foo.out(Tensor x, *, Tensor(a!) out) -> Tensor", NULL,
     "mylib::foo.out: an out= op must return each out argument, in order, with its alias "
     "annotation (argument 'out' is not returned as 'Tensor(a!)')"},
    {"mylib::minmax.out(Tensor x, *, Tensor(a!) min, Tensor(b!) max) -> "
     "(Tensor(b!), Tensor(a!))", NULL,
     "argument 'min' is not returned as 'Tensor(a!)'"},
    {"mylib::foo.out(Tensor x, *, Tensor(a!) out) -> (Tensor(a!), Tensor)", NULL,
     "mylib::foo.out: an out= op returns exactly its 1 out argument(s), but the schema has 2 "
     "returns"},
    {"mylib::foo.out(Tensor x) -> Tensor", NULL,
     "mylib::foo.out: an out= op (overload 'out') needs a keyword-only 'Tensor(a!) out' "
     "argument"},
    {"mylib::foo.out(Tensor x, *, Tensor out) -> Tensor", NULL,
     "mylib::foo.out: an out= op (overload 'out') needs a keyword-only 'Tensor(a!) out'"},
    /* A functional op cannot return something written. */
    {"mylib::foo(Tensor x) -> Tensor(a!)", NULL,
     "mylib::foo: return 0 is annotated as written (!) but no argument is"},
};

START_TEST(test_variants_accepted)
{
    const def_case *c = &good_variants[_i];
    tt_library *lib = new_lib(TT_LIB_DEF, "mylib");
    tt_op *op = define_ok(lib, &(tt_custom_op_spec){.schema = c->schema,
                                                    .mutates_args = c->mutates,
                                                    .kernel = kernel_default});
    ck_assert_ptr_eq(tt_op_find(tt_op_name(op)), op);
    free_lib(lib);
}
END_TEST

START_TEST(test_variants_refused)
{
    const def_case *c = &bad_variants[_i];
    tt_library *lib = new_lib(TT_LIB_DEF, "mylib");
    ck_assert_msg(tt_custom_op_define(lib, &(tt_custom_op_spec){.schema = c->schema,
                                                                .mutates_args = c->mutates,
                                                                .kernel = kernel_default}) == NULL,
                  "'%s' was accepted", c->schema);
    ck_assert_error(TT_ESCHEMA, c->error);
    ck_assert_error(TT_ESCHEMA, "tt_custom_op_define: ");
    tt_schema *s = tt_schema_parse(c->schema);
    ck_assert_ptr_nonnull(s);
    char name[128];
    snprintf(name, sizeof name, "mylib::%s%s%s", tt_schema_name(s),
             *tt_schema_overload(s) ? "." : "", tt_schema_overload(s));
    tt_schema_free(s);
    ck_assert_ptr_null(tt_op_find(name));
    free_lib(lib);
}
END_TEST

/* aten's out= overloads are named "out" or "out_<variant>": "outer" is an
 * ordinary (here functional) overload. */
START_TEST(test_out_prefix_overload_is_not_out)
{
    tt_library *lib = new_lib(TT_LIB_DEF, "mylib");
    tt_op *op = tt_custom_op_define(lib, NUMPY_MUL_PLAIN("mylib::mul.outer(Tensor x, float val) "
                                                        "-> Tensor"));
    ck_assert_msg(op != NULL, "a functional overload named 'outer' was refused: %s", tt_errmsg());
    free_lib(lib);
}
END_TEST

/* A "maybe-out" op (an optional mutated tensor) is refused with the advice
 * to split it, whether the schema or mutates_args says it mutates. */
START_TEST(test_maybe_out_refused)
{
    tt_library *lib = new_lib(TT_LIB_DEF, "mylib");
    /* An optional tensor written and returned: a maybe-out op. */
    ck_assert_ptr_null(tt_custom_op_define(lib, &(tt_custom_op_spec){
        .schema = "mylib::maybe(Tensor x, Tensor(a!)? out=None) -> Tensor(a!)",
        .kernel = kernel_default}));
    ck_assert_error(TT_ESCHEMA, "tt_custom_op_define: mylib::maybe: argument 'out' is an optional "
                                "mutated tensor that the op also returns (return 0 is "
                                "'Tensor(a!)'), so the op sometimes returns it and sometimes "
                                "allocates its result (a \"maybe-out\" op); this is not "
                                "supported: split it into a functional op 'mylib::maybe' that "
                                "returns a new tensor and an out= op 'mylib::maybe.out' whose "
                                "keyword-only 'Tensor(a!) out' is required (an op that writes an "
                                "optional tensor and does not return it is accepted)");
    ck_assert_ptr_null(tt_op_find("mylib::maybe"));
    /* Written and not returned: PyTorch auto-functionalizes it; accepted,
     * and a call without the tensor works. */
    tt_op *opt = define_ok(lib, &(tt_custom_op_spec){
        .schema = "mylib::opt_sin(Tensor input, Tensor(a!)? output=None) -> ()",
        .kernel = tutorial_numpy_sin_kernel});
    tt_tensor *x = NN(tt_ones(TT_SHAPE(3), TT_F32)), *y = NN(tt_zeros(TT_SHAPE(3), TT_F32));
    OK(tt_op_call(opt, (tt_value[]){tt_v_tensor(x), tt_v_tensor(y)}, 2, NULL, 0));
    double v;
    OK(tt_get(y, &v, 0));
    ck_assert_double_eq_tol(v, sin(1.0), 1e-6);
    define_ok(lib, &(tt_custom_op_spec){.schema = "mylib::opt2(Tensor x, Tensor? out=None) -> Tensor",
                                        .mutates_args = "out", .kernel = kernel_default});
    /* The split version is accepted. */
    define_ok(lib, &(tt_custom_op_spec){.schema = "mylib::maybe(Tensor x) -> Tensor",
                                        .kernel = kernel_default});
    define_ok(lib, &(tt_custom_op_spec){
        .schema = "mylib::maybe.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)",
        .kernel = kernel_default});
    tt_release(y);
    tt_release(x);
    free_lib(lib);
}
END_TEST

/* mutates_args and the (a!) annotations must agree, both ways. */
START_TEST(test_mutates_contradictions)
{
    static const def_case cases[] = {
        /* annotated but not listed */
        {"mylib::s(Tensor input, Tensor(a!) output) -> ()", "",
         "tt_custom_op_define: mylib::s: the schema marks 'output' as mutated (Tensor(a!)) but "
         "mutates_args does not list it"},
        {"mylib::s(Tensor(a!) input, Tensor(b!) output) -> ()", "input",
         "mylib::s: the schema marks 'output' as mutated (Tensor(a!)) but mutates_args does "
         "not list it"},
        /* listed but not annotated, in a schema that annotates others */
        {"mylib::s(Tensor input, Tensor(a!) output) -> ()", "input, output",
         "tt_custom_op_define: mylib::s: mutates_args lists 'input' but the schema does not "
         "mark it mutated; write 'Tensor(a!) input'"},
        {"mylib::s(Tensor input, Tensor(a!) output) -> ()", "input",
         "mutates_args lists 'input' but the schema does not mark it mutated"},
        /* names that are not arguments, or not tensors */
        {"mylib::s(Tensor input, Tensor output) -> ()", "outptu",
         "tt_custom_op_define: mylib::s: mutates_args names 'outptu', which is not an argument "
         "(arguments: input, output)"},
        {"mylib::s(Tensor input, int n) -> ()", "n",
         "tt_custom_op_define: mylib::s: mutates_args names 'n', which is not a Tensor; only "
         "tensors can be mutated"},
    };
    tt_library *lib = new_lib(TT_LIB_DEF, "mylib");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ck_assert_msg(tt_custom_op_define(lib, &(tt_custom_op_spec){
                          .schema = cases[i].schema, .mutates_args = cases[i].mutates,
                          .kernel = tutorial_numpy_sin_kernel}) == NULL,
                      "case %zu was accepted", i);
        tt_status want = strstr(cases[i].error, "mutates_args names") ? TT_EINVAL : TT_ESCHEMA;
        ck_assert_error(want, cases[i].error);
        ck_assert_ptr_null(tt_op_find("mylib::s"));
    }
    /* Agreement, both listed and annotated, is accepted. */
    define_ok(lib, &(tt_custom_op_spec){.schema = "mylib::s(Tensor(a!) input, Tensor(b!) output) "
                                                  "-> ()",
                                        .mutates_args = "output,input",
                                        .kernel = tutorial_numpy_sin_kernel});
    free_lib(lib);
}
END_TEST

/* ============================================================ kernels */

START_TEST(test_kernels_per_device)
{
    tt_library *lib = new_lib(TT_LIB_DEF, "mylib");
    const char *schema = "mylib::which(Tensor x) -> Tensor";
    tt_op *op = define_ok(lib, &(tt_custom_op_spec){.schema = schema, .mutates_args = ""});
    ck_assert(!tt_op_has_kernel(op, TT_DEV_CPU));
    tt_tensor *x = NN(tt_ones(TT_SHAPE(3), TT_F32));
    ck_assert_ptr_null(tt_call(op, tt_v_tensor(x)));
    ck_assert_error(TT_ENOKERNEL, "mylib::which: no kernel for device 'cpu' (registered: "
                                  "nothing); register one with tt_register_kernel(lib, "
                                  "\"mylib::which\", \"cpu\", fn)");
    /* A default kernel serves every device. */
    OK(tt_register_kernel(lib, "mylib::which", NULL, kernel_default));
    ck_assert(tt_op_has_kernel(op, TT_DEV_CPU) && tt_op_has_kernel(op, TT_DEV_CUDA));
    last_kernel = 0;
    tt_tensor *y = NN(tt_call(op, tt_v_tensor(x)));
    ck_assert_int_eq(last_kernel, 2);
    tt_release(y);
    ck_assert_int_eq(tt_register_kernel(lib, "mylib::which", NULL, kernel_cpu), TT_EEXIST);
    ck_assert_error(TT_EEXIST, "tt_register_kernel: mylib::which already has a default kernel "
                               "(registered by library DEF 'mylib' #");
    ck_assert_error(TT_EEXIST, "free that library to replace it");
    /* A cpu kernel is preferred over the default one on cpu. */
    OK(tt_register_kernel(lib, "mylib::which", "cpu", kernel_cpu));
    y = NN(tt_call(op, tt_v_tensor(x)));
    ck_assert_int_eq(last_kernel, 1);
    tt_release(y);
    ck_assert_int_eq(tt_register_kernel(lib, "mylib::which", "cpu", kernel_default), TT_EEXIST);
    ck_assert_error(TT_EEXIST, "tt_register_kernel: mylib::which already has a cpu kernel");
    ck_assert_int_eq(tt_register_kernel(lib, "mylib::which", "cpu", NULL), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_register_kernel: argument 'fn' is NULL");

    /* Kernels for devices other than cpu do not serve cpu tensors. */
    tt_op *cu = define_ok(lib, &(tt_custom_op_spec){.schema = "mylib::on_cuda(Tensor x) -> Tensor",
                                                    .device_types = "cuda",
                                                    .kernel = kernel_cuda});
    ck_assert(tt_op_has_kernel(cu, TT_DEV_CUDA) && !tt_op_has_kernel(cu, TT_DEV_CPU));
    ck_assert_ptr_null(tt_call(cu, tt_v_tensor(x)));
    ck_assert_error(TT_ENOKERNEL, "mylib::on_cuda: no kernel for device 'cpu' (registered: cuda)");
    /* Registering for several devices where one is taken registers none. */
    ck_assert_int_eq(tt_register_kernel(lib, "mylib::on_cuda", "cpu, cuda", kernel_cpu),
                     TT_EEXIST);
    ck_assert_error(TT_EEXIST, "mylib::on_cuda already has a cuda kernel");
    ck_assert(!tt_op_has_kernel(cu, TT_DEV_CPU));
    OK(tt_register_kernel(lib, "mylib::on_cuda", "cpu", kernel_cpu));
    y = NN(tt_call(cu, tt_v_tensor(x)));
    ck_assert_int_eq(last_kernel, 1);
    tt_release(y);
    /* Several device types in a spec. */
    tt_op *both = define_ok(lib, &(tt_custom_op_spec){.schema = "mylib::both(Tensor x) -> Tensor",
                                                      .device_types = "cpu, cuda",
                                                      .kernel = kernel_cpu});
    ck_assert(tt_op_has_kernel(both, TT_DEV_CPU) && tt_op_has_kernel(both, TT_DEV_CUDA));
    ck_assert(!tt_op_has_kernel(both, TT_DEV_META));
    tt_release(x);
    free_lib(lib);
}
END_TEST

START_TEST(test_unknown_device_type)
{
    tt_library *lib = new_lib(TT_LIB_DEF, "mylib");
    ck_assert_ptr_null(tt_custom_op_define(lib, &(tt_custom_op_spec){
        .schema = "mylib::which(Tensor x) -> Tensor", .device_types = "tpu",
        .kernel = kernel_cpu}));
    ck_assert_error(TT_EINVAL, "tt_custom_op_define: device type 'tpu' does not exist; known "
                               "device types: cpu, cuda, meta");
    ck_assert_ptr_null(tt_op_find("mylib::which"));
    ck_assert_ptr_null(tt_custom_op_define(lib, &(tt_custom_op_spec){
        .schema = "mylib::which(Tensor x) -> Tensor", .device_types = "cpu, gpu",
        .kernel = kernel_cpu}));
    ck_assert_error(TT_EINVAL, "device type 'gpu' does not exist");
    ck_assert_ptr_null(tt_custom_op_define(lib, &(tt_custom_op_spec){
        .schema = "mylib::which(Tensor x) -> Tensor", .device_types = " , ",
        .kernel = kernel_cpu}));
    ck_assert_error(TT_EINVAL, "tt_custom_op_define: argument 'device_types' names no device");
    define_ok(lib, &(tt_custom_op_spec){.schema = "mylib::which(Tensor x) -> Tensor"});
    ck_assert_int_eq(tt_register_kernel(lib, "mylib::which", "gpu", kernel_cpu), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_register_kernel: device type 'gpu' does not exist; known "
                               "device types: cpu, cuda, meta");
    ck_assert(!tt_op_has_kernel(tt_op_find("mylib::which"), TT_DEV_CPU));
    free_lib(lib);
}
END_TEST

/* ================================================== registration errors */

START_TEST(test_register_unknown_op)
{
    tt_library *lib = new_lib(TT_LIB_DEF, "mylib");
    ck_assert_int_eq(tt_register_kernel(lib, "mylib::nope", "cpu", kernel_cpu), TT_ENOTFOUND);
    ck_assert_error(TT_ENOTFOUND, "tt_register_kernel: no op named 'mylib::nope'; define it "
                                  "first with tt_custom_op_define");
    ck_assert_int_eq(tt_register_fake(lib, "mylib::nope", kernel_cpu), TT_ENOTFOUND);
    ck_assert_error(TT_ENOTFOUND, "tt_register_fake: no op named 'mylib::nope'; define it first");
    ck_assert_int_eq(tt_register_autograd(lib, "mylib::nope", identity_backward, NULL),
                     TT_ENOTFOUND);
    ck_assert_error(TT_ENOTFOUND, "tt_register_autograd: no op named 'mylib::nope'; define it "
                                  "first");
    ck_assert_int_eq(tt_register_kernel(lib, "nope", NULL, kernel_cpu), TT_ENOTFOUND);
    ck_assert_error(TT_ENOTFOUND, "no op named 'nope' (names look like 'mylib::crop')");
    ck_assert_int_eq(tt_register_kernel(lib, NULL, NULL, kernel_cpu), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_register_kernel: argument 'op' is NULL");
    /* Only overloads exist: they are listed. */
    define_ok(lib, &(tt_custom_op_spec){
        .schema = "mylib::foo.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)"});
    ck_assert_int_eq(tt_register_fake(lib, "mylib::foo", kernel_cpu), TT_ENOTFOUND);
    ck_assert_error(TT_ENOTFOUND, "no op named 'mylib::foo'; it has overloads: mylib::foo.out");
    OK(tt_register_fake(lib, "mylib::foo.out", kernel_cpu));
    /* Another namespace's op needs an IMPL library. */
    tt_library *other = new_lib(TT_LIB_DEF, "otherlib");
    define_ok(other, &(tt_custom_op_spec){.schema = "otherlib::f(Tensor x) -> Tensor"});
    ck_assert_int_eq(tt_register_kernel(lib, "otherlib::f", "cpu", kernel_cpu), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_register_kernel: library DEF 'mylib' cannot register kernels "
                               "for otherlib::f; use an IMPL library for another namespace");
    tt_library *impl = new_lib(TT_LIB_IMPL, "mylib");
    OK(tt_register_kernel(impl, "otherlib::f", "cpu", kernel_cpu));
    free_lib(impl);
    free_lib(other);
    free_lib(lib);
}
END_TEST

START_TEST(test_fake_registered_twice)
{
    tt_library *lib = new_lib(TT_LIB_DEF, "mylib");
    define_ok(lib, NUMPY_MUL_PLAIN("mylib::numpy_mul(Tensor x, *, float val) -> Tensor"));
    ck_assert_int_eq(tt_register_fake(lib, "mylib::numpy_mul", tutorial_numpy_mul_kernel),
                     TT_EEXIST);
    ck_assert_error(TT_EEXIST, "tt_register_fake: mylib::numpy_mul already has a fake kernel "
                               "(registered by library DEF 'mylib' #");
    ck_assert_error(TT_EEXIST, "); free that library to replace it");
    ck_assert_int_eq(tt_register_fake(lib, "mylib::numpy_mul", NULL), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_register_fake: argument 'fn' is NULL");
    /* Through an IMPL library: freeing it frees the slot. */
    tt_op *w = define_ok(lib, &(tt_custom_op_spec){.schema = "mylib::which(Tensor x) -> Tensor",
                                                   .kernel = kernel_cpu});
    tt_library *impl = new_lib(TT_LIB_IMPL, "mylib");
    OK(tt_register_fake(impl, "mylib::which", tutorial_numpy_mul_kernel));
    ck_assert_int_eq(tt_register_fake(lib, "mylib::which", tutorial_numpy_mul_kernel), TT_EEXIST);
    ck_assert_error(TT_EEXIST, "mylib::which already has a fake kernel (registered by library "
                               "IMPL 'mylib' #");
    free_lib(impl);
    ck_assert(!tt_op_has_fake(w));
    ck_assert(tt_op_has_kernel(w, TT_DEV_CPU)); /* the DEF library's kernel stays */
    OK(tt_register_fake(lib, "mylib::which", tutorial_numpy_mul_kernel));
    ck_assert(tt_op_has_fake(w));
    free_lib(lib);
}
END_TEST

START_TEST(test_autograd_registration_errors)
{
    tt_library *lib = new_lib(TT_LIB_DEF, "mylib");
    /* No Tensor input: nothing to differentiate. */
    ck_assert_ptr_null(tt_custom_op_define(lib, &(tt_custom_op_spec){
        .schema = "mylib::make(int n) -> Tensor", .backward = identity_backward}));
    ck_assert_error(TT_EINVAL, "tt_custom_op_define: mylib::make has no Tensor inputs, so there is "
                               "nothing to differentiate");
    define_ok(lib, &(tt_custom_op_spec){.schema = "mylib::make(int n) -> Tensor"});
    ck_assert_int_eq(tt_register_autograd(lib, "mylib::make", identity_backward, NULL),
                     TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_register_autograd: mylib::make has no Tensor inputs, so "
                               "there is nothing to differentiate");
    /* A Tensor[] input is a Tensor input. */
    define_ok(lib, &(tt_custom_op_spec){.schema = "mylib::cat(Tensor[] xs) -> Tensor",
                                        .backward = identity_backward});
    /* setup_context needs a backward. */
    ck_assert_ptr_null(tt_custom_op_define(lib, &(tt_custom_op_spec){
        .schema = "mylib::f(Tensor x) -> Tensor",
        .setup_context = tutorial_numpy_mul_setup_context}));
    ck_assert_error(TT_EINVAL, "tt_custom_op_define: mylib::f: setup_context was given without "
                               "a backward");
    /* Twice. */
    define_ok(lib, NUMPY_MUL_SPEC("mylib::numpy_mul(Tensor x, *, float val) -> Tensor",
                                  tutorial_numpy_mul_backward));
    ck_assert_int_eq(tt_register_autograd(lib, "mylib::numpy_mul", identity_backward, NULL),
                     TT_EEXIST);
    ck_assert_error(TT_EEXIST, "tt_register_autograd: mylib::numpy_mul already has an autograd "
                               "registration (by library DEF 'mylib' #");
    ck_assert_int_eq(tt_register_autograd(lib, "mylib::numpy_mul", NULL, NULL), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_register_autograd: argument 'backward' is NULL");
    /* Mutable, in-place and out= ops: autograd is for functional ops, as
     * torch.library says. */
    define_ok(lib, &numpy_sin_spec);
    ck_assert_int_eq(tt_register_autograd(lib, "mylib::numpy_sin", identity_backward, NULL),
                     TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_register_autograd: mylib::numpy_sin mutates its arguments; "
                               "autograd is supported for functional ops (register it on the "
                               "functional variant)");
    ck_assert_ptr_null(tt_custom_op_define(lib, &(tt_custom_op_spec){
        .schema = "mylib::scale_(Tensor(a!) self, float s) -> Tensor(a!)",
        .backward = identity_backward}));
    ck_assert_error(TT_EINVAL, "tt_custom_op_define: mylib::scale_ mutates its arguments; "
                               "autograd is supported for functional ops");
    free_lib(lib);
}
END_TEST

/* ================================================================ fake */

START_TEST(test_fake_missing)
{
    tt_library *lib = new_lib(TT_LIB_DEF, "mylib");
    tt_op *op = define_ok(lib, &(tt_custom_op_spec){.schema = "mylib::which(Tensor x) -> Tensor",
                                                    .device_types = "cpu",
                                                    .kernel = kernel_cpu});
    tt_tensor *x = NN(tt_ones(TT_SHAPE(2, 3), TT_F32)), *fx = NN(tt_fake_like(x));
    ck_assert_ptr_null(tt_call(op, tt_v_tensor(fx)));
    ck_assert_error(TT_ENOKERNEL, "mylib::which: no fake kernel is registered, so the op cannot "
                                  "run on fake tensors (registered: cpu); register one with "
                                  "tt_register_fake(lib, \"mylib::which\", fn)");
    /* One fake input among real ones is enough. */
    tt_op *two = define_ok(lib, &(tt_custom_op_spec){
        .schema = "mylib::two(Tensor a, Tensor b) -> Tensor", .kernel = kernel_default,
        .backward = identity_backward});
    ck_assert_ptr_null(tt_call(two, tt_v_tensor(x), tt_v_tensor(fx)));
    ck_assert_error(TT_ENOKERNEL, "mylib::two: no fake kernel is registered, so the op cannot "
                                  "run on fake tensors (registered: default (all devices), "
                                  "autograd)");
    tt_release(fx);
    tt_release(x);
    free_lib(lib);
}
END_TEST

START_TEST(test_fake_reads_data)
{
    tt_library *lib = new_lib(TT_LIB_DEF, "mylib");
    tt_op *op = define_ok(lib, &(tt_custom_op_spec){.schema = "mylib::peek(Tensor x) -> Tensor",
                                                    .kernel = kernel_cpu, .fake = peeking_fake});
    tt_tensor *x = NN(tt_ones(TT_SHAPE(4), TT_F32)), *fx = NN(tt_fake_like(x));
    ck_assert_ptr_null(tt_call(op, tt_v_tensor(fx)));
    ck_assert_error(TT_EFAKE, "mylib::peek: the fake kernel read tensor data, but fake tensors "
                              "have none; a fake kernel may only use metadata (sizes, strides, "
                              "dtype)");
    /* The real kernel still runs on real tensors. */
    tt_tensor *y = NN(tt_call(op, tt_v_tensor(x)));
    tt_release(y);
    tt_release(fx);
    tt_release(x);
    free_lib(lib);
}
END_TEST

/* torch.library's nonzero example: the fake output's first size is a new
 * unbacked symbol u0; the real kernel gives the count. */
START_TEST(test_fake_dynamic_size)
{
    tt_sym_reset(); /* so the symbols are u0, u1 */
    tt_library *lib = new_lib(TT_LIB_DEF, "mylib");
    tt_op *op = define_ok(lib, &(tt_custom_op_spec){.schema = "mylib::nonzero(Tensor x) -> Tensor",
                                                    .mutates_args = "",
                                                    .kernel = tt_test_nonzero_kernel,
                                                    .fake = tt_test_nonzero_fake});
    const float data[] = {0, 1, 2, 0, 0, 1, 3, 0};
    tt_tensor *x = NN(tt_from_data(TT_SHAPE(2, 4), TT_F32, data));
    tt_tensor *real = NN(tt_call(op, tt_v_tensor(x)));
    ck_assert_int_eq(tt_ndim(real), 2);
    ck_assert_int_eq(tt_dim_size(real, 0), 4);
    ck_assert_int_eq(tt_dim_size(real, 1), 2);
    ck_assert_int_eq(tt_dtype_of(real), TT_I64);
    double *v = tt_test_values(real);
    const double want[] = {0, 1, 0, 2, 1, 1, 1, 2};
    for (int k = 0; k < 8; k++)
        ck_assert_double_eq(v[k], want[k]);
    free(v);

    tt_tensor *fx = NN(tt_fake_like(x));
    tt_tensor *fake = NN(tt_call(op, tt_v_tensor(fx)));
    ck_assert(tt_is_fake(fake));
    ck_assert_int_eq(tt_ndim(fake), 2);
    ck_assert_int_eq(tt_dtype_of(fake), TT_I64);
    tt_size n = tt_dim_size(fake, 0);
    ck_assert(tt_size_is_sym(n));
    ck_assert(!tt_size_is_sym(tt_dim_size(fake, 1)));
    ck_assert_int_eq(tt_dim_size(fake, 1), 2);
    ck_assert_int_eq(tt_sym_hint(n), -1); /* unbacked: no example value */
    char buf[64];
    tt_size_str(n, buf, sizeof buf);
    ck_assert_str_eq(buf, "u0");
    ck_assert(tt_has_sym_sizes(fake));
    ck_assert_str_eq(tt_shape_str(fake, buf, sizeof buf), "[u0, 2]");
    ck_assert_int_eq(tt_dim_stride(fake, 0), 2);
    ck_assert_int_eq(tt_dim_stride(fake, 1), 1);
    /* Each call makes a new symbol. */
    tt_tensor *fake2 = NN(tt_call(op, tt_v_tensor(fx)));
    tt_size_str(tt_dim_size(fake2, 0), buf, sizeof buf);
    ck_assert_str_eq(buf, "u1");
    ck_assert(tt_dim_size(fake2, 0) != n);
    tt_release(fake2);
    tt_release(fake);
    tt_release(fx);
    tt_release(real);

    /* In a real kernel, a dynamic size is an error. */
    tt_op *bad = define_ok(lib, &(tt_custom_op_spec){.schema = "mylib::bad(Tensor x) -> Tensor",
                                                     .kernel = dynamic_in_real_kernel});
    ck_assert_ptr_null(tt_call(bad, tt_v_tensor(x)));
    ck_assert_error(TT_EINVAL, "mylib::bad: tt_frame_new_dynamic_size can only be called in a "
                               "fake kernel (a real kernel knows its sizes)");
    /* And outside any kernel. */
    ck_assert_int_eq(tt_frame_new_dynamic_size(NULL), 0);
    ck_assert_error(TT_EINVAL, "tt_frame_new_dynamic_size can only be called in a fake kernel");
    tt_release(x);
    free_lib(lib);
}
END_TEST

/* A mutable op that returns nothing, on fake tensors. PyTorch generates a
 * trivial fake impl for it (torch/_library/utils.py,
 * can_generate_trivial_fake_impl: a mutable custom op with no returns), so
 * the tutorial's numpy_sin needs no register_fake. The dispatcher here does
 * not: it refuses the call for want of a fake kernel. This test pins what
 * the dispatcher does today. */
START_TEST(test_fake_mutable_returning_nothing)
{
    tt_library *lib = new_lib(TT_LIB_DEF, "mylib");
    tt_op *op = define_ok(lib, &numpy_sin_spec);
    tt_tensor *in = NN(tt_ones(TT_SHAPE(3), TT_F32)), *out = NN(tt_zeros(TT_SHAPE(3), TT_F32));
    tt_tensor *fin = NN(tt_fake_like(in)), *fout = NN(tt_fake_like(out));
    tt_value none = tt_v_none();
    uint64_t v = tt_version(fout);
    /* As PyTorch's generated trivial fake impl: the call succeeds on fake
     * tensors with no fake kernel, and the write is still a write. */
    OK(tt_op_call(op, (tt_value[]){tt_v_tensor(fin), tt_v_tensor(fout)}, 2, &none, 0));
    ck_assert_uint_eq(tt_version(fout), v + 1);
    /* A functional op still needs one. */
    tt_op *f = define_ok(lib, &(tt_custom_op_spec){
        .schema = "mylib::nofake(Tensor a) -> Tensor", .kernel = kernel_default});
    ck_assert_ptr_null(tt_call(f, tt_v_tensor(fin)));
    ck_assert_error(TT_ENOKERNEL, "mylib::nofake: no fake kernel is registered, so the op "
                                  "cannot run on fake tensors (registered: default (all "
                                  "devices)); register one with tt_register_fake(lib, "
                                  "\"mylib::nofake\", fn)");
    /* A registered fake kernel is used when there is one. */
    OK(tt_register_fake(lib, "mylib::numpy_sin", nothing_fake));
    OK(tt_op_call(op, (tt_value[]){tt_v_tensor(fin), tt_v_tensor(fout)}, 2, &none, 0));
    ck_assert_uint_eq(tt_version(fout), v + 2);
    tt_release(fout);
    tt_release(fin);
    tt_release(out);
    tt_release(in);
    free_lib(lib);
}
END_TEST

/* ============================================================ autograd */

START_TEST(test_autograd_missing)
{
    tt_library *lib = new_lib(TT_LIB_DEF, "mylib");
    tt_op *op = define_ok(lib, &(tt_custom_op_spec){
        .schema = "mylib::two(Tensor a, Tensor b) -> Tensor", .kernel = kernel_default});
    tt_tensor *a = NN(tt_ones(TT_SHAPE(3), TT_F32)), *b = NN(tt_ones(TT_SHAPE(3), TT_F32));
    OK(tt_set_requires_grad(b, true));
    ck_assert(tt_grad_enabled());
    ck_assert_ptr_null(tt_call(op, tt_v_tensor(a), tt_v_tensor(b)));
    ck_assert_error(TT_EAUTOGRAD, "mylib::two: argument 'b' requires grad, but the op has no "
                                  "autograd registration, so training through it would give no "
                                  "gradient. Register one with tt_register_autograd(lib, "
                                  "\"mylib::two\", backward, setup_context)");
    ck_assert_error(TT_EAUTOGRAD, "or call it under tt_no_grad_begin()");
    /* Under no-grad it runs, and nothing is recorded. */
    tt_no_grad_begin();
    ck_assert(!tt_grad_enabled());
    tt_tensor *y = tt_call(op, tt_v_tensor(a), tt_v_tensor(b));
    tt_no_grad_end();
    ck_assert(tt_grad_enabled());
    NN(y);
    ck_assert(!tt_requires_grad(y));
    ck_assert_ptr_null(tt_grad_fn_name(y));
    tt_release(y);
    /* Inputs that do not require grad need no registration either. */
    OK(tt_set_requires_grad(b, false));
    y = NN(tt_call(op, tt_v_tensor(a), tt_v_tensor(b)));
    ck_assert(!tt_requires_grad(y));
    tt_release(y);
    /* With a registration it records. */
    OK(tt_register_autograd(lib, "mylib::two", identity_backward, NULL));
    OK(tt_set_requires_grad(a, true));
    y = NN(tt_call(op, tt_v_tensor(a), tt_v_tensor(b)));
    ck_assert(tt_requires_grad(y));
    ck_assert_str_eq(tt_grad_fn_name(y), "mylib::two");
    tt_release(y);
    tt_release(b);
    tt_release(a);
    free_lib(lib);
}
END_TEST

/* What setup_context sees: every argument, defaults filled in, and which
 * inputs need a gradient. */
static struct {
    int ninputs, noutputs, nslots;
    double s;
    bool needs[2];
    const tt_op *op;
} seen;

static tt_status scale_setup(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                             const tt_value *out, int nout)
{
    seen.ninputs = nin;
    seen.noutputs = nout;
    seen.s = in[1].kind == TT_V_FLOAT ? in[1].u.f : NAN;
    seen.nslots = tt_ctx_num_inputs(ctx);
    seen.needs[0] = tt_ctx_needs_input_grad(ctx, 0);
    seen.needs[1] = tt_ctx_needs_input_grad(ctx, 1);
    seen.op = tt_ctx_op(ctx);
    (void)out;
    return tt_ctx_save_float(ctx, "val", seen.s);
}

START_TEST(test_setup_context_inputs)
{
    tt_library *lib = new_lib(TT_LIB_DEF, "mylib");
    tt_op *op = define_ok(lib, &(tt_custom_op_spec){
        .schema = "mylib::scale(Tensor x, float val=2.5) -> Tensor",
        .kernel = tutorial_numpy_mul_kernel, .fake = tutorial_numpy_mul_kernel,
        .backward = tutorial_numpy_mul_backward, .setup_context = scale_setup});
    tt_tensor *x = NN(tt_ones(TT_SHAPE(2), TT_F64));
    OK(tt_set_requires_grad(x, true));
    memset(&seen, 0, sizeof seen);
    tt_tensor *y = NN(tt_call(op, tt_v_tensor(x)));
    ck_assert_int_eq(seen.ninputs, 2);
    ck_assert_int_eq(seen.noutputs, 1);
    ck_assert_double_eq(seen.s, 2.5);
    ck_assert_int_eq(seen.nslots, 2);
    ck_assert(seen.needs[0] && !seen.needs[1]);
    ck_assert_ptr_eq(seen.op, op);
    tt_tensor *ones = NN(tt_ones(TT_SHAPE(2), TT_F64)), *g = NULL;
    OK(tt_grad(1, &y, &ones, 1, &x, &g));
    double *v = tt_test_values(g);
    ck_assert_double_eq(v[0], 2.5);
    ck_assert_double_eq(v[1], 2.5);
    free(v);
    tt_release(g);
    tt_release(ones);
    tt_release(y);
    tt_release(x);
    free_lib(lib);
}
END_TEST

/* A training step through a custom op: w is a parameter, numpy_mul sits
 * between built-ins, tt_backward fills w.grad, an update under no-grad,
 * and a second step. */
START_TEST(test_training_step)
{
    tt_library *lib = new_lib(TT_LIB_DEF, "mylib");
    tt_op *op = define_ok(lib, NUMPY_MUL_SPEC("mylib::numpy_mul(Tensor x, *, float val) -> Tensor",
                                              tutorial_numpy_mul_backward));
    const double w0[] = {0.5, -1, 2, 0.25}, xs[] = {1, 2, -0.5, 3};
    tt_tensor *w = NN(tt_from_data(TT_SHAPE(4), TT_F64, w0));
    tt_tensor *x = NN(tt_from_data(TT_SHAPE(4), TT_F64, xs));
    tt_tensor *ones = NN(tt_ones(TT_SHAPE(4), TT_F64));
    OK(tt_set_requires_grad(w, true));
    double wv[4];
    memcpy(wv, w0, sizeof wv);
    for (int step = 0; step < 2; step++) {
        tt_scope_begin();
        tt_tensor *h = NN(tt_mul(x, w));                              /* x*w */
        tt_tensor *y = NN(tt_call(op, tt_v_tensor(h), tt_v_float(3))); /* 3xw */
        tt_tensor *z = NN(tt_sin(y));                                  /* sin(3xw) */
        ck_assert_str_eq(tt_grad_fn_name(y), "mylib::numpy_mul");
        ck_assert_str_eq(tt_grad_fn_name(z), "tt::sin");
        OK(tt_backward(z, ones));
        tt_tensor *g = NN(tt_get_grad(w));
        double *gv = tt_test_values(g);
        for (int k = 0; k < 4; k++) { /* d/dw sin(3xw) = 3x cos(3xw) */
            double want = 3 * xs[k] * cos(3 * xs[k] * wv[k]);
            ck_assert_msg(fabs(gv[k] - want) < 1e-12, "step %d: grad[%d] = %.17g, expected "
                          "%.17g", step, k, gv[k], want);
        }
        /* w -= 0.1 * grad; then zero the gradient. */
        tt_no_grad_begin();
        tt_status st = tt_add_scaled_(w, g, -0.1);
        tt_no_grad_end();
        OK(st);
        OK(tt_set_grad(w, NULL));
        for (int k = 0; k < 4; k++)
            wv[k] -= 0.1 * gv[k];
        free(gv);
        tt_release(g);
        tt_scope_end();
        double *now = tt_test_values(w);
        for (int k = 0; k < 4; k++)
            ck_assert_double_eq_tol(now[k], wv[k], 1e-15);
        free(now);
        ck_assert(tt_is_leaf(w) && tt_requires_grad(w));
    }
    tt_release(ones);
    tt_release(x);
    tt_release(w);
    free_lib(lib);
}
END_TEST

/* square's backward reads the input it saved. */
static tt_status save_input(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                            const tt_value *out, int nout)
{
    (void)nin, (void)out, (void)nout;
    return tt_ctx_save_for_backward(ctx, 1, &in[0].u.t);
}

static tt_status square_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                 tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    tt_tensor *x = tt_ctx_saved(ctx, 0), *two_x = x ? tt_mul_scalar(x, 2) : NULL;
    gi[0] = two_x ? tt_mul(g[0], two_x) : NULL;
    tt_release(two_x);
    return gi[0] ? TT_OK : tt_errcode();
}

static tt_status square_kernel(tt_frame *f)
{
    tt_tensor *x;
    tt_status st = tt_arg_tensor(f, 0, &x);
    return st ? st : tt_return(f, 0, tt_mul(x, x));
}

/* A gradient of the wrong shape from a backward. */
static tt_status wrong_shape_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                      tt_tensor **gi, int ni)
{
    (void)ctx, (void)g, (void)ng, (void)ni;
    gi[0] = tt_ones(TT_SHAPE(7), TT_F64);
    return gi[0] ? TT_OK : tt_errcode();
}

START_TEST(test_backward_errors)
{
    tt_library *lib = new_lib(TT_LIB_DEF, "mylib");
    tt_op *sq = define_ok(lib, &(tt_custom_op_spec){
        .schema = "mylib::square(Tensor x) -> Tensor", .kernel = square_kernel,
        .fake = square_kernel, .backward = square_backward, .setup_context = save_input});
    tt_op *ws = define_ok(lib, &(tt_custom_op_spec){
        .schema = "mylib::wrong_shape(Tensor x) -> Tensor", .kernel = kernel_default,
        .backward = wrong_shape_backward});
    tt_tensor *x = NN(tt_from_data(TT_SHAPE(2, 3), TT_F64, ((const double[]){1, 2, 3, 4, 5, 6})));
    OK(tt_set_requires_grad(x, true));
    tt_tensor *ones = NN(tt_ones(TT_SHAPE(2, 3), TT_F64));
    /* The saved input is written in place before backward. */
    tt_tensor *h = NN(tt_mul_scalar(x, 1));
    tt_tensor *y = NN(tt_call(sq, tt_v_tensor(h)));
    OK(tt_mul_scalar_(h, 2));
    ck_assert_int_eq(tt_backward(y, ones), TT_EAUTOGRAD);
    ck_assert_error(TT_EAUTOGRAD, "mylib::square: one of the tensors needed for gradient "
                                  "computation has been modified by an in-place operation: "
                                  "saved tensor #0");
    tt_release(y);
    tt_release(h);
    /* Untouched, the same graph differentiates: 2x. */
    y = NN(tt_call(sq, tt_v_tensor(x)));
    OK(tt_backward(y, ones));
    tt_tensor *g = NN(tt_get_grad(x));
    double *v = tt_test_values(g);
    for (int k = 0; k < 6; k++)
        ck_assert_double_eq(v[k], 2.0 * (k + 1));
    free(v);
    tt_release(g);
    /* A second backward through the same graph. */
    ck_assert_int_eq(tt_backward(y, ones), TT_EAUTOGRAD);
    ck_assert_error(TT_EAUTOGRAD, "mylib::square: trying to backward through the graph a second "
                                  "time");
    tt_release(y);
    /* A backward returning the wrong shape. */
    y = NN(tt_call(ws, tt_v_tensor(x)));
    ck_assert_int_eq(tt_backward(y, ones), TT_ESHAPE);
    ck_assert_error(TT_ESHAPE, "mylib::wrong_shape: the backward returned a gradient of shape "
                               "[7] for input 0, which has shape [2, 3]");
    tt_release(y);
    tt_release(ones);
    tt_release(x);
    free_lib(lib);
}
END_TEST

/* gradcheck passes for numpy_mul and catches a wrong backward, naming the
 * input and the elements. */
static tt_status call_fn(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    out[0] = tt_call((const tt_op *)ud, tt_v_tensor(in[0]), tt_v_float(3));
    return out[0] ? TT_OK : tt_errcode();
}

/* A function whose output changes size between runs (the second run and
 * later give 5 elements). */
static int resize_calls;
static tt_status resizing_fn(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    out[0] = resize_calls++ == 0 ? tt_call((const tt_op *)ud, tt_v_tensor(in[0]), tt_v_float(3))
                                 : tt_ones(TT_SHAPE(5), TT_F64);
    return out[0] ? TT_OK : tt_errcode();
}

START_TEST(test_gradcheck)
{
    tt_library *lib = new_lib(TT_LIB_DEF, "mylib");
    tt_op *good = define_ok(lib, NUMPY_MUL_SPEC("mylib::numpy_mul(Tensor x, *, float val) "
                                                "-> Tensor", tutorial_numpy_mul_backward));
    tt_op *bad = define_ok(lib, NUMPY_MUL_SPEC("mylib::wrong_mul(Tensor x, *, float val) "
                                               "-> Tensor", wrong_mul_backward));
    tt_tensor *x = NN(tt_randn(TT_SHAPE(2, 3), TT_F64));
    OK(tt_set_requires_grad(x, true));
    OK(tt_gradcheck(call_fn, 1, &x, 1, NULL, good));
    ck_assert_int_eq(tt_gradcheck(call_fn, 1, &x, 1, NULL, bad), TT_EAUTOGRAD);
    ck_assert_error(TT_EAUTOGRAD, "tt_gradcheck: Jacobian mismatch for output 0 with respect to "
                                  "input 0 at input element 0, output element 0: numerical ");
    ck_assert_error(TT_EAUTOGRAD, "analytical 4 (atol");
    /* gradcheck wants f64 for its finite differences. */
    tt_tensor *xf = NN(tt_randn(TT_SHAPE(2), TT_F32));
    OK(tt_set_requires_grad(xf, true));
    ck_assert_int_eq(tt_gradcheck(call_fn, 1, &xf, 1, NULL, good), TT_EDTYPE);
    ck_assert_error(TT_EDTYPE, "tt_gradcheck: input 0 is f32; inputs that require grad must be "
                               "f64");
    /* An output that changes size is refused, leaking nothing (the
     * fixture counts live tensors). */
    resize_calls = 0;
    ck_assert_int_eq(tt_gradcheck(resizing_fn, 1, &x, 1, NULL, good), TT_ESHAPE);
    ck_assert_error(TT_ESHAPE, "tt_gradcheck: output 0 changed size between runs");
    tt_release(xf);
    tt_release(x);
    free_lib(lib);
}
END_TEST

/* ==================================================== library lifetime */

static void count_mylib(const tt_op *op, void *ud)
{
    if (strncmp(tt_op_name(op), "mylib::", 7) == 0)
        (*(int *)ud)++;
}

START_TEST(test_library_free)
{
    tt_library *lib = new_lib(TT_LIB_DEF, "mylib");
    tt_op *op = define_ok(lib, NUMPY_MUL_SPEC("mylib::numpy_mul(Tensor x, *, float val) -> Tensor",
                                              tutorial_numpy_mul_backward));
    tt_op *bare = define_ok(lib, &(tt_custom_op_spec){.schema = "mylib::bare(Tensor x) -> Tensor"});
    int n = 0;
    tt_op_foreach(count_mylib, &n);
    ck_assert_int_eq(n, 2);
    /* An IMPL library's kernel goes with it; the op stays. */
    tt_library *impl = new_lib(TT_LIB_IMPL, "mylib");
    OK(tt_register_kernel(impl, "mylib::bare", NULL, kernel_default));
    tt_tensor *x = NN(tt_arange(0, 4, 1, TT_F64));
    tt_tensor *y = NN(tt_call(bare, tt_v_tensor(x)));
    tt_release(y);
    free_lib(impl);
    ck_assert_ptr_eq(tt_op_find("mylib::bare"), bare);
    ck_assert_ptr_null(tt_call(bare, tt_v_tensor(x)));
    ck_assert_error(TT_ENOKERNEL, "mylib::bare: no kernel for device 'cpu' (registered: nothing)");

    /* A graph recorded before the free. */
    OK(tt_set_requires_grad(x, true));
    tt_tensor *recorded = NN(tt_call(op, tt_v_tensor(x), tt_v_float(3)));

    free_lib(lib);
    ck_assert_ptr_null(tt_op_find("mylib::numpy_mul"));
    ck_assert_error(TT_ENOTFOUND, "tt_op_find: no op named 'mylib::numpy_mul'");
    ck_assert_ptr_null(tt_op_find("mylib::bare"));
    n = 0;
    tt_op_foreach(count_mylib, &n);
    ck_assert_int_eq(n, 0);
    /* The handle stays valid; calls through it fail, naming the op. */
    ck_assert_str_eq(tt_op_name(op), "mylib::numpy_mul");
    ck_assert_ptr_null(tt_op_schema(op));
    ck_assert(!tt_op_has_kernel(op, TT_DEV_CPU) && !tt_op_has_fake(op) && !tt_op_has_autograd(op));
    ck_assert_ptr_null(tt_call(op, tt_v_tensor(x), tt_v_float(3)));
    ck_assert_error(TT_ENOTFOUND, "mylib::numpy_mul: the op is no longer defined (the library "
                                  "that defined it was freed)");
    tt_value out = tt_v_none();
    ck_assert_int_eq(tt_op_call(op, (tt_value[]){tt_v_tensor(x), tt_v_float(3)}, 2, &out, 1),
                     TT_ENOTFOUND);
    ck_assert_int_eq(out.kind, TT_V_NONE);
    ck_assert_int_eq(tt_register_fake(NULL, "mylib::numpy_mul", tutorial_numpy_mul_kernel),
                     TT_ENOTFOUND);
    ck_assert_error(TT_ENOTFOUND, "tt_register_fake: no op named 'mylib::numpy_mul'");
    /* The graph recorded before still differentiates: its node holds the
     * backward it was recorded with (as a PyTorch graph does). */
    tt_tensor *ones = NN(tt_ones(TT_SHAPE(4), TT_F64)), *g = NULL;
    OK(tt_grad(1, &recorded, &ones, 1, &x, &g));
    double *v = tt_test_values(g);
    for (int k = 0; k < 4; k++)
        ck_assert_double_eq(v[k], 3);
    free(v);
    tt_release(g);
    tt_release(recorded);

    /* The namespace is free again; the new definition reuses the handle. */
    lib = new_lib(TT_LIB_DEF, "mylib");
    tt_op *again = define_ok(lib, NUMPY_MUL_SPEC("mylib::numpy_mul(Tensor x, *, float val) -> "
                                                 "Tensor", tutorial_numpy_mul_backward));
    ck_assert_ptr_eq(again, op);
    OK(tt_set_requires_grad(x, false));
    y = NN(tt_call(op, tt_v_tensor(x), tt_v_float(3)));
    tt_release(y);
    ck_assert_ptr_null(tt_op_find("mylib::bare"));
    tt_release(ones);
    tt_release(x);
    free_lib(lib);
    ck_assert_ptr_null(tt_library_free(NULL));
}
END_TEST

/* A program that defines and frees libraries in a loop stays the same
 * size: each name keeps one handle, and a freed definition is reclaimed as
 * soon as nothing uses it (an autograd node recorded with it keeps it until
 * the node goes). */
START_TEST(test_library_churn_reclaims)
{
    int64_t handles0, defs0, handles, defs;
    tt_op_counts(&handles0, &defs0);
    tt_op *kept = NULL;
    tt_tensor *x = NN(tt_arange(0, 4, 1, TT_F64));
    for (int r = 0; r < 10000; r++) {
        tt_library *lib = new_lib(TT_LIB_DEF, "churn");
        tt_op *op = define_ok(lib, NUMPY_MUL_SPEC("churn::mul(Tensor x, *, float val) -> Tensor",
                                                  tutorial_numpy_mul_backward));
        define_ok(lib, &(tt_custom_op_spec){.schema = "churn::bare(Tensor x) -> Tensor"});
        if (!kept)
            kept = op;
        ck_assert_ptr_eq(op, kept);
        if (r % 1000 == 0) {
            tt_tensor *y = NN(tt_call(op, tt_v_tensor(x), tt_v_float(2)));
            tt_release(y);
        }
        free_lib(lib);
    }
    tt_op_counts(&handles, &defs);
    ck_assert_int_eq(handles, handles0 + 2);
    ck_assert_int_eq(defs, defs0);
    /* The kept handle fails cleanly, naming the op. */
    ck_assert_ptr_null(tt_call(kept, tt_v_tensor(x), tt_v_float(2)));
    ck_assert_error(TT_ENOTFOUND, "churn::mul: the op is no longer defined (the library that "
                                  "defined it was freed)");
    char buf[64];
    tt_op_describe(kept, buf, sizeof buf);
    ck_assert_str_eq(buf, "churn::mul (not defined)");

    /* A recorded node keeps its definition alive past the free. */
    tt_library *lib = new_lib(TT_LIB_DEF, "churn");
    define_ok(lib, NUMPY_MUL_SPEC("churn::mul(Tensor x, *, float val) -> Tensor",
                                  tutorial_numpy_mul_backward));
    OK(tt_set_requires_grad(x, true));
    tt_tensor *y = NN(tt_call(kept, tt_v_tensor(x), tt_v_float(3)));
    free_lib(lib);
    tt_op_counts(&handles, &defs);
    ck_assert_int_eq(handles, handles0 + 2);
    ck_assert_int_eq(defs, defs0 + 1);
    tt_tensor *ones = NN(tt_ones(TT_SHAPE(4), TT_F64)), *g = NULL;
    OK(tt_grad(1, &y, &ones, 1, &x, &g));
    double *v = tt_test_values(g);
    for (int k = 0; k < 4; k++)
        ck_assert_double_eq(v[k], 3);
    free(v);
    tt_release(g);
    tt_release(ones);
    tt_release(y);
    tt_op_counts(&handles, &defs);
    ck_assert_int_eq(defs, defs0);
    tt_release(x);
}
END_TEST

/* ===================================================== device selection */

/* make(n, device): which kernel ran, and n zeros. */
static tt_status make_as(tt_frame *f, int which)
{
    int64_t n;
    tt_status st = tt_arg_int(f, 0, &n);
    last_kernel = which;
    return st ? st : tt_return(f, 0, tt_zeros(TT_SHAPE(n), TT_F32));
}
static tt_status make_cpu(tt_frame *f) { return make_as(f, 1); }
static tt_status make_cuda(tt_frame *f) { return make_as(f, 3); }
static tt_status make_meta(tt_frame *f)
{
    int64_t n;
    tt_status st = tt_arg_int(f, 0, &n);
    last_kernel = 4;
    return st ? st : tt_return(f, 0, tt_fake_empty(TT_SHAPE(n), TT_F32));
}

/* PyTorch's rule: the tensors' device, or, with no tensor argument, the
 * Device argument's; a device with no kernel (and no default) is
 * TT_ENOKERNEL, never another device's kernel; "meta" is the fake kernel. */
START_TEST(test_device_argument_selects_kernel)
{
    tt_library *lib = new_lib(TT_LIB_DEF, "mylib");
    tt_op *make = define_ok(lib, &(tt_custom_op_spec){
        .schema = "mylib::make(int n, Device device) -> Tensor", .device_types = "cpu",
        .kernel = make_cpu});
    last_kernel = 0;
    tt_tensor *t = NN(tt_call(make, tt_v_int(3), tt_v_device(TT_DEV_CPU)));
    ck_assert_int_eq(last_kernel, 1);
    tt_release(t);
    ck_assert_ptr_null(tt_call(make, tt_v_int(3), tt_v_device(TT_DEV_CUDA)));
    ck_assert_error(TT_ENOKERNEL, "mylib::make: no kernel for device 'cuda' (registered: cpu); "
                                  "register one with tt_register_kernel(lib, \"mylib::make\", "
                                  "\"cuda\", fn)");
    ck_assert_int_eq(last_kernel, 1); /* the cpu kernel did not stand in */
    OK(tt_register_kernel(lib, make, "cuda", make_cuda));
    t = NN(tt_call(make, tt_v_int(3), tt_v_device(TT_DEV_CUDA)));
    ck_assert_int_eq(last_kernel, 3);
    tt_release(t);
    /* meta: the fake kernel, registered as a "meta" kernel. */
    ck_assert_ptr_null(tt_call(make, tt_v_int(3), tt_v_device(TT_DEV_META)));
    ck_assert_error(TT_ENOKERNEL, "mylib::make: no fake kernel is registered");
    OK(tt_register_kernel(lib, make, "meta", make_meta));
    ck_assert(tt_op_has_fake(make) && tt_op_has_kernel(make, TT_DEV_META));
    t = NN(tt_call(make, tt_v_int(3), tt_v_device(TT_DEV_META)));
    ck_assert_int_eq(last_kernel, 4);
    ck_assert(tt_is_fake(t));
    tt_release(t);

    /* An op with neither a Tensor nor a Device argument has no device. */
    ck_assert_ptr_null(tt_custom_op_define(lib, &(tt_custom_op_spec){
        .schema = "mylib::seven(int n) -> Tensor", .device_types = "cpu", .kernel = make_cpu}));
    ck_assert_error(TT_EINVAL, "tt_custom_op_define: mylib::seven has neither a Tensor nor a "
                               "Device argument, so a call has no device to choose a kernel by; "
                               "register a default kernel (device type NULL), or give the op a "
                               "'Device device' argument");
    tt_op *seven = define_ok(lib, &(tt_custom_op_spec){.schema = "mylib::seven(int n) -> Tensor"});
    ck_assert_int_eq(tt_register_kernel(lib, seven, "cuda", make_cuda), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_register_kernel: mylib::seven has neither a Tensor nor a "
                               "Device argument");
    OK(tt_register_kernel(lib, seven, NULL, make_cpu));
    t = NN(tt_call(seven, tt_v_int(2)));
    tt_release(t);
    free_lib(lib);
}
END_TEST

/* A meta kernel and a fake kernel are one slot: the second is refused,
 * naming the first and where it was registered. */
START_TEST(test_meta_kernel_is_the_fake_kernel)
{
    tt_library *lib = new_lib(TT_LIB_DEF, "mylib");
    tt_op *op = define_ok(lib, &(tt_custom_op_spec){.schema = "mylib::m(Tensor x) -> Tensor",
                                                    .kernel = kernel_cpu});
    int line = __LINE__ + 1;
    OK(tt_register_kernel(lib, op, "meta", kernel_default));
    ck_assert_int_eq(tt_register_fake(lib, op, kernel_cuda), TT_EEXIST);
    char want[512];
    snprintf(want, sizeof want, "tt_register_fake: mylib::m already has a fake kernel "
                                "(registered by library DEF 'mylib' #%%d at %s:%d, through "
                                "tt_register_kernel (a \"meta\" kernel)); free that library to "
                                "replace it", __FILE__, line);
    char *hash = strstr(want, "#%d");
    ck_assert_ptr_nonnull(hash);
    *hash = '\0';
    ck_assert_error(TT_EEXIST, want);
    snprintf(want, sizeof want, " at %s:%d, through tt_register_kernel (a \"meta\" kernel)); "
                                "free that library to replace it", __FILE__, line);
    ck_assert_ptr_nonnull(strstr(tt_errmsg(), want));
    /* The other way round, and in one spec. */
    tt_op *op2 = define_ok(lib, &(tt_custom_op_spec){.schema = "mylib::m2(Tensor x) -> Tensor",
                                                     .kernel = kernel_cpu, .fake = kernel_cpu});
    ck_assert_int_eq(tt_register_kernel(lib, op2, "meta", kernel_default), TT_EEXIST);
    ck_assert_error(TT_EEXIST, "tt_register_kernel: mylib::m2 already has a fake kernel "
                               "(registered by library DEF 'mylib' #");
    ck_assert_ptr_nonnull(strstr(tt_errmsg(), "through tt_custom_op_define)"));
    ck_assert_ptr_null(tt_custom_op_define(lib, &(tt_custom_op_spec){
        .schema = "mylib::m3(Tensor x) -> Tensor", .device_types = "cpu, meta",
        .kernel = kernel_cpu, .fake = kernel_cpu}));
    ck_assert_error(TT_EINVAL, "tt_custom_op_define: mylib::m3: device_types names \"meta\" and "
                               "the spec has a fake kernel: a meta kernel is the fake kernel, give "
                               "one of them");
    free_lib(lib);
}
END_TEST

/* ================================================= registration rules */

static tt_status scale_inplace(tt_frame *f)
{
    tt_tensor *x;
    tt_status st = tt_arg_tensor(f, 0, &x);
    return st ? st : tt_mul_scalar_(x, 2);
}

/* TT_EEXIST names the file:line of the first registration: an op defined
 * twice, a second DEF library of a namespace, a slot registered twice. */
START_TEST(test_eexist_names_first_registration)
{
    char want[512];
    int line = __LINE__ + 1;
    tt_library *lib = tt_library_new(TT_LIB_DEF, "mylib");
    ck_assert_ptr_nonnull(lib);
    live_libs[nlive_libs++] = lib;
    ck_assert_ptr_null(tt_library_new(TT_LIB_DEF, "mylib"));
    snprintf(want, sizeof want, "made at %s:%d); use TT_LIB_FRAGMENT to add ops to it", __FILE__,
             line);
    ck_assert_error(TT_EEXIST, "tt_library_new: namespace 'mylib' is already defined by another "
                               "DEF library (#");
    ck_assert_ptr_nonnull(strstr(tt_errmsg(), want));
    line = __LINE__ + 1;
    tt_op *op = tt_custom_op_define(lib, &(tt_custom_op_spec){.schema = "mylib::f(Tensor x) -> Tensor"});
    ck_assert_ptr_nonnull(op);
    ck_assert_ptr_null(tt_custom_op_define(lib, &(tt_custom_op_spec){
        .schema = "mylib::f(Tensor y) -> Tensor"}));
    snprintf(want, sizeof want, " at %s:%d); the new definition was 'mylib::f(Tensor y) -> Tensor'",
             __FILE__, line);
    ck_assert_error(TT_EEXIST, "tt_custom_op_define: mylib::f is already defined as 'mylib::f"
                               "(Tensor x) -> Tensor' (by library DEF 'mylib' #");
    ck_assert_ptr_nonnull(strstr(tt_errmsg(), want));
    /* Registration takes the handle as well as the name. */
    line = __LINE__ + 1;
    OK(tt_register_kernel(lib, op, "cpu", kernel_cpu));
    ck_assert_int_eq(tt_register_kernel(lib, "mylib::f", "cpu", kernel_default), TT_EEXIST);
    snprintf(want, sizeof want, " at %s:%d, through tt_register_kernel); free that library to "
                                "replace it", __FILE__, line);
    ck_assert_ptr_nonnull(strstr(tt_errmsg(), want));
    line = __LINE__ + 1;
    OK(tt_register_autograd(lib, op, identity_backward, NULL));
    ck_assert_int_eq(tt_register_autograd(lib, op, identity_backward, NULL), TT_EEXIST);
    snprintf(want, sizeof want, "tt_register_autograd: mylib::f already has an autograd "
                                "registration (by library DEF 'mylib' #");
    ck_assert_error(TT_EEXIST, want);
    snprintf(want, sizeof want, " at %s:%d)", __FILE__, line);
    ck_assert_ptr_nonnull(strstr(tt_errmsg(), want));
    /* A handle whose library was freed is refused by name. */
    free_lib(lib);
    ck_assert_int_eq(tt_register_fake(NULL, op, kernel_cpu), TT_ENOTFOUND);
    ck_assert_error(TT_ENOTFOUND, "tt_register_fake: mylib::f is no longer defined (the library "
                                  "that defined it was freed)");
}
END_TEST

/* mutates_args = TT_MUTATES_UNKNOWN ("*"): every tensor argument may be
 * written (PyTorch's "unknown"); 'name_' ops returning nothing are
 * accepted (custom_op's rule, not torchgen's). */
START_TEST(test_mutates_unknown_and_trailing_underscore)
{
    tt_library *lib = new_lib(TT_LIB_DEF, "mylib");
    tt_op *op = define_ok(lib, &(tt_custom_op_spec){
        .schema = "mylib::any(Tensor a, Tensor[] bs, int n, Tensor? c) -> ()",
        .mutates_args = TT_MUTATES_UNKNOWN, .kernel = tutorial_numpy_sin_kernel});
    char text[256];
    schema_text(op, text, sizeof text);
    ck_assert_str_eq(text, "mylib::any(Tensor(a0!) a, Tensor(a1!)[] bs, int n, Tensor(a3!)? c) "
                           "-> ()");
    ck_assert(tt_schema_is_mutable(tt_op_schema(op)));
    tt_op *scale = define_ok(lib, &(tt_custom_op_spec){
        .schema = "mylib::scale_(Tensor x) -> ()", .mutates_args = "x",
        .kernel = scale_inplace});
    tt_tensor *x = NN(tt_ones(TT_SHAPE(2), TT_F32));
    int64_t v0 = tt_version(x);
    OK(tt_op_call(scale, (tt_value[]){tt_v_tensor(x)}, 1, NULL, 0));
    double v;
    OK(tt_get(x, &v, 1));
    ck_assert_double_eq(v, 2);
    ck_assert_int_gt(tt_version(x), v0);
    tt_release(x);
    free_lib(lib);
}
END_TEST

/* Autograd only where PyTorch takes it: a functional op returning at
 * least one new tensor. */
START_TEST(test_autograd_only_for_functional_tensor_ops)
{
    tt_library *lib = new_lib(TT_LIB_DEF, "mylib");
    ck_assert_ptr_null(tt_custom_op_define(lib, &(tt_custom_op_spec){
        .schema = "mylib::v(Tensor(a) x) -> Tensor(a)", .backward = identity_backward}));
    ck_assert_error(TT_EINVAL, "tt_custom_op_define: mylib::v returns a view of its input (return "
                               "0 is 'Tensor(a)'); autograd is supported for functional ops that "
                               "return new tensors, as in PyTorch: make the op return a copy, or "
                               "differentiate the op that made the input");
    tt_op *none = define_ok(lib, &(tt_custom_op_spec){.schema = "mylib::log(Tensor x) -> ()"});
    ck_assert_int_eq(tt_register_autograd(lib, none, identity_backward, NULL), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_register_autograd: mylib::log returns no tensor, so there is "
                               "no output to differentiate; autograd is supported for functional "
                               "ops that return at least one tensor");
    tt_op *cnt = define_ok(lib, &(tt_custom_op_spec){.schema = "mylib::count(Tensor x) -> int"});
    ck_assert_int_eq(tt_register_autograd(lib, cnt, identity_backward, NULL), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "mylib::count returns no tensor");
    free_lib(lib);
}
END_TEST

/* PyTorch's fallthrough_kernel for autograd: a non-differentiable op runs
 * on inputs that require grad, unrecorded; its outputs require no grad. */
START_TEST(test_autograd_fallthrough)
{
    tt_library *lib = new_lib(TT_LIB_DEF, "mylib");
    tt_op *op = define_ok(lib, &(tt_custom_op_spec){.schema = "mylib::metric(Tensor x) -> Tensor",
                                                    .kernel = kernel_cpu});
    tt_tensor *x = NN(tt_ones(TT_SHAPE(3), TT_F32));
    OK(tt_set_requires_grad(x, true));
    ck_assert_ptr_null(tt_call(op, tt_v_tensor(x)));
    ck_assert_error(TT_EAUTOGRAD, "register the fallthrough, tt_register_autograd(lib, "
                                  "\"mylib::metric\", tt_autograd_fallthrough, NULL)");
    ck_assert_int_eq(tt_register_autograd(lib, op, tt_autograd_fallthrough, identity_setup), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_register_autograd: mylib::metric: the fallthrough takes no "
                               "setup_context (it records nothing)");
    OK(tt_register_autograd(lib, op, tt_autograd_fallthrough, NULL));
    ck_assert(!tt_op_has_autograd(op));
    tt_tensor *y = NN(tt_call(op, tt_v_tensor(x)));
    ck_assert(!tt_requires_grad(y));
    ck_assert_ptr_null(tt_grad_fn_name(y));
    tt_release(y);
    ck_assert_int_eq(tt_register_autograd(lib, op, identity_backward, NULL), TT_EEXIST);
    ck_assert_error(TT_EEXIST, "tt_register_autograd: mylib::metric already has an autograd "
                               "fallthrough");
    /* Allowed where a formula is not: an op returning nothing. */
    tt_op *log = define_ok(lib, &(tt_custom_op_spec){.schema = "mylib::log(Tensor x) -> ()",
                                                     .kernel = kernel_none});
    OK(tt_register_autograd(lib, log, tt_autograd_fallthrough, NULL));
    OK(tt_op_call(log, (tt_value[]){tt_v_tensor(x)}, 1, NULL, 0));
    tt_release(x);
    free_lib(lib);
}
END_TEST

/* =================================================================== tags */

/* torch.library's tags: given at definition, queryable, in the op's
 * description, and checked where they promise something. */
START_TEST(test_tags)
{
    tt_library *lib = new_lib(TT_LIB_DEF, "mylib");
    tt_op *op = define_ok(lib, &(tt_custom_op_spec){
        .schema = "mylib::twice(Tensor x) -> Tensor", .kernel = kernel_cpu, .fake = kernel_cpu,
        .tags = TT_TAG_PT2_COMPLIANT | TT_TAG_POINTWISE});
    ck_assert_uint_eq(tt_op_tags(op), TT_TAG_PT2_COMPLIANT | TT_TAG_POINTWISE);
    ck_assert_uint_eq(tt_op_tags(NULL), 0);
    /* Built-ins carry PyTorch's tags too. */
    ck_assert_uint_eq(tt_op_tags(tt_op_find("tt::add.Tensor")), TT_TAG_POINTWISE);
    ck_assert_uint_eq(tt_op_tags(tt_op_find("tt::add_.Tensor")), TT_TAG_INPLACE);
    char text[256];
    ck_assert_int_eq(tt_op_describe(op, text, sizeof text), (int)strlen(text));
    ck_assert_str_eq(text, "mylib::twice(Tensor x) -> Tensor  [tags: pt2_compliant_tag, "
                           "pointwise]");
    char small[8];
    ck_assert_int_eq(tt_op_describe(op, small, sizeof small), (int)strlen(text));
    ck_assert_str_eq(small, "mylib::");
    tt_op *plain = define_ok(lib, &(tt_custom_op_spec){.schema = "mylib::plain(Tensor x) -> Tensor"});
    tt_op_describe(plain, text, sizeof text);
    ck_assert_str_eq(text, "mylib::plain(Tensor x) -> Tensor");
    ck_assert_str_eq(tt_tag_name(TT_TAG_NONDETERMINISTIC_SEEDED), "nondeterministic_seeded");
    ck_assert_str_eq(tt_tag_name(TT_TAG_DATA_DEPENDENT_OUTPUT), "data_dependent_output");
    ck_assert_str_eq(tt_tag_name(TT_TAG_NEEDS_FIXED_STRIDE_ORDER), "needs_fixed_stride_order");
    ck_assert_ptr_null(tt_tag_name((tt_tag)(TT_TAG_POINTWISE | TT_TAG_PT2_COMPLIANT)));
    /* Unknown bits, and a pointwise tag on an op that is not. */
    ck_assert_ptr_null(tt_custom_op_define(lib, &(tt_custom_op_spec){
        .schema = "mylib::t2(Tensor x) -> Tensor", .tags = 1u << 9}));
    ck_assert_error(TT_EINVAL, "tt_custom_op_define: mylib::t2: spec->tags has bits 0x200 that "
                               "name no tag");
    ck_assert_ptr_null(tt_custom_op_define(lib, &(tt_custom_op_spec){
        .schema = "mylib::t3(Tensor x) -> (Tensor, Tensor)", .tags = TT_TAG_POINTWISE}));
    ck_assert_error(TT_EINVAL, "tt_custom_op_define: mylib::t3: tagged pointwise, but a pointwise "
                               "op is functional, takes tensors and returns one new tensor (of "
                               "their broadcast shape)");
    ck_assert_ptr_null(tt_custom_op_define(lib, &(tt_custom_op_spec){
        .schema = "mylib::t4(Tensor(a!) x) -> ()", .tags = TT_TAG_POINTWISE}));
    ck_assert_error(TT_EINVAL, "mylib::t4: tagged pointwise");
    free_lib(lib);
}
END_TEST

/* ========================================================= built-ins */

/* An override of tt::add.Tensor's cpu kernel: a - b instead of a + b. */
static int override_calls;
static tt_status add_as_sub(tt_frame *f)
{
    tt_tensor *a, *b;
    tt_status st = tt_arg_tensor(f, 0, &a);
    if (!st)
        st = tt_arg_tensor(f, 1, &b);
    override_calls++;
    return st ? st : tt_return(f, 0, tt_sub(a, b));
}

/* Calls its own op through the wrapper: a recursion, refused. */
static tt_status add_calls_add(tt_frame *f)
{
    tt_tensor *a, *b;
    tt_status st = tt_arg_tensor(f, 0, &a);
    if (!st)
        st = tt_arg_tensor(f, 1, &b);
    return st ? st : tt_return(f, 0, tt_add(a, b));
}

static double first_value(tt_tensor *t)
{
    double v = NAN;
    ck_assert_ptr_nonnull(t);
    tt_tensor *flat = NN(tt_reshape(t, TT_SHAPE(-1)));
    OK(tt_get(flat, &v, 0));
    tt_release(flat);
    tt_release(t);
    return v;
}

/* One op, one answer: the typed wrapper's fast path sees an IMPL
 * library's override of a built-in's kernel, as tt_call does, and runs
 * the built-in again once that library is freed. */
START_TEST(test_builtin_override_seen_by_wrappers)
{
    const tt_op *add = tt_op_find("tt::add.Tensor");
    ck_assert_ptr_nonnull(add);
    tt_tensor *a = NN(tt_full(TT_SHAPE(1), 5, TT_F32)), *b = NN(tt_full(TT_SHAPE(1), 3, TT_F32));
    ck_assert_double_eq(first_value(tt_add(a, b)), 8);
    tt_library *impl = new_lib(TT_LIB_IMPL, "tt");
    OK(tt_register_kernel(impl, "tt::add.Tensor", "cpu", add_as_sub));
    override_calls = 0;
    ck_assert_double_eq(first_value(tt_add(a, b)), 2);
    ck_assert_double_eq(first_value(tt_call(add, tt_v_tensor(a), tt_v_tensor(b))), 2);
    ck_assert_int_eq(override_calls, 2);
    /* Other built-ins keep their fast path and their kernel. */
    ck_assert_double_eq(first_value(tt_mul(a, b)), 15);
    ck_assert_double_eq(first_value(tt_sum_all(a)), 5);
    free_lib(impl);
    ck_assert_double_eq(first_value(tt_add(a, b)), 8);
    ck_assert_double_eq(first_value(tt_call(add, tt_v_tensor(a), tt_v_tensor(b))), 8);
    ck_assert_int_eq(override_calls, 2);
    /* An override that calls its own op recurses: refused, not a crash. */
    impl = new_lib(TT_LIB_IMPL, "tt");
    OK(tt_register_kernel(impl, "tt::add.Tensor", "cpu", add_calls_add));
    ck_assert_ptr_null(tt_add(a, b));
    ck_assert_int_eq(tt_errcode(), TT_EINVAL);
    ck_assert_ptr_nonnull(strstr(tt_errmsg(), "tt::add.Tensor: kernel calls nest 200 deep; does "
                                              "a kernel call its own op (an override of a "
                                              "built-in calling the built-in's wrapper)?"));
    free_lib(impl);
    ck_assert_double_eq(first_value(tt_add(a, b)), 8);
    tt_release(a);
    tt_release(b);
}
END_TEST

/* The runtime's views and factories, which are ops too, see overrides. */
static tt_status view_as_clone(tt_frame *f)
{
    tt_tensor *x;
    tt_status st = tt_arg_tensor(f, 0, &x);
    override_calls++;
    return st ? st : tt_return(f, 0, tt_view(x, TT_SHAPE(tt_numel(x))));
}

START_TEST(test_builtin_override_views)
{
    tt_tensor *x = NN(tt_zeros(TT_SHAPE(2, 3), TT_F32));
    tt_library *impl = new_lib(TT_LIB_IMPL, "tt");
    OK(tt_register_kernel(impl, "tt::view", "cpu", view_as_clone));
    override_calls = 0;
    tt_tensor *v = NN(tt_view(x, TT_SHAPE(3, 2)));
    ck_assert_int_eq(override_calls, 1);
    ck_assert_int_eq(tt_ndim(v), 1); /* the override's answer */
    tt_release(v);
    free_lib(impl);
    v = NN(tt_view(x, TT_SHAPE(3, 2)));
    ck_assert_int_eq(tt_ndim(v), 2);
    ck_assert_int_eq(override_calls, 1);
    tt_release(v);
    tt_release(x);
}
END_TEST

/* The namespace tt belongs to the built-ins: no DEF or FRAGMENT for it. */
START_TEST(test_tt_namespace_refused)
{
    const tt_library_kind kinds[] = {TT_LIB_DEF, TT_LIB_FRAGMENT};
    const char *names[] = {"DEF", "FRAGMENT"};
    for (int i = 0; i < 2; i++) {
        ck_assert_ptr_null(tt_library_new(kinds[i], "tt"));
        char want[512];
        snprintf(want, sizeof want, "tt_library_new: namespace 'tt' belongs to the built-in "
                                    "ops, so a %s library cannot add ops to it; define your "
                                    "ops in a namespace of your own (such as 'mylib'), or "
                                    "override a built-in's kernel with a TT_LIB_IMPL library",
                 names[i]);
        ck_assert_error(TT_EINVAL, want);
    }
    tt_library *impl = new_lib(TT_LIB_IMPL, "tt");
    ck_assert_ptr_null(tt_custom_op_define(impl, &(tt_custom_op_spec){
        .schema = "tt::mine(Tensor x) -> Tensor", .kernel = kernel_cpu}));
    ck_assert_error(TT_EINVAL, "tt_custom_op_define: library IMPL 'tt' cannot define ops");
    free_lib(impl);
}
END_TEST

/* ============================================================== aliasing */

/* Kernels that return what they were given, or a view of it, or one
 * buffer twice. */
static tt_status ret_input(tt_frame *f) { return tt_return_self(f, 0, 0); }
static tt_status ret_view(tt_frame *f)
{
    tt_tensor *x;
    tt_status st = tt_arg_tensor(f, 0, &x);
    return st ? st : tt_return(f, 0, tt_view(x, TT_SHAPE(tt_numel(x))));
}
static tt_status ret_twice(tt_frame *f)
{
    tt_tensor *x;
    tt_status st = tt_arg_tensor(f, 0, &x);
    tt_tensor *c = st ? NULL : tt_clone(x);
    if (!c)
        return tt_errcode();
    st = tt_return(f, 0, tt_retain(c));
    return st ? st : tt_return(f, 1, c);
}
static tt_status ret_list_with_input(tt_frame *f)
{
    tt_tensor *x;
    tt_status st = tt_arg_tensor(f, 0, &x);
    if (st)
        return st;
    tt_tensor *parts[2] = {tt_clone(x), tt_retain(x)};
    return tt_return_tensors(f, 0, 2, parts);
}

/* PyTorch's custom_op wrapper refuses, at every call, outputs that alias
 * inputs or other outputs unless the schema declares it: an input
 * returned, a view returned, a written input returned by a '-> Tensor'
 * op, two outputs over one buffer, a list holding an input. */
START_TEST(test_alias_refused_at_call)
{
    tt_library *lib = new_lib(TT_LIB_DEF, "mylib");
    tt_op *same = define_ok(lib, &(tt_custom_op_spec){.schema = "mylib::same(Tensor x) -> Tensor",
                                                      .kernel = ret_input});
    tt_op *view = define_ok(lib, &(tt_custom_op_spec){.schema = "mylib::flat(Tensor x) -> Tensor",
                                                      .kernel = ret_view, .fake = ret_view});
    tt_op *wrote = define_ok(lib, &(tt_custom_op_spec){.schema = "mylib::bump(Tensor x) -> Tensor",
                                                       .mutates_args = "x", .kernel = ret_input});
    tt_op *pair = define_ok(lib, &(tt_custom_op_spec){
        .schema = "mylib::pair(Tensor x) -> (Tensor, Tensor)", .kernel = ret_twice});
    tt_op *list = define_ok(lib, &(tt_custom_op_spec){
        .schema = "mylib::parts(Tensor x) -> Tensor[]", .kernel = ret_list_with_input});
    /* Declared: a view op may return a view of its input. */
    tt_op *alias = define_ok(lib, &(tt_custom_op_spec){
        .schema = "mylib::alias(Tensor(a) x) -> Tensor(a)", .kernel = ret_view});
    tt_tensor *x = NN(tt_ones(TT_SHAPE(2, 3), TT_F32));
    int64_t live = tt_live_tensors();
    ck_assert_ptr_null(tt_call(same, tt_v_tensor(x)));
    ck_assert_error(TT_ESCHEMA, "mylib::same: output 0 is argument 'x' (#1) itself, but the "
                                "schema declares no alias: a custom op's outputs may not alias "
                                "any inputs or other returns. Return a new tensor (tt_clone of "
                                "it), or declare the alias (Tensor(a) on the argument and on "
                                "the return)");
    ck_assert_ptr_null(tt_call(view, tt_v_tensor(x)));
    ck_assert_error(TT_ESCHEMA, "mylib::flat: output 0 shares storage with argument 'x' (#1) "
                                "(it is a view of it), but the schema declares no alias");
    ck_assert_ptr_null(tt_call(wrote, tt_v_tensor(x)));
    ck_assert_error(TT_ESCHEMA, "mylib::bump: output 0 is argument 'x' (#1) itself, but the "
                                "schema declares no alias: a custom op's outputs may not alias "
                                "any inputs or other returns. 'x' is written by the op, and an "
                                "op that returns what it writes is an in-place op (named "
                                "'name_', returning 'Tensor(a!) self') or an out= op (overload "
                                "'out', returning 'Tensor(a!) out'); otherwise return a new "
                                "tensor (tt_clone of it)");
    tt_value outs[2];
    ck_assert_int_eq(tt_op_call(pair, (tt_value[]){tt_v_tensor(x)}, 1, outs, 2), TT_ESCHEMA);
    ck_assert_error(TT_ESCHEMA, "mylib::pair: outputs 0 and 1 share storage: a custom op's "
                                "outputs may not alias any inputs or other returns; return "
                                "each as its own tensor (tt_clone)");
    ck_assert_int_eq(outs[0].kind, TT_V_NONE);
    ck_assert_int_eq(tt_op_call(list, (tt_value[]){tt_v_tensor(x)}, 1, outs, 1), TT_ESCHEMA);
    ck_assert_error(TT_ESCHEMA, "mylib::parts: output 0 (tensor 1 of the list) is argument "
                                "'x' (#1) itself");
    /* Nothing leaked from the refused calls. */
    ck_assert_int_eq(tt_live_tensors(), live);
    /* The fake kernel is held to the same rule. */
    tt_tensor *fx = NN(tt_fake_like(x));
    ck_assert_ptr_null(tt_call(view, tt_v_tensor(fx)));
    ck_assert_error(TT_ESCHEMA, "mylib::flat: fake kernel: output 0 shares storage with "
                                "argument 'x' (#1)");
    tt_tensor *v = NN(tt_call(alias, tt_v_tensor(x)));
    ck_assert(tt_same_storage(v, x));
    tt_release(v);
    tt_release(fx);
    tt_release(x);
}
END_TEST

static Suite *custom_ops_suite(void)
{
    Suite *s = suite_create("custom_ops");
    TCase *tc = custom_tcase("define");
    tcase_add_test(tc, test_define_functional);
    tcase_add_test(tc, test_define_libraries);
    tcase_add_test(tc, test_define_mutable);
    suite_add_tcase(s, tc);
    tc = custom_tcase("variants");
    tcase_add_loop_test(tc, test_variants_accepted, 0,
                        (int)(sizeof good_variants / sizeof good_variants[0]));
    tcase_add_loop_test(tc, test_variants_refused, 0,
                        (int)(sizeof bad_variants / sizeof bad_variants[0]));
    tcase_add_test(tc, test_out_prefix_overload_is_not_out);
    tcase_add_test(tc, test_maybe_out_refused);
    tcase_add_test(tc, test_mutates_contradictions);
    suite_add_tcase(s, tc);
    tc = custom_tcase("kernels");
    tcase_add_test(tc, test_kernels_per_device);
    tcase_add_test(tc, test_unknown_device_type);
    tcase_add_test(tc, test_register_unknown_op);
    tcase_add_test(tc, test_fake_registered_twice);
    tcase_add_test(tc, test_autograd_registration_errors);
    suite_add_tcase(s, tc);
    tc = custom_tcase("fake");
    tcase_add_test(tc, test_fake_missing);
    tcase_add_test(tc, test_fake_reads_data);
    tcase_add_test(tc, test_fake_dynamic_size);
    tcase_add_test(tc, test_fake_mutable_returning_nothing);
    suite_add_tcase(s, tc);
    tc = custom_tcase("autograd");
    tcase_add_test(tc, test_autograd_missing);
    tcase_add_test(tc, test_setup_context_inputs);
    tcase_add_test(tc, test_training_step);
    tcase_add_test(tc, test_backward_errors);
    tcase_add_test(tc, test_gradcheck);
    suite_add_tcase(s, tc);
    tc = custom_tcase("devices");
    tcase_add_test(tc, test_device_argument_selects_kernel);
    tcase_add_test(tc, test_meta_kernel_is_the_fake_kernel);
    suite_add_tcase(s, tc);
    tc = custom_tcase("registration");
    tcase_add_test(tc, test_eexist_names_first_registration);
    tcase_add_test(tc, test_mutates_unknown_and_trailing_underscore);
    tcase_add_test(tc, test_autograd_only_for_functional_tensor_ops);
    tcase_add_test(tc, test_autograd_fallthrough);
    suite_add_tcase(s, tc);
    tc = custom_tcase("tags");
    tcase_add_test(tc, test_tags);
    suite_add_tcase(s, tc);
    tc = custom_tcase("builtins");
    tcase_add_test(tc, test_builtin_override_seen_by_wrappers);
    tcase_add_test(tc, test_builtin_override_views);
    tcase_add_test(tc, test_tt_namespace_refused);
    suite_add_tcase(s, tc);
    tc = custom_tcase("aliasing");
    tcase_add_test(tc, test_alias_refused_at_call);
    suite_add_tcase(s, tc);
    tc = custom_tcase("lifetime");
    tcase_add_test(tc, test_library_free);
    tcase_add_test(tc, test_library_churn_reclaims);
    suite_add_tcase(s, tc);
    return s;
}

TT_TEST_MAIN(custom_ops_suite)
