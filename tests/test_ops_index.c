#include "tt_test.h"
START_TEST(test_placeholder) {}
END_TEST
static Suite *index_suite(void)
{
    Suite *s = suite_create("ops_index");
    TCase *tc = tt_tcase("gather");
    tcase_add_test(tc, test_placeholder);
    suite_add_tcase(s, tc);
    return s;
}
TT_TEST_MAIN(index_suite)
