/* Built-in ops of the SORT_SCAN family (runtime/builtin_ops.h): sorting,
 * selection along a dim (sort, topk, max.dim, min.dim, argmin), the
 * gradient of a selection (value_selecting_reduction_backward), scans
 * (cumsum, cumprod) and product / log-sum-exp reductions.
 *
 * Every kernel here works on rows: a contiguous copy of self with the op's
 * dim moved last (R rows of n elements), so the inner loops are unit-stride
 * whatever self's strides, and rows run in parallel. Results are written
 * straight into the output when its dim-last view is contiguous, else into
 * a contiguous buffer copied back once. */
#include "ops_impl.h"
#include "vec_math.h"
#include "tt_index.h"

#include <float.h>
#include <math.h>
#include <stdatomic.h>
#include <string.h>

/* Elements a parallel task should at least cover. */
#define SS_GRAIN 32768

/* The data of the selection rows (which output a setup saves and where its
 * dim argument is). */
enum { SEL_SORT, SEL_SORT_STABLE, SEL_TOPK, SEL_MAX, SEL_MIN, SEL_KTH, SEL_MEDIAN };
/* The scans and products. */
enum { SCAN_SUM, SCAN_PROD };

/* ------------------------------------------------------------- rows */

/* t with `dim` moved last (a view; 0-dim: [1]). New reference. */
static tt_tensor *dim_last(const tt_tensor *t, int dim)
{
    if (t->ndim == 0)
        return tt__view_raw(t, 1, (const int64_t[]){1});
    return tt__transpose_raw(t, dim, t->ndim - 1);
}

/* x with dim last, contiguous, in dtype dt: its rows, read only (x's own
 * memory when it already is, else a copy). */
static tt_tensor *rows_copy(const tt_tensor *x, int dim, tt_dtype dt)
{
    tt_tensor *v = dim_last(x, dim);
    if (!v || (v->dtype == dt && tt_is_contiguous(v)))
        return v;
    tt_tensor *c = tt__new_contiguous(v, dt);
    if (c && tt__copy_raw(c, v))
        c = tt_release(c);
    tt_release(v);
    return c;
}

/* Where a kernel writes an output's rows: the output's own memory when its
 * dim-last view is contiguous, else a buffer rows_put copies back. */
typedef struct {
    tt_tensor *view, *buf;
} rows_out;

static char *rows_get(rows_out *w, tt_tensor *out, int dim)
{
    w->view = dim_last(out, dim), w->buf = NULL;
    if (!w->view)
        return NULL;
    w->buf = tt_is_contiguous(w->view) ? tt_retain(w->view)
                                       : tt__new_contiguous(w->view, (tt_dtype)out->dtype);
    return w->buf ? tt__ptr(w->buf) : NULL;
}

static tt_status rows_put(rows_out *w, bool ok)
{
    tt_status st = TT_OK;
    if (ok && w->buf && w->buf != w->view)
        st = tt__copy_raw(w->view, w->buf);
    tt_release(w->buf);
    tt_release(w->view);
    w->buf = w->view = NULL;
    return st;
}

/* One row op's plan: R input rows of n elements at x, output rows of k. */
typedef struct {
    const char *x;
    char *v;     /* values (k per row), or NULL */
    int64_t *ix; /* indices (k per row), or NULL */
    int64_t R, n, k;
    bool flag; /* sort/topk: descending / largest; extremum: max */
    atomic_int oom;
} rplan;

static int64_t row_grain(int64_t n) { return n > 0 && n < SS_GRAIN ? SS_GRAIN / n : 1; }

/* Runs task over the rows of x (along dim) into vo and io (either may be
 * NULL), which have x's rank with k along dim (keepdim views). */
static tt_status run_rows(const tt_tensor *x, int dim, tt_tensor *vo, tt_tensor *io, rplan *p,
                          void (*task)(int64_t, int64_t, void *))
{
    tt_tensor *xr = rows_copy(x, dim, (tt_dtype)x->dtype);
    rows_out wv = {0}, wi = {0};
    bool ok = xr != NULL;
    if (ok && vo)
        ok = (p->v = rows_get(&wv, vo, dim)) != NULL;
    if (ok && io)
        ok = (p->ix = (int64_t *)rows_get(&wi, io, dim)) != NULL;
    if (ok) {
        p->x = tt__ptr(xr);
        p->n = xr->sizes[xr->ndim - 1];
        p->R = p->n ? tt__numel_concrete(xr) / p->n : 0;
        if (!p->n) { /* rows of no element: count them from the output */
            p->R = 1;
            for (int d = 0; d < xr->ndim - 1; d++)
                p->R *= xr->sizes[d];
        }
        atomic_store(&p->oom, 0);
        tt_parallel_for(p->R, row_grain(p->n > p->k ? p->n : p->k), task, p);
        if (atomic_load(&p->oom))
            ok = !tt_error(TT_ENOMEM, "out of memory for a row's work buffer");
    }
    tt_status st = tt_errcode() ? tt_errcode() : TT_ENOMEM;
    tt_status s1 = rows_put(&wv, ok), s2 = rows_put(&wi, ok);
    tt_release(xr);
    if (!ok)
        return st;
    return s1 ? s1 : s2;
}

/* A view of out with dim put back (size 1) when the op dropped it. */
static tt_tensor *keepdim_view(tt_tensor *out, int dim, bool dropped)
{
    return dropped ? tt__unsqueeze_raw(out, dim) : tt_retain(out);
}

/* ------------------------------------------------ sort and selection */

/* Orders: NaN is larger than every number, as in PyTorch's sort, topk,
 * max and min. LESS(a, b): a strictly before b ascending. */
#define LESS_F(a, b) (!isnan(a) && (isnan(b) || (a) < (b)))
#define LESS_I(a, b) ((a) < (b))
#define ISNAN_F(a) isnan(a)
#define ISNAN_I(a) ((void)(a), 0)

/* Per dtype: the (key, index) pair, a stable merge sort of pairs (runs of
 * 16 by insertion, then bottom-up merges alternating with a buffer), the
 * sort, topk and extremum row tasks. */
#define SORT_FUNCS(SUF, T, LESS, ISNAN)                                        \
    typedef struct {                                                           \
        T v;                                                                   \
        int64_t i;                                                             \
    } pair_##SUF;                                                              \
    static inline bool before_##SUF(const pair_##SUF *a, const pair_##SUF *b, bool desc) \
    {                                                                          \
        return desc ? LESS(b->v, a->v) : LESS(a->v, b->v);                     \
    }                                                                          \
    /* The total order topk selects by: the key, then the lower index. */     \
    static inline bool better_##SUF(const pair_##SUF *a, const pair_##SUF *b, bool largest) \
    {                                                                          \
        if (before_##SUF(a, b, largest))                                       \
            return true;                                                       \
        return !before_##SUF(b, a, largest) && a->i < b->i;                    \
    }                                                                          \
    static void msort_##SUF(pair_##SUF *p, pair_##SUF *tmp, int64_t n, bool desc) \
    {                                                                          \
        for (int64_t s = 0; s < n; s += 16) {                                  \
            int64_t e = s + 16 < n ? s + 16 : n;                               \
            for (int64_t i = s + 1; i < e; i++) {                              \
                pair_##SUF key = p[i];                                         \
                int64_t j = i;                                                 \
                for (; j > s && before_##SUF(&key, &p[j - 1], desc); j--)      \
                    p[j] = p[j - 1];                                           \
                p[j] = key;                                                    \
            }                                                                  \
        }                                                                      \
        pair_##SUF *a = p, *b = tmp;                                           \
        for (int64_t w = 16; w < n; w *= 2) {                                  \
            for (int64_t lo = 0; lo < n; lo += 2 * w) {                        \
                int64_t mid = lo + w < n ? lo + w : n;                         \
                int64_t hi = lo + 2 * w < n ? lo + 2 * w : n, i = lo, j = mid, o = lo; \
                while (i < mid && j < hi)                                      \
                    b[o++] = before_##SUF(&a[j], &a[i], desc) ? a[j++] : a[i++]; \
                while (i < mid)                                                \
                    b[o++] = a[i++];                                           \
                while (j < hi)                                                 \
                    b[o++] = a[j++];                                           \
            }                                                                  \
            pair_##SUF *t = a;                                                 \
            a = b, b = t;                                                      \
        }                                                                      \
        if (a != p)                                                            \
            memcpy(p, a, sizeof(pair_##SUF) * (size_t)n);                      \
    }                                                                          \
    static void sort_rows_##SUF(int64_t b0, int64_t e0, void *vp)              \
    {                                                                          \
        rplan *p = vp;                                                         \
        int64_t n = p->n;                                                      \
        pair_##SUF *buf = n ? tt__malloc(sizeof(pair_##SUF) * 2 * (size_t)n) : NULL; \
        if (n && !buf) {                                                       \
            atomic_store(&p->oom, 1);                                          \
            return;                                                            \
        }                                                                      \
        for (int64_t r = b0; r < e0; r++) {                                    \
            const T *x = (const T *)p->x + r * n;                              \
            for (int64_t i = 0; i < n; i++)                                    \
                buf[i].v = x[i], buf[i].i = i;                                 \
            msort_##SUF(buf, buf + n, n, p->flag);                             \
            T *v = (T *)p->v + r * n;                                          \
            int64_t *ix = p->ix + r * n;                                       \
            for (int64_t i = 0; i < n; i++)                                    \
                v[i] = buf[i].v, ix[i] = buf[i].i;                             \
        }                                                                      \
        tt__free(buf);                                                         \
    }                                                                          \
    /* heap[0] is the worst of the k best so far. */                           \
    static void heap_down_##SUF(pair_##SUF *h, int64_t k, int64_t at, bool largest) \
    {                                                                          \
        for (;;) {                                                             \
            int64_t c = 2 * at + 1, w = at;                                    \
            if (c < k && better_##SUF(&h[w], &h[c], largest))                  \
                w = c;                                                         \
            if (c + 1 < k && better_##SUF(&h[w], &h[c + 1], largest))          \
                w = c + 1;                                                     \
            if (w == at)                                                       \
                return;                                                        \
            pair_##SUF t = h[at];                                              \
            h[at] = h[w], h[w] = t, at = w;                                    \
        }                                                                      \
    }                                                                          \
    /* The k best of a row, best first: a heap of k (n log k) when k is     \
     * small against n, else the row's stable sort (the same order: by key, \
     * then index). */                                                         \
    static void topk_rows_##SUF(int64_t b0, int64_t e0, void *vp)              \
    {                                                                          \
        rplan *p = vp;                                                         \
        int64_t n = p->n, k = p->k;                                            \
        bool heap = k * 8 <= n;                                                \
        int64_t nb = heap ? k : 2 * n;                                         \
        pair_##SUF *buf = nb ? tt__malloc(sizeof(pair_##SUF) * (size_t)nb) : NULL; \
        if (nb && !buf) {                                                      \
            atomic_store(&p->oom, 1);                                          \
            return;                                                            \
        }                                                                      \
        for (int64_t r = b0; r < e0 && k > 0; r++) {                           \
            const T *x = (const T *)p->x + r * n;                              \
            if (heap) {                                                        \
                for (int64_t i = 0; i < k; i++)                                \
                    buf[i].v = x[i], buf[i].i = i;                             \
                for (int64_t i = k / 2; i-- > 0;)                              \
                    heap_down_##SUF(buf, k, i, p->flag);                       \
                for (int64_t i = k; i < n; i++) {                              \
                    pair_##SUF c = {x[i], i};                                  \
                    if (better_##SUF(&c, &buf[0], p->flag)) {                  \
                        buf[0] = c;                                            \
                        heap_down_##SUF(buf, k, 0, p->flag);                   \
                    }                                                          \
                }                                                              \
                for (int64_t m = k; m > 1; m--) { /* worst to the back */      \
                    pair_##SUF t = buf[0];                                     \
                    buf[0] = buf[m - 1], buf[m - 1] = t;                       \
                    heap_down_##SUF(buf, m - 1, 0, p->flag);                   \
                }                                                              \
            } else {                                                           \
                for (int64_t i = 0; i < n; i++)                                \
                    buf[i].v = x[i], buf[i].i = i;                             \
                msort_##SUF(buf, buf + n, n, p->flag);                         \
            }                                                                  \
            T *v = (T *)p->v + r * k;                                          \
            int64_t *ix = p->ix + r * k;                                       \
            for (int64_t i = 0; i < k; i++)                                    \
                v[i] = buf[i].v, ix[i] = buf[i].i;                             \
        }                                                                      \
        tt__free(buf);                                                         \
    }                                                                          \
    /* The first maximum (minimum) of each row; the first NaN if any. */     \
    static void ext_rows_##SUF(int64_t b0, int64_t e0, void *vp)               \
    {                                                                          \
        rplan *p = vp;                                                         \
        int64_t n = p->n;                                                      \
        for (int64_t r = b0; r < e0; r++) {                                    \
            const T *x = (const T *)p->x + r * n;                              \
            int64_t best = 0;                                                  \
            T b = x[0];                                                        \
            for (int64_t i = 1; i < n && !ISNAN(b); i++) {                     \
                T c = x[i];                                                    \
                if (ISNAN(c) || (p->flag ? c > b : c < b))                     \
                    b = c, best = i;                                           \
            }                                                                  \
            if (p->v)                                                          \
                ((T *)p->v)[r] = b;                                            \
            if (p->ix)                                                         \
                p->ix[r] = best;                                               \
        }                                                                      \
    }

SORT_FUNCS(f32, float, LESS_F, ISNAN_F)
SORT_FUNCS(f64, double, LESS_F, ISNAN_F)
SORT_FUNCS(i64, int64_t, LESS_I, ISNAN_I)
SORT_FUNCS(i32, int32_t, LESS_I, ISNAN_I)
SORT_FUNCS(u8, uint8_t, LESS_I, ISNAN_I) /* also bool: one byte, 0 or 1 */

typedef void (*row_task)(int64_t, int64_t, void *);
static const row_task sort_tasks[] = {[TT_F32] = sort_rows_f32, [TT_F64] = sort_rows_f64,
                                      [TT_I64] = sort_rows_i64, [TT_I32] = sort_rows_i32,
                                      [TT_U8] = sort_rows_u8, [TT_BOOL] = sort_rows_u8};
static const row_task topk_tasks[] = {[TT_F32] = topk_rows_f32, [TT_F64] = topk_rows_f64,
                                      [TT_I64] = topk_rows_i64, [TT_I32] = topk_rows_i32,
                                      [TT_U8] = topk_rows_u8, [TT_BOOL] = topk_rows_u8};
static const row_task ext_tasks[] = {[TT_F32] = ext_rows_f32, [TT_F64] = ext_rows_f64,
                                     [TT_I64] = ext_rows_i64, [TT_I32] = ext_rows_i32,
                                     [TT_U8] = ext_rows_u8, [TT_BOOL] = ext_rows_u8};

static tt_status drop2(tt_tensor **out)
{
    out[0] = tt_release(out[0]);
    out[1] = tt_release(out[1]);
    return tt_errcode() ? tt_errcode() : TT_ENOMEM;
}

/* The k-th smallest of each row (p->k, 0-based) in the order of
 * better_(smallest): by key, NaN largest, then the lower index, so equal
 * keys give the stable sort's answer. A quickselect (median of three,
 * Lomuto: every pair is distinct in that order) in linear expected time;
 * past 2 log2(n) + 8 rounds the row's sort instead (no quadratic case).
 * Median (p->flag): a row with a NaN gives its first NaN, as PyTorch. */
#define KTH_FUNCS(SUF, T, ISNAN)                                               \
    static inline bool lt_##SUF(const pair_##SUF *a, const pair_##SUF *b)      \
    {                                                                          \
        return better_##SUF(a, b, false);                                      \
    }                                                                          \
    static inline void swap_##SUF(pair_##SUF *a, pair_##SUF *b)                \
    {                                                                          \
        pair_##SUF t = *a;                                                     \
        *a = *b, *b = t;                                                       \
    }                                                                          \
    static pair_##SUF kth_##SUF(const T *x, int64_t n, int64_t k, pair_##SUF *buf) \
    {                                                                          \
        for (int64_t i = 0; i < n; i++)                                        \
            buf[i].v = x[i], buf[i].i = i;                                     \
        int64_t lo = 0, hi = n - 1, budget = 8;                                \
        for (int64_t m = n; m > 1; m /= 2)                                     \
            budget += 2;                                                       \
        while (hi > lo) {                                                      \
            if (budget-- == 0) {                                               \
                for (int64_t i = 0; i < n; i++)                                \
                    buf[i].v = x[i], buf[i].i = i;                             \
                msort_##SUF(buf, buf + n, n, false);                           \
                return buf[k];                                                 \
            }                                                                  \
            int64_t mid = lo + (hi - lo) / 2;                                  \
            if (lt_##SUF(&buf[mid], &buf[lo]))                                 \
                swap_##SUF(&buf[mid], &buf[lo]);                               \
            if (lt_##SUF(&buf[hi], &buf[lo]))                                  \
                swap_##SUF(&buf[hi], &buf[lo]);                                \
            if (lt_##SUF(&buf[mid], &buf[hi]))                                 \
                swap_##SUF(&buf[mid], &buf[hi]); /* the median at hi */        \
            int64_t store = lo;                                                \
            for (int64_t i = lo; i < hi; i++)                                  \
                if (lt_##SUF(&buf[i], &buf[hi]))                               \
                    swap_##SUF(&buf[i], &buf[store++]);                        \
            swap_##SUF(&buf[store], &buf[hi]);                                 \
            if (store == k)                                                    \
                return buf[k];                                                 \
            if (k < store)                                                     \
                hi = store - 1;                                                \
            else                                                               \
                lo = store + 1;                                                \
        }                                                                      \
        return buf[k];                                                         \
    }                                                                          \
    static void kth_rows_##SUF(int64_t b0, int64_t e0, void *vp)               \
    {                                                                          \
        rplan *p = vp;                                                         \
        int64_t n = p->n;                                                      \
        pair_##SUF *buf = tt__malloc(sizeof(pair_##SUF) * 2 * (size_t)n);      \
        if (!buf) {                                                            \
            atomic_store(&p->oom, 1);                                          \
            return;                                                            \
        }                                                                      \
        for (int64_t r = b0; r < e0; r++) {                                    \
            const T *x = (const T *)p->x + r * n;                              \
            int64_t nan = -1;                                                  \
            for (int64_t i = 0; p->flag && i < n && nan < 0; i++)              \
                if (ISNAN(x[i]))                                               \
                    nan = i;                                                   \
            pair_##SUF s = nan >= 0 ? (pair_##SUF){x[nan], nan} : kth_##SUF(x, n, p->k, buf); \
            if (p->v)                                                          \
                ((T *)p->v)[r] = s.v;                                          \
            if (p->ix)                                                         \
                p->ix[r] = s.i;                                                \
        }                                                                      \
        tt__free(buf);                                                         \
    }
KTH_FUNCS(f32, float, ISNAN_F)
KTH_FUNCS(f64, double, ISNAN_F)
KTH_FUNCS(i64, int64_t, ISNAN_I)
KTH_FUNCS(i32, int32_t, ISNAN_I)
KTH_FUNCS(u8, uint8_t, ISNAN_I)
static const row_task kth_tasks[] = {[TT_F32] = kth_rows_f32, [TT_F64] = kth_rows_f64,
                                     [TT_I64] = kth_rows_i64, [TT_I32] = kth_rows_i32,
                                     [TT_U8] = kth_rows_u8};


/* tt::sort and tt::sort.stable: values and i64 indices of self sorted
 * along dim, NaN largest. Always a stable sort (equal keys keep their
 * order), which is one of the orders an unstable sort may give. The
 * results are laid out like self (PyTorch's empty_like). */
static tt_status sort_impl(const char *op, int dim_argno, const tt_tensor *x, int64_t dim,
                           bool desc, bool fake, tt_tensor **out)
{
    out[0] = out[1] = NULL;
    int d = tt__op_dim(op, "dim", dim_argno, dim, x->ndim);
    if (d < 0)
        return tt_errcode();
    fake = fake || x->storage->fake;
    tt_size st[TT_MAX_DIMS];
    tt__strides_like(x, st);
    out[0] = tt__ops_new(fake, x->ndim, x->sizes, st, (tt_dtype)x->dtype);
    out[1] = tt__ops_new(fake, x->ndim, x->sizes, st, TT_I64);
    if (!out[0] || !out[1])
        return drop2(out);
    if (fake || tt__numel_concrete(x) == 0)
        return TT_OK;
    rplan p = {.flag = desc};
    p.k = x->ndim ? x->sizes[d] : 1;
    if (run_rows(x, d, out[0], out[1], &p, sort_tasks[x->dtype]))
        return drop2(out);
    return TT_OK;
}

/* tt::topk: the k largest (smallest) along dim, best first, ties by the
 * lower index; contiguous results as PyTorch's. */
static tt_status topk_impl(const char *op, const tt_tensor *x, tt_size k, int64_t dim,
                           bool largest, bool fake, tt_tensor **out)
{
    out[0] = out[1] = NULL;
    if (x->dtype == TT_BOOL)
        return tt_error(TT_EDTYPE, "%s: argument 'self' (#1): not implemented for bool tensors "
                                   "(PyTorch's topk has no bool kernel)", op);
    int d = tt__op_dim(op, "dim", 3, dim, x->ndim);
    if (d < 0)
        return tt_errcode();
    tt_size n = x->ndim ? x->sizes[d] : 1;
    char s1[32], s2[32];
    if ((!tt_size_is_sym(k) && k < 0) || !tt_size_le(k, n)) {
        if (tt_errcode())
            return tt_errcode();
        tt_size_str(k, s1, sizeof s1), tt_size_str(n, s2, sizeof s2);
        return tt_error(TT_EINVAL, "%s: argument 'k' (#2): selected index k out of range "
                                   "(k is %s, dim %d has size %s)", op, s1, d, s2);
    }
    fake = fake || x->storage->fake;
    tt_size sz[TT_MAX_DIMS];
    memcpy(sz, x->sizes, sizeof(tt_size) * (size_t)x->ndim);
    if (x->ndim)
        sz[d] = k;
    out[0] = tt__ops_new(fake, x->ndim, sz, NULL, (tt_dtype)x->dtype);
    out[1] = tt__ops_new(fake, x->ndim, sz, NULL, TT_I64);
    if (!out[0] || !out[1])
        return drop2(out);
    if (fake || tt__numel_concrete(out[0]) == 0)
        return TT_OK;
    rplan p = {.flag = largest, .k = k};
    if (run_rows(x, d, out[0], out[1], &p, topk_tasks[x->dtype]))
        return drop2(out);
    return TT_OK;
}

/* Sizes of a reduction of x over dim (all dims when dim < 0). */
static int reduced(const tt_tensor *x, int dim, bool keepdim, tt_size *sz)
{
    int nd = 0;
    for (int d = 0; d < x->ndim; d++) {
        bool red = dim < 0 || d == dim;
        if (!red)
            sz[nd++] = x->sizes[d];
        else if (keepdim)
            sz[nd++] = 1;
    }
    return nd;
}

/* max.dim / min.dim (values and indices), argmin (indices only: vals
 * NULL). The first extremum along dim, NaN winning; has_dim false (argmin's
 * None) reduces over the flattened input. */
static tt_status extremum_impl(const char *op, const tt_tensor *x, bool has_dim, int64_t dim,
                               bool keepdim, bool is_max, bool want_values, bool fake,
                               tt_tensor **out)
{
    out[0] = out[1] = NULL;
    char s[128];
    int d = -1;
    if (has_dim && (d = tt__op_dim(op, "dim", 2, dim, x->ndim)) < 0)
        return tt_errcode();
    if (!want_values && x->dtype == TT_BOOL)
        return tt_error(TT_EDTYPE, "%s: argument 'self' (#1): not implemented for bool tensors "
                                   "(convert to an integer dtype first)", op);
    for (int i = 0; i < x->ndim; i++) {
        if ((!has_dim || i == d) && tt_size_eq(x->sizes[i], 0)) {
            if (has_dim)
                return tt_error(TT_EINVAL, "%s: argument 'self' (#1): Expected reduction dim %d "
                                           "to have non-zero size (the input has shape %s)",
                                op, d, tt_shape_str(x, s, sizeof s));
            return tt_error(TT_EINVAL, "%s: argument 'self' (#1): expected reduction dim to be "
                                       "specified for an input with no elements (shape %s)",
                            op, tt_shape_str(x, s, sizeof s));
        }
    }
    fake = fake || x->storage->fake;
    tt_size sz[TT_MAX_DIMS];
    int nd = reduced(x, has_dim ? d : -1, keepdim, sz);
    if (want_values && !(out[0] = tt__ops_new(fake, nd, sz, NULL, (tt_dtype)x->dtype)))
        return drop2(out);
    if (!(out[1] = tt__ops_new(fake, nd, sz, NULL, TT_I64)))
        return drop2(out);
    if (fake || tt__numel_concrete(out[1]) == 0)
        return TT_OK;
    rplan p = {.flag = is_max, .k = 1};
    tt_status st;
    if (!has_dim) { /* the flattened input: one row */
        tt_tensor *flat = tt__new_contiguous(x, (tt_dtype)x->dtype);
        tt_tensor *fl = flat && !tt__copy_raw(flat, x)
                            ? tt__view_raw(flat, 1, (const int64_t[]){tt__numel_concrete(x)})
                            : NULL;
        tt_tensor *io = fl ? tt__view_raw(out[1], 1, (const int64_t[]){1}) : NULL;
        st = io ? run_rows(fl, 0, NULL, io, &p, ext_tasks[x->dtype]) : tt_errcode();
        tt_release(io), tt_release(fl), tt_release(flat);
    } else {
        bool dropped = !keepdim && x->ndim > 0;
        tt_tensor *vo = out[0] ? keepdim_view(out[0], d, dropped) : NULL;
        tt_tensor *io = keepdim_view(out[1], d, dropped);
        st = io && (vo || !out[0]) ? run_rows(x, d, vo, io, &p, ext_tasks[x->dtype])
                                   : tt_errcode();
        tt_release(vo), tt_release(io);
    }
    if (st)
        return drop2(out);
    return TT_OK;
}

/* kthvalue (k 1-based, median false) and median.dim / median() (has_dim
 * false: the flattened input, values only): the k-th smallest along dim
 * and its index, results as max.dim's. */
static tt_status kth_impl(const char *op, const tt_tensor *x, bool median, int64_t k,
                          bool has_dim, int64_t dim, bool keepdim, bool fake, tt_tensor **out)
{
    out[0] = out[1] = NULL;
    char s[128];
    if (x->dtype == TT_BOOL)
        return tt_error(TT_EDTYPE, "%s: argument 'self' (#1): not implemented for bool tensors "
                                   "(PyTorch's kernel has none)", op);
    int d = -1;
    if (has_dim && (d = tt__op_dim(op, "dim", median ? 2 : 3, dim, x->ndim)) < 0)
        return tt_errcode();
    tt_size n = !has_dim ? (x->ndim ? -1 : 1) : x->ndim ? x->sizes[d] : 1;
    if (!median && (k < 1 || !tt_size_le(k, n)))
        return tt_errcode() ? tt_errcode()
                            : tt_error(TT_EINVAL, "%s: argument 'k' (#2): selected number k "
                                                  "out of range for dimension %d (k is %lld)",
                                       op, d, (long long)k);
    if (median && has_dim && tt_size_eq(n, 0))
        return tt_error(TT_EINVAL, "%s: argument 'self' (#1): Expected reduction dim %d to have "
                                   "non-zero size (the input has shape %s)", op, d,
                        tt_shape_str(x, s, sizeof s));
    fake = fake || x->storage->fake;
    tt_size sz[TT_MAX_DIMS];
    int nd = reduced(x, has_dim ? d : -1, has_dim && keepdim, sz);
    out[0] = tt__ops_new(fake, nd, sz, NULL, (tt_dtype)x->dtype);
    if (!out[0] || (has_dim && !(out[1] = tt__ops_new(fake, nd, sz, NULL, TT_I64))))
        return drop2(out);
    if (fake || tt__numel_concrete(out[0]) == 0)
        return TT_OK;
    if (!has_dim && tt__numel_concrete(x) == 0) { /* median of nothing */
        if (!tt__dtype_is_float((tt_dtype)x->dtype)) {
            drop2(out);
            return tt_error(TT_EINVAL, "%s: argument 'self' (#1): the median of an empty %s "
                                       "tensor has no value", op,
                            tt_dtype_name((tt_dtype)x->dtype));
        }
        tt__fill_raw(out[0], NAN);
        return TT_OK;
    }
    rplan p = {.flag = median};
    tt_status st;
    if (!has_dim) {
        int64_t m = tt__numel_concrete(x);
        tt_tensor *flat = tt__new_contiguous(x, (tt_dtype)x->dtype);
        tt_tensor *fl = flat && !tt__copy_raw(flat, x) ? tt__view_raw(flat, 1, &m) : NULL;
        tt_tensor *vo = fl ? tt__view_raw(out[0], 1, (const int64_t[]){1}) : NULL;
        p.k = (m - 1) / 2;
        st = vo ? run_rows(fl, 0, vo, NULL, &p, kth_tasks[x->dtype]) : tt_errcode();
        tt_release(vo), tt_release(fl), tt_release(flat);
    } else {
        int64_t len = x->ndim ? x->sizes[d] : 1;
        p.k = median ? (len - 1) / 2 : k - 1;
        bool dropped = !keepdim && x->ndim > 0;
        tt_tensor *vo = keepdim_view(out[0], d, dropped), *io = keepdim_view(out[1], d, dropped);
        st = vo && io ? run_rows(x, d, vo, io, &p, kth_tasks[x->dtype]) : tt_errcode();
        tt_release(vo), tt_release(io);
    }
    return st ? drop2(out) : TT_OK;
}

/* tt::value_selecting_reduction_backward(grad, dim, indices, sizes,
 * keepdim): zeros of `sizes` with grad written at indices along dim (the
 * gradient of sort, topk, max.dim, min.dim: PyTorch's formula). */
#define SCATTER_ROWS(SUF, T)                                                   \
    static void scatter_rows_##SUF(int64_t b0, int64_t e0, void *vp)           \
    {                                                                          \
        rplan *p = vp;                                                         \
        for (int64_t r = b0; r < e0; r++) {                                    \
            const T *g = (const T *)p->x + r * p->k;                           \
            const int64_t *ix = (const int64_t *)p->ix + r * p->k;             \
            T *o = (T *)p->v + r * p->n;                                       \
            for (int64_t i = 0; i < p->k; i++)                                 \
                o[ix[i]] = g[i];                                               \
        }                                                                      \
    }
SCATTER_ROWS(f32, float)
SCATTER_ROWS(f64, double)

static tt_tensor *vsr_backward(const tt_tensor *g, int64_t dim, const tt_tensor *ix, int nsz,
                               const tt_size *sz, bool keepdim, bool fake)
{
    const char *op = tt__op_label(TT_OP_VALUE_SELECTING_REDUCTION_BACKWARD);
    char s1[128], s2[128];
    tt_dtype dt = (tt_dtype)g->dtype;
    if (dt != TT_F32 && dt != TT_F64) {
        tt_error(TT_EDTYPE, "%s: argument 'grad' (#1): expected f32 or f64, got %s", op,
                 tt_dtype_name(dt));
        return NULL;
    }
    if (ix->dtype != TT_I64) {
        tt_error(TT_EDTYPE, "%s: argument 'indices' (#3): expected i64, got %s", op,
                 tt_dtype_name((tt_dtype)ix->dtype));
        return NULL;
    }
    int d = tt__op_dim(op, "dim", 2, dim, nsz);
    if (d < 0)
        return NULL;
    /* grad and indices: sizes with k along dim (or without dim) */
    bool dropped = !keepdim && nsz > 0;
    bool ok = g->ndim == ix->ndim && g->ndim == nsz - (dropped ? 1 : 0);
    for (int i = 0, j = 0; ok && i < nsz; i++) {
        if (dropped && i == d)
            continue;
        ok = tt_size_eq(g->sizes[j], ix->sizes[j]) && (i == d || tt_size_eq(g->sizes[j], sz[i]));
        j++;
    }
    if (!ok) {
        tt_error(TT_ESHAPE, "%s: argument 'grad' (#1): shape %s does not fit indices %s and "
                            "sizes %s along dim %d", op, tt_shape_str(g, s1, sizeof s1),
                 tt_shape_str(ix, s2, sizeof s2),
                 tt_size_list_str(nsz, sz, false, (char[128]){0}, 128), d);
        return NULL;
    }
    fake = fake || g->storage->fake || ix->storage->fake;
    tt_tensor *out = tt__ops_new(fake, nsz, sz, NULL, dt);
    if (!out || fake || tt__numel_concrete(out) == 0)
        return out;
    if (tt__numel_concrete(g) == 0) {
        tt__fill_raw(out, 0);
        return out;
    }
    tt_tensor *gk = keepdim_view((tt_tensor *)g, d, dropped);
    tt_tensor *ik = keepdim_view((tt_tensor *)ix, d, dropped);
    tt_tensor *gr = gk ? rows_copy(gk, d, dt) : NULL, *ir = ik ? rows_copy(ik, d, TT_I64) : NULL;
    rows_out wo = {0};
    rplan p = {0};
    ok = gr && ir && (p.v = rows_get(&wo, out, d)) != NULL;
    if (ok) { /* zeros, then grad at the indices (into the buffer if any) */
        tt__fill_raw(wo.buf, 0);
        p.x = tt__ptr(gr), p.ix = (int64_t *)tt__ptr(ir);
        p.n = nsz ? sz[d] : 1, p.k = gr->sizes[gr->ndim - 1];
        p.R = tt__numel_concrete(gr) / p.k;
        const int64_t *iv = p.ix;
        for (int64_t i = 0, m = tt__numel_concrete(ir); ok && i < m; i++)
            if (iv[i] < 0 || iv[i] >= p.n)
                ok = !tt_error(TT_EINVAL, "%s: argument 'indices' (#3): index %lld is out of "
                                          "bounds for dim %d of size %lld", op,
                               (long long)iv[i], d, (long long)p.n);
        if (ok)
            tt_parallel_for(p.R, row_grain(p.n), dt == TT_F64 ? scatter_rows_f64
                                                                : scatter_rows_f32, &p);
    }
    if (rows_put(&wo, ok))
        ok = false;
    tt_release(gk), tt_release(ik), tt_release(gr), tt_release(ir);
    return ok ? out : tt_release(out);
}

/* ------------------------------------------------- scans and products */

/* A scan's or product's result dtype: `dtype` when given (self is cast to
 * it first, as PyTorch's), else self's, integers and bool promoted to i64. */
static tt_dtype accum_dtype(const tt_tensor *x, bool has_dtype, tt_dtype dtype)
{
    if (has_dtype)
        return dtype;
    return tt__dtype_is_float((tt_dtype)x->dtype) ? (tt_dtype)x->dtype : TT_I64;
}

/* Running sums or products along each row, accumulated as PyTorch's CPU
 * kernels do (acc_type: double for floats, 64 bits for integers, which
 * wrap as unsigned). A row's scan is one chain of dependent adds, bound by
 * the add's latency (16M f32 took 13 ms, a third of memory speed), so
 * SCAN_LANES rows run side by side, each its own chain in its own order:
 * the same sums, bit for bit, at the adds' throughput. */
enum { SCAN_LANES = 4 };
#define SCAN_ROWS(SUF, T, ACC)                                                 \
    static void scan_rows_##SUF(int64_t b0, int64_t e0, void *vp)              \
    {                                                                          \
        rplan *p = vp;                                                         \
        const int64_t n = p->n;                                                \
        const ACC init = p->flag ? (ACC)1 : (ACC)0;                            \
        int64_t r = b0;                                                        \
        for (; r + SCAN_LANES <= e0; r += SCAN_LANES) {                        \
            const T *x = (const T *)p->x + r * n;                              \
            T *y = (T *)p->v + r * n;                                          \
            ACC a[SCAN_LANES];                                                 \
            for (int l = 0; l < SCAN_LANES; l++)                               \
                a[l] = init;                                                   \
            if (p->flag) {                                                     \
                for (int64_t i = 0; i < n; i++)                                \
                    for (int l = 0; l < SCAN_LANES; l++)                       \
                        y[l * n + i] = (T)(a[l] = a[l] * (ACC)x[l * n + i]);   \
            } else {                                                           \
                for (int64_t i = 0; i < n; i++)                                \
                    for (int l = 0; l < SCAN_LANES; l++)                       \
                        y[l * n + i] = (T)(a[l] = a[l] + (ACC)x[l * n + i]);   \
            }                                                                  \
        }                                                                      \
        for (; r < e0; r++) {                                                  \
            const T *x = (const T *)p->x + r * n;                              \
            T *y = (T *)p->v + r * n;                                          \
            ACC a = init;                                                      \
            for (int64_t i = 0; i < n; i++) {                                  \
                a = p->flag ? a * (ACC)x[i] : a + (ACC)x[i];                   \
                y[i] = (T)a;                                                   \
            }                                                                  \
        }                                                                      \
    }
SCAN_ROWS(f32, float, double)
SCAN_ROWS(f64, double, double)
SCAN_ROWS(i64, int64_t, uint64_t)
SCAN_ROWS(i32, int32_t, uint64_t)
SCAN_ROWS(u8, uint8_t, uint64_t)
/* f32 sums on an AVX-512 CPU: eight rows at a time in vectors
 * (vec_math_avx512.c), the same sums bit for bit; 16M f32 in rows of
 * 4096 take 4.3-4.6 ms CPU, 9 ms with four scalar chains side by side. */
static void scan_rows_f32_vec(int64_t b0, int64_t e0, void *vp)
{
    rplan *p = vp;
    int64_t r = b0;
    /* a result outgrowing the cache is written around it */
    bool stream = tt__stream_worthwhile(8 * p->R * p->n);
    /* (false: a build without the AVX-512 kernels; the scalar rows then) */
    for (; r + 8 <= e0; r += 8)
        if (!tt__cumsum_rows8_f32_avx512((const float *)p->x + r * p->n,
                                         (float *)p->v + r * p->n, p->n, stream))
            break;
    if (stream)
        tt__stream_fence();
    if (r < e0)
        scan_rows_f32(r, e0, vp);
}

static const row_task scan_tasks[] = {[TT_F32] = scan_rows_f32, [TT_F64] = scan_rows_f64,
                                      [TT_I64] = scan_rows_i64, [TT_I32] = scan_rows_i32,
                                      [TT_U8] = scan_rows_u8};

/* tt::cumsum / tt::cumprod: contiguous results, as PyTorch's. */
static tt_tensor *scan_impl(const char *op, const tt_tensor *x, int64_t dim, bool has_dtype,
                            tt_dtype dtype, bool prod, bool fake)
{
    int d = tt__op_dim(op, "dim", 2, dim, x->ndim);
    if (d < 0)
        return NULL;
    tt_dtype dt = accum_dtype(x, has_dtype, dtype);
    if (dt == TT_BOOL) {
        tt_error(TT_EDTYPE, "%s: argument 'dtype' (#3): not implemented for bool results "
                            "(PyTorch's kernel has none)", op);
        return NULL;
    }
    fake = fake || x->storage->fake;
    tt_tensor *out = tt__ops_new(fake, x->ndim, x->sizes, NULL, dt);
    if (!out || fake || tt__numel_concrete(out) == 0)
        return out;
    /* the rows are cast to the result's dtype first */
    tt_tensor *xr = rows_copy(x, d, dt);
    rows_out w = {0};
    rplan p = {.flag = prod};
    bool ok = xr && (p.v = rows_get(&w, out, d)) != NULL;
    if (ok) {
        p.x = tt__ptr(xr), p.n = xr->sizes[xr->ndim - 1];
        p.R = tt__numel_concrete(xr) / p.n;
        bool vec = dt == TT_F32 && !prod && p.R >= 8 && tt__cpu_vector_level() == 2;
        tt_parallel_for(p.R, vec ? (row_grain(p.n) + 7) & ~(int64_t)7 : row_grain(p.n),
                        vec ? scan_rows_f32_vec : scan_tasks[dt], &p);
    }
    if (rows_put(&w, ok))
        ok = false;
    tt_release(xr);
    return ok ? out : tt_release(out);
}

/* cumprod's gradient along each row of x (f64 rows g, x, y = cumprod):
 * dx_k = sum_{i >= k} g_i prod_{j <= i, j != k} x_j, exactly when x has
 * zeros: before the first zero z it is sum_{k <= i < z} g_i y_i / x_k, at z
 * the products that skip x_z, after z nothing (as PyTorch's
 * cumprod_backward). */
/* The rows of a scan's backward: f64 rows of grad g, input x and the
 * scan's result y, into dx, n values each. */
typedef struct {
    const double *g, *x, *y;
    double *dx;
    int64_t n;
} scan_bw_plan;

static void cumprod_bw_rows(int64_t b0, int64_t e0, void *vp)
{
    const scan_bw_plan *p = vp;
    int64_t n = p->n;
    for (int64_t r = b0; r < e0; r++) {
        const double *g = p->g + r * n, *x = p->x + r * n, *y = p->y + r * n;
        double *dx = p->dx + r * n;
        int64_t z = 0;
        while (z < n && x[z] != 0)
            z++;
        double acc = 0;
        for (int64_t k = z; k-- > 0;) {
            acc += g[k] * y[k];
            dx[k] = acc / x[k];
        }
        if (z < n) {
            double q = z ? y[z - 1] : 1, s = g[z] * q;
            for (int64_t i = z + 1; i < n; i++) {
                q *= x[i];
                s += g[i] * q;
            }
            dx[z] = s;
            for (int64_t k = z + 1; k < n; k++)
                dx[k] = 0;
        }
    }
}

/* Products over a set of dims: the rows are x with those dims last. */
static tt_tensor *dims_last(const tt_tensor *t, const bool *mask)
{
    if (t->ndim == 0)
        return tt__view_raw(t, 1, (const int64_t[]){1});
    int64_t perm[TT_MAX_DIMS];
    int k = 0;
    for (int d = 0; d < t->ndim; d++)
        if (!mask[d])
            perm[k++] = d;
    for (int d = 0; d < t->ndim; d++)
        if (mask[d])
            perm[k++] = d;
    return tt__permute_raw(t, t->ndim, perm);
}

/* A contiguous f64 (or dt) copy of x with the masked dims last, as R rows
 * of n. */
static tt_tensor *mask_rows(const tt_tensor *x, const bool *mask, tt_dtype dt, int64_t *R,
                            int64_t *n)
{
    tt_tensor *v = dims_last(x, mask);
    tt_tensor *c = v ? tt__new_contiguous(v, dt) : NULL;
    if (c && tt__copy_raw(c, v))
        c = tt_release(c);
    tt_release(v);
    *n = 1, *R = 1;
    for (int d = 0; d < x->ndim; d++)
        *(mask[d] ? n : R) *= x->sizes[d];
    return c;
}

/* The dims of a reduction over `dims` (none: all) as a mask, or an error
 * naming op (a dim out of range or repeated). */
static tt_status dims_mask(const char *op, int argno, const tt_tensor *x, int nd,
                           const int64_t *dims, bool *mask)
{
    memset(mask, 0, sizeof(bool) * TT_MAX_DIMS);
    if (!nd) {
        for (int d = 0; d < x->ndim; d++)
            mask[d] = true;
        return TT_OK;
    }
    for (int i = 0; i < nd; i++) {
        int d = tt__op_dim(op, "dim", argno, dims[i], x->ndim);
        if (d < 0)
            return tt_errcode();
        if (mask[d] && x->ndim > 0)
            return tt_error(TT_EINVAL, "%s: argument 'dim' (#%d): dim %d appears multiple times "
                                       "in the list of dims", op, argno, d);
        mask[d] = x->ndim > 0;
    }
    return TT_OK;
}

static int mask_shape(const tt_tensor *x, const bool *mask, bool keepdim, tt_size *sz)
{
    int nd = 0;
    for (int d = 0; d < x->ndim; d++)
        if (!mask[d])
            sz[nd++] = x->sizes[d];
        else if (keepdim)
            sz[nd++] = 1;
    return nd;
}

/* One value per row: the product (PRODUCT_ROWS) or log-sum-exp. */
typedef struct {
    const char *x;
    char *out;
    int64_t n;
} red_plan;

#define PRODUCT_ROWS(SUF, T, ACC, STORE)                                       \
    static void prod_rows_##SUF(int64_t b0, int64_t e0, void *vp)              \
    {                                                                          \
        const red_plan *p = vp;                                                \
        for (int64_t r = b0; r < e0; r++) {                                    \
            const T *x = (const T *)p->x + r * p->n;                           \
            ACC a = 1;                                                         \
            for (int64_t i = 0; i < p->n; i++)                                 \
                a *= (ACC)x[i];                                                \
            ((T *)p->out)[r] = STORE(a);                                       \
        }                                                                      \
    }
#define STORE_AS_IS(a) (a)
#define STORE_BOOL(a) ((a) != 0)
PRODUCT_ROWS(f32, float, double, (float)STORE_AS_IS)
PRODUCT_ROWS(f64, double, double, STORE_AS_IS)
PRODUCT_ROWS(i64, int64_t, uint64_t, (int64_t)STORE_AS_IS)
PRODUCT_ROWS(i32, int32_t, uint64_t, (int32_t)STORE_AS_IS)
PRODUCT_ROWS(u8, uint8_t, uint64_t, (uint8_t)STORE_AS_IS)
PRODUCT_ROWS(b, uint8_t, uint64_t, STORE_BOOL)
static const row_task prod_tasks[] = {[TT_F32] = prod_rows_f32, [TT_F64] = prod_rows_f64,
                                      [TT_I64] = prod_rows_i64, [TT_I32] = prod_rows_i32,
                                      [TT_U8] = prod_rows_u8, [TT_BOOL] = prod_rows_b};

/* log(sum(exp(x - m))) + m with m the row's maximum (0 when infinite, so
 * a row of -inf gives -inf and one with +inf gives +inf); NaN propagates.
 * In double, rounded once to T. */
#define LSE_ROWS(SUF, T)                                                       \
    static void lse_rows_##SUF(int64_t b0, int64_t e0, void *vp)               \
    {                                                                          \
        const red_plan *p = vp;                                                \
        for (int64_t r = b0; r < e0; r++) {                                    \
            const T *x = (const T *)p->x + r * p->n;                           \
            double m = -INFINITY, s = 0;                                       \
            bool nan = false;                                                  \
            for (int64_t i = 0; i < p->n; i++) {                               \
                nan |= isnan(x[i]);                                            \
                m = (double)x[i] > m ? (double)x[i] : m;                       \
            }                                                                  \
            if (isinf(m))                                                      \
                m = 0;                                                         \
            for (int64_t i = 0; i < p->n; i++)                                 \
                s += exp((double)x[i] - m);                                    \
            ((T *)p->out)[r] = nan ? (T)NAN : (T)(log(s) + m);                 \
        }                                                                      \
    }
LSE_ROWS(f32, float)
LSE_ROWS(f64, double)

/* A reduction over the masked dims into a new contiguous result of dtype
 * dt, one value per row of x cast to dt. */
static tt_tensor *reduce_rows(const tt_tensor *x, const bool *mask, bool keepdim, tt_dtype dt,
                              row_task task, bool fake)
{
    tt_size sz[TT_MAX_DIMS];
    int nd = mask_shape(x, mask, keepdim, sz);
    fake = fake || x->storage->fake;
    tt_tensor *out = tt__ops_new(fake, nd, sz, NULL, dt);
    if (!out || fake || tt__numel_concrete(out) == 0)
        return out;
    int64_t R, n;
    tt_tensor *xr = mask_rows(x, mask, dt, &R, &n);
    if (!xr)
        return tt_release(out);
    red_plan p = {.x = tt__ptr(xr), .out = tt__ptr(out), .n = n};
    tt_parallel_for(R, row_grain(n), task, &p);
    tt_release(xr);
    return out;
}

/* tt::prod, tt::prod.dim_int (has_dim false: all dims). */
static tt_tensor *prod_impl(const char *op, const tt_tensor *x, bool has_dim, int64_t dim,
                            bool keepdim, bool has_dtype, tt_dtype dtype, bool fake)
{
    bool mask[TT_MAX_DIMS];
    if (dims_mask(op, 2, x, has_dim ? 1 : 0, &dim, mask))
        return NULL;
    tt_dtype dt = accum_dtype(x, has_dtype, dtype);
    return reduce_rows(x, mask, has_dim && keepdim, dt, prod_tasks[dt], fake);
}

/* tt::logsumexp: integer inputs give the default float dtype (f32), as
 * PyTorch's. An empty dim list reduces over every dim (as PyTorch 2's; 1.13
 * fails on it). */
static tt_tensor *logsumexp_impl(const tt_tensor *x, int nd, const int64_t *dims, bool keepdim,
                                 bool fake)
{
    const char *op = tt__op_label(TT_OP_LOGSUMEXP);
    bool mask[TT_MAX_DIMS];
    if (dims_mask(op, 2, x, nd, dims, mask))
        return NULL;
    tt_dtype dt = tt__dtype_is_float((tt_dtype)x->dtype) ? (tt_dtype)x->dtype : TT_F32;
    return reduce_rows(x, mask, keepdim, dt, dt == TT_F64 ? lse_rows_f64 : lse_rows_f32, fake);
}

/* prod's gradient along each row: g times the product of the others,
 * result / x_k without zeros in the row (PyTorch's common path), else the
 * product that skips the one zero (none for two or more). */
typedef struct {
    const double *g, *x, *res;
    double *dx;
    int64_t n;
} pb_plan;

static void prod_bw_rows(int64_t b0, int64_t e0, void *vp)
{
    const pb_plan *p = vp;
    int64_t n = p->n;
    for (int64_t r = b0; r < e0; r++) {
        const double *x = p->x + r * n;
        double *dx = p->dx + r * n, g = p->g[r];
        int64_t zeros = 0, z = 0;
        for (int64_t i = 0; i < n; i++)
            if (x[i] == 0)
                zeros++, z = i;
        for (int64_t i = 0; i < n; i++)
            dx[i] = zeros ? 0 : g * (p->res[r] / x[i]);
        if (zeros == 1) {
            double q = 1;
            for (int64_t i = 0; i < n; i++)
                q *= i == z ? 1 : x[i];
            dx[z] = g * q;
        }
    }
}

/* f64 contiguous copy of t (any dtype). */
static tt_tensor *f64_copy(const tt_tensor *t)
{
    tt_tensor *c = tt__new_contiguous(t, TT_F64);
    if (c && tt__copy_raw(c, t))
        c = tt_release(c);
    return c;
}

/* tt::prod_backward(grad, self, result, dim, keepdim): dim [] for prod()
 * over every dim. grad and result have the reduction's shape. */
static tt_tensor *prod_backward_impl(const tt_tensor *g, const tt_tensor *x, const tt_tensor *res,
                                     int nd, const int64_t *dims, bool keepdim, bool fake)
{
    const char *op = tt__op_label(TT_OP_PROD_BACKWARD);
    bool mask[TT_MAX_DIMS];
    char s1[128], s2[128];
    if (dims_mask(op, 4, x, nd, dims, mask))
        return NULL;
    tt_dtype dt = (tt_dtype)x->dtype;
    if (!tt__dtype_is_float(dt)) {
        tt_error(TT_EDTYPE, "%s: argument 'self' (#2): expected f32 or f64, got %s", op,
                 tt_dtype_name(dt));
        return NULL;
    }
    tt_size sz[TT_MAX_DIMS];
    int rnd = mask_shape(x, mask, keepdim || nd == 0, sz);
    if (nd == 0) /* prod(): a 0-dim grad and result */
        rnd = 0;
    const tt_tensor *ts[2] = {g, res};
    for (int i = 0; i < 2; i++) {
        bool ok = ts[i]->ndim == rnd;
        for (int d = 0; ok && d < rnd; d++)
            ok = tt_size_eq(ts[i]->sizes[d], sz[d]);
        if (!ok) {
            tt_error(TT_ESHAPE, "%s: argument '%s' (#%d): expected shape %s, got %s", op,
                     i ? "result" : "grad", i ? 3 : 1,
                     tt_size_list_str(rnd, sz, false, s1, sizeof s1),
                     tt_shape_str(ts[i], s2, sizeof s2));
            return NULL;
        }
    }
    fake = fake || g->storage->fake || x->storage->fake || res->storage->fake;
    tt_tensor *out = tt__ops_new(fake, x->ndim, x->sizes, NULL, dt);
    if (!out || fake || tt__numel_concrete(out) == 0)
        return out;
    int64_t R, n;
    tt_tensor *xr = mask_rows(x, mask, TT_F64, &R, &n);
    tt_tensor *gc = f64_copy(g), *rc = f64_copy(res);
    tt_tensor *dxr = xr ? tt__new_contiguous(xr, TT_F64) : NULL;
    tt_tensor *ov = dims_last(out, mask);
    bool ok = xr && gc && rc && dxr && ov;
    if (ok) {
        pb_plan p = {.g = (const double *)tt__ptr(gc), .x = (const double *)tt__ptr(xr),
                     .res = (const double *)tt__ptr(rc), .dx = (double *)tt__ptr(dxr), .n = n};
        tt_parallel_for(R, row_grain(n), prod_bw_rows, &p);
        ok = !tt__copy_raw(ov, dxr);
    }
    tt_release(xr), tt_release(gc), tt_release(rc), tt_release(dxr), tt_release(ov);
    return ok ? out : tt_release(out);
}

/* A scan's backward op (id: cumprod_backward, logcumsumexp_backward):
 * checks grad and result against self (their argument numbers: #1 and
 * result_argno, dim's dim_argno), then runs rows (scan_bw_plan) over f64
 * copies of the rows along dim, and writes dx in self's dtype. */
static tt_tensor *scan_backward_rows(tt_builtin_id id, int dim_argno, int result_argno,
                                const tt_tensor *g, const tt_tensor *x, const tt_tensor *y,
                                int64_t dim, bool fake, void (*rows)(int64_t, int64_t, void *))
{
    const char *op = tt__op_label(id);
    int d = tt__op_dim(op, "dim", dim_argno, dim, x->ndim);
    if (d < 0)
        return NULL;
    tt_dtype dt = (tt_dtype)x->dtype;
    if (!tt__dtype_is_float(dt)) {
        tt_error(TT_EDTYPE, "%s: argument 'self' (#2): expected f32 or f64, got %s", op,
                 tt_dtype_name(dt));
        return NULL;
    }
    const tt_tensor *ts[2] = {g, y};
    for (int i = 0; i < 2; i++) {
        bool ok = ts[i]->ndim == x->ndim;
        for (int k = 0; ok && k < x->ndim; k++)
            ok = tt_size_eq(ts[i]->sizes[k], x->sizes[k]);
        if (!ok) {
            char s1[128], s2[128];
            tt_error(TT_ESHAPE, "%s: argument '%s' (#%d): expected shape %s like 'self', got %s",
                     op, i ? "result" : "grad", i ? result_argno : 1,
                     tt_shape_str(x, s1, sizeof s1), tt_shape_str(ts[i], s2, sizeof s2));
            return NULL;
        }
    }
    fake = fake || g->storage->fake || x->storage->fake || y->storage->fake;
    tt_tensor *out = tt__ops_new(fake, x->ndim, x->sizes, NULL, dt);
    if (!out || fake || tt__numel_concrete(out) == 0)
        return out;
    tt_tensor *gr = rows_copy(g, d, TT_F64), *xr = rows_copy(x, d, TT_F64);
    tt_tensor *yr = rows_copy(y, d, TT_F64);
    tt_tensor *dxr = xr ? tt__new_contiguous(xr, TT_F64) : NULL, *ov = dim_last(out, d);
    bool ok = gr && xr && yr && dxr && ov;
    if (ok) {
        scan_bw_plan p = {.g = (const double *)tt__ptr(gr), .x = (const double *)tt__ptr(xr),
                          .y = (const double *)tt__ptr(yr), .dx = (double *)tt__ptr(dxr),
                          .n = xr->sizes[xr->ndim - 1]};
        tt_parallel_for(tt__numel_concrete(xr) / p.n, row_grain(p.n), rows, &p);
        ok = !tt__copy_raw(ov, dxr);
    }
    tt_release(gr), tt_release(xr), tt_release(yr), tt_release(dxr), tt_release(ov);
    return ok ? out : tt_release(out);
}

/* tt::cumprod_backward(grad, self, dim, result): see cumprod_bw_rows. */
static tt_tensor *cumprod_backward_impl(const tt_tensor *g, const tt_tensor *x, int64_t dim,
                                        const tt_tensor *y, bool fake)
{
    return scan_backward_rows(TT_OP_CUMPROD_BACKWARD, 3, 4, g, x, y, dim, fake, cumprod_bw_rows);
}

/* PyTorch's _log_add_exp_helper: log(exp(x) + exp(y)), exact for two
 * infinities of one sign (x), NaN propagating. */
static inline double log_add_exp(double x, double y)
{
    double lo = isnan(y) ? y : x < y ? x : y, hi = isnan(y) ? y : x > y ? x : y;
    if (isnan(x))
        lo = hi = x;
    if (lo != hi || isfinite(lo))
        return hi + log1p(exp(lo - hi));
    return x;
}

#define LCSE_ROWS(SUF, T)                                                      \
    static void lcse_rows_##SUF(int64_t b0, int64_t e0, void *vp)              \
    {                                                                          \
        rplan *p = vp;                                                         \
        for (int64_t r = b0; r < e0; r++) {                                    \
            const T *x = (const T *)p->x + r * p->n;                           \
            T *y = (T *)p->v + r * p->n;                                       \
            double a = -INFINITY;                                              \
            for (int64_t i = 0; i < p->n; i++)                                 \
                y[i] = (T)(a = log_add_exp((double)x[i], a));                  \
        }                                                                      \
    }
LCSE_ROWS(f32, float)
LCSE_ROWS(f64, double)

/* tt::logcumsumexp: floats only (PyTorch's kernel); contiguous. */
static tt_tensor *logcumsumexp_impl(const tt_tensor *x, int64_t dim, bool fake)
{
    const char *op = tt__op_label(TT_OP_LOGCUMSUMEXP);
    int d = tt__op_dim(op, "dim", 2, dim, x->ndim);
    if (d < 0)
        return NULL;
    tt_dtype dt = (tt_dtype)x->dtype;
    if (!tt__dtype_is_float(dt)) {
        tt_error(TT_EDTYPE, "%s: argument 'self' (#1): expected f32 or f64, got %s", op,
                 tt_dtype_name(dt));
        return NULL;
    }
    fake = fake || x->storage->fake;
    tt_tensor *out = tt__ops_new(fake, x->ndim, x->sizes, NULL, dt);
    if (!out || fake || tt__numel_concrete(out) == 0)
        return out;
    tt_tensor *xr = rows_copy(x, d, dt);
    rows_out w = {0};
    rplan p = {0};
    bool ok = xr && (p.v = rows_get(&w, out, d)) != NULL;
    if (ok) {
        p.x = tt__ptr(xr), p.n = xr->sizes[xr->ndim - 1];
        p.R = tt__numel_concrete(xr) / p.n;
        tt_parallel_for(p.R, row_grain(p.n), dt == TT_F64 ? lcse_rows_f64 : lcse_rows_f32, &p);
    }
    if (rows_put(&w, ok))
        ok = false;
    tt_release(xr);
    return ok ? out : tt_release(out);
}

/* logcumsumexp's gradient, PyTorch's formula (logcumsumexp_backward):
 * dx_k = sum_{i >= k} g_i exp(x_k - r_i), the positive and negative parts
 * of g each summed in log space by a reversed log-add-exp scan, so no
 * exp overflows. */
static void lcse_bw_rows(int64_t b0, int64_t e0, void *vp)
{
    const scan_bw_plan *p = vp;
    int64_t n = p->n;
    for (int64_t row = b0; row < e0; row++) {
        const double *g = p->g + row * n, *x = p->x + row * n, *r = p->y + row * n;
        double *dx = p->dx + row * n, pos = -INFINITY, neg = -INFINITY;
        for (int64_t k = n; k-- > 0;) {
            double lg = log(fabs(g[k]));
            pos = log_add_exp((g[k] > 0 ? lg : -DBL_MAX) - r[k], pos);
            neg = log_add_exp((g[k] < 0 ? lg : -DBL_MAX) - r[k], neg);
            dx[k] = exp(pos + x[k]) - exp(neg + x[k]);
        }
    }
}

static tt_tensor *logcumsumexp_backward_impl(const tt_tensor *g, const tt_tensor *x,
                                             const tt_tensor *y, int64_t dim, bool fake)
{
    return scan_backward_rows(TT_OP_LOGCUMSUMEXP_BACKWARD, 4, 3, g, x, y, dim, fake, lcse_bw_rows);
}

/* ---------------------------------------------------------- kernels */

static tt_status return2(tt_frame *f, tt_status st, tt_tensor **out)
{
    for (int i = 0; i < 2; i++)
        if (!st)
            st = tt_return(f, i, out[i]);
        else
            tt_release(out[i]);
    return st;
}

static tt_status sort_kernel(tt_frame *f)
{
    tt_tensor *x, *out[2];
    int64_t dim;
    bool desc;
    int first = (intptr_t)tt_frame_userdata(f) == SEL_SORT_STABLE ? 2 : 1;
    tt_status st;
    if (first == 2 && !tt_arg_is_none(f, 1)) {
        bool stable;
        if ((st = tt_arg_bool(f, 1, &stable)))
            return st;
    }
    if ((st = tt_arg_tensor(f, 0, &x)) || (st = tt_arg_int(f, first, &dim)) ||
        (st = tt_arg_bool(f, first + 1, &desc)))
        return st;
    st = sort_impl(tt__op_label(first == 2 ? TT_OP_SORT_STABLE : TT_OP_SORT), first + 1, x, dim,
                   desc, tt_frame_is_fake(f), out);
    return st ? st : return2(f, st, out);
}

static tt_status topk_kernel(tt_frame *f)
{
    tt_tensor *x, *out[2];
    int64_t k, dim;
    bool largest, sorted;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &x)) || (st = tt_arg_int(f, 1, &k)) ||
        (st = tt_arg_int(f, 2, &dim)) || (st = tt_arg_bool(f, 3, &largest)) ||
        (st = tt_arg_bool(f, 4, &sorted)))
        return st;
    /* sorted=False may return any order; the sorted one is as good */
    st = topk_impl(tt__op_label(TT_OP_TOPK), x, k, dim, largest, tt_frame_is_fake(f), out);
    return st ? st : return2(f, st, out);
}

static tt_status extremum_kernel(tt_frame *f)
{
    tt_tensor *x, *out[2];
    int64_t dim;
    bool keepdim, is_max = (intptr_t)tt_frame_userdata(f) == SEL_MAX;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &x)) || (st = tt_arg_int(f, 1, &dim)) ||
        (st = tt_arg_bool(f, 2, &keepdim)))
        return st;
    st = extremum_impl(tt__op_label(is_max ? TT_OP_MAX_DIM : TT_OP_MIN_DIM), x, true, dim,
                       keepdim, is_max, true, tt_frame_is_fake(f), out);
    return st ? st : return2(f, st, out);
}

static tt_status argmin_kernel(tt_frame *f)
{
    tt_tensor *x, *out[2];
    int64_t dim = 0;
    bool keepdim, has_dim = !tt_arg_is_none(f, 1);
    tt_status st = tt_arg_tensor(f, 0, &x);
    if (!st && has_dim)
        st = tt_arg_int(f, 1, &dim);
    if (!st)
        st = tt_arg_bool(f, 2, &keepdim);
    if (st || (st = extremum_impl(tt__op_label(TT_OP_ARGMIN), x, has_dim, dim, keepdim, false,
                                  false, tt_frame_is_fake(f), out)))
        return st;
    return tt_return(f, 0, out[1]);
}

static tt_status kthvalue_kernel(tt_frame *f)
{
    tt_tensor *x, *out[2];
    int64_t k, dim;
    bool keepdim;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &x)) || (st = tt_arg_int(f, 1, &k)) ||
        (st = tt_arg_int(f, 2, &dim)) || (st = tt_arg_bool(f, 3, &keepdim)))
        return st;
    st = kth_impl(tt__op_label(TT_OP_KTHVALUE), x, false, k, true, dim, keepdim,
                  tt_frame_is_fake(f), out);
    return st ? st : return2(f, st, out);
}

static tt_status median_dim_kernel(tt_frame *f)
{
    tt_tensor *x, *out[2];
    int64_t dim;
    bool keepdim;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &x)) || (st = tt_arg_int(f, 1, &dim)) ||
        (st = tt_arg_bool(f, 2, &keepdim)))
        return st;
    st = kth_impl(tt__op_label(TT_OP_MEDIAN_DIM), x, true, 0, true, dim, keepdim,
                  tt_frame_is_fake(f), out);
    return st ? st : return2(f, st, out);
}

static tt_status median_kernel(tt_frame *f)
{
    tt_tensor *x, *out[2];
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &x)) ||
        (st = kth_impl(tt__op_label(TT_OP_MEDIAN), x, true, 0, false, 0, false,
                       tt_frame_is_fake(f), out)))
        return st;
    return tt_return(f, 0, out[0]);
}

static tt_status save_self_result(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                                  const tt_value *out, int nout)
{
    (void)nin, (void)nout;
    return tt_ctx_save_for_backward(ctx, 2, (tt_tensor *[]){in[0].u.t, out[0].u.t});
}

/* median(): PyTorch's evenly_distribute_backward, as ops: grad shared
 * evenly by the elements equal to the median (the NaNs when it is NaN). */
static tt_status median_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                 tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    if (!g[0])
        return TT_OK;
    tt_tensor *x = tt_ctx_saved(ctx, 0), *r = tt_ctx_saved(ctx, 1);
    tt_dtype dt = tt_dtype_of(x);
    tt_tensor *eq = tt_eq(x, r), *xn = tt_ne(x, x), *rn = tt_ne(r, r);
    tt_tensor *eqf = eq ? tt_to_dtype(eq, dt) : NULL, *xnf = xn ? tt_to_dtype(xn, dt) : NULL;
    tt_tensor *rnf = rn ? tt_to_dtype(rn, dt) : NULL;
    tt_tensor *nan = xnf && rnf ? tt_mul(xnf, rnf) : NULL;
    tt_tensor *mask = nan && eqf ? tt_add(eqf, nan) : NULL;
    tt_tensor *cnt = mask ? tt_sum_all(mask) : NULL;
    tt_tensor *share = cnt ? tt_div(g[0], cnt) : NULL;
    tt_tensor *res = share ? tt_mul(mask, share) : NULL;
    tt_tensor *tmp[] = {eq, xn, rn, eqf, xnf, rnf, nan, mask, cnt, share};
    for (int i = 0; i < (int)(sizeof tmp / sizeof tmp[0]); i++)
        tt_release(tmp[i]);
    return tt__put_grad(ctx, gi, 0, res);
}

static tt_status vsr_backward_kernel(tt_frame *f)
{
    tt_tensor *g, *ix;
    int64_t dim;
    const int64_t *sz;
    int nsz;
    bool keepdim;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &g)) || (st = tt_arg_int(f, 1, &dim)) ||
        (st = tt_arg_tensor(f, 2, &ix)) || (st = tt_arg_ints(f, 3, &sz, &nsz)) ||
        (st = tt_arg_bool(f, 4, &keepdim)))
        return st;
    tt_tensor *r = vsr_backward(g, dim, ix, nsz, sz, keepdim, tt_frame_is_fake(f));
    return r ? tt_return(f, 0, r) : tt_errcode();
}

/* Selections save their indices, self's sizes, the dim and keepdim (sort
 * and topk: true, their results have self's rank). */
static tt_status setup_select(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                              const tt_value *out, int nout)
{
    (void)nin, (void)nout;
    intptr_t kind = (intptr_t)tt_ctx_userdata(ctx);
    int dim_arg = kind == SEL_SORT_STABLE || kind == SEL_TOPK || kind == SEL_KTH ? 2 : 1;
    bool keepdim = kind == SEL_MAX || kind == SEL_MIN || kind == SEL_MEDIAN ? in[2].u.b
                   : kind == SEL_KTH                                        ? in[3].u.b
                                                                            : true;
    tt_status st = tt_ctx_save_for_backward(ctx, 1, &out[1].u.t);
    if (!st)
        st = tt_ctx_save_shape(ctx, "sizes", in[0].u.t);
    if (!st)
        st = tt_ctx_save_int(ctx, "dim", in[dim_arg].u.i);
    return st ? st : tt_ctx_save_int(ctx, "keepdim", keepdim);
}

static tt_status select_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                 tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    const int64_t *sz;
    int nsz;
    int64_t dim, keepdim;
    tt_status st;
    if ((st = tt_ctx_get_ints(ctx, "sizes", &sz, &nsz)) ||
        (st = tt_ctx_get_int(ctx, "dim", &dim)) || (st = tt_ctx_get_int(ctx, "keepdim", &keepdim)))
        return st;
    if (!g[0])
        return TT_OK;
    return tt__put_grad(ctx, gi, 0,
                        tt__call_op(TT_OP_VALUE_SELECTING_REDUCTION_BACKWARD,
                                    TT_ARGS(tt_v_tensor(g[0]), tt_v_int(dim),
                                            tt_v_tensor(tt_ctx_saved(ctx, 0)),
                                            tt_v_ints(nsz, sz), tt_v_bool(keepdim != 0))));
}

/* A ScalarType? argument. */
static tt_status arg_opt_dtype(tt_frame *f, int i, bool *has, tt_dtype *dt)
{
    bool none = true;
    *dt = TT_F32;
    tt_status st = tt_arg_dtype(f, i, dt, &none);
    *has = !none;
    return st;
}

/* cumsum and cumprod (data SCAN_SUM / SCAN_PROD). */
static tt_status scan_kernel(tt_frame *f)
{
    tt_tensor *x;
    int64_t dim;
    bool has;
    tt_dtype dt;
    bool prod = (intptr_t)tt_frame_userdata(f) == SCAN_PROD;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &x)) || (st = tt_arg_int(f, 1, &dim)) ||
        (st = arg_opt_dtype(f, 2, &has, &dt)))
        return st;
    tt_tensor *r = scan_impl(tt__op_label(prod ? TT_OP_CUMPROD : TT_OP_CUMSUM), x, dim, has, dt,
                             prod, tt_frame_is_fake(f));
    return r ? tt_return(f, 0, r) : tt_errcode();
}

static tt_status cumprod_backward_kernel(tt_frame *f)
{
    tt_tensor *g, *x, *y;
    int64_t dim;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &g)) || (st = tt_arg_tensor(f, 1, &x)) ||
        (st = tt_arg_int(f, 2, &dim)) || (st = tt_arg_tensor(f, 3, &y)))
        return st;
    tt_tensor *r = cumprod_backward_impl(g, x, dim, y, tt_frame_is_fake(f));
    return r ? tt_return(f, 0, r) : tt_errcode();
}

/* prod (data 0) and prod.dim_int (data 1). */
static tt_status prod_kernel(tt_frame *f)
{
    tt_tensor *x;
    int64_t dim = 0;
    bool keepdim = false, has, with_dim = (intptr_t)tt_frame_userdata(f) == 1;
    tt_dtype dt;
    tt_status st = tt_arg_tensor(f, 0, &x);
    if (!st && with_dim && !(st = tt_arg_int(f, 1, &dim)))
        st = tt_arg_bool(f, 2, &keepdim);
    if (st || (st = arg_opt_dtype(f, with_dim ? 3 : 1, &has, &dt)))
        return st;
    tt_tensor *r = prod_impl(tt__op_label(with_dim ? TT_OP_PROD_DIM_INT : TT_OP_PROD), x, with_dim,
                             dim, keepdim, has, dt, tt_frame_is_fake(f));
    return r ? tt_return(f, 0, r) : tt_errcode();
}

static tt_status prod_backward_kernel(tt_frame *f)
{
    tt_tensor *g, *x, *res;
    const int64_t *dims;
    int nd;
    bool keepdim;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &g)) || (st = tt_arg_tensor(f, 1, &x)) ||
        (st = tt_arg_tensor(f, 2, &res)) || (st = tt_arg_ints(f, 3, &dims, &nd)) ||
        (st = tt_arg_bool(f, 4, &keepdim)))
        return st;
    tt_tensor *r = prod_backward_impl(g, x, res, nd, dims, keepdim, tt_frame_is_fake(f));
    return r ? tt_return(f, 0, r) : tt_errcode();
}

static tt_status logsumexp_kernel(tt_frame *f)
{
    tt_tensor *x;
    const int64_t *dims;
    int nd;
    bool keepdim;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &x)) || (st = tt_arg_ints(f, 1, &dims, &nd)) ||
        (st = tt_arg_bool(f, 2, &keepdim)))
        return st;
    tt_tensor *r = logsumexp_impl(x, nd, dims, keepdim, tt_frame_is_fake(f));
    return r ? tt_return(f, 0, r) : tt_errcode();
}

/* The scans save self and the result (cumprod's gradient reads both), the
 * dim and self's dtype (the gradient has it). */
static tt_status setup_scan(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                            const tt_value *out, int nout)
{
    (void)nin, (void)nout;
    tt_status st = tt_ctx_save_for_backward(ctx, 2, (tt_tensor *[]){in[0].u.t, out[0].u.t});
    if (!st)
        st = tt_ctx_save_int(ctx, "dim", in[1].u.i);
    return st ? st : tt_ctx_save_int(ctx, "dtype", tt_dtype_of(in[0].u.t));
}

/* g cast to dtype (a new reference). */
static tt_tensor *grad_as(tt_tensor *g, int64_t dtype)
{
    return tt_dtype_of(g) == (tt_dtype)dtype ? tt_retain(g) : tt_to_dtype(g, (tt_dtype)dtype);
}

/* cumsum: the reversed running sum of grad, sum(g) - cumsum(g) + g (as
 * ops, so a trace records them); cumprod: tt::cumprod_backward. */
static tt_status scan_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng, tt_tensor **gi,
                               int ni)
{
    (void)ng, (void)ni;
    int64_t dim, dtype;
    tt_status st;
    if ((st = tt_ctx_get_int(ctx, "dim", &dim)) || (st = tt_ctx_get_int(ctx, "dtype", &dtype)))
        return st;
    if (!g[0])
        return TT_OK;
    tt_tensor *gg = grad_as(g[0], dtype), *r = NULL;
    if (gg && (intptr_t)tt_ctx_userdata(ctx) == SCAN_PROD) {
        r = tt__call_op(TT_OP_CUMPROD_BACKWARD,
                        TT_ARGS(tt_v_tensor(gg), tt_v_tensor(tt_ctx_saved(ctx, 0)),
                                tt_v_int(dim), tt_v_tensor(tt_ctx_saved(ctx, 1))));
    } else if (gg) {
        tt_tensor *s = tt_sum(gg, 1, &dim, true), *c = tt_cumsum(gg, (int)dim);
        tt_tensor *d = s && c ? tt_sub(s, c) : NULL;
        r = d ? tt_add(d, gg) : NULL;
        tt_release(s), tt_release(c), tt_release(d);
    }
    tt_release(gg);
    return tt__put_grad(ctx, gi, 0, r);
}

/* prod and prod.dim_int save self, the result, the dims ([] for all) and
 * keepdim. */
static tt_status setup_prod(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                            const tt_value *out, int nout)
{
    (void)nin, (void)nout;
    bool with_dim = (intptr_t)tt_ctx_userdata(ctx) == 1;
    tt_status st = tt_ctx_save_for_backward(ctx, 2, (tt_tensor *[]){in[0].u.t, out[0].u.t});
    if (!st)
        st = tt_ctx_save_ints(ctx, "dims", with_dim ? 1 : 0, &in[with_dim ? 1 : 0].u.i);
    return st ? st : tt_ctx_save_int(ctx, "keepdim", with_dim && in[2].u.b);
}

static tt_status prod_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng, tt_tensor **gi,
                               int ni)
{
    (void)ng, (void)ni;
    const int64_t *dims;
    int nd;
    int64_t keepdim;
    tt_status st;
    if ((st = tt_ctx_get_ints(ctx, "dims", &dims, &nd)) ||
        (st = tt_ctx_get_int(ctx, "keepdim", &keepdim)))
        return st;
    if (!g[0])
        return TT_OK;
    return tt__put_grad(ctx, gi, 0,
                        tt__call_op(TT_OP_PROD_BACKWARD,
                                    TT_ARGS(tt_v_tensor(g[0]), tt_v_tensor(tt_ctx_saved(ctx, 0)),
                                            tt_v_tensor(tt_ctx_saved(ctx, 1)),
                                            tt_v_ints(nd, dims), tt_v_bool(keepdim != 0))));
}

static tt_status setup_logsumexp(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                                 const tt_value *out, int nout)
{
    (void)nin, (void)nout;
    tt_status st = tt_ctx_save_for_backward(ctx, 2, (tt_tensor *[]){in[0].u.t, out[0].u.t});
    if (!st)
        st = tt_ctx_save_ints(ctx, "dims", in[1].n, in[1].u.ints);
    return st ? st : tt_ctx_save_int(ctx, "keepdim", in[2].u.b);
}

/* g * exp(self - result), g and result given back the reduced dims. */
static tt_status logsumexp_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                    tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    const int64_t *dims;
    int nd;
    int64_t keepdim;
    tt_status st;
    if ((st = tt_ctx_get_ints(ctx, "dims", &dims, &nd)) ||
        (st = tt_ctx_get_int(ctx, "keepdim", &keepdim)))
        return st;
    if (!g[0])
        return TT_OK;
    tt_tensor *x = tt_ctx_saved(ctx, 0);
    bool mask[TT_MAX_DIMS];
    if ((st = dims_mask(tt__op_label(TT_OP_LOGSUMEXP), 2, x, nd, dims, mask)))
        return st;
    tt_tensor *gk = tt_retain(g[0]), *rk = tt_retain(tt_ctx_saved(ctx, 1));
    for (int d = 0; !keepdim && d < tt_ndim(x) && gk && rk; d++) {
        if (!mask[d])
            continue;
        tt_tensor *a = tt_unsqueeze(gk, d), *b = tt_unsqueeze(rk, d);
        tt_release(gk), tt_release(rk);
        gk = a, rk = b;
    }
    tt_tensor *diff = gk && rk ? tt_sub(x, rk) : NULL;
    tt_tensor *e = diff ? tt_exp(diff) : NULL;
    tt_tensor *r = e ? tt_mul(gk, e) : NULL;
    tt_release(gk), tt_release(rk), tt_release(diff), tt_release(e);
    return tt__put_grad(ctx, gi, 0, r);
}

static tt_status logcumsumexp_kernel(tt_frame *f)
{
    tt_tensor *x;
    int64_t dim;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &x)) || (st = tt_arg_int(f, 1, &dim)))
        return st;
    tt_tensor *r = logcumsumexp_impl(x, dim, tt_frame_is_fake(f));
    return r ? tt_return(f, 0, r) : tt_errcode();
}

static tt_status logcumsumexp_backward_kernel(tt_frame *f)
{
    tt_tensor *g, *x, *y;
    int64_t dim;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &g)) || (st = tt_arg_tensor(f, 1, &x)) ||
        (st = tt_arg_tensor(f, 2, &y)) || (st = tt_arg_int(f, 3, &dim)))
        return st;
    tt_tensor *r = logcumsumexp_backward_impl(g, x, y, dim, tt_frame_is_fake(f));
    return r ? tt_return(f, 0, r) : tt_errcode();
}

static tt_status setup_lcse(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                            const tt_value *out, int nout)
{
    (void)nin, (void)nout;
    tt_status st = tt_ctx_save_for_backward(ctx, 2, (tt_tensor *[]){in[0].u.t, out[0].u.t});
    return st ? st : tt_ctx_save_int(ctx, "dim", in[1].u.i);
}

static tt_status lcse_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng, tt_tensor **gi,
                               int ni)
{
    (void)ng, (void)ni;
    int64_t dim;
    tt_status st = tt_ctx_get_int(ctx, "dim", &dim);
    if (st || !g[0])
        return st;
    return tt__put_grad(ctx, gi, 0,
                        tt__call_op(TT_OP_LOGCUMSUMEXP_BACKWARD,
                                    TT_ARGS(tt_v_tensor(g[0]), tt_v_tensor(tt_ctx_saved(ctx, 0)),
                                            tt_v_tensor(tt_ctx_saved(ctx, 1)), tt_v_int(dim))));
}

#undef TT__FAMILY_SORT_SCAN
#define TT__FAMILY_SORT_SCAN TT__ROW
static const tt__builtin_row rows[] = {TT__FAMILY_ROWS};

tt_status tt__register_sort_scan(tt_library *lib) { return TT__DEFINE_ROWS(lib, rows); }

/* ---------------------------------------------------------- typed wrappers */

/* Hands a two-result op's results to a wrapper's caller: the first as the
 * return value, the second through *second (dropped when NULL). */
static tt_tensor *two_results(tt_status st, tt_tensor **out, tt_tensor **second)
{
    if (st)
        return NULL;
    if (second)
        *second = out[1];
    else
        tt_release(out[1]);
    return out[0];
}

static tt_status call2(tt_builtin_id id, const tt_value *args, int nargs, tt_tensor **out)
{
    tt_value outs[2] = {tt_v_none(), tt_v_none()};
    tt_status st = tt_op_call(tt__op(id), args, nargs, outs, 2);
    if (!st)
        out[0] = outs[0].u.t, out[1] = outs[1].u.t;
    return st;
}

tt_tensor *tt_sort(const tt_tensor *self, int dim, bool descending, tt_tensor **indices)
{
    tt_tensor *out[2] = {NULL, NULL};
    if (indices)
        *indices = NULL;
    tt_status st;
    if (self && tt__fast_path(TT_OP_SORT, 1, &self))
        st = sort_impl(tt__op_label(TT_OP_SORT), 2, self, dim, descending, false, out);
    else
        st = call2(TT_OP_SORT, TT_ARGS(tt_v_tensor(self), tt_v_int(dim), tt_v_bool(descending)),
                   out);
    return two_results(st, out, indices);
}

tt_tensor *tt_sort_stable(const tt_tensor *self, bool stable, int dim, bool descending,
                          tt_tensor **indices)
{
    tt_tensor *out[2] = {NULL, NULL};
    if (indices)
        *indices = NULL;
    tt_status st;
    if (self && tt__fast_path(TT_OP_SORT_STABLE, 1, &self))
        st = sort_impl(tt__op_label(TT_OP_SORT_STABLE), 3, self, dim, descending, false, out);
    else
        st = call2(TT_OP_SORT_STABLE,
                   TT_ARGS(tt_v_tensor(self), tt_v_bool(stable), tt_v_int(dim),
                           tt_v_bool(descending)),
                   out);
    return two_results(st, out, indices);
}

tt_tensor *tt_argsort(const tt_tensor *self, int dim, bool descending)
{
    tt_tensor *ix = NULL, *v = tt_sort(self, dim, descending, &ix);
    tt_release(v);
    return ix;
}

tt_tensor *tt_topk(const tt_tensor *self, int64_t k, int dim, bool largest, bool sorted,
                   tt_tensor **indices)
{
    tt_tensor *out[2] = {NULL, NULL};
    if (indices)
        *indices = NULL;
    tt_status st;
    if (self && tt__fast_path(TT_OP_TOPK, 1, &self))
        st = topk_impl(tt__op_label(TT_OP_TOPK), self, k, dim, largest, false, out);
    else
        st = call2(TT_OP_TOPK,
                   TT_ARGS(tt_v_tensor(self), tt_v_int(k), tt_v_int(dim), tt_v_bool(largest),
                           tt_v_bool(sorted)),
                   out);
    return two_results(st, out, indices);
}

static tt_tensor *extremum_wrapper(tt_builtin_id id, bool is_max, const tt_tensor *self, int dim,
                                   bool keepdim, tt_tensor **indices)
{
    tt_tensor *out[2] = {NULL, NULL};
    if (indices)
        *indices = NULL;
    tt_status st;
    if (self && tt__fast_path(id, 1, &self))
        st = extremum_impl(tt__op_label(id), self, true, dim, keepdim, is_max, true, false, out);
    else
        st = call2(id, TT_ARGS(tt_v_tensor(self), tt_v_int(dim), tt_v_bool(keepdim)), out);
    return two_results(st, out, indices);
}

tt_tensor *tt_max_dim(const tt_tensor *self, int dim, bool keepdim, tt_tensor **indices)
{
    return extremum_wrapper(TT_OP_MAX_DIM, true, self, dim, keepdim, indices);
}

tt_tensor *tt_min_dim(const tt_tensor *self, int dim, bool keepdim, tt_tensor **indices)
{
    return extremum_wrapper(TT_OP_MIN_DIM, false, self, dim, keepdim, indices);
}

tt_tensor *tt_argmin(const tt_tensor *self, int dim, bool keepdim)
{
    tt_tensor *out[2] = {NULL, NULL};
    if (self && tt__fast_path(TT_OP_ARGMIN, 1, &self)) {
        if (extremum_impl(tt__op_label(TT_OP_ARGMIN), self, true, dim, keepdim, false, false,
                          false, out))
            return NULL;
        return out[1];
    }
    return tt__call_op(TT_OP_ARGMIN, TT_ARGS(tt_v_tensor(self), tt_v_int(dim), tt_v_bool(keepdim)));
}

static tt_tensor *scan_wrapper(bool prod, const tt_tensor *self, int dim, bool has, tt_dtype dt)
{
    tt_builtin_id id = prod ? TT_OP_CUMPROD : TT_OP_CUMSUM;
    if (self && tt__fast_path(id, 1, &self))
        return scan_impl(tt__op_label(id), self, dim, has, dt, prod, false);
    return tt__call_op(id, TT_ARGS(tt_v_tensor(self), tt_v_int(dim),
                                   has ? tt_v_dtype(dt) : tt_v_none()));
}

tt_tensor *tt_cumsum(const tt_tensor *self, int dim)
{
    return scan_wrapper(false, self, dim, false, TT_F32);
}

tt_tensor *tt_cumsum_dtype(const tt_tensor *self, int dim, tt_dtype dtype)
{
    return scan_wrapper(false, self, dim, true, dtype);
}

tt_tensor *tt_cumprod(const tt_tensor *self, int dim)
{
    return scan_wrapper(true, self, dim, false, TT_F32);
}

tt_tensor *tt_logsumexp(const tt_tensor *self, int ndims, const int64_t *dims, bool keepdim)
{
    if (self && tt__fast_path(TT_OP_LOGSUMEXP, 1, &self))
        return logsumexp_impl(self, ndims, dims, keepdim, false);
    return tt__call_op(TT_OP_LOGSUMEXP,
                       TT_ARGS(tt_v_tensor(self), tt_v_ints(ndims, dims), tt_v_bool(keepdim)));
}

tt_tensor *tt_prod(const tt_tensor *self)
{
    if (self && tt__fast_path(TT_OP_PROD, 1, &self))
        return prod_impl(tt__op_label(TT_OP_PROD), self, false, 0, false, false, TT_F32, false);
    return tt__call_op(TT_OP_PROD, TT_ARGS(tt_v_tensor(self), tt_v_none()));
}

tt_tensor *tt_prod_dim(const tt_tensor *self, int dim, bool keepdim)
{
    if (self && tt__fast_path(TT_OP_PROD_DIM_INT, 1, &self))
        return prod_impl(tt__op_label(TT_OP_PROD_DIM_INT), self, true, dim, keepdim, false,
                         TT_F32, false);
    return tt__call_op(TT_OP_PROD_DIM_INT, TT_ARGS(tt_v_tensor(self), tt_v_int(dim),
                                                   tt_v_bool(keepdim), tt_v_none()));
}

tt_tensor *tt_kthvalue(const tt_tensor *self, int64_t k, int dim, bool keepdim,
                       tt_tensor **indices)
{
    tt_tensor *out[2] = {NULL, NULL};
    if (indices)
        *indices = NULL;
    tt_status st;
    if (self && tt__fast_path(TT_OP_KTHVALUE, 1, &self))
        st = kth_impl(tt__op_label(TT_OP_KTHVALUE), self, false, k, true, dim, keepdim, false,
                      out);
    else
        st = call2(TT_OP_KTHVALUE,
                   TT_ARGS(tt_v_tensor(self), tt_v_int(k), tt_v_int(dim), tt_v_bool(keepdim)),
                   out);
    return two_results(st, out, indices);
}

tt_tensor *tt_median_dim(const tt_tensor *self, int dim, bool keepdim, tt_tensor **indices)
{
    tt_tensor *out[2] = {NULL, NULL};
    if (indices)
        *indices = NULL;
    tt_status st;
    if (self && tt__fast_path(TT_OP_MEDIAN_DIM, 1, &self))
        st = kth_impl(tt__op_label(TT_OP_MEDIAN_DIM), self, true, 0, true, dim, keepdim, false,
                      out);
    else
        st = call2(TT_OP_MEDIAN_DIM, TT_ARGS(tt_v_tensor(self), tt_v_int(dim), tt_v_bool(keepdim)),
                   out);
    return two_results(st, out, indices);
}

tt_tensor *tt_median(const tt_tensor *self)
{
    tt_tensor *out[2] = {NULL, NULL};
    if (self && tt__fast_path(TT_OP_MEDIAN, 1, &self)) {
        if (kth_impl(tt__op_label(TT_OP_MEDIAN), self, true, 0, false, 0, false, false, out))
            return NULL;
        return out[0];
    }
    return tt__call_op(TT_OP_MEDIAN, TT_ARGS(tt_v_tensor(self)));
}

tt_tensor *tt_logcumsumexp(const tt_tensor *self, int dim)
{
    if (self && tt__fast_path(TT_OP_LOGCUMSUMEXP, 1, &self))
        return logcumsumexp_impl(self, dim, false);
    return tt__call_op(TT_OP_LOGCUMSUMEXP, TT_ARGS(tt_v_tensor(self), tt_v_int(dim)));
}
