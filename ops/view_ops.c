/* Built-in ops: the runtime's views and copies, registered as ops.
 *
 * The typed wrappers (tt_view & co., ops/view_front.c) run the runtime's
 * direct paths (tt__view_raw & co., runtime/tensor_views.c and
 * runtime/copy.c) when no mode, no autograd and no fake mode is in play;
 * otherwise they call the op of the same name through the dispatcher, and
 * its kernel below runs the same direct path. The direct paths serve real
 * and fake tensors alike (a view of a fake tensor shares its fake
 * storage; a copy of one is fake), so one kernel per op is both the cpu
 * kernel and the fake kernel.
 *
 * Schemas follow PyTorch's native_functions.yaml; the wrappers box their
 * arguments in the schema's order.
 *
 * Aliasing: every view returns `Tensor(a)`. reshape and contiguous keep
 * PyTorch's `Tensor(a)` annotation although they alias only when no copy
 * is needed (PyTorch's reshape is CompositeImplicitAutograd and documents
 * the same "may or may not alias"); opcheck must allow that for them. */
#include "ops_impl.h"

#include <string.h>

#include <limits.h>

/* Static data of the rows (runtime/builtin_ops.h) whose backward serves
 * two ops. */
enum { TRANSPOSE_DIMS, TRANSPOSE_T };  /* transpose.int, t */
enum { SLICE_RANGE, SLICE_NARROW };    /* slice.Tensor, narrow */

/* A kernel's result: the runtime function's tensor, or its error as is (so
 * a call under a mode fails with the same message as a direct call). */
static tt_status ret(tt_frame *f, tt_tensor *t)
{
    return t ? tt_return(f, 0, t) : tt_errcode();
}

/* Reads int argument i as a dim of a tensor with `ndim` dims. The runtime
 * functions take an int; a value outside int's range could be truncated into
 * range, so it is refused here with the runtime's range message. */
static tt_status arg_dim(tt_frame *f, int i, int ndim, int *out)
{
    int64_t v;
    tt_status st = tt_arg_int(f, i, &v);
    if (st)
        return st;
    if (v < INT_MIN || v > INT_MAX) {
        const tt_op *op = tt_frame_op(f);
        tt__op_dim(tt_op_name(op), tt_schema_arg(tt_op_schema(op), i)->name, i + 1, v, ndim);
        return tt_errcode();
    }
    *out = (int)v;
    return TT_OK;
}

/* Reads the tensor argument 0 and the int list argument 1. */
static tt_status self_and_ints(tt_frame *f, tt_tensor **self, const int64_t **v, int *n)
{
    tt_status st = tt_arg_tensor(f, 0, self);
    return st ? st : tt_arg_ints(f, 1, v, n);
}

/* ------------------------------------------------------------------ views */

/* self is (N0..Nk); out is (size) over the same elements, same storage. */
static tt_status view_kernel(tt_frame *f)
{
    tt_tensor *self;
    const int64_t *size;
    int n;
    tt_status st = self_and_ints(f, &self, &size, &n);
    return st ? st : ret(f, tt__view_raw(self, n, size));
}

/* As view, but copies when no view exists (then out does not alias). */
static tt_status reshape_kernel(tt_frame *f)
{
    tt_tensor *self;
    const int64_t *shape;
    int n;
    tt_status st = self_and_ints(f, &self, &shape, &n);
    return st ? st : ret(f, tt__reshape_raw(self, n, shape));
}

/* self is (N0..Nk); out is (N[dims[0]]..N[dims[k]]). */
static tt_status permute_kernel(tt_frame *f)
{
    tt_tensor *self;
    const int64_t *dims;
    int n;
    tt_status st = self_and_ints(f, &self, &dims, &n);
    return st ? st : ret(f, tt__permute_raw(self, n, dims));
}

/* self is (.., A, .., B, ..); out is (.., B, .., A, ..). */
static tt_status transpose_kernel(tt_frame *f)
{
    tt_tensor *self;
    int d0 = 0, d1 = 0;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &self)) || (st = arg_dim(f, 1, self->ndim, &d0)) ||
        (st = arg_dim(f, 2, self->ndim, &d1)))
        return st;
    return ret(f, tt__transpose_raw(self, d0, d1));
}

/* self is (N, M) / (N) / (); out is (M, N) / (N) / (). */
static tt_status t_kernel(tt_frame *f)
{
    tt_tensor *self;
    tt_status st = tt_arg_tensor(f, 0, &self);
    return st ? st : ret(f, tt__t_raw(self));
}

/* self is (.., N, ..); out is (.., length, ..) from `start`. */
static tt_status narrow_kernel(tt_frame *f)
{
    tt_tensor *self;
    int dim = 0;
    int64_t start, length;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &self)) || (st = arg_dim(f, 1, self->ndim, &dim)) ||
        (st = tt_arg_int(f, 2, &start)) || (st = tt_arg_int(f, 3, &length)))
        return st;
    return ret(f, tt__narrow_raw(self, dim, start, length));
}

/* self is (.., N, ..); out is (.., ceil((end - start) / step), ..), the
 * bounds clamped as Python's. None bounds are 0 and INT64_MAX (PyTorch's
 * slice defaults: the whole dim). */
static tt_status slice_kernel(tt_frame *f)
{
    tt_tensor *self;
    int dim = 0;
    int64_t start = 0, end = INT64_MAX, step;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &self)) || (st = arg_dim(f, 1, self->ndim, &dim)) ||
        (!tt_arg_is_none(f, 2) && (st = tt_arg_int(f, 2, &start))) ||
        (!tt_arg_is_none(f, 3) && (st = tt_arg_int(f, 3, &end))) ||
        (st = tt_arg_int(f, 4, &step)))
        return st;
    return ret(f, tt__slice_raw(self, dim, start, end, step));
}

/* self is (.., N, ..); out drops that dim, at `index`. */
static tt_status select_kernel(tt_frame *f)
{
    tt_tensor *self;
    int dim = 0;
    int64_t index;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &self)) || (st = arg_dim(f, 1, self->ndim, &dim)) ||
        (st = tt_arg_int(f, 2, &index)))
        return st;
    return ret(f, tt__select_raw(self, dim, index));
}

/* self is (1, N) say; out is (size) = (M, N) with stride 0 where expanded.
 * `implicit` only tells autograd's tracer the expand came from
 * broadcasting; it changes nothing here. */
static tt_status expand_kernel(tt_frame *f)
{
    tt_tensor *self;
    const int64_t *size;
    int n;
    tt_status st = self_and_ints(f, &self, &size, &n);
    return st ? st : ret(f, tt__expand_raw(self, n, size));
}

/* self is (.., 1, ..); out drops that dim (unchanged if its size is not 1). */
static tt_status squeeze_dim_kernel(tt_frame *f)
{
    tt_tensor *self;
    int dim = 0;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &self)) || (st = arg_dim(f, 1, self->ndim, &dim)))
        return st;
    return ret(f, tt__squeeze_raw(self, dim));
}

/* self is (1, N, 1); out is (N). */
static tt_status squeeze_kernel(tt_frame *f)
{
    tt_tensor *self;
    tt_status st = tt_arg_tensor(f, 0, &self);
    return st ? st : ret(f, tt__squeeze_all_raw(self));
}

/* self is (1, N, 1); out drops those of the named dims that have size 1,
 * at once (dims [0, 2] give (N); a dim of size > 1 stays). A 0-dim self
 * takes dims 0 and -1, as PyTorch's. */
static tt_status squeeze_dims_kernel(tt_frame *f)
{
    tt_tensor *self;
    const int64_t *dims;
    int n;
    tt_status st = self_and_ints(f, &self, &dims, &n);
    if (st)
        return st;
    bool drop[TT_MAX_DIMS] = {false};
    for (int i = 0; i < n; i++) {
        int d = tt__op_dim(tt__op_label(TT_OP_SQUEEZE_DIMS), "dim", 2, dims[i], self->ndim);
        if (d < 0)
            return tt_errcode();
        if (self->ndim > 0 && tt__sz_is_one(self->sizes[d]))
            drop[d] = true;
    }
    tt_size sizes[TT_MAX_DIMS], strides[TT_MAX_DIMS];
    int nd = 0;
    for (int d = 0; d < self->ndim; d++)
        if (!drop[d]) {
            sizes[nd] = self->sizes[d];
            strides[nd++] = self->strides[d];
        }
    return ret(f, tt__make_view(self, nd, sizes, strides, self->offset));
}

/* self is (N, M); out is (N, 1, M) for dim 1. */
static tt_status unsqueeze_kernel(tt_frame *f)
{
    tt_tensor *self;
    int dim = 0;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &self)) || (st = arg_dim(f, 1, self->ndim + 1, &dim)))
        return st;
    return ret(f, tt__unsqueeze_raw(self, dim));
}

/* self is (A, B, C, D); out is (A, B*C, D) for start_dim 1, end_dim 2.
 * Like reshape, it copies when the dims cannot be merged in place. */
static tt_status flatten_kernel(tt_frame *f)
{
    tt_tensor *self;
    int s = 0, e = 0;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &self)) || (st = arg_dim(f, 1, self->ndim, &s)) ||
        (st = arg_dim(f, 2, self->ndim, &e)))
        return st;
    return ret(f, tt__flatten_raw(self, s, e));
}

/* out is (size) with (stride) from storage_offset in self's storage; None
 * keeps self's offset (PyTorch's default). */
static tt_status as_strided_kernel(tt_frame *f)
{
    tt_tensor *self;
    const int64_t *size, *stride;
    int n, ns;
    int64_t offset;
    tt_status st;
    if ((st = self_and_ints(f, &self, &size, &n)) || (st = tt_arg_ints(f, 2, &stride, &ns)))
        return st;
    if (n != ns)
        return tt_frame_fail(f, TT_EINVAL, "mismatch in length of strides and shape "
                                           "(argument 'size' (#2) has %d entries, "
                                           "argument 'stride' (#3) has %d)", n, ns);
    offset = tt_storage_offset(self);
    if (!tt_arg_is_none(f, 3) && (st = tt_arg_int(f, 3, &offset)))
        return st;
    return ret(f, tt__as_strided_raw(self, n, size, stride, offset));
}

/* out is self's elements, a new tensor over the same storage. */
static tt_status detach_kernel(tt_frame *f)
{
    tt_tensor *self;
    tt_status st = tt_arg_tensor(f, 0, &self);
    return st ? st : ret(f, tt__detach_raw(self));
}

/* alias: a view of all of self, as it is (Core ATen's; functionalized
 * graphs keep one where an output may not be its input itself). */
static tt_status alias_kernel(tt_frame *f)
{
    tt_tensor *self;
    tt_status st = tt_arg_tensor(f, 0, &self);
    return st ? st
              : ret(f, tt__make_view(self, self->ndim, self->sizes, self->strides, self->offset));
}

/* ------------------------------------------------------------------ copies */

/* The memory_format argument of clone and contiguous, PyTorch's
 * MemoryFormat as a string (the schema language here has no enum for it):
 * the strides a copy of self gets in that format, or an error naming the
 * op. "preserve_format" keeps self's layout (its strides when dense, else
 * its stride order); the channels-last formats need 4 (NCHW, C fastest)
 * or 5 (NCDHW) dims. */
static tt_status format_strides(tt_frame *f, int arg, const tt_tensor *self, bool allow_preserve,
                                tt_size *strides)
{
    const char *mf;
    tt_status st = tt_arg_str(f, arg, &mf);
    if (st)
        return st;
    int nd = self->ndim;
    if (!strcmp(mf, "contiguous_format")) {
        tt__contiguous_strides(nd, self->sizes, strides);
    } else if (!strcmp(mf, "preserve_format") && allow_preserve) {
        tt__strides_like(self, strides);
    } else if (!strcmp(mf, "preserve_format")) {
        return tt_frame_fail(f, TT_EINVAL, "argument 'memory_format' (#%d): preserve_format "
                                           "is unsupported by contiguous", arg + 1);
    } else if (!strcmp(mf, "channels_last") || !strcmp(mf, "channels_last_3d")) {
        int want = mf[13] ? 5 : 4;
        if (nd != want)
            return tt_frame_fail(f, TT_ESHAPE, "argument 'memory_format' (#%d): %s needs a "
                                               "%d-d tensor, got %d dims", arg + 1, mf, want, nd);
        tt__channels_last_strides(nd, self->sizes, strides);
    } else {
        return tt_frame_fail(f, TT_EINVAL, "argument 'memory_format' (#%d): expected "
                                           "'preserve_format', 'contiguous_format', "
                                           "'channels_last' or 'channels_last_3d', got '%s'",
                             arg + 1, mf);
    }
    return TT_OK;
}

/* A copy of self with the given strides (fake for a fake self). */
static tt_tensor *copy_strided(const tt_tensor *self, const tt_size *strides)
{
    tt_tensor *out = tt__empty_impl(self->ndim, self->sizes, strides, (tt_dtype)self->dtype,
                                    self->storage->fake);
    if (out && !self->storage->fake && tt__copy_raw(out, self))
        out = tt_release(out);
    return out;
}

/* out is self laid out in memory_format (row-major by default): self's
 * storage when it already is (strides of size-1 dims do not matter), else
 * a copy. A kernel returns a new tensor object over self's storage rather
 * than self, so what the dispatcher's layers attach to the output (a
 * mode's tag, autograd's history) never lands on the input. */
static tt_status contiguous_kernel(tt_frame *f)
{
    tt_tensor *self;
    tt_size strides[TT_MAX_DIMS];
    tt_status st = tt_arg_tensor(f, 0, &self);
    if (!st && tt_frame_nargs(f) > 1)
        st = format_strides(f, 1, self, false, strides);
    else if (!st)
        tt__contiguous_strides(self->ndim, self->sizes, strides);
    if (st)
        return st;
    bool same = true;
    for (int d = 0; d < self->ndim && same; d++)
        same = tt__sz_le(self->sizes[d], 1) || tt__sz_eq(self->strides[d], strides[d]);
    if (same)
        return ret(f, tt__make_view(self, self->ndim, self->sizes, self->strides, self->offset));
    return ret(f, copy_strided(self, strides));
}

/* out is a copy of self in memory_format (preserve_format: self's
 * layout). */
static tt_status clone_kernel(tt_frame *f)
{
    tt_tensor *self;
    tt_size strides[TT_MAX_DIMS];
    tt_status st = tt_arg_tensor(f, 0, &self);
    if (!st && tt_frame_nargs(f) > 1)
        st = format_strides(f, 1, self, true, strides);
    else if (!st)
        tt__strides_like(self, strides);
    return st ? st : ret(f, copy_strided(self, strides));
}

/* out is a copy of self converted to dtype, with self's memory layout. */
static tt_status to_copy_kernel(tt_frame *f)
{
    tt_tensor *self;
    tt_dtype dt = TT_F32;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &self)) || (st = tt_arg_dtype(f, 1, &dt, NULL)))
        return st;
    return ret(f, tt__to_dtype_raw(self, dt));
}

/* True when src broadcasts to dst's shape (copy_'s rule). */
static bool broadcasts_to(const tt_tensor *src, const tt_tensor *dst)
{
    if (src->ndim > dst->ndim)
        return false;
    for (int i = 1; i <= src->ndim; i++) {
        tt_size s = src->sizes[src->ndim - i], d = dst->sizes[dst->ndim - i];
        if (!tt__sz_eq(s, d) && !tt__sz_is_one(s))
            return false;
    }
    return true;
}

/* self is (S), src broadcasts to (S); self = src converted to self's dtype.
 * The raw copy, not tt_copy_: the dispatcher bumps self's version after the
 * kernel (self is Tensor(a!)), and it must move once per write. */
static tt_status copy_kernel(tt_frame *f)
{
    tt_tensor *self, *src;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &self)) || (st = tt_arg_tensor(f, 1, &src)))
        return st;
    if (self->storage->fake || src->storage->fake) {
        /* Metadata only: the fake kernel checks what the real one would. */
        if (!broadcasts_to(src, self)) {
            char a[256], b[256];
            return tt_error(TT_ESHAPE, "tt_copy_: argument 'src' of shape %s cannot be "
                                       "broadcast to the destination's shape %s",
                            tt_shape_str(src, a, sizeof a), tt_shape_str(self, b, sizeof b));
        }
        /* The overlap checks of the real copy (PyTorch's meta copy_ makes
         * them too), on symbolic extents through guards. */
        if ((st = tt__check_write("tt_copy_", self, NULL)) ||
            (st = tt__check_write("tt_copy_", self, src)))
            return st;
        if (!self->storage->fake)
            return tt_error(TT_EFAKE, "tt_copy_: cannot copy a fake tensor into a real one");
    } else if ((st = tt__copy_raw(self, src))) {
        return st;
    }
    return tt_return_self(f, 0, 0);
}

/* copy(self, src, non_blocking): copy_'s result without the write, a new
 * contiguous tensor of self's shape and dtype holding src (broadcast and
 * converted), as PyTorch's functional copy. non_blocking means nothing on
 * a CPU. */
static tt_status copy_functional_kernel(tt_frame *f)
{
    tt_tensor *self, *src;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &self)) || (st = tt_arg_tensor(f, 1, &src)))
        return st;
    if (!broadcasts_to(src, self)) {
        char a[256], b[256];
        return tt_frame_fail(f, TT_ESHAPE, "argument 'src' (#2) of shape %s cannot be "
                                           "broadcast to self's shape %s",
                             tt_shape_str(src, a, sizeof a), tt_shape_str(self, b, sizeof b));
    }
    bool fake = self->storage->fake || src->storage->fake;
    tt_tensor *out = tt__ops_new(fake, self->ndim, self->sizes, NULL, (tt_dtype)self->dtype);
    if (!out || fake)
        return ret(f, out);
    if ((st = tt__copy_raw(out, src))) {
        tt_release(out);
        return st;
    }
    return ret(f, out);
}

/* fill.Scalar(self, value): a new tensor like self (its layout kept) with
 * value everywhere, in self's dtype. */
static tt_status fill_functional_kernel(tt_frame *f)
{
    tt_tensor *self;
    double v;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &self)) || (st = tt_arg_scalar(f, 1, &v, NULL)))
        return st;
    tt_size strides[TT_MAX_DIMS];
    tt__strides_like(self, strides);
    tt_tensor *out =
        tt__ops_new(self->storage->fake, self->ndim, self->sizes, strides, (tt_dtype)self->dtype);
    if (!out || self->storage->fake)
        return ret(f, out);
    if ((st = tt__fill_raw(out, v))) {
        tt_release(out);
        return st;
    }
    return ret(f, out);
}

/* self = value everywhere (converted to self's dtype). Raw fill for the
 * same reason as copy_. */
static tt_status fill_kernel(tt_frame *f)
{
    tt_tensor *self;
    double v;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &self)) || (st = tt_arg_scalar(f, 1, &v, NULL)))
        return st;
    if (!self->storage->fake && (st = tt__fill_raw(self, v)))
        return st;
    return tt_return_self(f, 0, 0);
}

/* -------------------------------------------------- slice/select backward */

/* Zeros of the input's sizes with the gradient written into the slice the
 * forward op viewed: the derivative of slice/narrow/select as one op, as
 * aten's slice_backward and select_backward, so a traced backward reads
 * as one node. */
static tt_status scatter_backward(tt_frame *f, bool select)
{
    tt_tensor *g;
    const int64_t *in_sizes;
    int n;
    int64_t dim, a, b = 0, step = 1;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &g)) || (st = tt_arg_ints(f, 1, &in_sizes, &n)) ||
        (st = tt_arg_int(f, 2, &dim)) || (st = tt_arg_int(f, 3, &a)))
        return st;
    if (!select && ((st = tt_arg_int(f, 4, &b)) || (st = tt_arg_int(f, 5, &step))))
        return st;
    bool fake = tt_frame_is_fake(f) || tt_is_fake(g);
    tt_tensor *z = tt__empty_impl(n, in_sizes, NULL, tt_dtype_of(g), fake);
    if (!z)
        return tt_errcode();
    if (!fake) {
        tt_tensor *v = select ? tt__select_raw(z, (int)dim, a)
                              : tt__slice_raw(z, (int)dim, a, b, step);
        st = v ? tt__fill_raw(z, 0) : tt_errcode();
        if (!st)
            st = tt__copy_raw(v, g);
        tt_release(v);
        if (st) {
            tt_release(z);
            return st;
        }
    }
    return tt_return(f, 0, z);
}

static tt_status slice_backward_kernel(tt_frame *f) { return scatter_backward(f, false); }
static tt_status select_backward_kernel(tt_frame *f) { return scatter_backward(f, true); }

/* ------------------------------------------------------------ derivatives */

/* Rules written with ops (traced like the forward). A gradient of an
 * expanded shape is summed back by the engine, and a gradient of another
 * dtype is cast back, so expand, contiguous, clone and _to_copy pass the
 * gradient through unchanged. */

static tt_status setup_shape(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                             const tt_value *out, int nout)
{
    (void)nin, (void)out, (void)nout;
    tt_status st = tt_ctx_save_shape(ctx, "shape", in[0].u.t);
    /* The int arguments the rules need (dims, indices, bounds). */
    for (int i = 1; !st && i < nin && i < 6; i++) {
        char key[8] = {'a', (char)('0' + i), 0};
        if (in[i].kind == TT_V_INT)
            st = tt_ctx_save_int(ctx, key, in[i].u.i);
        else if (in[i].kind == TT_V_INTS)
            st = tt_ctx_save_ints(ctx, key, in[i].n, in[i].u.ints);
    }
    return st;
}


/* view, reshape, flatten, squeeze, unsqueeze: back to the input's shape. */
static tt_status reshape_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                  tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    const int64_t *shape;
    int n;
    tt_status st = tt_ctx_get_ints(ctx, "shape", &shape, &n);
    return st ? st : tt__put_grad(ctx, gi, 0, tt_reshape(g[0], n, shape));
}

static tt_status permute_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                  tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    const int64_t *dims;
    int n;
    tt_status st = tt_ctx_get_ints(ctx, "a1", &dims, &n);
    if (st)
        return st;
    int64_t inv[TT_MAX_DIMS];
    for (int i = 0; i < n; i++)
        inv[dims[i] < 0 ? dims[i] + n : dims[i]] = i;
    return tt__put_grad(ctx, gi, 0, tt_permute(g[0], n, inv));
}

static tt_status transpose_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                    tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    int64_t d0 = 0, d1 = 1;
    if ((intptr_t)tt_ctx_userdata(ctx) == TRANSPOSE_DIMS) {
        tt_status st;
        if ((st = tt_ctx_get_int(ctx, "a1", &d0)) || (st = tt_ctx_get_int(ctx, "a2", &d1)))
            return st;
    } else {
        const int64_t *shape;
        int n;
        tt_status st = tt_ctx_get_ints(ctx, "shape", &shape, &n);
        if (st)
            return st;
        if (n < 2)
            return tt__put_grad(ctx, gi, 0, tt_retain(g[0]));
    }
    return tt__put_grad(ctx, gi, 0, tt_transpose(g[0], (int)d0, (int)d1));
}

static tt_status slice_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    const int64_t *shape;
    int n;
    int64_t dim = 0, start = 0, end = INT64_MAX, step = 1, len;
    tt_status st = tt_ctx_get_ints(ctx, "shape", &shape, &n);
    if (st)
        return st;
    tt_ctx_get_int(ctx, "a1", &dim);
    if ((intptr_t)tt_ctx_userdata(ctx) == SLICE_NARROW) {
        tt_ctx_get_int(ctx, "a2", &start);
        tt_ctx_get_int(ctx, "a3", &len);
        /* narrow counts a negative start from the end (the forward checked
         * it is in range); slice would read [start, start + len) as Python
         * bounds, where -2 + 2 = 0 is an empty end. */
        int64_t d = dim < 0 ? dim + n : dim;
        if (d >= 0 && d < n && tt__sz_lt(start, 0))
            start = tt_sym_add(start, shape[d]);
        end = tt_sym_add(start, len);
    } else {
        tt_ctx_get_int(ctx, "a2", &start);
        tt_ctx_get_int(ctx, "a3", &end);
        tt_ctx_get_int(ctx, "a4", &step);
    }
    tt_clear_error(); /* None bounds were not saved: their defaults stand */
    return tt__put_grad(ctx, gi, 0,
               tt__call_op(TT_OP_SLICE_BACKWARD, TT_ARGS(tt_v_tensor(g[0]), tt_v_ints(n, shape),
                                        tt_v_int(dim), tt_v_int(start), tt_v_int(end),
                                        tt_v_int(step))));
}

static tt_status select_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                 tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    const int64_t *shape;
    int n;
    int64_t dim, index;
    tt_status st;
    if ((st = tt_ctx_get_ints(ctx, "shape", &shape, &n)) ||
        (st = tt_ctx_get_int(ctx, "a1", &dim)) || (st = tt_ctx_get_int(ctx, "a2", &index)))
        return st;
    return tt__put_grad(ctx, gi, 0,
               tt__call_op(TT_OP_SELECT_BACKWARD, TT_ARGS(tt_v_tensor(g[0]), tt_v_ints(n, shape),
                                        tt_v_int(dim), tt_v_int(index))));
}

/* expand, contiguous, clone, _to_copy: the engine reduces and casts. */
static tt_status identity_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                   tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    return tt__put_grad(ctx, gi, 0, tt_retain(g[0]));
}

/* copy_: self is overwritten (no gradient to its old value); src gets g. */
static tt_status copy_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                               tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    return tt__put_grad(ctx, gi, 1, tt_retain(g[0]));
}

/* fill.Scalar: zeros for self (its values are not read), as PyTorch. */
static tt_status zeros_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    return tt__put_grad(ctx, gi, 0, tt_zeros(tt_ndim(g[0]), tt_sizes(g[0]), tt_dtype_of(g[0])));
}

/* fill_: the result does not depend on any input. */
static tt_status no_grad_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                  tt_tensor **gi, int ni)
{
    (void)ctx, (void)g, (void)ng, (void)gi, (void)ni;
    return TT_OK;
}

/* ------------------------------------------------- metadata as values
 *
 * Core ATen's size queries return a tensor's metadata as it has it: in a
 * trace, the symbol of a traced input's size, which the graph records as
 * PyTorch's export records sym_size.int (C code given a symbol computes
 * with tt_sym_add and friends, never with C arithmetic). PyTorch 1.13
 * does not check their dim (sym_size.int(t, -4) of a 3-d tensor reads
 * past the sizes); tt refuses it as size(dim) does. */

enum { META_SIZE, META_STRIDE, META_NUMEL, META_OFFSET };

static tt_status meta_query_kernel(tt_frame *f)
{
    int which = (int)(intptr_t)tt_frame_userdata(f);
    tt_tensor *self;
    int64_t dim = 0;
    tt_status st = tt_arg_tensor(f, 0, &self);
    if (!st && (which == META_SIZE || which == META_STRIDE))
        st = tt_arg_int(f, 1, &dim);
    if (st)
        return st;
    tt_size v;
    switch (which) {
    case META_SIZE: case META_STRIDE: {
        int nd = self->ndim;
        if (nd == 0)
            return tt_frame_fail(f, TT_EINVAL, "argument 'dim' (#2): a 0-dim tensor has no "
                                               "dim %lld", (long long)dim);
        if (dim < -nd || dim >= nd)
            return tt_frame_fail(f, TT_EINVAL, "argument 'dim' (#2): dimension out of range "
                                               "(expected to be in range of [%d, %d], but got "
                                               "%lld)", -nd, nd - 1, (long long)dim);
        int d = (int)(dim < 0 ? dim + nd : dim);
        v = which == META_SIZE ? self->sizes[d] : self->strides[d];
        break;
    }
    case META_NUMEL:
        v = 1;
        for (int d = 0; d < self->ndim && v; d++)
            v = tt_sym_mul(v, self->sizes[d]);
        break;
    default: v = self->offset; break;
    }
    return tt_return_value(f, 0, tt_v_int(v));
}

/* _local_scalar_dense: the one element's value as a number of its kind
 * (tt_item's read: in a trace of fake tensors a graph break naming the
 * caller's line, as PyTorch's Tensor.item() breaks a dynamo graph). */
static tt_status local_scalar_kernel(tt_frame *f)
{
    tt_tensor *self;
    tt_status st = tt_arg_tensor(f, 0, &self);
    if (st)
        return st;
    /* a symbolic size is never 1 (sizes 0 and 1 are specialized) */
    bool one = true;
    for (int d = 0; d < self->ndim; d++)
        one = one && !tt_size_is_sym(self->sizes[d]) && self->sizes[d] == 1;
    if (!one) {
        char s[256];
        return tt_frame_fail(f, TT_EINVAL, "argument 'self' (#1): expected a tensor with one "
                                           "element, got shape %s",
                             tt_shape_str(self, s, sizeof s));
    }
    double v;
    if ((st = tt_item_at(self, &v, tt_callsite())))
        return st;
    tt_dtype dt = tt_dtype_of(self);
    if (dt == TT_BOOL)
        return tt_return_value(f, 0, tt_v_bool(v != 0));
    if (!tt_dtype_is_float(dt)) {
        /* an i64 beyond 2^53 keeps its bits */
        int64_t i = 0;
        if (dt == TT_I64)
            memcpy(&i, tt_data(self), sizeof i);
        return tt_return_value(f, 0, tt_v_int(dt == TT_I64 ? i : (int64_t)v));
    }
    return tt_return_value(f, 0, tt_v_float(v));
}

/* ------------------------------------------------------------ registration */

#undef TT__FAMILY_VIEWS
#define TT__FAMILY_VIEWS TT__ROW
static const tt__builtin_row rows[] = {TT__FAMILY_ROWS};

tt_status tt__register_views(tt_library *lib)
{
    return TT__DEFINE_ROWS(lib, rows);
}
