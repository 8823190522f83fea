/* Internal: vectorized f32 math (vec_math.c) and streaming stores
 * (ops_common.c), shared by ops/ and tracer/'s fused loops. */
#ifndef TT_VEC_MATH_H
#define TT_VEC_MATH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The unary kernels' ids, TT_VEC_<KIND>, come from the pointwise list. */
#include "pointwise_ops.h"

/* What this CPU runs, decided once: 0 neither AVX2+FMA nor AVX-512F, 1
 * AVX2+FMA, 2 AVX-512F too (unless TT_NO_AVX512 is set, which keeps every
 * kernel choosing by it on AVX2 or below). */
int tt__cpu_vector_level(void);

/* Binary kernels: o[i] = f(a[i], b[i]). */
enum { TT_VEC2_GELU_BACKWARD = 1, TT_VEC2_GELU_TANH_BACKWARD, TT_VEC2_ADD };

/* Or'ed into an op: write o with non-temporal stores, around the caches
 * (for outputs too large to stay cached; ops_impl.h's tt__stream_*). The
 * caller runs tt__stream_fence before the results are used elsewhere. */
#define TT_VEC_STREAM 0x100

/* o[i] = f(x[i]) for contiguous arrays; false when this CPU or build has
 * no vector kernel (the caller then runs its scalar loop). */
bool tt__vec_f32(int op, float *o, const float *x, int64_t n);
bool tt__vec2_f32(int op, float *o, const float *a, const float *b, int64_t n);
/* vec_math_avx512.c: the same with AVX-512F; only on a CPU that has it. */
bool tt__vec_f32_avx512(int op, float *o, const float *x, int64_t n);
bool tt__vec2_f32_avx512(int op, float *o, const float *a, const float *b, int64_t n);
/* y[r * incy] = alpha * dot(m + r * ld, x) (+ the old y[r * incy] when
 * accumulate) for rows r in [r0, r1), k elements each, x contiguous: the
 * matrix-vector product of a decoder's one-token step (linalg.c); false
 * when the build has no AVX-512 code. */
bool tt__gemv_rows_f32_avx512(const float *m, int64_t ld, const float *x, int64_t k, float *y,
                              int64_t incy, int64_t r0, int64_t r1, float alpha, bool accumulate);
/* Running sums along 8 f32 rows of n (rows n apart, x and y alike),
 * accumulated in double in each row's order (cumsum); stream: y may be
 * written around the cache (the caller fences); false when the build has
 * no AVX-512 code. */
bool tt__cumsum_rows8_f32_avx512(const float *x, float *y, int64_t n, bool stream);
/* tt__stream_copy (below) in whole 64-byte lines; false when the
 * build has no AVX-512 code. */
bool tt__stream_copy_avx512(char *dst, const char *src, size_t bytes);

/* Streaming stores (ops_common.c, baseline code), for outputs that will
 * not be read again before they leave the cache: tt__stream_worthwhile
 * says whether an op touching `bytes` in all is that large (more than the
 * last-level cache); tt__stream_copy writes with non-temporal stores where the CPU
 * has them (memcpy elsewhere); tt__stream_fence orders those stores
 * before whatever the thread does next, e.g. telling the caller the
 * chunk is done. */
bool tt__stream_worthwhile(int64_t bytes);
void tt__stream_copy(char *dst, const char *src, size_t bytes);
void tt__stream_fence(void);

#endif
