/* Dropout (native_dropout: seeded, the mask an output) and its backward. */
#include "ops_impl.h"

/* No rows yet: the family's ops land here (issue 26). */
tt_status tt__register_dropout(tt_library *lib)
{
    (void)lib;
    return TT_OK;
}
