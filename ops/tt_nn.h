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

/* Options of tt_conv1d / tt_conv2d. Zero fields mean PyTorch's defaults:
 * stride 1, padding 0, dilation 1, output_padding 0, groups 1. */
typedef struct {
    int64_t stride[2], padding[2], dilation[2], output_padding[2];
    int64_t groups;
    bool transposed; /* conv_transpose2d: w is [C, O/groups, kh, kw] */
} tt_conv_opts;

/* tt::convolution, 2-d (F.conv2d, or F.conv_transpose2d with
 * opts->transposed). x [N, C, H, W] or unbatched [C, H, W] (the result is
 * then unbatched too, as F.conv2d's); w [O, C/groups, kh, kw] (transposed:
 * [C, O/groups, kh, kw]); b [O] or NULL; opts NULL for all defaults. The
 * result is channels_last when x or w is (not transposed), as PyTorch's. */
tt_tensor *tt_conv2d(const tt_tensor *x, const tt_tensor *w, const tt_tensor *b,
                     const tt_conv_opts *opts);
/* The same, 1-d (F.conv1d): x [N, C, L] or [C, L], w [O, C/groups, k];
 * uses element [0] of each pair in opts. */
tt_tensor *tt_conv1d(const tt_tensor *x, const tt_tensor *w, const tt_tensor *b,
                     const tt_conv_opts *opts);
/* tt::im2col (F.unfold): x [N, C, H, W] or [C, H, W] -> [N, C kh kw, L],
 * the sliding blocks as columns. Pairs are (height, width). */
tt_tensor *tt_im2col(const tt_tensor *x, const int64_t kernel_size[2],
                     const int64_t dilation[2], const int64_t padding[2],
                     const int64_t stride[2]);
/* tt::col2im (F.fold): cols [N, C kh kw, L] or [C kh kw, L] summed back
 * into images [N, C, output_size[0], output_size[1]]. */
tt_tensor *tt_col2im(const tt_tensor *cols, const int64_t output_size[2],
                     const int64_t kernel_size[2], const int64_t dilation[2],
                     const int64_t padding[2], const int64_t stride[2]);
/* Which implementation runs a convolution pass: TT_CONV_AUTO picks per
 * dtype and shape (ops/conv_gemm.c says how); the others force oneDNN
 * (f32 only; f64 and shapes oneDNN refuses still take the GEMM path) or
 * im2col + GEMM. For tests and the bench; process-wide. */
typedef enum { TT_CONV_AUTO, TT_CONV_GEMM, TT_CONV_ONEDNN } tt_conv_backend;
void tt_debug_conv_backend(tt_conv_backend backend);
/* oneDNN primitives (convolutions and reorders) created so far: they are
 * cached per shape, so a replayed compiled step creates none. */
int64_t tt_debug_conv_primitives(void);
/* "oneDNN 2.6.3 (OpenMP)": the oneDNN the library runs on. */
const char *tt_onednn_version(void);

#ifdef TT_CALLSITES
#define tt_conv2d(...) TT_CALLSITE_T(tt_conv2d, __VA_ARGS__)
#define tt_conv1d(...) TT_CALLSITE_T(tt_conv1d, __VA_ARGS__)
#define tt_im2col(...) TT_CALLSITE_T(tt_im2col, __VA_ARGS__)
#define tt_col2im(...) TT_CALLSITE_T(tt_col2im, __VA_ARGS__)
#endif

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
/* tt::adaptive_avg_pool1d of a [C, L] or [N, C, L] input to out_l. */
tt_tensor *tt_adaptive_avg_pool1d(const tt_tensor *x, int64_t out_l);
/* 1-d pooling of a [C, L] or [N, C, L] input over L (tt::max_pool1d,
 * tt::avg_pool1d), with entry [0] of each of o's pairs. */
tt_tensor *tt_max_pool1d(const tt_tensor *x, const tt_pool_opts *o);
tt_tensor *tt_avg_pool1d(const tt_tensor *x, const tt_pool_opts *o);
/* 3-d pooling options, PyTorch's max_pool3d / avg_pool3d arguments over
 * (D, H, W), with tt_pool_opts' conventions (zero stride entry = kernel,
 * zero dilation entry = 1, divisor_override 0 = none). */
typedef struct {
    int64_t kernel[3], stride[3], padding[3], dilation[3];
    bool ceil_mode, exclude_pad;
    int64_t divisor_override; /* 0: none */
} tt_pool3d_opts;
/* Max pooling over the last three dims of a [C, D, H, W] or [N, C, D, H, W]
 * input (f32 or f64; NaN wins, as PyTorch), tt::max_pool3d_with_indices;
 * the with-indices form also gives each maximum's flat index
 * (d * H + h) * W + w in its input volume (i64, NULL on failure). Results
 * are contiguous, as PyTorch 1.13's. */
tt_tensor *tt_max_pool3d(const tt_tensor *x, const tt_pool3d_opts *o);
tt_tensor *tt_max_pool3d_with_indices(const tt_tensor *x, const tt_pool3d_opts *o,
                                      tt_tensor **indices);
/* Average pooling (tt::avg_pool3d; f32, f64 or i64 as PyTorch), as
 * tt_avg_pool2d over (D, H, W). o->dilation must be 0 or 1. */
tt_tensor *tt_avg_pool3d(const tt_tensor *x, const tt_pool3d_opts *o);
/* Adaptive average pooling (tt::_adaptive_avg_pool3d) to out_d x out_h x
 * out_w, windows as tt_adaptive_avg_pool2d's in each dim. */
tt_tensor *tt_adaptive_avg_pool3d(const tt_tensor *x, int64_t out_d, int64_t out_h,
                                  int64_t out_w);

/* Padding as F.pad: pads[2i], pads[2i + 1] pad the i-th dim from the last
 * before and after. mode "constant" (tt::constant_pad_nd: any dtype, any
 * number of dims up to n / 2, `value` in the new elements, negative pads
 * crop; NULL is "constant"), "reflect" (mirrored about the edge, each pad
 * below the size it pads) or "replicate" (the edge repeated): n 2, 4 or 6
 * pad the last 1, 2 or 3 dims of an input with 1 or 2 more dims
 * (tt::reflection_pad1d/2d/3d, tt::replication_pad1d/2d/3d: [C, W] or
 * [N, C, W]; [C, H, W] or [N, C, H, W]; [C, D, H, W] or [N, C, D, H, W]).
 * value is read in constant mode only. Reflection and replication need
 * f32 or f64. */
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
/* torch.nn.functional.grid_sample (tt::grid_sampler_2d): input [N, C, H, W]
 * sampled at grid [N, Ho, Wo, 2] (x then y in [-1, 1]) -> [N, C, Ho, Wo].
 * mode "bilinear", "nearest" or "bicubic", padding_mode "zeros", "border"
 * or "reflection" (NULL: the first of each); another string is an error. */
tt_tensor *tt_grid_sample(const tt_tensor *input, const tt_tensor *grid, const char *mode,
                          const char *padding_mode, bool align_corners);

#ifdef TT_CALLSITES
#define tt_max_pool2d(...) TT_CALLSITE_T(tt_max_pool2d, __VA_ARGS__)
#define tt_max_pool2d_with_indices(...) TT_CALLSITE_T(tt_max_pool2d_with_indices, __VA_ARGS__)
#define tt_avg_pool2d(...) TT_CALLSITE_T(tt_avg_pool2d, __VA_ARGS__)
#define tt_adaptive_avg_pool2d(...) TT_CALLSITE_T(tt_adaptive_avg_pool2d, __VA_ARGS__)
#define tt_adaptive_avg_pool1d(...) TT_CALLSITE_T(tt_adaptive_avg_pool1d, __VA_ARGS__)
#define tt_max_pool1d(...) TT_CALLSITE_T(tt_max_pool1d, __VA_ARGS__)
#define tt_avg_pool1d(...) TT_CALLSITE_T(tt_avg_pool1d, __VA_ARGS__)
#define tt_max_pool3d(...) TT_CALLSITE_T(tt_max_pool3d, __VA_ARGS__)
#define tt_max_pool3d_with_indices(...) TT_CALLSITE_T(tt_max_pool3d_with_indices, __VA_ARGS__)
#define tt_avg_pool3d(...) TT_CALLSITE_T(tt_avg_pool3d, __VA_ARGS__)
#define tt_adaptive_avg_pool3d(...) TT_CALLSITE_T(tt_adaptive_avg_pool3d, __VA_ARGS__)
#define tt_pad(...) TT_CALLSITE_T(tt_pad, __VA_ARGS__)
#define tt_upsample_nearest2d(...) TT_CALLSITE_T(tt_upsample_nearest2d, __VA_ARGS__)
#define tt_upsample_nearest2d_scale(...) TT_CALLSITE_T(tt_upsample_nearest2d_scale, __VA_ARGS__)
#define tt_upsample_bilinear2d(...) TT_CALLSITE_T(tt_upsample_bilinear2d, __VA_ARGS__)
#define tt_upsample_bilinear2d_scale(...) TT_CALLSITE_T(tt_upsample_bilinear2d_scale, __VA_ARGS__)
#define tt_grid_sample(...) TT_CALLSITE_T(tt_grid_sample, __VA_ARGS__)
#endif

/* ------------------------------------------------- normalization, dropout */

/* F.batch_norm over x [N, C, *] (f32 or f64): training normalizes each
 * channel with its batch mean and biased variance and, when running_mean
 * and running_var are given ([C] each), updates them in place: running =
 * momentum batch + (1 - momentum) running, with the batch variance
 * unbiased (the tt::_native_batch_norm_legit op; without them .no_stats). Evaluation
 * (training false) uses running_mean and running_var, which it needs
 * (tt::_native_batch_norm_legit_no_training). weight and bias ([C]) may be
 * NULL. Training needs more than one value per channel. The result is
 * channels last when x is, else contiguous. */
tt_tensor *tt_batch_norm(const tt_tensor *x, const tt_tensor *weight, const tt_tensor *bias,
                         tt_tensor *running_mean, tt_tensor *running_var, bool training,
                         double momentum, double eps);
/* F.dropout: training zeroes each element with probability p (drawn from
 * the global generator, tt_manual_seed) and scales the others by
 * 1 / (1 - p) (tt::native_dropout); otherwise returns a view of x (a new
 * tensor object over x's data, so a scope owns it as any result). p must
 * be in [0, 1] either way. */
tt_tensor *tt_dropout(const tt_tensor *x, double p, bool training);
/* F.group_norm over x [N, C, *] (f32 or f64): the C channels of each sample
 * are split into `groups` groups of C / groups channels (C must divide),
 * each normalized with its mean and biased variance, then scaled by
 * weight and shifted by bias ([C] each, may be NULL)
 * (tt::native_group_norm). The result is channels last when x is, else
 * contiguous. */
tt_tensor *tt_group_norm(const tt_tensor *x, int64_t groups, const tt_tensor *weight,
                         const tt_tensor *bias, double eps);
/* PyTorch's native_layer_norm: tt_layer_norm (ops/tt_ops.h) that also
 * gives each row's mean and rstd = 1 / sqrt(var + eps), of x's sizes with
 * the normalized dims 1, into *mean and *rstd when those are not NULL
 * (results as the output is: new references, a scope's in a scope)
 * (tt::native_layer_norm). */
tt_tensor *tt_native_layer_norm(const tt_tensor *x, int ndims, const int64_t *normalized_shape,
                                const tt_tensor *weight, const tt_tensor *bias, double eps,
                                tt_tensor **mean, tt_tensor **rstd);

#ifdef TT_CALLSITES
#define tt_batch_norm(...) TT_CALLSITE_T(tt_batch_norm, __VA_ARGS__)
#define tt_dropout(...) TT_CALLSITE_T(tt_dropout, __VA_ARGS__)
#define tt_group_norm(...) TT_CALLSITE_T(tt_group_norm, __VA_ARGS__)
#define tt_native_layer_norm(...) TT_CALLSITE_T(tt_native_layer_norm, __VA_ARGS__)
#endif

/* ---------------------------------------------- activations, losses, SGD */

/* The activations (torch.nn.functional's), each one op whose derivative
 * is PyTorch's backward op (tt::leaky_relu_backward, ...). Floating point
 * inputs (hardtanh takes integers too); the result has x's shape, dtype
 * and layout. */
/* tt::leaky_relu: x for x > 0, else negative_slope * x (PyTorch's default
 * slope is 0.01). */
tt_tensor *tt_leaky_relu(const tt_tensor *x, double negative_slope);
/* tt::elu with scale = input_scale = 1: x for x > 0, else
 * alpha * (exp(x) - 1) (PyTorch's default alpha is 1). */
tt_tensor *tt_elu(const tt_tensor *x, double alpha);
/* tt::hardtanh: x clamped to [min_val, max_val] (PyTorch's defaults -1, 1;
 * max_val when min_val > max_val, as PyTorch's). */
tt_tensor *tt_hardtanh(const tt_tensor *x, double min_val, double max_val);
/* tt::hardswish: x * min(max(x + 3, 0), 6) / 6. */
tt_tensor *tt_hardswish(const tt_tensor *x);
/* tt::hardsigmoid: min(max(x + 3, 0), 6) / 6. */
tt_tensor *tt_hardsigmoid(const tt_tensor *x);
/* tt::softplus: log(1 + exp(beta x)) / beta, or x where beta x > threshold
 * (PyTorch's defaults: beta 1, threshold 20). */
tt_tensor *tt_softplus(const tt_tensor *x, double beta, double threshold);

/* The losses, with PyTorch's reduction as a string: "mean" (NULL too),
 * "sum" or "none". */
/* tt_nll_loss's options, as tt_cross_entropy_opts: weight [C] or NULL;
 * ignore_index counts only when ignore is set (else PyTorch's -100). */
typedef struct {
    const char *reduction;
    const tt_tensor *weight;
    int64_t ignore_index;
    bool ignore;
} tt_nll_loss_opts;
/* F.nll_loss: -w[t] log_probs[n, t] per position, log_probs [C], [N, C]
 * (tt::nll_loss_forward), [N, C, H, W] (tt::nll_loss2d_forward) or [N, C,
 * d1, ...] (viewed as [N, C, 1, -1]), target i64 (or u8) class indices of
 * log_probs' shape without the class dim; "mean" divides by the sum of
 * w[t] over the positions not ignored. opts may be NULL. */
tt_tensor *tt_nll_loss(const tt_tensor *log_probs, const tt_tensor *target,
                       const tt_nll_loss_opts *opts);
/* tt::mse_loss: (x - y)^2, x and y broadcast together. */
tt_tensor *tt_mse_loss(const tt_tensor *x, const tt_tensor *y, const char *reduction);
/* tt::binary_cross_entropy_with_logits: weight (1 + (pos_weight - 1) y)
 * log(1 + exp(-x)) + (1 - y) x, computed stably; y of x's shape, weight
 * and pos_weight (NULL: none) broadcast to it. */
tt_tensor *tt_binary_cross_entropy_with_logits(const tt_tensor *x, const tt_tensor *y,
                                               const tt_tensor *weight,
                                               const tt_tensor *pos_weight,
                                               const char *reduction);
/* tt::smooth_l1_loss: 0.5 d^2 / beta where d = |x - y| < beta, else
 * d - 0.5 beta (beta 0: |x - y|; beta < 0 is an error). */
tt_tensor *tt_smooth_l1_loss(const tt_tensor *x, const tt_tensor *y, const char *reduction,
                             double beta);

/* ------------------------------------------------------ pairwise distances */

/* torch.cdist (tt::_cdist_forward): the p-norm distances of the rows of x1
 * [B..., P, M] and x2 [B..., R, M] (batch dims broadcast), [B..., P, R];
 * p >= 0 (0 counts differing entries, INFINITY takes the max); f32 or
 * f64. For p = 2 with P or R above 25 the matrix-product form
 * sqrt(max(|x|^2 + |y|^2 - 2 x.y, 0)) is used, as PyTorch's default. */
tt_tensor *tt_cdist(const tt_tensor *x1, const tt_tensor *x2, double p);
/* The same with torch.cdist's compute_mode: -1 (None) or 0 as above, 1
 * always the matrix-product form for p = 2, 2 never. */
tt_tensor *tt_cdist_ex(const tt_tensor *x1, const tt_tensor *x2, double p, int compute_mode);
/* torch.pdist (tt::_pdist_forward): the p-norm distances of the rows i < j
 * of x [N, M], in order: [N (N - 1) / 2]. */
tt_tensor *tt_pdist(const tt_tensor *x, double p);

/* One torch.optim.SGD update of param from grad, in place, in one pass
 * (tt::sgd_step): d = grad (-grad with maximize) + weight_decay * param;
 * with momentum, buf = d at step 1, else momentum * buf + (1 - dampening)
 * * d, and d = buf (d + momentum * buf with nesterov); param -= lr * d.
 * momentum_buf (param's shape and dtype, any values at step 1) is NULL
 * when momentum is 0; step: a 0-dim tensor holding the update's number,
 * 1 for the first (the caller counts), a tensor so that a compiled step
 * reads it anew each call. Call it under tt_no_grad_begin() for a param
 * that requires grad. opts are torch.optim.SGD's arguments, its checks
 * too (lr, momentum, weight_decay >= 0; nesterov needs a momentum and no
 * dampening). */
typedef struct {
    double lr, momentum, dampening, weight_decay;
    bool nesterov;
    bool maximize; /* ascend: step along +grad (SGD's maximize) */
} tt_sgd_opts;
tt_status tt_sgd_(tt_tensor *param, const tt_tensor *grad, tt_tensor *momentum_buf,
                  const tt_tensor *step, const tt_sgd_opts *opts);

#ifdef TT_CALLSITES
#define tt_leaky_relu(...) TT_CALLSITE_T(tt_leaky_relu, __VA_ARGS__)
#define tt_elu(...) TT_CALLSITE_T(tt_elu, __VA_ARGS__)
#define tt_hardtanh(...) TT_CALLSITE_T(tt_hardtanh, __VA_ARGS__)
#define tt_hardswish(...) TT_CALLSITE_T(tt_hardswish, __VA_ARGS__)
#define tt_hardsigmoid(...) TT_CALLSITE_T(tt_hardsigmoid, __VA_ARGS__)
#define tt_softplus(...) TT_CALLSITE_T(tt_softplus, __VA_ARGS__)
#define tt_nll_loss(...) TT_CALLSITE_T(tt_nll_loss, __VA_ARGS__)
#define tt_mse_loss(...) TT_CALLSITE_T(tt_mse_loss, __VA_ARGS__)
#define tt_binary_cross_entropy_with_logits(...) \
    TT_CALLSITE_T(tt_binary_cross_entropy_with_logits, __VA_ARGS__)
#define tt_smooth_l1_loss(...) TT_CALLSITE_T(tt_smooth_l1_loss, __VA_ARGS__)
#define tt_cdist(...) TT_CALLSITE_T(tt_cdist, __VA_ARGS__)
#define tt_cdist_ex(...) TT_CALLSITE_T(tt_cdist_ex, __VA_ARGS__)
#define tt_pdist(...) TT_CALLSITE_T(tt_pdist, __VA_ARGS__)
#define tt_sgd_(...) TT_CALLSITE_S(tt_sgd_, __VA_ARGS__)
#endif

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif /* TT_NN_H */
