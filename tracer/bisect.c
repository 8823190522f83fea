/* The numerics bisector (tt_testing.h: tt_compare_run): a compiled
 * function against eager on the same inputs, and on a difference the
 * plan's passes switched off one at a time to find the one that makes
 * it, as PyTorch's CompilerBisector narrows a divergence to a pass. */
#include "tt_testing.h"

#include "print_impl.h"
#include "trace_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    tt_pass bit;
    const char *name, *macro;
} passes[] = {
    {TT_PASS_FUSE, "fuse", "TT_PASS_FUSE"},
    {TT_PASS_EPILOGUE, "epilogue", "TT_PASS_EPILOGUE"},
    {TT_PASS_INPLACE, "inplace", "TT_PASS_INPLACE"},
    {TT_PASS_MEMPLAN, "memplan", "TT_PASS_MEMPLAN"},
};
#define NPASSES ((int)(sizeof passes / sizeof passes[0]))

const char *tt_pass_name(unsigned pass)
{
    for (int i = 0; i < NPASSES; i++)
        if (passes[i].bit == pass)
            return passes[i].name;
    return "?";
}

/* Fresh copies of the inputs for one run (fn may write into them), with
 * requires_grad as the caller's. */
static tt_status copy_inputs(int nin, tt_tensor **in, tt_tensor **out)
{
    for (int i = 0; i < nin; i++) {
        out[i] = tt_clone(in[i]);
        if (out[i] && tt_requires_grad(in[i]) && tt_set_requires_grad(out[i], true))
            out[i] = tt_release(out[i]);
        if (!out[i]) {
            while (i-- > 0)
                tt_release(out[i]);
            return tt_errcode();
        }
    }
    return TT_OK;
}

static void release_all(int n, tt_tensor **ts)
{
    for (int i = 0; i < n; i++)
        ts[i] = tt_release(ts[i]);
}

/* Runs fn eagerly (c NULL) or compiled into outs. */
static tt_status run_once(tt_fn fn, tt_compiled *c, int nin, tt_tensor **inputs, int nout,
                          void *ud, tt_tensor **outs)
{
    tt_tensor **in = calloc((size_t)nin + 1, sizeof *in);
    if (!in)
        return tt_error(TT_ENOMEM, "tt_compare_run: out of memory");
    for (int j = 0; j < nout; j++)
        outs[j] = NULL;
    tt_status st = copy_inputs(nin, inputs, in);
    if (!st) {
        st = c ? tt_compiled_call(c, in, outs) : fn(in, nin, outs, nout, ud);
        release_all(nin, in);
    }
    free(in);
    return st;
}

/* The first element of got beyond the tolerance of want (NaN equals NaN),
 * or -1; the largest difference in *max. -2 with the error set when the
 * values cannot be read. */
static int64_t first_difference(const tt_tensor *got, const tt_tensor *want, double rtol,
                                double atol, double *gv, double *wv, double *max)
{
    int64_t n = tt_numel(want), at = -1;
    tt_tensor *a = tt_to_dtype(got, TT_F64), *b = tt_to_dtype(want, TT_F64);
    tt_tensor *ac = a ? tt_contiguous(a) : NULL, *bc = b ? tt_contiguous(b) : NULL;
    double *x = malloc(sizeof(double) * (size_t)(n ? n : 1));
    double *y = malloc(sizeof(double) * (size_t)(n ? n : 1));
    bool ok = ac && bc && x && y && !tt_to_buffer(ac, x, sizeof(double) * (size_t)n) &&
              !tt_to_buffer(bc, y, sizeof(double) * (size_t)n);
    *max = 0;
    for (int64_t i = 0; ok && i < n; i++) {
        bool nan_x = isnan(x[i]), nan_y = isnan(y[i]);
        double d = nan_x || nan_y ? (nan_x == nan_y ? 0 : INFINITY) : fabs(x[i] - y[i]);
        if (x[i] == y[i]) /* equal infinities */
            d = 0;
        if (d > *max)
            *max = d;
        if (at < 0 && !(d <= atol + rtol * fabs(y[i]))) {
            at = i;
            *gv = x[i];
            *wv = y[i];
        }
    }
    free(x), free(y);
    tt_release(ac), tt_release(bc), tt_release(a), tt_release(b);
    return ok ? at : -2;
}

/* "f32[2, 3]", or "none" for a missing output. */
static const char *meta_text(const tt_tensor *t, char *buf, size_t n)
{
    char shape[80];
    snprintf(buf, n, "%s%s", t ? tt_dtype_name(tt_dtype_of(t)) : "none",
             t ? tt_shape_str(t, shape, sizeof shape) : "");
    return buf;
}

/* Compares one run's outputs with eager's into r; false when they agree. */
static bool outputs_differ(int nout, tt_tensor **got, tt_tensor **want, double rtol, double atol,
                           tt_compare_report *r, tt_status *err)
{
    for (int j = 0; j < nout; j++) {
        const tt_tensor *g = got[j], *w = want[j];
        bool same_meta = g && w && tt_dtype_of(g) == tt_dtype_of(w) && tt_ndim(g) == tt_ndim(w);
        for (int d = 0; same_meta && d < tt_ndim(w); d++)
            same_meta = tt_sizes(g)[d] == tt_sizes(w)[d];
        if (!same_meta) {
            char a[100], b[100];
            r->output = j;
            r->element = -1;
            snprintf(r->what, sizeof r->what, "output %d is %s compiled and %s eagerly", j,
                     meta_text(g, a, sizeof a), meta_text(w, b, sizeof b));
            return true;
        }
        double gv = 0, wv = 0, max = 0;
        int64_t at = first_difference(g, w, rtol, atol, &gv, &wv, &max);
        if (at == -2) {
            *err = tt_errcode();
            return true;
        }
        if (at >= 0) {
            r->output = j;
            r->element = at;
            r->compiled_value = gv;
            r->eager_value = wv;
            r->max_abs_diff = max;
            snprintf(r->what, sizeof r->what, "output %d, element %lld: %.9g compiled, %.9g "
                     "eagerly (largest difference %.3g)", j, (long long)at, gv, wv, max);
            return true;
        }
    }
    return false;
}

/* Compiles fn with opts but `off` passes off, runs it once and compares
 * with eager: 1 differs, 0 agrees, -1 error (set). */
static int compiled_differs(tt_fn fn, int nin, tt_tensor **inputs, int nout,
                            const tt_trace_opts *opts, unsigned off, tt_tensor **want,
                            double rtol, double atol, tt_compare_report *r)
{
    tt_trace_opts o = *opts;
    o.passes_off |= off;
    o.nout = nout;
    tt_compiled *c = tt_compile(fn, nin, nout, &o);
    if (!c)
        return -1;
    tt_tensor **got = calloc((size_t)nout, sizeof *got);
    tt_status st = got ? run_once(fn, c, nin, inputs, nout, opts->ud, got)
                       : tt_error(TT_ENOMEM, "tt_compare_run: out of memory"),
              err = TT_OK;
    bool differs = !st && outputs_differ(nout, got, want, rtol, atol, r, &err);
    if (got)
        release_all(nout, got);
    free(got);
    tt_compiled_free(c);
    return st || err ? -1 : differs;
}

/* ------------------------------------------------ node by node */

/* Every op node's values as the eager run made them, by node name: a
 * real-mode trace runs fn's C code on real tensors and names each op's
 * node as the compiled plan's trace does, and the watch copies the
 * values when they are made (a later in-place write would change them). */
typedef struct {
    tt__node_watch w;
    char (*names)[40];
    tt_tensor *(*vals)[2]; /* the first two results of each node */
    int n, cap;
    bool oom;
} eager_nodes;

static void remember_node(tt__node_watch *w, const gnode *n, tt_tensor *const *vals, int nvals,
                          bool in_plan)
{
    eager_nodes *e = (eager_nodes *)w;
    if (e->oom || in_plan)
        return;
    if (e->n == e->cap) {
        int cap = e->cap ? 2 * e->cap : 64;
        void *names = realloc(e->names, sizeof *e->names * (size_t)cap);
        if (names)
            e->names = names;
        void *v = names ? realloc(e->vals, sizeof *e->vals * (size_t)cap) : NULL;
        if (!v) {
            e->oom = true;
            return;
        }
        e->vals = v;
        e->cap = cap;
    }
    snprintf(e->names[e->n], sizeof e->names[e->n], "%s", n->name);
    /* Copies outside fn's scope and autograd (this runs inside the
     * tracer's handler, where no mode records it). */
    tt_scope_pause();
    tt_no_grad_begin();
    for (int j = 0; j < 2; j++)
        e->vals[e->n][j] = j < nvals && vals[j] && !tt_is_fake(vals[j]) ? tt_clone(vals[j]) : NULL;
    tt_no_grad_end();
    tt_scope_resume();
    tt_clear_error(); /* a value that could not be copied is not compared */
    e->n++;
}

static void forget_nodes(eager_nodes *e)
{
    for (int i = 0; i < e->n; i++)
        for (int j = 0; j < 2; j++)
            tt_release(e->vals[i][j]);
    free(e->names);
    free(e->vals);
}

/* The compiled side: each step's values against the eager ones of the
 * node of the same name; the first that differs goes into the report. */
typedef struct {
    tt__node_watch w;
    const eager_nodes *eager;
    double rtol, atol;
    tt_compare_report *r;
    bool found;
} node_check;

static void check_node(tt__node_watch *w, const gnode *n, tt_tensor *const *vals, int nvals,
                       bool in_plan)
{
    node_check *c = (node_check *)w;
    int k = 0;
    if (c->found || !in_plan)
        return;
    while (k < c->eager->n && strcmp(c->eager->names[k], n->name) != 0)
        k++;
    for (int j = 0; k < c->eager->n && j < 2 && j < nvals && !c->found; j++) {
        const tt_tensor *want = c->eager->vals[k][j];
        if (!want || !vals[j])
            continue;
        double gv, wv, max = 0;
        bool meta = tt_dtype_of(vals[j]) != tt_dtype_of(want) || tt_ndim(vals[j]) != tt_ndim(want);
        for (int d = 0; !meta && d < tt_ndim(want); d++)
            meta = tt_sizes(vals[j])[d] != tt_sizes(want)[d];
        int64_t at = meta ? -1 : first_difference(vals[j], want, c->rtol, c->atol, &gv, &wv, &max);
        if (at == -2)
            tt_clear_error();
        if (!meta && at < 0)
            continue;
        c->found = true;
        tt_compare_report *r = c->r;
        snprintf(r->node, sizeof r->node, "%s", n->name);
        snprintf(r->node_op, sizeof r->node_op, "%s", n->op ? tt_op_name(n->op) : "?");
        if (n->loc.file)
            snprintf(r->node_where, sizeof r->node_where, "%s:%d in %s", loc_basename(n->loc.file),
                     n->loc.line, n->loc.func ? n->loc.func : "?");
        r->node_max_diff = meta ? INFINITY : max;
    }
}

/* Finds the first node whose compiled value differs from eager's (the
 * report's node fields); a failure to find one leaves them empty. */
static void locate_node(tt_fn fn, int nin, tt_tensor **inputs, int nout,
                        const tt_trace_opts *opts, double rtol, double atol,
                        tt_compare_report *r)
{
    eager_nodes eager = {.w.seen = remember_node};
    tt_tensor **in = calloc((size_t)nin + 1, sizeof *in);
    tt__node_watch *saved = tt__watch;
    if (in && !copy_inputs(nin, inputs, in)) {
        tt_trace_opts real = *opts;
        real.mode = TT_TRACE_REAL;
        real.nout = nout;
        tt__watch = &eager.w;
        tt_graph_free(tt_trace(fn, nin, in, &real));
        tt__watch = saved;
        release_all(nin, in);
    }
    free(in);
    if (!eager.oom && eager.n > 0) {
        node_check check = {.w.seen = check_node, .eager = &eager, .rtol = rtol, .atol = atol,
                            .r = r};
        tt_trace_opts o = *opts;
        o.nout = nout;
        tt_compiled *c = tt_compile(fn, nin, nout, &o);
        tt_tensor **got = c ? calloc((size_t)nout, sizeof *got) : NULL;
        if (got) {
            tt__watch = &check.w;
            run_once(fn, c, nin, inputs, nout, o.ud, got);
            tt__watch = saved;
            release_all(nout, got);
        }
        free(got);
        tt_compiled_free(c);
    }
    forget_nodes(&eager);
    tt_clear_error(); /* a hint: the comparison itself already ran */
}

tt_status tt_compare_run(tt_fn fn, int nin, tt_tensor **inputs, int nout,
                         const tt_trace_opts *opts, double rtol, double atol,
                         tt_compare_report *report)
{
    if (!fn || !report || nin < 0 || nin > TT_TRACE_MAX_INPUTS || nout < 1 ||
        nout > TT_TRACE_MAX_INPUTS || (nin && !inputs) || !(rtol >= 0) || !(atol >= 0))
        return tt_error(TT_EINVAL, "tt_compare_run: expected a function, 0 to %d inputs, 1 to %d "
                                   "outputs, a report and tolerances >= 0",
                        TT_TRACE_MAX_INPUTS, TT_TRACE_MAX_INPUTS);
    tt_trace_opts o = opts ? *opts : (tt_trace_opts){0};
    memset(report, 0, sizeof *report);
    report->output = -1;
    report->element = -1;
    tt_tensor **want = calloc((size_t)nout, sizeof *want);
    if (!want)
        return tt_error(TT_ENOMEM, "tt_compare_run: out of memory");
    tt_status st = run_once(fn, NULL, nin, inputs, nout, o.ud, want);
    if (st) {
        release_all(nout, want); /* what fn made before it failed */
        free(want);
        return st;
    }
    int d = compiled_differs(fn, nin, inputs, nout, &o, 0, want, rtol, atol, report);
    if (d == 1) {
        report->differs = true;
        locate_node(fn, nin, inputs, nout, &o, rtol, atol, report);
        /* Each pass off alone: the one whose absence makes it agree. */
        tt_compare_report probe;
        for (int i = 0; i < NPASSES && d >= 0; i++) {
            if (o.passes_off & passes[i].bit)
                continue;
            d = compiled_differs(fn, nin, inputs, nout, &o, passes[i].bit, want, rtol, atol,
                                 &probe);
            if (d == 0 && !report->pass)
                report->pass = passes[i].bit;
        }
        if (d >= 0 && !report->pass) {
            unsigned all = 0;
            for (int i = 0; i < NPASSES; i++)
                all |= passes[i].bit;
            d = compiled_differs(fn, nin, inputs, nout, &o, all, want, rtol, atol, &probe);
            report->without_passes = d == 1;
        }
    }
    release_all(nout, want);
    free(want);
    return d < 0 ? tt_errcode() : TT_OK;
}

/* The custom ops tagged pointwise that fn's compiled graph calls, comma
 * separated into buf ("" when none): what the fuse pass runs on chunks. */
static void pointwise_custom_ops(tt_fn fn, int nin, tt_tensor **inputs, int nout,
                                 const tt_trace_opts *opts, char *buf, size_t cap)
{
    buf[0] = '\0';
    tt_trace_opts o = opts ? *opts : (tt_trace_opts){0};
    o.nout = nout;
    tt_compiled *c = tt_compile(fn, nin, nout, &o);
    tt_tensor **outs = c ? calloc((size_t)nout, sizeof *outs) : NULL;
    const tt_graph *g = NULL;
    if (outs && !run_once(fn, c, nin, inputs, nout, o.ud, outs))
        g = tt_compiled_graph(c, 0);
    size_t at = 0;
    for (int k = 0; g && k < tt_graph_num_nodes(g); k++) {
        const tt_op *op = tt_graph_node_kind(g, k) == TT_NODE_OP ? tt_graph_node_op(g, k) : NULL;
        if (!op || tt_op_is_builtin(op) || !(tt_op_tags(op) & TT_TAG_POINTWISE) ||
            strstr(buf, tt_op_name(op)))
            continue;
        int w = snprintf(buf + at, cap - at, "%s%s", at ? ", " : "", tt_op_name(op));
        if (w < 0 || (size_t)w >= cap - at)
            break;
        at += (size_t)w;
    }
    if (outs)
        release_all(nout, outs);
    free(outs);
    tt_compiled_free(c);
    tt_clear_error(); /* a hint only: the comparison already ran */
}

tt_status tt_expect_compiled_matches_eager(tt_fn fn, int nin, tt_tensor **inputs, int nout,
                                           const tt_trace_opts *opts, double rtol, double atol)
{
    tt_compare_report r;
    tt_status st = tt_compare_run(fn, nin, inputs, nout, opts, rtol, atol, &r);
    if (st || !r.differs)
        return st;
    char ops[200] = "", hint[400] = "", node[400] = "";
    if (r.node[0])
        snprintf(node, sizeof node, "; the first node that differs is %s (%s%s%s), largest "
                                    "difference %.3g", r.node, r.node_op,
                 r.node_where[0] ? " at " : "", r.node_where, r.node_max_diff);
    if (r.pass == TT_PASS_FUSE) {
        pointwise_custom_ops(fn, nin, inputs, nout, opts, ops, sizeof ops);
        snprintf(hint, sizeof hint,
                 " (a custom op tagged pointwise whose result is not elementwise does this%s%s)",
                 ops[0] ? "; the graph's: " : "", ops);
    }
    for (int i = 0; r.pass && i < NPASSES; i++)
        if (passes[i].bit == r.pass)
            return tt_error(TT_EEXPECT, "tt_expect_compiled_matches_eager: %s%s; with the pass "
                                        "'%s' off (passes_off = %s) the compiled result "
                                        "agrees: that pass changes it%s", r.what, node,
                            passes[i].name, passes[i].macro, hint);
    return tt_error(TT_EEXPECT, "tt_expect_compiled_matches_eager: %s%s; %s", r.what, node,
                    r.without_passes ? "it differs with every pass off too: the traced graph "
                                       "itself computes another result (a value the trace "
                                       "froze, a fake kernel that disagrees with its kernel)"
                                     : "no single pass off makes it agree");
}
