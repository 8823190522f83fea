/* Graph passes. */
#include "builtin_ops.h"
#include "plan_impl.h"

#include <stdlib.h>
#include <string.h>

/* An op node that writes one of its arguments, or draws from the random
 * generator (tagged nondeterministic_seeded: rand, native_dropout), has an
 * effect beyond its results and is never dead: dropping a dead dropout's
 * draws would give every later draw other values than eager's under the
 * same tt_manual_seed (FINDINGS F21). */
static bool writes(const gnode *n)
{
    if (tt_op_tags(n->op) & TT_TAG_NONDETERMINISTIC_SEEDED)
        return true;
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

/* How many of the graph's value slots hold each storage and each tensor,
 * so that aliased() answers from the two nodes it leaves out instead of a
 * scan of the graph per question (quadratic in the in-place ops and
 * clones of a long training step). Keys are pointers; a count that drops
 * to zero keeps its slot. */
typedef struct {
    struct vcount {
        const void *key; /* NULL: empty */
        int n;
    } *slots;
    int cap;
} vcounts;

static struct vcount *vcount_at(vcounts *m, const void *key)
{
    uintptr_t h = (uintptr_t)key;
    h ^= h >> 17;
    h *= 0x9e3779b97f4a7c15ull;
    int mask = m->cap - 1, i = (int)((h >> 32) & (uintptr_t)mask);
    while (m->slots[i].key && m->slots[i].key != key)
        i = (i + 1) & mask;
    return &m->slots[i];
}

static void vcount_add(vcounts *m, const void *key, int d)
{
    struct vcount *c = vcount_at(m, key);
    c->key = key;
    c->n += d;
}

/* Made on the first question (most graphs have no in-place op or clone,
 * and counting costs a cache miss per value on a large graph). */
typedef struct {
    vcounts by_storage, by_tensor;
    int extra;  /* keys to leave room for */
    bool made, failed;
} value_counts;

static void value_counts_free(value_counts *vc)
{
    tt__free(vc->by_storage.slots);
    tt__free(vc->by_tensor.slots);
    vc->by_storage.slots = vc->by_tensor.slots = NULL;
}

static void value_counts_add(value_counts *vc, const tt_tensor *v, int d)
{
    if (!vc->made)
        return;
    vcount_add(&vc->by_storage, v->storage, d);
    vcount_add(&vc->by_tensor, v, d);
}

/* Counts g's values, with room for vc->extra more keys of each kind. */
static bool value_counts_make(value_counts *vc, const tt_graph *g)
{
    if (vc->made || vc->failed)
        return vc->made;
    int nvals = vc->extra;
    for (int i = 0; i < g->n; i++)
        nvals += g->nodes[i].nvals;
    int cap = 64;
    while (cap < 2 * nvals)
        cap *= 2;
    vc->by_storage = (vcounts){tt__calloc((size_t)cap, sizeof(struct vcount)), cap};
    vc->by_tensor = (vcounts){tt__calloc((size_t)cap, sizeof(struct vcount)), cap};
    if (!vc->by_storage.slots || !vc->by_tensor.slots) {
        value_counts_free(vc);
        tt_clear_error(); /* the passes are optional: the value counts as aliased */
        vc->failed = true;
        return false;
    }
    vc->made = true;
    for (int i = 0; i < g->n; i++)
        for (int j = 0; j < g->nodes[i].nvals; j++)
            if (g->nodes[i].vals[j])
                value_counts_add(vc, g->nodes[i].vals[j], 1);
    return true;
}

/* True when some value of g other than node `self_node`'s own and the
 * in-place node's shares v's storage: a view would see the write, which a
 * functional rewrite would hide from it. */
static bool aliased(const tt_graph *g, value_counts *vc, const tt_tensor *v, int self_node,
                    int inplace_node)
{
    if (!value_counts_make(vc, g))
        return true;
    /* The slots of v's storage that hold another tensor, less those of the
     * two nodes left out. */
    int others = vcount_at(&vc->by_storage, v->storage)->n - vcount_at(&vc->by_tensor, v)->n;
    for (int k = 0; k < 2; k++) {
        int i = k == 0 ? self_node : inplace_node;
        if (k == 1 && inplace_node == self_node)
            break;
        const gnode *n = &g->nodes[i];
        for (int j = 0; j < n->nvals; j++)
            others -= n->vals[j] && n->vals[j] != v && tt_same_storage(n->vals[j], v);
    }
    return others > 0;
}

/* Whether the functional form of in-place node n computes a value of
 * v's dtype and layout: an in-place op keeps self's dtype (y.mul_(x) with
 * y f32 and x f64 stays f32) where its functional form promotes, so an
 * operand of another dtype keeps the mutation; and the fresh value is
 * made contiguous, so self must be. */
static bool same_result_type(const tt_graph *g, const gnode *n, const tt_tensor *v)
{
    if (!tt_is_contiguous(v))
        return false;
    for (int a = 0; a < n->nargs; a++) {
        const garg *ga = &n->args[a];
        if (ga->kind == GARG_REFS)
            return false;
        if (ga->kind != GARG_REF)
            continue;
        const tt_tensor *x = g->nodes[ga->ref.node].vals[ga->ref.out];
        if (!x || tt_dtype_of(x) != tt_dtype_of(v))
            return false;
    }
    return true;
}

/* Moves the output node (the last) behind the node appended after it. */
static void output_last(tt_graph *g)
{
    gnode out = g->nodes[g->output];
    g->nodes[g->output] = g->nodes[g->n - 1];
    g->nodes[g->n - 1] = out;
    g->output = g->n - 1;
}

/* The node whose value is node r's memory now: a rewritten in-place op
 * took over its self's value (cur[s] = i), and may itself have been
 * taken over since. */
static int current(int *cur, int r)
{
    while (cur[r] != r)
        r = cur[r] = cur[cur[r]];
    return r;
}

static void to_current(int *cur, gref *r)
{
    if (r->node >= 0 && r->out == 0)
        r->node = current(cur, r->node);
}

/* Points node n's references at the current values. */
static void read_current(gnode *n, int *cur)
{
    for (int a = 0; a < n->nargs; a++) {
        garg *ga = &n->args[a];
        if (ga->kind == GARG_REF)
            to_current(cur, &ga->ref);
        for (int r = 0; ga->kind == GARG_REFS && r < ga->nrefs; r++)
            to_current(cur, &ga->refs[r]);
    }
    for (int o = 0; o < n->nouts; o++)
        to_current(cur, &n->outs[o]);
}

/* The input whose memory reference r's value is (-1: none): its node's
 * root, or for an after-write value (a mutating op's written argument,
 * as sgd_step's param) the root of the argument it is. */
static int ref_root(const tt_graph *g, const int *root, gref r)
{
    while (tt__ref_is_after_write(g, r)) {
        const gnode *x = &g->nodes[r.node];
        int k = r.out - tt__node_nrets(x), e = tt__after_elem(x, k);
        const garg *ga = &x->args[tt__after_arg(x, k)];
        if (ga->kind == GARG_REF)
            r = ga->ref;
        else if (ga->kind == GARG_REFS && e >= 0 && e < ga->nrefs && ga->refs[e].node >= 0)
            r = ga->refs[e];
        else
            return -1;
    }
    return root[r.node];
}

int tt__pass_functionalize(tt_graph *g, bool inputs_too)
{
    int rewritten = 0;
    /* root[i]: the input whose memory node i's value is, through a chain
     * of in-place ops (rewritten or not; -1: none); last[p]: the node
     * holding input p's final value; dirty[p]: a write into p was
     * rewritten, so p needs a copy-back. */
    int *root = tt__malloc(sizeof *root * (size_t)(g->n + 1));
    int *last = tt__malloc(sizeof *last * (size_t)(g->ninputs + 1));
    bool *dirty = tt__calloc((size_t)(g->ninputs + 1), sizeof *dirty);
    /* The graph reads memory: a reference to a node made before an
     * in-place write into its value reads the value after the write (a
     * backward's saved result of y.div_(v) is recorded as y's node). A
     * rewrite gives the write a fresh value, so the readers after it are
     * pointed at that value (cur), as PyTorch's functionalization
     * replaces every later use of a mutated tensor. */
    int *cur = tt__malloc(sizeof *cur * (size_t)(g->n + 1));
    value_counts vc = {.extra = g->n};
    if (!root || !last || !dirty || !cur) {
        tt__free(root);
        tt__free(last);
        tt__free(dirty);
        tt__free(cur);
        tt_clear_error();
        return 0; /* the pass is optional */
    }
    for (int i = 0; i < g->n; i++) {
        root[i] = i < g->ninputs ? i : -1;
        cur[i] = i;
    }
    for (int i = 0; i < g->ninputs; i++)
        last[i] = -1;
    for (int i = g->ninputs; i < g->n; i++) {
        gnode *n = &g->nodes[i];
        if (rewritten)
            read_current(n, cur);
        /* The op's schema first: it is shared and in cache, the node's
         * arguments are not (on a large graph). */
        if (n->kind != TT_NODE_OP || n->nvals != 1 || n->nargs < 1 ||
            !tt_schema_arg(tt_op_schema(n->op), 0)->is_write || n->args[0].kind != GARG_REF)
            continue;
        gref self = n->args[0].ref;
        /* Every in-place op carries its root on, also one left in place:
         * a later write through it is still a write into the input. */
        root[i] = ref_root(g, root, self);
        if (root[i] >= 0)
            last[root[i]] = i;
        if (!inputs_too && root[i] >= 0)
            continue;
        const tt_op *f = functional_variant(n->op);
        tt_tensor *v = n->vals[0];
        /* An after-write value is the written argument itself (maybe an
         * input), which the aliasing count cannot tell apart: keep it. */
        if (!f || !v || self.out != 0 || tt__ref_is_after_write(g, self) ||
            !same_result_type(g, n, v) || aliased(g, &vc, v, self.node, i))
            continue;
        tt_tensor *fresh = tt_fake_like(v);
        if (!fresh) {
            tt_clear_error();
            continue;
        }
        n->op = f;
        tt__hold_own(fresh); /* the graph's, as every value */
        n->vals[0] = fresh;
        value_counts_add(&vc, v, -1); /* room for fresh: made with g->n extra */
        value_counts_add(&vc, fresh, 1);
        tt__unhold(v);
        rewritten++;
        cur[self.node] = i;
        if (root[i] >= 0)
            dirty[root[i]] = true;
    }
    /* Copy-backs into the inputs that were written, right before the
     * output node, so the plan's effect on its inputs stays the same. */
    const tt_op *copy = tt__op(TT_OP_COPY_);
    bool moved = false;
    for (int p = 0; p < g->ninputs && rewritten >= 0; p++) {
        if (!dirty[p])
            continue;
        if (g->output != g->n - 1) { /* a traced graph ends with its output */
            tt_error(TT_EINTERNAL, "functionalization: the graph's output is not its last "
                                   "node; no copy-back can go before it");
            rewritten = -1;
            break;
        }
        garg args[2] = {{.kind = GARG_REF, .ref = {p, 0}},
                        {.kind = GARG_REF, .ref = {last[p], 0}}};
        tt_value res = tt_v_tensor(g->nodes[p].vals[0]);
        /* Appended after the output (the array grows as needed), then
         * swapped before it. */
        int id = tt__graph_add_op(g, copy, args, 2, &res, 1, (tt_srcloc){0});
        if (id < 0) {
            /* Without its copy-back the graph would lose a write into an
             * input: an error (with the graph's message), never a quiet
             * success. */
            rewritten = -1;
            break;
        }
        g->nodes[id].loc = g->nodes[last[p]].loc; /* the line of the last write */
        g->nodes[id].scope = g->nodes[last[p]].scope;
        output_last(g);
        moved = true;
    }
    if (moved)
        tt__graph_reindex_names(g);
    tt__graph_rebuild_users(g);
    value_counts_free(&vc);
    tt__free(root);
    tt__free(last);
    tt__free(dirty);
    tt__free(cur);
    return rewritten;
}

/* ---------------------------------------------------------- clone elision */

/* How many times the graph reads value r of node x (its users' arguments
 * and the graph's outputs). */
static int value_reads(const tt_graph *g, const gnode *x, gref r)
{
    int reads = 0;
    for (int k = 0; k < x->nusers; k++) {
        const gnode *u = &g->nodes[x->users[k]];
        for (int a = 0; a < u->nargs; a++) {
            const garg *ga = &u->args[a];
            reads += ga->kind == GARG_REF && ga->ref.node == r.node && ga->ref.out == r.out;
            for (int e = 0; ga->kind == GARG_REFS && e < ga->nrefs; e++)
                reads += ga->refs[e].node == r.node && ga->refs[e].out == r.out;
        }
        for (int o = 0; o < u->nouts; o++)
            reads += u->outs[o].node == r.node && u->outs[o].out == r.out;
    }
    return reads;
}

/* Whether another result of node x shares r's storage (a multi-result op
 * may return views of one buffer). */
static bool shares_with_sibling(const gnode *x, gref r)
{
    for (int j = 0; j < x->nvals; j++)
        if (j != r.out && x->vals[j] && tt_same_storage(x->vals[j], x->vals[r.out]))
            return true;
    return false;
}

/* clone(x) where the clone is x's only reader, and x is an op's fresh
 * result that nothing else aliases, copies memory for nothing: the
 * clone's readers can read x. (A traced backward makes these: the engine
 * clones a gradient it cannot prove nobody else holds, and while tracing
 * the graph itself holds every value.) For an op of several results
 * (convolution_backward's input, weight and bias gradients) the cloned
 * result must be read by the clone alone and share no storage with its
 * siblings; the siblings' readers do not matter. */
int tt__pass_elide_clones(tt_graph *g)
{
    const tt_op *clone = tt__op(TT_OP_CLONE);
    int elided = 0;
    value_counts vc = {0};
    /* to[i]: where readers of elided clone i read instead (.node -1: i is
     * kept); references are redirected in one pass at the end. */
    gref *to = tt__malloc(sizeof *to * (size_t)(g->n + 1));
    if (!to)
        return 0; /* the pass is optional */
    for (int i = 0; i < g->n; i++) {
        to[i] = (gref){-1, 0};
        gnode *n = &g->nodes[i];
        if (i < g->ninputs || n->kind != TT_NODE_OP || n->op != clone ||
            n->args[0].kind != GARG_REF)
            continue;
        gref src = n->args[0].ref;
        const gnode *x = &g->nodes[src.node];
        if (x->kind != TT_NODE_OP || writes(x) || src.out >= x->nvals - x->nafter)
            continue;
        if (x->nvals == 1 ? x->nusers != 1
                          : value_reads(g, x, src) != 1 || shares_with_sibling(x, src))
            continue;
        tt_tensor *v = x->vals[src.out];
        if (!v || !tt_is_contiguous(v) || aliased(g, &vc, v, src.node, src.node))
            continue;
        /* A clone of an elided clone reads what that one read. */
        to[i] = to[src.node].node >= 0 ? to[src.node] : src;
        elided++;
    }
    /* Point the clones' readers (and the outputs) at their sources. */
    for (int j = 0; elided && j < g->n; j++) {
        gnode *u = &g->nodes[j];
        for (int a = 0; a < u->nargs; a++) {
            garg *ga = &u->args[a];
            if (ga->kind == GARG_REF && to[ga->ref.node].node >= 0)
                ga->ref = to[ga->ref.node];
            for (int r = 0; ga->kind == GARG_REFS && r < ga->nrefs; r++)
                if (ga->refs[r].node >= 0 && to[ga->refs[r].node].node >= 0)
                    ga->refs[r] = to[ga->refs[r].node];
        }
        for (int k = 0; k < u->nouts; k++)
            if (to[u->outs[k].node].node >= 0)
                u->outs[k] = to[u->outs[k].node];
    }
    value_counts_free(&vc);
    tt__free(to);
    if (elided) {
        tt__graph_rebuild_users(g);
        tt__pass_dce(g); /* the clones have no readers now */
    }
    return elided;
}

/* -------------------------------------------- convolution epilogues */

/* The one reader of value r (node x's result r.out), or -1 when it has
 * none, several, or is a graph output. */
static int sole_reader(const tt_graph *g, gref r)
{
    const gnode *x = &g->nodes[r.node];
    if (tt__graph_is_output(g, r.node) || value_reads(g, x, r) != 1)
        return -1;
    for (int k = 0; k < x->nusers; k++) {
        const gnode *u = &g->nodes[x->users[k]];
        for (int a = 0; a < u->nargs; a++)
            if (u->args[a].kind == GARG_REF && u->args[a].ref.node == r.node &&
                u->args[a].ref.out == r.out)
                return x->users[k];
    }
    return -1; /* read from a list: not a chain this pass folds */
}

/* Node i's argument a is a reference to value r (not a constant). */
static bool arg_is(const gnode *n, int a, gref r)
{
    return a < n->nargs && n->args[a].kind == GARG_REF && n->args[a].ref.node == r.node &&
           n->args[a].ref.out == r.out;
}

static bool same_layout(const tt_tensor *a, const tt_tensor *b)
{
    if (!a || !b || tt_ndim(a) != tt_ndim(b) || tt_dtype_of(a) != tt_dtype_of(b))
        return false;
    for (int d = 0; d < tt_ndim(a); d++)
        if (tt_sizes(a)[d] != tt_sizes(b)[d] ||
            (tt_sizes(a)[d] != 1 && tt_strides(a)[d] != tt_strides(b)[d]))
            return false;
    return true;
}

/* The chain starting at convolution node c: c -> [batch norm in inference
 * form, result 0 its only use] -> [relu], each value read only by the
 * next. *bn, *relu: the nodes (-1: absent). False when there is nothing
 * to fold (a lone convolution, a transposed one, a value read twice, a
 * write between the nodes, a layout the fused op would not give). */
static bool conv_chain(const tt_graph *g, int c, int *bn, int *relu)
{
    const gnode *cn = &g->nodes[c];
    *bn = *relu = -1;
    if (cn->kind != TT_NODE_OP || tt__builtin_id(cn->op) != TT_OP_CONVOLUTION ||
        cn->nargs != 9 || cn->args[6].kind != GARG_CONST || cn->args[6].v.kind != TT_V_BOOL ||
        cn->args[6].v.u.b || !cn->vals[0])
        return false;
    tt_dtype dt = tt_dtype_of(cn->vals[0]);
    if (dt != TT_F32 && dt != TT_F64)
        return false;
    gref v = {c, 0};
    int last = c;
    int u = sole_reader(g, v);
    if (u >= 0 && tt__builtin_id(g->nodes[u].op) ==
                      TT_OP__NATIVE_BATCH_NORM_LEGIT_NO_TRAINING && arg_is(&g->nodes[u], 0, v)) {
        const gnode *b = &g->nodes[u];
        bool ok = b->nvals == 3 && b->nafter == 0 &&
                  value_reads(g, b, (gref){u, 1}) == 0 && value_reads(g, b, (gref){u, 2}) == 0 &&
                  same_layout(b->vals[0], cn->vals[0]) && b->args[6].kind == GARG_CONST;
        /* its statistics and affine parameters: 1-d tensors of the dtype */
        for (int a = 1; ok && a <= 4; a++) {
            if (b->args[a].kind == GARG_CONST) {
                ok = a <= 2 && b->args[a].v.kind == TT_V_NONE; /* weight, bias may be None */
                continue;
            }
            const tt_tensor *t = b->args[a].kind == GARG_REF
                                     ? g->nodes[b->args[a].ref.node].vals[b->args[a].ref.out]
                                     : NULL;
            ok = t && tt_dtype_of(t) == dt && tt_ndim(t) == 1;
        }
        if (ok) {
            *bn = last = u;
            v = (gref){u, 0};
            u = sole_reader(g, v);
        }
    }
    if (u >= 0 && tt__builtin_id(g->nodes[u].op) == TT_OP_RELU && arg_is(&g->nodes[u], 0, v) &&
        same_layout(g->nodes[u].vals[0], cn->vals[0]))
        *relu = last = u;
    if (last == c)
        return false;
    /* The fused op runs where the chain's last node was and reads the
     * convolution's inputs there: nothing in between may write anything. */
    for (int k = c + 1; k < last; k++) {
        const gnode *x = &g->nodes[k];
        if (x->kind == TT_NODE_OP && writes(x))
            return false;
    }
    return true;
}

int tt__pass_fuse_conv(tt_graph *g)
{
    const tt_op *fused = tt__op(TT_OP__CONVOLUTION_POINTWISE);
    int folded = 0;
    for (int c = g->ninputs; c < g->n; c++) {
        int bn, relu;
        if (!conv_chain(g, c, &bn, &relu))
            continue;
        const gnode *cn = &g->nodes[c];
        int last = relu >= 0 ? relu : bn;
        gnode *ln = &g->nodes[last];
        garg *args = tt__arena_alloc(&g->arena, sizeof *args * 13);
        if (!args) {
            tt_clear_error();
            break; /* the pass is optional */
        }
        memset(args, 0, sizeof *args * 13);
        garg none = {.kind = GARG_CONST, .v = tt_v_none()};
        /* input, weight, bias, stride, padding, dilation, groups */
        const int from_conv[7] = {0, 1, 2, 3, 4, 5, 8};
        bool ok = true;
        for (int a = 0; a < 7 && ok; a++) {
            args[a] = cn->args[from_conv[a]];
            args[a].refs = NULL;
            if (args[a].kind == GARG_CONST) {
                args[a].v = tt_v_none();
                ok = tt__value_copy(&args[a].v, &cn->args[from_conv[a]].v) == TT_OK;
            }
        }
        const gnode *bnn = bn >= 0 ? &g->nodes[bn] : NULL;
        for (int a = 0; a < 4; a++)
            args[7 + a] = bnn && bnn->args[1 + a].kind == GARG_REF ? bnn->args[1 + a] : none;
        args[11] = (garg){.kind = GARG_CONST,
                          .v = tt_v_float(bnn ? bnn->args[6].v.u.f : 0.0)};
        /* a constant is the graph's own copy (freed with the node) */
        tt_value attr = tt_v_str(relu >= 0 ? "relu" : "none");
        args[12] = none;
        ok = ok && tt__value_copy(&args[12].v, &attr) == TT_OK;
        if (!ok) {
            for (int a = 0; a < 13; a++)
                tt__garg_clear(&args[a]);
            tt_clear_error();
            continue;
        }
        for (int a = 0; a < ln->nargs; a++)
            tt__garg_clear(&ln->args[a]);
        for (int j = 1; j < ln->nvals; j++) /* batch norm's unread results */
            tt__unhold(ln->vals[j]);
        ln->nvals = 1;
        ln->op = fused;
        ln->args = args;
        ln->nargs = 13;
        folded++;
    }
    if (folded) {
        tt__graph_rebuild_users(g);
        tt__pass_dce(g); /* the convolutions and batch norms nobody reads now */
    }
    return folded;
}

tt_status tt_graph_functionalize(tt_graph *g)
{
    if (!g || g->output < 0)
        return tt_error(TT_EINVAL, "tt_graph_functionalize: argument 'graph' is %s",
                        g ? "not finished" : "NULL");
    if (tt__pass_functionalize(g, true) < 0)
        return tt_error(tt_errcode() ? tt_errcode() : TT_ENOMEM,
                        "tt_graph_functionalize: could not add the copy-back into a written "
                        "input (%s); the graph is left partly functionalized",
                        tt_errcode() ? tt_errmsg() : "out of memory");
    return tt_graph_verify(g);
}
