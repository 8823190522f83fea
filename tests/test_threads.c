/* Concurrency: the library used from two threads at once. Each test runs
 * the same work on two threads (each with its own tensors) and compares
 * what each thread got with the answer computed first on one thread. Run
 * in the release and sanitizer builds, and above all in the
 * ThreadSanitizer build (build/tsan, tools/run test), which reports any
 * data race the threads provoke. Modes (no-grad, tracing, fake) are per
 * thread, so each thread's mode must not leak into the other. */
#include "tt_test.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>

#define ROUNDS 20

typedef struct {
    void (*work)(void *arg, double *out);
    void *arg;
    double out;
    tt_status status;
    char msg[256];
} job;

static void *run_job(void *p)
{
    job *j = p;
    tt_clear_error();
    j->work(j->arg, &j->out);
    j->status = tt_errcode();
    snprintf(j->msg, sizeof j->msg, "%s", tt_errmsg());
    return NULL;
}

/* Runs work on two threads at once; both must succeed and give `want`
 * (with want NULL: the same answer). */
static void run_two_threads(void (*work)(void *arg, double *out), void *arg, const double *want)
{
    job jobs[2] = {{work, arg, 0, 0, ""}, {work, arg, 0, 0, ""}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, run_job, &jobs[i]), 0);
    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(pthread_join(th[i], NULL), 0);
    double w = want ? *want : jobs[0].out;
    for (int i = 0; i < 2; i++) {
        ck_assert_msg(jobs[i].status == TT_OK, "thread %d: %s", i, jobs[i].msg);
        ck_assert_double_eq_tol(jobs[i].out, w, 1e-9 * (1 + fabs(w)));
    }
}

/* Runs work on this thread for the expected answer, then on two threads at
 * once; both must give it. */
static void run_twice_in_parallel(void (*work)(void *arg, double *out), void *arg)
{
    double want = 0;
    tt_clear_error();
    work(arg, &want);
    ck_assert_msg(tt_errcode() == TT_OK, "alone: %s", tt_errmsg());
    run_two_threads(work, arg, &want);
}

/* The inputs of a thread's work: made from a fixed formula, not from the
 * shared generator, so both threads compute the same thing. */
static tt_tensor *ramp(int64_t n, int64_t m, double scale)
{
    tt_tensor *t = tt_arange(0, (double)(n * m), 1, TT_F32);
    tt_tensor *v = tt_view(t, TT_SHAPE(n, m));
    tt_tensor *s = tt_mul_scalar(v, scale);
    tt_release(t);
    tt_release(v);
    return s;
}

static double sum_of(const tt_tensor *t)
{
    tt_tensor *s = tt_sum_all(t);
    double v = 0;
    if (s)
        tt_item(s, &v);
    tt_release(s);
    return v;
}

/* ---------------------------------------------------------------- eager */

static void eager_work(void *arg, double *out)
{
    (void)arg;
    double acc = 0;
    for (int r = 0; r < ROUNDS; r++) {
        tt_scope_begin();
        tt_tensor *a = ramp(16, 32, 0.01), *b = ramp(32, 8, 0.02);
        tt_tensor *y = tt_softmax(tt_relu(tt_add_scalar(tt_matmul(a, b), -1)), 1);
        tt_tensor *z = tt_sum(tt_exp(tt_neg(y)), 1, (const int64_t[]){0}, false);
        acc += sum_of(tt_cat(2, (tt_tensor *[]){z, z}, 0));
        tt_scope_end();
    }
    *out = acc;
}

START_TEST(test_eager_two_threads) { run_twice_in_parallel(eager_work, NULL); }
END_TEST

/* ------------------------------------------------------------- autograd */

static void autograd_work(void *arg, double *out)
{
    (void)arg;
    double acc = 0;
    for (int r = 0; r < ROUNDS; r++) {
        tt_tensor *w = ramp(8, 4, 0.1);
        tt_set_requires_grad(w, true);
        tt_scope_begin();
        tt_tensor *x = ramp(3, 8, 0.05);
        tt_tensor *loss = tt_sum_all(tt_tanh(tt_matmul(x, w)));
        tt_status st = tt_backward(loss, NULL);
        /* no-grad is per thread: the other thread keeps recording */
        tt_no_grad_begin();
        tt_tensor *u = tt_mul(w, w);
        if (tt_requires_grad(u))
            tt_error(TT_EINTERNAL, "no-grad did not hold on this thread");
        tt_no_grad_end();
        tt_scope_end();
        tt_tensor *g = st == TT_OK ? tt_get_grad(w) : NULL;
        acc += g ? sum_of(g) : -1;
        tt_release(g);
        tt_release(w);
    }
    *out = acc;
}

START_TEST(test_autograd_two_threads) { run_twice_in_parallel(autograd_work, NULL); }
END_TEST

/* -------------------------------------------------------------- tracing */

static tt_status mlp(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin;
    (void)nout;
    (void)ud;
    tt_scope_begin();
    tt_tensor *h = tt_relu(tt_matmul(in[0], in[1]));
    out[0] = tt_keep(tt_softmax(tt_add(h, h), 1));
    tt_scope_end();
    return out[0] ? TT_OK : tt_errcode();
}

static void trace_work(void *arg, double *out)
{
    (void)arg;
    double acc = 0;
    tt_tensor *in[2] = {ramp(4, 8, 0.1), ramp(8, 3, 0.2)};
    for (int r = 0; r < ROUNDS; r++) {
        for (int mode = TT_TRACE_FAKE; mode <= TT_TRACE_REAL; mode++) {
            tt_trace_opts opts = {.mode = (tt_trace_mode)mode, .fullgraph = true};
            tt_graph *g = tt_trace(mlp, 2, in, &opts);
            if (!g)
                goto out;
            char *text = tt_graph_to_text(g);
            char *dot = tt_graph_to_dot(g);
            acc += tt_graph_num_nodes(g) + (text ? (double)strlen(text) : -1) +
                   (dot ? (double)strlen(dot) : -1);
            free(text);
            free(dot);
            tt_graph_free(g);
        }
        /* Fake mode on this thread does not make the other's tensors fake. */
        tt_fake_mode_begin();
        tt_tensor *f = tt_empty(TT_SHAPE(2), TT_F32);
        acc += tt_is_fake(f);
        tt_release(f);
        tt_fake_mode_end();
    }
out:
    tt_release(in[0]);
    tt_release(in[1]);
    *out = acc;
}

START_TEST(test_trace_two_threads) { run_twice_in_parallel(trace_work, NULL); }
END_TEST

/* -------------------------------------------------------------- compile */

static void compile_work(void *arg, double *out)
{
    (void)arg;
    double acc = 0;
    tt_trace_opts opts = {.mode = TT_TRACE_FAKE, .fullgraph = true};
    tt_compiled *c = tt_compile(mlp, 2, 1, &opts);
    if (!c)
        return;
    for (int r = 0; r < ROUNDS; r++) {
        tt_tensor *in[2] = {ramp(4, 8, 0.1 + r % 3), ramp(8, 3, 0.2)}, *got = NULL;
        if (tt_compiled_call(c, in, &got) == TT_OK)
            acc += sum_of(got);
        tt_release(got);
        tt_release(in[0]);
        tt_release(in[1]);
    }
    tt_compile_stats st;
    tt_compiled_stats(c, &st);
    acc += (double)st.hits * 1000;
    tt_compiled_free(c);
    *out = acc;
}

START_TEST(test_compile_two_threads) { run_twice_in_parallel(compile_work, NULL); }
END_TEST

/* ------------------------------------------------------------- registry */

static tt_status twice_kernel(tt_frame *f)
{
    tt_tensor *x;
    tt_status st = tt_arg_tensor(f, 0, &x);
    if (st)
        return st;
    return tt_return(f, 0, tt_mul_scalar(x, 2));
}

/* Each thread defines, calls and frees an op of its own namespace, while
 * the other does the same and calls built-ins: definitions, look-ups and
 * calls of different libraries run concurrently. */
static void registry_work(void *arg, double *out)
{
    (void)arg;
    static atomic_int next_ns;
    char ns[32], schema[96], name[64];
    snprintf(ns, sizeof ns, "thr%d", atomic_fetch_add(&next_ns, 1));
    snprintf(schema, sizeof schema, "%s::twice(Tensor x) -> Tensor", ns);
    snprintf(name, sizeof name, "%s::twice", ns);
    double acc = 0;
    for (int r = 0; r < ROUNDS; r++) {
        tt_library *lib = tt_library_new(TT_LIB_DEF, ns);
        if (!lib)
            return;
        tt_custom_op_spec spec = {.schema = schema, .kernel = twice_kernel};
        if (!tt_custom_op_define(lib, &spec)) {
            tt_library_free(lib);
            return;
        }
        tt_tensor *x = ramp(2, 3, 1);
        tt_tensor *y = tt_op_find(name) ? tt_call(tt_op_find(name), tt_v_tensor(x)) : NULL;
        acc += y ? sum_of(y) : -1;
        acc += tt_op_find("tt::add.Tensor") != NULL;
        tt_release(y);
        tt_release(x);
        tt_library_free(lib);
        acc += tt_op_find(name) == NULL;
        tt_clear_error(); /* the failed look-up's TT_ENOTFOUND */
    }
    *out = acc;
}

START_TEST(test_registry_two_threads) { run_twice_in_parallel(registry_work, NULL); }
END_TEST

/* ----------------------------------------------------------- first use */

static void first_use_work(void *arg, double *out)
{
    (void)arg;
    tt_tensor *x = ramp(4, 64, 0.01);
    tt_tensor *e = tt_exp(x); /* the first vectorized call decides the CPU path */
    double acc = e ? sum_of(e) : -1;
    tt_release(e);
    tt_tensor *in[2] = {x, ramp(64, 2, 0.1)};
    tt_trace_opts opts = {.mode = TT_TRACE_REAL, .fullgraph = true};
    tt_graph *g = tt_trace(mlp, 2, in, &opts); /* the first mode pushed */
    acc += g ? tt_graph_num_nodes(g) : -1;
    tt_graph_free(g);
    tt_release(in[1]);
    tt_release(x);
    *out = acc;
}

/* Two threads make the library's first calls at the same time (each test
 * runs in a fresh process): what is set up on first use must be set up
 * without a race. */
START_TEST(test_first_use_two_threads) { run_two_threads(first_use_work, NULL, NULL); }
END_TEST

static Suite *threads_suite(void)
{
    Suite *s = suite_create("threads");
    TCase *tc = tt_tcase("two threads");
    tcase_add_test(tc, test_first_use_two_threads);
    tcase_add_test(tc, test_eager_two_threads);
    tcase_add_test(tc, test_autograd_two_threads);
    tcase_add_test(tc, test_trace_two_threads);
    tcase_add_test(tc, test_compile_two_threads);
    tcase_add_test(tc, test_registry_two_threads);
    suite_add_tcase(s, tc);
    return s;
}

TT_TEST_MAIN(threads_suite)
