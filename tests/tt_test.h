/* Shared helpers for the Check suites. Every TCase gets tt_test_setup /
 * tt_test_teardown as a checked fixture, so each test ends with zero live
 * tensors and storages (counted by the runtime) and no allocation failure
 * left armed. */
#ifndef TT_TEST_H
#define TT_TEST_H

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensortrace.h"

static inline void tt_test_setup(void)
{
    tt_clear_error();
    tt_debug_fail_alloc(0);
    tt_manual_seed(1234);
}

static inline void tt_test_teardown(void)
{
    tt_debug_fail_alloc(0);
    ck_assert_int_eq(tt_live_tensors(), 0);
    ck_assert_int_eq(tt_live_storages(), 0);
}

/* A TCase with the given checked fixture, for suites whose fixture does
 * more (defines ops, say); `setup` starts with tt_test_setup() and
 * `teardown` ends with tt_test_teardown(). */
static inline TCase *tt_tcase_with(const char *name, SFun setup, SFun teardown)
{
    TCase *tc = tcase_create(name);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    return tc;
}

/* A TCase with the fixture attached. */
static inline TCase *tt_tcase(const char *name)
{
    return tt_tcase_with(name, tt_test_setup, tt_test_teardown);
}

/* OK(call): asserts that a call returning a tt_status succeeded; the
 * message names the call, its status and the error. */
#define OK(call)                                                               \
    do {                                                                       \
        tt_status st_ = (call);                                                \
        ck_assert_msg(st_ == TT_OK, "%s failed: %s: %s", #call,                \
                      tt_status_name(st_), tt_errmsg());                       \
    } while (0)

/* NN(expr): asserts that a call returning a pointer did not fail, and
 * gives the pointer back (as void *, so any pointer type receives it). */
#define NN(expr) tt_test_nn_((expr), #expr, __LINE__)

/* The size past which an elementwise op's operands outgrow the last-level
 * cache and its output is streamed (ops_common.c reads the same file);
 * 32 MB when the OS does not say. */
static inline int64_t tt_test_last_level_cache_bytes(void)
{
    long long v = 32 << 20;
    char unit = 0;
    FILE *f = fopen("/sys/devices/system/cpu/cpu0/cache/index3/size", "r");
    if (f) {
        if (fscanf(f, "%lld%c", &v, &unit) >= 1)
            v <<= unit == 'K' ? 10 : unit == 'M' ? 20 : 0;
        fclose(f);
    }
    return (int64_t)v;
}

static inline void *tt_test_nn_(const void *p, const char *what, int line)
{
    ck_assert_msg(p != NULL, "line %d: %s returned NULL: %s: %s", line, what,
                  tt_status_name(tt_errcode()), tt_errmsg());
    return (void *)p;
}

/* A file's bytes, NUL-terminated (the caller frees them). */
static inline char *tt_test_read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(s);
    ck_assert_int_eq(fread(s, 1, (size_t)n, f), (size_t)n);
    s[n] = '\0';
    fclose(f);
    return s;
}

/* t's elements in logical (row-major) order, as doubles (the caller frees
 * them). Reading them is not part of any computation: no autograd. */
static inline double *tt_test_values(const tt_tensor *t)
{
    int64_t n = tt_numel(t);
    tt_no_grad_begin();
    tt_tensor *d = tt_to_dtype(t, TT_F64);
    tt_no_grad_end();
    NN(d);
    double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
    ck_assert_ptr_nonnull(v);
    OK(tt_to_buffer(d, v, sizeof(double) * (size_t)n));
    tt_release(d);
    return v;
}

/* Asserts a and b hold the same logical values within tol, relative to
 * max(1, |b|). */
static inline void tt_test_assert_close(const tt_tensor *a, const tt_tensor *b, double tol,
                                        const char *what)
{
    ck_assert_int_eq(tt_numel(a), tt_numel(b));
    double *x = tt_test_values(a), *y = tt_test_values(b);
    for (int64_t i = 0; i < tt_numel(a); i++) {
        double lim = tol * fmax(1.0, fabs(y[i]));
        if (!(fabs(x[i] - y[i]) <= lim))
            ck_abort_msg("%s: element %lld: %.12g vs %.12g", what, (long long)i, x[i], y[i]);
    }
    free(x);
    free(y);
}

static inline tt_tensor *tt_test_randn(int nd, const int64_t *sizes, tt_dtype dt)
{
    return NN(tt_randn(nd, sizes, dt));
}

/* t, made a leaf that requires grad. */
/* A model of one input, for the suites' compiled-equals-eager checks. */
typedef tt_tensor *(*tt_test_model)(tt_tensor *x);

/* A tt_fn around the tt_test_model *ud points at: out[0] its output
 * (what tt_gradcheck checks). */
static inline tt_status tt_test_value(tt_tensor **in, int nin, tt_tensor **out, int nout,
                                      void *ud)
{
    (void)nin, (void)nout;
    out[0] = (*(tt_test_model *)ud)(in[0]);
    return out[0] ? TT_OK : tt_errcode();
}

/* Inside a scope: out[0] = y (a model's output, NULL after a failure)
 * and out[1] = the gradient of sum(y * y) with respect to x, both kept. */
static inline tt_status tt_test_keep_value_and_grad(tt_tensor *y, tt_tensor *x,
                                                    tt_tensor **out)
{
    tt_tensor *sq = y ? tt_mul(y, y) : NULL;
    tt_tensor *s = sq ? tt_sum_all(sq) : NULL;
    tt_tensor *g = NULL;
    tt_status st = s ? tt_grad(1, &s, NULL, 1, &x, &g) : tt_errcode();
    out[0] = st ? NULL : tt_keep(y);
    out[1] = st ? NULL : tt_keep(g);
    return st;
}

/* A tt_fn around the tt_test_model *ud points at: out[0] the model's
 * output, out[1] the gradient of sum(y * y) with respect to in[0]. */
static inline tt_status tt_test_value_and_grad(tt_tensor **in, int nin, tt_tensor **out,
                                               int nout, void *ud)
{
    (void)nin, (void)nout;
    tt_test_model m = *(tt_test_model *)ud;
    tt_scope_begin();
    tt_status st = tt_test_keep_value_and_grad(m(in[0]), in[0], out);
    tt_scope_end();
    return st;
}

/* Runs compiled c, a plan of tt_test_value_and_grad around model m, on x
 * and asserts its value and gradient equal eager's within tol; failures
 * name the model and which input shape (k) it was. */
static inline void tt_test_compiled_equals_eager(tt_compiled *c, tt_test_model m, tt_tensor *x,
                                                 double tol, const char *name, int k)
{
    tt_tensor *ce[2], *ee[2];
    tt_status st = tt_compiled_call(c, &x, ce);
    ck_assert_msg(st == TT_OK, "%s: compiled call, shape %d: %s", name, k, tt_errmsg());
    OK(tt_test_value_and_grad(&x, 1, ee, 2, &m));
    for (int i = 0; i < 2; i++) {
        char what[96];
        snprintf(what, sizeof what, "%s: output %d, shape %d", name, i, k);
        tt_test_assert_close(ce[i], ee[i], tol, what);
        tt_release(ce[i]);
        tt_release(ee[i]);
    }
}

/* A model's test input of nd dims and these sizes (f64). */
typedef tt_tensor *(*tt_test_input_fn)(int nd, const int64_t *sizes);

/* Compiles tt_test_value_and_grad around m (symbolic, fullgraph) once and
 * runs it on inputs of `sizes` and of sizes grown (+1 the first dim, +2
 * the others) made by make, requiring grad: values and gradients equal
 * eager's within tol, and the plan frees cleanly. */
static inline void tt_test_compiled_two_shapes(tt_test_model m, int nd, const int64_t *sizes,
                                               tt_test_input_fn make, double tol,
                                               const char *name)
{
    tt_compiled *c = tt_compile(tt_test_value_and_grad, 1, 2,
                                &(tt_trace_opts){.mode = TT_TRACE_SYMBOLIC, .ud = &m,
                                                 .ud_constant = true, .fullgraph = true});
    ck_assert_msg(c != NULL, "%s: tt_compile: %s", name, tt_errmsg());
    int64_t shapes[2][TT_MAX_DIMS];
    for (int d = 0; d < nd; d++) {
        shapes[0][d] = sizes[d];
        shapes[1][d] = sizes[d] + (d == 0 ? 1 : 2);
    }
    for (int k = 0; k < 2; k++) {
        tt_tensor *x = make(nd, shapes[k]);
        OK(tt_set_requires_grad(x, true));
        tt_test_compiled_equals_eager(c, m, x, tol, name, k);
        tt_release(x);
    }
    tt_clear_error();
    tt_compiled_free(c);
    ck_assert_msg(tt_errcode() == TT_OK, "%s: freeing the plan: %s", name, tt_errmsg());
}

/* tt_gradcheck of model m on make(nd, sizes), and when nd == cl_nd on
 * the same values in memory format cl ("channels_last"...) too. */
static inline void tt_test_gradcheck_layouts(tt_test_model m, int nd, const int64_t *sizes,
                                             tt_test_input_fn make, int cl_nd, const char *cl,
                                             const char *name)
{
    for (int layout = 0; layout < (nd == cl_nd ? 2 : 1); layout++) {
        tt_tensor *b = make(nd, sizes);
        tt_tensor *x = layout ? NN(tt_contiguous_format(b, cl)) : b;
        OK(tt_set_requires_grad(x, true));
        tt_status st = tt_gradcheck(tt_test_value, 1, &x, 1, NULL, &m);
        ck_assert_msg(st == TT_OK, "%s%s: %s", name, layout ? " channels last" : "", tt_errmsg());
        if (layout)
            tt_release(x);
        tt_release(b);
    }
}

static inline tt_tensor *tt_test_trainable(tt_tensor *t)
{
    OK(tt_set_requires_grad(t, true));
    return t;
}

/* The SGD update of a traced training step: each of params[0..n-1]
 * -= lr * its gradient in place under no-grad, the gradient then cleared
 * (zero_grad). A parameter without a gradient is an error. */
static inline tt_status tt_test_sgd(tt_tensor *const *params, int n, double lr)
{
    tt_status st = TT_OK;
    for (int p = 0; p < n && !st; p++) {
        tt_tensor *g = tt_get_grad(params[p]);
        if (!g)
            return tt_errcode() ? tt_errcode()
                                : tt_error(TT_EAUTOGRAD, "parameter %d got no gradient", p);
        tt_no_grad_begin();
        st = tt_add_scaled_(params[p], g, -lr);
        tt_no_grad_end();
        tt_release(g);
        if (!st)
            st = tt_set_grad(params[p], NULL);
    }
    return st;
}

/* The thread's error message without the call sites a failing call adds
 * (", called from file:line in fn"), into buf: for comparing the errors
 * of two calls made from different lines. */
static inline const char *tt_test_errmsg_core(char *buf, size_t n)
{
    snprintf(buf, n, "%s", tt_errmsg());
    char *at = strstr(buf, ", called from ");
    if (at)
        *at = '\0';
    return buf;
}

/* Asserts the last error's status and that its message contains `needle`. */
#define ck_assert_error(code, needle)                                          \
    do {                                                                       \
        ck_assert_msg(tt_errcode() == (code), "expected %s, got %s: %s",       \
                      tt_status_name(code), tt_status_name(tt_errcode()),      \
                      tt_errmsg());                                            \
        ck_assert_msg(strstr(tt_errmsg(), (needle)) != NULL,                   \
                      "message \"%s\" does not contain \"%s\"", tt_errmsg(),  \
                      (needle));                                               \
    } while (0)

/* ------------------------------------------------------- error tables */

/* A table of calls that must fail, one row per behaviour. A suite lists
 * its rows once, as an X-macro
 *     #define REDUCE_ERRORS(X) X(row_name, call, expected status, needle...)
 * and TT_ERROR_TABLE(REDUCE_ERRORS, table) makes from it a function per row
 * and the table; a Check loop test (tcase_add_loop_test(tc, fn, 0,
 * TT_TABLE_LEN(table))) runs one row per iteration through
 * tt_test_run_error_case. So a failing row is reported on its own, by
 * index and name, and every row after it still runs: a sequence of
 * asserts in one test would stop at the first failure and hide the rest.
 * The inputs come from the TCase's checked fixture, made again for each
 * row. */
typedef struct {
    const char *name;
    /* Makes the call with the fixture's (borrowed) inputs and returns its
     * status (TT_TEST_STATUS); releases whatever the call returned. */
    tt_status (*call)(void);
    tt_status code; /* from the call and from tt_errcode() */
    /* Texts the message contains, up to the first NULL (none: the status
     * alone is checked). */
    const char *needles[3];
} tt_error_case;

#define TT_TABLE_LEN(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* What a call returning a tensor, a string, a size (-1 on error) or a
 * status reports; a call that succeeded reports TT_TEST_SUCCEEDED, which
 * no status equals, after its result is released (a NULL with no error
 * set reports TT_OK). */
#define TT_TEST_SUCCEEDED ((tt_status)-1)
static inline tt_status tt_test_status_of_tensor(tt_tensor *t)
{
    if (!t)
        return tt_errcode();
    tt_release(t);
    return TT_TEST_SUCCEEDED;
}
static inline tt_status tt_test_status_of_string(char *s)
{
    if (!s)
        return tt_errcode();
    free(s);
    return TT_TEST_SUCCEEDED;
}
static inline tt_status tt_test_status_of_size(int64_t n)
{
    return n == -1 ? tt_errcode() : TT_TEST_SUCCEEDED;
}
static inline tt_status tt_test_status_of_status(tt_status st)
{
    return st == TT_OK ? TT_TEST_SUCCEEDED : st;
}
#define TT_TEST_STATUS(call)                                                   \
    _Generic((call), tt_tensor *: tt_test_status_of_tensor,                    \
             char *: tt_test_status_of_string,                                 \
             int64_t: tt_test_status_of_size,                                  \
             default: tt_test_status_of_status)(call)

/* Row names are unique in a file (two rows of one name do not compile). */
#define TT_ERROR_CASE_FN_(name, call, ...)                                     \
    static tt_status error_case_##name(void) { return TT_TEST_STATUS(call); }
#define TT_ERROR_CASE_ROW_(name, call, code, ...)                              \
    {#name, error_case_##name, code, {__VA_ARGS__}},
#define TT_ERROR_TABLE(list, table)                                            \
    list(TT_ERROR_CASE_FN_)                                                    \
    static const tt_error_case table[] = {list(TT_ERROR_CASE_ROW_)}

/* Runs row i of an error table: the call must fail with c->code, as
 * returned and as tt_errcode(), with a message containing each needle, and
 * leave no tensor or storage behind. Every message names the row. */
static inline void tt_test_run_error_case(const tt_error_case *c, int i)
{
    int64_t live = tt_live_tensors(), storages = tt_live_storages();
    tt_clear_error();
    tt_status st = c->call();
    ck_assert_msg(st != TT_TEST_SUCCEEDED, "case %d (%s): the call succeeded; expected %s",
                  i, c->name, tt_status_name(c->code));
    ck_assert_msg(st == c->code && tt_errcode() == c->code,
                  "case %d (%s): expected %s, got %s (tt_errcode %s): %s", i, c->name,
                  tt_status_name(c->code), tt_status_name(st), tt_status_name(tt_errcode()),
                  tt_errmsg());
    for (int k = 0; k < 3 && c->needles[k]; k++)
        ck_assert_msg(strstr(tt_errmsg(), c->needles[k]) != NULL,
                      "case %d (%s): message \"%s\" does not contain \"%s\"", i, c->name,
                      tt_errmsg(), c->needles[k]);
    ck_assert_msg(tt_live_tensors() == live && tt_live_storages() == storages,
                  "case %d (%s): the failing call left %lld tensors and %lld storages alive",
                  i, c->name, (long long)(tt_live_tensors() - live),
                  (long long)(tt_live_storages() - storages));
}

/* ------------------------------------------------- metadata and bits */

/* Asserts that `fake`, an op's output on fake inputs, is a fake tensor
 * with exactly the metadata of `real`, the op's output on the real inputs:
 * dtype, sizes, strides and storage offset. */
static inline void tt_test_assert_fake_meta(const tt_tensor *fake, const tt_tensor *real,
                                            const char *what)
{
    char a[256], b[256], sa[256], sb[256];
    ck_assert_msg(fake != NULL, "%s: fake call failed: %s", what, tt_errmsg());
    ck_assert_msg(real != NULL, "%s: real call failed: %s", what, tt_errmsg());
    ck_assert_msg(tt_is_fake(fake) && !tt_is_fake(real), "%s: fake-ness (fake output %s, "
                  "real output %s)", what, tt_is_fake(fake) ? "fake" : "real",
                  tt_is_fake(real) ? "fake" : "real");
    tt_describe(fake, a, sizeof a);
    tt_describe(real, b, sizeof b);
    tt_strides_str(fake, sa, sizeof sa);
    tt_strides_str(real, sb, sizeof sb);
    ck_assert_msg(tt_dtype_of(fake) == tt_dtype_of(real), "%s: fake dtype %s, real %s", what,
                  tt_dtype_name(tt_dtype_of(fake)), tt_dtype_name(tt_dtype_of(real)));
    ck_assert_msg(tt_ndim(fake) == tt_ndim(real), "%s: fake %s vs real %s", what, a, b);
    for (int d = 0; d < tt_ndim(real); d++) {
        ck_assert_msg(tt_sizes(fake)[d] == tt_sizes(real)[d], "%s: fake %s vs real %s (size %d)",
                      what, a, b, d);
        ck_assert_msg(tt_strides(fake)[d] == tt_strides(real)[d],
                      "%s: fake strides %s vs real %s (dim %d)", what, sa, sb, d);
    }
    ck_assert_msg(tt_storage_offset(fake) == tt_storage_offset(real),
                  "%s: fake offset %lld vs real %lld", what, (long long)tt_storage_offset(fake),
                  (long long)tt_storage_offset(real));
}

/* Asserts that two real tensors hold the same elements bit for bit (same
 * dtype and element count, logical order). */
static inline void tt_test_assert_same_bits(const tt_tensor *a, const tt_tensor *b,
                                            const char *what)
{
    int64_t n = tt_numel(a);
    size_t es = tt_dtype_size(tt_dtype_of(a));
    ck_assert_int_eq(tt_numel(b), n);
    ck_assert_int_eq(tt_dtype_of(a), tt_dtype_of(b));
    char *x = malloc((size_t)(n ? n : 1) * es), *y = malloc((size_t)(n ? n : 1) * es);
    ck_assert_msg(x && y, "%s: out of memory", what);
    OK(tt_to_buffer(a, x, (size_t)n * es));
    OK(tt_to_buffer(b, y, (size_t)n * es));
    ck_assert_msg(memcmp(x, y, (size_t)n * es) == 0, "%s: results differ", what);
    free(x);
    free(y);
}

/* ------------------------------------------------ kernels for test ops */

/* Reads a crop's arguments, (Tensor pic, int[4] box), with no checks
 * beyond the schema's (the tutorial's crop checks them:
 * tutorial_crop_args in tools/tutorial_ops.h). *pic and *box are borrowed
 * from the frame. */
static inline tt_status tt_test_crop_read_args(tt_frame *f, tt_tensor **pic, const int64_t **box)
{
    int n; /* 4: the dispatcher checked the schema's int[4] */
    tt_status st = tt_arg_tensor(f, 0, pic);
    return st ? st : tt_arg_ints(f, 1, box, &n);
}

/* The fake kernel of the test suites' contiguous crop, (Tensor pic,
 * int[4] box) -> Tensor: pic is (C,H,W), box = (x0,y0,x1,y1); out is
 * (C, y1-y0, x1-x0), contiguous. (The tutorial's crop, in
 * tools/tutorial_ops.c, returns a channels-last view instead.) */
static inline tt_status tt_test_crop_contiguous_fake(tt_frame *f)
{
    tt_tensor *pic;
    const int64_t *b;
    tt_status st = tt_test_crop_read_args(f, &pic, &b);
    if (st)
        return st;
    return tt_return(f, 0, tt_new_empty(pic, TT_SHAPE(tt_dim_size(pic, 0), b[3] - b[1],
                                                      b[2] - b[0])));
}

/* The kernel of mylib::twice(Tensor x) -> Tensor: x + x. The suites
 * register it with no fake kernel, so tracing a call is a graph break. */
static inline tt_status tt_test_twice_kernel(tt_frame *f)
{
    tt_tensor *x;
    tt_status st = tt_arg_tensor(f, 0, &x);
    return st ? st : tt_return(f, 0, tt_add(x, x));
}

/* Defines mylib::twice(Tensor x) -> Tensor in lib, with
 * tt_test_twice_kernel and no fake kernel; asserts that it worked. */
static inline const tt_op *tt_test_define_twice(tt_library *lib)
{
    return NN(tt_custom_op_define(lib, &(tt_custom_op_spec){
        .schema = "mylib::twice(Tensor x) -> Tensor",
        .mutates_args = "",
        .kernel = tt_test_twice_kernel,
    }));
}

/* Defines mylib::crop(Tensor pic, int[4] box) -> Tensor in lib, with the
 * suite's real kernel and tt_test_crop_contiguous_fake; asserts that it
 * worked. */
static inline const tt_op *tt_test_define_contiguous_crop(tt_library *lib, tt_kernel_fn kernel)
{
    return NN(tt_custom_op_define(lib, &(tt_custom_op_spec){
        .schema = "mylib::crop(Tensor pic, int[4] box) -> Tensor",
        .mutates_args = "",
        .kernel = kernel,
        .fake = tt_test_crop_contiguous_fake,
    }));
}

/* torch.library's nonzero example, mylib::nonzero(Tensor x) -> Tensor: x
 * is any shape; out is (n, ndim) i64, the indices of x's nonzero elements
 * in row-major order. */
static inline tt_status tt_test_nonzero_kernel(tt_frame *f)
{
    tt_tensor *x, *d = NULL, *out = NULL;
    tt_status st = tt_arg_tensor(f, 0, &x);
    if (st)
        return st;
    int nd = tt_ndim(x);
    int64_t n = tt_numel(x), count = 0;
    double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
    if (!v)
        return tt_frame_fail(f, TT_ENOMEM, "out of memory");
    d = tt_to_dtype(x, TT_F64);
    st = d ? tt_to_buffer(d, v, sizeof(double) * (size_t)n) : tt_errcode();
    if (!st) {
        for (int64_t k = 0; k < n; k++)
            count += v[k] != 0;
        out = tt_empty(TT_SHAPE(count, nd), TT_I64);
        st = out ? TT_OK : tt_errcode();
    }
    if (!st && count * nd > 0) {
        int64_t *o = tt_data(out);
        for (int64_t k = 0, r = 0; k < n; k++) {
            if (v[k] == 0)
                continue;
            for (int64_t dim = nd - 1, idx = k; dim >= 0; dim--) {
                o[r * nd + dim] = idx % tt_dim_size(x, (int)dim);
                idx /= tt_dim_size(x, (int)dim);
            }
            r++;
        }
    }
    tt_release(d);
    free(v);
    if (st) {
        tt_release(out);
        return st;
    }
    return tt_return(f, 0, out);
}

/* Its fake kernel: the output's first size is a new dynamic size, which
 * matches any real count. */
static inline tt_status tt_test_nonzero_fake(tt_frame *f)
{
    tt_tensor *x;
    tt_status st = tt_arg_tensor(f, 0, &x);
    if (st)
        return st;
    ck_assert(tt_frame_is_fake(f));
    tt_size nnz = tt_frame_new_dynamic_size(f);
    if (nnz == 0)
        return tt_errcode();
    return tt_return(f, 0, tt_fake_empty(2, (const tt_size[]){nnz, tt_ndim(x)}, TT_I64));
}

/* ---------------------------------------------- a traced training step */

/* The training step test_tracer and test_compile trace: loss =
 * mean((tanh(x * w) - target)^2); backward; w -= lr * grad in place under
 * no-grad; the gradient cleared (zero_grad). *loss receives a new
 * reference (NULL on failure). */
static inline tt_status tt_test_train_step(tt_tensor *w, tt_tensor *x, tt_tensor *target,
                                           double lr, tt_tensor **loss_out)
{
    tt_scope_begin();
    tt_tensor *h = tt_mul(x, w);
    tt_tensor *t = h ? tt_tanh(h) : NULL;
    tt_tensor *d = t ? tt_sub(t, target) : NULL;
    tt_tensor *sq = d ? tt_mul(d, d) : NULL;
    tt_tensor *loss = sq ? tt_mean_all(sq) : NULL;
    tt_status st = loss ? tt_backward(loss, NULL) : tt_errcode();
    tt_tensor *g = st ? NULL : tt_get_grad(w);
    if (!st && !g)
        st = tt_errcode();
    if (!st) {
        tt_no_grad_begin();
        st = tt_add_scaled_(w, g, -lr);
        tt_no_grad_end();
    }
    tt_release(g);
    if (!st)
        st = tt_set_grad(w, NULL);
    *loss_out = st ? NULL : tt_keep(loss);
    tt_scope_end();
    return st;
}

/* Removes, in place, the source lines the text print puts after each op
 * node ("  # model.c:12 in mlp", or "; model.c:12 in mlp" after a writes
 * comment), for tests about the rest of the text. Returns text. */
static inline char *tt_test_strip_locs(char *text)
{
    char *w = text;
    for (const char *r = text; *r;) {
        const char *eol = strchr(r, '\n');
        size_t len = eol ? (size_t)(eol - r) : strlen(r), keep = len;
        /* The line's last " in ", after "FILE:LINE" after "  # " or "; ". */
        const char *in = NULL;
        for (const char *p = r; p + 4 <= r + len; p++)
            if (strncmp(p, " in ", 4) == 0)
                in = p;
        const char *digits = in;
        while (digits && digits > r && digits[-1] >= '0' && digits[-1] <= '9')
            digits--;
        if (digits && digits < in && digits > r && digits[-1] == ':') {
            const char *file = digits - 1;
            while (file > r && file[-1] != ' ')
                file--;
            if (file - r >= 4 && strncmp(file - 4, "  # ", 4) == 0)
                keep = (size_t)(file - 4 - r);
            else if (file - r >= 2 && strncmp(file - 2, "; ", 2) == 0)
                keep = (size_t)(file - 2 - r);
        }
        memmove(w, r, keep);
        w += keep;
        r += len;
        if (*r)
            *w++ = *r++;
    }
    *w = '\0';
    return text;
}

/* main() for a suite file: runs `suite`, returns non-zero on failure. */
/* ---------------------------------------------------------------- logging */

/* TT_LOG's lines go to a temporary file for the test to read:
 * tt_test_log_begin("guards,recompiles"), run, then tt_test_log_end()
 * returns everything logged since (free() it) and switches logging off. */
static FILE *tt_test_log_file;

static inline void tt_test_log_begin(const char *topics)
{
    tt_test_log_file = tmpfile();
    ck_assert_ptr_nonnull(tt_test_log_file);
    tt_set_log_stream(tt_test_log_file);
    ck_assert_int_eq(tt_set_log(topics), TT_OK);
}

static inline char *tt_test_log_end(void)
{
    ck_assert_int_eq(tt_set_log(NULL), TT_OK);
    tt_set_log_stream(NULL);
    long n = ftell(tt_test_log_file);
    char *text = malloc((size_t)n + 1);
    rewind(tt_test_log_file);
    ck_assert_int_eq(fread(text, 1, (size_t)n, tt_test_log_file), n);
    text[n] = '\0';
    fclose(tt_test_log_file);
    return text;
}

/* How many times needle occurs in text. */
static inline int tt_test_count(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

#define TT_TEST_MAIN(make_suite)                                               \
    int main(void)                                                             \
    {                                                                          \
        SRunner *sr = srunner_create(make_suite());                            \
        srunner_run_all(sr, CK_NORMAL);                                        \
        int failed = srunner_ntests_failed(sr);                                \
        srunner_free(sr);                                                      \
        return failed ? 1 : 0;                                                 \
    }

#endif
