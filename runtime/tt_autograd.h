/* tensortrace autograd: reverse mode on a tape of backward nodes.
 *
 * A call of an op whose tensor inputs require grad (in grad mode) records
 * a node holding the op's backward and what its setup_context saved. The
 * engine runs the nodes in reverse topological order; every backward is
 * made of ops, so a tracer records the backward pass like the forward one.
 * Included by tt_runtime.h.
 */
#ifndef TT_AUTOGRAD_H
#define TT_AUTOGRAD_H

#ifdef __cplusplus
extern "C" {
#endif
#pragma GCC visibility push(default) /* the public API: see tt_runtime.h */

/* --------------------------------------------------------- leaf tensors */

/* Only floating point tensors can require grad; only leaves can be
 * switched (a result of a recorded op requires grad by construction). */
tt_status tt_set_requires_grad(tt_tensor *t, bool on);
bool tt_requires_grad(const tt_tensor *t);
bool tt_is_leaf(const tt_tensor *t); /* no grad_fn: made by the user */
/* The accumulated gradient of a leaf: a new reference, or NULL if none. */
tt_tensor *tt_get_grad(const tt_tensor *t);
/* Sets (a new reference is taken) or clears (NULL) a leaf's gradient. */
tt_status tt_set_grad(tt_tensor *t, const tt_tensor *grad);
/* The name of the op that made t ("tt::mul.Tensor"), NULL for leaves. */
const char *tt_grad_fn_name(const tt_tensor *t);

/* ----------------------------------------------------------- grad mode */

/* Per thread. tt_no_grad_begin/end nest; inside, nothing is recorded. */
bool tt_grad_enabled(void);
void tt_no_grad_begin(void);
/* TT_EINVAL (nothing changes) without a matching begin. */
tt_status tt_no_grad_end(void);

/* ------------------------------------------------------------- backward */

/* Accumulates d(loss)/d(leaf) into the .grad of every leaf that requires
 * grad. `grad` is d(loss)/d(loss): NULL for a one-element loss (ones),
 * else a tensor of loss's shape. The graph's saved tensors are freed
 * afterwards: a second backward through it is an error. */
tt_status tt_backward(tt_tensor *loss, const tt_tensor *grad);
/* d(outputs)/d(inputs) without touching .grad: grads_out[i] receives a new
 * reference (zeros when inputs[i] does not influence the outputs).
 * grad_outputs may be NULL (ones for one-element outputs). */
tt_status tt_grad(int nout, tt_tensor *const *outputs,
                  tt_tensor *const *grad_outputs, int nin,
                  tt_tensor *const *inputs, tt_tensor **grads_out);

/* The gradient-ready hook (per thread), the engine's side of data-parallel
 * training: during tt_backward, fn(leaf, ud) runs as soon as a leaf's .grad
 * has received the last gradient of this backward (after the last node
 * that feeds it ran), while the rest of the backward is still to run, so a
 * caller can start communicating that gradient early (as PyTorch's
 * post-accumulate-grad hooks let DDP do). The leaf is borrowed; fn runs in
 * no-grad mode. A non-OK status fails the backward. tt_grad never calls it.
 * NULL removes the hook. */
typedef tt_status (*tt_grad_ready_fn)(tt_tensor *leaf, void *ud);
void tt_set_grad_ready_hook(tt_grad_ready_fn fn, void *ud);

/* ------------------------------------------- the context of a backward */

/* What setup_context saves and backward reads. Saved tensors are checked
 * at backward: writing one in place in between is an error naming the op. */
tt_status tt_ctx_save_for_backward(tt_autograd_ctx *ctx, int n,
                                   tt_tensor *const *ts);
/* Saved tensor i (borrowed; valid during backward). */
tt_tensor *tt_ctx_saved(tt_autograd_ctx *ctx, int i);
/* Plain values by name: ints (also shapes), floats. */
tt_status tt_ctx_save_ints(tt_autograd_ctx *ctx, const char *name, int n,
                           const int64_t *v);
tt_status tt_ctx_save_int(tt_autograd_ctx *ctx, const char *name, int64_t v);
tt_status tt_ctx_save_float(tt_autograd_ctx *ctx, const char *name, double v);
/* Saves t's sizes under `name` (a shape to rebuild zeros of in backward). */
tt_status tt_ctx_save_shape(tt_autograd_ctx *ctx, const char *name,
                            const tt_tensor *t);
tt_status tt_ctx_get_ints(tt_autograd_ctx *ctx, const char *name,
                          const int64_t **v, int *n);
tt_status tt_ctx_get_int(tt_autograd_ctx *ctx, const char *name, int64_t *v);
tt_status tt_ctx_get_float(tt_autograd_ctx *ctx, const char *name, double *v);
/* Whether input slot i needs a gradient (a backward may skip work). Slots:
 * one per schema argument, except that a Tensor[] argument of n tensors
 * takes n consecutive slots; tt_ctx_input_slot gives an argument's first. */
bool tt_ctx_needs_input_grad(const tt_autograd_ctx *ctx, int slot);
int tt_ctx_input_slot(const tt_autograd_ctx *ctx, int arg);
int tt_ctx_num_inputs(const tt_autograd_ctx *ctx);
const tt_op *tt_ctx_op(const tt_autograd_ctx *ctx);
/* The op's static data (tt_custom_op_spec.userdata), as kernels get it from
 * tt_frame_userdata: one backward can serve several ops (softmax and
 * log_softmax) without reading the op's name. NULL for a NULL ctx. */
void *tt_ctx_userdata(const tt_autograd_ctx *ctx);

/* ----------------------------------------------- fake-kernel context */

/* In a fake kernel: a new data-dependent size (an unbacked symbol u0,
 * u1, ...) for an output whose size depends on data, like nonzero's.
 * Returns 0 with the error set outside a fake kernel. */
tt_size tt_frame_new_dynamic_size(tt_frame *f);
/* The same with what the fake kernel knows of it: min <= size <= max
 * (PyTorch's new_dynamic_size(min=, max=)). A comparison these bounds
 * decide (nonzero's count <= numel) needs no guard and no graph break.
 * The unbounded one is [0, 2^48). */
tt_size tt_frame_new_dynamic_size_bounded(tt_frame *f, int64_t min, int64_t max);
/* True while the frame runs the op's fake kernel. */
bool tt_frame_is_fake(const tt_frame *f);

/* The user's line of a backward is a node's line for the nodes it records
 * (see "Call sites" in tt_dispatch.h). */
#ifdef TT_CALLSITES
#define tt_backward(...) TT_CALLSITE_S(tt_backward, __VA_ARGS__)
#define tt_grad(...) TT_CALLSITE_S(tt_grad, __VA_ARGS__)
#endif

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif /* TT_AUTOGRAD_H */
