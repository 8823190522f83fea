/* tt-bench-dist: the dist figures of `tools/run bench`, run as 2 MPI ranks
 * (mpirun -np 2). Lines as tt-bench's:
 *   bench <name> <value> <unit> limit <limit-value> ratio <value/limit>
 *
 *  - dist_all_reduce_f32_<n>: dist::all_reduce (sum) of n floats, in GB/s
 *    of the buffer's bytes per call; limit: a raw MPI_Allreduce of the
 *    same buffer into a preallocated one, on the same ranks. The op is
 *    functional (it returns a new tensor), so the raw call it is measured
 *    against is the out-of-place one. Higher is better.
 *  - dist_mlp_step_2rank_x_1thread: the MLP's training step on a global
 *    batch, 2 ranks x 1 thread each with half of it (tt_ddp_backward:
 *    buckets reduced while the backward runs), in ms per step; limit: the
 *    same step on the whole batch in 1 rank x 2 threads (rank 1 sleeping).
 *    Time: lower is better, a ratio below 1 beats the limit.
 *
 * Method: the ranks start each timed block together (a barrier) and a
 * block's time is the slowest rank's; the figure and its limit alternate
 * block by block so load from other processes affects both alike; the
 * best block counts. A fixed number of blocks, the same on every rank.
 *
 *   mpirun -np 2 tt-bench-dist [--quick] [name-substring...] */
#include <cblas.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dist_mlp.h"

static int rank_, world_;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A barrier that sleeps instead of spinning, so an idle rank leaves its
 * core to the one working (an MPI barrier polls). */
static void sleepy_barrier(void)
{
    MPI_Request r;
    int done = 0;
    MPI_Ibarrier(MPI_COMM_WORLD, &r);
    while (MPI_Test(&r, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && !done)
        nanosleep(&(struct timespec){0, 200000}, NULL);
}

typedef bool (*work_fn)(void *ctx);

/* Seconds per call of `inner` calls on every rank (the slowest rank's),
 * the ranks starting together. */
static bool timed_all(work_fn fn, void *ctx, int inner, double *t)
{
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = now();
    bool ok = true;
    for (int i = 0; i < inner && ok; i++)
        ok = fn(ctx);
    double mine = ok ? (now() - t0) / inner : -1;
    MPI_Allreduce(&mine, t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    int bad = !ok, anybad;
    MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return !anybad;
}

/* ----------------------------------------------------------- all_reduce */

typedef struct {
    tt_tensor *x;
    float *out;
    int n;
} ar_ctx;

static bool ar_op(void *p)
{
    ar_ctx *a = p;
    tt_tensor *y = tt_dist_all_reduce(a->x, "sum");
    tt_release(y);
    return y != NULL;
}

static bool ar_raw(void *p)
{
    ar_ctx *a = p;
    return MPI_Allreduce(tt_data(a->x), a->out, a->n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) ==
           MPI_SUCCESS;
}

static bool bench_all_reduce(int n, int reps, double *value, double *limit)
{
    ar_ctx a = {tt_randn(TT_SHAPE(n), TT_F32), malloc(sizeof(float) * (size_t)n), n};
    double best_op = 1e30, best_raw = 1e30, t;
    int inner = n <= (1 << 20) ? 8 : 2;
    bool ok = a.x && a.out && ar_op(&a) && ar_raw(&a); /* warm-up */
    for (int r = 0; r < reps && ok; r++) {
        ok = timed_all(ar_op, &a, inner, &t);
        best_op = t < best_op ? t : best_op;
        ok = ok && timed_all(ar_raw, &a, inner, &t);
        best_raw = t < best_raw ? t : best_raw;
    }
    double bytes = 4.0 * n;
    *value = bytes / best_op * 1e-9;
    *limit = bytes / best_raw * 1e-9;
    tt_release(a.x);
    free(a.out);
    return ok;
}

/* ------------------------------------------------------------ MLP step */

enum { BATCH = 512, IN = 784, HID = 1024, OUT = 10, STEPS = 3 };

typedef struct {
    tt_tensor *p[4], *x, *labels, *xs, *ls;
    tt_ddp *ddp;
} mlp_ctx;

/* One process, the whole batch. */
static bool step_single(void *ctx)
{
    mlp_ctx *m = ctx;
    tt_scope_begin();
    tt_tensor *loss = dist_mlp_loss(m->p, m->x, m->labels);
    bool ok = loss && !tt_backward(loss, NULL) && !dist_mlp_sgd(m->p, 4, 1e-3);
    tt_scope_end();
    return ok;
}

/* This rank's half, gradients averaged across the ranks. */
static bool step_ddp(void *ctx)
{
    mlp_ctx *m = ctx;
    tt_scope_begin();
    tt_tensor *loss = dist_mlp_loss(m->p, m->xs, m->ls);
    bool ok = loss && !tt_ddp_backward(m->ddp, loss) && !dist_mlp_sgd(m->p, 4, 1e-3);
    tt_scope_end();
    return ok;
}

static void set_threads(int n)
{
    tt_set_num_threads(n);
    openblas_set_num_threads(n);
}

static bool bench_mlp(int reps, double *value, double *limit)
{
    mlp_ctx m = {0};
    bool ok = !dist_mlp_init(IN, HID, OUT, 3, m.p);
    m.x = tt_randn(TT_SHAPE(BATCH, IN), TT_F32);
    int64_t lab[BATCH];
    for (int i = 0; i < BATCH; i++)
        lab[i] = i % OUT;
    m.labels = tt_from_data(TT_SHAPE(BATCH), TT_I64, lab);
    int64_t part = BATCH / world_;
    m.xs = m.x ? tt_narrow(m.x, 0, rank_ * part, part) : NULL;
    m.ls = m.labels ? tt_narrow(m.labels, 0, rank_ * part, part) : NULL;
    ok = ok && m.xs && m.ls && (m.ddp = tt_ddp_new(4, m.p, NULL)) != NULL;
    double best_single = 1e30, best_ddp = 1e30, t;
    int okall = ok, bad;
    MPI_Allreduce(&okall, &bad, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    ok = bad;
    for (int r = -1; r < reps && ok; r++) { /* r = -1: warm-up */
        /* 1 rank x 2 threads; the other ranks sleep. */
        set_threads(2);
        double single = 0;
        if (rank_ == 0) {
            double t0 = now();
            for (int s = 0; s < STEPS && ok; s++)
                ok = step_single(&m);
            single = (now() - t0) / STEPS;
        }
        sleepy_barrier();
        int okv = ok, all;
        MPI_Allreduce(&okv, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        MPI_Bcast(&single, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        ok = all;
        /* world ranks x 1 thread */
        set_threads(1);
        ok = ok && timed_all(step_ddp, &m, STEPS, &t);
        if (r >= 0) {
            best_single = single < best_single ? single : best_single;
            best_ddp = t < best_ddp ? t : best_ddp;
        }
    }
    set_threads(0);
    *value = best_ddp * 1e3;
    *limit = best_single * 1e3;
    tt_ddp_free(m.ddp);
    for (int i = 0; i < 4; i++)
        tt_release(m.p[i]);
    tt_release(m.x);
    tt_release(m.labels);
    tt_release(m.xs);
    tt_release(m.ls);
    return ok;
}

/* ---------------------------------------------------------------- main */

static bool selected(const char *name, int nf, char **filters)
{
    for (int i = 0; i < nf; i++)
        if (strstr(name, filters[i]))
            return true;
    return nf == 0;
}

static void print_line(const char *name, const char *unit, double value, double limit)
{
    if (rank_ == 0)
        printf("bench %s %.4g %s limit %.4g ratio %.3f\n", name, value, unit, limit,
               limit > 0 ? value / limit : 0.0);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    bool quick = false;
    int nf = 0;
    char *filters[64];
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0)
            quick = true;
        else if (argv[i][0] == '-') {
            fprintf(stderr, "usage: mpirun -np 2 tt-bench-dist [--quick] [name-substring...]\n");
            return 2;
        } else if (nf < 64)
            filters[nf++] = argv[i];
    }
    if (tt_dist_init(NULL)) {
        fprintf(stderr, "tt-bench-dist: %s\n", tt_errmsg());
        return 1;
    }
    rank_ = tt_dist_rank();
    world_ = tt_dist_world_size();
    int reps = quick ? 10 : 25, failed = 0;
    double v, l;
    char name[96];
    static const int sizes[] = {1 << 20, 1 << 24};
    for (int k = 0; k < 2; k++) {
        if (quick && k == 1)
            continue; /* the 64 MiB buffer: full bench only */
        snprintf(name, sizeof name, "dist_all_reduce_f32_%dM", sizes[k] >> 20);
        if (!selected(name, nf, filters))
            continue;
        if (bench_all_reduce(sizes[k], reps, &v, &l))
            print_line(name, "GB/s", v, l);
        else
            failed++;
    }
    snprintf(name, sizeof name, "dist_mlp_step_%drank_x_1thread", world_);
    if (selected(name, nf, filters) && BATCH % world_ == 0) {
        /* limit: 1 rank x 2 threads on the whole batch */
        if (bench_mlp(quick ? 3 : 8, &v, &l))
            print_line(name, "ms", v, l);
        else
            failed++;
    }
    if (failed && rank_ == 0)
        fprintf(stderr, "tt-bench-dist: %d figures failed: %s\n", failed, tt_errmsg());
    if (tt_live_tensors() != 0) {
        fprintf(stderr, "tt-bench-dist: rank %d: %lld tensors still alive\n", rank_,
                (long long)tt_live_tensors());
        failed++;
    }
    tt_dist_finalize();
    return failed ? 1 : 0;
}
