/* Tracing: the dispatch mode that records op calls into a graph, the
 * graph-break reports, and tt_trace.
 *
 * Tensors are mapped to graph values through the runtime's per-tensor mode
 * tag (key = this trace, value = node << 8 | output). A tensor the trace
 * did not make (a weight created with tt_from_data inside the function,
 * say) is lifted into the graph as a constant, as make_fx does. */
#include "trace_impl.h"
#include "tt_progress.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

atomic_uint_fast64_t tt__next_trace_key = 1;
static _Thread_local tracer *current;

/* ------------------------------------------------------------ named scopes
 *
 * Each distinct path ("block3/attn") is copied once into a table that
 * lives as long as the process, so a node keeps a pointer to it and
 * graphs outlive the scopes that made them; a thread's open scopes are a
 * stack of such pointers. */
#define MAX_SCOPE_DEPTH 32
#define MAX_SCOPE_NAME 63
static pthread_mutex_t scope_lock = PTHREAD_MUTEX_INITIALIZER;
static char **scope_paths;
static int nscope_paths, cap_scope_paths;
static _Thread_local const char *scope_stack[MAX_SCOPE_DEPTH];
static _Thread_local int scope_depth;

static const char *scope_intern(const char *path)
{
    const char *found = NULL;
    pthread_mutex_lock(&scope_lock);
    for (int i = 0; i < nscope_paths && !found; i++)
        if (!strcmp(scope_paths[i], path))
            found = scope_paths[i];
    if (!found && nscope_paths == cap_scope_paths) {
        int nc = cap_scope_paths ? 2 * cap_scope_paths : 16;
        char **np = realloc(scope_paths, sizeof *np * (size_t)nc);
        if (np)
            scope_paths = np, cap_scope_paths = nc;
    }
    if (!found && nscope_paths < cap_scope_paths && (found = strdup(path)))
        scope_paths[nscope_paths++] = (char *)found;
    pthread_mutex_unlock(&scope_lock);
    if (!found)
        tt_error(TT_ENOMEM, "tt_scope_name_push: out of memory");
    return found;
}

tt_status tt_scope_name_push(const char *name)
{
    size_t len = name ? strlen(name) : 0;
    if (!name || len == 0 || len > MAX_SCOPE_NAME || strchr(name, '/'))
        return tt_error(TT_EINVAL, "tt_scope_name_push: argument 'name' expects 1 to %d "
                                   "characters without '/', got %s%s%s", MAX_SCOPE_NAME,
                        name ? "'" : "", name ? name : "NULL", name ? "'" : "");
    if (scope_depth == MAX_SCOPE_DEPTH)
        return tt_error(TT_EINVAL, "tt_scope_name_push: scopes nest %d deep at most (is a "
                                   "tt_scope_name_pop missing?)", MAX_SCOPE_DEPTH);
    char path[(MAX_SCOPE_NAME + 1) * MAX_SCOPE_DEPTH + 1];
    snprintf(path, sizeof path, "%s%s%s", scope_depth ? scope_stack[scope_depth - 1] : "",
             scope_depth ? "/" : "", name);
    const char *p = scope_intern(path);
    if (!p)
        return tt_errcode();
    scope_stack[scope_depth++] = p;
    return TT_OK;
}

tt_status tt_scope_name_pop(void)
{
    if (scope_depth == 0)
        return tt_error(TT_EINVAL, "tt_scope_name_pop: no scope is open on this thread");
    scope_depth--;
    return TT_OK;
}

tracer *tt__tracer_current(void) { return current; }

const char *tt_break_kind_name(tt_break_kind k)
{
    switch (k) {
    case TT_BREAK_DATA_READ: return "data read";
    case TT_BREAK_NO_FAKE_KERNEL: return "op without a fake kernel";
    case TT_BREAK_EXPLICIT: return "explicit graph break";
    case TT_BREAK_DATA_DEPENDENT: return "data-dependent size comparison";
    }
    return "?";
}

/* ---------------------------------------------------------------- values */

bool tt__tracer_lookup(const tracer *tr, const tt_tensor *t, gref *out)
{
    int64_t v;
    if (!t || !tt_get_mode_tag(t, tr->key, &v))
        return false;
    out->node = (int)(v >> 8);
    out->out = (int)(v & 0xff);
    return true;
}

void tt__tracer_tag(tracer *tr, tt_tensor *t, int node, int out)
{
    tt_set_mode_tag(t, tr->key, (int64_t)node << 8 | out);
}

/* Whether a and b are the same view (storage, dtype, sizes, strides,
 * offset): the same values. */
static bool same_view(const tt_tensor *a, const tt_tensor *b)
{
    int nd = tt_ndim(a);
    return tt_same_storage(a, b) && tt_dtype_of(a) == tt_dtype_of(b) && nd == tt_ndim(b) &&
           tt_storage_offset(a) == tt_storage_offset(b) &&
           memcmp(tt_sizes(a), tt_sizes(b), sizeof(tt_size) * (size_t)nd) == 0 &&
           memcmp(tt_strides(a), tt_strides(b), sizeof(tt_size) * (size_t)nd) == 0;
}

/* The graph's values indexed by storage, so that finding an untagged
 * alias, or learning that there is none (a constant the function made),
 * looks at the values of one storage instead of at every node: a scan per
 * lookup made tracing quadratic in the constants a long model lifts.
 * Nodes are indexed lazily up to the graph's end; another graph (explain
 * opens one at each break) starts the index over. */
struct alias_index {
    const tt_graph *g;
    int upto; /* nodes indexed */
    struct alias_slot {
        const tt_storage *storage; /* NULL: empty */
        int newest;                /* entry of its newest value */
    } *slots;
    int cap, used;
    struct alias_entry {
        gref ref;
        int older; /* the entry of the previous value of that storage, or -1 */
    } *entries;
    int nentries, cap_entries;
};

static void alias_index_free(tracer *tr)
{
    if (tr->aliases) {
        tt__free(tr->aliases->slots);
        tt__free(tr->aliases->entries);
        tt__free(tr->aliases);
        tr->aliases = NULL;
    }
}

static struct alias_slot *alias_slot(struct alias_index *x, const tt_storage *s)
{
    uintptr_t h = (uintptr_t)s;
    h ^= h >> 17; /* blocks are aligned: mix the high bits down */
    h *= 0x9e3779b97f4a7c15ull;
    int mask = x->cap - 1, i = (int)((h >> 32) & (uintptr_t)mask);
    while (x->slots[i].storage && x->slots[i].storage != s)
        i = (i + 1) & mask;
    return &x->slots[i];
}

/* Adds value (node, out) to the index; false when out of memory. */
static bool alias_add(struct alias_index *x, const tt_tensor *v, int node, int out)
{
    if ((x->used + 1) * 2 > x->cap) {
        int nc = x->cap ? x->cap * 2 : 64;
        struct alias_slot *old = x->slots, *slots = tt__calloc((size_t)nc, sizeof *slots);
        if (!slots)
            return false;
        int old_cap = x->cap;
        x->slots = slots;
        x->cap = nc;
        for (int i = 0; i < old_cap; i++)
            if (old[i].storage)
                *alias_slot(x, old[i].storage) = old[i];
        tt__free(old);
    }
    if (x->nentries == x->cap_entries) {
        int nc = x->cap_entries ? x->cap_entries * 2 : 64;
        struct alias_entry *e = tt__realloc(x->entries, sizeof *e * (size_t)x->cap_entries,
                                            sizeof *e * (size_t)nc);
        if (!e)
            return false;
        x->entries = e;
        x->cap_entries = nc;
    }
    struct alias_slot *s = alias_slot(x, v->storage);
    if (!s->storage) {
        s->storage = v->storage;
        s->newest = -1;
        x->used++;
    }
    x->entries[x->nentries] = (struct alias_entry){{node, out}, s->newest};
    s->newest = x->nentries++;
    return true;
}

/* The index of tr's graph, brought up to its last node; NULL when out of
 * memory (the caller scans instead). */
static struct alias_index *alias_index(tracer *tr)
{
    struct alias_index *x = tr->aliases;
    if (!x && !(x = tr->aliases = tt__calloc(1, sizeof *x)))
        return NULL;
    if (x->g != tr->g || x->upto > tr->g->n) {
        for (int i = 0; i < x->cap; i++)
            x->slots[i].storage = NULL;
        x->used = x->nentries = x->upto = 0;
        x->g = tr->g;
    }
    for (; x->upto < tr->g->n; x->upto++) {
        const gnode *n = &tr->g->nodes[x->upto];
        /* Outputs in reverse, so the newest-first walk meets a node's
         * outputs in order, as the scan does. */
        for (int j = n->nvals - 1; j >= 0; j--)
            if (n->vals[j] && !alias_add(x, n->vals[j], x->upto, j)) {
                alias_index_free(tr);
                return NULL;
            }
    }
    return x;
}

/* An untagged alias of a graph value: the autograd engine saves an op's
 * output as an alias made inside the call, before the tracer has tagged
 * the output, and a backward reads that alias. The newest matching value
 * is the current one (an in-place op's node holds self after the write). */
static bool find_alias(tracer *tr, const tt_tensor *t, gref *r)
{
    struct alias_index *x = alias_index(tr);
    if (x) {
        const struct alias_slot *s = alias_slot(x, t->storage);
        for (int e = s->storage ? s->newest : -1; e >= 0; e = x->entries[e].older) {
            gref c = x->entries[e].ref;
            if (same_view(tr->g->nodes[c.node].vals[c.out], t)) {
                *r = c;
                return true;
            }
        }
        return false;
    }
    tt_clear_error(); /* out of memory for the index: scan */
    for (int i = tr->g->n - 1; i >= 0; i--) {
        const gnode *n = &tr->g->nodes[i];
        for (int j = 0; j < n->nvals; j++)
            if (n->vals[j] && same_view(n->vals[j], t)) {
                *r = (gref){i, j};
                return true;
            }
    }
    return false;
}

/* The reference for tensor t: its graph value, or a new constant node. */
static tt_status ref_of(tracer *tr, tt_tensor *t, gref *r)
{
    if (tt__tracer_lookup(tr, t, r))
        return TT_OK;
    if (find_alias(tr, t, r)) {
        tt__tracer_tag(tr, t, r->node, r->out);
        return TT_OK;
    }
    int id = tt__graph_add_constant(tr->g, t);
    if (id < 0)
        return tt_errcode();
    tt__tracer_tag(tr, t, id, 0);
    *r = (gref){id, 0};
    return TT_OK;
}

const char *tt__input_name(const tt_trace_opts *opts, int i, char *buf, size_t n)
{
    if (opts->input_names && opts->input_names[i] && *opts->input_names[i])
        snprintf(buf, n, "%s", opts->input_names[i]);
    else
        snprintf(buf, n, "in%d", i);
    return buf;
}

double tt__now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void tt__guard_text(const tt_tensor *t, char *buf, size_t n)
{
    char sizes[256], strides[256];
    tt_size_list_str(tt_ndim(t), tt_sizes(t), false, sizes, sizeof sizes);
    tt_size_list_str(tt_ndim(t), tt_strides(t), false, strides, sizeof strides);
    snprintf(buf, n, "check_tensor(%s, requires_grad=%s, size=%s, stride=%s)",
             tt_dtype_name(tt_dtype_of(t)), tt_requires_grad(t) ? "True" : "False", sizes,
             strides);
}

/* --------------------------------------------------------------- breaks */

/* Fails the trace with a report in the shape of torch.compile's graph
 * break errors: the kind first, then an explanation, a hint, the user's
 * line and the op. */
tt_status tt__tracer_break(tracer *tr, tt_break_kind kind, const char *reason,
                           const char *op, tt_srcloc loc)
{
    const char *hint =
        kind == TT_BREAK_DATA_READ && op
            ? "make the fake kernel compute its outputs from its inputs' sizes, strides "
              "and dtypes alone; an output size that depends on the values is a new "
              "dynamic size (tt_frame_new_dynamic_size), as torch.library's nonzero "
              "example makes one"
        : kind == TT_BREAK_DATA_READ
            ? "wrap the code that needs the data in a custom op with a fake kernel "
              "(tt_custom_op_define with .fake), so the tracer records one opaque node "
              "instead of reading values"
        : kind == TT_BREAK_NO_FAKE_KERNEL
            ? "register a fake kernel for the op (tt_register_fake or the spec's .fake) "
              "that computes its output's metadata from its inputs' metadata"
        : kind == TT_BREAK_DATA_DEPENDENT
            ? "state what the fake kernel knows of the size "
              "(tt_frame_new_dynamic_size_bounded(f, min, max)) so its bounds decide the "
              "comparison, move the code that needs the value into a custom op, or compile "
              "without fullgraph so the function runs on real values"
            : "remove the tt_graph_break call, or trace without fullgraph to split the "
              "graph here";
    char where[512];
    if (loc.file)
        snprintf(where, sizeof where, "%s:%d in %s()", loc.file, loc.line,
                 loc.func ? loc.func : "?");
    else
        snprintf(where, sizeof where, "unknown (a call through a function pointer or "
                                      "from C++ records no line)");
    char msg[sizeof tr->brk_msg];
    snprintf(msg, sizeof msg,
             "Graph break: %s\n"
             "  Explanation: %s\n"
             "  Hint: %s.\n"
             "  User code: %s%s%s%s",
             tt_break_kind_name(kind), reason, hint, where, op ? "\n  Op: " : "",
             op ? op : "",
             tr->opts.fullgraph ? "" : "\n  (tt_trace records one graph; use "
                                      "tt_explain_run to split at breaks)");
    if (!tr->broke) { /* the first break is the one the trace reports */
        tr->broke = true;
        tr->brk.kind = kind;
        snprintf(tr->brk_reason, sizeof tr->brk_reason, "%s", reason);
        snprintf(tr->brk_op, sizeof tr->brk_op, "%s", op ? op : "");
        snprintf(tr->brk_file, sizeof tr->brk_file, "%s", loc.file ? loc.file : "");
        snprintf(tr->brk_func, sizeof tr->brk_func, "%s", loc.func ? loc.func : "");
        tr->brk.reason = tr->brk_reason;
        tr->brk.op = op ? tr->brk_op : NULL;
        tr->brk.loc = (tt_srcloc){loc.file ? tr->brk_file : NULL, loc.line,
                                  loc.func ? tr->brk_func : NULL};
        memcpy(tr->brk_msg, msg, sizeof msg);
    }
    return tt_error(TT_EGRAPHBREAK, "%s", msg);
}

/* A data read of a traced tensor. Splitting traces (explain) close the
 * graph and let the read through. Otherwise the break is recorded and the
 * trace fails once the function returns, but the read itself never
 * crashes: real tensors give their data (without fullgraph, with TT_OK,
 * so the C code runs on as it would under dynamo), fake tensors the
 * stand-in memory of trace_fake_data. */
/* A read inside the fake kernel of tr->fk_op (the dispatcher tells the
 * innermost mode of those): the first one becomes the op's break once the
 * kernel returns; the kernel meanwhile reads stand-in memory (zeros), so
 * one that does not check the pointer does not crash. */
static tt_status fake_kernel_read(tracer *tr, const tt_tensor *t, const char *what,
                                  tt_srcloc loc)
{
    if (!tt_is_fake(t))
        return TT_OK; /* a real tensor's values are known */
    if (!tr->fk_read) {
        char d[256];
        tr->fk_read = true;
        tr->fk_read_loc = loc;
        snprintf(tr->fk_reason, sizeof tr->fk_reason,
                 "%s: the fake kernel read tensor data (%s of %s at %s:%d in %s()), but "
                 "while tracing a fake kernel gets only its inputs' sizes, strides and "
                 "dtypes, not their values", tt_op_name(tr->fk_op), what,
                 tt_describe(t, d, sizeof d), loc.file ? loc.file : "?", loc.line,
                 loc.func ? loc.func : "?");
    }
    return tt_error(TT_EGRAPHBREAK, "%s", tr->fk_reason);
}

static tt_status trace_data_read(tt_mode *m, const tt_tensor *t, const char *what,
                                 tt_srcloc loc)
{
    tracer *tr = (tracer *)m;
    if (tr->fk_op)
        return fake_kernel_read(tr, t, what, loc);
    gref r;
    bool in_graph = tt__tracer_lookup(tr, t, &r);
    /* A constant's real data is known, also once an op has used it (and
     * it was tagged as the graph's constant node). */
    if (!tt_is_fake(t) && (!in_graph || tr->g->nodes[r.node].kind == TT_NODE_CONSTANT))
        return TT_OK;
    char reason[512], d[256], val[80] = "";
    if (in_graph)
        snprintf(val, sizeof val, " (graph value %s)", tr->g->nodes[r.node].name);
    snprintf(reason, sizeof reason,
             "%s reads the data of %s%s, but while tracing a tensor's "
             "values are not known: only its sizes, strides and dtype are",
             what, tt_describe(t, d, sizeof d), val);
    if (tr->on_break)
        return tr->on_break(tr, TT_BREAK_DATA_READ, NULL, reason, loc, &t, 1);
    tt_status st = tt__tracer_break(tr, TT_BREAK_DATA_READ, reason, NULL, loc);
    if (!tr->fake && !tr->opts.fullgraph) {
        tt_clear_error(); /* kept in tr->brk_msg for the end of the trace */
        tr->brk_let_through = true;
        return TT_OK;
    }
    return st;
}

/* ------------------------------------------------------------ stand-ins */

/* Zero pages mapped on demand stand in for a fake tensor's data at a
 * break: reading and writing them is safe, and the mapping reserves no
 * memory, so a 5 GB fake tensor costs only the pages the code touches.
 * One mapping per fake storage (views of it share it); the tensor is held
 * so the storage cannot be reused while the trace runs. */
struct stand_in {
    tt_tensor *held;
    void *map;
    size_t len;
};

static int64_t hint_of(tt_size s)
{
    if (!tt_size_is_sym(s))
        return s;
    int64_t h = tt_sym_hint(s);
    return h >= 0 ? h : 1; /* an unbacked size: its least plausible value */
}

/* Bytes from the storage's start that t may touch, in its example sizes:
 * its strided extent, and at least numel contiguous elements (code that
 * reads without checking often treats the data as a flat array). */
static size_t extent_bytes(const tt_tensor *t)
{
    int64_t off = hint_of(tt_storage_offset(t)), last = 0, numel = 1;
    for (int i = 0; i < tt_ndim(t); i++) {
        int64_t n = hint_of(tt_sizes(t)[i]);
        numel *= n;
        if (n > 0)
            last += (n - 1) * hint_of(tt_strides(t)[i]);
    }
    int64_t span = numel == 0 ? 0 : last + 1;
    if (span < numel)
        span = numel;
    return (size_t)(off + span) * tt_dtype_size(tt_dtype_of(t));
}

static void *trace_fake_data(tt_mode *m, const tt_tensor *t)
{
    tracer *tr = (tracer *)m;
    size_t need = extent_bytes(t), have = tt_storage_nbytes(t);
    if (need < have)
        need = have;
    size_t at = (size_t)hint_of(tt_storage_offset(t)) * tt_dtype_size(tt_dtype_of(t));
    for (int i = 0; i < tr->nstand_ins; i++) {
        struct stand_in *s = &tr->stand_ins[i];
        if (tt_same_storage(s->held, t) && s->len >= need)
            return (char *)s->map + at;
    }
    if (tr->nstand_ins == tr->cap_stand_ins) {
        int nc = tr->cap_stand_ins ? tr->cap_stand_ins * 2 : 4;
        struct stand_in *ns = tt__realloc(tr->stand_ins,
                                          sizeof *ns * (size_t)tr->cap_stand_ins,
                                          sizeof *ns * (size_t)nc);
        if (!ns)
            return NULL;
        tr->stand_ins = ns;
        tr->cap_stand_ins = nc;
    }
    size_t len = need ? need : 1;
    void *map = mmap(NULL, len, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (map == MAP_FAILED) {
        tt_error(TT_ENOMEM, "tt_trace: cannot map %zu bytes standing in for the data of a "
                            "fake tensor", len);
        return NULL;
    }
    tr->stand_ins[tr->nstand_ins++] = (struct stand_in){tt_retain((tt_tensor *)t), map, len};
    return (char *)map + at;
}

static void free_stand_ins(tracer *tr)
{
    for (int i = 0; i < tr->nstand_ins; i++) {
        munmap(tr->stand_ins[i].map, tr->stand_ins[i].len);
        tt_release(tr->stand_ins[i].held);
    }
    tt__free(tr->stand_ins);
    tr->stand_ins = NULL;
    tr->nstand_ins = tr->cap_stand_ins = 0;
}

/* A comparison of sizes nobody can answer (shape_env.c): a data-dependent
 * size, as PyTorch's GuardOnDataDependentSymNode. */
static void trace_undecided(void *ud, const char *expr, tt_srcloc loc)
{
    tracer *tr = ud;
    char why[768], site[300];
    tt__callsite_text(site, sizeof site);
    snprintf(why, sizeof why,
             "Could not guard on data-dependent expression %s: a size made by "
             "tt_frame_new_dynamic_size has no value until the real kernel runs, so the "
             "trace cannot tell which way the C code goes%s%s",
             expr, *site ? " (compared" : "", *site ? site : "");
    if (*site)
        snprintf(why + strlen(why), sizeof why - strlen(why), ")");
    tt__tracer_break(tr, TT_BREAK_DATA_DEPENDENT, why, NULL, loc);
}

tt_status tt_graph_break_at(const char *reason, tt_srcloc loc)
{
    tracer *tr = current;
    if (!tr)
        return TT_OK; /* not tracing: nothing to break */
    char why[512];
    snprintf(why, sizeof why, "the code asked for a graph break: \"%s\"",
             reason ? reason : "(no reason)");
    if (tr->on_break)
        return tr->on_break(tr, TT_BREAK_EXPLICIT, NULL, why, loc, NULL, 0);
    return tt__tracer_break(tr, TT_BREAK_EXPLICIT, why, NULL, loc);
}

void tt__no_fake_reason(const tt_op *op, char *buf, size_t n)
{
    snprintf(buf, n, "%s has no fake kernel, so the tracer cannot compute the metadata "
                     "of its outputs without running it on real data", tt_op_name(op));
}

/* ------------------------------------------------------------- recording */

/* Where a break caused by op call (no fake kernel, a fake kernel that
 * reads data) is reported: the calling line when the op came through
 * tt_call, else the line of the fake kernel's read. */
static tt_srcloc op_break_loc(const tracer *tr)
{
    tt_srcloc at = tt__callsite();
    return at.file || !tr->fk_read ? at : tr->fk_read_loc;
}

/* op's fake kernel ran under a fake trace and read data (st: how the
 * kernel ended). The break fails the trace when the function returns;
 * outputs the kernel made anyway (from stand-in zeros) are recorded so the
 * C code runs on, as it does past a read of its own. */
static tt_status fake_read_break(tracer *tr, const tt_op *op, tt_status st)
{
    tt_status b = tt__tracer_break(tr, TT_BREAK_DATA_READ, tr->fk_reason, tt_op_name(op),
                                   op_break_loc(tr));
    tr->fk_read = false;
    if (st)
        return b;
    tt_clear_error(); /* kept in tr->brk_msg for the end of the trace */
    return TT_OK;
}

/* Splitting (tr->on_break set): runs op's fake kernel on fake copies of
 * args, as a fake trace would, so tr->fk_read tells whether it reads
 * data (a real trace would never see it). Not inlined, nor is
 * eager_op_at_break: trace_call is the hot path of every trace, and
 * their argument copies would widen its stack frame by half a page. */
__attribute__((noinline)) static tt_status probe_fake(tracer *tr, const tt_op *op,
                                                      const tt_value *args, int nargs,
                                                      int nouts)
{
    tt_value fouts[TT_MAX_RETURNS_PUBLIC];
    tt__argset fa;
    if (nouts > TT_MAX_RETURNS_PUBLIC)
        return TT_OK; /* the real call says what is wrong */
    tt_status st = tt__argset_copy(&fa, args, nargs, true);
    if (!st) {
        /* Nothing of the probe is recorded, by autograd either. */
        tt_no_grad_begin();
        tr->fk_op = op;
        tr->fk_read = false;
        tt_status fst = tt_op_redispatch(op, fa.v, fa.n, fouts, nouts);
        tr->fk_op = NULL;
        tt_no_grad_end();
        for (int j = 0; !fst && j < nouts; j++)
            tt_value_clear(&fouts[j]);
        /* A fake kernel failing on its own is for the real call (and
         * opcheck) to report; only its data reads are breaks. */
        tt_clear_error();
    }
    tt__argset_free(&fa);
    return st;
}

/* Splitting: op, which the tracer cannot run on fake tensors, runs
 * eagerly at a break of this kind: the hook closes the graph (the op's
 * tensor arguments are what the C code, the eager op, reads), the op runs
 * on real data, and its results are inputs of the graph just opened. */
__attribute__((noinline)) static tt_status
eager_op_at_break(tracer *tr, const tt_op *op, tt_break_kind kind, const char *reason,
                  const tt_value *args, int nargs, tt_value *outs, int nouts)
{
    const tt_tensor *pin[TT_TRACE_MAX_ARGS];
    int npin = 0;
    for (int i = 0; i < nargs && npin < TT_TRACE_MAX_ARGS; i++)
        if (args[i].kind == TT_V_TENSOR && args[i].u.t)
            pin[npin++] = args[i].u.t;
    tt_status st = tr->on_break(tr, kind, op, reason, op_break_loc(tr), pin, npin);
    if (st)
        return st;
    st = tt_op_redispatch(op, args, nargs, outs, nouts);
    if (st)
        return st;
    for (int j = 0; j < nouts && !st; j++) {
        /* A Tensor[] result's elements are inputs of the next graph too. */
        bool list = outs[j].kind == TT_V_TENSORS;
        for (int e = 0; e < (list ? outs[j].n : 1) && !st; e++) {
            tt_tensor *t = list ? outs[j].u.tensors[e]
                         : outs[j].kind == TT_V_TENSOR ? outs[j].u.t : NULL;
            if (!t)
                continue;
            int id = tt__graph_add_placeholder(tr->g, t, NULL);
            if (id < 0)
                st = tt_errcode();
            else
                tt__tracer_tag(tr, t, id, 0);
        }
    }
    return st;
}

static void free_gargs(garg *a, int n)
{
    for (int i = 0; i < n; i++)
        if (a[i].kind == GARG_REFS)
            tt__free(a[i].refs);
}

/* Whether tensor t is among the op's results. */
static bool returned(const tt_tensor *t, const tt_value *outs, int nouts)
{
    for (int j = 0; j < nouts; j++) {
        if (outs[j].kind == TT_V_TENSOR && outs[j].u.t == t)
            return true;
        for (int e = 0; outs[j].kind == TT_V_TENSORS && e < outs[j].n; e++)
            if (outs[j].u.tensors[e] == t)
                return true;
    }
    return false;
}

/* One rule for every op that writes an argument: later reads of the
 * written tensor refer to a value of the writing node. A built-in
 * in-place op returns what it writes, so tagging its result did that
 * already; a mutable custom op ("Tensor(a!) cache -> ()") returns nothing,
 * and without this its readers would refer to the value from before the
 * write, an order no data edge records (a pass scheduling by data edges
 * could move them above it). Each written tensor it does not return gets
 * an after-write value of node id. */
static tt_status record_writes(tracer *tr, const tt_op *op, int id, const tt_value *args,
                               int nargs, const tt_value *outs, int nouts)
{
    const tt_schema *s = tt_op_schema(op);
    if (!tt_schema_is_mutable(s)) /* most ops: one pass over the flags */
        return TT_OK;
    for (int i = 0; i < nargs && i < tt_schema_nargs(s); i++) {
        if (!tt_schema_arg(s, i)->is_write)
            continue;
        const tt_value *v = &args[i];
        int n = v->kind == TT_V_TENSOR ? 1 : v->kind == TT_V_TENSORS ? v->n : 0;
        for (int k = 0; k < n; k++) {
            tt_tensor *t = v->kind == TT_V_TENSOR ? v->u.t : v->u.tensors[k];
            if (!t || returned(t, outs, nouts))
                continue;
            int out = tt__graph_add_after_write(tr->g, id, i,
                                                v->kind == TT_V_TENSOR ? -1 : k, t);
            if (out < 0)
                return tt_errcode();
            tt__tracer_tag(tr, t, id, out);
        }
    }
    return TT_OK;
}

/* A built-in tagged data_dependent_output whose results are numbers
 * (_local_scalar_dense: Tensor.item() as an op) reads its input's data
 * for a value the C code goes on with. In any trace that is the read
 * tt_item makes, at the caller's line: a break (splitting runs the op
 * eagerly between two graphs), never a number baked into the graph. */
static bool reads_a_number(const tt_op *op)
{
    if (!tt_op_is_builtin(op) || !(tt_op_tags(op) & TT_TAG_DATA_DEPENDENT_OUTPUT))
        return false;
    const tt_schema *s = tt_op_schema(op);
    for (int j = 0; j < tt_schema_nreturns(s); j++)
        if (tt_schema_return(s, j)->type.base == TT_T_TENSOR)
            return false;
    return true;
}

__attribute__((noinline)) static tt_status number_read(tracer *tr, const tt_op *op,
                                                       const tt_value *args, int nargs,
                                                       tt_value *outs, int nouts)
{
    const tt_tensor *t = NULL;
    for (int i = 0; i < nargs && !t; i++)
        if (args[i].kind == TT_V_TENSOR)
            t = args[i].u.t;
    if (!t)
        return TT_OK;
    if (tr->on_break && !tr->fake) {
        char reason[512], d[256];
        snprintf(reason, sizeof reason, "%s reads the data of %s for a number, but while "
                                        "tracing a tensor's values are not known",
                 tt_op_name(op), tt_describe(t, d, sizeof d));
        return eager_op_at_break(tr, op, TT_BREAK_DATA_READ, reason, args, nargs, outs, nouts);
    }
    return trace_data_read(&tr->mode, t, tt_op_name(op), tt_callsite());
}

static tt_status trace_call(tt_mode *m, const tt_op *op, const tt_value *args, int nargs,
                            tt_value *outs, int nouts)
{
    tracer *tr = (tracer *)m;
    garg ga[TT_TRACE_MAX_ARGS];
    tt_status st = TT_OK;
    if (nargs > TT_TRACE_MAX_ARGS)
        return tt_error(TT_EINVAL, "%s: too many arguments to trace", tt_op_name(op));
    if (reads_a_number(op)) {
        /* split: the op ran eagerly between two graphs; else a break, or
         * (a real trace without fullgraph) a break the trace reports at
         * its end while the op runs on */
        if (tr->on_break && !tr->fake)
            return number_read(tr, op, args, nargs, outs, nouts);
        if ((st = number_read(tr, op, args, nargs, outs, nouts)))
            return st;
    }
    memset(ga, 0, sizeof ga);
    for (int i = 0; i < nargs && !st; i++) {
        const tt_value *v = &args[i];
        if (v->kind == TT_V_TENSOR && v->u.t) {
            ga[i].kind = GARG_REF;
            st = ref_of(tr, v->u.t, &ga[i].ref);
        } else if (v->kind == TT_V_TENSORS) {
            ga[i].kind = GARG_REFS;
            ga[i].nrefs = v->n;
            ga[i].refs = tt__malloc(sizeof(gref) * (size_t)(v->n ? v->n : 1));
            if (!ga[i].refs)
                st = tt_error(TT_ENOMEM, "out of memory tracing %s", tt_op_name(op));
            for (int k = 0; !st && k < v->n; k++) {
                if (!v->u.tensors[k])
                    ga[i].refs[k] = (gref){-1, 0};
                else
                    st = ref_of(tr, v->u.tensors[k], &ga[i].refs[k]);
            }
        } else {
            ga[i].kind = GARG_CONST;
            ga[i].v = v->kind == TT_V_TENSOR ? tt_v_none() : *v;
        }
    }
    if (!st && tr->on_break && !tr->fake && nouts > 0) {
        /* Splitting (explain): an op that could not be traced with fake
         * tensors (no fake kernel, or one that reads data) runs eagerly
         * between two graphs, so explain reports the break a fake trace
         * hits. Built-in fake kernels read no data. */
        bool has_fake = tt_op_has_fake(op);
        if (has_fake && !tt_op_is_builtin(op))
            st = probe_fake(tr, op, args, nargs, nouts);
        if (!st && (!has_fake || tr->fk_read)) {
            char reason[512];
            if (has_fake)
                snprintf(reason, sizeof reason, "%s", tr->fk_reason);
            else
                tt__no_fake_reason(op, reason, sizeof reason);
            free_gargs(ga, nargs);
            st = eager_op_at_break(tr, op, has_fake ? TT_BREAK_DATA_READ
                                                    : TT_BREAK_NO_FAKE_KERNEL,
                                   reason, args, nargs, outs, nouts);
            tr->fk_read = false;
            return st;
        }
    }
    if (!st) {
        bool watch = tr->fake && !tt_op_is_builtin(op);
        if (watch) {
            tr->fk_op = op;
            tr->fk_read = false;
        }
        st = tt_op_redispatch(op, args, nargs, outs, nouts);
        tr->fk_op = NULL;
        if (watch && tr->fk_read)
            st = fake_read_break(tr, op, st);
        else if (st == TT_ENOKERNEL && tr->fake && !tt_op_has_fake(op)) {
            /* The op cannot run on fake tensors: a break. */
            char reason[512];
            tt__no_fake_reason(op, reason, sizeof reason);
            st = tt__tracer_break(tr, TT_BREAK_NO_FAKE_KERNEL, reason, tt_op_name(op),
                                  tt__callsite());
        }
    }
    if (!st) {
        int id = tt__graph_add_op(tr->g, op, ga, nargs, outs, nouts, tt__callsite());
        if (id >= 0)
            tr->g->nodes[id].scope = scope_depth ? scope_stack[scope_depth - 1] : NULL;
        if (tt__trace_progress && (id & 255) == 0) /* a clock read per 256 nodes */
            tt_progress_update(tt__trace_progress, id, "nodes traced");
        if (id < 0) {
            st = tt_errcode();
            for (int j = 0; j < nouts; j++)
                tt_value_clear(&outs[j]);
        } else {
            /* One graph value per result, and per element of a Tensor[]
             * result (numbered as tt__graph_add_op flattens them), so
             * code using an element refers to it. */
            for (int j = 0, k = 0; j < nouts; j++) {
                if (outs[j].kind == TT_V_TENSORS) {
                    for (int e = 0; e < outs[j].n; e++, k++)
                        if (outs[j].u.tensors[e])
                            tt__tracer_tag(tr, outs[j].u.tensors[e], id, k);
                    continue;
                }
                if (outs[j].kind == TT_V_TENSOR && outs[j].u.t)
                    tt__tracer_tag(tr, outs[j].u.t, id, k);
                k++;
            }
            st = record_writes(tr, op, id, args, nargs, outs, nouts);
            for (int j = 0; st && j < nouts; j++)
                tt_value_clear(&outs[j]);
            if (!st && !tr->fake && tt__watch) {
                const gnode *n = &tr->g->nodes[id];
                tt__watch->seen(tt__watch, n, n->vals, tt__node_nrets(n), false);
            }
        }
    }
    free_gargs(ga, nargs);
    return st;
}

_Thread_local tt__node_watch *tt__watch;
_Thread_local struct tt_progress *tt__trace_progress;

/* -------------------------------------------------------------- tracing */

tt_status tt__tracer_begin(tracer *tr, const tt_trace_opts *opts, const char *name)
{
    memset(tr, 0, sizeof *tr);
    tr->opts = opts ? *opts : (tt_trace_opts){0};
    if (tr->opts.nout <= 0)
        tr->opts.nout = 1;
    tr->kind = tr->opts.mode;
    tr->fake = tr->kind != TT_TRACE_REAL;
    tr->key = atomic_fetch_add(&tt__next_trace_key, 1);
    tr->mode.call = trace_call;
    tr->mode.data_read = trace_data_read;
    tr->mode.fake_data = trace_fake_data;
    tr->g = tt__graph_new(name ? name : tr->opts.name, tr->kind);
    return tr->g ? TT_OK : tt_errcode();
}

/* The value a traced function sees for input x: a fake copy (fake and
 * symbolic modes) or an alias of the real tensor, with requires_grad kept
 * so a traced backward has leaves. */
tt_tensor *tt__tracer_input(tracer *tr, tt_tensor *x)
{
    tt_tensor *v;
    if (tr->kind == TT_TRACE_SYMBOLIC)
        v = tt__symbolic_input(tr, x);
    else if (tr->fake)
        v = tt_fake_like(x);
    else
        v = tt_detach(x);
    if (v && tt_requires_grad(x) && tt_set_requires_grad(v, true))
        v = tt_release(v);
    return v;
}

tt_status tt__tracer_add_inputs(tracer *tr, int nin, tt_tensor **inputs, tt_tensor **vals)
{
    for (int i = 0; i < nin; i++)
        vals[i] = NULL;
    for (int i = 0; i < nin; i++) {
        tt_status st = TT_CHECK_TENSOR_PUBLIC("tt_trace", "inputs", inputs[i]);
        if (st)
            return st;
        vals[i] = tt__tracer_input(tr, inputs[i]);
        if (!vals[i])
            return tt_errcode();
        char name[64];
        int id = tt__graph_add_placeholder(tr->g, vals[i],
                                           tt__input_name(&tr->opts, i, name, sizeof name));
        if (id < 0)
            return tt_errcode();
        tt__tracer_tag(tr, vals[i], id, 0);
    }
    return TT_OK;
}

tt_status tt__tracer_run(tracer *tr, tt_fn fn, int nin, tt_tensor **vals, tt_tensor **outs)
{
    int nout = tr->opts.nout;
    for (int i = 0; i < nout; i++)
        outs[i] = NULL;
    tt_status st = tt_mode_push(&tr->mode);
    if (st)
        return st;
    tracer *saved = current;
    current = tr;
    if (tr->fake)
        tt_fake_mode_begin();
    tt__symbolic_start(tr);
    void (*saved_hook)(void *, const char *, tt_srcloc);
    void *saved_ud;
    tt__sym_get_undecided_hook(&saved_hook, &saved_ud);
    tt_sym_set_undecided_hook(trace_undecided, tr);
    tt_clear_error();
    /* The traced function's nodes get the lines of its own calls, never
     * that of an op call the trace may have started inside (a compiled
     * call in an argument list). */
    const tt_callframe *frames = tt_callframe_top;
    tt_callframe_top = NULL;
    st = fn(vals, nin, outs, nout, tr->opts.ud);
    tt_callframe_top = frames;
    tt_sym_set_undecided_hook(saved_hook, saved_ud);
    tt__symbolic_stop(tr);
    if (tr->fake)
        tt_fake_mode_end();
    if (!st && tr->sym && tr->sym->oom)
        st = tt_error(TT_ENOMEM, "tt_trace: out of memory recording guards");
    current = saved;
    tt_mode_pop();
    if (st && tt_errcode() == TT_OK)
        st = tt_error(st, "tt_trace: the traced function failed (%s) without a message",
                      tt_status_name(st));
    /* The first break fails the trace, whatever the function did after
     * it (its later failures may well come from the stand-in zeros). */
    if (tr->broke)
        st = tt_error(TT_EGRAPHBREAK, "%s%s", tr->brk_msg,
                      st || tr->brk_let_through
                          ? ""
                          : "\n  (the traced function went on past the break and returned "
                            "success)");
    for (int i = 0; !st && i < nout; i++)
        if (!outs[i])
            st = tt_error(TT_EINVAL, "tt_trace: the traced function returned no tensor for "
                                     "output %d", i);
    return st;
}

tt_status tt__tracer_set_outputs(tracer *tr, tt_tensor **outs, int nout)
{
    gref *refs = tt__malloc(sizeof *refs * (size_t)(nout ? nout : 1));
    if (!refs)
        return tt_error(TT_ENOMEM, "tt_trace: out of memory recording %d outputs", nout);
    tt_status st = TT_OK;
    for (int i = 0; i < nout && !st; i++)
        st = ref_of(tr, outs[i], &refs[i]);
    if (!st && tt__graph_set_output(tr->g, refs, nout) < 0)
        st = tt_errcode();
    tt__free(refs);
    return st;
}

tt_status tt__tracer_io_alloc(const char *fn, int nin, int nout, tt_tensor ***vals,
                              tt_tensor ***outs)
{
    /* nin is at most TT_TRACE_MAX_INPUTS and nout an int: no overflow. */
    size_t n = (size_t)nin + (size_t)nout;
    *vals = tt__calloc(n ? n : 1, sizeof **vals);
    *outs = *vals ? *vals + nin : NULL;
    return *vals ? TT_OK
                 : tt_error(TT_ENOMEM, "%s: out of memory for the function's inputs and "
                                               "outputs (%d and %d)", fn, nin, nout);
}

tt_status tt__check_trace_opts(const char *fn, const tt_trace_opts *o)
{
    if (o && (unsigned)o->mode > TT_TRACE_SYMBOLIC)
        return tt_error(TT_EINVAL, "%s: argument 'opts->mode' is %d; expected TT_TRACE_FAKE (0), "
                                   "TT_TRACE_REAL (1) or TT_TRACE_SYMBOLIC (2)", fn, (int)o->mode);
    if (o && o->nout < 0)
        return tt_error(TT_EINVAL, "%s: argument 'opts->nout' is %d; expected 0 (one output) "
                                   "or more", fn, o->nout);
    return TT_OK;
}

tt_graph *tt__trace_keep(tracer *tr, tt_fn fn, int nin, tt_tensor **inputs,
                         const tt_trace_opts *opts)
{
    if (tt__check_trace_opts("tt_trace", opts)) {
        memset(tr, 0, sizeof *tr);
        return NULL;
    }
    if (!fn || nin < 0 || nin > TT_TRACE_MAX_INPUTS || (nin > 0 && !inputs)) {
        memset(tr, 0, sizeof *tr);
        tt_error(TT_EINVAL, "tt_trace: expects a function and 0 to %d inputs",
                 TT_TRACE_MAX_INPUTS);
        return NULL;
    }
    tt_tensor **vals = NULL, **outs = NULL;
    /* The tracer runs fn and holds and releases what it makes itself, so
     * nothing of it goes into a scope the caller has open (whose end would
     * release the graph's values a second time). */
    tt_scope_pause();
    tt_status st = tt__tracer_begin(tr, opts, NULL);
    if (!st)
        st = tt__tracer_io_alloc("tt_trace", nin, tr->opts.nout, &vals, &outs);
    int nin_made = 0;
    if (!st) {
        st = tt__tracer_add_inputs(tr, nin, inputs, vals);
        nin_made = nin;
    }
    if (!st)
        st = tt__tracer_run(tr, fn, nin, vals, outs);
    if (!st)
        st = tt__tracer_set_outputs(tr, outs, tr->opts.nout);
    if (!st)
        st = tt_graph_verify(tr->g);
    for (int i = 0; i < nin_made; i++)
        tt_release(vals[i]);
    for (int i = 0; outs && i < tr->opts.nout; i++)
        tt_release(outs[i]);
    tt__free(vals); /* outs too: one block */
    if (st)
        tr->g = tt_graph_free(tr->g);
    tt_scope_resume();
    return tr->g;
}

tt_graph *tt_trace(tt_fn fn, int nin, tt_tensor **inputs, const tt_trace_opts *opts)
{
    tracer tr;
    tt_graph *g = tt__trace_keep(&tr, fn, nin, inputs, opts);
    tt__tracer_end(&tr);
    return g;
}

void tt__tracer_end(tracer *tr)
{
    tt__symbolic_end(tr);
    free_stand_ins(tr);
    alias_index_free(tr);
}
