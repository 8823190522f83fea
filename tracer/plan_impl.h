/* Internal to tracer/: compiled plans. */
#ifndef TT_PLAN_IMPL_H
#define TT_PLAN_IMPL_H

#include "trace_impl.h"

typedef struct tt_plan tt_plan;

/* Builds a plan from a traced graph (taking it): passes (dead-code
 * elimination, elementwise fusion, GEMM epilogues, in-place results; the
 * TT_PASS_* bits in passes_off are skipped), kernels resolved once, and
 * each value's last use, so that intermediates are released as soon as
 * nothing needs them. */
tt_plan *tt__plan_new(tt_graph *g, unsigned passes_off);
void tt__plan_free(tt_plan *p);
const tt_graph *tt__plan_graph(const tt_plan *p);
/* One line for TT_LOG=plan: what the passes did, steps, fused kernels and
 * buffers. */
void tt__plan_describe(const tt_plan *p, char *buf, size_t n);
/* Fills the pass counts of st (fused_steps ... planned_bytes). */
void tt__plan_stats(const tt_plan *p, tt_compile_stats *st);
/* Replays the plan on real inputs. syms/vals bind the symbols of a
 * symbolic plan (nsyms 0 otherwise). outputs receive new references. */
tt_status tt__plan_run(tt_plan *p, tt_tensor **in, int nin, tt_tensor **out, int nout,
                       const tt_size *syms, const int64_t *vals, int nsyms);

/* passes.c */
/* Removes op nodes whose results nothing uses and that write nothing;
 * returns how many it removed. */
int tt__pass_dce(tt_graph *g);
/* Rewrites in-place built-ins whose written value has no other alias in
 * the graph into their functional form (tt::add_ -> tt::add). With
 * inputs_too, writes into graph inputs are rewritten as well and the final
 * value is copied back into each such input; plans leave those in place
 * (an in-place update of a weight is cheaper than an add and a copy).
 * Returns how many ops it rewrote, or -1 (error set) when a copy-back
 * could not be added (only with inputs_too). */
int tt__pass_functionalize(tt_graph *g, bool inputs_too);
/* Drops clones of fresh, unaliased values read only by the clone. */
int tt__pass_elide_clones(tt_graph *g);
/* Replaces each convolution -> [batch norm in inference form] -> [relu]
 * chain whose values nothing else reads by one tt::_convolution_pointwise
 * (the batch norm folded into the weights); returns how many. */
int tt__pass_fuse_conv(tt_graph *g);

#endif
