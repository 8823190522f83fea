/* The collectives as ops in namespace `dist`: all_reduce, broadcast,
 * all_gather, reduce_scatter. Each is defined through tt_custom_op_define,
 * the public call a user's custom op uses, with a kernel over MPI, a fake
 * kernel (metadata only, so traces record an opaque node) and a backward
 * made of these same ops (so a traced backward records collectives too).
 * One kernel, one fake kernel and one backward serve the four ops; the
 * op's row (its userdata) says which collective it is. */
#include "dist_impl.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { ALL_REDUCE, BROADCAST, ALL_GATHER, REDUCE_SCATTER, NCOLL } coll;

static const struct {
    const char *name, *schema;
} rows[NCOLL] = {
    [ALL_REDUCE] = {"dist::all_reduce", "dist::all_reduce(Tensor x, str op=\"sum\") -> Tensor"},
    [BROADCAST] = {"dist::broadcast", "dist::broadcast(Tensor x, int src=0) -> Tensor"},
    [ALL_GATHER] = {"dist::all_gather", "dist::all_gather(Tensor x) -> Tensor"},
    [REDUCE_SCATTER] = {"dist::reduce_scatter",
                        "dist::reduce_scatter(Tensor x, str op=\"sum\") -> Tensor"},
};

static tt_library *lib;
static tt_op *ops[NCOLL];

static coll which_of(tt_frame *f) { return (coll)(intptr_t)tt_frame_userdata(f); }

/* ------------------------------------------------------------ arguments */

typedef struct {
    coll c;
    tt_tensor *x;
    int param; /* the reduction (tt_red) or the broadcast's source rank */
    int ndim;
    tt_size sizes[TT_MAX_DIMS]; /* the output's */
} call;

/* Reads and checks the arguments (the same for the kernel and the fake
 * kernel, so both refuse the same calls) and works out the output shape. */
static tt_status read_args(tt_frame *f, call *k)
{
    const char *who = tt_op_name(tt_frame_op(f));
    k->c = which_of(f);
    tt_status st = tt__dist_check_caller(who);
    if (!st)
        st = tt_arg_tensor(f, 0, &k->x);
    if (st)
        return st;
    tt_dtype dt = tt_dtype_of(k->x);
    if (tt__dist_mpi_type(dt) == MPI_DATATYPE_NULL)
        return tt_frame_fail(f, TT_EDTYPE, "argument 'x' (#1) expects f32, f64, i64 or i32, "
                                           "got %s", tt_dtype_name(dt));
    int world = tt_dist_world_size();
    if (k->c == ALL_REDUCE || k->c == REDUCE_SCATTER) {
        const char *name;
        if ((st = tt_arg_str(f, 1, &name)))
            return st;
        k->param = tt__dist_red_from_name(name);
        if (k->param < 0)
            return tt_frame_fail(f, TT_EINVAL, "argument 'op' (#2) expects one of 'sum', "
                                               "'avg', 'max', 'min', got '%s'", name);
        if (k->param == TT_RED_AVG && !tt_dtype_is_float(dt))
            return tt_frame_fail(f, TT_EDTYPE, "argument 'op' (#2) 'avg' expects a floating "
                                               "point tensor, got %s (an integer average "
                                               "would round)", tt_dtype_name(dt));
    } else if (k->c == BROADCAST) {
        int64_t src;
        if ((st = tt_arg_int(f, 1, &src)))
            return st;
        if (src < 0 || src >= world)
            return tt_frame_fail(f, TT_EINVAL, "argument 'src' (#2) expects a rank in [0, %d), "
                                               "got %lld", world, (long long)src);
        k->param = (int)src;
    }
    k->ndim = tt_ndim(k->x);
    memcpy(k->sizes, tt_sizes(k->x), sizeof(tt_size) * (size_t)k->ndim);
    if ((k->c == ALL_GATHER || k->c == REDUCE_SCATTER) && k->ndim == 0)
        return tt_frame_fail(f, TT_ESHAPE, "argument 'x' (#1) expects at least 1 dim (ranks' "
                                           "parts are stacked along dim 0), got a 0-dim "
                                           "tensor");
    if (k->c == ALL_GATHER)
        k->sizes[0] = tt_sym_mul(k->sizes[0], world);
    if (k->c == REDUCE_SCATTER) {
        if (!tt_size_eq(tt_sym_mod(k->sizes[0], world), 0)) {
            char s[32];
            tt_size_str(k->sizes[0], s, sizeof s);
            return tt_frame_fail(f, TT_ESHAPE, "argument 'x' (#1) has %s rows in dim 0, not "
                                               "a multiple of the world size %d", s, world);
        }
        k->sizes[0] = tt_sym_floordiv(k->sizes[0], world);
    }
    return TT_OK;
}

/* Checked mode: the ranks exchange what they were called with before
 * communicating, so a mismatch (which would hang or truncate) is the same
 * clear error on every rank. */
enum { META_N = 4 + TT_MAX_DIMS };

static void meta_of(const call *k, int64_t m[META_N])
{
    memset(m, 0, sizeof(int64_t) * META_N);
    m[0] = k->c;
    m[1] = tt_dtype_of(k->x);
    m[2] = tt_ndim(k->x);
    m[3] = k->param;
    memcpy(m + 4, tt_sizes(k->x), sizeof(int64_t) * (size_t)tt_ndim(k->x));
}

static void meta_str(const int64_t m[META_N], char *buf, size_t n)
{
    char shape[256];
    tt_size_list_str((int)m[2], m + 4, false, shape, sizeof shape);
    snprintf(buf, n, "%s%s", tt_dtype_name((tt_dtype)m[1]), shape);
}

static tt_status exchange_meta(tt_frame *f, const call *k)
{
    const char *who = tt_op_name(tt_frame_op(f));
    int world = tt_dist_world_size();
    int64_t mine[META_N], *all = malloc(sizeof(int64_t) * META_N * (size_t)world);
    if (!all)
        return tt_frame_fail(f, TT_ENOMEM, "out of memory exchanging shapes (checked mode)");
    meta_of(k, mine);
    tt_status st = tt__dist_mpi_status(who, "MPI_Allgather (checked mode)",
                                       MPI_Allgather(mine, META_N, MPI_INT64_T, all, META_N,
                                                     MPI_INT64_T, tt__dist_comm()));
    for (int r = 1; !st && r < world; r++) {
        const int64_t *a = all, *b = all + (size_t)r * META_N;
        if (memcmp(a, b, sizeof mine) == 0)
            continue;
        char sa[300], sb[300];
        if (a[0] != b[0])
            st = tt_frame_fail(f, TT_EINVAL, "ranks disagree (checked mode): rank 0 called %s, "
                                             "rank %d called %s; every rank must call the "
                                             "same collectives in the same order",
                               rows[a[0]].name, r, rows[b[0]].name);
        else if (a[1] != b[1] || a[2] != b[2] || memcmp(a + 4, b + 4, 8 * TT_MAX_DIMS) != 0) {
            meta_str(a, sa, sizeof sa);
            meta_str(b, sb, sizeof sb);
            st = tt_frame_fail(f, TT_ESHAPE, "ranks disagree (checked mode): argument 'x' (#1) "
                                             "is %s on rank 0 but %s on rank %d; every rank "
                                             "must pass the same shape and dtype", sa, sb, r);
        } else if (k->c == BROADCAST) {
            st = tt_frame_fail(f, TT_EINVAL, "ranks disagree (checked mode): argument 'src' "
                                             "(#2) is %lld on rank 0 but %lld on rank %d",
                               (long long)a[3], (long long)b[3], r);
        } else {
            st = tt_frame_fail(f, TT_EINVAL, "ranks disagree (checked mode): argument 'op' "
                                             "(#2) is '%s' on rank 0 but '%s' on rank %d",
                               tt__dist_red_name((tt_red)a[3]),
                               tt__dist_red_name((tt_red)b[3]), r);
        }
    }
    free(all);
    return st;
}

/* -------------------------------------------------------------- kernels */

static tt_status kernel(tt_frame *f)
{
    call k;
    tt_status st = read_args(f, &k);
    if (st)
        return st;
    const char *who = tt_op_name(tt_frame_op(f));
    tt_dtype dt = tt_dtype_of(k.x);
    int64_t n = tt_numel(k.x);
    if (n > INT_MAX)
        return tt_frame_fail(f, TT_EINVAL, "argument 'x' (#1) has %lld elements; one MPI "
                                           "call takes at most %d", (long long)n, INT_MAX);
    if (tt_checked_mode() && (st = exchange_meta(f, &k)))
        return st;
    tt_tensor *xc = tt_contiguous(k.x), *out = xc ? tt_new_empty(k.x, k.ndim, k.sizes) : NULL;
    /* A buffer MPI may point at when a tensor has no elements. */
    static char none[8];
    char *in = xc && n ? tt_data(xc) : none, *o = out && tt_numel(out) ? tt_data(out) : none;
    if (!in || !o) {
        st = tt_errcode();
        goto out;
    }
    MPI_Comm comm = tt__dist_comm();
    MPI_Datatype type = tt__dist_mpi_type(dt);
    MPI_Op op = tt__dist_red_mpi_op((tt_red)k.param);
    int world = tt_dist_world_size();
    switch (k.c) {
    case ALL_REDUCE:
        st = tt__dist_mpi_status(who, "MPI_Allreduce",
                                 MPI_Allreduce(in, o, (int)n, type, op, comm));
        break;
    case BROADCAST:
        if (tt_dist_rank() == k.param)
            memcpy(o, in, (size_t)n * tt_dtype_size(dt));
        st = tt__dist_mpi_status(who, "MPI_Bcast", MPI_Bcast(o, (int)n, type, k.param, comm));
        break;
    case ALL_GATHER:
        st = tt__dist_mpi_status(who, "MPI_Allgather",
                                 MPI_Allgather(in, (int)n, type, o, (int)n, type, comm));
        break;
    case REDUCE_SCATTER:
        st = tt__dist_mpi_status(who, "MPI_Reduce_scatter_block",
                                 MPI_Reduce_scatter_block(in, o, (int)(n / world), type, op,
                                                          comm));
        break;
    default:
        st = tt_frame_fail(f, TT_EINTERNAL, "unknown collective %d", (int)k.c);
    }
    if (!st && k.param == TT_RED_AVG && (k.c == ALL_REDUCE || k.c == REDUCE_SCATTER))
        tt__dist_divide(o, tt_numel(out), dt, world);
    if (!st) {
        st = tt_return(f, 0, out);
        out = NULL;
    }
out:
    tt_release(out);
    tt_release(xc);
    return st;
}

/* Metadata only. Outside fake mode a fake input means the caller expected
 * a collective and would get none (the other ranks would wait for this
 * one): an error. Checked mode calls it on fake copies after the real
 * kernel ran, which is fine. */
static tt_status fake_kernel(tt_frame *f)
{
    call k;
    tt_status st = read_args(f, &k);
    if (st)
        return st;
    if (!tt_fake_mode_enabled() && !tt_checked_mode())
        return tt_frame_fail(f, TT_EINVAL, "argument 'x' (#1) is a fake tensor outside a "
                                          "trace: the other ranks would wait for a "
                                          "collective this rank never makes; trace the "
                                          "function (tt_trace, tt_compile) or pass a real "
                                          "tensor");
    return tt_return(f, 0, tt_new_empty(k.x, k.ndim, k.sizes));
}

/* ------------------------------------------------------------ backward */

static tt_status setup_context(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                               const tt_value *out, int nout)
{
    (void)out, (void)nout;
    const tt_op *op = tt_ctx_op(ctx);
    int64_t param = 0;
    if (op == ops[BROADCAST])
        param = nin > 1 ? in[1].u.i : 0;
    else if (op == ops[ALL_REDUCE] || op == ops[REDUCE_SCATTER])
        param = tt__dist_red_from_name(nin > 1 ? in[1].u.s : "sum");
    return tt_ctx_save_int(ctx, "param", param);
}

static tt_status backward(tt_autograd_ctx *ctx, tt_tensor *const *grads, int ngrads,
                          tt_tensor **grad_inputs, int ninputs)
{
    (void)ngrads, (void)ninputs;
    const tt_op *op = tt_ctx_op(ctx);
    int64_t param;
    tt_status st = tt_ctx_get_int(ctx, "param", &param);
    if (st)
        return st;
    tt_tensor *g = grads[0], *r = NULL;
    bool reduces = op == ops[ALL_REDUCE] || op == ops[REDUCE_SCATTER];
    if (reduces && param != TT_RED_SUM && param != TT_RED_AVG)
        return tt_error(TT_EAUTOGRAD, "%s: op '%s' has no derivative (only 'sum' and 'avg' "
                                      "do, as in torch.distributed)", tt_op_name(op),
                        tt__dist_red_name((tt_red)param));
    if (op == ops[ALL_REDUCE]) {
        r = tt_dist_all_reduce(g, tt__dist_red_name((tt_red)param));
    } else if (op == ops[BROADCAST]) {
        /* Every rank's output came from src: src gets the sum of all the
         * gradients; the others' inputs were not used. */
        tt_tensor *sum = tt_dist_all_reduce(g, "sum");
        if (sum && tt_dist_rank() != param) {
            r = tt_zeros(tt_ndim(g), tt_sizes(g), tt_dtype_of(g));
            tt_release(sum);
        } else {
            r = sum;
        }
    } else if (op == ops[ALL_GATHER]) {
        r = tt_dist_reduce_scatter(g, "sum");
    } else {
        r = tt_dist_all_gather(g);
        if (r && param == TT_RED_AVG) {
            tt_tensor *d = tt_div_scalar(r, tt_dist_world_size());
            tt_release(r);
            r = d;
        }
    }
    grad_inputs[0] = r;
    return r ? TT_OK : tt_errcode();
}

/* ---------------------------------------------------------- registration */

static tt_status init_status;
static char init_error[512]; /* why defining the ops failed, for every later call */

static void define_failed(void)
{
    init_status = tt_errcode() ? tt_errcode() : TT_EINTERNAL;
    snprintf(init_error, sizeof init_error, "%s", tt_errmsg());
}

static void define_ops(void)
{
    lib = tt_library_new(TT_LIB_DEF, "dist");
    if (!lib) {
        define_failed();
        return;
    }
    for (int c = 0; c < NCOLL; c++) {
        ops[c] = tt_custom_op_define(lib, &(tt_custom_op_spec){
                                              .schema = rows[c].schema,
                                              .kernel = kernel,
                                              .fake = fake_kernel,
                                              .backward = backward,
                                              .setup_context = setup_context,
                                              .userdata = (void *)(intptr_t)c,
                                          });
        if (!ops[c]) {
            define_failed();
            lib = tt_library_free(lib);
            return;
        }
    }
}

tt_status tt_dist_ops_init(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, define_ops);
    if (init_status)
        return tt_error(init_status, "tt_dist_ops_init: defining the dist ops failed: %s",
                        init_error);
    return TT_OK;
}

/* ------------------------------------------------------- typed wrappers */

static tt_tensor *call_coll(coll c, const tt_tensor *x, tt_value arg2, int nargs)
{
    if (tt_dist_ops_init())
        return NULL;
    return tt_op_call1(ops[c], (tt_value[]){tt_v_tensor(x), arg2}, nargs);
}

tt_tensor *tt_dist_all_reduce(const tt_tensor *x, const char *op)
{
    return call_coll(ALL_REDUCE, x, tt_v_str(op ? op : "sum"), 2);
}

tt_tensor *tt_dist_broadcast(const tt_tensor *x, int src)
{
    return call_coll(BROADCAST, x, tt_v_int(src), 2);
}

tt_tensor *tt_dist_all_gather(const tt_tensor *x)
{
    return call_coll(ALL_GATHER, x, tt_v_none(), 1);
}

tt_tensor *tt_dist_reduce_scatter(const tt_tensor *x, const char *op)
{
    return call_coll(REDUCE_SCATTER, x, tt_v_str(op ? op : "sum"), 2);
}
