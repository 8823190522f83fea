/* Built-in ops: an AdamW step, an SGD step and the global norm of a list
 * of tensors (for gradient clipping). */
#include "transformer_impl.h"
#include "tt_nn.h"

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


/* ================================================================== SGD */

typedef struct {
    double lr, momentum, dampening, wd;
    bool nesterov, maximize, first;
} sgd_k;

/* torch.optim.SGD's rule (_single_tensor_sgd), per element, in the
 * parameter's dtype and in PyTorch's order of operations:
 *   d = maximize ? -g : g;  d += wd p (when wd != 0);
 *   with momentum: buf = d on the first step, else buf = m buf + (1 - damp) d;
 *                  d = nesterov ? d + m buf : buf;
 *   p -= lr d.
 * Operands: param, grad and, with momentum, the buffer. Contiguous
 * operands take a loop over plain arrays, which vectorizes. */
#define SGD_STEP(T_, p, g, b)                                                  \
    do {                                                                       \
        T_ d = k->maximize ? -(g) : (g);                                       \
        if (wd != 0)                                                           \
            d = d + wd * (p);                                                  \
        if (mom != 0) {                                                        \
            (b) = k->first ? d : mom * (b) + damp1 * d;                        \
            d = k->nesterov ? d + mom * (b) : (b);                             \
        }                                                                      \
        (p) = (p) - lr * d;                                                    \
    } while (0)
#define SGD_LOOP(T_)                                                           \
    CPU_CLONES static void sgd_loop_##T_(char **d, const int64_t *st, int64_t n, void *vk) \
    {                                                                          \
        const sgd_k *k = vk;                                                   \
        const T_ lr = (T_)k->lr, wd = (T_)k->wd, mom = (T_)k->momentum;        \
        const T_ damp1 = (T_)(1 - k->dampening);                               \
        const int64_t es = (int64_t)sizeof(T_);                                \
        T_ unused = 0;                                                         \
        if (st[0] == es && st[1] == es && (mom == 0 || st[2] == es)) {         \
            T_ *restrict p = (T_ *)d[0], *restrict b = mom != 0 ? (T_ *)d[2] : NULL; \
            const T_ *restrict g = (const T_ *)d[1];                           \
            if (mom != 0)                                                      \
                for (int64_t i = 0; i < n; i++)                                \
                    SGD_STEP(T_, p[i], g[i], b[i]);                            \
            else                                                               \
                for (int64_t i = 0; i < n; i++)                                \
                    SGD_STEP(T_, p[i], g[i], unused);                          \
            return;                                                            \
        }                                                                      \
        for (int64_t i = 0; i < n; i++) {                                      \
            T_ *p = (T_ *)(d[0] + i * st[0]);                                  \
            T_ g = *(const T_ *)(d[1] + i * st[1]);                            \
            T_ *b = mom != 0 ? (T_ *)(d[2] + i * st[2]) : &unused;             \
            SGD_STEP(T_, *p, g, *b);                                           \
        }                                                                      \
    }
SGD_LOOP(float)
SGD_LOOP(double)

/* The checks and the update of tt::sgd_step, shared by its kernel and
 * the wrapper's fast path. Writes nothing for fake operands. */
static tt_status sgd_run(tt_tensor *param, const tt_tensor *grad, tt_tensor *buf,
                         const tt_tensor *step, sgd_k *k, bool fake)
{
    const char *op = tt__op_label(TT_OP_SGD_STEP);
    tt_status st;
    if ((st = want_float(op, "param", 1, param)) ||
        (st = want_same_dtype(op, "grad", 2, grad, param)) ||
        (st = want_sizes(op, "grad", 2, grad, tt_ndim(param), tt_sizes(param))))
        return st;
    if (buf && ((st = want_same_dtype(op, "momentum_buf", 3, buf, param)) ||
                (st = want_sizes(op, "momentum_buf", 3, buf, tt_ndim(param), tt_sizes(param)))))
        return st;
    if (tt_ndim(step) != 0)
        return tt_error(TT_ESHAPE, "%s: argument 'step' (#4): expected a 0-dim tensor, got %d "
                                   "dims", op, tt_ndim(step));
    /* torch.optim.SGD's constructor refuses these; here each call does. */
    if (!(k->lr >= 0))
        return tt_error(TT_EINVAL, "%s: argument 'lr' (#5): Invalid learning rate: %g "
                                   "(expected >= 0)", op, k->lr);
    if (!(k->momentum >= 0))
        return tt_error(TT_EINVAL, "%s: argument 'momentum' (#6): Invalid momentum value: %g "
                                   "(expected >= 0)", op, k->momentum);
    if (!(k->wd >= 0))
        return tt_error(TT_EINVAL, "%s: argument 'weight_decay' (#8): Invalid weight_decay "
                                   "value: %g (expected >= 0)", op, k->wd);
    if (k->nesterov && (k->momentum <= 0 || k->dampening != 0))
        return tt_error(TT_EINVAL, "%s: argument 'nesterov' (#9): Nesterov momentum requires "
                                   "a momentum and zero dampening (got momentum %g, dampening "
                                   "%g)", op, k->momentum, k->dampening);
    if (k->momentum != 0 && !buf)
        return tt_error(TT_EINVAL, "%s: argument 'momentum_buf' (#3): expected a buffer of "
                                   "param's shape with momentum %g, got None", op, k->momentum);
    if (fake || tt__any_fake(4, (const tt_tensor *const[]){param, grad, buf ? buf : param, step}))
        return TT_OK;
    double s = tt__load(tt__ptr(step), tt_dtype_of(step));
    if (!(s >= 1))
        return tt_error(TT_EINVAL, "%s: argument 'step' (#4): expected a step number >= 1, "
                                   "got %g", op, s);
    /* The first step starts the buffer from the gradient (PyTorch: the
     * buffer is None until then), so its prior values never count. */
    k->first = s == 1;
    tt_loop_fn loop = tt_dtype_of(param) == TT_F64 ? sgd_loop_double : sgd_loop_float;
    if (k->momentum != 0)
        return tt_for_each(3, (tt_tensor *[]){param, (tt_tensor *)grad, buf}, loop, k);
    return tt_for_each(2, (tt_tensor *[]){param, (tt_tensor *)grad}, loop, k);
}

/* tt::sgd_step(param!, grad, momentum_buf!?, step, lr, momentum,
 * dampening, weight_decay, nesterov, *, maximize) -> (): one
 * torch.optim.SGD update of a parameter (and its momentum buffer) in one
 * pass. step is a 0-dim tensor holding the step number (1 for the first
 * update), a tensor so that a compiled training step reads it anew at
 * every replay. */
static tt_status sgd_kernel(tt_frame *f)
{
    tt_tensor *p, *g, *b, *step;
    sgd_k k = {0};
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &p)) || (st = tt_arg_tensor(f, 1, &g)) ||
        (st = tt_arg_tensor(f, 2, &b)) || (st = tt_arg_tensor(f, 3, &step)) ||
        (st = tt_arg_float(f, 4, &k.lr)) || (st = tt_arg_float(f, 5, &k.momentum)) ||
        (st = tt_arg_float(f, 6, &k.dampening)) || (st = tt_arg_float(f, 7, &k.wd)) ||
        (st = tt_arg_bool(f, 8, &k.nesterov)) || (st = tt_arg_bool(f, 9, &k.maximize)))
        return st;
    return sgd_run(p, g, b, step, &k, tt_frame_is_fake(f));
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

#undef TT__FAMILY_OPTIMIZER
#define TT__FAMILY_OPTIMIZER TT__ROW
static const tt__builtin_row rows[] = {TT__FAMILY_ROWS};

tt_status tt__register_optimizer(tt_library *lib)
{
    return TT__DEFINE_ROWS(lib, rows);
}

/* ---------------------------------------------------------- typed wrappers */

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

tt_status tt_sgd_(tt_tensor *param, const tt_tensor *grad, tt_tensor *momentum_buf,
                  const tt_tensor *step, const tt_sgd_opts *o)
{
    if (!o)
        return tt_error(TT_EINVAL, "tt_sgd_: argument 'opts' is NULL (expected lr, momentum, "
                                   "dampening, weight_decay and nesterov)");
    const tt_tensor *ts[4] = {param, grad, momentum_buf ? momentum_buf : param, step};
    if (param && grad && step && tt__fast_path(TT_OP_SGD_STEP, 4, ts)) {
        sgd_k k = {.lr = o->lr, .momentum = o->momentum, .dampening = o->dampening,
                   .wd = o->weight_decay, .nesterov = o->nesterov, .maximize = o->maximize};
        tt_status st = sgd_run(param, grad, momentum_buf, step, &k, false);
        if (!st) { /* what the dispatcher does for a mutated argument */
            tt_bump_version(param);
            if (momentum_buf)
                tt_bump_version(momentum_buf);
        }
        return st;
    }
    return tt_op_call(tt__op(TT_OP_SGD_STEP),
                      TT_ARGS(tt_v_tensor(param), tt_v_tensor(grad),
                              momentum_buf ? tt_v_tensor(momentum_buf) : tt_v_none(),
                              tt_v_tensor(step), tt_v_float(o->lr), tt_v_float(o->momentum),
                              tt_v_float(o->dampening), tt_v_float(o->weight_decay),
                              tt_v_bool(o->nesterov), tt_v_bool(o->maximize)),
                      NULL, 0);
}

tt_tensor *tt_global_norm(int n, tt_tensor *const *ts)
{
    return tt__call_op(TT_OP_GLOBAL_NORM, TT_ARGS(tt_v_tensors(n, ts)));
}
