/* Built-in ops: elementwise arithmetic, comparisons, where, clamp, and the
 * unary math functions, with their in-place forms.
 *
 * One function per op kind computes the output's metadata (broadcast
 * shape, PyTorch's result dtype and output strides) and allocates it; for
 * fake inputs it stops there, so the same code is the real kernel and the
 * fake (meta) kernel, and they cannot disagree. Loops run in the common
 * dtype over a contiguous inner dimension (see tt_for_each). */
#include "ops_impl.h"

#include <math.h>
#include <string.h>

typedef enum {
    BIN_ADD, BIN_SUB, BIN_MUL, BIN_DIV, BIN_POW,
    BIN_EQ, BIN_NE, BIN_LT, BIN_LE, BIN_GT, BIN_GE,
    BIN_COUNT
} binop;

static const char *const bin_names[BIN_COUNT] = {
    "tt::add", "tt::sub", "tt::mul", "tt::div", "tt::pow",
    "tt::eq", "tt::ne", "tt::lt", "tt::le", "tt::gt", "tt::ge",
};

static bool is_compare(binop op) { return op >= BIN_EQ; }

/* --------------------------------------------------------------- loops */

/* A binary loop over T with the three common stride patterns (all
 * contiguous; a broadcast scalar on either side) written as plain indexed
 * loops the compiler vectorizes, then the general strided one. `alpha`
 * scales the second operand for add/sub. */
#define BINARY_LOOP(NAME, T, TO, EXPR)                                         \
    static void NAME(char **d, const int64_t *s, int64_t n, void *ctx)        \
    {                                                                          \
        const T alpha = *(const T *)ctx;                                       \
        (void)alpha;                                                           \
        TO *restrict o = (TO *)d[0];                                           \
        const T *restrict x = (const T *)d[1], *restrict y = (const T *)d[2];  \
        if (s[0] == sizeof(TO) && s[1] == sizeof(T) && s[2] == sizeof(T)) {    \
            for (int64_t k = 0; k < n; k++) {                                  \
                T a = x[k], b = y[k];                                          \
                o[k] = (TO)(EXPR);                                             \
            }                                                                  \
        } else if (s[0] == sizeof(TO) && s[1] == sizeof(T) && s[2] == 0) {     \
            const T b = y[0];                                                  \
            for (int64_t k = 0; k < n; k++) {                                  \
                T a = x[k];                                                    \
                o[k] = (TO)(EXPR);                                             \
            }                                                                  \
        } else if (s[0] == sizeof(TO) && s[1] == 0 && s[2] == sizeof(T)) {     \
            const T a = x[0];                                                  \
            for (int64_t k = 0; k < n; k++) {                                  \
                T b = y[k];                                                    \
                o[k] = (TO)(EXPR);                                             \
            }                                                                  \
        } else {                                                               \
            for (int64_t k = 0; k < n; k++) {                                  \
                T a = *(const T *)(d[1] + k * s[1]);                           \
                T b = *(const T *)(d[2] + k * s[2]);                           \
                *(TO *)(d[0] + k * s[0]) = (TO)(EXPR);                         \
            }                                                                  \
        }                                                                      \
    }

/* Integer division and power: PyTorch's semantics are floor division for
 * // and exact integer power; true division never reaches integers (it
 * promotes to float first). */
static inline int64_t ipow(int64_t b, int64_t e)
{
    if (e < 0)
        return b == 1 ? 1 : b == -1 ? (e & 1 ? -1 : 1) : 0;
    int64_t r = 1;
    while (e) {
        if (e & 1)
            r *= b;
        b *= b;
        e >>= 1;
    }
    return r;
}

#define ARITH_LOOPS(SUF, T, POW)                                               \
    BINARY_LOOP(add_##SUF, T, T, a + alpha * b)                                \
    BINARY_LOOP(sub_##SUF, T, T, a - alpha * b)                                \
    BINARY_LOOP(mul_##SUF, T, T, a * b)                                        \
    BINARY_LOOP(div_##SUF, T, T, a / b)                                        \
    BINARY_LOOP(pow_##SUF, T, T, POW)                                          \
    BINARY_LOOP(eq_##SUF, T, bool, a == b)                                     \
    BINARY_LOOP(ne_##SUF, T, bool, a != b)                                     \
    BINARY_LOOP(lt_##SUF, T, bool, a < b)                                      \
    BINARY_LOOP(le_##SUF, T, bool, a <= b)                                     \
    BINARY_LOOP(gt_##SUF, T, bool, a > b)                                      \
    BINARY_LOOP(ge_##SUF, T, bool, a >= b)

ARITH_LOOPS(f32, float, powf(a, b))
ARITH_LOOPS(f64, double, pow(a, b))
ARITH_LOOPS(i64, int64_t, ipow(a, b))
ARITH_LOOPS(i32, int32_t, (int32_t)ipow(a, b))
ARITH_LOOPS(u8, uint8_t, (uint8_t)ipow(a, b))
/* bool: add is logical or, mul logical and (PyTorch); sub and div never get
 * here (sub is refused, div promotes). */
BINARY_LOOP(add_b8, bool, bool, a || (alpha && b))
BINARY_LOOP(mul_b8, bool, bool, a && b)
BINARY_LOOP(pow_b8, bool, bool, a || !b)
BINARY_LOOP(eq_b8, bool, bool, a == b)
BINARY_LOOP(ne_b8, bool, bool, a != b)
BINARY_LOOP(lt_b8, bool, bool, a < b)
BINARY_LOOP(le_b8, bool, bool, a <= b)
BINARY_LOOP(gt_b8, bool, bool, a > b)
BINARY_LOOP(ge_b8, bool, bool, a >= b)

#define ROW(SUF)                                                               \
    {add_##SUF, sub_##SUF, mul_##SUF, div_##SUF, pow_##SUF, eq_##SUF,          \
     ne_##SUF, lt_##SUF, le_##SUF, gt_##SUF, ge_##SUF}
/* [dtype][op]; NULL where the combination is refused before a loop runs. */
static const tt_loop_fn bin_loops[TT_DTYPE_COUNT][BIN_COUNT] = {
    [TT_F32] = ROW(f32), [TT_F64] = ROW(f64), [TT_I64] = ROW(i64),
    [TT_I32] = ROW(i32), [TT_U8] = ROW(u8),
    [TT_BOOL] = {add_b8, NULL, mul_b8, NULL, pow_b8, eq_b8, ne_b8, lt_b8,
                 le_b8, gt_b8, ge_b8},
};

/* ---------------------------------------------------------------- binary */

/* Brings t to dtype dt for a loop: t itself (a new reference) when it
 * already is, else a converted copy. Fake tensors never get here. */
static tt_tensor *as_dtype(const tt_tensor *t, tt_dtype dt)
{
    if ((tt_dtype)t->dtype == dt)
        return tt_retain((tt_tensor *)t);
    tt_tensor *c = tt__empty_impl(t->ndim, t->sizes, NULL, dt, false);
    if (c && tt__copy_raw(c, t))
        c = tt_release(c);
    return c;
}

/* A 0-dim tensor holding a Scalar in dtype dt (the second operand of the
 * .Scalar overloads). */
static tt_tensor *scalar_tensor(double v, tt_dtype dt, bool fake)
{
    tt_tensor *t = tt__empty_impl(0, NULL, NULL, dt, fake);
    if (t && !fake)
        tt__store(tt__ptr(t), dt, v);
    return t;
}

static bool can_cast(tt_dtype from, tt_dtype to)
{
    /* PyTorch's canCast: no float to integral, no non-bool to bool. */
    if (tt_dtype_is_float(from) && !tt_dtype_is_float(to))
        return false;
    if (from != TT_BOOL && to == TT_BOOL)
        return false;
    return true;
}

/* Runs `op` on a and b (already checked: not NULL) into `out` (NULL:
 * allocate). b_scalar, when not NULL, replaces b by a Python number. */
static tt_tensor *binary(binop op, const tt_tensor *a, const tt_tensor *b,
                         const tt_value *b_scalar, double alpha, tt_tensor *out)
{
    const char *name = bin_names[op];
    tt_tensor *tmp_b = NULL, *ca = NULL, *cb = NULL, *result = NULL;
    tt_dtype common = b_scalar ? tt__result_type(1, &a, 1, b_scalar)
                               : tt__result_type(2, (const tt_tensor *[]){a, b}, 0, NULL);
    if (op == BIN_DIV && !tt_dtype_is_float(common))
        common = TT_F32; /* true division */
    if (op == BIN_SUB && common == TT_BOOL) {
        tt_error(TT_EDTYPE, "%s: subtraction, the '-' operator, with two bool tensors "
                            "is not supported; use logical xor instead", name);
        return NULL;
    }
    if ((op == BIN_ADD || op == BIN_SUB) && !tt_dtype_is_float(common) &&
        alpha != floor(alpha)) {
        tt_error(TT_EINVAL, "%s: for integral input tensors, argument 'alpha' must not "
                            "be a floating point number (got %g)", name, alpha);
        return NULL;
    }
    tt_dtype out_dt = is_compare(op) ? TT_BOOL : common;
    bool fake = a->storage->fake || (!b_scalar && b->storage->fake);
    if (b_scalar) {
        double v = b_scalar->kind == TT_V_FLOAT ? b_scalar->u.f
                 : b_scalar->kind == TT_V_BOOL ? b_scalar->u.b : (double)b_scalar->u.i;
        tmp_b = scalar_tensor(v, common, fake);
        if (!tmp_b)
            return NULL;
        b = tmp_b;
    }
    const tt_tensor *ins[2] = {a, b};
    int nd;
    tt_size sizes[TT_MAX_DIMS], strides[TT_MAX_DIMS];
    if (tt__broadcast(name, 2, ins, (const char *[]){"self", "other"}, (const int[]){1, 2},
                      &nd, sizes))
        goto done;
    if (out) {
        /* In place: the result must have out's shape and fit its dtype. */
        bool same = nd == out->ndim;
        for (int d = 0; same && d < nd; d++)
            same = sizes[d] == out->sizes[d];
        if (!same) {
            char s1[256], s2[256];
            tt_tensor shape;
            memset(&shape, 0, sizeof shape);
            shape.ndim = (int8_t)nd;
            memcpy(shape.sizes, sizes, sizeof(tt_size) * (size_t)nd);
            tt_error(TT_ESHAPE, "%s_: output with shape %s doesn't match the broadcast "
                                "shape %s", name, tt_shape_str(out, s1, sizeof s1),
                     tt_shape_str(&shape, s2, sizeof s2));
            goto done;
        }
        if (!can_cast(out_dt, (tt_dtype)out->dtype)) {
            tt_error(TT_EDTYPE, "%s_: result type %s can't be cast to the desired output "
                                "type %s", name, tt_dtype_name(out_dt),
                     tt_dtype_name((tt_dtype)out->dtype));
            goto done;
        }
        result = tt_retain(out);
    } else {
        tt__elementwise_strides(2, ins, nd, sizes, strides);
        result = tt__ops_new(fake, nd, sizes, strides, out_dt);
        if (!result)
            goto done;
    }
    if (fake || tt_numel(result) == 0)
        goto done;
    /* Compute in the common dtype; a result of another dtype (in place
     * into a wider tensor) goes through a temporary. Writing in place into
     * an operand that overlaps differently also needs one. */
    ca = as_dtype(a, common);
    cb = ca ? as_dtype(b, common) : NULL;
    if (!cb)
        goto fail;
    tt_tensor *target = result;
    bool via_tmp = (tt_dtype)result->dtype != out_dt ||
                   (out && ((tt_same_storage(out, cb) && cb != out &&
                             memcmp(cb->strides, out->strides, sizeof out->strides) != 0) ||
                            (tt_same_storage(out, ca) && ca != out &&
                             memcmp(ca->strides, out->strides, sizeof out->strides) != 0)));
    if (via_tmp) {
        tt__elementwise_strides(1, (const tt_tensor *[]){result}, nd, sizes, strides);
        target = tt__ops_new(false, nd, sizes, strides, out_dt);
        if (!target)
            goto fail;
    }
    tt_tensor xa, xb;
    tt__broadcast_alias(&xa, ca, nd, sizes);
    tt__broadcast_alias(&xb, cb, nd, sizes);
    uint64_t alpha_bits = 0;
    tt__store(&alpha_bits, common, alpha);
    tt_status st = tt_for_each(3, (tt_tensor *[]){target, &xa, &xb},
                               bin_loops[common][op], &alpha_bits);
    if (!st && via_tmp)
        st = tt__copy_raw(result, target);
    if (via_tmp)
        tt_release(target);
    if (st)
        goto fail;
    goto done;
fail:
    result = tt_release(result);
done:
    tt_release(ca);
    tt_release(cb);
    tt_release(tmp_b);
    return result;
}

/* ------------------------------------------------------------- unary */

typedef enum {
    UN_NEG, UN_EXP, UN_LOG, UN_SQRT, UN_RSQRT, UN_SIN, UN_COS, UN_TANH,
    UN_SIGMOID, UN_RELU, UN_GELU, UN_ABS, UN_COUNT
} unop;

static const char *const un_names[UN_COUNT] = {
    "tt::neg", "tt::exp", "tt::log", "tt::sqrt", "tt::rsqrt", "tt::sin",
    "tt::cos", "tt::tanh", "tt::sigmoid", "tt::relu", "tt::gelu", "tt::abs",
};

/* Ops whose integer inputs give a float result (PyTorch's int-to-float). */
static bool un_floating(unop op)
{
    return op != UN_NEG && op != UN_RELU && op != UN_ABS;
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

#define FLOAT_UNARY(SUF, T, F)                                                 \
    UNARY_LOOP(neg_##SUF, T, -a)                                               \
    UNARY_LOOP(exp_##SUF, T, exp##F(a))                                        \
    UNARY_LOOP(log_##SUF, T, log##F(a))                                        \
    UNARY_LOOP(sqrt_##SUF, T, sqrt##F(a))                                      \
    UNARY_LOOP(rsqrt_##SUF, T, (T)1 / sqrt##F(a))                              \
    UNARY_LOOP(sin_##SUF, T, sin##F(a))                                        \
    UNARY_LOOP(cos_##SUF, T, cos##F(a))                                        \
    UNARY_LOOP(tanh_##SUF, T, tanh##F(a))                                      \
    UNARY_LOOP(sigmoid_##SUF, T, (T)1 / ((T)1 + exp##F(-a)))                   \
    UNARY_LOOP(relu_##SUF, T, a > 0 ? a : (T)0)                                \
    UNARY_LOOP(gelu_##SUF, T, (T)0.5 * a * ((T)1 + erf##F(a * (T)0.70710678118654752440))) \
    UNARY_LOOP(abs_##SUF, T, fabs##F(a))

FLOAT_UNARY(f32, float, f)
FLOAT_UNARY(f64, double, )

#define INT_UNARY(SUF, T)                                                      \
    UNARY_LOOP(neg_##SUF, T, -a)                                               \
    UNARY_LOOP(relu_##SUF, T, a > 0 ? a : 0)                                   \
    UNARY_LOOP(abs_##SUF, T, a < 0 ? -a : a)

INT_UNARY(i64, int64_t)
INT_UNARY(i32, int32_t)
UNARY_LOOP(neg_u8, uint8_t, -a)
UNARY_LOOP(relu_u8, uint8_t, a)
UNARY_LOOP(abs_u8, uint8_t, a)
UNARY_LOOP(abs_b8, bool, a)

#define FROW(SUF)                                                              \
    {neg_##SUF, exp_##SUF, log_##SUF, sqrt_##SUF, rsqrt_##SUF, sin_##SUF,      \
     cos_##SUF, tanh_##SUF, sigmoid_##SUF, relu_##SUF, gelu_##SUF, abs_##SUF}
#define IROW(SUF)                                                              \
    {[UN_NEG] = neg_##SUF, [UN_RELU] = relu_##SUF, [UN_ABS] = abs_##SUF}
static const tt_loop_fn un_loops[TT_DTYPE_COUNT][UN_COUNT] = {
    [TT_F32] = FROW(f32), [TT_F64] = FROW(f64), [TT_I64] = IROW(i64),
    [TT_I32] = IROW(i32), [TT_U8] = IROW(u8), [TT_BOOL] = {[UN_ABS] = abs_b8},
};

/* Runs `op` on a into `out` (NULL: allocate like a). */
static tt_tensor *unary(unop op, const tt_tensor *a, tt_tensor *out)
{
    const char *name = un_names[op];
    tt_dtype dt = (tt_dtype)a->dtype;
    if (un_floating(op) && !tt_dtype_is_float(dt))
        dt = TT_F32;
    if (!un_loops[dt][op]) {
        tt_error(TT_EDTYPE, "%s: not supported for %s tensors%s", name,
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
    if (!st)
        st = tt_for_each(2, (tt_tensor *[]){target, ca}, un_loops[dt][op], NULL);
    if (!st && target != result)
        st = tt__copy_raw(result, target);
    if (target != result)
        tt_release(target);
    tt_release(ca);
    if (st)
        result = tt_release(result);
    return result;
}

/* ------------------------------------------------------ where and clamp */

typedef struct {
    tt_dtype dt;
} where_ctx;

static void where_loop(char **d, const int64_t *s, int64_t n, void *vctx)
{
    size_t es = tt_dtype_size(((const where_ctx *)vctx)->dt);
    for (int64_t k = 0; k < n; k++) {
        bool c = *(const bool *)(d[1] + k * s[1]);
        memcpy(d[0] + k * s[0], c ? d[2] + k * s[2] : d[3] + k * s[3], es);
    }
}

static tt_tensor *where(const tt_tensor *cond, const tt_tensor *a, const tt_tensor *b)
{
    const char *name = "tt::where";
    if ((tt_dtype)cond->dtype != TT_BOOL) {
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
    const char *name = "tt::clamp";
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
    tt_status st = tt_for_each(2, (tt_tensor *[]){out, ca}, clamp_loop, &c);
    tt_release(ca);
    if (st)
        out = tt_release(out);
    return out;
}

/* ---------------------------------------------------------------- kernels */

/* The op's binop comes from its name ("tt::add.Tensor" -> add). */
static binop binop_of(const tt_op *op)
{
    const char *n = tt_op_name(op);
    for (int i = 0; i < BIN_COUNT; i++) {
        size_t l = strlen(bin_names[i]);
        if (strncmp(n, bin_names[i], l) == 0 && (n[l] == '.' || n[l] == '_' || !n[l]))
            return (binop)i;
    }
    return BIN_COUNT;
}

static unop unop_of(const tt_op *op)
{
    const char *n = tt_op_name(op);
    for (int i = 0; i < UN_COUNT; i++) {
        size_t l = strlen(un_names[i]);
        if (strncmp(n, un_names[i], l) == 0 && (n[l] == '_' || !n[l]))
            return (unop)i;
    }
    return UN_COUNT;
}

/* Kernel and meta of every binary overload: (self, other[, alpha]) where
 * other is a Tensor or a Scalar; the in-place forms write into self. */
static tt_status binary_kernel(tt_frame *f)
{
    const tt_op *op = tt_frame_op(f);
    binop b = binop_of(op);
    bool inplace = tt_schema_arg(tt_op_schema(op), 0)->is_write;
    tt_tensor *self, *other = NULL;
    double alpha = 1;
    tt_status st = tt_arg_tensor(f, 0, &self);
    const tt_value *ov = tt_frame_arg(f, 1);
    if (!st && ov->kind == TT_V_TENSOR)
        st = tt_arg_tensor(f, 1, &other);
    if (!st && tt_frame_nargs(f) > 2)
        st = tt_arg_scalar(f, 2, &alpha, NULL);
    if (st)
        return st;
    tt_tensor *r = binary(b, self, other, other ? NULL : ov, alpha, inplace ? self : NULL);
    return r ? tt_return(f, 0, r) : tt_errcode();
}

static tt_status unary_kernel(tt_frame *f)
{
    const tt_op *op = tt_frame_op(f);
    bool inplace = tt_schema_arg(tt_op_schema(op), 0)->is_write;
    tt_tensor *self;
    tt_status st = tt_arg_tensor(f, 0, &self);
    if (st)
        return st;
    tt_tensor *r = unary(unop_of(op), self, inplace ? self : NULL);
    return r ? tt_return(f, 0, r) : tt_errcode();
}

static tt_status where_kernel(tt_frame *f)
{
    tt_tensor *c, *a, *b;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &c)) || (st = tt_arg_tensor(f, 1, &a)) ||
        (st = tt_arg_tensor(f, 2, &b)))
        return st;
    tt_tensor *r = where(c, a, b);
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

static tt_status zero_kernel(tt_frame *f)
{
    tt_tensor *a;
    tt_status st = tt_arg_tensor(f, 0, &a);
    if (!st && !a->storage->fake)
        st = tt__fill_raw(a, 0);
    return st ? st : tt_return_self(f, 0, 0);
}

#define BIN(sch) {.schema = sch, .kernel = binary_kernel, .fake = binary_kernel}
#define UN(sch) {.schema = sch, .kernel = unary_kernel, .fake = unary_kernel}
static const tt_custom_op_spec specs[] = {
    BIN("tt::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"),
    BIN("tt::add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor"),
    BIN("tt::add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)"),
    BIN("tt::sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"),
    BIN("tt::sub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor"),
    BIN("tt::sub_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)"),
    BIN("tt::mul.Tensor(Tensor self, Tensor other) -> Tensor"),
    BIN("tt::mul.Scalar(Tensor self, Scalar other) -> Tensor"),
    BIN("tt::mul_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)"),
    BIN("tt::mul_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)"),
    BIN("tt::div.Tensor(Tensor self, Tensor other) -> Tensor"),
    BIN("tt::div.Scalar(Tensor self, Scalar other) -> Tensor"),
    BIN("tt::div_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)"),
    BIN("tt::pow.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor"),
    BIN("tt::pow.Tensor_Scalar(Tensor self, Scalar exponent) -> Tensor"),
    BIN("tt::eq.Tensor(Tensor self, Tensor other) -> Tensor"),
    BIN("tt::ne.Tensor(Tensor self, Tensor other) -> Tensor"),
    BIN("tt::lt.Tensor(Tensor self, Tensor other) -> Tensor"),
    BIN("tt::le.Tensor(Tensor self, Tensor other) -> Tensor"),
    BIN("tt::gt.Tensor(Tensor self, Tensor other) -> Tensor"),
    BIN("tt::ge.Tensor(Tensor self, Tensor other) -> Tensor"),
    UN("tt::neg(Tensor self) -> Tensor"),
    UN("tt::exp(Tensor self) -> Tensor"),
    UN("tt::log(Tensor self) -> Tensor"),
    UN("tt::sqrt(Tensor self) -> Tensor"),
    UN("tt::rsqrt(Tensor self) -> Tensor"),
    UN("tt::sin(Tensor self) -> Tensor"),
    UN("tt::cos(Tensor self) -> Tensor"),
    UN("tt::tanh(Tensor self) -> Tensor"),
    UN("tt::sigmoid(Tensor self) -> Tensor"),
    UN("tt::relu(Tensor self) -> Tensor"),
    UN("tt::relu_(Tensor(a!) self) -> Tensor(a!)"),
    UN("tt::gelu(Tensor self) -> Tensor"),
    UN("tt::abs(Tensor self) -> Tensor"),
    {.schema = "tt::where.self(Tensor condition, Tensor self, Tensor other) -> Tensor",
     .kernel = where_kernel, .fake = where_kernel},
    {.schema = "tt::clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor",
     .kernel = clamp_kernel, .fake = clamp_kernel},
    {.schema = "tt::zero_(Tensor(a!) self) -> Tensor(a!)",
     .kernel = zero_kernel, .fake = zero_kernel},
};

tt_status tt__register_elementwise(tt_library *lib)
{
    return tt__define_all(lib, specs, (int)(sizeof specs / sizeof specs[0]));
}

/* ---------------------------------------------------------- typed wrappers */

/* The fast path: no mode, grad or fake tensor in play, so the kernel's
 * work runs directly; otherwise the call goes through the dispatcher. */
static tt_tensor *bin_call(const char *opname, const tt_op **cache, binop op,
                           const tt_tensor *a, const tt_tensor *b, double alpha)
{
    const tt_tensor *ts[2] = {a, b};
    if (tt_dispatch_is_trivial(2, ts))
        return binary(op, a, b, NULL, alpha, NULL);
    if (op == BIN_ADD || op == BIN_SUB)
        return tt__call_builtin(opname, cache, TT_ARGS(tt_v_tensor(a), tt_v_tensor(b),
                                                       tt_v_float(alpha)));
    return tt__call_builtin(opname, cache, TT_ARGS(tt_v_tensor(a), tt_v_tensor(b)));
}

static tt_tensor *bin_scalar_call(const char *opname, const tt_op **cache, binop op,
                                  const tt_tensor *a, double b)
{
    tt_value v = b == floor(b) && fabs(b) < 9e15 ? tt_v_int((int64_t)b) : tt_v_float(b);
    if (tt_dispatch_is_trivial(1, &a))
        return binary(op, a, NULL, &v, 1.0, NULL);
    return tt__call_builtin(opname, cache, TT_ARGS(tt_v_tensor(a), v));
}

static tt_status bin_inplace(const char *opname, const tt_op **cache, binop op,
                             tt_tensor *a, const tt_tensor *b, double alpha)
{
    const tt_tensor *ts[2] = {a, b};
    if (tt_dispatch_is_trivial(2, ts)) {
        tt_tensor *r = binary(op, a, b, NULL, alpha, a);
        if (!r)
            return tt_errcode();
        tt_bump_version(a);
        tt_release(r);
        return TT_OK;
    }
    if (op == BIN_ADD || op == BIN_SUB)
        return tt__call_builtin_status(opname, cache, TT_ARGS(tt_v_tensor(a), tt_v_tensor(b),
                                                              tt_v_float(alpha)));
    return tt__call_builtin_status(opname, cache, TT_ARGS(tt_v_tensor(a), tt_v_tensor(b)));
}

static tt_tensor *un_call(const char *opname, const tt_op **cache, unop op,
                          const tt_tensor *a)
{
    if (tt_dispatch_is_trivial(1, &a))
        return unary(op, a, NULL);
    return tt__call_builtin(opname, cache, TT_ARGS(tt_v_tensor(a)));
}

#define BIN_WRAPPER(fn, opname, op)                                            \
    tt_tensor *fn(const tt_tensor *a, const tt_tensor *b)                     \
    {                                                                          \
        static const tt_op *cache;                                             \
        return bin_call(opname, &cache, op, a, b, 1.0);                        \
    }
BIN_WRAPPER(tt_add, "tt::add.Tensor", BIN_ADD)
BIN_WRAPPER(tt_sub, "tt::sub.Tensor", BIN_SUB)
BIN_WRAPPER(tt_mul, "tt::mul.Tensor", BIN_MUL)
BIN_WRAPPER(tt_div, "tt::div.Tensor", BIN_DIV)
BIN_WRAPPER(tt_pow, "tt::pow.Tensor_Tensor", BIN_POW)
BIN_WRAPPER(tt_eq, "tt::eq.Tensor", BIN_EQ)
BIN_WRAPPER(tt_ne, "tt::ne.Tensor", BIN_NE)
BIN_WRAPPER(tt_lt, "tt::lt.Tensor", BIN_LT)
BIN_WRAPPER(tt_le, "tt::le.Tensor", BIN_LE)
BIN_WRAPPER(tt_gt, "tt::gt.Tensor", BIN_GT)
BIN_WRAPPER(tt_ge, "tt::ge.Tensor", BIN_GE)

tt_tensor *tt_add_scaled(const tt_tensor *a, const tt_tensor *b, double alpha)
{
    static const tt_op *cache;
    return bin_call("tt::add.Tensor", &cache, BIN_ADD, a, b, alpha);
}

#define SCALAR_WRAPPER(fn, opname, op)                                         \
    tt_tensor *fn(const tt_tensor *a, double b)                               \
    {                                                                          \
        static const tt_op *cache;                                             \
        return bin_scalar_call(opname, &cache, op, a, b);                      \
    }
SCALAR_WRAPPER(tt_add_scalar, "tt::add.Scalar", BIN_ADD)
SCALAR_WRAPPER(tt_sub_scalar, "tt::sub.Scalar", BIN_SUB)
SCALAR_WRAPPER(tt_mul_scalar, "tt::mul.Scalar", BIN_MUL)
SCALAR_WRAPPER(tt_div_scalar, "tt::div.Scalar", BIN_DIV)
SCALAR_WRAPPER(tt_pow_scalar, "tt::pow.Tensor_Scalar", BIN_POW)

#define INPLACE_WRAPPER(fn, opname, op)                                        \
    tt_status fn(tt_tensor *a, const tt_tensor *b)                            \
    {                                                                          \
        static const tt_op *cache;                                             \
        return bin_inplace(opname, &cache, op, a, b, 1.0);                     \
    }
INPLACE_WRAPPER(tt_add_, "tt::add_.Tensor", BIN_ADD)
INPLACE_WRAPPER(tt_sub_, "tt::sub_.Tensor", BIN_SUB)
INPLACE_WRAPPER(tt_mul_, "tt::mul_.Tensor", BIN_MUL)
INPLACE_WRAPPER(tt_div_, "tt::div_.Tensor", BIN_DIV)

tt_status tt_add_scaled_(tt_tensor *a, const tt_tensor *b, double alpha)
{
    static const tt_op *cache;
    return bin_inplace("tt::add_.Tensor", &cache, BIN_ADD, a, b, alpha);
}

tt_status tt_mul_scalar_(tt_tensor *a, double b)
{
    static const tt_op *cache;
    tt_value v = tt_v_float(b);
    if (tt_dispatch_is_trivial(1, (const tt_tensor *[]){a})) {
        tt_tensor *r = binary(BIN_MUL, a, NULL, &v, 1.0, a);
        if (!r)
            return tt_errcode();
        tt_bump_version(a);
        tt_release(r);
        return TT_OK;
    }
    return tt__call_builtin_status("tt::mul_.Scalar", &cache, TT_ARGS(tt_v_tensor(a), v));
}

#define UN_WRAPPER(fn, opname, op)                                             \
    tt_tensor *fn(const tt_tensor *a)                                         \
    {                                                                          \
        static const tt_op *cache;                                             \
        return un_call(opname, &cache, op, a);                                 \
    }
UN_WRAPPER(tt_neg, "tt::neg", UN_NEG)
UN_WRAPPER(tt_exp, "tt::exp", UN_EXP)
UN_WRAPPER(tt_log, "tt::log", UN_LOG)
UN_WRAPPER(tt_sqrt, "tt::sqrt", UN_SQRT)
UN_WRAPPER(tt_rsqrt, "tt::rsqrt", UN_RSQRT)
UN_WRAPPER(tt_sin, "tt::sin", UN_SIN)
UN_WRAPPER(tt_cos, "tt::cos", UN_COS)
UN_WRAPPER(tt_tanh, "tt::tanh", UN_TANH)
UN_WRAPPER(tt_sigmoid, "tt::sigmoid", UN_SIGMOID)
UN_WRAPPER(tt_relu, "tt::relu", UN_RELU)
UN_WRAPPER(tt_gelu, "tt::gelu", UN_GELU)
UN_WRAPPER(tt_abs, "tt::abs", UN_ABS)

tt_status tt_relu_(tt_tensor *a)
{
    static const tt_op *cache;
    if (tt_dispatch_is_trivial(1, (const tt_tensor *[]){a})) {
        tt_tensor *r = unary(UN_RELU, a, a);
        if (!r)
            return tt_errcode();
        tt_bump_version(a);
        tt_release(r);
        return TT_OK;
    }
    return tt__call_builtin_status("tt::relu_", &cache, TT_ARGS(tt_v_tensor(a)));
}

tt_status tt_zero_(tt_tensor *a)
{
    static const tt_op *cache;
    if (tt_dispatch_is_trivial(1, (const tt_tensor *[]){a})) {
        tt_status st = tt__fill_raw(a, 0);
        if (!st)
            tt_bump_version(a);
        return st;
    }
    return tt__call_builtin_status("tt::zero_", &cache, TT_ARGS(tt_v_tensor(a)));
}

tt_tensor *tt_where(const tt_tensor *cond, const tt_tensor *a, const tt_tensor *b)
{
    static const tt_op *cache;
    const tt_tensor *ts[3] = {cond, a, b};
    if (tt_dispatch_is_trivial(3, ts))
        return where(cond, a, b);
    return tt__call_builtin("tt::where.self", &cache,
                            TT_ARGS(tt_v_tensor(cond), tt_v_tensor(a), tt_v_tensor(b)));
}

tt_tensor *tt_clamp(const tt_tensor *a, double min, double max)
{
    static const tt_op *cache;
    /* Whole-number bounds travel as ints so an integer tensor stays one. */
    tt_value lo = isnan(min) ? tt_v_none() : min == floor(min) && fabs(min) < 9e15 ? tt_v_int((int64_t)min) : tt_v_float(min);
    tt_value hi = isnan(max) ? tt_v_none() : max == floor(max) && fabs(max) < 9e15 ? tt_v_int((int64_t)max) : tt_v_float(max);
    if (tt_dispatch_is_trivial(1, &a))
        return clamp(a, &lo, &hi);
    return tt__call_builtin("tt::clamp", &cache, TT_ARGS(tt_v_tensor(a), lo, hi));
}
