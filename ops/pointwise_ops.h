/* Internal: every pointwise op's scalar formula, once. Not installed.
 *
 * The eager kernels (ops/binary.c, ops/unary.c), the vector kernels' dispatch
 * (ops/vec_math_kernels.h) and the fusion pass (tracer/fuse.c) all expand
 * these lists, so an op's kind, its vector kernel and its fused micro-op
 * are generated from one row and its formula is written once: eager and
 * fused results agree bit for bit because they are the same expression.
 * Each formula is a plain C expression of its operands (a, and b and
 * alpha for binary ops), one for f32 and one for f64, so that a C code
 * generator can expand the same list. Integer dtypes keep their own loops
 * in the eager kernels (they wrap where floats round, as PyTorch's do).
 *
 *   TT_POINTWISE_UNARY(X)   X(KIND, ROW, f32 formula, f64 formula, VEC)
 *   TT_POINTWISE_PARAM(X)   X(KIND, ROW, NP, D0, D1, D2, f32, f64)
 *   TT_POINTWISE_ARITH(X)   X(KIND, TENSOR_ROW, SCALAR_ROW, f32, f64)
 *   TT_POINTWISE_COMPARE(X) X(KIND, TENSOR_ROW, SCALAR_ROW, f32, f64)
 *   TT_POINTWISE_MINMAX(X)  X(KIND, ROW, f32, f64)  (a Tensor overload only)
 *   TT_POINTWISE_LOGICAL(X) X(KIND, ROW, f32, f64)  (bool result, as COMPARE)
 *
 * KIND     the op kind: UN_<KIND> / BIN_<KIND> in the eager kernels (the
 *          row's data in runtime/builtin_ops.h), TT_VEC_<KIND> for the
 *          vector kernels, U_<KIND> in the fusion pass.
 * ROW      the built-in row (TT_OP_<ROW>) whose call is this kind; _NONE
 *          for a kind that is an argument form of another kind's row
 *          (gelu's approximate="tanh").
 * TENSOR_ROW, SCALAR_ROW  the overloads with a Tensor and a Scalar other
 *          (the Scalar one computes with b = the Scalar, alpha = 1).
 * VEC      the f32 vector kernel (vec_math_kernels.h): PW_VEC(fn) runs
 *          fn on each vector, PW_VEC_STEPS(fn, step4) with its own loop
 *          step, PW_NOVEC none (the formula runs). The includer defines
 *          the three before expanding the list.
 *
 * A comparison's or logical op's result is bool (eager) or the float 1
 * or 0 (inside a fused chain, where it can only be a mask feeding a
 * product). Integer dtypes and the ops without a float formula (bitwise,
 * isnan, isinf, logical_not) keep their own loops in the eager kernels. */
#ifndef TT_POINTWISE_OPS_H
#define TT_POINTWISE_OPS_H

#include "builtin_ops.h"

/* gelu(approximate="tanh"): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))),
 * computed in double for f32 too (as it always was: the constants are
 * doubles). */
#define TT_GELU_BETA 0.79788456080286535588
#define TT_GELU_KAPPA 0.044715

/* hardswish x * relu6(x + 3) / 6 and hardsigmoid relu6(x + 3) / 6 in type
 * T, as PyTorch's CPU kernels compute them; the comparisons are
 * std::max/std::min's, so a NaN stays NaN (fmax would drop it).
 * ops/activation.c runs the same expressions eagerly. */
#define TT_RELU6_SHIFTED(T, a)                                                 \
    ((T)((a) + (T)3) < (T)0 ? (T)0                                             \
     : (T)6 < (T)((a) + (T)3) ? (T)6 : (T)((a) + (T)3))
#define TT_HARDSWISH(T, a) ((T)((a) * TT_RELU6_SHIFTED(T, a)) / (T)6)
#define TT_HARDSIGMOID(T, a) (TT_RELU6_SHIFTED(T, a) / (T)6)

/* The activations with Scalar parameters p0, p1, p2 (ops/activation.c
 * runs the same expressions eagerly), in type T:
 *   leaky_relu(negative_slope)          a for a > 0, else a p0 (NaN kept)
 *   elu(alpha, scale, input_scale)      a p1 for a > 0, else
 *                                       expm1(a p2) (p0 p1)
 *   hardtanh(min_val, max_val)          clamp's min(max(a, p0), p1)
 *   softplus(beta, threshold)           a where a p0 > p1, else
 *                                       log1p(exp(a p0)) / p0 */
#define TT_LEAKY_RELU(T, a, p0) ((a) > (T)0 ? (a) : (T)((a) * (p0)))
#define TT_ELU(T, EXPM1, a, p0, p1, p2)                                        \
    ((a) <= (T)0 ? (T)(EXPM1((T)((a) * (p2))) * (T)((p0) * (p1))) : (T)((a) * (p1)))
#define TT_HARDTANH(T, a, p0, p1)                                              \
    ((T)((a) < (p0) ? (p0) : (a)) > (p1) ? (p1) : (T)((a) < (p0) ? (p0) : (a)))
#define TT_SOFTPLUS(T, EXP, LOG1P, a, p0, p1)                                  \
    ((T)((a) * (p0)) > (p1) ? (a) : (T)(LOG1P(EXP((T)((a) * (p0)))) / (p0)))

/* maximum and minimum propagate a NaN of either operand (PyTorch's
 * maximum/minimum; fmax/fmin would drop it); otherwise std::max/std::min's
 * comparison, so of -0 and +0 the first operand is kept, as PyTorch's. */
#define TT_MAXIMUM(a, b) ((a) != (a) ? (a) : (b) != (b) ? (b) : (a) < (b) ? (b) : (a))
#define TT_MINIMUM(a, b) ((a) != (a) ? (a) : (b) != (b) ? (b) : (b) < (a) ? (b) : (a))

/* remainder: Python's modulo, the sign of the divisor (PyTorch's:
 * fmod, then the divisor added where the signs differ; a zero stays the
 * fmod's, so -0 % 3 is -0). */
#define TT_REMAINDER(T, FMOD, a, b)                                            \
    ((FMOD(a, b) != (T)0 && ((b) < (T)0) != (FMOD(a, b) < (T)0)) ? (T)(FMOD(a, b) + (b)) \
                                                                 : FMOD(a, b))

/* clang-format off */
#define TT_POINTWISE_UNARY(X) \
    X(NEG, NEG, -a, -a, PW_NOVEC) \
    X(EXP, EXP, expf(a), exp(a), PW_VEC(vk_exp_any)) \
    X(LOG, LOG, logf(a), log(a), PW_VEC(V_SLEEF_LOG)) \
    X(SQRT, SQRT, sqrtf(a), sqrt(a), PW_NOVEC) \
    X(RSQRT, RSQRT, (float)1 / sqrtf(a), (double)1 / sqrt(a), PW_NOVEC) \
    X(SIN, SIN, sinf(a), sin(a), PW_VEC_STEPS(vk_sin, VK_SIN_STEP4)) \
    X(COS, COS, cosf(a), cos(a), PW_VEC(V_SLEEF_COS)) \
    X(TANH, TANH, tanhf(a), tanh(a), PW_VEC(vk_tanh)) \
    X(SIGMOID, SIGMOID, (float)1 / ((float)1 + expf(-a)), \
      (double)1 / ((double)1 + exp(-a)), PW_VEC(vk_sigmoid)) \
    /* NaN stays NaN: a <= 0 is false for it */ \
    X(RELU, RELU, a <= 0 ? (float)0 : a, a <= 0 ? (double)0 : a, PW_NOVEC) \
    X(GELU, GELU, (float)0.5 * a * ((float)1 + erff(a * (float)0.70710678118654752440)), \
      (double)0.5 * a * ((double)1 + erf(a * (double)0.70710678118654752440)), \
      PW_VEC(vk_gelu)) \
    X(ABS, ABS, fabsf(a), fabs(a), PW_NOVEC) \
    X(SIGN, SIGN, (float)((a > 0) - (a < 0)), (double)((a > 0) - (a < 0)), PW_NOVEC) \
    X(GELU_TANH, _NONE, \
      (float)((float)0.5 * a * ((float)1 + tanhf(TT_GELU_BETA * (a + TT_GELU_KAPPA * a * a * a)))), \
      (double)0.5 * a * ((double)1 + tanh(TT_GELU_BETA * (a + TT_GELU_KAPPA * a * a * a))), \
      PW_VEC(vk_gelu_tanh)) \
    X(HARDSWISH, HARDSWISH, TT_HARDSWISH(float, a), TT_HARDSWISH(double, a), PW_NOVEC) \
    X(HARDSIGMOID, HARDSIGMOID, TT_HARDSIGMOID(float, a), TT_HARDSIGMOID(double, a), PW_NOVEC) \
    /* silu x * sigmoid(x), written x / (1 + exp(-x)) as PyTorch's CPU kernel */ \
    X(SILU, SILU, a / ((float)1 + expf(-a)), a / ((double)1 + exp(-a)), PW_VEC(vk_silu)) \
    /* the rest of Core ATen's math: C's functions, SLEEF's 1-ULP kernels \
     * for f32 vectors (PyTorch's vectorized CPU kernels use the same) */ \
    X(ACOS, ACOS, acosf(a), acos(a), PW_VEC(V_SLEEF_ACOS)) \
    X(ASIN, ASIN, asinf(a), asin(a), PW_VEC(V_SLEEF_ASIN)) \
    X(ATAN, ATAN, atanf(a), atan(a), PW_VEC(V_SLEEF_ATAN)) \
    X(ACOSH, ACOSH, acoshf(a), acosh(a), PW_VEC(V_SLEEF_ACOSH)) \
    X(ASINH, ASINH, asinhf(a), asinh(a), PW_VEC(V_SLEEF_ASINH)) \
    X(ATANH, ATANH, atanhf(a), atanh(a), PW_VEC(V_SLEEF_ATANH)) \
    X(SINH, SINH, sinhf(a), sinh(a), PW_VEC(V_SLEEF_SINH)) \
    X(COSH, COSH, coshf(a), cosh(a), PW_VEC(V_SLEEF_COSH)) \
    X(TAN, TAN, tanf(a), tan(a), PW_VEC(V_SLEEF_TAN)) \
    X(ERF, ERF, erff(a), erf(a), PW_VEC(V_SLEEF_ERF)) \
    X(EXPM1, EXPM1, expm1f(a), expm1(a), PW_VEC(V_SLEEF_EXPM1)) \
    X(LOG1P, LOG1P, log1pf(a), log1p(a), PW_VEC(V_SLEEF_LOG1P)) \
    X(LOG2, LOG2, log2f(a), log2(a), PW_VEC(V_SLEEF_LOG2)) \
    X(LOG10, LOG10, log10f(a), log10(a), PW_VEC(V_SLEEF_LOG10)) \
    X(RECIPROCAL, RECIPROCAL, (float)1 / a, (double)1 / a, PW_NOVEC) \
    /* rounding: an integer input is returned as it is (PyTorch's too); \
     * round is half to even (std::nearbyint's, as PyTorch's) */ \
    X(FLOOR, FLOOR, floorf(a), floor(a), PW_NOVEC) \
    X(CEIL, CEIL, ceilf(a), ceil(a), PW_NOVEC) \
    X(TRUNC, TRUNC, truncf(a), trunc(a), PW_NOVEC) \
    X(ROUND, ROUND, nearbyintf(a), nearbyint(a), PW_NOVEC)

/* Unary ops with Scalar parameters: X(KIND, ROW, NP, D0, D1, D2, f32
 * formula, f64 formula), the formulas of a and p0, p1, p2 (arguments 1..NP
 * of the row's call, in the formula's type; D0..D2 the schema's defaults
 * for arguments a call leaves out). */
#define TT_POINTWISE_PARAM(X) \
    X(LEAKY_RELU, LEAKY_RELU, 1, 0.01, 0, 0, TT_LEAKY_RELU(float, a, p0), \
      TT_LEAKY_RELU(double, a, p0)) \
    X(ELU, ELU, 3, 1, 1, 1, TT_ELU(float, expm1f, a, p0, p1, p2), \
      TT_ELU(double, expm1, a, p0, p1, p2)) \
    X(HARDTANH, HARDTANH, 2, -1, 1, 0, TT_HARDTANH(float, a, p0, p1), \
      TT_HARDTANH(double, a, p0, p1)) \
    X(SOFTPLUS, SOFTPLUS, 2, 1, 20, 0, TT_SOFTPLUS(float, expf, log1pf, a, p0, p1), \
      TT_SOFTPLUS(double, exp, log1p, a, p0, p1))

#define TT_POINTWISE_ARITH(X) \
    X(ADD, ADD_TENSOR, ADD_SCALAR, a + alpha * b, a + alpha * b) \
    X(SUB, SUB_TENSOR, SUB_SCALAR, a - alpha * b, a - alpha * b) \
    X(MUL, MUL_TENSOR, MUL_SCALAR, a * b, a * b) \
    X(DIV, DIV_TENSOR, DIV_SCALAR, a / b, a / b) \
    X(POW, POW_TENSOR_TENSOR, POW_TENSOR_SCALAR, powf(a, b), pow(a, b)) \
    X(FMOD, FMOD_TENSOR, FMOD_SCALAR, fmodf(a, b), fmod(a, b)) \
    X(REMAINDER, REMAINDER_TENSOR, REMAINDER_SCALAR, TT_REMAINDER(float, fmodf, a, b), \
      TT_REMAINDER(double, fmod, a, b))

#define TT_POINTWISE_COMPARE(X) \
    X(EQ, EQ_TENSOR, EQ_SCALAR, a == b, a == b) \
    X(NE, NE_TENSOR, NE_SCALAR, a != b, a != b) \
    X(LT, LT_TENSOR, LT_SCALAR, a < b, a < b) \
    X(LE, LE_TENSOR, LE_SCALAR, a <= b, a <= b) \
    X(GT, GT_TENSOR, GT_SCALAR, a > b, a > b) \
    X(GE, GE_TENSOR, GE_SCALAR, a >= b, a >= b)

/* Binary ops with a Tensor overload only (no Scalar one in PyTorch):
 * maximum, minimum and atan2. */
#define TT_POINTWISE_MINMAX(X) \
    X(MAXIMUM, MAXIMUM, TT_MAXIMUM(a, b), TT_MAXIMUM(a, b)) \
    X(MINIMUM, MINIMUM, TT_MINIMUM(a, b), TT_MINIMUM(a, b)) \
    X(ATAN2, ATAN2, atan2f(a, b), atan2(a, b))

/* Logical ops: any nonzero is true (NaN too), the result is bool. */
#define TT_POINTWISE_LOGICAL(X) \
    X(LOGICAL_AND, LOGICAL_AND, a != 0 && b != 0, a != 0 && b != 0) \
    X(LOGICAL_OR, LOGICAL_OR, a != 0 || b != 0, a != 0 || b != 0) \
    X(LOGICAL_XOR, LOGICAL_XOR, (a != 0) != (b != 0), (a != 0) != (b != 0))
/* clang-format on */

/* The ROW of a kind that has none: one past the last row, so tables of
 * TT_OP_COUNT + 1 entries can be generated from the list. */
enum { TT_OP__NONE = TT_OP_COUNT };

/* The vector kernels' ids: TT_VEC_<KIND> for every unary kind (0 is
 * none); a kind whose VEC is PW_NOVEC has none (tt__vec_f32 says false). */
enum {
    TT_VEC_NONE,
#define TT__PW_VEC_ID(K, ...) TT_VEC_##K,
    TT_POINTWISE_UNARY(TT__PW_VEC_ID)
#undef TT__PW_VEC_ID
};

/* Whether unary kind K has a vector kernel, as an expression (the list's
 * VEC column read as a flag). */
#define TT__PW_HAS_VEC_PW_NOVEC 0
#define TT__PW_HAS_VEC(vec) TT__PW_HAS_VEC_##vec
#define TT__PW_HAS_VEC_PW_VEC(fn) 1
#define TT__PW_HAS_VEC_PW_VEC_STEPS(fn, step) 1

#endif
