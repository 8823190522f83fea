/* Convolution (1-d, 2-d; grouped, depthwise, transposed) and its backward, im2col and col2im: oneDNN primitives where they are faster, im2col + our GEMM where they are not. */
#include "ops_impl.h"

/* No rows yet: the family's ops land here (issue 26). */
tt_status tt__register_conv(tt_library *lib)
{
    (void)lib;
    return TT_OK;
}
