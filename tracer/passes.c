/* Graph passes. */
#include "plan_impl.h"

#include <stdlib.h>
#include <string.h>

/* An op node that writes one of its arguments has an effect beyond its
 * results and is never dead. */
static bool writes(const gnode *n)
{
    const tt_schema *s = tt_op_schema(n->op);
    for (int a = 0; s && a < n->nargs; a++)
        if (tt_schema_arg(s, a)->is_write)
            return true;
    return false;
}

static void remap_ref(gref *r, const int *newidx) { r->node = newidx[r->node]; }

/* Keeps the nodes marked in keep[], renumbering references and users. */
static void compact(tt_graph *g, const bool *keep, int *newidx)
{
    int k = 0;
    for (int i = 0; i < g->n; i++)
        newidx[i] = keep[i] ? k++ : -1;
    for (int i = 0; i < g->n; i++) {
        gnode *n = &g->nodes[i];
        if (!keep[i]) {
            for (int a = 0; a < n->nargs; a++)
                tt__garg_clear(&n->args[a]);
            free(n->args);
            for (int j = 0; j < n->nvals; j++)
                tt_release(n->vals[j]);
            free(n->vals);
            free(n->outs);
            free(n->users);
            continue;
        }
        for (int a = 0; a < n->nargs; a++) {
            garg *ga = &n->args[a];
            if (ga->kind == GARG_REF)
                remap_ref(&ga->ref, newidx);
            for (int r = 0; ga->kind == GARG_REFS && r < ga->nrefs; r++)
                if (ga->refs[r].node >= 0)
                    remap_ref(&ga->refs[r], newidx);
        }
        for (int o = 0; o < n->nouts; o++)
            remap_ref(&n->outs[o], newidx);
        int nu = 0;
        for (int u = 0; u < n->nusers; u++)
            if (keep[n->users[u]])
                n->users[nu++] = newidx[n->users[u]];
        n->nusers = nu;
        g->nodes[newidx[i]] = *n;
    }
    g->n = k;
    g->output = g->output >= 0 ? newidx[g->output] : -1;
}

int tt__pass_dce(tt_graph *g)
{
    bool *keep = malloc(sizeof *keep * (size_t)(g->n + 1));
    int *newidx = malloc(sizeof *newidx * (size_t)(g->n + 1));
    if (!keep || !newidx) {
        free(keep);
        free(newidx);
        return 0; /* the plan stays correct without the pass */
    }
    /* Backwards: a node lives when it writes something, is an input or
     * output, or a live node reads it. */
    for (int i = 0; i < g->n; i++)
        keep[i] = g->nodes[i].kind != TT_NODE_OP || writes(&g->nodes[i]);
    for (int i = g->n - 1; i >= 0; i--) {
        const gnode *n = &g->nodes[i];
        if (!keep[i] && n->kind == TT_NODE_OP)
            for (int u = 0; u < n->nusers && !keep[i]; u++)
                keep[i] = keep[n->users[u]];
        if (!keep[i])
            continue;
        for (int a = 0; a < n->nargs; a++) {
            const garg *ga = &n->args[a];
            if (ga->kind == GARG_REF)
                keep[ga->ref.node] = true;
            for (int r = 0; ga->kind == GARG_REFS && r < ga->nrefs; r++)
                if (ga->refs[r].node >= 0)
                    keep[ga->refs[r].node] = true;
        }
        for (int o = 0; o < n->nouts; o++)
            keep[n->outs[o].node] = true;
    }
    int removed = 0;
    for (int i = 0; i < g->n; i++)
        removed += !keep[i];
    if (removed)
        compact(g, keep, newidx);
    free(keep);
    free(newidx);
    return removed;
}
