/* Kernel frames: checked argument accessors and result slots. Arguments
 * were bound to the schema before the kernel runs, so these checks catch a
 * kernel asking for the wrong type (a bug in the kernel), with a message
 * that says which argument and what it is. */
#include "dispatch_impl.h"

#include <stdio.h>

const tt_op *tt_frame_op(const tt_frame *f) { return f ? f->op->handle : NULL; }
void *tt_frame_userdata(const tt_frame *f) { return f ? f->op->userdata : NULL; }
int tt_frame_nargs(const tt_frame *f) { return f ? f->nargs : 0; }

const tt_value *tt_frame_arg(const tt_frame *f, int i)
{
    return f && i >= 0 && i < f->nargs ? &f->args[i] : NULL;
}

bool tt_arg_is_none(const tt_frame *f, int i)
{
    const tt_value *v = tt_frame_arg(f, i);
    return !v || v->kind == TT_V_NONE || (v->kind == TT_V_TENSOR && !v->u.t);
}

tt_status tt_frame_fail(tt_frame *f, tt_status code, const char *fmt, ...)
{
    char msg[1536];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return tt_error(code ? code : TT_EINVAL, "%s: %s", f ? f->op->name : "?", msg);
}

/* The value of argument i if its kind is one of `k1`/`k2`, else an error
 * naming what the kernel asked for. */
static const tt_value *want(tt_frame *f, int i, const char *asked,
                            tt_value_kind k1, tt_value_kind k2, bool none_ok)
{
    if (!f) {
        tt_error(TT_EINVAL, "tt_arg_%s: argument 'frame' is NULL", asked);
        return NULL;
    }
    if (i < 0 || i >= f->nargs) {
        tt_error(TT_EINVAL, "%s: a kernel asked for argument #%d, but the op has %d "
                            "argument%s", f->op->name, i + 1, f->nargs,
                 f->nargs == 1 ? "" : "s");
        return NULL;
    }
    const tt_value *v = &f->args[i];
    if (v->kind == k1 || v->kind == k2 || (none_ok && v->kind == TT_V_NONE))
        return v;
    const tt_arg *a = tt_schema_arg(f->op->schema, i);
    char ty[64], got[128];
    tt_type_str(&a->type, ty, sizeof ty);
    tt_value_describe(v, got, sizeof got);
    tt_error(TT_EINVAL, "%s: argument '%s' (#%d) is %s (got %s), but the kernel read "
                        "it as %s", f->op->name, a->name, i + 1, ty, got, asked);
    return NULL;
}

/* A NULL output pointer of an accessor: the kernel's mistake, an error
 * naming the accessor (and the op, when there is a frame), never a crash. */
static tt_status null_out(const tt_frame *f, const char *fn, const char *arg)
{
    return tt_error(TT_EINVAL, "%s%s%s: argument '%s' is NULL", f && f->op ? f->op->name : "",
                    f && f->op ? ": " : "", fn, arg);
}

tt_status tt_arg_tensor(tt_frame *f, int i, tt_tensor **out)
{
    if (!out)
        return null_out(f, "tt_arg_tensor", "out");
    const tt_value *v = want(f, i, "Tensor", TT_V_TENSOR, TT_V_TENSOR, true);
    if (!v)
        return tt_errcode();
    *out = v->kind == TT_V_TENSOR ? v->u.t : NULL;
    return TT_OK;
}

tt_status tt_arg_tensors(tt_frame *f, int i, tt_tensor *const **out, int *n)
{
    if (!out)
        return null_out(f, "tt_arg_tensors", "out");
    if (!n)
        return null_out(f, "tt_arg_tensors", "n");
    const tt_value *v = want(f, i, "Tensor[]", TT_V_TENSORS, TT_V_TENSORS, true);
    if (!v)
        return tt_errcode();
    *out = v->kind == TT_V_TENSORS ? v->u.tensors : NULL;
    *n = v->kind == TT_V_TENSORS ? v->n : 0;
    return TT_OK;
}

tt_status tt_arg_int(tt_frame *f, int i, int64_t *out)
{
    if (!out)
        return null_out(f, "tt_arg_int", "out");
    const tt_value *v = want(f, i, "int", TT_V_INT, TT_V_INT, false);
    if (!v)
        return tt_errcode();
    *out = v->u.i;
    return TT_OK;
}

tt_status tt_arg_float(tt_frame *f, int i, double *out)
{
    if (!out)
        return null_out(f, "tt_arg_float", "out");
    const tt_value *v = want(f, i, "float", TT_V_FLOAT, TT_V_INT, false);
    if (!v)
        return tt_errcode();
    *out = v->kind == TT_V_FLOAT ? v->u.f : (double)v->u.i;
    return TT_OK;
}

tt_status tt_arg_scalar(tt_frame *f, int i, double *out, bool *is_integral)
{
    if (!out)
        return null_out(f, "tt_arg_scalar", "out");
    const tt_value *v = tt_frame_arg(f, i);
    if (v && v->kind == TT_V_BOOL) {
        *out = v->u.b;
        if (is_integral)
            *is_integral = true;
        return TT_OK;
    }
    v = want(f, i, "Scalar", TT_V_FLOAT, TT_V_INT, false);
    if (!v)
        return tt_errcode();
    *out = v->kind == TT_V_FLOAT ? v->u.f : (double)v->u.i;
    if (is_integral)
        *is_integral = v->kind == TT_V_INT;
    return TT_OK;
}

tt_status tt_arg_bool(tt_frame *f, int i, bool *out)
{
    if (!out)
        return null_out(f, "tt_arg_bool", "out");
    const tt_value *v = want(f, i, "bool", TT_V_BOOL, TT_V_BOOL, false);
    if (!v)
        return tt_errcode();
    *out = v->u.b;
    return TT_OK;
}

tt_status tt_arg_str(tt_frame *f, int i, const char **out)
{
    if (!out)
        return null_out(f, "tt_arg_str", "out");
    const tt_value *v = want(f, i, "str", TT_V_STR, TT_V_STR, false);
    if (!v)
        return tt_errcode();
    *out = v->u.s;
    return TT_OK;
}

tt_status tt_arg_ints(tt_frame *f, int i, const int64_t **out, int *n)
{
    if (!out)
        return null_out(f, "tt_arg_ints", "out");
    if (!n)
        return null_out(f, "tt_arg_ints", "n");
    const tt_value *v = want(f, i, "int[]", TT_V_INTS, TT_V_INTS, false);
    if (!v)
        return tt_errcode();
    *out = v->u.ints;
    *n = v->n;
    return TT_OK;
}

tt_status tt_arg_floats(tt_frame *f, int i, const double **out, int *n)
{
    if (!out)
        return null_out(f, "tt_arg_floats", "out");
    if (!n)
        return null_out(f, "tt_arg_floats", "n");
    const tt_value *v = want(f, i, "float[]", TT_V_FLOATS, TT_V_FLOATS, false);
    if (!v)
        return tt_errcode();
    *out = v->u.floats;
    *n = v->n;
    return TT_OK;
}

tt_status tt_arg_dtype(tt_frame *f, int i, tt_dtype *out, bool *is_none)
{
    if (!out)
        return null_out(f, "tt_arg_dtype", "out");
    const tt_value *v = want(f, i, "ScalarType", TT_V_DTYPE, TT_V_DTYPE, true);
    if (!v)
        return tt_errcode();
    if (is_none)
        *is_none = v->kind == TT_V_NONE;
    if (v->kind == TT_V_DTYPE)
        *out = v->u.dtype;
    return TT_OK;
}

/* ---------------------------------------------------------------- results */

static tt_status out_slot(tt_frame *f, int i, const char *what)
{
    if (!f)
        return tt_error(TT_EINVAL, "%s: argument 'frame' is NULL", what);
    if (i < 0 || i >= f->nouts)
        return tt_error(TT_EINVAL, "%s: %s: result #%d does not exist (the op returns "
                                   "%d value%s)", f->op->name, what, i + 1, f->nouts,
                        f->nouts == 1 ? "" : "s");
    tt_value_clear(&f->outs[i]); /* a kernel may overwrite a result */
    return TT_OK;
}

tt_status tt_return(tt_frame *f, int i, tt_tensor *t)
{
    tt_status st = out_slot(f, i, "tt_return");
    if (st) {
        tt_release(t);
        return st;
    }
    if (!t) /* the kernel's failed call is the cause */
        return tt__null_arg_error("%s: the kernel returned NULL for result #%d", f->op->name,
                                  i + 1);
    f->outs[i] = tt_v_tensor(t);
    return TT_OK;
}

tt_status tt_return_self(tt_frame *f, int i, int arg)
{
    tt_tensor *t = NULL;
    tt_status st = tt_arg_tensor(f, arg, &t);
    if (st)
        return st;
    return tt_return(f, i, tt_retain(t));
}

tt_status tt_return_tensors(tt_frame *f, int i, int n, tt_tensor **ts)
{
    tt_status st = out_slot(f, i, "tt_return_tensors");
    tt_tensor **copy = st || n < 0 ? NULL : tt__malloc(sizeof *copy * (size_t)(n ? n : 1));
    if (!copy) {
        for (int j = 0; j < n; j++)
            tt_release(ts[j]);
        return st ? st : n < 0 ? tt_frame_fail(f, TT_EINVAL, "negative list length") : tt_errcode();
    }
    for (int j = 0; j < n; j++)
        copy[j] = ts[j];
    f->outs[i] = tt_v_tensors(n, copy);
    return TT_OK;
}

tt_status tt_return_value(tt_frame *f, int i, tt_value v)
{
    tt_status st = out_slot(f, i, "tt_return_value");
    if (st)
        return st;
    if (v.kind != TT_V_INT && v.kind != TT_V_FLOAT && v.kind != TT_V_BOOL &&
        v.kind != TT_V_NONE)
        return tt_frame_fail(f, TT_EINVAL, "tt_return_value takes int, float, bool or "
                                           "None (use tt_return for tensors)");
    f->outs[i] = v;
    return TT_OK;
}

/* ------------------------------------------------------ fake-kernel context */

bool tt_frame_is_fake(const tt_frame *f) { return f && f->fake; }

tt_size tt_frame_new_dynamic_size(tt_frame *f)
{
    if (!f || !f->fake) {
        tt_error(TT_EINVAL, "%s: tt_frame_new_dynamic_size can only be called in a "
                            "fake kernel (a real kernel knows its sizes)",
                 f ? f->op->name : "tt_frame_new_dynamic_size");
        return 0;
    }
    /* Unbacked: no example value exists until the real kernel runs. */
    return tt_sym_new("u", -1);
}

tt_size tt_frame_new_dynamic_size_bounded(tt_frame *f, int64_t min, int64_t max)
{
    const char *who = f && f->op ? f->op->name : "tt_frame_new_dynamic_size_bounded";
    if (!f || !f->fake) {
        tt_error(TT_EINVAL, "%s: tt_frame_new_dynamic_size_bounded can only be called in a "
                            "fake kernel (a real kernel knows its sizes)", who);
        return 0;
    }
    if (min < 0 || max < min || max >= TT_SIZE_LIMIT) {
        tt_error(TT_EINVAL, "%s: tt_frame_new_dynamic_size_bounded: bounds [%lld, %lld] are "
                            "not a range of sizes (expected 0 <= min <= max < 2^48)",
                 who, (long long)min, (long long)max);
        return 0;
    }
    return tt__sym_new_unbacked(min, max);
}
