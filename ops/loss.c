/* Built-in ops: losses. cross_entropy of logits against class indices or
 * class probabilities, with PyTorch's weight, ignore_index and
 * label_smoothing, over [C], [N, C] or [N, C, d1, ...] logits; nll_loss
 * (nll_loss_forward, nll_loss2d_forward and their backward ops) as Core
 * ATen has it; mse_loss, smooth_l1_loss (each with its backward op) and
 * binary_cross_entropy_with_logits. The aten ops take the reduction as
 * PyTorch's enum int (0 none, 1 mean, 2 sum); the typed wrappers as a
 * string.
 *
 * As in the other families, one function computes the output's metadata
 * and allocates it, and stops there for fake inputs (so the fake kernel is
 * the real one without the arithmetic); values that only data can reveal,
 * such as an out-of-range target, are checked on real inputs only. */
#include "ops_impl.h"
#include "tt_nn.h"

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
    else if (red == RED_MEAN) {
        /* The number of positions, counted by a sum of ones: in a symbolic
         * trace the sizes are symbols, which C arithmetic cannot divide. */
        int64_t pos[TT_MAX_DIMS];
        int np = 0;
        for (int d = 0; d < tt_ndim(x); d++)
            if (d != cd)
                pos[np++] = tt_sizes(x)[d];
        G = tt_div(g, tt_sum_all(tt_full(np, pos, 1.0, tt_dtype_of(x))));
    }
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

/* ============================================================= nll_loss */

/* The reduction enum of the aten losses: 0 none, 1 mean, 2 sum. PyTorch
 * 1.13 takes any other integer as sum (and asserts in mse_loss); here it
 * is an error. */
static tt_status want_reduction(const char *op, int argno, int64_t r)
{
    if (r >= 0 && r <= 2)
        return TT_OK;
    return tt_error(TT_EINVAL, "%s: argument 'reduction' (#%d): expected 0 (none), 1 (mean) "
                               "or 2 (sum), got %lld", op, argno, (long long)r);
}

/* A reduction name of the typed wrappers as the enum (-1 and an error for
 * another name). */
static int64_t reduction_enum(const char *fn, const char *r)
{
    r = r ? r : "mean";
    if (!strcmp(r, "none"))
        return RED_NONE;
    if (!strcmp(r, "mean"))
        return RED_MEAN;
    if (!strcmp(r, "sum"))
        return RED_SUM;
    tt_error(TT_EINVAL, "%s: argument 'reduction': expected 'none', 'mean' or 'sum', got '%s'",
             fn, r);
    return -1;
}

/* t's values, broadcast to (nd, sizes), as a new row-major f64 array. */
static double *read_bcast(const tt_tensor *t, int nd, const tt_size *sizes, tt_status *st)
{
    int64_t n = 1;
    for (int d = 0; d < nd; d++)
        n *= sizes[d];
    double *p = tt__malloc(sizeof(double) * (size_t)(n ? n : 1));
    tt_tensor *c = p ? tt__empty_impl(nd, sizes, NULL, TT_F64, false) : NULL;
    if (!c || tt__copy_raw(c, t)) {
        tt_release(c);
        tt__free(p);
        *st = tt_errcode() ? tt_errcode() : TT_ENOMEM;
        return NULL;
    }
    memcpy(p, tt__ptr(c), sizeof(double) * (size_t)n);
    tt_release(c);
    return p;
}

/* Writes row-major f64 values into out (any strides, out's dtype). */
static tt_status write_values(tt_tensor *out, const double *v)
{
    tt_tensor *c = tt__empty_impl(out->ndim, out->sizes, NULL, TT_F64, false);
    if (!c)
        return tt_errcode();
    memcpy(tt__ptr(c), v, sizeof(double) * (size_t)tt_numel(c));
    tt_status st = tt__copy_raw(out, c);
    tt_release(c);
    return st;
}

/* The arguments of nll_loss_forward / nll_loss2d_forward and their
 * backward ops: self [C] or [N, C] (nll_loss), [N, C, H, W] (nll_loss2d);
 * target i64 or u8 class indices of self's shape without the class dim;
 * weight [C] or NULL. */
typedef struct {
    const tt_tensor *x, *t, *w;
    int64_t red, ignore;
    bool two_d;
    int64_t N, C, S; /* batch, classes, positions per batch row */
} nll_args;

static tt_status nll_check(const char *op, nll_args *a)
{
    char s1[128], s2[128];
    const tt_tensor *x = a->x, *t = a->t;
    tt_status st;
    if ((st = want_reduction(op, 4, a->red)))
        return st;
    tt_dtype dt = (tt_dtype)x->dtype;
    if (!tt_dtype_is_float(dt))
        return tt_error(TT_EDTYPE, "%s: argument 'self' (#1): \"nll_loss_out_frame\" not "
                                   "implemented for %s (expected log-probabilities in f32 or "
                                   "f64)", op, tt_dtype_name(dt));
    if (t->dtype != TT_I64 && t->dtype != TT_U8)
        return tt_error(TT_EDTYPE, "%s: argument 'target' (#2): expected scalar type i64 (or "
                                   "u8) class indices, got %s", op,
                        tt_dtype_name((tt_dtype)t->dtype));
    if (a->two_d) {
        if (x->ndim != 4)
            return tt_error(TT_ESHAPE, "%s: argument 'self' (#1): only batches of spatial "
                                       "inputs supported (4D tensors [N, C, H, W]), got %s", op,
                            tt_shape_str(x, s1, sizeof s1));
        if (t->ndim != 3)
            return tt_error(TT_ESHAPE, "%s: argument 'target' (#2): only batches of spatial "
                                       "targets supported (3D tensors [N, H, W]) but got "
                                       "targets of dimension: %d", op, t->ndim);
    } else {
        if (x->ndim < 1 || x->ndim > 2)
            return tt_error(TT_ESHAPE, "%s: argument 'self' (#1): input tensor should be 1D or "
                                       "2D, got %s (nll_loss2d_forward takes [N, C, H, W])",
                            op, tt_shape_str(x, s1, sizeof s1));
        if (t->ndim > 1)
            return tt_error(TT_ESHAPE, "%s: argument 'target' (#2): 0D or 1D target tensor "
                                       "expected, multi-target not supported (got %s)", op,
                            tt_shape_str(t, s1, sizeof s1));
    }
    bool ok = t->ndim == x->ndim - 1;
    for (int d = 0, k = 0; ok && d < x->ndim; d++)
        if (d != (x->ndim == 1 ? 0 : 1))
            ok = tt__sz_eq(t->sizes[k++], x->sizes[d]);
    if (!ok)
        return tt_error(TT_ESHAPE, "%s: argument 'target' (#2): size mismatch (got input: %s, "
                                   "target: %s)", op, tt_shape_str(x, s1, sizeof s1),
                        tt_shape_str(t, s2, sizeof s2));
    a->C = x->sizes[x->ndim == 1 ? 0 : 1];
    a->N = x->ndim >= 2 ? x->sizes[0] : 1;
    a->S = a->two_d ? tt_sym_mul(x->sizes[2], x->sizes[3]) : 1;
    if (a->w) {
        if (a->w->ndim != 1 || !tt__sz_eq(a->w->sizes[0], a->C)) {
            tt_size_str(a->C, s2, sizeof s2);
            return tt_error(TT_ESHAPE, "%s: argument 'weight' (#3): weight tensor should be "
                                       "defined either for all %s classes or no classes but "
                                       "got weight tensor of shape: %s", op, s2,
                            tt_shape_str(a->w, s1, sizeof s1));
        }
        if (a->w->dtype != x->dtype)
            return tt_error(TT_EDTYPE, "%s: argument 'weight' (#3): expected %s like 'self', "
                                       "got %s", op, tt_dtype_name(dt),
                            tt_dtype_name((tt_dtype)a->w->dtype));
    }
    return TT_OK;
}

static tt_status nll_frame_args(tt_frame *f, int first, nll_args *a)
{
    tt_tensor *x, *t, *w;
    tt_status st;
    if ((st = tt_arg_tensor(f, first, &x)) || (st = tt_arg_tensor(f, first + 1, &t)) ||
        (st = tt_arg_tensor(f, first + 2, &w)) || (st = tt_arg_int(f, first + 3, &a->red)) ||
        (st = tt_arg_int(f, first + 4, &a->ignore)))
        return st;
    a->x = x, a->t = t, a->w = w;
    return TT_OK;
}

/* The per-position weights w[t] (0 where ignored) and, after them, each
 * position's class, as a new array of 2 N S doubles, with the weights'
 * sum; or an error for a target out of range. */
static double *nll_weights(const char *op, const nll_args *a, double *total, tt_status *st)
{
    int64_t P = a->N * a->S;
    double *wv = a->w ? read_dense(a->w, TT_F64, st) : NULL;
    int64_t *tv = (a->w == NULL || wv) ? read_dense(a->t, TT_I64, st) : NULL;
    double *pw = tv ? tt__malloc(sizeof(double) * (size_t)(2 * P + 1)) : NULL;
    *total = 0;
    if (tv && !pw)
        *st = tt_error(TT_ENOMEM, "%s: out of memory", op);
    for (int64_t i = 0; pw && i < P; i++) {
        int64_t c = tv[i];
        pw[P + i] = 0;
        if (c == a->ignore) {
            pw[i] = 0;
            continue;
        }
        if (c < 0 || c >= a->C) {
            *st = tt_error(TT_EINVAL, "%s: argument 'target' (#2): Target %lld is out of bounds "
                                      "(expected class indices in [0, %lld))", op,
                           (long long)c, (long long)a->C);
            tt__free(pw);
            pw = NULL;
            break;
        }
        pw[i] = wv ? wv[c] : 1;
        pw[P + i] = (double)c;
        *total += pw[i];
    }
    tt__free(wv);
    tt__free(tv);
    return pw;
}

/* tt::nll_loss_forward / tt::nll_loss2d_forward(self, target, weight,
 * reduction, ignore_index) -> (output, total_weight): -w[t] self[n, t]
 * per position (0 where target == ignore_index); "mean" divides the sum by
 * total_weight, the sum of w[t] over the positions not ignored (0/0 = NaN
 * when all are, as PyTorch's). total_weight is 0 for "none". */
static tt_status nll_kernel(tt_frame *f)
{
    nll_args a = {.two_d = tt_frame_userdata(f) != NULL};
    const char *op = tt_op_name(tt_frame_op(f));
    tt_status st = nll_frame_args(f, 0, &a);
    if (st || (st = nll_check(op, &a)))
        return st;
    const tt_tensor *x = a.x;
    tt_dtype dt = (tt_dtype)x->dtype;
    tt_size sizes[TT_MAX_DIMS];
    int nd = 0;
    if (a.red == RED_NONE)
        for (int d = 0; d < x->ndim; d++)
            if (d != (x->ndim == 1 ? 0 : 1))
                sizes[nd++] = x->sizes[d];
    bool fake = tt_frame_is_fake(f) || tt__any_fake(3, (const tt_tensor *const[]){
                                                           x, a.t, a.w ? a.w : x});
    tt_tensor *out = tt__ops_new(fake, nd, sizes, NULL, dt);
    tt_tensor *tw = out ? tt__ops_new(fake, 0, NULL, NULL, dt) : NULL;
    if (!tw) {
        tt_release(out);
        return tt_errcode();
    }
    if (!fake) {
        double total, *pw = nll_weights(op, &a, &total, &st);
        double *xv = pw ? read_dense(x, TT_F64, &st) : NULL;
        int64_t P = a.N * a.S;
        double *loss = xv ? tt__malloc(sizeof(double) * (size_t)(P ? P : 1)) : NULL;
        if (xv && !loss)
            st = tt_error(TT_ENOMEM, "%s: out of memory", op);
        if (loss) {
            double sum = 0;
            for (int64_t n = 0; n < a.N; n++)
                for (int64_t s = 0; s < a.S; s++) {
                    int64_t i = n * a.S + s, c = (int64_t)pw[P + i];
                    loss[i] = pw[i] == 0 ? 0 : -pw[i] * xv[(n * a.C + c) * a.S + s];
                    sum += loss[i];
                }
            if (a.red == RED_NONE) {
                st = write_values(out, loss);
                if (x->ndim > 1) /* PyTorch's: 0, but w[t] for one [C] row */
                    total = 0;
            } else {
                tt__store(tt__ptr(out), dt, a.red == RED_MEAN ? sum / total : sum);
            }
            tt__store(tt__ptr(tw), dt, total);
        }
        tt__free(loss);
        tt__free(xv);
        tt__free(pw);
    }
    if (st) {
        tt_release(out);
        tt_release(tw);
        return st;
    }
    st = tt_return(f, 0, out);
    if (st) {
        tt_release(tw);
        return st;
    }
    return tt_return(f, 1, tw);
}

/* tt::nll_loss_backward / tt::nll_loss2d_backward(grad_output, self,
 * target, weight, reduction, ignore_index, total_weight): d loss / d self,
 * -w[t] g at each position's target class (g / total_weight for "mean"),
 * 0 elsewhere; contiguous, of self's shape. */
static tt_status nll_backward_kernel(tt_frame *f)
{
    nll_args a = {.two_d = tt_frame_userdata(f) != NULL};
    const char *op = tt_op_name(tt_frame_op(f));
    tt_tensor *g, *tw;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &g)) || (st = nll_frame_args(f, 1, &a)) ||
        (st = tt_arg_tensor(f, 6, &tw)) || (st = nll_check(op, &a)))
        return st;
    tt_dtype dt = (tt_dtype)a.x->dtype;
    bool fake = tt_frame_is_fake(f) || tt_is_fake(a.x) || tt_is_fake(g) || tt_is_fake(tw);
    tt_tensor *out = tt__ops_new(fake, a.x->ndim, a.x->sizes, NULL, dt);
    if (!out || fake)
        return out ? tt_return(f, 0, out) : tt_errcode();
    /* Element counts of real tensors (a fake one's may be symbols). */
    int64_t P = a.N * a.S;
    if (tt_numel(tw) != 1)
        st = tt_frame_fail(f, TT_ESHAPE, "argument 'total_weight' (#7): expected a single "
                                         "element tensor, got %lld elements",
                           (long long)tt_numel(tw));
    else if (tt_numel(g) != (a.red == RED_NONE ? P : 1))
        st = tt_frame_fail(f, TT_ESHAPE, "argument 'grad_output' (#1) has %lld elements, "
                                         "expected %lld", (long long)tt_numel(g),
                           (long long)(a.red == RED_NONE ? P : 1));
    if (st) {
        tt_release(out);
        return st;
    }
    double total, *pw = nll_weights(op, &a, &total, &st);
    double *gv = pw ? read_dense(g, TT_F64, &st) : NULL;
    if (gv) {
        double scale = a.red == RED_MEAN ? tt__load(tt__ptr(tw), tt_dtype_of(tw)) : 1;
        char *o = tt__ptr(out);
        int64_t es = (int64_t)tt_dtype_size(dt);
        memset(o, 0, (size_t)(tt_numel(out) * es));
        for (int64_t n = 0; n < a.N; n++)
            for (int64_t s = 0; s < a.S; s++) {
                int64_t i = n * a.S + s, c = (int64_t)pw[P + i];
                if (pw[i] != 0)
                    tt__store(o + ((n * a.C + c) * a.S + s) * es, dt,
                              -pw[i] * gv[a.red == RED_NONE ? i : 0] / scale);
            }
    }
    tt__free(gv);
    tt__free(pw);
    if (st) {
        tt_release(out);
        return st;
    }
    return tt_return(f, 0, out);
}

/* Saves self, target, weight and total_weight (the forward's output 1). */
static tt_status setup_nll(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                           const tt_value *out, int nout)
{
    (void)nin;
    tt_tensor *w = in[2].kind == TT_V_TENSOR ? in[2].u.t : NULL;
    tt_tensor *tw = nout > 1 && out[1].kind == TT_V_TENSOR ? out[1].u.t : NULL;
    tt_status st = tt_ctx_save_for_backward(ctx, 4, (tt_tensor *[]){in[0].u.t, in[1].u.t, w, tw});
    if (!st)
        st = tt_ctx_save_int(ctx, "reduction", in[3].u.i);
    if (!st)
        st = tt_ctx_save_int(ctx, "ignore_index", in[4].u.i);
    return st;
}

static tt_status nll_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                              tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    int64_t red, ignore;
    tt_status st;
    if ((st = tt_ctx_get_int(ctx, "reduction", &red)) ||
        (st = tt_ctx_get_int(ctx, "ignore_index", &ignore)))
        return st;
    tt_tensor *w = tt_ctx_saved(ctx, 2);
    bool two_d = tt_ctx_userdata(ctx) != NULL;
    return tt__put_grad(ctx, gi, 0,
                        tt__call_op(two_d ? TT_OP_NLL_LOSS2D_BACKWARD : TT_OP_NLL_LOSS_BACKWARD,
                                    TT_ARGS(tt_v_tensor(g[0]), tt_v_tensor(tt_ctx_saved(ctx, 0)),
                                            tt_v_tensor(tt_ctx_saved(ctx, 1)),
                                            w ? tt_v_tensor(w) : tt_v_none(), tt_v_int(red),
                                            tt_v_int(ignore), tt_v_tensor(tt_ctx_saved(ctx, 3)))));
}

/* ================================================ elementwise losses */

/* mse_loss, smooth_l1_loss and binary_cross_entropy_with_logits: a loss
 * per element of the broadcast operands, then the reduction. Values are
 * computed in f64 and stored once in the result dtype. */
typedef enum { PL_MSE, PL_SMOOTH_L1, PL_BCE } ploss;

static const tt_builtin_id pl_ops[] = {TT_OP_MSE_LOSS, TT_OP_SMOOTH_L1_LOSS,
                                       TT_OP_BINARY_CROSS_ENTROPY_WITH_LOGITS};
static const tt_builtin_id pl_backward_ops[] = {
    TT_OP_MSE_LOSS_BACKWARD, TT_OP_SMOOTH_L1_LOSS_BACKWARD,
    TT_OP_BINARY_CROSS_ENTROPY_WITH_LOGITS_BACKWARD};
static const char *const pl_cpu_name[] = {"mse_cpu", "smooth_l1_cpu",
                                          "binary_cross_entropy_with_logits"};

typedef struct {
    ploss kind;
    const tt_tensor *x, *y, *w, *pw, *g; /* g: the backward ops' grad_output */
    int64_t red;
    double beta;
    int nd;
    tt_size sizes[TT_MAX_DIMS];
    tt_dtype dt;
} pl_args;

static bool same_sizes(const tt_tensor *a, int nd, const tt_size *sizes)
{
    if (a->ndim != nd)
        return false;
    for (int d = 0; d < nd; d++)
        if (!tt__sz_eq(a->sizes[d], sizes[d]))
            return false;
    return true;
}

/* Shapes (broadcast), dtypes (PyTorch's result type, floating point),
 * reduction and beta; `op` names the op in messages. */
static tt_status pl_check(const char *op, pl_args *a, int red_argno)
{
    char s1[128], s2[128];
    tt_status st;
    if ((st = want_reduction(op, red_argno, a->red)))
        return st;
    if (a->kind == PL_SMOOTH_L1 && !(a->beta >= 0))
        return tt_error(TT_EINVAL, "%s: argument 'beta': smooth_l1_loss does not support "
                                   "negative values for beta (got %g)", op, a->beta);
    if (a->kind == PL_BCE && !same_sizes(a->y, a->x->ndim, a->x->sizes))
        return tt_error(TT_ESHAPE, "%s: argument 'target' (#2): Target size %s must be the "
                                   "same as input size %s", op, tt_shape_str(a->y, s1, sizeof s1),
                        tt_shape_str(a->x, s2, sizeof s2));
    const tt_tensor *ts[5] = {a->x, a->y};
    const char *names[5] = {"self", "target"};
    int argno[5] = {1, 2}, n = 2;
    if (a->w)
        ts[n] = a->w, names[n] = "weight", argno[n++] = 3;
    if (a->pw)
        ts[n] = a->pw, names[n] = "pos_weight", argno[n++] = 4;
    if ((st = tt__broadcast(op, n, ts, names, argno, &a->nd, a->sizes)))
        return st;
    a->dt = tt__result_type(n, ts, 0, NULL);
    for (int i = 0; i < n; i++)
        if (!tt_dtype_is_float((tt_dtype)ts[i]->dtype))
            return tt_error(TT_EDTYPE, "%s: argument '%s' (#%d): \"%s\" not implemented for %s "
                                       "tensors; expects floating point", op, names[i],
                            argno[i], pl_cpu_name[a->kind],
                            tt_dtype_name((tt_dtype)ts[i]->dtype));
    return TT_OK;
}

/* Element i's loss (or, with g, its gradient d loss / d self times g). */
static double pl_value(const pl_args *a, double x, double y, double w, double pw)
{
    switch (a->kind) {
    case PL_MSE: return (x - y) * (x - y);
    case PL_SMOOTH_L1: {
        double d = fabs(x - y);
        return d < a->beta ? 0.5 * d * d / a->beta : d - 0.5 * a->beta;
    }
    default: { /* (1 - y) x + (1 + (pw - 1) y) log(1 + exp(-x)), stably */
        double m = x < 0 ? -x : 0, lw = 1 + (pw - 1) * y;
        return w * ((1 - y) * x + lw * (log(exp(-m) + exp(-x - m)) + m));
    }
    }
}

static double pl_grad(const pl_args *a, double x, double y, double w, double pw)
{
    double d = x - y;
    if (a->kind == PL_MSE)
        return 2 * d;
    if (a->kind == PL_BCE) /* w ((pw y + 1 - y) sigmoid(x) - pw y) */
        return w * ((pw * y + 1 - y) / (1 + exp(-x)) - pw * y);
    /* PyTorch's smooth_l1_backward: -1 at d <= -beta, 1 at d >= beta */
    return d <= -a->beta ? -1 : d >= a->beta ? 1 : d / a->beta;
}

/* Runs the loss (a->g NULL) or its backward op (a->g set). */
static tt_tensor *pl_run(const char *op, pl_args *a, bool fake)
{
    tt_size strides[TT_MAX_DIMS];
    const tt_tensor *ins[2] = {a->x, a->y};
    tt_tensor bx, by, *out;
    /* The elementwise layout of the operands at the broadcast shape. */
    tt__broadcast_alias(&bx, a->x, a->nd, a->sizes);
    tt__broadcast_alias(&by, a->y, a->nd, a->sizes);
    ins[0] = &bx, ins[1] = &by;
    /* PyTorch's F.binary_cross_entropy_with_logits starts from (1 -
     * target): its result has target's layout; its gradient, self's. */
    if (a->kind == PL_BCE)
        tt__elementwise_strides(1, ins + (a->g ? 0 : 1), a->nd, a->sizes, strides);
    else
        tt__elementwise_strides(2, ins, a->nd, a->sizes, strides);
    if (a->g || a->red == RED_NONE)
        out = tt__ops_new(fake, a->nd, a->sizes, strides, a->dt);
    else
        out = tt__ops_new(fake, 0, NULL, NULL, a->dt);
    if (!out || fake)
        return out;
    tt_status st = TT_OK;
    int64_t n = 1;
    for (int d = 0; d < a->nd; d++)
        n *= a->sizes[d];
    double *xv = read_bcast(a->x, a->nd, a->sizes, &st);
    double *yv = xv ? read_bcast(a->y, a->nd, a->sizes, &st) : NULL;
    double *wv = yv && a->w ? read_bcast(a->w, a->nd, a->sizes, &st) : NULL;
    double *pv = yv && a->pw && (!a->w || wv) ? read_bcast(a->pw, a->nd, a->sizes, &st) : NULL;
    bool per_elem = a->red == RED_NONE; /* else g has one element */
    double *gv = yv && a->g ? (per_elem ? read_bcast(a->g, a->nd, a->sizes, &st)
                                        : read_dense(a->g, TT_F64, &st)) : NULL;
    double *r = !st ? tt__malloc(sizeof(double) * (size_t)(n ? n : 1)) : NULL;
    if (!st && !r)
        st = tt_error(TT_ENOMEM, "%s: out of memory", op);
    if (r) {
        double sum = 0, norm = a->red == RED_MEAN ? 1 / (double)n : 1;
        for (int64_t i = 0; i < n; i++) {
            if (a->g) {
                r[i] = pl_grad(a, xv[i], yv[i], wv ? wv[i] : 1, pv ? pv[i] : 1) *
                       gv[per_elem ? i : 0] * norm;
            } else {
                r[i] = pl_value(a, xv[i], yv[i], wv ? wv[i] : 1, pv ? pv[i] : 1);
                sum += r[i];
            }
        }
        if (a->g || a->red == RED_NONE)
            st = write_values(out, r);
        else /* the mean of no elements is 0/0 = NaN, as PyTorch's */
            tt__store(tt__ptr(out), a->dt, a->red == RED_MEAN ? sum / (double)n : sum);
    }
    tt__free(r);
    tt__free(gv);
    tt__free(pv);
    tt__free(wv);
    tt__free(yv);
    tt__free(xv);
    return st ? tt_release(out) : out;
}

/* tt::mse_loss(self, target, reduction=1), tt::smooth_l1_loss(self,
 * target, reduction=1, beta=1.0), tt::binary_cross_entropy_with_logits(
 * self, target, weight=None, pos_weight=None, reduction=1). */
static tt_status pl_kernel(tt_frame *f)
{
    pl_args a = {.kind = (ploss)(intptr_t)tt_frame_userdata(f), .red = RED_MEAN, .beta = 1};
    const char *op = tt__op_label(pl_ops[a.kind]);
    tt_tensor *x, *y, *w = NULL, *pw = NULL;
    int nargs = tt_frame_nargs(f), red_at = a.kind == PL_BCE ? 4 : 2;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &x)) || (st = tt_arg_tensor(f, 1, &y)))
        return st;
    if (a.kind == PL_BCE && ((nargs > 2 && (st = tt_arg_tensor(f, 2, &w))) ||
                             (nargs > 3 && (st = tt_arg_tensor(f, 3, &pw)))))
        return st;
    if ((nargs > red_at && (st = tt_arg_int(f, red_at, &a.red))) ||
        (a.kind == PL_SMOOTH_L1 && nargs > 3 && (st = tt_arg_float(f, 3, &a.beta))))
        return st;
    a.x = x, a.y = y, a.w = w, a.pw = pw;
    if ((st = pl_check(op, &a, red_at + 1)))
        return st;
    bool fake = tt_frame_is_fake(f) ||
                tt__any_fake(4, (const tt_tensor *const[]){x, y, w ? w : x, pw ? pw : x});
    tt_tensor *r = pl_run(op, &a, fake);
    return r ? tt_return(f, 0, r) : tt_errcode();
}

/* tt::mse_loss_backward(grad_output, self, target, reduction),
 * tt::smooth_l1_loss_backward(grad_output, self, target, reduction, beta),
 * tt::binary_cross_entropy_with_logits_backward(grad_output, self,
 * target, weight, pos_weight, reduction): d loss / d self at the
 * broadcast shape of the operands (PyTorch's; autograd sums it back to
 * each input's shape). "mean" divides by the element count here, where it
 * is a number even when a trace's sizes are symbols. */
static tt_status pl_backward_kernel(tt_frame *f)
{
    pl_args a = {.kind = (ploss)(intptr_t)tt_frame_userdata(f), .beta = 1};
    const char *op = tt__op_label(pl_backward_ops[a.kind]);
    tt_tensor *g, *x, *y, *w = NULL, *pw = NULL;
    int red_at = a.kind == PL_BCE ? 5 : 3;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &g)) || (st = tt_arg_tensor(f, 1, &x)) ||
        (st = tt_arg_tensor(f, 2, &y)) ||
        (a.kind == PL_BCE && ((st = tt_arg_tensor(f, 3, &w)) || (st = tt_arg_tensor(f, 4, &pw)))) ||
        (st = tt_arg_int(f, red_at, &a.red)) ||
        (a.kind == PL_SMOOTH_L1 && (st = tt_arg_float(f, 4, &a.beta))))
        return st;
    a.x = x, a.y = y, a.g = g, a.w = w, a.pw = pw;
    if ((st = pl_check(op, &a, red_at + 1)))
        return st;
    if (a.red == RED_NONE ? !same_sizes(g, a.nd, a.sizes) : tt_numel(g) != 1) {
        char s1[128];
        return tt_frame_fail(f, TT_ESHAPE, "argument 'grad_output' (#1): expected %s, got %s",
                             a.red == RED_NONE ? "the loss's shape" : "one element",
                             tt_shape_str(g, s1, sizeof s1));
    }
    bool fake = tt_frame_is_fake(f) ||
                tt__any_fake(5, (const tt_tensor *const[]){g, x, y, w ? w : x, pw ? pw : x});
    tt_tensor *r = pl_run(op, &a, fake);
    return r ? tt_return(f, 0, r) : tt_errcode();
}

static tt_status setup_pl(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                          const tt_value *out, int nout)
{
    (void)out, (void)nout;
    ploss kind = (ploss)(intptr_t)tt_ctx_userdata(ctx);
    int red_at = kind == PL_BCE ? 4 : 2;
    tt_tensor *w = kind == PL_BCE && nin > 2 && in[2].kind == TT_V_TENSOR ? in[2].u.t : NULL;
    tt_tensor *pw = kind == PL_BCE && nin > 3 && in[3].kind == TT_V_TENSOR ? in[3].u.t : NULL;
    tt_status st = tt_ctx_save_for_backward(ctx, 4, (tt_tensor *[]){in[0].u.t, in[1].u.t, w, pw});
    if (!st)
        st = tt_ctx_save_int(ctx, "reduction", nin > red_at ? in[red_at].u.i : RED_MEAN);
    if (!st)
        st = tt_ctx_save_float(ctx, "beta", kind == PL_SMOOTH_L1 && nin > 3
                                                ? (in[3].kind == TT_V_FLOAT ? in[3].u.f
                                                                            : (double)in[3].u.i)
                                                : 1.0);
    return st;
}

/* log(sigmoid(z)) = min(z, 0) - log(1 + exp(-|z|)), written with ops. */
static tt_tensor *log_sigmoid_of(const tt_tensor *z)
{
    return tt_sub(tt_neg(tt_relu(tt_neg(z))),
                  tt_log(tt_add_scalar(tt_exp(tt_neg(tt_abs(z))), 1)));
}

/* binary_cross_entropy_with_logits' derivative (PyTorch 1.13's): d/dself
 * is its backward op; d/dtarget = w G (log_sigmoid(-x) - pw
 * log_sigmoid(x)) (pw = 1: -w G x), written with ops, G the incoming
 * gradient / the element count for "mean" (counted by a sum of ones, so a
 * symbolic trace divides by its own count). */
static tt_status bce_derivative(tt_autograd_ctx *ctx, tt_tensor *const *g, int64_t red,
                                tt_tensor **gi)
{
    tt_tensor *x = tt_ctx_saved(ctx, 0), *y = tt_ctx_saved(ctx, 1);
    tt_tensor *w = tt_ctx_saved(ctx, 2), *pw = tt_ctx_saved(ctx, 3);
    tt_status st = TT_OK;
    if (tt_ctx_needs_input_grad(ctx, 0))
        st = tt__put_grad(ctx, gi, 0,
                          tt__call_op(TT_OP_BINARY_CROSS_ENTROPY_WITH_LOGITS_BACKWARD,
                                      TT_ARGS(tt_v_tensor(g[0]), tt_v_tensor(x), tt_v_tensor(y),
                                              w ? tt_v_tensor(w) : tt_v_none(),
                                              pw ? tt_v_tensor(pw) : tt_v_none(),
                                              tt_v_int(red))));
    if (st || !tt_ctx_needs_input_grad(ctx, 1))
        return st;
    tt_scope_begin();
    tt_tensor *G = g[0];
    if (red == RED_MEAN)
        G = tt_div(G, tt_sum_all(tt_full(tt_ndim(x), tt_sizes(x), 1.0, tt_dtype_of(x))));
    if (w)
        G = tt_mul(G, w);
    tt_tensor *dy = pw ? tt_sub(log_sigmoid_of(tt_neg(x)), tt_mul(log_sigmoid_of(x), pw))
                       : tt_neg(x);
    dy = tt_keep(tt_mul(dy, G));
    tt_scope_end();
    return tt__put_grad(ctx, gi, 1, dy);
}

/* mse and smooth_l1: d/dself is the backward op, d/dtarget its negation
 * (the loss depends on self - target). */
static tt_status pl_derivative(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                               tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    ploss kind = (ploss)(intptr_t)tt_ctx_userdata(ctx);
    int64_t red;
    double beta;
    tt_status st;
    if ((st = tt_ctx_get_int(ctx, "reduction", &red)) ||
        (st = tt_ctx_get_float(ctx, "beta", &beta)))
        return st;
    if (kind == PL_BCE)
        return bce_derivative(ctx, g, red, gi);
    tt_value args[5] = {tt_v_tensor(g[0]), tt_v_tensor(tt_ctx_saved(ctx, 0)),
                        tt_v_tensor(tt_ctx_saved(ctx, 1)), tt_v_int(red), tt_v_float(beta)};
    tt_tensor *d = tt__call_op(pl_backward_ops[kind], args, kind == PL_SMOOTH_L1 ? 5 : 4);
    if (!d)
        return tt_errcode();
    if (tt_ctx_needs_input_grad(ctx, 1)) {
        st = tt__put_grad(ctx, gi, 1, tt_neg(d));
        if (st) {
            tt_release(d);
            return st;
        }
    }
    return tt__put_grad(ctx, gi, 0, d);
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

tt_tensor *tt_nll_loss(const tt_tensor *log_probs, const tt_tensor *target,
                       const tt_nll_loss_opts *opts)
{
    tt_nll_loss_opts o = opts ? *opts : (tt_nll_loss_opts){0};
    int64_t red = reduction_enum("tt_nll_loss", o.reduction);
    if (red < 0)
        return NULL;
    if (!log_probs || !target)
        return tt__call_op(TT_OP_NLL_LOSS_FORWARD,
                           TT_ARGS(tt_v_tensor(log_probs), tt_v_tensor(target), tt_v_none(),
                                   tt_v_int(red), tt_v_int(-100)));
    /* F.nll_loss: [C] and [N, C] through nll_loss_forward, [N, C, H, W]
     * through nll_loss2d_forward, other ranks viewed as [N, C, 1, -1]. */
    int nd = tt_ndim(log_probs);
    tt_value args[5] = {tt_v_tensor(log_probs), tt_v_tensor(target),
                        o.weight ? tt_v_tensor(o.weight) : tt_v_none(), tt_v_int(red),
                        tt_v_int(o.ignore ? o.ignore_index : -100)};
    tt_value outs[2] = {tt_v_none(), tt_v_none()};
    tt_tensor *x4 = NULL, *t3 = NULL;
    tt_status st = TT_OK;
    if ((nd == 3 || nd > 4) && tt_ndim(target) >= 1) { /* else the op names the mismatch */
        const int64_t *sz = tt_sizes(log_probs);
        x4 = tt_reshape(log_probs, 4, (int64_t[]){sz[0], sz[1], 1, -1});
        t3 = x4 ? tt_reshape(target, 3, (int64_t[]){tt_sizes(target)[0], 1, -1}) : NULL;
        args[0] = tt_v_tensor(x4), args[1] = tt_v_tensor(t3);
        st = t3 ? TT_OK : tt_errcode();
    }
    if (!st)
        st = tt_op_call(tt__op(nd >= 3 ? TT_OP_NLL_LOSS2D_FORWARD : TT_OP_NLL_LOSS_FORWARD), args,
                        5, outs, 2);
    bool viewed = args[0].u.t != log_probs;
    x4 = tt_release(x4);
    t3 = tt_release(t3);
    if (st)
        return NULL;
    tt_release(outs[1].u.t); /* total_weight */
    tt_tensor *r = outs[0].u.t;
    if (viewed && red == RED_NONE) { /* back to the target's shape */
        tt_tensor *v = tt_reshape(r, tt_ndim(target), tt_sizes(target));
        tt_release(r);
        r = v;
    }
    return r;
}

static tt_tensor *pl_call(ploss kind, const tt_tensor *x, const tt_tensor *y, const tt_tensor *w,
                          const tt_tensor *pw, const char *reduction, double beta)
{
    static const char *const fns[] = {"tt_mse_loss", "tt_smooth_l1_loss",
                                      "tt_binary_cross_entropy_with_logits"};
    int64_t red = reduction_enum(fns[kind], reduction);
    if (red < 0)
        return NULL;
    const tt_tensor *ts[4] = {x, y, w ? w : x, pw ? pw : x};
    if (x && y && tt__fast_path(pl_ops[kind], 4, ts)) {
        pl_args a = {.kind = kind, .x = x, .y = y, .w = w, .pw = pw, .red = red, .beta = beta};
        const char *op = tt__op_label(pl_ops[kind]);
        return pl_check(op, &a, kind == PL_BCE ? 5 : 3) ? NULL : pl_run(op, &a, false);
    }
    switch (kind) {
    case PL_MSE:
        return tt__call_op(TT_OP_MSE_LOSS, TT_ARGS(tt_v_tensor(x), tt_v_tensor(y), tt_v_int(red)));
    case PL_SMOOTH_L1:
        return tt__call_op(TT_OP_SMOOTH_L1_LOSS, TT_ARGS(tt_v_tensor(x), tt_v_tensor(y),
                                                         tt_v_int(red), tt_v_float(beta)));
    default:
        return tt__call_op(TT_OP_BINARY_CROSS_ENTROPY_WITH_LOGITS,
                           TT_ARGS(tt_v_tensor(x), tt_v_tensor(y),
                                   w ? tt_v_tensor(w) : tt_v_none(),
                                   pw ? tt_v_tensor(pw) : tt_v_none(), tt_v_int(red)));
    }
}

tt_tensor *tt_mse_loss(const tt_tensor *x, const tt_tensor *y, const char *reduction)
{
    return pl_call(PL_MSE, x, y, NULL, NULL, reduction, 1);
}

tt_tensor *tt_smooth_l1_loss(const tt_tensor *x, const tt_tensor *y, const char *reduction,
                             double beta)
{
    return pl_call(PL_SMOOTH_L1, x, y, NULL, NULL, reduction, beta);
}

tt_tensor *tt_binary_cross_entropy_with_logits(const tt_tensor *x, const tt_tensor *y,
                                               const tt_tensor *weight,
                                               const tt_tensor *pos_weight,
                                               const char *reduction)
{
    return pl_call(PL_BCE, x, y, weight, pos_weight, reduction, 1);
}
