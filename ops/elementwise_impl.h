/* Internal to ops/: what the elementwise families (binary.c, unary.c,
 * where_clamp.c) share: bringing operands to a dtype, the flat eager fast
 * path with its streamed stores, the in-place checks, and the helpers of
 * their backward rules. Small and on hot paths, so static inline. Not
 * installed. */
#ifndef TT_ELEMENTWISE_IMPL_H
#define TT_ELEMENTWISE_IMPL_H

#include "ops_impl.h"
#include "vec_math.h"

#include <math.h>
#include <stdio.h>
#include <string.h>


/* Brings t to dtype dt for a loop: t itself (a new reference) when it
 * already is, else a converted copy. Fake tensors never get here. */
static inline tt_tensor *as_dtype(const tt_tensor *t, tt_dtype dt)
{
    if ((tt_dtype)t->dtype == dt)
        return tt_retain((tt_tensor *)t);
    tt_tensor *c = tt__empty_impl(t->ndim, t->sizes, NULL, dt, false);
    if (c && tt__copy_raw(c, t))
        c = tt_release(c);
    return c;
}

/* A 0-dim tensor holding a Scalar in dtype dt (the second operand of the
 * .Scalar overloads). */
static inline tt_tensor *scalar_tensor(double v, tt_dtype dt, bool fake)
{
    tt_tensor *t = tt__empty_impl(0, NULL, NULL, dt, fake);
    if (t && !fake)
        tt__store(tt__ptr(t), dt, v);
    return t;
}

static inline bool can_cast(tt_dtype from, tt_dtype to)
{
    /* PyTorch's canCast: no float to integral, no non-bool to bool. */
    if (tt_dtype_is_float(from) && !tt_dtype_is_float(to))
        return false;
    if (from != TT_BOOL && to == TT_BOOL)
        return false;
    return true;
}


/* The common eager case gets a short path: real, contiguous operands of
 * one dtype and shape. The output is contiguous (what the general rules
 * give here too) and the loop runs over one flat range, split across
 * threads when large. */
typedef struct {
    tt_loop_fn loop;
    char *data[3];
    int64_t strides[3];
    int nops;
    void *ctx;
    /* The output outgrows the cache (run_flat decides): a loop that can
     * write around the cache itself is told so through *streams; for the
     * others flat_chunk stages the output and streams it out. */
    bool *streams;
    bool stage;
} flat_job;

/* Elements per staging block of a streamed chunk: small, so that reading
 * the inputs and streaming the output overlap (in blocks of 1,024
 * elements the two phases take turns and the add gained little). */
#define STREAM_BLOCK 128

/* A streamed chunk: the loop writes each block into a buffer on the
 * stack, which tt__stream_copy then writes out with non-temporal stores.
 * A plain store first reads the output's line into the cache (a quarter
 * of an add's memory traffic, a third of a unary op's) only to evict it
 * again; the copy from L1 costs far less than that read. */
static inline void flat_chunk_streamed(const flat_job *j, char **d, int64_t n)
{
    _Alignas(64) char buf[STREAM_BLOCK * 8]; /* 8: the widest element */
    int64_t es = j->strides[0];
    char *out = d[0];
    d[0] = buf;
    for (int64_t done = 0; done < n; done += STREAM_BLOCK) {
        int64_t m = n - done < STREAM_BLOCK ? n - done : STREAM_BLOCK;
        j->loop(d, j->strides, m, j->ctx);
        tt__stream_copy(out + done * es, buf, (size_t)(m * es));
        for (int k = 1; k < j->nops; k++)
            d[k] += m * j->strides[k];
    }
    tt__stream_fence();
}

static inline void flat_chunk(int64_t begin, int64_t end, void *vjob)
{
    const flat_job *j = vjob;
    char *d[3];
    for (int k = 0; k < j->nops; k++)
        d[k] = j->data[k] + begin * j->strides[k];
    if (j->stage) {
        flat_chunk_streamed(j, d, end - begin);
    } else {
        j->loop(d, j->strides, end - begin, j->ctx);
        if (j->streams && *j->streams)
            tt__stream_fence();
    }
}

#define FLAT_GRAIN 32768

/* Streams the output when the operands together outgrow the last-level
 * cache: the output cannot still be cached when the next op reads it, so
 * there is nothing to lose by not caching it. */
static inline void run_flat(flat_job *j, int64_t n)
{
    int64_t bytes = 0;
    for (int k = 0; k < j->nops; k++)
        bytes += n * j->strides[k];
    bool big = j->strides[0] <= 8 && tt__stream_worthwhile(bytes);
    if (j->streams)
        *j->streams = big;
    else
        j->stage = big;
    /* Guided: a thread that falls behind (a late start, a shared core)
     * takes less instead of making the other wait; takes of at least
     * 512K elements past the cache, where the prefetchers want long
     * runs. 16M-element add, 2 threads, three alternated quick runs:
     * 50-72 GB/s in equal halves, 77-82 guided. */
    if (n <= FLAT_GRAIN)
        flat_chunk(0, n, j);
    else
        tt__parallel_for_guided(n, FLAT_GRAIN, big ? 16 * FLAT_GRAIN : FLAT_GRAIN, flat_chunk, j);
}


/* A Scalar's value as a double (alpha NULL: the default 1). */
static inline double scalar_num(const tt_value *v)
{
    return !v ? 1.0 : v->kind == TT_V_FLOAT ? v->u.f : v->kind == TT_V_BOOL ? v->u.b
                                                                         : (double)v->u.i;
}


/* PyTorch's checks of an in-place write into out (tt__check_write): out
 * may not have elements sharing memory (an expanded tensor: the result
 * would depend on the order of the writes), and no input may overlap it
 * other than exactly (x.add_(x) is fine, x[1:].add_(x[:-1]) is not). `op`
 * is the Tensor overload's label; the message names the in-place op. */
static inline tt_status check_inplace_overlap(const char *op, const tt_tensor *out, int n,
                                       const tt_tensor *const *ins)
{
    char name[64];
    snprintf(name, sizeof name, "%s_", op);
    tt_status st = tt__check_write(name, out, NULL);
    for (int i = 0; i < n && !st; i++)
        if (ins[i])
            st = tt__check_write(name, out, ins[i]);
    return st;
}


/* The kind of op an elementwise row serves: the row's data
 * (runtime/builtin_ops.h), which kernels get through tt_frame_userdata and
 * backward rules through tt_ctx_userdata. */
#define KIND_OF(userdata) ((int)(intptr_t)(userdata))


/* Backward rules, written with ops so that a tracer records the backward
 * pass like the forward one. A gradient of the broadcast shape is summed
 * back to each input's shape by the engine, so no rule here deals with
 * broadcasting. Slots are argument positions. */

#define NEED(i) tt_ctx_needs_input_grad(ctx, (i))
#define SAVED(i) tt_ctx_saved(ctx, (i))

/* Calls built-in `id` on (a, v) through the dispatcher, so it is traced. */
static inline tt_tensor *op_tv(tt_builtin_id id, const tt_tensor *a, double v)
{
    return tt__call_op(id, TT_ARGS(tt_v_tensor(a), scalar_value(v)));
}

static inline tt_tensor *gt_scalar(const tt_tensor *a, double v)
{
    return op_tv(TT_OP_GT_SCALAR, a, v);
}
static inline tt_tensor *ge_scalar(const tt_tensor *a, double v)
{
    return op_tv(TT_OP_GE_SCALAR, a, v);
}
static inline tt_tensor *le_scalar(const tt_tensor *a, double v)
{
    return op_tv(TT_OP_LE_SCALAR, a, v);
}
static inline tt_tensor *eq_scalar(const tt_tensor *a, double v)
{
    return op_tv(TT_OP_EQ_SCALAR, a, v);
}

static inline tt_tensor *sign_of(const tt_tensor *a)
{
    return tt__call_op(TT_OP_SIGN, TT_ARGS(tt_v_tensor(a)));
}

/* Saves the tensor arguments and the output, in that order, each only
 * when its bit is in `keep` (bit i: tensor argument i; KEEP_OUT: the
 * output), NULL otherwise, so positions do not move. A tensor saved is
 * version-checked at backward: saving only what a rule reads lets code
 * write the others in place afterwards (mul's output, then relu_), as
 * PyTorch allows. */
#define KEEP_OUT 8u
static inline tt_status save_some(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                           const tt_value *out, int nout, unsigned keep)
{
    tt_tensor *ts[4];
    int n = 0;
    for (int i = 0; i < nin && n < 3; i++)
        if (in[i].kind == TT_V_TENSOR) {
            ts[n] = keep >> n & 1 ? in[i].u.t : NULL;
            n++;
        }
    int ninputs = n;
    const tt_tensor *written = NULL; /* an in-place op's self, after the write */
    if (nout > 0 && out[0].kind == TT_V_TENSOR) {
        ts[n++] = keep & KEEP_OUT ? out[0].u.t : NULL;
        if (tt_schema_arg(tt_op_schema(tt_ctx_op(ctx)), 0)->is_write)
            written = out[0].u.t;
    }
    tt_status st = tt_ctx_save_for_backward(ctx, n, ts);
    /* setup runs after the kernel: an in-place op's operand that shares
     * self's storage (x.mul_(x)) was overwritten by the write. (Argument 0
     * of an op that saves self is autograd's copy: TT_BUILTIN_SAVES_SELF.) */
    for (int k = 0; !st && written && k < ninputs; k++)
        if (ts[k] && tt_same_storage(ts[k], written))
            tt__ctx_saved_before_write(ctx, k);
    return st;
}

/* Saves every tensor argument and the output, in that order. */
static inline tt_status save_all(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                          const tt_value *out, int nout)
{
    return save_some(ctx, in, nin, out, nout, 1u | 2u | 4u | KEEP_OUT);
}

/* Only the first tensor argument (where's condition, clamp's self). */
static inline tt_status save_first(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                            const tt_value *out, int nout)
{
    return save_some(ctx, in, nin, out, nout, 1u);
}

/* Saves the Scalar argument `arg` (other, alpha, exponent) as "s". */
static inline tt_status save_scalar_arg(tt_autograd_ctx *ctx, const tt_value *in, int arg)
{
    double v = in[arg].kind == TT_V_FLOAT ? in[arg].u.f
             : in[arg].kind == TT_V_BOOL ? in[arg].u.b : (double)in[arg].u.i;
    return tt_ctx_save_float(ctx, "s", v);
}

#endif
