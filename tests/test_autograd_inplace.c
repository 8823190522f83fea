/* Gradients through in-place writes, eager and compiled: a copy_ from a
 * tensor that requires grad into a plain buffer (PyTorch's CopyBackwards),
 * mul_ with a tensor that requires grad (its derivative needs self as it
 * was before the write), each traced and compiled in fake and symbolic
 * mode with the same answer as eager and as PyTorch. */
#include "tt_test.h"

#include <math.h>
#include <stdio.h>

#include "autograd_test.h"

/* Compiles fn (nin inputs, nout outputs) in `mode` and calls it three
 * times, each call's outputs compared with want (one value each, every
 * element equal to it). */
static void check_compiled(tt_fn fn, int nin, tt_tensor **in, int nout, const double *want,
                           tt_trace_mode mode)
{
    tt_trace_opts o = {.mode = mode, .fullgraph = true, .nout = nout};
    tt_compiled *c = tt_compile(fn, nin, nout, &o);
    ck_assert_msg(c != NULL, "tt_compile: %s", tt_errmsg());
    for (int call = 0; call < 3; call++) {
        tt_tensor *out[4] = {0};
        tt_status st = tt_compiled_call(c, in, out);
        ck_assert_msg(st == TT_OK, "compiled call %d (mode %d): %s", call, (int)mode,
                      tt_errmsg());
        for (int j = 0; j < nout; j++) {
            for (int64_t k = 0; k < tt_numel(out[j]); k++)
                ck_assert_msg(fabs(at(out[j], k) - want[j]) < 1e-12,
                              "mode %d call %d output %d[%lld] = %g, want %g", (int)mode,
                              call, j, (long long)k, at(out[j], k), want[j]);
            tt_release(out[j]);
        }
    }
    tt_compiled_free(c);
}

/* ------------------------------------------------------------ copy_ */

/* buf.copy_(w); loss = sum(buf) + sum(w); out = d loss / d w. */
static tt_status copy_into_buffer(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_tensor *buf = in[0], *w = in[1];
    tt_scope_begin();
    tt_status st = tt_copy_(buf, w);
    tt_tensor *loss = st ? NULL : tt_add(tt_sum_all(buf), tt_sum_all(w));
    if (!loss)
        st = tt_errcode();
    if (!st && !(st = tt_grad(1, &loss, NULL, 1, (tt_tensor *const[]){w}, out)))
        tt_keep(out[0]);
    tt_scope_end();
    return st;
}

START_TEST(test_copy_records_edge_to_src)
{
    tt_tensor *buf = ok(tt_zeros(TT_SHAPE(3), TT_F64));
    tt_tensor *w = leaf(1, A(3), TT_F64, D(1, 2, 3));
    tt_tensor *g = NULL;
    OK(copy_into_buffer((tt_tensor *[]){buf, w}, 2, &g, 1, NULL));
    /* PyTorch: buf.copy_(w) makes buf a non-leaf with CopyBackwards. */
    for (int k = 0; k < 3; k++)
        ck_assert_double_eq(at(g, k), 2);
    ck_assert(tt_requires_grad(buf));
    ck_assert_str_eq(tt_grad_fn_name(buf), "tt::copy_");
    tt_release(g);
    tt_release(buf);

    static const tt_trace_mode modes[] = {TT_TRACE_FAKE, TT_TRACE_SYMBOLIC};
    for (int m = 0; m < 2; m++) {
        buf = ok(tt_zeros(TT_SHAPE(3), TT_F64));
        check_compiled(copy_into_buffer, 2, (tt_tensor *[]){buf, w}, 1, D(2), modes[m]);
        ck_assert_double_eq(at(buf, 2), 3); /* the write lands in the input */
        tt_release(buf);
    }
    tt_release(w);
    ck_assert_int_eq(tt_live_tensors(), 0);
}
END_TEST

/* ------------------------------------------------------------- mul_ */

/* y = w * 1; y.mul_(v); loss = sum(y); out = (d/dw, d/dv). */
static tt_status mul_in_place(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_tensor *w = in[0], *v = in[1];
    tt_scope_begin();
    tt_tensor *y = tt_mul_scalar(w, 1);
    tt_status st = y ? tt_mul_(y, v) : tt_errcode();
    tt_tensor *loss = st ? NULL : tt_sum_all(y);
    if (!st && !loss)
        st = tt_errcode();
    if (!st && !(st = tt_grad(1, &loss, NULL, 2, (tt_tensor *const[]){w, v}, out))) {
        tt_keep(out[0]);
        tt_keep(out[1]);
    }
    tt_scope_end();
    return st;
}

START_TEST(test_mul_inplace_gradient)
{
    tt_tensor *w = leaf(1, A(2), TT_F64, D(3, 3));
    tt_tensor *v = leaf(1, A(2), TT_F64, D(2, 2));
    tt_tensor *g[2] = {0};
    OK(mul_in_place((tt_tensor *[]){w, v}, 2, g, 2, NULL));
    /* PyTorch: dL/dw = v = 2, dL/dv = old y = w = 3. */
    ck_assert_double_eq(at(g[0], 0), 2);
    ck_assert_double_eq(at(g[1], 1), 3);
    tt_release(g[0]);
    tt_release(g[1]);
    check_compiled(mul_in_place, 2, (tt_tensor *[]){w, v}, 2, D(2, 3), TT_TRACE_FAKE);
    check_compiled(mul_in_place, 2, (tt_tensor *[]){w, v}, 2, D(2, 3), TT_TRACE_SYMBOLIC);
    tt_release(w);
    tt_release(v);
    ck_assert_int_eq(tt_live_tensors(), 0);
}
END_TEST

/* x.mul_(x) and x.div_(x) where x = w * 1: the operand the rule reads is
 * self, which the op overwrote, so the backward fails as PyTorch 1.13's
 * does ("one of the variables needed for gradient computation has been
 * modified by an inplace operation") instead of using the new value. */
START_TEST(test_inplace_by_itself)
{
    tt_tensor *w = leaf(1, A(3), TT_F64, D(1, 2, 3));
    for (int div = 0; div < 2; div++) {
        tt_scope_begin();
        tt_tensor *x = ok(tt_mul_scalar(w, 1));
        OK(div ? tt_div_(x, x) : tt_mul_(x, x));
        ck_assert_int_eq(tt_backward(ok(tt_sum_all(x)), NULL), TT_EAUTOGRAD);
        ck_assert_error(TT_EAUTOGRAD, "has been modified by an in-place operation");
        ck_assert_error(TT_EAUTOGRAD, div ? "tt::div_.Tensor" : "tt::mul_.Tensor");
        tt_scope_end();
    }
    tt_release(w);
    ck_assert_int_eq(tt_live_tensors(), 0);
}
END_TEST

static Suite *inplace_suite(void)
{
    Suite *s = suite_create("autograd_inplace");
    TCase *tc = tt_tcase("inplace_gradients");
    tcase_add_test(tc, test_copy_records_edge_to_src);
    tcase_add_test(tc, test_mul_inplace_gradient);
    tcase_add_test(tc, test_inplace_by_itself);
    suite_add_tcase(s, tc);
    return s;
}

TT_TEST_MAIN(inplace_suite)
