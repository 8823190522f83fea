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

/* ---------------------------------------------- activations, losses, SGD */

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif /* TT_NN_H */
