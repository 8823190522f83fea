/* tt_explain_run: tracing that splits at graph breaks, as
 * torch._dynamo.explain. The function runs on real inputs and computes as
 * it records; at a break the current graph is closed with the values the
 * function still holds as its outputs, the C code gets real data, and the
 * next graph starts with those values as its inputs. */
#include "trace_impl.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

struct tt_explain {
    tt_graph **graphs;
    int ngraphs;
    tt_break_info *breaks;
    int nbreaks;
    /* Storage for the break texts. */
    char (*reasons)[512];
    char (*ops)[128];
    char (*files)[256];
    char (*funcs)[128];
};

typedef struct {
    tt_explain *e;
    int cap;
} split_state;

static tt_status grow(split_state *s)
{
    tt_explain *e = s->e;
    if (e->ngraphs < s->cap)
        return TT_OK;
    int nc = s->cap ? s->cap * 2 : 4;
    tt_graph **g = realloc(e->graphs, sizeof *g * (size_t)nc);
    if (g)
        e->graphs = g;
    tt_break_info *b = realloc(e->breaks, sizeof *b * (size_t)nc);
    if (b)
        e->breaks = b;
    char(*r)[512] = realloc(e->reasons, sizeof *r * (size_t)nc);
    if (r)
        e->reasons = r;
    char(*o)[128] = realloc(e->ops, sizeof *o * (size_t)nc);
    if (o)
        e->ops = o;
    char(*f)[256] = realloc(e->files, sizeof *f * (size_t)nc);
    if (f)
        e->files = f;
    char(*fu)[128] = realloc(e->funcs, sizeof *fu * (size_t)nc);
    if (fu)
        e->funcs = fu;
    if (!g || !b || !r || !o || !f || !fu)
        return tt_error(TT_ENOMEM, "tt_explain_run: out of memory");
    s->cap = nc;
    return TT_OK;
}

extern atomic_uint_fast64_t tt__next_trace_key;

/* Closes the current graph with the live values as outputs and opens the
 * next one with them as inputs. `extra` tensors (outputs of an op run
 * eagerly at the break) are inputs of the next graph too. */
static tt_status split(tracer *tr, tt_tensor **extra, int nextra)
{
    split_state *s = tr->split;
    tt_graph *g = tr->g;
    tt_tensor **live = malloc(sizeof *live * (size_t)(g->n + nextra + 1));
    gref *refs = malloc(sizeof *refs * (size_t)(g->n + 1));
    if (!live || !refs) {
        free(live);
        free(refs);
        return tt_error(TT_ENOMEM, "tt_explain_run: out of memory at a graph break");
    }
    int nlive = 0;
    for (int i = 0; i < g->n; i++) {
        const gnode *n = &g->nodes[i];
        for (int j = 0; j < n->nvals; j++) {
            tt_tensor *v = n->vals[j];
            gref r;
            /* Held outside the graph, and still this graph's value (not
             * since replaced by an in-place op's result node). */
            if (v && tt_refcount(v) > 1 && tt__tracer_lookup(tr, v, &r) && r.node == i &&
                r.out == j) {
                refs[nlive] = r;
                live[nlive++] = v;
            }
        }
    }
    tt_status st = grow(s);
    if (!st && tt__graph_set_output(g, refs, nlive) < 0)
        st = tt_errcode();
    if (!st) {
        s->e->graphs[s->e->ngraphs++] = g;
        char name[32];
        snprintf(name, sizeof name, "graph_%d", s->e->ngraphs + 1);
        tr->g = tt__graph_new(name, tr->kind);
        tr->key = atomic_fetch_add(&tt__next_trace_key, 1);
        if (!tr->g)
            st = tt_errcode();
    }
    for (int i = 0; i < nextra; i++)
        live[nlive++] = extra[i];
    for (int i = 0; !st && i < nlive; i++) {
        int id = tt__graph_add_placeholder(tr->g, live[i]);
        if (id < 0)
            st = tt_errcode();
        else
            tt__tracer_tag(tr, live[i], id, 0);
    }
    free(live);
    free(refs);
    return st;
}

static void record_break(tracer *tr, tt_break_kind kind, const char *reason, const tt_op *op,
                         tt_srcloc loc)
{
    split_state *s = tr->split;
    tt_explain *e = s->e;
    int i = e->nbreaks;
    snprintf(e->reasons[i], sizeof e->reasons[i], "%s", reason);
    snprintf(e->ops[i], sizeof e->ops[i], "%s", op ? tt_op_name(op) : "");
    snprintf(e->files[i], sizeof e->files[i], "%s", loc.file ? loc.file : "");
    snprintf(e->funcs[i], sizeof e->funcs[i], "%s", loc.func ? loc.func : "");
    e->breaks[i] = (tt_break_info){kind, e->reasons[i], op ? e->ops[i] : NULL,
                                   {loc.file ? e->files[i] : NULL, loc.line,
                                    loc.func ? e->funcs[i] : NULL}};
    e->nbreaks++;
}

static tt_status on_break(tracer *tr, tt_break_kind kind, const tt_op *op, const char *reason,
                          tt_srcloc loc)
{
    if (tr->opts.fullgraph)
        return tt__tracer_break(tr, kind, reason, op ? tt_op_name(op) : NULL, loc);
    tt_status st = split(tr, NULL, 0);
    if (!st)
        record_break(tr, kind, reason, op, loc);
    return st;
}

tt_status tt__explain_eager_op(tracer *tr, const tt_op *op, const tt_value *args, int nargs,
                               tt_value *outs, int nouts)
{
    char reason[512];
    tt__no_fake_reason(op, reason, sizeof reason);
    tt_status st = on_break(tr, TT_BREAK_NO_FAKE_KERNEL, op, reason, tt__callsite());
    if (st)
        return st;
    st = tt_op_redispatch(op, args, nargs, outs, nouts);
    if (st)
        return st;
    /* The op's results are inputs of the graph that just opened. */
    for (int j = 0; j < nouts && !st; j++)
        if (outs[j].kind == TT_V_TENSOR && outs[j].u.t) {
            int id = tt__graph_add_placeholder(tr->g, outs[j].u.t);
            if (id < 0)
                st = tt_errcode();
            else
                tt__tracer_tag(tr, outs[j].u.t, id, 0);
        }
    return st;
}

tt_explain *tt_explain_free(tt_explain *e)
{
    if (!e)
        return NULL;
    for (int i = 0; i < e->ngraphs; i++)
        tt_graph_free(e->graphs[i]);
    free(e->graphs);
    free(e->breaks);
    free(e->reasons);
    free(e->ops);
    free(e->files);
    free(e->funcs);
    free(e);
    return NULL;
}

tt_explain *tt_explain_run(tt_fn fn, int nin, tt_tensor **inputs, const tt_trace_opts *opts)
{
    if (!fn || nin < 0 || nin > TT_TRACE_MAX_INPUTS || (nin > 0 && !inputs)) {
        tt_error(TT_EINVAL, "tt_explain_run: expects a function and 0 to %d inputs",
                 TT_TRACE_MAX_INPUTS);
        return NULL;
    }
    if (tt__check_trace_opts("tt_explain_run", opts))
        return NULL;
    tt_trace_opts o = opts ? *opts : (tt_trace_opts){0};
    o.mode = TT_TRACE_REAL; /* the code between graphs needs real data */
    tt_explain *e = calloc(1, sizeof *e);
    if (!e) {
        tt_error(TT_ENOMEM, "tt_explain_run: out of memory");
        return NULL;
    }
    split_state s = {e, 0};
    tracer tr;
    tt_tensor *vals[TT_TRACE_MAX_INPUTS], *outs[TT_TRACE_MAX_OUTS] = {0};
    tt_status st = tt__tracer_begin(&tr, &o, "graph_1");
    tr.on_break = on_break;
    tr.split = &s;
    if (!st)
        st = grow(&s);
    int made = 0;
    if (!st) {
        st = tt__tracer_add_inputs(&tr, nin, inputs, vals);
        made = nin;
    }
    if (!st)
        st = tt__tracer_run(&tr, fn, nin, vals, outs);
    if (!st)
        st = tt__tracer_set_outputs(&tr, outs, tr.opts.nout);
    if (!st && !(st = grow(&s)))
        e->graphs[e->ngraphs++] = tr.g, tr.g = NULL;
    for (int i = 0; !st && i < e->ngraphs; i++)
        st = tt_graph_verify(e->graphs[i]);
    for (int i = 0; i < made; i++)
        tt_release(vals[i]);
    for (int i = 0; i < tr.opts.nout && i < TT_TRACE_MAX_OUTS; i++)
        tt_release(outs[i]);
    tt_graph_free(tr.g);
    tt__tracer_end(&tr);
    if (st)
        return tt_explain_free(e);
    /* grow() moved the texts: point the break infos at them again. */
    for (int i = 0; i < e->nbreaks; i++)
        e->breaks[i] = (tt_break_info){e->breaks[i].kind, e->reasons[i],
                                       e->breaks[i].op ? e->ops[i] : NULL,
                                       {e->breaks[i].loc.file ? e->files[i] : NULL,
                                        e->breaks[i].loc.line,
                                        e->breaks[i].loc.func ? e->funcs[i] : NULL}};
    return e;
}

int tt_explain_graph_count(const tt_explain *e) { return e ? e->ngraphs : 0; }
int tt_explain_break_count(const tt_explain *e) { return e ? e->nbreaks : 0; }

const tt_graph *tt_explain_graph(const tt_explain *e, int i)
{
    return e && i >= 0 && i < e->ngraphs ? e->graphs[i] : NULL;
}

const tt_break_info *tt_explain_break(const tt_explain *e, int i)
{
    return e && i >= 0 && i < e->nbreaks ? &e->breaks[i] : NULL;
}

char *tt_explain_to_text(const tt_explain *e)
{
    if (!e) {
        tt_error(TT_EINVAL, "tt_explain_to_text: argument 'explain' is NULL");
        return NULL;
    }
    size_t cap = 4096 + (size_t)e->ngraphs * 4096;
    char *buf = malloc(cap);
    if (!buf) {
        tt_error(TT_ENOMEM, "tt_explain_to_text: out of memory");
        return NULL;
    }
    size_t len = 0;
#define PUT(...) len += (size_t)snprintf(buf + len, len < cap ? cap - len : 0, __VA_ARGS__)
    int ops = 0;
    for (int i = 0; i < e->ngraphs; i++)
        for (int k = 0; k < e->graphs[i]->n; k++)
            ops += e->graphs[i]->nodes[k].kind == TT_NODE_OP;
    PUT("Graph count: %d\nGraph break count: %d\nOp count: %d\n", e->ngraphs, e->nbreaks, ops);
    if (e->nbreaks)
        PUT("Break reasons:\n");
    for (int i = 0; i < e->nbreaks; i++) {
        const tt_break_info *b = &e->breaks[i];
        PUT("  %d. %s: %s\n", i + 1, tt_break_kind_name(b->kind), b->reason);
        if (b->loc.file)
            PUT("     at %s:%d in %s()\n", b->loc.file, b->loc.line, b->loc.func ? b->loc.func : "?");
    }
    PUT("Ops per graph:\n");
    for (int i = 0; i < e->ngraphs; i++) {
        PUT("  Graph %d:", i + 1);
        int shown = 0;
        for (int k = 0; k < e->graphs[i]->n; k++)
            if (e->graphs[i]->nodes[k].kind == TT_NODE_OP)
                PUT("%s %s", shown++ ? "," : "", tt_op_name(e->graphs[i]->nodes[k].op));
        PUT("%s\n", shown ? "" : " (none)");
    }
#undef PUT
    if (len >= cap) {
        buf[cap - 1] = '\0'; /* very long op lists are cut */
    }
    return buf;
}
