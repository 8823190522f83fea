/* Built-in ops: causal (or full) scaled-dot-product attention and its
 * derivative, scaled_dot_product_attention_backward, with the heads'
 * products through BLAS (transformer_impl.h says how these kernels are
 * built); rotary position embedding and its derivative. */
#include "transformer_impl.h"
#include "vec_math.h"

#include <cblas.h>

/* The geometry of an attention call: `nb` independent heads (the leading
 * dims), queries [T, D], keys [S, D], values [S, Dv] per head. Inputs may
 * have any strides (a head's q, k, v are usually views of one projection);
 * the last dim is made unit-stride. */
typedef struct {
    const char *q, *k, *v, *o, *go;
    char *out, *dq, *dk, *dv;
    int nlead;
    int64_t lead[TT_MAX_DIMS];
    int64_t qs[TT_MAX_DIMS], ks[TT_MAX_DIMS], vs[TT_MAX_DIMS], os[TT_MAX_DIMS],
        gs[TT_MAX_DIMS]; /* element strides of every dim */
    int64_t nb, T, S, D, Dv;
    int64_t group; /* query heads per key/value head (grouped-query attention) */
    double scale;
    bool causal;
    /* attn_mask (NULL: none), bool (false hides a key) or of q's dtype (added
     * to the scaled scores), read through ms: its element strides
     * broadcast to [lead..., T, S] (0 on broadcast dims). */
    const char *mask;
    bool mask_bool;
    int64_t ms[TT_MAX_DIMS];
    /* sliding window (with causal): query i sees keys (i - window, i]; 0
     * for none */
    int64_t window;
} attn_plan;

/* Grouped-query attention (PyTorch 2.5's enable_gqa): key and value have
 * H / group heads (dim -3) where query has H; query head h reads key and
 * value head h / group, as PyTorch's repeat_interleave of the key and
 * value heads. The offset of query head h's key or value head. */
static int64_t head_off_kv(const attn_plan *p, const int64_t *st, int64_t h)
{
    int64_t off = 0;
    for (int d = p->nlead - 1; d >= 0; d--) {
        int64_t n = p->lead[d];
        off += (d == p->nlead - 1 ? (h % n) / p->group : h % n) * st[d];
        h /= n;
    }
    return off;
}

/* Element offset of head `h` in a tensor with strides st. */
static int64_t head_off(const attn_plan *p, const int64_t *st, int64_t h)
{
    int64_t off = 0;
    if (st == p->ks || st == p->vs) /* key and value: query head h's group */
        return head_off_kv(p, st, h);
    for (int d = p->nlead - 1; d >= 0; d--) {
        off += (h % p->lead[d]) * st[d];
        h /= p->lead[d];
    }
    return off;
}

/* The visible keys of query row i. */
static int64_t attn_len(const attn_plan *p, int64_t i)
{
    return p->causal ? (i + 1 < p->S ? i + 1 : p->S) : p->S;
}

/* exp over a row in place with the vector kernels; false when there are
 * none (f64 has none). */
static bool vexp_float(float *r, int64_t n) { return tt__vec_f32(TT_VEC_EXP, r, r, n); }
static bool vexp_double(double *r, int64_t n)
{
    (void)r, (void)n;
    return false;
}

/* The heads' products go through BLAS, a block of ATTN_ROWS query rows at
 * a time: the block's scores Q K^T, turned into probabilities in place,
 * then P V. A causal block needs the keys up to its last row only, so the
 * products shrink to about (1 + 1/blocks) / 2 of the full block's. The
 * backward recomputes the probabilities block by block (they are not kept
 * between forward and backward), runs dP = dO V^T, dS and dQ per row block,
 * then dV and dK per block of key rows, each over the query rows that can
 * see those keys.
 *
 * Threads: heads run in parallel over our threads, each head on one
 * thread, when every product of a head is small enough that OpenBLAS runs
 * it on the calling thread (see linalg.c: then OpenBLAS's pool and ours
 * never run at once); larger heads run one after the other with each
 * product threaded by OpenBLAS. The blocks are the same either way, so
 * the results do not depend on the thread count. */
#define ATTN_ROWS 32

/* Forward blocks of at most this many query rows run as loops (see
 * small_rows): a decode step's one query row per head took 15 us a layer
 * through two sgemm calls per head, ~2 us as loops. */
#define ATTN_SMALL_ROWS 4

/* Heads run in parallel only past this many multiply-adds in all: below
 * it, handing half the heads to a worker costs more than they take. */
#define ATTN_PARALLEL_MIN_MACS 65536.0

/* The visible keys of the row block ending before row r1 (all the keys of
 * a full mask). */
static int64_t attn_keys(const attn_plan *p, int64_t r1)
{
    return p->causal ? (r1 < p->S ? r1 : p->S) : p->S;
}

/* The first query row that sees key j0 (0 for a full mask). */
static int64_t attn_first_row(const attn_plan *p, int64_t j0)
{
    return p->causal ? (j0 < p->T ? j0 : p->T) : 0;
}

/* True when the heads can run in parallel: more than one thread and one
 * head, enough work to pay for the hand-off, and every product of a block
 * small enough to stay on the calling thread in OpenBLAS. */
static bool attn_parallel(const attn_plan *p)
{
    int64_t rows = p->T > p->S ? p->T : p->S, cols = p->D > p->Dv ? p->D : p->Dv;
    double macs = (double)p->nb * (double)p->T * (double)p->S * (double)(p->D + p->Dv);
    return tt_get_num_threads() > 1 && p->nb > 1 && macs >= ATTN_PARALLEL_MIN_MACS &&
           (double)ATTN_ROWS * (double)rows * (double)cols <= TT_BLAS_SINGLE_THREAD_MNK;
}

#define ATTN_GEMM(T_, GEMM, VEXP, EXP)                                         \
    static void gemm_##T_(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, \
                          const T_ *a, int64_t lda, const T_ *b, int64_t ldb, T_ *c,  \
                          int64_t ldc)                                         \
    {                                                                          \
        if (m == 0 || n == 0)                                                  \
            return;                                                            \
        if (k == 0) { /* BLAS leaves C alone when k is 0; the product is 0 */  \
            for (int64_t i = 0; i < m; i++)                                    \
                memset(c + i * ldc, 0, sizeof(T_) * (size_t)n);                \
            return;                                                            \
        }                                                                      \
        GEMM(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, \
             (blasint)m, (blasint)n, (blasint)k, (T_)alpha, a, (blasint)lda, b,  \
             (blasint)ldb, 0, c, (blasint)ldc);                                \
    }                                                                          \
    /* Rows [r0, r1) of scores (row r0 at s, rows S apart) into            \
     * probabilities over their visible keys; the hidden ones, up to column \
     * `width`, become 0. */                                                 \
    CPU_CLONES static void softmax_rows_##T_(const attn_plan *p, int64_t h, T_ *s, \
                                             int64_t r0, int64_t r1, int64_t width) \
    {                                                                          \
        int nl = p->nlead;                                                     \
        const char *mh = p->mask ? p->mask + head_off(p, p->ms, h) *          \
                                   (p->mask_bool ? 1 : (int64_t)sizeof(T_)) : NULL; \
        for (int64_t i = r0; i < r1; i++) {                                    \
            T_ *r = s + (i - r0) * p->S;                                       \
            int64_t len = attn_len(p, i);                                      \
            int64_t lo = p->window && i - p->window + 1 > 0 ? i - p->window + 1 : 0; \
            for (int64_t j = 0; j < lo && j < len; j++)                        \
                r[j] = -INFINITY;                                              \
            if (mh && p->mask_bool) {                                          \
                const bool *mr = (const bool *)mh + i * p->ms[nl];             \
                for (int64_t j = 0; j < len; j++)                              \
                    r[j] = mr[j * p->ms[nl + 1]] ? r[j] : -INFINITY;           \
            } else if (mh) {                                                   \
                const T_ *mr = (const T_ *)mh + i * p->ms[nl];                 \
                for (int64_t j = 0; j < len; j++)                              \
                    r[j] += mr[j * p->ms[nl + 1]];                             \
            }                                                                  \
            T_ m = row_max_##T_(r, len);                                       \
            for (int64_t j = 0; j < len; j++)                                  \
                r[j] -= m;                                                     \
            if (!VEXP(r, len))                                                 \
                for (int64_t j = 0; j < len; j++)                              \
                    r[j] = EXP(r[j]);                                          \
            /* len == 0 only with no keys at all: nothing to scale */         \
            T_ inv = (T_)(1.0 / row_dot_##T_(r, NULL, len));                   \
            for (int64_t j = 0; j < len; j++)                                  \
                r[j] *= inv;                                                   \
            for (int64_t j = len; j < width; j++)                              \
                r[j] = 0;                                                      \
        }                                                                      \
    }                                                                          \
    /* 64 bytes of T_ as one vector (GCC's vector extension: the same code \
     * for every CPU_CLONES target), loaded from any T_-aligned address,   \
     * and its halves and quarters for the sum across lanes */             \
    typedef T_ v64_##T_ __attribute__((vector_size(64), aligned(sizeof(T_)), may_alias)); \
    typedef T_ v32_##T_ __attribute__((vector_size(32)));                  \
    typedef T_ v16_##T_ __attribute__((vector_size(16)));                  \
    /* (by address: a 64-byte vector argument would change the ABI of a   \
     * build without AVX-512) */                                          \
    static inline T_ lanes_sum_##T_(const v64_##T_ *a)                     \
    {                                                                      \
        v32_##T_ h[2];                                                     \
        memcpy(h, a, sizeof *a);                                           \
        v32_##T_ x = h[0] + h[1];                                          \
        v16_##T_ q[2];                                                     \
        memcpy(q, &x, sizeof x);                                           \
        v16_##T_ y = q[0] + q[1];                                          \
        T_ t = 0;                                                          \
        for (size_t e = 0; e < sizeof y / sizeof(T_); e++)                 \
            t += y[e];                                                     \
        return t;                                                          \
    }                                                                      \
    /* a . b over n */                                                     \
    static inline T_ dot_lanes_##T_(const T_ *a, const T_ *b, int64_t n)   \
    {                                                                      \
        enum { L = 64 / sizeof(T_) };                                      \
        v64_##T_ acc = {0};                                                \
        int64_t d = 0;                                                     \
        for (; d + L <= n; d += L)                                         \
            acc += *(const v64_##T_ *)(a + d) * *(const v64_##T_ *)(b + d); \
        T_ tail = 0;                                                       \
        for (; d < n; d++)                                                 \
            tail += a[d] * b[d];                                           \
        return lanes_sum_##T_(&acc) + tail;                                \
    }                                                                      \
    /* The products of a block of a few query rows (a decode step's one)   \
     * as loops: through BLAS, each is a call whose setup costs more than  \
     * its few thousand multiply-adds. Accumulates in T_, as BLAS does.    \
     * The output row is made 64 bytes at a time, each a sum over the keys \
     * kept in a register. */                                             \
    CPU_CLONES static void small_rows_##T_(const attn_plan *p, int64_t h, const T_ *q, \
                                           const T_ *k, const T_ *v, T_ *o, T_ *s, \
                                           int64_t r0, int64_t r1, int64_t n)    \
    {                                                                      \
        enum { L = 64 / sizeof(T_) };                                      \
        int nl = p->nlead;                                                 \
        int64_t ldq = p->qs[nl], ldk = p->ks[nl], ldv = p->vs[nl], ldo = p->os[nl]; \
        for (int64_t i = r0; i < r1; i++)                                  \
            for (int64_t j = 0; j < n; j++) {                              \
                /* the value rows come in while the keys are read */      \
                for (int64_t b = 0; i == r0 && b < p->Dv * (int64_t)sizeof(T_); b += 64) \
                    __builtin_prefetch((const char *)(v + j * ldv) + b);   \
                s[(i - r0) * p->S + j] =                                   \
                    (T_)p->scale * dot_lanes_##T_(q + i * ldq, k + j * ldk, p->D); \
            }                                                              \
        softmax_rows_##T_(p, h, s, r0, r1, n);                             \
        for (int64_t i = r0; i < r1; i++) {                                \
            const T_ *pr = s + (i - r0) * p->S;                            \
            T_ *orow = o + i * ldo;                                        \
            int64_t d0 = 0;                                                \
            for (; d0 + L <= p->Dv; d0 += L) {                             \
                v64_##T_ acc = {0};                                        \
                for (int64_t j = 0; j < n; j++)                            \
                    acc += pr[j] * *(const v64_##T_ *)(v + j * ldv + d0);  \
                *(v64_##T_ *)(orow + d0) = acc;                            \
            }                                                              \
            for (; d0 < p->Dv; d0++) {                                     \
                T_ acc = 0;                                                \
                for (int64_t j = 0; j < n; j++)                            \
                    acc += pr[j] * v[j * ldv + d0];                        \
                orow[d0] = acc;                                            \
            }                                                              \
        }                                                                  \
    }                                                                      \
    /* Head h's output; s holds ATTN_ROWS rows of S scores. */                 \
    static void attn_fwd_head_##T_(const attn_plan *p, int64_t h, T_ *s)       \
    {                                                                          \
        int nl = p->nlead;                                                     \
        const T_ *q = (const T_ *)p->q + head_off(p, p->qs, h);                \
        const T_ *k = (const T_ *)p->k + head_off(p, p->ks, h);                \
        const T_ *v = (const T_ *)p->v + head_off(p, p->vs, h);                \
        T_ *o = (T_ *)p->out + head_off(p, p->os, h);                          \
        for (int64_t r0 = 0; r0 < p->T; r0 += ATTN_ROWS) {                     \
            int64_t r1 = r0 + ATTN_ROWS < p->T ? r0 + ATTN_ROWS : p->T;        \
            int64_t n = attn_keys(p, r1);                                      \
            if (r1 - r0 <= ATTN_SMALL_ROWS) {                                  \
                small_rows_##T_(p, h, q, k, v, o, s, r0, r1, n);               \
                continue;                                                      \
            }                                                                  \
            gemm_##T_(false, true, r1 - r0, n, p->D, p->scale, q + r0 * p->qs[nl], \
                      p->qs[nl], k, p->ks[nl], s, p->S);                       \
            softmax_rows_##T_(p, h, s, r0, r1, n);                               \
            gemm_##T_(false, false, r1 - r0, p->Dv, n, 1, s, p->S, v, p->vs[nl], \
                      o + r0 * p->os[nl], p->os[nl]);                          \
        }                                                                      \
    }                                                                          \
    /* Head h's gradients: dP = dO V^T, dV = P^T dO, dS = P (dP - rowsum(P dP)), \
     * dQ = scale dS K, dK = scale dS^T Q. s and ds are (T, S) each. */      \
    CPU_CLONES static void attn_bwd_head_##T_(const attn_plan *p, int64_t h, T_ *s, \
                                              T_ *ds)                          \
    {                                                                          \
        int nl = p->nlead;                                                     \
        const T_ *q = (const T_ *)p->q + head_off(p, p->qs, h);                \
        const T_ *k = (const T_ *)p->k + head_off(p, p->ks, h);                \
        const T_ *v = (const T_ *)p->v + head_off(p, p->vs, h);                \
        const T_ *go = (const T_ *)p->go + head_off(p, p->gs, h);              \
        T_ *dq = (T_ *)p->dq + h * p->T * p->D;                                \
        T_ *dk = (T_ *)p->dk + h * p->S * p->D;                                \
        T_ *dv = (T_ *)p->dv + h * p->S * p->Dv;                               \
        int64_t ldq = p->qs[nl], ldk = p->ks[nl], ldv = p->vs[nl], ldg = p->gs[nl]; \
        for (int64_t r0 = 0; r0 < p->T; r0 += ATTN_ROWS) {                     \
            int64_t r1 = r0 + ATTN_ROWS < p->T ? r0 + ATTN_ROWS : p->T;        \
            int64_t n = attn_keys(p, r1);                                      \
            T_ *sr = s + r0 * p->S, *dr0 = ds + r0 * p->S;                     \
            gemm_##T_(false, true, r1 - r0, n, p->D, p->scale, q + r0 * ldq, ldq, k, ldk, \
                      sr, p->S);                                               \
            /* whole rows: the key blocks below read above the diagonal */   \
            softmax_rows_##T_(p, h, sr, r0, r1, p->S);                         \
            gemm_##T_(false, true, r1 - r0, n, p->Dv, 1, go + r0 * ldg, ldg, v, ldv, \
                      dr0, p->S);                                              \
            for (int64_t i = r0; i < r1; i++) {                                \
                T_ *pr = s + i * p->S, *dr = ds + i * p->S;                    \
                int64_t len = attn_len(p, i);                                  \
                double d = row_dot_##T_(pr, dr, len);                          \
                for (int64_t j = 0; j < len; j++)                              \
                    dr[j] = pr[j] * (dr[j] - (T_)d);                           \
                for (int64_t j = len; j < p->S; j++)                           \
                    dr[j] = 0;                                                 \
            }                                                                  \
            gemm_##T_(false, false, r1 - r0, p->D, n, p->scale, dr0, p->S, k, ldk, \
                      dq + r0 * p->D, p->D);                                   \
        }                                                                      \
        for (int64_t j0 = 0; j0 < p->S; j0 += ATTN_ROWS) {                     \
            int64_t j1 = j0 + ATTN_ROWS < p->S ? j0 + ATTN_ROWS : p->S;        \
            int64_t i0 = attn_first_row(p, j0), m = p->T - i0;                 \
            gemm_##T_(true, false, j1 - j0, p->Dv, m, 1, s + i0 * p->S + j0, p->S, \
                      go + i0 * ldg, ldg, dv + j0 * p->Dv, p->Dv);             \
            gemm_##T_(true, false, j1 - j0, p->D, m, p->scale, ds + i0 * p->S + j0, p->S, \
                      q + i0 * ldq, ldq, dk + j0 * p->D, p->D);                \
        }                                                                      \
    }
ATTN_GEMM(float, cblas_sgemm, vexp_float, expf)
ATTN_GEMM(double, cblas_dgemm, vexp_double, exp)

/* The heads [h0, h1) of one task, forward or backward, with the task's own
 * scratch blocks. */
typedef struct {
    const attn_plan *p;
    char *scratch;
    size_t per_task; /* bytes of scratch per task */
    int64_t ntasks;
    bool f64, backward;
} attn_run;

static void attn_task(int64_t t0, int64_t t1, void *vr)
{
    const attn_run *r = vr;
    const attn_plan *p = r->p;
    size_t es = r->f64 ? sizeof(double) : sizeof(float);
    for (int64_t t = t0; t < t1; t++) {
        char *s = r->scratch + (size_t)t * r->per_task;
        char *ds = s + es * (size_t)(p->T * p->S);
        for (int64_t h = t * p->nb / r->ntasks; h < (t + 1) * p->nb / r->ntasks; h++) {
            if (r->backward && r->f64)
                attn_bwd_head_double(p, h, (double *)s, (double *)ds);
            else if (r->backward)
                attn_bwd_head_float(p, h, (float *)s, (float *)ds);
            else if (r->f64)
                attn_fwd_head_double(p, h, (double *)s);
            else
                attn_fwd_head_float(p, h, (float *)s);
        }
    }
}

/* Runs every head of p: forward (one block of ATTN_ROWS rows of scores per
 * task) or backward (two (T, S) blocks per task). */
static tt_status attn_run_heads(const char *op, const attn_plan *p, bool f64, bool backward)
{
    attn_run r = {.p = p, .f64 = f64, .backward = backward};
    bool par = attn_parallel(p);
    r.ntasks = par ? (tt_get_num_threads() < p->nb ? tt_get_num_threads() : p->nb) : 1;
    int64_t rows = backward ? 2 * p->T : (p->T < ATTN_ROWS ? p->T : ATTN_ROWS);
    r.per_task = (f64 ? sizeof(double) : sizeof(float)) *
                 (size_t)(rows * p->S > 0 ? rows * p->S : 1);
    r.scratch = tt__malloc(r.per_task * (size_t)r.ntasks);
    if (!r.scratch)
        return tt_error(TT_ENOMEM, "%s: out of memory for %lld blocks of [%lld, %lld] scores", op,
                        (long long)(r.ntasks * (backward ? 2 : 1)),
                        (long long)(backward ? p->T : rows), (long long)p->S);
    if (par)
        tt_parallel_for(r.ntasks, 1, attn_task, &r);
    else
        attn_task(0, 1, &r);
    tt__free(r.scratch);
    return TT_OK;
}

/* Checks q [..., T, D], k [..., S, D], v [..., S, Dv] and fills the
 * geometry (sizes only; pointers and strides for real calls). */
static tt_status attn_check(const char *op, const tt_tensor *q, const tt_tensor *k,
                            const tt_tensor *v, bool gqa, attn_plan *p)
{
    tt_status st;
    char s1[128], s2[128];
    const tt_tensor *ts[3] = {q, k, v};
    const char *names[3] = {"query", "key", "value"};
    for (int i = 0; i < 3; i++) {
        if ((st = want_float(op, names[i], i + 1, ts[i])) ||
            (i && (st = want_same_dtype(op, names[i], i + 1, ts[i], q))))
            return st;
        if (tt_ndim(ts[i]) < 2 || tt_ndim(ts[i]) != tt_ndim(q))
            return tt_error(TT_ESHAPE, "%s: argument '%s' (#%d): expected [..., L, E] with the "
                                       "rank of query %s, got %s", op, names[i], i + 1,
                            tt_shape_str(q, s1, sizeof s1), tt_shape_str(ts[i], s2, sizeof s2));
    }
    int nd = tt_ndim(q);
    p->nlead = nd - 2;
    p->group = 1;
    if (gqa && nd >= 3) {
        /* the heads (dim -3) of key and value divide query's */
        tt_size hq = tt_sizes(q)[nd - 3], hk = tt_sizes(k)[nd - 3];
        if (!tt_size_eq(tt_sizes(v)[nd - 3], hk))
            return tt_error(TT_ESHAPE, "%s: argument 'value' (#3): expected as many heads "
                                       "(dim -3) as key %s, got %s", op,
                            tt_shape_str(k, s1, sizeof s1), tt_shape_str(v, s2, sizeof s2));
        if (!tt_size_eq(hk, hq)) {
            /* symbolic heads (a symbolic trace's sizes): divisibility is a
             * guard, the group the hints' (the kernels see real sizes) */
            bool sym = tt_size_is_sym(hq) || tt_size_is_sym(hk);
            int64_t hqv = sym ? tt_sym_hint(hq) : hq, hkv = sym ? tt_sym_hint(hk) : hk;
            if (hkv <= 0 || hqv < 0 || (sym ? !tt_size_eq(tt_sym_mod(hq, hk), 0) : hq % hk))
                return tt_error(TT_ESHAPE, "%s: argument 'key' (#2): with enable_gqa the "
                                           "number of key/value heads (dim -3) must divide "
                                           "query's, got key %s and query %s", op,
                                tt_shape_str(k, s2, sizeof s2), tt_shape_str(q, s1, sizeof s1));
            p->group = hqv / hkv;
        }
    }
    for (int d = 0; d < nd - 2; d++)
        for (int i = 1; i < 3; i++)
            if (!(p->group > 1 && d == nd - 3) &&
                !tt_size_eq(tt_sizes(ts[i])[d], tt_sizes(q)[d]))
                return tt_error(TT_ESHAPE, "%s: argument '%s' (#%d): leading sizes of %s do "
                                           "not match query %s", op, names[i], i + 1,
                                tt_shape_str(ts[i], s2, sizeof s2), tt_shape_str(q, s1, sizeof s1));
    if (!tt_size_eq(tt_sizes(k)[nd - 1], tt_sizes(q)[nd - 1]))
        return tt_error(TT_ESHAPE, "%s: argument 'key' (#2): last size of %s does not match "
                                   "query %s", op, tt_shape_str(k, s2, sizeof s2),
                        tt_shape_str(q, s1, sizeof s1));
    if (!tt_size_eq(tt_sizes(v)[nd - 2], tt_sizes(k)[nd - 2]))
        return tt_error(TT_ESHAPE, "%s: argument 'value' (#3): %s has not as many rows as "
                                   "key %s", op, tt_shape_str(v, s2, sizeof s2),
                        tt_shape_str(k, s1, sizeof s1));
    return TT_OK;
}

/* A view of t whose last dim has unit stride and whose rows do not
 * overlap (BLAS reads them as a matrix): t itself (retained) or a
 * contiguous copy. */
static tt_tensor *unit_last(const tt_tensor *t)
{
    int nd = tt_ndim(t);
    const tt_size *sz = tt_sizes(t), *st = tt_strides(t);
    bool unit = sz[nd - 1] <= 1 || st[nd - 1] == 1;
    bool rows = sz[nd - 2] <= 1 || st[nd - 2] >= (sz[nd - 1] > 1 ? sz[nd - 1] : 1);
    return unit && rows ? tt_retain((tt_tensor *)t) : tt_contiguous(t);
}

/* The BLAS leading dimension of t's (rows, cols) matrices: the row
 * stride, which BLAS wants at least cols even when there is one row. */
static int64_t lead_dim(const tt_tensor *t)
{
    int nd = tt_ndim(t);
    int64_t cols = tt_sizes(t)[nd - 1] > 1 ? tt_sizes(t)[nd - 1] : 1;
    return tt_sizes(t)[nd - 2] <= 1 || tt_strides(t)[nd - 2] < cols ? cols : tt_strides(t)[nd - 2];
}

/* Fills p's numbers and strides for real (concrete) tensors, whose last
 * dims have unit stride. */
static void attn_geometry(attn_plan *p, const tt_tensor *q, const tt_tensor *k,
                          const tt_tensor *v, double scale, bool causal)
{
    int nd = tt_ndim(q);
    p->nb = 1;
    for (int d = 0; d < nd - 2; d++)
        p->nb *= (p->lead[d] = tt_sizes(q)[d]);
    p->T = tt_sizes(q)[nd - 2], p->D = tt_sizes(q)[nd - 1];
    p->S = tt_sizes(k)[nd - 2], p->Dv = tt_sizes(v)[nd - 1];
    for (int d = 0; d < nd; d++)
        p->qs[d] = tt_strides(q)[d], p->ks[d] = tt_strides(k)[d], p->vs[d] = tt_strides(v)[d];
    p->qs[nd - 2] = lead_dim(q), p->ks[nd - 2] = lead_dim(k), p->vs[nd - 2] = lead_dim(v);
    p->q = tt__ptr(q), p->k = tt__ptr(k), p->v = tt__ptr(v);
    p->scale = scale > 0 ? scale : 1.0 / sqrt((double)(p->D ? p->D : 1));
    p->causal = causal;
}

/* The output's strides: for [B, H, T, Dv] the memory is [B, T, H, Dv], as
 * PyTorch's flash attention lays it out, so that out.transpose(1, 2)
 * (merging heads back into channels) is contiguous; other ranks are
 * contiguous. */
static void attn_out_strides(int nd, const tt_size *sz, tt_size *st)
{
    if (nd == 4) {
        st[3] = 1;
        st[1] = sz[3];
        st[2] = tt_sym_mul(sz[1], sz[3]);
        st[0] = tt_sym_mul(sz[2], st[2]);
        return;
    }
    st[nd - 1] = 1;
    for (int d = nd - 2; d >= 0; d--)
        st[d] = tt_sym_mul(st[d + 1], sz[d + 1]);
}

/* The arguments of both ops: forward (first 0) query, key, value,
 * attn_mask, dropout_p, is_causal, scale, enable_gqa, window; backward
 * (first 1, after grad_out) query, key, value, is_causal, scale,
 * enable_gqa, attn_mask, window. */
static tt_status sdpa_args(tt_frame *f, tt_tensor **q, tt_tensor **k, tt_tensor **v,
                           bool *causal, double *scale, bool *gqa, tt_tensor **mask,
                           int64_t *window, int first)
{
    tt_status st;
    double dropout;
    const char *op = tt__op_label(first ? TT_OP_SCALED_DOT_PRODUCT_ATTENTION_BACKWARD
                                        : TT_OP_SCALED_DOT_PRODUCT_ATTENTION);
    if ((st = tt_arg_tensor(f, first, q)) || (st = tt_arg_tensor(f, first + 1, k)) ||
        (st = tt_arg_tensor(f, first + 2, v)))
        return st;
    int ci = first == 0 ? 5 : first + 3, mi = first == 0 ? 3 : ci + 3;
    int wi = first == 0 ? ci + 3 : ci + 4;
    *mask = NULL;
    if (tt_frame_nargs(f) > mi && (st = tt_arg_tensor(f, mi, mask)))
        return st;
    if (first == 0) {
        if ((st = tt_arg_float(f, 4, &dropout)))
            return st;
        if (dropout != 0)
            return tt_error(TT_EINVAL, "%s: argument 'dropout_p' (#5): only 0.0 is supported, "
                                       "got %g", op, dropout);
    }
    if ((st = tt_arg_bool(f, ci, causal)))
        return st;
    *scale = 0;
    *gqa = false;
    *window = 0;
    if (tt_frame_nargs(f) > ci + 2 && (st = tt_arg_bool(f, ci + 2, gqa)))
        return st;
    if (tt_frame_nargs(f) > wi && (st = tt_arg_int(f, wi, window)))
        return st;
    /* PyTorch refuses a mask with is_causal too; the window is a causal
     * band (tt's own argument: PyTorch has none). */
    if (*mask && *causal)
        return tt_error(TT_EINVAL, "%s: argument 'attn_mask' (#%d): an explicit mask cannot "
                                   "be given with is_causal=True", op, mi + 1);
    if (*window < 0 || (*window && !*causal))
        return tt_error(TT_EINVAL, "%s: argument 'window' (#%d): expected 0 (none) or a "
                                   "positive size with is_causal=True, got %lld%s", op, wi + 1,
                        (long long)*window, *window > 0 ? " without is_causal" : "");
    return tt_arg_is_none(f, ci + 1) ? TT_OK : tt_arg_float(f, ci + 1, scale);
}

/* Checks attn_mask (argument argno) against query [lead..., T, D] and key
 * [..., S, D]: bool or query's dtype, broadcastable to [lead..., T, S] as
 * PyTorch's; for a real call fills p's mask strides. */
static tt_status attn_mask_check(const char *op, int argno, const tt_tensor *mask,
                                 const tt_tensor *q, const tt_tensor *k, attn_plan *p, bool real)
{
    char s1[128], s2[128];
    tt_dtype md = tt_dtype_of(mask);
    if (md != TT_BOOL && md != tt_dtype_of(q))
        return tt_error(TT_EDTYPE, "%s: argument 'attn_mask' (#%d): expected bool or %s like "
                                   "query, got %s", op, argno, tt_dtype_name(tt_dtype_of(q)),
                        tt_dtype_name(md));
    int nd = tt_ndim(q), mnd = tt_ndim(mask);
    tt_size want[TT_MAX_DIMS];
    memcpy(want, tt_sizes(q), sizeof(tt_size) * (size_t)nd);
    want[nd - 1] = tt_sizes(k)[nd - 2];
    bool ok = mnd <= nd;
    for (int d = 0; ok && d < mnd; d++) {
        tt_size ms = tt_sizes(mask)[d], ws = want[nd - mnd + d];
        ok = tt_size_eq(ms, ws) || (!tt_size_is_sym(ms) && ms == 1);
    }
    if (!ok)
        return tt_error(TT_ESHAPE, "%s: argument 'attn_mask' (#%d): %s does not broadcast to "
                                   "the scores' shape %s", op, argno,
                        tt_shape_str(mask, s1, sizeof s1),
                        tt_size_list_str(nd, want, false, s2, sizeof s2));
    if (!real)
        return TT_OK;
    for (int d = 0; d < nd; d++) {
        int m = d - (nd - mnd);
        p->ms[d] = m < 0 || tt_sizes(mask)[m] == 1 ? 0 : tt_strides(mask)[m];
    }
    p->mask = tt__ptr(mask);
    p->mask_bool = md == TT_BOOL;
    return TT_OK;
}

/* tt::scaled_dot_product_attention: softmax(q k^T * scale + mask) v per
 * head, scale 1/sqrt(D) by default, mask causal (query i sees keys j <= i,
 * as PyTorch's is_causal) or none. Fused: the scores of one block of query
 * rows live only while that block is computed. */
static tt_status sdpa_kernel(tt_frame *f)
{
    tt_tensor *q, *k, *v, *mask;
    bool causal, gqa;
    double scale;
    int64_t window;
    const char *op = tt__op_label(TT_OP_SCALED_DOT_PRODUCT_ATTENTION);
    attn_plan p = {0};
    tt_status st = sdpa_args(f, &q, &k, &v, &causal, &scale, &gqa, &mask, &window, 0);
    if (st || (st = attn_check(op, q, k, v, gqa, &p)) ||
        (mask && (st = attn_mask_check(op, 4, mask, q, k, &p, false))))
        return st;
    int nd = tt_ndim(q);
    tt_size sz[TT_MAX_DIMS], strides[TT_MAX_DIMS];
    memcpy(sz, tt_sizes(q), sizeof(tt_size) * (size_t)nd);
    sz[nd - 1] = tt_sizes(v)[nd - 1];
    attn_out_strides(nd, sz, strides);
    bool fake = tt_frame_is_fake(f) || is_fake(q) || is_fake(k) || is_fake(v);
    tt_tensor *out = tt__ops_new(fake, nd, sz, strides, tt_dtype_of(q));
    if (!out || fake)
        return out ? tt_return(f, 0, out) : tt_errcode();
    tt_tensor *qc = unit_last(q), *kc = unit_last(k), *vc = unit_last(v);
    if (!qc || !kc || !vc) {
        st = tt_errcode();
        goto out;
    }
    int64_t group = p.group;
    attn_geometry(&p, qc, kc, vc, scale, causal);
    p.group = group, p.window = window;
    if (mask && (st = attn_mask_check(op, 4, mask, q, k, &p, true)))
        goto out;
    for (int d = 0; d < nd; d++)
        p.os[d] = strides[d];
    p.out = tt__ptr(out);
    st = attn_run_heads(op, &p, tt_dtype_of(q) == TT_F64, false);
out:
    tt_release(qc);
    tt_release(kc);
    tt_release(vc);
    if (st) {
        tt_release(out);
        return st;
    }
    return tt_return(f, 0, out);
}

/* tt::scaled_dot_product_attention_backward(grad_out, query, key, value,
 * is_causal, scale) -> (grad_query, grad_key, grad_value), contiguous:
 * one kernel that recomputes the probabilities block by block. */
static tt_status sdpa_backward_kernel(tt_frame *f)
{
    tt_tensor *g, *q, *k, *v, *mask;
    bool causal, gqa;
    double scale;
    int64_t window;
    const char *op = tt__op_label(TT_OP_SCALED_DOT_PRODUCT_ATTENTION_BACKWARD);
    attn_plan p = {0};
    char *dkv = NULL; /* grouped-query: per query head dK, dV, summed after */
    tt_status st = tt_arg_tensor(f, 0, &g);
    if (st || (st = sdpa_args(f, &q, &k, &v, &causal, &scale, &gqa, &mask, &window, 1)) ||
        (st = attn_check(op, q, k, v, gqa, &p)) ||
        (mask && (st = attn_mask_check(op, 8, mask, q, k, &p, false))))
        return st;
    int nd = tt_ndim(q);
    tt_size gsz[TT_MAX_DIMS];
    memcpy(gsz, tt_sizes(q), sizeof(tt_size) * (size_t)nd);
    gsz[nd - 1] = tt_sizes(v)[nd - 1];
    if ((st = want_sizes(op, "grad_out", 1, g, nd, gsz)) ||
        (st = want_same_dtype(op, "grad_out", 1, g, q)))
        return st;
    bool fake = tt_frame_is_fake(f) || is_fake(g) || is_fake(q) || is_fake(k) || is_fake(v);
    tt_dtype dt = tt_dtype_of(q);
    tt_tensor *outs[3] = {tt__ops_new(fake, nd, tt_sizes(q), NULL, dt),
                          tt__ops_new(fake, nd, tt_sizes(k), NULL, dt),
                          tt__ops_new(fake, nd, tt_sizes(v), NULL, dt)};
    tt_tensor *qc = NULL, *kc = NULL, *vc = NULL, *gc = NULL;
    if (!outs[0] || !outs[1] || !outs[2]) {
        st = tt_errcode();
        goto out;
    }
    if (fake)
        goto out;
    qc = unit_last(q), kc = unit_last(k), vc = unit_last(v), gc = unit_last(g);
    if (!qc || !kc || !vc || !gc) {
        st = tt_errcode();
        goto out;
    }
    int64_t group = p.group;
    attn_geometry(&p, qc, kc, vc, scale, causal);
    p.group = group, p.window = window;
    if (mask && (st = attn_mask_check(op, 8, mask, q, k, &p, true)))
        goto out;
    for (int d = 0; d < nd; d++)
        p.gs[d] = tt_strides(gc)[d];
    p.go = tt__ptr(gc);
    p.dq = tt__ptr(outs[0]), p.dk = tt__ptr(outs[1]), p.dv = tt__ptr(outs[2]);
    p.gs[nd - 2] = lead_dim(gc);
    size_t es = tt_dtype_size(dt), nk = (size_t)(p.nb * p.S * p.D);
    if (group > 1) { /* each query head's dK, dV, then the sums of each group */
        dkv = tt__malloc(es * (nk + (size_t)(p.nb * p.S * p.Dv)) + 1);
        if (!dkv) {
            st = tt_error(TT_ENOMEM, "%s: out of memory for the query heads' key and value "
                                     "gradients", op);
            goto out;
        }
        p.dk = dkv, p.dv = dkv + es * nk;
    }
    st = attn_run_heads(op, &p, dt == TT_F64, true);
    if (!st && group > 1) {
        /* query head h = (b * Hq + hq) belongs to key head b * Hk + hq / group */
        int64_t n2[2] = {p.S * p.D, p.S * p.Dv};
        char *src[2] = {p.dk, p.dv}, *dst[2] = {tt__ptr(outs[1]), tt__ptr(outs[2])};
        for (int t = 0; t < 2; t++) {
            memset(dst[t], 0, es * (size_t)(p.nb / group * n2[t]));
            for (int64_t h = 0; h < p.nb; h++) {
                int64_t hk = h / group; /* heads are the innermost lead dim */
                for (int64_t e = 0; e < n2[t]; e++) {
                    int64_t o = hk * n2[t] + e, i = h * n2[t] + e;
                    if (dt == TT_F64)
                        ((double *)dst[t])[o] += ((const double *)src[t])[i];
                    else
                        ((float *)dst[t])[o] += ((const float *)src[t])[i];
                }
            }
        }
    }
out:
    tt__free(dkv);
    tt_release(qc);
    tt_release(kc);
    tt_release(vc);
    tt_release(gc);
    return return3(f, st, outs);
}

/* Saves query, key, value and the mask when given (a fourth tensor), and
 * the flags the backward op takes again. */
static tt_status setup_sdpa(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                            const tt_value *out, int nout)
{
    (void)out, (void)nout;
    bool has_mask = in[3].kind == TT_V_TENSOR;
    tt_status st = tt_ctx_save_for_backward(
        ctx, has_mask ? 4 : 3,
        (tt_tensor *[]){in[0].u.t, in[1].u.t, in[2].u.t, has_mask ? in[3].u.t : NULL});
    if (!st)
        st = tt_ctx_save_int(ctx, "is_causal", in[5].u.b);
    if (!st)
        st = tt_ctx_save_int(ctx, "enable_gqa", nin > 7 && in[7].u.b);
    if (!st)
        st = tt_ctx_save_int(ctx, "window", nin > 8 ? in[8].u.i : 0);
    if (!st)
        st = tt_ctx_save_int(ctx, "has_mask", has_mask);
    return st ? st : tt_ctx_save_float(ctx, "scale", in[6].kind == TT_V_NONE ? 0 : in[6].u.f);
}

static tt_status sdpa_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                               tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    int64_t causal, gqa, window, has_mask;
    double scale;
    tt_status st;
    if ((st = tt_ctx_get_int(ctx, "is_causal", &causal)) ||
        (st = tt_ctx_get_int(ctx, "enable_gqa", &gqa)) ||
        (st = tt_ctx_get_int(ctx, "window", &window)) ||
        (st = tt_ctx_get_int(ctx, "has_mask", &has_mask)) ||
        (st = tt_ctx_get_float(ctx, "scale", &scale)))
        return st;
    if (has_mask) { /* PyTorch's math path would differentiate a float mask */
        int slot = tt_ctx_input_slot(ctx, 3);
        if (slot >= 0 && tt_ctx_needs_input_grad(ctx, slot))
            return tt_error(TT_EINVAL, "%s: argument 'attn_mask' (#4): no gradient with "
                                       "respect to the mask (detach it)",
                            tt_op_name(tt_ctx_op(ctx)));
    }
    tt_value outs[3] = {tt_v_none(), tt_v_none(), tt_v_none()};
    st = tt_op_call(tt__op(TT_OP_SCALED_DOT_PRODUCT_ATTENTION_BACKWARD),
                    TT_ARGS(tt_v_tensor(g[0]), tt_v_tensor(tt_ctx_saved(ctx, 0)),
                            tt_v_tensor(tt_ctx_saved(ctx, 1)), tt_v_tensor(tt_ctx_saved(ctx, 2)),
                            tt_v_bool(causal != 0), scale > 0 ? tt_v_float(scale) : tt_v_none(),
                            tt_v_bool(gqa != 0),
                            has_mask ? tt_v_tensor(tt_ctx_saved(ctx, 3)) : tt_v_none(),
                            tt_v_int(window)),
                    outs, 3);
    if (st)
        return st;
    put_grads3(ctx, gi, outs, (int[]){0, 1, 2});
    return TT_OK;
}

/* ------------------------------------------------------------- rotary */

/* tt::rotary_embedding(x, cos, sin, interleaved=False): the rotary
 * position embedding of x [..., T, D] (queries or keys, [B, H, T, D])
 * with tables cos, sin [T, D] (row t: position t's angles, each angle
 * given for both elements of its pair). D is made of D/2 pairs (a, b),
 * each rotated by its angle:
 *   y[a] = x[a] cos[a] - x[b] sin[a],  y[b] = x[b] cos[b] + x[a] sin[b].
 * The default pairs element i with i + D/2: the Llama / Hugging Face form
 * x * cos + rotate_half(x) * sin, whose tables are cat(freqs, freqs) (the
 * form the checkpoints PyTorch users have expect, and what a reference
 * written with PyTorch ops computes). interleaved=True pairs 2i with
 * 2i + 1: GGML's ROPE and llama2.c's form (tables repeat each angle
 * twice). One op for both: the pairing is an index, the arithmetic is the
 * same. Taking full [T, D] tables (not [T, D/2]) makes the op exactly
 * PyTorch's composition for any tables. A decode step passes the rows of
 * its positions (cos[pos:pos+1]).
 * tt::rotary_embedding_backward(grad_out, cos, sin, interleaved): the
 * transposed map, the rotation by -theta when the pair's two angles are
 * equal:
 *   dx[a] = g[a] cos[a] + g[b] sin[b],  dx[b] = g[b] cos[b] - g[a] sin[a].
 * Both results have x's sizes and elementwise layout (as PyTorch's
 * composition: the heads of a [B, T, H, D] projection viewed as
 * [B, H, T, D] stay in that memory order); rows run in parallel. */
typedef struct {
    const char *x, *c, *s;
    char *y;
    int64_t rows, T, D;
    bool interleaved, transpose;
} rope_plan;

#define ROPE_ROWS(T_)                                                          \
    static void rope_rows_##T_(int64_t r0, int64_t r1, void *vp)               \
    {                                                                          \
        const rope_plan *p = vp;                                               \
        int64_t D = p->D, h = D / 2;                                           \
        for (int64_t r = r0; r < r1; r++) {                                    \
            const T_ *restrict x = (const T_ *)p->x + r * D;                   \
            const T_ *restrict c = (const T_ *)p->c + (r % p->T) * D;          \
            const T_ *restrict s = (const T_ *)p->s + (r % p->T) * D;          \
            T_ *restrict y = (T_ *)p->y + r * D;                               \
            for (int64_t i = 0; i < h; i++) {                                  \
                int64_t a = p->interleaved ? 2 * i : i;                        \
                int64_t b = p->interleaved ? 2 * i + 1 : i + h;                \
                T_ xa = x[a], xb = x[b];                                       \
                if (p->transpose) {                                            \
                    y[a] = xa * c[a] + xb * s[b];                              \
                    y[b] = xb * c[b] - xa * s[a];                              \
                } else {                                                       \
                    y[a] = xa * c[a] - xb * s[a];                              \
                    y[b] = xb * c[b] + xa * s[b];                              \
                }                                                              \
            }                                                                  \
        }                                                                      \
    }
ROPE_ROWS(float)
ROPE_ROWS(double)

static tt_tensor *rotary(bool transpose, const tt_tensor *x, const tt_tensor *cs,
                         const tt_tensor *sn, bool interleaved, bool fake)
{
    tt_builtin_id id = transpose ? TT_OP_ROTARY_EMBEDDING_BACKWARD : TT_OP_ROTARY_EMBEDDING;
    const char *op = tt__op_label(id), *xname = transpose ? "grad_out" : "x";
    char s1[128], s2[128];
    if (want_float(op, xname, 1, x))
        return NULL;
    int nd = tt_ndim(x);
    if (nd < 2) {
        tt_error(TT_ESHAPE, "%s: argument '%s' (#1): expected at least 2 dims [..., T, D], "
                            "got %s", op, xname, tt_shape_str(x, s1, sizeof s1));
        return NULL;
    }
    tt_size D = tt_sizes(x)[nd - 1];
    if (!tt_size_is_sym(D) && D % 2) {
        tt_error(TT_ESHAPE, "%s: argument '%s' (#1): expected an even last size D (pairs "
                            "of elements are rotated), got %s", op, xname,
                 tt_shape_str(x, s1, sizeof s1));
        return NULL;
    }
    const tt_tensor *tabs[2] = {cs, sn};
    const char *names[2] = {"cos", "sin"};
    for (int i = 0; i < 2; i++) {
        if (want_same_dtype(op, names[i], 2 + i, tabs[i], x))
            return NULL;
        if (!sizes_are(tabs[i], 2, tt_sizes(x) + nd - 2)) {
            tt_error(TT_ESHAPE, "%s: argument '%s' (#%d): expected shape [T, D] = %s (the "
                                "last two sizes of %s), got %s", op, names[i], 2 + i,
                     tt_size_list_str(2, tt_sizes(x) + nd - 2, false, s1, sizeof s1), xname,
                     tt_shape_str(tabs[i], s2, sizeof s2));
            return NULL;
        }
    }
    fake = fake || is_fake(x) || is_fake(cs) || is_fake(sn);
    tt_dtype dt = tt_dtype_of(x);
    tt_size strides[TT_MAX_DIMS];
    tt__elementwise_strides(1, &x, nd, tt_sizes(x), strides);
    tt_tensor *y = tt__ops_new(fake, nd, tt_sizes(x), strides, dt);
    if (!y || fake || tt_numel(y) == 0)
        return y;
    tt_tensor *xc = contig(x), *cc = contig(cs), *sc = contig(sn);
    tt_tensor *yc = tt_is_contiguous(y) ? tt_retain(y) : tt__ops_new(false, nd, tt_sizes(x), NULL, dt);
    if (xc && cc && sc && yc) {
        rope_plan p = {.x = tt__ptr(xc), .c = tt__ptr(cc), .s = tt__ptr(sc), .y = tt__ptr(yc),
                       .T = tt_sizes(x)[nd - 2], .D = D, .interleaved = interleaved,
                       .transpose = transpose};
        p.rows = tt_numel(x) / D;
        tt_parallel_for(p.rows, 16384 / D + 1, dt == TT_F64 ? rope_rows_double : rope_rows_float,
                        &p);
        if (yc != y && tt__copy_raw(y, yc))
            y = tt_release(y);
    } else {
        y = tt_release(y);
    }
    tt_release(yc);
    tt_release(xc);
    tt_release(cc);
    tt_release(sc);
    return y;
}

static tt_status rotary_kernel(tt_frame *f)
{
    tt_tensor *x, *cs, *sn;
    bool interleaved = false;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &x)) || (st = tt_arg_tensor(f, 1, &cs)) ||
        (st = tt_arg_tensor(f, 2, &sn)) ||
        (tt_frame_nargs(f) > 3 && (st = tt_arg_bool(f, 3, &interleaved))))
        return st;
    tt_tensor *y = rotary((intptr_t)tt_frame_userdata(f) == 1, x, cs, sn, interleaved,
                          tt_frame_is_fake(f));
    return y ? tt_return(f, 0, y) : tt_errcode();
}

static tt_status setup_rotary(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                              const tt_value *out, int nout)
{
    (void)out, (void)nout;
    tt_status st = tt_ctx_save_for_backward(ctx, 3, (tt_tensor *[]){in[0].u.t, in[1].u.t,
                                                                    in[2].u.t});
    return st ? st : tt_ctx_save_int(ctx, "interleaved", nin > 3 && in[3].u.b);
}

/* The sum of t [..., T, D] over its leading dims: [T, D] (a table's
 * gradient). */
static tt_tensor *sum_to_table(tt_tensor *t)
{
    if (!t) /* the failed op set the error */
        return NULL;
    int nd = tt_ndim(t);
    if (nd == 2)
        return t;
    int64_t dims[TT_MAX_DIMS];
    for (int d = 0; d < nd - 2; d++)
        dims[d] = d;
    return tt_sum(t, nd - 2, dims, false);
}

/* d/dx through rotary_embedding_backward; the tables' gradients (when
 * they require one) with ops: dcos = sum(g * x), dsin = sum(g * R(x)),
 * R(x) = rotary_embedding(x, 0, 1) the pairs' quarter turn. */
static tt_status rotary_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                 tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    int64_t il;
    tt_status st = tt_ctx_get_int(ctx, "interleaved", &il);
    if (st)
        return st;
    tt_tensor *x = tt_ctx_saved(ctx, 0), *cs = tt_ctx_saved(ctx, 1), *sn = tt_ctx_saved(ctx, 2);
    tt_tensor *r[3] = {NULL, NULL, NULL};
    bool need[3];
    int slot[3];
    for (int i = 0; i < 3; i++) {
        slot[i] = tt_ctx_input_slot(ctx, i);
        need[i] = slot[i] >= 0 && tt_ctx_needs_input_grad(ctx, slot[i]);
    }
    tt_scope_begin();
    if (need[0])
        r[0] = tt__call_op(TT_OP_ROTARY_EMBEDDING_BACKWARD,
                           TT_ARGS(tt_v_tensor(g[0]), tt_v_tensor(cs), tt_v_tensor(sn),
                                   tt_v_bool(il != 0)));
    if (need[1])
        r[1] = sum_to_table(tt_mul(g[0], x));
    if (need[2]) {
        tt_tensor *rx = tt__call_op(TT_OP_ROTARY_EMBEDDING,
                                    TT_ARGS(tt_v_tensor(x), tt_v_tensor(tt_full_like(cs, 0)),
                                            tt_v_tensor(tt_full_like(sn, 1)), tt_v_bool(il != 0)));
        r[2] = sum_to_table(tt_mul(g[0], rx));
    }
    st = TT_OK;
    for (int i = 0; i < 3; i++)
        if (need[i] && !r[i])
            st = tt_errcode() ? tt_errcode() : TT_ENOMEM;
    for (int i = 0; i < 3; i++)
        if (r[i])
            tt_keep(r[i]);
    tt_scope_end();
    for (int i = 0; i < 3 && !st; i++)
        if (r[i])
            st = tt__put_grad(ctx, gi, slot[i], r[i]), r[i] = NULL;
    for (int i = 0; i < 3; i++)
        tt_release(r[i]);
    return st;
}

#undef TT__FAMILY_ATTENTION
#define TT__FAMILY_ATTENTION TT__ROW
static const tt__builtin_row rows[] = {TT__FAMILY_ROWS};

tt_status tt__register_attention(tt_library *lib)
{
    return TT__DEFINE_ROWS(lib, rows);
}

/* ---------------------------------------------------------- typed wrappers */

tt_tensor *tt_scaled_dot_product_attention(const tt_tensor *q, const tt_tensor *k,
                                           const tt_tensor *v, bool is_causal, double scale)
{
    return tt__call_op(TT_OP_SCALED_DOT_PRODUCT_ATTENTION,
                       TT_ARGS(tt_v_tensor(q), tt_v_tensor(k), tt_v_tensor(v), tt_v_none(),
                               tt_v_float(0), tt_v_bool(is_causal),
                               scale > 0 ? tt_v_float(scale) : tt_v_none()));
}

tt_tensor *tt_scaled_dot_product_attention_gqa(const tt_tensor *q, const tt_tensor *k,
                                               const tt_tensor *v, bool is_causal, double scale)
{
    return tt__call_op(TT_OP_SCALED_DOT_PRODUCT_ATTENTION,
                       TT_ARGS(tt_v_tensor(q), tt_v_tensor(k), tt_v_tensor(v), tt_v_none(),
                               tt_v_float(0), tt_v_bool(is_causal),
                               scale > 0 ? tt_v_float(scale) : tt_v_none(), tt_v_bool(true)));
}

tt_tensor *tt_rotary_embedding(const tt_tensor *x, const tt_tensor *cos, const tt_tensor *sin,
                               bool interleaved)
{
    const tt_tensor *ts[3] = {x, cos, sin};
    if (x && cos && sin && tt__fast_path(TT_OP_ROTARY_EMBEDDING, 3, ts))
        return rotary(false, x, cos, sin, interleaved, false);
    return tt__call_op(TT_OP_ROTARY_EMBEDDING,
                       TT_ARGS(tt_v_tensor(x), tt_v_tensor(cos), tt_v_tensor(sin),
                               tt_v_bool(interleaved)));
}
