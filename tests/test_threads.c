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
#include <time.h>

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

/* One thread defines race::twice and frees its library in a loop; the
 * other looks it up and calls it (by name, through a handle kept from
 * before, and with tt_op_call), for about two seconds. A call in flight
 * keeps the definition it runs alive, so every call either returns 2x or
 * fails with TT_ENOTFOUND and the message of a freed op (or of a failed
 * look-up); it never reads a freed schema or kernel table. */

#define RACE_SECONDS 2
#define RACE_MAX_SECONDS 60 /* until both outcomes were seen, if 2 s did not show them */

typedef struct {
    atomic_bool stop, failed;
    const tt_op *kept;
    atomic_long defined, ran, freed, not_found;
    /* each thread's first wrong outcome, read after the joins */
    char definer_error[512], caller_error[512];
} race_state;

static void race_fail(race_state *rs, char *error, const char *what)
{
    if (!error[0])
        snprintf(error, 512, "%s: %s: %s", what, tt_status_name(tt_errcode()), tt_errmsg());
    atomic_store(&rs->failed, true);
}

static void *race_definer(void *p)
{
    race_state *rs = p;
    tt_custom_op_spec spec = {.schema = "race::twice(Tensor x) -> Tensor",
                              .kernel = twice_kernel};
    while (!atomic_load(&rs->stop)) {
        tt_library *lib = tt_library_new(TT_LIB_DEF, "race");
        if (!lib) {
            race_fail(rs, rs->definer_error, "tt_library_new");
            break;
        }
        const tt_op *op = tt_custom_op_define(lib, &spec);
        if (op != rs->kept)
            race_fail(rs, rs->definer_error, "tt_custom_op_define gave another handle");
        atomic_fetch_add(&rs->defined, 1);
        /* Defined for a while: its own call, so the caller's calls meet
         * both a defined op and a free in progress. */
        tt_tensor *x = ramp(2, 3, 1);
        tt_tensor *y = op ? tt_call(op, tt_v_tensor(x)) : NULL;
        if (!y || sum_of(y) != 30)
            race_fail(rs, rs->definer_error, "the definer's own call");
        tt_release(y);
        tt_release(x);
        tt_library_free(lib);
    }
    return NULL;
}

static const char race_freed[] = "race::twice: the op is no longer defined (the library that "
                                 "defined it was freed)";

/* One call's outcome: 2x (the sum of 2 * (0 + 1 + ... + 5) = 30) or the
 * freed op's error. */
static void race_check(race_state *rs, tt_tensor *y, const char *how)
{
    if (y) {
        double s = sum_of(y);
        tt_release(y);
        if (s != 30)
            race_fail(rs, rs->caller_error, how);
        atomic_fetch_add(&rs->ran, 1);
    } else if (tt_errcode() == TT_ENOTFOUND &&
               strncmp(tt_errmsg(), race_freed, strlen(race_freed)) == 0) { /* + call site */
        atomic_fetch_add(&rs->freed, 1);
    } else {
        race_fail(rs, rs->caller_error, how);
    }
    tt_clear_error();
}

static void *race_caller(void *p)
{
    race_state *rs = p;
    tt_tensor *x = ramp(2, 3, 1);
    while (!atomic_load(&rs->stop) && !atomic_load(&rs->failed)) {
        const tt_op *op = tt_op_find("race::twice");
        if (op)
            race_check(rs, tt_call(op, tt_v_tensor(x)), "tt_call after tt_op_find");
        else if (tt_errcode() == TT_ENOTFOUND &&
                 strncmp(tt_errmsg(), "tt_op_find: no op named 'race::twice'", 37) == 0)
            atomic_fetch_add(&rs->not_found, 1);
        else
            race_fail(rs, rs->caller_error, "tt_op_find");
        tt_clear_error();
        race_check(rs, tt_call(rs->kept, tt_v_tensor(x)), "tt_call through the kept handle");
        tt_value out = tt_v_none();
        tt_status st = tt_op_call(rs->kept, (tt_value[]){tt_v_tensor(x)}, 1, &out, 1);
        if (st == TT_OK && out.kind != TT_V_TENSOR)
            race_fail(rs, rs->caller_error, "tt_op_call returned no tensor");
        race_check(rs, st == TT_OK ? out.u.t : NULL, "tt_op_call through the kept handle");
        /* Questions about the op pin it too. */
        char desc[128];
        tt_op_describe(rs->kept, desc, sizeof desc);
        if (strcmp(desc, "race::twice(Tensor x) -> Tensor") != 0 &&
            strcmp(desc, "race::twice (not defined)") != 0)
            race_fail(rs, rs->caller_error, desc);
        (void)tt_op_has_kernel(rs->kept, TT_DEV_CPU);
    }
    tt_release(x);
    return NULL;
}

START_TEST(test_call_races_library_free)
{
    int64_t handles0, defs0, handles, defs;
    race_state rs = {.kept = NULL};
    tt_library *lib = tt_library_new(TT_LIB_DEF, "race");
    ck_assert_ptr_nonnull(lib);
    rs.kept = tt_custom_op_define(lib, &(tt_custom_op_spec){
                                           .schema = "race::twice(Tensor x) -> Tensor",
                                           .kernel = twice_kernel});
    ck_assert_msg(rs.kept != NULL, "%s", tt_errmsg());
    tt_library_free(lib);
    tt_op_counts(&handles0, &defs0);
    pthread_t definer, caller;
    ck_assert_int_eq(pthread_create(&definer, NULL, race_definer, &rs), 0);
    ck_assert_int_eq(pthread_create(&caller, NULL, race_caller, &rs), 0);
    /* At least RACE_SECONDS, longer (up to RACE_MAX_SECONDS) until both
     * a call that ran and one that found the op freed have happened. This
     * is how long the race is given, not a timing assertion. */
    for (int tenths = 0; tenths < RACE_MAX_SECONDS * 10 && !atomic_load(&rs.failed);
         tenths++) {
        if (tenths >= RACE_SECONDS * 10 && atomic_load(&rs.ran) > 0 &&
            atomic_load(&rs.freed) > 0)
            break;
        nanosleep(&(struct timespec){0, 100000000}, NULL);
    }
    atomic_store(&rs.stop, true);
    ck_assert_int_eq(pthread_join(caller, NULL), 0);
    ck_assert_int_eq(pthread_join(definer, NULL), 0);
    ck_assert_msg(!rs.definer_error[0], "%s", rs.definer_error);
    ck_assert_msg(!rs.caller_error[0], "%s", rs.caller_error);
    ck_assert_msg(atomic_load(&rs.defined) > 0 && atomic_load(&rs.ran) > 0 &&
                      atomic_load(&rs.freed) > 0,
                  "defined %ld times, calls ran %ld, found it freed %ld, not found %ld",
                  atomic_load(&rs.defined), atomic_load(&rs.ran), atomic_load(&rs.freed),
                  atomic_load(&rs.not_found));
    /* Every definition was reclaimed; the name kept its one handle. */
    tt_op_counts(&handles, &defs);
    ck_assert_int_eq(handles, handles0);
    ck_assert_int_eq(defs, defs0);
}
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

/* Live counts are kept per thread and summed when asked: a tensor made
 * on one thread and released on another, and tensors a finished thread
 * left alive, still count exactly once. */
typedef struct {
    tt_tensor *made[8];   /* made by the thread, released by the main one */
    tt_tensor *given[8];  /* made by the main thread, half released by the thread */
} handover;

static void *handover_thread(void *p)
{
    handover *h = p;
    for (int i = 0; i < 8; i++) {
        h->made[i] = tt_full(TT_SHAPE(3), i, TT_F32);
        if (i < 4) { /* half of what it was given: its own count ends at +4 */
            tt_release(h->given[i]);
            h->given[i] = NULL;
        }
        tt_release(tt_sin(h->made[i])); /* made and released here */
    }
    return NULL;
}

START_TEST(test_live_counts_across_threads)
{
    int64_t base = tt_live_tensors(), base_st = tt_live_storages();
    for (int round = 0; round < 4; round++) {
        handover h = {{0}, {0}};
        for (int i = 0; i < 8; i++)
            h.given[i] = tt_ones(TT_SHAPE(2), TT_F32);
        ck_assert_int_eq(tt_live_tensors(), base + 8);
        pthread_t th;
        ck_assert_int_eq(pthread_create(&th, NULL, handover_thread, &h), 0);
        ck_assert_int_eq(pthread_join(th, NULL), 0);
        /* The thread has exited: its counts (+8 made, -4 given) joined the
         * shared ones. */
        ck_assert_int_eq(tt_live_tensors(), base + 12);
        ck_assert_int_eq(tt_live_storages(), base_st + 12);
        for (int i = 0; i < 8; i++) {
            tt_release(h.made[i]);
            tt_release(h.given[i]); /* NULL for the half it released */
        }
        ck_assert_int_eq(tt_live_tensors(), base);
        ck_assert_int_eq(tt_live_storages(), base_st);
    }
}
END_TEST

/* The pool's hand-off: loops back to back, after a short serial gap (a
 * watching worker), after a long one (a sleeping worker), and from two
 * caller threads at once (one runs its loop serially): every element is
 * visited exactly once each time, and every call returns. */
static atomic_int pool_hits[4096];

static void pool_visit(int64_t b, int64_t e, void *ctx)
{
    (void)ctx;
    for (int64_t i = b; i < e; i++)
        atomic_fetch_add_explicit(&pool_hits[i], 1, memory_order_relaxed);
}

static void *pool_loops(void *arg)
{
    int rounds = *(int *)arg;
    for (int r = 0; r < rounds; r++) {
        tt_parallel_for(4096, 64, pool_visit, NULL);
        if (r % 64 == 63) {
            struct timespec ts = {0, 2000000}; /* 2 ms: past the watch */
            nanosleep(&ts, NULL);
        }
    }
    return NULL;
}

START_TEST(test_pool_hand_off)
{
    int rounds = 2000, old = tt_get_num_threads();
    tt_set_num_threads(2);
    for (int i = 0; i < 4096; i++)
        atomic_store(&pool_hits[i], 0);
    pool_loops(&rounds);
    for (int i = 0; i < 4096; i++)
        if (atomic_load(&pool_hits[i]) != rounds)
            ck_abort_msg("element %d visited %d times", i, atomic_load(&pool_hits[i]));
    pthread_t th[2];
    for (int i = 0; i < 4096; i++)
        atomic_store(&pool_hits[i], 0);
    for (int t = 0; t < 2; t++)
        ck_assert_int_eq(pthread_create(&th[t], NULL, pool_loops, &rounds), 0);
    for (int t = 0; t < 2; t++)
        pthread_join(th[t], NULL);
    for (int i = 0; i < 4096; i++)
        if (atomic_load(&pool_hits[i]) != 2 * rounds)
            ck_abort_msg("two callers: element %d visited %d times", i,
                         atomic_load(&pool_hits[i]));
    tt_set_num_threads(old);
}
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
    tcase_add_test(tc, test_call_races_library_free);
    tcase_add_test(tc, test_live_counts_across_threads);
    tcase_add_test(tc, test_pool_hand_off);
    suite_add_tcase(s, tc);
    return s;
}

TT_TEST_MAIN(threads_suite)
