/* The public views and copies (tt_runtime.h): the front doors of the ops
 * in ops/view_ops.c, beside the other typed wrappers.
 *
 * Each checks its tensors, and when a mode, fake mode or autograd needs
 * the call (tt__needs_dispatch: dispatch.c's "Skipping the dispatcher")
 * calls its op through the dispatcher, boxing its arguments in the op's
 * schema order; otherwise it runs the runtime's direct path
 * (tt__view_raw & co., runtime/tensor_views.c and runtime/copy.c), as
 * the op's kernel does. The direct path is the eager fast path: one
 * check and one call, no boxing. The runtime itself calls the direct
 * paths, or the op by id, never these (runtime/ sits below ops/). */
#include "ops_impl.h"

/* ------------------------------------------------------------------ views */

tt_tensor *tt_view(const tt_tensor *t, int ndim, const int64_t *sizes)
{
    if (TT_CHECK_TENSOR("tt_view", "self", t))
        return NULL;
    if (tt__needs_dispatch1(t))
        return tt__call_op(TT_OP_VIEW, TT_ARGS(tt_v_tensor(t), tt_v_ints(ndim, sizes)));
    return tt__view_raw(t, ndim, sizes);
}

tt_tensor *tt_reshape(const tt_tensor *t, int ndim, const int64_t *sizes)
{
    if (TT_CHECK_TENSOR("tt_reshape", "self", t))
        return NULL;
    if (tt__needs_dispatch1(t))
        return tt__call_op(TT_OP_RESHAPE, TT_ARGS(tt_v_tensor(t), tt_v_ints(ndim, sizes)));
    return tt__reshape_raw(t, ndim, sizes);
}

tt_tensor *tt_permute(const tt_tensor *t, int ndim, const int64_t *dims)
{
    if (TT_CHECK_TENSOR("tt_permute", "self", t))
        return NULL;
    if (tt__needs_dispatch1(t))
        return tt__call_op(TT_OP_PERMUTE, TT_ARGS(tt_v_tensor(t), tt_v_ints(ndim, dims)));
    return tt__permute_raw(t, ndim, dims);
}

tt_tensor *tt_transpose(const tt_tensor *t, int dim0, int dim1)
{
    if (TT_CHECK_TENSOR("tt_transpose", "self", t))
        return NULL;
    if (tt__needs_dispatch1(t))
        return tt__call_op(TT_OP_TRANSPOSE_INT,
                           TT_ARGS(tt_v_tensor(t), tt_v_int(dim0), tt_v_int(dim1)));
    return tt__transpose_raw(t, dim0, dim1);
}

tt_tensor *tt_t(const tt_tensor *t)
{
    if (TT_CHECK_TENSOR("tt_t", "self", t))
        return NULL;
    if (tt__needs_dispatch1(t))
        return tt__call_op(TT_OP_T, TT_ARGS(tt_v_tensor(t)));
    return tt__t_raw(t);
}

tt_tensor *tt_slice(const tt_tensor *t, int dim, int64_t start, int64_t end, int64_t step)
{
    if (TT_CHECK_TENSOR("tt_slice", "self", t))
        return NULL;
    /* Before dispatch, so that a trace records the plain integer (a
     * graph reads any argument in the handle range as a symbol). */
    start = tt__view_int_arg(start), end = tt__view_int_arg(end), step = tt__view_int_arg(step);
    if (tt__needs_dispatch1(t))
        return tt__call_op(TT_OP_SLICE_TENSOR, TT_ARGS(tt_v_tensor(t), tt_v_int(dim),
                                                       tt_v_int(start), tt_v_int(end),
                                                       tt_v_int(step)));
    return tt__slice_raw(t, dim, start, end, step);
}

tt_tensor *tt_narrow(const tt_tensor *t, int dim, int64_t start, int64_t len)
{
    if (TT_CHECK_TENSOR("tt_narrow", "self", t))
        return NULL;
    if (tt__needs_dispatch1(t))
        return tt__call_op(TT_OP_NARROW, TT_ARGS(tt_v_tensor(t), tt_v_int(dim),
                                                 tt_v_int(start), tt_v_int(len)));
    return tt__narrow_raw(t, dim, start, len);
}

tt_tensor *tt_select(const tt_tensor *t, int dim, int64_t index)
{
    if (TT_CHECK_TENSOR("tt_select", "self", t))
        return NULL;
    if (tt__needs_dispatch1(t))
        return tt__call_op(TT_OP_SELECT_INT,
                           TT_ARGS(tt_v_tensor(t), tt_v_int(dim), tt_v_int(index)));
    return tt__select_raw(t, dim, index);
}

tt_tensor *tt_expand(const tt_tensor *t, int ndim, const int64_t *sizes)
{
    if (TT_CHECK_TENSOR("tt_expand", "self", t))
        return NULL;
    if (tt__needs_dispatch1(t))
        return tt__call_op(TT_OP_EXPAND, TT_ARGS(tt_v_tensor(t), tt_v_ints(ndim, sizes)));
    return tt__expand_raw(t, ndim, sizes);
}

tt_tensor *tt_squeeze(const tt_tensor *t, int dim)
{
    if (TT_CHECK_TENSOR("tt_squeeze", "self", t))
        return NULL;
    if (tt__needs_dispatch1(t))
        return tt__call_op(TT_OP_SQUEEZE_DIM, TT_ARGS(tt_v_tensor(t), tt_v_int(dim)));
    return tt__squeeze_raw(t, dim);
}

tt_tensor *tt_squeeze_all(const tt_tensor *t)
{
    if (TT_CHECK_TENSOR("tt_squeeze_all", "self", t))
        return NULL;
    if (tt__needs_dispatch1(t))
        return tt__call_op(TT_OP_SQUEEZE, TT_ARGS(tt_v_tensor(t)));
    return tt__squeeze_all_raw(t);
}

tt_tensor *tt_unsqueeze(const tt_tensor *t, int dim)
{
    if (TT_CHECK_TENSOR("tt_unsqueeze", "self", t))
        return NULL;
    if (tt__needs_dispatch1(t))
        return tt__call_op(TT_OP_UNSQUEEZE, TT_ARGS(tt_v_tensor(t), tt_v_int(dim)));
    return tt__unsqueeze_raw(t, dim);
}

tt_tensor *tt_flatten(const tt_tensor *t, int start_dim, int end_dim)
{
    if (TT_CHECK_TENSOR("tt_flatten", "self", t))
        return NULL;
    if (tt__needs_dispatch1(t))
        return tt__call_op(TT_OP_FLATTEN_USING_INTS,
                           TT_ARGS(tt_v_tensor(t), tt_v_int(start_dim), tt_v_int(end_dim)));
    return tt__flatten_raw(t, start_dim, end_dim);
}

tt_tensor *tt_as_strided(const tt_tensor *t, int ndim, const int64_t *sizes,
                         const int64_t *strides, int64_t storage_offset)
{
    if (TT_CHECK_TENSOR("tt_as_strided", "self", t))
        return NULL;
    if (tt__needs_dispatch1(t)) {
        /* Checked before dispatch too, so a bad value is refused by this
         * call's name whatever mode runs it (the direct path checks). */
        if (tt__as_strided_check(ndim, sizes, strides, storage_offset))
            return NULL;
        return tt__call_op(TT_OP_AS_STRIDED,
                           TT_ARGS(tt_v_tensor(t), tt_v_ints(ndim, sizes),
                                   tt_v_ints(ndim, strides), tt_v_int(storage_offset)));
    }
    return tt__as_strided_raw(t, ndim, sizes, strides, storage_offset);
}

tt_tensor *tt_detach(const tt_tensor *t)
{
    if (TT_CHECK_TENSOR("tt_detach", "self", t))
        return NULL;
    if (tt__needs_dispatch1(t))
        return tt__call_op(TT_OP_DETACH, TT_ARGS(tt_v_tensor(t)));
    return tt__detach_raw(t);
}

/* ----------------------------------------------------------------- copies */

tt_status tt_copy_(tt_tensor *dst, const tt_tensor *src)
{
    tt_status st;
    if ((st = TT_CHECK_TENSOR("tt_copy_", "self", dst)) ||
        (st = TT_CHECK_TENSOR("tt_copy_", "src", src)))
        return st;
    /* src too: a copy from a tensor that requires grad records the edge
     * to it (PyTorch's CopyBackwards), even into a plain buffer. */
    if (tt__needs_dispatch(2, (const tt_tensor *const[]){dst, src}))
        return tt__call_op_status(TT_OP_COPY_, TT_ARGS(tt_v_tensor(dst), tt_v_tensor(src)));
    return tt__copy_direct(dst, src);
}

tt_status tt_fill_(tt_tensor *t, double value)
{
    tt_status st = TT_CHECK_TENSOR("tt_fill_", "self", t);
    if (st)
        return st;
    if (tt__needs_dispatch1(t))
        return tt__call_op_status(TT_OP_FILL__SCALAR, TT_ARGS(tt_v_tensor(t), tt_v_float(value)));
    return tt__fill_direct(t, value);
}

tt_tensor *tt_contiguous(const tt_tensor *t)
{
    if (TT_CHECK_TENSOR("tt_contiguous", "self", t))
        return NULL;
    if (tt__needs_dispatch1(t))
        return tt__call_op(TT_OP_CONTIGUOUS, TT_ARGS(tt_v_tensor(t)));
    return tt__contiguous_raw(t);
}

tt_tensor *tt_clone(const tt_tensor *t)
{
    if (TT_CHECK_TENSOR("tt_clone", "self", t))
        return NULL;
    if (tt__needs_dispatch1(t))
        return tt__call_op(TT_OP_CLONE, TT_ARGS(tt_v_tensor(t)));
    return tt__clone_raw(t);
}

tt_tensor *tt_to_dtype(const tt_tensor *t, tt_dtype dt)
{
    if (TT_CHECK_TENSOR("tt_to_dtype", "self", t))
        return NULL;
    if (tt__needs_dispatch1(t))
        return tt__call_op(TT_OP__TO_COPY, TT_ARGS(tt_v_tensor(t), tt_v_dtype(dt)));
    return tt__to_dtype_raw(t, dt);
}

/* The forms the tt_clone, tt_contiguous and tt_squeeze above lack; boxed
 * through the dispatcher (they are not on a hot path). */
tt_tensor *tt_clone_format(const tt_tensor *t, const char *memory_format)
{
    return tt__call_op(TT_OP_CLONE, TT_ARGS(tt_v_tensor(t), tt_v_str(memory_format)));
}

tt_tensor *tt_contiguous_format(const tt_tensor *t, const char *memory_format)
{
    return tt__call_op(TT_OP_CONTIGUOUS, TT_ARGS(tt_v_tensor(t), tt_v_str(memory_format)));
}

tt_tensor *tt_squeeze_dims(const tt_tensor *t, int n, const int64_t *dims)
{
    return tt__call_op(TT_OP_SQUEEZE_DIMS, TT_ARGS(tt_v_tensor(t), tt_v_ints(n, dims)));
}
