/* Internal to the library: kernels that compiled plans (tracer/plan.c)
 * call directly for fused work no single op does. Not installed. */
#ifndef TT_OPS_PLAN_H
#define TT_OPS_PLAN_H

#include "tt_ops.h"

/* out += alpha * (a @ b), one GEMM with BLAS's alpha and beta = 1: the SGD
 * update w.add_(x.t() @ g, alpha=-lr) without materializing the product.
 * a [n, k] and b [k, m] are real 2-d tensors of out's dtype (f32 or f64)
 * in any layout BLAS takes without a copy (row-major or a transposed
 * view); out is a real contiguous [n, m] tensor sharing no memory with
 * them. Borrows everything; no dispatch, no version bump. Returns
 * TT_EINVAL when the operands do not fit (nothing is written then). */
tt_status tt__gemm_accumulate(tt_tensor *out, const tt_tensor *a, const tt_tensor *b,
                              double alpha);
/* Whether out, a and b fit tt__gemm_accumulate by their metadata alone
 * (dtypes, sizes, layouts; fake tensors are judged as real ones), so a
 * plan folds only what will run. */
bool tt__gemm_accumulate_fits(const tt_tensor *out, const tt_tensor *a, const tt_tensor *b);

#endif
