/* Built-in ops: reduce (being written). */
#include "ops_impl.h"

tt_status tt__register_reduce(tt_library *lib)
{
    (void)lib;
    return TT_OK;
}
