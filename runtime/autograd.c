/* The autograd engine. (Filled in by the custom-op/autograd work; for now
 * tensors only carry the slot.) */
#include "tensor_impl.h"

void tt__autograd_meta_free(struct tt_autograd_meta *m)
{
    (void)m;
}
