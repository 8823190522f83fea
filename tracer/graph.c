/* The graph IR: building, inspection, verification and text printing. */
#include "graph_impl.h"
#include "print_impl.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- values */

tt_status tt__value_copy(tt_value *dst, const tt_value *src)
{
    *dst = *src;
    size_t bytes = 0;
    const void *from = NULL;
    switch (src->kind) {
    case TT_V_STR:
        from = src->u.s;
        bytes = strlen(src->u.s) + 1;
        break;
    case TT_V_INTS: from = src->u.ints, bytes = sizeof(int64_t) * (size_t)src->n; break;
    case TT_V_FLOATS: from = src->u.floats, bytes = sizeof(double) * (size_t)src->n; break;
    case TT_V_BOOLS: from = src->u.bools, bytes = sizeof(bool) * (size_t)src->n; break;
    case TT_V_TENSOR:
    case TT_V_TENSORS:
        return tt_error(TT_EINTERNAL, "tracer: tensors are graph references, not constants");
    default: return TT_OK;
    }
    void *p = tt__malloc(bytes ? bytes : 1);
    if (!p)
        return tt_error(TT_ENOMEM, "out of memory copying a graph constant");
    if (bytes)
        memcpy(p, from, bytes);
    switch (src->kind) {
    case TT_V_STR: dst->u.s = p; break;
    case TT_V_INTS: dst->u.ints = p; break;
    case TT_V_FLOATS: dst->u.floats = p; break;
    default: dst->u.bools = p; break;
    }
    return TT_OK;
}

void tt__value_free(tt_value *v)
{
    switch (v->kind) {
    case TT_V_STR: tt__free((void *)v->u.s); break;
    case TT_V_INTS: tt__free((void *)v->u.ints); break;
    case TT_V_FLOATS: tt__free((void *)v->u.floats); break;
    case TT_V_BOOLS: tt__free((void *)v->u.bools); break;
    default: break;
    }
    *v = tt_v_none();
}

void tt__garg_clear(garg *a)
{
    if (a->kind == GARG_CONST)
        tt__value_free(&a->v);
    tt__free(a->refs);
    memset(a, 0, sizeof *a);
}

/* --------------------------------------------------------------- building */

tt_graph *tt__graph_new(const char *name, tt_trace_mode mode)
{
    tt_graph *g = tt__calloc(1, sizeof *g);
    if (!g) {
        tt_error(TT_ENOMEM, "out of memory creating a graph");
        return NULL;
    }
    g->output = -1;
    g->mode = mode;
    snprintf(g->name, sizeof g->name, "%s", name ? name : "forward");
    return g;
}

static int new_node(tt_graph *g, tt_node_kind kind)
{
    if (g->n == g->cap) {
        int nc = g->cap ? g->cap * 2 : 32;
        gnode *nn = tt__realloc(g->nodes, sizeof *nn * (size_t)g->cap, sizeof *nn * (size_t)nc);
        if (!nn) {
            tt_error(TT_ENOMEM, "out of memory growing a graph to %d nodes", nc);
            return -1;
        }
        g->nodes = nn;
        g->cap = nc;
    }
    gnode *n = &g->nodes[g->n];
    memset(n, 0, sizeof *n);
    n->kind = kind;
    return g->n++;
}

/* FX-style names: the op's base name, then _1, _2 ... for repeats.
 * Two small hash tables keep this constant time per node, and small enough
 * to stay in cache (one table of every name cost a cache miss per node on
 * a 100,000-node graph):
 * - names: the names taken as given (an op's base name the first time, the
 *   inputs, the constants), each found through the node holding it;
 * - counters: for each base X (cut to 24 characters) that numbered names
 *   X_1, X_2 ... were made from, the next number to try; the slot's node
 *   holds one of those names, whose part before the last '_' is the key.
 * A name is taken when it is in names, or when it reads X_k (k written
 * without leading zeros) with k below X's counter: numbered names are
 * only made at or above the counter, each one skipping the names taken,
 * so every X_k below it is either made from X or in names. */
#define NAME_BASE_MAX 24

static uint64_t name_hash(const char *s, size_t len)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

/* Whether slot s holds key[0..len): the whole name of its node (names), or
 * the part of it before its last '_' (counters). */
static bool slot_holds(const tt_graph *g, const struct name_slot *s, const char *key, size_t len,
                       uint64_t h, bool counter)
{
    if (s->hash != h)
        return false;
    const char *name = g->nodes[s->node].name;
    if (strncmp(name, key, len) != 0)
        return false;
    return counter ? strrchr(name, '_') == name + len : name[len] == '\0';
}

/* The slot of t holding the key, or the empty slot where it would go. */
static int slot_find(const tt_graph *g, const struct name_table *t, const char *key, size_t len,
                     uint64_t h, bool counter)
{
    int mask = t->cap - 1, i = (int)(h & (uint64_t)mask);
    while (t->slots[i].node >= 0 && !slot_holds(g, &t->slots[i], key, len, h, counter))
        i = (i + 1) & mask;
    return i;
}

/* Room in t for one more key (at most half full). */
static bool table_room(struct name_table *t)
{
    if ((t->used + 1) * 2 <= t->cap)
        return true;
    int nc = t->cap ? t->cap * 2 : 64;
    struct name_slot *slots = tt__malloc(sizeof *slots * (size_t)nc);
    if (!slots)
        return false;
    for (int i = 0; i < nc; i++)
        slots[i] = (struct name_slot){-1, 0, 0};
    for (int i = 0; i < t->cap; i++) {
        if (t->slots[i].node < 0)
            continue;
        int j = (int)(t->slots[i].hash & (uint64_t)(nc - 1)); /* keys differ: no compare */
        while (slots[j].node >= 0)
            j = (j + 1) & (nc - 1);
        slots[j] = t->slots[i];
    }
    tt__free(t->slots);
    t->slots = slots;
    t->cap = nc;
    return true;
}

static void table_clear(struct name_table *t)
{
    tt__free(t->slots);
    *t = (struct name_table){0};
}

/* If name reads X_k (X of 1 to NAME_BASE_MAX characters, k > 0 without
 * leading zeros), sets *xlen and *k. */
static bool numbered(const char *name, size_t *xlen, int *k)
{
    const char *u = strrchr(name, '_');
    if (!u || u == name || u - name > NAME_BASE_MAX || u[1] < '1' || u[1] > '9')
        return false;
    int64_t v = 0;
    for (const char *d = u + 1; *d; d++) {
        if (*d < '0' || *d > '9' || v > INT32_MAX / 10)
            return false;
        v = v * 10 + (*d - '0');
    }
    *xlen = (size_t)(u - name);
    *k = (int)v;
    return v <= INT32_MAX - 1;
}

/* The counter slot of base x[0..len) (empty if none). */
static int counter_slot(const tt_graph *g, const char *x, size_t len)
{
    return slot_find(g, &g->counters, x, len, name_hash(x, len), true);
}

static bool in_names(const tt_graph *g, const char *name, uint64_t h)
{
    return g->names.slots[slot_find(g, &g->names, name, strlen(name), h, false)].node >= 0;
}

static bool name_taken(const tt_graph *g, const char *name, uint64_t h)
{
    size_t xlen;
    int k;
    if (in_names(g, name, h))
        return true;
    if (!numbered(name, &xlen, &k))
        return false;
    const struct name_slot *c = &g->counters.slots[counter_slot(g, name, xlen)];
    return c->node >= 0 && k < c->next;
}

static void name_put(tt_graph *g, int node, uint64_t h)
{
    const char *name = g->nodes[node].name;
    int i = slot_find(g, &g->names, name, strlen(name), h, false);
    g->names.used += g->names.slots[i].node < 0;
    g->names.slots[i] = (struct name_slot){node, 0, h};
}

/* Counts X_k in X's counter: numbers up to k are taken from now on. */
static void counter_put(tt_graph *g, int node, size_t xlen, int k)
{
    const char *name = g->nodes[node].name;
    int i = counter_slot(g, name, xlen);
    struct name_slot *c = &g->counters.slots[i];
    if (c->node < 0) {
        *c = (struct name_slot){node, k + 1, name_hash(name, xlen)};
        g->counters.used++;
    } else if (c->next <= k) {
        c->next = k + 1;
    }
}

void tt__graph_reindex_names(tt_graph *g)
{
    table_clear(&g->names);
    table_clear(&g->counters);
    g->names_lost = false;
    for (int i = 0; i < g->n && !g->names_lost; i++) {
        const char *name = g->nodes[i].name;
        size_t xlen;
        int k;
        if (numbered(name, &xlen, &k)) {
            if (table_room(&g->counters))
                counter_put(g, i, xlen, k);
            else
                g->names_lost = true;
        } else if (table_room(&g->names)) {
            name_put(g, i, name_hash(name, strlen(name)));
        } else {
            g->names_lost = true;
        }
    }
}

/* Writes "base_k" (base cut to NAME_BASE_MAX characters) into want[40]; by
 * hand, as snprintf was a tenth of the cost of tracing a long chain. */
static void suffixed(char *want, const char *base, int k)
{
    size_t n = strnlen(base, NAME_BASE_MAX);
    memcpy(want, base, n);
    want[n++] = '_';
    char digits[12];
    int nd = 0;
    do
        digits[nd++] = (char)('0' + k % 10);
    while ((k /= 10) > 0);
    while (nd > 0)
        want[n++] = digits[--nd];
    want[n] = '\0';
}

static void name_node(tt_graph *g, int id, const char *base)
{
    char *name = g->nodes[id].name;
    if (g->names_lost || !table_room(&g->names) || !table_room(&g->counters)) {
        /* Out of memory for the tables: a unique name without them. */
        snprintf(name, sizeof g->nodes[id].name, "%.24s_n%d", base, id);
        return;
    }
    size_t len = strnlen(base, sizeof g->nodes[id].name - 1);
    char want[sizeof g->nodes[id].name];
    memcpy(want, base, len);
    want[len] = '\0';
    uint64_t h = name_hash(want, len);
    if (!name_taken(g, want, h)) {
        memcpy(name, want, len + 1);
        name_put(g, id, h);
        return;
    }
    /* Taken: base_N from X's counter on, as FX numbers repeats. A number
     * at or above the counter is taken only if it is in names. */
    size_t xlen = strnlen(base, NAME_BASE_MAX);
    const struct name_slot *c = &g->counters.slots[counter_slot(g, base, xlen)];
    int k = c->node >= 0 ? c->next : 1;
    for (;; k++) {
        suffixed(want, base, k);
        if (!in_names(g, want, name_hash(want, strlen(want))))
            break;
    }
    memcpy(name, want, sizeof want);
    counter_put(g, id, xlen, k);
}

static tt_status add_user(tt_graph *g, int node, int user)
{
    gnode *n = &g->nodes[node];
    if (n->nusers && n->users[n->nusers - 1] == user)
        return TT_OK; /* the same user twice (x * x) counts once */
    if (n->nusers == n->cap_users) {
        int nc = n->cap_users ? n->cap_users * 2 : 4;
        int *nu = tt__arena_alloc(&g->arena, sizeof *nu * (size_t)nc);
        if (!nu)
            return tt_error(TT_ENOMEM, "out of memory recording users");
        if (n->nusers)
            memcpy(nu, n->users, sizeof *nu * (size_t)n->nusers);
        n->users = nu; /* the old array stays in the arena until the graph goes */
        n->cap_users = nc;
    }
    n->users[n->nusers++] = user;
    return TT_OK;
}

/* Undoes the add_user calls made for a node that could not be added (the
 * newest user of any node, so only list tails hold it). */
static void drop_user_everywhere(tt_graph *g, int user)
{
    for (int i = 0; i < user; i++) {
        gnode *n = &g->nodes[i];
        while (n->nusers && n->users[n->nusers - 1] == user)
            n->nusers--;
    }
}

static int add_value_node(tt_graph *g, tt_node_kind kind, tt_tensor *value, const char *base)
{
    int id = new_node(g, kind);
    if (id < 0)
        return -1;
    gnode *n = &g->nodes[id];
    n->vals = tt__arena_alloc(&g->arena, sizeof *n->vals);
    if (!n->vals) {
        g->n--;
        tt_error(TT_ENOMEM, "out of memory adding a graph node");
        return -1;
    }
    tt__hold(value);
    n->vals[0] = value;
    n->nvals = 1;
    name_node(g, id, base);
    return id;
}

int tt__graph_add_placeholder(tt_graph *g, tt_tensor *value, const char *name)
{
    char base[16];
    snprintf(base, sizeof base, "in%d", g->ninputs);
    int id = add_value_node(g, TT_NODE_PLACEHOLDER, value, name && *name ? name : base);
    if (id >= 0)
        g->ninputs++;
    return id;
}

int tt__graph_add_constant(tt_graph *g, tt_tensor *value)
{
    /* FX numbers constants: _tensor_constant0, _tensor_constant1 ...
     * (counted, not looked for: a scan per constant was quadratic) */
    char base[32];
    snprintf(base, sizeof base, "_tensor_constant%d", g->nconstants);
    int id = add_value_node(g, TT_NODE_CONSTANT, value, base);
    g->nconstants += id >= 0;
    return id;
}

/* The graph's copy of the string at `key` (NULL for NULL), made on first
 * sight; NULL with the error set when memory runs out. */
static const char *intern(tt_graph *g, const char *key, struct str_slot *last)
{
    if (!key)
        return NULL;
    if (key == last->key)
        return last->copy;
    if (2 * (g->nstrs + 1) > g->str_cap) {
        int nc = g->str_cap ? 2 * g->str_cap : 16;
        struct str_slot *ns = tt__calloc((size_t)nc, sizeof *ns);
        if (!ns) {
            tt_error(TT_ENOMEM, "out of memory recording a node's source line");
            return NULL;
        }
        for (int i = 0; i < g->str_cap; i++) {
            if (!g->strs[i].key)
                continue;
            size_t h = ((uintptr_t)g->strs[i].key >> 3) & (size_t)(nc - 1);
            while (ns[h].key)
                h = (h + 1) & (size_t)(nc - 1);
            ns[h] = g->strs[i];
        }
        tt__free(g->strs);
        g->strs = ns;
        g->str_cap = nc;
    }
    size_t mask = (size_t)g->str_cap - 1, h = ((uintptr_t)key >> 3) & mask;
    while (g->strs[h].key && g->strs[h].key != key)
        h = (h + 1) & mask;
    if (!g->strs[h].key) {
        size_t len = strlen(key) + 1;
        char *copy = tt__malloc(len);
        if (!copy) {
            tt_error(TT_ENOMEM, "out of memory recording a node's source line");
            return NULL;
        }
        memcpy(copy, key, len);
        g->strs[h] = (struct str_slot){key, copy};
        g->nstrs++;
    }
    *last = g->strs[h];
    return last->copy;
}

int tt__graph_add_op(tt_graph *g, const tt_op *op, const garg *args, int nargs,
                     const tt_value *outs, int nouts, tt_srcloc loc)
{
    tt_srcloc own = {intern(g, loc.file, &g->last_file), loc.line,
                     intern(g, loc.func, &g->last_func)};
    if ((loc.file && !own.file) || (loc.func && !own.func))
        return -1;
    int id = new_node(g, TT_NODE_OP);
    if (id < 0)
        return -1;
    gnode *n = &g->nodes[id];
    n->op = op;
    n->loc = own;
    /* A Tensor[] result gives one value per element (see gnode.ncall). */
    int nflat = 0;
    bool lists = false;
    for (int j = 0; j < nouts; j++) {
        lists |= outs[j].kind == TT_V_TENSORS;
        nflat += outs[j].kind == TT_V_TENSORS ? outs[j].n : 1;
    }
    n->args = tt__arena_alloc(&g->arena, sizeof *n->args * (size_t)(nargs ? nargs : 1));
    n->vals = n->args ? tt__arena_alloc(&g->arena, sizeof *n->vals * (size_t)(nflat ? nflat : 1))
                      : NULL;
    n->rlen = lists && n->vals ? tt__arena_alloc(&g->arena, sizeof *n->rlen * (size_t)nouts)
                               : NULL;
    if (!n->args || !n->vals || (lists && !n->rlen))
        goto oom;
    memset(n->args, 0, sizeof *n->args * (size_t)(nargs ? nargs : 1));
    memset(n->vals, 0, sizeof *n->vals * (size_t)(nflat ? nflat : 1));
    n->ncall = nouts;
    for (int i = 0; i < nargs; i++) {
        n->args[i] = args[i];
        n->args[i].refs = NULL;
        if (args[i].kind == GARG_CONST) {
            n->args[i].v = tt_v_none();
            if (tt__value_copy(&n->args[i].v, &args[i].v))
                goto fail;
        } else if (args[i].kind == GARG_REFS) {
            n->args[i].refs = tt__malloc(sizeof(gref) * (size_t)(args[i].nrefs ? args[i].nrefs : 1));
            if (!n->args[i].refs)
                goto oom;
            memcpy(n->args[i].refs, args[i].refs, sizeof(gref) * (size_t)args[i].nrefs);
        }
        n->nargs = i + 1;
    }
    for (int j = 0, k = 0; j < nouts; j++) {
        bool list = outs[j].kind == TT_V_TENSORS;
        if (n->rlen)
            n->rlen[j] = list ? outs[j].n : -1;
        for (int e = 0; e < (list ? outs[j].n : 1); e++, k++)
            if ((n->vals[k] = list ? outs[j].u.tensors[e]
                              : outs[j].kind == TT_V_TENSOR ? outs[j].u.t : NULL))
                tt__hold(n->vals[k]); /* not the user's reference: see tt_release */
    }
    n->nvals = nflat;
    for (int i = 0; i < nargs; i++) {
        tt_status st = TT_OK;
        if (args[i].kind == GARG_REF)
            st = add_user(g, args[i].ref.node, id);
        for (int k = 0; !st && args[i].kind == GARG_REFS && k < args[i].nrefs; k++)
            if (args[i].refs[k].node >= 0)
                st = add_user(g, args[i].refs[k].node, id);
        if (st)
            goto fail;
    }
    /* "mylib::crop" -> crop, "tt::add.Tensor" -> add */
    const char *full = tt_op_name(op), *base = strstr(full, "::");
    char b[40];
    base = base ? base + 2 : full;
    size_t len = strcspn(base, ".");
    len = len < sizeof b - 1 ? len : sizeof b - 1;
    memcpy(b, base, len); /* not snprintf: this runs once per traced op */
    b[len] = '\0';
    name_node(g, id, b);
    return id;
oom:
    tt_error(TT_ENOMEM, "out of memory adding a node for %s", tt_op_name(op));
fail:
    drop_user_everywhere(g, id);
    for (int i = 0; i < n->nargs; i++)
        tt__garg_clear(&n->args[i]);
    for (int j = 0; j < n->nvals; j++)
        tt__unhold(n->vals[j]);
    g->n--;
    return -1;
}

int tt__graph_add_after_write(tt_graph *g, int node, int arg, int elem, tt_tensor *value)
{
    gnode *n = &g->nodes[node];
    /* The node's arrays live in the arena: grow by copying (a node writes
     * few arguments, and the old arrays go with the graph). */
    tt_tensor **vals = tt__arena_alloc(&g->arena, sizeof *vals * (size_t)(n->nvals + 1));
    int *args = tt__arena_alloc(&g->arena, sizeof *args * (size_t)(n->nafter + 1) * 2);
    if (!vals || !args) {
        tt_error(TT_ENOMEM, "out of memory recording what %s writes", n->name);
        return -1;
    }
    if (n->nvals)
        memcpy(vals, n->vals, sizeof *vals * (size_t)n->nvals);
    if (n->nafter)
        memcpy(args, n->after, sizeof *args * (size_t)n->nafter * 2);
    args[2 * n->nafter] = arg;
    args[2 * n->nafter + 1] = elem;
    tt__hold(value);
    vals[n->nvals] = value;
    n->vals = vals;
    n->after = args;
    n->nafter++;
    return n->nvals++;
}

tt_status tt__node_take_outs(const tt_graph *g, const gnode *n, tt_value *outs,
                             tt_tensor **vals)
{
    int nc = tt__node_ncall(n);
    for (int j = 0; n->rlen && j < nc; j++) {
        if (n->rlen[j] < 0 || (outs[j].kind == TT_V_TENSORS && outs[j].n == n->rlen[j]))
            continue;
        int got = outs[j].kind == TT_V_TENSORS ? outs[j].n : -1;
        for (int k = 0; k < nc; k++)
            tt_value_clear(&outs[k]);
        return tt_error(TT_EINVAL, "graph %s: node %s (%s): result %d is a list of %d "
                                   "tensors, but the graph was traced with %d (the inputs "
                                   "give another number of pieces; trace again for them)",
                        g->name, n->name, tt_op_name(n->op), j, got, n->rlen[j]);
    }
    for (int j = 0, k = 0; j < nc; j++) {
        if (n->rlen && n->rlen[j] >= 0) {
            for (int e = 0; e < n->rlen[j]; e++)
                vals[k++] = outs[j].u.tensors[e];
            tt__free((void *)outs[j].u.tensors); /* the elements moved */
        } else {
            vals[k++] = outs[j].kind == TT_V_TENSOR ? outs[j].u.t : NULL;
        }
        outs[j] = tt_v_none();
    }
    return TT_OK;
}

int tt__graph_set_output(tt_graph *g, const gref *outs, int nouts)
{
    int id = new_node(g, TT_NODE_OUTPUT);
    if (id < 0)
        return -1;
    gnode *n = &g->nodes[id];
    n->outs = tt__arena_alloc(&g->arena, sizeof *outs * (size_t)(nouts ? nouts : 1));
    if (!n->outs) {
        g->n--;
        tt_error(TT_ENOMEM, "out of memory setting graph outputs");
        return -1;
    }
    memcpy(n->outs, outs, sizeof *outs * (size_t)nouts);
    n->nouts = nouts;
    snprintf(n->name, sizeof n->name, "output");
    for (int i = 0; i < nouts; i++)
        if (add_user(g, outs[i].node, id)) {
            drop_user_everywhere(g, id);
            g->n--;
            return -1;
        }
    g->output = id;
    return id;
}

void tt__graph_rebuild_users(tt_graph *g)
{
    for (int i = 0; i < g->n; i++)
        g->nodes[i].nusers = 0;
    for (int i = 0; i < g->n; i++) {
        const gnode *n = &g->nodes[i];
        for (int a = 0; a < n->nargs; a++) {
            const garg *ga = &n->args[a];
            if (ga->kind == GARG_REF)
                add_user(g, ga->ref.node, i);
            for (int k = 0; ga->kind == GARG_REFS && k < ga->nrefs; k++)
                if (ga->refs[k].node >= 0)
                    add_user(g, ga->refs[k].node, i);
        }
        for (int k = 0; k < n->nouts; k++)
            add_user(g, n->outs[k].node, i);
    }
}

tt_status tt__graph_reorder(tt_graph *g, const int *order, int n)
{
    int *newidx = tt__malloc(sizeof *newidx * (size_t)(g->n + 1));
    gnode *nodes = tt__malloc(sizeof *nodes * (size_t)(g->cap ? g->cap : 1));
    if (!newidx || !nodes) {
        tt__free(newidx);
        tt__free(nodes);
        return tt_error(TT_ENOMEM, "out of memory reordering graph %s", g->name);
    }
    for (int i = 0; i < g->n; i++)
        newidx[i] = -1;
    for (int k = 0; k < n; k++)
        newidx[order[k]] = k;
    for (int i = 0; i < g->n; i++)
        if (newidx[i] < 0)
            tt__gnode_free(&g->nodes[i]);
    g->ninputs = 0;
    for (int k = 0; k < n; k++) {
        gnode *x = &nodes[k];
        *x = g->nodes[order[k]];
        for (int a = 0; a < x->nargs; a++) {
            garg *ga = &x->args[a];
            if (ga->kind == GARG_REF)
                ga->ref.node = newidx[ga->ref.node];
            for (int r = 0; ga->kind == GARG_REFS && r < ga->nrefs; r++)
                if (ga->refs[r].node >= 0)
                    ga->refs[r].node = newidx[ga->refs[r].node];
        }
        for (int o = 0; o < x->nouts; o++)
            x->outs[o].node = newidx[x->outs[o].node];
        g->ninputs += x->kind == TT_NODE_PLACEHOLDER;
    }
    g->output = g->output >= 0 ? newidx[g->output] : -1;
    tt__free(g->nodes);
    tt__free(newidx);
    g->nodes = nodes;
    g->n = n;
    tt__graph_rebuild_users(g);
    tt__graph_reindex_names(g);
    return TT_OK;
}

void tt__gnode_free(gnode *n)
{
    for (int a = 0; a < n->nargs; a++)
        tt__garg_clear(&n->args[a]);
    for (int j = 0; j < n->nvals; j++)
        tt__unhold(n->vals[j]);
}

tt_status tt__print_text(const char *fn, const char *what, char *text, FILE *f)
{
    if (!text)
        return tt_errcode();
    FILE *to = f ? f : stdout;
    errno = 0;
    bool ok = fputs(text, to) >= 0 && fflush(to) == 0;
    free(text);
    if (!ok)
        return tt_error(TT_EINVAL, "%s: writing %s to argument 'f' (#2) failed: %s", fn, what,
                        errno ? strerror(errno) : "write error");
    return TT_OK;
}

tt_graph *tt_graph_free(tt_graph *g)
{
    if (!g)
        return NULL;
    for (int i = 0; i < g->n; i++)
        tt__gnode_free(&g->nodes[i]);
    tt__free(g->nodes);
    tt__arena_free(&g->arena);
    table_clear(&g->names);
    table_clear(&g->counters);
    for (int i = 0; i < g->str_cap; i++)
        tt__free(g->strs[i].copy);
    tt__free(g->strs);
    tt__free(g);
    return NULL;
}

/* ------------------------------------------------------------- inspection */

static const gnode *node_at(const tt_graph *g, int i)
{
    return g && i >= 0 && i < g->n ? &g->nodes[i] : NULL;
}

int tt_graph_num_nodes(const tt_graph *g) { return g ? g->n : 0; }
int tt_graph_num_inputs(const tt_graph *g) { return g ? g->ninputs : 0; }

int tt_graph_num_outputs(const tt_graph *g)
{
    return g && g->output >= 0 ? g->nodes[g->output].nouts : 0;
}

tt_node_kind tt_graph_node_kind(const tt_graph *g, int i)
{
    const gnode *n = node_at(g, i);
    return n ? n->kind : TT_NODE_OUTPUT;
}

const char *tt_graph_node_name(const tt_graph *g, int i)
{
    const gnode *n = node_at(g, i);
    return n ? n->name : NULL;
}

const tt_op *tt_graph_node_op(const tt_graph *g, int i)
{
    const gnode *n = node_at(g, i);
    return n ? n->op : NULL;
}

const tt_tensor *tt_graph_node_value(const tt_graph *g, int i, int out)
{
    const gnode *n = node_at(g, i);
    return n && out >= 0 && out < n->nvals ? n->vals[out] : NULL;
}

int tt_graph_node_num_outputs(const tt_graph *g, int i)
{
    const gnode *n = node_at(g, i);
    return n ? n->nvals : 0;
}

int tt_graph_node_written_arg(const tt_graph *g, int i, int out)
{
    const gnode *n = node_at(g, i);
    if (!n || out < 0 || out >= n->nvals) {
        tt_error(TT_EINVAL, "tt_graph_node_written_arg: node %d output %d does not exist", i,
                 out);
        return -2;
    }
    return out < tt__node_nrets(n) ? -1 : tt__after_arg(n, out - tt__node_nrets(n));
}

tt_srcloc tt_graph_node_loc(const tt_graph *g, int i)
{
    const gnode *n = node_at(g, i);
    return n ? n->loc : (tt_srcloc){0};
}

const char *tt_graph_node_scope(const tt_graph *g, int node)
{
    return g && node >= 0 && node < g->n ? g->nodes[node].scope : NULL;
}

int tt_graph_count_op(const tt_graph *g, const char *name)
{
    int count = 0;
    size_t len = name ? strlen(name) : 0;
    for (int i = 0; g && name && i < g->n; i++) {
        if (g->nodes[i].kind != TT_NODE_OP)
            continue;
        const char *n = tt_op_name(g->nodes[i].op);
        if (strncmp(n, name, len) == 0 && (n[len] == '\0' || (n[len] == '.' && !strchr(name, '.'))))
            count++;
    }
    return count;
}

static bool ref_ok(const tt_graph *g, gref r, int before)
{
    return r.node >= 0 && r.node < before && r.out >= 0 && r.out < g->nodes[r.node].nvals &&
           g->nodes[r.node].vals[r.out];
}

/* Users are recorded in node order (add_user appends the node being
 * created; rebuilds and compaction keep the order), so a binary search
 * finds one: verifying stays n log n when one value has many readers (a
 * weight read by every step of an unrolled loop). The linear scan after a
 * miss keeps the check exact should the order ever break. */
static bool has_user(const gnode *n, int user)
{
    int lo = 0, hi = n->nusers;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (n->users[mid] < user)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < n->nusers && n->users[lo] == user)
        return true;
    for (int i = 0; i < n->nusers; i++)
        if (n->users[i] == user)
            return true;
    return false;
}

tt_status tt_graph_verify(const tt_graph *g)
{
    if (!g)
        return tt_error(TT_EINVAL, "tt_graph_verify: argument 'graph' is NULL");
    int inputs = 0;
    for (int i = 0; i < g->n; i++) {
        const gnode *n = &g->nodes[i];
        if (n->kind == TT_NODE_PLACEHOLDER && inputs++ != i)
            return tt_error(TT_EINTERNAL, "graph %s: placeholder %s (node %d) comes after "
                                          "other nodes", g->name, n->name, i);
        for (int a = 0; a < n->nargs; a++) {
            const garg *ga = &n->args[a];
            int nr = ga->kind == GARG_REF ? 1 : ga->kind == GARG_REFS ? ga->nrefs : 0;
            for (int k = 0; k < nr; k++) {
                gref r = ga->kind == GARG_REF ? ga->ref : ga->refs[k];
                if (ga->kind == GARG_REFS && r.node < 0)
                    continue;
                if (!ref_ok(g, r, i))
                    return tt_error(TT_EINTERNAL, "graph %s: node %s argument %d refers to "
                                                  "node %d output %d, which is not an earlier "
                                                  "value", g->name, n->name, a, r.node, r.out);
                if (!has_user(&g->nodes[r.node], i))
                    return tt_error(TT_EINTERNAL, "graph %s: node %s reads %s but is not "
                                                  "among its users", g->name, n->name,
                                    g->nodes[r.node].name);
            }
        }
        for (int k = 0; k < n->nouts; k++)
            if (!ref_ok(g, n->outs[k], i))
                return tt_error(TT_EINTERNAL, "graph %s: output %d refers to a missing value",
                                g->name, k);
        if ((n->kind == TT_NODE_PLACEHOLDER || n->kind == TT_NODE_CONSTANT) &&
            (n->nvals != 1 || !n->vals[0]))
            return tt_error(TT_EINTERNAL, "graph %s: %s has no value", g->name, n->name);
    }
    if (g->output != g->n - 1)
        return tt_error(TT_EINTERNAL, "graph %s: the output node is not last", g->name);
    if (inputs != g->ninputs)
        return tt_error(TT_EINTERNAL, "graph %s: %d placeholders, %d inputs", g->name, inputs,
                        g->ninputs);
    return TT_OK;
}

/* -------------------------------------------------------------- printing */

void tt__print_args(sbuf *b, const tt_graph *g, const gnode *n);
void tt__print_args(sbuf *b, const tt_graph *g, const gnode *n)
{
    const tt_schema *s = tt_op_schema(n->op);
    bool first = true;
    /* Trailing positional arguments at their default are left out, as a
     * call written by hand would leave them (the recorded call has every
     * argument: the dispatcher filled the defaults in). */
    int last = n->nargs;
    while (last > 0 && s) {
        const garg *a = &n->args[last - 1];
        const tt_arg *sa = tt_schema_arg(s, last - 1);
        if (sa->kwarg_only || a->kind != GARG_CONST || !sa->has_default ||
            !same_value(&a->v, &sa->default_value))
            break;
        last--;
    }
    for (int i = 0; i < n->nargs; i++) {
        const garg *a = &n->args[i];
        const tt_arg *sa = s ? tt_schema_arg(s, i) : NULL;
        /* Keyword arguments at their default are left out, as FX does. */
        if (sa && a->kind == GARG_CONST && sa->has_default &&
            (sa->kwarg_only ? same_value(&a->v, &sa->default_value) : i >= last))
            continue;
        sb_printf(b, "%s", first ? "" : ", ");
        first = false;
        if (sa && sa->kwarg_only)
            sb_printf(b, "%s=", sa->name);
        if (a->kind == GARG_CONST) {
            print_const(b, &a->v);
        } else if (a->kind == GARG_REF) {
            print_ref(b, g, a->ref);
        } else {
            sb_printf(b, "[");
            for (int k = 0; k < a->nrefs; k++) {
                sb_printf(b, "%s", k ? ", " : "");
                if (a->refs[k].node < 0)
                    sb_printf(b, "None");
                else
                    print_ref(b, g, a->refs[k]);
            }
            sb_printf(b, "]");
        }
    }
}

char *tt_graph_to_text(const tt_graph *g)
{
    return tt__graph_text(g, true);
}

char *tt__graph_text(const tt_graph *g, bool lines)
{
    if (!g) {
        tt_error(TT_EINVAL, "tt_graph_to_text: argument 'graph' is NULL");
        return NULL;
    }
    sbuf b = {0};
    sb_printf(&b, "def %s(", g->name);
    for (int i = 0; i < g->ninputs; i++) {
        sb_printf(&b, "%s%s: \"", i ? ", " : "", g->nodes[i].name);
        print_type(&b, g->nodes[i].vals[0]);
        sb_printf(&b, "\"");
    }
    sb_printf(&b, "):\n");
    for (int i = g->ninputs; i < g->n; i++) {
        const gnode *n = &g->nodes[i];
        if (n->kind == TT_NODE_CONSTANT) {
            sb_printf(&b, "    %s: \"", n->name);
            print_type(&b, n->vals[0]);
            sb_printf(&b, "\" = constant\n");
        } else if (n->kind == TT_NODE_OP) {
            sb_printf(&b, "    ");
            if (n->nvals > 0) {
                sb_printf(&b, "%s: \"", n->name);
                if (n->nvals > 1)
                    sb_printf(&b, "(");
                for (int j = 0; j < n->nvals; j++) {
                    sb_printf(&b, "%s", j ? ", " : "");
                    print_out_type(&b, n, j);
                }
                sb_printf(&b, n->nvals > 1 ? ")\" = " : "\" = ");
            }
            sb_printf(&b, "%s(", tt_op_name(n->op));
            tt__print_args(&b, g, n);
            sb_printf(&b, ")");
            /* Say which arguments the op writes, and the user's line that
             * made the node (as FX prints a node's stack trace). */
            const tt_schema *s = tt_op_schema(n->op);
            bool first = true;
            for (int a = 0; s && a < n->nargs; a++)
                if (tt_schema_arg(s, a)->is_write && n->args[a].kind == GARG_REF) {
                    sb_printf(&b, "%s", first ? "  # writes " : ", ");
                    print_ref(&b, g, n->args[a].ref);
                    first = false;
                }
            /* Where later reads find what it wrote (its after-write
             * values): "in0 is fill_like after the write". */
            for (int k = 0; k < n->nafter; k++) {
                const garg *wa = &n->args[tt__after_arg(n, k)];
                int elem = tt__after_elem(n, k);
                gref was = elem < 0 ? wa->ref : wa->refs[elem];
                sb_printf(&b, "%s", k ? ", " : first ? "  # (" : " (");
                print_ref(&b, g, was);
                sb_printf(&b, " is ");
                print_ref(&b, g, (gref){i, tt__node_nrets(n) + k});
                sb_printf(&b, "%s", k + 1 == n->nafter ? " after the write)" : "");
                first = false;
            }
            /* the scope, then the line it runs on: "[block0] model.c:12 in f" */
            if (n->scope)
                sb_printf(&b, "%s[%s]", first ? "  # " : "; ", n->scope);
            if (n->loc.file && lines) {
                sb_printf(&b, "%s", n->scope ? " " : first ? "  # " : "; ");
                print_loc(&b, n->loc);
            }
            sb_printf(&b, "\n");
        } else if (n->kind == TT_NODE_OUTPUT) {
            sb_printf(&b, "    return (");
            for (int k = 0; k < n->nouts; k++) {
                sb_printf(&b, "%s", k ? ", " : "");
                print_ref(&b, g, n->outs[k]);
            }
            sb_printf(&b, n->nouts == 1 ? ",)\n" : ")\n");
        }
    }
    if (b.oom) {
        free(b.s);
        tt_error(TT_ENOMEM, "out of memory printing graph %s", g->name);
        return NULL;
    }
    return b.s;
}

tt_status tt_graph_print(const tt_graph *g, FILE *f)
{
    return tt__print_text("tt_graph_print", "the graph text", tt_graph_to_text(g), f);
}
