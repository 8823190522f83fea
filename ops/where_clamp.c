/* Built-in ops: where (and its Scalar forms), clamp (Scalar and Tensor
 * bounds) and zero_.
 *
 * One function per op kind computes the output's metadata (broadcast
 * shape, PyTorch's result dtype and output strides) and allocates it; for
 * fake inputs it stops there, so the same code is the real kernel and the
 * fake (meta) kernel, and they cannot disagree. Loops run in the common
 * dtype over a contiguous inner dimension (see tt_for_each). Each op's
 * kernel, derivative and typed wrapper sit together in its family's file. */
#include "elementwise_impl.h"

/* ------------------------------------------------------ where and clamp */


typedef struct {
    tt_dtype dt;
} where_ctx;

static void where_loop(char **d, const int64_t *s, int64_t n, void *vctx)
{
    size_t es = tt_dtype_size(((const where_ctx *)vctx)->dt);
    for (int64_t k = 0; k < n; k++) {
        bool c = *(const uint8_t *)(d[1] + k * s[1]) != 0; /* bool or uint8 */
        memcpy(d[0] + k * s[0], c ? d[2] + k * s[2] : d[3] + k * s[3], es);
    }
}

static tt_tensor *where(const tt_tensor *cond, const tt_tensor *a, const tt_tensor *b)
{
    const char *name = tt__op_label(TT_OP_WHERE_SELF);
    /* A uint8 condition is accepted as PyTorch 1.13 does (deprecated
     * there, with a warning): non-zero is true. */
    if ((tt_dtype)cond->dtype != TT_BOOL && (tt_dtype)cond->dtype != TT_U8) {
        tt_error(TT_EDTYPE, "%s: argument 'condition' (#1) expects a bool tensor, got %s",
                 name, tt_dtype_name((tt_dtype)cond->dtype));
        return NULL;
    }
    const tt_tensor *ins[3] = {cond, a, b};
    int nd;
    tt_size sizes[TT_MAX_DIMS], strides[TT_MAX_DIMS];
    if (tt__broadcast(name, 3, ins, (const char *[]){"condition", "self", "other"},
                      (const int[]){1, 2, 3}, &nd, sizes))
        return NULL;
    tt_dtype dt = tt__result_type(2, ins + 1, 0, NULL);
    tt__elementwise_strides(3, ins, nd, sizes, strides);
    bool fake = tt__any_fake(3, ins);
    tt_tensor *out = tt__ops_new(fake, nd, sizes, strides, dt);
    if (!out || fake || tt_numel(out) == 0)
        return out;
    tt_tensor *ca = as_dtype(a, dt), *cb = ca ? as_dtype(b, dt) : NULL;
    tt_status st = cb ? TT_OK : tt_errcode();
    if (!st) {
        tt_tensor xc, xa, xb;
        tt__broadcast_alias(&xc, cond, nd, sizes);
        tt__broadcast_alias(&xa, ca, nd, sizes);
        tt__broadcast_alias(&xb, cb, nd, sizes);
        where_ctx c = {dt};
        st = tt_for_each(4, (tt_tensor *[]){out, &xc, &xa, &xb}, where_loop, &c);
    }
    tt_release(ca);
    tt_release(cb);
    if (st)
        out = tt_release(out);
    return out;
}

typedef struct {
    double lo, hi;
    tt_dtype dt;
} clamp_ctx;

static void clamp_loop(char **d, const int64_t *s, int64_t n, void *vctx)
{
    const clamp_ctx *c = vctx;
    if (c->dt == TT_F32 && s[0] == 4 && s[1] == 4) {
        float lo = (float)c->lo, hi = (float)c->hi;
        float *restrict o = (float *)d[0];
        const float *restrict x = (const float *)d[1];
        for (int64_t k = 0; k < n; k++) {
            float v = x[k];
            v = v < lo ? lo : v;     /* NaN bounds never compare true */
            o[k] = v > hi ? hi : v;
        }
        return;
    }
    for (int64_t k = 0; k < n; k++) {
        double v = tt__load(d[1] + k * s[1], c->dt);
        if (!isnan(v)) {
            if (v < c->lo)
                v = c->lo;
            if (v > c->hi)
                v = c->hi;
        }
        tt__store(d[0] + k * s[0], c->dt, v);
    }
}

static tt_tensor *clamp(const tt_tensor *a, const tt_value *lo, const tt_value *hi)
{
    const char *name = tt__op_label(TT_OP_CLAMP);
    if (lo->kind == TT_V_NONE && hi->kind == TT_V_NONE) {
        tt_error(TT_EINVAL, "%s: at least one of 'min' or 'max' must not be None", name);
        return NULL;
    }
    tt_value sc[2];
    int ns = 0;
    if (lo->kind != TT_V_NONE)
        sc[ns++] = *lo;
    if (hi->kind != TT_V_NONE)
        sc[ns++] = *hi;
    tt_dtype dt = tt__result_type(1, &a, ns, sc);
    tt_size strides[TT_MAX_DIMS];
    tt__elementwise_strides(1, &a, a->ndim, a->sizes, strides);
    tt_tensor *out = tt__ops_new(a->storage->fake, a->ndim, a->sizes, strides, dt);
    if (!out || a->storage->fake || tt_numel(out) == 0)
        return out;
    tt_tensor *ca = as_dtype(a, dt);
    if (!ca)
        return tt_release(out);
    clamp_ctx c = {-INFINITY, INFINITY, dt};
    if (lo->kind != TT_V_NONE)
        c.lo = lo->kind == TT_V_FLOAT ? lo->u.f : (double)lo->u.i;
    if (hi->kind != TT_V_NONE)
        c.hi = hi->kind == TT_V_FLOAT ? hi->u.f : (double)hi->u.i;
    if (!tt_dtype_is_float(dt)) {
        /* Bounds in the tensor's dtype, as PyTorch casts them: -1 is 255
         * for uint8. */
        uint64_t bits = 0;
        if (lo->kind != TT_V_NONE) {
            tt__store(&bits, dt, c.lo);
            c.lo = tt__load(&bits, dt);
        }
        if (hi->kind != TT_V_NONE) {
            tt__store(&bits, dt, c.hi);
            c.hi = tt__load(&bits, dt);
        }
    }
    tt_status st = tt_for_each(2, (tt_tensor *[]){out, ca}, clamp_loop, &c);
    tt_release(ca);
    if (st)
        out = tt_release(out);
    return out;
}


/* where.self and its Scalar forms: a Scalar self or other becomes a 0-dim
 * tensor of PyTorch's result type of the call (a Python number only
 * raises the category: where(c, int32 x, 2) stays int32, where(c, 1.0,
 * 0.0) is f32), which then promotes as that result type. */
static tt_status where_kernel(tt_frame *f)
{
    tt_tensor *c, *ab[2] = {NULL, NULL}, *tmp[2] = {NULL, NULL};
    tt_status st = tt_arg_tensor(f, 0, &c);
    const tt_tensor *ts[2];
    tt_value sc[2];
    int nt = 0, ns = 0;
    for (int i = 0; i < 2 && !st; i++) {
        const tt_value *v = tt_frame_arg(f, 1 + i);
        if (v->kind == TT_V_TENSOR)
            st = tt_arg_tensor(f, 1 + i, &ab[i]);
        if (ab[i])
            ts[nt++] = ab[i];
        else
            sc[ns++] = *v;
    }
    if (st)
        return st;
    tt_dtype dt = tt__result_type(nt, ts, ns, sc);
    for (int i = 0; i < 2 && !st; i++)
        if (!ab[i]) {
            tmp[i] = scalar_tensor(scalar_num(tt_frame_arg(f, 1 + i)), dt, tt_is_fake(c));
            ab[i] = tmp[i];
            st = tmp[i] ? TT_OK : tt_errcode();
        }
    tt_tensor *r = st ? NULL : where(c, ab[0], ab[1]);
    tt_release(tmp[0]);
    tt_release(tmp[1]);
    return r ? tt_return(f, 0, r) : tt_errcode();
}


static tt_status clamp_kernel(tt_frame *f)
{
    tt_tensor *a;
    tt_status st = tt_arg_tensor(f, 0, &a);
    if (st)
        return st;
    tt_tensor *r = clamp(a, tt_frame_arg(f, 1), tt_frame_arg(f, 2));
    return r ? tt_return(f, 0, r) : tt_errcode();
}

/* clamp.Tensor: bounds that are tensors (or None), broadcast with self;
 * the result type is PyTorch's over all three. v = min(max(self, min),
 * max), a NaN anywhere giving NaN (PyTorch's maximum/minimum). */
static void clamp_tensor_loop(char **d, const int64_t *s, int64_t n, void *vctx)
{
    const clamp_ctx *c = vctx; /* lo, hi: 1 when that bound is present */
    for (int64_t k = 0; k < n; k++) {
        double v = tt__load(d[1] + k * s[1], c->dt);
        if (c->lo != 0) {
            double lo = tt__load(d[2] + k * s[2], c->dt);
            v = isnan(lo) || isnan(v) ? NAN : v < lo ? lo : v;
        }
        if (c->hi != 0) {
            double hi = tt__load(d[3] + k * s[3], c->dt);
            v = isnan(hi) || isnan(v) ? NAN : v > hi ? hi : v;
        }
        tt__store(d[0] + k * s[0], c->dt, v);
    }
}

static tt_status clamp_tensor_kernel(tt_frame *f)
{
    const char *name = tt__op_label(TT_OP_CLAMP_TENSOR);
    tt_tensor *in[3] = {NULL, NULL, NULL};
    tt_status st = TT_OK;
    for (int i = 0; i < 3 && !st; i++)
        if (i == 0 || !tt_arg_is_none(f, i))
            st = tt_arg_tensor(f, i, &in[i]);
    if (st)
        return st;
    if (!in[1] && !in[2])
        return tt_error(TT_EINVAL, "%s: at least one of 'min' or 'max' must not be None", name);
    const tt_tensor *ts[3];
    const char *names[3];
    int argno[3], n = 0;
    for (int i = 0; i < 3; i++)
        if (in[i]) {
            ts[n] = in[i];
            names[n] = (const char *[]){"self", "min", "max"}[i];
            argno[n++] = i + 1;
        }
    int nd;
    tt_size sizes[TT_MAX_DIMS], strides[TT_MAX_DIMS];
    if (tt__broadcast(name, n, ts, names, argno, &nd, sizes))
        return tt_errcode();
    tt_dtype dt = tt__result_type(n, ts, 0, NULL);
    tt__elementwise_strides(n, ts, nd, sizes, strides);
    bool fake = tt__any_fake(n, ts);
    tt_tensor *out = tt__ops_new(fake, nd, sizes, strides, dt);
    if (!out || fake || tt_numel(out) == 0)
        return out ? tt_return(f, 0, out) : tt_errcode();
    tt_tensor al[3], *cv[3] = {NULL, NULL, NULL};
    for (int i = 0; i < 3 && !st; i++)
        if (in[i] && !(cv[i] = as_dtype(in[i], dt)))
            st = tt_errcode();
    if (!st) {
        for (int i = 0; i < 3; i++) /* a missing bound reads self; the loop skips it */
            tt__broadcast_alias(&al[i], cv[i] ? cv[i] : cv[0], nd, sizes);
        clamp_ctx c = {in[1] != NULL, in[2] != NULL, dt};
        st = tt_for_each(4, (tt_tensor *[]){out, &al[0], &al[1], &al[2]}, clamp_tensor_loop, &c);
    }
    for (int i = 0; i < 3; i++)
        tt_release(cv[i]);
    if (st) {
        tt_release(out);
        return st;
    }
    return tt_return(f, 0, out);
}

static tt_status zero_kernel(tt_frame *f)
{
    tt_tensor *a;
    tt_status st = tt_arg_tensor(f, 0, &a);
    if (!st && !a->storage->fake)
        st = tt__fill_raw(a, 0);
    return st ? st : tt_return_self(f, 0, 0);
}


/* clamp: the gradient passes where min <= self <= max. */
static tt_status setup_clamp(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                             const tt_value *out, int nout)
{
    tt_status st = TT_OK;
    for (int i = 1; i <= 2 && !st; i++)
        if (in[i].kind != TT_V_NONE)
            st = tt_ctx_save_float(ctx, i == 1 ? "min" : "max",
                                   in[i].kind == TT_V_FLOAT ? in[i].u.f : (double)in[i].u.i);
    return st ? st : save_first(ctx, in, nin, out, nout);
}

static tt_status clamp_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    double lo, hi;
    bool has_lo = tt_ctx_get_float(ctx, "min", &lo) == TT_OK;
    bool has_hi = tt_ctx_get_float(ctx, "max", &hi) == TT_OK;
    tt_clear_error();
    tt_tensor *x = SAVED(0);
    tt_scope_begin();
    tt_tensor *mask = has_lo ? ge_scalar(x, lo) : NULL;
    if (has_hi)
        mask = mask ? tt_mul(mask, le_scalar(x, hi)) : le_scalar(x, hi);
    tt_tensor *r = tt_keep(tt_mul(g[0], mask));
    tt_scope_end();
    return tt__put_grad(ctx, gi, 0, r);
}

/* where and its Scalar forms: the gradient goes to self where the
 * condition holds, to other elsewhere (a Scalar gets none). Written with
 * where, not g * condition, so a uint8 condition and an infinite g work. */
static tt_status where_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    tt_status st = TT_OK;
    tt_scope_begin();
    tt_tensor *zero = tt_scalar(0, tt_dtype_of(g[0]));
    if (NEED(1))
        st = tt__put_grad(ctx, gi, 1, tt_keep(tt_where(SAVED(0), g[0], zero)));
    if (!st && NEED(2))
        st = tt__put_grad(ctx, gi, 2, tt_keep(tt_where(SAVED(0), zero, g[0])));
    tt_scope_end();
    return st;
}


/* clamp.Tensor: self, min and max in their slots, NULL for None. */
static tt_status setup_clamp_tensor(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                                    const tt_value *out, int nout)
{
    (void)out, (void)nout;
    tt_tensor *ts[3] = {NULL, NULL, NULL};
    for (int i = 0; i < 3 && i < nin; i++)
        ts[i] = in[i].kind == TT_V_TENSOR ? in[i].u.t : NULL;
    return tt_ctx_save_for_backward(ctx, 3, ts);
}

/* clamp.Tensor, PyTorch's clamp_backward_min_max: self gets g where min <=
 * self <= max; min gets it where self < min (and min < max, when both are
 * given); max where self > max (or max < min: max wins then). The engine
 * sums each back to its input's shape. */
static tt_status clamp_tensor_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                       tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    tt_tensor *x = SAVED(0), *lo = SAVED(1), *hi = SAVED(2);
    tt_status st = TT_OK;
    tt_scope_begin();
    tt_tensor *zero = tt_scalar(0, tt_dtype_of(g[0]));
    if (NEED(0)) {
        tt_tensor *keep = lo ? tt_ge(x, lo) : NULL;
        if (hi)
            keep = keep ? tt_mul(keep, tt_le(x, hi)) : tt_le(x, hi);
        st = tt__put_grad(ctx, gi, 0, tt_keep(tt_where(keep, g[0], zero)));
    }
    if (!st && lo && NEED(1)) {
        tt_tensor *to_lo = tt_lt(x, lo);
        if (hi)
            to_lo = tt_mul(to_lo, tt_lt(lo, hi));
        st = tt__put_grad(ctx, gi, 1, tt_keep(tt_where(to_lo, g[0], zero)));
    }
    if (!st && hi && NEED(2)) {
        tt_tensor *to_hi = tt_gt(x, hi);
        if (lo) /* logical or of two bools: their sum is non-zero */
            to_hi = tt_add(to_hi, tt_lt(hi, lo));
        st = tt__put_grad(ctx, gi, 2, tt_keep(tt_where(to_hi, g[0], zero)));
    }
    tt_scope_end();
    return st;
}

/* zero_: the result does not depend on the old value. */
static tt_status zero_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                               tt_tensor **gi, int ni)
{
    (void)ctx, (void)g, (void)ng, (void)gi, (void)ni;
    return TT_OK;
}


#undef TT__FAMILY_WHERE_CLAMP
#define TT__FAMILY_WHERE_CLAMP TT__ROW
static const tt__builtin_row rows[] = {TT__FAMILY_ROWS};

tt_status tt__register_where_clamp(tt_library *lib)
{
    return TT__DEFINE_ROWS(lib, rows);
}

/* ---------------------------------------------------------- typed wrappers */

tt_tensor *tt_clamp_tensor(const tt_tensor *a, const tt_tensor *min, const tt_tensor *max)
{
    return tt__call_op(TT_OP_CLAMP_TENSOR,
                       TT_ARGS(tt_v_tensor(a), min ? tt_v_tensor(min) : tt_v_none(),
                               max ? tt_v_tensor(max) : tt_v_none()));
}

tt_tensor *tt_where_scalar(const tt_tensor *cond, double a, const tt_tensor *b)
{
    return tt__call_op(TT_OP_WHERE_SCALARSELF,
                       TT_ARGS(tt_v_tensor(cond), scalar_value(a), tt_v_tensor(b)));
}

tt_tensor *tt_where_other_scalar(const tt_tensor *cond, const tt_tensor *a, double b)
{
    return tt__call_op(TT_OP_WHERE_SCALAROTHER,
                       TT_ARGS(tt_v_tensor(cond), tt_v_tensor(a), scalar_value(b)));
}


tt_status tt_zero_(tt_tensor *a)
{
    if (tt__fast_path(TT_OP_ZERO_, 1, (const tt_tensor *[]){a})) {
        tt_status st = tt__fill_raw(a, 0);
        if (!st)
            tt_bump_version(a);
        return st;
    }
    return tt__call_op_status(TT_OP_ZERO_, TT_ARGS(tt_v_tensor(a)));
}

tt_tensor *tt_where(const tt_tensor *cond, const tt_tensor *a, const tt_tensor *b)
{
    const tt_tensor *ts[3] = {cond, a, b};
    if (tt__fast_path(TT_OP_WHERE_SELF, 3, ts))
        return where(cond, a, b);
    return tt__call_op(TT_OP_WHERE_SELF,
                       TT_ARGS(tt_v_tensor(cond), tt_v_tensor(a), tt_v_tensor(b)));
}

tt_tensor *tt_clamp(const tt_tensor *a, double min, double max)
{
    /* Whole-number bounds travel as ints so an integer tensor stays one. */
    tt_value lo = isnan(min) ? tt_v_none() : scalar_value(min);
    tt_value hi = isnan(max) ? tt_v_none() : scalar_value(max);
    if (tt__fast_path(TT_OP_CLAMP, 1, &a))
        return clamp(a, &lo, &hi);
    return tt__call_op(TT_OP_CLAMP, TT_ARGS(tt_v_tensor(a), lo, hi));
}
