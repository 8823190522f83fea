/* Tensors and storages: lifecycle, scopes, queries, data access. */
#include "tensor_impl.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* ---------------------------------------------------------------- storage */

tt_storage *tt__storage_new(size_t nbytes, bool fake)
{
    tt_storage *s = tt__malloc(sizeof *s);
    if (!s)
        return NULL;
    memset(s, 0, sizeof *s);
    atomic_init(&s->refcnt, 1);
    atomic_init(&s->version, 0);
    s->nbytes = nbytes;
    s->fake = fake;
    if (!fake) {
        s->data = tt__alloc_storage(nbytes, &s->capacity);
        if (!s->data) {
            tt__free(s);
            return NULL;
        }
        s->from_cache = true;
    }
    tt__count_storage(1, fake ? 0 : (int64_t)nbytes);
    return s;
}

/* Whether the caller's reference to a count was the last one. When the
 * count is 1, no other thread holds a reference (it would count), so none
 * can take or drop one: knowing that needs a load, not the locked
 * decrement every other release pays (the load's acquire pairs with the
 * release of the decrements before it). */
static inline bool drop_last_ref(atomic_int_fast64_t *refcnt)
{
    return atomic_load_explicit(refcnt, memory_order_acquire) == 1 ||
           atomic_fetch_sub_explicit(refcnt, 1, memory_order_acq_rel) == 1;
}

void tt__storage_release(tt_storage *s)
{
    if (!s || !drop_last_ref(&s->refcnt))
        return;
    if (s->from_cache)
        tt__free_storage(s->data, s->capacity);
    else if (s->release)
        s->release(s->data, s->release_ctx);
    tt__count_storage(-1, s->from_cache ? (int64_t)s->nbytes : 0);
    tt__free(s);
}

/* ---------------------------------------------------------------- scopes */

/* One stack of slots per thread; each open scope remembers where its slots
 * start. Releasing a scoped tensor clears its slot; keeping it sets a flag
 * that tt_scope_end reads. Scopes nest up to MAX_SCOPE_DEPTH; deeper ones
 * merge into the deepest (their tensors are released a little later). */
#define MAX_SCOPE_DEPTH 256

typedef struct {
    tt_tensor **slots;
    int32_t n, cap;
    int32_t depth;
    int32_t starts[MAX_SCOPE_DEPTH];
} scope_stack;

static _Thread_local scope_stack scopes;

/* Suspension hides the scopes open at that moment, so the temporaries of a
 * kernel or of the autograd engine do not land in the caller's scope.
 * Scopes opened after it (by a kernel or a backward rule) collect as usual,
 * and what they keep goes to their opener, not into a hidden scope. */
#define MAX_SUSPEND 64
static _Thread_local int32_t scope_floor; /* depths <= floor are hidden */
static _Thread_local int32_t saved_floors[MAX_SUSPEND];
static _Thread_local int nsuspend;

void tt_scope_pause(void)
{
    if (nsuspend < MAX_SUSPEND)
        saved_floors[nsuspend] = scope_floor;
    nsuspend++;
    scope_floor = scopes.depth;
}

void tt_scope_resume(void)
{
    if (nsuspend == 0)
        return;
    nsuspend--;
    /* Deeper than MAX_SUSPEND the floor stays high: scopes stay hidden
     * (tensors go to their creators), never released early. */
    if (nsuspend < MAX_SUSPEND)
        scope_floor = saved_floors[nsuspend];
}


tt_status tt_scope_adopt(tt_tensor *t)
{
    if (!t)
        return TT_OK;
    if (tt__is_released(t))
        return tt__released_error("tt_scope_adopt", "t");
    return tt__scope_add(t) ? TT_OK : tt_errcode();
}

void tt_scope_begin(void)
{
    if (scopes.depth < MAX_SCOPE_DEPTH)
        scopes.starts[scopes.depth] = scopes.n;
    scopes.depth++;
}

bool tt__scope_add(tt_tensor *t)
{
    if (scopes.depth <= scope_floor || t->scope_slot >= 0)
        return true;
    if (scopes.n == scopes.cap) {
        int32_t nc = scopes.cap ? scopes.cap * 2 : 64;
        tt_tensor **ns = tt__realloc(scopes.slots,
                                     (size_t)scopes.cap * sizeof *ns,
                                     (size_t)nc * sizeof *ns);
        if (!ns)
            return false;
        scopes.slots = ns;
        scopes.cap = nc;
    }
    t->scope_slot = scopes.n;
    scopes.slots[scopes.n++] = t;
    return true;
}

tt_status tt_scope_end(void)
{
    /* Unbalanced, or a hidden scope (paused): not this code's to end. */
    if (scopes.depth <= scope_floor)
        return tt_error(TT_EINVAL, "tt_scope_end: no scope is open%s on this thread: a "
                                   "tt_scope_end without its tt_scope_begin",
                        scopes.depth > 0 ? " since tt_scope_pause" : "");
    scopes.depth--;
    if (scopes.depth >= MAX_SCOPE_DEPTH)
        return TT_OK; /* a merged scope: its tensors go with the deepest one */
    int32_t start = scopes.starts[scopes.depth], kept = start;
    for (int32_t i = start; i < scopes.n; i++) {
        tt_tensor *t = scopes.slots[i];
        if (!t)
            continue;
        if (t->flags & TT_TF_KEPT) {
            /* Kept: into the enclosing scope, or to the caller. */
            t->flags &= (uint16_t)~TT_TF_KEPT;
            if (scopes.depth > scope_floor) {
                t->scope_slot = kept;
                scopes.slots[kept++] = t;
            } else {
                t->scope_slot = -1;
            }
            continue;
        }
        scopes.slots[i] = NULL;
        t->scope_slot = -1;
        tt__unref(t);
    }
    scopes.n = kept;
    if (scopes.depth == 0) {
        tt__free(scopes.slots);
        scopes.slots = NULL;
        scopes.n = scopes.cap = 0;
    }
    return TT_OK;
}

tt_tensor *tt_keep(tt_tensor *t)
{
    if (t && tt__is_released(t)) {
        tt__released_error("tt_keep", "t");
        return NULL;
    }
    if (t && t->scope_slot >= 0)
        t->flags |= TT_TF_KEPT;
    return t;
}

static void scope_remove(tt_tensor *t)
{
    int32_t s = t->scope_slot;
    if (s >= 0 && s < scopes.n && scopes.slots[s] == t)
        scopes.slots[s] = NULL;
    t->scope_slot = -1;
    t->flags &= (uint16_t)~TT_TF_KEPT;
}

/* ---------------------------------------------------------------- tensors */

void tt__refresh_flags(tt_tensor *t)
{
    bool sym = tt_size_is_sym(t->offset);
    for (int i = 0; i < t->ndim; i++)
        sym = sym || tt_size_is_sym(t->sizes[i]) || tt_size_is_sym(t->strides[i]);
    t->flags &= (uint16_t)~(TT_TF_HAS_SYM | TT_TF_CONTIGUOUS);
    if (sym) {
        t->flags |= TT_TF_HAS_SYM;
        /* Contiguity of symbolic shapes: the strides must be exactly the
         * contiguous expressions (hash-consing makes that a comparison). */
    }
    tt_size expect = 1;
    bool contig = true;
    for (int i = 0; i < t->ndim; i++)
        if (t->sizes[i] == 0) {
            t->flags |= TT_TF_CONTIGUOUS; /* PyTorch: no elements, any strides */
            return;
        }
    for (int i = t->ndim - 1; i >= 0; i--) {
        if (t->sizes[i] == 1)
            continue; /* any stride is fine for a size-1 dim, as PyTorch */
        if (t->strides[i] != expect) {
            contig = false;
            break;
        }
        expect = sym ? tt__sym_mul_find(expect, t->sizes[i]) /* allocates nothing */
                     : expect * t->sizes[i];
    }
    if (contig)
        t->flags |= TT_TF_CONTIGUOUS;
}

tt_tensor *tt__tensor_new(tt_storage *s, tt_dtype dt, int ndim,
                          const tt_size *sizes, const tt_size *strides,
                          tt_size offset)
{
    tt_tensor *t = tt__malloc(sizeof *t);
    if (!t)
        return NULL;
    memset(t, 0, sizeof *t);
    atomic_init(&t->refcnt, 1);
    atomic_fetch_add(&s->refcnt, 1);
    t->storage = s;
    t->dtype = (uint8_t)dt;
    t->ndim = (int8_t)ndim;
    t->offset = offset;
    t->scope_slot = -1;
    for (int i = 0; i < ndim; i++) {
        t->sizes[i] = sizes[i];
        t->strides[i] = strides[i];
    }
    tt__refresh_flags(t);
    tt__count_tensor(1);
    if (!tt__scope_add(t)) {
        tt__unref(t);
        return NULL;
    }
    return t;
}

tt_tensor *tt__make_view(const tt_tensor *t, int ndim, const tt_size *sizes,
                         const tt_size *strides, tt_size offset)
{
    return tt__tensor_new(t->storage, (tt_dtype)t->dtype, ndim, sizes, strides,
                          offset);
}


tt_tensor *tt_retain(tt_tensor *t)
{
    if (t && tt__is_released(t)) {
        /* A reference to freed memory is no reference: NULL, so the
         * caller's next call reports this cause (the first cause wins). */
        tt__released_error("tt_retain", "t");
        return NULL;
    }
    if (t)
        atomic_fetch_add(&t->refcnt, 1);
    return t;
}

/* What a released tensor's storage pointer points at: an empty fake
 * storage that is never freed, so a stray read of a released tensor's
 * metadata (in code that did not check) finds no bytes instead of freed
 * memory. */
static tt_storage released_storage = {.refcnt = INT64_MAX / 2, .fake = true};

tt_status tt__released_error(const char *fn, const char *arg)
{
    char what[256];
    snprintf(what, sizeof what, "%s: argument '%s'", fn, arg);
    return tt__released_error_at(what, strcmp(fn, "tt_release") == 0);
}

tt_status tt__released_error_at(const char *what, bool release)
{
    if (release)
        return tt_error(TT_EINVAL, "%s was already released: a double release (it was not "
                                   "freed again; a tensor made inside a scope is released by "
                                   "tt_scope_end, release it yourself only after tt_keep or "
                                   "tt_retain)", what);
    return tt_error(TT_EINVAL, "%s was already released (tt_release or tt_scope_end dropped "
                               "its last reference): a use after release", what);
}

_Atomic(tt__data_read_fn) tt__data_read_hook;
_Atomic(tt__autograd_free_fn) tt__autograd_meta_free_hook;

void tt__unref(tt_tensor *t)
{
    if (!t)
        return;
    if (tt__is_released(t)) {
        tt__released_error("tt_release", "t"); /* never freed twice */
        return;
    }
    if (!drop_last_ref(&t->refcnt))
        return;
    scope_remove(t);
    if (t->autograd)
        atomic_load_explicit(&tt__autograd_meta_free_hook, memory_order_relaxed)(t->autograd);
    t->autograd = NULL;
    tt__storage_release(t->storage);
    /* Poisoned (tensor_impl.h): every entry point refuses it from now on,
     * while the quarantine keeps the struct from being reused. */
    t->storage = &released_storage;
    atomic_store_explicit(&t->refcnt, TT_REFCNT_RELEASED, memory_order_relaxed);
    tt__count_tensor(-1);
    tt__quarantine_tensor(t);
}

tt_tensor *tt_release(tt_tensor *t)
{
    /* A decrement. It never gives up a scope's reference early: a
     * balanced retain/release pair on a scoped tensor (common in kernels,
     * e.g. releasing what tt_contiguous returned) must leave it scoped.
     * The release of the last reference that is not the library's own
     * hold is the scope's: t leaves its scope, which would otherwise
     * release it a second time. Without holds that is the last reference
     * (freed here); with them (a tracer's graph holds every value it
     * recorded) the same user code leaves t to the holds, as in eager.
     * A released t (a double release) is not freed again: the error says
     * so, the result stays NULL as for any release, and every later call
     * given t reports it too. */
    if (t && t->scope_slot >= 0 && !tt__is_released(t) &&
        atomic_load_explicit(&t->refcnt, memory_order_acquire) -
                atomic_load_explicit(&t->held, memory_order_relaxed) ==
            1)
        scope_remove(t);
    tt__unref(t);
    return NULL;
}

void tt__hold(tt_tensor *t)
{
    if (!t)
        return;
    atomic_fetch_add_explicit(&t->refcnt, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&t->held, 1, memory_order_relaxed);
}

void tt__hold_own(tt_tensor *t)
{
    if (t)
        atomic_fetch_add_explicit(&t->held, 1, memory_order_relaxed);
}

void tt__unhold(tt_tensor *t)
{
    if (!t || tt__is_released(t)) {
        tt__unref(t);
        return;
    }
    atomic_fetch_sub_explicit(&t->held, 1, memory_order_relaxed);
    tt__unref(t);
}

/* ---------------------------------------------------------------- queries */

int tt__wrap_dim(const char *fn, int dim, int ndim)
{
    int n = ndim > 0 ? ndim : 1; /* a 0-dim tensor accepts dims 0 and -1 */
    if (dim < -n || dim >= n) {
        tt_error(TT_EINVAL,
                 "%s: dimension out of range (expected to be in range of "
                 "[%d, %d], but got %d)", fn, -n, n - 1, dim);
        return -1;
    }
    return dim < 0 ? dim + n : dim;
}

/* The accessors that cannot return an error answer for a released tensor
 * as for NULL, with the error set: `ok(t, fn)` is false for both. */
static inline bool ok(const tt_tensor *t, const char *fn)
{
    if (!t)
        return false;
    if (tt__is_released(t)) {
        tt__released_error(fn, "t");
        return false;
    }
    return true;
}

int tt_ndim(const tt_tensor *t) { return ok(t, "tt_ndim") ? t->ndim : 0; }
tt_dtype tt_dtype_of(const tt_tensor *t)
{
    return ok(t, "tt_dtype_of") ? (tt_dtype)t->dtype : TT_F32;
}
const tt_size *tt_sizes(const tt_tensor *t) { return ok(t, "tt_sizes") ? t->sizes : NULL; }
const tt_size *tt_strides(const tt_tensor *t) { return ok(t, "tt_strides") ? t->strides : NULL; }
tt_size tt_storage_offset(const tt_tensor *t)
{
    return ok(t, "tt_storage_offset") ? t->offset : 0;
}
size_t tt_storage_nbytes(const tt_tensor *t)
{
    return ok(t, "tt_storage_nbytes") ? t->storage->nbytes : 0;
}
bool tt_is_contiguous(const tt_tensor *t)
{
    return ok(t, "tt_is_contiguous") && (t->flags & TT_TF_CONTIGUOUS);
}
bool tt_is_fake(const tt_tensor *t) { return ok(t, "tt_is_fake") && t->storage->fake; }
bool tt_has_sym_sizes(const tt_tensor *t)
{
    return ok(t, "tt_has_sym_sizes") && (t->flags & TT_TF_HAS_SYM);
}

static tt_size dim_query(const tt_tensor *t, int dim, const char *fn, bool stride)
{
    if (TT_CHECK_TENSOR(fn, "self", t))
        return -1;
    int d = tt__wrap_dim(fn, dim, t->ndim);
    if (d < 0)
        return -1;
    if (t->ndim == 0)
        return stride ? 1 : 1; /* PyTorch: size/stride of a scalar's dim */
    return stride ? t->strides[d] : t->sizes[d];
}

tt_size tt_dim_size(const tt_tensor *t, int dim)
{
    if (t && !tt__is_released(t) && t->ndim == 0)
        return tt_error(TT_EINVAL, "tt_dim_size: a 0-dim tensor has no "
                                   "dimension %d", dim), -1;
    return dim_query(t, dim, "tt_dim_size", false);
}

tt_size tt_dim_stride(const tt_tensor *t, int dim)
{
    if (t && !tt__is_released(t) && t->ndim == 0)
        return tt_error(TT_EINVAL, "tt_dim_stride: a 0-dim tensor has no "
                                   "dimension %d", dim), -1;
    return dim_query(t, dim, "tt_dim_stride", true);
}

tt_size tt_numel(const tt_tensor *t)
{
    if (!ok(t, "tt_numel"))
        return 0;
    for (int i = 0; i < t->ndim; i++)
        if (t->sizes[i] == 0)
            return 0; /* before any product, which may overflow */
    if (!(t->flags & TT_TF_HAS_SYM))
        return tt__numel_concrete(t);
    tt_size n = 1;
    for (int i = 0; i < t->ndim; i++)
        n = tt_sym_mul(n, t->sizes[i]);
    return n;
}

bool tt_same_storage(const tt_tensor *a, const tt_tensor *b)
{
    return ok(a, "tt_same_storage") && ok(b, "tt_same_storage") && a->storage == b->storage;
}

uint64_t tt_version(const tt_tensor *t)
{
    return ok(t, "tt_version") ? atomic_load(&t->storage->version) : 0;
}

void tt_bump_version(tt_tensor *t)
{
    if (ok(t, "tt_bump_version"))
        atomic_fetch_add(&t->storage->version, 1);
}

char *tt_size_list_str(int n, const tt_size *v, bool tuple, char *buf, size_t cap)
{
    size_t len = 0;
    if (!cap)
        return buf;
    buf[0] = '\0';
    len += (size_t)snprintf(buf, cap, tuple ? "(" : "[");
    for (int i = 0; i < n && len < cap; i++) {
        char one[64];
        tt_size_str(v[i], one, sizeof one);
        len += (size_t)snprintf(buf + len, cap - len, "%s%s", i ? ", " : "", one);
    }
    if (len < cap)
        snprintf(buf + len, cap - len, !tuple ? "]" : n == 1 ? ",)" : ")");
    return buf;
}

/* These read only the struct's own sizes, so they take a released tensor
 * (held in quarantine, its sizes intact) and the library's stack-made
 * shapes, whose count is 0, alike. */
char *tt_shape_str(const tt_tensor *t, char *buf, size_t n)
{
    return tt_size_list_str(t ? t->ndim : 0, t ? t->sizes : NULL, false, buf, n);
}

char *tt_strides_str(const tt_tensor *t, char *buf, size_t n)
{
    return tt_size_list_str(t ? t->ndim : 0, t ? t->strides : NULL, false, buf, n);
}

char *tt_describe(const tt_tensor *t, char *buf, size_t n)
{
    if (!t) {
        snprintf(buf, n, "NULL");
        return buf;
    }
    if (tt__is_released(t)) {
        /* Error messages describe their arguments: no error set here, the
         * caller's says what went wrong. */
        snprintf(buf, n, "a released tensor");
        return buf;
    }
    char shape[256];
    snprintf(buf, n, "%s%s%s", t->storage->fake ? "fake " : "",
             tt_dtype_name((tt_dtype)t->dtype), tt_shape_str(t, shape, sizeof shape));
    return buf;
}

/* ----------------------------------------------------------- data access */

/* The common gate of every data read: not NULL, not fake, and (under a
 * tracing mode) not a graph break. *data receives the bytes to read: the
 * tensor's own, or for a fake tensor under a tracing mode the mode's
 * stand-in memory. A graph break (TT_EGRAPHBREAK) still comes with
 * readable bytes, so C code that reads without checking does not crash
 * inside a trace; any other failure leaves *data NULL. */
static tt_status check_readable(const tt_tensor *t, const char *what,
                                tt_srcloc loc, char **data)
{
    *data = NULL;
    if (!t)
        return tt_error(TT_EINVAL, "%s: argument 'self' expects a tensor, got NULL",
                        what);
    if (tt__is_released(t))
        return tt__released_error(what, "self");
    tt_status st = TT_OK;
    void *stand_in = NULL;
    tt__data_read_fn hook = atomic_load_explicit(&tt__data_read_hook, memory_order_relaxed);
    if (hook) {
        st = hook(t, what, loc, &stand_in);
        if (st && st != TT_EGRAPHBREAK)
            return st;
    }
    if (t->storage->fake) {
        if (stand_in) {
            *data = stand_in;
            return st;
        }
        if (st)
            return st;
        char d[300];
        return tt_error(TT_EFAKE,
                        "%s: cannot access the data of %s: a fake "
                        "tensor has sizes, strides and dtype but no storage "
                        "(called from %s:%d in %s)",
                        what, tt_describe(t, d, sizeof d), loc.file, loc.line,
                        loc.func);
    }
    *data = tt__ptr(t);
    return st;
}

void *tt_data_at(const tt_tensor *t, tt_srcloc loc)
{
    char *data;
    check_readable(t, "tt_data", loc, &data);
    return data;
}

static tt_status element_offset(const tt_tensor *t, int n, const int64_t *idx,
                                const char *fn, int64_t *off)
{
    if (n != t->ndim)
        return tt_error(TT_EINVAL, "%s: expected %d indices for a %d-dim tensor, got %d",
                        fn, t->ndim, t->ndim, n);
    int64_t o = 0;
    for (int i = 0; i < n; i++) {
        int64_t k = idx[i] < 0 ? idx[i] + t->sizes[i] : idx[i];
        if (k < 0 || k >= t->sizes[i])
            return tt_error(TT_EINVAL,
                            "%s: index %lld is out of bounds for dimension %d "
                            "with size %lld", fn, (long long)idx[i], i,
                            (long long)t->sizes[i]);
        o += k * t->strides[i];
    }
    *off = o;
    return TT_OK;
}

tt_status tt_get_at(const tt_tensor *t, int n, const int64_t *idx, double *out,
                    tt_srcloc loc)
{
    if (!out)
        return tt_error(TT_EINVAL, "tt_get: argument 'out' is NULL");
    char *data;
    tt_status st = check_readable(t, "tt_get", loc, &data);
    int64_t off;
    if (!data)
        return st;
    /* At a graph break the value is still read (real, or the stand-in's
     * zero), so code that ignores the status sees a defined number. */
    tt_status bad = element_offset(t, n, idx, "tt_get", &off);
    if (bad)
        return bad;
    *out = tt__load(data + off * (int64_t)tt_dtype_size((tt_dtype)t->dtype),
                    (tt_dtype)t->dtype);
    return st;
}

tt_status tt_set_at(tt_tensor *t, int n, const int64_t *idx, double value,
                    tt_srcloc loc)
{
    char *data;
    tt_status st = check_readable(t, "tt_set", loc, &data);
    int64_t off;
    if (st || (st = element_offset(t, n, idx, "tt_set", &off)))
        return st;
    tt__store(data + off * (int64_t)tt_dtype_size((tt_dtype)t->dtype),
              (tt_dtype)t->dtype, value);
    tt_bump_version(t);
    return TT_OK;
}

tt_status tt_item_at(const tt_tensor *t, double *out, tt_srcloc loc)
{
    if (!out)
        return tt_error(TT_EINVAL, "tt_item: argument 'out' is NULL");
    char *data;
    tt_status st = check_readable(t, "tt_item", loc, &data);
    if (!data)
        return st;
    if (tt_numel(t) != 1) {
        char d[300];
        return tt_error(TT_EINVAL, "tt_item: a tensor with %lld elements cannot "
                                   "be converted to a number (%s)",
                        (long long)tt_numel(t), tt_describe(t, d, sizeof d));
    }
    *out = tt__load(data, (tt_dtype)t->dtype); /* at a break too (see tt_get) */
    return st;
}

typedef struct {
    char *dst;
    size_t elem;
} gather_ctx;

tt_status tt_to_buffer_at(const tt_tensor *t, void *dst, size_t nbytes,
                          tt_srcloc loc)
{
    char *data;
    tt_status st = check_readable(t, "tt_to_buffer", loc, &data);
    if (!data)
        return st;
    size_t need = (size_t)tt_numel(t) * tt_dtype_size((tt_dtype)t->dtype);
    if (nbytes != need) {
        char d[300];
        return tt_error(TT_EINVAL, "tt_to_buffer: argument 'nbytes' expects %zu "
                                   "bytes for %s, got %zu", need,
                        tt_describe(t, d, sizeof d), nbytes);
    }
    if (need == 0)
        return st;
    if (!dst)
        return tt_error(TT_EINVAL, "tt_to_buffer: argument 'dst' is NULL for %zu bytes", need);
    if (t->storage->fake) { /* a break: the stand-in's zeros */
        memset(dst, 0, need);
        return st;
    }
    /* Copy through a contiguous tensor wrapping dst. */
    tt_tensor *out = tt_from_buffer(t->ndim, t->sizes, NULL, (tt_dtype)t->dtype,
                                    dst, nbytes, NULL, NULL);
    if (!out)
        return tt_errcode();
    tt_status cst = tt__copy_raw(out, t);
    tt__unref(out);
    return cst ? cst : st;
}

/* ---------------------------------------------------------------- print */

void tt_print(const tt_tensor *t)
{
    char d[300];
    if (t && tt__is_released(t)) {
        tt__released_error("tt_print", "t");
        printf("tensor(released)\n");
        return;
    }
    if (!t || t->storage->fake || (t->flags & TT_TF_HAS_SYM)) {
        printf("tensor(%s)\n", tt_describe(t, d, sizeof d));
        return;
    }
    int64_t n = tt_numel(t), shown = n < 64 ? n : 64;
    printf("tensor(%s, [", tt_describe(t, d, sizeof d));
    int64_t idx[TT_MAX_DIMS] = {0};
    for (int64_t k = 0; k < shown; k++) {
        int64_t off = 0;
        for (int i = 0; i < t->ndim; i++)
            off += idx[i] * t->strides[i];
        double v = tt__load(tt__ptr(t) + off * (int64_t)tt_dtype_size((tt_dtype)t->dtype),
                            (tt_dtype)t->dtype);
        printf(k ? ", %g" : "%g", v);
        for (int i = t->ndim - 1; i >= 0; i--) {
            if (++idx[i] < t->sizes[i])
                break;
            idx[i] = 0;
        }
    }
    printf(n > shown ? ", ...])\n" : "])\n");
}
