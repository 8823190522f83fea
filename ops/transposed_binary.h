/* Internal to ops/: f32 binary ops where one 2-d operand is a transposed
 * view (transposed_binary.c picks the case, transposed_binary_avx512.c
 * computes it). Not installed. */
#ifndef TT_TRANSPOSED_BINARY_H
#define TT_TRANSPOSED_BINARY_H

#include "tt_runtime.h"

/* The ops it computes, each exactly as binary.c's scalar loop does
 * (add and sub scale the second operand by alpha, always). */
enum { TT_TB_ADD, TT_TB_SUB, TT_TB_MUL, TT_TB_DIV };

/* out[i][j] = x[i][j] op t[j][i] (t_first: t[j][i] op x[i][j]), for
 * 0 <= i < rows, 0 <= j < cols; element (i, j) of a matrix m with leading
 * dimension ld is m[i * ld + j]. The arrays are borrowed; out overlaps no
 * input other than being x itself. */
typedef struct {
    int op;
    bool t_first;
    float alpha;
    int64_t rows, cols;
    float *out;
    const float *x, *t;
    int64_t ldo, ldx, ldt;
} tt_tb_job;

/* transposed_binary.c: computes out = a op b (alpha: add and sub's) when
 * the three are f32 and 2-d (size-1 dims aside), of one shape, out and one
 * operand laid out row-major (or both column-major) with unit steps and
 * the other operand the other way round, and the CPU has AVX-512F; else
 * returns false having done nothing, for the general loop to run. All
 * three borrowed; out overlaps an input only by being it. */
bool tt__binary_transposed_f32(int op, float alpha, const tt_tensor *out,
                               const tt_tensor *a, const tt_tensor *b);

/* The parallel split: strips of this many output rows, each a task, or
 * when there are fewer strips than threads, parts of strips. */
#define TT_TB_STRIP 128

/* transposed_binary_avx512.c: output rows [r0, r1), columns [c0, c1) of
 * job j. Call only on a CPU that has AVX-512F. */
void tt__tb_block_avx512(const tt_tb_job *j, int64_t r0, int64_t r1, int64_t c0, int64_t c1);

#endif
