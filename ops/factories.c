/* Built-in ops: the factories (empty, full, arange, linspace, rand, randn,
 * new_empty, empty_like) as ops, so that a tensor made inside traced code
 * is a node of the graph, and in fake mode a fake tensor. The typed
 * wrappers tt_empty & co. (ops/factory_front.c) call these when a mode or
 * fake mode is on; the real kernels run the runtime's direct paths
 * (tt__empty_impl, tt__full_raw & co.), as the wrappers do otherwise. */
#include "ops_impl.h"

#include <math.h>

/* The dtype argument: None means the default dtype, f32. */
static tt_status dtype_arg(tt_frame *f, int i, tt_dtype *dt)
{
    bool none = true;
    tt_status st = tt_arg_dtype(f, i, dt, &none);
    if (!st && none)
        *dt = TT_F32;
    return st;
}

/* Sizes from a SymInt[] argument (symbolic entries are allowed for fake
 * outputs only; tt__empty_impl says so otherwise). */
static tt_status sizes_arg(tt_frame *f, int i, const int64_t **v, int *n)
{
    return tt_arg_ints(f, i, v, n);
}

static tt_status ret(tt_frame *f, tt_tensor *t)
{
    return t ? tt_return(f, 0, t) : tt_errcode();
}

/* tt::empty(SymInt[] size, *, ScalarType? dtype=None) */
static tt_status empty_kernel(tt_frame *f)
{
    const int64_t *sz;
    int n;
    tt_dtype dt;
    tt_status st;
    if ((st = sizes_arg(f, 0, &sz, &n)) || (st = dtype_arg(f, 1, &dt)))
        return st;
    return ret(f, tt__empty_impl(n, sz, NULL, dt, tt_frame_is_fake(f)));
}

/* tt::empty.memory_format: Core ATen's empty, with PyTorch's keyword
 * options. Layout admits only strided (the schema checks); the device
 * chose this kernel; pinned memory needs an accelerator tt has not; the
 * memory format is contiguous (None, 0), channels_last (2, 4 dims) or
 * channels_last_3d (3, 5 dims), not preserve (1: there is nothing to
 * preserve). */
static tt_status empty_memory_format_kernel(tt_frame *f)
{
    const int64_t *sz;
    int n;
    tt_dtype dt;
    bool pin = false;
    int64_t mf = 0;
    tt_status st;
    if ((st = sizes_arg(f, 0, &sz, &n)) || (st = dtype_arg(f, 1, &dt)) ||
        (!tt_arg_is_none(f, 4) && (st = tt_arg_bool(f, 4, &pin))) ||
        (!tt_arg_is_none(f, 5) && (st = tt_arg_int(f, 5, &mf))))
        return st;
    if (pin)
        return tt_frame_fail(f, TT_EINVAL, "argument 'pin_memory' (#5): pinned memory needs "
                                           "an accelerator; tensortrace has none");
    if (mf == 1)
        return tt_frame_fail(f, TT_EINVAL, "argument 'memory_format' (#6): preserve_format is "
                                           "unsupported by empty (there is no tensor to "
                                           "preserve)");
    if (mf >= 2 && n != (mf == 2 ? 4 : 5))
        return tt_frame_fail(f, TT_ESHAPE, "argument 'memory_format' (#6): %s needs %d sizes, "
                                           "got %d", mf == 2 ? "channels_last" : "channels_last_3d",
                             mf == 2 ? 4 : 5, n);
    tt_size strides[TT_MAX_DIMS];
    if (mf >= 2) {
        tt_size sizes[TT_MAX_DIMS];
        for (int d = 0; d < n; d++)
            sizes[d] = sz[d];
        tt__channels_last_strides(n, sizes, strides);
    }
    return ret(f, tt__empty_impl(n, sz, mf >= 2 ? strides : NULL, dt, tt_frame_is_fake(f)));
}

/* tt::empty_strided(SymInt[] size, SymInt[] stride, *, ScalarType? dtype=None) */
static tt_status empty_strided_kernel(tt_frame *f)
{
    const int64_t *sz, *strd;
    int n, ns;
    tt_dtype dt;
    tt_status st;
    if ((st = sizes_arg(f, 0, &sz, &n)) || (st = sizes_arg(f, 1, &strd, &ns)) ||
        (st = dtype_arg(f, 2, &dt)))
        return st;
    if (n != ns)
        return tt_frame_fail(f, TT_EINVAL, "argument 'stride' (#2) has %d entries for %d "
                                           "sizes", ns, n);
    return ret(f, tt__empty_impl(n, sz, strd, dt, tt_frame_is_fake(f)));
}

/* A dtype argument that, when None, PyTorch infers from Scalar arguments:
 * bool when all are bools, i64 when all are integers (or bools), else
 * the default float dtype (torch.full(s, 3) is int64, arange(0, 5) too). */
static tt_status dtype_arg_from(tt_frame *f, int i, int first, int n, tt_dtype *dt)
{
    bool none = true;
    tt_status st = tt_arg_dtype(f, i, dt, &none);
    if (st || !none)
        return st;
    bool all_bool = true, all_int = true;
    for (int k = first; k < first + n; k++) {
        tt_value_kind kind = tt_frame_arg(f, k)->kind;
        all_bool = all_bool && kind == TT_V_BOOL;
        all_int = all_int && (kind == TT_V_INT || kind == TT_V_BOOL);
    }
    *dt = all_bool ? TT_BOOL : all_int ? TT_I64 : TT_F32;
    return TT_OK;
}

/* tt::full(SymInt[] size, Scalar fill_value, *, ScalarType? dtype=None) */
static tt_status full_kernel(tt_frame *f)
{
    const int64_t *sz;
    int n;
    double v;
    tt_dtype dt;
    tt_status st;
    if ((st = sizes_arg(f, 0, &sz, &n)) || (st = tt_arg_scalar(f, 1, &v, NULL)) ||
        (st = dtype_arg_from(f, 2, 1, 1, &dt)))
        return st;
    if (tt_frame_is_fake(f))
        return ret(f, tt__empty_impl(n, sz, NULL, dt, true));
    return ret(f, tt__full_raw("tt_full", n, sz, v, dt));
}

/* tt::arange.start_step(Scalar start, Scalar end, Scalar step=1, *, ScalarType? dtype=None) */
static tt_status arange_kernel(tt_frame *f)
{
    double a, b, step;
    tt_dtype dt;
    tt_status st;
    if ((st = tt_arg_scalar(f, 0, &a, NULL)) || (st = tt_arg_scalar(f, 1, &b, NULL)) ||
        (st = tt_arg_scalar(f, 2, &step, NULL)) || (st = dtype_arg_from(f, 3, 0, 3, &dt)))
        return st;
    if (dt == TT_BOOL)
        return tt_frame_fail(f, TT_EDTYPE, "argument 'dtype' (#4): not implemented for bool");
    if (!tt_dtype_is_float(dt)) {
        /* PyTorch reads the bounds and the step in the integer type: a
         * fractional step of an integer arange truncates (0.5 is 0). */
        a = trunc(a), b = trunc(b), step = trunc(step);
        if (step == 0)
            return tt_frame_fail(f, TT_EINVAL, "argument 'step' (#3) must be nonzero (it is "
                                               "read as %s)", tt_dtype_name(dt));
    }
    if (tt_frame_is_fake(f)) {
        int64_t n;
        if ((st = tt__arange_numel(a, b, step, &n)))
            return st;
        return ret(f, tt__empty_impl(1, &n, NULL, dt, true));
    }
    return ret(f, tt__arange_raw(a, b, step, dt));
}

/* tt::linspace(Scalar start, Scalar end, int steps, *, ScalarType? dtype=None) */
static tt_status linspace_kernel(tt_frame *f)
{
    double a, b;
    int64_t steps;
    tt_dtype dt;
    tt_status st;
    if ((st = tt_arg_scalar(f, 0, &a, NULL)) || (st = tt_arg_scalar(f, 1, &b, NULL)) ||
        (st = tt_arg_int(f, 2, &steps)) || (st = dtype_arg(f, 3, &dt)))
        return st;
    if (dt == TT_BOOL)
        return tt_frame_fail(f, TT_EDTYPE, "argument 'dtype' (#4): not implemented for bool");
    if (tt_frame_is_fake(f)) {
        if (steps < 0)
            return tt_frame_fail(f, TT_EINVAL, "argument 'steps' must be non-negative "
                                               "(got %lld)", (long long)steps);
        return ret(f, tt__empty_impl(1, &steps, NULL, dt, true));
    }
    return ret(f, tt__linspace_raw(a, b, steps, dt));
}

/* The data of the rand and randn rows. */
enum { RANDOM_UNIFORM, RANDOM_NORMAL };

/* tt::rand / tt::randn(SymInt[] size, *, ScalarType? dtype=None) */
static tt_status random_kernel(tt_frame *f)
{
    const int64_t *sz;
    int n;
    tt_dtype dt;
    tt_status st;
    if ((st = sizes_arg(f, 0, &sz, &n)) || (st = dtype_arg(f, 1, &dt)))
        return st;
    bool normal = (intptr_t)tt_frame_userdata(f) == RANDOM_NORMAL;
    if (tt_frame_is_fake(f)) {
        if (!tt_dtype_is_float(dt))
            return tt_frame_fail(f, TT_EDTYPE, "argument 'dtype' expects a floating "
                                               "point dtype (f32 or f64), got %s",
                                 tt_dtype_name(dt));
        return ret(f, tt__empty_impl(n, sz, NULL, dt, true));
    }
    return ret(f, tt__random_raw(n, sz, dt, normal));
}

/* tt::new_empty(Tensor self, SymInt[] size): self's dtype, and fake when
 * self is or in fake mode. */
static tt_status new_empty_kernel(tt_frame *f)
{
    tt_tensor *self;
    const int64_t *sz;
    int n;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &self)) || (st = sizes_arg(f, 1, &sz, &n)))
        return st;
    return ret(f, tt__empty_impl(n, sz, NULL, (tt_dtype)self->dtype,
                                 tt_frame_is_fake(f) || self->storage->fake));
}

/* tt::empty_like(Tensor self): PyTorch's preserve_format layout. */
static tt_status empty_like_kernel(tt_frame *f)
{
    tt_tensor *self;
    tt_status st = tt_arg_tensor(f, 0, &self);
    if (st)
        return st;
    tt_size strides[TT_MAX_DIMS];
    tt__strides_like(self, strides);
    return ret(f, tt__empty_impl(self->ndim, self->sizes, strides, (tt_dtype)self->dtype,
                                 tt_frame_is_fake(f) || self->storage->fake));
}

#undef TT__FAMILY_FACTORIES
#define TT__FAMILY_FACTORIES TT__ROW
static const tt__builtin_row rows[] = {TT__FAMILY_ROWS};

tt_status tt__register_factories(tt_library *lib)
{
    return TT__DEFINE_ROWS(lib, rows);
}
