/* Internal: the tensor and storage structs and the helpers the runtime's
 * files share. Not installed; code above the runtime uses tt_runtime.h. */
#ifndef TT_TENSOR_IMPL_H
#define TT_TENSOR_IMPL_H

#include "tt_runtime.h"
#include "builtin_ops.h"
#include "error_impl.h"

#include <stdarg.h>
#include <stdatomic.h>

/* Refcounted bytes. A fake storage has nbytes but data == NULL. */
typedef struct tt_storage {
    atomic_int_fast64_t refcnt;
    atomic_uint_fast64_t version; /* bumped by in-place writes via any view */
    size_t nbytes;                /* bytes the tensors may address */
    size_t capacity;              /* bytes actually allocated (cache class) */
    void *data;
    bool fake;
    /* A fake storage whose extent is symbolic: nbytes (0) is no bound, so
     * views of it are not bounds-checked against it. */
    bool sym_extent;
    bool from_cache; /* data came from the caching allocator */
    void (*release)(void *data, void *ctx); /* borrowed buffers */
    void *release_ctx;
    /* The version after the last in-place write autograd recorded into
     * this storage, and the op (a built-in's static name, or NULL): a
     * tensor whose history is older shares memory with the written one
     * (a view or its base) and its history no longer matches its value
     * (runtime/autograd.c refuses to differentiate through it). */
    uint64_t ag_write_version;
    const char *ag_write_op;
} tt_storage;

struct tt_autograd_meta; /* runtime/autograd.c */

enum {
    TT_TF_REQUIRES_GRAD = 1u << 0,
    TT_TF_HAS_SYM = 1u << 1,   /* some size/stride/offset is symbolic */
    TT_TF_CONTIGUOUS = 1u << 2, /* cached: row-major contiguous */
    TT_TF_KEPT = 1u << 3,       /* tt_keep'd: survives its scope's end */
};

struct tt_tensor {
    atomic_int_fast64_t refcnt;
    tt_storage *storage;
    int8_t ndim;
    uint8_t dtype;
    uint16_t flags;
    int32_t scope_slot; /* index in the thread's scope stack, or -1 */
    tt_size offset;     /* in elements */
    tt_size sizes[TT_MAX_DIMS];
    tt_size strides[TT_MAX_DIMS]; /* in elements */
    struct tt_autograd_meta *autograd; /* NULL for tensors grad never saw */
    /* A slot a dispatch mode (the tracer) uses to tag tensors it made:
     * mode_key identifies the mode instance, mode_val its node. */
    uint64_t mode_key;
    int64_t mode_val;
    /* How many of refcnt are the library's own holds (tt__hold: a traced
     * graph's values), apart from the references handed to users: a
     * release that leaves only holds besides the scope's reference is
     * the release of that reference (tt_release). */
    atomic_int held;
};

/* ---- released tensors (tensor.c, alloc.c)
 * The last tt_release of a tensor poisons its reference count (no live
 * tensor has a count below 1) and points its storage at a static empty
 * fake storage, and the struct waits in a per-thread FIFO quarantine
 * (alloc.c) before its memory can be reused. So a use after release or a
 * double release, in an ordinary build, is an error naming the call for
 * as long as the struct is held back; past that, AddressSanitizer builds
 * catch it (the README's debugging section). */
#define TT_REFCNT_RELEASED ((int_fast64_t)-0x7e1ea5ed)
static inline bool tt__is_released(const tt_tensor *t)
{
    return __builtin_expect(atomic_load_explicit(&((tt_tensor *)t)->refcnt,
                                                 memory_order_relaxed) <= 0, 0);
}
/* The library's own hold on t (a graph's value): a reference that user
 * code never sees, so it does not change what a user's tt_release means
 * for t's scope. tt__hold_own makes the caller's new reference a hold. */
void tt__hold(tt_tensor *t);
void tt__hold_own(tt_tensor *t);
void tt__unhold(tt_tensor *t);
/* Sets "fn: argument 'arg' was already released ..." and returns TT_EINVAL. */
tt_status tt__released_error(const char *fn, const char *arg);
/* The same with the argument already named ("tt::add: argument 'other'
 * (#2)"); `release`: the call was a release (a double release). */
tt_status tt__released_error_at(const char *what, bool release);
/* Hands a released tensor struct to the thread's quarantine; the struct
 * it pushes out goes to tt__free. */
void tt__quarantine_tensor(tt_tensor *t);

/* ---- errors (error.c) */
tt_status tt__errorv(tt_status code, const char *fmt, va_list ap);
/* Fails naming `fn` and `arg` when t is NULL (keeping the first cause) or
 * was already released. */
#define TT_CHECK_TENSOR(fn, arg, t)                                            \
    ((t) ? (tt__is_released(t) ? tt__released_error((fn), (arg)) : TT_OK)     \
         : tt__null_arg_error("%s: argument '%s' expects a tensor, got NULL",  \
                              (fn), (arg)))

/* ---- allocation (alloc.c) */
/* Small allocations of the library's own structs. Counted, fail-injectable. */
void *tt__malloc(size_t n);
void *tt__calloc(size_t n, size_t size);
void *tt__realloc(void *p, size_t old, size_t n); /* p may be NULL */
void tt__free(void *p);
char *tt__strdup(const char *s);
/* A region of small allocations freed all at once (a graph's node
 * arrays): pieces are laid out one after another in the order they are
 * made, so a walk over them in that order streams through memory, and
 * making one costs a pointer bump. Zero-initialise; each piece counts as
 * one allocation request; pieces are 16-byte aligned and never freed one
 * by one. Under AddressSanitizer each piece is a block of its own, so
 * overruns and uses after tt__arena_free are still caught. */
typedef struct tt__arena_chunk tt__arena_chunk;
typedef struct {
    tt__arena_chunk *chunk; /* the newest; each links to the one before */
} tt__arena;
void *tt__arena_alloc(tt__arena *a, size_t n);
void tt__arena_free(tt__arena *a);
/* Storage bytes from the caching allocator (64-byte aligned). */
void *tt__alloc_storage(size_t nbytes, size_t *capacity);
void tt__free_storage(void *p, size_t capacity);
/* Counts one allocation request; false (with TT_ENOMEM set) when the test
 * hook says this one fails. */
bool tt__alloc_request(size_t n);
void tt__count_tensor(int delta);
/* bytes: the storage's own allocation (0 for fake or borrowed ones). */
void tt__count_storage(int delta, int64_t bytes);

/* ---- storage and tensors (tensor.c) */
tt_storage *tt__storage_new(size_t nbytes, bool fake);
void tt__storage_release(tt_storage *s);
/* A tensor struct over `s` (which it retains) with the given metadata. */
tt_tensor *tt__tensor_new(tt_storage *s, tt_dtype dt, int ndim,
                          const tt_size *sizes, const tt_size *strides,
                          tt_size offset);
/* A new tensor viewing t's storage with other metadata (a view). */
tt_tensor *tt__make_view(const tt_tensor *t, int ndim, const tt_size *sizes,
                         const tt_size *strides, tt_size offset);
void tt__refresh_flags(tt_tensor *t);
/* Contiguous strides for sizes; returns false on overflow. */
bool tt__contiguous_strides(int ndim, const tt_size *sizes, tt_size *strides);
/* Validates sizes (count and values) for `fn`. numel_out may be NULL. */
tt_status tt__check_sizes(const char *fn, int ndim, const int64_t *sizes,
                          int64_t *numel_out);
/* Bytes spanned by (sizes, strides, offset): 1 + max index, times elem
 * size; 0 when any size is 0. False on overflow. */
bool tt__span_bytes(int ndim, const tt_size *sizes, const tt_size *strides,
                    tt_size offset, size_t elem, size_t *out);
int tt__wrap_dim(const char *fn, int dim, int ndim); /* -1 + error if bad */
tt_tensor *tt__empty_impl(int ndim, const tt_size *sizes,
                          const tt_size *strides, tt_dtype dt, bool fake);
/* tt__empty_impl with the calling function's name in its errors. */
tt_tensor *tt__empty_named(const char *fn, int ndim, const tt_size *sizes,
                           const tt_size *strides, tt_dtype dt, bool fake);
tt_tensor *tt__new_contiguous(const tt_tensor *like, tt_dtype dt);
tt_status tt__arange_numel(double start, double end, double step, int64_t *out);
/* Strides for a new tensor laid out like t (preserve_format): t's own when
 * t is non-overlapping and dense, else dense in the order of t's strides. */
void tt__strides_like(const tt_tensor *t, tt_size *out);
/* Dense strides for (ndim, sizes) with the dims ordered as the n stride
 * lists order them (PyTorch's infer_dense_strides, and TensorIterator's
 * output layout over several operands): the first list decides, a stride
 * of 0 or a tie defers to the next, row-major order where none decides. */
void tt__dense_strides_in_order(int n, const tt_size *const *strides, int ndim,
                                const tt_size *sizes, tt_size *out);
bool tt__is_non_overlapping_and_dense(const tt_tensor *t);
/* Registers a new tensor with the thread's innermost scope, if any. */
bool tt__scope_add(tt_tensor *t); /* false: no memory */
/* (The library's own bookkeeping — autograd engine, dispatcher, tracer —
 * uses tt_scope_pause/tt_scope_resume, public in tt_runtime.h, for the
 * references it manages.) */
/* Drops a reference the library took with tt_retain. Unlike tt_release it
 * never gives up a scope's reference early. */
void tt__unref(tt_tensor *t);
/* tt_dtype_size and tt_dtype_is_float for the library's hot paths,
 * inlined (a 1-element eager op asked them six times through a call);
 * the public functions are these. */
static inline size_t tt__dtype_size(tt_dtype dt)
{
    static const unsigned char sizes[] = {
#define TT_X_SIZE(e, name, ctype, size, isf) [e] = size,
        TT_DTYPE_LIST(TT_X_SIZE)
#undef TT_X_SIZE
    };
    return (unsigned)dt < TT_DTYPE_COUNT ? sizes[dt] : 0;
}
static inline bool tt__dtype_is_float(tt_dtype dt)
{
    static const bool is_float[] = {
#define TT_X_FLOAT(e, name, ctype, size, isf) [e] = isf,
        TT_DTYPE_LIST(TT_X_FLOAT)
#undef TT_X_FLOAT
    };
    return (unsigned)dt < TT_DTYPE_COUNT && is_float[dt];
}

/* Data pointer without the graph-break hook, for kernels (the caller has
 * already checked the tensor is real). */
static inline char *tt__ptr(const tt_tensor *t)
{
    return (char *)t->storage->data +
           (size_t)t->offset * tt__dtype_size((tt_dtype)t->dtype);
}

/* The number of elements of a tensor whose sizes are all concrete (no
 * TT_TF_HAS_SYM), as tt_numel gives it without its checks. Only an empty
 * tensor's product can overflow (factories refuse any other), so an
 * overflow means 0. */
static inline int64_t tt__numel_concrete(const tt_tensor *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++)
        if (__builtin_mul_overflow(n, t->sizes[i], &n))
            return 0;
    return n;
}

/* ---- memory plans (plan_memory.c), for compiled plans' replays */
typedef struct tt_mem_plan tt_mem_plan;
tt_mem_plan *tt__mem_plan_new(void); /* NULL when out of memory (no error set) */
void tt__mem_plan_free(tt_mem_plan *mp);
/* Brackets one run on this thread: the first run's storage requests are
 * recorded and placed in one block at its end; later runs are served from
 * the block. False (the run uses the allocator as usual, end not needed)
 * when the plan is off, in use, or another plan runs on this thread. */
bool tt__mem_plan_begin(tt_mem_plan *mp);
void tt__mem_plan_end(tt_mem_plan *mp);
/* The block's size once placed, else 0. */
size_t tt__mem_plan_bytes(const tt_mem_plan *mp);
/* Once placed: the requests the block serves (outputs escape it) and the
 * bytes they would take each in its own place. */
void tt__mem_plan_sharing(const tt_mem_plan *mp, int64_t *buffers, int64_t *unshared);

/* ---- iteration (iter.c) */
/* tt_parallel_for for items that take about equally long but threads
 * that may not (one started late, or shares its core): threads take
 * shrinking runs of items (at least min_take) as they finish, instead of
 * one equal chunk each, so none waits long for another. fn must not care
 * how [0, n) is cut. */
void tt__parallel_for_guided(int64_t n, int64_t grain, int64_t min_take,
                             void (*fn)(int64_t begin, int64_t end, void *ctx), void *ctx);
/* tt_for_each knowing that operands nout.. are only read: a transposed
 * one is then read tile by tile through a row-major buffer, so the loop
 * runs with unit steps (the kernels' vectorized path). */
tt_status tt__for_each_in(int nops, int nout, tt_tensor *const *ops, tt_loop_fn loop, void *ctx);
/* The count tt_set_num_threads set, 0 when it was never set (or reset). */
int tt__num_threads_set(void);
/* dst = src with broadcasting and dtype conversion; no dispatch, no
 * version bump. */
tt_status tt__copy_raw(tt_tensor *dst, const tt_tensor *src);
/* PyTorch's overlap rules for writing into dst (at::assert_no_internal_overlap,
 * at::assert_no_partial_overlap): with src NULL, dst may not have elements
 * sharing memory (an expanded tensor); with src, src may not overlap dst
 * other than exactly (the same elements in the same order). An operand
 * that is not dense and non-overlapping is "too hard" to decide, as in
 * PyTorch, and passes. TT_EINVAL "fn: unsupported operation: ..." */
tt_status tt__check_write(const char *fn, const tt_tensor *dst, const tt_tensor *src);
/* Writes `value` into every element of t; no dispatch, no version bump. */
tt_status tt__fill_raw(tt_tensor *t, double value);

/* ---- the direct paths of the public views, copies and factories
 * (tensor_views.c, copy.c, factory.c). The public functions (ops/
 * view_front.c, ops/factory_front.c) check their arguments, call their op
 * when a mode, fake mode or autograd needs it (tt__needs_dispatch,
 * tt__factory_needs_dispatch), and else call these; the ops' kernels
 * (ops/view_ops.c, ops/factories.c) call them directly, and the runtime's
 * own code calls them where no mode may see the call. The tensor
 * arguments are live tensors (checked by the caller); errors name the
 * public function ("tt_view: ..."). */
tt_tensor *tt__view_raw(const tt_tensor *t, int ndim, const int64_t *sizes);
tt_tensor *tt__reshape_raw(const tt_tensor *t, int ndim, const int64_t *sizes);
tt_tensor *tt__permute_raw(const tt_tensor *t, int ndim, const int64_t *dims);
tt_tensor *tt__transpose_raw(const tt_tensor *t, int dim0, int dim1);
tt_tensor *tt__t_raw(const tt_tensor *t);
tt_tensor *tt__slice_raw(const tt_tensor *t, int dim, int64_t start, int64_t end,
                         int64_t step);
/* tt_slice's reading of a start, end or step: a value in the symbol
 * handle range that the shape environment does not know is a plain (very
 * negative) integer, made the least one below every size (so that a trace
 * records the integer, not a symbol). */
tt_size tt__view_int_arg(tt_size v);
tt_tensor *tt__narrow_raw(const tt_tensor *t, int dim, int64_t start, int64_t len);
tt_tensor *tt__select_raw(const tt_tensor *t, int dim, int64_t index);
tt_tensor *tt__expand_raw(const tt_tensor *t, int ndim, const int64_t *sizes);
tt_tensor *tt__squeeze_raw(const tt_tensor *t, int dim);
tt_tensor *tt__squeeze_all_raw(const tt_tensor *t);
tt_tensor *tt__unsqueeze_raw(const tt_tensor *t, int dim);
tt_tensor *tt__flatten_raw(const tt_tensor *t, int start_dim, int end_dim);
/* tt_as_strided's checks of its sizes, strides and offset, which run
 * before dispatch too (a bad value is refused by tt_as_strided's name
 * whatever mode runs it); tt__as_strided_raw makes them as well. */
tt_status tt__as_strided_check(int ndim, const int64_t *sizes, const int64_t *strides,
                               int64_t storage_offset);
tt_tensor *tt__as_strided_raw(const tt_tensor *t, int ndim, const int64_t *sizes,
                              const int64_t *strides, int64_t storage_offset);
tt_tensor *tt__detach_raw(const tt_tensor *t);
/* tt_copy_ and tt_fill_ without dispatch: tt__copy_raw / tt__fill_raw on
 * real tensors (a fake destination is only checked), then the version
 * bump. */
tt_status tt__copy_direct(tt_tensor *dst, const tt_tensor *src);
tt_status tt__fill_direct(tt_tensor *t, double value);
tt_tensor *tt__contiguous_raw(const tt_tensor *t);
tt_tensor *tt__clone_raw(const tt_tensor *t);
tt_tensor *tt__to_dtype_raw(const tt_tensor *t, tt_dtype dt);
/* Real tensors only (the fake ones are tt__empty_impl's). tt__full_raw
 * names `fn` (tt_full, tt_zeros, tt_ones, tt_scalar) in its errors;
 * tt__random_raw is tt_randn when `normal`, else tt_rand. */
tt_tensor *tt__full_raw(const char *fn, int ndim, const int64_t *sizes, double value,
                        tt_dtype dt);
tt_tensor *tt__arange_raw(double start, double end, double step, tt_dtype dt);
tt_tensor *tt__linspace_raw(double start, double end, int64_t steps, tt_dtype dt);
tt_tensor *tt__random_raw(int ndim, const int64_t *sizes, tt_dtype dt, bool normal);

/* ---- symbolic sizes (shape_env.c) */
/* a*b when it folds (without overflow) or its expression exists already,
 * else -1 (equal to no size or stride). For comparisons such as contiguity
 * checks, which must not allocate: an expression nobody made cannot be a
 * tensor's stride. */
tt_size tt__sym_mul_find(tt_size a, tt_size b);
/* True for a value that is neither a plain size (|v| < TT_SIZE_LIMIT;
 * negative ones get the caller's own message) nor obviously fine: a
 * symbolic handle (to validate) or a value beyond the limit. One compare,
 * so concrete sizes pay nothing more. */
static inline bool tt__size_odd(tt_size v)
{
    return (uint64_t)v + (uint64_t)TT_SIZE_LIMIT >= 2 * (uint64_t)TT_SIZE_LIMIT;
}
bool tt__sym_valid(tt_size s); /* a live handle of the environment */
/* TT_EINVAL naming fn, the argument (index -1: a scalar argument) and that
 * C arithmetic on a symbolic size is the likely cause, unless s is a
 * plain value or a live handle. tt__sizes_check checks n values. */
tt_status tt__size_check(const char *fn, const char *arg, int index, tt_size s);
tt_status tt__size_refuse(const char *fn, const char *arg, int index, tt_size s);
tt_status tt__sizes_check(const char *fn, const char *arg, int n, const tt_size *v);
/* A new unbacked symbol u<n> known to lie in [lo, hi]; 0 on failure. */
tt_size tt__sym_new_unbacked(int64_t lo, int64_t hi);
/* The thread's undecided hook, so a nested trace can restore it. */
void tt__sym_get_undecided_hook(void (**hook)(void *ud, const char *expr, tt_srcloc loc),
                                void **ud);

/* Size comparisons for code that may run on symbolic sizes (meta
 * functions, views, broadcasting). Two concrete sizes compare as plain
 * integers, inline, so eager code pays nothing; otherwise the comparison
 * goes through tt_size_eq/lt/le, which decide on the example values and
 * record a guard, as PyTorch's SymInt comparisons do. Never compare a
 * size that may be symbolic with C's == or <: a handle is no number. */
static inline bool tt__sz_concrete2(tt_size a, tt_size b)
{
    return !tt_size_is_sym(a) && !tt_size_is_sym(b);
}
static inline bool tt__sz_eq(tt_size a, tt_size b)
{
    return tt__sz_concrete2(a, b) ? a == b : tt_size_eq(a, b);
}
static inline bool tt__sz_ne(tt_size a, tt_size b) { return !tt__sz_eq(a, b); }
static inline bool tt__sz_lt(tt_size a, tt_size b)
{
    return tt__sz_concrete2(a, b) ? a < b : tt_size_lt(a, b);
}
static inline bool tt__sz_le(tt_size a, tt_size b)
{
    return tt__sz_concrete2(a, b) ? a <= b : tt_size_le(a, b);
}
static inline bool tt__sz_gt(tt_size a, tt_size b) { return tt__sz_lt(b, a); }
static inline bool tt__sz_ge(tt_size a, tt_size b) { return tt__sz_le(b, a); }
/* s == 1, for broadcasting. A size with no example value (an unbacked,
 * data-dependent one) is taken to be no 1 without a guard, as PyTorch's
 * guard_size_oblivious does: broadcasting it then requires the other side
 * to match it. */
static inline bool tt__sz_is_one(tt_size s)
{
    if (!tt_size_is_sym(s))
        return s == 1;
    return tt_sym_hint(s) >= 0 && tt_size_eq(s, 1);
}

/* a > b where only a layout hangs on the answer (which of two dims with
 * equal strides goes first): a size with no example value is taken to be
 * at least 2 against a constant 0 or 1, without a guard, as PyTorch's
 * guard_size_oblivious in its output-layout rule (a dim of size 0 or 1
 * has no stride that matters, so either order gives the same tensor). */
static inline bool tt__sz_gt_oblivious(tt_size a, tt_size b)
{
    if (tt_size_is_sym(a) && tt_sym_hint(a) < 0 && !tt_size_is_sym(b) && b <= 1)
        return true;
    if (tt_size_is_sym(b) && tt_sym_hint(b) < 0 && !tt_size_is_sym(a) && a <= 1)
        return false;
    return tt__sz_gt(a, b);
}

/* ---- dtypes (dtype.c) */
double tt__load(const void *p, tt_dtype dt);
void tt__store(void *p, tt_dtype dt, double v);

/* ---- runtime functions that are also ops (dispatch.c) */
/* True when a call on these tensors must go through the dispatcher: a mode
 * or fake mode is on, or autograd would record it (the rule: dispatch.c,
 * "Skipping the dispatcher"). The public views and copies (ops/) check
 * this and then call their op; inside kernels it is false. Defined by the
 * op machinery: code of the tensor core never asks it. */
bool tt__needs_dispatch(int n, const tt_tensor *const *ts);
#define TT_ARGS(...)                                                           \
    (const tt_value[]){__VA_ARGS__},                                           \
        (int)(sizeof((const tt_value[]){__VA_ARGS__}) / sizeof(tt_value))
/* Factories go through their ops under a mode (to be recorded) or in fake
 * mode (to make fake tensors). */
bool tt__factory_needs_dispatch(void);
static inline bool tt__needs_dispatch1(const tt_tensor *t)
{
    return tt__needs_dispatch(1, &t);
}

/* " in tt_sin, called from model.c:12 in mlp": the user's innermost call
 * on this thread (callsite.c), for errors raised far below it (out of
 * memory); "" outside any call made through the call-site macros. */
const char *tt__callsite_text(char *buf, size_t n);

/* ---- hooks a higher layer installs
 * Defined here (tensor.c) and set by the op machinery, so the tensor core
 * calls up only through them (tests/check_layers.py). Each is set to one
 * function, the same on every thread, before anything needs it; loads
 * and stores are atomic, so setting it again from another thread is no
 * race. */
/* Called on every data read; while a mode is active the tracer turns it
 * into a graph break. For a fake tensor it may set *stand_in to memory
 * standing in for the tensor's first element. Set by tt_mode_push
 * (dispatch.c): with no mode ever pushed there is nothing to hear it. */
typedef tt_status (*tt__data_read_fn)(const tt_tensor *t, const char *what, tt_srcloc loc,
                                      void **stand_in);
extern _Atomic(tt__data_read_fn) tt__data_read_hook;
/* Frees a tensor's autograd record when the tensor goes. Set by
 * autograd.c when it makes the first record, so a tensor that has one
 * finds it set. */
typedef void (*tt__autograd_free_fn)(struct tt_autograd_meta *m);
extern _Atomic(tt__autograd_free_fn) tt__autograd_meta_free_hook;

#endif
