/* The dist demo's, bench's and tests' MLP (see dist_mlp.h). */
#include "dist_mlp.h"

#include <math.h>

tt_status dist_mlp_init(int64_t in, int64_t hid, int64_t out, uint64_t seed, tt_tensor **p)
{
    int64_t shapes[4][2] = {{in, hid}, {hid, 0}, {hid, out}, {out, 0}};
    tt_status st = TT_OK;
    tt_manual_seed(seed);
    tt_scope_begin();
    for (int i = 0; i < 4; i++) {
        p[i] = NULL;
        if (st)
            continue;
        if (shapes[i][1]) { /* weights: N(0, 1) / sqrt(fan in), as a Kaiming-style init */
            tt_tensor *r = tt_randn(2, shapes[i], TT_F32);
            p[i] = r ? tt_mul_scalar(r, 1.0 / sqrt((double)shapes[i][0])) : NULL;
        } else {
            p[i] = tt_zeros(1, shapes[i], TT_F32);
        }
        st = p[i] ? tt_set_requires_grad(p[i], true) : tt_errcode();
        if (!st)
            tt_keep(p[i]);
        else
            p[i] = NULL;
    }
    tt_scope_end();
    if (st)
        for (int i = 0; i < 4; i++)
            p[i] = tt_release(p[i]);
    return st;
}

tt_tensor *dist_mlp_loss(tt_tensor *const *p, const tt_tensor *x, const tt_tensor *labels)
{
    tt_scope_begin();
    tt_tensor *h = tt_matmul(x, p[0]);
    tt_tensor *hb = h ? tt_add(h, p[1]) : NULL;
    tt_tensor *a = hb ? tt_relu(hb) : NULL;
    tt_tensor *o = a ? tt_matmul(a, p[2]) : NULL;
    tt_tensor *logits = o ? tt_add(o, p[3]) : NULL;
    tt_tensor *loss = tt_keep(logits ? tt_cross_entropy(logits, labels) : NULL);
    tt_scope_end();
    return loss;
}

tt_status dist_mlp_sgd(tt_tensor *const *p, int n, double lr)
{
    tt_status st = TT_OK;
    for (int i = 0; i < n && !st; i++) {
        tt_tensor *g = tt_get_grad(p[i]);
        if (!g)
            return tt_error(TT_EAUTOGRAD, "dist_mlp_sgd: parameter %d has no gradient", i);
        tt_no_grad_begin();
        st = tt_add_scaled_(p[i], g, -lr);
        tt_no_grad_end();
        tt_release(g);
        if (!st)
            st = tt_set_grad(p[i], NULL);
    }
    return st;
}

tt_status dist_mlp_dp_step(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    tt_scope_begin();
    tt_tensor *loss = dist_mlp_loss(in, in[4], in[5]);
    tt_status st = loss ? tt_backward(loss, NULL) : tt_errcode();
    if (!st)
        st = tt_dist_average_grads(4, in, 0);
    if (!st)
        st = dist_mlp_sgd(in, 4, *(const double *)ud);
    out[0] = st ? NULL : tt_keep(loss);
    tt_scope_end();
    return st;
}
