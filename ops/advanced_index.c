/* Built-in ops of the ADV_INDEX family (runtime/builtin_ops.h): scaffolding,
 * filled by issue 27. */
#include "ops_impl.h"

#undef TT__FAMILY_ADV_INDEX
#define TT__FAMILY_ADV_INDEX TT__ROW

tt_status tt__register_advanced_index(tt_library *lib)
{
    (void)lib;
    return TT_OK;
}
