/* image_write_png (png.h) with libpng's simplified API, which does its
 * error handling (setjmp) inside libpng: no longjmp crosses our frames.
 *
 * This file must be compiled without tools/ on the include path, or
 * <png.h> would be our header: tools/meson.build builds it apart. */
#include "png.h" /* ours: "" looks beside this file first */

#include <png.h> /* libpng's */

#include <math.h>
#include <stdlib.h>
#include <string.h>

tt_status image_write_png(const tt_tensor *img, const char *path)
{
    char desc[128];
    if (!path)
        return tt_error(TT_EINVAL, "image_write_png: argument 'path' (#2) expects a file "
                                   "name, got NULL");
    if (!img)
        return tt_error(TT_EINVAL, "image_write_png(%s): argument 'img' (#1) expects a "
                                   "tensor, got NULL", path);
    tt_describe(img, desc, sizeof desc);
    if (tt_is_fake(img))
        return tt_error(TT_EFAKE, "image_write_png(%s): argument 'img' (#1) is the fake "
                                  "tensor %s, which has no pixels", path, desc);
    if (tt_ndim(img) != 3 || (tt_dim_size(img, 0) != 1 && tt_dim_size(img, 0) != 3) ||
        !tt_dtype_is_float(tt_dtype_of(img)))
        return tt_error(TT_EINVAL, "image_write_png(%s): argument 'img' (#1) expects a float "
                                   "(C, H, W) image with C = 1 or 3, got %s", path, desc);
    int64_t c = tt_dim_size(img, 0), h = tt_dim_size(img, 1), w = tt_dim_size(img, 2);
    if (h == 0 || w == 0 || h > INT32_MAX / 4 || w > INT32_MAX / 4)
        return tt_error(TT_EINVAL, "image_write_png(%s): argument 'img' (#1) expects 1 to "
                                   "%d pixels per side, got %s", path, INT32_MAX / 4, desc);

    size_t n = (size_t)(c * h * w);
    double *v = malloc(n * sizeof *v);
    unsigned char *px = malloc(n);
    tt_tensor *hwc = NULL, *f64 = NULL;
    tt_status st = TT_OK;
    if (!v || !px) {
        st = tt_error(TT_ENOMEM, "image_write_png(%s): out of memory for %zu pixels", path, n);
        goto out;
    }
    /* The pixels in (H, W, C) order, as PNG rows interleave channels.
     * Reading them is not part of any computation: no autograd. */
    tt_no_grad_begin();
    hwc = tt_permute(img, TT_SHAPE(1, 2, 0));
    f64 = hwc ? tt_to_dtype(hwc, TT_F64) : NULL;
    tt_no_grad_end();
    st = f64 ? tt_to_buffer(f64, v, n * sizeof *v) : tt_errcode();
    if (st)
        goto out;
    for (size_t i = 0; i < n; i++) {
        double x = v[i] > 0 ? (v[i] < 1 ? v[i] : 1) : 0; /* NaN fails both: 0 */
        px[i] = (unsigned char)lround(x * 255);
    }

    png_image image;
    memset(&image, 0, sizeof image);
    image.version = PNG_IMAGE_VERSION;
    image.width = (png_uint_32)w;
    image.height = (png_uint_32)h;
    image.format = c == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_GRAY;
    if (!png_image_write_to_file(&image, path, 0, px, 0, NULL)) {
        /* libpng's message: "open failed"-style text, or strerror for a
         * file it could not open. */
        st = tt_error(TT_EINTERNAL, "image_write_png: cannot write %s: %s", path,
                      image.message[0] ? image.message : "libpng failed");
        png_image_free(&image);
    }
out:
    tt_release(f64);
    tt_release(hwc);
    free(px);
    free(v);
    return st;
}
