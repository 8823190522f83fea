/* tt-bench: the benchmarks behind `tools/run bench`.
 *
 * Each figure is printed as one line
 *   bench <name> <value> <unit> limit <limit-value> ratio <value/limit>
 * where the limit is what the same work costs done the plainest way (raw
 * cblas_sgemm, a plain C loop) in the same run, on the same data. For
 * throughput units (GFLOP/s, GB/s) a ratio above 1 means faster than the
 * limit; for time-per-call units (ns/call) it means slower, so lower is
 * better there.
 *
 * Method: every measurement warms up once, then takes the best of several
 * repetitions (as many as fit in a time budget per figure), timed with
 * CLOCK_MONOTONIC. The repetitions of a figure and of its limit are
 * interleaved, so that load from other processes on the machine (two
 * shared cores) affects both alike.
 *
 * Adding a bench is adding one function (filling value and limit) and one
 * row in the table at the end.
 *
 *   tt-bench [--quick] [name-substring...]
 *   --quick: fewer repetitions, and the largest sizes are skipped. */
#include "tensortrace.h"
#include "gpt2.h"
#include "gpt2_reference_tt.h"
#include "llama_model.h"
#include "mlp_step.h"
#include "resnet18.h"

#include <cblas.h>
#include <dlfcn.h>
#include <dnnl.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---------------------------------------------------------------- timing */

typedef struct {
    bool quick;
} bench_opts;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* One timed unit of work; returns false on a library error (the message is
 * in tt_errmsg()). */
typedef bool (*work_fn)(void *ctx);

/* bench_scaling's work (a row's variant); bench_mlp_compiled's limit. */
enum chain_work { CHAIN_TRACE, CHAIN_COMPILE, CHAIN_EXPLAIN };
enum { MLP_LIMIT_EAGER = 1 };

/* Seconds per call of `inner` calls of fn. */
static bool timed(work_fn fn, void *ctx, int inner, double *t)
{
    double t0 = now();
    for (int i = 0; i < inner; i++)
        if (!fn(ctx))
            return false;
    *t = (now() - t0) / inner;
    return true;
}

/* Best seconds per call of f and of g: two warm-up calls of each (a
 * compiled function records its plan on the first call and lays out and
 * faults in its memory plan on the second: ResNet-18's took 5x a step,
 * which left --quick's budget one clean sample or none), then
 * interleaved repetitions of `inner` calls each, at least `min_reps` of
 * them and more while the time budget lasts (up to 1000): under load from
 * other processes, more samples make the best one more likely clean. */
static bool best_pair(work_fn f, void *fc, work_fn g, void *gc, const bench_opts *o,
                      int min_reps, int inner, double *tf, double *tg)
{
    double budget = o->quick ? 1.0 : 2.5, start, t;
    if (!f(fc) || !g(gc) || !f(fc) || !g(gc))
        return false;
    start = now();
    *tf = *tg = INFINITY;
    for (int r = 0; r < 1000 && (r < min_reps || now() - start < budget); r++) {
        if (!timed(f, fc, inner, &t))
            return false;
        *tf = t < *tf ? t : *tf;
        if (!timed(g, gc, inner, &t))
            return false;
        *tg = t < *tg ? t : *tg;
    }
    return true;
}

/* A bench row: `fn` measures and fills *value and *limit in `unit`. */
typedef struct bench bench;
struct bench {
    const char *name;
    const char *unit;
    bool (*fn)(const bench *b, const bench_opts *o, double *value, double *limit);
    int64_t n;    /* the size the function works on */
    bool trans;   /* an operand is a transposed view */
    bool full_only; /* skipped by --quick */
    unsigned passes_off; /* compile benches: TT_PASS_* bits switched off */
    /* Which variant of fn the row runs (the rows say it, the functions
     * never read a row's name): an ew_kind for bench_elementwise, a
     * chain_work for bench_scaling, MLP_LIMIT_EAGER for bench_mlp_compiled,
     * 1 (profiled) for bench_dispatch. */
    int variant;
};

static volatile float sink; /* keeps results of the plain loops alive */

/* ---------------------------------------------------------------- matmul */

typedef struct {
    tt_tensor *a, *b, *c; /* a may be a transposed view; c preallocated */
    int n;
    bool trans;
} mm_ctx;

static bool mm_tt(void *p)
{
    mm_ctx *m = p;
    tt_tensor *r = tt_mm(m->a, m->b);
    bool ok = r != NULL;
    tt_release(r);
    return ok;
}

/* The limit: raw cblas_sgemm on the same buffers into a preallocated
 * output; a transposed view is the same bytes read with CblasTrans. */
static bool mm_blas(void *p)
{
    mm_ctx *m = p;
    cblas_sgemm(CblasRowMajor, m->trans ? CblasTrans : CblasNoTrans, CblasNoTrans, m->n, m->n,
                m->n, 1.0f, tt_data(m->a), m->n, tt_data(m->b), m->n, 0.0f, tt_data(m->c),
                m->n);
    return true;
}

static bool bench_matmul(const bench *b, const bench_opts *o, double *value, double *limit)
{
    int n = (int)b->n;
    tt_tensor *base = tt_randn(TT_SHAPE(n, n), TT_F32);
    mm_ctx m = {.n = n, .trans = b->trans};
    m.a = b->trans ? tt_t(base) : tt_retain(base);
    m.b = tt_randn(TT_SHAPE(n, n), TT_F32);
    m.c = tt_empty(TT_SHAPE(n, n), TT_F32);
    int inner = n <= 256 ? 10 : 1; /* a 256 GEMM is too short to time alone */
    double tt = 0, tb = 0;
    bool ok = m.a && m.b && m.c && best_pair(mm_tt, &m, mm_blas, &m, o, 2, inner, &tt, &tb);
    double flop = 2.0 * n * (double)n * n;
    *value = flop / tt * 1e-9;
    *limit = flop / tb * 1e-9;
    tt_release(base);
    tt_release(m.a);
    tt_release(m.b);
    tt_release(m.c);
    return ok;
}

/* ----------------------------------------------------------- elementwise */

#define N16M ((int64_t)1 << 24)

/* The elementwise rows' ops (a row's variant). */
enum ew_kind { EW_ADD, EW_MUL, EW_SIN, EW_EXP, EW_SUM, EW_TANH, EW_GELU };

typedef struct {
    tt_tensor *(*binary)(const tt_tensor *, const tt_tensor *);
    tt_tensor *(*unary)(const tt_tensor *);
    const tt_tensor *a, *b;
    const float *pa, *pb; /* contiguous data of the plain loops */
    float *pc;
    int64_t n;
    int kind; /* an ew_kind: the op, and the plain loop */
} ew_ctx;

static bool ew_tt(void *p)
{
    ew_ctx *e = p;
    tt_tensor *r = e->binary ? e->binary(e->a, e->b) : e->unary ? e->unary(e->a)
                                                              : tt_sum_all(e->a);
    bool ok = r != NULL;
    tt_release(r);
    return ok;
}

static bool ew_plain(void *p)
{
    ew_ctx *e = p;
    const float *restrict a = e->pa, *restrict b = e->pb;
    float *restrict c = e->pc;
    int64_t n = e->n;
    switch (e->kind) {
    case EW_ADD:
        for (int64_t i = 0; i < n; i++)
            c[i] = a[i] + b[i];
        break;
    case EW_MUL:
        for (int64_t i = 0; i < n; i++)
            c[i] = a[i] * b[i];
        break;
    case EW_SIN:
        for (int64_t i = 0; i < n; i++)
            c[i] = sinf(a[i]);
        break;
    case EW_EXP:
        for (int64_t i = 0; i < n; i++)
            c[i] = expf(a[i]);
        break;
    case EW_TANH:
        for (int64_t i = 0; i < n; i++)
            c[i] = tanhf(a[i]);
        break;
    case EW_GELU:
        for (int64_t i = 0; i < n; i++)
            c[i] = 0.5f * a[i] * (1 + erff(a[i] * 0.70710678f));
        break;
    default: {
        float s = 0;
        for (int64_t i = 0; i < n; i++)
            s += a[i];
        sink = s;
        return true;
    }
    }
    sink = c[n - 1];
    return true;
}

/* Bytes each element moves: reads plus the write. */
static const int ew_bytes[] = {[EW_ADD] = 12, [EW_MUL] = 12, [EW_SIN] = 8, [EW_EXP] = 8,
                               [EW_SUM] = 4, [EW_TANH] = 8, [EW_GELU] = 8};

static bool bench_elementwise(const bench *b, const bench_opts *o, double *value,
                              double *limit)
{
    ew_ctx e = {.n = b->n, .kind = b->variant};
    e.binary = e.kind == EW_ADD ? tt_add : e.kind == EW_MUL ? tt_mul : NULL;
    e.unary = e.kind == EW_SIN ? tt_sin : e.kind == EW_EXP ? tt_exp : e.kind == EW_TANH ? tt_tanh
            : e.kind == EW_GELU ? tt_gelu : NULL;
    /* Mixed layouts and transcendentals are held to the contiguous add's
     * bandwidth (tt_add on contiguous operands, same threads, same run):
     * memory speed is their limit. The others to a plain C loop. */
    bool add_limit = b->trans || e.kind == EW_SIN || e.kind == EW_EXP || e.kind == EW_TANH ||
                     e.kind == EW_GELU;
    tt_tensor *ta = NULL, *tb = NULL, *tb_view = NULL, *tc = NULL;
    bool ok = false;
    if (b->trans) { /* square operands; b is a transposed view */
        int64_t side = (int64_t)sqrt((double)b->n);
        ta = tt_randn(TT_SHAPE(side, side), TT_F32);
        tb = tt_randn(TT_SHAPE(side, side), TT_F32);
        tb_view = tb ? tt_t(tb) : NULL;
        tc = tt_empty(TT_SHAPE(side, side), TT_F32);
    } else {
        ta = tt_randn(TT_SHAPE(b->n), TT_F32);
        tb = tt_randn(TT_SHAPE(b->n), TT_F32);
        tb_view = tt_retain(tb);
        tc = tt_empty(TT_SHAPE(b->n), TT_F32);
    }
    if (!ta || !tb || !tb_view || !tc)
        goto out;
    e.a = ta, e.b = tb_view;
    /* The limit runs over the same arrays, read contiguously. */
    e.pa = tt_data(ta), e.pb = tt_data(tb), e.pc = tt_data(tc);
    ew_ctx lim = {.binary = tt_add, .a = ta, .b = tb, .n = b->n};
    double t_tt = 0, t_lim = 0;
    if (!best_pair(ew_tt, &e, add_limit ? ew_tt : ew_plain, add_limit ? &lim : &e, o, 3, 1,
                   &t_tt, &t_lim))
        goto out;
    double bytes = (double)ew_bytes[e.kind] * (double)b->n;
    *value = bytes / t_tt * 1e-9;
    *limit = (add_limit ? 12.0 * (double)b->n : bytes) / t_lim * 1e-9;
    ok = true;
out:
    tt_release(ta);
    tt_release(tb);
    tt_release(tb_view);
    tt_release(tc);
    return ok;
}

/* -------------------------------------------------------------- dispatch */

#define DISPATCH_INNER 100000

typedef struct {
    tt_tensor *a, *b;
    float x, y;
} disp_ctx;

static bool disp_tt(void *p)
{
    disp_ctx *d = p;
    for (int i = 0; i < DISPATCH_INNER; i++) {
        tt_tensor *r = tt_add(d->a, d->b);
        if (!r)
            return false;
        tt_release(r);
    }
    return true;
}

/* The same under the profiler: each batch its own profile, so the
 * events of all batches do not pile up. */
static bool disp_tt_profiled(void *p)
{
    if (tt_profile_begin())
        return false;
    bool ok = disp_tt(p);
    tt_profile *prof = tt_profile_end();
    ok = ok && prof && tt_profile_num_events(prof) == DISPATCH_INNER;
    tt_profile_free(prof);
    return ok;
}

/* The limit: the same float add in a function the compiler may not
 * inline, the least a call can cost. */
__attribute__((noinline)) static float plain_add(float x, float y)
{
    __asm__ volatile("" ::: "memory");
    return x + y;
}

static bool disp_plain(void *p)
{
    disp_ctx *d = p;
    for (int i = 0; i < DISPATCH_INNER; i++)
        sink = plain_add(d->x, d->y);
    return true;
}

static bool bench_dispatch(const bench *b, const bench_opts *o, double *value, double *limit)
{
    disp_ctx d = {.x = 1.5f, .y = 2.25f};
    d.a = tt_full(TT_SHAPE(1), 1.5, TT_F32);
    d.b = tt_full(TT_SHAPE(1), 2.25, TT_F32);
    double t_tt = 0, t_plain = 0;
    /* Profiled, the limit is the same call unprofiled. */
    bool ok = d.a && d.b &&
              best_pair(b->variant ? disp_tt_profiled : disp_tt, &d,
                        b->variant ? disp_tt : disp_plain, &d, o, 3, 1, &t_tt, &t_plain);
    *value = t_tt / DISPATCH_INNER * 1e9;
    *limit = t_plain / DISPATCH_INNER * 1e9;
    tt_release(d.a);
    tt_release(d.b);
    return ok;
}

/* ------------------------------------------------------- tracing, compile */

/* A chain of small elementwise ops (CHAIN of them unless ud points to
 * another length): the tracing and replay bench. */
#define CHAIN 1000
#define CHAIN_LONG 100000

static tt_status chain_fn(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    int len = ud ? *(const int *)ud : CHAIN;
    tt_tensor *x = tt_retain(in[0]);
    for (int i = 0; i < len && x; i++) {
        tt_tensor *y;
        switch (i % 4) {
        case 0: y = tt_mul_scalar(x, 1.0001); break;
        case 1: y = tt_add(x, in[1]); break;
        case 2: y = tt_sin(x); break;
        default: y = tt_sub(x, in[1]); break;
        }
        tt_release(x);
        x = y;
    }
    out[0] = x;
    return x ? TT_OK : tt_errcode();
}

typedef struct {
    tt_tensor *in[2];
    tt_compiled *c;
    int len; /* chain length of the tracing/compile/explain benches */
} chain_ctx;

static bool chain_trace(void *p)
{
    chain_ctx *c = p;
    tt_trace_opts o = {.mode = TT_TRACE_FAKE, .fullgraph = true, .ud = &c->len};
    tt_graph *g = tt_trace(chain_fn, 2, c->in, &o);
    tt_graph_free(g);
    return g != NULL;
}

/* Tracing, all compile passes and the plan: compile and its first call. */
static bool chain_compile(void *p)
{
    chain_ctx *c = p;
    tt_trace_opts o = {.mode = TT_TRACE_FAKE, .fullgraph = true, .ud = &c->len,
                       .ud_size = sizeof c->len};
    tt_compiled *cc = tt_compile(chain_fn, 2, 1, &o);
    tt_tensor *r = NULL;
    bool ok = cc && tt_compiled_call(cc, c->in, &r) == TT_OK;
    tt_release(r);
    tt_compiled_free(cc);
    return ok;
}

static bool chain_explain(void *p)
{
    chain_ctx *c = p;
    tt_trace_opts o = {.mode = TT_TRACE_FAKE, .ud = &c->len};
    tt_explain *e = tt_explain_run(chain_fn, 2, c->in, &o);
    tt_explain_free(e);
    return e != NULL;
}

static bool chain_eager(void *p)
{
    chain_ctx *c = p;
    tt_tensor *r = NULL;
    if (chain_fn(c->in, 2, &r, 1, NULL))
        return false;
    tt_release(r);
    return true;
}

static bool chain_replay(void *p)
{
    chain_ctx *c = p;
    tt_tensor *r = NULL;
    if (tt_compiled_call(c->c, c->in, &r))
        return false;
    tt_release(r);
    return true;
}

/* Microseconds per traced node (fake mode), beside the eager cost of an op
 * of the same chain on real 64-element tensors. */
static bool bench_trace(const bench *b, const bench_opts *o, double *value, double *limit)
{
    (void)b;
    chain_ctx c = {{tt_randn(TT_SHAPE(64), TT_F32), tt_randn(TT_SHAPE(64), TT_F32)}, NULL, CHAIN};
    double tt = 0, te = 0;
    bool ok = c.in[0] && c.in[1] && best_pair(chain_trace, &c, chain_eager, &c, o, 3, 1, &tt, &te);
    *value = tt / CHAIN * 1e6;
    *limit = te / CHAIN * 1e6;
    tt_release(c.in[0]);
    tt_release(c.in[1]);
    return ok;
}

typedef struct {
    work_fn fn;
    void *ctx;
    int times;
} repeat_ctx;

static bool repeat(void *p)
{
    repeat_ctx *r = p;
    for (int i = 0; i < r->times; i++)
        if (!r->fn(r->ctx))
            return false;
    return true;
}

/* Microseconds per node of tracing (or compiling, or explaining) a chain of
 * 100,000 ops, beside the same per 1,000-op chain: the cost must grow
 * linearly with the graph (goal: ratio <= 1.5). */
static bool bench_scaling(const bench *b, const bench_opts *o, double *value, double *limit)
{
    work_fn fn = b->variant == CHAIN_COMPILE ? chain_compile
               : b->variant == CHAIN_EXPLAIN ? chain_explain : chain_trace;
    chain_ctx big = {{tt_randn(TT_SHAPE(64), TT_F32), tt_randn(TT_SHAPE(64), TT_F32)}, NULL,
                     (int)b->n};
    chain_ctx small = big;
    small.len = CHAIN;
    /* The limit runs as many 1,000-node chains as the big one has nodes,
     * so both timed units are the same work and see the same load. */
    repeat_ctx many = {fn, &small, (int)(b->n / CHAIN)};
    double tb = 0, ts = 0;
    bool ok = big.in[0] && big.in[1] && best_pair(fn, &big, repeat, &many, o, 2, 1, &tb, &ts);
    *value = tb / (double)b->n * 1e6;
    *limit = ts / (double)b->n * 1e6;
    tt_release(big.in[0]);
    tt_release(big.in[1]);
    return ok;
}

/* Replaying the compiled chain (fused, kernels resolved once) beside
 * running it eagerly, microseconds per call of the whole chain. */
static bool bench_replay(const bench *b, const bench_opts *o, double *value, double *limit)
{
    (void)b;
    chain_ctx c = {{tt_randn(TT_SHAPE(64), TT_F32), tt_randn(TT_SHAPE(64), TT_F32)}, NULL, CHAIN};
    tt_trace_opts opts = {.mode = TT_TRACE_FAKE, .fullgraph = true};
    c.c = tt_compile(chain_fn, 2, 1, &opts);
    double tr = 0, te = 0;
    bool ok = c.in[0] && c.in[1] && c.c &&
              best_pair(chain_replay, &c, chain_eager, &c, o, 5, 1, &tr, &te);
    *value = tr * 1e6;
    *limit = te * 1e6;
    tt_compiled_free(c.c);
    tt_release(c.in[0]);
    tt_release(c.in[1]);
    return ok;
}

/* The training step of a 784-512-256-10 MLP with ReLU and cross_entropy,
 * batch 256, SGD with lr 0.01: in = x, y, w1, b1, w2, b2, w3, b3. */
enum { MLP_B = 256 };

static tt_status mlp_step(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    return tt_mlp_sgd_step(in, 0.01, &out[0]);
}

typedef struct {
    tt_tensor *in[8];
    tt_compiled *c;
    /* The GEMM floor: the step's eight matrix products as raw sgemm. */
    float *x, *w1, *w2, *w3, *h1, *h2, *o3, *g1, *g2, *dw;
} mlp_ctx;

static bool mlp_eager(void *p)
{
    mlp_ctx *m = p;
    tt_tensor *r = NULL;
    if (mlp_step(m->in, 8, &r, 1, NULL))
        return false;
    tt_release(r);
    return true;
}

static bool mlp_compiled(void *p)
{
    mlp_ctx *m = p;
    tt_tensor *r = NULL;
    if (tt_compiled_call(m->c, m->in, &r))
        return false;
    tt_release(r);
    return true;
}

static bool mlp_gemms(void *p)
{
    mlp_ctx *m = p;
    const CBLAS_ORDER R = CblasRowMajor;
    /* forward: x w1^T, h1 w2^T, h2 w3^T */
    cblas_sgemm(R, CblasNoTrans, CblasTrans, MLP_B, 512, 784, 1, m->x, 784, m->w1, 784, 0, m->h1, 512);
    cblas_sgemm(R, CblasNoTrans, CblasTrans, MLP_B, 256, 512, 1, m->h1, 512, m->w2, 512, 0, m->h2, 256);
    cblas_sgemm(R, CblasNoTrans, CblasTrans, MLP_B, 10, 256, 1, m->h2, 256, m->w3, 256, 0, m->o3, 10);
    /* backward: dW3 = g3^T h2, dh2 = g3 w3, dW2 = g2^T h1, dh1 = g2 w2, dW1 = g1^T x */
    cblas_sgemm(R, CblasTrans, CblasNoTrans, 10, 256, MLP_B, 1, m->o3, 10, m->h2, 256, 0, m->dw, 256);
    cblas_sgemm(R, CblasNoTrans, CblasNoTrans, MLP_B, 256, 10, 1, m->o3, 10, m->w3, 256, 0, m->g2, 256);
    cblas_sgemm(R, CblasTrans, CblasNoTrans, 256, 512, MLP_B, 1, m->g2, 256, m->h1, 512, 0, m->dw, 512);
    cblas_sgemm(R, CblasNoTrans, CblasNoTrans, MLP_B, 512, 256, 1, m->g2, 256, m->w2, 512, 0, m->g1, 512);
    cblas_sgemm(R, CblasTrans, CblasNoTrans, 512, 784, MLP_B, 1, m->g1, 512, m->x, 784, 0, m->dw, 784);
    sink = m->dw[0];
    return true;
}

static void mlp_free(mlp_ctx *m)
{
    for (int i = 0; i < 8; i++)
        tt_release(m->in[i]);
    tt_compiled_free(m->c);
    float *bufs[] = {m->x, m->w1, m->w2, m->w3, m->h1, m->h2, m->o3, m->g1, m->g2, m->dw};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        free(bufs[i]);
}

static bool mlp_setup(mlp_ctx *m)
{
    memset(m, 0, sizeof *m);
    tt_manual_seed(11);
    int64_t labels[MLP_B];
    for (int i = 0; i < MLP_B; i++)
        labels[i] = i % 10;
    int64_t shapes[8][2] = {{MLP_B, 784}, {MLP_B, 0}, {512, 784}, {512, 0},
                            {256, 512},   {256, 0},   {10, 256},  {10, 0}};
    for (int i = 0; i < 8; i++) {
        int nd = shapes[i][1] ? 2 : 1;
        if (i == 1)
            m->in[i] = tt_from_data(1, shapes[i], TT_I64, labels);
        else if (i % 2 == 1)
            m->in[i] = tt_zeros(nd, shapes[i], TT_F32);
        else
            m->in[i] = tt_randn(nd, shapes[i], TT_F32);
        if (!m->in[i])
            return false;
    }
    tt_no_grad_begin(); /* small initial weights: 1/sqrt(fan_in) */
    tt_status st = tt_mul_scalar_(m->in[2], 1 / 28.0) || tt_mul_scalar_(m->in[4], 1 / 22.6) ||
                   tt_mul_scalar_(m->in[6], 1 / 16.0);
    tt_no_grad_end();
    for (int i = 2; i < 8 && !st; i++)
        st = tt_set_requires_grad(m->in[i], true);
    size_t sizes[] = {MLP_B * 784, 512 * 784, 256 * 512, 10 * 256, MLP_B * 512, MLP_B * 256,
                      MLP_B * 10, MLP_B * 512, MLP_B * 256, 512 * 784};
    float **bufs[] = {&m->x, &m->w1, &m->w2, &m->w3, &m->h1, &m->h2, &m->o3, &m->g1, &m->g2, &m->dw};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) {
        *bufs[i] = calloc(sizes[i], sizeof(float));
        if (!*bufs[i])
            return false;
    }
    return !st;
}

/* The MLP benches run at the thread count in b->n (ours and OpenBLAS's,
 * the floor's raw sgemm included), with the passes in b->passes_off
 * switched off for the compiled step. */
static void mlp_threads(int n)
{
    tt_set_num_threads(n);
    openblas_set_num_threads(n ? n : tt_get_num_threads());
}

/* Milliseconds per eager training step, beside its eight GEMMs alone. */
static bool bench_mlp_eager(const bench *b, const bench_opts *o, double *value, double *limit)
{
    mlp_ctx m;
    double te = 0, tg = 0;
    mlp_threads((int)b->n);
    bool ok = mlp_setup(&m) && best_pair(mlp_eager, &m, mlp_gemms, &m, o, 3, 1, &te, &tg);
    *value = te * 1e3;
    *limit = tg * 1e3;
    mlp_free(&m);
    mlp_threads(0);
    return ok;
}

/* Milliseconds per compiled training step (one traced graph: forward,
 * backward, SGD), beside its eight GEMMs alone (the goal: within 1.10x)
 * or, for the _vs_eager rows, beside the eager step (at most 1x). */
static bool bench_mlp_compiled(const bench *b, const bench_opts *o, double *value,
                               double *limit)
{
    mlp_ctx m;
    tt_trace_opts opts = {.mode = TT_TRACE_FAKE, .fullgraph = true,
                          .passes_off = b->passes_off};
    double tc = 0, tl = 0;
    mlp_threads((int)b->n);
    work_fn lim = b->variant == MLP_LIMIT_EAGER ? mlp_eager : mlp_gemms;
    bool ok = mlp_setup(&m) && (m.c = tt_compile(mlp_step, 8, 1, &opts)) != NULL &&
              best_pair(mlp_compiled, &m, lim, &m, o, 3, 1, &tc, &tl);
    *value = tc * 1e3;
    *limit = tl * 1e3;
    mlp_free(&m);
    mlp_threads(0);
    return ok;
}

/* ----------------------------------------------------------------- GPT-2 */

/* The training step of examples/gpt2 (forward, cross-entropy, backward,
 * AdamW) for 6 layers, 6 heads, 384 channels, vocabulary 256, batch 4,
 * sequence 128. Its floor is the step's matrix products alone as raw
 * cblas_sgemm at the same thread count: per layer the four linear layers
 * forward and their two products each backward, the attention's two
 * products per head forward and four backward (full (T, T) blocks, where
 * the fused causal kernel computes about 5/8 of them at T = 128, and
 * recomputes the scores once more in the backward), and the tied output
 * projection's three. */
enum { G_L = 6, G_NH = 6, G_C = 384, G_V = 256, G_B = 4, G_T = 128 };

typedef struct {
    gpt2_state s;
    gpt2_step_args a;
    tt_tensor *tokens, *targets, *pos, **in;
    tt_compiled *c;
    float *x, *y, *z; /* the floor's operands, large enough for every product */
} gpt2_ctx;

static void gpt2_free(gpt2_ctx *g)
{
    tt_compiled_free(g->c);
    free(g->in);
    tt_release(g->tokens);
    tt_release(g->targets);
    tt_release(g->pos);
    gpt2_step_args_free(&g->a);
    gpt2_state_free(&g->s);
    free(g->x);
    free(g->y);
    free(g->z);
}

/* A random init, a fixed batch of byte tokens, the step's inputs and, when
 * compiled, the step traced once. */
static bool gpt2_setup(gpt2_ctx *g, bool compiled)
{
    memset(g, 0, sizeof *g);
    g->s.cfg = (gpt2_config){.max_seq_len = G_T, .vocab_size = G_V, .padded_vocab_size = G_V,
                             .num_layers = G_L, .num_heads = G_NH, .channels = G_C};
    if (gpt2_state_alloc(&g->s) || gpt2_state_init_random(&g->s, 1337) ||
        gpt2_step_args_init(&g->a, &g->s.cfg, 1e-4, 0) || tt_fill_(g->s.step, 1))
        return false;
    int64_t tok[G_B * G_T], tgt[G_B * G_T];
    for (int i = 0; i < G_B * G_T; i++)
        tok[i] = (i * 7 + i / 13) % G_V, tgt[i] = (i * 11 + 3) % G_V;
    g->tokens = tt_from_data(TT_SHAPE(G_B, G_T), TT_I64, tok);
    g->targets = tt_from_data(TT_SHAPE(G_B, G_T), TT_I64, tgt);
    g->pos = tt_arange(0, G_T, 1, TT_I64);
    if (!g->tokens || !g->targets || !g->pos ||
        !(g->in = gpt2_step_inputs(&g->s, g->tokens, g->targets, g->pos)))
        return false;
    size_t n = (size_t)G_B * G_T * 4 * G_C;
    g->x = calloc(n, sizeof(float)), g->y = calloc(n, sizeof(float)), g->z = calloc(n, sizeof(float));
    if (!g->x || !g->y || !g->z)
        return false;
    return !compiled || (g->c = gpt2_compile_step(&g->a)) != NULL;
}

static bool gpt2_eager(void *p)
{
    gpt2_ctx *g = p;
    tt_tensor *r = NULL;
    if (gpt2_train_step(g->in, GPT2_NFIXED + 3 * g->s.np, &r, 1, &g->a))
        return false;
    tt_release(r);
    return true;
}

static bool gpt2_compiled(void *p)
{
    gpt2_ctx *g = p;
    tt_tensor *r = NULL;
    if (tt_compiled_call(g->c, g->in, &r))
        return false;
    tt_release(r);
    return true;
}

/* C (m, n) = op(A) op(B), row-major, k the inner size. */
static void sgemm(const gpt2_ctx *g, bool ta, bool tb, int m, int n, int k)
{
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                m, n, k, 1, g->x, ta ? m : k, g->y, tb ? k : n, 0, g->z, n);
}

/* A linear layer (M, K) -> (M, N): forward, and backward dX and dW. */
static void linear_gemms(const gpt2_ctx *g, int M, int K, int N)
{
    sgemm(g, false, true, M, N, K);  /* y = x W^T */
    sgemm(g, false, false, M, K, N); /* dx = dy W */
    sgemm(g, true, false, N, K, M);  /* dW = dy^T x */
}

static bool gpt2_gemms(void *p)
{
    const gpt2_ctx *g = p;
    const int M = G_B * G_T, C = G_C, T = G_T, hs = G_C / G_NH;
    for (int l = 0; l < G_L; l++) {
        linear_gemms(g, M, C, 3 * C);
        linear_gemms(g, M, C, C);
        linear_gemms(g, M, C, 4 * C);
        linear_gemms(g, M, 4 * C, C);
        for (int h = 0; h < G_B * G_NH; h++) {
            sgemm(g, false, true, T, T, hs);  /* S = Q K^T */
            sgemm(g, false, false, T, hs, T); /* O = P V */
            sgemm(g, true, false, T, hs, T);  /* dV = P^T dO */
            sgemm(g, false, true, T, T, hs);  /* dP = dO V^T */
            sgemm(g, false, false, T, hs, T); /* dQ = dS K */
            sgemm(g, true, false, T, hs, T);  /* dK = dS^T Q */
        }
    }
    linear_gemms(g, M, C, G_V); /* logits = x wte^T, tied */
    sink = g->z[0];
    return true;
}

/* Runs the library and OpenBLAS on `n` threads; returns the old counts. */
static void set_threads(int n, int *old_tt, int *old_blas)
{
    if (old_tt)
        *old_tt = tt_get_num_threads(), *old_blas = openblas_get_num_threads();
    tt_set_num_threads(n);
    openblas_set_num_threads(n);
}

/* The last compiled step measured, for the tokens/s line. */
static struct {
    int threads;
    double step_ms, floor_ms;
} gpt2_last;

/* Milliseconds per step (b->n threads; b->trans: compiled), beside its
 * matrix products alone. */
static bool bench_gpt2_step(const bench *b, const bench_opts *o, double *value, double *limit)
{
    int ot, ob;
    set_threads((int)b->n, &ot, &ob);
    gpt2_ctx g;
    double ts = 0, tg = 0;
    bool ok = gpt2_setup(&g, b->trans) &&
              best_pair(b->trans ? gpt2_compiled : gpt2_eager, &g, gpt2_gemms, &g, o,
                        o->quick ? 2 : 3, 1, &ts, &tg);
    *value = ts * 1e3;
    *limit = tg * 1e3;
    if (ok && b->trans)
        gpt2_last.threads = (int)b->n, gpt2_last.step_ms = *value, gpt2_last.floor_ms = *limit;
    gpt2_free(&g);
    set_threads(ot, NULL, NULL);
    openblas_set_num_threads(ob);
    return ok;
}

/* ResNet-18 (tools/resnet18.h), batch 32 of 3x32x32 images, 10 classes,
 * SGD with momentum: one training step, eager or compiled, beside its
 * floor: each of its 20 convolutions forward and backward (data and
 * weights) alone, at the step's shapes, and the classifier's products. */
enum { R_B = 32, R_HW = 32, R_CLASSES = 10 };

typedef struct {
    resnet18 r;
    tt_compiled *c;
    tt_tensor *conv[RESNET_NCONV][3]; /* the floor's operands */
    float *x, *y, *z;
} resnet_ctx;

static void resnet_free(resnet_ctx *g)
{
    tt_compiled_free(g->c);
    tt_release(g->r.in[0]);
    tt_release(g->r.in[1]);
    for (int c = 0; c < RESNET_NCONV; c++)
        for (int i = 0; i < 3; i++)
            tt_release(g->conv[c][i]);
    resnet18_free(&g->r);
    free(g->x);
    free(g->y);
    free(g->z);
}

static bool resnet_setup(resnet_ctx *g, bool compiled)
{
    memset(g, 0, sizeof *g);
    if (resnet18_init(&g->r, R_CLASSES, 7))
        return false;
    int64_t labels[R_B];
    for (int i = 0; i < R_B; i++)
        labels[i] = (i * 7 + 3) % R_CLASSES;
    g->r.in[0] = tt_randn(TT_SHAPE(R_B, 3, R_HW, R_HW), TT_F32);
    g->r.in[1] = tt_from_data(TT_SHAPE(R_B), TT_I64, labels);
    if (!g->r.in[0] || !g->r.in[1])
        return false;
    for (int c = 0; c < RESNET_NCONV; c++)
        if (resnet18_conv_operands(&g->r, R_B, R_HW, R_HW, c, g->conv[c]))
            return false;
    g->x = calloc(R_B * 512, sizeof(float)), g->y = calloc(512 * R_CLASSES, sizeof(float));
    g->z = calloc(R_B * 512, sizeof(float));
    if (!g->x || !g->y || !g->z)
        return false;
    return !compiled || (g->c = tt_compile(resnet18_step, RESNET_STEP_NIN, 1,
                                           &(tt_trace_opts){.mode = TT_TRACE_FAKE,
                                                            .fullgraph = true,
                                                            .name = "resnet18_step",
                                                            .ud = &g->r,
                                                            .ud_size = sizeof g->r.sgd}));
}

static bool resnet_eager(void *p)
{
    resnet_ctx *g = p;
    tt_tensor *l = NULL;
    if (resnet18_step(g->r.in, RESNET_STEP_NIN, &l, 1, &g->r))
        return false;
    tt_release(l);
    return true;
}

static bool resnet_compiled(void *p)
{
    resnet_ctx *g = p;
    tt_tensor *l = NULL;
    if (tt_compiled_call(g->c, g->r.in, &l))
        return false;
    tt_release(l);
    return true;
}

static bool resnet_floor(void *p)
{
    resnet_ctx *g = p;
    for (int c = 0; c < RESNET_NCONV; c++)
        if (resnet18_conv_alone(&g->r, c, g->conv[c]))
            return false;
    /* the classifier: y = x W^T, dx = dy W, dW = dy^T x */
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, R_B, R_CLASSES, 512, 1, g->x, 512,
                g->y, 512, 0, g->z, R_CLASSES);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, R_B, 512, R_CLASSES, 1, g->z,
                R_CLASSES, g->y, 512, 0, g->x, 512);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, R_CLASSES, 512, R_B, 1, g->z,
                R_CLASSES, g->x, 512, 0, g->y, 512);
    sink = g->z[0];
    return true;
}

/* Milliseconds per step (b->n threads; b->trans: compiled) beside the floor. */
static bool bench_resnet_step(const bench *b, const bench_opts *o, double *value,
                              double *limit)
{
    int ot, ob;
    set_threads((int)b->n, &ot, &ob);
    resnet_ctx g;
    double ts = 0, tf = 0;
    bool ok = resnet_setup(&g, b->trans) &&
              best_pair(b->trans ? resnet_compiled : resnet_eager, &g, resnet_floor, &g, o,
                        o->quick ? 2 : 3, 1, &ts, &tf);
    *value = ts * 1e3;
    *limit = tf * 1e3;
    resnet_free(&g);
    set_threads(ot, NULL, NULL);
    openblas_set_num_threads(ob);
    return ok;
}

/* The same step by the plain-C reference (examples/gpt2/reference, our
 * re-implementation of llm.c's algorithm: hand-written loops, -Ofast,
 * OpenMP) from the same init on the same batch. */
typedef struct {
    gpt2_ctx g;
    gpt2ref *r;
} gpt2_reference_ctx;

static bool gpt2_reference(void *p)
{
    gpt2_reference_ctx *x = p;
    double loss;
    return gpt2_reference_step(x->r, x->g.tokens, x->g.targets, 1, &x->g.a, &loss) == TT_OK;
}

/* Milliseconds per reference step on b->n OpenMP threads, beside the same
 * floor as the lines above (raw sgemm on b->n threads), so the ratios
 * read alike. */
static bool bench_gpt2_reference(const bench *b, const bench_opts *o, double *value,
                                 double *limit)
{
    int ot, ob, oref = gpt2ref_threads();
    set_threads((int)b->n, &ot, &ob);
    gpt2ref_set_threads((int)b->n);
    gpt2_reference_ctx x = {0};
    double ts = 0, tg = 0;
    bool ok = gpt2_setup(&x.g, false) &&
              (x.r = gpt2_reference_from_state(&x.g.s, G_B, G_T)) != NULL &&
              best_pair(gpt2_reference, &x, gpt2_gemms, &x.g, o, o->quick ? 2 : 3, 1, &ts, &tg);
    *value = ts * 1e3;
    *limit = tg * 1e3;
    gpt2ref_free(x.r);
    gpt2_free(&x.g);
    gpt2ref_set_threads(oref);
    set_threads(ot, NULL, NULL);
    openblas_set_num_threads(ob);
    return ok;
}

/* Tokens per second of the compiled step on b->n threads, beside the
 * tokens per second its matrix products alone would allow. */
static bool bench_gpt2_tokens(const bench *b, const bench_opts *o, double *value,
                              double *limit)
{
    bench s = *b;
    s.trans = true;
    bool ok = true;
    if (gpt2_last.threads == (int)b->n) /* measured by the line before */
        *value = gpt2_last.step_ms, *limit = gpt2_last.floor_ms;
    else
        ok = bench_gpt2_step(&s, o, value, limit);
    *value = G_B * G_T / (*value / 1e3);
    *limit = G_B * G_T / (*limit / 1e3);
    return ok;
}

/* A line of /proc/self/status in kB ("VmRSS:", "VmHWM:"); -1 if missing. */
static double proc_kb(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    double v = -1;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, key, strlen(key)) == 0)
            v = atof(line + strlen(key));
    if (f)
        fclose(f);
    return v;
}

/* The bytes of every value the step's graph computes, each storage once
 * (views share their base's), at the traced sizes. */
static double graph_value_bytes(const tt_graph *gr)
{
    const tt_tensor **seen = malloc(sizeof *seen * (size_t)tt_graph_num_nodes(gr) * 4);
    int nseen = 0;
    double total = 0;
    for (int i = 0; seen && i < tt_graph_num_nodes(gr); i++) {
        if (tt_graph_node_kind(gr, i) != TT_NODE_OP)
            continue;
        for (int j = 0; j < tt_graph_node_num_outputs(gr, i) && j < 4; j++) {
            const tt_tensor *v = tt_graph_node_value(gr, i, j);
            bool dup = !v;
            for (int k = 0; k < nseen && !dup; k++)
                dup = tt_same_storage(seen[k], v);
            if (dup)
                continue;
            seen[nseen++] = v;
            tt_size n = tt_numel(v);
            total += (double)(tt_size_is_sym(n) ? tt_sym_hint(n) : n) *
                     (double)tt_dtype_size(tt_dtype_of(v));
        }
    }
    free(seen);
    return total;
}

/* The child's side of bench_gpt2_memory: in a fresh process, the resident
 * memory after making the state, then the peak after tracing and two
 * compiled steps; prints the MB the steps added, the MB of the plan's
 * memory plan and the MB of every value the step's graph computes. */
static int gpt2_memory_child(void)
{
    gpt2_ctx g;
    bool ok = gpt2_setup(&g, true);
    double rss0 = proc_kb("VmRSS:");
    ok = ok && gpt2_compiled(&g) && gpt2_compiled(&g);
    tt_compile_stats st = {0};
    if (ok)
        tt_compiled_stats(g.c, &st);
    if (ok)
        printf("%.3f %.3f %.3f\n", (proc_kb("VmHWM:") - rss0) / 1024,
               (double)st.planned_bytes / (1024 * 1024),
               graph_value_bytes(tt_compiled_graph(g.c, 0)) / (1024 * 1024));
    gpt2_free(&g);
    return ok && rss0 > 0 ? 0 : 1;
}

/* Memory of the compiled GPT-2 step, measured once in a fresh process
 * (this one's heap already holds the earlier benches' memory) for both
 * lines: b->n 0, the MB by which tracing and running the step raise the
 * peak resident memory above the parameters and optimizer state; 1, the
 * MB of the memory plan's block (every intermediate's place); each beside
 * the MB of every value the step's graph computes: what keeping every
 * intermediate alive would take. Lower is better. */
static bool bench_gpt2_memory(const bench *b, const bench_opts *o, double *value,
                              double *limit)
{
    (void)o;
    static double figures[3];
    static bool measured;
    if (!measured) {
        char exe[4096], cmd[4200];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        if (n <= 0)
            return !tt_error(TT_EINVAL, "cannot find the bench's own executable");
        exe[n] = 0;
        snprintf(cmd, sizeof cmd, "'%s' --gpt2-memory-child", exe);
        FILE *p = popen(cmd, "r");
        measured = p && fscanf(p, "%lf %lf %lf", &figures[0], &figures[1], &figures[2]) == 3;
        if (p && pclose(p) != 0)
            measured = false;
        if (!measured)
            return !tt_error(TT_EINVAL, "the child measuring the GPT-2 step's memory failed");
    }
    *value = figures[b->n], *limit = figures[2];
    return true;
}

/* ------------------------------------------------------------ checked mode */

#define CHECKED_INNER 2000

static tt_status twice_kernel(tt_frame *f)
{
    tt_tensor *x;
    tt_status st = tt_arg_tensor(f, 0, &x);
    return st ? st : tt_return(f, 0, tt_mul_scalar(x, 2.0));
}

static tt_status like_input_fake(tt_frame *f)
{
    tt_tensor *x;
    tt_status st = tt_arg_tensor(f, 0, &x);
    return st ? st : tt_return(f, 0, tt_empty_like(x));
}

typedef struct {
    const tt_op *op;
    tt_tensor *x;
    bool checked;
} checked_ctx;

static bool checked_calls(void *p)
{
    checked_ctx *c = p;
    tt_set_checked_mode(c->checked);
    bool ok = true;
    for (int i = 0; i < CHECKED_INNER && ok; i++) {
        tt_tensor *r = tt_call(c->op, tt_v_tensor(c->x));
        ok = r != NULL;
        tt_release(r);
    }
    tt_set_checked_mode(false);
    return ok;
}

/* Microseconds per call of a small custom op (a 64x64 f32 tensor times
 * two) with checked mode on, beside the same call with it off. */
static bool bench_checked(const bench *b, const bench_opts *o, double *value, double *limit)
{
    (void)b;
    tt_library *lib = tt_library_new(TT_LIB_FRAGMENT, "benchlib");
    const tt_op *op = lib ? tt_custom_op_define(lib, &(tt_custom_op_spec){
                                .schema = "benchlib::twice(Tensor x) -> Tensor",
                                .kernel = twice_kernel, .fake = like_input_fake})
                          : NULL;
    checked_ctx on = {op, tt_randn(TT_SHAPE(64, 64), TT_F32), true}, off = on;
    off.checked = false;
    double ton = 0, toff = 0;
    bool ok = op && on.x && best_pair(checked_calls, &on, checked_calls, &off, o, 3, 1, &ton, &toff);
    *value = ton / CHECKED_INNER * 1e6;
    *limit = toff / CHECKED_INNER * 1e6;
    tt_release(on.x);
    tt_library_free(lib);
    return ok;
}

/* ------------------------------------------------ custom pointwise fusion */

/* benchlib::affine(Tensor x, float a, float b) -> Tensor: a * x + b, as a
 * user's C kernel (f32, any layout made contiguous), tagged pointwise. */
static tt_status affine_kernel(tt_frame *f)
{
    tt_tensor *x, *xc, *y;
    double a, b;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &x)) || (st = tt_arg_float(f, 1, &a)) ||
        (st = tt_arg_float(f, 2, &b)))
        return st;
    if (!(xc = tt_contiguous(x)))
        return tt_errcode();
    y = tt_empty_like(xc);
    const float *px = y ? tt_data(xc) : NULL;
    float *py = px ? tt_data(y) : NULL;
    if (!py) {
        tt_release(xc);
        tt_release(y);
        return tt_errcode();
    }
    for (int64_t i = 0, n = tt_numel(xc); i < n; i++)
        py[i] = (float)a * px[i] + (float)b;
    tt_release(xc);
    return tt_return(f, 0, y);
}

typedef struct {
    const tt_op *affine;
    tt_tensor *x;
    tt_compiled *c;
} pointwise_ctx;

/* relu -> affine (the custom op) -> mul_scalar -> neg. */
static tt_status pointwise_chain(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    const pointwise_ctx *p = ud;
    tt_scope_begin();
    tt_tensor *a = tt_call(p->affine, tt_v_tensor(tt_relu(in[0])), tt_v_float(0.5), tt_v_float(1));
    out[0] = tt_keep(tt_neg(tt_mul_scalar(a, 3)));
    tt_scope_end();
    return out[0] ? TT_OK : tt_errcode();
}

static bool pointwise_replay(void *p)
{
    pointwise_ctx *c = p;
    tt_tensor *r = NULL;
    bool ok = tt_compiled_call(c->c, &c->x, &r) == TT_OK;
    tt_release(r);
    return ok;
}

/* Milliseconds of the compiled chain over 16M f32, where the custom op,
 * tagged pointwise, fuses with the built-ins around it into one pass
 * (its kernel runs on row chunks); limit: the same plan with fusion off
 * (four passes). Below 1: what fusing a user's pointwise op buys. */
static bool bench_pointwise_fusion(const bench *b, const bench_opts *o, double *value,
                                   double *limit)
{
    tt_library *lib = tt_library_new(TT_LIB_FRAGMENT, "benchlib");
    const tt_op *op = lib ? tt_custom_op_define(lib, &(tt_custom_op_spec){
                                .schema = "benchlib::affine(Tensor x, float a, float b) -> Tensor",
                                .kernel = affine_kernel, .fake = like_input_fake,
                                .tags = TT_TAG_POINTWISE})
                          : NULL;
    pointwise_ctx fused = {op, tt_randn(TT_SHAPE(b->n), TT_F32), NULL}, plain = fused;
    fused.c = tt_compile(pointwise_chain, 1, 1,
                         &(tt_trace_opts){.fullgraph = true, .ud = &fused,
                                          .ud_constant = true});
    plain.c = tt_compile(pointwise_chain, 1, 1, &(tt_trace_opts){
        .fullgraph = true, .ud = &plain, .ud_constant = true, .passes_off = TT_PASS_FUSE});
    double tf = 0, tp = 0;
    bool ok = op && fused.x && fused.c && plain.c &&
              best_pair(pointwise_replay, &fused, pointwise_replay, &plain, o, 3, 1, &tf, &tp);
    *value = tf * 1e3;
    *limit = tp * 1e3;
    tt_compiled_free(fused.c);
    tt_compiled_free(plain.c);
    tt_release(fused.x);
    tt_library_free(lib);
    return ok;
}

/* ----------------------------------------------------------- convolution */

/* ResNet-18's convolutions at batch 32 (--quick: 8): conv1 (3 -> 64, 7x7
 * stride 2 on 32x32 images) and the four stages' 3x3 convolutions. A
 * row's n indexes conv_shapes; its variant is CONV_BWD (backward: the data
 * and weight gradients in one convolution_backward call) and/or
 * CONV_VS_SGEMM (limit: the machine's sgemm rate, cblas_sgemm n = 1024 on
 * one thread, instead of oneDNN called directly). */
enum { CONV_BWD = 1, CONV_VS_SGEMM = 2 };
static const struct {
    int64_t c, o, hw, k, s, p;
} conv_shapes[] = {
    {3, 64, 32, 7, 2, 3}, {64, 64, 56, 3, 1, 1},   {128, 128, 28, 3, 1, 1},
    {256, 256, 14, 3, 1, 1}, {512, 512, 7, 3, 1, 1},
};

/* One oneDNN pass called directly, the limit: a primitive for the whole
 * batch in oneDNN's preferred layouts, with reorders from and to plain
 * NCHW / OIHW, as PyTorch's mkldnn path runs it. The rows run on one
 * thread, where tt's call runs exactly this primitive (tt splits a batch
 * over its own threads, one primitive per chunk; see ops/conv_dnnl.c), so
 * the ratio is what tt's wrapping costs. */
typedef struct {
    dnnl_primitive_t prim, reorder[3];
    dnnl_memory_t user[3], inner[3];
    int arg[3];
    bool out[3];
} dnnl_pass;

typedef struct {
    tt_tensor *x, *w, *y, *gy;
    const tt_op *bwd;
    tt_conv_opts opts;
    dnnl_engine_t eng;
    dnnl_stream_t stream;
    dnnl_pass pass[2]; /* forward; or backward-data, backward-weights */
    int npass;
    bool backward;
} conv_ctx;

static void (*omp_threads)(int);

static bool dnnl_pass_make(conv_ctx *c, int kind, const dnnl_convolution_desc_t *fd,
                           const dnnl_convolution_desc_t *d, dnnl_pass *p, void *const ptr[3],
                           const dnnl_memory_desc_t *const user[3], const int arg[3],
                           const dnnl_query_t q[3], const bool out[3])
{
    dnnl_primitive_desc_t hint = NULL, pd = NULL;
    bool ok = dnnl_primitive_desc_create(&hint, fd, NULL, c->eng, NULL) == dnnl_success;
    if (ok && kind)
        ok = dnnl_primitive_desc_create(&pd, d, NULL, c->eng, hint) == dnnl_success;
    else if (ok)
        pd = hint, hint = NULL;
    ok = ok && dnnl_primitive_create(&p->prim, pd) == dnnl_success;
    for (int i = 0; ok && i < 3; i++) {
        const dnnl_memory_desc_t *m = dnnl_primitive_desc_query_md(pd, q[i], 0);
        p->arg[i] = arg[i], p->out[i] = out[i];
        ok = dnnl_memory_create(&p->user[i], user[i], c->eng, ptr[i]) == dnnl_success;
        if (!ok || dnnl_memory_desc_equal(m, user[i]))
            continue;
        dnnl_primitive_desc_t rpd = NULL;
        ok = dnnl_memory_create(&p->inner[i], m, c->eng, DNNL_MEMORY_ALLOCATE) == dnnl_success &&
             dnnl_reorder_primitive_desc_create(&rpd, out[i] ? m : user[i], c->eng,
                                                out[i] ? user[i] : m, c->eng,
                                                NULL) == dnnl_success &&
             dnnl_primitive_create(&p->reorder[i], rpd) == dnnl_success;
        if (rpd)
            dnnl_primitive_desc_destroy(rpd);
    }
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    if (hint)
        dnnl_primitive_desc_destroy(hint);
    return ok;
}

static bool dnnl_pass_run(conv_ctx *c, dnnl_pass *p)
{
    bool ok = true;
    for (int i = 0; ok && i < 3; i++)
        if (p->reorder[i] && !p->out[i])
            ok = dnnl_primitive_execute(p->reorder[i], c->stream, 2,
                                        (dnnl_exec_arg_t[]){{DNNL_ARG_FROM, p->user[i]},
                                                            {DNNL_ARG_TO, p->inner[i]}}) ==
                 dnnl_success;
    dnnl_exec_arg_t a[3];
    for (int i = 0; i < 3; i++)
        a[i] = (dnnl_exec_arg_t){p->arg[i], p->inner[i] ? p->inner[i] : p->user[i]};
    ok = ok && dnnl_primitive_execute(p->prim, c->stream, 3, a) == dnnl_success;
    for (int i = 0; ok && i < 3; i++)
        if (p->reorder[i] && p->out[i])
            ok = dnnl_primitive_execute(p->reorder[i], c->stream, 2,
                                        (dnnl_exec_arg_t[]){{DNNL_ARG_FROM, p->inner[i]},
                                                            {DNNL_ARG_TO, p->user[i]}}) ==
                 dnnl_success;
    return ok && dnnl_stream_wait(c->stream) == dnnl_success;
}

static void dnnl_pass_free(dnnl_pass *p)
{
    if (p->prim)
        dnnl_primitive_destroy(p->prim);
    for (int i = 0; i < 3; i++) {
        if (p->reorder[i])
            dnnl_primitive_destroy(p->reorder[i]);
        if (p->user[i])
            dnnl_memory_destroy(p->user[i]);
        if (p->inner[i])
            dnnl_memory_destroy(p->inner[i]);
    }
}

static bool conv_limit(void *p)
{
    conv_ctx *c = p;
    for (int i = 0; i < c->npass; i++)
        if (!dnnl_pass_run(c, &c->pass[i]))
            return tt_error(TT_EINTERNAL, "oneDNN called directly failed"), false;
    return true;
}

static bool conv_tt(void *p)
{
    conv_ctx *c = p;
    if (!c->backward) {
        tt_tensor *y = tt_conv2d(c->x, c->w, NULL, &c->opts);
        tt_release(y);
        return y != NULL;
    }
    const int64_t *s = c->opts.stride, *pd = c->opts.padding;
    tt_value outs[3];
    tt_status st = tt_op_call(
        c->bwd,
        (const tt_value[]){tt_v_tensor(c->gy), tt_v_tensor(c->x), tt_v_tensor(c->w), tt_v_none(),
                           tt_v_ints(2, s), tt_v_ints(2, pd), tt_v_ints(TT_INTS(1, 1)),
                           tt_v_bool(false), tt_v_ints(TT_INTS(0, 0)), tt_v_int(1),
                           tt_v_bools(3, (const bool[]){true, true, false})},
        11, outs, 3);
    for (int i = 0; !st && i < 3; i++)
        tt_value_clear(&outs[i]);
    return st == TT_OK;
}

static void conv_free(conv_ctx *c)
{
    for (int i = 0; i < 2; i++)
        dnnl_pass_free(&c->pass[i]);
    if (c->stream)
        dnnl_stream_destroy(c->stream);
    if (c->eng)
        dnnl_engine_destroy(c->eng);
    tt_release(c->x), tt_release(c->w), tt_release(c->y), tt_release(c->gy);
}

static bool conv_setup(conv_ctx *c, const bench *b, const bench_opts *o)
{
    int64_t n = o->quick ? 8 : 32, ci = conv_shapes[b->n].c, co = conv_shapes[b->n].o;
    int64_t hw = conv_shapes[b->n].hw, k = conv_shapes[b->n].k, st = conv_shapes[b->n].s;
    int64_t pad = conv_shapes[b->n].p, ohw = (hw + 2 * pad - k) / st + 1;
    c->backward = b->variant & CONV_BWD;
    c->opts = (tt_conv_opts){.stride = {st, st}, .padding = {pad, pad}};
    c->x = tt_randn(TT_SHAPE(n, ci, hw, hw), TT_F32);
    c->w = tt_randn(TT_SHAPE(co, ci, k, k), TT_F32);
    c->y = tt_empty(TT_SHAPE(n, co, ohw, ohw), TT_F32);
    c->gy = tt_randn(TT_SHAPE(n, co, ohw, ohw), TT_F32);
    c->bwd = tt_op_find("tt::convolution_backward");
    if (!c->x || !c->w || !c->y || !c->gy || !c->bwd)
        return false;
    dnnl_dims_t xd = {n, ci, hw, hw}, wd = {co, ci, k, k}, yd = {n, co, ohw, ohw};
    dnnl_dims_t sd = {st, st}, dd = {0, 0}, pl = {pad, pad};
    dnnl_memory_desc_t ux, uw, uy, ax, aw, ay;
    dnnl_convolution_desc_t fd, bd, wdsc;
    if (dnnl_engine_create(&c->eng, dnnl_cpu, 0) || dnnl_stream_create(&c->stream, c->eng, 0) ||
        dnnl_memory_desc_init_by_tag(&ux, 4, xd, dnnl_f32, dnnl_nchw) ||
        dnnl_memory_desc_init_by_tag(&uw, 4, wd, dnnl_f32, dnnl_oihw) ||
        dnnl_memory_desc_init_by_tag(&uy, 4, yd, dnnl_f32, dnnl_nchw) ||
        dnnl_memory_desc_init_by_tag(&ax, 4, xd, dnnl_f32, dnnl_format_tag_any) ||
        dnnl_memory_desc_init_by_tag(&aw, 4, wd, dnnl_f32, dnnl_format_tag_any) ||
        dnnl_memory_desc_init_by_tag(&ay, 4, yd, dnnl_f32, dnnl_format_tag_any) ||
        dnnl_dilated_convolution_forward_desc_init(&fd, dnnl_forward_training,
                                                   dnnl_convolution_direct, &ax, &aw, NULL, &ay,
                                                   sd, dd, pl, pl) ||
        dnnl_dilated_convolution_backward_data_desc_init(&bd, dnnl_convolution_direct, &ax, &aw,
                                                         &ay, sd, dd, pl, pl) ||
        dnnl_dilated_convolution_backward_weights_desc_init(
            &wdsc, dnnl_convolution_direct, &ax, &aw, NULL, &ay, sd, dd, pl, pl))
        return tt_error(TT_EINTERNAL, "oneDNN set-up failed"), false;
    void *x = tt_data(c->x), *w = tt_data(c->w), *y = tt_data(c->y), *gy = tt_data(c->gy);
    if (!c->backward) {
        c->npass = 1;
        return dnnl_pass_make(c, 0, &fd, &fd, &c->pass[0], (void *[]){x, w, y},
                              (const dnnl_memory_desc_t *[]){&ux, &uw, &uy},
                              (int[]){DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST},
                              (dnnl_query_t[]){dnnl_query_src_md, dnnl_query_weights_md,
                                               dnnl_query_dst_md},
                              (bool[]){false, false, true});
    }
    c->npass = 2;
    /* backward-data writes over x and backward-weights over w: the values
     * do not matter to the timing */
    return dnnl_pass_make(c, 1, &fd, &bd, &c->pass[0], (void *[]){gy, w, x},
                          (const dnnl_memory_desc_t *[]){&uy, &uw, &ux},
                          (int[]){DNNL_ARG_DIFF_DST, DNNL_ARG_WEIGHTS, DNNL_ARG_DIFF_SRC},
                          (dnnl_query_t[]){dnnl_query_diff_dst_md, dnnl_query_weights_md,
                                           dnnl_query_diff_src_md},
                          (bool[]){false, false, true}) &&
           dnnl_pass_make(c, 2, &fd, &wdsc, &c->pass[1], (void *[]){x, gy, w},
                          (const dnnl_memory_desc_t *[]){&ux, &uy, &uw},
                          (int[]){DNNL_ARG_SRC, DNNL_ARG_DIFF_DST, DNNL_ARG_DIFF_WEIGHTS},
                          (dnnl_query_t[]){dnnl_query_src_md, dnnl_query_diff_dst_md,
                                           dnnl_query_diff_weights_md},
                          (bool[]){false, false, true});
}

/* The sgemm rate at n = 1024 on the bench's threads (GFLOP/s). */
static bool sgemm_rate(const bench_opts *o, double *rate)
{
    mm_ctx m = {.n = 1024};
    m.a = tt_randn(TT_SHAPE(1024, 1024), TT_F32);
    m.b = tt_randn(TT_SHAPE(1024, 1024), TT_F32);
    m.c = tt_empty(TT_SHAPE(1024, 1024), TT_F32);
    double t1 = 0, t2 = 0;
    bool ok = m.a && m.b && m.c && best_pair(mm_blas, &m, mm_blas, &m, o, 2, 1, &t1, &t2);
    *rate = 2.0 * 1024 * 1024 * 1024 / (t1 < t2 ? t1 : t2) * 1e-9;
    tt_release(m.a), tt_release(m.b), tt_release(m.c);
    return ok;
}

static bool bench_conv(const bench *b, const bench_opts *o, double *value, double *limit)
{
    conv_ctx c = {0};
    mlp_threads(1);
    *(void **)&omp_threads = dlsym(RTLD_DEFAULT, "omp_set_num_threads");
    if (omp_threads) /* before the primitives are made: they keep their thread split */
        omp_threads(1);
    bool ok = conv_setup(&c, b, o);
    int64_t n = tt_sizes(c.y)[0], co = tt_sizes(c.y)[1], ohw = tt_sizes(c.y)[2];
    int64_t ci = tt_sizes(c.x)[1], k = tt_sizes(c.w)[2];
    double flop = 2.0 * (double)(n * co * ohw * ohw) * (double)(ci * k * k);
    if (c.backward)
        flop *= 2; /* backward-data and backward-weights */
    double tt = 0, tl = 0;
    if (ok && (b->variant & CONV_VS_SGEMM)) {
        ok = best_pair(conv_tt, &c, conv_tt, &c, o, 2, 1, &tt, &tl) && sgemm_rate(o, limit);
    } else if (ok) {
        ok = best_pair(conv_tt, &c, conv_limit, &c, o, 2, 1, &tt, &tl);
        *limit = flop / tl * 1e-9;
    }
    *value = flop / tt * 1e-9;
    conv_free(&c);
    mlp_threads(0);
    return ok;
}

/* A decoder's classifier, one token: x [1, 288] times W [32000, 288]^T
 * (llama2.c's 15M model) through tt_linear, beside the memory limit: the
 * time to stream W's bytes once (a sum in 16 lanes over the same buffer,
 * on the same threads). GB/s of W both ways. */
enum { DEC_K = 288, DEC_V = 32000 };
typedef struct {
    tt_tensor *x, *w;
    int threads;
} dec_ctx;

static bool dec_linear(void *p)
{
    dec_ctx *d = p;
    tt_tensor *y = tt_linear(d->x, d->w, NULL);
    tt_release(y);
    return y != NULL;
}

static void dec_stream_task(int64_t r0, int64_t r1, void *p)
{
    const float *w = tt_data(((dec_ctx *)p)->w);
    float acc[16] = {0};
    for (int64_t i = r0 * DEC_K; i < r1 * DEC_K; i += 16)
        for (int l = 0; l < 16; l++)
            acc[l] += w[i + l];
    sink = acc[0] + acc[15];
}

static bool dec_stream(void *p)
{
    tt_parallel_for(DEC_V, DEC_V / 2, dec_stream_task, p);
    return true;
}

static bool bench_decode_linear(const bench *b, const bench_opts *o, double *value,
                                double *limit)
{
    int ot, ob;
    set_threads((int)b->n, &ot, &ob);
    dec_ctx d = {tt_randn(TT_SHAPE(1, DEC_K), TT_F32), tt_randn(TT_SHAPE(DEC_V, DEC_K), TT_F32),
                 (int)b->n};
    double tl = 0, ts = 0, bytes = (double)DEC_V * DEC_K * 4;
    bool ok = d.x && d.w && best_pair(dec_linear, &d, dec_stream, &d, o, 5, 1, &tl, &ts);
    *value = bytes / tl * 1e-9;
    *limit = bytes / ts * 1e-9;
    tt_release(d.x);
    tt_release(d.w);
    set_threads(ot, NULL, NULL);
    openblas_set_num_threads(ob);
    return ok;
}

/* Issue 27's ops where they stream, on 16M f32 elements in rows of 4096,
 * beside the memory limit: the contiguous add's GB/s (12 bytes an
 * element) on the same threads in the same run. GB/s counts each op's
 * reads and writes once: gather along dim 0 by an i64 index that names
 * whole rows, in a permuted order (index 8 + value 4 + result 4 bytes an
 * element); scatter_add of rows the same way (self 4 + index 8 + src 4 +
 * result 4); index_select of rows in a permuted order (4 + 4); cumsum
 * along rows (4 + 4); masked_fill by a bool mask (4 + 1 + 4). */
enum stream_op { SO_GATHER, SO_SCATTER_ADD, SO_INDEX_SELECT, SO_CUMSUM, SO_MASKED_FILL };
enum { SO_ROWS = 4096, SO_COLS = 4096 };
static const int so_bytes[] = {[SO_GATHER] = 16, [SO_SCATTER_ADD] = 20, [SO_INDEX_SELECT] = 8,
                               [SO_CUMSUM] = 8, [SO_MASKED_FILL] = 9};

typedef struct {
    int kind;
    tt_tensor *x, *y, *idx, *rows, *mask;
} so_ctx;

static bool so_run(void *p)
{
    so_ctx *c = p;
    tt_tensor *r = c->kind == SO_GATHER        ? tt_gather(c->x, 0, c->idx)
                 : c->kind == SO_SCATTER_ADD   ? tt_scatter_add(c->x, 0, c->idx, c->y)
                 : c->kind == SO_INDEX_SELECT  ? tt_index_select(c->x, 0, c->rows)
                 : c->kind == SO_CUMSUM        ? tt_cumsum(c->x, 1)
                                               : tt_masked_fill(c->x, c->mask, 0);
    tt_release(r);
    return r != NULL;
}

static bool bench_stream_op(const bench *b, const bench_opts *o, double *value, double *limit)
{
    so_ctx c = {.kind = b->variant};
    int64_t *idx = malloc(sizeof *idx * SO_ROWS * SO_COLS), rows[SO_ROWS];
    bool *mask = malloc(sizeof *mask * SO_ROWS * SO_COLS);
    bool ok = false;
    if (!idx || !mask)
        goto out;
    /* i * odd mod 2^12 permutes the rows (unique for the scatter) */
    for (int64_t i = 0; i < SO_ROWS; i++) {
        rows[i] = (i * 2654435761) % SO_ROWS;
        for (int64_t j = 0; j < SO_COLS; j++) {
            idx[i * SO_COLS + j] = rows[i];
            mask[i * SO_COLS + j] = ((i ^ j) & 3) == 0;
        }
    }
    c.x = tt_randn(TT_SHAPE(SO_ROWS, SO_COLS), TT_F32);
    c.y = tt_randn(TT_SHAPE(SO_ROWS, SO_COLS), TT_F32);
    c.idx = tt_from_data(TT_SHAPE(SO_ROWS, SO_COLS), TT_I64, idx);
    c.rows = tt_from_data(TT_SHAPE(SO_ROWS), TT_I64, rows);
    c.mask = tt_from_data(TT_SHAPE(SO_ROWS, SO_COLS), TT_BOOL, mask);
    /* two operands: x + x would read each line once for its 12 bytes */
    ew_ctx lim = {.binary = tt_add, .a = c.x, .b = c.y, .n = SO_ROWS * SO_COLS};
    double t_op = 0, t_lim = 0, n = (double)SO_ROWS * SO_COLS;
    ok = c.x && c.y && c.idx && c.rows && c.mask &&
         best_pair(so_run, &c, ew_tt, &lim, o, 3, 1, &t_op, &t_lim);
    *value = so_bytes[c.kind] * n / t_op * 1e-9;
    *limit = 12 * n / t_lim * 1e-9;
out:
    free(idx);
    free(mask);
    tt_release(c.x);
    tt_release(c.y);
    tt_release(c.idx);
    tt_release(c.rows);
    tt_release(c.mask);
    return ok;
}

/* ResNet-18 inference (batch norms from running statistics), compiled,
 * beside the same plan with its epilogue folds off (b->passes_off): the
 * limit is what convolution + batch norm + ReLU cost as separate steps. */
typedef struct {
    resnet18 *r;
    tt_compiled *c;
} eval_ctx;

static bool resnet_eval_call(void *p)
{
    eval_ctx *e = p;
    tt_tensor *y = NULL;
    if (tt_compiled_call(e->c, e->r->in, &y))
        return false;
    tt_release(y);
    return true;
}

static bool bench_resnet_eval(const bench *b, const bench_opts *o, double *value, double *limit)
{
    int ot, ob;
    set_threads((int)b->n, &ot, &ob);
    resnet_ctx g;
    eval_ctx e[2] = {{&g.r, NULL}, {&g.r, NULL}};
    double tv = 0, tl = 0;
    bool ok = resnet_setup(&g, false);
    for (int i = 0; i < 2 && ok; i++)
        ok = (e[i].c = tt_compile(resnet18_eval, RESNET_STEP_NIN, 1,
                                  &(tt_trace_opts){.mode = TT_TRACE_FAKE, .fullgraph = true,
                                                   .name = "resnet18_eval",
                                                   .ud_constant = true,
                                                   .passes_off = i ? b->passes_off : 0})) != NULL;
    ok = ok && best_pair(resnet_eval_call, &e[0], resnet_eval_call, &e[1], o, o->quick ? 3 : 5,
                         1, &tv, &tl);
    *value = tv * 1e3;
    *limit = tl * 1e3;
    for (int i = 0; i < 2; i++)
        tt_compiled_free(e[i].c);
    resnet_free(&g);
    set_threads(ot, NULL, NULL);
    openblas_set_num_threads(ob);
    return ok;
}

/* Llama-2 (examples/llama), random weights made in memory in llama2.c's
 * 15M and 110M configs. Decoding one token reads every weight once, so
 * its limit is the time to stream the weights' bytes once (a sum in 16
 * lanes over the same buffers on the same threads, as the decode_linear
 * rows' limit): tokens/s both ways, the compiled decode step at positions
 * 32..63 (wrapping), a token and a stream timed alternately, the median of
 * each (goal: ratio >= 0.8). */
typedef struct {
    llama_model m;
    llama_cache kv;
    tt_compiled *c;
    int64_t pos;
    float *x, *y, *z, *s; /* the prefill floor's buffers */
} llama_ctx;

static void llama_ctx_free(llama_ctx *g)
{
    tt_compiled_free(g->c);
    llama_cache_free(&g->kv);
    llama_model_free(&g->m);
    free(g->x), free(g->y), free(g->z), free(g->s);
}

static bool llama_setup(llama_ctx *g, const char *config, bool compiled)
{
    memset(g, 0, sizeof *g);
    llama_config c;
    if (!llama_config_named(config, &c) || llama_model_random(&g->m, &c, 7) ||
        llama_cache_alloc(&g->kv, &c))
        return false;
    return !compiled || (g->c = llama_compile_decode(&g->m.cfg)) != NULL;
}

static bool llama_token(void *p)
{
    llama_ctx *g = p;
    tt_tensor *l = llama_decode(&g->m, &g->kv, g->c, (int)(g->pos * 37 % 256), g->pos);
    g->pos = g->pos + 1 < 64 ? g->pos + 1 : 32;
    tt_release(l);
    return l != NULL;
}

/* One weight read through by every thread, scheduled as the decode's
 * products are (guided: each thread takes what is left over twice the
 * threads, at least 64 KiB, as it finishes), so a thread that starts
 * late or shares its core holds neither up more than the other. */
typedef struct {
    const float *w;
    int64_t blocks;      /* of 1024 floats */
    atomic_llong next;   /* the next block to take */
} llama_stream_job;

static void llama_stream_task(int64_t t0, int64_t t1, void *p)
{
    (void)t0, (void)t1;
    llama_stream_job *j = p;
    float acc[16] = {0};
    int threads = tt_get_num_threads();
    for (;;) {
        long long b = atomic_load(&j->next), e;
        do {
            int64_t t = (j->blocks - b) / (2 * threads);
            e = b + (t > 16 ? t : 16);
            e = e < j->blocks ? e : j->blocks;
        } while (b < j->blocks && !atomic_compare_exchange_weak(&j->next, &b, e));
        if (b >= j->blocks)
            break;
        for (int64_t i = b * 1024; i < e * 1024; i += 16)
            for (int l = 0; l < 16; l++)
                acc[l] += j->w[i + l];
    }
    sink = acc[0] + acc[15];
}

/* Every weight once (the shared classifier is the embedding: once). */
static bool llama_stream(void *p)
{
    llama_ctx *g = p;
    for (int i = 0; i < LLAMA_NWEIGHTS; i++) {
        if (i == LLAMA_CLS && g->m.cfg.shared_classifier)
            continue;
        int64_t n = tt_numel(g->m.w[i]);
        const float *w = tt_data(g->m.w[i]);
        llama_stream_job j = {w, n / 1024, 0};
        tt_parallel_for(tt_get_num_threads(), 1, llama_stream_task, &j);
        float acc = 0;
        for (int64_t e = n / 1024 * 1024; e < n; e++)
            acc += w[e];
        sink += acc;
    }
    return true;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static bool bench_llama_decode(const bench *b, const bench_opts *o, double *value,
                               double *limit)
{
    int ot, ob;
    set_threads((int)b->n, &ot, &ob);
    llama_ctx g;
    enum { NMAX = 48 };
    int n = o->quick ? 16 : NMAX;
    double td[NMAX], ts[NMAX];
    bool ok = llama_setup(&g, b->variant ? "110M" : "15M", true);
    /* the cache's rows 0..31 from a prefill, then the specialized
     * positions and the first trace of the general plan, untimed */
    int prompt[32];
    for (int i = 0; i < 32; i++)
        prompt[i] = (i * 131 + 7) % 32000;
    tt_tensor *l = ok ? llama_prefill(&g.m, &g.kv, NULL, prompt, 32) : NULL;
    ok = l != NULL;
    tt_release(l);
    g.pos = 32;
    ok = ok && llama_token(&g) && llama_stream(&g);
    for (int i = 0; i < n && ok; i++)
        ok = timed(llama_token, &g, 1, &td[i]) && timed(llama_stream, &g, 1, &ts[i]);
    if (ok) {
        qsort(td, (size_t)n, sizeof *td, cmp_double);
        qsort(ts, (size_t)n, sizeof *ts, cmp_double);
        *value = 1 / td[n / 2];
        *limit = 1 / ts[n / 2];
    }
    llama_ctx_free(&g);
    set_threads(ot, NULL, NULL);
    openblas_set_num_threads(ob);
    return ok;
}

/* The prefill of 256 tokens in the 15M config (one call, compiled, or
 * eager for the variant 1: every layer's products on 256 rows, causal
 * attention, the cache's rows written), beside its GEMM floor: the same products alone as direct
 * cblas_sgemm calls on the model's weights (q, k, v, o, w1, w3, w2 per
 * layer; per query head S = Q K^T and O = P V in full; the last row's
 * logits), 2 threads (goal: ratio <= 1.2). */
enum { LP_T = 256 };
static int llama_prompt[LP_T];

static bool llama_prefill_call(void *p)
{
    llama_ctx *g = p;
    tt_tensor *l = llama_prefill(&g->m, &g->kv, g->c, llama_prompt, LP_T);
    tt_release(l);
    return l != NULL;
}

static bool llama_prefill_floor(void *p)
{
    llama_ctx *g = p;
    const llama_config *c = &g->m.cfg;
    int D = c->dim, H = c->hidden_dim, hs = D / c->n_heads, kvd = hs * c->n_kv_heads;
    const float *w[LLAMA_NWEIGHTS];
    for (int i = 0; i < LLAMA_NWEIGHTS; i++)
        w[i] = tt_data(g->m.w[i]);
#define LP_LINEAR(W, N, K)                                                                     \
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, LP_T, N, K, 1, g->x, K, W, K, 0,     \
                g->y, N)
    for (int l = 0; l < c->n_layers; l++) {
        LP_LINEAR(w[LLAMA_WQ] + (size_t)l * D * D, D, D);
        LP_LINEAR(w[LLAMA_WK] + (size_t)l * kvd * D, kvd, D);
        LP_LINEAR(w[LLAMA_WV] + (size_t)l * kvd * D, kvd, D);
        for (int h = 0; h < c->n_heads; h++) {
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, LP_T, LP_T, hs, 1, g->x, hs,
                        g->z, hs, 0, g->s, LP_T);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, LP_T, hs, LP_T, 1, g->s,
                        LP_T, g->z, hs, 0, g->y, hs);
        }
        LP_LINEAR(w[LLAMA_WO] + (size_t)l * D * D, D, D);
        LP_LINEAR(w[LLAMA_W1] + (size_t)l * H * D, H, D);
        LP_LINEAR(w[LLAMA_W3] + (size_t)l * H * D, H, D);
        LP_LINEAR(w[LLAMA_W2] + (size_t)l * D * H, D, H);
    }
#undef LP_LINEAR
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, 1, c->vocab_size, D, 1, g->x, D,
                w[LLAMA_CLS], D, 0, g->y, c->vocab_size);
    sink = g->y[0];
    return true;
}

static bool bench_llama_prefill(const bench *b, const bench_opts *o, double *value,
                                double *limit)
{
    int ot, ob;
    set_threads((int)b->n, &ot, &ob);
    llama_ctx g;
    double tp = 0, tf = 0;
    bool ok = llama_setup(&g, "15M", false);
    if (ok && !b->variant && !(g.c = llama_compile_prefill(&g.m.cfg)))
        ok = false;
    if (ok) {
        const llama_config *c = &g.m.cfg;
        size_t wide = (size_t)(c->hidden_dim > c->vocab_size ? c->hidden_dim : c->vocab_size);
        g.x = calloc((size_t)LP_T * (size_t)c->hidden_dim, sizeof(float));
        g.y = calloc((size_t)LP_T * wide, sizeof(float));
        g.z = calloc((size_t)LP_T * (size_t)c->dim, sizeof(float));
        g.s = calloc((size_t)LP_T * LP_T, sizeof(float));
        ok = g.x && g.y && g.z && g.s;
    }
    for (int i = 0; i < LP_T; i++)
        llama_prompt[i] = (i * 131 + 7) % 32000;
    ok = ok && best_pair(llama_prefill_call, &g, llama_prefill_floor, &g, o, o->quick ? 2 : 3,
                         1, &tp, &tf);
    *value = tp * 1e3;
    *limit = tf * 1e3;
    llama_ctx_free(&g);
    set_threads(ot, NULL, NULL);
    openblas_set_num_threads(ob);
    return ok;
}

/* ----------------------------------------------------------------- table */

static const bench benches[] = {
    {"matmul_f32_256", "GFLOP/s", bench_matmul, 256, false, false, 0, 0},
    {"matmul_f32_512", "GFLOP/s", bench_matmul, 512, false, false, 0, 0},
    {"matmul_f32_1024", "GFLOP/s", bench_matmul, 1024, false, false, 0, 0},
    {"matmul_f32_2048", "GFLOP/s", bench_matmul, 2048, false, true, 0, 0},
    {"matmul_f32_512_T", "GFLOP/s", bench_matmul, 512, true, false, 0, 0},
    {"matmul_f32_1024_T", "GFLOP/s", bench_matmul, 1024, true, false, 0, 0},
    {"add_f32_16M", "GB/s", bench_elementwise, N16M, false, false, 0, EW_ADD},
    {"mul_f32_16M", "GB/s", bench_elementwise, N16M, false, false, 0, EW_MUL},
    {"add_f32_4096x4096_T", "GB/s", bench_elementwise, N16M, true, false, 0, EW_ADD},
    {"sin_f32_16M", "GB/s", bench_elementwise, N16M, false, false, 0, EW_SIN},
    {"exp_f32_16M", "GB/s", bench_elementwise, N16M, false, false, 0, EW_EXP},
    {"tanh_f32_16M", "GB/s", bench_elementwise, N16M, false, false, 0, EW_TANH},
    {"gelu_f32_16M", "GB/s", bench_elementwise, N16M, false, false, 0, EW_GELU},
    {"sum_f32_16M", "GB/s", bench_elementwise, N16M, false, false, 0, EW_SUM},
    /* time units: lower is better, so a ratio above 1 is slower than the limit */
    {"dispatch_add_1elem", "ns/call", bench_dispatch, 1, false, false, 0, 0},
    /* limit: the same call with the profiler off (tt_profile.h) */
    {"dispatch_add_1elem_profiled", "ns/call", bench_dispatch, 1, false, false, 0, 1},
    /* limit: eager cost of one op of the same chain */
    {"trace_us_per_node", "us/node", bench_trace, CHAIN, false, false, 0, 0},
    /* limit: the per-node cost at 1,000 nodes */
    {"trace_us_per_node_100k", "us/node", bench_scaling, CHAIN_LONG, false, false, 0, CHAIN_TRACE},
    {"compile_us_per_node_100k", "us/node", bench_scaling, CHAIN_LONG, false, false, 0, CHAIN_COMPILE},
    {"explain_us_per_node_100k", "us/node", bench_scaling, CHAIN_LONG, false, false, 0, CHAIN_EXPLAIN},
    /* limit: the same 1000 ops run eagerly */
    {"replay_vs_eager_1000_small_ops", "us", bench_replay, CHAIN, false, false, 0, 0},
    /* limit: the step's eight GEMMs as raw cblas_sgemm, at the same thread
     * count (n: 1 or 2 threads); goal for compiled: ratio <= 1.10 */
    {"mlp_train_step_ms_eager_1t", "ms", bench_mlp_eager, 1, false, false, 0, 0},
    {"mlp_train_step_ms_compiled_1t", "ms", bench_mlp_compiled, 1, false, false, 0, 0},
    {"mlp_train_step_ms_eager_2t", "ms", bench_mlp_eager, 2, false, false, 0, 0},
    {"mlp_train_step_ms_compiled_2t", "ms", bench_mlp_compiled, 2, false, false, 0, 0},
    /* what each pass buys: the compiled step with one pass off */
    {"mlp_train_step_ms_compiled_1t_no_fuse", "ms", bench_mlp_compiled, 1, false, false,
     TT_PASS_FUSE, 0},
    {"mlp_train_step_ms_compiled_1t_no_epilogue", "ms", bench_mlp_compiled, 1, false, false,
     TT_PASS_EPILOGUE, 0},
    {"mlp_train_step_ms_compiled_1t_no_inplace", "ms", bench_mlp_compiled, 1, false, false,
     TT_PASS_INPLACE, 0},
    {"mlp_train_step_ms_compiled_1t_no_memplan", "ms", bench_mlp_compiled, 1, false, false,
     TT_PASS_MEMPLAN, 0},
    {"mlp_train_step_ms_compiled_1t_no_passes", "ms", bench_mlp_compiled, 1, false, false,
     TT_PASS_FUSE | TT_PASS_EPILOGUE | TT_PASS_INPLACE | TT_PASS_MEMPLAN, 0},
    /* limit: the eager step (goal: ratio <= 1) */
    {"mlp_train_step_compiled_vs_eager_1t", "ms", bench_mlp_compiled, 1, false, false, 0, MLP_LIMIT_EAGER},
    {"mlp_train_step_compiled_vs_eager_2t", "ms", bench_mlp_compiled, 2, false, false, 0, MLP_LIMIT_EAGER},
    /* GPT-2 (examples/gpt2), 6 layers, 6 heads, 384 channels, batch 4,
     * sequence 128, vocab 256; limit: the step's matrix products alone as
     * raw cblas_sgemm on the same threads (the floor) */
    {"gpt2_train_step_ms_eager_1t", "ms", bench_gpt2_step, 1, false, false, 0, 0},
    {"gpt2_train_step_ms_compiled_1t", "ms", bench_gpt2_step, 1, true, false, 0, 0},
    {"gpt2_train_step_ms_eager_2t", "ms", bench_gpt2_step, 2, false, false, 0, 0},
    {"gpt2_train_step_ms_compiled_2t", "ms", bench_gpt2_step, 2, true, false, 0, 0},
    /* the same step by the plain-C reference (our re-implementation of
     * llm.c's algorithm, OpenMP threads); limit: the same floor */
    {"gpt2_train_step_ms_reference_1t", "ms", bench_gpt2_reference, 1, false, false, 0, 0},
    {"gpt2_train_step_ms_reference_2t", "ms", bench_gpt2_reference, 2, false, false, 0, 0},
    /* ResNet-18 (tools/resnet18.c), batch 32, 3x32x32, SGD with momentum;
     * limit: its 20 convolutions forward and backward alone and the
     * classifier's products (the floor); goal for compiled: ratio <= 1.2 */
    {"resnet18_train_step_ms_eager_1t", "ms", bench_resnet_step, 1, false, false, 0, 0},
    {"resnet18_train_step_ms_compiled_1t", "ms", bench_resnet_step, 1, true, false, 0, 0},
    {"resnet18_train_step_ms_eager_2t", "ms", bench_resnet_step, 2, false, false, 0, 0},
    {"resnet18_train_step_ms_compiled_2t", "ms", bench_resnet_step, 2, true, false, 0, 0},
    {"decode_linear_f32_1x288x32000_1t", "GB/s", bench_decode_linear, 1, false, false, 0, 0},
    {"decode_linear_f32_1x288x32000_2t", "GB/s", bench_decode_linear, 2, false, false, 0, 0},
    /* limit: the contiguous add's GB/s (memory speed); goal: ratio >= 0.8 */
    {"gather_f32_16M_rows", "GB/s", bench_stream_op, N16M, false, false, 0, SO_GATHER},
    {"scatter_add_f32_16M_rows", "GB/s", bench_stream_op, N16M, false, false, 0, SO_SCATTER_ADD},
    {"index_select_f32_16M_rows", "GB/s", bench_stream_op, N16M, false, false, 0, SO_INDEX_SELECT},
    {"cumsum_f32_16M_rows", "GB/s", bench_stream_op, N16M, false, false, 0, SO_CUMSUM},
    {"masked_fill_f32_16M", "GB/s", bench_stream_op, N16M, false, false, 0, SO_MASKED_FILL},
    {"resnet18_eval_ms_compiled_1t", "ms", bench_resnet_eval, 1, false, false, TT_PASS_EPILOGUE, 0},
    {"resnet18_eval_ms_compiled_2t", "ms", bench_resnet_eval, 2, false, false, TT_PASS_EPILOGUE, 0},
    /* Llama-2 (examples/llama), random weights, compiled decode step;
     * limit: the tokens/s that streaming the weights once allows (goal:
     * ratio >= 0.8); the variant is the config (0: 15M, 1: 110M) */
    {"llama_decode_15M_tok_s_1t", "tok/s", bench_llama_decode, 1, false, false, 0, 0},
    {"llama_decode_15M_tok_s_2t", "tok/s", bench_llama_decode, 2, false, false, 0, 0},
    {"llama_decode_110M_tok_s_1t", "tok/s", bench_llama_decode, 1, false, false, 0, 1},
    {"llama_decode_110M_tok_s_2t", "tok/s", bench_llama_decode, 2, false, false, 0, 1},
    /* limit: its products alone as cblas_sgemm (goal: ratio <= 1.2) */
    {"llama_prefill_256_15M_ms", "ms", bench_llama_prefill, 2, false, false, 0, 0},
    {"llama_prefill_256_15M_ms_eager", "ms", bench_llama_prefill, 2, false, false, 0, 1},
    /* limit: the tokens/s the floor allows */
    {"gpt2_tokens_per_s_compiled_2t", "tokens/s", bench_gpt2_tokens, 2, true, false, 0, 0},
    /* limit: the MB of every value the step's graph computes */
    {"gpt2_compiled_step_peak_rss_MB", "MB", bench_gpt2_memory, 0, true, false, 0, 0},
    {"gpt2_compiled_step_planned_MB", "MB", bench_gpt2_memory, 1, true, false, 0, 0},
    /* limit: the same compiled chain with fusion off */
    {"custom_pointwise_chain_fused_16M", "ms", bench_pointwise_fusion, N16M, false, false, 0, 0},
    /* ResNet-18's convolutions (batch 32, --quick 8), GFLOP/s on one
     * thread; limit: the same oneDNN primitive called directly (goal:
     * ratio >= 0.95, i.e. at most 1.05x its time) */
    {"conv_fwd_r18_conv1_7x7s2_1t", "GFLOP/s", bench_conv, 0, false, false, 0, 0},
    {"conv_fwd_r18_64x56_1t", "GFLOP/s", bench_conv, 1, false, false, 0, 0},
    {"conv_fwd_r18_128x28_1t", "GFLOP/s", bench_conv, 2, false, false, 0, 0},
    {"conv_fwd_r18_256x14_1t", "GFLOP/s", bench_conv, 3, false, false, 0, 0},
    {"conv_fwd_r18_512x7_1t", "GFLOP/s", bench_conv, 4, false, false, 0, 0},
    {"conv_bwd_r18_conv1_7x7s2_1t", "GFLOP/s", bench_conv, 0, false, false, 0, CONV_BWD},
    {"conv_bwd_r18_64x56_1t", "GFLOP/s", bench_conv, 1, false, false, 0, CONV_BWD},
    {"conv_bwd_r18_128x28_1t", "GFLOP/s", bench_conv, 2, false, false, 0, CONV_BWD},
    {"conv_bwd_r18_256x14_1t", "GFLOP/s", bench_conv, 3, false, false, 0, CONV_BWD},
    {"conv_bwd_r18_512x7_1t", "GFLOP/s", bench_conv, 4, false, false, 0, CONV_BWD},
    /* limit: the machine's sgemm rate (n = 1024, one thread) */
    {"conv_fwd_r18_64x56_1t_vs_sgemm", "GFLOP/s", bench_conv, 1, false, true, 0,
     CONV_VS_SGEMM},
    {"conv_bwd_r18_256x14_1t_vs_sgemm", "GFLOP/s", bench_conv, 3, false, true, 0,
     CONV_VS_SGEMM | CONV_BWD},
    /* limit: the same custom-op call with checked mode off */
    {"checked_mode_overhead", "us/call", bench_checked, 1, false, false, 0, 0},
};

int main(int argc, char **argv)
{
    bench_opts o = {0};
    int nfilters = 0;
    const char *filters[64];
    if (argc == 2 && strcmp(argv[1], "--gpt2-memory-child") == 0)
        return gpt2_memory_child();
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            o.quick = true;
        } else if (strcmp(argv[i], "--help") == 0 || argv[i][0] == '-') {
            fprintf(stderr, "usage: tt-bench [--quick] [name-substring...]\n");
            return strcmp(argv[i], "--help") == 0 ? 0 : 2;
        } else if (nfilters < 64) {
            filters[nfilters++] = argv[i];
        }
    }
    int failed = 0;
    for (size_t i = 0; i < sizeof benches / sizeof benches[0]; i++) {
        const bench *b = &benches[i];
        bool selected = nfilters == 0;
        for (int f = 0; f < nfilters && !selected; f++)
            selected = strstr(b->name, filters[f]) != NULL;
        if (!selected || (o.quick && b->full_only))
            continue;
        double value = 0, limit = 0;
        if (!b->fn(b, &o, &value, &limit)) {
            fprintf(stderr, "tt-bench: %s failed: %s\n", b->name, tt_errmsg());
            failed++;
            continue;
        }
        printf("bench %s %.4g %s limit %.4g ratio %.3f\n", b->name, value, b->unit, limit,
               limit > 0 ? value / limit : 0.0);
        fflush(stdout);
        tt_empty_cache(); /* the next bench starts from the same memory state */
    }
    if (tt_live_tensors() != 0) {
        fprintf(stderr, "tt-bench: %lld tensors still alive\n", (long long)tt_live_tensors());
        failed++;
    }
    return failed ? 1 : 0;
}
