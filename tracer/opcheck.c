/* tt_opcheck: validates a custom op's registration on example arguments,
 * as torch.library.opcheck does, with reports that say what differed:
 *  - schema: no undeclared mutation, no undeclared aliasing, declared
 *    aliases really alias;
 *  - autograd_registration: inputs that require grad have a backward;
 *  - faketensor: the fake kernel exists, reads no data, and gives the real
 *    kernel's shape, dtype, strides and offset (strides checked on every
 *    device, which catches the layout bugs CPU-only runs miss);
 *  - aot_dispatch_dynamic: the op traced symbolically, compiled and
 *    replayed gives the eager outputs and gradients. */
#include "trace_impl.h"
#include "contract_impl.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define MAXT 64 /* tensors among the arguments (lists flattened) */

static const char *const check_names[TT_OPCHECK_NCHECKS] = {
    "schema", "autograd_registration", "faketensor", "aot_dispatch_dynamic",
};

/* ------------------------------------------------------------ arguments */

/* The checks run on private copies of the arguments (tt__argset, values.c). */

/* The tensors among the arguments, flattened, with their argument index. */
static int tensors_of(const tt_value *v, int n, tt_tensor **ts, int *arg)
{
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (v[i].kind == TT_V_TENSOR && v[i].u.t && k < MAXT) {
            arg[k] = i;
            ts[k++] = v[i].u.t;
        }
        for (int j = 0; v[i].kind == TT_V_TENSORS && j < v[i].n && k < MAXT; j++)
            if (v[i].u.tensors[j]) {
                arg[k] = i;
                ts[k++] = v[i].u.tensors[j];
            }
    }
    return k;
}

static const char *arg_name(const tt_op *op, int i)
{
    return tt_schema_arg(tt_op_schema(op), i)->name;
}

/* Runs the op (no autograd) and collects its outputs. */
static tt_status run_op(const tt_op *op, tt__argset *a, tt_value *outs)
{
    int nr = tt_schema_nreturns(tt_op_schema(op));
    tt_no_grad_begin();
    tt_status st = tt_op_call(op, a->v, a->n, outs, nr);
    tt_no_grad_end();
    return st;
}

static void clear_outs(tt_value *outs, int n)
{
    for (int i = 0; i < n; i++)
        tt_value_clear(&outs[i]);
}

/* ------------------------------------------------------------- reporting */

static tt_check_result fail(tt_opcheck_entry *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static tt_check_result fail(tt_opcheck_entry *e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    return TT_CHECK_FAILED;
}


/* ----------------------------------------------------------------- schema */

static bool return_aliases_arg(const tt_op *op, int ret, int arg)
{
    const tt_arg *r = tt_schema_return(tt_op_schema(op), ret);
    const tt_arg *a = tt_schema_arg(tt_op_schema(op), arg);
    return r->alias_set && a->alias_set && strcmp(r->alias_set, a->alias_set) == 0;
}

static tt_check_result check_schema(const tt_op *op, const tt_value *args, int nargs,
                                    tt_opcheck_entry *e)
{
    tt__argset a;
    tt_value outs[TT_MAX_RETURNS_PUBLIC] = {0};
    tt__snapshots *snaps = NULL;
    tt_tensor *ts[MAXT];
    int arg[MAXT], nt = 0, nr = tt_schema_nreturns(tt_op_schema(op));
    tt_check_result res = TT_CHECK_PASSED;
    char why[1536];
    tt_status st = tt__argset_copy(&a, args, nargs, false);
    if (!st && !(snaps = tt__snapshots_take(tt_op_schema(op), a.v, a.n)))
        st = tt_errcode();
    if (st) {
        res = fail(e, "could not copy the example arguments: %s", tt_errmsg());
        goto done;
    }
    nt = tensors_of(a.v, a.n, ts, arg);
    if (run_op(op, &a, outs)) {
        /* The call refuses undeclared aliases itself (the dispatcher's
         * check, the one reported here); other failures are the op's. */
        size_t pre = strlen(tt_op_name(op)) + 2;
        if (tt_errcode() == TT_ESCHEMA && strlen(tt_errmsg()) > pre &&
            (strncmp(tt_errmsg() + pre, "output", 6) == 0))
            res = fail(e, "%s", tt_errmsg() + pre);
        else
            res = fail(e, "the op failed on the example arguments: %s", tt_errmsg());
        goto done;
    }
    /* Undeclared mutation: the arguments the schema does not mark written,
     * compared with their copies from before the call. */
    if (tt__snapshots_changed(snaps, why, sizeof why, &st)) {
        res = st ? fail(e, "could not read the arguments back: %s", tt_errmsg())
                 : fail(e, "%s", why);
        goto done;
    }
    /* Undeclared aliasing is refused by the call itself; what is left is
     * a declared alias that is not one. */
    for (int j = 0; j < nr && res == TT_CHECK_PASSED; j++) {
        tt_tensor *o = outs[j].kind == TT_V_TENSOR ? outs[j].u.t : NULL;
        bool should = false, does = false;
        int want = -1;
        for (int k = 0; o && k < nt; k++)
            if (return_aliases_arg(op, j, arg[k])) {
                should = true;
                want = arg[k];
                does |= tt_same_storage(o, ts[k]);
            }
        if (should && !does)
            res = fail(e, "output %d should alias argument '%s' per the schema "
                          "('Tensor(%s)'), but it does not share its storage",
                       j, arg_name(op, want), tt_schema_return(tt_op_schema(op), j)->alias_set);
    }
done:
    tt__snapshots_free(snaps);
    clear_outs(outs, nr);
    tt__argset_free(&a);
    tt_clear_error();
    return res;
}

/* -------------------------------------------------- autograd_registration */

static tt_check_result check_autograd(const tt_op *op, const tt_value *args, int nargs,
                                      tt_opcheck_entry *e)
{
    tt_tensor *ts[MAXT];
    int arg[MAXT], nt = tensors_of(args, nargs, ts, arg), trainable = -1;
    /* A custom op that writes an argument cannot have an autograd formula
     * (torch.library registers them on functional ops only): asking for an
     * input with requires_grad, or for a registration, would mislead. */
    const tt_schema *s = tt_op_schema(op);
    int written = -1;
    for (int i = 0; !tt_op_is_builtin(op) && i < tt_schema_nargs(s) && written < 0; i++)
        if (tt_schema_arg(s, i)->is_write)
            written = i;
    for (int k = 0; k < nt && trainable < 0; k++)
        if (tt_requires_grad(ts[k]))
            trainable = arg[k];
    if (trainable < 0 && written >= 0) {
        snprintf(e->message, sizeof e->message,
                 "does not apply: %s mutates argument '%s', and only functional ops can have "
                 "an autograd formula; to train through it, register autograd on a "
                 "functional variant that returns new tensors", tt_op_name(op),
                 arg_name(op, written));
        return TT_CHECK_NOT_EXERCISED;
    }
    if (trainable < 0) {
        snprintf(e->message, sizeof e->message,
                 "no tensor argument requires grad, so training was not exercised; pass an "
                 "input with requires_grad to check it");
        return TT_CHECK_NOT_EXERCISED;
    }
    if (tt_op_has_autograd(op))
        return TT_CHECK_PASSED;
    /* Without a registration the call itself tells whether training works:
     * an op whose outputs are marked non-differentiable runs (nothing
     * needs its gradient); any other is refused with TT_EAUTOGRAD. */
    tt__argset a;
    tt_value outs[TT_MAX_RETURNS_PUBLIC] = {0};
    int nr = tt_schema_nreturns(tt_op_schema(op));
    tt_status st = tt__argset_copy(&a, args, nargs, false);
    if (!st)
        st = tt_op_call(op, a.v, a.n, outs, nr);
    clear_outs(outs, nr);
    tt__argset_free(&a);
    tt_check_result res = TT_CHECK_PASSED;
    if (st && tt_errcode() != TT_EAUTOGRAD)
        res = fail(e, "the op failed on the example arguments: %s", tt_errmsg());
    tt_clear_error();
    if (!st || res != TT_CHECK_PASSED)
        return res;
    if (written >= 0)
        return fail(e, "argument '%s' (#%d) requires grad, but %s mutates argument '%s', and "
                       "only functional ops can have an autograd formula, so it will fail in "
                       "training (TT_EAUTOGRAD); register autograd on a functional variant "
                       "that returns new tensors", arg_name(op, trainable), trainable + 1,
                    tt_op_name(op), arg_name(op, written));
    return fail(e, "argument '%s' (#%d) requires grad, but %s has no autograd registration, "
                   "so it will fail in training (calling it on inputs that require grad is "
                   "TT_EAUTOGRAD). Register a backward with tt_register_autograd(lib, \"%s\", "
                   "backward, setup_context): setup_context saves what the backward needs, "
                   "backward returns one gradient per input",
                arg_name(op, trainable), trainable + 1, tt_op_name(op), tt_op_name(op));
}

/* ------------------------------------------------------------ faketensor */

static bool returns_tensors(const tt_op *op)
{
    const tt_schema *s = tt_op_schema(op);
    for (int j = 0; j < tt_schema_nreturns(s); j++)
        if (tt_schema_return(s, j)->type.base == TT_T_TENSOR)
            return true;
    return false;
}

static tt_check_result compare_meta(int j, const tt_tensor *r, const tt_tensor *f,
                                    tt_opcheck_entry *e)
{
    char why[768];
    if (!r || !f)
        return r == f ? TT_CHECK_PASSED
                      : fail(e, "output %d: the %s kernel returned None and the other a tensor",
                             j, r ? "fake" : "real");
    return tt_meta_mismatch(r, f, why, sizeof why) ? fail(e, "output %d: %s", j, why)
                                                   : TT_CHECK_PASSED;
}

static tt_check_result check_fake(const tt_op *op, const tt_value *args, int nargs,
                                  tt_opcheck_entry *e)
{
    if (!tt_op_has_fake(op) && returns_tensors(op))
        return fail(e, "%s returns tensors but has no fake kernel, so it cannot be traced "
                       "(every torch.compile-style trace of code calling it breaks there). "
                       "Register one with tt_register_fake(lib, \"%s\", fn): it gets fake "
                       "tensors and returns outputs with the real outputs' metadata",
                    tt_op_name(op), tt_op_name(op));
    int nr = tt_schema_nreturns(tt_op_schema(op));
    tt__argset real, fake;
    tt_value ro[TT_MAX_RETURNS_PUBLIC] = {0}, fo[TT_MAX_RETURNS_PUBLIC] = {0};
    tt_check_result res = TT_CHECK_PASSED;
    tt_status st = tt__argset_copy(&real, args, nargs, false);
    if (!st)
        st = tt__argset_copy(&fake, args, nargs, true);
    else
        memset(&fake, 0, sizeof fake);
    if (st) {
        res = fail(e, "could not copy the example arguments: %s", tt_errmsg());
        goto done;
    }
    if (run_op(op, &real, ro)) {
        res = fail(e, "the op failed on the example arguments: %s", tt_errmsg());
        goto done;
    }
    if (run_op(op, &fake, fo)) {
        res = tt_errcode() == TT_EFAKE
                  ? fail(e, "the fake kernel read tensor data, which fake tensors do not have; "
                            "a fake kernel may only use sizes, strides and dtypes (%s)",
                         tt_errmsg())
                  : fail(e, "the fake kernel failed on fake copies of the example arguments: "
                            "%s", tt_errmsg());
        goto done;
    }
    for (int j = 0; j < nr && res == TT_CHECK_PASSED; j++) {
        if (ro[j].kind == TT_V_TENSORS || fo[j].kind == TT_V_TENSORS) {
            if (ro[j].n != fo[j].n) {
                res = fail(e, "output %d: the real kernel returns %d tensors, the fake "
                              "kernel %d", j, ro[j].n, fo[j].n);
                break;
            }
            for (int k = 0; k < ro[j].n && res == TT_CHECK_PASSED; k++)
                res = compare_meta(j, ro[j].u.tensors[k], fo[j].u.tensors[k], e);
            continue;
        }
        if (ro[j].kind == TT_V_TENSOR || fo[j].kind == TT_V_TENSOR)
            res = compare_meta(j, ro[j].kind == TT_V_TENSOR ? ro[j].u.t : NULL,
                               fo[j].kind == TT_V_TENSOR ? fo[j].u.t : NULL, e);
    }
    char why[1024];
    if (res == TT_CHECK_PASSED &&
        tt__alias_mismatch(tt_op_schema(op), real.v, ro, fake.v, fo, real.n, nr, why, sizeof why))
        res = fail(e, "%s", why);
done:
    clear_outs(ro, nr);
    clear_outs(fo, nr);
    tt__argset_free(&real);
    tt__argset_free(&fake);
    tt_clear_error();
    return res;
}

/* --------------------------------------------------- aot_dispatch_dynamic */

/* The traced function: the op on the inputs (tensor arguments replaced by
 * the function's inputs), its tensor results and written arguments as
 * outputs, then -- when training is exercised -- the gradients of the sum
 * of its float results with respect to the inputs that require grad. */
typedef struct {
    const tt_op *op;
    const tt_value *args;
    int nargs;
    int nres;     /* op results that are tensors */
    int nwritten; /* written tensor arguments */
    bool grads;
    int nreq;     /* inputs requiring grad */
} aot_ctx;

static tt_status aot_fn(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    const aot_ctx *c = ud;
    tt_value args[TT_TRACE_MAX_ARGS];
    tt_tensor **lists[TT_TRACE_MAX_ARGS] = {0};
    tt_value res[TT_MAX_RETURNS_PUBLIC] = {0};
    int k = 0, o = 0, nr = tt_schema_nreturns(tt_op_schema(c->op));
    tt_status st = TT_OK;
    for (int i = 0; i < c->nargs && !st; i++) {
        args[i] = c->args[i];
        if (c->args[i].kind == TT_V_TENSOR && c->args[i].u.t) {
            args[i].u.t = in[k++];
        } else if (c->args[i].kind == TT_V_TENSORS) {
            lists[i] = tt__calloc((size_t)(c->args[i].n ? c->args[i].n : 1), sizeof(tt_tensor *));
            if (!lists[i]) {
                st = tt_error(TT_ENOMEM, "tt_opcheck: out of memory");
                break;
            }
            for (int j = 0; j < c->args[i].n; j++)
                lists[i][j] = c->args[i].u.tensors[j] ? in[k++] : NULL;
            args[i].u.tensors = lists[i];
        }
    }
    /* Without a backward to check, the op runs as in inference (an op
     * with no autograd would refuse inputs that require grad). */
    if (!c->grads)
        tt_no_grad_begin();
    if (!st)
        st = tt_op_call(c->op, args, c->nargs, res, nr);
    if (!c->grads)
        tt_no_grad_end();
    tt_tensor *loss = NULL;
    for (int j = 0; !st && j < nr; j++) {
        /* A Tensor[] result: each element is an output (c->nres counted
         * them on a first run). */
        bool list = res[j].kind == TT_V_TENSORS;
        int ne = list ? res[j].n : res[j].kind == TT_V_TENSOR && res[j].u.t ? 1 : 0;
        for (int e = 0; !st && e < ne; e++) {
            tt_tensor *r = list ? res[j].u.tensors[e] : res[j].u.t;
            if (!r)
                continue;
            if (o >= c->nres) {
                st = tt_error(TT_EINVAL, "%s returned more tensors than on its first run (%d)",
                              tt_op_name(c->op), c->nres);
                break;
            }
            out[o++] = tt_retain(r);
            if (c->grads && tt_requires_grad(r)) {
                tt_tensor *s = tt_sum_all(r), *acc = s;
                if (s && loss) {
                    acc = tt_add(loss, s);
                    tt_release(s);
                }
                tt_release(loss);
                loss = acc;
                if (!loss)
                    st = tt_errcode();
            }
        }
    }
    /* The written arguments, as they are after the call. */
    for (int i = 0, t = 0; !st && i < c->nargs; i++) {
        /* A list's tensors are inputs too: skip them to keep t in step. */
        for (int j = 0; c->args[i].kind == TT_V_TENSORS && j < c->args[i].n; j++)
            t += c->args[i].u.tensors[j] != NULL;
        if (c->args[i].kind != TT_V_TENSOR || !c->args[i].u.t)
            continue;
        if (tt_schema_arg(tt_op_schema(c->op), i)->is_write)
            out[o++] = tt_retain(in[t]);
        t++;
    }
    if (!st && c->grads) {
        tt_tensor *req[MAXT];
        int nq = 0;
        for (int i = 0; i < k; i++)
            if (tt_requires_grad(in[i]))
                req[nq++] = in[i];
        if (loss)
            st = tt_grad(1, &loss, NULL, nq, req, out + o);
        else
            st = tt_error(TT_EAUTOGRAD, "no output of %s requires grad", tt_op_name(c->op));
    }
    tt_release(loss);
    clear_outs(res, nr);
    for (int i = 0; i < c->nargs; i++)
        tt__free(lists[i]);
    return st;
}

/* Largest difference between two tensors, and where: 1 when within
 * tolerance, 0 when not, -1 (error set) when they could not be read. */
static int close_enough(const tt_tensor *a, const tt_tensor *b, double atol, double rtol,
                        double *maxdiff, int64_t *where, double *va, double *vb)
{
    int64_t n = tt_numel(a);
    *maxdiff = 0;
    *where = -1;
    if (n != tt_numel(b))
        return 0;
    tt_tensor *ca = tt_to_dtype(a, TT_F64), *cb = tt_to_dtype(b, TT_F64);
    tt_tensor *cca = ca ? tt_contiguous(ca) : NULL, *ccb = cb ? tt_contiguous(cb) : NULL;
    /* A failed conversion is an error to report, not a difference. */
    const double *x = cca && n ? tt_data(cca) : NULL, *y = ccb && n ? tt_data(ccb) : NULL;
    int ok = cca && ccb && (n == 0 || (x && y)) ? 1 : -1;
    /* Every element, not up to the first out of tolerance: the report
     * gives the largest difference. */
    for (int64_t i = 0; ok >= 0 && i < n; i++) {
        /* Equal values (the same infinity included: inf - inf is NaN) and
         * two NaNs agree, as torch.testing.assert_close(equal_nan=True). */
        if (x[i] == y[i] || (isnan(x[i]) && isnan(y[i])))
            continue;
        double d = fabs(x[i] - y[i]);
        if (d > *maxdiff || isnan(d)) {
            *maxdiff = isnan(d) ? INFINITY : d;
            *where = i;
            *va = x[i];
            *vb = y[i];
        }
        if (!(d <= atol + rtol * fabs(y[i])))
            ok = 0;
    }
    tt_release(ca);
    tt_release(cb);
    tt_release(cca);
    tt_release(ccb);
    return ok;
}

/* A bare unbacked symbol ("u3"): its value is whatever the real kernel
 * made, so it is bound from the real output. */
static bool bare_unbacked(tt_size s)
{
    char t[32];
    tt_size_str(s, t, sizeof t);
    return tt_size_is_sym(s) && t[0] == 'u' && strspn(t + 1, "0123456789") == strlen(t + 1);
}

/* Adds sym = val to the binding unless sym is bound already. */
static void bind(tt_size sym, int64_t val, tt_size *syms, int64_t *vals, int *n, int cap)
{
    for (int i = 0; i < *n; i++)
        if (syms[i] == sym)
            return;
    if (*n < cap) {
        syms[*n] = sym;
        vals[*n] = val;
        (*n)++;
    }
}

/* The symbolic trace's fake outputs, evaluated under this call's binding
 * (the placeholders' symbols bound to the real inputs' sizes), must have
 * the real outputs' sizes, strides and offset. The replay runs the real
 * kernel, so a fake kernel that states a wrong symbolic size (s0 - 1 for
 * s0) would otherwise pass unseen. */
static tt_check_result check_fake_metadata(const tt_graph *g, tt_tensor **in, int nin,
                                           tt_tensor **real, int nres, tt_opcheck_entry *e)
{
    enum { CAP = 64 };
    tt_size syms[CAP];
    int64_t vals[CAP];
    int nb = 0;
    if (!g || g->output < 0)
        return TT_CHECK_PASSED;
    for (int k = 0, p = 0; k < g->n && p < nin; k++) {
        if (g->nodes[k].kind != TT_NODE_PLACEHOLDER)
            continue;
        const tt_tensor *f = g->nodes[k].vals[0];
        for (int d = 0; d < tt_ndim(f) && d < tt_ndim(in[p]); d++)
            if (tt_size_is_sym(tt_sizes(f)[d]))
                bind(tt_sizes(f)[d], tt_sizes(in[p])[d], syms, vals, &nb, CAP);
        p++;
    }
    const gnode *o = &g->nodes[g->output];
    for (int j = 0; j < nres && j < o->nouts; j++) {
        const tt_tensor *f = g->nodes[o->outs[j].node].vals[o->outs[j].out], *r = real[j];
        if (!f || !r || tt_ndim(f) != tt_ndim(r))
            continue; /* a rank difference is the shape comparison's to report */
        for (int d = 0; d < tt_ndim(f); d++)
            if (bare_unbacked(tt_sizes(f)[d]))
                bind(tt_sizes(f)[d], tt_sizes(r)[d], syms, vals, &nb, CAP);
        for (int d = -1; d < 2 * tt_ndim(f); d++) {
            /* d = -1: the storage offset; then the sizes, then the strides */
            bool size = d >= 0 && d < tt_ndim(f);
            int dim = size ? d : d - tt_ndim(f);
            tt_size fs = d < 0 ? tt_storage_offset(f) : size ? tt_sizes(f)[dim] : tt_strides(f)[dim];
            int64_t rs = d < 0 ? tt_storage_offset(r) : size ? tt_sizes(r)[dim] : tt_strides(r)[dim];
            int64_t v;
            if (!tt_size_is_sym(fs) && !size)
                continue; /* concrete strides and offsets: the faketensor check's */
            if (!size && d >= 0 && tt_sizes(r)[dim] <= 1)
                continue; /* any stride is right for a dim of size 0 or 1 */
            if (!tt_sym_eval(fs, nb, syms, vals, &v) || v == rs)
                continue;
            char expr[128], binding[512] = "";
            tt_size_str(fs, expr, sizeof expr);
            for (int i = 0; i < nb; i++) {
                char nm[32];
                size_t len = strlen(binding);
                tt_size_str(syms[i], nm, sizeof nm);
                snprintf(binding + len, sizeof binding - len, "%s%s = %lld", i ? ", " : "", nm,
                         (long long)vals[i]);
            }
            char what[48];
            if (d < 0)
                snprintf(what, sizeof what, "storage offset");
            else
                snprintf(what, sizeof what, "%s of dimension %d", size ? "size" : "stride", dim);
            return fail(e, "output %d: the fake kernel's %s is %s, which is %lld for this "
                           "call's sizes (%s), but the real kernel's is %lld: the fake kernel "
                           "must compute the real output's metadata for every input size",
                        j, what, expr, (long long)v, binding, (long long)rs);
        }
    }
    return TT_CHECK_PASSED;
}

/* Adds the elements of op's Tensor[] results on args (run without grad,
 * on copies) to *n. */
static tt_status count_list_elems(const tt_op *op, const tt_value *args, int nargs, int *n)
{
    tt__argset xa;
    tt_value res[TT_MAX_RETURNS_PUBLIC] = {0};
    int nr = tt_schema_nreturns(tt_op_schema(op));
    tt_status st = tt__argset_copy(&xa, args, nargs, false);
    if (st)
        return st;
    tt_no_grad_begin();
    st = tt_op_call(op, xa.v, xa.n, res, nr);
    tt_no_grad_end();
    for (int j = 0; !st && j < nr; j++)
        for (int e = 0; res[j].kind == TT_V_TENSORS && e < res[j].n; e++)
            *n += res[j].u.tensors[e] != NULL;
    clear_outs(res, st ? 0 : nr);
    tt__argset_free(&xa);
    return st;
}

static tt_check_result check_aot(const tt_op *op, const tt_value *args, int nargs,
                                 const tt_opcheck_opts *o, tt_opcheck_entry *e)
{
    double atol = o && o->atol > 0 ? o->atol : 1e-5, rtol = o && o->rtol > 0 ? o->rtol : 1.3e-6;
    tt__argset ea, ca;
    tt_tensor *ets[MAXT], *cts[MAXT], *eo[MAXT] = {0}, *co[MAXT] = {0};
    int arg[MAXT];
    aot_ctx c = {op, NULL, nargs, 0, 0, false, 0};
    tt_check_result res = TT_CHECK_PASSED;
    tt_compiled *comp = NULL;
    memset(&ca, 0, sizeof ca);
    tt_status st = tt__argset_copy(&ea, args, nargs, false);
    if (!st)
        st = tt__argset_copy(&ca, args, nargs, false);
    if (st) {
        res = fail(e, "could not copy the example arguments: %s", tt_errmsg());
        goto done;
    }
    int nt = tensors_of(ea.v, ea.n, ets, arg);
    tensors_of(ca.v, ca.n, cts, arg);
    const tt_schema *s = tt_op_schema(op);
    bool lists = false;
    for (int j = 0; j < tt_schema_nreturns(s); j++) {
        c.nres += tt_schema_return(s, j)->type.base == TT_T_TENSOR &&
                  !tt_schema_return(s, j)->type.is_list;
        lists |= tt_schema_return(s, j)->type.base == TT_T_TENSOR &&
                 tt_schema_return(s, j)->type.is_list;
    }
    /* A Tensor[] result's elements are outputs each: how many, from a run
     * on copies of the arguments (the traced function's outputs are fixed
     * before it runs). */
    if (lists && count_list_elems(op, args, nargs, &c.nres)) {
        res = fail(e, "the op failed when run eagerly: %s", tt_errmsg());
        goto done;
    }
    for (int k = 0; k < nt; k++) {
        c.nwritten += tt_schema_arg(s, arg[k])->is_write && ea.v[arg[k]].kind == TT_V_TENSOR;
        c.nreq += tt_requires_grad(ets[k]);
    }
    /* An out= argument may be uninitialised memory (tt_empty): both runs
     * get it zeroed, so the comparison never reads garbage. */
    for (int k = 0; k < nt; k++)
        if (tt_schema_arg(s, arg[k])->is_write && tt_schema_arg(s, arg[k])->kwarg_only &&
            !tt_is_fake(ets[k]) && (tt_fill_(ets[k], 0) || tt_fill_(cts[k], 0))) {
            res = fail(e, "could not clear out= argument '%s': %s",
                       tt_schema_arg(s, arg[k])->name, tt_errmsg());
            goto done;
        }
    c.grads = c.nreq > 0 && tt_op_has_autograd(op);
    int nout = c.nres + c.nwritten + (c.grads ? c.nreq : 0);
    if (nout > MAXT) { /* a list of many pieces */
        snprintf(e->message, sizeof e->message, "the op gives %d outputs to compare, more "
                                                "than the %d the check compares", nout, MAXT);
        res = TT_CHECK_NOT_EXERCISED;
        goto done;
    }
    if (nout == 0) {
        snprintf(e->message, sizeof e->message, "the op returns no tensor and writes none, "
                                                "so there is nothing to compare");
        res = TT_CHECK_NOT_EXERCISED;
        goto done;
    }
    /* Eager, then compiled (symbolic trace + replay) on the same values. */
    c.args = ea.v;
    if (aot_fn(ets, nt, eo, nout, &c)) {
        res = fail(e, "the op failed when run eagerly%s: %s", c.grads ? " with its backward" : "",
                   tt_errmsg());
        goto done;
    }
    c.args = ca.v;
    /* c holds the arguments, the same for the trace and the replay. */
    tt_trace_opts topts = {.mode = TT_TRACE_SYMBOLIC, .fullgraph = true, .ud = &c,
                           .ud_constant = true};
    comp = tt_compile(aot_fn, nt, nout, &topts);
    if (!comp || tt_compiled_call(comp, cts, co)) {
        /* The eager call just worked: unless the fake kernel is at fault,
         * the likely cause is C code comparing a symbolic size as a
         * number, which fails with the op's own misleading message. */
        tt_status why = tt_errcode();
        res = fail(e, "tracing the op symbolically and compiling it failed: %s%s", tt_errmsg(),
                   why == TT_EFAKE || why == TT_EGRAPHBREAK || why == TT_ENOMEM
                       ? ""
                       : ". The eager call on the same arguments succeeded; in this trace "
                         "sizes are symbols (s0, s1, ...), so code that compares sizes must "
                         "use tt_size_eq/tt_size_lt/tt_size_le, not ==, < or <=");
        goto done;
    }
    res = check_fake_metadata(tt_compiled_graph(comp, 0), cts, nt, eo, c.nres, e);
    for (int j = 0; j < nout && res == TT_CHECK_PASSED; j++) {
        double md, va = 0, vb = 0;
        int64_t where;
        int cmp;
        const char *what = j < c.nres ? "output" : j < c.nres + c.nwritten ? "written argument"
                                                                           : "gradient";
        int idx = j < c.nres ? j : j < c.nres + c.nwritten ? j - c.nres : j - c.nres - c.nwritten;
        if (tt_ndim(eo[j]) != tt_ndim(co[j]) ||
            memcmp(tt_sizes(eo[j]), tt_sizes(co[j]), sizeof(tt_size) * (size_t)tt_ndim(eo[j]))) {
            char a[256], b[256];
            res = fail(e, "%s %d: shape differs: eager %s, compiled %s", what, idx,
                       tt_shape_str(eo[j], a, sizeof a), tt_shape_str(co[j], b, sizeof b));
        } else if (tt_op_tags(op) & TT_TAG_NONDETERMINISTIC_SEEDED) {
            /* Its values come from the RNG: two runs differ by design. */
            continue;
        } else if ((cmp = close_enough(eo[j], co[j], atol, rtol, &md, &where, &va, &vb)) < 0) {
            res = fail(e, "could not compare %s %d: %s", what, idx, tt_errmsg());
        } else if (cmp == 0) {
            res = fail(e, "%s %d differs between eager and the compiled replay of a symbolic "
                          "trace: largest absolute difference %g at flat index %lld (eager %g, "
                          "compiled %g; atol %g, rtol %g). The kernel may depend on something "
                          "other than its inputs (global state, a counter, uninitialized "
                          "memory), or the fake kernel may not describe the real outputs",
                       what, idx, md, (long long)where, va, vb, atol, rtol);
        }
    }
done:
    for (int j = 0; j < MAXT; j++) {
        tt_release(eo[j]);
        tt_release(co[j]);
    }
    tt_compiled_free(comp);
    tt__argset_free(&ea);
    tt__argset_free(&ca);
    tt_clear_error();
    return res;
}

/* ----------------------------------------------------------------- driver */

tt_status tt_opcheck(const tt_op *op, const tt_value *args, int nargs,
                     const tt_opcheck_opts *opts, tt_opcheck_report *report)
{
    tt_opcheck_report local;
    tt_opcheck_report *r = report ? report : &local;
    memset(r, 0, sizeof *r);
    if (!op || !tt_op_schema(op))
        return tt_error(TT_EINVAL, "tt_opcheck: argument 'op' is %s",
                        op ? "an op whose library was freed" : "NULL");
    snprintf(r->op, sizeof r->op, "%s", tt_op_name(op));
    if (nargs < 0 || nargs > TT_TRACE_MAX_ARGS || (nargs > 0 && !args))
        return tt_error(TT_EINVAL, "tt_opcheck: %s: bad argument list (%d arguments)",
                        r->op, nargs);
    /* NaN fails both comparisons, so it is refused too. */
    if (opts && (!(opts->atol >= 0) || !(opts->rtol >= 0)))
        return tt_error(TT_EINVAL, "tt_opcheck: %s: argument 'opts->%s' is %g; expected a "
                        "tolerance >= 0 (0: the default)", r->op,
                        opts->atol >= 0 ? "rtol" : "atol", opts->atol >= 0 ? opts->rtol : opts->atol);
    /* Bind once through a dry look at the schema: fill defaults so every
     * check sees complete arguments. */
    const tt_schema *s = tt_op_schema(op);
    tt_value full[TT_TRACE_MAX_ARGS];
    if (nargs > tt_schema_nargs(s))
        return tt_error(TT_EINVAL, "tt_opcheck: %s takes at most %d arguments, got %d", r->op,
                        tt_schema_nargs(s), nargs);
    for (int i = 0; i < tt_schema_nargs(s); i++) {
        if (i < nargs) {
            full[i] = args[i];
        } else if (tt_schema_arg(s, i)->has_default) {
            full[i] = tt_schema_arg(s, i)->default_value;
        } else {
            return tt_error(TT_EINVAL, "tt_opcheck: %s: missing argument '%s' (#%d)", r->op,
                            tt_schema_arg(s, i)->name, i + 1);
        }
    }
    int n = tt_schema_nargs(s);
    if (opts && (opts->checks & ~(unsigned)TT_OPCHECK_ALL))
        return tt_error(TT_EINVAL, "tt_opcheck: %s: opts->checks has bits 0x%x that name no "
                                   "check (the checks are TT_OPCHECK_SCHEMA 0x1, "
                                   "TT_OPCHECK_AUTOGRAD_REGISTRATION 0x2, TT_OPCHECK_FAKETENSOR "
                                   "0x4 and TT_OPCHECK_AOT_DISPATCH_DYNAMIC 0x8; 0 runs all)",
                        r->op, opts->checks & ~(unsigned)TT_OPCHECK_ALL);
    unsigned which = opts && opts->checks ? opts->checks : TT_OPCHECK_ALL;
    bool raise = opts && opts->raise_exception;
    int failed = -1;
    for (int k = 0; k < TT_OPCHECK_NCHECKS; k++) {
        tt_opcheck_entry *e = &r->entries[k];
        e->check = check_names[k];
        e->result = TT_CHECK_NOT_RUN;
        if (!(which & (1u << k)) || (raise && failed >= 0))
            continue;
        int64_t oom_before = tt__oom_raised();
        switch (k) {
        case 0: e->result = check_schema(op, full, n, e); break;
        case 1: e->result = check_autograd(op, full, n, e); break;
        case 2: e->result = check_fake(op, full, n, e); break;
        default: e->result = check_aot(op, full, n, opts, e); break;
        }
        /* A check that failed because memory ran out found nothing about
         * the op: the call fails as out of memory, not as a broken op. */
        if (e->result == TT_CHECK_FAILED && tt__oom_raised() != oom_before) {
            e->result = TT_CHECK_NOT_RUN;
            return tt_error(TT_ENOMEM, "tt_opcheck: %s: out of memory during the %s check (%s)",
                            r->op, e->check, e->message);
        }
        if (e->result == TT_CHECK_FAILED && failed < 0)
            failed = k;
    }
    if (failed >= 0)
        return tt_error(TT_EOPCHECK, "opcheck %s: %s failed: %s%s", r->op,
                        r->entries[failed].check, r->entries[failed].message,
                        tt_op_tags(op) & TT_TAG_PT2_COMPLIANT
                            ? " (the op is tagged pt2_compliant_tag, a promise that it passes "
                              "opcheck: fix the op or drop the tag)"
                            : "");
    return TT_OK;
}

char *tt_opcheck_report_to_text(const tt_opcheck_report *r)
{
    if (!r) {
        tt_error(TT_EINVAL, "tt_opcheck_report_to_text: argument 'report' is NULL");
        return NULL;
    }
    int counts[4] = {0};
    for (int k = 0; k < TT_OPCHECK_NCHECKS; k++)
        counts[r->entries[k].result]++;
    size_t cap = 512 + TT_OPCHECK_NCHECKS * 1200;
    /* The caller frees the text with free(): libc's malloc, counted by the
     * allocator hook so out-of-memory injection reaches it. */
    char *buf = tt__alloc_request(cap) ? malloc(cap) : NULL;
    if (!buf) {
        tt_error(TT_ENOMEM, "tt_opcheck_report_to_text: out of memory");
        return NULL;
    }
    size_t len = (size_t)snprintf(buf, cap, "opcheck %s: %d passed, %d failed, %d not "
                                            "exercised, %d not run\n", r->op, counts[0],
                                  counts[1], counts[2], counts[3]);
    static const char *const word[] = {"passed", "FAILED", "not exercised", "not run"};
    for (int k = 0; k < TT_OPCHECK_NCHECKS && len < cap; k++) {
        const tt_opcheck_entry *e = &r->entries[k];
        len += (size_t)snprintf(buf + len, cap - len, "  %-22s %s%s%s\n",
                                e->check ? e->check : check_names[k], word[e->result],
                                e->message[0] && e->result != TT_CHECK_PASSED ? ": " : "",
                                e->result != TT_CHECK_PASSED ? e->message : "");
    }
    return buf;
}

tt_status tt_opcheck_report_print(const tt_opcheck_report *r, FILE *f)
{
    return tt__print_text("tt_opcheck_report_print", "the report", tt_opcheck_report_to_text(r), f);
}
