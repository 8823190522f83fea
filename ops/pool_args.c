/* Pooling arguments, checks and autograd glue shared by the 2-d and 3-d
 * pooling families (see pool_args.h). */
#include "pool_args.h"

#include "transformer_impl.h"

#include <stdio.h>

/* Argument i, an int[n]: the binder holds it to n values (a single int
 * is repeated), or [] where the schema's default is [] (`dflt`). */
static tt_status list_arg(tt_frame *f, int i, int n, const int64_t *dflt, int64_t *out)
{
    const int64_t *v;
    int got;
    tt_status st = tt_arg_ints(f, i, &v, &got);
    if (st)
        return st;
    if (got == 0 && dflt)
        v = dflt, got = n;
    if (got != n)
        return tt_frame_fail(f, TT_EINVAL, "argument #%d: expected %d values, got %d", i + 1, n,
                             got);
    for (int j = 0; j < n; j++)
        out[j] = v[j];
    return TT_OK;
}

tt_status tt__pool_frame_args(tt_frame *f, int first, bool has_dilation, int n, pool_args *a)
{
    tt_status st;
    *a = (pool_args){.d = {1, 1, 1}};
    if ((st = list_arg(f, first, n, NULL, a->k)) || (st = list_arg(f, first + 1, n, a->k, a->s)) ||
        (st = list_arg(f, first + 2, n, NULL, a->p)))
        return st;
    int next = first + 3;
    if (has_dilation && (st = list_arg(f, next++, n, NULL, a->d)))
        return st;
    return tt_arg_bool(f, next, &a->ceil);
}

/* divisor_override: None, or a non-zero int. */
static tt_status divisor_arg(tt_frame *f, int i, int64_t *out)
{
    *out = 0;
    if (tt_arg_is_none(f, i))
        return TT_OK;
    tt_status st = tt_arg_int(f, i, out);
    if (!st && *out == 0)
        return tt_frame_fail(f, TT_EINVAL, "argument 'divisor_override' (#%d): divisor must be "
                                           "not zero", i + 1);
    return st;
}

tt_status tt__pool_avg_frame_args(tt_frame *f, int first, int n, pool_args *a)
{
    tt_status st;
    if ((st = tt__pool_frame_args(f, first, false, n, a)) ||
        (st = tt_arg_bool(f, first + 4, &a->count_include_pad)))
        return st;
    return divisor_arg(f, first + 5, &a->divisor);
}

void tt__pool_values_args(const tt_value *in, int first, bool has_dilation, int n, pool_args *a)
{
    *a = (pool_args){.d = {1, 1, 1}};
    for (int i = 0; i < n; i++) {
        a->k[i] = in[first].u.ints[i];
        a->s[i] = in[first + 1].n ? in[first + 1].u.ints[i] : a->k[i];
        a->p[i] = in[first + 2].u.ints[i];
        if (has_dilation)
            a->d[i] = in[first + 3].u.ints[i];
    }
    a->ceil = in[first + (has_dilation ? 4 : 3)].u.b;
}

/* "[2, 3]" / "[2, 3, 4]" */
static const char *list_text(int n, const int64_t *v, char *buf, size_t cap)
{
    int at = snprintf(buf, cap, "[");
    for (int i = 0; i < n && at > 0 && (size_t)at < cap; i++)
        at += snprintf(buf + at, cap - (size_t)at, "%s%lld", i ? ", " : "", (long long)v[i]);
    if (at > 0 && (size_t)at < cap)
        snprintf(buf + at, cap - (size_t)at, "]");
    return buf;
}

/* One spatial output size: floor((in + 2 pad - dilation (kernel - 1) - 1
 * [+ stride - 1 in ceil mode]) / stride) + 1, one less in ceil mode when
 * the last window would start past the input and its left padding. *small
 * is set when it is below 1. */
static tt_status output_size(tt_size in, const pool_args *a, int i, tt_size *out, bool *small)
{
    int64_t c = 2 * a->p[i] - a->d[i] * (a->k[i] - 1) - 1 + (a->ceil ? a->s[i] - 1 : 0);
    tt_size o;
    if (!tt_size_is_sym(in)) {
        int64_t num = in + c, q = num / a->s[i];
        if (num % a->s[i] && num < 0)
            q--; /* floor, as PyTorch's div_rtn */
        o = q + 1;
        if (a->ceil && (o - 1) * a->s[i] >= in + a->p[i])
            o--;
        *small = *small || o < 1;
    } else {
        tt_size num = c >= 0 ? tt_sym_add(in, c) : tt_sym_sub(in, -c);
        o = tt_sym_add(tt_sym_floordiv(num, a->s[i]), 1);
        if (a->ceil &&
            tt__sz_ge(tt_sym_mul(tt_sym_sub(o, 1), a->s[i]), tt_sym_add(in, a->p[i])))
            o = tt_sym_sub(o, 1);
        if (tt_errcode())
            return tt_errcode();
        *small = *small || tt__sz_lt(o, 1);
    }
    *out = o;
    return TT_OK;
}

tt_status tt__pool_check(const char *op, const tt_tensor *x, const pool_args *a, int n,
                         int argno_x, bool has_dilation, bool allow_i64, bool check_input_size,
                         tt_size out[3])
{
    static const char *const dims[4] = {"", "", "H, W", "D, H, W"}, *const names[3] = {"D", "H",
                                                                                        "W"};
    char s1[128], l1[80], l2[80];
    tt_status st;
    int argno_k = argno_x + 1;
    tt_dtype dt = tt_dtype_of(x);
    if (allow_i64 && dt != TT_F32 && dt != TT_F64 && dt != TT_I64)
        return tt_error(TT_EDTYPE, "%s: argument 'self' (#%d): expected f32, f64 or i64, got %s",
                        op, argno_x, tt_dtype_name(dt));
    if (!allow_i64 && (st = want_float(op, "self", argno_x, x)))
        return st;
    int nd = tt_ndim(x);
    bool ok = nd == n + 1 || nd == n + 2;
    for (int d = nd == n + 2 ? 1 : 0; ok && d < nd; d++)
        ok = !tt__sz_eq(tt_sizes(x)[d], 0);
    if (!ok)
        return tt_error(TT_ESHAPE, "%s: argument 'self' (#%d): expected a %d-d [C, %s] or %d-d "
                                   "[N, C, %s] tensor with non-zero sizes (N may be 0), got %s",
                        op, argno_x, n + 1, dims[n], n + 2, dims[n],
                        tt_shape_str(x, s1, sizeof s1));
    const struct {
        const char *name;
        const int64_t *v;
        int argno;
    } pos[3] = {{"kernel_size", a->k, argno_k},
                {"stride", a->s, argno_k + 1},
                {"dilation", a->d, argno_k + 3}};
    for (int i = 0; i < (has_dilation ? 3 : 2); i++)
        for (int j = 0; j < n; j++)
            if (pos[i].v[j] <= 0)
                return tt_error(TT_EINVAL, "%s: argument '%s' (#%d): expected values greater "
                                           "than zero, got %s", op, pos[i].name, pos[i].argno,
                                list_text(n, pos[i].v, l1, sizeof l1));
    for (int i = 0; i < n; i++) {
        if (a->p[i] < 0)
            return tt_error(TT_EINVAL, "%s: argument 'padding' (#%d): expected non-negative "
                                       "values, got %s", op, argno_k + 2,
                            list_text(n, a->p, l1, sizeof l1));
        if (a->p[i] > a->k[i] / 2)
            return tt_error(TT_EINVAL, "%s: argument 'padding' (#%d): pad should be at most "
                                       "half of kernel size, but got pad=%lld and "
                                       "kernel_size=%lld", op, argno_k + 2,
                            (long long)a->p[i], (long long)a->k[i]);
        /* Kernels, strides and pads past 2^31 are nobody's pooling: this
         * keeps the arithmetic of the output sizes far from overflow. */
        if (a->k[i] > INT32_MAX || a->s[i] > INT32_MAX || a->d[i] > INT32_MAX)
            return tt_error(TT_EINVAL, "%s: kernel_size, stride and dilation must be below "
                                       "2^31, got kernel_size %s", op,
                            list_text(n, a->k, l1, sizeof l1));
    }
    const tt_size *sz = tt_sizes(x);
    char sd[4][64]; /* the channel's size, then the spatial sizes */
    for (int i = 0; i <= n; i++)
        tt_size_str(sz[nd - n - 1 + i], sd[i], sizeof sd[i]);
    if (check_input_size) {
        bool small = false;
        for (int i = 0; i < n; i++)
            small = small || tt__sz_lt(sz[nd - n + i], a->k[i]);
        if (tt_errcode())
            return tt_errcode();
        if (small) {
            int at = 0, bt = 0;
            for (int i = 0; i < n; i++) {
                const char *nm = names[3 - n + i];
                at += snprintf(l1 + at, sizeof l1 - (size_t)at, "%s%s: %s", i ? " " : "", nm,
                               sd[1 + i]);
                bt += snprintf(l2 + bt, sizeof l2 - (size_t)bt, "%sk%s: %lld", i ? " " : "", nm,
                               (long long)a->k[i]);
            }
            return tt_error(TT_ESHAPE, "%s: argument 'self' (#%d): input image (%s) smaller "
                                       "than kernel size (%s)", op, argno_x, l1, l2);
        }
    }
    bool small = false;
    for (int i = 0; i < n; i++)
        if ((st = output_size(sz[nd - n + i], a, i, &out[i], &small)))
            return st;
    if (small) {
        int at = 0, bt = 0;
        for (int i = 0; i <= n; i++) {
            at += snprintf(l1 + at, sizeof l1 - (size_t)at, "%s%s", i ? "x" : "", sd[i]);
            if (i == 0)
                bt += snprintf(l2, sizeof l2, "%s", sd[0]);
            else
                bt += snprintf(l2 + bt, sizeof l2 - (size_t)bt, "x%lld",
                               (long long)(tt_size_is_sym(out[i - 1]) ? 0 : out[i - 1]));
        }
        return tt_error(TT_ESHAPE, "%s: argument 'self' (#%d): given input size (%s), the "
                                   "calculated output size (%s) is too small", op, argno_x, l1, l2);
    }
    return TT_OK;
}

/* ------------------------------------------------------ typed wrappers */

tt_status tt__pool_opts_args(const char *fn, int n, const int64_t *kernel, const int64_t *stride,
                             const int64_t *padding, const int64_t *dilation, bool ceil_mode,
                             bool exclude_pad, int64_t divisor, bool avg, pool_args *a,
                             bool *stride_unset)
{
    char l1[80];
    if (!kernel)
        return tt_error(TT_EINVAL, "%s: argument 'opts' is NULL (expected at least the "
                                   "kernel size)", fn);
    *a = (pool_args){.ceil = ceil_mode, .count_include_pad = !exclude_pad, .divisor = divisor};
    *stride_unset = true;
    for (int i = 0; i < n; i++) {
        a->k[i] = kernel[i];
        a->s[i] = stride[i] ? stride[i] : kernel[i];
        a->p[i] = padding[i];
        a->d[i] = dilation[i] ? dilation[i] : 1;
        *stride_unset = *stride_unset && !stride[i];
        if (avg && a->d[i] != 1)
            return tt_error(TT_EINVAL, "%s: argument 'opts': dilation is max pooling's only "
                                       "(expected 0 or 1), got %s", fn,
                            list_text(n, dilation, l1, sizeof l1));
    }
    return TT_OK;
}

tt_tensor *tt__pool_call_max(tt_builtin_id id, const tt_tensor *x, int n, const pool_args *a,
                             bool stride_unset, tt_tensor **indices)
{
    tt_value outs[2] = {tt_v_none(), tt_v_none()};
    if (tt_op_call(tt__op(id),
                   TT_ARGS(tt_v_tensor(x), tt_v_ints(n, a->k),
                           stride_unset ? tt_v_ints(0, NULL) : tt_v_ints(n, a->s),
                           tt_v_ints(n, a->p), tt_v_ints(n, a->d), tt_v_bool(a->ceil)),
                   outs, 2))
        return NULL;
    *indices = outs[1].u.t;
    return outs[0].u.t;
}

tt_tensor *tt__pool_call_avg(tt_builtin_id id, const tt_tensor *x, int n, const pool_args *a,
                             bool stride_unset)
{
    return tt__call_op(id, TT_ARGS(tt_v_tensor(x), tt_v_ints(n, a->k),
                                   stride_unset ? tt_v_ints(0, NULL) : tt_v_ints(n, a->s),
                                   tt_v_ints(n, a->p), tt_v_bool(a->ceil),
                                   tt_v_bool(a->count_include_pad),
                                   a->divisor ? tt_v_int(a->divisor) : tt_v_none()));
}

/* ------------------------------------------------------------ autograd */

/* kernel, stride, padding, dilation (three each), ceil_mode,
 * count_include_pad, divisor */
tt_status tt__pool_save_args(tt_autograd_ctx *ctx, const pool_args *a)
{
    int64_t v[15];
    for (int i = 0; i < 3; i++)
        v[i] = a->k[i], v[3 + i] = a->s[i], v[6 + i] = a->p[i], v[9 + i] = a->d[i];
    v[12] = a->ceil, v[13] = a->count_include_pad, v[14] = a->divisor;
    return tt_ctx_save_ints(ctx, "pool", 15, v);
}

tt_status tt__pool_load_args(tt_autograd_ctx *ctx, pool_args *a)
{
    const int64_t *v;
    int n;
    tt_status st = tt_ctx_get_ints(ctx, "pool", &v, &n);
    if (st)
        return st;
    for (int i = 0; i < 3; i++)
        a->k[i] = v[i], a->s[i] = v[3 + i], a->p[i] = v[6 + i], a->d[i] = v[9 + i];
    a->ceil = v[12], a->count_include_pad = v[13], a->divisor = v[14];
    return TT_OK;
}

/* The spatial dims of a pooling call: its kernel list's length (1-element
 * lists are refused at binding, so it is 2 or 3). */
static int spatial_dims(const tt_value *in) { return in[1].n; }

tt_status tt__pool_setup_max(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                             const tt_value *out, int nout)
{
    (void)nin, (void)nout;
    pool_args a;
    int n = spatial_dims(in);
    tt__pool_values_args(in, 1, true, n, &a);
    tt_status st = tt__pool_save_args(ctx, &a);
    if (!st)
        st = tt_ctx_save_ints(ctx, "pool_n", 1, (const int64_t[]){n});
    return st ? st : tt_ctx_save_for_backward(ctx, 2, (tt_tensor *[]){in[0].u.t, out[1].u.t});
}

static tt_status load_with_n(tt_autograd_ctx *ctx, pool_args *a, int *n)
{
    const int64_t *v;
    int c;
    tt_status st = tt__pool_load_args(ctx, a);
    if (!st)
        st = tt_ctx_get_ints(ctx, "pool_n", &v, &c);
    if (!st)
        *n = (int)v[0];
    return st;
}

tt_status tt__pool_max_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    pool_args a;
    int n;
    tt_status st = load_with_n(ctx, &a, &n);
    if (st)
        return st;
    return tt__put_grad(
        ctx, gi, 0,
        tt__call_op(n == 3 ? TT_OP_MAX_POOL3D_WITH_INDICES_BACKWARD
                           : TT_OP_MAX_POOL2D_WITH_INDICES_BACKWARD,
                    TT_ARGS(tt_v_tensor(g[0]), tt_v_tensor(tt_ctx_saved(ctx, 0)),
                            tt_v_ints(n, a.k), tt_v_ints(n, a.s), tt_v_ints(n, a.p),
                            tt_v_ints(n, a.d), tt_v_bool(a.ceil),
                            tt_v_tensor(tt_ctx_saved(ctx, 1)))));
}

tt_status tt__pool_setup_avg(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                             const tt_value *out, int nout)
{
    (void)nin, (void)out, (void)nout;
    pool_args a;
    int n = spatial_dims(in);
    tt__pool_values_args(in, 1, false, n, &a);
    a.count_include_pad = in[5].u.b;
    a.divisor = in[6].kind == TT_V_INT ? in[6].u.i : 0;
    tt_status st = tt__pool_save_args(ctx, &a);
    if (!st)
        st = tt_ctx_save_ints(ctx, "pool_n", 1, (const int64_t[]){n});
    return st ? st : tt_ctx_save_for_backward(ctx, 1, &in[0].u.t);
}

tt_status tt__pool_avg_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    pool_args a;
    int n;
    tt_status st = load_with_n(ctx, &a, &n);
    if (st)
        return st;
    return tt__put_grad(
        ctx, gi, 0,
        tt__call_op(n == 3 ? TT_OP_AVG_POOL3D_BACKWARD : TT_OP_AVG_POOL2D_BACKWARD,
                    TT_ARGS(tt_v_tensor(g[0]), tt_v_tensor(tt_ctx_saved(ctx, 0)),
                            tt_v_ints(n, a.k), tt_v_ints(n, a.s), tt_v_ints(n, a.p),
                            tt_v_bool(a.ceil), tt_v_bool(a.count_include_pad),
                            a.divisor ? tt_v_int(a.divisor) : tt_v_none())));
}

tt_status tt__pool_setup_adaptive(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                                  const tt_value *out, int nout)
{
    (void)nin, (void)out, (void)nout;
    return tt_ctx_save_for_backward(ctx, 1, &in[0].u.t);
}

tt_status tt__pool_adaptive_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                     tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    bool three = tt_ctx_op(ctx) == tt__op(TT_OP__ADAPTIVE_AVG_POOL3D);
    return tt__put_grad(ctx, gi, 0,
                        tt__call_op(three ? TT_OP__ADAPTIVE_AVG_POOL3D_BACKWARD
                                          : TT_OP__ADAPTIVE_AVG_POOL2D_BACKWARD,
                                    TT_ARGS(tt_v_tensor(g[0]), tt_v_tensor(tt_ctx_saved(ctx, 0)))));
}
