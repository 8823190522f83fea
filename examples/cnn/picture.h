/* An SVG of grey images with a caption each, the images embedded as PNG
 * (encoded here with zlib's deflate and crc32). */
#ifndef CNN_PICTURE_H
#define CNN_PICTURE_H

#include <stdbool.h>
#include <stdint.h>

typedef struct {
    const uint8_t *pixels; /* side * side, 0 background */
    const char *caption;
    bool good; /* captioned in green, else red */
} picture_item;

/* Writes n items in rows of `per_row` to path; 0 on success, -1 with errno. */
int picture_write_svg(const char *path, const picture_item *items, int n, int side, int per_row);

#endif
