/* Every built-in op, one row each: the C counterpart of PyTorch's
 * native_functions.yaml and derivatives.yaml side by side. Internal (not
 * installed).
 *
 * A row reads
 *
 *   X(FAMILY, ID, "schema", kernel, fake, backward, setup_context, data, flags)
 *
 * FAMILY   the ops/ file that holds the functions the row names:
 *          BINARY ops/binary.c, UNARY ops/unary.c, WHERE_CLAMP
 *          ops/where_clamp.c, REDUCE ops/reduce.c, LINALG
 *          ops/linalg.c, SHAPE ops/shape.c, VIEWS ops/view_ops.c, LOSS
 *          ops/loss.c, FACTORIES ops/factories.c, EMBED
 *          ops/embedding.c, NORMALIZATION ops/normalization.c, ATTENTION
 *          ops/attention.c, OPTIMIZER ops/optimizer.c, CONV
 *          ops/convolution.c, POOL ops/pooling.c, PAD_UPSAMPLE
 *          ops/pad_upsample.c, ACTIVATION ops/activation.c, DROPOUT
 *          ops/dropout.c, CHANNEL_NORM ops/channel_norm.c, INDEX
 *          ops/indexing.c, ADV_INDEX ops/advanced_index.c, SORT_SCAN
 *          ops/sort_scan.c, STATS ops/reduce_stats.c, RANDOM
 *          ops/random.c, DISTANCE ops/distance.c, GRID_SAMPLE
 *          ops/grid_sample.c, POOL3D ops/pool3d.c (ops/ops_impl.h lists
 *          them too).
 * ID       the op's compile-time identity, TT_OP_<ID>: the name with the
 *          overload, upper-cased, "." and "::" folded to "_" and the
 *          namespace dropped (tt::add_.Tensor is TT_OP_ADD__TENSOR).
 *          Built-ins call each other by it (tt__op(TT_OP_VIEW)), never by
 *          name; names are for users and tools.
 * kernel   the cpu kernel (a tt_kernel_fn).
 * fake     the fake (meta) kernel. Most rows name the kernel itself: one
 *          function computes the output's metadata and, for real inputs
 *          only, its data, so the two cannot disagree.
 * backward, setup_context
 *          the derivative, written with ops; NULL for none (then a call
 *          that needs a gradient fails, naming the op).
 * data     the row's static data, an integer constant (0 for none): kernels
 *          read it with tt_frame_userdata, backward rules with
 *          tt_ctx_userdata, so one function serves several rows (softmax
 *          and log_softmax) without reading the op's name.
 * flags    0, or TT_BUILTIN_NONDIFF: the outputs never carry a gradient;
 *          TT_BUILTIN_SAVES_SELF: an in-place op whose derivative needs
 *          self as it was before the write (mul_.Tensor: d/dother = g *
 *          old self). Autograd copies self before the kernel runs, through
 *          the modes above it (so a trace records the copy), and
 *          setup_context sees the copy as its argument 0, as PyTorch's
 *          original_self. Or'ed in, the op's tags, as a user op's
 *          spec.tags: TT_BUILTIN_POINTWISE (PyTorch's `pointwise`: what
 *          compiled plans fuse, when ops/pointwise_ops.h has the row's
 *          formula), TT_BUILTIN_INPLACE, TT_BUILTIN_TAGS(any tt_tag).
 *
 * The runtime expands the table only for the ids (it cannot see the
 * functions); each ops/ family file expands its own rows into specs
 * (TT__FAMILY_ROWS in ops/ops_impl.h) and registers them through
 * tt_custom_op_define, the call a user's custom op goes through. */
#ifndef TT_BUILTIN_OPS_H
#define TT_BUILTIN_OPS_H

#include "tt_runtime.h"

#include <stdatomic.h>

#define TT_BUILTIN_NONDIFF 1
#define TT_BUILTIN_SAVES_SELF 2
/* The op's tags (tt_tag bits, as a user op's spec.tags) ride in the flags
 * above bit 8: TT_BUILTIN_TAGS(TT_TAG_POINTWISE). */
#define TT_BUILTIN_TAG_SHIFT 8
#define TT_BUILTIN_TAGS(tags) ((unsigned)(tags) << TT_BUILTIN_TAG_SHIFT)
#define TT_BUILTIN_POINTWISE TT_BUILTIN_TAGS(TT_TAG_POINTWISE)
#define TT_BUILTIN_INPLACE TT_BUILTIN_TAGS(TT_TAG_INPLACE)

/* clang-format off */
#define TT_BUILTIN_OPS(X) \
    /* ---- ops/view_ops.c: the runtime's views and copies as ops ---------- */ \
    X(VIEWS, VIEW, "tt::view(Tensor(a) self, SymInt[] size) -> Tensor(a)", \
          view_kernel, view_kernel, reshape_backward, setup_shape, 0, 0) \
    X(VIEWS, RESHAPE, "tt::reshape(Tensor(a) self, SymInt[] shape) -> Tensor(a)", \
          reshape_kernel, reshape_kernel, reshape_backward, setup_shape, 0, 0) \
    X(VIEWS, PERMUTE, "tt::permute(Tensor(a) self, int[] dims) -> Tensor(a)", \
          permute_kernel, permute_kernel, permute_backward, setup_shape, 0, 0) \
    X(VIEWS, TRANSPOSE_INT, "tt::transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)", \
          transpose_kernel, transpose_kernel, transpose_backward, setup_shape, TRANSPOSE_DIMS, 0) \
    X(VIEWS, T, "tt::t(Tensor(a) self) -> Tensor(a)", \
          t_kernel, t_kernel, transpose_backward, setup_shape, TRANSPOSE_T, 0) \
    X(VIEWS, NARROW, "tt::narrow(Tensor(a) self, int dim, SymInt start, SymInt length) -> Tensor(a)", \
          narrow_kernel, narrow_kernel, slice_backward, setup_shape, SLICE_NARROW, 0) \
    X(VIEWS, SLICE_TENSOR, "tt::slice.Tensor(Tensor(a) self, int dim=0, SymInt? start=None, " \
          "SymInt? end=None, SymInt step=1) -> Tensor(a)", \
          slice_kernel, slice_kernel, slice_backward, setup_shape, SLICE_RANGE, 0) \
    X(VIEWS, SELECT_INT, "tt::select.int(Tensor(a) self, int dim, SymInt index) -> Tensor(a)", \
          select_kernel, select_kernel, select_backward, setup_shape, 0, 0) \
    X(VIEWS, EXPAND, "tt::expand(Tensor(a) self, SymInt[] size, *, bool implicit=False) -> Tensor(a)", \
          expand_kernel, expand_kernel, identity_backward, NULL, 0, 0) \
    X(VIEWS, SQUEEZE_DIM, "tt::squeeze.dim(Tensor(a) self, int dim) -> Tensor(a)", \
          squeeze_dim_kernel, squeeze_dim_kernel, reshape_backward, setup_shape, 0, 0) \
    X(VIEWS, SQUEEZE, "tt::squeeze(Tensor(a) self) -> Tensor(a)", \
          squeeze_kernel, squeeze_kernel, reshape_backward, setup_shape, 0, 0) \
    /* PyTorch 2.0's squeeze.dims (1.13 has none): several dims at once. */ \
    X(VIEWS, SQUEEZE_DIMS, "tt::squeeze.dims(Tensor(a) self, int[] dim) -> Tensor(a)", \
          squeeze_dims_kernel, squeeze_dims_kernel, reshape_backward, setup_shape, 0, 0) \
    X(VIEWS, UNSQUEEZE, "tt::unsqueeze(Tensor(a) self, int dim) -> Tensor(a)", \
          unsqueeze_kernel, unsqueeze_kernel, reshape_backward, setup_shape, 0, 0) \
    X(VIEWS, FLATTEN_USING_INTS, "tt::flatten.using_ints(Tensor(a) self, int start_dim=0, " \
          "int end_dim=-1) -> Tensor(a)", \
          flatten_kernel, flatten_kernel, reshape_backward, setup_shape, 0, 0) \
    /* as_strided has no derivative here (PyTorch's needs the base's \
     * geometry); a requires-grad input is a clear error. */ \
    X(VIEWS, AS_STRIDED, "tt::as_strided(Tensor(a) self, SymInt[] size, SymInt[] stride, " \
          "SymInt? storage_offset=None) -> Tensor(a)", \
          as_strided_kernel, as_strided_kernel, NULL, NULL, 0, 0) \
    X(VIEWS, DETACH, "tt::detach(Tensor(a) self) -> Tensor(a)", \
          detach_kernel, detach_kernel, NULL, NULL, 0, TT_BUILTIN_NONDIFF) \
    /* memory_format is PyTorch's MemoryFormat as a string ("preserve_format", \
     * "contiguous_format", "channels_last", "channels_last_3d"): the schema \
     * language here has no enum type for it. */ \
    X(VIEWS, CONTIGUOUS, "tt::contiguous(Tensor(a) self, *, " \
          "str memory_format=\"contiguous_format\") -> Tensor(a)", \
          contiguous_kernel, contiguous_kernel, identity_backward, NULL, 0, 0) \
    X(VIEWS, CLONE, "tt::clone(Tensor self, *, str memory_format=\"preserve_format\") -> Tensor", \
          clone_kernel, clone_kernel, identity_backward, NULL, 0, 0) \
    /* PyTorch's _to_copy takes a keyword-only `ScalarType? dtype=None` \
     * among layout/device options; here dtype is the one option. */ \
    X(VIEWS, _TO_COPY, "tt::_to_copy(Tensor self, ScalarType dtype) -> Tensor", \
          to_copy_kernel, to_copy_kernel, identity_backward, NULL, 0, 0) \
    X(VIEWS, COPY_, "tt::copy_(Tensor(a!) self, Tensor src) -> Tensor(a!)", \
          copy_kernel, copy_kernel, copy_backward, NULL, 0, 0) \
    X(VIEWS, FILL__SCALAR, "tt::fill_.Scalar(Tensor(a!) self, Scalar value) -> Tensor(a!)", \
          fill_kernel, fill_kernel, no_grad_backward, NULL, 0, 0) \
    /* Core ATen's functional forms of copy_ and fill_, and alias */ \
    X(VIEWS, COPY, "tt::copy(Tensor self, Tensor src, bool non_blocking=False) -> Tensor", \
          copy_functional_kernel, copy_functional_kernel, copy_backward, NULL, 0, 0) \
    X(VIEWS, FILL_SCALAR, "tt::fill.Scalar(Tensor self, Scalar value) -> Tensor", \
          fill_functional_kernel, fill_functional_kernel, zeros_backward, NULL, 0, 0) \
    X(VIEWS, ALIAS, "tt::alias(Tensor(a) self) -> Tensor(a)", \
          alias_kernel, alias_kernel, identity_backward, NULL, 0, 0) \
    /* Metadata as values (Core ATen's size queries), and an element's */ \
    X(VIEWS, SYM_SIZE_INT, "tt::sym_size.int(Tensor self, int dim) -> SymInt", \
          meta_query_kernel, meta_query_kernel, NULL, NULL, META_SIZE, 0) \
    X(VIEWS, SYM_STRIDE_INT, "tt::sym_stride.int(Tensor self, int dim) -> SymInt", \
          meta_query_kernel, meta_query_kernel, NULL, NULL, META_STRIDE, 0) \
    X(VIEWS, SYM_NUMEL, "tt::sym_numel(Tensor self) -> SymInt", \
          meta_query_kernel, meta_query_kernel, NULL, NULL, META_NUMEL, 0) \
    X(VIEWS, SYM_STORAGE_OFFSET, "tt::sym_storage_offset(Tensor self) -> SymInt", \
          meta_query_kernel, meta_query_kernel, NULL, NULL, META_OFFSET, 0) \
    X(VIEWS, _LOCAL_SCALAR_DENSE, "tt::_local_scalar_dense(Tensor self) -> Scalar", \
          local_scalar_kernel, local_scalar_kernel, NULL, NULL, 0, \
          TT_BUILTIN_TAGS(TT_TAG_DATA_DEPENDENT_OUTPUT)) \
    X(VIEWS, SLICE_BACKWARD, "tt::slice_backward(Tensor grad_output, SymInt[] input_sizes, " \
          "int dim, SymInt start, SymInt end, SymInt step) -> Tensor", \
          slice_backward_kernel, slice_backward_kernel, NULL, NULL, 0, 0) \
    X(VIEWS, SELECT_BACKWARD, "tt::select_backward(Tensor grad_output, SymInt[] input_sizes, " \
          "int dim, SymInt index) -> Tensor", \
          select_backward_kernel, select_backward_kernel, NULL, NULL, 0, 0) \
    \
    /* ---- ops/binary.c: arithmetic and comparisons ---------------------- */ \
    X(BINARY, ADD_TENSOR, "tt::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", \
          binary_kernel, binary_kernel, add_sub_backward, setup_alpha, BIN_ADD, TT_BUILTIN_POINTWISE) \
    X(BINARY, ADD_SCALAR, "tt::add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor", \
          binary_kernel, binary_kernel, pass_through_backward, NULL, BIN_ADD, TT_BUILTIN_POINTWISE) \
    X(BINARY, ADD__TENSOR, "tt::add_.Tensor(Tensor(a!) self, Tensor other, *, " \
          "Scalar alpha=1) -> Tensor(a!)", \
          binary_kernel, binary_kernel, add_sub_backward, setup_alpha, BIN_ADD, TT_BUILTIN_INPLACE) \
    X(BINARY, SUB_TENSOR, "tt::sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", \
          binary_kernel, binary_kernel, add_sub_backward, setup_alpha, BIN_SUB, TT_BUILTIN_POINTWISE) \
    X(BINARY, SUB_SCALAR, "tt::sub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor", \
          binary_kernel, binary_kernel, pass_through_backward, NULL, BIN_SUB, TT_BUILTIN_POINTWISE) \
    X(BINARY, SUB__TENSOR, "tt::sub_.Tensor(Tensor(a!) self, Tensor other, *, " \
          "Scalar alpha=1) -> Tensor(a!)", \
          binary_kernel, binary_kernel, add_sub_backward, setup_alpha, BIN_SUB, TT_BUILTIN_INPLACE) \
    X(BINARY, ADD__SCALAR, "tt::add_.Scalar(Tensor(a!) self, Scalar other, Scalar alpha=1) " \
          "-> Tensor(a!)", \
          binary_kernel, binary_kernel, pass_through_backward, NULL, BIN_ADD, TT_BUILTIN_INPLACE) \
    X(BINARY, SUB__SCALAR, "tt::sub_.Scalar(Tensor(a!) self, Scalar other, Scalar alpha=1) " \
          "-> Tensor(a!)", \
          binary_kernel, binary_kernel, pass_through_backward, NULL, BIN_SUB, TT_BUILTIN_INPLACE) \
    X(BINARY, MUL_TENSOR, "tt::mul.Tensor(Tensor self, Tensor other) -> Tensor", \
          binary_kernel, binary_kernel, mul_backward, setup_mul, BIN_MUL, TT_BUILTIN_POINTWISE) \
    X(BINARY, MUL_SCALAR, "tt::mul.Scalar(Tensor self, Scalar other) -> Tensor", \
          binary_kernel, binary_kernel, mul_scalar_backward, setup_scalar_other, BIN_MUL, TT_BUILTIN_POINTWISE) \
    X(BINARY, MUL__TENSOR, "tt::mul_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)", \
          binary_kernel, binary_kernel, mul_backward, setup_mul, BIN_MUL, TT_BUILTIN_SAVES_SELF | TT_BUILTIN_INPLACE) \
    X(BINARY, MUL__SCALAR, "tt::mul_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)", \
          binary_kernel, binary_kernel, mul_scalar_backward, setup_scalar_other, BIN_MUL, TT_BUILTIN_INPLACE) \
    X(BINARY, DIV_TENSOR, "tt::div.Tensor(Tensor self, Tensor other) -> Tensor", \
          binary_kernel, binary_kernel, div_backward, setup_div, BIN_DIV, TT_BUILTIN_POINTWISE) \
    X(BINARY, DIV_SCALAR, "tt::div.Scalar(Tensor self, Scalar other) -> Tensor", \
          binary_kernel, binary_kernel, div_scalar_backward, setup_scalar_other, BIN_DIV, TT_BUILTIN_POINTWISE) \
    X(BINARY, DIV__TENSOR, "tt::div_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)", \
          binary_kernel, binary_kernel, div_backward, setup_div, BIN_DIV, TT_BUILTIN_INPLACE) \
    X(BINARY, DIV__SCALAR, "tt::div_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)", \
          binary_kernel, binary_kernel, div_scalar_backward, setup_scalar_other, BIN_DIV, TT_BUILTIN_INPLACE) \
    /* div with a rounding mode (None, "trunc", "floor"); rounding has a \
     * zero derivative, None is true division with div's. */ \
    X(BINARY, DIV_TENSOR_MODE, "tt::div.Tensor_mode(Tensor self, Tensor other, *, " \
          "str? rounding_mode) -> Tensor", \
          div_mode_kernel, div_mode_kernel, div_mode_backward, setup_div_mode, BIN_DIV, TT_BUILTIN_POINTWISE) \
    X(BINARY, DIV_SCALAR_MODE, "tt::div.Scalar_mode(Tensor self, Scalar other, *, " \
          "str? rounding_mode) -> Tensor", \
          div_mode_kernel, div_mode_kernel, div_mode_backward, setup_div_mode, BIN_DIV, TT_BUILTIN_POINTWISE) \
    X(BINARY, DIV__TENSOR_MODE, "tt::div_.Tensor_mode(Tensor(a!) self, Tensor other, *, " \
          "str? rounding_mode) -> Tensor(a!)", \
          div_mode_kernel, div_mode_kernel, div_mode_backward, setup_div_mode, BIN_DIV, TT_BUILTIN_INPLACE) \
    X(BINARY, DIV__SCALAR_MODE, "tt::div_.Scalar_mode(Tensor(a!) self, Scalar other, *, " \
          "str? rounding_mode) -> Tensor(a!)", \
          div_mode_kernel, div_mode_kernel, div_mode_backward, setup_div_mode, BIN_DIV, TT_BUILTIN_INPLACE) \
    X(BINARY, POW_TENSOR_TENSOR, "tt::pow.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor", \
          binary_kernel, binary_kernel, pow_backward, save_all, BIN_POW, TT_BUILTIN_POINTWISE) \
    X(BINARY, POW_TENSOR_SCALAR, "tt::pow.Tensor_Scalar(Tensor self, Scalar exponent) -> Tensor", \
          binary_kernel, binary_kernel, pow_scalar_backward, setup_pow_scalar, BIN_POW, TT_BUILTIN_POINTWISE) \
    X(BINARY, POW_SCALAR, "tt::pow.Scalar(Scalar self, Tensor exponent) -> Tensor", \
          pow_base_kernel, pow_base_kernel, pow_base_backward, setup_pow_base, BIN_POW, TT_BUILTIN_POINTWISE) \
    X(BINARY, EQ_TENSOR, "tt::eq.Tensor(Tensor self, Tensor other) -> Tensor", \
          binary_kernel, binary_kernel, NULL, NULL, BIN_EQ, TT_BUILTIN_POINTWISE) \
    X(BINARY, EQ_SCALAR, "tt::eq.Scalar(Tensor self, Scalar other) -> Tensor", \
          binary_kernel, binary_kernel, NULL, NULL, BIN_EQ, TT_BUILTIN_POINTWISE) \
    X(BINARY, NE_TENSOR, "tt::ne.Tensor(Tensor self, Tensor other) -> Tensor", \
          binary_kernel, binary_kernel, NULL, NULL, BIN_NE, TT_BUILTIN_POINTWISE) \
    X(BINARY, NE_SCALAR, "tt::ne.Scalar(Tensor self, Scalar other) -> Tensor", \
          binary_kernel, binary_kernel, NULL, NULL, BIN_NE, TT_BUILTIN_POINTWISE) \
    X(BINARY, LT_TENSOR, "tt::lt.Tensor(Tensor self, Tensor other) -> Tensor", \
          binary_kernel, binary_kernel, NULL, NULL, BIN_LT, TT_BUILTIN_POINTWISE) \
    X(BINARY, LT_SCALAR, "tt::lt.Scalar(Tensor self, Scalar other) -> Tensor", \
          binary_kernel, binary_kernel, NULL, NULL, BIN_LT, TT_BUILTIN_POINTWISE) \
    X(BINARY, LE_TENSOR, "tt::le.Tensor(Tensor self, Tensor other) -> Tensor", \
          binary_kernel, binary_kernel, NULL, NULL, BIN_LE, TT_BUILTIN_POINTWISE) \
    X(BINARY, LE_SCALAR, "tt::le.Scalar(Tensor self, Scalar other) -> Tensor", \
          binary_kernel, binary_kernel, NULL, NULL, BIN_LE, TT_BUILTIN_POINTWISE) \
    X(BINARY, GT_TENSOR, "tt::gt.Tensor(Tensor self, Tensor other) -> Tensor", \
          binary_kernel, binary_kernel, NULL, NULL, BIN_GT, TT_BUILTIN_POINTWISE) \
    X(BINARY, GT_SCALAR, "tt::gt.Scalar(Tensor self, Scalar other) -> Tensor", \
          binary_kernel, binary_kernel, NULL, NULL, BIN_GT, TT_BUILTIN_POINTWISE) \
    X(BINARY, GE_TENSOR, "tt::ge.Tensor(Tensor self, Tensor other) -> Tensor", \
          binary_kernel, binary_kernel, NULL, NULL, BIN_GE, TT_BUILTIN_POINTWISE) \
    X(BINARY, GE_SCALAR, "tt::ge.Scalar(Tensor self, Scalar other) -> Tensor", \
          binary_kernel, binary_kernel, NULL, NULL, BIN_GE, TT_BUILTIN_POINTWISE) \
    /* maximum/minimum propagate NaN; the gradient is split half and half \
     * between equal operands (PyTorch's). */ \
    X(BINARY, MAXIMUM, "tt::maximum(Tensor self, Tensor other) -> Tensor", \
          binary_kernel, binary_kernel, minmax_backward, setup_minmax, BIN_MAXIMUM, TT_BUILTIN_POINTWISE) \
    X(BINARY, MINIMUM, "tt::minimum(Tensor self, Tensor other) -> Tensor", \
          binary_kernel, binary_kernel, minmax_backward, setup_minmax, BIN_MINIMUM, TT_BUILTIN_POINTWISE) \
    /* fmod (the sign of self, C's fmod) and remainder (the sign of other, \
     * Python's %); an integer divisor of zero is refused (ZeroDivisionError) */ \
    X(BINARY, FMOD_TENSOR, "tt::fmod.Tensor(Tensor self, Tensor other) -> Tensor", \
          binary_kernel, binary_kernel, mod_backward, setup_mod, BIN_FMOD, TT_BUILTIN_POINTWISE) \
    X(BINARY, FMOD_SCALAR, "tt::fmod.Scalar(Tensor self, Scalar other) -> Tensor", \
          binary_kernel, binary_kernel, pass_through_backward, NULL, BIN_FMOD, TT_BUILTIN_POINTWISE) \
    X(BINARY, REMAINDER_TENSOR, "tt::remainder.Tensor(Tensor self, Tensor other) -> Tensor", \
          binary_kernel, binary_kernel, mod_backward, setup_mod, BIN_REMAINDER, TT_BUILTIN_POINTWISE) \
    X(BINARY, REMAINDER_SCALAR, "tt::remainder.Scalar(Tensor self, Scalar other) -> Tensor", \
          binary_kernel, binary_kernel, pass_through_backward, NULL, BIN_REMAINDER, TT_BUILTIN_POINTWISE) \
    X(BINARY, ATAN2, "tt::atan2(Tensor self, Tensor other) -> Tensor", \
          binary_kernel, binary_kernel, atan2_backward, setup_minmax, BIN_ATAN2, TT_BUILTIN_POINTWISE) \
    /* Core ATen lists this one out= form; tt has no other (its ops allocate \
     * their results or write into self). */ \
    X(BINARY, ATAN2_OUT, "tt::atan2.out(Tensor self, Tensor other, *, Tensor(a!) out) " \
          "-> Tensor(a!)", \
          binary_out_kernel, binary_out_kernel, NULL, NULL, BIN_ATAN2, 0) \
    /* Logical ops take any dtype (nonzero is true) and give bool. */ \
    X(BINARY, LOGICAL_AND, "tt::logical_and(Tensor self, Tensor other) -> Tensor", \
          binary_kernel, binary_kernel, NULL, NULL, BIN_LOGICAL_AND, TT_BUILTIN_NONDIFF | TT_BUILTIN_POINTWISE) \
    X(BINARY, LOGICAL_OR, "tt::logical_or(Tensor self, Tensor other) -> Tensor", \
          binary_kernel, binary_kernel, NULL, NULL, BIN_LOGICAL_OR, TT_BUILTIN_NONDIFF | TT_BUILTIN_POINTWISE) \
    X(BINARY, LOGICAL_XOR, "tt::logical_xor(Tensor self, Tensor other) -> Tensor", \
          binary_kernel, binary_kernel, NULL, NULL, BIN_LOGICAL_XOR, TT_BUILTIN_NONDIFF | TT_BUILTIN_POINTWISE) \
    /* Bitwise ops: integers and bool only (floats refused, as PyTorch). */ \
    X(BINARY, BITWISE_AND_TENSOR, "tt::bitwise_and.Tensor(Tensor self, Tensor other) -> Tensor", \
          binary_kernel, binary_kernel, NULL, NULL, BIN_BITWISE_AND, TT_BUILTIN_NONDIFF | TT_BUILTIN_POINTWISE) \
    X(BINARY, BITWISE_AND_SCALAR, "tt::bitwise_and.Scalar(Tensor self, Scalar other) -> Tensor", \
          binary_kernel, binary_kernel, NULL, NULL, BIN_BITWISE_AND, TT_BUILTIN_NONDIFF | TT_BUILTIN_POINTWISE) \
    X(BINARY, BITWISE_OR_TENSOR, "tt::bitwise_or.Tensor(Tensor self, Tensor other) -> Tensor", \
          binary_kernel, binary_kernel, NULL, NULL, BIN_BITWISE_OR, TT_BUILTIN_NONDIFF | TT_BUILTIN_POINTWISE) \
    X(BINARY, BITWISE_OR_SCALAR, "tt::bitwise_or.Scalar(Tensor self, Scalar other) -> Tensor", \
          binary_kernel, binary_kernel, NULL, NULL, BIN_BITWISE_OR, TT_BUILTIN_NONDIFF | TT_BUILTIN_POINTWISE) \
    X(BINARY, BITWISE_XOR_TENSOR, "tt::bitwise_xor.Tensor(Tensor self, Tensor other) -> Tensor", \
          binary_kernel, binary_kernel, NULL, NULL, BIN_BITWISE_XOR, TT_BUILTIN_NONDIFF | TT_BUILTIN_POINTWISE) \
    X(BINARY, BITWISE_XOR_SCALAR, "tt::bitwise_xor.Scalar(Tensor self, Scalar other) -> Tensor", \
          binary_kernel, binary_kernel, NULL, NULL, BIN_BITWISE_XOR, TT_BUILTIN_NONDIFF | TT_BUILTIN_POINTWISE) \
    /* ---- ops/unary.c: unary math ---------------------------------------- */ \
    X(UNARY, NEG, "tt::neg(Tensor self) -> Tensor", \
          unary_kernel, unary_kernel, unary_backward, setup_unary, UN_NEG, TT_BUILTIN_POINTWISE) \
    X(UNARY, EXP, "tt::exp(Tensor self) -> Tensor", \
          unary_kernel, unary_kernel, unary_backward, setup_unary, UN_EXP, TT_BUILTIN_POINTWISE) \
    X(UNARY, LOG, "tt::log(Tensor self) -> Tensor", \
          unary_kernel, unary_kernel, unary_backward, setup_unary, UN_LOG, TT_BUILTIN_POINTWISE) \
    X(UNARY, SQRT, "tt::sqrt(Tensor self) -> Tensor", \
          unary_kernel, unary_kernel, unary_backward, setup_unary, UN_SQRT, TT_BUILTIN_POINTWISE) \
    X(UNARY, RSQRT, "tt::rsqrt(Tensor self) -> Tensor", \
          unary_kernel, unary_kernel, unary_backward, setup_unary, UN_RSQRT, TT_BUILTIN_POINTWISE) \
    X(UNARY, SIN, "tt::sin(Tensor self) -> Tensor", \
          unary_kernel, unary_kernel, unary_backward, setup_unary, UN_SIN, TT_BUILTIN_POINTWISE) \
    X(UNARY, COS, "tt::cos(Tensor self) -> Tensor", \
          unary_kernel, unary_kernel, unary_backward, setup_unary, UN_COS, TT_BUILTIN_POINTWISE) \
    X(UNARY, TANH, "tt::tanh(Tensor self) -> Tensor", \
          unary_kernel, unary_kernel, unary_backward, setup_unary, UN_TANH, TT_BUILTIN_POINTWISE) \
    X(UNARY, SIGMOID, "tt::sigmoid(Tensor self) -> Tensor", \
          unary_kernel, unary_kernel, unary_backward, setup_unary, UN_SIGMOID, TT_BUILTIN_POINTWISE) \
    X(UNARY, RELU, "tt::relu(Tensor self) -> Tensor", \
          unary_kernel, unary_kernel, unary_backward, setup_unary, UN_RELU, TT_BUILTIN_POINTWISE) \
    X(UNARY, RELU_, "tt::relu_(Tensor(a!) self) -> Tensor(a!)", \
          unary_kernel, unary_kernel, unary_backward, setup_unary, UN_RELU, TT_BUILTIN_INPLACE) \
    X(UNARY, GELU, "tt::gelu(Tensor self, *, str approximate=\"none\") -> Tensor", \
          unary_kernel, unary_kernel, unary_backward, setup_unary, UN_GELU, TT_BUILTIN_POINTWISE) \
    X(UNARY, ABS, "tt::abs(Tensor self) -> Tensor", \
          unary_kernel, unary_kernel, unary_backward, setup_unary, UN_ABS, TT_BUILTIN_POINTWISE) \
    /* sign is piecewise constant: a zero gradient, as PyTorch's formula. */ \
    X(UNARY, SIGN, "tt::sign(Tensor self) -> Tensor", \
          unary_kernel, unary_kernel, unary_backward, setup_unary, UN_SIGN, TT_BUILTIN_POINTWISE) \
    X(UNARY, GELU_BACKWARD, "tt::gelu_backward(Tensor grad_output, Tensor self, *, " \
          "str approximate=\"none\") -> Tensor", \
          gelu_backward_kernel, gelu_backward_kernel, NULL, NULL, 0, TT_BUILTIN_POINTWISE) \
    X(UNARY, SILU, "tt::silu(Tensor self) -> Tensor", \
          unary_kernel, unary_kernel, unary_backward, setup_unary, UN_SILU, TT_BUILTIN_POINTWISE) \
    X(UNARY, SILU_BACKWARD, "tt::silu_backward(Tensor grad_output, Tensor self) -> Tensor", \
          gelu_backward_kernel, gelu_backward_kernel, NULL, NULL, 1, TT_BUILTIN_POINTWISE) \
    X(UNARY, ACOS, "tt::acos(Tensor self) -> Tensor", \
          unary_kernel, unary_kernel, unary_backward, setup_unary, UN_ACOS, TT_BUILTIN_POINTWISE) \
    X(UNARY, ASIN, "tt::asin(Tensor self) -> Tensor", \
          unary_kernel, unary_kernel, unary_backward, setup_unary, UN_ASIN, TT_BUILTIN_POINTWISE) \
    X(UNARY, ATAN, "tt::atan(Tensor self) -> Tensor", \
          unary_kernel, unary_kernel, unary_backward, setup_unary, UN_ATAN, TT_BUILTIN_POINTWISE) \
    X(UNARY, ACOSH, "tt::acosh(Tensor self) -> Tensor", \
          unary_kernel, unary_kernel, unary_backward, setup_unary, UN_ACOSH, TT_BUILTIN_POINTWISE) \
    X(UNARY, ASINH, "tt::asinh(Tensor self) -> Tensor", \
          unary_kernel, unary_kernel, unary_backward, setup_unary, UN_ASINH, TT_BUILTIN_POINTWISE) \
    X(UNARY, ATANH, "tt::atanh(Tensor self) -> Tensor", \
          unary_kernel, unary_kernel, unary_backward, setup_unary, UN_ATANH, TT_BUILTIN_POINTWISE) \
    X(UNARY, SINH, "tt::sinh(Tensor self) -> Tensor", \
          unary_kernel, unary_kernel, unary_backward, setup_unary, UN_SINH, TT_BUILTIN_POINTWISE) \
    X(UNARY, COSH, "tt::cosh(Tensor self) -> Tensor", \
          unary_kernel, unary_kernel, unary_backward, setup_unary, UN_COSH, TT_BUILTIN_POINTWISE) \
    X(UNARY, TAN, "tt::tan(Tensor self) -> Tensor", \
          unary_kernel, unary_kernel, unary_backward, setup_unary, UN_TAN, TT_BUILTIN_POINTWISE) \
    X(UNARY, ERF, "tt::erf(Tensor self) -> Tensor", \
          unary_kernel, unary_kernel, unary_backward, setup_unary, UN_ERF, TT_BUILTIN_POINTWISE) \
    X(UNARY, EXPM1, "tt::expm1(Tensor self) -> Tensor", \
          unary_kernel, unary_kernel, unary_backward, setup_unary, UN_EXPM1, TT_BUILTIN_POINTWISE) \
    X(UNARY, LOG1P, "tt::log1p(Tensor self) -> Tensor", \
          unary_kernel, unary_kernel, unary_backward, setup_unary, UN_LOG1P, TT_BUILTIN_POINTWISE) \
    X(UNARY, LOG2, "tt::log2(Tensor self) -> Tensor", \
          unary_kernel, unary_kernel, unary_backward, setup_unary, UN_LOG2, TT_BUILTIN_POINTWISE) \
    X(UNARY, LOG10, "tt::log10(Tensor self) -> Tensor", \
          unary_kernel, unary_kernel, unary_backward, setup_unary, UN_LOG10, TT_BUILTIN_POINTWISE) \
    X(UNARY, RECIPROCAL, "tt::reciprocal(Tensor self) -> Tensor", \
          unary_kernel, unary_kernel, unary_backward, setup_unary, UN_RECIPROCAL, TT_BUILTIN_POINTWISE) \
    /* floor, ceil, trunc and round are piecewise constant: zero gradients, \
     * as PyTorch's formulas; an integer input comes back as it is. */ \
    X(UNARY, FLOOR, "tt::floor(Tensor self) -> Tensor", \
          unary_kernel, unary_kernel, unary_backward, setup_unary, UN_FLOOR, TT_BUILTIN_POINTWISE) \
    X(UNARY, CEIL, "tt::ceil(Tensor self) -> Tensor", \
          unary_kernel, unary_kernel, unary_backward, setup_unary, UN_CEIL, TT_BUILTIN_POINTWISE) \
    X(UNARY, TRUNC, "tt::trunc(Tensor self) -> Tensor", \
          unary_kernel, unary_kernel, unary_backward, setup_unary, UN_TRUNC, TT_BUILTIN_POINTWISE) \
    X(UNARY, ROUND, "tt::round(Tensor self) -> Tensor", \
          unary_kernel, unary_kernel, unary_backward, setup_unary, UN_ROUND, TT_BUILTIN_POINTWISE) \
    /* Predicates and bitwise not: no float formula, bool results (bitwise \
     * not keeps an integer dtype); not differentiable. */ \
    X(UNARY, ISNAN, "tt::isnan(Tensor self) -> Tensor", \
          pred_kernel, pred_kernel, NULL, NULL, PRED_ISNAN, TT_BUILTIN_NONDIFF | TT_BUILTIN_POINTWISE) \
    X(UNARY, ISINF, "tt::isinf(Tensor self) -> Tensor", \
          pred_kernel, pred_kernel, NULL, NULL, PRED_ISINF, TT_BUILTIN_NONDIFF | TT_BUILTIN_POINTWISE) \
    X(UNARY, LOGICAL_NOT, "tt::logical_not(Tensor self) -> Tensor", \
          pred_kernel, pred_kernel, NULL, NULL, PRED_LOGICAL_NOT, TT_BUILTIN_NONDIFF | TT_BUILTIN_POINTWISE) \
    X(UNARY, BITWISE_NOT, "tt::bitwise_not(Tensor self) -> Tensor", \
          pred_kernel, pred_kernel, NULL, NULL, PRED_BITWISE_NOT, TT_BUILTIN_NONDIFF | TT_BUILTIN_POINTWISE) \
    /* ---- ops/where_clamp.c: where, clamp, zero_ -------------------------- */ \
    X(WHERE_CLAMP, WHERE_SELF, "tt::where.self(Tensor condition, Tensor self, Tensor other) -> Tensor", \
          where_kernel, where_kernel, where_backward, save_first, 0, TT_BUILTIN_POINTWISE) \
    X(WHERE_CLAMP, WHERE_SCALARSELF, "tt::where.ScalarSelf(Tensor condition, Scalar self, " \
          "Tensor other) -> Tensor", \
          where_kernel, where_kernel, where_backward, save_first, 0, TT_BUILTIN_POINTWISE) \
    X(WHERE_CLAMP, WHERE_SCALAROTHER, "tt::where.ScalarOther(Tensor condition, Tensor self, " \
          "Scalar other) -> Tensor", \
          where_kernel, where_kernel, where_backward, save_first, 0, TT_BUILTIN_POINTWISE) \
    X(WHERE_CLAMP, WHERE_SCALAR, "tt::where.Scalar(Tensor condition, Scalar self, Scalar other) " \
          "-> Tensor", \
          where_kernel, where_kernel, NULL, NULL, 0, TT_BUILTIN_NONDIFF | TT_BUILTIN_POINTWISE) \
    X(WHERE_CLAMP, CLAMP, "tt::clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor", \
          clamp_kernel, clamp_kernel, clamp_backward, setup_clamp, 0, TT_BUILTIN_POINTWISE) \
    X(WHERE_CLAMP, CLAMP_TENSOR, "tt::clamp.Tensor(Tensor self, Tensor? min=None, Tensor? max=None) " \
          "-> Tensor", \
          clamp_tensor_kernel, clamp_tensor_kernel, clamp_tensor_backward, setup_clamp_tensor, 0, TT_BUILTIN_POINTWISE) \
    X(WHERE_CLAMP, ZERO_, "tt::zero_(Tensor(a!) self) -> Tensor(a!)", \
          zero_kernel, zero_kernel, zero_backward, NULL, 0, 0) \
    \
    /* ---- ops/reduce.c: reductions and softmax -------------------------- */ \
    X(REDUCE, SUM_DIM_INTLIST, "tt::sum.dim_IntList(Tensor self, int[]? dim, bool keepdim=False, *, " \
          "ScalarType? dtype=None) -> Tensor", \
          reduce_kernel, reduce_kernel, reduce_backward, setup_reduce, RED_CODE(OP_SUM, 0), 0) \
    X(REDUCE, SUM, "tt::sum(Tensor self, *, ScalarType? dtype=None) -> Tensor", \
          reduce_kernel, reduce_kernel, reduce_backward, setup_reduce, RED_CODE(OP_SUM, 1), 0) \
    X(REDUCE, MEAN_DIM, "tt::mean.dim(Tensor self, int[]? dim, bool keepdim=False, *, " \
          "ScalarType? dtype=None) -> Tensor", \
          reduce_kernel, reduce_kernel, reduce_backward, setup_reduce, RED_CODE(OP_MEAN, 0), 0) \
    X(REDUCE, MEAN, "tt::mean(Tensor self, *, ScalarType? dtype=None) -> Tensor", \
          reduce_kernel, reduce_kernel, reduce_backward, setup_reduce, RED_CODE(OP_MEAN, 1), 0) \
    X(REDUCE, AMAX, "tt::amax(Tensor self, int[] dim=[], bool keepdim=False) -> Tensor", \
          reduce_kernel, reduce_kernel, reduce_backward, setup_reduce, RED_CODE(OP_AMAX, 0), 0) \
    X(REDUCE, AMIN, "tt::amin(Tensor self, int[] dim=[], bool keepdim=False) -> Tensor", \
          reduce_kernel, reduce_kernel, reduce_backward, setup_reduce, RED_CODE(OP_AMIN, 0), 0) \
    X(REDUCE, ARGMAX, "tt::argmax(Tensor self, int? dim=None, bool keepdim=False) -> Tensor", \
          argmax_kernel, argmax_kernel, NULL, NULL, 0, 0) \
    X(REDUCE, SOFTMAX_INT, "tt::softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor", \
          softmax_kernel, softmax_kernel, softmax_backward, setup_softmax, SOFTMAX_PLAIN, 0) \
    X(REDUCE, LOG_SOFTMAX_INT, "tt::log_softmax.int(Tensor self, int dim, ScalarType? dtype=None) " \
          "-> Tensor", \
          softmax_kernel, softmax_kernel, softmax_backward, setup_softmax, SOFTMAX_LOG, 0) \
    X(REDUCE, _SOFTMAX, "tt::_softmax(Tensor self, int dim, bool half_to_float) -> Tensor", \
          softmax_core_kernel, softmax_core_kernel, softmax_backward, setup_softmax, SOFTMAX_PLAIN, 0) \
    X(REDUCE, _LOG_SOFTMAX, "tt::_log_softmax(Tensor self, int dim, bool half_to_float) -> Tensor", \
          softmax_core_kernel, softmax_core_kernel, softmax_backward, setup_softmax, SOFTMAX_LOG, 0) \
    \
    /* ---- ops/reduce_stats.c: var, std, any, all ----------------------- */ \
    /* PyTorch 1.13's var/std.correction have no defaults for dim and \
     * correction (both optional); later PyTorch defaults them to None, as \
     * here. */ \
    X(STATS, VAR_CORRECTION, "tt::var.correction(Tensor self, int[1]? dim=None, *, " \
          "int? correction=None, bool keepdim=False) -> Tensor", \
          var_kernel, var_kernel, var_backward, setup_var, ST_VAR, 0) \
    X(STATS, STD_CORRECTION, "tt::std.correction(Tensor self, int[1]? dim=None, *, " \
          "int? correction=None, bool keepdim=False) -> Tensor", \
          var_kernel, var_kernel, var_backward, setup_var, ST_STD, 0) \
    X(STATS, VAR_DIM, "tt::var.dim(Tensor self, int[1]? dim, bool unbiased=True, " \
          "bool keepdim=False) -> Tensor", \
          var_dim_kernel, var_dim_kernel, var_backward, setup_var_dim, ST_VAR, 0) \
    X(STATS, ANY, "tt::any(Tensor self) -> Tensor", \
          truth_kernel, truth_kernel, NULL, NULL, TRUTH_ANY, TT_BUILTIN_NONDIFF) \
    X(STATS, ANY_DIM, "tt::any.dim(Tensor self, int dim, bool keepdim=False) -> Tensor", \
          truth_kernel, truth_kernel, NULL, NULL, TRUTH_ANY | TRUTH_DIM, TT_BUILTIN_NONDIFF) \
    X(STATS, ALL, "tt::all(Tensor self) -> Tensor", \
          truth_kernel, truth_kernel, NULL, NULL, TRUTH_ALL, TT_BUILTIN_NONDIFF) \
    X(STATS, ALL_DIM, "tt::all.dim(Tensor self, int dim, bool keepdim=False) -> Tensor", \
          truth_kernel, truth_kernel, NULL, NULL, TRUTH_ALL | TRUTH_DIM, TT_BUILTIN_NONDIFF) \
    /* PyTorch 2.2's any.dims (Core ATen) and all.dims: a list of dims */ \
    X(STATS, ANY_DIMS, "tt::any.dims(Tensor self, int[1]? dim=None, bool keepdim=False) -> Tensor", \
          truth_dims_kernel, truth_dims_kernel, NULL, NULL, TRUTH_ANY, TT_BUILTIN_NONDIFF) \
    X(STATS, ALL_DIMS, "tt::all.dims(Tensor self, int[1]? dim=None, bool keepdim=False) -> Tensor", \
          truth_dims_kernel, truth_dims_kernel, NULL, NULL, TRUTH_ALL, TT_BUILTIN_NONDIFF) \
    \
    /* ---- ops/linalg.c: matrix products through OpenBLAS --------------- */ \
    X(LINALG, MM, "tt::mm(Tensor self, Tensor mat2) -> Tensor", \
          mm_kernel, mm_kernel, matmul_backward, setup_two, 0, 0) \
    X(LINALG, BMM, "tt::bmm(Tensor self, Tensor mat2) -> Tensor", \
          bmm_kernel, bmm_kernel, matmul_backward, setup_two, 0, 0) \
    X(LINALG, MATMUL, "tt::matmul(Tensor self, Tensor other) -> Tensor", \
          matmul_kernel, matmul_kernel, matmul_backward, setup_two, 0, 0) \
    X(LINALG, LINEAR, "tt::linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor", \
          linear_kernel, linear_kernel, linear_backward, setup_linear, 0, 0) \
    X(LINALG, ADDMM, "tt::addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, " \
          "Scalar alpha=1) -> Tensor", \
          addmm_kernel, addmm_kernel, addmm_backward, setup_addmm, 0, 0) \
    \
    /* ---- ops/shape.c: joining tensors ---------------------------------- */ \
    X(SHAPE, CAT, "tt::cat(Tensor[] tensors, int dim=0) -> Tensor", \
          cat_kernel, cat_kernel, cat_backward, setup_cat, JOIN_CAT, 0) \
    X(SHAPE, STACK, "tt::stack(Tensor[] tensors, int dim=0) -> Tensor", \
          stack_kernel, stack_kernel, cat_backward, setup_cat, JOIN_STACK, 0) \
    /* Splitting: a list of narrow views of self (Tensor(a)[]). */ \
    X(SHAPE, SPLIT_WITH_SIZES, "tt::split_with_sizes(Tensor(a -> *) self, SymInt[] split_sizes, " \
          "int dim=0) -> Tensor(a)[]", \
          split_kernel, split_kernel, split_backward, setup_split, SPLIT_SIZES, 0) \
    X(SHAPE, SPLIT_TENSOR, "tt::split.Tensor(Tensor(a -> *) self, SymInt split_size, " \
          "int dim=0) -> Tensor(a)[]", \
          split_kernel, split_kernel, split_backward, setup_split, SPLIT_EVEN, 0) \
    X(SHAPE, CHUNK, "tt::chunk(Tensor(a -> *) self, int chunks, int dim=0) -> Tensor(a)[]", \
          split_kernel, split_kernel, split_backward, setup_split, SPLIT_CHUNK, 0) \
    /* Copies that move elements (contiguous results, as PyTorch's). */ \
    X(SHAPE, REPEAT, "tt::repeat(Tensor self, SymInt[] repeats) -> Tensor", \
          remap_kernel, remap_kernel, remap_backward, setup_remap, REMAP_REPEAT, 0) \
    X(SHAPE, FLIP, "tt::flip(Tensor self, int[] dims) -> Tensor", \
          remap_kernel, remap_kernel, remap_backward, setup_remap, REMAP_FLIP, 0) \
    X(SHAPE, ROLL, "tt::roll(Tensor self, int[1] shifts, int[1] dims=[]) -> Tensor", \
          remap_kernel, remap_kernel, remap_backward, setup_remap, REMAP_ROLL, 0) \
    X(SHAPE, TRIL, "tt::tril(Tensor self, int diagonal=0) -> Tensor", \
          remap_kernel, remap_kernel, remap_backward, setup_remap, REMAP_TRIL, 0) \
    X(SHAPE, TRIU, "tt::triu(Tensor self, int diagonal=0) -> Tensor", \
          remap_kernel, remap_kernel, remap_backward, setup_remap, REMAP_TRIU, 0) \
    /* PyTorch's full_like and scalar_tensor also take layout, device, \
     * pin_memory (and full_like memory_format): dtype is the one option \
     * here, as _to_copy's. */ \
    X(SHAPE, FULL_LIKE, "tt::full_like(Tensor self, Scalar fill_value, *, " \
          "ScalarType? dtype=None) -> Tensor", \
          full_like_kernel, full_like_kernel, NULL, NULL, 0, TT_BUILTIN_NONDIFF) \
    X(SHAPE, SCALAR_TENSOR, "tt::scalar_tensor(Scalar s, *, ScalarType? dtype=None) -> Tensor", \
          scalar_tensor_kernel, scalar_tensor_kernel, NULL, NULL, 0, TT_BUILTIN_NONDIFF) \
    \
    /* ---- ops/loss.c ----------------------------------------------------- */ \
    /* PyTorch's cross_entropy_loss with the reduction as a string (its \
     * aten op takes an enum) and weight, ignore_index, label_smoothing \
     * keyword-only after it, so the three-argument form keeps its order. */ \
    X(LOSS, CROSS_ENTROPY, "tt::cross_entropy(Tensor self, Tensor target, " \
          "str reduction=\"mean\", *, Tensor? weight=None, int ignore_index=-100, " \
          "float label_smoothing=0.0) -> Tensor", \
          cross_entropy_kernel, cross_entropy_kernel, ce_backward, setup_ce, 0, 0) \
    X(LOSS, CROSS_ENTROPY_BACKWARD, "tt::cross_entropy_backward(Tensor grad_output, Tensor self, " \
          "Tensor target, str reduction=\"mean\", *, Tensor? weight=None, " \
          "int ignore_index=-100, float label_smoothing=0.0) -> Tensor", \
          ce_backward_kernel, ce_backward_kernel, NULL, NULL, 0, 0) \
    /* Core ATen's nll_loss (reduction: 0 none, 1 mean, 2 sum); data 1 \
     * marks the 2d forms ([N, C, H, W]). total_weight carries no gradient. */ \
    X(LOSS, NLL_LOSS_FORWARD, "tt::nll_loss_forward(Tensor self, Tensor target, Tensor? weight, " \
          "int reduction, SymInt ignore_index) -> (Tensor output, Tensor total_weight)", \
          nll_kernel, nll_kernel, nll_backward, setup_nll, 0, 0) \
    X(LOSS, NLL_LOSS_BACKWARD, "tt::nll_loss_backward(Tensor grad_output, Tensor self, " \
          "Tensor target, Tensor? weight, int reduction, SymInt ignore_index, " \
          "Tensor total_weight) -> Tensor", \
          nll_backward_kernel, nll_backward_kernel, NULL, NULL, 0, 0) \
    X(LOSS, NLL_LOSS2D_FORWARD, "tt::nll_loss2d_forward(Tensor self, Tensor target, " \
          "Tensor? weight, int reduction, SymInt ignore_index) " \
          "-> (Tensor output, Tensor total_weight)", \
          nll_kernel, nll_kernel, nll_backward, setup_nll, 1, 0) \
    X(LOSS, NLL_LOSS2D_BACKWARD, "tt::nll_loss2d_backward(Tensor grad_output, Tensor self, " \
          "Tensor target, Tensor? weight, int reduction, SymInt ignore_index, " \
          "Tensor total_weight) -> Tensor", \
          nll_backward_kernel, nll_backward_kernel, NULL, NULL, 1, 0) \
    /* Elementwise losses; data: the kind (ops/loss.c's ploss). */ \
    X(LOSS, MSE_LOSS, "tt::mse_loss(Tensor self, Tensor target, int reduction=1) -> Tensor", \
          pl_kernel, pl_kernel, pl_derivative, setup_pl, 0, 0) \
    X(LOSS, MSE_LOSS_BACKWARD, "tt::mse_loss_backward(Tensor grad_output, Tensor self, " \
          "Tensor target, int reduction) -> Tensor", \
          pl_backward_kernel, pl_backward_kernel, NULL, NULL, 0, 0) \
    X(LOSS, SMOOTH_L1_LOSS, "tt::smooth_l1_loss(Tensor self, Tensor target, int reduction=1, " \
          "float beta=1.0) -> Tensor", \
          pl_kernel, pl_kernel, pl_derivative, setup_pl, 1, 0) \
    X(LOSS, SMOOTH_L1_LOSS_BACKWARD, "tt::smooth_l1_loss_backward(Tensor grad_output, " \
          "Tensor self, Tensor target, int reduction, float beta) -> Tensor", \
          pl_backward_kernel, pl_backward_kernel, NULL, NULL, 1, 0) \
    X(LOSS, BINARY_CROSS_ENTROPY_WITH_LOGITS, "tt::binary_cross_entropy_with_logits(Tensor self, " \
          "Tensor target, Tensor? weight=None, Tensor? pos_weight=None, int reduction=1) " \
          "-> Tensor", \
          pl_kernel, pl_kernel, pl_derivative, setup_pl, 2, 0) \
    X(LOSS, BINARY_CROSS_ENTROPY_WITH_LOGITS_BACKWARD, \
          "tt::binary_cross_entropy_with_logits_backward(Tensor grad_output, Tensor self, " \
          "Tensor target, Tensor? weight=None, Tensor? pos_weight=None, int reduction=1) " \
          "-> Tensor", \
          pl_backward_kernel, pl_backward_kernel, NULL, NULL, 2, 0) \
    \
    /* ---- ops/factories.c: factories as ops, so traced code records them  \
     * (new_empty and empty_like make tensors that do not depend on self's \
     * values: no derivative, the result requires no grad) -------------- */ \
    X(FACTORIES, EMPTY, "tt::empty(SymInt[] size, *, ScalarType? dtype=None) -> Tensor", \
          empty_kernel, empty_kernel, NULL, NULL, 0, 0) \
    X(FACTORIES, EMPTY_MEMORY_FORMAT, "tt::empty.memory_format(SymInt[] size, *, " \
          "ScalarType? dtype=None, Layout? layout=None, Device? device=None, " \
          "bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor", \
          empty_memory_format_kernel, empty_memory_format_kernel, NULL, NULL, 0, 0) \
    X(FACTORIES, EMPTY_STRIDED, "tt::empty_strided(SymInt[] size, SymInt[] stride, *, " \
          "ScalarType? dtype=None) -> Tensor", \
          empty_strided_kernel, empty_strided_kernel, NULL, NULL, 0, 0) \
    X(FACTORIES, FULL, "tt::full(SymInt[] size, Scalar fill_value, *, ScalarType? dtype=None) -> Tensor", \
          full_kernel, full_kernel, NULL, NULL, 0, 0) \
    X(FACTORIES, ARANGE_START_STEP, "tt::arange.start_step(Scalar start, Scalar end, Scalar step=1, *, " \
          "ScalarType? dtype=None) -> Tensor", \
          arange_kernel, arange_kernel, NULL, NULL, 0, 0) \
    X(FACTORIES, LINSPACE, "tt::linspace(Scalar start, Scalar end, int steps, *, " \
          "ScalarType? dtype=None) -> Tensor", \
          linspace_kernel, linspace_kernel, NULL, NULL, 0, 0) \
    X(FACTORIES, RAND, "tt::rand(SymInt[] size, *, ScalarType? dtype=None) -> Tensor", \
          random_kernel, random_kernel, NULL, NULL, RANDOM_UNIFORM, TT_BUILTIN_TAGS(TT_TAG_NONDETERMINISTIC_SEEDED)) \
    X(FACTORIES, RANDN, "tt::randn(SymInt[] size, *, ScalarType? dtype=None) -> Tensor", \
          random_kernel, random_kernel, NULL, NULL, RANDOM_NORMAL, TT_BUILTIN_TAGS(TT_TAG_NONDETERMINISTIC_SEEDED)) \
    X(FACTORIES, NEW_EMPTY, "tt::new_empty(Tensor self, SymInt[] size) -> Tensor", \
          new_empty_kernel, new_empty_kernel, NULL, NULL, 0, TT_BUILTIN_NONDIFF) \
    X(FACTORIES, EMPTY_LIKE, "tt::empty_like(Tensor self) -> Tensor", \
          empty_like_kernel, empty_like_kernel, NULL, NULL, 0, TT_BUILTIN_NONDIFF) \
    \
    /* ---- ops/embedding.c (sparse=True is refused: tt has no sparse \
     * tensors) ---------------------------------------------------------- */ \
    X(EMBED, EMBEDDING, "tt::embedding(Tensor weight, Tensor indices, SymInt padding_idx=-1, " \
          "bool scale_grad_by_freq=False, bool sparse=False) -> Tensor", \
          embedding_kernel, embedding_kernel, embedding_backward, setup_embedding, 0, 0) \
    /* PyTorch's padding_idx and scale_grad_by_freq have no defaults; \
     * here they do, so the older three-argument calls still mean it. */ \
    X(EMBED, EMBEDDING_DENSE_BACKWARD, "tt::embedding_dense_backward(Tensor grad_output, " \
          "Tensor indices, SymInt num_weights, int padding_idx=-1, " \
          "bool scale_grad_by_freq=False) -> Tensor", \
          embedding_backward_kernel, embedding_backward_kernel, NULL, NULL, 0, 0) \
    /* PyTorch's _embedding_bag and its two backward ops (1.13's schemas; \
     * sparse=True refused). Results 1-3 are integer: no gradient. */ \
    X(EMBED, _EMBEDDING_BAG, "tt::_embedding_bag(Tensor weight, Tensor indices, " \
          "Tensor offsets, bool scale_grad_by_freq=False, int mode=0, bool sparse=False, " \
          "Tensor? per_sample_weights=None, bool include_last_offset=False, " \
          "int padding_idx=-1) -> (Tensor, Tensor, Tensor, Tensor)", \
          embedding_bag_kernel, embedding_bag_kernel, embedding_bag_backward, \
          setup_embedding_bag, 0, 0) \
    X(EMBED, _EMBEDDING_BAG_DENSE_BACKWARD, "tt::_embedding_bag_dense_backward(Tensor grad, " \
          "Tensor indices, Tensor offset2bag, Tensor bag_size, Tensor maximum_indices, " \
          "SymInt num_weights, bool scale_grad_by_freq, int mode, " \
          "Tensor? per_sample_weights, int padding_idx=-1) -> Tensor", \
          embedding_bag_backward_kernel, embedding_bag_backward_kernel, NULL, NULL, 0, 0) \
    X(EMBED, _EMBEDDING_BAG_PER_SAMPLE_WEIGHTS_BACKWARD, \
          "tt::_embedding_bag_per_sample_weights_backward(Tensor grad, Tensor weight, " \
          "Tensor indices, Tensor offsets, Tensor offset2bag, int mode, " \
          "int padding_idx=-1) -> Tensor", \
          embedding_bag_psw_backward_kernel, embedding_bag_psw_backward_kernel, NULL, NULL, 0, 0) \
    /* ---- ops/normalization.c (PyTorch's layer_norm also takes \
     * cudnn_enable: not taken here) ------------------------------------ */ \
    X(NORMALIZATION, LAYER_NORM, "tt::layer_norm(Tensor input, int[] normalized_shape, " \
          "Tensor? weight=None, Tensor? bias=None, float eps=1e-05) -> Tensor", \
          layer_norm_kernel, layer_norm_kernel, layer_norm_backward, setup_layer_norm, 0, 0) \
    X(NORMALIZATION, LAYER_NORM_BACKWARD, "tt::layer_norm_backward(Tensor grad_out, Tensor input, " \
          "int[] normalized_shape, Tensor? weight, Tensor? bias, float eps) " \
          "-> (Tensor, Tensor, Tensor)", \
          layer_norm_backward_kernel, layer_norm_backward_kernel, NULL, NULL, 0, 0) \
    X(NORMALIZATION, NATIVE_LAYER_NORM, "tt::native_layer_norm(Tensor input, " \
          "SymInt[] normalized_shape, Tensor? weight, Tensor? bias, float eps) " \
          "-> (Tensor, Tensor, Tensor)", \
          native_layer_norm_kernel, native_layer_norm_kernel, native_layer_norm_backward, \
          setup_native_layer_norm, 0, 0) \
    X(NORMALIZATION, NATIVE_LAYER_NORM_BACKWARD, "tt::native_layer_norm_backward(" \
          "Tensor grad_out, Tensor input, SymInt[] normalized_shape, Tensor mean, Tensor rstd, " \
          "Tensor? weight, Tensor? bias, bool[3] output_mask) -> (Tensor, Tensor, Tensor)", \
          native_layer_norm_backward_kernel, native_layer_norm_backward_kernel, NULL, NULL, 0, 0) \
    /* rms_norm as PyTorch 2.4's F.rms_norm (eps None: the dtype's epsilon); \
     * its backward is one kernel, as layer_norm's. */ \
    X(NORMALIZATION, RMS_NORM, "tt::rms_norm(Tensor input, SymInt[] normalized_shape, " \
          "Tensor? weight=None, float? eps=None) -> Tensor", \
          rms_norm_kernel, rms_norm_kernel, rms_norm_backward, setup_rms_norm, 0, 0) \
    X(NORMALIZATION, RMS_NORM_BACKWARD, "tt::rms_norm_backward(Tensor grad_out, Tensor input, " \
          "SymInt[] normalized_shape, Tensor? weight, float? eps) -> (Tensor, Tensor)", \
          rms_norm_backward_kernel, rms_norm_backward_kernel, NULL, NULL, 0, 0) \
    /* ---- ops/channel_norm.c: PyTorch 2's _native_batch_norm_legit family \
     * (the running stats are written in training only) ---------------- */ \
    X(CHANNEL_NORM, _NATIVE_BATCH_NORM_LEGIT, "tt::_native_batch_norm_legit(Tensor input, " \
          "Tensor? weight, Tensor? bias, Tensor(a!) running_mean, Tensor(b!) running_var, " \
          "bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor)", \
          bn_kernel, bn_kernel, bn_backward, setup_bn, BN_STATS, 0) \
    X(CHANNEL_NORM, _NATIVE_BATCH_NORM_LEGIT_NO_STATS, "tt::_native_batch_norm_legit.no_stats(" \
          "Tensor input, Tensor? weight, Tensor? bias, bool training, float momentum, " \
          "float eps) -> (Tensor, Tensor, Tensor)", \
          bn_kernel, bn_kernel, bn_backward, setup_bn, BN_NO_STATS, 0) \
    X(CHANNEL_NORM, _NATIVE_BATCH_NORM_LEGIT_NO_TRAINING, \
          "tt::_native_batch_norm_legit_no_training(Tensor input, Tensor? weight, " \
          "Tensor? bias, Tensor running_mean, Tensor running_var, float momentum, " \
          "float eps) -> (Tensor, Tensor, Tensor)", \
          bn_kernel, bn_kernel, bn_backward, setup_bn, BN_NO_TRAINING, 0) \
    X(CHANNEL_NORM, NATIVE_BATCH_NORM_BACKWARD, "tt::native_batch_norm_backward(Tensor grad_out, " \
          "Tensor input, Tensor? weight, Tensor? running_mean, Tensor? running_var, " \
          "Tensor? save_mean, Tensor? save_invstd, bool train, float eps, " \
          "bool[3] output_mask) -> (Tensor, Tensor, Tensor)", \
          bn_backward_kernel, bn_backward_kernel, NULL, NULL, 0, 0) \
    X(CHANNEL_NORM, NATIVE_GROUP_NORM, "tt::native_group_norm(Tensor input, Tensor? weight, " \
          "Tensor? bias, SymInt N, SymInt C, SymInt HxW, int group, float eps) " \
          "-> (Tensor, Tensor, Tensor)", \
          gn_kernel, gn_kernel, gn_backward, setup_gn, 0, 0) \
    X(CHANNEL_NORM, NATIVE_GROUP_NORM_BACKWARD, "tt::native_group_norm_backward(" \
          "Tensor grad_out, Tensor input, Tensor mean, Tensor rstd, Tensor? weight, SymInt N, " \
          "SymInt C, SymInt HxW, int group, bool[3] output_mask) -> (Tensor, Tensor, Tensor)", \
          gn_backward_kernel, gn_backward_kernel, NULL, NULL, 0, 0) \
    /* ---- ops/attention.c ---------------------------------------------- */ \
    /* PyTorch 2.5's schema (enable_gqa) plus tt's own sliding window \
     * (`window`, with is_causal; PyTorch has none). */ \
    X(ATTENTION, SCALED_DOT_PRODUCT_ATTENTION, "tt::scaled_dot_product_attention(Tensor query, " \
          "Tensor key, Tensor value, Tensor? attn_mask=None, float dropout_p=0.0, " \
          "bool is_causal=False, *, float? scale=None, bool enable_gqa=False, " \
          "int window=0) -> Tensor", \
          sdpa_kernel, sdpa_kernel, sdpa_backward, setup_sdpa, 0, 0) \
    X(ATTENTION, SCALED_DOT_PRODUCT_ATTENTION_BACKWARD, \
          "tt::scaled_dot_product_attention_backward(Tensor grad_out, Tensor query, " \
          "Tensor key, Tensor value, bool is_causal, float? scale, bool enable_gqa=False, " \
          "Tensor? attn_mask=None, int window=0) -> (Tensor, Tensor, Tensor)", \
          sdpa_backward_kernel, sdpa_backward_kernel, NULL, NULL, 0, 0) \
    /* Rotary position embedding (ops/attention.c says which form and why); \
     * PyTorch composes it, ggml has ROPE. The backward (data 1) is the \
     * transposed rotation. */ \
    X(ATTENTION, ROTARY_EMBEDDING, "tt::rotary_embedding(Tensor x, Tensor cos, Tensor sin, " \
          "bool interleaved=False) -> Tensor", \
          rotary_kernel, rotary_kernel, rotary_backward, setup_rotary, 0, 0) \
    X(ATTENTION, ROTARY_EMBEDDING_BACKWARD, "tt::rotary_embedding_backward(Tensor grad_out, " \
          "Tensor cos, Tensor sin, bool interleaved=False) -> Tensor", \
          rotary_kernel, rotary_kernel, NULL, NULL, 1, 0) \
    /* ---- ops/convolution.c ------------------------------------------- */ \
    X(CONV, CONVOLUTION, "tt::convolution(Tensor input, Tensor weight, Tensor? bias, " \
          "SymInt[] stride, SymInt[] padding, SymInt[] dilation, bool transposed, " \
          "SymInt[] output_padding, SymInt groups) -> Tensor", \
          convolution_kernel, convolution_kernel, convolution_backward, setup_convolution, 0, 0) \
    /* Compiled plans' fused convolution -> [batch norm, inference] -> \
     * [relu] (tracer/passes.c; Inductor's mkldnn::_convolution_pointwise). */ \
    X(CONV, _CONVOLUTION_POINTWISE, "tt::_convolution_pointwise(Tensor input, Tensor weight, " \
          "Tensor? bias, SymInt[] stride, SymInt[] padding, SymInt[] dilation, SymInt groups, " \
          "Tensor? bn_weight, Tensor? bn_bias, Tensor? bn_running_mean, " \
          "Tensor? bn_running_var, float bn_eps, str attr) -> Tensor", \
          conv_pointwise_kernel, conv_pointwise_kernel, NULL, NULL, 0, TT_BUILTIN_NONDIFF) \
    X(CONV, CONVOLUTION_BACKWARD, "tt::convolution_backward(Tensor grad_output, Tensor input, " \
          "Tensor weight, SymInt[]? bias_sizes, SymInt[] stride, SymInt[] padding, " \
          "SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups, " \
          "bool[3] output_mask) -> (Tensor, Tensor, Tensor)", \
          convolution_backward_kernel, convolution_backward_kernel, NULL, NULL, 0, 0) \
    X(CONV, IM2COL, "tt::im2col(Tensor self, int[2] kernel_size, int[2] dilation, " \
          "int[2] padding, int[2] stride) -> Tensor", \
          im2col_kernel, im2col_kernel, unfold_backward, setup_unfold, 0, 0) \
    X(CONV, COL2IM, "tt::col2im(Tensor self, SymInt[2] output_size, int[2] kernel_size, " \
          "int[2] dilation, int[2] padding, int[2] stride) -> Tensor", \
          col2im_kernel, col2im_kernel, unfold_backward, setup_unfold, 1, 0) \
    \
    /* ---- ops/pooling.c ----------------------------------------------- */ \
    X(POOL, MAX_POOL2D_WITH_INDICES, "tt::max_pool2d_with_indices(Tensor self, int[2] kernel_size, " \
          "int[2] stride=[], int[2] padding=0, int[2] dilation=1, bool ceil_mode=False) " \
          "-> (Tensor, Tensor)", \
          max_pool2d_kernel, max_pool2d_kernel, tt__pool_max_backward, tt__pool_setup_max, 0, 0) \
    X(POOL, MAX_POOL2D_WITH_INDICES_BACKWARD, "tt::max_pool2d_with_indices_backward(" \
          "Tensor grad_output, Tensor self, int[2] kernel_size, int[2] stride, int[2] padding, " \
          "int[2] dilation, bool ceil_mode, Tensor indices) -> Tensor", \
          max_pool2d_backward_kernel, max_pool2d_backward_kernel, NULL, NULL, 0, 0) \
    X(POOL, AVG_POOL2D, "tt::avg_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], " \
          "int[2] padding=0, bool ceil_mode=False, bool count_include_pad=True, " \
          "int? divisor_override=None) -> Tensor", \
          avg_pool2d_kernel, avg_pool2d_kernel, tt__pool_avg_backward, tt__pool_setup_avg, 0, 0) \
    X(POOL, AVG_POOL2D_BACKWARD, "tt::avg_pool2d_backward(Tensor grad_output, Tensor self, " \
          "int[2] kernel_size, int[2] stride, int[2] padding, bool ceil_mode, " \
          "bool count_include_pad, int? divisor_override) -> Tensor", \
          avg_pool2d_backward_kernel, avg_pool2d_backward_kernel, NULL, NULL, 0, 0) \
    X(POOL, _ADAPTIVE_AVG_POOL2D, "tt::_adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) " \
          "-> Tensor", \
          adaptive_avg_pool2d_kernel, adaptive_avg_pool2d_kernel, tt__pool_adaptive_backward, \
          tt__pool_setup_adaptive, 0, 0) \
    X(POOL, _ADAPTIVE_AVG_POOL2D_BACKWARD, "tt::_adaptive_avg_pool2d_backward(Tensor grad_output, " \
          "Tensor self) -> Tensor", \
          adaptive_avg_pool2d_backward_kernel, adaptive_avg_pool2d_backward_kernel, NULL, NULL, \
          0, 0) \
    /* The 1-d pools: the 2-d kernels on a [.., C, 1, L] view (data 1: max). \
     * max_pool1d is aten's (not Core ATen: PyTorch decomposes it). */ \
    X(POOL, MAX_POOL1D, "tt::max_pool1d(Tensor self, int[1] kernel_size, int[1] stride=[], " \
          "int[1] padding=0, int[1] dilation=1, bool ceil_mode=False) -> Tensor", \
          pool1d_kernel, pool1d_kernel, pool1d_backward, setup_pool1d, 1, 0) \
    X(POOL, ADAPTIVE_AVG_POOL1D, "tt::adaptive_avg_pool1d(Tensor self, int[1] output_size) " \
          "-> Tensor", \
          adaptive_pool1d_kernel, adaptive_pool1d_kernel, adaptive_pool1d_backward, \
          tt__pool_setup_adaptive, 0, 0) \
    X(POOL, AVG_POOL1D, "tt::avg_pool1d(Tensor self, int[1] kernel_size, int[1] stride=[], " \
          "int[1] padding=[0], bool ceil_mode=False, bool count_include_pad=True) -> Tensor", \
          pool1d_kernel, pool1d_kernel, pool1d_backward, setup_pool1d, 0, 0) \
    \
    /* ---- ops/pool3d.c: 3-d (volumetric) pooling ---------------------- */ \
    X(POOL3D, AVG_POOL3D, "tt::avg_pool3d(Tensor self, int[3] kernel_size, int[3] stride=[], " \
          "int[3] padding=0, bool ceil_mode=False, bool count_include_pad=True, " \
          "int? divisor_override=None) -> Tensor", \
          avg_pool3d_kernel, avg_pool3d_kernel, tt__pool_avg_backward, tt__pool_setup_avg, 0, 0) \
    X(POOL3D, AVG_POOL3D_BACKWARD, "tt::avg_pool3d_backward(Tensor grad_output, Tensor self, " \
          "int[3] kernel_size, int[3] stride, int[3] padding, bool ceil_mode, " \
          "bool count_include_pad, int? divisor_override) -> Tensor", \
          avg_pool3d_backward_kernel, avg_pool3d_backward_kernel, NULL, NULL, 0, 0) \
    X(POOL3D, MAX_POOL3D_WITH_INDICES, "tt::max_pool3d_with_indices(Tensor self, " \
          "int[3] kernel_size, int[3] stride=[], int[3] padding=0, int[3] dilation=1, " \
          "bool ceil_mode=False) -> (Tensor, Tensor)", \
          max_pool3d_kernel, max_pool3d_kernel, tt__pool_max_backward, tt__pool_setup_max, 0, 0) \
    X(POOL3D, MAX_POOL3D_WITH_INDICES_BACKWARD, "tt::max_pool3d_with_indices_backward(" \
          "Tensor grad_output, Tensor self, int[3] kernel_size, int[3] stride, int[3] padding, " \
          "int[3] dilation, bool ceil_mode, Tensor indices) -> Tensor", \
          max_pool3d_backward_kernel, max_pool3d_backward_kernel, NULL, NULL, 0, 0) \
    X(POOL3D, _ADAPTIVE_AVG_POOL3D, "tt::_adaptive_avg_pool3d(Tensor self, SymInt[3] output_size) " \
          "-> Tensor", \
          adaptive_avg_pool3d_kernel, adaptive_avg_pool3d_kernel, tt__pool_adaptive_backward, \
          tt__pool_setup_adaptive, 0, 0) \
    X(POOL3D, _ADAPTIVE_AVG_POOL3D_BACKWARD, "tt::_adaptive_avg_pool3d_backward(" \
          "Tensor grad_output, Tensor self) -> Tensor", \
          adaptive_avg_pool3d_backward_kernel, adaptive_avg_pool3d_backward_kernel, NULL, NULL, \
          0, 0) \
    \
    /* ---- ops/pad_upsample.c ------------------------------------------ */ \
    X(PAD_UPSAMPLE, CONSTANT_PAD_ND, "tt::constant_pad_nd(Tensor self, int[] pad, Scalar value=0) " \
          "-> Tensor", \
          constant_pad_kernel, constant_pad_kernel, constant_pad_backward, setup_constant_pad, 0, 0) \
    X(PAD_UPSAMPLE, REFLECTION_PAD1D, "tt::reflection_pad1d(Tensor self, int[2] padding) -> Tensor", \
          pad_kernel, pad_kernel, pad_backward, setup_pad, PAD_REFLECT1D, 0) \
    X(PAD_UPSAMPLE, REFLECTION_PAD2D, "tt::reflection_pad2d(Tensor self, int[4] padding) -> Tensor", \
          pad_kernel, pad_kernel, pad_backward, setup_pad, PAD_REFLECT2D, 0) \
    X(PAD_UPSAMPLE, REPLICATION_PAD2D, "tt::replication_pad2d(Tensor self, int[4] padding) -> Tensor", \
          pad_kernel, pad_kernel, pad_backward, setup_pad, PAD_REPLICATE2D, 0) \
    X(PAD_UPSAMPLE, REPLICATION_PAD1D, "tt::replication_pad1d(Tensor self, int[2] padding) -> Tensor", \
          pad_kernel, pad_kernel, pad_backward, setup_pad, PAD_REPLICATE1D, 0) \
    X(PAD_UPSAMPLE, REFLECTION_PAD3D, "tt::reflection_pad3d(Tensor self, int[6] padding) -> Tensor", \
          pad_kernel, pad_kernel, pad_backward, setup_pad, PAD_REFLECT3D, 0) \
    X(PAD_UPSAMPLE, REPLICATION_PAD3D, "tt::replication_pad3d(Tensor self, int[6] padding) -> Tensor", \
          pad_kernel, pad_kernel, pad_backward, setup_pad, PAD_REPLICATE3D, 0) \
    X(PAD_UPSAMPLE, REFLECTION_PAD1D_BACKWARD, "tt::reflection_pad1d_backward(Tensor grad_output, " \
          "Tensor self, int[2] padding) -> Tensor", \
          pad_backward_kernel, pad_backward_kernel, NULL, NULL, PAD_REFLECT1D, 0) \
    X(PAD_UPSAMPLE, REFLECTION_PAD2D_BACKWARD, "tt::reflection_pad2d_backward(Tensor grad_output, " \
          "Tensor self, int[4] padding) -> Tensor", \
          pad_backward_kernel, pad_backward_kernel, NULL, NULL, PAD_REFLECT2D, 0) \
    X(PAD_UPSAMPLE, REPLICATION_PAD2D_BACKWARD, "tt::replication_pad2d_backward(Tensor grad_output, " \
          "Tensor self, int[4] padding) -> Tensor", \
          pad_backward_kernel, pad_backward_kernel, NULL, NULL, PAD_REPLICATE2D, 0) \
    X(PAD_UPSAMPLE, REPLICATION_PAD1D_BACKWARD, "tt::replication_pad1d_backward(Tensor grad_output, " \
          "Tensor self, int[2] padding) -> Tensor", \
          pad_backward_kernel, pad_backward_kernel, NULL, NULL, PAD_REPLICATE1D, 0) \
    X(PAD_UPSAMPLE, REFLECTION_PAD3D_BACKWARD, "tt::reflection_pad3d_backward(Tensor grad_output, " \
          "Tensor self, int[6] padding) -> Tensor", \
          pad_backward_kernel, pad_backward_kernel, NULL, NULL, PAD_REFLECT3D, 0) \
    X(PAD_UPSAMPLE, REPLICATION_PAD3D_BACKWARD, "tt::replication_pad3d_backward(Tensor grad_output, " \
          "Tensor self, int[6] padding) -> Tensor", \
          pad_backward_kernel, pad_backward_kernel, NULL, NULL, PAD_REPLICATE3D, 0) \
    /* data 1: bilinear. The .vec forms take exactly one of output_size \
     * and scale_factors, as PyTorch's. */ \
    X(PAD_UPSAMPLE, UPSAMPLE_NEAREST2D_VEC, "tt::upsample_nearest2d.vec(Tensor input, " \
          "SymInt[]? output_size, float[]? scale_factors) -> Tensor", \
          upsample_kernel, upsample_kernel, upsample_backward, setup_upsample, 0, 0) \
    X(PAD_UPSAMPLE, UPSAMPLE_BILINEAR2D_VEC, "tt::upsample_bilinear2d.vec(Tensor input, " \
          "SymInt[]? output_size, bool align_corners, float[]? scale_factors) -> Tensor", \
          upsample_kernel, upsample_kernel, upsample_backward, setup_upsample, \
          1, 0) \
    X(PAD_UPSAMPLE, UPSAMPLE_NEAREST2D_BACKWARD_VEC, "tt::upsample_nearest2d_backward.vec(" \
          "Tensor grad_output, SymInt[]? output_size, SymInt[] input_size, " \
          "float[]? scale_factors) -> Tensor", \
          upsample_backward_kernel, upsample_backward_kernel, NULL, NULL, 0, 0) \
    X(PAD_UPSAMPLE, UPSAMPLE_BILINEAR2D_BACKWARD_VEC, "tt::upsample_bilinear2d_backward.vec(" \
          "Tensor grad_output, SymInt[]? output_size, SymInt[] input_size, bool align_corners, " \
          "float[]? scale_factors) -> Tensor", \
          upsample_backward_kernel, upsample_backward_kernel, NULL, NULL, 1, 0) \
    \
    /* ---- ops/grid_sample.c ------------------------------------------- */ \
    /* PyTorch's enums: interpolation 0 bilinear, 1 nearest, 2 bicubic; \
     * padding 0 zeros, 1 border, 2 reflection. */ \
    X(GRID_SAMPLE, GRID_SAMPLER_2D, "tt::grid_sampler_2d(Tensor input, Tensor grid, " \
          "int interpolation_mode, int padding_mode, bool align_corners) -> Tensor", \
          grid_sample_kernel, grid_sample_kernel, grid_sample_backward, setup_grid_sample, 0, 0) \
    X(GRID_SAMPLE, GRID_SAMPLER_2D_BACKWARD, "tt::grid_sampler_2d_backward(Tensor grad_output, " \
          "Tensor input, Tensor grid, int interpolation_mode, int padding_mode, " \
          "bool align_corners, bool[2] output_mask) -> (Tensor, Tensor)", \
          grid_sample_backward_kernel, grid_sample_backward_kernel, NULL, NULL, 0, 0) \
    \
    /* ---- ops/distance.c: pairwise p-norm distances -------------------- */ \
    X(DISTANCE, _CDIST_FORWARD, "tt::_cdist_forward(Tensor x1, Tensor x2, float p, " \
          "int? compute_mode) -> Tensor", \
          cdist_forward_kernel, cdist_forward_kernel, cdist_backward, setup_cdist, 0, 0) \
    X(DISTANCE, _CDIST_BACKWARD, "tt::_cdist_backward(Tensor grad, Tensor x1, Tensor x2, " \
          "float p, Tensor cdist) -> Tensor", \
          cdist_backward_kernel, cdist_backward_kernel, NULL, NULL, 0, 0) \
    X(DISTANCE, _PDIST_FORWARD, "tt::_pdist_forward(Tensor self, float p=2) -> Tensor", \
          pdist_forward_kernel, pdist_forward_kernel, pdist_backward, setup_pdist, 0, 0) \
    X(DISTANCE, _PDIST_BACKWARD, "tt::_pdist_backward(Tensor grad, Tensor self, float p, " \
          "Tensor pdist) -> Tensor", \
          pdist_backward_kernel, pdist_backward_kernel, NULL, NULL, 0, 0) \
    \
    /* ---- ops/activation.c -------------------------------------------- */ \
    /* Each with PyTorch's backward op as its derivative; the data is the \
     * activation's kind (ops/activation.c). */ \
    X(ACTIVATION, LEAKY_RELU, "tt::leaky_relu(Tensor self, Scalar negative_slope=0.01) -> Tensor", \
          act_kernel, act_kernel, act_derivative, setup_act, 0, TT_BUILTIN_POINTWISE) \
    X(ACTIVATION, ELU, "tt::elu(Tensor self, Scalar alpha=1, Scalar scale=1, " \
          "Scalar input_scale=1) -> Tensor", \
          act_kernel, act_kernel, act_derivative, setup_act, 1, TT_BUILTIN_POINTWISE) \
    X(ACTIVATION, HARDTANH, "tt::hardtanh(Tensor self, Scalar min_val=-1, Scalar max_val=1) " \
          "-> Tensor", \
          act_kernel, act_kernel, act_derivative, setup_act, 2, TT_BUILTIN_POINTWISE) \
    X(ACTIVATION, HARDSWISH, "tt::hardswish(Tensor self) -> Tensor", \
          act_kernel, act_kernel, act_derivative, setup_act, 3, TT_BUILTIN_POINTWISE) \
    X(ACTIVATION, HARDSIGMOID, "tt::hardsigmoid(Tensor self) -> Tensor", \
          act_kernel, act_kernel, act_derivative, setup_act, 4, TT_BUILTIN_POINTWISE) \
    X(ACTIVATION, SOFTPLUS, "tt::softplus(Tensor self, Scalar beta=1, Scalar threshold=20) " \
          "-> Tensor", \
          act_kernel, act_kernel, act_derivative, setup_act, 5, TT_BUILTIN_POINTWISE) \
    X(ACTIVATION, LEAKY_RELU_BACKWARD, "tt::leaky_relu_backward(Tensor grad_output, " \
          "Tensor self, Scalar negative_slope, bool self_is_result) -> Tensor", \
          act_backward_kernel, act_backward_kernel, NULL, NULL, 0, TT_BUILTIN_POINTWISE) \
    X(ACTIVATION, ELU_BACKWARD, "tt::elu_backward(Tensor grad_output, Scalar alpha, " \
          "Scalar scale, Scalar input_scale, bool is_result, Tensor self_or_result) -> Tensor", \
          act_backward_kernel, act_backward_kernel, NULL, NULL, 1, TT_BUILTIN_POINTWISE) \
    X(ACTIVATION, HARDTANH_BACKWARD, "tt::hardtanh_backward(Tensor grad_output, Tensor self, " \
          "Scalar min_val, Scalar max_val) -> Tensor", \
          act_backward_kernel, act_backward_kernel, NULL, NULL, 2, TT_BUILTIN_POINTWISE) \
    X(ACTIVATION, HARDSWISH_BACKWARD, "tt::hardswish_backward(Tensor grad_output, " \
          "Tensor self) -> Tensor", \
          act_backward_kernel, act_backward_kernel, NULL, NULL, 3, TT_BUILTIN_POINTWISE) \
    X(ACTIVATION, HARDSIGMOID_BACKWARD, "tt::hardsigmoid_backward(Tensor grad_output, " \
          "Tensor self) -> Tensor", \
          act_backward_kernel, act_backward_kernel, NULL, NULL, 4, TT_BUILTIN_POINTWISE) \
    X(ACTIVATION, SOFTPLUS_BACKWARD, "tt::softplus_backward(Tensor grad_output, Tensor self, " \
          "Scalar beta, Scalar threshold) -> Tensor", \
          act_backward_kernel, act_backward_kernel, NULL, NULL, 5, TT_BUILTIN_POINTWISE) \
    \
    /* ---- ops/dropout.c ----------------------------------------------- */ \
    X(DROPOUT, NATIVE_DROPOUT, "tt::native_dropout(Tensor input, float p, bool? train) " \
          "-> (Tensor, Tensor)", \
          dropout_kernel, dropout_kernel, dropout_backward, setup_dropout, 0, \
          TT_BUILTIN_TAGS(TT_TAG_NONDETERMINISTIC_SEEDED)) \
    X(DROPOUT, NATIVE_DROPOUT_BACKWARD, "tt::native_dropout_backward(Tensor grad_output, " \
          "Tensor mask, float scale) -> Tensor", \
          dropout_backward_kernel, dropout_backward_kernel, dropout_backward_backward, \
          setup_dropout_backward, 0, 0) \
    \
    /* ---- ops/indexing.c: gather, scatter, index_select, index_copy ---- */ \
    /* The data of each row is its own id (one kernel and one derivative \
     * serve several rows). PyTorch's derivatives: gather's is a \
     * scatter_add into zeros, the scatters' a scatter of zeros and a \
     * gather, scatter_reduce's 1.13's scatter_reduce_backward. */ \
    X(INDEX, GATHER, "tt::gather(Tensor self, int dim, Tensor index, *, " \
          "bool sparse_grad=False) -> Tensor", \
          gather_kernel, gather_kernel, gather_backward, setup_index, TT_OP_GATHER, 0) \
    X(INDEX, SCATTER_SRC, "tt::scatter.src(Tensor self, int dim, Tensor index, Tensor src) " \
          "-> Tensor", \
          scatter_kernel, scatter_kernel, scatter_backward, setup_index, TT_OP_SCATTER_SRC, 0) \
    X(INDEX, SCATTER_VALUE, "tt::scatter.value(Tensor self, int dim, Tensor index, " \
          "Scalar value) -> Tensor", \
          scatter_kernel, scatter_kernel, scatter_backward, setup_index, TT_OP_SCATTER_VALUE, 0) \
    X(INDEX, SCATTER_ADD, "tt::scatter_add(Tensor self, int dim, Tensor index, Tensor src) " \
          "-> Tensor", \
          scatter_kernel, scatter_kernel, scatter_backward, setup_index, TT_OP_SCATTER_ADD, 0) \
    X(INDEX, SCATTER_REDUCE_TWO, "tt::scatter_reduce.two(Tensor self, int dim, Tensor index, " \
          "Tensor src, str reduce, *, bool include_self=True) -> Tensor", \
          scatter_kernel, scatter_kernel, scatter_reduce_backward, setup_index, \
          TT_OP_SCATTER_REDUCE_TWO, 0) \
    X(INDEX, INDEX_SELECT, "tt::index_select(Tensor self, int dim, Tensor index) -> Tensor", \
          index_select_kernel, index_select_kernel, index_backward, setup_index, \
          TT_OP_INDEX_SELECT, 0) \
    /* index_copy and index_add are aten's (Core ATen decomposes them); \
     * index_copy_ writes self in place (a KV cache's write at a position). */ \
    X(INDEX, INDEX_COPY, "tt::index_copy(Tensor self, int dim, Tensor index, Tensor source) " \
          "-> Tensor", \
          index_along_kernel, index_along_kernel, index_backward, setup_index, \
          TT_OP_INDEX_COPY, 0) \
    X(INDEX, INDEX_COPY_, "tt::index_copy_(Tensor(a!) self, int dim, Tensor index, " \
          "Tensor source) -> Tensor(a!)", \
          index_along_kernel, index_along_kernel, index_backward, setup_index, \
          TT_OP_INDEX_COPY_, TT_BUILTIN_INPLACE) \
    X(INDEX, INDEX_ADD, "tt::index_add(Tensor self, int dim, Tensor index, Tensor source, *, " \
          "Scalar alpha=1) -> Tensor", \
          index_along_kernel, index_along_kernel, index_backward, setup_index, \
          TT_OP_INDEX_ADD, 0) \
    X(INDEX, SLICE_SCATTER, "tt::slice_scatter(Tensor self, Tensor src, int dim=0, " \
          "SymInt? start=None, SymInt? end=None, SymInt step=1) -> Tensor", \
          slice_scatter_kernel, slice_scatter_kernel, slice_scatter_backward, \
          setup_slice_scatter, TT_OP_SLICE_SCATTER, 0) \
    X(INDEX, SELECT_SCATTER, "tt::select_scatter(Tensor self, Tensor src, int dim, int index) " \
          "-> Tensor", \
          slice_scatter_kernel, slice_scatter_kernel, slice_scatter_backward, \
          setup_slice_scatter, TT_OP_SELECT_SCATTER, 0) \
    X(INDEX, DIAGONAL, "tt::diagonal(Tensor(a) self, int offset=0, int dim1=0, int dim2=1) " \
          "-> Tensor(a)", \
          diagonal_kernel, diagonal_kernel, diagonal_backward, setup_diagonal, 0, 0) \
    X(INDEX, DIAGONAL_BACKWARD, "tt::diagonal_backward(Tensor grad_output, " \
          "SymInt[] input_sizes, int offset, int dim1, int dim2) -> Tensor", \
          diagonal_backward_kernel, diagonal_backward_kernel, NULL, NULL, 0, 0) \
    \
    /* ---- ops/advanced_index.c: index.Tensor, index_put, masks, nonzero */ \
    /* masked_fill's row data: 1 for the Tensor value (it gets a gradient). */ \
    X(ADV_INDEX, MASKED_FILL_SCALAR, "tt::masked_fill.Scalar(Tensor self, Tensor mask, " \
          "Scalar value) -> Tensor", \
          masked_fill_kernel, masked_fill_kernel, masked_fill_backward, setup_masked_fill, 0, 0) \
    X(ADV_INDEX, MASKED_FILL_TENSOR, "tt::masked_fill.Tensor(Tensor self, Tensor mask, " \
          "Tensor value) -> Tensor", \
          masked_fill_kernel, masked_fill_kernel, masked_fill_backward, setup_masked_fill, 1, 0) \
    X(ADV_INDEX, INDEX_TENSOR, "tt::index.Tensor(Tensor self, Tensor?[] indices) -> Tensor", \
          index_kernel, index_kernel, index_backward, setup_index, 0, 0) \
    /* index_put's row data: 1 for the in-place form. */ \
    X(ADV_INDEX, INDEX_PUT, "tt::index_put(Tensor self, Tensor?[] indices, Tensor values, " \
          "bool accumulate=False) -> Tensor", \
          index_put_kernel, index_put_kernel, index_put_backward, setup_index_put, 0, 0) \
    X(ADV_INDEX, INDEX_PUT_, "tt::index_put_(Tensor(a!) self, Tensor?[] indices, " \
          "Tensor values, bool accumulate=False) -> Tensor(a!)", \
          index_put_kernel, index_put_kernel, index_put_backward, setup_index_put, 1, \
          TT_BUILTIN_INPLACE) \
    X(ADV_INDEX, MASKED_SCATTER, "tt::masked_scatter(Tensor self, Tensor mask, " \
          "Tensor source) -> Tensor", \
          masked_scatter_kernel, masked_scatter_kernel, masked_scatter_backward, \
          setup_masked_scatter, 0, 0) \
    /* PyTorch 2's op (1.13 computes it inline): masked_scatter's gradient \
     * of source, whose size needs no data. */ \
    X(ADV_INDEX, MASKED_SCATTER_BACKWARD, "tt::masked_scatter_backward(Tensor grad_output, " \
          "Tensor mask, SymInt[] sizes) -> Tensor", \
          masked_scatter_backward_kernel, masked_scatter_backward_kernel, NULL, NULL, 0, 0) \
    /* masked_select's count is data, as nonzero's. */ \
    X(ADV_INDEX, MASKED_SELECT, "tt::masked_select(Tensor self, Tensor mask) -> Tensor", \
          masked_select_kernel, masked_select_kernel, masked_select_backward, \
          setup_masked_select, 0, 0) \
    /* nonzero's count is data: its fake kernel makes an unbacked size. */ \
    X(ADV_INDEX, NONZERO, "tt::nonzero(Tensor self) -> Tensor", \
          nonzero_kernel, nonzero_kernel, NULL, NULL, 0, TT_BUILTIN_NONDIFF) \
    \
    /* ---- ops/sort_scan.c: sorting, selection along a dim, scans ------- */ \
    /* NaN sorts as the largest value; sort is always stable (one of the \
     * orders an unstable sort may give). The indices carry no gradient. */ \
    X(SORT_SCAN, SORT, "tt::sort(Tensor self, int dim=-1, bool descending=False) " \
          "-> (Tensor values, Tensor indices)", \
          sort_kernel, sort_kernel, select_backward, setup_select, SEL_SORT, 0) \
    X(SORT_SCAN, SORT_STABLE, "tt::sort.stable(Tensor self, *, bool? stable, int dim=-1, " \
          "bool descending=False) -> (Tensor values, Tensor indices)", \
          sort_kernel, sort_kernel, select_backward, setup_select, SEL_SORT_STABLE, 0) \
    X(SORT_SCAN, TOPK, "tt::topk(Tensor self, SymInt k, int dim=-1, bool largest=True, " \
          "bool sorted=True) -> (Tensor values, Tensor indices)", \
          topk_kernel, topk_kernel, select_backward, setup_select, SEL_TOPK, 0) \
    X(SORT_SCAN, MAX_DIM, "tt::max.dim(Tensor self, int dim, bool keepdim=False) " \
          "-> (Tensor values, Tensor indices)", \
          extremum_kernel, extremum_kernel, select_backward, setup_select, SEL_MAX, 0) \
    X(SORT_SCAN, MIN_DIM, "tt::min.dim(Tensor self, int dim, bool keepdim=False) " \
          "-> (Tensor values, Tensor indices)", \
          extremum_kernel, extremum_kernel, select_backward, setup_select, SEL_MIN, 0) \
    X(SORT_SCAN, ARGMIN, "tt::argmin(Tensor self, int? dim=None, bool keepdim=False) -> Tensor", \
          argmin_kernel, argmin_kernel, NULL, NULL, 0, TT_BUILTIN_NONDIFF) \
    /* The k-th smallest (1-based), NaN largest, ties by the lower index; \
     * median.dim: the lower median, a NaN when the row has one. */ \
    X(SORT_SCAN, KTHVALUE, "tt::kthvalue(Tensor self, int k, int dim=-1, bool keepdim=False) " \
          "-> (Tensor values, Tensor indices)", \
          kthvalue_kernel, kthvalue_kernel, select_backward, setup_select, SEL_KTH, 0) \
    X(SORT_SCAN, MEDIAN_DIM, "tt::median.dim(Tensor self, int dim, bool keepdim=False) " \
          "-> (Tensor values, Tensor indices)", \
          median_dim_kernel, median_dim_kernel, select_backward, setup_select, SEL_MEDIAN, 0) \
    X(SORT_SCAN, MEDIAN, "tt::median(Tensor self) -> Tensor", \
          median_kernel, median_kernel, median_backward, save_self_result, 0, 0) \
    /* The gradient of the selections: grad written at indices along dim \
     * into zeros of `sizes` (PyTorch's op of that name). */ \
    X(SORT_SCAN, VALUE_SELECTING_REDUCTION_BACKWARD, "tt::value_selecting_reduction_backward(" \
          "Tensor grad, int dim, Tensor indices, SymInt[] sizes, bool keepdim) -> Tensor", \
          vsr_backward_kernel, vsr_backward_kernel, NULL, NULL, 0, 0) \
    /* Integer and bool inputs give i64 unless dtype says; self is cast \
     * to dtype first. */ \
    X(SORT_SCAN, CUMSUM, "tt::cumsum(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor", \
          scan_kernel, scan_kernel, scan_backward, setup_scan, SCAN_SUM, 0) \
    X(SORT_SCAN, CUMPROD, "tt::cumprod(Tensor self, int dim, *, ScalarType? dtype=None) " \
          "-> Tensor", \
          scan_kernel, scan_kernel, scan_backward, setup_scan, SCAN_PROD, 0) \
    /* cumprod's gradient, exact where self has zeros (PyTorch's \
     * cumprod_backward, a function there, an op here so a trace records \
     * it). Not differentiable again. */ \
    X(SORT_SCAN, CUMPROD_BACKWARD, "tt::cumprod_backward(Tensor grad, Tensor self, int dim, " \
          "Tensor result) -> Tensor", \
          cumprod_backward_kernel, cumprod_backward_kernel, NULL, NULL, 0, 0) \
    X(SORT_SCAN, LOGCUMSUMEXP, "tt::logcumsumexp(Tensor self, int dim) -> Tensor", \
          logcumsumexp_kernel, logcumsumexp_kernel, lcse_backward, setup_lcse, 0, 0) \
    /* PyTorch's logcumsumexp_backward (a function there): no exp overflows. \
     * Not differentiable again. */ \
    X(SORT_SCAN, LOGCUMSUMEXP_BACKWARD, "tt::logcumsumexp_backward(Tensor grad, Tensor self, " \
          "Tensor result, int dim) -> Tensor", \
          logcumsumexp_backward_kernel, logcumsumexp_backward_kernel, NULL, NULL, 0, 0) \
    X(SORT_SCAN, LOGSUMEXP, "tt::logsumexp(Tensor self, int[1] dim, bool keepdim=False) -> Tensor", \
          logsumexp_kernel, logsumexp_kernel, logsumexp_backward, setup_logsumexp, 0, 0) \
    X(SORT_SCAN, PROD, "tt::prod(Tensor self, *, ScalarType? dtype=None) -> Tensor", \
          prod_kernel, prod_kernel, prod_backward, setup_prod, 0, 0) \
    X(SORT_SCAN, PROD_DIM_INT, "tt::prod.dim_int(Tensor self, int dim, bool keepdim=False, *, " \
          "ScalarType? dtype=None) -> Tensor", \
          prod_kernel, prod_kernel, prod_backward, setup_prod, 1, 0) \
    /* prod's gradient (dim [] for every dim): the product of the others, \
     * exact with zeros. Not differentiable again. */ \
    X(SORT_SCAN, PROD_BACKWARD, "tt::prod_backward(Tensor grad, Tensor self, Tensor result, " \
          "int[] dim, bool keepdim) -> Tensor", \
          prod_backward_kernel, prod_backward_kernel, NULL, NULL, 0, 0) \
    \
    /* ---- ops/random.c: sampling from the global generator (tt_manual_seed; \
     * tt has no Generator objects, so PyTorch's generator arguments are \
     * left out). Each call reserves fresh counters: a compiled step draws \
     * anew per call, as eager code does. */ \
    X(RANDOM, BERNOULLI, "tt::bernoulli(Tensor self) -> Tensor", \
          bernoulli_kernel, bernoulli_kernel, NULL, NULL, 0, \
          TT_BUILTIN_NONDIFF | TT_BUILTIN_TAGS(TT_TAG_NONDETERMINISTIC_SEEDED)) \
    X(RANDOM, BERNOULLI_P, "tt::bernoulli.p(Tensor self, float p) -> Tensor", \
          bernoulli_p_kernel, bernoulli_p_kernel, NULL, NULL, 0, \
          TT_BUILTIN_NONDIFF | TT_BUILTIN_TAGS(TT_TAG_NONDETERMINISTIC_SEEDED)) \
    X(RANDOM, UNIFORM_, "tt::uniform_(Tensor(a!) self, float from=0., float to=1.) " \
          "-> Tensor(a!)", \
          fill_kernel, fill_kernel, fill_backward, NULL, 0, \
          TT_BUILTIN_TAGS(TT_TAG_NONDETERMINISTIC_SEEDED)) \
    X(RANDOM, NORMAL_, "tt::normal_(Tensor(a!) self, float mean=0., float std=1.) " \
          "-> Tensor(a!)", \
          fill_kernel, fill_kernel, fill_backward, NULL, 1, \
          TT_BUILTIN_TAGS(TT_TAG_NONDETERMINISTIC_SEEDED)) \
    X(RANDOM, RANDINT, "tt::randint(int high, SymInt[] size, *, ScalarType? dtype=long) " \
          "-> Tensor", \
          randint_kernel, randint_kernel, NULL, NULL, 0, \
          TT_BUILTIN_NONDIFF | TT_BUILTIN_TAGS(TT_TAG_NONDETERMINISTIC_SEEDED)) \
    X(RANDOM, RANDINT_LOW, "tt::randint.low(int low, int high, SymInt[] size, *, " \
          "ScalarType? dtype=long) -> Tensor", \
          randint_kernel, randint_kernel, NULL, NULL, 1, \
          TT_BUILTIN_NONDIFF | TT_BUILTIN_TAGS(TT_TAG_NONDETERMINISTIC_SEEDED)) \
    X(RANDOM, RANDPERM, "tt::randperm(SymInt n, *, ScalarType? dtype=long) -> Tensor", \
          randperm_kernel, randperm_kernel, NULL, NULL, 0, \
          TT_BUILTIN_NONDIFF | TT_BUILTIN_TAGS(TT_TAG_NONDETERMINISTIC_SEEDED)) \
    X(RANDOM, MULTINOMIAL, "tt::multinomial(Tensor self, int num_samples, " \
          "bool replacement=False) -> Tensor", \
          multinomial_kernel, multinomial_kernel, NULL, NULL, 0, \
          TT_BUILTIN_NONDIFF | TT_BUILTIN_TAGS(TT_TAG_NONDETERMINISTIC_SEEDED)) \
    \
    /* ---- ops/optimizer.c: AdamW, SGD, the global norm for clipping ---- */ \
    X(OPTIMIZER, ADAMW_STEP, "tt::adamw_step(Tensor(a!) param, Tensor grad, Tensor(b!) exp_avg, " \
          "Tensor(c!) exp_avg_sq, Tensor step, float lr, float beta1, float beta2, " \
          "float eps, float weight_decay) -> ()", \
          adamw_kernel, adamw_kernel, NULL, NULL, 0, TT_BUILTIN_NONDIFF) \
    /* torch.optim.SGD's update; momentum_buf is None without momentum. \
     * lr has no default (SGD's is required); the rest are SGD's. */ \
    X(OPTIMIZER, SGD_STEP, "tt::sgd_step(Tensor(a!) param, Tensor grad, " \
          "Tensor(b!)? momentum_buf, Tensor step, float lr, float momentum=0.0, " \
          "float dampening=0.0, float weight_decay=0.0, bool nesterov=False, *, " \
          "bool maximize=False) -> ()", \
          sgd_kernel, sgd_kernel, NULL, NULL, 0, TT_BUILTIN_NONDIFF) \
    X(OPTIMIZER, GLOBAL_NORM, "tt::global_norm(Tensor[] tensors) -> Tensor", \
          global_norm_kernel, global_norm_kernel, NULL, NULL, 0, TT_BUILTIN_NONDIFF)
/* clang-format on */

#define TT__BUILTIN_ID(family, id, ...) TT_OP_##id,
typedef enum {
    TT_BUILTIN_OPS(TT__BUILTIN_ID)
    TT_OP_COUNT
} tt_builtin_id;
#undef TT__BUILTIN_ID

/* Built-ins by id, for the runtime, ops/ and the tracer. The op with
 * compile-time identity `id`: registered when the library loads, never
 * freed. */
extern const tt_op *tt__builtins[TT_OP_COUNT];
static inline const tt_op *tt__op(tt_builtin_id id) { return tt__builtins[id]; }
/* Records `op` as built-in `id` (ops/ does, as it defines each row). */
void tt__set_builtin(tt_builtin_id id, tt_op *op, unsigned flags);
/* Saved tensor k of ctx is an input the op itself wrote afterwards (the
 * `other` of x.mul_(x), saved after the kernel ran): it is recorded at its
 * version before the write, so a backward that reads it fails as
 * modified in place, as PyTorch's does, instead of reading the new value. */
void tt__ctx_saved_before_write(tt_autograd_ctx *ctx, int k);
/* The built-ins' library (DEF of "tt"), which only ops/ may make. */
tt_library *tt__builtin_library_new(void);
/* How error messages name built-in `id`: "tt::add" for tt::add.Tensor. */
const char *tt__op_label(tt_builtin_id id);
/* The tt_builtin_id of op, or -1 for an op that is not a built-in. */
int tt__builtin_id(const tt_op *op);
/* Set while built-in `id` has a kernel other than its own (an IMPL
 * library's override); the count of such built-ins. Kept by the registry. */
extern _Atomic unsigned char tt__builtin_overridden[TT_OP_COUNT];
extern atomic_int tt__builtin_overrides;
/* The typed wrappers' fast path: built-in `id` may run its function
 * directly, skipping the dispatcher, when nothing overrides its kernel and
 * no mode, grad or fake tensor is in play. */
static inline bool tt__fast_path(tt_builtin_id id, int n, const tt_tensor *const *ts)
{
    return !atomic_load_explicit(&tt__builtin_overridden[id], memory_order_relaxed) &&
           tt_dispatch_is_trivial(n, ts);
}
/* Calls built-in `id` through the dispatcher; one tensor result. */
tt_tensor *tt__call_op(tt_builtin_id id, const tt_value *args, int nargs);
/* Calls built-in `id` from below the modes (autograd) as if the user had
 * called it just before the op being dispatched: the modes that op went
 * through (a tracer) see this call too, so a graph records it. */
tt_tensor *tt__call_op_as_caller(tt_builtin_id id, const tt_value *args, int nargs);
/* The same for ops that return their mutated argument: drops the result. */
tt_status tt__call_op_status(tt_builtin_id id, const tt_value *args, int nargs);

#endif
