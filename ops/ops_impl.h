/* Internal to ops/: shared helpers of the built-in op families and the
 * per-family registration functions. Not installed. */
#ifndef TT_OPS_IMPL_H
#define TT_OPS_IMPL_H

#include "tt_ops.h"
/* Kernels use the runtime's internals (tensor struct, raw copy/fill,
 * stack aliases) on their hot paths, as ATen kernels use TensorImpl. */
#include "tensor_impl.h"

#include <math.h>

/* A hot loop marked CPU_CLONES is built three times, for AVX-512, AVX2
 * and baseline x86-64, and the loader picks the one the CPU runs (the
 * rest of the library stays baseline x86-64). The clones compute the
 * same bits: ISO C mode contracts nothing into FMA, and vectorized sums
 * keep their order (lanes, never a reassociated reduction). The
 * ThreadSanitizer build has one version: its runtime is not up yet when
 * the loader runs the clones' resolvers, which then crash. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) &&                   \
    !defined(__SANITIZE_THREAD__)
#define CPU_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define CPU_CLONES /* clang (the fuzz build), TSan and other targets: one version */
#endif

/* Each family registers its ops into the `tt` library. */
/* Reductions over dims (ops/reduce.c, used by reduce_stats.c too): the
 * dims that `dimv` (None or int[], argument #2 of op `name`) reduces, into
 * mask[TT_MAX_DIMS] (None or [] reduces every dim, as PyTorch's
 * sum(dim=[]) does; a repeated dim is an error); and the result's sizes,
 * reduced dims dropped or kept as 1 with keepdim (returns the rank). */
tt_status tt__reduce_mask(const char *name, const tt_tensor *a, const tt_value *dimv,
                          bool *mask);
int tt__reduced_shape(const tt_tensor *a, const bool *mask, bool keepdim, tt_size *sizes);
tt_status tt__register_binary(tt_library *lib);
tt_status tt__register_unary(tt_library *lib);
tt_status tt__register_where_clamp(tt_library *lib);
tt_status tt__register_reduce(tt_library *lib);
tt_status tt__register_linalg(tt_library *lib);
/* blas.c: gives OpenBLAS tt_get_num_threads() threads; call before a GEMM. */
void tt__blas_sync_threads(void);
/* OpenBLAS's interface/gemm.c runs a GEMM single-threaded, on the calling
 * thread, when m*n*k is at most SMP_THRESHOLD_MIN (65536) *
 * GEMM_MULTITHREAD_THRESHOLD (4): such products may run on our threads. */
#define TT_BLAS_SINGLE_THREAD_MNK (65536.0 * 4)
tt_status tt__register_shape(tt_library *lib);
tt_status tt__register_views(tt_library *lib);
tt_status tt__register_loss(tt_library *lib);
tt_status tt__register_factories(tt_library *lib);
tt_status tt__register_embedding(tt_library *lib);
tt_status tt__register_normalization(tt_library *lib);
tt_status tt__register_attention(tt_library *lib);
tt_status tt__register_optimizer(tt_library *lib);
tt_status tt__register_conv(tt_library *lib);
tt_status tt__register_pooling(tt_library *lib);
tt_status tt__register_pad_upsample(tt_library *lib);
tt_status tt__register_activation(tt_library *lib);
tt_status tt__register_dropout(tt_library *lib);
tt_status tt__register_channel_norm(tt_library *lib);
tt_status tt__register_indexing(tt_library *lib);
tt_status tt__register_advanced_index(tt_library *lib);
tt_status tt__register_sort_scan(tt_library *lib);
tt_status tt__register_stats(tt_library *lib);
tt_status tt__register_random(tt_library *lib);
tt_status tt__register_distance(tt_library *lib);
tt_status tt__register_grid_sample(tt_library *lib);
tt_status tt__register_pool3d(tt_library *lib);

/* A family's rows of the built-in table (runtime/builtin_ops.h), as specs
 * for tt_custom_op_define, each with its id. A family file expands its own
 * rows where its functions are defined (TT__FAMILY_ROWS below). */
typedef struct {
    tt_builtin_id id;
    tt_custom_op_spec spec;
    unsigned flags; /* TT_BUILTIN_* */
} tt__builtin_row;
#define TT__ROW(id, sch, k, fk, bw, setup, data, flags)                        \
    {TT_OP_##id,                                                               \
     {.schema = sch, .kernel = k, .fake = fk, .backward = bw,                  \
      .setup_context = setup, .userdata = (void *)(intptr_t)(data),           \
      .nondifferentiable = ((flags) & TT_BUILTIN_NONDIFF) != 0,                \
      .tags = (flags) >> TT_BUILTIN_TAG_SHIFT},                                \
     (flags)},
#define TT__NO_ROW(...)
/* The rows of one family. Every family's selector below drops its rows; a
 * family file re-points its own at the expander it wants, before the
 * table is expanded:
 *     #undef TT__FAMILY_BINARY
 *     #define TT__FAMILY_BINARY TT__ROW
 *     static const tt__builtin_row rows[] = {TT__FAMILY_ROWS};
 * so each file sees only its own rows, and a new family is one line
 * here and its FAMILY in runtime/builtin_ops.h. */
#define TT__SELECT_ROW(family, ...) TT__FAMILY_##family(__VA_ARGS__)
#define TT__FAMILY_ROWS TT_BUILTIN_OPS(TT__SELECT_ROW)
#define TT__FAMILY_BINARY TT__NO_ROW
#define TT__FAMILY_UNARY TT__NO_ROW
#define TT__FAMILY_WHERE_CLAMP TT__NO_ROW
#define TT__FAMILY_REDUCE TT__NO_ROW
#define TT__FAMILY_LINALG TT__NO_ROW
#define TT__FAMILY_SHAPE TT__NO_ROW
#define TT__FAMILY_VIEWS TT__NO_ROW
#define TT__FAMILY_LOSS TT__NO_ROW
#define TT__FAMILY_FACTORIES TT__NO_ROW
#define TT__FAMILY_EMBED TT__NO_ROW
#define TT__FAMILY_NORMALIZATION TT__NO_ROW
#define TT__FAMILY_ATTENTION TT__NO_ROW
#define TT__FAMILY_OPTIMIZER TT__NO_ROW
#define TT__FAMILY_CONV TT__NO_ROW
#define TT__FAMILY_POOL TT__NO_ROW
#define TT__FAMILY_PAD_UPSAMPLE TT__NO_ROW
#define TT__FAMILY_ACTIVATION TT__NO_ROW
#define TT__FAMILY_DROPOUT TT__NO_ROW
#define TT__FAMILY_CHANNEL_NORM TT__NO_ROW
#define TT__FAMILY_INDEX TT__NO_ROW
#define TT__FAMILY_ADV_INDEX TT__NO_ROW
#define TT__FAMILY_SORT_SCAN TT__NO_ROW
#define TT__FAMILY_STATS TT__NO_ROW
#define TT__FAMILY_RANDOM TT__NO_ROW
#define TT__FAMILY_DISTANCE TT__NO_ROW
#define TT__FAMILY_GRID_SAMPLE TT__NO_ROW
#define TT__FAMILY_POOL3D TT__NO_ROW

/* Defines every row through tt_custom_op_define and records each op under
 * its id; stops at the first failure. */
tt_status tt__define_builtins(tt_library *lib, const tt__builtin_row *rows, int n);
#define TT__DEFINE_ROWS(lib, rows)                                             \
    tt__define_builtins(lib, rows, (int)(sizeof(rows) / sizeof(rows)[0]))

/* A new output: fake when `fake`, else real. strides NULL = contiguous. */
tt_tensor *tt__ops_new(bool fake, int ndim, const tt_size *sizes,
                       const tt_size *strides, tt_dtype dt);

/* The broadcast shape of n tensors, or TT_ESHAPE naming the op and the
 * argument: "tt::add: argument 'other' (#2): shape [4] is not broadcastable
 * to [2, 3]". names[i] is tensor i's argument name, argno[i] its 1-based
 * position. */
tt_status tt__broadcast(const char *op, int n, const tt_tensor *const *ts,
                        const char *const *names, const int *argno, int *ndim,
                        tt_size *sizes);

/* A stack-only view of t broadcast to (ndim, sizes): same storage and
 * dtype, stride 0 where broadcast. Never retained, released or counted.
 * The shape must be a valid broadcast target (checked by tt__broadcast). */
void tt__broadcast_alias(tt_tensor *out, const tt_tensor *t, int ndim,
                         const tt_size *sizes);

/* Output strides of an elementwise op over inputs broadcast to (ndim,
 * sizes), as PyTorch's TensorIterator chooses them: contiguous when the
 * inputs are, otherwise following the inputs' memory layout (a permuted
 * input gives a permuted output). */
void tt__elementwise_strides(int n, const tt_tensor *const *ins, int ndim,
                             const tt_size *sizes, tt_size *strides);

/* PyTorch's result_type: dimensioned tensors decide the dtype; 0-dim
 * tensors and Python-number scalars only raise its category (bool <
 * integer < float). A scalar has kind TT_V_INT/FLOAT/BOOL in scalars[]. */
tt_dtype tt__result_type(int n, const tt_tensor *const *ts, int nscalars,
                         const tt_value *scalars);

/* Wraps a dim for `op`'s argument `arg`: -1 and an error when out of
 * range ("tt::sum: argument 'dim' (#2): dimension out of range (expected
 * to be in range of [-2, 1], but got 5)"). */
int tt__op_dim(const char *op, const char *arg, int argno, int64_t dim, int ndim);

/* For backward rules: stores the gradient `g` (a new reference, or NULL
 * from a failed op) for input slot `slot`, or drops it when that input
 * needs no gradient. A NULL g is the error its op set. */
static inline tt_status tt__put_grad(tt_autograd_ctx *ctx, tt_tensor **gi, int slot,
                                     tt_tensor *g)
{
    if (!tt_ctx_needs_input_grad(ctx, slot)) {
        tt_release(g);
        return TT_OK;
    }
    gi[slot] = g;
    return g ? TT_OK : tt_errcode();
}

/* True when any of the tensors is fake. */
bool tt__any_fake(int n, const tt_tensor *const *ts);

/* PyTorch's suggest_memory_format for a 4-d tensor
 * (is_channels_last_strides_2d): true when the strides order C fastest,
 * then W, H, N, with its tie-breaks for size-1 dims. */
bool tt__channels_last_like(const tt_tensor *t);
/* Channels-last strides of a new tensor of nd (4 or 5) sizes: C fastest,
 * then the spatial dims from the last, then N (size-1 dims take no step). */
void tt__channels_last_strides(int nd, const tt_size *sizes, tt_size *strides);
/* The strides of a new [N, C, H, W] (or other rank) result in the layout
 * PyTorch's CPU pooling, padding and upsampling give it: channels last
 * when nd is 4 and `like` is channels-last-like (PyTorch's
 * get_channels_last_strides_2d), else contiguous. */
void tt__nchw_out_strides(const tt_tensor *like, int nd, const tt_size *sizes, tt_size *strides);

/* A number as a Scalar value: a whole number travels as an int, so an
 * integer tensor stays one (x * 2 is integral, x * 2.5 is not). */
static inline tt_value scalar_value(double v)
{
    return v == floor(v) && fabs(v) < 9e15 ? tt_v_int((int64_t)v) : tt_v_float(v);
}

#endif
