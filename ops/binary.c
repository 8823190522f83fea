/* Built-in ops: binary arithmetic (add, sub, mul, div with its rounding
 * modes, pow, fmod, remainder, atan2) and comparisons, Tensor and Scalar overloads and in-place
 * forms. The float formulas come from ops/pointwise_ops.h, which the
 * fusion pass expands too.
 *
 * One function per op kind computes the output's metadata (broadcast
 * shape, PyTorch's result dtype and output strides) and allocates it; for
 * fake inputs it stops there, so the same code is the real kernel and the
 * fake (meta) kernel, and they cannot disagree. Loops run in the common
 * dtype over a contiguous inner dimension (see tt_for_each). Each op's
 * kernel, derivative and typed wrapper sit together in its family's file. */
#include "elementwise_impl.h"
#include "pointwise_ops.h"
#include "transposed_binary.h"


/* The kinds of the pointwise list (ops/pointwise_ops.h), with div's
 * rounding modes (BIN_DIV_TRUNC, BIN_DIV_FLOOR) and the bitwise ops (no
 * float formula: integers and bool only) between arithmetic and
 * comparisons; the kinds with a bool result come last (is_compare). */
#define BIN_KIND(K, ...) BIN_##K,
typedef enum {
    TT_POINTWISE_ARITH(BIN_KIND)
    TT_POINTWISE_MINMAX(BIN_KIND)
    BIN_DIV_TRUNC, BIN_DIV_FLOOR,
    BIN_BITWISE_AND, BIN_BITWISE_OR, BIN_BITWISE_XOR,
    TT_POINTWISE_COMPARE(BIN_KIND)
    TT_POINTWISE_LOGICAL(BIN_KIND)
    BIN_COUNT
} binop;
#undef BIN_KIND

/* Each kind's Tensor overload: whose name its errors carry. */
#define BIN_ID(K, TROW, ...) [BIN_##K] = TT_OP_##TROW,
static const tt_builtin_id bin_ids[BIN_COUNT] = {
    TT_POINTWISE_ARITH(BIN_ID) TT_POINTWISE_COMPARE(BIN_ID)
    TT_POINTWISE_MINMAX(BIN_ID) TT_POINTWISE_LOGICAL(BIN_ID)
    [BIN_DIV_TRUNC] = TT_OP_DIV_TENSOR, [BIN_DIV_FLOOR] = TT_OP_DIV_TENSOR,
    [BIN_BITWISE_AND] = TT_OP_BITWISE_AND_TENSOR, [BIN_BITWISE_OR] = TT_OP_BITWISE_OR_TENSOR,
    [BIN_BITWISE_XOR] = TT_OP_BITWISE_XOR_TENSOR,
};
#undef BIN_ID

static bool is_compare(binop op) { return op >= BIN_EQ; }
/* The kinds whose integer divisor may not be zero besides div's rounding
 * modes. */
static bool divides(binop op) { return op == BIN_FMOD || op == BIN_REMAINDER; }
static bool is_bitwise(binop op) { return op >= BIN_BITWISE_AND && op <= BIN_BITWISE_XOR; }

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
    /* In unsigned arithmetic: an overflow wraps (the low bits are the
     * narrower types' results too, as PyTorch's) instead of being
     * undefined. */
    uint64_t r = 1, ub = (uint64_t)b;
    while (e) {
        if (e & 1)
            r *= ub;
        ub *= ub;
        e >>= 1;
    }
    return (int64_t)r;
}

/* div's rounding modes. Floats: trunc(a / b), and Python's floor division
 * (PyTorch's div_floor_floating: through fmod, so the quotient is exact
 * where a / b would round); b == 0 gives a / b, inf or NaN. Integers
 * (never b == 0: refused before the loop): C's division truncates, floor
 * steps down when the signs differ and the division is not exact; the
 * quotient goes through unsigned so INT_MIN / -1 wraps as PyTorch's does
 * instead of being undefined. */
#define FLOAT_DIVS(SUF, T, F)                                                  \
    static inline T divtrunc_##SUF(T a, T b) { return trunc##F(a / b); }       \
    static inline T divfloor_##SUF(T a, T b)                                   \
    {                                                                          \
        if (b == 0)                                                            \
            return a / b;                                                      \
        T mod = fmod##F(a, b), div = (a - mod) / b;                            \
        if (mod != 0 && (b < 0) != (mod < 0))                                  \
            div -= 1;                                                          \
        if (div == 0)                                                          \
            return copysign##F(0, a / b);                                      \
        T fl = floor##F(div);                                                  \
        return div - fl > (T)0.5 ? fl + 1 : fl;                                \
    }
FLOAT_DIVS(f32, float, f)
FLOAT_DIVS(f64, double, )

#define INT_DIVS(SUF, T, UT)                                                   \
    static inline T divtrunc_##SUF(T a, T b)                                   \
    {                                                                          \
        return b == -1 ? (T)(0 - (UT)a) : (T)(a / b);                          \
    }                                                                          \
    static inline T divfloor_##SUF(T a, T b)                                   \
    {                                                                          \
        if (b == -1)                                                           \
            return (T)(0 - (UT)a);                                             \
        T q = (T)(a / b);                                                      \
        return (a % b != 0 && ((a < 0) != (b < 0))) ? (T)(q - 1) : q;          \
    }
INT_DIVS(i64, int64_t, uint64_t)
INT_DIVS(i32, int32_t, uint32_t)
static inline uint8_t divtrunc_u8(uint8_t a, uint8_t b) { return (uint8_t)(a / b); }
static inline uint8_t divfloor_u8(uint8_t a, uint8_t b) { return (uint8_t)(a / b); }

/* Integer fmod (C's %, the sign of a) and remainder (the sign of b);
 * never b == 0 (refused before the loop). x % -1 is 0, INT_MIN's too
 * (C's INT_MIN % -1 traps; PyTorch 1.13 dies of SIGFPE there). */
#define INT_MODS(SUF, T)                                                       \
    static inline T imod_##SUF(T a, T b) { return b == -1 ? 0 : (T)(a % b); }   \
    static inline T irem_##SUF(T a, T b)                                       \
    {                                                                          \
        T r = imod_##SUF(a, b);                                                \
        return r != 0 && (r < 0) != (b < 0) ? (T)(r + b) : r;                  \
    }
INT_MODS(i64, int64_t)
INT_MODS(i32, int32_t)
static inline uint8_t imod_u8(uint8_t a, uint8_t b) { return (uint8_t)(a % b); }
static inline uint8_t irem_u8(uint8_t a, uint8_t b) { return (uint8_t)(a % b); }

/* W is the type add, sub and mul compute in: the type itself for floats,
 * its unsigned twin for integers, so an overflow wraps (PyTorch's result on
 * every CPU) instead of being undefined behaviour. */
#define ARITH_LOOPS(SUF, T, POW, W)                                            \
    BINARY_LOOP(add_##SUF, T, T, (W)a + (W)alpha * (W)b)                       \
    BINARY_LOOP(sub_##SUF, T, T, (W)a - (W)alpha * (W)b)                       \
    BINARY_LOOP(mul_##SUF, T, T, (W)a * (W)b)                                  \
    BINARY_LOOP(div_##SUF, T, T, a / b)                                        \
    BINARY_LOOP(pow_##SUF, T, T, POW)                                          \
    BINARY_LOOP(divt_##SUF, T, T, divtrunc_##SUF(a, b))                        \
    BINARY_LOOP(divf_##SUF, T, T, divfloor_##SUF(a, b))                        \
    BINARY_LOOP(fmod_##SUF, T, T, imod_##SUF(a, b))                            \
    BINARY_LOOP(rem_##SUF, T, T, irem_##SUF(a, b))                             \
    BINARY_LOOP(max_##SUF, T, T, a < b ? b : a)                                \
    BINARY_LOOP(min_##SUF, T, T, b < a ? b : a)                                \
    BINARY_LOOP(band_##SUF, T, T, a & b)                                       \
    BINARY_LOOP(bor_##SUF, T, T, a | b)                                        \
    BINARY_LOOP(bxor_##SUF, T, T, a ^ b)                                       \
    BINARY_LOOP(land_##SUF, T, bool, a != 0 && b != 0)                         \
    BINARY_LOOP(lor_##SUF, T, bool, a != 0 || b != 0)                          \
    BINARY_LOOP(lxor_##SUF, T, bool, (a != 0) != (b != 0))                     \
    BINARY_LOOP(eq_##SUF, T, bool, a == b)                                     \
    BINARY_LOOP(ne_##SUF, T, bool, a != b)                                     \
    BINARY_LOOP(lt_##SUF, T, bool, a < b)                                      \
    BINARY_LOOP(le_##SUF, T, bool, a <= b)                                     \
    BINARY_LOOP(gt_##SUF, T, bool, a > b)                                      \
    BINARY_LOOP(ge_##SUF, T, bool, a >= b)

/* Floats: the pointwise list's formulas, and div's rounding modes. */
#define BIN_LOOP_F32(K, TROW, SROW, F32, F64) BINARY_LOOP(bin_f32_##K, float, float, F32)
#define BIN_LOOP_F64(K, TROW, SROW, F32, F64) BINARY_LOOP(bin_f64_##K, double, double, F64)
#define CMP_LOOP_F32(K, TROW, SROW, F32, F64) BINARY_LOOP(bin_f32_##K, float, bool, F32)
#define CMP_LOOP_F64(K, TROW, SROW, F32, F64) BINARY_LOOP(bin_f64_##K, double, bool, F64)
TT_POINTWISE_ARITH(BIN_LOOP_F32)
TT_POINTWISE_ARITH(BIN_LOOP_F64)
TT_POINTWISE_COMPARE(CMP_LOOP_F32)
TT_POINTWISE_COMPARE(CMP_LOOP_F64)
#define BIN1_LOOP_F32(K, ROW, F32, F64) BINARY_LOOP(bin_f32_##K, float, float, F32)
#define BIN1_LOOP_F64(K, ROW, F32, F64) BINARY_LOOP(bin_f64_##K, double, double, F64)
#define LOG_LOOP_F32(K, ROW, F32, F64) BINARY_LOOP(bin_f32_##K, float, bool, F32)
#define LOG_LOOP_F64(K, ROW, F32, F64) BINARY_LOOP(bin_f64_##K, double, bool, F64)
TT_POINTWISE_MINMAX(BIN1_LOOP_F32)
TT_POINTWISE_MINMAX(BIN1_LOOP_F64)
TT_POINTWISE_LOGICAL(LOG_LOOP_F32)
TT_POINTWISE_LOGICAL(LOG_LOOP_F64)
BINARY_LOOP(bin_f32_DIV_TRUNC, float, float, divtrunc_f32(a, b))
BINARY_LOOP(bin_f32_DIV_FLOOR, float, float, divfloor_f32(a, b))
BINARY_LOOP(bin_f64_DIV_TRUNC, double, double, divtrunc_f64(a, b))
BINARY_LOOP(bin_f64_DIV_FLOOR, double, double, divfloor_f64(a, b))
#define BIN_F32(K, ...) [BIN_##K] = bin_f32_##K,
#define BIN_F64(K, ...) [BIN_##K] = bin_f64_##K,
/* Integers: in W, so that overflow wraps. */
ARITH_LOOPS(i64, int64_t, ipow(a, b), uint64_t)
ARITH_LOOPS(i32, int32_t, (int32_t)ipow(a, b), uint32_t)
ARITH_LOOPS(u8, uint8_t, (uint8_t)ipow(a, b), unsigned)
/* bool: add is logical or, mul logical and (PyTorch); sub, div and pow
 * never get here (sub and pow are refused, div promotes). */
BINARY_LOOP(add_b8, bool, bool, a || (alpha && b))
BINARY_LOOP(mul_b8, bool, bool, a && b)
BINARY_LOOP(eq_b8, bool, bool, a == b)
BINARY_LOOP(ne_b8, bool, bool, a != b)
BINARY_LOOP(lt_b8, bool, bool, a < b)
BINARY_LOOP(le_b8, bool, bool, a <= b)
BINARY_LOOP(gt_b8, bool, bool, a > b)
BINARY_LOOP(ge_b8, bool, bool, a >= b)
/* bool maximum is or, minimum and (PyTorch's); bitwise ops are logical. */
BINARY_LOOP(max_b8, bool, bool, a || b)
BINARY_LOOP(min_b8, bool, bool, a && b)
BINARY_LOOP(band_b8, bool, bool, a && b)
BINARY_LOOP(bor_b8, bool, bool, a || b)
BINARY_LOOP(bxor_b8, bool, bool, a != b)
BINARY_LOOP(land_b8, bool, bool, a && b)
BINARY_LOOP(lor_b8, bool, bool, a || b)
BINARY_LOOP(lxor_b8, bool, bool, a != b)

#define LOGIC_ROW(SUF)                                                         \
    [BIN_MAXIMUM] = max_##SUF, [BIN_MINIMUM] = min_##SUF,                      \
    [BIN_BITWISE_AND] = band_##SUF, [BIN_BITWISE_OR] = bor_##SUF,              \
    [BIN_BITWISE_XOR] = bxor_##SUF, [BIN_LOGICAL_AND] = land_##SUF,            \
    [BIN_LOGICAL_OR] = lor_##SUF, [BIN_LOGICAL_XOR] = lxor_##SUF,              \
    [BIN_EQ] = eq_##SUF, [BIN_NE] = ne_##SUF, [BIN_LT] = lt_##SUF,             \
    [BIN_LE] = le_##SUF, [BIN_GT] = gt_##SUF, [BIN_GE] = ge_##SUF
#define ROW(SUF)                                                               \
    {[BIN_ADD] = add_##SUF, [BIN_SUB] = sub_##SUF, [BIN_MUL] = mul_##SUF,      \
     [BIN_DIV] = div_##SUF, [BIN_POW] = pow_##SUF, [BIN_DIV_TRUNC] = divt_##SUF, \
     [BIN_DIV_FLOOR] = divf_##SUF, [BIN_FMOD] = fmod_##SUF,                    \
     [BIN_REMAINDER] = rem_##SUF, LOGIC_ROW(SUF)}
/* [dtype][op]; NULL where the combination is refused before a loop runs
 * (bitwise ops of floats among them). */
#define BIN1_F32(K, ...) [BIN_##K] = bin_f32_##K,
#define BIN1_F64(K, ...) [BIN_##K] = bin_f64_##K,
static const tt_loop_fn bin_loops[TT_DTYPE_COUNT][BIN_COUNT] = {
    [TT_F32] = {TT_POINTWISE_ARITH(BIN_F32) TT_POINTWISE_COMPARE(BIN_F32)
                TT_POINTWISE_MINMAX(BIN1_F32) TT_POINTWISE_LOGICAL(BIN1_F32)
                [BIN_DIV_TRUNC] = bin_f32_DIV_TRUNC, [BIN_DIV_FLOOR] = bin_f32_DIV_FLOOR},
    [TT_F64] = {TT_POINTWISE_ARITH(BIN_F64) TT_POINTWISE_COMPARE(BIN_F64)
                TT_POINTWISE_MINMAX(BIN1_F64) TT_POINTWISE_LOGICAL(BIN1_F64)
                [BIN_DIV_TRUNC] = bin_f64_DIV_TRUNC, [BIN_DIV_FLOOR] = bin_f64_DIV_FLOOR},
    [TT_I64] = ROW(i64),
    [TT_I32] = ROW(i32), [TT_U8] = ROW(u8),
    [TT_BOOL] = {[BIN_ADD] = add_b8, [BIN_MUL] = mul_b8, LOGIC_ROW(b8)},
};


static bool same_dense_operands(const tt_tensor *a, const tt_tensor *b)
{
    return a->dtype == b->dtype && (a->flags & b->flags & TT_TF_CONTIGUOUS) &&
           !((a->flags | b->flags) & TT_TF_HAS_SYM) && !a->storage->fake &&
           !b->storage->fake && a->ndim == b->ndim &&
           memcmp(a->sizes, b->sizes, sizeof(tt_size) * (size_t)a->ndim) == 0;
}


static tt_tensor *binary_fast(binop op, const tt_tensor *a, const tt_tensor *b,
                              const tt_value *alpha)
{
    tt_dtype dt = (tt_dtype)a->dtype;
    tt_dtype out_dt = is_compare(op) ? TT_BOOL : dt;
    tt_tensor *r = tt__new_contiguous(a, out_dt);
    if (!r)
        return NULL;
    uint64_t alpha_bits = 0;
    tt__store(&alpha_bits, dt, scalar_num(alpha));
    int64_t es = (int64_t)tt__dtype_size(dt);
    flat_job j = {bin_loops[dt][op], {tt__ptr(r), tt__ptr(a), tt__ptr(b)},
                  {(int64_t)tt__dtype_size(out_dt), es, es}, 3, &alpha_bits, NULL, false};
    run_flat(&j, tt__numel_concrete(r));
    return r;
}


/* True when x reads memory that out writes, other than element for
 * element (another view of the same storage, shifted or reordered): x
 * must then be read in full before out is written. */
static bool reads_overlap(const tt_tensor *out, const tt_tensor *x)
{
    if (x == out || !tt_same_storage(out, x))
        return false;
    return !(x->offset == out->offset && x->ndim == out->ndim &&
             memcmp(x->sizes, out->sizes, sizeof(tt_size) * (size_t)x->ndim) == 0 &&
             memcmp(x->strides, out->strides, sizeof(tt_size) * (size_t)x->ndim) == 0);
}

/* The eager fast path applies: real, contiguous operands of one dtype and
 * shape, a loop for that dtype, and none of the dtype rules below to
 * apply (integer true division, a fractional alpha on integers). */
static bool binary_fast_applies(binop op, const tt_tensor *a, const tt_tensor *b,
                                const tt_value *alpha)
{
    bool is_float = tt__dtype_is_float((tt_dtype)a->dtype);
    return same_dense_operands(a, b) && bin_loops[a->dtype][op] &&
           (is_float || (op != BIN_DIV && op != BIN_DIV_TRUNC && op != BIN_DIV_FLOOR &&
                         !divides(op) && a->dtype != TT_BOOL)) &&
           (!alpha || (is_float && alpha->kind != TT_V_BOOL));
}


/* PyTorch's dtype rules of a binary op: the dtype it computes in (*common),
 * or an error naming the op for a combination it refuses. */
static tt_status binary_dtype(binop op, const char *name, const tt_tensor *a,
                              const tt_tensor *b, const tt_value *b_scalar,
                              const tt_value *alpha, tt_dtype *common)
{
    if (op == BIN_POW && b_scalar && b_scalar->kind == TT_V_INT && b_scalar->u.i < 0 &&
        !tt_dtype_is_float((tt_dtype)a->dtype))
        /* As PyTorch (and NumPy): the result would not be an integer. */
        return tt_error(TT_EINVAL, "%s: integers to negative integer powers are not allowed "
                                   "(%s tensor to the power %lld); use a float exponent",
                        name, tt_dtype_name((tt_dtype)a->dtype), (long long)b_scalar->u.i);
    tt_dtype dt = b_scalar ? tt__result_type(1, &a, 1, b_scalar)
                           : tt__result_type(2, (const tt_tensor *[]){a, b}, 0, NULL);
    if ((op == BIN_DIV || op == BIN_ATAN2) && !tt_dtype_is_float(dt))
        dt = TT_F32; /* true division; atan2 of integers is a float */
    bool a_bool = a->dtype == TT_BOOL;
    bool b_bool = b_scalar ? b_scalar->kind == TT_V_BOOL : b->dtype == TT_BOOL;
    if (op == BIN_SUB && a_bool && b_bool)
        return tt_error(TT_EDTYPE, "%s: subtraction, the '-' operator, with two bool tensors "
                                   "is not supported; use logical xor instead", name);
    if (op == BIN_SUB && (a_bool || b_bool))
        /* PyTorch refuses a bool operand even when the other promotes the
         * result to a number: x - mask is almost always a mistaken ~mask. */
        return tt_error(TT_EDTYPE, "%s: argument '%s' (#%d): subtraction, the '-' operator, "
                                   "with a bool tensor is not supported; to invert a mask "
                                   "use logical not instead", name, a_bool ? "self" : "other",
                        a_bool ? 1 : 2);
    if (is_bitwise(op) && tt_dtype_is_float(dt))
        /* As PyTorch: bitwise ops are for integers and bool only. */
        return tt_error(TT_EDTYPE, "%s: argument '%s' (#%d): bitwise operations are not "
                                   "supported for %s; expects integer or bool tensors", name,
                        tt_dtype_is_float((tt_dtype)a->dtype) ? "self" : "other",
                        tt_dtype_is_float((tt_dtype)a->dtype) ? 1 : 2, tt_dtype_name(dt));
    if (op == BIN_POW && dt == TT_BOOL)
        return tt_error(TT_EDTYPE, "%s: argument 'self' (#1): not implemented for bool "
                                   "tensors (a bool base needs a number exponent)", name);
    if (divides(op) && dt == TT_BOOL)
        return tt_error(TT_EDTYPE, "%s: argument 'self' (#1): not implemented for bool "
                                   "tensors", name);
    if ((op == BIN_DIV_TRUNC || op == BIN_DIV_FLOOR) && dt == TT_BOOL)
        return tt_error(TT_EDTYPE, "%s: argument 'self' (#1): rounding_mode '%s' is not "
                                   "implemented for bool tensors", name,
                        op == BIN_DIV_TRUNC ? "trunc" : "floor");
    if (alpha && alpha->kind == TT_V_BOOL && dt != TT_BOOL)
        return tt_error(TT_EDTYPE, "%s: argument 'alpha': a bool alpha is only supported for "
                                   "bool results (the result is %s)", name, tt_dtype_name(dt));
    if (alpha && alpha->kind == TT_V_FLOAT && !tt_dtype_is_float(dt))
        return tt_error(TT_EINVAL, "%s: argument 'alpha': for integral input tensors, alpha "
                                   "must not be a floating point number (got %g)", name,
                        alpha->u.f);
    *common = dt;
    return TT_OK;
}

/* In place into `out`: the result (of the broadcast shape nd/sizes and
 * dtype out_dt) must have out's shape and fit its dtype. */
static bool has_sizes(const tt_tensor *t, int nd, const tt_size *sizes)
{
    bool same = nd == t->ndim;
    for (int d = 0; same && d < nd; d++)
        same = tt__sz_eq(sizes[d], t->sizes[d]);
    return same;
}

static tt_status check_inplace_target(const char *name, const tt_tensor *out, int nd,
                                      const tt_size *sizes, tt_dtype out_dt)
{
    if (!has_sizes(out, nd, sizes)) {
        char s1[256], s2[256];
        tt_size_list_str(nd, sizes, false, s2, sizeof s2);
        return tt_error(TT_ESHAPE, "%s_: output with shape %s doesn't match the broadcast "
                                   "shape %s", name, tt_shape_str(out, s1, sizeof s1), s2);
    }
    if (!can_cast(out_dt, (tt_dtype)out->dtype))
        return tt_error(TT_EDTYPE, "%s_: result type %s can't be cast to the desired output "
                                   "type %s", name, tt_dtype_name(out_dt),
                        tt_dtype_name((tt_dtype)out->dtype));
    return TT_OK;
}

static void find_zero(char **d, const int64_t *s, int64_t n, void *ctx)
{
    size_t es = tt_dtype_size(*(const tt_dtype *)ctx);
    static const char zero[8];
    for (int64_t k = 0; k < n; k++)
        if (!memcmp(d[0] + k * s[0], zero, es)) {
            *(tt_dtype *)ctx = TT_DTYPE_COUNT; /* found */
            return;
        }
}

/* An integer divisor with a zero in it: PyTorch raises ZeroDivisionError
 * (integers have no inf). */
static tt_status check_no_zero(binop op, const tt_tensor *b)
{
    tt_dtype dt = (tt_dtype)b->dtype;
    tt_status st = tt_for_each(1, (tt_tensor *[]){(tt_tensor *)b}, find_zero, &dt);
    if (!st && dt == TT_DTYPE_COUNT)
        st = tt_error(TT_EINVAL, "%s: argument 'other' (#2): integer division by zero "
                                 "(ZeroDivisionError)", tt__op_label(bin_ids[op]));
    return st;
}

/* Computes `op` of a and b into result (of the broadcast shape nd/sizes),
 * in the common dtype; a result of another dtype (in place into a wider
 * tensor) goes through a temporary, and so does writing in place into an
 * operand that overlaps it differently. */
static tt_status binary_compute(binop op, tt_tensor *result, const tt_tensor *a,
                                const tt_tensor *b, tt_dtype common, tt_dtype out_dt,
                                int nd, const tt_size *sizes, const tt_value *alpha,
                                bool inplace)
{
    tt_status st;
    tt_tensor *target = NULL, *ca = as_dtype(a, common), *cb = ca ? as_dtype(b, common) : NULL;
    if (!cb) {
        st = tt_errcode();
        goto done;
    }
    if ((op == BIN_DIV_TRUNC || op == BIN_DIV_FLOOR || divides(op)) &&
        !tt_dtype_is_float(common) && (st = check_no_zero(op, cb)))
        goto done;
    target = result;
    if ((tt_dtype)result->dtype != out_dt ||
        (inplace && (reads_overlap(result, ca) || reads_overlap(result, cb)))) {
        tt_size strides[TT_MAX_DIMS];
        tt__elementwise_strides(1, (const tt_tensor *[]){result}, nd, sizes, strides);
        target = tt__ops_new(false, nd, sizes, strides, out_dt);
        if (!target) {
            st = tt_errcode();
            goto done;
        }
    }
    tt_tensor xa, xb;
    tt__broadcast_alias(&xa, ca, nd, sizes);
    tt__broadcast_alias(&xb, cb, nd, sizes);
    uint64_t alpha_bits = 0;
    tt__store(&alpha_bits, common, scalar_num(alpha));
    /* xa, xb are only read (an in-place target overlapping them got a
     * separate one above). An f32 operand that is a transposed view of
     * the others' layout has a kernel of its own. */
    float alpha_f32;
    memcpy(&alpha_f32, &alpha_bits, sizeof alpha_f32);
    _Static_assert((int)BIN_ADD == TT_TB_ADD && (int)BIN_SUB == TT_TB_SUB &&
                   (int)BIN_MUL == TT_TB_MUL && (int)BIN_DIV == TT_TB_DIV,
                   "binop and the transposed kernel's ops agree");
    if (common == TT_F32 && op <= BIN_DIV &&
        tt__binary_transposed_f32((int)op, alpha_f32, target, &xa, &xb))
        st = TT_OK;
    else
        st = tt__for_each_in(3, 1, (tt_tensor *[]){target, &xa, &xb}, bin_loops[common][op],
                             &alpha_bits);
    if (!st && target != result)
        st = tt__copy_raw(result, target);
done:
    if (target != result)
        tt_release(target);
    tt_release(ca);
    tt_release(cb);
    return st;
}

/* Runs `op` on a and b (already checked: not NULL) into `out` (NULL:
 * allocate). b_scalar, when not NULL, replaces b by a Python number. For
 * fake operands it stops once the result's metadata is known, so it is the
 * fake kernel too. */
static tt_tensor *binary(binop op, const tt_tensor *a, const tt_tensor *b,
                         const tt_value *b_scalar, const tt_value *alpha, tt_tensor *out)
{
    if (!out && !b_scalar && binary_fast_applies(op, a, b, alpha))
        return binary_fast(op, a, b, alpha);
    const char *name = tt__op_label(bin_ids[op]);
    if (out && check_inplace_overlap(name, out, 2, (const tt_tensor *[]){a, b}))
        return NULL;
    tt_dtype common = TT_F32;
    if (binary_dtype(op, name, a, b, b_scalar, alpha, &common))
        return NULL;
    tt_dtype out_dt = is_compare(op) ? TT_BOOL : common;
    bool fake = a->storage->fake || (!b_scalar && b->storage->fake);
    tt_tensor *tmp_b = NULL, *result = NULL;
    if (b_scalar) {
        double v = b_scalar->kind == TT_V_FLOAT ? b_scalar->u.f
                 : b_scalar->kind == TT_V_BOOL ? b_scalar->u.b : (double)b_scalar->u.i;
        if (!(tmp_b = scalar_tensor(v, common, fake)))
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
        if (check_inplace_target(name, out, nd, sizes, out_dt))
            goto done;
        result = tt_retain(out);
    } else {
        tt__elementwise_strides(2, ins, nd, sizes, strides);
        if (!(result = tt__ops_new(fake, nd, sizes, strides, out_dt)))
            goto done;
    }
    if (!fake && tt_numel(result) > 0 &&
        binary_compute(op, result, a, b, common, out_dt, nd, sizes, alpha, out != NULL))
        result = tt_release(result);
done:
    tt_release(tmp_b);
    return result;
}


/* Kernel and meta of every binary overload: (self, other[, alpha]) where
 * other is a Tensor or a Scalar; the in-place forms write into self. */
static tt_status binary_kernel(tt_frame *f)
{
    const tt_op *op = tt_frame_op(f);
    binop b = (binop)KIND_OF(tt_frame_userdata(f));
    bool inplace = tt_schema_arg(tt_op_schema(op), 0)->is_write;
    tt_tensor *self, *other = NULL;
    tt_status st = tt_arg_tensor(f, 0, &self);
    const tt_value *ov = tt_frame_arg(f, 1);
    if (!st && ov->kind == TT_V_TENSOR)
        st = tt_arg_tensor(f, 1, &other);
    if (st)
        return st;
    /* alpha's kind matters (a float alpha is refused for integers even
     * when whole); the default 1 is no alpha at all. */
    const tt_value *alpha = tt_frame_nargs(f) > 2 ? tt_frame_arg(f, 2) : NULL;
    if (alpha && alpha->kind == TT_V_INT && alpha->u.i == 1)
        alpha = NULL;
    tt_tensor *r = binary(b, self, other, other ? NULL : ov, alpha, inplace ? self : NULL);
    return r ? tt_return(f, 0, r) : tt_errcode();
}


/* atan2.out: the op's result written into `out`, which already has the
 * broadcast shape (tt's tensors keep their sizes, so where PyTorch
 * resizes a wrong-shaped out, with a warning unless it is empty, tt
 * refuses it) and a dtype the result type casts to. out may be self or
 * other, not a partial overlap of them. Not differentiable, as PyTorch's
 * out= forms are not: the row has no derivative. */
static tt_status binary_out_kernel(tt_frame *f)
{
    binop b = (binop)KIND_OF(tt_frame_userdata(f));
    tt_tensor *self, *other, *out;
    tt_status st = tt_arg_tensor(f, 0, &self);
    if (!st)
        st = tt_arg_tensor(f, 1, &other);
    if (!st)
        st = tt_arg_tensor(f, 2, &out);
    if (st)
        return st;
    /* Checked here under this op's name; binary() then finds them met
     * (its own messages name the in-place form). */
    const char *name = tt__op_label(bin_ids[b]), *out_name = tt_op_name(tt_frame_op(f));
    const tt_tensor *ins[2] = {self, other};
    for (int i = -1; i < 2; i++)
        if (tt__check_write(out_name, out, i < 0 ? NULL : ins[i]))
            return tt_errcode();
    tt_dtype common;
    if (binary_dtype(b, name, self, other, NULL, NULL, &common))
        return tt_errcode();
    if (!can_cast(common, (tt_dtype)out->dtype))
        return tt_frame_fail(f, TT_EDTYPE, "argument 'out' (#3): result type %s can't be "
                                           "cast to the desired output type %s",
                             tt_dtype_name(common), tt_dtype_name((tt_dtype)out->dtype));
    int nd;
    tt_size sizes[TT_MAX_DIMS];
    if (tt__broadcast(name, 2, ins, (const char *[]){"self", "other"}, (const int[]){1, 2}, &nd,
                      sizes))
        return tt_errcode();
    if (!has_sizes(out, nd, sizes)) {
        char s1[256], s2[256];
        tt_size_list_str(nd, sizes, false, s2, sizeof s2);
        return tt_frame_fail(f, TT_ESHAPE, "argument 'out' (#3): expected the broadcast shape "
                                           "%s, got %s (tt does not resize an out tensor)",
                             s2, tt_shape_str(out, s1, sizeof s1));
    }
    tt_tensor *r = binary(b, self, other, NULL, NULL, out);
    return r ? tt_return(f, 0, r) : tt_errcode();
}

/* div with rounding_mode None (true division), "trunc" or "floor", of a
 * Tensor or a Scalar other, in place for div_. */
static tt_status div_mode_kernel(tt_frame *f)
{
    bool inplace = tt_schema_arg(tt_op_schema(tt_frame_op(f)), 0)->is_write;
    tt_tensor *self, *other = NULL;
    const char *mode = NULL;
    tt_status st = tt_arg_tensor(f, 0, &self);
    const tt_value *ov = tt_frame_arg(f, 1);
    if (!st && ov->kind == TT_V_TENSOR)
        st = tt_arg_tensor(f, 1, &other);
    if (!st && !tt_arg_is_none(f, 2))
        st = tt_arg_str(f, 2, &mode);
    if (st)
        return st;
    binop kind = BIN_DIV;
    if (mode && !strcmp(mode, "trunc"))
        kind = BIN_DIV_TRUNC;
    else if (mode && !strcmp(mode, "floor"))
        kind = BIN_DIV_FLOOR;
    else if (mode)
        return tt_frame_fail(f, TT_EINVAL, "argument 'rounding_mode' (#3): expected one of "
                                           "None, 'trunc' or 'floor', got '%s'", mode);
    tt_tensor *r = binary(kind, self, other, other ? NULL : ov, NULL, inplace ? self : NULL);
    return r ? tt_return(f, 0, r) : tt_errcode();
}

/* pow.Scalar: a Scalar base to a Tensor exponent. The base becomes a
 * 0-dim tensor of the call's result type (as where's Scalars). */
static tt_status pow_base_kernel(tt_frame *f)
{
    tt_tensor *e;
    tt_status st = tt_arg_tensor(f, 1, &e);
    if (st)
        return st;
    const tt_value *base = tt_frame_arg(f, 0);
    tt_dtype dt = tt__result_type(1, (const tt_tensor *[]){e}, 1, base);
    /* The result is contiguous whatever the exponent's layout (PyTorch's
     * pow.Scalar meta function allocates it so). */
    tt_tensor *b = scalar_tensor(scalar_num(base), dt, tt_is_fake(e));
    tt_tensor *out = b ? tt__ops_new(tt_is_fake(e), e->ndim, e->sizes, NULL, dt) : NULL;
    tt_tensor *r = out ? binary(BIN_POW, b, e, NULL, NULL, out) : NULL;
    tt_release(b);
    tt_release(out);
    return r ? tt_return(f, 0, r) : tt_errcode();
}


static tt_status setup_alpha(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                             const tt_value *out, int nout)
{
    (void)nin, (void)out, (void)nout;
    return save_scalar_arg(ctx, in, 2);
}

/* mul/div.Scalar: the rule needs the Scalar only. */
static tt_status setup_scalar_other(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                                    const tt_value *out, int nout)
{
    (void)nin, (void)out, (void)nout;
    return save_scalar_arg(ctx, in, 1);
}

/* pow.Tensor_Scalar: the Scalar and self. */
static tt_status setup_pow_scalar(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                                  const tt_value *out, int nout)
{
    tt_status st = save_scalar_arg(ctx, in, 1);
    return st ? st : save_some(ctx, in, nin, out, nout, 1u);
}

/* mul: each input's gradient needs the other input. */
static tt_status setup_mul(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                           const tt_value *out, int nout)
{
    return save_some(ctx, in, nin, out, nout, (NEED(1) ? 1u : 0u) | (NEED(0) ? 2u : 0u));
}

/* div: other, and self when other needs a gradient; div_ has no old self
 * (setup runs after the write), so it keeps the result instead. */
static tt_status setup_div(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                           const tt_value *out, int nout)
{
    bool inplace = tt_schema_arg(tt_op_schema(tt_ctx_op(ctx)), 0)->is_write;
    unsigned keep = 2u | (NEED(1) ? (inplace ? KEEP_OUT : 1u) : 0u);
    return save_some(ctx, in, nin, out, nout, keep);
}

/* add/sub.Tensor and their in-place forms: d/dself = g, d/dother = +-alpha g. */
static tt_status add_sub_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                  tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    double alpha;
    tt_status st = tt_ctx_get_float(ctx, "s", &alpha);
    if (st)
        return st;
    if (KIND_OF(tt_ctx_userdata(ctx)) == BIN_SUB)
        alpha = -alpha;
    if ((st = tt__put_grad(ctx, gi, 0, tt_retain(g[0]))) || !NEED(1))
        return st;
    return tt__put_grad(ctx, gi, 1, alpha == 1 ? tt_retain(g[0]) : tt_mul_scalar(g[0], alpha));
}

/* add/sub.Scalar: only self is a tensor. */
static tt_status pass_through_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                       tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    return tt__put_grad(ctx, gi, 0, tt_retain(g[0]));
}

static tt_status mul_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                              tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    tt_status st = tt__put_grad(ctx, gi, 0, NEED(0) ? tt_mul(g[0], SAVED(1)) : NULL);
    return st ? st : tt__put_grad(ctx, gi, 1, NEED(1) ? tt_mul(g[0], SAVED(0)) : NULL);
}

/* mul.Scalar, mul_.Scalar: d/dself = other * g. */
static tt_status mul_scalar_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                     tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    double v;
    tt_status st = tt_ctx_get_float(ctx, "s", &v);
    return st ? st : tt__put_grad(ctx, gi, 0, tt_mul_scalar(g[0], v));
}

static tt_status div_scalar_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                     tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    double v;
    tt_status st = tt_ctx_get_float(ctx, "s", &v);
    return st ? st : tt__put_grad(ctx, gi, 0, tt_div_scalar(g[0], v));
}

/* div and div_: d/dself = g / other, d/dother = -g * (self / other) /
 * other, where div_ saved self / other (its result) and div saved self. */
static tt_status div_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                              tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    tt_tensor *other = SAVED(1), *out = SAVED(2);
    tt_status st = tt__put_grad(ctx, gi, 0, NEED(0) ? tt_div(g[0], other) : NULL);
    if (st || !NEED(1))
        return st;
    tt_scope_begin();
    tt_tensor *q = out ? out : tt_div(SAVED(0), other);
    tt_tensor *r = tt_neg(tt_div(tt_mul(g[0], q), other));
    tt_keep(r);
    tt_scope_end();
    return tt__put_grad(ctx, gi, 1, r);
}

/* pow.Tensor_Scalar: d/dself = e * self^(e-1) * g (zeros when e == 0). */
static tt_status pow_scalar_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                     tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    double e;
    tt_status st = tt_ctx_get_float(ctx, "s", &e);
    if (st)
        return st;
    if (e == 0)
        return tt__put_grad(ctx, gi, 0, tt_mul_scalar(g[0], 0.0));
    tt_scope_begin();
    tt_tensor *r = tt_mul(g[0], tt_mul_scalar(tt_pow_scalar(SAVED(0), e - 1), e));
    tt_keep(r);
    tt_scope_end();
    return tt__put_grad(ctx, gi, 0, r);
}

/* pow.Tensor_Tensor, PyTorch's rules with their edge cases: d/dself =
 * g * e * self^(e-1), zero where e == 0 (so 0^0 gives 0, not 0 * inf);
 * d/dexp = g * out * log(self), zero where self == 0 and e >= 0 (the
 * limit), and so ±inf where self == 0 and e < 0 (inf * -inf) and NaN for
 * a negative base (log of a negative number). */
static tt_status pow_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                              tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    tt_tensor *self = SAVED(0), *ex = SAVED(1), *out = SAVED(2);
    tt_status st = TT_OK;
    tt_scope_begin();
    tt_tensor *zero = tt_scalar(0, tt_dtype_of(g[0]));
    if (NEED(0)) {
        tt_tensor *d = tt_mul(g[0], tt_mul(ex, tt_pow(self, tt_sub_scalar(ex, 1))));
        st = tt__put_grad(ctx, gi, 0, tt_keep(tt_where(eq_scalar(ex, 0), zero, d)));
    }
    if (!st && NEED(1)) {
        tt_tensor *term = tt_mul(g[0], tt_mul(out, tt_log(self)));
        tt_tensor *limit = tt_mul(eq_scalar(self, 0), ge_scalar(ex, 0));
        st = tt__put_grad(ctx, gi, 1, tt_keep(tt_where(limit, zero, term)));
    }
    tt_scope_end();
    return st;
}


/* div with a rounding mode: "mode" 0 for None (then div's own setup, of
 * the Tensor or the Scalar form), 1 for a rounding mode (no tensors). */
static tt_status setup_div_mode(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                                const tt_value *out, int nout)
{
    bool rounding = nin > 2 && in[2].kind == TT_V_STR;
    tt_status st = tt_ctx_save_int(ctx, "mode", rounding);
    if (st || rounding)
        return st;
    return in[1].kind == TT_V_TENSOR ? setup_div(ctx, in, nin, out, nout)
                                     : setup_scalar_other(ctx, in, nin, out, nout);
}

/* Rounding is piecewise constant: zero gradients (as PyTorch); None is
 * true division. */
static tt_status div_mode_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                   tt_tensor **gi, int ni)
{
    int64_t rounding = 0;
    double v;
    tt_status st = tt_ctx_get_int(ctx, "mode", &rounding);
    if (st)
        return st;
    if (!rounding) {
        bool scalar = tt_ctx_get_float(ctx, "s", &v) == TT_OK;
        tt_clear_error();
        return scalar ? div_scalar_backward(ctx, g, ng, gi, ni) : div_backward(ctx, g, ng, gi, ni);
    }
    for (int i = 0; i < 2 && !st; i++)
        if (NEED(i))
            st = tt__put_grad(ctx, gi, i, tt_mul_scalar(g[0], 0.0));
    return st;
}

/* pow.Scalar: the base (as "s"), the exponent and the result. */
static tt_status setup_pow_base(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                                const tt_value *out, int nout)
{
    tt_status st = save_scalar_arg(ctx, in, 0);
    return st ? st : save_some(ctx, in, nin, out, nout, 1u | KEEP_OUT);
}

/* pow.Scalar: d/dexp = g * out * log(base); for a base of 0, zero where
 * the exponent is >= 0 (the limit), out * log 0 = -inf elsewhere, as
 * PyTorch's pow_backward_exponent. */
static tt_status pow_base_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                   tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    double base;
    tt_status st = tt_ctx_get_float(ctx, "s", &base);
    if (st || !NEED(1))
        return st;
    tt_scope_begin();
    tt_tensor *r = tt_mul(g[0], tt_mul_scalar(SAVED(1), log(base)));
    if (base == 0)
        r = tt_where(ge_scalar(SAVED(0), 0), tt_scalar(0, tt_dtype_of(g[0])), r);
    st = tt__put_grad(ctx, gi, 1, tt_keep(r));
    tt_scope_end();
    return st;
}

/* fmod/remainder.Tensor: both operands, when other needs a gradient. */
static tt_status setup_mod(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                           const tt_value *out, int nout)
{
    return save_some(ctx, in, nin, out, nout, NEED(1) ? 1u | 2u : 0u);
}

/* derivatives.yaml: d/dself = g; d/dother = -g * div(self, other) rounded
 * as the op rounds its quotient (trunc for fmod, floor for remainder). */
static tt_status mod_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                              tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    tt_status st = tt__put_grad(ctx, gi, 0, NEED(0) ? tt_retain(g[0]) : NULL);
    if (st || !NEED(1))
        return st;
    bool fmod_kind = KIND_OF(tt_ctx_userdata(ctx)) == BIN_FMOD;
    tt_scope_begin();
    tt_tensor *q = tt_div_mode(SAVED(0), SAVED(1), fmod_kind ? "trunc" : "floor");
    tt_tensor *r = tt_keep(tt_neg(tt_mul(g[0], q)));
    tt_scope_end();
    return tt__put_grad(ctx, gi, 1, r);
}

/* atan2(y, x): d/dy = g x / (x^2 + y^2), d/dx = -g y / (x^2 + y^2). */
static tt_status atan2_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    tt_tensor *y = SAVED(0), *x = SAVED(1);
    tt_status st = TT_OK;
    tt_scope_begin();
    tt_tensor *gr = tt_div(g[0], tt_add(tt_mul(x, x), tt_mul(y, y)));
    if (NEED(0))
        st = tt__put_grad(ctx, gi, 0, tt_keep(tt_mul(gr, x)));
    if (!st && NEED(1))
        st = tt__put_grad(ctx, gi, 1, tt_keep(tt_neg(tt_mul(gr, y))));
    tt_scope_end();
    return st;
}

/* maximum/minimum: both operands. */
static tt_status setup_minmax(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                              const tt_value *out, int nout)
{
    return save_some(ctx, in, nin, out, nout, 1u | 2u);
}

/* PyTorch's formulas: g goes to the operand that won, half to each where
 * they are equal; where either is NaN (no comparison holds) both get g.
 * For maximum, d/dself = where(self == other, g / 2, g) masked to 0
 * where self < other, and d/dother the same masked where self > other;
 * minimum swaps the masks. */
static tt_status minmax_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                 tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    tt_tensor *a = SAVED(0), *b = SAVED(1);
    bool is_max = KIND_OF(tt_ctx_userdata(ctx)) == BIN_MAXIMUM;
    tt_status st = TT_OK;
    tt_scope_begin();
    tt_tensor *split = tt_where(tt_eq(a, b), tt_mul_scalar(g[0], 0.5), g[0]);
    if (NEED(0))
        st = tt__put_grad(ctx, gi, 0,
                          tt_keep(tt_where_scalar(is_max ? tt_lt(a, b) : tt_gt(a, b), 0, split)));
    if (!st && NEED(1))
        st = tt__put_grad(ctx, gi, 1,
                          tt_keep(tt_where_scalar(is_max ? tt_gt(a, b) : tt_lt(a, b), 0, split)));
    tt_scope_end();
    return st;
}


#undef TT__FAMILY_BINARY
#define TT__FAMILY_BINARY TT__ROW
static const tt__builtin_row rows[] = {TT__FAMILY_ROWS};

tt_status tt__register_binary(tt_library *lib)
{
    return TT__DEFINE_ROWS(lib, rows);
}

/* ---------------------------------------------------------- typed wrappers */

/* Each binary row's data (its kind), at compile time: a wrapper names only
 * its op's id, and the table says which kind of op that is. */
#define ROW_KIND(id, sch, k, fk, bw, setup, data, flags) [TT_OP_##id] = (int8_t)(data),
#undef TT__FAMILY_BINARY
#define TT__FAMILY_BINARY ROW_KIND
static const int8_t row_kind[TT_OP_COUNT] = {TT__FAMILY_ROWS};
#undef ROW_KIND

/* The fast path: no mode, grad or fake tensor in play, so the kernel's
 * work runs directly; otherwise the call goes through the dispatcher. */
static tt_tensor *bin_call(tt_builtin_id id, const tt_tensor *a, const tt_tensor *b,
                           double alpha)
{
    binop op = (binop)row_kind[id];
    const tt_tensor *ts[2] = {a, b};
    /* A whole alpha travels as an int, as a C caller of tt_add_scaled on
     * integer tensors means it. */
    tt_value av = scalar_value(alpha);
    if (tt__fast_path(id, 2, ts))
        return binary(op, a, b, NULL, alpha == 1 ? NULL : &av, NULL);
    /* alpha travels only when it is not the default, so graphs read
     * add(a, b) as PyTorch's do. */
    if ((op == BIN_ADD || op == BIN_SUB) && alpha != 1)
        return tt__call_op(id, TT_ARGS(tt_v_tensor(a), tt_v_tensor(b), av));
    return tt__call_op(id, TT_ARGS(tt_v_tensor(a), tt_v_tensor(b)));
}

static tt_tensor *bin_scalar_call(tt_builtin_id id, const tt_tensor *a, double b)
{
    tt_value v = scalar_value(b);
    if (tt__fast_path(id, 1, &a))
        return binary((binop)row_kind[id], a, NULL, &v, NULL, NULL);
    return tt__call_op(id, TT_ARGS(tt_v_tensor(a), v));
}

/* In place: the result is `a` itself, so only the status is returned. */
static tt_status bin_inplace(tt_builtin_id id, tt_tensor *a, const tt_tensor *b,
                             const tt_value *b_scalar, double alpha)
{
    binop op = (binop)row_kind[id];
    const tt_tensor *ts[2] = {a, b};
    tt_value av = scalar_value(alpha);
    if (tt__fast_path(id, b_scalar ? 1 : 2, ts)) {
        tt_tensor *r = binary(op, a, b, b_scalar, alpha == 1 ? NULL : &av, a);
        if (!r)
            return tt_errcode();
        tt_bump_version(a);
        tt_release(r);
        return TT_OK;
    }
    tt_value other = b_scalar ? *b_scalar : tt_v_tensor(b);
    if ((op == BIN_ADD || op == BIN_SUB) && alpha != 1)
        return tt__call_op_status(id, TT_ARGS(tt_v_tensor(a), other, av));
    return tt__call_op_status(id, TT_ARGS(tt_v_tensor(a), other));
}


#define BIN_WRAPPER(fn, id)                                                    \
    tt_tensor *fn(const tt_tensor *a, const tt_tensor *b) { return bin_call(id, a, b, 1.0); }
BIN_WRAPPER(tt_add, TT_OP_ADD_TENSOR)
BIN_WRAPPER(tt_sub, TT_OP_SUB_TENSOR)
BIN_WRAPPER(tt_mul, TT_OP_MUL_TENSOR)
BIN_WRAPPER(tt_div, TT_OP_DIV_TENSOR)
BIN_WRAPPER(tt_pow, TT_OP_POW_TENSOR_TENSOR)
BIN_WRAPPER(tt_eq, TT_OP_EQ_TENSOR)
BIN_WRAPPER(tt_ne, TT_OP_NE_TENSOR)
BIN_WRAPPER(tt_lt, TT_OP_LT_TENSOR)
BIN_WRAPPER(tt_le, TT_OP_LE_TENSOR)
BIN_WRAPPER(tt_gt, TT_OP_GT_TENSOR)
BIN_WRAPPER(tt_ge, TT_OP_GE_TENSOR)

tt_tensor *tt_add_scaled(const tt_tensor *a, const tt_tensor *b, double alpha)
{
    return bin_call(TT_OP_ADD_TENSOR, a, b, alpha);
}

#define SCALAR_WRAPPER(fn, id)                                                 \
    tt_tensor *fn(const tt_tensor *a, double b) { return bin_scalar_call(id, a, b); }
SCALAR_WRAPPER(tt_add_scalar, TT_OP_ADD_SCALAR)
SCALAR_WRAPPER(tt_sub_scalar, TT_OP_SUB_SCALAR)
SCALAR_WRAPPER(tt_mul_scalar, TT_OP_MUL_SCALAR)
SCALAR_WRAPPER(tt_div_scalar, TT_OP_DIV_SCALAR)
SCALAR_WRAPPER(tt_pow_scalar, TT_OP_POW_TENSOR_SCALAR)
SCALAR_WRAPPER(tt_fmod_scalar, TT_OP_FMOD_SCALAR)
SCALAR_WRAPPER(tt_remainder_scalar, TT_OP_REMAINDER_SCALAR)
BIN_WRAPPER(tt_fmod, TT_OP_FMOD_TENSOR)
BIN_WRAPPER(tt_remainder, TT_OP_REMAINDER_TENSOR)
BIN_WRAPPER(tt_atan2, TT_OP_ATAN2)

#define INPLACE_WRAPPER(fn, id)                                                \
    tt_status fn(tt_tensor *a, const tt_tensor *b) { return bin_inplace(id, a, b, NULL, 1.0); }
INPLACE_WRAPPER(tt_add_, TT_OP_ADD__TENSOR)
INPLACE_WRAPPER(tt_sub_, TT_OP_SUB__TENSOR)
INPLACE_WRAPPER(tt_mul_, TT_OP_MUL__TENSOR)
INPLACE_WRAPPER(tt_div_, TT_OP_DIV__TENSOR)

tt_status tt_atan2_out(tt_tensor *out, const tt_tensor *a, const tt_tensor *b)
{
    return tt__call_op_status(TT_OP_ATAN2_OUT,
                              TT_ARGS(tt_v_tensor(a), tt_v_tensor(b), tt_v_tensor(out)));
}

tt_status tt_add_scaled_(tt_tensor *a, const tt_tensor *b, double alpha)
{
    return bin_inplace(TT_OP_ADD__TENSOR, a, b, NULL, alpha);
}

tt_status tt_mul_scalar_(tt_tensor *a, double b)
{
    tt_value v = scalar_value(b);
    return bin_inplace(TT_OP_MUL__SCALAR, a, NULL, &v, 1.0);
}

#define SCALAR_INPLACE_WRAPPER(fn, id)                                         \
    tt_status fn(tt_tensor *a, double b)                                       \
    {                                                                          \
        tt_value v = scalar_value(b);                                          \
        return bin_inplace(id, a, NULL, &v, 1.0);                              \
    }
SCALAR_INPLACE_WRAPPER(tt_add_scalar_, TT_OP_ADD__SCALAR)
SCALAR_INPLACE_WRAPPER(tt_sub_scalar_, TT_OP_SUB__SCALAR)
SCALAR_INPLACE_WRAPPER(tt_div_scalar_, TT_OP_DIV__SCALAR)

/* The newer argument forms go through the dispatcher (boxed): they are not
 * on any hot path. A NULL rounding mode is None. */
tt_tensor *tt_div_mode(const tt_tensor *a, const tt_tensor *b, const char *rounding_mode)
{
    return tt__call_op(TT_OP_DIV_TENSOR_MODE,
                       TT_ARGS(tt_v_tensor(a), tt_v_tensor(b),
                               rounding_mode ? tt_v_str(rounding_mode) : tt_v_none()));
}

tt_tensor *tt_div_scalar_mode(const tt_tensor *a, double b, const char *rounding_mode)
{
    return tt__call_op(TT_OP_DIV_SCALAR_MODE,
                       TT_ARGS(tt_v_tensor(a), scalar_value(b),
                               rounding_mode ? tt_v_str(rounding_mode) : tt_v_none()));
}

tt_tensor *tt_scalar_pow(double base, const tt_tensor *exponent)
{
    return tt__call_op(TT_OP_POW_SCALAR, TT_ARGS(scalar_value(base), tt_v_tensor(exponent)));
}


/* ------------------------------ maximum, minimum, logical and bitwise ops */

BIN_WRAPPER(tt_maximum, TT_OP_MAXIMUM)
BIN_WRAPPER(tt_minimum, TT_OP_MINIMUM)
BIN_WRAPPER(tt_logical_and, TT_OP_LOGICAL_AND)
BIN_WRAPPER(tt_logical_or, TT_OP_LOGICAL_OR)
BIN_WRAPPER(tt_logical_xor, TT_OP_LOGICAL_XOR)
BIN_WRAPPER(tt_bitwise_and, TT_OP_BITWISE_AND_TENSOR)
BIN_WRAPPER(tt_bitwise_or, TT_OP_BITWISE_OR_TENSOR)
BIN_WRAPPER(tt_bitwise_xor, TT_OP_BITWISE_XOR_TENSOR)

/* The bitwise Scalar overloads take an integer (a double would round one
 * above 2^53). */
static tt_tensor *bitwise_scalar_call(tt_builtin_id id, const tt_tensor *a, int64_t b)
{
    tt_value v = tt_v_int(b);
    if (tt__fast_path(id, 1, &a))
        return binary((binop)row_kind[id], a, NULL, &v, NULL, NULL);
    return tt__call_op(id, TT_ARGS(tt_v_tensor(a), v));
}

tt_tensor *tt_bitwise_and_scalar(const tt_tensor *a, int64_t b)
{
    return bitwise_scalar_call(TT_OP_BITWISE_AND_SCALAR, a, b);
}

tt_tensor *tt_bitwise_or_scalar(const tt_tensor *a, int64_t b)
{
    return bitwise_scalar_call(TT_OP_BITWISE_OR_SCALAR, a, b);
}

tt_tensor *tt_bitwise_xor_scalar(const tt_tensor *a, int64_t b)
{
    return bitwise_scalar_call(TT_OP_BITWISE_XOR_SCALAR, a, b);
}
