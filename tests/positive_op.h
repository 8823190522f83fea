/* mylib::positive's kernels, shared by the suites that need an op with a
 * data-dependent output size (test_tracer, test_symbolic). */
#ifndef TT_POSITIVE_OP_H
#define TT_POSITIVE_OP_H

#include "tt_test.h"

/* mylib::positive(Tensor x) -> Tensor: the positive elements of x, in
 * order (a data-dependent size, as nonzero's). */
static inline tt_status positive_kernel(tt_frame *f)
{
    tt_tensor *x;
    tt_status st = tt_arg_tensor(f, 0, &x);
    if (st)
        return st;
    double *v = tt_test_values(x);
    int64_t k = 0;
    for (int64_t i = 0; i < tt_numel(x); i++)
        if (v[i] > 0)
            v[k++] = v[i];
    tt_tensor *out = tt_from_data(1, &k, TT_F64, v);
    free(v);
    tt_tensor *r = out ? tt_to_dtype(out, tt_dtype_of(x)) : NULL;
    tt_release(out);
    return tt_return(f, 0, r);
}

static inline tt_status positive_fake(tt_frame *f)
{
    tt_tensor *x;
    tt_status st = tt_arg_tensor(f, 0, &x);
    if (st)
        return st;
    tt_size u = tt_frame_new_dynamic_size(f);
    return tt_return(f, 0, tt_new_empty(x, 1, &u));
}

#endif
