/* tensortrace runtime, the op side: boxed values, the schema language,
 * kernels and their frames, libraries and custom ops, the dispatcher's
 * calls and modes, checked mode. Included by tt_runtime.h (include that). */
#ifndef TT_DISPATCH_H
#define TT_DISPATCH_H

#ifdef __cplusplus
extern "C" {
#endif
#pragma GCC visibility push(default) /* the public API: see tt_runtime.h */

/* ------------------------------------------------------- boxed values */

typedef enum {
    TT_DEV_CPU = 0,
    TT_DEV_CUDA, /* a known device type with no backend in this build */
    TT_DEV_META,
    TT_DEVICE_COUNT
} tt_device;
const char *tt_device_name(tt_device d); /* "cpu" */
int tt_device_from_name(const char *name); /* -1 when unknown */

/* An argument or result travelling through the dispatcher. Values are
 * borrowed views: a list points at the caller's array. */
typedef enum {
    TT_V_NONE = 0,
    TT_V_TENSOR,  /* u.t (may be NULL only for Tensor?) */
    TT_V_INT,     /* u.i: int, SymInt (a tt_size), Scalar */
    TT_V_FLOAT,   /* u.f: float, Scalar */
    TT_V_BOOL,    /* u.b */
    TT_V_STR,     /* u.s */
    TT_V_DTYPE,   /* u.dtype: ScalarType */
    TT_V_DEVICE,  /* u.device */
    TT_V_INTS,    /* u.ints, n */
    TT_V_FLOATS,  /* u.floats, n */
    TT_V_BOOLS,   /* u.bools, n */
    TT_V_TENSORS, /* u.tensors, n (entries may be NULL for Tensor?[]) */
} tt_value_kind;

typedef struct tt_value {
    tt_value_kind kind;
    int32_t n;
    union {
        tt_tensor *t;
        int64_t i;
        double f;
        bool b;
        const char *s;
        tt_dtype dtype;
        tt_device device;
        const int64_t *ints;
        const double *floats;
        const bool *bools;
        tt_tensor *const *tensors;
    } u;
} tt_value;

static inline tt_value tt_v_none(void) { tt_value v = {TT_V_NONE, 0, {0}}; return v; }
static inline tt_value tt_v_tensor(const tt_tensor *t) { tt_value v = {TT_V_TENSOR, 0, {.t = (tt_tensor *)t}}; return v; }
static inline tt_value tt_v_int(int64_t i) { tt_value v = {TT_V_INT, 0, {.i = i}}; return v; }
static inline tt_value tt_v_float(double f) { tt_value v = {TT_V_FLOAT, 0, {.f = f}}; return v; }
static inline tt_value tt_v_bool(bool b) { tt_value v = {TT_V_BOOL, 0, {.b = b}}; return v; }
static inline tt_value tt_v_str(const char *s) { tt_value v = {TT_V_STR, 0, {.s = s}}; return v; }
static inline tt_value tt_v_dtype(tt_dtype d) { tt_value v = {TT_V_DTYPE, 0, {.dtype = d}}; return v; }
static inline tt_value tt_v_device(tt_device d) { tt_value v = {TT_V_DEVICE, 0, {.device = d}}; return v; }
static inline tt_value tt_v_ints(int n, const int64_t *p) { tt_value v = {TT_V_INTS, n, {.ints = p}}; return v; }
static inline tt_value tt_v_floats(int n, const double *p) { tt_value v = {TT_V_FLOATS, n, {.floats = p}}; return v; }
static inline tt_value tt_v_bools(int n, const bool *p) { tt_value v = {TT_V_BOOLS, n, {.bools = p}}; return v; }
static inline tt_value tt_v_tensors(int n, tt_tensor *const *p) { tt_value v = {TT_V_TENSORS, n, {.tensors = p}}; return v; }
/* tt_v_ints(TT_INTS(0, 0, 10, 10)) */
#define TT_INTS(...) TT_SHAPE(__VA_ARGS__)

/* Releases what a call returned into `v` (tensor references, and the array
 * of a tensor-list result) and resets it to none. */
void tt_value_clear(tt_value *v);
/* "Tensor f32[2, 3]", "int[3]", "float" ...: for error messages. */
char *tt_value_describe(const tt_value *v, char *buf, size_t n);

/* ------------------------------------------------------------- schemas */

/* PyTorch's operator schema language, parsed:
 *   ns::name.overload(Tensor(a!) self, int[2] size, *, float eps=1e-05) -> Tensor(a!)
 * The structs are read-only descriptions owned by their tt_schema. */
typedef enum {
    TT_T_TENSOR, TT_T_INT, TT_T_SYMINT, TT_T_FLOAT, TT_T_BOOL, TT_T_STR,
    TT_T_SCALAR, TT_T_SCALARTYPE, TT_T_DEVICE,
    /* PyTorch's enums, passed as their int codes (TT_V_INT), as TorchScript
     * passes them: Layout (0 strided, the one tensortrace has) and
     * MemoryFormat (0 contiguous_format, 1 preserve_format, 2 channels_last,
     * 3 channels_last_3d). */
    TT_T_LAYOUT, TT_T_MEMORY_FORMAT,
} tt_base_type;

typedef struct {
    tt_base_type base;
    bool optional;      /* T?  (for a list: the list itself may be None) */
    bool is_list;       /* T[] */
    bool elem_optional; /* Tensor?[] */
    int list_size;      /* N of int[N]; 0 for T[] */
} tt_type;

typedef struct {
    const char *name;     /* "" for an unnamed return */
    tt_type type;
    bool kwarg_only;      /* after the `*` */
    bool has_default;
    tt_value default_value; /* lists and strings point into the schema */
    /* Alias annotation: Tensor(a) -> alias_set "a"; Tensor(a!) adds
     * is_write; Tensor(a -> *) sets alias_after_wildcard; Tensor! is a
     * write with no set name. */
    const char *alias_set; /* NULL when not annotated */
    bool is_write;
    bool alias_after_wildcard;
    /* A ScalarType default written as PyTorch's enum code (dtype=4, as
     * PyTorch prints long): printed back as the code. */
    bool default_is_code;
} tt_arg;

/* The longest qualified op name, "ns::name.overload", in bytes: a schema
 * whose name is longer does not parse (TT_ESCHEMA). */
#define TT_MAX_OP_NAME 255

typedef struct tt_schema tt_schema;
/* Parses `text`; NULL with TT_ESCHEMA and a message that names the column
 * ("column 17: unknown type 'int64_t' (use 'int')") when it does not. */
tt_schema *tt_schema_parse(const char *text);
void tt_schema_free(tt_schema *s);
const char *tt_schema_ns(const tt_schema *s);       /* "mylib" */
const char *tt_schema_name(const tt_schema *s);     /* "crop" */
const char *tt_schema_overload(const tt_schema *s); /* "" when none */
int tt_schema_nargs(const tt_schema *s);
int tt_schema_nreturns(const tt_schema *s);
const tt_arg *tt_schema_arg(const tt_schema *s, int i);
const tt_arg *tt_schema_return(const tt_schema *s, int i);
/* True when some argument is annotated as written (a!). */
bool tt_schema_is_mutable(const tt_schema *s);
/* Canonical text; parse(print(s)) gives an equal schema. Returns the
 * length needed, as snprintf. */
int tt_schema_print(const tt_schema *s, char *buf, size_t n);
/* "int[4]", "Tensor?" ... */
char *tt_type_str(const tt_type *t, char *buf, size_t n);

/* ------------------------------------------------- kernels and frames */

typedef struct tt_op tt_op;
typedef struct tt_frame tt_frame;
typedef struct tt_library tt_library;

/* The one kernel signature, for built-ins and custom ops alike. A kernel
 * reads its arguments through the checked accessors below and hands its
 * results to tt_return*; it reports failure with tt_frame_fail and
 * returns that status. */
typedef tt_status (*tt_kernel_fn)(tt_frame *f);

const tt_op *tt_frame_op(const tt_frame *f);
void *tt_frame_userdata(const tt_frame *f);
int tt_frame_nargs(const tt_frame *f);
/* Raw argument i (defaults already filled in), or NULL if out of range. */
const tt_value *tt_frame_arg(const tt_frame *f, int i);

/* Checked accessors: argument i must have the schema type asked for.
 * Otherwise they fail with TT_EINVAL and a message such as
 *   mylib::crop: argument 'box' (#2) expects int[4], got int[3]
 * Tensors and lists are borrowed for the duration of the call. */
tt_status tt_arg_tensor(tt_frame *f, int i, tt_tensor **out); /* NULL: None */
tt_status tt_arg_tensors(tt_frame *f, int i, tt_tensor *const **out, int *n);
tt_status tt_arg_int(tt_frame *f, int i, int64_t *out);
tt_status tt_arg_float(tt_frame *f, int i, double *out); /* also Scalar, int */
tt_status tt_arg_bool(tt_frame *f, int i, bool *out);
tt_status tt_arg_str(tt_frame *f, int i, const char **out);
tt_status tt_arg_ints(tt_frame *f, int i, const int64_t **out, int *n);
tt_status tt_arg_floats(tt_frame *f, int i, const double **out, int *n);
tt_status tt_arg_dtype(tt_frame *f, int i, tt_dtype *out, bool *is_none);
/* Scalar: its value as double and whether it was an integer or bool. */
tt_status tt_arg_scalar(tt_frame *f, int i, double *out, bool *is_integral);
bool tt_arg_is_none(const tt_frame *f, int i);

/* Results. tt_return takes ownership of `t` (a new reference); returning
 * NULL is an error. tt_return_self returns argument `arg` itself (for
 * in-place and out= ops, which return their mutated argument). */
tt_status tt_return(tt_frame *f, int i, tt_tensor *t);
tt_status tt_return_self(tt_frame *f, int i, int arg);
tt_status tt_return_tensors(tt_frame *f, int i, int n, tt_tensor **ts); /* takes each */
tt_status tt_return_value(tt_frame *f, int i, tt_value v); /* int/float/bool */
/* Fails the call: sets the error to "<op name>: <message>" and returns
 * `code`, so a kernel can `return tt_frame_fail(f, ...)`. */
tt_status tt_frame_fail(tt_frame *f, tt_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));


/* ------------------------------------------------ libraries and ops */

/* Who owns registrations: a DEF library defines a namespace (once), a
 * FRAGMENT adds ops to an existing namespace, an IMPL adds kernels to ops
 * defined elsewhere. Freeing a library removes everything registered
 * through it; op handles stay valid (calls then fail, naming the op). */
typedef enum { TT_LIB_DEF, TT_LIB_FRAGMENT, TT_LIB_IMPL } tt_library_kind;
/* The registration calls are macros that pass the caller's file:line
 * (TT_HERE), so a second registration of the same slot (TT_EEXIST) names
 * where the first one was made. */
#define tt_library_new(kind, ...) tt_library_new_at((kind), (__VA_ARGS__), TT_HERE)
tt_library *tt_library_new_at(tt_library_kind kind, const char *ns, tt_srcloc loc);
tt_library *tt_library_free(tt_library *lib); /* NULL-safe; returns NULL */

typedef struct tt_autograd_ctx tt_autograd_ctx;
/* Saves what backward needs: inputs are the call's arguments (defaults
 * filled in), outputs its results. */
typedef tt_status (*tt_setup_context_fn)(tt_autograd_ctx *ctx,
                                         const tt_value *inputs, int ninputs,
                                         const tt_value *outputs, int noutputs);
/* One gradient per input into grad_inputs[i] (a new reference, or NULL for
 * "no gradient"); grads[j] is the gradient of output j (never NULL: zeros
 * when an output was unused). Built from ops, so it traces. */
typedef tt_status (*tt_backward_fn)(tt_autograd_ctx *ctx,
                                    tt_tensor *const *grads, int ngrads,
                                    tt_tensor **grad_inputs, int ninputs);

/* Tags, torch.library's (torch.Tag), given at definition (spec.tags, a
 * mask), queryable (tt_op_tags) and part of the op's description:
 *   PT2_COMPLIANT          the op promises to pass tt_opcheck (its failure
 *                          message says the promise is broken);
 *   NONDETERMINISTIC_SEEDED  its values depend on the RNG: opcheck's
 *                          aot_dispatch_dynamic compares metadata only;
 *   DATA_DEPENDENT_OUTPUT  an output depends on the inputs' values;
 *   NEEDS_FIXED_STRIDE_ORDER  a compiler must keep its inputs' layout;
 *   POINTWISE              elementwise: one tensor out of tensors in, of
 *                          their broadcast shape (checked at definition);
 *                          with a fake kernel, compiled plans may fuse it
 *                          into elementwise chains, running its kernel on
 *                          slices of its inputs;
 *   INPLACE                torchgen's in-place variant, checked at definition:
 *                          'ns::foo_' takes 'Tensor(a!) self' first and returns
 *                          it, and the functional 'ns::foo' (same overload) is
 *                          defined with the same other arguments;
 *   OUT                    torchgen's out= variant: keyword-only 'Tensor(a!)'
 *                          out arguments, returned in order, and the
 *                          functional op is defined ('ns::foo' for 'foo.out',
 *                          'ns::foo.X' for 'foo.X_out') with the same other
 *                          arguments. An untagged out= overload is held to
 *                          the same arguments when its functional op exists. */
#define TT_TAG_LIST(X)                                                         \
    X(TT_TAG_PT2_COMPLIANT, "pt2_compliant_tag")                              \
    X(TT_TAG_NONDETERMINISTIC_SEEDED, "nondeterministic_seeded")              \
    X(TT_TAG_DATA_DEPENDENT_OUTPUT, "data_dependent_output")                  \
    X(TT_TAG_NEEDS_FIXED_STRIDE_ORDER, "needs_fixed_stride_order")            \
    X(TT_TAG_POINTWISE, "pointwise")                                          \
    X(TT_TAG_INPLACE, "inplace")                                              \
    X(TT_TAG_OUT, "out")
enum {
#define TT_X_TAG_BIT(tag, name) tag##_BIT,
    TT_TAG_LIST(TT_X_TAG_BIT)
#undef TT_X_TAG_BIT
    TT_TAG_COUNT
};
typedef enum {
#define TT_X_TAG(tag, name) tag = 1u << tag##_BIT,
    TT_TAG_LIST(TT_X_TAG)
#undef TT_X_TAG
} tt_tag;
const char *tt_tag_name(tt_tag tag); /* "pt2_compliant_tag"; NULL if not one tag */

/* A custom operator, the C form of torch.library.custom_op. Built-in ops
 * are defined through this same call. */
typedef struct {
    const char *schema;       /* "mylib::crop(Tensor pic, int[4] box) -> Tensor" */
    const char *mutates_args; /* "output" / "a, b"; NULL: as the schema says */
    const char *device_types; /* "cpu"; NULL: the kernel serves every device */
    tt_kernel_fn kernel;      /* may be NULL: register later */
    tt_kernel_fn fake;        /* output metadata from input metadata */
    tt_backward_fn backward;
    tt_setup_context_fn setup_context;
    void *userdata; /* handed to every kernel through tt_frame_userdata */
    /* The outputs never carry a gradient (like PyTorch's
     * mark_non_differentiable): detach, empty_like. No backward needed. */
    bool nondifferentiable;
    unsigned tags; /* tt_tag bits */
} tt_custom_op_spec;

/* mutates_args = TT_MUTATES_UNKNOWN: PyTorch's pessimistic "unknown", every
 * tensor argument may be written. "*" cannot be an argument's name. */
#define TT_MUTATES_UNKNOWN "*"

/* Variadic so that a compound-literal spec, commas and all, is one
 * argument: tt_custom_op_define(lib, &(tt_custom_op_spec){...}). */
#define tt_custom_op_define(lib, ...) tt_custom_op_define_at((lib), (__VA_ARGS__), TT_HERE)
tt_op *tt_custom_op_define_at(tt_library *lib, const tt_custom_op_spec *spec, tt_srcloc loc);

/* An op for a registration call: its name ("mylib::crop",
 * "mylib::crop.out") or the tt_op * that tt_custom_op_define returned.
 * TT_OPREF(x) makes one from either, so the calls below take both. */
typedef struct {
    const char *name;
    const tt_op *op;
} tt_opref;
static inline tt_opref tt_opref_name(const char *name) { tt_opref r = {name, 0}; return r; }
static inline tt_opref tt_opref_op(const tt_op *op) { tt_opref r = {0, op}; return r; }
#define TT_OPREF(x)                                                            \
    _Generic((x), tt_op *: tt_opref_op, const tt_op *: tt_opref_op,            \
             default: tt_opref_name)(x)

/* device_type "cpu", "cuda" or a list ("cpu, cuda"); NULL registers the
 * default kernel for every device. "meta" registers the op's fake kernel
 * (PyTorch's Meta kernel is its fake kernel): a meta kernel and
 * tt_register_fake fill one slot. A device-specific kernel needs an op
 * with a Tensor or a Device argument (else no call has a device). */
#define tt_register_kernel(lib, op, device_type, fn)                           \
    tt_register_kernel_at((lib), TT_OPREF(op), (device_type), (fn), TT_HERE)
#define tt_register_fake(lib, op, fn) tt_register_fake_at((lib), TT_OPREF(op), (fn), TT_HERE)
/* backward = tt_autograd_fallthrough (setup_context NULL) is PyTorch's
 * fallthrough_kernel for autograd: the op is not differentiable and is not
 * recorded; a call on inputs that require grad runs the kernel and its
 * outputs do not require grad. */
#define tt_register_autograd(lib, op, backward, setup_context)                 \
    tt_register_autograd_at((lib), TT_OPREF(op), (backward), (setup_context), TT_HERE)
tt_status tt_register_kernel_at(tt_library *lib, tt_opref op, const char *device_type,
                                tt_kernel_fn fn, tt_srcloc loc);
tt_status tt_register_fake_at(tt_library *lib, tt_opref op, tt_kernel_fn fn, tt_srcloc loc);
tt_status tt_register_autograd_at(tt_library *lib, tt_opref op, tt_backward_fn backward,
                                  tt_setup_context_fn setup_context, tt_srcloc loc);
/* PyTorch's CustomOpDef.set_kernel_enabled: switches the kernel of a
 * custom op for device_type ("cpu", "cuda", or a list) off or back on,
 * without unregistering it. A call on that device then runs the default
 * kernel (tt_register_kernel with device NULL), or fails with TT_ENOKERNEL
 * listing what is registered ("cpu (disabled)"). Switching off a device
 * with no kernel, a built-in's kernel or the fake ("meta") kernel is
 * TT_EINVAL; switching on what is on is TT_OK. The state belongs to the
 * op's definition: a kernel registered later for a switched-off device
 * starts off. */
tt_status tt_op_set_kernel_enabled(const tt_op *op, const char *device_type, bool enabled);
/* True when op has a kernel for d and it is switched on. */
bool tt_op_kernel_enabled(const tt_op *op, tt_device d);
/* A backward to register, never called: see tt_register_autograd. */
tt_status tt_autograd_fallthrough(tt_autograd_ctx *ctx, tt_tensor *const *grads, int ngrads,
                                  tt_tensor **grad_inputs, int ninputs);

/* Look-up by "ns::name" (the overload-less op) or "ns::name.overload".
 * The handle is stable: keep it and call through it. After its library is
 * freed a call through it fails (TT_ENOTFOUND) naming the op; defining the
 * name again gives the same handle back. A handle is never freed (it is a
 * few words; the definition behind it is freed with its library, once no
 * call in flight uses it). */
tt_op *tt_op_find(const char *name);
const char *tt_op_name(const tt_op *op); /* "mylib::crop" / "tt::add.Tensor" */
/* The out= variant of a functional op (for "ns::foo", "ns::foo.out"; for
 * "ns::foo.X", "ns::foo.X_out" or "ns::foo.out_X"), or NULL with
 * TT_ENOTFOUND naming the names looked for. */
tt_op *tt_op_out_variant(const tt_op *op);
/* The defined ops a base name stands for: "ns::name" itself (first, if
 * defined) and every "ns::name.overload", in definition order; an
 * overload in `name` is ignored. Writes at most max into out (which may
 * be NULL) and returns how many there are. */
int tt_op_overloads(const char *name, const tt_op **out, int max);
/* PyTorch's OpOverloadPacket: the op among "ns::name" and its overloads
 * that takes these arguments (and returns nouts values). The op the name
 * itself names wins when its arguments fit; else the one overload they
 * fit. NULL with TT_EINVAL when they fit several (the message lists
 * them) or none (it lists each with why), TT_ENOTFOUND when nothing has
 * that name. A full "ns::name.overload" is looked up as tt_op_find does.
 * tt_op_call through the handle of "ns::name" falls back to this when
 * the arguments do not fit that op. */
tt_op *tt_op_resolve(const char *name, const tt_value *args, int nargs, int nouts);
/* NULL when not defined. Valid while the op stays defined (and inside a
 * call of it); another thread's tt_library_free may free it. */
const tt_schema *tt_op_schema(const tt_op *op);
bool tt_op_is_builtin(const tt_op *op);    /* namespace "tt" */
bool tt_op_has_fake(const tt_op *op);
bool tt_op_has_autograd(const tt_op *op);
bool tt_op_has_kernel(const tt_op *op, tt_device d);
unsigned tt_op_tags(const tt_op *op); /* tt_tag bits; 0 for NULL */
/* The op's description: its schema, then its tags if any,
 * "mylib::f(Tensor x) -> Tensor  [tags: pointwise]". Returns the length
 * needed, as snprintf. */
int tt_op_describe(const tt_op *op, char *buf, size_t n);
/* Visits every defined op in name order. */
void tt_op_foreach(void (*fn)(const tt_op *op, void *ud), void *ud);
/* The registry's size, for leak checks: handles (one per name ever
 * defined) and op definitions alive (defined, or freed but still used by a
 * call in flight or a recorded autograd node). Either pointer may be NULL. */
void tt_op_counts(int64_t *handles, int64_t *definitions);

/* Calls an op through the dispatcher. args are borrowed, positional in
 * schema order (missing trailing arguments take their defaults). outs
 * receive the results as new references. Inside a scope, new tensors among
 * them belong to the scope, as any tensor made there; a result that is one
 * of the arguments (what in-place and out= ops return) is an extra
 * reference to a tensor you already have, and stays yours to release
 * (tt_value_clear / tt_release) in or out of a scope.
 * Sized lists bind as PyTorch binds them, but held to their size: int[N]
 * (SymInt[N], float[N]) takes N values, or one number repeated N times
 * (max_pool2d(x, 2)); int[1] takes any number ("a dim or several"); []
 * binds where the schema's default is [] (stride=[]: "unset"). */
tt_status tt_op_call(const tt_op *op, const tt_value *args, int nargs,
                     tt_value *outs, int nouts);
/* For ops returning one tensor: the result, or NULL with the error set. */
tt_tensor *tt_op_call1(const tt_op *op, const tt_value *args, int nargs);
/* tt_call(op, args...) also records the calling line, so a graph break
 * caused by the op (one with no fake kernel, say) and the graph node it
 * makes name the user's line. */
tt_tensor *tt_op_call1_at(const tt_op *op, const tt_value *args, int nargs,
                          tt_srcloc loc);
#define tt_call(op, ...)                                                       \
    tt_op_call1_at((op), (const tt_value[]){__VA_ARGS__},                       \
                   (int)(sizeof((tt_value[]){__VA_ARGS__}) / sizeof(tt_value)), \
                   TT_HERE)
/* The user's line of the op call running on this thread ({0} if none):
 * the innermost call made from code outside the library (see "Call
 * sites" below); a built-in's own calls of other ops do not count. */
tt_srcloc tt_callsite(void);

/* ------------------------------------------------------------ call sites
 *
 * Where the user's code called an op, for the graph node it makes and for
 * graph-break reports (like FX's stack traces). In code built against this
 * header (not inside the library), the typed wrappers (tt_add ...), the
 * views, tt_op_call, tt_backward and tt_grad are macros over the functions
 * of the same name that push a frame holding __FILE__, __LINE__ and
 * __func__ on this thread's chain for the duration of the call: a frame is
 * a compound literal in the caller's block (so it lives until the call
 * returns) and the chain is one thread-local pointer, so an eager call
 * pays a few stores and no function call. (f)(args) or &f still reach the
 * plain function; define TT_NO_CALLSITES before including to turn the
 * macros off. Not in C++, which has no compound literals. */
#if !defined(__cplusplus)
typedef struct tt_callframe {
    tt_srcloc loc;
    const struct tt_callframe *prev;
    const char *fn; /* the function called ("tt_sin"); NULL: not known */
} tt_callframe;
/* The innermost frame of this thread; use the macros, not this. Initial
 * exec, as all of the library's thread-locals: a model library built with
 * -fPIC then reaches it without a __tls_get_addr call. */
extern _Thread_local const tt_callframe *tt_callframe_top
    __attribute__((tls_model("initial-exec")));
static inline void tt_callframe_enter(tt_callframe *f)
{
    f->prev = tt_callframe_top;
    tt_callframe_top = f;
}
static inline void tt_callframe_leave(void)
{
    const tt_callframe *f = tt_callframe_top;
    if (f)
        tt_callframe_top = f->prev;
}
/* Ends the thread's error with the call sites on the chain, innermost
 * first (", called from model.c:12 in mlp, called from main.c:40 in
 * main"), unless it names the innermost one already; nothing when no
 * error is held. The macros call it when a call fails, so every error of
 * a user's call says which call it was. */
void tt_callframe_fail(void);
static inline tt_tensor *tt_callframe_leave_t(tt_tensor *result)
{
    if (__builtin_expect(!result, 0))
        tt_callframe_fail();
    tt_callframe_leave();
    return result;
}
static inline tt_status tt_callframe_leave_s(tt_status result)
{
    if (__builtin_expect(result != 0, 0))
        tt_callframe_fail();
    tt_callframe_leave();
    return result;
}
/* f(...) with the caller's line on the chain: a tensor-returning f (_T)
 * or a status-returning one (_S). The frame is entered before the
 * arguments are evaluated, so in tt_relu(tt_add(a, b)) tt_add's frame
 * sits on tt_relu's while tt_add runs and is gone when tt_relu runs. */
#define TT_CALLSITE_FRAME(f) (&(tt_callframe){{__FILE__, __LINE__, __func__}, 0, #f})
#define TT_CALLSITE_T(f, ...)                                                  \
    (tt_callframe_enter(TT_CALLSITE_FRAME(f)), tt_callframe_leave_t((f)(__VA_ARGS__)))
#define TT_CALLSITE_S(f, ...)                                                  \
    (tt_callframe_enter(TT_CALLSITE_FRAME(f)), tt_callframe_leave_s((f)(__VA_ARGS__)))
#if !defined(TT_BUILDING_LIBRARY) && !defined(TT_NO_CALLSITES)
#define TT_CALLSITES 1
#define tt_op_call(...) TT_CALLSITE_S(tt_op_call, __VA_ARGS__)
#define tt_op_call1(...) TT_CALLSITE_T(tt_op_call1, __VA_ARGS__)
/* The factories and views of tt_runtime.h that are ops. */
#define tt_empty(...) TT_CALLSITE_T(tt_empty, __VA_ARGS__)
#define tt_empty_strided(...) TT_CALLSITE_T(tt_empty_strided, __VA_ARGS__)
#define tt_zeros(...) TT_CALLSITE_T(tt_zeros, __VA_ARGS__)
#define tt_ones(...) TT_CALLSITE_T(tt_ones, __VA_ARGS__)
#define tt_full(...) TT_CALLSITE_T(tt_full, __VA_ARGS__)
#define tt_scalar(...) TT_CALLSITE_T(tt_scalar, __VA_ARGS__)
#define tt_arange(...) TT_CALLSITE_T(tt_arange, __VA_ARGS__)
#define tt_linspace(...) TT_CALLSITE_T(tt_linspace, __VA_ARGS__)
#define tt_rand(...) TT_CALLSITE_T(tt_rand, __VA_ARGS__)
#define tt_randn(...) TT_CALLSITE_T(tt_randn, __VA_ARGS__)
#define tt_new_empty(...) TT_CALLSITE_T(tt_new_empty, __VA_ARGS__)
#define tt_empty_like(...) TT_CALLSITE_T(tt_empty_like, __VA_ARGS__)
#define tt_view(...) TT_CALLSITE_T(tt_view, __VA_ARGS__)
#define tt_reshape(...) TT_CALLSITE_T(tt_reshape, __VA_ARGS__)
#define tt_permute(...) TT_CALLSITE_T(tt_permute, __VA_ARGS__)
#define tt_transpose(...) TT_CALLSITE_T(tt_transpose, __VA_ARGS__)
#define tt_t(...) TT_CALLSITE_T(tt_t, __VA_ARGS__)
#define tt_narrow(...) TT_CALLSITE_T(tt_narrow, __VA_ARGS__)
#define tt_slice(...) TT_CALLSITE_T(tt_slice, __VA_ARGS__)
#define tt_select(...) TT_CALLSITE_T(tt_select, __VA_ARGS__)
#define tt_expand(...) TT_CALLSITE_T(tt_expand, __VA_ARGS__)
#define tt_squeeze(...) TT_CALLSITE_T(tt_squeeze, __VA_ARGS__)
#define tt_squeeze_all(...) TT_CALLSITE_T(tt_squeeze_all, __VA_ARGS__)
#define tt_unsqueeze(...) TT_CALLSITE_T(tt_unsqueeze, __VA_ARGS__)
#define tt_flatten(...) TT_CALLSITE_T(tt_flatten, __VA_ARGS__)
#define tt_as_strided(...) TT_CALLSITE_T(tt_as_strided, __VA_ARGS__)
#define tt_detach(...) TT_CALLSITE_T(tt_detach, __VA_ARGS__)
#define tt_contiguous(...) TT_CALLSITE_T(tt_contiguous, __VA_ARGS__)
#define tt_clone(...) TT_CALLSITE_T(tt_clone, __VA_ARGS__)
#define tt_to_dtype(...) TT_CALLSITE_T(tt_to_dtype, __VA_ARGS__)
#define tt_copy_(...) TT_CALLSITE_S(tt_copy_, __VA_ARGS__)
#define tt_fill_(...) TT_CALLSITE_S(tt_fill_, __VA_ARGS__)
#endif
#endif

/* For compiled plans: runs op's kernel directly (the fake kernel when an
 * input is fake), skipping argument binding, modes and autograd. args
 * must be complete (defaults filled in) and of the schema's types, as a
 * recorded graph's are. */
tt_status tt_op_call_unchecked(const tt_op *op, const tt_value *args, int nargs,
                               tt_value *outs, int nouts);

/* ------------------------------------------------------ dispatch modes */

/* A mode intercepts every op call on its thread (the tracer is one). Its
 * handler runs with the mode switched off, and continues the call below it
 * with tt_op_redispatch (or does not). */
typedef struct tt_mode tt_mode;
struct tt_mode {
    tt_status (*call)(tt_mode *m, const tt_op *op, const tt_value *args,
                      int nargs, tt_value *outs, int nouts);
    /* Optional: a data read (tt_data, tt_item, tt_get ...) while the mode
     * is on, or inside a fake kernel running below the innermost mode. A
     * non-OK status fails the read; TT_EGRAPHBREAK (a graph break) still
     * hands the caller readable bytes (see fake_data). */
    tt_status (*data_read)(tt_mode *m, const tt_tensor *t, const char *what,
                           tt_srcloc loc);
    /* Optional: for a data read of a fake tensor that data_read let
     * through (TT_OK or TT_EGRAPHBREAK), memory standing in for the
     * tensor's first element, readable and writable for the tensor's
     * extent and owned by the mode; NULL: the read fails with TT_EFAKE. */
    void *(*fake_data)(tt_mode *m, const tt_tensor *t);
    void *ud;
};
tt_status tt_mode_push(tt_mode *m);
tt_mode *tt_mode_pop(void);     /* returns the mode popped */
tt_mode *tt_mode_current(void); /* NULL when none (or switched off) */
tt_status tt_op_redispatch(const tt_op *op, const tt_value *args, int nargs,
                           tt_value *outs, int nouts);
/* Fake mode, per thread and nestable (PyTorch's FakeTensorMode): while on,
 * every op runs its fake kernel and factories make fake tensors. */
void tt_fake_mode_begin(void);
tt_status tt_fake_mode_end(void); /* TT_EINVAL without a matching begin */
bool tt_fake_mode_enabled(void);
/* Checked mode (process-wide; also TT_CHECK_OPS=1 in the environment):
 * every eager call of a custom op also runs its fake kernel on fake copies
 * of the inputs and compares the outputs' metadata, and checks that it
 * wrote no argument the schema does not mark written; a difference fails
 * the call with TT_EOPCHECK. */
bool tt_checked_mode(void);
void tt_set_checked_mode(bool on);
/* True (with a sentence in why) when a fake output's metadata differs from
 * the real one's: dtype, shape (a symbolic size matches any), strides of
 * dims larger than 1, storage offset. */
bool tt_meta_mismatch(const tt_tensor *real, const tt_tensor *fake, char *why, size_t n);
/* A per-tensor slot a mode uses to find the tensors it made. */
void tt_set_mode_tag(tt_tensor *t, uint64_t key, int64_t val);
bool tt_get_mode_tag(const tt_tensor *t, uint64_t key, int64_t *val);

/* True when a call on these tensors can skip boxing: no mode is on, no
 * tensor is fake, and autograd has nothing to record. The typed wrappers'
 * fast path. */
bool tt_dispatch_is_trivial(int n, const tt_tensor *const *ts);

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif /* TT_DISPATCH_H */
