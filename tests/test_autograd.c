/* Autograd: requires_grad and leaves, tt_backward and tt_grad, gradient
 * accumulation, broadcasting and dtypes of gradients, no-grad scopes,
 * saved-tensor version checks, in-place ops on leaves and non-leaves, the
 * derivative of every differentiable elementwise op numerically with
 * tt_gradcheck (against the hand-written formulas: test_derivatives.c),
 * deep graphs and the release of graphs. Semantics are PyTorch's. */
#include "tt_test.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "autograd_test.h"

/* ------------------------------------------------------ requires_grad */

START_TEST(test_requires_grad_dtypes)
{
    static const tt_dtype ints[] = {TT_I64, TT_I32, TT_U8, TT_BOOL};
    for (int i = 0; i < 4; i++) {
        tt_tensor *t = mk(1, A(2), ints[i], D(1, 0));
        ck_assert_int_eq(tt_set_requires_grad(t, true), TT_EAUTOGRAD);
        char want[96];
        snprintf(want, sizeof want, "only tensors of floating point dtype can require "
                                    "gradients (got %s)", tt_dtype_name(ints[i]));
        ck_assert_error(TT_EAUTOGRAD, want);
        ck_assert_error(TT_EAUTOGRAD, "tt_set_requires_grad");
        ck_assert(!tt_requires_grad(t));
        /* Switching it off is always allowed (PyTorch too). */
        ck_assert_int_eq(tt_set_requires_grad(t, false), TT_OK);
        tt_release(t);
    }
    static const tt_dtype floats[] = {TT_F32, TT_F64};
    for (int i = 0; i < 2; i++) {
        tt_tensor *t = mk(1, A(2), floats[i], D(1, 0));
        ck_assert(!tt_requires_grad(t));
        ck_assert_int_eq(tt_set_requires_grad(t, true), TT_OK);
        ck_assert(tt_requires_grad(t));
        ck_assert(tt_is_leaf(t));
        ck_assert_ptr_null(tt_grad_fn_name(t));
        ck_assert_ptr_null(tt_get_grad(t));
        ck_assert_int_eq(tt_set_requires_grad(t, false), TT_OK);
        ck_assert(!tt_requires_grad(t));
        tt_release(t);
    }
    tt_clear_error(); /* the errors above handled: a NULL is a mistake of its own */
    ck_assert_int_eq(tt_set_requires_grad(NULL, true), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_set_requires_grad: argument 'self' expects a tensor, got NULL");
    ck_assert(!tt_requires_grad(NULL));
    ck_assert(!tt_is_leaf(NULL));
    ck_assert_ptr_null(tt_grad_fn_name(NULL));
    ck_assert_ptr_null(tt_get_grad(NULL));
}
END_TEST

START_TEST(test_only_leaves_switch)
{
    tt_tensor *x = leaf(1, A(3), TT_F64, D(1, 2, 3));
    tt_tensor *w = leaf(1, A(3), TT_F64, D(4, 5, 6));
    tt_tensor *y = ok(tt_mul(x, w));
    ck_assert(tt_requires_grad(y));
    ck_assert(!tt_is_leaf(y));
    ck_assert_str_eq(tt_grad_fn_name(y), "tt::mul.Tensor");
    ck_assert_int_eq(tt_set_requires_grad(y, false), TT_EAUTOGRAD);
    ck_assert_error(TT_EAUTOGRAD, "you can only change requires_grad of leaf tensors; this "
                                  "one was made by tt::mul.Tensor");
    ck_assert_int_eq(tt_set_requires_grad(y, true), TT_EAUTOGRAD);
    ck_assert_error(TT_EAUTOGRAD, "made by tt::mul.Tensor");
    ck_assert(tt_requires_grad(y));
    /* A detached view is a leaf again and can be switched. */
    tt_tensor *d = ok(tt_detach(y));
    ck_assert(tt_is_leaf(d));
    ck_assert(!tt_requires_grad(d));
    ck_assert_int_eq(tt_set_requires_grad(d, true), TT_OK);
    tt_release(d);
    tt_release(y);
    tt_release(x);
    tt_release(w);
}
END_TEST

/* The op that made a result names the overload that ran. */
START_TEST(test_grad_fn_names)
{
    tt_tensor *x = leaf(1, A(3), TT_F64, D(1, 2, 3));
    tt_tensor *p = mk(1, A(3), TT_F64, D(1, 1, 1)); /* no grad */
    struct {
        tt_tensor *t;
        const char *name;
    } cases[] = {
        {tt_add(x, p), "tt::add.Tensor"},
        {tt_add(p, x), "tt::add.Tensor"},
        {tt_add_scalar(x, 1), "tt::add.Scalar"},
        {tt_sub(x, p), "tt::sub.Tensor"},
        {tt_sub_scalar(x, 1), "tt::sub.Scalar"},
        {tt_mul(x, p), "tt::mul.Tensor"},
        {tt_mul_scalar(x, 2), "tt::mul.Scalar"},
        {tt_div(x, p), "tt::div.Tensor"},
        {tt_div_scalar(x, 2), "tt::div.Scalar"},
        {tt_pow(x, p), "tt::pow.Tensor_Tensor"},
        {tt_pow_scalar(x, 2), "tt::pow.Tensor_Scalar"},
        {tt_neg(x), "tt::neg"},
        {tt_exp(x), "tt::exp"},
        {tt_gelu(x), "tt::gelu"},
        {tt_clamp(x, 0, NAN), "tt::clamp"},
    };
    int n = (int)(sizeof cases / sizeof cases[0]);
    for (int i = 0; i < n; i++) {
        ck_assert_msg(cases[i].t != NULL, "%s: %s", cases[i].name, tt_errmsg());
        ck_assert_str_eq(tt_grad_fn_name(cases[i].t), cases[i].name);
        ck_assert(tt_requires_grad(cases[i].t));
        ck_assert(!tt_is_leaf(cases[i].t));
        tt_release(cases[i].t);
    }
    /* Nothing requires grad: nothing is recorded. */
    tt_tensor *q = ok(tt_mul(p, p));
    ck_assert(!tt_requires_grad(q));
    ck_assert(tt_is_leaf(q));
    ck_assert_ptr_null(tt_grad_fn_name(q));
    tt_release(q);
    tt_release(x);
    tt_release(p);
}
END_TEST

/* Comparisons have no derivative and need none: their bool results do
 * not require grad, and they can feed where(). A float-valued op with no
 * derivative (sign) is refused on an input that requires grad. */
START_TEST(test_integer_results)
{
    tt_tensor *x = leaf(1, A(3), TT_F64, D(1, 5, 3));
    tt_tensor *w = leaf(1, A(3), TT_F64, D(2, 2, 2));
    tt_tensor *(*const cmps[])(const tt_tensor *, const tt_tensor *) = {tt_eq, tt_ne, tt_lt,
                                                                        tt_le, tt_gt, tt_ge};
    for (int i = 0; i < 6; i++) {
        tt_tensor *c = ok(cmps[i](x, w));
        ck_assert_int_eq(tt_dtype_of(c), TT_BOOL);
        ck_assert(!tt_requires_grad(c));
        ck_assert(tt_is_leaf(c));
        ck_assert_ptr_null(tt_grad_fn_name(c));
        tt_release(c);
    }
    const tt_op *gt = tt_op_find("tt::gt.Scalar");
    ck_assert_ptr_nonnull(gt);
    ck_assert(!tt_op_has_autograd(gt));
    tt_tensor *c = ok(tt_call(gt, tt_v_tensor(x), tt_v_int(2)));
    ck_assert(!tt_requires_grad(c));
    expect(c, 1, A(3), D(0, 1, 1), 0);
    /* where(x > 2, x, w): the gradient is split by the mask. */
    tt_tensor *y = ok(tt_where(c, x, w));
    tt_tensor *one = ok(tt_ones(1, A(3), TT_F64));
    OK(tt_backward(y, one));
    expect_grad(x, D(0, 1, 1), 0);
    expect_grad(w, D(1, 0, 0), 0);
    tt_release(one);
    tt_release(y);
    tt_release(c);

    const tt_op *sign = tt_op_find("tt::sign");
    ck_assert_ptr_nonnull(sign);
    /* sign is piecewise constant: PyTorch gives it a zero gradient. */
    tt_tensor *s = ok(tt_call(sign, tt_v_tensor(x)));
    ck_assert(tt_requires_grad(s));
    expect(s, 1, A(3), D(1, 1, 1), 0);
    OK(tt_set_grad(x, NULL));
    tt_tensor *ones3 = ok(tt_ones(1, A(3), TT_F64));
    OK(tt_backward(s, ones3));
    expect_grad(x, D(0, 0, 0), 0);
    tt_release(ones3);
    tt_release(s);
    tt_release(x);
    tt_release(w);
}
END_TEST

/* ------------------------------------------------------------ backward */

/* A leaf used several times in one cat or stack gets the sum of its
 * slices of the gradient. The slices are views of one stride-0 expand (sum's
 * backward): the first is cloned into .grad, never kept and added into
 * (tt-difftest seed 216511: stack([x, x, x]).sum() gave 4, then 8 for
 * four; PyTorch gives 3 and 4). */
START_TEST(test_leaf_repeated_in_cat)
{
    for (int n = 1; n <= 4; n++) {
        tt_tensor *x = leaf(1, A(1), TT_F32, D(0));
        tt_tensor *xs[4] = {x, x, x, x};
        tt_tensor *s = ok(tt_stack(n, xs, 0)), *l = ok(tt_sum_all(s));
        OK(tt_backward(l, NULL));
        expect_grad(x, D(n), 0);
        tt_release(l);
        tt_release(s);
        tt_tensor *c = ok(tt_cat(n, xs, 0)), *l2 = ok(tt_sum_all(c));
        OK(tt_backward(l2, NULL));
        expect_grad(x, D(2 * n), 0); /* accumulated onto the first */
        tt_release(l2);
        tt_release(c);
        tt_release(x);
    }
}
END_TEST

/* Inside a scope tt_grad's results are the scope's; when two inputs get
 * one tensor (add's backward hands the same gradient to both), the scope
 * still ends with nothing left (tt-difftest seed 303815 leaked it), and a
 * grad_output handed back as a gradient is not leaked either. Each result
 * is a tensor of its own, so releasing them early is right too. */
START_TEST(test_grad_same_tensor_in_scope)
{
    tt_tensor *a = leaf(0, NULL, TT_F32, D(1)), *b = leaf(0, NULL, TT_F32, D(2));
    tt_scope_begin();
    tt_tensor *l = ok(tt_add(a, b)), *X[2] = {a, b}, *G[2] = {0};
    OK(tt_grad(1, &l, NULL, 2, X, G));
    ck_assert_ptr_ne(G[0], G[1]);
    expect(G[0], 0, NULL, D(1), 0);
    tt_tensor *seed = ok(tt_scalar(3, TT_F32)), *id = ok(tt_mul_scalar(a, 1)), *H[1] = {0};
    OK(tt_grad(1, &id, (tt_tensor *const[]){seed}, 1, X, H));
    expect(H[0], 0, NULL, D(3), 0);
    /* Each result is the caller's to release too, as any result: the two
     * are tensors of their own, and the seed outlives its gradient. */
    ck_assert_ptr_ne(H[0], seed);
    tt_release(H[0]);
    tt_release(G[1]);
    ck_assert_int_eq(tt_errcode(), TT_OK);
    expect(seed, 0, NULL, D(3), 0);
    expect(G[0], 0, NULL, D(1), 0);
    tt_scope_end();
    ck_assert_int_eq(tt_live_tensors(), 2);
    tt_release(a);
    tt_release(b);
}
END_TEST

START_TEST(test_backward_implicit_scalar)
{
    /* 0-dim loss: d(x*w)/dx = w. */
    tt_tensor *x = leaf(0, NULL, TT_F64, D(3));
    tt_tensor *w = leaf(0, NULL, TT_F64, D(-2));
    tt_tensor *y = ok(tt_mul(x, w));
    OK(tt_backward(y, NULL));
    expect_grad(x, D(-2), 0);
    expect_grad(w, D(3), 0);
    tt_release(y);
    /* A one-element loss of any rank ([1, 1]) also gets an implicit 1. */
    tt_tensor *a = leaf(2, A(1, 1), TT_F32, D(0.5));
    tt_tensor *l = ok(tt_mul(a, a));
    OK(tt_backward(l, NULL));
    expect_grad(a, D(1), 0);
    tt_release(l);
    /* A leaf that requires grad can be the loss itself: d(x)/dx = 1. */
    tt_tensor *z = leaf(1, A(1), TT_F64, D(7));
    OK(tt_backward(z, NULL));
    expect_grad(z, D(1), 0);
    tt_release(z);
    tt_release(a);
    tt_release(x);
    tt_release(w);
}
END_TEST

START_TEST(test_backward_explicit_grad)
{
    tt_tensor *x = leaf(2, A(2, 2), TT_F64, D(1, 2, 3, 4));
    tt_tensor *y = ok(tt_mul_scalar(x, 3));
    tt_tensor *g = mk(2, A(2, 2), TT_F64, D(1, -1, 0.5, 2));
    OK(tt_backward(y, g));
    expect_grad(x, D(3, -3, 1.5, 6), 0);
    /* The caller's gradient is not touched, nor stolen as .grad. */
    expect(g, 2, A(2, 2), D(1, -1, 0.5, 2), 0);
    tt_tensor *xg = tt_get_grad(x);
    ck_assert(!tt_same_storage(xg, g));
    tt_release(xg);
    /* The loss of a leaf with an explicit gradient: .grad is a copy. */
    tt_tensor *z = leaf(2, A(2, 2), TT_F64, D(0, 0, 0, 0));
    OK(tt_backward(z, g));
    tt_tensor *zg = tt_get_grad(z);
    ck_assert(!tt_same_storage(zg, g));
    expect(zg, 2, A(2, 2), D(1, -1, 0.5, 2), 0);
    tt_release(zg);
    tt_release(z);
    tt_release(g);
    tt_release(y);
    tt_release(x);
}
END_TEST

START_TEST(test_backward_errors)
{
    tt_tensor *x = leaf(1, A(3), TT_F64, D(1, 2, 3));
    tt_tensor *y = ok(tt_mul(x, x));
    ck_assert_int_eq(tt_backward(y, NULL), TT_EAUTOGRAD);
    ck_assert_error(TT_EAUTOGRAD, "tt_backward: a gradient can be implicitly created only "
                                  "for one-element outputs (got shape [3]); pass the "
                                  "gradient explicitly");
    tt_tensor *bad = mk(1, A(2), TT_F64, D(1, 1));
    ck_assert_int_eq(tt_backward(y, bad), TT_ESHAPE);
    ck_assert_error(TT_ESHAPE, "tt_backward: the gradient for output 0 has shape [2], but "
                               "the output has shape [3]");
    /* The failures ran nothing: the graph can still be used. */
    ck_assert_ptr_null(tt_get_grad(x));
    tt_tensor *g = mk(1, A(3), TT_F64, D(1, 1, 1));
    OK(tt_backward(y, g));
    expect_grad(x, D(2, 4, 6), 0);

    tt_tensor *p = mk(0, NULL, TT_F64, D(1));
    ck_assert_int_eq(tt_backward(p, NULL), TT_EAUTOGRAD);
    ck_assert_error(TT_EAUTOGRAD, "tt_backward: element 0 of the outputs does not require "
                                  "grad and has no grad_fn");
    tt_no_grad_begin();
    tt_tensor *q = ok(tt_mul(x, x));
    tt_no_grad_end();
    ck_assert_int_eq(tt_backward(q, g), TT_EAUTOGRAD);
    ck_assert_error(TT_EAUTOGRAD, "element 0 of the outputs does not require grad");
    tt_clear_error(); /* handled: a NULL is a mistake of its own */
    ck_assert_int_eq(tt_backward(NULL, NULL), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_backward: argument 'outputs' expects a tensor, got NULL");
    release_all(6, (tt_tensor *[]){x, y, bad, g, p, q});
}
END_TEST

/* .grad accumulates (+=) over backward calls on separate graphs, in place
 * into the tensor .grad already holds (PyTorch's AccumulateGrad). */
START_TEST(test_grad_accumulates)
{
    tt_tensor *x = leaf(1, A(3), TT_F64, D(1, 2, 3));
    tt_tensor *g = mk(1, A(3), TT_F64, D(1, 1, 1));
    tt_tensor *y1 = ok(tt_mul_scalar(x, 2));
    OK(tt_backward(y1, g));
    tt_tensor *first = tt_get_grad(x);
    expect(first, 1, A(3), D(2, 2, 2), 0);
    tt_tensor *y2 = ok(tt_mul(x, x));
    OK(tt_backward(y2, g));
    expect_grad(x, D(4, 6, 8), 0);
    expect(first, 1, A(3), D(4, 6, 8), 0); /* the same tensor, updated */
    /* Two references from tt_get_grad: each is the caller's to release. */
    tt_tensor *again = tt_get_grad(x);
    ck_assert_ptr_eq(again, first);
    tt_release(again);
    tt_release(first);
    expect_grad(x, D(4, 6, 8), 0);
    /* Clearing, then a fresh accumulation. */
    OK(tt_set_grad(x, NULL));
    ck_assert_ptr_null(tt_get_grad(x));
    OK(tt_set_grad(x, NULL)); /* clearing nothing is fine */
    tt_tensor *y3 = ok(tt_add_scalar(x, 1));
    OK(tt_backward(y3, g));
    expect_grad(x, D(1, 1, 1), 0);
    /* A .grad set by the user is accumulated into. */
    tt_tensor *mine = mk(1, A(3), TT_F64, D(10, 20, 30));
    OK(tt_set_grad(x, mine));
    tt_tensor *y4 = ok(tt_neg(x));
    OK(tt_backward(y4, g));
    expect_grad(x, D(9, 19, 29), 0);
    tt_tensor *bad = mk(1, A(2), TT_F64, D(0, 0));
    ck_assert_int_eq(tt_set_grad(x, bad), TT_ESHAPE);
    ck_assert_error(TT_ESHAPE, "tt_set_grad: argument 'grad' has shape [2], but the tensor "
                               "has shape [3]");
    tt_tensor *f32 = mk(1, A(3), TT_F32, D(0, 0, 0));
    ck_assert_int_eq(tt_set_grad(x, f32), TT_EDTYPE);
    ck_assert_error(TT_EDTYPE, "tt_set_grad: argument 'grad' has dtype f32, but the tensor "
                               "has dtype f64");
    ck_assert_int_eq(tt_set_grad(x, x), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_set_grad: a tensor cannot be its own gradient");
    tt_release(f32);
    expect_grad(x, D(9, 19, 29), 0); /* unchanged by the refusals */
    /* Setting the gradient it already has. */
    tt_tensor *cur = tt_get_grad(x);
    OK(tt_set_grad(x, cur));
    tt_release(cur);
    expect_grad(x, D(9, 19, 29), 0);
    ck_assert_int_eq(tt_set_grad(NULL, NULL), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_set_grad: argument 'self' expects a tensor, got NULL");
    release_all(8, (tt_tensor *[]){x, g, y1, y2, y3, y4, mine, bad});
}
END_TEST

/* The same leaf reached along two paths gets the sum (x*x + x). */
START_TEST(test_two_paths)
{
    tt_tensor *x = leaf(1, A(2), TT_F64, D(3, -1));
    tt_tensor *sq = ok(tt_mul(x, x));
    tt_tensor *y = ok(tt_add(sq, x));
    tt_tensor *z = ok(tt_mul(y, sq)); /* (x^2 + x) x^2 = x^4 + x^3 */
    tt_tensor *g = mk(1, A(2), TT_F64, D(1, 1));
    OK(tt_backward(z, g));
    /* 4x^3 + 3x^2 */
    expect_grad(x, D(4 * 27 + 3 * 9, -4 + 3), 1e-12);
    release_all(5, (tt_tensor *[]){x, sq, y, z, g});
}
END_TEST

/* ------------------------------------------------------------- tt_grad */

START_TEST(test_grad_leaves_and_intermediates)
{
    tt_tensor *x = leaf(1, A(3), TT_F64, D(1, 2, 3));
    tt_tensor *w = leaf(1, A(3), TT_F64, D(4, 5, 6));
    tt_tensor *h = ok(tt_mul(x, w));   /* x w */
    tt_tensor *y = ok(tt_exp(h));      /* e^(x w) */
    tt_tensor *out = ok(tt_mul_scalar(y, 0.5));
    tt_tensor *g = mk(1, A(3), TT_F64, D(1, 2, 3));
    tt_tensor *gr[3];
    OK(tt_grad(1, &out, &g, 3, (tt_tensor *[]){x, w, h}, gr));
    double gx[3], gw[3], gh[3];
    double xv[3] = {1, 2, 3}, wv[3] = {4, 5, 6}, gv[3] = {1, 2, 3};
    for (int k = 0; k < 3; k++) {
        gh[k] = gv[k] * 0.5 * exp(xv[k] * wv[k]);
        gx[k] = gh[k] * wv[k];
        gw[k] = gh[k] * xv[k];
    }
    expect(gr[0], 1, A(3), gx, 1e-12);
    expect(gr[1], 1, A(3), gw, 1e-12);
    expect(gr[2], 1, A(3), gh, 1e-12);
    for (int i = 0; i < 3; i++) {
        ck_assert(!tt_requires_grad(gr[i]));
        ck_assert_int_eq(tt_dtype_of(gr[i]), TT_F64);
    }
    /* .grad is not touched. */
    ck_assert_ptr_null(tt_get_grad(x));
    ck_assert_ptr_null(tt_get_grad(w));
    release_all(3, gr);
    release_all(6, (tt_tensor *[]){x, w, h, y, out, g});
}
END_TEST

START_TEST(test_grad_multiple_outputs)
{
    tt_tensor *x = leaf(1, A(2), TT_F64, D(2, 3));
    tt_tensor *w = leaf(1, A(2), TT_F64, D(5, 7));
    tt_tensor *u = leaf(1, A(2), TT_F64, D(1, 1)); /* used by neither output */
    tt_tensor *o1 = ok(tt_mul(x, w));
    tt_tensor *o2 = ok(tt_mul(x, x));
    tt_tensor *g1 = mk(1, A(2), TT_F64, D(1, 10));
    tt_tensor *g2 = mk(1, A(2), TT_F64, D(100, 1000));
    tt_tensor *gr[3];
    OK(tt_grad(2, (tt_tensor *[]){o1, o2}, (tt_tensor *[]){g1, g2}, 3,
               (tt_tensor *[]){x, w, u}, gr));
    /* d/dx: g1 w + g2 2x; d/dw: g1 x; u: zeros of its shape. */
    expect(gr[0], 1, A(2), D(1 * 5 + 100 * 4, 10 * 7 + 1000 * 6), 0);
    expect(gr[1], 1, A(2), D(2, 30), 0);
    expect(gr[2], 1, A(2), D(0, 0), 0);
    release_all(3, gr);
    /* The same input twice: each slot gets the full gradient. */
    tt_tensor *o3 = ok(tt_mul(x, w));
    OK(tt_grad(1, &o3, &g1, 2, (tt_tensor *[]){w, w}, gr));
    expect(gr[0], 1, A(2), D(2, 30), 0);
    expect(gr[1], 1, A(2), D(2, 30), 0);
    release_all(2, gr);
    tt_release(o3);
    /* grad_outputs NULL: implicit ones for one-element outputs. */
    tt_tensor *s = leaf(0, NULL, TT_F32, D(2));
    tt_tensor *s1 = ok(tt_mul(s, s));
    tt_tensor *s2 = ok(tt_mul_scalar(s, 3));
    tt_tensor *v = leaf(2, A(2, 1), TT_F32, D(0, 0));
    tt_tensor *gs[2];
    OK(tt_grad(2, (tt_tensor *[]){s1, s2}, NULL, 2, (tt_tensor *[]){s, v}, gs));
    expect(gs[0], 0, NULL, D(7), 0);
    expect(gs[1], 2, A(2, 1), D(0, 0), 0);
    ck_assert_int_eq(tt_dtype_of(gs[1]), TT_F32);
    release_all(2, gs);
    release_all(11, (tt_tensor *[]){x, w, u, o1, o2, g1, g2, s, s1, s2, v});
}
END_TEST

/* A training step differentiates with respect to every parameter: no cap
 * on the inputs (300 here) or the outputs (70). The two arrays tt_grad
 * makes for them can each fail. */
START_TEST(test_grad_many)
{
    enum { NIN = 300, NOUT = 70 };
    tt_tensor *xs[NIN], *gr[NIN], *os[NOUT], *gs[NOUT];
    for (int i = 0; i < NIN; i++)
        xs[i] = leaf(1, A(2), TT_F64, D(1, 2));
    /* y = sum_i (i + 1) x_i */
    tt_tensor *y = ok(tt_mul_scalar(xs[0], 1));
    for (int i = 1; i < NIN; i++) {
        tt_tensor *t = ok(tt_mul_scalar(xs[i], i + 1)), *sum = ok(tt_add(y, t));
        release_all(2, (tt_tensor *[]){t, y});
        y = sum;
    }
    tt_tensor *g = mk(1, A(2), TT_F64, D(1, 1));
    for (int n = 1; n <= 2; n++) {
        tt_debug_fail_alloc(n);
        ck_assert_int_eq(tt_grad(1, &y, &g, NIN, xs, gr), TT_ENOMEM);
        tt_debug_fail_alloc(0);
        ck_assert_error(TT_ENOMEM, "tt_grad: out of memory for the gradients of 300 inputs");
        ck_assert_ptr_null(gr[0]);
    }
    OK(tt_grad(1, &y, &g, NIN, xs, gr));
    for (int i = 0; i < NIN; i++)
        expect(gr[i], 1, A(2), D(i + 1, i + 1), 0);
    release_all(NIN, gr);
    /* o_k = (k + 1) x_0: d/dx_0 = 1 + 2 + ... + NOUT. */
    for (int k = 0; k < NOUT; k++) {
        os[k] = ok(tt_mul_scalar(xs[0], k + 1));
        gs[k] = g;
    }
    OK(tt_grad(NOUT, os, gs, 1, xs, gr));
    expect(gr[0], 1, A(2), D(NOUT * (NOUT + 1) / 2, NOUT * (NOUT + 1) / 2), 0);
    release_all(1, gr);
    release_all(NOUT, os);
    release_all(NIN, xs);
    release_all(2, (tt_tensor *[]){y, g});
}
END_TEST

START_TEST(test_grad_errors)
{
    tt_tensor *x = leaf(1, A(2), TT_F64, D(2, 3));
    tt_tensor *p = mk(1, A(2), TT_F64, D(1, 1));
    tt_tensor *y = ok(tt_mul(x, p));
    tt_tensor *gr[2] = {p, p}; /* overwritten with NULL on failure */
    ck_assert_int_eq(tt_grad(1, &y, (tt_tensor *[]){p}, 2, (tt_tensor *[]){x, p}, gr),
                     TT_EAUTOGRAD);
    ck_assert_error(TT_EAUTOGRAD, "tt_grad: input 1 does not require grad");
    ck_assert_ptr_null(gr[0]);
    ck_assert_ptr_null(gr[1]);
    ck_assert_int_eq(tt_grad(1, &y, NULL, 1, &x, gr), TT_EAUTOGRAD);
    ck_assert_error(TT_EAUTOGRAD, "tt_grad: a gradient can be implicitly created only for "
                                  "one-element outputs (got shape [2])");
    ck_assert_int_eq(tt_grad(1, &p, NULL, 1, &x, gr), TT_EAUTOGRAD);
    ck_assert_error(TT_EAUTOGRAD, "tt_grad: element 0 of the outputs does not require grad");
    ck_assert_int_eq(tt_grad(0, &y, NULL, 1, &x, gr), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_grad: expects 1 or more outputs and 0 or more inputs with "
                               "their arrays");
    ck_assert_int_eq(tt_grad(1, &y, (tt_tensor *[]){p}, 1, (tt_tensor *[]){NULL}, gr),
                     TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_grad: argument 'inputs' expects a tensor, got NULL");
    tt_tensor *bad = mk(1, A(3), TT_F64, D(1, 1, 1));
    ck_assert_int_eq(tt_grad(1, &y, &bad, 1, &x, gr), TT_ESHAPE);
    ck_assert_error(TT_ESHAPE, "tt_grad: the gradient for output 0 has shape [3], but the "
                               "output has shape [2]");
    /* None of those ran the graph. */
    OK(tt_grad(1, &y, (tt_tensor *[]){p}, 1, &x, gr));
    expect(gr[0], 1, A(2), D(1, 1), 0);
    tt_release(gr[0]);
    release_all(4, (tt_tensor *[]){x, p, y, bad});
}
END_TEST

/* -------------------------------------------------------- broadcasting */

START_TEST(test_broadcast_row)
{
    /* a [3] + b [2, 3]: a's gradient is the column sum of G. */
    tt_tensor *a = leaf(1, A(3), TT_F64, D(1, 2, 3));
    tt_tensor *b = leaf(2, A(2, 3), TT_F64, D(0, 0, 0, 0, 0, 0));
    tt_tensor *y = ok(tt_add(a, b));
    tt_tensor *g = mk(2, A(2, 3), TT_F64, D(1, 2, 3, 10, 20, 30));
    OK(tt_backward(y, g));
    expect_grad(a, D(11, 22, 33), 0);
    expect_grad(b, D(1, 2, 3, 10, 20, 30), 0);
    /* sub with alpha: d/db of a - 2 b is -2 G, summed to b's shape. */
    tt_tensor *c = leaf(2, A(1, 3), TT_F64, D(0, 0, 0));
    tt_tensor *d = leaf(3, A(2, 2, 3), TT_F64, D(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0));
    tt_value args[] = {tt_v_tensor(d), tt_v_tensor(c), tt_v_float(2)};
    tt_tensor *z = ok(tt_op_call1(tt_op_find("tt::sub.Tensor"), args, 3));
    tt_tensor *gz = ok(tt_ones(3, A(2, 2, 3), TT_F64));
    OK(tt_backward(z, gz));
    expect_grad(c, D(-8, -8, -8), 0);
    expect_grad(d, D(1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1), 0);
    release_all(8, (tt_tensor *[]){a, b, y, g, c, d, z, gz});
}
END_TEST

START_TEST(test_broadcast_outer)
{
    /* x [2, 1] * y [1, 3] -> [2, 3]. dx[i] = sum_j G[i,j] y[j],
     * dy[j] = sum_i G[i,j] x[i]. */
    double xv[2] = {2, -1}, yv[3] = {1, 3, 5}, gv[6] = {1, 2, 3, 4, 5, 6};
    tt_tensor *x = leaf(2, A(2, 1), TT_F64, xv);
    tt_tensor *y = leaf(2, A(1, 3), TT_F64, yv);
    tt_tensor *o = ok(tt_mul(x, y));
    tt_tensor *g = mk(2, A(2, 3), TT_F64, gv);
    OK(tt_backward(o, g));
    double dx[2] = {0}, dy[3] = {0};
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++) {
            dx[i] += gv[i * 3 + j] * yv[j];
            dy[j] += gv[i * 3 + j] * xv[i];
        }
    expect_grad(x, dx, 0);
    expect_grad(y, dy, 0);
    release_all(4, (tt_tensor *[]){x, y, o, g});
}
END_TEST

START_TEST(test_broadcast_0dim)
{
    /* s (0-dim) * m [2, 3]: ds = sum G m (0-dim), dm = G s. */
    double mv[6] = {1, 2, 3, 4, 5, 6}, gv[6] = {1, 1, 2, 2, 3, 3};
    tt_tensor *s = leaf(0, NULL, TT_F64, D(-2));
    tt_tensor *m = leaf(2, A(2, 3), TT_F64, mv);
    tt_tensor *o = ok(tt_mul(s, m));
    tt_tensor *g = mk(2, A(2, 3), TT_F64, gv);
    OK(tt_backward(o, g));
    double ds = 0, dm[6];
    for (int k = 0; k < 6; k++) {
        ds += gv[k] * mv[k];
        dm[k] = -2 * gv[k];
    }
    expect_grad(s, &ds, 0);
    expect_grad(m, dm, 0);
    /* 0-dim with 0-dim; and a [1] with a 0-dim (result [1]). */
    tt_tensor *a = leaf(0, NULL, TT_F64, D(3));
    tt_tensor *b = leaf(1, A(1), TT_F64, D(4));
    tt_tensor *ab = ok(tt_div(a, b));
    OK(tt_backward(ab, NULL));
    expect_grad(a, D(0.25), 1e-15);
    expect_grad(b, D(-3.0 / 16), 1e-15);
    release_all(7, (tt_tensor *[]){s, m, o, g, a, b, ab});
}
END_TEST

/* A broadcast view (stride 0) as the input that requires grad. */
START_TEST(test_broadcast_expanded_input)
{
    tt_tensor *base = mk(1, A(3), TT_F64, D(1, 2, 3));
    tt_tensor *e = ok(tt_expand(base, 2, A(2, 3)));
    OK(tt_set_requires_grad(e, true));
    tt_tensor *y = ok(tt_mul(e, e));
    tt_tensor *g = ok(tt_ones(2, A(2, 3), TT_F64));
    OK(tt_backward(y, g));
    expect_grad(e, D(2, 4, 6, 2, 4, 6), 0);
    release_all(4, (tt_tensor *[]){base, e, y, g});
}
END_TEST

/* Empty tensors: gradients of shape [0, 3]; a [3] broadcast against
 * [0, 3] gets zeros (a sum over nothing). */
START_TEST(test_empty_tensors)
{
    tt_tensor *x = ok(tt_zeros(2, A(0, 3), TT_F64));
    OK(tt_set_requires_grad(x, true));
    tt_tensor *b = leaf(1, A(3), TT_F64, D(1, 2, 3));
    tt_tensor *ex = ok(tt_exp(x));
    tt_tensor *y = ok(tt_mul(ex, b));
    tt_tensor *g = ok(tt_zeros(2, A(0, 3), TT_F64));
    OK(tt_backward(y, g));
    tt_tensor *gx = tt_get_grad(x);
    ck_assert_ptr_nonnull(gx);
    ck_assert_int_eq(tt_ndim(gx), 2);
    ck_assert_int_eq(tt_sizes(gx)[0], 0);
    ck_assert_int_eq(tt_sizes(gx)[1], 3);
    expect_grad(b, D(0, 0, 0), 0);
    /* An empty loss has no implicit gradient. */
    tt_tensor *z = ok(tt_mul_scalar(x, 2));
    ck_assert_int_eq(tt_backward(z, NULL), TT_EAUTOGRAD);
    ck_assert_error(TT_EAUTOGRAD, "only for one-element outputs (got shape [0, 3])");
    release_all(7, (tt_tensor *[]){x, b, ex, y, g, gx, z});
}
END_TEST

/* On fake tensors the graph records and tt_grad gives fake gradients
 * with the metadata of the real ones. */
START_TEST(test_fake_tensors)
{
    tt_tensor *rx = leaf(2, A(2, 3), TT_F32, D(1, 2, 3, 4, 5, 6));
    tt_tensor *rw = leaf(1, A(3), TT_F64, D(1, 2, 3));
    tt_tensor *fx = ok(tt_fake_like(rx)), *fw = ok(tt_fake_like(rw));
    OK(tt_set_requires_grad(fx, true));
    OK(tt_set_requires_grad(fw, true));
    tt_tensor *real[2], *fake[2];
    tt_tensor *ins[2][2] = {{rx, rw}, {fx, fw}};
    for (int f = 0; f < 2; f++) {
        tt_scope_begin();
        tt_tensor *y = tt_sigmoid(tt_div(tt_sin(ins[f][0]), tt_add_scalar(ins[f][1], 1)));
        ck_assert_msg(y != NULL, "%s", tt_errmsg());
        ck_assert(tt_is_fake(y) == (f == 1));
        ck_assert_str_eq(tt_grad_fn_name(y), "tt::sigmoid");
        tt_tensor *g = f ? tt_fake_empty(2, A(2, 3), TT_F64) : tt_ones(2, A(2, 3), TT_F64);
        OK(tt_grad(1, &y, &g, 2, ins[f], f ? fake : real));
        tt_keep(f ? fake[0] : real[0]);
        tt_keep(f ? fake[1] : real[1]);
        tt_scope_end();
    }
    for (int i = 0; i < 2; i++) {
        ck_assert(tt_is_fake(fake[i]));
        ck_assert(!tt_is_fake(real[i]));
        ck_assert_int_eq(tt_dtype_of(fake[i]), tt_dtype_of(real[i]));
        ck_assert_int_eq(tt_ndim(fake[i]), tt_ndim(real[i]));
        for (int d = 0; d < tt_ndim(real[i]); d++) {
            ck_assert_int_eq(tt_sizes(fake[i])[d], tt_sizes(real[i])[d]);
            ck_assert_int_eq(tt_strides(fake[i])[d], tt_strides(real[i])[d]);
        }
    }
    ck_assert_ptr_null(tt_data(fake[0]));
    ck_assert_error(TT_EFAKE, "");
    release_all(2, real);
    release_all(2, fake);
    release_all(4, (tt_tensor *[]){rx, rw, fx, fw});
}
END_TEST

/* ----------------------------------------------------------------- dtype */

START_TEST(test_mixed_dtypes)
{
    tt_tensor *x = leaf(1, A(3), TT_F32, D(1.5, 2, -3));
    tt_tensor *w = leaf(1, A(3), TT_F64, D(0.1, 0.2, 0.3));
    tt_tensor *y = ok(tt_mul(x, w));
    ck_assert_int_eq(tt_dtype_of(y), TT_F64);
    tt_tensor *g = mk(1, A(3), TT_F64, D(1, 1, 1));
    OK(tt_backward(y, g));
    expect_grad(x, D(0.1, 0.2, 0.3), 1e-7); /* f32 */
    expect_grad(w, D(1.5, 2, -3), 0);       /* f64 */
    /* With broadcasting too: f32 [2, 1] + f64 [3]. */
    tt_tensor *a = leaf(2, A(2, 1), TT_F32, D(1, 2));
    tt_tensor *b = leaf(1, A(3), TT_F64, D(1, 2, 3));
    tt_tensor *ab = ok(tt_div(a, b));
    tt_tensor *gab = ok(tt_ones(2, A(2, 3), TT_F64));
    OK(tt_backward(ab, gab));
    expect_grad(a, D(1 + 0.5 + 1.0 / 3, 1 + 0.5 + 1.0 / 3), 1e-6);
    expect_grad(b, D(-3.0 / 1, -3.0 / 4, -3.0 / 9), 1e-12);
    /* An f32 gradient for an f64 output is converted on the way in. */
    tt_tensor *g32 = mk(1, A(3), TT_F32, D(2, 2, 2));
    tt_tensor *y2 = ok(tt_mul_scalar(w, 3));
    OK(tt_set_grad(w, NULL));
    OK(tt_backward(y2, g32));
    expect_grad(w, D(6, 6, 6), 0);
    release_all(10, (tt_tensor *[]){x, w, y, g, a, b, ab, gab, g32, y2});
}
END_TEST

/* --------------------------------------------------------------- no-grad */

START_TEST(test_no_grad)
{
    tt_tensor *x = leaf(1, A(2), TT_F64, D(1, 2));
    ck_assert(tt_grad_enabled());
    tt_no_grad_begin();
    ck_assert(!tt_grad_enabled());
    tt_no_grad_begin();
    ck_assert(!tt_grad_enabled());
    tt_tensor *a = ok(tt_mul(x, x));
    tt_no_grad_end();
    ck_assert(!tt_grad_enabled()); /* still inside the outer scope */
    tt_tensor *b = ok(tt_exp(x));
    tt_tensor *c = ok(tt_add_scalar(x, 1));
    tt_no_grad_end();
    ck_assert(tt_grad_enabled());
    /* tt_backward inside a no-grad scope runs a graph made outside. */
    tt_tensor *e = ok(tt_mul(x, x));
    tt_no_grad_begin();
    OK(tt_backward(e, c));
    ck_assert(!tt_grad_enabled());
    tt_no_grad_end();
    expect_grad(x, D(4, 12), 0);
    tt_release(e);
    tt_tensor *ts[] = {a, b, c};
    for (int i = 0; i < 3; i++) {
        ck_assert(!tt_requires_grad(ts[i]));
        ck_assert(tt_is_leaf(ts[i]));
        ck_assert_ptr_null(tt_grad_fn_name(ts[i]));
    }
    expect(a, 1, A(2), D(1, 4), 0);
    /* An unmatched end is ignored: grad stays on, and a later scope still
     * switches it off. */
    tt_no_grad_end();
    ck_assert(tt_grad_enabled());
    tt_no_grad_begin();
    ck_assert(!tt_grad_enabled());
    tt_no_grad_end();
    ck_assert(tt_grad_enabled());
    /* After the scope, recording resumes. */
    tt_tensor *d = ok(tt_mul(x, x));
    ck_assert(tt_requires_grad(d));
    ck_assert_str_eq(tt_grad_fn_name(d), "tt::mul.Tensor");
    /* Leaves can be updated in place under no-grad (an optimizer step). */
    tt_no_grad_begin();
    OK(tt_add_(x, c));
    tt_no_grad_end();
    ck_assert(tt_is_leaf(x));
    ck_assert(tt_requires_grad(x));
    expect(x, 1, A(2), D(3, 5), 0);
    release_all(5, (tt_tensor *[]){x, a, b, c, d});
}
END_TEST

/* ------------------------------------------- saved tensors and versions */

START_TEST(test_saved_version_check)
{
    for (int how = 0; how < 3; how++) {
        tt_tensor *x = leaf(1, A(3), TT_F64, D(1, 2, 3));
        tt_tensor *w = leaf(1, A(3), TT_F64, D(4, 5, 6));
        tt_tensor *one = mk(1, A(3), TT_F64, D(1, 1, 1));
        tt_tensor *y = ok(tt_mul(x, w));
        ck_assert_uint_eq(tt_version(w), 0);
        tt_no_grad_begin();
        if (how == 0)
            OK(tt_mul_scalar_(w, 2));
        else if (how == 1)
            OK(tt_add_(w, one));
        else
            OK(tt_add_(x, one));
        tt_no_grad_end();
        ck_assert_int_eq(tt_backward(y, one), TT_EAUTOGRAD);
        ck_assert_error(TT_EAUTOGRAD, "tt::mul.Tensor: one of the tensors needed for "
                                      "gradient computation has been modified by an "
                                      "in-place operation");
        ck_assert_error(TT_EAUTOGRAD, how == 2 ? "saved tensor #0 (f64[3]) is at version 1; "
                                                 "expected version 0"
                                               : "saved tensor #1 (f64[3]) is at version 1; "
                                                 "expected version 0");
        ck_assert_ptr_null(tt_get_grad(x));
        ck_assert_ptr_null(tt_get_grad(w));
        release_all(4, (tt_tensor *[]){x, w, one, y});
    }
}
END_TEST

/* A write to a tensor that no backward reads is no error (PyTorch saves
 * only what a formula needs). */
START_TEST(test_unsaved_writes_allowed)
{
    tt_tensor *x = leaf(1, A(3), TT_F64, D(1, -2, 3));
    tt_tensor *w = leaf(1, A(3), TT_F64, D(4, 5, 6));
    tt_tensor *one = mk(1, A(3), TT_F64, D(1, 1, 1));
    /* add saves nothing. */
    tt_tensor *y = ok(tt_add(x, w));
    tt_no_grad_begin();
    OK(tt_mul_scalar_(w, 2));
    tt_no_grad_end();
    OK(tt_backward(y, one));
    expect_grad(x, D(1, 1, 1), 0);
    /* mul.Scalar needs only the scalar; sin needs its input, not its
     * output: their outputs may be written in place afterwards. */
    tt_tensor *a = ok(tt_mul_scalar(x, 3));
    tt_tensor *b = ok(tt_sin(x));
    tt_no_grad_begin();
    OK(tt_add_(a, one));
    OK(tt_add_(b, one));
    tt_no_grad_end();
    OK(tt_set_grad(x, NULL));
    OK(tt_backward(a, one));
    expect_grad(x, D(3, 3, 3), 0);
    OK(tt_set_grad(x, NULL));
    OK(tt_backward(b, one));
    expect_grad(x, D(cos(1), cos(-2), cos(3)), 1e-15);
    /* mul saves self only when other needs a gradient. */
    tt_tensor *p = mk(1, A(3), TT_F64, D(2, 2, 2));
    tt_tensor *c = ok(tt_mul(x, p));
    tt_no_grad_begin();
    OK(tt_add_(x, one));
    tt_no_grad_end();
    OK(tt_set_grad(x, NULL));
    OK(tt_backward(c, one));
    expect_grad(x, D(2, 2, 2), 0);
    release_all(8, (tt_tensor *[]){x, w, one, y, a, b, p, c});
}
END_TEST

/* Which of input and output each unary op saves (PyTorch's choice): a
 * write to a saved one fails the backward, a write to the other does not. */
START_TEST(test_unary_saved_tensors)
{
    static const struct {
        tt_tensor *(*fn)(const tt_tensor *);
        const char *name;
        bool input, output;
    } cases[] = {
        {tt_neg, "tt::neg", false, false},     {tt_exp, "tt::exp", false, true},
        {tt_log, "tt::log", true, false},      {tt_sqrt, "tt::sqrt", false, true},
        {tt_rsqrt, "tt::rsqrt", false, true},  {tt_sin, "tt::sin", true, false},
        {tt_cos, "tt::cos", true, false},      {tt_tanh, "tt::tanh", false, true},
        {tt_sigmoid, "tt::sigmoid", false, true}, {tt_relu, "tt::relu", false, true},
        {tt_gelu, "tt::gelu", true, false},    {tt_abs, "tt::abs", true, false},
    };
    for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++)
        for (int write_out = 0; write_out < 2; write_out++) {
            tt_tensor *x = leaf(1, A(2), TT_F64, D(0.5, 2));
            tt_tensor *g = mk(1, A(2), TT_F64, D(1, 1));
            tt_tensor *h = ok(tt_mul_scalar(x, 1)); /* a non-leaf input */
            tt_tensor *y = ok(cases[i].fn(h));
            tt_no_grad_begin();
            OK(tt_mul_scalar_(write_out ? y : h, 1));
            tt_no_grad_end();
            bool saved = write_out ? cases[i].output : cases[i].input;
            tt_status st = tt_backward(y, g);
            ck_assert_msg(st == (saved ? TT_EAUTOGRAD : TT_OK), "%s, write to %s: %s",
                          cases[i].name, write_out ? "output" : "input", tt_errmsg());
            if (saved) {
                char want[128];
                snprintf(want, sizeof want, "%s: one of the tensors needed", cases[i].name);
                ck_assert_error(TT_EAUTOGRAD, want);
                ck_assert_error(TT_EAUTOGRAD, write_out ? "saved tensor #1" : "saved tensor #0");
            }
            release_all(4, (tt_tensor *[]){x, g, h, y});
        }
}
END_TEST

START_TEST(test_second_backward)
{
    tt_tensor *x = leaf(1, A(2), TT_F64, D(1, 2));
    tt_tensor *w = leaf(1, A(2), TT_F64, D(3, 4));
    tt_tensor *g = mk(1, A(2), TT_F64, D(1, 1));
    tt_tensor *y = ok(tt_mul(x, w));
    OK(tt_backward(y, g));
    ck_assert_int_eq(tt_backward(y, g), TT_EAUTOGRAD);
    ck_assert_error(TT_EAUTOGRAD, "tt::mul.Tensor: trying to backward through the graph a "
                                  "second time");
    expect_grad(x, D(3, 4), 0); /* unchanged by the failed call */
    /* tt_grad frees the graph too. */
    tt_tensor *z = ok(tt_mul(x, w)), *gz;
    OK(tt_grad(1, &z, &g, 1, &x, &gz));
    tt_release(gz);
    ck_assert_int_eq(tt_grad(1, &z, &g, 1, &x, &gz), TT_EAUTOGRAD);
    ck_assert_error(TT_EAUTOGRAD, "backward through the graph a second time");
    ck_assert_ptr_null(gz);
    /* A graph that saved nothing can be run again (as in PyTorch). */
    tt_tensor *s = ok(tt_add(x, w));
    OK(tt_set_grad(x, NULL));
    OK(tt_backward(s, g));
    OK(tt_backward(s, g));
    expect_grad(x, D(2, 2), 0);
    release_all(6, (tt_tensor *[]){x, w, g, y, z, s});
}
END_TEST

/* Saved tensors are released by backward even while the outputs live. */
START_TEST(test_saved_freed_after_backward)
{
    tt_tensor *x = leaf(1, A(2), TT_F64, D(1, 2));
    tt_tensor *w = leaf(1, A(2), TT_F64, D(3, 4));
    tt_tensor *g = mk(1, A(2), TT_F64, D(1, 1));
    int64_t base = tt_live_tensors();
    tt_tensor *y = ok(tt_mul(x, w));
    ck_assert_int_gt(tt_live_tensors(), base + 1); /* y and its saved tensors */
    OK(tt_backward(y, g));
    /* y, x.grad and w.grad */
    ck_assert_int_eq(tt_live_tensors(), base + 3);
    release_all(4, (tt_tensor *[]){x, w, g, y});
}
END_TEST

/* ---------------------------------------------------------------- in place */

START_TEST(test_inplace_on_leaf)
{
    tt_tensor *x = leaf(1, A(2), TT_F64, D(-1, 2));
    tt_tensor *o = mk(1, A(2), TT_F64, D(1, 1));
    ck_assert_int_eq(tt_add_(x, o), TT_EAUTOGRAD);
    ck_assert_error(TT_EAUTOGRAD, "tt::add_.Tensor: argument 'self' is a leaf tensor that "
                                  "requires grad and cannot be written in place");
    ck_assert_int_eq(tt_sub_(x, o), TT_EAUTOGRAD);
    ck_assert_error(TT_EAUTOGRAD, "tt::sub_.Tensor: argument 'self' is a leaf tensor");
    ck_assert_int_eq(tt_div_(x, o), TT_EAUTOGRAD);
    ck_assert_error(TT_EAUTOGRAD, "tt::div_.Tensor: argument 'self' is a leaf tensor");
    ck_assert_int_eq(tt_mul_scalar_(x, 2), TT_EAUTOGRAD);
    ck_assert_error(TT_EAUTOGRAD, "tt::mul_.Scalar: argument 'self' is a leaf tensor");
    ck_assert_int_eq(tt_relu_(x), TT_EAUTOGRAD);
    ck_assert_error(TT_EAUTOGRAD, "tt::relu_: argument 'self' is a leaf tensor");
    ck_assert_int_eq(tt_zero_(x), TT_EAUTOGRAD);
    ck_assert_error(TT_EAUTOGRAD, "tt::zero_: argument 'self' is a leaf tensor");
    ck_assert_int_eq(tt_mul_(x, o), TT_EAUTOGRAD);
    ck_assert_error(TT_EAUTOGRAD, "tt::mul_.Tensor: argument 'self' is a leaf tensor");
    /* Nothing was written. */
    ck_assert_uint_eq(tt_version(x), 0);
    expect(x, 1, A(2), D(-1, 2), 0);
    ck_assert(tt_is_leaf(x));
    release_all(2, (tt_tensor *[]){x, o});
}
END_TEST

START_TEST(test_inplace_on_nonleaf)
{
    tt_tensor *x = leaf(1, A(4), TT_F64, D(-1, 2, -3, 4));
    tt_tensor *g = mk(1, A(4), TT_F64, D(1, 1, 1, 1));
    /* x * 2 then relu_: d/dx = 2 [x > 0]. */
    tt_tensor *y = ok(tt_mul_scalar(x, 2));
    OK(tt_relu_(y));
    ck_assert_str_eq(tt_grad_fn_name(y), "tt::relu_");
    ck_assert(!tt_is_leaf(y));
    expect(y, 1, A(4), D(0, 4, 0, 8), 0);
    OK(tt_backward(y, g));
    expect_grad(x, D(0, 2, 0, 2), 0);
    tt_release(y);
    /* x * w then relu_ (mul.Tensor's output is written after it ran). */
    tt_tensor *w = leaf(1, A(4), TT_F64, D(1, 1, -1, -1));
    y = ok(tt_mul(x, w));
    OK(tt_relu_(y));
    OK(tt_set_grad(x, NULL));
    OK(tt_backward(y, g));
    expect_grad(x, D(0, 1, -1, 0), 0);
    expect_grad(w, D(0, 2, -3, 0), 0);
    tt_release(y);
    /* x * 2 then add_(b): history is rebased, b gets the gradient too. */
    tt_tensor *b = leaf(1, A(4), TT_F64, D(1, 1, 1, 1));
    y = ok(tt_mul_scalar(x, 2));
    OK(tt_add_scaled_(y, b, 3));
    ck_assert_str_eq(tt_grad_fn_name(y), "tt::add_.Tensor");
    expect(y, 1, A(4), D(1, 7, -3, 11), 0);
    OK(tt_set_grad(x, NULL));
    OK(tt_backward(y, g));
    expect_grad(x, D(2, 2, 2, 2), 0);
    expect_grad(b, D(3, 3, 3, 3), 0);
    tt_release(y);
    /* sub_, mul_.Scalar and div_ on non-leaves. */
    y = ok(tt_add_scalar(x, 0));
    OK(tt_sub_(y, b));
    OK(tt_mul_scalar_(y, -2));
    OK(tt_div_(y, w));
    ck_assert_str_eq(tt_grad_fn_name(y), "tt::div_.Tensor");
    /* y = -2 (x - b) / w */
    OK(tt_set_grad(x, NULL));
    OK(tt_set_grad(w, NULL));
    OK(tt_set_grad(b, NULL));
    OK(tt_backward(y, g));
    double xv[4] = {-1, 2, -3, 4}, wv[4] = {1, 1, -1, -1}, gx[4], gw[4], gb[4];
    for (int k = 0; k < 4; k++) {
        gx[k] = -2 / wv[k];
        gb[k] = 2 / wv[k];
        gw[k] = 2 * (xv[k] - 1) / (wv[k] * wv[k]);
    }
    expect_grad(x, gx, 1e-15);
    expect_grad(w, gw, 1e-15);
    expect_grad(b, gb, 1e-15);
    tt_release(y);
    /* mul_ on a non-leaf that requires grad: d/dself = other. */
    y = ok(tt_mul_scalar(x, 2));
    OK(tt_mul_(y, g));
    ck_assert_str_eq(tt_grad_fn_name(y), "tt::mul_.Tensor");
    OK(tt_set_grad(x, NULL));
    OK(tt_backward(y, g));
    expect_grad(x, D(2, 2, 2, 2), 0); /* 2 * g * g, g all ones */
    tt_release(y);
    /* ... or with only `other` requiring grad: d/dother = self before
     * the write (the copy autograd keeps), not the product. */
    tt_tensor *p = mk(1, A(4), TT_F64, D(1, 2, 3, 4));
    OK(tt_mul_(p, x));
    ck_assert_str_eq(tt_grad_fn_name(p), "tt::mul_.Tensor");
    OK(tt_set_grad(x, NULL));
    OK(tt_backward(p, g));
    expect_grad(x, D(1, 2, 3, 4), 0);
    tt_release(p);
    p = mk(1, A(4), TT_F64, D(1, 2, 3, 4));
    /* A tensor that did not require grad starts to, by an in-place op
     * with an input that does. */
    OK(tt_add_(p, x));
    ck_assert(tt_requires_grad(p));
    ck_assert_str_eq(tt_grad_fn_name(p), "tt::add_.Tensor");
    OK(tt_set_grad(x, NULL));
    OK(tt_backward(p, g));
    expect_grad(x, D(1, 1, 1, 1), 0);
    release_all(5, (tt_tensor *[]){x, g, w, b, p});
}
END_TEST

/* An in-place write to a non-leaf that an earlier node saved is caught. */
START_TEST(test_inplace_invalidates_saved)
{
    tt_tensor *x = leaf(1, A(2), TT_F64, D(1, 2));
    tt_tensor *g = mk(1, A(2), TT_F64, D(1, 1));
    tt_tensor *h = ok(tt_add_scalar(x, 1));
    tt_tensor *y = ok(tt_mul(h, h)); /* saves h */
    OK(tt_relu_(h));                 /* bumps h */
    ck_assert_int_eq(tt_backward(y, g), TT_EAUTOGRAD);
    ck_assert_error(TT_EAUTOGRAD, "tt::mul.Tensor: one of the tensors needed for gradient "
                                  "computation has been modified by an in-place operation");
    ck_assert_error(TT_EAUTOGRAD, "is at version 1; expected version 0");
    /* h itself still backpropagates through relu_ and add. */
    OK(tt_backward(h, g));
    expect_grad(x, D(1, 1), 0);
    /* div_ saves its result (setup_context sees inputs after the write,
     * so the old self is gone): a later write to it is caught. */
    tt_tensor *w = leaf(1, A(2), TT_F64, D(2, 4));
    tt_tensor *z = ok(tt_add_scalar(x, 0));
    OK(tt_div_(z, w));
    OK(tt_add_(z, g));
    ck_assert_int_eq(tt_backward(z, g), TT_EAUTOGRAD);
    ck_assert_error(TT_EAUTOGRAD, "tt::div_.Tensor: one of the tensors needed for gradient "
                                  "computation has been modified by an in-place operation");
    release_all(6, (tt_tensor *[]){x, g, h, y, w, z});
}
END_TEST

/* ------------------------------------------------------------- gradcheck */

static tt_tensor *call3(const char *op, const tt_tensor *a, const tt_tensor *b, tt_value c)
{
    tt_value args[] = {tt_v_tensor(a), tt_v_tensor(b), c};
    return tt_op_call1(tt_op_find(op), args, 3);
}

static tt_tensor *call2s(const char *op, const tt_tensor *a, tt_value s)
{
    tt_value args[] = {tt_v_tensor(a), s};
    return tt_op_call1(tt_op_find(op), args, 2);
}

static tt_tensor *add_scalar_alpha(const tt_tensor *a, double s, double alpha)
{
    tt_value args[] = {tt_v_tensor(a), tt_v_float(s), tt_v_float(alpha)};
    return tt_op_call1(tt_op_find("tt::add.Scalar"), args, 3);
}

FN2(f_add, tt_add(a, b))
FN2(f_add_alpha, tt_add_scaled(a, b, -2.5))
FN2(f_sub, tt_sub(a, b))
FN2(f_sub_alpha, call3("tt::sub.Tensor", a, b, tt_v_float(0.75)))
FN2(f_mul, tt_mul(a, b))
FN2(f_div, tt_div(a, b))
FN2(f_pow, tt_pow(a, b))
FN1(f_add_s, tt_add_scalar(a, 1.5))
FN1(f_add_s_alpha, add_scalar_alpha(a, 1.5, 3))
FN1(f_sub_s, tt_sub_scalar(a, -0.5))
FN1(f_mul_s, tt_mul_scalar(a, -1.25))
FN1(f_mul_s_int, call2s("tt::mul.Scalar", a, tt_v_int(3)))
FN1(f_div_s, tt_div_scalar(a, 0.4))
FN1(f_pow_s, tt_pow_scalar(a, 2.5))
FN1(f_pow_s3, tt_pow_scalar(a, 3))
FN1(f_pow_sneg, tt_pow_scalar(a, -1.5))
FN1(f_pow_s0, tt_pow_scalar(a, 0))
FN1(f_neg, tt_neg(a))
FN1(f_exp, tt_exp(a))
FN1(f_log, tt_log(a))
FN1(f_sqrt, tt_sqrt(a))
FN1(f_rsqrt, tt_rsqrt(a))
FN1(f_sin, tt_sin(a))
FN1(f_cos, tt_cos(a))
FN1(f_tanh, tt_tanh(a))
FN1(f_sigmoid, tt_sigmoid(a))
FN1(f_relu, tt_relu(a))
FN1(f_gelu, tt_gelu(a))
FN1(f_abs, tt_abs(a))
FN1(f_clamp, tt_clamp(a, -0.5, 0.5))
FN1(f_clamp_min, tt_clamp(a, -0.5, NAN))
FN1(f_clamp_max, tt_clamp(a, NAN, 0.5))

/* where(a > 0, a, b): the condition is made inside, from a. */
static tt_status f_where(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_tensor *z = tt_zeros(0, NULL, TT_F64);
    tt_tensor *c = z ? tt_gt(in[0], z) : NULL;
    out[0] = c ? tt_where(c, in[0], in[1]) : NULL;
    tt_release(c);
    tt_release(z);
    return out[0] ? TT_OK : tt_errcode();
}

/* A composite with two outputs. */
static tt_status f_two(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_scope_begin();
    out[0] = tt_keep(tt_mul(tt_sin(in[0]), tt_exp(in[1])));
    out[1] = tt_keep(tt_div(tt_tanh(in[1]), tt_add_scalar(tt_mul(in[0], in[0]), 1)));
    tt_scope_end();
    return out[0] && out[1] ? TT_OK : tt_errcode();
}

typedef struct {
    const char *name;
    tt_fn fn;
    int nin;
    domain dom[2];
} gc_case;

static const gc_case gc_cases[] = {
    {"add", f_add, 2, {DOM_ANY, DOM_ANY}},
    {"add alpha", f_add_alpha, 2, {DOM_ANY, DOM_ANY}},
    {"sub", f_sub, 2, {DOM_ANY, DOM_ANY}},
    {"sub alpha", f_sub_alpha, 2, {DOM_ANY, DOM_ANY}},
    {"mul", f_mul, 2, {DOM_ANY, DOM_ANY}},
    {"div", f_div, 2, {DOM_ANY, DOM_SMALLPOS}},
    {"pow", f_pow, 2, {DOM_POS, DOM_ANY}},
    {"add.Scalar", f_add_s, 1, {DOM_ANY}},
    {"add.Scalar alpha", f_add_s_alpha, 1, {DOM_ANY}},
    {"sub.Scalar", f_sub_s, 1, {DOM_ANY}},
    {"mul.Scalar", f_mul_s, 1, {DOM_ANY}},
    {"mul.Scalar int", f_mul_s_int, 1, {DOM_ANY}},
    {"div.Scalar", f_div_s, 1, {DOM_ANY}},
    {"pow.Scalar 2.5", f_pow_s, 1, {DOM_POS}},
    {"pow.Scalar 3", f_pow_s3, 1, {DOM_ANY}},
    {"pow.Scalar -1.5", f_pow_sneg, 1, {DOM_POS}},
    {"pow.Scalar 0", f_pow_s0, 1, {DOM_ANY}},
    {"neg", f_neg, 1, {DOM_ANY}},
    {"exp", f_exp, 1, {DOM_ANY}},
    {"log", f_log, 1, {DOM_POS}},
    {"sqrt", f_sqrt, 1, {DOM_POS}},
    {"rsqrt", f_rsqrt, 1, {DOM_POS}},
    {"sin", f_sin, 1, {DOM_ANY}},
    {"cos", f_cos, 1, {DOM_ANY}},
    {"tanh", f_tanh, 1, {DOM_ANY}},
    {"sigmoid", f_sigmoid, 1, {DOM_ANY}},
    {"relu", f_relu, 1, {DOM_AWAY0}},
    {"gelu", f_gelu, 1, {DOM_ANY}},
    {"abs", f_abs, 1, {DOM_AWAY0}},
    {"clamp", f_clamp, 1, {DOM_CLAMP}},
    {"clamp min", f_clamp_min, 1, {DOM_CLAMP}},
    {"clamp max", f_clamp_max, 1, {DOM_CLAMP}},
    {"where", f_where, 2, {DOM_AWAY0, DOM_ANY}},
};
#define NGC (int)(sizeof gc_cases / sizeof gc_cases[0])

/* Input shapes: same shape, broadcast against a row, 0-dim, and a
 * transposed (non-contiguous) first input. */
enum { SH_SAME, SH_ROW, SH_0DIM, SH_T, SH_COUNT };

static tt_tensor *gc_input(int shape, int which, domain dom)
{
    switch (shape) {
    case SH_ROW:
        return which == 0 ? rand_leaf(2, A(2, 3), dom) : rand_leaf(1, A(3), dom);
    case SH_0DIM:
        return which == 0 ? rand_leaf(0, NULL, dom) : rand_leaf(2, A(2, 2), dom);
    case SH_T:
        if (which == 0) {
            tt_tensor *base = rand_leaf(2, A(3, 2), dom);
            OK(tt_set_requires_grad(base, false));
            tt_tensor *t = ok(tt_t(base));
            tt_release(base);
            ck_assert(!tt_is_contiguous(t));
            OK(tt_set_requires_grad(t, true));
            return t;
        }
        return rand_leaf(2, A(2, 3), dom);
    default:
        return rand_leaf(2, A(2, 3), dom);
    }
}

START_TEST(test_gradcheck_ops)
{
    int i = _i / SH_COUNT, shape = _i % SH_COUNT;
    const gc_case *c = &gc_cases[i];
    tt_tensor *in[2] = {NULL, NULL};
    for (int k = 0; k < c->nin; k++)
        in[k] = gc_input(shape, k, c->dom[k]);
    tt_status st = tt_gradcheck(c->fn, c->nin, in, 1, NULL, NULL);
    ck_assert_msg(st == TT_OK, "%s (shape case %d): %s", c->name, shape, tt_errmsg());
    /* The values were restored and nothing leaked into .grad. */
    for (int k = 0; k < c->nin; k++) {
        ck_assert_ptr_null(tt_get_grad(in[k]));
        ck_assert_uint_eq(tt_version(in[k]), 0);
    }
    release_all(c->nin, in);
}
END_TEST

START_TEST(test_gradcheck_composite)
{
    tt_tensor *in[2] = {rand_leaf(2, A(2, 2), DOM_ANY), rand_leaf(1, A(2), DOM_ANY)};
    OK(tt_gradcheck(f_two, 2, in, 2, NULL, NULL));
    /* Only one input requiring grad: the other is a constant. */
    OK(tt_set_requires_grad(in[1], false));
    OK(tt_gradcheck(f_two, 2, in, 2, NULL, NULL));
    release_all(2, in);
}
END_TEST

/* gradcheck can fail: a function that hides one input from autograd. */
static tt_status f_hidden(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_tensor *d = tt_detach(in[1]);
    out[0] = d ? tt_mul(in[0], d) : NULL;
    tt_release(d);
    return out[0] ? TT_OK : tt_errcode();
}

START_TEST(test_gradcheck_detects_error)
{
    tt_tensor *in[2] = {rand_leaf(1, A(3), DOM_POS), rand_leaf(1, A(3), DOM_POS)};
    ck_assert_int_eq(tt_gradcheck(f_hidden, 2, in, 1, NULL, NULL), TT_EAUTOGRAD);
    ck_assert_error(TT_EAUTOGRAD, "tt_gradcheck: Jacobian mismatch for output 0 with respect "
                                  "to input 1 at input element 0, output element 0");
    ck_assert_error(TT_EAUTOGRAD, "analytical 0 ");
    release_all(2, in);
}
END_TEST

/* ------------------------------------------------------ deep and wide */

#define DEEP 20000

START_TEST(test_deep_chain)
{
    tt_tensor *x = leaf(1, A(4), TT_F64, D(1, 2, 3, 4));
    tt_tensor *y = tt_retain(x);
    for (int i = 0; i < DEEP; i++) {
        tt_tensor *n = ok(tt_add_scalar(y, 1));
        tt_release(y);
        y = n;
    }
    expect(y, 1, A(4), D(DEEP + 1, DEEP + 2, DEEP + 3, DEEP + 4), 0);
    tt_tensor *g = mk(1, A(4), TT_F64, D(1, 2, 3, 4));
    OK(tt_backward(y, g));
    expect_grad(x, D(1, 2, 3, 4), 0);
    tt_release(y); /* frees DEEP nodes */
    /* A deep chain released without backward. */
    y = tt_retain(x);
    for (int i = 0; i < DEEP; i++) {
        tt_tensor *n = ok(tt_mul_scalar(y, 1));
        tt_release(y);
        y = n;
    }
    tt_release(y);
    ck_assert_int_eq(tt_live_tensors(), 3); /* x, x.grad and g */
    release_all(2, (tt_tensor *[]){x, g});
}
END_TEST

/* A chain c_k = s_k + c_(k-1), s_k = x_k + n, x_k = l_k + n with one
 * shared non-leaf n. Releasing it queues many nodes at once and meets n
 * twice in a row from dying nodes: a release that queued a node before
 * dropping its count would queue n twice and lose the rest of the chain
 * (the leaf it holds would stay alive). */
START_TEST(test_shared_node_release)
{
    for (int with_backward = 0; with_backward < 2; with_backward++) {
        tt_tensor *x = leaf(1, A(2), TT_F64, D(1, -1));
        tt_tensor *n = ok(tt_mul_scalar(x, 2));
        tt_tensor *c = ok(tt_add_scalar(x, 0));
        for (int k = 0; k < 300; k++) {
            tt_tensor *l = ok(tt_add_scalar(x, 0));
            tt_tensor *xk = ok(tt_add(l, n));
            tt_tensor *s = ok(tt_add(xk, n));
            tt_tensor *c2 = ok(tt_add(s, c));
            release_all(4, (tt_tensor *[]){l, xk, s, c});
            c = c2;
        }
        tt_release(n);
        if (with_backward) {
            tt_tensor *g = mk(1, A(2), TT_F64, D(1, 1));
            OK(tt_backward(c, g));
            /* c = x + 300 (x + 2 (2 x)) = 1501 x */
            expect_grad(x, D(1501, 1501), 0);
            tt_release(g);
            OK(tt_set_grad(x, NULL));
        }
        tt_release(c);
        tt_release(x);
        ck_assert_int_eq(tt_live_tensors(), 0);
    }
}
END_TEST

/* A wide graph: one leaf feeding many nodes. */
START_TEST(test_wide_graph)
{
    tt_tensor *x = leaf(1, A(3), TT_F64, D(1, 2, 3));
    tt_tensor *acc = ok(tt_mul_scalar(x, 0));
    for (int i = 1; i <= 500; i++) {
        tt_tensor *t = ok(tt_mul_scalar(x, i));
        tt_tensor *n = ok(tt_add(acc, t));
        tt_release(t);
        tt_release(acc);
        acc = n;
    }
    tt_tensor *g = mk(1, A(3), TT_F64, D(1, 1, 1));
    OK(tt_backward(acc, g));
    expect_grad(x, D(125250, 125250, 125250), 0);
    release_all(3, (tt_tensor *[]){x, acc, g});
}
END_TEST

/* ------------------------------------------------------------ memory */

START_TEST(test_graph_freed_without_backward)
{
    tt_tensor *x = leaf(1, A(3), TT_F64, D(1, 2, 3));
    tt_tensor *w = leaf(1, A(3), TT_F64, D(4, 5, 6));
    ck_assert_int_eq(tt_live_tensors(), 2);
    tt_scope_begin();
    tt_tensor *y = tt_exp(tt_sin(tt_div(tt_mul(x, w), tt_add_scalar(w, 1))));
    tt_keep(y);
    tt_scope_end();
    ck_assert_ptr_nonnull(y);
    /* y, plus saved tensors held by its graph. */
    ck_assert_int_gt(tt_live_tensors(), 3);
    tt_release(y);
    ck_assert_int_eq(tt_live_tensors(), 2);
    /* The graph held the leaves (and only through it were they alive). */
    y = ok(tt_mul(x, w));
    tt_release(x);
    tt_release(w);
    ck_assert_int_gt(tt_live_tensors(), 0);
    tt_release(y);
}
END_TEST

/* Every allocation on the recording and backward paths can fail: the
 * call reports it and nothing leaks (the fixture counts tensors). */
START_TEST(test_alloc_failures)
{
    int fails[2] = {0, 0};
    for (int phase = 0; phase < 2; phase++) {
        bool done = false;
        for (int n = 1; n < 400 && !done; n++) {
            tt_tensor *x = leaf(1, A(3), TT_F64, D(1, 2, 3));
            tt_tensor *w = leaf(1, A(3), TT_F64, D(4, 5, 6));
            tt_tensor *g = mk(1, A(3), TT_F64, D(1, 1, 1));
            tt_tensor *c = leaf(1, A(1), TT_F64, D(0.5)), *z = NULL;
            tt_tensor *h = NULL, *y = NULL;
            tt_status st;
            if (phase == 0) { /* recording */
                tt_debug_fail_alloc(n);
                h = tt_mul(x, w);
                y = h ? tt_exp(h) : NULL;
                tt_debug_fail_alloc(0);
                st = y ? TT_OK : tt_errcode();
            } else { /* backward */
                /* broadcast reduction (c) and accumulation into an
                 * existing .grad (x) */
                h = ok(tt_mul(x, w));
                y = ok(tt_exp(h));
                z = ok(tt_add(y, c));
                tt_tensor *zero = mk(1, A(3), TT_F64, D(0, 0, 0));
                OK(tt_set_grad(x, zero));
                tt_release(zero);
                tt_debug_fail_alloc(n);
                st = tt_backward(z, g);
                tt_debug_fail_alloc(0);
            }
            if (st) {
                ck_assert_int_eq(st, TT_ENOMEM);
                ck_assert_error(TT_ENOMEM, "");
                fails[phase]++;
            } else {
                done = true;
                if (phase == 1) {
                    expect_grad(w, D(exp(4), 2 * exp(10), 3 * exp(18)), 1e-12);
                    expect_grad(x, D(4 * exp(4), 5 * exp(10), 6 * exp(18)), 1e-12);
                    expect_grad(c, D(3), 0);
                }
            }
            release_all(7, (tt_tensor *[]){x, w, g, h, y, c, z});
            ck_assert_int_eq(tt_live_tensors(), 0);
        }
        ck_assert(done);
    }
    ck_assert_int_ge(fails[0], 4);
    ck_assert_int_ge(fails[1], 4);
}
END_TEST

/* -------------------------------------------------------------- suite */

/* ------------------------------------------------- gradient-ready hook */

typedef struct {
    tt_tensor *leaf[4];
    double grad0[4]; /* element 0 of the leaf's .grad when the hook ran */
    int n;
    bool fail;
} ready_log;

static tt_status log_ready(tt_tensor *leaf, void *ud)
{
    ready_log *log = ud;
    ck_assert_int_lt(log->n, 4);
    ck_assert(!tt_grad_enabled()); /* runs inside the engine, in no-grad */
    tt_tensor *g = ok(tt_get_grad(leaf));
    log->leaf[log->n] = leaf;
    log->grad0[log->n++] = at(g, 0);
    tt_release(g);
    if (log->fail)
        return tt_error(TT_EINVAL, "log_ready: refusing the gradient");
    return TT_OK;
}

/* loss = sum((a*a + a) * b): b's only edge runs first; a has two nodes
 * (and one of them uses it twice), so its hook runs once, after both, with
 * its final gradient. */
START_TEST(test_grad_ready_hook)
{
    tt_tensor *a = leaf(1, A(2), TT_F32, D(1, 2)), *b = leaf(1, A(2), TT_F32, D(3, 4));
    ready_log log = {0};
    tt_set_grad_ready_hook(log_ready, &log);
    tt_scope_begin();
    tt_tensor *loss = ok(tt_sum_all(ok(tt_mul(ok(tt_add(ok(tt_mul(a, a)), a)), b))));
    ck_assert_int_eq(tt_backward(loss, NULL), TT_OK);
    tt_scope_end();
    ck_assert_int_eq(log.n, 2);
    ck_assert_ptr_eq(log.leaf[0], b);
    ck_assert_ptr_eq(log.leaf[1], a);
    ck_assert_double_eq(log.grad0[0], 2.0);      /* d/db0 = a0*a0 + a0 */
    ck_assert_double_eq(log.grad0[1], 3.0 * 3.0); /* d/da0 = (2*a0 + 1) * b0 */
    /* tt_grad leaves .grad alone and never calls the hook. */
    tt_scope_begin();
    tt_tensor *l2 = ok(tt_sum_all(ok(tt_mul(a, b)))), *ga = NULL;
    ck_assert_int_eq(tt_grad(1, &l2, NULL, 1, &a, &ga), TT_OK);
    tt_scope_end();
    ck_assert_int_eq(log.n, 2);
    /* A leaf that is the loss itself. */
    tt_tensor *c = leaf(0, NULL, TT_F32, D(5));
    ck_assert_int_eq(tt_backward(c, NULL), TT_OK);
    ck_assert_int_eq(log.n, 3);
    ck_assert_ptr_eq(log.leaf[2], c);
    /* A failing hook fails the backward with its own error. */
    log = (ready_log){.fail = true};
    tt_scope_begin();
    loss = ok(tt_sum_all(ok(tt_mul(a, b))));
    ck_assert_int_eq(tt_backward(loss, NULL), TT_EINVAL);
    char core[256]; /* without the call site tt_backward's failure adds */
    ck_assert_str_eq(tt_test_errmsg_core(core, sizeof core), "log_ready: refusing the gradient");
    tt_scope_end();
    ck_assert_int_eq(log.n, 1);
    /* Removed: nothing is called. */
    tt_set_grad_ready_hook(NULL, NULL);
    log = (ready_log){0};
    tt_scope_begin();
    ck_assert_int_eq(tt_backward(ok(tt_sum_all(ok(tt_mul(a, b)))), NULL), TT_OK);
    tt_scope_end();
    ck_assert_int_eq(log.n, 0);
    tt_release(a);
    tt_release(b);
    tt_release(c);
    ck_assert_int_eq(tt_live_tensors(), 0);
}
END_TEST

static Suite *autograd_suite(void)
{
    Suite *s = suite_create("autograd");
    TCase *tc = tt_tcase("requires_grad");
    tcase_add_test(tc, test_requires_grad_dtypes);
    tcase_add_test(tc, test_only_leaves_switch);
    tcase_add_test(tc, test_grad_fn_names);
    tcase_add_test(tc, test_leaf_repeated_in_cat);
    tcase_add_test(tc, test_grad_same_tensor_in_scope);
    tcase_add_test(tc, test_integer_results);
    suite_add_tcase(s, tc);

    tc = tt_tcase("backward");
    tcase_add_test(tc, test_backward_implicit_scalar);
    tcase_add_test(tc, test_backward_explicit_grad);
    tcase_add_test(tc, test_backward_errors);
    tcase_add_test(tc, test_grad_accumulates);
    tcase_add_test(tc, test_two_paths);
    suite_add_tcase(s, tc);

    tc = tt_tcase("tt_grad");
    tcase_add_test(tc, test_grad_leaves_and_intermediates);
    tcase_add_test(tc, test_grad_multiple_outputs);
    tcase_add_test(tc, test_grad_many);
    tcase_add_test(tc, test_grad_errors);
    suite_add_tcase(s, tc);

    tc = tt_tcase("broadcast_dtype");
    tcase_add_test(tc, test_broadcast_row);
    tcase_add_test(tc, test_broadcast_outer);
    tcase_add_test(tc, test_broadcast_0dim);
    tcase_add_test(tc, test_broadcast_expanded_input);
    tcase_add_test(tc, test_mixed_dtypes);
    tcase_add_test(tc, test_empty_tensors);
    tcase_add_test(tc, test_fake_tensors);
    suite_add_tcase(s, tc);

    tc = tt_tcase("no_grad_versions");
    tcase_add_test(tc, test_no_grad);
    tcase_add_test(tc, test_saved_version_check);
    tcase_add_test(tc, test_unsaved_writes_allowed);
    tcase_add_test(tc, test_unary_saved_tensors);
    tcase_add_test(tc, test_second_backward);
    tcase_add_test(tc, test_saved_freed_after_backward);
    suite_add_tcase(s, tc);

    tc = tt_tcase("inplace");
    tcase_add_test(tc, test_inplace_on_leaf);
    tcase_add_test(tc, test_inplace_on_nonleaf);
    tcase_add_test(tc, test_inplace_invalidates_saved);
    suite_add_tcase(s, tc);

    tc = tt_tcase("derivatives");
    tcase_add_loop_test(tc, test_gradcheck_ops, 0, NGC * SH_COUNT);
    tcase_add_test(tc, test_gradcheck_composite);
    tcase_add_test(tc, test_gradcheck_detects_error);
    suite_add_tcase(s, tc);

    tc = tt_tcase("graphs");
    tcase_add_test(tc, test_deep_chain);
    tcase_add_test(tc, test_shared_node_release);
    tcase_add_test(tc, test_wide_graph);
    tcase_add_test(tc, test_graph_freed_without_backward);
    tcase_add_test(tc, test_alloc_failures);
    tcase_add_test(tc, test_grad_ready_hook);
    suite_add_tcase(s, tc);
    return s;
}

TT_TEST_MAIN(autograd_suite)
