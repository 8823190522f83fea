/* The custom ops of PyTorch's "Python custom operators" tutorial, in C, as
 * a small module the demo (tools/demo.c) and the `tt` tool's example model
 * library share, and the tests (tests/test_tutorial.c, test_opcheck.c,
 * test_custom_ops.c) use; the README walks through them.
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
 *
 * The kernels are exported too, so that tests can define these ops (or
 * variants of them: another fake kernel, no autograd, another schema) in a
 * library they control; tutorial_ops_register is the one place that
 * defines them as the demo and the `tt` tool's example library have them.
 * The tutorial's gradcheck op, numpy_mul(Tensor x, *, float val) -> Tensor,
 * is only exported as kernels, for the tests.
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

/* ------------------------------------------------ the kernels, for tests */

/* crop's argument checks, which every crop kernel shares: argument #1 a
 * (C, H, W) picture, argument #2 a box inside it (sizes compared with
 * tt_size_le, so symbolic sizes work). On success *pic and *box are
 * borrowed from the frame; on failure the frame holds the message. */
tt_status tutorial_crop_args(tt_frame *f, tt_tensor **pic, const int64_t **box);
/* crop's real kernel; its result is a (C, h, w) view of a channels-last
 * (h, w, C) buffer: strides (1, w*C, C). */
tt_status tutorial_crop_kernel(tt_frame *f);
/* crop's fake kernel: the real kernel's metadata from metadata alone. */
tt_status tutorial_crop_fake(tt_frame *f);
/* The broken fake kernel: right shape, contiguous (wrong) strides. */
tt_status tutorial_crop_fake_nopermute(tt_frame *f);
/* crop's autograd: saves pic's shape and the box corner; backward pastes
 * the gradient into zeros through the dispatcher's mylib::paste. */
tt_status tutorial_crop_setup_context(tt_autograd_ctx *ctx, const tt_value *inputs,
                                      int ninputs, const tt_value *output, int noutputs);
tt_status tutorial_crop_backward(tt_autograd_ctx *ctx, tt_tensor *const *grads, int ngrads,
                                 tt_tensor **grad_inputs, int ninputs);
/* paste's real and fake kernels (arguments im1, im2, coord). */
tt_status tutorial_paste_kernel(tt_frame *f);
tt_status tutorial_paste_fake(tt_frame *f);
/* numpy_sin's kernel (arguments input, output: one shape, f32 or f64). */
tt_status tutorial_numpy_sin_kernel(tt_frame *f);
/* numpy_mul: one function for the real and the fake kernel (arguments x,
 * f32 or f64, and optionally val, default 1), and its autograd. */
tt_status tutorial_numpy_mul_kernel(tt_frame *f);
tt_status tutorial_numpy_mul_setup_context(tt_autograd_ctx *ctx, const tt_value *inputs,
                                           int ninputs, const tt_value *output, int noutputs);
tt_status tutorial_numpy_mul_backward(tt_autograd_ctx *ctx, tt_tensor *const *grads,
                                      int ngrads, tt_tensor **grad_inputs, int ninputs);

#endif /* TUTORIAL_OPS_H */
