/* tt, the command-line tool: loads a model written in C from a shared
 * library and traces it (tt trace), explains its graph breaks (tt
 * explain), profiles it on real inputs (tt profile), compares its compiled
 * result with eager or two hash logs (tt diff), opchecks the custom ops it
 * registers (tt opcheck) and lists ops with their schemas (tt ops).
 * `tt --help` describes it all; the parsing lives in tt_cli.c.
 *
 * Exit status: 0 on success, 1 when the library's work failed (a trace, a
 * check, a profiled run, the init function, writing a picture) or tt diff
 * found a difference (as diff(1) exits 1), 2 on a usage error (a bad
 * option or input spec, a library, symbol or op that is not there).
 * Every error is printed to stderr as "tt: ..."; a usage error is one
 * line.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "npy.h"
#include "tt_cli.h"
#include "tt_json.h"

#ifndef TT_VERSION
#define TT_VERSION "unknown"
#endif

enum { EXIT_FAIL = 1, EXIT_USAGE = 2 };

/* graphviz leaks inside its layout whatever the caller does; in an ASan
 * build --svg and --png must not turn the exit status into a leak report,
 * nor print the suppressions used. */
#define LSAN_GRAPHVIZ_OPTIONS "fast_unwind_on_malloc=0:print_suppressions=0"
#include "lsan_graphviz.h"

typedef tt_status (*init_fn)(void);
typedef void (*fini_fn)(void);

/* A loaded model library. */
typedef struct {
    void *handle;
    const char *path;
} model;

static int usage_error(const char *fmt, const char *a, const char *b)
{
    fprintf(stderr, "tt: ");
    fprintf(stderr, fmt, a, b);
    fputc('\n', stderr);
    return EXIT_USAGE;
}

/* The library's own message (which may span lines, as a graph-break
 * report does). */
static int lib_failure(const char *what)
{
    if (what)
        fprintf(stderr, "tt: %s: %s\n", what, tt_errmsg());
    else
        fprintf(stderr, "tt: %s\n", tt_errmsg());
    return EXIT_FAIL;
}

/* dlsym for a function. POSIX guarantees the object-to-function pointer
 * conversion works; the memcpy keeps ISO C's rules. NULL when absent. */
static void *find_symbol(model *m, const char *name)
{
    dlerror();
    return dlsym(m->handle, name);
}

/* Loads --lib and runs its init function. Returns 0 or an exit status.
 * A bare file name that exists here is loaded from here: dlopen would
 * otherwise search only the library path, which surprises in a build
 * folder. */
static int load_model(const tt_cli_args *a, model *m)
{
    char local[4096];
    const char *path = a->lib;
    struct stat st;
    if (!strchr(path, '/') && stat(path, &st) == 0 &&
        (size_t)snprintf(local, sizeof local, "./%s", path) < sizeof local)
        path = local;
#ifdef TT_MODEL_DIR
    /* Then the model libraries installed with tt (libttexample.so), so
     * the README's commands work outside the build tree. */
    else if (!strchr(path, '/') &&
             (size_t)snprintf(local, sizeof local, "%s/%s", TT_MODEL_DIR, path) < sizeof local &&
             stat(local, &st) == 0)
        path = local;
#endif
    m->path = a->lib;
    m->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!m->handle) {
        const char *why = dlerror();
        return usage_error("cannot load --lib '%s': %s", a->lib, why ? why : "dlopen failed");
    }
    const char *name = a->init ? a->init : "tt_model_init";
    void *sym = find_symbol(m, name);
    if (!sym) {
        if (!a->init)
            return 0; /* the default init is optional */
        return usage_error("--init: %s exports no function '%s'", a->lib, name);
    }
    init_fn init;
    memcpy(&init, &sym, sizeof init);
    tt_clear_error();
    tt_status s = init();
    if (s) {
        if (tt_errcode() == TT_OK)
            tt_error(s, "returned %s without a message", tt_status_name(s));
        fprintf(stderr, "tt: %s() of %s failed: %s\n", name, a->lib, tt_errmsg());
        return EXIT_FAIL;
    }
    return 0;
}

/* Calls the library's tt_model_fini (when it exports one, so it can free
 * what its init registered) and unloads it. Everything that refers to its
 * ops and kernels must be gone by then. */
static void unload_model(model *m)
{
    if (!m->handle)
        return;
    void *sym = find_symbol(m, "tt_model_fini");
    if (sym) {
        fini_fn fini;
        memcpy(&fini, &sym, sizeof fini);
        fini();
    }
    dlclose(m->handle);
    m->handle = NULL;
}

/* The library's table of model functions (tt_model.h), or NULL with a
 * usage error printed: without a table tt cannot know which symbols are
 * model functions, and calling anything else through the traced-function
 * signature would crash. */
static const tt_model_fn *model_table(model *m, int *rc)
{
    const tt_model_fn *t = find_symbol(m, TT_MODEL_TABLE);
    *rc = 0;
    if (!t)
        *rc = usage_error("%s declares no model functions: it exports no table '%s' "
                          "(see <tt_model.h>)", m->path, TT_MODEL_TABLE);
    return t;
}

/* The table's rows, at most this many: a table without its NULL row would
 * otherwise be read past its end. */
#define MAX_MODEL_FNS 4096

/* Appends the names of table t to buf: "a, b, c". */
static void fn_names(const tt_model_fn *t, char *buf, size_t n)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; t[i].name && i < MAX_MODEL_FNS && len < n; i++)
        len += (size_t)snprintf(buf + len, n - len, "%s%s", i ? ", " : "", t[i].name);
}

/* The row of --fn in the model table; a name the table does not declare,
 * or an --input count that differs from the declared one, is a usage
 * error listing what is there. */
static int find_fn(model *m, const tt_cli_args *a, const tt_model_fn **out)
{
    int rc;
    const tt_model_fn *t = model_table(m, &rc);
    if (!t)
        return rc;
    for (int i = 0; t[i].name && i < MAX_MODEL_FNS; i++) {
        if (strcmp(t[i].name, a->fn) != 0)
            continue;
        if (!t[i].fn) {
            fprintf(stderr, "tt: %s: model function '%s' has no function pointer in %s\n",
                    m->path, t[i].name, TT_MODEL_TABLE);
            return EXIT_FAIL;
        }
        if (t[i].ninputs != a->ninputs) {
            fprintf(stderr, "tt: --fn %s takes %d input%s (%s), got %d --input\n", t[i].name,
                    t[i].ninputs, t[i].ninputs == 1 ? "" : "s",
                    t[i].inputs ? t[i].inputs : "see tt list", a->ninputs);
            return EXIT_USAGE;
        }
        *out = &t[i];
        return 0;
    }
    char names[2048];
    fn_names(t, names, sizeof names);
    fprintf(stderr, "tt: --fn: %s declares no model function '%s' (it has: %s)\n", m->path,
            a->fn, names[0] ? names : "none");
    return EXIT_USAGE;
}

/* tt list: the model table, one function per line. */
static int cmd_list(const tt_cli_args *a, model *m)
{
    int rc;
    const tt_model_fn *t = model_table(m, &rc);
    if (!t)
        return rc;
    int n = 0;
    while (t[n].name && n < MAX_MODEL_FNS)
        n++;
    if (a->json) {
        json_t *fns = json_array();
        for (int i = 0; fns && i < n; i++)
            json_array_append_new(fns, tt_json_model_fn(&t[i]));
        json_t *doc = json_pack("{s:s, s:s, s:o?}", "command", "list", "library", m->path,
                                "functions", fns);
        if (tt_json_print(doc, stdout)) {
            fprintf(stderr, "tt: writing the JSON document failed\n");
            return EXIT_FAIL;
        }
        return 0;
    }
    printf("# %d model function%s in %s\n", n, n == 1 ? "" : "s", m->path);
    for (int i = 0; i < n; i++) {
        int nout = t[i].noutputs ? t[i].noutputs : 1;
        printf("%s(", t[i].name);
        if (t[i].inputs) /* the declared names, else the graph's: in0, in1... */
            printf("%s", t[i].inputs);
        for (int k = 0; !t[i].inputs && k < t[i].ninputs; k++)
            printf("%sin%d", k ? ", " : "", k);
        printf(") -> %d output%s\n    %s\n", nout, nout == 1 ? "" : "s",
               t[i].about ? t[i].about : "");
    }
    return 0;
}

/* The graph inputs' names the model table declares ("x, w1, b1") split
 * into names[] (pointers into buf); an input the list does not name stays
 * NULL (in<i>). */
static void input_names(const tt_model_fn *row, char *buf, size_t n, const char **names)
{
    for (int i = 0; i < row->ninputs && i < TT_CLI_MAX_INPUTS; i++)
        names[i] = NULL;
    if (!row->inputs)
        return;
    snprintf(buf, n, "%s", row->inputs);
    char *p = buf;
    for (int i = 0; i < row->ninputs && i < TT_CLI_MAX_INPUTS && *p; i++) {
        p += strspn(p, " \t");
        size_t len = strcspn(p, ",");
        char *next = p[len] ? p + len + 1 : p + len;
        while (len && (p[len - 1] == ' ' || p[len - 1] == '\t'))
            len--;
        p[len] = '\0';
        names[i] = *p ? p : NULL;
        p = next;
    }
}

/* The inputs of a trace or explain, in --input order. */
static int make_inputs(const tt_cli_args *a, bool fake, tt_tensor **ins)
{
    tt_manual_seed(a->seed);
    for (int i = 0; i < a->ninputs; i++) {
        ins[i] = tt_cli_spec_tensor(&a->inputs[i], fake);
        if (!ins[i]) {
            fprintf(stderr, "tt: --input '%s': %s\n", a->inputs[i].text, tt_errmsg());
            return EXIT_FAIL;
        }
    }
    return 0;
}

/* Writes DOT text made by to_dot into path. */
static int write_text(const char *path, char *text)
{
    if (!text)
        return lib_failure(NULL);
    FILE *f = fopen(path, "w");
    int rc = 0;
    if (!f || fputs(text, f) == EOF) {
        fprintf(stderr, "tt: cannot write '%s': %s\n", path, strerror(errno));
        rc = EXIT_FAIL;
    }
    if (f && fclose(f) != 0 && !rc) {
        fprintf(stderr, "tt: cannot write '%s': %s\n", path, strerror(errno));
        rc = EXIT_FAIL;
    }
    free(text);
    return rc;
}

/* --dot, --svg, --png of a graph (g) or of an explain result (e). */
static int write_pictures(const tt_cli_args *a, const tt_graph *g, const tt_explain *e)
{
    int rc = 0;
    if (a->dot)
        rc = write_text(a->dot, g ? tt_graph_to_dot(g) : tt_explain_to_dot(e));
    const char *paths[2] = {a->svg, a->png}, *formats[2] = {"svg", "png"};
    for (int k = 0; k < 2 && !rc; k++) {
        if (!paths[k])
            continue;
        tt_status s = g ? tt_graph_render(g, formats[k], paths[k])
                        : tt_explain_render(e, formats[k], paths[k]);
        if (s)
            rc = lib_failure(paths[k]);
    }
    return rc;
}

static const char *mode_name(tt_trace_mode m)
{
    return m == TT_TRACE_REAL ? "real" : m == TT_TRACE_SYMBOLIC ? "symbolic" : "fake";
}

/* mkdir DIR unless it is there already. */
static int make_dir(const char *dir)
{
    struct stat st;
    if (mkdir(dir, 0777) == 0 || (errno == EEXIST && stat(dir, &st) == 0 && S_ISDIR(st.st_mode)))
        return 0;
    fprintf(stderr, "tt: --save: cannot make the folder '%s': %s\n", dir,
            errno == EEXIST ? "a file of that name is in the way" : strerror(errno));
    return EXIT_FAIL;
}

/* --print and --save of a real trace: the graph run on the same inputs
 * gives the outputs (the trace computed them once already; running the
 * recorded graph again gives the same values without keeping them
 * around). Saved paths are added to `saved` (a JSON array) when given. */
static int real_outputs(const tt_cli_args *a, const tt_graph *g, tt_tensor **ins, int nout,
                        json_t *saved)
{
    tt_tensor *outs[TT_CLI_MAX_INPUTS] = {0};
    int rc = 0;
    if (tt_graph_run(g, a->ninputs, ins, nout, outs))
        return lib_failure("running the graph for --print/--save");
    if (a->save)
        rc = make_dir(a->save);
    for (int i = 0; i < nout && !rc; i++) {
        if (a->print && !a->json) {
            printf("out%d = ", i);
            fflush(stdout);
            tt_print(outs[i]);
        }
        if (!a->save)
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/out%d.npy", a->save, i);
        if (tt_npy_write(outs[i], path))
            rc = lib_failure(NULL);
        else if (saved)
            json_array_append_new(saved, json_string(path));
    }
    for (int i = 0; i < nout; i++)
        tt_release(outs[i]);
    return rc;
}

static int cmd_trace(const tt_cli_args *a, model *m)
{
    const tt_model_fn *row = NULL;
    tt_tensor *ins[TT_CLI_MAX_INPUTS] = {0};
    tt_graph *g = NULL;
    tt_explain *e = NULL;
    json_t *doc = NULL;
    bool explain = a->cmd == TT_CLI_EXPLAIN;
    int rc = find_fn(m, a, &row);
    if (!rc)
        rc = make_inputs(a, !explain && a->mode != TT_TRACE_REAL, ins);
    if (rc)
        goto out;
    int nout = a->nout ? a->nout : row->noutputs ? row->noutputs : 1;
    /* The graph's inputs are named as the model table names them. */
    char names_buf[4096];
    const char *names[TT_CLI_MAX_INPUTS];
    input_names(row, names_buf, sizeof names_buf, names);
    tt_trace_opts opts = {.mode = a->mode, .fullgraph = a->fullgraph, .nout = nout,
                          .name = a->fn, .input_names = names};
    tt_fn fn = row->fn;
    if (!explain) {
        g = tt_trace(fn, a->ninputs, ins, &opts);
        if (!g || (!a->json && tt_graph_print(g, stdout))) {
            rc = lib_failure(NULL);
            if (!g && tt_errcode() == TT_EGRAPHBREAK && !a->fullgraph)
                fprintf(stderr, "tt: tt explain with the same options splits the trace at "
                                "each break and lists them\n");
            goto out;
        }
        json_t *saved = a->json && a->save ? json_array() : NULL;
        if (a->json)
            doc = json_pack("{s:s, s:s, s:s, s:o?}", "command", "trace", "function", a->fn,
                            "mode", mode_name(a->mode), "graph", tt_json_graph(g));
        if (a->print || a->save)
            rc = real_outputs(a, g, ins, nout, saved);
        if (saved)
            json_object_set_new(doc, "saved", saved);
        if (!rc)
            rc = write_pictures(a, g, NULL);
        goto out;
    }
    e = tt_explain_run(fn, a->ninputs, ins, &opts);
    if (!e) {
        rc = lib_failure(NULL);
        goto out;
    }
    if (a->json) {
        doc = tt_json_explain(e);
        json_object_set_new(doc, "command", json_string("explain"));
        json_object_set_new(doc, "function", json_string(a->fn));
    } else {
        char *text = tt_explain_to_text(e);
        if (!text) {
            rc = lib_failure(NULL);
            goto out;
        }
        fputs(text, stdout);
        free(text);
        for (int i = 0; i < tt_explain_graph_count(e) && !rc; i++) {
            printf("\n");
            if (tt_graph_print(tt_explain_graph(e, i), stdout))
                rc = lib_failure(NULL);
        }
    }
    if (!rc)
        rc = write_pictures(a, NULL, e);
out:
    if (a->json && !rc && tt_json_print(doc, stdout)) {
        fprintf(stderr, "tt: writing the JSON document failed\n");
        rc = EXIT_FAIL;
    } else if (a->json && rc) {
        json_decref(doc);
    }
    tt_explain_free(e);
    tt_graph_free(g);
    for (int i = 0; i < a->ninputs; i++)
        tt_release(ins[i]);
    return rc;
}

/* One call of the model function, eager or compiled; its outputs are
 * released at once, so every run starts from the same live memory and the
 * profile's live bytes are the function's own. */
static int run_once(const tt_cli_args *a, const tt_model_fn *row, tt_compiled *c,
                    tt_tensor **ins, int nout, const char *which, int k)
{
    tt_tensor *outs[TT_CLI_MAX_INPUTS] = {0};
    tt_clear_error();
    tt_status s = c ? tt_compiled_call(c, ins, outs) : row->fn(ins, a->ninputs, outs, nout, NULL);
    /* A model function that fails without saying why still gets a message. */
    if (s && tt_errcode() == TT_OK)
        tt_error(s, "returned %s without a message", tt_status_name(s));
    if (!s)
        for (int i = 0; i < nout && !s; i++)
            if (!outs[i])
                s = tt_error(TT_EINVAL, "returned success without writing output %d of %d", i,
                             nout);
    for (int i = 0; i < nout; i++)
        tt_release(outs[i]);
    if (!s)
        return 0;
    char what[160];
    snprintf(what, sizeof what, "%s run %d of --fn %s%s", which, k + 1, a->fn,
             c ? " (compiled)" : "");
    return lib_failure(what);
}

/* Prints one JSON document: the command's fields (head) first, then the
 * result's (doc); takes both. EXIT_FAIL when it cannot. */
static int print_headed_json(json_t *head, json_t *doc)
{
    if (doc && head && json_object_update(head, doc) == 0) {
        json_decref(doc);
        doc = head;
    } else {
        json_decref(doc);
        json_decref(head);
        doc = NULL;
    }
    if (tt_json_print(doc, stdout)) {
        fprintf(stderr, "tt: writing the JSON document failed\n");
        return EXIT_FAIL;
    }
    return 0;
}

/* tt profile: warm-up runs, then the profiled ones, then the table (or
 * the JSON document) and the timelines asked for. */
static int cmd_profile(const tt_cli_args *a, model *m)
{
    const tt_model_fn *row = NULL;
    tt_tensor *ins[TT_CLI_MAX_INPUTS] = {0};
    tt_compiled *c = NULL;
    tt_profile *p = NULL;
    int rc = find_fn(m, a, &row);
    if (!rc)
        rc = make_inputs(a, false, ins);
    if (rc)
        goto out;
    int nout = a->nout ? a->nout : row->noutputs ? row->noutputs : 1;
    if (a->compile) {
        char names_buf[4096];
        const char *names[TT_CLI_MAX_INPUTS];
        input_names(row, names_buf, sizeof names_buf, names);
        tt_trace_opts opts = {.nout = nout, .name = a->fn, .input_names = names};
        c = tt_compile(row->fn, a->ninputs, nout, &opts);
        if (!c) {
            rc = lib_failure("--compile");
            goto out;
        }
    }
    for (int k = 0; k < a->warmup && !rc; k++)
        rc = run_once(a, row, c, ins, nout, "warm-up", k);
    if (rc)
        goto out;
    if (tt_profile_begin()) {
        rc = lib_failure("starting the profiler");
        if (getenv("TT_PROFILE"))
            fprintf(stderr, "tt: TT_PROFILE in the environment profiles the whole process "
                            "already; unset it for tt profile\n");
        goto out;
    }
    for (int k = 0; k < a->runs && !rc; k++)
        rc = run_once(a, row, c, ins, nout, "profiled", k);
    /* Ended whatever happened: the profiler is a mode of this thread. */
    p = tt_profile_end();
    if (rc)
        goto out;
    if (!p) {
        rc = lib_failure("stopping the profiler");
        goto out;
    }
    if (a->json) {
        json_t *doc = tt_json_profile(p);
        json_t *head = json_pack("{s:s, s:s, s:b, s:i, s:i}", "command", "profile", "function",
                                 a->fn, "compiled", a->compile, "warmup", a->warmup, "runs",
                                 a->runs);
        if ((rc = print_headed_json(head, doc)) != 0)
            goto out;
    } else {
        char *table = tt_profile_table(p, a->rows);
        if (!table) {
            rc = lib_failure("the profile's table");
            goto out;
        }
        fputs(table, stdout);
        free(table);
    }
    if (a->chrome && tt_profile_write_chrome(p, a->chrome))
        rc = lib_failure(a->chrome);
    if (!rc && a->svg && tt_profile_write_svg(p, a->svg))
        rc = lib_failure(a->svg);
out:
    tt_profile_free(p);
    tt_compiled_free(c);
    for (int i = 0; i < a->ninputs; i++)
        tt_release(ins[i]);
    return rc;
}

/* tt diff A.log B.log: tt_hash_log_compare. The library's messages name
 * the function; on the command line the user called none. */
static const char *without_prefix(const char *msg)
{
    static const char prefix[] = "tt_hash_log_compare: ";
    return strncmp(msg, prefix, sizeof prefix - 1) ? msg : msg + sizeof prefix - 1;
}

static int diff_logs(const tt_cli_args *a)
{
    tt_clear_error();
    tt_status s = tt_hash_log_compare(a->logs[0], a->logs[1]);
    if (s && s != TT_EEXPECT) {
        fprintf(stderr, "tt: %s\n", without_prefix(tt_errmsg()));
        return EXIT_FAIL;
    }
    const char *divergence = s ? without_prefix(tt_errmsg()) : NULL;
    if (a->json) {
        json_t *doc = json_pack("{s:s, s:s, s:s, s:b, s:o}", "command", "diff", "a", a->logs[0],
                                "b", a->logs[1], "agree", !s,
                                "divergence", s ? json_string(divergence) : json_null());
        if (tt_json_print(doc, stdout)) {
            fprintf(stderr, "tt: writing the JSON document failed\n");
            return EXIT_FAIL;
        }
    } else if (s) {
        printf("%s\n", divergence);
    } else {
        printf("the logs agree\n");
    }
    return s ? EXIT_FAIL : 0;
}

/* A difference as three lines, what, where it starts and which pass, so a
 * script can grep each (tt_expect_compiled_matches_eager says the same in
 * one sentence). */
static void print_difference(const tt_compare_report *r)
{
    printf("compiled differs from eager: %s\n", r->what);
    if (r->node[0])
        printf("first differing node: %s (%s%s%s), largest difference %.3g\n", r->node,
               r->node_op, r->node_where[0] ? " at " : "", r->node_where, r->node_max_diff);
    else
        printf("first differing node: none found (no node before the outputs differs, or the "
               "runs could not be matched node by node)\n");
    if (r->pass) {
        /* TT_PASS_FUSE for "fuse": the enum spells each pass so. */
        char macro[32] = "TT_PASS_";
        size_t k = strlen(macro);
        for (const char *p = tt_pass_name(r->pass); *p && k + 1 < sizeof macro; p++)
            macro[k++] = (char)(*p >= 'a' && *p <= 'z' ? *p - 'a' + 'A' : *p);
        macro[k] = '\0';
        printf("with the pass '%s' off (%s) it agrees: that pass makes the difference\n",
               tt_pass_name(r->pass), macro);
    } else if (r->without_passes) {
        printf("it differs with every pass off too: the traced graph computes another result "
               "(a value the trace froze, a fake kernel that disagrees with its kernel)\n");
    } else {
        printf("no single pass off makes it agree\n");
    }
}

/* tt diff: the function eagerly and compiled on the same inputs, or two
 * hash logs. Exit status 1 when they differ. */
static int cmd_diff(const tt_cli_args *a, model *m)
{
    if (a->nlogs == 2)
        return diff_logs(a);
    const tt_model_fn *row = NULL;
    tt_tensor *ins[TT_CLI_MAX_INPUTS] = {0};
    int rc = find_fn(m, a, &row);
    if (!rc)
        rc = make_inputs(a, false, ins);
    if (rc)
        goto out;
    int nout = a->nout ? a->nout : row->noutputs ? row->noutputs : 1;
    char names_buf[4096];
    const char *names[TT_CLI_MAX_INPUTS];
    input_names(row, names_buf, sizeof names_buf, names);
    tt_trace_opts opts = {.mode = a->mode, .nout = nout, .name = a->fn, .input_names = names};
    tt_compare_report r;
    tt_clear_error();
    if (tt_compare_run(row->fn, a->ninputs, ins, nout, &opts, a->rtol, a->atol, &r)) {
        char what[160];
        snprintf(what, sizeof what, "comparing --fn %s compiled with eager", a->fn);
        rc = lib_failure(what);
        goto out;
    }
    if (a->json) {
        json_t *doc = tt_json_compare(&r);
        json_t *head = json_pack("{s:s, s:s, s:s, s:i, s:f, s:f}", "command", "diff", "function",
                                 a->fn, "mode", mode_name(a->mode), "outputs", nout, "rtol",
                                 a->rtol, "atol", a->atol);
        if ((rc = print_headed_json(head, doc)) != 0)
            goto out;
    } else if (r.differs) {
        print_difference(&r);
    } else {
        printf("compiled matches eager: %d output%s within rtol %g, atol %g\n", nout,
               nout == 1 ? "" : "s", a->rtol, a->atol);
    }
    if (r.differs)
        rc = EXIT_FAIL;
out:
    for (int i = 0; i < a->ninputs; i++)
        tt_release(ins[i]);
    return rc;
}

typedef struct {
    const char *base; /* "tt::add" */
    size_t len;
    char list[2048];
    int count;
} overloads;

static void collect_overload(const tt_op *op, void *ud)
{
    overloads *o = ud;
    const char *name = tt_op_name(op);
    if (strncmp(name, o->base, o->len) != 0 || name[o->len] != '.')
        return;
    size_t used = strlen(o->list);
    snprintf(o->list + used, sizeof o->list - used, "%s%s", o->count ? ", " : "", name);
    o->count++;
}

/* --op NAME that is not an op: when NAME.overload ops exist (tt::add is
 * tt::add.Tensor and tt::add.Scalar), a usage error listing them so the
 * user can pick one; otherwise unknown. */
static int unknown_op(const tt_cli_args *a)
{
    overloads o = {.base = a->op, .len = strlen(a->op)};
    tt_op_foreach(collect_overload, &o);
    if (o.count)
        return usage_error("--op: '%s' has overloads, name one: %s", a->op, o.list);
    return usage_error("--op: unknown op '%s' (tt ops%s lists the registered ops)", a->op,
                       a->lib ? " --lib ..." : "");
}

static int cmd_opcheck(const tt_cli_args *a)
{
    char why[4096];
    const tt_op *op = tt_cli_find_op(a, why, sizeof why);
    if (!op)
        return why[0] ? usage_error("%s%s", why, "") : unknown_op(a);
    tt_value args[TT_CLI_MAX_INPUTS];
    tt_tensor *owned[TT_CLI_MAX_INPUTS];
    int nargs = 0, nowned = 0, rc = 0;
    int64_t *lists = NULL;
    char err[1024];
    tt_manual_seed(a->seed);
    if (tt_cli_opcheck_args(op, a, args, &nargs, owned, &nowned, &lists, err, sizeof err)) {
        rc = usage_error("%s%s", err, "");
        goto out;
    }
    tt_opcheck_report report;
    tt_opcheck_opts opts = {.checks = a->checks};
    tt_status s = tt_opcheck(op, args, nargs, &opts, &report);
    if (s && s != TT_EOPCHECK) {
        rc = lib_failure(NULL);
        goto out;
    }
    if (a->json) {
        json_t *doc = tt_json_opcheck(&report);
        json_object_set_new(doc, "command", json_string("opcheck"));
        if (tt_json_print(doc, stdout)) {
            fprintf(stderr, "tt: writing the JSON document failed\n");
            rc = EXIT_FAIL;
        }
    } else if (tt_opcheck_report_print(&report, stdout)) {
        rc = lib_failure(NULL);
    }
    if (!rc && s == TT_EOPCHECK)
        rc = EXIT_FAIL;
out:
    for (int i = 0; i < nowned; i++)
        tt_release(owned[i]);
    free(lists);
    return rc;
}

typedef struct {
    int builtin, other;
    bool failed;
    json_t *json; /* --json: the array of ops, else NULL */
} op_list;

static void print_op(const tt_op *op, void *ud)
{
    op_list *l = ud;
    char buf[1024];
    const tt_schema *s = tt_op_schema(op);
    int need = s ? tt_op_describe(op, buf, sizeof buf) : -1;
    if (need < 0) {
        l->failed = true;
        return;
    }
    /* A schema longer than the buffer is printed through a bigger one. */
    char *text = buf;
    if ((size_t)need >= sizeof buf && (text = malloc((size_t)need + 1)) != NULL)
        tt_op_describe(op, text, (size_t)need + 1);
    if (l->json)
        json_array_append_new(l->json, tt_json_op(op, text ? text : buf));
    else
        printf("%s\n", text ? text : buf);
    if (text != buf)
        free(text);
    if (tt_op_is_builtin(op))
        l->builtin++;
    else
        l->other++;
}

static int cmd_ops(const tt_cli_args *a)
{
    op_list l = {.json = a->json ? json_array() : NULL};
    tt_op_foreach(print_op, &l);
    if (l.failed) {
        json_decref(l.json);
        return lib_failure("listing the ops");
    }
    if (a->json) {
        json_t *doc = json_pack("{s:s, s:i, s:i, s:o?}", "command", "ops", "builtin", l.builtin,
                                "other", l.other, "ops", l.json);
        if (tt_json_print(doc, stdout)) {
            fprintf(stderr, "tt: writing the JSON document failed\n");
            return EXIT_FAIL;
        }
        return 0;
    }
    printf("# %d ops: %d built-in (tt::)", l.builtin + l.other, l.builtin);
    if (a->lib)
        printf(", %d more with %s", l.other, a->lib);
    else if (l.other)
        printf(", %d more", l.other);
    printf("\n");
    return 0;
}

/* tt --version: the first line is what help2man reads for the man page. */
static void print_version(void)
{
    printf("tt (tensortrace) %s\n", TT_VERSION);
    /* Lines about the build go below the first. */
    printf("matrix products: %s\n", tt_blas_kernels());
    printf("convolutions: %s\n", tt_onednn_version());
}

/* tt --help, tt COMMAND --help, and tt --help-all: tt's help then every
 * command's, which the man page is made from. */
static int print_help(const tt_cli_args *a)
{
    static const tt_cli_cmd all[] = {TT_CLI_NONE,    TT_CLI_TRACE, TT_CLI_EXPLAIN,
                                     TT_CLI_PROFILE, TT_CLI_DIFF,  TT_CLI_OPCHECK,
                                     TT_CLI_OPS,     TT_CLI_LIST};
    int n = a->help_all ? (int)(sizeof all / sizeof all[0]) : 1;
    for (int i = 0; i < n; i++) {
        tt_cli_cmd cmd = a->help_all ? all[i] : a->cmd;
        char *help = tt_cli_help(cmd);
        if (!help) {
            fprintf(stderr, "tt: out of memory\n");
            return EXIT_FAIL;
        }
        if (i)
            printf("\ntt %s:\n\n", tt_cli_cmd_name(cmd));
        fputs(help, stdout);
        free(help);
    }
    return 0;
}

int main(int argc, char **argv)
{
    tt_cli_args a;
    char err[1024];
    model m = {0};
    int rc = 0;
    if (tt_cli_parse(argc, argv, &a, err, sizeof err)) {
        rc = usage_error("%s%s", err, "");
        goto out;
    }
    if (a.version) {
        print_version();
        goto out;
    }
    if (a.help) {
        rc = print_help(&a);
        goto out;
    }
    if (a.lib && (rc = load_model(&a, &m)) != 0)
        goto out;
    switch (a.cmd) {
    case TT_CLI_TRACE:
    case TT_CLI_EXPLAIN: rc = cmd_trace(&a, &m); break;
    case TT_CLI_PROFILE: rc = cmd_profile(&a, &m); break;
    case TT_CLI_DIFF: rc = cmd_diff(&a, &m); break;
    case TT_CLI_OPCHECK: rc = cmd_opcheck(&a); break;
    case TT_CLI_LIST: rc = cmd_list(&a, &m); break;
    default: rc = cmd_ops(&a); break;
    }
out:
    unload_model(&m);
    tt_cli_args_clear(&a);
    if (fflush(stdout) != 0 && !rc) {
        fprintf(stderr, "tt: writing the output failed: %s\n", strerror(errno));
        rc = EXIT_FAIL;
    }
    return rc;
}
