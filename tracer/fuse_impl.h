/* Internal to tracer/: elementwise fusion (fuse.c) for compiled plans. */
#ifndef TT_FUSE_IMPL_H
#define TT_FUSE_IMPL_H

#include "graph_impl.h"

#define FUSE_MAX 32 /* ops in one fused chain */

typedef struct fused_step fused_step;

/* Finds the chains of g to fuse: returns how many, with steps_out[k] the
 * k-th and step_of_node[i] = k for every node i of chain k (other entries
 * untouched); -1 with TT_ENOMEM set (and nothing left in steps_out) when a
 * step could not be allocated. */
int tt__fuse_plan(const tt_graph *g, fused_step **steps_out, int *step_of_node, int max_steps);
fused_step *tt__fused_free(fused_step *f); /* NULL-safe; returns NULL */
gref tt__fused_output(const fused_step *f);
int tt__fused_num_inputs(const fused_step *f);
gref tt__fused_input(const fused_step *f, int i);
int tt__fused_num_nodes(const fused_step *f);
int tt__fused_node(const fused_step *f, int k);
/* Runs the chain on its external inputs; *out receives the result. */
tt_status tt__fused_run(const fused_step *f, tt_tensor *const *inputs, tt_tensor **out);

#endif
