/* tt-difftest: the runner. Programs run in forked children, --batch of
 * them (32) one after another in each (a crash ends that child; the rest
 * of its batch goes on in a new one); the child runs every check and
 * reports what differed on a pipe, one line each; the parent reruns a
 * failing program alone, classifies, names the pass, shrinks and prints
 * reproducers.
 *
 *   tt-difftest --seeds A:B [--mode fake,symbolic,real|eager] [--ops list] [--no-ops list]
 *               [--no-grad] [--no-inplace] [--no-symbolic] [--no-breaks]
 *               [--no-layouts] [--max-ins N] [--batch N] [--budget-seconds N]
 *               [--repro DIR] [--no-shrink] [--quiet] [--list-uncovered]
 *
 * Exit status 1 when there is any finding. The last line is
 *   difftest: N programs, N findings (crash N, wrong N, ...) */
#include "difftest.h"

#include <errno.h>
#include <stdarg.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { K_CRASH, K_WRONG, K_REFUSED, K_METADATA, K_GENERATOR, K_LEAK, K_COUNT };
static const char *kind_names[] = {"crash", "wrong", "refused", "metadata", "generator", "leak"};

/* A check: compile (tt_compile + 3 calls), or trace + graph run (with or
 * without functionalization; the trace's metadata checked too). */
enum { CK_COMPILE, CK_GRAPH, CK_FUNC, CK_EAGER };
typedef struct {
    int check;
    tt_trace_mode mode;
    bool fullgraph;
    unsigned passes_off;
} config;

#define B1 6
#define B2 7

typedef struct {
    int kind;
    char cfg[96];   /* the config's key */
    char msg[400];
} finding;

typedef struct {
    dt_genopts gen;
    bool mode_fake, mode_sym, mode_real;
    bool quiet, shrink;
    const char *repro;
} runopts;

static const unsigned pass_bits[] = {0, TT_PASS_FUSE, TT_PASS_EPILOGUE, TT_PASS_INPLACE, TT_PASS_MEMPLAN};
static const char *pass_names[] = {"none", "fuse", "epilogue", "inplace", "memplan"};
static const char *mode_names[] = {"fake", "real", "symbolic"};

static void cfg_key(const config *c, char *buf, size_t n)
{
    const char *ck = c->check == CK_COMPILE ? "compile" : c->check == CK_GRAPH ? "graph-run" : "functionalize";
    const char *pn = "all-passes";
    for (int i = 1; i < 5; i++)
        if (c->passes_off == pass_bits[i]) pn = pass_names[i];
    if (c->check == CK_COMPILE)
        snprintf(buf, n, "%s %s%s %s%s", ck, mode_names[c->mode], c->fullgraph ? "" : " non-fullgraph",
                 c->passes_off ? "off=" : "", c->passes_off ? pn : "all-passes");
    else
        snprintf(buf, n, "%s %s", ck, mode_names[c->mode]);
}

/* ------------------------------------------------------------ the child */

static int report_fd = -1;

static void emit(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void emit(const char *fmt, ...)
{
    char buf[600];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf - 1, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if (n > (int)sizeof buf - 2) n = (int)sizeof buf - 2;
    for (int i = 0; i < n; i++) if (buf[i] == '\n') buf[i] = ' ';
    buf[n++] = '\n';
    if (write(report_fd, buf, (size_t)n) < 0) { /* the parent is gone */ }
}
/* Where the child is: its program's seed and the check it runs, in a page
 * shared with the parent, which reads it when a child dies. A write to the
 * pipe per check cost a system call and two context switches, a sixth of
 * a release run; the pipe carries findings only. */
static struct progress {
    uint64_t seed;
    char stage[120];
} *progress;

static void progress_init(void)
{
    progress = mmap(NULL, sizeof *progress, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                    -1, 0);
    if (progress == MAP_FAILED) { perror("mmap"); exit(2); }
}

static void stage(const char *cfg)
{
    snprintf(progress->stage, sizeof progress->stage, "%s", cfg);
}

static void found(int kind, const char *cfg, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void found(int kind, const char *cfg, const char *fmt, ...)
{
    char m[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof m, fmt, ap);
    va_end(ap);
    emit("F %llu|%d|%s|%s", (unsigned long long)progress->seed, kind, cfg, m);
}

/* A finding line "F seed|kind|cfg|msg" into *seed and *f; false when the
 * line is not one. */
static bool parse_finding(char *line, uint64_t *seed, finding *f)
{
    if (line[0] != 'F' || line[1] != ' ') return false;
    char *sd = line + 2, *k = strchr(sd, '|'), *c = k ? strchr(k + 1, '|') : NULL,
         *m = c ? strchr(c + 1, '|') : NULL;
    if (!k || !c || !m) return false;
    *k = *c = *m = 0;
    *seed = strtoull(sd, NULL, 10);
    f->kind = atoi(k + 1);
    snprintf(f->cfg, sizeof f->cfg, "%s", c + 1);
    snprintf(f->msg, sizeof f->msg, "%s", m + 1);
    return true;
}

typedef struct {
    int n;
    tt_tensor *out[DT_MAX_OUT + DT_MAX_IN];
    tt_tensor *in[DT_MAX_IN];
} result;

static void result_free(result *r, int nin)
{
    for (int j = 0; j < r->n; j++) r->out[j] = tt_release(r->out[j]);
    for (int i = 0; i < nin; i++) r->in[i] = tt_release(r->in[i]);
}

/* Values as doubles; false on a read failure. */
static double *values(const tt_tensor *t, int64_t *n)
{
    tt_tensor *x = tt_to_dtype(t, TT_F64);
    *n = x ? tt_numel(x) : 0;
    double *v = x ? malloc(sizeof(double) * (size_t)(*n + 1)) : NULL;
    if (v && tt_to_buffer(x, v, sizeof(double) * (size_t)*n) != TT_OK) { free(v); v = NULL; }
    tt_release(x);
    return v;
}

/* Compares got against want; writes why not into why. */
static bool same(const tt_tensor *want, const tt_tensor *got, double scale, char *why, size_t n)
{
    char a[128], b[128];
    if (!got) { snprintf(why, n, "no tensor"); return false; }
    if (tt_dtype_of(want) != tt_dtype_of(got) || tt_ndim(want) != tt_ndim(got)) {
        snprintf(why, n, "%s vs eager %s", tt_describe(got, a, sizeof a), tt_describe(want, b, sizeof b));
        return false;
    }
    for (int k = 0; k < tt_ndim(want); k++)
        if (tt_dim_size(want, k) != tt_dim_size(got, k)) {
            snprintf(why, n, "%s vs eager %s", tt_describe(got, a, sizeof a), tt_describe(want, b, sizeof b));
            return false;
        }
    int64_t nw, ng;
    double *w = values(want, &nw), *g = values(got, &ng);
    bool ok = w && g && nw == ng;
    if (!ok) snprintf(why, n, "could not read values: %s", tt_errmsg());
    tt_dtype dt = tt_dtype_of(want);
    double atol = dt == TT_F32 ? 1e-4 : dt == TT_F64 ? 1e-9 : 0;
    double rtol = dt == TT_F32 ? 1e-3 : dt == TT_F64 ? 1e-7 : 0;
    for (int64_t i = 0; ok && i < nw; i++) {
        double x = w[i], y = g[i];
        if ((isnan(x) && isnan(y)) || x == y) continue;
        if (fabs(x - y) <= scale * (atol + rtol * fabs(x))) continue;
        snprintf(why, n, "element %lld: %.9g vs eager %.9g (%s)", (long long)i, y, x, tt_describe(want, a, sizeof a));
        ok = false;
    }
    free(w);
    free(g);
    return ok;
}

static int64_t batch_of(int call) { return call == 2 ? B2 : B1; }
static uint64_t vals_of(int call) { return (uint64_t)call + 1; }
/* The generator's seed for call `call`, the same on every side, so that a
 * dropout with 0 < p < 1 draws the same mask eagerly and compiled. */
static uint64_t seed_of(int call) { return 1000 + (uint64_t)call; }

/* Runs fn eagerly on call `call`'s inputs. */
static tt_status eager(const dt_program *p, int call, result *r)
{
    memset(r, 0, sizeof *r);
    r->n = dt_num_outputs(p);
    tt_status st = dt_make_inputs(p, batch_of(call), vals_of(call), r->in);
    if (st != TT_OK) return st;
    tt_manual_seed(seed_of(call));
    return dt_program_fn(r->in, p->nin, r->out, r->n, (void *)p);
}

/* Compares a run's outputs and final inputs with eager's. */
static bool compare(const dt_program *p, const result *want, tt_tensor **out, tt_tensor **in,
                    char *why, size_t n)
{
    char w[300];
    for (int j = 0; j < want->n; j++) {
        double scale = j >= p->nout ? 10 : 1; /* gradients add up more rounding */
        if (!same(want->out[j], out[j], scale, w, sizeof w)) {
            snprintf(why, n, "%s %d: %s", j >= p->nout ? "gradient" : "output", j >= p->nout ? j - p->nout : j, w);
            return false;
        }
    }
    for (int i = 0; i < p->nin; i++)
        if (!same(want->in[i], in[i], p->grad ? 10 : 1, w, sizeof w)) {
            snprintf(why, n, "input %d's final value: %s", i, w);
            return false;
        }
    return true;
}

static void sizes_hint(const tt_tensor *t, int64_t *s, int64_t *st)
{
    for (int k = 0; k < tt_ndim(t); k++) {
        s[k] = tt_sym_hint(tt_dim_size(t, k));
        st[k] = tt_sym_hint(tt_dim_stride(t, k));
    }
}

/* The trace's outputs' dtypes, sizes and strides against eager's. */
static void check_meta(const dt_program *p, const tt_graph *g, const result *want, const char *cfg)
{
    int on = tt_graph_num_nodes(g) - 1;
    if (on < 0 || tt_graph_node_kind(g, on) != TT_NODE_OUTPUT) return;
    for (int j = 0; j < want->n && j < tt_graph_node_num_args(g, on); j++) {
        int nd = tt_graph_node_arg_node(g, on, j);
        if (nd < 0 || tt_graph_node_num_outputs(g, nd) != 1) continue;
        const tt_tensor *v = tt_graph_node_value(g, nd, 0), *e = want->out[j];
        if (!v) continue;
        char a[128], b[128], sa[128], sb[128];
        int64_t s1[8], t1[8], s2[8], t2[8];
        bool bad = tt_dtype_of(v) != tt_dtype_of(e) || tt_ndim(v) != tt_ndim(e);
        if (!bad) {
            sizes_hint(v, s1, t1);
            sizes_hint(e, s2, t2);
            for (int k = 0; k < tt_ndim(e); k++)
                bad |= s1[k] != s2[k] || (s2[k] > 1 && t1[k] != t2[k]);
        }
        if (bad) {
            found(K_METADATA, cfg, "%s %d: traced %s strides %s, eager %s strides %s",
                  j >= p->nout ? "gradient" : "output", j, tt_describe(v, a, sizeof a),
                  tt_strides_str(v, sa, sizeof sa), tt_describe(e, b, sizeof b),
                  tt_strides_str(e, sb, sizeof sb));
            return;
        }
    }
}

static void run_graph_check(const dt_program *p, const config *c, const char *cfg, result *E)
{
    tt_tensor *in[DT_MAX_IN];
    int nout = dt_num_outputs(p);
    tt_trace_opts o = {.mode = c->mode, .fullgraph = true, .nout = nout, .ud = (void *)p};
    if (dt_make_inputs(p, B1, 1, in) != TT_OK) { found(K_GENERATOR, cfg, "inputs: %s", tt_errmsg()); return; }
    stage(cfg);
    tt_graph *g = tt_trace(dt_program_fn, p->nin, in, &o);
    for (int i = 0; i < p->nin; i++) in[i] = tt_release(in[i]);
    if (!g) {
        found(K_REFUSED, cfg, "tt_trace: %s: %s", tt_status_name(tt_errcode()), tt_errmsg());
        return;
    }
    if (tt_graph_verify(g) != TT_OK)
        found(K_CRASH, cfg, "tt_graph_verify: %s", tt_errmsg());
    if (c->check == CK_GRAPH) check_meta(p, g, &E[0], cfg);
    if (c->check == CK_FUNC && tt_graph_functionalize(g) != TT_OK) {
        found(K_REFUSED, cfg, "tt_graph_functionalize: %s", tt_errmsg());
        tt_graph_free(g);
        return;
    }
    /* a fake graph replays on the trace's sizes; a symbolic one also on
     * the other batch size */
    int ncalls = c->mode == TT_TRACE_SYMBOLIC ? 3 : 2;
    for (int call = 0; call < ncalls; call++) {
        tt_tensor *out[DT_MAX_OUT + DT_MAX_IN] = {0};
        char why[400];
        if (dt_make_inputs(p, batch_of(call), vals_of(call), in) != TT_OK) break;
        tt_manual_seed(seed_of(call));
        tt_status st = tt_graph_run(g, p->nin, in, nout, out);
        if (st != TT_OK)
            found(K_REFUSED, cfg, "tt_graph_run (call %d): %s: %s", call + 1, tt_status_name(st), tt_errmsg());
        else if (!compare(p, &E[call], out, in, why, sizeof why))
            found(K_WRONG, cfg, "call %d (batch %lld): %s", call + 1, (long long)batch_of(call), why);
        for (int j = 0; j < nout; j++) tt_release(out[j]);
        for (int i = 0; i < p->nin; i++) in[i] = tt_release(in[i]);
        if (st != TT_OK) break;
    }
    tt_graph_free(g);
}

static void run_compile_check(const dt_program *p, const config *c, const char *cfg, result *E)
{
    int nout = dt_num_outputs(p);
    bool brk = dt_has_break(p);
    tt_trace_opts o = {.mode = c->mode, .fullgraph = c->fullgraph, .nout = nout,
                       .ud = (void *)p, .passes_off = c->passes_off,
                       .ud_constant = true /* the program never changes */};
    stage(cfg);
    tt_compiled *cc = tt_compile(dt_program_fn, p->nin, nout, &o);
    if (!cc) {
        found(K_REFUSED, cfg, "tt_compile: %s: %s", tt_status_name(tt_errcode()), tt_errmsg());
        return;
    }
    for (int call = 0; call < 3; call++) {
        tt_tensor *in[DT_MAX_IN], *out[DT_MAX_OUT + DT_MAX_IN] = {0};
        char why[400];
        if (dt_make_inputs(p, batch_of(call), vals_of(call), in) != TT_OK) break;
        tt_manual_seed(seed_of(call));
        tt_status st = tt_compiled_call(cc, in, out);
        if (brk && c->fullgraph) {
            if (st != TT_EGRAPHBREAK)
                found(st == TT_OK ? K_WRONG : K_REFUSED, cfg,
                      "a program with a graph break under fullgraph: %s (%s), want TT_EGRAPHBREAK",
                      tt_status_name(st), st ? tt_errmsg() : "no error");
        } else if (st != TT_OK) {
            found(K_REFUSED, cfg, "call %d (batch %lld): %s: %s", call + 1, (long long)batch_of(call),
                  tt_status_name(st), tt_errmsg());
        } else if (!compare(p, &E[call], out, in, why, sizeof why)) {
            found(K_WRONG, cfg, "call %d (batch %lld): %s", call + 1, (long long)batch_of(call), why);
        }
        for (int j = 0; j < nout; j++) tt_release(out[j]);
        for (int i = 0; i < p->nin; i++) tt_release(in[i]);
        if (st != TT_OK) break;
    }
    tt_compiled_free(cc);
}

static int make_configs(const dt_program *p, const runopts *ro, config *cs)
{
    int n = 0;
    bool brk = dt_has_break(p);
    tt_trace_mode modes[2] = {TT_TRACE_FAKE, TT_TRACE_SYMBOLIC};
    for (int m = 0; m < 2; m++) {
        if ((m == 0 && !ro->mode_fake) || (m == 1 && !ro->mode_sym)) continue;
        if (!brk) {
            cs[n++] = (config){CK_GRAPH, modes[m], true, 0};
            if (!ro->gen.no_inplace) cs[n++] = (config){CK_FUNC, modes[m], true, 0};
        }
        for (int k = 0; k < 5; k++) cs[n++] = (config){CK_COMPILE, modes[m], true, pass_bits[k]};
    }
    if (ro->mode_real)
        for (int k = 0; k < 5; k++) cs[n++] = (config){CK_COMPILE, TT_TRACE_FAKE, false, pass_bits[k]};
    return n;
}

/* Every check of p (or only config `only`); findings go to report_fd. */
static void child_main(const dt_program *p, const runopts *ro, const config *only)
{
    result E[3];
    bool leaked = false;
    memset(E, 0, sizeof E);
    /* What was alive before this program (0 in a child of its own; in a
     * batch, what an earlier program leaked, reported there). */
    int64_t at_start = tt_live_tensors();
    stage("eager");
    for (int call = 0; call < 3; call++) {
        tt_status st = eager(p, call, &E[call]);
        if (st != TT_OK) {
            found(K_GENERATOR, "eager", "eager call %d (batch %lld) failed: %s: %s", call + 1,
                  (long long)batch_of(call), tt_status_name(st), tt_errmsg());
            goto out;
        }
    }
    config cs[32];
    int n = only ? (only->check == CK_EAGER ? 0 : 1) : make_configs(p, ro, cs);
    if (only) cs[0] = *only;
    /* every check must leave the live tensor count where it found it */
    int64_t base = tt_live_tensors();
    for (int k = 0; k < n; k++) {
        char cfg[96];
        cfg_key(&cs[k], cfg, sizeof cfg);
        tt_sym_reset();
        if (cs[k].check == CK_COMPILE) run_compile_check(p, &cs[k], cfg, E);
        else run_graph_check(p, &cs[k], cfg, E);
        tt_clear_error();
        int64_t live = tt_live_tensors();
        if (live != base && !leaked) {
            found(K_LEAK, cfg, "%lld tensors more alive after this check", (long long)(live - base));
            leaked = true;
        }
        base = live;
    }
out:
    for (int c = 0; c < 3; c++) result_free(&E[c], p->nin);
    stage("end");
    int64_t live = tt_live_tensors() - at_start;
    if (live != 0 && !leaked)
        found(K_LEAK, "eager", "%lld tensors alive after eager runs", (long long)live);
}

/* ----------------------------------------------------------- the parent */

#define MAX_FIND 64

/* The finding of a child that died with `status` while running check
 * `stage`. */
static void crash_finding(finding *f, int status, const char *stage)
{
    f->kind = K_CRASH;
    snprintf(f->cfg, sizeof f->cfg, "%.90s", stage);
    if (WIFSIGNALED(status))
        snprintf(f->msg, sizeof f->msg, "killed by signal %d (%s)%s", WTERMSIG(status),
                 strsignal(WTERMSIG(status)), WTERMSIG(status) == SIGALRM ? ": a hang" : "");
    else
        snprintf(f->msg, sizeof f->msg, "exited with status %d", WEXITSTATUS(status));
}

/* A finding of a program run in a batch. */
typedef struct {
    uint64_t seed;
    finding f;
} seed_finding;

/* A new slot at the end of *out (grown as needed). */
static seed_finding *push_finding(seed_finding **out, int *nout, int *cap)
{
    if (*nout == *cap) {
        *cap = *cap ? 2 * *cap : 64;
        *out = realloc(*out, sizeof **out * (size_t)*cap);
        if (!*out) { perror("realloc"); exit(2); }
    }
    return &(*out)[(*nout)++];
}

/* Forks a child that reports to the parent on a pipe: returns 0 in the
 * child (report_fd set), the child's pid in the parent, with *in the
 * pipe's reading end. The shared progress starts at seed, check "start". */
static pid_t start_child(const runopts *ro, uint64_t seed, FILE **in)
{
    int fd[2];
    if (pipe(fd) != 0) { perror("pipe"); exit(2); }
    fflush(stdout);
    fflush(stderr);
    progress->seed = seed;
    stage("start");
    pid_t pid = fork();
    if (pid < 0) { perror("fork"); exit(2); }
    if (pid == 0) {
        close(fd[0]);
        report_fd = fd[1];
        if (ro->quiet && !freopen("/dev/null", "w", stderr)) { /* keep stderr */ }
        return 0;
    }
    close(fd[1]);
    *in = fdopen(fd[0], "r");
    return pid;
}

/* Runs p's checks in a child; returns the number of findings. */
static int run_child(const dt_program *p, const runopts *ro, const config *only, finding *fs, int max)
{
    FILE *in;
    pid_t pid = start_child(ro, 0, &in);
    if (pid == 0) {
        alarm(120); /* a hang is a finding too */
        child_main(p, ro, only);
        _exit(0);
    }
    int n = 0;
    char line[1024];
    uint64_t seed;
    while (in && fgets(line, sizeof line, in)) {
        line[strcspn(line, "\n")] = 0;
        if (n < max && parse_finding(line, &seed, &fs[n]))
            n++;
    }
    if (in) fclose(in);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    if ((WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status))) && n < max &&
        strcmp(progress->stage, "end"))
        crash_finding(&fs[n++], status, progress->stage);
    return n;
}

/* Runs the programs of seeds [from, to) one after another in one child:
 * under ASan a fork per program cost more than the program, the child's
 * allocator starting cold each time. Appends each finding, with its seed,
 * to *out (grown as needed); returns the seed after the last program the
 * child finished. A child that dies ends the batch at the program it was
 * running, which gets the crash finding. */
static uint64_t run_batch(uint64_t from, uint64_t to, const runopts *ro, seed_finding **out,
                          int *nout, int *cap)
{
    FILE *in;
    pid_t pid = start_child(ro, from, &in);
    if (pid == 0) {
        for (uint64_t seed = from; seed < to; seed++) {
            dt_program p;
            dt_generate(&p, seed, &ro->gen);
            progress->seed = seed;
            stage("start");
            alarm(120); /* a hang is a finding too */
            child_main(&p, ro, NULL);
        }
        _exit(0);
    }
    char line[1024];
    finding f;
    uint64_t seed;
    while (in && fgets(line, sizeof line, in)) {
        line[strcspn(line, "\n")] = 0;
        if (!parse_finding(line, &seed, &f))
            continue;
        *push_finding(out, nout, cap) = (seed_finding){seed, f};
    }
    if (in) fclose(in);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    bool died = WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status));
    if (!died)
        return to;
    uint64_t cur = progress->seed;
    char last[sizeof progress->stage];
    snprintf(last, sizeof last, "%s", progress->stage);
    if (!strcmp(last, "end")) /* between programs: the next one never started */
        return cur + 1 < to ? cur + 1 : to;
    seed_finding *sf = push_finding(out, nout, cap);
    sf->seed = cur;
    crash_finding(&sf->f, status, last);
    return cur + 1;
}

static bool parse_cfg(const char *key, config *c)
{
    char ck[32], mode[32], rest[64] = "";
    memset(c, 0, sizeof *c);
    if (!strcmp(key, "eager")) { c->check = CK_EAGER; return true; }
    if (sscanf(key, "%31s %31s %63[^\n]", ck, mode, rest) < 2) return false;
    c->check = !strcmp(ck, "compile") ? CK_COMPILE : !strcmp(ck, "graph-run") ? CK_GRAPH
             : !strcmp(ck, "functionalize") ? CK_FUNC : -1;
    if (c->check < 0) return false;
    c->mode = !strcmp(mode, "symbolic") ? TT_TRACE_SYMBOLIC : TT_TRACE_FAKE;
    c->fullgraph = !strstr(rest, "non-fullgraph");
    for (int i = 1; i < 5; i++) {
        char want[32];
        snprintf(want, sizeof want, "off=%s", pass_names[i]);
        if (strstr(rest, want)) c->passes_off = pass_bits[i];
    }
    return true;
}

static void norm_msg(const char *msg, char *out, size_t cap);

static bool still_fails(const dt_program *p, const runopts *ro, const finding *f)
{
    if (!dt_validate(p, NULL)) return false;
    config c;
    finding fs[MAX_FIND];
    bool has = parse_cfg(f->cfg, &c);
    int n = run_child(p, ro, has ? &c : NULL, fs, MAX_FIND);
    /* the same kind of difference, not another bug met on the way */
    char want[80], got[80];
    norm_msg(f->msg, want, sizeof want);
    for (int i = 0; i < n; i++) {
        norm_msg(fs[i].msg, got, sizeof got);
        if (fs[i].kind == f->kind && !strcmp(fs[i].cfg, f->cfg) && !strncmp(got, want, 40)) return true;
    }
    return false;
}

/* Drops the marked instructions. A dropped instruction's readers read its
 * first operand instead (the model then decides whether that is still a
 * valid program); with no operand they are dropped too. Slots are
 * renumbered; outputs follow the same redirection. */
static bool drop_instrs(dt_program *p, const bool *drop_in)
{
    int map[DT_MAX_SLOTS];
    dt_program q = *p;
    q.n = 0;
    int next = p->nin;
    for (int i = 0; i < p->nin; i++) map[i] = i;
    for (int k = 0; k < p->n; k++) {
        dt_instr in = p->ins[k];
        int s = p->nin + k;
        bool dead = drop_in[k];
        if (!dead) {
            int *refs[5] = {&in.a, &in.b, &in.c, &in.bslot, &in.d};
            for (int r = 0; r < 5; r++) {
                if (*refs[r] < 0) continue;
                if (map[*refs[r]] < 0) { dead = true; break; }
                *refs[r] = map[*refs[r]];
            }
        }
        if (dead) {
            map[s] = p->ins[k].a >= 0 ? map[p->ins[k].a] : -1;
            continue;
        }
        map[s] = next++;
        q.ins[q.n++] = in;
    }
    q.nout = 0;
    for (int j = 0; j < p->nout; j++) {
        int m = map[p->out[j]];
        bool dup = false;
        for (int k = 0; k < q.nout; k++) dup |= q.out[k] == m;
        if (m >= 0 && !dup) q.out[q.nout++] = m;
    }
    if (q.nout == 0 && next > 0)
        q.out[q.nout++] = next - 1; /* the failure may not need the outputs */
    if (q.nout == 0 || q.n == p->n) return false;
    *p = q;
    return true;
}

/* Removes input i when no instruction or output reads it. */
static bool drop_input(dt_program *p, int i)
{
    for (int k = 0; k < p->n; k++) {
        dt_instr *in = &p->ins[k];
        if (in->a == i || in->b == i || in->c == i || in->bslot == i || in->d == i) return false;
    }
    for (int j = 0; j < p->nout; j++) if (p->out[j] == i) return false;
    for (int k = 0; k < p->n; k++) {
        dt_instr *in = &p->ins[k];
        int *refs[5] = {&in->a, &in->b, &in->c, &in->bslot, &in->d};
        for (int r = 0; r < 5; r++) if (*refs[r] > i) (*refs[r])--;
    }
    for (int j = 0; j < p->nout; j++) if (p->out[j] > i) p->out[j]--;
    memmove(p->in + i, p->in + i + 1, sizeof(dt_input) * (size_t)(p->nin - i - 1));
    p->nin--;
    return true;
}

static void shrink(dt_program *p, const runopts *ro, const finding *f)
{
    int budget = 400;
    /* delta debugging over instructions: chunks, halving, until a whole
     * round removes nothing */
    for (int before = -1; before != p->n && budget > 0;) {
    before = p->n;
    for (int chunk = p->n / 2 > 0 ? p->n / 2 : 1; chunk >= 1 && budget > 0; chunk /= 2) {
        for (int start = p->n - chunk; start >= 0 && budget > 0; start -= chunk) {
            bool drop[DT_MAX_INS] = {0};
            for (int k = start; k < start + chunk && k < p->n; k++) drop[k] = true;
            dt_program q = *p;
            if (!drop_instrs(&q, drop)) continue;
            budget--;
            if (still_fails(&q, ro, f)) {
                *p = q;
                if (start > p->n) start = p->n;
            }
        }
    }
    }
    /* inputs nothing reads */
    for (int i = p->nin - 1; i >= 0 && p->nin > 1 && budget > 0; i--) {
        dt_program q = *p;
        if (!drop_input(&q, i)) continue;
        budget--;
        if (still_fails(&q, ro, f)) *p = q;
    }
    /* single outputs */
    for (int j = p->nout - 1; j >= 0 && p->nout > 1 && budget > 0; j--) {
        dt_program q = *p;
        memmove(q.out + j, q.out + j + 1, sizeof(int) * (size_t)(q.nout - j - 1));
        q.nout--;
        budget--;
        if (still_fails(&q, ro, f)) *p = q;
    }
    /* program features: no gradients, plain layouts */
    if (p->grad && budget-- > 0) {
        dt_program q = *p;
        q.grad = 0;
        for (int i = 0; i < q.nin; i++) q.in[i].rg = false;
        if (still_fails(&q, ro, f)) *p = q;
    }
    for (int i = 0; i < p->nin && budget > 0; i++) {
        if (p->in[i].lay == LAY_CONTIG) continue;
        dt_program q = *p;
        q.in[i].lay = LAY_CONTIG;
        budget--;
        if (still_fails(&q, ro, f)) *p = q;
    }
    /* shapes: each concrete size smaller */
    for (int i = 0; i < p->nin && budget > 0; i++)
        for (int k = 0; k < p->in[i].nd && budget > 0; k++) {
            int64_t s = p->in[i].s[k];
            for (int64_t t = 1; t < s && s != DT_B && budget > 0; t++) {
                dt_program q = *p;
                q.in[i].s[k] = t;
                if (q.in[i].lay == LAY_EXPANDED && q.in[i].lay_dim == k && t == 1) q.in[i].lay = LAY_CONTIG;
                budget--;
                if (still_fails(&q, ro, f)) { *p = q; break; }
            }
        }
}

/* The passes whose switching off makes the finding go away. */
static void name_pass(const finding *fs, int n, const finding *f, char *out, size_t cap)
{
    config c;
    snprintf(out, cap, "-");
    if (!parse_cfg(f->cfg, &c) || c.check != CK_COMPILE || c.passes_off) return;
    out[0] = 0;
    for (int i = 1; i < 5; i++) {
        config d = c;
        d.passes_off = pass_bits[i];
        char key[96];
        cfg_key(&d, key, sizeof key);
        bool hit = false;
        for (int k = 0; k < n; k++) hit |= fs[k].kind == f->kind && !strcmp(fs[k].cfg, key);
        if (!hit) snprintf(out + strlen(out), cap - strlen(out), "%s%s", out[0] ? "+" : "", pass_names[i]);
    }
    if (!out[0]) snprintf(out, cap, "none (with every pass off too)");
}

/* Signatures met so far (true when s was already there). */
static bool seen_before(const char *s)
{
    static char seen[1024][320];
    static int n;
    for (int k = 0; k < n; k++)
        if (!strncmp(seen[k], s, sizeof seen[0] - 1)) return true;
    if (n < 1024) snprintf(seen[n++], sizeof seen[0], "%s", s);
    return false;
}

/* The op a finding names: the one its message names ("tt_expand: ...",
 * "tt::div_: ..."), else the shrunk program's last op. */
static void op_of(const finding *f, const dt_program *q, char *out, size_t cap)
{
    const char *s = strstr(f->msg, "tt::");
    const char *u = strstr(f->msg, ": tt_");
    if (u && strncmp(u, ": tt_compile", 12) && strncmp(u, ": tt_trace", 10) && strncmp(u, ": tt_graph", 10))
        s = u + 2;
    else if (f->kind == K_WRONG || f->kind == K_LEAK)
        s = NULL;
    if (s) {
        size_t skip = !strncmp(s, "tt::", 4) ? 4 : 0, n = skip + strcspn(s + skip, ": (");
        snprintf(out, cap, "%.*s", (int)n, s);
    } else {
        snprintf(out, cap, "%s", dt_op_name(dt_op_of_last(q)));
    }
}

/* A finding's message without the call, numbers and values: what kind
 * of difference it is. */
static void norm_msg(const char *msg, char *out, size_t cap)
{
    const char *s = strstr(msg, "): ");
    s = s && !strncmp(msg, "call ", 5) ? s + 3 : msg;
    if (!strncmp(msg, "eager call ", 11) && strstr(msg, "failed: "))
        s = strstr(msg, "failed: ") + 8;
    size_t k = 0;
    for (; *s && k + 1 < cap; s++) {
        if (*s >= '0' && *s <= '9') { if (k == 0 || out[k - 1] != '#') out[k++] = '#'; }
        else out[k++] = *s;
        if (!strncmp(s, " vs eager", 9) || !strncmp(s, ": element", 9)) break;
    }
    out[k] = 0;
}

/* Prints each built-in op that no entry of the generator's table names. */
static void visit_uncovered(const tt_op *op, void *ud)
{
    if (!tt_op_is_builtin(op)) return;
    const char *name = tt_op_name(op);
    size_t n = strlen(name);
    for (int k = 0; k < dt_op_count(); k++) {
        const char *s = dt_op_covers(k);
        while (*s) {
            size_t len = strcspn(s, " ");
            if (len == n && !strncmp(s, name, n)) return;
            s += len;
            while (*s == ' ') s++;
        }
    }
    /* made only by a compile pass, never called: conv2d's relu mode
     * (gen_cnn.c) gives the chain the pass folds into it */
    if (!strcmp(name, "tt::_convolution_pointwise")) {
        printf("made by a compile pass: %s\n", name);
        return;
    }
    /* derivatives are reached through the gradient programs, not drawn */
    if (strstr(name, "_backward")) {
        printf("through gradients only: %s\n", name);
        return;
    }
    printf("uncovered: %s\n", name);
    (*(int *)ud)++;
}

static void list_uncovered(void)
{
    int n = 0;
    tt_op_foreach(visit_uncovered, &n);
    printf("%d built-in ops not generated yet\n", n);
}

/* Plants a wrong op, then a crash, where only traces see them, and checks
 * that the runner reports each with the right kind and shrinks it to the
 * planted op. 0 when the tool works. */
static int self_test(runopts *ro)
{
    struct { int plant, kind; } cases[] = {{1, K_WRONG}, {2, K_CRASH}};
    int bad = 0;
    ro->gen.ops = "unary,add,mul,sum,transpose";
    ro->gen.no_grad = true;
    ro->mode_sym = ro->mode_real = false;
    for (int c = 0; c < 2; c++) {
        dt_plant = cases[c].plant;
        bool seen = false;
        for (uint64_t seed = 0; seed < 40 && !seen; seed++) {
            dt_program p;
            finding fs[MAX_FIND];
            dt_generate(&p, seed, &ro->gen);
            int n = run_child(&p, ro, NULL, fs, MAX_FIND);
            for (int i = 0; i < n && !seen; i++) {
                if (fs[i].kind != cases[c].kind)
                    continue; /* the library's own bug, not the plant: not the tool's business here */
                seen = true;
                shrink(&p, ro, &fs[i]);
                bool neg_last = p.n >= 1 && !strcmp(dt_op_name(dt_op_of_last(&p)), "unary");
                printf("self-test: plant %d: %s finding at seed %llu, shrunk to %d ops: ", cases[c].plant,
                       kind_names[fs[i].kind], (unsigned long long)seed, p.n);
                dt_print_summary(stdout, &p);
                if (p.n > 2 || !neg_last) {
                    printf("self-test: plant %d: not shrunk to the planted op\n", cases[c].plant);
                    bad = 1;
                }
                /* without the plant, the shrunk program passes */
                dt_plant = 0;
                finding again[MAX_FIND];
                int m = run_child(&p, ro, NULL, again, MAX_FIND);
                dt_plant = cases[c].plant;
                if (m) {
                    printf("self-test: plant %d: the shrunk program fails without the plant too: %s\n",
                           cases[c].plant, again[0].msg);
                    bad = 1;
                }
            }
        }
        if (!seen) {
            printf("self-test: plant %d: no %s finding in 40 programs\n", cases[c].plant, kind_names[cases[c].kind]);
            bad = 1;
        }
    }
    /* Batches: the planted crash ends a child at the program that has it,
     * that program alone crashes too, and the batch goes on after it. */
    dt_plant = 2;
    seed_finding *sfs = NULL;
    int nsf = 0, capsf = 0, batches = 0;
    for (uint64_t seed = 0; seed < 40; batches++)
        seed = run_batch(seed, 40, ro, &sfs, &nsf, &capsf);
    int crashes = 0;
    for (int i = 0; i < nsf; i++) {
        if (sfs[i].f.kind != K_CRASH)
            continue;
        crashes++;
        dt_program p;
        finding fs[MAX_FIND];
        dt_generate(&p, sfs[i].seed, &ro->gen);
        int n = run_child(&p, ro, NULL, fs, MAX_FIND);
        bool alone = false;
        for (int k = 0; k < n; k++) alone |= fs[k].kind == K_CRASH;
        if (!alone) {
            printf("self-test: batch: seed %llu crashed in a batch but not alone\n",
                   (unsigned long long)sfs[i].seed);
            bad = 1;
        }
    }
    bool last_crashed = nsf > 0 && sfs[nsf - 1].seed == 39 && sfs[nsf - 1].f.kind == K_CRASH;
    if (!crashes || batches != crashes + !last_crashed) {
        printf("self-test: batch: %d crashes in %d batches over seeds 0:40 (want some, and a "
               "batch after each crash but one at seed 39)\n", crashes, batches);
        bad = 1;
    } else {
        printf("self-test: batch: %d planted crashes over seeds 0:40, each a new child\n", crashes);
    }
    free(sfs);
    dt_plant = 0;
    printf("self-test: %s\n", bad ? "FAILED" : "ok");
    return bad;
}

/* True when budget seconds (> 0) have passed since t0. */
static bool past(const struct timespec *t0, double budget)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return budget > 0 && (double)(t1.tv_sec - t0->tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0->tv_nsec) > budget;
}

/* What the run found so far. */
static struct {
    int64_t programs, failed_programs, total, by_kind[K_COUNT];
    int shrinks, distinct, max_shrinks;
    double budget;
    struct timespec t0;
} tally = {.max_shrinks = 200};

static bool past(const struct timespec *t0, double budget);

/* Reports the n findings of program p (seed): names the pass, shrinks the
 * first of each kind and prints it (with a C reproducer under --repro). */
static void report_program(uint64_t seed, const dt_program *p, finding *fs, int n, const runopts *ro)
{
    tally.failed_programs++;
    /* one report per (kind, config family) in a program: the pass-off
     * variants of one bug are one finding */
    for (int i = 0; i < n; i++) {
        finding *f = &fs[i];
        config c;
        bool again = false; /* the same check failing on another call */
        for (int k = 0; k < i; k++)
            again |= fs[k].kind == f->kind && !strcmp(fs[k].cfg, f->cfg);
        if (again) continue;
        if (parse_cfg(f->cfg, &c) && c.check == CK_COMPILE && c.passes_off) {
            bool dup = false;
            for (int k = 0; k < n; k++) {
                config d;
                if (k != i && fs[k].kind == f->kind && parse_cfg(fs[k].cfg, &d) &&
                    d.check == CK_COMPILE && !d.passes_off && d.mode == c.mode && d.fullgraph == c.fullgraph)
                    dup = true;
            }
            if (dup) continue;
        }
        tally.total++;
        tally.by_kind[f->kind]++;
        char pass[64];
        name_pass(fs, n, f, pass, sizeof pass);
        dt_program q = *p;
        char pre[300], nm[80], sig[300];
        norm_msg(f->msg, nm, sizeof nm);
        snprintf(pre, sizeof pre, "%s|%s|%s|%s", kind_names[f->kind], f->cfg, pass, nm);
        bool shrunk = false;
        if (ro->shrink && !seen_before(pre) && tally.shrinks < tally.max_shrinks && !past(&tally.t0, tally.budget)) {
            shrink(&q, ro, f);
            tally.shrinks++;
            shrunk = true;
        }
        /* the signature: kind, op, pass, check (mode and passes apart) */
        char fam[96];
        snprintf(fam, sizeof fam, "%s", f->cfg);
        fam[strcspn(fam, " ")] = 0;
        char opn[48];
        op_of(f, &q, opn, sizeof opn);
        snprintf(sig, sizeof sig, "%s|%s|%s|%s|%.40s", kind_names[f->kind], opn, pass, fam, nm);
        bool fresh = (shrunk || !ro->shrink) && !seen_before(sig);
        if (fresh) tally.distinct++;
        if (!ro->quiet || fresh) {
            printf("%s seed=%llu kind=%s config=\"%s\" pass=%s op=%s: %s\n",
                   fresh ? "NEW" : "FINDING", (unsigned long long)seed, kind_names[f->kind], f->cfg, pass,
                   opn, f->msg);
            printf("  program (%d ops%s): ", q.n, shrunk ? ", shrunk" : "");
            dt_print_summary(stdout, &q);
        }
        if (fresh && ro->repro) {
            char path[512], comment[700];
            snprintf(path, sizeof path, "%s/seed%llu-%s-%d.c", ro->repro, (unsigned long long)seed,
                     kind_names[f->kind], i);
            FILE *out = fopen(path, "w");
            config cc;
            bool hc = parse_cfg(f->cfg, &cc);
            snprintf(comment, sizeof comment, "tt-difftest seed %llu: %s in %s (pass: %s): %s",
                     (unsigned long long)seed, kind_names[f->kind], f->cfg, pass, f->msg);
            if (out) {
                dt_print_c(out, &q, B1, comment, hc && cc.check != CK_EAGER ? (int)cc.mode : 0,
                           hc ? cc.fullgraph || cc.check == CK_EAGER : true, hc ? cc.passes_off : 0,
                           hc ? (cc.check == CK_GRAPH ? 1 : cc.check == CK_FUNC ? 2 : 0) : 0);
                fclose(out);
                printf("  reproducer: %s\n", path);
            }
        }
        fflush(stdout);
    }
}

/* --op-counts: how many of the programs of seeds [a, b) use each op (and
 * how often), without running them: a check that every op is drawn. */
static void print_op_counts(uint64_t a, uint64_t b, const dt_genopts *o)
{
    enum { MAXOP = 256 };
    int64_t progs[MAXOP] = {0}, uses[MAXOP] = {0}, cnn = 0;
    int nop = dt_op_count() < MAXOP ? dt_op_count() : MAXOP;
    for (uint64_t seed = a; seed < b; seed++) {
        dt_program p;
        bool seen[MAXOP] = {0};
        dt_generate(&p, seed, o);
        cnn += p.cnn;
        for (int k = 0; k < p.n; k++) {
            if (p.ins[k].op < 0 || p.ins[k].op >= nop) continue;
            uses[p.ins[k].op]++;
            if (!seen[p.ins[k].op]) progs[p.ins[k].op]++;
            seen[p.ins[k].op] = true;
        }
    }
    for (int op = 0; op < nop; op++)
        printf("%-22s %8lld programs %8lld uses\n", dt_op_name(op), (long long)progs[op], (long long)uses[op]);
    printf("%lld of %llu programs on images\n", (long long)cnn, (unsigned long long)(b - a));
}

static int usage(void)
{
    fprintf(stderr, "usage: tt-difftest --seeds A:B [--mode fake,symbolic,real|eager] [--ops a,b] [--no-grad]\n"
                    "       [--no-ops a,b] [--no-inplace] [--no-symbolic] [--no-breaks] [--no-layouts] [--no-batch]\n"
                    "       [--max-ins N] [--batch N] [--budget-seconds N] [--repro DIR] [--no-shrink] [--quiet]\n"
                    "       [--list-uncovered] [--op-counts] [--self-test]\n");
    return 2;
}

/* Every name of an --ops / --no-ops list names a generator op: a name
 * that matches none would leave the programs without the ops asked for
 * and report no finding. */
static bool known_ops(const char *flag, const char *list)
{
    for (const char *s = list; s && *s;) {
        const char *e = strchr(s, ',');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        bool found = false;
        for (int op = 0; op < dt_op_count() && !found; op++)
            found = strlen(dt_op_name(op)) == len && !strncmp(dt_op_name(op), s, len);
        if (!found) {
            fprintf(stderr, "tt-difftest: %s: no generator op named '%.*s' (--op-counts "
                            "lists them)\n", flag, (int)len, s);
            return false;
        }
        s = e ? e + 1 : s + len;
    }
    return true;
}

int main(int argc, char **argv)
{
    runopts ro = {.mode_fake = true, .mode_sym = true, .mode_real = true, .shrink = true};
    progress_init();
    int max_shrinks = 200, batch = 32;
    uint64_t a = 0, b = 100;
    double budget = 0;
    bool op_counts = false;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(s, "--seeds") && v) {
            unsigned long long x, y;
            if (sscanf(v, "%llu:%llu", &x, &y) != 2 || y < x) return usage();
            a = x; b = y; i++;
        } else if (!strcmp(s, "--mode") && v) {
            /* a comma list: fake (fullgraph fake traces and compiles),
             * symbolic (the same, symbolic), real (compile without
             * fullgraph, breaks run eagerly) */
            ro.mode_fake = strstr(v, "fake") != NULL;
            ro.mode_sym = strstr(v, "symbolic") != NULL;
            ro.mode_real = strstr(v, "real") != NULL;
            /* "eager" alone checks only the generator's model */
            if (!ro.mode_fake && !ro.mode_sym && !ro.mode_real && !strstr(v, "eager")) return usage();
            i++;
        } else if (!strcmp(s, "--ops") && v) { ro.gen.ops = v; i++; }
        else if (!strcmp(s, "--no-ops") && v) { ro.gen.no_ops = v; i++; }
        else if (!strcmp(s, "--max-shrinks") && v) { max_shrinks = atoi(v); i++; }
        else if (!strcmp(s, "--max-ins") && v) { ro.gen.max_ins = atoi(v); i++; }
        else if (!strcmp(s, "--batch") && v) { batch = atoi(v); i++; }
        else if (!strcmp(s, "--budget-seconds") && v) { budget = atof(v); i++; }
        else if (!strcmp(s, "--repro") && v) { ro.repro = v; i++; }
        else if (!strcmp(s, "--no-grad")) ro.gen.no_grad = true;
        else if (!strcmp(s, "--no-inplace")) ro.gen.no_inplace = true;
        else if (!strcmp(s, "--no-breaks")) ro.gen.no_breaks = true;
        else if (!strcmp(s, "--no-layouts")) ro.gen.no_layouts = true;
        else if (!strcmp(s, "--no-batch")) ro.gen.no_batch = true;
        else if (!strcmp(s, "--no-symbolic")) ro.mode_sym = false;
        else if (!strcmp(s, "--no-shrink")) ro.shrink = false;
        else if (!strcmp(s, "--quiet")) ro.quiet = true;
        else if (!strcmp(s, "--list-uncovered")) { list_uncovered(); return 0; }
        else if (!strcmp(s, "--op-counts")) op_counts = true;
        else if (!strcmp(s, "--self-test")) { ro.quiet = true; return self_test(&ro); }
        else return usage();
    }
    if (!known_ops("--ops", ro.gen.ops) || !known_ops("--no-ops", ro.gen.no_ops)) return 2;
    if (ro.gen.max_ins && ro.gen.max_ins < 5) ro.gen.min_ins = ro.gen.max_ins;
    if (op_counts) { print_op_counts(a, b, &ro.gen); return 0; }
    if (ro.repro) mkdir(ro.repro, 0777);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    tally.max_shrinks = max_shrinks;
    tally.budget = budget;
    tally.t0 = t0;
    seed_finding *sfs = NULL;
    int nsf = 0, capsf = 0;
    for (uint64_t seed = a; seed < b && !past(&t0, budget);) {
        uint64_t to = seed + (uint64_t)batch < b ? seed + (uint64_t)batch : b;
        nsf = 0;
        uint64_t next = batch > 1 ? run_batch(seed, to, &ro, &sfs, &nsf, &capsf) : seed + 1;
        if (batch <= 1) { /* a child per program */
            finding fs[MAX_FIND];
            dt_program p;
            dt_generate(&p, seed, &ro.gen);
            int n = run_child(&p, &ro, NULL, fs, MAX_FIND);
            for (int i = 0; i < n; i++)
                *push_finding(&sfs, &nsf, &capsf) = (seed_finding){seed, fs[i]};
        }
        tally.programs += (int64_t)(next - seed);
        /* Each program with findings runs again alone, in a child of its
         * own, for the findings to report: a batch's are kept only when the
         * program passes alone (state left by an earlier program is a bug
         * too, and says so). */
        for (int i = 0; i < nsf;) {
            uint64_t s0 = sfs[i].seed;
            int j = i;
            while (j < nsf && sfs[j].seed == s0) j++;
            dt_program p;
            dt_generate(&p, s0, &ro.gen);
            finding fs[MAX_FIND];
            int n = batch > 1 ? run_child(&p, &ro, NULL, fs, MAX_FIND) : 0;
            if (n == 0)
                for (int k = i; k < j && n < MAX_FIND; k++) {
                    fs[n] = sfs[k].f;
                    if (batch > 1) {
                        char m[sizeof fs[n].msg];
                        snprintf(m, sizeof m, "only after earlier programs in one process: %.350s", fs[n].msg);
                        snprintf(fs[n].msg, sizeof fs[n].msg, "%s", m);
                    }
                    n++;
                }
            report_program(s0, &p, fs, n, &ro);
            i = j;
        }
        seed = next;
    }
    free(sfs);
    int64_t programs = tally.programs, failed_programs = tally.failed_programs, total = tally.total;
    int64_t *by_kind = tally.by_kind;
    int distinct = tally.distinct;
    /* Check's summary line too, so tools/run counts programs as checks */
    printf("%d%%: Checks: %lld, Failures: %lld, Errors: 0\n",
           programs ? (int)(100 * (programs - failed_programs) / programs) : 100,
           (long long)programs, (long long)failed_programs);
    if (ro.shrink)
        printf("distinct signatures (kind, op, pass, check): %d\n", distinct);
    printf("difftest: %lld programs, %lld findings (", (long long)programs, (long long)total);
    for (int k = 0; k < K_COUNT; k++) printf("%s%s %lld", k ? ", " : "", kind_names[k], (long long)by_kind[k]);
    printf(")\n");
    return total ? 1 : 0;
}
