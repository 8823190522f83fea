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
    if (!tt_size_is_sym(num) && num < 0)
        return tt_error(TT_EINVAL, "%s: argument 'num_weights' (#3): expected >= 0, got %lld",
                        op, (long long)num);
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

/* ------------------------------------------------------------ embedding_bag */

/* An index of a 1-d i64/i32 tensor (contiguous). */
static inline int64_t ix_at(const tt_tensor *t, int64_t i)
{
    return tt_dtype_of(t) == TT_I64 ? ((const int64_t *)tt__ptr(t))[i]
                                    : ((const int32_t *)tt__ptr(t))[i];
}

static inline void ix_set(tt_tensor *t, int64_t i, int64_t v)
{
    if (tt_dtype_of(t) == TT_I64)
        ((int64_t *)tt__ptr(t))[i] = v;
    else
        ((int32_t *)tt__ptr(t))[i] = (int32_t)v;
}

static tt_status want_index_1d(const char *op, const char *arg, int argno, const tt_tensor *t)
{
    char s[128];
    if (tt_dtype_of(t) != TT_I64 && tt_dtype_of(t) != TT_I32)
        return tt_error(TT_EDTYPE, "%s: argument '%s' (#%d): expected i64 or i32, got %s", op, arg,
                        argno, tt_dtype_name(tt_dtype_of(t)));
    if (tt_ndim(t) != 1)
        return tt_error(TT_ESHAPE, "%s: argument '%s' (#%d): expected a 1-d tensor, got %s", op,
                        arg, argno, tt_shape_str(t, s, sizeof s));
    return TT_OK;
}

enum { BAG_SUM, BAG_MEAN, BAG_MAX };

/* tt::_embedding_bag(weight [num, dim], indices [n], offsets [b(+1)], ...)
 * -> (output [bags, dim], offset2bag [n], bag_size [bags], max_indices):
 * bag b is indices[offsets[b] : offsets[b + 1]] (the last runs to n unless
 * include_last_offset, when offsets' last entry is its end), reduced by
 * mode: 0 sum (each row times its per_sample_weight, if given), 1 mean, 2
 * max (per column; max_indices [bags, dim] the rows picked). Indices equal
 * to padding_idx are left out. offset2bag is each index's bag, bag_size
 * each bag's count of indices left in, and max_indices, for sum and mean,
 * bag_size again (PyTorch 1.13's CPU kernel gives an empty offset2bag and
 * zero bag_size for sum, an implementation detail, not followed). */
static tt_status embedding_bag_kernel(tt_frame *f)
{
    const char *op = tt__op_label(TT_OP__EMBEDDING_BAG);
    char s[128];
    tt_tensor *w, *idx, *offs, *psw = NULL;
    bool by_freq, sparse, last;
    int64_t mode, pad;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &w)) || (st = tt_arg_tensor(f, 1, &idx)) ||
        (st = tt_arg_tensor(f, 2, &offs)) || (st = tt_arg_bool(f, 3, &by_freq)) ||
        (st = tt_arg_int(f, 4, &mode)) || (st = tt_arg_bool(f, 5, &sparse)) ||
        (st = tt_arg_tensor(f, 6, &psw)) || (st = tt_arg_bool(f, 7, &last)) ||
        (st = tt_arg_int(f, 8, &pad)))
        return st;
    (void)by_freq; /* the gradient's business */
    if (tt_ndim(w) != 2)
        return tt_error(TT_ESHAPE, "%s: argument 'weight' (#1): expected a 2-d [num, dim] table, "
                                   "got %s", op, tt_shape_str(w, s, sizeof s));
    if ((st = want_float(op, "weight", 1, w)) || (st = want_index_1d(op, "indices", 2, idx)) ||
        (st = want_index_1d(op, "offsets", 3, offs)))
        return st;
    if (mode < BAG_SUM || mode > BAG_MAX)
        return tt_error(TT_EINVAL, "%s: argument 'mode' (#5): expected 0 (sum), 1 (mean) or 2 "
                                   "(max), got %lld", op, (long long)mode);
    if (sparse)
        return tt_error(TT_EINVAL, "%s: argument 'sparse' (#6): sparse gradients are not "
                                   "supported (tt has no sparse tensors); pass sparse=False", op);
    if (psw && mode != BAG_SUM)
        return tt_error(TT_EINVAL, "%s: argument 'per_sample_weights' (#7): only supported with "
                                   "mode 0 (sum), got mode %lld", op, (long long)mode);
    if (psw && (tt_dtype_of(psw) != tt_dtype_of(w) || tt_ndim(psw) != 1 ||
                !tt_size_eq(tt_sizes(psw)[0], tt_sizes(idx)[0])))
        return tt_error(TT_ESHAPE, "%s: argument 'per_sample_weights' (#7): expected %s of the "
                                   "indices' shape, got %s %s", op, tt_dtype_name(tt_dtype_of(w)),
                        tt_dtype_name(tt_dtype_of(psw)), tt_shape_str(psw, s, sizeof s));
    tt_size noff = tt_sizes(offs)[0], n = tt_sizes(idx)[0], dim = tt_sizes(w)[1];
    if (last && tt_size_eq(noff, 0))
        return tt_error(TT_ESHAPE, "%s: argument 'offsets' (#3): include_last_offset needs at "
                                   "least one offset", op);
    tt_size bags = last ? tt_sym_sub(noff, 1) : noff;
    bool fake = tt_frame_is_fake(f) || is_fake(w) || is_fake(idx) || is_fake(offs) || is_fake(psw);
    tt_tensor *out = tt__ops_new(fake, 2, (const tt_size[]){bags, dim}, NULL, tt_dtype_of(w));
    tt_dtype it = tt_dtype_of(idx); /* PyTorch's: the indices' dtype */
    tt_tensor *o2b = tt__ops_new(fake, 1, &n, NULL, it);
    tt_tensor *bsz = tt__ops_new(fake, 1, &bags, NULL, it);
    tt_tensor *mi = mode == BAG_MAX ? tt__ops_new(fake, 2, (const tt_size[]){bags, dim}, NULL, it)
                                    : tt__ops_new(fake, 1, &bags, NULL, it);
    tt_tensor *ic = NULL, *oc = NULL, *wc = NULL, *pc = NULL;
    if (!out || !o2b || !bsz || !mi) {
        st = tt_errcode();
        goto done;
    }
    if (fake)
        goto done;
    ic = contig(idx), oc = contig(offs), wc = contig(w), pc = psw ? contig(psw) : NULL;
    if (!ic || !oc || !wc || (psw && !pc)) {
        st = tt_errcode();
        goto done;
    }
    int64_t num = tt_sizes(w)[0];
    /* Offsets and indices checked before anything is computed. */
    for (int64_t b = 0; b < noff; b++) {
        int64_t v = ix_at(oc, b), prev = b ? ix_at(oc, b - 1) : 0;
        if (b == 0 && v != 0) {
            st = tt_error(TT_EINVAL, "%s: argument 'offsets' (#3): offsets[0] has to be 0, got "
                                     "%lld", op, (long long)v);
            goto done;
        }
        if (v < prev || v > n) {
            st = tt_error(TT_EINVAL, "%s: argument 'offsets' (#3): offsets must not decrease nor "
                                     "pass the %lld indices, got offsets[%lld] = %lld", op,
                          (long long)n, (long long)b, (long long)v);
            goto done;
        }
    }
    /* PyTorch 1.13 reads past the end (and corrupts its heap) when
     * include_last_offset's last offset is not the number of indices. */
    if (last && ix_at(oc, noff - 1) != n) {
        st = tt_error(TT_EINVAL, "%s: argument 'offsets' (#3): with include_last_offset the last "
                                 "offset ends the last bag and must be the number of indices, "
                                 "%lld, got %lld", op, (long long)n,
                      (long long)ix_at(oc, noff - 1));
        goto done;
    }
    for (int64_t i = 0; i < n; i++) {
        int64_t k = ix_at(ic, i);
        if (k < 0 || k >= num) {
            st = tt_error(TT_EINVAL, "%s: argument 'indices' (#2): index %lld is out of range for "
                                     "a table of %lld rows", op, (long long)k, (long long)num);
            goto done;
        }
    }
    bool f64 = tt_dtype_of(w) == TT_F64;
    memset(tt__ptr(out), 0, (size_t)(bags * dim) * tt_dtype_size(tt_dtype_of(w)));
    if (mode == BAG_MAX)
        memset(tt__ptr(mi), 0, tt_dtype_size(it) * (size_t)(bags * dim));
    for (int64_t b = 0; b < bags; b++) {
        int64_t lo = ix_at(oc, b), hi = b + 1 < noff ? ix_at(oc, b + 1) : n, cnt = 0;
        char *orow = tt__ptr(out) + (size_t)(b * dim) * tt_dtype_size(tt_dtype_of(w));
        for (int64_t i = lo; i < hi; i++) {
            ix_set(o2b, i, b);
            int64_t k = ix_at(ic, i);
            if (k == pad)
                continue;
            for (int64_t c = 0; c < dim; c++) {
                double x = f64 ? ((const double *)tt__ptr(wc))[k * dim + c]
                               : ((const float *)tt__ptr(wc))[k * dim + c];
                double o = f64 ? ((double *)orow)[c] : ((float *)orow)[c];
                if (mode == BAG_MAX) {
                    if (cnt == 0 || x > o) {
                        o = x;
                        ix_set(mi, b * dim + c, k);
                    }
                } else {
                    o += pc ? x * (f64 ? ((const double *)tt__ptr(pc))[i]
                                       : ((const float *)tt__ptr(pc))[i])
                            : x;
                }
                if (f64)
                    ((double *)orow)[c] = o;
                else
                    ((float *)orow)[c] = (float)o;
            }
            cnt++;
        }
        if (mode == BAG_MEAN && cnt > 0)
            for (int64_t c = 0; c < dim; c++) {
                if (f64)
                    ((double *)orow)[c] /= (double)cnt;
                else
                    ((float *)orow)[c] /= (float)cnt;
            }
        ix_set(bsz, b, cnt);
        if (mode != BAG_MAX)
            ix_set(mi, b, cnt);
    }
done:
    tt_release(ic);
    tt_release(oc);
    tt_release(wc);
    tt_release(pc);
    if (st) {
        tt_release(out);
        tt_release(o2b);
        tt_release(bsz);
        tt_release(mi);
        return st;
    }
    tt_return(f, 0, out);
    tt_return(f, 1, o2b);
    tt_return(f, 2, bsz);
    return tt_return(f, 3, mi);
}

/* tt::_embedding_bag_dense_backward: the weight's gradient. Each index's
 * row gets its bag's gradient row, times its per_sample_weight (sum), over
 * its bag's size (mean), over its count (scale_grad_by_freq); in max mode
 * each column goes to the row max_indices picked. padding_idx gets none.
 * Sequential over the indices: repeated rows add up in a fixed order. */
static tt_status embedding_bag_backward_kernel(tt_frame *f)
{
    const char *op = tt__op_label(TT_OP__EMBEDDING_BAG_DENSE_BACKWARD);
    tt_tensor *g, *idx, *o2b, *bsz, *mi, *psw = NULL;
    int64_t num, mode, pad;
    bool by_freq;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &g)) || (st = tt_arg_tensor(f, 1, &idx)) ||
        (st = tt_arg_tensor(f, 2, &o2b)) || (st = tt_arg_tensor(f, 3, &bsz)) ||
        (st = tt_arg_tensor(f, 4, &mi)) || (st = tt_arg_int(f, 5, &num)) ||
        (st = tt_arg_bool(f, 6, &by_freq)) || (st = tt_arg_int(f, 7, &mode)) ||
        (st = tt_arg_tensor(f, 8, &psw)) || (st = tt_arg_int(f, 9, &pad)) ||
        (st = want_float(op, "grad", 1, g)))
        return st;
    char sh[128];
    if (tt_ndim(g) != 2)
        return tt_error(TT_ESHAPE, "%s: argument 'grad' (#1): expected [bags, dim], got %s", op,
                        tt_shape_str(g, sh, sizeof sh));
    if (!tt_size_is_sym(num) && num < 0)
        return tt_error(TT_EINVAL, "%s: argument 'num_weights' (#6): expected >= 0, got %lld",
                        op, (long long)num);
    if (mode < BAG_SUM || mode > BAG_MAX)
        return tt_error(TT_EINVAL, "%s: argument 'mode' (#8): expected 0 (sum), 1 (mean) or 2 "
                                   "(max), got %lld", op, (long long)mode);
    if ((st = want_index_1d(op, "indices", 2, idx)) ||
        (st = want_index_1d(op, "offset2bag", 3, o2b)) ||
        (st = want_index_1d(op, "bag_size", 4, bsz)))
        return st;
    tt_size dim = tt_sizes(g)[1];
    bool fake = tt_frame_is_fake(f) || is_fake(g) || is_fake(idx);
    tt_tensor *out = tt__ops_new(fake, 2, (const tt_size[]){num, dim}, NULL, tt_dtype_of(g));
    if (!out || fake)
        return out ? tt_return(f, 0, out) : tt_errcode();
    tt_tensor *gc = contig(g), *ic = contig(idx), *oc = contig(o2b), *bc = contig(bsz),
              *mc = contig(mi), *pc = psw ? contig(psw) : NULL;
    int64_t *counts = NULL;
    int64_t n = tt_numel(idx);
    if (!gc || !ic || !oc || !bc || !mc || (psw && !pc)) {
        st = tt_errcode();
        goto done;
    }
    if (by_freq && !(counts = tt__calloc((size_t)(num > 0 ? num : 1), sizeof *counts))) {
        st = tt_error(TT_ENOMEM, "%s: out of memory for %lld counts", op, (long long)num);
        goto done;
    }
    /* The auxiliary tensors are _embedding_bag's; checked anyway, so a
     * hand-made call cannot read or write out of bounds. */
    int64_t bags = tt_sizes(g)[0];
    if (tt_numel(oc) != n || tt_numel(bc) != bags ||
        (mode == BAG_MAX ? tt_ndim(mc) != 2 || tt_numel(mc) != bags * dim
                         : tt_dtype_of(mc) != TT_I64 && tt_dtype_of(mc) != TT_I32) ||
        (tt_dtype_of(mc) != TT_I64 && tt_dtype_of(mc) != TT_I32) ||
        (pc && (tt_numel(pc) != n || tt_dtype_of(pc) != tt_dtype_of(g)))) {
        st = tt_error(TT_ESHAPE, "%s: offset2bag, bag_size, maximum_indices or "
                                 "per_sample_weights do not match the indices and grad", op);
        goto done;
    }
    for (int64_t i = 0; i < n; i++) {
        int64_t k = ix_at(ic, i), b = ix_at(oc, i);
        if (k < 0 || k >= num) {
            st = tt_error(TT_EINVAL, "%s: argument 'indices' (#2): index %lld is out of range "
                                     "for %lld rows", op, (long long)k, (long long)num);
            goto done;
        }
        if (b < 0 || b >= bags) {
            st = tt_error(TT_EINVAL, "%s: argument 'offset2bag' (#3): bag %lld is out of range "
                                     "for %lld bags", op, (long long)b, (long long)bags);
            goto done;
        }
        if (counts)
            counts[k]++;
    }
    for (int64_t j = 0; mode == BAG_MAX && j < bags * dim; j++)
        if (ix_at(mc, j) < 0 || ix_at(mc, j) >= num) {
            st = tt_error(TT_EINVAL, "%s: argument 'maximum_indices' (#5): row %lld is out of "
                                     "range for %lld rows", op, (long long)ix_at(mc, j),
                          (long long)num);
            goto done;
        }
    bool f64 = tt_dtype_of(g) == TT_F64;
    memset(tt__ptr(out), 0, (size_t)(num * dim) * tt_dtype_size(tt_dtype_of(g)));
#define GV(t, j) (f64 ? ((const double *)tt__ptr(t))[j] : (double)((const float *)tt__ptr(t))[j])
#define ADD(j, v)                                                                              \
    do {                                                                                       \
        if (f64)                                                                               \
            ((double *)tt__ptr(out))[j] += (v);                                                \
        else                                                                                   \
            ((float *)tt__ptr(out))[j] += (float)(v);                                          \
    } while (0)
    if (mode == BAG_MAX) {
        int64_t bags = tt_numel(bc);
        for (int64_t b = 0; b < bags; b++) {
            if (ix_at(bc, b) == 0)
                continue; /* an empty bag picked no row */
            for (int64_t c = 0; c < dim; c++)
                ADD(ix_at(mc, b * dim + c) * dim + c, GV(gc, b * dim + c));
        }
    } else {
        for (int64_t i = 0; i < n; i++) {
            int64_t k = ix_at(ic, i), b = ix_at(oc, i);
            if (k == pad)
                continue;
            double sc = pc ? GV(pc, i) : 1.0;
            if (mode == BAG_MEAN)
                sc /= (double)ix_at(bc, b);
            if (counts)
                sc /= (double)counts[k];
            for (int64_t c = 0; c < dim; c++)
                ADD(k * dim + c, GV(gc, b * dim + c) * sc);
        }
    }
#undef GV
#undef ADD
done:
    tt__free(counts);
    tt_release(gc);
    tt_release(ic);
    tt_release(oc);
    tt_release(bc);
    tt_release(mc);
    tt_release(pc);
    if (st) {
        tt_release(out);
        return st;
    }
    return tt_return(f, 0, out);
}

/* tt::_embedding_bag_per_sample_weights_backward: sum mode's gradient of
 * per_sample_weights, index i's row dotted with its bag's gradient (0 for
 * padding_idx). */
static tt_status embedding_bag_psw_backward_kernel(tt_frame *f)
{
    const char *op = tt__op_label(TT_OP__EMBEDDING_BAG_PER_SAMPLE_WEIGHTS_BACKWARD);
    tt_tensor *g, *w, *idx, *offs, *o2b;
    int64_t mode, pad;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &g)) || (st = tt_arg_tensor(f, 1, &w)) ||
        (st = tt_arg_tensor(f, 2, &idx)) || (st = tt_arg_tensor(f, 3, &offs)) ||
        (st = tt_arg_tensor(f, 4, &o2b)) || (st = tt_arg_int(f, 5, &mode)) ||
        (st = tt_arg_int(f, 6, &pad)) || (st = want_float(op, "grad", 1, g)))
        return st;
    (void)offs;
    if (mode != BAG_SUM)
        return tt_error(TT_EINVAL, "%s: argument 'mode' (#6): per_sample_weights have a "
                                   "gradient in mode 0 (sum) only, got %lld", op, (long long)mode);
    char sh[128];
    if ((st = want_index_1d(op, "indices", 3, idx)) ||
        (st = want_index_1d(op, "offset2bag", 5, o2b)) || (st = want_float(op, "weight", 2, w)))
        return st;
    if (tt_ndim(g) != 2 || tt_ndim(w) != 2 || tt_dtype_of(w) != tt_dtype_of(g) ||
        !tt_size_eq(tt_sizes(g)[1], tt_sizes(w)[1]) ||
        !tt_size_eq(tt_sizes(o2b)[0], tt_sizes(idx)[0]))
        return tt_error(TT_ESHAPE, "%s: argument 'grad' (#1): expected [bags, dim] of weight's "
                                   "dim and dtype, offset2bag one per index; got grad %s",
                        op, tt_shape_str(g, sh, sizeof sh));
    tt_size n = tt_sizes(idx)[0];
    bool fake = tt_frame_is_fake(f) || is_fake(g) || is_fake(w) || is_fake(idx);
    tt_tensor *out = tt__ops_new(fake, 1, &n, NULL, tt_dtype_of(g));
    if (!out || fake)
        return out ? tt_return(f, 0, out) : tt_errcode();
    tt_tensor *gc = contig(g), *wc = contig(w), *ic = contig(idx), *oc = contig(o2b);
    if (!gc || !wc || !ic || !oc) {
        st = tt_errcode();
    } else {
        int64_t dim = tt_sizes(w)[1], bags = tt_sizes(g)[0], num = tt_sizes(w)[0];
        bool f64 = tt_dtype_of(g) == TT_F64;
        for (int64_t i = 0; i < n && !st; i++)
            if (ix_at(ic, i) < 0 || ix_at(ic, i) >= num || ix_at(oc, i) < 0 ||
                ix_at(oc, i) >= bags)
                st = tt_error(TT_EINVAL, "%s: index %lld: row %lld or bag %lld out of range", op,
                              (long long)i, (long long)ix_at(ic, i), (long long)ix_at(oc, i));
        for (int64_t i = 0; i < n && !st; i++) {
            int64_t k = ix_at(ic, i), b = ix_at(oc, i);
            double acc = 0;
            if (k != pad)
                for (int64_t c = 0; c < dim; c++)
                    acc += f64 ? ((const double *)tt__ptr(gc))[b * dim + c] *
                                     ((const double *)tt__ptr(wc))[k * dim + c]
                               : (double)((const float *)tt__ptr(gc))[b * dim + c] *
                                     (double)((const float *)tt__ptr(wc))[k * dim + c];
            if (f64)
                ((double *)tt__ptr(out))[i] = acc;
            else
                ((float *)tt__ptr(out))[i] = (float)acc;
        }
    }
    tt_release(gc);
    tt_release(wc);
    tt_release(ic);
    tt_release(oc);
    if (st) {
        tt_release(out);
        return st;
    }
    return tt_return(f, 0, out);
}

/* Saved: indices, offsets, offset2bag, bag_size, max_indices,
 * per_sample_weights (or NULL), weight; and the options. */
static tt_status setup_embedding_bag(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                                     const tt_value *out, int nout)
{
    (void)nin, (void)nout;
    tt_tensor *psw = in[6].kind == TT_V_TENSOR ? in[6].u.t : NULL;
    tt_status st = tt_ctx_save_for_backward(
        ctx, 7, (tt_tensor *[]){in[1].u.t, in[2].u.t, out[1].u.t, out[2].u.t, out[3].u.t, psw,
                                in[0].u.t});
    if (!st)
        st = tt_ctx_save_int(ctx, "num_weights", tt_sizes(in[0].u.t)[0]);
    if (!st)
        st = tt_ctx_save_int(ctx, "scale_grad_by_freq", in[3].u.b);
    if (!st)
        st = tt_ctx_save_int(ctx, "mode", in[4].u.i);
    return st ? st : tt_ctx_save_int(ctx, "padding_idx", in[8].u.i);
}

static tt_status embedding_bag_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                        tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    int64_t num, by_freq, mode, pad;
    tt_status st;
    if ((st = tt_ctx_get_int(ctx, "num_weights", &num)) ||
        (st = tt_ctx_get_int(ctx, "scale_grad_by_freq", &by_freq)) ||
        (st = tt_ctx_get_int(ctx, "mode", &mode)) ||
        (st = tt_ctx_get_int(ctx, "padding_idx", &pad)))
        return st;
    tt_tensor *psw = tt_ctx_saved(ctx, 5);
    if (tt_ctx_needs_input_grad(ctx, 0))
        st = tt__put_grad(ctx, gi, 0,
                          tt__call_op(TT_OP__EMBEDDING_BAG_DENSE_BACKWARD,
                                      TT_ARGS(tt_v_tensor(g[0]), tt_v_tensor(tt_ctx_saved(ctx, 0)),
                                              tt_v_tensor(tt_ctx_saved(ctx, 2)),
                                              tt_v_tensor(tt_ctx_saved(ctx, 3)),
                                              tt_v_tensor(tt_ctx_saved(ctx, 4)), tt_v_int(num),
                                              tt_v_bool(by_freq != 0), tt_v_int(mode),
                                              psw ? tt_v_tensor(psw) : tt_v_none(),
                                              tt_v_int(pad))));
    int pslot = tt_ctx_input_slot(ctx, 6);
    if (!st && psw && tt_ctx_needs_input_grad(ctx, pslot))
        st = tt__put_grad(ctx, gi, pslot,
                          tt__call_op(TT_OP__EMBEDDING_BAG_PER_SAMPLE_WEIGHTS_BACKWARD,
                                      TT_ARGS(tt_v_tensor(g[0]), tt_v_tensor(tt_ctx_saved(ctx, 6)),
                                              tt_v_tensor(tt_ctx_saved(ctx, 0)),
                                              tt_v_tensor(tt_ctx_saved(ctx, 1)),
                                              tt_v_tensor(tt_ctx_saved(ctx, 2)), tt_v_int(mode),
                                              tt_v_int(pad))));
    return st;
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

tt_tensor *tt_embedding_bag(const tt_tensor *weight, const tt_tensor *indices,
                            const tt_tensor *offsets, const tt_embedding_bag_opts *opts)
{
    tt_embedding_bag_opts o = {0};
    if (opts)
        o = *opts;
    if (!o.padding)
        o.padding_idx = -1;
    tt_value outs[4] = {tt_v_none(), tt_v_none(), tt_v_none(), tt_v_none()};
    if (tt_op_call(tt__op(TT_OP__EMBEDDING_BAG),
                   TT_ARGS(tt_v_tensor(weight), tt_v_tensor(indices), tt_v_tensor(offsets),
                           tt_v_bool(o.scale_grad_by_freq), tt_v_int(o.mode), tt_v_bool(false),
                           o.per_sample_weights ? tt_v_tensor(o.per_sample_weights) : tt_v_none(),
                           tt_v_bool(o.include_last_offset), tt_v_int(o.padding_idx)),
                   outs, 4))
        return NULL;
    for (int k = 1; k < 4; k++)
        tt_release(outs[k].u.t);
    return outs[0].u.t;
}
