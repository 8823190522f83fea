/* Padding (constant, reflection, replication) and upsampling (nearest, bilinear), with their backward ops. */
#include "ops_impl.h"

/* No rows yet: the family's ops land here (issue 26). */
tt_status tt__register_pad_upsample(tt_library *lib)
{
    (void)lib;
    return TT_OK;
}
