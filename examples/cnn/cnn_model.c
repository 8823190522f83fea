/* The network of cnn_model.h. */
#include "cnn_model.h"

#include <math.h>
#include <stdlib.h>

static const int64_t param_shapes[CNN_NPARAMS][5] = {
    /* ndim, sizes */
    [CNN_CONV1_W] = {4, 32, 1, 3, 3},  [CNN_CONV1_B] = {1, 32}, [CNN_BN1_W] = {1, 32},
    [CNN_BN1_B] = {1, 32},             [CNN_CONV2_W] = {4, 64, 32, 3, 3},
    [CNN_CONV2_B] = {1, 64},           [CNN_BN2_W] = {1, 64},   [CNN_BN2_B] = {1, 64},
    [CNN_FC1_W] = {2, 128, 64 * 7 * 7}, [CNN_FC1_B] = {1, 128},
    [CNN_FC2_W] = {2, 10, 128},        [CNN_FC2_B] = {1, 10},
};
/* fan_in of the layer each parameter belongs to; 0: batch norm. */
static const int64_t fan_in[CNN_NPARAMS] = {
    [CNN_CONV1_W] = 9, [CNN_CONV1_B] = 9, [CNN_CONV2_W] = 32 * 9, [CNN_CONV2_B] = 32 * 9,
    [CNN_FC1_W] = 64 * 7 * 7, [CNN_FC1_B] = 64 * 7 * 7, [CNN_FC2_W] = 128, [CNN_FC2_B] = 128};

/* A 64-bit LCG (Knuth's MMIX constants): easy to repeat in Python. */
static double next_uniform(uint64_t *state)
{
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(*state >> 11) * (1.0 / 9007199254740992.0); /* [0, 1) */
}

tt_status cnn_state_init(cnn_state *s, uint64_t seed)
{
    *s = (cnn_state){0};
    uint64_t state = seed;
    tt_status st = TT_OK;
    for (int i = 0; i < CNN_NPARAMS && !st; i++) {
        const int64_t *shape = param_shapes[i];
        int64_t n = 1;
        for (int d = 0; d < shape[0]; d++)
            n *= shape[1 + d];
        float *v = malloc(sizeof(float) * (size_t)n);
        if (!v)
            return tt_error(TT_ENOMEM, "cnn: out of memory");
        double bound = fan_in[i] ? 1.0 / sqrt((double)fan_in[i]) : 0;
        for (int64_t k = 0; k < n; k++)
            v[k] = fan_in[i] ? (float)((2 * next_uniform(&state) - 1) * bound)
                             : (i == CNN_BN1_W || i == CNN_BN2_W ? 1.0f : 0.0f);
        s->param[i] = tt_from_data((int)shape[0], shape + 1, TT_F32, v);
        free(v);
        s->momentum[i] = tt_zeros((int)shape[0], shape + 1, TT_F32);
        if (!s->param[i] || !s->momentum[i])
            st = tt_errcode();
        else
            st = tt_set_requires_grad(s->param[i], true);
    }
    for (int i = 0; i < CNN_NBUFFERS && !st; i++) {
        int64_t c = i < CNN_BN2_MEAN ? 32 : 64;
        bool var = i == CNN_BN1_VAR || i == CNN_BN2_VAR;
        if (!(s->buffer[i] = tt_full(1, &c, var ? 1.0 : 0.0, TT_F32)))
            st = tt_errcode();
    }
    if (!st && !(s->step = tt_zeros(0, NULL, TT_F32)))
        st = tt_errcode();
    if (st)
        cnn_state_free(s);
    return st;
}

void cnn_state_free(cnn_state *s)
{
    for (int i = 0; i < CNN_NPARAMS; i++) {
        tt_release(s->param[i]);
        tt_release(s->momentum[i]);
    }
    for (int i = 0; i < CNN_NBUFFERS; i++)
        tt_release(s->buffer[i]);
    tt_release(s->step);
    *s = (cnn_state){0};
}

void cnn_step_inputs(cnn_state *s, tt_tensor *images, tt_tensor *labels, tt_tensor **in)
{
    in[0] = images, in[1] = labels, in[2] = s->step;
    for (int i = 0; i < CNN_NPARAMS; i++) {
        in[CNN_STEP_FIXED + i] = s->param[i];
        in[CNN_STEP_FIXED + CNN_NPARAMS + i] = s->momentum[i];
    }
    for (int i = 0; i < CNN_NBUFFERS; i++)
        in[CNN_STEP_FIXED + 2 * CNN_NPARAMS + i] = s->buffer[i];
}

void cnn_eval_inputs(cnn_state *s, tt_tensor *images, tt_tensor *labels, tt_tensor **in)
{
    in[0] = images, in[1] = labels;
    for (int i = 0; i < CNN_NPARAMS; i++)
        in[2 + i] = s->param[i];
    for (int i = 0; i < CNN_NBUFFERS; i++)
        in[2 + CNN_NPARAMS + i] = s->buffer[i];
}

/* conv 3x3 (padding 1) - batch norm - ReLU - max pool 2. */
static tt_tensor *conv_block(tt_tensor *x, tt_tensor *const *p, tt_tensor *mean,
                             tt_tensor *var, bool training)
{
    const tt_conv_opts same = {.padding = {1, 1}};
    tt_tensor *y = tt_conv2d(x, p[0], p[1], &same);
    y = tt_batch_norm(y, p[2], p[3], mean, var, training, 0.1, 1e-5);
    return tt_max_pool2d(tt_relu(y), &(tt_pool_opts){.kernel = {2, 2}});
}

/* The logits [B, 10]; params in enum order, buffers likewise. Inside a
 * scope: the temporaries are the caller's scope's. */
static tt_tensor *forward(tt_tensor *images, tt_tensor *const *param, tt_tensor *const *buffer,
                          bool training, double dropout)
{
    tt_tensor *x = conv_block(images, param + CNN_CONV1_W, buffer[CNN_BN1_MEAN],
                              buffer[CNN_BN1_VAR], training);
    x = conv_block(x, param + CNN_CONV2_W, buffer[CNN_BN2_MEAN], buffer[CNN_BN2_VAR], training);
    x = tt_dropout(tt_flatten(x, 1, -1), dropout, training);
    x = tt_relu(tt_linear(x, param[CNN_FC1_W], param[CNN_FC1_B]));
    x = tt_dropout(x, dropout, training);
    return tt_linear(x, param[CNN_FC2_W], param[CNN_FC2_B]);
}

tt_status cnn_train_step(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    const cnn_hparams *h = ud;
    tt_tensor **param = in + CNN_STEP_FIXED, **momentum = param + CNN_NPARAMS;
    tt_tensor **buffer = momentum + CNN_NPARAMS;
    tt_tensor *grad[CNN_NPARAMS] = {0};
    tt_scope_begin();
    tt_tensor *logits = forward(in[0], param, buffer, true, h->dropout);
    tt_tensor *loss = tt_cross_entropy(logits, in[1]);
    tt_status st = loss ? tt_backward(loss, NULL) : tt_errcode();
    for (int i = 0; i < CNN_NPARAMS && !st; i++)
        if (!(grad[i] = tt_get_grad(param[i])))
            st = tt_errcode();
    tt_no_grad_begin(); /* optimizer.step() */
    for (int i = 0; i < CNN_NPARAMS && !st; i++)
        st = tt_sgd_(param[i], grad[i], momentum[i], in[2], &h->sgd);
    tt_no_grad_end();
    for (int i = 0; i < CNN_NPARAMS; i++) {
        if (!st)
            st = tt_set_grad(param[i], NULL); /* optimizer.zero_grad() */
        tt_release(grad[i]);
    }
    out[0] = st ? NULL : tt_keep(loss);
    tt_scope_end();
    return st;
}

tt_status cnn_eval(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_scope_begin();
    tt_tensor *logits = forward(in[0], in + 2, in + 2 + CNN_NPARAMS, false, 0);
    tt_tensor *right = tt_sum_all(tt_eq(tt_argmax(logits, 1, false), in[1]));
    out[0] = tt_keep(logits);
    out[1] = tt_keep(right);
    tt_scope_end();
    if (out[0] && out[1])
        return TT_OK;
    out[0] = tt_release(out[0]);
    out[1] = tt_release(out[1]);
    return tt_errcode();
}
