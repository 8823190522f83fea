/* Pooling: max (with indices) and average, 1-d and 2-d, adaptive average, and their backward ops. */
#include "ops_impl.h"

/* No rows yet: the family's ops land here (issue 26). */
tt_status tt__register_pooling(tt_library *lib)
{
    (void)lib;
    return TT_OK;
}
