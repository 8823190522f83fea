/* Built-in ops: embedding and its derivative, embedding_dense_backward
 * (transformer_impl.h says how these kernels are built). */
#include "transformer_impl.h"
#include "tt_index.h"

/* tt::embedding(weight [num, dim], indices [...] i64/i32, padding_idx,
 * scale_grad_by_freq, sparse) -> [..., dim]: row indices[...] of weight,
 * in a new contiguous tensor. padding_idx and scale_grad_by_freq change
 * only the gradient (the row padding_idx gets none; each row's gradient
 * is divided by its index's count in the batch); sparse gradients are
 * refused (tt has no sparse tensors). */
static tt_tensor *embedding(const tt_tensor *w, const tt_tensor *idx, bool sparse)
{
    const char *op = tt__op_label(TT_OP_EMBEDDING);
    char s[128];
    if (sparse) {
        tt_error(TT_EINVAL, "%s: argument 'sparse' (#5): sparse gradients are not supported "
                            "(tt has no sparse tensors); pass sparse=False", op);
        return NULL;
    }
    if (tt_ndim(w) != 2) {
        tt_error(TT_ESHAPE, "%s: argument 'weight' (#1): expected a 2-d [num, dim] table, "
                            "got %s", op, tt_shape_str(w, s, sizeof s));
        return NULL;
    }
    tt_dtype it = tt_dtype_of(idx);
    if (it != TT_I64 && it != TT_I32) {
        tt_error(TT_EDTYPE, "%s: argument 'indices' (#2): expected i64 or i32 indices, got %s",
                 op, tt_dtype_name(it));
        return NULL;
    }
    if (tt_ndim(idx) + 1 > TT_MAX_DIMS) {
        tt_error(TT_ESHAPE, "%s: argument 'indices' (#2): at most %d dims, got %d", op,
                 TT_MAX_DIMS - 1, tt_ndim(idx));
        return NULL;
    }
    tt_size sizes[TT_MAX_DIMS];
    int nd = tt_ndim(idx);
    memcpy(sizes, tt_sizes(idx), sizeof(tt_size) * (size_t)nd);
    sizes[nd] = tt_sizes(w)[1];
    bool fake = is_fake(w) || is_fake(idx);
    tt_tensor *out = tt__ops_new(fake, nd + 1, sizes, NULL, tt_dtype_of(w));
    if (!out || fake)
        return out;
    tt_tensor *ic = contig(idx), *wc = contig(w);
    if (!ic || !wc)
        goto fail;
    int64_t n = tt_numel(idx), num = tt_sizes(w)[0], dim = tt_sizes(w)[1];
    size_t row = (size_t)dim * tt_dtype_size(tt_dtype_of(w));
    const char *ip = tt__ptr(ic), *wp = tt__ptr(wc);
    char *op_ = tt__ptr(out);
    for (int64_t i = 0; i < n; i++) {
        int64_t k = it == TT_I64 ? ((const int64_t *)ip)[i] : ((const int32_t *)ip)[i];
        if (k < 0 || k >= num) {
            tt_error(TT_EINVAL, "%s: argument 'indices' (#2): index %lld is out of range "
                                "for a table of %lld rows", op, (long long)k, (long long)num);
            goto fail;
        }
        memcpy(op_ + (size_t)i * row, wp + (size_t)k * row, row);
    }
    tt_release(ic);
    tt_release(wc);
    return out;
fail:
    tt_release(ic);
    tt_release(wc);
    return tt_release(out);
}

static tt_status embedding_kernel(tt_frame *f)
{
    tt_tensor *w, *idx;
    bool sparse;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &w)) || (st = tt_arg_tensor(f, 1, &idx)) ||
        (st = tt_arg_bool(f, 4, &sparse)))
        return st;
    tt_tensor *r = embedding(w, idx, sparse);
    return r ? tt_return(f, 0, r) : tt_errcode();
}

typedef struct {
    const char *g, *ip;
    char *out;
    int64_t n, dim, padding_idx;
    const int64_t *counts; /* per row, for scale_grad_by_freq; else NULL */
    bool i64, f64;
} emb_bw;

/* Columns [b, e) of every row: each task owns its columns and visits the
 * indices in order, so repeated indices accumulate in the same order on
 * any thread count. */
static void emb_bw_task(int64_t b, int64_t e, void *vp)
{
    const emb_bw *p = vp;
    for (int64_t i = 0; i < p->n; i++) {
        int64_t k = p->i64 ? ((const int64_t *)p->ip)[i] : ((const int32_t *)p->ip)[i];
        if (k == p->padding_idx)
            continue; /* PyTorch compares as given: -1 matches no row */
        if (p->f64) {
            double *o = (double *)p->out + k * p->dim;
            const double *g = (const double *)p->g + i * p->dim;
            if (p->counts) {
                double sc = 1.0 / (double)p->counts[k];
                for (int64_t c = b; c < e; c++)
                    o[c] += g[c] * sc;
            } else {
                for (int64_t c = b; c < e; c++)
                    o[c] += g[c];
            }
        } else {
            float *o = (float *)p->out + k * p->dim;
            const float *g = (const float *)p->g + i * p->dim;
            if (p->counts) {
                float sc = (float)(1.0 / (double)p->counts[k]);
                for (int64_t c = b; c < e; c++)
                    o[c] += g[c] * sc;
            } else {
                for (int64_t c = b; c < e; c++)
                    o[c] += g[c];
            }
        }
    }
}

/* tt::embedding_dense_backward(grad_output [..., dim], indices [...],
 * num_weights, padding_idx, scale_grad_by_freq) -> [num_weights, dim]:
 * row k is the sum of the gradient rows whose index is k (divided by k's
 * count with scale_grad_by_freq), none for padding_idx. An index out of
 * range is an error (the forward checked its own). */
static tt_status embedding_backward_kernel(tt_frame *f)
{
    tt_tensor *g, *idx;
    int64_t num, padding_idx;
    bool by_freq;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &g)) || (st = tt_arg_tensor(f, 1, &idx)) ||
        (st = tt_arg_int(f, 2, &num)) || (st = tt_arg_int(f, 3, &padding_idx)) ||
        (st = tt_arg_bool(f, 4, &by_freq)))
        return st;
    const char *op = tt__op_label(TT_OP_EMBEDDING_DENSE_BACKWARD);
    if ((st = want_float(op, "grad_output", 1, g)))
        return st;
    if (tt_ndim(g) != tt_ndim(idx) + 1)
        return tt_error(TT_ESHAPE, "%s: argument 'grad_output' (#1): expected %d dims (the "
                                   "indices' and one more), got %d", op, tt_ndim(idx) + 1,
                        tt_ndim(g));
    tt_size sizes[2] = {num, tt_sizes(g)[tt_ndim(g) - 1]};
    bool fake = tt_frame_is_fake(f) || is_fake(g) || is_fake(idx);
    tt_tensor *out = tt__ops_new(fake, 2, sizes, NULL, tt_dtype_of(g));
    if (!out || fake)
        return out ? tt_return(f, 0, out) : tt_errcode();
    tt_tensor *gc = contig(g), *ic = contig(idx);
    int64_t *counts = NULL;
    if (!gc || !ic) {
        st = tt_errcode();
        goto out;
    }
    emb_bw p = {.g = tt__ptr(gc), .ip = tt__ptr(ic), .out = tt__ptr(out), .n = tt_numel(idx),
                .dim = sizes[1], .padding_idx = padding_idx, .i64 = tt_dtype_of(idx) == TT_I64,
                .f64 = tt_dtype_of(g) == TT_F64};
    /* Every index in range before anything is summed (and counted). */
    if (by_freq && !(counts = tt__calloc((size_t)(num > 0 ? num : 1), sizeof *counts))) {
        st = tt_error(TT_ENOMEM, "%s: out of memory for %lld counts", op, (long long)num);
        goto out;
    }
    for (int64_t i = 0; i < p.n; i++) {
        int64_t k = p.i64 ? ((const int64_t *)p.ip)[i] : ((const int32_t *)p.ip)[i];
        if (k == padding_idx)
            continue;
        if (k < 0 || k >= num) {
            st = tt_error(TT_EINVAL, "%s: argument 'indices' (#2): index %lld is out of range "
                                     "for %lld rows", op, (long long)k, (long long)num);
            goto out;
        }
        if (counts)
            counts[k]++;
    }
    p.counts = counts;
    memset(tt__ptr(out), 0, (size_t)tt_numel(out) * tt_dtype_size(tt_dtype_of(out)));
    tt_parallel_for(p.dim, p.n > 0 ? 16 : p.dim + 1, emb_bw_task, &p);
out:
    tt__free(counts);
    tt_release(gc);
    tt_release(ic);
    if (st) {
        tt_release(out);
        return st;
    }
    return tt_return(f, 0, out);
}

static tt_status setup_embedding(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                                 const tt_value *out, int nout)
{
    (void)nin, (void)out, (void)nout;
    tt_status st = tt_ctx_save_for_backward(ctx, 1, (tt_tensor *[]){in[1].u.t});
    if (!st)
        st = tt_ctx_save_int(ctx, "padding_idx", in[2].u.i);
    if (!st)
        st = tt_ctx_save_int(ctx, "scale_grad_by_freq", in[3].u.b);
    return st ? st : tt_ctx_save_int(ctx, "num_weights", tt_sizes(in[0].u.t)[0]);
}

static tt_status embedding_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                    tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    int64_t num, padding_idx, by_freq;
    tt_status st = tt_ctx_get_int(ctx, "num_weights", &num);
    if (!st)
        st = tt_ctx_get_int(ctx, "padding_idx", &padding_idx);
    if (!st)
        st = tt_ctx_get_int(ctx, "scale_grad_by_freq", &by_freq);
    if (st || !tt_ctx_needs_input_grad(ctx, 0))
        return st;
    return tt__put_grad(ctx, gi, 0,
                        tt__call_op(TT_OP_EMBEDDING_DENSE_BACKWARD,
                                    TT_ARGS(tt_v_tensor(g[0]), tt_v_tensor(tt_ctx_saved(ctx, 0)),
                                            tt_v_int(num), tt_v_int(padding_idx),
                                            tt_v_bool(by_freq != 0))));
}

#undef TT__FAMILY_EMBED
#define TT__FAMILY_EMBED TT__ROW
static const tt__builtin_row rows[] = {TT__FAMILY_ROWS};

tt_status tt__register_embedding(tt_library *lib)
{
    return TT__DEFINE_ROWS(lib, rows);
}

/* ---------------------------------------------------------- typed wrappers */

tt_tensor *tt_embedding(const tt_tensor *weight, const tt_tensor *indices)
{
    return tt_embedding_ex(weight, indices, -1, false);
}

tt_tensor *tt_embedding_ex(const tt_tensor *weight, const tt_tensor *indices,
                           int64_t padding_idx, bool scale_grad_by_freq)
{
    return tt__call_op(TT_OP_EMBEDDING,
                       TT_ARGS(tt_v_tensor(weight), tt_v_tensor(indices), tt_v_int(padding_idx),
                               tt_v_bool(scale_grad_by_freq), tt_v_bool(false)));
}
