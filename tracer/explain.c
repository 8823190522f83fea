/* tt_explain_run: tracing that splits at graph breaks, as
 * torch._dynamo.explain. The function runs on real inputs and computes as
 * it records; at a break the current graph is closed, the C code gets
 * real data, and the next graph starts with the closed graph's values as
 * its inputs.
 *
 * Which values cross a break is decided from the graphs, not from who
 * holds them: at the break every current value of the closing graph is
 * handed on (a placeholder of the next graph); when the run has finished,
 * the ones the next graph never reads are dropped again, from the last
 * graph backwards, except the values the C code read at the break. A
 * tensor a later graph did not compute (made by the C code between two
 * graphs, from the data it read) is an input of that graph, not a
 * constant.
 *
 * explain sits above trace: it plugs into the tracer through its on_break
 * hook (trace_impl.h), and trace never calls it (tests/check_layers.py). */
#include "print_impl.h"
#include "trace_impl.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    tt_break_info info; /* its strings point into this record */
    char reason[512], op[128], file[256], func[128];
} break_rec;

typedef struct {
    tt_graph *g;
    /* The values handed on at the break that closed it (the next graph's
     * first nprev inputs), and which of them the C code read there. */
    gref *outs;
    bool *pinned;
    int nouts;
    int nprev; /* inputs that are the previous graph's values */
    double trace_ms;
} graph_rec;

struct tt_explain {
    graph_rec *graphs;
    int ngraphs, cap_graphs;
    break_rec *breaks;
    int nbreaks, cap_breaks;
};

typedef struct {
    tt_explain *e;
    int nprev;         /* of the open graph */
    double opened_ms;  /* when the open graph started */
    tt_status failed;  /* a split that failed fails the run */
} split_state;

extern atomic_uint_fast64_t tt__next_trace_key;

/* Room for one more element in *arr (of `size` bytes each). */
static tt_status grow(void **arr, int n, int *cap, size_t size)
{
    if (n < *cap)
        return TT_OK;
    int nc = *cap ? *cap * 2 : 4;
    void *a = tt__realloc(*arr, size * (size_t)*cap, size * (size_t)nc);
    if (!a)
        return tt_error(TT_ENOMEM, "tt_explain_run: out of memory");
    *arr = a;
    *cap = nc;
    return TT_OK;
}

static tt_status push_graph(split_state *s, tt_graph *g)
{
    tt_explain *e = s->e;
    tt_status st = grow((void **)&e->graphs, e->ngraphs, &e->cap_graphs, sizeof *e->graphs);
    if (st)
        return st;
    e->graphs[e->ngraphs++] = (graph_rec){.g = g, .nprev = s->nprev,
                                          .trace_ms = tt__now_ms() - s->opened_ms};
    return TT_OK;
}

static bool pinned(const tt_tensor *v, const tt_tensor *const *pin, int npin)
{
    for (int i = 0; i < npin; i++)
        if (pin[i] == v)
            return true;
    return false;
}

/* Closes the current graph and opens the next one, whose first inputs
 * are the closed graph's current values (the ones no in-place op has
 * replaced). `pin` are the tensors the C code reads at this break. On
 * failure the tracer still has a graph to record into, and the run fails
 * when the function returns. */
static tt_status split(tracer *tr, const tt_tensor *const *pin, int npin)
{
    split_state *s = tr->split;
    tt_graph *g = tr->g;
    char name[32];
    snprintf(name, sizeof name, "graph_%d", s->e->ngraphs + 2);
    tt_graph *next = tt__graph_new(name, tr->kind);
    tt_status st = next ? push_graph(s, g) : tt_errcode();
    if (st) {
        tt_graph_free(next);
        return s->failed = st;
    }
    graph_rec *rec = &s->e->graphs[s->e->ngraphs - 1];
    uint64_t old_key = tr->key;
    tr->g = next;
    tr->key = atomic_fetch_add(&tt__next_trace_key, 1);
    s->opened_ms = tt__now_ms();
    s->nprev = 0;
    int nvals = 0;
    for (int i = 0; i < g->n; i++)
        nvals += g->nodes[i].nvals;
    rec->outs = tt__malloc(sizeof *rec->outs * (size_t)(nvals ? nvals : 1));
    rec->pinned = tt__malloc(sizeof *rec->pinned * (size_t)(nvals ? nvals : 1));
    if (!rec->outs || !rec->pinned)
        return s->failed = tt_error(TT_ENOMEM, "tt_explain_run: out of memory at a graph break");
    for (int i = 0; i < g->n; i++) {
        const gnode *n = &g->nodes[i];
        for (int j = 0; j < n->nvals; j++) {
            int64_t v;
            if (n->vals[j] && tt_get_mode_tag(n->vals[j], old_key, &v) &&
                v == ((int64_t)i << 8 | j)) {
                rec->pinned[rec->nouts] = pinned(n->vals[j], pin, npin);
                rec->outs[rec->nouts++] = (gref){i, j};
            }
        }
    }
    for (int k = 0; k < rec->nouts; k++) {
        const gnode *src = &g->nodes[rec->outs[k].node];
        tt_tensor *v = src->vals[rec->outs[k].out];
        int id = tt__graph_add_placeholder(next, v, src->name);
        if (id < 0)
            return s->failed = tt_errcode();
        tt__tracer_tag(tr, v, id, 0);
        s->nprev++;
    }
    return TT_OK;
}

static tt_status record_break(tracer *tr, tt_break_kind kind, const char *reason,
                              const tt_op *op, tt_srcloc loc)
{
    tt_explain *e = ((split_state *)tr->split)->e;
    tt_status st = grow((void **)&e->breaks, e->nbreaks, &e->cap_breaks, sizeof *e->breaks);
    if (st)
        return st;
    break_rec *b = &e->breaks[e->nbreaks++];
    snprintf(b->reason, sizeof b->reason, "%s", reason);
    snprintf(b->op, sizeof b->op, "%s", op ? tt_op_name(op) : "");
    snprintf(b->file, sizeof b->file, "%s", loc.file ? loc.file : "");
    snprintf(b->func, sizeof b->func, "%s", loc.func ? loc.func : "");
    b->info = (tt_break_info){kind, NULL, NULL, {NULL, loc.line, NULL}};
    b->info.loc.file = loc.file ? b->file : NULL; /* pointers set once the array is final */
    b->info.loc.func = loc.func ? b->func : NULL;
    b->info.op = op ? b->op : NULL;
    tt__log(TT_LOG_GRAPH_BREAKS, "graph_break %s: %s at %s:%d in %s(): %s",
            tr->opts.name ? tr->opts.name : "forward", tt_break_kind_name(kind),
            loc.file ? loc.file : "?", loc.line, loc.func ? loc.func : "?", reason);
    return TT_OK;
}

/* tracer.on_break, explain's hook into trace (trace_impl.h): splits the
 * graph at the break, unless the trace is fullgraph. */
static tt_status on_break(tracer *tr, tt_break_kind kind, const tt_op *op, const char *reason,
                          tt_srcloc loc, const tt_tensor *const *pin, int npin)
{
    if (tr->opts.fullgraph)
        return tt__tracer_break(tr, kind, reason, op ? tt_op_name(op) : NULL, loc);
    tt_status st = split(tr, pin, npin);
    return st ? st : record_break(tr, kind, reason, op, loc);
}

/* ------------------------------------------------------------ finishing */

/* Graph k (after a break): drops the inputs handed on from graph k - 1
 * that it never reads (unless the C code read them at the break), makes
 * the tensors it did not compute (constants) inputs, and sets graph
 * k - 1's outputs to the inputs kept. */
static tt_status finish_graph(tt_explain *e, int k)
{
    tt_graph *g = e->graphs[k].g;
    graph_rec *prev = &e->graphs[k - 1];
    int nprev = e->graphs[k].nprev;
    int *order = tt__malloc(sizeof *order * (size_t)(g->n + 1));
    gref *kept = tt__malloc(sizeof *kept * (size_t)(prev->nouts + 1));
    if (!order || !kept) {
        tt__free(order);
        tt__free(kept);
        return tt_error(TT_ENOMEM, "tt_explain_run: out of memory");
    }
    int n = 0, nkept = 0;
    for (int i = 0; i < nprev; i++)
        if (g->nodes[i].nusers > 0 || prev->pinned[i]) {
            order[n++] = i;
            kept[nkept++] = prev->outs[i];
        }
    for (int i = nprev; i < g->n; i++)
        if (g->nodes[i].kind == TT_NODE_PLACEHOLDER)
            order[n++] = i;
    for (int i = 0, c = 0; i < g->n; i++)
        if (g->nodes[i].kind == TT_NODE_CONSTANT) {
            g->nodes[i].kind = TT_NODE_PLACEHOLDER;
            snprintf(g->nodes[i].name, sizeof g->nodes[i].name, "from_c%d", c++);
            order[n++] = i;
        }
    for (int i = 0; i < g->n; i++)
        if (g->nodes[i].kind == TT_NODE_OP || g->nodes[i].kind == TT_NODE_OUTPUT)
            order[n++] = i;
    tt_status st = tt__graph_reorder(g, order, n);
    if (!st && tt__graph_set_output(prev->g, kept, nkept) < 0)
        st = tt_errcode();
    tt__free(order);
    tt__free(kept);
    return st;
}

static tt_status finish(tt_explain *e)
{
    for (int k = e->ngraphs - 1; k > 0; k--) {
        tt_status st = finish_graph(e, k);
        if (st)
            return st;
    }
    for (int i = 0; i < e->ngraphs; i++) {
        tt_status st = tt_graph_verify(e->graphs[i].g);
        if (st)
            return st;
    }
    return TT_OK;
}

tt_explain *tt_explain_free(tt_explain *e)
{
    if (!e)
        return NULL;
    for (int i = 0; i < e->ngraphs; i++) {
        tt_graph_free(e->graphs[i].g);
        tt__free(e->graphs[i].outs);
        tt__free(e->graphs[i].pinned);
    }
    tt__free(e->graphs);
    tt__free(e->breaks);
    tt__free(e);
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
    tt_explain *e = tt__calloc(1, sizeof *e);
    if (!e) {
        tt_error(TT_ENOMEM, "tt_explain_run: out of memory");
        return NULL;
    }
    double started = tt__now_ms();
    split_state s = {e, 0, started, TT_OK};
    tracer tr;
    tt_tensor **vals = NULL, **outs = NULL;
    tt_status st = tt__tracer_begin(&tr, &o, "graph_1");
    tr.on_break = on_break;
    tr.split = &s;
    if (!st)
        st = tt__tracer_io_alloc("tt_explain_run", nin, tr.opts.nout, &vals, &outs);
    int made = 0;
    if (!st) {
        st = tt__tracer_add_inputs(&tr, nin, inputs, vals);
        made = nin;
    }
    if (!st)
        st = tt__tracer_run(&tr, fn, nin, vals, outs);
    if (!st && s.failed) /* the function went on past a failed split */
        st = tt_error(s.failed, "tt_explain_run: splitting the graph at a break failed (%s)",
                      tt_status_name(s.failed));
    if (!st)
        st = tt__tracer_set_outputs(&tr, outs, tr.opts.nout);
    if (!st && !(st = push_graph(&s, tr.g)))
        tr.g = NULL;
    if (!st)
        st = finish(e);
    for (int i = 0; i < made; i++)
        tt_release(vals[i]);
    for (int i = 0; outs && i < tr.opts.nout; i++)
        tt_release(outs[i]);
    tt__free(vals); /* outs too: one block */
    tt_graph_free(tr.g);
    tt__tracer_end(&tr);
    if (st)
        return tt_explain_free(e);
    tt__log(TT_LOG_PERF, "perf %s: explain traced %d graphs in %.3f ms",
            o.name ? o.name : "forward", e->ngraphs, tt__now_ms() - started);
    /* The records no longer move: point the break infos at their texts. */
    for (int i = 0; i < e->nbreaks; i++) {
        break_rec *b = &e->breaks[i];
        b->info.reason = b->reason;
        if (b->info.op)
            b->info.op = b->op;
        if (b->info.loc.file)
            b->info.loc.file = b->file;
        if (b->info.loc.func)
            b->info.loc.func = b->func;
    }
    return e;
}

int tt_explain_graph_count(const tt_explain *e) { return e ? e->ngraphs : 0; }
int tt_explain_break_count(const tt_explain *e) { return e ? e->nbreaks : 0; }

const tt_graph *tt_explain_graph(const tt_explain *e, int i)
{
    return e && i >= 0 && i < e->ngraphs ? e->graphs[i].g : NULL;
}

const tt_break_info *tt_explain_break(const tt_explain *e, int i)
{
    return e && i >= 0 && i < e->nbreaks ? &e->breaks[i].info : NULL;
}

/* "Graph count: 2\nGraph break count: 1\n..." then per graph its ops,
 * its guards (one per input, in compile's words) and its trace time. */
char *tt_explain_to_text(const tt_explain *e)
{
    if (!e) {
        tt_error(TT_EINVAL, "tt_explain_to_text: argument 'explain' is NULL");
        return NULL;
    }
    sbuf b = {0};
    int ops = 0;
    for (int i = 0; i < e->ngraphs; i++)
        for (int k = 0; k < e->graphs[i].g->n; k++)
            ops += e->graphs[i].g->nodes[k].kind == TT_NODE_OP;
    sb_printf(&b, "Graph count: %d\nGraph break count: %d\nOp count: %d\n", e->ngraphs,
              e->nbreaks, ops);
    if (e->nbreaks)
        sb_printf(&b, "Break reasons:\n");
    for (int i = 0; i < e->nbreaks; i++) {
        const tt_break_info *bi = &e->breaks[i].info;
        sb_printf(&b, "  %d. %s: %s\n", i + 1, tt_break_kind_name(bi->kind), bi->reason);
        if (bi->loc.file)
            sb_printf(&b, "     at %s:%d in %s()\n", bi->loc.file, bi->loc.line,
                      bi->loc.func ? bi->loc.func : "?");
    }
    sb_printf(&b, "Ops per graph:\n");
    for (int i = 0; i < e->ngraphs; i++) {
        const tt_graph *g = e->graphs[i].g;
        sb_printf(&b, "  Graph %d:", i + 1);
        int shown = 0;
        for (int k = 0; k < g->n; k++)
            if (g->nodes[k].kind == TT_NODE_OP)
                sb_printf(&b, "%s %s", shown++ ? "," : "", tt_op_name(g->nodes[k].op));
        sb_printf(&b, "%s\n", shown ? "" : " (none)");
    }
    sb_printf(&b, "Guards per graph:\n");
    for (int i = 0; i < e->ngraphs; i++) {
        const tt_graph *g = e->graphs[i].g;
        sb_printf(&b, "  Graph %d (traced in %.3f ms):%s\n", i + 1, e->graphs[i].trace_ms,
                  g->ninputs ? "" : " (no inputs)");
        for (int k = 0; k < g->n; k++)
            if (g->nodes[k].kind == TT_NODE_PLACEHOLDER) {
                char guard[512];
                tt__guard_text(g->nodes[k].vals[0], guard, sizeof guard);
                sb_printf(&b, "    %s: %s\n", g->nodes[k].name, guard);
            }
    }
    if (b.oom || !b.s) {
        free(b.s);
        tt_error(TT_ENOMEM, "tt_explain_to_text: out of memory");
        return NULL;
    }
    return b.s;
}
