/* The op registry, libraries, custom-op definition, frames and the
 * dispatcher: argument binding, backend selection, modes, scopes and
 * thread safety. Each test runs in its own process (Check's fork mode), so
 * the registry starts from the built-in library every time; namespaces are
 * still distinct per test so the suite also passes with CK_FORK=no. */
#include "dispatch_test.h"

#include <pthread.h>
#include <stdio.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

/* ---------------------------------------------------------------- helpers */

/* Defining `spec` fails with `code` and a message containing `needle`. */
static void define_fails(tt_library *lib, tt_custom_op_spec spec, tt_status code,
                         const char *needle)
{
    tt_clear_error();
    ck_assert_msg(tt_custom_op_define(lib, &spec) == NULL, "'%s' was accepted", spec.schema);
    ck_assert_error(code, needle);
}

static char *schema_text(const tt_op *op, char *buf, size_t n)
{
    tt_schema_print(tt_op_schema(op), buf, n);
    return buf;
}

/* Counters of which kernel ran; reset by each test that reads them. */
static int n_cpu, n_fake, n_default, n_cuda;

/* Returns a copy of argument 0 (real kernels) or a tensor with its
 * metadata (fake kernels), counting the call in *count. */
static tt_status copy_arg0(tt_frame *f, int *count, bool fake)
{
    tt_tensor *x;
    tt_status st = tt_arg_tensor(f, 0, &x);
    if (st)
        return st;
    (*count)++;
    return tt_return(f, 0, fake ? tt_empty_like(x) : tt_clone(x));
}

static tt_status k_cpu(tt_frame *f) { return copy_arg0(f, &n_cpu, false); }
static tt_status k_default(tt_frame *f) { return copy_arg0(f, &n_default, false); }
static tt_status k_fake(tt_frame *f) { return copy_arg0(f, &n_fake, true); }

static tt_status k_cuda(tt_frame *f)
{
    n_cuda++;
    return tt_frame_fail(f, TT_EINTERNAL, "cuda kernel ran");
}

static tt_status k_backward(tt_autograd_ctx *ctx, tt_tensor *const *grads, int ngrads,
                            tt_tensor **grad_inputs, int ninputs)
{
    (void)ctx, (void)ngrads, (void)ninputs;
    grad_inputs[0] = tt_retain(grads[0]);
    return TT_OK;
}

static tt_status k_setup(tt_autograd_ctx *ctx, const tt_value *inputs, int ninputs,
                         const tt_value *outputs, int noutputs)
{
    (void)ctx, (void)inputs, (void)ninputs, (void)outputs, (void)noutputs;
    return TT_OK;
}

/* Calls a one-tensor op on x and checks the result is a copy of x. */
static void call_copies(const tt_op *op, const tt_tensor *x)
{
    tt_tensor *r = tt_call(op, tt_v_tensor(x));
    ck_assert_msg(r != NULL, "%s: %s", tt_op_name(op), tt_errmsg());
    ck_assert(!tt_same_storage(r, x));
    ck_assert_int_eq(tt_numel(r), tt_numel(x));
    for (int64_t i = 0; i < tt_numel(x); i++) {
        double a, b;
        ck_assert_int_eq(tt_get(r, &a, i), TT_OK);
        ck_assert_int_eq(tt_get(x, &b, i), TT_OK);
        ck_assert_double_eq(a, b);
    }
    tt_release(r);
}

/* -------------------------------------------------------------- libraries */

START_TEST(test_library_def_once)
{
    tt_library *def = lib_ok(TT_LIB_DEF, "lib_once");
    tt_clear_error();
    ck_assert_ptr_null(tt_library_new(TT_LIB_DEF, "lib_once"));
    ck_assert_error(TT_EEXIST, "tt_library_new: namespace 'lib_once' is already defined by "
                               "another DEF library");
    ck_assert_error(TT_EEXIST, "use TT_LIB_FRAGMENT to add ops to it");
    /* Fragments and impls of the namespace are fine, any number of them. */
    tt_library *frag1 = lib_ok(TT_LIB_FRAGMENT, "lib_once");
    tt_library *frag2 = lib_ok(TT_LIB_FRAGMENT, "lib_once");
    tt_library *impl = lib_ok(TT_LIB_IMPL, "lib_once");
    /* The built-in namespace is taken too. */
    ck_assert_ptr_null(tt_library_new(TT_LIB_DEF, "tt"));
    ck_assert_error(TT_EINVAL, "namespace 'tt' belongs to the built-in ops");
    /* Once the DEF is freed, the namespace can be defined again. */
    ck_assert_ptr_null(tt_library_free(def));
    def = lib_ok(TT_LIB_DEF, "lib_once");
    tt_library_free(def);
    tt_library_free(frag1);
    tt_library_free(frag2);
    tt_library_free(impl);
    ck_assert_ptr_null(tt_library_free(NULL));
}
END_TEST

START_TEST(test_library_bad_arguments)
{
    static const struct { int kind; const char *ns, *needle; } cases[] = {
        {7, "ok", "argument 'kind' must be TT_LIB_DEF, TT_LIB_FRAGMENT or TT_LIB_IMPL (got 7)"},
        {-1, "ok", "(got -1)"},
        {TT_LIB_DEF, NULL, "argument 'ns' must be an identifier such as 'mylib' (got '(null)')"},
        {TT_LIB_DEF, "", "(got '')"},
        {TT_LIB_DEF, "1abc", "(got '1abc')"},
        {TT_LIB_FRAGMENT, "my::lib", "(got 'my::lib')"},
        {TT_LIB_IMPL, "my lib", "(got 'my lib')"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tt_clear_error();
        ck_assert_ptr_null(tt_library_new((tt_library_kind)cases[i].kind, cases[i].ns));
        ck_assert_error(TT_EINVAL, cases[i].needle);
    }
    /* Identifiers may use underscores and digits after the first char. */
    tt_library_free(lib_ok(TT_LIB_DEF, "_my_lib2"));
}
END_TEST

START_TEST(test_fragment_adds_ops)
{
    tt_library *def = lib_ok(TT_LIB_DEF, "frag");
    tt_library *frag = lib_ok(TT_LIB_FRAGMENT, "frag");
    tt_op *f = defop(def, "frag::f(Tensor x) -> Tensor", k_cpu, NULL);
    tt_op *g = defop(frag, "frag::g(Tensor x) -> Tensor", k_cpu, NULL);
    ck_assert_ptr_eq(tt_op_find("frag::f"), f);
    ck_assert_ptr_eq(tt_op_find("frag::g"), g);
    /* A fragment may also register kernels on the namespace's other ops. */
    ck_assert_int_eq(tt_register_fake(frag, "frag::f", k_fake), TT_OK);
    ck_assert(tt_op_has_fake(f));
    /* Freeing the fragment removes its op and its registration only. */
    tt_library_free(frag);
    tt_clear_error();
    ck_assert_null_fails(tt_op_find("frag::g"), TT_ENOTFOUND, "tt_op_find: no op named 'frag::g'");
    ck_assert_ptr_eq(tt_op_find("frag::f"), f);
    ck_assert(!tt_op_has_fake(f));
    ck_assert(tt_op_has_kernel(f, TT_DEV_CPU));
    /* An IMPL library registers kernels but defines nothing. */
    tt_library *impl = lib_ok(TT_LIB_IMPL, "frag");
    define_fails(impl, (tt_custom_op_spec){.schema = "frag::i(Tensor x) -> Tensor"}, TT_EINVAL,
                 "tt_custom_op_define: library IMPL 'frag' cannot define ops; use a DEF or "
                 "FRAGMENT library");
    tt_library_free(impl);
    /* A fragment with no DEF is allowed too (torch.library's FRAGMENT). */
    tt_library *lone = lib_ok(TT_LIB_FRAGMENT, "frag_lone");
    defop(lone, "frag_lone::h(Tensor x) -> Tensor", NULL, NULL);
    tt_library_free(lone);
    tt_library_free(def);
}
END_TEST

START_TEST(test_free_removes_ops)
{
    float v[3] = {1, 2, 3};
    tt_tensor *x = vec(3, v);
    tt_library *lib = lib_ok(TT_LIB_DEF, "gone");
    tt_op *op = defop(lib, "gone::f(Tensor x) -> Tensor", k_cpu, k_fake);
    call_copies(op, x);
    tt_library_free(lib);

    tt_clear_error();
    ck_assert_null_fails(tt_op_find("gone::f"), TT_ENOTFOUND, "tt_op_find: no op named 'gone::f'");
    /* The cached handle is still a handle... */
    ck_assert_str_eq(tt_op_name(op), "gone::f");
    ck_assert_ptr_null(tt_op_schema(op));
    ck_assert(!tt_op_has_kernel(op, TT_DEV_CPU) && !tt_op_has_fake(op));
    /* ...and a call through it fails, naming the op. */
    tt_clear_error();
    ck_assert_ptr_null(tt_call(op, tt_v_tensor(x)));
    ck_assert_error(TT_ENOTFOUND, "gone::f: the op is no longer defined (the library that "
                                  "defined it was freed)");
    tt_value out;
    ck_assert_int_eq(tt_op_call(op, (tt_value[]){tt_v_tensor(x)}, 1, &out, 1), TT_ENOTFOUND);
    /* Registrations by name fail too. */
    ck_assert_int_eq(tt_register_kernel(NULL, "gone::f", "cpu", k_cpu), TT_ENOTFOUND);
    ck_assert_error(TT_ENOTFOUND, "tt_register_kernel: no op named 'gone::f'; define it first");

    /* The same op can be defined again, with another schema; the handle
     * is the same, so old caches work again. */
    lib = lib_ok(TT_LIB_DEF, "gone");
    n_default = 0;
    tt_op *again = defop(lib, "gone::f(Tensor y, int k=0) -> Tensor", k_default, NULL);
    ck_assert_ptr_eq(again, op);
    char buf[128];
    ck_assert_str_eq(schema_text(op, buf, sizeof buf), "gone::f(Tensor y, int k=0) -> Tensor");
    call_copies(op, x);
    ck_assert_int_eq(n_default, 1);
    ck_assert(!tt_op_has_fake(op)); /* the old fake kernel went with its library */
    tt_library_free(lib);
    tt_release(x);
}
END_TEST

START_TEST(test_free_removes_kernels_on_other_ops)
{
    float v[2] = {4, 5};
    tt_tensor *x = vec(2, v);
    tt_library *def = lib_ok(TT_LIB_DEF, "owner");
    tt_op *op = defop(def, "owner::f(Tensor x) -> Tensor", NULL, NULL);
    tt_library *impl = lib_ok(TT_LIB_IMPL, "owner");
    ck_assert_int_eq(tt_register_kernel(impl, "owner::f", "cpu", k_cpu), TT_OK);
    ck_assert_int_eq(tt_register_fake(impl, "owner::f", k_fake), TT_OK);
    ck_assert_int_eq(tt_register_autograd(impl, "owner::f", k_backward, k_setup), TT_OK);
    /* An IMPL library may also add a kernel to a built-in op. */
    tt_op *add = tt_op_find("tt::add.Tensor");
    ck_assert_ptr_nonnull(add);
    ck_assert_int_eq(tt_register_fake(impl, "tt::add.Tensor", k_fake), TT_EEXIST);
    ck_assert_error(TT_EEXIST, "tt::add.Tensor already has a fake kernel (registered by library DEF 'tt'");
    tt_op *relu = tt_op_find("tt::relu");
    ck_assert_int_eq(tt_register_kernel(impl, "tt::relu", "cuda", k_cuda), TT_OK);
    ck_assert(tt_op_has_kernel(op, TT_DEV_CPU) && tt_op_has_fake(op) && tt_op_has_autograd(op));
    call_copies(op, x);

    tt_library_free(impl);
    ck_assert(!tt_op_has_kernel(op, TT_DEV_CPU) && !tt_op_has_fake(op) && !tt_op_has_autograd(op));
    ck_assert_ptr_eq(tt_op_find("owner::f"), op); /* still defined */
    tt_clear_error();
    ck_assert_ptr_null(tt_call(op, tt_v_tensor(x)));
    ck_assert_error(TT_ENOKERNEL, "owner::f: no kernel for device 'cpu' (registered: nothing)");
    /* The built-in keeps its own kernels and works. */
    ck_assert(tt_op_has_kernel(relu, TT_DEV_CPU));
    tt_tensor *r = tt_relu(x);
    ck_assert_ptr_nonnull(r);
    tt_release(r);
    /* The slot is free again for another library. */
    tt_library *impl2 = lib_ok(TT_LIB_IMPL, "other");
    ck_assert_int_eq(tt_register_kernel(impl2, "owner::f", NULL, k_default), TT_OK);
    ck_assert_int_eq(tt_register_kernel(impl2, "tt::relu", "cuda", k_cuda), TT_OK);
    call_copies(op, x);
    tt_library_free(impl2);
    tt_library_free(def);
    tt_release(x);
}
END_TEST

/* ------------------------------------------------------------- definition */

START_TEST(test_define_twice)
{
    tt_library *lib = lib_ok(TT_LIB_DEF, "twice");
    defop(lib, "twice::f(Tensor x) -> Tensor", NULL, NULL);
    define_fails(lib, (tt_custom_op_spec){.schema = "twice::f(Tensor y, int k) -> Tensor"},
                 TT_EEXIST, "twice::f is already defined as 'twice::f(Tensor x) -> Tensor'");
    ck_assert_error(TT_EEXIST, "(by library DEF 'twice'");
    ck_assert_error(TT_EEXIST, "the new definition was 'twice::f(Tensor y, int k) -> Tensor'");
    /* Another overload of the same name is another op. */
    defop(lib, "twice::f.int(Tensor x, int k) -> Tensor", NULL, NULL);
    /* A fragment of the namespace cannot redefine it either. */
    tt_library *frag = lib_ok(TT_LIB_FRAGMENT, "twice");
    define_fails(frag, (tt_custom_op_spec){.schema = "twice::f.int(Tensor x, int k) -> Tensor"},
                 TT_EEXIST, "twice::f.int is already defined as");
    tt_library_free(frag);
    tt_library_free(lib);
}
END_TEST

START_TEST(test_define_namespace_and_schema_errors)
{
    tt_library *lib = lib_ok(TT_LIB_DEF, "nsa");
    define_fails(lib, (tt_custom_op_spec){.schema = "nsb::f(Tensor x) -> Tensor"}, TT_EINVAL,
                 "tt_custom_op_define: nsb::f: a library for namespace 'nsa' cannot define "
                 "ops in namespace 'nsb'");
    define_fails(lib, (tt_custom_op_spec){.schema = "nsa::f(Tensor x -> Tensor"}, TT_ESCHEMA,
                 "column");
    define_fails(lib, (tt_custom_op_spec){.schema = "nsa::f(int64_t x) -> Tensor"}, TT_ESCHEMA,
                 "int64_t");
    define_fails(lib, (tt_custom_op_spec){.schema = NULL}, TT_EINVAL,
                 "tt_custom_op_define: argument 'spec->schema' is NULL");
    tt_clear_error();
    ck_assert_null_fails(tt_custom_op_define(lib, NULL), TT_EINVAL, "argument 'spec' is NULL");
    ck_assert_ptr_null(tt_custom_op_define(NULL, &(tt_custom_op_spec){.schema = "nsa::f() -> ()"}));
    ck_assert_error(TT_EINVAL, "argument 'lib' is NULL");
    define_fails(lib, (tt_custom_op_spec){.schema = "nsa::f(Tensor x) -> Tensor",
                                          .setup_context = k_setup},
                 TT_EINVAL, "nsa::f: setup_context was given without a backward");
    define_fails(lib, (tt_custom_op_spec){.schema = "nsa::f(int n) -> Tensor",
                                          .backward = k_backward},
                 TT_EINVAL, "nsa::f has no Tensor inputs, so there is nothing to differentiate");
    /* None of the failures left an op behind. */
    tt_clear_error();
    ck_assert_ptr_null(tt_op_find("nsa::f"));
    tt_library_free(lib);
}
END_TEST

/* mutates_args against the schema's (a!) annotations. */
/* A NULL needle: the definition is accepted. */
static const struct { const char *schema, *mutates, *needle; } mutation_cases[] = {
    {"mut::a(Tensor(a!) x, Tensor(b!) y) -> ()", "x", "tt_custom_op_define: mut::a: the schema "
     "marks 'y' as mutated (Tensor(a!)) but mutates_args does not list it"},
    {"mut::b(Tensor(a!) x, Tensor y) -> ()", "x, y", "mut::b: mutates_args lists 'y' but the "
     "schema does not mark it mutated; write 'Tensor(a!) y'"},
    {"mut::c(Tensor(a!) x) -> ()", "", "mut::c: the schema marks 'x' as mutated (Tensor(a!)) but "
     "mutates_args does not list it"},
    {"mut::g(Tensor(a!) x, Tensor(b!) y) -> ()", "y,x", NULL},
    {"mut::h(Tensor(a!) x) -> ()", NULL, NULL},
    {"mut::i(Tensor x) -> ()", "", NULL},
    {"mut::j(Tensor x) -> Tensor(a!)", NULL, "mut::j: return 0 is annotated as written (!) but "
     "no argument is"},
};

START_TEST(test_define_mutates_args)
{
    tt_library *lib = lib_ok(TT_LIB_DEF, "mut");
    tt_custom_op_spec spec = {.schema = mutation_cases[_i].schema,
                              .mutates_args = mutation_cases[_i].mutates};
    if (mutation_cases[_i].needle)
        define_fails(lib, spec, TT_ESCHEMA, mutation_cases[_i].needle);
    else
        define_ok(lib, spec);
    tt_library_free(lib);
}
END_TEST

START_TEST(test_define_mutates_args_not_argument_is_einval)
{
    /* Naming a non-argument is a caller's mistake in the spec (EINVAL),
     * not a schema contradiction. */
    tt_library *lib = lib_ok(TT_LIB_DEF, "mutk");
    define_fails(lib, (tt_custom_op_spec){.schema = "mutk::d(Tensor x, Tensor y) -> ()",
                                          .mutates_args = "z"},
                 TT_EINVAL, "tt_custom_op_define: mutk::d: mutates_args names 'z', which is not an "
                            "argument (arguments: x, y)");
    define_fails(lib, (tt_custom_op_spec){.schema = "mutk::e(Tensor x, int n) -> ()",
                                          .mutates_args = "n"},
                 TT_EINVAL, "mutk::e: mutates_args names 'n', which is not a Tensor; only tensors "
                            "can be mutated");
    define_fails(lib, (tt_custom_op_spec){.schema = "mutk::f() -> ()", .mutates_args = "q"},
                 TT_EINVAL, "mutates_args names 'q', which is not an argument (arguments: none)");
    tt_library_free(lib);
}
END_TEST

START_TEST(test_define_annotates_from_mutates_args)
{
    tt_library *lib = lib_ok(TT_LIB_DEF, "ann");
    tt_op *op = define_ok(lib, (tt_custom_op_spec){.schema = "ann::sin(Tensor x, Tensor out) -> ()",
                                                   .mutates_args = "out"});
    const tt_schema *s = tt_op_schema(op);
    ck_assert(!tt_schema_arg(s, 0)->is_write);
    ck_assert(tt_schema_arg(s, 1)->is_write);
    ck_assert_ptr_nonnull(tt_schema_arg(s, 1)->alias_set);
    ck_assert(tt_schema_is_mutable(s));
    char buf[128];
    schema_text(op, buf, sizeof buf);
    ck_assert_msg(strstr(buf, "Tensor(a1!) out") != NULL, "printed as '%s'", buf);
    ck_assert_msg(strstr(buf, "(Tensor x,") != NULL, "printed as '%s'", buf);
    /* Two listed arguments get distinct alias sets. */
    op = define_ok(lib, (tt_custom_op_spec){.schema = "ann::two(Tensor a, Tensor b, int k) -> ()",
                                            .mutates_args = "a b"});
    s = tt_op_schema(op);
    ck_assert(tt_schema_arg(s, 0)->is_write && tt_schema_arg(s, 1)->is_write);
    ck_assert(!tt_schema_arg(s, 2)->is_write);
    ck_assert_str_ne(tt_schema_arg(s, 0)->alias_set, tt_schema_arg(s, 1)->alias_set);
    tt_library_free(lib);
}
END_TEST

static const struct { const char *schema, *mutates, *needle; } convention_cases[] = {
    /* In-place: name_ with Tensor(a!) self returned as Tensor(a!). */
    {"conv::h_(Tensor(a!) self) -> Tensor(a!)", NULL, NULL},
    {"conv::h_(Tensor(a!) self, Scalar v) -> Tensor(a!)", NULL, NULL},
    {"conv::h_(Tensor self) -> Tensor", NULL, "conv::h_: an in-place op (its name ends in '_') "
     "must take 'Tensor(a!) self' as its first argument and return it as '-> Tensor(a!)'"},
    {"conv::h_(Tensor(a!) self) -> Tensor", NULL, "an in-place op (its name ends in '_')"},
    /* torch.library.custom_op's rule: 'name_' writing and returning nothing. */
    {"conv::h_(Tensor(a!) self) -> ()", NULL, NULL},
    {"conv::h_(Tensor(a!) self) -> Tensor(b!)", NULL, "an in-place op (its name ends in '_')"},
    {"conv::h_(Tensor x, Tensor(a!) self) -> Tensor(a!)", NULL, "an in-place op"},
    {"conv::h_(Tensor self) -> Tensor", "self", "an in-place op"},
    /* A dunder name is not in-place. */
    {"conv::__h__(Tensor x) -> Tensor", NULL, NULL},
    /* out=: keyword-only Tensor(a!) out, returned in order. */
    {"conv::o.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)", NULL, NULL},
    {"conv::o.out(Tensor x, *, Tensor(a!) v, Tensor(b!) i) -> (Tensor(a!) v, Tensor(b!) i)", NULL, NULL},
    {"conv::o.out(Tensor x, Tensor(a!) out) -> Tensor(a!)", NULL, "conv::o.out: an out= op's "
     "mutated argument 'out' must be keyword-only (after '*')"},
    {"conv::o.out(Tensor x, *, Tensor(a!) out) -> Tensor", NULL, "conv::o.out: an out= op must "
     "return each out argument, in order, with its alias annotation (argument 'out' is not "
     "returned as 'Tensor(a!)')"},
    {"conv::o.out(Tensor x, *, Tensor(a!) v, Tensor(b!) i) -> (Tensor(b!) i, Tensor(a!) v)", NULL,
     "argument 'v' is not returned as 'Tensor(a!)'"},
    {"conv::o.out(Tensor x) -> Tensor", NULL, "conv::o.out: an out= op (overload 'out') needs a "
     "keyword-only 'Tensor(a!) out' argument"},
    {"conv::o.out(Tensor x, *, Tensor(a!) out) -> (Tensor(a!), Tensor)", NULL, "conv::o.out: an "
     "out= op returns exactly its 1 out argument(s), but the schema has 2 returns"},
    /* Maybe-out (an optional written tensor that is also returned):
     * refused, telling to split. Written and not returned: accepted, as
     * PyTorch functionalizes it. */
    {"conv::mo(Tensor x, *, Tensor(a!)? out=None) -> Tensor(a!)", NULL, "conv::mo: argument "
     "'out' is an optional mutated tensor that the op also returns (return 0 is 'Tensor(a!)'), "
     "so the op sometimes returns it and sometimes allocates its result (a \"maybe-out\" op); "
     "this is not supported: split it into a functional op 'conv::mo' that returns a new tensor "
     "and an out= op 'conv::mo.out' whose keyword-only 'Tensor(a!) out' is required (an op that "
     "writes an optional tensor and does not return it is accepted)"},
    {"conv::mo2(Tensor x, Tensor? out=None) -> Tensor", "out", NULL},
    {"conv::mo3(Tensor x, *, Tensor(a!)? out=None) -> ()", NULL, NULL},
    /* A general mutable op. */
    {"conv::m(Tensor(a!) x, Tensor y) -> ()", NULL, NULL},
};

START_TEST(test_define_conventions)
{
    tt_library *lib = lib_ok(TT_LIB_DEF, "conv");
    tt_custom_op_spec spec = {.schema = convention_cases[_i].schema,
                              .mutates_args = convention_cases[_i].mutates};
    if (convention_cases[_i].needle)
        define_fails(lib, spec, TT_ESCHEMA, convention_cases[_i].needle);
    else
        define_ok(lib, spec);
    tt_library_free(lib);
}
END_TEST

START_TEST(test_define_device_types)
{
    static const struct { const char *types; bool cpu, cuda, meta; } ok[] = {{"cpu", 1, 0, 0}, {"cpu, cuda", 1, 1, 0}, {"cuda", 0, 1, 0}, {" meta ,cpu", 1, 0, 1},
              {NULL, 1, 1, 0}}; /* NULL: one kernel for every device; meta is the fake kernel */
    static const struct { const char *types, *needle; } bad[] = {
        {"gpu", "tt_custom_op_define: device type 'gpu' does not exist; known device types: cpu, "
                "cuda, meta"},
        {"cpu, tpu", "device type 'tpu' does not exist"},
        {"", "argument 'device_types' names no device (got \"\"); use NULL for every device"},
        {" , ", "names no device"},
    };
    tt_library *lib = lib_ok(TT_LIB_DEF, "dev");
    char schema[64];
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        snprintf(schema, sizeof schema, "dev::ok%zu(Tensor x) -> Tensor", i);
        tt_op *op = define_ok(lib, (tt_custom_op_spec){.schema = schema, .kernel = k_cpu,
                                                       .device_types = ok[i].types});
        ck_assert(tt_op_has_kernel(op, TT_DEV_CPU) == ok[i].cpu &&
                  tt_op_has_kernel(op, TT_DEV_CUDA) == ok[i].cuda &&
                  tt_op_has_kernel(op, TT_DEV_META) == ok[i].meta);
        ck_assert(!tt_op_has_kernel(op, TT_DEVICE_COUNT) && !tt_op_has_kernel(op, (tt_device)-1));
    }
    /* Device types without a kernel register nothing. */
    tt_op *op = define_ok(lib, (tt_custom_op_spec){.schema = "dev::e(Tensor x) -> Tensor",
                                                   .device_types = "cpu"});
    ck_assert(!tt_op_has_kernel(op, TT_DEV_CPU));
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        define_fails(lib, (tt_custom_op_spec){.schema = "dev::f(Tensor x) -> Tensor",
                                              .device_types = bad[i].types, .kernel = k_cpu},
                     TT_EINVAL, bad[i].needle);
    tt_clear_error();
    ck_assert_ptr_null(tt_op_find("dev::f"));
    tt_library_free(lib);
}
END_TEST

/* ----------------------------------------------------------- registration */

/* The registrations of reg::f, in the order test_register_by_name makes
 * them; each stage includes the ones before. The error rows start from
 * the stage their call was made at. */
typedef enum {
    REG_CUDA,    /* lib DEF 'reg' defines reg::f and reg::g.out; f: a cuda kernel */
    REG_KERNELS, /* f: also a cpu and a default kernel */
    REG_FAKE,    /* lib IMPL 'reg' registers f's fake kernel */
    REG_ALL,     /* ... and f's autograd */
} reg_stage;

static struct {
    tt_tensor *x;
    tt_library *lib, *impl;
    tt_op *f, *g;
    int built; /* the stages made so far */
} reg;

/* Makes the registrations up to `stage` that are not made yet, asserting
 * each. */
static void reg_build(reg_stage stage)
{
    for (; reg.built <= (int)stage; reg.built++) {
        switch ((reg_stage)reg.built) {
        case REG_CUDA:
            reg.lib = lib_ok(TT_LIB_DEF, "reg");
            reg.f = defop(reg.lib, "reg::f(Tensor x) -> Tensor", NULL, NULL);
            reg.g = defop(reg.lib, "reg::g.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)",
                          NULL, NULL);
            ck_assert(!tt_op_has_kernel(reg.f, TT_DEV_CPU) && !tt_op_has_fake(reg.f) &&
                      !tt_op_has_autograd(reg.f));
            /* Per device. */
            OK(tt_register_kernel(reg.lib, "reg::f", "cuda", k_cuda));
            ck_assert(tt_op_has_kernel(reg.f, TT_DEV_CUDA) &&
                      !tt_op_has_kernel(reg.f, TT_DEV_CPU));
            break;
        case REG_KERNELS:
            OK(tt_register_kernel(reg.lib, "reg::f", "cpu", k_cpu));
            /* The default kernel, beside the per-device ones. */
            OK(tt_register_kernel(reg.lib, "reg::f", NULL, k_default));
            break;
        case REG_FAKE:
            reg.impl = lib_ok(TT_LIB_IMPL, "reg");
            OK(tt_register_fake(reg.impl, "reg::f", k_fake));
            ck_assert(tt_op_has_fake(reg.f));
            break;
        case REG_ALL:
            OK(tt_register_autograd(reg.impl, "reg::f", k_backward, NULL));
            ck_assert(tt_op_has_autograd(reg.f));
            break;
        }
    }
}

static void reg_setup(void)
{
    tt_test_setup();
    float v[2] = {1, -1};
    reg.x = vec(2, v);
}

static void reg_teardown(void)
{
    tt_library_free(reg.impl);
    tt_library_free(reg.lib);
    tt_release(reg.x);
    memset(&reg, 0, sizeof reg);
    tt_test_teardown();
}

START_TEST(test_register_by_name)
{
    reg_build(REG_KERNELS);
    /* cpu wins on cpu over the default kernel. */
    n_cpu = n_default = 0;
    call_copies(reg.f, reg.x);
    ck_assert_int_eq(n_cpu, 1);
    ck_assert_int_eq(n_default, 0);
    ck_assert(!tt_op_has_kernel(reg.f, TT_DEV_META)); /* meta is the fake kernel, not the default */
    reg_build(REG_ALL);
}
END_TEST

/* With only a cuda kernel, a cpu call fails and does not run it. */
static tt_status reg_call_without_cpu_kernel(void)
{
    n_cuda = 0;
    tt_status st = TT_TEST_STATUS(tt_call(reg.f, tt_v_tensor(reg.x)));
    ck_assert_msg(n_cuda == 0, "call_without_cpu_kernel: the cuda kernel ran");
    return st;
}

/* A refused registration for reg::g.out leaves it without a cpu kernel. */
static tt_status reg_g_kernel(const char *device, tt_kernel_fn fn)
{
    tt_status st = tt_register_kernel(reg.lib, "reg::g.out", device, fn);
    ck_assert_msg(!tt_op_has_kernel(reg.g, TT_DEV_CPU), "reg::g.out has a cpu kernel");
    return st;
}

/* reg_build(stage), then the call. */
#define AT(stage, call) (reg_build(stage), (call))

/* X(name, call, expected status, texts the message contains). */
#define REGISTER_ERRORS(X)                                                     \
    X(call_without_cpu_kernel, AT(REG_CUDA, reg_call_without_cpu_kernel()), TT_ENOKERNEL, \
      "reg::f: no kernel for device 'cpu' (registered: cuda); register "       \
      "one with tt_register_kernel(lib, \"reg::f\", \"cpu\", fn)")             \
    /* Twice: the owner is named. */                                           \
    X(kernel_twice, AT(REG_KERNELS, tt_register_kernel(reg.lib, "reg::f", "cpu", k_default)), \
      TT_EEXIST,                                                               \
      "tt_register_kernel: reg::f already has a cpu kernel (registered by "    \
      "library DEF 'reg' #",                                                   \
      "free that library to replace it")                                       \
    X(default_kernel_twice, AT(REG_FAKE, tt_register_kernel(reg.impl, "reg::f", NULL, k_cpu)), \
      TT_EEXIST,                                                               \
      "reg::f already has a default kernel (registered by library DEF 'reg'")  \
    X(fake_twice, AT(REG_FAKE, tt_register_fake(reg.lib, "reg::f", k_fake)), TT_EEXIST, \
      "tt_register_fake: reg::f already has a fake kernel (registered by "     \
      "library IMPL 'reg' #")                                                  \
    X(autograd_twice,                                                          \
      AT(REG_ALL, tt_register_autograd(reg.lib, "reg::f", k_backward, k_setup)), TT_EEXIST, \
      "tt_register_autograd: reg::f already has an autograd registration "     \
      "(by library IMPL 'reg' #")                                              \
    /* Unknown names, for each registration. */                                \
    X(kernel_unknown_op, AT(REG_ALL, tt_register_kernel(reg.lib, "reg::nope", "cpu", k_cpu)), \
      TT_ENOTFOUND,                                                            \
      "tt_register_kernel: no op named 'reg::nope'; define it first "          \
      "with tt_custom_op_define")                                              \
    X(fake_unknown_op, AT(REG_ALL, tt_register_fake(reg.lib, "reg::nope", k_fake)), \
      TT_ENOTFOUND, "tt_register_fake: no op named 'reg::nope'")               \
    X(autograd_unknown_op,                                                     \
      AT(REG_ALL, tt_register_autograd(reg.lib, "reg::nope", k_backward, NULL)), \
      TT_ENOTFOUND, "tt_register_autograd: no op named 'reg::nope'")           \
    /* The overload-less name of an op that only has overloads. */             \
    X(kernel_overload_less_name,                                               \
      AT(REG_ALL, tt_register_kernel(reg.lib, "reg::g", "cpu", k_cpu)), TT_ENOTFOUND, \
      "no op named 'reg::g'; it has overloads: reg::g.out")                    \
    X(kernel_null_op, AT(REG_ALL, tt_register_kernel(reg.lib, NULL, "cpu", k_cpu)), \
      TT_EINVAL, "tt_register_kernel: argument 'op' is NULL")                  \
    X(kernel_null_fn, AT(REG_ALL, reg_g_kernel("cpu", NULL)), TT_EINVAL,       \
      "tt_register_kernel: argument 'fn' is NULL")                             \
    X(fake_null_fn, AT(REG_ALL, tt_register_fake(reg.lib, "reg::g.out", NULL)), TT_EINVAL, \
      "tt_register_fake: argument 'fn' is NULL")                               \
    X(autograd_null_backward, AT(REG_ALL, tt_register_autograd(reg.lib, "reg::f", NULL, NULL)), \
      TT_EINVAL, "argument 'backward' is NULL")                                \
    X(kernel_unknown_device, AT(REG_ALL, reg_g_kernel("gpu", k_cpu)), TT_EINVAL, \
      "tt_register_kernel: device type 'gpu' does not exist; known device "    \
      "types: cpu, cuda, meta")

TT_ERROR_TABLE(REGISTER_ERRORS, register_errors);
#undef AT

/* One row of REGISTER_ERRORS per iteration. */
START_TEST(test_register_errors)
{
    tt_test_run_error_case(&register_errors[_i], _i);
}
END_TEST

START_TEST(test_register_other_namespace)
{
    tt_library *a = lib_ok(TT_LIB_DEF, "rega");
    tt_library *b = lib_ok(TT_LIB_DEF, "regb");
    defop(a, "rega::f(Tensor x) -> Tensor", NULL, NULL);
    ck_assert_int_eq(tt_register_kernel(b, "rega::f", "cpu", k_cpu), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_register_kernel: library DEF 'regb' cannot register kernels for "
                               "rega::f; use an IMPL library for another namespace");
    tt_library *frag = lib_ok(TT_LIB_FRAGMENT, "regb");
    ck_assert_int_eq(tt_register_fake(frag, "rega::f", k_fake), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "library FRAGMENT 'regb' cannot register kernels for rega::f");
    tt_library_free(frag);
    tt_library_free(b);
    tt_library_free(a);
}
END_TEST

START_TEST(test_register_autograd_refusals)
{
    tt_library *lib = lib_ok(TT_LIB_DEF, "ag");
    defop(lib, "ag::make(int n, float v) -> Tensor", NULL, NULL);
    defop(lib, "ag::mut(Tensor(a!) x, Tensor y) -> ()", NULL, NULL);
    defop(lib, "ag::fill_(Tensor(a!) self, float v) -> Tensor(a!)", NULL, NULL);
    defop(lib, "ag::f.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)", NULL, NULL);
    defop(lib, "ag::lst(Tensor[] xs) -> Tensor", NULL, NULL);
    defop(lib, "ag::opt(Tensor? x, int n) -> Tensor", NULL, NULL);

    ck_assert_int_eq(tt_register_autograd(lib, "ag::make", k_backward, NULL), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_register_autograd: ag::make has no Tensor inputs, so there is "
                               "nothing to differentiate");
    static const char *const mutable_ops[] = {"ag::mut", "ag::fill_", "ag::f.out"};
    for (int i = 0; i < 3; i++) {
        tt_clear_error();
        ck_assert_int_eq(tt_register_autograd(lib, mutable_ops[i], k_backward, NULL), TT_EINVAL);
        ck_assert_error(TT_EINVAL, "mutates its arguments; autograd is supported for functional "
                                   "ops (register it on the functional variant)");
        ck_assert(!tt_op_has_autograd(tt_op_find(mutable_ops[i])));
    }
    /* Tensor lists and optional tensors are tensor inputs. */
    ck_assert_int_eq(tt_register_autograd(lib, "ag::lst", k_backward, NULL), TT_OK);
    ck_assert_int_eq(tt_register_autograd(lib, "ag::opt", k_backward, k_setup), TT_OK);
    /* The same refusals when autograd comes with the definition. */
    define_fails(lib, (tt_custom_op_spec){.schema = "ag::mut2(Tensor(a!) x) -> ()",
                                          .backward = k_backward},
                 TT_EINVAL, "ag::mut2 mutates its arguments");
    define_fails(lib, (tt_custom_op_spec){.schema = "ag::sin_(Tensor(a!) self) -> Tensor(a!)",
                                          .backward = k_backward},
                 TT_EINVAL, "ag::sin_ mutates its arguments");
    define_fails(lib, (tt_custom_op_spec){.schema = "ag::sin(Tensor x, Tensor out) -> ()",
                                          .mutates_args = "out", .backward = k_backward},
                 TT_EINVAL, "ag::sin mutates its arguments");
    tt_library_free(lib);
}
END_TEST

/* ---------------------------------------------------------------- binding */

/* What the binding kernel saw. */
static struct {
    int calls;
    int64_t box[4];
    double scale;
    bool flag;
    char mode[32];
    bool w_none, dt_none;
    tt_dtype dt;
    double s;
    bool s_integral;
    int nargs;
} seen;

static tt_status k_bind(tt_frame *f)
{
    tt_tensor *x, *w;
    const int64_t *box;
    int nbox;
    const char *mode;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &x)) || (st = tt_arg_ints(f, 1, &box, &nbox)) ||
        (st = tt_arg_float(f, 2, &seen.scale)) || (st = tt_arg_bool(f, 3, &seen.flag)) ||
        (st = tt_arg_str(f, 4, &mode)) || (st = tt_arg_tensor(f, 5, &w)) ||
        (st = tt_arg_dtype(f, 6, &seen.dt, &seen.dt_none)) ||
        (st = tt_arg_scalar(f, 7, &seen.s, &seen.s_integral)))
        return st;
    seen.calls++;
    ck_assert_int_eq(nbox, 4);
    memcpy(seen.box, box, sizeof seen.box);
    snprintf(seen.mode, sizeof seen.mode, "%s", mode);
    seen.w_none = w == NULL;
    ck_assert(tt_arg_is_none(f, 5) == seen.w_none);
    seen.nargs = tt_frame_nargs(f);
    ck_assert_ptr_null(tt_frame_arg(f, 8));
    ck_assert_ptr_null(tt_frame_arg(f, -1));
    ck_assert_ptr_nonnull(tt_frame_arg(f, 7));
    return tt_return(f, 0, tt_clone(x));
}

#define BIND_SCHEMA                                                            \
    "mylib::f(Tensor x, int[4] box, float scale=0.5, *, bool flag=True, "      \
    "str mode=\"nearest\", Tensor? w=None, ScalarType? dt=None, Scalar s=2) -> Tensor"

START_TEST(test_bind_defaults)
{
    float v[2] = {1, 2};
    tt_tensor *x = vec(2, v);
    tt_library *lib = lib_ok(TT_LIB_DEF, "mylib");
    tt_op *op = define_ok(lib, (tt_custom_op_spec){.schema = BIND_SCHEMA, .kernel = k_bind});
    memset(&seen, 0, sizeof seen);
    tt_tensor *r = tt_call(op, tt_v_tensor(x), tt_v_ints(TT_INTS(0, 1, 2, 3)));
    ck_assert_msg(r != NULL, "%s", tt_errmsg());
    ck_assert_int_eq(seen.calls, 1);
    ck_assert_int_eq(seen.nargs, 8);
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(seen.box[i], i);
    ck_assert_double_eq(seen.scale, 0.5);
    ck_assert(seen.flag);
    ck_assert_str_eq(seen.mode, "nearest");
    ck_assert(seen.w_none && seen.dt_none);
    ck_assert_double_eq(seen.s, 2);
    ck_assert(seen.s_integral);
    tt_release(r);

    /* All given; an int passes for a float; None and NULL pass for Tensor?. */
    tt_tensor *w = vec(2, v);
    for (int k = 0; k < 3; k++) {
        memset(&seen, 0, sizeof seen);
        tt_value wv = k == 0 ? tt_v_tensor(w) : k == 1 ? tt_v_none() : tt_v_tensor(NULL);
        tt_value sv = k == 0 ? tt_v_float(2.5) : k == 1 ? tt_v_bool(true) : tt_v_int(-7);
        r = tt_call(op, tt_v_tensor(x), tt_v_ints(TT_INTS(4, 5, 6, 7)), tt_v_int(3),
                    tt_v_bool(false), tt_v_str("bilinear"), wv, tt_v_dtype(TT_I32), sv);
        ck_assert_msg(r != NULL, "%s", tt_errmsg());
        ck_assert_int_eq(seen.box[3], 7);
        ck_assert_double_eq(seen.scale, 3);
        ck_assert(!seen.flag);
        ck_assert_str_eq(seen.mode, "bilinear");
        ck_assert(seen.w_none == (k != 0));
        ck_assert(!seen.dt_none);
        ck_assert_int_eq(seen.dt, TT_I32);
        ck_assert_double_eq(seen.s, k == 0 ? 2.5 : k == 1 ? 1 : -7);
        ck_assert(seen.s_integral == (k != 0)); /* bool and int are integral */
        tt_release(r);
    }
    tt_release(w);
    tt_library_free(lib);
    tt_release(x);
}
END_TEST

START_TEST(test_bind_errors)
{
    float v[2] = {1, 2};
    tt_tensor *x = vec(2, v);
    tt_library *lib = lib_ok(TT_LIB_DEF, "mylib");
    tt_op *op = define_ok(lib, (tt_custom_op_spec){.schema = BIND_SCHEMA, .kernel = k_bind});
    tt_value box = tt_v_ints(TT_INTS(0, 0, 10, 10));
    memset(&seen, 0, sizeof seen);
    const struct { int pos; tt_value v; const char *needle; } cases[] = {
        {1, tt_v_ints(TT_INTS(0, 0, 10)), "mylib::f: argument 'box' (#2) expects int[4], got int[3]"},
        /* (A single int is PyTorch's form for int[N]: repeated N times.) */
        {1, tt_v_bool(true), "mylib::f: argument 'box' (#2) expects int[4], got bool true"},
        {1, tt_v_floats(4, (const double[]){1, 2, 3, 4}), "argument 'box' (#2) expects int[4], got float[4]"},
        {0, tt_v_int(3), "mylib::f: argument 'x' (#1) expects Tensor, got int 3"},
        {0, tt_v_tensor(NULL), "mylib::f: argument 'x' (#1) expects Tensor, got NULL"},
        {0, tt_v_none(), "mylib::f: argument 'x' (#1) expects Tensor, got None"},
        {0, tt_v_tensors(1, (tt_tensor *[]){x}), "argument 'x' (#1) expects Tensor, got Tensor[1]"},
        {2, tt_v_str("a"), "mylib::f: argument 'scale' (#3) expects float, got str \"a\""},
        {2, tt_v_bool(true), "argument 'scale' (#3) expects float, got bool true"},
        {3, tt_v_int(1), "mylib::f: argument 'flag' (#4) expects bool, got int 1"},
        {4, tt_v_str(NULL), "mylib::f: argument 'mode' (#5) expects str, got str NULL"},
        {4, tt_v_int(0), "argument 'mode' (#5) expects str, got int 0"},
        {5, tt_v_float(1.5), "mylib::f: argument 'w' (#6) expects Tensor?, got float 1.5"},
        {6, tt_v_int(3), "mylib::f: argument 'dt' (#7) expects ScalarType?, got int 3"},
        {6, tt_v_dtype((tt_dtype)99), "argument 'dt' (#7) expects ScalarType?"},
        {7, tt_v_str("2"), "mylib::f: argument 's' (#8) expects Scalar, got str \"2\""},
        {7, tt_v_tensor(x), "argument 's' (#8) expects Scalar, got Tensor f32[2]"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tt_value args[8] = {tt_v_tensor(x), box, tt_v_float(1), tt_v_bool(true), tt_v_str("m"),
                            tt_v_none(), tt_v_none(), tt_v_int(1)};
        args[cases[i].pos] = cases[i].v;
        tt_clear_error();
        ck_assert_ptr_null(tt_op_call1(op, args, 8));
        ck_assert_error(TT_EINVAL, cases[i].needle);
    }
    /* Too many and too few. */
    tt_value many[10] = {tt_v_tensor(x), box};
    for (int i = 2; i < 10; i++)
        many[i] = tt_v_none();
    ck_assert_ptr_null(tt_op_call1(op, many, 10));
    ck_assert_error(TT_EINVAL, "mylib::f: expected at most 8 arguments, got 10");
    ck_assert_ptr_null(tt_op_call1(op, many, 1));
    ck_assert_error(TT_EINVAL, "mylib::f: missing argument 'box' (#2) of type int[4]");
    ck_assert_ptr_null(tt_op_call1(op, NULL, 0));
    ck_assert_error(TT_EINVAL, "mylib::f: missing argument 'x' (#1) of type Tensor");
    ck_assert_ptr_null(tt_op_call1(op, NULL, 2));
    ck_assert_error(TT_EINVAL, "mylib::f: argument 'args' is NULL for 2 arguments");
    ck_assert_null_fails(tt_op_call1(op, many, -1), TT_EINVAL, "got -1");
    ck_assert_ptr_null(tt_op_call1(NULL, many, 2));
    ck_assert_error(TT_EINVAL, "tt_op_call: argument 'op' is NULL");
    ck_assert_int_eq(seen.calls, 0); /* the kernel never ran */

    /* outs must match the op's returns. */
    tt_value outs[2];
    ck_assert_fails(tt_op_call(op, many, 2, outs, 2), TT_EINVAL,
                    "mylib::f: returns 1 value, but 'outs' has room for 2");
    ck_assert_fails(tt_op_call(op, many, 2, outs, 0), TT_EINVAL, "but 'outs' has room for 0");
    ck_assert_fails(tt_op_call(op, many, 2, NULL, 1), TT_EINVAL, "but 'outs' has room for 0");
    ck_assert_int_eq(tt_op_call(op, many, 2, outs, 1), TT_OK);
    ck_assert_int_eq(outs[0].kind, TT_V_TENSOR);
    tt_value_clear(&outs[0]);
    ck_assert_int_eq(outs[0].kind, TT_V_NONE);
    tt_library_free(lib);
    tt_release(x);
}
END_TEST

static tt_status k_lists(tt_frame *f)
{
    const int64_t *a, *c;
    const double *b;
    int na, nb, nc;
    tt_status st;
    if ((st = tt_arg_ints(f, 0, &a, &na)) || (st = tt_arg_floats(f, 1, &b, &nb)) ||
        (st = tt_arg_ints(f, 2, &c, &nc)))
        return st;
    int64_t si = 0;
    double sf = 0;
    for (int i = 0; i < na; i++)
        si += a[i];
    for (int i = 0; i < nc; i++)
        si += 100 * c[i];
    for (int i = 0; i < nb; i++)
        sf += b[i];
    if ((st = tt_return_value(f, 0, tt_v_int(si))))
        return st;
    return tt_return_value(f, 1, tt_v_float(sf + na + nb));
}

START_TEST(test_bind_lists_and_value_returns)
{
    tt_library *lib = lib_ok(TT_LIB_DEF, "lists");
    tt_op *op = defop(lib, "lists::f(int[] a, float[] b, SymInt[2] c=[1, 2]) -> (int, float)", k_lists, NULL);
    tt_value outs[2];
    ck_assert_int_eq(tt_op_call(op, (tt_value[]){tt_v_ints(TT_INTS(1, 2, 3)),
                                                 tt_v_floats(2, (const double[]){0.25, 0.5})},
                                2, outs, 2), TT_OK);
    ck_assert_int_eq(outs[0].kind, TT_V_INT);
    ck_assert_int_eq(outs[0].u.i, 6 + 300);
    ck_assert_int_eq(outs[1].kind, TT_V_FLOAT);
    ck_assert_double_eq(outs[1].u.f, 0.75 + 5);
    /* Empty lists. */
    ck_assert_int_eq(tt_op_call(op, (tt_value[]){tt_v_ints(0, NULL), tt_v_floats(0, NULL),
                                                 tt_v_ints(TT_INTS(5, 5))},
                                3, outs, 2), TT_OK);
    ck_assert_int_eq(outs[0].u.i, 1000);
    ck_assert_double_eq(outs[1].u.f, 0);
    ck_assert_int_eq(tt_op_call(op, (tt_value[]){tt_v_ints(TT_INTS(1)), tt_v_ints(TT_INTS(1)),
                                                 tt_v_ints(TT_INTS(5, 5))}, 3, outs, 2), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "lists::f: argument 'b' (#2) expects float[], got int[1]");
    ck_assert_int_eq(tt_op_call(op, (tt_value[]){tt_v_ints(TT_INTS(1)), tt_v_floats(0, NULL),
                                                 tt_v_ints(TT_INTS(5, 5, 5))}, 3, outs, 2), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "lists::f: argument 'c' (#3) expects SymInt[2], got int[3]");
    ck_assert_int_eq(tt_op_call(op, (tt_value[]){tt_v_ints(3, NULL), tt_v_floats(0, NULL)}, 2,
                                outs, 2), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "argument 'a' (#1) expects int[]");
    /* tt_op_call1 needs one Tensor return. */
    ck_assert_ptr_null(tt_call(op, tt_v_ints(TT_INTS(1)), tt_v_floats(0, NULL)));
    ck_assert_error(TT_EINVAL, "lists::f: tt_op_call1 needs an op that returns one Tensor; use "
                               "tt_op_call");
    tt_op *pair = defop(lib, "lists::pair(Tensor x) -> (Tensor, Tensor)", NULL, NULL);
    ck_assert_ptr_null(tt_call(pair, tt_v_none()));
    ck_assert_error(TT_EINVAL, "lists::pair: tt_op_call1 needs an op that returns one Tensor");
    tt_op *many = defop(lib, "lists::many(Tensor x) -> Tensor[]", NULL, NULL);
    ck_assert_ptr_null(tt_call(many, tt_v_none()));
    ck_assert_error(TT_EINVAL, "lists::many: tt_op_call1 needs an op that returns one Tensor");
    tt_library_free(lib);
}
END_TEST

/* ------------------------------------------------------------------ frames */

static int wrong_mode;

static tt_status k_wrong(tt_frame *f)
{
    tt_tensor *t, *const *ts;
    int64_t i;
    double d;
    bool b;
    const char *s;
    const int64_t *is;
    const double *ds;
    tt_dtype dt;
    int n;
    switch (wrong_mode) {
    case 0: return tt_arg_int(f, 1, &i);
    case 1: return tt_arg_tensor(f, 1, &t);
    case 2: return tt_arg_float(f, 0, &d);
    case 3: return tt_arg_ints(f, 2, &is, &n);
    case 4: return tt_arg_int(f, 7, &i);
    case 5: return tt_arg_str(f, 3, &s);
    case 6: return tt_arg_bool(f, 2, &b);
    case 7: return tt_arg_dtype(f, 1, &dt, &b);
    case 8: return tt_arg_scalar(f, 1, &d, &b);
    case 9: return tt_arg_tensors(f, 0, &ts, &n);
    case 10: return tt_arg_floats(f, 1, &ds, &n);
    case 11: return tt_arg_int(f, -1, &i);
    case 12: return tt_arg_float(NULL, 0, &d);
    default: return TT_OK;
    }
}

START_TEST(test_frame_wrong_type)
{
    static const char *const needles[] = {
        "mylib::wrong: argument 'box' (#2) is int[4] (got int[4]), but the kernel read it as int",
        "mylib::wrong: argument 'box' (#2) is int[4] (got int[4]), but the kernel read it as Tensor",
        "mylib::wrong: argument 'x' (#1) is Tensor (got Tensor f32[2]), but the kernel read it as float",
        "mylib::wrong: argument 's' (#3) is float (got float 1.5), but the kernel read it as int[]",
        "mylib::wrong: a kernel asked for argument #8, but the op has 4 arguments",
        "mylib::wrong: argument 'w' (#4) is Tensor? (got None), but the kernel read it as str",
        "argument 's' (#3) is float (got float 1.5), but the kernel read it as bool",
        "argument 'box' (#2) is int[4] (got int[4]), but the kernel read it as ScalarType",
        "argument 'box' (#2) is int[4] (got int[4]), but the kernel read it as Scalar",
        "argument 'x' (#1) is Tensor (got Tensor f32[2]), but the kernel read it as Tensor[]",
        "argument 'box' (#2) is int[4] (got int[4]), but the kernel read it as float[]",
        "mylib::wrong: a kernel asked for argument #0, but the op has 4 arguments",
        "tt_arg_float: argument 'frame' is NULL",
    };
    float v[2] = {1, 2};
    tt_tensor *x = vec(2, v);
    tt_library *lib = lib_ok(TT_LIB_DEF, "mylib");
    tt_op *op = defop(lib, "mylib::wrong(Tensor x, int[4] box, float s, Tensor? w=None) -> Tensor", k_wrong, NULL);
    wrong_mode = _i;
    tt_clear_error();
    ck_assert_ptr_null(tt_call(op, tt_v_tensor(x), tt_v_ints(TT_INTS(1, 2, 3, 4)), tt_v_float(1.5)));
    ck_assert_error(TT_EINVAL, needles[_i]);
    tt_library_free(lib);
    tt_release(x);
}
END_TEST

static int fail_mode;

static tt_status k_failing(tt_frame *f)
{
    tt_tensor *x;
    tt_status st = tt_arg_tensor(f, 0, &x);
    if (st)
        return st;
    switch (fail_mode) {
    case 0: return tt_frame_fail(f, TT_ESHAPE, "box %d is too big for %s", 7, "x");
    case 1: return TT_EINVAL; /* no message */
    case 2: return TT_OK;     /* no output */
    case 3: {
        /* A temporary is made and released, then the kernel fails: no
         * leak, and a partially set output is cleared. */
        tt_tensor *tmp = tt_zeros(TT_SHAPE(4), TT_F32);
        tt_return(f, 0, tt_clone(x));
        tt_release(tmp);
        return tt_frame_fail(f, TT_EDTYPE, "late failure");
    }
    case 4: tt_clear_error(); return tt_return(f, 0, NULL);
    case 5: {
        tt_tensor *bad = tt_view(x, TT_SHAPE(5)); /* fails with a message */
        return tt_return(f, 0, bad);
    }
    case 6: return tt_return(f, 1, tt_clone(x));
    case 7: return tt_return_value(f, 0, tt_v_tensor(x));
    case 8: return tt_frame_fail(f, TT_OK, "code 0 becomes EINVAL");
    case 9: return tt_return_self(f, 0, 0);
    default: return TT_OK;
    }
}

START_TEST(test_frame_failures)
{
    static const struct { tt_status code; const char *needle; } cases[] = {
        {TT_ESHAPE, "mylib::failing: box 7 is too big for x"},
        {TT_EINVAL, "mylib::failing: the kernel failed (TT_EINVAL) without a message"},
        {TT_EINTERNAL, "mylib::failing: the kernel returned no value for output 0"},
        {TT_EDTYPE, "mylib::failing: late failure"},
        {TT_EINVAL, "mylib::failing: the kernel returned NULL for result #1"},
        /* The failed call's error is the cause; returning its NULL is context. */
        {TT_ESHAPE, "(then mylib::failing: the kernel returned NULL for result #1)"},
        {TT_EINVAL, "mylib::failing: tt_return: result #2 does not exist (the op returns 1 value)"},
        {TT_EINVAL, "mylib::failing: tt_return_value takes int, float, bool or None (use tt_return "
                    "for tensors)"},
        {TT_EINVAL, "mylib::failing: code 0 becomes EINVAL"},
    };
    float v[3] = {1, 2, 3};
    tt_tensor *x = vec(3, v);
    tt_library *lib = lib_ok(TT_LIB_DEF, "mylib");
    tt_op *op = defop(lib, "mylib::failing(Tensor x) -> Tensor", k_failing, NULL);
    int64_t live = tt_live_tensors();
    fail_mode = _i;
    tt_value out = tt_v_int(5);
    tt_clear_error();
    ck_assert_int_eq(tt_op_call(op, (tt_value[]){tt_v_tensor(x)}, 1, &out, 1), cases[_i].code);
    ck_assert_error(cases[_i].code, cases[_i].needle);
    ck_assert_int_eq(out.kind, TT_V_NONE);
    ck_assert_int_eq(tt_live_tensors(), live);
    tt_library_free(lib);
    tt_release(x);
}
END_TEST

static tt_status k_split(tt_frame *f)
{
    tt_tensor *x;
    tt_status st = tt_arg_tensor(f, 0, &x);
    if (st)
        return st;
    tt_tensor *parts[3] = {tt_narrow(x, 0, 0, 1), tt_narrow(x, 0, 1, 2), tt_clone(x)};
    return tt_return_tensors(f, 0, 3, parts);
}

static tt_status k_split_fail(tt_frame *f)
{
    tt_tensor *x;
    tt_status st = tt_arg_tensor(f, 0, &x);
    if (st)
        return st;
    tt_tensor *parts[2] = {tt_clone(x), tt_clone(x)};
    st = tt_return_tensors(f, 0, 2, parts);
    return st ? st : tt_frame_fail(f, TT_ESHAPE, "after the list");
}

START_TEST(test_frame_tensor_list)
{
    float v[3] = {1, 2, 3};
    tt_tensor *x = vec(3, v);
    int64_t live = tt_live_tensors();
    tt_library *lib = lib_ok(TT_LIB_DEF, "tl");
    tt_op *op = defop(lib, "tl::split(Tensor(a) x) -> Tensor(a)[]", k_split, NULL);
    tt_value out;
    ck_assert_int_eq(tt_op_call(op, (tt_value[]){tt_v_tensor(x)}, 1, &out, 1), TT_OK);
    ck_assert_int_eq(out.kind, TT_V_TENSORS);
    ck_assert_int_eq(out.n, 3);
    ck_assert_int_eq(tt_live_tensors(), live + 3);
    ck_assert(tt_same_storage(out.u.tensors[0], x));
    ck_assert_int_eq(tt_numel(out.u.tensors[1]), 2);
    double d;
    ck_assert_int_eq(tt_get(out.u.tensors[1], &d, 1), TT_OK);
    ck_assert_double_eq(d, 3);
    tt_value_clear(&out);
    ck_assert_int_eq(out.kind, TT_V_NONE);
    ck_assert_int_eq(tt_live_tensors(), live);
    /* A failure after the list was set releases it. */
    op = defop(lib, "tl::bad(Tensor x) -> Tensor[]", k_split_fail, NULL);
    ck_assert_int_eq(tt_op_call(op, (tt_value[]){tt_v_tensor(x)}, 1, &out, 1), TT_ESHAPE);
    ck_assert_error(TT_ESHAPE, "tl::bad: after the list");
    ck_assert_int_eq(out.kind, TT_V_NONE);
    ck_assert_int_eq(tt_live_tensors(), live);
    tt_library_free(lib);
    tt_release(x);
}
END_TEST

static tt_status k_userdata(tt_frame *f)
{
    const int *ud = tt_frame_userdata(f);
    ck_assert_str_eq(tt_op_name(tt_frame_op(f)), "ud::g");
    return tt_return_value(f, 0, tt_v_int(*ud));
}

START_TEST(test_frame_userdata)
{
    static int marker = 42;
    tt_library *lib = lib_ok(TT_LIB_DEF, "ud");
    tt_op *op = define_ok(lib, (tt_custom_op_spec){.schema = "ud::g() -> int", .kernel = k_userdata,
                                                   .userdata = &marker});
    tt_value out;
    ck_assert_int_eq(tt_op_call(op, NULL, 0, &out, 1), TT_OK);
    ck_assert_int_eq(out.kind, TT_V_INT);
    ck_assert_int_eq(out.u.i, 42);
    ck_assert_ptr_null(tt_frame_userdata(NULL));
    ck_assert_ptr_null(tt_frame_op(NULL));
    ck_assert_int_eq(tt_frame_nargs(NULL), 0);
    /* tt_return_self hands back the argument (a new reference). */
    tt_tensor *x = tt_ones(TT_SHAPE(3), TT_F32);
    tt_op *self = defop(lib, "ud::failing(Tensor(a) x) -> Tensor(a)", k_failing, NULL);
    fail_mode = 9;
    tt_tensor *r = tt_call(self, tt_v_tensor(x));
    ck_assert_ptr_eq(r, x);
    tt_release(r);
    tt_release(x);
    tt_library_free(lib);
}
END_TEST

/* Sums the elements of every tensor of a list (None entries count 0). */
static tt_status k_list_sum(tt_frame *f)
{
    tt_tensor *const *ts;
    int n;
    tt_status st = tt_arg_tensors(f, 0, &ts, &n);
    if (st)
        return st;
    double sum = 0;
    for (int i = 0; i < n; i++)
        for (int64_t k = 0; ts[i] && k < tt_numel(ts[i]); k++) {
            double d;
            if ((st = tt_get(ts[i], &d, k)))
                return st;
            sum += d;
        }
    return tt_return_value(f, 0, tt_v_float(sum + 1000 * n));
}

static tt_status k_list_fill(tt_frame *f)
{
    tt_tensor *const *ts;
    int n;
    tt_status st = tt_arg_tensors(f, 0, &ts, &n);
    for (int i = 0; !st && i < n; i++)
        st = tt_fill_(ts[i], i + 1);
    return st;
}

START_TEST(test_tensor_list_arguments)
{
    float v[2] = {1, 2}, w[3] = {3, 4, 5};
    tt_tensor *x = vec(2, v), *y = vec(3, w);
    tt_library *lib = lib_ok(TT_LIB_DEF, "tla");
    tt_op *sum = defop(lib, "tla::sum(Tensor?[] ts) -> float", k_list_sum, NULL);
    tt_op *strict = defop(lib, "tla::strict(Tensor[] ts) -> float", k_list_sum, NULL);
    tt_op *fill = defop(lib, "tla::fill(Tensor(a!)[] ts) -> ()", k_list_fill, NULL);
    tt_value out;
    ck_assert_int_eq(tt_op_call(sum, (tt_value[]){tt_v_tensors(3, (tt_tensor *[]){x, NULL, y})}, 1,
                                &out, 1), TT_OK);
    ck_assert_double_eq(out.u.f, 15 + 3000);
    ck_assert_int_eq(tt_op_call(strict, (tt_value[]){tt_v_tensors(0, NULL)}, 1, &out, 1), TT_OK);
    ck_assert_double_eq(out.u.f, 0);
    ck_assert_int_eq(tt_op_call(strict, (tt_value[]){tt_v_tensors(2, (tt_tensor *[]){x, NULL})}, 1,
                                &out, 1), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tla::strict: argument 'ts' (#1) expects Tensor[], got Tensor[2]");
    ck_assert_int_eq(tt_op_call(strict, (tt_value[]){tt_v_tensor(x)}, 1, &out, 1), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "expects Tensor[], got Tensor f32[2]");
    /* Every tensor of a mutated list gets its version bumped. */
    uint64_t vx = tt_version(x), vy = tt_version(y);
    ck_assert_int_eq(tt_op_call(fill, (tt_value[]){tt_v_tensors(2, (tt_tensor *[]){x, y})}, 1, NULL, 0),
                     TT_OK);
    ck_assert_uint_eq(tt_version(x), vx + 2); /* tt_fill_'s own bump and the dispatcher's */
    ck_assert_uint_eq(tt_version(y), vy + 2);
    double d;
    ck_assert_int_eq(tt_get(y, &d, 0), TT_OK);
    ck_assert_double_eq(d, 2);
    tt_library_free(lib);
    tt_release(x);
    tt_release(y);
}
END_TEST

static tt_status k_maybe(tt_frame *f)
{
    tt_tensor *x;
    tt_status st = tt_arg_tensor(f, 0, &x);
    if (st || tt_numel(x) > 2)
        return st; /* None */
    return tt_return(f, 0, tt_clone(x));
}

START_TEST(test_call1_optional_return)
{
    float v[3] = {1, 2, 3};
    tt_tensor *x = vec(3, v), *x2 = vec(2, v);
    tt_library *lib = lib_ok(TT_LIB_DEF, "opt");
    tt_op *op = defop(lib, "opt::maybe(Tensor x) -> Tensor?", k_maybe, NULL);
    tt_value out;
    ck_assert_int_eq(tt_op_call(op, (tt_value[]){tt_v_tensor(x)}, 1, &out, 1), TT_OK);
    ck_assert_int_eq(out.kind, TT_V_NONE);
    tt_tensor *r = tt_call(op, tt_v_tensor(x2));
    ck_assert_ptr_nonnull(r);
    tt_release(r);
    /* NULL from tt_op_call1 always comes with an error. */
    tt_clear_error();
    ck_assert_ptr_null(tt_call(op, tt_v_tensor(x)));
    ck_assert_error(TT_EINVAL, "opt::maybe: returned None; use tt_op_call");
    tt_library_free(lib);
    tt_release(x);
    tt_release(x2);
}
END_TEST

START_TEST(test_register_multi_device_is_atomic)
{
    /* A registration for several devices where one slot is taken
     * registers nothing. */
    tt_library *lib = lib_ok(TT_LIB_DEF, "atom");
    tt_op *op = define_ok(lib, (tt_custom_op_spec){.schema = "atom::f(Tensor x) -> Tensor",
                                                   .kernel = k_cuda, .device_types = "cuda"});
    tt_library *impl = lib_ok(TT_LIB_IMPL, "atom");
    ck_assert_int_eq(tt_register_kernel(impl, "atom::f", "cpu, cuda", k_cpu), TT_EEXIST);
    ck_assert_error(TT_EEXIST, "atom::f already has a cuda kernel (registered by library DEF 'atom'");
    ck_assert(!tt_op_has_kernel(op, TT_DEV_CPU));
    ck_assert_int_eq(tt_register_kernel(impl, "atom::f", "cpu, meta", k_cpu), TT_OK);
    ck_assert(tt_op_has_kernel(op, TT_DEV_CPU) && tt_op_has_kernel(op, TT_DEV_META));
    tt_library_free(impl);
    ck_assert(!tt_op_has_kernel(op, TT_DEV_CPU) && tt_op_has_kernel(op, TT_DEV_CUDA));
    tt_library_free(lib);
}
END_TEST

/* ----------------------------------------------------------------- backends */

START_TEST(test_backend_selection)
{
    float v[3] = {1, 2, 3};
    tt_tensor *x = vec(3, v), *fx = tt_fake_like(x);
    tt_library *lib = lib_ok(TT_LIB_DEF, "be");
    tt_op *both = define_ok(lib, (tt_custom_op_spec){.schema = "be::both(Tensor x, Tensor? y=None) -> Tensor",
                                                     .kernel = k_cpu, .device_types = "cpu",
                                                     .fake = k_fake});
    n_cpu = n_fake = n_default = 0;
    call_copies(both, x);
    ck_assert_int_eq(n_cpu, 1);
    ck_assert_int_eq(n_fake, 0);
    tt_tensor *r = tt_call(both, tt_v_tensor(fx));
    ck_assert_ptr_nonnull(r);
    ck_assert(tt_is_fake(r));
    ck_assert_int_eq(n_fake, 1);
    tt_release(r);
    /* Any fake input picks the fake kernel, even when it is not the first. */
    r = tt_call(both, tt_v_tensor(x), tt_v_tensor(fx));
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(n_fake, 2);
    ck_assert_int_eq(n_cpu, 1);
    tt_release(r);

    /* A default kernel serves real inputs; no fake kernel: a clear error. */
    tt_op *dflt = defop(lib, "be::dflt(Tensor x) -> Tensor", k_default, NULL);
    call_copies(dflt, x);
    ck_assert_int_eq(n_default, 1);
    tt_clear_error();
    ck_assert_ptr_null(tt_call(dflt, tt_v_tensor(fx)));
    ck_assert_error(TT_ENOKERNEL, "be::dflt: no fake kernel is registered, so the op cannot run on "
                                  "fake tensors (registered: default (all devices)); register one "
                                  "with tt_register_fake(lib, \"be::dflt\", fn)");
    ck_assert_int_eq(n_default, 1);

    /* The message lists exactly what is registered. */
    tt_op *odd = define_ok(lib, (tt_custom_op_spec){.schema = "be::odd(Tensor x) -> Tensor",
                                                    .kernel = k_cuda, .device_types = "cuda",
                                                    .fake = k_fake, .backward = k_backward});
    ck_assert_ptr_null(tt_call(odd, tt_v_tensor(x)));
    ck_assert_error(TT_ENOKERNEL, "be::odd: no kernel for device 'cpu' (registered: cuda, fake, "
                                  "autograd)");
    ck_assert_int_eq(n_cuda, 0);
    tt_op *none = defop(lib, "be::none(Tensor x) -> Tensor", NULL, NULL);
    ck_assert_ptr_null(tt_call(none, tt_v_tensor(x)));
    ck_assert_error(TT_ENOKERNEL, "be::none: no kernel for device 'cpu' (registered: nothing)");
    ck_assert_ptr_null(tt_call(none, tt_v_tensor(fx)));
    ck_assert_error(TT_ENOKERNEL, "be::none: no fake kernel is registered, so the op cannot run on "
                                  "fake tensors (registered: nothing)");
    tt_library_free(lib);
    tt_release(fx);
    tt_release(x);
}
END_TEST

START_TEST(test_backend_fake_reads_data)
{
    float v[1] = {1};
    tt_tensor *x = vec(1, v), *fx = tt_fake_like(x);
    tt_library *lib = lib_ok(TT_LIB_DEF, "peek");
    tt_op *op = defop(lib, "peek::f(Tensor x) -> Tensor", k_peek, k_peek);
    for (peek_mode = 0; peek_mode < 2; peek_mode++) {
        /* Real inputs: fine. */
        tt_tensor *r = tt_call(op, tt_v_tensor(x));
        ck_assert_msg(r != NULL, "%s", tt_errmsg());
        tt_release(r);
        tt_clear_error();
        ck_assert_ptr_null(tt_call(op, tt_v_tensor(fx)));
        ck_assert_error(TT_EFAKE, "peek::f: the fake kernel read tensor data, but fake tensors have "
                                  "none; a fake kernel may only use metadata (sizes, strides, dtype)");
        ck_assert_error(TT_EFAKE, peek_mode == 0 ? "(tt_data: cannot access the data of fake f32[1]"
                                                 : "(tt_item: cannot access the data of fake f32[1]");
    }
    tt_library_free(lib);
    tt_release(fx);
    tt_release(x);
}
END_TEST

/* ------------------------------------------------------------- versions */

static tt_status k_fill_ones(tt_frame *f)
{
    tt_tensor *x;
    tt_status st = tt_arg_tensor(f, 0, &x);
    if (!st && !tt_is_fake(x))
        st = tt_fill_(x, 1);
    return st;
}

static tt_status k_inc_(tt_frame *f)
{
    tt_tensor *x;
    tt_status st = tt_arg_tensor(f, 0, &x);
    if (!st && !tt_is_fake(x))
        st = tt_add_(x, x);
    return st ? st : tt_return_self(f, 0, 0);
}

START_TEST(test_mutated_version_bump)
{
    float v[2] = {1, 2};
    tt_tensor *x = vec(2, v), *y = vec(2, v);
    tt_library *lib = lib_ok(TT_LIB_DEF, "ver");
    tt_op *fill = define_ok(lib, (tt_custom_op_spec){.schema = "ver::fill(Tensor x, Tensor y) -> ()",
                                                     .mutates_args = "x", .kernel = k_fill_ones,
                                                     .fake = k_fill_ones});
    tt_op *inc = defop(lib, "ver::inc_(Tensor(a!) self) -> Tensor(a!)", k_inc_, k_inc_);
    tt_op *pure = defop(lib, "ver::pure(Tensor x) -> Tensor", k_cpu, NULL);
    uint64_t vx = tt_version(x), vy = tt_version(y);
    /* The kernel's own write (tt_fill_ bumps) plus the dispatcher's. */
    ck_assert_int_eq(tt_op_call(fill, (tt_value[]){tt_v_tensor(x), tt_v_tensor(y)}, 2, NULL, 0), TT_OK);
    ck_assert_uint_gt(tt_version(x), vx);
    ck_assert_uint_eq(tt_version(y), vy);
    /* A view shares the counter. */
    tt_tensor *view = tt_narrow(x, 0, 1, 1);
    vx = tt_version(x);
    ck_assert_int_eq(tt_op_call(fill, (tt_value[]){tt_v_tensor(view), tt_v_tensor(y)}, 2, NULL, 0), TT_OK);
    ck_assert_uint_gt(tt_version(x), vx);
    tt_release(view);
    tt_tensor *r = tt_call(inc, tt_v_tensor(y));
    ck_assert_ptr_eq(r, y);
    tt_release(r);
    ck_assert_uint_gt(tt_version(y), vy);
    double d;
    ck_assert_int_eq(tt_get(y, &d, 1), TT_OK);
    ck_assert_double_eq(d, 4);
    /* On a fake tensor, no data is written but the version still moves:
     * aliasing and mutation are visible in fake mode too. */
    tt_tensor *fx = tt_fake_like(x);
    uint64_t vf = tt_version(fx);
    ck_assert_int_eq(tt_op_call(fill, (tt_value[]){tt_v_tensor(fx), tt_v_tensor(y)}, 2, NULL, 0), TT_OK);
    ck_assert_uint_eq(tt_version(fx), vf + 1);
    /* A functional op bumps nothing; a failed call bumps nothing. */
    vx = tt_version(x);
    call_copies(pure, x);
    ck_assert_uint_eq(tt_version(x), vx);
    ck_assert_int_eq(tt_op_call(fill, (tt_value[]){tt_v_tensor(x), tt_v_int(1)}, 2, NULL, 0), TT_EINVAL);
    ck_assert_uint_eq(tt_version(x), vx);
    /* A kernel that writes through raw pointers (tt::zero_): the
     * dispatcher's bump is the only one, exactly +1 per call. */
    vx = tt_version(x);
    tt_tensor *z = tt_call(tt_op_find("tt::zero_"), tt_v_tensor(x));
    ck_assert_ptr_eq(z, x);
    tt_release(z);
    ck_assert_uint_eq(tt_version(x), vx + 1);
    ck_assert_int_eq(tt_zero_(x), TT_OK); /* the fast path */
    ck_assert_uint_eq(tt_version(x), vx + 2);
    tt_release(fx);
    tt_library_free(lib);
    tt_release(x);
    tt_release(y);
}
END_TEST

/* ------------------------------------------------------------- queries */

typedef struct { char names[512][64]; int n; } name_list;

static void collect(const tt_op *op, void *ud)
{
    name_list *l = ud;
    if (l->n < 512)
        snprintf(l->names[l->n++], 64, "%s", tt_op_name(op));
}

static bool listed(const name_list *l, const char *name)
{
    for (int i = 0; i < l->n; i++)
        if (strcmp(l->names[i], name) == 0)
            return true;
    return false;
}

START_TEST(test_queries)
{
    tt_library *lib = lib_ok(TT_LIB_DEF, "qq");
    /* Defined out of order: listed in order. */
    tt_op *z = defop(lib, "qq::zeta(Tensor x) -> Tensor", k_cpu, NULL);
    tt_op *a = define_ok(lib, (tt_custom_op_spec){.schema = "qq::alpha(Tensor x) -> Tensor",
                                                  .fake = k_fake, .backward = k_backward});
    tt_op *m = define_ok(lib, (tt_custom_op_spec){.schema = "qq::mid.over(Tensor x) -> Tensor",
                                                  .kernel = k_cuda, .device_types = "cuda"});
    tt_library *frag = lib_ok(TT_LIB_FRAGMENT, "qq");
    defop(frag, "qq::gone(Tensor x) -> Tensor", NULL, NULL);
    tt_library_free(frag);

    static name_list l;
    l.n = 0;
    tt_op_foreach(collect, &l);
    ck_assert_int_gt(l.n, 40);
    ck_assert_int_lt(l.n, 512);
    for (int i = 1; i < l.n; i++)
        ck_assert_msg(strcmp(l.names[i - 1], l.names[i]) < 0, "'%s' listed before '%s'",
                      l.names[i - 1], l.names[i]);
    ck_assert(listed(&l, "qq::alpha") && listed(&l, "qq::mid.over") && listed(&l, "qq::zeta"));
    ck_assert(!listed(&l, "qq::gone"));
    ck_assert(listed(&l, "tt::add.Tensor") && listed(&l, "tt::where.self") && listed(&l, "tt::zero_"));

    ck_assert(tt_op_has_kernel(z, TT_DEV_CPU) && !tt_op_has_fake(z) && !tt_op_has_autograd(z));
    ck_assert(!tt_op_has_kernel(a, TT_DEV_CPU) && tt_op_has_fake(a) && tt_op_has_autograd(a));
    ck_assert(!tt_op_has_kernel(m, TT_DEV_CPU) && tt_op_has_kernel(m, TT_DEV_CUDA));
    ck_assert(!tt_op_is_builtin(z));
    tt_op *add = tt_op_find("tt::add.Tensor");
    ck_assert(tt_op_is_builtin(add) && tt_op_has_fake(add) && tt_op_has_kernel(add, TT_DEV_CPU));
    ck_assert_str_eq(tt_op_name(add), "tt::add.Tensor");
    char buf[128];
    ck_assert_str_eq(schema_text(add, buf, sizeof buf),
                     "tt::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
    /* NULL-safe queries. */
    ck_assert(!tt_op_is_builtin(NULL) && !tt_op_has_fake(NULL) && !tt_op_has_autograd(NULL) &&
              !tt_op_has_kernel(NULL, TT_DEV_CPU));
    ck_assert_str_eq(tt_op_name(NULL), "(null)");
    ck_assert_ptr_null(tt_op_schema(NULL));

    /* Look-up failures say what exists. */
    ck_assert_ptr_null(tt_op_find("tt::add"));
    ck_assert_error(TT_ENOTFOUND, "tt_op_find: no op named 'tt::add'; it has overloads: ");
    ck_assert_error(TT_ENOTFOUND, "tt::add.Tensor");
    ck_assert_error(TT_ENOTFOUND, "tt::add.Scalar");
    ck_assert_ptr_null(tt_op_find("add"));
    ck_assert_error(TT_ENOTFOUND, "no op named 'add' (names look like 'mylib::crop')");
    ck_assert_null_fails(tt_op_find("qq::mid"), TT_ENOTFOUND, "it has overloads: qq::mid.over");
    ck_assert_null_fails(tt_op_find(NULL), TT_EINVAL, "tt_op_find: argument 'name' is NULL");
    ck_assert_ptr_eq(tt_op_find("qq::mid.over"), m);
    tt_library_free(lib);
}
END_TEST

/* ------------------------------------------------------------------ scopes */

static tt_status k_temporaries(tt_frame *f)
{
    tt_tensor *x;
    tt_status st = tt_arg_tensor(f, 0, &x);
    if (st)
        return st;
    tt_tensor *a = tt_mul(x, x), *b = tt_exp(a), *c = tt_add(a, b);
    tt_release(a);
    tt_release(b);
    return tt_return(f, 0, c);
}

START_TEST(test_scope_owns_results)
{
    float v[3] = {0, 1, 2};
    tt_tensor *x = vec(3, v);
    tt_library *lib = lib_ok(TT_LIB_DEF, "sc");
    tt_op *op = defop(lib, "sc::f(Tensor x) -> Tensor", k_temporaries, NULL);
    tt_op *split = defop(lib, "sc::split(Tensor(a) x) -> Tensor(a)[]", k_split, NULL);
    int64_t live = tt_live_tensors();
    tt_scope_begin();
    tt_tensor *r1 = tt_call(op, tt_v_tensor(x));
    tt_tensor *r2 = tt_call(op, tt_v_tensor(r1));
    tt_value out;
    ck_assert_int_eq(tt_op_call(split, (tt_value[]){tt_v_tensor(x)}, 1, &out, 1), TT_OK);
    ck_assert_ptr_nonnull(r2);
    /* Only the results live: the kernels' temporaries are gone. */
    ck_assert_int_eq(tt_live_tensors(), live + 5);
    double d;
    ck_assert_int_eq(tt_get(r1, &d, 2), TT_OK);
    ck_assert_double_eq_tol(d, 4 + exp(4.0), 1e-3);
    /* A list result's array is the caller's: clearing it inside the scope
     * releases its tensors early, as tt_release does. */
    tt_value_clear(&out);
    ck_assert_int_eq(tt_live_tensors(), live + 2);
    tt_keep(r2);
    tt_scope_end(); /* r1 goes; r2 was kept */
    ck_assert_int_eq(tt_live_tensors(), live + 1);
    tt_release(r2);
    tt_library_free(lib);
    tt_release(x);
}
END_TEST

/* ----------------------------------------------------------------- threads */

static void *adder(void *arg)
{
    (void)arg;
    float a[4] = {1, 2, 3, 4}, b[4] = {10, 20, 30, 40};
    long bad = 0;
    for (int it = 0; it < 3000; it++) {
        tt_op *op = tt_op_find("tt::add.Tensor");
        if (!op) {
            bad++;
            continue;
        }
        tt_tensor *x = tt_from_data(TT_SHAPE(4), TT_F32, a);
        tt_tensor *y = tt_from_data(TT_SHAPE(4), TT_F32, b);
        tt_tensor *r = tt_add(x, y);
        tt_tensor *r2 = tt_call(op, tt_v_tensor(x), tt_v_tensor(y));
        float out[4];
        if (!r || !r2 || tt_to_buffer(r, out, sizeof out))
            bad++;
        else
            for (int i = 0; i < 4; i++)
                bad += out[i] != a[i] + b[i];
        if (r2 && tt_to_buffer(r2, out, sizeof out) == TT_OK)
            for (int i = 0; i < 4; i++)
                bad += out[i] != a[i] + b[i];
        /* Another namespace may or may not be there right now. */
        tt_clear_error();
        bad += tt_op_find("thr::f") == NULL && tt_errcode() != TT_ENOTFOUND;
        tt_release(r2);
        tt_release(r);
        tt_release(x);
        tt_release(y);
    }
    return (void *)(intptr_t)bad;
}

static void *definer(void *arg)
{
    (void)arg;
    long bad = 0;
    float a[2] = {5, 6};
    for (int it = 0; it < 300; it++) {
        tt_library *lib = tt_library_new(TT_LIB_FRAGMENT, "thr");
        tt_custom_op_spec spec = {.schema = "thr::f(Tensor x) -> Tensor", .kernel = k_temporaries};
        tt_op *op = lib ? tt_custom_op_define(lib, &spec) : NULL;
        if (!op || tt_register_fake(lib, "thr::f", k_fake)) {
            bad++;
        } else {
            tt_tensor *x = tt_from_data(TT_SHAPE(2), TT_F32, a);
            tt_tensor *r = tt_call(op, tt_v_tensor(x));
            bad += r == NULL;
            tt_release(r);
            tt_release(x);
        }
        tt_library_free(lib);
    }
    return (void *)(intptr_t)bad;
}

START_TEST(test_threads)
{
    pthread_t th[5];
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, adder, NULL), 0);
    ck_assert_int_eq(pthread_create(&th[4], NULL, definer, NULL), 0);
    long total = 0;
    for (int i = 0; i < 5; i++) {
        void *r;
        ck_assert_int_eq(pthread_join(th[i], &r), 0);
        total += (long)(intptr_t)r;
    }
    ck_assert_int_eq(total, 0);
    tt_clear_error();
    ck_assert_ptr_null(tt_op_find("thr::f"));
}
END_TEST

/* ------------------------------------------------------------------ suite */

static Suite *dispatch_suite(void)
{
    Suite *s = suite_create("dispatch");
    TCase *tc = tt_tcase("libraries");
    tcase_add_test(tc, test_library_def_once);
    tcase_add_test(tc, test_library_bad_arguments);
    tcase_add_test(tc, test_fragment_adds_ops);
    tcase_add_test(tc, test_free_removes_ops);
    tcase_add_test(tc, test_free_removes_kernels_on_other_ops);
    suite_add_tcase(s, tc);

    tc = tt_tcase("define");
    tcase_add_test(tc, test_define_twice);
    tcase_add_test(tc, test_define_namespace_and_schema_errors);
    tcase_add_loop_test(tc, test_define_mutates_args, 0,
                        (int)(sizeof mutation_cases / sizeof mutation_cases[0]));
    tcase_add_test(tc, test_define_mutates_args_not_argument_is_einval);
    tcase_add_test(tc, test_define_annotates_from_mutates_args);
    tcase_add_loop_test(tc, test_define_conventions, 0,
                        (int)(sizeof convention_cases / sizeof convention_cases[0]));
    tcase_add_test(tc, test_define_device_types);
    suite_add_tcase(s, tc);

    tc = tt_tcase_with("register_by_name", reg_setup, reg_teardown);
    tcase_add_test(tc, test_register_by_name);
    tcase_add_loop_test(tc, test_register_errors, 0, TT_TABLE_LEN(register_errors));
    suite_add_tcase(s, tc);

    tc = tt_tcase("register");
    tcase_add_test(tc, test_register_other_namespace);
    tcase_add_test(tc, test_register_autograd_refusals);
    tcase_add_test(tc, test_register_multi_device_is_atomic);
    suite_add_tcase(s, tc);

    tc = tt_tcase("calls");
    tcase_add_test(tc, test_bind_defaults);
    tcase_add_test(tc, test_bind_errors);
    tcase_add_test(tc, test_bind_lists_and_value_returns);
    tcase_add_loop_test(tc, test_frame_wrong_type, 0, 13);
    tcase_add_loop_test(tc, test_frame_failures, 0, 9);
    tcase_add_test(tc, test_frame_tensor_list);
    tcase_add_test(tc, test_frame_userdata);
    tcase_add_test(tc, test_tensor_list_arguments);
    tcase_add_test(tc, test_call1_optional_return);
    suite_add_tcase(s, tc);

    tc = tt_tcase("backends");
    tcase_add_test(tc, test_backend_selection);
    tcase_add_test(tc, test_backend_fake_reads_data);
    tcase_add_test(tc, test_mutated_version_bump);
    suite_add_tcase(s, tc);


    tc = tt_tcase("registry");
    tcase_add_test(tc, test_queries);
    suite_add_tcase(s, tc);

    tc = tt_tcase("scopes");
    tcase_add_test(tc, test_scope_owns_results);
    suite_add_tcase(s, tc);

    tc = tt_tcase("threads");
    tcase_add_test(tc, test_threads);
    suite_add_tcase(s, tc);
    return s;
}

TT_TEST_MAIN(dispatch_suite)
