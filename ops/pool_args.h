/* The pooling arguments and checks the 2-d (ops/pooling.c, with its 1-d
 * forms) and 3-d (ops/pool3d.c) families share: PyTorch's argument forms
 * and shape checks written once for n = 2 or 3 spatial dims, and the
 * autograd glue both families' rows name. Internal to ops/. */
#ifndef TT_POOL_ARGS_H
#define TT_POOL_ARGS_H

#include "ops_impl.h"

/* A pooling call's arguments as PyTorch's kernels read them; a 2-d call
 * uses the first two entries of each list. */
typedef struct {
    int64_t k[3], s[3], p[3], d[3];
    bool ceil;
    bool count_include_pad; /* avg pool */
    int64_t divisor;        /* avg pool: 0 for none */
} pool_args;

/* kernel_size, stride ([] means kernel_size), padding, dilation (when
 * has_dilation; else 1) and ceil_mode of a frame, from argument `first`
 * on, each list of n values. */
tt_status tt__pool_frame_args(tt_frame *f, int first, bool has_dilation, int n, pool_args *a);
/* The same, then count_include_pad and divisor_override (avg pools). */
tt_status tt__pool_avg_frame_args(tt_frame *f, int first, int n, pool_args *a);
/* The same from a boxed call's values (the setup_context side). */
void tt__pool_values_args(const tt_value *in, int first, bool has_dilation, int n, pool_args *a);

/* PyTorch's pool2d/pool3d_shape_check and pooling_output_shape for n
 * spatial dims: the argument checks, then each spatial output size into
 * out[0..n-1]. allow_i64: avg pool's i64 input; check_input_size:
 * avg_pool3d's each input size at least the kernel's. Sizes may be
 * symbolic (the comparisons guard). */
tt_status tt__pool_check(const char *op, const tt_tensor *x, const pool_args *a, int n,
                         int argno_x, bool has_dilation, bool allow_i64, bool check_input_size,
                         tt_size out[3]);

/* The typed wrappers' options (tt_pool_opts, tt_pool3d_opts: lists of n)
 * as the ops' arguments: a zero stride entry is the kernel's, a zero
 * dilation entry 1, all stride entries zero pass [] (the schema's
 * "unset", as F.max_pool2d passes it). kernel NULL: the options were
 * NULL. avg: dilation must be 0 or 1 (max pooling's only). */
tt_status tt__pool_opts_args(const char *fn, int n, const int64_t *kernel, const int64_t *stride,
                             const int64_t *padding, const int64_t *dilation, bool ceil_mode,
                             bool exclude_pad, int64_t divisor, bool avg, pool_args *a,
                             bool *stride_unset);
/* The max_poolNd_with_indices / avg_poolNd call of a wrapper through the
 * dispatcher (op id, n spatial dims). */
tt_tensor *tt__pool_call_max(tt_builtin_id id, const tt_tensor *x, int n, const pool_args *a,
                             bool stride_unset, tt_tensor **indices);
tt_tensor *tt__pool_call_avg(tt_builtin_id id, const tt_tensor *x, int n, const pool_args *a,
                             bool stride_unset);

/* Autograd: the arguments saved as ints and read back. */
tt_status tt__pool_save_args(tt_autograd_ctx *ctx, const pool_args *a);
tt_status tt__pool_load_args(tt_autograd_ctx *ctx, pool_args *a);

/* The rows' setup_context and backward functions of max_pool2d/3d_with_indices,
 * avg_pool2d/3d and _adaptive_avg_pool2d/3d: n is the kernel list's length
 * (adaptive: the forward op), the backward op the family's. */
tt_status tt__pool_setup_max(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                             const tt_value *out, int nout);
tt_status tt__pool_max_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                tt_tensor **gi, int ni);
tt_status tt__pool_setup_avg(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                             const tt_value *out, int nout);
tt_status tt__pool_avg_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                tt_tensor **gi, int ni);
tt_status tt__pool_setup_adaptive(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                                  const tt_value *out, int nout);
tt_status tt__pool_adaptive_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                     tt_tensor **gi, int ni);

#endif
