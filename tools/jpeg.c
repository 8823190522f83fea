/* JPEG reading through libjpeg. libjpeg reports a fatal error through
 * error_exit, which by default exits the process; here it jumps back to
 * image_read_jpeg, which frees what it holds and returns NULL. The jump
 * never crosses a tensortrace call: tensors are made after decoding. */
#include "jpeg.h"

#include <errno.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>

typedef struct {
    struct jpeg_error_mgr mgr; /* first: libjpeg sees a jpeg_error_mgr * */
    jmp_buf jump;
    char message[JMSG_LENGTH_MAX];
} jpeg_error;

static void on_error(j_common_ptr cinfo)
{
    jpeg_error *e = (jpeg_error *)cinfo->err;
    cinfo->err->format_message(cinfo, e->message);
    longjmp(e->jump, 1);
}

/* Warnings (a corrupt but decodable file) are not errors. */
static void on_message(j_common_ptr cinfo, int level)
{
    (void)cinfo, (void)level;
}

/* The (H, W, 3) u8 pixels as the (3, H, W) f32 picture in [0, 1]. */
static tt_tensor *to_picture(const unsigned char *pixels, int64_t h, int64_t w)
{
    tt_scope_begin();
    tt_tensor *hwc = tt_from_data(TT_SHAPE(h, w, 3), TT_U8, pixels);
    tt_tensor *f = hwc ? tt_div_scalar(tt_to_dtype(hwc, TT_F32), 255.0) : NULL;
    tt_tensor *pic = f ? tt_keep(tt_permute(f, TT_SHAPE(2, 0, 1))) : NULL;
    tt_scope_end();
    return pic;
}

tt_tensor *image_read_jpeg(const char *path)
{
    if (!path) {
        tt_error(TT_EINVAL, "image_read_jpeg: argument 'path' (#1) expects a path, got NULL");
        return NULL;
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        tt_error(TT_ENOTFOUND, "image_read_jpeg: cannot open '%s': %s", path, strerror(errno));
        return NULL;
    }
    struct jpeg_decompress_struct cinfo;
    jpeg_error err;
    unsigned char *volatile pixels = NULL;
    tt_tensor *volatile pic = NULL;
    cinfo.err = jpeg_std_error(&err.mgr);
    err.mgr.error_exit = on_error;
    err.mgr.emit_message = on_message;
    if (setjmp(err.jump)) {
        tt_error(TT_EINVAL, "image_read_jpeg: '%s' is not a JPEG picture libjpeg can read: %s",
                 path, err.message);
        goto out;
    }
    jpeg_create_decompress(&cinfo);
    jpeg_stdio_src(&cinfo, f);
    jpeg_read_header(&cinfo, TRUE);
    cinfo.out_color_space = JCS_RGB; /* gray and CMYK become RGB */
    jpeg_start_decompress(&cinfo);
    size_t row = (size_t)cinfo.output_width * 3;
    pixels = malloc(row * cinfo.output_height + 1);
    if (!pixels) {
        tt_error(TT_ENOMEM, "image_read_jpeg: '%s': out of memory for %ux%u pixels", path,
                 cinfo.output_width, cinfo.output_height);
        goto out;
    }
    while (cinfo.output_scanline < cinfo.output_height) {
        JSAMPROW line = pixels + row * cinfo.output_scanline;
        jpeg_read_scanlines(&cinfo, &line, 1);
    }
    jpeg_finish_decompress(&cinfo);
    pic = to_picture(pixels, cinfo.output_height, cinfo.output_width);
out:
    jpeg_destroy_decompress(&cinfo);
    free(pixels);
    fclose(f);
    return pic;
}
