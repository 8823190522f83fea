/* A training loop, first eager, then compiled.
 *
 * A linear model y = x @ w + b learns the line y = x @ [2, -3] + 1 from
 * noisy samples, with mean squared error and plain SGD. The step (forward,
 * backward, the in-place update of w and b) is one C function; run as it
 * is, it is eager PyTorch; given to tt_compile, its first call traces the
 * whole step into one graph and later calls replay that graph.
 *
 * Build: cc training.c $(pkg-config --cflags --libs tensortrace) -o training
 * Exits 0 when both loops brought the loss down. */
#include <stdio.h>
#include <tensortrace.h>

#define LR 0.1

/* One SGD step. in: x (N,2), target (N,1), w (2,1) and b (1), both
 * requiring grad; out[0]: the loss before the update (a new reference).
 * w and b are updated in place, outside autograd (no-grad), and their
 * gradients cleared for the next step, as optimizer.step() and
 * zero_grad() do. */
static tt_status sgd_step(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_tensor *x = in[0], *target = in[1], *w = in[2], *b = in[3];
    tt_scope_begin(); /* every tensor made below is released at the end... */
    tt_tensor *pred = tt_add(tt_matmul(x, w), b);
    tt_tensor *err = tt_sub(pred, target);
    tt_tensor *loss = tt_mean_all(tt_mul(err, err)); /* NULL if any step failed */
    tt_status st = loss ? tt_backward(loss, NULL) : tt_errcode();
    tt_tensor *gw = st ? NULL : tt_get_grad(w), *gb = st ? NULL : tt_get_grad(b);
    if (!st && (!gw || !gb))
        st = tt_errcode();
    if (!st) {
        tt_no_grad_begin(); /* the update is not part of the next step's graph */
        st = tt_add_scaled_(w, gw, -LR);
        if (!st)
            st = tt_add_scaled_(b, gb, -LR);
        tt_no_grad_end();
    }
    if (!st)
        st = tt_set_grad(w, NULL);
    if (!st)
        st = tt_set_grad(b, NULL);
    tt_release(gw); /* tt_get_grad returned new references */
    tt_release(gb);
    out[0] = st ? NULL : tt_keep(loss); /* ...except this one */
    tt_scope_end();
    return st;
}

/* The samples: target = x @ [2, -3] + 1 + noise. */
static tt_status make_data(tt_tensor **x, tt_tensor **target)
{
    tt_scope_begin();
    *x = tt_keep(tt_randn(TT_SHAPE(256, 2), TT_F32));
    tt_tensor *true_w = tt_from_data(TT_SHAPE(2, 1), TT_F32, (float[]){2, -3});
    tt_tensor *noise = tt_mul_scalar(tt_randn(TT_SHAPE(256, 1), TT_F32), 0.01);
    *target = tt_keep(tt_add(tt_add_scalar(tt_matmul(*x, true_w), 1), noise));
    tt_scope_end();
    return *x && *target ? TT_OK : tt_errcode();
}

/* Fresh parameters: w = 0, b = 0, both trainable. */
static tt_status make_params(tt_tensor **w, tt_tensor **b)
{
    *w = tt_zeros(TT_SHAPE(2, 1), TT_F32);
    *b = tt_zeros(TT_SHAPE(1), TT_F32);
    if (!*w || !*b)
        return tt_errcode();
    tt_status st = tt_set_requires_grad(*w, true);
    return st ? st : tt_set_requires_grad(*b, true);
}

/* Runs 60 steps through `step` (the function itself or a compiled one),
 * printing the loss every 20; *last gets the final loss. */
static tt_status train(const char *name, tt_compiled *compiled, tt_tensor **in, double *last)
{
    for (int i = 0; i < 60; i++) {
        tt_tensor *loss = NULL;
        tt_status st = compiled ? tt_compiled_call(compiled, in, &loss)
                                : sgd_step(in, 4, &loss, 1, NULL);
        if (!st)
            st = tt_item(loss, last);
        tt_release(loss);
        if (st)
            return st;
        if (i % 20 == 0 || i == 59)
            printf("%s step %2d: loss %.5f\n", name, i, *last);
    }
    return TT_OK;
}

int main(void)
{
    tt_tensor *x = NULL, *target = NULL, *w = NULL, *b = NULL;
    tt_compiled *c = NULL;
    double eager_loss = 1e9, compiled_loss = 1e9, wv[2] = {0, 0}, bv = 0;
    int rc = 1;
    tt_manual_seed(0);
    if (make_data(&x, &target) || make_params(&w, &b))
        goto out;

    /* Eager: every op runs as it is called. */
    if (train("eager", NULL, (tt_tensor *[]){x, target, w, b}, &eager_loss))
        goto out;

    /* Compiled: start again from zero. The first call traces sgd_step
     * (forward, backward and update) into one graph; the other 59 replay it. */
    tt_release(w);
    tt_release(b);
    if (make_params(&w, &b))
        goto out;
    c = tt_compile(sgd_step, 4, 1, &(tt_trace_opts){.name = "sgd_step", .fullgraph = true});
    if (!c || train("compiled", c, (tt_tensor *[]){x, target, w, b}, &compiled_loss))
        goto out;
    tt_compile_stats stats;
    tt_compiled_stats(c, &stats);
    printf("compiled: %lld calls, %lld traced, %lld replayed\n", (long long)stats.calls,
           (long long)stats.misses, (long long)stats.hits);
    if (tt_get(w, &wv[0], 0, 0) || tt_get(w, &wv[1], 1, 0) || tt_get(b, &bv, 0))
        goto out;
    printf("learned w = [%.2f, %.2f], b = %.2f (true: [2, -3], 1)\n", wv[0], wv[1], bv);
    rc = eager_loss < 1e-3 && compiled_loss < 1e-3 ? 0 : 1;
out:
    if (rc)
        fprintf(stderr, "training: %s\n", tt_errmsg());
    tt_compiled_free(c);
    tt_release(b);
    tt_release(w);
    tt_release(target);
    tt_release(x);
    return rc || tt_live_tensors() != 0;
}
