/* Pairwise distances: Core ATen's _cdist_forward and _pdist_forward, with
 * their backward ops, as PyTorch 1.13 defines them (Distance.cpp and
 * cpu/DistanceOpsKernel.cpp).
 *
 * x1 [B..., P, M] and x2 [B..., R, M] (batch dims broadcast) give
 * [B..., P, R]; self [N, M] gives the N(N-1)/2 distances of its rows i < j,
 * in order. The p-norm of a row difference d: p = 0 counts the d_k != 0,
 * p = inf takes max |d_k|, p = 2 sqrt(sum d_k^2), else (sum |d_k|^p)^(1/p).
 * Sums run in the input's dtype, in lanes (LANES below), the order fixed
 * by M alone, so results do not depend on the thread count.
 *
 * For p = 2, _cdist_forward may take the matrix-product form PyTorch's
 * _euclidean_dist takes: rows [-2x, |x|^2, 1] times rows [y, 1, |y|^2]
 * (one GEMM through OpenBLAS), clamped at 0, square-rooted. compute_mode
 * None or 0 takes it when P > 25 or R > 25, 1 always, 2 never: the same
 * choice as PyTorch's, so values agree to its rounding (the product form
 * may give the square root of a rounding error, not 0, for equal rows).
 *
 * The backward ops compute one input's gradient from the others, with
 * PyTorch's per-p subgradients (0 where the distance is 0; p = inf sends
 * the whole gradient to every entry that attains the max). _cdist_backward
 * returns the gradient of the broadcast x1 ([B..., P, M]); the autograd
 * engine sums it down to x1's shape, as PyTorch's does. x2's gradient is
 * _cdist_backward with the roles swapped and grad and the distances
 * transposed, as in PyTorch's derivatives.yaml.
 *
 * One function is kernel and fake kernel for each op. Inputs of any
 * strides are read through contiguous copies (PyTorch's _pdist_forward
 * and _pdist_backward refuse non-contiguous ones; torch.pdist passes a
 * contiguous copy, which is what tt's ops do themselves). */
#include "transformer_impl.h"
#include "tt_nn.h"

#include <cblas.h>
#include <limits.h>

/* PyTorch's kernel choice by p (apply_cdist, apply_backward_cdist). The
 * forward of K_LT2 is K_GEN's; their backwards differ. */
enum { K_ZERO, K_ONE, K_LT2, K_TWO, K_INF, K_GEN };

static int p_kind(double p)
{
    if (p == 0)
        return K_ZERO;
    if (p == 1)
        return K_ONE;
    if (p == 2)
        return K_TWO;
    if (isinf(p))
        return K_INF;
    return p < 2 ? K_LT2 : K_GEN;
}

/* Rows are reduced in LN_LANES lanes of T (element k in lane k %
 * LN_LANES, the lanes combined in order at the end), as PyTorch's pdist
 * reduces in vector lanes: loops that vectorize, in an order fixed by M
 * alone. BODY runs with k the element and i its lane. */
#define LANES(m, ...)                                                          \
    do {                                                                       \
        int64_t body_ = (m) - (m) % LN_LANES;                                  \
        for (int64_t k0_ = 0; k0_ < body_; k0_ += LN_LANES)                     \
            for (int i = 0; i < LN_LANES; i++) {                               \
                int64_t k = k0_ + i;                                           \
                __VA_ARGS__;                                                   \
            }                                                                  \
        for (int64_t k = body_; k < (m); k++) {                                \
            int i = (int)(k - body_);                                          \
            __VA_ARGS__;                                                       \
        }                                                                      \
    } while (0)

/* Inlined into each CPU_CLONES loop below, so each clone vectorizes them
 * for its own ISA. */
#define ALWAYS_INLINE static inline __attribute__((always_inline))

/* The distance of rows a and b of m, and the gradient a row difference
 * gives its first row (scaled by sgn, +1 or -1) for a distance `dist`
 * whose gradient is g: PyTorch's map/red/finish and backward per p. min
 * and max are std::min's and std::max's (a NaN on the left stays). */
#define DIST_FNS(T, FABS, CEIL, SQRT, POW)                                     \
    static inline T sign_##T(T v) { return (T)((0 < v) - (v < 0)); }            \
    ALWAYS_INLINE T dist_row_##T(const T *restrict a, const T *restrict b, int64_t m, int kind, \
                                 T p)                                          \
    {                                                                          \
        T l[LN_LANES] = {0};                                                   \
        switch (kind) {                                                        \
        case K_ZERO: /* min(ceil(v), 1): 0, 1, or NaN */                   \
            LANES(m, T v = FABS(a[k] - b[k]); l[i] += v > 0 ? 1 : v); break;    \
        case K_ONE: LANES(m, l[i] += FABS(a[k] - b[k])); break;                \
        case K_TWO: LANES(m, T d = a[k] - b[k]; l[i] += d * d); break;         \
        case K_INF: LANES(m, T d = FABS(a[k] - b[k]); l[i] = l[i] < d ? d : l[i]); break; \
        default: LANES(m, l[i] += POW(FABS(a[k] - b[k]), p)); break;           \
        }                                                                      \
        T agg = l[0];                                                          \
        for (int i = 1; i < LN_LANES; i++)                                     \
            agg = kind != K_INF ? agg + l[i] : agg < l[i] ? l[i] : agg;        \
        if (kind == K_TWO)                                                     \
            return SQRT(agg);                                                  \
        if (kind == K_LT2 || kind == K_GEN)                                    \
            return (T)pow((double)agg, 1.0 / (double)p);                       \
        return agg;                                                            \
    }                                                                          \
    ALWAYS_INLINE void grad_row_##T(const T *restrict a, const T *restrict b, T g, T dist,  \
                                    int64_t m, int kind, T p, T sgn, T *restrict o) \
    {                                                                          \
        T dp = kind == K_LT2 || kind == K_GEN ? POW(dist, p - 1) : 1;          \
        switch (kind) {                                                        \
        case K_ONE:                                                            \
            for (int64_t k = 0; k < m; k++)                                    \
                o[k] += sgn * (g * sign_##T(a[k] - b[k]));                     \
            return;                                                            \
        case K_TWO:                                                            \
            if (dist != 0)                                                     \
                for (int64_t k = 0; k < m; k++)                                \
                    o[k] += sgn * (g * (a[k] - b[k]) / dist);                  \
            return;                                                            \
        case K_INF:                                                            \
            for (int64_t k = 0; k < m; k++) {                                  \
                T d = a[k] - b[k], c = CEIL(FABS(FABS(d) - dist));              \
                o[k] += sgn * (g * sign_##T(d) * (1 - (c < 1 ? c : 1)));       \
            }                                                                  \
            return;                                                            \
        case K_LT2: /* a zero difference has no gradient when p < 1 */         \
            if (dist != 0)                                                     \
                for (int64_t k = 0; k < m; k++) {                              \
                    T d = a[k] - b[k];                                         \
                    if (d != 0 || p >= 1)                                      \
                        o[k] += sgn * (sign_##T(d) * POW(FABS(d), p - 1) * g / dp); \
                }                                                              \
            return;                                                            \
        case K_GEN:                                                            \
            if (dist != 0)                                                     \
                for (int64_t k = 0; k < m; k++) {                              \
                    T d = a[k] - b[k];                                         \
                    o[k] += sgn * (d * POW(FABS(d), p - 2) * g / dp);          \
                }                                                              \
            return;                                                            \
        default: return; /* p = 0: no gradient */                             \
        }                                                                      \
    }
DIST_FNS(float, fabsf, ceilf, sqrtf, powf)
DIST_FNS(double, fabs, ceil, sqrt, pow)

/* ------------------------------------------------------------ checks */

static bool sz_zero(tt_size s) { return tt__sz_eq(s, 0); }

static tt_status want_2d_plus(const char *op, const char *arg, int argno, const tt_tensor *t)
{
    if (tt_ndim(t) >= 2)
        return TT_OK;
    return tt_error(TT_ESHAPE, "%s: argument '%s' (#%d): expected a tensor of at least 2 "
                               "dims [..., rows, columns], got %d-d", op, arg, argno, tt_ndim(t));
}

static tt_status want_p(const char *op, int argno, double p)
{
    if (p >= 0)
        return TT_OK;
    return tt_error(TT_EINVAL, "%s: argument 'p' (#%d): expected a non-negative p, got %g", op,
                    argno, p);
}

static tt_status want_dtype_like(const char *op, const char *arg, int argno, const tt_tensor *t,
                                 const char *like_arg, const tt_tensor *like)
{
    if (tt_dtype_of(t) == tt_dtype_of(like))
        return TT_OK;
    return tt_error(TT_EDTYPE, "%s: argument '%s' (#%d): expected %s like '%s', got %s", op, arg,
                    argno, tt_dtype_name(tt_dtype_of(like)), like_arg,
                    tt_dtype_name(tt_dtype_of(t)));
}

/* A pair a [Ba..., Ra, M], b [Bb..., Rb, M] (arguments a_arg #a_no and
 * b_arg #b_no): at least 2-d each, with the same M. */
static tt_status pair_columns(const char *op, const tt_tensor *a, const char *a_arg, int a_no,
                              const tt_tensor *b, const char *b_arg, int b_no)
{
    tt_status st;
    if ((st = want_2d_plus(op, a_arg, a_no, a)) || (st = want_2d_plus(op, b_arg, b_no, b)))
        return st;
    tt_size ma = tt_sizes(a)[tt_ndim(a) - 1], mb = tt_sizes(b)[tt_ndim(b) - 1];
    if (!tt__sz_eq(ma, mb)) {
        char x[32], y[32];
        tt_size_str(ma, x, sizeof x);
        tt_size_str(mb, y, sizeof y);
        return tt_error(TT_ESHAPE, "%s: argument '%s' (#%d): expected %s columns (the last "
                                   "dim) like '%s', got %s", op, b_arg, b_no, x, a_arg, y);
    }
    return TT_OK;
}

/* Their batch dims broadcast together, into bs[0..*nb). */
static tt_status pair_batch(const char *op, const tt_tensor *a, const char *a_arg,
                            const tt_tensor *b, const char *b_arg, int b_no, int *nb, tt_size *bs)
{
    int na = tt_ndim(a) - 2, nbb = tt_ndim(b) - 2;
    int n = na > nbb ? na : nbb;
    for (int d = 0; d < n; d++) {
        int ka = d - (n - na), kb = d - (n - nbb);
        tt_size sa = ka >= 0 ? tt_sizes(a)[ka] : 1, sb = kb >= 0 ? tt_sizes(b)[kb] : 1;
        if (tt__sz_is_one(sb) || tt__sz_eq(sa, sb)) {
            bs[d] = sa;
        } else if (tt__sz_is_one(sa)) {
            bs[d] = sb;
        } else {
            char x[256], y[256];
            return tt_error(TT_ESHAPE, "%s: argument '%s' (#%d): batch dims (all but the last "
                                       "two) of shape %s do not broadcast with those of '%s' "
                                       "%s", op, b_arg, b_no, tt_shape_str(b, y, sizeof y),
                            a_arg, tt_shape_str(a, x, sizeof x));
        }
    }
    *nb = n;
    return TT_OK;
}

/* A real contiguous copy of t broadcast to (nd, sizes). */
static tt_tensor *dense_copy(const tt_tensor *t, int nd, const tt_size *sizes)
{
    tt_tensor *c = tt__ops_new(false, nd, sizes, NULL, tt_dtype_of(t));
    if (c && tt__copy_raw(c, t))
        c = tt_release(c);
    return c;
}

static int64_t prod(int n, const tt_size *s)
{
    int64_t r = 1;
    for (int i = 0; i < n; i++)
        r *= s[i];
    return r;
}

/* -------------------------------------------------- cdist, the kernels */

typedef struct {
    const char *x1, *x2, *grad, *dist;
    char *out;
    int64_t P, R, M;
    int kind;
    double p;
    tt_dtype dt;
} cd_job;

/* Rows [begin, end) of the [B * P] rows of x1: their R distances. */
CPU_CLONES static void cdist_rows(int64_t begin, int64_t end, void *vp)
{
    const cd_job *j = vp;
    int64_t P = j->P, R = j->R, M = j->M;
    for (int64_t r = begin; r < end; r++) {
        int64_t y0 = r / P * R * M;
        for (int64_t c = 0; c < R; c++) {
            if (j->dt == TT_F32)
                ((float *)j->out)[r * R + c] =
                    dist_row_float((const float *)j->x1 + r * M,
                                   (const float *)j->x2 + y0 + c * M, M, j->kind, (float)j->p);
            else
                ((double *)j->out)[r * R + c] =
                    dist_row_double((const double *)j->x1 + r * M,
                                    (const double *)j->x2 + y0 + c * M, M, j->kind, j->p);
        }
    }
}

/* _euclidean_dist's rows: a [-2x, |x|^2, 1] row (first) or a [y, 1, |y|^2]
 * row (second) of K = M + 2, from n rows of m. The squared norms are summed
 * in double and rounded once. */
#define AUG_ROWS(T)                                                            \
    static void aug_rows_##T(const T *x, int64_t n, int64_t m, bool first, T *o) \
    {                                                                          \
        for (int64_t i = 0; i < n; i++, x += m, o += m + 2) {                   \
            double s = 0;                                                      \
            for (int64_t k = 0; k < m; k++) {                                  \
                s += (double)x[k] * (double)x[k];                              \
                o[k] = first ? (T)(-2 * x[k]) : x[k];                          \
            }                                                                  \
            o[m] = first ? (T)s : 1;                                           \
            o[m + 1] = first ? 1 : (T)s;                                       \
        }                                                                      \
    }
AUG_ROWS(float)
AUG_ROWS(double)

/* The matrix-product form of p = 2, one GEMM per batch entry, then the
 * clamp and the square root. Sizes beyond BLAS's ints take the direct
 * loop (the same distances, without the product form's rounding). */
static tt_status cdist_mm(cd_job *j, int64_t B)
{
    int64_t K = j->M + 2;
    if (j->P > INT_MAX || j->R > INT_MAX || K > INT_MAX) {
        tt_parallel_for(B * j->P, 1, cdist_rows, j);
        return TT_OK;
    }
    size_t es = j->dt == TT_F32 ? sizeof(float) : sizeof(double);
    char *a = tt__malloc(es * (size_t)(j->P * K)), *b = tt__malloc(es * (size_t)(j->R * K));
    if (!a || !b) {
        tt__free(a);
        tt__free(b);
        return tt_error(TT_ENOMEM, "tt::_cdist_forward: out of memory for the product form's "
                                   "[%lld, %lld] and [%lld, %lld] operands", (long long)j->P,
                        (long long)K, (long long)j->R, (long long)K);
    }
    tt__blas_sync_threads();
    for (int64_t i = 0; i < B; i++) {
        const char *x1 = j->x1 + es * (size_t)(i * j->P * j->M);
        const char *x2 = j->x2 + es * (size_t)(i * j->R * j->M);
        char *o = j->out + es * (size_t)(i * j->P * j->R);
        if (j->dt == TT_F32) {
            aug_rows_float((const float *)x1, j->P, j->M, true, (float *)a);
            aug_rows_float((const float *)x2, j->R, j->M, false, (float *)b);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)j->P, (blasint)j->R,
                        (blasint)K, 1.0f, (const float *)a, (blasint)K, (const float *)b,
                        (blasint)K, 0.0f, (float *)o, (blasint)j->R);
        } else {
            aug_rows_double((const double *)x1, j->P, j->M, true, (double *)a);
            aug_rows_double((const double *)x2, j->R, j->M, false, (double *)b);
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)j->P, (blasint)j->R,
                        (blasint)K, 1.0, (const double *)a, (blasint)K, (const double *)b,
                        (blasint)K, 0.0, (double *)o, (blasint)j->R);
        }
    }
    tt__free(a);
    tt__free(b);
    int64_t n = B * j->P * j->R;
    for (int64_t i = 0; i < n; i++) {
        if (j->dt == TT_F32) {
            float *v = (float *)j->out + i;
            *v = sqrtf(*v < 0 ? 0 : *v); /* clamp_min(0): NaN stays NaN */
        } else {
            double *v = (double *)j->out + i;
            *v = sqrt(*v < 0 ? 0 : *v);
        }
    }
    return TT_OK;
}

/* Rows [begin, end) of the [B * P] rows of x1: their gradient, summed over
 * x2's R rows in order (PyTorch's order per entry). */
CPU_CLONES static void cdist_grad_rows(int64_t begin, int64_t end, void *vp)
{
    const cd_job *j = vp;
    int64_t P = j->P, R = j->R, M = j->M;
    for (int64_t r = begin; r < end; r++) {
        int64_t y0 = r / P * R * M;
        for (int64_t c = 0; c < R; c++) {
            int64_t gi = r * R + c;
            if (j->dt == TT_F32)
                grad_row_float((const float *)j->x1 + r * M, (const float *)j->x2 + y0 + c * M,
                               ((const float *)j->grad)[gi], ((const float *)j->dist)[gi], M,
                               j->kind, (float)j->p, 1, (float *)j->out + r * M);
            else
                grad_row_double((const double *)j->x1 + r * M,
                                (const double *)j->x2 + y0 + c * M,
                                ((const double *)j->grad)[gi], ((const double *)j->dist)[gi],
                                M, j->kind, j->p, 1, (double *)j->out + r * M);
        }
    }
}

static int64_t grain_for(int64_t work_per_item)
{
    int64_t g = 32768 / (work_per_item > 0 ? work_per_item : 1);
    return g > 0 ? g : 1;
}

/* ------------------------------------------------------ cdist, the ops */

/* tt::_cdist_forward(Tensor x1, Tensor x2, float p, int? compute_mode). */
static tt_status cdist_forward_kernel(tt_frame *f)
{
    const char *op = tt__op_label(TT_OP__CDIST_FORWARD);
    tt_tensor *x1, *x2;
    double p;
    int64_t mode = 0;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &x1)) || (st = tt_arg_tensor(f, 1, &x2)) ||
        (st = tt_arg_float(f, 2, &p)) ||
        (!tt_arg_is_none(f, 3) && (st = tt_arg_int(f, 3, &mode))))
        return st;
    int nb = 0;
    tt_size sizes[TT_MAX_DIMS];
    /* PyTorch's order of checks */
    if ((st = pair_columns(op, x1, "x1", 1, x2, "x2", 2)) || (st = want_float(op, "x1", 1, x1)) ||
        (st = want_float(op, "x2", 2, x2)) || (st = want_p(op, 3, p)))
        return st;
    if (mode < 0 || mode > 2)
        return tt_error(TT_EINVAL, "%s: argument 'compute_mode' (#4): expected None, 0, 1 or "
                                   "2, got %lld", op, (long long)mode);
    if ((st = pair_batch(op, x1, "x1", x2, "x2", 2, &nb, sizes)) ||
        (st = want_dtype_like(op, "x2", 2, x2, "x1", x1)))
        return st;
    tt_size P = tt_sizes(x1)[tt_ndim(x1) - 2], R = tt_sizes(x2)[tt_ndim(x2) - 2];
    tt_size M = tt_sizes(x1)[tt_ndim(x1) - 1];
    sizes[nb] = P, sizes[nb + 1] = R;
    bool fake = tt_frame_is_fake(f);
    tt_tensor *out = tt__ops_new(fake, nb + 2, sizes, NULL, tt_dtype_of(x1));
    if (!out)
        return tt_errcode();
    if (fake)
        return tt_return(f, 0, out);
    int64_t B = prod(nb, sizes);
    if (B == 0 || P == 0 || R == 0 || M == 0) { /* M == 0: distances of nothing */
        st = M == 0 ? tt__fill_raw(out, 0) : TT_OK;
        return st ? (tt_release(out), st) : tt_return(f, 0, out);
    }
    tt_size s1[TT_MAX_DIMS], s2[TT_MAX_DIMS];
    memcpy(s1, sizes, sizeof(tt_size) * (size_t)nb);
    memcpy(s2, sizes, sizeof(tt_size) * (size_t)nb);
    s1[nb] = P, s1[nb + 1] = M, s2[nb] = R, s2[nb + 1] = M;
    tt_tensor *c1 = dense_copy(x1, nb + 2, s1), *c2 = c1 ? dense_copy(x2, nb + 2, s2) : NULL;
    if (!c2) {
        tt_release(c1);
        tt_release(out);
        return tt_errcode();
    }
    cd_job j = {.x1 = tt__ptr(c1), .x2 = tt__ptr(c2), .out = tt__ptr(out), .P = P, .R = R,
                .M = M, .kind = p_kind(p), .p = p, .dt = tt_dtype_of(x1)};
    if (j.kind == K_TWO && (mode == 1 || (mode == 0 && (P > 25 || R > 25))))
        st = cdist_mm(&j, B);
    else
        tt_parallel_for(B * P, grain_for(16 * M * R), cdist_rows, &j);
    tt_release(c1);
    tt_release(c2);
    if (st) {
        tt_release(out);
        return st;
    }
    return tt_return(f, 0, out);
}

/* tt::_cdist_backward(Tensor grad, Tensor x1, Tensor x2, float p, Tensor
 * cdist): the gradient of the broadcast x1. */
static tt_status cdist_backward_kernel(tt_frame *f)
{
    const char *op = tt__op_label(TT_OP__CDIST_BACKWARD);
    tt_tensor *grad, *x1, *x2, *dist;
    double p;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &grad)) || (st = tt_arg_tensor(f, 1, &x1)) ||
        (st = tt_arg_tensor(f, 2, &x2)) || (st = tt_arg_float(f, 3, &p)) ||
        (st = tt_arg_tensor(f, 4, &dist)))
        return st;
    int nb = 0;
    tt_size sizes[TT_MAX_DIMS];
    if ((st = pair_columns(op, x1, "x1", 2, x2, "x2", 3)) ||
        (st = pair_batch(op, x1, "x1", x2, "x2", 3, &nb, sizes)) ||
        (st = want_float(op, "x1", 2, x1)) || (st = want_dtype_like(op, "x2", 3, x2, "x1", x1)) ||
        (st = want_dtype_like(op, "grad", 1, grad, "x1", x1)) ||
        (st = want_dtype_like(op, "cdist", 5, dist, "x1", x1)) || (st = want_p(op, 4, p)))
        return st;
    tt_size P = tt_sizes(x1)[tt_ndim(x1) - 2], R = tt_sizes(x2)[tt_ndim(x2) - 2];
    tt_size M = tt_sizes(x1)[tt_ndim(x1) - 1];
    sizes[nb] = P, sizes[nb + 1] = R;
    if ((st = want_sizes(op, "grad", 1, grad, nb + 2, sizes)) ||
        (st = want_sizes(op, "cdist", 5, dist, nb + 2, sizes)))
        return st;
    bool fake = tt_frame_is_fake(f);
    bool empty = sz_zero(P) || sz_zero(R) || sz_zero(M);
    for (int d = 0; d < nb && !empty; d++)
        empty = sz_zero(sizes[d]);
    if (empty) { /* PyTorch's zeros_like(x1): x1's own shape and layout */
        tt_size st1[TT_MAX_DIMS];
        tt__strides_like(x1, st1);
        tt_tensor *z = tt__ops_new(fake, tt_ndim(x1), tt_sizes(x1), st1, tt_dtype_of(x1));
        if (z && !fake && tt__fill_raw(z, 0))
            z = tt_release(z);
        return z ? tt_return(f, 0, z) : tt_errcode();
    }
    tt_size s1[TT_MAX_DIMS], s2[TT_MAX_DIMS];
    memcpy(s1, sizes, sizeof(tt_size) * (size_t)nb);
    memcpy(s2, sizes, sizeof(tt_size) * (size_t)nb);
    s1[nb] = P, s1[nb + 1] = M, s2[nb] = R, s2[nb + 1] = M;
    tt_tensor *out = tt__ops_new(fake, nb + 2, s1, NULL, tt_dtype_of(x1));
    if (!out || fake)
        return out ? tt_return(f, 0, out) : tt_errcode();
    tt_tensor *c[4] = {dense_copy(x1, nb + 2, s1), dense_copy(x2, nb + 2, s2),
                       dense_copy(grad, nb + 2, sizes), dense_copy(dist, nb + 2, sizes)};
    st = c[0] && c[1] && c[2] && c[3] ? tt__fill_raw(out, 0) : tt_errcode();
    if (!st) {
        cd_job j = {.x1 = tt__ptr(c[0]), .x2 = tt__ptr(c[1]), .grad = tt__ptr(c[2]),
                    .dist = tt__ptr(c[3]), .out = tt__ptr(out), .P = P, .R = R, .M = M,
                    .kind = p_kind(p), .p = p, .dt = tt_dtype_of(x1)};
        if (j.kind != K_ZERO)
            tt_parallel_for(prod(nb, sizes) * P, grain_for(16 * M * R), cdist_grad_rows, &j);
    }
    for (int i = 0; i < 4; i++)
        tt_release(c[i]);
    if (st) {
        tt_release(out);
        return st;
    }
    return tt_return(f, 0, out);
}

/* A float argument's value (an int passes for a float too). */
static double float_arg(const tt_value *v)
{
    return v->kind == TT_V_INT ? (double)v->u.i : v->u.f;
}

static tt_status setup_cdist(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                             const tt_value *out, int nout)
{
    (void)nin, (void)nout;
    tt_status st = tt_ctx_save_float(ctx, "p", float_arg(&in[2]));
    return st ? st
              : tt_ctx_save_for_backward(ctx, 3,
                                         (tt_tensor *[]){in[0].u.t, in[1].u.t, out[0].u.t});
}

/* derivatives.yaml: x1 by _cdist_backward(grad, x1, x2, p, result); x2 by
 * _cdist_backward(grad.mT, x2, x1, p, result.mT). */
static tt_status cdist_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    tt_tensor *x1 = tt_ctx_saved(ctx, 0), *x2 = tt_ctx_saved(ctx, 1), *d = tt_ctx_saved(ctx, 2);
    double p = 0;
    tt_status st = tt_ctx_get_float(ctx, "p", &p);
    if (st)
        return st;
    if (tt_ctx_needs_input_grad(ctx, 0)) {
        tt_tensor *r = tt__call_op(TT_OP__CDIST_BACKWARD,
                                   TT_ARGS(tt_v_tensor(g[0]), tt_v_tensor(x1), tt_v_tensor(x2),
                                           tt_v_float(p), tt_v_tensor(d)));
        if ((st = tt__put_grad(ctx, gi, 0, r)))
            return st;
    }
    if (!tt_ctx_needs_input_grad(ctx, 1))
        return TT_OK;
    tt_tensor *gt = tt__call_op(TT_OP_TRANSPOSE_INT,
                                TT_ARGS(tt_v_tensor(g[0]), tt_v_int(-1), tt_v_int(-2)));
    tt_tensor *dt = gt ? tt__call_op(TT_OP_TRANSPOSE_INT,
                                     TT_ARGS(tt_v_tensor(d), tt_v_int(-1), tt_v_int(-2)))
                       : NULL;
    tt_tensor *r = dt ? tt__call_op(TT_OP__CDIST_BACKWARD,
                                    TT_ARGS(tt_v_tensor(gt), tt_v_tensor(x2), tt_v_tensor(x1),
                                            tt_v_float(p), tt_v_tensor(dt)))
                      : NULL;
    tt_release(dt);
    tt_release(gt);
    return tt__put_grad(ctx, gi, 1, r);
}

/* ------------------------------------------------------------- pdist */

typedef struct {
    const char *x, *grad, *dist;
    char *out;
    int64_t N, M;
    int kind;
    double p;
    tt_dtype dt;
} pd_job;

/* Pair k's first row, as PyTorch finds it (the -1 guards against the
 * square root rounding up). */
static int64_t pair_row(int64_t k, int64_t n)
{
    double n2 = (double)n - .5;
    return (int64_t)(n2 - sqrt(n2 * n2 - 2 * (double)k - 1));
}

/* Pairs [begin, end) of i < j in order. */
CPU_CLONES static void pdist_pairs(int64_t begin, int64_t end, void *vp)
{
    const pd_job *j = vp;
    int64_t n = j->N, m = j->M;
    int64_t i = pair_row(begin, n);
    int64_t c = begin - n * i + i * (i + 1) / 2 + i + 1;
    for (int64_t k = begin; k < end; k++) {
        if (j->dt == TT_F32)
            ((float *)j->out)[k] = dist_row_float((const float *)j->x + i * m,
                                                  (const float *)j->x + c * m, m, j->kind,
                                                  (float)j->p);
        else
            ((double *)j->out)[k] = dist_row_double((const double *)j->x + i * m,
                                                    (const double *)j->x + c * m, m, j->kind,
                                                    j->p);
        if (++c == n)
            c = ++i + 1;
    }
}

static int64_t pair_index(int64_t i, int64_t j, int64_t n)
{
    return i * n - i * (i + 1) / 2 + (j - i - 1);
}

/* Rows [begin, end): row r's gradient, -share(x_i - x_r) for i < r, then
 * +share(x_r - x_j) for j > r, in the order PyTorch's loop adds them. */
CPU_CLONES static void pdist_grad_rows(int64_t begin, int64_t end, void *vp)
{
    const pd_job *j = vp;
    int64_t n = j->N, m = j->M;
    for (int64_t r = begin; r < end; r++)
        for (int64_t i = 0; i < n; i++) {
            if (i == r)
                continue;
            int64_t a = i < r ? i : r, b = i < r ? r : i, k = pair_index(a, b, n);
            if (j->dt == TT_F32)
                grad_row_float((const float *)j->x + a * m, (const float *)j->x + b * m,
                               ((const float *)j->grad)[k], ((const float *)j->dist)[k], m,
                               j->kind, (float)j->p, i < r ? -1 : 1, (float *)j->out + r * m);
            else
                grad_row_double((const double *)j->x + a * m, (const double *)j->x + b * m,
                                ((const double *)j->grad)[k], ((const double *)j->dist)[k], m,
                                j->kind, j->p, i < r ? -1 : 1, (double *)j->out + r * m);
        }
}

/* N(N-1)/2, for symbolic N too (0 for N of 0 or 1). */
static tt_size pair_count(tt_size n)
{
    if (!tt_size_is_sym(n))
        return n * (n - 1) / 2;
    return tt_sym_floordiv(tt_sym_mul(n, tt_sym_sub(n, 1)), 2);
}

static tt_status want_2d(const char *op, const char *arg, int argno, const tt_tensor *t)
{
    if (tt_ndim(t) == 2)
        return TT_OK;
    return tt_error(TT_ESHAPE, "%s: argument '%s' (#%d): expected a 2-d tensor [N, M], got "
                               "%d-d", op, arg, argno, tt_ndim(t));
}

/* tt::_pdist_forward(Tensor self, float p=2). */
static tt_status pdist_forward_kernel(tt_frame *f)
{
    const char *op = tt__op_label(TT_OP__PDIST_FORWARD);
    tt_tensor *x;
    double p;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &x)) || (st = tt_arg_float(f, 1, &p)) ||
        (st = want_2d(op, "self", 1, x)) || (st = want_float(op, "self", 1, x)) ||
        (st = want_p(op, 2, p)))
        return st;
    tt_size n = tt_sizes(x)[0], m = tt_sizes(x)[1], c = pair_count(n);
    if (c == -1)
        return tt_errcode();
    bool fake = tt_frame_is_fake(f);
    tt_tensor *out = tt__ops_new(fake, 1, &c, NULL, tt_dtype_of(x));
    if (!out || fake || c == 0)
        return out ? tt_return(f, 0, out) : tt_errcode();
    if (m == 0) {
        st = tt__fill_raw(out, 0);
        return st ? (tt_release(out), st) : tt_return(f, 0, out);
    }
    tt_tensor *xc = contig(x);
    if (!xc) {
        tt_release(out);
        return tt_errcode();
    }
    pd_job j = {.x = tt__ptr(xc), .out = tt__ptr(out), .N = n, .M = m, .kind = p_kind(p),
                .p = p, .dt = tt_dtype_of(x)};
    tt_parallel_for(c, grain_for(16 * m), pdist_pairs, &j);
    tt_release(xc);
    return tt_return(f, 0, out);
}

/* tt::_pdist_backward(Tensor grad, Tensor self, float p, Tensor pdist). */
static tt_status pdist_backward_kernel(tt_frame *f)
{
    const char *op = tt__op_label(TT_OP__PDIST_BACKWARD);
    tt_tensor *grad, *x, *dist;
    double p;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &grad)) || (st = tt_arg_tensor(f, 1, &x)) ||
        (st = tt_arg_float(f, 2, &p)) || (st = tt_arg_tensor(f, 3, &dist)) ||
        (st = want_2d(op, "self", 2, x)) || (st = want_float(op, "self", 2, x)) ||
        (st = want_dtype_like(op, "grad", 1, grad, "self", x)) ||
        (st = want_dtype_like(op, "pdist", 4, dist, "self", x)) || (st = want_p(op, 3, p)))
        return st;
    tt_size n = tt_sizes(x)[0], m = tt_sizes(x)[1], c = pair_count(n);
    if (c == -1)
        return tt_errcode();
    if ((st = want_sizes(op, "grad", 1, grad, 1, &c)) ||
        (st = want_sizes(op, "pdist", 4, dist, 1, &c)))
        return st;
    bool fake = tt_frame_is_fake(f);
    tt_tensor *out = tt__ops_new(fake, 2, tt_sizes(x), NULL, tt_dtype_of(x));
    if (!out || fake)
        return out ? tt_return(f, 0, out) : tt_errcode();
    if ((st = tt__fill_raw(out, 0)) || c == 0 || m == 0 || p_kind(p) == K_ZERO)
        return st ? (tt_release(out), st) : tt_return(f, 0, out);
    tt_tensor *cs[3] = {contig(x), dense_copy(grad, 1, &c), dense_copy(dist, 1, &c)};
    if (cs[0] && cs[1] && cs[2]) {
        pd_job j = {.x = tt__ptr(cs[0]), .grad = tt__ptr(cs[1]), .dist = tt__ptr(cs[2]),
                    .out = tt__ptr(out), .N = n, .M = m, .kind = p_kind(p), .p = p,
                    .dt = tt_dtype_of(x)};
        tt_parallel_for(n, grain_for(16 * m * n), pdist_grad_rows, &j);
    } else {
        st = tt_errcode();
    }
    for (int i = 0; i < 3; i++)
        tt_release(cs[i]);
    if (st) {
        tt_release(out);
        return st;
    }
    return tt_return(f, 0, out);
}

static tt_status setup_pdist(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                             const tt_value *out, int nout)
{
    (void)nin, (void)nout;
    tt_status st = tt_ctx_save_float(ctx, "p", float_arg(&in[1]));
    return st ? st : tt_ctx_save_for_backward(ctx, 2, (tt_tensor *[]){in[0].u.t, out[0].u.t});
}

/* derivatives.yaml: _pdist_backward(grad, self, p, result). */
static tt_status pdist_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    double p = 0;
    tt_status st = tt_ctx_get_float(ctx, "p", &p);
    if (st)
        return st;
    return tt__put_grad(ctx, gi, 0,
                        tt__call_op(TT_OP__PDIST_BACKWARD,
                                    TT_ARGS(tt_v_tensor(g[0]), tt_v_tensor(tt_ctx_saved(ctx, 0)),
                                            tt_v_float(p), tt_v_tensor(tt_ctx_saved(ctx, 1)))));
}

/* ---------------------------------------------------------- wrappers */

tt_tensor *tt_cdist_ex(const tt_tensor *x1, const tt_tensor *x2, double p, int compute_mode)
{
    return tt__call_op(TT_OP__CDIST_FORWARD,
                       TT_ARGS(tt_v_tensor(x1), tt_v_tensor(x2), tt_v_float(p),
                               compute_mode < 0 ? tt_v_none() : tt_v_int(compute_mode)));
}

tt_tensor *tt_cdist(const tt_tensor *x1, const tt_tensor *x2, double p)
{
    return tt_cdist_ex(x1, x2, p, -1);
}

tt_tensor *tt_pdist(const tt_tensor *x, double p)
{
    return tt__call_op(TT_OP__PDIST_FORWARD, TT_ARGS(tt_v_tensor(x), tt_v_float(p)));
}

#undef TT__FAMILY_DISTANCE
#define TT__FAMILY_DISTANCE TT__ROW
static const tt__builtin_row rows[] = {TT__FAMILY_ROWS};

tt_status tt__register_distance(tt_library *lib)
{
    return TT__DEFINE_ROWS(lib, rows);
}
