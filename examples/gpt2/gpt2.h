/* GPT-2 on tensortrace: the model, its training step, and llm.c's file
 * formats (examples/gpt2/gpt2_model.c). Used by the gpt2 program
 * (examples/gpt2/gpt2.c) and by the bench. Public API only.
 *
 * Ownership as in tensortrace: functions returning tensors return new
 * references; arguments are borrowed; a state owns its tensors. */
#ifndef GPT2_H
#define GPT2_H

#include <stdint.h>
#include <tensortrace.h>

typedef struct {
    int max_seq_len;       /* maxT */
    int vocab_size;        /* V */
    int padded_vocab_size; /* Vp: wte's rows, V rounded up */
    int num_layers;        /* L */
    int num_heads;         /* NH */
    int channels;          /* C */
} gpt2_config;

/* The parameter tensors, kinds in llm.c's order; the per-layer kinds have
 * one tensor per layer (llm.c stores them stacked (L, ...); one tensor per
 * layer keeps each layer's gradient its own). */
enum {
    WTE, WPE, LN1W, LN1B, QKVW, QKVB, ATTPROJW, ATTPROJB, LN2W, LN2B,
    FCW, FCB, FCPROJW, FCPROJB, LNFW, LNFB, NUM_KINDS
};

/* Number of parameter tensors: 4 + 12 L. */
int gpt2_num_params(const gpt2_config *c);
/* Index of (kind, layer) in the parameter array, in llm.c's file order. */
int gpt2_param_index(const gpt2_config *c, int kind, int layer);

/* Parameters and AdamW state. */
typedef struct {
    gpt2_config cfg;
    int np;
    tt_tensor **t;    /* params, then first moments, then second moments: 3 np */
    tt_tensor *step;  /* 0-dim f32: the number of the next AdamW update */
} gpt2_state;

/* Zero parameters (requiring grad) and moments for s->cfg. */
tt_status gpt2_state_alloc(gpt2_state *s);
/* GPT-2's init: weights normal(0, 0.02), the residual projections scaled
 * by 1/sqrt(2 L), biases 0, layer norm weights 1, wte's padding rows 0. */
tt_status gpt2_state_init_random(gpt2_state *s, uint64_t seed);
void gpt2_state_free(gpt2_state *s);

/* llm.c's checkpoint: reads into a fresh state (allocating it), writes. */
tt_status gpt2_checkpoint_read(gpt2_state *s, const char *path);
tt_status gpt2_checkpoint_write(const gpt2_state *s, const char *path);

/* llm.c's token file. */
typedef struct {
    uint16_t *tok;
    int64_t n;
} gpt2_tokens;
tt_status gpt2_tokens_read(gpt2_tokens *tf, const char *path);
/* A byte-level corpus: every byte of a text file is a token (vocab 256),
 * written as an llm.c token file. */
tt_status gpt2_tokens_from_text(const char *text, const char *path);
/* Batch i as llm.c's DataLoader makes it into i64 (B, T) tensors. */
tt_status gpt2_next_batch(const gpt2_tokens *tf, int64_t i, int64_t B, int64_t T,
                          tt_tensor *tokens, tt_tensor *targets);

/* What the training step needs besides its inputs. */
typedef struct {
    gpt2_config cfg;
    tt_adamw_opts adamw;
    double clip;           /* max gradient norm; 0: no clipping (llm.c's CPU step has none) */
    tt_tensor *vocab_mask; /* (Vp): 0, and -inf on wte's padding rows; NULL if none */
} gpt2_step_args;
/* llm.c's AdamW settings (betas 0.9, 0.999, eps 1e-8, no weight decay) at
 * learning rate lr, and the vocabulary mask. */
tt_status gpt2_step_args_init(gpt2_step_args *a, const gpt2_config *c, double lr, double clip);
void gpt2_step_args_free(gpt2_step_args *a);

/* The training step's inputs before the parameters: tokens (B, T),
 * targets (B, T), pos (T), step. */
#define GPT2_NFIXED 4
/* One training step: forward, loss, backward, AdamW (a tt_fn; ud is a
 * gpt2_step_args). in: tokens, targets, pos, step, then the state's 3 np
 * tensors; out[0]: the loss. */
tt_status gpt2_train_step(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud);
/* The input array for s (free() it): tokens, targets, pos, s->step, s->t. */
tt_tensor **gpt2_step_inputs(gpt2_state *s, tt_tensor *tokens, tt_tensor *targets,
                             tt_tensor *pos);
/* The step compiled: traced once in fullgraph symbolic mode, batch and
 * sequence sizes as symbols, the parameters' sizes fixed. */
tt_compiled *gpt2_compile_step(gpt2_step_args *a);

/* One transformer block's forward as a tt_fn, for pictures (ud: a
 * gpt2_config): in = x (B, T, C), then the block's 12 parameters in llm.c's
 * order (ln1w ... fcprojb); out[0] = the block's output. gpt2_block_inputs
 * makes zero tensors for them (13 new references into in). */
tt_status gpt2_block_fn(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud);
tt_status gpt2_block_inputs(const gpt2_config *c, int64_t B, int64_t T, tt_tensor **in);

#endif
