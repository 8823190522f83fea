/* Built-in ops: elementwise arithmetic, comparisons, where, clamp, and the
 * unary math functions, with their in-place forms.
 *
 * One function per op kind computes the output's metadata (broadcast
 * shape, PyTorch's result dtype and output strides) and allocates it; for
 * fake inputs it stops there, so the same code is the real kernel and the
 * fake (meta) kernel, and they cannot disagree. Loops run in the common
 * dtype over a contiguous inner dimension (see tt_for_each). */
#include "ops_impl.h"
#include "pointwise_ops.h"
#include "transposed_binary.h"
#include "vec_math.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* BIN_DIV_TRUNC and BIN_DIV_FLOOR are div with a rounding mode; the
 * comparisons come last (is_compare). */
/* The kinds of the pointwise list (ops/pointwise_ops.h), with div's
 * rounding modes between arithmetic and comparisons. */
#define BIN_KIND(K, ...) BIN_##K,
typedef enum {
    TT_POINTWISE_ARITH(BIN_KIND)
    BIN_DIV_TRUNC, BIN_DIV_FLOOR,
    TT_POINTWISE_COMPARE(BIN_KIND)
    BIN_COUNT
} binop;
#undef BIN_KIND

/* Each kind's Tensor overload: whose name its errors carry. */
#define BIN_ID(K, TROW, ...) [BIN_##K] = TT_OP_##TROW,
static const tt_builtin_id bin_ids[BIN_COUNT] = {
    TT_POINTWISE_ARITH(BIN_ID) TT_POINTWISE_COMPARE(BIN_ID)
    [BIN_DIV_TRUNC] = TT_OP_DIV_TENSOR, [BIN_DIV_FLOOR] = TT_OP_DIV_TENSOR,
};
#undef BIN_ID

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

#define ROW(SUF)                                                               \
    {add_##SUF, sub_##SUF, mul_##SUF, div_##SUF, pow_##SUF, divt_##SUF,        \
     divf_##SUF, eq_##SUF, ne_##SUF, lt_##SUF, le_##SUF, gt_##SUF, ge_##SUF}
/* [dtype][op]; NULL where the combination is refused before a loop runs. */
static const tt_loop_fn bin_loops[TT_DTYPE_COUNT][BIN_COUNT] = {
    [TT_F32] = {TT_POINTWISE_ARITH(BIN_F32) TT_POINTWISE_COMPARE(BIN_F32)
                [BIN_DIV_TRUNC] = bin_f32_DIV_TRUNC, [BIN_DIV_FLOOR] = bin_f32_DIV_FLOOR},
    [TT_F64] = {TT_POINTWISE_ARITH(BIN_F64) TT_POINTWISE_COMPARE(BIN_F64)
                [BIN_DIV_TRUNC] = bin_f64_DIV_TRUNC, [BIN_DIV_FLOOR] = bin_f64_DIV_FLOOR},
    [TT_I64] = ROW(i64),
    [TT_I32] = ROW(i32), [TT_U8] = ROW(u8),
    [TT_BOOL] = {add_b8, NULL, mul_b8, NULL, NULL, NULL, NULL, eq_b8, ne_b8,
                 lt_b8, le_b8, gt_b8, ge_b8},
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

/* The common eager case gets a short path: real, contiguous operands of
 * one dtype and shape. The output is contiguous (what the general rules
 * give here too) and the loop runs over one flat range, split across
 * threads when large. */
typedef struct {
    tt_loop_fn loop;
    char *data[3];
    int64_t strides[3];
    int nops;
    void *ctx;
    /* The output outgrows the cache (run_flat decides): a loop that can
     * write around the cache itself is told so through *streams; for the
     * others flat_chunk stages the output and streams it out. */
    bool *streams;
    bool stage;
} flat_job;

/* Elements per staging block of a streamed chunk: small, so that reading
 * the inputs and streaming the output overlap (in blocks of 1,024
 * elements the two phases take turns and the add gained little). */
#define STREAM_BLOCK 128

/* A streamed chunk: the loop writes each block into a buffer on the
 * stack, which tt__stream_copy then writes out with non-temporal stores.
 * A plain store first reads the output's line into the cache (a quarter
 * of an add's memory traffic, a third of a unary op's) only to evict it
 * again; the copy from L1 costs far less than that read. */
static void flat_chunk_streamed(const flat_job *j, char **d, int64_t n)
{
    _Alignas(64) char buf[STREAM_BLOCK * 8]; /* 8: the widest element */
    int64_t es = j->strides[0];
    char *out = d[0];
    d[0] = buf;
    for (int64_t done = 0; done < n; done += STREAM_BLOCK) {
        int64_t m = n - done < STREAM_BLOCK ? n - done : STREAM_BLOCK;
        j->loop(d, j->strides, m, j->ctx);
        tt__stream_copy(out + done * es, buf, (size_t)(m * es));
        for (int k = 1; k < j->nops; k++)
            d[k] += m * j->strides[k];
    }
    tt__stream_fence();
}

static void flat_chunk(int64_t begin, int64_t end, void *vjob)
{
    const flat_job *j = vjob;
    char *d[3];
    for (int k = 0; k < j->nops; k++)
        d[k] = j->data[k] + begin * j->strides[k];
    if (j->stage) {
        flat_chunk_streamed(j, d, end - begin);
    } else {
        j->loop(d, j->strides, end - begin, j->ctx);
        if (j->streams && *j->streams)
            tt__stream_fence();
    }
}

#define FLAT_GRAIN 32768

/* Streams the output when the operands together outgrow the last-level
 * cache: the output cannot still be cached when the next op reads it, so
 * there is nothing to lose by not caching it. */
static void run_flat(flat_job *j, int64_t n)
{
    int64_t bytes = 0;
    for (int k = 0; k < j->nops; k++)
        bytes += n * j->strides[k];
    bool big = j->strides[0] <= 8 && tt__stream_worthwhile(bytes);
    if (j->streams)
        *j->streams = big;
    else
        j->stage = big;
    if (n <= FLAT_GRAIN)
        flat_chunk(0, n, j);
    else
        tt_parallel_for(n, FLAT_GRAIN, flat_chunk, j);
}

static bool same_dense_operands(const tt_tensor *a, const tt_tensor *b)
{
    return a->dtype == b->dtype && (a->flags & b->flags & TT_TF_CONTIGUOUS) &&
           !((a->flags | b->flags) & TT_TF_HAS_SYM) && !a->storage->fake &&
           !b->storage->fake && a->ndim == b->ndim &&
           memcmp(a->sizes, b->sizes, sizeof(tt_size) * (size_t)a->ndim) == 0;
}

/* A Scalar's value as a double (alpha NULL: the default 1). */
static double scalar_num(const tt_value *v)
{
    return !v ? 1.0 : v->kind == TT_V_FLOAT ? v->u.f : v->kind == TT_V_BOOL ? v->u.b
                                                                         : (double)v->u.i;
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
    int64_t es = (int64_t)tt_dtype_size(dt);
    flat_job j = {bin_loops[dt][op], {tt__ptr(r), tt__ptr(a), tt__ptr(b)},
                  {(int64_t)tt_dtype_size(out_dt), es, es}, 3, &alpha_bits, NULL, false};
    run_flat(&j, tt_numel(r));
    return r;
}

/* PyTorch's checks of an in-place write into out (tt__check_write): out
 * may not have elements sharing memory (an expanded tensor: the result
 * would depend on the order of the writes), and no input may overlap it
 * other than exactly (x.add_(x) is fine, x[1:].add_(x[:-1]) is not). `op`
 * is the Tensor overload's label; the message names the in-place op. */
static tt_status check_inplace_overlap(const char *op, const tt_tensor *out, int n,
                                       const tt_tensor *const *ins)
{
    char name[64];
    snprintf(name, sizeof name, "%s_", op);
    tt_status st = tt__check_write(name, out, NULL);
    for (int i = 0; i < n && !st; i++)
        if (ins[i])
            st = tt__check_write(name, out, ins[i]);
    return st;
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
    bool is_float = tt_dtype_is_float((tt_dtype)a->dtype);
    return same_dense_operands(a, b) && bin_loops[a->dtype][op] &&
           (is_float || (op != BIN_DIV && op != BIN_DIV_TRUNC && op != BIN_DIV_FLOOR &&
                         a->dtype != TT_BOOL)) &&
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
    if (op == BIN_DIV && !tt_dtype_is_float(dt))
        dt = TT_F32; /* true division */
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
    if (op == BIN_POW && dt == TT_BOOL)
        return tt_error(TT_EDTYPE, "%s: argument 'self' (#1): not implemented for bool "
                                   "tensors (a bool base needs a number exponent)", name);
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
static tt_status check_inplace_target(const char *name, const tt_tensor *out, int nd,
                                      const tt_size *sizes, tt_dtype out_dt)
{
    bool same = nd == out->ndim;
    for (int d = 0; same && d < nd; d++)
        same = tt__sz_eq(sizes[d], out->sizes[d]);
    if (!same) {
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
static tt_status check_no_zero(const tt_tensor *b)
{
    tt_dtype dt = (tt_dtype)b->dtype;
    tt_status st = tt_for_each(1, (tt_tensor *[]){(tt_tensor *)b}, find_zero, &dt);
    if (!st && dt == TT_DTYPE_COUNT)
        st = tt_error(TT_EINVAL, "%s: argument 'other' (#2): integer division by zero "
                                 "(ZeroDivisionError)", tt__op_label(TT_OP_DIV_TENSOR));
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
    if ((op == BIN_DIV_TRUNC || op == BIN_DIV_FLOOR) && !tt_dtype_is_float(common) &&
        (st = check_no_zero(cb)))
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

/* Ops whose integer inputs give a float result (PyTorch's int-to-float). */
static bool un_floating(unop op)
{
    return op != UN_NEG && op != UN_RELU && op != UN_ABS && op != UN_SIGN;
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
    UNARY_LOOP(sign_##SUF, T, (T)((a > 0) - (a < 0)))

INT_UNARY(i64, int64_t, uint64_t)
INT_UNARY(i32, int32_t, uint32_t)
UNARY_LOOP(neg_u8, uint8_t, -a)
UNARY_LOOP(relu_u8, uint8_t, a)
UNARY_LOOP(abs_u8, uint8_t, a)
UNARY_LOOP(sign_u8, uint8_t, a > 0)
UNARY_LOOP(sign_b8, bool, a)

#define UN_F32(K, ...) [UN_##K] = un_f32_##K,
#define UN_F64(K, ...) [UN_##K] = un_f64_##K,
#define IROW(SUF)                                                              \
    {[UN_NEG] = neg_##SUF, [UN_RELU] = relu_##SUF, [UN_ABS] = abs_##SUF,      \
     [UN_SIGN] = sign_##SUF}
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
    if ((op == UN_GELU || op == UN_GELU_TANH) && !tt_dtype_is_float(dt)) {
        /* PyTorch has no integer gelu (no int-to-float promotion here). */
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

/* ---------------------------------------------------------------- kernels */

/* The kind of op an elementwise row serves: the row's data
 * (runtime/builtin_ops.h), which kernels get through tt_frame_userdata and
 * backward rules through tt_ctx_userdata. */
#define KIND_OF(userdata) ((int)(intptr_t)(userdata))

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

/* gelu's derivative as an op of its own (as aten's gelu_backward), so the
 * backward of gelu stays one node in a traced graph. */
typedef struct {
    tt_dtype dt;
    bool tanh;
} gelu_ctx;

static void gelu_backward_loop(char **d, const int64_t *s, int64_t n, void *vctx)
{
    const gelu_ctx *c = vctx;
    if (c->dt == TT_F32 && s[0] == 4 && s[1] == 4 && s[2] == 4 &&
        tt__vec2_f32(c->tanh ? TT_VEC2_GELU_TANH_BACKWARD : TT_VEC2_GELU_BACKWARD,
                     (float *)d[0], (const float *)d[1], (const float *)d[2], n))
        return;
    for (int64_t k = 0; k < n; k++) {
        double g = tt__load(d[1] + k * s[1], c->dt), x = tt__load(d[2] + k * s[2], c->dt), dy;
        if (c->tanh) { /* PyTorch's GeluBackwardKernelImpl, tanh branch */
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
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &g)) || (st = tt_arg_tensor(f, 1, &x)) ||
        (st = gelu_kind(f, 2, &kind)))
        return st;
    const tt_tensor *ins[2] = {g, x};
    int nd;
    tt_size sizes[TT_MAX_DIMS], strides[TT_MAX_DIMS];
    if (tt__broadcast(tt__op_label(TT_OP_GELU_BACKWARD), 2, ins, (const char *[]){"grad_output", "self"},
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
            gelu_ctx c = {dt, kind == UN_GELU_TANH};
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

/* ------------------------------------------------------------ derivatives */

/* Backward rules, written with ops so that a tracer records the backward
 * pass like the forward one. A gradient of the broadcast shape is summed
 * back to each input's shape by the engine, so no rule here deals with
 * broadcasting. Slots are argument positions. */

#define NEED(i) tt_ctx_needs_input_grad(ctx, (i))
#define SAVED(i) tt_ctx_saved(ctx, (i))

/* A number as a Scalar value: a whole number travels as an int, so an
 * integer tensor stays one (x * 2 is integral, x * 2.5 is not). */
static tt_value scalar_value(double v)
{
    return v == floor(v) && fabs(v) < 9e15 ? tt_v_int((int64_t)v) : tt_v_float(v);
}

/* Calls built-in `id` on (a, v) through the dispatcher, so it is traced. */
static tt_tensor *op_tv(tt_builtin_id id, const tt_tensor *a, double v)
{
    return tt__call_op(id, TT_ARGS(tt_v_tensor(a), scalar_value(v)));
}

static tt_tensor *gt_scalar(const tt_tensor *a, double v) { return op_tv(TT_OP_GT_SCALAR, a, v); }
static tt_tensor *ge_scalar(const tt_tensor *a, double v) { return op_tv(TT_OP_GE_SCALAR, a, v); }
static tt_tensor *le_scalar(const tt_tensor *a, double v) { return op_tv(TT_OP_LE_SCALAR, a, v); }
static tt_tensor *eq_scalar(const tt_tensor *a, double v) { return op_tv(TT_OP_EQ_SCALAR, a, v); }

static tt_tensor *sign_of(const tt_tensor *a)
{
    return tt__call_op(TT_OP_SIGN, TT_ARGS(tt_v_tensor(a)));
}

/* Saves the tensor arguments and the output, in that order, each only
 * when its bit is in `keep` (bit i: tensor argument i; KEEP_OUT: the
 * output), NULL otherwise, so positions do not move. A tensor saved is
 * version-checked at backward: saving only what a rule reads lets code
 * write the others in place afterwards (mul's output, then relu_), as
 * PyTorch allows. */
#define KEEP_OUT 8u
static tt_status save_some(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                           const tt_value *out, int nout, unsigned keep)
{
    tt_tensor *ts[4];
    int n = 0;
    for (int i = 0; i < nin && n < 3; i++)
        if (in[i].kind == TT_V_TENSOR) {
            ts[n] = keep >> n & 1 ? in[i].u.t : NULL;
            n++;
        }
    int ninputs = n;
    const tt_tensor *written = NULL; /* an in-place op's self, after the write */
    if (nout > 0 && out[0].kind == TT_V_TENSOR) {
        ts[n++] = keep & KEEP_OUT ? out[0].u.t : NULL;
        if (tt_schema_arg(tt_op_schema(tt_ctx_op(ctx)), 0)->is_write)
            written = out[0].u.t;
    }
    tt_status st = tt_ctx_save_for_backward(ctx, n, ts);
    /* setup runs after the kernel: an in-place op's operand that shares
     * self's storage (x.mul_(x)) was overwritten by the write. (Argument 0
     * of an op that saves self is autograd's copy: TT_BUILTIN_SAVES_SELF.) */
    for (int k = 0; !st && written && k < ninputs; k++)
        if (ts[k] && tt_same_storage(ts[k], written))
            tt__ctx_saved_before_write(ctx, k);
    return st;
}

/* Saves every tensor argument and the output, in that order. */
static tt_status save_all(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                          const tt_value *out, int nout)
{
    return save_some(ctx, in, nin, out, nout, 1u | 2u | 4u | KEEP_OUT);
}

/* Only the first tensor argument (where's condition, clamp's self). */
static tt_status save_first(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                            const tt_value *out, int nout)
{
    return save_some(ctx, in, nin, out, nout, 1u);
}

/* Saves the Scalar argument `arg` (other, alpha, exponent) as "s". */
static tt_status save_scalar_arg(tt_autograd_ctx *ctx, const tt_value *in, int arg)
{
    double v = in[arg].kind == TT_V_FLOAT ? in[arg].u.f
             : in[arg].kind == TT_V_BOOL ? in[arg].u.b : (double)in[arg].u.i;
    return tt_ctx_save_float(ctx, "s", v);
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
    case UN_LOG: case UN_SIN: case UN_COS: case UN_ABS: keep = 1u; break;
    case UN_NEG: case UN_SIGN: break;
    default: keep = KEEP_OUT; break; /* exp, sqrt, rsqrt, tanh, sigmoid, relu */
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
    case UN_ABS: r = tt_mul(g[0], sign_of(x)); break;
    case UN_SIGN: r = tt_zeros(tt_ndim(g[0]), tt_sizes(g[0]), tt_dtype_of(g[0])); break;
    default:
        tt_scope_end();
        return tt_error(TT_EINTERNAL, "%s: no derivative rule", tt_op_name(tt_ctx_op(ctx)));
    }
    tt_keep(r);
    tt_scope_end();
    return tt__put_grad(ctx, gi, 0, r);
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

static const tt__builtin_row rows[] = {TT__ELEMENTWISE_ROWS};

tt_status tt__register_elementwise(tt_library *lib)
{
    return TT__DEFINE_ROWS(lib, rows);
}

/* ---------------------------------------------------------- typed wrappers */

/* Each elementwise row's data (its kind), at compile time: a wrapper names
 * only its op's id, and the table says which kind of op that is. */
#define ROW_KIND(id, sch, k, fk, bw, setup, data, flags) [TT_OP_##id] = (int8_t)(data),
static const int8_t row_kind[TT_OP_COUNT] = {
    TT_BUILTIN_OPS(ROW_KIND, TT__NO_ROW, TT__NO_ROW, TT__NO_ROW, TT__NO_ROW, TT__NO_ROW,
                   TT__NO_ROW, TT__NO_ROW)};

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

static tt_tensor *un_call(tt_builtin_id id, const tt_tensor *a)
{
    if (tt__fast_path(id, 1, &a))
        return unary((unop)row_kind[id], a, NULL);
    return tt__call_op(id, TT_ARGS(tt_v_tensor(a)));
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

#define INPLACE_WRAPPER(fn, id)                                                \
    tt_status fn(tt_tensor *a, const tt_tensor *b) { return bin_inplace(id, a, b, NULL, 1.0); }
INPLACE_WRAPPER(tt_add_, TT_OP_ADD__TENSOR)
INPLACE_WRAPPER(tt_sub_, TT_OP_SUB__TENSOR)
INPLACE_WRAPPER(tt_mul_, TT_OP_MUL__TENSOR)
INPLACE_WRAPPER(tt_div_, TT_OP_DIV__TENSOR)

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

tt_tensor *tt_gelu_tanh(const tt_tensor *a)
{
    return tt__call_op(TT_OP_GELU, TT_ARGS(tt_v_tensor(a), tt_v_str("tanh")));
}

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
