/* DOT dumps of graphs and of explain results.
 *
 * The text is deterministic: nodes are named by their index (n0, n1, ...),
 * never by address, and everything is emitted in graph order, so the same
 * graph always gives byte-identical DOT (golden files rely on it). Labels
 * are plain quoted strings (no record or HTML shapes), so the only
 * characters to escape are the ones DOT strings and label escapes give a
 * meaning to.
 *
 * Styles, one per kind of node:
 *   placeholder   ellipse, light blue
 *   constant      cylinder, light green
 *   built-in op   rounded box, light grey
 *   custom op     box with a bold double border, orange: opaque to us
 *   output        inverted house, lavender
 *   graph break   red octagon (explain dumps only)
 * An argument the op writes (schema Tensor(a!)) is a red dashed edge
 * labelled "writes"; every other argument edge is labelled "#i name".
 * An op node's tooltip is the user's line that made it ("model.c:12 in
 * mlp", the file's base name, as in the text print). */
#include "print_impl.h"

#include <errno.h>

#define FONT "Helvetica"

/* Appends s as the inside of a DOT quoted string used as a label: quotes
 * and backslashes escaped, newlines as \n (a centred line break), '&'
 * spelled &amp; (graphviz decodes entities in plain labels), other control
 * characters as spaces and malformed UTF-8 bytes as '?' (graphviz would
 * warn and reinterpret the whole graph as Latin-1). */
static void put_escaped(sbuf *b, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        unsigned char c = *p;
        if (c == '"' || c == '\\') {
            sb_printf(b, "\\%c", c);
        } else if (c == '\n') {
            sb_printf(b, "\\n");
        } else if (c == '&') {
            sb_printf(b, "&amp;");
        } else if (c < 0x20 || c == 0x7f) {
            sb_printf(b, " ");
        } else if (c < 0x80) {
            sb_printf(b, "%c", c);
        } else {
            int n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3
                  : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
            for (int k = 1; k < n; k++)
                if ((p[k] & 0xc0) != 0x80)
                    n = 0; /* also stops at the terminating NUL */
            if (n) {
                sb_printf(b, "%.*s", n, (const char *)p);
                p += n;
                continue;
            }
            sb_printf(b, "?");
        }
        p++;
    }
}

/* ------------------------------------------------------------- labels */

/* The non-tensor arguments worth showing: those not at their default
 * (crop's box, sum's dims), as "name=value". */
static void put_const_args(sbuf *b, const gnode *n)
{
    const tt_schema *s = tt_op_schema(n->op);
    for (int i = 0; i < n->nargs; i++) {
        const garg *a = &n->args[i];
        const tt_arg *sa = s ? tt_schema_arg(s, i) : NULL;
        if (a->kind != GARG_CONST || (sa && sa->type.base == TT_T_TENSOR && a->v.kind == TT_V_NONE))
            continue;
        if (sa && sa->has_default && same_value(&a->v, &sa->default_value))
            continue;
        sb_printf(b, "\n%s=", sa && sa->name[0] ? sa->name : "arg");
        print_const(b, &a->v);
    }
}

/* The node's label before escaping: its name, what it is, then the
 * dtype and shape of each value it makes. */
static void node_label(sbuf *b, const gnode *n)
{
    sb_printf(b, "%s", n->name);
    switch (n->kind) {
    case TT_NODE_PLACEHOLDER: sb_printf(b, "\nplaceholder"); break;
    case TT_NODE_CONSTANT: sb_printf(b, "\nconstant"); break;
    case TT_NODE_OP:
        sb_printf(b, "\n%s", tt_op_name(n->op));
        put_const_args(b, n);
        break;
    case TT_NODE_OUTPUT: return;
    }
    for (int j = 0; j < n->nvals; j++) {
        sb_printf(b, "\n");
        if (n->nvals > 1 || n->rlen) /* rlen: a list's elements, even of one */
            sb_printf(b, "[%d] ", j);
        if (j >= tt__node_nrets(n)) { /* an after-write value: say whose */
            int k = j - tt__node_nrets(n);
            const tt_schema *s = tt_op_schema(n->op);
            const tt_arg *sa = s ? tt_schema_arg(s, tt__after_arg(n, k)) : NULL;
            sb_printf(b, "%s", sa && sa->name[0] ? sa->name : "arg");
            if (tt__after_elem(n, k) >= 0)
                sb_printf(b, "[%d]", tt__after_elem(n, k));
            sb_printf(b, " after the write: ");
        }
        print_out_type(b, n, j);
    }
}

static const char *node_style(const gnode *n)
{
    switch (n->kind) {
    case TT_NODE_PLACEHOLDER: return "shape=ellipse, fillcolor=\"#cfe2f3\"";
    case TT_NODE_CONSTANT: return "shape=cylinder, fillcolor=\"#d9ead3\"";
    case TT_NODE_OUTPUT: return "shape=invhouse, fillcolor=\"#d9d2e9\"";
    case TT_NODE_OP: break;
    }
    if (tt_op_is_builtin(n->op))
        return "shape=box, style=\"rounded,filled\", fillcolor=\"#eeeeee\"";
    /* A custom op is a black box to the tracer: make it look like one. */
    return "shape=box, style=\"filled,bold\", peripheries=2, penwidth=2, "
           "fillcolor=\"#f6b26b\"";
}

/* --------------------------------------------------------------- graph */

/* Node ids: "n3" in a lone graph, "g2_n3" in cluster 2 of an explain. */
static void put_id(sbuf *b, int cluster, int node)
{
    if (cluster)
        sb_printf(b, "g%d_n%d", cluster, node);
    else
        sb_printf(b, "n%d", node);
}

static void put_edge(sbuf *b, const tt_graph *g, int cluster, const char *indent, gref from,
                     int to, int argi, const tt_arg *sa, int elem, bool writes)
{
    sbuf lab = {0};
    sb_printf(&lab, "#%d %s", argi + 1, sa && sa->name[0] ? sa->name : "arg");
    if (elem >= 0)
        sb_printf(&lab, "[%d]", elem);
    if (g->nodes[from.node].nvals > 1 || g->nodes[from.node].rlen)
        sb_printf(&lab, " (out %d)", from.out);
    if (writes)
        sb_printf(&lab, "\nwrites");
    sb_printf(b, "%s", indent);
    put_id(b, cluster, from.node);
    sb_printf(b, " -> ");
    put_id(b, cluster, to);
    sb_printf(b, " [label=\"");
    put_escaped(b, lab.s ? lab.s : "");
    sb_printf(b, "\"%s];\n",
              writes ? ", color=red, fontcolor=red, style=dashed, penwidth=1.5" : "");
    b->oom |= lab.oom;
    free(lab.s);
}

static void put_node(sbuf *b, const tt_graph *g, int cluster, const char *indent,
                     const bool *marked, int i)
{
    const gnode *n = &g->nodes[i];
    sbuf lab = {0};
    node_label(&lab, n);
    sb_printf(b, "%s", indent);
    put_id(b, cluster, i);
    sb_printf(b, " [label=\"");
    put_escaped(b, lab.s ? lab.s : "");
    sb_printf(b, "\", %s", node_style(n));
    if (marked && marked[i])
        sb_printf(b, ", color=red, penwidth=3, fillcolor=\"#f4cccc\"");
    b->oom |= lab.oom;
    free(lab.s);
    if (n->loc.file) {
        /* The user's line, shown on hover in SVG (a label line would
         * grow every box of the picture). */
        sbuf tip = {0};
        print_loc(&tip, n->loc);
        sb_printf(b, ", tooltip=\"");
        put_escaped(b, tip.s ? tip.s : "");
        sb_printf(b, "\"");
        b->oom |= tip.oom;
        free(tip.s);
    }
    sb_printf(b, "];\n");
}

/* Scope paths ordered so a path's nested scopes follow it directly ('/'
 * sorts before every other character). */
static int scope_cmp(const void *pa, const void *pb)
{
    const unsigned char *a = *(const unsigned char *const *)pa;
    const unsigned char *b = *(const unsigned char *const *)pb;
    for (;; a++, b++) {
        unsigned ca = *a == '/' ? 1 : *a, cb = *b == '/' ? 1 : *b;
        if (ca != cb || !ca)
            return (int)ca - (int)cb;
    }
}

/* True when path is inside scope `outer` ("a/b" inside "a"). */
static bool scope_within(const char *path, const char *outer)
{
    size_t n = strlen(outer);
    return !strncmp(path, outer, n) && path[n] == '/';
}

/* Collapsed scopes (tt_graph_to_dot_collapsed): every scope `depth`
 * levels deep is one box for all its nodes (nested scopes included). */
typedef struct {
    int depth;   /* 0: none collapsed */
    int nbox;
    char **box;  /* the boxes' scope paths */
    int *count;  /* their nodes */
    int *rep;    /* per node: its box, or -1 */
    /* Per node: an input or constant read only inside boxes (a layer's
     * weights), left out of the picture with its edges; and how many. */
    bool *hidden;
    int nhidden;
    /* Merged repeats (tt_graph_to_dot_merged): per box, how many boxes it
     * stands for (1: itself; 0: merged into an earlier one, whose last
     * member's path is last[]). */
    int *repeat;
    int *last;
} collapse;

/* The length of s's first n components ("a/b/c", 2: 3), or 0 when s has
 * fewer. */
static size_t prefix_len(const char *s, int n)
{
    size_t at = 0;
    for (int k = 0; k < n; k++) {
        const char *slash = strchr(s + at, '/');
        if (k + 1 == n)
            return slash ? (size_t)(slash - s) : strlen(s);
        if (!slash)
            return 0;
        at = (size_t)(slash - s) + 1;
    }
    return 0;
}

/* Adds s[0..len) to the list unless there; its index, -1 when out of
 * memory. */
static int path_index(char ***list, int *n, int *cap, const char *s, size_t len)
{
    for (int k = 0; k < *n; k++)
        if (strlen((*list)[k]) == len && !strncmp((*list)[k], s, len))
            return k;
    if (*n == *cap) {
        int nc = *cap ? 2 * *cap : 8;
        char **pp = realloc(*list, sizeof *pp * (size_t)nc);
        if (!pp)
            return -1;
        *list = pp, *cap = nc;
    }
    if (!((*list)[*n] = strndup(s, len)))
        return -1;
    return (*n)++;
}

static void collapse_free(collapse *cx)
{
    for (int k = 0; k < cx->nbox; k++)
        free(cx->box[k]);
    free(cx->box), free(cx->count), free(cx->rep), free(cx->hidden);
    free(cx->repeat), free(cx->last);
}

/* The parent path's length of a box ("l3/attn": 2; "l3": 0). */
static size_t parent_len(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? (size_t)(slash - path) : 0;
}

/* Merges each run of consecutive boxes (in the order their first nodes
 * were traced) with one parent and the same ops in the same order into
 * its first box: a model's twelve identical layers become one. */
static bool merge_repeats(collapse *cx, const tt_graph *g)
{
    uint64_t *sig = malloc(sizeof *sig * (size_t)(cx->nbox ? cx->nbox : 1));
    int *into = malloc(sizeof *into * (size_t)(cx->nbox ? cx->nbox : 1));
    cx->repeat = malloc(sizeof *cx->repeat * (size_t)(cx->nbox ? cx->nbox : 1));
    cx->last = malloc(sizeof *cx->last * (size_t)(cx->nbox ? cx->nbox : 1));
    if (!sig || !into || !cx->repeat || !cx->last) {
        free(sig), free(into);
        return false;
    }
    for (int k = 0; k < cx->nbox; k++)
        sig[k] = 1469598103934665603ull, cx->repeat[k] = 1, cx->last[k] = k, into[k] = k;
    /* A box's ops, names in order (FNV-1a), as its signature. */
    for (int i = 0; i < g->n; i++) {
        int k = cx->rep[i];
        if (k < 0 || g->nodes[i].kind != TT_NODE_OP)
            continue;
        for (const char *c = tt_op_name(g->nodes[i].op); *c; c++)
            sig[k] = (sig[k] ^ (unsigned char)*c) * 1099511628211ull;
        sig[k] = (sig[k] ^ ';') * 1099511628211ull;
    }
    for (int k = 1, head = 0; k < cx->nbox; k++) {
        size_t ph = parent_len(cx->box[head]), pk = parent_len(cx->box[k]);
        if (ph == pk && !strncmp(cx->box[head], cx->box[k], ph) && sig[k] == sig[head] &&
            cx->count[k] == cx->count[head]) {
            into[k] = head;
            cx->repeat[head]++;
            cx->repeat[k] = 0;
            cx->last[head] = k;
        } else {
            head = k;
        }
    }
    for (int i = 0; i < g->n; i++)
        if (cx->rep[i] >= 0)
            cx->rep[i] = into[cx->rep[i]];
    free(sig), free(into);
    return true;
}

static bool collapse_init(collapse *cx, const tt_graph *g, int depth, bool merge)
{
    *cx = (collapse){.depth = depth};
    if (depth <= 0)
        return true;
    int cap = 0;
    if (!(cx->rep = malloc(sizeof *cx->rep * (size_t)(g->n ? g->n : 1))))
        return false;
    for (int i = 0; i < g->n; i++) {
        const char *s = g->nodes[i].scope;
        size_t len = s ? prefix_len(s, depth) : 0;
        cx->rep[i] = len ? path_index(&cx->box, &cx->nbox, &cap, s, len) : -1;
        if (len && cx->rep[i] < 0)
            return false;
    }
    if (!(cx->count = calloc((size_t)(cx->nbox ? cx->nbox : 1), sizeof *cx->count)))
        return false;
    for (int i = 0; i < g->n; i++)
        if (cx->rep[i] >= 0)
            cx->count[cx->rep[i]]++;
    if (merge && !merge_repeats(cx, g))
        return false;
    if (!(cx->hidden = calloc((size_t)(g->n ? g->n : 1), sizeof *cx->hidden)))
        return false;
    for (int i = 0; i < g->n; i++) {
        const gnode *n = &g->nodes[i];
        bool inside = (n->kind == TT_NODE_PLACEHOLDER || n->kind == TT_NODE_CONSTANT) &&
                      n->nusers > 0;
        for (int u = 0; inside && u < n->nusers; u++)
            inside = cx->rep[n->users[u]] >= 0;
        cx->hidden[i] = inside;
        cx->nhidden += inside;
    }
    return true;
}

/* Box k of cluster c: "b3" in a lone graph, "g2_b3" in an explain's. */
static void put_box_id(sbuf *b, int cluster, int k)
{
    if (cluster)
        sb_printf(b, "g%d_b%d", cluster, k);
    else
        sb_printf(b, "b%d", k);
}

static const char *last_component(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* A box: "attn", "23 ops"; merged repeats "layer0 … layer11", "×12, 40
 * ops each" (\u2026, \u00d7). Boxes merged into an earlier one are not
 * drawn. */
static void put_box(sbuf *b, int cluster, const char *indent, const collapse *cx, int k)
{
    int times = cx->repeat ? cx->repeat[k] : 1;
    if (!times)
        return;
    sb_printf(b, "%s", indent);
    put_box_id(b, cluster, k);
    sb_printf(b, " [label=\"");
    put_escaped(b, last_component(cx->box[k]));
    if (times > 1) {
        sb_printf(b, " \u2026 ");
        put_escaped(b, last_component(cx->box[cx->last[k]]));
        sb_printf(b, "\\n\u00d7%d, %d op%s each", times, cx->count[k],
                  cx->count[k] == 1 ? "" : "s");
    } else {
        sb_printf(b, "\\n%d op%s", cx->count[k], cx->count[k] == 1 ? "" : "s");
    }
    sb_printf(b, "\", shape=box3d, fillcolor=\"#dae8fc\", tooltip=\"");
    put_escaped(b, cx->box[k]);
    if (times > 1) {
        sb_printf(b, " to ");
        put_escaped(b, cx->box[cx->last[k]]);
    }
    sb_printf(b, "\"];\n");
}

/* g's nodes, those recorded in named scopes inside one DOT cluster per
 * scope, nested as the scopes were (tt_scope_name_push); with cx->depth,
 * the scopes that deep are boxes in their parents' clusters instead. */
static void put_nodes(sbuf *b, const tt_graph *g, int cluster, const char *indent,
                      const bool *marked, const collapse *cx)
{
    /* every scope path and each of its enclosing paths, once (those
     * above the collapsed depth only) */
    int np = 0, cap = 0;
    char **paths = NULL;
    for (int i = 0; i < g->n && !b->oom; i++) {
        const char *s = g->nodes[i].scope;
        for (int c = 1; s && (!cx->depth || c < cx->depth); c++) {
            size_t len = prefix_len(s, c);
            if (!len)
                break;
            if (path_index(&paths, &np, &cap, s, len) < 0) {
                b->oom = true;
                break;
            }
        }
    }
    for (int i = 0; i < g->n; i++)
        if (!g->nodes[i].scope && !(cx->hidden && cx->hidden[i]))
            put_node(b, g, cluster, indent, marked, i);
    for (int k = 0; k < cx->nbox; k++)
        if (!strchr(cx->box[k], '/'))
            put_box(b, cluster, indent, cx, k);
    if (np > 1)
        qsort(paths, (size_t)np, sizeof *paths, scope_cmp);
    const char *open[64];
    int depth = 0;
    for (int k = 0; k <= np; k++) {
        while (depth > 0 && (k == np || !scope_within(paths[k], open[depth - 1]))) {
            sb_printf(b, "%s%*s}\n", indent, 2 * --depth, "");
        }
        if (k == np || depth == 64)
            continue;
        const char *last = strrchr(paths[k], '/');
        sb_printf(b, "%s%*ssubgraph cluster_s%d_%d {\n%s%*s  graph [label=\"", indent, 2 * depth,
                  "", cluster, k, indent, 2 * depth, "");
        put_escaped(b, last ? last + 1 : paths[k]);
        /* The path as the cluster's id (and an SVG group's): what the
         * HTML view (render.c) folds by. */
        sb_printf(b, "\", id=\"");
        if (cluster)
            sb_printf(b, "g%d_", cluster);
        sb_printf(b, "scope:");
        put_escaped(b, paths[k]);
        sb_printf(b, "\", tooltip=\"");
        put_escaped(b, paths[k]);
        sb_printf(b, "\", style=\"rounded,dashed\", color=\"#6fa8dc\", "
                     "fontcolor=\"#3d85c6\"];\n");
        open[depth++] = paths[k];
        sbuf in = {0};
        sb_printf(&in, "%s%*s", indent, 2 * depth, "");
        for (int i = 0; i < g->n; i++)
            if (g->nodes[i].scope && (!cx->rep || cx->rep[i] < 0) &&
                !strcmp(g->nodes[i].scope, paths[k]))
                put_node(b, g, cluster, in.s ? in.s : indent, marked, i);
        for (int j = 0; j < cx->nbox; j++) {
            const char *slash = strrchr(cx->box[j], '/');
            if (slash && (size_t)(slash - cx->box[j]) == strlen(paths[k]) &&
                !strncmp(cx->box[j], paths[k], strlen(paths[k])))
                put_box(b, cluster, in.s ? in.s : indent, cx, j);
        }
        b->oom |= in.oom;
        free(in.s);
    }
    for (int k = 0; k < np; k++)
        free(paths[k]);
    free(paths);
}

/* An edge with a collapsed end: one line per pair of ends, unlabelled. */
typedef struct {
    int64_t from, to; /* a node's index, or -1 - box */
} box_edge;

static int box_edge_cmp(const void *pa, const void *pb)
{
    const box_edge *a = pa, *b = pb;
    return a->from != b->from ? (a->from < b->from ? -1 : 1)
           : a->to != b->to   ? (a->to < b->to ? -1 : 1)
                              : 0;
}

static void put_end(sbuf *b, int cluster, int64_t e)
{
    if (e < 0)
        put_box_id(b, cluster, (int)(-1 - e));
    else
        put_id(b, cluster, (int)e);
}

/* The nodes and edges of g, each line prefixed with `indent`; the nodes
 * `marked` (NULL: none) drawn red; cx's scopes collapsed. */
static void put_body_collapsed(sbuf *b, const tt_graph *g, int cluster, const char *indent,
                               const bool *marked, const collapse *cx)
{
    put_nodes(b, g, cluster, indent, marked, cx);
    box_edge *be = NULL;
    size_t nbe = 0, cap = 0;
    for (int i = 0; i < g->n; i++) {
        const gnode *n = &g->nodes[i];
        const tt_schema *s = n->kind == TT_NODE_OP ? tt_op_schema(n->op) : NULL;
        for (int a = 0; a < n->nargs; a++) {
            const garg *ga = &n->args[a];
            const tt_arg *sa = s && a < tt_schema_nargs(s) ? tt_schema_arg(s, a) : NULL;
            bool writes = sa && sa->is_write;
            int nref = ga->kind == GARG_REF ? 1 : ga->kind == GARG_REFS ? ga->nrefs : 0;
            for (int k = 0; k < nref; k++) {
                gref r = ga->kind == GARG_REF ? ga->ref : ga->refs[k];
                if (r.node < 0 || (cx->hidden && cx->hidden[r.node]))
                    continue;
                int rf = cx->rep ? cx->rep[r.node] : -1, rt = cx->rep ? cx->rep[i] : -1;
                if (rf < 0 && rt < 0) {
                    put_edge(b, g, cluster, indent, r, i, a, sa,
                             ga->kind == GARG_REF ? -1 : k, writes);
                    continue;
                }
                if (rf >= 0 && rf == rt)
                    continue; /* inside one box */
                if (nbe == cap) {
                    size_t nc = cap ? 2 * cap : 64;
                    box_edge *nb = realloc(be, sizeof *nb * nc);
                    if (!nb) {
                        b->oom = true;
                        continue;
                    }
                    be = nb, cap = nc;
                }
                be[nbe++] = (box_edge){rf >= 0 ? -1 - rf : r.node, rt >= 0 ? -1 - rt : i};
            }
        }
        for (int k = 0; k < n->nouts; k++) {
            int rf = cx->rep ? cx->rep[n->outs[k].node] : -1;
            sb_printf(b, "%s", indent);
            put_end(b, cluster, rf >= 0 ? -1 - rf : n->outs[k].node);
            sb_printf(b, " -> ");
            put_id(b, cluster, i);
            sb_printf(b, " [label=\"out %d\", color=\"#674ea7\", fontcolor=\"#674ea7\"];\n", k);
        }
    }
    if (nbe > 1)
        qsort(be, nbe, sizeof *be, box_edge_cmp);
    for (size_t k = 0; k < nbe; k++) {
        if (k && !box_edge_cmp(&be[k], &be[k - 1]))
            continue;
        sb_printf(b, "%s", indent);
        put_end(b, cluster, be[k].from);
        sb_printf(b, " -> ");
        put_end(b, cluster, be[k].to);
        sb_printf(b, ";\n");
    }
    free(be);
}

static void put_body(sbuf *b, const tt_graph *g, int cluster, const char *indent,
                     const bool *marked)
{
    const collapse none = {0};
    put_body_collapsed(b, g, cluster, indent, marked, &none);
}

static void put_header(sbuf *b, const char *name, const char *label)
{
    sb_printf(b, "digraph \"");
    put_escaped(b, name);
    sb_printf(b, "\" {\n  graph [rankdir=TB, label=\"");
    put_escaped(b, label);
    sb_printf(b, "\", labelloc=t, fontname=\"" FONT "\", fontsize=14];\n"
                 "  node [fontname=\"" FONT "\", fontsize=10, style=filled, "
                 "fillcolor=white];\n"
                 "  edge [fontname=\"" FONT "\", fontsize=9];\n");
}

static char *finish(sbuf *b, const char *fn)
{
    if (b->oom) {
        free(b->s);
        tt_error(TT_ENOMEM, "%s: out of memory writing the DOT text", fn);
        return NULL;
    }
    return b->s;
}

static char *dot_collapsed(const char *fn, const tt_graph *g, int depth, bool merge)
{
    if (!g) {
        tt_error(TT_EINVAL, "%s: argument 'graph' (#1) is NULL", fn);
        return NULL;
    }
    collapse cx;
    sbuf b = {0}, title = {0};
    if (!collapse_init(&cx, g, depth, merge)) {
        b.oom = true;
    } else {
        sb_printf(&title, "%s", g->name);
        if (cx.nhidden)
            sb_printf(&title, " (%d input%s read only inside the boxes not drawn)", cx.nhidden,
                      cx.nhidden == 1 ? "" : "s");
        put_header(&b, g->name, title.s ? title.s : g->name);
        b.oom |= title.oom;
        put_body_collapsed(&b, g, 0, "  ", NULL, &cx);
        sb_printf(&b, "}\n");
    }
    collapse_free(&cx);
    free(title.s);
    return finish(&b, fn);
}

char *tt_graph_to_dot_collapsed(const tt_graph *g, int depth)
{
    return dot_collapsed("tt_graph_to_dot_collapsed", g, depth, false);
}

char *tt_graph_to_dot_merged(const tt_graph *g, int depth)
{
    return dot_collapsed("tt_graph_to_dot_merged", g, depth, true);
}

char *tt_graph_to_dot(const tt_graph *g)
{
    if (!g) {
        tt_error(TT_EINVAL, "tt_graph_to_dot: argument 'graph' (#1) is NULL");
        return NULL;
    }
    sbuf b = {0};
    put_header(&b, g->name, g->name);
    put_body(&b, g, 0, "  ", NULL);
    sb_printf(&b, "}\n");
    return finish(&b, "tt_graph_to_dot");
}

/* ------------------------------------------------------------- explain */

/* The gist of a break reason for a node label: the reason up to its first
 * ", " outside brackets and quotes ("mylib::foo has no fake kernel", "tt_item
 * reads the data of f32[4, 3] (graph value relu)"), capped in length and
 * wrapped at spaces into lines of about `width` characters. */
static void put_short_reason(sbuf *b, const char *reason, int width)
{
    enum { CAP = 160 };
    char r[CAP + 4];
    int depth = 0, len = 0;
    bool quoted = false, cut = false;
    for (const char *p = reason; *p; p++) {
        if (*p == '"')
            quoted = !quoted;
        else if (!quoted && (*p == '[' || *p == '('))
            depth++;
        else if (!quoted && (*p == ']' || *p == ')') && depth > 0)
            depth--;
        else if (!quoted && !depth && p[0] == ',' && p[1] == ' ')
            break;
        if (len == CAP) {
            cut = true;
            break;
        }
        r[len++] = *p;
    }
    /* Never cut a UTF-8 sequence in half (r holds reason's first len bytes). */
    while (cut && len > 0 && ((unsigned char)reason[len] & 0xc0) == 0x80)
        len--;
    if (cut)
        r[len++] = '.', r[len++] = '.', r[len++] = '.';
    r[len] = '\0';
    int col = 0;
    for (char *w = r; *w;) {
        int n = (int)strcspn(w, " ");
        if (col && col + 1 + n > width) {
            sb_printf(b, "\n");
            col = 0;
        } else if (col) {
            sb_printf(b, " ");
            col++;
        }
        sb_printf(b, "%.*s", n, w);
        col += n;
        w += n;
        w += strspn(w, " ");
    }
}

static void break_label(sbuf *b, const tt_break_info *bi)
{
    sb_printf(b, "graph break: %s\n", tt_break_kind_name(bi->kind));
    put_short_reason(b, bi->reason ? bi->reason : "", 40);
    if (bi->op && (!bi->reason || !strstr(bi->reason, bi->op)))
        sb_printf(b, "\nop: %s", bi->op);
    if (bi->loc.file) {
        sb_printf(b, "\n%s:%d", loc_basename(bi->loc.file), bi->loc.line);
        if (bi->loc.func)
            sb_printf(b, " in %s()", bi->loc.func);
    }
}

char *tt_explain_to_dot(const tt_explain *e)
{
    if (!e) {
        tt_error(TT_EINVAL, "tt_explain_to_dot: argument 'explain' (#1) is NULL");
        return NULL;
    }
    int ng = tt_explain_graph_count(e), nb = tt_explain_break_count(e);
    sbuf b = {0}, title = {0};
    sb_printf(&title, "explain: %d graph%s, %d graph break%s", ng, ng == 1 ? "" : "s", nb,
              nb == 1 ? "" : "s");
    put_header(&b, "explain", title.s ? title.s : "explain");
    b.oom |= title.oom;
    free(title.s);
    for (int c = 1; c <= ng; c++) {
        const tt_graph *g = tt_explain_graph(e, c - 1);
        sb_printf(&b, "  subgraph cluster_%d {\n    graph [label=\"graph %d (", c, c);
        put_escaped(&b, g->name);
        sb_printf(&b, ")\", style=rounded, color=\"#999999\"];\n");
        put_body(&b, g, c, "    ", NULL);
        sb_printf(&b, "  }\n");
    }
    /* Break i sits between graph i and graph i + 1: after the last node of
     * the one (its output) and before the first of the next. */
    for (int i = 0; i < nb; i++) {
        const tt_break_info *bi = tt_explain_break(e, i);
        sbuf lab = {0};
        break_label(&lab, bi);
        sb_printf(&b, "  break%d [label=\"", i + 1);
        put_escaped(&b, lab.s ? lab.s : "");
        sb_printf(&b, "\", shape=octagon, color=red, penwidth=2, fillcolor=\"#f4cccc\", "
                      "fontcolor=\"#990000\"];\n");
        b.oom |= lab.oom;
        free(lab.s);
        const tt_graph *from = tt_explain_graph(e, i), *to = tt_explain_graph(e, i + 1);
        if (from && from->n > 0) {
            sb_printf(&b, "  ");
            put_id(&b, i + 1, from->n - 1);
            sb_printf(&b, " -> break%d [color=red, style=bold];\n", i + 1);
        }
        if (to && to->n > 0) {
            sb_printf(&b, "  break%d -> ", i + 1);
            put_id(&b, i + 2, 0);
            sb_printf(&b, " [color=red, style=bold];\n");
        }
    }
    sb_printf(&b, "}\n");
    return finish(&b, "tt_explain_to_dot");
}

/* ---------------------------------------------------------- two graphs */

char *tt__graphs_dot(const tt_graph *a, const bool *marked_a, const tt_graph *b,
                     const bool *marked_b, const char *title)
{
    sbuf d = {0};
    put_header(&d, "compare", title);
    const tt_graph *gs[2] = {a, b};
    const bool *ms[2] = {marked_a, marked_b};
    static const char *const names[2] = {"expected", "actual"};
    for (int c = 1; c <= 2; c++) {
        sb_printf(&d, "  subgraph cluster_%d {\n    graph [label=\"%s (", c, names[c - 1]);
        put_escaped(&d, gs[c - 1]->name);
        sb_printf(&d, ")\", style=rounded, color=\"#999999\"];\n");
        put_body(&d, gs[c - 1], c, "    ", ms[c - 1]);
        sb_printf(&d, "  }\n");
    }
    sb_printf(&d, "}\n");
    return finish(&d, "tt_expect_graphs_equal");
}

/* --------------------------------------------------------------- files */


tt_status tt_graph_write_dot(const tt_graph *g, FILE *f)
{
    if (!g)
        return tt_error(TT_EINVAL, "tt_graph_write_dot: argument 'graph' (#1) is NULL");
    return tt__print_text("tt_graph_write_dot", "the DOT text", tt_graph_to_dot(g), f);
}

tt_status tt_explain_write_dot(const tt_explain *e, FILE *f)
{
    if (!e)
        return tt_error(TT_EINVAL, "tt_explain_write_dot: argument 'explain' (#1) is NULL");
    return tt__print_text("tt_explain_write_dot", "the DOT text", tt_explain_to_dot(e), f);
}
