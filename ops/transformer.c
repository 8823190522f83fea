/* Built-in ops: the pieces of a transformer that are not plain elementwise
 * or matrix-product ops. embedding, layer_norm, causal (or full)
 * scaled-dot-product attention, an AdamW step, and the global norm of a
 * list of tensors (for gradient clipping).
 *
 * Each forward kernel computes its output's metadata and, for real inputs
 * only, its values, so the fake kernel is the kernel itself. Each
 * derivative is one op of its own (embedding_dense_backward,
 * layer_norm_backward, scaled_dot_product_attention_backward): one node in
 * a traced backward and one pass over memory, instead of a chain of small
 * ops. The backward ops recompute what the forward does not keep (a row's
 * mean and 1/std, an attention row's softmax), so the forward returns one
 * tensor as PyTorch's functional forms do and nothing extra stays alive
 * between forward and backward.
 *
 * Sums whose order could depend on the thread count (a weight's gradient
 * summed over rows) are cut into a fixed number of chunks whose partials
 * are added in chunk order, so results are the same on 1 thread and on 64. */
#include "ops_impl.h"
#include "vec_math.h"

#include <cblas.h>

#include <math.h>
#include <string.h>

#define CHUNKS 64 /* fixed partial sums of a row reduction (see above) */

/* Row sums of layer_norm and attention are taken in LN_LANES double lanes
 * (element j in lane j % LN_LANES), added in lane order at the end:
 * independent chains that vectorize, in an order fixed by the row length
 * alone. */
#define LN_LANES 8

static double lanes_total(const double *l)
{
    double t = 0;
    for (int i = 0; i < LN_LANES; i++)
        t += l[i];
    return t;
}

/* A row's max and its dot product with another row (or its sum, b NULL)
 * in lanes, the sums in double. The max skips NaN as a plain loop does (a
 * NaN score still makes its row NaN through exp). */
#define ROW_LANES(T_)                                                          \
    static inline T_ row_max_##T_(const T_ *restrict r, int64_t n)             \
    {                                                                          \
        T_ l[LN_LANES];                                                        \
        for (int i = 0; i < LN_LANES; i++)                                     \
            l[i] = -INFINITY;                                                  \
        int64_t j = 0, body = n - n % LN_LANES;                                \
        for (; j < body; j += LN_LANES)                                        \
            for (int i = 0; i < LN_LANES; i++)                                 \
                l[i] = r[j + i] > l[i] ? r[j + i] : l[i];                      \
        for (; j < n; j++)                                                     \
            l[j - body] = r[j] > l[j - body] ? r[j] : l[j - body];             \
        T_ m = l[0];                                                           \
        for (int i = 1; i < LN_LANES; i++)                                     \
            m = l[i] > m ? l[i] : m;                                           \
        return m;                                                              \
    }                                                                          \
    static inline double row_dot_##T_(const T_ *restrict a, const T_ *restrict b, int64_t n) \
    {                                                                          \
        double l[LN_LANES] = {0};                                              \
        int64_t j = 0, body = n - n % LN_LANES;                                \
        for (; j < body; j += LN_LANES)                                        \
            for (int i = 0; i < LN_LANES; i++)                                 \
                l[i] += (double)a[j + i] * (b ? (double)b[j + i] : 1.0);       \
        for (; j < n; j++)                                                     \
            l[j - body] += (double)a[j] * (b ? (double)b[j] : 1.0);            \
        return lanes_total(l);                                                 \
    }
ROW_LANES(float)
ROW_LANES(double)

static bool is_fake(const tt_tensor *t) { return t && t->storage->fake; }

/* A contiguous real copy of t (or t itself, retained), for kernels that
 * read rows. */
static tt_tensor *contig(const tt_tensor *t)
{
    return tt_is_contiguous(t) ? tt_retain((tt_tensor *)t) : tt_contiguous(t);
}

static tt_status want_float(const char *op, const char *arg, int argno, const tt_tensor *t)
{
    tt_dtype dt = tt_dtype_of(t);
    if (dt == TT_F32 || dt == TT_F64)
        return TT_OK;
    return tt_error(TT_EDTYPE, "%s: argument '%s' (#%d): expected f32 or f64, got %s", op, arg,
                    argno, tt_dtype_name(dt));
}

static tt_status want_same_dtype(const char *op, const char *arg, int argno,
                                 const tt_tensor *t, const tt_tensor *like)
{
    if (tt_dtype_of(t) == tt_dtype_of(like))
        return TT_OK;
    return tt_error(TT_EDTYPE, "%s: argument '%s' (#%d): expected %s like 'self', got %s", op,
                    arg, argno, tt_dtype_name(tt_dtype_of(like)), tt_dtype_name(tt_dtype_of(t)));
}

/* True when t has exactly the sizes (n, s), comparing symbols by guard. */
static bool sizes_are(const tt_tensor *t, int n, const tt_size *s)
{
    if (tt_ndim(t) != n)
        return false;
    for (int d = 0; d < n; d++)
        if (!tt_size_eq(tt_sizes(t)[d], s[d]))
            return false;
    return true;
}

static tt_status want_sizes(const char *op, const char *arg, int argno, const tt_tensor *t,
                            int n, const tt_size *s)
{
    if (sizes_are(t, n, s))
        return TT_OK;
    char a[128], b[128];
    return tt_error(TT_ESHAPE, "%s: argument '%s' (#%d): expected shape %s, got %s", op, arg,
                    argno, tt_size_list_str(n, s, false, a, sizeof a),
                    tt_shape_str(t, b, sizeof b));
}

/* Hands a backward kernel's three outputs (new references) to the frame,
 * or releases them when st is an error. */
static tt_status return3(tt_frame *f, tt_status st, tt_tensor **outs)
{
    for (int i = 0; i < 3; i++)
        if (!st) /* tt_return takes the reference, also when it fails */
            st = tt_return(f, i, outs[i]);
        else
            tt_release(outs[i]);
    return st;
}

/* Stores a backward op's three results as the gradients of the call's
 * arguments args[i] (-1: none), dropping those no input needs. */
static void put_grads3(tt_autograd_ctx *ctx, tt_tensor **gi, tt_value *outs, const int *args)
{
    for (int i = 0; i < 3; i++) {
        int slot = args[i] < 0 ? -1 : tt_ctx_input_slot(ctx, args[i]);
        if (slot >= 0 && tt_ctx_needs_input_grad(ctx, slot))
            gi[slot] = outs[i].u.t;
        else
            tt_value_clear(&outs[i]);
    }
}

/* ============================================================ embedding */

/* tt::embedding(weight [num, dim], indices [...] i64/i32) -> [..., dim]:
 * row indices[...] of weight, in a new contiguous tensor. PyTorch's
 * padding_idx, scale_grad_by_freq and sparse are not taken. */
static tt_tensor *embedding(const tt_tensor *w, const tt_tensor *idx)
{
    const char *op = tt__op_label(TT_OP_EMBEDDING);
    char s[128];
    if (tt_ndim(w) != 2) {
        tt_error(TT_ESHAPE, "%s: argument 'weight' (#1): expected a 2-d [num, dim] table, "
                            "got %s", op, tt_shape_str(w, s, sizeof s));
        return NULL;
    }
    tt_dtype it = tt_dtype_of(idx);
    if (it != TT_I64 && it != TT_I32) {
        tt_error(TT_EDTYPE, "%s: argument 'indices' (#2): expected i64 or i32 indices, got %s",
                 op, tt_dtype_name(it));
        return NULL;
    }
    if (tt_ndim(idx) + 1 > TT_MAX_DIMS) {
        tt_error(TT_ESHAPE, "%s: argument 'indices' (#2): at most %d dims, got %d", op,
                 TT_MAX_DIMS - 1, tt_ndim(idx));
        return NULL;
    }
    tt_size sizes[TT_MAX_DIMS];
    int nd = tt_ndim(idx);
    memcpy(sizes, tt_sizes(idx), sizeof(tt_size) * (size_t)nd);
    sizes[nd] = tt_sizes(w)[1];
    bool fake = is_fake(w) || is_fake(idx);
    tt_tensor *out = tt__ops_new(fake, nd + 1, sizes, NULL, tt_dtype_of(w));
    if (!out || fake)
        return out;
    tt_tensor *ic = contig(idx), *wc = contig(w);
    if (!ic || !wc)
        goto fail;
    int64_t n = tt_numel(idx), num = tt_sizes(w)[0], dim = tt_sizes(w)[1];
    size_t row = (size_t)dim * tt_dtype_size(tt_dtype_of(w));
    const char *ip = tt__ptr(ic), *wp = tt__ptr(wc);
    char *op_ = tt__ptr(out);
    for (int64_t i = 0; i < n; i++) {
        int64_t k = it == TT_I64 ? ((const int64_t *)ip)[i] : ((const int32_t *)ip)[i];
        if (k < 0 || k >= num) {
            tt_error(TT_EINVAL, "%s: argument 'indices' (#2): index %lld is out of range "
                                "for a table of %lld rows", op, (long long)k, (long long)num);
            goto fail;
        }
        memcpy(op_ + (size_t)i * row, wp + (size_t)k * row, row);
    }
    tt_release(ic);
    tt_release(wc);
    return out;
fail:
    tt_release(ic);
    tt_release(wc);
    return tt_release(out);
}

static tt_status embedding_kernel(tt_frame *f)
{
    tt_tensor *w, *idx;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &w)) || (st = tt_arg_tensor(f, 1, &idx)))
        return st;
    tt_tensor *r = embedding(w, idx);
    return r ? tt_return(f, 0, r) : tt_errcode();
}

typedef struct {
    const char *g, *ip;
    char *out;
    int64_t n, dim;
    bool i64, f64;
} emb_bw;

/* Columns [b, e) of every row: each task owns its columns and visits the
 * indices in order, so repeated indices accumulate in the same order on
 * any thread count. */
static void emb_bw_task(int64_t b, int64_t e, void *vp)
{
    const emb_bw *p = vp;
    for (int64_t i = 0; i < p->n; i++) {
        int64_t k = p->i64 ? ((const int64_t *)p->ip)[i] : ((const int32_t *)p->ip)[i];
        if (p->f64) {
            double *o = (double *)p->out + k * p->dim;
            const double *g = (const double *)p->g + i * p->dim;
            for (int64_t c = b; c < e; c++)
                o[c] += g[c];
        } else {
            float *o = (float *)p->out + k * p->dim;
            const float *g = (const float *)p->g + i * p->dim;
            for (int64_t c = b; c < e; c++)
                o[c] += g[c];
        }
    }
}

/* tt::embedding_dense_backward(grad_output [..., dim], indices [...],
 * num_weights) -> [num_weights, dim]: row k is the sum of the gradient rows
 * whose index is k (indices were checked by the forward). */
static tt_status embedding_backward_kernel(tt_frame *f)
{
    tt_tensor *g, *idx;
    int64_t num;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &g)) || (st = tt_arg_tensor(f, 1, &idx)) ||
        (st = tt_arg_int(f, 2, &num)))
        return st;
    const char *op = tt__op_label(TT_OP_EMBEDDING_DENSE_BACKWARD);
    if ((st = want_float(op, "grad_output", 1, g)))
        return st;
    if (tt_ndim(g) != tt_ndim(idx) + 1)
        return tt_error(TT_ESHAPE, "%s: argument 'grad_output' (#1): expected %d dims (the "
                                   "indices' and one more), got %d", op, tt_ndim(idx) + 1,
                        tt_ndim(g));
    tt_size sizes[2] = {num, tt_sizes(g)[tt_ndim(g) - 1]};
    bool fake = tt_frame_is_fake(f) || is_fake(g) || is_fake(idx);
    tt_tensor *out = tt__ops_new(fake, 2, sizes, NULL, tt_dtype_of(g));
    if (!out || fake)
        return out ? tt_return(f, 0, out) : tt_errcode();
    tt_tensor *gc = contig(g), *ic = contig(idx);
    if (!gc || !ic) {
        st = tt_errcode();
        goto out;
    }
    memset(tt__ptr(out), 0, (size_t)tt_numel(out) * tt_dtype_size(tt_dtype_of(out)));
    emb_bw p = {.g = tt__ptr(gc), .ip = tt__ptr(ic), .out = tt__ptr(out), .n = tt_numel(idx),
                .dim = sizes[1], .i64 = tt_dtype_of(idx) == TT_I64,
                .f64 = tt_dtype_of(g) == TT_F64};
    tt_parallel_for(p.dim, p.n > 0 ? 16 : p.dim + 1, emb_bw_task, &p);
out:
    tt_release(gc);
    tt_release(ic);
    if (st) {
        tt_release(out);
        return st;
    }
    return tt_return(f, 0, out);
}

static tt_status setup_embedding(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                                 const tt_value *out, int nout)
{
    (void)nin, (void)out, (void)nout;
    tt_status st = tt_ctx_save_for_backward(ctx, 1, (tt_tensor *[]){in[1].u.t});
    return st ? st : tt_ctx_save_int(ctx, "num_weights", tt_sizes(in[0].u.t)[0]);
}

static tt_status embedding_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                    tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    int64_t num;
    tt_status st = tt_ctx_get_int(ctx, "num_weights", &num);
    if (st || !tt_ctx_needs_input_grad(ctx, 0))
        return st;
    return tt__put_grad(ctx, gi, 0,
                        tt__call_op(TT_OP_EMBEDDING_DENSE_BACKWARD,
                                    TT_ARGS(tt_v_tensor(g[0]), tt_v_tensor(tt_ctx_saved(ctx, 0)),
                                            tt_v_int(num))));
}

/* =========================================================== layer_norm */

/* The row geometry of a layer norm: `rows` rows of `n` elements, n the
 * product of normalized_shape, which must be input's trailing sizes. */
static tt_status ln_check(const char *op, const tt_tensor *x, int nns, const int64_t *ns,
                          const tt_tensor *w, const tt_tensor *b)
{
    tt_status st;
    char s1[128], s2[128];
    if ((st = want_float(op, "input", 1, x)))
        return st;
    int nd = tt_ndim(x);
    bool ok = nns >= 1 && nns <= nd;
    for (int i = 0; ok && i < nns; i++)
        ok = tt_size_eq(tt_sizes(x)[nd - nns + i], ns[i]);
    if (!ok)
        return tt_error(TT_ESHAPE, "%s: argument 'normalized_shape' (#2): %s is not the "
                                   "trailing sizes of input %s", op,
                        tt_size_list_str(nns, ns, false, s1, sizeof s1),
                        tt_shape_str(x, s2, sizeof s2));
    const tt_tensor *wb[2] = {w, b};
    const char *names[2] = {"weight", "bias"};
    for (int i = 0; i < 2; i++) {
        if (!wb[i])
            continue;
        if ((st = want_same_dtype(op, names[i], 3 + i, wb[i], x)) ||
            (st = want_sizes(op, names[i], 3 + i, wb[i], nns, ns)))
            return st;
    }
    return TT_OK;
}

typedef struct {
    const char *x, *w, *b, *g;
    char *y, *dx;
    double *dw, *db; /* CHUNKS partials of n each (backward) */
    int64_t rows, n;
    double eps;
} ln_plan;

/* Mean and 1/std of one row, in double: the biased variance, as PyTorch. */
#define LN_STATS(T)                                                            \
    static inline void ln_stats_##T(const T *restrict x, int64_t n, double eps, double *mean, \
                                    double *rstd)                              \
    {                                                                          \
        double v[LN_LANES] = {0};                                              \
        double m = n ? row_dot_##T(x, NULL, n) / (double)n : 0;                \
        int64_t j = 0, body = n - n % LN_LANES;                                \
        for (; j < body; j += LN_LANES)                                        \
            for (int l = 0; l < LN_LANES; l++)                                 \
                v[l] += ((double)x[j + l] - m) * ((double)x[j + l] - m);       \
        for (; j < n; j++)                                                     \
            v[j - body] += ((double)x[j] - m) * ((double)x[j] - m);            \
        *mean = m;                                                             \
        *rstd = 1.0 / sqrt((n ? lanes_total(v) / (double)n : 0) + eps);        \
    }
LN_STATS(float)
LN_STATS(double)

#define LN_FWD(T)                                                              \
    CPU_CLONES static void ln_fwd_##T(int64_t b0, int64_t e0, void *vp)        \
    {                                                                          \
        const ln_plan *p = vp;                                                 \
        const T *w = (const T *)p->w, *bb = (const T *)p->b;                   \
        for (int64_t r = b0; r < e0; r++) {                                    \
            const T *x = (const T *)p->x + r * p->n;                           \
            T *y = (T *)p->y + r * p->n;                                       \
            double m, rs;                                                      \
            ln_stats_##T(x, p->n, p->eps, &m, &rs);                            \
            T mt = (T)m, rt = (T)rs;                                           \
            for (int64_t j = 0; j < p->n; j++) {                               \
                T v = (x[j] - mt) * rt;                                        \
                y[j] = v * (w ? w[j] : (T)1) + (bb ? bb[j] : (T)0);            \
            }                                                                  \
        }                                                                      \
    }
LN_FWD(float)
LN_FWD(double)

/* tt::layer_norm: normalizes each row over the trailing dims named by
 * normalized_shape ((x - mean) / sqrt(var + eps), the biased variance),
 * then multiplies by weight and adds bias when given. The output is
 * contiguous, with input's sizes. */
static tt_tensor *layer_norm(const tt_tensor *x, int nns, const int64_t *ns,
                             const tt_tensor *w, const tt_tensor *b, double eps)
{
    const char *op = tt__op_label(TT_OP_LAYER_NORM);
    if (ln_check(op, x, nns, ns, w, b))
        return NULL;
    bool fake = is_fake(x) || is_fake(w) || is_fake(b);
    tt_tensor *y = tt__ops_new(fake, tt_ndim(x), tt_sizes(x), NULL, tt_dtype_of(x));
    if (!y || fake)
        return y;
    tt_tensor *xc = contig(x), *wc = w ? contig(w) : NULL, *bc = b ? contig(b) : NULL;
    if (!xc || (w && !wc) || (b && !bc)) {
        y = tt_release(y);
        goto out;
    }
    int64_t n = 1;
    for (int i = 0; i < nns; i++)
        n *= ns[i];
    ln_plan p = {.x = tt__ptr(xc), .w = wc ? tt__ptr(wc) : NULL, .b = bc ? tt__ptr(bc) : NULL,
                 .y = tt__ptr(y), .rows = n ? tt_numel(x) / n : 0, .n = n, .eps = eps};
    int64_t grain = 16384 / (n ? n : 1) + 1;
    tt_parallel_for(p.rows, grain, tt_dtype_of(x) == TT_F64 ? ln_fwd_double : ln_fwd_float, &p);
out:
    tt_release(xc);
    tt_release(wc);
    tt_release(bc);
    return y;
}

static tt_status ln_args(tt_frame *f, int first, tt_tensor **x, const int64_t **ns, int *nns,
                         tt_tensor **w, tt_tensor **b, double *eps)
{
    tt_status st;
    if ((st = tt_arg_tensor(f, first, x)) || (st = tt_arg_ints(f, first + 1, ns, nns)) ||
        (st = tt_arg_tensor(f, first + 2, w)) || (st = tt_arg_tensor(f, first + 3, b)) ||
        (st = tt_arg_float(f, first + 4, eps)))
        return st;
    return TT_OK;
}

static tt_status layer_norm_kernel(tt_frame *f)
{
    tt_tensor *x, *w, *b;
    const int64_t *ns;
    int nns;
    double eps;
    tt_status st = ln_args(f, 0, &x, &ns, &nns, &w, &b, &eps);
    if (st)
        return st;
    tt_tensor *y = layer_norm(x, nns, ns, w, b, eps);
    return y ? tt_return(f, 0, y) : tt_errcode();
}

/* dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)) with
 * dxhat = dy * w; the rows of chunk c add their dw, db into partial c. */
#define LN_BWD(T)                                                              \
    CPU_CLONES static void ln_bwd_##T(int64_t c0, int64_t c1, void *vp)        \
    {                                                                          \
        const ln_plan *p = vp;                                                 \
        const T *w = (const T *)p->w;                                          \
        int64_t per = (p->rows + CHUNKS - 1) / CHUNKS, n = p->n;               \
        int64_t body = n - n % LN_LANES;                                       \
        for (int64_t c = c0; c < c1; c++) {                                    \
            double *restrict dw = p->dw + c * n, *restrict db = p->db + c * n; \
            int64_t r1 = (c + 1) * per < p->rows ? (c + 1) * per : p->rows;    \
            for (int64_t r = c * per; r < r1; r++) {                           \
                const T *restrict x = (const T *)p->x + r * n;                 \
                const T *restrict g = (const T *)p->g + r * n;                 \
                T *restrict dx = (T *)p->dx + r * n;                           \
                double m, rs, s1[LN_LANES] = {0}, s2[LN_LANES] = {0};          \
                ln_stats_##T(x, n, p->eps, &m, &rs);                           \
                for (int64_t j0 = 0; j0 < n; j0 += LN_LANES) {                 \
                    int lanes = j0 < body ? LN_LANES : (int)(n - body);        \
                    for (int l = 0; l < lanes; l++) {                          \
                        int64_t j = j0 + l;                                    \
                        double xh = ((double)x[j] - m) * rs;                   \
                        double dxh = (double)g[j] * (w ? (double)w[j] : 1.0);  \
                        s1[l] += dxh;                                          \
                        s2[l] += dxh * xh;                                     \
                        dw[j] += (double)g[j] * xh;                            \
                        db[j] += (double)g[j];                                 \
                    }                                                          \
                }                                                              \
                double a1 = lanes_total(s1) / (double)n, a2 = lanes_total(s2) / (double)n; \
                for (int64_t j = 0; j < n; j++) {                              \
                    double xh = ((double)x[j] - m) * rs;                       \
                    double dxh = (double)g[j] * (w ? (double)w[j] : 1.0);      \
                    dx[j] = (T)(rs * (dxh - a1 - xh * a2));                    \
                }                                                              \
            }                                                                  \
        }                                                                      \
    }
LN_BWD(float)
LN_BWD(double)

/* tt::layer_norm_backward(grad_out, input, normalized_shape, weight?,
 * bias?, eps) -> (grad_input, grad_weight, grad_bias): one kernel, as
 * aten's native_layer_norm_backward. Each row's mean and 1/std are
 * recomputed from input (one extra read of a row already in cache) instead
 * of being kept from the forward. grad_weight and grad_bias have
 * normalized_shape (computed whether or not weight and bias were given). */
static tt_status layer_norm_backward_kernel(tt_frame *f)
{
    tt_tensor *g, *x, *w, *b;
    const int64_t *ns;
    int nns;
    double eps;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &g)) || (st = ln_args(f, 1, &x, &ns, &nns, &w, &b, &eps)))
        return st;
    const char *op = tt__op_label(TT_OP_LAYER_NORM_BACKWARD);
    if ((st = ln_check(op, x, nns, ns, w, b)) ||
        (st = want_sizes(op, "grad_out", 1, g, tt_ndim(x), tt_sizes(x))) ||
        (st = want_same_dtype(op, "grad_out", 1, g, x)))
        return st;
    bool fake = tt_frame_is_fake(f) || is_fake(g) || is_fake(x) || is_fake(w);
    tt_dtype dt = tt_dtype_of(x);
    tt_tensor *outs[3] = {tt__ops_new(fake, tt_ndim(x), tt_sizes(x), NULL, dt),
                          tt__ops_new(fake, nns, ns, NULL, dt),
                          tt__ops_new(fake, nns, ns, NULL, dt)};
    tt_tensor *xc = NULL, *gc = NULL, *wc = NULL;
    double *part = NULL;
    if (!outs[0] || !outs[1] || !outs[2]) {
        st = tt_errcode();
        goto out;
    }
    if (fake)
        goto out;
    xc = contig(x), gc = contig(g), wc = w ? contig(w) : NULL;
    int64_t n = 1;
    for (int i = 0; i < nns; i++)
        n *= ns[i];
    part = tt__malloc(sizeof(double) * 2 * CHUNKS * (size_t)(n ? n : 1));
    if (!xc || !gc || (w && !wc) || !part) {
        st = tt_errcode() ? tt_errcode() : TT_ENOMEM;
        goto out;
    }
    memset(part, 0, sizeof(double) * 2 * CHUNKS * (size_t)(n ? n : 1));
    ln_plan p = {.x = tt__ptr(xc), .g = tt__ptr(gc), .w = wc ? tt__ptr(wc) : NULL,
                 .dx = tt__ptr(outs[0]), .dw = part, .db = part + CHUNKS * n,
                 .rows = n ? tt_numel(x) / n : 0, .n = n, .eps = eps};
    tt_parallel_for(CHUNKS, 1, dt == TT_F64 ? ln_bwd_double : ln_bwd_float, &p);
    for (int64_t j = 0; j < n; j++) {
        double sw = 0, sb = 0;
        for (int c = 0; c < CHUNKS; c++) {
            sw += p.dw[c * n + j];
            sb += p.db[c * n + j];
        }
        tt__store(tt__ptr(outs[1]) + j * (int64_t)tt_dtype_size(dt), dt, sw);
        tt__store(tt__ptr(outs[2]) + j * (int64_t)tt_dtype_size(dt), dt, sb);
    }
out:
    tt__free(part);
    tt_release(xc);
    tt_release(gc);
    tt_release(wc);
    return return3(f, st, outs);
}

static tt_status setup_layer_norm(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                                  const tt_value *out, int nout)
{
    (void)nin, (void)out, (void)nout;
    tt_tensor *w = in[2].kind == TT_V_TENSOR ? in[2].u.t : NULL;
    tt_tensor *b = in[3].kind == TT_V_TENSOR ? in[3].u.t : NULL;
    /* A None weight or bias is saved as the input, never read back. */
    tt_status st = tt_ctx_save_for_backward(ctx, 3, (tt_tensor *[]){in[0].u.t, w ? w : in[0].u.t,
                                                                    b ? b : in[0].u.t});
    if (!st)
        st = tt_ctx_save_ints(ctx, "normalized_shape", in[1].n, in[1].u.ints);
    if (!st)
        st = tt_ctx_save_int(ctx, "affine", (w ? 1 : 0) | (b ? 2 : 0));
    return st ? st : tt_ctx_save_float(ctx, "eps", in[4].u.f);
}

static tt_status layer_norm_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                     tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    const int64_t *ns;
    int nns;
    int64_t affine;
    double eps;
    tt_status st;
    if ((st = tt_ctx_get_ints(ctx, "normalized_shape", &ns, &nns)) ||
        (st = tt_ctx_get_int(ctx, "affine", &affine)) || (st = tt_ctx_get_float(ctx, "eps", &eps)))
        return st;
    tt_tensor *w = affine & 1 ? tt_ctx_saved(ctx, 1) : NULL;
    tt_tensor *b = affine & 2 ? tt_ctx_saved(ctx, 2) : NULL;
    tt_value outs[3] = {tt_v_none(), tt_v_none(), tt_v_none()};
    st = tt_op_call(tt__op(TT_OP_LAYER_NORM_BACKWARD),
                    TT_ARGS(tt_v_tensor(g[0]), tt_v_tensor(tt_ctx_saved(ctx, 0)),
                            tt_v_ints(nns, ns), w ? tt_v_tensor(w) : tt_v_none(),
                            b ? tt_v_tensor(b) : tt_v_none(), tt_v_float(eps)),
                    outs, 3);
    if (st)
        return st;
    /* input is argument 0, weight 2 and bias 3 (when given) */
    put_grads3(ctx, gi, outs, (int[]){0, affine & 1 ? 2 : -1, affine & 2 ? 3 : -1});
    return TT_OK;
}

/* ===================================================== attention (SDPA) */

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
    double scale;
    bool causal;
} attn_plan;

/* Element offset of head `h` in a tensor with strides st. */
static int64_t head_off(const attn_plan *p, const int64_t *st, int64_t h)
{
    int64_t off = 0;
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
 * head, and every product of a block small enough to stay on the calling
 * thread in OpenBLAS. */
static bool attn_parallel(const attn_plan *p)
{
    int64_t rows = p->T > p->S ? p->T : p->S, cols = p->D > p->Dv ? p->D : p->Dv;
    return tt_get_num_threads() > 1 && p->nb > 1 &&
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
    CPU_CLONES static void softmax_rows_##T_(const attn_plan *p, T_ *s, int64_t r0, \
                                             int64_t r1, int64_t width)        \
    {                                                                          \
        for (int64_t i = r0; i < r1; i++) {                                    \
            T_ *r = s + (i - r0) * p->S;                                       \
            int64_t len = attn_len(p, i);                                      \
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
            gemm_##T_(false, true, r1 - r0, n, p->D, p->scale, q + r0 * p->qs[nl], \
                      p->qs[nl], k, p->ks[nl], s, p->S);                       \
            softmax_rows_##T_(p, s, r0, r1, n);                                  \
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
            softmax_rows_##T_(p, sr, r0, r1, p->S);                            \
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
                            const tt_tensor *v, attn_plan *p)
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
    for (int d = 0; d < nd - 2; d++)
        for (int i = 1; i < 3; i++)
            if (!tt_size_eq(tt_sizes(ts[i])[d], tt_sizes(q)[d]))
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

static tt_status sdpa_args(tt_frame *f, tt_tensor **q, tt_tensor **k, tt_tensor **v,
                           bool *causal, double *scale, int first)
{
    tt_status st;
    tt_tensor *mask;
    double dropout;
    const char *op = tt__op_label(TT_OP_SCALED_DOT_PRODUCT_ATTENTION);
    if ((st = tt_arg_tensor(f, first, q)) || (st = tt_arg_tensor(f, first + 1, k)) ||
        (st = tt_arg_tensor(f, first + 2, v)))
        return st;
    if (first == 0) {
        if ((st = tt_arg_tensor(f, 3, &mask)) || (st = tt_arg_float(f, 4, &dropout)))
            return st;
        /* Only what GPT-2 needs: a causal or full mask, no dropout. */
        if (mask)
            return tt_error(TT_EINVAL, "%s: argument 'attn_mask' (#4): only None is supported "
                                       "(use is_causal=True for a causal mask)", op);
        if (dropout != 0)
            return tt_error(TT_EINVAL, "%s: argument 'dropout_p' (#5): only 0.0 is supported, "
                                       "got %g", op, dropout);
    }
    int ci = first == 0 ? 5 : first + 3;
    if ((st = tt_arg_bool(f, ci, causal)))
        return st;
    *scale = 0;
    return tt_arg_is_none(f, ci + 1) ? TT_OK : tt_arg_float(f, ci + 1, scale);
}

/* tt::scaled_dot_product_attention: softmax(q k^T * scale + mask) v per
 * head, scale 1/sqrt(D) by default, mask causal (query i sees keys j <= i,
 * as PyTorch's is_causal) or none. Fused: the scores of one block of query
 * rows live only while that block is computed. */
static tt_status sdpa_kernel(tt_frame *f)
{
    tt_tensor *q, *k, *v;
    bool causal;
    double scale;
    const char *op = tt__op_label(TT_OP_SCALED_DOT_PRODUCT_ATTENTION);
    attn_plan p = {0};
    tt_status st = sdpa_args(f, &q, &k, &v, &causal, &scale, 0);
    if (st || (st = attn_check(op, q, k, v, &p)))
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
    attn_geometry(&p, qc, kc, vc, scale, causal);
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
    tt_tensor *g, *q, *k, *v;
    bool causal;
    double scale;
    const char *op = tt__op_label(TT_OP_SCALED_DOT_PRODUCT_ATTENTION_BACKWARD);
    attn_plan p = {0};
    tt_status st = tt_arg_tensor(f, 0, &g);
    if (st || (st = sdpa_args(f, &q, &k, &v, &causal, &scale, 1)) ||
        (st = attn_check(op, q, k, v, &p)))
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
    attn_geometry(&p, qc, kc, vc, scale, causal);
    for (int d = 0; d < nd; d++)
        p.gs[d] = tt_strides(gc)[d];
    p.go = tt__ptr(gc);
    p.dq = tt__ptr(outs[0]), p.dk = tt__ptr(outs[1]), p.dv = tt__ptr(outs[2]);
    p.gs[nd - 2] = lead_dim(gc);
    st = attn_run_heads(op, &p, dt == TT_F64, true);
out:
    tt_release(qc);
    tt_release(kc);
    tt_release(vc);
    tt_release(gc);
    return return3(f, st, outs);
}

static tt_status setup_sdpa(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                            const tt_value *out, int nout)
{
    (void)nin, (void)out, (void)nout;
    tt_status st = tt_ctx_save_for_backward(ctx, 3, (tt_tensor *[]){in[0].u.t, in[1].u.t, in[2].u.t});
    if (!st)
        st = tt_ctx_save_int(ctx, "is_causal", in[5].u.b);
    return st ? st : tt_ctx_save_float(ctx, "scale", in[6].kind == TT_V_NONE ? 0 : in[6].u.f);
}

static tt_status sdpa_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                               tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    int64_t causal;
    double scale;
    tt_status st;
    if ((st = tt_ctx_get_int(ctx, "is_causal", &causal)) ||
        (st = tt_ctx_get_float(ctx, "scale", &scale)))
        return st;
    tt_value outs[3] = {tt_v_none(), tt_v_none(), tt_v_none()};
    st = tt_op_call(tt__op(TT_OP_SCALED_DOT_PRODUCT_ATTENTION_BACKWARD),
                    TT_ARGS(tt_v_tensor(g[0]), tt_v_tensor(tt_ctx_saved(ctx, 0)),
                            tt_v_tensor(tt_ctx_saved(ctx, 1)), tt_v_tensor(tt_ctx_saved(ctx, 2)),
                            tt_v_bool(causal != 0), scale > 0 ? tt_v_float(scale) : tt_v_none()),
                    outs, 3);
    if (st)
        return st;
    put_grads3(ctx, gi, outs, (int[]){0, 1, 2});
    return TT_OK;
}

/* ================================================================ AdamW */

typedef struct {
    double lr, b1, b2, eps, wd, bc1, bc2;
} adamw_k;

/* PyTorch's AdamW (decoupled weight decay), per element:
 *   p *= 1 - lr wd; m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
 *   p -= lr (m / bc1) / (sqrt(v / bc2) + eps), bc = 1 - beta^step.
 * Operands: param, grad, exp_avg, exp_avg_sq. */
/* Contiguous operands take a loop over plain arrays, which vectorizes
 * (the library is built without errno for libm, so sqrt does too); the
 * update is one pass over four arrays of every parameter. */
#define ADAMW_LOOP(T_, SQRT)                                                   \
    CPU_CLONES static void adamw_loop_##T_(                                    \
        char **d, const int64_t *st, int64_t n, void *vk)                      \
    {                                                                          \
        const adamw_k *k = vk;                                                 \
        T_ decay = (T_)(1 - k->lr * k->wd), b1 = (T_)k->b1, b2 = (T_)k->b2;    \
        T_ step = (T_)(k->lr / k->bc1), rbc2 = (T_)(1 / sqrt(k->bc2)), eps = (T_)k->eps; \
        const int64_t es = (int64_t)sizeof(T_);                                \
        if (st[0] == es && st[1] == es && st[2] == es && st[3] == es) {        \
            T_ *restrict p = (T_ *)d[0], *restrict m = (T_ *)d[2], *restrict v = (T_ *)d[3]; \
            const T_ *restrict g = (const T_ *)d[1];                           \
            for (int64_t i = 0; i < n; i++) {                                  \
                m[i] = b1 * m[i] + (1 - b1) * g[i];                            \
                v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];                     \
                p[i] = p[i] * decay - step * m[i] / (SQRT(v[i]) * rbc2 + eps); \
            }                                                                  \
            return;                                                            \
        }                                                                      \
        for (int64_t i = 0; i < n; i++) {                                      \
            T_ *p = (T_ *)(d[0] + i * st[0]);                                  \
            T_ g = *(const T_ *)(d[1] + i * st[1]);                            \
            T_ *m = (T_ *)(d[2] + i * st[2]), *v = (T_ *)(d[3] + i * st[3]);   \
            *m = b1 * *m + (1 - b1) * g;                                       \
            *v = b2 * *v + (1 - b2) * g * g;                                   \
            *p = *p * decay - step * *m / (SQRT(*v) * rbc2 + eps);             \
        }                                                                      \
    }
ADAMW_LOOP(float, sqrtf)
ADAMW_LOOP(double, sqrt)

/* tt::adamw_step(param!, grad, exp_avg!, exp_avg_sq!, step, lr, beta1, beta2,
 * eps, weight_decay) -> (): one AdamW update of a parameter and its two
 * moment buffers in one pass. step is a 0-dim tensor holding the step
 * number (1 for the first update; the caller counts it), a tensor so that a
 * compiled training step reads it anew at every replay. */
static tt_status adamw_kernel(tt_frame *f)
{
    tt_tensor *ts[5];
    adamw_k k;
    tt_status st;
    const char *op = tt__op_label(TT_OP_ADAMW_STEP);
    for (int i = 0; i < 5; i++)
        if ((st = tt_arg_tensor(f, i, &ts[i])))
            return st;
    if ((st = tt_arg_float(f, 5, &k.lr)) || (st = tt_arg_float(f, 6, &k.b1)) ||
        (st = tt_arg_float(f, 7, &k.b2)) || (st = tt_arg_float(f, 8, &k.eps)) ||
        (st = tt_arg_float(f, 9, &k.wd)))
        return st;
    const char *names[4] = {"param", "grad", "exp_avg", "exp_avg_sq"};
    if ((st = want_float(op, "param", 1, ts[0])))
        return st;
    for (int i = 1; i < 4; i++)
        if ((st = want_same_dtype(op, names[i], i + 1, ts[i], ts[0])) ||
            (st = want_sizes(op, names[i], i + 1, ts[i], tt_ndim(ts[0]), tt_sizes(ts[0]))))
            return st;
    if (tt_ndim(ts[4]) != 0)
        return tt_error(TT_ESHAPE, "%s: argument 'step' (#5): expected a 0-dim tensor, got %d "
                                   "dims", op, tt_ndim(ts[4]));
    if (k.b1 < 0 || k.b1 >= 1 || k.b2 < 0 || k.b2 >= 1)
        return tt_error(TT_EINVAL, "%s: argument '%s': expected a value in [0, 1), got %g", op,
                        k.b1 < 0 || k.b1 >= 1 ? "beta1" : "beta2",
                        k.b1 < 0 || k.b1 >= 1 ? k.b1 : k.b2);
    if (tt_frame_is_fake(f) || tt__any_fake(5, (const tt_tensor *const *)ts))
        return TT_OK;
    double step = tt__load(tt__ptr(ts[4]), tt_dtype_of(ts[4]));
    if (!(step >= 1))
        return tt_error(TT_EINVAL, "%s: argument 'step' (#5): expected a step number >= 1, "
                                   "got %g", op, step);
    k.bc1 = 1 - pow(k.b1, step);
    k.bc2 = 1 - pow(k.b2, step);
    return tt_for_each(4, (tt_tensor *[]){ts[0], ts[1], ts[2], ts[3]},
                       tt_dtype_of(ts[0]) == TT_F64 ? adamw_loop_double : adamw_loop_float, &k);
}

/* ========================================================== global norm */

typedef struct {
    const char *p;
    int64_t n;
    bool f64;
    double *part;
} norm_plan;

static void norm_task(int64_t b, int64_t e, void *vp)
{
    const norm_plan *p = vp;
    int64_t per = (p->n + CHUNKS - 1) / CHUNKS;
    for (int64_t c = b; c < e; c++) {
        int64_t i0 = c * per, i1 = (c + 1) * per < p->n ? (c + 1) * per : p->n;
        double s = 0;
        if (p->f64)
            for (int64_t i = i0; i < i1; i++)
                s += ((const double *)p->p)[i] * ((const double *)p->p)[i];
        else {
            float sf = 0; /* blocks of floats, each added in double */
            for (int64_t i = i0; i < i1; i++) {
                float x = ((const float *)p->p)[i];
                sf += x * x;
                if ((i & 1023) == 1023)
                    s += sf, sf = 0;
            }
            s += sf;
        }
        p->part[c] = s;
    }
}

/* tt::global_norm(Tensor[] tensors) -> Tensor: the 2-norm of all elements
 * of all tensors (what torch.nn.utils.clip_grad_norm_ computes), 0-dim, of
 * the first tensor's dtype; no gradient flows through it. */
static tt_status global_norm_kernel(tt_frame *f)
{
    tt_tensor *const *ts;
    int n;
    tt_status st = tt_arg_tensors(f, 0, &ts, &n);
    const char *op = tt__op_label(TT_OP_GLOBAL_NORM);
    if (st)
        return st;
    if (n == 0)
        return tt_error(TT_EINVAL, "%s: argument 'tensors' (#1): expected at least one tensor",
                        op);
    for (int i = 0; i < n; i++) {
        if ((st = want_float(op, "tensors", 1, ts[i])))
            return st;
    }
    bool fake = tt_frame_is_fake(f) || tt__any_fake(n, (const tt_tensor *const *)ts);
    tt_tensor *out = tt__ops_new(fake, 0, NULL, NULL, tt_dtype_of(ts[0]));
    if (!out || fake)
        return out ? tt_return(f, 0, out) : tt_errcode();
    double total = 0, part[CHUNKS];
    for (int i = 0; i < n && !st; i++) {
        tt_tensor *c = contig(ts[i]);
        if (!c) {
            st = tt_errcode();
            break;
        }
        norm_plan p = {.p = tt__ptr(c), .n = tt_numel(c), .f64 = tt_dtype_of(c) == TT_F64,
                       .part = part};
        tt_parallel_for(CHUNKS, p.n > 65536 ? 1 : CHUNKS, norm_task, &p);
        for (int j = 0; j < CHUNKS; j++)
            total += part[j];
        tt_release(c);
    }
    if (st) {
        tt_release(out);
        return st;
    }
    tt__store(tt__ptr(out), tt_dtype_of(out), sqrt(total));
    return tt_return(f, 0, out);
}

static const tt__builtin_row rows[] = {TT__TRANSFORMER_ROWS};

tt_status tt__register_transformer(tt_library *lib)
{
    return TT__DEFINE_ROWS(lib, rows);
}

/* ---------------------------------------------------------- typed wrappers */

tt_tensor *tt_embedding(const tt_tensor *weight, const tt_tensor *indices)
{
    return tt__call_op(TT_OP_EMBEDDING, TT_ARGS(tt_v_tensor(weight), tt_v_tensor(indices)));
}

tt_tensor *tt_layer_norm(const tt_tensor *x, int ndims, const int64_t *normalized_shape,
                         const tt_tensor *weight, const tt_tensor *bias, double eps)
{
    return tt__call_op(TT_OP_LAYER_NORM,
                       TT_ARGS(tt_v_tensor(x), tt_v_ints(ndims, normalized_shape),
                               weight ? tt_v_tensor(weight) : tt_v_none(),
                               bias ? tt_v_tensor(bias) : tt_v_none(), tt_v_float(eps)));
}

tt_tensor *tt_scaled_dot_product_attention(const tt_tensor *q, const tt_tensor *k,
                                           const tt_tensor *v, bool is_causal, double scale)
{
    return tt__call_op(TT_OP_SCALED_DOT_PRODUCT_ATTENTION,
                       TT_ARGS(tt_v_tensor(q), tt_v_tensor(k), tt_v_tensor(v), tt_v_none(),
                               tt_v_float(0), tt_v_bool(is_causal),
                               scale > 0 ? tt_v_float(scale) : tt_v_none()));
}

tt_status tt_adamw_(tt_tensor *param, const tt_tensor *grad, tt_tensor *exp_avg,
                    tt_tensor *exp_avg_sq, const tt_tensor *step, const tt_adamw_opts *o)
{
    if (!o)
        return tt_error(TT_EINVAL, "tt_adamw_: argument 'opts' is NULL (expected lr, betas, "
                                   "eps and weight_decay)");
    return tt_op_call(tt__op(TT_OP_ADAMW_STEP),
                      TT_ARGS(tt_v_tensor(param), tt_v_tensor(grad), tt_v_tensor(exp_avg),
                              tt_v_tensor(exp_avg_sq), tt_v_tensor(step), tt_v_float(o->lr),
                              tt_v_float(o->beta1), tt_v_float(o->beta2), tt_v_float(o->eps),
                              tt_v_float(o->weight_decay)),
                      NULL, 0);
}

tt_tensor *tt_global_norm(int n, tt_tensor *const *ts)
{
    return tt__call_op(TT_OP_GLOBAL_NORM, TT_ARGS(tt_v_tensors(n, ts)));
}
