/* Built-in ops: linalg (being written). */
#include "ops_impl.h"

tt_status tt__register_linalg(tt_library *lib)
{
    (void)lib;
    return TT_OK;
}
