/* The hash log (tt_testing.h): a line per eager op and per compiled
 * plan step with a hash of its value, so that two runs made apart (two
 * thread counts, two machines, before and after a change) can be compared
 * node by node afterwards and the first divergence named. */
#include "tt_testing.h"

#include "print_impl.h"
#include "profile_impl.h"
#include "trace_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    tt_mode mode;
    tt__node_watch watch;
    tt__node_watch *saved_watch;
    FILE *f;
    char *path;
    int64_t seq;
    bool busy; /* hashing: the copies it makes are not the program's ops */
} hash_log;

static _Thread_local hash_log *logging;

/* FNV-1a over the elements' bytes in order: a layout change does not
 * change it, a bit of a value does. NULL value: 0; fake: 1. */
static uint64_t value_hash(const tt_tensor *t)
{
    if (!t)
        return 0;
    if (tt_is_fake(t))
        return 1;
    tt_tensor *c = tt_contiguous(t);
    const unsigned char *p = c ? tt_data(c) : NULL;
    uint64_t h = 1469598103934665603ull;
    size_t n = p ? (size_t)tt_numel(c) * tt_dtype_size(tt_dtype_of(c)) : 0;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    tt_release(c);
    return p ? h : 2;
}

/* One line: seq, kind, op, node, file:line, then each value's dtype,
 * sizes and hash. */
static void write_line(hash_log *l, const char *kind, const char *op, const char *node,
                       tt_srcloc loc, tt_tensor *const *vals, int nvals)
{
    /* The copies hashing makes are the log's, not fn's or autograd's. */
    l->busy = true;
    tt_scope_pause();
    tt_no_grad_begin();
    fprintf(l->f, "%lld\t%s\t%s\t%s\t", (long long)l->seq++, kind, op, node ? node : "-");
    if (loc.file)
        fprintf(l->f, "%s:%d", loc_basename(loc.file), loc.line);
    else
        fputc('-', l->f);
    for (int j = 0; j < nvals; j++) {
        char shape[160];
        const tt_tensor *t = vals[j];
        fprintf(l->f, "\t%s%s %016llx", t ? tt_dtype_name(tt_dtype_of(t)) : "none",
                t ? tt_shape_str(t, shape, sizeof shape) : "",
                (unsigned long long)value_hash(t));
    }
    fputc('\n', l->f);
    tt_no_grad_end();
    tt_scope_resume();
    l->busy = false;
    tt_clear_error(); /* a value that could not be read hashes as 2 */
}

static tt_status log_call(tt_mode *m, const tt_op *op, const tt_value *args, int nargs,
                          tt_value *outs, int nouts)
{
    hash_log *l = (hash_log *)m;
    tt_status st = tt_op_redispatch(op, args, nargs, outs, nouts);
    if (st || l->busy || tt__plan_running)
        return st;
    tt_tensor *vals[TT_MAX_RETURNS_PUBLIC];
    int n = 0;
    for (int j = 0; j < nouts && n < TT_MAX_RETURNS_PUBLIC; j++)
        if (outs[j].kind == TT_V_TENSOR)
            vals[n++] = outs[j].u.t;
        else if (outs[j].kind == TT_V_TENSORS)
            for (int e = 0; e < outs[j].n && n < TT_MAX_RETURNS_PUBLIC; e++)
                vals[n++] = outs[j].u.tensors[e];
    /* A traced call's values are fake: its graph's steps are logged when
     * they run. */
    for (int j = 0; j < n; j++)
        if (vals[j] && tt_is_fake(vals[j]))
            return st;
    write_line(l, "op", tt_op_name(op), NULL, tt_callsite(), vals, n);
    return st;
}

static void log_step(tt__node_watch *w, const gnode *n, tt_tensor *const *vals, int nvals,
                     bool in_plan)
{
    hash_log *l = (hash_log *)((char *)w - offsetof(hash_log, watch));
    if (in_plan)
        write_line(l, "step", n->op ? tt_op_name(n->op) : "?", n->name, n->loc, vals, nvals);
    if (l->saved_watch)
        l->saved_watch->seen(l->saved_watch, n, vals, nvals, in_plan);
}

tt_status tt_hash_log_begin(const char *path)
{
    if (!path)
        return tt_error(TT_EINVAL, "tt_hash_log_begin: argument 'path' is NULL");
    if (logging)
        return tt_error(TT_EINVAL, "tt_hash_log_begin: this thread already writes a hash log "
                                   "(to %s)", logging->path);
    hash_log *l = calloc(1, sizeof *l);
    if (!l || !(l->path = strdup(path))) {
        free(l);
        return tt_error(TT_ENOMEM, "tt_hash_log_begin: out of memory");
    }
    if (!(l->f = fopen(path, "w"))) {
        tt_status st = tt_error(TT_EINVAL, "tt_hash_log_begin: cannot write \"%s\": %s", path,
                                strerror(errno));
        free(l->path);
        free(l);
        return st;
    }
    l->mode.call = log_call;
    tt_status st = tt_mode_push(&l->mode);
    if (st) {
        fclose(l->f);
        free(l->path);
        free(l);
        return tt_error(st, "tt_hash_log_begin: %s", tt_errmsg());
    }
    fprintf(l->f, "# tensortrace hash log 1: seq, kind, op, node, source, then per value "
                  "its dtype and sizes and a hash of its elements\n");
    l->watch.seen = log_step;
    l->saved_watch = tt__watch;
    tt__watch = &l->watch;
    logging = l;
    return TT_OK;
}

tt_status tt_hash_log_end(void)
{
    hash_log *l = logging;
    if (!l)
        return tt_error(TT_EINVAL, "tt_hash_log_end: this thread writes no hash log (no "
                                   "tt_hash_log_begin)");
    if (tt_mode_current() != &l->mode)
        return tt_error(TT_EINVAL, "tt_hash_log_end: a mode pushed after tt_hash_log_begin is "
                                   "still on (pop it first)");
    tt_mode_pop();
    tt__watch = l->saved_watch;
    logging = NULL;
    bool bad = ferror(l->f);
    bool closed = fclose(l->f) == 0;
    tt_status st = bad || !closed ? tt_error(TT_EINVAL, "tt_hash_log_end: writing \"%s\" "
                                                        "failed: %s", l->path, strerror(errno))
                                  : TT_OK;
    free(l->path);
    free(l);
    return st;
}

/* ---------------------------------------------------------- comparing */

/* The fields of a log line, split in place at its tabs. */
enum { F_SEQ, F_KIND, F_OP, F_NODE, F_SOURCE, F_VALUES };

static int split(char *line, char **f)
{
    line[strcspn(line, "\n")] = '\0';
    char *p = line;
    for (int n = 0; n < F_VALUES; n++) {
        f[n] = p;
        char *tab = strchr(p, '\t');
        if (!tab)
            return n + 1;
        *tab = '\0';
        p = tab + 1;
    }
    f[F_VALUES] = p; /* the values stay one field */
    return F_VALUES + 1;
}

/* The next line that is not a comment, split: 1, or 0 at the end, or -1
 * (error set) for a line that is not an entry. */
static int next_entry(FILE *f, const char *path, char *line, size_t cap, char **fields,
                      int64_t *lineno)
{
    while (fgets(line, (int)cap, f)) {
        ++*lineno;
        if (line[0] == '#')
            continue;
        if (split(line, fields) == F_VALUES + 1)
            return 1;
        tt_error(TT_EINVAL, "tt_hash_log_compare: line %lld of \"%s\" is not a hash log entry "
                            "(cut short, or edited?)", (long long)*lineno, path);
        return -1;
    }
    return 0;
}

static FILE *open_log(const char *path, const char *which, tt_status *st)
{
    char head[64] = "";
    FILE *f = path ? fopen(path, "r") : NULL;
    if (!path)
        *st = tt_error(TT_EINVAL, "tt_hash_log_compare: argument '%s' is NULL", which);
    else if (!f)
        *st = tt_error(TT_EINVAL, "tt_hash_log_compare: cannot read \"%s\": %s", path,
                       strerror(errno));
    else if (!fgets(head, sizeof head, f) ||
             strncmp(head, "# tensortrace hash log 1:", 25) != 0) {
        *st = tt_error(TT_EINVAL, "tt_hash_log_compare: \"%s\" is not a tensortrace hash log "
                                  "(its first line should start \"# tensortrace hash log 1:\")",
                       path);
        fclose(f);
        f = NULL;
    }
    for (int c = 0; f && !strchr(head, '\n') && (c = fgetc(f)) != EOF && c != '\n';)
        ; /* the rest of the header line */
    return f;
}

tt_status tt_hash_log_compare(const char *a, const char *b)
{
    tt_status st = TT_OK;
    FILE *fa = open_log(a, "a", &st), *fb = st ? NULL : open_log(b, "b", &st);
    if (st) {
        if (fa)
            fclose(fa);
        return st;
    }
    enum { LINE = 8192 };
    char *la = malloc(LINE), *lb = malloc(LINE);
    char *x[F_VALUES + 1] = {0}, *y[F_VALUES + 1] = {0};
    int64_t na = 1, nb = 1, entries = 0; /* the header was line 1 */
    while (!st && la && lb) {
        int ga = next_entry(fa, a, la, LINE, x, &na), gb = next_entry(fb, b, lb, LINE, y, &nb);
        if (ga < 0 || gb < 0) {
            st = tt_errcode();
            break;
        }
        if (!ga && !gb)
            break;
        if (ga != gb) {
            st = tt_error(TT_EEXPECT, "tt_hash_log_compare: %s stops after %lld entr%s while "
                                      "%s goes on with %s at %s (%s line %lld)",
                          ga ? b : a, (long long)entries, entries == 1 ? "y" : "ies", ga ? a : b,
                          ga ? x[F_OP] : y[F_OP],
                          ga ? x[F_SOURCE] : y[F_SOURCE], ga ? a : b,
                          (long long)(ga ? na : nb));
            break;
        }
        entries++;
        if (strcmp(x[F_OP], y[F_OP]) != 0 || strcmp(x[F_KIND], y[F_KIND]) != 0)
            st = tt_error(TT_EEXPECT, "tt_hash_log_compare: entry %lld: the runs call different "
                                      "ops: %s at %s in %s (line %lld), %s at %s in %s (line "
                                      "%lld)", (long long)entries - 1, x[F_OP], x[F_SOURCE], a,
                          (long long)na, y[F_OP], y[F_SOURCE], b, (long long)nb);
        else if (strcmp(x[F_VALUES], y[F_VALUES]) != 0)
            st = tt_error(TT_EEXPECT, "tt_hash_log_compare: entry %lld is the first divergence: "
                                      "%s%s%s at %s gives %s in %s (line %lld) and %s in %s "
                                      "(line %lld)", (long long)entries - 1, x[F_OP],
                          strcmp(x[F_NODE], "-") ? ", node " : "",
                          strcmp(x[F_NODE], "-") ? x[F_NODE] : "", x[F_SOURCE], x[F_VALUES], a,
                          (long long)na, y[F_VALUES], b, (long long)nb);
    }
    if (!la || !lb)
        st = tt_error(TT_ENOMEM, "tt_hash_log_compare: out of memory");
    free(la), free(lb);
    fclose(fa), fclose(fb);
    return st;
}

/* --------------------------------------------------- TT_HASH_LOG=file */

static void hash_log_at_exit(void)
{
    if (logging && tt_hash_log_end())
        fprintf(stderr, "tensortrace: TT_HASH_LOG: %s\n", tt_errmsg());
}

/* The thread that loads the library logs until exit. */
__attribute__((constructor)) static void hash_log_from_environment(void)
{
    const char *path = getenv("TT_HASH_LOG");
    if (!path || !*path)
        return;
    if (tt_hash_log_begin(path))
        fprintf(stderr, "tensortrace: TT_HASH_LOG: %s\n", tt_errmsg());
    else
        atexit(hash_log_at_exit);
}
