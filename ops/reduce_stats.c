/* Built-in ops: statistics over dims, var and std (with PyTorch's
 * `correction`), and the truth reductions any and all.
 *
 * The reduced dims are moved last and the input is copied to that order
 * (linear time), so each output reduces one contiguous row of n elements;
 * rows run in parallel above a size threshold. var and std take two passes
 * over a row in double (the mean, then the squared deviations from it),
 * which keeps the cancellation of a naive sum of squares out: PyTorch's
 * CPU kernel (Welford in double) is as accurate.
 *
 * As in reduce.c, one function computes the output's metadata and
 * allocates it; for fake inputs it stops there, so the real kernel and the
 * fake kernel are the same code. */
#include "elementwise_impl.h"

#define STATS_GRAIN 32768 /* elements per parallel task, at least */

/* The row's data: var or std; any or all, over every dim or one. */
enum { ST_VAR, ST_STD };
enum { TRUTH_ANY = 0, TRUTH_ALL = 1, TRUTH_DIM = 2 };

/* A contiguous copy of real tensor a with the kept dims first (in order)
 * and the reduced ones last: row r of *n elements is output r's. */
static tt_tensor *rows_copy(const tt_tensor *a, const bool *mask, int64_t *n)
{
    tt_tensor v;
    memcpy(&v, a, sizeof v);
    int k = 0;
    *n = 1;
    for (int pass = 0; pass < 2; pass++)
        for (int d = 0; d < a->ndim; d++)
            if (mask[d] == (pass == 1)) {
                v.sizes[k] = a->sizes[d];
                v.strides[k++] = a->strides[d];
                if (pass == 1)
                    *n *= a->sizes[d];
            }
    tt_tensor *c = tt__empty_impl(a->ndim, v.sizes, NULL, (tt_dtype)a->dtype, false);
    if (c && tt__copy_raw(c, &v))
        c = tt_release(c);
    return c;
}

/* ------------------------------------------------------------ var, std */

typedef struct {
    const char *x;
    char *out;
    tt_dtype dt;
    int64_t n;
    double div; /* max(0, n - correction) */
    bool is_std;
} var_job;

#define VAR_ROW(SUF, T)                                                        \
    static double var_row_##SUF(const T *x, int64_t n, double div)             \
    {                                                                          \
        double s = 0, m2 = 0;                                                  \
        for (int64_t i = 0; i < n; i++)                                        \
            s += x[i];                                                         \
        double mean = s / (double)n;                                           \
        for (int64_t i = 0; i < n; i++) {                                      \
            double d = x[i] - mean;                                            \
            m2 += d * d;                                                       \
        }                                                                      \
        return m2 / div;                                                       \
    }
VAR_ROW(f32, float)
VAR_ROW(f64, double)

static void task_var(int64_t b, int64_t e, void *vj)
{
    const var_job *j = vj;
    for (int64_t r = b; r < e; r++) {
        double v = j->dt == TT_F32
                       ? var_row_f32((const float *)j->x + r * j->n, j->n, j->div)
                       : var_row_f64((const double *)j->x + r * j->n, j->n, j->div);
        if (j->is_std)
            v = sqrt(v);
        tt__store(j->out + r * (int64_t)tt_dtype_size(j->dt), j->dt, v);
    }
}

static tt_builtin_id var_id(int which)
{
    return which == ST_STD ? TT_OP_STD_CORRECTION : TT_OP_VAR_CORRECTION;
}

/* var.correction / std.correction: metadata, allocation and, for real
 * inputs, the two-pass computation. */
static tt_tensor *var_std(int which, const tt_tensor *a, const tt_value *dimv, int64_t corr,
                          bool keepdim)
{
    const char *name = tt__op_label(var_id(which));
    tt_dtype dt = (tt_dtype)a->dtype;
    if (!tt_dtype_is_float(dt)) {
        tt_error(TT_EDTYPE, "%s: argument 'self' (#1): std and var only support floating point "
                            "dtypes, got %s", name, tt_dtype_name(dt));
        return NULL;
    }
    bool mask[TT_MAX_DIMS];
    tt_size sizes[TT_MAX_DIMS];
    if (tt__reduce_mask(name, a, dimv, mask))
        return NULL;
    int ond = tt__reduced_shape(a, mask, keepdim, sizes);
    tt_tensor *out = tt__ops_new(a->storage->fake, ond, sizes, NULL, dt);
    if (!out || a->storage->fake || tt_numel(out) == 0)
        return out;
    int64_t n;
    tt_tensor *x = rows_copy(a, mask, &n);
    if (!x)
        return tt_release(out);
    /* PyTorch divides by max(0, n - correction): n <= correction gives
     * inf (or NaN for a zero sum of squares, and for n == 0). */
    double div = (double)n - (double)corr;
    var_job j = {tt__ptr(x), tt__ptr(out), dt, n, div > 0 ? div : 0, which == ST_STD};
    int64_t rows = tt_numel(out);
    if (n == 0)
        tt__fill_raw(out, NAN);
    else if (rows * n <= STATS_GRAIN || rows == 1)
        task_var(0, rows, &j);
    else
        tt_parallel_for(rows, STATS_GRAIN / n + 1, task_var, &j);
    tt_release(x);
    return out;
}

/* An optional dim list (int[1]? dim): *dimv stays None when the call
 * passes none. */
static tt_status dims_arg(tt_frame *f, int i, tt_value *dimv)
{
    const int64_t *dims;
    int n;
    tt_status st = TT_OK;
    if (!tt_arg_is_none(f, i) && !(st = tt_arg_ints(f, i, &dims, &n)))
        *dimv = tt_v_ints(n, dims);
    return st;
}

/* Reads var/std's arguments: (self, int[1]? dim, *, int? correction,
 * bool keepdim). */
static tt_status var_kernel(tt_frame *f)
{
    int which = (int)KIND_OF(tt_frame_userdata(f));
    tt_tensor *self;
    tt_value dimv = tt_v_none();
    int64_t corr = 1;
    bool keepdim = false;
    tt_status st = tt_arg_tensor(f, 0, &self);
    if (!st)
        st = dims_arg(f, 1, &dimv);
    if (!st && !tt_arg_is_none(f, 2))
        st = tt_arg_int(f, 2, &corr);
    if (!st)
        st = tt_arg_bool(f, 3, &keepdim);
    if (st)
        return st;
    tt_tensor *r = var_std(which, self, &dimv, corr, keepdim);
    return r ? tt_return(f, 0, r) : tt_errcode();
}

/* var.dim(self, dim, unbiased, keepdim): Core ATen's older form, var
 * with correction 1 (unbiased) or 0. */
static tt_status var_dim_kernel(tt_frame *f)
{
    tt_tensor *self;
    tt_value dimv = tt_v_none();
    bool unbiased = true, keepdim = false;
    tt_status st = tt_arg_tensor(f, 0, &self);
    if (!st)
        st = dims_arg(f, 1, &dimv);
    if (!st)
        st = tt_arg_bool(f, 2, &unbiased);
    if (!st)
        st = tt_arg_bool(f, 3, &keepdim);
    if (st)
        return st;
    tt_tensor *r = var_std(ST_VAR, self, &dimv, unbiased ? 1 : 0, keepdim);
    return r ? tt_return(f, 0, r) : tt_errcode();
}

/* self, the reduced dims as a list, the correction and keepdim; std keeps
 * its result too. */
static tt_status setup_var(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                           const tt_value *out, int nout)
{
    (void)nout;
    const tt_tensor *x = in[0].u.t;
    bool mask[TT_MAX_DIMS];
    tt_value dimv = nin > 1 ? in[1] : tt_v_none();
    tt_status st = tt__reduce_mask("var", x, &dimv, mask);
    int64_t dims[TT_MAX_DIMS];
    int nd = 0;
    for (int d = 0; d < x->ndim; d++)
        if (mask[d])
            dims[nd++] = d;
    if (!st)
        st = tt_ctx_save_ints(ctx, "dims", nd, dims);
    if (!st)
        st = tt_ctx_save_int(ctx, "corr", nin > 2 && in[2].kind == TT_V_INT ? in[2].u.i : 1);
    if (!st)
        st = tt_ctx_save_int(ctx, "keepdim", nin > 3 && in[3].kind == TT_V_BOOL && in[3].u.b);
    if (!st)
        st = tt_ctx_save_for_backward(ctx, 2, (tt_tensor *[]){in[0].u.t, out[0].u.t});
    return st;
}

/* var.dim: setup_var's with unbiased read as the correction. */
static tt_status setup_var_dim(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                               const tt_value *out, int nout)
{
    tt_value as_corr[4] = {in[0], nin > 1 ? in[1] : tt_v_none(),
                           tt_v_int(nin > 2 && in[2].kind == TT_V_BOOL && !in[2].u.b ? 0 : 1),
                           nin > 3 ? in[3] : tt_v_bool(false)};
    return setup_var(ctx, as_corr, 4, out, nout);
}

/* PyTorch's var_backward: g * 2 / (n - correction) * (x - mean(x)); and
 * std_backward: var_backward of g / (2 std), 0 where std is 0. g and the
 * result get the reduced dims back as size 1 first. */
static tt_status var_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                              tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    tt_tensor *x = SAVED(0), *res = SAVED(1);
    const int64_t *dims;
    int nd;
    int64_t corr = 1, keep = 0;
    tt_status st = tt_ctx_get_ints(ctx, "dims", &dims, &nd);
    if (!st)
        st = tt_ctx_get_int(ctx, "corr", &corr);
    if (!st)
        st = tt_ctx_get_int(ctx, "keepdim", &keep);
    if (st || !NEED(0))
        return st;
    int ndim = tt_ndim(x);
    bool mask[TT_MAX_DIMS] = {false};
    tt_size n = 1, ksizes[TT_MAX_DIMS];
    for (int i = 0; i < nd; i++)
        mask[dims[i]] = true;
    for (int d = 0; d < ndim; d++) {
        ksizes[d] = mask[d] ? 1 : tt_sizes(x)[d];
        n = mask[d] ? tt_sym_mul(n, tt_sizes(x)[d]) : n;
    }
    tt_scope_begin();
    tt_tensor *gk = keep ? g[0] : tt_reshape(g[0], ndim, ksizes);
    if (KIND_OF(tt_ctx_userdata(ctx)) == ST_STD) {
        tt_tensor *rk = keep ? res : tt_reshape(res, ndim, ksizes);
        gk = tt_where_scalar(eq_scalar(rk, 0), 0, tt_div(gk, tt_mul_scalar(rk, 2)));
    }
    tt_tensor *r = tt_mul(tt_mul_scalar(gk, 2), tt_sub(x, tt_mean(x, nd, dims, true)));
    tt_size div = tt_sym_sub(n, corr);
    /* Under a symbolic trace n - correction is an expression: it travels
     * as an int Scalar, which a compiled plan evaluates on the real sizes
     * (as reduce.c's mean backward does). */
    if (tt_size_is_sym(div))
        r = tt__call_op(TT_OP_DIV_SCALAR, TT_ARGS(tt_v_tensor(r), tt_v_int(div)));
    else
        r = tt_div_scalar(r, div > 0 ? (double)div : 0.0);
    st = tt__put_grad(ctx, gi, 0, tt_keep(r));
    tt_scope_end();
    return st;
}

/* ------------------------------------------------------------ any, all */

typedef struct {
    const char *x;
    char *out;
    tt_dtype dt, odt;
    int64_t n;
    bool all;
} truth_job;

static void task_truth(int64_t b, int64_t e, void *vj)
{
    const truth_job *j = vj;
    size_t es = tt_dtype_size(j->dt);
    for (int64_t r = b; r < e; r++) {
        const char *p = j->x + (size_t)(r * j->n) * es;
        /* any stops at the first nonzero, all at the first zero; NaN is
         * nonzero. An empty row is all's true and any's false. */
        bool v = j->all;
        for (int64_t i = 0; i < j->n; i++)
            if ((tt__load(p + (size_t)i * es, j->dt) != 0) != j->all) {
                v = !j->all;
                break;
            }
        tt__store(j->out + r * (int64_t)tt_dtype_size(j->odt), j->odt, v);
    }
}

static tt_builtin_id truth_id(int code)
{
    static const tt_builtin_id ids[4] = {TT_OP_ANY, TT_OP_ALL, TT_OP_ANY_DIM, TT_OP_ALL_DIM};
    return ids[code];
}

/* any/all over the dims of mask: bool out, u8 for a u8 input (PyTorch
 * 1.13's rule). */
static tt_tensor *truth_over(int code, const tt_tensor *a, const bool *mask, bool keepdim)
{
    tt_dtype odt = a->dtype == TT_U8 ? TT_U8 : TT_BOOL;
    tt_size sizes[TT_MAX_DIMS];
    int ond = tt__reduced_shape(a, mask, keepdim, sizes);
    tt_tensor *out = tt__ops_new(a->storage->fake, ond, sizes, NULL, odt);
    if (!out || a->storage->fake || tt_numel(out) == 0)
        return out;
    int64_t n;
    tt_tensor *x = rows_copy(a, mask, &n);
    if (!x)
        return tt_release(out);
    truth_job j = {tt__ptr(x), tt__ptr(out), (tt_dtype)a->dtype, odt, n, code & TRUTH_ALL};
    int64_t rows = tt_numel(out);
    if (rows * n <= STATS_GRAIN || rows == 1)
        task_truth(0, rows, &j);
    else
        tt_parallel_for(rows, STATS_GRAIN / (n ? n : 1) + 1, task_truth, &j);
    tt_release(x);
    return out;
}

/* any/all over every dim (!has_dim) or one. */
static tt_tensor *truth(int code, const tt_tensor *a, bool has_dim, int64_t dim, bool keepdim)
{
    bool mask[TT_MAX_DIMS] = {false};
    if (has_dim) {
        int d = tt__op_dim(tt__op_label(truth_id(code)), "dim", 2, dim, a->ndim);
        if (d < 0)
            return NULL;
        if (d < a->ndim)
            mask[d] = true;
    } else {
        for (int d = 0; d < a->ndim; d++)
            mask[d] = true;
    }
    return truth_over(code, a, mask, has_dim && keepdim);
}

/* any.dims / all.dims (PyTorch 2.2's): over a list of dims, None (or [])
 * for every one, keepdim for each reduced dim. */
static tt_status truth_dims_kernel(tt_frame *f)
{
    int code = (int)KIND_OF(tt_frame_userdata(f));
    tt_tensor *self;
    tt_value dimv = tt_v_none();
    bool keepdim = false, mask[TT_MAX_DIMS];
    tt_status st = tt_arg_tensor(f, 0, &self);
    if (!st)
        st = dims_arg(f, 1, &dimv);
    if (!st)
        st = tt_arg_bool(f, 2, &keepdim);
    if (!st)
        st = tt__reduce_mask(tt__op_label(code & TRUTH_ALL ? TT_OP_ALL_DIMS : TT_OP_ANY_DIMS),
                             self, &dimv, mask);
    if (st)
        return st;
    tt_tensor *r = truth_over(code, self, mask, keepdim);
    return r ? tt_return(f, 0, r) : tt_errcode();
}

static tt_status truth_kernel(tt_frame *f)
{
    int code = (int)KIND_OF(tt_frame_userdata(f));
    tt_tensor *self;
    int64_t dim = 0;
    bool keepdim = false;
    tt_status st = tt_arg_tensor(f, 0, &self);
    if (!st && (code & TRUTH_DIM))
        st = tt_arg_int(f, 1, &dim);
    if (!st && (code & TRUTH_DIM))
        st = tt_arg_bool(f, 2, &keepdim);
    if (st)
        return st;
    tt_tensor *r = truth(code, self, code & TRUTH_DIM, dim, keepdim);
    return r ? tt_return(f, 0, r) : tt_errcode();
}


#undef TT__FAMILY_STATS
#define TT__FAMILY_STATS TT__ROW
static const tt__builtin_row rows[] = {TT__FAMILY_ROWS};

tt_status tt__register_stats(tt_library *lib)
{
    return TT__DEFINE_ROWS(lib, rows);
}

/* ---------------------------------------------------------- typed wrappers */

static tt_tensor *var_call(int which, const tt_tensor *a, int ndims, const int64_t *dims,
                           int64_t correction, bool keepdim)
{
    tt_builtin_id id = var_id(which);
    if (ndims < 0 || (ndims > 0 && !dims)) {
        tt_error(TT_EINVAL, "%s: argument 'dim' (#2): expects %d dims, got %s",
                 tt__op_label(id), ndims, dims ? "a negative count" : "NULL");
        return NULL;
    }
    tt_value dimv = ndims ? tt_v_ints(ndims, dims) : tt_v_none();
    if (tt__fast_path(id, 1, &a))
        return var_std(which, a, &dimv, correction, keepdim);
    return tt__call_op(id, TT_ARGS(tt_v_tensor(a), dimv, tt_v_int(correction),
                                   tt_v_bool(keepdim)));
}

tt_tensor *tt_var(const tt_tensor *a, int ndims, const int64_t *dims, int64_t correction,
                  bool keepdim)
{
    return var_call(ST_VAR, a, ndims, dims, correction, keepdim);
}

tt_tensor *tt_std(const tt_tensor *a, int ndims, const int64_t *dims, int64_t correction,
                  bool keepdim)
{
    return var_call(ST_STD, a, ndims, dims, correction, keepdim);
}

static tt_tensor *truth_call(int code, const tt_tensor *a, int64_t dim, bool keepdim)
{
    tt_builtin_id id = truth_id(code);
    if (tt__fast_path(id, 1, &a))
        return truth(code, a, code & TRUTH_DIM, dim, keepdim);
    if (code & TRUTH_DIM)
        return tt__call_op(id, TT_ARGS(tt_v_tensor(a), tt_v_int(dim), tt_v_bool(keepdim)));
    return tt__call_op(id, TT_ARGS(tt_v_tensor(a)));
}

tt_tensor *tt_any(const tt_tensor *a) { return truth_call(TRUTH_ANY, a, 0, false); }
tt_tensor *tt_all(const tt_tensor *a) { return truth_call(TRUTH_ALL, a, 0, false); }

tt_tensor *tt_any_dim(const tt_tensor *a, int64_t dim, bool keepdim)
{
    return truth_call(TRUTH_ANY | TRUTH_DIM, a, dim, keepdim);
}

tt_tensor *tt_all_dim(const tt_tensor *a, int64_t dim, bool keepdim)
{
    return truth_call(TRUTH_ALL | TRUTH_DIM, a, dim, keepdim);
}

static tt_tensor *truth_dims_call(tt_builtin_id id, const tt_tensor *a, int ndims,
                                  const int64_t *dims, bool keepdim)
{
    if (ndims < 0 || (ndims > 0 && !dims)) {
        tt_error(TT_EINVAL, "%s: argument 'dim' (#2): expects %d dims, got %s",
                 tt__op_label(id), ndims, dims ? "a negative count" : "NULL");
        return NULL;
    }
    return tt__call_op(id, TT_ARGS(tt_v_tensor(a), ndims ? tt_v_ints(ndims, dims) : tt_v_none(),
                                   tt_v_bool(keepdim)));
}

tt_tensor *tt_any_dims(const tt_tensor *a, int ndims, const int64_t *dims, bool keepdim)
{
    return truth_dims_call(TT_OP_ANY_DIMS, a, ndims, dims, keepdim);
}

tt_tensor *tt_all_dims(const tt_tensor *a, int ndims, const int64_t *dims, bool keepdim)
{
    return truth_dims_call(TT_OP_ALL_DIMS, a, ndims, dims, keepdim);
}
