/* Built-in ops of the SORT_SCAN family (runtime/builtin_ops.h): scaffolding,
 * filled by issue 27. */
#include "ops_impl.h"

#undef TT__FAMILY_SORT_SCAN
#define TT__FAMILY_SORT_SCAN TT__ROW

tt_status tt__register_sort_scan(tt_library *lib)
{
    (void)lib;
    return TT_OK;
}
