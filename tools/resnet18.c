/* ResNet-18 (tools/resnet18.h). */
#include "resnet18.h"

#include <math.h>
#include <stdlib.h>

/* Each convolution: channels in and out, kernel, stride (padding is
 * kernel / 2), in torchvision's order: the stem, then per stage block 0's
 * conv1, conv2, [downsample], block 1's conv1, conv2. */
static const struct {
    int cin, cout, k, stride;
} convs[RESNET_NCONV] = {
    {3, 64, 7, 2},
    {64, 64, 3, 1},   {64, 64, 3, 1},   {64, 64, 3, 1},   {64, 64, 3, 1},
    {64, 128, 3, 2},  {128, 128, 3, 1}, {64, 128, 1, 2},  {128, 128, 3, 1}, {128, 128, 3, 1},
    {128, 256, 3, 2}, {256, 256, 3, 1}, {128, 256, 1, 2}, {256, 256, 3, 1}, {256, 256, 3, 1},
    {256, 512, 3, 2}, {512, 512, 3, 1}, {256, 512, 1, 2}, {512, 512, 3, 1}, {512, 512, 3, 1},
};

/* in[] layout */
#define P(r, i) ((r)[3 + (i)])
#define M(r, i) ((r)[3 + RESNET_NPARAMS + (i)])
#define RS(r, i) ((r)[3 + 2 * RESNET_NPARAMS + (i)])
/* parameter i of convolution c: 0 weight, 1 its batch norm's weight, 2 bias */
#define CONV_W(c) (3 * (c))
#define BN_W(c) (3 * (c) + 1)
#define BN_B(c) (3 * (c) + 2)
#define FC_W (3 * RESNET_NCONV)
#define FC_B (3 * RESNET_NCONV + 1)

static tt_tensor *uniform(int nd, const int64_t *sizes, double bound)
{
    tt_scope_begin();
    tt_tensor *t = tt_keep(tt_add_scalar(tt_mul_scalar(tt_rand(nd, sizes, TT_F32), 2 * bound),
                                         -bound));
    tt_scope_end();
    return t;
}

tt_status resnet18_init(resnet18 *r, int classes, uint64_t seed)
{
    *r = (resnet18){.classes = classes, .sgd = {.lr = 0.01, .momentum = 0.9}};
    tt_manual_seed(seed);
    tt_tensor **in = r->in;
    for (int c = 0; c < RESNET_NCONV; c++) {
        int64_t w[4] = {convs[c].cout, convs[c].cin, convs[c].k, convs[c].k};
        int64_t ch = convs[c].cout;
        P(in, CONV_W(c)) = uniform(4, w, 1.0 / sqrt((double)(convs[c].cin * convs[c].k * convs[c].k)));
        P(in, BN_W(c)) = tt_ones(1, &ch, TT_F32);
        P(in, BN_B(c)) = tt_zeros(1, &ch, TT_F32);
        RS(in, 2 * c) = tt_zeros(1, &ch, TT_F32);
        RS(in, 2 * c + 1) = tt_ones(1, &ch, TT_F32);
    }
    P(in, FC_W) = uniform(TT_SHAPE(classes, 512), 1.0 / sqrt(512.0));
    P(in, FC_B) = uniform(TT_SHAPE(classes), 1.0 / sqrt(512.0));
    in[2] = tt_full(0, NULL, 1, TT_F32);
    tt_status st = in[2] ? TT_OK : tt_errcode();
    for (int i = 0; i < RESNET_NPARAMS && !st; i++) {
        if (!P(in, i) || !(M(in, i) = tt_zeros(tt_ndim(P(in, i)), tt_sizes(P(in, i)), TT_F32)))
            st = tt_errcode();
        else
            st = tt_set_requires_grad(P(in, i), true);
    }
    for (int i = 0; i < RESNET_NBUFFERS && !st; i++)
        if (!RS(in, i))
            st = tt_errcode();
    if (st)
        resnet18_free(r);
    return st;
}

void resnet18_free(resnet18 *r)
{
    for (int i = 2; i < RESNET_STEP_NIN; i++)
        r->in[i] = tt_release(r->in[i]);
}

/* Convolution c, then its batch norm (training), then ReLU unless last. */
static tt_tensor *conv_bn(tt_tensor **in, int c, tt_tensor *x, bool relu, bool train)
{
    int64_t p = convs[c].k / 2, s = convs[c].stride;
    tt_tensor *y = tt_conv2d(x, P(in, CONV_W(c)), NULL,
                             &(tt_conv_opts){.stride = {s, s}, .padding = {p, p}});
    y = tt_batch_norm(y, P(in, BN_W(c)), P(in, BN_B(c)), RS(in, 2 * c), RS(in, 2 * c + 1),
                      train, 0.1, 1e-5);
    return relu ? tt_relu(y) : y;
}

/* A basic block from convolution c: two 3x3 convolutions, the shortcut
 * (a 1x1 convolution c + 2 when downsampling), the sum, ReLU. */
static tt_tensor *block(tt_tensor **in, int c, tt_tensor *x, bool downsample, bool train)
{
    tt_tensor *y = conv_bn(in, c + 1, conv_bn(in, c, x, true, train), false, train);
    tt_tensor *shortcut = downsample ? conv_bn(in, c + 2, x, false, train) : x;
    return tt_relu(tt_add(y, shortcut));
}

/* The logits of images x: batch norms in training mode or in inference
 * form (their running statistics). */
static tt_tensor *forward(tt_tensor **in, tt_tensor *x, bool train)
{
    x = conv_bn(in, 0, x, true, train);
    x = tt_max_pool2d(x, &(tt_pool_opts){.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}});
    x = block(in, 3, block(in, 1, x, false, train), false, train);
    for (int stage = 0, c = 5; stage < 3; stage++, c += 5)
        x = block(in, c + 3, block(in, c, x, true, train), false, train);
    x = tt_flatten(tt_adaptive_avg_pool2d(x, 1, 1), 1, -1);
    return tt_linear(x, P(in, FC_W), P(in, FC_B));
}

tt_status resnet18_eval(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_scope_begin();
    out[0] = tt_keep(forward(in, in[0], false));
    tt_scope_end();
    return out[0] ? TT_OK : tt_errcode();
}

tt_status resnet18_step(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    const resnet18 *r = ud;
    tt_tensor *grad[RESNET_NPARAMS] = {0};
    tt_scope_begin();
    tt_tensor *loss = tt_cross_entropy(forward(in, in[0], true), in[1]);
    tt_status st = loss ? tt_backward(loss, NULL) : tt_errcode();
    for (int i = 0; i < RESNET_NPARAMS && !st; i++)
        if (!(grad[i] = tt_get_grad(P(in, i))))
            st = tt_errcode();
    tt_no_grad_begin();
    for (int i = 0; i < RESNET_NPARAMS && !st; i++)
        st = tt_sgd_(P(in, i), grad[i], M(in, i), in[2], &r->sgd);
    tt_no_grad_end();
    for (int i = 0; i < RESNET_NPARAMS; i++) {
        if (!st)
            st = tt_set_grad(P(in, i), NULL);
        tt_release(grad[i]);
    }
    out[0] = st ? NULL : tt_keep(loss);
    tt_scope_end();
    return st;
}

static int64_t conv_out(int64_t h, int k, int stride)
{
    return (h + 2 * (k / 2) - k) / stride + 1;
}

/* The input size of convolution c for H-high images, following the
 * forward. */
static int64_t conv_input_size(int c, int64_t h)
{
    int64_t in[RESNET_NCONV];
    in[0] = h;
    h = conv_out(conv_out(h, 7, 2), 3, 2); /* the stem, max pool 3x3/2 */
    for (int i = 1; i <= 4; i++)
        in[i] = h;
    for (int first = 5; first < RESNET_NCONV; first += 5) {
        in[first] = in[first + 2] = h; /* block 0's conv1 and downsample */
        h = conv_out(h, 3, 2);
        in[first + 1] = in[first + 3] = in[first + 4] = h;
    }
    return in[c];
}

tt_status resnet18_conv_operands(const resnet18 *r, int64_t B, int64_t H, int64_t W, int conv,
                                 tt_tensor **in3)
{
    (void)W; /* square images */
    int64_t h = conv_input_size(conv, H), o = conv_out(h, convs[conv].k, convs[conv].stride);
    in3[0] = tt_randn(TT_SHAPE(B, convs[conv].cin, h, h), TT_F32);
    in3[1] = tt_detach(P(r->in, CONV_W(conv))); /* the floor records no autograd */
    in3[2] = tt_randn(TT_SHAPE(B, convs[conv].cout, o, o), TT_F32);
    if (in3[0] && in3[1] && in3[2])
        return TT_OK;
    for (int i = 0; i < 3; i++)
        in3[i] = tt_release(in3[i]);
    return tt_errcode();
}

tt_status resnet18_conv_alone(const resnet18 *r, int conv, tt_tensor *const *in3)
{
    (void)r;
    int64_t p = convs[conv].k / 2, s = convs[conv].stride;
    int64_t stride[2] = {s, s}, pad[2] = {p, p}, one[2] = {1, 1}, zero[2] = {0, 0};
    /* the step needs no gradient of its images: the first convolution's
     * backward computes the weights' alone there, and so does the floor */
    bool mask[3] = {conv != 0, true, false};
    tt_value outs[3] = {0};
    tt_tensor *y = tt_conv2d(in3[0], in3[1], NULL,
                             &(tt_conv_opts){.stride = {s, s}, .padding = {p, p}});
    if (!y)
        return tt_errcode();
    tt_release(y);
    tt_value args[] = {tt_v_tensor(in3[2]), tt_v_tensor(in3[0]), tt_v_tensor(in3[1]),
                       tt_v_none(), tt_v_ints(2, stride), tt_v_ints(2, pad),
                       tt_v_ints(2, one), tt_v_bool(false), tt_v_ints(2, zero),
                       tt_v_int(1), tt_v_bools(3, mask)};
    const tt_op *op = tt_op_find("tt::convolution_backward");
    tt_status st = op ? tt_op_call(op, args, 11, outs, 3) : tt_errcode();
    for (int i = 0; i < 3; i++)
        tt_value_clear(&outs[i]);
    return st;
}
