/* The profiler (tracer/tt_profile.h): eager ops and compiled plan steps
 * recorded with their call sites, bytes and FLOPs; the table, the Chrome
 * trace (parsed back with jansson) and the SVG timeline; memory; every
 * misuse an error with its message; TT_PROFILE=file in a child process. */
#include "tt_test.h"

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int line_mm, line_relu;

/* relu(x @ w + b): three ops on two lines */
static tt_status layer(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_scope_begin();
    line_mm = __LINE__ + 1;
    tt_tensor *h = tt_add(tt_mm(in[0], in[1]), in[2]);
    line_relu = __LINE__ + 1;
    out[0] = tt_keep(tt_relu(tt_mul_scalar(h, 2)));
    tt_scope_end();
    return out[0] ? TT_OK : tt_errcode();
}

static void make_inputs(tt_tensor **in)
{
    in[0] = NN(tt_ones(TT_SHAPE(8, 16), TT_F32));
    in[1] = NN(tt_ones(TT_SHAPE(16, 4), TT_F32));
    in[2] = NN(tt_ones(TT_SHAPE(4), TT_F32));
}

static void release_inputs(tt_tensor **in)
{
    for (int i = 0; i < 3; i++)
        tt_release(in[i]);
}

/* The first event named name (and of kind, unless kind < 0). */
static const tt_profile_event *find(const tt_profile *p, const char *name, int kind)
{
    for (int i = 0; i < tt_profile_num_events(p); i++) {
        const tt_profile_event *e = tt_profile_event_at(p, i);
        if (strcmp(e->name, name) == 0 && (kind < 0 || (int)e->kind == kind))
            return e;
    }
    return NULL;
}

START_TEST(test_eager_ops)
{
    tt_tensor *in[3], *out = NULL;
    make_inputs(in);
    OK(tt_profile_begin());
    OK(layer(in, 3, &out, 1, NULL));
    tt_profile *p = NN(tt_profile_end());
    tt_release(out);

    ck_assert_int_eq(tt_profile_num_events(p), 4);
    const tt_profile_event *mm = find(p, "tt::mm", TT_PROFILE_OP);
    ck_assert_ptr_nonnull(mm);
    ck_assert_int_eq(mm->depth, 0);
    ck_assert_int_eq(mm->flops, 2 * 8 * 4 * 16);
    ck_assert_int_eq(mm->bytes, (8 * 16 + 16 * 4 + 8 * 4) * 4);
    ck_assert_int_ge(mm->dur_ns, 0);
    ck_assert_str_eq(mm->loc.func, "layer");
    ck_assert_int_eq(mm->loc.line, line_mm);
    ck_assert_ptr_nonnull(strstr(mm->loc.file, "test_profile.c"));
    ck_assert_ptr_null(mm->node);
    /* the result of the mm (128 B) and more are alive after it */
    ck_assert_int_ge(mm->live_bytes, 8 * 4 * 4);
    const tt_profile_event *relu = find(p, "tt::relu", TT_PROFILE_OP);
    ck_assert_ptr_nonnull(relu);
    ck_assert_int_eq(relu->loc.line, line_relu);
    ck_assert_int_eq(relu->flops, -1);
    ck_assert_int_ge(relu->start_ns, mm->start_ns + mm->dur_ns);
    ck_assert_ptr_null(tt_profile_event_at(p, 4));
    ck_assert_ptr_null(tt_profile_event_at(p, -1));

    char *table = NN(tt_profile_table(p, 0));
    ck_assert_ptr_nonnull(strstr(table, "Name"));
    ck_assert_ptr_nonnull(strstr(table, "tt::mm"));
    ck_assert_ptr_nonnull(strstr(table, "tt::add.Tensor"));
    ck_assert_ptr_nonnull(strstr(table, "4 events over"));
    ck_assert_ptr_nonnull(strstr(table, "Peak tensor storage:"));
    free(table);
    /* max_rows cuts the table and says so */
    table = NN(tt_profile_table(p, 2));
    ck_assert_ptr_nonnull(strstr(table, "(2 more rows)"));
    free(table);
    tt_profile_free(p);
    release_inputs(in);
}
END_TEST

/* After each op, the storage alive: the peak is where the most is. */
START_TEST(test_memory_peak)
{
    OK(tt_profile_begin());
    tt_tensor *big = NN(tt_zeros(TT_SHAPE(1024, 256), TT_F32)); /* 1 MiB */
    tt_tensor *twice = NN(tt_mul_scalar(big, 2));
    tt_release(big);
    tt_release(twice);
    tt_tensor *small = NN(tt_zeros(TT_SHAPE(4), TT_F32));
    tt_release(small);
    tt_profile *p = NN(tt_profile_end());
    int at;
    int64_t peak = tt_profile_peak_bytes(p, &at);
    ck_assert_int_ge(peak, 2 * 1024 * 256 * 4);
    ck_assert_int_ge(at, 0);
    ck_assert_str_eq(tt_profile_event_at(p, at)->name, "tt::mul.Scalar");
    char *table = NN(tt_profile_table(p, 0));
    ck_assert_ptr_nonnull(strstr(table, "after tt::mul.Scalar at test_profile.c:"));
    free(table);
    tt_profile_free(p);
}
END_TEST

START_TEST(test_compiled_steps)
{
    tt_tensor *in[3], *out = NULL;
    make_inputs(in);
    tt_compiled *c = NN(tt_compile(layer, 3, 1, &(tt_trace_opts){.name = "layer"}));
    OK(tt_profile_begin());
    /* the first call traces and compiles; the second replays the plan
     * from its memory plan, placed after the first */
    for (int k = 0; k < 3; k++) {
        OK(tt_compiled_call(c, in, &out));
        out = tt_release(out);
    }
    tt_profile *p = NN(tt_profile_end());

    const tt_profile_event *compile = find(p, "compile layer", TT_PROFILE_COMPILE);
    ck_assert_ptr_nonnull(compile);
    ck_assert_int_eq(compile->depth, 0);
    int calls = 0, steps = 0;
    const tt_profile_event *last_call = NULL;
    for (int i = 0; i < tt_profile_num_events(p); i++) {
        const tt_profile_event *e = tt_profile_event_at(p, i);
        if (e->kind == TT_PROFILE_CALL) {
            ck_assert_str_eq(e->name, "compiled layer");
            ck_assert_int_eq(e->depth, 0);
            calls++;
            last_call = e;
        } else if (e->kind == TT_PROFILE_STEP || e->kind == TT_PROFILE_FUSED) {
            /* inside its call, at its node's line */
            ck_assert_int_eq(e->depth, 1);
            ck_assert_ptr_nonnull(e->node);
            ck_assert_ptr_nonnull(last_call);
            ck_assert_int_ge(e->start_ns, last_call->start_ns);
            ck_assert(e->loc.line == line_mm || e->loc.line == line_relu);
            steps++;
        } else if (e->kind == TT_PROFILE_OP && last_call) {
            /* what a step calls inside (its output's allocation) is the
             * step's time, not an op of the program */
            ck_assert_int_ge(e->start_ns, last_call->start_ns + last_call->dur_ns);
        }
    }
    ck_assert_int_eq(calls, 3);
    ck_assert_int_ge(steps, 3 * 2);
    const tt_profile_event *mm = find(p, "tt::mm", TT_PROFILE_STEP);
    ck_assert_ptr_nonnull(mm);
    ck_assert_int_eq(mm->flops, 2 * 8 * 4 * 16);
    ck_assert_str_eq(mm->node, "mm");
    /* mul and relu run as one fused step */
    const tt_profile_event *fused = find(p, "fused mul, relu", TT_PROFILE_FUSED);
    ck_assert_ptr_nonnull(fused);
    ck_assert_int_gt(fused->bytes, 0);
    ck_assert_int_gt(last_call->planned_bytes, 0);
    ck_assert_int_ge(last_call->unshared_bytes, last_call->planned_bytes);
    char *table = NN(tt_profile_table(p, 0));
    ck_assert_ptr_nonnull(strstr(table, "compiled layer: memory plan block"));
    ck_assert_ptr_nonnull(strstr(table, "fused mul, relu"));
    free(table);
    tt_profile_free(p);
    tt_compiled_free(c);
    release_inputs(in);
}
END_TEST

/* Backward's ops are the thread's calls too. */
START_TEST(test_backward_ops)
{
    tt_tensor *x = NN(tt_ones(TT_SHAPE(3, 3), TT_F64));
    OK(tt_set_requires_grad(x, true));
    OK(tt_profile_begin());
    tt_tensor *xx = NN(tt_mul(x, x)), *y = NN(tt_sum_all(xx));
    OK(tt_backward(y, NULL));
    tt_release(xx);
    tt_profile *p = NN(tt_profile_end());
    int n = tt_profile_num_events(p);
    ck_assert_int_gt(n, 2);
    ck_assert_ptr_nonnull(find(p, "tt::mul.Tensor", TT_PROFILE_OP));
    tt_profile_free(p);
    tt_release(y);
    tt_release(x);
}
END_TEST

/* What Perfetto needs: traceEvents, each complete event with name, ph,
 * ts, dur, pid, tid; nested events inside their parent's interval. */
static void check_chrome(const char *path, const char *must_name)
{
    json_error_t err;
    json_t *doc = json_load_file(path, 0, &err);
    ck_assert_msg(doc, "%s: line %d: %s", path, err.line, err.text);
    json_t *events = json_object_get(doc, "traceEvents");
    ck_assert(json_is_array(events));
    size_t i;
    json_t *e;
    int complete = 0, counters = 0, named = 0;
    json_array_foreach(events, i, e) {
        const char *ph = json_string_value(json_object_get(e, "ph"));
        ck_assert_ptr_nonnull(ph);
        ck_assert(json_is_integer(json_object_get(e, "pid")));
        if (strcmp(ph, "X") == 0) {
            complete++;
            ck_assert(json_is_string(json_object_get(e, "name")));
            ck_assert(json_is_number(json_object_get(e, "ts")));
            ck_assert(json_is_number(json_object_get(e, "dur")));
            ck_assert(json_is_integer(json_object_get(e, "tid")));
            ck_assert(json_is_object(json_object_get(e, "args")));
            named += strcmp(json_string_value(json_object_get(e, "name")), must_name) == 0;
        } else if (strcmp(ph, "C") == 0) {
            counters++;
            ck_assert(json_is_integer(json_object_get(json_object_get(e, "args"), "bytes")));
        }
    }
    ck_assert_int_gt(complete, 0);
    ck_assert_int_eq(counters, complete);
    ck_assert_int_gt(named, 0);
    json_decref(doc);
}

START_TEST(test_chrome_and_svg)
{
    tt_tensor *in[3], *out = NULL;
    make_inputs(in);
    tt_compiled *c = NN(tt_compile(layer, 3, 1, NULL));
    OK(tt_profile_begin());
    OK(layer(in, 3, &out, 1, NULL));
    out = tt_release(out);
    OK(tt_compiled_call(c, in, &out));
    out = tt_release(out);
    tt_profile *p = NN(tt_profile_end());
    char json[] = "/tmp/tt_profile_XXXXXX";
    int fd = mkstemp(json);
    ck_assert_int_ge(fd, 0);
    close(fd);
    OK(tt_profile_write_chrome(p, json));
    check_chrome(json, "tt::mm");
    char *text = tt_test_read_file(json);
    ck_assert_ptr_nonnull(strstr(text, "\"source\": \""));
    ck_assert_ptr_nonnull(strstr(text, "\"node\": \"mm\""));
    ck_assert_ptr_nonnull(strstr(text, "\"flops\": 1024"));
    free(text);
    OK(tt_profile_write_svg(p, json));
    text = tt_test_read_file(json);
    ck_assert_ptr_nonnull(strstr(text, "<?xml"));
    ck_assert_ptr_nonnull(strstr(text, "<svg xmlns=\"http://www.w3.org/2000/svg\""));
    ck_assert_ptr_nonnull(strstr(text, "<title>tt::mm (op)"));
    ck_assert_ptr_nonnull(strstr(text, "</svg>"));
    ck_assert_int_eq(tt_test_count(text, "<g>"), tt_profile_num_events(p));
    free(text);
    unlink(json);
    tt_profile_free(p);
    tt_compiled_free(c);
    release_inputs(in);
}
END_TEST

static tt_status nop_call(tt_mode *m, const tt_op *op, const tt_value *args, int nargs,
                          tt_value *outs, int nouts)
{
    (void)m;
    return tt_op_redispatch(op, args, nargs, outs, nouts);
}

START_TEST(test_errors)
{
    ck_assert_ptr_null(tt_profile_end());
    ck_assert_error(TT_EINVAL, "tt_profile_end: this thread is not being profiled (no "
                               "tt_profile_begin)");
    OK(tt_profile_begin());
    ck_assert_int_eq(tt_profile_begin(), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_profile_begin: this thread is already being profiled "
                               "(call tt_profile_end first)");
    /* a mode pushed after begin must go first */
    tt_mode m = {.call = nop_call};
    OK(tt_mode_push(&m));
    ck_assert_ptr_null(tt_profile_end());
    ck_assert_error(TT_EINVAL, "tt_profile_end: a mode pushed after tt_profile_begin is still "
                               "on (pop it first)");
    ck_assert_ptr_eq(tt_mode_pop(), &m);
    tt_profile *p = NN(tt_profile_end());
    ck_assert_int_eq(tt_profile_write_chrome(p, "/nonexistent-dir/x.json"), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_profile_write_chrome: cannot write \"/nonexistent-dir/x.json\": "
                               "No such file or directory");
    ck_assert_int_eq(tt_profile_write_svg(p, NULL), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_profile_write_svg: argument 'path' is NULL");
    ck_assert_int_eq(tt_profile_write_chrome(NULL, "x"), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_profile_write_chrome: argument 'profile' is NULL");
    ck_assert_ptr_null(tt_profile_table(NULL, 0));
    ck_assert_error(TT_EINVAL, "tt_profile_table: argument 'profile' is NULL");
    /* an empty profile reads as one */
    ck_assert_int_eq(tt_profile_num_events(p), 0);
    char *table = NN(tt_profile_table(p, 0));
    ck_assert_ptr_nonnull(strstr(table, "0 events over 0.000 ms"));
    free(table);
    ck_assert_int_eq(tt_profile_num_events(NULL), 0);
    ck_assert_ptr_null(tt_profile_free(p));
    ck_assert_ptr_null(tt_profile_free(NULL));
    tt_clear_error();
}
END_TEST

/* A profile is per thread: another thread's ops are not in it, and it
 * can profile its own. */
static void *other_thread(void *arg)
{
    tt_profile **out = arg;
    if (tt_profile_begin())
        return NULL;
    tt_tensor *x = tt_ones(TT_SHAPE(2), TT_F32);
    tt_release(tt_exp(x));
    tt_release(x);
    *out = tt_profile_end();
    return NULL;
}

START_TEST(test_threads)
{
    OK(tt_profile_begin());
    tt_profile *theirs = NULL;
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, other_thread, &theirs), 0);
    pthread_join(t, NULL);
    tt_profile *mine = NN(tt_profile_end());
    ck_assert_ptr_nonnull(theirs);
    ck_assert_int_eq(tt_profile_num_events(mine), 0);
    ck_assert_ptr_nonnull(find(theirs, "tt::exp", TT_PROFILE_OP));
    ck_assert_int_ne(tt_profile_event_at(theirs, 0)->thread, 0);
    tt_profile_free(mine);
    tt_profile_free(theirs);
}
END_TEST

/* TT_PROFILE=file: this test binary run again as a child with the
 * variable set, which calls some ops and exits. */
START_TEST(test_environment)
{
    char json[] = "/tmp/tt_profile_env_XXXXXX";
    int fd = mkstemp(json);
    ck_assert_int_ge(fd, 0);
    close(fd);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "TT_PROFILE=%s /proc/%ld/exe --child 2>&1", json, (long)getpid());
    FILE *child = popen(cmd, "r");
    ck_assert_ptr_nonnull(child);
    char out[8192];
    size_t n = fread(out, 1, sizeof out - 1, child);
    out[n] = '\0';
    ck_assert_int_eq(pclose(child), 0);
    ck_assert_msg(strstr(out, "tensortrace: profile of 2 events written to"), "%s", out);
    ck_assert_msg(strstr(out, "tt::exp"), "%s", out);
    check_chrome(json, "tt::exp");
    unlink(json);
}
END_TEST

static Suite *profile_suite(void)
{
    Suite *s = suite_create("profile");
    TCase *tc = tt_tcase("profile");
    tcase_add_test(tc, test_eager_ops);
    tcase_add_test(tc, test_memory_peak);
    tcase_add_test(tc, test_compiled_steps);
    tcase_add_test(tc, test_backward_ops);
    tcase_add_test(tc, test_chrome_and_svg);
    tcase_add_test(tc, test_errors);
    tcase_add_test(tc, test_threads);
    tcase_add_test(tc, test_environment);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--child") == 0) {
        /* profiled from the library's load (TT_PROFILE): two ops */
        tt_tensor *x = tt_ones(TT_SHAPE(4), TT_F32);
        tt_tensor *y = tt_exp(x);
        tt_release(x);
        tt_release(y);
        return x && y ? 0 : 1;
    }
    SRunner *sr = srunner_create(profile_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
