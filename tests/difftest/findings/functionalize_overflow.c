/* tt-difftest seed 88: crash in functionalize fake (pass: -): killed by signal 6 (Aborted) */
#include <tensortrace.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define UNUSED __attribute__((unused))
/* Fails the program (the op's error is in tt_errmsg()). */
#define CHECK(x) must(x, #x)
#define CHECK_OK(x) do { if ((x) != TT_OK) { fail_at(#x); goto fail; } } while (0)
UNUSED static int failed;
UNUSED static void fail_at(const char *what) { if (!failed) fprintf(stderr, "error: %s: %s\n", what, tt_errmsg()); failed = 1; }
UNUSED static tt_tensor *must(tt_tensor *t, const char *what) { if (!t) fail_at(what); return t; }
UNUSED static tt_status call_inplace(tt_tensor *r) { if (!r) return tt_errcode(); tt_release(r); return TT_OK; }
UNUSED static int64_t sizes_buf[8];
UNUSED static const int64_t *sizes_of(const tt_tensor *t) { for (int k = 0; k < tt_ndim(t); k++) sizes_buf[k] = tt_dim_size(t, k); return sizes_buf; }
UNUSED static tt_tensor *explicit_break(void) { tt_graph_break("difftest: explicit break"); tt_clear_error(); return tt_scalar(1.0, TT_F32); }
UNUSED static tt_tensor *item_scale(tt_tensor *a, tt_tensor *b) { double v = 0; tt_item(tt_sum_all(b), &v); tt_clear_error(); return tt_mul_scalar(a, v > 0 ? 1.0 : 2.0); }

static tt_status fn(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin; (void)nout; (void)ud;
    failed = 0;
    tt_scope_begin();
    tt_tensor *v0 = in[0];
    (void)v0;
    tt_tensor *v1 = in[1];
    (void)v1;
    tt_tensor *v2 = in[2];
    (void)v2;
    tt_tensor *v3 = in[3];
    (void)v3;
    tt_tensor *v4 = CHECK(tt_amin(v2, 1, (const int64_t[]){-1}, true));
    (void)v4;
    tt_tensor *v5 = CHECK(tt_clamp_tensor(v4, v4, v3));
    (void)v5;
    tt_tensor *v6 = CHECK(tt_add_scalar(v5, -1));
    (void)v6;
    tt_tensor *v7 = CHECK(tt_clamp_tensor(v5, v2, NULL));
    (void)v7;
    tt_tensor *v8 = CHECK(tt_stack(2, (tt_tensor *[]){v7, v7}, 1));
    (void)v8;
    tt_tensor *v9 = CHECK(tt_add_scalar(v8, -1));
    (void)v9;
    tt_tensor *v10 = CHECK(tt_scaled_dot_product_attention(v8, v8, v8, false, 0));
    (void)v10;
    tt_tensor *v11 = CHECK(tt_amin(v9, 1, (const int64_t[]){1}, true));
    (void)v11;
    tt_tensor *v12 = CHECK(tt_transpose(v10, -1, 0));
    (void)v12;
    tt_tensor *v13 = CHECK(tt_sum_all(v6));
    (void)v13;
    tt_tensor *v14 = CHECK(tt_squeeze_dims(v10, 1, (const int64_t[]){-2}));
    (void)v14;
    tt_tensor *v15 = CHECK(tt_squeeze(v13, 0));
    (void)v15;
    tt_tensor *v16 = CHECK(tt_unsqueeze(v9, -3));
    (void)v16;
    tt_tensor *v17 = CHECK(tt_detach(v13));
    (void)v17;
    tt_tensor *v18 = CHECK(tt_sum(v7, 1, (const int64_t[]){-1}, false));
    (void)v18;
    tt_tensor *v19 = CHECK(tt_amin(v0, 2, (const int64_t[]){1, 0}, true));
    (void)v19;
    tt_tensor *v20 = CHECK(tt_t(v18));
    (void)v20;
    tt_tensor *v21 = CHECK(tt_detach(v13));
    (void)v21;
    tt_tensor *v22 = CHECK(tt_flatten(v20, 0, 0));
    (void)v22;
    tt_tensor *v23 = CHECK(tt_expand(v21, 0, (const int64_t[]){0}));
    (void)v23;
    tt_tensor *v24 = CHECK(tt_transpose(v22, 0, 0));
    (void)v24;
    tt_tensor *v25 = CHECK(tt_div(v23, v17));
    (void)v25;
    tt_tensor *v26 = CHECK(tt_squeeze(v6, -1));
    (void)v26;
    tt_tensor *v27 = CHECK(tt_transpose(v25, 0, 0));
    (void)v27;
    tt_tensor *v28 = CHECK(tt_add(v26, v25));
    (void)v28;
    tt_tensor *v29 = CHECK(tt_add(v25, v15));
    (void)v29;
    tt_tensor *v30 = CHECK(tt_add_scaled(v13, v7, 1.5));
    (void)v30;
    tt_tensor *v31 = CHECK(tt_squeeze(v28, -1));
    (void)v31;
    tt_tensor *v32 = CHECK(tt_flatten(v28, -1, 0));
    (void)v32;
    tt_tensor *v33 = CHECK(tt_mean_all(v29));
    (void)v33;
    tt_tensor *v34 = CHECK(tt_detach(v32));
    (void)v34;
    tt_tensor *v35 = CHECK(tt_arange(0, 1, 1, TT_F32));
    (void)v35;
    tt_tensor *v36 = CHECK(tt_add_scaled(v9, v13, 0.5));
    (void)v36;
    out[0] = tt_retain(v36);
    tt_tensor *loss = NULL;
    if (tt_dtype_is_float(tt_dtype_of(out[0])) && tt_requires_grad(out[0])) { tt_tensor *s = tt_sum_all(out[0]); loss = loss ? tt_add(loss, s) : s; }
    tt_tensor *X[] = {v0, v3}, *G[2] = {0};
    CHECK_OK(tt_backward(loss, NULL));
    for (int i = 0; i < 2; i++) { G[i] = tt_get_grad(X[i]); if (G[i]) tt_scope_adopt(G[i]); else G[i] = tt_zeros(tt_ndim(X[i]), tt_sizes(X[i]), tt_dtype_of(X[i])); }
    for (int i = 0; i < 2; i++) out[1 + i] = tt_retain(G[i]);
    tt_no_grad_begin();
    tt_add_scaled_(v0, G[0], -0.5);
    tt_add_scaled_(v3, G[1], -0.5);
    tt_no_grad_end();
    if (failed) goto fail;
    tt_scope_end();
    return TT_OK;
fail:
    tt_scope_end();
    for (int j = 0; j < 3; j++) out[j] = tt_release(out[j]);
    return tt_errcode();
}

/* An input: values (doubles) stored as `base` sizes in dtype dt, then viewed
 * with layout lay (0 contiguous, 1 transposed, 2 strided, 3 offset, 4 expanded). */
static tt_tensor *mk(int nd, const int64_t *base, const int64_t *s, tt_dtype dt, int lay, const double *v, int rg)
{
    tt_tensor *d = tt_from_data(nd, base, TT_F64, v), *b = tt_to_dtype(d, dt), *t;
    tt_release(d);
    switch (lay) {
    case 1: t = tt_transpose(b, -1, -2); break;
    case 2: t = tt_slice(b, -1, 0, base[nd - 1], 2); break;
    case 3: t = tt_narrow(b, 0, 1, s[0]); break;
    case 4: t = tt_expand(b, nd, s); break;
    default: t = tt_retain(b); break;
    }
    tt_release(b);
    if (rg) tt_set_requires_grad(t, true);
    return t;
}

/* Largest difference of two tensors (NaN equals NaN); INFINITY when their
 * dtypes or shapes differ. */
static double maxdiff(const tt_tensor *a, const tt_tensor *b)
{
    if (!a || !b || tt_dtype_of(a) != tt_dtype_of(b) || tt_ndim(a) != tt_ndim(b)) return INFINITY;
    for (int k = 0; k < tt_ndim(a); k++) if (tt_dim_size(a, k) != tt_dim_size(b, k)) return INFINITY;
    tt_tensor *x = tt_to_dtype(a, TT_F64), *y = tt_to_dtype(b, TT_F64);
    int64_t n = tt_numel(a);
    double *p = malloc(sizeof(double) * (size_t)(n + 1)), *q = malloc(sizeof(double) * (size_t)(n + 1)), m = 0;
    tt_to_buffer(x, p, sizeof(double) * (size_t)n);
    tt_to_buffer(y, q, sizeof(double) * (size_t)n);
    for (int64_t i = 0; i < n; i++) {
        if (isnan(p[i]) && isnan(q[i])) continue;
        if (p[i] == q[i]) continue;
        double d = fabs(p[i] - q[i]);
        if (isnan(d)) d = INFINITY;
        if (d > m) m = d;
    }
    free(p); free(q); tt_release(x); tt_release(y);
    return m;
}

static void inputs(tt_tensor **in)
{
    static const double d0[] = {1.125, -1.5, -1.5, 1.75, 1.375, 1.125};
    in[0] = mk(3, (const int64_t[]){6, 1, 1}, (const int64_t[]){6, 1, 1}, TT_F32, 0, d0, 1);
    static const double d1[] = {1};
    in[1] = mk(1, (const int64_t[]){1}, (const int64_t[]){1}, TT_I64, 0, d1, 0);
    static const double d2[] = {1};
    in[2] = mk(1, (const int64_t[]){1}, (const int64_t[]){1}, TT_I64, 0, d2, 0);
    static const double d3[] = {-0.75};
    in[3] = mk(1, (const int64_t[]){1}, (const int64_t[]){1}, TT_F32, 0, d3, 1);
}

int main(void)
{
    tt_tensor *ein[4], *cin[4], *eout[3] = {0}, *cout[3] = {0};
    int bad = 0;
    inputs(ein);
    inputs(cin);
    if (fn(ein, 4, eout, 3, NULL) != TT_OK) { printf("eager failed: %s\n", tt_errmsg()); return 2; }
    tt_trace_opts o = {.mode = TT_TRACE_FAKE, .fullgraph = true, .nout = 3, .passes_off = 0x0};
    tt_graph *g = tt_trace(fn, 4, cin, &o);
    for (int i = 0; i < 4; i++) { tt_release(cin[i]); } inputs(cin);
    if (g && tt_graph_functionalize(g) != TT_OK) { printf("functionalize failed: %s\n", tt_errmsg()); return 1; }
    tt_status st = g ? tt_graph_run(g, 4, cin, 3, cout) : tt_errcode();
    if (st != TT_OK) { printf("compiled/traced run failed: %s: %s\n", tt_status_name(st), tt_errmsg()); return 1; }
    for (int j = 0; j < 3; j++) {
        double d = maxdiff(eout[j], cout[j]);
        if (d > 1e-3) { printf("output %d differs by %g\neager:\n", j, d); tt_print(eout[j]); printf("compiled:\n"); tt_print(cout[j]); bad = 1; }
    }
    for (int i = 0; i < 4; i++) {
        double d = maxdiff(ein[i], cin[i]);
        if (d > 1e-3) { printf("input %d's final value differs by %g\neager:\n", i, d); tt_print(ein[i]); printf("compiled:\n"); tt_print(cin[i]); bad = 1; }
    }
    for (int j = 0; j < 3; j++) { tt_release(eout[j]); tt_release(cout[j]); }
    for (int i = 0; i < 4; i++) { tt_release(ein[i]); tt_release(cin[i]); }
    tt_graph_free(g);
    if (tt_live_tensors() != 0) { printf("LEAK: %lld tensors alive at the end\n", (long long)tt_live_tensors()); bad = 1; }
    printf(bad ? "MISMATCH\n" : "ok\n");
    return bad;
}
