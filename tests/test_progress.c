/* The progress bar (tt_progress.h): the exact text of a line for known
 * counts and times (unknown total, 100%, slow and fast rates, an ETA over
 * an hour, lines cut to COLUMNS), what is drawn on stderr (nothing when
 * quiet, not a terminal or TT_PROGRESS=0; with TT_PROGRESS_FORCE the
 * lines, the padding over a longer one and the final newline) and every
 * error path. */
#include "tt_test.h"

#include <time.h>
#include <unistd.h>

/* The line of a bar of `total` at `done` after `elapsed` seconds, for
 * a terminal of `cols` columns. */
static void check_line(const char *label, int64_t total, int64_t done, const char *extra,
                       double elapsed, const char *cols, const char *want)
{
    char buf[1100];
    setenv("COLUMNS", cols, 1);
    tt_progress *p = NN(tt_progress_begin(label, total, TT_PROGRESS_QUIET));
    tt_progress_update(p, done, extra);
    size_t n = tt_progress_format(p, elapsed, buf, sizeof buf);
    ck_assert_str_eq(buf, want);
    ck_assert_uint_eq(n, strlen(want));
    ck_assert_uint_le(n, (size_t)atoi(cols) - 1);
    tt_progress_end(p);
}

START_TEST(test_format)
{
    /* the bar takes a third of 79 columns, the count and percentage padded... */
    check_line("train", 400, 120, "loss 0.512", 9.75, "80",
               "train [#######...................] 120/400  30% 12.3 it/s ETA 0:23 loss 0.512");
    /* ...shrinking when the text needs the room */
    check_line("train", 400, 120, "loss 0.512", 9.75, "60",
               "train [##......] 120/400  30% 12.3 it/s ETA 0:23 loss 0.512");
    /* ...and 40 characters at most */
    check_line("export", 10, 10, NULL, 4, "200",
               "export [########################################] 10/10 100% 2.5 it/s in 0:04");
    /* past the total: full, and the count as it is */
    check_line("export", 10, 12, NULL, 4, "80",
               "export [##########################] 12/10 100% 3.0 it/s in 0:04");
    /* nothing done yet: no rate, no ETA */
    check_line("steps", 4, 0, NULL, 0, "80",
               "steps [..........................] 0/4   0% ? it/s ETA ?");
    /* a negative count is none */
    check_line("steps", 4, -3, NULL, 2, "80",
               "steps [..........................] 0/4   0% ? it/s ETA ?");
}
END_TEST

START_TEST(test_format_unknown_total)
{
    check_line(NULL, 0, 42, NULL, 4, "80", "42 10.5 it/s");
    check_line(NULL, 0, 42, NULL, 0, "80", "42 ? it/s");
    check_line("tokens", 0, 300, "the end", 1.2, "80", "tokens 300 250 it/s the end");
}
END_TEST

START_TEST(test_format_times)
{
    /* an ETA over an hour, H:MM:SS */
    check_line(NULL, 100000, 10, NULL, 1, "80",
               "[..........................]     10/100000   0% 10.0 it/s ETA 2:46:39");
    /* slow steps read as seconds per step */
    check_line("gpt2", 4, 2, NULL, 5, "80",
               "gpt2 [#############.............] 2/4  50% 2.5 s/it ETA 0:05");
    /* a whole hour, and a second less */
    check_line(NULL, 5, 5, NULL, 3600, "80",
               "[##########################] 5/5 100% 720.0 s/it in 1:00:00");
    check_line(NULL, 5, 5, NULL, 3599, "80",
               "[##########################] 5/5 100% 719.8 s/it in 59:59");
}
END_TEST

START_TEST(test_format_truncated)
{
    /* no room for a bar: the text alone, cut at 30 columns */
    check_line("train", 400, 120, "loss 0.512", 9.75, "31", "train 120/400  30% 12.3 it/s E");
    check_line("train", 400, 120, "loss 0.512", 9.75, "50",
               "train 120/400  30% 12.3 it/s ETA 0:23 loss 0.512");
    /* never in the middle of a UTF-8 character (é is two bytes) */
    check_line("\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", 0, 0, NULL, 0, "10",
               "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9");
    /* a terminal of one column: nothing fits */
    check_line("train", 400, 120, "loss 0.512", 9.75, "1", "");
    /* control characters would break the line: spaces */
    check_line("a\tb", 0, 1, "x\ny\rz", 1, "80", "a b 1 1.0 it/s x y z");

    /* a small buffer gets the start, the length is the whole line's */
    setenv("COLUMNS", "80", 1);
    tt_progress *p = NN(tt_progress_begin("train", 400, TT_PROGRESS_QUIET));
    char small[8];
    ck_assert_uint_eq(tt_progress_format(p, 1, small, sizeof small), 60);
    ck_assert_str_eq(small, "train [");
    ck_assert_uint_eq(tt_progress_format(p, 1, NULL, 0), 60);
    tt_progress_end(p);
}
END_TEST

/* ----------------------------------------------------------- drawing */

typedef struct {
    FILE *f;
    int saved;
} capture;

static capture capture_stderr(void)
{
    capture c = {tmpfile(), dup(2)};
    ck_assert_ptr_nonnull(c.f);
    ck_assert_int_ge(c.saved, 0);
    fflush(stderr);
    dup2(fileno(c.f), 2);
    return c;
}

/* What was written to stderr since capture_stderr (a malloc'd string). */
static char *captured(capture *c)
{
    fflush(stderr);
    dup2(c->saved, 2);
    close(c->saved);
    long n = ftell(c->f);
    char *s = NN(malloc((size_t)(n > 0 ? n : 0) + 1));
    rewind(c->f);
    size_t got = fread(s, 1, (size_t)(n > 0 ? n : 0), c->f);
    s[got] = '\0';
    fclose(c->f);
    return s;
}

static void sleep_s(double s)
{
    struct timespec ts = {0, (long)(s * 1e9)};
    nanosleep(&ts, NULL);
}

/* A bar that must draw nothing at all. */
static void check_silent(unsigned flags, const char *env)
{
    if (env)
        setenv("TT_PROGRESS", env, 1);
    else
        unsetenv("TT_PROGRESS");
    capture c = capture_stderr();
    tt_progress *p = tt_progress_begin("quiet", 10, flags);
    ck_assert_ptr_nonnull(p);
    ck_assert(!tt_progress_visible(p));
    for (int i = 1; i <= 10; i++)
        tt_progress_update(p, i, "loss 1");
    ck_assert_ptr_null(tt_progress_end(p));
    char *s = captured(&c);
    ck_assert_str_eq(s, "");
    free(s);
    unsetenv("TT_PROGRESS");
}

/* A COLUMNS that is no number is not used: the terminal's width is, and
 * without a terminal 80. */
START_TEST(test_columns_not_a_number)
{
    capture c = capture_stderr();
    check_line("train", 400, 120, "loss 0.512", 9.75, "wide",
               "train [#######...................] 120/400  30% 12.3 it/s ETA 0:23 loss 0.512");
    free(captured(&c));
}
END_TEST

START_TEST(test_silent)
{
    setenv("COLUMNS", "80", 1);
    check_silent(TT_PROGRESS_QUIET, NULL);
    /* quiet wins over force */
    check_silent(TT_PROGRESS_QUIET | TT_PROGRESS_FORCE, NULL);
    /* stderr is a file here, not a terminal */
    check_silent(0, NULL);
    /* the user's TT_PROGRESS=0 wins over a program's force */
    check_silent(TT_PROGRESS_FORCE, "0");
}
END_TEST

START_TEST(test_force_draws)
{
    setenv("COLUMNS", "80", 1);
    unsetenv("TT_PROGRESS");
    capture c = capture_stderr();
    tt_progress *p = NN(tt_progress_begin("steps", 3, TT_PROGRESS_FORCE));
    ck_assert(tt_progress_visible(p));
    tt_progress_update(p, 1, "loss 1");
    tt_progress_end(p);
    char *s = captured(&c);
    /* drawn at once, before the first step ends */
    const char *first = "\rsteps [..........................] 0/3   0% ? it/s ETA ?";
    ck_assert_msg(!strncmp(s, first, strlen(first)), "drew \"%s\"", s);
    /* the final state, on a line that ends */
    char *last = strrchr(s, '\r');
    ck_assert_ptr_nonnull(strstr(last, "] 1/3  33% "));
    size_t n = strlen(last);
    ck_assert_msg(n > 8 && !strcmp(last + n - 8, " loss 1\n"), "ends \"%s\"", last);
    ck_assert_ptr_eq(strchr(s, '\n'), s + strlen(s) - 1);
    free(s);
}
END_TEST

/* Delayed: work that ends within half a second leaves nothing; longer
 * work draws from then on. */
START_TEST(test_delayed)
{
    setenv("COLUMNS", "80", 1);
    unsetenv("TT_PROGRESS");
    capture c = capture_stderr();
    tt_progress *p = NN(tt_progress_begin("quick", 0, TT_PROGRESS_FORCE | TT_PROGRESS_DELAYED));
    tt_progress_update(p, 10, "nodes");
    tt_progress_end(p);
    char *s = captured(&c);
    ck_assert_str_eq(s, "");
    free(s);
    c = capture_stderr();
    p = NN(tt_progress_begin("slow", 0, TT_PROGRESS_FORCE | TT_PROGRESS_DELAYED));
    tt_progress_update(p, 10, "nodes");
    sleep_s(0.55);
    tt_progress_update(p, 20, "nodes");
    tt_progress_end(p);
    s = captured(&c);
    ck_assert_msg(!strncmp(s, "\rslow 20 ", 9), "drew \"%s\"", s);
    ck_assert_ptr_eq(strchr(s, '\n'), s + strlen(s) - 1);
    free(s);
}
END_TEST

/* A shorter line covers the longer one before it with spaces; the
 * redraws come a tenth of a second apart at most. */
START_TEST(test_force_redraws)
{
    setenv("COLUMNS", "80", 1);
    setenv("TT_PROGRESS", "1", 1);
    capture c = capture_stderr();
    tt_progress *p = NN(tt_progress_begin("p", 0, TT_PROGRESS_FORCE));
    sleep_s(0.15);
    tt_progress_update(p, 5, "a much longer text than the rest");
    for (int i = 0; i < 100; i++) /* all within 0.1 s of the last: not drawn */
        tt_progress_update(p, 5, "a much longer text than the rest");
    sleep_s(0.15);
    tt_progress_update(p, 6, NULL);
    tt_progress_end(p);
    unsetenv("TT_PROGRESS");
    char *s = captured(&c);
    /* begin, the long line, the short one padded, the final draw */
    char *seg[5] = {0};
    int k = 0;
    for (char *q = s; (q = strchr(q, '\r')) && k < 5; q++)
        seg[k++] = q + 1;
    ck_assert_msg(k == 4, "%d lines drawn: \"%s\"", k, s);
    ck_assert(!strncmp(seg[0], "p 0 ? it/s", 10));
    size_t long_len = (size_t)(seg[2] - seg[1]) - 1;
    ck_assert_ptr_nonnull(strstr(seg[1], "it/s a much longer text than the rest\r"));
    ck_assert_uint_eq((size_t)(seg[3] - seg[2]) - 1, long_len); /* padded */
    ck_assert(!strncmp(seg[2], "p 6 ", 4));
    ck_assert(!strncmp(seg[3], "p 6 ", 4));
    ck_assert_ptr_eq(strchr(seg[3], '\n'), seg[3] + strlen(seg[3]) - 1);
    free(s);
}
END_TEST

/* ------------------------------------------------------------ errors */

START_TEST(test_errors)
{
    ck_assert_ptr_null(tt_progress_begin("x", -1, 0));
    ck_assert_error(TT_EINVAL, "tt_progress_begin: argument 'total' expects a count >= 0 "
                               "(0: unknown), got -1");
    ck_assert_str_eq(tt_errmsg(), "tt_progress_begin: argument 'total' expects a count >= 0 "
                                  "(0: unknown), got -1");
    ck_assert_ptr_null(tt_progress_begin(NULL, 3, 8));
    ck_assert_str_eq(tt_errmsg(), "tt_progress_begin: argument 'flags' has unknown bits 0x8 "
                                  "(expected TT_PROGRESS_QUIET, TT_PROGRESS_FORCE, "
                                  "TT_PROGRESS_DELAYED)");
    ck_assert_int_eq(tt_errcode(), TT_EINVAL);
    tt_clear_error();

    /* a NULL bar (one that failed to begin) is no bar */
    tt_progress_update(NULL, 3, "x");
    ck_assert_ptr_null(tt_progress_end(NULL));
    ck_assert(!tt_progress_visible(NULL));
    char buf[4] = "abc";
    ck_assert_uint_eq(tt_progress_format(NULL, 1, buf, sizeof buf), 0);
    ck_assert_str_eq(buf, "");
    ck_assert_int_eq(tt_errcode(), TT_OK);

    tt_debug_fail_alloc(1);
    ck_assert_ptr_null(tt_progress_begin("x", 3, TT_PROGRESS_QUIET));
    ck_assert_int_eq(tt_errcode(), TT_ENOMEM);
    ck_assert_str_eq(tt_errmsg(), "tt_progress_begin: out of memory");
    tt_debug_fail_alloc(0);
    tt_clear_error();
}
END_TEST

static Suite *progress_suite(void)
{
    Suite *s = suite_create("progress");
    TCase *tc = tt_tcase("format");
    tcase_add_test(tc, test_format);
    tcase_add_test(tc, test_format_unknown_total);
    tcase_add_test(tc, test_format_times);
    tcase_add_test(tc, test_format_truncated);
    suite_add_tcase(s, tc);
    tc = tt_tcase("draw");
    tcase_add_test(tc, test_columns_not_a_number);
    tcase_add_test(tc, test_silent);
    tcase_add_test(tc, test_force_draws);
    tcase_add_test(tc, test_force_redraws);
    tcase_add_test(tc, test_delayed);
    suite_add_tcase(s, tc);
    tc = tt_tcase("errors");
    tcase_add_test(tc, test_errors);
    suite_add_tcase(s, tc);
    return s;
}

TT_TEST_MAIN(progress_suite)
