/* The custom-ops tutorial, end to end (PyTorch's "Python custom operators"
 * tutorial, in C): an image; `crop` wrapping a plain C routine (the stand-in
 * for PIL) as a custom op with a fake kernel and an autograd formula whose
 * backward calls a second custom op, `paste`; `numpy_sin` as a mutable op
 * writing into an output buffer; gradcheck of crop and of numpy_mul.
 *
 * The kernels are tools/tutorial_ops.c's, the ones the demo and the `tt`
 * tool's example library run; every op here is registered the way the
 * README's "Writing a custom op" section shows it; keep the two in step. */
#include "tt_test.h"
#include "tutorial_ops.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* ================================================== the tutorial library */

static tt_library *lib;
static const tt_op *crop_op, *paste_op, *sin_op, *mul_op;

/* Defined as the tutorial does it: the op and its kernel first, then
 * register_fake and register_autograd. */
static void define_tutorial_ops(void)
{
    lib = tt_library_new(TT_LIB_DEF, "mylib");
    ck_assert_msg(lib != NULL, "%s", tt_errmsg());
    crop_op = tt_custom_op_define(lib, &(tt_custom_op_spec){
        .schema = "mylib::crop(Tensor pic, int[4] box) -> Tensor",
        .mutates_args = "",
        .kernel = tutorial_crop_kernel,
    });
    ck_assert_msg(crop_op != NULL, "%s", tt_errmsg());
    OK(tt_register_fake(lib, "mylib::crop", tutorial_crop_fake));
    paste_op = tt_custom_op_define(lib, &(tt_custom_op_spec){
        .schema = "mylib::paste(Tensor im1, Tensor im2, int[2] coord) -> Tensor",
        .mutates_args = "",
        .kernel = tutorial_paste_kernel,
        .fake = tutorial_paste_fake,
    });
    ck_assert_msg(paste_op != NULL, "%s", tt_errmsg());
    OK(tt_register_autograd(lib, "mylib::crop", tutorial_crop_backward,
                            tutorial_crop_setup_context));
    /* As the tutorial's Python: mutates_args names the argument, and the
     * schema gets its (a!) annotation from it. */
    sin_op = tt_custom_op_define(lib, &(tt_custom_op_spec){
        .schema = "mylib::numpy_sin(Tensor input, Tensor output) -> ()",
        .mutates_args = "output",
        .device_types = "cpu",
        .kernel = tutorial_numpy_sin_kernel,
    });
    ck_assert_msg(sin_op != NULL, "%s", tt_errmsg());
    mul_op = tt_custom_op_define(lib, &(tt_custom_op_spec){
        .schema = "mylib::numpy_mul(Tensor x, *, float val) -> Tensor",
        .mutates_args = "",
        .kernel = tutorial_numpy_mul_kernel,
        .fake = tutorial_numpy_mul_kernel,
        .backward = tutorial_numpy_mul_backward,
        .setup_context = tutorial_numpy_mul_setup_context,
    });
    ck_assert_msg(mul_op != NULL, "%s", tt_errmsg());
}

static void tutorial_setup(void)
{
    tt_test_setup();
    define_tutorial_ops();
}

static void tutorial_teardown(void)
{
    lib = tt_library_free(lib);
    tt_test_teardown();
}

static tt_tensor *crop(const tt_tensor *pic, int64_t x0, int64_t y0, int64_t x1, int64_t y1)
{
    return tt_call(crop_op, tt_v_tensor(pic), tt_v_ints(TT_INTS(x0, y0, x1, y1)));
}

static tt_tensor *paste(const tt_tensor *im1, const tt_tensor *im2, int64_t x, int64_t y)
{
    return tt_call(paste_op, tt_v_tensor(im1), tt_v_tensor(im2), tt_v_ints(TT_INTS(x, y)));
}

/* ================================================================ helpers */

static void assert_strides(const tt_tensor *t, int64_t s0, int64_t s1, int64_t s2,
                           const char *what)
{
    char buf[128];
    ck_assert_msg(tt_ndim(t) == 3 && tt_dim_stride(t, 0) == s0 && tt_dim_stride(t, 1) == s1 &&
                      tt_dim_stride(t, 2) == s2,
                  "%s: strides %s, expected [%lld, %lld, %lld]", what,
                  tt_strides_str(t, buf, sizeof buf), (long long)s0, (long long)s1,
                  (long long)s2);
}

/* The tutorial's picture, 3x64x64 f32: linspace outer products, one
 * gradient per channel: y*x, (1-y)*x, y*(1-x). */
static tt_tensor *make_image(void)
{
    tt_tensor *img = NN(tt_empty(TT_SHAPE(3, 64, 64), TT_F32));
    tt_scope_begin();
    tt_tensor *r = NN(tt_linspace(0, 1, 64, TT_F32));
    tt_tensor *y = NN(tt_view(r, TT_SHAPE(64, 1))), *x = NN(tt_view(r, TT_SHAPE(1, 64)));
    tt_tensor *ny = NN(tt_add_scalar(tt_neg(y), 1)), *nx = NN(tt_add_scalar(tt_neg(x), 1));
    tt_tensor *ch[3] = {NN(tt_mul(y, x)), NN(tt_mul(ny, x)), NN(tt_mul(y, nx))};
    for (int c = 0; c < 3; c++)
        OK(tt_copy_(NN(tt_select(img, 0, c)), ch[c]));
    tt_scope_end();
    return img;
}

static double image_value(int c, int64_t y, int64_t x)
{
    double fy = y / 63.0, fx = x / 63.0;
    return c == 0 ? fy * fx : c == 1 ? (1 - fy) * fx : fy * (1 - fx);
}

/* Pictures in every layout a crop may get, all (3, 64, 64) of dtype dt. */
typedef enum { L_CONTIG, L_CHANNELS_LAST, L_SLICED, L_TRANSPOSED, L_EXPANDED, L_COUNT } layout;
static const char *const layout_names[] = {"contiguous", "channels-last", "sliced",
                                           "transposed", "expanded"};

static tt_tensor *make_pic(layout l, tt_dtype dt)
{
    static const int64_t base_sizes[][3] = {
        {3, 64, 64}, {64, 64, 3}, {3, 64, 128}, {3, 64, 64}, {1, 64, 64}};
    tt_scope_begin();
    tt_tensor *r = NN(tt_rand(3, base_sizes[l], TT_F64));
    tt_tensor *base = dt == TT_U8 ? NN(tt_to_dtype(NN(tt_mul_scalar(r, 255)), dt))
                                  : NN(tt_to_dtype(r, dt));
    tt_tensor *pic = NULL;
    switch (l) {
    case L_CONTIG: pic = base; break;
    case L_CHANNELS_LAST: pic = tt_permute(base, TT_SHAPE(2, 0, 1)); break;
    case L_SLICED: pic = tt_slice(base, 2, 1, 128, 2); break;
    case L_TRANSPOSED: pic = tt_transpose(base, 1, 2); break;
    case L_EXPANDED: pic = tt_expand(base, TT_SHAPE(3, 64, 64)); break;
    default: break;
    }
    NN(pic);
    ck_assert_int_eq(tt_dim_size(pic, 0), 3);
    ck_assert_int_eq(tt_dim_size(pic, 1), 64);
    ck_assert_int_eq(tt_dim_size(pic, 2), 64);
    tt_keep(pic);
    tt_scope_end();
    return pic;
}

static const int64_t boxes[][4] = {
    {10, 10, 50, 50}, /* the tutorial's */
    {0, 0, 64, 64},   /* everything */
    {5, 7, 6, 8},     /* one pixel */
    {0, 30, 64, 31},  /* one row */
    {3, 0, 61, 64},   /* full height */
    {20, 20, 20, 40}, /* zero width */
    {0, 64, 64, 64},  /* zero height, at the edge */
};
#define NBOXES ((int)(sizeof boxes / sizeof boxes[0]))
static const tt_dtype image_dtypes[] = {TT_F32, TT_F64, TT_U8};

/* ================================================================ tests */

/* Step 1: the picture. */
START_TEST(test_image)
{
    tt_tensor *img = make_image();
    ck_assert_int_eq(tt_dtype_of(img), TT_F32);
    ck_assert(tt_is_contiguous(img));
    double *v = tt_test_values(img);
    for (int c = 0; c < 3; c++)
        for (int64_t y = 0; y < 64; y++)
            for (int64_t x = 0; x < 64; x++) {
                double want = image_value(c, y, x), got = v[(c * 64 + y) * 64 + x];
                if (fabs(got - want) > 1e-6)
                    ck_abort_msg("img[%d][%lld][%lld] = %g, expected %g", c, (long long)y,
                                 (long long)x, got, want);
            }
    free(v);
    tt_release(img);
}
END_TEST

/* Step 2: crop, against direct indexing, with the layout pil_to_tensor
 * gives. */
START_TEST(test_crop_values)
{
    tt_tensor *img = make_image();
    tt_tensor *out = NN(crop(img, 10, 10, 50, 50));
    ck_assert_int_eq(tt_ndim(out), 3);
    ck_assert_int_eq(tt_dim_size(out, 0), 3);
    ck_assert_int_eq(tt_dim_size(out, 1), 40);
    ck_assert_int_eq(tt_dim_size(out, 2), 40);
    ck_assert_int_eq(tt_dtype_of(out), TT_F32);
    /* A permuted view of a (h, w, c) buffer: strides (1, w*c, c). */
    assert_strides(out, 1, 40 * 3, 3, "crop");
    ck_assert_int_eq(tt_storage_offset(out), 0);
    ck_assert(!tt_is_contiguous(out));
    ck_assert(!tt_same_storage(out, img));
    ck_assert_uint_eq(tt_storage_nbytes(out), 3 * 40 * 40 * sizeof(float));
    double want, got;
    for (int c = 0; c < 3; c++)
        for (int64_t i = 0; i < 40; i += 13)
            for (int64_t j = 0; j < 40; j += 7) {
                OK(tt_get(out, &got, c, i, j));
                OK(tt_get(img, &want, c, 10 + i, 10 + j));
                ck_assert_double_eq(got, want);
            }
    tt_release(out);
    tt_release(img);
}
END_TEST

/* crop over dtype x layout x box: every element, and the strides. */
START_TEST(test_crop_table)
{
    tt_dtype dt = image_dtypes[_i];
    for (int l = 0; l < L_COUNT; l++) {
        tt_tensor *pic = make_pic((layout)l, dt);
        double *pv = tt_test_values(pic);
        for (int b = 0; b < NBOXES; b++) {
            const int64_t *bx = boxes[b];
            int64_t h = bx[3] - bx[1], w = bx[2] - bx[0];
            tt_tensor *out = NN(crop(pic, bx[0], bx[1], bx[2], bx[3]));
            char what[128];
            snprintf(what, sizeof what, "%s %s box %d", tt_dtype_name(dt), layout_names[l], b);
            ck_assert_msg(tt_dim_size(out, 0) == 3 && tt_dim_size(out, 1) == h &&
                              tt_dim_size(out, 2) == w, "%s: shape", what);
            ck_assert_msg(tt_dtype_of(out) == dt, "%s: dtype", what);
            /* Contiguous strides treat a size-0 dim as 1 (PyTorch's
             * empty(20, 0, 3) has strides (3, 3, 1)). */
            assert_strides(out, 1, (w > 0 ? w : 1) * 3, 3, what);
            double *ov = tt_test_values(out);
            for (int c = 0; c < 3; c++)
                for (int64_t i = 0; i < h; i++)
                    for (int64_t j = 0; j < w; j++) {
                        double got = ov[(c * h + i) * w + j];
                        double want = pv[(c * 64 + bx[1] + i) * 64 + bx[0] + j];
                        if (got != want)
                            ck_abort_msg("%s: out[%d][%lld][%lld] = %g, expected %g", what, c,
                                         (long long)i, (long long)j, got, want);
                    }
            free(ov);
            tt_release(out);
        }
        free(pv);
        tt_release(pic);
    }
}
END_TEST

/* The fake crop gives the real crop's metadata exactly, and no data. */
START_TEST(test_crop_fake)
{
    tt_dtype dt = image_dtypes[_i];
    for (int l = 0; l < L_COUNT; l++) {
        tt_tensor *pic = make_pic((layout)l, dt);
        tt_tensor *fpic = NN(tt_fake_like(pic));
        for (int b = 0; b < NBOXES; b++) {
            const int64_t *bx = boxes[b];
            char what[128];
            snprintf(what, sizeof what, "%s %s box %d", tt_dtype_name(dt), layout_names[l], b);
            tt_tensor *real = NN(crop(pic, bx[0], bx[1], bx[2], bx[3]));
            tt_tensor *fake = NN(crop(fpic, bx[0], bx[1], bx[2], bx[3]));
            tt_test_assert_fake_meta(fake, real, what);
            ck_assert_uint_eq(tt_storage_nbytes(fake), tt_storage_nbytes(real));
            if (tt_numel(fake) > 0) {
                ck_assert_ptr_null(tt_data(fake));
                ck_assert_error(TT_EFAKE, "");
            }
            tt_release(fake);
            tt_release(real);
        }
        tt_release(fpic);
        tt_release(pic);
    }
}
END_TEST

/* Under fake mode (FakeTensorMode) the fake kernel runs on real inputs
 * too, and gives the same metadata, on a fake result. */
START_TEST(test_crop_fake_mode)
{
    tt_tensor *img = make_image();
    tt_tensor *real = NN(crop(img, 10, 10, 50, 50));
    tt_fake_mode_begin();
    tt_tensor *fake = crop(img, 10, 10, 50, 50);
    tt_fake_mode_end();
    NN(fake);
    tt_test_assert_fake_meta(fake, real, "fake mode");
    tt_release(fake);
    tt_release(real);
    tt_release(img);
}
END_TEST

/* The op's argument checks, the same on real and fake pictures. */
START_TEST(test_crop_errors)
{
    tt_tensor *img = make_image();
    tt_tensor *fimg = NN(tt_fake_like(img));
    tt_tensor *pics[2] = {img, fimg};
    for (int k = 0; k < 2; k++) {
        tt_tensor *p = pics[k];
        ck_assert_ptr_null(crop(p, 10, 10, 70, 50));
        ck_assert_error(TT_EINVAL, "mylib::crop: argument 'box' (#2) = (10, 10, 70, 50) "
                                   "must lie in the 64x64 image");
        ck_assert_ptr_null(crop(p, 30, 10, 20, 50));
        ck_assert_error(TT_EINVAL, "argument 'box' (#2) = (30, 10, 20, 50)");
        ck_assert_ptr_null(crop(p, -1, 0, 5, 5));
        ck_assert_error(TT_EINVAL, "argument 'box' (#2) = (-1, 0, 5, 5)");
        /* The schema's int[4] is checked before any kernel runs. */
        ck_assert_ptr_null(tt_call(crop_op, tt_v_tensor(p), tt_v_ints(TT_INTS(0, 0, 5))));
        ck_assert_error(TT_EINVAL, "mylib::crop: argument 'box' (#2) expects int[4], got int[3]");
        ck_assert_ptr_null(tt_call(crop_op, tt_v_tensor(p)));
        ck_assert_error(TT_EINVAL, "mylib::crop: missing argument 'box' (#2) of type int[4]");
        tt_tensor *flat = NN(tt_select(p, 0, 0));
        ck_assert_ptr_null(crop(flat, 0, 0, 5, 5));
        ck_assert_error(TT_ESHAPE, "mylib::crop: argument 'pic' (#1) expects a (C, H, W) "
                                   "image, got 2 dims");
        tt_release(flat);
    }
    tt_release(fimg);
    tt_release(img);
}
END_TEST

/* Step 3: paste, against a reference loop, in im1's layout; fake paste
 * matches. */
START_TEST(test_paste)
{
    static const int64_t coords[][2] = {{0, 0}, {10, 20}, {63, 63}, {0, 50}, {24, 24}};
    static const int64_t sizes[][2] = {{64, 64}, {5, 7}, {1, 1}, {14, 64}, {40, 40}};
    tt_dtype dt = image_dtypes[_i];
    layout im1_layouts[] = {L_CONTIG, L_CHANNELS_LAST, L_SLICED};
    for (int l = 0; l < 3; l++) {
        tt_tensor *im1 = make_pic(im1_layouts[l], dt);
        tt_tensor *fim1 = NN(tt_fake_like(im1));
        double *v1 = tt_test_values(im1);
        uint64_t version = tt_version(im1);
        for (int k = 0; k < 5; k++) {
            int64_t x = coords[k][0], y = coords[k][1], h = sizes[k][0], w = sizes[k][1];
            char what[128];
            snprintf(what, sizeof what, "%s %s coord (%lld, %lld)", tt_dtype_name(dt),
                     layout_names[im1_layouts[l]], (long long)x, (long long)y);
            tt_tensor *r = NN(tt_rand(TT_SHAPE(3, h, w), TT_F64));
            tt_tensor *im2 = NN(tt_to_dtype(r, dt));
            tt_tensor *out = NN(paste(im1, im2, x, y));
            /* The layout empty_like(im1) gives, as the fake kernel says. */
            tt_tensor *like = NN(tt_empty_like(im1)), *flike = NN(tt_fake_like(like));
            tt_test_assert_fake_meta(flike, out, what);
            tt_release(flike);
            tt_release(like);
            ck_assert_msg(!tt_same_storage(out, im1) && !tt_same_storage(out, im2), "%s", what);
            double *ov = tt_test_values(out), *v2 = tt_test_values(im2);
            for (int c = 0; c < 3; c++)
                for (int64_t i = 0; i < 64; i++)
                    for (int64_t j = 0; j < 64; j++) {
                        bool in = i >= y && i < y + h && j >= x && j < x + w;
                        double want = in ? v2[(c * h + i - y) * w + j - x]
                                         : v1[(c * 64 + i) * 64 + j];
                        if (ov[(c * 64 + i) * 64 + j] != want)
                            ck_abort_msg("%s: out[%d][%lld][%lld] = %g, expected %g", what, c,
                                         (long long)i, (long long)j,
                                         ov[(c * 64 + i) * 64 + j], want);
                    }
            free(ov);
            free(v2);
            tt_tensor *fim2 = NN(tt_fake_like(im2));
            tt_tensor *fout = NN(paste(fim1, fim2, x, y));
            tt_test_assert_fake_meta(fout, out, what);
            tt_release(fout);
            tt_release(fim2);
            tt_release(out);
            tt_release(im2);
            tt_release(r);
        }
        /* paste is functional: im1 is untouched. */
        ck_assert_uint_eq(tt_version(im1), version);
        double *again = tt_test_values(im1);
        ck_assert(memcmp(again, v1, sizeof(double) * 3 * 64 * 64) == 0);
        free(again);
        free(v1);
        tt_release(fim1);
        tt_release(im1);
    }
}
END_TEST

START_TEST(test_paste_errors)
{
    tt_tensor *im1 = NN(tt_zeros(TT_SHAPE(3, 8, 8), TT_F32));
    tt_tensor *im2 = NN(tt_ones(TT_SHAPE(3, 4, 4), TT_F32));
    tt_tensor *im2_f64 = NN(tt_ones(TT_SHAPE(3, 4, 4), TT_F64));
    tt_tensor *im2_gray = NN(tt_ones(TT_SHAPE(1, 4, 4), TT_F32));
    ck_assert_ptr_null(paste(im1, im2, 5, 0));
    ck_assert_error(TT_EINVAL, "mylib::paste: argument 'coord' (#3) = (5, 0) puts the 4x4 im2 "
                               "outside the 8x8 im1");
    ck_assert_ptr_null(paste(im1, im2, 0, -1));
    ck_assert_error(TT_EINVAL, "argument 'coord' (#3) = (0, -1)");
    ck_assert_ptr_null(paste(im1, im2_f64, 0, 0));
    ck_assert_error(TT_EDTYPE, "mylib::paste: argument 'im2' (#2) is f64, but im1 is f32");
    ck_assert_ptr_null(paste(im1, im2_gray, 0, 0));
    ck_assert_error(TT_ESHAPE, "mylib::paste: argument 'im2' (#2) has 1 channels, but im1 has 3");
    ck_assert_ptr_null(tt_call(paste_op, tt_v_tensor(im1), tt_v_tensor(im2),
                               tt_v_ints(TT_INTS(1, 2, 3))));
    ck_assert_error(TT_EINVAL, "mylib::paste: argument 'coord' (#3) expects int[2], got int[3]");
    tt_release(im2_gray);
    tt_release(im2_f64);
    tt_release(im2);
    tt_release(im1);
}
END_TEST

/* The gradient image within `box`: ones inside, zeros outside. */
static void assert_box_grad(const tt_tensor *g, const int64_t *bx, const char *what)
{
    ck_assert_msg(g != NULL, "%s: no gradient", what);
    ck_assert_msg(tt_ndim(g) == 3 && tt_dim_size(g, 1) == 64 && tt_dim_size(g, 2) == 64,
                  "%s: gradient shape", what);
    double *v = tt_test_values(g);
    for (int c = 0; c < 3; c++)
        for (int64_t y = 0; y < 64; y++)
            for (int64_t x = 0; x < 64; x++) {
                bool in = x >= bx[0] && x < bx[2] && y >= bx[1] && y < bx[3];
                if (v[(c * 64 + y) * 64 + x] != (in ? 1.0 : 0.0))
                    ck_abort_msg("%s: grad[%d][%lld][%lld] = %g, expected %d", what, c,
                                 (long long)y, (long long)x, v[(c * 64 + y) * 64 + x], in);
            }
    free(v);
}

/* Step 4, as the tutorial writes it: crop(img).sum().backward() leaves
 * ones in the cropped region of img.grad. Needs tt::sum's derivative. */
START_TEST(test_crop_grad_sum)
{
    tt_tensor *img = make_image();
    OK(tt_set_requires_grad(img, true));
    tt_tensor *out = NN(crop(img, 10, 10, 50, 50));
    ck_assert(tt_requires_grad(out));
    ck_assert_str_eq(tt_grad_fn_name(out), "mylib::crop");
    tt_tensor *loss = NN(tt_sum_all(out));
    OK(tt_backward(loss, NULL));
    tt_tensor *g = tt_get_grad(img);
    assert_box_grad(g, (const int64_t[]){10, 10, 50, 50}, "sum(crop(img))");
    ck_assert_int_eq(tt_dtype_of(g), TT_F32);
    tt_release(g);
    tt_release(loss);
    tt_release(out);
    tt_release(img);
}
END_TEST

/* The same gradient without a reduction: backward from the crop with a
 * gradient of ones, for every box, and through tt_grad. */
START_TEST(test_crop_grad)
{
    for (int b = 0; b < NBOXES; b++) {
        const int64_t *bx = boxes[b];
        char what[64];
        snprintf(what, sizeof what, "box %d", b);
        tt_tensor *img = make_image();
        OK(tt_set_requires_grad(img, true));
        tt_tensor *out = NN(crop(img, bx[0], bx[1], bx[2], bx[3]));
        tt_tensor *ones = NN(tt_ones(3, tt_sizes(out), TT_F32));
        OK(tt_backward(out, ones));
        tt_tensor *g = tt_get_grad(img);
        assert_box_grad(g, bx, what);
        tt_release(g);
        /* tt_grad on a new graph: the same, and .grad is untouched. */
        tt_tensor *out2 = NN(crop(img, bx[0], bx[1], bx[2], bx[3]));
        tt_tensor *g2 = NULL;
        OK(tt_grad(1, &out2, &ones, 1, &img, &g2));
        assert_box_grad(g2, bx, what);
        tt_tensor *g_again = tt_get_grad(img);
        assert_box_grad(g_again, bx, what);
        /* A second backward accumulates into .grad: twos in the box. */
        tt_tensor *out3 = NN(crop(img, bx[0], bx[1], bx[2], bx[3]));
        OK(tt_backward(out3, ones));
        tt_tensor *g3 = tt_get_grad(img), *half = NN(tt_mul_scalar(g3, 0.5));
        assert_box_grad(half, bx, what);
        tt_release(half);
        tt_release(g3);
        tt_release(out3);
        tt_release(g_again);
        tt_release(g2);
        tt_release(out2);
        tt_release(ones);
        tt_release(out);
        tt_release(img);
    }
}
END_TEST

/* The backward really is made of ops: paste runs through the dispatcher
 * (so a mode sees it), once per backward. */
typedef struct {
    tt_mode m;
    int pastes, crops;
} counting_mode;

static tt_status count_call(tt_mode *m, const tt_op *op, const tt_value *args, int nargs,
                            tt_value *outs, int nouts)
{
    counting_mode *cm = (counting_mode *)m;
    if (op == paste_op)
        cm->pastes++;
    if (op == crop_op)
        cm->crops++;
    return tt_op_redispatch(op, args, nargs, outs, nouts);
}

START_TEST(test_crop_backward_is_ops)
{
    tt_tensor *img = make_image();
    OK(tt_set_requires_grad(img, true));
    counting_mode cm = {{.call = count_call}, 0, 0};
    OK(tt_mode_push(&cm.m));
    tt_tensor *out = crop(img, 10, 10, 50, 50);
    tt_tensor *ones = out ? tt_ones(3, tt_sizes(out), TT_F32) : NULL;
    tt_status st = ones ? tt_backward(out, ones) : tt_errcode();
    ck_assert_ptr_eq(tt_mode_pop(), &cm.m);
    OK(st);
    ck_assert_int_eq(cm.crops, 1);
    ck_assert_int_eq(cm.pastes, 1);
    tt_tensor *g = tt_get_grad(img);
    assert_box_grad(g, (const int64_t[]){10, 10, 50, 50}, "under a mode");
    tt_release(g);
    tt_release(ones);
    tt_release(out);
    tt_release(img);
}
END_TEST

/* Step 5: numpy_sin, the mutable op. Its schema got (a!) from
 * mutates_args. */
START_TEST(test_numpy_sin_schema)
{
    char buf[256];
    tt_schema_print(tt_op_schema(sin_op), buf, sizeof buf);
    ck_assert_str_eq(buf, "mylib::numpy_sin(Tensor input, Tensor(a1!) output) -> ()");
    ck_assert(tt_schema_is_mutable(tt_op_schema(sin_op)));
    ck_assert(tt_op_has_kernel(sin_op, TT_DEV_CPU));
    ck_assert(!tt_op_has_kernel(sin_op, TT_DEV_CUDA));
    ck_assert(!tt_op_has_fake(sin_op));
    ck_assert(!tt_op_has_autograd(sin_op));
}
END_TEST

/* numpy_sin over shapes (empty and 0-dim too) x layouts x dtypes: output
 * = sin(input), written in place (a view's base changes only under it). */
START_TEST(test_numpy_sin)
{
    static const struct {
        int ndim;
        int64_t sizes[3];
    } shapes[] = {{1, {5}}, {2, {2, 3}}, {3, {2, 3, 4}}, {1, {0}}, {3, {3, 0, 2}}, {0, {0}}};
    const tt_dtype dts[] = {TT_F32, TT_F64};
    int nshapes = (int)(sizeof shapes / sizeof shapes[0]);
    for (int d = 0; d < 2; d++)
        for (int s = 0; s < nshapes; s++)
            for (int lay = 0; lay < 3; lay++) {
                int nd = shapes[s].ndim;
                const int64_t *sz = shapes[s].sizes;
                char what[128];
                snprintf(what, sizeof what, "%s shape %d layout %d", tt_dtype_name(dts[d]), s, lay);
                tt_tensor *in = NN(tt_randn(nd, sz, dts[d]));
                tt_tensor *base = NULL, *out = NULL;
                if (lay == 0) { /* contiguous output */
                    base = NN(tt_zeros(nd, sz, dts[d]));
                    out = tt_retain(base);
                } else if (lay == 1) { /* output is every other element of a buffer */
                    int64_t bsz[4];
                    for (int i = 0; i < nd; i++)
                        bsz[i] = sz[i];
                    bsz[nd] = 2;
                    base = NN(tt_full(nd + 1, bsz, 7, dts[d]));
                    out = NN(tt_select(base, nd, 0));
                } else { /* input transposed, output contiguous */
                    if (nd >= 2) {
                        int64_t tsz[3] = {sz[1], sz[0], nd == 3 ? sz[2] : 0};
                        tt_tensor *t = NN(tt_randn(nd, tsz, dts[d]));
                        tt_release(in);
                        in = NN(tt_transpose(t, 0, 1));
                        tt_release(t);
                    }
                    base = NN(tt_zeros(nd, sz, dts[d]));
                    out = tt_retain(base);
                }
                uint64_t v0 = tt_version(out);
                tt_value none = tt_v_none();
                OK(tt_op_call(sin_op, (tt_value[]){tt_v_tensor(in), tt_v_tensor(out)}, 2,
                              &none, 0));
                ck_assert_msg(tt_version(out) == v0 + 1, "%s: version %llu, expected %llu",
                              what, (unsigned long long)tt_version(out),
                              (unsigned long long)v0 + 1);
                double *vi = tt_test_values(in), *vo = tt_test_values(out), *vb = tt_test_values(base);
                int64_t n = tt_numel(in);
                double tol = dts[d] == TT_F32 ? 1e-6 : 1e-15;
                for (int64_t k = 0; k < n; k++)
                    if (fabs(vo[k] - sin(vi[k])) > tol)
                        ck_abort_msg("%s: element %lld: %.17g, expected sin(%.17g) = %.17g",
                                     what, (long long)k, vo[k], vi[k], sin(vi[k]));
                if (lay == 1) /* the other half of the buffer keeps its 7s */
                    for (int64_t k = 1; k < 2 * n; k += 2)
                        ck_assert_msg(vb[k] == 7, "%s: base element %lld was written", what,
                                      (long long)k);
                free(vi);
                free(vo);
                free(vb);
                tt_release(out);
                tt_release(base);
                tt_release(in);
            }
}
END_TEST

START_TEST(test_numpy_sin_errors)
{
    tt_tensor *in = NN(tt_randn(TT_SHAPE(2, 3), TT_F32));
    tt_tensor *wrong = NN(tt_zeros(TT_SHAPE(3, 2), TT_F32));
    tt_tensor *ints = NN(tt_zeros(TT_SHAPE(2, 3), TT_I64));
    tt_value none = tt_v_none();
    ck_assert_int_eq(tt_op_call(sin_op, (tt_value[]){tt_v_tensor(in), tt_v_tensor(wrong)}, 2,
                                &none, 0), TT_ESHAPE);
    ck_assert_error(TT_ESHAPE, "mylib::numpy_sin: argument 'output' (#2) has shape [3, 2], "
                               "but input has shape [2, 3]");
    uint64_t v = tt_version(ints);
    ck_assert_int_eq(tt_op_call(sin_op, (tt_value[]){tt_v_tensor(in), tt_v_tensor(ints)}, 2,
                                &none, 0), TT_EDTYPE);
    ck_assert_error(TT_EDTYPE, "mylib::numpy_sin: arguments 'input' and 'output' must both be "
                               "f32 or both f64, got f32 and i64");
    ck_assert_uint_eq(tt_version(ints), v); /* a failed call wrote nothing */
    /* A mutable op returns nothing: tt_op_call1 is for one-tensor ops. */
    ck_assert_ptr_null(tt_call(sin_op, tt_v_tensor(in), tt_v_tensor(wrong)));
    ck_assert_error(TT_EINVAL, "mylib::numpy_sin: tt_op_call1 needs an op that returns one "
                               "Tensor; use tt_op_call");
    tt_release(ints);
    tt_release(wrong);
    tt_release(in);
}
END_TEST

/* Step 6: gradcheck, in f64, as torch.autograd.gradcheck. */
static tt_status crop_fn(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    const int64_t *bx = ud;
    out[0] = crop(in[0], bx[0], bx[1], bx[2], bx[3]);
    return out[0] ? TT_OK : tt_errcode();
}

static tt_status numpy_mul_fn(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    out[0] = tt_call(mul_op, tt_v_tensor(in[0]), tt_v_float(*(const double *)ud));
    return out[0] ? TT_OK : tt_errcode();
}

START_TEST(test_gradcheck_crop)
{
    int64_t box[4] = {1, 2, 5, 6};
    tt_tensor *pic = NN(tt_rand(TT_SHAPE(3, 8, 8), TT_F64));
    OK(tt_set_requires_grad(pic, true));
    OK(tt_gradcheck(crop_fn, 1, &pic, 1, NULL, box));
    /* A channels-last picture, and a box at the corner. */
    tt_tensor *base = NN(tt_rand(TT_SHAPE(8, 8, 3), TT_F64));
    tt_tensor *leaf = NN(tt_permute(base, TT_SHAPE(2, 0, 1)));
    OK(tt_set_requires_grad(leaf, true));
    int64_t corner[4] = {5, 5, 8, 8};
    OK(tt_gradcheck(crop_fn, 1, &leaf, 1, NULL, corner));
    tt_release(leaf);
    tt_release(base);
    tt_release(pic);
}
END_TEST

START_TEST(test_gradcheck_numpy_mul)
{
    double val = 3.14;
    tt_tensor *x = NN(tt_randn(TT_SHAPE(2, 3), TT_F64));
    OK(tt_set_requires_grad(x, true));
    OK(tt_gradcheck(numpy_mul_fn, 1, &x, 1, NULL, &val));
    /* The tutorial's check: grad of numpy_mul(x, val) with ones is val. */
    tt_tensor *y = NN(tt_call(mul_op, tt_v_tensor(x), tt_v_float(val)));
    ck_assert_str_eq(tt_grad_fn_name(y), "mylib::numpy_mul");
    tt_tensor *ones = NN(tt_ones(TT_SHAPE(2, 3), TT_F64)), *gx = NULL;
    OK(tt_grad(1, &y, &ones, 1, &x, &gx));
    double *v = tt_test_values(gx);
    for (int k = 0; k < 6; k++)
        ck_assert_double_eq(v[k], val);
    free(v);
    tt_release(gx);
    tt_release(ones);
    tt_release(y);
    tt_release(x);
}
END_TEST

/* ============================================================ training */

/* mylib::scaled_tanh(Tensor x, *, float s) -> Tensor: s * tanh(x), a custom
 * op with its autograd, inside a two-layer MLP trained with SGD. */
static tt_status scaled_tanh_kernel(tt_frame *f)
{
    tt_tensor *x;
    double s;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &x)) || (st = tt_arg_float(f, 1, &s)))
        return st;
    tt_tensor *t = tt_tanh(x);
    tt_tensor *r = t ? tt_mul_scalar(t, s) : NULL;
    tt_release(t);
    return tt_return(f, 0, r);
}

static tt_status scaled_tanh_fake(tt_frame *f)
{
    tt_tensor *x;
    tt_status st = tt_arg_tensor(f, 0, &x);
    return st ? st : tt_return(f, 0, tt_empty_like(x));
}

static tt_status scaled_tanh_setup(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                                   const tt_value *out, int nout)
{
    (void)nin, (void)nout;
    tt_status st = tt_ctx_save_float(ctx, "s", in[1].kind == TT_V_FLOAT ? in[1].u.f
                                                                         : (double)in[1].u.i);
    return st ? st : tt_ctx_save_for_backward(ctx, 1, &out[0].u.t);
}

/* d/dx s tanh(x) = s (1 - tanh^2) = s - y^2 / s with y = s tanh(x). */
static tt_status scaled_tanh_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                      tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    double s;
    tt_status st = tt_ctx_get_float(ctx, "s", &s);
    if (st)
        return st;
    tt_tensor *y = tt_ctx_saved(ctx, 0);
    tt_scope_begin();
    tt_tensor *d = tt_add_scalar(tt_mul_scalar(tt_mul(y, y), -1.0 / s), s);
    tt_tensor *r = tt_keep(tt_mul(g[0], d));
    tt_scope_end();
    gi[0] = r;
    return r ? TT_OK : tt_errcode();
}

START_TEST(test_training_loop)
{
    tt_library *lib = tt_library_new(TT_LIB_DEF, "mylib");
    ck_assert_ptr_nonnull(lib);
    const tt_op *act = tt_custom_op_define(lib, &(tt_custom_op_spec){
        .schema = "mylib::scaled_tanh(Tensor x, *, float s) -> Tensor",
        .kernel = scaled_tanh_kernel, .fake = scaled_tanh_fake,
        .backward = scaled_tanh_backward, .setup_context = scaled_tanh_setup});
    ck_assert_ptr_nonnull(act);
    /* Synthetic data: 4 classes of points around 4 centres in 16-d. */
    enum { N = 64, D = 16, H = 32, C = 4 };
    tt_manual_seed(7);
    tt_tensor *centres = tt_randn(TT_SHAPE(C, D), TT_F32);
    int64_t labels[N];
    for (int i = 0; i < N; i++)
        labels[i] = i % C;
    tt_tensor *y = tt_from_data(TT_SHAPE(N), TT_I64, labels);
    tt_tensor *noise = tt_randn(TT_SHAPE(N, D), TT_F32);
    tt_tensor *idx_rows[N];
    for (int i = 0; i < N; i++)
        idx_rows[i] = tt_select(centres, 0, labels[i]);
    tt_tensor *base = tt_stack(N, idx_rows, 0);
    tt_tensor *x = tt_add_scaled(base, noise, 0.3);
    for (int i = 0; i < N; i++)
        tt_release(idx_rows[i]);
    tt_tensor *w1 = tt_randn(TT_SHAPE(H, D), TT_F32), *b1 = tt_zeros(TT_SHAPE(H), TT_F32);
    tt_tensor *w2 = tt_randn(TT_SHAPE(C, H), TT_F32), *b2 = tt_zeros(TT_SHAPE(C), TT_F32);
    tt_mul_scalar_(w1, 0.25);
    tt_mul_scalar_(w2, 0.25);
    tt_tensor *params[4] = {w1, b1, w2, b2};
    for (int p = 0; p < 4; p++)
        ck_assert_int_eq(tt_set_requires_grad(params[p], true), TT_OK);
    double first = 0, last = 0;
    for (int step = 0; step < 50; step++) {
        tt_scope_begin();
        tt_tensor *h = tt_call(act, tt_v_tensor(tt_linear(x, w1, b1)), tt_v_float(2.0));
        ck_assert_msg(h != NULL, "%s", tt_errmsg());
        tt_tensor *loss = tt_cross_entropy(tt_linear(h, w2, b2), y);
        ck_assert_msg(loss != NULL, "%s", tt_errmsg());
        double v;
        ck_assert_int_eq(tt_item(loss, &v), TT_OK);
        if (step == 0)
            first = v;
        last = v;
        ck_assert_msg(tt_backward(loss, NULL) == TT_OK, "%s", tt_errmsg());
        tt_no_grad_begin();
        for (int p = 0; p < 4; p++) {
            tt_tensor *g = tt_get_grad(params[p]);
            ck_assert_ptr_nonnull(g);
            ck_assert_int_eq(tt_add_scaled_(params[p], g, -0.5), TT_OK);
            tt_release(g);
            ck_assert_int_eq(tt_set_grad(params[p], NULL), TT_OK);
        }
        tt_no_grad_end();
        tt_scope_end();
    }
    /* The loss falls well below its start (log(4) ~ 1.39 for random guesses). */
    ck_assert_msg(last < first * 0.5, "loss went from %g to %g", first, last);
    for (int p = 0; p < 4; p++)
        tt_release(params[p]);
    tt_release(centres);
    tt_release(y);
    tt_release(noise);
    tt_release(base);
    tt_release(x);
    tt_library_free(lib);
}
END_TEST

static Suite *tutorial_suite(void)
{
    Suite *s = suite_create("tutorial");
    TCase *tc = tt_tcase_with("image_and_crop", tutorial_setup, tutorial_teardown);
    tcase_add_test(tc, test_image);
    tcase_add_test(tc, test_crop_values);
    tcase_add_loop_test(tc, test_crop_table, 0, 3);
    tcase_add_loop_test(tc, test_crop_fake, 0, 3);
    tcase_add_test(tc, test_crop_fake_mode);
    tcase_add_test(tc, test_crop_errors);
    suite_add_tcase(s, tc);
    tc = tt_tcase_with("paste", tutorial_setup, tutorial_teardown);
    tcase_add_loop_test(tc, test_paste, 0, 3);
    tcase_add_test(tc, test_paste_errors);
    suite_add_tcase(s, tc);
    tc = tt_tcase_with("crop_autograd", tutorial_setup, tutorial_teardown);
    tcase_add_test(tc, test_crop_grad_sum);
    tcase_add_test(tc, test_crop_grad);
    tcase_add_test(tc, test_crop_backward_is_ops);
    suite_add_tcase(s, tc);
    tc = tt_tcase_with("numpy_sin", tutorial_setup, tutorial_teardown);
    tcase_add_test(tc, test_numpy_sin_schema);
    tcase_add_test(tc, test_numpy_sin);
    tcase_add_test(tc, test_numpy_sin_errors);
    suite_add_tcase(s, tc);
    tc = tt_tcase_with("gradcheck", tutorial_setup, tutorial_teardown);
    tcase_add_test(tc, test_gradcheck_crop);
    tcase_add_test(tc, test_gradcheck_numpy_mul);
    suite_add_tcase(s, tc);
    tc = tt_tcase("training");
    tcase_add_test(tc, test_training_loop);
    suite_add_tcase(s, tc);
    return s;
}

TT_TEST_MAIN(tutorial_suite)
