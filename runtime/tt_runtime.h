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
/* Everything declared here is the library's public API: exported from
 * the shared library, which builds with -fvisibility=hidden so that its
 * internal (tt__) functions are not. */
#pragma GCC visibility push(default)

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
    X(TT_EINTERNAL, "internal error")                                          \
    X(TT_EEXPECT, "expectation not met")

typedef enum {
#define TT_X_ENUM(code, text) code,
    TT_STATUS_LIST(TT_X_ENUM)
#undef TT_X_ENUM
    TT_STATUS_COUNT
} tt_status;

/* The last error of the calling thread. The thread holds it until the
 * next error or tt_clear_error(); reading it changes nothing. While it is
 * held, a call given a NULL tensor reports it as the cause (the first
 * cause wins: tt_softmax(tt_linear(x, w_bad, b), 1) fails with
 * tt_linear's error, "(then tt::softmax: ...)" added), so code that
 * handles an error and goes on acknowledges it with tt_clear_error(). */
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
/* Concrete sizes, strides and offsets are below 2^48 (PyTorch allows up
 * to 2^63; we give the range up so that a value from C arithmetic on a
 * handle -- `H * 2`, `H / 2`, `H - W` -- cannot pass for a size). Handles
 * are self-checking: `H + 1`, `H - 2`, `H * 2` is never another handle. A
 * value that is neither a size nor a live handle is refused wherever a
 * size is taken, naming tt_sym_add/sub/mul/floordiv, which is how C code
 * computes with sizes that may be symbolic. */
#define TT_SIZE_LIMIT ((int64_t)1 << 48)

/* A new symbol. `prefix` is "s" for an input size (backed: `hint` is the
 * example value) or "u" for a data-dependent size (unbacked: hint < 0). Its
 * name is the prefix and a per-prefix counter: s0, s1, u0... */
tt_size tt_sym_new(const char *prefix, int64_t hint);
/* Arithmetic on sizes: concrete operands fold to a concrete result,
 * otherwise an expression handle is returned (hash-consed, so equal
 * expressions have equal handles). floordiv and mod round as Python does
 * (toward minus infinity). Errors return -1 with TT_EINVAL set: a result
 * out of the range of sizes (|value| >= 2^62), a division by zero, an
 * operand that is no handle of the environment (made before tt_sym_reset).
 * tt_sym_new refuses a prefix that is not one lowercase letter (returns 0). */
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
 * sizes through these, never with ==, < or <= (a symbolic size is a
 * handle, not a number). On backed symbols (s0: an input's size) they
 * decide on the example values and record the outcome as a guard (the
 * compiled graph is reused only for inputs where it holds). tt_size_int
 * specializes a size to its example value (guarding on it).
 *
 * A data-dependent size (u0, from tt_frame_new_dynamic_size) has no
 * example value. A comparison its bounds (and the range of input sizes,
 * >= 2) decide needs no guard; any other is never answered silently: as
 * PyTorch's "Could not guard on data-dependent expression", it is a graph
 * break at the caller's line -- TT_EGRAPHBREAK naming the expression under
 * tt_compile(.fullgraph = true); without fullgraph tt_compile runs the
 * function eagerly, on real values. (Outside a trace: TT_EINVAL.) The
 * answer given then is false (tt_size_int: -1), with the error set.
 * They are macros recording the caller's line; the functions of the same
 * names (callable through pointers, or as `(tt_size_lt)(a, b)`) do the
 * same with no line. */
typedef enum { TT_GUARD_EQ, TT_GUARD_LT, TT_GUARD_LE } tt_guard_op;
bool tt_size_eq(tt_size a, tt_size b);
bool tt_size_lt(tt_size a, tt_size b);
bool tt_size_le(tt_size a, tt_size b);
int64_t tt_size_int(tt_size s);
bool tt_size_eq_at(tt_size a, tt_size b, tt_srcloc loc);
bool tt_size_lt_at(tt_size a, tt_size b, tt_srcloc loc);
bool tt_size_le_at(tt_size a, tt_size b, tt_srcloc loc);
int64_t tt_size_int_at(tt_size s, tt_srcloc loc);
#define tt_size_eq(a, b) tt_size_eq_at((a), (b), TT_HERE)
#define tt_size_lt(a, b) tt_size_lt_at((a), (b), TT_HERE)
#define tt_size_le(a, b) tt_size_le_at((a), (b), TT_HERE)
#define tt_size_int(s) tt_size_int_at((s), TT_HERE)
/* Per thread: the tracer's hook that records guards. */
void tt_sym_set_guard_hook(void (*hook)(void *ud, tt_guard_op op, tt_size a,
                                        tt_size b, bool result),
                           void *ud);
/* Per thread: the tracer's hook for a comparison that cannot be decided
 * (a data-dependent size): `expr` is its text ("u0 < 3"), `loc` the
 * caller's line. It sets the error; without a hook TT_EINVAL is set. */
void tt_sym_set_undecided_hook(void (*hook)(void *ud, const char *expr, tt_srcloc loc),
                               void *ud);

/* ------------------------------------------------------------------ memory */

/* Every allocation the library makes goes through this hook. `align` is a
 * power of two; storage buffers ask for 64. */
typedef struct {
    void *(*alloc)(size_t size, size_t align, void *ud);
    void (*free)(void *p, void *ud);
    void *ud;
} tt_allocator;
/* NULL restores the default. The allocator cannot change while a tensor
 * holds storage it made (TT_EINVAL: release them first); the library's
 * own small blocks go back to the allocator that made them. */
tt_status tt_set_allocator(const tt_allocator *a);

/* Test hooks, per thread: make the n-th allocation request of this thread
 * from now fail (1 = the next one; 0 switches failures off). Cache hits
 * count as requests too, so a sequence of calls fails at the same place
 * whatever the cache holds. */
void tt_debug_fail_alloc(int64_t n);
int64_t tt_debug_alloc_count(void); /* requests made so far */
/* Tensors and storages alive in the process, over all threads: exact
 * whenever no other thread is making or releasing tensors at the same
 * time (each thread counts its own; these sum them). */
int64_t tt_live_tensors(void);
int64_t tt_live_storages(void);
/* Bytes of the storage those tensors own (not fake, not borrowed). */
int64_t tt_live_bytes(void);
/* Freed memory waits for reuse instead of going back to the system: the
 * shared cache of tensor storage keeps up to 2 GiB, and each thread keeps
 * the library's own blocks it freed (tensor structs, graph nodes) up to
 * 256 MiB until it exits, so a large trace's memory serves the next one.
 * tt_empty_cache returns the shared cache and the calling thread's blocks
 * to the system; a compiled plan does the same once, when it places its
 * memory plan after its first call. */
void tt_empty_cache(void);
size_t tt_cached_bytes(void);

/* ----------------------------------------------------------------- tensors */

typedef struct tt_tensor tt_tensor;

/* Shape literal helper: tt_zeros(TT_SHAPE(2, 3), TT_F32). */
#define TT_SHAPE(...)                                                          \
    (int)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),          \
        (const int64_t[]) { __VA_ARGS__ }

tt_tensor *tt_retain(tt_tensor *t);  /* returns t; NULL-safe */
tt_tensor *tt_release(tt_tensor *t); /* drops a reference; returns NULL */

/* Scopes: every tensor created on this thread between begin and end is
 * owned by the scope and released at tt_scope_end, so model code can read
 * like math. tt_keep(t) takes t out of the innermost scope: into the
 * enclosing scope if there is one, otherwise to the caller, who then owns a
 * reference. The scope's reference is the creator's: releasing a scoped
 * tensor early with tt_release gives that reference up and takes the tensor
 * out of its scope (the same whether the code runs eagerly or is traced,
 * where the graph also holds what it recorded); releasing it once more is
 * a double release, as freeing memory twice is. */
void tt_scope_begin(void);
tt_status tt_scope_end(void); /* TT_EINVAL without a matching begin */
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
 * first element (storage + offset), NULL with TT_EFAKE on a fake tensor.
 * Inside a trace a read is a graph break and never a crash: with real
 * inputs the real data is returned; for a fake tensor, zeroed memory that
 * is safe to read and write for the tensor's extent (freed when the trace
 * ends), with TT_EGRAPHBREAK as the error (and the status of tt_item,
 * tt_get and tt_to_buffer, which still write the value they read). */
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

/* Copies and layout. contiguous() returns a new tensor viewing t's data
 * when t is already contiguous (never t itself, so in a scope the scope
 * owns it, as any result). copy_ broadcasts src to dst's shape and converts
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


#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif

#include "tt_dispatch.h"
#include "tt_autograd.h"

#endif /* TT_RUNTIME_H */
