/* picture.h: grey images as PNG inside an SVG, with captions. */
#include "picture.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

typedef struct {
    unsigned char *p;
    size_t n, cap;
} buf;

static int put(buf *b, const void *data, size_t n)
{
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 1024;
        while (cap < b->n + n)
            cap *= 2;
        unsigned char *p = realloc(b->p, cap);
        if (!p)
            return -1;
        b->p = p, b->cap = cap;
    }
    memcpy(b->p + b->n, data, n);
    b->n += n;
    return 0;
}

static int put_u32(buf *b, uint32_t v)
{
    unsigned char be[4] = {v >> 24, v >> 16, v >> 8, v};
    return put(b, be, 4);
}

/* A PNG chunk: length, type, data, CRC of type and data. */
static int chunk(buf *b, const char *type, const unsigned char *data, uint32_t n)
{
    uLong crc = crc32(crc32(0, NULL, 0), (const Bytef *)type, 4);
    if (n)
        crc = crc32(crc, data, n);
    return put_u32(b, n) || put(b, type, 4) || (n && put(b, data, n)) ||
           put_u32(b, (uint32_t)crc);
}

/* An 8-bit greyscale PNG of w x h pixels, inverted (ink dark on white). */
static int png_grey(buf *out, const uint8_t *px, int w, int h)
{
    size_t raw_n = (size_t)h * (size_t)(w + 1);
    unsigned char *raw = malloc(raw_n);
    uLongf z_n = compressBound(raw_n);
    unsigned char *z = malloc(z_n);
    int rc = -1;
    if (raw && z) {
        for (int y = 0; y < h; y++) {
            raw[(size_t)y * (w + 1)] = 0; /* filter: none */
            for (int x = 0; x < w; x++)
                raw[(size_t)y * (w + 1) + 1 + x] = 255 - px[y * w + x];
        }
        unsigned char ihdr[13] = {w >> 24, w >> 16, w >> 8, w, h >> 24, h >> 16, h >> 8, h,
                                  8 /* bits */, 0 /* grey */, 0, 0, 0};
        static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
        if (compress2(z, &z_n, raw, raw_n, 9) == Z_OK)
            rc = put(out, sig, 8) || chunk(out, "IHDR", ihdr, 13) ||
                         chunk(out, "IDAT", z, (uint32_t)z_n) || chunk(out, "IEND", NULL, 0)
                     ? -1
                     : 0;
    }
    free(raw);
    free(z);
    return rc;
}

static void base64(FILE *f, const unsigned char *p, size_t n)
{
    static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? p[i + 1] << 8 : 0) |
                     (i + 2 < n ? p[i + 2] : 0);
        fputc(a[v >> 18 & 63], f);
        fputc(a[v >> 12 & 63], f);
        fputc(i + 1 < n ? a[v >> 6 & 63] : '=', f);
        fputc(i + 2 < n ? a[v & 63] : '=', f);
    }
}

int picture_write_svg(const char *path, const picture_item *items, int n, int side, int per_row)
{
    const int scale = 3, cell_w = side * scale + 24, cell_h = side * scale + 30;
    int rows = (n + per_row - 1) / per_row;
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
               "font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"100%%\" "
               "height=\"100%%\" fill=\"white\"/>\n",
            per_row * cell_w, rows * cell_h);
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        buf png = {0};
        int x = (i % per_row) * cell_w + 12, y = (i / per_row) * cell_h + 4;
        rc = png_grey(&png, items[i].pixels, side, side);
        if (!rc) {
            fprintf(f, "<image x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
                       "style=\"image-rendering:pixelated\" href=\"data:image/png;base64,",
                    x, y, side * scale, side * scale);
            base64(f, png.p, png.n);
            fprintf(f, "\"/>\n<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" fill=\"%s\">%s"
                       "</text>\n",
                    x + side * scale / 2, y + side * scale + 16,
                    items[i].good ? "#1a7f37" : "#cf222e", items[i].caption);
        }
        free(png.p);
    }
    fputs("</svg>\n", f);
    if (fclose(f) || rc) {
        if (!errno)
            errno = EIO;
        return -1;
    }
    return 0;
}
