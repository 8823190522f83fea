/* tensortrace runtime: errors, dtypes, sizes, storage, tensors and their views,
 * fake tensors, scopes, strided iteration.
 *
 * Conventions (see DESIGN.md):
 *  - A function returning tt_tensor * returns a NEW reference (release it with
 *    tt_release) or NULL with the error set; tensor arguments are borrowed.
 *  - A function returning tt_status returns TT_OK (0) or an error code, and
 *    tt_errmsg() then holds a sentence naming the call, the argument and what
 *    was expected. Nothing here aborts on a caller's mistake.
 */
#ifndef TT_RUNTIME_H
#define TT_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TT_MAX_DIMS 8

/* ------------------------------------------------------------------ errors */

/* One X-macro gives the enum and the name table, so they cannot drift. */
#define TT_STATUS_LIST(X)                                                      \
    X(TT_OK, "ok")                                                             \
    X(TT_EINVAL, "invalid argument")                                           \
    X(TT_ENOMEM, "out of memory")                                              \
    X(TT_EFAKE, "data access on a fake tensor")                                \
    X(TT_ESHAPE, "shape error")                                                \
    X(TT_EDTYPE, "dtype error")                                                \
    X(TT_ESCHEMA, "schema error")                                              \
    X(TT_ENOTFOUND, "not found")                                               \
    X(TT_EEXIST, "already defined")                                            \
    X(TT_ENOKERNEL, "no kernel")                                               \
    X(TT_EAUTOGRAD, "autograd error")                                          \
    X(TT_EGRAPHBREAK, "graph break")                                           \
    X(TT_EGUARD, "guard failure")                                              \
    X(TT_EOPCHECK, "opcheck failure")                                          \
    X(TT_EINTERNAL, "internal error")

typedef enum {
#define TT_X_ENUM(code, text) code,
    TT_STATUS_LIST(TT_X_ENUM)
#undef TT_X_ENUM
    TT_STATUS_COUNT
} tt_status;

/* The last error of the calling thread. The message stays until the next
 * error or tt_clear_error(). */
tt_status tt_errcode(void);
const char *tt_errmsg(void);
void tt_clear_error(void);
const char *tt_status_name(tt_status s); /* "TT_ESHAPE" */
/* Set the thread's error (printf-style message) and return `code`. For user
 * code and kernels that want to fail with the library's conventions. */
tt_status tt_error(tt_status code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Where a call was made from; the calls that may break a graph capture it. */
typedef struct {
    const char *file;
    int line;
    const char *func;
} tt_srcloc;
#define TT_HERE ((tt_srcloc){__FILE__, __LINE__, __func__})

/* ------------------------------------------------------------------ dtypes */

/* X(enum, short name, C type, byte size, is floating point) */
#define TT_DTYPE_LIST(X)                                                       \
    X(TT_F32, "f32", float, 4, 1)                                              \
    X(TT_F64, "f64", double, 8, 1)                                             \
    X(TT_I64, "i64", int64_t, 8, 0)                                            \
    X(TT_I32, "i32", int32_t, 4, 0)                                            \
    X(TT_U8, "u8", uint8_t, 1, 0)                                              \
    X(TT_BOOL, "bool", bool, 1, 0)

typedef enum {
#define TT_X_ENUM(e, name, ctype, size, isf) e,
    TT_DTYPE_LIST(TT_X_ENUM)
#undef TT_X_ENUM
    TT_DTYPE_COUNT
} tt_dtype;

size_t tt_dtype_size(tt_dtype dt);
const char *tt_dtype_name(tt_dtype dt); /* "f32"; "?" when out of range */
bool tt_dtype_is_float(tt_dtype dt);
/* Accepts short names ("f32") and PyTorch's ("float32", "float", "long"...).
 * Returns -1 (as int) when unknown. */
int tt_dtype_from_name(const char *name);
/* PyTorch's promotion lattice for two tensor dtypes (bool < u8 < i32 < i64 <
 * f32 < f64). */
tt_dtype tt_promote_types(tt_dtype a, tt_dtype b);

/* ------------------------------------------------------------------- sizes */

/* A size, stride or offset. Concrete values are plain non-negative int64s, so
 * eager code never looks at symbols. A value at or below TT_SYM_BASE is the
 * handle of a symbolic expression (a symbol such as s0 or u0, or an
 * expression of symbols) in the process-wide shape environment. No real size
 * or stride is negative, so the two never collide, and the tensor struct and
 * its accessors are the same whether sizes are symbolic or not. This is
 * PyTorch's SymInt packing, with the expression nodes in the runtime. */
typedef int64_t tt_size;
#define TT_SYM_BASE (INT64_MIN / 2)
static inline bool tt_size_is_sym(tt_size s) { return s <= TT_SYM_BASE; }

/* A new symbol. `prefix` is "s" for an input size (backed: `hint` is the
 * example value) or "u" for a data-dependent size (unbacked: hint < 0). Its
 * name is the prefix and a per-prefix counter: s0, s1, u0... */
tt_size tt_sym_new(const char *prefix, int64_t hint);
/* Arithmetic on sizes: concrete operands fold to a concrete result,
 * otherwise an expression handle is returned (hash-consed, so equal
 * expressions have equal handles). */
tt_size tt_sym_add(tt_size a, tt_size b);
tt_size tt_sym_mul(tt_size a, tt_size b);
tt_size tt_sym_sub(tt_size a, tt_size b);
tt_size tt_sym_floordiv(tt_size a, tt_size b);
tt_size tt_sym_mod(tt_size a, tt_size b);
/* The example value of a size (concrete sizes are their own hint); -1 when
 * the expression contains an unbacked symbol. */
int64_t tt_sym_hint(tt_size s);
/* Writes "8", "s0" or "s0*s1 + 4" into buf (always NUL-terminated); returns
 * the length it needed, as snprintf does. */
int tt_size_str(tt_size s, char *buf, size_t n);
/* Forgets all symbols and expressions (handles made earlier become
 * invalid). Counters restart at 0, so traces print stably. */
void tt_sym_reset(void);
/* The value of s with symbols bound (syms[i] = vals[i]); false when some
 * symbol of s is not bound. */
bool tt_sym_eval(tt_size s, int n, const tt_size *syms, const int64_t *vals,
                 int64_t *out);

/* Comparing sizes. C code that may run under a symbolic trace compares
 * sizes through these: on symbolic sizes they decide on the example
 * values and record the outcome as a guard (the compiled graph is reused
 * only for inputs where it holds). tt_size_int specializes a size to its
 * example value (guarding on it). */
typedef enum { TT_GUARD_EQ, TT_GUARD_LT, TT_GUARD_LE } tt_guard_op;
bool tt_size_eq(tt_size a, tt_size b);
bool tt_size_lt(tt_size a, tt_size b);
bool tt_size_le(tt_size a, tt_size b);
int64_t tt_size_int(tt_size s);
/* Per thread: the tracer's hook that records guards. */
void tt_sym_set_guard_hook(void (*hook)(void *ud, tt_guard_op op, tt_size a,
                                        tt_size b, bool result),
                           void *ud);

/* ------------------------------------------------------------------ memory */

/* Every allocation the library makes goes through this hook. `align` is a
 * power of two; storage buffers ask for 64. */
typedef struct {
    void *(*alloc)(size_t size, size_t align, void *ud);
    void (*free)(void *p, void *ud);
    void *ud;
} tt_allocator;
void tt_set_allocator(const tt_allocator *a); /* NULL restores the default */

/* Test hooks, per thread: make the n-th allocation request of this thread
 * from now fail (1 = the next one; 0 switches failures off). Cache hits
 * count as requests too, so a sequence of calls fails at the same place
 * whatever the cache holds. */
void tt_debug_fail_alloc(int64_t n);
int64_t tt_debug_alloc_count(void); /* requests made so far */
int64_t tt_live_tensors(void);
int64_t tt_live_storages(void);
/* Returns the caching allocator's free blocks to the system. */
void tt_empty_cache(void);
size_t tt_cached_bytes(void);

/* ----------------------------------------------------------------- tensors */

typedef struct tt_tensor tt_tensor;

/* Shape literal helper: tt_zeros(TT_SHAPE(2, 3), TT_F32). */
#define TT_SHAPE(...)                                                          \
    (int)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),          \
        (const int64_t[]) { __VA_ARGS__ }

tt_tensor *tt_retain(tt_tensor *t);  /* returns t; NULL-safe */
/* The number of references to t (for tools and tests: the tracer uses it
 * to tell which values a function still holds at a graph break). */
int64_t tt_refcount(const tt_tensor *t);
tt_tensor *tt_release(tt_tensor *t); /* drops a reference; returns NULL */

/* Scopes: every tensor created on this thread between begin and end is
 * owned by the scope and released at tt_scope_end, so model code can read
 * like math. tt_keep(t) takes t out of the innermost scope: into the
 * enclosing scope if there is one, otherwise to the caller, who then owns a
 * reference. The scope's reference is the creator's: do not also release a
 * scoped tensor (unless you took an extra reference with tt_retain), just
 * as you would not free memory twice. */
void tt_scope_begin(void);
void tt_scope_end(void);
tt_tensor *tt_keep(tt_tensor *t);
/* For code that manages its references itself (the tracer's compiled
 * plans): tensors created between pause and resume belong to no scope, and
 * tt_scope_adopt(t) hands t's reference to the innermost scope (if one is
 * open), as if t had been created there. Pauses nest. */
void tt_scope_pause(void);
void tt_scope_resume(void);
tt_status tt_scope_adopt(tt_tensor *t);

/* Factories. `sizes` has `ndim` entries (0 <= ndim <= 8, sizes >= 0). */
tt_tensor *tt_empty(int ndim, const int64_t *sizes, tt_dtype dt);
tt_tensor *tt_empty_strided(int ndim, const int64_t *sizes,
                            const int64_t *strides, tt_dtype dt);
tt_tensor *tt_zeros(int ndim, const int64_t *sizes, tt_dtype dt);
tt_tensor *tt_ones(int ndim, const int64_t *sizes, tt_dtype dt);
tt_tensor *tt_full(int ndim, const int64_t *sizes, double value, tt_dtype dt);
tt_tensor *tt_scalar(double value, tt_dtype dt); /* 0-dim */
/* [start, end) by step, as torch.arange: ceil((end - start) / step) values. */
tt_tensor *tt_arange(double start, double end, double step, tt_dtype dt);
tt_tensor *tt_linspace(double start, double end, int64_t steps, tt_dtype dt);
/* Uniform [0, 1) and standard normal, from the global seeded generator:
 * the same seed gives the same values on every run and thread count. */
void tt_manual_seed(uint64_t seed);
tt_tensor *tt_rand(int ndim, const int64_t *sizes, tt_dtype dt);
tt_tensor *tt_randn(int ndim, const int64_t *sizes, tt_dtype dt);
/* Copies `data` (contiguous, dtype dt) into a new tensor. */
tt_tensor *tt_from_data(int ndim, const int64_t *sizes, tt_dtype dt,
                        const void *data);
/* Wraps a caller's buffer without copying. `strides` may be NULL
 * (contiguous). `nbytes` is the buffer size; the view must fit in it.
 * `release(data, ctx)` is called when the last tensor using it goes away
 * (may be NULL). On failure release is NOT called: the buffer stays
 * the caller's. */
tt_tensor *tt_from_buffer(int ndim, const int64_t *sizes,
                          const int64_t *strides, tt_dtype dt, void *data,
                          size_t nbytes, void (*release)(void *data, void *ctx),
                          void *ctx);
/* Same dtype and fake-ness as `like`, new sizes, contiguous. */
tt_tensor *tt_new_empty(const tt_tensor *like, int ndim, const int64_t *sizes);
/* Same sizes and dtype; strides follow `t`'s memory layout when t is dense
 * and non-overlapping (PyTorch's preserve_format), else contiguous. */
tt_tensor *tt_empty_like(const tt_tensor *t);

/* Fake tensors: full metadata, a storage with a size and no bytes. */
tt_tensor *tt_fake_empty(int ndim, const tt_size *sizes, tt_dtype dt);
tt_tensor *tt_fake_empty_strided(int ndim, const tt_size *sizes,
                                 const tt_size *strides, tt_dtype dt);
/* A fake tensor with t's sizes, strides, storage offset and storage size. */
tt_tensor *tt_fake_like(const tt_tensor *t);

/* Queries. Dims may be negative (counted from the end). On a bad tensor or
 * dim, tt_dim_size/tt_dim_stride return -1 with the error set. */
int tt_ndim(const tt_tensor *t);
tt_dtype tt_dtype_of(const tt_tensor *t);
const tt_size *tt_sizes(const tt_tensor *t);
const tt_size *tt_strides(const tt_tensor *t);
tt_size tt_dim_size(const tt_tensor *t, int dim);
tt_size tt_dim_stride(const tt_tensor *t, int dim);
tt_size tt_storage_offset(const tt_tensor *t);
tt_size tt_numel(const tt_tensor *t); /* symbolic when a size is */
size_t tt_storage_nbytes(const tt_tensor *t);
bool tt_is_contiguous(const tt_tensor *t);
bool tt_is_fake(const tt_tensor *t);
bool tt_has_sym_sizes(const tt_tensor *t);
/* True when a and b view the same storage (they alias). */
bool tt_same_storage(const tt_tensor *a, const tt_tensor *b);
/* Bumped by every in-place write to the storage (shared by all views). */
uint64_t tt_version(const tt_tensor *t);
void tt_bump_version(tt_tensor *t);
/* n sizes as "[2, 3]" (or as a tuple "(2, 3)", "(2,)"), symbols by name,
 * into buf; returns buf. */
char *tt_size_list_str(int n, const tt_size *v, bool tuple, char *buf, size_t cap);
/* "[2, 3]" / "[s0, 3]" into buf; returns buf. */
char *tt_shape_str(const tt_tensor *t, char *buf, size_t n);
char *tt_strides_str(const tt_tensor *t, char *buf, size_t n);
/* "f32[2, 3]" or "fake f32[s0, 3]". */
char *tt_describe(const tt_tensor *t, char *buf, size_t n);
/* Prints values (truncated when large) to stdout, for demos and debugging. */
void tt_print(const tt_tensor *t);

/* Reading and writing data. These may break a traced graph, so they are
 * macros that record the caller's line. tt_data returns a pointer to the
 * first element (storage + offset), NULL with TT_EFAKE on a fake tensor. */
#define tt_data(t) tt_data_at((t), TT_HERE)
#define tt_item(t, out) tt_item_at((t), (out), TT_HERE)
#define tt_get(t, out, ...) tt_get_at((t), TT_SHAPE(__VA_ARGS__), (out), TT_HERE)
#define tt_set(t, value, ...) tt_set_at((t), TT_SHAPE(__VA_ARGS__), (value), TT_HERE)
#define tt_to_buffer(t, dst, nbytes) tt_to_buffer_at((t), (dst), (nbytes), TT_HERE)
void *tt_data_at(const tt_tensor *t, tt_srcloc loc);
/* The value of a one-element tensor, converted to double. */
tt_status tt_item_at(const tt_tensor *t, double *out, tt_srcloc loc);
tt_status tt_get_at(const tt_tensor *t, int n, const int64_t *idx, double *out,
                    tt_srcloc loc);
tt_status tt_set_at(tt_tensor *t, int n, const int64_t *idx, double value,
                    tt_srcloc loc);
/* Copies the elements in logical (row-major) order into dst, in t's dtype;
 * nbytes must be numel * dtype size. */
tt_status tt_to_buffer_at(const tt_tensor *t, void *dst, size_t nbytes,
                          tt_srcloc loc);

/* --------------------------------------------------------------- views */
/* Each returns a new tensor sharing t's storage. */
tt_tensor *tt_view(const tt_tensor *t, int ndim, const int64_t *sizes);
tt_tensor *tt_reshape(const tt_tensor *t, int ndim, const int64_t *sizes);
tt_tensor *tt_permute(const tt_tensor *t, int ndim, const int64_t *dims);
tt_tensor *tt_transpose(const tt_tensor *t, int dim0, int dim1);
tt_tensor *tt_t(const tt_tensor *t); /* 2-d transpose (<= 2 dims) */
tt_tensor *tt_narrow(const tt_tensor *t, int dim, int64_t start, int64_t len);
/* Python slicing t[start:end:step] along dim; start/end clamp as Python's. */
tt_tensor *tt_slice(const tt_tensor *t, int dim, int64_t start, int64_t end,
                    int64_t step);
tt_tensor *tt_select(const tt_tensor *t, int dim, int64_t index);
tt_tensor *tt_expand(const tt_tensor *t, int ndim, const int64_t *sizes);
tt_tensor *tt_squeeze(const tt_tensor *t, int dim); /* no-op if size != 1 */
tt_tensor *tt_squeeze_all(const tt_tensor *t);
tt_tensor *tt_unsqueeze(const tt_tensor *t, int dim);
tt_tensor *tt_flatten(const tt_tensor *t, int start_dim, int end_dim);
tt_tensor *tt_as_strided(const tt_tensor *t, int ndim, const int64_t *sizes,
                         const int64_t *strides, int64_t storage_offset);
/* A view of the same data that autograd does not track. */
tt_tensor *tt_detach(const tt_tensor *t);

/* Copies and layout. contiguous() returns t itself (a new reference) when it
 * is already contiguous. copy_ broadcasts src to dst's shape and converts
 * dtype; it bumps dst's version. */
tt_tensor *tt_contiguous(const tt_tensor *t);
tt_tensor *tt_clone(const tt_tensor *t); /* preserves the memory layout */
tt_tensor *tt_to_dtype(const tt_tensor *t, tt_dtype dt);
tt_status tt_copy_(tt_tensor *dst, const tt_tensor *src);
tt_status tt_fill_(tt_tensor *t, double value);

/* --------------------------------------------------- strided iteration */

/* The inner loop of an elementwise kernel: n elements, data[i] points at
 * operand i's first element, strides[i] is its step in BYTES. */
typedef void (*tt_loop_fn)(char **data, const int64_t *strides, int64_t n,
                           void *ctx);
/* Runs `loop` over all elements of `nops` tensors of equal sizes (expand
 * first to broadcast). Dims are coalesced and ordered by operand 0's
 * strides, so the inner loop is as long and as contiguous as the memory
 * allows; large iterations run in parallel. Operand 0 is normally the
 * output. Fails with TT_EFAKE on fake operands. */
tt_status tt_for_each(int nops, tt_tensor *const *ops, tt_loop_fn loop,
                      void *ctx);

/* Runs fn(begin, end, ctx) over [0, n) split into chunks of at least
 * `grain`, in parallel when n > grain. */
void tt_parallel_for(int64_t n, int64_t grain,
                     void (*fn)(int64_t begin, int64_t end, void *ctx),
                     void *ctx);
void tt_set_num_threads(int n);
int tt_get_num_threads(void);


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
} tt_arg;

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
tt_library *tt_library_new(tt_library_kind kind, const char *ns);
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
} tt_custom_op_spec;

tt_op *tt_custom_op_define(tt_library *lib, const tt_custom_op_spec *spec);
/* Registration by op name ("mylib::crop" or "mylib::crop.out").
 * device_type NULL registers the default kernel for every device. */
tt_status tt_register_kernel(tt_library *lib, const char *op,
                             const char *device_type, tt_kernel_fn fn);
tt_status tt_register_fake(tt_library *lib, const char *op, tt_kernel_fn fn);
tt_status tt_register_autograd(tt_library *lib, const char *op,
                               tt_backward_fn backward,
                               tt_setup_context_fn setup_context);

/* Look-up by "ns::name" (the overload-less op) or "ns::name.overload".
 * The handle is stable: keep it and call through it. */
tt_op *tt_op_find(const char *name);
const char *tt_op_name(const tt_op *op); /* "mylib::crop" / "tt::add.Tensor" */
const tt_schema *tt_op_schema(const tt_op *op);
bool tt_op_is_builtin(const tt_op *op);    /* namespace "tt" */
bool tt_op_has_fake(const tt_op *op);
bool tt_op_has_autograd(const tt_op *op);
bool tt_op_has_kernel(const tt_op *op, tt_device d);
/* Visits every defined op in name order. */
void tt_op_foreach(void (*fn)(const tt_op *op, void *ud), void *ud);

/* Calls an op through the dispatcher. args are borrowed, positional in
 * schema order (missing trailing arguments take their defaults). outs
 * receive the results; release them with tt_value_clear. */
tt_status tt_op_call(const tt_op *op, const tt_value *args, int nargs,
                     tt_value *outs, int nouts);
/* For ops returning one tensor: the result, or NULL with the error set. */
tt_tensor *tt_op_call1(const tt_op *op, const tt_value *args, int nargs);
/* tt_call(op, args...) also records the calling line, so a graph break
 * caused by the op (one with no fake kernel, say) names the user's line. */
tt_tensor *tt_op_call1_at(const tt_op *op, const tt_value *args, int nargs,
                          tt_srcloc loc);
#define tt_call(op, ...)                                                       \
    tt_op_call1_at((op), (const tt_value[]){__VA_ARGS__},                       \
                   (int)(sizeof((tt_value[]){__VA_ARGS__}) / sizeof(tt_value)), \
                   TT_HERE)
/* The line of the innermost tt_call running on this thread ({0} if none). */
tt_srcloc tt_callsite(void);

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
    /* Optional: a data read of a real tensor while the mode is on. A
     * non-OK status fails the read (a graph break). */
    tt_status (*data_read)(tt_mode *m, const tt_tensor *t, const char *what,
                           tt_srcloc loc);
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
void tt_fake_mode_end(void);
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

#ifdef __cplusplus
}
#endif

#include "tt_autograd.h"

#endif /* TT_RUNTIME_H */
