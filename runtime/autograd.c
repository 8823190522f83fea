/* The autograd engine. Tensors carry an autograd slot; the engine, grad
 * mode and the recording dispatch key live here. */
#include "dispatch_impl.h"

_Thread_local int tt__autograd_off;
_Thread_local bool tt__grad_disabled;

void tt__autograd_meta_free(struct tt_autograd_meta *m)
{
    (void)m;
}

bool tt__tensor_requires_grad(const tt_tensor *t)
{
    return t && (t->flags & TT_TF_REQUIRES_GRAD);
}

bool tt__autograd_wants(const tt_op *op, const tt_value *args, int nargs)
{
    (void)op, (void)args, (void)nargs;
    return false;
}

tt_status tt__autograd_call(const tt_op *op, const tt_value *args, int nargs,
                            tt_value *outs, int nouts)
{
    return tt__dispatch_backend(op, args, nargs, outs, nouts);
}
