/* The dispatcher: binds a call's arguments to the schema, then runs it
 * through the active mode, autograd, and the fake or device kernel. */
#include "dispatch_impl.h"
#include "contract_impl.h"

#include <stdio.h>
#include <string.h>

#define MAX_MODES 16

/* Modes stack per thread. `level` modes (from the bottom) are switched on;
 * a mode's handler runs with itself and those above it switched off. */
static _Thread_local struct {
    tt_mode *stack[MAX_MODES];
    int n, level;
} modes;
/* Depth of tt_op_call on this thread: only the outermost call hands its
 * results to the caller's scope. */
static _Thread_local int call_depth;
/* Fake mode (PyTorch's FakeTensorMode): every op runs its fake kernel and
 * factories make fake tensors, whatever the inputs. */
static _Thread_local int fake_mode;
/* The mode told of data reads inside a fake kernel. Kernels run with the
 * modes switched off, but a fake kernel that reads data under a tracer is
 * the tracer's business (a graph break, as dynamo makes one of
 * FakeTensor's data-dependent errors), not a bare TT_EFAKE: the innermost
 * pushed mode hears of it while a fake kernel runs. */
static _Thread_local tt_mode *fake_kernel_reader;
/* Kernels running on this thread, one inside another. */
#define MAX_KERNEL_DEPTH 200
static _Thread_local int kernel_depth;

void tt_fake_mode_begin(void) { fake_mode++; }
tt_status tt_fake_mode_end(void)
{
    if (fake_mode == 0)
        return tt_error(TT_EINVAL, "tt_fake_mode_end: fake mode is off on this thread: a "
                                   "tt_fake_mode_end without its tt_fake_mode_begin");
    fake_mode--;
    return TT_OK;
}
bool tt_fake_mode_enabled(void) { return fake_mode > 0; }

/* Skipping the dispatcher: one rule, three entry points.
 *
 * A call must go through its op when (1) a mode is on (it records the
 * call), (2) fake mode is on (the op's fake kernel runs), (3) an IMPL
 * library overrides a built-in (the op picks the kernel), or (4) autograd
 * would record it (grad on, an input requires grad). A released input
 * goes through too: the op's argument check reports it. Inside kernels
 * and backward (tt__autograd_off), where modes are switched off, (3) and
 * (4) do not count, and tt__needs_dispatch ignores (2) too: a kernel (a
 * fake one included) built on the runtime's views must not call back into
 * its own op; a factory inside a fake kernel still makes a fake tensor.
 * The entry points differ only in what their direct path can do:
 *   tt_dispatch_is_trivial (the typed wrappers' fast path, with
 *     tt__fast_path's per-built-in override check): the direct path is
 *     the real kernel, so any fake input, not only fake mode, dispatches;
 *   tt__needs_dispatch (the public views and copies, ops/view_front.c,
 *     over the runtime's tt__view_raw & co.): the direct path
 *     handles fake tensors itself, so fake inputs stay direct, and an
 *     override only matters for real inputs (fake ones run the fake
 *     kernel whatever overrides the real one);
 *   tt__factory_needs_dispatch (the factories, ops/factory_front.c): no
 *     inputs; (4) never holds.
 * All three dispatch in fake mode outside kernels (test_modes.c's
 * test_fake_mode_front_doors_agree). */
bool tt__factory_needs_dispatch(void)
{
    /* Outside kernels, an overridden built-in is found by its op. */
    return modes.level > 0 || fake_mode > 0 ||
           (atomic_load_explicit(&tt__builtin_overrides, memory_order_relaxed) &&
            !tt__autograd_off);
}

/* ------------------------------------------------------- argument binding */

/* A list's length against a sized list type T[N]. PyTorch's arg parser
 * hands a list of any length to the kernel; we hold T[N] to N values, so a
 * kernel reading int[4] gets 4, with PyTorch's two idioms: `int[1]` is
 * how aten spells "one dim or several" (sum, var, amax take any number),
 * and the empty list binds where the schema's own default is the empty
 * list, its "unset" (max_pool2d's `int[2] stride=[]`: as kernel_size). */
static bool list_len_ok(const tt_arg *a, int n)
{
    int want = a->type.list_size;
    if (want == 0 || want == 1 || n == want)
        return true;
    return n == 0 && a->has_default && a->default_value.kind != TT_V_NONE &&
           a->default_value.n == 0;
}

/* A single number for a sized list: PyTorch repeats it N times
 * (max_pool2d(x, 2) is kernel_size [2, 2]). Int lists take an int, float
 * lists an int or a float. */
static bool broadcasts(const tt_type *ty, const tt_value *v)
{
    if (!ty->is_list || ty->list_size == 0)
        return false;
    switch (ty->base) {
    case TT_T_INT:
    case TT_T_SYMINT: return v->kind == TT_V_INT;
    case TT_T_FLOAT: return v->kind == TT_V_INT || v->kind == TT_V_FLOAT;
    default: return false;
    }
}

static bool value_fits(const tt_arg *a, const tt_value *v)
{
    const tt_type *ty = &a->type;
    if (v->kind == TT_V_NONE)
        return ty->optional;
    if (ty->is_list) {
        switch (ty->base) {
        case TT_T_TENSOR:
            if (v->kind != TT_V_TENSORS || (v->n > 0 && !v->u.tensors))
                return false;
            for (int i = 0; i < v->n; i++)
                if ((!v->u.tensors[i] && !ty->elem_optional) ||
                    (v->u.tensors[i] && tt__is_released(v->u.tensors[i])))
                    return false;
            return true;
        case TT_T_INT:
        case TT_T_SYMINT:
            return v->kind == TT_V_INTS && list_len_ok(a, v->n) && (v->n == 0 || v->u.ints);
        case TT_T_FLOAT:
        case TT_T_SCALAR:
            return v->kind == TT_V_FLOATS && list_len_ok(a, v->n) &&
                   (v->n == 0 || v->u.floats);
        case TT_T_BOOL:
            return v->kind == TT_V_BOOLS && list_len_ok(a, v->n) && (v->n == 0 || v->u.bools);
        default:
            return false;
        }
    }
    switch (ty->base) {
    case TT_T_TENSOR:
        return v->kind == TT_V_TENSOR && (v->u.t ? !tt__is_released(v->u.t) : ty->optional);
    case TT_T_INT:
    case TT_T_SYMINT: return v->kind == TT_V_INT;
    case TT_T_FLOAT: return v->kind == TT_V_FLOAT || v->kind == TT_V_INT;
    case TT_T_BOOL: return v->kind == TT_V_BOOL;
    case TT_T_STR: return v->kind == TT_V_STR && v->u.s;
    case TT_T_SCALAR:
        return v->kind == TT_V_INT || v->kind == TT_V_FLOAT || v->kind == TT_V_BOOL;
    case TT_T_SCALARTYPE:
        return v->kind == TT_V_DTYPE && (unsigned)v->u.dtype < TT_DTYPE_COUNT;
    case TT_T_DEVICE:
        return v->kind == TT_V_DEVICE && (unsigned)v->u.device < TT_DEVICE_COUNT;
    case TT_T_LAYOUT: return v->kind == TT_V_INT && v->u.i == 0; /* strided */
    case TT_T_MEMORY_FORMAT: return v->kind == TT_V_INT && v->u.i >= 0 && v->u.i <= 3;
    }
    return false;
}

/* "a use after release" naming argument i of op (and the list element)
 * when v holds a released tensor; TT_OK when it holds none. */
static tt_status released_arg_error(const tt_opdef *op, int i, const tt_value *v)
{
    const tt_arg *a = tt_schema_arg(op->schema, i);
    char what[256];
    if (v->kind == TT_V_TENSOR && v->u.t && tt__is_released(v->u.t)) {
        snprintf(what, sizeof what, "%s: argument '%s' (#%d)", op->name, a->name, i + 1);
        return tt__released_error_at(what, false);
    }
    if (v->kind == TT_V_TENSORS)
        for (int j = 0; j < v->n && v->u.tensors; j++)
            if (v->u.tensors[j] && tt__is_released(v->u.tensors[j])) {
                snprintf(what, sizeof what, "%s: argument '%s' (#%d) element %d", op->name,
                         a->name, i + 1, j);
                return tt__released_error_at(what, false);
            }
    return TT_OK;
}

static tt_status arg_error(const tt_opdef *op, int i, const tt_value *v)
{
    const tt_arg *a = tt_schema_arg(op->schema, i);
    char want[64], got[128];
    tt_type_str(&a->type, want, sizeof want);
    if (v->kind == TT_V_TENSOR && !v->u.t)
        return tt__null_arg_error("%s: argument '%s' (#%d) expects %s, got NULL", op->name,
                                  a->name, i + 1, want);
    tt_status st = released_arg_error(op, i, v);
    if (st)
        return st;
    tt_value_describe(v, got, sizeof got);
    return tt_error(TT_EINVAL, "%s: argument '%s' (#%d) expects %s, got %s", op->name,
                    a->name, i + 1, want, got);
}

void *tt__bind_room(tt__bind_scratch *sc, size_t bytes)
{
    bytes = (bytes + 7) & ~(size_t)7;
    if (sc->used + bytes <= sizeof sc->room) {
        void *r = sc->room + sc->used;
        sc->used += bytes;
        return r;
    }
    if (sc->nheap == TT_MAX_ARGS)
        return NULL;
    void *r = tt__malloc(bytes);
    if (r)
        sc->heap[sc->nheap++] = r;
    return r;
}

void tt__bind_scratch_free(tt__bind_scratch *sc)
{
    for (int i = 0; i < sc->nheap; i++)
        tt__free(sc->heap[i]);
    sc->nheap = 0;
    sc->used = 0;
}

/* The scalar v repeated as the list argument a. */
static tt_status broadcast(const tt_opdef *op, const tt_arg *a, const tt_value *v,
                           tt_value *out, tt__bind_scratch *sc)
{
    int n = a->type.list_size;
    if (a->type.base == TT_T_FLOAT) {
        double *d = tt__bind_room(sc, sizeof *d * (size_t)n);
        if (!d)
            return tt_error(TT_ENOMEM, "%s: out of memory repeating argument '%s'", op->name,
                            a->name);
        for (int k = 0; k < n; k++)
            d[k] = v->kind == TT_V_FLOAT ? v->u.f : (double)v->u.i;
        *out = tt_v_floats(n, d);
    } else {
        int64_t *d = tt__bind_room(sc, sizeof *d * (size_t)n);
        if (!d)
            return tt_error(TT_ENOMEM, "%s: out of memory repeating argument '%s'", op->name,
                            a->name);
        for (int k = 0; k < n; k++)
            d[k] = v->u.i;
        *out = tt_v_ints(n, d);
    }
    return TT_OK;
}

tt_status tt__bind_args(const tt_opdef *op, const tt_value *args, int nargs,
                        tt_value *full, tt__bind_scratch *sc)
{
    if (nargs < 0 || nargs > op->nargs)
        return tt_error(TT_EINVAL, "%s: expected at most %d argument%s, got %d",
                        op->name, op->nargs, op->nargs == 1 ? "" : "s", nargs);
    if (nargs > 0 && !args)
        return tt_error(TT_EINVAL, "%s: argument 'args' is NULL for %d arguments",
                        op->name, nargs);
    for (int i = 0; i < op->nargs; i++) {
        const tt_arg *a = tt_schema_arg(op->schema, i);
        if (i < nargs) {
            if (broadcasts(&a->type, &args[i])) {
                tt_status st = broadcast(op, a, &args[i], &full[i], sc);
                if (st)
                    return st;
                continue;
            }
            if (!value_fits(a, &args[i]))
                return arg_error(op, i, &args[i]);
            full[i] = args[i];
        } else if (a->has_default) {
            full[i] = a->default_value;
        } else {
            char want[64];
            tt_type_str(&a->type, want, sizeof want);
            return tt_error(TT_EINVAL, "%s: missing argument '%s' (#%d) of type %s",
                            op->name, a->name, i + 1, want);
        }
    }
    return TT_OK;
}

/* ---------------------------------------------------------------- helpers */

static void clear_outs(tt_value *outs, int n)
{
    for (int i = 0; i < n; i++)
        tt_value_clear(&outs[i]);
}

/* Calls fn on every tensor among the values (lists included). */
static bool any_tensor(const tt_value *v, int n, bool (*pred)(const tt_tensor *))
{
    for (int i = 0; i < n; i++) {
        if (v[i].kind == TT_V_TENSOR && v[i].u.t && pred(v[i].u.t))
            return true;
        if (v[i].kind == TT_V_TENSORS)
            for (int j = 0; j < v[i].n; j++)
                if (v[i].u.tensors[j] && pred(v[i].u.tensors[j]))
                    return true;
    }
    return false;
}

static bool is_fake_pred(const tt_tensor *t) { return tt_is_fake(t); }

static void registered_list(const tt_opdef *op, char *buf, size_t n)
{
    size_t len = 0;
    buf[0] = '\0';
    unsigned off = atomic_load(&op->disabled);
    for (int d = 0; d < TT_DEVICE_COUNT; d++)
        if (atomic_load(&op->kernels[d].fn))
            len += (size_t)snprintf(buf + len, n - len, "%s%s%s", len ? ", " : "",
                                    tt_device_name((tt_device)d),
                                    off >> d & 1 ? " (disabled)" : "");
    if (atomic_load(&op->default_kernel.fn) && len < n)
        len += (size_t)snprintf(buf + len, n - len, "%sdefault (all devices)", len ? ", " : "");
    if (atomic_load(&op->fake.fn) && len < n)
        len += (size_t)snprintf(buf + len, n - len, "%sfake", len ? ", " : "");
    if (atomic_load(&op->backward) && len < n)
        len += (size_t)snprintf(buf + len, n - len, "%sautograd", len ? ", " : "");
    if (len == 0)
        snprintf(buf, n, "nothing");
}

/* ---------------------------------------------------------------- backend */

static bool is_tensor_pred(const tt_tensor *t) { (void)t; return true; }

/* PyTorch's rule: the device of the tensor arguments (all cpu in this
 * build), or, when there are none, the op's Device argument. */
static tt_device call_device(const tt_opdef *op, const tt_value *args, int nargs)
{
    if (op->device_arg < 0 || op->device_arg >= nargs ||
        args[op->device_arg].kind != TT_V_DEVICE || any_tensor(args, nargs, is_tensor_pred))
        return TT_DEV_CPU;
    return args[op->device_arg].u.device;
}

tt_status tt__dispatch_backend(const tt_opdef *op, const tt_value *args, int nargs,
                               tt_value *outs, int nouts)
{
    bool fake = fake_mode > 0 || any_tensor(args, nargs, is_fake_pred);
    tt_device dev = call_device(op, args, nargs);
    fake |= dev == TT_DEV_META; /* a meta call runs the fake (meta) kernel */
    /* The device's kernel, else the default one; never another device's. */
    tt_kernel_fn k = fake ? atomic_load(&op->fake.fn) : atomic_load(&op->kernels[dev].fn);
    /* A disabled device kernel falls back to the default kernel, as
     * PyTorch's set_kernel_enabled falls back to the op's own function. */
    if (k && !fake && (atomic_load_explicit(&op->disabled, memory_order_relaxed) >> dev & 1))
        k = NULL;
    if (!k && !fake)
        k = atomic_load(&op->default_kernel.fn);
    if (!k && fake && op->mutated && op->nreturns == 0) {
        /* A mutable op that returns nothing has nothing for a fake kernel to
         * compute: PyTorch generates an empty one for it, and so do we. The
         * write is still a write (the version bump below). */
        for (int i = 0; i < nargs; i++)
            if (op->mutated >> i & 1 && args[i].kind == TT_V_TENSOR && args[i].u.t)
                tt_bump_version(args[i].u.t);
        return TT_OK;
    }
    if (!k) {
        char reg[256];
        registered_list(op, reg, sizeof reg);
        if (fake)
            return tt_error(TT_ENOKERNEL,
                            "%s: no fake kernel is registered, so the op cannot run "
                            "on fake tensors (registered: %s); register one with "
                            "tt_register_fake(lib, \"%s\", fn)", op->name, reg, op->name);
        return tt_error(TT_ENOKERNEL,
                        "%s: no kernel for device '%s' (registered: %s); register "
                        "one with tt_register_kernel(lib, \"%s\", \"%s\", fn)",
                        op->name, tt_device_name(dev), reg, op->name, tt_device_name(dev));
    }
    /* A kernel calling its own op (an override of a built-in calling the
     * built-in's wrapper) would recurse until the stack runs out. */
    if (kernel_depth >= MAX_KERNEL_DEPTH)
        return tt_error(TT_EINVAL, "%s: kernel calls nest %d deep; does a kernel call its "
                                   "own op (an override of a built-in calling the built-in's "
                                   "wrapper)?", op->name, MAX_KERNEL_DEPTH);
    tt_frame f = {op, args, nargs, outs, nouts, fake};
    for (int i = 0; i < nouts; i++)
        outs[i] = tt_v_none();
    /* A kernel is plain eager code: calls it makes are neither recorded by
     * a mode nor by autograd. */
    int saved_level = modes.level;
    tt_mode *saved_reader = fake_kernel_reader;
    modes.level = 0;
    fake_kernel_reader = fake && modes.n ? modes.stack[modes.n - 1] : NULL;
    tt__autograd_off++;
    kernel_depth++;
    uint64_t gen = tt__err_gen;
    tt_status st = !fake && !op->builtin && tt_checked_mode()
                       ? tt__checked_call(op, args, nargs, outs, nouts, k)
                       : k(&f);
    kernel_depth--;
    tt__autograd_off--;
    modes.level = saved_level;
    fake_kernel_reader = saved_reader;
    if (st == TT_OK) {
        for (int i = 0; i < op->nreturns; i++) {
            const tt_arg *r = tt_schema_return(op->schema, i);
            bool tensor = r->type.base == TT_T_TENSOR && !r->type.is_list && !r->type.optional;
            if (outs[i].kind == TT_V_NONE && (tensor || !r->type.optional)) {
                st = tt_error(TT_EINTERNAL, "%s: the %skernel returned no value for "
                                            "output %d", op->name, fake ? "fake " : "", i);
                break;
            }
        }
        /* PyTorch's custom_op wrapper refuses undeclared aliases at every
         * call; a storage compare per output and argument. Built-in
         * kernels keep their schemas by construction. */
        char why[1024];
        if (!st && (!op->builtin || (!fake && tt__builtin_overridden[op->builtin_id])) &&
            tt__alias_violation(op->schema, args, nargs, outs, nouts, why, sizeof why))
            st = tt_error(TT_ESCHEMA, "%s: %s%s", op->name, fake ? "fake kernel: " : "", why);
    } else if (tt__err_gen == gen) {
        tt_error(st, "%s: the %skernel failed (%s) without a message", op->name,
                 fake ? "fake " : "", tt_status_name(st));
    } else if (fake && tt_errcode() == TT_EFAKE) {
        char inner[1024];
        snprintf(inner, sizeof inner, "%s", tt_errmsg());
        tt_error(TT_EFAKE, "%s: the fake kernel read tensor data, but fake tensors "
                           "have none; a fake kernel may only use metadata (sizes, "
                           "strides, dtype) (%s)", op->name, inner);
    }
    if (st) {
        clear_outs(outs, nouts);
        return st;
    }
    /* In-place writes are visible to autograd's saved-tensor checks. */
    for (int i = 0; i < nargs; i++)
        if (op->mutated >> i & 1) {
            if (args[i].kind == TT_V_TENSOR && args[i].u.t)
                tt_bump_version(args[i].u.t);
            else if (args[i].kind == TT_V_TENSORS)
                for (int j = 0; j < args[i].n; j++)
                    tt_bump_version(args[i].u.tensors[j]);
        }
    return TT_OK;
}

tt_status tt__dispatch_below_modes(const tt_opdef *op, const tt_value *args,
                                   int nargs, tt_value *outs, int nouts)
{
    if (!tt__autograd_off && !tt__grad_disabled && tt__autograd_wants(op, args, nargs))
        return tt__autograd_call(op, args, nargs, outs, nouts);
    return tt__dispatch_backend(op, args, nargs, outs, nouts);
}

/* The mode level a call entered at, while its mode handlers and what runs
 * below them (autograd) run; 0 outside any handler. */
static _Thread_local int handler_entry_level;

static tt_status dispatch_from_modes(const tt_opdef *op, const tt_value *args,
                                     int nargs, tt_value *outs, int nouts)
{
    if (modes.level == 0)
        return tt__dispatch_below_modes(op, args, nargs, outs, nouts);
    int saved = modes.level, saved_entry = handler_entry_level;
    if (!handler_entry_level)
        handler_entry_level = saved;
    tt_mode *m = modes.stack[--modes.level];
    for (int i = 0; i < nouts; i++)
        outs[i] = tt_v_none();
    tt_status st = m->call(m, op->handle, args, nargs, outs, nouts);
    modes.level = saved;
    handler_entry_level = saved_entry;
    if (st)
        clear_outs(outs, nouts);
    return st;
}

/* ------------------------------------------------------------- calling */

/* The checks of a call of a pinned definition. */
static tt_status check_call(const tt_opdef *op, tt_value *outs, int nouts)
{
    if (nouts != op->nreturns || (nouts > 0 && !outs))
        return tt_error(TT_EINVAL, "%s: returns %d value%s, but 'outs' has room for %d",
                        op->name, op->nreturns, op->nreturns == 1 ? "" : "s",
                        outs ? nouts : 0);
    return TT_OK;
}

/* Pins the definition a call through handle h runs: NULL with the error
 * for a NULL handle or an op whose library was freed. A built-in is never
 * freed, so its calls pin nothing and pay one load. */
static inline const tt_opdef *pin_for_call(const tt_op *h)
{
    if (!h) {
        tt_error(TT_EINVAL, "tt_op_call: argument 'op' is NULL");
        return NULL;
    }
    if (h->builtin)
        return atomic_load_explicit(&((tt_op *)h)->def, memory_order_acquire);
    return tt__op_pin(h);
}

static inline void unpin(const tt_opdef *op)
{
    if (!op->builtin)
        tt__op_unpin(op);
}

static bool is_argument(const tt_tensor *t, const tt_value *args, int nargs)
{
    for (int i = 0; i < nargs; i++) {
        if (args[i].kind == TT_V_TENSOR && args[i].u.t == t)
            return true;
        if (args[i].kind == TT_V_TENSORS)
            for (int j = 0; j < args[i].n; j++)
                if (args[i].u.tensors[j] == t)
                    return true;
    }
    return false;
}

/* Hands new results to the caller's scope. A result that is one of the
 * arguments (an in-place or out= op returning what it wrote) is not new:
 * the caller already owns it, inside the scope or not, and the returned
 * reference is an extra one the caller drops; the scope taking it would
 * release the caller's tensor at its end. */
tt_status tt_op_call_unchecked(const tt_op *h, const tt_value *args, int nargs,
                               tt_value *outs, int nouts)
{
    const tt_opdef *op = pin_for_call(h);
    if (!op)
        return tt_errcode();
    tt_status st = check_call(op, outs, nouts);
    if (!st && nargs != op->nargs)
        st = tt_error(TT_EINVAL, "%s: tt_op_call_unchecked needs all %d arguments, got %d",
                      op->name, op->nargs, nargs);
    /* Unchecked skips binding, not the one check that keeps a released
     * tensor from reaching a kernel (a load per tensor argument). */
    for (int i = 0; !st && i < nargs; i++)
        st = released_arg_error(op, i, &args[i]);
    if (!st)
        st = tt__dispatch_backend(op, args, nargs, outs, nouts);
    unpin(op);
    return st;
}

static tt_status adopt_outputs(const tt_value *args, int nargs, tt_value *outs, int nouts)
{
    for (int i = 0; i < nouts; i++) {
        bool ok = true;
        if (outs[i].kind == TT_V_TENSOR && outs[i].u.t)
            ok = is_argument(outs[i].u.t, args, nargs) || tt__scope_add(outs[i].u.t);
        else if (outs[i].kind == TT_V_TENSORS)
            for (int j = 0; j < outs[i].n && ok; j++)
                ok = !outs[i].u.tensors[j] || is_argument(outs[i].u.tensors[j], args, nargs) ||
                     tt__scope_add(outs[i].u.tensors[j]);
        if (!ok) {
            clear_outs(outs, nouts);
            return tt_errcode();
        }
    }
    return TT_OK;
}

/* tt_op_call on a pinned definition; *bind_failed says the arguments (or
 * the number of results) did not fit the schema. */
static tt_status call_pinned(const tt_opdef *op, const tt_value *args, int nargs,
                             tt_value *outs, int nouts, bool *bind_failed)
{
    tt_status st = check_call(op, outs, nouts);
    tt_value full[TT_MAX_ARGS];
    tt__bind_scratch sc;
    sc.used = 0;
    sc.nheap = 0;
    if (st || (st = tt__bind_args(op, args, nargs, full, &sc))) {
        tt__bind_scratch_free(&sc);
        *bind_failed = true;
        return st;
    }
    bool top = call_depth == 0;
    if (top)
        tt_scope_pause();
    call_depth++;
    st = dispatch_from_modes(op, full, op->nargs, outs, nouts);
    call_depth--;
    if (top) {
        tt_scope_resume();
        if (st == TT_OK)
            st = adopt_outputs(full, op->nargs, outs, nouts);
    }
    tt__bind_scratch_free(&sc);
    return st;
}

/* ------------------------------------------------ overload resolution */

#define MAX_OVERLOADS 64

static bool has_overload(const char *name)
{
    const char *sep = strstr(name, "::");
    return sep && strchr(sep + 2, '.');
}

/* Whether args bind to op and it returns nouts values; if not, why (the
 * binding's message without the op's name) into why. */
static bool binds(const tt_opdef *op, const tt_value *args, int nargs, int nouts, char *why,
                  size_t n)
{
    if (op->nreturns != nouts) {
        snprintf(why, n, "returns %d value%s, not %d", op->nreturns,
                 op->nreturns == 1 ? "" : "s", nouts);
        return false;
    }
    tt_value full[TT_MAX_ARGS];
    tt__bind_scratch sc;
    sc.used = 0;
    sc.nheap = 0;
    tt_status st = tt__bind_args(op, args, nargs, full, &sc);
    tt__bind_scratch_free(&sc);
    if (st) {
        const char *m = tt_errmsg();
        size_t nl = strlen(op->name);
        if (strncmp(m, op->name, nl) == 0 && m[nl] == ':' && m[nl + 1] == ' ')
            m += nl + 2;
        snprintf(why, n, "%s", m);
    }
    return !st;
}

/* "(Tensor f32[2], int 1)" for a message. */
static void describe_args(const tt_value *args, int nargs, char *buf, size_t n)
{
    size_t len = (size_t)snprintf(buf, n, "(");
    for (int i = 0; i < nargs && args && len < n; i++) {
        char one[160];
        tt_value_describe(&args[i], one, sizeof one);
        len += (size_t)snprintf(buf + len, n - len, "%s%s", i ? ", " : "", one);
    }
    if (len < n)
        snprintf(buf + len, n - len, ")");
}

/* The pinned definition among cands that args fit (the first candidate,
 * the name itself, wins when it fits); NULL with the error naming the
 * candidates when they fit several or none. */
static const tt_opdef *resolve_among(const char *base, const tt_op *const *cands, int ncands,
                                     const tt_value *args, int nargs, int nouts)
{
    const tt_opdef *fit[MAX_OVERLOADS];
    int nfit = 0;
    char whys[2048] = "", got[512];
    size_t wl = 0;
    for (int i = 0; i < ncands; i++) {
        const tt_opdef *d = pin_for_call(cands[i]);
        if (!d)
            continue; /* freed meanwhile */
        char why[512];
        if (binds(d, args, nargs, nouts, why, sizeof why)) {
            if (i == 0 && !has_overload(d->name)) {
                for (int k = 0; k < nfit; k++)
                    unpin(fit[k]);
                return d;
            }
            fit[nfit++] = d;
            continue;
        }
        if (wl < sizeof whys - 1) {
            char sch[512];
            tt_schema_print(d->schema, sch, sizeof sch);
            wl += (size_t)snprintf(whys + wl, sizeof whys - wl, "%s%s: %s", wl ? "; " : "",
                                   sch, why);
        }
        unpin(d);
    }
    if (nfit == 1)
        return fit[0];
    describe_args(args, nargs, got, sizeof got);
    if (nfit == 0) {
        tt_error(TT_EINVAL, "%s: no overload takes the arguments %s: %s", base, got, whys);
        return NULL;
    }
    char list[2048] = "";
    size_t ll = 0;
    for (int k = 0; k < nfit; k++) {
        if (ll < sizeof list - 1) {
            char sch[512];
            tt_schema_print(fit[k]->schema, sch, sizeof sch);
            ll += (size_t)snprintf(list + ll, sizeof list - ll, "%s%s", k ? "; " : "", sch);
        }
        unpin(fit[k]);
    }
    tt_error(TT_EINVAL, "%s: the arguments %s fit %d overloads, so the call is ambiguous: "
                        "%s; call one by its full name", base, got, nfit, list);
    return NULL;
}

tt_op *tt_op_resolve(const char *name, const tt_value *args, int nargs, int nouts)
{
    if (!name) {
        tt_error(TT_EINVAL, "tt_op_resolve: argument 'name' is NULL");
        return NULL;
    }
    if (nargs < 0 || (nargs > 0 && !args)) {
        tt_error(TT_EINVAL, "tt_op_resolve: argument 'args' is NULL for %d arguments", nargs);
        return NULL;
    }
    if (has_overload(name))
        return tt_op_find(name);
    const tt_op *cands[MAX_OVERLOADS];
    int n = tt_op_overloads(name, cands, MAX_OVERLOADS);
    if (n == 0)
        return tt_op_find(name); /* its error says what exists */
    const tt_opdef *d = resolve_among(name, cands, n < MAX_OVERLOADS ? n : MAX_OVERLOADS,
                                      args, nargs, nouts);
    if (!d)
        return NULL;
    tt_op *h = (tt_op *)d->handle;
    unpin(d);
    return h;
}

/* After the arguments did not fit op (the op its handle names, pinned):
 * when op's name has no overload and other overloads of it exist, the one
 * the arguments fit, pinned, as PyTorch's OpOverloadPacket picks it.
 * NULL with op's own error kept when there is nothing else to try, or
 * with resolve_among's error. A NULL tensor among the arguments is the
 * error of the call that made it (the first cause wins): nothing to try. */
static const tt_opdef *overload_for(const tt_opdef *op, const tt_value *args, int nargs,
                                    int nouts)
{
    if (has_overload(op->name) || nargs < 0 || (nargs > 0 && !args))
        return NULL;
    for (int i = 0; i < nargs; i++)
        if (args[i].kind == TT_V_TENSOR && !args[i].u.t)
            return NULL;
    const tt_op *cands[MAX_OVERLOADS];
    int n = tt_op_overloads(op->name, cands, MAX_OVERLOADS);
    if (n < 2 || cands[0] != op->handle)
        return NULL;
    return resolve_among(op->name, cands, n < MAX_OVERLOADS ? n : MAX_OVERLOADS, args, nargs,
                         nouts);
}

/* call_pinned for one result, with the overload fallback: *op becomes the
 * definition that ran (the caller unpins it). */
static tt_status call_pinned1(const tt_opdef **op, const tt_value *args, int nargs,
                              tt_value *out)
{
    bool bind_failed = false;
    tt_status st = call_pinned(*op, args, nargs, out, 1, &bind_failed);
    const tt_opdef *other = bind_failed ? overload_for(*op, args, nargs, 1) : NULL;
    if (other) {
        unpin(*op);
        *op = other;
        st = call_pinned(other, args, nargs, out, 1, &bind_failed);
    }
    return st;
}

/* A call pins the op's definition for its whole run, so a tt_library_free
 * on another thread cannot free the schema or the kernel table it reads:
 * the call runs on what it pinned, or fails cleanly if the op was already
 * freed (registry.c). */
tt_status tt_op_call(const tt_op *h, const tt_value *args, int nargs,
                     tt_value *outs, int nouts)
{
    const tt_opdef *op = pin_for_call(h);
    if (!op)
        return tt_errcode();
    bool bind_failed = false;
    tt_status st = call_pinned(op, args, nargs, outs, nouts, &bind_failed);
    const tt_opdef *other = bind_failed ? overload_for(op, args, nargs, nouts) : NULL;
    unpin(op);
    if (other) {
        st = call_pinned(other, args, nargs, outs, nouts, &bind_failed);
        unpin(other);
    }
    return st;
}

tt_tensor *tt_op_call1(const tt_op *h, const tt_value *args, int nargs)
{
    const tt_opdef *op = pin_for_call(h);
    if (!op)
        return NULL;
    tt_value out = tt_v_none();
    tt_status st;
    if (op->nreturns != 1 || tt_schema_return(op->schema, 0)->type.base != TT_T_TENSOR ||
        tt_schema_return(op->schema, 0)->type.is_list)
        st = tt_error(TT_EINVAL, "%s: tt_op_call1 needs an op that returns one Tensor; "
                                 "use tt_op_call", op->name);
    else if (!(st = call_pinned1(&op, args, nargs, &out)) &&
             (out.kind != TT_V_TENSOR || !out.u.t)) {
        /* A Tensor? return may be None: NULL must still mean an error. */
        tt_value_clear(&out);
        st = tt_error(TT_EINVAL, "%s: returned None; use tt_op_call to tell None from a "
                                 "failure", op->name);
    }
    unpin(op);
    return st ? NULL : out.u.t;
}

tt_tensor *tt_op_call1_at(const tt_op *op, const tt_value *args, int nargs, tt_srcloc loc)
{
    tt_callframe f = {loc, NULL, "tt_call"};
    tt_callframe_enter(&f);
    return tt_callframe_leave_t(tt_op_call1(op, args, nargs));
}

tt_status tt_op_redispatch(const tt_op *h, const tt_value *args, int nargs,
                           tt_value *outs, int nouts)
{
    const tt_opdef *op = pin_for_call(h);
    if (!op)
        return tt_errcode();
    tt_status st = check_call(op, outs, nouts);
    tt_value full[TT_MAX_ARGS];
    tt__bind_scratch sc;
    sc.used = 0;
    sc.nheap = 0;
    if (!st && !(st = tt__bind_args(op, args, nargs, full, &sc)))
        st = dispatch_from_modes(op, full, op->nargs, outs, nouts);
    tt__bind_scratch_free(&sc);
    unpin(op);
    return st;
}

/* ----------------------------------------------------------------- modes */

static tt_status data_read_hook(const tt_tensor *t, const char *what, tt_srcloc loc,
                                void **stand_in)
{
    tt_mode *m = modes.level ? modes.stack[modes.level - 1] : fake_kernel_reader;
    if (!m || (!m->data_read && !m->fake_data))
        return TT_OK;
    int saved = modes.level;
    tt_mode *saved_reader = fake_kernel_reader;
    modes.level -= saved > 0;
    fake_kernel_reader = NULL;
    tt_status st = m->data_read ? m->data_read(m, t, what, loc) : TT_OK;
    if ((st == TT_OK || st == TT_EGRAPHBREAK) && m->fake_data && tt_is_fake(t))
        *stand_in = m->fake_data(m, t);
    modes.level = saved;
    fake_kernel_reader = saved_reader;
    return st;
}

tt_status tt_mode_push(tt_mode *m)
{
    if (!m || !m->call)
        return tt_error(TT_EINVAL, "tt_mode_push: argument 'mode' needs a call handler");
    atomic_store_explicit(&tt__data_read_hook, data_read_hook, memory_order_relaxed);
    if (modes.n == MAX_MODES)
        return tt_error(TT_EINVAL, "tt_mode_push: at most %d modes can be active", MAX_MODES);
    if (modes.level != modes.n)
        return tt_error(TT_EINVAL, "tt_mode_push: cannot push a mode from inside a "
                                   "mode's handler or a kernel");
    modes.stack[modes.n++] = m;
    modes.level = modes.n;
    return TT_OK;
}

tt_mode *tt_mode_pop(void)
{
    if (modes.n == 0 || modes.level != modes.n)
        return NULL;
    tt_mode *m = modes.stack[--modes.n];
    modes.level = modes.n;
    return m;
}

tt_mode *tt_mode_current(void)
{
    return modes.level ? modes.stack[modes.level - 1] : NULL;
}

void tt_set_mode_tag(tt_tensor *t, uint64_t key, int64_t val)
{
    if (t && tt__is_released(t))
        tt__released_error("tt_set_mode_tag", "t");
    else if (t) {
        t->mode_key = key;
        t->mode_val = val;
    }
}

bool tt_get_mode_tag(const tt_tensor *t, uint64_t key, int64_t *val)
{
    if (!t || key == 0 || tt__is_released(t) || t->mode_key != key)
        return false;
    *val = t->mode_val;
    return true;
}

bool tt_dispatch_is_trivial(int n, const tt_tensor *const *ts)
{
    if (modes.level || fake_mode)
        return false;
    bool grad = !tt__grad_disabled && !tt__autograd_off;
    for (int i = 0; i < n; i++) {
        const tt_tensor *t = ts[i];
        /* A released tensor takes the checked (boxed) path, which reports
         * it; the test shares its cache line with the storage load. */
        if (!t || tt__is_released(t) || t->storage->fake ||
            (grad && (t->flags & TT_TF_REQUIRES_GRAD)))
            return false;
    }
    return true;
}

/* ------------------------------------------- runtime functions as ops */

static bool any_fake(int n, const tt_tensor *const *ts)
{
    for (int i = 0; i < n; i++)
        if (ts[i] && ts[i]->storage->fake)
            return true;
    return false;
}

bool tt__needs_dispatch(int n, const tt_tensor *const *ts)
{
    if (modes.level)
        return true;
    /* A released tensor is reported by the op's argument check. */
    for (int i = 0; i < n; i++)
        if (ts[i] && tt__is_released(ts[i]))
            return true;
    if (tt__autograd_off)
        return false;
    if (fake_mode)
        return true; /* the op's fake kernel runs, as for every other op */
    /* Some built-in's kernel is overridden: the op decides which kernel
     * runs (real tensors only; a fake one runs the fake kernel anyway, and
     * inside kernels the runtime functions stay direct, so a built-in
     * kernel built on them does not recurse). */
    if (atomic_load_explicit(&tt__builtin_overrides, memory_order_relaxed) &&
        !any_fake(n, ts))
        return true;
    if (tt__grad_disabled)
        return false;
    for (int i = 0; i < n; i++)
        if (ts[i] && tt__tensor_requires_grad(ts[i]))
            return true;
    return false;
}

const tt_op *tt__builtins[TT_OP_COUNT];

/* Built-in `id`'s handle, or NULL with the error when ops/ never
 * registered the built-ins (a static link that pulled in no object of it). */
static const tt_op *builtin(tt_builtin_id id)
{
    const tt_op *op = tt__builtins[id];
    if (!op)
        tt_error(TT_EINTERNAL, "the built-in ops are not registered, so no built-in can run: "
                               "with a static libtensortrace.a, link it as pkg-config --static "
                               "--libs tensortrace says (it keeps ops/ in), or call "
                               "tt_ops_init() once");
    return op;
}

tt_tensor *tt__call_op(tt_builtin_id id, const tt_value *args, int nargs)
{
    const tt_op *op = builtin(id);
    return op ? tt_op_call1(op, args, nargs) : NULL;
}

tt_tensor *tt__call_op_as_caller(tt_builtin_id id, const tt_value *args, int nargs)
{
    int saved = modes.level, saved_entry = handler_entry_level;
    if (handler_entry_level)
        modes.level = handler_entry_level;
    handler_entry_level = 0;
    const tt_op *op = builtin(id);
    tt_tensor *t = op ? tt_op_call1(op, args, nargs) : NULL;
    modes.level = saved;
    handler_entry_level = saved_entry;
    return t;
}

tt_status tt__call_op_status(tt_builtin_id id, const tt_value *args, int nargs)
{
    const tt_op *op = builtin(id);
    tt_tensor *t = op ? tt_op_call1(op, args, nargs) : NULL;
    if (!t)
        return tt_errcode();
    tt_release(t);
    return TT_OK;
}
