/* The dist library under MPI (run as `mpirun -np 2 test_dist`): the process
 * group, the four collectives in every dtype and reduction, their
 * derivatives, their errors (no group, bad arguments, ranks that disagree
 * in checked mode, fake tensors outside a trace), tracing and DOT with the
 * collective as an opaque node, and data-parallel training: the MLP on 2
 * ranks with half of the batch each ends where one process on the whole
 * batch ends, eagerly (tt_ddp, overlapping buckets) and compiled (one
 * graph with the collective inside, replayed).
 *
 * Check runs without fork (a forked child must not use MPI). Every rank
 * runs every check; rank 0 prints one summary line in Check's format in
 * which a check counts once and fails when it failed on any rank, so
 * tools/run counts the checks once. Each rank prints its own failures. */
#include "tt_test.h"

#include <math.h>
#include <mpi.h>
#include <stdio.h>

#include "dist_mlp.h"

/* The error message without the call sites a failing call appends. */
static const char *errmsg_core(void)
{
    static char buf[2048];
    return tt_test_errmsg_core(buf, sizeof buf);
}

static int rank_, world_;

static void dist_setup(void)
{
    tt_test_setup();
    OK(tt_dist_init(NULL));
}

static void dist_teardown(void)
{
    tt_set_checked_mode(false);
    OK(tt_dist_finalize());
    tt_test_teardown();
}

/* A tensor of dtype dt holding v (row-major). */
static tt_tensor *mk(int nd, const int64_t *sz, tt_dtype dt, const double *v)
{
    tt_tensor *t = NN(tt_from_data(nd, sz, TT_F64, v));
    if (dt != TT_F64) {
        tt_tensor *c = NN(tt_to_dtype(t, dt));
        tt_release(t);
        t = c;
    }
    return t;
}

static void assert_values(const tt_tensor *t, int64_t n, const double *want, const char *what)
{
    ck_assert_int_eq(tt_numel(t), n);
    double *v = tt_test_values(t);
    for (int64_t i = 0; i < n; i++)
        ck_assert_msg(fabs(v[i] - want[i]) <= 1e-6 * (1 + fabs(want[i])),
                      "%s: element %lld is %g, expected %g (rank %d)", what, (long long)i, v[i],
                      want[i], rank_);
    free(v);
}

/* ========================================================== the group */

/* Before tt_dist_init: every entry point says there is no group. */
START_TEST(test_no_group)
{
    ck_assert(!tt_dist_is_initialized());
    ck_assert_int_eq(tt_dist_rank(), -1);
    ck_assert_error(TT_EINVAL, "tt_dist_rank: no process group: call tt_dist_init first");
    ck_assert_int_eq(tt_dist_world_size(), -1);
    ck_assert_int_eq(tt_dist_barrier(), TT_EINVAL);
    ck_assert_str_eq(errmsg_core(), "tt_dist_barrier: no process group: call tt_dist_init first "
                                  "(on every rank)");
    tt_tensor *x = NN(tt_ones(TT_SHAPE(3), TT_F32));
    ck_assert_ptr_null(tt_dist_all_reduce(x, "sum"));
    ck_assert_error(TT_EINVAL, "dist::all_reduce: no process group: call tt_dist_init first");
    ck_assert_ptr_null(tt_dist_all_gather(x));
    ck_assert_error(TT_EINVAL, "dist::all_gather: no process group");
    OK(tt_set_requires_grad(x, true));
    ck_assert_ptr_null(tt_ddp_new(1, &x, NULL));
    ck_assert_error(TT_EINVAL, "tt_ddp_new: no process group");
    ck_assert_int_eq(tt_dist_average_grads(1, &x, 0), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_dist_average_grads: no process group");
    OK(tt_dist_finalize()); /* nothing to finalize */
    tt_release(x);
}
END_TEST

START_TEST(test_group)
{
    ck_assert(tt_dist_is_initialized());
    ck_assert_int_eq(tt_dist_world_size(), world_);
    ck_assert_int_eq(tt_dist_rank(), rank_);
    OK(tt_dist_barrier());
    ck_assert_int_eq(tt_dist_init(NULL), TT_EEXIST);
    ck_assert_error(TT_EEXIST, "tt_dist_init: the process group exists already");
    /* A communicator of the caller's: each rank alone. MPI was
     * initialised by this program, so finalising the group leaves it. */
    OK(tt_dist_finalize());
    MPI_Comm alone;
    ck_assert_int_eq(MPI_Comm_split(MPI_COMM_WORLD, rank_, 0, &alone), MPI_SUCCESS);
    OK(tt_dist_init_comm(alone));
    ck_assert_int_eq(tt_dist_world_size(), 1);
    ck_assert_int_eq(tt_dist_rank(), 0);
    tt_tensor *x = mk(1, (int64_t[]){2}, TT_F32, (double[]){rank_, 1});
    tt_tensor *y = NN(tt_dist_all_reduce(x, "sum"));
    assert_values(y, 2, (double[]){rank_, 1}, "all_reduce over a group of one");
    tt_release(x);
    tt_release(y);
    OK(tt_dist_finalize());
    int finalized = 1;
    MPI_Finalized(&finalized);
    ck_assert_int_eq(finalized, 0);
    MPI_Comm_free(&alone);
    MPI_Comm null = MPI_COMM_NULL;
    ck_assert_int_eq(tt_dist_init(&(tt_dist_opts){&null}), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_dist_init: argument 'opts->mpi_comm' is MPI_COMM_NULL");
    OK(tt_dist_init(NULL)); /* for the teardown */
}
END_TEST

/* ======================================================== collectives */

static const tt_dtype dtypes[] = {TT_F32, TT_F64, TT_I64, TT_I32};
static const char *const reds[] = {"sum", "avg", "max", "min"};

/* x on rank r is [r + 1, 10 - 3r, -2r, 7]; loops over dtype x reduction. */
START_TEST(test_all_reduce)
{
    tt_dtype dt = dtypes[_i / 4];
    const char *red = reds[_i % 4];
    double v[4] = {rank_ + 1, 10 - 3 * rank_, -2 * rank_, 7}, want[4];
    for (int k = 0; k < 4; k++) {
        double s = 0, mx = -INFINITY, mn = INFINITY;
        for (int r = 0; r < world_; r++) {
            double e = k == 0 ? r + 1 : k == 1 ? 10 - 3 * r : k == 2 ? -2 * r : 7;
            s += e;
            mx = fmax(mx, e);
            mn = fmin(mn, e);
        }
        want[k] = _i % 4 == 0 ? s : _i % 4 == 1 ? s / world_ : _i % 4 == 2 ? mx : mn;
    }
    tt_tensor *x = mk(2, (int64_t[]){2, 2}, dt, v);
    tt_tensor *y = tt_dist_all_reduce(x, red);
    if (_i % 4 == 1 && !tt_dtype_is_float(dt)) {
        ck_assert_ptr_null(y);
        char msg[200];
        snprintf(msg, sizeof msg, "dist::all_reduce: argument 'op' (#2) 'avg' expects a "
                                  "floating point tensor, got %s (an integer average would "
                                  "round)", tt_dtype_name(dt));
        ck_assert_int_eq(tt_errcode(), TT_EDTYPE);
        ck_assert_str_eq(errmsg_core(), msg);
    } else {
        NN(y);
        ck_assert_int_eq(tt_dtype_of(y), dt);
        ck_assert(!tt_same_storage(x, y)); /* functional: a new tensor */
        assert_values(y, 4, want, red);
        assert_values(x, 4, v, "the input"); /* untouched */
    }
    tt_release(x);
    tt_release(y);
}
END_TEST

START_TEST(test_broadcast_gather_scatter)
{
    /* A transposed (non-contiguous) input: [[r, r+2], [r+1, r+3]]^T. */
    double v[4] = {rank_, rank_ + 1, rank_ + 2, rank_ + 3};
    tt_tensor *base = mk(2, (int64_t[]){2, 2}, TT_F64, v), *x = NN(tt_t(base));
    tt_tensor *b = NN(tt_dist_broadcast(x, 1));
    assert_values(b, 4, (double[]){1, 3, 2, 4}, "broadcast from rank 1");
    tt_tensor *g = NN(tt_dist_all_gather(x));
    ck_assert_int_eq(tt_dim_size(g, 0), 2 * world_);
    ck_assert_int_eq(tt_dim_size(g, 1), 2);
    double gw[16];
    for (int r = 0; r < world_; r++) {
        gw[4 * r] = r, gw[4 * r + 1] = r + 2, gw[4 * r + 2] = r + 1, gw[4 * r + 3] = r + 3;
    }
    assert_values(g, 4 * world_, gw, "all_gather");
    /* reduce_scatter of a [2 * world, 1] tensor holding 10r + i: rank r
     * gets rows [2r, 2r + 2) summed over ranks. */
    double rv[8];
    for (int i = 0; i < 2 * world_; i++)
        rv[i] = 10 * rank_ + i;
    tt_tensor *rs_in = mk(2, (int64_t[]){2 * world_, 1}, TT_I32, rv);
    tt_tensor *rs = NN(tt_dist_reduce_scatter(rs_in, "sum"));
    ck_assert_int_eq(tt_dim_size(rs, 0), 2);
    double sum10 = 0;
    for (int r = 0; r < world_; r++)
        sum10 += 10 * r;
    assert_values(rs, 2, (double[]){sum10 + world_ * 2 * rank_, sum10 + world_ * (2 * rank_ + 1)},
                  "reduce_scatter sum");
    tt_tensor *rsf = NN(tt_to_dtype(rs_in, TT_F32)), *rsa = NN(tt_dist_reduce_scatter(rsf, "avg"));
    assert_values(rsa, 2, (double[]){(sum10 + world_ * 2 * rank_) / world_,
                                     (sum10 + world_ * (2 * rank_ + 1)) / world_},
                  "reduce_scatter avg");
    tt_tensor *rsm = NN(tt_dist_reduce_scatter(rs_in, "max"));
    assert_values(rsm, 2, (double[]){10 * (world_ - 1) + 2 * rank_,
                                     10 * (world_ - 1) + 2 * rank_ + 1}, "reduce_scatter max");
    /* Through the registry, as any op. */
    const tt_op *op = NN(tt_op_find("dist::broadcast"));
    ck_assert(!tt_op_is_builtin(op) && tt_op_has_fake(op) && tt_op_has_autograd(op));
    tt_tensor *b0 = NN(tt_op_call1(op, (tt_value[]){tt_v_tensor(x)}, 1)); /* src=0 */
    assert_values(b0, 4, (double[]){0, 2, 1, 3}, "broadcast from rank 0 (default)");
    tt_tensor *all[] = {base, x, b, g, rs_in, rs, rsf, rsa, rsm, b0};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        tt_release(all[i]);
}
END_TEST

/* ============================================================== errors */

START_TEST(test_argument_errors)
{
    tt_tensor *x = NN(tt_ones(TT_SHAPE(3), TT_F32));
    ck_assert_ptr_null(tt_dist_all_reduce(x, "prod"));
    ck_assert_int_eq(tt_errcode(), TT_EINVAL);
    ck_assert_str_eq(errmsg_core(), "dist::all_reduce: argument 'op' (#2) expects one of 'sum', "
                                  "'avg', 'max', 'min', got 'prod'");
    ck_assert_ptr_null(tt_dist_broadcast(x, world_));
    ck_assert_int_eq(tt_errcode(), TT_EINVAL);
    char msg[200];
    snprintf(msg, sizeof msg, "dist::broadcast: argument 'src' (#2) expects a rank in [0, %d), "
                              "got %d", world_, world_);
    ck_assert_str_eq(errmsg_core(), msg);
    tt_tensor *u8 = NN(tt_ones(TT_SHAPE(3), TT_U8));
    ck_assert_ptr_null(tt_dist_all_reduce(u8, "max"));
    ck_assert_int_eq(tt_errcode(), TT_EDTYPE);
    ck_assert_str_eq(errmsg_core(), "dist::all_reduce: argument 'x' (#1) expects f32, f64, i64 "
                                  "or i32, got u8");
    tt_tensor *s = NN(tt_scalar(1, TT_F32));
    ck_assert_ptr_null(tt_dist_all_gather(s));
    ck_assert_int_eq(tt_errcode(), TT_ESHAPE);
    ck_assert_str_eq(errmsg_core(), "dist::all_gather: argument 'x' (#1) expects at least 1 dim "
                                  "(ranks' parts are stacked along dim 0), got a 0-dim tensor");
    ck_assert_ptr_null(tt_dist_reduce_scatter(x, "sum"));
    ck_assert_int_eq(tt_errcode(), TT_ESHAPE);
    snprintf(msg, sizeof msg, "dist::reduce_scatter: argument 'x' (#1) has 3 rows in dim 0, not "
                              "a multiple of the world size %d", world_);
    ck_assert_str_eq(errmsg_core(), msg);
    tt_clear_error(); /* the errors above handled: a NULL is a mistake of its own */
    ck_assert_ptr_null(tt_dist_all_reduce(NULL, "sum"));
    ck_assert_int_eq(tt_errcode(), TT_EINVAL);
    tt_release(x);
    tt_release(u8);
    tt_release(s);
}
END_TEST

/* Checked mode: the ranks exchange what they pass first, so a mismatch is
 * an error on every rank (unchecked it would hang or truncate). */
START_TEST(test_checked_mismatch)
{
    tt_set_checked_mode(true);
    tt_tensor *x = NN(tt_ones(TT_SHAPE(rank_ ? 5 : 4, 3), TT_F32));
    ck_assert_ptr_null(tt_dist_all_reduce(x, "sum"));
    ck_assert_int_eq(tt_errcode(), TT_ESHAPE);
    ck_assert_str_eq(errmsg_core(), "dist::all_reduce: ranks disagree (checked mode): argument 'x' "
                                  "(#1) is f32[4, 3] on rank 0 but f32[5, 3] on rank 1; every "
                                  "rank must pass the same shape and dtype");
    tt_tensor *y = NN(tt_ones(TT_SHAPE(2), rank_ ? TT_F64 : TT_F32));
    ck_assert_ptr_null(tt_dist_all_gather(y));
    ck_assert_error(TT_ESHAPE, "is f32[2] on rank 0 but f64[2] on rank 1");
    tt_tensor *z = NN(tt_ones(TT_SHAPE(2), TT_F32));
    ck_assert_ptr_null(tt_dist_all_reduce(z, rank_ ? "max" : "sum"));
    ck_assert_int_eq(tt_errcode(), TT_EINVAL);
    ck_assert_str_eq(errmsg_core(), "dist::all_reduce: ranks disagree (checked mode): argument "
                                  "'op' (#2) is 'sum' on rank 0 but 'max' on rank 1");
    tt_tensor *w = rank_ ? tt_dist_broadcast(z, 0) : tt_dist_all_reduce(z, "sum");
    ck_assert_ptr_null(w);
    ck_assert_error(TT_EINVAL, "ranks disagree (checked mode): rank 0 called dist::all_reduce, "
                               "rank 1 called dist::broadcast; every rank must call the same "
                               "collectives in the same order");
    /* Matching calls pass, the fake kernel agreeing with the real one. */
    w = NN(tt_dist_all_reduce(z, "sum"));
    assert_values(w, 2, (double[]){world_, world_}, "checked all_reduce");
    tt_release(w);
    tt_release(x);
    tt_release(y);
    tt_release(z);
}
END_TEST

START_TEST(test_fake_outside_trace)
{
    tt_tensor *f = NN(tt_fake_empty(2, (tt_size[]){4, 3}, TT_F32));
    ck_assert_ptr_null(tt_dist_all_reduce(f, "sum"));
    ck_assert_int_eq(tt_errcode(), TT_EINVAL);
    ck_assert_str_eq(errmsg_core(), "dist::all_reduce: argument 'x' (#1) is a fake tensor outside "
                                  "a trace: the other ranks would wait for a collective this "
                                  "rank never makes; trace the function (tt_trace, tt_compile) "
                                  "or pass a real tensor");
    /* In fake mode it is metadata only. */
    tt_fake_mode_begin();
    tt_tensor *g = tt_dist_all_gather(f);
    tt_fake_mode_end();
    NN(g);
    ck_assert(tt_is_fake(g));
    ck_assert_int_eq(tt_dim_size(g, 0), 4 * world_);
    tt_release(f);
    tt_release(g);
}
END_TEST

/* ========================================================= derivatives */

/* loss = sum(op(x) * c) with c = rank + 1 everywhere; the gradient of x. */
static double *grad_through(tt_tensor *(*op)(const tt_tensor *, const char *), const char *red,
                            int64_t n, int64_t out_n)
{
    tt_tensor *x = NN(tt_ones(TT_SHAPE(n, 1), TT_F64));
    OK(tt_set_requires_grad(x, true));
    tt_scope_begin();
    tt_tensor *c = NN(tt_full(TT_SHAPE(out_n, 1), rank_ + 1, TT_F64));
    tt_tensor *y = NN(op(x, red));
    OK(tt_backward(NN(tt_sum_all(NN(tt_mul(y, c)))), NULL));
    tt_scope_end();
    tt_tensor *g = NN(tt_get_grad(x));
    double *v = tt_test_values(g);
    tt_release(g);
    tt_release(x);
    return v;
}

static tt_tensor *bcast1(const tt_tensor *x, const char *red) { (void)red; return tt_dist_broadcast(x, 1); }
static tt_tensor *gather(const tt_tensor *x, const char *red) { (void)red; return tt_dist_all_gather(x); }

START_TEST(test_derivatives)
{
    double csum = 0; /* sum over ranks of c = rank + 1 */
    for (int r = 0; r < world_; r++)
        csum += r + 1;
    double *g = grad_through(tt_dist_all_reduce, "sum", 2, 2);
    ck_assert_double_eq(g[0], csum);
    free(g);
    g = grad_through(tt_dist_all_reduce, "avg", 2, 2);
    ck_assert_double_eq_tol(g[1], csum / world_, 1e-12);
    free(g);
    g = grad_through(bcast1, NULL, 2, 2); /* src 1 gets every rank's gradient */
    ck_assert_double_eq(g[0], rank_ == 1 ? csum : 0);
    free(g);
    g = grad_through(gather, NULL, 2, 2 * world_); /* each rank's part: the sum of c */
    ck_assert_double_eq(g[1], csum);
    free(g);
    g = grad_through(tt_dist_reduce_scatter, "sum", 2 * world_, 2);
    for (int i = 0; i < 2 * world_; i++) /* row i went to rank i / 2 */
        ck_assert_double_eq(g[i], i / 2 + 1);
    free(g);
    g = grad_through(tt_dist_reduce_scatter, "avg", 2 * world_, 2);
    ck_assert_double_eq_tol(g[2 * world_ - 1], (double)world_ / world_, 1e-12);
    free(g);
    /* max has no derivative: an error at backward, as in torch. */
    tt_tensor *x = NN(tt_ones(TT_SHAPE(2), TT_F32));
    OK(tt_set_requires_grad(x, true));
    tt_scope_begin();
    tt_tensor *y = NN(tt_dist_all_reduce(x, "max"));
    ck_assert_str_eq(tt_grad_fn_name(y), "dist::all_reduce");
    ck_assert_int_eq(tt_backward(NN(tt_sum_all(y)), NULL), TT_EAUTOGRAD);
    ck_assert_str_eq(errmsg_core(), "dist::all_reduce: op 'max' has no derivative (only 'sum' and "
                                  "'avg' do, as in torch.distributed)");
    tt_scope_end();
    tt_release(x);
}
END_TEST

/* ============================================================ tracing */

static tt_status allreduce_model(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_scope_begin();
    tt_tensor *h = tt_relu(in[0]);
    tt_tensor *s = h ? tt_dist_all_reduce(h, "avg") : NULL;
    out[0] = tt_keep(s ? tt_mul_scalar(s, 2) : NULL);
    tt_scope_end();
    return out[0] ? TT_OK : tt_errcode();
}

/* The DOT line of the node of `op` is styled as an opaque custom op. */
static void assert_opaque_in_dot(const char *dot, const char *op)
{
    char needle[64];
    snprintf(needle, sizeof needle, "\\n%s\\n", op); /* the label's second line */
    const char *at = strstr(dot, needle);
    ck_assert_msg(at != NULL, "no %s node in:\n%.1500s", op, dot);
    const char *bol = at, *eol = strchr(at, '\n');
    while (bol > dot && bol[-1] != '\n')
        bol--;
    ck_assert_ptr_nonnull(eol);
    char line[512];
    snprintf(line, sizeof line, "%.*s", (int)(eol - bol), bol);
    ck_assert_msg(strstr(line, "peripheries=2") && strstr(line, "#f6b26b"),
                  "%s is not drawn as an opaque custom op: %s", op, line);
}

START_TEST(test_trace_and_dot)
{
    tt_tensor *x = NN(tt_randn(TT_SHAPE(3, 4), TT_F32));
    tt_graph *g = NN(tt_trace(allreduce_model, 1, &x,
                              &(tt_trace_opts){.mode = TT_TRACE_FAKE, .fullgraph = true}));
    ck_assert_int_eq(tt_graph_count_op(g, "dist::all_reduce"), 1);
    char *text = NN(tt_graph_to_text(g));
    ck_assert_msg(strstr(text, "dist::all_reduce(relu, \"avg\")") != NULL, "%.1500s", text);
    free(text);
    char *dot = NN(tt_graph_to_dot(g));
    assert_opaque_in_dot(dot, "dist::all_reduce");
    free(dot);
    /* Replayed on real data it communicates. */
    tt_tensor *got = NULL, *want = NULL;
    OK(tt_graph_run(g, 1, &x, 1, &got));
    OK(allreduce_model(&x, 1, &want, 1, NULL));
    tt_test_assert_same_bits(got, want, "replay vs eager");
    tt_graph_free(g);
    tt_release(got);
    tt_release(want);
    tt_release(x);
}
END_TEST

/* ===================================================== data parallel */

enum { BATCH = 16, IN = 20, HID = 32, OUT = 10, STEPS = 20 };
#define LR 0.1

typedef struct {
    tt_tensor *p[4], *x, *labels;
} mlp_data;

static mlp_data mlp_make(void)
{
    mlp_data m;
    OK(dist_mlp_init(IN, HID, OUT, 7, m.p)); /* the same on every rank */
    m.x = NN(tt_randn(TT_SHAPE(BATCH, IN), TT_F32));
    int64_t labels[BATCH];
    for (int i = 0; i < BATCH; i++)
        labels[i] = (i * 7 + 3) % OUT;
    m.labels = NN(tt_from_data(TT_SHAPE(BATCH), TT_I64, labels));
    return m;
}

static void mlp_free(mlp_data *m)
{
    for (int i = 0; i < 4; i++)
        tt_release(m->p[i]);
    tt_release(m->x);
    tt_release(m->labels);
}

/* Fresh trainable copies of the parameters, shifted by `shift`. */
static void params_copy(const mlp_data *m, double shift, tt_tensor **p)
{
    tt_no_grad_begin();
    for (int i = 0; i < 4; i++)
        p[i] = NN(tt_add_scalar(m->p[i], shift));
    tt_no_grad_end();
    for (int i = 0; i < 4; i++)
        OK(tt_set_requires_grad(p[i], true));
}

/* One process on the whole batch: the reference. */
static void train_single(const mlp_data *m, tt_tensor **p)
{
    params_copy(m, 0, p);
    for (int s = 0; s < STEPS; s++) {
        tt_scope_begin();
        tt_tensor *loss = NN(dist_mlp_loss(p, m->x, m->labels));
        OK(tt_backward(loss, NULL));
        tt_scope_end();
        OK(dist_mlp_sgd(p, 4, LR));
    }
}

static void assert_params_close(tt_tensor *const *a, tt_tensor *const *b, const char *what)
{
    for (int i = 0; i < 4; i++) {
        double *x = tt_test_values(a[i]), *y = tt_test_values(b[i]);
        for (int64_t k = 0; k < tt_numel(a[i]); k++)
            ck_assert_msg(fabs(x[k] - y[k]) <= 1e-5 + 1e-4 * fabs(y[k]),
                          "%s: parameter %d element %lld is %.9g, the single process has %.9g "
                          "(rank %d)", what, i, (long long)k, x[k], y[k], rank_);
        free(x);
        free(y);
    }
}

/* This rank's half of the batch. */
static void my_half(const mlp_data *m, tt_tensor **x, tt_tensor **labels)
{
    int64_t part = BATCH / world_;
    *x = NN(tt_narrow(m->x, 0, rank_ * part, part));
    *labels = NN(tt_narrow(m->labels, 0, rank_ * part, part));
}

/* 2 ranks, half of the batch each, tt_ddp_backward with small buckets (so
 * there are two, and the first starts while the backward still runs):
 * after 20 steps the weights are the single process's. Rank 1 starts from
 * other weights: tt_ddp_new makes them rank 0's. */
START_TEST(test_ddp_matches_single_process)
{
    mlp_data m = mlp_make();
    tt_tensor *ref[4], *p[4], *x, *labels;
    train_single(&m, ref);
    params_copy(&m, rank_ * 0.5, p);
    my_half(&m, &x, &labels);
    /* Reverse order: b2 (40 B) + w2 (1280 B) + b1 (128 B) fit in 1500 B; w1 is
     * a bucket of its own. */
    tt_ddp *d = NN(tt_ddp_new(4, p, &(tt_ddp_opts){.bucket_bytes = 1500}));
    for (int s = 0; s < STEPS; s++) {
        tt_scope_begin();
        OK(tt_ddp_backward(d, NN(dist_mlp_loss(p, x, labels))));
        tt_scope_end();
        OK(dist_mlp_sgd(p, 4, LR));
    }
    tt_ddp_stats st;
    tt_ddp_get_stats(d, &st);
    ck_assert_int_eq(st.buckets, 2);
    ck_assert_int_eq(st.started_early, 2); /* both from the engine's hook */
    ck_assert_int_eq(st.backwards, STEPS);
    assert_params_close(p, ref, "tt_ddp after 20 steps");
    tt_ddp_free(d);
    for (int i = 0; i < 4; i++) {
        tt_release(p[i]);
        tt_release(ref[i]);
    }
    tt_release(x);
    tt_release(labels);
    mlp_free(&m);
}
END_TEST

/* The compiled step: one graph with the collective as an opaque node,
 * traced once and replayed 19 times, ending where the single process
 * does. */
START_TEST(test_compiled_dp_step)
{
    mlp_data m = mlp_make();
    tt_tensor *ref[4], *in[6];
    train_single(&m, ref);
    params_copy(&m, 0, in);
    my_half(&m, &in[4], &in[5]);
    double lr = LR;
    tt_compiled *c = NN(tt_compile(dist_mlp_dp_step, 6, 1,
                                   &(tt_trace_opts){.fullgraph = true, .ud = &lr}));
    for (int s = 0; s < STEPS; s++) {
        tt_tensor *loss = NULL;
        OK(tt_compiled_call(c, in, &loss));
        tt_release(loss);
    }
    tt_compile_stats cs;
    tt_compiled_stats(c, &cs);
    ck_assert_int_eq(cs.calls, STEPS);
    ck_assert_int_eq(cs.hits, STEPS - 1);
    ck_assert_int_eq(cs.plans, 1);
    ck_assert_int_eq(cs.graph_breaks, 0);
    const tt_graph *g = NN(tt_compiled_graph(c, 0));
    char *text = NN(tt_graph_to_text(g));
    ck_assert_msg(tt_graph_count_op(g, "dist::all_reduce") == 1, "%.3000s", text); /* one 4 MiB bucket */
    free(text);
    char *dot = NN(tt_graph_to_dot(g));
    assert_opaque_in_dot(dot, "dist::all_reduce");
    free(dot);
    assert_params_close(in, ref, "compiled data-parallel step after 20 steps");
    tt_compiled_free(c);
    for (int i = 0; i < 6; i++)
        tt_release(in[i]);
    for (int i = 0; i < 4; i++)
        tt_release(ref[i]);
    mlp_free(&m);
}
END_TEST

START_TEST(test_ddp_errors)
{
    ck_assert_ptr_null(tt_ddp_new(0, NULL, NULL));
    ck_assert_int_eq(tt_errcode(), TT_EINVAL);
    ck_assert_str_eq(errmsg_core(), "tt_ddp_new: expects at least 1 parameter and their array, "
                                  "got 0");
    tt_tensor *i = NN(tt_zeros(TT_SHAPE(2), TT_I64)), *f = NN(tt_zeros(TT_SHAPE(2), TT_F32));
    ck_assert_ptr_null(tt_ddp_new(1, &i, NULL));
    ck_assert_int_eq(tt_errcode(), TT_EDTYPE);
    ck_assert_str_eq(errmsg_core(), "tt_ddp_new: argument 'params' element 0 is i64; expected a "
                                  "floating point parameter");
    ck_assert_ptr_null(tt_ddp_new(1, &f, NULL));
    ck_assert_int_eq(tt_errcode(), TT_EINVAL);
    ck_assert_str_eq(errmsg_core(), "tt_ddp_new: argument 'params' element 0 expects a real leaf "
                                  "tensor that requires grad");
    ck_assert_int_eq(tt_ddp_backward(NULL, f), TT_EINVAL);
    ck_assert_str_eq(errmsg_core(), "tt_ddp_backward: argument 'ddp' is NULL");
    /* A loss that needs no gradient: the error of tt_backward, and every
     * bucket still reduced (nobody waits). */
    OK(tt_set_requires_grad(f, true));
    tt_ddp *d = NN(tt_ddp_new(1, &f, NULL));
    tt_tensor *nograd = NN(tt_ones(TT_SHAPE(1), TT_F32));
    ck_assert_int_eq(tt_ddp_backward(d, nograd), TT_EAUTOGRAD);
    ck_assert_error(TT_EAUTOGRAD, "tt_backward: element 0 of the outputs does not require grad");
    /* A parameter the loss does not reach gets the average of .grad
     * (zeros here). */
    tt_tensor *g = NN(tt_ones(TT_SHAPE(2), TT_F32)), *other = NN(tt_ones(TT_SHAPE(1), TT_F32));
    OK(tt_set_requires_grad(other, true));
    tt_scope_begin();
    OK(tt_ddp_backward(d, NN(tt_sum_all(NN(tt_mul_scalar(other, 3))))));
    tt_scope_end();
    tt_tensor *fg = NN(tt_get_grad(f));
    assert_values(fg, 2, (double[]){0, 0}, "an unreached parameter's gradient");
    tt_release(fg);
    tt_ddp_free(d);
    tt_release(g);
    tt_release(other);
    tt_release(nograd);
    tt_release(i);
    tt_release(f);
}
END_TEST

static Suite *dist_suite(void)
{
    Suite *s = suite_create("dist");
    TCase *tc = tt_tcase("no_group");
    tcase_add_test(tc, test_no_group);
    suite_add_tcase(s, tc);

    tc = tt_tcase_with("collectives", dist_setup, dist_teardown);
    tcase_add_test(tc, test_group);
    tcase_add_loop_test(tc, test_all_reduce, 0, 16);
    tcase_add_test(tc, test_broadcast_gather_scatter);
    tcase_add_test(tc, test_argument_errors);
    tcase_add_test(tc, test_checked_mismatch);
    tcase_add_test(tc, test_fake_outside_trace);
    tcase_add_test(tc, test_derivatives);
    tcase_add_test(tc, test_trace_and_dot);
    suite_add_tcase(s, tc);

    tc = tt_tcase_with("data_parallel", dist_setup, dist_teardown);
    tcase_add_test(tc, test_ddp_matches_single_process);
    tcase_add_test(tc, test_compiled_dp_step);
    tcase_add_test(tc, test_ddp_errors);
    suite_add_tcase(s, tc);
    return s;
}

/* Each check's worst result over the ranks (CK_PASS < CK_FAILURE <
 * CK_ERROR); rank 0 prints them as one Check summary line. */
int main(int argc, char **argv)
{
    int provided;
    /* The program initialises MPI itself, as an application may:
     * tt_dist_init must then leave MPI to it. */
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &world_);
    if (rank_ == 0)
        printf("test_dist: %d ranks (mpirun -np %d); every check runs on every rank and counts "
               "once below, failed if it failed on any rank\n", world_, world_);
    SRunner *sr = srunner_create(dist_suite());
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_SILENT);
    int n = srunner_ntests_run(sr);
    TestResult **res = srunner_results(sr);
    int *mine = calloc((size_t)n + 1, sizeof *mine), *worst = calloc((size_t)n + 1, sizeof *worst);
    for (int i = 0; i < n; i++) {
        mine[i] = tr_rtype(res[i]);
        if (mine[i] != CK_PASS)
            printf("rank %d: %s:%d: %s: %s\n", rank_, tr_lfile(res[i]), tr_lno(res[i]),
                   tr_tcname(res[i]), tr_msg(res[i]));
    }
    fflush(stdout);
    int nmax = n;
    MPI_Allreduce(MPI_IN_PLACE, &nmax, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(mine, worst, n, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    int failures = 0, errors = 0;
    for (int i = 0; i < n; i++) {
        failures += worst[i] == CK_FAILURE;
        errors += worst[i] == CK_ERROR;
    }
    if (nmax != n)
        errors++; /* a rank ran another number of checks */
    if (rank_ == 0)
        printf("%d%%: Checks: %d, Failures: %d, Errors: %d\n",
               n ? 100 * (n - failures - errors) / n : 100, n, failures, errors);
    free(res);
    free(mine);
    free(worst);
    srunner_free(sr);
    MPI_Finalize();
    return failures + errors ? 1 : 0;
}
