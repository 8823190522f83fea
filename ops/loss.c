/* Built-in ops: losses. cross_entropy of logits against class indices or
 * class probabilities, with PyTorch's weight, ignore_index and
 * label_smoothing, over [C], [N, C] or [N, C, d1, ...] logits.
 *
 * As in the other families, one function computes the output's metadata
 * and allocates it, and stops there for fake inputs (so the fake kernel is
 * the real one without the arithmetic); values that only data can reveal,
 * such as an out-of-range target, are checked on real inputs only. */
#include "ops_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define GRAIN 32768 /* elements per parallel task, at least */

typedef enum { RED_NONE, RED_MEAN, RED_SUM } reduction;

/* loss = logsumexp(row) - row[t], computed as log(sum(exp(x - max))) -
 * (x[t] - max) so that no exp overflows; the sum accumulates in double.
 * A row is C logits `st` bytes apart. */
#define CE_ROW(SUF, T, EXPF)                                                   \
    static double ce_row_##SUF(const char *p, int64_t C, int64_t st, int64_t t) \
    {                                                                          \
        T m = *(const T *)p;                                                   \
        for (int64_t c = 1; c < C; c++) {                                      \
            T v = *(const T *)(p + c * st);                                    \
            m = (v > m || isnan(v)) ? v : m;                                   \
        }                                                                      \
        double s = 0;                                                          \
        for (int64_t c = 0; c < C; c++)                                        \
            s += EXPF(*(const T *)(p + c * st) - m);                           \
        return log(s) - (double)(*(const T *)(p + t * st) - m);                \
    }
CE_ROW(f32, float, expf)
CE_ROW(f64, double, exp)

typedef struct {
    const char *x, *t;
    int64_t C, xs0, xs1, ts; /* strides in bytes */
    bool f64;
    double *loss;
} ce_plan;

/* logits is (N, C) with any strides, target (N,); loss is (N,). */
static void task_rows(int64_t b, int64_t e, void *vp)
{
    const ce_plan *p = vp;
    for (int64_t i = b; i < e; i++) {
        int64_t t = *(const int64_t *)(p->t + i * p->ts);
        const char *row = p->x + i * p->xs0;
        p->loss[i] = p->f64 ? ce_row_f64(row, p->C, p->xs1, t) : ce_row_f32(row, p->C, p->xs1, t);
    }
}

/* The arguments of cross_entropy and of its backward, checked:
 * self [C], [N, C] or [N, C, d1, ...] (the class dim is 1, or 0 for [C]);
 * target class indices (i64) of self's shape without the class dim, or
 * class probabilities of self's shape and dtype; weight [C] or NULL;
 * ignore_index (index targets only; -100 by default, never a class);
 * label_smoothing in [0, 1]. */
typedef struct {
    const tt_tensor *x, *t, *w;
    reduction red;
    int64_t ignore;
    double smooth;
    bool probs;               /* class-probability targets */
    int64_t N, C, S;          /* batch, classes, positions per batch row */
} ce_args;

static const char *const red_names[] = {[RED_NONE] = "none", [RED_MEAN] = "mean",
                                        [RED_SUM] = "sum"};

static tt_status ce_check(const char *name, ce_args *a, const char *red_s)
{
    char s1[128], s2[128];
    const tt_tensor *x = a->x, *t = a->t;
    if (!strcmp(red_s, "mean"))
        a->red = RED_MEAN;
    else if (!strcmp(red_s, "sum"))
        a->red = RED_SUM;
    else if (!strcmp(red_s, "none"))
        a->red = RED_NONE;
    else
        return tt_error(TT_EINVAL, "%s: argument 'reduction' (#3): expected 'mean', 'sum' or "
                                   "'none', got '%s'", name, red_s);
    tt_dtype dt = (tt_dtype)x->dtype;
    if (!tt_dtype_is_float(dt))
        return tt_error(TT_EDTYPE, "%s: argument 'self' (#1): expected floating point logits, "
                                   "got %s", name, tt_dtype_name(dt));
    if (x->ndim < 1)
        return tt_error(TT_ESHAPE, "%s: argument 'self' (#1): expected logits of shape [N, C, "
                                   "d1, ...], [N, C] or [C], got %s", name,
                        tt_shape_str(x, s1, sizeof s1));
    a->probs = tt_dtype_is_float((tt_dtype)t->dtype);
    if (a->probs && (tt_dtype)t->dtype != dt)
        return tt_error(TT_EDTYPE, "%s: argument 'target' (#2): class probabilities must have "
                                   "self's dtype %s, got %s", name, tt_dtype_name(dt),
                        tt_dtype_name((tt_dtype)t->dtype));
    if (!a->probs && (tt_dtype)t->dtype != TT_I64)
        return tt_error(TT_EDTYPE, "%s: argument 'target' (#2): expected i64 class indices or "
                                   "class probabilities, got %s", name,
                        tt_dtype_name((tt_dtype)t->dtype));
    int cd = x->ndim == 1 ? 0 : 1;
    bool shape_ok = a->probs ? t->ndim == x->ndim : t->ndim == x->ndim - 1;
    for (int d = 0, k = 0; shape_ok && d < x->ndim; d++) {
        if (d == cd && !a->probs)
            continue;
        shape_ok = tt__sz_eq(t->sizes[k++], x->sizes[d]);
    }
    if (!shape_ok) {
        if (a->probs)
            return tt_error(TT_ESHAPE, "%s: argument 'target' (#2): class probabilities must "
                                       "have self's shape %s, got %s", name,
                            tt_shape_str(x, s1, sizeof s1), tt_shape_str(t, s2, sizeof s2));
        const char *want = x->ndim == 1 ? "[]" : x->ndim == 2 ? "[N]" : "[N, d1, ...]";
        return tt_error(TT_ESHAPE, "%s: argument 'target' (#2): expected shape %s to match the "
                                   "batch of 'self' %s, got %s", name, want,
                        tt_shape_str(x, s1, sizeof s1), tt_shape_str(t, s2, sizeof s2));
    }
    a->C = x->sizes[cd];
    a->N = x->ndim >= 2 ? x->sizes[0] : 1;
    a->S = 1;
    for (int d = 2; d < x->ndim; d++) /* (symbolic in a fake call, which never reads it) */
        a->S = tt_sym_mul(a->S, x->sizes[d]);
    char c_str[64];
    tt_size_str(a->C, c_str, sizeof c_str);
    if (a->w && (a->w->ndim != 1 || !tt__sz_eq(a->w->sizes[0], a->C) ||
                 (tt_dtype)a->w->dtype != dt))
        return tt_error(TT_ESHAPE, "%s: argument 'weight': expected a %s tensor of one weight "
                                   "per class [%s], got %s %s", name, tt_dtype_name(dt),
                        c_str, tt_dtype_name((tt_dtype)a->w->dtype),
                        tt_shape_str(a->w, s1, sizeof s1));
    if (!(a->smooth >= 0 && a->smooth <= 1))
        return tt_error(TT_EINVAL, "%s: argument 'label_smoothing': expected a value in [0, 1], "
                                   "got %g", name, a->smooth);
    if (a->probs && a->ignore >= 0)
        return tt_error(TT_EINVAL, "%s: argument 'ignore_index': not supported with class "
                                   "probability targets (got %lld)", name, (long long)a->ignore);
    return TT_OK;
}

/* The loss's shape: self's without the class dim for "none", else 0-dim. */
static tt_tensor *ce_output(const ce_args *a, bool fake)
{
    tt_size sizes[TT_MAX_DIMS];
    int nd = 0;
    if (a->red == RED_NONE)
        for (int d = 0; d < a->x->ndim; d++)
            if (d != (a->x->ndim == 1 ? 0 : 1))
                sizes[nd++] = a->x->sizes[d];
    return tt__ops_new(fake, nd, sizes, NULL, (tt_dtype)a->x->dtype);
}

/* t as a new contiguous f64 tensor (or i64 for index targets). */
static tt_tensor *dense_copy(const tt_tensor *t, tt_dtype dt)
{
    tt_tensor *c = tt__empty_impl(t->ndim, t->sizes, NULL, dt, false);
    if (c && tt__copy_raw(c, t))
        c = tt_release(c);
    return c;
}

/* The general case, in f64 over contiguous copies: for each position
 * (n, s), logp = log_softmax over the classes and a per-class coefficient
 * a_c, the loss being -sum_c a_c logp_c:
 *   index target t:  a_c = (1 - ls) w_t [c == t] + ls / C w_c  (0 if ignored)
 *   probabilities q: a_c = w_c ((1 - ls) q_c + ls / C)
 * "mean" divides by sum w_t over the positions not ignored (index targets,
 * PyTorch's nll_loss rule), or by N*S (probabilities). With `grad` (the
 * backward), it writes d loss / d x = G (p_c A - a_c), A = sum_c a_c,
 * G the incoming gradient scaled by the reduction, into grad instead. */
typedef struct {
    double *x, *t, *w, *loss; /* x [N, C, S], t [N, S] or [N, C, S], w [C] */
    int64_t *ti;
    double *logp, *coef;      /* scratch [C] */
    double denom;
} ce_work;

static tt_status ce_general(const char *name, const ce_args *a, ce_work *k)
{
    int64_t N = a->N, C = a->C, S = a->S;
    double ls = a->smooth;
    k->denom = 0;
    for (int64_t n = 0; n < N; n++)
        for (int64_t s = 0; s < S; s++) {
            const double *xr = k->x + n * C * S + s;
            double m = -INFINITY, sum = 0;
            for (int64_t c = 0; c < C; c++)
                m = xr[c * S] > m || isnan(xr[c * S]) ? xr[c * S] : m;
            for (int64_t c = 0; c < C; c++)
                sum += exp(xr[c * S] - m);
            double lse = m + log(sum), loss = 0;
            for (int64_t c = 0; c < C; c++)
                k->logp[c] = xr[c * S] - lse;
            if (a->probs) {
                for (int64_t c = 0; c < C; c++) {
                    double q = k->t[n * C * S + c * S + s] * (1 - ls) + ls / (double)C;
                    k->coef[c] = (k->w ? k->w[c] : 1) * q;
                }
                k->denom += 1;
            } else {
                int64_t t = k->ti[n * S + s];
                if (t == a->ignore) {
                    for (int64_t c = 0; c < C; c++)
                        k->coef[c] = 0;
                } else {
                    if (t < 0 || t >= C)
                        return tt_error(TT_EINVAL, "%s: argument 'target' (#2): Target %lld is "
                                                   "out of bounds (expected class indices in "
                                                   "[0, %lld))", name, (long long)t,
                                        (long long)C);
                    for (int64_t c = 0; c < C; c++)
                        k->coef[c] = ls / (double)C * (k->w ? k->w[c] : 1);
                    double wt = k->w ? k->w[t] : 1;
                    k->coef[t] += (1 - ls) * wt;
                    k->denom += wt;
                }
            }
            for (int64_t c = 0; c < C; c++)
                loss -= k->coef[c] == 0 ? 0 : k->coef[c] * k->logp[c];
            k->loss[n * S + s] = loss;
            /* The backward's per-class factor p_c A - a_c, written over
             * this position's logits (the forward reads them no more). */
            double A = 0;
            for (int64_t c = 0; c < C; c++)
                A += k->coef[c];
            for (int64_t c = 0; c < C; c++)
                k->x[n * C * S + c * S + s] = exp(k->logp[c]) * A - k->coef[c];
        }
    return TT_OK;
}

static void ce_work_free(ce_work *k)
{
    tt__free(k->x);
    tt__free(k->t);
    tt__free(k->w);
    tt__free(k->ti);
    tt__free(k->loss);
    tt__free(k->logp);
    tt__free(k->coef);
}

/* Reads a tensor's elements (row-major) into a new f64 or i64 array. */
static void *read_dense(const tt_tensor *t, tt_dtype dt, tt_status *st)
{
    int64_t n = tt_numel(t);
    void *p = tt__malloc(8 * (size_t)(n ? n : 1));
    tt_tensor *c = p ? dense_copy(t, dt) : NULL;
    if (!c) {
        tt__free(p);
        *st = tt_errcode() ? tt_errcode() : TT_ENOMEM;
        return NULL;
    }
    memcpy(p, tt__ptr(c), 8 * (size_t)n);
    tt_release(c);
    return p;
}

/* Fills k for a (real tensors) and runs ce_general. */
static tt_status ce_run(const char *name, const ce_args *a, ce_work *k)
{
    tt_status st = TT_OK;
    memset(k, 0, sizeof *k);
    int64_t C = a->C ? a->C : 1, P = a->N * a->S;
    k->x = read_dense(a->x, TT_F64, &st);
    if (!st && a->probs)
        k->t = read_dense(a->t, TT_F64, &st);
    if (!st && !a->probs)
        k->ti = read_dense(a->t, TT_I64, &st);
    if (!st && a->w)
        k->w = read_dense(a->w, TT_F64, &st);
    if (!st) {
        k->loss = tt__malloc(sizeof(double) * (size_t)(P ? P : 1));
        k->logp = tt__malloc(sizeof(double) * (size_t)C);
        k->coef = tt__malloc(sizeof(double) * (size_t)C);
        if (!k->loss || !k->logp || !k->coef)
            st = tt_error(TT_ENOMEM, "%s: out of memory", name);
    }
    return st ? st : ce_general(name, a, k);
}

/* The weight's sum over the targets "mean" divides by (index targets) or
 * the number of positions (probabilities; 0/0 = NaN when empty, as
 * PyTorch's). */
static double ce_mean_denom(const ce_args *a, const ce_work *k)
{
    return a->probs ? (double)(a->N * a->S) : k->denom;
}

/* The fast path: [N, C] or [C] logits, index targets, no weight, no
 * smoothing, no target equal to ignore_index (the training case; rows in
 * parallel, the logits read in place). */
static bool ce_fast_applies(const ce_args *a)
{
    if (a->probs || a->w || a->smooth != 0 || a->x->ndim > 2)
        return false;
    const char *tp = tt__ptr(a->t);
    int64_t ts = a->t->ndim ? a->t->strides[0] * 8 : 0;
    for (int64_t i = 0; i < a->N; i++)
        if (*(const int64_t *)(tp + i * ts) == a->ignore)
            return false;
    return true;
}

/* tt::cross_entropy. Returns a new reference. */
static tt_tensor *cross_entropy(const ce_args *in, const char *red_s)
{
    const char *name = tt__op_label(TT_OP_CROSS_ENTROPY);
    ce_args a = *in;
    if (ce_check(name, &a, red_s))
        return NULL;
    const tt_tensor *x = a.x, *t = a.t;
    bool fake = x->storage->fake || t->storage->fake || (a.w && a.w->storage->fake);
    tt_tensor *out = ce_output(&a, fake);
    if (!out || fake)
        return out;
    tt_dtype dt = (tt_dtype)x->dtype;
    int64_t N = a.N, C = a.C;
    int64_t es = (int64_t)tt_dtype_size(dt);
    bool batched = x->ndim == 2;
    if (!ce_fast_applies(&a)) {
        ce_work k;
        tt_status st = ce_run(name, &a, &k);
        if (!st) {
            double s = 0;
            char *o = tt__ptr(out);
            for (int64_t i = 0; i < N * a.S; i++) {
                s += k.loss[i];
                if (a.red == RED_NONE)
                    tt__store(o + i * es, dt, k.loss[i]);
            }
            if (a.red != RED_NONE)
                tt__store(o, dt, a.red == RED_MEAN ? s / ce_mean_denom(&a, &k) : s);
        }
        ce_work_free(&k);
        return st ? tt_release(out) : out;
    }
    ce_plan p = {.x = tt__ptr(x), .t = tt__ptr(t), .C = C, .f64 = dt == TT_F64,
                 .xs0 = batched ? x->strides[0] * es : 0, .xs1 = x->strides[x->ndim - 1] * es,
                 .ts = batched ? t->strides[0] * 8 : 0};
    /* Targets first: a bad one fails the call before any work. */
    for (int64_t i = 0; i < N; i++) {
        int64_t c = *(const int64_t *)(p.t + i * p.ts);
        if (c < 0 || c >= C) {
            tt_error(TT_EINVAL, "%s: argument 'target' (#2): Target %lld is out of bounds "
                                "(expected class indices in [0, %lld))", name, (long long)c,
                     (long long)C);
            return tt_release(out);
        }
    }
    p.loss = tt__malloc(sizeof(double) * (size_t)(N ? N : 1));
    if (!p.loss)
        return tt_release(out);
    tt_parallel_for(N, GRAIN / (C ? C : 1) > 1 ? GRAIN / (C ? C : 1) : 1, task_rows, &p);
    if (a.red == RED_NONE) {
        char *o = tt__ptr(out);
        for (int64_t i = 0; i < N; i++)
            tt__store(o + i * es, dt, p.loss[i]);
    } else {
        /* In row order, so the result does not depend on the thread count;
         * the mean of no rows is 0/0 = NaN, as PyTorch's. */
        double s = 0;
        for (int64_t i = 0; i < N; i++)
            s += p.loss[i];
        tt__store(tt__ptr(out), dt, a.red == RED_MEAN ? s / (double)N : s);
    }
    tt__free(p.loss);
    return out;
}

/* Reads the arguments both ops share, from argument `first` (self): self,
 * target, reduction, then the keyword-only weight, ignore_index and
 * label_smoothing. */
static tt_status ce_frame_args(tt_frame *f, int first, ce_args *a, const char **red)
{
    tt_tensor *x, *t, *w = NULL;
    double ls = 0;
    int64_t ignore = -100;
    tt_status st;
    memset(a, 0, sizeof *a);
    if ((st = tt_arg_tensor(f, first, &x)) || (st = tt_arg_tensor(f, first + 1, &t)) ||
        (st = tt_arg_str(f, first + 2, red)))
        return st;
    int n = tt_frame_nargs(f);
    if (n > first + 3 && !tt_arg_is_none(f, first + 3) && (st = tt_arg_tensor(f, first + 3, &w)))
        return st;
    if (n > first + 4 && (st = tt_arg_int(f, first + 4, &ignore)))
        return st;
    if (n > first + 5 && (st = tt_arg_scalar(f, first + 5, &ls, NULL)))
        return st;
    a->x = x, a->t = t, a->w = w, a->ignore = ignore, a->smooth = ls;
    return TT_OK;
}

static tt_status cross_entropy_kernel(tt_frame *f)
{
    ce_args a;
    const char *red;
    tt_status st = ce_frame_args(f, 0, &a, &red);
    if (st)
        return st;
    tt_tensor *r = cross_entropy(&a, red);
    return r ? tt_return(f, 0, r) : tt_errcode();
}

/* ------------------------------------------------------------ derivative */

/* d loss / d self, one op (as aten's nll_loss_backward) so a traced
 * backward reads as one node: G (p_c A - a_c) per position (ce_general),
 * G the incoming gradient, per position for "none", divided by the mean's
 * denominator for "mean". The result is contiguous, of self's shape. */
static tt_status ce_backward_kernel(tt_frame *f)
{
    const char *name = tt__op_label(TT_OP_CROSS_ENTROPY_BACKWARD);
    ce_args a;
    const char *red;
    tt_tensor *g;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &g)) || (st = ce_frame_args(f, 1, &a, &red)) ||
        (st = ce_check(name, &a, red)))
        return st;
    tt_dtype dt = (tt_dtype)a.x->dtype;
    bool fake = tt_frame_is_fake(f) || tt_is_fake(a.x) || tt_is_fake(g);
    tt_tensor *out = tt__ops_new(fake, a.x->ndim, a.x->sizes, NULL, dt);
    if (!out || fake)
        return out ? tt_return(f, 0, out) : tt_errcode();
    ce_work k;
    double *gv = NULL;
    int64_t P = a.N * a.S, C = a.C;
    if (tt_numel(g) != (a.red == RED_NONE ? P : 1))
        st = tt_frame_fail(f, TT_ESHAPE, "argument 'grad_output' (#1) has %lld elements, "
                                         "expected %lld", (long long)tt_numel(g),
                           (long long)(a.red == RED_NONE ? P : 1));
    if (!st)
        gv = read_dense(g, TT_F64, &st);
    if (!st)
        st = ce_run(name, &a, &k);
    else
        memset(&k, 0, sizeof k);
    if (!st) {
        double scale = a.red == RED_MEAN ? 1 / ce_mean_denom(&a, &k) : 1;
        char *o = tt__ptr(out);
        int64_t es = (int64_t)tt_dtype_size(dt);
        for (int64_t n = 0; n < a.N; n++)
            for (int64_t c = 0; c < C; c++)
                for (int64_t s = 0; s < a.S; s++) {
                    int64_t i = n * C * a.S + c * a.S + s;
                    double gn = a.red == RED_NONE ? gv[n * a.S + s] : gv[0];
                    /* An ignored position has factor 0 and gets 0 even when
                     * every target is ignored (scale 1/0, as PyTorch's). */
                    tt__store(o + i * es, dt, k.x[i] == 0 ? 0 : gn * scale * k.x[i]);
                }
    }
    tt__free(gv);
    ce_work_free(&k);
    if (st) {
        tt_release(out);
        return st;
    }
    return tt_return(f, 0, out);
}

static tt_status setup_ce(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                          const tt_value *out, int nout)
{
    (void)out, (void)nout;
    tt_tensor *w = nin > 3 && in[3].kind == TT_V_TENSOR ? in[3].u.t : NULL;
    tt_status st = tt_ctx_save_for_backward(ctx, 3, (tt_tensor *[]){in[0].u.t, in[1].u.t, w});
    int64_t red = strcmp(in[2].u.s, "none") == 0 ? RED_NONE
                : strcmp(in[2].u.s, "sum") == 0 ? RED_SUM : RED_MEAN;
    if (!st)
        st = tt_ctx_save_int(ctx, "reduction", red);
    if (!st)
        st = tt_ctx_save_int(ctx, "ignore_index", nin > 4 ? in[4].u.i : -100);
    if (!st)
        st = tt_ctx_save_float(ctx, "label_smoothing",
                               nin > 5 ? (in[5].kind == TT_V_FLOAT ? in[5].u.f : (double)in[5].u.i)
                                       : 0.0);
    return st;
}

/* d loss / d probability target_c = -(1 - ls) w_c logp_c G: written with
 * ops (log_softmax over the class dim, the weight viewed along it). */
static tt_tensor *ce_target_grad(tt_tensor *g, const tt_tensor *x, const tt_tensor *w,
                                 reduction red, double ls)
{
    int cd = tt_ndim(x) == 1 ? 0 : 1;
    tt_scope_begin();
    tt_tensor *G = g;
    if (red == RED_NONE && tt_ndim(x) > 1)
        G = tt_unsqueeze(g, cd);
    else if (red == RED_MEAN)
        G = tt_div_scalar(g, (double)(tt_numel(x) / (tt_sizes(x)[cd] ? tt_sizes(x)[cd] : 1)));
    tt_tensor *r = tt_mul(tt_mul_scalar(tt_log_softmax(x, cd), -(1 - ls)), G);
    if (w) {
        int64_t shape[TT_MAX_DIMS];
        for (int d = 0; d < tt_ndim(x); d++)
            shape[d] = d == cd ? tt_sizes(w)[0] : 1;
        r = tt_mul(r, tt_reshape(w, tt_ndim(x), shape));
    }
    tt_keep(r);
    tt_scope_end();
    return r;
}

static tt_status ce_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                             tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    int64_t red, ignore;
    double ls;
    tt_status st;
    if ((st = tt_ctx_get_int(ctx, "reduction", &red)) ||
        (st = tt_ctx_get_int(ctx, "ignore_index", &ignore)) ||
        (st = tt_ctx_get_float(ctx, "label_smoothing", &ls)))
        return st;
    tt_tensor *x = tt_ctx_saved(ctx, 0), *t = tt_ctx_saved(ctx, 1), *w = tt_ctx_saved(ctx, 2);
    if (tt_ctx_needs_input_grad(ctx, 0))
        st = tt__put_grad(ctx, gi, 0,
                          tt__call_op(TT_OP_CROSS_ENTROPY_BACKWARD,
                                      TT_ARGS(tt_v_tensor(g[0]), tt_v_tensor(x), tt_v_tensor(t),
                                              tt_v_str(red_names[red]),
                                              w ? tt_v_tensor(w) : tt_v_none(),
                                              tt_v_int(ignore), tt_v_float(ls))));
    if (!st && tt_ctx_needs_input_grad(ctx, 1))
        st = tt__put_grad(ctx, gi, 1, ce_target_grad(g[0], x, w, (reduction)red, ls));
    return st;
}

#undef TT__FAMILY_LOSS
#define TT__FAMILY_LOSS TT__ROW
static const tt__builtin_row rows[] = {TT__FAMILY_ROWS};

tt_status tt__register_loss(tt_library *lib)
{
    return TT__DEFINE_ROWS(lib, rows);
}

/* ---------------------------------------------------------- typed wrappers */

tt_tensor *tt_cross_entropy(const tt_tensor *logits, const tt_tensor *target)
{
    const tt_tensor *ts[2] = {logits, target};
    if (tt__fast_path(TT_OP_CROSS_ENTROPY, 2, ts))
        return cross_entropy(&(ce_args){.x = logits, .t = target, .ignore = -100}, "mean");
    return tt__call_op(TT_OP_CROSS_ENTROPY, TT_ARGS(tt_v_tensor(logits), tt_v_tensor(target)));
}

tt_tensor *tt_cross_entropy_ex(const tt_tensor *logits, const tt_tensor *target,
                               const tt_cross_entropy_opts *opts)
{
    tt_cross_entropy_opts o = opts ? *opts : (tt_cross_entropy_opts){0};
    return tt__call_op(TT_OP_CROSS_ENTROPY,
                       TT_ARGS(tt_v_tensor(logits), tt_v_tensor(target),
                               tt_v_str(o.reduction ? o.reduction : "mean"),
                               o.weight ? tt_v_tensor(o.weight) : tt_v_none(),
                               tt_v_int(o.ignore ? o.ignore_index : -100),
                               tt_v_float(o.label_smoothing)));
}
