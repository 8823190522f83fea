/* Random ops (issue 27, ops/random.c): their values are not PyTorch's
 * streams (another generator), so the differential file checks only
 * metadata and errors; here, with fixed seeds, the distributions
 * (means, variances, frequencies within bounds several standard errors
 * wide), the structure (randperm a permutation, multinomial without
 * replacement distinct), reproducibility under one seed, independence of
 * the input's layout, a compiled step equal to eager and drawing anew per
 * call, the fake path's metadata, every error's status and message, and
 * zero live tensors at the end of each test (the fixture checks). */
#include "tt_test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void mean_var(const double *v, int64_t n, double *mean, double *var)
{
    double s = 0, s2 = 0;
    for (int64_t i = 0; i < n; i++)
        s += v[i];
    *mean = s / (double)n;
    for (int64_t i = 0; i < n; i++)
        s2 += (v[i] - *mean) * (v[i] - *mean);
    *var = s2 / (double)(n - 1);
}

#define NEAR(x, want, tol, what)                                               \
    ck_assert_msg(fabs((x) - (want)) <= (tol), "%s: %g, expected %g within %g", what,      \
                  (double)(x), (double)(want), (double)(tol))

START_TEST(test_bernoulli_distribution)
{
    tt_manual_seed(11);
    /* bernoulli(self): self's probabilities, per element. */
    const int64_t n = 20000;
    tt_tensor *p = NN(tt_full(1, &n, 0.3, TT_F64));
    tt_tensor *b = NN(tt_bernoulli(p));
    ck_assert_int_eq(tt_dtype_of(b), TT_F64);
    double *v = tt_test_values(b), m, var;
    for (int64_t i = 0; i < n; i++)
        ck_assert_msg(v[i] == 0 || v[i] == 1, "bernoulli value %g", v[i]);
    mean_var(v, n, &m, &var);
    NEAR(m, 0.3, 5 * sqrt(0.21 / n), "bernoulli(0.3) mean");
    free(v);
    /* 0 and 1 are certain. */
    static const double p01[4] = {0, 1, 0, 1};
    tt_tensor *q = NN(tt_from_data(1, (int64_t[]){4}, TT_F64, p01));
    tt_tensor *bq = NN(tt_bernoulli(q));
    v = tt_test_values(bq);
    for (int i = 0; i < 4; i++)
        ck_assert_double_eq(v[i], p01[i]);
    free(v);
    /* bernoulli.p on every dtype: its dtype, 1 with probability p. */
    const tt_dtype dts[] = {TT_F32, TT_F64, TT_I64, TT_I32, TT_U8, TT_BOOL};
    for (int k = 0; k < 6; k++) {
        tt_tensor *x = NN(tt_zeros(2, (int64_t[]){100, 100}, dts[k]));
        tt_tensor *y = NN(tt_bernoulli_p(x, 0.7));
        ck_assert_int_eq(tt_dtype_of(y), dts[k]);
        v = tt_test_values(y);
        mean_var(v, 10000, &m, &var);
        NEAR(m, 0.7, 5 * sqrt(0.21 / 10000), tt_dtype_name(dts[k]));
        free(v);
        tt_release(x), tt_release(y);
    }
    tt_release(p), tt_release(b), tt_release(q), tt_release(bq);
}
END_TEST

START_TEST(test_uniform_normal_distribution)
{
    tt_manual_seed(12);
    const int64_t n = 40000;
    for (int k = 0; k < 2; k++) {
        tt_dtype dt = k ? TT_F64 : TT_F32;
        tt_tensor *x = NN(tt_zeros(1, &n, dt));
        OK(tt_uniform_(x, -2, 3));
        double *v = tt_test_values(x), m, var;
        for (int64_t i = 0; i < n; i++)
            ck_assert_msg(v[i] >= -2 && v[i] < 3, "uniform_ value %g outside [-2, 3)", v[i]);
        mean_var(v, n, &m, &var);
        NEAR(m, 0.5, 5 * sqrt(25.0 / 12 / n), "uniform_ mean");
        NEAR(var, 25.0 / 12, 0.05 * 25.0 / 12, "uniform_ variance");
        free(v);
        OK(tt_normal_(x, 1.5, 2));
        v = tt_test_values(x);
        mean_var(v, n, &m, &var);
        NEAR(m, 1.5, 5 * 2 / sqrt((double)n), "normal_ mean");
        NEAR(var, 4, 0.05 * 4, "normal_ variance");
        /* The share within one std of the mean: 68.27%. */
        int64_t within = 0;
        for (int64_t i = 0; i < n; i++)
            within += fabs(v[i] - 1.5) < 2;
        NEAR((double)within / n, 0.6827, 0.015, "normal_ share within one std");
        free(v);
        /* from == to: every element is from; std 0: every element is mean. */
        OK(tt_uniform_(x, 0.25, 0.25));
        OK(tt_normal_(x, -1, 0));
        v = tt_test_values(x);
        for (int64_t i = 0; i < n; i++)
            ck_assert_double_eq(v[i], -1);
        free(v);
        tt_release(x);
    }
}
END_TEST

START_TEST(test_randint_distribution)
{
    tt_manual_seed(13);
    const int64_t n = 30000;
    tt_tensor *r = NN(tt_randint(-3, 7, 1, &n, TT_I64));
    ck_assert_int_eq(tt_dtype_of(r), TT_I64);
    double *v = tt_test_values(r);
    int64_t count[10] = {0};
    for (int64_t i = 0; i < n; i++) {
        ck_assert_msg(v[i] >= -3 && v[i] < 7 && v[i] == floor(v[i]), "randint value %g", v[i]);
        count[(int)v[i] + 3]++;
    }
    for (int c = 0; c < 10; c++)
        NEAR((double)count[c], n / 10.0, 5 * sqrt(n * 0.09), "randint count");
    free(v);
    tt_release(r);
    /* Other dtypes: bool, u8 up to 255, f32 holds whole numbers. */
    const tt_dtype dts[] = {TT_BOOL, TT_U8, TT_I32, TT_F32, TT_F64};
    const int64_t his[] = {2, 256, 1000, 50, 50};
    for (int k = 0; k < 5; k++) {
        int64_t m = 2000;
        r = NN(tt_randint(0, his[k], 1, &m, dts[k]));
        ck_assert_int_eq(tt_dtype_of(r), dts[k]);
        v = tt_test_values(r);
        double mx = 0;
        for (int64_t i = 0; i < m; i++) {
            ck_assert(v[i] >= 0 && v[i] < (double)his[k] && v[i] == floor(v[i]));
            mx = v[i] > mx ? v[i] : mx;
        }
        ck_assert_double_eq(mx, (double)his[k] - 1); /* the top is reached */
        free(v);
        tt_release(r);
    }
}
END_TEST

START_TEST(test_randperm_is_permutation)
{
    tt_manual_seed(14);
    const int64_t ns[] = {0, 1, 2, 7, 1000};
    for (int k = 0; k < 5; k++) {
        tt_tensor *r = NN(tt_randperm(ns[k], k % 2 ? TT_F32 : TT_I64));
        ck_assert_int_eq(tt_numel(r), ns[k]);
        double *v = tt_test_values(r);
        char *seen = calloc((size_t)ns[k] + 1, 1);
        for (int64_t i = 0; i < ns[k]; i++) {
            ck_assert(v[i] >= 0 && v[i] < (double)ns[k] && !seen[(int64_t)v[i]]);
            seen[(int64_t)v[i]] = 1;
        }
        free(seen), free(v);
        tt_release(r);
    }
    /* Every element is equally likely at every place: the position of 0
     * over many permutations of 4. */
    int64_t where0[4] = {0};
    for (int t = 0; t < 4000; t++) {
        tt_tensor *r = NN(tt_randperm(4, TT_I64));
        const int64_t *d = tt_data(r);
        for (int i = 0; i < 4; i++)
            where0[i] += d[i] == 0;
        tt_release(r);
    }
    for (int i = 0; i < 4; i++)
        NEAR((double)where0[i], 1000, 5 * sqrt(4000 * 0.1875), "randperm: 0's place");
}
END_TEST

START_TEST(test_multinomial_distribution)
{
    tt_manual_seed(15);
    /* With replacement: frequencies close to the probabilities (weights
     * need not sum to 1), never a zero-probability category. */
    static const double w[5] = {1, 0, 2, 3, 4};
    tt_tensor *p = NN(tt_from_data(1, (int64_t[]){5}, TT_F64, w));
    const int64_t n = 20000;
    tt_tensor *s = NN(tt_multinomial(p, n, true));
    ck_assert_int_eq(tt_dtype_of(s), TT_I64);
    ck_assert_int_eq(tt_ndim(s), 1);
    const int64_t *d = tt_data(s);
    int64_t count[5] = {0};
    for (int64_t i = 0; i < n; i++) {
        ck_assert(d[i] >= 0 && d[i] < 5);
        count[d[i]]++;
    }
    ck_assert_int_eq(count[1], 0);
    for (int c = 0; c < 5; c++)
        NEAR((double)count[c] / n, w[c] / 10, 5 * sqrt(0.25 / n), "multinomial frequency");
    tt_release(s);
    /* Without replacement: distinct indices; the first draw follows the
     * probabilities, the second the rest renormalized. */
    int64_t first[5] = {0}, second_after3[5] = {0}, n3 = 0;
    for (int t = 0; t < 4000; t++) {
        s = NN(tt_multinomial(p, 3, false));
        d = tt_data(s);
        ck_assert(d[0] != d[1] && d[1] != d[2] && d[0] != d[2]);
        ck_assert(d[0] != 1 && d[1] != 1 && d[2] != 1);
        first[d[0]]++;
        if (d[0] == 4)
            n3++, second_after3[d[1]]++;
        tt_release(s);
    }
    for (int c = 0; c < 5; c++)
        NEAR((double)first[c] / 4000, w[c] / 10, 5 * sqrt(0.25 / 4000), "first draw");
    /* After 4 (weight 4) was drawn: 0, 2, 3 with 1/6, 2/6, 3/6. */
    NEAR((double)second_after3[3] / (double)n3, 0.5, 5 * sqrt(0.25 / (double)n3), "second draw");
    /* All the categories without replacement, zero weights last. */
    s = NN(tt_multinomial(p, 5, false));
    d = tt_data(s);
    ck_assert_int_eq(d[4], 1);
    tt_release(s);
    /* 2-d, transposed probabilities: one row each. */
    static const double w2[6] = {1, 0, 0, 0, 1, 1}; /* [3, 2]: columns {1,0,0}, {0,1,1} */
    tt_tensor *q64 = NN(tt_from_data(2, (int64_t[]){3, 2}, TT_F64, w2));
    tt_tensor *qt = NN(tt_transpose(q64, 0, 1)); /* [2, 3]: {1, 0, 1}, {0, 0, 1} */
    s = NN(tt_multinomial(qt, 2, true));
    ck_assert_int_eq(tt_dim_size(s, 0), 2);
    ck_assert_int_eq(tt_dim_size(s, 1), 2);
    d = tt_data(s);
    ck_assert(d[0] == 0 || d[0] == 2);
    ck_assert(d[2] == 2 && d[3] == 2);
    tt_release(s), tt_release(qt), tt_release(q64), tt_release(p);
}
END_TEST

/* One call of each op; the same seed again gives the same bits, and the
 * layout of self does not change which draw lands on which element. */
static void draw_all(tt_tensor **out)
{
    tt_tensor *p = NN(tt_full(2, (int64_t[]){3, 4}, 0.5, TT_F32));
    out[0] = NN(tt_bernoulli(p));
    out[1] = NN(tt_bernoulli_p(p, 0.25));
    out[2] = NN(tt_zeros(2, (int64_t[]){3, 4}, TT_F64));
    OK(tt_uniform_(out[2], 1, 2));
    out[3] = NN(tt_zeros(2, (int64_t[]){3, 4}, TT_F32));
    OK(tt_normal_(out[3], 0, 1));
    out[4] = NN(tt_randint(0, 100, 2, (int64_t[]){3, 4}, TT_I64));
    out[5] = NN(tt_randperm(12, TT_I64));
    out[6] = NN(tt_multinomial(p, 3, false));
    tt_release(p);
}

START_TEST(test_reproducible_under_one_seed)
{
    tt_tensor *a[7], *b[7], *c[7];
    tt_manual_seed(99);
    draw_all(a);
    draw_all(c); /* the next calls draw anew */
    tt_manual_seed(99);
    draw_all(b);
    for (int i = 0; i < 7; i++) {
        tt_test_assert_same_bits(a[i], b[i], "the same seed");
        tt_release(b[i]);
    }
    /* The next calls drew other values (uniform_'s, say). */
    double *u0 = tt_test_values(a[2]), *u1 = tt_test_values(c[2]);
    ck_assert(memcmp(u0, u1, 12 * sizeof(double)) != 0);
    free(u0), free(u1);
    for (int i = 0; i < 7; i++)
        tt_release(a[i]);
    for (int i = 0; i < 7; i++)
        tt_release(c[i]);
    /* Layout: uniform_ into a transposed view writes the value of logical
     * element (i, j) as into a contiguous tensor. */
    tt_tensor *base = NN(tt_zeros(2, (int64_t[]){4, 3}, TT_F64));
    tt_tensor *t = NN(tt_transpose(base, 0, 1));
    tt_tensor *cont = NN(tt_zeros(2, (int64_t[]){3, 4}, TT_F64));
    tt_manual_seed(5);
    OK(tt_uniform_(t, 0, 1));
    tt_manual_seed(5);
    OK(tt_uniform_(cont, 0, 1));
    tt_test_assert_close(t, cont, 0, "uniform_ into a transposed view");
    tt_manual_seed(5);
    tt_tensor *bt = NN(tt_bernoulli(t));
    tt_manual_seed(5);
    tt_tensor *bc = NN(tt_bernoulli(cont));
    tt_test_assert_close(bt, bc, 0, "bernoulli of a transposed input");
    ck_assert_int_eq(tt_dim_stride(bt, 1), 1); /* contiguous, as PyTorch's */
    tt_release(bt), tt_release(bc), tt_release(t), tt_release(base), tt_release(cont);
}
END_TEST

/* A compiled step replays the ops drawing anew per call: after the same
 * seed, call k of the compiled step equals eager call k. */
static tt_status f_step(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_scope_begin();
    tt_tensor *y = tt_clone(in[0]);
    tt_status st = y ? tt_uniform_(y, -1, 1) : tt_errcode();
    tt_tensor *z = st ? NULL : tt_clone(in[0]);
    st = st ? st : z ? tt_normal_(z, 2, 0.5) : tt_errcode();
    tt_tensor *b = st ? NULL : tt_bernoulli_p(in[0], 0.5);
    tt_tensor *m = b ? tt_multinomial(in[1], 2, false) : NULL;
    tt_tensor *ri = m ? tt_randint(0, 9, 1, (int64_t[]){5}, TT_I64) : NULL;
    tt_tensor *rp = ri ? tt_randperm(6, TT_I64) : NULL;
    tt_tensor *s = rp ? tt_add(y, b) : NULL;
    if (!s)
        st = tt_errcode();
    out[0] = st ? NULL : tt_keep(s);
    out[1] = st ? NULL : tt_keep(z);
    out[2] = st ? NULL : tt_keep(m);
    out[3] = st ? NULL : tt_keep(ri);
    out[4] = st ? NULL : tt_keep(rp);
    tt_scope_end();
    return st;
}

/* _i 0: a fake (static) trace; 1: a symbolic one, run on two shapes. */
START_TEST(test_compiled_equals_eager)
{
    bool sym = _i == 1;
    tt_compiled *c = NN(tt_compile(
        f_step, 2, 5,
        &(tt_trace_opts){.mode = sym ? TT_TRACE_SYMBOLIC : TT_TRACE_FAKE, .fullgraph = true}));
    const int64_t shapes[2][2][2] = {{{3, 4}, {2, 5}}, {{5, 2}, {4, 3}}};
    tt_tensor *in[2][2];
    for (int k = 0; k < 2; k++) {
        int s = sym ? k : 0;
        in[k][0] = NN(tt_zeros(2, shapes[s][0], TT_F32));
        in[k][1] = NN(tt_full(2, shapes[s][1], 1, TT_F64));
    }
    tt_tensor *ce[2][5], *ee[2][5];
    tt_manual_seed(21);
    for (int k = 0; k < 2; k++) {
        tt_status st = tt_compiled_call(c, in[k], ce[k]);
        ck_assert_msg(st == TT_OK, "compiled call %d: %s", k, tt_errmsg());
    }
    tt_manual_seed(21);
    for (int k = 0; k < 2; k++)
        OK(f_step(in[k], 2, ee[k], 5, NULL));
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < 5; i++) {
            char what[64];
            snprintf(what, sizeof what, "call %d, output %d", k, i);
            tt_test_assert_same_bits(ce[k][i], ee[k][i], what);
        }
    /* The second call drew anew. */
    double *v0 = tt_test_values(ce[0][3]), *v1 = tt_test_values(ce[1][3]);
    ck_assert(memcmp(v0, v1, 5 * sizeof(double)) != 0);
    free(v0), free(v1);
    for (int k = 0; k < 2; k++) {
        for (int i = 0; i < 5; i++)
            tt_release(ce[k][i]), tt_release(ee[k][i]);
        tt_release(in[k][0]), tt_release(in[k][1]);
    }
    tt_clear_error();
    tt_compiled_free(c);
    ck_assert_msg(tt_errcode() == TT_OK, "freeing the plan: %s", tt_errmsg());
}
END_TEST

/* No gradient: bernoulli's and multinomial's results carry none; uniform_
 * and normal_ pass none to what self held (a zero gradient). */
START_TEST(test_no_gradient)
{
    tt_tensor *x = NN(tt_full(1, (int64_t[]){4}, 0.5, TT_F64));
    OK(tt_set_requires_grad(x, true));
    tt_tensor *b = NN(tt_bernoulli(x));
    ck_assert(!tt_requires_grad(b));
    tt_tensor *m = NN(tt_multinomial(x, 2, false));
    ck_assert(!tt_requires_grad(m));
    tt_tensor *y = NN(tt_mul_scalar(x, 3));
    OK(tt_normal_(y, 0, 1));
    tt_tensor *w = NN(tt_mul(y, x)); /* d/dx = y (the new values), not 3 * ... */
    tt_tensor *s = NN(tt_sum_all(w));
    tt_tensor *g = NULL;
    OK(tt_grad(1, &s, NULL, 1, &x, &g));
    tt_test_assert_close(g, y, 1e-12, "the gradient skips the overwritten values");
    tt_release(g), tt_release(s), tt_release(w), tt_release(y), tt_release(m), tt_release(b),
        tt_release(x);
}
END_TEST

/* The fake path gives the real metadata without drawing. */
START_TEST(test_fake_metadata)
{
    tt_tensor *x = NN(tt_fake_empty(2, (tt_size[]){3, 5}, TT_F32));
    tt_tensor *b = NN(tt_bernoulli(x));
    ck_assert_int_eq(tt_dtype_of(b), TT_F32);
    ck_assert_int_eq(tt_dim_size(b, 1), 5);
    tt_tensor *m = NN(tt_multinomial(x, 4, true));
    ck_assert_int_eq(tt_dtype_of(m), TT_I64);
    ck_assert_int_eq(tt_dim_size(m, 0), 3);
    ck_assert_int_eq(tt_dim_size(m, 1), 4);
    OK(tt_uniform_(x, 0, 1));
    tt_release(m), tt_release(b), tt_release(x);
}
END_TEST

/* ---------------------------------------------------------------- errors */

static tt_tensor *P1, *PI, *PN, *P0, *P3D, *Z2, *E0;

static void errors_setup(void)
{
    tt_test_setup();
    static const double neg[3] = {0.2, -0.3, 0.5}, inf[3] = {0.2, INFINITY, 0.5},
                        nan_[3] = {0.2, NAN, 0.5};
    static const double zrow[4] = {0.2, 0.3, 0, 0};
    P1 = NN(tt_from_data(1, (int64_t[]){3}, TT_F64, neg));
    PI = NN(tt_from_data(1, (int64_t[]){3}, TT_F64, inf));
    PN = NN(tt_from_data(1, (int64_t[]){3}, TT_F64, nan_));
    P0 = NN(tt_from_data(2, (int64_t[]){2, 2}, TT_F64, zrow));
    P3D = NN(tt_ones(3, (int64_t[]){2, 2, 2}, TT_F32));
    Z2 = NN(tt_zeros(1, (int64_t[]){3}, TT_I64));
    E0 = NN(tt_ones(1, (int64_t[]){0}, TT_F64));
}

static void errors_teardown(void)
{
    tt_release(P1), tt_release(PI), tt_release(PN), tt_release(P0), tt_release(P3D),
        tt_release(Z2), tt_release(E0);
    tt_test_teardown();
}

#define RANDOM_ERRORS(X)                                                                        \
    X(bernoulli_int, tt_bernoulli(Z2), TT_EDTYPE, "tt::bernoulli", "'self'", "i64")             \
    X(bernoulli_out_of_range, tt_bernoulli(P1), TT_EINVAL, "tt::bernoulli", "[0, 1]")           \
    X(bernoulli_nan, tt_bernoulli(PN), TT_EINVAL, "tt::bernoulli", "NaN")                       \
    X(bernoulli_p_range, tt_bernoulli_p(P1, 1.5), TT_EINVAL, "tt::bernoulli", "'p'", "1.5")     \
    X(uniform_int, tt_uniform_(Z2, 0, 1), TT_EDTYPE, "tt::uniform_", "'self'", "i64")           \
    X(uniform_from_gt_to, tt_uniform_(P1, 1, 0), TT_EINVAL, "tt::uniform_", "from=1 > to=0")    \
    X(uniform_inf, tt_uniform_(P1, 0, INFINITY), TT_EINVAL, "tt::uniform_", "'to'",             \
      "out of bounds")                                                                          \
    X(normal_int, tt_normal_(Z2, 0, 1), TT_EDTYPE, "tt::normal_", "'self'", "i64")              \
    X(normal_neg_std, tt_normal_(P1, 0, -1), TT_EINVAL, "tt::normal_", "'std'", "-1")           \
    X(randint_empty_range, tt_randint(5, 5, 1, (int64_t[]){2}, TT_I64), TT_EINVAL,              \
      "tt::randint", "'high'", "low=5 >= high=5")                                               \
    X(randint_u8_range, tt_randint(0, 300, 1, (int64_t[]){2}, TT_U8), TT_EINVAL,                \
      "tt::randint", "out of bounds for dtype u8")                                              \
    X(randint_neg_size, tt_randint(0, 3, 1, (int64_t[]){-1}, TT_I64), TT_EINVAL, "tt::randint") \
    X(randperm_neg, tt_randperm(-1, TT_I64), TT_EINVAL, "tt::randperm", "'n'", "-1")            \
    X(randperm_bool, tt_randperm(2, TT_BOOL), TT_EDTYPE, "tt::randperm", "bool")                \
    X(randperm_u8, tt_randperm(300, TT_U8), TT_EINVAL, "tt::randperm", "u8")                    \
    X(multinomial_negative, tt_multinomial(P1, 2, false), TT_EINVAL, "tt::multinomial",         \
      "inf, NaN or an element < 0")                                                             \
    X(multinomial_inf, tt_multinomial(PI, 2, true), TT_EINVAL, "tt::multinomial",               \
      "inf, NaN or an element < 0")                                                             \
    X(multinomial_nan, tt_multinomial(PN, 1, false), TT_EINVAL, "tt::multinomial",              \
      "inf, NaN or an element < 0")                                                             \
    X(multinomial_zero_row, tt_multinomial(P0, 1, true), TT_EINVAL, "tt::multinomial",          \
      "(row 1)", "sum to 0")                                                                    \
    X(multinomial_too_many, tt_multinomial(P0, 3, false), TT_EINVAL, "tt::multinomial",         \
      "cannot draw 3 samples without replacement from 2 categories")                            \
    X(multinomial_zero_samples, tt_multinomial(P0, 0, true), TT_EINVAL, "tt::multinomial",      \
      "'num_samples'", "got 0")                                                                 \
    X(multinomial_3d, tt_multinomial(P3D, 1, true), TT_ESHAPE, "tt::multinomial",               \
      "1 or 2 dims", "got 3")                                                                   \
    X(multinomial_int, tt_multinomial(Z2, 1, true), TT_EDTYPE, "tt::multinomial", "i64")      \
    /* An empty row is an empty distribution, not out of memory. */                            \
    X(multinomial_no_categories, tt_multinomial(E0, 1, true), TT_EINVAL, "tt::multinomial",     \
      "sum to 0")

TT_ERROR_TABLE(RANDOM_ERRORS, random_errors);

START_TEST(test_errors)
{
    tt_test_run_error_case(&random_errors[_i], _i);
}
END_TEST

static Suite *random_suite(void)
{
    Suite *s = suite_create("ops_random");
    TCase *tc = tt_tcase("distributions");
    tcase_add_test(tc, test_bernoulli_distribution);
    tcase_add_test(tc, test_uniform_normal_distribution);
    tcase_add_test(tc, test_randint_distribution);
    tcase_add_test(tc, test_randperm_is_permutation);
    tcase_add_test(tc, test_multinomial_distribution);
    tcase_add_test(tc, test_reproducible_under_one_seed);
    tcase_add_loop_test(tc, test_compiled_equals_eager, 0, 2);
    tcase_add_test(tc, test_no_gradient);
    tcase_add_test(tc, test_fake_metadata);
    suite_add_tcase(s, tc);
    tc = tt_tcase_with("errors", errors_setup, errors_teardown);
    tcase_add_loop_test(tc, test_errors, 0, TT_TABLE_LEN(random_errors));
    suite_add_tcase(s, tc);
    return s;
}

TT_TEST_MAIN(random_suite)
