/* The public factories (tt_runtime.h): the front doors of the ops in
 * ops/factories.c, beside the other typed wrappers.
 *
 * Under a mode (to be recorded) or in fake mode (to make fake tensors),
 * tt__factory_needs_dispatch, each calls its op through the dispatcher,
 * its arguments boxed in the op's schema order, once the sizes pass the
 * checks that name this call; otherwise it runs the runtime's direct
 * path (tt__empty_impl, tt__full_raw & co., runtime/factory.c), as the
 * op's real kernel does. The runtime itself calls the direct paths, or
 * the op by id, never these (runtime/ sits below ops/). */
#include "ops_impl.h"

tt_tensor *tt_empty(int ndim, const int64_t *sizes, tt_dtype dt)
{
    if (tt__factory_needs_dispatch() && !tt__check_sizes("tt_empty", ndim, sizes, NULL))
        return tt__call_op(TT_OP_EMPTY, TT_ARGS(tt_v_ints(ndim, sizes), tt_v_dtype(dt)));
    return tt__empty_impl(ndim, sizes, NULL, dt, false);
}

tt_tensor *tt_empty_strided(int ndim, const int64_t *sizes, const int64_t *strides, tt_dtype dt)
{
    if (tt__factory_needs_dispatch() && strides &&
        !tt__check_sizes("tt_empty_strided", ndim, sizes, NULL))
        return tt__call_op(TT_OP_EMPTY_STRIDED, TT_ARGS(tt_v_ints(ndim, sizes),
                                                        tt_v_ints(ndim, strides), tt_v_dtype(dt)));
    if (ndim > 0 && !strides) {
        tt_error(TT_EINVAL, "tt_empty_strided: argument 'stride' is NULL");
        return NULL;
    }
    return tt__empty_impl(ndim, sizes, strides, dt, false);
}

/* full, zeros, ones and scalar: one body, errors naming the call made. */
static tt_tensor *full_named(const char *fn, int ndim, const int64_t *sizes, double value,
                             tt_dtype dt)
{
    if (tt__factory_needs_dispatch() && !tt__check_sizes(fn, ndim, sizes, NULL))
        return tt__call_op(TT_OP_FULL,
                           TT_ARGS(tt_v_ints(ndim, sizes), tt_v_float(value), tt_v_dtype(dt)));
    return tt__full_raw(fn, ndim, sizes, value, dt);
}

tt_tensor *tt_full(int ndim, const int64_t *sizes, double value, tt_dtype dt)
{
    return full_named("tt_full", ndim, sizes, value, dt);
}

tt_tensor *tt_zeros(int ndim, const int64_t *sizes, tt_dtype dt)
{
    return full_named("tt_zeros", ndim, sizes, 0.0, dt);
}

tt_tensor *tt_ones(int ndim, const int64_t *sizes, tt_dtype dt)
{
    return full_named("tt_ones", ndim, sizes, 1.0, dt);
}

tt_tensor *tt_scalar(double value, tt_dtype dt)
{
    return full_named("tt_scalar", 0, NULL, value, dt);
}

tt_tensor *tt_arange(double start, double end, double step, tt_dtype dt)
{
    if (tt__factory_needs_dispatch())
        return tt__call_op(TT_OP_ARANGE_START_STEP, TT_ARGS(tt_v_float(start), tt_v_float(end),
                                                            tt_v_float(step), tt_v_dtype(dt)));
    return tt__arange_raw(start, end, step, dt);
}

tt_tensor *tt_linspace(double start, double end, int64_t steps, tt_dtype dt)
{
    if (tt__factory_needs_dispatch())
        return tt__call_op(TT_OP_LINSPACE, TT_ARGS(tt_v_float(start), tt_v_float(end),
                                                   tt_v_int(steps), tt_v_dtype(dt)));
    return tt__linspace_raw(start, end, steps, dt);
}

static tt_tensor *random_tensor(int ndim, const int64_t *sizes, tt_dtype dt, bool normal)
{
    if (tt__factory_needs_dispatch() &&
        !tt__check_sizes(normal ? "tt_randn" : "tt_rand", ndim, sizes, NULL))
        return tt__call_op(normal ? TT_OP_RANDN : TT_OP_RAND,
                           TT_ARGS(tt_v_ints(ndim, sizes), tt_v_dtype(dt)));
    return tt__random_raw(ndim, sizes, dt, normal);
}

tt_tensor *tt_rand(int ndim, const int64_t *sizes, tt_dtype dt)
{
    return random_tensor(ndim, sizes, dt, false);
}

tt_tensor *tt_randn(int ndim, const int64_t *sizes, tt_dtype dt)
{
    return random_tensor(ndim, sizes, dt, true);
}

tt_tensor *tt_new_empty(const tt_tensor *like, int ndim, const int64_t *sizes)
{
    if (like && tt__factory_needs_dispatch() &&
        !tt__check_sizes("tt_new_empty", ndim, sizes, NULL))
        return tt__call_op(TT_OP_NEW_EMPTY, TT_ARGS(tt_v_tensor(like), tt_v_ints(ndim, sizes)));
    if (TT_CHECK_TENSOR("tt_new_empty", "self", like))
        return NULL;
    return tt__empty_named("tt_new_empty", ndim, sizes, NULL, (tt_dtype)like->dtype,
                           like->storage->fake);
}

/* PyTorch's preserve_format layout (tt__strides_like). */
tt_tensor *tt_empty_like(const tt_tensor *t)
{
    if (t && tt__factory_needs_dispatch())
        return tt__call_op(TT_OP_EMPTY_LIKE, TT_ARGS(tt_v_tensor(t)));
    if (TT_CHECK_TENSOR("tt_empty_like", "self", t))
        return NULL;
    tt_size st[TT_MAX_DIMS];
    tt__strides_like(t, st);
    return tt__empty_named("tt_empty_like", t->ndim, t->sizes, st, (tt_dtype)t->dtype,
                           t->storage->fake);
}
