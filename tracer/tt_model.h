/* tensortrace model libraries: how a shared library declares the model
 * functions that `tt` (the command-line tool) may trace.
 *
 * A model library exports one table under the name tt_model_fns (the
 * symbol TT_MODEL_TABLE names), ended by a row whose name is NULL:
 *
 *   const tt_model_fn tt_model_fns[] = {
 *       {"forward", forward, 2, 1, "tanh(x @ w)", "x, w"},
 *       {0},
 *   };
 *
 * `tt list LIB` prints the table; `tt trace --fn NAME` calls only a
 * function the table names, with the number of inputs it declares, so a
 * mistyped name or a symbol that is not a model function is a usage error
 * rather than a call through the wrong signature. Optionally the library
 * also exports tt_status tt_model_init(void) (register custom ops there)
 * and void tt_model_fini(void) (called before it is unloaded).
 */
#ifndef TT_MODEL_H
#define TT_MODEL_H

#include "tt_ops.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    const char *name;  /* what --fn names; NULL ends the table */
    tt_fn fn;          /* the traced-function signature (tt_ops.h) */
    int ninputs;       /* the number of input tensors it takes */
    int noutputs;      /* the number it writes; 0 means 1 */
    const char *about; /* one line: what it computes */
    /* optional: the inputs' names, "x, w1, b1" (NULL: in0, in1...): what
     * tt list prints and what tt names the traced graph's inputs */
    const char *inputs;
} tt_model_fn;

/* The exported name of the table, for dlsym. */
#define TT_MODEL_TABLE "tt_model_fns"

#ifdef __cplusplus
}
#endif

#endif /* TT_MODEL_H */
