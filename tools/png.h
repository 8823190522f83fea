/* Pictures for the demo: a (C, H, W) tensor as an 8-bit PNG, through
 * libpng. (The guard is not PNG_H: that one is libpng's.) */
#ifndef TT_TOOLS_PNG_H
#define TT_TOOLS_PNG_H

#include "tensortrace.h"

/* Writes img, (C, H, W) with C = 1 (gray) or 3 (RGB), of a float dtype and
 * with values in [0, 1] (clamped; NaN is black), to an 8-bit PNG at path.
 * Any layout; img is borrowed and not modified. Fails with a message that
 * names the path (TT_EINVAL for an image it cannot write, TT_EFAKE for a
 * fake tensor, TT_EINTERNAL when libpng or the file system fails). */
tt_status image_write_png(const tt_tensor *img, const char *path);

#endif /* TT_TOOLS_PNG_H */
