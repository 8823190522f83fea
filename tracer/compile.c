/* tt_compile: trace once per input signature, cache the plan, replay it.
 *
 * Each cached plan keeps its guards: for a fake-mode trace the exact
 * dtype, rank, sizes, strides and requires_grad of each input; for a
 * symbolic trace the dtype, rank, layout (dim order), the sizes that were
 * specialized (0 and 1), and each comparison of symbolic sizes made while
 * tracing, re-evaluated on the new sizes. */
#include "plan_impl.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    tt_dtype dtype;
    int ndim;
    bool requires_grad;
    tt_size sizes[TT_MAX_DIMS], strides[TT_MAX_DIMS]; /* fake mode */
} input_guard;

typedef struct cplan {
    tt_plan *plan;
    input_guard *guards;
    int nin;
    /* Symbolic mode. */
    sym_input *sym_inputs;
    sym_guard *sym_guards;
    int nsym_guards;
    struct cplan *next;
} cplan;

struct tt_compiled {
    tt_fn fn;
    int nin, nout;
    tt_trace_opts opts;
    cplan *plans, *last;
    bool eager; /* the function breaks the graph: run it eagerly */
    tt_compile_stats stats;
};

tt_compiled *tt_compile(tt_fn fn, int nin, int nout, const tt_trace_opts *opts)
{
    if (!fn || nin < 0 || nin > TT_TRACE_MAX_INPUTS || nout < 1 || nout > TT_TRACE_MAX_OUTS) {
        tt_error(TT_EINVAL, "tt_compile: expects a function, 0 to %d inputs and 1 to %d "
                            "outputs (got %d and %d)", TT_TRACE_MAX_INPUTS, TT_TRACE_MAX_OUTS,
                 nin, nout);
        return NULL;
    }
    if (tt__check_trace_opts("tt_compile", opts))
        return NULL;
    if (opts && opts->mode == TT_TRACE_REAL) {
        tt_error(TT_EINVAL, "tt_compile: argument 'opts' asks for a real-mode trace; compile "
                            "traces with fake or symbolic tensors");
        return NULL;
    }
    tt_compiled *c = tt__calloc(1, sizeof *c);
    if (!c) {
        tt_error(TT_ENOMEM, "tt_compile: out of memory");
        return NULL;
    }
    c->fn = fn;
    c->nin = nin;
    c->nout = nout;
    c->opts = opts ? *opts : (tt_trace_opts){0};
    c->opts.nout = nout;
    return c;
}

static void free_cplan(cplan *p)
{
    tt__plan_free(p->plan);
    tt__free(p->guards);
    tt__free(p->sym_inputs);
    tt__free(p->sym_guards);
    tt__free(p);
}

tt_compiled *tt_compiled_free(tt_compiled *c)
{
    if (!c)
        return NULL;
    for (cplan *p = c->plans, *next; p; p = next) {
        next = p->next;
        free_cplan(p);
    }
    tt__free(c);
    return NULL;
}

void tt_compiled_stats(const tt_compiled *c, tt_compile_stats *out)
{
    if (c && out)
        *out = c->stats;
}

const tt_graph *tt_compiled_graph(const tt_compiled *c, int i)
{
    const cplan *p = c ? c->plans : NULL;
    for (; p && i > 0; i--)
        p = p->next;
    return p && i == 0 ? tt__plan_graph(p->plan) : NULL;
}

/* ------------------------------------------------------------------ guards */

/* Checks the fake-mode guards of plan p; on failure writes why. */
static bool check_exact(const cplan *p, tt_tensor **in, char *why, size_t n)
{
    for (int i = 0; i < p->nin; i++) {
        const input_guard *g = &p->guards[i];
        const tt_tensor *t = in[i];
        if (tt_dtype_of(t) != g->dtype || tt_ndim(t) != g->ndim) {
            snprintf(why, n, "input %d: %s with %d dims, the plan was traced with %s with %d "
                             "dims", i, tt_dtype_name(tt_dtype_of(t)), tt_ndim(t),
                     tt_dtype_name(g->dtype), g->ndim);
            return false;
        }
        if (tt_requires_grad(t) != g->requires_grad) {
            snprintf(why, n, "input %d: requires_grad is %s, the plan was traced with %s", i,
                     tt_requires_grad(t) ? "on" : "off", g->requires_grad ? "on" : "off");
            return false;
        }
        /* Sizes before strides: a new size changes the contiguous strides
         * of the dims before it, and the size is the cause to report. */
        for (int d = 0; d < g->ndim; d++)
            if (tt_sizes(t)[d] != g->sizes[d]) {
                snprintf(why, n, "input %d: size of dim %d is %lld, the plan was traced with "
                                 "%lld", i, d, (long long)tt_sizes(t)[d], (long long)g->sizes[d]);
                return false;
            }
        for (int d = 0; d < g->ndim; d++) {
            if (tt_strides(t)[d] != g->strides[d] && g->sizes[d] > 1) {
                snprintf(why, n, "input %d: stride of dim %d is %lld, the plan was traced "
                                 "with %lld", i, d, (long long)tt_strides(t)[d],
                         (long long)g->strides[d]);
                return false;
            }
        }
    }
    return true;
}

/* Symbolic plans: the layout and specialized sizes, then every guard on
 * the sizes bound to the symbols. Fills the bindings. */
static bool check_symbolic(const cplan *p, tt_tensor **in, tt_size *syms, int64_t *vals,
                           int *nsyms, char *why, size_t n)
{
    int k = 0;
    for (int i = 0; i < p->nin; i++) {
        const input_guard *g = &p->guards[i];
        const sym_input *s = &p->sym_inputs[i];
        const tt_tensor *t = in[i];
        if (tt_dtype_of(t) != g->dtype || tt_ndim(t) != g->ndim ||
            tt_requires_grad(t) != g->requires_grad) {
            snprintf(why, n, "input %d: %s with %d dims%s, the plan was traced with %s with "
                             "%d dims%s", i, tt_dtype_name(tt_dtype_of(t)), tt_ndim(t),
                     tt_requires_grad(t) ? " requiring grad" : "", tt_dtype_name(g->dtype),
                     g->ndim, g->requires_grad ? " requiring grad" : "");
            return false;
        }
        const tt_size *sz = tt_sizes(t), *st = tt_strides(t);
        for (int d = 0; d < s->ndim; d++) {
            if (!tt_size_is_sym(s->sizes[d])) {
                if (sz[d] != s->sizes[d]) {
                    snprintf(why, n, "input %d: size of dim %d is %lld; the plan specialized "
                                     "it to %lld", i, d, (long long)sz[d],
                             (long long)s->sizes[d]);
                    return false;
                }
                continue;
            }
            if (sz[d] < 2) {
                snprintf(why, n, "input %d: size of dim %d is %lld; the plan's symbol for it "
                                 "assumes a size of at least 2", i, d, (long long)sz[d]);
                return false;
            }
            syms[k] = s->sizes[d];
            vals[k++] = sz[d];
        }
        /* Dense in the traced dim order. */
        int64_t run = 1;
        for (int j = 0; j < s->ndim; j++) {
            int d = s->order[j];
            if (sz[d] > 1 && st[d] != run) {
                snprintf(why, n, "input %d: its layout differs from the traced one (stride "
                                 "of dim %d is %lld, expected %lld)", i, d, (long long)st[d],
                         (long long)run);
                return false;
            }
            run *= sz[d] > 1 ? sz[d] : 1;
        }
    }
    *nsyms = k;
    for (int i = 0; i < p->nsym_guards; i++) {
        const sym_guard *g = &p->sym_guards[i];
        int64_t a, b;
        if (!tt_sym_eval(g->a, k, syms, vals, &a) || !tt_sym_eval(g->b, k, syms, vals, &b))
            continue; /* about an unbacked size: checked when the kernels run */
        bool r = g->op == TT_GUARD_EQ ? a == b : g->op == TT_GUARD_LT ? a < b : a <= b;
        if (r != g->result) {
            char x[64], y[64];
            tt_size_str(g->a, x, sizeof x);
            tt_size_str(g->b, y, sizeof y);
            snprintf(why, n, "guard %s%s %s %s failed (%lld vs %lld)", g->result ? "" : "not ",
                     x, g->op == TT_GUARD_EQ ? "==" : g->op == TT_GUARD_LT ? "<" : "<=", y,
                     (long long)a, (long long)b);
            return false;
        }
    }
    return true;
}

/* ----------------------------------------------------------------- tracing */

static tt_status make_plan(tt_compiled *c, tt_tensor **in, cplan **out)
{
    tracer tr;
    *out = NULL;
    tt_graph *g = tt__trace_keep(&tr, c->fn, c->nin, in, &c->opts);
    if (!g) {
        tt_status st = tt_errcode();
        if (st == TT_EGRAPHBREAK)
            c->stats.graph_breaks++;
        tt__tracer_end(&tr);
        return st;
    }
    cplan *p = tt__calloc(1, sizeof *p);
    tt_status st = p ? TT_OK : tt_error(TT_ENOMEM, "tt_compile: out of memory");
    if (!st) {
        p->nin = c->nin;
        p->guards = tt__calloc((size_t)(c->nin ? c->nin : 1), sizeof *p->guards);
        if (!p->guards)
            st = tt_error(TT_ENOMEM, "tt_compile: out of memory");
    }
    for (int i = 0; !st && i < c->nin; i++) {
        input_guard *ig = &p->guards[i];
        ig->dtype = tt_dtype_of(in[i]);
        ig->ndim = tt_ndim(in[i]);
        ig->requires_grad = tt_requires_grad(in[i]);
        memcpy(ig->sizes, tt_sizes(in[i]), sizeof(tt_size) * (size_t)ig->ndim);
        memcpy(ig->strides, tt_strides(in[i]), sizeof(tt_size) * (size_t)ig->ndim);
    }
    if (!st && tr.sym) {
        p->sym_inputs = tt__malloc(sizeof *p->sym_inputs * (size_t)(c->nin ? c->nin : 1));
        p->sym_guards = tt__malloc(sizeof *p->sym_guards * (size_t)(tr.sym->nguards ? tr.sym->nguards : 1));
        if (!p->sym_inputs || !p->sym_guards) {
            st = tt_error(TT_ENOMEM, "tt_compile: out of memory");
        } else {
            memcpy(p->sym_inputs, tr.sym->inputs, sizeof *p->sym_inputs * (size_t)c->nin);
            if (tr.sym->nguards) /* guards is NULL when there are none */
                memcpy(p->sym_guards, tr.sym->guards,
                       sizeof *p->sym_guards * (size_t)tr.sym->nguards);
            p->nsym_guards = tr.sym->nguards;
        }
    }
    tt__tracer_end(&tr);
    if (!st) {
        p->plan = tt__plan_new(g); /* takes the graph */
        g = NULL;
        if (!p->plan)
            st = tt_errcode();
    }
    if (st) {
        tt_graph_free(g);
        if (p)
            free_cplan(p);
        return st;
    }
    *out = p;
    return TT_OK;
}

static tt_status run_eager(tt_compiled *c, tt_tensor **in, tt_tensor **out)
{
    c->stats.eager_calls++;
    for (int i = 0; i < c->nout; i++)
        out[i] = NULL;
    tt_status st = c->fn(in, c->nin, out, c->nout, c->opts.ud);
    if (st) {
        for (int i = 0; i < c->nout; i++)
            out[i] = tt_release(out[i]);
        if (tt_errcode() == TT_OK)
            tt_error(st, "tt_compiled_call: the function failed (%s)", tt_status_name(st));
    }
    return st;
}

tt_status tt_compiled_call(tt_compiled *c, tt_tensor **in, tt_tensor **out)
{
    if (!c || (c->nin > 0 && !in) || !out)
        return tt_error(TT_EINVAL, "tt_compiled_call: argument '%s' is NULL",
                        !c ? "compiled" : !out ? "outputs" : "inputs");
    for (int i = 0; i < c->nin; i++)
        if (!in[i])
            return tt_error(TT_EINVAL, "tt_compiled_call: input %d is NULL", i);
    /* NULL on every failure, also when tracing fails. */
    for (int i = 0; i < c->nout; i++)
        out[i] = NULL;
    c->stats.calls++;
    if (c->eager)
        return run_eager(c, in, out);
    bool symbolic = c->opts.mode == TT_TRACE_SYMBOLIC;
    char why[256] = "first call";
    tt_size syms[TT_TRACE_MAX_INPUTS * TT_MAX_DIMS];
    int64_t vals[TT_TRACE_MAX_INPUTS * TT_MAX_DIMS];
    int nsyms = 0;
    for (cplan *p = c->plans; p; p = p->next) {
        bool ok = symbolic ? check_symbolic(p, in, syms, vals, &nsyms, why, sizeof why)
                           : check_exact(p, in, why, sizeof why);
        if (ok) {
            c->stats.hits++;
            return tt__plan_run(p->plan, in, c->nin, out, c->nout, syms, vals, nsyms);
        }
    }
    c->stats.misses++;
    snprintf(c->stats.last_miss, sizeof c->stats.last_miss, "%s", why);
    cplan *p;
    tt_status st = make_plan(c, in, &p);
    if (st == TT_EGRAPHBREAK && !c->opts.fullgraph) {
        /* The function needs real data somewhere: run it as C code. */
        c->eager = true;
        tt_clear_error();
        return run_eager(c, in, out);
    }
    if (st)
        return st;
    if (c->last)
        c->last->next = p;
    else
        c->plans = p;
    c->last = p;
    c->stats.plans++;
    if (symbolic && !check_symbolic(p, in, syms, vals, &nsyms, why, sizeof why))
        return tt_error(TT_EINTERNAL, "tt_compiled_call: a fresh plan fails its own guards "
                                      "(%s)", why);
    return tt__plan_run(p->plan, in, c->nin, out, c->nout, syms, vals, nsyms);
}
