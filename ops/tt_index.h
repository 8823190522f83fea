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

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif /* TT_INDEX_H */
