/* The Llama ops (issue 27, transformer part): rms_norm and its one-kernel
 * backward, silu and silu_backward, rotary_embedding and its backward. Values against plain f64 loops, eps
 * None as the dtype's epsilon; rotary_embedding in both forms against
 * the complex-number rotation; gradients by tt_gradcheck; a traced and
 * compiled Llama layer (rms_norm, rotary, causal attention, SwiGLU)
 * equal to eager with its backward; every error by status and text. */
#include "tt_test.h"

#include <float.h>
#include <math.h>
#include <stdio.h>

/* ------------------------------------------------------------ rms_norm */

/* The f64 reference over rows of n (logical values of x): x * rsqrt(mean
 * of x^2 + eps) * w. */
static tt_tensor *rms_reference(const tt_tensor *x, int64_t n, const tt_tensor *w, double eps)
{
    double *v = tt_test_values(x), *wv = w ? tt_test_values(w) : NULL;
    int64_t rows = tt_numel(x) / n;
    double *y = malloc(sizeof(double) * (size_t)(tt_numel(x) ? tt_numel(x) : 1));
    for (int64_t r = 0; r < rows; r++) {
        double s = 0;
        for (int64_t j = 0; j < n; j++)
            s += v[r * n + j] * v[r * n + j];
        double rs = 1 / sqrt(s / (double)n + eps);
        for (int64_t j = 0; j < n; j++)
            y[r * n + j] = v[r * n + j] * rs * (wv ? wv[j] : 1);
    }
    tt_tensor *out = NN(tt_from_data(tt_ndim(x), tt_sizes(x), TT_F64, y));
    free(v), free(wv), free(y);
    return out;
}

START_TEST(test_rms_norm_values)
{
    const tt_dtype dts[2] = {TT_F32, TT_F64};
    char what[160];
    for (int i = 0; i < 2; i++) {
        tt_dtype dt = dts[i];
        double tol = dt == TT_F32 ? 2e-6 : 1e-13;
        tt_tensor *x3 = tt_test_randn(TT_SHAPE(3, 5, 37), dt);
        tt_tensor *base = tt_test_randn(TT_SHAPE(6, 4), dt);
        tt_tensor *xt = NN(tt_t(base)); /* [4, 6], transposed */
        tt_tensor *big = tt_test_randn(TT_SHAPE(300, 96), dt); /* parallel rows */
        tt_tensor *xs_[] = {x3, xt, big};
        for (int k = 0; k < TT_TABLE_LEN(xs_); k++) {
            tt_tensor *x = xs_[k];
            int64_t n = tt_sizes(x)[tt_ndim(x) - 1];
            tt_tensor *w = tt_test_randn(1, &n, dt);
            for (int variant = 0; variant < 4; variant++) {
                const tt_tensor *wk = variant & 1 ? w : NULL;
                double eps = variant & 2 ? 1e-3 : -1;
                double eps_used = eps >= 0 ? eps : dt == TT_F64 ? DBL_EPSILON : FLT_EPSILON;
                tt_tensor *y = NN(tt_rms_norm(x, 1, &n, wk, eps));
                tt_tensor *ref = rms_reference(x, n, wk, eps_used);
                snprintf(what, sizeof what, "%s input %d variant %d", tt_dtype_name(dt), k,
                         variant);
                tt_test_assert_close(y, ref, tol, what);
                ck_assert_int_eq(tt_dtype_of(y), dt);
                for (int d = 0; d < tt_ndim(x); d++) /* x's (dense) layout, as PyTorch's */
                    ck_assert_int_eq(tt_strides(y)[d], tt_strides(x)[d]);
                tt_release(y), tt_release(ref);
            }
            tt_release(w);
        }
        /* two normalized dims */
        int64_t ns[2] = {5, 37};
        tt_tensor *y = NN(tt_rms_norm(x3, 2, ns, NULL, 1e-5));
        tt_tensor *ref = rms_reference(x3, 5 * 37, NULL, 1e-5);
        tt_test_assert_close(y, ref, tol, "two normalized dims");
        tt_release(y), tt_release(ref);
        for (int k = 0; k < TT_TABLE_LEN(xs_); k++)
            tt_release(xs_[k]);
        tt_release(base);
    }
}
END_TEST

/* The op called with eps None (through the dispatcher) is the wrapper's
 * eps < 0 and the dtype's epsilon given explicitly. */
START_TEST(test_rms_norm_eps_none)
{
    tt_tensor *x = tt_test_randn(TT_SHAPE(4, 8), TT_F32);
    int64_t n = 8;
    tt_value out = tt_v_none();
    OK(tt_op_call(NN(tt_op_find("tt::rms_norm")),
                  (tt_value[]){tt_v_tensor(x), tt_v_ints(1, &n)}, 2, &out, 1));
    tt_tensor *a = NN(tt_rms_norm(x, 1, &n, NULL, -1));
    tt_tensor *b = NN(tt_rms_norm(x, 1, &n, NULL, FLT_EPSILON));
    tt_test_assert_same_bits(out.u.t, a, "op default vs wrapper None");
    tt_test_assert_same_bits(a, b, "None vs finfo(f32).eps");
    tt_value_clear(&out);
    tt_release(a), tt_release(b), tt_release(x);
}
END_TEST

static tt_status f_rms(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nout;
    double eps = ud ? *(const double *)ud : -1;
    int64_t n = tt_sizes(in[0])[tt_ndim(in[0]) - 1];
    out[0] = tt_rms_norm(in[0], 1, &n, nin > 1 ? in[1] : NULL, eps);
    return out[0] ? TT_OK : tt_errcode();
}

START_TEST(test_rms_norm_gradcheck)
{
    double eps = 1e-4;
    tt_tensor *x = tt_test_trainable(tt_test_randn(TT_SHAPE(3, 2, 5), TT_F64));
    tt_tensor *w = tt_test_trainable(tt_test_randn(TT_SHAPE(5), TT_F64));
    OK(tt_gradcheck(f_rms, 2, (tt_tensor *[]){x, w}, 1, NULL, &eps));
    OK(tt_gradcheck(f_rms, 1, (tt_tensor *[]){x}, 1, NULL, NULL));
    tt_tensor *base = tt_test_randn(TT_SHAPE(5, 4), TT_F64);
    tt_tensor *xt = tt_test_trainable(NN(tt_t(base))); /* not contiguous */
    tt_tensor *w5 = tt_test_trainable(tt_test_randn(TT_SHAPE(5), TT_F64));
    OK(tt_gradcheck(f_rms, 2, (tt_tensor *[]){xt, w5}, 1, NULL, NULL));
    tt_release(x), tt_release(w), tt_release(base), tt_release(xt), tt_release(w5);
}
END_TEST

/* The backward is one node: rms_norm_backward, both gradients at once. */
START_TEST(test_rms_norm_backward_values)
{
    tt_tensor *x = tt_test_trainable(tt_test_randn(TT_SHAPE(4, 6), TT_F64));
    tt_tensor *w = tt_test_trainable(tt_test_randn(TT_SHAPE(6), TT_F64));
    tt_tensor *g = tt_test_randn(TT_SHAPE(4, 6), TT_F64);
    int64_t n = 6;
    tt_tensor *y = NN(tt_rms_norm(x, 1, &n, w, 1e-5));
    OK(tt_backward(y, g));
    double *xv = tt_test_values(x), *wv = tt_test_values(w), *gv = tt_test_values(g);
    double dx[24], dw[6] = {0};
    for (int r = 0; r < 4; r++) {
        double s = 0, d = 0;
        for (int j = 0; j < 6; j++)
            s += xv[r * 6 + j] * xv[r * 6 + j];
        double rs = 1 / sqrt(s / 6 + 1e-5);
        for (int j = 0; j < 6; j++)
            d += gv[r * 6 + j] * wv[j] * xv[r * 6 + j];
        for (int j = 0; j < 6; j++) {
            dx[r * 6 + j] = rs * gv[r * 6 + j] * wv[j] - xv[r * 6 + j] * rs * rs * rs * d / 6;
            dw[j] += gv[r * 6 + j] * xv[r * 6 + j] * rs;
        }
    }
    tt_tensor *rdx = NN(tt_from_data(TT_SHAPE(4, 6), TT_F64, dx));
    tt_tensor *rdw = NN(tt_from_data(TT_SHAPE(6), TT_F64, dw));
    tt_tensor *gx = NN(tt_get_grad(x)), *gw = NN(tt_get_grad(w));
    tt_test_assert_close(gx, rdx, 1e-12, "grad input");
    tt_test_assert_close(gw, rdw, 1e-12, "grad weight");
    tt_release(gx), tt_release(gw);
    free(xv), free(wv), free(gv);
    tt_release(rdx), tt_release(rdw), tt_release(y), tt_release(g), tt_release(x), tt_release(w);
}
END_TEST

/* ---------------------------------------------------------------- silu */

START_TEST(test_silu_values)
{
    const tt_dtype dts[2] = {TT_F32, TT_F64};
    for (int i = 0; i < 2; i++) {
        tt_tensor *base = tt_test_randn(TT_SHAPE(7, 5), dts[i]);
        tt_tensor *x = NN(tt_t(base));
        tt_tensor *y = NN(tt_silu(x));
        double *v = tt_test_values(x);
        double e[35];
        for (int k = 0; k < 35; k++)
            e[k] = v[k] / (1 + exp(-v[k]));
        tt_tensor *ref = NN(tt_from_data(TT_SHAPE(5, 7), TT_F64, e));
        tt_test_assert_close(y, ref, dts[i] == TT_F32 ? 1e-6 : 1e-15, "silu");
        ck_assert_int_eq(tt_dtype_of(y), dts[i]);
        free(v);
        tt_release(ref), tt_release(y), tt_release(x), tt_release(base);
    }
}
END_TEST

static tt_status f_silu(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    out[0] = tt_silu(in[0]);
    return out[0] ? TT_OK : tt_errcode();
}

START_TEST(test_silu_gradcheck)
{
    tt_tensor *x = tt_test_trainable(tt_test_randn(TT_SHAPE(3, 4), TT_F64));
    OK(tt_gradcheck(f_silu, 1, &x, 1, NULL, NULL));
    tt_release(x);
}
END_TEST

/* -------------------------------------------------------------- rotary */

/* Llama's tables for T positions of D (theta 10000): angle t * f_i with
 * f_i = 10000^(-2i/D), each angle at both elements of its pair (i and
 * i + D/2, or 2i and 2i + 1 interleaved). */
static void rope_tables(int64_t T, int64_t D, bool interleaved, tt_dtype dt, tt_tensor **c,
                        tt_tensor **s)
{
    double *cv = malloc(sizeof(double) * (size_t)(T * D)), *sv = malloc(sizeof(double) * (size_t)(T * D));
    for (int64_t t = 0; t < T; t++)
        for (int64_t i = 0; i < D / 2; i++) {
            double a = (double)t * pow(10000.0, -2.0 * (double)i / (double)D);
            int64_t ea = interleaved ? 2 * i : i, eb = interleaved ? 2 * i + 1 : i + D / 2;
            cv[t * D + ea] = cv[t * D + eb] = cos(a);
            sv[t * D + ea] = sv[t * D + eb] = sin(a);
        }
    tt_tensor *c64 = NN(tt_from_data(TT_SHAPE(T, D), TT_F64, cv));
    tt_tensor *s64 = NN(tt_from_data(TT_SHAPE(T, D), TT_F64, sv));
    *c = NN(tt_to_dtype(c64, dt));
    *s = NN(tt_to_dtype(s64, dt));
    tt_release(c64), tt_release(s64);
    free(cv), free(sv);
}

/* Values against the complex-number form llama2.c writes: pair (a, b) is
 * the complex number a + ib times e^(i angle); the inverse rotation
 * (rotary_embedding_backward with the same tables) gives x back. */
START_TEST(test_rotary_values)
{
    const tt_dtype dts[2] = {TT_F32, TT_F64};
    for (int i = 0; i < 2; i++)
        for (int il = 0; il < 2; il++) {
            tt_dtype dt = dts[i];
            int64_t B = 2, H = 3, T = 5, D = 8;
            tt_tensor *x0 = tt_test_randn(TT_SHAPE(B, T, H, D), dt);
            tt_tensor *x = NN(tt_transpose(x0, 1, 2)); /* [B, H, T, D] as attention's */
            tt_tensor *c, *sn;
            rope_tables(T, D, il, dt, &c, &sn);
            tt_tensor *y = NN(tt_rotary_embedding(x, c, sn, il));
            double *xv = tt_test_values(x), *yv = tt_test_values(y);
            double worst = 0;
            for (int64_t r = 0; r < B * H * T; r++) {
                int64_t t = r % T;
                for (int64_t k = 0; k < D / 2; k++) {
                    double ang = (double)t * pow(10000.0, -2.0 * (double)k / (double)D);
                    int64_t a = il ? 2 * k : k, b = il ? 2 * k + 1 : k + D / 2;
                    double re = xv[r * D + a] * cos(ang) - xv[r * D + b] * sin(ang);
                    double im = xv[r * D + a] * sin(ang) + xv[r * D + b] * cos(ang);
                    worst = fmax(worst, fabs(yv[r * D + a] - re));
                    worst = fmax(worst, fabs(yv[r * D + b] - im));
                }
            }
            ck_assert_msg(worst < (dt == TT_F32 ? 1e-5 : 1e-13), "%s il %d: off by %g",
                          tt_dtype_name(dt), il, worst);
            for (int d = 0; d < 4; d++) /* the heads stay in x's memory order */
                ck_assert_int_eq(tt_strides(y)[d], tt_strides(x)[d]);
            tt_value back = tt_v_none();
            OK(tt_op_call(NN(tt_op_find("tt::rotary_embedding_backward")),
                          (tt_value[]){tt_v_tensor(y), tt_v_tensor(c), tt_v_tensor(sn),
                                       tt_v_bool(il)},
                          4, &back, 1));
            tt_test_assert_close(back.u.t, x, dt == TT_F32 ? 1e-5 : 1e-13, "rotation by -theta");
            tt_value_clear(&back);
            free(xv), free(yv);
            tt_release(y), tt_release(c), tt_release(sn), tt_release(x), tt_release(x0);
        }
}
END_TEST

static tt_status f_rope(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    out[0] = tt_rotary_embedding(in[0], in[1], in[2], ud != NULL);
    return out[0] ? TT_OK : tt_errcode();
}

START_TEST(test_rotary_gradcheck)
{
    for (int il = 0; il < 2; il++) {
        tt_tensor *x = tt_test_trainable(tt_test_randn(TT_SHAPE(2, 2, 3, 4), TT_F64));
        tt_tensor *c = tt_test_trainable(tt_test_randn(TT_SHAPE(3, 4), TT_F64));
        tt_tensor *sn = tt_test_trainable(tt_test_randn(TT_SHAPE(3, 4), TT_F64));
        void *ud = il ? (void *)1 : NULL;
        OK(tt_gradcheck(f_rope, 3, (tt_tensor *[]){x, c, sn}, 1, NULL, ud));
        tt_tensor *c2 = tt_test_randn(TT_SHAPE(3, 4), TT_F64);
        tt_tensor *s2 = tt_test_randn(TT_SHAPE(3, 4), TT_F64);
        OK(tt_gradcheck(f_rope, 3, (tt_tensor *[]){x, c2, s2}, 1, NULL, ud));
        tt_tensor *x2 = tt_test_trainable(tt_test_randn(TT_SHAPE(3, 4), TT_F64));
        OK(tt_gradcheck(f_rope, 3, (tt_tensor *[]){x2, c, sn}, 1, NULL, ud));
        tt_release(x), tt_release(c), tt_release(sn), tt_release(c2), tt_release(s2);
        tt_release(x2);
    }
}
END_TEST

/* -------------------------------------------------- grouped-query attention */

/* k, v [B, Hkv, S, D] with their heads repeated `group` times each
 * (PyTorch's repeat_interleave on dim 1): what enable_gqa means. */
static tt_tensor *repeat_heads(tt_tensor *t, int64_t group)
{
    int64_t hk = tt_sizes(t)[1], idx[16];
    for (int64_t h = 0; h < hk * group; h++)
        idx[h] = h / group;
    int64_t n = hk * group;
    tt_tensor *ix = tt_from_data(1, &n, TT_I64, idx);
    tt_tensor *r = ix ? tt_index_select(t, 1, ix) : NULL;
    tt_release(ix);
    return r;
}

/* in = {q, k, v, G}; ud: the group, 0 for the repeated-heads reference;
 * out = sum(attention * G) and its backward. */
static tt_status gqa_loss(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    int64_t group = (int64_t)(intptr_t)ud;
    tt_scope_begin();
    tt_tensor *a;
    if (group)
        a = tt_scaled_dot_product_attention_gqa(in[0], in[1], in[2], true, 0);
    else
        a = tt_scaled_dot_product_attention(in[0], repeat_heads(in[1], 2),
                                            repeat_heads(in[2], 2), true, 0);
    tt_tensor *l = a ? tt_sum_all(tt_mul(a, in[3])) : NULL;
    out[0] = l ? tt_keep(l) : NULL;
    tt_scope_end();
    return out[0] ? TT_OK : tt_errcode();
}

/* Four query heads on two key/value heads equal the heads repeated, with
 * gradients (key and value's summed over each group). */
START_TEST(test_gqa_values_and_grads)
{
    const tt_dtype dts[2] = {TT_F32, TT_F64};
    for (int i = 0; i < 2; i++) {
        tt_dtype dt = dts[i];
        double tol = dt == TT_F32 ? 1e-5 : 1e-12;
        tt_tensor *base[4] = {tt_test_randn(TT_SHAPE(2, 4, 5, 6), dt),
                              tt_test_randn(TT_SHAPE(2, 2, 7, 6), dt),
                              tt_test_randn(TT_SHAPE(2, 2, 7, 3), dt),
                              tt_test_randn(TT_SHAPE(2, 4, 5, 3), dt)};
        tt_tensor *a[4], *b[4], *la, *lb;
        for (int k = 0; k < 4; k++) {
            a[k] = NN(tt_clone(base[k])), b[k] = NN(tt_clone(base[k]));
            if (k < 3) {
                OK(tt_set_requires_grad(a[k], true));
                OK(tt_set_requires_grad(b[k], true));
            }
        }
        OK(gqa_loss(a, 4, &la, 1, (void *)2));
        OK(gqa_loss(b, 4, &lb, 1, NULL));
        tt_test_assert_close(la, lb, tol, "gqa loss");
        OK(tt_backward(la, NULL));
        OK(tt_backward(lb, NULL));
        for (int k = 0; k < 3; k++) {
            tt_tensor *ga = NN(tt_get_grad(a[k])), *gb = NN(tt_get_grad(b[k]));
            ck_assert(tt_sizes(ga)[1] == tt_sizes(base[k])[1]);
            tt_test_assert_close(ga, gb, tol, "gqa grad");
            tt_release(ga), tt_release(gb);
        }
        tt_release(la), tt_release(lb);
        for (int k = 0; k < 4; k++)
            tt_release(a[k]), tt_release(b[k]), tt_release(base[k]);
    }
}
END_TEST

static tt_status f_gqa(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    out[0] = tt_scaled_dot_product_attention_gqa(in[0], in[1], in[2], false, 0.5);
    return out[0] ? TT_OK : tt_errcode();
}

START_TEST(test_gqa_gradcheck_compiled)
{
    tt_tensor *q = tt_test_trainable(tt_test_randn(TT_SHAPE(1, 6, 3, 4), TT_F64));
    tt_tensor *k = tt_test_trainable(tt_test_randn(TT_SHAPE(1, 2, 5, 4), TT_F64));
    tt_tensor *v = tt_test_trainable(tt_test_randn(TT_SHAPE(1, 2, 5, 2), TT_F64));
    OK(tt_gradcheck(f_gqa, 3, (tt_tensor *[]){q, k, v}, 1, NULL, NULL));
    tt_tensor *in[4] = {q, k, v, tt_test_randn(TT_SHAPE(1, 6, 3, 2), TT_F64)};
    tt_compiled *c = NN(tt_compile(gqa_loss, 4, 1, &(tt_trace_opts){.fullgraph = true,
                                                                    .ud = (void *)3,
                                                                    .ud_constant = true}));
    tt_tensor *lc, *le;
    OK(tt_compiled_call(c, in, &lc));
    OK(gqa_loss(in, 4, &le, 1, (void *)3));
    tt_test_assert_close(lc, le, 1e-12, "compiled gqa");
    tt_release(lc), tt_release(le);
    tt_compiled_free(c);
    tt_release(q), tt_release(k), tt_release(v), tt_release(in[3]);
}
END_TEST

/* A symbolic trace makes the heads symbols (query s2 heads, key 1): the
 * op refused any symbolic head count that differs from key's, though it
 * divides (tt-difftest, sdpa_ext; fixed: divisibility is a guard). Traced
 * symbolically and compiled, then called with other head counts. */
START_TEST(test_gqa_symbolic_heads)
{
    const int64_t hq[2] = {4, 6};
    tt_compiled *c = NN(tt_compile(f_gqa, 3, 1, &(tt_trace_opts){.mode = TT_TRACE_SYMBOLIC}));
    for (int i = 0; i < 2; i++) {
        tt_tensor *in[3] = {tt_test_randn(TT_SHAPE(1, hq[i], 3, 4), TT_F32),
                            tt_test_randn(TT_SHAPE(1, 2, 5, 4), TT_F32),
                            tt_test_randn(TT_SHAPE(1, 2, 5, 2), TT_F32)}, *y, *e;
        OK(tt_compiled_call(c, in, &y));
        OK(f_gqa(in, 3, &e, 1, NULL));
        tt_test_assert_close(y, e, 1e-6, "symbolic gqa");
        tt_release(y), tt_release(e);
        for (int k = 0; k < 3; k++)
            tt_release(in[k]);
    }
    tt_compiled_free(c);
    tt_tensor *q = tt_test_randn(TT_SHAPE(1, 4, 3, 4), TT_F32), *k = tt_test_randn(TT_SHAPE(1, 2, 5, 4), TT_F32);
    tt_graph *g = NN(tt_trace(f_gqa, 3, (tt_tensor *[]){q, k, k}, &(tt_trace_opts){.mode = TT_TRACE_SYMBOLIC}));
    tt_graph_free(g);
    tt_release(q), tt_release(k);
    tt_sym_reset();
}
END_TEST

/* ------------------------------------------------ attn_mask and window */

/* softmax(q k^T scale + add) v with plain ops (add: [.., T, S] or NULL). */
static tt_tensor *attn_reference(tt_tensor *q, tt_tensor *k, tt_tensor *v, tt_tensor *add,
                                 double scale)
{
    tt_tensor *s = tt_mul_scalar(tt_matmul(q, tt_transpose(k, -2, -1)), scale);
    if (add)
        s = tt_add(s, add);
    return tt_matmul(tt_softmax(s, -1), v);
}

/* The call through the op with every argument: mask, causal, window. */
static tt_tensor *sdpa_full(tt_tensor *q, tt_tensor *k, tt_tensor *v, tt_tensor *mask,
                            bool causal, int64_t window)
{
    tt_value out = tt_v_none();
    tt_status st = tt_op_call(
        NN(tt_op_find("tt::scaled_dot_product_attention")),
        (tt_value[]){tt_v_tensor(q), tt_v_tensor(k), tt_v_tensor(v),
                     mask ? tt_v_tensor(mask) : tt_v_none(), tt_v_float(0), tt_v_bool(causal),
                     tt_v_none(), tt_v_bool(false), tt_v_int(window)},
        9, &out, 1);
    return st ? NULL : out.u.t;
}

/* case 0: a float mask [T, S]; 1: a bool mask [B, 1, T, S]; 2: a causal
 * window of 2; each against the reference with the same additive mask,
 * values and gradients; 5 query rows (through BLAS) and 3 (the loops of
 * a few rows). */
static void attn_mask_window_rows(int64_t T)
{
    int64_t B = 2, H = 3, S = 5, D = 4;
    double addv[2 * 5 * 5], fm[5 * 5];
    bool bm[2 * 5 * 5];
    for (int64_t b = 0; b < B; b++)
        for (int64_t i = 0; i < T; i++)
            for (int64_t j = 0; j < S; j++) {
                int64_t e = (b * T + i) * S + j;
                bm[e] = j == i || (i * 7 + j * 3 + b) % 3 != 0; /* never a row all false */
            }
    for (int64_t e = 0; e < T * S; e++)
        fm[e] = (double)((e * 5 + 2) % 7) / 4 - 0.75;
    for (int c = 0; c < 3; c++) {
        tt_tensor *base[3] = {tt_test_randn(TT_SHAPE(B, H, T, D), TT_F64),
                              tt_test_randn(TT_SHAPE(B, H, S, D), TT_F64),
                              tt_test_randn(TT_SHAPE(B, H, S, 3), TT_F64)};
        tt_tensor *mask = NULL, *add = NULL;
        if (c == 0) {
            mask = NN(tt_from_data(TT_SHAPE(T, S), TT_F64, fm));
            add = tt_retain(mask);
        } else {
            for (int64_t b = 0; b < B; b++)
                for (int64_t i = 0; i < T; i++)
                    for (int64_t j = 0; j < S; j++) {
                        int64_t e = (b * T + i) * S + j;
                        bool see = c == 1 ? bm[e] : j <= i && j > i - 2;
                        addv[e] = see ? 0 : -INFINITY;
                    }
            add = NN(tt_from_data(TT_SHAPE(B, 1, T, S), TT_F64, addv));
            if (c == 1)
                mask = NN(tt_from_data(TT_SHAPE(B, 1, T, S), TT_BOOL, bm));
        }
        tt_tensor *a[3], *r[3];
        for (int k = 0; k < 3; k++) {
            a[k] = tt_test_trainable(NN(tt_clone(base[k])));
            r[k] = tt_test_trainable(NN(tt_clone(base[k])));
        }
        tt_tensor *G = tt_test_randn(TT_SHAPE(B, H, T, 3), TT_F64);
        tt_scope_begin();
        tt_tensor *ya = NN(sdpa_full(a[0], a[1], a[2], mask, c == 2, c == 2 ? 2 : 0));
        tt_tensor *yr = NN(attn_reference(r[0], r[1], r[2], add, 0.5));
        tt_test_assert_close(ya, yr, 1e-12, "masked attention");
        OK(tt_backward(tt_sum_all(tt_mul(ya, G)), NULL));
        OK(tt_backward(tt_sum_all(tt_mul(yr, G)), NULL));
        tt_scope_end();
        for (int k = 0; k < 3; k++) {
            tt_tensor *ga = NN(tt_get_grad(a[k])), *gr = NN(tt_get_grad(r[k]));
            tt_test_assert_close(ga, gr, 1e-12, "masked attention grad");
            tt_release(ga), tt_release(gr);
            tt_release(a[k]), tt_release(r[k]), tt_release(base[k]);
        }
        tt_release(G), tt_release(mask), tt_release(add);
    }
}

START_TEST(test_attn_mask_window)
{
    for (int64_t T = 5; T >= 3; T -= 2)
        attn_mask_window_rows(T);
}
END_TEST

/* ------------------------------------------------------------ compiled */

/* One Llama decoder layer: in = {x [2, 4, 8], g_att, Wq, Wk, Wv, g_mlp,
 * W1, W3, W2, cos, sin}; two heads of 4 with rotary embedding and causal
 * attention, a SwiGLU MLP, residuals; loss = mean(out^2); backward. */
enum { NL = 11, NTRAIN = 9 };

static tt_tensor *heads(tt_tensor *t) /* [2, 4, 8] -> [2, 2, 4, 4] */
{
    tt_tensor *v = t ? tt_view(t, 4, (int64_t[]){2, 4, 2, 4}) : NULL;
    return v ? tt_transpose(v, 1, 2) : NULL;
}

static tt_status layer_step(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    bool il = ud != NULL;
    tt_scope_begin();
    int64_t n = 8;
    tt_tensor *x = in[0];
    tt_tensor *h = tt_rms_norm(x, 1, &n, in[1], 1e-5);
    tt_tensor *q = heads(h ? tt_matmul(h, in[2]) : NULL);
    tt_tensor *k = heads(q ? tt_matmul(h, in[3]) : NULL);
    tt_tensor *v = heads(k ? tt_matmul(h, in[4]) : NULL);
    tt_tensor *qr = v ? tt_rotary_embedding(q, in[9], in[10], il) : NULL;
    tt_tensor *kr = qr ? tt_rotary_embedding(k, in[9], in[10], il) : NULL;
    tt_tensor *a = kr ? tt_scaled_dot_product_attention(qr, kr, v, true, 0) : NULL;
    tt_tensor *am = a ? tt_reshape(tt_transpose(a, 1, 2), 3, (int64_t[]){2, 4, 8}) : NULL;
    tt_tensor *x1 = am ? tt_add(x, am) : NULL;
    tt_tensor *h2 = x1 ? tt_rms_norm(x1, 1, &n, in[5], -1) : NULL;
    tt_tensor *u = h2 ? tt_matmul(h2, in[6]) : NULL;
    tt_tensor *w = u ? tt_matmul(h2, in[7]) : NULL;
    tt_tensor *m = w ? tt_mul(tt_silu(u), w) : NULL;
    tt_tensor *o = m ? tt_add(x1, tt_matmul(m, in[8])) : NULL;
    tt_tensor *loss = o ? tt_mean_all(tt_mul(o, o)) : NULL;
    tt_status st = loss ? tt_backward(loss, NULL) : tt_errcode();
    out[0] = st ? NULL : tt_keep(loss);
    tt_scope_end();
    /* the gradients are results (a compiled call returns what the
     * function returns), taken off the inputs */
    for (int k = 0; k < NTRAIN; k++) {
        out[1 + k] = st ? NULL : tt_get_grad(in[k]);
        if (!st && !out[1 + k])
            st = tt_errcode() ? tt_errcode()
                              : tt_error(TT_EAUTOGRAD, "input %d got no gradient", k);
        if (!st)
            st = tt_set_grad(in[k], NULL);
    }
    if (st)
        for (int k = 0; k < 1 + NTRAIN; k++)
            out[k] = tt_release(out[k]);
    return st;
}

/* Traced (fullgraph) and compiled, forward and backward, equal to eager,
 * for both rotary forms, f32 and f64; the second call replays the plan. */
START_TEST(test_llama_layer_compiled)
{
    const tt_dtype dts[2] = {TT_F32, TT_F64};
    for (int v = 0; v < 4; v++) {
        tt_dtype dt = dts[v & 1];
        bool il = v & 2;
        tt_tensor *init[NL] = {
            tt_test_randn(TT_SHAPE(2, 4, 8), dt), tt_test_randn(TT_SHAPE(8), dt),
            tt_test_randn(TT_SHAPE(8, 8), dt),    tt_test_randn(TT_SHAPE(8, 8), dt),
            tt_test_randn(TT_SHAPE(8, 8), dt),    tt_test_randn(TT_SHAPE(8), dt),
            tt_test_randn(TT_SHAPE(8, 12), dt),   tt_test_randn(TT_SHAPE(8, 12), dt),
            tt_test_randn(TT_SHAPE(12, 8), dt),   NULL, NULL};
        rope_tables(4, 4, il, dt, &init[9], &init[10]);
        tt_tensor *ce[NL], *ee[NL];
        for (int k = 0; k < NL; k++) {
            ce[k] = NN(tt_clone(init[k]));
            ee[k] = NN(tt_clone(init[k]));
            if (k < NTRAIN) {
                OK(tt_set_requires_grad(ce[k], true));
                OK(tt_set_requires_grad(ee[k], true));
            }
        }
        void *ud = il ? (void *)1 : NULL;
        tt_compiled *c = NN(tt_compile(layer_step, NL, 1 + NTRAIN,
                                       &(tt_trace_opts){.fullgraph = true, .ud = ud,
                                                        .ud_constant = true}));
        double tol = dt == TT_F32 ? 2e-5 : 1e-12;
        for (int step = 0; step < 2; step++) {
            tt_tensor *rc[1 + NTRAIN], *re[1 + NTRAIN];
            OK(tt_compiled_call(c, ce, rc));
            OK(layer_step(ee, NL, re, 1 + NTRAIN, ud));
            for (int k = 0; k < 1 + NTRAIN; k++) {
                tt_test_assert_close(rc[k], re[k], tol, k ? "grad" : "loss");
                tt_release(rc[k]), tt_release(re[k]);
            }
        }
        tt_compile_stats stats;
        tt_compiled_stats(c, &stats);
        ck_assert_int_eq(stats.hits, 1);
        tt_compiled_free(c);
        for (int k = 0; k < NL; k++)
            tt_release(ce[k]), tt_release(ee[k]), tt_release(init[k]);
    }
}
END_TEST

/* ---------------------------------------------- symbolic sizes, memory */

/* The fake path with symbolic batch, heads' positions and keys: every op
 * keeps the symbols (a decode step traced once for every position). */
START_TEST(test_llama_symbolic)
{
    tt_sym_reset();
    tt_size b = tt_sym_new("b", 2), t = tt_sym_new("t", 5), s = tt_sym_new("s", 7);
    tt_tensor *x = NN(tt_fake_empty(4, (tt_size[]){b, 4, t, 8}, TT_F32));
    tt_tensor *kk = NN(tt_fake_empty(4, (tt_size[]){b, 2, s, 8}, TT_F32));
    tt_tensor *tab = NN(tt_fake_empty(2, (tt_size[]){t, 8}, TT_F32));
    tt_tensor *w = NN(tt_fake_empty(1, (tt_size[]){8}, TT_F32));
    tt_tensor *y = NN(tt_rms_norm(x, 1, (int64_t[]){8}, w, -1));
    ck_assert(tt_is_fake(y) && tt_sizes(y)[0] == b && tt_sizes(y)[2] == t);
    tt_tensor *r = NN(tt_rotary_embedding(y, tab, tab, false));
    ck_assert(tt_is_fake(r) && tt_sizes(r)[2] == t);
    tt_tensor *sl = NN(tt_silu(r));
    ck_assert(tt_is_fake(sl) && tt_sizes(sl)[0] == b);
    tt_tensor *a = NN(tt_scaled_dot_product_attention_gqa(r, kk, kk, false, 0));
    ck_assert(tt_is_fake(a) && tt_sizes(a)[0] == b && tt_sizes(a)[1] == 4 &&
              tt_sizes(a)[2] == t && tt_sizes(a)[3] == 8);
    tt_release(a), tt_release(sl), tt_release(r), tt_release(y), tt_release(w);
    tt_release(tab), tt_release(kk), tt_release(x);
    tt_sym_reset();
}
END_TEST

/* The calls here, on inputs that need copies (transposed). */
static tt_tensor *llama_call(int k, tt_tensor *xt, tt_tensor *tab, tt_tensor *q, tt_tensor *kv,
                             tt_tensor *mask)
{
    switch (k) {
    case 0: return tt_rms_norm(xt, 1, (int64_t[]){6}, NULL, 1e-5);
    case 1: return tt_rotary_embedding(xt, tab, tab, true);
    case 2: return tt_silu(xt);
    default: {
        tt_value out = tt_v_none();
        tt_status st = tt_op_call(
            NN(tt_op_find("tt::scaled_dot_product_attention")),
            (tt_value[]){tt_v_tensor(q), tt_v_tensor(kv), tt_v_tensor(kv), tt_v_tensor(mask),
                         tt_v_float(0), tt_v_bool(false), tt_v_none(), tt_v_bool(true),
                         tt_v_int(0)},
            9, &out, 1);
        return st ? NULL : out.u.t;
    }
    }
}

/* Failing the Nth allocation of each call fails it cleanly (ENOMEM, no
 * tensor left behind) until the call has all it needs. */
START_TEST(test_llama_oom)
{
    tt_tensor *x0 = tt_test_randn(TT_SHAPE(6, 4), TT_F32);
    tt_tensor *xt = NN(tt_t(x0)); /* [4, 6] */
    tt_tensor *tab = tt_test_randn(TT_SHAPE(4, 6), TT_F32);
    tt_tensor *q = tt_test_randn(TT_SHAPE(1, 4, 3, 2), TT_F32);
    tt_tensor *kv = tt_test_randn(TT_SHAPE(1, 2, 3, 2), TT_F32);
    tt_tensor *mask = NN(tt_ones(TT_SHAPE(3, 3), TT_BOOL));
    for (int k = 0; k < 4; k++) {
        int failures = 0;
        for (int64_t n = 1; n < 64; n++) {
            int64_t live = tt_live_tensors();
            tt_debug_fail_alloc(n);
            tt_tensor *y = llama_call(k, xt, tab, q, kv, mask);
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
        tt_clear_error();
    }
    tt_release(mask), tt_release(kv), tt_release(q), tt_release(tab), tt_release(xt);
    tt_release(x0);
}
END_TEST

/* ------------------------------------------------------------- errors */

static struct {
    tt_tensor *x, *xi, *w4, *w64, *g2, *x2, *x2_64, *q4, *k2, *k3;
} in;

static void errors_setup(void)
{
    tt_test_setup();
    in.x = tt_zeros(TT_SHAPE(4, 3), TT_F32);
    in.xi = tt_zeros(TT_SHAPE(4, 3), TT_I64);
    in.w4 = tt_ones(TT_SHAPE(4), TT_F32);
    in.w64 = tt_ones(TT_SHAPE(3), TT_F64);
    in.g2 = tt_ones(TT_SHAPE(2, 3), TT_F32);
    in.x2 = tt_ones(TT_SHAPE(3, 2), TT_F32);
    in.x2_64 = tt_ones(TT_SHAPE(3, 2), TT_F64);
    in.q4 = tt_ones(TT_SHAPE(1, 4, 3, 2), TT_F32);
    in.k2 = tt_ones(TT_SHAPE(1, 2, 3, 2), TT_F32);
    in.k3 = tt_ones(TT_SHAPE(1, 3, 3, 2), TT_F32);
    ck_assert(in.x && in.xi && in.w4 && in.w64 && in.g2 && in.x2 && in.x2_64 && in.q4 &&
              in.k2 && in.k3);
}

static void errors_teardown(void)
{
    tt_tensor *all[] = {in.x, in.xi, in.w4, in.w64, in.g2, in.x2, in.x2_64, in.q4, in.k2, in.k3};
    for (int k = 0; k < TT_TABLE_LEN(all); k++)
        tt_release(all[k]);
    memset(&in, 0, sizeof in);
    tt_test_teardown();
}

static tt_tensor *rms_backward_call(tt_tensor *g)
{
    int64_t n = 3;
    tt_value outs[2] = {tt_v_none(), tt_v_none()};
    tt_status st = tt_op_call(NN(tt_op_find("tt::rms_norm_backward")),
                              (tt_value[]){tt_v_tensor(g), tt_v_tensor(in.x), tt_v_ints(1, &n),
                                           tt_v_none(), tt_v_none()},
                              5, outs, 2);
    if (st)
        return NULL;
    tt_value_clear(&outs[1]);
    return outs[0].u.t;
}

/* A float mask that requires grad: the forward runs, its backward refuses. */
static tt_status mask_grad_call(void)
{
    tt_tensor *m = tt_zeros(TT_SHAPE(3, 3), TT_F32);
    tt_status st = m ? tt_set_requires_grad(m, true) : tt_errcode();
    tt_tensor *y = st ? NULL : sdpa_full(in.q4, in.q4, in.q4, m, false, 0);
    tt_tensor *l = y ? tt_sum_all(y) : NULL;
    st = l ? tt_backward(l, NULL) : tt_errcode();
    tt_release(l), tt_release(y), tt_release(m);
    return st;
}

#define LLAMA_ERRORS(X)                                                        \
    X(rms_shape, tt_rms_norm(in.x, 1, (int64_t[]){4}, NULL, -1), TT_ESHAPE,    \
      "tt::rms_norm: argument 'normalized_shape' (#2): [4] is not the "        \
      "trailing sizes of input [4, 3]")                                        \
    X(rms_too_many_dims, tt_rms_norm(in.x, 3, (int64_t[]){1, 4, 3}, NULL, -1), TT_ESHAPE, \
      "tt::rms_norm: argument 'normalized_shape' (#2): [1, 4, 3] is not the "  \
      "trailing sizes of input [4, 3]")                                        \
    X(rms_weight_shape, tt_rms_norm(in.x, 1, (int64_t[]){3}, in.w4, -1), TT_ESHAPE, \
      "tt::rms_norm: argument 'weight' (#3): expected shape [3], got [4]")     \
    X(rms_weight_dtype, tt_rms_norm(in.x, 1, (int64_t[]){3}, in.w64, -1), TT_EDTYPE, \
      "tt::rms_norm: argument 'weight' (#3): expected f32 like 'self', got f64") \
    X(rms_int, tt_rms_norm(in.xi, 1, (int64_t[]){3}, NULL, 1e-5), TT_EDTYPE,   \
      "tt::rms_norm: argument 'input' (#1): expected f32 or f64, got i64")     \
    X(rms_null, tt_rms_norm(NULL, 1, (int64_t[]){3}, NULL, 1e-5), TT_EINVAL,   \
      "argument 'input' (#1) expects Tensor, got NULL")                        \
    X(rms_backward_grad, rms_backward_call(in.g2), TT_ESHAPE,                  \
      "tt::rms_norm_backward: argument 'grad_out' (#1): expected shape [4, 3], got [2, 3]") \
    X(silu_int, tt_silu(in.xi), TT_EDTYPE,                                     \
      "tt::silu: argument 'self' (#1): not implemented for i64 tensors")        \
    X(rope_odd, tt_rotary_embedding(in.x, in.x, in.x, false), TT_ESHAPE,       \
      "tt::rotary_embedding: argument 'x' (#1): expected an even last size D " \
      "(pairs of elements are rotated), got [4, 3]")                           \
    X(rope_1d, tt_rotary_embedding(in.w4, in.w4, in.w4, false), TT_ESHAPE,     \
      "tt::rotary_embedding: argument 'x' (#1): expected at least 2 dims "     \
      "[..., T, D], got [4]")                                                  \
    X(rope_table_shape, tt_rotary_embedding(in.x2, in.g2, in.x2, true), TT_ESHAPE, \
      "tt::rotary_embedding: argument 'cos' (#2): expected shape [T, D] = "    \
      "[3, 2] (the last two sizes of x), got [2, 3]")                          \
    X(rope_table_dtype, tt_rotary_embedding(in.x2, in.x2, in.x2_64, true), TT_EDTYPE, \
      "tt::rotary_embedding: argument 'sin' (#3): expected f32 like 'self', got f64") \
    X(rope_int, tt_rotary_embedding(in.xi, in.xi, in.xi, false), TT_EDTYPE,   \
      "tt::rotary_embedding: argument 'x' (#1): expected f32 or f64, got i64") \
    X(gqa_no_flag, tt_scaled_dot_product_attention(in.q4, in.k2, in.k2, false, 0), TT_ESHAPE, \
      "tt::scaled_dot_product_attention: argument 'key' (#2): leading sizes of "  \
      "[1, 2, 3, 2] do not match query [1, 4, 3, 2]")                          \
    X(gqa_not_dividing, tt_scaled_dot_product_attention_gqa(in.q4, in.k3, in.k3, false, 0), \
      TT_ESHAPE,                                                               \
      "tt::scaled_dot_product_attention: argument 'key' (#2): with enable_gqa " \
      "the number of key/value heads (dim -3) must divide query's, got key "  \
      "[1, 3, 3, 2] and query [1, 4, 3, 2]")                                   \
    X(gqa_value_heads, tt_scaled_dot_product_attention_gqa(in.q4, in.k2, in.q4, false, 0), \
      TT_ESHAPE,                                                               \
      "tt::scaled_dot_product_attention: argument 'value' (#3): expected as "  \
      "many heads (dim -3) as key [1, 2, 3, 2], got [1, 4, 3, 2]")            \
    X(mask_dtype, sdpa_full(in.q4, in.q4, in.q4, in.xi, false, 0), TT_EDTYPE,  \
      "tt::scaled_dot_product_attention: argument 'attn_mask' (#4): expected " \
      "bool or f32 like query, got i64")                                       \
    X(mask_shape, sdpa_full(in.q4, in.q4, in.q4, in.w4, false, 0), TT_ESHAPE,  \
      "tt::scaled_dot_product_attention: argument 'attn_mask' (#4): [4] does " \
      "not broadcast to the scores' shape [1, 4, 3, 3]")                       \
    X(mask_and_causal, sdpa_full(in.q4, in.q4, in.q4, in.x2, true, 0), TT_EINVAL, \
      "tt::scaled_dot_product_attention: argument 'attn_mask' (#4): an "       \
      "explicit mask cannot be given with is_causal=True")                     \
    X(window_not_causal, sdpa_full(in.q4, in.q4, in.q4, NULL, false, 2), TT_EINVAL, \
      "tt::scaled_dot_product_attention: argument 'window' (#9): expected 0 "  \
      "(none) or a positive size with is_causal=True, got 2 without is_causal") \
    X(window_negative, sdpa_full(in.q4, in.q4, in.q4, NULL, true, -1), TT_EINVAL, \
      "tt::scaled_dot_product_attention: argument 'window' (#9): expected 0 "  \
      "(none) or a positive size with is_causal=True, got -1")                 \
    X(mask_grad, mask_grad_call(), TT_EINVAL,                                  \
      "argument 'attn_mask' (#4): no gradient with respect to the mask")

TT_ERROR_TABLE(LLAMA_ERRORS, llama_errors);

START_TEST(test_llama_errors)
{
    tt_test_run_error_case(&llama_errors[_i], _i);
}
END_TEST


/* A decode step with a KV cache written in place at the position, the
 * position a dynamic int (a size symbol): compiled symbolically, one plan
 * serves every position from 2 on (0 and 1 are specialized, as PyTorch's
 * dynamo does), and each call equals the plan traced for that position
 * alone, caches included. in: x [1, D], cache_k, cache_v [T, D]. */
static tt_status kv_decode_step(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_scope_begin();
    tt_size pos = tt_fn_arg_int(0);
    tt_status st = tt_copy_(tt_narrow(in[1], 0, pos, 1), in[0]);
    if (!st)
        st = tt_copy_(tt_narrow(in[2], 0, pos, 1), tt_mul_scalar(in[0], 2));
    tt_tensor *k = tt_narrow(in[1], 0, 0, tt_sym_add(pos, 1));
    tt_tensor *v = tt_narrow(in[2], 0, 0, tt_sym_add(pos, 1));
    tt_tensor *att = tt_softmax(tt_matmul(in[0], tt_t(k)), -1);
    out[0] = st ? NULL : tt_keep(tt_matmul(att, v));
    tt_scope_end();
    return out[0] ? TT_OK : tt_errcode();
}

START_TEST(test_kv_cache_decode_one_plan)
{
    tt_compiled *sym = NN(tt_compile(kv_decode_step, 3, 1,
                                     &(tt_trace_opts){.mode = TT_TRACE_SYMBOLIC, .fullgraph = true,
                                                      .dynamic_args = 1}));
    tt_compiled *each = NN(tt_compile(kv_decode_step, 3, 1,
                                      &(tt_trace_opts){.mode = TT_TRACE_FAKE, .fullgraph = true}));
    tt_tensor *ck[2] = {NN(tt_zeros(TT_SHAPE(16, 4), TT_F32)), NN(tt_zeros(TT_SHAPE(16, 4), TT_F32))};
    tt_tensor *cv[2] = {NN(tt_zeros(TT_SHAPE(16, 4), TT_F32)), NN(tt_zeros(TT_SHAPE(16, 4), TT_F32))};
    tt_manual_seed(5);
    for (int p = 0; p < 8; p++) {
        tt_tensor *x = NN(tt_randn(TT_SHAPE(1, 4), TT_F32)), *y[2];
        const tt_value arg = tt_v_int(p);
        OK(tt_compiled_call_args(sym, (tt_tensor *[]){x, ck[0], cv[0]}, &y[0], &arg, 1));
        OK(tt_compiled_call_args(each, (tt_tensor *[]){x, ck[1], cv[1]}, &y[1], &arg, 1));
        tt_test_assert_same_bits(y[0], y[1], "decode output");
        tt_test_assert_same_bits(ck[0], ck[1], "key cache");
        tt_test_assert_same_bits(cv[0], cv[1], "value cache");
        tt_release(y[0]), tt_release(y[1]), tt_release(x);
    }
    tt_compile_stats st;
    tt_compiled_stats(sym, &st);
    ck_assert_int_eq(st.misses, 3); /* positions 0, 1, and one plan for 2..7 */
    ck_assert_int_eq(st.hits, 5);
    tt_compiled_stats(each, &st);
    ck_assert_int_eq(st.misses, 8);
    for (int i = 0; i < 2; i++)
        tt_release(ck[i]), tt_release(cv[i]);
    tt_compiled_free(sym);
    tt_compiled_free(each);
}
END_TEST

static Suite *llama_suite(void)
{
    Suite *s = suite_create("ops_llama");
    TCase *tc = tt_tcase("rms_norm");
    tcase_add_test(tc, test_rms_norm_values);
    tcase_add_test(tc, test_rms_norm_eps_none);
    tcase_add_test(tc, test_rms_norm_gradcheck);
    tcase_add_test(tc, test_rms_norm_backward_values);
    suite_add_tcase(s, tc);
    tc = tt_tcase("silu");
    tcase_add_test(tc, test_silu_values);
    tcase_add_test(tc, test_silu_gradcheck);
    suite_add_tcase(s, tc);
    tc = tt_tcase("rotary");
    tcase_add_test(tc, test_rotary_values);
    tcase_add_test(tc, test_rotary_gradcheck);
    suite_add_tcase(s, tc);
    tc = tt_tcase("gqa");
    tcase_add_test(tc, test_gqa_values_and_grads);
    tcase_add_test(tc, test_gqa_gradcheck_compiled);
    tcase_add_test(tc, test_gqa_symbolic_heads);
    suite_add_tcase(s, tc);
    tcase_add_test(tc, test_attn_mask_window);
    tc = tt_tcase("compiled");
    tcase_add_test(tc, test_llama_layer_compiled);
    tcase_add_test(tc, test_llama_symbolic);
    tcase_add_test(tc, test_llama_oom);
    tcase_add_test(tc, test_kv_cache_decode_one_plan);
    suite_add_tcase(s, tc);
    tc = tt_tcase_with("errors", errors_setup, errors_teardown);
    tcase_add_loop_test(tc, test_llama_errors, 0, TT_TABLE_LEN(llama_errors));
    suite_add_tcase(s, tc);
    return s;
}

TT_TEST_MAIN(llama_suite)
