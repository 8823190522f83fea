/* A custom op end to end: PyTorch's extension tutorial's muladd,
 * out = a * b + c, written as a C kernel and registered with everything
 * the tracer, the autograd engine and opcheck need:
 *
 *   1. the kernel (a plain C loop over strided memory),
 *   2. a fake kernel (the output's metadata from the inputs' metadata),
 *   3. an autograd formula (written with ops, so it traces too),
 *   4. opcheck, which tests all of that on example inputs,
 *   5. the op used in a model: called eagerly, traced into one opaque node,
 *      and trained through.
 *
 * Build: cc custom_op.c $(pkg-config --cflags --libs tensortrace) -o custom_op
 * Exits 0 when every step worked. */
#include <stdio.h>
#include <tensortrace.h>

/* -------------------------------------------------------------- the kernel */

/* The inner loop tt_for_each calls: n elements; d[0] is the output,
 * d[1] and d[2] the inputs; strides are in bytes. */
static void muladd_loop(char **d, const int64_t *s, int64_t n, void *ctx)
{
    float c = *(const float *)ctx;
    for (int64_t i = 0; i < n; i++)
        *(float *)(d[0] + i * s[0]) =
            *(const float *)(d[1] + i * s[1]) * *(const float *)(d[2] + i * s[2]) + c;
}

/* a and b are f32 of one shape; out = a * b + c, a new contiguous tensor.
 * The dispatcher has already checked the arguments against the schema
 * (two tensors and a float); the kernel checks what a schema cannot say. */
static tt_status muladd_kernel(tt_frame *f)
{
    tt_tensor *a, *b;
    double c;
    tt_status st = tt_arg_tensor(f, 0, &a);
    if (!st)
        st = tt_arg_tensor(f, 1, &b);
    if (!st)
        st = tt_arg_float(f, 2, &c);
    if (st)
        return st;
    if (tt_dtype_of(a) != TT_F32 || tt_dtype_of(b) != TT_F32)
        return tt_frame_fail(f, TT_EDTYPE, "arguments 'a' and 'b' must be f32");
    if (tt_numel(a) != tt_numel(b) || tt_ndim(a) != tt_ndim(b))
        return tt_frame_fail(f, TT_ESHAPE, "arguments 'a' and 'b' must have one shape");
    tt_tensor *out = tt_empty_like(a);
    if (!out)
        return tt_errcode();
    float cf = (float)c;
    st = tt_for_each(3, (tt_tensor *[]){out, a, b}, muladd_loop, &cf);
    if (st) {
        tt_release(out);
        return st;
    }
    return tt_return(f, 0, out); /* tt_return takes the reference */
}

/* --------------------------------------------------------- the fake kernel */

/* Same metadata as the real output, computed without touching data: on a
 * fake input, tt_empty_like makes a fake tensor. */
static tt_status muladd_fake(tt_frame *f)
{
    tt_tensor *a;
    tt_status st = tt_arg_tensor(f, 0, &a);
    return st ? st : tt_return(f, 0, tt_empty_like(a));
}

/* ------------------------------------------------------ the autograd formula */

/* Saves a and b for the backward. */
static tt_status muladd_setup_context(tt_autograd_ctx *ctx, const tt_value *inputs,
                                      int ninputs, const tt_value *outputs, int noutputs)
{
    (void)ninputs, (void)outputs, (void)noutputs;
    return tt_ctx_save_for_backward(ctx, 2, (tt_tensor *[]){inputs[0].u.t, inputs[1].u.t});
}

/* d a = grad * b, d b = grad * a, nothing for c. The gradients are new
 * references; built from ops, so a traced training step records them. */
static tt_status muladd_backward(tt_autograd_ctx *ctx, tt_tensor *const *grads, int ngrads,
                                 tt_tensor **grad_inputs, int ninputs)
{
    (void)ngrads, (void)ninputs;
    tt_tensor *a = tt_ctx_saved(ctx, 0), *b = tt_ctx_saved(ctx, 1);
    grad_inputs[0] = tt_mul(grads[0], b);
    grad_inputs[1] = tt_mul(grads[0], a);
    grad_inputs[2] = NULL;
    return grad_inputs[0] && grad_inputs[1] ? TT_OK : tt_errcode();
}

/* ---------------------------------------------------------------- the model */

static const tt_op *muladd;

/* y = tanh(muladd(x, w, 0.5)): a model that uses the op like any other. */
static tt_status model(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_tensor *h = tt_call(muladd, tt_v_tensor(in[0]), tt_v_tensor(in[1]), tt_v_float(0.5));
    out[0] = h ? tt_tanh(h) : NULL;
    tt_release(h);
    return out[0] ? TT_OK : tt_errcode();
}

int main(void)
{
    int rc = 1;
    tt_graph *g = NULL;
    tt_tensor *x = NULL, *w = NULL, *y = NULL, *loss = NULL, *grad = NULL;

    /* Register: one library per namespace; freeing it removes the op. */
    tt_library *lib = tt_library_new(TT_LIB_DEF, "example");
    if (!lib || !tt_custom_op_define(lib, &(tt_custom_op_spec){
                    .schema = "example::muladd(Tensor a, Tensor b, float c) -> Tensor",
                    .mutates_args = "", /* writes none of its arguments */
                    .kernel = muladd_kernel,
                    .fake = muladd_fake,
                    .backward = muladd_backward,
                    .setup_context = muladd_setup_context,
                }))
        goto out;
    muladd = tt_op_find("example::muladd");

    /* opcheck: the schema, the autograd registration, the fake kernel
     * against the real one, and a symbolic trace replayed against eager. */
    x = tt_randn(TT_SHAPE(4, 3), TT_F32);
    w = tt_randn(TT_SHAPE(4, 3), TT_F32);
    if (!x || !w || tt_set_requires_grad(w, true))
        goto out;
    tt_opcheck_report report;
    tt_value args[] = {tt_v_tensor(x), tt_v_tensor(w), tt_v_float(0.5)};
    if (tt_opcheck(muladd, args, 3, NULL, &report) || tt_opcheck_report_print(&report, stdout))
        goto out;

    /* Eagerly: the op runs its kernel and records its backward. */
    tt_tensor *ins[2] = {x, w};
    if (model(ins, 2, &y, 1, NULL))
        goto out;
    loss = tt_mean_all(y);
    if (!loss || tt_backward(loss, NULL))
        goto out;
    grad = tt_get_grad(w);
    printf("\nd mean(tanh(x * w + 0.5)) / d w: %s\n", grad ? "computed" : "missing");
    if (!grad)
        goto out;

    /* Traced: on fake tensors the fake kernel runs, and the op is one
     * opaque node of the graph. */
    g = tt_trace(model, 2, ins, &(tt_trace_opts){.name = "model", .fullgraph = true});
    if (!g || tt_graph_print(g, stdout))
        goto out;
    rc = 0;
out:
    if (rc)
        fprintf(stderr, "custom_op: %s\n", tt_errmsg());
    tt_graph_free(g);
    tt_release(grad);
    tt_release(loss);
    tt_release(y);
    tt_release(w);
    tt_release(x);
    tt_library_free(lib);
    return rc || tt_live_tensors() != 0;
}
