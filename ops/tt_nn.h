/* tensortrace built-in ops for convolutional networks: typed C wrappers
 * over convolution, pooling, padding and upsampling, normalization,
 * dropout, activations, losses and SGD, with PyTorch's names and argument
 * forms (torch.nn.functional's where it has the op).
 *
 * Conventions are tt_ops.h's: results are new references (NULL + error on
 * failure), arguments are borrowed, dims may be negative; with no mode,
 * gradient or fake tensor in play a wrapper runs its kernel directly,
 * otherwise it goes through the dispatcher.
 */
#ifndef TT_NN_H
#define TT_NN_H

#include "tt_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif
#pragma GCC visibility push(default) /* the public API: see tt_runtime.h */

/* ------------------------------------------------------------ convolution */

/* ---------------------------------------------- pooling, padding, upsampling */

/* Pooling options, PyTorch's max_pool2d / avg_pool2d arguments: kernel
 * required; stride zero = kernel (PyTorch's default); padding 0; dilation
 * zero = 1; count_include_pad is PyTorch's default true unless
 * exclude_pad; divisor_override 0 is none. A zero entry of stride or
 * dilation takes that entry's default alone. The 1-d forms read entry
 * [0] of each pair. Dilation is max pooling's only. */
typedef struct {
    int64_t kernel[2], stride[2], padding[2], dilation[2];
    bool ceil_mode, exclude_pad;
    int64_t divisor_override; /* 0: none */
} tt_pool_opts;

/* Max pooling over the last two dims of a [C, H, W] or [N, C, H, W] input
 * (f32 or f64): each output element is the largest of its window (NaN wins,
 * as in PyTorch). A channels-last input gives a channels-last output.
 * tt::max_pool2d_with_indices, result 0. */
tt_tensor *tt_max_pool2d(const tt_tensor *x, const tt_pool_opts *o);
/* The same, also giving in *indices (a new reference, i64, the output's
 * sizes and strides) where each maximum was: its flat index h * W + w in
 * its input plane, as PyTorch's. *indices is NULL on failure. */
tt_tensor *tt_max_pool2d_with_indices(const tt_tensor *x, const tt_pool_opts *o,
                                      tt_tensor **indices);
/* Average pooling (tt::avg_pool2d) of a [C, H, W] or [N, C, H, W] input
 * (f32, f64, or i64 as PyTorch: integer sums divided with truncation):
 * each window's sum divided by its size (padding included unless
 * o->exclude_pad; o->divisor_override instead when non-zero). An empty
 * window gives 0. o->dilation must be 0 or 1. */
tt_tensor *tt_avg_pool2d(const tt_tensor *x, const tt_pool_opts *o);
/* Adaptive average pooling (tt::_adaptive_avg_pool2d) to out_h x out_w:
 * output (i, j) averages input rows [floor(i H / out_h), ceil((i + 1) H /
 * out_h)) and the columns likewise. Sizes of 0 give an empty result. */
tt_tensor *tt_adaptive_avg_pool2d(const tt_tensor *x, int64_t out_h, int64_t out_w);
/* 1-d pooling of a [C, L] or [N, C, L] input over L (tt::max_pool1d,
 * tt::avg_pool1d), with entry [0] of each of o's pairs. */
tt_tensor *tt_max_pool1d(const tt_tensor *x, const tt_pool_opts *o);
tt_tensor *tt_avg_pool1d(const tt_tensor *x, const tt_pool_opts *o);

#ifdef TT_CALLSITES
#define tt_max_pool2d(...) TT_CALLSITE_T(tt_max_pool2d, __VA_ARGS__)
#define tt_max_pool2d_with_indices(...) TT_CALLSITE_T(tt_max_pool2d_with_indices, __VA_ARGS__)
#define tt_avg_pool2d(...) TT_CALLSITE_T(tt_avg_pool2d, __VA_ARGS__)
#define tt_adaptive_avg_pool2d(...) TT_CALLSITE_T(tt_adaptive_avg_pool2d, __VA_ARGS__)
#define tt_max_pool1d(...) TT_CALLSITE_T(tt_max_pool1d, __VA_ARGS__)
#define tt_avg_pool1d(...) TT_CALLSITE_T(tt_avg_pool1d, __VA_ARGS__)
#endif

/* ------------------------------------------------- normalization, dropout */

/* ---------------------------------------------- activations, losses, SGD */

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif /* TT_NN_H */
