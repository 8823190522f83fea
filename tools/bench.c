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

#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

/* Best seconds per call of f and of g: one warm-up call of each, then
 * interleaved repetitions of `inner` calls each, at least `min_reps` of
 * them and more while the time budget lasts (up to 1000): under load from
 * other processes, more samples make the best one more likely clean. */
static bool best_pair(work_fn f, void *fc, work_fn g, void *gc, const bench_opts *o,
                      int min_reps, int inner, double *tf, double *tg)
{
    double budget = o->quick ? 1.0 : 2.5, start = now(), t;
    if (!f(fc) || !g(gc))
        return false;
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

typedef struct {
    tt_tensor *(*binary)(const tt_tensor *, const tt_tensor *);
    tt_tensor *(*unary)(const tt_tensor *);
    const tt_tensor *a, *b;
    const float *pa, *pb; /* contiguous data of the plain loops */
    float *pc;
    int64_t n;
    int kind; /* the plain loop: 0 add, 1 mul, 2 sinf, 3 expf, 4 sum */
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
    case 0:
        for (int64_t i = 0; i < n; i++)
            c[i] = a[i] + b[i];
        break;
    case 1:
        for (int64_t i = 0; i < n; i++)
            c[i] = a[i] * b[i];
        break;
    case 2:
        for (int64_t i = 0; i < n; i++)
            c[i] = sinf(a[i]);
        break;
    case 3:
        for (int64_t i = 0; i < n; i++)
            c[i] = expf(a[i]);
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
static const int ew_bytes[] = {12, 12, 8, 8, 4};

/* kind from the bench's name. */
static int ew_kind(const char *name)
{
    return strncmp(name, "add", 3) == 0 ? 0 : strncmp(name, "mul", 3) == 0 ? 1
         : strncmp(name, "sin", 3) == 0 ? 2 : strncmp(name, "exp", 3) == 0 ? 3 : 4;
}

static bool bench_elementwise(const bench *b, const bench_opts *o, double *value,
                              double *limit)
{
    ew_ctx e = {.n = b->n, .kind = ew_kind(b->name)};
    e.binary = e.kind == 0 ? tt_add : e.kind == 1 ? tt_mul : NULL;
    e.unary = e.kind == 2 ? tt_sin : e.kind == 3 ? tt_exp : NULL;
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
    double t_tt = 0, t_plain = 0;
    if (!best_pair(ew_tt, &e, ew_plain, &e, o, 3, 1, &t_tt, &t_plain))
        goto out;
    double bytes = (double)ew_bytes[e.kind] * (double)b->n;
    *value = bytes / t_tt * 1e-9;
    *limit = bytes / t_plain * 1e-9;
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
    (void)b;
    disp_ctx d = {.x = 1.5f, .y = 2.25f};
    d.a = tt_full(TT_SHAPE(1), 1.5, TT_F32);
    d.b = tt_full(TT_SHAPE(1), 2.25, TT_F32);
    double t_tt = 0, t_plain = 0;
    bool ok = d.a && d.b &&
              best_pair(disp_tt, &d, disp_plain, &d, o, 3, 1, &t_tt, &t_plain);
    *value = t_tt / DISPATCH_INNER * 1e9;
    *limit = t_plain / DISPATCH_INNER * 1e9;
    tt_release(d.a);
    tt_release(d.b);
    return ok;
}

/* ----------------------------------------------------------------- table */

static const bench benches[] = {
    {"matmul_f32_256", "GFLOP/s", bench_matmul, 256, false, false},
    {"matmul_f32_512", "GFLOP/s", bench_matmul, 512, false, false},
    {"matmul_f32_1024", "GFLOP/s", bench_matmul, 1024, false, false},
    {"matmul_f32_2048", "GFLOP/s", bench_matmul, 2048, false, true},
    {"matmul_f32_512_T", "GFLOP/s", bench_matmul, 512, true, false},
    {"matmul_f32_1024_T", "GFLOP/s", bench_matmul, 1024, true, false},
    {"add_f32_16M", "GB/s", bench_elementwise, N16M, false, false},
    {"mul_f32_16M", "GB/s", bench_elementwise, N16M, false, false},
    {"add_f32_4096x4096_T", "GB/s", bench_elementwise, N16M, true, false},
    {"sin_f32_16M", "GB/s", bench_elementwise, N16M, false, false},
    {"exp_f32_16M", "GB/s", bench_elementwise, N16M, false, false},
    {"sum_f32_16M", "GB/s", bench_elementwise, N16M, false, false},
    /* ns per call: lower is better, so a ratio above 1 is slower than the limit */
    {"dispatch_add_1elem", "ns/call", bench_dispatch, 1, false, false},
};

int main(int argc, char **argv)
{
    bench_opts o = {0};
    int nfilters = 0;
    const char *filters[64];
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
