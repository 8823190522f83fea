/* The interpreter: runs a graph's nodes in order on real tensors. */
#include "graph_impl.h"

#include <stdlib.h>
#include <string.h>

#define MAX_ARGS 32

/* The sizes and storage offsets of a symbolic graph's inputs, bound to
 * the symbols its placeholders were traced with. */
typedef struct {
    tt_size *syms;
    int64_t *vals;
    int n, cap;
} bindings;

static tt_status bind_symbols(const tt_graph *g, tt_tensor **inputs, bindings *b)
{
    int cap = 0;
    for (int i = 0; i < g->ninputs; i++)
        cap += tt_ndim(g->nodes[i].vals[0]) + 1;
    b->syms = tt__malloc(sizeof *b->syms * (size_t)(cap ? cap : 1));
    b->vals = tt__malloc(sizeof *b->vals * (size_t)(cap ? cap : 1));
    b->cap = cap ? cap : 1;
    if (!b->syms || !b->vals)
        return tt_error(TT_ENOMEM, "out of memory running graph %s", g->name);
    for (int i = 0; i < g->ninputs; i++) {
        const tt_tensor *want = g->nodes[i].vals[0];
        for (int d = 0; d < tt_ndim(want); d++)
            if (tt_size_is_sym(tt_sizes(want)[d])) {
                b->syms[b->n] = tt_sizes(want)[d];
                b->vals[b->n++] = tt_sizes(inputs[i])[d];
            }
        if (tt_size_is_sym(tt_storage_offset(want))) {
            b->syms[b->n] = tt_storage_offset(want);
            b->vals[b->n++] = tt_storage_offset(inputs[i]);
        }
    }
    return TT_OK;
}

/* Binds the data-dependent sizes (unbacked symbols, u0 ...) of node n's
 * traced results to the sizes its real results have, so that later size
 * arguments holding them (the gradient of masked_select is a
 * masked_scatter of a [u0] gradient) evaluate; in fake graphs too, whose
 * only symbols these are (FINDINGS F26). */
static tt_status bind_results(const tt_graph *g, const gnode *n, tt_tensor **real, bindings *b)
{
    for (int j = 0; j < tt__node_nrets(n); j++) {
        const tt_tensor *want = n->vals[j];
        if (!want || !real[j] || tt_ndim(want) != tt_ndim(real[j]))
            continue;
        for (int d = 0; d < tt_ndim(want); d++) {
            tt_size s = tt_sizes(want)[d];
            int64_t v;
            if (!tt_size_is_sym(s) || tt_sym_hint(s) >= 0 || tt_sym_eval(s, b->n, b->syms, b->vals, &v))
                continue;
            if (b->n == b->cap) {
                int cap = b->cap ? 2 * b->cap : 4;
                tt_size *ns = tt__realloc(b->syms, sizeof *ns * (size_t)b->cap, sizeof *ns * (size_t)cap);
                if (ns)
                    b->syms = ns;
                int64_t *nv = ns ? tt__realloc(b->vals, sizeof *nv * (size_t)b->cap, sizeof *nv * (size_t)cap) : NULL;
                if (!nv)
                    return tt_error(TT_ENOMEM, "out of memory running graph %s", g->name);
                b->vals = nv;
                b->cap = cap;
            }
            b->syms[b->n] = s;
            b->vals[b->n++] = tt_sizes(real[j])[d];
        }
    }
    return TT_OK;
}

/* A constant argument with the symbols it holds replaced by their bound
 * sizes (an int list goes into `scratch`, which the caller frees). */
static tt_status eval_const(const tt_graph *g, const tt_value *v, const bindings *b,
                            tt_value *out, int64_t **scratch)
{
    *out = *v;
    *scratch = NULL;
    if (v->kind != TT_V_INT && v->kind != TT_V_INTS)
        return TT_OK;
    if (v->kind == TT_V_INT) {
        if (tt_size_is_sym(v->u.i) && !tt_sym_eval(v->u.i, b->n, b->syms, b->vals, &out->u.i))
            goto unbound;
        return TT_OK;
    }
    bool sym = false;
    for (int k = 0; k < v->n; k++)
        sym |= tt_size_is_sym(v->u.ints[k]);
    if (!sym)
        return TT_OK;
    *scratch = tt__malloc(sizeof **scratch * (size_t)v->n);
    if (!*scratch)
        return tt_error(TT_ENOMEM, "out of memory running graph %s", g->name);
    for (int k = 0; k < v->n; k++)
        if (!tt_sym_eval(v->u.ints[k], b->n, b->syms, b->vals, &(*scratch)[k]))
            goto unbound;
    out->u.ints = *scratch;
    return TT_OK;
unbound:
    return tt_error(TT_EGUARD, "tt_graph_run: graph %s has a size argument that depends on a "
                               "symbol its inputs do not bind (a data-dependent size)", g->name);
}

/* Builds node n's arguments from the values computed so far. */
static tt_status bind(const tt_graph *g, const gnode *n, tt_tensor ***vals, const bindings *b,
                      tt_value *args, void **lists)
{
    for (int i = 0; i < n->nargs; i++)
        lists[i] = NULL;
    for (int i = 0; i < n->nargs; i++) {
        const garg *a = &n->args[i];
        if (a->kind == GARG_CONST) {
            int64_t *scratch;
            tt_status st = eval_const(g, &a->v, b, &args[i], &scratch);
            lists[i] = scratch;
            if (st)
                return st;
        } else if (a->kind == GARG_REF) {
            args[i] = tt_v_tensor(vals[a->ref.node][a->ref.out]);
        } else {
            tt_tensor **l = tt__malloc(sizeof *l * (size_t)(a->nrefs ? a->nrefs : 1));
            if (!l)
                return tt_error(TT_ENOMEM, "out of memory running graph %s", g->name);
            for (int k = 0; k < a->nrefs; k++)
                l[k] = a->refs[k].node < 0 ? NULL : vals[a->refs[k].node][a->refs[k].out];
            lists[i] = l;
            args[i] = tt_v_tensors(a->nrefs, l);
        }
    }
    return TT_OK;
}

tt_status tt_graph_run(const tt_graph *g, int nin, tt_tensor **inputs, int nout,
                       tt_tensor **outputs)
{
    if (!g || g->output < 0)
        return tt_error(TT_EINVAL, "tt_graph_run: argument 'graph' is %s",
                        g ? "not finished (no output node)" : "NULL");
    if (nin != g->ninputs || (nin > 0 && !inputs))
        return tt_error(TT_EINVAL, "tt_graph_run: graph %s takes %d inputs, got %d", g->name,
                        g->ninputs, nin);
    const gnode *on = &g->nodes[g->output];
    if (nout != on->nouts || (nout > 0 && !outputs))
        return tt_error(TT_EINVAL, "tt_graph_run: graph %s returns %d outputs, 'outputs' has "
                                   "room for %d", g->name, on->nouts, nout);
    for (int i = 0; i < nin; i++) {
        const tt_tensor *want = g->nodes[i].vals[0];
        if (!inputs[i])
            return tt_error(TT_EINVAL, "tt_graph_run: input %d is NULL", i);
        if (tt_dtype_of(inputs[i]) != tt_dtype_of(want) || tt_ndim(inputs[i]) != tt_ndim(want))
            return tt_error(TT_EINVAL, "tt_graph_run: input %d (%s) is %s with %d dims; the "
                                       "graph was traced with %s with %d dims", i,
                            g->nodes[i].name, tt_dtype_name(tt_dtype_of(inputs[i])),
                            tt_ndim(inputs[i]), tt_dtype_name(tt_dtype_of(want)), tt_ndim(want));
    }
    /* A symbolic graph's size arguments are expressions of its input
     * symbols: evaluated on these inputs' sizes. */
    bindings b = {0};
    tt_status st = g->mode == TT_TRACE_SYMBOLIC ? bind_symbols(g, inputs, &b) : TT_OK;
    tt_tensor ***vals = st ? NULL : tt__calloc((size_t)g->n, sizeof *vals);
    if (!vals) {
        tt__free(b.syms);
        tt__free(b.vals);
        return st ? st : tt_error(TT_ENOMEM, "out of memory running graph %s", g->name);
    }
    /* The graph already holds any traced backward: record nothing. */
    tt_no_grad_begin();
    for (int i = 0; i < g->n && !st; i++) {
        const gnode *n = &g->nodes[i];
        int nv = n->nvals > 0 ? n->nvals : 1;
        vals[i] = tt__calloc((size_t)nv, sizeof **vals);
        if (!vals[i]) {
            st = tt_error(TT_ENOMEM, "out of memory running graph %s", g->name);
            break;
        }
        if (n->kind == TT_NODE_PLACEHOLDER) {
            vals[i][0] = tt_retain(inputs[i]);
        } else if (n->kind == TT_NODE_CONSTANT) {
            vals[i][0] = tt_retain(n->vals[0]);
        } else if (n->kind == TT_NODE_OP) {
            tt_value args[MAX_ARGS], outs[TT_MAX_RETURNS_PUBLIC];
            void *lists[MAX_ARGS];
            st = bind(g, n, vals, &b, args, lists);
            if (!st)
                st = tt_op_call(n->op, args, n->nargs, outs, tt__node_ncall(n));
            if (!st)
                st = tt__node_take_outs(g, n, outs, vals[i]);
            if (!st)
                tt__node_fill_after(n, args, vals[i]);
            if (!st)
                st = bind_results(g, n, vals[i], &b);
            for (int a = 0; a < n->nargs; a++)
                tt__free(lists[a]);
        } else {
            for (int k = 0; k < n->nouts; k++)
                outputs[k] = tt_retain(vals[n->outs[k].node][n->outs[k].out]);
        }
    }
    tt_no_grad_end();
    for (int i = 0; i < g->n; i++) {
        if (!vals[i])
            continue;
        for (int j = 0; j < (g->nodes[i].nvals > 0 ? g->nodes[i].nvals : 1); j++)
            tt_release(vals[i][j]);
        tt__free(vals[i]);
    }
    tt__free(vals);
    tt__free(b.syms);
    tt__free(b.vals);
    return st;
}
