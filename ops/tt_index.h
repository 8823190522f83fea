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

/* tt::gather: out[i][j] = self[index[i][j]][j] (dim 0; likewise along any
 * dim). index is i64 with self's number of dims, index.size(d) <=
 * self.size(d) off dim; out has index's shape. An index value outside
 * [0, self.size(dim)) is an error naming it. */
tt_tensor *tt_gather(const tt_tensor *self, int dim, const tt_tensor *index);
/* tt::scatter.src: a copy of self with out[index[i][j]][j] = src[i][j]
 * (dim 0). index.size(d) <= src.size(d) for every d and <= self.size(d)
 * off dim. Where several positions name one element the last one wins
 * (PyTorch leaves that order unspecified). */
tt_tensor *tt_scatter(const tt_tensor *self, int dim, const tt_tensor *index,
                      const tt_tensor *src);
/* tt::scatter.value: as tt_scatter with every src element `value`. */
tt_tensor *tt_scatter_value(const tt_tensor *self, int dim, const tt_tensor *index, double value);
/* tt::scatter_add: a copy of self with out[index[i][j]][j] += src[i][j],
 * added in increasing index position (deterministic). */
tt_tensor *tt_scatter_add(const tt_tensor *self, int dim, const tt_tensor *index,
                          const tt_tensor *src);
/* tt::scatter_reduce.two: reduce is "sum", "prod", "mean", "amax" or
 * "amin"; include_self false leaves self's values out of the elements
 * scattered into. Integer means round down, as PyTorch's. */
tt_tensor *tt_scatter_reduce(const tt_tensor *self, int dim, const tt_tensor *index,
                             const tt_tensor *src, const char *reduce, bool include_self);
/* tt::index_select: the slices of self along dim at index (0-d or 1-d,
 * i64 or i32), in index's order. */
tt_tensor *tt_index_select(const tt_tensor *self, int dim, const tt_tensor *index);
/* tt::index_copy: a copy of self with its slice index[i] along dim set to
 * source's slice i (index i64, 0-d or 1-d). tt_index_copy_ writes self in
 * place (the dispatcher bumps its version; a compiled graph keeps the
 * write). */
tt_tensor *tt_index_copy(const tt_tensor *self, int dim, const tt_tensor *index,
                         const tt_tensor *source);
tt_status tt_index_copy_(tt_tensor *self, int dim, const tt_tensor *index,
                         const tt_tensor *source);
/* tt::index_add: a copy of self with alpha * source's slice i added to its
 * slice index[i] along dim (i64 or i32 index), in index order. */
tt_tensor *tt_index_add(const tt_tensor *self, int dim, const tt_tensor *index,
                        const tt_tensor *source, double alpha);
/* tt::slice_scatter: a copy of self (self's layout) with src written into
 * its slice start:end:step along dim (end INT64_MAX: to the end). */
tt_tensor *tt_slice_scatter(const tt_tensor *self, const tt_tensor *src, int dim, int64_t start,
                            int64_t end, int64_t step);
/* tt::select_scatter: a copy of self with src written at index along dim. */
tt_tensor *tt_select_scatter(const tt_tensor *self, const tt_tensor *src, int dim,
                             int64_t index);
/* tt::diagonal: a view of the offset-th diagonal of dims dim1 and dim2
 * (above the main one for offset > 0), as a last dim. */
tt_tensor *tt_diagonal(const tt_tensor *self, int64_t offset, int dim1, int dim2);

#ifdef TT_CALLSITES
#define tt_gather(...) TT_CALLSITE_T(tt_gather, __VA_ARGS__)
#define tt_scatter(...) TT_CALLSITE_T(tt_scatter, __VA_ARGS__)
#define tt_scatter_value(...) TT_CALLSITE_T(tt_scatter_value, __VA_ARGS__)
#define tt_scatter_add(...) TT_CALLSITE_T(tt_scatter_add, __VA_ARGS__)
#define tt_scatter_reduce(...) TT_CALLSITE_T(tt_scatter_reduce, __VA_ARGS__)
#define tt_index_select(...) TT_CALLSITE_T(tt_index_select, __VA_ARGS__)
#define tt_index_copy(...) TT_CALLSITE_T(tt_index_copy, __VA_ARGS__)
#define tt_index_copy_(...) TT_CALLSITE_S(tt_index_copy_, __VA_ARGS__)
#define tt_index_add(...) TT_CALLSITE_T(tt_index_add, __VA_ARGS__)
#define tt_slice_scatter(...) TT_CALLSITE_T(tt_slice_scatter, __VA_ARGS__)
#define tt_select_scatter(...) TT_CALLSITE_T(tt_select_scatter, __VA_ARGS__)
#define tt_diagonal(...) TT_CALLSITE_T(tt_diagonal, __VA_ARGS__)
#endif

/* ------------------------------------------ advanced indexing, masks */

/* masked_fill: self with `value` where mask (bool; uint8 too, as PyTorch
 * 1.13) holds, in the broadcast shape of self and mask (contiguous). The
 * value is cast to self's dtype. _tensor: value is a 0-dim tensor. */
tt_tensor *tt_masked_fill(const tt_tensor *self, const tt_tensor *mask, double value);
tt_tensor *tt_masked_fill_tensor(const tt_tensor *self, const tt_tensor *mask,
                                 const tt_tensor *value);
/* index.Tensor: PyTorch's advanced indexing, self[indices[0], ...]: n
 * entries, NULL for None (a full slice); i64 index tensors broadcast
 * together; a bool (or uint8) index is its nonzero and covers as many
 * dims as it has. The broadcast index shape replaces the indexed dims
 * where they are adjacent, else it comes first. Indices may be negative;
 * out of range is an error. */
tt_tensor *tt_index(const tt_tensor *self, int n, tt_tensor *const *indices);
/* index_put: a copy of self with values (broadcast to self[indices]'s
 * shape, self's dtype) written at the indices; accumulate adds instead
 * (repeated indices add up, in a fixed order). Without accumulate, the
 * last of repeated indices wins. _: the same into self. */
tt_tensor *tt_index_put(const tt_tensor *self, int n, tt_tensor *const *indices,
                        const tt_tensor *values, bool accumulate);
tt_status tt_index_put_(tt_tensor *self, int n, tt_tensor *const *indices,
                        const tt_tensor *values, bool accumulate);
/* nonzero: [count, ndim] i64, the positions of self's non-zero elements
 * in row-major order. Traced, count is a data-dependent size (u0): code
 * that branches on it is a graph break, never a guess. */
tt_tensor *tt_nonzero(const tt_tensor *self);
/* masked_scatter: self (broadcast with mask) with source's elements, in
 * source's row-major order, written where mask holds; source must have
 * at least as many elements as mask has set, and self's dtype. */
tt_tensor *tt_masked_scatter(const tt_tensor *self, const tt_tensor *mask,
                             const tt_tensor *source);
/* masked_select: 1-d, self's elements (broadcast with mask) where mask
 * holds, in row-major order; traced, its size is data-dependent as
 * nonzero's. */
tt_tensor *tt_masked_select(const tt_tensor *self, const tt_tensor *mask);
/* tt::embedding with PyTorch's options (tt_embedding, in tt_ops.h, is
 * this with padding_idx -1 and scale_grad_by_freq false): the row
 * padding_idx gets no gradient (-1: none; a negative index is not
 * wrapped, as aten's); scale_grad_by_freq divides each row's gradient by
 * its index's count in indices. sparse=True has no wrapper: refused. */
tt_tensor *tt_embedding_ex(const tt_tensor *weight, const tt_tensor *indices,
                           int64_t padding_idx, bool scale_grad_by_freq);
/* tt::_embedding_bag (torch.nn.functional.embedding_bag): bags of rows,
 * bag b the indices from offsets[b] to offsets[b + 1] (the last to the end,
 * unless include_last_offset: then offsets' last entry ends it), reduced
 * by mode 0 sum (rows times per_sample_weights, [n], if given), 1 mean or
 * 2 max; with padding, indices equal to padding_idx are left out; an
 * empty bag is zeros. indices and offsets 1-d i64/i32. opts may be NULL
 * (sum, no padding). Returns [bags, dim]. */
typedef struct {
    int mode; /* 0 sum, 1 mean, 2 max */
    bool scale_grad_by_freq, include_last_offset;
    const tt_tensor *per_sample_weights; /* NULL: none */
    bool padding;        /* padding_idx names a padding row (else none) */
    int64_t padding_idx;
} tt_embedding_bag_opts;
tt_tensor *tt_embedding_bag(const tt_tensor *weight, const tt_tensor *indices,
                            const tt_tensor *offsets, const tt_embedding_bag_opts *opts);

#ifdef TT_CALLSITES
#define tt_masked_fill(...) TT_CALLSITE_T(tt_masked_fill, __VA_ARGS__)
#define tt_masked_fill_tensor(...) TT_CALLSITE_T(tt_masked_fill_tensor, __VA_ARGS__)
#define tt_index(...) TT_CALLSITE_T(tt_index, __VA_ARGS__)
#define tt_index_put(...) TT_CALLSITE_T(tt_index_put, __VA_ARGS__)
#define tt_index_put_(...) TT_CALLSITE_S(tt_index_put_, __VA_ARGS__)
#define tt_nonzero(...) TT_CALLSITE_T(tt_nonzero, __VA_ARGS__)
#define tt_masked_scatter(...) TT_CALLSITE_T(tt_masked_scatter, __VA_ARGS__)
#define tt_masked_select(...) TT_CALLSITE_T(tt_masked_select, __VA_ARGS__)
#define tt_embedding_ex(...) TT_CALLSITE_T(tt_embedding_ex, __VA_ARGS__)
#define tt_embedding_bag(...) TT_CALLSITE_T(tt_embedding_bag, __VA_ARGS__)
#endif

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
