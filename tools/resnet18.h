/* ResNet-18 (torchvision's resnet18: a 7x7/2 stem, max pool, four stages
 * of two basic blocks, 64-128-256-512 channels, global average pool, a
 * linear classifier) and its training step with SGD and momentum, for the
 * bench's ResNet-18 lines and the compile test that checks the step the
 * bench times, and its inference forward. Batch norm in training mode, its running statistics
 * updated in place; the convolutions carry no bias, as torchvision's. */
#ifndef TT_RESNET18_H
#define TT_RESNET18_H

#include "tensortrace.h"

/* Parameters: 20 convolutions (stem, 16 in the blocks, 3 downsampling
 * 1x1), a batch norm after each (weight, bias), the classifier. */
#define RESNET_NCONV 20
#define RESNET_NPARAMS (3 * RESNET_NCONV + 2)
#define RESNET_NBUFFERS (2 * RESNET_NCONV)
/* Step inputs: images, labels, step, params, momentum buffers, running
 * statistics (mean, var per batch norm). */
#define RESNET_STEP_NIN (3 + 2 * RESNET_NPARAMS + RESNET_NBUFFERS)

typedef struct {
    int classes;
    tt_tensor *in[RESNET_STEP_NIN]; /* [0], [1]: the batch (set by the caller) */
    tt_sgd_opts sgd;
} resnet18;

/* Random weights (seeded), zero momentum, running mean 0 and var 1; step 1. */
tt_status resnet18_init(resnet18 *r, int classes, uint64_t seed);
void resnet18_free(resnet18 *r); /* not in[0], in[1] */

/* One step (a tt_fn; ud: resnet18 *): out[0] the loss. */
tt_status resnet18_step(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud);
/* Inference (a tt_fn on the step's inputs): out[0] the logits of in[0],
 * batch norms from their running statistics. */
tt_status resnet18_eval(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud);

/* Each convolution's forward and backward (data and weights; weights
 * only for the first, whose input is the images) alone, at the shapes
 * the step runs them for a batch of images [B, 3, H, W] (the
 * bench's floor with the classifier's products); conv: 0..RESNET_NCONV-1.
 * in: its input, weight and grad_output, made by resnet18_conv_operands. */
tt_status resnet18_conv_operands(const resnet18 *r, int64_t B, int64_t H, int64_t W, int conv,
                                 tt_tensor **in3);
tt_status resnet18_conv_alone(const resnet18 *r, int conv, tt_tensor *const *in3);

#endif
