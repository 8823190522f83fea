/* Compiled plans: a traced graph after its passes, with kernels resolved
 * once and values released at their last use, replayed without running
 * the traced function (and without the dispatcher's argument binding:
 * the recorded arguments are already complete). */
#include "plan_impl.h"
#include "builtin_ops.h"
#include "fuse_impl.h"
#include "ops_plan.h"
#include "profile_impl.h"
#include "tensor_impl.h"

#include <stdlib.h>
#include <string.h>

typedef enum {
    STEP_OP,       /* one op node through its kernel */
    STEP_FUSED,    /* a fused elementwise chain */
    STEP_GEMM_ACC, /* w.add_(a @ b, alpha) as one accumulating GEMM */
} step_kind;

/* When a step runs. An epilogue is planned twice: folded (RUN_FAST) for
 * calls whose inputs share no memory, and as the graph's own ops
 * (RUN_SAFE) for calls whose inputs alias each other, where the folded
 * form's reasoning about what writes what does not hold. */
enum { RUN_ALWAYS, RUN_FAST, RUN_SAFE };

typedef struct {
    step_kind kind;
    unsigned char when;
    const tt_op *op;
    int node;           /* the op node (for a fused step: the chain's last) */
    fused_step *fused;  /* STEP_FUSED */
    gref acc[3];        /* STEP_GEMM_ACC: w, a, b */
    double alpha;       /* STEP_GEMM_ACC */
    uint64_t dying;     /* STEP_FUSED: inputs read last here (to write over) */
    bool sym;           /* a constant argument holds a symbolic size */
    bool binds;         /* a result's traced size holds a data-dependent symbol */
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
    int nconv; /* convolution epilogues fused */
    bool variants; /* some step runs only on the fast or the safe path */
    /* NULL with the memory plan off. A symbolic plan's one serves every
     * binding of its symbols: it grows to the largest sizes the bindings
     * ask for (runtime/plan_memory.c). */
    tt_mem_plan *mem;
    /* Sizes of results that hold data-dependent symbols (u0: nonzero's
     * count), at most: each run binds them from the real results, so
     * later steps' sizes written in them (a backward's expand to [u0])
     * evaluate. */
    int nbind_slots;
    tt_tensor **slots; /* the value slots, reused by every run */
    atomic_flag slots_busy; /* a run on another thread uses its own */
};

const tt_graph *tt__plan_graph(const tt_plan *p) { return p ? p->g : NULL; }

void tt__plan_stats(const tt_plan *p, tt_compile_stats *st)
{
    st->fused_steps = st->fused_ops = st->epilogues = 0;
    for (int k = 0; k < p->nsteps; k++) {
        st->fused_steps += p->steps[k].kind == STEP_FUSED;
        st->fused_ops += p->steps[k].kind == STEP_FUSED ? tt__fused_num_nodes(p->steps[k].fused) : 0;
        st->epilogues += p->steps[k].kind == STEP_GEMM_ACC;
    }
    st->conv_epilogues = p->nconv;
    st->planned_bytes = (int64_t)tt__mem_plan_bytes(p->mem);
}

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
    tt__free(p->slots);
    tt__mem_plan_free(p->mem);
    tt_graph_free(p->g);
    tt__free(p);
}

/* How many sizes of value v hold a data-dependent (unbacked) symbol. */
static int unbacked_sizes(const tt_tensor *v)
{
    int n = 0;
    for (int d = 0; v && d < tt_ndim(v); d++)
        n += tt_size_is_sym(tt_sizes(v)[d]) && tt_sym_hint(tt_sizes(v)[d]) < 0;
    return n;
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
        if (s->kind == STEP_FUSED) {
            for (int i = 0; i < tt__fused_num_inputs(s->fused); i++) {
                gref r = tt__fused_input(s->fused, i);
                last[p->offset[r.node] + r.out] = k;
            }
            continue;
        }
        if (s->kind == STEP_GEMM_ACC) {
            for (int i = 0; i < 3; i++)
                last[p->offset[s->acc[i].node] + s->acc[i].out] = k;
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
    /* Outputs live to the end (-2); values produced but never read die
     * right after their step. */
    if (g->output >= 0)
        for (int k = 0; k < g->nodes[g->output].nouts; k++) {
            gref r = g->nodes[g->output].outs[k];
            last[p->offset[r.node] + r.out] = -2;
        }
    for (int i = 0; i < g->n; i++) {
        const gnode *n = &g->nodes[i];
        if (n->kind != TT_NODE_OP || step_of_node[i] < 0)
            continue;
        for (int j = 0; j < n->nvals; j++) {
            int slot = p->offset[i] + j;
            if (last[slot] == -1)
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

/* ------------------------------------------------------ GEMM epilogues */

static const tt_tensor *value_of(const tt_graph *g, gref r)
{
    return g->nodes[r.node].vals[r.out];
}

/* The node whose memory value r lives in: follows results that share
 * their first argument's storage (views, in-place results) back to it. */
static int mem_root(const tt_graph *g, gref r)
{
    for (;;) {
        const gnode *n = &g->nodes[r.node];
        if (n->kind != TT_NODE_OP || n->nargs < 1 || n->args[0].kind != GARG_REF)
            return r.node;
        const tt_tensor *v = n->vals[r.out], *src = value_of(g, n->args[0].ref);
        if (!v || !src || !tt_same_storage(v, src))
            return r.node;
        r = n->args[0].ref;
    }
}

static bool plain_matrix(const tt_tensor *t, tt_dtype dt)
{
    if (!t || tt_dtype_of(t) != dt || tt_ndim(t) != 2)
        return false;
    for (int d = 0; d < 2; d++)
        if (tt_size_is_sym(tt_sizes(t)[d]) || tt_size_is_sym(tt_strides(t)[d]))
            return false;
    return true;
}

/* Node i is w.add_(a @ b, alpha=s) whose product nothing else reads, w an
 * input's memory and float: returns the product's node, else -1. The
 * folded GEMM runs where the add_ was, so nothing between the product and
 * the add_ may write a's or b's memory (only other inputs are written
 * there, and the fast path runs only when inputs share no memory). */
static int epilogue_product(const tt_graph *g, int i)
{
    const gnode *n = &g->nodes[i];
    if (n->kind != TT_NODE_OP || n->nargs != 3 || n->args[0].kind != GARG_REF ||
        n->args[1].kind != GARG_REF || n->args[2].kind != GARG_CONST ||
        (n->args[2].v.kind != TT_V_FLOAT && n->args[2].v.kind != TT_V_INT) ||
        tt__builtin_id(n->op) != TT_OP_ADD__TENSOR)
        return -1;
    int m = n->args[1].ref.node;
    const gnode *mn = &g->nodes[m];
    if (mn->kind != TT_NODE_OP || mn->nvals != 1 || mn->nusers != 1 ||
        tt__graph_is_output(g, m) || mn->nargs != 2 || mn->args[0].kind != GARG_REF ||
        mn->args[1].kind != GARG_REF)
        return -1;
    int op = tt__builtin_id(mn->op);
    if (op != TT_OP_MM && op != TT_OP_MATMUL)
        return -1;
    const tt_tensor *w = value_of(g, n->args[0].ref), *prod = mn->vals[0];
    tt_dtype dt = w ? tt_dtype_of(w) : TT_F32;
    if ((dt != TT_F32 && dt != TT_F64) || !plain_matrix(w, dt) || !tt_is_contiguous(w) ||
        !plain_matrix(prod, dt) || !plain_matrix(value_of(g, mn->args[0].ref), dt) ||
        !plain_matrix(value_of(g, mn->args[1].ref), dt) ||
        tt_sizes(w)[0] != tt_sizes(prod)[0] || tt_sizes(w)[1] != tt_sizes(prod)[1] ||
        !tt__gemm_accumulate_fits(w, value_of(g, mn->args[0].ref), value_of(g, mn->args[1].ref)))
        return -1; /* a pass that cannot apply steps aside */
    int wr = mem_root(g, n->args[0].ref), ar = mem_root(g, mn->args[0].ref),
        br = mem_root(g, mn->args[1].ref);
    if (g->nodes[wr].kind != TT_NODE_PLACEHOLDER || ar == wr || br == wr)
        return -1;
    for (int k = m + 1; k < i; k++) {
        const gnode *x = &g->nodes[k];
        const tt_schema *sc = x->kind == TT_NODE_OP ? tt_op_schema(x->op) : NULL;
        for (int q = 0; sc && q < x->nargs; q++) {
            if (!tt_schema_arg(sc, q)->is_write)
                continue;
            if (x->args[q].kind != GARG_REF)
                return -1;
            int r = mem_root(g, x->args[q].ref);
            if (g->nodes[r].kind != TT_NODE_PLACEHOLDER || r == ar || r == br || r == wr)
                return -1;
        }
    }
    return m;
}

/* ------------------------------------------------------------- building */

tt_plan *tt__plan_new(tt_graph *g, unsigned passes_off)
{
    tt_plan *p = tt__calloc(1, sizeof *p);
    int *step_of_node = NULL, *epi = NULL;
    if (!p) {
        tt_error(TT_ENOMEM, "tt_compile: out of memory");
        tt_graph_free(g);
        return NULL;
    }
    atomic_flag_clear(&p->slots_busy);
    p->nfunctionalized = tt__pass_functionalize(g, false);
    p->ndead = tt__pass_dce(g);
    p->nclones = tt__pass_elide_clones(g);
    p->nconv = passes_off & TT_PASS_EPILOGUE ? 0 : tt__pass_fuse_conv(g);
    p->g = g;
    /* one memory plan, recorded on the first run (a symbolic plan's grows
     * with its bindings' sizes) */
    if (!(passes_off & TT_PASS_MEMPLAN) && !(p->mem = tt__mem_plan_new()))
        goto oom;
    p->offset = tt__malloc(sizeof *p->offset * (size_t)(g->n + 1));
    step_of_node = tt__malloc(sizeof *step_of_node * (size_t)(g->n + 1));
    /* epi[i]: for an add_ folded into a GEMM, the product's node; for
     * that product, -2; else -1. */
    epi = tt__malloc(sizeof *epi * (size_t)(g->n + 1));
    int nsteps = 0;
    for (int i = 0; i < g->n; i++)
        nsteps += g->nodes[i].kind == TT_NODE_OP;
    if (!p->offset || !step_of_node || !epi)
        goto oom;
    for (int i = 0; i < g->n; i++)
        epi[i] = -1;
    for (int i = 0; i < g->n && !(passes_off & TT_PASS_EPILOGUE); i++) {
        int m = epilogue_product(g, i);
        if (m >= 0 && epi[m] == -1) {
            epi[i] = m;
            epi[m] = -2;
            nsteps++; /* the folded GEMM beside the two safe-path steps */
        }
    }
    p->steps = tt__calloc((size_t)(nsteps ? nsteps : 1), sizeof *p->steps);
    if (!p->steps)
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
    int nchains = passes_off & TT_PASS_FUSE
                      ? 0
                      : tt__fuse_plan(g, chains, chain_of, nsteps, !(passes_off & TT_PASS_INPLACE));
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
            p->steps[p->nsteps] = (step){.kind = STEP_FUSED, .op = n->op, .node = i, .fused = f};
            step_of_node[i] = p->nsteps++;
            continue;
        }
        if (epi[i] >= 0) {
            const gnode *m = &g->nodes[epi[i]];
            const tt_value *alpha = &n->args[2].v;
            p->steps[p->nsteps++] = (step){
                .kind = STEP_GEMM_ACC, .when = RUN_FAST, .op = n->op, .node = i,
                .acc = {n->args[0].ref, m->args[0].ref, m->args[1].ref},
                .alpha = alpha->kind == TT_V_FLOAT ? alpha->u.f : (double)alpha->u.i};
            p->variants = true;
        }
        step *s = &p->steps[p->nsteps];
        s->kind = STEP_OP;
        s->when = epi[i] == -1 ? RUN_ALWAYS : RUN_SAFE;
        s->op = n->op;
        s->node = i;
        for (int a = 0; a < n->nargs; a++)
            s->sym |= n->args[a].kind == GARG_CONST && value_is_sym(&n->args[a].v);
        for (int j = 0; j < tt__node_nrets(n); j++) {
            int u = unbacked_sizes(n->vals[j]);
            s->binds |= u > 0;
            p->nbind_slots += u;
        }
        step_of_node[i] = p->nsteps++;
    }
    for (int c = 0; c < nchains; c++)
        tt__fused_free(chains[c]); /* none left: all were placed */
    tt__free(chains);
    tt__free(chain_of);
    p->offset[g->n] = p->nslots;
    p->slots = tt__calloc((size_t)(p->nslots ? p->nslots : 1), sizeof *p->slots);
    if (!p->slots)
        goto oom;
    if (plan_liveness(p, step_of_node))
        goto fail;
    for (int k = 0; k < p->nsteps && !(passes_off & TT_PASS_INPLACE); k++) {
        step *s = &p->steps[k];
        for (int i = 0; s->kind == STEP_FUSED && i < tt__fused_num_inputs(s->fused); i++) {
            gref r = tt__fused_input(s->fused, i);
            for (int j = 0; j < s->nrelease; j++)
                if (s->release[j] == p->offset[r.node] + r.out)
                    s->dying |= (uint64_t)1 << i;
        }
    }
    tt__free(step_of_node);
    tt__free(epi);
    return p;
oom:
    tt_error(TT_ENOMEM, "tt_compile: out of memory building a plan");
fail:
    tt__free(step_of_node);
    tt__free(epi);
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

/* True when no two of the n inputs share a storage: sorted by storage,
 * sharing ones are neighbours (n log n; a training step passes every
 * parameter, gradient and moment, hundreds of inputs). scratch has room
 * for n pointers (the run's value slots, all NULL before the inputs go
 * in) and is left NULL. */
static int by_storage(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)(*(tt_tensor *const *)a)->storage;
    uintptr_t y = (uintptr_t)(*(tt_tensor *const *)b)->storage;
    return x < y ? -1 : x > y;
}

static bool inputs_share_no_storage(tt_tensor **in, int n, tt_tensor **scratch)
{
    memcpy(scratch, in, sizeof *in * (size_t)n);
    qsort(scratch, (size_t)n, sizeof *scratch, by_storage);
    bool none = true;
    for (int i = 1; i < n && none; i++)
        none = scratch[i]->storage != scratch[i - 1]->storage;
    memset(scratch, 0, sizeof *scratch * (size_t)n);
    return none;
}

/* "add" for tt::add.Tensor: how a fused step's name lists its ops. */
static void put_short_name(char *buf, size_t cap, size_t *len, const tt_op *op, bool first)
{
    const char *name = tt_op_name(op), *ns = strstr(name, "::");
    name = ns ? ns + 2 : name;
    size_t n = strcspn(name, ".");
    if (*len < cap)
        *len += (size_t)snprintf(buf + *len, cap - *len, "%s%.*s", first ? "" : ", ", (int)n,
                                 name);
}

/* The profiler's event for step s (tracer/profile.c), at its graph node's
 * line. */
static int step_event_open(const tt_plan *p, const step *s)
{
    const gnode *n = &p->g->nodes[s->node];
    if (s->kind == STEP_GEMM_ACC)
        return tt__profile_open(TT_PROFILE_GEMM, "gemm accumulate (w += a @ b)", n->loc, n->name);
    if (s->kind == STEP_OP)
        return tt__profile_open(TT_PROFILE_STEP, tt_op_name(s->op), n->loc, n->name);
    char name[200];
    size_t len = (size_t)snprintf(name, sizeof name, "fused ");
    for (int k = 0; k < tt__fused_num_nodes(s->fused); k++)
        put_short_name(name, sizeof name, &len, p->g->nodes[tt__fused_node(s->fused, k)].op,
                       k == 0);
    return tt__profile_open(TT_PROFILE_FUSED, name, n->loc, n->name);
}

static int64_t slot_bytes(const tt_tensor *t)
{
    tt_value v = tt_v_tensor(t);
    return tt__profile_bytes(&v, 1, NULL, 0);
}

tt_status tt__plan_run(tt_plan *p, tt_tensor **in, int nin, tt_tensor **out, int nout,
                       const tt_size *syms, const int64_t *vals, int nsyms)
{
    const tt_graph *g = p->g;
    if (nin != g->ninputs || g->output < 0 || nout != g->nodes[g->output].nouts)
        return tt_error(TT_EINVAL, "compiled plan: takes %d inputs and returns %d outputs "
                                   "(got %d and %d)", g->ninputs,
                        g->output >= 0 ? g->nodes[g->output].nouts : 0, nin, nout);
    /* The plan's own slots (all NULL between runs) unless another thread
     * runs it now. */
    bool own = !atomic_flag_test_and_set(&p->slots_busy);
    tt_tensor **slots = own ? p->slots
                            : tt__calloc((size_t)(p->nslots ? p->nslots : 1), sizeof *slots);
    if (!slots)
        return tt_error(TT_ENOMEM, "compiled plan: out of memory");
    tt_mem_plan *mem = p->mem;
    bool planned = own && tt__mem_plan_begin(mem);
    for (int i = 0; i < nout; i++)
        out[i] = NULL;
    tt_status st = TT_OK;
    tt_scope_pause();
    tt_no_grad_begin();
    tt__plan_running++;
    /* The fast path needs inputs that share no memory. */
    bool fast = !p->variants || inputs_share_no_storage(in, nin, slots);
    for (int i = 0; i < g->n; i++) {
        const gnode *n = &g->nodes[i];
        if (n->kind == TT_NODE_PLACEHOLDER)
            slots[p->offset[i]] = tt_retain(in[i]);
        else if (n->kind == TT_NODE_CONSTANT)
            slots[p->offset[i]] = tt_retain(n->vals[0]);
    }
    /* The symbols' binding, extended by data-dependent sizes as the steps
     * that make them run (see nbind_slots). */
    tt_size *bsyms = (tt_size *)syms;
    int64_t *bvals = (int64_t *)vals;
    if (p->nbind_slots) {
        bsyms = tt__malloc(sizeof *bsyms * (size_t)(nsyms + p->nbind_slots));
        bvals = tt__malloc(sizeof *bvals * (size_t)(nsyms + p->nbind_slots));
        if (!bsyms || !bvals)
            st = tt_error(TT_ENOMEM, "compiled plan: out of memory");
        else if (nsyms) {
            memcpy(bsyms, syms, sizeof *bsyms * (size_t)nsyms);
            memcpy(bvals, vals, sizeof *bvals * (size_t)nsyms);
        }
    }
    int ran = 0; /* steps begun */
    int call_ev = -1;
    if (tt__profiling) {
        char name[80];
        snprintf(name, sizeof name, "compiled %s", g->name);
        call_ev = tt__profile_open(TT_PROFILE_CALL, name, (tt_srcloc){0}, NULL);
    }
    for (; ran < p->nsteps && !st; ran++) {
        const step *s = &p->steps[ran];
        const gnode *n = &g->nodes[s->node];
        if ((s->when == RUN_FAST && !fast) || (s->when == RUN_SAFE && fast)) {
            /* Skipped; its releases still fall here (the other path's
             * step at this place reads the same values last). */
            for (int r = 0; r < s->nrelease; r++)
                slots[s->release[r]] = tt_release(slots[s->release[r]]);
            continue;
        }
        int ev = tt__profiling ? step_event_open(p, s) : -1;
        if (s->kind == STEP_GEMM_ACC) {
            tt_tensor *w = slots[p->offset[s->acc[0].node] + s->acc[0].out];
            tt_tensor *a = slots[p->offset[s->acc[1].node] + s->acc[1].out];
            tt_tensor *b = slots[p->offset[s->acc[2].node] + s->acc[2].out];
            if (tt__gemm_accumulate_fits(w, a, b)) {
                st = tt__gemm_accumulate(w, a, b, s->alpha);
                if (!st)
                    tt_bump_version(w);
            } else {
                /* Checked when planned; should a real layout differ from
                 * the traced one, the graph's own ops still give the
                 * answer. */
                tt_tensor *prod = tt_matmul(a, b);
                st = prod ? tt_add_scaled_(w, prod, s->alpha) : tt_errcode();
                tt_release(prod);
            }
            if (!st)
                slots[p->offset[s->node]] = tt_retain(w);
            if (!st && tt__watch)
                tt__watch->seen(tt__watch, n, &slots[p->offset[s->node]], 1, true);
            if (ev >= 0) /* w is read and written */
                tt__profile_close(ev, 2 * slot_bytes(w) + slot_bytes(a) + slot_bytes(b),
                                  st ? -1 : 2 * tt_numel(w) * tt_sizes(a)[tt_ndim(a) - 1]);
            for (int r = 0; !st && r < s->nrelease; r++)
                slots[s->release[r]] = tt_release(slots[s->release[r]]);
            continue;
        }
        if (s->kind == STEP_FUSED) {
            tt_tensor *ins[FUSE_MAX + 1];
            for (int i = 0; i < tt__fused_num_inputs(s->fused); i++) {
                gref r = tt__fused_input(s->fused, i);
                ins[i] = slots[p->offset[r.node] + r.out];
            }
            st = tt__fused_run(s->fused, ins, s->dying, &slots[p->offset[s->node]]);
            if (!st && tt__watch)
                tt__watch->seen(tt__watch, n, &slots[p->offset[s->node]], 1, true);
            if (ev >= 0) {
                int64_t bytes = st ? 0 : slot_bytes(slots[p->offset[s->node]]);
                for (int i = 0; i < tt__fused_num_inputs(s->fused); i++)
                    bytes += slot_bytes(ins[i]);
                tt__profile_close(ev, bytes, -1);
            }
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
                    st = eval_const(&ga->v, bsyms, bvals, nsyms, &args[a], scratch[a]);
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
            st = tt_op_call_unchecked(s->op, args, n->nargs, outs, tt__node_ncall(n));
        if (ev >= 0)
            tt__profile_close(ev, st ? -1 : tt__profile_bytes(args, n->nargs, outs,
                                                              tt__node_ncall(n)),
                              st ? -1 : tt__profile_flops(s->op, args, n->nargs, outs,
                                                          tt__node_ncall(n)));
        if (!st)
            st = tt__node_take_outs(g, n, outs, &slots[p->offset[s->node]]);
        /* A traced size u0 (or an expression of it) is the real result's
         * size there: bound, for the steps after. */
        for (int j = 0; !st && s->binds && j < tt__node_nrets(n); j++) {
            const tt_tensor *tv = n->vals[j], *rv = slots[p->offset[s->node] + j];
            for (int d = 0; tv && rv && d < tt_ndim(tv) && d < tt_ndim(rv); d++) {
                tt_size z = tt_sizes(tv)[d];
                int64_t known;
                if (tt_size_is_sym(z) && tt_sym_hint(z) < 0 &&
                    !tt_sym_eval(z, nsyms, bsyms, bvals, &known)) {
                    bsyms[nsyms] = z;
                    bvals[nsyms++] = tt_sizes(rv)[d];
                }
            }
        }
        if (!st)
            tt__node_fill_after(n, args, &slots[p->offset[s->node]]);
        if (!st && tt__watch)
            tt__watch->seen(tt__watch, n, &slots[p->offset[s->node]], tt__node_nrets(n), true);
        for (int a = 0; a < n->nargs; a++)
            tt__free(lists[a]);
        for (int r = 0; !st && r < s->nrelease; r++)
            slots[s->release[r]] = tt_release(slots[s->release[r]]);
    }
    if (bsyms != syms)
        tt__free(bsyms);
    if (bvals != vals)
        tt__free(bvals);
    tt__plan_running--;
    tt_no_grad_end();
    tt_scope_resume();
    if (st && tt_errcode() == TT_OK && ran > 0) /* never a failure without a reason */
        tt_error(st, "compiled plan: step %d (%s, graph node %s) failed (%s) without a "
                     "message", ran, tt_op_name(p->steps[ran - 1].op),
                 g->nodes[p->steps[ran - 1].node].name, tt_status_name(st));
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
        slots[i] = tt_release(slots[i]);
    if (planned)
        tt__mem_plan_end(mem);
    if (call_ev >= 0) {
        int64_t buffers, unshared;
        tt__mem_plan_sharing(mem, &buffers, &unshared);
        tt__profile_set_plan(call_ev, (int64_t)tt__mem_plan_bytes(mem), buffers, unshared);
        tt__profile_close(call_ev, -1, -1);
    }
    if (own)
        atomic_flag_clear(&p->slots_busy);
    else
        tt__free(slots);
    return st;
}

void tt__plan_describe(const tt_plan *p, char *buf, size_t n)
{
    tt_compile_stats st = {0};
    tt__plan_stats(p, &st);
    int released = 0;
    for (int k = 0; k < p->nsteps; k++)
        released += p->steps[k].nrelease;
    snprintf(buf, n, "passes: %d in-place ops functionalized, %d dead ops removed, %d clones "
                     "elided; %d steps, %d fused kernels (%d ops), %d buffers, %d released "
                     "after their last use, %d GEMM epilogues, %d convolution epilogues",
             p->nfunctionalized, p->ndead, p->nclones, p->nsteps, st.fused_steps, st.fused_ops,
             p->nslots, released, st.epilogues, st.conv_epilogues);
}
