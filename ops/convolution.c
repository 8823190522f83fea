/* Convolution (1-d, 2-d; grouped, depthwise, transposed) and its backward,
 * im2col and col2im: oneDNN primitives where they are faster, im2col + our
 * GEMM where they are not (ops/conv_dnnl.c has the oneDNN side).
 *
 * Everything is computed in "convolution sense": x [N, C, H, W] -> y [N, O,
 * OH, OW] with w [O, C/G, KH, KW]. A transposed convolution is the
 * backward-data pass of the convolution whose output is its input (its
 * weight [Cin, Cout/G, k] is exactly that convolution's [O, C/G, k]), so
 * three passes serve all of it: forward (y from x), backward-data (x from
 * y) and backward-weights (w from x and y). 1-d runs as 2-d with a unit
 * height. */
#include "conv_impl.h"
#include "tt_nn.h"

#include <stdio.h>

/* ------------------------------------------------------------ arguments */

typedef struct {
    int nsp; /* spatial dims: 1 or 2 */
    int64_t stride[2], pad[2], dil[2], opad[2];
    bool transposed;
    int64_t groups;
} conv_args;

static const char *OP_CONV = "tt::convolution";

/* Reads a list argument that is one value or one per spatial dim, as
 * PyTorch's expand_param_if_needed. */
static tt_status expand_param(const char *op, const char *name, int nsp, int n,
                              const int64_t *v, int64_t *out)
{
    if (n == 1 || n == nsp) {
        for (int i = 0; i < nsp; i++)
            out[i] = v[n == 1 ? 0 : i];
        return TT_OK;
    }
    char buf[96];
    tt_size_list_str(n, v, false, buf, sizeof buf);
    return tt_error(TT_EINVAL,
                    "%s: expected %s to be a single integer value or a list of %d values to "
                    "match the convolution dimensions, but got %s=%s",
                    op, name, nsp, name, buf);
}

static tt_status conv_args_check(const char *op, int wdim, const int *n, const int64_t *const *l,
                                 conv_args *a);

/* The convolution's list and scalar arguments from argument `first` on
 * (stride, padding, dilation, transposed, output_padding, groups), for a
 * weight of wdim dims. */
static tt_status conv_args_read(tt_frame *f, int first, int wdim, conv_args *a)
{
    const int64_t *l[4];
    int n[4];
    tt_status st;
    if ((st = tt_arg_ints(f, first, &l[0], &n[0])) ||
        (st = tt_arg_ints(f, first + 1, &l[1], &n[1])) ||
        (st = tt_arg_ints(f, first + 2, &l[2], &n[2])) ||
        (st = tt_arg_bool(f, first + 3, &a->transposed)) ||
        (st = tt_arg_ints(f, first + 4, &l[3], &n[3])) ||
        (st = tt_arg_int(f, first + 5, &a->groups)))
        return st;
    a->nsp = 0;
    return conv_args_check(tt__op_label(tt__builtin_id(tt_frame_op(f))), wdim, n, l, a);
}

/* Checks the arguments (lists of n[i] values l[i]: stride, padding,
 * dilation, output_padding) for a weight of wdim dims and expands them
 * into a, with PyTorch's messages. */
static tt_status conv_args_check(const char *op, int wdim, const int *n, const int64_t *const *l,
                                 conv_args *a)
{
    tt_status st;
    if (wdim < 3)
        return tt_error(TT_ESHAPE, "%s: weight should have at least three dimensions", op);
    if (wdim > 4)
        return tt_error(TT_EINVAL, "%s: %d-d convolution is not supported (weight of %d "
                                   "dims); 1-d and 2-d are", op, wdim - 2, wdim);
    a->nsp = wdim - 2;
    if ((st = expand_param(op, "stride", a->nsp, n[0], l[0], a->stride)) ||
        (st = expand_param(op, "padding", a->nsp, n[1], l[1], a->pad)) ||
        (st = expand_param(op, "dilation", a->nsp, n[2], l[2], a->dil)) ||
        (st = expand_param(op, "output_padding", a->nsp, n[3], l[3], a->opad)))
        return st;
    for (int i = 0; i < a->nsp; i++) {
        if (a->stride[i] <= 0)
            return tt_error(TT_EINVAL, "%s: non-positive stride is not supported", op);
        if (a->pad[i] < 0)
            return tt_error(TT_EINVAL, "%s: negative padding is not supported", op);
        if (a->dil[i] <= 0)
            return tt_error(TT_EINVAL, "%s: non-positive dilation is not supported", op);
        if (a->opad[i] < 0)
            return tt_error(TT_EINVAL, "%s: negative output_padding is not supported", op);
    }
    if (a->groups <= 0)
        return tt_error(TT_EINVAL, "%s: non-positive groups is not supported", op);
    if (a->transposed)
        for (int i = 0; i < a->nsp; i++)
            if (a->opad[i] >= a->stride[i] && a->opad[i] >= a->dil[i])
                return tt_error(TT_EINVAL,
                                "%s: output padding must be smaller than either stride or "
                                "dilation, but got output_padding=%lld, stride=%lld, "
                                "dilation=%lld in spatial dim %d",
                                op, (long long)a->opad[i], (long long)a->stride[i],
                                (long long)a->dil[i], i);
    return TT_OK;
}

/* --------------------------------------------------------------- shapes */

/* Checks x, w, b against each other and a (PyTorch's check_shape_forward,
 * with its messages) and gives the user-facing output sizes (symbolic
 * where x's are). */
static tt_status conv_shape(const char *op, const tt_tensor *x, const tt_tensor *w,
                            const tt_tensor *b, const conv_args *a, tt_size *out)
{
    tt_status st;
    char s1[128], s2[128], s3[128];
    if ((st = want_float(op, "input", 1, x)))
        return st;
    if (tt_dtype_of(w) != tt_dtype_of(x))
        return tt_error(TT_EDTYPE, "%s: argument 'weight' (#2): expected scalar type %s "
                                   "(as input) but found %s", op,
                        tt_dtype_name(tt_dtype_of(x)), tt_dtype_name(tt_dtype_of(w)));
    if (b && tt_dtype_of(b) != tt_dtype_of(x))
        return tt_error(TT_EDTYPE, "%s: argument 'bias' (#3): input type (%s) and bias type "
                                   "(%s) should be the same", op,
                        tt_dtype_name(tt_dtype_of(x)), tt_dtype_name(tt_dtype_of(b)));
    int wd = tt_ndim(w), nsp = a->nsp;
    if (tt_ndim(x) != wd)
        return tt_error(TT_ESHAPE, "%s: Expected %d-dimensional input for %d-dimensional weight "
                                   "%s, but got %d-dimensional input of size %s instead", op,
                        wd, wd, tt_shape_str(w, s1, sizeof s1), tt_ndim(x),
                        tt_shape_str(x, s2, sizeof s2));
    const tt_size *xs = tt_sizes(x), *ws = tt_sizes(w);
    int64_t g = a->groups, w0 = tt_size_int(ws[0]), w1 = tt_size_int(ws[1]);
    if (w0 % g != 0)
        return tt_error(TT_ESHAPE, "%s: Given groups=%lld, expected weight to be divisible by "
                                   "%lld at dimension 0, but got weight of size %s instead", op,
                        (long long)g, (long long)g, tt_shape_str(w, s1, sizeof s1));
    int64_t want_c = a->transposed ? w0 : w1 * g;
    if (!tt_size_eq(xs[1], want_c)) {
        tt_size_str(xs[1], s3, sizeof s3);
        if (a->transposed)
            return tt_error(TT_ESHAPE, "%s: Given transposed=1, weight of size %s, expected "
                                       "input%s to have %lld channels, but got %s channels "
                                       "instead", op, tt_shape_str(w, s1, sizeof s1),
                            tt_shape_str(x, s2, sizeof s2), (long long)want_c, s3);
        return tt_error(TT_ESHAPE, "%s: Given groups=%lld, weight of size %s, expected input%s "
                                   "to have %lld channels, but got %s channels instead", op,
                        (long long)g, tt_shape_str(w, s1, sizeof s1),
                        tt_shape_str(x, s2, sizeof s2), (long long)want_c, s3);
    }
    int64_t oc = a->transposed ? w1 * g : w0;
    if (b && !(tt_ndim(b) == 1 && tt_size_eq(tt_sizes(b)[0], oc)))
        return tt_error(TT_ESHAPE, "%s: Given %sweight of size %s, expected bias to be "
                                   "1-dimensional with %lld elements, but got bias of size %s "
                                   "instead", op, a->transposed ? "transposed=1, " : "",
                        tt_shape_str(w, s1, sizeof s1), (long long)oc,
                        tt_shape_str(b, s2, sizeof s2));
    out[0] = xs[0];
    out[1] = oc;
    if (!a->transposed) {
        /* padded input >= dilated kernel, in every spatial dim */
        bool small = false;
        tt_size padded[2];
        int64_t dk[2];
        for (int i = 0; i < nsp; i++) {
            padded[i] = tt_sym_add(xs[2 + i], 2 * a->pad[i]);
            dk[i] = a->dil[i] * (tt_size_int(ws[2 + i]) - 1) + 1;
            small = small || tt_size_lt(padded[i], dk[i]);
        }
        if (small) {
            int k1 = 0, k2 = 0;
            for (int i = 0; i < nsp; i++) {
                char v[48];
                tt_size_str(padded[i], v, sizeof v);
                k1 += snprintf(s1 + k1, sizeof s1 - (size_t)k1, "%s%s", i ? " x " : "", v);
                k2 += snprintf(s2 + k2, sizeof s2 - (size_t)k2, "%s%lld", i ? " x " : "",
                               (long long)dk[i]);
            }
            return tt_error(TT_ESHAPE, "%s: Calculated padded input size per channel: (%s). "
                                       "Kernel size: (%s). Kernel size can't be greater than "
                                       "actual input size", op, s1, s2);
        }
        for (int i = 0; i < nsp; i++)
            out[2 + i] = tt_sym_add(tt_sym_floordiv(tt_sym_sub(padded[i], dk[i]), a->stride[i]), 1);
        return TT_OK;
    }
    /* transposed: (in - 1) s - 2 p + d (k - 1) + output_padding + 1 */
    bool small = false;
    for (int i = 0; i < nsp; i++) {
        int64_t extra = a->dil[i] * (tt_size_int(ws[2 + i]) - 1) + a->opad[i] + 1 - 2 * a->pad[i];
        out[2 + i] = tt_sym_add(tt_sym_mul(tt_sym_sub(xs[2 + i], 1), a->stride[i]), extra);
        small = small || tt_size_lt(out[2 + i], 1);
    }
    if (small)
        return tt_error(TT_ESHAPE, "%s: Given input size per channel %s and weight %s, the "
                                   "calculated output size %s is too small", op,
                        tt_size_list_str(nsp, xs + 2, false, s1, sizeof s1),
                        tt_shape_str(w, s2, sizeof s2),
                        tt_size_list_str(nsp, out + 2, false, s3, sizeof s3));
    return TT_OK;
}

/* The concrete geometry of a real call, in convolution sense (see the top
 * of the file): cx is the convolution's input, cy its output. */
static void geom_make(const conv_args *a, const tt_tensor *cx, const tt_tensor *w,
                      const tt_tensor *cy, conv_geom *g)
{
    memset(g, 0, sizeof *g);
    const tt_size *ws = tt_sizes(w);
    g->N = tt_sizes(cx)[0];
    g->C = tt_sizes(cx)[1];
    g->O = tt_sizes(cy)[1];
    g->G = a->groups;
    for (int i = 0; i < 2; i++) {
        int j = i - (2 - a->nsp); /* spatial index of the call; <0: the unit height */
        bool unit = j < 0;
        g->in[i] = unit ? 1 : tt_sizes(cx)[2 + j];
        g->out[i] = unit ? 1 : tt_sizes(cy)[2 + j];
        g->k[i] = unit ? 1 : ws[2 + j];
        g->s[i] = unit ? 1 : a->stride[j];
        g->p[i] = unit ? 0 : a->pad[j];
        g->d[i] = unit ? 1 : a->dil[j];
    }
}

static bool contiguous_by_guards(const tt_tensor *t)
{
    /* tt_is_contiguous with a symbolic size that is 1 by its example value
     * (a pooled height of 1) decided as is_channels_last below decides it:
     * through a guard. Without it one such dim of an input made it channels
     * last in a symbolic trace and contiguous in eager (FINDINGS F28). */
    const tt_size *s = tt_sizes(t), *st = tt_strides(t);
    tt_size want = 1;
    for (int d = tt_ndim(t) - 1; d >= 0; d--) {
        if (!tt_size_eq(s[d], 1) && !tt_size_eq(st[d], want))
            return false;
        want = tt_sym_mul(want, s[d]);
    }
    return true;
}

/* PyTorch (1.13, CPU) gives a channels_last output when the input or the
 * weight is channels_last (and not also contiguous), for a 2-d
 * non-transposed convolution; otherwise a contiguous one. */
static bool is_channels_last(const tt_tensor *t)
{
    if (tt_ndim(t) != 4 || tt_is_contiguous(t) || contiguous_by_guards(t))
        return false;
    const tt_size *s = tt_sizes(t), *st = tt_strides(t);
    tt_size want = 1;
    static const int order[4] = {1, 3, 2, 0};
    for (int i = 0; i < 4; i++) {
        int d = order[i];
        if (!tt_size_eq(s[d], 1) && !tt_size_eq(st[d], want))
            return false;
        want = tt_sym_mul(want, s[d]);
    }
    return true;
}

static void channels_last_strides(const tt_size *s, tt_size *st)
{
    st[1] = 1;
    st[3] = s[1];
    st[2] = tt_sym_mul(s[3], s[1]);
    st[0] = tt_sym_mul(s[2], st[2]);
}

/* A new output of sizes s (4-d when cl may apply), channels_last when cl. */
static tt_tensor *new_out(bool fake, int nd, const tt_size *s, bool cl, tt_dtype dt)
{
    tt_size st[4];
    if (cl && nd == 4)
        channels_last_strides(s, st);
    return tt__ops_new(fake, nd, s, cl && nd == 4 ? st : NULL, dt);
}

/* Copies a contiguous result into out (which may be channels_last). */
static tt_status fill_from(tt_tensor *out, tt_tensor *contig_res)
{
    if (tt__ptr(out) == tt__ptr(contig_res))
        return TT_OK;
    return tt_copy_(out, contig_res);
}

/* ---------------------------------------------------------- the forward */

/* The forward in convolution sense or transposed, on real data: fills y
 * (sizes already right, any layout). */
static tt_status conv_compute(const conv_args *a, const tt_tensor *x, const tt_tensor *w,
                              const tt_tensor *b, const tt_tensor *scale, bool relu,
                              tt_tensor *y)
{
    tt_status st = TT_OK;
    tt_tensor *xc = contig(x), *wc = contig(w), *bc = b ? contig(b) : NULL;
    tt_tensor *yc = tt_is_contiguous(y) ? tt_retain(y)
                                        : tt__ops_new(false, tt_ndim(y), tt_sizes(y), NULL,
                                                      tt_dtype_of(y));
    if (!xc || !wc || (b && !bc) || !yc) {
        st = tt_errcode();
        goto out;
    }
    conv_geom g;
    if (!a->transposed) {
        geom_make(a, x, w, y, &g);
        st = conv_fwd(&g, tt_dtype_of(x), tt__ptr(xc), tt__ptr(wc), tt__ptr(yc));
    } else {
        geom_make(a, y, w, x, &g);
        st = conv_bwd_data(&g, tt_dtype_of(x), tt__ptr(xc), tt__ptr(wc), tt__ptr(yc));
    }
    if (!st && (bc || scale || relu)) {
        int64_t n = tt_sizes(y)[0], c = tt_sizes(y)[1];
        conv_add_bias(tt_dtype_of(x), tt__ptr(yc), scale ? tt__ptr(scale) : NULL,
                      bc ? tt__ptr(bc) : NULL, relu, n, c,
                      n * c != 0 ? tt_numel(y) / (n * c) : 0);
    }
    if (!st)
        st = fill_from(y, yc);
out:
    tt_release(xc);
    tt_release(wc);
    tt_release(bc);
    tt_release(yc);
    return st;
}

/* scale: NULL, or a contiguous [O] the output is multiplied by per channel
 * before the bias is added (a folded batch norm); relu: then ReLU. */
static tt_tensor *convolution(const tt_tensor *x, const tt_tensor *w, const tt_tensor *b,
                              const conv_args *a, const tt_tensor *scale, bool relu, bool fake)
{
    tt_size os[4];
    if (conv_shape(OP_CONV, x, w, b, a, os))
        return NULL;
    fake = fake || is_fake(x) || is_fake(w) || is_fake(b);
    bool cl = !a->transposed && (is_channels_last(x) || is_channels_last(w));
    tt_tensor *y = new_out(fake, tt_ndim(x), os, cl, tt_dtype_of(x));
    if (!y || fake)
        return y;
    if (tt_numel(y) == 0)
        return y;
    if (conv_compute(a, x, w, b, scale, relu, y))
        return tt_release(y);
    return y;
}

static tt_status convolution_kernel(tt_frame *f)
{
    tt_tensor *x, *w, *b;
    conv_args a;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &x)) || (st = tt_arg_tensor(f, 1, &w)) ||
        (st = tt_arg_tensor(f, 2, &b)) || (st = conv_args_read(f, 3, tt_ndim(w), &a)))
        return st;
    tt_tensor *y = convolution(x, w, b, &a, NULL, false, tt_frame_is_fake(f));
    return y ? tt_return(f, 0, y) : tt_errcode();
}

/* ------------------------------------------- the fused forward (plans) */

/* tt::_convolution_pointwise: convolution, then optionally batch norm in
 * inference form, then optionally ReLU, as one op. Compiled plans put it
 * in place of those ops (tracer/passes.c, tt__pass_fuse_conv), as
 * Inductor puts mkldnn::_convolution_pointwise; it is not meant to be
 * called directly, and has no derivative (plans run without autograd).
 *
 * The batch norm is folded into the convolution's output pass: with s =
 * gamma / sqrt(var + eps), BN(y + b) = y * s + ((b - mean) * s + beta), a
 * per-channel scale and shift that the bias pass applies, with the ReLU,
 * in one pass over the output. PyTorch's fuse_conv_bn_eval folds s into
 * the weights instead, once, for frozen weights; here the weights are the
 * plan's inputs and may change between calls, and folding them each call
 * cost more than the passes it saved (ResNet-18 has 11M weights and, at
 * batch 32 of 32x32 images, fewer activations). */
static tt_status bn_scale_shift(const tt_tensor *b, tt_tensor *const bn[4], double eps,
                                int64_t o, tt_dtype dt, tt_tensor **scale, tt_tensor **shift)
{
    *scale = tt__ops_new(false, 1, &o, NULL, dt);
    *shift = *scale ? tt__ops_new(false, 1, &o, NULL, dt) : NULL;
    tt_tensor *bc = b ? contig(b) : NULL, *p[4] = {0};
    bool ok = *shift && (!b || bc);
    for (int i = 0; i < 4; i++)
        if (bn[i] && !(p[i] = contig(bn[i])))
            ok = false;
    size_t es = tt_dtype_size(dt);
    for (int64_t k = 0; ok && k < o; k++) {
        double gamma = p[0] ? tt__load((const char *)tt__ptr(p[0]) + k * es, dt) : 1;
        double beta = p[1] ? tt__load((const char *)tt__ptr(p[1]) + k * es, dt) : 0;
        double mean = tt__load((const char *)tt__ptr(p[2]) + k * es, dt);
        double var = tt__load((const char *)tt__ptr(p[3]) + k * es, dt);
        double bias = bc ? tt__load((const char *)tt__ptr(bc) + k * es, dt) : 0;
        double s = gamma / sqrt(var + eps);
        tt__store((char *)tt__ptr(*scale) + k * es, dt, s);
        tt__store((char *)tt__ptr(*shift) + k * es, dt, (bias - mean) * s + beta);
    }
    tt_release(bc);
    for (int i = 0; i < 4; i++)
        tt_release(p[i]);
    if (!ok) {
        *scale = tt_release(*scale);
        *shift = tt_release(*shift);
        return tt_errcode();
    }
    return TT_OK;
}

static tt_status conv_pointwise_kernel(tt_frame *f)
{
    const char *op = tt__op_label(TT_OP__CONVOLUTION_POINTWISE);
    tt_tensor *x, *w, *b, *bn[4];
    const int64_t *l[4] = {NULL, NULL, NULL, (const int64_t[]){0}};
    int n[4] = {0, 0, 0, 1};
    double eps;
    const char *attr;
    conv_args a = {.transposed = false};
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &x)) || (st = tt_arg_tensor(f, 1, &w)) ||
        (st = tt_arg_tensor(f, 2, &b)) || (st = tt_arg_ints(f, 3, &l[0], &n[0])) ||
        (st = tt_arg_ints(f, 4, &l[1], &n[1])) || (st = tt_arg_ints(f, 5, &l[2], &n[2])) ||
        (st = tt_arg_int(f, 6, &a.groups)))
        return st;
    for (int i = 0; i < 4; i++)
        if ((st = tt_arg_tensor(f, 7 + i, &bn[i])))
            return st;
    if ((st = tt_arg_float(f, 11, &eps)) || (st = tt_arg_str(f, 12, &attr)) ||
        (st = conv_args_check(op, tt_ndim(w), n, l, &a)))
        return st;
    bool relu = strcmp(attr, "relu") == 0;
    if (!relu && strcmp(attr, "none") != 0)
        return tt_error(TT_EINVAL, "%s: argument 'attr' (#13) is '%s'; expected 'none' or "
                                   "'relu'", op, attr);
    bool has_bn = bn[2] || bn[3];
    if (has_bn && !(bn[2] && bn[3]))
        return tt_error(TT_EINVAL, "%s: a batch norm needs both bn_running_mean (#10) and "
                                   "bn_running_var (#11)", op);
    for (int i = 0; i < 4; i++)
        if (bn[i] && (tt_dtype_of(bn[i]) != tt_dtype_of(x) || tt_ndim(bn[i]) != 1 ||
                      !tt_size_eq(tt_sizes(bn[i])[0], tt_sizes(w)[0])))
            return tt_error(TT_EINVAL, "%s: argument #%d: expected a [%lld] %s tensor (one "
                                       "per output channel)", op, 8 + i,
                            (long long)tt_size_int(tt_sizes(w)[0]),
                            tt_dtype_name(tt_dtype_of(x)));
    bool fake = tt_frame_is_fake(f) || is_fake(x) || is_fake(w) || is_fake(b);
    for (int i = 0; i < 4; i++)
        fake = fake || is_fake(bn[i]);
    tt_tensor *scale = NULL, *shift = NULL;
    if (has_bn && !fake &&
        (st = bn_scale_shift(b, bn, eps, tt_size_int(tt_sizes(w)[0]), tt_dtype_of(x), &scale,
                             &shift)))
        return st;
    tt_tensor *y = convolution(x, w, shift ? shift : b, &a, scale, relu, fake);
    tt_release(scale);
    tt_release(shift);
    return y ? tt_return(f, 0, y) : tt_errcode();
}

/* --------------------------------------------------------- the backward */

/* A masked-out result of convolution_backward: PyTorch returns an undefined
 * tensor (None); a tt op's Tensor result cannot be None, so it is an empty
 * [0] tensor of the input's dtype, never computed. */
static tt_tensor *masked_out(bool fake, tt_dtype dt)
{
    tt_size z = 0;
    return tt__ops_new(fake, 1, &z, NULL, dt);
}

/* tt::convolution_backward(grad_output, input, weight, bias_sizes?, stride,
 * padding, dilation, transposed, output_padding, groups, output_mask) ->
 * (grad_input, grad_weight, grad_bias). */
static tt_status convolution_backward_kernel(tt_frame *f)
{
    tt_tensor *gy, *x, *w;
    conv_args a;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &gy)) || (st = tt_arg_tensor(f, 1, &x)) ||
        (st = tt_arg_tensor(f, 2, &w)) || (st = conv_args_read(f, 4, tt_ndim(w), &a)))
        return st;
    const char *op = tt__op_label(TT_OP_CONVOLUTION_BACKWARD);
    const tt_value *mv = tt_frame_arg(f, 10);
    if (!mv || mv->kind != TT_V_BOOLS || mv->n != 3)
        return tt_error(TT_EINVAL, "%s: argument 'output_mask' (#11) expects bool[3]", op);
    bool mask[3] = {mv->u.bools[0], mv->u.bools[1], mv->u.bools[2]};
    bool has_bias = !tt_arg_is_none(f, 3);
    tt_size ys[4];
    if ((st = conv_shape(op, x, w, NULL, &a, ys)))
        return st;
    if ((st = want_sizes(op, "grad_output", 1, gy, tt_ndim(x), ys)) ||
        (st = want_same_dtype(op, "grad_output", 1, gy, x)))
        return st;
    if (has_bias) {
        const int64_t *bs;
        int nb;
        if ((st = tt_arg_ints(f, 3, &bs, &nb)))
            return st;
        if (nb != 1 || !tt_size_eq(bs[0], ys[1]))
            return tt_error(TT_ESHAPE, "%s: argument 'bias_sizes' (#4): expected [%lld], the "
                                       "output channels", op, (long long)tt_sym_hint(ys[1]));
    }
    bool fake = tt_frame_is_fake(f) || is_fake(gy) || is_fake(x) || is_fake(w);
    tt_dtype dt = tt_dtype_of(x);
    bool cl = !a.transposed && (is_channels_last(x) || is_channels_last(w));
    tt_size bsz = ys[1];
    tt_tensor *outs[3] = {
        mask[0] ? new_out(fake, tt_ndim(x), tt_sizes(x), cl, dt) : masked_out(fake, dt),
        mask[1] ? new_out(fake, tt_ndim(w), tt_sizes(w), cl, dt) : masked_out(fake, dt),
        mask[2] ? tt__ops_new(fake, 1, &bsz, NULL, dt) : masked_out(fake, dt)};
    tt_tensor *xc = NULL, *wc = NULL, *gc = NULL, *tmp[2] = {NULL, NULL};
    if (!outs[0] || !outs[1] || !outs[2]) {
        st = tt_errcode();
        goto out;
    }
    if (fake)
        goto out;
    xc = contig(x), wc = contig(w), gc = contig(gy);
    if (!xc || !wc || !gc) {
        st = tt_errcode();
        goto out;
    }
    for (int i = 0; i < 2; i++)
        if (mask[i] && !tt_is_contiguous(outs[i]) &&
            !(tmp[i] = tt__ops_new(false, tt_ndim(outs[i]), tt_sizes(outs[i]), NULL, dt))) {
            st = tt_errcode();
            goto out;
        }
    char *dx = mask[0] ? tt__ptr(tmp[0] ? tmp[0] : outs[0]) : NULL;
    char *dw = mask[1] ? tt__ptr(tmp[1] ? tmp[1] : outs[1]) : NULL;
    conv_geom g;
    if (!a.transposed) {
        geom_make(&a, x, w, gy, &g);
        if (dx)
            st = conv_bwd_data(&g, dt, tt__ptr(gc), tt__ptr(wc), dx);
        if (!st && dw)
            st = conv_bwd_weight(&g, dt, tt__ptr(xc), tt__ptr(gc), dw);
    } else {
        /* x is the convolution's output, gy its input */
        geom_make(&a, gy, w, x, &g);
        if (dx)
            st = conv_fwd(&g, dt, tt__ptr(gc), tt__ptr(wc), dx);
        if (!st && dw)
            st = conv_bwd_weight(&g, dt, tt__ptr(gc), tt__ptr(xc), dw);
    }
    if (!st && mask[2]) {
        int64_t n = tt_sizes(gy)[0], c = tt_sizes(gy)[1];
        conv_bias_grad(dt, tt__ptr(gc), tt__ptr(outs[2]), n, c,
                       n * c != 0 ? tt_numel(gy) / (n * c) : 0);
    }
    for (int i = 0; i < 2 && !st; i++)
        if (tmp[i])
            st = tt_copy_(outs[i], tmp[i]);
out:
    tt_release(xc);
    tt_release(wc);
    tt_release(gc);
    tt_release(tmp[0]);
    tt_release(tmp[1]);
    return return3(f, st, outs);
}

static tt_status setup_convolution(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                                   const tt_value *out, int nout)
{
    (void)nin, (void)out, (void)nout;
    tt_status st = tt_ctx_save_for_backward(ctx, 2, (tt_tensor *[]){in[0].u.t, in[1].u.t});
    static const char *const lists[4] = {"stride", "padding", "dilation", "output_padding"};
    static const int at[4] = {3, 4, 5, 7};
    for (int i = 0; i < 4 && !st; i++)
        st = tt_ctx_save_ints(ctx, lists[i], in[at[i]].n, in[at[i]].u.ints);
    if (!st)
        st = tt_ctx_save_int(ctx, "transposed", in[6].u.b);
    if (!st)
        st = tt_ctx_save_int(ctx, "groups", in[8].u.i);
    if (!st)
        st = tt_ctx_save_int(ctx, "bias", in[2].kind == TT_V_TENSOR);
    return st;
}

/* d/d(input, weight, bias) is one convolution_backward call, as PyTorch's
 * derivatives.yaml; convolution_backward itself has no derivative here
 * (double backward through a convolution is refused, naming the op). */
static tt_status convolution_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                      tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    const int64_t *l[4];
    int n[4];
    int64_t transposed, groups, bias;
    static const char *const lists[4] = {"stride", "padding", "dilation", "output_padding"};
    tt_status st = TT_OK;
    for (int i = 0; i < 4 && !st; i++)
        st = tt_ctx_get_ints(ctx, lists[i], &l[i], &n[i]);
    if (st || (st = tt_ctx_get_int(ctx, "transposed", &transposed)) ||
        (st = tt_ctx_get_int(ctx, "groups", &groups)) || (st = tt_ctx_get_int(ctx, "bias", &bias)))
        return st;
    tt_tensor *x = tt_ctx_saved(ctx, 0), *w = tt_ctx_saved(ctx, 1);
    int sx = tt_ctx_input_slot(ctx, 0), sw = tt_ctx_input_slot(ctx, 1);
    int sb = bias ? tt_ctx_input_slot(ctx, 2) : -1;
    bool mask[3] = {sx >= 0 && tt_ctx_needs_input_grad(ctx, sx),
                    sw >= 0 && tt_ctx_needs_input_grad(ctx, sw),
                    sb >= 0 && tt_ctx_needs_input_grad(ctx, sb)};
    tt_size oc = tt_sizes(g[0])[1];
    tt_value outs[3] = {tt_v_none(), tt_v_none(), tt_v_none()};
    st = tt_op_call(tt__op(TT_OP_CONVOLUTION_BACKWARD),
                    TT_ARGS(tt_v_tensor(g[0]), tt_v_tensor(x), tt_v_tensor(w),
                            bias ? tt_v_ints(1, &oc) : tt_v_none(), tt_v_ints(n[0], l[0]),
                            tt_v_ints(n[1], l[1]), tt_v_ints(n[2], l[2]),
                            tt_v_bool(transposed != 0), tt_v_ints(n[3], l[3]),
                            tt_v_int(groups), tt_v_bools(3, mask)),
                    outs, 3);
    if (st)
        return st;
    put_grads3(ctx, gi, outs, (int[]){0, 1, bias ? 2 : -1});
    return TT_OK;
}

/* ------------------------------------------------------ im2col, col2im */

/* The geometry of im2col/col2im from kernel_size, dilation, padding and
 * stride (two values each, argument numbers from argno on), checked as
 * PyTorch checks them. */
static tt_status unfold_geom(const char *op, const int64_t *const v[4], int argno, conv_geom *g)
{
    static const char *const names[4] = {"kernel_size", "dilation", "padding", "stride"};
    memset(g, 0, sizeof *g);
    int64_t *out[4] = {g->k, g->d, g->p, g->s};
    for (int a = 0; a < 4; a++) {
        int64_t min = a == 2 ? 0 : 1;
        if (v[a][0] < min || v[a][1] < min)
            return tt_error(TT_EINVAL, "%s: argument '%s' (#%d): %s should be %s than zero, "
                                       "but got %s_height: %lld %s_width: %lld", op, names[a],
                            argno + a, names[a], min ? "greater" : "greater or equal", names[a],
                            (long long)v[a][0], names[a], (long long)v[a][1]);
        out[a][0] = v[a][0], out[a][1] = v[a][1];
    }
    g->G = 1;
    return TT_OK;
}

/* Reads the four pairs of a frame from argument `first` on. */
static tt_status unfold_args(tt_frame *f, int first, const char *op, conv_geom *g)
{
    static const char *const names[4] = {"kernel_size", "dilation", "padding", "stride"};
    const int64_t *v[4];
    for (int a = 0; a < 4; a++) {
        int n;
        tt_status st = tt_arg_ints(f, first + a, &v[a], &n);
        if (st)
            return st;
        if (n != 2)
            return tt_error(TT_EINVAL, "%s: argument '%s' (#%d): expected 2 values, got %d", op,
                            names[a], first + a + 1, n);
    }
    return unfold_geom(op, v, first + 1, g);
}

/* Output spatial size of a sliding window; false when it is not positive. */
static bool unfold_out(const conv_geom *g, const tt_size *in, tt_size *out)
{
    bool ok = true;
    for (int i = 0; i < 2; i++) {
        int64_t dk = g->d[i] * (g->k[i] - 1) + 1;
        out[i] = tt_sym_add(tt_sym_floordiv(tt_sym_sub(tt_sym_add(in[i], 2 * g->p[i]), dk),
                                            g->s[i]), 1);
        ok = ok && !tt_size_lt(out[i], 1);
    }
    return ok;
}

/* tt::im2col(self [N, C, H, W] or [C, H, W], ...) -> [N, C kh kw, L]: the
 * sliding blocks of self as columns (F.unfold). */
static tt_tensor *im2col(const tt_tensor *x, conv_geom *g, bool fake)
{
    const char *op = tt__op_label(TT_OP_IM2COL);
    if (want_float(op, "self", 1, x))
        return NULL;
    int nd = tt_ndim(x);
    char s1[128];
    if (nd != 3 && nd != 4) {
        tt_error(TT_ESHAPE, "%s: Expected 3D or 4D (batch mode) tensor for input with possibly 0 "
                            "batch size and non-zero dimensions for input, but got: %s", op,
                 tt_shape_str(x, s1, sizeof s1));
        return NULL;
    }
    const tt_size *xs = tt_sizes(x) + (nd - 3);
    tt_size o[2];
    if (!unfold_out(g, xs + 1, o)) {
        char s2[64];
        tt_error(TT_ESHAPE, "%s: Given input with spatial size (%s), kernel_size=(%lld, %lld), "
                            "dilation=(%lld, %lld), padding=(%lld, %lld), calculated shape of "
                            "the array of sliding blocks as %s, but its components must be at "
                            "least one.", op, tt_size_list_str(2, xs + 1, false, s1, sizeof s1),
                 (long long)g->k[0], (long long)g->k[1], (long long)g->d[0], (long long)g->d[1],
                 (long long)g->p[0], (long long)g->p[1],
                 tt_size_list_str(2, o, false, s2, sizeof s2));
        return NULL;
    }
    tt_size os[3] = {nd == 4 ? tt_sizes(x)[0] : 1, tt_sym_mul(xs[0], g->k[0] * g->k[1]),
                     tt_sym_mul(o[0], o[1])};
    fake = fake || is_fake(x);
    tt_tensor *y = tt__ops_new(fake, nd - 1, nd == 4 ? os : os + 1, NULL, tt_dtype_of(x));
    if (!y || fake || tt_numel(y) == 0)
        return y;
    tt_tensor *xc = contig(x);
    if (!xc)
        return tt_release(y);
    g->N = os[0], g->C = xs[0], g->in[0] = xs[1], g->in[1] = xs[2];
    g->out[0] = o[0], g->out[1] = o[1];
    conv_im2col_batch(g, tt_dtype_of(x), tt__ptr(xc), tt__ptr(y));
    tt_release(xc);
    return y;
}

static tt_status im2col_kernel(tt_frame *f)
{
    tt_tensor *x;
    conv_geom g;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &x)) ||
        (st = unfold_args(f, 1, tt__op_label(TT_OP_IM2COL), &g)))
        return st;
    tt_tensor *y = im2col(x, &g, tt_frame_is_fake(f));
    return y ? tt_return(f, 0, y) : tt_errcode();
}

/* tt::col2im(self [N, C kh kw, L] or [C kh kw, L], output_size, ...) ->
 * [N, C, H, W]: sums the columns back into the image (F.fold). */
static tt_tensor *col2im(const tt_tensor *x, const tt_size *osz, conv_geom *g, bool fake)
{
    const char *op = tt__op_label(TT_OP_COL2IM);
    if (want_float(op, "self", 1, x))
        return NULL;
    char s1[128], s2[64], s3[64];
    int nd = tt_ndim(x);
    if (nd != 2 && nd != 3) {
        tt_error(TT_ESHAPE, "%s: Expected 2D or 3D (batch mode) tensor for input with possibly 0 "
                            "batch size and non-zero dimensions for input, but got: %s", op,
                 tt_shape_str(x, s1, sizeof s1));
        return NULL;
    }
    const tt_size *xs = tt_sizes(x) + (nd - 2);
    int64_t kk = g->k[0] * g->k[1];
    if (!tt_size_eq(tt_sym_mod(xs[0], kk), 0)) {
        tt_size_str(xs[0], s2, sizeof s2);
        tt_error(TT_ESHAPE, "%s: Expected size of input's dimension 1 to be divisible by the "
                            "product of kernel_size, but got input.size(1)=%s and "
                            "kernel_size=(%lld, %lld)", op, s2, (long long)g->k[0],
                 (long long)g->k[1]);
        return NULL;
    }
    tt_size o[2];
    bool ok = unfold_out(g, osz, o);
    if (!ok || !tt_size_eq(tt_sym_mul(o[0], o[1]), xs[1])) {
        tt_size_str(xs[1], s2, sizeof s2);
        tt_error(TT_ESHAPE, "%s: Given output_size=%s, kernel_size=(%lld, %lld), "
                            "dilation=(%lld, %lld), padding=(%lld, %lld), stride=(%lld, %lld), "
                            "expected size of input's dimension 2 to match the calculated "
                            "number of sliding blocks %s, but got input.size(2)=%s.", op,
                 tt_size_list_str(2, osz, false, s3, sizeof s3), (long long)g->k[0],
                 (long long)g->k[1], (long long)g->d[0], (long long)g->d[1], (long long)g->p[0],
                 (long long)g->p[1], (long long)g->s[0], (long long)g->s[1],
                 tt_size_list_str(2, o, false, s1, sizeof s1), s2);
        return NULL;
    }
    tt_size os[4] = {nd == 3 ? tt_sizes(x)[0] : 1, tt_sym_floordiv(xs[0], kk), osz[0], osz[1]};
    fake = fake || is_fake(x);
    tt_tensor *y = tt__ops_new(fake, nd + 1, nd == 3 ? os : os + 1, NULL, tt_dtype_of(x));
    if (!y || fake || tt_numel(y) == 0)
        return y;
    tt_tensor *xc = contig(x);
    if (!xc)
        return tt_release(y);
    g->N = os[0], g->C = os[1], g->in[0] = osz[0], g->in[1] = osz[1];
    g->out[0] = o[0], g->out[1] = o[1];
    conv_col2im_batch(g, tt_dtype_of(x), tt__ptr(xc), tt__ptr(y));
    tt_release(xc);
    return y;
}

static tt_status col2im_kernel(tt_frame *f)
{
    tt_tensor *x;
    conv_geom g;
    const int64_t *osz;
    int nosz;
    tt_status st;
    const char *op = tt__op_label(TT_OP_COL2IM);
    if ((st = tt_arg_tensor(f, 0, &x)) || (st = tt_arg_ints(f, 1, &osz, &nosz)))
        return st;
    if (nosz != 2)
        return tt_error(TT_EINVAL, "%s: argument 'output_size' (#2): expected 2 values, got %d",
                        op, nosz);
    if ((st = unfold_args(f, 2, op, &g)))
        return st;
    tt_tensor *y = col2im(x, osz, &g, tt_frame_is_fake(f));
    return y ? tt_return(f, 0, y) : tt_errcode();
}

static tt_status setup_unfold(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                              const tt_value *out, int nout)
{
    (void)out, (void)nout;
    tt_status st = TT_OK;
    /* im2col: k d p s at 1..4, and the input's spatial size; col2im: the
     * same from 2..5 */
    bool fold = nin == 6;
    static const char *const names[4] = {"kernel_size", "dilation", "padding", "stride"};
    for (int i = 0; i < 4 && !st; i++)
        st = tt_ctx_save_ints(ctx, names[i], 2, in[i + 1 + fold].u.ints);
    if (!st && !fold) {
        const tt_tensor *x = in[0].u.t;
        st = tt_ctx_save_ints(ctx, "input_size", 2, tt_sizes(x) + tt_ndim(x) - 2);
    }
    return st;
}

/* im2col and col2im are each other's adjoint. */
static tt_status unfold_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                 tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    const int64_t *v[5];
    int n;
    static const char *const names[4] = {"kernel_size", "dilation", "padding", "stride"};
    tt_status st = TT_OK;
    for (int i = 0; i < 4 && !st; i++)
        st = tt_ctx_get_ints(ctx, names[i], &v[i], &n);
    if (st)
        return st;
    bool fold = tt_ctx_userdata(ctx) != 0;
    tt_tensor *r;
    if (fold)
        r = tt__call_op_as_caller(TT_OP_IM2COL, TT_ARGS(tt_v_tensor(g[0]), tt_v_ints(2, v[0]),
                                                        tt_v_ints(2, v[1]), tt_v_ints(2, v[2]),
                                                        tt_v_ints(2, v[3])));
    else {
        if ((st = tt_ctx_get_ints(ctx, "input_size", &v[4], &n)))
            return st;
        r = tt__call_op_as_caller(TT_OP_COL2IM,
                                  TT_ARGS(tt_v_tensor(g[0]), tt_v_ints(2, v[4]),
                                          tt_v_ints(2, v[0]), tt_v_ints(2, v[1]),
                                          tt_v_ints(2, v[2]), tt_v_ints(2, v[3])));
    }
    return tt__put_grad(ctx, gi, 0, r);
}

#undef TT__FAMILY_CONV
#define TT__FAMILY_CONV TT__ROW
static const tt__builtin_row rows[] = {TT__FAMILY_ROWS};

tt_status tt__register_conv(tt_library *lib)
{
    return TT__DEFINE_ROWS(lib, rows);
}

/* ---------------------------------------------------------- typed wrappers */

/* PyTorch's F.conv1d / F.conv2d / conv_transpose*d argument forms: zero
 * fields are the defaults; an unbatched input gets a batch of one around
 * the call, as F.conv2d does. */
static tt_tensor *conv_nd(const char *fn, int nsp, const tt_tensor *x, const tt_tensor *w,
                          const tt_tensor *b, const tt_conv_opts *o)
{
    tt_status st;
    if ((st = TT_CHECK_TENSOR(fn, "x", x)) || (st = TT_CHECK_TENSOR(fn, "w", w)) ||
        (b && (st = TT_CHECK_TENSOR(fn, "b", b))))
        return NULL;
    static const tt_conv_opts d;
    if (!o)
        o = &d;
    int64_t s[2], p[2], dl[2], op[2];
    for (int i = 0; i < nsp; i++) {
        s[i] = o->stride[i] ? o->stride[i] : 1;
        p[i] = o->padding[i];
        dl[i] = o->dilation[i] ? o->dilation[i] : 1;
        op[i] = o->output_padding[i];
    }
    int64_t groups = o->groups ? o->groups : 1;
    int xd = tt_ndim(x);
    if (xd != nsp + 1 && xd != nsp + 2) {
        char buf[128];
        tt_error(TT_ESHAPE, "%s: Expected %dD (unbatched) or %dD (batched) input to %s, but got "
                            "input of size: %s", fn, nsp + 1, nsp + 2,
                 nsp == 1 ? "conv1d" : "conv2d", tt_shape_str(x, buf, sizeof buf));
        return NULL;
    }
    tt_tensor *xb = NULL;
    if (xd == nsp + 1 && !(xb = tt_unsqueeze(x, 0)))
        return NULL;
    const tt_tensor *xin = xb ? xb : x;
    tt_tensor *y;
    conv_args a = {.transposed = o->transposed, .groups = groups};
    const int ns[4] = {nsp, nsp, nsp, nsp};
    if (tt_ndim(w) == nsp + 2 && tt__fast_path(TT_OP_CONVOLUTION, b ? 3 : 2,
                                                (const tt_tensor *[]){xin, w, b}))
        y = conv_args_check(OP_CONV, tt_ndim(w), ns, (const int64_t *const[]){s, p, dl, op}, &a)
                ? NULL
                : convolution(xin, w, b, &a, NULL, false, false);
    else
        y = tt__call_op(TT_OP_CONVOLUTION,
                        TT_ARGS(tt_v_tensor(xin), tt_v_tensor(w),
                                b ? tt_v_tensor(b) : tt_v_none(), tt_v_ints(nsp, s),
                                tt_v_ints(nsp, p), tt_v_ints(nsp, dl), tt_v_bool(o->transposed),
                                tt_v_ints(nsp, op), tt_v_int(groups)));
    if (xb) {
        tt_release(xb);
        if (y) {
            tt_tensor *sq = tt_squeeze(y, 0);
            tt_release(y);
            y = sq;
        }
    }
    return y;
}

tt_tensor *tt_conv2d(const tt_tensor *x, const tt_tensor *w, const tt_tensor *b,
                     const tt_conv_opts *opts)
{
    return conv_nd("tt_conv2d", 2, x, w, b, opts);
}

tt_tensor *tt_conv1d(const tt_tensor *x, const tt_tensor *w, const tt_tensor *b,
                     const tt_conv_opts *opts)
{
    return conv_nd("tt_conv1d", 1, x, w, b, opts);
}

/* The pairs of tt_im2col / tt_col2im must be there: NULL is no default. */
static bool pairs_given(const char *fn, int n, const int64_t *const *v, const char *const *names)
{
    for (int i = 0; i < n; i++)
        if (!v[i]) {
            tt_error(TT_EINVAL, "%s: argument '%s' is NULL (expected 2 values)", fn, names[i]);
            return false;
        }
    return true;
}

tt_tensor *tt_im2col(const tt_tensor *x, const int64_t kernel_size[2], const int64_t dilation[2],
                     const int64_t padding[2], const int64_t stride[2])
{
    if (!pairs_given("tt_im2col", 4,
                     (const int64_t *const[]){kernel_size, dilation, padding, stride},
                     (const char *const[]){"kernel_size", "dilation", "padding", "stride"}))
        return NULL;
    conv_geom g;
    if (x && tt__fast_path(TT_OP_IM2COL, 1, &x))
        return unfold_geom(tt__op_label(TT_OP_IM2COL),
                           (const int64_t *const[]){kernel_size, dilation, padding, stride}, 2,
                           &g)
                   ? NULL
                   : im2col(x, &g, false);
    return tt__call_op(TT_OP_IM2COL,
                       TT_ARGS(tt_v_tensor(x), tt_v_ints(2, kernel_size), tt_v_ints(2, dilation),
                               tt_v_ints(2, padding), tt_v_ints(2, stride)));
}

tt_tensor *tt_col2im(const tt_tensor *x, const int64_t output_size[2],
                     const int64_t kernel_size[2], const int64_t dilation[2],
                     const int64_t padding[2], const int64_t stride[2])
{
    if (!pairs_given("tt_col2im", 5,
                     (const int64_t *const[]){output_size, kernel_size, dilation, padding,
                                              stride},
                     (const char *const[]){"output_size", "kernel_size", "dilation", "padding",
                                           "stride"}))
        return NULL;
    conv_geom g;
    if (x && tt__fast_path(TT_OP_COL2IM, 1, &x))
        return unfold_geom(tt__op_label(TT_OP_COL2IM),
                           (const int64_t *const[]){kernel_size, dilation, padding, stride}, 3,
                           &g)
                   ? NULL
                   : col2im(x, output_size, &g, false);
    return tt__call_op(TT_OP_COL2IM,
                       TT_ARGS(tt_v_tensor(x), tt_v_ints(2, output_size),
                               tt_v_ints(2, kernel_size), tt_v_ints(2, dilation),
                               tt_v_ints(2, padding), tt_v_ints(2, stride)));
}
