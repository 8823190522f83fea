/* The data-parallel MLP that the dist demo, the dist bench and the dist
 * tests train: logits = relu(x @ w1 + b1) @ w2 + b2, mean cross entropy,
 * plain SGD. Parameters p[4] = w1 [in, hid], b1 [hid], w2 [hid, out],
 * b2 [out]. */
#ifndef TT_DIST_MLP_H
#define TT_DIST_MLP_H

#include "tt_dist.h"

/* New parameters (p[0..3], new references that require grad), seeded so
 * every rank makes the same ones; scaled normal weights, zero biases. */
tt_status dist_mlp_init(int64_t in, int64_t hid, int64_t out, uint64_t seed, tt_tensor **p);
/* The loss on (x [n, in], labels i64 [n]): a new reference (in the
 * caller's scope when one is open), or NULL with the error set. */
tt_tensor *dist_mlp_loss(tt_tensor *const *p, const tt_tensor *x, const tt_tensor *labels);
/* p[i] -= lr * p[i].grad in no-grad mode, then clears the gradients; an
 * error if a parameter has no gradient. */
tt_status dist_mlp_sgd(tt_tensor *const *p, int n, double lr);
/* One data-parallel step written to be traced and compiled: in = p[4],
 * x, labels; forward, tt_backward, tt_dist_average_grads (so the
 * collective is a node of the graph), SGD with *(double *)ud as the
 * learning rate. out[0] = the loss. */
tt_status dist_mlp_dp_step(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud);

#endif
