/* Private copies of an op call's arguments (tt__argset, trace_impl.h):
 * the tracer's fake-kernel probe runs a custom op's fake kernel on fake
 * copies, and opcheck runs the op on real and fake copies. Here, below
 * both, so that neither calls the other (tests/check_layers.py). */
#include "trace_impl.h"
#include "tensor_impl.h"

#include <string.h>

/* A copy of t with t's exact layout (sizes, strides, storage offset: a
 * copy of its whole storage, seen the same way) or a fake tensor like t,
 * requiring grad when t does; NULL with the error set. The real copy must
 * keep the layout, not just the values: opcheck compares the real
 * kernel's output strides with the fake kernel's, which sees t's exact
 * layout, and a kernel's output layout follows its input's. */
static tt_tensor *copy_tensor(const tt_tensor *t, bool fake)
{
    tt_tensor *c;
    if (fake || t->storage->fake) {
        c = tt_fake_like(t);
    } else {
        tt_storage *s = tt__storage_new(t->storage->nbytes, false);
        if (!s)
            return NULL;
        if (t->storage->nbytes)
            memcpy(s->data, t->storage->data, t->storage->nbytes);
        c = tt__tensor_new(s, (tt_dtype)t->dtype, t->ndim, t->sizes, t->strides, t->offset);
        tt__storage_release(s);
    }
    if (c && tt_requires_grad(t) && tt_set_requires_grad(c, true))
        c = tt_release(c);
    return c;
}

void tt__argset_free(tt__argset *a)
{
    for (int i = 0; i < a->n; i++) {
        if (a->v[i].kind == TT_V_TENSOR)
            tt_release(a->v[i].u.t);
        if (a->lists[i]) {
            for (int k = 0; k < a->v[i].n; k++)
                tt_release(a->lists[i][k]);
            tt__free(a->lists[i]);
        }
    }
    memset(a, 0, sizeof *a);
}

tt_status tt__argset_copy(tt__argset *a, const tt_value *args, int nargs, bool fake)
{
    memset(a, 0, sizeof *a);
    for (int i = 0; i < nargs; i++) {
        a->v[i] = args[i];
        a->n = i + 1;
        if (args[i].kind == TT_V_TENSOR && args[i].u.t) {
            a->v[i].u.t = copy_tensor(args[i].u.t, fake);
            if (!a->v[i].u.t) {
                a->v[i] = tt_v_none();
                return tt_errcode();
            }
        } else if (args[i].kind == TT_V_TENSORS) {
            a->lists[i] = tt__calloc((size_t)(args[i].n ? args[i].n : 1), sizeof(tt_tensor *));
            if (!a->lists[i])
                return tt_error(TT_ENOMEM, "out of memory copying an op call's arguments");
            for (int k = 0; k < args[i].n; k++)
                if (args[i].u.tensors[k] &&
                    !(a->lists[i][k] = copy_tensor(args[i].u.tensors[k], fake)))
                    return tt_errcode();
            a->v[i].u.tensors = a->lists[i];
        }
    }
    return TT_OK;
}
