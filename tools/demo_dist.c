/* tt-demo-dist: data-parallel training over MPI in a few steps
 * (`tools/run demo --dist`, which runs it as `mpirun -np 2`).
 *
 * The story: a process group over MPI_COMM_WORLD; a collective as an op
 * (all_reduce of each rank's tensor); the MLP trained on 2 ranks with half
 * of a global batch each, gradients averaged in buckets while the
 * backward runs (tt_ddp), ending with the weights one process gets on the
 * whole batch; the same step compiled, one graph with the collective as
 * an opaque node, written as DOT (and SVG) to the output folder. Rank 0
 * prints; every rank checks. Exits 0 only when every check holds on every
 * rank. Runs from any number of ranks that divides the batch.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dist_mlp.h"
#include "tensortrace.h"

/* graphviz leaks inside its layout whatever the caller does. */
#include "lsan_graphviz.h"

enum { BATCH = 64, IN = 16, HID = 32, OUT = 4, STEPS = 20 };
static const double LR = 0.2;

static int rank_, world_, nchecks, nfailed;

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    if (rank_ != 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    fflush(stdout);
}

/* Every rank checks; rank 0 prints. A failure on another rank is printed
 * by that rank. */
static bool check(bool ok, const char *what)
{
    nchecks++;
    nfailed += !ok;
    if (rank_ == 0 || !ok)
        printf("   %s %s%s\n", ok ? "[ok]" : "[FAILED]", what,
               ok ? "" : rank_ ? " (on a rank other than 0)" : "");
    if (!ok && tt_errcode())
        printf("   error: %s\n", tt_errmsg());
    fflush(stdout);
    return ok;
}

/* The data: a linear rule the MLP can learn (the class of the largest of
 * four projections), the same on every rank. */
static void make_data(tt_tensor **x, tt_tensor **labels)
{
    tt_manual_seed(11);
    *x = tt_randn(TT_SHAPE(BATCH, IN), TT_F32);
    int64_t lab[BATCH];
    float v[BATCH * IN];
    tt_to_buffer(*x, v, sizeof v);
    for (int i = 0; i < BATCH; i++) {
        int best = 0;
        double bv = -INFINITY;
        for (int c = 0; c < OUT; c++) {
            double s = 0;
            for (int j = 0; j < IN; j++)
                s += v[i * IN + j] * ((j + c) % OUT == 0 ? 1.0 : -0.2);
            if (s > bv)
                bv = s, best = c;
        }
        lab[i] = best;
    }
    *labels = tt_from_data(TT_SHAPE(BATCH), TT_I64, lab);
}

static double max_diff(tt_tensor *const *a, tt_tensor *const *b)
{
    double m = 0;
    for (int i = 0; i < 4; i++) {
        int64_t n = tt_numel(a[i]);
        float *x = malloc(sizeof(float) * (size_t)n), *y = malloc(sizeof(float) * (size_t)n);
        if (x && y && !tt_to_buffer(a[i], x, sizeof(float) * (size_t)n) &&
            !tt_to_buffer(b[i], y, sizeof(float) * (size_t)n))
            for (int64_t k = 0; k < n; k++)
                m = fmax(m, fabs((double)x[k] - y[k]));
        else
            m = INFINITY;
        free(x);
        free(y);
    }
    return m;
}

static void release4(tt_tensor **p)
{
    for (int i = 0; i < 4; i++)
        p[i] = tt_release(p[i]);
}

int main(int argc, char **argv)
{
    const char *out_dir = "demo-out";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--out") == 0 && i + 1 < argc)
            out_dir = argv[++i];
        else if (strncmp(argv[i], "--out=", 6) == 0)
            out_dir = argv[i] + 6;
        else {
            fprintf(stderr, "usage: mpirun -np N tt-demo-dist [--out DIR]\n");
            return 2;
        }
    }
    /* 1. The group: this library initialises MPI (nobody else did). */
    if (tt_dist_init(NULL)) {
        fprintf(stderr, "tt-demo-dist: %s\n", tt_errmsg());
        return 1;
    }
    rank_ = tt_dist_rank();
    world_ = tt_dist_world_size();
    say("== 1. A process group over MPI_COMM_WORLD\n   %d ranks; this is rank 0.\n", world_);
    if (BATCH % world_) {
        say("   the batch of %d does not split over %d ranks\n", BATCH, world_);
        tt_dist_finalize();
        return 2;
    }

    /* 2. A collective is an op. */
    say("\n== 2. dist::all_reduce, an op like any other\n"
        "   each rank holds [rank, 1]; sum and avg over the ranks:\n");
    tt_tensor *mine = tt_from_data(TT_SHAPE(2), TT_F32, (float[]){(float)rank_, 1});
    tt_tensor *sum = tt_dist_all_reduce(mine, "sum"), *avg = tt_dist_all_reduce(mine, "avg");
    float s[2] = {0}, a[2] = {0};
    if (sum && avg) {
        tt_to_buffer(sum, s, sizeof s);
        tt_to_buffer(avg, a, sizeof a);
    }
    say("   sum = [%g, %g], avg = [%g, %g]\n", s[0], s[1], a[0], a[1]);
    check(s[0] == world_ * (world_ - 1) / 2.0f && s[1] == world_ && a[1] == 1,
          "every rank got the same sums");
    tt_release(mine);
    tt_release(sum);
    tt_release(avg);

    /* 3. Data-parallel training against one process on the whole batch. */
    say("\n== 3. Data-parallel training: %d ranks x %d samples vs 1 process x %d\n"
        "   gradients are averaged in buckets whose MPI_Iallreduce starts while the\n"
        "   backward still runs (tt_ddp), as PyTorch's DistributedDataParallel does.\n",
        world_, BATCH / world_, BATCH);
    tt_tensor *x, *labels, *ref[4], *p[4], *in[6];
    make_data(&x, &labels);
    int64_t part = BATCH / world_;
    tt_tensor *xs = tt_narrow(x, 0, rank_ * part, part);
    tt_tensor *ls = tt_narrow(labels, 0, rank_ * part, part);
    bool ok = !dist_mlp_init(IN, HID, OUT, 5, ref) && !dist_mlp_init(IN, HID, OUT, 5, p) &&
              xs && ls;
    tt_ddp *ddp = ok ? tt_ddp_new(4, p, &(tt_ddp_opts){.bucket_bytes = 1024}) : NULL;
    ok = ddp != NULL;
    double first = 0, last = 0;
    for (int step = 0; ok && step < STEPS; step++) {
        double l1 = 0, l2 = 0;
        tt_scope_begin();
        tt_tensor *loss = dist_mlp_loss(ref, x, labels); /* the one process */
        ok = loss && !tt_backward(loss, NULL) && !dist_mlp_sgd(ref, 4, LR) &&
             !tt_item(loss, &l1);
        tt_tensor *local = ok ? dist_mlp_loss(p, xs, ls) : NULL; /* this rank's half */
        ok = local && !tt_item(local, &l2) && !tt_ddp_backward(ddp, local) &&
             !dist_mlp_sgd(p, 4, LR);
        tt_scope_end();
        if (step == 0)
            first = l1;
        last = l1;
        if (ok && (step % 5 == 0 || step == STEPS - 1))
            say("   step %2d: loss on the whole batch %.4f; rank 0's half %.4f\n", step, l1, l2);
    }
    check(ok, "20 steps ran");
    check(last < first, "the loss went down");
    tt_ddp_stats st;
    tt_ddp_get_stats(ddp, &st);
    say("   %d buckets per backward, %d of them started before the backward ended\n",
        st.buckets, st.started_early);
    check(st.buckets > 1 && st.started_early == st.buckets,
          "every bucket's reduction started from the backward's gradient-ready hook");
    double diff = max_diff(p, ref);
    say("   largest difference to the one process's weights: %.2g\n", diff);
    check(diff < 1e-4, "the ranks end with the one process's weights");
    tt_ddp_free(ddp);

    /* 4. Compiled: the step is one graph with the collective inside. */
    say("\n== 4. The step compiled: one graph, the collective an opaque node\n");
    release4(p);
    ok = !dist_mlp_init(IN, HID, OUT, 5, in);
    in[4] = xs;
    in[5] = ls;
    double lr = LR;
    tt_compiled *c = ok ? tt_compile(dist_mlp_dp_step, 6, 1,
                                     &(tt_trace_opts){.fullgraph = true, .ud = &lr,
                                                      .ud_size = sizeof lr,
                                                      .name = "dp_step"})
                        : NULL;
    for (int step = 0; c && ok && step < STEPS; step++) {
        tt_tensor *loss = NULL;
        ok = !tt_compiled_call(c, in, &loss);
        tt_release(loss);
    }
    tt_compile_stats cs;
    tt_compiled_stats(c, &cs);
    const tt_graph *g = c ? tt_compiled_graph(c, 0) : NULL;
    check(ok && g && cs.plans == 1 && cs.hits == STEPS - 1,
          "traced once, replayed 19 times");
    check(g && tt_graph_count_op(g, "dist::all_reduce") == 1,
          "the graph holds one dist::all_reduce node (one bucket)");
    check(max_diff(in, ref) < 1e-4, "the compiled ranks end with the one process's weights");
    if (rank_ == 0 && g) {
        char path[4096];
        if (mkdir(out_dir, 0777) != 0 && errno != EEXIST)
            check(false, "the output folder exists");
        snprintf(path, sizeof path, "%s/dist_step.dot", out_dir);
        FILE *f = fopen(path, "w");
        bool wrote = f && !tt_graph_write_dot(g, f);
        if (f)
            fclose(f);
        check(wrote, "wrote the graph's DOT");
        snprintf(path, sizeof path, "%s/dist_step.svg", out_dir);
        check(!tt_graph_render(g, "svg", path), "rendered it to SVG");
        printf("   pictures: %s/dist_step.dot, %s/dist_step.svg (dist::all_reduce is the\n"
               "   orange, double-bordered box)\n", out_dir, out_dir);
    }
    tt_compiled_free(c);
    release4(in);
    release4(ref);
    tt_release(xs);
    tt_release(ls);
    tt_release(x);
    tt_release(labels);

    /* Every rank's failures count. */
    int failed = nfailed;
    tt_tensor *f = tt_from_data(TT_SHAPE(1), TT_I32, &failed);
    tt_tensor *all = f ? tt_dist_all_reduce(f, "sum") : NULL;
    double total = -1;
    if (!all || tt_item(all, &total))
        total = -1;
    tt_release(f);
    tt_release(all);
    say("\n%d checks on each of %d ranks, %d failed\n", nchecks, world_, (int)total);
    tt_dist_finalize(); /* finalises MPI too: tt_dist_init initialised it */
    return total == 0 ? 0 : 1;
}
