/* The plain-C reference (gpt2_reference.h) on examples/gpt2's state,
 * batches and training settings, so that it runs on the same checkpoint,
 * tokens and AdamW hyperparameters as the tensortrace model
 * (gpt2 --reference, the bench, tests/test_gpt2.c).
 *
 * Ownership as in tensortrace: arguments are borrowed; the model returned
 * is the caller's (gpt2ref_free). */
#ifndef GPT2_REFERENCE_TT_H
#define GPT2_REFERENCE_TT_H

#include "../gpt2.h"
#include "gpt2_reference.h"

/* A reference model for batches of B x T tokens holding a copy of s's
 * parameters (its AdamW moments start at zero). NULL, with tt_errmsg(), if
 * B or T does not fit s's config or memory runs out. */
gpt2ref *gpt2_reference_from_state(const gpt2_state *s, int B, int T);

/* Copies r's parameters into s (of the same config), e.g. to write them as
 * a checkpoint. */
tt_status gpt2_reference_to_state(gpt2ref *r, gpt2_state *s);

/* One training step of r, as gpt2_train_step makes it with a: forward and
 * loss on tokens and targets (i64 (B, T), the model's batch shape),
 * backward, AdamW with a->adamw as update number `step`. *loss gets the
 * loss. Gradient clipping is not part of the reference (nor of llm.c's CPU
 * step): a->clip > 0 is an error. */
tt_status gpt2_reference_step(gpt2ref *r, const tt_tensor *tokens, const tt_tensor *targets,
                              int step, const gpt2_step_args *a, double *loss);

#endif
