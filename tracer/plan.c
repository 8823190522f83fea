/* Compiled plans: a traced graph after its passes, with kernels resolved
 * once and values released at their last use, replayed without running
 * the traced function (and without the dispatcher's argument binding:
 * the recorded arguments are already complete). */
#include "plan_impl.h"
#include "fuse_impl.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    const tt_op *op;
    int node;           /* the op node (for a fused step: the chain's last) */
    fused_step *fused;  /* a fused elementwise chain, or NULL */
    bool sym;           /* a constant argument holds a symbolic size */
    int *release;       /* value slots whose last use is this step */
    int nrelease;
} step;

struct tt_plan {
    tt_graph *g;
    int *offset; /* first value slot of each node */
    int nslots;
    step *steps;
    int nsteps;
    /* What the passes did, for TT_LOG=plan. */
    int nfunctionalized, ndead, nclones;
};

const tt_graph *tt__plan_graph(const tt_plan *p) { return p ? p->g : NULL; }

void tt__plan_free(tt_plan *p)
{
    if (!p)
        return;
    for (int i = 0; i < p->nsteps; i++) {
        tt__free(p->steps[i].release);
        tt__fused_free(p->steps[i].fused);
    }
    tt__free(p->steps);
    tt__free(p->offset);
    tt_graph_free(p->g);
    tt__free(p);
}

static bool value_is_sym(const tt_value *v)
{
    if (v->kind == TT_V_INT)
        return tt_size_is_sym(v->u.i);
    if (v->kind == TT_V_INTS)
        for (int i = 0; i < v->n; i++)
            if (tt_size_is_sym(v->u.ints[i]))
                return true;
    return false;
}

/* The step that reads a slot last; -1: kept to the end (graph outputs,
 * inputs and constants, which the plan does not own). */
static tt_status plan_liveness(tt_plan *p, int *step_of_node)
{
    const tt_graph *g = p->g;
    int *last = tt__malloc(sizeof *last * (size_t)(p->nslots ? p->nslots : 1));
    if (!last)
        return tt_error(TT_ENOMEM, "tt_compile: out of memory planning memory");
    for (int i = 0; i < p->nslots; i++)
        last[i] = -1;
    for (int k = 0; k < p->nsteps; k++) {
        const step *s = &p->steps[k];
        if (s->fused) {
            for (int i = 0; i < tt__fused_num_inputs(s->fused); i++) {
                gref r = tt__fused_input(s->fused, i);
                last[p->offset[r.node] + r.out] = k;
            }
            continue;
        }
        const gnode *n = &g->nodes[s->node];
        for (int a = 0; a < n->nargs; a++) {
            const garg *ga = &n->args[a];
            if (ga->kind == GARG_REF)
                last[p->offset[ga->ref.node] + ga->ref.out] = k;
            for (int r = 0; ga->kind == GARG_REFS && r < ga->nrefs; r++)
                if (ga->refs[r].node >= 0)
                    last[p->offset[ga->refs[r].node] + ga->refs[r].out] = k;
        }
    }
    /* Outputs live to the end; values produced but never read die right
     * after their step. */
    if (g->output >= 0)
        for (int k = 0; k < g->nodes[g->output].nouts; k++) {
            gref r = g->nodes[g->output].outs[k];
            last[p->offset[r.node] + r.out] = -1;
        }
    for (int i = 0; i < g->n; i++) {
        const gnode *n = &g->nodes[i];
        if (n->kind != TT_NODE_OP || step_of_node[i] < 0)
            continue;
        for (int j = 0; j < n->nvals; j++) {
            int slot = p->offset[i] + j;
            bool is_out = false;
            for (int k = 0; g->output >= 0 && k < g->nodes[g->output].nouts; k++)
                is_out |= g->nodes[g->output].outs[k].node == i && g->nodes[g->output].outs[k].out == j;
            if (last[slot] < 0 && !is_out)
                last[slot] = step_of_node[i];
        }
    }
    tt_status st = TT_OK;
    for (int slot = 0; slot < p->nslots && !st; slot++) {
        if (last[slot] < 0)
            continue;
        step *s = &p->steps[last[slot]];
        int *nr = tt__realloc(s->release, sizeof *nr * (size_t)s->nrelease,
                              sizeof *nr * (size_t)(s->nrelease + 1));
        if (!nr)
            st = tt_error(TT_ENOMEM, "tt_compile: out of memory planning memory");
        else {
            s->release = nr;
            s->release[s->nrelease++] = slot;
        }
    }
    tt__free(last);
    return st;
}

tt_plan *tt__plan_new(tt_graph *g)
{
    tt_plan *p = tt__calloc(1, sizeof *p);
    int *step_of_node = NULL;
    if (!p) {
        tt_error(TT_ENOMEM, "tt_compile: out of memory");
        tt_graph_free(g);
        return NULL;
    }
    p->nfunctionalized = tt__pass_functionalize(g, false);
    p->ndead = tt__pass_dce(g);
    p->nclones = tt__pass_elide_clones(g);
    p->g = g;
    p->offset = tt__malloc(sizeof *p->offset * (size_t)(g->n + 1));
    step_of_node = tt__malloc(sizeof *step_of_node * (size_t)(g->n + 1));
    int nsteps = 0;
    for (int i = 0; i < g->n; i++)
        nsteps += g->nodes[i].kind == TT_NODE_OP;
    p->steps = tt__calloc((size_t)(nsteps ? nsteps : 1), sizeof *p->steps);
    if (!p->offset || !step_of_node || !p->steps)
        goto oom;
    fused_step **chains = tt__malloc(sizeof *chains * (size_t)(nsteps ? nsteps : 1));
    int *chain_of = tt__malloc(sizeof *chain_of * (size_t)(g->n + 1));
    if (!chains || !chain_of) {
        tt__free(chains);
        tt__free(chain_of);
        goto oom;
    }
    for (int i = 0; i < g->n; i++)
        chain_of[i] = -1;
    int nchains = tt__fuse_plan(g, chains, chain_of, nsteps);
    if (nchains < 0) {
        tt__free(chains);
        tt__free(chain_of);
        goto oom;
    }
    for (int i = 0; i < g->n; i++) {
        const gnode *n = &g->nodes[i];
        p->offset[i] = p->nslots;
        p->nslots += n->nvals;
        step_of_node[i] = -1;
        if (n->kind != TT_NODE_OP)
            continue;
        int c = chain_of[i];
        if (c >= 0) {
            /* A fused chain runs once, where its last op was. */
            fused_step *f = chains[c];
            if (tt__fused_node(f, tt__fused_num_nodes(f) - 1) != i)
                continue;
            chains[c] = NULL;
            p->steps[p->nsteps] = (step){.op = n->op, .node = i, .fused = f};
            step_of_node[i] = p->nsteps++;
            continue;
        }
        step *s = &p->steps[p->nsteps];
        s->op = n->op;
        s->node = i;
        for (int a = 0; a < n->nargs; a++)
            s->sym |= n->args[a].kind == GARG_CONST && value_is_sym(&n->args[a].v);
        step_of_node[i] = p->nsteps++;
    }
    for (int c = 0; c < nchains; c++)
        tt__fused_free(chains[c]); /* none left: all were placed */
    tt__free(chains);
    tt__free(chain_of);
    p->offset[g->n] = p->nslots;
    if (plan_liveness(p, step_of_node))
        goto fail;
    tt__free(step_of_node);
    return p;
oom:
    tt_error(TT_ENOMEM, "tt_compile: out of memory building a plan");
fail:
    tt__free(step_of_node);
    tt__plan_free(p);
    return NULL;
}

/* A constant argument with its symbols replaced by the bound sizes. */
static tt_status eval_const(const tt_value *v, const tt_size *syms, const int64_t *vals,
                            int nsyms, tt_value *out, int64_t *scratch)
{
    *out = *v;
    if (v->kind == TT_V_INT && tt_size_is_sym(v->u.i)) {
        if (!tt_sym_eval(v->u.i, nsyms, syms, vals, &out->u.i))
            return tt_error(TT_EGUARD, "compiled plan: a size in the graph depends on a "
                                       "symbol the inputs do not bind");
    } else if (v->kind == TT_V_INTS) {
        for (int i = 0; i < v->n; i++)
            if (!tt_sym_eval(v->u.ints[i], nsyms, syms, vals, &scratch[i]))
                return tt_error(TT_EGUARD, "compiled plan: a size in the graph depends on "
                                           "a symbol the inputs do not bind");
        out->u.ints = scratch;
    }
    return TT_OK;
}

tt_status tt__plan_run(const tt_plan *p, tt_tensor **in, int nin, tt_tensor **out, int nout,
                       const tt_size *syms, const int64_t *vals, int nsyms)
{
    const tt_graph *g = p->g;
    if (nin != g->ninputs || g->output < 0 || nout != g->nodes[g->output].nouts)
        return tt_error(TT_EINVAL, "compiled plan: takes %d inputs and returns %d outputs "
                                   "(got %d and %d)", g->ninputs,
                        g->output >= 0 ? g->nodes[g->output].nouts : 0, nin, nout);
    tt_tensor **slots = tt__calloc((size_t)(p->nslots ? p->nslots : 1), sizeof *slots);
    if (!slots)
        return tt_error(TT_ENOMEM, "compiled plan: out of memory");
    for (int i = 0; i < nout; i++)
        out[i] = NULL;
    tt_status st = TT_OK;
    tt_scope_pause();
    tt_no_grad_begin();
    for (int i = 0; i < g->n; i++) {
        const gnode *n = &g->nodes[i];
        if (n->kind == TT_NODE_PLACEHOLDER)
            slots[p->offset[i]] = tt_retain(in[i]);
        else if (n->kind == TT_NODE_CONSTANT)
            slots[p->offset[i]] = tt_retain(n->vals[0]);
    }
    for (int k = 0; k < p->nsteps && !st; k++) {
        const step *s = &p->steps[k];
        const gnode *n = &g->nodes[s->node];
        if (s->fused) {
            tt_tensor *ins[FUSE_MAX + 1];
            for (int i = 0; i < tt__fused_num_inputs(s->fused); i++) {
                gref r = tt__fused_input(s->fused, i);
                ins[i] = slots[p->offset[r.node] + r.out];
            }
            st = tt__fused_run(s->fused, ins, &slots[p->offset[s->node]]);
            for (int r = 0; !st && r < s->nrelease; r++)
                slots[s->release[r]] = tt_release(slots[s->release[r]]);
            continue;
        }
        tt_value args[TT_TRACE_MAX_ARGS], outs[TT_MAX_RETURNS_PUBLIC];
        tt_tensor **lists[TT_TRACE_MAX_ARGS] = {0};
        int64_t scratch[TT_TRACE_MAX_ARGS][TT_MAX_DIMS * 2];
        for (int a = 0; a < n->nargs && !st; a++) {
            const garg *ga = &n->args[a];
            if (ga->kind == GARG_CONST) {
                if (s->sym && ga->v.kind == TT_V_INTS && ga->v.n > TT_MAX_DIMS * 2)
                    st = tt_error(TT_EINVAL, "compiled plan: symbolic int list too long");
                else if (s->sym)
                    st = eval_const(&ga->v, syms, vals, nsyms, &args[a], scratch[a]);
                else
                    args[a] = ga->v;
            } else if (ga->kind == GARG_REF) {
                args[a] = tt_v_tensor(slots[p->offset[ga->ref.node] + ga->ref.out]);
            } else {
                lists[a] = tt__malloc(sizeof(tt_tensor *) * (size_t)(ga->nrefs ? ga->nrefs : 1));
                if (!lists[a]) {
                    st = tt_error(TT_ENOMEM, "compiled plan: out of memory");
                    break;
                }
                for (int r = 0; r < ga->nrefs; r++)
                    lists[a][r] = ga->refs[r].node < 0
                                      ? NULL
                                      : slots[p->offset[ga->refs[r].node] + ga->refs[r].out];
                args[a] = tt_v_tensors(ga->nrefs, lists[a]);
            }
        }
        if (!st)
            st = tt_op_call_unchecked(s->op, args, n->nargs, outs, n->nvals);
        for (int a = 0; a < n->nargs; a++)
            tt__free(lists[a]);
        for (int j = 0; !st && j < n->nvals; j++)
            slots[p->offset[s->node] + j] = outs[j].kind == TT_V_TENSOR ? outs[j].u.t : NULL;
        for (int r = 0; !st && r < s->nrelease; r++)
            slots[s->release[r]] = tt_release(slots[s->release[r]]);
    }
    tt_no_grad_end();
    tt_scope_resume();
    if (!st) {
        const gnode *o = &g->nodes[g->output];
        for (int k = 0; k < nout; k++)
            out[k] = tt_retain(slots[p->offset[o->outs[k].node] + o->outs[k].out]);
        for (int k = 0; k < nout && !st; k++)
            st = tt_scope_adopt(out[k]);
        if (st)
            for (int k = 0; k < nout; k++)
                out[k] = tt_release(out[k]);
    }
    for (int i = 0; i < p->nslots; i++)
        tt_release(slots[i]);
    tt__free(slots);
    return st;
}

void tt__plan_describe(const tt_plan *p, char *buf, size_t n)
{
    int fused = 0, fused_ops = 0, released = 0;
    for (int k = 0; k < p->nsteps; k++) {
        if (p->steps[k].fused) {
            fused++;
            fused_ops += tt__fused_num_nodes(p->steps[k].fused);
        }
        released += p->steps[k].nrelease;
    }
    snprintf(buf, n, "passes: %d in-place ops functionalized, %d dead ops removed, %d clones "
                     "elided; %d steps, %d fused kernels (%d ops), %d buffers, %d released "
                     "after their last use", p->nfunctionalized, p->ndead, p->nclones,
             p->nsteps, fused, fused_ops, p->nslots, released);
}
