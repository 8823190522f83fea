/* Shared helpers for the Check suites. Every TCase gets tt_test_setup /
 * tt_test_teardown as a checked fixture, so each test ends with zero live
 * tensors and storages (counted by the runtime) and no allocation failure
 * left armed. */
#ifndef TT_TEST_H
#define TT_TEST_H

#include <check.h>
#include <string.h>

#include "tensortrace.h"

static inline void tt_test_setup(void)
{
    tt_clear_error();
    tt_debug_fail_alloc(0);
    tt_manual_seed(1234);
}

static inline void tt_test_teardown(void)
{
    tt_debug_fail_alloc(0);
    ck_assert_int_eq(tt_live_tensors(), 0);
    ck_assert_int_eq(tt_live_storages(), 0);
}

/* A TCase with the fixture attached. */
static inline TCase *tt_tcase(const char *name)
{
    TCase *tc = tcase_create(name);
    tcase_add_checked_fixture(tc, tt_test_setup, tt_test_teardown);
    tcase_set_timeout(tc, 120);
    return tc;
}

/* Asserts the last error's status and that its message contains `needle`. */
#define ck_assert_error(code, needle)                                          \
    do {                                                                       \
        ck_assert_msg(tt_errcode() == (code), "expected %s, got %s: %s",       \
                      tt_status_name(code), tt_status_name(tt_errcode()),      \
                      tt_errmsg());                                            \
        ck_assert_msg(strstr(tt_errmsg(), (needle)) != NULL,                   \
                      "message \"%s\" does not contain \"%s\"", tt_errmsg(),  \
                      (needle));                                               \
    } while (0)

/* main() for a suite file: runs `suite`, returns non-zero on failure. */
#define TT_TEST_MAIN(make_suite)                                               \
    int main(void)                                                             \
    {                                                                          \
        SRunner *sr = srunner_create(make_suite());                            \
        srunner_run_all(sr, CK_NORMAL);                                        \
        int failed = srunner_ntests_failed(sr);                                \
        srunner_free(sr);                                                      \
        return failed ? 1 : 0;                                                 \
    }

#endif
