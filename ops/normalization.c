/* Built-in ops: layer_norm and its derivative layer_norm_backward, and
 * PyTorch's native_layer_norm (which also returns each row's mean and
 * rstd) and native_layer_norm_backward (which takes them): one forward and
 * one backward kernel serve both pairs (transformer_impl.h says how these
 * kernels are built). */
#include "transformer_impl.h"
#include "tt_nn.h"

#include <float.h>

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
    double *m_out, *r_out;      /* each row's mean and rstd (native forward), or NULL */
    const double *m_in, *r_in;  /* the given ones (native backward), or NULL: recomputed */
    int64_t rows, n;
    double eps;
} ln_plan;

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
            if (p->m_out)                                                      \
                p->m_out[r] = m, p->r_out[r] = rs;                             \
            T mt = (T)m, rt = (T)rs;                                           \
            for (int64_t j = 0; j < p->n; j++) {                               \
                T v = (x[j] - mt) * rt;                                        \
                y[j] = v * (w ? w[j] : (T)1) + (bb ? bb[j] : (T)0);            \
            }                                                                  \
        }                                                                      \
    }
LN_FWD(float)
LN_FWD(double)

/* The rows of a layer norm of x over normalized_shape (nns, ns): their
 * count and length, on concrete sizes. */
static void ln_rows(const tt_tensor *x, int nns, const int64_t *ns, int64_t *rows, int64_t *n)
{
    *n = 1;
    for (int i = 0; i < nns; i++)
        *n *= ns[i];
    *rows = *n ? tt_numel(x) / *n : 0;
    if (!*n) { /* rows of no element: the leading sizes' product */
        *rows = 1;
        for (int d = 0; d < tt_ndim(x) - nns; d++)
            *rows *= tt_sizes(x)[d];
    }
}

/* Layer norm: normalizes each row over the trailing dims named by
 * normalized_shape ((x - mean) / sqrt(var + eps), the biased variance),
 * then multiplies by weight and adds bias when given. out[0] is contiguous,
 * with input's sizes; with `stats` (native_layer_norm) out[1] and out[2]
 * are the rows' mean and rstd, of input's sizes with the normalized dims
 * 1, as PyTorch. New references, or an error. */
static tt_status ln_forward(const char *op, const tt_tensor *x, int nns, const int64_t *ns,
                            const tt_tensor *w, const tt_tensor *b, double eps, bool fake,
                            bool stats, tt_tensor **out)
{
    tt_status st;
    out[0] = out[1] = out[2] = NULL;
    if ((st = ln_check(op, x, nns, ns, w, b)))
        return st;
    fake = fake || is_fake(x) || is_fake(w) || is_fake(b);
    tt_dtype dt = tt_dtype_of(x);
    out[0] = tt__ops_new(fake, tt_ndim(x), tt_sizes(x), NULL, dt);
    if (stats) {
        tt_size ssz[TT_MAX_DIMS];
        for (int d = 0; d < tt_ndim(x); d++)
            ssz[d] = d < tt_ndim(x) - nns ? tt_sizes(x)[d] : 1;
        out[1] = tt__ops_new(fake, tt_ndim(x), ssz, NULL, dt);
        out[2] = tt__ops_new(fake, tt_ndim(x), ssz, NULL, dt);
    }
    if (!out[0] || (stats && (!out[1] || !out[2])))
        goto fail;
    if (fake)
        return TT_OK;
    tt_tensor *xc = contig(x), *wc = w ? contig(w) : NULL, *bc = b ? contig(b) : NULL;
    int64_t rows, n;
    ln_rows(x, nns, ns, &rows, &n);
    double *sv = stats ? tt__malloc(sizeof(double) * (size_t)(2 * rows + 1)) : NULL;
    bool ok = xc && (!w || wc) && (!b || bc); /* else the failed copy set the error */
    if (ok && stats && !sv)
        ok = !tt_error(TT_ENOMEM, "%s: out of memory for the rows' statistics", op);
    if (ok) {
        ln_plan p = {.x = tt__ptr(xc), .w = wc ? tt__ptr(wc) : NULL,
                     .b = bc ? tt__ptr(bc) : NULL, .y = tt__ptr(out[0]), .rows = rows, .n = n,
                     .eps = eps, .m_out = sv, .r_out = sv ? sv + rows : NULL};
        int64_t grain = 16384 / (n ? n : 1) + 1;
        if (n)
            tt_parallel_for(p.rows, grain, dt == TT_F64 ? ln_fwd_double : ln_fwd_float, &p);
        for (int64_t r = 0; stats && r < rows; r++) {
            /* a row of no element: mean 0, rstd 1 / sqrt(eps), as ln_stats */
            double m = n ? sv[r] : 0, rs = n ? sv[rows + r] : 1 / sqrt(eps);
            tt__store(tt__ptr(out[1]) + r * (int64_t)tt_dtype_size(dt), dt, m);
            tt__store(tt__ptr(out[2]) + r * (int64_t)tt_dtype_size(dt), dt, rs);
        }
    }
    tt__free(sv);
    tt_release(xc);
    tt_release(wc);
    tt_release(bc);
    if (ok)
        return TT_OK;
fail:
    return drop3(out);
}

/* tt::layer_norm: ln_forward's output alone. */
static tt_tensor *layer_norm(const tt_tensor *x, int nns, const int64_t *ns,
                             const tt_tensor *w, const tt_tensor *b, double eps, bool fake)
{
    tt_tensor *out[3];
    if (ln_forward(tt__op_label(TT_OP_LAYER_NORM), x, nns, ns, w, b, eps, fake, false, out))
        return NULL;
    return out[0];
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
    tt_tensor *y = layer_norm(x, nns, ns, w, b, eps, tt_frame_is_fake(f));
    return y ? tt_return(f, 0, y) : tt_errcode();
}

/* tt::native_layer_norm -> (output, mean, rstd) */
static tt_status native_layer_norm_kernel(tt_frame *f)
{
    tt_tensor *x, *w, *b, *out[3];
    const int64_t *ns;
    int nns;
    double eps;
    tt_status st = ln_args(f, 0, &x, &ns, &nns, &w, &b, &eps);
    if (st || (st = ln_forward(tt__op_label(TT_OP_NATIVE_LAYER_NORM), x, nns, ns, w, b, eps,
                               tt_frame_is_fake(f), true, out)))
        return st;
    return return3(f, TT_OK, out);
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
                if (p->m_in)                                                   \
                    m = p->m_in[r], rs = p->r_in[r];                           \
                else                                                           \
                    ln_stats_##T(x, n, p->eps, &m, &rs);                       \
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
/* The backward of both layer norms into outs[] (new references): with
 * mean and rstd (native_layer_norm_backward) the rows' statistics are
 * read from them, else recomputed from input. */
static tt_status ln_backward(const char *op, const tt_tensor *g, const tt_tensor *x, int nns,
                             const int64_t *ns, const tt_tensor *w, const tt_tensor *b,
                             double eps, const tt_tensor *mean, const tt_tensor *rstd, bool fake,
                             tt_tensor **outs)
{
    tt_status st;
    outs[0] = outs[1] = outs[2] = NULL;
    if ((st = ln_check(op, x, nns, ns, w, b)) ||
        (st = want_sizes(op, "grad_out", 1, g, tt_ndim(x), tt_sizes(x))) ||
        (st = want_same_dtype(op, "grad_out", 1, g, x)))
        return st;
    if (mean) {
        tt_size ssz[TT_MAX_DIMS];
        for (int d = 0; d < tt_ndim(x); d++)
            ssz[d] = d < tt_ndim(x) - nns ? tt_sizes(x)[d] : 1;
        if ((st = want_sizes(op, "mean", 4, mean, tt_ndim(x), ssz)) ||
            (st = want_same_dtype(op, "mean", 4, mean, x)) ||
            (st = want_sizes(op, "rstd", 5, rstd, tt_ndim(x), ssz)) ||
            (st = want_same_dtype(op, "rstd", 5, rstd, x)))
            return st;
    }
    fake = fake || is_fake(g) || is_fake(x) || is_fake(w) || is_fake(mean) || is_fake(rstd);
    tt_dtype dt = tt_dtype_of(x);
    outs[0] = tt__ops_new(fake, tt_ndim(x), tt_sizes(x), NULL, dt);
    outs[1] = tt__ops_new(fake, nns, ns, NULL, dt);
    outs[2] = tt__ops_new(fake, nns, ns, NULL, dt);
    tt_tensor *xc = NULL, *gc = NULL, *wc = NULL, *mc = NULL, *rc = NULL;
    double *part = NULL;
    if (!outs[0] || !outs[1] || !outs[2]) {
        st = tt_errcode();
        goto out;
    }
    if (fake)
        goto out;
    xc = contig(x), gc = contig(g), wc = w ? contig(w) : NULL;
    if (mean) { /* f64 contiguous copies: the kernel reads the stats as doubles */
        mc = tt_to_dtype(mean, TT_F64), rc = tt_to_dtype(rstd, TT_F64);
        tt_tensor *m2 = mc ? contig(mc) : NULL, *r2 = rc ? contig(rc) : NULL;
        tt_release(mc), tt_release(rc);
        mc = m2, rc = r2;
    }
    int64_t rows, n;
    ln_rows(x, nns, ns, &rows, &n);
    part = tt__malloc(sizeof(double) * 2 * CHUNKS * (size_t)(n ? n : 1));
    if (!xc || !gc || (w && !wc) || (mean && (!mc || !rc)) || !part) {
        st = tt_errcode() ? tt_errcode() : TT_ENOMEM;
        goto out;
    }
    memset(part, 0, sizeof(double) * 2 * CHUNKS * (size_t)(n ? n : 1));
    ln_plan p = {.x = tt__ptr(xc), .g = tt__ptr(gc), .w = wc ? tt__ptr(wc) : NULL,
                 .dx = tt__ptr(outs[0]), .dw = part, .db = part + CHUNKS * n,
                 .m_in = mc ? (const double *)tt__ptr(mc) : NULL,
                 .r_in = rc ? (const double *)tt__ptr(rc) : NULL,
                 .rows = n ? rows : 0, .n = n, .eps = eps};
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
    tt_release(mc);
    tt_release(rc);
    if (st)
        for (int i = 0; i < 3; i++)
            outs[i] = tt_release(outs[i]);
    return st;
}

static tt_status layer_norm_backward_kernel(tt_frame *f)
{
    tt_tensor *g, *x, *w, *b, *outs[3];
    const int64_t *ns;
    int nns;
    double eps;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &g)) || (st = ln_args(f, 1, &x, &ns, &nns, &w, &b, &eps)) ||
        (st = ln_backward(tt__op_label(TT_OP_LAYER_NORM_BACKWARD), g, x, nns, ns, w, b, eps,
                          NULL, NULL, tt_frame_is_fake(f), outs)))
        return st;
    return return3(f, TT_OK, outs);
}

/* tt::native_layer_norm_backward(grad_out, input, normalized_shape, mean,
 * rstd, weight?, bias?, output_mask) -> (grad_input, grad_weight,
 * grad_bias): all three whatever output_mask says (the schema's results
 * are not optional); grad_weight and grad_bias have normalized_shape. */
static tt_status native_layer_norm_backward_kernel(tt_frame *f)
{
    tt_tensor *g, *x, *mean, *rstd, *w, *b, *outs[3];
    const int64_t *ns;
    int nns;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &g)) || (st = tt_arg_tensor(f, 1, &x)) ||
        (st = tt_arg_ints(f, 2, &ns, &nns)) || (st = tt_arg_tensor(f, 3, &mean)) ||
        (st = tt_arg_tensor(f, 4, &rstd)) || (st = tt_arg_tensor(f, 5, &w)) ||
        (st = tt_arg_tensor(f, 6, &b)))
        return st;
    if ((st = want_output_mask3(f, 7)))
        return st;
    if ((st = ln_backward(tt__op_label(TT_OP_NATIVE_LAYER_NORM_BACKWARD), g, x, nns, ns, w, b,
                          0, mean, rstd, tt_frame_is_fake(f), outs)))
        return st;
    return return3(f, TT_OK, outs);
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

/* native_layer_norm saves input, weight, bias (None: the input, never read
 * back) and the mean and rstd it returned. */
static tt_status setup_native_layer_norm(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                                         const tt_value *out, int nout)
{
    (void)nin, (void)nout;
    tt_tensor *x = in[0].u.t;
    tt_tensor *w = in[2].kind == TT_V_TENSOR ? in[2].u.t : NULL;
    tt_tensor *b = in[3].kind == TT_V_TENSOR ? in[3].u.t : NULL;
    tt_status st = tt_ctx_save_for_backward(
        ctx, 5, (tt_tensor *[]){x, w ? w : x, b ? b : x, out[1].u.t, out[2].u.t});
    if (!st)
        st = tt_ctx_save_ints(ctx, "normalized_shape", in[1].n, in[1].u.ints);
    return st ? st : tt_ctx_save_int(ctx, "affine", (w ? 1 : 0) | (b ? 2 : 0));
}

static tt_status native_layer_norm_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                            tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    const int64_t *ns;
    int nns;
    int64_t affine;
    tt_status st;
    if ((st = tt_ctx_get_ints(ctx, "normalized_shape", &ns, &nns)) ||
        (st = tt_ctx_get_int(ctx, "affine", &affine)))
        return st;
    bool mask[3] = {true, (affine & 1) != 0, (affine & 2) != 0};
    tt_value outs[3] = {tt_v_none(), tt_v_none(), tt_v_none()};
    st = tt_op_call(tt__op(TT_OP_NATIVE_LAYER_NORM_BACKWARD),
                    TT_ARGS(tt_v_tensor(g[0]), tt_v_tensor(tt_ctx_saved(ctx, 0)),
                            tt_v_ints(nns, ns), tt_v_tensor(tt_ctx_saved(ctx, 3)),
                            tt_v_tensor(tt_ctx_saved(ctx, 4)),
                            affine & 1 ? tt_v_tensor(tt_ctx_saved(ctx, 1)) : tt_v_none(),
                            affine & 2 ? tt_v_tensor(tt_ctx_saved(ctx, 2)) : tt_v_none(),
                            tt_v_bools(3, mask)),
                    outs, 3);
    if (st)
        return st;
    put_grads3(ctx, gi, outs, (int[]){0, affine & 1 ? 2 : -1, affine & 2 ? 3 : -1});
    return TT_OK;
}

/* ------------------------------------------------------------ rms_norm */

/* rms_norm's eps: the given one, or with None the epsilon of input's
 * dtype (torch.finfo(dtype).eps), as PyTorch 2.4's F.rms_norm. */
static tt_status rms_eps(tt_frame *f, int i, tt_dtype dt, double *eps)
{
    if (tt_frame_nargs(f) <= i || tt_arg_is_none(f, i)) {
        *eps = dt == TT_F64 ? DBL_EPSILON : FLT_EPSILON;
        return TT_OK;
    }
    return tt_arg_float(f, i, eps);
}

/* The mean of a row's squares in double, then 1 / sqrt(ms + eps). */
#define RMS_RSTD(T)                                                            \
    static inline double rms_rstd_##T(const T *restrict x, int64_t n, double eps) \
    {                                                                          \
        return 1.0 / sqrt((n ? row_dot_##T(x, x, n) / (double)n : 0) + eps);   \
    }
RMS_RSTD(float)
RMS_RSTD(double)

/* y = (x * rstd) * w, rounded to T at each step as PyTorch's composite
 * (x.mul(rsqrt(...)).type_as(x), then mul_(weight)). */
#define RMS_FWD(T)                                                             \
    CPU_CLONES static void rms_fwd_##T(int64_t b0, int64_t e0, void *vp)       \
    {                                                                          \
        const ln_plan *p = vp;                                                 \
        const T *w = (const T *)p->w;                                          \
        for (int64_t r = b0; r < e0; r++) {                                    \
            const T *restrict x = (const T *)p->x + r * p->n;                  \
            T *restrict y = (T *)p->y + r * p->n;                              \
            T rt = (T)rms_rstd_##T(x, p->n, p->eps);                           \
            for (int64_t j = 0; j < p->n; j++) {                               \
                T v = x[j] * rt;                                               \
                y[j] = w ? v * w[j] : v;                                       \
            }                                                                  \
        }                                                                      \
    }
RMS_FWD(float)
RMS_FWD(double)

/* rms_norm's checks: ln_check's without a bias. */
static tt_status rms_check(const char *op, const tt_tensor *x, int nns, const int64_t *ns,
                           const tt_tensor *w)
{
    return ln_check(op, x, nns, ns, w, NULL);
}

/* tt::rms_norm: each row over the trailing dims normalized_shape times
 * 1 / sqrt(mean(x^2) + eps), then times weight when given. One pass per
 * row (the row stays in cache between its sum and its scaling), rows in
 * parallel. The output has input's sizes and elementwise layout (as the
 * composition PyTorch 2.4 runs: a transposed input gives a transposed
 * output); a non-contiguous one is written through a contiguous block. */
static tt_tensor *rms_norm(const tt_tensor *x, int nns, const int64_t *ns, const tt_tensor *w,
                           double eps, bool fake)
{
    const char *op = tt__op_label(TT_OP_RMS_NORM);
    if (rms_check(op, x, nns, ns, w))
        return NULL;
    fake = fake || is_fake(x) || is_fake(w);
    tt_dtype dt = tt_dtype_of(x);
    tt_size strides[TT_MAX_DIMS];
    tt__elementwise_strides(1, &x, tt_ndim(x), tt_sizes(x), strides);
    tt_tensor *y = tt__ops_new(fake, tt_ndim(x), tt_sizes(x), strides, dt);
    if (!y || fake)
        return y;
    int64_t rows, n;
    ln_rows(x, nns, ns, &rows, &n);
    if (!n || !rows)
        return y;
    tt_tensor *xc = contig(x), *wc = w ? contig(w) : NULL;
    tt_tensor *yc = tt_is_contiguous(y) ? tt_retain(y)
                                        : tt__ops_new(false, tt_ndim(x), tt_sizes(x), NULL, dt);
    tt_status st = xc && (!w || wc) && yc ? TT_OK : tt_errcode() ? tt_errcode() : TT_ENOMEM;
    if (!st) {
        ln_plan p = {.x = tt__ptr(xc), .w = wc ? tt__ptr(wc) : NULL, .y = tt__ptr(yc),
                     .rows = rows, .n = n, .eps = eps};
        tt_parallel_for(rows, 16384 / n + 1, dt == TT_F64 ? rms_fwd_double : rms_fwd_float,
                        &p);
        if (yc != y)
            st = tt__copy_raw(y, yc);
    }
    tt_release(xc);
    tt_release(wc);
    tt_release(yc);
    if (st)
        y = tt_release(y);
    return y;
}

static tt_status rms_norm_kernel(tt_frame *f)
{
    tt_tensor *x, *w;
    const int64_t *ns;
    int nns;
    double eps;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &x)) || (st = tt_arg_ints(f, 1, &ns, &nns)) ||
        (st = tt_arg_tensor(f, 2, &w)) || (st = rms_eps(f, 3, tt_dtype_of(x), &eps)))
        return st;
    tt_tensor *y = rms_norm(x, nns, ns, w, eps, tt_frame_is_fake(f));
    return y ? tt_return(f, 0, y) : tt_errcode();
}

/* With r = rstd of the row, dxh = dy * w:
 *   dx = r * dxh - x * r^3 * mean(dxh * x),  dw += dy * x * r
 * (the rows of chunk c add their dw into partial c). */
#define RMS_BWD(T)                                                             \
    CPU_CLONES static void rms_bwd_##T(int64_t c0, int64_t c1, void *vp)       \
    {                                                                          \
        const ln_plan *p = vp;                                                 \
        const T *w = (const T *)p->w;                                          \
        int64_t per = (p->rows + CHUNKS - 1) / CHUNKS, n = p->n;               \
        int64_t body = n - n % LN_LANES;                                       \
        for (int64_t c = c0; c < c1; c++) {                                    \
            double *restrict dw = p->dw + c * n;                               \
            int64_t r1 = (c + 1) * per < p->rows ? (c + 1) * per : p->rows;    \
            for (int64_t r = c * per; r < r1; r++) {                           \
                const T *restrict x = (const T *)p->x + r * n;                 \
                const T *restrict g = (const T *)p->g + r * n;                 \
                T *restrict dx = (T *)p->dx + r * n;                           \
                double rs = rms_rstd_##T(x, n, p->eps), s[LN_LANES] = {0};     \
                for (int64_t j0 = 0; j0 < n; j0 += LN_LANES) {                 \
                    int lanes = j0 < body ? LN_LANES : (int)(n - body);        \
                    for (int l = 0; l < lanes; l++) {                          \
                        int64_t j = j0 + l;                                    \
                        double dxh = (double)g[j] * (w ? (double)w[j] : 1.0);  \
                        s[l] += dxh * (double)x[j];                            \
                        dw[j] += (double)g[j] * (double)x[j] * rs;             \
                    }                                                          \
                }                                                              \
                double a = lanes_total(s) / (double)n * rs * rs * rs;          \
                for (int64_t j = 0; j < n; j++) {                              \
                    double dxh = (double)g[j] * (w ? (double)w[j] : 1.0);      \
                    dx[j] = (T)(rs * dxh - (double)x[j] * a);                  \
                }                                                              \
            }                                                                  \
        }                                                                      \
    }
RMS_BWD(float)
RMS_BWD(double)

/* tt::rms_norm_backward(grad_out, input, normalized_shape, weight?, eps?)
 * -> (grad_input, grad_weight): one kernel, each row's rstd recomputed
 * from input; grad_weight has normalized_shape (computed whether or not
 * weight was given). */
static tt_status rms_backward(const tt_tensor *g, const tt_tensor *x, int nns, const int64_t *ns,
                              const tt_tensor *w, double eps, bool fake, tt_tensor **outs)
{
    const char *op = tt__op_label(TT_OP_RMS_NORM_BACKWARD);
    tt_status st;
    outs[0] = outs[1] = NULL;
    if ((st = rms_check(op, x, nns, ns, w)) ||
        (st = want_sizes(op, "grad_out", 1, g, tt_ndim(x), tt_sizes(x))) ||
        (st = want_same_dtype(op, "grad_out", 1, g, x)))
        return st;
    fake = fake || is_fake(g) || is_fake(x) || is_fake(w);
    tt_dtype dt = tt_dtype_of(x);
    outs[0] = tt__ops_new(fake, tt_ndim(x), tt_sizes(x), NULL, dt);
    outs[1] = tt__ops_new(fake, nns, ns, NULL, dt);
    tt_tensor *xc = NULL, *gc = NULL, *wc = NULL;
    double *part = NULL;
    if (!outs[0] || !outs[1]) {
        st = tt_errcode();
        goto out;
    }
    if (fake)
        goto out;
    int64_t rows, n;
    ln_rows(x, nns, ns, &rows, &n);
    xc = contig(x), gc = contig(g), wc = w ? contig(w) : NULL;
    part = tt__malloc(sizeof(double) * CHUNKS * (size_t)(n ? n : 1));
    if (!xc || !gc || (w && !wc) || !part) {
        st = tt_errcode() ? tt_errcode() : TT_ENOMEM;
        goto out;
    }
    memset(part, 0, sizeof(double) * CHUNKS * (size_t)(n ? n : 1));
    ln_plan p = {.x = tt__ptr(xc), .g = tt__ptr(gc), .w = wc ? tt__ptr(wc) : NULL,
                 .dx = tt__ptr(outs[0]), .dw = part, .rows = n ? rows : 0, .n = n, .eps = eps};
    tt_parallel_for(CHUNKS, 1, dt == TT_F64 ? rms_bwd_double : rms_bwd_float, &p);
    for (int64_t j = 0; j < n; j++) {
        double sw = 0;
        for (int c = 0; c < CHUNKS; c++)
            sw += part[c * n + j];
        tt__store(tt__ptr(outs[1]) + j * (int64_t)tt_dtype_size(dt), dt, sw);
    }
out:
    tt__free(part);
    tt_release(xc);
    tt_release(gc);
    tt_release(wc);
    if (st)
        outs[0] = tt_release(outs[0]), outs[1] = tt_release(outs[1]);
    return st;
}

static tt_status rms_norm_backward_kernel(tt_frame *f)
{
    tt_tensor *g, *x, *w, *outs[2];
    const int64_t *ns;
    int nns;
    double eps;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &g)) || (st = tt_arg_tensor(f, 1, &x)) ||
        (st = tt_arg_ints(f, 2, &ns, &nns)) || (st = tt_arg_tensor(f, 3, &w)) ||
        (st = rms_eps(f, 4, tt_dtype_of(x), &eps)) ||
        (st = rms_backward(g, x, nns, ns, w, eps, tt_frame_is_fake(f), outs)))
        return st;
    st = tt_return(f, 0, outs[0]); /* tt_return takes the reference, also when it fails */
    if (st) {
        tt_release(outs[1]);
        return st;
    }
    return tt_return(f, 1, outs[1]);
}

/* rms_norm saves input and weight (None: the input, never read back) and
 * eps, None resolved to the dtype's epsilon so the backward needs no rule
 * of its own for it. */
static tt_status setup_rms_norm(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                                const tt_value *out, int nout)
{
    (void)out, (void)nout;
    tt_tensor *x = in[0].u.t;
    tt_tensor *w = nin > 2 && in[2].kind == TT_V_TENSOR ? in[2].u.t : NULL;
    double eps = nin > 3 && in[3].kind != TT_V_NONE
                     ? in[3].u.f
                     : tt_dtype_of(x) == TT_F64 ? DBL_EPSILON : FLT_EPSILON;
    tt_status st = tt_ctx_save_for_backward(ctx, 2, (tt_tensor *[]){x, w ? w : x});
    if (!st)
        st = tt_ctx_save_ints(ctx, "normalized_shape", in[1].n, in[1].u.ints);
    if (!st)
        st = tt_ctx_save_int(ctx, "affine", w != NULL);
    return st ? st : tt_ctx_save_float(ctx, "eps", eps);
}

static tt_status rms_norm_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
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
    tt_tensor *w = affine ? tt_ctx_saved(ctx, 1) : NULL;
    tt_value outs[3] = {tt_v_none(), tt_v_none(), tt_v_none()};
    st = tt_op_call(tt__op(TT_OP_RMS_NORM_BACKWARD),
                    TT_ARGS(tt_v_tensor(g[0]), tt_v_tensor(tt_ctx_saved(ctx, 0)),
                            tt_v_ints(nns, ns), w ? tt_v_tensor(w) : tt_v_none(),
                            tt_v_float(eps)),
                    outs, 2);
    if (st)
        return st;
    put_grads3(ctx, gi, outs, (int[]){0, affine ? 2 : -1, -1});
    return TT_OK;
}

#undef TT__FAMILY_NORMALIZATION
#define TT__FAMILY_NORMALIZATION TT__ROW
static const tt__builtin_row rows[] = {TT__FAMILY_ROWS};

tt_status tt__register_normalization(tt_library *lib)
{
    return TT__DEFINE_ROWS(lib, rows);
}

/* ---------------------------------------------------------- typed wrappers */

tt_tensor *tt_layer_norm(const tt_tensor *x, int ndims, const int64_t *normalized_shape,
                         const tt_tensor *weight, const tt_tensor *bias, double eps)
{
    return tt__call_op(TT_OP_LAYER_NORM,
                       TT_ARGS(tt_v_tensor(x), tt_v_ints(ndims, normalized_shape),
                               weight ? tt_v_tensor(weight) : tt_v_none(),
                               bias ? tt_v_tensor(bias) : tt_v_none(), tt_v_float(eps)));
}

tt_tensor *tt_native_layer_norm(const tt_tensor *x, int ndims, const int64_t *normalized_shape,
                                const tt_tensor *weight, const tt_tensor *bias, double eps,
                                tt_tensor **mean, tt_tensor **rstd)
{
    tt_tensor *out[3] = {NULL, NULL, NULL};
    const tt_tensor *ts[3] = {x, weight ? weight : x, bias ? bias : x};
    if (mean)
        *mean = NULL;
    if (rstd)
        *rstd = NULL;
    tt_status st;
    if (x && tt__fast_path(TT_OP_NATIVE_LAYER_NORM, 3, ts)) {
        st = ln_forward(tt__op_label(TT_OP_NATIVE_LAYER_NORM), x, ndims, normalized_shape,
                        weight, bias, eps, false, true, out);
    } else {
        st = call_results(TT_OP_NATIVE_LAYER_NORM,
                          TT_ARGS(tt_v_tensor(x), tt_v_ints(ndims, normalized_shape),
                                  weight ? tt_v_tensor(weight) : tt_v_none(),
                                  bias ? tt_v_tensor(bias) : tt_v_none(), tt_v_float(eps)),
                          out, 3);
    }
    if (st)
        return NULL;
    /* mean and rstd, when asked for, are results as the output is */
    if (mean)
        *mean = out[1], out[1] = NULL;
    if (rstd)
        *rstd = out[2], out[2] = NULL;
    return first_result(out, 3);
}

tt_tensor *tt_rms_norm(const tt_tensor *x, int ndims, const int64_t *normalized_shape,
                       const tt_tensor *weight, double eps)
{
    const tt_tensor *ts[2] = {x, weight ? weight : x};
    if (x && eps >= 0 && tt__fast_path(TT_OP_RMS_NORM, 2, ts))
        return rms_norm(x, ndims, normalized_shape, weight, eps, false);
    return tt__call_op(TT_OP_RMS_NORM,
                       TT_ARGS(tt_v_tensor(x), tt_v_ints(ndims, normalized_shape),
                               weight ? tt_v_tensor(weight) : tt_v_none(),
                               eps >= 0 ? tt_v_float(eps) : tt_v_none()));
}
