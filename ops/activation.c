/* The activations a convolutional network uses (leaky_relu, elu, hardtanh, hardswish, hardsigmoid, softplus) and their backward ops. */
#include "ops_impl.h"

/* No rows yet: the family's ops land here (issue 26). */
tt_status tt__register_activation(tt_library *lib)
{
    (void)lib;
    return TT_OK;
}
