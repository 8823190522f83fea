/* The demo's photograph reader (tools/jpeg.c, through libjpeg): JPEG files
 * written here with libjpeg (colour and gray) read back as (3, H, W) f32
 * pictures in [0, 1], laid out as pil_to_tensor lays them out; the
 * photograph tools/run installs; and each failure's status and message
 * (no file, not a JPEG, a truncated one, NULL). */
#include "tt_test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jpeglib.h>

#include "jpeg.h"

/* The photograph the demo crops (python-matplotlib-data, installed by
 * tools/run). */
#define PHOTO "/usr/share/matplotlib/mpl-data/sample_data/grace_hopper.jpg"

static char dir[64];

static void images_setup(void)
{
    tt_test_setup();
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/tt-images-XXXXXX", tmp && strlen(tmp) < 40 ? tmp : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void images_teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
    tt_test_teardown();
}

static const char *path_of(const char *name)
{
    static char buf[128];
    snprintf(buf, sizeof buf, "%s/%s", dir, name);
    return buf;
}

/* A w x h JPEG of one colour (components 3: rgb; 1: gray rgb[0]), at the
 * highest quality so that a flat colour decodes to itself. */
static void write_jpeg(const char *path, int w, int h, int components, const unsigned char *rgb)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr err;
    c.err = jpeg_std_error(&err);
    jpeg_create_compress(&c);
    jpeg_stdio_dest(&c, f);
    c.image_width = (JDIMENSION)w;
    c.image_height = (JDIMENSION)h;
    c.input_components = components;
    c.in_color_space = components == 3 ? JCS_RGB : JCS_GRAYSCALE;
    jpeg_set_defaults(&c);
    jpeg_set_quality(&c, 100, TRUE);
    jpeg_start_compress(&c, TRUE);
    unsigned char *row = malloc((size_t)(w * components));
    ck_assert_ptr_nonnull(row);
    for (int x = 0; x < w; x++)
        memcpy(row + x * components, rgb, (size_t)components);
    while (c.next_scanline < c.image_height)
        jpeg_write_scanlines(&c, &row, 1);
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    free(row);
    fclose(f);
}

/* Every pixel of img within 1.5/255 of the colour (JPEG is lossy). */
static void assert_colour(const tt_tensor *img, int h, int w, const double rgb[3])
{
    double *v = tt_test_values(img);
    ck_assert_ptr_nonnull(v);
    for (int c = 0; c < 3; c++)
        for (int i = 0; i < h * w; i++)
            ck_assert_msg(fabs(v[c * h * w + i] - rgb[c]) <= 1.5 / 255,
                          "channel %d pixel %d: %g, want %g", c, i, v[c * h * w + i], rgb[c]);
    free(v);
}

START_TEST(test_read_colour)
{
    const unsigned char orange[3] = {255, 128, 0};
    write_jpeg(path_of("orange.jpg"), 40, 24, 3, orange);
    tt_tensor *img = image_read_jpeg(path_of("orange.jpg"));
    ck_assert_msg(img != NULL, "%s", tt_errmsg());
    /* (3, H, W) over an (H, W, 3) buffer, as pil_to_tensor gives it. */
    ck_assert_int_eq(tt_dtype_of(img), TT_F32);
    ck_assert_int_eq(tt_ndim(img), 3);
    ck_assert(tt_dim_size(img, 0) == 3 && tt_dim_size(img, 1) == 24 && tt_dim_size(img, 2) == 40);
    const tt_size *st = tt_strides(img);
    ck_assert(st[0] == 1 && st[1] == 40 * 3 && st[2] == 3);
    assert_colour(img, 24, 40, (const double[]){1.0, 128 / 255.0, 0.0});
    tt_release(img);
}
END_TEST

START_TEST(test_read_gray)
{
    const unsigned char grey[1] = {51};
    write_jpeg(path_of("grey.jpg"), 16, 16, 1, grey);
    tt_tensor *img = image_read_jpeg(path_of("grey.jpg"));
    ck_assert_msg(img != NULL, "%s", tt_errmsg());
    ck_assert_int_eq(tt_dim_size(img, 0), 3); /* gray becomes RGB */
    assert_colour(img, 16, 16, (const double[]){0.2, 0.2, 0.2});
    tt_release(img);
}
END_TEST

/* The photograph tools/run installs: big enough for the demo's pictures. */
START_TEST(test_read_photo)
{
    tt_tensor *img = image_read_jpeg(PHOTO);
    ck_assert_msg(img != NULL, "%s (tools/run installs it with python-matplotlib-data)",
                  tt_errmsg());
    ck_assert(tt_dim_size(img, 0) == 3 && tt_dim_size(img, 1) == 600 &&
              tt_dim_size(img, 2) == 512);
    double *v = tt_test_values(img), lo = 1, hi = 0;
    ck_assert_ptr_nonnull(v);
    for (int64_t i = 0; i < tt_numel(img); i++) {
        lo = fmin(lo, v[i]);
        hi = fmax(hi, v[i]);
    }
    free(v);
    ck_assert_msg(lo >= 0 && hi <= 1 && hi - lo > 0.5, "values in [0, 1]: %g..%g", lo, hi);
    tt_release(img);
}
END_TEST

START_TEST(test_read_errors)
{
    char want[256];
    /* No file. */
    ck_assert_ptr_null(image_read_jpeg(path_of("nothere.jpg")));
    snprintf(want, sizeof want, "image_read_jpeg: cannot open '%s': No such file or directory",
             path_of("nothere.jpg"));
    ck_assert_error(TT_ENOTFOUND, want);
    ck_assert_str_eq(tt_errmsg(), want);

    /* Not a JPEG: libjpeg's own reason, after the path. */
    FILE *f = fopen(path_of("text.jpg"), "w");
    ck_assert_ptr_nonnull(f);
    fputs("this is not a picture\n", f);
    fclose(f);
    ck_assert_ptr_null(image_read_jpeg(path_of("text.jpg")));
    snprintf(want, sizeof want, "image_read_jpeg: '%s' is not a JPEG picture libjpeg can "
                                "read: Not a JPEG file: starts with 0x74 0x68",
             path_of("text.jpg"));
    ck_assert_error(TT_EINVAL, want);
    ck_assert_str_eq(tt_errmsg(), want);

    /* An empty file. */
    f = fopen(path_of("empty.jpg"), "w");
    ck_assert_ptr_nonnull(f);
    fclose(f);
    ck_assert_ptr_null(image_read_jpeg(path_of("empty.jpg")));
    snprintf(want, sizeof want, "image_read_jpeg: '%s' is not a JPEG picture libjpeg can read: ",
             path_of("empty.jpg"));
    ck_assert_int_eq(tt_errcode(), TT_EINVAL);
    ck_assert_msg(strncmp(tt_errmsg(), want, strlen(want)) == 0, "%s", tt_errmsg());

    ck_assert_ptr_null(image_read_jpeg(NULL));
    ck_assert_error(TT_EINVAL, "image_read_jpeg: argument 'path' (#1) expects a path, got NULL");
    ck_assert_str_eq(tt_errmsg(), "image_read_jpeg: argument 'path' (#1) expects a path, got NULL");
}
END_TEST

static Suite *images_suite(void)
{
    Suite *s = suite_create("images");
    TCase *tc = tt_tcase_with("jpeg", images_setup, images_teardown);
    tcase_add_test(tc, test_read_colour);
    tcase_add_test(tc, test_read_gray);
    tcase_add_test(tc, test_read_photo);
    tcase_add_test(tc, test_read_errors);
    suite_add_tcase(s, tc);
    return s;
}

TT_TEST_MAIN(images_suite)
