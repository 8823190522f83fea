/* Built-in ops: the unary math functions (neg, exp, log, sqrt, rsqrt, sin,
 * cos, tanh, sigmoid, relu and relu_, gelu and gelu_backward, abs, sign,
 * silu and silu_backward; acos, asin, atan, their hyperbolic forms, sinh,
 * cosh, tan, erf, expm1, log1p, log2, log10, reciprocal; floor, ceil,
 * trunc, round).
 * The float formulas come from ops/pointwise_ops.h, which the vector
 * kernels' dispatch and the fusion pass expand too.
 *
 * One function per op kind computes the output's metadata (broadcast
 * shape, PyTorch's result dtype and output strides) and allocates it; for
 * fake inputs it stops there, so the same code is the real kernel and the
 * fake (meta) kernel, and they cannot disagree. Loops run in the common
 * dtype over a contiguous inner dimension (see tt_for_each). Each op's
 * kernel, derivative and typed wrapper sit together in its family's file. */
#include "elementwise_impl.h"
#include "pointwise_ops.h"

/* ------------------------------------------------------------- unary */


/* The unary kinds, from the pointwise list (ops/pointwise_ops.h). */
typedef enum {
#define UN_KIND(K, ...) UN_##K,
    TT_POINTWISE_UNARY(UN_KIND)
#undef UN_KIND
    UN_COUNT
} unop;

/* Each unary kind's op: whose name its errors carry (gelu's tanh form,
 * which has no row of its own, is gelu's). */
#define UN_ID(K, ROW, ...) [UN_##K] = (int)TT_OP_##ROW,
static const int un_rows[UN_COUNT] = {TT_POINTWISE_UNARY(UN_ID)};
#undef UN_ID
static tt_builtin_id un_id(unop op)
{
    return un_rows[op] == (int)TT_OP__NONE ? TT_OP_GELU : (tt_builtin_id)un_rows[op];
}

/* floor, ceil, trunc, round: an integer input's values come back as they
 * are, in its dtype (PyTorch's too; a bool one is refused). */
static bool un_rounds(unop op)
{
    return op == UN_FLOOR || op == UN_CEIL || op == UN_TRUNC || op == UN_ROUND;
}

/* Ops whose integer inputs give a float result (PyTorch's int-to-float). */
static bool un_floating(unop op)
{
    return op != UN_NEG && op != UN_RELU && op != UN_ABS && op != UN_SIGN && !un_rounds(op);
}

#define UNARY_LOOP(NAME, T, EXPR)                                              \
    static void NAME(char **d, const int64_t *s, int64_t n, void *ctx)        \
    {                                                                          \
        (void)ctx;                                                             \
        if (s[0] == sizeof(T) && s[1] == sizeof(T)) {                          \
            T *restrict o = (T *)d[0];                                         \
            const T *restrict x = (const T *)d[1];                             \
            for (int64_t k = 0; k < n; k++) {                                  \
                T a = x[k];                                                    \
                o[k] = (T)(EXPR);                                              \
            }                                                                  \
            return;                                                            \
        }                                                                      \
        for (int64_t k = 0; k < n; k++) {                                      \
            T a = *(const T *)(d[1] + k * s[1]);                               \
            *(T *)(d[0] + k * s[0]) = (T)(EXPR);                               \
        }                                                                      \
    }

/* The float loops: each kind's formula from the pointwise list. */
#define UN_LOOP_F32(K, ROW, F32, F64, VEC) UNARY_LOOP(un_f32_##K, float, F32)
#define UN_LOOP_F64(K, ROW, F32, F64, VEC) UNARY_LOOP(un_f64_##K, double, F64)
TT_POINTWISE_UNARY(UN_LOOP_F32)
TT_POINTWISE_UNARY(UN_LOOP_F64)
#define GELU_BETA TT_GELU_BETA
#define GELU_KAPPA TT_GELU_KAPPA

/* neg and abs of the most negative value wrap to itself, as PyTorch's. */
#define INT_UNARY(SUF, T, UT)                                                  \
    UNARY_LOOP(neg_##SUF, T, 0 - (UT)a)                                        \
    UNARY_LOOP(relu_##SUF, T, a > 0 ? a : 0)                                   \
    UNARY_LOOP(abs_##SUF, T, a < 0 ? 0 - (UT)a : (UT)a)                        \
    UNARY_LOOP(sign_##SUF, T, (T)((a > 0) - (a < 0)))                         \
    UNARY_LOOP(same_##SUF, T, a)

INT_UNARY(i64, int64_t, uint64_t)
INT_UNARY(i32, int32_t, uint32_t)
UNARY_LOOP(neg_u8, uint8_t, -a)
UNARY_LOOP(relu_u8, uint8_t, a)
UNARY_LOOP(abs_u8, uint8_t, a)
UNARY_LOOP(sign_u8, uint8_t, a > 0)
UNARY_LOOP(same_u8, uint8_t, a)
UNARY_LOOP(sign_b8, bool, a)

#define UN_F32(K, ...) [UN_##K] = un_f32_##K,
#define UN_F64(K, ...) [UN_##K] = un_f64_##K,
#define IROW(SUF)                                                              \
    {[UN_NEG] = neg_##SUF, [UN_RELU] = relu_##SUF, [UN_ABS] = abs_##SUF,      \
     [UN_SIGN] = sign_##SUF, [UN_FLOOR] = same_##SUF, [UN_CEIL] = same_##SUF,  \
     [UN_TRUNC] = same_##SUF, [UN_ROUND] = same_##SUF}
static const tt_loop_fn un_loops[TT_DTYPE_COUNT][UN_COUNT] = {
    [TT_F32] = {TT_POINTWISE_UNARY(UN_F32)}, [TT_F64] = {TT_POINTWISE_UNARY(UN_F64)},
    [TT_I64] = IROW(i64),
    [TT_I32] = IROW(i32), [TT_U8] = IROW(u8),
    [TT_BOOL] = {[UN_SIGN] = sign_b8}, /* no abs of bool, as PyTorch */
};

/* f32 transcendentals go through the vector kernels when the CPU has
 * them: the kind's kernel, TT_VEC_NONE for a kind the list gives none. */
#define UN_VEC(K, ROW, F32, F64, VEC) [UN_##K] = TT__PW_HAS_VEC(VEC) ? TT_VEC_##K : TT_VEC_NONE,
static const int8_t un_vec[UN_COUNT] = {TT_POINTWISE_UNARY(UN_VEC)};
#undef UN_VEC
static int vec_of(unop op) { return un_vec[op]; }

typedef struct {
    int vec;
    tt_loop_fn scalar;
    bool stream; /* write around the caches (run_flat decides) */
} vec_ctx;

static void vec_loop(char **d, const int64_t *s, int64_t n, void *vctx)
{
    const vec_ctx *c = vctx;
    int op = c->vec | (c->stream ? TT_VEC_STREAM : 0);
    if (!(s[0] == 4 && s[1] == 4 && tt__vec_f32(op, (float *)d[0], (const float *)d[1], n)))
        c->scalar(d, s, n, NULL);
}

/* The eager fast path of a unary op: a real contiguous input whose dtype
 * is the result dtype. */
static tt_tensor *unary_fast(unop op, const tt_tensor *a)
{
    tt_dtype dt = (tt_dtype)a->dtype;
    tt_tensor *r = tt__new_contiguous(a, dt);
    if (!r)
        return NULL;
    int64_t es = (int64_t)tt_dtype_size(dt);
    vec_ctx vc = {vec_of(op), un_loops[dt][op], false};
    flat_job j = {un_loops[dt][op], {tt__ptr(r), tt__ptr(a)}, {es, es}, 2, NULL, NULL, false};
    if (dt == TT_F32 && vc.vec != TT_VEC_NONE) {
        j.loop = vec_loop;
        j.ctx = &vc;
        j.streams = &vc.stream;
    }
    run_flat(&j, tt_numel(r));
    return r;
}

/* Runs `op` on a into `out` (NULL: allocate like a). */
static tt_tensor *unary(unop op, const tt_tensor *a, tt_tensor *out)
{
    const char *name = tt__op_label(un_id(op));
    tt_dtype dt = (tt_dtype)a->dtype;
    if ((op == UN_GELU || op == UN_GELU_TANH || op == UN_SILU) && !tt_dtype_is_float(dt)) {
        /* PyTorch has no integer gelu nor silu (no int-to-float promotion
         * here). */
        tt_error(TT_EDTYPE, "%s: argument 'self' (#1): not implemented for %s tensors; "
                            "expects a floating point tensor", name, tt_dtype_name(dt));
        return NULL;
    }
    if (un_floating(op) && !tt_dtype_is_float(dt))
        dt = TT_F32;
    if (!out && dt == (tt_dtype)a->dtype && un_loops[dt][op] && (a->flags & TT_TF_CONTIGUOUS) &&
        !(a->flags & TT_TF_HAS_SYM) && !a->storage->fake)
        return unary_fast(op, a);
    if (!un_loops[dt][op]) {
        tt_error(TT_EDTYPE, "%s: argument 'self' (#1): not supported for %s tensors%s", name,
                 tt_dtype_name(dt),
                 op == UN_NEG && dt == TT_BOOL ? "; use logical not instead" : "");
        return NULL;
    }
    if (out && !can_cast(dt, (tt_dtype)out->dtype)) {
        tt_error(TT_EDTYPE, "%s_: result type %s can't be cast to the desired output "
                            "type %s", name, tt_dtype_name(dt),
                 tt_dtype_name((tt_dtype)out->dtype));
        return NULL;
    }
    if (out && check_inplace_overlap(name, out, 1, &a))
        return NULL;
    tt_tensor *result;
    if (out) {
        result = tt_retain(out);
    } else {
        tt_size strides[TT_MAX_DIMS];
        tt__elementwise_strides(1, &a, a->ndim, a->sizes, strides);
        result = tt__ops_new(a->storage->fake, a->ndim, a->sizes, strides, dt);
    }
    if (!result || a->storage->fake || tt_numel(result) == 0)
        return result;
    tt_tensor *ca = as_dtype(a, dt);
    tt_tensor *target = result;
    tt_status st = ca ? TT_OK : tt_errcode();
    if (!st && (tt_dtype)result->dtype != dt) {
        target = tt__ops_new(false, a->ndim, a->sizes, NULL, dt);
        st = target ? TT_OK : tt_errcode();
    }
    vec_ctx vc = {vec_of(op), un_loops[dt][op], false};
    if (!st)
        st = dt == TT_F32 && vc.vec != TT_VEC_NONE
                 ? tt__for_each_in(2, 1, (tt_tensor *[]){target, ca}, vec_loop, &vc)
                 : tt__for_each_in(2, 1, (tt_tensor *[]){target, ca}, un_loops[dt][op], NULL);
    if (!st && target != result)
        st = tt__copy_raw(result, target);
    if (target != result)
        tt_release(target);
    tt_release(ca);
    if (st)
        result = tt_release(result);
    return result;
}


/* ------------------------------------ isnan, isinf, logical_not, bitwise_not */

/* The ops with no float formula in the pointwise list: a bool result
 * (bitwise_not: the input's dtype), a loop per input dtype. */
typedef enum { PRED_ISNAN, PRED_ISINF, PRED_LOGICAL_NOT, PRED_BITWISE_NOT, PRED_COUNT } predop;

#define PRED_LOOP(NAME, T, TO, EXPR)                                           \
    static void NAME(char **d, const int64_t *s, int64_t n, void *ctx)        \
    {                                                                          \
        (void)ctx;                                                             \
        for (int64_t k = 0; k < n; k++) {                                      \
            T a = *(const T *)(d[1] + k * s[1]);                               \
            (void)a;                                                           \
            *(TO *)(d[0] + k * s[0]) = (TO)(EXPR);                             \
        }                                                                      \
    }
PRED_LOOP(isnan_f32, float, bool, isnan(a))
PRED_LOOP(isnan_f64, double, bool, isnan(a))
PRED_LOOP(isinf_f32, float, bool, isinf(a))
PRED_LOOP(isinf_f64, double, bool, isinf(a))
/* An integer is never NaN nor infinite (PyTorch answers false too). */
PRED_LOOP(pred_false_b8, bool, bool, false)
PRED_LOOP(pred_false_u8, uint8_t, bool, false)
PRED_LOOP(pred_false_i32, int32_t, bool, false)
PRED_LOOP(pred_false_i64, int64_t, bool, false)
PRED_LOOP(lnot_f32, float, bool, a == 0)
PRED_LOOP(lnot_f64, double, bool, a == 0)
PRED_LOOP(lnot_b8, bool, bool, !a)
PRED_LOOP(lnot_u8, uint8_t, bool, a == 0)
PRED_LOOP(lnot_i32, int32_t, bool, a == 0)
PRED_LOOP(lnot_i64, int64_t, bool, a == 0)
PRED_LOOP(bnot_b8, bool, bool, !a)
PRED_LOOP(bnot_u8, uint8_t, uint8_t, ~a)
PRED_LOOP(bnot_i32, int32_t, int32_t, ~a)
PRED_LOOP(bnot_i64, int64_t, int64_t, ~a)

#define PRED_INT(SUF)                                                          \
    {[PRED_ISNAN] = pred_false_##SUF, [PRED_ISINF] = pred_false_##SUF,         \
     [PRED_LOGICAL_NOT] = lnot_##SUF, [PRED_BITWISE_NOT] = bnot_##SUF}
/* NULL: refused (bitwise_not of a float, as PyTorch). */
static const tt_loop_fn pred_loops[TT_DTYPE_COUNT][PRED_COUNT] = {
    [TT_F32] = {isnan_f32, isinf_f32, lnot_f32, NULL},
    [TT_F64] = {isnan_f64, isinf_f64, lnot_f64, NULL},
    [TT_BOOL] = PRED_INT(b8), [TT_U8] = PRED_INT(u8),
    [TT_I32] = PRED_INT(i32), [TT_I64] = PRED_INT(i64),
};

static const tt_builtin_id pred_ids[PRED_COUNT] = {
    TT_OP_ISNAN, TT_OP_ISINF, TT_OP_LOGICAL_NOT, TT_OP_BITWISE_NOT};

/* One function is the kernel and the fake kernel: metadata always, data
 * for real inputs only. */
static tt_tensor *predicate(predop op, const tt_tensor *a)
{
    tt_dtype dt = (tt_dtype)a->dtype;
    tt_loop_fn loop = pred_loops[dt][op];
    if (!loop) {
        tt_error(TT_EDTYPE, "%s: argument 'self' (#1): bitwise operations are not supported "
                            "for %s; expects integer or bool tensors",
                 tt__op_label(pred_ids[op]), tt_dtype_name(dt));
        return NULL;
    }
    tt_dtype out_dt = op == PRED_BITWISE_NOT ? dt : TT_BOOL;
    tt_size strides[TT_MAX_DIMS];
    tt__elementwise_strides(1, &a, a->ndim, a->sizes, strides);
    tt_tensor *r = tt__ops_new(a->storage->fake, a->ndim, a->sizes, strides, out_dt);
    if (!r || a->storage->fake || tt_numel(r) == 0)
        return r;
    if (tt__for_each_in(2, 1, (tt_tensor *[]){r, (tt_tensor *)a}, loop, NULL))
        r = tt_release(r);
    return r;
}

static tt_status pred_kernel(tt_frame *f)
{
    tt_tensor *self;
    tt_status st = tt_arg_tensor(f, 0, &self);
    if (st)
        return st;
    tt_tensor *r = predicate((predop)KIND_OF(tt_frame_userdata(f)), self);
    return r ? tt_return(f, 0, r) : tt_errcode();
}


/* gelu's `approximate` argument (argument i): UN_GELU for "none",
 * UN_GELU_TANH for "tanh", else an error naming the op. */
static tt_status gelu_kind(tt_frame *f, int i, unop *kind)
{
    const char *ap = "none";
    tt_status st = tt_frame_nargs(f) > i ? tt_arg_str(f, i, &ap) : TT_OK;
    if (st)
        return st;
    if (strcmp(ap, "none") && strcmp(ap, "tanh"))
        return tt_frame_fail(f, TT_EINVAL, "argument 'approximate' (#%d): expected 'none' or "
                                           "'tanh', got '%s'", i + 1, ap);
    *kind = strcmp(ap, "tanh") ? UN_GELU : UN_GELU_TANH;
    return TT_OK;
}

static tt_status unary_kernel(tt_frame *f)
{
    const tt_op *op = tt_frame_op(f);
    bool inplace = tt_schema_arg(tt_op_schema(op), 0)->is_write;
    unop kind = (unop)KIND_OF(tt_frame_userdata(f));
    tt_tensor *self;
    tt_status st = tt_arg_tensor(f, 0, &self);
    if (!st && kind == UN_GELU)
        st = gelu_kind(f, 1, &kind);
    if (st)
        return st;
    tt_tensor *r = unary(kind, self, inplace ? self : NULL);
    return r ? tt_return(f, 0, r) : tt_errcode();
}


/* gelu's and silu's derivatives as ops of their own (as aten's
 * gelu_backward and silu_backward), so the backward of either stays one
 * node in a traced graph. One kernel serves both: the row's data is 1
 * for silu_backward. */
typedef struct {
    tt_dtype dt;
    bool tanh, silu;
} gelu_ctx;

static void gelu_backward_loop(char **d, const int64_t *s, int64_t n, void *vctx)
{
    const gelu_ctx *c = vctx;
    if (!c->silu && c->dt == TT_F32 && s[0] == 4 && s[1] == 4 && s[2] == 4 &&
        tt__vec2_f32(c->tanh ? TT_VEC2_GELU_TANH_BACKWARD : TT_VEC2_GELU_BACKWARD,
                     (float *)d[0], (const float *)d[1], (const float *)d[2], n))
        return;
    for (int64_t k = 0; k < n; k++) {
        double g = tt__load(d[1] + k * s[1], c->dt), x = tt__load(d[2] + k * s[2], c->dt), dy;
        if (c->silu) { /* PyTorch's silu_backward: g * s * (1 + x * (1 - s)) */
            double sg = 1 / (1 + exp(-x));
            dy = sg * (1 + x * (1 - sg));
        } else if (c->tanh) { /* PyTorch's GeluBackwardKernelImpl, tanh branch */
            double t = tanh(GELU_BETA * (x + GELU_KAPPA * x * x * x));
            dy = 0.5 * (1 + t) +
                 0.5 * x * (1 - t * t) * GELU_BETA * (1 + 3 * GELU_KAPPA * x * x);
        } else {
            double cdf = 0.5 * (1 + erf(x * 0.70710678118654752440));
            double pdf = exp(-0.5 * x * x) * 0.39894228040143267794; /* 1/sqrt(2 pi) */
            dy = cdf + x * pdf;
        }
        tt__store(d[0] + k * s[0], c->dt, g * dy);
    }
}

static tt_status gelu_backward_kernel(tt_frame *f)
{
    tt_tensor *g, *x;
    unop kind = UN_GELU;
    bool silu = KIND_OF(tt_frame_userdata(f)) == 1;
    tt_builtin_id id = silu ? TT_OP_SILU_BACKWARD : TT_OP_GELU_BACKWARD;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &g)) || (st = tt_arg_tensor(f, 1, &x)) ||
        (!silu && (st = gelu_kind(f, 2, &kind))))
        return st;
    const tt_tensor *ins[2] = {g, x};
    int nd;
    tt_size sizes[TT_MAX_DIMS], strides[TT_MAX_DIMS];
    if (tt__broadcast(tt__op_label(id), 2, ins, (const char *[]){"grad_output", "self"},
                      (const int[]){1, 2}, &nd, sizes))
        return tt_errcode();
    tt_dtype dt = tt__result_type(2, ins, 0, NULL);
    if (!tt_dtype_is_float(dt))
        return tt_frame_fail(f, TT_EDTYPE, "expects floating point tensors, got %s",
                             tt_dtype_name(dt));
    tt__elementwise_strides(2, ins, nd, sizes, strides);
    bool fake = tt__any_fake(2, ins);
    tt_tensor *out = tt__ops_new(fake, nd, sizes, strides, dt);
    if (!out)
        return tt_errcode();
    if (!fake && tt_numel(out) > 0) {
        tt_tensor *cg = as_dtype(g, dt), *cx = cg ? as_dtype(x, dt) : NULL;
        st = cx ? TT_OK : tt_errcode();
        if (!st) {
            tt_tensor xg, xx;
            tt__broadcast_alias(&xg, cg, nd, sizes);
            tt__broadcast_alias(&xx, cx, nd, sizes);
            gelu_ctx c = {dt, kind == UN_GELU_TANH, silu};
            st = tt_for_each(3, (tt_tensor *[]){out, &xg, &xx}, gelu_backward_loop, &c);
        }
        tt_release(cg);
        tt_release(cx);
        if (st) {
            tt_release(out);
            return st;
        }
    }
    return tt_return(f, 0, out);
}


/* Unary ops save the input (slot 0) or the output (slot 1), whichever
 * their rule reads. */
static tt_status setup_unary(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                             const tt_value *out, int nout)
{
    unsigned keep = 0;
    switch ((unop)KIND_OF(tt_ctx_userdata(ctx))) {
    case UN_GELU: {
        /* gelu's approximate argument picks gelu_backward's formula. */
        bool tanh_form = nin > 1 && in[1].kind == TT_V_STR && !strcmp(in[1].u.s, "tanh");
        tt_status st = tt_ctx_save_int(ctx, "tanh", tanh_form);
        if (st)
            return st;
        keep = 1u;
        break;
    }
    case UN_LOG: case UN_SIN: case UN_COS: case UN_ABS: case UN_SILU:
    case UN_ACOS: case UN_ASIN: case UN_ATAN: case UN_ACOSH: case UN_ASINH: case UN_ATANH:
    case UN_SINH: case UN_COSH: case UN_ERF: case UN_LOG1P: case UN_LOG2: case UN_LOG10:
        keep = 1u;
        break;
    case UN_NEG: case UN_SIGN: case UN_FLOOR: case UN_CEIL: case UN_TRUNC: case UN_ROUND: break;
    default: keep = KEEP_OUT; break; /* exp, sqrt, rsqrt, tanh, sigmoid, relu, tan, expm1,
                                        reciprocal */
    }
    return save_some(ctx, in, nin, out, nout, keep);
}

/* Unary rules on the saved input (slot 0 of the saved list) or output
 * (slot 1). */
static tt_status unary_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    tt_tensor *x = SAVED(0), *y = SAVED(1), *r = NULL;
    unop op = (unop)KIND_OF(tt_ctx_userdata(ctx));
    tt_scope_begin();
    switch (op) {
    case UN_NEG: r = tt_neg(g[0]); break;
    case UN_EXP: r = tt_mul(g[0], y); break;
    case UN_LOG: r = tt_div(g[0], x); break;
    case UN_SQRT: r = tt_div(g[0], tt_mul_scalar(y, 2)); break;
    case UN_RSQRT: r = tt_mul(g[0], tt_mul_scalar(tt_pow_scalar(y, 3), -0.5)); break;
    case UN_SIN: r = tt_mul(g[0], tt_cos(x)); break;
    case UN_COS: r = tt_mul(g[0], tt_neg(tt_sin(x))); break;
    case UN_TANH: r = tt_mul(g[0], tt_add_scalar(tt_neg(tt_mul(y, y)), 1)); break;
    case UN_SIGMOID: r = tt_mul(g[0], tt_mul(y, tt_add_scalar(tt_neg(y), 1))); break;
    case UN_RELU: r = tt_mul(g[0], gt_scalar(y, 0)); break;
    case UN_GELU:
    case UN_GELU_TANH: {
        int64_t tanh_form = 0;
        tt_ctx_get_int(ctx, "tanh", &tanh_form); /* absent: relu_-style rows never save it */
        tt_clear_error();
        r = tt__call_op(TT_OP_GELU_BACKWARD,
                        TT_ARGS(tt_v_tensor(g[0]), tt_v_tensor(x),
                                tt_v_str(tanh_form ? "tanh" : "none")));
        break;
    }
    case UN_SILU:
        r = tt__call_op(TT_OP_SILU_BACKWARD, TT_ARGS(tt_v_tensor(g[0]), tt_v_tensor(x)));
        break;
    case UN_ABS: r = tt_mul(g[0], sign_of(x)); break;
    case UN_SIGN: case UN_FLOOR: case UN_CEIL: case UN_TRUNC: case UN_ROUND:
        r = tt_zeros(tt_ndim(g[0]), tt_sizes(g[0]), tt_dtype_of(g[0]));
        break;
    /* derivatives.yaml's formulas */
    case UN_ACOS: r = tt_neg(tt_mul(g[0], tt_rsqrt(tt_add_scalar(tt_neg(tt_mul(x, x)), 1))));
        break;
    case UN_ASIN: r = tt_mul(g[0], tt_rsqrt(tt_add_scalar(tt_neg(tt_mul(x, x)), 1))); break;
    case UN_ATAN: r = tt_div(g[0], tt_add_scalar(tt_mul(x, x), 1)); break;
    case UN_ACOSH: r = tt_mul(g[0], tt_rsqrt(tt_add_scalar(tt_mul(x, x), -1))); break;
    case UN_ASINH: r = tt_mul(g[0], tt_rsqrt(tt_add_scalar(tt_mul(x, x), 1))); break;
    case UN_ATANH: r = tt_div(g[0], tt_add_scalar(tt_neg(tt_mul(x, x)), 1)); break;
    case UN_SINH: r = tt_mul(g[0], tt_cosh(x)); break;
    case UN_COSH: r = tt_mul(g[0], tt_sinh(x)); break;
    case UN_TAN: r = tt_mul(g[0], tt_add_scalar(tt_mul(y, y), 1)); break;
    case UN_ERF: /* 2 / sqrt(pi) exp(-x^2) */
        r = tt_mul(g[0], tt_mul_scalar(tt_exp(tt_neg(tt_mul(x, x))), 1.12837916709551257390));
        break;
    case UN_EXPM1: r = tt_mul(g[0], tt_add_scalar(y, 1)); break;
    case UN_LOG1P: r = tt_div(g[0], tt_add_scalar(x, 1)); break;
    case UN_LOG2: r = tt_div(g[0], tt_mul_scalar(x, 0.69314718055994530942)); break;
    case UN_LOG10: r = tt_div(g[0], tt_mul_scalar(x, 2.30258509299404568402)); break;
    case UN_RECIPROCAL: r = tt_neg(tt_mul(g[0], tt_mul(y, y))); break;
    default:
        tt_scope_end();
        return tt_error(TT_EINTERNAL, "%s: no derivative rule", tt_op_name(tt_ctx_op(ctx)));
    }
    tt_keep(r);
    tt_scope_end();
    return tt__put_grad(ctx, gi, 0, r);
}


#undef TT__FAMILY_UNARY
#define TT__FAMILY_UNARY TT__ROW
static const tt__builtin_row rows[] = {TT__FAMILY_ROWS};

tt_status tt__register_unary(tt_library *lib)
{
    return TT__DEFINE_ROWS(lib, rows);
}

/* ---------------------------------------------------------- typed wrappers */

/* Each unary row's data (its kind), at compile time: a wrapper names only
 * its op's id, and the table says which kind of op that is. */
#define ROW_KIND(id, sch, k, fk, bw, setup, data, flags) [TT_OP_##id] = (int8_t)(data),
#undef TT__FAMILY_UNARY
#define TT__FAMILY_UNARY ROW_KIND
static const int8_t row_kind[TT_OP_COUNT] = {TT__FAMILY_ROWS};
#undef ROW_KIND

static tt_tensor *un_call(tt_builtin_id id, const tt_tensor *a)
{
    if (tt__fast_path(id, 1, &a))
        return unary((unop)row_kind[id], a, NULL);
    return tt__call_op(id, TT_ARGS(tt_v_tensor(a)));
}


tt_tensor *tt_gelu_tanh(const tt_tensor *a)
{
    return tt__call_op(TT_OP_GELU, TT_ARGS(tt_v_tensor(a), tt_v_str("tanh")));
}


#define UN_WRAPPER(fn, id)                                                     \
    tt_tensor *fn(const tt_tensor *a) { return un_call(id, a); }
UN_WRAPPER(tt_neg, TT_OP_NEG)
UN_WRAPPER(tt_exp, TT_OP_EXP)
UN_WRAPPER(tt_log, TT_OP_LOG)
UN_WRAPPER(tt_sqrt, TT_OP_SQRT)
UN_WRAPPER(tt_rsqrt, TT_OP_RSQRT)
UN_WRAPPER(tt_sin, TT_OP_SIN)
UN_WRAPPER(tt_cos, TT_OP_COS)
UN_WRAPPER(tt_tanh, TT_OP_TANH)
UN_WRAPPER(tt_sigmoid, TT_OP_SIGMOID)
UN_WRAPPER(tt_relu, TT_OP_RELU)
UN_WRAPPER(tt_gelu, TT_OP_GELU)
UN_WRAPPER(tt_abs, TT_OP_ABS)
UN_WRAPPER(tt_silu, TT_OP_SILU)
UN_WRAPPER(tt_acos, TT_OP_ACOS)
UN_WRAPPER(tt_asin, TT_OP_ASIN)
UN_WRAPPER(tt_atan, TT_OP_ATAN)
UN_WRAPPER(tt_acosh, TT_OP_ACOSH)
UN_WRAPPER(tt_asinh, TT_OP_ASINH)
UN_WRAPPER(tt_atanh, TT_OP_ATANH)
UN_WRAPPER(tt_sinh, TT_OP_SINH)
UN_WRAPPER(tt_cosh, TT_OP_COSH)
UN_WRAPPER(tt_tan, TT_OP_TAN)
UN_WRAPPER(tt_erf, TT_OP_ERF)
UN_WRAPPER(tt_expm1, TT_OP_EXPM1)
UN_WRAPPER(tt_log1p, TT_OP_LOG1P)
UN_WRAPPER(tt_log2, TT_OP_LOG2)
UN_WRAPPER(tt_log10, TT_OP_LOG10)
UN_WRAPPER(tt_reciprocal, TT_OP_RECIPROCAL)
UN_WRAPPER(tt_floor, TT_OP_FLOOR)
UN_WRAPPER(tt_ceil, TT_OP_CEIL)
UN_WRAPPER(tt_trunc, TT_OP_TRUNC)
UN_WRAPPER(tt_round, TT_OP_ROUND)

tt_status tt_relu_(tt_tensor *a)
{
    if (tt__fast_path(TT_OP_RELU_, 1, (const tt_tensor *[]){a})) {
        tt_tensor *r = unary(UN_RELU, a, a);
        if (!r)
            return tt_errcode();
        tt_bump_version(a);
        tt_release(r);
        return TT_OK;
    }
    return tt__call_op_status(TT_OP_RELU_, TT_ARGS(tt_v_tensor(a)));
}


static tt_tensor *pred_call(tt_builtin_id id, predop op, const tt_tensor *a)
{
    if (tt__fast_path(id, 1, &a))
        return predicate(op, a);
    return tt__call_op(id, TT_ARGS(tt_v_tensor(a)));
}

tt_tensor *tt_isnan(const tt_tensor *a) { return pred_call(TT_OP_ISNAN, PRED_ISNAN, a); }
tt_tensor *tt_isinf(const tt_tensor *a) { return pred_call(TT_OP_ISINF, PRED_ISINF, a); }

tt_tensor *tt_logical_not(const tt_tensor *a)
{
    return pred_call(TT_OP_LOGICAL_NOT, PRED_LOGICAL_NOT, a);
}

tt_tensor *tt_bitwise_not(const tt_tensor *a)
{
    return pred_call(TT_OP_BITWISE_NOT, PRED_BITWISE_NOT, a);
}
