/* Internal to ops/: what the transformer families (embedding.c,
 * normalization.c, attention.c, optimizer.c) share: the fixed-order row
 * sums (CHUNKS, LN_LANES lanes) that keep results independent of the
 * thread count, and the argument checks and result plumbing of their
 * kernels and backward ops. Static inline: each file takes what it uses.
 * Not installed.
 *
 * Each forward kernel computes its output's metadata and, for real inputs
 * only, its values, so the fake kernel is the kernel itself. Each
 * derivative is one op of its own (embedding_dense_backward,
 * layer_norm_backward, scaled_dot_product_attention_backward): one node in
 * a traced backward and one pass over memory, instead of a chain of small
 * ops. The backward ops recompute what the forward does not keep (a row's
 * mean and 1/std, an attention row's softmax), so the forward returns one
 * tensor as PyTorch's functional forms do and nothing extra stays alive
 * between forward and backward.
 *
 * Sums whose order could depend on the thread count (a weight's gradient
 * summed over rows) are cut into a fixed number of chunks whose partials
 * are added in chunk order, so results are the same on 1 thread and on 64. */
#ifndef TT_TRANSFORMER_IMPL_H
#define TT_TRANSFORMER_IMPL_H

#include "ops_impl.h"

#include <math.h>
#include <string.h>

#define CHUNKS 64 /* fixed partial sums of a row reduction (see above) */

/* Row sums of layer_norm and attention are taken in LN_LANES double lanes
 * (element j in lane j % LN_LANES), added in lane order at the end:
 * independent chains that vectorize, in an order fixed by the row length
 * alone. */
#define LN_LANES 8

static inline double lanes_total(const double *l)
{
    double t = 0;
    for (int i = 0; i < LN_LANES; i++)
        t += l[i];
    return t;
}

/* A row's max and its dot product with another row (or its sum, b NULL)
 * in lanes, the sums in double. The max skips NaN as a plain loop does (a
 * NaN score still makes its row NaN through exp). */
#define ROW_LANES(T_)                                                          \
    static inline T_ row_max_##T_(const T_ *restrict r, int64_t n)             \
    {                                                                          \
        T_ l[LN_LANES];                                                        \
        for (int i = 0; i < LN_LANES; i++)                                     \
            l[i] = -INFINITY;                                                  \
        int64_t j = 0, body = n - n % LN_LANES;                                \
        for (; j < body; j += LN_LANES)                                        \
            for (int i = 0; i < LN_LANES; i++)                                 \
                l[i] = r[j + i] > l[i] ? r[j + i] : l[i];                      \
        for (; j < n; j++)                                                     \
            l[j - body] = r[j] > l[j - body] ? r[j] : l[j - body];             \
        T_ m = l[0];                                                           \
        for (int i = 1; i < LN_LANES; i++)                                     \
            m = l[i] > m ? l[i] : m;                                           \
        return m;                                                              \
    }                                                                          \
    static inline double row_dot_##T_(const T_ *restrict a, const T_ *restrict b, int64_t n) \
    {                                                                          \
        double l[LN_LANES] = {0};                                              \
        int64_t j = 0, body = n - n % LN_LANES;                                \
        for (; j < body; j += LN_LANES)                                        \
            for (int i = 0; i < LN_LANES; i++)                                 \
                l[i] += (double)a[j + i] * (b ? (double)b[j + i] : 1.0);       \
        for (; j < n; j++)                                                     \
            l[j - body] += (double)a[j] * (b ? (double)b[j] : 1.0);            \
        return lanes_total(l);                                                 \
    }
ROW_LANES(float)
ROW_LANES(double)

/* Mean and 1/std of one row, in double: the biased variance, as PyTorch
 * (layer norm's rows, group norm's groups). */
#define LN_STATS(T)                                                            \
    static inline void ln_stats_##T(const T *restrict x, int64_t n, double eps, double *mean, \
                                    double *rstd)                              \
    {                                                                          \
        double v[LN_LANES] = {0};                                              \
        double m = n ? row_dot_##T(x, NULL, n) / (double)n : 0;                \
        int64_t j = 0, body = n - n % LN_LANES;                                \
        for (; j < body; j += LN_LANES)                                        \
            for (int l = 0; l < LN_LANES; l++)                                 \
                v[l] += ((double)x[j + l] - m) * ((double)x[j + l] - m);       \
        for (; j < n; j++)                                                     \
            v[j - body] += ((double)x[j] - m) * ((double)x[j] - m);            \
        *mean = m;                                                             \
        *rstd = 1.0 / sqrt((n ? lanes_total(v) / (double)n : 0) + eps);        \
    }
LN_STATS(float)
LN_STATS(double)

static inline bool is_fake(const tt_tensor *t) { return t && t->storage->fake; }

/* A contiguous real copy of t (or t itself, retained), for kernels that
 * read rows. */
static inline tt_tensor *contig(const tt_tensor *t)
{
    return tt_is_contiguous(t) ? tt_retain((tt_tensor *)t) : tt_contiguous(t);
}

static inline tt_status want_float(const char *op, const char *arg, int argno, const tt_tensor *t)
{
    tt_dtype dt = tt_dtype_of(t);
    if (dt == TT_F32 || dt == TT_F64)
        return TT_OK;
    return tt_error(TT_EDTYPE, "%s: argument '%s' (#%d): expected f32 or f64, got %s", op, arg,
                    argno, tt_dtype_name(dt));
}

static inline tt_status want_same_dtype(const char *op, const char *arg, int argno,
                                 const tt_tensor *t, const tt_tensor *like)
{
    if (tt_dtype_of(t) == tt_dtype_of(like))
        return TT_OK;
    return tt_error(TT_EDTYPE, "%s: argument '%s' (#%d): expected %s like 'self', got %s", op,
                    arg, argno, tt_dtype_name(tt_dtype_of(like)), tt_dtype_name(tt_dtype_of(t)));
}

/* True when t has exactly the sizes (n, s), comparing symbols by guard. */
static inline bool sizes_are(const tt_tensor *t, int n, const tt_size *s)
{
    if (tt_ndim(t) != n)
        return false;
    for (int d = 0; d < n; d++)
        if (!tt_size_eq(tt_sizes(t)[d], s[d]))
            return false;
    return true;
}

static inline tt_status want_sizes(const char *op, const char *arg, int argno, const tt_tensor *t,
                            int n, const tt_size *s)
{
    if (sizes_are(t, n, s))
        return TT_OK;
    char a[128], b[128];
    return tt_error(TT_ESHAPE, "%s: argument '%s' (#%d): expected shape %s, got %s", op, arg,
                    argno, tt_size_list_str(n, s, false, a, sizeof a),
                    tt_shape_str(t, b, sizeof b));
}

/* Hands a backward kernel's three outputs (new references) to the frame,
 * or releases them when st is an error. */
static inline tt_status return3(tt_frame *f, tt_status st, tt_tensor **outs)
{
    for (int i = 0; i < 3; i++)
        if (!st) /* tt_return takes the reference, also when it fails */
            st = tt_return(f, i, outs[i]);
        else
            tt_release(outs[i]);
    return st;
}

/* The failure of a kernel that made some of its three outputs: releases
 * them (out[] NULL after) and returns the error set (TT_ENOMEM if an
 * allocation set none). */
static inline tt_status drop3(tt_tensor **out)
{
    for (int i = 0; i < 3; i++)
        out[i] = tt_release(out[i]);
    return tt_errcode() ? tt_errcode() : TT_ENOMEM;
}

/* A backward kernel's output_mask (argument i): the schema's bool[3]. */
static inline tt_status want_output_mask3(tt_frame *f, int i)
{
    const tt_value *mask = tt_frame_arg(f, i);
    if (mask && mask->kind == TT_V_BOOLS && mask->n == 3)
        return TT_OK;
    return tt_frame_fail(f, TT_EINVAL, "argument 'output_mask' (#%d): expected bool[3]", i + 1);
}

/* Stores a backward op's three results as the gradients of the call's
 * arguments args[i] (-1: none), dropping those no input needs. */
static inline void put_grads3(tt_autograd_ctx *ctx, tt_tensor **gi, tt_value *outs, const int *args)
{
    for (int i = 0; i < 3; i++) {
        int slot = args[i] < 0 ? -1 : tt_ctx_input_slot(ctx, args[i]);
        if (slot >= 0 && tt_ctx_needs_input_grad(ctx, slot))
            gi[slot] = outs[i].u.t;
        else
            tt_value_clear(&outs[i]);
    }
}

/* A typed wrapper's call of built-in op `id` through the dispatcher: its
 * n (at most 3) tensor results into out[], untouched on an error. */
static inline tt_status call_results(tt_builtin_id id, const tt_value *args, int nargs,
                                     tt_tensor **out, int n)
{
    tt_value outs[3] = {tt_v_none(), tt_v_none(), tt_v_none()};
    tt_status st = tt_op_call(tt__op(id), args, nargs, outs, n);
    for (int i = 0; i < n && !st; i++)
        out[i] = outs[i].u.t;
    return st;
}

/* The end of a typed wrapper over an op of n results of which it returns
 * the first: drops the others. A plain release is right inside a scope
 * and under a trace alike: the release of the last reference that is not
 * a graph's hold takes a tensor out of its scope (tt_release). */
static inline tt_tensor *first_result(tt_tensor **outs, int n)
{
    for (int i = 1; i < n; i++)
        outs[i] = tt_release(outs[i]);
    return outs[0];
}

#endif
