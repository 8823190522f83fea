/* Batch norm and dropout (issue 26): values against plain f64 loops, in
 * contiguous and channels-last layouts, running stats updated as PyTorch
 * does, gradients by tt_gradcheck, the fake path's metadata equal to the
 * real one's, a compiled step equal to eager (dropout's masks included),
 * and every error by status and text. */
#include "tt_test.h"

#include <math.h>
#include <stdio.h>

/* A boxed argument list and its length. */
#define ARGS(...) (tt_value[]){__VA_ARGS__}, (int)(sizeof((tt_value[]){__VA_ARGS__}) / sizeof(tt_value))

static const tt_op *op(const char *name)
{
    return NN(tt_op_find(name));
}

/* ---------------------------------------------------------- batch norm */

/* The f64 reference of batch norm over x [N, C, S...] (logical values):
 * y, and the batch mean and biased variance per channel. */
static tt_tensor *bn_reference(const tt_tensor *x, const double *w, const double *b,
                               const double *rm, const double *rv, bool training, double eps,
                               double *mean, double *var)
{
    int64_t N = tt_sizes(x)[0], C = tt_sizes(x)[1], S = tt_numel(x) / (N * C);
    double *v = tt_test_values(x), *y = malloc(sizeof(double) * (size_t)tt_numel(x));
    for (int64_t c = 0; c < C; c++) {
        double m = 0, q = 0;
        for (int64_t n = 0; n < N; n++)
            for (int64_t s = 0; s < S; s++)
                m += v[(n * C + c) * S + s];
        m /= (double)(N * S);
        for (int64_t n = 0; n < N; n++)
            for (int64_t s = 0; s < S; s++)
                q += pow(v[(n * C + c) * S + s] - m, 2);
        q /= (double)(N * S);
        mean[c] = m, var[c] = q;
        double um = training ? m : rm[c], uv = training ? q : rv[c];
        for (int64_t n = 0; n < N; n++)
            for (int64_t s = 0; s < S; s++) {
                int64_t i = (n * C + c) * S + s;
                y[i] = (v[i] - um) / sqrt(uv + eps) * (w ? w[c] : 1) + (b ? b[c] : 0);
            }
    }
    tt_tensor *r64 = NN(tt_from_data(tt_ndim(x), tt_sizes(x), TT_F64, y));
    free(v);
    free(y);
    return r64;
}

static tt_tensor *vec(int64_t C, tt_dtype dt, double base, double step)
{
    tt_tensor *t64 = NN(tt_arange(base, base + step * (double)C - step / 2, step, TT_F64));
    tt_tensor *t = NN(tt_to_dtype(t64, dt));
    tt_release(t64);
    return t;
}

/* Training and eval on one input, weight/bias given or not: values, the
 * running stats' update (unbiased variance), the layout of the output. */
static void check_bn(tt_tensor *x, bool affine, const char *what)
{
    tt_dtype dt = tt_dtype_of(x);
    int64_t C = tt_sizes(x)[1], cnt = tt_numel(x) / C;
    double tol = dt == TT_F32 ? 2e-5 : 1e-12;
    tt_tensor *w = affine ? vec(C, dt, 0.5, 0.25) : NULL, *b = affine ? vec(C, dt, -1, 0.5) : NULL;
    tt_tensor *rm = vec(C, dt, 0.1, 0.1), *rv = vec(C, dt, 1, 0.5);
    double *wv = w ? tt_test_values(w) : NULL, *bv = b ? tt_test_values(b) : NULL;
    double *rm0 = tt_test_values(rm), *rv0 = tt_test_values(rv);
    double *mean = malloc(sizeof(double) * (size_t)C), *var = malloc(sizeof(double) * (size_t)C);
    char ctx[200];

    tt_tensor *ref = bn_reference(x, wv, bv, rm0, rv0, true, 1e-5, mean, var);
    tt_tensor *y = NN(tt_batch_norm(x, w, b, rm, rv, true, 0.1, 1e-5));
    snprintf(ctx, sizeof ctx, "%s: training", what);
    tt_test_assert_close(y, ref, tol, ctx);
    ck_assert_int_eq(tt_dtype_of(y), dt);
    /* channels last in, channels last out; anything else: contiguous */
    tt_tensor *cl = tt_ndim(x) == 4 ? NN(tt_contiguous_format(x, "channels_last")) : NULL;
    bool is_cl = cl && cl == x;
    if (cl && !tt_is_contiguous(x) && tt_storage_offset(cl) == tt_storage_offset(x)) {
        bool same = true;
        for (int d = 0; d < 4; d++)
            same = same && tt_strides(cl)[d] == tt_strides(x)[d];
        is_cl = same;
    }
    tt_release(cl);
    if (is_cl)
        for (int d = 0; d < 4; d++)
            ck_assert_int_eq(tt_strides(y)[d], tt_strides(x)[d]);
    else
        ck_assert(tt_is_contiguous(y));
    double *nrm = tt_test_values(rm), *nrv = tt_test_values(rv);
    for (int64_t c = 0; c < C; c++) {
        double em = 0.1 * mean[c] + 0.9 * rm0[c];
        double ev = 0.1 * var[c] * (double)cnt / (double)(cnt - 1) + 0.9 * rv0[c];
        ck_assert_msg(fabs(nrm[c] - em) <= tol * fmax(1, fabs(em)), "%s: running_mean[%lld] "
                      "%.12g, expected %.12g", what, (long long)c, nrm[c], em);
        ck_assert_msg(fabs(nrv[c] - ev) <= tol * fmax(1, fabs(ev)), "%s: running_var[%lld] "
                      "%.12g, expected %.12g", what, (long long)c, nrv[c], ev);
    }
    tt_release(ref);
    tt_release(y);

    /* eval with the updated stats */
    ref = bn_reference(x, wv, bv, nrm, nrv, false, 1e-3, mean, var);
    y = NN(tt_batch_norm(x, w, b, rm, rv, false, 0.1, 1e-3));
    snprintf(ctx, sizeof ctx, "%s: eval", what);
    tt_test_assert_close(y, ref, tol, ctx);
    double *after = tt_test_values(rm);
    for (int64_t c = 0; c < C; c++)
        ck_assert(after[c] == nrm[c]); /* eval writes nothing */
    tt_release(ref);
    tt_release(y);

    /* training without running stats (.no_stats) */
    ref = bn_reference(x, wv, bv, NULL, NULL, true, 1e-5, mean, var);
    y = NN(tt_batch_norm(x, w, b, NULL, NULL, true, 0.1, 1e-5));
    snprintf(ctx, sizeof ctx, "%s: training, no stats", what);
    tt_test_assert_close(y, ref, tol, ctx);
    tt_release(ref);
    tt_release(y);

    free(after), free(nrm), free(nrv), free(rm0), free(rv0), free(wv), free(bv), free(mean);
    free(var);
    tt_release(w), tt_release(b), tt_release(rm), tt_release(rv);
}

START_TEST(test_batch_norm_values)
{
    const tt_dtype dts[2] = {TT_F32, TT_F64};
    char what[120];
    for (int i = 0; i < 2; i++) {
        tt_dtype dt = dts[i];
        tt_tensor *x2 = tt_test_randn(TT_SHAPE(7, 3), dt);
        tt_tensor *x3 = tt_test_randn(TT_SHAPE(4, 5, 9), dt);
        tt_tensor *x4 = tt_test_randn(TT_SHAPE(3, 6, 5, 7), dt);
        tt_tensor *x4cl = NN(tt_contiguous_format(x4, "channels_last"));
        tt_tensor *x5 = tt_test_randn(TT_SHAPE(2, 3, 2, 3, 4), dt);
        tt_tensor *base = tt_test_randn(TT_SHAPE(3, 8), dt);
        tt_tensor *xt = NN(tt_t(base)); /* [8, 3] transposed */
        tt_tensor *xs = NN(tt_slice(x4, 3, 0, 7, 2)); /* a step */
        tt_tensor *xs_[] = {x2, x3, x4, x4cl, x5, xt, xs};
        const char *names[] = {"[7, 3]", "[4, 5, 9]", "[3, 6, 5, 7]", "channels last",
                               "5-d", "transposed", "stepped"};
        for (int k = 0; k < TT_TABLE_LEN(xs_); k++)
            for (int aff = 0; aff < 2; aff++) {
                snprintf(what, sizeof what, "%s %s%s", tt_dtype_name(dt), names[k],
                         aff ? " affine" : "");
                check_bn(xs_[k], aff, what);
            }
        for (int k = 0; k < TT_TABLE_LEN(xs_); k++)
            tt_release(xs_[k]);
        tt_release(base);
    }
}
END_TEST

/* A big channels-last input goes through the chunked sums. */
START_TEST(test_batch_norm_large)
{
    tt_tensor *x = tt_test_randn(TT_SHAPE(8, 64, 12, 12), TT_F64);
    tt_tensor *xcl = NN(tt_contiguous_format(x, "channels_last"));
    check_bn(x, true, "large");
    check_bn(xcl, true, "large channels last");
    tt_release(xcl);
    tt_release(x);
}
END_TEST

/* Training statistics come from one pass of sums shifted by a value of
 * the channel: a channel whose mean is 10^4 standard deviations from 0
 * keeps its variance to float precision, in each layout and the small
 * planes' path (a float sum of squares would lose it all). */
START_TEST(test_batch_norm_offset_channel)
{
    const int64_t shapes[2][4] = {{4, 3, 5, 5}, {16, 3, 1, 2}};
    for (int k = 0; k < 2; k++)
        for (int layout = 0; layout < 2; layout++) {
            const int64_t *sz = shapes[k];
            int64_t n = sz[0] * sz[1] * sz[2] * sz[3];
            float *v = malloc(sizeof *v * (size_t)n);
            for (int64_t i = 0; i < n; i++) /* NCHW order; channel 1 centred on 1e4 */
                v[i] = (float)((i * 37 % 11) - 5) * 0.25f + ((i / (sz[2] * sz[3])) % 3 == 1
                                                                  ? 10000.0f : 0.0f);
            tt_tensor *x = NN(tt_from_data(4, sz, TT_F32, v)), *xin = x;
            if (layout)
                xin = NN(tt_contiguous_format(x, "channels_last"));
            tt_tensor *y = NN(tt_batch_norm(xin, NULL, NULL, NULL, NULL, true, 0.1, 1e-5));
            double *xv = tt_test_values(x), *yv = tt_test_values(y);
            for (int64_t c = 0; c < sz[1]; c++) {
                double m = 0, var = 0, cnt = 0;
                for (int64_t i = 0; i < n; i++)
                    if ((i / (sz[2] * sz[3])) % sz[1] == c)
                        m += xv[i], cnt++;
                m /= cnt;
                for (int64_t i = 0; i < n; i++)
                    if ((i / (sz[2] * sz[3])) % sz[1] == c)
                        var += (xv[i] - m) * (xv[i] - m);
                var /= cnt;
                for (int64_t i = 0; i < n; i++)
                    if ((i / (sz[2] * sz[3])) % sz[1] == c) {
                        double want = (xv[i] - m) / sqrt(var + 1e-5);
                        ck_assert_msg(fabs(yv[i] - want) < 2e-3, "shape %d layout %d channel "
                                      "%lld: %g vs %g", k, layout, (long long)c, yv[i], want);
                    }
            }
            free(xv), free(yv), free(v);
            tt_release(y);
            if (xin != x)
                tt_release(xin);
            tt_release(x);
        }
}
END_TEST

typedef struct {
    bool training, stats;
} bn_cfg;

static tt_status f_bn(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nout;
    const bn_cfg *cfg = ud;
    int64_t C = tt_sizes(in[0])[1];
    tt_tensor *rm = NULL, *rv = NULL;
    if (cfg->stats) {
        rm = tt_full(1, &C, 0.25, TT_F64);
        rv = tt_full(1, &C, 1.5, TT_F64);
    }
    out[0] = tt_batch_norm(in[0], nin > 1 ? in[1] : NULL, nin > 2 ? in[2] : NULL, rm, rv,
                           cfg->training, 0.1, 1e-5);
    tt_release(rm);
    tt_release(rv);
    return out[0] ? TT_OK : tt_errcode();
}

START_TEST(test_batch_norm_gradcheck)
{
    const bn_cfg cfgs[3] = {{true, true}, {true, false}, {false, true}};
    for (int k = 0; k < 3; k++) {
        bn_cfg cfg = cfgs[k];
        tt_tensor *x = tt_test_trainable(tt_test_randn(TT_SHAPE(3, 2, 4), TT_F64));
        tt_tensor *w = tt_test_trainable(tt_test_randn(TT_SHAPE(2), TT_F64));
        tt_tensor *b = tt_test_trainable(tt_test_randn(TT_SHAPE(2), TT_F64));
        OK(tt_gradcheck(f_bn, 3, (tt_tensor *[]){x, w, b}, 1, NULL, &cfg));
        OK(tt_gradcheck(f_bn, 1, (tt_tensor *[]){x}, 1, NULL, &cfg));
        tt_tensor *x4 = tt_test_randn(TT_SHAPE(2, 3, 2, 2), TT_F64);
        tt_tensor *xcl = tt_test_trainable(NN(tt_contiguous_format(x4, "channels_last")));
        tt_tensor *w3 = tt_test_trainable(tt_test_randn(TT_SHAPE(3), TT_F64));
        OK(tt_gradcheck(f_bn, 2, (tt_tensor *[]){xcl, w3}, 1, NULL, &cfg));
        tt_release(w3), tt_release(xcl), tt_release(x4);
        tt_release(b), tt_release(w), tt_release(x);
    }
}
END_TEST

/* The fake path gives the real outputs' metadata (eval: empty stats). */
START_TEST(test_batch_norm_fake)
{
    tt_tensor *x = tt_test_randn(TT_SHAPE(2, 3, 4, 5), TT_F32);
    tt_tensor *xs[2] = {x, NN(tt_contiguous_format(x, "channels_last"))};
    for (int k = 0; k < 2; k++)
        for (int tr = 0; tr < 2; tr++) {
            tt_tensor *rm = NN(tt_zeros(TT_SHAPE(3), TT_F32)), *rv = NN(tt_ones(TT_SHAPE(3), TT_F32));
            tt_value args[8] = {tt_v_tensor(xs[k]), tt_v_none(), tt_v_none(), tt_v_tensor(rm),
                                tt_v_tensor(rv), tt_v_bool(tr), tt_v_float(0.1),
                                tt_v_float(1e-5)};
            tt_value real[3], fake[3];
            OK(tt_op_call(op("tt::_native_batch_norm_legit"), args, 8, real, 3));
            tt_tensor *fx = NN(tt_fake_like(xs[k])), *frm = NN(tt_fake_like(rm)),
                      *frv = NN(tt_fake_like(rv));
            args[0] = tt_v_tensor(fx), args[3] = tt_v_tensor(frm), args[4] = tt_v_tensor(frv);
            OK(tt_op_call(op("tt::_native_batch_norm_legit"), args, 8, fake, 3));
            for (int i = 0; i < 3; i++) {
                tt_test_assert_fake_meta(fake[i].u.t, real[i].u.t, "batch norm");
                ck_assert_int_eq(tt_sizes(real[i].u.t)[0],
                                 i == 0 ? 2 : tr ? 3 : 0);
                tt_value_clear(&real[i]);
                tt_value_clear(&fake[i]);
            }
            tt_release(fx), tt_release(frm), tt_release(frv), tt_release(rm), tt_release(rv);
        }
    tt_release(xs[1]);
    tt_release(x);
}
END_TEST

/* ---------------------------------------------------------- group norm */

/* The f64 reference of group norm of x [N, C, *] (logical values). */
static tt_tensor *gn_reference(const tt_tensor *x, int64_t G, const double *w, const double *b,
                               double eps)
{
    int64_t N = tt_sizes(x)[0], C = tt_sizes(x)[1], S = tt_numel(x) / (N * C), D = C / G;
    double *v = tt_test_values(x), *y = malloc(sizeof(double) * (size_t)tt_numel(x));
    for (int64_t r = 0; r < N * G; r++) {
        double *xr = v + r * D * S, m = 0, q = 0;
        for (int64_t k = 0; k < D * S; k++)
            m += xr[k];
        m /= (double)(D * S);
        for (int64_t k = 0; k < D * S; k++)
            q += pow(xr[k] - m, 2);
        q /= (double)(D * S);
        for (int64_t k = 0; k < D * S; k++) {
            int64_t c = (r % G) * D + k / S;
            y[r * D * S + k] = (xr[k] - m) / sqrt(q + eps) * (w ? w[c] : 1) + (b ? b[c] : 0);
        }
    }
    tt_tensor *t = NN(tt_from_data(tt_ndim(x), tt_sizes(x), TT_F64, y));
    free(v);
    free(y);
    return t;
}

START_TEST(test_group_norm_values)
{
    const tt_dtype dts[2] = {TT_F32, TT_F64};
    char what[120];
    for (int i = 0; i < 2; i++) {
        tt_dtype dt = dts[i];
        tt_tensor *x2 = tt_test_randn(TT_SHAPE(3, 6), dt);
        tt_tensor *x4 = tt_test_randn(TT_SHAPE(2, 6, 5, 3), dt);
        tt_tensor *x4cl = NN(tt_contiguous_format(x4, "channels_last"));
        tt_tensor *base = tt_test_randn(TT_SHAPE(2, 7, 6), dt);
        tt_tensor *xt = NN(tt_transpose(base, 1, 2)); /* [2, 6, 7] */
        tt_tensor *xs[] = {x2, x4, x4cl, xt};
        const char *names[] = {"[3, 6]", "[2, 6, 5, 3]", "channels last", "transposed"};
        const int64_t groups[] = {1, 2, 3, 6};
        for (int k = 0; k < TT_TABLE_LEN(xs); k++)
            for (int gi = 0; gi < 4; gi++)
                for (int aff = 0; aff < 2; aff++) {
                    tt_tensor *w = aff ? vec(6, dt, 0.5, 0.25) : NULL;
                    tt_tensor *b = aff ? vec(6, dt, -1, 0.5) : NULL;
                    double *wv = w ? tt_test_values(w) : NULL, *bv = b ? tt_test_values(b) : NULL;
                    snprintf(what, sizeof what, "%s %s groups %lld%s", tt_dtype_name(dt),
                             names[k], (long long)groups[gi], aff ? " affine" : "");
                    tt_tensor *y = NN(tt_group_norm(xs[k], groups[gi], w, b, 1e-5));
                    tt_tensor *ref = gn_reference(xs[k], groups[gi], wv, bv, 1e-5);
                    tt_test_assert_close(y, ref, dt == TT_F32 ? 2e-5 : 1e-12, what);
                    if (k == 2)
                        for (int d = 0; d < 4; d++) /* channels last in, channels last out */
                            ck_assert_int_eq(tt_strides(y)[d], tt_strides(x4cl)[d]);
                    else
                        ck_assert(tt_is_contiguous(y));
                    free(wv), free(bv);
                    tt_release(y), tt_release(ref), tt_release(w), tt_release(b);
                }
        for (int k = 0; k < TT_TABLE_LEN(xs); k++)
            tt_release(xs[k]);
        tt_release(base);
    }
}
END_TEST

static tt_status f_gn(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nout;
    out[0] = tt_group_norm(in[0], *(const int64_t *)ud, nin > 1 ? in[1] : NULL,
                           nin > 2 ? in[2] : NULL, 1e-5);
    return out[0] ? TT_OK : tt_errcode();
}

START_TEST(test_group_norm_gradcheck)
{
    for (int64_t G = 1; G <= 4; G *= 2) {
        tt_tensor *x = tt_test_trainable(tt_test_randn(TT_SHAPE(2, 4, 3), TT_F64));
        tt_tensor *w = tt_test_trainable(tt_test_randn(TT_SHAPE(4), TT_F64));
        tt_tensor *b = tt_test_trainable(tt_test_randn(TT_SHAPE(4), TT_F64));
        OK(tt_gradcheck(f_gn, 3, (tt_tensor *[]){x, w, b}, 1, NULL, &G));
        OK(tt_gradcheck(f_gn, 1, (tt_tensor *[]){x}, 1, NULL, &G));
        tt_release(b), tt_release(w), tt_release(x);
    }
    int64_t G = 2;
    tt_tensor *x4 = tt_test_randn(TT_SHAPE(2, 4, 2, 2), TT_F64);
    tt_tensor *xcl = tt_test_trainable(NN(tt_contiguous_format(x4, "channels_last")));
    tt_tensor *w = tt_test_trainable(tt_test_randn(TT_SHAPE(4), TT_F64));
    OK(tt_gradcheck(f_gn, 2, (tt_tensor *[]){xcl, w}, 1, NULL, &G));
    tt_release(w), tt_release(xcl), tt_release(x4);
}
END_TEST

/* ---------------------------------------------------- native_layer_norm */

/* The same kernel as tt::layer_norm (bit for bit), plus each row's mean and
 * rstd; its gradient (native_layer_norm_backward, reading them) passes
 * gradcheck. */
START_TEST(test_native_layer_norm)
{
    const tt_dtype dts[2] = {TT_F32, TT_F64};
    for (int i = 0; i < 2; i++) {
        tt_tensor *base = tt_test_randn(TT_SHAPE(5, 3, 4), dts[i]);
        tt_tensor *x = NN(tt_transpose(base, 0, 1)); /* [3, 5, 4] */
        tt_tensor *w = tt_test_randn(TT_SHAPE(5, 4), dts[i]);
        tt_tensor *b = tt_test_randn(TT_SHAPE(5, 4), dts[i]);
        tt_tensor *mean, *rstd;
        const int64_t ns[2] = {5, 4};
        tt_tensor *y = NN(tt_native_layer_norm(x, 2, ns, w, b, 1e-5, &mean, &rstd));
        tt_tensor *y0 = NN(tt_layer_norm(x, 2, ns, w, b, 1e-5));
        tt_test_assert_same_bits(y, y0, "native_layer_norm vs layer_norm");
        ck_assert(tt_ndim(mean) == 3 && tt_sizes(mean)[0] == 3 && tt_sizes(mean)[1] == 1 &&
                  tt_sizes(mean)[2] == 1 && tt_dtype_of(mean) == dts[i]);
        double *v = tt_test_values(x), *mv = tt_test_values(mean), *rv = tt_test_values(rstd);
        for (int r = 0; r < 3; r++) {
            double m = 0, q = 0;
            for (int k = 0; k < 20; k++)
                m += v[r * 20 + k];
            m /= 20;
            for (int k = 0; k < 20; k++)
                q += pow(v[r * 20 + k] - m, 2);
            double rs = 1 / sqrt(q / 20 + 1e-5), tol = dts[i] == TT_F32 ? 1e-6 : 1e-13;
            ck_assert_msg(fabs(mv[r] - m) <= tol * fmax(1, fabs(m)), "mean %d: %g vs %g", r,
                          mv[r], m);
            ck_assert_msg(fabs(rv[r] - rs) <= tol * fmax(1, rs), "rstd %d: %g vs %g", r, rv[r],
                          rs);
        }
        free(v), free(mv), free(rv);
        tt_release(mean), tt_release(rstd), tt_release(y), tt_release(y0);
        tt_release(w), tt_release(b), tt_release(x), tt_release(base);
    }
}
END_TEST

static tt_status f_native_ln(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nout, (void)ud;
    out[0] = tt_native_layer_norm(in[0], 1, (int64_t[]){4}, nin > 1 ? in[1] : NULL,
                                  nin > 2 ? in[2] : NULL, 1e-5, NULL, NULL);
    return out[0] ? TT_OK : tt_errcode();
}

START_TEST(test_native_layer_norm_gradcheck)
{
    tt_tensor *x = tt_test_trainable(tt_test_randn(TT_SHAPE(3, 2, 4), TT_F64));
    tt_tensor *w = tt_test_trainable(tt_test_randn(TT_SHAPE(4), TT_F64));
    tt_tensor *b = tt_test_trainable(tt_test_randn(TT_SHAPE(4), TT_F64));
    OK(tt_gradcheck(f_native_ln, 3, (tt_tensor *[]){x, w, b}, 1, NULL, NULL));
    OK(tt_gradcheck(f_native_ln, 2, (tt_tensor *[]){x, w}, 1, NULL, NULL));
    OK(tt_gradcheck(f_native_ln, 1, (tt_tensor *[]){x}, 1, NULL, NULL));
    tt_release(b), tt_release(w), tt_release(x);
}
END_TEST

/* ------------------------------------------------------------ dropout */

START_TEST(test_dropout_values)
{
    const tt_dtype dts[2] = {TT_F32, TT_F64};
    for (int i = 0; i < 2; i++) {
        tt_tensor *x = tt_test_randn(TT_SHAPE(40, 50), dts[i]);
        tt_value outs[2];
        OK(tt_op_call(op("tt::native_dropout"),
                      ARGS(tt_v_tensor(x), tt_v_float(0.3), tt_v_bool(true)), outs, 2));
        tt_tensor *y = outs[0].u.t, *m = outs[1].u.t;
        ck_assert_int_eq(tt_dtype_of(m), TT_BOOL);
        double *xv = tt_test_values(x), *yv = tt_test_values(y), *mv = tt_test_values(m);
        int64_t kept = 0;
        for (int64_t k = 0; k < 2000; k++) {
            double e = mv[k] ? (dts[i] == TT_F32 ? (double)((float)xv[k] * (float)(1 / 0.7))
                                                  : xv[k] * (1 / 0.7))
                             : 0;
            ck_assert_msg(yv[k] == e, "element %lld: %.9g, expected %.9g", (long long)k, yv[k], e);
            kept += mv[k] != 0;
        }
        /* 2000 draws of p = 0.7: 1400 +- 20.5 (one sigma) */
        ck_assert_msg(kept > 1300 && kept < 1500, "kept %lld of 2000", (long long)kept);
        free(xv), free(yv), free(mv);
        tt_value_clear(&outs[0]), tt_value_clear(&outs[1]);

        /* p = 1: zeros, no element kept; p = 0: the input */
        for (int pk = 0; pk < 2; pk++) {
            tt_tensor *d = NN(tt_dropout(x, pk ? 0.0 : 1.0, true));
            double *dv = tt_test_values(d), *x2 = tt_test_values(x);
            for (int64_t k = 0; k < 2000; k++)
                ck_assert(dv[k] == (pk ? x2[k] : 0));
            free(dv), free(x2);
            tt_release(d);
        }
        /* eval (train false): a copy and an all-true mask */
        OK(tt_op_call(op("tt::native_dropout"),
                      ARGS(tt_v_tensor(x), tt_v_float(0.3), tt_v_bool(false)), outs, 2));
        tt_test_assert_same_bits(outs[0].u.t, x, "eval");
        ck_assert(outs[0].u.t != x);
        double *mask = tt_test_values(outs[1].u.t);
        for (int64_t k = 0; k < 2000; k++)
            ck_assert(mask[k] == 1);
        free(mask);
        tt_value_clear(&outs[0]), tt_value_clear(&outs[1]);
        /* the wrapper, not training: a view of x */
        tt_tensor *same = NN(tt_dropout(x, 0.3, false));
        ck_assert(same != x && tt_data(same) == tt_data(x));
        tt_test_assert_same_bits(same, x, "dropout, not training");
        tt_release(same);
        /* in a scope, every result (of both modes) is the scope's */
        tt_scope_begin();
        ck_assert_ptr_nonnull(tt_dropout(x, 0.3, false));
        ck_assert_ptr_nonnull(tt_dropout(x, 0.3, true));
        tt_tensor *bn_x = NN(tt_unsqueeze(x, 2));
        ck_assert_ptr_nonnull(tt_batch_norm(bn_x, NULL, NULL, NULL, NULL, true, 0.1, 1e-5));
        ck_assert_ptr_nonnull(tt_group_norm(bn_x, 1, NULL, NULL, 1e-5));
        OK(tt_scope_end());
        tt_release(x);
    }
}
END_TEST

/* The same seed gives the same mask; the mask follows logical order, so a
 * transposed copy of the input is dropped at the same elements. */
START_TEST(test_dropout_seed)
{
    tt_tensor *x = tt_test_randn(TT_SHAPE(6, 7), TT_F64);
    tt_tensor *xt = NN(tt_t(x)), *xtc = NN(tt_contiguous(xt));
    tt_manual_seed(42);
    tt_tensor *a = NN(tt_dropout(xt, 0.5, true));
    tt_manual_seed(42);
    tt_tensor *b = NN(tt_dropout(xtc, 0.5, true));
    tt_tensor *c = NN(tt_dropout(xtc, 0.5, true));
    tt_tensor *ac = NN(tt_contiguous(a));
    tt_test_assert_same_bits(ac, b, "same seed");
    tt_release(ac);
    for (int d = 0; d < 2; d++) /* the output keeps the input's layout */
        ck_assert_int_eq(tt_strides(a)[d], tt_strides(xt)[d]);
    double *bv = tt_test_values(b), *cv = tt_test_values(c);
    bool differ = false;
    for (int k = 0; k < 42; k++)
        differ = differ || (bv[k] == 0) != (cv[k] == 0);
    ck_assert_msg(differ, "the next call must draw a fresh mask");
    free(bv), free(cv);
    tt_release(a), tt_release(b), tt_release(c), tt_release(xtc), tt_release(xt), tt_release(x);
}
END_TEST

static tt_status f_dropout(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_manual_seed(7); /* the same mask for every evaluation */
    out[0] = tt_dropout(in[0], 0.4, true);
    return out[0] ? TT_OK : tt_errcode();
}

START_TEST(test_dropout_gradcheck)
{
    tt_tensor *x = tt_test_trainable(tt_test_randn(TT_SHAPE(5, 4), TT_F64));
    OK(tt_gradcheck(f_dropout, 1, (tt_tensor *[]){x}, 1, NULL, NULL));
    tt_release(x);
}
END_TEST

/* ------------------------------------------------------------ compiled */

static tt_status f_drop(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    out[0] = tt_dropout(in[0], 0.5, true);
    return out[0] ? TT_OK : tt_errcode();
}

/* A compiled dropout replays the draw: each call a fresh mask, the masks
 * eager calls draw after the same seed. */
START_TEST(test_dropout_compiled)
{
    tt_tensor *x = tt_test_randn(TT_SHAPE(16, 9), TT_F32);
    tt_compiled *c = NN(tt_compile(f_drop, 1, 1, &(tt_trace_opts){.fullgraph = true}));
    tt_tensor *a[3], *e[3];
    tt_manual_seed(99);
    for (int k = 0; k < 3; k++)
        OK(tt_compiled_call(c, &x, &a[k]));
    tt_manual_seed(99);
    for (int k = 0; k < 3; k++)
        OK(f_drop(&x, 1, &e[k], 1, NULL));
    for (int k = 0; k < 3; k++)
        tt_test_assert_same_bits(a[k], e[k], "compiled dropout vs eager");
    double *v0 = tt_test_values(a[0]), *v1 = tt_test_values(a[1]);
    bool differ = false;
    for (int k = 0; k < 144; k++)
        differ = differ || (v0[k] == 0) != (v1[k] == 0);
    ck_assert_msg(differ, "two compiled calls drew the same mask");
    free(v0), free(v1);
    tt_compile_stats stats;
    tt_compiled_stats(c, &stats);
    ck_assert_int_eq(stats.hits, 2);
    for (int k = 0; k < 3; k++)
        tt_release(a[k]), tt_release(e[k]);
    tt_compiled_free(c);
    tt_release(x);
}
END_TEST

/* One training step: batch norm (running stats updated in place), dropout,
 * a squared loss, backward, SGD on weight and bias. in: weight, bias,
 * running_mean, running_var, x. */
static tt_status bn_step(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_scope_begin();
    tt_tensor *y = tt_batch_norm(in[4], in[0], in[1], in[2], in[3], true, 0.1, 1e-5);
    tt_tensor *d = y ? tt_dropout(y, 0.25, true) : NULL;
    tt_tensor *sq = d ? tt_mul(d, d) : NULL;
    tt_tensor *loss = sq ? tt_mean_all(sq) : NULL;
    tt_status st = loss ? tt_backward(loss, NULL) : tt_errcode();
    if (!st)
        st = tt_test_sgd(in, 2, 0.2);
    out[0] = st ? NULL : tt_keep(loss);
    tt_scope_end();
    return st;
}

/* Compiled training steps equal eager ones: losses, parameters, running
 * stats, for a contiguous and a channels-last input, f32 and f64. */
START_TEST(test_batch_norm_compiled_training)
{
    for (int v = 0; v < 4; v++) {
        tt_dtype dt = v & 1 ? TT_F64 : TT_F32;
        tt_tensor *x0 = tt_test_randn(TT_SHAPE(6, 5, 3, 4), dt);
        tt_tensor *x = v & 2 ? NN(tt_contiguous_format(x0, "channels_last")) : tt_retain(x0);
        tt_tensor *init[5] = {vec(5, dt, 0.5, 0.25), vec(5, dt, -1, 0.5), vec(5, dt, 0.1, 0.1),
                              vec(5, dt, 1, 0.5), x};
        tt_tensor *ce[5], *ee[5];
        for (int i = 0; i < 5; i++) {
            ce[i] = i < 4 ? NN(tt_clone(init[i])) : tt_retain(x);
            ee[i] = i < 4 ? NN(tt_clone(init[i])) : tt_retain(x);
            if (i < 2) {
                OK(tt_set_requires_grad(ce[i], true));
                OK(tt_set_requires_grad(ee[i], true));
            }
        }
        tt_compiled *c = NN(tt_compile(bn_step, 5, 1, &(tt_trace_opts){.fullgraph = true}));
        for (int step = 0; step < 3; step++) {
            tt_tensor *lc, *le;
            tt_manual_seed(10 + (uint64_t)step);
            OK(tt_compiled_call(c, ce, &lc));
            tt_manual_seed(10 + (uint64_t)step);
            OK(bn_step(ee, 5, &le, 1, NULL));
            double tol = dt == TT_F32 ? 1e-5 : 1e-12;
            tt_test_assert_close(lc, le, tol, "loss");
            const char *names[4] = {"weight", "bias", "running_mean", "running_var"};
            for (int i = 0; i < 4; i++)
                tt_test_assert_close(ce[i], ee[i], tol, names[i]);
            tt_release(lc), tt_release(le);
        }
        tt_compile_stats stats;
        tt_compiled_stats(c, &stats);
        ck_assert_int_eq(stats.hits, 2);
        /* The plan's graph holds the wrappers' dropped results too: the
         * scope in bn_step must not have taken their references. */
        tt_clear_error();
        tt_compiled_free(c);
        ck_assert_msg(tt_errcode() == TT_OK, "freeing the plan: %s", tt_errmsg());
        for (int i = 0; i < 5; i++)
            tt_release(ce[i]), tt_release(ee[i]), tt_release(init[i]);
        tt_release(x0);
    }
}
END_TEST

/* The typed wrappers that drop results their op returns (batch_norm,
 * group_norm, native_layer_norm, dropout, max_pool2d, nll_loss), each
 * given x [2, 4, 5, 6] and class indices t [2, 30]. They drop them with a
 * plain tt_release, also in a user's scope under a trace, where the graph
 * holds the dropped tensors too. */
typedef tt_tensor *(*dropping_fn)(tt_tensor *x, tt_tensor *t);
static tt_tensor *d_batch_norm(tt_tensor *x, tt_tensor *t)
{
    (void)t;
    return tt_batch_norm(x, NULL, NULL, NULL, NULL, true, 0.1, 1e-5);
}
static tt_tensor *d_group_norm(tt_tensor *x, tt_tensor *t)
{
    (void)t;
    return tt_group_norm(x, 2, NULL, NULL, 1e-5);
}
static tt_tensor *d_layer_norm(tt_tensor *x, tt_tensor *t)
{
    (void)t;
    tt_tensor *mean = NULL; /* one statistic asked for, the other dropped */
    tt_tensor *y = tt_native_layer_norm(x, 2, (int64_t[]){5, 6}, NULL, NULL, 1e-5, &mean, NULL);
    return y ? tt_add(y, mean) : NULL;
}
static tt_tensor *d_dropout(tt_tensor *x, tt_tensor *t)
{
    (void)t;
    return tt_dropout(x, 0.25, true);
}
static tt_tensor *d_max_pool2d(tt_tensor *x, tt_tensor *t)
{
    (void)t;
    return tt_max_pool2d(x, &(tt_pool_opts){.kernel = {2, 2}});
}
static tt_tensor *d_nll_loss(tt_tensor *x, tt_tensor *t)
{
    /* 3-d log_probs: the wrapper's own views, total_weight dropped, and
     * (reduction none) the loss viewed back to t's shape */
    tt_tensor *x3 = tt_reshape(x, 3, (int64_t[]){tt_sizes(x)[0], tt_sizes(x)[1], -1});
    tt_tensor *lp = x3 ? tt_log_softmax(x3, 1) : NULL;
    return lp ? tt_nll_loss(lp, t, &(tt_nll_loss_opts){.reduction = "none"}) : NULL;
}
static const struct {
    const char *name;
    dropping_fn fn;
} dropping[] = {
    {"batch_norm", d_batch_norm}, {"group_norm", d_group_norm}, {"native_layer_norm", d_layer_norm},
    {"dropout", d_dropout},       {"max_pool2d", d_max_pool2d}, {"nll_loss", d_nll_loss},
};

static tt_status f_dropping(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    tt_scope_begin();
    tt_tensor *y = (*(dropping_fn *)ud)(in[0], in[1]);
    tt_tensor *sq = y ? tt_mul(y, y) : NULL; /* the graph reads y after the wrapper */
    out[0] = sq ? tt_keep(sq) : NULL;
    tt_scope_end();
    return out[0] ? TT_OK : tt_errcode();
}

/* Compiled (fake and symbolic) equals eager, twice per plan, and freeing
 * the plan releases only what the graph holds: a dropped result taken
 * from the scope twice was a use after free (ASan). */
START_TEST(test_dropping_wrappers_scoped_compiled)
{
    dropping_fn fn = dropping[_i].fn;
    const char *name = dropping[_i].name;
    tt_manual_seed(3);
    tt_tensor *x = tt_test_randn(TT_SHAPE(2, 4, 5, 6), TT_F64);
    int64_t cls[60];
    for (int k = 0; k < 60; k++)
        cls[k] = (k * 7) % 4;
    tt_tensor *in[2] = {x, NN(tt_from_data(TT_SHAPE(2, 30), TT_I64, cls))};
    int64_t live = tt_live_tensors();
    const tt_trace_mode modes[] = {TT_TRACE_FAKE, TT_TRACE_SYMBOLIC};
    for (int m = 0; m < 2; m++) {
        tt_compiled *c = tt_compile(f_dropping, 2, 1,
                                    &(tt_trace_opts){.mode = modes[m], .ud = &fn,
                                                     .ud_constant = true, .fullgraph = true});
        ck_assert_msg(c != NULL, "%s mode %d: compile: %s", name, m, tt_errmsg());
        for (int call = 0; call < 2; call++) {
            tt_tensor *ce = NULL, *ee = NULL;
            tt_manual_seed(20 + (uint64_t)call);
            tt_status st = tt_compiled_call(c, in, &ce);
            ck_assert_msg(st == TT_OK, "%s mode %d call %d: %s", name, m, call, tt_errmsg());
            tt_manual_seed(20 + (uint64_t)call);
            OK(f_dropping(in, 2, &ee, 1, &fn));
            char what[96];
            snprintf(what, sizeof what, "%s mode %d call %d", name, m, call);
            tt_test_assert_close(ce, ee, 1e-12, what);
            tt_release(ce), tt_release(ee);
        }
        tt_clear_error();
        tt_compiled_free(c);
        ck_assert_msg(tt_errcode() == TT_OK, "%s mode %d: freeing the plan: %s", name, m,
                      tt_errmsg());
        ck_assert_int_eq(tt_live_tensors(), live);
    }
    tt_release(in[1]);
    tt_release(x);
}
END_TEST

/* Symbolic sizes flow through the fake paths: N, C, H, W symbols. */
START_TEST(test_norm_symbolic)
{
    tt_sym_reset();
    tt_size n = tt_sym_new("n", 4), c = tt_sym_new("c", 6), h = tt_sym_new("h", 5);
    tt_tensor *x = NN(tt_fake_empty(3, (tt_size[]){n, c, h}, TT_F32));
    tt_tensor *rm = NN(tt_fake_empty(1, (tt_size[]){c}, TT_F32));
    tt_tensor *rv = NN(tt_fake_empty(1, (tt_size[]){c}, TT_F32));
    tt_tensor *y = NN(tt_batch_norm(x, NULL, NULL, rm, rv, true, 0.1, 1e-5));
    ck_assert(tt_is_fake(y) && tt_sizes(y)[0] == n && tt_sizes(y)[1] == c &&
              tt_sizes(y)[2] == h);
    tt_tensor *g = NN(tt_group_norm(x, 3, NULL, NULL, 1e-5));
    ck_assert(tt_is_fake(g) && tt_sizes(g)[1] == c);
    tt_tensor *mean;
    tt_tensor *l = NN(tt_native_layer_norm(x, 1, (int64_t[]){h}, NULL, NULL, 1e-5, &mean, NULL));
    ck_assert(tt_sizes(mean)[0] == n && tt_sizes(mean)[1] == c && tt_sizes(mean)[2] == 1);
    tt_tensor *d = NN(tt_dropout(x, 0.5, true));
    ck_assert(tt_is_fake(d) && tt_sizes(d)[0] == n);
    tt_release(d), tt_release(l), tt_release(mean), tt_release(g), tt_release(y);
    tt_release(rv), tt_release(rm), tt_release(x);
    tt_sym_reset();
}
END_TEST

/* ------------------------------------------------ out of memory, stale */

/* The calls of every wrapper here, on inputs that need copies (a
 * transposed or channels-last x, so the kernels allocate scratch). */
static tt_tensor *call_op(int k, tt_tensor *x, tt_tensor *xcl, tt_tensor *w, tt_tensor *rm,
                          tt_tensor *rv)
{
    switch (k) {
    case 0: return tt_batch_norm(x, w, w, rm, rv, true, 0.1, 1e-5);
    case 1: return tt_batch_norm(xcl, w, NULL, NULL, NULL, true, 0.1, 1e-5);
    case 2: return tt_batch_norm(x, w, w, rm, rv, false, 0.1, 1e-5);
    case 3: return tt_group_norm(x, 2, w, w, 1e-5);
    case 4: return tt_group_norm(xcl, 4, NULL, NULL, 1e-5);
    case 5: return tt_native_layer_norm(x, 1, (int64_t[]){3}, NULL, NULL, 1e-5, NULL, NULL);
    case 6: return tt_layer_norm(x, 1, (int64_t[]){3}, NULL, NULL, 1e-5);
    default: return tt_dropout(x, 0.5, true);
    }
}

/* Failing the Nth allocation of each call fails it cleanly (ENOMEM, no
 * tensor left behind) until the call has all it needs; a call made while
 * an earlier error is still set succeeds (the kernels judge success by
 * their own status, not by the thread's last error). */
START_TEST(test_norm_oom_and_stale_error)
{
    tt_tensor *x0 = tt_test_randn(TT_SHAPE(4, 3, 2), TT_F32);
    tt_tensor *x = NN(tt_transpose(x0, 1, 2)); /* [4, 2, 3]: C = 2 */
    tt_tensor *c0 = tt_test_randn(TT_SHAPE(2, 4, 3, 3), TT_F32);
    tt_tensor *xcl = NN(tt_contiguous_format(c0, "channels_last"));
    tt_tensor *w = NN(tt_ones(TT_SHAPE(2), TT_F32)), *rm = NN(tt_zeros(TT_SHAPE(2), TT_F32));
    tt_tensor *rv = NN(tt_ones(TT_SHAPE(2), TT_F32));
    tt_tensor *w4 = NN(tt_ones(TT_SHAPE(4), TT_F32));
    for (int k = 0; k < 8; k++) {
        int failures = 0;
        for (int64_t n = 1; n < 64; n++) {
            int64_t live = tt_live_tensors();
            tt_debug_fail_alloc(n);
            tt_tensor *y = call_op(k, x, xcl, k == 1 ? w4 : w, rm, rv);
            tt_debug_fail_alloc(0);
            if (y) {
                tt_release(y);
                break;
            }
            ck_assert_msg(tt_errcode() == TT_ENOMEM, "call %d, allocation %lld: %s", k,
                          (long long)n, tt_errmsg());
            ck_assert_int_eq(tt_live_tensors(), live);
            failures++;
        }
        ck_assert_msg(failures >= 1, "call %d never failed", k);
        /* an error left set by an earlier call */
        ck_assert_ptr_null(tt_batch_norm(x0, NULL, NULL, NULL, NULL, false, 0.1, 1e-5));
        tt_tensor *y = call_op(k, x, xcl, k == 1 ? w4 : w, rm, rv);
        ck_assert_msg(y != NULL, "call %d after an error: %s", k, tt_errmsg());
        tt_release(y);
        tt_clear_error();
    }
    tt_release(w4), tt_release(rv), tt_release(rm), tt_release(w), tt_release(xcl);
    tt_release(c0), tt_release(x), tt_release(x0);
}
END_TEST

/* ------------------------------------------------------------- errors */

static struct {
    tt_tensor *x, *x1, *xi, *w4, *w64, *rm, *rv, *one, *m_f;
} in;

static void errors_setup(void)
{
    tt_test_setup();
    in.x = tt_zeros(TT_SHAPE(4, 3), TT_F32);
    in.x1 = tt_zeros(TT_SHAPE(3), TT_F32);
    in.xi = tt_zeros(TT_SHAPE(4, 3), TT_I64);
    in.w4 = tt_ones(TT_SHAPE(4), TT_F32);
    in.w64 = tt_ones(TT_SHAPE(3), TT_F64);
    in.rm = tt_zeros(TT_SHAPE(3), TT_F32);
    in.rv = tt_ones(TT_SHAPE(3), TT_F32);
    in.one = tt_zeros(TT_SHAPE(1, 3, 1), TT_F32);
    in.m_f = tt_zeros(TT_SHAPE(4, 3), TT_F32);
    ck_assert(in.x && in.x1 && in.xi && in.w4 && in.w64 && in.rm && in.rv && in.one && in.m_f);
}

static void errors_teardown(void)
{
    tt_tensor *all[] = {in.x, in.x1, in.xi, in.w4, in.w64, in.rm, in.rv, in.one, in.m_f};
    for (int k = 0; k < TT_TABLE_LEN(all); k++)
        tt_release(all[k]);
    memset(&in, 0, sizeof in);
    tt_test_teardown();
}

static tt_tensor *no_stats_eval(void)
{
    tt_value outs[3];
    if (tt_op_call(op("tt::_native_batch_norm_legit.no_stats"),
                   ARGS(tt_v_tensor(in.x), tt_v_none(), tt_v_none(), tt_v_bool(false),
                           tt_v_float(0.1), tt_v_float(1e-5)),
                   outs, 3))
        return NULL;
    for (int i = 1; i < 3; i++)
        tt_value_clear(&outs[i]);
    return outs[0].u.t;
}

/* native_group_norm(in.x, None, None, N, C, HxW, 3, 1e-5)'s output. */
static tt_tensor *gn_op(int64_t N, int64_t C, int64_t HW)
{
    tt_value outs[3];
    if (tt_op_call(op("tt::native_group_norm"),
                   ARGS(tt_v_tensor(in.x), tt_v_none(), tt_v_none(), tt_v_int(N), tt_v_int(C),
                        tt_v_int(HW), tt_v_int(3), tt_v_float(1e-5)),
                   outs, 3))
        return NULL;
    tt_value_clear(&outs[1]), tt_value_clear(&outs[2]);
    return outs[0].u.t;
}

/* native_dropout(in.x, p, None)'s output. */
static tt_tensor *dropout_op(double p)
{
    tt_value outs[2];
    if (tt_op_call(op("tt::native_dropout"), ARGS(tt_v_tensor(in.x), tt_v_float(p), tt_v_none()),
                   outs, 2))
        return NULL;
    tt_value_clear(&outs[1]);
    return outs[0].u.t;
}

static tt_tensor *dropout_backward(const tt_tensor *g, const tt_tensor *mask)
{
    return tt_call(op("tt::native_dropout_backward"), tt_v_tensor(g), tt_v_tensor(mask),
                   tt_v_float(2));
}

/* native_layer_norm_backward with an output_mask of two bools, past the
 * schema's binding (unchecked): the kernel's own check, which reads no
 * other tensor's sizes before it. */
static tt_tensor *ln_backward_mask2(void)
{
    tt_value outs[3];
    if (tt_op_call_unchecked(op("tt::native_layer_norm_backward"),
                   ARGS(tt_v_tensor(in.x), tt_v_tensor(in.x), tt_v_ints(1, (int64_t[]){3}),
                        tt_v_tensor(in.x), tt_v_tensor(in.x), tt_v_none(), tt_v_none(),
                        tt_v_bools(2, (bool[]){true, true})),
                   outs, 3))
        return NULL;
    for (int i = 0; i < 3; i++)
        tt_value_clear(&outs[i]);
    return NULL;
}

/* X(name, call, expected status, texts the message contains). */
#define NORM_ERRORS(X)                                                         \
    X(bn_input_1d, tt_batch_norm(in.x1, NULL, NULL, in.rm, in.rv, false, 0.1, 1e-5), \
      TT_ESHAPE,                                                               \
      "tt::_native_batch_norm_legit_no_training: argument 'input' (#1): "      \
      "expected 2 or more dims (N, C, ...), got 1")                            \
    X(bn_input_int, tt_batch_norm(in.xi, NULL, NULL, NULL, NULL, true, 0.1, 1e-5), \
      TT_EDTYPE,                                                               \
      "tt::_native_batch_norm_legit: argument 'input' (#1): "                  \
      "expected f32 or f64, got i64")                                          \
    X(bn_weight_size, tt_batch_norm(in.x, in.w4, NULL, in.rm, in.rv, true, 0.1, 1e-5), \
      TT_ESHAPE,                                                               \
      "tt::_native_batch_norm_legit: argument 'weight' (#2): expected shape [3], got [4]") \
    X(bn_bias_dtype, tt_batch_norm(in.x, NULL, in.w64, in.rm, in.rv, true, 0.1, 1e-5), \
      TT_EDTYPE,                                                               \
      "tt::_native_batch_norm_legit: argument 'bias' (#3): expected f32 like " \
      "'input', got f64")                                                      \
    X(bn_running_mean_size, tt_batch_norm(in.x, NULL, NULL, in.w4, in.rv, true, 0.1, 1e-5), \
      TT_ESHAPE,                                                               \
      "tt::_native_batch_norm_legit: argument 'running_mean' (#4): expected "  \
      "shape [3], got [4]")                                                    \
    X(bn_one_stat, tt_batch_norm(in.x, NULL, NULL, in.rm, NULL, true, 0.1, 1e-5), \
      TT_EINVAL,                                                               \
      "tt_batch_norm: running_mean and running_var must both be given or both " \
      "be NULL, got running_var NULL")                                         \
    X(bn_eval_no_stats, tt_batch_norm(in.x, NULL, NULL, NULL, NULL, false, 0.1, 1e-5), \
      TT_EINVAL,                                                               \
      "tt_batch_norm: evaluation (training=false) needs running_mean and "     \
      "running_var, got NULL")                                                 \
    X(bn_op_eval_no_stats, no_stats_eval(), TT_EINVAL,                         \
      "tt::_native_batch_norm_legit: evaluation (training=False) "             \
      "needs running_mean and running_var, got None")                          \
    X(bn_one_value, tt_batch_norm(in.one, NULL, NULL, NULL, NULL, true, 0.1, 1e-5), \
      TT_ESHAPE,                                                               \
      "tt_batch_norm: expected more than 1 value per channel when training, "  \
      "got input of shape [1, 3, 1]")                                          \
    X(bn_null_input, tt_batch_norm(NULL, NULL, NULL, NULL, NULL, true, 0.1, 1e-5), \
      TT_EINVAL, "argument 'input' (#1) expects Tensor, got NULL")             \
    X(gn_groups_divide, tt_group_norm(in.x, 2, NULL, NULL, 1e-5), TT_EINVAL,   \
      "tt::native_group_norm: argument 'group': expected the number of "      \
      "channels 3 to be divisible by the number of groups, got 2")             \
    X(gn_groups_zero, tt_group_norm(in.x, 0, NULL, NULL, 1e-5), TT_EINVAL,     \
      "tt::native_group_norm: argument 'group': expected a positive number "   \
      "of groups, got 0")                                                      \
    X(gn_weight_size, tt_group_norm(in.x, 3, in.w4, NULL, 1e-5), TT_ESHAPE,    \
      "tt::native_group_norm: argument 'weight' (#2): expected shape [3], got [4]") \
    X(gn_input_int, tt_group_norm(in.xi, 3, NULL, NULL, 1e-5), TT_EDTYPE,      \
      "tt::native_group_norm: argument 'input' (#1): expected f32 or f64, got i64") \
    X(gn_input_1d, tt_group_norm(in.x1, 3, NULL, NULL, 1e-5), TT_ESHAPE,       \
      "tt_group_norm: argument 'x': expected at least 2 dims (N, C, ...), got 1") \
    X(gn_op_sizes, gn_op(3, 3, 1), TT_ESHAPE,                                  \
      "tt::native_group_norm: argument 'input': expected shape [N, C, ...] "   \
      "with N, C and HxW the arguments' ([3, 3, 1]), got [4, 3]")              \
    X(ln_shape, tt_native_layer_norm(in.x, 1, (int64_t[]){4}, NULL, NULL, 1e-5, NULL, NULL), \
      TT_ESHAPE,                                                               \
      "tt::native_layer_norm: argument 'normalized_shape' (#2): [4] is not "  \
      "the trailing sizes of input [4, 3]")                                    \
    X(dropout_p, tt_dropout(in.x, 1.5, true), TT_EINVAL,                       \
      "tt_dropout: argument 'p': expected a probability in [0, 1], got 1.5")   \
    X(dropout_p_eval, tt_dropout(in.x, -0.5, false), TT_EINVAL,                \
      "tt_dropout: argument 'p': expected a probability in [0, 1], got -0.5")  \
    X(dropout_int, tt_dropout(in.xi, 0.5, true), TT_EDTYPE,                    \
      "tt::native_dropout: argument 'input' (#1): expected f32 or f64, got i64") \
    X(dropout_op_p, dropout_op(2), \
      TT_EINVAL,                                                               \
      "tt::native_dropout: argument 'p' (#2): expected a probability in [0, 1], got 2") \
    X(dropout_backward_mask_dtype, dropout_backward(in.x, in.m_f), TT_EDTYPE,  \
      "tt::native_dropout_backward: argument 'mask' (#2): expected bool, got f32") \
    X(ln_backward_mask, ln_backward_mask2(), TT_EINVAL,                        \
      "tt::native_layer_norm_backward: argument 'output_mask' (#8): expected bool[3]")

TT_ERROR_TABLE(NORM_ERRORS, norm_errors);

START_TEST(test_norm_errors)
{
    tt_test_run_error_case(&norm_errors[_i], _i);
}
END_TEST

static Suite *norm_suite(void)
{
    Suite *s = suite_create("ops_norm");
    TCase *tc = tt_tcase("batch_norm");
    tcase_add_test(tc, test_batch_norm_values);
    tcase_add_test(tc, test_batch_norm_large);
    tcase_add_test(tc, test_batch_norm_offset_channel);
    tcase_add_test(tc, test_batch_norm_gradcheck);
    tcase_add_test(tc, test_batch_norm_fake);
    suite_add_tcase(s, tc);
    tc = tt_tcase("group_norm");
    tcase_add_test(tc, test_group_norm_values);
    tcase_add_test(tc, test_group_norm_gradcheck);
    suite_add_tcase(s, tc);
    tc = tt_tcase("native_layer_norm");
    tcase_add_test(tc, test_native_layer_norm);
    tcase_add_test(tc, test_native_layer_norm_gradcheck);
    suite_add_tcase(s, tc);
    tc = tt_tcase("dropout");
    tcase_add_test(tc, test_dropout_values);
    tcase_add_test(tc, test_dropout_seed);
    tcase_add_test(tc, test_dropout_gradcheck);
    suite_add_tcase(s, tc);
    tc = tt_tcase("compiled");
    tcase_add_test(tc, test_dropout_compiled);
    tcase_add_test(tc, test_batch_norm_compiled_training);
    tcase_add_test(tc, test_norm_symbolic);
    tcase_add_test(tc, test_norm_oom_and_stale_error);
    tcase_add_loop_test(tc, test_dropping_wrappers_scoped_compiled, 0, TT_TABLE_LEN(dropping));
    suite_add_tcase(s, tc);
    tc = tt_tcase_with("errors", errors_setup, errors_teardown);
    tcase_add_loop_test(tc, test_norm_errors, 0, TT_TABLE_LEN(norm_errors));
    suite_add_tcase(s, tc);
    return s;
}

TT_TEST_MAIN(norm_suite)
