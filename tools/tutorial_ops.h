/* The custom ops of PyTorch's "Python custom operators" tutorial, in C, as
 * a small module the demo (tools/demo.c) and the `tt` tool's example model
 * library share. tests/test_tutorial.c has the same ops as test fixtures,
 * with their tests; the README walks through them.
 *
 *   mylib::crop(Tensor pic, int[4] box) -> Tensor
 *       pic is (C, H, W), box = (x0, y0, x1, y1); the result is
 *       (C, y1-y0, x1-x0), a permuted view of a channels-last (h, w, C)
 *       buffer, as pil_to_tensor returns it. Fake kernel
 *       pic.new_empty(h, w, C).permute(2, 0, 1); autograd through paste.
 *   mylib::paste(Tensor im1, Tensor im2, int[2] coord) -> Tensor
 *       a copy of im1 (laid out as empty_like(im1)) with im2 at coord.
 *   mylib::numpy_sin(Tensor input, Tensor(a!) output) -> ()
 *       writes sin(input) into output; cpu only, no fake kernel (a mutable
 *       op that returns nothing needs none).
 *   mylib::crop_nopermute(Tensor pic, int[4] box) -> Tensor
 *       deliberately broken: crop's kernel with a fake kernel that forgets
 *       the permute, so its strides disagree with the real ones; opcheck's
 *       faketensor check catches it.
 */
#ifndef TUTORIAL_OPS_H
#define TUTORIAL_OPS_H

#include "tensortrace.h"

/* Defines the ops above in a new DEF library "mylib" and hands it to
 * *out_lib (the caller frees it with tt_library_free, which removes the
 * ops). On failure *out_lib is NULL and nothing stays registered; "mylib"
 * already defined elsewhere is TT_EEXIST. */
tt_status tutorial_ops_register(tt_library **out_lib);

/* crop as a plain C function, the way code looks before it becomes a
 * custom op: it reads the pixels with tt_data, so under a trace it is a
 * graph break (a fullgraph trace fails, naming this function's line).
 * pic is (C, H, W) of any dtype, box = (x0, y0, x1, y1) inside it; *out
 * receives a new reference laid out as mylib::crop's result. Borrows pic. */
tt_status tutorial_crop_plain(const tt_tensor *pic, const int64_t box[4], tt_tensor **out);

#endif /* TUTORIAL_OPS_H */
