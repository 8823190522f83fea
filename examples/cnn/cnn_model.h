/* A small convolutional network for 28x28 grey images, in plain C over
 * tensortrace's ops:
 *
 *   conv 3x3 (1 -> 32) - batch norm - ReLU - max pool 2
 *   conv 3x3 (32 -> 64) - batch norm - ReLU - max pool 2
 *   flatten - dropout - linear (3136 -> 128) - ReLU - dropout - linear (128 -> 10)
 *
 * trained with cross entropy and SGD with momentum, one C function per
 * step that tt_compile traces into one graph. */
#ifndef CNN_MODEL_H
#define CNN_MODEL_H

#include <tensortrace.h>

enum {
    CNN_CONV1_W, CNN_CONV1_B, CNN_BN1_W, CNN_BN1_B,
    CNN_CONV2_W, CNN_CONV2_B, CNN_BN2_W, CNN_BN2_B,
    CNN_FC1_W, CNN_FC1_B, CNN_FC2_W, CNN_FC2_B,
    CNN_NPARAMS
};
/* The batch norms' running statistics (buffers, not parameters). */
enum { CNN_BN1_MEAN, CNN_BN1_VAR, CNN_BN2_MEAN, CNN_BN2_VAR, CNN_NBUFFERS };

typedef struct {
    tt_tensor *param[CNN_NPARAMS];    /* f32, requiring grad */
    tt_tensor *momentum[CNN_NPARAMS]; /* SGD's momentum buffers */
    tt_tensor *buffer[CNN_NBUFFERS];  /* running mean and variance */
    tt_tensor *step;                  /* 0-dim f32: the update's number, from 1 */
} cnn_state;

/* What a step reads besides its tensors: a compiled step guards on these
 * bytes (ud_size), so changing one traces again. */
typedef struct {
    tt_sgd_opts sgd;
    double dropout; /* probability of zeroing, in training */
} cnn_hparams;

/* Weights from a fixed stream (the same as tools/gen_cnn_ref.py's, so
 * PyTorch can start from them): uniform in +-1/sqrt(fan_in), PyTorch's
 * default bound; batch norm weight 1, bias 0; running mean 0, var 1. */
tt_status cnn_state_init(cnn_state *s, uint64_t seed);
void cnn_state_free(cnn_state *s);

/* The step's inputs: images [B, 1, 28, 28] f32, labels [B] i64, step, the
 * parameters, their momentum buffers, the running statistics. */
#define CNN_STEP_FIXED 3
#define CNN_STEP_NIN (CNN_STEP_FIXED + 2 * CNN_NPARAMS + CNN_NBUFFERS)
void cnn_step_inputs(cnn_state *s, tt_tensor *images, tt_tensor *labels, tt_tensor **in);

/* One training step (a tt_fn; ud: const cnn_hparams *): forward in training
 * mode, cross entropy, backward, SGD in place, running statistics updated
 * in place. out[0]: the loss. */
tt_status cnn_train_step(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud);

/* Evaluation (a tt_fn): in = images, labels, parameters, running
 * statistics (CNN_EVAL_NIN); out[0]: the logits [B, 10], out[1]: how many
 * predictions are right (0-dim i64). Batch norm uses the running
 * statistics; no dropout. */
#define CNN_EVAL_NIN (2 + CNN_NPARAMS + CNN_NBUFFERS)
void cnn_eval_inputs(cnn_state *s, tt_tensor *images, tt_tensor *labels, tt_tensor **in);
tt_status cnn_eval(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud);

#endif
