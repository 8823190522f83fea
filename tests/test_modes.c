/* Dispatcher modes (tt_mode, the hook a tracer is built on): a mode sees
 * every op call, including the runtime's views and an op's inner calls;
 * modes stack and are per thread; pushing bad modes is refused; the data-
 * read hook turns tt_data/tt_item/tt_get/tt_set/tt_to_buffer into graph
 * breaks, for real tensors and, with stand-in memory, for fake ones.
 * Split from test_dispatch.c, whose helpers it shares (dispatch_test.h). */
#include "dispatch_test.h"
#include "mode_test.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------------- modes */

static float stand_in[4] = {7.5f};

static void *rec_fake_data(tt_mode *m, const tt_tensor *t)
{
    (void)m, (void)t;
    return stand_in;
}

/* A custom op whose kernel calls ops itself. */
static tt_status k_inner_calls(tt_frame *f)
{
    tt_tensor *x;
    tt_status st = tt_arg_tensor(f, 0, &x);
    if (st)
        return st;
    tt_tensor *a = tt_add(x, x);
    tt_tensor *b = a ? tt_mul(a, x) : NULL;
    tt_release(a);
    return tt_return(f, 0, b);
}

START_TEST(test_mode_records_calls)
{
    float v[4] = {1, 2, 3, 4};
    tt_tensor *x = vec(4, v);
    tt_library *lib = lib_ok(TT_LIB_DEF, "md");
    tt_op *inner = defop(lib, "md::inner(Tensor x) -> Tensor", k_inner_calls, NULL);
    rec_mode rm;
    rec_init(&rm, NULL);
    const tt_tensor *xs[1] = {x};
    ck_assert(tt_dispatch_is_trivial(1, xs));
    ck_assert_ptr_null(tt_mode_current());
    ck_assert_int_eq(tt_mode_push(&rm.mode), TT_OK);
    ck_assert_ptr_eq(tt_mode_current(), &rm.mode);
    ck_assert(!tt_dispatch_is_trivial(1, xs));

    tt_tensor *a = tt_add(x, x);        /* a typed wrapper leaves the fast path */
    tt_tensor *b = tt_mul_scalar(a, 3); /* the Scalar overload */
    tt_tensor *c = tt_call(inner, tt_v_tensor(b));
    tt_tensor *d = tt_neg(c);
    ck_assert_ptr_nonnull(d);
    /* The custom op is one call: what its kernel did is not seen. */
    ck_assert_str_eq(rm.log, "tt::add.Tensor tt::mul.Scalar md::inner tt::neg");
    ck_assert_int_eq(rm.ncalls, 4);
    ck_assert_ptr_null(rm.current_inside); /* the handler runs with the mode off */
    /* The values are right through the mode: d = -(6x * 6x + ... ) */
    for (int64_t i = 0; i < 4; i++) {
        double got;
        ck_assert_int_eq(tt_get(d, &got, i), TT_OK);
        double b_i = 6 * v[i];
        ck_assert_double_eq(got, -((b_i + b_i) * b_i));
    }
    ck_assert_ptr_eq(tt_mode_pop(), &rm.mode);
    ck_assert_ptr_null(tt_mode_current());
    ck_assert(tt_dispatch_is_trivial(1, xs));
    tt_tensor *e = tt_add(x, x);
    ck_assert_int_eq(rm.ncalls, 4); /* the fast path again: not seen */
    ck_assert_ptr_null(tt_mode_pop());
    tt_release(e);
    tt_release(d);
    tt_release(c);
    tt_release(b);
    tt_release(a);
    tt_library_free(lib);
    tt_release(x);
}
END_TEST

START_TEST(test_mode_sees_runtime_views)
{
    float v[6] = {1, 2, 3, 4, 5, 6};
    tt_tensor *x = tt_from_data(TT_SHAPE(2, 3), TT_F32, v);
    rec_mode rm;
    rec_init(&rm, NULL);
    ck_assert_int_eq(tt_mode_push(&rm.mode), TT_OK);
    tt_tensor *t = tt_transpose(x, 0, 1);
    ck_assert_msg(t != NULL, "%s", tt_errmsg());
    ck_assert_str_eq(rm.log, "tt::transpose.int");
    ck_assert_ptr_eq(tt_mode_pop(), &rm.mode);
    ck_assert(tt_same_storage(t, x));
    ck_assert_int_eq(tt_dim_stride(t, 0), 1);
    ck_assert_int_eq(tt_dim_stride(t, 1), 3);
    tt_release(t);
    tt_release(x);
}
END_TEST

START_TEST(test_mode_stack)
{
    float v[2] = {1, 2};
    tt_tensor *x = vec(2, v);
    rec_mode outer, inner;
    rec_init(&outer, "outer:");
    rec_init(&inner, "inner:");
    ck_assert_int_eq(tt_mode_push(&outer.mode), TT_OK);
    ck_assert_int_eq(tt_mode_push(&inner.mode), TT_OK);
    ck_assert_ptr_eq(tt_mode_current(), &inner.mode);
    tt_tensor *r = tt_exp(x);
    ck_assert_ptr_nonnull(r);
    /* The top mode first; its redispatch reaches the one below. */
    ck_assert_str_eq(inner.log, "inner:tt::exp");
    ck_assert_str_eq(outer.log, "outer:tt::exp");
    ck_assert_ptr_eq(inner.current_inside, &outer.mode);
    ck_assert_ptr_null(outer.current_inside);
    ck_assert_ptr_eq(tt_mode_pop(), &inner.mode);
    ck_assert_ptr_eq(tt_mode_current(), &outer.mode);
    ck_assert_ptr_eq(tt_mode_pop(), &outer.mode);
    tt_release(r);
    tt_release(x);
}
END_TEST

static tt_status bad_push_call(tt_mode *m, const tt_op *op, const tt_value *args, int nargs,
                               tt_value *outs, int nouts)
{
    rec_mode *r = m->ud;
    tt_status st = tt_mode_push(m);
    snprintf(r->log, sizeof r->log, "%s", st ? tt_errmsg() : "pushed");
    r->ncalls += tt_mode_pop() != NULL; /* refused inside a handler too */
    return tt_op_redispatch(op, args, nargs, outs, nouts);
}

static tt_status refusing_call(tt_mode *m, const tt_op *op, const tt_value *args, int nargs,
                               tt_value *outs, int nouts)
{
    (void)m, (void)args, (void)nargs, (void)outs, (void)nouts;
    return tt_error(TT_EGRAPHBREAK, "refused %s", tt_op_name(op));
}

START_TEST(test_mode_push_errors)
{
    ck_assert_int_eq(tt_mode_push(NULL), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_mode_push: argument 'mode' needs a call handler");
    tt_mode empty = {0};
    ck_assert_fails(tt_mode_push(&empty), TT_EINVAL, "needs a call handler");
    ck_assert_ptr_null(tt_mode_pop());

    float v[2] = {1, 2};
    tt_tensor *x = vec(2, v);
    rec_mode rm;
    rec_init(&rm, NULL);
    rm.mode.call = bad_push_call;
    ck_assert_int_eq(tt_mode_push(&rm.mode), TT_OK);
    tt_tensor *r = tt_neg(x);
    ck_assert_ptr_nonnull(r);
    ck_assert_str_eq(rm.log, "tt_mode_push: cannot push a mode from inside a mode's handler or a kernel");
    ck_assert_int_eq(rm.ncalls, 0);
    ck_assert_ptr_eq(tt_mode_pop(), &rm.mode);
    tt_release(r);

    /* A handler that fails the call: the error comes through, no output. */
    tt_mode refuse = {.call = refusing_call};
    ck_assert_int_eq(tt_mode_push(&refuse), TT_OK);
    int64_t live = tt_live_tensors();
    tt_clear_error();
    ck_assert_null_fails(tt_neg(x), TT_EGRAPHBREAK, "refused tt::neg");
    ck_assert_int_eq(tt_live_tensors(), live);
    ck_assert_ptr_eq(tt_mode_pop(), &refuse);

    /* The stack has a depth limit. */
    tt_mode many[17];
    int pushed = 0;
    for (int i = 0; i < 17; i++) {
        many[i] = (tt_mode){.call = refusing_call};
        if (tt_mode_push(&many[i]) == TT_OK)
            pushed++;
    }
    ck_assert_int_eq(pushed, 16);
    ck_assert_error(TT_EINVAL, "tt_mode_push: at most 16 modes can be active");
    for (int i = 0; i < pushed; i++)
        ck_assert_ptr_eq(tt_mode_pop(), &many[pushed - 1 - i]);
    tt_release(x);
}
END_TEST

START_TEST(test_mode_data_read_hook)
{
    float v[1] = {2.5f};
    tt_tensor *x = vec(1, v);
    rec_mode rm;
    rec_init(&rm, NULL);
    ck_assert_int_eq(tt_mode_push(&rm.mode), TT_OK);
    double d;
    ck_assert_ptr_nonnull(tt_data(x));
    ck_assert_int_eq(rm.nreads, 1);
    ck_assert_str_eq(rm.last_what, "tt_data");
    ck_assert_int_eq(tt_item(x, &d), TT_OK);
    ck_assert_double_eq(d, 2.5);
    ck_assert_int_eq(rm.nreads, 2);
    ck_assert_str_eq(rm.last_what, "tt_item");
    /* The hook can fail the read. A graph break still hands over the data
     * (C code that reads without checking must not crash inside a trace),
     * with the break as the error; any other failure gives none. */
    rm.fail_reads = 1;
    tt_clear_error();
    ck_assert_ptr_eq(tt_data(x), tt_data_at(x, (tt_srcloc){0}));
    ck_assert_error(TT_EGRAPHBREAK, "tt_data at ");
    tt_clear_error();
    ck_assert_ptr_nonnull(tt_data(x));
    ck_assert_error(TT_EGRAPHBREAK, "test_modes.c:");
    d = 0;
    ck_assert_fails(tt_item(x, &d), TT_EGRAPHBREAK, "tt_item at ");
    ck_assert_double_eq(d, 2.5);
    d = 0;
    ck_assert_fails(tt_get(x, &d, 0), TT_EGRAPHBREAK, "tt_get at ");
    ck_assert_double_eq(d, 2.5);
    ck_assert_fails(tt_set(x, 1, 0), TT_EGRAPHBREAK, "tt_set at ");
    rm.fail_reads = 2;
    ck_assert_null_fails(tt_data(x), TT_EINVAL, "tt_data at ");
    d = 0;
    ck_assert_fails(tt_item(x, &d), TT_EINVAL, "tt_item at ");
    ck_assert_double_eq(d, 0);
    /* A fake tensor's read reaches the hook too (under tracing it is a
     * graph break, not a bare TT_EFAKE); when the hook lets it pass and
     * the mode has no stand-in memory, the read fails as fake. */
    rm.fail_reads = 0;
    tt_tensor *fx = tt_fake_like(x);
    int before = rm.nreads;
    ck_assert_null_fails(tt_data(fx), TT_EFAKE, "tt_data: cannot access the data of fake f32[1]");
    ck_assert_int_eq(rm.nreads, before + 1);
    rm.fail_reads = 1;
    ck_assert_null_fails(tt_data(fx), TT_EGRAPHBREAK, "tt_data at ");
    /* With stand-in memory, the fake tensor's read gets it, the break
     * still the error. */
    rm.mode.fake_data = rec_fake_data;
    ck_assert_ptr_eq(tt_data(fx), stand_in);
    ck_assert_error(TT_EGRAPHBREAK, "tt_data at ");
    ck_assert_fails(tt_item(fx, &d), TT_EGRAPHBREAK, "tt_item at ");
    ck_assert_double_eq(d, 7.5);
    float out[1] = {1};
    ck_assert_fails(tt_to_buffer(fx, out, sizeof out), TT_EGRAPHBREAK, "tt_to_buffer at ");
    ck_assert_float_eq(out[0], 0); /* a fake tensor's values read as zeros */
    rm.fail_reads = 2;
    ck_assert_null_fails(tt_data(fx), TT_EINVAL, "tt_data at ");
    rm.mode.fake_data = NULL;
    /* A kernel's own reads are not the user's: the hook stays quiet. */
    tt_library *lib = lib_ok(TT_LIB_DEF, "kr");
    peek_mode = 0;
    tt_op *op = defop(lib, "kr::f(Tensor x) -> Tensor", k_peek, NULL);
    before = rm.nreads;
    tt_tensor *r = tt_call(op, tt_v_tensor(x));
    ck_assert_msg(r != NULL, "%s", tt_errmsg());
    ck_assert_int_eq(rm.nreads, before);
    tt_release(r);
    tt_library_free(lib);
    ck_assert_ptr_eq(tt_mode_pop(), &rm.mode);
    /* Off the mode, reads are not reported. */
    before = rm.nreads;
    ck_assert_ptr_nonnull(tt_data(x));
    ck_assert_int_eq(tt_item(x, &d), TT_OK);
    ck_assert_int_eq(rm.nreads, before);
    tt_release(fx);
    tt_release(x);
}
END_TEST

static void *mode_thread(void *arg)
{
    tt_tensor *x = arg;
    tt_tensor *r = tt_neg(x);
    bool trivial = tt_dispatch_is_trivial(1, (const tt_tensor *[]){x});
    bool none = tt_mode_current() == NULL;
    tt_release(r);
    return (void *)(intptr_t)(r && trivial && none);
}

START_TEST(test_mode_is_per_thread)
{
    float v[2] = {1, 2};
    tt_tensor *x = vec(2, v);
    rec_mode rm;
    rec_init(&rm, NULL);
    ck_assert_int_eq(tt_mode_push(&rm.mode), TT_OK);
    pthread_t th;
    void *ok;
    ck_assert_int_eq(pthread_create(&th, NULL, mode_thread, x), 0);
    ck_assert_int_eq(pthread_join(th, &ok), 0);
    ck_assert(ok != NULL);
    ck_assert_int_eq(rm.ncalls, 0);
    ck_assert_ptr_eq(tt_mode_pop(), &rm.mode);
    tt_release(x);
}
END_TEST

/* ------------------------------------------------- scopes under a mode */

START_TEST(test_scope_inplace_under_mode)
{
    /* In-place calls inside a scope, on tensors the scope owns, through
     * the dispatcher (a mode is on) and through the fast path: every
     * tensor is released at the scope's end. */
    float v[3] = {1, 2, 3};
    rec_mode rm;
    rec_init(&rm, NULL);
    for (int pass = 0; pass < 2; pass++) {
        tt_scope_begin();
        tt_tensor *x = vec(3, v), *y = vec(3, v);
        if (pass == 1)
            ck_assert_int_eq(tt_mode_push(&rm.mode), TT_OK);
        ck_assert_int_eq(tt_add_(x, y), TT_OK);
        ck_assert_int_eq(tt_mul_(x, y), TT_OK);
        ck_assert_int_eq(tt_relu_(x), TT_OK);
        ck_assert_int_eq(tt_mul_scalar_(x, 2), TT_OK);
        ck_assert_int_eq(tt_zero_(y), TT_OK);
        double d;
        ck_assert_int_eq(tt_get(x, &d, 2), TT_OK);
        ck_assert_double_eq(d, (3 + 3) * 3 * 2);
        tt_scope_end();
        if (pass == 1) {
            ck_assert_str_eq(rm.log, "tt::add_.Tensor tt::mul_.Tensor tt::relu_ tt::mul_.Scalar "
                                     "tt::zero_");
            ck_assert_ptr_eq(tt_mode_pop(), &rm.mode);
        }
        ck_assert_int_eq(tt_live_tensors(), 0);
    }
}
END_TEST

START_TEST(test_scope_inplace_on_outer_tensor)
{
    /* x and y belong to the caller, made before the scope. In-place calls
     * inside the scope return x itself: that reference is the caller's to
     * drop, and the scope must not take one of its own, or x would be
     * released at the scope's end under the caller's feet. */
    float v[3] = {1, 2, 3};
    tt_tensor *x = vec(3, v), *y = vec(3, v);
    tt_op *add_ = tt_op_find("tt::add_.Tensor");
    ck_assert_ptr_nonnull(add_);
    rec_mode rm;
    rec_init(&rm, NULL);
    tt_scope_begin();
    ck_assert_int_eq(tt_mode_push(&rm.mode), TT_OK);
    ck_assert_int_eq(tt_add_(x, y), TT_OK);   /* through the dispatcher */
    ck_assert_int_eq(tt_zero_(y), TT_OK);
    ck_assert_ptr_eq(tt_mode_pop(), &rm.mode);
    tt_value out;
    ck_assert_int_eq(tt_op_call(add_, (tt_value[]){tt_v_tensor(x), tt_v_tensor(x)}, 2, &out, 1), TT_OK);
    ck_assert_ptr_eq(out.u.t, x);
    tt_value_clear(&out);
    tt_tensor *r = tt_call(add_, tt_v_tensor(x), tt_v_tensor(y));
    ck_assert_ptr_eq(r, x);
    tt_release(r);
    tt_scope_end();
    ck_assert_int_eq(tt_live_tensors(), 2);
    double d;
    ck_assert_int_eq(tt_get(x, &d, 2), TT_OK);
    ck_assert_double_eq(d, (3 + 3) * 2);
    ck_assert_int_eq(tt_get(y, &d, 2), TT_OK);
    ck_assert_double_eq(d, 0);
    tt_release(x);
    tt_release(y);
}
END_TEST

/* --------------------------------------------------------------- fake mode */

/* A boxed argument list and its length, for tt_op_call. */
#define VALS(...)                                                              \
    (const tt_value[]){__VA_ARGS__},                                           \
        (int)(sizeof((const tt_value[]){__VA_ARGS__}) / sizeof(tt_value))

/* The built-in `name` called through the dispatcher, one tensor result. */
static tt_tensor *via_op(const char *name, const tt_value *args, int nargs)
{
    const tt_op *op = tt_op_find(name);
    ck_assert_msg(op != NULL, "%s: %s", name, tt_errmsg());
    return tt_op_call1(op, args, nargs);
}

/* Same fakeness, sizes and strides (and, when real, storage sharing with
 * `base` or not). */
static void same_result(const char *what, tt_tensor *direct, tt_tensor *dispatched,
                        const tt_tensor *base)
{
    ck_assert_msg(direct && dispatched, "%s: %s", what, tt_errmsg());
    ck_assert_msg(tt_is_fake(direct) == tt_is_fake(dispatched), "%s: fake %d vs %d", what,
                  tt_is_fake(direct), tt_is_fake(dispatched));
    ck_assert_int_eq(tt_ndim(direct), tt_ndim(dispatched));
    for (int d = 0; d < tt_ndim(direct); d++) {
        ck_assert_int_eq(tt_dim_size(direct, d), tt_dim_size(dispatched, d));
        ck_assert_int_eq(tt_dim_stride(direct, d), tt_dim_stride(dispatched, d));
    }
    if (base)
        ck_assert_int_eq(tt_same_storage(direct, base), tt_same_storage(dispatched, base));
    tt_release(direct);
    tt_release(dispatched);
}

/* The three "skip the dispatcher?" rules (dispatch.c, "Skipping the
 * dispatcher") agree on fake mode: the runtime's views, copies and
 * factories and the typed wrappers all behave as their op called through
 * the dispatcher does, on real and on fake inputs, and the typed wrappers'
 * fast path is off while fake mode is on. */
START_TEST(test_fake_mode_front_doors_agree)
{
    tt_tensor *real = tt_arange(0, 6, 1, TT_F32);
    tt_tensor *fake = tt_fake_like(real);
    ck_assert_ptr_nonnull(fake);
    const int64_t shape23[2] = {2, 3}, shape2[1] = {2};
    const tt_tensor *one[1] = {real};
    ck_assert(tt_dispatch_is_trivial(1, one));
    tt_fake_mode_begin();
    ck_assert(!tt_dispatch_is_trivial(1, one));
    tt_tensor *inputs[2] = {real, fake};
    for (int i = 0; i < 2; i++) {
        tt_tensor *x = inputs[i];
        same_result("view", tt_view(x, TT_SHAPE(2, 3)),
                    via_op("tt::view", VALS(tt_v_tensor(x), tt_v_ints(2, shape23))), x);
        tt_tensor *m = tt_view(x, TT_SHAPE(2, 3));
        ck_assert_ptr_nonnull(m);
        same_result("transpose", tt_transpose(m, 0, 1),
                    via_op("tt::transpose.int",
                           VALS(tt_v_tensor(m), tt_v_int(0), tt_v_int(1))), x);
        tt_tensor *mt = tt_transpose(m, 0, 1);
        ck_assert_ptr_nonnull(mt);
        same_result("contiguous", tt_contiguous(mt),
                    via_op("tt::contiguous", VALS(tt_v_tensor(mt))), x);
        same_result("add", tt_add(x, x),
                    via_op("tt::add.Tensor", VALS(tt_v_tensor(x), tt_v_tensor(x))), x);
        tt_release(mt);
        tt_release(m);
    }
    same_result("zeros", tt_zeros(TT_SHAPE(2), TT_F32),
                via_op("tt::full", VALS(tt_v_ints(1, shape2), tt_v_float(0),
                                           tt_v_dtype(TT_F32))), NULL);
    ck_assert_int_eq(tt_fake_mode_end(), TT_OK);
    /* A copy between real tensors (made outside fake mode, where a factory
     * makes fake ones): as the copy_ op does it. */
    tt_tensor *a = tt_zeros(TT_SHAPE(6), TT_F32), *b = tt_zeros(TT_SHAPE(6), TT_F32);
    ck_assert(a && b);
    tt_fake_mode_begin();
    ck_assert_int_eq(tt_copy_(a, real), TT_OK);
    tt_value out;
    ck_assert_int_eq(tt_op_call(tt_op_find("tt::copy_"),
                                VALS(tt_v_tensor(b), tt_v_tensor(real)), &out, 1), TT_OK);
    tt_value_clear(&out);
    ck_assert_int_eq(tt_fake_mode_end(), TT_OK);
    for (int k = 0; k < 6; k++) {
        double va = -1, vb = -2;
        ck_assert_int_eq(tt_get(a, &va, k), TT_OK);
        ck_assert_int_eq(tt_get(b, &vb, k), TT_OK);
        ck_assert_double_eq(va, vb);
    }
    ck_assert(tt_dispatch_is_trivial(1, one));
    tt_release(a);
    tt_release(b);
    tt_release(fake);
    tt_release(real);
    ck_assert_int_eq(tt_live_tensors(), 0);
}
END_TEST

/* Each public view, copy and factory (the front doors in ops/
 * view_front.c and ops/factory_front.c) reaches its own op under a mode,
 * in one call, with its arguments in the op's order: the result has the
 * sizes, strides, dtype and (for `values`) elements of the one the same
 * call makes without a mode, through the runtime's direct path. */
static void front_door(rec_mode *rm, const char *op, tt_tensor *direct, tt_tensor *moded,
                       bool values)
{
    ck_assert_ptr_eq(tt_mode_pop(), &rm->mode);
    ck_assert_msg(direct && moded, "%s: %s", op, tt_errmsg());
    ck_assert_str_eq(rm->log, op);
    ck_assert_int_eq(rm->ncalls, 1);
    ck_assert_int_eq(tt_dtype_of(direct), tt_dtype_of(moded));
    ck_assert_int_eq(tt_storage_offset(direct), tt_storage_offset(moded));
    same_result(op, values ? tt_retain(direct) : direct, values ? tt_retain(moded) : moded, NULL);
    if (values) {
        tt_test_assert_same_bits(direct, moded, op);
        tt_release(direct);
        tt_release(moded);
    }
    rm->log[0] = 0, rm->ncalls = 0;
    ck_assert_int_eq(tt_mode_push(&rm->mode), TT_OK);
}

/* `call` twice: without the mode, then under it (pushed again after). */
#define FRONT_DOOR(op, values, call)                                           \
    do {                                                                       \
        ck_assert_ptr_eq(tt_mode_pop(), &rm.mode);                             \
        tt_tensor *direct_ = (call);                                           \
        ck_assert_int_eq(tt_mode_push(&rm.mode), TT_OK);                       \
        front_door(&rm, (op), direct_, (call), (values));                      \
    } while (0)

START_TEST(test_front_doors_call_their_op)
{
    tt_tensor *x = tt_arange(0, 24, 1, TT_F32);
    tt_tensor *m = tt_view(x, TT_SHAPE(2, 3, 4));
    tt_tensor *u = tt_view(x, TT_SHAPE(2, 1, 12));
    tt_tensor *tr = tt_transpose(m, 0, 2); /* no view as [4, 6] */
    ck_assert(x && m && u && tr);
    const int64_t perm[3] = {2, 0, 1}, sizes[2] = {3, 4}, strides[2] = {1, 3};
    rec_mode rm;
    rec_init(&rm, NULL);
    ck_assert_int_eq(tt_mode_push(&rm.mode), TT_OK);
    FRONT_DOOR("tt::view", true, tt_view(m, TT_SHAPE(6, -1)));
    FRONT_DOOR("tt::reshape", true, tt_reshape(tr, TT_SHAPE(4, 6)));
    FRONT_DOOR("tt::permute", true, tt_permute(m, 3, perm));
    FRONT_DOOR("tt::transpose.int", true, tt_transpose(m, -1, 0));
    FRONT_DOOR("tt::t", true, tt_t(x));
    FRONT_DOOR("tt::narrow", true, tt_narrow(m, 2, -3, 2));
    FRONT_DOOR("tt::slice.Tensor", true, tt_slice(m, 1, 1, 100, 2));
    FRONT_DOOR("tt::select.int", true, tt_select(m, 1, -1));
    FRONT_DOOR("tt::expand", true, tt_expand(u, TT_SHAPE(3, 2, 5, 12)));
    FRONT_DOOR("tt::squeeze.dim", true, tt_squeeze(u, 1));
    FRONT_DOOR("tt::squeeze", true, tt_squeeze_all(u));
    FRONT_DOOR("tt::unsqueeze", true, tt_unsqueeze(m, -2));
    FRONT_DOOR("tt::flatten.using_ints", true, tt_flatten(m, 1, 2));
    FRONT_DOOR("tt::as_strided", true, tt_as_strided(x, 2, sizes, strides, 5));
    FRONT_DOOR("tt::detach", true, tt_detach(m));
    FRONT_DOOR("tt::contiguous", true, tt_contiguous(tr));
    FRONT_DOOR("tt::clone", true, tt_clone(m));
    FRONT_DOOR("tt::_to_copy", true, tt_to_dtype(m, TT_I64));
    FRONT_DOOR("tt::empty", false, tt_empty(TT_SHAPE(2, 5), TT_F64));
    FRONT_DOOR("tt::empty_strided", false, tt_empty_strided(2, sizes, strides, TT_I32));
    FRONT_DOOR("tt::full", true, tt_full(TT_SHAPE(3, 2), 2.5, TT_F64));
    FRONT_DOOR("tt::full", true, tt_zeros(TT_SHAPE(4), TT_I64));
    FRONT_DOOR("tt::full", true, tt_ones(TT_SHAPE(2, 2), TT_F32));
    FRONT_DOOR("tt::full", true, tt_scalar(-7, TT_F32));
    FRONT_DOOR("tt::arange.start_step", true, tt_arange(1, 10, 1.5, TT_F64));
    FRONT_DOOR("tt::linspace", true, tt_linspace(-1, 1, 7, TT_F32));
    FRONT_DOOR("tt::rand", false, tt_rand(TT_SHAPE(3, 3), TT_F32));
    FRONT_DOOR("tt::randn", false, tt_randn(TT_SHAPE(5), TT_F64));
    FRONT_DOOR("tt::new_empty", false, tt_new_empty(m, TT_SHAPE(7, 1)));
    FRONT_DOOR("tt::empty_like", false, tt_empty_like(tr));
    ck_assert_ptr_eq(tt_mode_pop(), &rm.mode);
    /* The in-place ones: the same writes, each through its op. */
    tt_tensor *a = tt_zeros(TT_SHAPE(2, 3, 4), TT_F64), *b = tt_zeros(TT_SHAPE(2, 3, 4), TT_F64);
    ck_assert(a && b);
    ck_assert_int_eq(tt_copy_(a, m), TT_OK);
    ck_assert_int_eq(tt_mode_push(&rm.mode), TT_OK);
    ck_assert_int_eq(tt_copy_(b, m), TT_OK);
    ck_assert_ptr_eq(tt_mode_pop(), &rm.mode);
    ck_assert_str_eq(rm.log, "tt::copy_");
    tt_test_assert_same_bits(a, b, "copy_");
    tt_tensor *ra = tt_select(a, 0, 1), *rb = tt_select(b, 0, 1);
    ck_assert(ra && rb);
    ck_assert_int_eq(tt_fill_(ra, 3.25), TT_OK);
    rm.log[0] = 0;
    ck_assert_int_eq(tt_mode_push(&rm.mode), TT_OK);
    ck_assert_int_eq(tt_fill_(rb, 3.25), TT_OK);
    ck_assert_ptr_eq(tt_mode_pop(), &rm.mode);
    ck_assert_str_eq(rm.log, "tt::fill_.Scalar");
    tt_test_assert_same_bits(a, b, "fill_");
    tt_release(ra);
    tt_release(rb);
    tt_release(a);
    tt_release(b);
    tt_release(tr);
    tt_release(u);
    tt_release(m);
    tt_release(x);
    ck_assert_int_eq(tt_live_tensors(), 0);
}
END_TEST

static Suite *modes_suite(void)
{
    Suite *s = suite_create("modes");
    TCase *tc = tt_tcase("modes");
    tcase_add_test(tc, test_mode_records_calls);
    tcase_add_test(tc, test_mode_sees_runtime_views);
    tcase_add_test(tc, test_mode_stack);
    tcase_add_test(tc, test_mode_push_errors);
    tcase_add_test(tc, test_mode_data_read_hook);
    tcase_add_test(tc, test_mode_is_per_thread);
    tcase_add_test(tc, test_fake_mode_front_doors_agree);
    tcase_add_test(tc, test_front_doors_call_their_op);
    suite_add_tcase(s, tc);

    tc = tt_tcase("scopes");
    tcase_add_test(tc, test_scope_inplace_under_mode);
    tcase_add_test(tc, test_scope_inplace_on_outer_tensor);
    suite_add_tcase(s, tc);
    return s;
}

TT_TEST_MAIN(modes_suite)
