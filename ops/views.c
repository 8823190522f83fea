/* Built-in ops: views (being written). */
#include "ops_impl.h"

tt_status tt__register_views(tt_library *lib)
{
    (void)lib;
    return TT_OK;
}
