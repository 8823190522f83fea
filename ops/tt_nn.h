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

/* ------------------------------------------------- normalization, dropout */

/* ---------------------------------------------- activations, losses, SGD */

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif /* TT_NN_H */
