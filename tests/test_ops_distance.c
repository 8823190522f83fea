/* The pairwise-distance ops (ops/distance.c): _cdist_forward and
 * _pdist_forward against plain loops for every kind of p, both dtypes and
 * strided or broadcast inputs; the matrix-product form of p = 2; every
 * derivative gradchecked; every error's status and message; traced and
 * compiled forward and backward equal to eager; symbolic sizes through the
 * fake kernels. */
#include "tt_test.h"

static const double ps[] = {0.0, 0.5, 1.0, 1.5, 2.0, 3.5, INFINITY};

/* Distinct values, scrambled; the sine keeps the entries of a row
 * difference apart (p = inf's max has no tie to within 1e-3). */
static tt_tensor *scrambled(int nd, const int64_t *sizes, tt_dtype dt, int seed)
{
    int64_t n = 1;
    for (int d = 0; d < nd; d++)
        n *= sizes[d];
    double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++)
        v[i] = (double)(((i + seed) * 7919) % (n * 2 + 1)) / (double)(n + 3) -
               0.37 * (double)seed + 0.05 * sin(1.7 * (double)i + (double)seed);
    tt_tensor *t = NN(tt_from_data(nd, sizes, TT_F64, v));
    free(v);
    tt_tensor *r = NN(tt_to_dtype(t, dt));
    tt_release(t);
    return r;
}

/* The p-norm of a - b over m entries, in double. */
static double ref_dist(const double *a, const double *b, int64_t m, double p)
{
    double s = 0;
    for (int64_t k = 0; k < m; k++) {
        double d = fabs(a[k] - b[k]);
        if (p == 0)
            s += d != 0;
        else if (isinf(p))
            s = fmax(s, d);
        else
            s += pow(d, p);
    }
    return p == 0 || isinf(p) ? s : pow(s, 1 / p);
}

static void assert_near(double got, double want, double tol, const char *what, int64_t i)
{
    ck_assert_msg(fabs(got - want) <= tol * fmax(1, fabs(want)), "%s: element %lld: %.12g vs %.12g",
                  what, (long long)i, got, want);
}

/* ------------------------------------------------------------ values */

/* x1 [2, 3, 4] (a transposed view) and x2 [1, 5, 4] (broadcast over the
 * batch) against a plain loop, every p, both dtypes, both modes that keep
 * the direct loop. */
START_TEST(test_cdist_values)
{
    tt_dtype dts[] = {TT_F32, TT_F64};
    for (int t = 0; t < 2; t++)
        for (int k = 0; k < TT_TABLE_LEN(ps); k++) {
            tt_tensor *b1 = scrambled(3, (int64_t[]){2, 4, 3}, dts[t], 1);
            tt_tensor *x1 = NN(tt_transpose(b1, 1, 2));
            tt_tensor *x2 = scrambled(3, (int64_t[]){1, 5, 4}, dts[t], 2);
            tt_tensor *y = NN(tt_cdist(x1, x2, ps[k]));
            ck_assert_int_eq(tt_ndim(y), 3);
            ck_assert(tt_sizes(y)[0] == 2 && tt_sizes(y)[1] == 3 && tt_sizes(y)[2] == 5);
            ck_assert(tt_is_contiguous(y) && tt_dtype_of(y) == dts[t]);
            double *a = tt_test_values(x1), *b = tt_test_values(x2), *v = tt_test_values(y);
            char what[64];
            snprintf(what, sizeof what, "cdist %s p=%g", tt_dtype_name(dts[t]), ps[k]);
            for (int64_t n = 0; n < 2; n++)
                for (int64_t i = 0; i < 3; i++)
                    for (int64_t j = 0; j < 5; j++)
                        assert_near(v[(n * 3 + i) * 5 + j],
                                    ref_dist(a + (n * 3 + i) * 4, b + j * 4, 4, ps[k]),
                                    dts[t] == TT_F32 ? 1e-5 : 1e-12, what, (n * 3 + i) * 5 + j);
            free(a), free(b), free(v);
            tt_release(y);
            /* compute_mode 2 never takes the product form: the same values */
            tt_tensor *y2 = NN(tt_cdist_ex(x1, x2, ps[k], 2));
            tt_tensor *y0 = NN(tt_cdist_ex(x1, x2, ps[k], 0));
            tt_test_assert_close(y2, y0, 0, what);
            tt_release(y2), tt_release(y0);
            tt_release(x1), tt_release(x2), tt_release(b1);
        }
}
END_TEST

/* p = 2 with P > 25 (or compute_mode 1) takes the matrix-product form:
 * the same distances to its rounding, 0 (not NaN) for equal rows. */
START_TEST(test_cdist_matrix_product)
{
    tt_dtype dts[] = {TT_F32, TT_F64};
    for (int t = 0; t < 2; t++) {
        tt_tensor *x1 = scrambled(3, (int64_t[]){2, 30, 5}, dts[t], 3);
        tt_tensor *x2 = scrambled(2, (int64_t[]){7, 5}, dts[t], 4);
        tt_tensor *mm = NN(tt_cdist(x1, x2, 2.0)), *mm1 = NN(tt_cdist_ex(x1, x2, 2.0, 1));
        tt_tensor *loop = NN(tt_cdist_ex(x1, x2, 2.0, 2));
        double tol = dts[t] == TT_F32 ? 1e-4 : 1e-10;
        tt_test_assert_close(mm, loop, tol, "product form, mode None");
        tt_test_assert_close(mm1, loop, tol, "product form, mode 1");
        tt_release(mm), tt_release(mm1), tt_release(loop);
        /* equal rows: the clamp keeps a rounding below 0 from a NaN */
        tt_tensor *same = NN(tt_cdist(x1, x1, 2.0));
        double *v = tt_test_values(same);
        for (int n = 0; n < 2; n++)
            for (int i = 0; i < 30; i++) {
                double d = v[(n * 30 + i) * 30 + i];
                ck_assert_msg(d >= 0 && d < (dts[t] == TT_F32 ? 3e-3 : 1e-7), "diagonal %g", d);
            }
        free(v);
        tt_release(same);
        tt_release(x1), tt_release(x2);
    }
}
END_TEST

/* Rows i < j in order, any strides, every p. */
START_TEST(test_pdist_values)
{
    tt_dtype dts[] = {TT_F32, TT_F64};
    for (int t = 0; t < 2; t++)
        for (int k = 0; k < TT_TABLE_LEN(ps); k++) {
            tt_tensor *b = scrambled(2, (int64_t[]){3, 6}, dts[t], 5);
            tt_tensor *x = NN(tt_transpose(b, 0, 1));
            tt_tensor *y = NN(tt_pdist(x, ps[k]));
            ck_assert(tt_ndim(y) == 1 && tt_sizes(y)[0] == 15);
            double *a = tt_test_values(x), *v = tt_test_values(y);
            char what[64];
            snprintf(what, sizeof what, "pdist %s p=%g", tt_dtype_name(dts[t]), ps[k]);
            int64_t q = 0;
            for (int64_t i = 0; i < 6; i++)
                for (int64_t j = i + 1; j < 6; j++, q++)
                    assert_near(v[q], ref_dist(a + i * 3, a + j * 3, 3, ps[k]),
                                dts[t] == TT_F32 ? 1e-5 : 1e-12, what, q);
            free(a), free(v);
            tt_release(y), tt_release(x), tt_release(b);
        }
}
END_TEST

/* Empty operands: an empty result, or zeros when M = 0. */
START_TEST(test_empty)
{
    tt_tensor *a = NN(tt_zeros(TT_SHAPE(0, 4), TT_F32)), *b = NN(tt_ones(TT_SHAPE(3, 4), TT_F32));
    tt_tensor *y = NN(tt_cdist(a, b, 2.0));
    ck_assert(tt_sizes(y)[0] == 0 && tt_sizes(y)[1] == 3);
    tt_release(y), tt_release(a), tt_release(b);
    a = NN(tt_ones(TT_SHAPE(3, 0), TT_F64)), b = NN(tt_ones(TT_SHAPE(2, 0), TT_F64));
    y = NN(tt_cdist(a, b, 1.0));
    double *v = tt_test_values(y);
    ck_assert(tt_numel(y) == 6 && v[0] == 0 && v[5] == 0);
    free(v);
    tt_release(y);
    y = NN(tt_pdist(a, 2.0));
    ck_assert(tt_numel(y) == 3);
    tt_release(y), tt_release(a), tt_release(b);
    a = NN(tt_ones(TT_SHAPE(1, 4), TT_F64));
    y = NN(tt_pdist(a, 2.0));
    ck_assert(tt_ndim(y) == 1 && tt_numel(y) == 0);
    tt_release(y), tt_release(a);
}
END_TEST

/* Subgradients: 0 where a distance is 0, 0 for p = 0; p = inf gives the
 * whole gradient to every entry at the max. */
START_TEST(test_subgradients)
{
    double xv[] = {1, 2, 3, 1, 2, 3}, yv[] = {1, 2, 3, 4, 2, 0};
    tt_tensor *x = NN(tt_from_data(TT_SHAPE(2, 3), TT_F64, xv));
    tt_tensor *y = NN(tt_from_data(TT_SHAPE(2, 3), TT_F64, yv));
    OK(tt_set_requires_grad(x, true));
    double want[][6] = {
        {0, 0, 0, 0, 0, 0},                                   /* p = 0 */
        {-1, 0, 1, -1, 0, 1},                                 /* p = inf: ties */
        {-0.5 * M_SQRT2, 0, 0.5 * M_SQRT2, -0.5 * M_SQRT2, 0, 0.5 * M_SQRT2}, /* p = 2 */
    };
    double pp[] = {0, INFINITY, 2};
    for (int k = 0; k < 3; k++) {
        tt_tensor *d = NN(tt_cdist(x, y, pp[k]));
        tt_tensor *s = NN(tt_sum_all(d));
        tt_tensor *g = NULL;
        OK(tt_grad(1, &s, NULL, 1, &x, &g));
        double *v = tt_test_values(g);
        for (int i = 0; i < 6; i++)
            assert_near(v[i], want[k][i], 1e-12, "subgradient", i);
        free(v);
        tt_release(g), tt_release(s), tt_release(d);
    }
    tt_release(x), tt_release(y);
}
END_TEST

/* p given as an int (a float argument takes one): the same values and
 * gradients as the float. */
START_TEST(test_int_p)
{
    tt_tensor *x = scrambled(2, (int64_t[]){3, 4}, TT_F64, 1);
    tt_tensor *y = scrambled(2, (int64_t[]){5, 4}, TT_F64, 2);
    OK(tt_set_requires_grad(x, true));
    const tt_op *cd = NN(tt_op_find("tt::_cdist_forward")), *pd = NN(tt_op_find("tt::_pdist_forward"));
    tt_tensor *r[2][2], *g[2][2];
    for (int k = 0; k < 2; k++) {
        tt_value p = k ? tt_v_int(3) : tt_v_float(3.0);
        r[k][0] = NN(tt_call(cd, tt_v_tensor(x), tt_v_tensor(y), p, tt_v_none()));
        r[k][1] = NN(tt_call(pd, tt_v_tensor(x), p));
        for (int i = 0; i < 2; i++) {
            tt_tensor *s = NN(tt_sum_all(r[k][i]));
            OK(tt_grad(1, &s, NULL, 1, &x, &g[k][i]));
            tt_release(s);
        }
    }
    for (int i = 0; i < 2; i++) {
        tt_test_assert_close(r[1][i], r[0][i], 0, "int p: value");
        tt_test_assert_close(g[1][i], g[0][i], 0, "int p: gradient");
        for (int k = 0; k < 2; k++)
            tt_release(r[k][i]), tt_release(g[k][i]);
    }
    tt_release(x), tt_release(y);
}
END_TEST

/* The same bits on one thread and on several: every row's sums have one
 * order, whatever the split. */
START_TEST(test_thread_count)
{
    tt_tensor *x = scrambled(3, (int64_t[]){2, 100, 9}, TT_F32, 1);
    tt_tensor *y = scrambled(2, (int64_t[]){40, 9}, TT_F32, 2);
    tt_tensor *z = scrambled(2, (int64_t[]){120, 9}, TT_F32, 3);
    OK(tt_set_requires_grad(x, true));
    OK(tt_set_requires_grad(y, true));
    OK(tt_set_requires_grad(z, true));
    int saved = tt_get_num_threads();
    tt_tensor *r[2][5];
    for (int t = 0; t < 2; t++) {
        tt_set_num_threads(t ? 4 : 1);
        r[t][0] = NN(tt_cdist(x, y, 3.5));
        r[t][1] = NN(tt_pdist(z, 1.5));
        tt_tensor *s0 = NN(tt_sum_all(r[t][0])), *s1 = NN(tt_sum_all(r[t][1]));
        OK(tt_grad(1, &s0, NULL, 2, (tt_tensor *[]){x, y}, &r[t][2]));
        OK(tt_grad(1, &s1, NULL, 1, &z, &r[t][4]));
        tt_release(s0), tt_release(s1);
    }
    tt_set_num_threads(saved);
    for (int i = 0; i < 5; i++) {
        tt_test_assert_same_bits(r[0][i], r[1][i], "1 thread vs 4");
        tt_release(r[0][i]), tt_release(r[1][i]);
    }
    tt_release(x), tt_release(y), tt_release(z);
}
END_TEST

/* ------------------------------------------------------- gradcheck */

typedef struct {
    double p;
    int mode;
    bool pdist;
} dist_case;

static tt_status dist_fn(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    const dist_case *c = ud;
    out[0] = c->pdist ? tt_pdist(in[0], c->p) : tt_cdist_ex(in[0], in[1], c->p, c->mode);
    return out[0] ? TT_OK : tt_errcode();
}

static const struct {
    const char *name;
    dist_case c;
    int nd1, nd2;
    int64_t s1[4], s2[4];
} grads[] = {
    {"cdist p=0.5", {0.5, -1, false}, 2, 2, {3, 4}, {5, 4}},
    {"cdist p=1", {1, -1, false}, 2, 2, {3, 4}, {5, 4}},
    {"cdist p=1.5", {1.5, -1, false}, 2, 2, {3, 4}, {5, 4}},
    {"cdist p=2", {2, -1, false}, 3, 3, {2, 3, 4}, {2, 5, 4}},
    {"cdist p=3.5", {3.5, -1, false}, 2, 2, {3, 4}, {5, 4}},
    {"cdist p=inf", {INFINITY, -1, false}, 2, 2, {3, 4}, {5, 4}},
    {"cdist p=2 product form", {2, -1, false}, 2, 2, {27, 3}, {4, 3}},
    {"cdist p=2 mode 1", {2, 1, false}, 2, 2, {3, 3}, {4, 3}},
    {"cdist broadcast batch", {3.5, -1, false}, 4, 3, {2, 1, 3, 2}, {3, 4, 2}},
    {"pdist p=1", {1, 0, true}, 2, 0, {5, 3}, {0}},
    {"pdist p=1.5", {1.5, 0, true}, 2, 0, {5, 3}, {0}},
    {"pdist p=2", {2, 0, true}, 2, 0, {5, 3}, {0}},
    {"pdist p=3.5", {3.5, 0, true}, 2, 0, {5, 3}, {0}},
    {"pdist p=inf", {INFINITY, 0, true}, 2, 0, {5, 3}, {0}},
};

START_TEST(test_gradcheck)
{
    tt_tensor *in[2] = {scrambled(grads[_i].nd1, grads[_i].s1, TT_F64, 6), NULL};
    OK(tt_set_requires_grad(in[0], true));
    int n = 1;
    if (!grads[_i].c.pdist) {
        in[1] = scrambled(grads[_i].nd2, grads[_i].s2, TT_F64, 7);
        OK(tt_set_requires_grad(in[1], true));
        n = 2;
    }
    dist_case c = grads[_i].c;
    tt_status st = tt_gradcheck(dist_fn, n, in, 1, NULL, &c);
    ck_assert_msg(st == TT_OK, "%s: %s", grads[_i].name, tt_errmsg());
    tt_release(in[0]), tt_release(in[1]);
}
END_TEST

/* Out of memory at any allocation of a forward and its backward is
 * TT_ENOMEM, never a crash or a wrong result, and leaves nothing behind
 * (the fixture counts): the direct loop on broadcast batches, the
 * matrix-product form, pdist. */
START_TEST(test_oom)
{
    static const dist_case cases[] = {{3.5, -1, false}, {2, 1, false}, {1.5, 0, true}};
    for (int c = 0; c < TT_TABLE_LEN(cases); c++) {
        tt_tensor *in[2] = {scrambled(3, (int64_t[]){2, 3, 4}, TT_F64, 1),
                            scrambled(2, (int64_t[]){5, 4}, TT_F64, 2)};
        OK(tt_set_requires_grad(in[0], true));
        OK(tt_set_requires_grad(in[1], true));
        if (cases[c].pdist) {
            tt_release(in[0]);
            in[0] = in[1], in[1] = NULL;
        }
        int n = cases[c].pdist ? 1 : 2, failures = 0;
        dist_case dc = cases[c];
        for (int64_t k = 1; k < 200; k++) {
            tt_tensor *y = NULL, *g[2] = {NULL, NULL};
            tt_debug_fail_alloc(k);
            tt_status st = dist_fn(in, n, &y, 1, &dc);
            if (!st)
                st = tt_grad(1, &y, &y, n, in, g);
            tt_debug_fail_alloc(0);
            tt_release(y), tt_release(g[0]), tt_release(g[1]);
            if (st == TT_OK)
                break;
            ck_assert_msg(st == TT_ENOMEM, "case %d, allocation %lld: %s", c, (long long)k,
                          tt_errmsg());
            failures++;
        }
        ck_assert_int_ge(failures, 3);
        tt_release(in[0]), tt_release(in[1]);
    }
}
END_TEST

/* ------------------------------------------------------------ errors */

static struct {
    tt_tensor *a, *b, *b3, *v, *ai, *a64, *bb, *g, *g_bad, *pg, *pg_bad, *pg64;
} in;

static void errors_setup(void)
{
    tt_test_setup();
    in.a = NN(tt_ones(TT_SHAPE(3, 4), TT_F32));
    in.b = NN(tt_ones(TT_SHAPE(5, 4), TT_F32));
    in.b3 = NN(tt_ones(TT_SHAPE(5, 3), TT_F32));
    in.v = NN(tt_ones(TT_SHAPE(4), TT_F32));
    in.ai = NN(tt_ones(TT_SHAPE(3, 4), TT_I64));
    in.a64 = NN(tt_ones(TT_SHAPE(3, 4), TT_F64));
    in.bb = NN(tt_ones(TT_SHAPE(3, 5, 4), TT_F32));
    in.g = NN(tt_ones(TT_SHAPE(3, 5), TT_F32));
    in.g_bad = NN(tt_ones(TT_SHAPE(2, 5), TT_F32));
    in.pg = NN(tt_ones(TT_SHAPE(3), TT_F32));
    in.pg_bad = NN(tt_ones(TT_SHAPE(4), TT_F32));
    in.pg64 = NN(tt_ones(TT_SHAPE(3), TT_F64));
}

static void errors_teardown(void)
{
    tt_tensor *all[] = {in.a, in.b, in.b3, in.v, in.ai, in.a64, in.bb, in.g, in.g_bad, in.pg,
                        in.pg_bad, in.pg64};
    for (int k = 0; k < TT_TABLE_LEN(all); k++)
        tt_release(all[k]);
    memset(&in, 0, sizeof in);
    tt_test_teardown();
}

static tt_tensor *a2x3(void) /* [2, 3, 4]: batch 2 against bb's 3 */
{
    tt_tensor *t = NN(tt_ones(TT_SHAPE(2, 3, 4), TT_F32));
    tt_tensor *r = tt_cdist(t, in.bb, 2.0);
    tt_release(t);
    return r;
}

static tt_tensor *cdist_bw(const tt_tensor *g, const tt_tensor *x1, const tt_tensor *x2,
                           double p, const tt_tensor *d)
{
    return tt_call(tt_op_find("tt::_cdist_backward"), tt_v_tensor(g), tt_v_tensor(x1),
                   tt_v_tensor(x2), tt_v_float(p), tt_v_tensor(d));
}

static tt_tensor *pdist_bw(const tt_tensor *g, const tt_tensor *x, double p, const tt_tensor *d)
{
    return tt_call(tt_op_find("tt::_pdist_backward"), tt_v_tensor(g), tt_v_tensor(x),
                   tt_v_float(p), tt_v_tensor(d));
}

#define DISTANCE_ERRORS(X)                                                                   \
    X(cdist_x1_1d, tt_cdist(in.v, in.b, 2.0), TT_ESHAPE,                                     \
      "tt::_cdist_forward: argument 'x1' (#1): expected a tensor of at least 2 dims", "got 1-d") \
    X(cdist_x2_1d, tt_cdist(in.a, in.v, 2.0), TT_ESHAPE, "argument 'x2' (#2)", "got 1-d")     \
    X(cdist_columns, tt_cdist(in.a, in.b3, 2.0), TT_ESHAPE,                                  \
      "tt::_cdist_forward: argument 'x2' (#2): expected 4 columns (the last dim) like 'x1', " \
      "got 3")                                                                               \
    X(cdist_int, tt_cdist(in.ai, in.b, 2.0), TT_EDTYPE,                                      \
      "tt::_cdist_forward: argument 'x1' (#1): expected f32 or f64, got i64")                \
    X(cdist_int2, tt_cdist(in.a, in.ai, 2.0), TT_EDTYPE, "argument 'x2' (#2)", "got i64")    \
    X(cdist_p, tt_cdist(in.a, in.b, -1.0), TT_EINVAL,                                        \
      "tt::_cdist_forward: argument 'p' (#3): expected a non-negative p, got -1")            \
    X(cdist_p_nan, tt_cdist(in.a, in.b, NAN), TT_EINVAL, "argument 'p' (#3)")               \
    X(cdist_mode, tt_cdist_ex(in.a, in.b, 2.0, 3), TT_EINVAL,                                \
      "tt::_cdist_forward: argument 'compute_mode' (#4): expected None, 0, 1 or 2, got 3")   \
    X(cdist_mixed, tt_cdist(in.a64, in.b, 2.0), TT_EDTYPE,                                   \
      "tt::_cdist_forward: argument 'x2' (#2): expected f64 like 'x1', got f32")             \
    X(cdist_batch, a2x3(), TT_ESHAPE, "argument 'x2' (#2): batch dims",                     \
      "do not broadcast with those of 'x1' [2, 3, 4]")                                       \
    X(cdist_bw_grad_shape, cdist_bw(in.g_bad, in.a, in.b, 2.0, in.g), TT_ESHAPE,            \
      "tt::_cdist_backward: argument 'grad' (#1): expected shape [3, 5], got [2, 5]")        \
    X(cdist_bw_dist_shape, cdist_bw(in.g, in.a, in.b, 2.0, in.g_bad), TT_ESHAPE,            \
      "argument 'cdist' (#5): expected shape [3, 5]")                                        \
    X(cdist_bw_int, cdist_bw(in.g, in.ai, in.b, 2.0, in.g), TT_EDTYPE,                      \
      "tt::_cdist_backward: argument 'x1' (#2): expected f32 or f64, got i64")               \
    X(cdist_bw_grad_dtype, cdist_bw(in.g, in.a64, in.a64, 2.0, in.g), TT_EDTYPE,            \
      "argument 'grad' (#1): expected f64 like 'x1', got f32")                               \
    X(cdist_bw_p, cdist_bw(in.g, in.a, in.b, -2.0, in.g), TT_EINVAL, "argument 'p' (#4)")   \
    X(cdist_mode_neg, tt_call(tt_op_find("tt::_cdist_forward"), tt_v_tensor(in.a),            \
                              tt_v_tensor(in.b), tt_v_float(2), tt_v_int(-1)),               \
      TT_EINVAL, "argument 'compute_mode' (#4): expected None, 0, 1 or 2, got -1")           \
    X(cdist_bw_dist_dtype, cdist_bw(in.g, in.a, in.b, 2.0, in.a64), TT_EDTYPE,              \
      "tt::_cdist_backward: argument 'cdist' (#5): expected f32 like 'x1', got f64")         \
    X(cdist_bw_x2_dtype, cdist_bw(in.g, in.a, in.a64, 2.0, in.g), TT_EDTYPE,                \
      "argument 'x2' (#3): expected f32 like 'x1', got f64")                                 \
    X(cdist_bw_columns, cdist_bw(in.g, in.a, in.b3, 2.0, in.g), TT_ESHAPE,                  \
      "tt::_cdist_backward: argument 'x2' (#3): expected 4 columns")                         \
    X(cdist_bw_batch, cdist_bw(in.g, in.a, in.bb, 2.0, in.g), TT_ESHAPE,                    \
      "tt::_cdist_backward: argument 'grad' (#1): expected shape [3, 3, 5], got [3, 5]")     \
    X(pdist_bw_p, pdist_bw(in.pg, in.a, -1.0, in.pg), TT_EINVAL,                            \
      "tt::_pdist_backward: argument 'p' (#3): expected a non-negative p, got -1")           \
    X(pdist_bw_dist_dtype, pdist_bw(in.pg, in.a, 2.0, in.pg64), TT_EDTYPE,                  \
      "argument 'pdist' (#4): expected f32 like 'self', got f64")                            \
    X(pdist_1d, tt_pdist(in.v, 2.0), TT_ESHAPE,                                              \
      "tt::_pdist_forward: argument 'self' (#1): expected a 2-d tensor [N, M], got 1-d")     \
    X(pdist_3d, tt_pdist(in.bb, 2.0), TT_ESHAPE, "got 3-d")                                 \
    X(pdist_int, tt_pdist(in.ai, 2.0), TT_EDTYPE,                                            \
      "tt::_pdist_forward: argument 'self' (#1): expected f32 or f64, got i64")              \
    X(pdist_p, tt_pdist(in.a, -0.5), TT_EINVAL,                                              \
      "tt::_pdist_forward: argument 'p' (#2): expected a non-negative p, got -0.5")          \
    X(pdist_bw_grad_shape, pdist_bw(in.pg_bad, in.a, 2.0, in.pg), TT_ESHAPE,                \
      "tt::_pdist_backward: argument 'grad' (#1): expected shape [3], got [4]")              \
    X(pdist_bw_dist_shape, pdist_bw(in.pg, in.a, 2.0, in.pg_bad), TT_ESHAPE,                \
      "argument 'pdist' (#4): expected shape [3], got [4]")                                  \
    X(pdist_bw_int, pdist_bw(in.pg, in.ai, 2.0, in.pg), TT_EDTYPE,                          \
      "tt::_pdist_backward: argument 'self' (#2): expected f32 or f64, got i64")             \
    X(pdist_bw_dtype, pdist_bw(in.pg, in.a64, 2.0, in.pg), TT_EDTYPE,                       \
      "argument 'grad' (#1): expected f64 like 'self', got f32")                             \
    X(pdist_bw_1d, pdist_bw(in.pg, in.v, 2.0, in.pg), TT_ESHAPE, "argument 'self' (#2)")

TT_ERROR_TABLE(DISTANCE_ERRORS, distance_errors);

START_TEST(test_errors)
{
    tt_test_run_error_case(&distance_errors[_i], _i);
}
END_TEST

/* ------------------------------------------------- traced and compiled */

static tt_tensor *m_cdist_self(tt_tensor *x) { return tt_cdist(x, x, 2.0); }
static tt_tensor *m_cdist_flip(tt_tensor *x)
{
    tt_tensor *t = tt_mul_scalar(x, -0.5);
    tt_tensor *y = t ? tt_cdist(x, t, 3.5) : NULL;
    tt_release(t);
    return y;
}
static tt_tensor *m_cdist_inf(tt_tensor *x)
{
    tt_tensor *t = tt_add_scalar(x, 0.25);
    tt_tensor *y = t ? tt_cdist(t, x, INFINITY) : NULL;
    tt_release(t);
    return y;
}
static tt_tensor *m_cdist_mm(tt_tensor *x)
{
    tt_tensor *t = tt_mul_scalar(x, 0.75);
    tt_tensor *y = t ? tt_cdist_ex(x, t, 2.0, 1) : NULL;
    tt_release(t);
    return y;
}
/* P = 25 takes the direct loop, P = 26 the product form: one plan runs both */
static tt_tensor *m_cdist_switch(tt_tensor *x)
{
    tt_tensor *t = tt_narrow(x, 0, 0, 4);
    tt_tensor *y = t ? tt_cdist(x, t, 2.0) : NULL;
    tt_release(t);
    return y;
}
static tt_tensor *m_pdist(tt_tensor *x) { return tt_pdist(x, 2.0); }
static tt_tensor *m_pdist_15(tt_tensor *x) { return tt_pdist(x, 1.5); }

static const struct {
    const char *name;
    tt_test_model fn;
    int nd;
    int64_t sizes[3];
} models[] = {
    {"cdist(x, x)", m_cdist_self, 2, {5, 3}},
    {"cdist p=3.5", m_cdist_flip, 3, {2, 4, 3}},
    {"cdist p=inf", m_cdist_inf, 2, {4, 3}},
    {"cdist product form", m_cdist_mm, 2, {6, 3}},
    {"cdist direct then product form", m_cdist_switch, 2, {25, 3}},
    {"pdist", m_pdist, 2, {5, 3}},
    {"pdist p=1.5", m_pdist_15, 2, {4, 2}},
};

static tt_tensor *f64_input(int nd, const int64_t *sizes)
{
    return scrambled(nd, sizes, TT_F64, 8);
}

/* A symbolic trace compiled once runs inputs of two shapes: forward and
 * backward equal eager. */
START_TEST(test_compiled_equals_eager)
{
    tt_test_compiled_two_shapes(models[_i].fn, models[_i].nd, models[_i].sizes, f64_input, 1e-12,
                                models[_i].name);
}
END_TEST

/* opcheck of every op: schema, autograd registration, fake kernel equal
 * to the real one, symbolic trace and replay equal to eager (with the
 * derivative where the inputs require grad). */
START_TEST(test_opcheck)
{
    tt_tensor *b1 = scrambled(3, (int64_t[]){2, 4, 3}, TT_F64, 1);
    tt_tensor *x1 = NN(tt_transpose(b1, 1, 2)); /* [2, 3, 4], strided */
    tt_tensor *x2 = scrambled(3, (int64_t[]){1, 5, 4}, TT_F64, 2);
    tt_tensor *big = scrambled(2, (int64_t[]){27, 4}, TT_F64, 3);
    tt_tensor *xp = scrambled(2, (int64_t[]){5, 4}, TT_F64, 4);
    OK(tt_set_requires_grad(x1, true));
    OK(tt_set_requires_grad(x2, true));
    OK(tt_set_requires_grad(big, true));
    OK(tt_set_requires_grad(xp, true));
    tt_tensor *g = scrambled(3, (int64_t[]){2, 3, 5}, TT_F64, 5);
    tt_tensor *d = NN(tt_cdist(x1, x2, 1.5));
    tt_tensor *pg = scrambled(1, (int64_t[]){10}, TT_F64, 6);
    tt_tensor *pd = NN(tt_pdist(xp, 3.5));
    /* the backward ops have no derivative (PyTorch 1.13's neither) */
    tt_tensor *x1d = NN(tt_detach(x1)), *x2d = NN(tt_detach(x2)), *xpd = NN(tt_detach(xp));
    tt_tensor *dd = NN(tt_detach(d)), *pdd = NN(tt_detach(pd));
    const tt_op *cf = NN(tt_op_find("tt::_cdist_forward")), *cb = NN(tt_op_find("tt::_cdist_backward"));
    const tt_op *pf = NN(tt_op_find("tt::_pdist_forward")), *pb = NN(tt_op_find("tt::_pdist_backward"));
    struct {
        const char *what;
        const tt_op *op;
        tt_value args[5];
        int n;
    } calls[] = {
        {"cdist p=1.5", cf, {tt_v_tensor(x1), tt_v_tensor(x2), tt_v_float(1.5), tt_v_none()}, 4},
        {"cdist p=inf", cf, {tt_v_tensor(x1), tt_v_tensor(x2), tt_v_float(INFINITY), tt_v_int(0)}, 4},
        {"cdist product form", cf, {tt_v_tensor(big), tt_v_tensor(x2), tt_v_float(2), tt_v_none()}, 4},
        {"cdist_backward", cb, {tt_v_tensor(g), tt_v_tensor(x1d), tt_v_tensor(x2d), tt_v_float(1.5),
                                tt_v_tensor(dd)}, 5},
        {"pdist", pf, {tt_v_tensor(xp), tt_v_float(3.5)}, 2},
        {"pdist_backward", pb, {tt_v_tensor(pg), tt_v_tensor(xpd), tt_v_float(3.5), tt_v_tensor(pdd)}, 4},
    };
    for (int i = 0; i < TT_TABLE_LEN(calls); i++) {
        tt_opcheck_report rep;
        tt_status st = tt_opcheck(calls[i].op, calls[i].args, calls[i].n, NULL, &rep);
        ck_assert_msg(st == TT_OK, "%s: %s", calls[i].what, tt_errmsg());
    }
    tt_tensor *all[] = {b1, x1, x2, big, xp, g, d, pg, pd, x1d, x2d, xpd, dd, pdd};
    for (int i = 0; i < TT_TABLE_LEN(all); i++)
        tt_release(all[i]);
}
END_TEST

/* Symbolic P, R, N and batch sizes flow through the fake kernels. */
START_TEST(test_symbolic_sizes)
{
    tt_sym_reset();
    tt_size p = tt_sym_new("s", 7), r = tt_sym_new("s", 30), b = tt_sym_new("s", 3);
    tt_tensor *x1 = NN(tt_fake_empty(3, (tt_size[]){b, p, 4}, TT_F32));
    tt_tensor *x2 = NN(tt_fake_empty(3, (tt_size[]){1, r, 4}, TT_F32));
    tt_tensor *y = NN(tt_cdist(x1, x2, 2.0));
    ck_assert(tt_is_fake(y) && tt_ndim(y) == 3);
    ck_assert(tt_sizes(y)[0] == b && tt_sizes(y)[1] == p && tt_sizes(y)[2] == r);
    tt_tensor *g = NN(tt_call(tt_op_find("tt::_cdist_backward"), tt_v_tensor(y),
                              tt_v_tensor(x1), tt_v_tensor(x2), tt_v_float(2.0),
                              tt_v_tensor(y)));
    ck_assert(tt_is_fake(g) && tt_sizes(g)[0] == b && tt_sizes(g)[1] == p &&
              tt_sizes(g)[2] == 4);
    tt_release(g), tt_release(y);
    tt_release(x1), tt_release(x2);
    tt_tensor *x = NN(tt_fake_empty(2, (tt_size[]){p, 3}, TT_F64));
    y = NN(tt_pdist(x, 1.0));
    ck_assert(tt_is_fake(y) && tt_ndim(y) == 1);
    char buf[64];
    tt_size_str(tt_sizes(y)[0], buf, sizeof buf);
    ck_assert_msg(tt_size_is_sym(tt_sizes(y)[0]) && tt_sym_hint(tt_sizes(y)[0]) == 21, "%s", buf);
    g = NN(tt_call(tt_op_find("tt::_pdist_backward"), tt_v_tensor(y), tt_v_tensor(x),
                   tt_v_float(1.0), tt_v_tensor(y)));
    ck_assert(tt_is_fake(g) && tt_sizes(g)[0] == p && tt_sizes(g)[1] == 3);
    tt_release(g), tt_release(y), tt_release(x);
    tt_sym_reset();
}
END_TEST

static Suite *distance_suite(void)
{
    Suite *s = suite_create("ops_distance");
    TCase *tc = tt_tcase("values");
    tcase_add_test(tc, test_cdist_values);
    tcase_add_test(tc, test_cdist_matrix_product);
    tcase_add_test(tc, test_pdist_values);
    tcase_add_test(tc, test_empty);
    tcase_add_test(tc, test_subgradients);
    tcase_add_test(tc, test_int_p);
    tcase_add_test(tc, test_thread_count);
    tcase_add_test(tc, test_symbolic_sizes);
    tcase_add_test(tc, test_opcheck);
    suite_add_tcase(s, tc);
    tc = tt_tcase("gradients");
    tcase_add_loop_test(tc, test_gradcheck, 0, TT_TABLE_LEN(grads));
    tcase_add_loop_test(tc, test_compiled_equals_eager, 0, TT_TABLE_LEN(models));
    tcase_add_test(tc, test_oom);
    suite_add_tcase(s, tc);
    tc = tt_tcase_with("errors", errors_setup, errors_teardown);
    tcase_add_loop_test(tc, test_errors, 0, TT_TABLE_LEN(distance_errors));
    suite_add_tcase(s, tc);
    return s;
}

TT_TEST_MAIN(distance_suite)
