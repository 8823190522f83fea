/* Graph passes. */
#include "builtin_ops.h"
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
            tt__gnode_free(n);
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
    tt__graph_reindex_names(g);
}

int tt__pass_dce(tt_graph *g)
{
    bool *keep = tt__malloc(sizeof *keep * (size_t)(g->n + 1));
    int *newidx = tt__malloc(sizeof *newidx * (size_t)(g->n + 1));
    if (!keep || !newidx) {
        tt__free(keep);
        tt__free(newidx);
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
    tt__free(keep);
    tt__free(newidx);
    return removed;
}

/* ------------------------------------------------------- functionalization */

/* The functional form of an in-place built-in: tt::add_.Tensor ->
 * tt::add.Tensor, tt::relu_ -> tt::relu. NULL when there is none (zero_,
 * copy_, fill_ and custom ops keep their mutation). */
static const tt_op *functional_variant(const tt_op *op)
{
    if (!tt_op_is_builtin(op))
        return NULL;
    const char *n = tt_op_name(op);
    const char *dot = strchr(n, '.');
    size_t base = dot ? (size_t)(dot - n) : strlen(n);
    if (base < 2 || n[base - 1] != '_')
        return NULL;
    char name[128];
    snprintf(name, sizeof name, "%.*s%s", (int)(base - 1), n, dot ? dot : "");
    const tt_op *f = tt_op_find(name);
    tt_clear_error();
    if (!f || tt_schema_nargs(tt_op_schema(f)) != tt_schema_nargs(tt_op_schema(op)))
        return NULL;
    return f;
}

/* True when some value of g other than node `self_node`'s own and the
 * in-place node's shares v's storage: a view would see the write, which a
 * functional rewrite would hide from it. */
static bool aliased(const tt_graph *g, const tt_tensor *v, int self_node, int inplace_node)
{
    for (int i = 0; i < g->n; i++) {
        if (i == self_node || i == inplace_node)
            continue;
        const gnode *n = &g->nodes[i];
        for (int j = 0; j < n->nvals; j++)
            if (n->vals[j] && n->vals[j] != v && tt_same_storage(n->vals[j], v))
                return true;
    }
    return false;
}

int tt__pass_functionalize(tt_graph *g, bool inputs_too)
{
    int rewritten = 0;
    /* root[i]: the input whose value node i's chain of rewritten in-place
     * ops descends from (-1: none); last[p]: the final value of input p. */
    int *root = tt__malloc(sizeof *root * (size_t)(g->n + 1));
    int *last = tt__malloc(sizeof *last * (size_t)(g->ninputs + 1));
    if (!root || !last) {
        tt__free(root);
        tt__free(last);
        return 0; /* the pass is optional */
    }
    for (int i = 0; i < g->n; i++)
        root[i] = i < g->ninputs ? i : -1;
    for (int i = 0; i < g->ninputs; i++)
        last[i] = -1;
    for (int i = g->ninputs; i < g->n; i++) {
        gnode *n = &g->nodes[i];
        if (n->kind != TT_NODE_OP || n->nvals != 1 || n->nargs < 1 || n->args[0].kind != GARG_REF)
            continue;
        if (!tt_schema_arg(tt_op_schema(n->op), 0)->is_write)
            continue;
        const tt_op *f = functional_variant(n->op);
        gref self = n->args[0].ref;
        tt_tensor *v = n->vals[0];
        if (!f || !v || aliased(g, v, self.node, i) || (!inputs_too && root[self.node] >= 0))
            continue;
        tt_tensor *fresh = tt_fake_like(v);
        if (!fresh) {
            tt_clear_error();
            continue;
        }
        n->op = f;
        n->vals[0] = fresh;
        tt_release(v);
        rewritten++;
        root[i] = root[self.node];
        if (root[i] >= 0)
            last[root[i]] = i;
    }
    /* Copy-backs into the inputs that were written, right before the
     * output node, so the plan's effect on its inputs stays the same. */
    const tt_op *copy = tt__op(TT_OP_COPY_);
    for (int p = 0; p < g->ninputs && g->output == g->n - 1; p++) {
        if (last[p] < 0)
            continue;
        gnode out = g->nodes[g->output];
        g->n--;
        garg args[2] = {{.kind = GARG_REF, .ref = {p, 0}},
                        {.kind = GARG_REF, .ref = {last[p], 0}}};
        tt_value res = tt_v_tensor(g->nodes[p].vals[0]);
        int id = tt__graph_add_op(g, copy, args, 2, &res, 1, (tt_srcloc){0});
        if (id >= 0) /* the line of the last write it makes visible */
            g->nodes[id].loc = g->nodes[last[p]].loc;
        g->output = g->n;
        g->nodes[g->n++] = out;
        if (id < 0) {
            tt_clear_error();
            break;
        }
    }
    tt__graph_rebuild_users(g);
    tt__free(root);
    tt__free(last);
    return rewritten;
}

/* ---------------------------------------------------------- clone elision */

/* clone(x) where the clone is x's only reader, and x is an op's fresh
 * result that nothing else aliases, copies memory for nothing: the
 * clone's readers can read x. (A traced backward makes these: the engine
 * clones a gradient it cannot prove nobody else holds, and while tracing
 * the graph itself holds every value.) */
int tt__pass_elide_clones(tt_graph *g)
{
    const tt_op *clone = tt__op(TT_OP_CLONE);
    int elided = 0;
    for (int i = g->ninputs; i < g->n; i++) {
        gnode *n = &g->nodes[i];
        if (n->kind != TT_NODE_OP || n->op != clone || n->args[0].kind != GARG_REF)
            continue;
        gref src = n->args[0].ref;
        const gnode *x = &g->nodes[src.node];
        if (x->kind != TT_NODE_OP || x->nvals != 1 || x->nusers != 1 || writes(x))
            continue;
        tt_tensor *v = x->vals[0];
        if (!v || !tt_is_contiguous(v) || aliased(g, v, src.node, src.node))
            continue;
        /* Point the clone's readers (and the outputs) at x. */
        for (int j = i + 1; j < g->n; j++) {
            gnode *u = &g->nodes[j];
            for (int a = 0; a < u->nargs; a++) {
                garg *ga = &u->args[a];
                if (ga->kind == GARG_REF && ga->ref.node == i)
                    ga->ref = src;
                for (int r = 0; ga->kind == GARG_REFS && r < ga->nrefs; r++)
                    if (ga->refs[r].node == i)
                        ga->refs[r] = src;
            }
            for (int k = 0; k < u->nouts; k++)
                if (u->outs[k].node == i)
                    u->outs[k] = src;
        }
        elided++;
    }
    if (elided) {
        tt__graph_rebuild_users(g);
        tt__pass_dce(g); /* the clones have no readers now */
    }
    return elided;
}

tt_status tt_graph_functionalize(tt_graph *g)
{
    if (!g || g->output < 0)
        return tt_error(TT_EINVAL, "tt_graph_functionalize: argument 'graph' is %s",
                        g ? "not finished" : "NULL");
    tt__pass_functionalize(g, true);
    return tt_graph_verify(g);
}
