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

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif /* TT_NN_H */
