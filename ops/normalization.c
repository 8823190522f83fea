/* Built-in ops: layer_norm and its derivative, layer_norm_backward
 * (transformer_impl.h says how these kernels are built). */
#include "transformer_impl.h"

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
