/* The profiler's recorder (tt_profile.h): a dispatch mode that times each
 * eager op its thread calls, and the events compiled plans add for their
 * steps. The reports it makes are in profile_report.c. */
#include "profile_impl.h"

#include "builtin_ops.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

_Thread_local tt_profile *tt__profiling;
_Thread_local int tt__plan_running;

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ------------------------------------------------------------- strings */

/* Names, files and nodes are copied once each: a custom op's library, a
 * model library's file names and a graph may be gone before the profile
 * is read. */
static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static const char *intern(tt_profile *p, const char *s)
{
    if (!s)
        return NULL;
    if (2 * (p->nnames + 1) > p->cap_names) {
        size_t cap = p->cap_names ? 2 * p->cap_names : 256;
        char **t = calloc(cap, sizeof *t);
        if (!t)
            return NULL;
        for (size_t i = 0; i < p->cap_names; i++) {
            if (!p->names[i])
                continue;
            size_t k = hash_str(p->names[i]) & (cap - 1);
            while (t[k])
                k = (k + 1) & (cap - 1);
            t[k] = p->names[i];
        }
        free(p->names);
        p->names = t;
        p->cap_names = cap;
    }
    size_t k = hash_str(s) & (p->cap_names - 1);
    for (; p->names[k]; k = (k + 1) & (p->cap_names - 1))
        if (strcmp(p->names[k], s) == 0)
            return p->names[k];
    if (!(p->names[k] = strdup(s)))
        return NULL;
    p->nnames++;
    return p->names[k];
}

/* -------------------------------------------------------------- events */

int tt__profile_open(tt_profile_kind kind, const char *name, tt_srcloc loc, const char *node)
{
    tt_profile *p = tt__profiling;
    if (!p)
        return -1;
    if (p->depth >= (int)(sizeof p->open / sizeof p->open[0])) {
        p->dropped++;
        return -1;
    }
    if (p->n == p->cap) {
        int cap = p->cap ? 2 * p->cap : 1024;
        tt_profile_event *ev = realloc(p->ev, sizeof *ev * (size_t)cap);
        if (!ev) {
            p->dropped++;
            return -1;
        }
        p->ev = ev;
        p->cap = cap;
    }
    tt_profile_event *e = &p->ev[p->n];
    *e = (tt_profile_event){
        .name = intern(p, name ? name : "?"),
        .kind = kind,
        .thread = p->thread,
        .depth = p->depth,
        .bytes = -1,
        .flops = -1,
        .loc = {intern(p, loc.file), loc.line, intern(p, loc.func)},
        .node = intern(p, node),
    };
    if (!e->name) {
        p->dropped++;
        return -1;
    }
    p->open[p->depth++] = p->n;
    /* Last, so that what the recording costs falls outside the event. */
    e->start_ns = now_ns() - p->t0;
    return p->n++;
}

void tt__profile_close(int ev, int64_t bytes, int64_t flops)
{
    tt_profile *p = tt__profiling;
    if (!p || ev < 0 || p->depth == 0 || p->open[p->depth - 1] != ev)
        return;
    tt_profile_event *e = &p->ev[ev];
    e->dur_ns = now_ns() - p->t0 - e->start_ns;
    e->bytes = bytes;
    e->flops = flops;
    e->live_bytes = tt_live_bytes();
    p->depth--;
}

void tt__profile_set_plan(int ev, int64_t block, int64_t buffers, int64_t unshared)
{
    tt_profile *p = tt__profiling;
    if (!p || ev < 0 || ev >= p->n)
        return;
    p->ev[ev].planned_bytes = block;
    p->ev[ev].planned_buffers = buffers;
    p->ev[ev].unshared_bytes = unshared;
}

/* -1 for a fake tensor (a traced call's: its bytes are not touched). */
static int64_t tensor_bytes(const tt_tensor *t)
{
    if (!t)
        return 0;
    if (tt_is_fake(t) || tt_has_sym_sizes(t))
        return -1;
    return tt_numel(t) * (int64_t)tt_dtype_size(tt_dtype_of(t));
}

static int64_t values_bytes(const tt_value *v, int n)
{
    int64_t sum = 0;
    for (int i = 0; i < n && sum >= 0; i++) {
        int64_t b = 0;
        if (v[i].kind == TT_V_TENSOR)
            b = tensor_bytes(v[i].u.t);
        for (int j = 0; v[i].kind == TT_V_TENSORS && j < v[i].n && b >= 0; j++) {
            int64_t bj = tensor_bytes(v[i].u.tensors[j]);
            b = bj < 0 ? -1 : b + bj;
        }
        sum = b < 0 ? -1 : sum + b;
    }
    return sum;
}

int64_t tt__profile_bytes(const tt_value *args, int nargs, const tt_value *outs, int nouts)
{
    int64_t a = values_bytes(args, nargs), b = values_bytes(outs, nouts);
    return a < 0 || b < 0 ? -1 : a + b;
}

/* A real tensor's numel, or -1. */
static int64_t real_numel(const tt_value *v)
{
    const tt_tensor *t = v->kind == TT_V_TENSOR ? v->u.t : NULL;
    return t && !tt_is_fake(t) && !tt_has_sym_sizes(t) ? tt_numel(t) : -1;
}

static int64_t last_size(const tt_value *v)
{
    const tt_tensor *t = v->u.t;
    return tt_ndim(t) > 0 ? tt_sizes(t)[tt_ndim(t) - 1] : 1;
}

int64_t tt__profile_flops(const tt_op *op, const tt_value *args, int nargs, const tt_value *outs,
                          int nouts)
{
    int id = tt__builtin_id(op);
    if (id < 0 || nouts < 1 || nargs < 2)
        return -1;
    int64_t out = real_numel(&outs[0]);
    /* The operands whose sizes give the reduction's length. */
    int k_arg = id == TT_OP_ADDMM ? 1 : 0;
    if (out < 0 || real_numel(&args[0]) < 0 || real_numel(&args[1]) < 0 ||
        (id == TT_OP_ADDMM && nargs < 3))
        return -1;
    switch (id) {
    case TT_OP_MM:
    case TT_OP_BMM:
    case TT_OP_MATMUL:
    case TT_OP_LINEAR:
    case TT_OP_ADDMM: /* one multiply and one add per term of each result */
        return 2 * out * last_size(&args[k_arg]);
    case TT_OP_CONVOLUTION:
    case TT_OP__CONVOLUTION_POINTWISE: {
        const tt_tensor *w = args[1].u.t;
        int64_t per = tt_ndim(w) > 0 && tt_sizes(w)[0] > 0 ? tt_numel(w) / tt_sizes(w)[0] : 0;
        /* Transposed, each input element scatters into Cout/groups x kernel
         * results; otherwise each result gathers Cin/groups x kernel. */
        bool transposed = id == TT_OP_CONVOLUTION && nargs > 6 && args[6].kind == TT_V_BOOL &&
                          args[6].u.b;
        return 2 * (transposed ? real_numel(&args[0]) : out) * per;
    }
    case TT_OP_SCALED_DOT_PRODUCT_ATTENTION: {
        /* q @ k^T and p @ v: 2 * S * (numel(q) + numel(out)). */
        const tt_tensor *k = args[1].u.t;
        int64_t s = tt_ndim(k) >= 2 ? tt_sizes(k)[tt_ndim(k) - 2] : 0;
        return 2 * s * (real_numel(&args[0]) + out);
    }
    default:
        return -1;
    }
}

/* ------------------------------------------------------ the eager mode */

static tt_status profile_call(tt_mode *m, const tt_op *op, const tt_value *args, int nargs,
                              tt_value *outs, int nouts)
{
    (void)m;
    if (tt__plan_running)
        return tt_op_redispatch(op, args, nargs, outs, nouts);
    int ev = tt__profile_open(TT_PROFILE_OP, tt_op_name(op), tt_callsite(), NULL);
    tt_status st = tt_op_redispatch(op, args, nargs, outs, nouts);
    if (ev >= 0)
        tt__profile_close(ev, st ? -1 : tt__profile_bytes(args, nargs, outs, nouts),
                          st ? -1 : tt__profile_flops(op, args, nargs, outs, nouts));
    return st;
}

tt_status tt_profile_begin(void)
{
    if (tt__profiling)
        return tt_error(TT_EINVAL, "tt_profile_begin: this thread is already being profiled "
                                   "(call tt_profile_end first)");
    tt_profile *p = calloc(1, sizeof *p);
    if (!p)
        return tt_error(TT_ENOMEM, "tt_profile_begin: out of memory");
    p->mode.call = profile_call;
    p->mode.ud = p;
    tt_status st = tt_mode_push(&p->mode);
    if (st) {
        free(p);
        return tt_error(st, "tt_profile_begin: %s", tt_errmsg());
    }
    p->thread = (int64_t)gettid();
    p->start_live = tt_live_bytes();
    p->t0 = now_ns();
    tt__profiling = p;
    return TT_OK;
}

tt_profile *tt_profile_end(void)
{
    tt_profile *p = tt__profiling;
    if (!p) {
        tt_error(TT_EINVAL, "tt_profile_end: this thread is not being profiled (no "
                            "tt_profile_begin)");
        return NULL;
    }
    if (tt_mode_current() != &p->mode) {
        tt_error(TT_EINVAL, "tt_profile_end: a mode pushed after tt_profile_begin is still on "
                            "(pop it first)");
        return NULL;
    }
    tt_mode_pop();
    tt__profiling = NULL;
    return p;
}

tt_profile *tt_profile_free(tt_profile *p)
{
    if (!p)
        return NULL;
    for (size_t i = 0; i < p->cap_names; i++)
        free(p->names[i]);
    free(p->names);
    free(p->ev);
    free(p);
    return NULL;
}

int tt_profile_num_events(const tt_profile *p) { return p ? p->n : 0; }

const tt_profile_event *tt_profile_event_at(const tt_profile *p, int i)
{
    return p && i >= 0 && i < p->n ? &p->ev[i] : NULL;
}
