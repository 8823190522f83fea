/* The AVX-512 variants of vec_math.c's kernels: sixteen lanes at a time
 * through SLEEF's AVX-512F kernels (1.0 ULP, as the AVX2 ones). This file
 * alone is compiled with -mavx512f; vec_math.c calls it only on a CPU
 * that has AVX-512F (and whose OS saves its registers). */
#include "vec_math.h"

#if defined(TT_HAVE_SLEEF) && defined(__AVX512F__)
#include <immintrin.h>
#include <sleef.h>

static inline __m512 apply(int op, __m512 v)
{
    const __m512 one = _mm512_set1_ps(1.0f);
    switch (op) {
    case TT_VEC_EXP: return Sleef_expf16_u10avx512f(v);
    case TT_VEC_LOG: return Sleef_logf16_u10avx512f(v);
    case TT_VEC_SIN: return Sleef_sinf16_u10avx512f(v);
    case TT_VEC_COS: return Sleef_cosf16_u10avx512f(v);
    case TT_VEC_TANH: return Sleef_tanhf16_u10avx512f(v);
    case TT_VEC_SIGMOID: {
        __m512 e = Sleef_expf16_u10avx512f(_mm512_sub_ps(_mm512_setzero_ps(), v));
        return _mm512_div_ps(one, _mm512_add_ps(one, e));
    }
    case TT_VEC_GELU: {
        __m512 e = Sleef_erff16_u10avx512f(_mm512_mul_ps(v, _mm512_set1_ps(0.70710678118654752440f)));
        return _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(0.5f), v), _mm512_add_ps(one, e));
    }
    default: return v;
    }
}

bool tt__vec_f32_avx512(int op, float *o, const float *x, int64_t n)
{
    int64_t k = 0;
    for (; k + 16 <= n; k += 16)
        _mm512_storeu_ps(o + k, apply(op, _mm512_loadu_ps(x + k)));
    if (k < n) {
        /* The tail through one masked vector: every element gets the same
         * kernel, so results do not depend on the position. */
        __mmask16 m = (__mmask16)((1u << (n - k)) - 1);
        __m512 v = _mm512_maskz_loadu_ps(m, x + k);
        _mm512_mask_storeu_ps(o + k, m, apply(op, v));
    }
    return true;
}
#else
bool tt__vec_f32_avx512(int op, float *o, const float *x, int64_t n)
{
    (void)op, (void)o, (void)x, (void)n;
    return false;
}
#endif
