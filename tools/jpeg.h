/* Photographs for the demo: a JPEG file as a (3, H, W) tensor, through
 * libjpeg. */
#ifndef TT_TOOLS_JPEG_H
#define TT_TOOLS_JPEG_H

#include "tensortrace.h"

/* Reads the JPEG at path as a new f32 tensor (3, H, W) with values in
 * [0, 1], laid out as PyTorch's pil_to_tensor lays out a picture: an
 * (H, W, 3) buffer viewed as (3, H, W), strides (1, 3W, 3). Grayscale and
 * CMYK files are converted to RGB. Returns NULL with a message naming the
 * path: TT_ENOTFOUND when the file cannot be opened, TT_EINVAL when it is
 * not a JPEG libjpeg can decode. */
tt_tensor *image_read_jpeg(const char *path);

#endif /* TT_TOOLS_JPEG_H */
