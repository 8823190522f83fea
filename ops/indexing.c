/* Built-in ops of the INDEX family (runtime/builtin_ops.h): gather,
 * scatter (src, value, add, reduce), index_select, index_copy, index_add,
 * slice_scatter, select_scatter and diagonal, with PyTorch's derivatives
 * written with these ops.
 *
 * One engine serves the first seven. Each is a walk over an "iteration
 * shape" (the index's for gather and scatter, the output's for
 * index_select, the source's for index_copy and index_add) in which one
 * operand is addressed along `dim` by the index's value instead of the
 * coordinate: the source for gather and index_select (SRC_INDEXED), the
 * destination for the scatters, index_copy and index_add (DST_INDEXED).
 * The walk is cut into lines: all coordinates but `dim` fixed, `dim`
 * running 0, 1, ... Lines write disjoint elements of the destination
 * (their coordinates off `dim` differ), so they run in parallel; within a
 * line positions run in increasing order, so several index positions
 * naming one element are applied in that order on any thread count
 * (PyTorch CPU's order): scatter_add and scatter_reduce are deterministic.
 *
 * A call with an index out of range fails naming the op, the first bad
 * value, the dim and its size, and leaves nothing changed: every value is
 * checked before anything is written (index_copy_ writes in place), except
 * where the output is fresh and the lines read every value anyway (row
 * gathers and scatter_adds): those check as they go, one read of the index
 * instead of two, and a failure drops the output and names the value from
 * the full check. */
#include "transformer_impl.h"
#include "tt_index.h"
#include "vec_math.h"

#include <float.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>

/* How the destination element d combines with the source element s. */
typedef enum {
    RED_ASSIGN, /* d = s (scatter, index_copy, gather, index_select) */
    RED_SUM,    /* d += s (scatter_add, reduce "sum" and "mean") */
    RED_PROD,
    RED_MEAN, /* summed like RED_SUM, divided by the count after */
    RED_AMAX,
    RED_AMIN,
    RED_ADD_ALPHA, /* d += alpha * s (index_add) */
} red_kind;

static const char *const reduce_names[] = {"sum", "prod", "mean", "amax", "amin"};
static const red_kind reduce_kinds[] = {RED_SUM, RED_PROD, RED_MEAN, RED_AMAX, RED_AMIN};

/* A walk over the iteration shape (see the top of the file). Strides are
 * in bytes; the index operand is read as i64 or i32. */
typedef struct {
    int nd, dim;
    int64_t size[TT_MAX_DIMS];
    char *dst;
    const char *src, *idx;
    int64_t sd[TT_MAX_DIMS], ss[TT_MAX_DIMS], si[TT_MAX_DIMS];
    bool dst_indexed, idx64;
    tt_dtype dt;
    red_kind red;
    double alpha;
    int64_t ialpha;
    int64_t *count; /* RED_MEAN: per destination element (contiguous dst) */
    size_t es;
    int64_t span; /* gather, scatter: the indexed operand's size along dim */
    int64_t nlines;
    /* Set where the output is fresh and the lines that lines_check_index
     * names serve the whole walk: each line checks its index values
     * against span and, on one out of range, raises *bad and writes
     * nothing of that line; the caller then reports the first bad value
     * as the pre-check would (one read of the index instead of two). */
    atomic_bool *bad;
    bool stream; /* whole rows copied with non-temporal stores */
    /* scatter_add's out left unwritten: its rows start from init (self,
     * laid out as out) where a block first adds to them (lazy_add_*) */
    const char *init;
} walk;

static inline int64_t load_index(const char *p, bool i64)
{
    return i64 ? *(const int64_t *)p : (int64_t)*(const int32_t *)p;
}

/* Arithmetic per dtype. Integers wrap as PyTorch's (two's complement, no
 * undefined overflow): the sums and products are taken unsigned. bool's
 * sum is or, its product and min and, its max or. */
#define OPS_FLOAT(T_)                                                          \
    static inline T_ add_##T_(T_ a, T_ b) { return a + b; }                    \
    static inline T_ mul_##T_(T_ a, T_ b) { return a * b; }                    \
    static inline T_ max_##T_(T_ a, T_ b) { return isnan(b) || b > a ? b : a; } \
    static inline T_ min_##T_(T_ a, T_ b) { return isnan(b) || b < a ? b : a; } \
    static inline T_ axpy_##T_(T_ d, T_ s, const walk *w) { return d + (T_)w->alpha * s; }
#define OPS_INT(T_, U_)                                                        \
    static inline T_ add_##T_(T_ a, T_ b) { return (T_)((U_)a + (U_)b); }      \
    static inline T_ mul_##T_(T_ a, T_ b) { return (T_)((U_)a * (U_)b); }      \
    static inline T_ max_##T_(T_ a, T_ b) { return b > a ? b : a; }            \
    static inline T_ min_##T_(T_ a, T_ b) { return b < a ? b : a; }            \
    static inline T_ axpy_##T_(T_ d, T_ s, const walk *w)                      \
    {                                                                          \
        return (T_)((U_)d + (U_)w->ialpha * (U_)s);                            \
    }
OPS_FLOAT(float)
OPS_FLOAT(double)
OPS_INT(uint8_t, unsigned)
OPS_INT(int32_t, uint32_t)
OPS_INT(int64_t, uint64_t)
static inline bool add_b8(bool a, bool b) { return a || b; }
static inline bool mul_b8(bool a, bool b) { return a && b; }
static inline bool max_b8(bool a, bool b) { return a || b; }
static inline bool min_b8(bool a, bool b) { return a && b; }
static inline bool axpy_b8(bool d, bool s, const walk *w) { return d || (w->ialpha && s); }

/* A block of m lines: `dim` running over its size, outside, and m lines
 * side by side along the last dim (when that is not `dim`), inside, so
 * a walk along dim 0 of a row-major tensor still reads rows (one element
 * after the other) rather than columns. Each destination element still
 * sees its positions in increasing order. d0, s0, i0: the block's first
 * elements; destination offsets (the mean's counts) are relative to dst. */
#define BLOCK_SETUP                                                            \
    const int64_t n = w->size[w->dim], sdd = w->sd[w->dim];                    \
    const int64_t ssd = w->ss[w->dim], sid = w->si[w->dim];                    \
    const int a_ = w->nd - 1;                                                  \
    const int64_t sda = w->sd[a_], ssa = w->ss[a_], sia = w->si[a_];           \
    const bool dix = w->dst_indexed, i64 = w->idx64;                           \
    const red_kind red = w->red
/* The reduction of one destination element d with s. */
#define REDUCE_ONE(N_, d, s)                                                   \
    switch (red) {                                                             \
    case RED_ASSIGN: *(d) = (s); break;                                        \
    case RED_SUM: *(d) = add_##N_(*(d), (s)); break;                           \
    case RED_MEAN:                                                             \
        *(d) = add_##N_(*(d), (s));                                            \
        w->count[((char *)(d) - w->dst) / (int64_t)sizeof(*(d))]++;              \
        break;                                                                 \
    case RED_PROD: *(d) = mul_##N_(*(d), (s)); break;                          \
    case RED_AMAX: *(d) = max_##N_(*(d), (s)); break;                          \
    case RED_AMIN: *(d) = min_##N_(*(d), (s)); break;                          \
    case RED_ADD_ALPHA: *(d) = axpy_##N_(*(d), (s), w); break;                 \
    }
/* m bytes of a row, streamed past the cache where the output is large. */
static inline void copy_row(const walk *w, char *dst, const char *src, int64_t bytes)
{
    if (w->stream)
        tt__stream_copy(dst, src, (size_t)bytes);
    else
        memcpy(dst, src, (size_t)bytes);
}

/* An i64 index block of a line that checks its own values (w->bad set):
 * true, with *bad raised, when one is out of [0, span). *diff gets the
 * or of every value's difference from the first (0: all name one row).
 * One pass with no exit, so it vectorizes. */
CPU_CLONES static bool scan_index_block(const walk *w, const int64_t *ix, int64_t m,
                                        uint64_t *diff)
{
    uint64_t d = 0, out = 0;
    if (w->bad) {
        const uint64_t span = (uint64_t)w->span, first = (uint64_t)ix[0];
        for (int64_t t = 0; t < m; t++) {
            d |= (uint64_t)ix[t] ^ first;
            out |= (uint64_t)ix[t] >= span;
        }
    } else {
        for (int64_t t = 1; t < m; t++)
            d |= (uint64_t)(ix[t] ^ ix[0]);
    }
    *diff = d;
    if (out)
        atomic_store(w->bad, true);
    return out;
}

/* Where the index is the same across the block (index_select, index_copy,
 * index_add: sia 0) it is read once per position and the block is a row
 * segment on both sides: the reduction's switch goes outside the loop
 * over it, which then runs over plain strided (or contiguous) elements. */
#define LINE_FN(T_, N_)                                                         \
    static void line_##N_(const walk *w, char *d0, const char *s0, const char *i0, \
                          int64_t m)                                           \
    {                                                                          \
        BLOCK_SETUP;                                                           \
        for (int64_t j = 0; j < n; j++) {                                      \
            if (sia == 0 && red != RED_MEAN) {                                 \
                int64_t k = load_index(i0 + j * sid, i64);                     \
                char *dr = d0 + (dix ? k : j) * sdd;                           \
                const char *sr = s0 + (dix ? j : k) * ssd;                     \
                for (int64_t t = 0; t < m; t++) {                              \
                    T_ *d = (T_ *)(dr + t * sda);                              \
                    T_ s = *(const T_ *)(sr + t * ssa);                        \
                    REDUCE_ONE(N_, d, s)                                       \
                }                                                              \
                continue;                                                      \
            }                                                                  \
            if (red == RED_SUM && dix && i64 && sia == 8 &&                    \
                sda == (int64_t)sizeof(T_) && ssa == (int64_t)sizeof(T_)) {    \
                /* scatter_add along an outer dim, unit steps across: a    \
                 * row added at once where the block's index names one */  \
                const int64_t *ix = (const int64_t *)(i0 + j * sid);           \
                const T_ *sr = (const T_ *)(s0 + j * ssd);                     \
                uint64_t diff;                                                 \
                if (scan_index_block(w, ix, m, &diff))                         \
                    return;                                                    \
                if (diff == 0) {                                               \
                    T_ *dr = (T_ *)(d0 + ix[0] * sdd);                         \
                    for (int64_t t = 0; t < m; t++)                            \
                        dr[t] = add_##N_(dr[t], sr[t]);                        \
                    continue;                                                  \
                }                                                              \
                for (int64_t t = 0; t < m; t++) {                              \
                    T_ *d = (T_ *)(d0 + t * (int64_t)sizeof(T_) + ix[t] * sdd); \
                    *d = add_##N_(*d, sr[t]);                                  \
                }                                                              \
                continue;                                                      \
            }                                                                  \
            for (int64_t t = 0; t < m; t++) {                                  \
                int64_t k = load_index(i0 + j * sid + t * sia, i64);           \
                T_ *d = (T_ *)(d0 + t * sda + (dix ? k : j) * sdd);            \
                T_ s = *(const T_ *)(s0 + t * ssa + (dix ? j : k) * ssd);      \
                REDUCE_ONE(N_, d, s)                                           \
            }                                                                  \
        }                                                                      \
    }
/* A block of scatter_add's unit-step lines on an unwritten out (w->init
 * set, every element of out in exactly one block): a row segment's first
 * add reads self's segment in place of out's (self + src, as the copy
 * and then the add would give), rows no position names are copied from
 * self at the end, so out is written once instead of copied and then
 * read back. A block whose index does not name one row per position
 * first copies every row not yet started, then adds as line_* does. */
#define LAZY_ADD_FN(T_, N_)                                                    \
    static void lazy_add_##N_(const walk *w, char *d0, const char *s0,         \
                              const char *i0, int64_t m)                       \
    {                                                                          \
        BLOCK_SETUP;                                                           \
        (void)ssa, (void)sia, (void)dix, (void)i64, (void)red;                 \
        const int64_t span = w->span, bytes = m * (int64_t)sizeof(T_);         \
        const char *init0 = w->init + (d0 - w->dst);                           \
        uint8_t flags[4096], *started = span <= 4096 ? flags : tt__malloc((size_t)span); \
        bool all = started == NULL; /* no room for flags: copy every row now */ \
        if (all)                                                               \
            for (int64_t k = 0; k < span; k++)                                 \
                memcpy(d0 + k * sdd, init0 + k * sdd, (size_t)bytes);          \
        else                                                                   \
            memset(started, 0, (size_t)span);                                  \
        for (int64_t j = 0; j < n; j++) {                                      \
            const int64_t *ix = (const int64_t *)(i0 + j * sid);               \
            const T_ *restrict sr = (const T_ *)(s0 + j * ssd);                \
            uint64_t diff;                                                     \
            if (scan_index_block(w, ix, m, &diff))                             \
                break;                                                         \
            if (diff == 0 && !all && !started[ix[0]]) {                        \
                T_ *restrict dr = (T_ *)(d0 + ix[0] * sdd);                    \
                const T_ *restrict ir = (const T_ *)(init0 + ix[0] * sdd);     \
                for (int64_t t = 0; t < m; t++)                                \
                    dr[t] = add_##N_(ir[t], sr[t]);                            \
                started[ix[0]] = 1;                                            \
                continue;                                                      \
            }                                                                  \
            if (diff != 0 && !all) {                                           \
                for (int64_t k = 0; k < span; k++)                             \
                    if (!started[k])                                           \
                        memcpy(d0 + k * sdd, init0 + k * sdd, (size_t)bytes);  \
                all = true;                                                    \
            }                                                                  \
            for (int64_t t = 0; t < m; t++) {                                  \
                T_ *d = (T_ *)(d0 + t * sda + ix[t] * sdd);                    \
                *d = add_##N_(*d, sr[t]);                                      \
            }                                                                  \
        }                                                                      \
        if (!all)                                                              \
            for (int64_t k = 0; k < span; k++)                                 \
                if (!started[k])                                               \
                    memcpy(d0 + k * sdd, init0 + k * sdd, (size_t)bytes);      \
        if (started != flags)                                                  \
            tt__free(started);                                                 \
    }
LAZY_ADD_FN(float, float)
LAZY_ADD_FN(double, double)
LAZY_ADD_FN(uint8_t, uint8_t)
LAZY_ADD_FN(int32_t, int32_t)
LAZY_ADD_FN(int64_t, int64_t)
LAZY_ADD_FN(bool, b8)

LINE_FN(float, float)
LINE_FN(double, double)
LINE_FN(uint8_t, uint8_t)
LINE_FN(int32_t, int32_t)
LINE_FN(int64_t, int64_t)
LINE_FN(bool, b8)

/* A plain element move, for RED_ASSIGN of any dtype by its size alone: a
 * row segment at once where the index is the same across the block and
 * both sides are contiguous along the last dim. */
#define MOVE_FN(T_)                                                            \
    static void move_##T_(const walk *w, char *d0, const char *s0, const char *i0, \
                          int64_t m)                                           \
    {                                                                          \
        BLOCK_SETUP;                                                           \
        (void)red;                                                             \
        const int64_t es = (int64_t)sizeof(T_);                                \
        for (int64_t j = 0; j < n; j++) {                                      \
            if (sia == 0) {                                                    \
                int64_t k = load_index(i0 + j * sid, i64);                     \
                char *dr = d0 + (dix ? k : j) * sdd;                           \
                const char *sr = s0 + (dix ? j : k) * ssd;                     \
                if (sda == es && ssa == es)                                    \
                    copy_row(w, dr, sr, m * es);                               \
                else                                                           \
                    for (int64_t t = 0; t < m; t++)                            \
                        memcpy(dr + t * sda, sr + t * ssa, sizeof(T_));        \
                continue;                                                      \
            }                                                                  \
            if (i64 && sia == 8 && sda == es && ssa == es) {                   \
                /* unit steps along the block (x.gather(0, idx) on         \
                 * row-major tensors): an indexed loop, or a row copy      \
                 * when the block's index names one whole row */           \
                const int64_t *ix = (const int64_t *)(i0 + j * sid);           \
                if (dix) {                                                     \
                    const T_ *sr = (const T_ *)(s0 + j * ssd);                 \
                    for (int64_t t = 0; t < m; t++)                            \
                        *(T_ *)(d0 + t * es + ix[t] * sdd) = sr[t];            \
                } else {                                                       \
                    T_ *dr = (T_ *)(d0 + j * sdd);                             \
                    uint64_t diff = 0; /* 0: an index naming one whole row */  \
                    if (scan_index_block(w, ix, m, &diff))                     \
                        return;                                                \
                    if (diff == 0)                                             \
                        copy_row(w, (char *)dr, s0 + ix[0] * ssd, m * es);     \
                    else                                                       \
                        for (int64_t t = 0; t < m; t++)                        \
                            dr[t] = *(const T_ *)(s0 + t * es + ix[t] * ssd);  \
                }                                                              \
                continue;                                                      \
            }                                                                  \
            for (int64_t t = 0; t < m; t++) {                                  \
                int64_t k = load_index(i0 + j * sid + t * sia, i64);           \
                memcpy(d0 + t * sda + (dix ? k : j) * sdd,                     \
                       s0 + t * ssa + (dix ? j : k) * ssd, sizeof(T_));        \
            }                                                                  \
        }                                                                      \
    }
MOVE_FN(uint8_t)
MOVE_FN(uint32_t)
MOVE_FN(uint64_t)

/* The indexed row of a unit-step line is read (written) in the index's
 * order: its lines are fetched first, all at once, rather than one miss at
 * a time (the hardware prefetcher sees no stream there). */
static inline void prefetch_indexed_row(const char *row, int64_t bytes, bool for_write)
{
    if (bytes <= 4096)
        return;
    if (for_write)
        for (int64_t o = 0; o < bytes; o += 64)
            __builtin_prefetch(row + o, 1);
    else
        for (int64_t o = 0; o < bytes; o += 64)
            __builtin_prefetch(row + o, 0);
}

/* gather and scatter along a dim that is contiguous in all three operands
 * with an i64 index (x.gather(-1, idx) on row-major tensors, the common
 * case): one line is a plain indexed loop. The generic walk above took ~9
 * cycles an element here. */
#define MOVE_UNIT_FN(T_)                                                       \
    CPU_CLONES static void move_unit_##T_(const walk *w, char *d0, const char *s0, \
                                          const char *i0, int64_t m)          \
    {                                                                          \
        (void)m; /* one line: `dim` is the last dim */                         \
        const int64_t n = w->size[w->dim];                                     \
        T_ *restrict d = (T_ *)d0;                                             \
        const T_ *restrict s = (const T_ *)s0;                                 \
        const int64_t *restrict ix = (const int64_t *)i0;                      \
        uint64_t diff;                                                         \
        if (!w->dst_indexed && w->bad && scan_index_block(w, ix, n, &diff))    \
            return;                                                            \
        prefetch_indexed_row(w->dst_indexed ? d0 : s0, w->span * (int64_t)sizeof(T_), \
                             w->dst_indexed);                                  \
        if (w->dst_indexed)                                                    \
            for (int64_t j = 0; j < n; j++)                                    \
                d[ix[j]] = s[j];                                               \
        else                                                                   \
            for (int64_t j = 0; j < n; j++)                                    \
                d[j] = s[ix[j]];                                               \
    }
MOVE_UNIT_FN(uint32_t)
MOVE_UNIT_FN(uint64_t)

/* scatter_add (and reduce "sum") on the same geometry: the positions
 * still in increasing order, so the sums are the generic walk's. */
#define ADD_UNIT_FN(T_)                                                        \
    static void add_unit_##T_(const walk *w, char *d0, const char *s0, const char *i0, \
                              int64_t m)                                       \
    {                                                                          \
        (void)m;                                                               \
        const int64_t n = w->size[w->dim];                                     \
        T_ *restrict d = (T_ *)d0;                                             \
        const T_ *restrict s = (const T_ *)s0;                                 \
        const int64_t *restrict ix = (const int64_t *)i0;                      \
        prefetch_indexed_row(d0, w->span * (int64_t)sizeof(T_), true);         \
        for (int64_t j = 0; j < n; j++)                                        \
            d[ix[j]] += s[j];                                                  \
    }
ADD_UNIT_FN(float)
ADD_UNIT_FN(double)

typedef void (*line_fn)(const walk *w, char *d0, const char *s0, const char *i0, int64_t m);

static line_fn pick_line(const walk *w)
{
    const int64_t es = (int64_t)w->es;
    bool unit = w->dim == w->nd - 1 && w->idx64 && w->sd[w->dim] == es &&
                w->ss[w->dim] == es && w->si[w->dim] == 8;
    if (w->init) /* scatter_add's unwritten out: lines_check_index holds */
        switch (w->dt) {
        case TT_F32: return lazy_add_float;
        case TT_F64: return lazy_add_double;
        case TT_U8: return lazy_add_uint8_t;
        case TT_I32: return lazy_add_int32_t;
        case TT_I64: return lazy_add_int64_t;
        default: return lazy_add_b8;
        }
    if (unit && w->red == RED_ASSIGN && (es == 4 || es == 8))
        return es == 4 ? move_unit_uint32_t : move_unit_uint64_t;
    if (unit && w->red == RED_SUM && (w->dt == TT_F32 || w->dt == TT_F64))
        return w->dt == TT_F32 ? add_unit_float : add_unit_double;
    if (w->red == RED_ASSIGN)
        return w->es == 1 ? move_uint8_t : w->es == 4 ? move_uint32_t : move_uint64_t;
    switch (w->dt) {
    case TT_F32: return line_float;
    case TT_F64: return line_double;
    case TT_U8: return line_uint8_t;
    case TT_I32: return line_int32_t;
    case TT_I64: return line_int64_t;
    default: return line_b8;
    }
}

/* scatter_add of whole rows into an unwritten 2-d out along dim 0, in two
 * parallel passes: the index's rows, cut along dim (each thread reading
 * whole rows, as gather's walk), give each position's row or -1 where
 * the row is mixed; then out's rows, cut among the threads, each add the
 * positions that name them in order. Cut across instead (lazy_add_*), two
 * threads ran no faster than one. */
typedef struct {
    const walk *w;
    int64_t *target; /* per position along dim: its out row, or -1 */
    uint8_t *started;
    atomic_bool mixed;
} rows_plan;

static void rows_target_task(int64_t b, int64_t e, void *vp)
{
    rows_plan *p = vp;
    const walk *w = p->w;
    for (int64_t j = b; j < e; j++) {
        const int64_t *ix = (const int64_t *)(w->idx + j * w->si[0]);
        uint64_t diff;
        if (scan_index_block(w, ix, w->size[1], &diff))
            return;
        p->target[j] = diff ? -1 : ix[0];
        if (diff)
            atomic_store(&p->mixed, true);
    }
}

/* A row's first add, self's row + src's, written around the cache: f32
 * only (the vector kernels' dtype); false for the plain loop. A later add
 * to the row on this thread reads what the streamed stores wrote. */
static bool rows_add_streamed(tt_dtype dt, void *dst, const void *a, const void *b, int64_t m)
{
    return dt == TT_F32 &&
           tt__vec2_f32(TT_VEC2_ADD | TT_VEC_STREAM, dst, (const float *)a, (const float *)b, m);
}

#define ROWS_ADD_FN(T_, N_)                                                    \
    static void rows_add_##N_(int64_t k0, int64_t k1, void *vp)                \
    {                                                                          \
        const rows_plan *p = vp;                                               \
        const walk *w = p->w;                                                  \
        const int64_t m = w->size[1], sd = w->sd[0];                           \
        for (int64_t j = 0; j < w->size[0]; j++) {                             \
            int64_t k = p->target[j];                                          \
            if (k < k0 || k >= k1)                                             \
                continue;                                                      \
            T_ *restrict dr = (T_ *)(w->dst + k * sd);                         \
            const T_ *restrict sr = (const T_ *)(w->src + j * w->ss[0]);       \
            const T_ *restrict ir = (const T_ *)(w->init + k * sd);            \
            if (p->started[k])                                                 \
                for (int64_t t = 0; t < m; t++)                                \
                    dr[t] = add_##N_(dr[t], sr[t]);                            \
            else if (!(w->stream && rows_add_streamed(w->dt, dr, ir, sr, m)))  \
                for (int64_t t = 0; t < m; t++)                                \
                    dr[t] = add_##N_(ir[t], sr[t]);                            \
            p->started[k] = 1;                                                 \
        }                                                                      \
        for (int64_t k = k0; k < k1; k++)                                      \
            if (!p->started[k])                                                \
                copy_row(w, w->dst + k * sd, w->init + k * sd, m * (int64_t)sizeof(T_)); \
        if (w->stream)                                                         \
            tt__stream_fence();                                                \
    }
ROWS_ADD_FN(float, float)
ROWS_ADD_FN(double, double)
ROWS_ADD_FN(uint8_t, uint8_t)
ROWS_ADD_FN(int32_t, int32_t)
ROWS_ADD_FN(int64_t, int64_t)
ROWS_ADD_FN(bool, b8)

/* True when it did the whole walk (or found a bad index value, in *w->bad);
 * false, having written nothing, for the walk to do it. */
static bool rows_scatter_add(walk *w)
{
    if (w->nd != 2 || w->dim != 0)
        return false;
    const int64_t n = w->size[0], m = w->size[1];
    rows_plan p = {.w = w, .target = tt__malloc(sizeof(int64_t) * (size_t)n),
                   .started = tt__calloc((size_t)w->span, 1)};
    bool done = false;
    if (p.target && p.started) {
        w->stream = tt__stream_worthwhile(w->span * w->sd[0]);
        tt_parallel_for(n, (32768 + m - 1) / m, rows_target_task, &p);
        done = atomic_load(w->bad) || !atomic_load(&p.mixed);
        if (done && !atomic_load(w->bad))
            tt_parallel_for(w->span, (32768 + m - 1) / m,
                            w->dt == TT_F32   ? rows_add_float
                            : w->dt == TT_F64 ? rows_add_double
                            : w->dt == TT_U8  ? rows_add_uint8_t
                            : w->dt == TT_I32 ? rows_add_int32_t
                            : w->dt == TT_I64 ? rows_add_int64_t
                                              : rows_add_b8, &p);
    }
    tt__free(p.target);
    tt__free(p.started);
    return done;
}

/* True when every line of a walk goes through a path that checks its own
 * index values (gather's move_unit_* and move_*'s unit-step branch,
 * scatter_add's unit-step branch of line_*), so the walk may run with
 * w->bad set and no pre-check. */
static bool lines_check_index(const walk *w)
{
    const int64_t es = (int64_t)w->es;
    const int a = w->nd - 1;
    if (w->dst_indexed)
        return w->red == RED_SUM && w->idx64 && w->dim != a && w->si[a] == 8 &&
               w->sd[a] == es && w->ss[a] == es;
    if (w->red != RED_ASSIGN || !w->idx64 || !(es == 4 || es == 8))
        return false;
    if (w->dim == a) /* move_unit_*, as pick_line picks it */
        return w->sd[a] == es && w->ss[a] == es && w->si[a] == 8;
    return w->si[a] == 8 && w->sd[a] == es && w->ss[a] == es;
}

/* Lines [b, e), numbered over the coordinates off `dim` (last dim
 * fastest): line b's coordinates decoded once, then stepped like an
 * odometer, in blocks of lines that differ only in the last dim. */
static void walk_task(int64_t b, int64_t e, void *vp)
{
    const walk *w = vp;
    line_fn fn = pick_line(w);
    const int a = w->nd - 1;
    const bool across = a != w->dim;
    int64_t c[TT_MAX_DIMS] = {0}, rem = b, od = 0, os = 0, oi = 0;
    for (int d = w->nd - 1; d >= 0; d--) {
        if (d == w->dim)
            continue;
        c[d] = rem % w->size[d];
        rem /= w->size[d];
        od += c[d] * w->sd[d], os += c[d] * w->ss[d], oi += c[d] * w->si[d];
    }
    for (int64_t l = b; l < e;) {
        int64_t m = across ? w->size[a] - c[a] : 1;
        m = m < e - l ? m : e - l;
        fn(w, w->dst + od, w->src + os, w->idx + oi, m);
        l += m;
        int from = w->nd - 1;
        if (across) {
            c[a] += m;
            od += m * w->sd[a], os += m * w->ss[a], oi += m * w->si[a];
            if (c[a] < w->size[a])
                continue;
            od -= c[a] * w->sd[a], os -= c[a] * w->ss[a], oi -= c[a] * w->si[a];
            c[a] = 0;
            from = a - 1;
        }
        for (int d = from; d >= 0; d--) {
            if (d == w->dim)
                continue;
            if (++c[d] < w->size[d]) {
                od += w->sd[d], os += w->ss[d], oi += w->si[d];
                break;
            }
            od -= (c[d] - 1) * w->sd[d], os -= (c[d] - 1) * w->ss[d];
            oi -= (c[d] - 1) * w->si[d];
            c[d] = 0;
        }
    }
    if (w->stream)
        tt__stream_fence();
}

/* Positions [b, e) along dim of every line: a source-indexed walk (gather,
 * index_select) cut along dim instead of across the lines, so that each
 * thread reads whole rows of the index and writes whole rows of the
 * output, in order (cut across, two threads read the two halves of every
 * row and ran ~1.1x one thread). Positions along dim write their own
 * output elements there, so any cut gives the same result. */
static void walk_dim_task(int64_t b, int64_t e, void *vp)
{
    walk part = *(const walk *)vp;
    part.size[part.dim] = e - b;
    part.dst += b * part.sd[part.dim];
    part.idx += b * part.si[part.dim];
    walk_task(0, part.nlines, &part);
}

static void walk_run(walk *w)
{
    int64_t n = 1;
    for (int d = 0; d < w->nd; d++)
        n *= w->size[d];
    if (n == 0)
        return;
    w->nlines = n / w->size[w->dim];
    /* parallel above ~32k elements, each take at least that many, taken
     * guided (a thread that falls behind takes less; with equal halves
     * gather ran at 0.68-0.75 of the add's rate, guided 0.76-0.79) */
    int64_t per = w->size[w->dim] > 0 ? w->size[w->dim] : 1;
    if (!w->dst_indexed && w->dim != w->nd - 1 && per >= 2 * tt_get_num_threads()) {
        int64_t g = (32768 + w->nlines - 1) / w->nlines;
        tt__parallel_for_guided(per, g, g, walk_dim_task, w);
        return;
    }
    int64_t grain = (32768 + per - 1) / per;
    tt__parallel_for_guided(w->nlines, grain, grain, walk_task, w);
}

/* Operand strides (in bytes) of t over an iteration shape of nd dims:
 * a 0-dim t is one element (stride 0). */
static void byte_strides(const tt_tensor *t, int nd, int64_t *out)
{
    int64_t es = (int64_t)tt_dtype_size(tt_dtype_of(t));
    for (int d = 0; d < nd; d++)
        out[d] = tt_ndim(t) == 0 ? 0 : tt_strides(t)[d] * es;
}

/* ------------------------------------------------------------- checks */

/* True when some size of t is a concrete 0 (an empty index skips every
 * check, as PyTorch's; a symbolic size is at least 2). */
static bool is_empty(const tt_tensor *t)
{
    for (int d = 0; d < tt_ndim(t); d++)
        if (!tt_size_is_sym(tt_sizes(t)[d]) && tt_sizes(t)[d] == 0)
            return true;
    return false;
}

static inline int nonempty_dim(const tt_tensor *t) { return tt_ndim(t) ? tt_ndim(t) : 1; }
static inline tt_size size_at(const tt_tensor *t, int d)
{
    return tt_ndim(t) ? tt_sizes(t)[d] : 1;
}

static tt_status want_index_dtype(const char *op, int argno, const tt_tensor *index, bool i32_too)
{
    tt_dtype it = tt_dtype_of(index);
    if (it == TT_I64 || (i32_too && it == TT_I32))
        return TT_OK;
    return tt_error(TT_EDTYPE, "%s: argument 'index' (#%d): expected %s indices, got %s", op,
                    argno, i32_too ? "i64 or i32" : "i64", tt_dtype_name(it));
}

/* Every value of index (any layout) in [0, bound): else the error names
 * the value, the dim and its size. Real tensors only. */
typedef struct {
    const char *p;
    bool i64;
    int64_t bound;
    _Atomic int64_t first_bad; /* the lowest position out of range; INT64_MAX: none */
} index_check;

/* Positions [b, e): lowers first_bad to the first one out of range. The
 * test runs in blocks with no exit inside, so it vectorizes and reads a
 * large index at memory speed (one exit per element ran ~1 cycle each);
 * only a block that holds a bad value is searched for it. */
#define CHECK_BLOCK 512
CPU_CLONES static void check_index_task(int64_t b, int64_t e, void *vp)
{
    index_check *c = vp;
    const uint64_t bound = (uint64_t)c->bound;
    const int64_t *v64 = (const int64_t *)c->p;
    const int32_t *v32 = (const int32_t *)c->p;
    for (int64_t i0 = b; i0 < e; i0 += CHECK_BLOCK) {
        int64_t i1 = e - i0 < CHECK_BLOCK ? e : i0 + CHECK_BLOCK;
        bool any = false; /* a negative value turns huge as unsigned */
        if (c->i64)
            for (int64_t i = i0; i < i1; i++)
                any |= (uint64_t)v64[i] >= bound;
        else
            for (int64_t i = i0; i < i1; i++)
                any |= (uint64_t)(int64_t)v32[i] >= bound;
        if (!any)
            continue;
        int64_t bad = i0;
        while ((uint64_t)(c->i64 ? v64[bad] : (int64_t)v32[bad]) < bound)
            bad++;
        int64_t seen = atomic_load(&c->first_bad);
        while (bad < seen && !atomic_compare_exchange_weak(&c->first_bad, &seen, bad))
            ;
        return; /* the task's later positions come after this one */
    }
}

static tt_status check_index_values(const char *op, int argno, const tt_tensor *index, int dim,
                                    int64_t bound)
{
    tt_tensor *ic = contig(index);
    if (!ic)
        return tt_errcode();
    /* in parallel (a large index is read at memory speed); the error
     * names the first value out of range, as a serial scan would */
    index_check c = {tt__ptr(ic), tt_dtype_of(ic) == TT_I64, bound, INT64_MAX};
    tt_parallel_for(tt_numel(ic), 65536, check_index_task, &c);
    tt_status st = TT_OK;
    int64_t i = atomic_load(&c.first_bad);
    if (i != INT64_MAX) {
        int64_t k = c.i64 ? ((const int64_t *)c.p)[i] : ((const int32_t *)c.p)[i];
        st = tt_error(TT_EINVAL, "%s: argument 'index' (#%d): index %lld is out of bounds "
                                 "for dimension %d with size %lld", op, argno, (long long)k,
                      dim, (long long)bound);
    }
    tt_release(ic);
    return st;
}

/* gather's and scatter's shape rules (PyTorch's gather_shape_check and
 * scatter_shape_check): index has self's number of dims (0-dim counting as
 * 1), index.size(d) <= self.size(d) for d != dim, and with src, src's
 * number of dims and index.size(d) <= src.size(d) for every d. */
static tt_status check_scatter_shapes(const char *op, const tt_tensor *self, int dim,
                                      const tt_tensor *index, const tt_tensor *src,
                                      int src_argno)
{
    char a[128], b[128], c[128];
    if (nonempty_dim(index) != nonempty_dim(self))
        return tt_error(TT_ESHAPE, "%s: argument 'index' (#3): expected as many dims as "
                                   "'self' (%d), got %d", op, tt_ndim(self), tt_ndim(index));
    if (src && nonempty_dim(index) != nonempty_dim(src))
        return tt_error(TT_ESHAPE, "%s: argument 'src' (#%d): expected as many dims as "
                                   "'index' (%d), got %d", op, src_argno, tt_ndim(index),
                        tt_ndim(src));
    for (int d = 0; d < nonempty_dim(index); d++) {
        tt_size is = size_at(index, d);
        if ((d != dim && !tt_size_le(is, size_at(self, d))) ||
            (src && !tt_size_le(is, size_at(src, d)))) {
            if (tt_errcode() == TT_EGRAPHBREAK)
                return tt_errcode(); /* an undecidable comparison */
            if (src)
                return tt_error(TT_ESHAPE, "%s: argument 'index' (#3): expected index %s to be "
                                           "smaller than self %s apart from dimension %d and "
                                           "to be smaller size than src %s", op,
                                tt_shape_str(index, a, sizeof a),
                                tt_shape_str(self, b, sizeof b), dim,
                                tt_shape_str(src, c, sizeof c));
            return tt_error(TT_ESHAPE, "%s: argument 'index' (#3): size does not match at "
                                       "dimension %d: expected index %s to be smaller than "
                                       "self %s apart from dimension %d", op, d,
                            tt_shape_str(index, a, sizeof a), tt_shape_str(self, b, sizeof b),
                            dim);
        }
    }
    return TT_OK;
}

/* True when index has self's size in every dim but `dim` (concrete). */
static bool index_covers(const tt_tensor *index, const tt_tensor *self, int dim)
{
    for (int d = 0; d < tt_ndim(self); d++)
        if (d != dim && (tt_ndim(index) != tt_ndim(self) ||
                         tt_sizes(index)[d] != tt_sizes(self)[d]))
            return false;
    return tt_ndim(index) == tt_ndim(self);
}

/* A new contiguous output of `like`'s dtype and (nd, sizes). */
static tt_tensor *new_out(bool fake, int nd, const tt_size *sizes, tt_dtype dt)
{
    return tt__ops_new(fake, nd, sizes, NULL, dt);
}

/* A contiguous copy of self (the functional scatters' starting point). */
static tt_tensor *copy_of(const tt_tensor *self, bool fake)
{
    tt_tensor *out = new_out(fake, tt_ndim(self), tt_sizes(self), tt_dtype_of(self));
    if (out && !fake && tt__copy_raw(out, self))
        return tt_release(out);
    return out;
}

/* Fills w's geometry for an iteration shape `it` (nd dims, 0-dim as [1]). */
static void walk_shape(walk *w, const tt_tensor *it, int dim)
{
    w->nd = nonempty_dim(it);
    w->dim = dim;
    for (int d = 0; d < w->nd; d++)
        w->size[d] = size_at(it, d);
}

/* ---------------------------------------------------------------- gather */

static tt_tensor *gather_impl(const tt_tensor *self, int64_t dim_, const tt_tensor *index,
                              bool fake)
{
    const char *op = tt__op_label(TT_OP_GATHER);
    fake = fake || is_fake(self) || is_fake(index);
    int dim = tt__op_dim(op, "dim", 2, dim_, tt_ndim(self));
    if (dim < 0)
        return NULL;
    bool empty = is_empty(index);
    if (!empty && (want_index_dtype(op, 3, index, false) ||
                   check_scatter_shapes(op, self, dim, index, NULL, 0)))
        return NULL;
    tt_tensor *out = new_out(fake, tt_ndim(index), tt_sizes(index), tt_dtype_of(self));
    if (!out || fake || empty)
        return out;
    atomic_bool bad = false;
    walk w = {.dst = tt__ptr(out), .src = tt__ptr(self), .idx = tt__ptr(index),
              .idx64 = true, .dt = tt_dtype_of(self), .red = RED_ASSIGN,
              .es = tt_dtype_size(tt_dtype_of(self)), .span = size_at(self, dim),
              .stream = tt__stream_worthwhile(tt_numel(out) * (int64_t)tt_dtype_size(tt_dtype_of(out)))};
    walk_shape(&w, index, dim);
    byte_strides(out, w.nd, w.sd);
    byte_strides(self, w.nd, w.ss);
    byte_strides(index, w.nd, w.si);
    /* out is fresh: where the lines check their own index values, a bad
     * one costs only out, and the message comes from the full check */
    if (lines_check_index(&w))
        w.bad = &bad;
    else if (check_index_values(op, 3, index, dim, size_at(self, dim)))
        return tt_release(out);
    walk_run(&w);
    if (atomic_load(&bad)) {
        check_index_values(op, 3, index, dim, size_at(self, dim));
        return tt_release(out);
    }
    return out;
}

static tt_status gather_kernel(tt_frame *f)
{
    tt_tensor *self, *index;
    int64_t dim;
    bool sparse;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &self)) || (st = tt_arg_int(f, 1, &dim)) ||
        (st = tt_arg_tensor(f, 2, &index)) || (st = tt_arg_bool(f, 3, &sparse)))
        return st;
    tt_tensor *r = gather_impl(self, dim, index, tt_frame_is_fake(f));
    return r ? tt_return(f, 0, r) : tt_errcode();
}

/* --------------------------------------------------------------- scatter */

/* One value of any dtype, which a walk reads with stride 0. */
typedef union {
    double f64;
    float f32;
    int64_t i64;
    int32_t i32;
    uint8_t u8;
    bool b;
} scalar_buf;

static void scalar_of(tt_dtype dt, double v, scalar_buf *out)
{
    memset(out, 0, sizeof *out);
    tt__store(out, dt, v);
}

/* What include_self=False starts the scattered-to elements from, as
 * PyTorch's: 0 (sum, mean), 1 (prod), the dtype's lowest (amax) or
 * highest (amin) value, infinities for floats. */
static void reduce_identity(red_kind red, tt_dtype dt, scalar_buf *v)
{
    bool fl = tt__dtype_is_float(dt), hi = red == RED_AMIN;
    scalar_of(dt, red == RED_PROD ? 1 : 0, v);
    if (red != RED_AMAX && red != RED_AMIN)
        return;
    switch (dt) {
    case TT_I64: v->i64 = hi ? INT64_MAX : INT64_MIN; break;
    case TT_I32: v->i32 = hi ? INT32_MAX : INT32_MIN; break;
    case TT_U8: v->u8 = hi ? 255 : 0; break;
    case TT_BOOL: v->b = hi; break;
    default: scalar_of(dt, fl ? (hi ? INFINITY : -INFINITY) : 0, v); break;
    }
}

/* scatter.src, scatter.value (src NULL), scatter_add and scatter_reduce:
 * self's copy with src's elements combined in at the index's positions.
 * `value` is scatter.value's; include_self as scatter_reduce's. */
static tt_tensor *scatter_impl(tt_builtin_id id, const tt_tensor *self, int64_t dim_,
                               const tt_tensor *index, const tt_tensor *src, double value,
                               red_kind red, bool include_self, bool fake)
{
    const char *op = tt__op_label(id);
    fake = fake || is_fake(self) || is_fake(index) || is_fake(src);
    int dim = tt__op_dim(op, "dim", 2, dim_, tt_ndim(self));
    if (dim < 0)
        return NULL;
    tt_dtype dt = tt_dtype_of(self);
    if (red == RED_MEAN && dt == TT_BOOL) {
        tt_error(TT_EDTYPE, "%s: argument 'self' (#1): reduce \"mean\" is not implemented "
                            "for bool", op);
        return NULL;
    }
    bool empty = is_empty(index);
    if (!empty && (want_index_dtype(op, 3, index, false) ||
                   (src && want_same_dtype(op, "src", 4, src, self)) ||
                   check_scatter_shapes(op, self, dim, index, src, 4)))
        return NULL;
    tt_tensor *out = new_out(fake, tt_ndim(self), tt_sizes(self), dt);
    if (!out || fake)
        return out;
    if (empty) /* self as it is (the index's shape went unchecked) */
        return tt__copy_raw(out, self) ? tt_release(out) : out;
    scalar_buf scalar, ident;
    walk w = {.dst = tt__ptr(out), .idx = tt__ptr(index), .idx64 = true, .dt = dt,
              .span = size_at(self, dim),
              .dst_indexed = true, .es = tt_dtype_size(dt)};
    walk_shape(&w, index, dim);
    byte_strides(out, w.nd, w.sd);
    byte_strides(index, w.nd, w.si);
    if (src) {
        w.src = tt__ptr(src);
        byte_strides(src, w.nd, w.ss);
    } else {
        scalar_of(dt, value, &scalar);
        w.src = (const char *)&scalar; /* every position reads the one value */
    }
    /* out is fresh: a sum's lines may check their own index values (the
     * message then comes from the full check, as gather's), and where the
     * index covers self but along dim, start from self row by row */
    atomic_bool bad = false;
    w.red = red;
    bool own_check = red == RED_SUM && include_self && src && lines_check_index(&w);
    if (own_check && index_covers(index, self, dim) && tt_is_contiguous(self))
        w.init = tt__ptr(self);
    else if (tt__copy_raw(out, self))
        return tt_release(out);
    if (own_check)
        w.bad = &bad;
    else if (check_index_values(op, 3, index, dim, size_at(self, dim)))
        return tt_release(out);
    int64_t *count = NULL;
    if (red != RED_ASSIGN && !include_self) {
        /* the scattered-to elements start from the reduction's identity */
        reduce_identity(red, dt, &ident);
        walk z = w;
        z.src = (const char *)&ident;
        memset(z.ss, 0, sizeof z.ss);
        z.red = RED_ASSIGN;
        walk_run(&z);
    }
    if (red == RED_MEAN) {
        int64_t n = tt_numel(out);
        count = tt__malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
        if (!count) {
            tt_error(TT_ENOMEM, "%s: out of memory for the mean's counts", op);
            return tt_release(out);
        }
        for (int64_t i = 0; i < n; i++)
            count[i] = include_self;
        w.count = count;
    }
    if (!(w.init && rows_scatter_add(&w)))
        walk_run(&w);
    if (atomic_load(&bad)) {
        check_index_values(op, 3, index, dim, size_at(self, dim));
        return tt_release(out);
    }
    if (count) {
        /* PyTorch's: divided by the count (0 counted as 1); integers floor */
        int64_t n = tt_numel(out);
        char *p = tt__ptr(out);
        for (int64_t i = 0; i < n; i++) {
            int64_t c = count[i] ? count[i] : 1;
            if (c == 1)
                continue;
            switch (dt) {
            case TT_F32: ((float *)p)[i] /= (float)c; break;
            case TT_F64: ((double *)p)[i] /= (double)c; break;
            case TT_I64: {
                int64_t v = ((int64_t *)p)[i], q = v / c;
                ((int64_t *)p)[i] = (v % c != 0 && v < 0) ? q - 1 : q;
                break;
            }
            case TT_I32: {
                int32_t v = ((int32_t *)p)[i], q = (int32_t)(v / c);
                ((int32_t *)p)[i] = (v % c != 0 && v < 0) ? q - 1 : q;
                break;
            }
            default: ((uint8_t *)p)[i] = (uint8_t)(((uint8_t *)p)[i] / c); break;
            }
        }
        tt__free(count);
    }
    return out;
}

/* The reduce argument of scatter_reduce.two. */
static tt_status parse_reduce(const char *op, const char *s, red_kind *out, int *code)
{
    for (int i = 0; i < 5; i++)
        if (s && !strcmp(s, reduce_names[i])) {
            *out = reduce_kinds[i];
            if (code)
                *code = i;
            return TT_OK;
        }
    return tt_error(TT_EINVAL, "%s: argument 'reduce' (#5): expected one of sum, prod, mean, "
                               "amax or amin, got \"%s\"", op, s ? s : "(null)");
}

/* tt::scatter.src, tt::scatter.value, tt::scatter_add, tt::scatter_reduce.two:
 * the row's data is its id. */
static tt_status scatter_kernel(tt_frame *f)
{
    tt_builtin_id id = (tt_builtin_id)(intptr_t)tt_frame_userdata(f);
    tt_tensor *self, *index, *src = NULL;
    int64_t dim;
    double value = 0;
    red_kind red = id == TT_OP_SCATTER_ADD ? RED_SUM : RED_ASSIGN;
    bool include_self = true;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &self)) || (st = tt_arg_int(f, 1, &dim)) ||
        (st = tt_arg_tensor(f, 2, &index)))
        return st;
    if (id == TT_OP_SCATTER_VALUE)
        st = tt_arg_scalar(f, 3, &value, NULL);
    else
        st = tt_arg_tensor(f, 3, &src);
    if (!st && id == TT_OP_SCATTER_REDUCE_TWO) {
        const char *r;
        if ((st = tt_arg_str(f, 4, &r)) || (st = parse_reduce(tt__op_label(id), r, &red, NULL)) ||
            (st = tt_arg_bool(f, 5, &include_self)))
            return st;
    }
    if (st)
        return st;
    tt_tensor *r = scatter_impl(id, self, dim, index, src, value, red, include_self,
                                tt_frame_is_fake(f));
    return r ? tt_return(f, 0, r) : tt_errcode();
}

/* ------------------------------------------------- index_select, _copy, _add */

/* index 0-dim or 1-dim, of i64 (or i32 with i32_too): its length. */
static tt_status check_index_vector(const char *op, int argno, const tt_tensor *index,
                                    bool i32_too)
{
    if (tt_ndim(index) > 1)
        return tt_error(TT_ESHAPE, "%s: argument 'index' (#%d): expected a 0-dim or 1-dim "
                                   "index, got %d dims", op, argno, tt_ndim(index));
    return want_index_dtype(op, argno, index, i32_too);
}

static tt_tensor *index_select_impl(const tt_tensor *self, int64_t dim_, const tt_tensor *index,
                                    bool fake)
{
    const char *op = tt__op_label(TT_OP_INDEX_SELECT);
    fake = fake || is_fake(self) || is_fake(index);
    int dim = tt__op_dim(op, "dim", 2, dim_, tt_ndim(self));
    if (dim < 0 || check_index_vector(op, 3, index, true))
        return NULL;
    tt_size n = tt_ndim(index) ? tt_sizes(index)[0] : 1;
    tt_size sizes[TT_MAX_DIMS];
    int nd = tt_ndim(self);
    if (nd == 0) {
        /* PyTorch's answer: self itself, for indices that are all 0; with
         * no index at all it returns an element it never wrote, which tt
         * refuses */
        if (tt_ndim(index) && !tt_size_is_sym(n) && n == 0) {
            tt_error(TT_ESHAPE, "%s: argument 'index' (#3): a 0-dim self needs at least one "
                                "index, got none", op);
            return NULL;
        }
        tt_tensor *out = copy_of(self, fake);
        if (out && !fake && check_index_values(op, 3, index, 0, 1))
            return tt_release(out);
        return out;
    }
    memcpy(sizes, tt_sizes(self), sizeof(tt_size) * (size_t)nd);
    if (nd)
        sizes[dim] = n;
    tt_tensor *out = new_out(fake, nd, sizes, tt_dtype_of(self));
    if (!out || fake || tt_numel(out) == 0)
        return out;
    if (check_index_values(op, 3, index, dim, size_at(self, dim)))
        return tt_release(out);
    walk w = {.dst = tt__ptr(out), .src = tt__ptr(self), .idx = tt__ptr(index),
              .idx64 = tt_dtype_of(index) == TT_I64, .dt = tt_dtype_of(self),
              .red = RED_ASSIGN, .es = tt_dtype_size(tt_dtype_of(self)),
              .stream = tt__stream_worthwhile(tt_numel(out) * (int64_t)tt_dtype_size(tt_dtype_of(out)))};
    walk_shape(&w, out, dim);
    byte_strides(out, w.nd, w.sd);
    byte_strides(self, w.nd, w.ss);
    /* the index runs along dim only */
    w.si[dim] = tt_ndim(index) ? tt_strides(index)[0] * (int64_t)tt_dtype_size(tt_dtype_of(index))
                               : 0;
    walk_run(&w);
    return out;
}

static tt_status index_select_kernel(tt_frame *f)
{
    tt_tensor *self, *index;
    int64_t dim;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &self)) || (st = tt_arg_int(f, 1, &dim)) ||
        (st = tt_arg_tensor(f, 2, &index)))
        return st;
    tt_tensor *r = index_select_impl(self, dim, index, tt_frame_is_fake(f));
    return r ? tt_return(f, 0, r) : tt_errcode();
}

/* index_copy / index_add: the checks shared by the functional ops and
 * index_copy_ (PyTorch's index_copy_ and index_add_ checks). */
static tt_status check_index_put_along(const char *op, const tt_tensor *self, int dim,
                                       const tt_tensor *index, const tt_tensor *source,
                                       bool i32_too)
{
    char a[128], b[128];
    tt_status st;
    if ((st = check_index_vector(op, 3, index, i32_too)) ||
        (st = want_same_dtype(op, "source", 4, source, self)))
        return st;
    tt_size n = tt_ndim(index) ? tt_sizes(index)[0] : 1;
    tt_size sn = size_at(source, tt_ndim(source) ? dim : 0);
    if (nonempty_dim(source) != nonempty_dim(self))
        return tt_error(TT_ESHAPE, "%s: argument 'source' (#4): expected as many dims as "
                                   "'self' (%d), got %d", op, tt_ndim(self), tt_ndim(source));
    if (!tt_size_eq(n, sn))
        return tt_errcode() == TT_EGRAPHBREAK
                   ? TT_EGRAPHBREAK
                   : tt_error(TT_ESHAPE, "%s: argument 'index' (#3): number of "
                                                  "indices (%lld) should be equal to "
                                                  "source.size(dim) (%lld), for dim %d", op,
                                       (long long)n, (long long)sn, dim);
    for (int d = 0; d < nonempty_dim(self); d++)
        if (d != dim && !tt_size_eq(size_at(self, d), size_at(source, d)))
            return tt_errcode() == TT_EGRAPHBREAK
                       ? TT_EGRAPHBREAK
                       : tt_error(TT_ESHAPE, "%s: argument 'source' (#4): expected "
                                                      "source %s to match self %s apart from "
                                                      "dimension %d", op,
                                           tt_shape_str(source, a, sizeof a),
                                           tt_shape_str(self, b, sizeof b), dim);
    return TT_OK;
}

/* Writes source into out (self's copy, or self for index_copy_) along dim
 * at index's positions: copied, or added times alpha. */
static tt_status index_put_along(const char *op, tt_tensor *out, int dim, const tt_tensor *index,
                                 const tt_tensor *source, red_kind red, double alpha)
{
    if (check_index_values(op, 3, index, dim, size_at(out, dim)))
        return tt_errcode();
    walk w = {.dst = tt__ptr(out), .src = tt__ptr(source), .idx = tt__ptr(index),
              .idx64 = tt_dtype_of(index) == TT_I64, .dt = tt_dtype_of(out), .red = red,
              .dst_indexed = true, .alpha = alpha, .ialpha = (int64_t)alpha,
              .es = tt_dtype_size(tt_dtype_of(out))};
    walk_shape(&w, source, dim);
    byte_strides(out, w.nd, w.sd);
    byte_strides(source, w.nd, w.ss);
    w.si[dim] = tt_ndim(index) ? tt_strides(index)[0] * (int64_t)tt_dtype_size(tt_dtype_of(index))
                               : 0;
    walk_run(&w);
    return TT_OK;
}

enum { IDX_COPY, IDX_ADD, IDX_COPY_INPLACE };

static tt_tensor *index_along_impl(int kind, tt_tensor *self, int64_t dim_,
                                   const tt_tensor *index, const tt_tensor *source, double alpha,
                                   bool fake)
{
    tt_builtin_id id = kind == IDX_ADD ? TT_OP_INDEX_ADD
                       : kind == IDX_COPY ? TT_OP_INDEX_COPY : TT_OP_INDEX_COPY_;
    const char *op = tt__op_label(id);
    fake = fake || is_fake(self) || is_fake(index) || is_fake(source);
    int dim = tt__op_dim(op, "dim", 2, dim_, tt_ndim(self));
    if (dim < 0 || check_index_put_along(op, self, dim, index, source, kind == IDX_ADD))
        return NULL;
    if (kind == IDX_COPY_INPLACE) {
        if (!fake && tt__check_write(op, self, NULL))
            return NULL;
        if (!fake && tt_numel(source) && index_put_along(op, self, dim, index, source,
                                                         RED_ASSIGN, 1))
            return NULL;
        return tt_retain(self);
    }
    tt_tensor *out = copy_of(self, fake);
    if (!out || fake || tt_numel(source) == 0)
        return out;
    if (index_put_along(op, out, dim, index, source, kind == IDX_ADD ? RED_ADD_ALPHA : RED_ASSIGN,
                        alpha))
        return tt_release(out);
    return out;
}

/* tt::index_copy, tt::index_add, tt::index_copy_ (the data is the id). */
static tt_status index_along_kernel(tt_frame *f)
{
    tt_builtin_id id = (tt_builtin_id)(intptr_t)tt_frame_userdata(f);
    int kind = id == TT_OP_INDEX_ADD ? IDX_ADD : id == TT_OP_INDEX_COPY ? IDX_COPY
                                                                        : IDX_COPY_INPLACE;
    tt_tensor *self, *index, *source;
    int64_t dim;
    double alpha = 1;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &self)) || (st = tt_arg_int(f, 1, &dim)) ||
        (st = tt_arg_tensor(f, 2, &index)) || (st = tt_arg_tensor(f, 3, &source)) ||
        (kind == IDX_ADD && (st = tt_arg_scalar(f, 4, &alpha, NULL))))
        return st;
    tt_tensor *r = index_along_impl(kind, self, dim, index, source, alpha, tt_frame_is_fake(f));
    if (!r)
        return tt_errcode();
    if (kind == IDX_COPY_INPLACE) {
        tt_release(r);
        return tt_return_self(f, 0, 0);
    }
    return tt_return(f, 0, r);
}

/* ------------------------------------------------ slice/select_scatter */

/* self's copy (self's layout, as PyTorch's clone) with src written into
 * the slice (or the select) of it. */
static tt_tensor *slice_scatter_impl(bool select, const tt_tensor *self, const tt_tensor *src,
                                     int64_t dim_, int64_t start, int64_t end, int64_t step,
                                     bool fake)
{
    tt_builtin_id id = select ? TT_OP_SELECT_SCATTER : TT_OP_SLICE_SCATTER;
    const char *op = tt__op_label(id);
    char a[128], b[128];
    fake = fake || is_fake(self) || is_fake(src);
    int dim = tt__op_dim(op, "dim", 3, dim_, tt_ndim(self));
    if (dim < 0)
        return NULL;
    if (tt_ndim(self) == 0) {
        tt_error(TT_ESHAPE, "%s: argument 'self' (#1): expected a tensor with dims, got a "
                            "0-dim one", op);
        return NULL;
    }
    tt_size strides[TT_MAX_DIMS];
    tt__strides_like(self, strides);
    tt_tensor *out = tt__empty_impl(tt_ndim(self), tt_sizes(self), strides, tt_dtype_of(self),
                                    fake);
    if (!out)
        return NULL;
    tt_tensor *v = select ? tt__select_raw(out, dim, start)
                          : tt__slice_raw(out, dim, start, end, step);
    if (!v) {
        /* the view's error names tt_select / tt_slice: name the op */
        tt_error(tt_errcode(), "%s: %s", op, tt_errmsg());
        return tt_release(out);
    }
    if (!sizes_are(src, tt_ndim(v), tt_sizes(v))) {
        tt_error(tt_errcode() == TT_EGRAPHBREAK ? TT_EGRAPHBREAK : TT_ESHAPE,
                 "%s: argument 'src' (#2): expected src to have a size equal to the slice of "
                 "self: src size = %s, slice size = %s", op, tt_shape_str(src, a, sizeof a),
                 tt_shape_str(v, b, sizeof b));
        tt_release(v);
        return tt_release(out);
    }
    if (!fake && (tt__copy_raw(out, self) || tt__copy_raw(v, src))) {
        tt_release(v);
        return tt_release(out);
    }
    tt_release(v);
    return out;
}

static tt_status slice_scatter_kernel(tt_frame *f)
{
    bool select = (intptr_t)tt_frame_userdata(f) == TT_OP_SELECT_SCATTER;
    tt_tensor *self, *src;
    int64_t dim, start = 0, end = INT64_MAX, step = 1;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &self)) || (st = tt_arg_tensor(f, 1, &src)) ||
        (st = tt_arg_int(f, 2, &dim)))
        return st;
    if (select)
        st = tt_arg_int(f, 3, &start);
    else if ((!tt_arg_is_none(f, 3) && (st = tt_arg_int(f, 3, &start))) ||
             (!tt_arg_is_none(f, 4) && (st = tt_arg_int(f, 4, &end))) ||
             (st = tt_arg_int(f, 5, &step)))
        return st;
    if (st)
        return st;
    tt_tensor *r = slice_scatter_impl(select, self, src, dim, start, end, step,
                                      tt_frame_is_fake(f));
    return r ? tt_return(f, 0, r) : tt_errcode();
}

/* -------------------------------------------------------------- diagonal */

/* The diagonal's geometry (PyTorch's diagonal): dims dim1 and dim2 go,
 * a last dim of the diagonal's length comes, stride their sum, the
 * storage offset moved to the offset-th diagonal's first element. */
static tt_status diagonal_geometry(const char *op, const tt_tensor *self, int64_t offset,
                                   int64_t d1_, int64_t d2_, int *nd, tt_size *sizes,
                                   tt_size *strides, tt_size *off)
{
    int n = tt_ndim(self);
    if (n < 2)
        return tt_error(TT_ESHAPE, "%s: argument 'self' (#1): expected at least 2 dims, got %d",
                        op, n);
    int d1 = tt__op_dim(op, "dim1", 3, d1_, n), d2 = d1 < 0 ? -1 : tt__op_dim(op, "dim2", 4, d2_, n);
    if (d1 < 0 || d2 < 0)
        return tt_errcode();
    if (d1 == d2)
        return tt_error(TT_EINVAL, "%s: argument 'dim2' (#4): diagonal dimensions cannot be "
                                   "identical %lld, %lld", op, (long long)d1_, (long long)d2_);
    const tt_size *sz = tt_sizes(self), *st = tt_strides(self);
    tt_size len, o = tt_storage_offset(self);
    /* len = max(min(size1 + min(offset, 0), size2 - max(offset, 0)), 0),
     * compared before subtracting: sizes are never negative */
    tt_size s1 = sz[d1], s2 = sz[d2];
    if (offset >= 0 ? tt_size_le(s2, offset) : tt_size_le(s1, -offset)) {
        len = 0; /* PyTorch leaves the offset where it is then */
    } else {
        tt_size a = offset < 0 ? tt_sym_add(s1, offset) : s1;
        tt_size b = offset > 0 ? tt_sym_sub(s2, offset) : s2;
        len = tt_size_le(a, b) ? a : b;
        tt_size step = offset >= 0 ? tt_sym_mul(st[d2], offset) : tt_sym_mul(st[d1], -offset);
        o = tt_sym_add(o, step);
    }
    if (tt_errcode() == TT_EGRAPHBREAK)
        return TT_EGRAPHBREAK;
    int k = 0;
    for (int d = 0; d < n; d++)
        if (d != d1 && d != d2)
            sizes[k] = sz[d], strides[k] = st[d], k++;
    sizes[k] = len;
    strides[k] = tt_sym_add(st[d1], st[d2]);
    *nd = k + 1;
    *off = o;
    return TT_OK;
}

static tt_tensor *diagonal_impl(const tt_tensor *self, int64_t offset, int64_t d1, int64_t d2)
{
    int nd;
    tt_size sizes[TT_MAX_DIMS], strides[TT_MAX_DIMS], off;
    if (diagonal_geometry(tt__op_label(TT_OP_DIAGONAL), self, offset, d1, d2, &nd, sizes,
                          strides, &off))
        return NULL;
    return tt__make_view(self, nd, sizes, strides, off);
}

static tt_status diagonal_kernel(tt_frame *f)
{
    tt_tensor *self;
    int64_t offset, d1, d2;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &self)) || (st = tt_arg_int(f, 1, &offset)) ||
        (st = tt_arg_int(f, 2, &d1)) || (st = tt_arg_int(f, 3, &d2)))
        return st;
    tt_tensor *r = diagonal_impl(self, offset, d1, d2);
    return r ? tt_return(f, 0, r) : tt_errcode();
}

/* tt::diagonal_backward(grad_output, input_sizes, offset, dim1, dim2):
 * zeros of the input's sizes with the gradient on the diagonal. */
static tt_status diagonal_backward_kernel(tt_frame *f)
{
    const char *op = tt__op_label(TT_OP_DIAGONAL_BACKWARD);
    tt_tensor *g;
    const int64_t *in_sizes;
    int n;
    int64_t offset, d1, d2;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &g)) || (st = tt_arg_ints(f, 1, &in_sizes, &n)) ||
        (st = tt_arg_int(f, 2, &offset)) || (st = tt_arg_int(f, 3, &d1)) ||
        (st = tt_arg_int(f, 4, &d2)))
        return st;
    bool fake = tt_frame_is_fake(f) || is_fake(g);
    tt_tensor *z = tt__empty_named(op, n, in_sizes, NULL, tt_dtype_of(g), fake);
    if (!z)
        return tt_errcode();
    int nd;
    tt_size sizes[TT_MAX_DIMS], strides[TT_MAX_DIMS], off;
    if ((st = diagonal_geometry(op, z, offset, d1, d2, &nd, sizes, strides, &off)))
        goto fail;
    if ((st = want_sizes(op, "grad_output", 1, g, nd, sizes)))
        goto fail;
    if (!fake) {
        tt_tensor *v = tt__make_view(z, nd, sizes, strides, off);
        st = v ? tt__fill_raw(z, 0) : tt_errcode();
        if (!st)
            st = tt__copy_raw(v, g);
        tt_release(v);
        if (st)
            goto fail;
    }
    return tt_return(f, 0, z);
fail:
    tt_release(z);
    return st;
}

/* ----------------------------------------------------------- derivatives */

/* Saved by every row: the index as tensor 0 (and for scatter_reduce
 * self, src and the result as 1, 2, 3), dim, self's shape. In-place
 * index_copy_ saves nothing it wrote. */
static tt_status setup_index(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                             const tt_value *out, int nout)
{
    (void)nin, (void)nout;
    tt_builtin_id id = (tt_builtin_id)(intptr_t)tt_ctx_userdata(ctx);
    tt_status st;
    tt_tensor *ts[4] = {in[2].u.t, NULL, NULL, NULL};
    int n = 1;
    switch (id) {
    case TT_OP_SCATTER_REDUCE_TWO: {
        red_kind red = RED_SUM;
        int code = 0;
        if ((st = parse_reduce(tt__op_label(id), in[4].u.s, &red, &code)) ||
            (st = tt_ctx_save_int(ctx, "reduce", code)) ||
            (st = tt_ctx_save_int(ctx, "include_self", in[5].u.b)))
            return st;
        ts[1] = in[0].u.t, ts[2] = in[3].u.t, ts[3] = out[0].u.t, n = 4;
        break;
    }
    case TT_OP_INDEX_ADD:
        if ((st = tt_ctx_save_float(ctx, "alpha", in[4].kind == TT_V_INT ? (double)in[4].u.i
                                                   : in[4].kind == TT_V_BOOL ? in[4].u.b
                                                                             : in[4].u.f)))
            return st;
        /* fall through */
    case TT_OP_INDEX_COPY:
    case TT_OP_INDEX_COPY_:
        if ((st = tt_ctx_save_shape(ctx, "source", in[3].u.t)))
            return st;
        break;
    default: break;
    }
    if ((id == TT_OP_SCATTER_SRC || id == TT_OP_SCATTER_ADD || id == TT_OP_SCATTER_REDUCE_TWO) &&
        (st = tt_ctx_save_shape(ctx, "src", in[3].u.t)))
        return st;
    if ((st = tt_ctx_save_shape(ctx, "self", in[0].u.t)) ||
        (st = tt_ctx_save_int(ctx, "dim", in[1].u.i)))
        return st;
    return tt_ctx_save_for_backward(ctx, n, ts);
}

/* zeros of self's saved shape, in g's dtype (new_zeros). */
static tt_tensor *zeros_of(tt_autograd_ctx *ctx, const char *key, const tt_tensor *g)
{
    const int64_t *s;
    int n;
    if (tt_ctx_get_ints(ctx, key, &s, &n))
        return NULL;
    return tt_zeros(n, s, tt_dtype_of(g));
}

/* gather: d/dself = zeros.scatter_add(dim, index, grad) (PyTorch's
 * gather_backward). */
static tt_status gather_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                 tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    int64_t dim;
    tt_status st = tt_ctx_get_int(ctx, "dim", &dim);
    if (st || !tt_ctx_needs_input_grad(ctx, 0))
        return st;
    tt_tensor *z = zeros_of(ctx, "self", g[0]);
    if (!z)
        return tt_errcode();
    tt_tensor *r = tt_scatter_add(z, dim, tt_ctx_saved(ctx, 0), g[0]);
    tt_release(z);
    return tt__put_grad(ctx, gi, 0, r);
}

/* src's gradient from grad.gather(dim, index), of index's shape: zeros
 * after it where src is larger (src's elements past the index's are never
 * read). PyTorch 1.13 returns the index-shaped gradient there and its
 * engine refuses it; tt grows it to src's shape a dim at a time, with
 * slice_scatter into zeros (sizes may be symbols). Takes g. */
static tt_tensor *fit_src_grad(tt_autograd_ctx *ctx, tt_tensor *g)
{
    const int64_t *s;
    int n;
    if (!g || tt_ctx_get_ints(ctx, "src", &s, &n) || n == 0 || tt_ndim(g) != n)
        return g;
    for (int d = 0; d < n && g; d++) {
        tt_size gd = tt_sizes(g)[d];
        if (tt_size_eq(gd, s[d]))
            continue;
        int64_t sizes[TT_MAX_DIMS];
        memcpy(sizes, tt_sizes(g), sizeof(int64_t) * (size_t)n);
        sizes[d] = s[d];
        tt_tensor *z = tt_zeros(n, sizes, tt_dtype_of(g));
        tt_tensor *r = z ? tt_slice_scatter(z, g, d, 0, gd, 1) : NULL;
        tt_release(z);
        tt_release(g);
        g = r;
    }
    return g;
}

/* scatter.src: d/dself = grad.scatter(dim, index, 0), d/dsrc =
 * grad.gather(dim, index); scatter.value: the first; scatter_add: grad and
 * the second. */
static tt_status scatter_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                  tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    tt_builtin_id id = (tt_builtin_id)(intptr_t)tt_ctx_userdata(ctx);
    int64_t dim;
    tt_status st = tt_ctx_get_int(ctx, "dim", &dim);
    tt_tensor *index = tt_ctx_saved(ctx, 0);
    if (st)
        return st;
    if (tt_ctx_needs_input_grad(ctx, 0))
        st = tt__put_grad(ctx, gi, 0, id == TT_OP_SCATTER_ADD ? tt_retain(g[0])
                                                              : tt_scatter_value(g[0], dim, index, 0));
    if (!st && id != TT_OP_SCATTER_VALUE && tt_ctx_needs_input_grad(ctx, 3))
        st = tt__put_grad(ctx, gi, 3, fit_src_grad(ctx, tt_gather(g[0], dim, index)));
    return st;
}

/* t == v, t != v: bool tensors. */
static tt_tensor *cmp_scalar(tt_builtin_id id, const tt_tensor *t, double v)
{
    return tt__call_op(id, TT_ARGS(tt_v_tensor(t), tt_v_float(v)));
}
static tt_tensor *eq_scalar(const tt_tensor *t, double v) { return cmp_scalar(TT_OP_EQ_SCALAR, t, v); }

/* a == b as self's dtype (0 or 1). */
static tt_tensor *eq_as(const tt_tensor *a, const tt_tensor *b, tt_dtype dt)
{
    tt_tensor *m = tt_eq(a, b);
    tt_tensor *r = m ? tt_to_dtype(m, dt) : NULL;
    tt_release(m);
    return r;
}

/* The part of src that the scatter reads: src narrowed to index's shape
 * (index may be smaller than src in every dim; the rest of src is never
 * read, and its gradient is zero, which fit_src_grad pads back). A new
 * reference. */
static tt_tensor *src_as_index(tt_tensor *src, const tt_tensor *index)
{
    tt_tensor *r = tt_retain(src);
    for (int d = 0; r && d < tt_ndim(index) && d < tt_ndim(src); d++) {
        if (tt_size_eq(tt_sizes(index)[d], tt_sizes(src)[d]))
            continue;
        tt_tensor *v = tt_narrow(r, d, 0, tt_sizes(index)[d]);
        tt_release(r);
        r = v;
    }
    return r;
}

/* scatter_reduce.two: PyTorch 1.13's scatter_reduce_backward, reduce by
 * reduce. Where index is smaller than src (FINDINGS F24), PyTorch 1.13's
 * amax, amin and prod formulas compare src with values gathered to the
 * index's shape and fail (as tt did, naming tt::where or tt::eq, ops the
 * user never called); later releases work on the part of src the scatter
 * reads, as here: src narrowed to the index's shape, its gradient padded
 * with zeros to src's shape. */
static tt_status scatter_reduce_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                         tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    int64_t dim, code, incl;
    tt_status st;
    if ((st = tt_ctx_get_int(ctx, "dim", &dim)) || (st = tt_ctx_get_int(ctx, "reduce", &code)) ||
        (st = tt_ctx_get_int(ctx, "include_self", &incl)))
        return st;
    tt_tensor *index = tt_ctx_saved(ctx, 0), *self = tt_ctx_saved(ctx, 1);
    tt_tensor *src = tt_ctx_saved(ctx, 2), *result = tt_ctx_saved(ctx, 3), *grad = g[0];
    tt_dtype dt = tt_dtype_of(grad);
    tt_tensor *gs = NULL, *gsrc = NULL;
    /* Before the scope: a reference of its own, released below. */
    if (!(src = src_as_index(src, index)))
        return tt_errcode();
    tt_scope_begin();
    switch (reduce_kinds[code]) {
    case RED_SUM:
        gs = tt_retain(grad);
        gsrc = tt_gather(grad, dim, index);
        break;
    case RED_MEAN: {
        /* N: how many values each element averaged (0 counted as 1) */
        tt_tensor *base = tt_full(tt_ndim(grad), tt_sizes(grad), incl ? 1 : 0, dt);
        tt_tensor *ones = base ? tt_full(tt_ndim(src), tt_sizes(src), 1, dt) : NULL;
        tt_tensor *N = ones ? tt_scatter_add(base, dim, index, ones) : NULL;
        tt_tensor *z = N ? eq_scalar(N, 0) : NULL;
        tt_tensor *N1 = z ? tt_where_scalar(z, 1, N) : NULL;
        gs = N1 ? tt_div(grad, N1) : NULL;
        tt_tensor *gg = N1 ? tt_gather(grad, dim, index) : NULL;
        tt_tensor *Ns = gg ? tt_gather(N1, dim, index) : NULL;
        gsrc = Ns ? tt_div(gg, Ns) : NULL;
        break;
    }
    case RED_AMAX:
    case RED_AMIN: {
        /* the gradient shared evenly among the values equal to the result */
        tt_tensor *value = tt_gather(result, dim, index);
        tt_tensor *self_is = value ? eq_as(self, result, dt) : NULL;
        tt_tensor *src_is = self_is ? eq_as(src, value, dt) : NULL;
        tt_tensor *N = src_is ? tt_scatter_add(self_is, dim, index, src_is) : NULL;
        tt_tensor *dist = N ? tt_div(grad, N) : NULL;
        gs = dist ? tt_mul(self_is, dist) : NULL;
        tt_tensor *dg = gs ? tt_gather(dist, dim, index) : NULL;
        gsrc = dg ? tt_mul(src_is, dg) : NULL;
        break;
    }
    case RED_PROD: {
        /* the product of the others, with zeros handled apart (PyTorch's
         * masked_fill of zeros by 1, then where a single zero sits) */
        tt_tensor *sz = eq_scalar(self, 0);
        tt_tensor *ms = sz ? tt_where_scalar(sz, 1, self) : NULL;
        tt_tensor *msr = ms ? tt_scatter_reduce(ms, dim, index, src, "prod", incl) : NULL;
        tt_tensor *t1 = msr ? tt_mul(grad, msr) : NULL;
        gs = t1 ? tt_div(t1, ms) : NULL;
        tt_tensor *src0 = gs ? eq_scalar(src, 0) : NULL;
        tt_tensor *src0f = src0 ? tt_to_dtype(src0, dt) : NULL;
        tt_tensor *z = src0f ? tt_zeros(tt_ndim(self), tt_sizes(self), dt) : NULL;
        tt_tensor *nz = z ? tt_scatter_add(z, dim, index, src0f) : NULL;
        tt_tensor *nzg = nz ? tt_gather(nz, dim, index) : NULL;
        tt_tensor *one = nzg ? eq_scalar(nzg, 1) : NULL;
        tt_tensor *single = one ? tt_where_other_scalar(src0, one, 0) : NULL; /* and */
        tt_tensor *single_b = single ? cmp_scalar(TT_OP_NE_SCALAR, single, 0) : NULL;
        tt_tensor *msrc = single_b ? tt_where_scalar(single_b, 1, src) : NULL;
        tt_tensor *msrcr = msrc ? tt_scatter_reduce(self, dim, index, msrc, "prod", incl) : NULL;
        tt_tensor *a = msrcr ? tt_mul(grad, msrcr) : NULL;
        tt_tensor *ag = a ? tt_gather(a, dim, index) : NULL;
        tt_tensor *b = ag ? tt_mul(grad, result) : NULL;
        tt_tensor *bg = b ? tt_gather(b, dim, index) : NULL;
        tt_tensor *s1 = bg ? tt_where_scalar(src0, 1, src) : NULL;
        tt_tensor *bq = s1 ? tt_div(bg, s1) : NULL;
        gsrc = bq ? tt_where(single_b, ag, bq) : NULL;
        break;
    }
    default: break;
    }
    if (gs && !incl) { /* the elements scattered into lost self's value */
        tt_tensor *m = tt_scatter_value(gs, dim, index, 0);
        tt_release(gs);
        gs = m;
    }
    st = gs && gsrc ? TT_OK : tt_errcode() ? tt_errcode() : TT_ENOMEM;
    if (!st) {
        gs = tt_keep(gs);
        gsrc = tt_keep(gsrc);
    } else {
        tt_release(gs);
        tt_release(gsrc);
        gs = gsrc = NULL;
    }
    tt_scope_end();
    tt_release(src);
    if (st)
        return st;
    if ((st = tt__put_grad(ctx, gi, 0, gs))) {
        tt_release(gsrc);
        return st;
    }
    return tt__put_grad(ctx, gi, 3, fit_src_grad(ctx, gsrc));
}

/* grad.index_select(dim, index), in source's shape (a 0-dim source takes
 * the one element). */
static tt_tensor *select_as_source(tt_autograd_ctx *ctx, tt_tensor *grad, int64_t dim,
                                   const tt_tensor *index)
{
    const int64_t *s;
    int n;
    if (tt_ctx_get_ints(ctx, "source", &s, &n))
        return NULL;
    tt_tensor *r = tt_index_select(grad, dim, index);
    if (r && n == 0 && tt_ndim(r) != 0) {
        tt_tensor *v = tt_reshape(r, 0, NULL);
        tt_release(r);
        r = v;
    }
    return r;
}

/* index_select: zeros.index_add(dim, index, grad); index_copy: d/dself =
 * grad with the copied slices zeroed (index_copy of zeros), d/dsource =
 * grad.index_select(dim, index); index_add: grad and alpha times that. */
static tt_status index_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    tt_builtin_id id = (tt_builtin_id)(intptr_t)tt_ctx_userdata(ctx);
    int64_t dim;
    tt_status st = tt_ctx_get_int(ctx, "dim", &dim);
    tt_tensor *index = tt_ctx_saved(ctx, 0), *grad = g[0];
    if (st)
        return st;
    if (id == TT_OP_INDEX_SELECT) {
        if (!tt_ctx_needs_input_grad(ctx, 0))
            return TT_OK;
        tt_tensor *z = zeros_of(ctx, "self", grad);
        tt_tensor *r = z ? tt_index_add(z, dim, index, grad, 1) : NULL;
        tt_release(z);
        return tt__put_grad(ctx, gi, 0, r);
    }
    if (tt_ctx_needs_input_grad(ctx, 0)) {
        tt_tensor *r;
        if (id == TT_OP_INDEX_ADD) {
            r = tt_retain(grad);
        } else {
            tt_tensor *z = zeros_of(ctx, "source", grad);
            r = z ? tt_index_copy(grad, dim, index, z) : NULL;
            tt_release(z);
        }
        if ((st = tt__put_grad(ctx, gi, 0, r)))
            return st;
    }
    if (!tt_ctx_needs_input_grad(ctx, 3))
        return TT_OK;
    tt_tensor *r = select_as_source(ctx, grad, dim, index);
    double alpha = 1;
    if (r && id == TT_OP_INDEX_ADD && !tt_ctx_get_float(ctx, "alpha", &alpha) && alpha != 1) {
        tt_tensor *m = tt_mul_scalar(r, alpha);
        tt_release(r);
        r = m;
    }
    return tt__put_grad(ctx, gi, 3, r);
}

/* slice_scatter / select_scatter: d/dself = grad with zeros in the slice,
 * d/dsrc = the slice of grad. */
static tt_status setup_slice_scatter(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                                     const tt_value *out, int nout)
{
    (void)out, (void)nout;
    bool select = (intptr_t)tt_ctx_userdata(ctx) == TT_OP_SELECT_SCATTER;
    tt_status st;
    if ((st = tt_ctx_save_shape(ctx, "src", in[1].u.t)) ||
        (st = tt_ctx_save_int(ctx, "dim", in[2].u.i)))
        return st;
    if (select)
        return tt_ctx_save_int(ctx, "index", in[3].u.i);
    (void)nin;
    if ((st = tt_ctx_save_int(ctx, "start", in[3].kind == TT_V_NONE ? 0 : in[3].u.i)) ||
        (st = tt_ctx_save_int(ctx, "end", in[4].kind == TT_V_NONE ? INT64_MAX : in[4].u.i)))
        return st;
    return tt_ctx_save_int(ctx, "step", in[5].u.i);
}

static tt_status slice_scatter_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                        tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    bool select = (intptr_t)tt_ctx_userdata(ctx) == TT_OP_SELECT_SCATTER;
    int64_t dim, a = 0, b = 0, step = 1;
    tt_status st = tt_ctx_get_int(ctx, "dim", &dim);
    if (!st)
        st = select ? tt_ctx_get_int(ctx, "index", &a)
                    : (tt_ctx_get_int(ctx, "start", &a) || tt_ctx_get_int(ctx, "end", &b) ||
                       tt_ctx_get_int(ctx, "step", &step))
                          ? tt_errcode()
                          : TT_OK;
    if (st)
        return st;
    if (tt_ctx_needs_input_grad(ctx, 0)) {
        tt_tensor *z = zeros_of(ctx, "src", g[0]);
        tt_tensor *r = !z ? NULL
                       : select ? tt_select_scatter(g[0], z, (int)dim, a)
                                : tt_slice_scatter(g[0], z, (int)dim, a, b, step);
        tt_release(z);
        if ((st = tt__put_grad(ctx, gi, 0, r)))
            return st;
    }
    if (!tt_ctx_needs_input_grad(ctx, 1))
        return TT_OK;
    tt_tensor *v = select ? tt_select(g[0], (int)dim, a) : tt_slice(g[0], (int)dim, a, b, step);
    return tt__put_grad(ctx, gi, 1, v);
}

/* diagonal: diagonal_backward(grad, self's sizes, offset, dim1, dim2). */
static tt_status setup_diagonal(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                                const tt_value *out, int nout)
{
    (void)nin, (void)out, (void)nout;
    tt_status st;
    if ((st = tt_ctx_save_shape(ctx, "self", in[0].u.t)))
        return st;
    int64_t v[3] = {in[1].u.i, in[2].u.i, in[3].u.i};
    return tt_ctx_save_ints(ctx, "args", 3, v);
}

static tt_status diagonal_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                   tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    const int64_t *s, *a;
    int n, na;
    tt_status st;
    if ((st = tt_ctx_get_ints(ctx, "self", &s, &n)) || (st = tt_ctx_get_ints(ctx, "args", &a, &na)))
        return st;
    if (!tt_ctx_needs_input_grad(ctx, 0))
        return TT_OK;
    return tt__put_grad(ctx, gi, 0,
                        tt__call_op(TT_OP_DIAGONAL_BACKWARD,
                                    TT_ARGS(tt_v_tensor(g[0]), tt_v_ints(n, s), tt_v_int(a[0]),
                                            tt_v_int(a[1]), tt_v_int(a[2]))));
}

#undef TT__FAMILY_INDEX
#define TT__FAMILY_INDEX TT__ROW
static const tt__builtin_row rows[] = {TT__FAMILY_ROWS};

tt_status tt__register_indexing(tt_library *lib)
{
    return TT__DEFINE_ROWS(lib, rows);
}

/* ---------------------------------------------------------- typed wrappers */

/* A wrapper's result: its op's function on the fast path (no mode, grad
 * or fake tensor: the kernel's work directly), else the op through the
 * dispatcher. */
#define FAST(id, n, ...) tt__fast_path(id, n, (const tt_tensor *const[]){__VA_ARGS__})

tt_tensor *tt_gather(const tt_tensor *self, int dim, const tt_tensor *index)
{
    if (self && index && FAST(TT_OP_GATHER, 2, self, index))
        return gather_impl(self, dim, index, false);
    return tt__call_op(TT_OP_GATHER, TT_ARGS(tt_v_tensor(self), tt_v_int(dim), tt_v_tensor(index),
                                             tt_v_bool(false)));
}

tt_tensor *tt_scatter(const tt_tensor *self, int dim, const tt_tensor *index,
                      const tt_tensor *src)
{
    if (self && index && src && FAST(TT_OP_SCATTER_SRC, 3, self, index, src))
        return scatter_impl(TT_OP_SCATTER_SRC, self, dim, index, src, 0, RED_ASSIGN, true, false);
    return tt__call_op(TT_OP_SCATTER_SRC, TT_ARGS(tt_v_tensor(self), tt_v_int(dim),
                                                  tt_v_tensor(index), tt_v_tensor(src)));
}

tt_tensor *tt_scatter_value(const tt_tensor *self, int dim, const tt_tensor *index, double value)
{
    if (self && index && FAST(TT_OP_SCATTER_VALUE, 2, self, index))
        return scatter_impl(TT_OP_SCATTER_VALUE, self, dim, index, NULL, value, RED_ASSIGN, true,
                            false);
    return tt__call_op(TT_OP_SCATTER_VALUE, TT_ARGS(tt_v_tensor(self), tt_v_int(dim),
                                                    tt_v_tensor(index), tt_v_float(value)));
}

tt_tensor *tt_scatter_add(const tt_tensor *self, int dim, const tt_tensor *index,
                          const tt_tensor *src)
{
    if (self && index && src && FAST(TT_OP_SCATTER_ADD, 3, self, index, src))
        return scatter_impl(TT_OP_SCATTER_ADD, self, dim, index, src, 0, RED_SUM, true, false);
    return tt__call_op(TT_OP_SCATTER_ADD, TT_ARGS(tt_v_tensor(self), tt_v_int(dim),
                                                  tt_v_tensor(index), tt_v_tensor(src)));
}

tt_tensor *tt_scatter_reduce(const tt_tensor *self, int dim, const tt_tensor *index,
                             const tt_tensor *src, const char *reduce, bool include_self)
{
    red_kind red = RED_SUM;
    if (self && index && src && reduce && FAST(TT_OP_SCATTER_REDUCE_TWO, 3, self, index, src)) {
        if (parse_reduce(tt__op_label(TT_OP_SCATTER_REDUCE_TWO), reduce, &red, NULL))
            return NULL;
        return scatter_impl(TT_OP_SCATTER_REDUCE_TWO, self, dim, index, src, 0, red,
                            include_self, false);
    }
    return tt__call_op(TT_OP_SCATTER_REDUCE_TWO,
                       TT_ARGS(tt_v_tensor(self), tt_v_int(dim), tt_v_tensor(index),
                               tt_v_tensor(src), tt_v_str(reduce), tt_v_bool(include_self)));
}

tt_tensor *tt_index_select(const tt_tensor *self, int dim, const tt_tensor *index)
{
    if (self && index && FAST(TT_OP_INDEX_SELECT, 2, self, index))
        return index_select_impl(self, dim, index, false);
    return tt__call_op(TT_OP_INDEX_SELECT,
                       TT_ARGS(tt_v_tensor(self), tt_v_int(dim), tt_v_tensor(index)));
}

tt_tensor *tt_index_copy(const tt_tensor *self, int dim, const tt_tensor *index,
                         const tt_tensor *source)
{
    if (self && index && source && FAST(TT_OP_INDEX_COPY, 3, self, index, source))
        return index_along_impl(IDX_COPY, (tt_tensor *)self, dim, index, source, 1, false);
    return tt__call_op(TT_OP_INDEX_COPY, TT_ARGS(tt_v_tensor(self), tt_v_int(dim),
                                                 tt_v_tensor(index), tt_v_tensor(source)));
}

tt_status tt_index_copy_(tt_tensor *self, int dim, const tt_tensor *index,
                         const tt_tensor *source)
{
    if (self && index && source && FAST(TT_OP_INDEX_COPY_, 3, self, index, source)) {
        tt_tensor *r = index_along_impl(IDX_COPY_INPLACE, self, dim, index, source, 1, false);
        if (!r)
            return tt_errcode();
        tt_release(r);
        tt_bump_version(self); /* what the dispatcher does for a mutated argument */
        return TT_OK;
    }
    return tt__call_op_status(TT_OP_INDEX_COPY_, TT_ARGS(tt_v_tensor(self), tt_v_int(dim),
                                                         tt_v_tensor(index), tt_v_tensor(source)));
}

tt_tensor *tt_index_add(const tt_tensor *self, int dim, const tt_tensor *index,
                        const tt_tensor *source, double alpha)
{
    if (self && index && source && FAST(TT_OP_INDEX_ADD, 3, self, index, source))
        return index_along_impl(IDX_ADD, (tt_tensor *)self, dim, index, source, alpha, false);
    return tt__call_op(TT_OP_INDEX_ADD,
                       TT_ARGS(tt_v_tensor(self), tt_v_int(dim), tt_v_tensor(index),
                               tt_v_tensor(source), tt_v_float(alpha)));
}

tt_tensor *tt_slice_scatter(const tt_tensor *self, const tt_tensor *src, int dim, int64_t start,
                            int64_t end, int64_t step)
{
    if (self && src && FAST(TT_OP_SLICE_SCATTER, 2, self, src))
        return slice_scatter_impl(false, self, src, dim, start, end, step, false);
    return tt__call_op(TT_OP_SLICE_SCATTER,
                       TT_ARGS(tt_v_tensor(self), tt_v_tensor(src), tt_v_int(dim),
                               tt_v_int(start), tt_v_int(end), tt_v_int(step)));
}

tt_tensor *tt_select_scatter(const tt_tensor *self, const tt_tensor *src, int dim,
                             int64_t index)
{
    if (self && src && FAST(TT_OP_SELECT_SCATTER, 2, self, src))
        return slice_scatter_impl(true, self, src, dim, index, 0, 1, false);
    return tt__call_op(TT_OP_SELECT_SCATTER, TT_ARGS(tt_v_tensor(self), tt_v_tensor(src),
                                                     tt_v_int(dim), tt_v_int(index)));
}

tt_tensor *tt_diagonal(const tt_tensor *self, int64_t offset, int dim1, int dim2)
{
    if (self && FAST(TT_OP_DIAGONAL, 1, self))
        return diagonal_impl(self, offset, dim1, dim2);
    return tt__call_op(TT_OP_DIAGONAL, TT_ARGS(tt_v_tensor(self), tt_v_int(offset),
                                               tt_v_int(dim1), tt_v_int(dim2)));
}
