/* Internal to tracer/: elementwise fusion (fuse.c) for compiled plans. */
#ifndef TT_FUSE_IMPL_H
#define TT_FUSE_IMPL_H

#include "graph_impl.h"

#include <stdint.h>

#define FUSE_MAX 32 /* ops in one fused chain */

typedef struct fused_step fused_step;

/* Finds the chains of g to fuse: returns how many, with steps_out[k] the
 * k-th and step_of_node[i] = k for every node i of chain k (other entries
 * untouched); -1 with TT_ENOMEM set (and nothing left in steps_out) when a
 * step could not be allocated. With singles, a lone op whose operand
 * nobody else reads is a chain too (to run in place). */
int tt__fuse_plan(const tt_graph *g, fused_step **steps_out, int *step_of_node, int max_steps,
                  bool singles);
fused_step *tt__fused_free(fused_step *f); /* NULL-safe; returns NULL */
gref tt__fused_output(const fused_step *f);
int tt__fused_num_inputs(const fused_step *f);
gref tt__fused_input(const fused_step *f, int i);
int tt__fused_num_nodes(const fused_step *f);
int tt__fused_node(const fused_step *f, int k);
/* Runs the chain on its external inputs; *out receives the result (a new
 * reference). Bit i of `dying` says input i is read last here: then, if
 * nothing else holds it, the result is written over it. */
tt_status tt__fused_run(const fused_step *f, tt_tensor *const *inputs, uint64_t dying,
                        tt_tensor **out);

#endif
