/* tensortrace built-in ops for indexing, scatter, sorting and scans: typed
 * C wrappers with PyTorch's names and argument forms.
 *
 * Conventions are tt_ops.h's: results are new references (NULL + error on
 * failure), arguments are borrowed, dims may be negative; with no mode,
 * gradient or fake tensor in play a wrapper runs its kernel directly,
 * otherwise it goes through the dispatcher.
 */
#ifndef TT_INDEX_H
#define TT_INDEX_H

#include "tt_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif
#pragma GCC visibility push(default) /* the public API: see tt_runtime.h */

/* ------------------------------------- gather, scatter, index_select */

/* ------------------------------------------ advanced indexing, masks */

/* ------------------------------------- sorting, selection, scans */

/* tt::sort: self's values sorted along dim (ascending, or descending),
 * NaN as the largest value, and through *indices (NULL: dropped) the i64
 * position in self of each. The sort is stable: equal keys keep their
 * order. Results are laid out like self. The values' gradient flows back
 * through the indices. */
tt_tensor *tt_sort(const tt_tensor *self, int dim, bool descending, tt_tensor **indices);
/* tt::sort.stable: PyTorch's sort(stable=...); every tt sort is stable. */
tt_tensor *tt_sort_stable(const tt_tensor *self, bool stable, int dim, bool descending,
                          tt_tensor **indices);
/* The indices of tt_sort alone (PyTorch's argsort, through tt::sort). */
tt_tensor *tt_argsort(const tt_tensor *self, int dim, bool descending);
/* tt::topk: the k largest (or smallest) elements along dim, best first
 * (whatever `sorted` says), and their i64 indices through *indices (NULL:
 * dropped). NaN counts as the largest value; among equal values the lower
 * index comes first. Fails when k is not in [0, size of dim]. */
tt_tensor *tt_topk(const tt_tensor *self, int64_t k, int dim, bool largest, bool sorted,
                   tt_tensor **indices);
/* tt::max.dim / tt::min.dim: the maximum (minimum) along dim and, through
 * *indices (NULL: dropped), the i64 index of its first occurrence; a NaN
 * is the extremum (its first index). keepdim keeps dim with size 1. */
tt_tensor *tt_max_dim(const tt_tensor *self, int dim, bool keepdim, tt_tensor **indices);
tt_tensor *tt_min_dim(const tt_tensor *self, int dim, bool keepdim, tt_tensor **indices);
/* tt::argmin: i64 index of the first minimum along dim (NaN wins), as
 * tt_argmax. */
tt_tensor *tt_argmin(const tt_tensor *self, int dim, bool keepdim);
/* tt::cumsum / tt::cumprod: running sums (products) along dim, contiguous;
 * integer and bool inputs give i64 (PyTorch's promotion). _dtype: self is
 * first cast to dtype, the result's (not bool). cumprod's gradient is
 * exact where self has zeros. */
tt_tensor *tt_cumsum(const tt_tensor *self, int dim);
tt_tensor *tt_cumsum_dtype(const tt_tensor *self, int dim, tt_dtype dtype);
tt_tensor *tt_cumprod(const tt_tensor *self, int dim);
/* tt::logcumsumexp: log(cumsum(exp(self))) along dim without overflow
 * (f32 and f64); its gradient too. */
tt_tensor *tt_logcumsumexp(const tt_tensor *self, int dim);
/* tt::logsumexp: log(sum(exp(self))) over ndims dims (0: every dim),
 * computed stably (the maximum subtracted first); a row of -inf gives
 * -inf. Integer inputs give f32. */
tt_tensor *tt_logsumexp(const tt_tensor *self, int ndims, const int64_t *dims, bool keepdim);
/* tt::prod (every element, 0-dim result) and tt::prod.dim_int; integer
 * and bool inputs give i64. */
tt_tensor *tt_prod(const tt_tensor *self);
tt_tensor *tt_prod_dim(const tt_tensor *self, int dim, bool keepdim);
/* tt::kthvalue: the k-th smallest (k from 1) along dim and its i64 index
 * through *indices (NULL: dropped); NaN is the largest value, equal values
 * count in index order. Fails unless 1 <= k <= the size of dim. */
tt_tensor *tt_kthvalue(const tt_tensor *self, int64_t k, int dim, bool keepdim,
                       tt_tensor **indices);
/* tt::median.dim: the lower median along dim (a NaN, the first, when the
 * row has one) and its index; tt::median: of every element (a 0-dim
 * result; NaN for an empty float tensor), its gradient shared by the
 * elements equal to it. */
tt_tensor *tt_median_dim(const tt_tensor *self, int dim, bool keepdim, tt_tensor **indices);
tt_tensor *tt_median(const tt_tensor *self);

#ifdef TT_CALLSITES
#define tt_kthvalue(...) TT_CALLSITE_T(tt_kthvalue, __VA_ARGS__)
#define tt_median_dim(...) TT_CALLSITE_T(tt_median_dim, __VA_ARGS__)
#define tt_median(...) TT_CALLSITE_T(tt_median, __VA_ARGS__)
#define tt_cumsum(...) TT_CALLSITE_T(tt_cumsum, __VA_ARGS__)
#define tt_cumsum_dtype(...) TT_CALLSITE_T(tt_cumsum_dtype, __VA_ARGS__)
#define tt_cumprod(...) TT_CALLSITE_T(tt_cumprod, __VA_ARGS__)
#define tt_logcumsumexp(...) TT_CALLSITE_T(tt_logcumsumexp, __VA_ARGS__)
#define tt_logsumexp(...) TT_CALLSITE_T(tt_logsumexp, __VA_ARGS__)
#define tt_prod(...) TT_CALLSITE_T(tt_prod, __VA_ARGS__)
#define tt_prod_dim(...) TT_CALLSITE_T(tt_prod_dim, __VA_ARGS__)
#define tt_sort(...) TT_CALLSITE_T(tt_sort, __VA_ARGS__)
#define tt_sort_stable(...) TT_CALLSITE_T(tt_sort_stable, __VA_ARGS__)
#define tt_argsort(...) TT_CALLSITE_T(tt_argsort, __VA_ARGS__)
#define tt_topk(...) TT_CALLSITE_T(tt_topk, __VA_ARGS__)
#define tt_max_dim(...) TT_CALLSITE_T(tt_max_dim, __VA_ARGS__)
#define tt_min_dim(...) TT_CALLSITE_T(tt_min_dim, __VA_ARGS__)
#define tt_argmin(...) TT_CALLSITE_T(tt_argmin, __VA_ARGS__)
#endif

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif /* TT_INDEX_H */
