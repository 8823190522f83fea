/* The interpreter: runs a graph's nodes in order on real tensors. */
#include "graph_impl.h"

#include <stdlib.h>
#include <string.h>

#define MAX_ARGS 32

/* Builds node n's arguments from the values computed so far. */
static tt_status bind(const tt_graph *g, const gnode *n, tt_tensor ***vals, tt_value *args,
                      tt_tensor ***lists)
{
    for (int i = 0; i < n->nargs; i++) {
        const garg *a = &n->args[i];
        lists[i] = NULL;
        if (a->kind == GARG_CONST) {
            args[i] = a->v;
        } else if (a->kind == GARG_REF) {
            args[i] = tt_v_tensor(vals[a->ref.node][a->ref.out]);
        } else {
            tt_tensor **l = malloc(sizeof *l * (size_t)(a->nrefs ? a->nrefs : 1));
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
    tt_tensor ***vals = calloc((size_t)g->n, sizeof *vals);
    if (!vals)
        return tt_error(TT_ENOMEM, "out of memory running graph %s", g->name);
    tt_status st = TT_OK;
    /* The graph already holds any traced backward: record nothing. */
    tt_no_grad_begin();
    for (int i = 0; i < g->n && !st; i++) {
        const gnode *n = &g->nodes[i];
        int nv = n->nvals > 0 ? n->nvals : 1;
        vals[i] = calloc((size_t)nv, sizeof **vals);
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
            tt_tensor **lists[MAX_ARGS];
            st = bind(g, n, vals, args, lists);
            if (!st)
                st = tt_op_call(n->op, args, n->nargs, outs, n->nvals);
            for (int a = 0; a < n->nargs; a++)
                free(lists[a]);
            for (int j = 0; !st && j < n->nvals; j++)
                vals[i][j] = outs[j].kind == TT_V_TENSOR ? outs[j].u.t : NULL;
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
        free(vals[i]);
    }
    free(vals);
    return st;
}
