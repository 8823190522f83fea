/* Built-in ops: losses. cross_entropy of logits against class indices.
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

static bool size_eq(tt_size a, tt_size b)
{
    return a == b || (tt_size_is_sym(a) && tt_size_is_sym(b) && tt_sym_hint(a) == tt_sym_hint(b) &&
                      tt_sym_hint(a) >= 0);
}

/* tt::cross_entropy: logits [N, C] (or [C]) against i64 class indices [N]
 * (or a 0-dim one); reduction "mean", "sum" or "none" ([N], or 0-dim for
 * [C] logits). The output has the logits' float dtype. Returns a new
 * reference. */
static tt_tensor *cross_entropy(const tt_tensor *x, const tt_tensor *t, const char *red_s)
{
    const char *name = tt__op_label(TT_OP_CROSS_ENTROPY);
    char s1[128], s2[128];
    reduction red;
    if (!strcmp(red_s, "mean"))
        red = RED_MEAN;
    else if (!strcmp(red_s, "sum"))
        red = RED_SUM;
    else if (!strcmp(red_s, "none"))
        red = RED_NONE;
    else {
        tt_error(TT_EINVAL, "%s: argument 'reduction' (#3): expected 'mean', 'sum' or "
                            "'none', got '%s'", name, red_s);
        return NULL;
    }
    tt_dtype dt = (tt_dtype)x->dtype;
    if (!tt_dtype_is_float(dt)) {
        tt_error(TT_EDTYPE, "%s: argument 'self' (#1): expected floating point logits, got %s",
                 name, tt_dtype_name(dt));
        return NULL;
    }
    if ((tt_dtype)t->dtype != TT_I64) {
        tt_error(TT_EDTYPE, "%s: argument 'target' (#2): expected i64 class indices, got %s",
                 name, tt_dtype_name((tt_dtype)t->dtype));
        return NULL;
    }
    if (x->ndim != 1 && x->ndim != 2) {
        tt_error(TT_ESHAPE, "%s: argument 'self' (#1): expected logits of shape [N, C] or "
                            "[C], got %s", name, tt_shape_str(x, s1, sizeof s1));
        return NULL;
    }
    bool batched = x->ndim == 2;
    if (t->ndim != x->ndim - 1 || (batched && !size_eq(t->sizes[0], x->sizes[0]))) {
        tt_error(TT_ESHAPE, "%s: argument 'target' (#2): expected shape %s to match the "
                            "batch of 'self' %s, got %s", name, batched ? "[N]" : "[]",
                 tt_shape_str(x, s1, sizeof s1), tt_shape_str(t, s2, sizeof s2));
        return NULL;
    }
    bool fake = x->storage->fake || t->storage->fake;
    tt_tensor *out = tt__ops_new(fake, red == RED_NONE && batched ? 1 : 0, x->sizes, NULL, dt);
    if (!out || fake)
        return out;
    int64_t N = batched ? x->sizes[0] : 1, C = x->sizes[x->ndim - 1];
    int64_t es = (int64_t)tt_dtype_size(dt);
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
    if (red == RED_NONE) {
        char *o = tt__ptr(out);
        for (int64_t i = 0; i < N; i++)
            tt__store(o + i * es, dt, p.loss[i]);
    } else {
        /* In row order, so the result does not depend on the thread count;
         * the mean of no rows is 0/0 = NaN, as PyTorch's. */
        double s = 0;
        for (int64_t i = 0; i < N; i++)
            s += p.loss[i];
        tt__store(tt__ptr(out), dt, red == RED_MEAN ? s / (double)N : s);
    }
    tt__free(p.loss);
    return out;
}

static tt_status cross_entropy_kernel(tt_frame *f)
{
    tt_tensor *x, *t;
    const char *red;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &x)) || (st = tt_arg_tensor(f, 1, &t)) ||
        (st = tt_arg_str(f, 2, &red)))
        return st;
    tt_tensor *r = cross_entropy(x, t, red);
    return r ? tt_return(f, 0, r) : tt_errcode();
}

/* ------------------------------------------------------------ derivative */

/* d loss / d logits = (softmax(row) - onehot(target)) * g, with g the
 * gradient of the loss (divided by N for "mean"; per row for "none").
 * One op, as aten's nll_loss_backward, so a traced backward reads as one
 * node. */
static tt_status ce_backward_kernel(tt_frame *f)
{
    tt_tensor *g, *x, *t;
    const char *red_s;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &g)) || (st = tt_arg_tensor(f, 1, &x)) ||
        (st = tt_arg_tensor(f, 2, &t)) || (st = tt_arg_str(f, 3, &red_s)))
        return st;
    tt_dtype dt = tt_dtype_of(x);
    tt_tensor *out = tt__ops_new(tt_frame_is_fake(f) || tt_is_fake(x), tt_ndim(x), tt_sizes(x),
                                 NULL, dt);
    if (!out || tt_is_fake(out))
        return out ? tt_return(f, 0, out) : tt_errcode();
    bool none = strcmp(red_s, "none") == 0, mean = strcmp(red_s, "mean") == 0;
    int64_t C = tt_ndim(x) == 2 ? tt_sizes(x)[1] : tt_sizes(x)[0];
    int64_t N = tt_ndim(x) == 2 ? tt_sizes(x)[0] : 1;
    double *row = malloc(sizeof *row * (size_t)(C ? C : 1));
    if (!row) {
        tt_release(out);
        return tt_frame_fail(f, TT_ENOMEM, "out of memory");
    }
    double g0 = 0;
    if (!none && (st = tt_item(g, &g0)))
        goto done;
    for (int64_t n = 0; n < N && !st; n++) {
        double gn = g0, tv;
        if (none)
            st = tt_ndim(g) == 1 ? tt_get(g, &gn, n) : tt_item(g, &gn);
        if (!st)
            st = tt_ndim(t) == 1 ? tt_get(t, &tv, n) : tt_item(t, &tv);
        if (st)
            break;
        double m = -INFINITY, sum = 0;
        for (int64_t c = 0; c < C && !st; c++) {
            st = tt_ndim(x) == 2 ? tt_get(x, &row[c], n, c) : tt_get(x, &row[c], c);
            m = row[c] > m ? row[c] : m;
        }
        for (int64_t c = 0; c < C; c++)
            sum += exp(row[c] - m);
        double scale = mean ? gn / (double)N : gn;
        for (int64_t c = 0; c < C && !st; c++) {
            double v = (exp(row[c] - m) / sum - (c == (int64_t)tv)) * scale;
            st = tt_ndim(x) == 2 ? tt_set(out, v, n, c) : tt_set(out, v, c);
        }
    }
done:
    free(row);
    if (st) {
        tt_release(out);
        return st;
    }
    return tt_return(f, 0, out);
}

static tt_status setup_ce(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                          const tt_value *out, int nout)
{
    (void)nin, (void)out, (void)nout;
    tt_status st = tt_ctx_save_for_backward(ctx, 2, (tt_tensor *[]){in[0].u.t, in[1].u.t});
    int64_t red = strcmp(in[2].u.s, "none") == 0 ? RED_NONE
                : strcmp(in[2].u.s, "sum") == 0 ? RED_SUM : RED_MEAN;
    return st ? st : tt_ctx_save_int(ctx, "reduction", red);
}

static tt_status ce_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                             tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    int64_t red;
    tt_status st = tt_ctx_get_int(ctx, "reduction", &red);
    if (st || !tt_ctx_needs_input_grad(ctx, 0))
        return st;
    const char *names[] = {[RED_NONE] = "none", [RED_MEAN] = "mean", [RED_SUM] = "sum"};
    gi[0] = tt__call_op(TT_OP_CROSS_ENTROPY_BACKWARD, TT_ARGS(tt_v_tensor(g[0]), tt_v_tensor(tt_ctx_saved(ctx, 0)),
                                     tt_v_tensor(tt_ctx_saved(ctx, 1)),
                                     tt_v_str(names[red])));
    return gi[0] ? TT_OK : tt_errcode();
}

static const tt__builtin_row rows[] = {TT__LOSS_ROWS};

tt_status tt__register_loss(tt_library *lib)
{
    return TT__DEFINE_ROWS(lib, rows);
}

/* ---------------------------------------------------------- typed wrappers */

tt_tensor *tt_cross_entropy(const tt_tensor *logits, const tt_tensor *target)
{
    const tt_tensor *ts[2] = {logits, target};
    if (tt__fast_path(TT_OP_CROSS_ENTROPY, 2, ts))
        return cross_entropy(logits, target, "mean");
    return tt__call_op(TT_OP_CROSS_ENTROPY, TT_ARGS(tt_v_tensor(logits), tt_v_tensor(target)));
}
