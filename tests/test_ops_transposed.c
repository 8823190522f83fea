/* f32 binary ops where one 2-d operand is a transposed view (A.t() + B,
 * B / A.t()): on a CPU with AVX-512F these take a kernel of their own
 * (ops/transposed_binary*.c), elsewhere the iterator's tiles. Either way
 * every result must be bit for bit what a scalar loop gives with the same
 * float operations (and what the op gives on contiguous copies), for sizes
 * that are and are not multiples of the kernel's 16 x 16 blocks, both
 * operand orders, in place, and for the layouts the kernel must leave to
 * the general path (strided and broadcast operands). */
#include "tt_test.h"

#include <math.h>
#include <stdint.h>

/* --------------------------------------------------------------- values */

/* A new f32 tensor of the given sizes: normal values (the suite's seed)
 * and, every 61st element, one a kernel could get wrong by reordering or
 * fusing operations: zeros of both signs, infinities, a NaN, a subnormal,
 * a huge value. */
static tt_tensor *filled(int64_t rows, int64_t cols)
{
    static const float specials[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-40f, 3e38f};
    int64_t n = rows * cols;
    tt_tensor *r = NN(tt_randn(TT_SHAPE(rows, cols), TT_F32));
    float *p = NN(tt_data(r));
    for (int64_t i = 0; i < n; i += 61)
        p[i] = specials[(i / 61) % (int64_t)(sizeof specials / sizeof specials[0])];
    return r;
}

/* t's elements in logical (row-major) order, broadcast to r's shape;
 * the caller frees. */
static float *logical(const tt_tensor *t, const tt_tensor *r)
{
    tt_tensor *e = NN(tt_expand(t, tt_ndim(r), tt_sizes(r)));
    int64_t n = tt_numel(r);
    float *buf = malloc((size_t)(n ? n : 1) * sizeof *buf);
    ck_assert_ptr_nonnull(buf);
    OK(tt_to_buffer(e, buf, (size_t)n * sizeof *buf));
    tt_release(e);
    return buf;
}

/* ------------------------------------------------------------------ ops */

typedef enum { T_ADD, T_SUB, T_MUL, T_DIV, T_ADD_ALPHA, T_SUB_ALPHA, T_COUNT } top;
static const char *const top_names[T_COUNT] = {"add", "sub", "mul", "div", "add(alpha=-2.5)",
                                               "sub(alpha=0.75)"};

static float alpha_of(top op)
{
    return op == T_ADD_ALPHA ? -2.5f : op == T_SUB_ALPHA ? 0.75f : 1.0f;
}

/* The scalar reference: binary.c's loops compute add and sub as
 * a +- alpha * b (alpha 1 by default) in float, in this order. */
static float ref(top op, float a, float b)
{
    float alpha = alpha_of(op);
    switch (op) {
    case T_ADD:
    case T_ADD_ALPHA: return a + alpha * b;
    case T_SUB:
    case T_SUB_ALPHA: return a - alpha * b;
    case T_MUL: return a * b;
    default: return a / b;
    }
}

static tt_tensor *run(top op, const tt_tensor *a, const tt_tensor *b)
{
    switch (op) {
    case T_ADD: return tt_add(a, b);
    case T_SUB: return tt_sub(a, b);
    case T_MUL: return tt_mul(a, b);
    case T_DIV: return tt_div(a, b);
    case T_ADD_ALPHA: return tt_add_scaled(a, b, -2.5);
    default:
        return tt_call(tt_op_find("tt::sub.Tensor"), tt_v_tensor(a), tt_v_tensor(b),
                       tt_v_float(0.75));
    }
}

static uint32_t bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* r (borrowed) must hold ref(op, a, b) bit for bit, a and b broadcast. */
static void assert_ref(top op, const tt_tensor *a, const tt_tensor *b, const tt_tensor *r,
                       const char *what)
{
    int64_t n = tt_numel(r);
    float *x = logical(a, r), *y = logical(b, r), *got = logical(r, r);
    for (int64_t i = 0; i < n; i++) {
        float want = ref(op, x[i], y[i]);
        if (bits(want) != bits(got[i]))
            ck_abort_msg("%s %s: element %lld is %.9g (bits %08x), the scalar loop gives "
                         "%.9g (bits %08x) from %.9g and %.9g", what, top_names[op],
                         (long long)i, got[i], bits(got[i]), want, bits(want), x[i], y[i]);
    }
    free(x);
    free(y);
    free(got);
}

/* op(a, b) against the scalar loop and against op on contiguous copies
 * (the general path); both operands borrowed. */
static void check(top op, const tt_tensor *a, const tt_tensor *b, const char *what)
{
    tt_tensor *r = NN(run(op, a, b));
    assert_ref(op, a, b, r, what);
    tt_tensor *ac = NN(tt_contiguous(a)), *bc = NN(tt_contiguous(b));
    tt_tensor *want = NN(run(op, ac, bc));
    tt_test_assert_same_bits(r, want, what);
    tt_release(r);
    tt_release(ac);
    tt_release(bc);
    tt_release(want);
}

/* ---------------------------------------------------------------- tests */

static const int64_t sizes[][2] = {{1, 1}, {15, 17}, {16, 16}, {33, 70}, {257, 129}, {1024, 1000}};
#define NSIZES ((int)(sizeof sizes / sizeof sizes[0]))

/* A.t() op B and B op A.t(), every op. */
START_TEST(test_both_orders)
{
    int64_t rows = sizes[_i][0], cols = sizes[_i][1];
    tt_tensor *a = filled(cols, rows), *b = filled(rows, cols);
    tt_tensor *at = NN(tt_t(a));
    for (int op = 0; op < T_COUNT; op++) {
        check((top)op, at, b, "A.t() op B");
        check((top)op, b, at, "B op A.t()");
    }
    tt_release(a);
    tt_release(b);
    tt_release(at);
}
END_TEST

/* In place: a row-major target reading a transposed operand, and a
 * transposed target (its own first operand) reading a row-major one. */
START_TEST(test_inplace)
{
    int64_t rows = sizes[_i][0], cols = sizes[_i][1];
    tt_tensor *a = filled(cols, rows), *b = filled(rows, cols);
    tt_tensor *at = NN(tt_t(a));
    for (int op = 0; op < T_COUNT; op++) {
        if (op == T_SUB_ALPHA)
            continue; /* no typed in-place wrapper */
        tt_status (*const fns[])(tt_tensor *, const tt_tensor *) = {tt_add_, tt_sub_, tt_mul_,
                                                                    tt_div_};
        tt_tensor *bc = NN(tt_clone(b)), *ac = NN(tt_clone(a)), *act = NN(tt_t(ac));
        if (op == T_ADD_ALPHA) {
            OK(tt_add_scaled_(bc, at, -2.5));
            OK(tt_add_scaled_(act, b, -2.5));
        } else {
            OK(fns[op](bc, at));
            OK(fns[op](act, b));
        }
        assert_ref((top)op, b, at, bc, "B.op_(A.t())");
        assert_ref((top)op, at, b, act, "A.t().op_(B)");
        tt_release(bc);
        tt_release(ac);
        tt_release(act);
    }
    tt_release(a);
    tt_release(b);
    tt_release(at);
}
END_TEST

/* Views the kernel must read by their own steps or leave alone: a
 * transposed view of a narrowed base (rows longer than the view's), a
 * transposed view with a step of 2, a 3-d view with a size-1 dim, and
 * broadcast operands (a row, a column, a scalar). */
START_TEST(test_views_and_broadcast)
{
    int64_t rows = sizes[_i][0], cols = sizes[_i][1];
    tt_tensor *b = filled(rows, cols);

    tt_tensor *base = filled(cols + 3, rows + 5);
    tt_tensor *n0 = NN(tt_narrow(base, 0, 2, cols)), *n1 = NN(tt_narrow(n0, 1, 1, rows));
    tt_tensor *nt = NN(tt_t(n1));
    tt_tensor *wide = filled(cols, 2 * rows);
    tt_tensor *stepped = NN(tt_slice(wide, 1, 0, 2 * rows, 2)), *st = NN(tt_t(stepped));
    tt_tensor *a = filled(cols, rows), *at = NN(tt_t(a));
    tt_tensor *at3 = NN(tt_unsqueeze(at, 0)), *b3 = NN(tt_unsqueeze(b, 1));
    tt_tensor *b3v = NN(tt_view(b3, 3, (int64_t[]){1, rows, cols}));
    tt_tensor *row = filled(1, cols), *col = filled(rows, 1), *one = filled(1, 1);
    tt_tensor *row1 = NN(tt_view(row, 1, (int64_t[]){cols}));
    for (int op = 0; op < T_COUNT; op++) {
        check((top)op, nt, b, "narrowed.t() op B");
        check((top)op, b, nt, "B op narrowed.t()");
        check((top)op, st, b, "stepped.t() op B");
        check((top)op, b, st, "B op stepped.t()");
        check((top)op, at3, b3v, "A.t()[None] op B[None]");
        check((top)op, at, row1, "A.t() op row");
        check((top)op, col, at, "column op A.t()");
        check((top)op, at, one, "A.t() op [[x]]");
    }
    tt_tensor *all[] = {b, base, n0, n1, nt, wide, stepped, st, a, at, at3, b3, b3v,
                        row, col, one, row1};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
        tt_release(all[k]);
}
END_TEST

/* Several threads (the kernel splits rows across the pool) and one give
 * the same bits. */
START_TEST(test_thread_counts)
{
    tt_tensor *a = filled(999, 1031), *b = filled(1031, 999), *at = NN(tt_t(a));
    int before = tt_get_num_threads();
    tt_set_num_threads(1);
    tt_tensor *one = NN(tt_div(b, at));
    tt_set_num_threads(4);
    tt_tensor *four = NN(tt_div(b, at));
    tt_set_num_threads(before);
    tt_test_assert_same_bits(one, four, "div at 1 and 4 threads");
    assert_ref(T_DIV, b, at, four, "B / A.t() at 4 threads");
    tt_release(a);
    tt_release(b);
    tt_release(at);
    tt_release(one);
    tt_release(four);
}
END_TEST

static Suite *transposed_suite(void)
{
    Suite *s = suite_create("ops_transposed");
    TCase *tc = tt_tcase("transposed");
    tcase_add_loop_test(tc, test_both_orders, 0, NSIZES);
    tcase_add_loop_test(tc, test_inplace, 0, NSIZES);
    tcase_add_loop_test(tc, test_views_and_broadcast, 0, NSIZES);
    tcase_add_test(tc, test_thread_counts);
    suite_add_tcase(s, tc);
    return s;
}

TT_TEST_MAIN(transposed_suite)
