/* The MLP training step the bench times and the plan tests check: three
 * linear layers with ReLU between them, cross_entropy, backward, and SGD
 * in place on the six parameters. Shared by tools/bench.c and
 * tests/test_plan.c so that the tests check the step the bench measures. */
#ifndef TT_MLP_STEP_H
#define TT_MLP_STEP_H

#include "tensortrace.h"

/* in = x, labels, w1, b1, w2, b2, w3, b3 (borrowed; the parameters are
 * updated in place); *loss_out receives the loss (kept past the scope). */
static inline tt_status tt_mlp_sgd_step(tt_tensor **in, double lr, tt_tensor **loss_out)
{
    tt_scope_begin();
    tt_tensor *h1 = tt_relu(tt_linear(in[0], in[2], in[3]));
    tt_tensor *h2 = tt_relu(tt_linear(h1, in[4], in[5]));
    tt_tensor *loss = tt_cross_entropy(tt_linear(h2, in[6], in[7]), in[1]);
    tt_status st = loss ? tt_backward(loss, NULL) : tt_errcode();
    tt_no_grad_begin();
    for (int p = 2; p < 8 && !st; p++) {
        tt_tensor *g = tt_get_grad(in[p]);
        st = tt_add_scaled_(in[p], g, -lr);
        tt_release(g);
        if (!st)
            st = tt_set_grad(in[p], NULL);
    }
    tt_no_grad_end();
    *loss_out = st ? NULL : tt_keep(loss);
    tt_scope_end();
    return st;
}

#endif
