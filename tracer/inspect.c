/* Public inspection of a graph's arguments (tt_trace.h), for tools that
 * export graphs (the `tt` tool's JSON): what each op node reads, spelled
 * as the text print spells it. */
#include "print_impl.h"

static const gnode *node_at(const tt_graph *g, int node, const char *fn)
{
    if (!g || node < 0 || node >= g->n) {
        tt_error(TT_EINVAL, "%s: argument 'node' (#2) = %d is not a node of the graph (%d "
                            "nodes)", fn, node, g ? g->n : 0);
        return NULL;
    }
    return &g->nodes[node];
}

int tt_graph_node_num_args(const tt_graph *g, int node)
{
    const gnode *n = node_at(g, node, "tt_graph_node_num_args");
    if (!n)
        return -1;
    return n->kind == TT_NODE_OP ? n->nargs : n->kind == TT_NODE_OUTPUT ? n->nouts : 0;
}

/* Argument i of node n as a reference (refs, or a single one in *one), or
 * NULL for a constant. */
static const garg *arg_at(const tt_graph *g, const gnode *n, int node, int i, const char *fn,
                          gref *one, bool *ok)
{
    int nargs = tt_graph_node_num_args(g, node);
    *ok = false;
    if (i < 0 || i >= nargs) {
        tt_error(TT_EINVAL, "%s: argument 'i' (#3) = %d is not an argument of node '%s' (it "
                            "has %d)", fn, i, n->name, nargs);
        return NULL;
    }
    *ok = true;
    if (n->kind == TT_NODE_OUTPUT) {
        *one = n->outs[i];
        return NULL;
    }
    one->node = -1;
    return &n->args[i];
}

char *tt_graph_node_arg_text(const tt_graph *g, int node, int i)
{
    static const char fn[] = "tt_graph_node_arg_text";
    const gnode *n = node_at(g, node, fn);
    gref one = {-1, 0};
    bool ok;
    const garg *a = n ? arg_at(g, n, node, i, fn, &one, &ok) : NULL;
    if (!n || !ok)
        return NULL;
    sbuf b = {0};
    if (!a || a->kind == GARG_REF) {
        print_ref(&b, g, a ? a->ref : one);
    } else if (a->kind == GARG_CONST) {
        print_const(&b, &a->v);
    } else {
        sb_printf(&b, "[");
        for (int k = 0; k < a->nrefs; k++) {
            sb_printf(&b, "%s", k ? ", " : "");
            if (a->refs[k].node < 0)
                sb_printf(&b, "None");
            else
                print_ref(&b, g, a->refs[k]);
        }
        sb_printf(&b, "]");
    }
    if (b.oom || !b.s) {
        free(b.s);
        tt_error(TT_ENOMEM, "%s: out of memory", fn);
        return NULL;
    }
    return b.s;
}

int tt_graph_node_arg_node(const tt_graph *g, int node, int i)
{
    static const char fn[] = "tt_graph_node_arg_node";
    const gnode *n = node_at(g, node, fn);
    gref one = {-1, 0};
    bool ok;
    const garg *a = n ? arg_at(g, n, node, i, fn, &one, &ok) : NULL;
    if (!n || !ok)
        return -2;
    if (!a)
        return one.node;
    return a->kind == GARG_REF ? a->ref.node : -1;
}
