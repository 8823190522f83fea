/* cross_entropy. Every result is compared with a plain f64 log-sum-exp loop
 * over the same logical values, for f32 and f64 logits in several memory
 * layouts (contiguous, transposed, with a step, expanded), batched [N, C]
 * and single [C] inputs, every reduction, empty batches; the typed wrapper
 * and the boxed call must agree; the fake path must give the real output's
 * metadata exactly; a large batch must give the same bits on any thread
 * count; every error is checked by status and text. */
#include "tt_test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

typedef enum { L_CONTIG, L_TRANS, L_STEP, L_EXPAND, L_COUNT } layout;
static const char *const layout_names[L_COUNT] = {"contig", "trans", "step", "expand"};
static const char *const reductions[] = {"mean", "sum", "none"};

/* ck_assert_* records every passing check; this one only acts on failure,
 * for loops over many elements. */
#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        if (!(cond))                                                           \
            ck_abort_msg(__VA_ARGS__);                                         \
    } while (0)

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* Logits in [-scale, scale) as f64 values, converted to dt. */
static tt_tensor *random_logits(int nd, const int64_t *sizes, tt_dtype dt, double scale)
{
    int64_t n = 1;
    for (int d = 0; d < nd; d++)
        n *= sizes[d];
    double *buf = malloc(sizeof(double) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++)
        buf[i] = ((double)(rng() % 20000) / 10000.0 - 1.0) * scale;
    tt_tensor *t64 = tt_from_data(nd, sizes, TT_F64, buf);
    free(buf);
    tt_tensor *t = tt_to_dtype(t64, dt);
    tt_release(t64);
    ck_assert_ptr_nonnull(t);
    return t;
}

/* Logits of logical shape (nd, sizes) in layout L. */
static tt_tensor *make(layout L, int nd, const int64_t *sizes, tt_dtype dt, double scale)
{
    int64_t ph[2] = {nd > 0 ? sizes[0] : 0, nd > 1 ? sizes[1] : 0};
    if ((L == L_TRANS && nd < 2) || (L == L_EXPAND && sizes[0] == 0))
        L = L_CONTIG;
    tt_tensor *base, *r;
    switch (L) {
    case L_TRANS:
        base = random_logits(2, (int64_t[]){ph[1], ph[0]}, dt, scale);
        r = tt_t(base);
        break;
    case L_STEP: /* every other class (inner stride 2) */
        ph[nd - 1] = 2 * sizes[nd - 1];
        base = random_logits(nd, ph, dt, scale);
        r = tt_slice(base, nd - 1, 0, ph[nd - 1], 2);
        break;
    case L_EXPAND: /* all rows the same (stride 0), or a broadcast [C] */
        ph[0] = 1;
        base = random_logits(nd, ph, dt, scale);
        r = tt_expand(base, nd, sizes);
        break;
    default:
        return random_logits(nd, sizes, dt, scale);
    }
    tt_release(base);
    ck_assert_msg(r != NULL, "%s", tt_errmsg());
    return r;
}

static tt_tensor *random_targets(int64_t n, int64_t C, bool scalar)
{
    int64_t *buf = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++)
        buf[i] = (int64_t)(rng() % (uint64_t)C);
    tt_tensor *t = scalar ? tt_from_data(0, NULL, TT_I64, buf) : tt_from_data(TT_SHAPE(n), TT_I64, buf);
    free(buf);
    ck_assert_ptr_nonnull(t);
    return t;
}

static const tt_op *ce_op(void)
{
    const tt_op *o = tt_op_find("tt::cross_entropy");
    ck_assert_msg(o != NULL, "%s", tt_errmsg());
    return o;
}

/* Runs cross_entropy(x, t, reduction) and checks it against the f64
 * reference, the typed wrapper (mean) and the fake path. */
static void check_ce(const tt_tensor *x, const tt_tensor *t, int red, const char *ctx)
{
    bool batched = tt_ndim(x) == 2;
    int64_t N = batched ? tt_sizes(x)[0] : 1, C = tt_sizes(x)[tt_ndim(x) - 1];
    tt_tensor *y = tt_call(ce_op(), tt_v_tensor(x), tt_v_tensor(t), tt_v_str(reductions[red]));
    ck_assert_msg(y != NULL, "%s: %s", ctx, tt_errmsg());
    ck_assert_int_eq(tt_dtype_of(y), tt_dtype_of(x));
    /* none: [N] (a 0-dim loss for [C] logits); mean, sum: 0-dim. */
    int ond = red == 2 && batched ? 1 : 0;
    ck_assert_int_eq(tt_ndim(y), ond);
    if (ond) {
        ck_assert_int_eq(tt_sizes(y)[0], N);
        ck_assert_int_eq(tt_strides(y)[0], 1);
    }
    ck_assert_int_eq(tt_storage_offset(y), 0);

    tt_tensor *fx = tt_fake_like(x), *ft = tt_fake_like(t);
    tt_tensor *fy = tt_call(ce_op(), tt_v_tensor(fx), tt_v_tensor(ft), tt_v_str(reductions[red]));
    tt_test_assert_fake_meta(fy, y, ctx);

    double *v = tt_test_values(x), *tv = tt_test_values(t), *got = tt_test_values(y), total = 0;
    double tol = tt_dtype_of(x) == TT_F32 ? 2e-6 : 1e-13;
    for (int64_t i = 0; i < N; i++) {
        const double *row = v + i * C;
        double m = -INFINITY, s = 0;
        for (int64_t c = 0; c < C; c++)
            m = fmax(m, row[c]);
        for (int64_t c = 0; c < C; c++)
            s += exp(row[c] - m);
        double loss = m + log(s) - row[(int64_t)tv[i]];
        total += loss;
        if (red == 2)
            CHECK(fabs(got[i] - loss) <= tol * (1 + fabs(loss)) * 4,
                  "%s: loss[%lld] = %.17g, expected %.17g", ctx, (long long)i, got[i], loss);
    }
    if (red != 2) {
        double r = red == 0 ? total / (double)N : total;
        if (N == 0 && red == 0)
            ck_assert_msg(isnan(got[0]), "%s: the mean of no rows must be NaN", ctx);
        else
            ck_assert_msg(fabs(got[0] - r) <= tol * (1 + fabs(r)) * 4,
                          "%s: loss = %.17g, expected %.17g", ctx, got[0], r);
    }
    if (red == 0) { /* the typed wrapper computes the mean */
        tt_tensor *w = tt_cross_entropy(x, t);
        ck_assert_msg(w != NULL, "%s: %s", ctx, tt_errmsg());
        tt_test_assert_same_bits(w, y, ctx);
        tt_release(w);
    }
    free(v);
    free(tv);
    free(got);
    tt_release(y);
    tt_release(fy);
    tt_release(fx);
    tt_release(ft);
}

START_TEST(test_cross_entropy_table)
{
    static const int64_t shapes[][2] = {{4, 5}, {1, 3}, {7, 1}, {3, 33}, {0, 4}};
    char ctx[160];
    for (int di = 0; di < 2; di++)
        for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
            for (int L = 0; L < L_COUNT; L++)
                for (int red = 0; red < 3; red++) {
                    tt_dtype dt = di ? TT_F64 : TT_F32;
                    tt_tensor *x = make((layout)L, 2, shapes[si], dt, 5);
                    tt_tensor *t = random_targets(shapes[si][0], shapes[si][1], false);
                    snprintf(ctx, sizeof ctx, "%s [%lld, %lld] %s %s", tt_dtype_name(dt),
                             (long long)shapes[si][0], (long long)shapes[si][1],
                             layout_names[L], reductions[red]);
                    check_ce(x, t, red, ctx);
                    tt_release(x);
                    tt_release(t);
                }
}
END_TEST

/* [C] logits with a 0-dim target: a 0-dim loss for every reduction. */
START_TEST(test_cross_entropy_single)
{
    char ctx[96];
    for (int di = 0; di < 2; di++)
        for (int L = 0; L < L_COUNT; L++)
            for (int red = 0; red < 3; red++) {
                tt_dtype dt = di ? TT_F64 : TT_F32;
                tt_tensor *x = make((layout)L, 1, (int64_t[]){6}, dt, 3);
                tt_tensor *t = random_targets(1, 6, true);
                snprintf(ctx, sizeof ctx, "%s [6] %s %s", tt_dtype_name(dt), layout_names[L],
                         reductions[red]);
                check_ce(x, t, red, ctx);
                tt_release(x);
                tt_release(t);
            }
}
END_TEST

/* Logits far beyond exp's range stay finite (log-softmax based), and the
 * values are right: [1000, 0] against class 1 costs 1000. */
START_TEST(test_cross_entropy_stable)
{
    for (int di = 0; di < 2; di++) {
        tt_dtype dt = di ? TT_F64 : TT_F32;
        tt_tensor *x64 = tt_from_data(TT_SHAPE(3, 2), TT_F64,
                                      (double[]){1000, 0, -1000, -1000, 0, 0});
        tt_tensor *x = tt_to_dtype(x64, dt);
        tt_tensor *t = tt_from_data(TT_SHAPE(3), TT_I64, (int64_t[]){1, 0, 1});
        tt_tensor *y = tt_call(ce_op(), tt_v_tensor(x), tt_v_tensor(t), tt_v_str("none"));
        double v;
        tt_get(y, &v, 0);
        ck_assert_double_eq_tol(v, 1000.0, 1e-3);
        tt_get(y, &v, 1);
        ck_assert_double_eq_tol(v, log(2.0), 1e-6);
        tt_get(y, &v, 2);
        ck_assert_double_eq_tol(v, log(2.0), 1e-6);
        tt_release(y);
        y = tt_cross_entropy(x, t);
        tt_item(y, &v);
        ck_assert_double_eq_tol(v, (1000 + 2 * log(2.0)) / 3, 1e-3);
        tt_release(y);
        tt_release(t);
        tt_release(x);
        tt_release(x64);
    }
}
END_TEST

/* An empty batch: mean NaN (0/0, as PyTorch), sum 0, none [0]. */
START_TEST(test_cross_entropy_empty)
{
    tt_tensor *x = tt_zeros(TT_SHAPE(0, 3), TT_F32);
    tt_tensor *t = tt_zeros(TT_SHAPE(0), TT_I64);
    double v;
    tt_tensor *y = tt_cross_entropy(x, t);
    ck_assert_int_eq(tt_item(y, &v), TT_OK);
    ck_assert(isnan(v));
    tt_release(y);
    y = tt_call(ce_op(), tt_v_tensor(x), tt_v_tensor(t), tt_v_str("sum"));
    ck_assert_int_eq(tt_item(y, &v), TT_OK);
    ck_assert(v == 0);
    tt_release(y);
    y = tt_call(ce_op(), tt_v_tensor(x), tt_v_tensor(t), tt_v_str("none"));
    ck_assert_int_eq(tt_ndim(y), 1);
    ck_assert_int_eq(tt_sizes(y)[0], 0);
    tt_release(y);
    tt_release(x);
    tt_release(t);
}
END_TEST

/* A large batch runs in parallel: against the reference, and the same
 * bits on 1, the default and 3 threads. */
START_TEST(test_cross_entropy_large)
{
    for (int di = 0; di < 2; di++) {
        tt_dtype dt = di ? TT_F64 : TT_F32;
        tt_tensor *x = make(L_CONTIG, 2, (int64_t[]){20000, 10}, dt, 8);
        tt_tensor *xt = make(L_TRANS, 2, (int64_t[]){5000, 40}, dt, 8);
        tt_tensor *t = random_targets(20000, 10, false), *tb = random_targets(5000, 40, false);
        check_ce(x, t, 0, "large mean");
        check_ce(x, t, 2, "large none");
        check_ce(xt, tb, 1, "large transposed sum");
        int saved = tt_get_num_threads();
        tt_set_num_threads(1);
        tt_tensor *a = tt_cross_entropy(x, t);
        tt_tensor *an = tt_call(ce_op(), tt_v_tensor(xt), tt_v_tensor(tb), tt_v_str("none"));
        tt_set_num_threads(0);
        tt_tensor *b = tt_cross_entropy(x, t);
        tt_tensor *bn = tt_call(ce_op(), tt_v_tensor(xt), tt_v_tensor(tb), tt_v_str("none"));
        tt_set_num_threads(3);
        tt_tensor *c = tt_cross_entropy(x, t);
        tt_set_num_threads(saved == 1 ? 1 : 0);
        tt_test_assert_same_bits(a, b, "threads 1 vs default");
        tt_test_assert_same_bits(a, c, "threads 1 vs 3");
        tt_test_assert_same_bits(an, bn, "none, threads 1 vs default");
        tt_release(a);
        tt_release(b);
        tt_release(c);
        tt_release(an);
        tt_release(bn);
        tt_release(x);
        tt_release(xt);
        tt_release(t);
        tt_release(tb);
    }
}
END_TEST

/* Every allocation the call makes can fail, without leaks. */
START_TEST(test_cross_entropy_oom)
{
    tt_tensor *x = make(L_TRANS, 2, (int64_t[]){50, 7}, TT_F32, 2);
    tt_tensor *t = random_targets(50, 7, false);
    int failures = 0;
    for (int64_t k = 1; k < 32; k++) {
        tt_debug_fail_alloc(k);
        tt_tensor *y = tt_cross_entropy(x, t);
        tt_debug_fail_alloc(0);
        if (y) {
            tt_release(y);
            break;
        }
        ck_assert_error(TT_ENOMEM, "out of memory");
        failures++;
    }
    ck_assert_int_ge(failures, 2); /* the output and the per-row buffer */
    tt_release(x);
    tt_release(t);
}
END_TEST

/* The inputs of the error rows, made again for each row by the "errors"
 * TCase's fixture. */
static struct {
    tt_tensor *x, *t, *tneg, *t32, *t2, *tok, *t0, *xi, *x3, *x1, *w4, *px, *fx, *ft, *ft2;
} in;

static void errors_setup(void)
{
    tt_test_setup();
    in.x = random_logits(2, (int64_t[]){3, 5}, TT_F32, 1);
    in.t = tt_from_data(TT_SHAPE(3), TT_I64, (int64_t[]){0, 5, 1});
    in.tneg = tt_from_data(TT_SHAPE(3), TT_I64, (int64_t[]){0, 1, -1});
    in.t32 = tt_from_data(TT_SHAPE(3), TT_I32, (int32_t[]){0, 1, 2});
    in.t2 = tt_from_data(TT_SHAPE(2), TT_I64, (int64_t[]){0, 1});
    in.tok = tt_from_data(TT_SHAPE(3), TT_I64, (int64_t[]){0, 1, 4});
    in.t0 = tt_scalar(1, TT_I64);
    in.xi = tt_zeros(TT_SHAPE(3, 5), TT_I64);
    in.x3 = tt_zeros(TT_SHAPE(2, 3, 4), TT_F32);
    in.x1 = tt_zeros(TT_SHAPE(5), TT_F32);
    in.w4 = tt_ones(TT_SHAPE(4), TT_F32);
    in.px = tt_zeros(TT_SHAPE(3, 5), TT_F64);
    in.fx = tt_fake_like(in.x);
    in.ft = tt_fake_like(in.t);
    in.ft2 = tt_fake_like(in.t2);
    ck_assert(in.x && in.t && in.tneg && in.t32 && in.t2 && in.tok && in.t0 && in.xi &&
              in.x3 && in.x1 && in.w4 && in.px && in.fx && in.ft && in.ft2);
}

static void errors_teardown(void)
{
    tt_tensor *all[] = {in.x,  in.t,  in.tneg, in.t32, in.t2, in.tok, in.t0, in.xi,
                        in.x3, in.x1, in.w4,   in.px,  in.fx, in.ft,  in.ft2};
    for (int k = 0; k < TT_TABLE_LEN(all); k++)
        tt_release(all[k]);
    memset(&in, 0, sizeof in);
    tt_test_teardown();
}

/* X(name, call, expected status, texts the message contains). */
#define CROSS_ENTROPY_ERRORS(X)                                                \
    X(target_above_classes, tt_cross_entropy(in.x, in.t), TT_EINVAL,           \
      "tt::cross_entropy: argument 'target' (#2): Target 5 is out of "         \
      "bounds (expected class indices in [0, 5))")                             \
    X(target_negative, tt_cross_entropy(in.x, in.tneg), TT_EINVAL,             \
      "tt::cross_entropy: argument 'target' (#2): Target -1 is out of bounds") \
    X(target_i32, tt_cross_entropy(in.x, in.t32), TT_EDTYPE,                   \
      "tt::cross_entropy: argument 'target' (#2): expected i64 class "         \
      "indices or class probabilities, got i32")                               \
    X(target_short_batch, tt_cross_entropy(in.x, in.t2), TT_ESHAPE,            \
      "tt::cross_entropy: argument 'target' (#2): expected shape [N] "         \
      "to match the batch of 'self' [3, 5], got [2]")                          \
    X(target_0dim, tt_cross_entropy(in.x, in.t0), TT_ESHAPE,                   \
      "tt::cross_entropy: argument 'target' (#2): expected shape [N] "         \
      "to match the batch of 'self' [3, 5], got []")                           \
    X(self_1d_target_1d, tt_cross_entropy(in.x1, in.tok), TT_ESHAPE,           \
      "tt::cross_entropy: argument 'target' (#2): expected shape [] "          \
      "to match the batch of 'self' [5], got [3]")                             \
    X(self_i64, tt_cross_entropy(in.xi, in.tok), TT_EDTYPE,                    \
      "tt::cross_entropy: argument 'self' (#1): expected floating "            \
      "point logits, got i64")                                                 \
    X(self_3d_target_1d, tt_cross_entropy(in.x3, in.tok), TT_ESHAPE,           \
      "tt::cross_entropy: argument 'target' (#2): expected shape "             \
      "[N, d1, ...] to match the batch of 'self' [2, 3, 4], got [3]")          \
    /* The keyword arguments: weight, ignore_index, label_smoothing. */        \
    X(weight_wrong_count,                                                      \
      tt_cross_entropy_ex(in.x, in.tok, &(tt_cross_entropy_opts){.weight = in.w4}), \
      TT_ESHAPE,                                                               \
      "tt::cross_entropy: argument 'weight': expected a f32 tensor of "        \
      "one weight per class [5], got f32 [4]")                                 \
    X(label_smoothing_above_1,                                                 \
      tt_cross_entropy_ex(in.x, in.tok, &(tt_cross_entropy_opts){.label_smoothing = 1.5}), \
      TT_EINVAL,                                                               \
      "tt::cross_entropy: argument 'label_smoothing': expected a value "       \
      "in [0, 1], got 1.5")                                                    \
    X(ignore_index_with_probabilities,                                         \
      tt_cross_entropy_ex(in.x, in.x, &(tt_cross_entropy_opts){.ignore = true}), \
      TT_EINVAL,                                                               \
      "tt::cross_entropy: argument 'ignore_index': not supported with "        \
      "class probability targets (got 0)")                                     \
    X(probabilities_other_dtype, tt_cross_entropy(in.x, in.px), TT_EDTYPE,     \
      "tt::cross_entropy: argument 'target' (#2): class probabilities "        \
      "must have self's dtype f32, got f64")                                   \
    X(probabilities_other_shape, tt_cross_entropy(in.x, in.x3), TT_ESHAPE,     \
      "tt::cross_entropy: argument 'target' (#2): class probabilities "        \
      "must have self's shape [3, 5], got [2, 3, 4]")                          \
    X(reduction_unknown,                                                       \
      tt_cross_entropy_ex(in.x, in.tok, &(tt_cross_entropy_opts){.reduction = "avg"}), \
      TT_EINVAL,                                                               \
      "argument 'reduction' (#3): expected 'mean', 'sum' or 'none', "          \
      "got 'avg'")                                                             \
    X(boxed_reduction_unknown,                                                 \
      tt_call(ce_op(), tt_v_tensor(in.x), tt_v_tensor(in.tok), tt_v_str("avg")), \
      TT_EINVAL,                                                               \
      "tt::cross_entropy: argument 'reduction' (#3): expected 'mean', "        \
      "'sum' or 'none', got 'avg'")                                            \
    X(null_self, tt_cross_entropy(NULL, in.tok), TT_EINVAL,                    \
      "tt::cross_entropy: argument 'self' (#1) expects Tensor, got NULL")      \
    X(null_target, tt_cross_entropy(in.x, NULL), TT_EINVAL,                    \
      "tt::cross_entropy: argument 'target' (#2) expects Tensor, got NULL")    \
    X(boxed_reduction_int,                                                     \
      tt_call(ce_op(), tt_v_tensor(in.x), tt_v_tensor(in.tok), tt_v_int(1)),   \
      TT_EINVAL, "tt::cross_entropy: argument 'reduction' (#3) expects str")   \
    /* The fake path checks metadata the same way. */                          \
    X(fake_target_short_batch, tt_cross_entropy(in.fx, in.ft2), TT_ESHAPE,     \
      "expected shape [N] to match the batch of 'self' [3, 5], got [2]")

TT_ERROR_TABLE(CROSS_ENTROPY_ERRORS, cross_entropy_errors);

/* One row of CROSS_ENTROPY_ERRORS per iteration. */
START_TEST(test_cross_entropy_errors)
{
    tt_test_run_error_case(&cross_entropy_errors[_i], _i);
}
END_TEST

/* The target values are data, so a fake out-of-range target is not an
 * error on the fake path. */
START_TEST(test_cross_entropy_fake_target_values)
{
    tt_tensor *fy = tt_cross_entropy(in.fx, in.ft);
    ck_assert_ptr_nonnull(fy);
    ck_assert(tt_is_fake(fy) && tt_ndim(fy) == 0 && tt_dtype_of(fy) == TT_F32);
    tt_release(fy);
}
END_TEST

/* Symbolic batch sizes flow through the fake path. */
START_TEST(test_cross_entropy_symbolic)
{
    tt_sym_reset();
    tt_size n = tt_sym_new("s", 8);
    tt_tensor *x = tt_fake_empty(2, (tt_size[]){n, 10}, TT_F64);
    tt_tensor *t = tt_fake_empty(1, (tt_size[]){n}, TT_I64);
    tt_tensor *y = tt_call(ce_op(), tt_v_tensor(x), tt_v_tensor(t), tt_v_str("none"));
    ck_assert_ptr_nonnull(y);
    ck_assert(tt_ndim(y) == 1 && tt_sizes(y)[0] == n && tt_strides(y)[0] == 1);
    ck_assert_int_eq(tt_dtype_of(y), TT_F64);
    tt_release(y);
    tt_release(x);
    tt_release(t);
    tt_sym_reset();
}
END_TEST

static Suite *loss_suite(void)
{
    Suite *s = suite_create("ops_loss");
    TCase *tc = tt_tcase("cross_entropy");
    tcase_add_test(tc, test_cross_entropy_table);
    tcase_add_test(tc, test_cross_entropy_single);
    tcase_add_test(tc, test_cross_entropy_stable);
    tcase_add_test(tc, test_cross_entropy_empty);
    tcase_add_test(tc, test_cross_entropy_large);
    tcase_add_test(tc, test_cross_entropy_oom);
    tcase_add_test(tc, test_cross_entropy_symbolic);
    suite_add_tcase(s, tc);
    tc = tt_tcase_with("errors", errors_setup, errors_teardown);
    tcase_add_loop_test(tc, test_cross_entropy_errors, 0, TT_TABLE_LEN(cross_entropy_errors));
    tcase_add_test(tc, test_cross_entropy_fake_target_values);
    suite_add_tcase(s, tc);
    return s;
}

TT_TEST_MAIN(loss_suite)
