/* A convolutional network trained on Fashion-MNIST, compiled: the whole
 * training step (forward, cross entropy, backward, SGD with momentum, the
 * batch norms' running statistics) is one C function that tt_compile
 * traces once into one graph and then replays.
 *
 *   cnn [--epochs N] [--batch B] [--lr X] [--momentum X] [--dropout P]
 *       [--threads N] [--eager] [--train-max N] [--test-max N] [--seed N]
 *       [--data DIR] [--picture FILE.svg] [--graph FILE.svg] [--dot FILE.dot]
 *       [-q|--quiet]
 *   cnn --check FILE   (the test: eager, compiled and PyTorch agree)
 *
 * Reads Debian's dataset-fashion-mnist (/usr/share/datasets/fashion-mnist).
 * Prints the loss and the test accuracy after each epoch; on a terminal,
 * a progress bar on stderr during each (not with -q). */
#include "cnn_model.h"
#include "fashion_mnist.h"
#include "picture.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tensortrace.h>
#include <time.h>

typedef struct {
    int epochs, batch, threads, eval_batch;
    double lr, momentum, dropout;
    bool eager, quiet;
    int64_t train_max, test_max;
    uint64_t seed;
    const char *data, *picture, *graph, *dot, *check;
} options;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void usage(void)
{
    fprintf(stderr, "usage: cnn [--epochs N] [--batch B] [--lr X] [--momentum X] "
                    "[--dropout P] [--threads N] [--eager] [--train-max N] [--test-max N] "
                    "[--seed N] [--data DIR] [--picture FILE.svg] [--graph FILE.svg] "
                    "[--dot FILE.dot] [-q|--quiet] | --check FILE\n");
}

static bool parse_args(int argc, char **argv, options *o)
{
    *o = (options){.epochs = 4, .batch = 64, .eval_batch = 500, .lr = 0.05, .momentum = 0.9,
                   .dropout = 0.25, .seed = 1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--eager")) {
            o->eager = true;
            continue;
        }
        if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
            o->quiet = true;
            continue;
        }
        if (!v) {
            usage();
            return false;
        }
        i++;
        if (!strcmp(a, "--epochs"))
            o->epochs = atoi(v);
        else if (!strcmp(a, "--batch"))
            o->batch = atoi(v);
        else if (!strcmp(a, "--lr"))
            o->lr = atof(v);
        else if (!strcmp(a, "--momentum"))
            o->momentum = atof(v);
        else if (!strcmp(a, "--dropout"))
            o->dropout = atof(v);
        else if (!strcmp(a, "--threads"))
            o->threads = atoi(v);
        else if (!strcmp(a, "--train-max"))
            o->train_max = atoll(v);
        else if (!strcmp(a, "--test-max"))
            o->test_max = atoll(v);
        else if (!strcmp(a, "--seed"))
            o->seed = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--data"))
            o->data = v;
        else if (!strcmp(a, "--picture"))
            o->picture = v;
        else if (!strcmp(a, "--graph"))
            o->graph = v;
        else if (!strcmp(a, "--dot"))
            o->dot = v;
        else if (!strcmp(a, "--check"))
            o->check = v;
        else {
            usage();
            return false;
        }
    }
    if (o->epochs < 1 || o->batch < 1) {
        usage();
        return false;
    }
    return true;
}

static tt_compiled *compile_step(const cnn_hparams *h)
{
    return tt_compile(cnn_train_step, CNN_STEP_NIN, 1,
                      &(tt_trace_opts){.mode = TT_TRACE_FAKE, .fullgraph = true,
                                       .name = "cnn_train_step", .ud = (void *)h,
                                       .ud_size = sizeof *h});
}

/* One step on images [first, first + B) of `order`: *loss gets its loss. */
static tt_status step(cnn_state *s, tt_compiled *c, const cnn_hparams *h, const fmnist_set *d,
                      const int64_t *order, int64_t first, tt_tensor *x, tt_tensor *y,
                      int number, double *loss)
{
    tt_tensor *in[CNN_STEP_NIN], *l = NULL;
    tt_status st = fmnist_batch(d, order, first, tt_dim_size(x, 0), x, y);
    if (!st)
        st = tt_fill_(s->step, number);
    cnn_step_inputs(s, x, y, in);
    if (!st)
        st = c ? tt_compiled_call(c, in, &l) : cnn_train_step(in, CNN_STEP_NIN, &l, 1, (void *)h);
    if (!st)
        st = tt_item(l, loss);
    tt_release(l);
    return st;
}

/* Right predictions on the test set, eval batch by eval batch; the first
 * `npred` predictions go to pred[] (may be NULL). */
static tt_status evaluate(cnn_state *s, tt_compiled *c, const fmnist_set *d, int64_t batch,
                          int64_t *right, int *pred, int npred)
{
    int64_t B = batch;
    tt_tensor *x = tt_empty(TT_SHAPE(B, 1, FMNIST_SIDE, FMNIST_SIDE), TT_F32);
    tt_tensor *y = tt_empty(TT_SHAPE(B), TT_I64);
    tt_status st = x && y ? TT_OK : tt_errcode();
    *right = 0;
    for (int64_t first = 0; !st && first + B <= d->n; first += B) {
        tt_tensor *in[CNN_EVAL_NIN], *out[2] = {0};
        double r = 0;
        if ((st = fmnist_batch(d, NULL, first, B, x, y)))
            break;
        cnn_eval_inputs(s, x, y, in);
        st = c ? tt_compiled_call(c, in, out) : cnn_eval(in, CNN_EVAL_NIN, out, 2, NULL);
        if (!st)
            st = tt_item(out[1], &r);
        *right += (int64_t)r;
        if (!st && pred && first < npred) {
            tt_tensor *best = tt_argmax(out[0], 1, false);
            const int64_t *b = best ? tt_data(best) : NULL;
            for (int64_t i = 0; b && i < B && first + i < npred; i++)
                pred[first + i] = (int)b[i];
            st = b ? TT_OK : tt_errcode();
            tt_release(best);
        }
        tt_release(out[0]);
        tt_release(out[1]);
    }
    tt_release(x);
    tt_release(y);
    return st;
}

/* Fisher-Yates with a xorshift generator: the epoch's order. */
static void shuffle(int64_t *order, int64_t n, uint64_t *state)
{
    for (int64_t i = 0; i < n; i++)
        order[i] = i;
    for (int64_t i = n - 1; i > 0; i--) {
        *state ^= *state << 13, *state ^= *state >> 7, *state ^= *state << 17;
        int64_t j = (int64_t)(*state % (uint64_t)(i + 1)), t = order[i];
        order[i] = order[j], order[j] = t;
    }
}

static tt_status picture(const options *o, cnn_state *s, tt_compiled *ec, const fmnist_set *test)
{
    enum { N = 24 };
    int pred[N] = {0};
    int64_t right;
    fmnist_set head = *test;
    head.n = test->n < o->eval_batch ? test->n : o->eval_batch;
    tt_status st = evaluate(s, ec, &head, head.n, &right, pred, N);
    picture_item items[N];
    char captions[N][64];
    for (int i = 0; !st && i < N && i < head.n; i++) {
        bool good = pred[i] == test->labels[i];
        snprintf(captions[i], sizeof captions[i], "%s%s", fmnist_class_names[pred[i]],
                 good ? "" : " (no)");
        items[i] = (picture_item){test->pixels + (int64_t)i * FMNIST_SIDE * FMNIST_SIDE,
                                  captions[i], good};
    }
    if (!st && picture_write_svg(o->picture, items, N, FMNIST_SIDE, 8))
        st = tt_error(TT_EINVAL, "cnn: cannot write %s", o->picture);
    return st;
}

static tt_status train(const options *o)
{
    fmnist_set train_set = {0}, test_set = {0};
    cnn_state s = {0};
    cnn_hparams h = {.sgd = {.lr = o->lr, .momentum = o->momentum}, .dropout = o->dropout};
    tt_compiled *c = NULL, *ec = NULL;
    int64_t *order = NULL;
    tt_tensor *x = NULL, *y = NULL;
    tt_status st = fmnist_load(o->data, "train", o->train_max, &train_set);
    if (!st)
        st = fmnist_load(o->data, "t10k", o->test_max, &test_set);
    if (!st)
        st = cnn_state_init(&s, o->seed);
    if (st)
        goto out;
    tt_manual_seed(o->seed); /* dropout's masks */
    if (!o->eager) {
        c = compile_step(&h);
        ec = tt_compile(cnn_eval, CNN_EVAL_NIN, 2,
                        &(tt_trace_opts){.mode = TT_TRACE_FAKE, .fullgraph = true,
                                         .name = "cnn_eval"});
        if (!c || !ec) {
            st = tt_errcode();
            goto out;
        }
    }
    int64_t B = o->batch, steps = train_set.n / B;
    order = malloc(sizeof *order * (size_t)(train_set.n ? train_set.n : 1));
    x = tt_empty(TT_SHAPE(B, 1, FMNIST_SIDE, FMNIST_SIDE), TT_F32);
    y = tt_empty(TT_SHAPE(B), TT_I64);
    if (!order || !x || !y) {
        st = order ? tt_errcode() : tt_error(TT_ENOMEM, "cnn: out of memory");
        goto out;
    }
    printf("Fashion-MNIST: %lld training images, %lld test images; batch %lld, %s, %d "
           "threads\n", (long long)train_set.n, (long long)test_set.n, (long long)B,
           o->eager ? "eager" : "compiled", tt_get_num_threads());
    uint64_t rng = o->seed * 2654435761u + 1;
    int number = 0;
    for (int e = 1; e <= o->epochs && !st; e++) {
        double t0 = now_s(), sum = 0, loss = 0;
        /* The last epoch at a tenth of the learning rate (a step
         * schedule). The step reads lr through ud, which the compiled
         * step guards: this change traces the step once more. */
        if (e == o->epochs && e > 1)
            h.sgd.lr = o->lr / 10;
        shuffle(order, train_set.n, &rng);
        char label[32], extra[32];
        snprintf(label, sizeof label, "epoch %d", e);
        tt_progress *bar = tt_progress_begin(label, steps, o->quiet ? TT_PROGRESS_QUIET : 0);
        if (!bar)
            st = tt_errcode();
        for (int64_t i = 0; i < steps && !st; i++) {
            st = step(&s, c, &h, &train_set, order, i * B, x, y, ++number, &loss);
            sum += loss;
            snprintf(extra, sizeof extra, "loss %.4f", sum / (double)(i + 1));
            tt_progress_update(bar, i + 1, extra);
        }
        bar = tt_progress_end(bar);
        /* The test set in batches of eval_batch (all of it when smaller). */
        int64_t right = 0, eb = o->eval_batch < test_set.n ? o->eval_batch : test_set.n;
        int64_t seen = eb ? test_set.n / eb * eb : 0;
        if (!st && eb)
            st = evaluate(&s, ec, &test_set, eb, &right, NULL, 0);
        if (!st)
            printf("epoch %d: train loss %.4f, test accuracy %.2f%% (%.1f s)\n", e,
                   sum / (double)(steps ? steps : 1),
                   100.0 * (double)right / (double)(seen ? seen : 1), now_s() - t0);
        fflush(stdout);
    }
    if (!st && o->picture)
        st = picture(o, &s, ec, &test_set);
    if (!st && c && (o->graph || o->dot)) {
        const tt_graph *g = tt_compiled_graph(c, 0);
        if (o->graph)
            st = tt_graph_render(g, "svg", o->graph);
        FILE *f = !st && o->dot ? fopen(o->dot, "w") : NULL;
        if (!st && o->dot && (!f || tt_graph_write_dot(g, f)))
            st = tt_error(TT_EINVAL, "cnn: cannot write %s", o->dot);
        if (f)
            fclose(f);
    }
out:
    tt_release(x);
    tt_release(y);
    free(order);
    tt_compiled_free(c);
    tt_compiled_free(ec);
    cnn_state_free(&s);
    fmnist_free(&train_set);
    fmnist_free(&test_set);
    return st;
}

/* ----------------------------------------------------------- the check */

typedef struct {
    int batch, steps;
    double lr, momentum;
    uint64_t seed;
    double loss[64];
} reference;

static tt_status read_reference(const char *path, reference *r)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return tt_error(TT_EINVAL, "cnn: cannot open %s", path);
    char line[512];
    int n = 0;
    *r = (reference){0};
    while (fgets(line, sizeof line, f)) {
        unsigned long long seed;
        if (line[0] == '#')
            continue;
        if (sscanf(line, "config batch %d steps %d lr %lf momentum %lf seed %llu", &r->batch,
                   &r->steps, &r->lr, &r->momentum, &seed) == 5)
            r->seed = seed;
        else if (n < 64 && sscanf(line, "loss %lf", &r->loss[n]) == 1)
            n++;
    }
    fclose(f);
    if (r->batch <= 0 || r->steps <= 0 || r->steps > 64 || n != r->steps)
        return tt_error(TT_EINVAL, "cnn: %s: expected a config line and one loss per step",
                        path);
    return TT_OK;
}

/* Trains r->steps steps in data order from the fixed init, eager or
 * compiled, with dropout p under seed 7; losses into out[]. */
static tt_status run_steps(const reference *r, const fmnist_set *d, bool compiled, double p,
                           double *out)
{
    cnn_state s;
    cnn_hparams h = {.sgd = {.lr = r->lr, .momentum = r->momentum}, .dropout = p};
    tt_compiled *c = NULL;
    tt_tensor *x = tt_empty(TT_SHAPE(r->batch, 1, FMNIST_SIDE, FMNIST_SIDE), TT_F32);
    tt_tensor *y = tt_empty(TT_SHAPE(r->batch), TT_I64);
    tt_status st = x && y ? cnn_state_init(&s, r->seed) : tt_errcode();
    if (st) {
        tt_release(x);
        tt_release(y);
        return st;
    }
    tt_manual_seed(7);
    if (compiled && !(c = compile_step(&h)))
        st = tt_errcode();
    for (int i = 0; i < r->steps && !st; i++)
        st = step(&s, c, &h, d, NULL, (int64_t)i * r->batch, x, y, i + 1, &out[i]);
    tt_compiled_free(c);
    cnn_state_free(&s);
    tt_release(x);
    tt_release(y);
    return st;
}

static int agree(const char *what, const double *a, const double *b, int n, double tol)
{
    int bad = 0;
    for (int i = 0; i < n; i++) {
        bool ok = fabs(a[i] - b[i]) <= tol * (1 + fabs(b[i]));
        printf("%s step %d: %.6f vs %.6f%s\n", what, i, a[i], b[i], ok ? "" : "  DIFFERS");
        bad += !ok;
    }
    return bad;
}

static tt_status check(const options *o)
{
    reference r;
    fmnist_set d = {0};
    double eager[64], compiled[64], eager_drop[64], compiled_drop[64];
    tt_status st = read_reference(o->check, &r);
    if (!st)
        st = fmnist_load(o->data, "train", (int64_t)r.batch * r.steps, &d);
    if (!st)
        st = run_steps(&r, &d, false, 0, eager);
    if (!st)
        st = run_steps(&r, &d, true, 0, compiled);
    if (!st)
        st = run_steps(&r, &d, false, 0.5, eager_drop);
    if (!st)
        st = run_steps(&r, &d, true, 0.5, compiled_drop);
    fmnist_free(&d);
    if (st)
        return st;
    /* f32 convolutions and GEMMs may sum in another order than PyTorch's;
     * compiled and eager run the same kernels. */
    int bad = agree("eager vs PyTorch", eager, r.loss, r.steps, 2e-4) +
              agree("compiled vs eager", compiled, eager, r.steps, 1e-5) +
              agree("compiled vs eager, dropout 0.5", compiled_drop, eager_drop, r.steps, 1e-5);
    return bad ? tt_error(TT_EINVAL, "cnn: %d losses disagree", bad) : TT_OK;
}

int main(int argc, char **argv)
{
    options o;
    if (!parse_args(argc, argv, &o))
        return 2;
    if (o.threads > 0)
        tt_set_num_threads(o.threads);
    tt_status st = o.check ? check(&o) : train(&o);
    if (st) {
        fprintf(stderr, "cnn: %s\n", tt_errmsg());
        return 1;
    }
    if (tt_live_tensors() != 0) {
        fprintf(stderr, "cnn: %lld tensors still live at exit\n", (long long)tt_live_tensors());
        return 1;
    }
    return 0;
}
