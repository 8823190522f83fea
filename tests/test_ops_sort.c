/* Sorting, selection along a dim and scans (issue 27, ops/sort_scan.c):
 * what the differential file (tests/data/torch_ref.txt) cannot say. Values
 * against a plain reference in the test, over dtypes, dims and layouts;
 * stability (equal keys keep their order); NaN placement; gradcheck of
 * every derivative in f64; every error path's status and message; a traced
 * and compiled forward + backward equal to eager; symbolic sizes through
 * the fake path; zero live tensors at the end of each test (the fixture
 * checks). */
#include "tt_test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        if (!(cond))                                                           \
            ck_abort_msg(__VA_ARGS__);                                         \
    } while (0)

static int64_t numel_of(int nd, const int64_t *sizes)
{
    int64_t n = 1;
    for (int d = 0; d < nd; d++)
        n *= sizes[d];
    return n;
}

/* Values v(i) (i the row-major position) as f64 converted to dt. */
static tt_tensor *made(int nd, const int64_t *sizes, tt_dtype dt, double (*v)(int64_t, int64_t))
{
    int64_t n = numel_of(nd, sizes);
    double *b = malloc(sizeof(double) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++)
        b[i] = v(i, n);
    tt_tensor *t = NN(tt_from_data(nd, sizes, TT_F64, b));
    free(b);
    tt_tensor *r = NN(tt_to_dtype(t, dt));
    tt_release(t);
    return r;
}

/* Distinct values in a scrambled order (gradients well defined). */
static double v_distinct(int64_t i, int64_t n)
{
    return (double)((i * 7919) % (n * 2 + 1)) / 8.0 - (double)n / 8.0;
}
/* Few distinct values, many ties, small and non-negative (every dtype). */
static double v_ties(int64_t i, int64_t n)
{
    (void)n;
    return (double)((i * 5 + 3) % 7 % 4);
}

static tt_tensor *scrambled(int nd, const int64_t *sizes, tt_dtype dt)
{
    return made(nd, sizes, dt, v_distinct);
}

/* ------------------------------------------------ reference selection */

/* x's rows along dim as a plain array: row r (the other dims row-major)
 * element j is out[r * n + j]; returns the row count, *n the length. */
static int64_t rows_of(const tt_tensor *x, int dim, double **out, int64_t *n)
{
    double *v = tt_test_values(x);
    int nd = tt_ndim(x);
    const tt_size *sz = tt_sizes(x);
    int64_t len = nd ? sz[dim] : 1, inner = 1, outer = 1;
    for (int d = dim + 1; d < nd; d++)
        inner *= sz[d];
    for (int d = 0; d < dim; d++)
        outer *= sz[d];
    double *r = malloc(sizeof(double) * (size_t)(tt_numel(x) ? tt_numel(x) : 1));
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++)
            for (int64_t j = 0; j < len; j++)
                r[(o * inner + i) * len + j] = v[(o * len + j) * inner + i];
    free(v);
    *out = r, *n = len;
    return outer * inner;
}

/* NaN largest; a before b in ascending order. */
static bool before(double a, double b, bool desc)
{
    if (desc) {
        double t = a;
        a = b, b = t;
    }
    return !isnan(a) && (isnan(b) || a < b);
}

/* The stable sort of a row by insertion: positions into idx. */
static void ref_sort(const double *x, int64_t n, bool desc, int64_t *idx)
{
    for (int64_t i = 0; i < n; i++) {
        int64_t j = i;
        for (; j > 0 && before(x[i], x[idx[j - 1]], desc); j--)
            idx[j] = idx[j - 1];
        idx[j] = i;
    }
}

static bool same_value(double a, double b) { return (isnan(a) && isnan(b)) || a == b; }

/* values and indices are the stable sort's first k of every row of x. */
static void check_selection(const tt_tensor *x, int dim, bool desc, int64_t k,
                            const tt_tensor *values, const tt_tensor *indices, const char *what)
{
    double *xr, *vr, *ir;
    int64_t n, kv, ki;
    int64_t R = rows_of(x, dim, &xr, &n);
    ck_assert_int_eq(rows_of(values, dim, &vr, &kv), R);
    ck_assert_int_eq(rows_of(indices, dim, &ir, &ki), R);
    ck_assert_int_eq(kv, k);
    ck_assert_int_eq(ki, k);
    ck_assert_int_eq(tt_dtype_of(indices), TT_I64);
    ck_assert_int_eq(tt_dtype_of(values), tt_dtype_of(x));
    int64_t *idx = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    for (int64_t r = 0; r < R; r++) {
        ref_sort(xr + r * n, n, desc, idx);
        for (int64_t j = 0; j < k; j++) {
            CHECK((int64_t)ir[r * k + j] == idx[j], "%s: row %lld, position %lld: index %g, "
                  "expected %lld", what, (long long)r, (long long)j, ir[r * k + j],
                  (long long)idx[j]);
            CHECK(same_value(vr[r * k + j], xr[r * n + idx[j]]), "%s: row %lld value %lld",
                  what, (long long)r, (long long)j);
        }
    }
    free(idx), free(xr), free(vr), free(ir);
}

static const tt_dtype all_dtypes[] = {TT_F32, TT_F64, TT_I64, TT_I32, TT_U8, TT_BOOL};

/* Sort = the stable reference for every dtype, dim, direction, with ties
 * (which exercise stability) and over a transposed input; the results
 * keep self's layout. Rows of 1 to 300 (the insertion runs and merges). */
START_TEST(test_sort_values)
{
    const int64_t shapes[][3] = {{3, 5, 4}, {2, 300, 3}, {1, 1, 37}};
    for (int di = 0; di < TT_TABLE_LEN(all_dtypes); di++)
        for (int s = 0; s < 3; s++)
            for (int vi = 0; vi < 2; vi++) {
                tt_tensor *x = made(3, shapes[s], all_dtypes[di], vi ? v_ties : v_distinct);
                tt_tensor *xt = NN(tt_transpose(x, 0, 2));
                for (int dim = 0; dim < 3; dim++)
                    for (int desc = 0; desc < 2; desc++)
                        for (int t = 0; t < 2; t++) {
                            const tt_tensor *in = t ? xt : x;
                            char what[96];
                            snprintf(what, sizeof what, "%s %lld dim %d desc %d %s",
                                     tt_dtype_name(all_dtypes[di]), (long long)shapes[s][1],
                                     dim, desc, t ? "transposed" : "");
                            tt_tensor *ix = NULL, *v = NN(tt_sort(in, dim, desc, &ix));
                            check_selection(in, dim, desc, tt_sizes(in)[dim], v, ix, what);
                            for (int d = 0; d < 3; d++)
                                CHECK(tt_strides(v)[d] == tt_strides(in)[d] &&
                                          tt_strides(ix)[d] == tt_strides(in)[d],
                                      "%s: stride %d", what, d);
                            tt_release(v), tt_release(ix);
                        }
                tt_release(xt), tt_release(x);
            }
}
END_TEST

/* Equal keys keep their order (stable=True), ascending and descending, in
 * rows long enough for several merge passes; argsort is sort's indices. */
START_TEST(test_sort_stable)
{
    tt_tensor *x = made(1, (int64_t[]){1000}, TT_I64, v_ties);
    for (int desc = 0; desc < 2; desc++) {
        tt_tensor *ix = NULL, *v = NN(tt_sort_stable(x, true, 0, desc, &ix));
        double *vv = tt_test_values(v), *iv = tt_test_values(ix);
        for (int i = 1; i < 1000; i++) {
            CHECK(desc ? vv[i - 1] >= vv[i] : vv[i - 1] <= vv[i], "order at %d", i);
            if (vv[i - 1] == vv[i])
                CHECK(iv[i - 1] < iv[i], "equal keys out of order at %d (desc %d)", i, desc);
        }
        tt_tensor *a = NN(tt_argsort(x, 0, desc));
        tt_test_assert_close(a, ix, 0, "argsort");
        free(vv), free(iv);
        tt_release(a), tt_release(v), tt_release(ix);
    }
    tt_release(x);
}
END_TEST

/* NaN is the largest value: last ascending, first descending (in their
 * order), the first NaN is max's and min's, topk picks NaN first when
 * largest and last when smallest. */
START_TEST(test_nan_placement)
{
    double w[8] = {1, NAN, 0, 1, NAN, -2, 2, 1};
    tt_tensor *x = NN(tt_from_data(1, (int64_t[]){8}, TT_F64, w));
    tt_tensor *ix = NULL, *v = NN(tt_sort(x, 0, false, &ix));
    double *iv = tt_test_values(ix);
    static const double asc[8] = {5, 2, 0, 3, 7, 6, 1, 4}, desc[8] = {1, 4, 6, 0, 3, 7, 2, 5};
    for (int i = 0; i < 8; i++)
        CHECK(iv[i] == asc[i], "ascending %d: %g", i, iv[i]);
    free(iv), tt_release(v), tt_release(ix);
    v = NN(tt_sort(x, 0, true, &ix));
    iv = tt_test_values(ix);
    for (int i = 0; i < 8; i++)
        CHECK(iv[i] == desc[i], "descending %d: %g", i, iv[i]);
    free(iv), tt_release(v), tt_release(ix);
    v = NN(tt_topk(x, 3, 0, true, true, &ix));
    iv = tt_test_values(ix);
    ck_assert(iv[0] == 1 && iv[1] == 4 && iv[2] == 6);
    free(iv), tt_release(v), tt_release(ix);
    v = NN(tt_topk(x, 7, 0, false, true, &ix));
    iv = tt_test_values(ix);
    ck_assert(iv[0] == 5 && iv[5] == 6 && iv[6] == 1);
    free(iv), tt_release(v), tt_release(ix);
    for (int m = 0; m < 2; m++) {
        v = NN(m ? tt_max_dim(x, 0, false, &ix) : tt_min_dim(x, 0, false, &ix));
        ck_assert(isnan(*(double *)tt_data(v)) && *(int64_t *)tt_data(ix) == 1);
        tt_release(v), tt_release(ix);
    }
    tt_tensor *a = NN(tt_argmin(x, 0, false));
    ck_assert_int_eq(*(int64_t *)tt_data(a), 1);
    tt_release(a);
    tt_release(x);
}
END_TEST

/* topk = the stable sort's first k (the lower index first among equal
 * values), on both paths (a heap for small k, a sort for large), largest
 * and smallest, any dim, with ties. */
START_TEST(test_topk_values)
{
    const int64_t sizes[3] = {3, 200, 2};
    const int64_t ks[] = {0, 1, 5, 25, 26, 120, 200};
    for (int di = 0; di < 5; di++) /* bool: no topk */
        for (int vi = 0; vi < 2; vi++) {
            tt_tensor *x = made(3, sizes, all_dtypes[di], vi ? v_ties : v_distinct);
            for (int ki = 0; ki < TT_TABLE_LEN(ks); ki++)
                for (int largest = 0; largest < 2; largest++) {
                    char what[96];
                    snprintf(what, sizeof what, "%s k %lld largest %d ties %d",
                             tt_dtype_name(all_dtypes[di]), (long long)ks[ki], largest, vi);
                    tt_tensor *ix = NULL, *v = NN(tt_topk(x, ks[ki], 1, largest, true, &ix));
                    ck_assert(tt_is_contiguous(v) && tt_is_contiguous(ix));
                    check_selection(x, 1, largest, ks[ki], v, ix, what);
                    tt_release(v), tt_release(ix);
                }
            tt_release(x);
        }
}
END_TEST

/* max.dim and min.dim: the first extremum, keepdim or not, every dtype. */
START_TEST(test_max_min_values)
{
    for (int di = 0; di < TT_TABLE_LEN(all_dtypes); di++)
        for (int dim = 0; dim < 3; dim++)
            for (int m = 0; m < 2; m++)
                for (int keep = 0; keep < 2; keep++) {
                    tt_tensor *x = made(3, (int64_t[]){4, 3, 5}, all_dtypes[di], v_ties);
                    tt_tensor *ix = NULL;
                    tt_tensor *v = NN(m ? tt_max_dim(x, dim, keep, &ix)
                                        : tt_min_dim(x, dim, keep, &ix));
                    ck_assert_int_eq(tt_ndim(v), keep ? 3 : 2);
                    tt_tensor *vk = keep ? tt_retain(v) : NN(tt_unsqueeze(v, dim));
                    tt_tensor *ik = keep ? tt_retain(ix) : NN(tt_unsqueeze(ix, dim));
                    check_selection(x, dim, m, 1, vk, ik, "max/min");
                    if (all_dtypes[di] != TT_BOOL && !m) {
                        tt_tensor *a = NN(tt_argmin(x, dim, keep));
                        tt_test_assert_close(a, ix, 0, "argmin");
                        tt_release(a);
                    }
                    tt_release(vk), tt_release(ik), tt_release(v), tt_release(ix);
                    tt_release(x);
                }
    /* 0-dim: dim 0 or -1, the element itself */
    tt_tensor *s = NN(tt_scalar(2.5, TT_F32)), *ix = NULL;
    tt_tensor *v = NN(tt_max_dim(s, -1, false, &ix));
    ck_assert(tt_ndim(v) == 0 && *(float *)tt_data(v) == 2.5f && *(int64_t *)tt_data(ix) == 0);
    tt_release(v), tt_release(ix), tt_release(s);
}
END_TEST

/* kthvalue = the stable sort's k-th (quickselect over the order by key
 * then index), on rows with ties and long rows; median.dim its lower
 * median, or the row's first NaN. */
START_TEST(test_kthvalue_median)
{
    const int64_t lens[] = {1, 2, 7, 40, 1001};
    for (int di = 0; di < 5; di++)
        for (int li = 0; li < TT_TABLE_LEN(lens); li++)
            for (int vi = 0; vi < 2; vi++) {
                int64_t n = lens[li];
                tt_tensor *x = made(2, (int64_t[]){2, n}, all_dtypes[di], vi ? v_ties : v_distinct);
                int64_t ks[] = {1, (n + 1) / 2, n};
                for (int ki = 0; ki < 3; ki++) {
                    tt_tensor *ix = NULL, *v = NN(tt_kthvalue(x, ks[ki], 1, true, &ix));
                    /* the k-th of the stable sort: its first k, last one */
                    tt_tensor *si = NULL;
                    tt_tensor *srt = NN(tt_sort_stable(x, true, 1, false, &si));
                    tt_tensor *nv = NN(tt_narrow(srt, 1, ks[ki] - 1, 1));
                    tt_tensor *ni = NN(tt_narrow(si, 1, ks[ki] - 1, 1));
                    tt_test_assert_close(v, nv, 0, "kthvalue values");
                    tt_test_assert_close(ix, ni, 0, "kthvalue indices");
                    tt_release(nv), tt_release(ni), tt_release(srt), tt_release(si);
                    tt_release(v), tt_release(ix);
                }
                tt_tensor *ix = NULL, *v = NN(tt_median_dim(x, 1, false, &ix));
                tt_tensor *kv = NULL, *kv_v = NN(tt_kthvalue(x, (n + 1) / 2, 1, false, &kv));
                tt_test_assert_close(v, kv_v, 0, "median.dim");
                tt_test_assert_close(ix, kv, 0, "median.dim indices");
                tt_tensor *m = NN(tt_median(x)), *flat = NN(tt_reshape(x, 1, (int64_t[]){2 * n}));
                tt_tensor *mk = NN(tt_kthvalue(flat, (2 * n + 1) / 2, 0, false, NULL));
                tt_test_assert_close(m, mk, 0, "median()");
                tt_release(m), tt_release(flat), tt_release(mk);
                tt_release(v), tt_release(ix), tt_release(kv), tt_release(kv_v), tt_release(x);
            }
    /* NaN: largest for kthvalue; median's answer when present (the first) */
    double w[6] = {3, NAN, 1, NAN, 2, 0};
    tt_tensor *x = NN(tt_from_data(1, (int64_t[]){6}, TT_F64, w)), *ix = NULL;
    tt_tensor *v = NN(tt_kthvalue(x, 4, 0, false, &ix));
    ck_assert(*(double *)tt_data(v) == 3 && *(int64_t *)tt_data(ix) == 0);
    tt_release(v), tt_release(ix);
    v = NN(tt_kthvalue(x, 6, 0, false, &ix));
    ck_assert(isnan(*(double *)tt_data(v)) && *(int64_t *)tt_data(ix) == 3);
    tt_release(v), tt_release(ix);
    v = NN(tt_median_dim(x, 0, false, &ix));
    ck_assert(isnan(*(double *)tt_data(v)) && *(int64_t *)tt_data(ix) == 1);
    tt_release(v), tt_release(ix);
    v = NN(tt_median(x));
    ck_assert(isnan(*(double *)tt_data(v)));
    tt_release(v), tt_release(x);
    /* an empty float tensor's median is NaN */
    x = NN(tt_zeros(2, (int64_t[]){0, 3}, TT_F32));
    v = NN(tt_median(x));
    ck_assert(tt_ndim(v) == 0 && isnan(*(float *)tt_data(v)));
    tt_release(v), tt_release(x);
    /* median()'s gradient is shared by the elements equal to it */
    x = NN(tt_from_data(1, (int64_t[]){5}, TT_F64, (double[]){2, 1, 2, 3, 2}));
    OK(tt_set_requires_grad(x, true));
    v = NN(tt_median(x));
    OK(tt_backward(v, NULL));
    tt_tensor *g = NN(tt_get_grad(x));
    double *gv = tt_test_values(g);
    for (int i = 0; i < 5; i++)
        CHECK(fabs(gv[i] - (i == 0 || i == 2 || i == 4 ? 1.0 / 3 : 0)) < 1e-15, "grad %d", i);
    free(gv), tt_release(g), tt_release(v), tt_release(x);
}
END_TEST

/* ------------------------------------------------- scans and products */

/* Scans of many rows run SCAN_LANES rows side by side (sort_scan.c): 11
 * rows (two blocks and a tail) of 301, f32 accumulated in double as
 * PyTorch's CPU kernel, each element bit for bit a serial loop's. */
START_TEST(test_scan_rows_side_by_side)
{
    const tt_dtype dts[3] = {TT_F32, TT_F64, TT_I64};
    for (int di = 0; di < 3; di++)
        for (int m = 0; m < 2; m++) {
            tt_dtype dt = dts[di];
            tt_manual_seed(11);
            tt_tensor *r = NN(tt_randn(TT_SHAPE(11, 301), TT_F64));
            tt_tensor *s = NN(tt_mul_scalar(r, dt == TT_I64 ? 3 : m ? 0.2 : 1));
            tt_tensor *e = m ? NN(tt_exp(s)) : tt_retain(s); /* products near 1 */
            tt_tensor *x = NN(tt_to_dtype(e, dt));
            tt_tensor *y = NN(m ? tt_cumprod(x, 1) : tt_cumsum(x, 1));
            double *xv = tt_test_values(x), *yv = tt_test_values(y);
            for (int64_t row = 0; row < 11; row++) {
                double a = m ? 1 : 0;
                int64_t ia = m ? 1 : 0;
                for (int64_t i = 0; i < 301; i++) {
                    double v = xv[row * 301 + i];
                    double want;
                    if (dt == TT_I64) {
                        ia = m ? (int64_t)((uint64_t)ia * (uint64_t)(int64_t)v)
                               : (int64_t)((uint64_t)ia + (uint64_t)(int64_t)v);
                        want = (double)ia;
                    } else {
                        a = m ? a * v : a + v;
                        want = dt == TT_F32 ? (double)(float)a : a;
                    }
                    CHECK(yv[row * 301 + i] == want, "%s %s [%lld, %lld]: %.17g vs %.17g",
                          tt_dtype_name(dt), m ? "cumprod" : "cumsum", (long long)row,
                          (long long)i, yv[row * 301 + i], want);
                }
            }
            free(xv), free(yv);
            tt_release(y), tt_release(x), tt_release(e), tt_release(s), tt_release(r);
        }
}
END_TEST

/* f32 cumsum larger than the last-level cache (its result streamed
 * around the cache, eight rows a vector), bit for bit a serial double
 * loop's. */
START_TEST(test_scan_streamed_rows)
{
    int64_t rows = 16, n = tt_test_last_level_cache_bytes() / (8 * 16) * 2;
    n = (n + 7) & ~(int64_t)7;
    tt_manual_seed(3);
    tt_tensor *x = NN(tt_randn(TT_SHAPE(rows, n), TT_F32));
    tt_tensor *y = NN(tt_cumsum(x, 1));
    const float *xv = tt_data(x), *yv = tt_data(y);
    int64_t bad = -1;
    for (int64_t r = 0; r < rows && bad < 0; r++) {
        double a = 0;
        for (int64_t i = 0; i < n && bad < 0; i++) {
            a += (double)xv[r * n + i];
            if (yv[r * n + i] != (float)a)
                bad = r * n + i;
        }
    }
    ck_assert_msg(bad < 0, "element %lld differs from the serial sum", (long long)bad);
    tt_release(y), tt_release(x);
}
END_TEST

/* cumsum, cumprod, prod: every dtype against a loop (integers and bool give
 * i64; a dtype casts first); logsumexp: against the naive formula, with
 * rows of -inf, +inf and NaN. */
START_TEST(test_scan_values)
{
    for (int di = 0; di < TT_TABLE_LEN(all_dtypes); di++) {
        tt_dtype dt = all_dtypes[di];
        tt_tensor *x = made(2, (int64_t[]){3, 5}, dt, v_ties);
        tt_tensor *xt = NN(tt_transpose(x, 0, 1)); /* [5, 3] */
        double *xv = tt_test_values(xt);
        tt_dtype want = tt_dtype_is_float(dt) ? dt : TT_I64;
        for (int m = 0; m < 2; m++) {
            tt_tensor *y = NN(m ? tt_cumprod(xt, 0) : tt_cumsum(xt, 0));
            ck_assert_int_eq(tt_dtype_of(y), want);
            ck_assert(tt_is_contiguous(y));
            double *yv = tt_test_values(y);
            for (int c = 0; c < 3; c++) {
                double a = m ? 1 : 0;
                for (int r = 0; r < 5; r++) {
                    a = m ? a * xv[r * 3 + c] : a + xv[r * 3 + c];
                    CHECK(yv[r * 3 + c] == a, "%s %s [%d, %d]: %g, expected %g",
                          tt_dtype_name(dt), m ? "cumprod" : "cumsum", r, c, yv[r * 3 + c], a);
                }
            }
            free(yv), tt_release(y);
        }
        tt_tensor *p = NN(tt_prod_dim(xt, 1, true));
        ck_assert_int_eq(tt_dtype_of(p), want);
        double *pv = tt_test_values(p);
        for (int r = 0; r < 5; r++)
            CHECK(pv[r] == xv[r * 3] * xv[r * 3 + 1] * xv[r * 3 + 2], "%s prod row %d",
                  tt_dtype_name(dt), r);
        free(pv), tt_release(p);
        free(xv), tt_release(xt), tt_release(x);
    }
    /* a dtype: the input is cast first (1.5 + 2.75 in i32 is 1 + 2) */
    tt_tensor *f = NN(tt_from_data(1, (int64_t[]){2}, TT_F64, (double[]){1.5, 2.75}));
    tt_tensor *c = NN(tt_cumsum_dtype(f, 0, TT_I32));
    ck_assert(tt_dtype_of(c) == TT_I32 && ((int32_t *)tt_data(c))[1] == 3);
    tt_release(c), tt_release(f);
    /* logsumexp: -inf rows give -inf, +inf gives +inf, NaN propagates */
    double w[12] = {-INFINITY, -INFINITY, -INFINITY, 1, INFINITY, 2,
                    1000, 1000.5, -3, 0.5, NAN, 1};
    tt_tensor *x = NN(tt_from_data(2, (int64_t[]){4, 3}, TT_F64, w));
    tt_tensor *l = NN(tt_logsumexp(x, 1, (const int64_t[]){-1}, false));
    double *lv = tt_test_values(l);
    ck_assert(isinf(lv[0]) && lv[0] < 0);
    ck_assert(isinf(lv[1]) && lv[1] > 0);
    ck_assert(fabs(lv[2] - (1000.5 + log(exp(-0.5) + 1 + exp(-1003.5)))) < 1e-12);
    ck_assert(isnan(lv[3]));
    free(lv), tt_release(l), tt_release(x);
    /* logcumsumexp: no overflow, -inf until a finite value, +inf after one */
    double u[5] = {-INFINITY, -INFINITY, 1000, INFINITY, 2};
    x = NN(tt_from_data(1, (int64_t[]){5}, TT_F64, u));
    l = NN(tt_logcumsumexp(x, 0));
    lv = tt_test_values(l);
    ck_assert(isinf(lv[0]) && lv[0] < 0 && isinf(lv[1]) && lv[1] < 0);
    ck_assert(lv[2] == 1000 && isinf(lv[3]) && lv[3] > 0 && isinf(lv[4]) && lv[4] > 0);
    free(lv), tt_release(l), tt_release(x);
    /* integers give f32 */
    tt_tensor *i = made(2, (int64_t[]){2, 3}, TT_I64, v_ties);
    l = NN(tt_logsumexp(i, 0, NULL, false));
    ck_assert(tt_dtype_of(l) == TT_F32 && tt_ndim(l) == 0);
    tt_release(l), tt_release(i);
}
END_TEST

/* ------------------------------------------------------------ gradients */

typedef tt_test_model model_fn;

static tt_tensor *m_sort(tt_tensor *x) { return tt_sort(x, 1, false, NULL); }
static tt_tensor *m_sort_desc(tt_tensor *x) { return tt_sort_stable(x, true, 0, true, NULL); }
static tt_tensor *m_topk(tt_tensor *x) { return tt_topk(x, 2, 1, true, true, NULL); }
static tt_tensor *m_topk_small(tt_tensor *x) { return tt_topk(x, 1, -1, false, true, NULL); }
static tt_tensor *m_max(tt_tensor *x) { return tt_max_dim(x, 1, false, NULL); }
static tt_tensor *m_min_keep(tt_tensor *x) { return tt_min_dim(x, 0, true, NULL); }
static tt_tensor *m_kthvalue(tt_tensor *x) { return tt_kthvalue(x, 3, 1, false, NULL); }
static tt_tensor *m_median_dim(tt_tensor *x) { return tt_median_dim(x, 0, true, NULL); }
static tt_tensor *m_median(tt_tensor *x) { return tt_median(x); }
static tt_tensor *m_cumsum(tt_tensor *x) { return tt_cumsum(x, 1); }
static tt_tensor *m_cumsum_f64(tt_tensor *x) { return tt_cumsum_dtype(x, 0, TT_F64); }
static tt_tensor *m_cumprod(tt_tensor *x) { return tt_cumprod(x, 1); }
static tt_tensor *m_cumprod0(tt_tensor *x) { return tt_cumprod(x, 0); }
static tt_tensor *m_logcumsumexp(tt_tensor *x) { return tt_logcumsumexp(x, 1); }
static tt_tensor *m_logcumsumexp0(tt_tensor *x) { return tt_logcumsumexp(x, -2); }
static tt_tensor *m_logsumexp(tt_tensor *x)
{
    return tt_logsumexp(x, 1, (const int64_t[]){1}, false);
}
static tt_tensor *m_logsumexp_all(tt_tensor *x)
{
    return tt_logsumexp(x, 2, (const int64_t[]){1, 0}, true);
}
static tt_tensor *m_prod(tt_tensor *x) { return tt_prod_dim(x, 1, false); }
static tt_tensor *m_prod_keep(tt_tensor *x) { return tt_prod_dim(x, 0, true); }
/* prod() over 24 elements grows large: a quarter of them */
static tt_tensor *m_prod_all(tt_tensor *x)
{
    tt_tensor *q = tt_mul_scalar(x, 0.25), *r = q ? tt_prod(q) : NULL;
    tt_release(q);
    return r;
}

static const struct {
    const char *name;
    model_fn fn;
} models[] = {
    {"sort", m_sort},
    {"sort descending", m_sort_desc},
    {"topk", m_topk},
    {"topk smallest", m_topk_small},
    {"max.dim", m_max},
    {"min.dim keepdim", m_min_keep},
    {"kthvalue", m_kthvalue},
    {"median.dim", m_median_dim},
    {"median", m_median},
    {"cumsum", m_cumsum},
    {"cumsum dtype", m_cumsum_f64},
    {"cumprod", m_cumprod},
    {"cumprod dim 0", m_cumprod0},
    {"logcumsumexp", m_logcumsumexp},
    {"logcumsumexp dim 0", m_logcumsumexp0},
    {"logsumexp", m_logsumexp},
    {"logsumexp two dims", m_logsumexp_all},
    {"prod.dim_int", m_prod},
    {"prod.dim_int keepdim", m_prod_keep},
    {"prod", m_prod_all},
};

/* cumprod's and prod's gradients where the input has one zero and two
 * zeros in a row (PyTorch's special cases). */
START_TEST(test_gradcheck_zeros)
{
    static const double v[18] = {0.5, 0, 2, -1.5, 3, 0.75, /* one zero */
                                 1.25, 0, -2, 0, 0.5, 2,   /* two */
                                 0, -0.5, 1.5, 2.5, -1, 0}; /* first and last */
    model_fn ms[] = {m_cumprod, m_prod, m_prod_keep, m_cumprod0, m_prod_all};
    for (int i = 0; i < TT_TABLE_LEN(ms); i++) {
        tt_tensor *x = NN(tt_from_data(2, (int64_t[]){3, 6}, TT_F64, v));
        OK(tt_set_requires_grad(x, true));
        tt_status st = tt_gradcheck(tt_test_value, 1, &x, 1, NULL, &ms[i]);
        ck_assert_msg(st == TT_OK, "model %d: %s", i, tt_errmsg());
        tt_release(x);
    }
}
END_TEST

/* Every derivative against finite differences, contiguous and transposed. */
START_TEST(test_gradcheck)
{
    model_fn m = models[_i].fn;
    for (int t = 0; t < 2; t++) {
        /* t: a transposed leaf, the view of a contiguous [6, 4] */
        tt_tensor *b = scrambled(2, t ? (int64_t[]){6, 4} : (int64_t[]){4, 6}, TT_F64);
        tt_tensor *x = t ? NN(tt_transpose(b, 0, 1)) : tt_retain(b);
        OK(tt_set_requires_grad(x, true));
        tt_status st = tt_gradcheck(tt_test_value, 1, &x, 1, NULL, &m);
        ck_assert_msg(st == TT_OK, "%s (%d): %s", models[_i].name, t, tt_errmsg());
        tt_release(x), tt_release(b);
    }
}
END_TEST

/* A symbolic trace compiled once runs inputs of two shapes: forward and
 * backward equal eager. */
START_TEST(test_compiled_equals_eager)
{
    model_fn m = models[_i].fn;
    tt_compiled *c = NN(tt_compile(tt_test_value_and_grad, 1, 2,
                                   &(tt_trace_opts){.mode = TT_TRACE_SYMBOLIC, .ud = &m,
                                                    .ud_constant = true, .fullgraph = true}));
    const int64_t shapes[2][2] = {{4, 6}, {5, 9}};
    for (int k = 0; k < 2; k++) {
        tt_tensor *x = scrambled(2, shapes[k], TT_F64);
        OK(tt_set_requires_grad(x, true));
        tt_test_compiled_equals_eager(c, m, x, 0, models[_i].name, k);
        tt_release(x);
    }
    tt_clear_error();
    tt_compiled_free(c);
    ck_assert_msg(tt_errcode() == TT_OK, "%s: freeing the plan: %s", models[_i].name,
                  tt_errmsg());
}
END_TEST

/* A symbolic size along a dim the op does not select on flows into the
 * results (fake path); topk's k may be a symbol bounded by the dim. */
START_TEST(test_symbolic_sizes)
{
    tt_sym_reset();
    tt_size b = tt_sym_new("s", 7), n = tt_sym_new("s", 9);
    tt_tensor *x = NN(tt_fake_empty(2, (tt_size[]){b, 5}, TT_F32));
    tt_tensor *ix = NULL, *v = NN(tt_sort(x, 1, false, &ix));
    ck_assert(tt_is_fake(v) && tt_sizes(v)[0] == b && tt_sizes(ix)[0] == b);
    ck_assert_int_eq(tt_dtype_of(ix), TT_I64);
    tt_release(v), tt_release(ix);
    v = NN(tt_topk(x, 3, 1, true, true, &ix));
    ck_assert(tt_sizes(v)[0] == b && tt_sizes(v)[1] == 3);
    tt_release(v), tt_release(ix);
    v = NN(tt_max_dim(x, 1, false, &ix));
    ck_assert(tt_ndim(v) == 1 && tt_sizes(v)[0] == b && tt_sizes(ix)[0] == b);
    tt_release(v), tt_release(ix);
    tt_tensor *y = NN(tt_fake_empty(2, (tt_size[]){3, n}, TT_F64));
    v = NN(tt_topk(y, 4, 1, false, true, &ix));
    ck_assert(tt_sizes(v)[0] == 3 && tt_sizes(v)[1] == 4);
    tt_release(v), tt_release(ix);
    /* k may be a size itself: the whole symbolic dim */
    v = NN(tt_topk(y, n, 1, true, true, &ix));
    ck_assert(tt_sizes(v)[1] == n && tt_sizes(ix)[1] == n);
    tt_release(v), tt_release(ix);
    /* the scans, kthvalue and the reductions keep a symbolic size too */
    v = NN(tt_cumsum(x, 1));
    ck_assert(tt_sizes(v)[0] == b && tt_sizes(v)[1] == 5);
    tt_release(v);
    v = NN(tt_logcumsumexp(y, 0));
    ck_assert(tt_sizes(v)[1] == n);
    tt_release(v);
    v = NN(tt_logsumexp(x, 1, (const int64_t[]){1}, true));
    ck_assert(tt_sizes(v)[0] == b && tt_sizes(v)[1] == 1);
    tt_release(v);
    v = NN(tt_prod_dim(y, 0, false));
    ck_assert(tt_ndim(v) == 1 && tt_sizes(v)[0] == n);
    tt_release(v);
    v = NN(tt_kthvalue(x, 2, 1, false, &ix));
    ck_assert(tt_ndim(v) == 1 && tt_sizes(v)[0] == b && tt_sizes(ix)[0] == b);
    tt_release(v), tt_release(ix);
    tt_release(y), tt_release(x);
    tt_sym_reset();
}
END_TEST

/* --------------------------------------------------------------- errors */

static tt_tensor *E, *EB, *EE, *EEI; /* f32 [2, 3]; bool [3]; f32 and i64 [0, 3] */

static void errors_setup(void)
{
    tt_test_setup();
    E = scrambled(2, (int64_t[]){2, 3}, TT_F32);
    EB = NN(tt_zeros(1, (int64_t[]){3}, TT_BOOL));
    EE = NN(tt_zeros(2, (int64_t[]){0, 3}, TT_F32));
    EEI = NN(tt_zeros(2, (int64_t[]){0, 3}, TT_I64));
}

static void errors_teardown(void)
{
    tt_release(E), tt_release(EB), tt_release(EE), tt_release(EEI);
    E = EB = EE = EEI = NULL;
    tt_test_teardown();
}

static tt_tensor *vsr(tt_tensor *g, int64_t dim, tt_tensor *ix, int n, const int64_t *sz)
{
    return tt_call(tt_op_find("tt::value_selecting_reduction_backward"), tt_v_tensor(g),
                   tt_v_int(dim), tt_v_tensor(ix), tt_v_ints(n, sz), tt_v_bool(true));
}

static tt_tensor *vsr_bad_index(void)
{
    tt_tensor *g = NN(tt_ones(2, (int64_t[]){2, 1}, TT_F32));
    tt_tensor *ix = NN(tt_full(2, (int64_t[]){2, 1}, 3, TT_I64));
    tt_tensor *r = vsr(g, 1, ix, 2, (const int64_t[]){2, 3});
    tt_release(g), tt_release(ix);
    return r;
}

static tt_tensor *vsr_bad_shape(void)
{
    tt_tensor *g = NN(tt_ones(2, (int64_t[]){2, 1}, TT_F32));
    tt_tensor *ix = NN(tt_zeros(2, (int64_t[]){2, 2}, TT_I64));
    tt_tensor *r = vsr(g, 1, ix, 2, (const int64_t[]){2, 3});
    tt_release(g), tt_release(ix);
    return r;
}

#define SORT_ERRORS(X)                                                                          \
    X(sort_dim, tt_sort(E, 2, false, NULL), TT_EINVAL, "tt::sort: argument 'dim' (#2)",         \
      "range of [-2, 1], but got 2")                                                            \
    X(sort_stable_dim, tt_sort_stable(E, true, -3, false, NULL), TT_EINVAL,                     \
      "tt::sort: argument 'dim' (#3)")                                                          \
    X(argsort_dim, tt_argsort(E, 5, false), TT_EINVAL, "tt::sort: argument 'dim'")              \
    X(topk_k_big, tt_topk(E, 4, 1, true, true, NULL), TT_EINVAL, "tt::topk: argument 'k' (#2)", \
      "selected index k out of range (k is 4, dim 1 has size 3)")                               \
    X(topk_k_negative, tt_topk(E, -1, 0, true, true, NULL), TT_EINVAL,                          \
      "selected index k out of range (k is -1")                                                 \
    X(topk_dim, tt_topk(E, 1, 2, true, true, NULL), TT_EINVAL, "tt::topk: argument 'dim' (#3)") \
    X(topk_bool, tt_topk(EB, 1, 0, true, true, NULL), TT_EDTYPE, "tt::topk: argument 'self'",   \
      "bool")                                                                                   \
    X(max_dim, tt_max_dim(E, -3, false, NULL), TT_EINVAL, "tt::max: argument 'dim' (#2)")       \
    X(min_empty, tt_min_dim(EE, 0, false, NULL), TT_EINVAL, "tt::min: argument 'self' (#1)",    \
      "Expected reduction dim 0 to have non-zero size")                                         \
    X(argmin_bool, tt_argmin(EB, 0, false), TT_EDTYPE, "tt::argmin: argument 'self'", "bool")   \
    X(argmin_dim, tt_argmin(E, 7, false), TT_EINVAL, "tt::argmin: argument 'dim' (#2)")         \
    X(argmin_empty, tt_argmin(EE, 0, true), TT_EINVAL, "non-zero size")                         \
    X(vsr_index, vsr_bad_index(), TT_EINVAL,                                                    \
      "tt::value_selecting_reduction_backward: argument 'indices' (#3): index 3 is out of "     \
      "bounds for dim 1 of size 3")                                                             \
    X(vsr_shape, vsr_bad_shape(), TT_ESHAPE,                                                    \
      "tt::value_selecting_reduction_backward: argument 'grad' (#1)", "does not fit")          \
    X(kthvalue_zero, tt_kthvalue(E, 0, 1, false, NULL), TT_EINVAL,                              \
      "tt::kthvalue: argument 'k' (#2): selected number k out of range for dimension 1")       \
    X(kthvalue_big, tt_kthvalue(E, 4, -1, false, NULL), TT_EINVAL, "(k is 4)")                  \
    X(kthvalue_dim, tt_kthvalue(E, 1, 2, false, NULL), TT_EINVAL,                               \
      "tt::kthvalue: argument 'dim' (#3)")                                                      \
    X(kthvalue_bool, tt_kthvalue(EB, 1, 0, false, NULL), TT_EDTYPE, "tt::kthvalue", "bool")     \
    X(median_empty_dim, tt_median_dim(EE, 0, false, NULL), TT_EINVAL,                           \
      "tt::median: argument 'self' (#1): Expected reduction dim 0 to have non-zero size")      \
    X(median_dim, tt_median_dim(E, 3, false, NULL), TT_EINVAL, "tt::median: argument 'dim' (#2)") \
    X(median_bool, tt_median(EB), TT_EDTYPE, "tt::median: argument 'self' (#1)", "bool")        \
    X(median_empty_int, tt_median(EEI), TT_EINVAL, "the median of an empty i64 tensor")         \
    X(cumsum_dim, tt_cumsum(E, 2), TT_EINVAL, "tt::cumsum: argument 'dim' (#2)")                 \
    X(cumsum_bool, tt_cumsum_dtype(E, 0, TT_BOOL), TT_EDTYPE, "tt::cumsum: argument 'dtype'",  \
      "bool")                                                                                   \
    X(logcumsumexp_int, tt_logcumsumexp(EEI, 0), TT_EDTYPE,                                     \
      "tt::logcumsumexp: argument 'self' (#1): expected f32 or f64, got i64")                  \
    X(logcumsumexp_dim, tt_logcumsumexp(E, 2), TT_EINVAL, "tt::logcumsumexp: argument 'dim'")   \
    X(cumprod_dim, tt_cumprod(E, -3), TT_EINVAL, "tt::cumprod: argument 'dim' (#2)")            \
    X(logsumexp_dup, tt_logsumexp(E, 2, (const int64_t[]){1, -1}, false), TT_EINVAL,            \
      "tt::logsumexp: argument 'dim' (#2): dim 1 appears multiple times")                      \
    X(logsumexp_dim, tt_logsumexp(E, 1, (const int64_t[]){2}, false), TT_EINVAL,               \
      "tt::logsumexp: argument 'dim' (#2)")                                                     \
    X(prod_dim, tt_prod_dim(E, 2, false), TT_EINVAL, "tt::prod: argument 'dim' (#2)")           \
    X(cumprod_backward_shape,                                                                   \
      tt_call(tt_op_find("tt::cumprod_backward"), tt_v_tensor(EB), tt_v_tensor(E), tt_v_int(0), \
              tt_v_tensor(E)),                                                                  \
      TT_ESHAPE, "tt::cumprod_backward: argument 'grad' (#1): expected shape [2, 3]")          \
    X(prod_backward_dtype,                                                                      \
      tt_call(tt_op_find("tt::prod_backward"), tt_v_tensor(E), tt_v_tensor(EB), tt_v_tensor(E), \
              tt_v_ints(0, NULL), tt_v_bool(false)),                                            \
      TT_EDTYPE, "tt::prod_backward: argument 'self' (#2): expected f32 or f64, got bool")

TT_ERROR_TABLE(SORT_ERRORS, sort_errors);

START_TEST(test_errors) { tt_test_run_error_case(&sort_errors[_i], _i); }
END_TEST

static Suite *sort_suite(void)
{
    Suite *s = suite_create("ops_sort");
    TCase *tc = tt_tcase("selection");
    tcase_add_test(tc, test_sort_values);
    tcase_add_test(tc, test_sort_stable);
    tcase_add_test(tc, test_nan_placement);
    tcase_add_test(tc, test_topk_values);
    tcase_add_test(tc, test_max_min_values);
    tcase_add_test(tc, test_symbolic_sizes);
    tcase_add_test(tc, test_kthvalue_median);
    tcase_add_test(tc, test_scan_values);
    tcase_add_test(tc, test_scan_rows_side_by_side);
    tcase_add_test(tc, test_scan_streamed_rows);
    tcase_add_test(tc, test_gradcheck_zeros);
    suite_add_tcase(s, tc);
    tc = tt_tcase("every derivative");
    tcase_add_loop_test(tc, test_gradcheck, 0, TT_TABLE_LEN(models));
    tcase_add_loop_test(tc, test_compiled_equals_eager, 0, TT_TABLE_LEN(models));
    suite_add_tcase(s, tc);
    tc = tt_tcase_with("errors", errors_setup, errors_teardown);
    tcase_add_loop_test(tc, test_errors, 0, TT_TABLE_LEN(sort_errors));
    suite_add_tcase(s, tc);
    return s;
}

TT_TEST_MAIN(sort_suite)
