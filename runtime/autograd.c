/* The autograd engine: grad mode, the recording dispatch key, backward
 * nodes and their contexts, and the engine that runs them.
 *
 * Ownership: a tensor made by a recorded op holds its node (grad_fn); a
 * node holds the nodes of its inputs and the leaves it accumulates into.
 * Saved tensors are detached aliases (same storage, no grad_fn), so saving
 * an op's own output makes no cycle, and their version is checked before
 * the backward that reads them. Nodes carry a creation number: running
 * them from the newest down is a reverse topological order, because a
 * node's inputs always exist before it. */
#include "dispatch_impl.h"

#include <stdio.h>
#include <stdlib.h> /* qsort */
#include <string.h>

_Thread_local int tt__autograd_off;
_Thread_local bool tt__grad_disabled;
static _Thread_local int no_grad_depth;
static atomic_uint_fast64_t next_seq;

typedef struct node node;

typedef struct {
    char name[32];
    tt_value v; /* TT_V_INT, TT_V_FLOAT or TT_V_INTS (array owned) */
} named_value;

struct tt_autograd_ctx {
    const tt_opdef *op;
    tt_tensor **saved;
    uint64_t *versions;
    int nsaved;
    bool freed; /* saved tensors released after a backward */
    named_value *vals;
    int nvals;
    int nslots;
    bool *needs;
    int arg_slot[TT_MAX_ARGS + 1];
};

/* Where an input slot's gradient goes. */
typedef struct {
    node *fn;         /* the input's producer, or NULL */
    int output_nr;
    tt_tensor *leaf;  /* a leaf that requires grad: accumulate into it */
    int ndim;         /* the input's shape and dtype, to check grads */
    tt_size sizes[TT_MAX_DIMS];
    tt_dtype dtype;
} edge;

typedef struct {
    int ndim;
    tt_size sizes[TT_MAX_DIMS];
    tt_dtype dtype;
    bool fake;
} out_meta;

struct node {
    atomic_int_fast64_t refcnt;
    uint64_t seq;
    const tt_opdef *op; /* pinned: the definition recorded with, alive while the node is */
    tt_backward_fn backward;
    tt_autograd_ctx ctx;
    edge *edges; /* ctx.nslots */
    /* One output per Tensor result, and one per element of a Tensor[]
     * result (as PyTorch's split/unbind), in order: output_nr indexes
     * these, and the backward gets one gradient per output. */
    int nout;
    out_meta *outs;
    /* engine scratch, nout of them */
    tt_tensor **buf;
    uint64_t visit;
    node *next_dead; /* node_release's list */
};

struct tt_autograd_meta {
    tt_tensor *grad;
    node *grad_fn;
    int output_nr;
    /* The gradient-ready hook's count of this backward's edges into the
     * leaf not yet run; valid while ready_mark is the running backward's. */
    uint64_t ready_mark;
    int64_t pending;
    /* The storage's version when grad_fn was set: a later in-place write
     * recorded through another tensor of the same storage (a view, or
     * the base) makes this history stale (see history_stale). */
    uint64_t hist_version;
};

/* The gradient-ready hook (per thread): see tt_set_grad_ready_hook. */
static _Thread_local tt_grad_ready_fn ready_hook;
static _Thread_local void *ready_ud;

void tt_set_grad_ready_hook(tt_grad_ready_fn fn, void *ud)
{
    ready_hook = fn;
    ready_ud = fn ? ud : NULL;
}

/* ---------------------------------------------------------- grad mode */

static void sync_grad_flag(void) { tt__grad_disabled = no_grad_depth > 0; }
bool tt_grad_enabled(void) { return !tt__grad_disabled; }

void tt_no_grad_begin(void)
{
    no_grad_depth++;
    sync_grad_flag();
}

tt_status tt_no_grad_end(void)
{
    if (no_grad_depth == 0)
        return tt_error(TT_EINVAL, "tt_no_grad_end: grad mode is on on this thread: a "
                                   "tt_no_grad_end without its tt_no_grad_begin");
    no_grad_depth--;
    sync_grad_flag();
    return TT_OK;
}

/* ------------------------------------------------------- nodes and meta */

static void ctx_clear_saved(tt_autograd_ctx *c)
{
    for (int i = 0; i < c->nsaved; i++)
        tt__unref(c->saved[i]);
    tt__free(c->saved);
    tt__free(c->versions);
    c->saved = NULL;
    c->versions = NULL;
    if (c->nsaved)
        c->freed = true;
    c->nsaved = 0;
}

static void ctx_free(tt_autograd_ctx *c)
{
    ctx_clear_saved(c);
    for (int i = 0; i < c->nvals; i++)
        if (c->vals[i].v.kind == TT_V_INTS)
            tt__free((void *)c->vals[i].v.u.ints);
    tt__free(c->vals);
    tt__free(c->needs);
}

static node *node_retain(node *n)
{
    if (n)
        atomic_fetch_add(&n->refcnt, 1);
    return n;
}

/* Releases a node and, iteratively, the nodes only it kept alive: a long
 * chain must not recurse once per node. A node joins the list of dead
 * nodes when its count reaches zero, which happens once, so the list never
 * holds a node twice (queueing inputs before their count is dropped would
 * queue a node shared by several dying nodes more than once). */
static void node_release(node *n)
{
    if (!n || atomic_fetch_sub(&n->refcnt, 1) != 1)
        return;
    n->next_dead = NULL;
    node *dead = n;
    while (dead) {
        node *work = dead;
        dead = work->next_dead;
        for (int i = 0; i < work->ctx.nslots; i++) {
            tt__unref(work->edges[i].leaf);
            node *in = work->edges[i].fn;
            if (in && atomic_fetch_sub(&in->refcnt, 1) == 1) {
                in->next_dead = dead;
                dead = in;
            }
        }
        for (int j = 0; work->buf && j < work->nout; j++)
            tt__unref(work->buf[j]);
        tt__free(work->buf);
        tt__free(work->outs);
        ctx_free(&work->ctx);
        if (work->op)
            tt__op_unpin(work->op);
        tt__free(work->edges);
        tt__free(work);
    }
}

static void autograd_meta_free(struct tt_autograd_meta *m)
{
    if (!m)
        return;
    tt__unref(m->grad);
    if (m->grad_fn)
        node_release(m->grad_fn);
    tt__free(m);
}

static struct tt_autograd_meta *meta_of(tt_tensor *t)
{
    if (!t->autograd) {
        /* Before the first record: releasing its tensor frees it. */
        atomic_store_explicit(&tt__autograd_meta_free_hook, autograd_meta_free,
                              memory_order_relaxed);
        t->autograd = tt__calloc(1, sizeof *t->autograd);
        if (!t->autograd)
            return NULL;
    }
    return t->autograd;
}

bool tt__tensor_requires_grad(const tt_tensor *t)
{
    return t && (t->flags & TT_TF_REQUIRES_GRAD);
}

bool tt_requires_grad(const tt_tensor *t) { return tt__tensor_requires_grad(t); }

bool tt_is_leaf(const tt_tensor *t)
{
    return t && !(t->autograd && t->autograd->grad_fn);
}

const char *tt_grad_fn_name(const tt_tensor *t)
{
    return t && t->autograd && t->autograd->grad_fn ? t->autograd->grad_fn->op->name
                                                    : NULL;
}

tt_status tt_set_requires_grad(tt_tensor *t, bool on)
{
    tt_status st = TT_CHECK_TENSOR("tt_set_requires_grad", "self", t);
    if (st)
        return st;
    if (!tt_is_leaf(t))
        return tt_error(TT_EAUTOGRAD, "tt_set_requires_grad: you can only change "
                                      "requires_grad of leaf tensors; this one was made "
                                      "by %s (use tt_detach to get a leaf)",
                        tt_grad_fn_name(t));
    if (on && !tt_dtype_is_float((tt_dtype)t->dtype))
        return tt_error(TT_EAUTOGRAD, "tt_set_requires_grad: only tensors of floating "
                                      "point dtype can require gradients (got %s)",
                        tt_dtype_name((tt_dtype)t->dtype));
    if (on)
        t->flags |= TT_TF_REQUIRES_GRAD;
    else
        t->flags &= (uint16_t)~TT_TF_REQUIRES_GRAD;
    return TT_OK;
}

tt_tensor *tt_get_grad(const tt_tensor *t)
{
    return t && t->autograd ? tt_retain(t->autograd->grad) : NULL;
}

tt_status tt_set_grad(tt_tensor *t, const tt_tensor *grad)
{
    tt_status st = TT_CHECK_TENSOR("tt_set_grad", "self", t);
    if (st)
        return st;
    if (grad && (grad->ndim != t->ndim ||
                 memcmp(grad->sizes, t->sizes, sizeof(tt_size) * (size_t)t->ndim) != 0)) {
        char a[256], b[256];
        return tt_error(TT_ESHAPE, "tt_set_grad: argument 'grad' has shape %s, but the "
                                   "tensor has shape %s", tt_shape_str(grad, a, sizeof a),
                        tt_shape_str(t, b, sizeof b));
    }
    /* As PyTorch: accumulation adds into .grad in place in t's dtype, and
     * a tensor that is its own gradient would be overwritten by it. */
    if (grad && grad->dtype != t->dtype)
        return tt_error(TT_EDTYPE, "tt_set_grad: argument 'grad' has dtype %s, but the "
                                   "tensor has dtype %s; they must be the same",
                        tt_dtype_name((tt_dtype)grad->dtype), tt_dtype_name((tt_dtype)t->dtype));
    if (grad == t)
        return tt_error(TT_EINVAL, "tt_set_grad: a tensor cannot be its own gradient");
    if (!grad && !t->autograd)
        return TT_OK;
    struct tt_autograd_meta *m = meta_of(t);
    if (!m)
        return tt_errcode();
    tt_tensor *old = m->grad;
    m->grad = tt_retain((tt_tensor *)grad);
    tt__unref(old);
    return TT_OK;
}

/* ------------------------------------------------------------- contexts */

void tt__ctx_saved_before_write(tt_autograd_ctx *ctx, int k)
{
    if (ctx && k >= 0 && k < ctx->nsaved && ctx->saved[k])
        ctx->versions[k] = tt_version(ctx->saved[k]) - 1;
}

tt_status tt_ctx_save_for_backward(tt_autograd_ctx *ctx, int n, tt_tensor *const *ts)
{
    if (!ctx || n < 0 || (n > 0 && !ts))
        return tt_error(TT_EINVAL, "tt_ctx_save_for_backward: bad arguments");
    tt_tensor **s = tt__realloc(ctx->saved, sizeof *s * (size_t)ctx->nsaved,
                                sizeof *s * (size_t)(ctx->nsaved + n));
    if (!s)
        return tt_errcode();
    ctx->saved = s;
    uint64_t *v = tt__realloc(ctx->versions, sizeof *v * (size_t)ctx->nsaved,
                              sizeof *v * (size_t)(ctx->nsaved + n));
    if (!v)
        return tt_errcode();
    ctx->versions = v;
    for (int i = 0; i < n; i++) {
        tt_tensor *t = ts[i];
        tt_tensor *alias = NULL;
        if (t) {
            alias = tt__make_view(t, t->ndim, t->sizes, t->strides, t->offset);
            if (!alias)
                return tt_errcode();
            alias->flags &= (uint16_t)~TT_TF_REQUIRES_GRAD;
            /* The same value for a mode: a tracer must find the node that
             * made t when the backward reads the alias, not lift it as a
             * constant. */
            tt_set_mode_tag(alias, t->mode_key, t->mode_val);
        }
        ctx->saved[ctx->nsaved] = alias;
        ctx->versions[ctx->nsaved++] = t ? tt_version(t) : 0;
    }
    return TT_OK;
}

tt_tensor *tt_ctx_saved(tt_autograd_ctx *ctx, int i)
{
    if (!ctx || i < 0 || i >= ctx->nsaved) {
        tt_error(TT_EINVAL, "%s: saved tensor #%d does not exist (%d saved)",
                 ctx ? ctx->op->name : "tt_ctx_saved", i, ctx ? ctx->nsaved : 0);
        return NULL;
    }
    return ctx->saved[i];
}

static tt_status put_value(tt_autograd_ctx *ctx, const char *name, tt_value v)
{
    if (!ctx || !name || strlen(name) >= sizeof ctx->vals[0].name)
        return tt_error(TT_EINVAL, "tt_ctx_save: a name of 1 to 31 characters is needed");
    for (int i = 0; i < ctx->nvals; i++)
        if (strcmp(ctx->vals[i].name, name) == 0) {
            if (ctx->vals[i].v.kind == TT_V_INTS)
                tt__free((void *)ctx->vals[i].v.u.ints);
            ctx->vals[i].v = v;
            return TT_OK;
        }
    named_value *nv = tt__realloc(ctx->vals, sizeof *nv * (size_t)ctx->nvals,
                                  sizeof *nv * (size_t)(ctx->nvals + 1));
    if (!nv)
        return tt_errcode();
    ctx->vals = nv;
    snprintf(nv[ctx->nvals].name, sizeof nv[0].name, "%s", name);
    nv[ctx->nvals++].v = v;
    return TT_OK;
}

tt_status tt_ctx_save_ints(tt_autograd_ctx *ctx, const char *name, int n, const int64_t *v)
{
    if (n < 0 || (n > 0 && !v))
        return tt_error(TT_EINVAL, "tt_ctx_save_ints: bad list for '%s'", name ? name : "");
    int64_t *copy = tt__malloc(sizeof *copy * (size_t)(n ? n : 1));
    if (!copy)
        return tt_errcode();
    if (n)
        memcpy(copy, v, sizeof *copy * (size_t)n);
    tt_status st = put_value(ctx, name, tt_v_ints(n, copy));
    if (st)
        tt__free(copy);
    return st;
}

tt_status tt_ctx_save_int(tt_autograd_ctx *ctx, const char *name, int64_t v)
{
    return put_value(ctx, name, tt_v_int(v));
}

tt_status tt_ctx_save_float(tt_autograd_ctx *ctx, const char *name, double v)
{
    return put_value(ctx, name, tt_v_float(v));
}

tt_status tt_ctx_save_shape(tt_autograd_ctx *ctx, const char *name, const tt_tensor *t)
{
    tt_status st = TT_CHECK_TENSOR("tt_ctx_save_shape", "t", t);
    return st ? st : tt_ctx_save_ints(ctx, name, t->ndim, t->sizes);
}

static const tt_value *get_value(tt_autograd_ctx *ctx, const char *name,
                                 tt_value_kind kind, const char *what)
{
    for (int i = 0; ctx && name && i < ctx->nvals; i++)
        if (strcmp(ctx->vals[i].name, name) == 0) {
            if (ctx->vals[i].v.kind == kind)
                return &ctx->vals[i].v;
            tt_error(TT_EINVAL, "%s: the saved value '%s' is not %s",
                     ctx->op->name, name, what);
            return NULL;
        }
    tt_error(TT_ENOTFOUND, "%s: no value named '%s' was saved in setup_context",
             ctx ? ctx->op->name : "tt_ctx_get", name ? name : "(null)");
    return NULL;
}

tt_status tt_ctx_get_ints(tt_autograd_ctx *ctx, const char *name, const int64_t **v, int *n)
{
    const tt_value *val = get_value(ctx, name, TT_V_INTS, "an int list");
    if (!val)
        return tt_errcode();
    *v = val->u.ints;
    *n = val->n;
    return TT_OK;
}

tt_status tt_ctx_get_int(tt_autograd_ctx *ctx, const char *name, int64_t *v)
{
    const tt_value *val = get_value(ctx, name, TT_V_INT, "an int");
    if (!val)
        return tt_errcode();
    *v = val->u.i;
    return TT_OK;
}

tt_status tt_ctx_get_float(tt_autograd_ctx *ctx, const char *name, double *v)
{
    const tt_value *val = get_value(ctx, name, TT_V_FLOAT, "a float");
    if (!val)
        return tt_errcode();
    *v = val->u.f;
    return TT_OK;
}

bool tt_ctx_needs_input_grad(const tt_autograd_ctx *ctx, int slot)
{
    return ctx && slot >= 0 && slot < ctx->nslots && ctx->needs[slot];
}

int tt_ctx_input_slot(const tt_autograd_ctx *ctx, int arg)
{
    return ctx && arg >= 0 && arg <= TT_MAX_ARGS ? ctx->arg_slot[arg] : -1;
}

int tt_ctx_num_inputs(const tt_autograd_ctx *ctx) { return ctx ? ctx->nslots : 0; }
const tt_op *tt_ctx_op(const tt_autograd_ctx *ctx) { return ctx ? ctx->op->handle : NULL; }
void *tt_ctx_userdata(const tt_autograd_ctx *ctx) { return ctx ? ctx->op->userdata : NULL; }

/* ------------------------------------------------------------ recording */

/* The tensor in input slot `slot` of a call, or NULL. */
static tt_tensor *slot_tensor(const tt_value *args, int nargs, int slot)
{
    for (int i = 0, s = 0; i < nargs; i++) {
        int n = args[i].kind == TT_V_TENSORS ? args[i].n : 1;
        if (slot < s + n)
            return args[i].kind == TT_V_TENSORS ? args[i].u.tensors[slot - s]
                 : args[i].kind == TT_V_TENSOR ? args[i].u.t : NULL;
        s += n;
    }
    return NULL;
}

static int count_slots(const tt_value *args, int nargs, int *arg_slot)
{
    int s = 0;
    for (int i = 0; i < nargs; i++) {
        arg_slot[i] = s;
        s += args[i].kind == TT_V_TENSORS ? args[i].n : 1;
    }
    arg_slot[nargs] = s;
    return s;
}

bool tt__autograd_wants(const tt_opdef *op, const tt_value *args, int nargs)
{
    (void)op;
    for (int i = 0; i < nargs; i++) {
        if (args[i].kind == TT_V_TENSOR && tt__tensor_requires_grad(args[i].u.t))
            return true;
        if (args[i].kind == TT_V_TENSORS)
            for (int j = 0; j < args[i].n; j++)
                if (tt__tensor_requires_grad(args[i].u.tensors[j]))
                    return true;
    }
    return false;
}

static tt_status no_autograd_error(const tt_opdef *op, const tt_value *args, int nargs)
{
    const char *arg = "?";
    for (int i = 0; i < nargs; i++)
        if (args[i].kind == TT_V_TENSOR && tt__tensor_requires_grad(args[i].u.t)) {
            arg = tt_schema_arg(op->schema, i)->name;
            break;
        }
    if (op->builtin)
        return tt_error(TT_EAUTOGRAD, "%s: argument '%s' requires grad, but the op is "
                                      "not differentiable (it has no derivative); detach "
                                      "the input or call it under tt_no_grad_begin()",
                        op->name, arg);
    return tt_error(TT_EAUTOGRAD,
                    "%s: argument '%s' requires grad, but the op has no autograd "
                    "registration, so training through it would give no gradient. "
                    "Register one with tt_register_autograd(lib, \"%s\", backward, "
                    "setup_context) (or the spec's .backward/.setup_context); or, if the "
                    "op is not differentiable (inference, metrics), register the "
                    "fallthrough, tt_register_autograd(lib, \"%s\", "
                    "tt_autograd_fallthrough, NULL), so it runs unrecorded and its "
                    "outputs do not require grad; or call it under tt_no_grad_begin()",
                    op->name, arg, op->name, op->name);
}

/* ------------------------------------------- in-place writes and views
 *
 * The engine does not rebase history through views (PyTorch's
 * CopySlices): an in-place write recorded through one tensor leaves every
 * other tensor of the same storage (the view's base, the base's other
 * views) with a grad_fn that describes a value they no longer have, so a
 * gradient through them would be silently wrong. Each such tensor is
 * refused where autograd would read that history: as an input of a
 * recorded op, a backward root or a tt_grad input. */
static bool history_stale(const tt_tensor *t)
{
    return t && t->autograd && t->autograd->grad_fn &&
           t->storage->ag_write_version > t->autograd->hist_version;
}

static tt_status stale_error(const char *fn, const char *arg, const tt_tensor *t)
{
    const char *w = t->storage->ag_write_op;
    return tt_error(TT_EINVAL,
                    "%s: argument '%s' (made by %s) shares its memory with a tensor that "
                    "%s wrote in place after '%s''s autograd history was recorded (a "
                    "view of it, or its base); autograd does not rebase history through "
                    "views, so its gradient would be wrong (storage at version %llu, "
                    "history at version %llu). Build the written value out of place instead "
                    "(tt_select_scatter, tt_slice_scatter, tt_cat), or write into a "
                    "clone (tt_clone) of the view",
                    fn, arg, tt_grad_fn_name(t), w ? w : "an in-place op", arg, (unsigned long long)t->storage->ag_write_version,
                    (unsigned long long)t->autograd->hist_version);
}

/* A node of a view op (its result aliases its input, not written). */
static bool is_view_node(const node *n)
{
    const tt_arg *r = n && tt_schema_nreturns(n->op->schema) > 0
                          ? tt_schema_return(n->op->schema, 0) : NULL;
    return r && r->alias_set && !r->is_write && n->ctx.nslots > 0;
}

/* Argument i is written and returned (self of mul_, out of add.out): its
 * result gets the op's history. A written argument that is not returned
 * (batch norm's running_mean) is a buffer the op updates outside autograd,
 * as in PyTorch. */
static bool returned_write(const tt_opdef *op, int i)
{
    const tt_arg *a = tt_schema_arg(op->schema, i);
    if (!(op->mutated >> i & 1) || !a->alias_set)
        return false;
    for (int j = 0; j < tt_schema_nreturns(op->schema); j++) {
        const tt_arg *r = tt_schema_return(op->schema, j);
        if (r->alias_set && strcmp(r->alias_set, a->alias_set) == 0)
            return true;
    }
    return false;
}

/* Refuses, before the kernel runs, an in-place call whose write autograd
 * would get wrong: into a view of a leaf that requires grad (PyTorch's
 * refusal), through a tensor whose history is already stale, or of a
 * value that requires grad into a tensor that does not while other
 * tensors share its memory (they would be left without the history). */
static tt_status check_written(const tt_opdef *op, const char *arg, tt_tensor *t,
                               bool returned)
{
    if (tt__tensor_requires_grad(t) && tt_is_leaf(t))
        return tt_error(TT_EAUTOGRAD, "%s: argument '%s' is a leaf tensor that "
                                      "requires grad and cannot be written in place; "
                                      "update parameters under tt_no_grad_begin()",
                        op->name, arg);
    if (!returned)
        return TT_OK;
    for (node *n = t->autograd ? t->autograd->grad_fn : NULL; is_view_node(n);
         n = n->edges[0].fn)
        if (n->edges[0].leaf)
            return tt_error(TT_EAUTOGRAD,
                            "%s: argument '%s' is a view (made by %s) of a leaf tensor "
                            "that requires grad and cannot be written in place (as "
                            "PyTorch: a view of a leaf Variable that requires grad is "
                            "being used in an in-place operation); write into a clone, "
                            "or update parameters under tt_no_grad_begin()",
                            op->name, arg, tt_grad_fn_name(t));
    if (history_stale(t))
        return stale_error(op->name, arg, t);
    if (!tt__tensor_requires_grad(t) && tt_dtype_is_float((tt_dtype)t->dtype) &&
        atomic_load(&t->storage->refcnt) > 1)
        return tt_error(TT_EINVAL,
                        "%s: argument '%s' does not require grad and shares its memory "
                        "with other tensors (a view of it, or its base); writing a "
                        "value that requires grad into it would leave them without "
                        "that value's autograd history (autograd does not rebase "
                        "history through views), so their gradient would be silently "
                        "lost. Build the result out of place (tt_select_scatter, "
                        "tt_slice_scatter, tt_cat, tt_stack) or write into a tensor "
                        "no other tensor views",
                        op->name, arg);
    return TT_OK;
}

/* The tensor j of argument i (a Tensor, or an element of a Tensor[]). */
static tt_tensor *arg_tensor(const tt_value *a, int j)
{
    return a->kind == TT_V_TENSOR ? (j == 0 ? a->u.t : NULL)
         : a->kind == TT_V_TENSORS && j < a->n ? a->u.tensors[j] : NULL;
}

static int arg_count(const tt_value *a) { return a->kind == TT_V_TENSORS ? a->n : 1; }

static tt_status check_inplace(const tt_opdef *op, const tt_value *args, int nargs)
{
    for (int i = 0; i < nargs; i++)
        for (int j = 0; (op->mutated >> i & 1) && j < arg_count(&args[i]); j++) {
            tt_tensor *t = arg_tensor(&args[i], j);
            tt_status st = t ? check_written(op, tt_schema_arg(op->schema, i)->name, t,
                                             returned_write(op, i))
                             : TT_OK;
            if (st)
                return st;
        }
    return TT_OK;
}

/* A Tensor[] result of an op with no derivative: its floating point
 * elements would silently get no gradient. Names the op, the input and
 * the result. */
static tt_status list_result_error(const tt_opdef *op, const tt_value *args, int nargs,
                                   int ret)
{
    const char *arg = "?";
    for (int i = 0; i < nargs; i++)
        if (args[i].kind == TT_V_TENSOR ? tt__tensor_requires_grad(args[i].u.t)
                                        : args[i].kind == TT_V_TENSORS) {
            bool any = args[i].kind == TT_V_TENSOR;
            for (int j = 0; !any && j < args[i].n; j++)
                any = tt__tensor_requires_grad(args[i].u.tensors[j]);
            if (any) {
                arg = tt_schema_arg(op->schema, i)->name;
                break;
            }
        }
    return tt_error(TT_EAUTOGRAD,
                    "%s: argument '%s' requires grad, but the op is not differentiable "
                    "(it has no derivative) and result %d is a Tensor[] of floating "
                    "point tensors, whose elements would silently get no gradient; "
                    "detach the input or call the op under tt_no_grad_begin()",
                    op->name, arg, ret);
}

/* A built-in with no derivative whose outputs are not floating point
 * (comparisons, argmax) is fine: nothing downstream needs a gradient. */
static tt_status run_non_differentiable(const tt_opdef *op, const tt_value *args, int nargs,
                                        tt_value *outs, int nouts)
{
    if (!op->builtin || op->mutated)
        return no_autograd_error(op, args, nargs);
    tt_status st = tt__dispatch_backend(op, args, nargs, outs, nouts);
    for (int j = 0; !st && j < nouts; j++) {
        bool flt = outs[j].kind == TT_V_TENSOR &&
                   tt_dtype_is_float((tt_dtype)outs[j].u.t->dtype);
        bool list_flt = false;
        for (int k = 0; outs[j].kind == TT_V_TENSORS && k < outs[j].n; k++)
            list_flt |= outs[j].u.tensors[k] &&
                        tt_dtype_is_float((tt_dtype)outs[j].u.tensors[k]->dtype);
        if (flt || list_flt) {
            for (int k = 0; k < nouts; k++)
                tt_value_clear(&outs[k]);
            return list_flt ? list_result_error(op, args, nargs, j)
                            : no_autograd_error(op, args, nargs);
        }
    }
    return st;
}

tt_status tt__autograd_call(const tt_opdef *op, const tt_value *args, int nargs,
                            tt_value *outs, int nouts)
{
    /* Outputs that never carry a gradient, and PyTorch's fallthrough for
     * autograd: run the kernel, record nothing; the outputs are new
     * tensors that do not require grad. */
    if (op->nondiff || atomic_load(&op->backward) == tt_autograd_fallthrough)
        return tt__dispatch_backend(op, args, nargs, outs, nouts);
    if (!atomic_load(&op->backward))
        return run_non_differentiable(op, args, nargs, outs, nouts);
    /* PyTorch refuses to write in place into a leaf that requires grad:
     * the leaf's value would no longer be what its gradient is about. */
    tt_status st = op->mutated ? check_inplace(op, args, nargs) : TT_OK;
    if (st)
        return st;
    /* A differentiable input whose recorded history no longer matches
     * its value (written through a view since). */
    for (int i = 0; i < nargs; i++)
        for (int j = 0; j < arg_count(&args[i]); j++) {
            tt_tensor *t = arg_tensor(&args[i], j);
            if (tt__tensor_requires_grad(t) && history_stale(t))
                return stale_error(op->name, tt_schema_arg(op->schema, i)->name, t);
        }
    /* An op whose derivative needs self before the write (mul_.Tensor)
     * copies it first; setup_context sees the copy as argument 0. No
     * gradient flows through the copy (it is only read by the rule). */
    tt_value before[TT_MAX_ARGS];
    const tt_value *setup_args = args;
    tt_tensor *old_self = NULL;
    if (op->saves_self && args[0].kind == TT_V_TENSOR && args[0].u.t) {
        tt__autograd_off++;
        old_self = tt__call_op_as_caller(TT_OP_CLONE, TT_ARGS(tt_v_tensor(args[0].u.t)));
        tt__autograd_off--;
        if (!old_self)
            return tt_errcode();
        memcpy(before, args, sizeof(tt_value) * (size_t)nargs);
        before[0].u.t = old_self;
        setup_args = before;
    }
    st = tt__dispatch_backend(op, args, nargs, outs, nouts);
    if (st) {
        tt__unref(old_self);
        return st;
    }

    node *n = tt__calloc(1, sizeof *n);
    if (!n)
        goto oom;
    atomic_init(&n->refcnt, 1);
    n->seq = atomic_fetch_add(&next_seq, 1);
    n->op = op;
    tt__op_pin_again(op);
    n->backward = atomic_load(&op->backward);
    n->ctx.op = op;
    int nslots = count_slots(args, nargs, n->ctx.arg_slot);
    /* One allocation at a time, so a failure stops at the one that failed
     * (nslots still 0: node_release walks no edges). */
    if (!(n->ctx.needs = tt__calloc((size_t)(nslots ? nslots : 1), sizeof(bool))) ||
        !(n->edges = tt__calloc((size_t)(nslots ? nslots : 1), sizeof(edge))))
        goto oom;
    n->ctx.nslots = nslots;
    for (int s = 0; s < n->ctx.nslots; s++) {
        tt_tensor *t = slot_tensor(args, nargs, s);
        if (!tt__tensor_requires_grad(t))
            continue;
        edge *e = &n->edges[s];
        n->ctx.needs[s] = true;
        e->ndim = t->ndim;
        memcpy(e->sizes, t->sizes, sizeof e->sizes);
        e->dtype = (tt_dtype)t->dtype;
        if (t->autograd && t->autograd->grad_fn) {
            e->fn = node_retain(t->autograd->grad_fn);
            e->output_nr = t->autograd->output_nr;
        } else {
            e->leaf = tt_retain(t);
        }
    }
    if (op->setup_context) {
        tt__autograd_off++;
        st = op->setup_context(&n->ctx, setup_args, nargs, outs, nouts);
        tt__autograd_off--;
        if (st) {
            if (tt_errcode() == TT_OK)
                tt_error(st, "%s: setup_context failed (%s)", op->name, tt_status_name(st));
            goto fail;
        }
    }
    int nflat = 0;
    for (int j = 0; j < nouts; j++)
        nflat += arg_count(&outs[j]);
    if (!(n->outs = tt__calloc((size_t)(nflat ? nflat : 1), sizeof *n->outs)) ||
        !(n->buf = tt__calloc((size_t)(nflat ? nflat : 1), sizeof *n->buf)))
        goto oom;
    n->nout = nflat;
    for (int j = 0, o = 0; j < nouts; j++)
        for (int k = 0; k < arg_count(&outs[j]); k++, o++) {
            tt_tensor *t = arg_tensor(&outs[j], k);
            if (!t)
                continue;
            n->outs[o] = (out_meta){t->ndim, {0}, (tt_dtype)t->dtype, t->storage->fake};
            memcpy(n->outs[o].sizes, t->sizes, sizeof n->outs[o].sizes);
            if (!tt_dtype_is_float((tt_dtype)t->dtype))
                continue; /* argmax, comparisons: nothing to differentiate */
            struct tt_autograd_meta *m = meta_of(t);
            if (!m)
                goto oom;
            /* An in-place op returns its input: its history now ends here. */
            if (m->grad_fn)
                node_release(m->grad_fn);
            m->grad_fn = node_retain(n);
            m->output_nr = o;
            m->hist_version = tt_version(t);
            t->flags |= TT_TF_REQUIRES_GRAD;
        }
    /* Every other tensor of a written storage now has a stale history. */
    for (int i = 0; i < nargs; i++)
        for (int j = 0; returned_write(op, i) && j < arg_count(&args[i]); j++) {
            tt_tensor *t = arg_tensor(&args[i], j);
            if (t && tt_dtype_is_float((tt_dtype)t->dtype)) {
                t->storage->ag_write_version = tt_version(t);
                t->storage->ag_write_op = op->builtin ? op->name : NULL;
            }
        }
    node_release(n); /* the outputs hold it now */
    tt__unref(old_self); /* the saved copy, if setup kept it */
    return TT_OK;
oom:
    st = tt_errcode() ? tt_errcode() : TT_ENOMEM;
fail:
    tt__unref(old_self);
    if (n)
        node_release(n);
    for (int j = 0; j < nouts; j++)
        tt_value_clear(&outs[j]);
    return st;
}

/* ----------------------------------------------------------------- engine */

/* The engine's views, copies and factories do what the public tt_full,
 * tt_reshape, tt_to_dtype and tt_clone (ops/, above this file) do: call
 * the op by id when a mode, fake mode or autograd needs it, so that a
 * traced backward records them as nodes, and else run the direct path. */
static tt_tensor *full_op(int ndim, const tt_size *sizes, double v, tt_dtype dt)
{
    if (tt__factory_needs_dispatch() && !tt__check_sizes("tt_full", ndim, sizes, NULL))
        return tt__call_op(TT_OP_FULL,
                           TT_ARGS(tt_v_ints(ndim, sizes), tt_v_float(v), tt_v_dtype(dt)));
    return tt__full_raw("tt_full", ndim, sizes, v, dt);
}

static tt_tensor *reshape_op(const tt_tensor *t, int ndim, const tt_size *sizes)
{
    if (tt__needs_dispatch1(t))
        return tt__call_op(TT_OP_RESHAPE, TT_ARGS(tt_v_tensor(t), tt_v_ints(ndim, sizes)));
    return tt__reshape_raw(t, ndim, sizes);
}

static tt_tensor *to_dtype_op(const tt_tensor *t, tt_dtype dt)
{
    if (tt__needs_dispatch1(t))
        return tt__call_op(TT_OP__TO_COPY, TT_ARGS(tt_v_tensor(t), tt_v_dtype(dt)));
    return tt__to_dtype_raw(t, dt);
}

static tt_tensor *clone_op(const tt_tensor *t)
{
    if (tt__needs_dispatch1(t))
        return tt__call_op(TT_OP_CLONE, TT_ARGS(tt_v_tensor(t)));
    return tt__clone_raw(t);
}

/* A filled tensor made through the factory op (tt::full), so that a
 * traced backward records it as a node instead of lifting a constant;
 * fake when the value it stands for is. */
static tt_tensor *filled(int ndim, const tt_size *sizes, tt_dtype dt, bool fake, double v)
{
    if (fake)
        tt_fake_mode_begin();
    tt_tensor *t = full_op(ndim, sizes, v, dt);
    if (fake)
        tt_fake_mode_end();
    return t;
}

static tt_tensor *zeros_of(const out_meta *m)
{
    return filled(m->ndim, m->sizes, m->dtype, m->fake, 0);
}

/* Brings a gradient to the input's shape and dtype: a gradient of the
 * broadcast shape is summed back down (so a backward formula need not
 * know about broadcasting), as PyTorch's validate_outputs does. */
static tt_tensor *fit_grad(const tt_opdef *op, int slot, tt_tensor *g, const edge *e)
{
    /* tt_size_eq, not ==: under a symbolic trace two symbols (s0 of the
     * input, s2 of the other operand) may be equal sizes, which the
     * comparison records as a guard. */
    bool same = g->ndim == e->ndim;
    for (int d = 0; same && d < e->ndim; d++)
        same = tt_size_eq(e->sizes[d], g->sizes[d]);
    if (!same) {
        /* Expandable: e's shape broadcasts to g's. */
        bool ok = e->ndim <= g->ndim;
        int64_t dims[TT_MAX_DIMS];
        int nd = 0, lead = g->ndim - e->ndim;
        for (int d = 0; ok && d < g->ndim; d++) {
            if (d < lead) {
                dims[nd++] = d;
            } else if (!tt_size_eq(e->sizes[d - lead], g->sizes[d])) {
                ok = tt__sz_eq(e->sizes[d - lead], 1); /* a guard on a symbol */
                dims[nd++] = d;
            }
        }
        if (!ok) {
            char a[256], b[256];
            tt_tensor shape;
            memset(&shape, 0, sizeof shape);
            shape.ndim = (int8_t)e->ndim;
            memcpy(shape.sizes, e->sizes, sizeof shape.sizes);
            tt_error(TT_ESHAPE, "%s: the backward returned a gradient of shape %s for "
                                "input %d, which has shape %s", op->name,
                     tt_shape_str(g, a, sizeof a), slot, tt_shape_str(&shape, b, sizeof b));
            tt_release(g);
            return NULL;
        }
        tt_tensor *s = tt__call_op(TT_OP_SUM_DIM_INTLIST,
                                   TT_ARGS(tt_v_tensor(g), tt_v_ints(nd, dims), tt_v_bool(true)));
        tt_release(g);
        if (!s)
            return NULL;
        g = reshape_op(s, e->ndim, e->sizes);
        tt_release(s);
        if (!g)
            return NULL;
    }
    if ((tt_dtype)g->dtype != e->dtype) {
        tt_tensor *c = to_dtype_op(g, e->dtype);
        tt_release(g);
        g = c;
    }
    return g;
}

/* Adds g into *slot (taking g). */
static tt_status accumulate(tt_tensor **slot, tt_tensor *g)
{
    if (!*slot) {
        *slot = g;
        return TT_OK;
    }
    tt_tensor *sum = tt__call_op(TT_OP_ADD_TENSOR, TT_ARGS(tt_v_tensor(*slot), tt_v_tensor(g)));
    tt_release(g);
    if (!sum)
        return tt_errcode();
    tt_release(*slot);
    *slot = sum;
    return TT_OK;
}

/* Into a leaf's .grad: the first gradient is kept (cloned unless nothing
 * else holds it or its memory), later ones are added in place, as
 * PyTorch's AccumulateGrad does outside create_graph. A gradient that is
 * one of several views of one storage (cat's backward narrows one
 * gradient into a slice per input, over sum's stride-0 expand) is cloned:
 * adding into it would change the slices still on their way to this leaf
 * (stack([x, x, x]).sum() gave x a gradient of 4). */
static tt_status accumulate_leaf(tt_tensor *leaf, tt_tensor *g)
{
    struct tt_autograd_meta *m = meta_of(leaf);
    if (!m) {
        tt_release(g);
        return tt_errcode();
    }
    if (!m->grad) {
        if (atomic_load(&g->refcnt) == 1 && atomic_load(&g->storage->refcnt) == 1 &&
            (g->flags & TT_TF_CONTIGUOUS)) {
            m->grad = g;
            return TT_OK;
        }
        m->grad = clone_op(g);
        tt_release(g);
        return m->grad ? TT_OK : tt_errcode();
    }
    tt_status st = tt__call_op_status(TT_OP_ADD__TENSOR,
                                      TT_ARGS(tt_v_tensor(m->grad), tt_v_tensor(g)));
    tt_release(g);
    return st;
}

typedef struct {
    node **v;
    int n, cap;
} node_list;

static bool list_push(node_list *l, node *n)
{
    if (l->n == l->cap) {
        int nc = l->cap ? l->cap * 2 : 64;
        node **nv = tt__realloc(l->v, sizeof *nv * (size_t)l->cap, sizeof *nv * (size_t)nc);
        if (!nv)
            return false;
        l->v = nv;
        l->cap = nc;
    }
    l->v[l->n++] = n;
    return true;
}

static int by_seq_desc(const void *a, const void *b)
{
    uint64_t x = (*(node *const *)a)->seq, y = (*(node *const *)b)->seq;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* What tt_grad asks for: the gradient reaching a leaf, or reaching a
 * non-leaf tensor's (node, output). */
typedef struct {
    tt_tensor *leaf;
    node *fn;
    int output_nr;
    tt_tensor *grad;
} capture;

static tt_status check_saved(const node *n)
{
    const tt_autograd_ctx *c = &n->ctx;
    if (c->freed)
        return tt_error(TT_EAUTOGRAD, "%s: trying to backward through the graph a second "
                                      "time; its saved tensors were freed after the first "
                                      "backward", n->op->name);
    for (int i = 0; i < c->nsaved; i++) {
        tt_tensor *t = c->saved[i];
        if (t && tt_version(t) != c->versions[i]) {
            char d[300];
            return tt_error(TT_EAUTOGRAD,
                            "%s: one of the tensors needed for gradient computation has "
                            "been modified by an in-place operation: saved tensor #%d "
                            "(%s) is at version %llu; expected version %llu",
                            n->op->name, i, tt_describe(t, d, sizeof d),
                            (unsigned long long)tt_version(t),
                            (unsigned long long)c->versions[i]);
        }
    }
    return TT_OK;
}

static tt_status run_node(node *n, capture *caps, int ncaps, bool accumulate_leaves,
                          bool hooks)
{
    tt_tensor **gin = NULL;
    tt_status st = check_saved(n);
    tt_tensor **grads = tt__calloc((size_t)(n->nout ? n->nout : 1), sizeof *grads);
    if (!grads)
        return st ? st : tt_errcode();
    for (int j = 0; !st && j < n->nout; j++) {
        grads[j] = n->buf[j] ? tt_retain(n->buf[j]) : zeros_of(&n->outs[j]);
        if (!grads[j])
            st = tt_errcode();
    }
    if (!st) {
        gin = tt__calloc((size_t)(n->ctx.nslots ? n->ctx.nslots : 1), sizeof *gin);
        st = gin ? TT_OK : tt_errcode();
    }
    if (!st) {
        tt_clear_error();
        st = n->backward(&n->ctx, grads, n->nout, gin, n->ctx.nslots);
        if (st && tt_errcode() == TT_OK)
            tt_error(st, "%s: the backward failed (%s) without a message",
                     n->op->name, tt_status_name(st));
    }
    for (int s = 0; gin && s < n->ctx.nslots; s++) {
        tt_tensor *g = gin[s];
        gin[s] = NULL;
        edge *e = &n->edges[s];
        if (!g)
            continue;
        if (st || !n->ctx.needs[s]) {
            tt_release(g);
            continue;
        }
        if (!(g = fit_grad(n->op, s, g, e))) {
            st = tt_errcode();
            continue;
        }
        if (e->fn) {
            st = accumulate(&e->fn->buf[e->output_nr], g);
            continue;
        }
        bool captured = false;
        for (int c = 0; c < ncaps && !st; c++)
            if (caps[c].leaf == e->leaf) {
                st = accumulate(&caps[c].grad, tt_retain(g));
                captured = true;
            }
        if (!st && accumulate_leaves && !captured)
            st = accumulate_leaf(e->leaf, g);
        else
            tt_release(g);
    }
    /* A leaf whose last edge this was has its final gradient: tell the
     * hook (after every slot accumulated, so an op using the leaf twice
     * reports it once). */
    for (int s = 0; hooks && !st && s < n->ctx.nslots; s++) {
        tt_tensor *leaf = n->edges[s].leaf;
        if (leaf && n->ctx.needs[s] && --leaf->autograd->pending == 0)
            st = ready_hook(leaf, ready_ud);
    }
    tt__free(gin);
    for (int j = 0; j < n->nout; j++)
        tt_release(grads[j]);
    tt__free(grads);
    return st;
}

/* Runs the graph above the roots. root_grads are taken. */
static tt_status run_engine(int nroots, tt_tensor *const *roots, tt_tensor **root_grads,
                            capture *caps, int ncaps, bool accumulate_leaves)
{
    static _Atomic uint64_t visit_mark;
    uint64_t mark = atomic_fetch_add(&visit_mark, 1) + 1;
    node_list all = {0};
    tt_status st = TT_OK;
    /* Collect every node reachable from the roots. */
    for (int r = 0; r < nroots && !st; r++) {
        node *n = roots[r]->autograd ? roots[r]->autograd->grad_fn : NULL;
        if (n && n->visit != mark) {
            n->visit = mark;
            if (!list_push(&all, n))
                st = tt_errcode();
        }
    }
    for (int i = 0; i < all.n && !st; i++)
        for (int s = 0; s < all.v[i]->ctx.nslots && !st; s++) {
            node *in = all.v[i]->edges[s].fn;
            if (in && in->visit != mark) {
                in->visit = mark;
                if (!list_push(&all, in))
                    st = tt_errcode();
            }
        }
    if (all.n > 1) /* all.v is NULL when the roots are leaves: qsort wants a pointer */
        qsort(all.v, (size_t)all.n, sizeof *all.v, by_seq_desc);
    /* For the gradient-ready hook: how many edges of this backward reach
     * each leaf. */
    bool hooks = accumulate_leaves && ready_hook;
    for (int i = 0; hooks && i < all.n && !st; i++)
        for (int s = 0; s < all.v[i]->ctx.nslots && !st; s++) {
            tt_tensor *leaf = all.v[i]->edges[s].leaf;
            if (!leaf || !all.v[i]->ctx.needs[s])
                continue;
            struct tt_autograd_meta *m = meta_of(leaf);
            if (!m) {
                st = tt_errcode();
                break;
            }
            if (m->ready_mark != mark) {
                m->ready_mark = mark;
                m->pending = 0;
            }
            m->pending++;
        }
    /* Seed the roots' gradients; a root that is itself a leaf is a
     * capture or accumulates directly. */
    tt_tensor *ready_root = NULL;
    for (int r = 0; r < nroots; r++) {
        tt_tensor *g = root_grads[r];
        root_grads[r] = NULL;
        node *n = roots[r]->autograd ? roots[r]->autograd->grad_fn : NULL;
        if (st) {
            tt_release(g);
        } else if (n) {
            st = accumulate(&n->buf[roots[r]->autograd->output_nr], g);
        } else {
            bool captured = false;
            for (int c = 0; c < ncaps && !st; c++)
                if (caps[c].leaf == roots[r]) {
                    st = accumulate(&caps[c].grad, tt_retain(g));
                    captured = true;
                }
            if (!st && accumulate_leaves && !captured) {
                st = accumulate_leaf(roots[r], g);
                ready_root = hooks ? roots[r] : NULL;
            } else {
                tt_release(g);
            }
        }
    }
    tt_scope_pause();
    no_grad_depth++;
    sync_grad_flag();
    if (!st && ready_root) /* a leaf that is the loss: final at once */
        st = ready_hook(ready_root, ready_ud);
    for (int i = 0; i < all.n && !st; i++) {
        node *n = all.v[i];
        for (int c = 0; c < ncaps && !st; c++)
            if (caps[c].fn == n && n->buf[caps[c].output_nr])
                st = accumulate(&caps[c].grad, tt_retain(n->buf[caps[c].output_nr]));
        if (!st)
            st = run_node(n, caps, ncaps, accumulate_leaves, hooks);
        for (int j = 0; j < n->nout; j++)
            n->buf[j] = tt_release(n->buf[j]);
        ctx_clear_saved(&n->ctx);
    }
    no_grad_depth--;
    sync_grad_flag();
    tt_scope_resume();
    for (int i = 0; i < all.n; i++)
        for (int j = 0; j < all.v[i]->nout; j++)
            all.v[i]->buf[j] = tt_release(all.v[i]->buf[j]);
    tt__free(all.v);
    return st;
}

static tt_tensor *ones_like_root(const char *fn, const tt_tensor *t)
{
    if (tt_numel(t) != 1) {
        char s[256];
        tt_error(TT_EAUTOGRAD, "%s: a gradient can be implicitly created only for "
                               "one-element outputs (got shape %s); pass the gradient "
                               "explicitly", fn, tt_shape_str(t, s, sizeof s));
        return NULL;
    }
    return filled(t->ndim, t->sizes, (tt_dtype)t->dtype, t->storage->fake, 1);
}

static tt_status check_root(const char *fn, int i, const tt_tensor *t, const tt_tensor *g)
{
    tt_status st = TT_CHECK_TENSOR(fn, "outputs", t);
    if (st)
        return st;
    if (!tt__tensor_requires_grad(t))
        return tt_error(TT_EAUTOGRAD, "%s: element %d of the outputs does not require "
                                      "grad and has no grad_fn (was it computed under "
                                      "no-grad, or from tensors that do not require grad?)",
                        fn, i);
    if (history_stale(t))
        return stale_error(fn, "outputs", t);
    if (g && (g->ndim != t->ndim ||
              memcmp(g->sizes, t->sizes, sizeof(tt_size) * (size_t)t->ndim) != 0)) {
        char a[256], b[256];
        return tt_error(TT_ESHAPE, "%s: the gradient for output %d has shape %s, but the "
                                   "output has shape %s", fn, i, tt_shape_str(g, a, sizeof a),
                        tt_shape_str(t, b, sizeof b));
    }
    return TT_OK;
}

tt_status tt_backward(tt_tensor *loss, const tt_tensor *grad)
{
    const char *fn = "tt_backward";
    tt_status st = check_root(fn, 0, loss, grad);
    if (st)
        return st;
    tt_scope_pause();
    tt_tensor *g = grad ? tt_retain((tt_tensor *)grad) : ones_like_root(fn, loss);
    tt_scope_resume();
    if (!g)
        return tt_errcode();
    return run_engine(1, &loss, &g, NULL, 0, true);
}

tt_status tt_grad(int nout, tt_tensor *const *outputs, tt_tensor *const *grad_outputs,
                  int nin, tt_tensor *const *inputs, tt_tensor **grads_out)
{
    const char *fn = "tt_grad";
    /* No bound on the counts: a training step may differentiate with
     * respect to every parameter of a large model. */
    if (nout < 1 || nin < 0 || !outputs || (nin > 0 && (!inputs || !grads_out)))
        return tt_error(TT_EINVAL, "%s: expects 1 or more outputs and 0 or more inputs with "
                                   "their arrays", fn);
    /* As torch.autograd.grad: "grad requires non-empty inputs". */
    if (nin == 0)
        return tt_error(TT_EINVAL, "%s: argument 'nin' is 0; expected at least one input to "
                                   "differentiate with respect to", fn);
    for (int i = 0; i < nin; i++)
        grads_out[i] = NULL;
    for (int i = 0; i < nout; i++) {
        tt_status st = check_root(fn, i, outputs[i], grad_outputs ? grad_outputs[i] : NULL);
        if (st)
            return st;
    }
    for (int i = 0; i < nin; i++) {
        tt_status st = TT_CHECK_TENSOR(fn, "inputs", inputs[i]);
        if (!st && !tt__tensor_requires_grad(inputs[i]))
            st = tt_error(TT_EAUTOGRAD, "%s: input %d does not require grad", fn, i);
        if (!st && history_stale(inputs[i]))
            st = stale_error(fn, "inputs", inputs[i]);
        if (st)
            return st;
    }
    capture *caps = tt__calloc((size_t)nin, sizeof *caps);
    tt_tensor **roots_g = caps ? tt__calloc((size_t)nout, sizeof *roots_g) : NULL;
    if (!roots_g) {
        tt__free(caps);
        return tt_error(TT_ENOMEM, "%s: out of memory for the gradients of %d inputs", fn,
                        nin);
    }
    for (int i = 0; i < nin; i++) {
        tt_tensor *t = inputs[i];
        bool leaf = tt_is_leaf(t);
        caps[i] = (capture){leaf ? t : NULL, leaf ? NULL : t->autograd->grad_fn,
                            leaf ? 0 : t->autograd->output_nr, NULL};
    }
    tt_status st = TT_OK;
    tt_scope_pause();
    for (int i = 0; i < nout; i++) {
        roots_g[i] = NULL;
        if (!st) {
            roots_g[i] = grad_outputs && grad_outputs[i] ? tt_retain(grad_outputs[i])
                                                         : ones_like_root(fn, outputs[i]);
            if (!roots_g[i])
                st = tt_errcode();
        }
    }
    tt_scope_resume();
    if (st) {
        for (int i = 0; i < nout; i++)
            tt_release(roots_g[i]);
        goto out;
    }
    st = run_engine(nout, outputs, roots_g, caps, nin, false);
    for (int i = 0; i < nin; i++) {
        if (!st && !caps[i].grad) {
            /* Unreached: zeros of the input's shape. */
            tt_scope_pause();
            out_meta m = {inputs[i]->ndim, {0}, (tt_dtype)inputs[i]->dtype,
                          inputs[i]->storage->fake};
            memcpy(m.sizes, inputs[i]->sizes, sizeof m.sizes);
            caps[i].grad = zeros_of(&m);
            tt_scope_resume();
            if (!caps[i].grad)
                st = tt_errcode();
        }
    }
    for (int i = 0; i < nin; i++) {
        /* Each gradient is a tensor of its own with one reference, which
         * the caller may release or leave to its scope, as any result. One
         * a scope holds already (one tensor for both inputs of an add, or
         * a grad_output handed back) is handed out as a new view of it: a
         * scope holds one reference per tensor, so the second would leak,
         * and dropping it would leave two results sharing one reference. */
        tt_tensor *g = caps[i].grad;
        if (!st && g && g->scope_slot >= 0) {
            tt_tensor *v = tt__make_view(g, g->ndim, g->sizes, g->strides, g->offset);
            if (v) { /* a tracer knows it as the value it views */
                v->mode_key = g->mode_key;
                v->mode_val = g->mode_val;
            }
            caps[i].grad = v;
            tt__unref(g);
            if (!caps[i].grad)
                st = tt_errcode();
        }
        if (st)
            tt_release(caps[i].grad);
        else if (tt__scope_add(caps[i].grad))
            grads_out[i] = caps[i].grad;
        else {
            st = tt_errcode();
            tt_release(caps[i].grad);
        }
    }
    if (st)
        for (int i = 0; i < nin; i++)
            grads_out[i] = tt_release(grads_out[i]);
out:
    tt__free(roots_g);
    tt__free(caps);
    return st;
}
