/* Test helpers (tt_testing.h): expectations on breaks, recompiles, a
 * graph's ops and its text, each failing with TT_EEXPECT and a message
 * that shows what happened, built on explain, the compile stats and the
 * graph text. */
#include "tt_testing.h"

#include "print_impl.h"
#include "trace_impl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* --------------------------------------------------------------- breaks */

static bool break_matches(const tt_break_info *b, const char *want)
{
    return !want || strstr(tt_break_kind_name(b->kind), want) ||
           (b->reason && strstr(b->reason, want)) || (b->op && strstr(b->op, want));
}

static tt_status expect_graphs(const char *fn_name, tt_fn fn, int nin, tt_tensor **inputs,
                               const tt_trace_opts *opts, int ngraphs,
                               const char *const *reasons)
{
    if (!fn || ngraphs < 1)
        return tt_error(TT_EINVAL, "%s: expected a function and at least one graph", fn_name);
    /* explain splits where a fullgraph trace would fail */
    tt_trace_opts o = opts ? *opts : (tt_trace_opts){0};
    o.fullgraph = false;
    tt_explain *e = tt_explain_run(fn, nin, inputs, &o);
    if (!e)
        return tt_errcode();
    int got = tt_explain_graph_count(e);
    int bad = got != ngraphs ? 0 : -1;
    for (int i = 0; bad < 0 && reasons && i < got - 1; i++)
        if (!break_matches(tt_explain_break(e, i), reasons[i]))
            bad = i + 1;
    tt_status st = TT_OK;
    if (bad >= 0) {
        char *report = tt_explain_to_text(e);
        if (bad == 0)
            st = tt_error(TT_EEXPECT, "%s: expected %d graph%s, got %d:\n%s", fn_name, ngraphs,
                          ngraphs == 1 ? "" : "s", got, report ? report : "(no report)");
        else
            st = tt_error(TT_EEXPECT, "%s: expected break %d to be '%s':\n%s", fn_name, bad,
                          reasons[bad - 1], report ? report : "(no report)");
        free(report);
    }
    tt_explain_free(e);
    return st;
}

tt_status tt_expect_fullgraph(tt_fn fn, int nin, tt_tensor **inputs, const tt_trace_opts *opts)
{
    return expect_graphs("tt_expect_fullgraph", fn, nin, inputs, opts, 1, NULL);
}

tt_status tt_expect_graphs(tt_fn fn, int nin, tt_tensor **inputs, const tt_trace_opts *opts,
                           int ngraphs, const char *const *reasons)
{
    return expect_graphs("tt_expect_graphs", fn, nin, inputs, opts, ngraphs, reasons);
}

/* ----------------------------------------------------------- recompiles */

tt_status tt_expect_no_recompile(tt_compiled *c, int ncalls, tt_tensor **const *inputs)
{
    int nout = tt__compiled_nout(c);
    if (!c || ncalls < 1 || !inputs)
        return tt_error(TT_EINVAL, "tt_expect_no_recompile: expected a compiled function and "
                                   "at least one list of inputs");
    tt_tensor **outs = calloc((size_t)nout, sizeof *outs);
    if (!outs)
        return tt_error(TT_ENOMEM, "tt_expect_no_recompile: out of memory");
    tt_compile_stats s;
    int64_t misses = 0;
    tt_status st = TT_OK;
    for (int k = 0; k < ncalls && !st; k++) {
        if ((st = tt_compiled_call(c, inputs[k], outs)))
            break;
        for (int j = 0; j < nout; j++)
            outs[j] = tt_release(outs[j]);
        tt_compiled_stats(c, &s);
        if (k > 0 && s.misses > misses)
            st = tt_error(TT_EEXPECT, "tt_expect_no_recompile: call %d of %d traced again: "
                                      "guard failed: %s", k + 1, ncalls, s.last_miss);
        misses = s.misses;
    }
    free(outs);
    return st;
}

/* --------------------------------------------------------------- graphs */

int tt_compiled_count_op(const tt_compiled *c, const char *op)
{
    if (!c) {
        tt_error(TT_EINVAL, "tt_compiled_count_op: argument 'c' is NULL");
        return -1;
    }
    int n = 0;
    const tt_graph *g;
    for (int i = 0; (g = tt_compiled_graph(c, i)); i++)
        if (op)
            n += tt_graph_count_op(g, op);
        else
            for (int k = 0; k < tt_graph_num_nodes(g); k++)
                n += tt_graph_node_kind(g, k) == TT_NODE_OP;
    return n;
}

static tt_status op_expectation(const char *fn, const tt_graph *g, const char *op, bool want,
                                bool custom)
{
    if (!g || !op)
        return tt_error(TT_EINVAL, "%s: expected a graph and an op name", fn);
    int n = tt_graph_count_op(g, op);
    const char *why = NULL;
    if (want && n == 0)
        why = "to call";
    else if (!want && n > 0)
        why = "not to call";
    if (!why && custom) {
        tt_op *h = tt_op_find(op);
        if (h && tt_op_is_builtin(h))
            return tt_error(TT_EEXPECT, "%s: %s is one of tt's built-ins, not a custom op", fn,
                            op);
    }
    if (!why)
        return TT_OK;
    char *text = tt_graph_to_text(g);
    tt_status st = tt_error(TT_EEXPECT, "%s: expected graph %s %s %s, it has %d call%s:\n%s",
                            fn, g->name, why, op, n, n == 1 ? "" : "s",
                            text ? text : "(no text)");
    free(text);
    return st;
}

tt_status tt_expect_graph_has_op(const tt_graph *g, const char *op)
{
    return op_expectation("tt_expect_graph_has_op", g, op, true, false);
}

tt_status tt_expect_graph_lacks_op(const tt_graph *g, const char *op)
{
    return op_expectation("tt_expect_graph_lacks_op", g, op, false, false);
}

tt_status tt_expect_opaque(const tt_graph *g, const char *op)
{
    return op_expectation("tt_expect_opaque", g, op, true, true);
}

/* ------------------------------------------------------------ snapshots */

typedef struct {
    const char **at; /* line starts */
    int *len;        /* without the newline */
    int n;
} lines;

static bool split_lines(const char *s, lines *l)
{
    int cap = 1;
    for (const char *p = s; *p; p++)
        cap += *p == '\n';
    l->at = malloc(sizeof *l->at * (size_t)cap);
    l->len = malloc(sizeof *l->len * (size_t)cap);
    l->n = 0;
    if (!l->at || !l->len)
        return false;
    while (*s) {
        const char *e = strchr(s, '\n');
        int n = e ? (int)(e - s) : (int)strlen(s);
        l->at[l->n] = s;
        l->len[l->n++] = n;
        s += n + (e != NULL);
    }
    return true;
}

static bool same_line(const lines *a, int i, const lines *b, int j)
{
    return a->len[i] == b->len[j] && !memcmp(a->at[i], b->at[j], (size_t)a->len[i]);
}

/* A unified diff of a (expected) to b (actual), 3 lines of context, from
 * a longest common subsequence table; texts too long for the table get
 * their first differing line instead. The lines only one side has are
 * marked in mark_a / mark_b (NULL: not wanted). */
static void unified_diff(sbuf *out, const lines *a, const lines *b, bool *mark_a, bool *mark_b)
{
    int n = a->n, m = b->n;
    if ((int64_t)(n + 1) * (m + 1) > 4 * 1000 * 1000) {
        int i = 0;
        while (i < n && i < m && same_line(a, i, b, i))
            i++;
        if (mark_a && i < n)
            mark_a[i] = true;
        if (mark_b && i < m)
            mark_b[i] = true;
        sb_printf(out, "@@ line %d @@\n-%.*s\n+%.*s\n", i + 1, i < n ? a->len[i] : 0,
                  i < n ? a->at[i] : "", i < m ? b->len[i] : 0, i < m ? b->at[i] : "");
        return;
    }
    int *t = calloc((size_t)(n + 1) * (size_t)(m + 1), sizeof *t);
    char *op = malloc((size_t)(n + m + 1)); /* ' ', '-', '+' in order */
    int *ai = malloc(sizeof *ai * (size_t)(n + m + 1));
    if (!t || !op || !ai) {
        out->oom = true;
        goto done;
    }
#define T(i, j) t[(size_t)(i) * (size_t)(m + 1) + (size_t)(j)]
    for (int i = n - 1; i >= 0; i--)
        for (int j = m - 1; j >= 0; j--)
            T(i, j) = same_line(a, i, b, j) ? T(i + 1, j + 1) + 1
                      : T(i + 1, j) >= T(i, j + 1) ? T(i + 1, j) : T(i, j + 1);
    int k = 0, i = 0, j = 0;
    while (i < n || j < m) {
        if (i < n && j < m && same_line(a, i, b, j))
            op[k] = ' ', ai[k++] = i++, j++;
        else if (i < n && (j == m || T(i + 1, j) >= T(i, j + 1)))
            op[k] = '-', ai[k++] = i++; /* a removal before its replacement, as diff -u */
        else
            op[k] = '+', ai[k++] = j++;
    }
#undef T
    for (int x = 0; x < k; x++) {
        if (op[x] == '-' && mark_a)
            mark_a[ai[x]] = true;
        if (op[x] == '+' && mark_b)
            mark_b[ai[x]] = true;
    }
    /* hunks: changes with up to 3 lines of context around them */
    int e = 0;
    while (e < k) {
        while (e < k && op[e] == ' ')
            e++;
        if (e == k)
            break;
        int start = e - 3 < 0 ? 0 : e - 3;
        int end = e, quiet = 0;
        while (end < k && quiet < 7) {
            quiet = op[end] == ' ' ? quiet + 1 : 0;
            end++;
        }
        if (quiet > 3)
            end -= quiet - 3;
        int la = 0, lb = 0, fa = -1, fb = -1;
        for (int x = 0; x < start; x++)
            fa += op[x] != '+', fb += op[x] != '-';
        for (int x = start; x < end; x++)
            la += op[x] != '+', lb += op[x] != '-';
        sb_printf(out, "@@ -%d,%d +%d,%d @@\n", fa + 2, la, fb + 2, lb);
        for (int x = start; x < end; x++) {
            const lines *l = op[x] == '+' ? b : a;
            sb_printf(out, "%c%.*s\n", op[x], l->len[ai[x]], l->at[ai[x]]);
        }
        e = end;
    }
done:
    free(t);
    free(op);
    free(ai);
}

/* Marks, per node of g, the nodes of the text lines marked: line 0 is the
 * inputs' (def ...), then one line per other node in order. */
static bool *node_marks(const tt_graph *g, const bool *line_marks, int nlines)
{
    bool *m = calloc((size_t)(g->n ? g->n : 1), sizeof *m);
    for (int i = 0; m && i < g->n; i++) {
        int line = i < g->ninputs ? 0 : i - g->ninputs + 1;
        m[i] = line < nlines && line_marks[line];
    }
    return m;
}

/* Compares the texts; on a difference the message is the diff, and with
 * graphs given (ga expected, gb actual) and a dot_path, the DOT of both
 * with the differing nodes red is written there. */
static tt_status compare_text(const char *fn, const char *what, const char *expected,
                              const char *actual, const tt_graph *ga, const tt_graph *gb,
                              const char *dot_path)
{
    if (!strcmp(expected, actual))
        return TT_OK;
    lines a = {0}, b = {0};
    sbuf d = {0};
    bool *la = NULL, *lb = NULL;
    if (split_lines(expected, &a) && split_lines(actual, &b) &&
        (la = calloc((size_t)a.n + 1, 1)) && (lb = calloc((size_t)b.n + 1, 1))) {
        sb_printf(&d, "--- expected (%s)\n+++ actual\n", what);
        unified_diff(&d, &a, &b, la, lb);
    } else {
        d.oom = true;
    }
    if (!d.oom && ga && gb && dot_path) {
        bool *ma = node_marks(ga, la, a.n), *mb = node_marks(gb, lb, b.n);
        char *dot = ma && mb ? tt__graphs_dot(ga, ma, gb, mb, "expected and actual: the "
                                                              "differing nodes in red")
                             : NULL;
        FILE *f = dot ? fopen(dot_path, "w") : NULL;
        bool ok = f && fputs(dot, f) >= 0;
        if (f && fclose(f))
            ok = false;
        sb_printf(&d, ok ? "(both graphs, the differing nodes red: %s)\n"
                         : "(could not write %s)\n", dot_path);
        free(dot), free(ma), free(mb);
    }
    tt_status st = d.oom ? tt_error(TT_ENOMEM, "%s: out of memory", fn)
                         : tt_error(TT_EEXPECT, "%s: the graph's text differs from %s:\n%s", fn,
                                    what, d.s);
    free(d.s), free(la), free(lb);
    free(a.at), free(a.len), free(b.at), free(b.len);
    return st;
}

tt_status tt_expect_graph_text(const tt_graph *g, const char *expected, unsigned flags)
{
    if (!expected)
        return tt_error(TT_EINVAL, "tt_expect_graph_text: argument 'expected' is NULL");
    char *text = tt__graph_text(g, flags & TT_SNAPSHOT_LINES);
    if (!text)
        return tt_errcode();
    tt_status st = compare_text("tt_expect_graph_text", "the inline snapshot", expected, text,
                                NULL, NULL, NULL);
    free(text);
    return st;
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    sbuf b = {0};
    char buf[4096];
    size_t n;
    sb_printf(&b, "%s", "");
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        sb_printf(&b, "%.*s", (int)n, buf);
    bool bad = ferror(f) || b.oom;
    fclose(f);
    if (bad) {
        free(b.s);
        return NULL;
    }
    return b.s;
}

tt_status tt_expect_graph_file(const tt_graph *g, const char *path, unsigned flags)
{
    const char *fn = "tt_expect_graph_file";
    if (!path)
        return tt_error(TT_EINVAL, "%s: argument 'path' is NULL", fn);
    char *text = tt__graph_text(g, flags & TT_SNAPSHOT_LINES);
    if (!text)
        return tt_errcode();
    errno = 0;
    char *want = read_file(path);
    int err = errno;
    const char *accept = getenv("TT_EXPECT_ACCEPT");
    tt_status st = TT_OK;
    if (want && !strcmp(want, text)) {
        st = TT_OK;
    } else if (accept && !strcmp(accept, "1")) {
        FILE *f = fopen(path, "wb");
        bool ok = f && fputs(text, f) >= 0;
        if (f && fclose(f))
            ok = false;
        st = ok ? TT_OK : tt_error(TT_EINVAL, "%s: cannot write %s: %s", fn, path, strerror(errno));
        if (ok)
            fprintf(stderr, "%s: %s %s (TT_EXPECT_ACCEPT=1)\n", fn, want ? "updated" : "wrote",
                    path);
    } else if (!want) {
        st = tt_error(TT_EEXPECT, "%s: cannot read the snapshot %s (%s); run with "
                                  "TT_EXPECT_ACCEPT=1 to write it from this graph",
                      fn, path, err == ENOENT ? "it does not exist" : strerror(err));
    } else {
        char what[512];
        snprintf(what, sizeof what, "%s; TT_EXPECT_ACCEPT=1 rewrites it", path);
        st = compare_text(fn, what, want, text, NULL, NULL, NULL);
    }
    free(want);
    free(text);
    return st;
}

tt_status tt_expect_graphs_equal(const tt_graph *expected, const tt_graph *actual, unsigned flags,
                                 const char *dot_path)
{
    if (!expected || !actual)
        return tt_error(TT_EINVAL, "tt_expect_graphs_equal: expected two graphs");
    char *want = tt__graph_text(expected, flags & TT_SNAPSHOT_LINES);
    char *text = want ? tt__graph_text(actual, flags & TT_SNAPSHOT_LINES) : NULL;
    tt_status st = text ? compare_text("tt_expect_graphs_equal", "the expected graph", want, text,
                                       expected, actual, dot_path)
                        : tt_errcode();
    free(want);
    free(text);
    return st;
}
