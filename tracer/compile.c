/* tt_compile: trace once per input signature, cache the plan, replay it.
 *
 * Each cached plan keeps its guards: for a fake-mode trace the exact
 * dtype, rank, sizes, strides and requires_grad of each input; for a
 * symbolic trace the dtype, rank, the sizes and storage offsets that were
 * specialized (0 and 1), the strides (expressions of the sizes, or
 * constants) and each comparison of symbolic sizes made while tracing,
 * re-evaluated on the new sizes and offsets. Besides its tensors a plan
 * guards on what fn reads that is not a tensor: the scalar arguments it
 * read (tt_fn_arg_int ...) and the declared bytes of *ud. */
#include "plan_impl.h"
#include "profile_impl.h"
#include "tt_progress.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    tt_dtype dtype;
    int ndim;
    bool requires_grad;
    tt_size sizes[TT_MAX_DIMS], strides[TT_MAX_DIMS]; /* fake mode */
} input_guard;

/* What a plan checks of a scalar argument fn read while tracing. */
typedef struct {
    int index;
    enum {
        AG_INT,    /* an int, this value */
        AG_FLOAT,  /* a float, this value */
        AG_SYM,    /* an int >= 2 bound to sym (a dynamic int, symbolic mode) */
    } kind; /* (dynamic floats, graph inputs, are cplan.tensor_args) */
    int64_t i;
    double f;
    tt_size sym;
    bool pinned; /* AG_SYM: also read as a float, a constant: value i only */
} arg_guard;

typedef struct cplan {
    tt_plan *plan;
    input_guard *guards;
    int nin;
    arg_guard *aguards;
    int naguards;
    /* The dynamic floats that are graph inputs after the tensors: the
     * call's must be the same ones (a bit per scalar index). */
    uint64_t tensor_args;
    unsigned char *ud_bytes; /* opts.ud_size bytes of *ud when traced */
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
     * inputs' sizes and storage offsets (at most TT_MAX_DIMS + 1 per
     * input), made once here so a replay makes no allocator calls. */
    tt_size *syms;
    int64_t *vals;
    /* Copies of opts' name and input names: the caller's may be gone by
     * a later call (a name array on the stack of the function that
     * compiled). */
    char *name_copy;
    char **names_copy;
    bool eager; /* the function breaks the graph: run it eagerly */
    bool warned_limit; /* the recompile limit's warning was printed */
    bool warned_ud; /* the warning that ud is frozen was printed */
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
    if (opts && opts->ud_size && !opts->ud) {
        tt_error(TT_EINVAL, "tt_compile: argument 'opts->ud_size' is %zu but 'opts->ud' is "
                            "NULL; ud_size declares the bytes of *ud fn reads", opts->ud_size);
        return NULL;
    }
    tt_compiled *c = tt__calloc(1, sizeof *c);
    if (!c) {
        tt_error(TT_ENOMEM, "tt_compile: out of memory");
        return NULL;
    }
    if (opts && opts->mode == TT_TRACE_SYMBOLIC) {
        /* The scalars' symbols are bound first, then the inputs' sizes
         * and storage offsets. */
        size_t n = (size_t)nin * (TT_MAX_DIMS + 1) + TT_MAX_SCALAR_ARGS;
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
    bool ok = !c->opts.name || (c->name_copy = strdup(c->opts.name));
    if (ok && c->opts.input_names && nin > 0) {
        ok = (c->names_copy = calloc((size_t)nin, sizeof *c->names_copy)) != NULL;
        for (int i = 0; ok && i < nin; i++)
            ok = !c->opts.input_names[i] ||
                 (c->names_copy[i] = strdup(c->opts.input_names[i])) != NULL;
    }
    if (!ok) {
        tt_compiled_free(c);
        tt_error(TT_ENOMEM, "tt_compile: out of memory");
        return NULL;
    }
    c->opts.name = c->name_copy;
    if (c->names_copy)
        c->opts.input_names = (const char *const *)c->names_copy;
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
    tt__free(p->aguards);
    tt__free(p->ud_bytes);
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
    for (int i = 0; c->names_copy && i < c->nin; i++)
        free(c->names_copy[i]);
    free(c->names_copy);
    free(c->name_copy);
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

int tt__compiled_nout(const tt_compiled *c)
{
    return c ? c->nout : 0;
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

/* Whether a call's stride `got` is the traced one, `want` (an expression
 * of the sizes bound in syms/vals, or a constant). When not, writes what
 * was wanted: "1", or "s1*2 = 8". */
static bool layout_holds(tt_size want, int64_t got, int nsyms, const tt_size *syms,
                         const int64_t *vals, char *what, size_t n)
{
    int64_t v = want;
    if (tt_size_is_sym(want) && !tt_sym_eval(want, nsyms, syms, vals, &v))
        v = -1; /* not an expression of the bound sizes: never holds */
    if (v == got)
        return true;
    if (tt_size_is_sym(want)) {
        char e[64];
        tt_size_str(want, e, sizeof e);
        snprintf(what, n, "%s = %lld", e, (long long)v);
    } else {
        snprintf(what, n, "%lld", (long long)v);
    }
    return false;
}

/* Symbolic plans: the specialized sizes and the layout, then every guard
 * on the sizes bound to the symbols. Fills the bindings. */
static bool check_symbolic(const tt_compiled *c, const cplan *p, tt_tensor **in,
                           tt_size *syms, int64_t *vals, int *nsyms, char *why, size_t n)
{
    char nm[64], what[96];
    int k = *nsyms; /* after the scalars' symbols */
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
        /* The layout as traced (innermost dim first, so a transposed call
         * names the dim whose stride should be 1): each stride of a dim
         * the call has at size >= 2 (no kernel reads the others),
         * evaluated on the sizes just bound; then the storage offset, a
         * symbol bound like a size or a specialized 0 or 1. */
        for (int j = 0; j < s->ndim; j++) {
            int d = s->order[j];
            if (sz[d] > 1 && !layout_holds(s->strides[d], st[d], k, syms, vals, what,
                                           sizeof what)) {
                snprintf(why, n, "%s.stride(%d) == %s (got %lld; the plan is for the traced "
                                 "layout)", NAME(i), d, what, (long long)st[d]);
                return false;
            }
        }
        int64_t off = tt_storage_offset(t);
        if (tt_size_is_sym(s->offset)) {
            if (off < 2) {
                snprintf(why, n, "%s.storage_offset() >= 2 (got %lld; the plan's symbol for it "
                                 "assumes it)", NAME(i), (long long)off);
                return false;
            }
            syms[k] = s->offset;
            vals[k++] = off;
        } else if (off != s->offset) {
            snprintf(why, n, "%s.storage_offset() == %lld (got %lld; the plan specialized "
                             "it)", NAME(i), (long long)s->offset, (long long)off);
            return false;
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

/* ------------------------------------------------------ scalar arguments */

/* The scalar arguments of the compiled call running fn on this thread,
 * and while it traces, what fn read of them (the plan's guards). Calls
 * nest (fn may call another compiled function), so each saves the outer
 * one. */
typedef struct argctx {
    const tt_value *v;
    int n;
    uint64_t dynamic;   /* opts.dynamic_args */
    bool tracing, symbolic;
    tt_tensor *tensors[TT_MAX_SCALAR_ARGS]; /* tt_fn_arg_tensor's (borrowed) */
    arg_guard guards[TT_MAX_SCALAR_ARGS];   /* at most one per index */
    int nguards;
    tt_status failed; /* a bad read: the call fails with msg once fn returns */
    char msg[256];
    struct argctx *prev;
} argctx;

static _Thread_local argctx *cur_args;

/* Records a bad read of scalar argument i by tt_fn_arg_<what> (the first
 * one's message wins) and sets the error. */
static void arg_fail(argctx *a, const char *what, int i)
{
    char m[256];
    if (!a)
        snprintf(m, sizeof m, "tt_fn_arg_%s: called outside a compiled call "
                              "(tt_compiled_call_args passes the scalar arguments)", what);
    else if (i < 0 || i >= a->n)
        snprintf(m, sizeof m, "tt_fn_arg_%s: scalar argument %d is missing (the call passed "
                              "%d)", what, i, a->n);
    else if (strcmp(what, "tensor") == 0)
        snprintf(m, sizeof m, "tt_fn_arg_tensor: scalar argument %d is not a dynamic float "
                              "(mark it in opts.dynamic_args and pass a TT_V_FLOAT)", i);
    else
        snprintf(m, sizeof m, "tt_fn_arg_%s: scalar argument %d is a float, not an int", what,
                 i);
    if (a && !a->failed) {
        a->failed = TT_EINVAL;
        snprintf(a->msg, sizeof a->msg, "%s", m);
    }
    tracer *tr = a ? NULL : tt__tracer_current();
    if (tr) {
        /* tt_trace or explain, which pass no scalars: the 0 returned
         * would be recorded as if it were the value, so the trace fails
         * (the break names the call, as a data read's does). */
        char reason[384];
        snprintf(reason, sizeof reason, "%s; a plain trace has no scalar arguments, and the 0 "
                                        "it returns would be traced as the value", m);
        if (tr->on_break)
            tr->on_break(tr, TT_BREAK_EXPLICIT, NULL, reason, tt__callsite(), NULL, 0);
        else
            tt__tracer_break(tr, TT_BREAK_EXPLICIT, reason, NULL, tt__callsite());
    }
    tt_error(TT_EINVAL, "%s", m);
}

static arg_guard *arg_guard_of(argctx *a, int i)
{
    for (int k = 0; k < a->nguards; k++)
        if (a->guards[k].index == i)
            return &a->guards[k];
    return NULL;
}

int64_t tt_fn_arg_int(int i)
{
    argctx *a = cur_args;
    if (!a || i < 0 || i >= a->n || a->v[i].kind != TT_V_INT) {
        arg_fail(a, "int", i);
        return 0;
    }
    int64_t v = a->v[i].u.i;
    if (!a->tracing)
        return v;
    arg_guard *g = arg_guard_of(a, i);
    if (g)
        return g->kind == AG_SYM ? g->sym : v;
    g = &a->guards[a->nguards++];
    *g = (arg_guard){.index = i, .kind = AG_INT, .i = v};
    /* A dynamic int of 2 or more becomes a size symbol; 0 and 1 are
     * specialized, as dynamo specializes them (and as input sizes are). */
    if (a->symbolic && (a->dynamic >> i & 1) && v >= 2) {
        tt_size sym = tt_sym_new("s", v);
        if (sym != 0) {
            g->kind = AG_SYM;
            g->sym = sym;
            return sym;
        }
        tt_clear_error(); /* out of memory for the symbol: a guarded constant */
    }
    return v;
}

double tt_fn_arg_float(int i)
{
    argctx *a = cur_args;
    if (!a || i < 0 || i >= a->n) {
        arg_fail(a, "float", i);
        return 0;
    }
    const tt_value *v = &a->v[i];
    arg_guard *g = a->tracing ? arg_guard_of(a, i) : NULL;
    if (g && g->kind == AG_SYM)
        g->pinned = true; /* the float is a constant in the graph */
    else if (a->tracing && !g)
        a->guards[a->nguards++] = v->kind == TT_V_INT
                                      ? (arg_guard){.index = i, .kind = AG_INT, .i = v->u.i}
                                      : (arg_guard){.index = i, .kind = AG_FLOAT, .f = v->u.f};
    /* A dynamic float read as a number is frozen in the plan like any
     * other: guarded, so a new value traces again. */
    return v->kind == TT_V_INT ? (double)v->u.i : v->u.f;
}

tt_tensor *tt_fn_arg_tensor(int i)
{
    argctx *a = cur_args;
    if (!a || i < 0 || i >= a->n || !a->tensors[i]) {
        arg_fail(a, "tensor", i);
        return NULL;
    }
    return a->tensors[i];
}

/* Which scalars are graph inputs: the dynamic floats. */
static uint64_t tensor_args_of(const tt_compiled *c, const tt_value *args, int nargs)
{
    uint64_t m = 0;
    for (int i = 0; i < nargs; i++)
        if ((c->opts.dynamic_args >> i & 1) && args[i].kind == TT_V_FLOAT)
            m |= (uint64_t)1 << i;
    return m;
}

/* Checks plan p's scalar and ud guards on this call, binding the scalar
 * symbols into syms/vals (from *nsyms on); on failure writes why. */
static bool check_args(const tt_compiled *c, const cplan *p, const tt_value *args, int nargs,
                       tt_size *syms, int64_t *vals, int *nsyms, char *why, size_t n)
{
    if (p->ud_bytes) {
        const unsigned char *now = c->opts.ud;
        for (size_t b = 0; b < c->opts.ud_size; b++)
            if (now[b] != p->ud_bytes[b]) {
                snprintf(why, n, "ud[%zu] == 0x%02x (got 0x%02x; opts.ud_size declares the %zu "
                                 "bytes of *ud the function reads)", b, p->ud_bytes[b], now[b],
                         c->opts.ud_size);
                return false;
            }
    }
    for (int k = 0; k < p->naguards; k++) {
        const arg_guard *g = &p->aguards[k];
        int i = g->index;
        bool want_int = g->kind == AG_INT || g->kind == AG_SYM;
        if (i >= nargs) {
            snprintf(why, n, "arg%d is passed (got %d scalar arguments)", i, nargs);
            return false;
        }
        if ((args[i].kind == TT_V_INT) != want_int) {
            snprintf(why, n, "arg%d is %s (got %s)", i, want_int ? "an int" : "a float",
                     args[i].kind == TT_V_INT ? "an int" : "a float");
            return false;
        }
        if (g->kind == AG_INT && args[i].u.i != g->i) {
            snprintf(why, n, "arg%d == %lld (got %lld)", i, (long long)g->i,
                     (long long)args[i].u.i);
            return false;
        }
        if (g->kind == AG_FLOAT && !(args[i].u.f == g->f)) {
            snprintf(why, n, "arg%d == %.17g (got %.17g)", i, g->f, args[i].u.f);
            return false;
        }
        if (g->kind == AG_SYM) {
            if (args[i].u.i < 2) {
                snprintf(why, n, "arg%d >= 2 (got %lld; the plan's symbol for it assumes it)",
                         i, (long long)args[i].u.i);
                return false;
            }
            if (g->pinned && args[i].u.i != g->i) {
                snprintf(why, n, "arg%d == %lld (got %lld; the function read it as a float "
                                 "too, a constant in the plan)", i, (long long)g->i,
                         (long long)args[i].u.i);
                return false;
            }
            syms[*nsyms] = g->sym;
            vals[(*nsyms)++] = args[i].u.i;
        }
    }
    uint64_t t = tensor_args_of(c, args, nargs);
    if (t != p->tensor_args) {
        int i = 0;
        while (!((t ^ p->tensor_args) >> i & 1))
            i++;
        snprintf(why, n, "arg%d is %sa dynamic float (a graph input)", i,
                 p->tensor_args >> i & 1 ? "" : "not ");
        return false;
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
    char nm[64], text[1024];
    if (tt__log_on(TT_LOG_GUARDS)) {
        for (int i = 0; i < c->nin; i++) {
            if (p->sym_inputs) { /* sizes as symbols, the layout as traced */
                const sym_input *si = &p->sym_inputs[i];
                char sizes[256], strides[256], off[96] = "";
                tt_size_list_str(si->ndim, si->sizes, false, sizes, sizeof sizes);
                tt_size_list_str(si->ndim, si->strides, false, strides, sizeof strides);
                if (si->offset != 0) {
                    char e[64];
                    tt_size_str(si->offset, e, sizeof e);
                    snprintf(off, sizeof off, ", storage_offset=%s", e);
                }
                /* The strides of dims of size 1 are not checked, as in
                 * fake mode. */
                snprintf(text, sizeof text, "check_tensor(%s, requires_grad=%s, size=%s, "
                                            "stride=%s%s)",
                         tt_dtype_name(tt_dtype_of(in[i])),
                         tt_requires_grad(in[i]) ? "True" : "False", sizes, strides, off);
            } else {
                tt__guard_text(in[i], text, sizeof text);
            }
            tt__log(TT_LOG_GUARDS, "guards %s plan %d: %s: %s", c->name, k + 1, NAME(i), text);
        }
        for (int i = 0; i < p->naguards; i++) {
            const arg_guard *g = &p->aguards[i];
            char sym[64];
            if (g->kind == AG_INT)
                snprintf(text, sizeof text, "== %lld", (long long)g->i);
            else if (g->kind == AG_FLOAT)
                snprintf(text, sizeof text, "== %.17g", g->f);
            else {
                tt_size_str(g->sym, sym, sizeof sym);
                snprintf(text, sizeof text, "an int >= 2, bound to %s", sym);
            }
            tt__log(TT_LOG_GUARDS, "guards %s plan %d: arg%d %s", c->name, k + 1, g->index,
                    text);
        }
        for (int i = 0; i < TT_MAX_SCALAR_ARGS; i++)
            if (p->tensor_args >> i & 1)
                tt__log(TT_LOG_GUARDS, "guards %s plan %d: arg%d a float, a graph input",
                        c->name, k + 1, i);
        if (p->ud_bytes)
            tt__log(TT_LOG_GUARDS, "guards %s plan %d: the %zu bytes of *ud as traced", c->name,
                    k + 1, c->opts.ud_size);
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

/* The traced function as the tracer calls it: the dynamic floats come as
 * graph inputs after the tensors, and fn sees only its own. */
typedef struct {
    const tt_compiled *c;
    argctx *args;
    uint64_t tensor_args;
} tramp;

static tt_status run_fn(tt_tensor **vals, int n, tt_tensor **outs, int nout, void *ud)
{
    tramp *t = ud;
    const tt_compiled *c = t->c;
    int k = c->nin;
    for (int i = 0; i < TT_MAX_SCALAR_ARGS && k < n; i++)
        if (t->tensor_args >> i & 1)
            t->args->tensors[i] = vals[k++];
    return c->fn(vals, c->nin, outs, nout, c->opts.ud);
}

/* Installs a as the thread's scalar arguments for one run of fn. */
static void args_begin(argctx *a, const tt_compiled *c, const tt_value *args, int nargs,
                       bool tracing)
{
    memset(a, 0, sizeof *a);
    a->v = args;
    a->n = nargs;
    a->dynamic = c->opts.dynamic_args;
    a->tracing = tracing;
    a->symbolic = c->opts.mode == TT_TRACE_SYMBOLIC;
    a->prev = cur_args;
    cur_args = a;
}

/* Ends the run: a bad read of a scalar fails it (when st is TT_OK). */
static tt_status args_end(argctx *a, tt_status st)
{
    cur_args = a->prev;
    if (!st && a->failed)
        st = tt_error(a->failed, "%s", a->msg);
    return st;
}

/* Traces fn into a new plan for this call. *eager: fn cannot be compiled
 * (it writes *ud while tracing), brief says why. */
static tt_status make_plan(tt_compiled *c, tt_tensor **in, const tt_value *args, int nargs,
                           uint64_t targs, int nt, cplan **out, char *brief, size_t nbrief,
                           bool *eager)
{
    tracer tr;
    *out = NULL;
    *eager = false;
    size_t uds = c->opts.ud_size;
    unsigned char *ud_bytes = uds ? tt__malloc(uds) : NULL;
    const char **names = nt ? tt__calloc((size_t)c->nin + (size_t)nt, sizeof *names) : NULL;
    char (*arg_names)[16] = nt ? tt__malloc(sizeof *arg_names * (size_t)nt) : NULL;
    if ((uds && !ud_bytes) || (nt && (!names || !arg_names))) {
        tt__free(ud_bytes);
        tt__free(names);
        tt__free(arg_names);
        return tt_error(TT_ENOMEM, "tt_compile: out of memory");
    }
    if (uds) /* the state at the call, before fn may change it */
        memcpy(ud_bytes, c->opts.ud, uds);
    tt_trace_opts topts = c->opts;
    argctx a;
    tramp t = {c, &a, targs};
    topts.ud = &t;
    if (nt) { /* the graph inputs of the dynamic floats are named arg<i> */
        for (int i = 0; i < c->nin; i++)
            names[i] = c->opts.input_names ? c->opts.input_names[i] : NULL;
        for (int i = 0, k = 0; i < TT_MAX_SCALAR_ARGS && k < nt; i++)
            if (targs >> i & 1) {
                snprintf(arg_names[k], sizeof arg_names[k], "arg%d", i);
                names[c->nin + k] = arg_names[k];
                k++;
            }
        topts.input_names = names;
    }
    double t0 = tt__now_ms();
    args_begin(&a, c, args, nargs, true);
    tt_graph *g = tt__trace_keep(&tr, run_fn, c->nin + nt, in, &topts);
    if (g)
        tt_progress_update(tt__trace_progress, g->n, "nodes traced; planning");
    tt_status st = args_end(&a, g ? TT_OK : tt_errcode());
    double t1 = tt__now_ms();
    tt__free(names);
    tt__free(arg_names);
    if (!st && uds && memcmp(ud_bytes, c->opts.ud, uds) != 0) {
        /* A write the plan would not repeat: fn's side effect on *ud. */
        size_t b = 0;
        while (((const unsigned char *)c->opts.ud)[b] == ud_bytes[b])
            b++;
        snprintf(brief, nbrief, "the function wrote ud[%zu] while tracing, a side effect a "
                                "compiled replay would not repeat", b);
        /* The eager run that follows makes the call's effect: undo the
         * trace's. */
        memcpy(c->opts.ud, ud_bytes, uds);
        *eager = true;
        st = TT_EINVAL;
    }
    for (int i = 0; !st && g && i < c->nin && i < g->ninputs; i++) {
        /* tt_backward accumulated into an input's .grad while tracing: a
         * replay would leave .grad as it was, so the call runs eagerly
         * (which writes it), as for a write through ud. A function that
         * returns the gradient (tt_get_grad) and clears it compiles. */
        tt_tensor *leftover = tt_get_grad(g->nodes[i].vals[0]);
        if (!leftover)
            continue;
        tt_release(leftover);
        char nb[24];
        snprintf(brief, nbrief, "the function left a gradient in %s's .grad (tt_backward "
                                "accumulates into leaf inputs), a side effect a compiled replay "
                                "would not repeat: return it (tt_get_grad) and clear it "
                                "(tt_set_grad(x, NULL)) before returning",
                 tt__input_name(&c->opts, i, nb, sizeof nb));
        *eager = true;
        st = TT_EINVAL;
    }
    if (!g || st) {
        if (g && !*eager) /* a bad scalar read: the trace's graph is not used */
            st = tt_errcode();
        if (!*eager && st == TT_EGRAPHBREAK) {
            c->stats.graph_breaks++;
            note_break(c, &tr, brief, nbrief);
        }
        tt_graph_free(g);
        tt__free(ud_bytes);
        tt__tracer_end(&tr);
        return st;
    }
    cplan *p = tt__calloc(1, sizeof *p);
    st = p ? TT_OK : tt_error(TT_ENOMEM, "tt_compile: out of memory");
    if (!st) {
        p->nin = c->nin;
        p->ud_bytes = ud_bytes;
        ud_bytes = NULL;
        p->tensor_args = targs;
        p->guards = tt__calloc((size_t)(c->nin ? c->nin : 1), sizeof *p->guards);
        p->aguards = tt__malloc(sizeof *p->aguards * (size_t)(a.nguards ? a.nguards : 1));
        if (!p->guards || !p->aguards)
            st = tt_error(TT_ENOMEM, "tt_compile: out of memory");
        else if (a.nguards)
            memcpy(p->aguards, a.guards, sizeof *p->aguards * (size_t)a.nguards);
        p->naguards = st ? 0 : a.nguards;
    }
    tt__free(ud_bytes);
    for (int i = 0; !st && i < c->nin; i++) {
        input_guard *ig = &p->guards[i];
        ig->dtype = tt_dtype_of(in[i]);
        ig->ndim = tt_ndim(in[i]);
        ig->requires_grad = tt_requires_grad(in[i]);
        memcpy(ig->sizes, tt_sizes(in[i]), sizeof(tt_size) * (size_t)ig->ndim);
        memcpy(ig->strides, tt_strides(in[i]), sizeof(tt_size) * (size_t)ig->ndim);
    }
    if (!st && tr.sym) {
        /* The plan takes the trace's arrays (NULL when there are none); the
         * inputs after the tensors are the dynamic floats' 0-dim ones. */
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
    if (c->opts.ud && !c->opts.ud_size && !c->opts.ud_constant && !c->warned_ud) {
        c->warned_ud = true;
        tt__log(0, "warning %s: opts.ud is set but opts.ud_size is 0: the compiled plan "
                   "freezes whatever the function read through ud while tracing, and replays "
                   "it without looking at ud again. Declare the bytes it reads "
                   "(opts.ud_size: calls guard on them and trace again when they change), "
                   "pass per-call values as scalar arguments (tt_compiled_call_args), or set "
                   "opts.ud_constant if they never change", c->name);
    }
    *out = p;
    return TT_OK;
}

static tt_status run_eager(tt_compiled *c, tt_tensor **in, tt_tensor **out,
                           const tt_value *args, int nargs, uint64_t targs, int nt)
{
    c->stats.eager_calls++;
    for (int i = 0; i < c->nout; i++)
        out[i] = NULL;
    argctx a;
    args_begin(&a, c, args, nargs, false);
    for (int i = 0, k = c->nin; i < TT_MAX_SCALAR_ARGS && k < c->nin + nt; i++)
        if (targs >> i & 1)
            a.tensors[i] = in[k++];
    tt_status st = c->fn(in, c->nin, out, c->nout, c->opts.ud);
    if (st && tt_errcode() == TT_OK)
        tt_error(st, "tt_compiled_call: the function failed (%s)", tt_status_name(st));
    st = args_end(&a, st);
    if (st)
        for (int i = 0; i < c->nout; i++)
            out[i] = tt_release(out[i]);
    return st;
}

tt_status tt_compiled_call(tt_compiled *c, tt_tensor **in, tt_tensor **out)
{
    return tt_compiled_call_args(c, in, out, NULL, 0);
}

/* The call with in[] extended by the dynamic floats' 0-dim tensors. */
static tt_status call(tt_compiled *c, tt_tensor **in, tt_tensor **out, const tt_value *args,
                      int nargs, uint64_t targs, int nt)
{
    if (c->eager)
        return run_eager(c, in, out, args, nargs, targs, nt);
    bool symbolic = c->opts.mode == TT_TRACE_SYMBOLIC;
    char why[256] = "first call";
    tt_size *syms = c->syms;
    int64_t *vals = c->vals;
    int nsyms = 0;
    for (cplan *p = c->plans; p; p = p->next) {
        nsyms = 0;
        bool ok = check_args(c, p, args, nargs, syms, vals, &nsyms, why, sizeof why) &&
                  (symbolic ? check_symbolic(c, p, in, syms, vals, &nsyms, why, sizeof why)
                            : check_exact(c, p, in, why, sizeof why));
        if (ok) {
            c->stats.hits++;
            return tt__plan_run(p->plan, in, c->nin + nt, out, c->nout, syms, vals, nsyms);
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
        return run_eager(c, in, out, args, nargs, targs, nt);
    }
    cplan *p;
    char brief[512] = "";
    bool eager;
    int ev = -1;
    if (tt__profiling) {
        char name[80];
        snprintf(name, sizeof name, "compile %s", c->name);
        ev = tt__profile_open(TT_PROFILE_COMPILE, name, tt_callsite(), NULL);
    }
    /* A compile that takes long shows it on a terminal (from half a
     * second on): the nodes traced, then the planning. */
    char label[80];
    snprintf(label, sizeof label, "compile %s", c->name);
    if (!(tt__trace_progress = tt_progress_begin(label, 0, TT_PROGRESS_DELAYED)))
        tt_clear_error(); /* out of memory for the bar: compile without it */
    tt_status st = make_plan(c, in, args, nargs, targs, nt, &p, brief, sizeof brief, &eager);
    tt__trace_progress = tt_progress_end(tt__trace_progress);
    tt__profile_close(ev, -1, -1);
    if ((st == TT_EGRAPHBREAK && !c->opts.fullgraph) || eager) {
        /* The function needs real data somewhere (or has an effect a
         * replay would not repeat): run it as C code. */
        c->eager = true;
        tt_clear_error();
        if (eager)
            tt__log(0, "warning %s: %s: the function runs eagerly from now on", c->name, brief);
        else
            tt__log(0, "warning %s: graph break (%s): without fullgraph the function runs "
                       "eagerly from now on", c->name, brief);
        return run_eager(c, in, out, args, nargs, targs, nt);
    }
    if (st)
        return st;
    if (c->last)
        c->last->next = p;
    else
        c->plans = p;
    c->last = p;
    c->stats.plans++;
    nsyms = 0;
    if (!check_args(c, p, args, nargs, syms, vals, &nsyms, why, sizeof why) ||
        (symbolic && !check_symbolic(c, p, in, syms, vals, &nsyms, why, sizeof why)))
        return tt_error(TT_EINTERNAL, "tt_compiled_call: a fresh plan fails its own guards "
                                      "(%s)", why);
    return tt__plan_run(p->plan, in, c->nin + nt, out, c->nout, syms, vals, nsyms);
}

tt_status tt_compiled_call_args(tt_compiled *c, tt_tensor **in, tt_tensor **out,
                                const tt_value *args, int nargs)
{
    if (!c || (c->nin > 0 && !in) || !out || (nargs > 0 && !args))
        return tt_error(TT_EINVAL, "tt_compiled_call: argument '%s' is NULL",
                        !c ? "compiled" : !out ? "outputs" : c->nin > 0 && !in ? "inputs"
                                                                               : "args");
    if (nargs < 0 || nargs > TT_MAX_SCALAR_ARGS)
        return tt_error(TT_EINVAL, "tt_compiled_call_args: argument 'nargs' is %d; expected 0 "
                                   "to %d scalar arguments", nargs, TT_MAX_SCALAR_ARGS);
    for (int i = 0; i < nargs; i++)
        if (args[i].kind != TT_V_INT && args[i].kind != TT_V_FLOAT)
            return tt_error(TT_EINVAL, "tt_compiled_call_args: scalar argument %d is not an int "
                                       "or a float (TT_V_INT or TT_V_FLOAT)", i);
    for (int i = 0; i < c->nin; i++)
        if (!in[i])
            return tt_error(TT_EINVAL, "tt_compiled_call: input %d is NULL", i);
    /* NULL on every failure, also when tracing fails. */
    for (int i = 0; i < c->nout; i++)
        out[i] = NULL;
    c->stats.calls++;
    uint64_t targs = tensor_args_of(c, args, nargs);
    if (!targs)
        return call(c, in, out, args, nargs, 0, 0);
    /* The dynamic floats travel as 0-dim f64 tensors after the inputs. */
    int nt = __builtin_popcountll(targs);
    tt_tensor **all = tt__calloc((size_t)c->nin + (size_t)nt, sizeof *all);
    if (!all)
        return tt_error(TT_ENOMEM, "tt_compiled_call: out of memory");
    if (c->nin)
        memcpy(all, in, sizeof *all * (size_t)c->nin);
    tt_status st = TT_OK;
    tt_scope_pause();
    for (int i = 0, k = c->nin; i < nargs && !st; i++)
        if (targs >> i & 1)
            st = (all[k++] = tt_full(0, NULL, args[i].u.f, TT_F64)) ? TT_OK : tt_errcode();
    tt_scope_resume();
    if (!st)
        st = call(c, all, out, args, nargs, targs, nt);
    for (int k = c->nin; k < c->nin + nt; k++)
        tt_release(all[k]);
    tt__free(all);
    return st;
}
