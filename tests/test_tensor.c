/* The runtime's tensors: factories, queries, views, copies, fake tensors,
 * symbolic sizes, scopes and strided iteration, checked over tables of
 * dtypes, shapes and input layouts against references computed here by
 * index arithmetic (PyTorch's semantics). */
#include "tt_test.h"

#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "tensor_helpers.h"

/* ============================================================ factories */

static const shape factory_shapes[] = {
    {0, {0}}, {1, {0}}, {1, {5}}, {2, {2, 3}}, {3, {2, 0, 3}},
    {3, {1, 1, 1}}, {4, {2, 3, 4, 5}}, {8, {1, 2, 1, 2, 1, 2, 1, 2}},
};
#define NFACTORY_SHAPES (int)(sizeof factory_shapes / sizeof factory_shapes[0])

START_TEST(test_empty_metadata)
{
    for (int d = 0; d < NDT; d++)
        for (int i = 0; i < NFACTORY_SHAPES; i++) {
            const shape *sh = &factory_shapes[i];
            int64_t st[TT_MAX_DIMS];
            contig_strides(sh->n, sh->s, st);
            tt_tensor *t = tt_empty(sh->n, sh->s, all_dtypes[d]);
            expect_meta(t, sh->n, sh->s, st, 0);
            ck_assert_int_eq(tt_dtype_of(t), all_dtypes[d]);
            ck_assert_int_eq(tt_numel(t), prod(sh->n, sh->s));
            ck_assert_uint_eq(tt_storage_nbytes(t),
                              (size_t)prod(sh->n, sh->s) * tt_dtype_size(all_dtypes[d]));
            ck_assert(tt_is_contiguous(t));
            ck_assert(!tt_is_fake(t));
            ck_assert(!tt_has_sym_sizes(t));
            ck_assert_uint_eq(tt_version(t), 0);
            if (tt_numel(t) > 0)
                ck_assert_ptr_nonnull(tt_data(t));
            tt_release(t);
        }
}
END_TEST

START_TEST(test_dtype_table)
{
    static const size_t sizes[NDT] = {4, 8, 8, 4, 1, 1};
    static const char *const names[NDT] = {"f32", "f64", "i64", "i32", "u8", "bool"};
    for (int d = 0; d < NDT; d++) {
        ck_assert_uint_eq(tt_dtype_size(all_dtypes[d]), sizes[d]);
        ck_assert_str_eq(tt_dtype_name(all_dtypes[d]), names[d]);
        ck_assert_int_eq(tt_dtype_from_name(names[d]), all_dtypes[d]);
        ck_assert(tt_dtype_is_float(all_dtypes[d]) == (d < 2));
    }
    ck_assert_int_eq(tt_dtype_from_name("float32"), TT_F32);
    ck_assert_int_eq(tt_dtype_from_name("double"), TT_F64);
    ck_assert_int_eq(tt_dtype_from_name("long"), TT_I64);
    ck_assert_int_eq(tt_dtype_from_name("int"), TT_I32);
    ck_assert_int_eq(tt_dtype_from_name("uint8"), TT_U8);
    ck_assert_int_eq(tt_dtype_from_name("f16"), -1);
    ck_assert_int_eq(tt_dtype_from_name(NULL), -1);
    ck_assert_str_eq(tt_dtype_name((tt_dtype)99), "?");
    ck_assert_uint_eq(tt_dtype_size((tt_dtype)99), 0);
    /* PyTorch's lattice: bool < u8 < i32 < i64 < f32 < f64, symmetric. */
    for (int a = 0; a < NDT; a++)
        for (int b = 0; b < NDT; b++) {
            static const int rank[NDT] = {4, 5, 3, 2, 1, 0};
            tt_dtype want = rank[a] >= rank[b] ? all_dtypes[a] : all_dtypes[b];
            ck_assert_int_eq(tt_promote_types(all_dtypes[a], all_dtypes[b]), want);
        }
}
END_TEST

static void expect_all(const tt_tensor *t, double v, const char *what)
{
    for (int64_t k = 0; k < tt_numel(t); k++)
        ck_assert_msg(getflat(t, k) == v, "%s %s: element %lld is %g, expected %g", what,
                      tt_dtype_name(tt_dtype_of(t)), (long long)k, getflat(t, k), v);
}

START_TEST(test_zeros_ones_full)
{
    static const double fills[] = {0, 1, 2.75, -3.5, 300, 1e10};
    for (int d = 0; d < NDT; d++) {
        tt_dtype dt = all_dtypes[d];
        for (int i = 0; i < NFACTORY_SHAPES; i++) {
            const shape *sh = &factory_shapes[i];
            tt_tensor *z = tt_zeros(sh->n, sh->s, dt), *o = tt_ones(sh->n, sh->s, dt);
            expect_meta(z, sh->n, sh->s, NULL, 0);
            expect_meta(o, sh->n, sh->s, NULL, 0);
            expect_all(z, 0, "zeros");
            expect_all(o, 1, "ones");
            tt_release(z);
            tt_release(o);
        }
        for (size_t f = 0; f < sizeof fills / sizeof fills[0]; f++) {
            if (fills[f] == 1e10 && (dt == TT_I32 || dt == TT_U8))
                continue; /* out of range: unspecified in PyTorch too */
            tt_tensor *t = tt_full(TT_SHAPE(3, 4), fills[f], dt);
            expect_all(t, conv(fills[f], dt), "full");
            tt_release(t);
            tt_tensor *s = tt_scalar(fills[f], dt);
            expect_meta(s, 0, NULL, NULL, 0);
            ck_assert_int_eq(tt_numel(s), 1);
            double v;
            ck_assert_int_eq(tt_item(s, &v), TT_OK);
            ck_assert_double_eq(v, conv(fills[f], dt));
            tt_release(s);
        }
    }
}
END_TEST

static void expect_values(const tt_tensor *t, int n, const double *want, const char *what)
{
    ck_assert_msg(tt_ndim(t) == 1 && tt_numel(t) == n, "%s %s: %lld elements, expected %d",
                  what, tt_dtype_name(tt_dtype_of(t)), (long long)tt_numel(t), n);
    for (int i = 0; i < n; i++) {
        double v = getflat(t, i);
        ck_assert_msg(v == conv(want[i], tt_dtype_of(t)),
                      "%s %s[%d] is %.17g, expected %.17g", what,
                      tt_dtype_name(tt_dtype_of(t)), i, v, conv(want[i], tt_dtype_of(t)));
    }
}

START_TEST(test_arange)
{
    static const struct {
        double start, end, step;
        int n;
        double v[8];
        bool float_only;
    } cases[] = {
        {0, 5, 1, 5, {0, 1, 2, 3, 4}, false},
        {2, 9, 3, 3, {2, 5, 8}, false},
        {5, 0, -1, 5, {5, 4, 3, 2, 1}, false},
        {3, 3, 1, 0, {0}, false},
        {-4, 4, 4, 2, {-4, 0}, false},
        {1, 2.5, 0.5, 3, {1, 1.5, 2}, true},
        {0, 1, 0.25, 4, {0, 0.25, 0.5, 0.75}, true},
        {0, -1, -0.5, 2, {0, -0.5}, true},
    };
    for (int d = 0; d < NDT; d++)
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            tt_dtype dt = all_dtypes[d];
            if (cases[c].float_only && !tt_dtype_is_float(dt))
                continue;
            if (dt == TT_BOOL || (dt == TT_U8 && cases[c].v[0] < 0))
                continue;
            tt_tensor *t = tt_arange(cases[c].start, cases[c].end, cases[c].step, dt);
            ck_assert_msg(t != NULL, "%s", tt_errmsg());
            ck_assert_int_eq(tt_dtype_of(t), dt);
            expect_values(t, cases[c].n, cases[c].v, "arange");
            tt_release(t);
        }
    /* The count is ceil((end - start) / step) even when step does not
     * divide the range. */
    tt_tensor *t = tt_arange(0, 10, 3, TT_I64);
    expect_values(t, 4, (const double[]){0, 3, 6, 9}, "arange");
    tt_release(t);
}
END_TEST

START_TEST(test_linspace)
{
    for (int d = 0; d < 2; d++) {
        tt_dtype dt = all_dtypes[d];
        tt_tensor *t = tt_linspace(0, 1, 5, dt);
        expect_values(t, 5, (const double[]){0, 0.25, 0.5, 0.75, 1}, "linspace");
        tt_release(t);
        t = tt_linspace(-10, 10, 1, dt); /* one step: the start (PyTorch) */
        expect_values(t, 1, (const double[]){-10}, "linspace steps=1");
        tt_release(t);
        t = tt_linspace(3, 7, 2, dt);
        expect_values(t, 2, (const double[]){3, 7}, "linspace steps=2");
        tt_release(t);
        t = tt_linspace(3, 7, 0, dt);
        expect_meta(t, 1, A(0), A(1), 0);
        tt_release(t);
        /* Descending. */
        t = tt_linspace(1, -1, 3, dt);
        expect_values(t, 3, (const double[]){1, 0, -1}, "linspace descending");
        tt_release(t);
    }
    /* The endpoint is exact, and the second half counts back from it as
     * PyTorch's kernel does. */
    static const double ends[][2] = {{0.1, 0.7}, {0, 1.0 / 3.0}, {-2.2, 9.9}, {1e-3, 1e3}};
    static const int64_t steps[] = {2, 3, 7, 10, 11, 100};
    for (size_t e = 0; e < sizeof ends / sizeof ends[0]; e++)
        for (size_t s = 0; s < sizeof steps / sizeof steps[0]; s++) {
            double a = ends[e][0], b = ends[e][1];
            int64_t n = steps[s];
            tt_tensor *t = tt_linspace(a, b, n, TT_F64);
            ck_assert_int_eq(tt_numel(t), n);
            double step = (b - a) / (double)(n - 1);
            for (int64_t i = 0; i < n; i++) {
                double want = i < n / 2 ? a + step * (double)i : b - step * (double)(n - 1 - i);
                ck_assert_msg(getflat(t, i) == want, "linspace(%g, %g, %lld)[%lld]", a, b,
                              (long long)n, (long long)i);
            }
            ck_assert(getflat(t, 0) == a);
            ck_assert(getflat(t, n - 1) == b);
            tt_release(t);
            tt_tensor *f = tt_linspace(a, b, n, TT_F32);
            ck_assert(getflat(f, n - 1) == (double)(float)b);
            tt_release(f);
        }
    /* Integer dtypes truncate the floating values. */
    tt_tensor *t = tt_linspace(0, 10, 4, TT_I64);
    expect_values(t, 4, (const double[]){0, 3, 6, 10}, "linspace i64");
    tt_release(t);
}
END_TEST

static void rand_values(tt_tensor *t, double *out)
{
    for (int64_t k = 0; k < tt_numel(t); k++)
        out[k] = getflat(t, k);
}

START_TEST(test_rand_randn)
{
    enum { N = 4000 };
    static double a[N], b[N], c[N];
    for (int d = 0; d < 2; d++) {
        tt_dtype dt = all_dtypes[d];
        tt_manual_seed(42);
        tt_tensor *r = tt_rand(TT_SHAPE(40, 100), dt);
        expect_meta(r, 2, A(40, 100), A(100, 1), 0);
        rand_values(r, a);
        double sum = 0;
        for (int i = 0; i < N; i++) {
            ck_assert_msg(a[i] >= 0 && a[i] < 1, "rand value %g out of [0, 1)", a[i]);
            sum += a[i];
        }
        ck_assert_double_eq_tol(sum / N, 0.5, 0.03);
        /* The next call continues the stream: different values. */
        tt_tensor *r2 = tt_rand(TT_SHAPE(N), dt);
        rand_values(r2, c);
        ck_assert(memcmp(a, c, sizeof a) != 0);
        /* Same seed, same values; other seed, other values. */
        tt_manual_seed(42);
        tt_tensor *r3 = tt_rand(TT_SHAPE(N), dt);
        rand_values(r3, b);
        ck_assert(memcmp(a, b, sizeof a) == 0);
        tt_manual_seed(43);
        tt_tensor *r4 = tt_rand(TT_SHAPE(N), dt);
        rand_values(r4, b);
        int same = 0;
        for (int i = 0; i < N; i++)
            same += a[i] == b[i];
        ck_assert_int_lt(same, 5);
        tt_release(r);
        tt_release(r2);
        tt_release(r3);
        tt_release(r4);

        tt_manual_seed(7);
        tt_tensor *n = tt_randn(TT_SHAPE(N), dt);
        rand_values(n, a);
        double mean = 0, var = 0;
        for (int i = 0; i < N; i++)
            mean += a[i];
        mean /= N;
        for (int i = 0; i < N; i++)
            var += (a[i] - mean) * (a[i] - mean);
        var /= N - 1;
        ck_assert_double_eq_tol(mean, 0, 0.06);
        ck_assert_double_eq_tol(var, 1, 0.08);
        int neg = 0;
        for (int i = 0; i < N; i++)
            neg += a[i] < 0;
        ck_assert_int_gt(neg, N / 3);
        tt_manual_seed(7);
        tt_tensor *n2 = tt_randn(TT_SHAPE(N), dt);
        rand_values(n2, b);
        ck_assert(memcmp(a, b, sizeof a) == 0);
        tt_release(n);
        tt_release(n2);
    }
    /* f32 and f64 draw the same stream. */
    tt_manual_seed(5);
    tt_tensor *x = tt_rand(TT_SHAPE(100), TT_F64);
    tt_manual_seed(5);
    tt_tensor *y = tt_rand(TT_SHAPE(100), TT_F32);
    for (int64_t k = 0; k < 100; k++)
        ck_assert_double_eq_tol(getflat(x, k), getflat(y, k), 1e-7);
    tt_release(x);
    tt_release(y);
    /* Integer dtypes are refused. */
    for (int d = 2; d < NDT; d++) {
        ck_assert_ptr_null(tt_randn(TT_SHAPE(3), all_dtypes[d]));
        ck_assert_error(TT_EDTYPE, "tt_randn: argument 'dtype' expects a floating point dtype");
        ck_assert_ptr_null(tt_rand(TT_SHAPE(3), all_dtypes[d]));
        ck_assert_error(TT_EDTYPE, tt_dtype_name(all_dtypes[d]));
    }
}
END_TEST

/* tt_randn's Box-Muller uses two uniforms per value: it reserves both, so
 * a tt_rand after it under the same seed draws fresh ones. (It reserved
 * one per value, and the rand's uniforms rebuilt the randn's values.) */
START_TEST(test_randn_reserves_its_uniforms)
{
    tt_manual_seed(1);
    tt_tensor *z = NN(tt_randn(TT_SHAPE(2), TT_F64)), *u = NN(tt_rand(TT_SHAPE(2), TT_F64));
    const double *zd = tt_data(z), *ud = tt_data(u);
    double rebuilt = sqrt(-2.0 * log(1.0 - ud[0])) * cos(6.283185307179586 * ud[1]);
    ck_assert_msg(rebuilt != zd[1], "tt_rand reused tt_randn's uniforms (%.17g)", zd[1]);
    /* the first randn after a seed keeps its values (counters 0 and 1) */
    tt_manual_seed(1);
    tt_tensor *z2 = NN(tt_randn(TT_SHAPE(2), TT_F64));
    tt_test_assert_same_bits(z2, z, "randn after the same seed");
    tt_release(z), tt_release(u), tt_release(z2);
}
END_TEST

START_TEST(test_rand_thread_count)
{
    /* Large enough for the parallel path; the values must not depend on
     * the number of threads. */
    enum { N = 200003 };
    double *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b);
    tt_set_num_threads(1);
    tt_manual_seed(99);
    tt_tensor *x = tt_randn(TT_SHAPE(N), TT_F64);
    ck_assert_int_eq(tt_to_buffer(x, a, N * sizeof *a), TT_OK);
    tt_set_num_threads(2);
    tt_manual_seed(99);
    tt_tensor *y = tt_randn(TT_SHAPE(N), TT_F64);
    ck_assert_int_eq(tt_to_buffer(y, b, N * sizeof *b), TT_OK);
    tt_set_num_threads(0);
    ck_assert(memcmp(a, b, N * sizeof *a) == 0);
    tt_release(x);
    tt_release(y);
    free(a);
    free(b);
}
END_TEST

START_TEST(test_from_data)
{
    double src[6] = {1.5, -2, 3, 0, 255, 7.25};
    for (int d = 0; d < NDT; d++) {
        tt_dtype dt = all_dtypes[d];
        /* Build the C array in the target dtype. */
        unsigned char buf[6 * 8];
        tt_tensor *tmp = tt_from_buffer(TT_SHAPE(6), NULL, dt, buf, sizeof buf, NULL, NULL);
        for (int i = 0; i < 6; i++)
            ck_assert_int_eq(tt_set(tmp, src[i], i), TT_OK);
        tt_release(tmp);
        tt_tensor *t = tt_from_data(TT_SHAPE(2, 3), dt, buf);
        expect_meta(t, 2, A(2, 3), A(3, 1), 0);
        ck_assert(tt_data(t) != (void *)buf);
        memset(buf, 0, sizeof buf); /* a copy: the tensor keeps its values */
        for (int i = 0; i < 6; i++)
            ck_assert_double_eq(getflat(t, i), conv(src[i], dt));
        tt_release(t);
    }
    /* Zero elements need no data. */
    tt_tensor *e = tt_from_data(TT_SHAPE(0, 4), TT_F32, NULL);
    expect_meta(e, 2, A(0, 4), A(4, 1), 0);
    tt_release(e);
}
END_TEST

typedef struct {
    int calls;
    void *data;
    void *ctx;
} release_log;

static void on_release(void *data, void *ctx)
{
    release_log *log = ctx;
    log->calls++;
    log->data = data;
    log->ctx = ctx;
}

START_TEST(test_from_buffer)
{
    float buf[12];
    for (int i = 0; i < 12; i++)
        buf[i] = (float)i;
    release_log log = {0};
    tt_tensor *t = tt_from_buffer(TT_SHAPE(3, 4), NULL, TT_F32, buf, sizeof buf,
                                  on_release, &log);
    expect_meta(t, 2, A(3, 4), A(4, 1), 0);
    ck_assert_ptr_eq(tt_data(t), buf);
    ck_assert_uint_eq(tt_storage_nbytes(t), sizeof buf);
    ck_assert_double_eq(getflat(t, 7), 7);
    /* Writes through the tensor (and its views) land in the buffer. */
    ck_assert_int_eq(tt_set(t, 42, 1, 2), TT_OK);
    ck_assert(buf[6] == 42);
    tt_tensor *col = tt_select(t, 1, 3);
    ck_assert_int_eq(tt_fill_(col, -1), TT_OK);
    ck_assert(buf[3] == -1 && buf[7] == -1 && buf[11] == -1 && buf[10] == 10);
    buf[0] = 100; /* and the other way round */
    ck_assert_double_eq(getflat(t, 0), 100);
    /* The callback runs once, when the last view goes. */
    tt_release(t);
    ck_assert_int_eq(log.calls, 0);
    tt_tensor *c = tt_clone(col);
    ck_assert(!tt_same_storage(c, col));
    tt_release(col);
    ck_assert_int_eq(log.calls, 1);
    ck_assert_ptr_eq(log.data, buf);
    ck_assert_ptr_eq(log.ctx, &log);
    tt_release(c);
    ck_assert_int_eq(log.calls, 1);

    /* Explicit strides: a column-major 3x4 matrix over the same buffer. */
    for (int i = 0; i < 12; i++)
        buf[i] = (float)i;
    log.calls = 0;
    t = tt_from_buffer(TT_SHAPE(3, 4), A(1, 3), TT_F32, buf, sizeof buf, on_release, &log);
    expect_meta(t, 2, A(3, 4), A(1, 3), 0);
    ck_assert(!tt_is_contiguous(t));
    for (int64_t i = 0; i < 3; i++)
        for (int64_t j = 0; j < 4; j++)
            ck_assert_double_eq(get(t, A(i, j)), (double)(i + 3 * j));
    tt_release(t);
    ck_assert_int_eq(log.calls, 1);

    /* Failure: the buffer stays the caller's, the callback is not called. */
    log.calls = 0;
    ck_assert_ptr_null(tt_from_buffer(TT_SHAPE(4, 4), NULL, TT_F32, buf, sizeof buf,
                                      on_release, &log));
    ck_assert_error(TT_EINVAL, "tt_from_buffer: argument 'nbytes' is 48 but the tensor "
                               "needs 64 bytes");
    tt_release(tt_from_buffer(TT_SHAPE(2, 2), NULL, TT_F32, buf, sizeof buf, on_release,
                              &log));
    tt_debug_fail_alloc(1);
    ck_assert_ptr_null(tt_from_buffer(TT_SHAPE(2, 2), NULL, TT_F32, buf, sizeof buf,
                                      on_release, &log));
    ck_assert_error(TT_ENOMEM, "out of memory");
    tt_debug_fail_alloc(2);
    ck_assert_ptr_null(tt_from_buffer(TT_SHAPE(2, 2), NULL, TT_F32, buf, sizeof buf,
                                      on_release, &log));
    ck_assert_error(TT_ENOMEM, "out of memory");
    tt_debug_fail_alloc(0);
    /* Only the successful call, released at once, called back. */
    ck_assert_int_eq(log.calls, 1);

    /* A 0-dim tensor over one element; no callback is fine. */
    double one = 3.5;
    t = tt_from_buffer(0, NULL, NULL, TT_F64, &one, sizeof one, NULL, NULL);
    double v;
    ck_assert_int_eq(tt_item(t, &v), TT_OK);
    ck_assert_double_eq(v, 3.5);
    tt_release(t);
}
END_TEST

START_TEST(test_new_empty)
{
    for (int d = 0; d < NDT; d++) {
        tt_tensor *like = tt_zeros(TT_SHAPE(2, 3), all_dtypes[d]);
        tt_tensor *t = tt_new_empty(like, TT_SHAPE(4, 1, 5));
        expect_meta(t, 3, A(4, 1, 5), A(5, 5, 1), 0);
        ck_assert_int_eq(tt_dtype_of(t), all_dtypes[d]);
        ck_assert(!tt_is_fake(t));
        ck_assert(!tt_same_storage(t, like));
        tt_release(t);
        tt_tensor *f = tt_fake_empty(TT_SHAPE(7), all_dtypes[d]);
        t = tt_new_empty(f, TT_SHAPE(2, 2));
        expect_meta(t, 2, A(2, 2), A(2, 1), 0);
        ck_assert(tt_is_fake(t));
        ck_assert_int_eq(tt_dtype_of(t), all_dtypes[d]);
        ck_assert(!tt_same_storage(t, f));
        tt_release(t);
        tt_release(f);
        tt_release(like);
    }
}
END_TEST

START_TEST(test_empty_like)
{
    static const struct {
        int n;
        int64_t sizes[4], strides[4];
    } dense[] = {
        {2, {3, 4}, {4, 1}},          /* contiguous */
        {2, {3, 4}, {1, 3}},          /* transposed */
        {3, {2, 3, 4}, {1, 8, 2}},    /* permuted (1, 2, 0) */
        {3, {2, 3, 4}, {12, 1, 3}},   /* last two swapped */
        {3, {2, 1, 3}, {3, 100, 1}},  /* odd stride on a size-1 dim: kept */
        {4, {2, 1, 3, 4}, {1, 1, 8, 2}},
        {0, {0}, {0}},
        {1, {1}, {7}},
    };
    for (size_t c = 0; c < sizeof dense / sizeof dense[0]; c++) {
        int n = dense[c].n;
        tt_tensor *base = tt_empty_strided(n, dense[c].sizes, dense[c].strides, TT_F64);
        ck_assert_msg(base != NULL, "%s", tt_errmsg());
        tt_tensor *t = tt_empty_like(base);
        expect_meta(t, n, dense[c].sizes, dense[c].strides, 0);
        ck_assert(!tt_same_storage(t, base));
        ck_assert_int_eq(tt_dtype_of(t), TT_F64);
        tt_release(t);
        tt_release(base);
    }
    /* Non-dense inputs (gaps, overlap, offsets) give dense outputs with
     * the dims in the order of the input's strides (row-major where the
     * order is row-major or undecided), as PyTorch's empty_like. */
    tt_tensor *base = tt_zeros(TT_SHAPE(6, 4), TT_I32);
    tt_tensor *sl = tt_slice(base, 0, 1, 6, 2);   /* [3, 4] strides [8, 1] */
    tt_tensor *col = tt_narrow(base, 1, 1, 2);     /* [6, 2] strides [4, 1] */
    tt_tensor *row0 = tt_select(base, 0, 0);
    tt_tensor *ex = tt_expand(row0, TT_SHAPE(5, 4)); /* [5, 4] strides [0, 1] */
    tt_tensor *slt = tt_transpose(sl, 0, 1);       /* [4, 3] strides [1, 8] */
    tt_tensor *empty = tt_empty_strided(TT_SHAPE(0, 3), A(1, 5), TT_I32);
    tt_tensor *cases[] = {sl, col, ex, slt, empty};
    for (int i = 0; i < 5; i++) {
        int64_t st[TT_MAX_DIMS];
        contig_strides(tt_ndim(cases[i]), tt_sizes(cases[i]), st);
        if (cases[i] == slt) { /* [4, 3] strides [1, 8]: column-major */
            st[0] = 1;
            st[1] = 4;
        } else if (cases[i] == empty) { /* empty: dense whatever its strides */
            st[0] = 1;
            st[1] = 5;
        }
        tt_tensor *t = tt_empty_like(cases[i]);
        expect_meta(t, tt_ndim(cases[i]), tt_sizes(cases[i]), st, 0);
        ck_assert_int_eq(tt_dtype_of(t), TT_I32);
        tt_release(t);
    }
    for (int i = 0; i < 5; i++)
        tt_release(cases[i]);
    tt_release(row0);
    tt_release(base);
    /* A narrow of a dense tensor keeps an offset but is dense itself: its
     * strides are kept, the offset is not. */
    base = tt_zeros(TT_SHAPE(4, 3), TT_F32);
    tt_tensor *rows = tt_narrow(base, 0, 1, 2);
    tt_tensor *t = tt_empty_like(rows);
    expect_meta(t, 2, A(2, 3), A(3, 1), 0);
    tt_release(t);
    tt_release(rows);
    /* Fake in, fake out. */
    tt_tensor *f = tt_fake_empty_strided(TT_SHAPE(3, 4), A(1, 3), TT_BOOL);
    t = tt_empty_like(f);
    expect_meta(t, 2, A(3, 4), A(1, 3), 0);
    ck_assert(tt_is_fake(t));
    ck_assert_int_eq(tt_dtype_of(t), TT_BOOL);
    tt_release(t);
    tt_release(f);
    tt_release(base);
}
END_TEST

START_TEST(test_empty_strided)
{
    static const struct {
        int n;
        int64_t sizes[3], strides[3];
        size_t span; /* elements */
        bool contiguous;
    } cases[] = {
        {2, {3, 4}, {4, 1}, 12, true},
        {2, {3, 4}, {1, 3}, 12, false},
        {2, {3, 4}, {8, 1}, 20, false},
        {2, {3, 4}, {0, 1}, 4, false},
        {3, {2, 1, 3}, {3, 50, 1}, 6, true},
        {1, {0}, {5}, 0, true},
        {2, {2, 2}, {1, 1}, 3, false},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int d = 0; d < NDT; d++) {
            tt_tensor *t = tt_empty_strided(cases[c].n, cases[c].sizes, cases[c].strides,
                                            all_dtypes[d]);
            expect_meta(t, cases[c].n, cases[c].sizes, cases[c].strides, 0);
            ck_assert_uint_eq(tt_storage_nbytes(t),
                              cases[c].span * tt_dtype_size(all_dtypes[d]));
            ck_assert(tt_is_contiguous(t) == cases[c].contiguous);
            tt_release(t);
        }
}
END_TEST

/* ============================================================== queries */

START_TEST(test_queries)
{
    tt_tensor *t = tt_zeros(TT_SHAPE(2, 3, 4), TT_F32);
    ck_assert_int_eq(tt_ndim(t), 3);
    ck_assert_int_eq(tt_numel(t), 24);
    static const int64_t sz[] = {2, 3, 4}, st[] = {12, 4, 1};
    for (int d = -3; d < 3; d++) {
        int k = d < 0 ? d + 3 : d;
        ck_assert_int_eq(tt_dim_size(t, d), sz[k]);
        ck_assert_int_eq(tt_dim_stride(t, d), st[k]);
    }
    ck_assert_int_eq(tt_storage_offset(t), 0);
    tt_tensor *s = tt_select(t, 1, 2); /* [2, 4], offset 8 */
    ck_assert_int_eq(tt_storage_offset(s), 8);
    tt_tensor *n = tt_narrow(s, 1, 1, 2); /* [2, 2], offset 9 */
    expect_meta(n, 2, A(2, 2), A(12, 1), 9);
    ck_assert_int_eq(tt_numel(n), 4);
    ck_assert_uint_eq(tt_storage_nbytes(n), 24 * 4);
    ck_assert(tt_same_storage(t, n));
    ck_assert(tt_same_storage(n, s));
    tt_tensor *o = tt_zeros(TT_SHAPE(2, 3, 4), TT_F32);
    ck_assert(!tt_same_storage(t, o));
    ck_assert(!tt_same_storage(t, NULL));
    tt_tensor *sc = tt_scalar(1, TT_I64);
    ck_assert_int_eq(tt_ndim(sc), 0);
    ck_assert_int_eq(tt_numel(sc), 1);
    tt_release(sc);
    tt_release(o);
    tt_release(n);
    tt_release(s);
    tt_release(t);
}
END_TEST

START_TEST(test_is_contiguous)
{
    static const struct {
        int n;
        int64_t sizes[4], strides[4];
        bool want;
    } cases[] = {
        {2, {2, 3}, {3, 1}, true},
        {2, {2, 3}, {1, 2}, false},
        {2, {2, 3}, {4, 1}, false},         /* padded rows */
        {3, {2, 1, 3}, {3, 99, 1}, true},   /* size-1 dim: any stride */
        {2, {1, 1}, {5, 7}, true},
        {3, {1, 4, 1}, {0, 1, 13}, true},
        {2, {0, 3}, {1, 5}, true},          /* no elements */
        {3, {2, 0, 3}, {0, 0, 0}, true},
        {1, {3}, {2}, false},
        {1, {3}, {0}, false},
        {0, {0}, {0}, true},
        {4, {2, 3, 4, 5}, {60, 20, 5, 1}, true},
        {4, {2, 3, 4, 5}, {60, 20, 1, 4}, false},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        tt_tensor *t = tt_empty_strided(cases[c].n, cases[c].sizes, cases[c].strides, TT_F32);
        ck_assert_msg(tt_is_contiguous(t) == cases[c].want, "case %zu", c);
        /* contiguous() returns a view of the same data exactly when it is
         * (a new tensor, never t itself, so scopes own it). */
        tt_tensor *k = tt_contiguous(t);
        ck_assert(k != t);
        ck_assert(tt_same_storage(k, t) == cases[c].want);
        ck_assert(tt_is_contiguous(k));
        tt_release(k);
        tt_release(t);
    }
}
END_TEST

START_TEST(test_version_counter)
{
    tt_tensor *t = tt_zeros(TT_SHAPE(3, 4), TT_F32);
    tt_tensor *v = tt_transpose(t, 0, 1);
    tt_tensor *o = tt_zeros(TT_SHAPE(3, 4), TT_F32);
    ck_assert_uint_eq(tt_version(t), 0);
    ck_assert_int_eq(tt_set(t, 1, 0, 0), TT_OK);
    ck_assert_uint_eq(tt_version(t), 1);
    ck_assert_uint_eq(tt_version(v), 1); /* shared by views */
    ck_assert_int_eq(tt_fill_(v, 2), TT_OK);
    ck_assert_uint_eq(tt_version(t), 2);
    ck_assert_int_eq(tt_copy_(t, o), TT_OK);
    ck_assert_uint_eq(tt_version(v), 3);
    ck_assert_uint_eq(tt_version(o), 0); /* the source is not written */
    tt_bump_version(v);
    ck_assert_uint_eq(tt_version(t), 4);
    /* Reads do not bump it. */
    double x;
    ck_assert_int_eq(tt_get(t, &x, 1, 1), TT_OK);
    tt_tensor *c = tt_clone(t);
    ck_assert_uint_eq(tt_version(t), 4);
    ck_assert_uint_eq(tt_version(c), 0);
    /* A view made later sees the count so far. */
    tt_tensor *w = tt_select(t, 0, 1);
    ck_assert_uint_eq(tt_version(w), 4);
    ck_assert_uint_eq(tt_version(NULL), 0);
    tt_release(w);
    tt_release(c);
    tt_release(o);
    tt_release(v);
    tt_release(t);
}
END_TEST

START_TEST(test_describe)
{
    char buf[128];
    tt_tensor *t = tt_zeros(TT_SHAPE(2, 3), TT_F32);
    ck_assert_str_eq(tt_shape_str(t, buf, sizeof buf), "[2, 3]");
    ck_assert_str_eq(tt_strides_str(t, buf, sizeof buf), "[3, 1]");
    ck_assert_str_eq(tt_describe(t, buf, sizeof buf), "f32[2, 3]");
    tt_tensor *tr = tt_t(t);
    ck_assert_str_eq(tt_strides_str(tr, buf, sizeof buf), "[1, 3]");
    tt_tensor *s = tt_scalar(1, TT_BOOL);
    ck_assert_str_eq(tt_shape_str(s, buf, sizeof buf), "[]");
    ck_assert_str_eq(tt_describe(s, buf, sizeof buf), "bool[]");
    tt_tensor *f = tt_fake_empty(TT_SHAPE(4, 0, 1), TT_I64);
    ck_assert_str_eq(tt_describe(f, buf, sizeof buf), "fake i64[4, 0, 1]");
    ck_assert_str_eq(tt_describe(NULL, buf, sizeof buf), "NULL");
    ck_assert_str_eq(tt_shape_str(NULL, buf, sizeof buf), "[]");
    for (int d = 0; d < NDT; d++) {
        tt_tensor *x = tt_empty(TT_SHAPE(5), all_dtypes[d]);
        char want[32];
        snprintf(want, sizeof want, "%s[5]", tt_dtype_name(all_dtypes[d]));
        ck_assert_str_eq(tt_describe(x, buf, sizeof buf), want);
        tt_release(x);
    }
    /* Small buffers truncate and stay terminated. */
    tt_tensor *big = tt_fake_empty(TT_SHAPE(123456, 7890, 5), TT_F32);
    char tiny[8];
    memset(tiny, 'x', sizeof tiny);
    tt_shape_str(big, tiny, sizeof tiny);
    ck_assert_uint_lt(strlen(tiny), sizeof tiny);
    ck_assert(strncmp(tiny, "[123456", 7) == 0);
    memset(tiny, 'x', sizeof tiny);
    tt_describe(big, tiny, sizeof tiny);
    ck_assert_str_eq(tiny, "fake f3");
    tt_release(big);
    tt_release(f);
    tt_release(s);
    tt_release(tr);
    tt_release(t);
}
END_TEST

/* ================================================================= copy */

static const double copy_values[] = {0, 1, 2.5, -3.75, 100, 300, -1, 0.5, 7, 42, -128, 255};
#define NCOPY_VALUES (int)(sizeof copy_values / sizeof copy_values[0])

/* Fills t (any layout; expanded writes repeat) with copy_values in
 * row-major order; returns what element k holds afterwards via ref(). */
static void fill_pattern(tt_tensor *t)
{
    int64_t idx[TT_MAX_DIMS];
    for (int64_t k = 0; k < tt_numel(t); k++) {
        unravel(tt_ndim(t), tt_sizes(t), k, idx);
        ck_assert_int_eq(tt_set_at(t, tt_ndim(t), idx, copy_values[k % NCOPY_VALUES], TT_HERE),
                         TT_OK);
    }
}

START_TEST(test_copy_dtypes_layouts)
{
    /* dst and src over every dtype pair and layout pair; src not expanded
     * when it is written (an expanded tensor has repeated elements). */
    int combos = 0;
    for (int dd = 0; dd < NDT; dd++)
        for (int sd = 0; sd < NDT; sd++)
            for (int dl = 0; dl < NLAYOUTS; dl++)
                for (int sl = 0; sl < NLAYOUTS; sl++) {
                    if (dl == L_EXPANDED)
                        continue;
                    tt_dtype dt = all_dtypes[dd], st = all_dtypes[sd];
                    tt_tensor *src = make_input(sl == L_EXPANDED ? L_CONTIG : sl,
                                                TT_SHAPE(2, 3, 4), st);
                    fill_pattern(src);
                    if (sl == L_EXPANDED) { /* [2, 3, 1] broadcast along the last dim */
                        tt_tensor *narrow = tt_narrow(src, 2, 1, 1);
                        tt_release(src);
                        src = tt_expand(narrow, TT_SHAPE(2, 3, 4));
                        tt_release(narrow);
                    }
                    tt_tensor *dst = make_input(dl, TT_SHAPE(2, 3, 4), dt);
                    uint64_t v0 = tt_version(dst);
                    ck_assert_int_eq(tt_copy_(dst, src), TT_OK);
                    ck_assert_uint_eq(tt_version(dst), v0 + 1);
                    for (int64_t k = 0; k < 24; k++) {
                        double want = conv(getflat(src, k), dt);
                        ck_assert_msg(getflat(dst, k) == want,
                                      "copy_ %s(%s) <- %s(%s): element %lld is %g, want %g",
                                      tt_dtype_name(dt), layout_name[dl], tt_dtype_name(st),
                                      layout_name[sl], (long long)k, getflat(dst, k), want);
                    }
                    tt_release(dst);
                    tt_release(src);
                    combos++;
                }
    ck_assert_int_eq(combos, NDT * NDT * 4 * NLAYOUTS);
}
END_TEST

START_TEST(test_conversion_values)
{
    /* Value by value, every dtype pair, through tt_to_dtype. */
    for (int a = 0; a < NDT; a++)
        for (int b = 0; b < NDT; b++) {
            tt_tensor *x = tt_empty(TT_SHAPE(NCOPY_VALUES), all_dtypes[a]);
            fill_pattern(x);
            tt_tensor *y = tt_to_dtype(x, all_dtypes[b]);
            ck_assert_int_eq(tt_dtype_of(y), all_dtypes[b]);
            ck_assert(!tt_same_storage(x, y));
            for (int i = 0; i < NCOPY_VALUES; i++) {
                double want = conv(conv(copy_values[i], all_dtypes[a]), all_dtypes[b]);
                ck_assert_msg(getflat(y, i) == want, "%s -> %s of %g: %g, want %g",
                              tt_dtype_name(all_dtypes[a]), tt_dtype_name(all_dtypes[b]),
                              copy_values[i], getflat(y, i), want);
            }
            tt_release(y);
            tt_release(x);
        }
    /* Spot values: truncation toward zero, u8 wrap, bool of NaN. */
    tt_tensor *f = tt_from_data(TT_SHAPE(5), TT_F64, (const double[]){-2.9, 2.9, -1, 256, NAN});
    tt_tensor *i = tt_to_dtype(f, TT_I32), *u = tt_to_dtype(f, TT_U8), *b = tt_to_dtype(f, TT_BOOL);
    ck_assert_double_eq(getflat(i, 0), -2);
    ck_assert_double_eq(getflat(i, 1), 2);
    ck_assert_double_eq(getflat(u, 2), 255);
    ck_assert_double_eq(getflat(u, 3), 0);
    ck_assert_double_eq(getflat(b, 4), 1);
    ck_assert_double_eq(getflat(b, 0), 1);
    tt_release(b);
    tt_release(u);
    tt_release(i);
    tt_release(f);
    /* i64 values beyond 2^53 survive i64 -> i64 copies bit for bit. */
    int64_t big[2] = {(1LL << 62) + 1, -((1LL << 60) + 3)};
    tt_tensor *x = tt_from_data(TT_SHAPE(2), TT_I64, big);
    tt_tensor *ux = tt_unsqueeze(x, 0);
    tt_tensor *t = tt_transpose(ux, 0, 1);
    tt_tensor *c = tt_contiguous(t);
    int64_t out[2];
    ck_assert_int_eq(tt_to_buffer(c, out, sizeof out), TT_OK);
    ck_assert(out[0] == big[0] && out[1] == big[1]);
    tt_release(c);
    tt_release(t);
    tt_release(ux);
    tt_release(x);
}
END_TEST

START_TEST(test_copy_broadcast)
{
    static const struct {
        int nd;
        int64_t dst[3];
        int ns;
        int64_t src[3];
    } cases[] = {
        {2, {2, 3}, 1, {3}},       {2, {2, 3}, 2, {2, 1}},    {2, {2, 3}, 0, {0}},
        {3, {2, 3, 4}, 2, {3, 1}}, {3, {2, 3, 4}, 3, {1, 3, 4}}, {3, {2, 3, 4}, 1, {1}},
        {2, {0, 3}, 1, {3}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int dl = 0; dl < NLAYOUTS; dl++) {
            if (dl == L_EXPANDED)
                continue;
            tt_tensor *dst = make_input(dl, cases[c].nd, cases[c].dst, TT_F32);
            tt_tensor *src = counting(cases[c].ns, cases[c].src, TT_I64);
            ck_assert_int_eq(tt_copy_(dst, src), TT_OK);
            int64_t di[3], si[3];
            for (int64_t k = 0; k < tt_numel(dst); k++) {
                unravel(cases[c].nd, tt_sizes(dst), k, di);
                for (int j = 0; j < cases[c].ns; j++) {
                    int i = j + cases[c].nd - cases[c].ns;
                    si[j] = cases[c].src[j] == 1 ? 0 : di[i];
                }
                ck_assert_double_eq(get(dst, di), get(src, si));
            }
            tt_release(src);
            tt_release(dst);
        }
    /* Copying a tensor onto itself and onto a view of itself (same
     * elements) changes nothing. */
    tt_tensor *t = counting(TT_SHAPE(3, 4), TT_F64);
    tt_tensor *v = tt_detach(t);
    ck_assert_int_eq(tt_copy_(t, t), TT_OK);
    ck_assert_int_eq(tt_copy_(v, t), TT_OK);
    for (int64_t k = 0; k < 12; k++)
        ck_assert_double_eq(getflat(t, k), (double)(k + 1));
    tt_release(v);
    tt_release(t);
}
END_TEST

/* PyTorch's compute_non_overlapping_and_dense, restated. */
static bool pt_dense(const tt_tensor *t)
{
    int n = tt_ndim(t);
    const tt_size *sz = tt_sizes(t), *st = tt_strides(t);
    if (n == 1)
        return sz[0] < 2 || st[0] == 1;
    int perm[TT_MAX_DIMS];
    for (int i = 0; i < n; i++)
        perm[i] = i;
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0; j--) {
            int a = perm[j - 1], b = perm[j];
            bool b_first = sz[b] >= 2 && (sz[a] < 2 || st[b] < st[a]);
            if (!b_first)
                break;
            perm[j - 1] = b;
            perm[j] = a;
        }
    int64_t req = 1;
    for (int i = 0; i < n; i++) {
        int d = perm[i];
        if (sz[d] < 2)
            return true;
        if (st[d] != req)
            return false;
        req *= sz[d];
    }
    return true;
}

/* PyTorch's preserve_format strides of a copy of t, restated: t's own when
 * dense (an empty tensor always is), else dense with the dims in the order
 * of t's strides, ties (equal strides, stride 0) kept in row-major order,
 * a size-0 dim stepping as size 1 (infer_dense_strides). */
static void pt_strides_like(const tt_tensor *t, int64_t *out)
{
    int n = tt_ndim(t);
    const tt_size *sz = tt_sizes(t), *st = tt_strides(t);
    if (pt_dense(t) || tt_numel(t) == 0) {
        memcpy(out, st, sizeof(int64_t) * (size_t)n);
        return;
    }
    int perm[TT_MAX_DIMS]; /* perm[0] moves fastest */
    for (int i = 0; i < n; i++)
        perm[i] = n - 1 - i;
    for (int i = 1; i < n; i++)
        for (int d0 = i - 1, d1 = i; d0 >= 0; d0--) {
            int a = perm[d0], b = perm[d1];
            if (st[a] == 0 || st[b] == 0 || (st[a] == st[b] && sz[a] <= sz[b]))
                continue; /* undecided: compare with the next one down */
            if (st[a] < st[b])
                break;
            perm[d0] = b;
            perm[d1] = a;
            d1 = d0;
        }
    int64_t step = 1;
    for (int i = 0; i < n; i++) {
        out[perm[i]] = step;
        step *= sz[perm[i]] > 1 ? sz[perm[i]] : 1;
    }
}

/* Dense and non-overlapping by brute force (for tensors with elements):
 * the elements cover numel consecutive storage positions exactly once. */
static bool brute_dense(const tt_tensor *t)
{
    int64_t n = tt_numel(t), lo = INT64_MAX;
    for (int64_t k = 0; k < n; k++)
        if (flat_off(t, k) < lo)
            lo = flat_off(t, k);
    unsigned char seen[64] = {0};
    for (int64_t k = 0; k < n; k++) {
        int64_t o = flat_off(t, k) - lo;
        if (o >= n || o >= 64 || seen[o]++)
            return false;
    }
    return true;
}

START_TEST(test_contiguous_clone_to_dtype)
{
    for (int l = 0; l < NLAYOUTS; l++)
        for (int sh = 0; sh < NVIEW_SHAPES; sh++)
            for (int d = 0; d < NDT; d++) {
                const shape *S = &view_shapes[sh];
                tt_dtype dt = all_dtypes[d];
                tt_tensor *in = make_input(l, S->n, S->s, dt);
                int64_t cst[TT_MAX_DIMS];
                contig_strides(S->n, S->s, cst);
                if (tt_numel(in) > 0)
                    ck_assert(pt_dense(in) == brute_dense(in));
                /* contiguous: a view of in when already contiguous, else a
                 * copy; never in itself */
                tt_tensor *c = tt_contiguous(in);
                ck_assert_ptr_ne(c, in);
                if (tt_is_contiguous(in)) {
                    ck_assert(tt_same_storage(c, in));
                    ck_assert_int_eq(tt_storage_offset(c), tt_storage_offset(in));
                } else {
                    ck_assert(!tt_same_storage(c, in));
                    expect_meta(c, S->n, S->s, cst, 0);
                }
                ck_assert(tt_is_contiguous(c));
                expect_same_values(c, in, "contiguous");
                tt_release(c);
                /* clone: new memory, the strides kept when dense, else
                 * the input's dim order */
                tt_tensor *k = tt_clone(in);
                int64_t want[TT_MAX_DIMS];
                pt_strides_like(in, want);
                ck_assert(!tt_same_storage(k, in));
                ck_assert_int_eq(tt_dtype_of(k), dt);
                expect_meta(k, S->n, S->s, want, 0);
                ck_assert_uint_eq(tt_version(k), 0);
                expect_same_values(k, in, "clone");
                tt_release(k);
                /* to_dtype: values converted, layout as clone */
                for (int e = 0; e < NDT; e++) {
                    tt_tensor *x = tt_to_dtype(in, all_dtypes[e]);
                    ck_assert_int_eq(tt_dtype_of(x), all_dtypes[e]);
                    ck_assert(!tt_same_storage(x, in));
                    expect_meta(x, S->n, S->s, want, 0);
                    for (int64_t q = 0; q < tt_numel(in); q++)
                        ck_assert(getflat(x, q) == conv(getflat(in, q), all_dtypes[e]));
                    tt_release(x);
                }
                tt_release(in);
            }
}
END_TEST

START_TEST(test_fill_strided)
{
    static const double fills[] = {3.25, -1, 0, 511};
    for (int d = 0; d < NDT; d++)
        for (size_t f = 0; f < sizeof fills / sizeof fills[0]; f++) {
            tt_dtype dt = all_dtypes[d];
            tt_tensor *base = tt_zeros(TT_SHAPE(4, 6), dt);
            /* every other column of rows 1..2, seen transposed */
            tt_tensor *a = tt_slice(base, 1, 1, 6, 2);
            tt_tensor *b = tt_narrow(a, 0, 1, 2);
            tt_tensor *v = tt_t(b);
            uint64_t v0 = tt_version(base);
            ck_assert_int_eq(tt_fill_(v, fills[f]), TT_OK);
            ck_assert_uint_eq(tt_version(base), v0 + 1);
            for (int64_t i = 0; i < 4; i++)
                for (int64_t j = 0; j < 6; j++) {
                    bool in = i >= 1 && i <= 2 && j % 2 == 1;
                    ck_assert_msg(get(base, A(i, j)) == (in ? conv(fills[f], dt) : 0),
                                  "%s fill %g: [%lld, %lld]", tt_dtype_name(dt), fills[f],
                                  (long long)i, (long long)j);
                }
            /* An expanded view writes its one element. */
            tt_tensor *row = tt_select(base, 0, 0);
            tt_tensor *one = tt_select(row, 0, 5);
            tt_tensor *ex = tt_expand(one, TT_SHAPE(3, 7));
            ck_assert_int_eq(tt_fill_(ex, 1), TT_OK);
            ck_assert_double_eq(get(base, A(0, 5)), 1);
            ck_assert_double_eq(get(base, A(0, 4)), 0);
            tt_release(ex);
            tt_release(one);
            tt_release(row);
            tt_release(v);
            tt_release(b);
            tt_release(a);
            tt_release(base);
        }
}
END_TEST

START_TEST(test_to_buffer)
{
    for (int d = 0; d < NDT; d++) {
        tt_dtype dt = all_dtypes[d];
        for (int l = 0; l < NLAYOUTS; l++) {
            tt_tensor *in = make_input(l, TT_SHAPE(2, 3, 4), dt);
            unsigned char buf[24 * 8 + 8];
            size_t es = tt_dtype_size(dt);
            memset(buf, 0xAB, sizeof buf);
            ck_assert_int_eq(tt_to_buffer(in, buf, 24 * es), TT_OK);
            ck_assert(buf[24 * es] == 0xAB); /* no overrun */
            /* Read it back as a contiguous tensor over the buffer. */
            tt_tensor *b = tt_from_buffer(TT_SHAPE(2, 3, 4), NULL, dt, buf, 24 * es, NULL, NULL);
            expect_same_values(b, in, layout_name[l]);
            tt_release(b);
            tt_release(in);
        }
    }
    /* Empty and 0-dim. */
    tt_tensor *e = tt_empty(TT_SHAPE(0, 3), TT_F32);
    ck_assert_int_eq(tt_to_buffer(e, NULL, 0), TT_OK);
    tt_release(e);
    tt_tensor *s = tt_scalar(-7, TT_I32);
    int32_t x = 0;
    ck_assert_int_eq(tt_to_buffer(s, &x, sizeof x), TT_OK);
    ck_assert_int_eq(x, -7);
    tt_release(s);
}
END_TEST

/* ================================================================= fake */

START_TEST(test_fake_factories)
{
    for (int d = 0; d < NDT; d++) {
        tt_dtype dt = all_dtypes[d];
        tt_tensor *f = tt_fake_empty(TT_SHAPE(2, 3, 4), dt);
        expect_meta(f, 3, A(2, 3, 4), A(12, 4, 1), 0);
        ck_assert(tt_is_fake(f));
        ck_assert(tt_is_contiguous(f));
        ck_assert_int_eq(tt_dtype_of(f), dt);
        ck_assert_uint_eq(tt_storage_nbytes(f), 24 * tt_dtype_size(dt));
        tt_tensor *g = tt_fake_empty_strided(TT_SHAPE(3, 4), A(1, 5), dt);
        expect_meta(g, 2, A(3, 4), A(1, 5), 0);
        ck_assert(tt_is_fake(g) && !tt_is_contiguous(g));
        ck_assert_uint_eq(tt_storage_nbytes(g), 18 * tt_dtype_size(dt));
        tt_release(g);
        tt_release(f);
    }
    /* fake_like keeps sizes, strides, offset and the storage size. */
    tt_tensor *base = tt_zeros(TT_SHAPE(5, 6), TT_F64);
    tt_tensor *sl = tt_slice(base, 1, 1, 6, 2);
    tt_tensor *real = tt_t(sl); /* [3, 5] strides [2, 6] offset 1 */
    tt_tensor *f = tt_fake_like(real);
    expect_meta(f, 2, A(3, 5), A(2, 6), 1);
    ck_assert(tt_is_fake(f));
    ck_assert(!tt_is_fake(real));
    ck_assert(!tt_same_storage(f, real));
    ck_assert_uint_eq(tt_storage_nbytes(f), 30 * 8);
    ck_assert_int_eq(tt_dtype_of(f), TT_F64);
    /* A fake of a fake. */
    tt_tensor *ff = tt_fake_like(f);
    expect_meta(ff, 2, A(3, 5), A(2, 6), 1);
    ck_assert(tt_is_fake(ff));
    tt_release(ff);
    tt_release(f);
    tt_release(real);
    tt_release(sl);
    tt_release(base);
}
END_TEST

START_TEST(test_fake_views_share_storage)
{
    tt_tensor *f = tt_fake_empty(TT_SHAPE(4, 6), TT_F32);
    tt_tensor *u = tt_unsqueeze(f, 0);
    tt_tensor *views[] = {
        tt_transpose(f, 0, 1),
        tt_slice(f, 1, 1, 5, 2),
        tt_select(f, 0, 2),
        tt_view(f, TT_SHAPE(2, 12)),
        tt_reshape(f, TT_SHAPE(24)),
        tt_expand(u, TT_SHAPE(3, 4, 6)),
        tt_as_strided(f, TT_SHAPE(2, 2), A(6, 1), 7),
        tt_detach(f),
        tt_narrow(f, 0, 1, 2),
        tt_flatten(f, 0, 1),
    };
    static const int64_t offsets[] = {0, 1, 12, 0, 0, 0, 7, 0, 6, 0};
    for (size_t i = 0; i < sizeof views / sizeof views[0]; i++) {
        ck_assert_msg(views[i] != NULL, "view %zu: %s", i, tt_errmsg());
        ck_assert(tt_is_fake(views[i]));
        ck_assert(tt_same_storage(views[i], f));
        ck_assert_int_eq(tt_storage_offset(views[i]), offsets[i]);
        ck_assert_uint_eq(tt_storage_nbytes(views[i]), 96);
    }
    expect_meta(views[1], 2, A(4, 2), A(6, 2), 1);
    expect_meta(views[5], 3, A(3, 4, 6), A(0, 6, 1), 0);
    /* Copies of a fake are fake and new. */
    tt_tensor *c = tt_contiguous(views[0]);
    expect_meta(c, 2, A(6, 4), A(4, 1), 0);
    ck_assert(tt_is_fake(c) && !tt_same_storage(c, f));
    tt_tensor *k = tt_clone(views[0]);
    expect_meta(k, 2, A(6, 4), A(1, 6), 0);
    ck_assert(tt_is_fake(k) && !tt_same_storage(k, f));
    tt_tensor *x = tt_to_dtype(views[1], TT_I64);
    expect_meta(x, 2, A(4, 2), A(2, 1), 0);
    ck_assert(tt_is_fake(x) && tt_dtype_of(x) == TT_I64);
    /* reshape of a non-viewable fake copies into a new fake */
    tt_tensor *r = tt_reshape(views[0], TT_SHAPE(24));
    ck_assert(tt_is_fake(r) && !tt_same_storage(r, f));
    /* in-place writes: metadata only, the version still counts */
    ck_assert_int_eq(tt_fill_(views[2], 1), TT_OK);
    ck_assert_int_eq(tt_copy_(views[0], c), TT_OK);
    ck_assert_uint_eq(tt_version(f), 2);
    tt_tensor *real = tt_zeros(TT_SHAPE(6), TT_F32);
    ck_assert_int_eq(tt_copy_(views[2], real), TT_OK); /* real into fake: fine */
    ck_assert_int_eq(tt_copy_(real, views[2]), TT_EFAKE);
    ck_assert_error(TT_EFAKE, "tt_copy_: cannot copy a fake tensor into a real one");
    tt_release(real);
    tt_release(r);
    tt_release(x);
    tt_release(k);
    tt_release(c);
    for (size_t i = 0; i < sizeof views / sizeof views[0]; i++)
        tt_release(views[i]);
    tt_release(u);
    tt_release(f);
}
END_TEST

static void noop_loop(char **data, const int64_t *strides, int64_t n, void *ctx)
{
    (void)data, (void)strides, (void)n, (void)ctx;
    ck_abort_msg("a loop ran on a fake tensor");
}

START_TEST(test_fake_data_access)
{
    tt_tensor *f = tt_fake_empty(TT_SHAPE(2, 3), TT_F32);
    tt_tensor *v = tt_transpose(f, 0, 1);
    double x;
    float buf[6];
    ck_assert_ptr_null(tt_data(f));
    ck_assert_error(TT_EFAKE, "tt_data: cannot access the data of fake f32[2, 3]");
    ck_assert_int_eq(tt_item(f, &x), TT_EFAKE);
    ck_assert_error(TT_EFAKE, "tt_item: cannot access the data of fake f32[2, 3]");
    ck_assert_int_eq(tt_get(v, &x, 0, 0), TT_EFAKE);
    ck_assert_error(TT_EFAKE, "tt_get: cannot access the data of fake f32[3, 2]");
    ck_assert_int_eq(tt_set(v, 1, 0, 0), TT_EFAKE);
    ck_assert_error(TT_EFAKE, "fake f32[3, 2]");
    ck_assert_int_eq(tt_to_buffer(f, buf, sizeof buf), TT_EFAKE);
    ck_assert_error(TT_EFAKE, "tt_to_buffer: cannot access the data of fake f32[2, 3]");
    /* The message names the caller's line. */
    ck_assert_error(TT_EFAKE, "test_tensor.c");
    tt_tensor *ops[1] = {v};
    ck_assert_int_eq(tt_for_each(1, ops, noop_loop, NULL), TT_EFAKE);
    ck_assert_error(TT_EFAKE, "tt_for_each: operand 0 is a fake tensor");
    tt_release(v);
    tt_release(f);
}
END_TEST

/* Counts what goes through the allocator hook. */
typedef struct {
    atomic_llong bytes_live, bytes_total, allocs, frees;
    size_t largest;
} alloc_stats;

static alloc_stats stats;

static void *counting_alloc(size_t size, size_t align, void *ud)
{
    alloc_stats *s = ud;
    void *p = NULL;
    if (posix_memalign(&p, align < sizeof(void *) ? sizeof(void *) : align,
                       size + 64) != 0)
        return NULL;
    /* Remember the size in front of the block: hook users get no size back. */
    *(size_t *)p = size;
    atomic_fetch_add(&s->bytes_live, (long long)size);
    atomic_fetch_add(&s->bytes_total, (long long)size);
    atomic_fetch_add(&s->allocs, 1);
    if (size > s->largest)
        s->largest = size;
    return (char *)p + 64;
}

static void counting_free(void *p, void *ud)
{
    alloc_stats *s = ud;
    if (!p)
        return;
    char *b = (char *)p - 64;
    atomic_fetch_sub(&s->bytes_live, (long long)*(size_t *)b);
    atomic_fetch_add(&s->frees, 1);
    free(b);
}

START_TEST(test_fake_huge)
{
    /* 4 TiB of f32, traced without a byte of data. */
    memset(&stats, 0, sizeof stats);
    tt_set_allocator(&(tt_allocator){counting_alloc, counting_free, &stats});
    tt_tensor *f = tt_fake_empty(TT_SHAPE(1 << 20, 1 << 20), TT_F32);
    ck_assert_msg(f != NULL, "%s", tt_errmsg());
    ck_assert_int_eq(tt_numel(f), (int64_t)1 << 40);
    ck_assert_uint_eq(tt_storage_nbytes(f), (size_t)1 << 42);
    tt_tensor *t = tt_t(f);
    tt_tensor *c = tt_contiguous(t);
    tt_tensor *k = tt_clone(t);
    tt_tensor *d = tt_to_dtype(f, TT_F64);
    tt_tensor *r = tt_reshape(t, TT_SHAPE(-1));
    tt_tensor *e = tt_empty_like(t);
    ck_assert(c && k && d && r && e);
    expect_meta(k, 2, A(1 << 20, 1 << 20), A(1, 1 << 20), 0);
    ck_assert_uint_eq(tt_storage_nbytes(d), (size_t)1 << 43);
    ck_assert_int_eq(tt_fill_(c, 0), TT_OK);
    ck_assert_msg(stats.largest < 4096, "largest allocation %zu bytes", stats.largest);
    tt_release(e);
    tt_release(r);
    tt_release(d);
    tt_release(k);
    tt_release(c);
    tt_release(t);
    tt_release(f);
    tt_set_allocator(NULL);
    ck_assert_int_eq(stats.bytes_live, 0);
}
END_TEST

/* ============================================================ symbolic */

static const char *sz_str(tt_size s)
{
    static char buf[4][128];
    static int k;
    k = (k + 1) % 4;
    tt_size_str(s, buf[k], sizeof buf[k]);
    return buf[k];
}

START_TEST(test_symbols)
{
    tt_sym_reset();
    tt_size s0 = tt_sym_new("s", 8), s1 = tt_sym_new("s", 3), u0 = tt_sym_new("u", -1);
    ck_assert(tt_size_is_sym(s0) && tt_size_is_sym(s1) && tt_size_is_sym(u0));
    ck_assert(!tt_size_is_sym(0) && !tt_size_is_sym(INT64_MAX) && !tt_size_is_sym(-1));
    ck_assert(s0 != s1);
    ck_assert_str_eq(sz_str(s0), "s0");
    ck_assert_str_eq(sz_str(s1), "s1");
    ck_assert_str_eq(sz_str(u0), "u0");
    ck_assert_str_eq(sz_str(42), "42");
    ck_assert_int_eq(tt_sym_hint(s0), 8);
    ck_assert_int_eq(tt_sym_hint(s1), 3);
    ck_assert_int_eq(tt_sym_hint(u0), -1);
    ck_assert_int_eq(tt_sym_hint(17), 17);
    /* Concrete operands fold. */
    ck_assert_int_eq(tt_sym_add(3, 4), 7);
    ck_assert_int_eq(tt_sym_sub(3, 4), -1);
    ck_assert_int_eq(tt_sym_mul(3, 4), 12);
    ck_assert_int_eq(tt_sym_floordiv(7, 2), 3);
    ck_assert_int_eq(tt_sym_mod(7, 2), 1);
    /* Identities. */
    ck_assert(tt_sym_add(s0, 0) == s0 && tt_sym_add(0, s0) == s0);
    ck_assert(tt_sym_mul(s0, 1) == s0 && tt_sym_mul(1, s0) == s0);
    ck_assert(tt_sym_mul(s0, 0) == 0);
    ck_assert(tt_sym_sub(s0, 0) == s0 && tt_sym_sub(s0, s0) == 0);
    ck_assert(tt_sym_floordiv(s0, 1) == s0 && tt_sym_mod(s0, 1) == 0);
    /* Hash-consing: equal expressions, equal handles; commutative forms
     * are one node. */
    tt_size e1 = tt_sym_add(s0, 4), e2 = tt_sym_add(s0, 4), e3 = tt_sym_add(4, s0);
    ck_assert(tt_size_is_sym(e1));
    ck_assert(e1 == e2 && e1 == e3);
    ck_assert(tt_sym_add(s0, 5) != e1);
    ck_assert(tt_sym_mul(s0, s1) == tt_sym_mul(s1, s0));
    ck_assert(tt_sym_add(tt_sym_mul(s0, s1), 4) == tt_sym_add(4, tt_sym_mul(s1, s0)));
    ck_assert(tt_sym_floordiv(s0, 2) == tt_sym_floordiv(s0, 2));
    ck_assert(tt_sym_floordiv(s0, 2) != tt_sym_mod(s0, 2));
    /* Printing. */
    ck_assert_str_eq(sz_str(e1), "s0 + 4");
    ck_assert_str_eq(sz_str(tt_sym_mul(s0, s1)), "s0*s1");
    ck_assert_str_eq(sz_str(tt_sym_add(tt_sym_mul(s0, s1), 4)), "s0*s1 + 4");
    ck_assert_str_eq(sz_str(tt_sym_mul(tt_sym_add(s0, 1), 2)), "(s0 + 1)*2");
    ck_assert_str_eq(sz_str(tt_sym_sub(s0, 4)), "s0 - 4");
    ck_assert_str_eq(sz_str(tt_sym_floordiv(s0, 2)), "(s0//2)");
    ck_assert_str_eq(sz_str(tt_sym_mod(s0, 3)), "(s0%3)");
    ck_assert_str_eq(sz_str(tt_sym_mul(u0, 2)), "u0*2");
    /* Hints follow the arithmetic; an unbacked symbol makes it -1. */
    ck_assert_int_eq(tt_sym_hint(e1), 12);
    ck_assert_int_eq(tt_sym_hint(tt_sym_mul(s0, s1)), 24);
    ck_assert_int_eq(tt_sym_hint(tt_sym_add(tt_sym_mul(s0, s1), 4)), 28);
    ck_assert_int_eq(tt_sym_hint(tt_sym_sub(s0, s1)), 5);
    ck_assert_int_eq(tt_sym_hint(tt_sym_sub(s1, 1)), 2);
    ck_assert_int_eq(tt_sym_hint(tt_sym_floordiv(s0, 3)), 2);
    ck_assert_int_eq(tt_sym_hint(tt_sym_mod(s0, 3)), 2);
    ck_assert_int_eq(tt_sym_hint(tt_sym_add(u0, 1)), -1);
    ck_assert_int_eq(tt_sym_hint(tt_sym_mul(u0, s0)), -1);
    ck_assert_int_eq(tt_sym_hint(tt_sym_sub(tt_sym_add(s0, s1), s1)), 8);
    /* snprintf-style length and truncation. */
    char tiny[4];
    tt_size expr = tt_sym_add(tt_sym_mul(s0, s1), 4);
    ck_assert_int_eq(tt_size_str(expr, tiny, sizeof tiny), 9);
    ck_assert_str_eq(tiny, "s0*");
    ck_assert_int_eq(tt_size_str(expr, NULL, 0), 9);
    /* Per-prefix counters; reset restarts them. */
    ck_assert_str_eq(sz_str(tt_sym_new("s", 1)), "s2");
    ck_assert_str_eq(sz_str(tt_sym_new("u", -1)), "u1");
    tt_sym_reset();
    tt_size again = tt_sym_new("s", 5);
    ck_assert_str_eq(sz_str(again), "s0");
    ck_assert_int_eq(tt_sym_hint(again), 5);
    ck_assert_str_eq(sz_str(tt_sym_new("u", -1)), "u0");
    tt_sym_reset();
}
END_TEST

START_TEST(test_fake_symbolic)
{
    tt_sym_reset();
    tt_size s0 = tt_sym_new("s", 8), s1 = tt_sym_new("s", 5);
    char buf[128];
    tt_tensor *f = tt_fake_empty(2, (const tt_size[]){s0, 3}, TT_F32);
    ck_assert_msg(f != NULL, "%s", tt_errmsg());
    ck_assert(tt_has_sym_sizes(f) && tt_is_fake(f) && tt_is_contiguous(f));
    ck_assert(tt_dim_size(f, 0) == s0 && tt_dim_size(f, -1) == 3);
    ck_assert(tt_dim_stride(f, 0) == 3 && tt_dim_stride(f, 1) == 1);
    ck_assert(tt_numel(f) == tt_sym_mul(s0, 3));
    ck_assert_int_eq(tt_sym_hint(tt_numel(f)), 24);
    ck_assert_str_eq(tt_shape_str(f, buf, sizeof buf), "[s0, 3]");
    ck_assert_str_eq(tt_describe(f, buf, sizeof buf), "fake f32[s0, 3]");
    /* A symbolic inner size makes symbolic strides. */
    tt_tensor *g = tt_fake_empty(3, (const tt_size[]){2, s0, s1}, TT_F64);
    ck_assert(tt_dim_stride(g, 2) == 1);
    ck_assert(tt_dim_stride(g, 1) == s1);
    ck_assert(tt_dim_stride(g, 0) == tt_sym_mul(s0, s1));
    ck_assert_str_eq(tt_strides_str(g, buf, sizeof buf), "[s0*s1, s1, 1]");
    ck_assert(tt_numel(g) == tt_sym_mul(tt_sym_mul(2, s0), s1));
    ck_assert_int_eq(tt_sym_hint(tt_numel(g)), 80);
    ck_assert(tt_is_contiguous(g));
    /* Views keep the symbols. */
    tt_tensor *t = tt_transpose(g, 0, 2);
    ck_assert_str_eq(tt_shape_str(t, buf, sizeof buf), "[s1, s0, 2]");
    ck_assert_str_eq(tt_strides_str(t, buf, sizeof buf), "[1, s1, s0*s1]");
    ck_assert(!tt_is_contiguous(t) && tt_has_sym_sizes(t) && tt_same_storage(t, g));
    tt_tensor *u = tt_unsqueeze(f, 1);
    ck_assert_str_eq(tt_shape_str(u, buf, sizeof buf), "[s0, 1, 3]");
    ck_assert_str_eq(tt_strides_str(u, buf, sizeof buf), "[3, 3, 1]");
    tt_tensor *e = tt_expand(f, 3, (const tt_size[]){4, -1, 3});
    ck_assert_str_eq(tt_shape_str(e, buf, sizeof buf), "[4, s0, 3]");
    ck_assert_str_eq(tt_strides_str(e, buf, sizeof buf), "[0, 3, 1]");
    tt_tensor *s = tt_select(f, 1, 2);
    ck_assert_str_eq(tt_shape_str(s, buf, sizeof buf), "[s0]");
    ck_assert_int_eq(tt_storage_offset(s), 2);
    tt_tensor *c = tt_clone(t);
    ck_assert_str_eq(tt_strides_str(c, buf, sizeof buf), "[1, s1, s0*s1]");
    ck_assert(tt_is_fake(c) && !tt_same_storage(c, g));
    tt_tensor *k = tt_contiguous(t);
    ck_assert_str_eq(tt_strides_str(k, buf, sizeof buf), "[s0*2, 2, 1]");
    tt_tensor *fl = tt_flatten(f, 0, 1);
    ck_assert_str_eq(tt_shape_str(fl, buf, sizeof buf), "[s0*3]");
    ck_assert(tt_same_storage(fl, f));
    /* No real tensor has a symbolic size. */
    ck_assert_ptr_null(tt_empty(1, (const int64_t[]){s0}, TT_F32));
    ck_assert_error(TT_EINVAL, "tt_empty: a real tensor cannot have symbolic sizes "
                               "(dimension 0); use a fake tensor");
    /* Data stays out of reach. */
    double x;
    ck_assert_int_eq(tt_item(s, &x), TT_EFAKE);
    ck_assert_error(TT_EFAKE, "fake f32[s0]");
    tt_release(fl);
    tt_release(k);
    tt_release(c);
    tt_release(s);
    tt_release(e);
    tt_release(u);
    tt_release(t);
    tt_release(g);
    tt_release(f);
    tt_sym_reset();
}
END_TEST

/* =============================================================== scopes */

START_TEST(test_scopes)
{
    tt_tensor *outside = tt_zeros(TT_SHAPE(2), TT_F32);
    tt_scope_begin();
    tt_tensor *a = tt_ones(TT_SHAPE(3), TT_F32);
    tt_tensor *b = tt_transpose(tt_zeros(TT_SHAPE(2, 2), TT_I32), 0, 1);
    tt_tensor *c = tt_clone(outside);
    ck_assert(a && b && c);
    ck_assert_int_eq(tt_live_tensors(), 5);
    ck_assert_int_eq(tt_live_storages(), 4);
    tt_scope_end();
    ck_assert_int_eq(tt_live_tensors(), 1); /* `outside` is not the scope's */
    ck_assert_int_eq(tt_live_storages(), 1);
    ck_assert_double_eq(getflat(outside, 1), 0);

    /* tt_keep hands one out; the caller releases it. */
    tt_scope_begin();
    tt_tensor *kept = tt_keep(tt_full(TT_SHAPE(2), 5, TT_F64));
    tt_tensor *view = tt_select(kept, 0, 1);
    (void)view;
    tt_scope_end();
    ck_assert_int_eq(tt_live_tensors(), 2);
    ck_assert_double_eq(getflat(kept, 1), 5);
    tt_release(kept);
    ck_assert_int_eq(tt_live_tensors(), 1);

    /* Explicit release inside a scope. */
    tt_scope_begin();
    tt_tensor *x = tt_zeros(TT_SHAPE(100), TT_F32);
    tt_release(x);
    ck_assert_int_eq(tt_live_tensors(), 1);
    tt_tensor *y = tt_zeros(TT_SHAPE(100), TT_F32);
    tt_tensor *y2 = tt_retain(y);
    tt_scope_end();
    ck_assert_int_eq(tt_live_tensors(), 2); /* y lives on through y2 */
    ck_assert_ptr_eq(y2, y);
    tt_release(y2);

    /* Many tensors (the scope's slot array grows). */
    tt_scope_begin();
    for (int i = 0; i < 1000; i++)
        ck_assert_ptr_nonnull(tt_zeros(TT_SHAPE(4), TT_U8));
    ck_assert_int_eq(tt_live_tensors(), 1001);
    tt_scope_end();
    ck_assert_int_eq(tt_live_tensors(), 1);
    tt_release(outside);
}
END_TEST

START_TEST(test_nested_scopes)
{
    tt_scope_begin(); /* outer */
    tt_tensor *o = tt_zeros(TT_SHAPE(2), TT_F32);
    tt_tensor *z;
    tt_scope_begin(); /* inner */
    tt_tensor *i1 = tt_ones(TT_SHAPE(2), TT_F32);
    z = tt_keep(tt_full(TT_SHAPE(3), 2, TT_F32));
    (void)i1;
    ck_assert_int_eq(tt_live_tensors(), 3);
    tt_scope_end(); /* i1 goes, z moves to the outer scope */
    ck_assert_int_eq(tt_live_tensors(), 2);
    ck_assert_double_eq(getflat(z, 2), 2);
    tt_scope_begin(); /* a second inner scope, kept twice: out to the caller */
    tt_tensor *w = tt_keep(tt_full(TT_SHAPE(1), 9, TT_F32));
    tt_scope_end();
    ck_assert_ptr_eq(tt_keep(w), w);
    (void)o;
    tt_scope_end(); /* o and z go; w survives */
    ck_assert_int_eq(tt_live_tensors(), 1);
    ck_assert_double_eq(getflat(w, 0), 9);
    tt_release(w);
    ck_assert_int_eq(tt_live_tensors(), 0);

    /* Deep nesting. */
    for (int i = 0; i < 300; i++) {
        tt_scope_begin();
        ck_assert_ptr_nonnull(tt_zeros(TT_SHAPE(1), TT_F32));
    }
    ck_assert_int_eq(tt_live_tensors(), 300);
    for (int i = 0; i < 300; i++)
        tt_scope_end();
    ck_assert_int_eq(tt_live_tensors(), 0);
    /* An unmatched end is harmless. */
    tt_scope_end();
    ck_assert_ptr_null(tt_keep(NULL));
}
END_TEST

/* ============================================================ iteration */

typedef struct {
    atomic_llong count;
    atomic_llong calls;
} visit_ctx;

/* out (f64) += 1 and out2 (f64) = in (f64) * 2: every element once. */
static void visit_loop(char **data, const int64_t *strides, int64_t n, void *vctx)
{
    visit_ctx *c = vctx;
    for (int64_t i = 0; i < n; i++) {
        double *o = (double *)(data[0] + i * strides[0]);
        const double *in = (const double *)(data[1] + i * strides[1]);
        *o += 1 + 2 * *in;
    }
    atomic_fetch_add(&c->count, n);
    atomic_fetch_add(&c->calls, 1);
}

static void check_for_each(tt_tensor *out, tt_tensor *in)
{
    visit_ctx c = {0};
    ck_assert_int_eq(tt_fill_(out, 0), TT_OK);
    tt_tensor *ops[2] = {out, in};
    ck_assert_int_eq(tt_for_each(2, ops, visit_loop, &c), TT_OK);
    ck_assert_int_eq(c.count, tt_numel(out));
    int64_t idx[TT_MAX_DIMS];
    for (int64_t k = 0; k < tt_numel(out); k++) {
        unravel(tt_ndim(out), tt_sizes(out), k, idx);
        ck_assert_msg(get(out, idx) == 1 + 2 * get(in, idx), "element %lld: %g", (long long)k,
                      get(out, idx));
    }
}

START_TEST(test_for_each_layouts)
{
    for (int lo = 0; lo < NLAYOUTS; lo++)
        for (int li = 0; li < NLAYOUTS; li++)
            for (int sh = 0; sh < NVIEW_SHAPES; sh++) {
                if (lo == L_EXPANDED)
                    continue; /* an output must not overlap itself */
                const shape *S = &view_shapes[sh];
                tt_tensor *out = make_input(lo, S->n, S->s, TT_F64);
                tt_tensor *in = make_input(li, S->n, S->s, TT_F64);
                check_for_each(out, in);
                tt_release(in);
                tt_release(out);
            }
    /* A contiguous pair coalesces into one inner loop. */
    tt_tensor *a = tt_zeros(TT_SHAPE(4, 5, 6), TT_F64), *b = tt_ones(TT_SHAPE(4, 5, 6), TT_F64);
    visit_ctx c = {0};
    tt_tensor *ops[2] = {a, b};
    ck_assert_int_eq(tt_for_each(2, ops, visit_loop, &c), TT_OK);
    ck_assert_int_eq(c.calls, 1);
    ck_assert_int_eq(c.count, 120);
    tt_release(a);
    tt_release(b);
}
END_TEST

START_TEST(test_for_each_large)
{
    /* Above the parallel threshold: permuted output, broadcast input. */
    for (int threads = 1; threads <= 2; threads++) {
        tt_set_num_threads(threads);
        tt_tensor *base = tt_zeros(TT_SHAPE(257, 301), TT_F64);
        tt_tensor *out = tt_t(base); /* [301, 257] */
        tt_tensor *row = tt_arange(0, 257, 1, TT_F64);
        tt_tensor *in = tt_expand(row, TT_SHAPE(301, 257));
        visit_ctx c = {0};
        tt_tensor *ops[2] = {out, in};
        ck_assert_int_eq(tt_for_each(2, ops, visit_loop, &c), TT_OK);
        ck_assert_int_eq(c.count, 301 * 257);
        /* out[i][j] is base[j][i]: read the base's memory directly. */
        const double *mem = tt_data(base);
        double sum = 0;
        int64_t wrong = 0;
        for (int64_t i = 0; i < 301; i++)
            for (int64_t j = 0; j < 257; j++) {
                double v = mem[j * 301 + i];
                wrong += v != 1 + 2 * (double)j;
                sum += v;
            }
        ck_assert_int_eq(wrong, 0);
        ck_assert_double_eq(sum, 301.0 * (257 + 257.0 * 256));
        ck_assert_double_eq(get(out, A(300, 256)), 513);
        tt_release(in);
        tt_release(row);
        tt_release(out);
        tt_release(base);
        /* A copy and a fill on the parallel path. */
        tt_tensor *big = counting(TT_SHAPE(70000), TT_F64);
        tt_tensor *dst = tt_empty(TT_SHAPE(70000), TT_I64);
        ck_assert_int_eq(tt_copy_(dst, big), TT_OK);
        const int64_t *ints = tt_data(dst);
        int64_t bad = 0;
        for (int64_t k = 0; k < 70000; k++)
            bad += ints[k] != k + 1;
        ck_assert_int_eq(bad, 0);
        tt_release(dst);
        tt_release(big);
    }
    tt_set_num_threads(0);
}
END_TEST

typedef struct {
    unsigned char *hits;
    atomic_llong calls, total;
} pf_ctx;

static void pf_body(int64_t begin, int64_t end, void *vctx)
{
    pf_ctx *c = vctx;
    for (int64_t i = begin; i < end; i++)
        c->hits[i]++;
    atomic_fetch_add(&c->calls, 1);
    atomic_fetch_add(&c->total, end - begin);
}

START_TEST(test_parallel_for)
{
    static const int64_t ns[] = {0, 1, 999, 1000, 1001, 100003, 5};
    for (int threads = 1; threads <= 2; threads++) {
        tt_set_num_threads(threads);
        ck_assert(tt_get_num_threads() == threads || tt_get_num_threads() == 1);
        for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
            int64_t n = ns[i];
            pf_ctx c = {.hits = calloc((size_t)n + 1, 1)};
            tt_parallel_for(n, 1000, pf_body, &c);
            ck_assert_int_eq(c.total, n);
            for (int64_t k = 0; k < n; k++)
                ck_assert_msg(c.hits[k] == 1, "n=%lld: index %lld visited %d times",
                              (long long)n, (long long)k, c.hits[k]);
            if (n == 0)
                ck_assert_int_eq(c.calls, 0);
            if (n > 0 && n <= 1000)
                ck_assert_int_eq(c.calls, 1);
            ck_assert_int_le(c.calls, threads);
            free(c.hits);
        }
    }
    tt_set_num_threads(0);
    ck_assert_int_ge(tt_get_num_threads(), 1);
}
END_TEST

static Suite *tensor_suite(void)
{
    Suite *s = suite_create("tensor");
    TCase *tc = tt_tcase("factories");
    tcase_add_test(tc, test_empty_metadata);
    tcase_add_test(tc, test_dtype_table);
    tcase_add_test(tc, test_zeros_ones_full);
    tcase_add_test(tc, test_arange);
    tcase_add_test(tc, test_linspace);
    tcase_add_test(tc, test_rand_randn);
    tcase_add_test(tc, test_rand_thread_count);
    tcase_add_test(tc, test_randn_reserves_its_uniforms);
    tcase_add_test(tc, test_from_data);
    tcase_add_test(tc, test_from_buffer);
    tcase_add_test(tc, test_new_empty);
    tcase_add_test(tc, test_empty_like);
    tcase_add_test(tc, test_empty_strided);
    suite_add_tcase(s, tc);

    tc = tt_tcase("queries");
    tcase_add_test(tc, test_queries);
    tcase_add_test(tc, test_is_contiguous);
    tcase_add_test(tc, test_version_counter);
    tcase_add_test(tc, test_describe);
    suite_add_tcase(s, tc);


    tc = tt_tcase("copy");
    tcase_add_test(tc, test_copy_dtypes_layouts);
    tcase_add_test(tc, test_conversion_values);
    tcase_add_test(tc, test_copy_broadcast);
    tcase_add_test(tc, test_contiguous_clone_to_dtype);
    tcase_add_test(tc, test_fill_strided);
    tcase_add_test(tc, test_to_buffer);
    suite_add_tcase(s, tc);

    tc = tt_tcase("fake");
    tcase_add_test(tc, test_fake_factories);
    tcase_add_test(tc, test_fake_views_share_storage);
    tcase_add_test(tc, test_fake_data_access);
    tcase_add_test(tc, test_fake_huge);
    suite_add_tcase(s, tc);

    tc = tt_tcase("symbolic");
    tcase_add_test(tc, test_symbols);
    tcase_add_test(tc, test_fake_symbolic);
    suite_add_tcase(s, tc);

    tc = tt_tcase("scopes");
    tcase_add_test(tc, test_scopes);
    tcase_add_test(tc, test_nested_scopes);
    suite_add_tcase(s, tc);

    tc = tt_tcase("iteration");
    tcase_add_test(tc, test_for_each_layouts);
    tcase_add_test(tc, test_for_each_large);
    tcase_add_test(tc, test_parallel_for);
    suite_add_tcase(s, tc);
    return s;
}

TT_TEST_MAIN(tensor_suite)
