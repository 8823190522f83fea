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
    const char *name; /* opts.name or "forward", for the log */
    cplan *plans, *last;
    /* Symbolic mode: a call's bindings of the plans' symbols to the
     * inputs' sizes (at most TT_MAX_DIMS per input), made once here so a
     * replay makes no allocator calls. */
    tt_size *syms;
    int64_t *vals;
    bool eager; /* the function breaks the graph: run it eagerly */
    bool warned_limit; /* the recompile limit's warning was printed */
    tt_compile_stats stats;
};

/* dynamo's cache_size_limit */
#define TT_RECOMPILE_LIMIT_DEFAULT 8

tt_compiled *tt_compile(tt_fn fn, int nin, int nout, const tt_trace_opts *opts)
{
    if (!fn || nin < 0 || nin > TT_TRACE_MAX_INPUTS || nout < 1) {
        tt_error(TT_EINVAL, "tt_compile: expects a function, 0 to %d inputs and 1 or more "
                            "outputs (got %d and %d)", TT_TRACE_MAX_INPUTS, nin, nout);
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
    if (opts && opts->mode == TT_TRACE_SYMBOLIC && nin > 0) {
        size_t n = (size_t)nin * TT_MAX_DIMS;
        c->syms = tt__malloc(sizeof *c->syms * n);
        c->vals = tt__malloc(sizeof *c->vals * n);
        if (!c->syms || !c->vals) {
            tt_compiled_free(c);
            tt_error(TT_ENOMEM, "tt_compile: out of memory");
            return NULL;
        }
    }
    c->fn = fn;
    c->nin = nin;
    c->nout = nout;
    c->opts = opts ? *opts : (tt_trace_opts){0};
    c->opts.nout = nout;
    c->name = c->opts.name ? c->opts.name : "forward";
    if (c->opts.recompile_limit <= 0)
        c->opts.recompile_limit = TT_RECOMPILE_LIMIT_DEFAULT;
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
    tt__free(c->syms);
    tt__free(c->vals);
    tt__free(c);
    return NULL;
}

void tt_compiled_stats(const tt_compiled *c, tt_compile_stats *out)
{
    if (c && out) {
        *out = c->stats;
        if (c->last)
            tt__plan_stats(c->last->plan, out);
    }
}

const tt_graph *tt_compiled_graph(const tt_compiled *c, int i)
{
    const cplan *p = c ? c->plans : NULL;
    for (; p && i > 0; i--)
        p = p->next;
    return p && i == 0 ? tt__plan_graph(p->plan) : NULL;
}

/* ------------------------------------------------------------------ guards */

/* The guard failure texts name the input as the graph does and read as
 * the guard that failed, then what the call had: "in0.size(0) == 256 (got
 * 128)". */
#define NAME(i) tt__input_name(&c->opts, (i), nm, sizeof nm)

/* The guards both kinds of plan share: dtype, rank, requires_grad. */
static bool check_kind(const tt_compiled *c, const input_guard *g, int i, const tt_tensor *t,
                       char *why, size_t n)
{
    char nm[64];
    if (tt_dtype_of(t) != g->dtype) {
        snprintf(why, n, "%s.dtype == %s (got %s)", NAME(i), tt_dtype_name(g->dtype),
                 tt_dtype_name(tt_dtype_of(t)));
        return false;
    }
    if (tt_ndim(t) != g->ndim) {
        snprintf(why, n, "%s.dim() == %d (got %d)", NAME(i), g->ndim, tt_ndim(t));
        return false;
    }
    if (tt_requires_grad(t) != g->requires_grad) {
        snprintf(why, n, "%s.requires_grad == %s (got %s)", NAME(i),
                 g->requires_grad ? "True" : "False", tt_requires_grad(t) ? "True" : "False");
        return false;
    }
    return true;
}

/* Checks the fake-mode guards of plan p; on failure writes why. */
static bool check_exact(const tt_compiled *c, const cplan *p, tt_tensor **in, char *why,
                        size_t n)
{
    char nm[64];
    for (int i = 0; i < p->nin; i++) {
        const input_guard *g = &p->guards[i];
        const tt_tensor *t = in[i];
        if (!check_kind(c, g, i, t, why, n))
            return false;
        /* Sizes before strides: a new size changes the contiguous strides
         * of the dims before it, and the size is the cause to report. */
        for (int d = 0; d < g->ndim; d++)
            if (tt_sizes(t)[d] != g->sizes[d]) {
                snprintf(why, n, "%s.size(%d) == %lld (got %lld)", NAME(i), d,
                         (long long)g->sizes[d], (long long)tt_sizes(t)[d]);
                return false;
            }
        for (int d = 0; d < g->ndim; d++) {
            if (tt_strides(t)[d] != g->strides[d] && g->sizes[d] > 1) {
                snprintf(why, n, "%s.stride(%d) == %lld (got %lld)", NAME(i), d,
                         (long long)g->strides[d], (long long)tt_strides(t)[d]);
                return false;
            }
        }
    }
    return true;
}

/* Symbolic plans: the layout and specialized sizes, then every guard on
 * the sizes bound to the symbols. Fills the bindings. */
static bool check_symbolic(const tt_compiled *c, const cplan *p, tt_tensor **in,
                           tt_size *syms, int64_t *vals, int *nsyms, char *why, size_t n)
{
    char nm[64];
    int k = 0;
    for (int i = 0; i < p->nin; i++) {
        const input_guard *g = &p->guards[i];
        const sym_input *s = &p->sym_inputs[i];
        const tt_tensor *t = in[i];
        if (!check_kind(c, g, i, t, why, n))
            return false;
        const tt_size *sz = tt_sizes(t), *st = tt_strides(t);
        for (int d = 0; d < s->ndim; d++) {
            if (!tt_size_is_sym(s->sizes[d])) {
                if (sz[d] != s->sizes[d]) {
                    snprintf(why, n, "%s.size(%d) == %lld (got %lld; the plan specialized "
                                     "it)", NAME(i), d, (long long)s->sizes[d],
                             (long long)sz[d]);
                    return false;
                }
                continue;
            }
            if (sz[d] < 2) {
                snprintf(why, n, "%s.size(%d) >= 2 (got %lld; the plan's symbol for it "
                                 "assumes it)", NAME(i), d, (long long)sz[d]);
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
                snprintf(why, n, "%s.stride(%d) == %lld (got %lld; the plan is for the "
                                 "traced layout)", NAME(i), d, (long long)run,
                         (long long)st[d]);
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
            snprintf(why, n, "%s%s %s %s (got %lld vs %lld)", g->result ? "" : "not ",
                     x, g->op == TT_GUARD_EQ ? "==" : g->op == TT_GUARD_LT ? "<" : "<=", y,
                     (long long)a, (long long)b);
            return false;
        }
    }
    return true;
}

/* ----------------------------------------------------------------- tracing */

/* TT_LOG=graph_breaks, and the words of the warning when compile falls
 * back to eager: "data read at file:line in func()". */
static void note_break(tt_compiled *c, const tracer *tr, char *brief, size_t n)
{
    const tt_break_info *b = &tr->brk;
    if (b->loc.file)
        snprintf(brief, n, "%s at %s:%d in %s()", tt_break_kind_name(b->kind), b->loc.file,
                 b->loc.line, b->loc.func ? b->loc.func : "?");
    else
        snprintf(brief, n, "%s%s%s", tt_break_kind_name(b->kind), b->op ? " in " : "",
                 b->op ? b->op : "");
    tt__log(TT_LOG_GRAPH_BREAKS, "graph_break %s: %s: %s", c->name, brief, b->reason);
}

/* TT_LOG=guards, graph, plan and perf for plan k, just made. */
static void log_plan(const tt_compiled *c, const cplan *p, tt_tensor **in,
                     int k, double trace_ms, double plan_ms)
{
    char nm[64], text[600];
    if (tt__log_on(TT_LOG_GUARDS)) {
        for (int i = 0; i < c->nin; i++) {
            if (p->sym_inputs) { /* sizes as symbols, the layout as traced */
                const sym_input *si = &p->sym_inputs[i];
                char sizes[256];
                tt_size_list_str(si->ndim, si->sizes, false, sizes, sizeof sizes);
                snprintf(text, sizeof text, "check_tensor(%s, requires_grad=%s, size=%s, "
                                            "dense in the traced dim order)",
                         tt_dtype_name(tt_dtype_of(in[i])),
                         tt_requires_grad(in[i]) ? "True" : "False", sizes);
            } else {
                tt__guard_text(in[i], text, sizeof text);
            }
            tt__log(TT_LOG_GUARDS, "guards %s plan %d: %s: %s", c->name, k + 1, NAME(i), text);
        }
        for (int i = 0; i < p->nsym_guards; i++) {
            const sym_guard *g = &p->sym_guards[i];
            char x[64], y[64];
            tt_size_str(g->a, x, sizeof x);
            tt_size_str(g->b, y, sizeof y);
            tt__log(TT_LOG_GUARDS, "guards %s plan %d: %s%s %s %s", c->name, k + 1,
                    g->result ? "" : "not ", x,
                    g->op == TT_GUARD_EQ ? "==" : g->op == TT_GUARD_LT ? "<" : "<=", y);
        }
    }
    if (tt__log_on(TT_LOG_GRAPH)) {
        char *g = tt_graph_to_text(tt__plan_graph(p->plan));
        if (g) {
            size_t len = strlen(g);
            tt__log(TT_LOG_GRAPH, "graph %s plan %d:\n%.*s", c->name, k + 1,
                    (int)(len && g[len - 1] == '\n' ? len - 1 : len), g);
            free(g);
        }
        tt_clear_error();
    }
    if (tt__log_on(TT_LOG_PLAN)) {
        tt__plan_describe(p->plan, text, sizeof text);
        tt__log(TT_LOG_PLAN, "plan %s plan %d: %s", c->name, k + 1, text);
    }
    tt__log(TT_LOG_PERF, "perf %s plan %d: traced in %.3f ms, planned in %.3f ms", c->name,
            k + 1, trace_ms, plan_ms);
}

static tt_status make_plan(tt_compiled *c, tt_tensor **in, cplan **out, char *brief,
                           size_t nbrief)
{
    tracer tr;
    *out = NULL;
    double t0 = tt__now_ms();
    tt_graph *g = tt__trace_keep(&tr, c->fn, c->nin, in, &c->opts);
    double t1 = tt__now_ms();
    if (!g) {
        tt_status st = tt_errcode();
        if (st == TT_EGRAPHBREAK) {
            c->stats.graph_breaks++;
            note_break(c, &tr, brief, nbrief);
        }
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
        /* The plan takes the trace's arrays (NULL when there are none). */
        p->sym_inputs = tr.sym->inputs;
        p->sym_guards = tr.sym->guards;
        p->nsym_guards = tr.sym->nguards;
        tr.sym->inputs = NULL;
        tr.sym->guards = NULL;
    }
    if (!st) {
        p->plan = tt__plan_new(g, c->opts.passes_off); /* takes the graph */
        g = NULL;
        if (!p->plan)
            st = tt_errcode();
    }
    if (!st)
        log_plan(c, p, in, c->stats.plans, t1 - t0, tt__now_ms() - t1);
    tt__tracer_end(&tr);
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
    tt_size *syms = c->syms;
    int64_t *vals = c->vals;
    int nsyms = 0;
    for (cplan *p = c->plans; p; p = p->next) {
        bool ok = symbolic ? check_symbolic(c, p, in, syms, vals, &nsyms, why, sizeof why)
                           : check_exact(c, p, in, why, sizeof why);
        if (ok) {
            c->stats.hits++;
            return tt__plan_run(p->plan, in, c->nin, out, c->nout, syms, vals, nsyms);
        }
    }
    c->stats.misses++;
    snprintf(c->stats.last_miss, sizeof c->stats.last_miss, "%s", why);
    if (c->plans)
        tt__log(TT_LOG_RECOMPILES, "recompile %s: guard failed: %s", c->name, why);
    if (c->stats.plans >= c->opts.recompile_limit) {
        /* As dynamo past cache_size_limit: new signatures run eagerly. */
        c->stats.at_recompile_limit = true;
        if (!c->warned_limit) {
            c->warned_limit = true;
            tt__log(0, "warning %s: hit the recompile limit (%d plans): calls that fail every "
                       "plan's guards run eagerly from now on; the guard that keeps failing: "
                       "%s", c->name, c->opts.recompile_limit, why);
        }
        return run_eager(c, in, out);
    }
    cplan *p;
    char brief[512] = "";
    tt_status st = make_plan(c, in, &p, brief, sizeof brief);
    if (st == TT_EGRAPHBREAK && !c->opts.fullgraph) {
        /* The function needs real data somewhere: run it as C code. */
        c->eager = true;
        tt_clear_error();
        tt__log(0, "warning %s: graph break (%s): without fullgraph the function runs "
                   "eagerly from now on", c->name, brief);
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
    if (symbolic && !check_symbolic(c, p, in, syms, vals, &nsyms, why, sizeof why))
        return tt_error(TT_EINTERNAL, "tt_compiled_call: a fresh plan fails its own guards "
                                      "(%s)", why);
    return tt__plan_run(p->plan, in, c->nin, out, c->nout, syms, vals, nsyms);
}
