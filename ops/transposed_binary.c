/* f32 add/sub/mul/div where one 2-d operand is a transposed view
 * (`A.t() + B`, `B * A.t()`): which calls qualify, and the parallel split.
 * The kernel is transposed_binary_avx512.c's; on a CPU without AVX-512F
 * (or with TT_NO_AVX512 set, as for vec_math.c) every call goes on to the
 * general loop, whose iterator walks such operands in buffered tiles.
 *
 * The kernel computes each element with the same float operations in the
 * same order as binary.c's scalar loops, so which path runs never
 * changes a result, not even a NaN's payload. */
#include "ops_impl.h"
#include "transposed_binary.h"
#include "vec_math.h"


/* t's two dims of size above 1, outer first; false if it has not two. */
static bool two_dims(const tt_tensor *t, int dims[2])
{
    int n = 0;
    for (int d = 0; d < t->ndim; d++)
        if (t->sizes[d] != 1) {
            if (n == 2)
                return false;
            dims[n++] = d;
        }
    return n == 2;
}

/* Below this many elements a chunk stays on one thread (as the
 * iterator's grain). */
#define GRAIN 32768

typedef struct {
    tt_tb_job job;
    int64_t parts, part_cols; /* each strip's parts, their width */
} split;

/* Tasks [begin, end): task k is part k % parts of strip k / parts. */
static void run_tasks(int64_t begin, int64_t end, void *vs)
{
    const split *s = vs;
    for (int64_t k = begin; k < end; k++) {
        int64_t r0 = k / s->parts * TT_TB_STRIP, c0 = k % s->parts * s->part_cols;
        int64_t r1 = r0 + TT_TB_STRIP, c1 = c0 + s->part_cols;
        tt__tb_block_avx512(&s->job, r0, r1 < s->job.rows ? r1 : s->job.rows, c0,
                            c1 < s->job.cols ? c1 : s->job.cols);
    }
}

bool tt__binary_transposed_f32(int op, float alpha, const tt_tensor *out,
                               const tt_tensor *a, const tt_tensor *b)
{
    int dims[2];
    if (out->dtype != TT_F32 || a->dtype != TT_F32 || b->dtype != TT_F32 ||
        !two_dims(out, dims) || tt__cpu_vector_level() < 2)
        return false;
    /* st[k] = operand k's steps along (rows, cols), out's rows first; the
     * operands have out's shape (broadcast views). */
    const tt_tensor *ts[3] = {out, a, b};
    int64_t st[3][2], rows = out->sizes[dims[0]], cols = out->sizes[dims[1]];
    for (int k = 0; k < 3; k++)
        st[k][0] = ts[k]->strides[dims[0]], st[k][1] = ts[k]->strides[dims[1]];
    if (st[0][1] != 1) { /* a column-major out: the transposed problem */
        if (st[0][0] != 1)
            return false;
        int64_t r = rows;
        rows = cols, cols = r;
        for (int k = 0; k < 3; k++) {
            int64_t s = st[k][0];
            st[k][0] = st[k][1], st[k][1] = s;
        }
    }
    /* Row-major: unit steps along a row, rows that do not overlap;
     * transposed: the other way round. Broadcast operands (step 0) and
     * strided views (steps above 1 inside a row) are neither. */
    bool row_major[3], transposed[3];
    for (int k = 0; k < 3; k++) {
        row_major[k] = st[k][1] == 1 && st[k][0] >= cols;
        transposed[k] = st[k][0] == 1 && st[k][1] >= rows;
    }
    bool t_first = transposed[1] && row_major[2];
    if (!row_major[0] || !(t_first || (row_major[1] && transposed[2])))
        return false;
    split s = {.job = {
        .op = op, .t_first = t_first, .alpha = alpha, .rows = rows, .cols = cols,
        .out = (float *)tt__ptr(out),
        .x = (const float *)tt__ptr(t_first ? b : a), .t = (const float *)tt__ptr(t_first ? a : b),
        .ldo = st[0][0], .ldx = st[t_first ? 2 : 1][0], .ldt = st[t_first ? 1 : 2][1],
    }};
    /* Few strips (a wide, short output) are cut into parts across their
     * columns (multiples of 16), so that every thread gets work. */
    int64_t strips = (rows + TT_TB_STRIP - 1) / TT_TB_STRIP, threads = tt_get_num_threads();
    s.parts = strips < threads ? (threads + strips - 1) / strips : 1;
    s.part_cols = ((cols + s.parts - 1) / s.parts + 15) / 16 * 16;
    s.parts = (cols + s.part_cols - 1) / s.part_cols;
    int64_t task = (rows < TT_TB_STRIP ? rows : TT_TB_STRIP) * s.part_cols;
    tt_parallel_for(strips * s.parts, GRAIN / task + 1, run_tasks, &s);
    return true;
}
