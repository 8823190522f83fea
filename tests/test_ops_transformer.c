/* The transformer ops: embedding, layer_norm, scaled_dot_product_attention,
 * _adamw_ and _global_norm. Each forward is compared with the same math
 * written out of plain ops (or a plain C loop), in f32 and f64 and with
 * non-contiguous inputs; each derivative is gradchecked in f64; the fake
 * kernel gives the real output's metadata; every error is checked by
 * status and text. */
#include "tt_test.h"

#include <math.h>
#include <stdio.h>

/* ------------------------------------------------------------ embedding */

START_TEST(test_embedding_values)
{
    tt_tensor *w = NN(tt_arange(0, 12, 1, TT_F32));
    tt_tensor *w2 = NN(tt_view(w, TT_SHAPE(4, 3)));
    tt_tensor *idx = NN(tt_from_data(TT_SHAPE(2, 2), TT_I64, (int64_t[]){3, 0, 3, 1}));
    tt_tensor *y = NN(tt_embedding(w2, idx));
    ck_assert_int_eq(tt_ndim(y), 3);
    ck_assert(tt_sizes(y)[0] == 2 && tt_sizes(y)[1] == 2 && tt_sizes(y)[2] == 3);
    double *v = tt_test_values(y);
    double want[12] = {9, 10, 11, 0, 1, 2, 9, 10, 11, 3, 4, 5};
    for (int i = 0; i < 12; i++)
        ck_assert_double_eq(v[i], want[i]);
    free(v);
    /* i32 indices give the same rows. */
    tt_tensor *i32 = NN(tt_to_dtype(idx, TT_I32));
    tt_tensor *y32 = NN(tt_embedding(w2, i32));
    tt_test_assert_same_bits(y32, y, "i32 indices");
    tt_release(y32);
    tt_release(i32);
    tt_release(y);
    tt_release(idx);
    tt_release(w2);
    tt_release(w);
}
END_TEST

/* The gradient of a repeated index is the sum of its rows' gradients. */
START_TEST(test_embedding_backward_accumulates)
{
    tt_tensor *w = tt_test_trainable(NN(tt_zeros(TT_SHAPE(3, 2), TT_F32)));
    tt_tensor *idx = NN(tt_from_data(TT_SHAPE(4), TT_I64, (int64_t[]){2, 0, 2, 2}));
    tt_tensor *y = NN(tt_embedding(w, idx));
    tt_tensor *s = NN(tt_sum_all(y));
    OK(tt_backward(s, NULL));
    tt_tensor *g = NN(tt_get_grad(w));
    double *v = tt_test_values(g);
    double want[6] = {1, 1, 0, 0, 3, 3};
    for (int i = 0; i < 6; i++)
        ck_assert_double_eq(v[i], want[i]);
    free(v);
    tt_release(g);
    tt_release(s);
    tt_release(y);
    tt_release(idx);
    tt_release(w);
}
END_TEST

static tt_status f_embedding(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    out[0] = tt_embedding(in[0], ud);
    return out[0] ? TT_OK : tt_errcode();
}

START_TEST(test_embedding_gradcheck)
{
    tt_tensor *w = tt_test_trainable(tt_test_randn(TT_SHAPE(5, 3), TT_F64));
    tt_tensor *idx = NN(tt_from_data(TT_SHAPE(2, 3), TT_I64, (int64_t[]){4, 1, 1, 0, 4, 4}));
    OK(tt_gradcheck(f_embedding, 1, (tt_tensor *[]){w}, 1, NULL, idx));
    tt_release(idx);
    tt_release(w);
}
END_TEST

START_TEST(test_embedding_errors)
{
    tt_tensor *w = NN(tt_zeros(TT_SHAPE(3, 2), TT_F32));
    tt_tensor *bad = NN(tt_from_data(TT_SHAPE(2), TT_I64, (int64_t[]){1, 3}));
    ck_assert_ptr_null(tt_embedding(w, bad));
    ck_assert_error(TT_EINVAL, "tt::embedding: argument 'indices' (#2): index 3 is out of "
                               "range for a table of 3 rows");
    tt_tensor *fl = NN(tt_zeros(TT_SHAPE(2), TT_F32));
    ck_assert_ptr_null(tt_embedding(w, fl));
    ck_assert_error(TT_EDTYPE, "tt::embedding: argument 'indices' (#2): expected i64 or i32 "
                               "indices, got f32");
    ck_assert_ptr_null(tt_embedding(fl, bad));
    ck_assert_error(TT_ESHAPE, "tt::embedding: argument 'weight' (#1): expected a 2-d "
                               "[num, dim] table, got [2]");
    tt_release(fl);
    tt_release(bad);
    tt_release(w);
}
END_TEST

/* ----------------------------------------------------------- layer_norm */

/* layer_norm over the last dim from plain ops: (x - mean) / sqrt(var +
 * eps) * w + b. */
static tt_tensor *ln_reference(const tt_tensor *x, const tt_tensor *w, const tt_tensor *b,
                               double eps)
{
    tt_scope_begin();
    int64_t last = -1;
    tt_tensor *m = tt_mean(x, 1, &last, true);
    tt_tensor *xc = tt_sub(x, m);
    tt_tensor *var = tt_mean(tt_mul(xc, xc), 1, &last, true);
    tt_tensor *y = tt_mul(xc, tt_rsqrt(tt_add_scalar(var, eps)));
    if (w)
        y = tt_mul(y, w);
    if (b)
        y = tt_add(y, b);
    tt_tensor *r = tt_keep(y);
    tt_scope_end();
    return NN(r);
}

START_TEST(test_layer_norm_values)
{
    tt_dtype dts[2] = {TT_F32, TT_F64};
    for (int i = 0; i < 2; i++) {
        tt_tensor *base = tt_test_randn(TT_SHAPE(6, 4), dts[i]);
        tt_tensor *x = NN(tt_transpose(base, 0, 1)); /* [4, 6], not contiguous */
        tt_tensor *w = tt_test_randn(TT_SHAPE(6), dts[i]), *b = tt_test_randn(TT_SHAPE(6), dts[i]);
        tt_tensor *y = NN(tt_layer_norm(x, 1, (int64_t[]){6}, w, b, 1e-5));
        tt_tensor *r = ln_reference(x, w, b, 1e-5);
        tt_test_assert_close(y, r, dts[i] == TT_F32 ? 1e-5 : 1e-12, "layer_norm");
        ck_assert(tt_is_contiguous(y));
        tt_tensor *y0 = NN(tt_layer_norm(x, 1, (int64_t[]){6}, NULL, NULL, 1e-5));
        tt_tensor *r0 = ln_reference(x, NULL, NULL, 1e-5);
        tt_test_assert_close(y0, r0, dts[i] == TT_F32 ? 1e-5 : 1e-12, "layer_norm, no affine");
        tt_release(r0);
        tt_release(y0);
        tt_release(r);
        tt_release(y);
        tt_release(b);
        tt_release(w);
        tt_release(x);
        tt_release(base);
    }
}
END_TEST

static tt_status f_layer_norm(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nout, (void)ud;
    out[0] = tt_layer_norm(in[0], 2, (int64_t[]){2, 3}, nin > 1 ? in[1] : NULL,
                           nin > 2 ? in[2] : NULL, 1e-5);
    return out[0] ? TT_OK : tt_errcode();
}

START_TEST(test_layer_norm_gradcheck)
{
    tt_tensor *x = tt_test_trainable(tt_test_randn(TT_SHAPE(4, 2, 3), TT_F64));
    tt_tensor *w = tt_test_trainable(tt_test_randn(TT_SHAPE(2, 3), TT_F64));
    tt_tensor *b = tt_test_trainable(tt_test_randn(TT_SHAPE(2, 3), TT_F64));
    OK(tt_gradcheck(f_layer_norm, 3, (tt_tensor *[]){x, w, b}, 1, NULL, NULL));
    OK(tt_gradcheck(f_layer_norm, 1, (tt_tensor *[]){x}, 1, NULL, NULL));
    tt_release(b);
    tt_release(w);
    tt_release(x);
}
END_TEST

START_TEST(test_layer_norm_errors)
{
    tt_tensor *x = NN(tt_zeros(TT_SHAPE(2, 3), TT_F32));
    tt_tensor *w = NN(tt_zeros(TT_SHAPE(4), TT_F32));
    ck_assert_ptr_null(tt_layer_norm(x, 1, (int64_t[]){4}, NULL, NULL, 1e-5));
    ck_assert_error(TT_ESHAPE, "tt::layer_norm: argument 'normalized_shape' (#2): [4] is not "
                               "the trailing sizes of input [2, 3]");
    ck_assert_ptr_null(tt_layer_norm(x, 1, (int64_t[]){3}, w, NULL, 1e-5));
    ck_assert_error(TT_ESHAPE, "tt::layer_norm: argument 'weight' (#3): expected shape [3], "
                               "got [4]");
    tt_tensor *xi = NN(tt_zeros(TT_SHAPE(2, 3), TT_I64));
    ck_assert_ptr_null(tt_layer_norm(xi, 1, (int64_t[]){3}, NULL, NULL, 1e-5));
    ck_assert_error(TT_EDTYPE, "tt::layer_norm: argument 'input' (#1): expected f32 or f64, "
                               "got i64");
    tt_release(xi);
    tt_release(w);
    tt_release(x);
}
END_TEST

/* ------------------------------------------------------------ attention */

/* softmax(q k^T * scale + causal mask) v from plain ops. */
static tt_tensor *sdpa_reference(const tt_tensor *q, const tt_tensor *k, const tt_tensor *v,
                                 bool causal)
{
    tt_scope_begin();
    int nd = tt_ndim(q);
    int64_t T = tt_sizes(q)[nd - 2], S = tt_sizes(k)[nd - 2], D = tt_sizes(q)[nd - 1];
    tt_tensor *s = tt_mul_scalar(tt_matmul(q, tt_transpose(k, -2, -1)), 1.0 / sqrt((double)D));
    if (causal) {
        /* -inf above the diagonal: j > i. */
        tt_tensor *i = tt_view(tt_arange(0, (double)T, 1, TT_I64), TT_SHAPE(T, 1));
        tt_tensor *j = tt_arange(0, (double)S, 1, TT_I64);
        tt_tensor *ninf = tt_full(TT_SHAPE(1), -INFINITY, tt_dtype_of(q));
        s = tt_where(tt_gt(j, i), ninf, s);
    }
    tt_tensor *r = tt_keep(tt_matmul(tt_softmax(s, -1), v));
    tt_scope_end();
    return NN(r);
}

START_TEST(test_sdpa_values)
{
    tt_dtype dts[2] = {TT_F32, TT_F64};
    for (int i = 0; i < 2; i++)
        for (int causal = 0; causal < 2; causal++) {
            /* q, k, v as views of one [B, T, 3, H, D] projection, as GPT-2
             * makes them. */
            tt_tensor *qkv = tt_test_randn(TT_SHAPE(2, 5, 3, 3, 4), dts[i]);
            tt_tensor *p = NN(tt_permute(qkv, 5, (int64_t[]){2, 0, 3, 1, 4}));
            tt_tensor *q = NN(tt_select(p, 0, 0)), *k = NN(tt_select(p, 0, 1)),
                      *v = NN(tt_select(p, 0, 2));
            tt_tensor *y = NN(tt_scaled_dot_product_attention(q, k, v, causal, 0));
            tt_tensor *r = sdpa_reference(q, k, v, causal);
            tt_test_assert_close(y, r, dts[i] == TT_F32 ? 1e-5 : 1e-12, "sdpa");
            /* [B, H, T, D] with [B, T, H, D] memory: merging heads is a view. */
            tt_tensor *yt = NN(tt_transpose(y, 1, 2));
            ck_assert(tt_is_contiguous(yt));
            tt_release(yt);
            tt_release(r);
            tt_release(y);
            tt_release(v);
            tt_release(k);
            tt_release(q);
            tt_release(p);
            tt_release(qkv);
        }
    /* One query row; keys and values repeating one row (stride 0, which
     * BLAS cannot read as a matrix). */
    {
        tt_tensor *q1 = tt_test_randn(TT_SHAPE(2, 1, 4), TT_F64);
        tt_tensor *k1 = tt_test_randn(TT_SHAPE(2, 1, 4), TT_F64);
        tt_tensor *ke = NN(tt_expand(k1, TT_SHAPE(2, 5, 4)));
        for (int causal = 0; causal < 2; causal++) {
            tt_tensor *y = NN(tt_scaled_dot_product_attention(q1, ke, ke, causal, 0));
            tt_tensor *r = sdpa_reference(q1, ke, ke, causal);
            tt_test_assert_close(y, r, 1e-12, "sdpa, one row, expanded keys");
            tt_release(r);
            tt_release(y);
        }
        tt_release(ke);
        tt_release(k1);
        tt_release(q1);
    }
    /* 3-d, a different key length, no causal mask: contiguous output. */
    tt_tensor *q = tt_test_randn(TT_SHAPE(2, 3, 4), TT_F64);
    tt_tensor *k = tt_test_randn(TT_SHAPE(2, 6, 4), TT_F64);
    tt_tensor *v = tt_test_randn(TT_SHAPE(2, 6, 5), TT_F64);
    tt_tensor *y = NN(tt_scaled_dot_product_attention(q, k, v, false, 0));
    tt_tensor *r = sdpa_reference(q, k, v, false);
    tt_test_assert_close(y, r, 1e-12, "sdpa 3-d");
    ck_assert(tt_is_contiguous(y));
    tt_release(r);
    tt_release(y);
    tt_release(v);
    tt_release(k);
    tt_release(q);
}
END_TEST

static tt_status f_sdpa(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    out[0] = tt_scaled_dot_product_attention(in[0], in[1], in[2], ud != NULL, 0);
    return out[0] ? TT_OK : tt_errcode();
}

START_TEST(test_sdpa_gradcheck)
{
    for (int causal = 0; causal < 2; causal++) {
        tt_tensor *q = tt_test_trainable(tt_test_randn(TT_SHAPE(1, 2, 4, 3), TT_F64));
        tt_tensor *k = tt_test_trainable(tt_test_randn(TT_SHAPE(1, 2, 4, 3), TT_F64));
        tt_tensor *v = tt_test_trainable(tt_test_randn(TT_SHAPE(1, 2, 4, 2), TT_F64));
        OK(tt_gradcheck(f_sdpa, 3, (tt_tensor *[]){q, k, v}, 1, NULL,
                        causal ? (void *)1 : NULL));
        tt_release(v);
        tt_release(k);
        tt_release(q);
    }
}
END_TEST

/* The fused backward equals the composite's gradients. */
START_TEST(test_sdpa_backward_vs_composite)
{
    tt_tensor *in[3], *g1[3], *g2[3];
    for (int i = 0; i < 3; i++)
        in[i] = tt_test_trainable(tt_test_randn(TT_SHAPE(2, 3, 7, 4), TT_F32));
    tt_tensor *w = tt_test_randn(TT_SHAPE(2, 3, 7, 4), TT_F32);
    for (int pass = 0; pass < 2; pass++) {
        tt_tensor *y = pass ? sdpa_reference(in[0], in[1], in[2], true)
                            : NN(tt_scaled_dot_product_attention(in[0], in[1], in[2], true, 0));
        tt_tensor *yw = NN(tt_mul(y, w));
        tt_tensor *l = NN(tt_sum_all(yw));
        OK(tt_backward(l, NULL));
        for (int i = 0; i < 3; i++) {
            (pass ? g2 : g1)[i] = NN(tt_get_grad(in[i]));
            OK(tt_set_grad(in[i], NULL));
        }
        tt_release(l);
        tt_release(yw);
        tt_release(y);
    }
    for (int i = 0; i < 3; i++) {
        tt_test_assert_close(g1[i], g2[i], 1e-4, "sdpa gradient");
        tt_release(g1[i]);
        tt_release(g2[i]);
        tt_release(in[i]);
    }
    tt_release(w);
}
END_TEST

/* Heads longer than one block of query rows (the kernel takes 32 at a
 * time, and a causal block only the keys up to its last row), more or
 * fewer queries than keys, on 1 thread (heads one after the other) and 2
 * (heads in parallel): forward and gradients equal the composite's. */
START_TEST(test_sdpa_row_blocks)
{
    /* blocks of 32 query rows; a block of at most 4 (36, 3, 1 and 33's
     * last) runs as loops, not through BLAS */
    static const int64_t shapes[][2] = {{70, 70}, {40, 70}, {70, 40}, {33, 33}, {64, 64},
                                        {36, 36}, {3, 9},   {1, 9},   {1, 1}};
    int threads = tt_get_num_threads();
    for (int nt = 1; nt <= 2; nt++) {
        tt_set_num_threads(nt);
        for (size_t c = 0; c < sizeof shapes / sizeof shapes[0]; c++)
            for (int causal = 0; causal < 2; causal++) {
                int64_t T = shapes[c][0], S = shapes[c][1];
                tt_tensor *in[3] = {tt_test_trainable(tt_test_randn(TT_SHAPE(2, 3, T, 8), TT_F64)),
                                    tt_test_trainable(tt_test_randn(TT_SHAPE(2, 3, S, 8), TT_F64)),
                                    tt_test_trainable(tt_test_randn(TT_SHAPE(2, 3, S, 5), TT_F64))};
                tt_tensor *w = tt_test_randn(TT_SHAPE(2, 3, T, 5), TT_F64), *ys[2], *g[2][3];
                for (int pass = 0; pass < 2; pass++) {
                    ys[pass] = pass ? sdpa_reference(in[0], in[1], in[2], causal)
                                    : NN(tt_scaled_dot_product_attention(in[0], in[1], in[2],
                                                                         causal, 0));
                    tt_tensor *yw = NN(tt_mul(ys[pass], w));
                    tt_tensor *l = NN(tt_sum_all(yw));
                    OK(tt_backward(l, NULL));
                    for (int i = 0; i < 3; i++) {
                        g[pass][i] = NN(tt_get_grad(in[i]));
                        OK(tt_set_grad(in[i], NULL));
                    }
                    tt_release(l);
                    tt_release(yw);
                }
                tt_test_assert_close(ys[0], ys[1], 1e-12, "sdpa in row blocks");
                for (int i = 0; i < 3; i++) {
                    tt_test_assert_close(g[0][i], g[1][i], 1e-10, "sdpa gradient in row blocks");
                    tt_release(g[0][i]);
                    tt_release(g[1][i]);
                    tt_release(in[i]);
                }
                tt_release(ys[0]);
                tt_release(ys[1]);
                tt_release(w);
            }
    }
    tt_set_num_threads(threads);
}
END_TEST

START_TEST(test_sdpa_errors)
{
    tt_tensor *q = NN(tt_zeros(TT_SHAPE(2, 3, 4), TT_F32));
    tt_tensor *k = NN(tt_zeros(TT_SHAPE(2, 3, 5), TT_F32));
    ck_assert_ptr_null(tt_scaled_dot_product_attention(q, k, q, true, 0));
    ck_assert_error(TT_ESHAPE, "tt::scaled_dot_product_attention: argument 'key' (#2): last "
                               "size of [2, 3, 5] does not match query [2, 3, 4]");
    tt_tensor *qd = NN(tt_zeros(TT_SHAPE(2, 3, 4), TT_F64));
    ck_assert_ptr_null(tt_scaled_dot_product_attention(q, qd, q, true, 0));
    ck_assert_error(TT_EDTYPE, "tt::scaled_dot_product_attention: argument 'key' (#2): "
                               "expected f32 like 'self', got f64");
    ck_assert_ptr_null(tt_call(tt_op_find("tt::scaled_dot_product_attention"), tt_v_tensor(q),
                               tt_v_tensor(q), tt_v_tensor(q), tt_v_tensor(q)));
    /* a mask is taken (issue 27); this one is of the wrong shape */
    ck_assert_error(TT_ESHAPE, "tt::scaled_dot_product_attention: argument 'attn_mask' (#4): "
                               "[2, 3, 4] does not broadcast to the scores' shape [2, 3, 3]");
    tt_release(qd);
    tt_release(k);
    tt_release(q);
}
END_TEST

/* ------------------------------------------------------------------ fake */

/* Every forward op's fake kernel gives the real output's metadata. */
START_TEST(test_fake_meta)
{
    tt_tensor *qkv = tt_test_randn(TT_SHAPE(2, 5, 3, 2, 4), TT_F32);
    tt_tensor *p = NN(tt_permute(qkv, 5, (int64_t[]){2, 0, 3, 1, 4}));
    tt_tensor *q = NN(tt_select(p, 0, 0));
    tt_tensor *w = tt_test_randn(TT_SHAPE(7, 4), TT_F32);
    tt_tensor *idx = NN(tt_from_data(TT_SHAPE(2, 2), TT_I64, (int64_t[]){1, 2, 3, 4}));
    tt_tensor *real[3], *fake[3], *fq = NN(tt_fake_like(q)), *fw = NN(tt_fake_like(w));
    tt_tensor *fi = NN(tt_fake_like(idx));
    real[0] = tt_scaled_dot_product_attention(q, q, q, true, 0);
    fake[0] = tt_scaled_dot_product_attention(fq, fq, fq, true, 0);
    real[1] = tt_layer_norm(q, 1, (int64_t[]){4}, NULL, NULL, 1e-5);
    fake[1] = tt_layer_norm(fq, 1, (int64_t[]){4}, NULL, NULL, 1e-5);
    real[2] = tt_embedding(w, idx);
    fake[2] = tt_embedding(fw, fi);
    const char *names[3] = {"sdpa", "layer_norm", "embedding"};
    for (int i = 0; i < 3; i++) {
        tt_test_assert_fake_meta(fake[i], real[i], names[i]);
        tt_release(fake[i]);
        tt_release(real[i]);
    }
    tt_release(fi);
    tt_release(fw);
    tt_release(fq);
    tt_release(idx);
    tt_release(w);
    tt_release(q);
    tt_release(p);
    tt_release(qkv);
}
END_TEST

/* ----------------------------------------------------------------- AdamW */

START_TEST(test_adamw_matches_formula)
{
    const tt_adamw_opts o = {.lr = 0.01, .beta1 = 0.9, .beta2 = 0.99, .eps = 1e-8,
                             .weight_decay = 0.1};
    double p0[3] = {1, -2, 0.5}, g[2][3] = {{0.1, -0.3, 2}, {-0.2, 0.4, 1}};
    tt_tensor *p = NN(tt_from_data(TT_SHAPE(3), TT_F64, p0));
    tt_tensor *m = NN(tt_zeros(TT_SHAPE(3), TT_F64)), *v = NN(tt_zeros(TT_SHAPE(3), TT_F64));
    double rp[3], rm[3] = {0}, rv[3] = {0};
    memcpy(rp, p0, sizeof rp);
    for (int s = 1; s <= 2; s++) {
        tt_tensor *gt = NN(tt_from_data(TT_SHAPE(3), TT_F64, g[s - 1]));
        tt_tensor *step = NN(tt_scalar(s, TT_I64));
        OK(tt_adamw_(p, gt, m, v, step, &o));
        for (int i = 0; i < 3; i++) { /* torch.optim.AdamW's update */
            rp[i] *= 1 - o.lr * o.weight_decay;
            rm[i] = o.beta1 * rm[i] + (1 - o.beta1) * g[s - 1][i];
            rv[i] = o.beta2 * rv[i] + (1 - o.beta2) * g[s - 1][i] * g[s - 1][i];
            double mh = rm[i] / (1 - pow(o.beta1, s)), vh = rv[i] / (1 - pow(o.beta2, s));
            rp[i] -= o.lr * mh / (sqrt(vh) + o.eps);
        }
        tt_release(step);
        tt_release(gt);
    }
    ck_assert_int_eq(tt_version(p), 2);
    double *pv = tt_test_values(p);
    for (int i = 0; i < 3; i++)
        ck_assert_double_eq_tol(pv[i], rp[i], 1e-12);
    free(pv);
    tt_release(v);
    tt_release(m);
    tt_release(p);
}
END_TEST

START_TEST(test_adamw_errors)
{
    const tt_adamw_opts o = {.lr = 0.01, .beta1 = 0.9, .beta2 = 0.99, .eps = 1e-8};
    tt_tensor *p = NN(tt_zeros(TT_SHAPE(3), TT_F32)), *g = NN(tt_zeros(TT_SHAPE(2), TT_F32));
    tt_tensor *step = NN(tt_scalar(0, TT_F32));
    ck_assert_int_eq(tt_adamw_(p, g, p, p, step, &o), TT_ESHAPE);
    ck_assert_error(TT_ESHAPE, "tt::adamw_step: argument 'grad' (#2): expected shape [3], got [2]");
    ck_assert_int_eq(tt_adamw_(p, p, p, p, step, &o), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt::adamw_step: argument 'step' (#5): expected a step number >= 1, "
                               "got 0");
    ck_assert_int_eq(tt_adamw_(p, p, p, p, step, NULL), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_adamw_: argument 'opts' is NULL");
    tt_release(step);
    tt_release(g);
    tt_release(p);
}
END_TEST

START_TEST(test_global_norm)
{
    tt_tensor *a = NN(tt_full(TT_SHAPE(100000), 0.5, TT_F32));
    tt_tensor *b = NN(tt_full(TT_SHAPE(2, 2), 2, TT_F32));
    tt_tensor *n = NN(tt_global_norm(2, (tt_tensor *[]){a, b}));
    double v;
    OK(tt_item(n, &v));
    ck_assert_double_eq_tol(v, sqrt(100000 * 0.25 + 16), 1e-3);
    ck_assert_int_eq(tt_ndim(n), 0);
    tt_release(n);
    ck_assert_ptr_null(tt_global_norm(0, NULL));
    ck_assert_error(TT_EINVAL, "tt::global_norm: argument 'tensors' (#1): expected at least "
                               "one tensor");
    tt_release(b);
    tt_release(a);
}
END_TEST

static Suite *transformer_suite(void)
{
    Suite *s = suite_create("ops_transformer");
    TCase *tc = tt_tcase("embedding");
    tcase_add_test(tc, test_embedding_values);
    tcase_add_test(tc, test_embedding_backward_accumulates);
    tcase_add_test(tc, test_embedding_gradcheck);
    tcase_add_test(tc, test_embedding_errors);
    suite_add_tcase(s, tc);
    tc = tt_tcase("layer_norm");
    tcase_add_test(tc, test_layer_norm_values);
    tcase_add_test(tc, test_layer_norm_gradcheck);
    tcase_add_test(tc, test_layer_norm_errors);
    suite_add_tcase(s, tc);
    tc = tt_tcase("attention");
    tcase_add_test(tc, test_sdpa_values);
    tcase_add_test(tc, test_sdpa_gradcheck);
    tcase_add_test(tc, test_sdpa_backward_vs_composite);
    tcase_add_test(tc, test_sdpa_row_blocks);
    tcase_add_test(tc, test_sdpa_errors);
    tcase_add_test(tc, test_fake_meta);
    suite_add_tcase(s, tc);
    tc = tt_tcase("optimizer");
    tcase_add_test(tc, test_adamw_matches_formula);
    tcase_add_test(tc, test_adamw_errors);
    tcase_add_test(tc, test_global_norm);
    suite_add_tcase(s, tc);
    return s;
}

TT_TEST_MAIN(transformer_suite)
