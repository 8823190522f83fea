/* Data-parallel training: gradients averaged across ranks in buckets.
 *
 * Two forms share one bucket plan. tt_dist_average_grads is made of ops
 * (cat, dist::all_reduce avg, views), so it traces: in a compiled training
 * step each bucket is one opaque collective node. tt_ddp_backward is the
 * eager form that overlaps: the autograd engine's gradient-ready hook
 * copies each final gradient into its bucket's buffer, and a bucket whose
 * gradients are all in starts its MPI_Iallreduce at once, while the rest
 * of the backward runs (PyTorch's DDP reducer does the same). */
#include "dist_impl.h"

#include <stdlib.h>
#include <string.h>

#define DEFAULT_BUCKET_BYTES ((size_t)4 << 20)

typedef struct {
    tt_tensor *param;
    int bucket;
    int64_t offset, numel; /* elements, within the bucket */
    bool ready;
} slot;

typedef struct {
    tt_dtype dtype;
    int64_t numel;
    int first, count; /* its slots: plan order [first, first + count) */
    /* tt_ddp_backward's state */
    int pending;
    tt_tensor *buf;
    bool started;
} bucket;

typedef struct {
    slot *slots; /* in bucket order: parameters last to first */
    bucket *buckets;
    int n, nb;
} plan;

static void plan_free(plan *p)
{
    free(p->slots);
    free(p->buckets);
    *p = (plan){0};
}

/* Checks the parameters and groups them, last to first (the order a
 * backward produces their gradients in), into buckets of one dtype and
 * at most `bytes` (a larger parameter gets a bucket to itself). */
static tt_status plan_make(const char *fn, int n, tt_tensor *const *params, size_t bytes,
                           plan *p)
{
    *p = (plan){0};
    if (n < 1 || !params)
        return tt_error(TT_EINVAL, "%s: expects at least 1 parameter and their array, got "
                                   "%d", fn, n);
    for (int i = 0; i < n; i++) {
        if (!params[i])
            return tt_error(TT_EINVAL, "%s: argument 'params' element %d is NULL", fn, i);
        if (!tt_dtype_is_float(tt_dtype_of(params[i])))
            return tt_error(TT_EDTYPE, "%s: argument 'params' element %d is %s; expected a "
                                       "floating point parameter", fn, i,
                            tt_dtype_name(tt_dtype_of(params[i])));
    }
    p->slots = calloc((size_t)n, sizeof *p->slots);
    p->buckets = calloc((size_t)n, sizeof *p->buckets);
    if (!p->slots || !p->buckets) {
        plan_free(p);
        return tt_error(TT_ENOMEM, "%s: out of memory planning buckets", fn);
    }
    p->n = n;
    if (!bytes)
        bytes = DEFAULT_BUCKET_BYTES;
    for (int k = 0; k < n; k++) {
        tt_tensor *t = params[n - 1 - k];
        tt_dtype dt = tt_dtype_of(t);
        int64_t numel = tt_sym_hint(tt_numel(t));
        bucket *b = p->nb ? &p->buckets[p->nb - 1] : NULL;
        if (!b || b->dtype != dt ||
            (size_t)(b->numel + numel) * tt_dtype_size(dt) > bytes) {
            b = &p->buckets[p->nb++];
            *b = (bucket){.dtype = dt, .first = k};
        }
        p->slots[k] = (slot){.param = t, .bucket = p->nb - 1, .offset = b->numel,
                             .numel = numel};
        b->numel += numel;
        b->count++;
    }
    return TT_OK;
}

/* The bucket's result for slot s, shaped as its parameter (a view). */
static tt_tensor *slot_view(const slot *s, tt_tensor *flat)
{
    tt_tensor *part = tt_narrow(flat, 0, s->offset, s->numel);
    tt_tensor *v = part ? tt_view(part, tt_ndim(s->param), tt_sizes(s->param)) : NULL;
    tt_release(part);
    return v;
}

/* ---------------------------------------------- the traceable form */

/* One bucket: cat of the flattened gradients, one all_reduce avg, each
 * .grad a view of the result. */
static tt_status average_bucket(const plan *p, const bucket *b)
{
    tt_status st = TT_OK;
    tt_tensor *flat[b->count > 0 ? b->count : 1], *cat = NULL, *avg = NULL;
    int nflat = 0;
    for (int i = 0; i < b->count && !st; i++) {
        const slot *s = &p->slots[b->first + i];
        tt_tensor *g = tt_get_grad(s->param);
        if (!g) /* no gradient on this rank: take part with zeros */
            g = tt_zeros(tt_ndim(s->param), tt_sizes(s->param), b->dtype);
        flat[nflat] = g ? tt_reshape(g, 1, (int64_t[]){s->numel}) : NULL;
        tt_release(g);
        if (!flat[nflat])
            st = tt_errcode();
        else
            nflat++;
    }
    if (!st)
        cat = b->count == 1 ? tt_retain(flat[0]) : tt_cat(b->count, flat, 0);
    avg = cat ? tt_dist_all_reduce(cat, "avg") : NULL;
    if (!st && !avg)
        st = tt_errcode();
    for (int i = 0; i < b->count && !st; i++) {
        const slot *s = &p->slots[b->first + i];
        tt_tensor *v = slot_view(s, avg);
        st = v ? tt_set_grad(s->param, v) : tt_errcode();
        tt_release(v);
    }
    for (int i = 0; i < nflat; i++)
        tt_release(flat[i]);
    tt_release(cat);
    tt_release(avg);
    return st;
}

tt_status tt_dist_average_grads(int n, tt_tensor *const *params, size_t bucket_bytes)
{
    const char *fn = "tt_dist_average_grads";
    tt_status st = tt__dist_check_caller(fn);
    plan p;
    if (!st)
        st = plan_make(fn, n, params, bucket_bytes, &p);
    if (st)
        return st;
    tt_scope_pause(); /* our temporaries are ours even in the caller's scope */
    for (int b = 0; b < p.nb && !st; b++)
        st = average_bucket(&p, &p.buckets[b]);
    tt_scope_resume();
    plan_free(&p);
    return st;
}

/* ------------------------------------------------ the overlapping form */

struct tt_ddp {
    plan p;
    tt_tensor **params; /* as given (borrowed), for the traced form */
    MPI_Request *reqs; /* one per bucket */
    int next_start;    /* buckets start in order, the same on every rank */
    bool in_backward;
    size_t bucket_bytes;
    tt_ddp_stats stats;
};

tt_ddp *tt_ddp_free(tt_ddp *d)
{
    if (!d)
        return NULL;
    plan_free(&d->p);
    free(d->reqs);
    free(d->params);
    free(d);
    return NULL;
}

tt_ddp *tt_ddp_new(int n, tt_tensor *const *params, const tt_ddp_opts *opts)
{
    const char *fn = "tt_ddp_new";
    if (tt__dist_check_caller(fn))
        return NULL;
    tt_ddp *d = calloc(1, sizeof *d);
    if (!d) {
        tt_error(TT_ENOMEM, "%s: out of memory", fn);
        return NULL;
    }
    tt_status st = plan_make(fn, n, params, opts ? opts->bucket_bytes : 0, &d->p);
    for (int i = 0; !st && i < n; i++) {
        if (tt_is_fake(params[i]) || !tt_requires_grad(params[i]) || !tt_is_leaf(params[i]))
            st = tt_error(TT_EINVAL, "%s: argument 'params' element %d expects a real leaf "
                                     "tensor that requires grad", fn, i);
    }
    if (!st && (!(d->reqs = calloc((size_t)d->p.nb, sizeof *d->reqs)) ||
                !(d->params = malloc(sizeof *d->params * (size_t)n))))
        st = tt_error(TT_ENOMEM, "%s: out of memory", fn);
    if (!st)
        memcpy(d->params, params, sizeof *d->params * (size_t)n);
    /* Every rank starts from rank 0's parameters. */
    tt_scope_pause();
    tt_no_grad_begin();
    for (int i = 0; !st && i < n; i++) {
        tt_tensor *b = tt_dist_broadcast(params[i], 0);
        st = b ? tt_copy_(params[i], b) : tt_errcode();
        tt_release(b);
    }
    tt_no_grad_end();
    tt_scope_resume();
    d->stats.buckets = d->p.nb;
    d->bucket_bytes = opts ? opts->bucket_bytes : 0;
    if (st)
        d = tt_ddp_free(d);
    return d;
}

void tt_ddp_get_stats(const tt_ddp *d, tt_ddp_stats *out)
{
    if (out)
        *out = d ? d->stats : (tt_ddp_stats){0};
}

/* Starts the buckets that are complete, in order; lets MPI progress the
 * ones already started (Open MPI advances non-blocking collectives only
 * inside MPI calls). */
static tt_status start_ready(tt_ddp *d)
{
    tt_status st = TT_OK;
    for (; !st && d->next_start < d->p.nb; d->next_start++) {
        bucket *b = &d->p.buckets[d->next_start];
        if (b->pending > 0)
            break;
        st = tt__dist_mpi_status("tt_ddp_backward", "MPI_Iallreduce",
                                 MPI_Iallreduce(MPI_IN_PLACE, tt_data(b->buf), (int)b->numel,
                                                tt__dist_mpi_type(b->dtype), MPI_SUM,
                                                tt__dist_comm(), &d->reqs[d->next_start]));
        b->started = !st;
        d->stats.started_early += !st && d->in_backward;
    }
    int flag;
    if (!st && d->next_start > 0)
        st = tt__dist_mpi_status("tt_ddp_backward", "MPI_Testall",
                                 MPI_Testall(d->next_start, d->reqs, &flag, MPI_STATUSES_IGNORE));
    return st;
}

/* Copies slot s's gradient (zeros if it has none) into its bucket. */
static tt_status fill_slot(tt_ddp *d, slot *s)
{
    bucket *b = &d->p.buckets[s->bucket];
    size_t es = tt_dtype_size(b->dtype);
    char *dst = (char *)tt_data(b->buf) + (size_t)s->offset * es;
    tt_tensor *g = tt_get_grad(s->param);
    tt_status st = TT_OK;
    if (g)
        st = tt_to_buffer(g, dst, (size_t)s->numel * es);
    else
        memset(dst, 0, (size_t)s->numel * es);
    tt_release(g);
    s->ready = true;
    b->pending--;
    return st;
}

static tt_status on_grad_ready(tt_tensor *leaf, void *ud)
{
    tt_ddp *d = ud;
    for (int k = 0; k < d->p.n; k++) {
        slot *s = &d->p.slots[k];
        if (s->param == leaf && !s->ready) {
            tt_status st = fill_slot(d, s);
            return st ? st : start_ready(d);
        }
    }
    return TT_OK; /* a leaf that is not one of ours */
}

static tt_status backward_and_reduce(tt_ddp *d, tt_tensor *loss);

tt_status tt_ddp_backward(tt_ddp *d, tt_tensor *loss)
{
    const char *fn = "tt_ddp_backward";
    if (!d)
        return tt_error(TT_EINVAL, "%s: argument 'ddp' is NULL", fn);
    /* In a trace the collectives must be ops the graph records. */
    if (tt_mode_current() || tt_fake_mode_enabled()) {
        tt_status st = tt_backward(loss, NULL);
        return st ? st : tt_dist_average_grads(d->p.n, d->params, d->bucket_bytes);
    }
    tt_status st = tt__dist_check_caller(fn);
    if (st)
        return st;
    tt_scope_pause(); /* the buckets and views are ours, not the caller's scope's */
    st = backward_and_reduce(d, loss);
    tt_scope_resume();
    return st;
}

static tt_status backward_and_reduce(tt_ddp *d, tt_tensor *loss)
{
    const char *fn = "tt_ddp_backward";
    tt_status st = TT_OK;
    for (int b = 0; b < d->p.nb; b++) {
        bucket *bk = &d->p.buckets[b];
        bk->pending = bk->count;
        bk->started = false;
        d->reqs[b] = MPI_REQUEST_NULL;
        bk->buf = tt_empty(1, (int64_t[]){bk->numel}, bk->dtype);
        if (!bk->buf && !st)
            st = tt_errcode();
    }
    for (int k = 0; k < d->p.n; k++)
        d->p.slots[k].ready = false;
    d->next_start = 0;
    d->stats.started_early = 0;
    if (!st) {
        d->in_backward = true;
        tt_set_grad_ready_hook(on_grad_ready, d);
        st = tt_backward(loss, NULL);
        tt_set_grad_ready_hook(NULL, NULL);
        d->in_backward = false;
    }
    /* Parameters the backward did not reach take part with what .grad
     * holds (or zeros). Even after an error every bucket is started, so
     * the other ranks are not left waiting for this one. */
    for (int k = 0; k < d->p.n; k++) {
        slot *s = &d->p.slots[k];
        if (!s->ready && d->p.buckets[s->bucket].buf) {
            tt_status fst = fill_slot(d, s);
            st = st ? st : fst;
        }
    }
    tt_status sst = TT_OK;
    if (d->next_start < d->p.nb) {
        bool bufs = true;
        for (int b = 0; b < d->p.nb; b++)
            bufs &= d->p.buckets[b].buf != NULL;
        if (bufs)
            sst = start_ready(d);
    }
    st = st ? st : sst;
    int rc = MPI_Waitall(d->next_start, d->reqs, MPI_STATUSES_IGNORE);
    tt_status wst = tt__dist_mpi_status(fn, "MPI_Waitall", rc);
    st = st ? st : wst;
    int world = tt_dist_world_size();
    for (int b = 0; b < d->p.nb && !st; b++) {
        bucket *bk = &d->p.buckets[b];
        tt__dist_divide(tt_data(bk->buf), bk->numel, bk->dtype, world);
        for (int i = 0; i < bk->count && !st; i++) {
            const slot *s = &d->p.slots[bk->first + i];
            tt_tensor *v = slot_view(s, bk->buf);
            st = v ? tt_set_grad(s->param, v) : tt_errcode();
            tt_release(v);
        }
    }
    for (int b = 0; b < d->p.nb; b++)
        d->p.buckets[b].buf = tt_release(d->p.buckets[b].buf);
    d->stats.backwards += !st;
    return st;
}
