/* Released tensors are caught: a use after release and a double release
 * fail with an error naming the call (runtime/tensor_impl.h, the
 * quarantine in runtime/alloc.c); functions that could return their
 * argument leak nothing in a scope; every error of a user's call names
 * the call site; reading an error changes no later report. */
#include "tt_test.h"

#include <stdlib.h>
#include <string.h>

#if !defined(__SANITIZE_ADDRESS__)
/* A released tensor: made, filled, released. The pointer is kept only to
 * hand it back to the library, as a buggy program would. */
static tt_tensor *released(void)
{
    tt_tensor *t = NN(tt_full(TT_SHAPE(2, 3), 1.0, TT_F32));
    ck_assert_ptr_null(tt_release(t));
    ck_assert_int_eq(tt_errcode(), TT_OK);
    return t;
}

#define USE_AFTER "was already released (tt_release or tt_scope_end dropped its last " \
                  "reference): a use after release"

/* ================================================ double release */

START_TEST(test_double_release)
{
    tt_tensor *t = released();
    ck_assert_int_eq(tt_live_tensors(), 0);
    ck_assert_ptr_null(tt_release(t));
    ck_assert_error(TT_EINVAL, "tt_release: argument 't' was already released: a double "
                               "release (it was not freed again;");
    ck_assert_int_eq(tt_live_tensors(), 0);
    /* Still refused the third time, and by the next call given it. */
    tt_clear_error();
    tt_release(t);
    ck_assert_error(TT_EINVAL, "tt_release: argument 't' was already released");
    tt_clear_error();
    ck_assert_ptr_null(tt_sin(t));
    ck_assert_error(TT_EINVAL, "tt::sin: argument 'self' (#1) " USE_AFTER);
}
END_TEST

/* The program: the second release of t used to free u, whose
 * struct had taken t's place, so u then held another tensor's values. */
START_TEST(test_struct_reuse)
{
    tt_tensor *t = NN(tt_ones(TT_SHAPE(4), TT_F32));
    tt_release(t);
    tt_tensor *u = NN(tt_full(TT_SHAPE(4), 3.0, TT_F32));
    ck_assert_ptr_ne(u, t); /* t's struct waits in the quarantine */
    tt_release(t);
    ck_assert_error(TT_EINVAL, "tt_release: argument 't' was already released: a double "
                               "release");
    ck_assert_int_eq(tt_live_tensors(), 1);
    tt_tensor *v = NN(tt_full(TT_SHAPE(4), 5.0, TT_F32)); /* may not take u's place */
    ck_assert_ptr_ne(v, u);
    const float *d = tt_data(u);
    ck_assert_ptr_nonnull(d);
    for (int i = 0; i < 4; i++)
        ck_assert_float_eq(d[i], 3.0f);
    tt_release(v);
    tt_release(u);
}
END_TEST

/* ================================================ use after release */

START_TEST(test_use_in_ops)
{
    tt_tensor *x = NN(tt_ones(TT_SHAPE(2, 3), TT_F32));
    tt_tensor *t = released();
    /* The typed wrappers' fast path, unary and binary. */
    ck_assert_ptr_null(tt_sin(t));
    ck_assert_error(TT_EINVAL, "tt::sin: argument 'self' (#1) " USE_AFTER);
    ck_assert_ptr_null(tt_add(x, t));
    ck_assert_error(TT_EINVAL, "tt::add.Tensor: argument 'other' (#2) " USE_AFTER);
    ck_assert_int_ne(tt_add_(t, x), TT_OK);
    ck_assert_error(TT_EINVAL, "argument 'self' (#1) " USE_AFTER);
    ck_assert_ptr_null(tt_matmul(t, x));
    ck_assert_error(TT_EINVAL, USE_AFTER);
    ck_assert_ptr_null(tt_sum_all(t));
    ck_assert_error(TT_EINVAL, USE_AFTER);
    /* Through the dispatcher: an op call, a tensor list, and with autograd
     * in play (x requires grad, so the call is boxed). */
    ck_assert_ptr_null(tt_call(tt_op_find("tt::exp"), tt_v_tensor(t)));
    ck_assert_error(TT_EINVAL, "tt::exp: argument 'self' (#1) " USE_AFTER);
    /* The unchecked call of compiled plans skips binding, not this. */
    tt_value out = {0};
    ck_assert_int_eq(tt_op_call_unchecked(tt_op_find("tt::exp"), (tt_value[]){tt_v_tensor(t)}, 1,
                                          &out, 1), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt::exp: argument 'self' (#1) " USE_AFTER);
    ck_assert_ptr_null(out.u.t);
    tt_tensor *list[2] = {x, t};
    ck_assert_ptr_null(tt_cat(2, list, 0));
    ck_assert_error(TT_EINVAL, "tt::cat: argument 'tensors' (#1) element 1 " USE_AFTER);
    OK(tt_set_requires_grad(x, true));
    ck_assert_ptr_null(tt_mul(x, t));
    ck_assert_error(TT_EINVAL, "tt::mul.Tensor: argument 'other' (#2) " USE_AFTER);
    /* Views and copies of the runtime. */
    ck_assert_ptr_null(tt_view(t, TT_SHAPE(6)));
    ck_assert_error(TT_EINVAL, USE_AFTER);
    ck_assert_ptr_null(tt_transpose(t, 0, 1));
    ck_assert_error(TT_EINVAL, USE_AFTER);
    ck_assert_ptr_null(tt_contiguous(t));
    ck_assert_error(TT_EINVAL, "tt_contiguous: argument 'self' " USE_AFTER);
    ck_assert_ptr_null(tt_clone(t));
    ck_assert_error(TT_EINVAL, USE_AFTER);
    ck_assert_int_eq(tt_copy_(x, t), TT_EINVAL);
    ck_assert_error(TT_EINVAL, USE_AFTER);
    ck_assert_ptr_null(tt_empty_like(t));
    ck_assert_error(TT_EINVAL, USE_AFTER);
    tt_release(x);
}
END_TEST

START_TEST(test_use_in_data_access)
{
    tt_tensor *t = released();
    ck_assert_ptr_null(tt_data(t));
    ck_assert_error(TT_EINVAL, "tt_data: argument 'self' " USE_AFTER);
    double v = -1;
    ck_assert_int_eq(tt_item(t, &v), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_item: argument 'self' " USE_AFTER);
    ck_assert_int_eq(tt_get(t, &v, 0, 0), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_get: argument 'self' " USE_AFTER);
    ck_assert_int_eq(tt_set(t, 2.0, 0, 0), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_set: argument 'self' " USE_AFTER);
    float buf[6];
    ck_assert_int_eq(tt_to_buffer(t, buf, sizeof buf), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_to_buffer: argument 'self' " USE_AFTER);
    ck_assert_double_eq(v, -1);
}
END_TEST

/* Accessors that cannot return an error answer as for NULL and set it. */
START_TEST(test_use_in_accessors)
{
    tt_tensor *t = released();
    ck_assert_int_eq(tt_ndim(t), 0);
    ck_assert_error(TT_EINVAL, "tt_ndim: argument 't' " USE_AFTER);
    tt_clear_error();
    ck_assert_ptr_null(tt_sizes(t));
    ck_assert_error(TT_EINVAL, "tt_sizes: argument 't' " USE_AFTER);
    ck_assert_ptr_null(tt_strides(t));
    ck_assert_int_eq(tt_numel(t), 0);
    ck_assert_error(TT_EINVAL, "tt_numel: argument 't' " USE_AFTER);
    ck_assert(!tt_is_fake(t));
    ck_assert(!tt_is_contiguous(t));
    ck_assert_uint_eq(tt_storage_nbytes(t), 0);
    ck_assert_uint_eq(tt_version(t), 0);
    ck_assert_int_eq(tt_dim_size(t, 0), -1);
    ck_assert_error(TT_EINVAL, "tt_dim_size: argument 'self' " USE_AFTER);
    ck_assert_int_eq(tt_dim_stride(t, 0), -1);
    ck_assert_error(TT_EINVAL, "tt_dim_stride: argument 'self' " USE_AFTER);
    char d[64];
    ck_assert_str_eq(tt_describe(t, d, sizeof d), "a released tensor");
    /* A reference to it is no reference. */
    ck_assert_ptr_null(tt_retain(t));
    ck_assert_error(TT_EINVAL, "tt_retain: argument 't' " USE_AFTER);
    ck_assert_ptr_null(tt_keep(t));
    ck_assert_error(TT_EINVAL, "tt_keep: argument 't' " USE_AFTER);
    ck_assert_int_eq(tt_live_tensors(), 0);
}
END_TEST

/* A scoped tensor's reference is the scope's: released by tt_scope_end,
 * a later use is caught the same way. */
START_TEST(test_use_after_scope_end)
{
    tt_scope_begin();
    tt_tensor *t = NN(tt_ones(TT_SHAPE(3), TT_F32));
    OK(tt_scope_end());
    ck_assert_int_eq(tt_live_tensors(), 0);
    ck_assert_ptr_null(tt_neg(t));
    ck_assert_error(TT_EINVAL, "tt::neg: argument 'self' (#1) " USE_AFTER);
    tt_release(t);
    ck_assert_error(TT_EINVAL, "a double release");
}
END_TEST
#endif

/* ============================================ results that may be the argument */

/* Each of these may hand back t's data unchanged: in a scope none may
 * leave a reference behind, outside one the caller owns one new tensor. */
static int same_results(tt_tensor *x, tt_tensor **out)
{
    int n = 0;
    out[n++] = tt_contiguous(x);
    out[n++] = tt_to_dtype(x, TT_F32);
    out[n++] = tt_reshape(x, TT_SHAPE(2, 3));
    out[n++] = tt_view(x, TT_SHAPE(2, 3));
    out[n++] = tt_expand(x, TT_SHAPE(2, 3));
    out[n++] = tt_squeeze(x, 0);
    out[n++] = tt_flatten(x, 0, 0);
    out[n++] = tt_permute(x, TT_SHAPE(0, 1));
    out[n++] = tt_narrow(x, 0, 0, 2);
    out[n++] = tt_detach(x);
    out[n++] = tt_clone(x);
    for (int i = 0; i < n; i++) {
        ck_assert_msg(out[i] != NULL, "result %d: %s", i, tt_errmsg());
        ck_assert_msg(out[i] != x, "result %d is the argument itself", i);
    }
    return n;
}

START_TEST(test_same_results_in_scope)
{
    for (int grad = 0; grad < 2; grad++) {
        tt_scope_begin();
        tt_tensor *x = NN(tt_ones(TT_SHAPE(2, 3), TT_F32));
        if (grad) /* the results then come from the ops, through autograd */
            OK(tt_set_requires_grad(x, true));
        tt_tensor *r[16];
        same_results(x, r);
        OK(tt_scope_end());
        ck_assert_msg(tt_live_tensors() == 0, "grad %d: %lld tensors left", grad,
                      (long long)tt_live_tensors());
        ck_assert_int_eq(tt_live_storages(), 0);
    }
}
END_TEST

START_TEST(test_same_results_outside_scope)
{
    tt_tensor *x = NN(tt_ones(TT_SHAPE(2, 3), TT_F32));
    tt_tensor *r[16];
    int n = same_results(x, r);
    ck_assert_int_eq(tt_live_tensors(), 1 + n);
    for (int i = 0; i < n; i++)
        tt_release(r[i]);
    ck_assert_int_eq(tt_errcode(), TT_OK); /* each was one reference, released once */
    ck_assert_int_eq(tt_live_tensors(), 1);
    tt_release(x);
}
END_TEST

/* A newcomer's step: a temporary released by hand inside a scope (the
 * scope would have released it too), and two results of a three-result
 * op released at once. Traced, the graph holds every value it recorded;
 * those holds must not turn the user's release into a second release at
 * tt_scope_end (it did: the graph then read freed values). */
static tt_status release_in_scope(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_scope_begin();
    tt_tensor *y = tt_relu(in[0]);
    tt_tensor *z = tt_exp(y);
    tt_release(y);
    tt_value r[3] = {tt_v_none(), tt_v_none(), tt_v_none()};
    int64_t shape[1] = {4};
    tt_status st = tt_op_call(tt_op_find("tt::layer_norm_backward"),
                              (tt_value[]){tt_v_tensor(z), tt_v_tensor(in[0]), tt_v_ints(1, shape),
                                           tt_v_none(), tt_v_none(), tt_v_float(1e-5)},
                              6, r, 3);
    tt_value_clear(&r[1]);
    tt_value_clear(&r[2]);
    out[0] = st ? NULL : tt_keep(tt_add(tt_add(z, in[0]), r[0].u.t));
    tt_scope_end();
    return out[0] ? TT_OK : tt_errcode();
}

START_TEST(test_release_in_scope_traced)
{
    tt_tensor *x = NN(tt_from_data(TT_SHAPE(2, 4), TT_F32,
                                   (float[]){-1, 2, 0.5f, -3, 1, 1.5f, -0.25f, 4}));
    tt_tensor *eager = NULL, *compiled = NULL;
    OK(release_in_scope(&x, 1, &eager, 1, NULL));
    ck_assert_int_eq(tt_live_tensors(), 2);
    const tt_trace_mode modes[] = {TT_TRACE_FAKE, TT_TRACE_SYMBOLIC};
    for (int mode = 0; mode < 2; mode++) {
        tt_compiled *c = tt_compile(release_in_scope, 1, 1,
                                    &(tt_trace_opts){.mode = modes[mode], .fullgraph = true});
        ck_assert_msg(c != NULL, "%s", tt_errmsg());
        for (int call = 0; call < 2; call++) {
            OK(tt_compiled_call(c, &x, &compiled));
            tt_test_assert_close(compiled, eager, 1e-5, "compiled vs eager");
            compiled = tt_release(compiled);
        }
        /* The graph still reads its values after the function's scope. */
        char *text = tt_graph_to_text(tt_compiled_graph(c, 0));
        ck_assert_ptr_nonnull(text);
        ck_assert_ptr_nonnull(strstr(text, "relu"));
        free(text);
        tt_compiled_free(c);
        ck_assert_int_eq(tt_live_tensors(), 2);
    }
    tt_release(eager);
    tt_release(x);
}
END_TEST

/* ================================================ call sites in errors */

/* A user's helper, called from two places. Wrapped with TT_CALLSITE_T as
 * the library's own functions are, its callers join the chain of frames
 * the errors report. */
static int line_in_helper;
static tt_tensor *project(tt_tensor *x, tt_tensor *w)
{
    line_in_helper = __LINE__ + 1;
    return tt_matmul(x, w);
}
#define project(...) TT_CALLSITE_T(project, __VA_ARGS__)

START_TEST(test_error_names_call_site)
{
    tt_tensor *x = NN(tt_ones(TT_SHAPE(2, 3), TT_F32));
    tt_tensor *w_good = NN(tt_ones(TT_SHAPE(3, 4), TT_F32));
    tt_tensor *w_bad = NN(tt_ones(TT_SHAPE(5, 4), TT_F32));
    tt_tensor *a = project(x, w_good);
    ck_assert_ptr_nonnull(a);
    int line_b = __LINE__ + 1;
    tt_tensor *b = project(x, w_bad);
    ck_assert_ptr_null(b);
    char want[512];
    snprintf(want, sizeof want, ", called from %s:%d in project, called from %s:%d in %s",
             __FILE__, line_in_helper, __FILE__, line_b, "test_error_names_call_site_fn");
    ck_assert_error(TT_ESHAPE, "shapes cannot be multiplied (2x3 and 5x4)");
    /* The message ends with the chain. */
    const char *m = tt_errmsg();
    ck_assert_msg(strlen(m) > strlen(want) && strcmp(m + strlen(m) - strlen(want), want) == 0,
                  "\"%s\" does not end with \"%s\"", m, want);
    tt_clear_error();

    /* A status-returning call, and a runtime function. */
    int line_c = __LINE__ + 1;
    ck_assert_int_eq(tt_copy_(x, w_bad), TT_ESHAPE);
    snprintf(want, sizeof want, ", called from %s:%d in test_error_names_call_site_fn",
             __FILE__, line_c);
    m = tt_errmsg();
    ck_assert_msg(strstr(m, "tt_copy_: ") == m && strcmp(m + strlen(m) - strlen(want), want) == 0,
                  "%s", m);
    tt_clear_error();
    int line_d = __LINE__ + 1;
    ck_assert_ptr_null(tt_view(x, TT_SHAPE(7)));
    snprintf(want, sizeof want, ", called from %s:%d in test_error_names_call_site_fn",
             __FILE__, line_d);
    ck_assert_error(TT_ESHAPE, want);

    /* Nested calls on one line name it once, after the first cause. */
    tt_clear_error();
    int line_e = __LINE__ + 1;
    ck_assert_ptr_null(tt_relu(tt_add(x, w_bad)));
    snprintf(want, sizeof want, ", called from %s:%d in test_error_names_call_site_fn (then "
             "tt::relu: argument 'self' (#1) expects Tensor, got NULL)", __FILE__, line_e);
    m = tt_errmsg();
    ck_assert_msg(strstr(m, "tt::add: ") == m && strcmp(m + strlen(m) - strlen(want), want) == 0,
                  "%s", m);
    tt_release(a);
    tt_release(w_bad);
    tt_release(w_good);
    tt_release(x);
}
END_TEST

/* ================================================ pure error getters */

/* tt_linear fails; the program then passes its NULL on in a separate
 * statement, having read the error or not. */
static void linear_then_softmax(bool read, tt_status *code, char *msg, size_t n)
{
    tt_tensor *x = NN(tt_ones(TT_SHAPE(4, 3), TT_F32));
    tt_tensor *w = NN(tt_ones(TT_SHAPE(5, 2), TT_F32));
    tt_clear_error();
    tt_tensor *h = tt_linear(x, w, NULL);
    ck_assert_ptr_null(h);
    if (read) {
        ck_assert_int_eq(tt_errcode(), TT_ESHAPE);
        ck_assert_ptr_nonnull(tt_errmsg());
    }
    ck_assert_ptr_null(tt_softmax(h, 1));
    *code = tt_errcode();
    snprintf(msg, n, "%s", tt_errmsg());
    tt_release(w);
    tt_release(x);
}

START_TEST(test_reading_changes_nothing)
{
    tt_status c0, c1;
    char m0[1024], m1[1024];
    linear_then_softmax(false, &c0, m0, sizeof m0);
    linear_then_softmax(true, &c1, m1, sizeof m1);
    ck_assert_int_eq(c0, TT_ESHAPE); /* the first cause wins */
    ck_assert_int_eq(c1, c0);
    ck_assert_str_eq(m1, m0);
    ck_assert_msg(strncmp(m0, "tt::linear: argument 'weight' (#2)", 34) == 0, "%s", m0);
    ck_assert_ptr_nonnull(strstr(m0, " (then tt::softmax.int: argument 'self' (#1) expects "
                                     "Tensor, got NULL)"));
    /* Acknowledged, the next NULL is a mistake of its own. */
    tt_clear_error();
    ck_assert_ptr_null(tt_softmax(NULL, 1));
    ck_assert_error(TT_EINVAL, "tt::softmax.int: argument 'self' (#1) expects Tensor, got NULL");
    ck_assert_ptr_null(strstr(tt_errmsg(), "tt::linear"));
}
END_TEST

static Suite *release_suite(void)
{
    Suite *s = suite_create("release");
    TCase *tc;
#if !defined(__SANITIZE_ADDRESS__)
    /* Under ASan a released struct goes back at once and the sanitizer
     * reports the use (test_bad_input's "lifetimes"); these run in the
     * builds users have. */
    tc = tt_tcase("released");
    tcase_add_test(tc, test_double_release);
    tcase_add_test(tc, test_struct_reuse);
    tcase_add_test(tc, test_use_in_ops);
    tcase_add_test(tc, test_use_in_data_access);
    tcase_add_test(tc, test_use_in_accessors);
    tcase_add_test(tc, test_use_after_scope_end);
    suite_add_tcase(s, tc);
#endif

    tc = tt_tcase("scopes");
    tcase_add_test(tc, test_same_results_in_scope);
    tcase_add_test(tc, test_same_results_outside_scope);
    tcase_add_test(tc, test_release_in_scope_traced);
    suite_add_tcase(s, tc);

    tc = tt_tcase("errors");
    tcase_add_test(tc, test_error_names_call_site);
    tcase_add_test(tc, test_reading_changes_nothing);
    suite_add_tcase(s, tc);
    return s;
}

TT_TEST_MAIN(release_suite)
