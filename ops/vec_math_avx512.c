/* The AVX-512 variants of vec_math.c's kernels (the same accuracy): sixteen
 * lanes at a time through SLEEF's AVX-512F kernels and vec_math_kernels.h's
 * tanh and gelu. This file alone is compiled with -mavx512f; vec_math.c calls it only on a CPU
 * that has AVX-512F (and whose OS saves its registers). */
#include "vec_math.h"

#include <stdint.h>
#include <string.h>

#if defined(TT_HAVE_SLEEF) && defined(__AVX512F__)
#include <immintrin.h>
#include <sleef.h>

#define V __m512
#define V_SET1(c) _mm512_set1_ps(c)
#define V_ADD(a, b) _mm512_add_ps(a, b)
#define V_SUB(a, b) _mm512_sub_ps(a, b)
#define V_MUL(a, b) _mm512_mul_ps(a, b)
#define V_DIV(a, b) _mm512_div_ps(a, b)
#define V_FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define V_ABS(a) _mm512_abs_ps(a)
#define V_MIN(a, b) _mm512_min_ps(a, b)
#define V_MAX(a, b) _mm512_max_ps(a, b)
#define V_ROUND(a) _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
/* scalef: p 2^floor(n) in one instruction, rounded once. */
#define V_LDEXP(p, n) _mm512_scalef_ps(p, n)
#define V_POW2(n) _mm512_scalef_ps(_mm512_set1_ps(1.0f), n)
/* Bitwise ops through the integer forms: the float ones need AVX-512DQ. */
#define V_SIGN(x)                                                              \
    _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(x),               \
                                         _mm512_set1_epi32((int)0x80000000u)))
#define V_OR(a, b)                                                             \
    _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(a), _mm512_castps_si512(b)))
#define V_LT_SEL(a, b, x, y) _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, b, _CMP_LT_OQ), y, x)
#define V_NAN_SEL(x, y) _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), y, x)
#define V_XOR(a, b)                                                            \
    _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(a), _mm512_castps_si512(b)))
#define V_ODD_SIGN(n) _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtps_epi32(n), 31))
#define V_ALL_LT(a, b) (_mm512_cmp_ps_mask(a, b, _CMP_LT_OQ) == 0xffff)
#define V_SLEEF_LOG(v) Sleef_logf16_u10avx512f(v)
#define V_SLEEF_SIN(v) Sleef_sinf16_u35avx512f(v)
#define V_SLEEF_COS(v) Sleef_cosf16_u35avx512f(v)
#define V_SLEEF_ACOS(v) Sleef_acosf16_u10avx512f(v)
#define V_SLEEF_ASIN(v) Sleef_asinf16_u10avx512f(v)
#define V_SLEEF_ATAN(v) Sleef_atanf16_u10avx512f(v)
#define V_SLEEF_ACOSH(v) Sleef_acoshf16_u10avx512f(v)
#define V_SLEEF_ASINH(v) Sleef_asinhf16_u10avx512f(v)
#define V_SLEEF_ATANH(v) Sleef_atanhf16_u10avx512f(v)
#define V_SLEEF_SINH(v) Sleef_sinhf16_u10avx512f(v)
#define V_SLEEF_COSH(v) Sleef_coshf16_u10avx512f(v)
#define V_SLEEF_TAN(v) Sleef_tanf16_u10avx512f(v)
#define V_SLEEF_ERF(v) Sleef_erff16_u10avx512f(v)
#define V_SLEEF_EXPM1(v) Sleef_expm1f16_u10avx512f(v)
#define V_SLEEF_LOG1P(v) Sleef_log1pf16_u10avx512f(v)
#define V_SLEEF_LOG2(v) Sleef_log2f16_u10avx512f(v)
#define V_SLEEF_LOG10(v) Sleef_log10f16_u10avx512f(v)
/* The loops run o[i] = F(x[i]) (or F(a[i], b[i])) over n floats; the
 * tail goes through one masked vector, so every element gets the same
 * kernel and results do not depend on the position. A streamed loop
 * (`stream`, set by the driver) first reaches o's next 64-byte line with
 * one masked vector, then writes whole lines with non-temporal stores. */
#define VK_MASK(m) ((__mmask16)((1u << (m)) - 1))
#define VK_UNARY_AT(F, k, m)                                                      \
    _mm512_mask_storeu_ps(o + (k), VK_MASK(m), F(_mm512_maskz_loadu_ps(VK_MASK(m), x + (k))))
#define VK_BINARY_AT(F, k, m)                                                     \
    _mm512_mask_storeu_ps(o + (k), VK_MASK(m),                                 \
                          F(_mm512_maskz_loadu_ps(VK_MASK(m), a + (k)),        \
                            _mm512_maskz_loadu_ps(VK_MASK(m), b + (k))))
/* Four vectors per step: their kernels are independent chains of 20-odd
 * dependent operations each, and the build interleaves them (this file is
 * compiled with -fschedule-insns where the compiler has it), which keeps
 * the FMA units busy where one chain's latencies left them idle (tanh
 * 0.34 -> 0.27 ns per element, gelu 0.39 -> 0.33, on one thread). */
#define VK_STEP4(F, FULL, STORE)                                               \
    for (; k + 64 <= n; k += 64) {                                             \
        V v0_ = FULL(F, k), v1_ = FULL(F, k + 16), v2_ = FULL(F, k + 32);      \
        V v3_ = FULL(F, k + 48);                                               \
        STORE(o + k, v0_);                                                     \
        STORE(o + k + 16, v1_);                                                \
        STORE(o + k + 32, v2_);                                                \
        STORE(o + k + 48, v3_);                                                \
    }                                                                          \
    for (; k + 16 <= n; k += 16)                                               \
        STORE(o + k, FULL(F, k))
#define VK_LOOP_STEPS(F, AT, FULL, STEP4)                                                \
    do {                                                                       \
        int64_t k = 0;                                                         \
        if (stream) {                                                          \
            int64_t head = (int64_t)((-(uintptr_t)o & 63) / sizeof(float));   \
            k = head < n ? head : n;                                           \
            if (k > 0)                                                         \
                AT(F, 0, k);                                                   \
            STEP4(F, FULL, _mm512_stream_ps);                                  \
        }                                                                      \
        STEP4(F, FULL, _mm512_storeu_ps);                                      \
        if (k < n)                                                             \
            AT(F, k, n - k);                                                   \
        return true;                                                           \
    } while (0)
#define VK_LOOP(F, AT, FULL) VK_LOOP_STEPS(F, AT, FULL, VK_STEP4)
#define VK_UNARY_FULL(F, k) F(_mm512_loadu_ps(x + (k)))
#define V_LOADU(p) _mm512_loadu_ps(p)
#define V_WIDTH 16
#define VK_BINARY_FULL(F, k) F(_mm512_loadu_ps(a + (k)), _mm512_loadu_ps(b + (k)))
#define VK_UNARY_LOOP(F) VK_LOOP(F, VK_UNARY_AT, VK_UNARY_FULL)
#define VK_BINARY_LOOP(F) VK_LOOP(F, VK_BINARY_AT, VK_BINARY_FULL)
#include "vec_math_kernels.h"

bool tt__vec_f32_avx512(int op, float *o, const float *x, int64_t n)
{
    return vk_unary(op, o, x, n);
}

bool tt__vec2_f32_avx512(int op, float *o, const float *a, const float *b, int64_t n)
{
    return vk_binary(op, o, a, b, n);
}

/* The four sums of a, b, c, d's lanes, in one vector: halves, then
 * quarters, added pairwise across the four (fewer shuffles than four
 * separate reductions, which cost a fifth of a 288-element row's work). */
static inline __m128 sum4(__m512 a, __m512 b, __m512 c, __m512 d)
{
    __m512 ab = _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x44), _mm512_shuffle_f32x4(a, b, 0xEE));
    __m512 cd = _mm512_add_ps(_mm512_shuffle_f32x4(c, d, 0x44), _mm512_shuffle_f32x4(c, d, 0xEE));
    /* 128-bit lane q holds 4 partial sums of a, b, c, d for q = 0..3 */
    __m512 t = _mm512_add_ps(_mm512_shuffle_f32x4(ab, cd, 0x88), _mm512_shuffle_f32x4(ab, cd, 0xDD));
    t = _mm512_add_ps(t, _mm512_permute_ps(t, 0x4E));
    t = _mm512_add_ps(t, _mm512_permute_ps(t, 0xB1));
    const __m512i firsts = _mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 12, 8, 4, 0);
    return _mm512_castps512_ps128(_mm512_permutexvar_ps(firsts, t));
}

/* Eight rows at a time: each row's 16 lanes accumulated by FMAs in the
 * row's order, so a row's result does not depend on how rows are split
 * among threads. Measured against a 16-lane sum over the same matrix
 * ([32000, 288], one thread): eight rows 0.79-1.05 of its speed, four
 * rows with a reduction each 0.66-0.82, OpenBLAS's sgemv 0.62-0.77. */
bool tt__gemv_rows_f32_avx512(const float *m, int64_t ld, const float *x, int64_t k, float *y,
                              int64_t incy, int64_t r0, int64_t r1, float alpha, bool accumulate)
{
    const int64_t k16 = k & ~(int64_t)15;
    const __mmask16 tail = (__mmask16)((1u << (k - k16)) - 1);
    _Alignas(16) float dots[8];
    for (int64_t r = r0; r < r1; r += 8) {
        int64_t nr = r1 - r < 8 ? r1 - r : 8;
        const float *a[8];
        for (int j = 0; j < 8; j++)
            a[j] = m + (r + (j < nr ? j : 0)) * ld; /* a short block repeats its first row */
        __m512 s[8];
        for (int j = 0; j < 8; j++)
            s[j] = _mm512_setzero_ps();
        for (int64_t i = 0; i < k16; i += 16) {
            __m512 xi = _mm512_loadu_ps(x + i);
            for (int j = 0; j < 8; j++)
                s[j] = _mm512_fmadd_ps(_mm512_loadu_ps(a[j] + i), xi, s[j]);
        }
        if (tail) {
            __m512 xi = _mm512_maskz_loadu_ps(tail, x + k16);
            for (int j = 0; j < 8; j++)
                s[j] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(tail, a[j] + k16), xi, s[j]);
        }
        _mm_store_ps(dots, sum4(s[0], s[1], s[2], s[3]));
        _mm_store_ps(dots + 4, sum4(s[4], s[5], s[6], s[7]));
        for (int j = 0; j < nr; j++) {
            float *o = y + (r + j) * incy;
            *o = accumulate ? *o + alpha * dots[j] : alpha * dots[j];
        }
    }
    return true;
}

/* Eight f32 rows of n (rows n apart) summed running, in double: 8x8
 * tiles turned so each vector holds one column of the eight rows, added
 * into one vector of eight double accumulators (a row each, in the row's
 * order: the same sums, bit for bit, as a loop over the row), turned
 * back. The serial loop is a chain of dependent adds; this is eight. */
static inline void transpose8(__m256 r[8])
{
    __m256 t[8], u[8];
    for (int j = 0; j < 8; j += 2) {
        t[j] = _mm256_unpacklo_ps(r[j], r[j + 1]);
        t[j + 1] = _mm256_unpackhi_ps(r[j], r[j + 1]);
    }
    for (int j = 0; j < 8; j += 4) {
        u[j] = _mm256_shuffle_ps(t[j], t[j + 2], _MM_SHUFFLE(1, 0, 1, 0));
        u[j + 1] = _mm256_shuffle_ps(t[j], t[j + 2], _MM_SHUFFLE(3, 2, 3, 2));
        u[j + 2] = _mm256_shuffle_ps(t[j + 1], t[j + 3], _MM_SHUFFLE(1, 0, 1, 0));
        u[j + 3] = _mm256_shuffle_ps(t[j + 1], t[j + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    for (int j = 0; j < 4; j++) {
        r[j] = _mm256_permute2f128_ps(u[j], u[j + 4], 0x20);
        r[j + 4] = _mm256_permute2f128_ps(u[j], u[j + 4], 0x31);
    }
}

bool tt__cumsum_rows8_f32_avx512(const float *x, float *y, int64_t n, bool stream)
{
    __m512d acc = _mm512_setzero_pd();
    int64_t i = 0;
    /* streamed (around the cache) when asked and every row's stores are
     * 32-byte aligned */
    stream = stream && ((uintptr_t)y & 31) == 0 && (n & 7) == 0;
    for (; i + 8 <= n; i += 8) {
        __m256 r[8];
        for (int j = 0; j < 8; j++)
            r[j] = _mm256_loadu_ps(x + j * n + i);
        transpose8(r); /* r[k]: column k of the eight rows */
        for (int k = 0; k < 8; k++) {
            acc = _mm512_add_pd(acc, _mm512_cvtps_pd(r[k]));
            r[k] = _mm512_cvtpd_ps(acc);
        }
        transpose8(r); /* back: r[j] row j's eight sums */
        if (stream)
            for (int j = 0; j < 8; j++)
                _mm256_stream_ps(y + j * n + i, r[j]);
        else
            for (int j = 0; j < 8; j++)
                _mm256_storeu_ps(y + j * n + i, r[j]);
    }
    double a[8];
    _mm512_storeu_pd(a, acc);
    for (int j = 0; j < 8; j++)
        for (int64_t k = i; k < n; k++) {
            a[j] += (double)x[j * n + k];
            y[j * n + k] = (float)a[j];
        }
    return true;
}

bool tt__stream_copy_avx512(char *dst, const char *src, size_t bytes)
{
    size_t head = (size_t)(-(uintptr_t)dst & 63); /* to dst's next line */
    if (head > bytes)
        head = bytes;
    memcpy(dst, src, head);
    dst += head, src += head, bytes -= head;
    for (; bytes >= 64; dst += 64, src += 64, bytes -= 64) {
        /* the next KiB asked for (past the end is harmless: a prefetch
         * never faults): rows copied in an index's order get no stream
         * from the hardware prefetcher at their start */
        _mm_prefetch((const char *)((uintptr_t)src + 1024), _MM_HINT_T0);
        _mm512_stream_si512((void *)dst, _mm512_loadu_si512((const void *)src));
    }
    memcpy(dst, src, bytes);
    return true;
}
#else
bool tt__cumsum_rows8_f32_avx512(const float *x, float *y, int64_t n, bool stream)
{
    (void)x, (void)y, (void)n, (void)stream;
    return false;
}

bool tt__gemv_rows_f32_avx512(const float *m, int64_t ld, const float *x, int64_t k, float *y,
                              int64_t incy, int64_t r0, int64_t r1, float alpha, bool accumulate)
{
    (void)m, (void)ld, (void)x, (void)k, (void)y, (void)incy, (void)r0, (void)r1, (void)alpha;
    (void)accumulate;
    return false;
}

bool tt__stream_copy_avx512(char *dst, const char *src, size_t bytes)
{
    (void)dst, (void)src, (void)bytes;
    return false;
}

bool tt__vec_f32_avx512(int op, float *o, const float *x, int64_t n)
{
    (void)op, (void)o, (void)x, (void)n;
    return false;
}

bool tt__vec2_f32_avx512(int op, float *o, const float *a, const float *b, int64_t n)
{
    (void)op, (void)o, (void)a, (void)b, (void)n;
    return false;
}
#endif
