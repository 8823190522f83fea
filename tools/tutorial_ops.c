/* The tutorial's custom ops (see tutorial_ops.h). They follow the README's
 * "Writing a custom op", with one difference:
 * size checks go through tt_size_le/tt_size_eq, so the kernels also run on
 * the symbolic fake tensors of opcheck's aot_dispatch_dynamic check (a
 * plain `<=` on a symbolic size compares a handle, not a size). */
#include "tutorial_ops.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ================================================================ "PIL" */

/* Plain C on dense channels-last (H, W, C) pixel buffers of any element
 * size: the third-party routine the tutorial wraps (PIL's Image.crop). It
 * knows nothing of tensors. src is (H, W, C) with row width W; box is
 * (x0, y0, x1, y1) = (left, upper, right, lower); dst is (y1-y0, x1-x0, C). */
static void pil_crop(const char *src, int64_t W, int64_t C, size_t es, const int64_t box[4],
                     char *dst)
{
    int64_t w = box[2] - box[0], h = box[3] - box[1];
    size_t row = (size_t)(w * C) * es;
    for (int64_t y = 0; y < h; y++)
        memcpy(dst + (size_t)(y * w * C) * es,
               src + (size_t)(((box[1] + y) * W + box[0]) * C) * es, row);
}

/* ================================================================ crop */

/* Why `box` does not fit the (C, H, W) picture (a status, with the reason
 * in why), or TT_OK. PIL would pad a box that sticks out; crop refuses it. */
static tt_status crop_problem(const tt_tensor *pic, const int64_t b[4], char *why, size_t n)
{
    if (tt_ndim(pic) != 3) {
        snprintf(why, n, "argument 'pic' (#1) expects a (C, H, W) image, got %d dims",
                 tt_ndim(pic));
        return TT_ESHAPE;
    }
    tt_size H = tt_dim_size(pic, 1), W = tt_dim_size(pic, 2);
    if (0 <= b[0] && b[0] <= b[2] && tt_size_le(b[2], W) && 0 <= b[1] && b[1] <= b[3] &&
        tt_size_le(b[3], H))
        return TT_OK;
    char hs[32], ws[32];
    tt_size_str(H, hs, sizeof hs);
    tt_size_str(W, ws, sizeof ws);
    snprintf(why, n,
             "argument 'box' (#2) = (%lld, %lld, %lld, %lld) must lie in the %sx%s image "
             "(0 <= x0 <= x1 <= W, 0 <= y0 <= y1 <= H)",
             (long long)b[0], (long long)b[1], (long long)b[2], (long long)b[3], ws, hs);
    return TT_EINVAL;
}

tt_status tutorial_crop_args(tt_frame *f, tt_tensor **pic, const int64_t **box)
{
    int n; /* 4: the dispatcher checked the schema's int[4] */
    tt_status st = tt_arg_tensor(f, 0, pic);
    if (!st)
        st = tt_arg_ints(f, 1, box, &n);
    if (st)
        return st;
    char why[256];
    st = crop_problem(*pic, *box, why, sizeof why);
    return st ? tt_frame_fail(f, st, "%s", why) : TT_OK;
}

/* pic is (C,H,W); box = (x0,y0,x1,y1); out is (C, y1-y0, x1-x0) laid out
 * channels-last. */
tt_status tutorial_crop_kernel(tt_frame *f)
{
    tt_tensor *pic, *hwc_view = NULL, *src = NULL, *hwc = NULL;
    const int64_t *box;
    tt_status st = tutorial_crop_args(f, &pic, &box);
    if (st)
        return st;
    /* to_pil_image: the picture as a dense (H, W, C) buffer. */
    hwc_view = tt_permute(pic, TT_SHAPE(1, 2, 0));
    src = hwc_view ? tt_contiguous(hwc_view) : NULL;
    int64_t c = tt_dim_size(pic, 0), h = box[3] - box[1], w = box[2] - box[0];
    hwc = src ? tt_new_empty(pic, TT_SHAPE(h, w, c)) : NULL;
    const char *pixels = hwc ? tt_data(src) : NULL;
    char *dst = pixels ? tt_data(hwc) : NULL;
    if (!dst) {
        st = tt_errcode();
        goto out;
    }
    pil_crop(pixels, tt_dim_size(pic, 2), c, tt_dtype_size(tt_dtype_of(pic)), box, dst);
    st = tt_return(f, 0, tt_permute(hwc, TT_SHAPE(2, 0, 1))); /* pil_to_tensor */
out:
    tt_release(hwc);
    tt_release(src);
    tt_release(hwc_view);
    return st;
}

/* The same metadata from metadata alone:
 * pic.new_empty(h, w, C).permute(2, 0, 1). */
tt_status tutorial_crop_fake(tt_frame *f)
{
    tt_tensor *pic;
    const int64_t *box;
    tt_status st = tutorial_crop_args(f, &pic, &box);
    if (st)
        return st;
    tt_tensor *hwc = tt_new_empty(pic, TT_SHAPE(box[3] - box[1], box[2] - box[0],
                                                tt_dim_size(pic, 0)));
    if (!hwc)
        return tt_errcode();
    st = tt_return(f, 0, tt_permute(hwc, TT_SHAPE(2, 0, 1)));
    tt_release(hwc);
    return st;
}

/* The classic mistake opcheck is for: the right shape, but a contiguous
 * (C, h, w) layout where the real kernel returns a channels-last view. */
tt_status tutorial_crop_fake_nopermute(tt_frame *f)
{
    tt_tensor *pic;
    const int64_t *box;
    tt_status st = tutorial_crop_args(f, &pic, &box);
    if (st)
        return st;
    return tt_return(f, 0, tt_new_empty(pic, TT_SHAPE(tt_dim_size(pic, 0), box[3] - box[1],
                                                      box[2] - box[0])));
}

tt_status tutorial_crop_plain(const tt_tensor *pic, const int64_t box[4], tt_tensor **out)
{
    tt_tensor *hwc_view = NULL, *src = NULL, *hwc = NULL;
    char *cropped = NULL, why[256];
    if (!out)
        return tt_error(TT_EINVAL, "tutorial_crop_plain: argument 'out' (#3) expects a "
                                   "pointer, got NULL");
    *out = NULL;
    if (!pic || !box)
        return tt_error(TT_EINVAL, "tutorial_crop_plain: argument '%s' (#%d) expects %s, "
                                   "got NULL", pic ? "box" : "pic", pic ? 2 : 1,
                        pic ? "int64_t[4]" : "a tensor");
    tt_status st = crop_problem(pic, box, why, sizeof why);
    if (st)
        return tt_error(st, "tutorial_crop_plain: %s", why);
    /* to_pil_image: the picture as a dense (H, W, C) buffer. */
    int64_t c = tt_dim_size(pic, 0), h = box[3] - box[1], w = box[2] - box[0];
    size_t es = tt_dtype_size(tt_dtype_of(pic));
    hwc_view = tt_permute(pic, TT_SHAPE(1, 2, 0));
    src = hwc_view ? tt_contiguous(hwc_view) : NULL;
    /* Reading the pixels is what a tracer cannot follow: under a trace
     * this line is the graph break. */
    const char *pixels = src ? tt_data(src) : NULL;
    if (!pixels) {
        st = tt_errcode();
        goto out;
    }
    /* Image.crop into a buffer of its own, then pil_to_tensor: the pixels
     * become a tensor (h, w, C) viewed as (C, h, w). (+1: malloc(0) may
     * be NULL.) */
    cropped = malloc((size_t)(h * w * c) * es + 1);
    if (!cropped) {
        st = tt_error(TT_ENOMEM, "tutorial_crop_plain: out of memory");
        goto out;
    }
    pil_crop(pixels, tt_dim_size(pic, 2), c, es, box, cropped);
    hwc = tt_from_data(TT_SHAPE(h, w, c), tt_dtype_of(pic), cropped);
    *out = hwc ? tt_permute(hwc, TT_SHAPE(2, 0, 1)) : NULL;
    st = *out ? TT_OK : tt_errcode();
out:
    free(cropped);
    tt_release(hwc);
    tt_release(src);
    tt_release(hwc_view);
    return st;
}

/* ================================================================ paste */

static tt_status paste_args(tt_frame *f, tt_tensor **im1, tt_tensor **im2, int64_t xy[2])
{
    const int64_t *c;
    int n;
    tt_status st = tt_arg_tensor(f, 0, im1);
    if (!st)
        st = tt_arg_tensor(f, 1, im2);
    if (!st)
        st = tt_arg_ints(f, 2, &c, &n);
    if (st)
        return st;
    if (tt_ndim(*im1) != 3 || tt_ndim(*im2) != 3) {
        bool first = tt_ndim(*im1) != 3;
        return tt_frame_fail(f, TT_ESHAPE, "argument '%s' (#%d) expects a (C, H, W) image, "
                                           "got %d dims", first ? "im1" : "im2", first ? 1 : 2,
                             tt_ndim(first ? *im1 : *im2));
    }
    if (tt_dtype_of(*im1) != tt_dtype_of(*im2))
        return tt_frame_fail(f, TT_EDTYPE, "argument 'im2' (#2) is %s, but im1 is %s",
                             tt_dtype_name(tt_dtype_of(*im2)), tt_dtype_name(tt_dtype_of(*im1)));
    char a[32], b[32], d[32], e[32];
    if (!tt_size_eq(tt_dim_size(*im1, 0), tt_dim_size(*im2, 0))) {
        tt_size_str(tt_dim_size(*im2, 0), a, sizeof a);
        tt_size_str(tt_dim_size(*im1, 0), b, sizeof b);
        return tt_frame_fail(f, TT_ESHAPE, "argument 'im2' (#2) has %s channels, but im1 "
                                           "has %s", a, b);
    }
    if (c[0] < 0 || c[1] < 0 ||
        !tt_size_le(tt_sym_add(c[0], tt_dim_size(*im2, 2)), tt_dim_size(*im1, 2)) ||
        !tt_size_le(tt_sym_add(c[1], tt_dim_size(*im2, 1)), tt_dim_size(*im1, 1))) {
        tt_size_str(tt_dim_size(*im2, 2), a, sizeof a);
        tt_size_str(tt_dim_size(*im2, 1), b, sizeof b);
        tt_size_str(tt_dim_size(*im1, 2), d, sizeof d);
        tt_size_str(tt_dim_size(*im1, 1), e, sizeof e);
        return tt_frame_fail(f, TT_EINVAL, "argument 'coord' (#3) = (%lld, %lld) puts the "
                                           "%sx%s im2 outside the %sx%s im1",
                             (long long)c[0], (long long)c[1], a, b, d, e);
    }
    xy[0] = c[0];
    xy[1] = c[1];
    return TT_OK;
}

/* im1 is (C,H,W), im2 is (C,h,w), coord = (x, y); out is a copy of im1
 * (laid out as empty_like(im1)) with im2 at [:, y:y+h, x:x+w]. */
tt_status tutorial_paste_kernel(tt_frame *f)
{
    tt_tensor *im1, *im2, *out = NULL, *rows = NULL, *region = NULL;
    int64_t xy[2];
    tt_status st = paste_args(f, &im1, &im2, xy);
    if (st)
        return st;
    out = tt_empty_like(im1);
    st = out ? tt_copy_(out, im1) : tt_errcode();
    if (!st) {
        rows = tt_narrow(out, 1, xy[1], tt_dim_size(im2, 1));
        region = rows ? tt_narrow(rows, 2, xy[0], tt_dim_size(im2, 2)) : NULL;
        st = region ? tt_copy_(region, im2) : tt_errcode();
    }
    if (!st) {
        st = tt_return(f, 0, out);
        out = NULL;
    }
    tt_release(region);
    tt_release(rows);
    tt_release(out);
    return st;
}

tt_status tutorial_paste_fake(tt_frame *f)
{
    tt_tensor *im1, *im2;
    int64_t xy[2];
    tt_status st = paste_args(f, &im1, &im2, xy);
    return st ? st : tt_return(f, 0, tt_empty_like(im1));
}

/* ======================================================= crop's autograd */

/* Saves what backward needs: the picture's shape and the box's corner. */
tt_status tutorial_crop_setup_context(tt_autograd_ctx *ctx, const tt_value *inputs,
                                      int ninputs, const tt_value *output, int noutputs)
{
    (void)ninputs, (void)output, (void)noutputs;
    tt_status st = tt_ctx_save_shape(ctx, "pic_shape", inputs[0].u.t);
    return st ? st : tt_ctx_save_ints(ctx, "coords", 2, inputs[1].u.ints); /* box[:2] */
}

/* d pic = paste(zeros(pic_shape), grad, box[:2]), through the dispatcher
 * so a trace of a training step records it; nothing for box. */
tt_status tutorial_crop_backward(tt_autograd_ctx *ctx, tt_tensor *const *grads, int ngrads,
                                 tt_tensor **grad_inputs, int ninputs)
{
    (void)ngrads, (void)ninputs;
    const int64_t *shape, *coords;
    int ndim, ncoords;
    const tt_op *paste = tt_op_find("mylib::paste");
    tt_status st = paste ? tt_ctx_get_ints(ctx, "pic_shape", &shape, &ndim) : tt_errcode();
    if (!st)
        st = tt_ctx_get_ints(ctx, "coords", &coords, &ncoords);
    if (st)
        return st;
    tt_tensor *zeros = tt_zeros(ndim, shape, tt_dtype_of(grads[0]));
    if (!zeros)
        return tt_errcode();
    grad_inputs[0] = tt_call(paste, tt_v_tensor(zeros), tt_v_tensor(grads[0]),
                             tt_v_ints(ncoords, coords));
    grad_inputs[1] = NULL;
    tt_release(zeros);
    return grad_inputs[0] ? TT_OK : tt_errcode();
}

/* ============================================================ numpy_sin */

static void sin_loop(char **d, const int64_t *s, int64_t n, void *ctx)
{
    tt_dtype dt = *(const tt_dtype *)ctx;
    for (int64_t i = 0; i < n; i++) {
        if (dt == TT_F32)
            *(float *)(d[0] + i * s[0]) = sinf(*(const float *)(d[1] + i * s[1]));
        else
            *(double *)(d[0] + i * s[0]) = sin(*(const double *)(d[1] + i * s[1]));
    }
}

/* input and output are the same shape and float dtype; output = sin(input). */
tt_status tutorial_numpy_sin_kernel(tt_frame *f)
{
    tt_tensor *in, *out;
    tt_status st = tt_arg_tensor(f, 0, &in);
    if (!st)
        st = tt_arg_tensor(f, 1, &out);
    if (st)
        return st;
    bool same = tt_ndim(in) == tt_ndim(out);
    for (int d = 0; same && d < tt_ndim(in); d++)
        same = tt_size_eq(tt_sizes(in)[d], tt_sizes(out)[d]);
    char a[128], b[128];
    if (!same)
        return tt_frame_fail(f, TT_ESHAPE, "argument 'output' (#2) has shape %s, but input "
                                           "has shape %s", tt_shape_str(out, a, sizeof a),
                             tt_shape_str(in, b, sizeof b));
    tt_dtype dt = tt_dtype_of(in);
    if ((dt != TT_F32 && dt != TT_F64) || tt_dtype_of(out) != dt)
        return tt_frame_fail(f, TT_EDTYPE, "arguments 'input' and 'output' must both be "
                                           "f32 or both f64, got %s and %s",
                             tt_dtype_name(dt), tt_dtype_name(tt_dtype_of(out)));
    return tt_for_each(2, (tt_tensor *[]){out, in}, sin_loop, &dt);
}

/* ============================================================ numpy_mul */

static void mul_loop(char **d, const int64_t *s, int64_t n, void *ctx)
{
    const double *c = ctx; /* c[0]: val, c[1]: 1 for f32 */
    for (int64_t i = 0; i < n; i++) {
        if (c[1] != 0)
            *(float *)(d[0] + i * s[0]) = (float)(*(const float *)(d[1] + i * s[1]) * c[0]);
        else
            *(double *)(d[0] + i * s[0]) = *(const double *)(d[1] + i * s[1]) * c[0];
    }
}

/* x is any shape, f32 or f64; out is x * val (argument #2; 1 when the
 * schema has none), contiguous. It returns after the metadata when x is
 * fake, so the same function is the real and the fake kernel and the two
 * cannot disagree. */
tt_status tutorial_numpy_mul_kernel(tt_frame *f)
{
    tt_tensor *x;
    double c[2] = {1, 0};
    tt_status st = tt_arg_tensor(f, 0, &x);
    if (!st && tt_frame_nargs(f) > 1)
        st = tt_arg_float(f, 1, &c[0]);
    if (st)
        return st;
    if (tt_dtype_of(x) != TT_F32 && tt_dtype_of(x) != TT_F64)
        return tt_frame_fail(f, TT_EDTYPE, "argument 'x' (#1) expects f32 or f64, got %s",
                             tt_dtype_name(tt_dtype_of(x)));
    c[1] = tt_dtype_of(x) == TT_F32;
    tt_tensor *out = tt_new_empty(x, tt_ndim(x), tt_sizes(x));
    if (!out || tt_is_fake(x))
        return tt_return(f, 0, out);
    st = tt_for_each(2, (tt_tensor *[]){out, x}, mul_loop, c);
    if (st) {
        tt_release(out);
        return st;
    }
    return tt_return(f, 0, out);
}

/* Saves val (argument #2, a float or an int). */
tt_status tutorial_numpy_mul_setup_context(tt_autograd_ctx *ctx, const tt_value *inputs,
                                           int ninputs, const tt_value *output, int noutputs)
{
    (void)ninputs, (void)output, (void)noutputs;
    double val = inputs[1].kind == TT_V_FLOAT ? inputs[1].u.f : (double)inputs[1].u.i;
    return tt_ctx_save_float(ctx, "val", val);
}

/* d x = grad * val. */
tt_status tutorial_numpy_mul_backward(tt_autograd_ctx *ctx, tt_tensor *const *grads,
                                      int ngrads, tt_tensor **grad_inputs, int ninputs)
{
    (void)ngrads, (void)ninputs;
    double val;
    tt_status st = tt_ctx_get_float(ctx, "val", &val);
    if (st)
        return st;
    grad_inputs[0] = tt_mul_scalar(grads[0], val);
    return grad_inputs[0] ? TT_OK : tt_errcode();
}

/* ================================================== the tutorial library */

tt_status tutorial_ops_register(tt_library **out_lib)
{
    if (!out_lib)
        return tt_error(TT_EINVAL, "tutorial_ops_register: argument 'out_lib' (#1) expects "
                                   "a pointer, got NULL");
    *out_lib = NULL;
    tt_library *lib = tt_library_new(TT_LIB_DEF, "mylib");
    if (!lib)
        return tt_errcode();
    tt_status st = TT_OK;
    /* As the tutorial: the op and its kernel first, then register_fake and
     * register_autograd. */
    if (!tt_custom_op_define(lib, &(tt_custom_op_spec){
            .schema = "mylib::crop(Tensor pic, int[4] box) -> Tensor",
            .mutates_args = "", /* functional: writes none of its arguments */
            .kernel = tutorial_crop_kernel,
        }) ||
        (st = tt_register_fake(lib, "mylib::crop", tutorial_crop_fake)))
        goto fail;
    if (!tt_custom_op_define(lib, &(tt_custom_op_spec){
            .schema = "mylib::paste(Tensor im1, Tensor im2, int[2] coord) -> Tensor",
            .mutates_args = "",
            .kernel = tutorial_paste_kernel,
            .fake = tutorial_paste_fake,
        }) ||
        (st = tt_register_autograd(lib, "mylib::crop", tutorial_crop_backward,
                                   tutorial_crop_setup_context)))
        goto fail;
    /* mutates_args names the written argument; the schema's (a!) agrees. */
    if (!tt_custom_op_define(lib, &(tt_custom_op_spec){
            .schema = "mylib::numpy_sin(Tensor input, Tensor(a!) output) -> ()",
            .mutates_args = "output",
            .device_types = "cpu",
            .kernel = tutorial_numpy_sin_kernel,
        }))
        goto fail;
    /* Trainable like crop, so the only thing wrong with it is the fake
     * kernel. */
    if (!tt_custom_op_define(lib, &(tt_custom_op_spec){
            .schema = "mylib::crop_nopermute(Tensor pic, int[4] box) -> Tensor",
            .mutates_args = "",
            .kernel = tutorial_crop_kernel,
            .fake = tutorial_crop_fake_nopermute,
            .backward = tutorial_crop_backward,
            .setup_context = tutorial_crop_setup_context,
        }))
        goto fail;
    *out_lib = lib;
    return TT_OK;
fail:
    st = st ? st : tt_errcode(); /* a define returned NULL: its error */
    tt_library_free(lib);
    return st ? st : TT_EINTERNAL;
}
