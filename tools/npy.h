/* Tensors to NumPy's .npy format (version 1.0), the common format of
 * tensors on disk: numpy.load reads them, and so do most tools. */
#ifndef TT_TOOLS_NPY_H
#define TT_TOOLS_NPY_H

#include "tensortrace.h"

/* Writes t (any layout; borrowed, not modified) to path as a C-order .npy
 * file of t's dtype: f32 '<f4', f64 '<f8', i64 '<i8', i32 '<i4', u8 '|u1',
 * bool '|b1' (little-endian, as on the machines tensortrace runs on).
 * Fails with a message naming the path: TT_EFAKE for a fake tensor,
 * TT_EINVAL for a symbolic size, TT_EINTERNAL when writing fails. */
tt_status tt_npy_write(const tt_tensor *t, const char *path);

#endif /* TT_TOOLS_NPY_H */
