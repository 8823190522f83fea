/* Vectorized transcendental functions for contiguous f32 data, eight lanes
 * at a time with AVX2, or sixteen with AVX-512F (vec_math_avx512.c) on a
 * CPU that has it, chosen once by CPU feature. log uses SLEEF's 1.0-ULP
 * kernel; cos its 3.5-ULP one, and sin past |x| = 1000 (the 1.0-ULP ones
 * run at half the speed, below the memory bandwidth; 3.5 ULP is well
 * inside the float32 tolerance PyTorch's own tests allow); exp (and
 * sigmoid through it), sin, tanh and gelu are our own (vec_math_kernels.h
 * says why and how). This
 * file alone is compiled with -mavx2 -mfma; the rest of the library stays
 * baseline x86-64, and tt__vec_f32 answers false on a CPU without
 * AVX2/FMA (or a build without SLEEF) so callers fall back to the scalar
 * loops. One machine always runs the same variant, so eager and compiled
 * results agree bit for bit. */
#include "vec_math.h"

#include <stdlib.h>

int tt__cpu_vector_level(void)
{
#if defined(__x86_64__) || defined(__i386__)
    static _Atomic int level = -1; /* first calls on two threads may race: atomic */
    if (level < 0) {
        __builtin_cpu_init();
        int l = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
        if (l && __builtin_cpu_supports("avx512f") && getenv("TT_NO_AVX512") == NULL)
            l = 2;
        level = l;
    }
    return level;
#else
    return 0;
#endif
}

#if defined(TT_HAVE_SLEEF) && defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#include <sleef.h>

#define V __m256
#define V_SET1(c) _mm256_set1_ps(c)
#define V_ADD(a, b) _mm256_add_ps(a, b)
#define V_SUB(a, b) _mm256_sub_ps(a, b)
#define V_MUL(a, b) _mm256_mul_ps(a, b)
#define V_DIV(a, b) _mm256_div_ps(a, b)
#define V_FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define V_ABS(a) _mm256_andnot_ps(_mm256_set1_ps(-0.0f), a)
#define V_MIN(a, b) _mm256_min_ps(a, b)
#define V_MAX(a, b) _mm256_max_ps(a, b)
#define V_ROUND(a) _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define V_POW2I(i)                                                             \
    _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(i, _mm256_set1_epi32(127)), 23))
#define V_POW2(n) V_POW2I(_mm256_cvtps_epi32(n))
/* p 2^n in two steps, 2^h and 2^(n - h) with h = n/2 (each within the
 * exponent's range for |n| <= 150), so the product rounds once as
 * AVX-512's scalef does: to 0 or infinity past float's range. */
static inline __m256 v_ldexp(__m256 p, __m256 n)
{
    __m256i i = _mm256_cvtps_epi32(n), h = _mm256_srai_epi32(i, 1);
    return _mm256_mul_ps(_mm256_mul_ps(p, V_POW2I(h)), V_POW2I(_mm256_sub_epi32(i, h)));
}
#define V_LDEXP(p, n) v_ldexp(p, n)
#define V_SIGN(x) _mm256_and_ps(x, _mm256_set1_ps(-0.0f))
#define V_OR(a, b) _mm256_or_ps(a, b)
#define V_LT_SEL(a, b, x, y) _mm256_blendv_ps(y, x, _mm256_cmp_ps(a, b, _CMP_LT_OQ))
#define V_NAN_SEL(x, y) _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q))
#define V_XOR(a, b) _mm256_xor_ps(a, b)
#define V_ODD_SIGN(n) _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtps_epi32(n), 31))
#define V_ALL_LT(a, b) (_mm256_movemask_ps(_mm256_cmp_ps(a, b, _CMP_LT_OQ)) == 0xff)
#define V_SLEEF_LOG(v) Sleef_logf8_u10avx2(v)
#define V_SLEEF_SIN(v) Sleef_sinf8_u35avx2(v)
#define V_SLEEF_COS(v) Sleef_cosf8_u35avx2(v)
#define V_SLEEF_ACOS(v) Sleef_acosf8_u10avx2(v)
#define V_SLEEF_ASIN(v) Sleef_asinf8_u10avx2(v)
#define V_SLEEF_ATAN(v) Sleef_atanf8_u10avx2(v)
#define V_SLEEF_ACOSH(v) Sleef_acoshf8_u10avx2(v)
#define V_SLEEF_ASINH(v) Sleef_asinhf8_u10avx2(v)
#define V_SLEEF_ATANH(v) Sleef_atanhf8_u10avx2(v)
#define V_SLEEF_SINH(v) Sleef_sinhf8_u10avx2(v)
#define V_SLEEF_COSH(v) Sleef_coshf8_u10avx2(v)
#define V_SLEEF_TAN(v) Sleef_tanf8_u10avx2(v)
#define V_SLEEF_ERF(v) Sleef_erff8_u10avx2(v)
#define V_SLEEF_EXPM1(v) Sleef_expm1f8_u10avx2(v)
#define V_SLEEF_LOG1P(v) Sleef_log1pf8_u10avx2(v)
#define V_SLEEF_LOG2(v) Sleef_log2f8_u10avx2(v)
#define V_SLEEF_LOG10(v) Sleef_log10f8_u10avx2(v)
/* The loops run o[i] = F(x[i]) (or F(a[i], b[i])) over n floats; the
 * tail goes through one padded vector, so every element gets the same
 * kernel and results do not depend on the position. A streamed loop
 * (`stream`, set by the driver) first reaches o's next 32-byte boundary
 * the same way, then writes with non-temporal stores. */
#define VK_UNARY_AT(F, k, m)                                                   \
    do {                                                                       \
        float in_[8] = {0}, out_[8];                                           \
        for (int64_t i_ = 0; i_ < (m); i_++)                                   \
            in_[i_] = x[(k) + i_];                                             \
        _mm256_storeu_ps(out_, F(_mm256_loadu_ps(in_)));                       \
        for (int64_t i_ = 0; i_ < (m); i_++)                                   \
            o[(k) + i_] = out_[i_];                                            \
    } while (0)
#define VK_BINARY_AT(F, k, m)                                                  \
    do {                                                                       \
        float ia_[8] = {0}, ib_[8] = {0}, out_[8];                             \
        for (int64_t i_ = 0; i_ < (m); i_++)                                   \
            ia_[i_] = a[(k) + i_], ib_[i_] = b[(k) + i_];                      \
        _mm256_storeu_ps(out_, F(_mm256_loadu_ps(ia_), _mm256_loadu_ps(ib_))); \
        for (int64_t i_ = 0; i_ < (m); i_++)                                   \
            o[(k) + i_] = out_[i_];                                            \
    } while (0)
/* Four vectors per step, which the build interleaves (as in
 * vec_math_avx512.c, which says why). */
#define VK_STEP4(F, FULL, STORE)                                               \
    for (; k + 32 <= n; k += 32) {                                             \
        V v0_ = FULL(F, k), v1_ = FULL(F, k + 8), v2_ = FULL(F, k + 16);       \
        V v3_ = FULL(F, k + 24);                                               \
        STORE(o + k, v0_);                                                     \
        STORE(o + k + 8, v1_);                                                 \
        STORE(o + k + 16, v2_);                                                \
        STORE(o + k + 24, v3_);                                                \
    }                                                                          \
    for (; k + 8 <= n; k += 8)                                                 \
        STORE(o + k, FULL(F, k))
#define VK_LOOP_STEPS(F, AT, FULL, STEP4)                                                \
    do {                                                                       \
        int64_t k = 0;                                                         \
        if (stream) {                                                          \
            int64_t head = (int64_t)((-(uintptr_t)o & 31) / sizeof(float));   \
            k = head < n ? head : n;                                           \
            if (k > 0)                                                         \
                AT(F, 0, k);                                                   \
            STEP4(F, FULL, _mm256_stream_ps);                                  \
        }                                                                      \
        STEP4(F, FULL, _mm256_storeu_ps);                                      \
        if (k < n)                                                             \
            AT(F, k, n - k);                                                   \
        return true;                                                           \
    } while (0)
#define VK_LOOP(F, AT, FULL) VK_LOOP_STEPS(F, AT, FULL, VK_STEP4)
#define VK_UNARY_FULL(F, k) F(_mm256_loadu_ps(x + (k)))
#define V_LOADU(p) _mm256_loadu_ps(p)
#define V_WIDTH 8
#define VK_BINARY_FULL(F, k) F(_mm256_loadu_ps(a + (k)), _mm256_loadu_ps(b + (k)))
#define VK_UNARY_LOOP(F) VK_LOOP(F, VK_UNARY_AT, VK_UNARY_FULL)
#define VK_BINARY_LOOP(F) VK_LOOP(F, VK_BINARY_AT, VK_BINARY_FULL)
#include "vec_math_kernels.h"

bool tt__vec_f32(int op, float *o, const float *x, int64_t n)
{
    int level = tt__cpu_vector_level();
    if (level == 0)
        return false;
    if (level == 2 && tt__vec_f32_avx512(op, o, x, n))
        return true;
    return vk_unary(op, o, x, n);
}

bool tt__vec2_f32(int op, float *o, const float *a, const float *b, int64_t n)
{
    int level = tt__cpu_vector_level();
    if (level == 0)
        return false;
    if (level == 2 && tt__vec2_f32_avx512(op, o, a, b, n))
        return true;
    return vk_binary(op, o, a, b, n);
}
#else
bool tt__vec_f32(int op, float *o, const float *x, int64_t n)
{
    (void)op, (void)o, (void)x, (void)n;
    return false;
}

bool tt__vec2_f32(int op, float *o, const float *a, const float *b, int64_t n)
{
    (void)op, (void)o, (void)a, (void)b, (void)n;
    return false;
}
#endif
