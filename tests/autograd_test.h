/* The helpers the autograd suites share (test_autograd.c,
 * test_derivatives.c): tensors from literal values, gradient checks, and a
 * deterministic generator that keeps values away from kinks. */
#ifndef TT_AUTOGRAD_TEST_H
#define TT_AUTOGRAD_TEST_H

#include "tt_test.h"

#include <math.h>
#include <stdint.h>

#define A(...) ((const int64_t[]){__VA_ARGS__})
#define D(...) ((const double[]){__VA_ARGS__})

/* ------------------------------------------------------------ helpers */

static inline int64_t prod(int n, const int64_t *s)
{
    int64_t k = 1;
    for (int i = 0; i < n; i++)
        k *= s[i];
    return k;
}

/* A tensor of dtype dt holding v (row-major). */
static inline tt_tensor *mk(int nd, const int64_t *sz, tt_dtype dt, const double *v)
{
    tt_tensor *t = tt_from_data(nd, sz, TT_F64, v);
    ck_assert_msg(t != NULL, "tt_from_data: %s", tt_errmsg());
    if (dt != TT_F64) {
        tt_tensor *c = tt_to_dtype(t, dt);
        ck_assert_msg(c != NULL, "tt_to_dtype: %s", tt_errmsg());
        tt_release(t);
        t = c;
    }
    return t;
}

static inline tt_tensor *leaf(int nd, const int64_t *sz, tt_dtype dt, const double *v)
{
    tt_tensor *t = mk(nd, sz, dt, v);
    ck_assert_int_eq(tt_set_requires_grad(t, true), TT_OK);
    return t;
}

static inline tt_tensor *ok(tt_tensor *t)
{
    ck_assert_msg(t != NULL, "call failed: %s", tt_errmsg());
    return t;
}

/* Element k (row-major) of t as double, whatever its layout. */
static inline double at(const tt_tensor *t, int64_t k)
{
    int64_t idx[TT_MAX_DIMS];
    int nd = tt_ndim(t);
    for (int d = nd - 1; d >= 0; d--) {
        idx[d] = k % tt_sizes(t)[d];
        k /= tt_sizes(t)[d];
    }
    double v = NAN;
    OK(tt_get_at(t, nd, idx, &v, TT_HERE));
    return v;
}

static inline bool close_to(double got, double want, double tol)
{
    if (isnan(want) || isinf(want)) /* the edge cases of pow's derivative */
        return isnan(want) ? isnan(got) : got == want;
    return fabs(got - want) <= tol * (1 + fabs(want));
}

/* t has shape (nd, sz) and the values `want`. */
static inline void expect(const tt_tensor *t, int nd, const int64_t *sz, const double *want,
                   double tol)
{
    ck_assert_ptr_nonnull(t);
    ck_assert_int_eq(tt_ndim(t), nd);
    for (int d = 0; d < nd; d++)
        ck_assert_int_eq(tt_sizes(t)[d], sz[d]);
    for (int64_t k = 0; k < prod(nd, sz); k++)
        ck_assert_msg(close_to(at(t, k), want[k], tol), "element %lld: got %.12g, want %.12g",
                      (long long)k, at(t, k), want[k]);
}

/* x's .grad has x's shape and dtype, does not require grad, and holds want. */
static inline void expect_grad(const tt_tensor *x, const double *want, double tol)
{
    tt_tensor *g = tt_get_grad(x);
    ck_assert_msg(g != NULL, "no .grad");
    ck_assert_int_eq(tt_dtype_of(g), tt_dtype_of(x));
    ck_assert(!tt_requires_grad(g));
    ck_assert(tt_is_leaf(g));
    expect(g, tt_ndim(x), tt_sizes(x), want, tol);
    tt_release(g);
}

static inline void release_all(int n, tt_tensor **ts)
{
    for (int i = 0; i < n; i++)
        ts[i] = tt_release(ts[i]);
}

/* A small deterministic generator (xorshift), so values can be kept away
 * from the kinks of relu/abs/clamp. */
static uint64_t rng_state = 88172645463325252ull;
static inline double urand(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) / 9007199254740992.0;
}

typedef enum { DOM_ANY, DOM_POS, DOM_AWAY0, DOM_CLAMP, DOM_SMALLPOS } domain;

static inline double draw(domain d)
{
    double u = urand();
    switch (d) {
    case DOM_POS: return 0.3 + 1.7 * u;            /* log, sqrt, pow base */
    case DOM_SMALLPOS: return 0.5 + u;             /* divisors */
    case DOM_AWAY0: return (urand() < 0.5 ? -1 : 1) * (0.2 + u); /* relu, abs */
    case DOM_CLAMP: {                              /* bounds -0.5, 0.5 */
        double v = -1.2 + 2.4 * u;
        return fabs(fabs(v) - 0.5) < 0.1 ? v + 0.25 : v;
    }
    default: return -1.5 + 3 * u;
    }
}

static inline tt_tensor *rand_leaf(int nd, const int64_t *sz, domain dom)
{
    double v[64];
    int64_t n = prod(nd, sz);
    ck_assert(n <= 64);
    for (int64_t k = 0; k < n; k++)
        v[k] = draw(dom);
    return leaf(nd, sz, TT_F64, v);
}

#define FN1(NAME, EXPR)                                                        \
    static tt_status NAME(tt_tensor **in, int nin, tt_tensor **out, int nout,  \
                          void *ud)                                            \
    {                                                                          \
        (void)nin, (void)nout, (void)ud;                                       \
        tt_tensor *a = in[0];                                                  \
        out[0] = (EXPR);                                                       \
        return out[0] ? TT_OK : tt_errcode();                                  \
    }
#define FN2(NAME, EXPR)                                                        \
    static tt_status NAME(tt_tensor **in, int nin, tt_tensor **out, int nout,  \
                          void *ud)                                            \
    {                                                                          \
        (void)nin, (void)nout, (void)ud;                                       \
        tt_tensor *a = in[0], *b = in[1];                                      \
        out[0] = (EXPR);                                                       \
        return out[0] ? TT_OK : tt_errcode();                                  \
    }

#endif
