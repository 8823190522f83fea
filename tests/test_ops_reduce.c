/* Reductions (sum, mean, amax, amin, argmax) and softmax / log_softmax.
 * Every result is compared with a plain f64 (or int64) loop over the same
 * logical values, for every dtype, for inputs in several memory layouts
 * (contiguous, transposed, with a step, expanded), every set of reduced
 * dims with and without keepdim, 0-dim and empty inputs; the typed
 * wrappers and the boxed calls must agree; the fake path must give the real
 * output's metadata exactly; large inputs take the parallel and chunked
 * paths and must give the same bits on any thread count; every error is
 * checked by status and text. */
#include "tt_test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* ------------------------------------------------------------- operands */

typedef enum { L_CONTIG, L_TRANS, L_STEP, L_EXPAND, L_COUNT } layout;
static const char *const layout_names[L_COUNT] = {"contig", "trans", "step", "expand"};

static const tt_dtype all_dtypes[] = {TT_F32, TT_F64, TT_I64, TT_I32, TT_U8, TT_BOOL};
#define NDT ((int)(sizeof all_dtypes / sizeof all_dtypes[0]))

typedef struct {
    int nd;
    int64_t s[4];
} shape;
static const shape shapes[] = {
    {0, {0}},       {1, {7}},       {2, {3, 5}},    {3, {2, 3, 4}}, {4, {2, 1, 3, 5}},
    {2, {1, 9}},    {2, {0, 3}},    {2, {3, 0}},    {1, {0}},       {3, {4, 33, 2}},
};
#define NSHAPES ((int)(sizeof shapes / sizeof shapes[0]))

static uint64_t rng_state = 88172645463325252ull;
static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* n values of dtype dt: floats in [-10, 10) with two decimals, small
 * integers (so that ties happen), bools. */
static void fill(void *buf, tt_dtype dt, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        int64_t r = (int64_t)(rng() % 2000);
        switch (dt) {
        case TT_F32: ((float *)buf)[i] = (float)(r - 1000) / 100.0f; break;
        case TT_F64: ((double *)buf)[i] = (double)(r - 1000) / 100.0; break;
        case TT_I64: ((int64_t *)buf)[i] = r % 21 - 10; break;
        case TT_I32: ((int32_t *)buf)[i] = (int32_t)(r % 21 - 10); break;
        case TT_U8: ((uint8_t *)buf)[i] = (uint8_t)(r % 200); break;
        default: ((bool *)buf)[i] = r & 1; break;
        }
    }
}

static tt_tensor *random_tensor(int nd, const int64_t *sizes, tt_dtype dt)
{
    int64_t n = 1;
    for (int d = 0; d < nd; d++)
        n *= sizes[d];
    void *buf = malloc((size_t)(n ? n : 1) * tt_dtype_size(dt));
    fill(buf, dt, n);
    tt_tensor *t = tt_from_data(nd, sizes, dt, buf);
    free(buf);
    ck_assert_ptr_nonnull(t);
    return t;
}

/* A tensor of logical shape (nd, sizes) in layout L with random values. A
 * layout that does not apply to the shape falls back to contiguous. */
static tt_tensor *make(layout L, int nd, const int64_t *sizes, tt_dtype dt)
{
    int64_t ph[TT_MAX_DIMS], perm[TT_MAX_DIMS];
    memcpy(ph, sizes, sizeof(int64_t) * (size_t)nd);
    if ((L == L_TRANS && nd < 2) || (L != L_CONTIG && nd < 1) ||
        (L == L_EXPAND && sizes[0] == 0))
        L = L_CONTIG;
    tt_tensor *base, *r;
    switch (L) {
    case L_TRANS: /* memory order reversed: the base has the dims reversed */
        for (int d = 0; d < nd; d++) {
            ph[d] = sizes[nd - 1 - d];
            perm[d] = nd - 1 - d;
        }
        base = random_tensor(nd, ph, dt);
        r = tt_permute(base, nd, perm);
        break;
    case L_STEP: /* every other element of the last dim, from 1 */
        ph[nd - 1] = 2 * sizes[nd - 1] + 1;
        base = random_tensor(nd, ph, dt);
        r = tt_slice(base, nd - 1, 1, ph[nd - 1], 2);
        break;
    case L_EXPAND: /* dim 0 broadcast from size 1 (stride 0) */
        ph[0] = 1;
        base = random_tensor(nd, ph, dt);
        r = tt_expand(base, nd, sizes);
        break;
    default:
        return random_tensor(nd, sizes, dt);
    }
    tt_release(base);
    ck_assert_msg(r != NULL, "%s", tt_errmsg());
    return r;
}

/* The logical (row-major) values of t as doubles; caller frees. */
static double *values(const tt_tensor *t)
{
    int64_t n = tt_numel(t);
    size_t es = tt_dtype_size(tt_dtype_of(t));
    tt_dtype dt = tt_dtype_of(t);
    char *raw = malloc((size_t)(n ? n : 1) * es);
    double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
    ck_assert_int_eq(tt_to_buffer(t, raw, (size_t)n * es), TT_OK);
    for (int64_t i = 0; i < n; i++) {
        switch (dt) {
        case TT_F32: v[i] = ((const float *)raw)[i]; break;
        case TT_F64: v[i] = ((const double *)raw)[i]; break;
        case TT_I64: v[i] = (double)((const int64_t *)raw)[i]; break;
        case TT_I32: v[i] = ((const int32_t *)raw)[i]; break;
        case TT_U8: v[i] = ((const uint8_t *)raw)[i]; break;
        default: v[i] = ((const bool *)raw)[i]; break;
        }
    }
    free(raw);
    return v;
}

/* Asserts t has shape (nd, sizes), contiguous strides and offset 0. As
 * PyTorch's, contiguous strides treat a size-0 dim as size 1. */
static void contiguous_shape(const tt_tensor *t, int nd, const int64_t *sizes, const char *ctx)
{
    ck_assert_msg(tt_ndim(t) == nd, "%s: ndim %d, expected %d", ctx, tt_ndim(t), nd);
    int64_t st = 1;
    for (int d = nd - 1; d >= 0; d--) {
        ck_assert_msg(tt_sizes(t)[d] == sizes[d], "%s: size %d is %lld, expected %lld", ctx,
                      d, (long long)tt_sizes(t)[d], (long long)sizes[d]);
        ck_assert_msg(tt_strides(t)[d] == st, "%s: stride %d is %lld, expected %lld", ctx, d,
                      (long long)tt_strides(t)[d], (long long)st);
        st *= sizes[d] > 1 ? sizes[d] : 1;
    }
    ck_assert_int_eq(tt_storage_offset(t), 0);
}

/* ck_assert_* records every passing check (a write per call), too slow
 * for loops over a million elements: this one only acts on failure. */
#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        if (!(cond))                                                           \
            ck_abort_msg(__VA_ARGS__);                                         \
    } while (0)

static const tt_op *op(const char *name)
{
    const tt_op *o = tt_op_find(name);
    ck_assert_msg(o != NULL, "%s: %s", name, tt_errmsg());
    return o;
}

/* ------------------------------------------------- sum, mean, amax, amin */

enum { R_SUM, R_MEAN, R_AMAX, R_AMIN, R_COUNT };
static const char *const r_names[R_COUNT] = {"sum", "mean", "amax", "amin"};
typedef tt_tensor *(*red_fn)(const tt_tensor *, int, const int64_t *, bool);
static const red_fn r_fns[R_COUNT] = {tt_sum, tt_mean, tt_amax, tt_amin};
static const char *const r_ops[R_COUNT] = {"tt::sum.dim_IntList", "tt::mean.dim", "tt::amax",
                                           "tt::amin"};

/* The reference: per output, an f64 sum (exact for the integers here),
 * max, min and count, over the logical elements. */
static void reference(int which, const tt_tensor *x, const bool *mask, double *ref,
                      int64_t nout)
{
    int nd = tt_ndim(x);
    double *v = values(x);
    const int64_t *sz = tt_sizes(x);
    int64_t n = tt_numel(x), *cnt = calloc((size_t)(nout ? nout : 1), sizeof(int64_t));
    for (int64_t o = 0; o < nout; o++)
        ref[o] = which == R_AMAX ? -INFINITY : which == R_AMIN ? INFINITY : 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t rem = i, o = 0, scale = 1;
        for (int d = nd - 1; d >= 0; d--) {
            int64_t k = rem % sz[d];
            rem /= sz[d];
            if (!mask[d]) {
                o += k * scale;
                scale *= sz[d];
            }
        }
        cnt[o]++;
        if (which == R_AMAX)
            ref[o] = v[i] > ref[o] ? v[i] : ref[o];
        else if (which == R_AMIN)
            ref[o] = v[i] < ref[o] ? v[i] : ref[o];
        else
            ref[o] += v[i];
    }
    if (which == R_MEAN)
        for (int64_t o = 0; o < nout; o++)
            ref[o] = ref[o] / (double)cnt[o]; /* 0/0 = NaN for empty */
    free(cnt);
    free(v);
}

static tt_dtype result_dtype(int which, tt_dtype in)
{
    if (which == R_SUM && !tt_dtype_is_float(in))
        return TT_I64;
    return in;
}

/* Runs reduction `which` of x over dims (ndims == 0: all) and checks it
 * against the reference, the boxed call and the fake path. */
static void check_reduce(int which, const tt_tensor *x, int ndims, const int64_t *dims,
                         bool keepdim, const char *ctx)
{
    int nd = tt_ndim(x);
    bool mask[TT_MAX_DIMS] = {false};
    bool empty_red = false;
    for (int d = 0; d < nd; d++)
        mask[d] = ndims == 0;
    for (int i = 0; i < ndims; i++)
        if (nd > 0)
            mask[dims[i] < 0 ? dims[i] + nd : dims[i]] = true;
    int64_t osz[TT_MAX_DIMS], nout = 1;
    int ond = 0;
    for (int d = 0; d < nd; d++) {
        if (mask[d] && tt_sizes(x)[d] == 0)
            empty_red = true;
        if (!mask[d] || keepdim)
            osz[ond++] = mask[d] ? 1 : tt_sizes(x)[d];
        if (!mask[d])
            nout *= tt_sizes(x)[d];
    }
    tt_tensor *y = r_fns[which](x, ndims, dims, keepdim);
    tt_tensor *fx = tt_fake_like(x);
    tt_tensor *fy = r_fns[which](fx, ndims, dims, keepdim);
    if (which == R_MEAN && !tt_dtype_is_float(tt_dtype_of(x))) {
        ck_assert_msg(y == NULL && fy == NULL, "%s: mean of an integral tensor", ctx);
        ck_assert_error(TT_EDTYPE, "tt::mean: argument 'self' (#1): could not infer output dtype");
        tt_release(fx);
        return;
    }
    if ((which == R_AMAX || which == R_AMIN) && empty_red) {
        ck_assert_msg(y == NULL && fy == NULL, "%s: empty amax/amin must fail", ctx);
        ck_assert_error(TT_EINVAL, ndims ? "to have non-zero size"
                                         : "expected reduction dim to be specified");
        tt_release(fx);
        return;
    }
    ck_assert_msg(y != NULL, "%s: %s", ctx, tt_errmsg());
    ck_assert_msg(tt_dtype_of(y) == result_dtype(which, tt_dtype_of(x)), "%s: dtype %s", ctx,
                  tt_dtype_name(tt_dtype_of(y)));
    contiguous_shape(y, ond, osz, ctx);
    tt_test_assert_fake_meta(fy, y, ctx);

    double *ref = malloc(sizeof(double) * (size_t)(nout ? nout : 1));
    reference(which, x, mask, ref, nout);
    double *got = values(y), *xs = values(x), absmax = 0;
    for (int64_t i = 0, n = tt_numel(x); i < n; i++)
        absmax += fabs(xs[i]);
    bool is_f32 = tt_dtype_of(x) == TT_F32, is_f = tt_dtype_is_float(tt_dtype_of(x));
    for (int64_t o = 0; o < nout; o++) {
        if (isnan(ref[o])) {
            CHECK(isnan(got[o]), "%s: out[%lld] = %g, expected NaN", ctx,
                          (long long)o, got[o]);
            continue;
        }
        double tol = !is_f ? 0 : (is_f32 ? 1e-6 : 1e-14) * (absmax + 1);
        if (which == R_AMAX || which == R_AMIN)
            tol = 0;
        CHECK(fabs(got[o] - ref[o]) <= tol, "%s: out[%lld] = %.17g, expected %.17g",
                      ctx, (long long)o, got[o], ref[o]);
    }
    /* The boxed call runs the same kernel: the same bits. For sum and
     * mean, no dims is also spelled None. */
    tt_value dv = ndims == 0 && which <= R_MEAN && (keepdim || nd % 2) ? tt_v_none()
                                                                       : tt_v_ints(ndims, dims);
    tt_tensor *yb = tt_call(op(r_ops[which]), tt_v_tensor(x), dv, tt_v_bool(keepdim));
    ck_assert_msg(yb != NULL, "%s: boxed: %s", ctx, tt_errmsg());
    tt_test_assert_same_bits(yb, y, ctx);
    tt_release(yb);
    free(ref);
    free(got);
    free(xs);
    tt_release(y);
    tt_release(fy);
    tt_release(fx);
}

/* Every dtype x shape x layout x set of dims (each subset, with negative
 * spellings on odd subsets, and the empty list) x keepdim. */
static void table(int which)
{
    char ctx[256];
    for (int di = 0; di < NDT; di++)
        for (int si = 0; si < NSHAPES; si++)
            for (int L = 0; L < L_COUNT; L++) {
                const shape *sh = &shapes[si];
                tt_scope_begin();
                tt_tensor *x = make((layout)L, sh->nd, sh->s, all_dtypes[di]);
                int nsub = sh->nd ? 1 << sh->nd : 3;
                for (int m = 0; m < nsub; m++)
                    for (int kd = 0; kd < 2; kd++) {
                        int64_t dims[TT_MAX_DIMS];
                        int n = 0;
                        if (sh->nd == 0) { /* [], [0], [-1] */
                            if (m > 0)
                                dims[n++] = m == 1 ? 0 : -1;
                        } else {
                            for (int d = 0; d < sh->nd; d++)
                                if (m >> d & 1)
                                    dims[n++] = m & 1 ? d - sh->nd : d;
                        }
                        snprintf(ctx, sizeof ctx, "%s %s nd=%d shape#%d %s mask=%d keepdim=%d",
                                 r_names[which], tt_dtype_name(all_dtypes[di]), sh->nd, si,
                                 layout_names[L], m, kd);
                        check_reduce(which, x, n, dims, kd, ctx);
                    }
                tt_scope_end();
            }
}

START_TEST(test_sum_table) { table(R_SUM); }
END_TEST
START_TEST(test_mean_table) { table(R_MEAN); }
END_TEST
START_TEST(test_amax_table) { table(R_AMAX); }
END_TEST
START_TEST(test_amin_table) { table(R_AMIN); }
END_TEST

/* sum/mean over all dims (the overloads without dim): 0-dim results. */
START_TEST(test_sum_mean_all)
{
    char ctx[128];
    for (int di = 0; di < NDT; di++)
        for (int si = 0; si < NSHAPES; si++) {
            tt_dtype dt = all_dtypes[di];
            tt_tensor *x = make(L_STEP, shapes[si].nd, shapes[si].s, dt);
            snprintf(ctx, sizeof ctx, "%s shape#%d", tt_dtype_name(dt), si);
            tt_tensor *m = tt_mean_all(x);
            if (!tt_dtype_is_float(dt)) {
                ck_assert_ptr_null(m);
                ck_assert_error(TT_EDTYPE, "tt::mean: argument 'self' (#1): could not infer");
            }
            tt_tensor *s = tt_sum_all(x), *all = tt_sum(x, 0, NULL, false);
            ck_assert_msg(s != NULL, "%s: %s", ctx, tt_errmsg());
            contiguous_shape(s, 0, NULL, ctx);
            ck_assert_int_eq(tt_dtype_of(s), result_dtype(R_SUM, dt));
            tt_test_assert_same_bits(s, all, ctx);
            tt_tensor *sb = tt_call(op("tt::sum"), tt_v_tensor(x));
            tt_test_assert_same_bits(sb, s, ctx);
            if (tt_dtype_is_float(dt)) {
                tt_tensor *mb = tt_call(op("tt::mean"), tt_v_tensor(x));
                double a, b;
                ck_assert_int_eq(tt_item(m, &a), TT_OK);
                ck_assert_int_eq(tt_item(mb, &b), TT_OK);
                ck_assert(memcmp(&a, &b, sizeof a) == 0);
                if (tt_numel(x) == 0) { /* sum of nothing is 0, mean NaN */
                    ck_assert(isnan(a));
                    ck_assert_int_eq(tt_item(s, &b), TT_OK);
                    ck_assert(b == 0);
                }
                tt_release(mb);
            }
            tt_release(s);
            tt_release(m);
            tt_release(sb);
            tt_release(all);
            tt_release(x);
        }
}
END_TEST

/* dtype=: sum converts the input first (0.5 + 0.5 summed as int64 is 0)
 * and mean of an integral tensor works with a float dtype. */
START_TEST(test_dtype_arg)
{
    tt_tensor *x = tt_from_data(TT_SHAPE(2, 2), TT_F32, (float[]){0.5f, 0.5f, 1.5f, 2.5f});
    tt_tensor *xi = tt_from_data(TT_SHAPE(2, 2), TT_I32, (int32_t[]){1, 2, 3, 6});
    tt_tensor *xb = tt_from_data(TT_SHAPE(3), TT_BOOL, (bool[]){true, false, true});
    double v;
    tt_tensor *y = tt_call(op("tt::sum.dim_IntList"), tt_v_tensor(x), tt_v_none(), tt_v_bool(false),
                           tt_v_dtype(TT_I64));
    ck_assert_int_eq(tt_dtype_of(y), TT_I64);
    tt_item(y, &v);
    ck_assert(v == 3); /* 0 + 0 + 1 + 2 */
    tt_release(y);
    y = tt_call(op("tt::sum"), tt_v_tensor(xi), tt_v_dtype(TT_F64));
    ck_assert_int_eq(tt_dtype_of(y), TT_F64);
    tt_item(y, &v);
    ck_assert(v == 12);
    tt_release(y);
    y = tt_call(op("tt::sum.dim_IntList"), tt_v_tensor(xi), tt_v_ints(TT_INTS(1)), tt_v_bool(true),
                tt_v_dtype(TT_I32));
    ck_assert_int_eq(tt_dtype_of(y), TT_I32);
    contiguous_shape(y, 2, (int64_t[]){2, 1}, "sum dtype=i32");
    tt_get(y, &v, 1, 0);
    ck_assert(v == 9);
    tt_release(y);
    y = tt_call(op("tt::mean.dim"), tt_v_tensor(xi), tt_v_ints(TT_INTS(0)), tt_v_bool(false),
                tt_v_dtype(TT_F64));
    ck_assert_int_eq(tt_dtype_of(y), TT_F64);
    tt_get(y, &v, 1);
    ck_assert(v == 4);
    tt_release(y);
    y = tt_call(op("tt::mean"), tt_v_tensor(xb), tt_v_dtype(TT_F32));
    ck_assert_int_eq(tt_dtype_of(y), TT_F32);
    tt_item(y, &v);
    ck_assert_double_eq_tol(v, 2.0 / 3, 1e-7);
    tt_release(y);
    /* Sum of bools counts them; dtype=bool gives "any". */
    y = tt_sum_all(xb);
    ck_assert_int_eq(tt_dtype_of(y), TT_I64);
    tt_item(y, &v);
    ck_assert(v == 2);
    tt_release(y);
    y = tt_call(op("tt::sum"), tt_v_tensor(xb), tt_v_dtype(TT_BOOL));
    ck_assert_int_eq(tt_dtype_of(y), TT_BOOL);
    tt_item(y, &v);
    ck_assert(v == 1);
    tt_release(y);
    /* u8 with dtype=u8 wraps as PyTorch's does. */
    tt_tensor *xu = tt_from_data(TT_SHAPE(2), TT_U8, (uint8_t[]){200, 100});
    y = tt_call(op("tt::sum"), tt_v_tensor(xu), tt_v_dtype(TT_U8));
    tt_item(y, &v);
    ck_assert(v == 44);
    tt_release(y);
    tt_release(xu);
    tt_release(x);
    tt_release(xi);
    tt_release(xb);
}
END_TEST

/* NaN propagates through amax/amin and sum; +-inf are ordinary values. */
START_TEST(test_nan_inf)
{
    for (int di = 0; di < 2; di++) {
        tt_dtype dt = di ? TT_F64 : TT_F32;
        /* row 0 has a NaN in the middle, row 1 +-inf; 40 columns take
         * the vector loops. */
        double buf[2 * 40];
        for (int i = 0; i < 80; i++)
            buf[i] = (double)(i % 7);
        buf[17] = NAN;
        buf[40 + 3] = INFINITY;
        buf[40 + 30] = -INFINITY;
        tt_tensor *x64 = tt_from_data(TT_SHAPE(2, 40), TT_F64, buf);
        tt_tensor *x = tt_to_dtype(x64, dt);
        tt_tensor *t1 = tt_t(x), *c1 = tt_contiguous(t1);
        tt_tensor *xt = tt_t(c1); /* the same values, column-major */
        tt_release(t1);
        tt_release(c1);
        for (int lay = 0; lay < 2; lay++) {
            const tt_tensor *in = lay ? xt : x;
            tt_tensor *mx = tt_amax(in, TT_INTS(1), false), *mn = tt_amin(in, TT_INTS(1), false);
            tt_tensor *s = tt_sum(in, TT_INTS(1), false);
            double a, b, c, d, e, f;
            tt_get(mx, &a, 0);
            tt_get(mn, &b, 0);
            tt_get(s, &c, 0);
            ck_assert(isnan(a) && isnan(b) && isnan(c));
            tt_get(mx, &d, 1);
            tt_get(mn, &e, 1);
            tt_get(s, &f, 1);
            ck_assert(d == INFINITY && e == -INFINITY && isnan(f));
            tt_release(mx);
            tt_release(mn);
            tt_release(s);
            /* Over dim 0 (the lanes path for the row-major input). */
            mx = tt_amax(in, TT_INTS(0), false);
            tt_get(mx, &a, 17);
            tt_get(mx, &b, 3);
            tt_get(mx, &c, 30);
            ck_assert(isnan(a) && b == INFINITY && c == (double)(30 % 7));
            tt_release(mx);
        }
        tt_release(xt);
        tt_release(x);
        tt_release(x64);
    }
}
END_TEST

/* ------------------------------------------------------------- argmax */

/* The reference: first index of the max along dim (or of the flattened
 * input), NaN counting as the max. */
static void argmax_ref(const tt_tensor *x, int dim, bool has_dim, int64_t *ref, int64_t nout)
{
    int nd = tt_ndim(x);
    double *v = values(x);
    double *best = malloc(sizeof(double) * (size_t)(nout ? nout : 1));
    for (int64_t o = 0; o < nout; o++)
        ref[o] = -1;
    const int64_t *sz = tt_sizes(x);
    for (int64_t i = 0, n = tt_numel(x); i < n; i++) {
        int64_t rem = i, o = 0, scale = 1, k_dim = i;
        for (int d = nd - 1; d >= 0; d--) {
            int64_t k = rem % sz[d];
            rem /= sz[d];
            if (has_dim && d == dim) {
                k_dim = k;
            } else if (has_dim) {
                o += k * scale;
                scale *= sz[d];
            }
        }
        if (!has_dim)
            o = 0;
        if (ref[o] < 0 || (!isnan(best[o]) && (v[i] > best[o] || isnan(v[i])))) {
            ref[o] = k_dim;
            best[o] = v[i];
        }
    }
    free(best);
    free(v);
}

static void check_argmax(const tt_tensor *x, bool has_dim, int dim, bool keepdim, const char *ctx)
{
    int nd = tt_ndim(x), wd = dim < 0 ? dim + nd : dim;
    const tt_op *o = op("tt::argmax");
    tt_value dv = has_dim ? tt_v_int(dim) : tt_v_none();
    tt_tensor *y = has_dim && !keepdim ? tt_argmax(x, dim, keepdim)
                                       : tt_call(o, tt_v_tensor(x), dv, tt_v_bool(keepdim));
    tt_tensor *fx = tt_fake_like(x);
    tt_tensor *fy = tt_call(o, tt_v_tensor(fx), dv, tt_v_bool(keepdim));
    bool empty = has_dim ? nd > 0 && tt_sizes(x)[wd] == 0 : tt_numel(x) == 0;
    if (tt_dtype_of(x) == TT_BOOL) {
        ck_assert_msg(y == NULL && fy == NULL, "%s", ctx);
        ck_assert_error(TT_EDTYPE, "tt::argmax: argument 'self' (#1): not implemented for bool");
        tt_release(fx);
        return;
    }
    if (empty) {
        ck_assert_msg(y == NULL && fy == NULL, "%s: empty argmax must fail", ctx);
        ck_assert_error(TT_EINVAL, has_dim ? "to have non-zero size"
                                           : "expected reduction dim to be specified");
        tt_release(fx);
        return;
    }
    ck_assert_msg(y != NULL, "%s: %s", ctx, tt_errmsg());
    ck_assert_int_eq(tt_dtype_of(y), TT_I64);
    int64_t osz[TT_MAX_DIMS] = {0}, nout = 1;
    int ond = 0;
    for (int d = 0; d < nd; d++) {
        bool red = !has_dim || d == wd;
        if (!red || keepdim)
            osz[ond++] = red ? 1 : tt_sizes(x)[d];
        if (!red)
            nout *= tt_sizes(x)[d];
    }
    contiguous_shape(y, ond, osz, ctx);
    tt_test_assert_fake_meta(fy, y, ctx);
    int64_t *ref = malloc(sizeof(int64_t) * (size_t)(nout ? nout : 1));
    argmax_ref(x, wd, has_dim && nd > 0, ref, nout);
    double *got = values(y);
    for (int64_t i = 0; i < nout; i++)
        CHECK(got[i] == (double)ref[i], "%s: out[%lld] = %g, expected %lld", ctx,
                      (long long)i, got[i], (long long)ref[i]);
    free(ref);
    free(got);
    tt_release(y);
    tt_release(fy);
    tt_release(fx);
}

START_TEST(test_argmax_table)
{
    char ctx[256];
    for (int di = 0; di < NDT; di++)
        for (int si = 0; si < NSHAPES; si++)
            for (int L = 0; L < L_COUNT; L++) {
                const shape *sh = &shapes[si];
                tt_tensor *x = make((layout)L, sh->nd, sh->s, all_dtypes[di]);
                int ndim_opts = sh->nd ? sh->nd : 1;
                for (int d = -1; d < 2 * ndim_opts; d++) /* -1: None; then d and d - nd */
                    for (int kd = 0; kd < 2; kd++) {
                        int dim = d < ndim_opts ? d : d - 2 * ndim_opts;
                        snprintf(ctx, sizeof ctx, "argmax %s shape#%d %s dim=%d keepdim=%d",
                                 tt_dtype_name(all_dtypes[di]), si, layout_names[L], dim, kd);
                        check_argmax(x, d >= 0, dim, kd, ctx);
                    }
                tt_release(x);
            }
}
END_TEST

/* NaN wins (the first one), ties give the first index. */
START_TEST(test_argmax_nan_ties)
{
    tt_tensor *x = tt_from_data(TT_SHAPE(3, 5), TT_F32,
                                (float[]){1, 7, 3, 7, 0, 2, NAN, 9, NAN, 9, -1, -1, -1, -1, -1});
    tt_tensor *y = tt_argmax(x, 1, false);
    double v;
    tt_get(y, &v, 0);
    ck_assert(v == 1); /* the first of two 7s */
    tt_get(y, &v, 1);
    ck_assert(v == 1); /* NaN at column 1 */
    tt_get(y, &v, 2);
    ck_assert(v == 0);
    tt_release(y);
    y = tt_call(op("tt::argmax"), tt_v_tensor(x), tt_v_none(), tt_v_bool(false));
    tt_item(y, &v);
    ck_assert(v == 6); /* the flattened index of the first NaN */
    tt_release(y);
    tt_release(x);
}
END_TEST

/* ------------------------------------------------------------ softmax */

static void check_softmax(bool lg, const tt_tensor *x, int dim, const char *ctx)
{
    int nd = tt_ndim(x), wd = dim < 0 ? dim + (nd ? nd : 1) : dim;
    tt_tensor *y = lg ? tt_log_softmax(x, dim) : tt_softmax(x, dim);
    tt_tensor *fx = tt_fake_like(x);
    tt_tensor *fy = lg ? tt_log_softmax(fx, dim) : tt_softmax(fx, dim);
    if (!tt_dtype_is_float(tt_dtype_of(x))) {
        ck_assert_msg(y == NULL && fy == NULL, "%s", ctx);
        ck_assert_error(TT_EDTYPE, "argument 'self' (#1): expected a floating point tensor");
        tt_release(fx);
        return;
    }
    ck_assert_msg(y != NULL, "%s: %s", ctx, tt_errmsg());
    ck_assert_int_eq(tt_dtype_of(y), tt_dtype_of(x));
    contiguous_shape(y, nd, tt_sizes(x), ctx);
    tt_test_assert_fake_meta(fy, y, ctx);
    /* Reference over lines along dim: x viewed as (outer, n, inner). */
    int64_t outer = 1, n = 1, inner = 1;
    for (int d = 0; d < nd; d++)
        *(d < wd ? &outer : d == wd ? &n : &inner) *= tt_sizes(x)[d];
    double *v = values(x), *got = values(y);
    double tol = tt_dtype_of(x) == TT_F32 ? 2e-6 : 1e-13;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < inner; j++) {
            double m = -INFINITY, s = 0;
            for (int64_t i = 0; i < n; i++)
                m = fmax(m, v[(o * n + i) * inner + j]);
            for (int64_t i = 0; i < n; i++)
                s += exp(v[(o * n + i) * inner + j] - m);
            for (int64_t i = 0; i < n; i++) {
                int64_t k = (o * n + i) * inner + j;
                double r = lg ? v[k] - m - log(s) : exp(v[k] - m) / s;
                CHECK(fabs(got[k] - r) <= tol * (1 + fabs(r)),
                              "%s: out[%lld] = %.17g, expected %.17g", ctx, (long long)k,
                              got[k], r);
            }
        }
    tt_tensor *yb = tt_call(op(lg ? "tt::log_softmax.int" : "tt::softmax.int"), tt_v_tensor(x),
                            tt_v_int(dim));
    tt_test_assert_same_bits(yb, y, ctx);
    tt_release(yb);
    free(v);
    free(got);
    tt_release(y);
    tt_release(fy);
    tt_release(fx);
}

START_TEST(test_softmax_table)
{
    char ctx[256];
    for (int lg = 0; lg < 2; lg++)
        for (int di = 0; di < NDT; di++)
            for (int si = 0; si < NSHAPES; si++)
                for (int L = 0; L < L_COUNT; L++) {
                    const shape *sh = &shapes[si];
                    tt_tensor *x = make((layout)L, sh->nd, sh->s, all_dtypes[di]);
                    int nopt = sh->nd ? sh->nd : 1;
                    for (int d = 0; d < 2 * nopt; d++) {
                        int dim = d < nopt ? d : d - 2 * nopt;
                        snprintf(ctx, sizeof ctx, "%s %s shape#%d %s dim=%d",
                                 lg ? "log_softmax" : "softmax", tt_dtype_name(all_dtypes[di]),
                                 si, layout_names[L], dim);
                        check_softmax(lg, x, dim, ctx);
                    }
                    tt_release(x);
                }
}
END_TEST

/* Subtracting the max keeps huge logits finite; a row of equal values is
 * uniform; dtype= converts an integral input. */
START_TEST(test_softmax_stable_dtype)
{
    tt_tensor *x = tt_from_data(TT_SHAPE(2, 3), TT_F32,
                                (float[]){1000, 0, -1000, 88.5f, 88.5f, 88.5f});
    tt_tensor *s = tt_softmax(x, 1), *l = tt_log_softmax(x, 1);
    double v;
    tt_get(s, &v, 0, 0);
    ck_assert_double_eq_tol(v, 1.0, 1e-7);
    tt_get(s, &v, 0, 2);
    ck_assert(v == 0);
    tt_get(l, &v, 0, 1);
    ck_assert_double_eq_tol(v, -1000.0, 1e-3);
    tt_get(l, &v, 0, 0);
    ck_assert_double_eq_tol(v, 0.0, 1e-7);
    tt_get(s, &v, 1, 1);
    ck_assert_double_eq_tol(v, 1.0 / 3, 1e-7);
    tt_release(s);
    tt_release(l);
    tt_tensor *xi = tt_from_data(TT_SHAPE(3), TT_I64, (int64_t[]){1, 2, 3});
    s = tt_call(op("tt::softmax.int"), tt_v_tensor(xi), tt_v_int(0), tt_v_dtype(TT_F64));
    ck_assert_int_eq(tt_dtype_of(s), TT_F64);
    tt_get(s, &v, 2);
    ck_assert_double_eq_tol(v, exp(3) / (exp(1) + exp(2) + exp(3)), 1e-15);
    l = tt_call(op("tt::log_softmax.int"), tt_v_tensor(x), tt_v_int(-1), tt_v_dtype(TT_F64));
    ck_assert_int_eq(tt_dtype_of(l), TT_F64);
    tt_get(l, &v, 0, 1);
    ck_assert_double_eq_tol(v, -1000.0, 1e-9);
    tt_release(s);
    tt_release(l);
    tt_release(xi);
    tt_release(x);
}
END_TEST

/* ------------------------------------------------------- large inputs */

/* The result on 1 thread, on the default count and on 3 threads: the
 * same bits (fixed chunking, combined in order). */
typedef tt_tensor *(*unary_case)(const tt_tensor *x);
static void same_on_any_thread_count(unary_case fn, const tt_tensor *x, const char *ctx)
{
    int saved = tt_get_num_threads();
    tt_set_num_threads(1);
    tt_tensor *a = fn(x);
    tt_set_num_threads(0);
    tt_tensor *b = fn(x);
    tt_set_num_threads(3);
    tt_tensor *c = fn(x);
    tt_set_num_threads(saved == 1 ? 1 : 0);
    ck_assert_msg(a && b && c, "%s: %s", ctx, tt_errmsg());
    tt_test_assert_same_bits(a, b, ctx);
    tt_test_assert_same_bits(a, c, ctx);
    tt_release(a);
    tt_release(b);
    tt_release(c);
}

static tt_tensor *sum_all_fn(const tt_tensor *x) { return tt_sum_all(x); }
static tt_tensor *sum0_fn(const tt_tensor *x) { return tt_sum(x, TT_INTS(0), false); }
static tt_tensor *sum1_fn(const tt_tensor *x) { return tt_sum(x, TT_INTS(-1), true); }
static tt_tensor *mean1_fn(const tt_tensor *x) { return tt_mean(x, TT_INTS(1), false); }
static tt_tensor *amax0_fn(const tt_tensor *x) { return tt_amax(x, TT_INTS(0), false); }
static tt_tensor *amin_all_fn(const tt_tensor *x) { return tt_amin(x, 0, NULL, false); }
static tt_tensor *argmax_fn(const tt_tensor *x)
{
    static const tt_op *o;
    if (!o)
        o = tt_op_find("tt::argmax");
    return tt_call(o, tt_v_tensor(x), tt_v_none(), tt_v_bool(false));
}
static tt_tensor *argmax1_fn(const tt_tensor *x) { return tt_argmax(x, -1, false); }
static tt_tensor *softmax0_fn(const tt_tensor *x) { return tt_softmax(x, 0); }
static tt_tensor *logsoftmax1_fn(const tt_tensor *x) { return tt_log_softmax(x, -1); }

/* Shapes past the chunk size (65536 reduced elements), for both paths: a
 * long row (rows path, chunked), a tall matrix over dim 0 (lanes path,
 * chunked), many short rows (parallel over outputs). Each against the
 * reference and across thread counts. */
START_TEST(test_large)
{
    static const struct {
        int nd;
        int64_t s[3];
        layout L;
    } cases[] = {
        {1, {300001}, L_CONTIG}, {2, {3, 140000}, L_CONTIG}, {2, {70001, 16}, L_CONTIG},
        {2, {1000, 300}, L_TRANS}, {2, {200000, 3}, L_CONTIG}, {3, {40, 50, 60}, L_STEP},
    };
    unary_case fns[] = {sum_all_fn, sum0_fn, sum1_fn, amax0_fn, amin_all_fn,
                        argmax_fn, argmax1_fn, softmax0_fn, logsoftmax1_fn};
    char ctx[128];
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int di = 0; di < 4; di++) {
            tt_dtype dt = all_dtypes[di];
            tt_tensor *x = make(cases[c].L, cases[c].nd, cases[c].s, dt);
            snprintf(ctx, sizeof ctx, "large case %zu %s", c, tt_dtype_name(dt));
            check_reduce(R_SUM, x, 0, NULL, false, ctx);
            check_reduce(R_SUM, x, 1, (int64_t[]){0}, false, ctx);
            check_reduce(R_AMAX, x, 1, (int64_t[]){cases[c].nd - 1}, true, ctx);
            check_reduce(R_AMIN, x, 1, (int64_t[]){0}, false, ctx);
            check_argmax(x, false, 0, false, ctx);
            check_argmax(x, true, 0, false, ctx);
            if (tt_dtype_is_float(dt)) {
                check_reduce(R_MEAN, x, 1, (int64_t[]){-1}, false, ctx);
                check_softmax(false, x, 0, ctx);
                check_softmax(true, x, -1, ctx);
            }
            /* f64 and i32 take the f32 and i64 code paths: thread counts
             * are compared on those two only, to keep the suite quick. */
            for (size_t f = 0; (dt == TT_F32 || dt == TT_I64) && f < sizeof fns / sizeof fns[0];
                 f++) {
                if (!tt_dtype_is_float(dt) && f >= 7)
                    continue;
                same_on_any_thread_count(fns[f], x, ctx);
            }
            if (dt == TT_F32 && cases[c].nd >= 2)
                same_on_any_thread_count(mean1_fn, x, ctx);
            tt_release(x);
        }
}
END_TEST

/* Pairwise summation: a million 0.1f sum to 100000 within a few ulps,
 * where a naive float loop is off by about 1%. */
START_TEST(test_sum_accuracy)
{
    int64_t n = 1000000;
    tt_tensor *x = tt_full(TT_SHAPE(n), 0.1, TT_F32);
    tt_tensor *s = tt_sum_all(x);
    double v;
    tt_item(s, &v);
    ck_assert_double_eq_tol(v, (double)n * (double)0.1f, 0.05);
    tt_release(s);
    /* Over dim 0 of a tall matrix: the lanes path accumulates in double. */
    tt_tensor *m = tt_view(x, TT_SHAPE(n / 10, 10));
    s = tt_sum(m, TT_INTS(0), false);
    tt_get(s, &v, 3);
    ck_assert_double_eq_tol(v, (double)(n / 10) * (double)0.1f, 0.005);
    tt_release(s);
    tt_release(m);
    tt_release(x);
}
END_TEST

/* Every allocation a call makes can fail: the call then fails with
 * TT_ENOMEM and leaks nothing (the fixture counts live tensors). */
START_TEST(test_oom)
{
    tt_tensor *x = make(L_TRANS, 2, (int64_t[]){300, 700}, TT_F32);
    unary_case fns[] = {sum_all_fn, sum0_fn, amax0_fn, argmax_fn, softmax0_fn, mean1_fn};
    for (size_t f = 0; f < sizeof fns / sizeof fns[0]; f++) {
        int failures = 0;
        for (int64_t k = 1; k < 64; k++) {
            tt_debug_fail_alloc(k);
            tt_tensor *y = fns[f](x);
            tt_debug_fail_alloc(0);
            if (y) {
                tt_release(y);
                break;
            }
            ck_assert_error(TT_ENOMEM, "out of memory");
            failures++;
        }
        ck_assert_msg(failures > 0, "case %zu: no allocation to fail", f);
    }
    tt_release(x);
}
END_TEST

/* Symbolic sizes flow through the fake path. */
START_TEST(test_symbolic)
{
    tt_sym_reset();
    tt_size s0 = tt_sym_new("s", 5), s1 = tt_sym_new("s", 7);
    tt_tensor *x = tt_fake_empty(2, (tt_size[]){s0, s1}, TT_F32);
    tt_tensor *y = tt_sum(x, TT_INTS(1), true);
    ck_assert_ptr_nonnull(y);
    ck_assert(tt_sizes(y)[0] == s0 && tt_sizes(y)[1] == 1);
    tt_release(y);
    y = tt_amax(x, TT_INTS(0), false);
    ck_assert(tt_ndim(y) == 1 && tt_sizes(y)[0] == s1);
    tt_release(y);
    y = tt_softmax(x, 0);
    ck_assert(tt_sizes(y)[0] == s0 && tt_sizes(y)[1] == s1);
    ck_assert(tt_strides(y)[0] == tt_strides(x)[0] && tt_strides(y)[1] == 1);
    tt_release(y);
    y = tt_argmax(x, 0, false);
    ck_assert(tt_ndim(y) == 1 && tt_sizes(y)[0] == s1 && tt_dtype_of(y) == TT_I64);
    tt_release(y);
    tt_release(x);
    tt_sym_reset();
}
END_TEST

/* ------------------------------------------------------------- errors */

/* The inputs of the error rows, made again for each row by the "errors"
 * TCase's fixture. */
static struct {
    tt_tensor *x, *xi, *xb, *e, *z, *fx, *fe;
} in;

static void errors_setup(void)
{
    tt_test_setup();
    in.x = make(L_CONTIG, 2, (int64_t[]){2, 3}, TT_F32);
    in.xi = make(L_CONTIG, 2, (int64_t[]){2, 3}, TT_I64);
    in.xb = make(L_CONTIG, 1, (int64_t[]){4}, TT_BOOL);
    in.e = tt_zeros(TT_SHAPE(0, 3), TT_F32);
    in.z = tt_scalar(1, TT_F32);
    in.fx = tt_fake_like(in.x);
    in.fe = tt_fake_like(in.e);
    ck_assert(in.x && in.xi && in.xb && in.e && in.z && in.fx && in.fe);
}

static void errors_teardown(void)
{
    tt_tensor *all[] = {in.x, in.xi, in.xb, in.e, in.z, in.fx, in.fe};
    for (int k = 0; k < TT_TABLE_LEN(all); k++)
        tt_release(all[k]);
    memset(&in, 0, sizeof in);
    tt_test_teardown();
}

/* X(name, call, expected status, texts the message contains). */
#define REDUCE_ERRORS(X)                                                       \
    X(sum_dim_out_of_range, tt_sum(in.x, TT_INTS(2), false), TT_EINVAL,        \
      "tt::sum: argument 'dim' (#2): dimension out of range "                  \
      "(expected to be in range of [-2, 1], but got 2)")                       \
    X(mean_dim_out_of_range, tt_mean(in.x, TT_INTS(-3), false), TT_EINVAL,     \
      "tt::mean: argument 'dim' (#2): dimension out of range")                 \
    X(amax_0dim_dim_out_of_range, tt_amax(in.z, TT_INTS(1), false), TT_EINVAL, \
      "tt::amax: argument 'dim' (#2): dimension out of range "                 \
      "(expected to be in range of [-1, 0], but got 1)")                       \
    X(sum_repeated_dim, tt_sum(in.x, TT_INTS(1, -1), false), TT_EINVAL,        \
      "tt::sum: argument 'dim' (#2): dim 1 appears multiple times "            \
      "in the list of dims")                                                   \
    X(amin_0dim_repeated_dim, tt_amin(in.z, TT_INTS(0, -1), false), TT_EINVAL, \
      "tt::amin: argument 'dim' (#2): dim 0 appears multiple times")           \
    X(sum_negative_dim_count, tt_sum(in.x, -1, NULL, false), TT_EINVAL,        \
      "tt::sum: argument 'dim' (#2): the dim count must be >= 0, got -1")      \
    X(sum_null_dims, tt_sum(in.x, 2, NULL, false), TT_EINVAL,                  \
      "tt::sum: argument 'dim' (#2): expects 2 dims, got NULL")                \
    X(mean_of_i64, tt_mean(in.xi, TT_INTS(0), false), TT_EDTYPE,               \
      "tt::mean: argument 'self' (#1): could not infer output dtype; "         \
      "the input dtype must be a floating point dtype, got i64")               \
    X(mean_all_of_bool, tt_mean_all(in.xb), TT_EDTYPE,                         \
      "tt::mean: argument 'self' (#1): could not infer output dtype; "         \
      "the input dtype must be a floating point dtype, got bool")              \
    X(mean_dim_dtype_i64,                                                      \
      tt_call(op("tt::mean.dim"), tt_v_tensor(in.x), tt_v_none(), tt_v_bool(false), \
              tt_v_dtype(TT_I64)),                                             \
      TT_EDTYPE,                                                               \
      "tt::mean: argument 'dtype' (#4): could not infer output dtype; "        \
      "the dtype must be a floating point dtype, got i64")                     \
    X(mean_dtype_i32, tt_call(op("tt::mean"), tt_v_tensor(in.x), tt_v_dtype(TT_I32)), \
      TT_EDTYPE, "tt::mean: argument 'dtype' (#2): could not infer output dtype") \
    X(amax_empty_dim, tt_amax(in.e, TT_INTS(0), false), TT_EINVAL,             \
      "tt::amax: argument 'self' (#1): Expected reduction dim 0 to "           \
      "have non-zero size (the input has shape [0, 3])")                       \
    X(amin_empty_all_dims, tt_amin(in.e, 0, NULL, true), TT_EINVAL,            \
      "tt::amin: argument 'self' (#1): expected reduction dim to be "          \
      "specified for an input with no elements (shape [0, 3])")                \
    X(argmax_dim_out_of_range, tt_argmax(in.x, 2, false), TT_EINVAL,           \
      "tt::argmax: argument 'dim' (#2): dimension out of range")               \
    X(argmax_empty_dim, tt_argmax(in.e, 0, false), TT_EINVAL,                  \
      "tt::argmax: argument 'self' (#1): Expected reduction dim 0 to "         \
      "have non-zero size")                                                    \
    X(argmax_empty_no_dim,                                                     \
      tt_call(op("tt::argmax"), tt_v_tensor(in.e), tt_v_none(), tt_v_bool(false)), \
      TT_EINVAL,                                                               \
      "tt::argmax: argument 'self' (#1): expected reduction dim to be "        \
      "specified for an input with no elements (shape [0, 3])")                \
    X(argmax_of_bool, tt_argmax(in.xb, 0, false), TT_EDTYPE,                   \
      "tt::argmax: argument 'self' (#1): not implemented for bool")            \
    X(softmax_dim_out_of_range, tt_softmax(in.x, 2), TT_EINVAL,                \
      "tt::softmax: argument 'dim' (#2): dimension out of range")              \
    X(log_softmax_of_i64, tt_log_softmax(in.xi, 0), TT_EDTYPE,                 \
      "tt::log_softmax: argument 'self' (#1): expected a floating "            \
      "point tensor, got i64 (pass dtype to convert it)")                      \
    X(softmax_dtype_i32,                                                       \
      tt_call(op("tt::softmax.int"), tt_v_tensor(in.x), tt_v_int(0), tt_v_dtype(TT_I32)), \
      TT_EDTYPE,                                                               \
      "tt::softmax: argument 'dtype' (#3): expected a floating point "         \
      "dtype, got i32")                                                        \
    /* NULL tensors and wrong argument kinds are caught by the dispatcher  \
     * (no error is held: a NULL is a mistake of its own). */                  \
    X(sum_null_self, tt_sum(NULL, 0, NULL, false), TT_EINVAL,                  \
      "tt::sum.dim_IntList: argument 'self' (#1) expects Tensor, got NULL")    \
    X(softmax_null_self, tt_softmax(NULL, 0), TT_EINVAL,                       \
      "tt::softmax.int: argument 'self' (#1) expects Tensor, got NULL")        \
    X(argmax_null_self, tt_argmax(NULL, 0, false), TT_EINVAL,                  \
      "tt::argmax: argument 'self' (#1) expects Tensor, got NULL")             \
    X(mean_all_null_self, tt_mean_all(NULL), TT_EINVAL,                        \
      "tt::mean: argument 'self' (#1) expects Tensor, got NULL")               \
    X(amax_dim_not_a_list, tt_call(op("tt::amax"), tt_v_tensor(in.x), tt_v_int(0)), \
      TT_EINVAL, "tt::amax: argument 'dim' (#2) expects int[]")                \
    /* Errors decided by metadata are the same on the fake path. */           \
    X(fake_sum_repeated_dim, tt_sum(in.fx, TT_INTS(0, 0), false), TT_EINVAL,   \
      "dim 0 appears multiple times")                                          \
    X(fake_amax_empty_dim, tt_amax(in.fe, TT_INTS(0), false), TT_EINVAL,       \
      "Expected reduction dim 0 to have non-zero size")

TT_ERROR_TABLE(REDUCE_ERRORS, reduce_errors);

/* One row of REDUCE_ERRORS per iteration. */
START_TEST(test_errors)
{
    tt_test_run_error_case(&reduce_errors[_i], _i);
}
END_TEST

/* An empty input reduces over a dim that is not empty. */
START_TEST(test_amax_empty_input_nonempty_dim)
{
    tt_tensor *ok = tt_amax(in.e, TT_INTS(1), false);
    ck_assert_ptr_nonnull(ok);
    ck_assert_int_eq(tt_ndim(ok), 1);
    ck_assert_int_eq(tt_sizes(ok)[0], 0);
    tt_release(ok);
}
END_TEST

static Suite *reduce_suite(void)
{
    Suite *s = suite_create("ops_reduce");
    TCase *tc = tt_tcase("tables");
    tcase_add_test(tc, test_sum_table);
    tcase_add_test(tc, test_mean_table);
    tcase_add_test(tc, test_amax_table);
    tcase_add_test(tc, test_amin_table);
    tcase_add_test(tc, test_sum_mean_all);
    tcase_add_test(tc, test_argmax_table);
    tcase_add_test(tc, test_softmax_table);
    suite_add_tcase(s, tc);
    tc = tt_tcase("values");
    tcase_add_test(tc, test_dtype_arg);
    tcase_add_test(tc, test_nan_inf);
    tcase_add_test(tc, test_argmax_nan_ties);
    tcase_add_test(tc, test_softmax_stable_dtype);
    tcase_add_test(tc, test_sum_accuracy);
    tcase_add_test(tc, test_symbolic);
    suite_add_tcase(s, tc);
    tc = tt_tcase("large");
    tcase_add_test(tc, test_large);
    tcase_add_test(tc, test_oom);
    suite_add_tcase(s, tc);
    tc = tt_tcase_with("errors", errors_setup, errors_teardown);
    tcase_add_loop_test(tc, test_errors, 0, TT_TABLE_LEN(reduce_errors));
    tcase_add_test(tc, test_amax_empty_input_nonempty_dim);
    suite_add_tcase(s, tc);
    return s;
}

TT_TEST_MAIN(reduce_suite)
