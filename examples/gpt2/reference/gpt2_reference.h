/* A plain-C reference of GPT-2 training: our own re-implementation of the
 * algorithm of llm.c's train_gpt2.c (hand-written loops over float arrays,
 * OpenMP on the outer loops), written from the mathematics and from
 * examples/gpt2's conventions to compare losses and speed with the
 * tensortrace model on the same checkpoint and tokens. It is not llm.c and
 * contains none of its code. No tensortrace calls: gpt2_reference_tt.h
 * connects it to examples/gpt2's state, files and options.
 *
 * The model is examples/gpt2's: token + position embedding; per layer
 * layernorm, qkv, causal attention, projection, residual, layernorm, fc,
 * GELU (tanh form), fc projection, residual; final layernorm; logits with
 * the tied token embedding over the padded vocabulary, of which the
 * padding columns take no probability; mean cross-entropy. Backward by
 * hand; AdamW with bias correction and decoupled weight decay.
 *
 * Ownership: gpt2ref_new returns a model the caller frees with
 * gpt2ref_free; the arrays it hands out are borrowed from the model. */
#ifndef GPT2_REFERENCE_H
#define GPT2_REFERENCE_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    int max_seq_len;       /* maxT */
    int vocab_size;        /* V */
    int padded_vocab_size; /* Vp >= V: wte's rows */
    int num_layers;        /* L */
    int num_heads;         /* NH; channels % NH == 0 */
    int channels;          /* C */
} gpt2ref_config;

typedef struct gpt2ref gpt2ref;

/* Number of parameter floats of c: all tensors in llm.c's checkpoint order,
 * the per-layer ones stacked (L, ...). */
size_t gpt2ref_num_params(const gpt2ref_config *c);

/* A model for batches of B sequences of T tokens (T <= max_seq_len), with
 * zero parameters, gradients and AdamW moments. NULL if c is inconsistent
 * or memory runs out (the caller reports which: gpt2ref_config_ok says). */
gpt2ref *gpt2ref_new(const gpt2ref_config *c, int B, int T);
/* Whether c and B, T make a model (the conditions gpt2ref_new checks). */
int gpt2ref_config_ok(const gpt2ref_config *c, int B, int T);
void gpt2ref_free(gpt2ref *m);
/* The config and the batch shape m was made for. */
const gpt2ref_config *gpt2ref_get_config(const gpt2ref *m);
void gpt2ref_batch_shape(const gpt2ref *m, int *B, int *T);

/* The parameters and their gradients: gpt2ref_num_params floats each, in
 * checkpoint order (borrowed; write the parameters to load a checkpoint). */
float *gpt2ref_params(gpt2ref *m);
const float *gpt2ref_grads(const gpt2ref *m);

/* Forward and mean cross-entropy loss. tokens and targets are (B, T)
 * token ids < vocab_size (copied: they need not outlive the call). */
float gpt2ref_forward(gpt2ref *m, const int64_t *tokens, const int64_t *targets);
/* The gradient of the last forward's loss into gpt2ref_grads (set, not
 * accumulated). */
void gpt2ref_backward(gpt2ref *m);

typedef struct {
    float lr, beta1, beta2, eps, weight_decay;
} gpt2ref_adamw_opts;
/* One AdamW update of every parameter from the gradients; step is the
 * update's number (1 for the first), for the bias correction. */
void gpt2ref_adamw(gpt2ref *m, const gpt2ref_adamw_opts *o, int step);

/* OpenMP threads of the loops (omp_set_num_threads); n <= 0 leaves them.
 * gpt2ref_threads: how many the next loop uses (1 without OpenMP). */
void gpt2ref_set_threads(int n);
int gpt2ref_threads(void);

#endif
