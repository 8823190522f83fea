/* The AVX-512F kernel of transposed_binary.h: out = x op t^T in 16x16
 * blocks transposed in registers. This file alone is compiled with
 * -mavx512f; transposed_binary.c calls it only on a CPU that has AVX-512F.
 *
 * Why not the iterator's tiles: copying a tile of t into a row-major
 * buffer and running the contiguous loop over it passes every element of
 * t through memory twice more (store to the buffer, load back); here the
 * sixteen rows of t that make a 16x16 block are loaded once, transposed
 * with 64 shuffles, and combined with x's rows straight into out. */
#include "transposed_binary.h"

#include <immintrin.h>

#define INLINE static inline __attribute__((always_inline))
#define COLS 128 /* output columns per step of a strip (below) */

/* r[k] (row k of a 16x16 block) becomes column k: after the call, lane i
 * of r[k] holds what was lane k of r[i]. Four rounds: pairs of rows
 * interleave by floats, then by float pairs (each 128-bit lane then holds
 * four rows of one column), then 128-bit lanes gather twice. */
INLINE void transpose16(__m512 r[16])
{
    __m512 a[16];
    for (int k = 0; k < 16; k += 2) {
        a[k] = _mm512_unpacklo_ps(r[k], r[k + 1]);
        a[k + 1] = _mm512_unpackhi_ps(r[k], r[k + 1]);
    }
    /* s[4g + c], lane L: rows 4g..4g+3 of column 4L + c. */
    __m512 s[16];
    for (int g = 0; g < 16; g += 4) {
        __m512d a0 = _mm512_castps_pd(a[g]), a1 = _mm512_castps_pd(a[g + 1]);
        __m512d a2 = _mm512_castps_pd(a[g + 2]), a3 = _mm512_castps_pd(a[g + 3]);
        s[g] = _mm512_castpd_ps(_mm512_unpacklo_pd(a0, a2));
        s[g + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a0, a2));
        s[g + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(a1, a3));
        s[g + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(a1, a3));
    }
    for (int c = 0; c < 4; c++) {
        /* lanes: (g0, L0) (g0, L2) (g1, L0) (g1, L2), and (g2..g3) */
        __m512 u = _mm512_shuffle_f32x4(s[c], s[4 + c], 0x88);
        __m512 v = _mm512_shuffle_f32x4(s[8 + c], s[12 + c], 0x88);
        /* lanes: (g0, L1) (g0, L3) (g1, L1) (g1, L3), and (g2..g3) */
        __m512 u1 = _mm512_shuffle_f32x4(s[c], s[4 + c], 0xdd);
        __m512 v1 = _mm512_shuffle_f32x4(s[8 + c], s[12 + c], 0xdd);
        r[c] = _mm512_shuffle_f32x4(u, v, 0x88);
        r[8 + c] = _mm512_shuffle_f32x4(u, v, 0xdd);
        r[4 + c] = _mm512_shuffle_f32x4(u1, v1, 0x88);
        r[12 + c] = _mm512_shuffle_f32x4(u1, v1, 0xdd);
    }
}

/* The same operations, in the same order, as binary.c's loops: a
 * and b are the op's first and second operands. */
INLINE __m512 apply(int op, __m512 a, __m512 b, __m512 alpha)
{
    switch (op) {
    case TT_TB_ADD: return _mm512_add_ps(a, _mm512_mul_ps(alpha, b));
    case TT_TB_SUB: return _mm512_sub_ps(a, _mm512_mul_ps(alpha, b));
    case TT_TB_MUL: return _mm512_mul_ps(a, b);
    default: return _mm512_div_ps(a, b);
    }
}

/* The block of output rows i0.. (nrows of them, lanes `rows` of t's
 * loads) and columns j0.. (ncols, lanes `cols` of x and out). A full block
 * (16 x 16, known at compile time) takes plain loads and stores. */
INLINE void block(const tt_tb_job *j, int op, bool t_first, __m512 alpha, int64_t i0,
                  int64_t j0, int nrows, int ncols, __mmask16 rows, __mmask16 cols)
{
    bool full = nrows == 16 && ncols == 16;
    __m512 r[16];
    for (int k = 0; k < 16; k++) {
        const float *tp = j->t + (j0 + k) * j->ldt + i0;
        r[k] = k >= ncols ? _mm512_setzero_ps()
               : full     ? _mm512_loadu_ps(tp)
                          : _mm512_maskz_loadu_ps(rows, tp);
    }
    transpose16(r);
    for (int i = 0; i < nrows; i++) {
        const float *xp = j->x + (i0 + i) * j->ldx + j0;
        float *op_ = j->out + (i0 + i) * j->ldo + j0;
        __m512 xv = full ? _mm512_loadu_ps(xp) : _mm512_maskz_loadu_ps(cols, xp);
        __m512 v = t_first ? apply(op, r[i], xv, alpha) : apply(op, xv, r[i], alpha);
        if (full)
            _mm512_storeu_ps(op_, v);
        else
            _mm512_mask_storeu_ps(op_, cols, v);
    }
}

/* Output rows [r0, r1) (one strip, at most TT_TB_STRIP rows), columns
 * [c0, c1), COLS columns per step: a step reads COLS rows of t, each over
 * the strip's width (TT_TB_STRIP * 4 contiguous bytes: whole lines, which
 * strips of 16 or 32 rows read at far below the memory's speed), and
 * writes the strip's rows COLS columns at a time. A step of 16 columns
 * read x and wrote out 64 bytes per row, 128 rows apart, more streams
 * than the prefetchers follow: 128 columns (512 bytes a row) took the
 * 4096 x 4096 add from 23 to 28 GB/s. The next step's rows of t are asked
 * for (into L2) before this step's blocks run, so that their misses
 * overlap the work instead of each stalling a block. */
INLINE void strip(const tt_tb_job *j, int64_t r0, int64_t r1, int64_t c0, int64_t c1, int op,
                  bool t_first)
{
    __m512 alpha = _mm512_set1_ps(j->alpha);
    for (int64_t js = c0; js < c1; js += COLS) {
        for (int64_t k = js + COLS; k < js + 2 * COLS && k < c1; k++)
            for (int64_t i = r0; i < r1; i += 16)
                _mm_prefetch((const char *)(j->t + k * j->ldt + i), _MM_HINT_T1);
        for (int64_t i0 = r0; i0 < r1; i0 += 16) {
            int nr = r1 - i0 < 16 ? (int)(r1 - i0) : 16;
            for (int64_t j0 = js; j0 < js + COLS && j0 < c1; j0 += 16) {
                int nc = c1 - j0 < 16 ? (int)(c1 - j0) : 16;
                if (nr == 16 && nc == 16)
                    block(j, op, t_first, alpha, i0, j0, 16, 16, 0xffff, 0xffff);
                else
                    block(j, op, t_first, alpha, i0, j0, nr, nc, (__mmask16)((1u << nr) - 1),
                          (__mmask16)((1u << nc) - 1));
            }
        }
    }
}

/* One function per op and operand order, so that strip() and block()
 * compile to straight-line code for each. */
typedef void strip_fn(const tt_tb_job *j, int64_t r0, int64_t r1, int64_t c0, int64_t c1);
#define STRIP_FN(NAME, OP, T_FIRST)                                            \
    static void NAME(const tt_tb_job *j, int64_t r0, int64_t r1, int64_t c0,   \
                     int64_t c1)                                               \
    {                                                                          \
        strip(j, r0, r1, c0, c1, OP, T_FIRST);                                 \
    }
STRIP_FN(add_xt, TT_TB_ADD, false)
STRIP_FN(add_tx, TT_TB_ADD, true)
STRIP_FN(sub_xt, TT_TB_SUB, false)
STRIP_FN(sub_tx, TT_TB_SUB, true)
STRIP_FN(mul_xt, TT_TB_MUL, false)
STRIP_FN(mul_tx, TT_TB_MUL, true)
STRIP_FN(div_xt, TT_TB_DIV, false)
STRIP_FN(div_tx, TT_TB_DIV, true)

void tt__tb_block_avx512(const tt_tb_job *j, int64_t r0, int64_t r1, int64_t c0, int64_t c1)
{
    static strip_fn *const fns[4][2] = {
        {add_xt, add_tx}, {sub_xt, sub_tx}, {mul_xt, mul_tx}, {div_xt, div_tx}};
    fns[j->op][j->t_first](j, r0, r1, c0, c1);
}
