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

/* Padding as F.pad: pads[2i], pads[2i + 1] pad the i-th dim from the last
 * before and after. mode "constant" (tt::constant_pad_nd: any dtype, any
 * number of dims up to n / 2, `value` in the new elements, negative pads
 * crop; NULL is "constant"), "reflect" (tt::reflection_pad1d for n 2 on a
 * [C, W] or [N, C, W] input, tt::reflection_pad2d for n 4 on [C, H, W] or
 * [N, C, H, W]: mirrored about the edge, each pad below the size it pads)
 * or "replicate" (tt::replication_pad2d, n 4: the edge repeated); value
 * is read in constant mode only. Reflection and replication need f32 or
 * f64. */
tt_tensor *tt_pad(const tt_tensor *x, int n, const int64_t *pads, const char *mode,
                  double value);
/* Nearest-neighbour upsampling of [N, C, H, W] (f32, f64) to out_h x out_w
 * (tt::upsample_nearest2d.vec): output (i, j) is input (floor(i H /
 * out_h), floor(j W / out_w)). The layout follows the input's. */
tt_tensor *tt_upsample_nearest2d(const tt_tensor *x, int64_t out_h, int64_t out_w);
/* The same by scale factors: the output is floor(H * scale_h) x floor(W *
 * scale_w) and the source index floor(i / scale_h). */
tt_tensor *tt_upsample_nearest2d_scale(const tt_tensor *x, double scale_h, double scale_w);
/* Bilinear upsampling (tt::upsample_bilinear2d.vec) to out_h x out_w: with
 * align_corners the corner pixels' centres coincide, else the pixel areas
 * do (PyTorch's two conventions). */
tt_tensor *tt_upsample_bilinear2d(const tt_tensor *x, int64_t out_h, int64_t out_w,
                                  bool align_corners);
tt_tensor *tt_upsample_bilinear2d_scale(const tt_tensor *x, double scale_h, double scale_w,
                                        bool align_corners);

#ifdef TT_CALLSITES
#define tt_max_pool2d(...) TT_CALLSITE_T(tt_max_pool2d, __VA_ARGS__)
#define tt_max_pool2d_with_indices(...) TT_CALLSITE_T(tt_max_pool2d_with_indices, __VA_ARGS__)
#define tt_avg_pool2d(...) TT_CALLSITE_T(tt_avg_pool2d, __VA_ARGS__)
#define tt_adaptive_avg_pool2d(...) TT_CALLSITE_T(tt_adaptive_avg_pool2d, __VA_ARGS__)
#define tt_max_pool1d(...) TT_CALLSITE_T(tt_max_pool1d, __VA_ARGS__)
#define tt_avg_pool1d(...) TT_CALLSITE_T(tt_avg_pool1d, __VA_ARGS__)
#define tt_pad(...) TT_CALLSITE_T(tt_pad, __VA_ARGS__)
#define tt_upsample_nearest2d(...) TT_CALLSITE_T(tt_upsample_nearest2d, __VA_ARGS__)
#define tt_upsample_nearest2d_scale(...) TT_CALLSITE_T(tt_upsample_nearest2d_scale, __VA_ARGS__)
#define tt_upsample_bilinear2d(...) TT_CALLSITE_T(tt_upsample_bilinear2d, __VA_ARGS__)
#define tt_upsample_bilinear2d_scale(...) TT_CALLSITE_T(tt_upsample_bilinear2d_scale, __VA_ARGS__)
#endif

/* ------------------------------------------------- normalization, dropout */

/* ---------------------------------------------- activations, losses, SGD */

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif /* TT_NN_H */
