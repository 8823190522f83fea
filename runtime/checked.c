/* Checked mode: every eager call of a custom op also runs its fake kernel
 * on fake copies of the inputs and compares the outputs' metadata, and
 * checks that no argument the schema does not mark written was written.
 * So a fake kernel that drifts from its real kernel is caught on the
 * first call that shows it, not deep inside a compiled graph. On with
 * tt_set_checked_mode(true) or the environment variable TT_CHECK_OPS=1. */
#include "dispatch_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static atomic_int checked = -1; /* -1: not read from the environment yet */

bool tt_checked_mode(void)
{
    int v = atomic_load(&checked);
    if (v < 0) {
        const char *e = getenv("TT_CHECK_OPS");
        v = e && e[0] && strcmp(e, "0") != 0;
        atomic_store(&checked, v);
    }
    return v;
}

void tt_set_checked_mode(bool on) { atomic_store(&checked, on); }

static void tuple_str(int n, const tt_size *v, char *buf, size_t cap)
{
    size_t len = (size_t)snprintf(buf, cap, "(");
    for (int i = 0; i < n && len < cap; i++) {
        char one[64];
        tt_size_str(v[i], one, sizeof one);
        len += (size_t)snprintf(buf + len, cap - len, "%s%s", i ? ", " : "", one);
    }
    if (len < cap)
        snprintf(buf + len, cap - len, n == 1 ? ",)" : ")");
}

bool tt_meta_mismatch(const tt_tensor *real, const tt_tensor *fake, char *why, size_t n)
{
    char a[256], b[256];
    if (real->dtype != fake->dtype) {
        snprintf(why, n, "dtype differs: the real kernel gives %s, the fake kernel %s",
                 tt_dtype_name((tt_dtype)real->dtype), tt_dtype_name((tt_dtype)fake->dtype));
        return true;
    }
    bool shape_ok = real->ndim == fake->ndim;
    for (int d = 0; shape_ok && d < real->ndim; d++)
        shape_ok = tt_size_is_sym(fake->sizes[d]) || fake->sizes[d] == real->sizes[d];
    if (!shape_ok) {
        snprintf(why, n, "shape differs: the real kernel gives %s, the fake kernel %s",
                 tt_shape_str(real, a, sizeof a), tt_shape_str(fake, b, sizeof b));
        return true;
    }
    for (int d = 0; d < real->ndim; d++) {
        if (real->sizes[d] <= 1 || tt_size_is_sym(fake->strides[d]))
            continue; /* any stride is right for a size-1 dim */
        if (real->strides[d] != fake->strides[d]) {
            tuple_str(real->ndim, real->strides, a, sizeof a);
            tuple_str(fake->ndim, fake->strides, b, sizeof b);
            char shape[256];
            snprintf(why, n, "strides differ: the real kernel gives %s, the fake kernel %s "
                             "(shape %s; first difference in dim %d). The fake kernel must "
                             "return the real kernel's memory layout: if the real kernel "
                             "returns a permuted view, permute the fake output the same way",
                     a, b, tt_shape_str(real, shape, sizeof shape), d);
            return true;
        }
    }
    if (real->offset != fake->offset && !tt_size_is_sym(fake->offset)) {
        snprintf(why, n, "storage offset differs: the real kernel gives %lld, the fake "
                         "kernel %lld", (long long)real->offset, (long long)fake->offset);
        return true;
    }
    return false;
}

/* Copies of the arguments the schema does not mark written. */
typedef struct {
    int arg;
    tt_tensor *t, *copy;
} saved_arg;

tt_status tt__checked_call(const tt_op *op, const tt_value *args, int nargs, tt_value *outs,
                           int nouts, tt_kernel_fn k)
{
    saved_arg saved[TT_MAX_ARGS];
    int ns = 0;
    tt_status st = TT_OK;
    for (int i = 0; i < nargs && !st; i++)
        if (!(op->mutated >> i & 1) && args[i].kind == TT_V_TENSOR && args[i].u.t) {
            tt_tensor *c = tt__empty_impl(args[i].u.t->ndim, args[i].u.t->sizes, NULL,
                                          (tt_dtype)args[i].u.t->dtype, false);
            if (!c || (st = tt__copy_raw(c, args[i].u.t))) {
                tt_release(c);
                st = tt_errcode();
                break;
            }
            saved[ns++] = (saved_arg){i, args[i].u.t, c};
        }
    if (!st)
        st = k((tt_frame *)&(struct tt_frame){op, args, nargs, outs, nouts, false});
    /* Undeclared writes: compare element bytes with the copies. */
    for (int s = 0; !st && s < ns; s++) {
        tt_tensor *now = tt__empty_impl(saved[s].t->ndim, saved[s].t->sizes, NULL,
                                        (tt_dtype)saved[s].t->dtype, false);
        st = now ? tt__copy_raw(now, saved[s].t) : tt_errcode();
        size_t bytes = st ? 0 : (size_t)tt_numel(now) * tt_dtype_size((tt_dtype)now->dtype);
        if (!st && bytes && memcmp(tt__ptr(now), tt__ptr(saved[s].copy), bytes) != 0)
            st = tt_error(TT_EOPCHECK, "%s: checked mode (TT_CHECK_OPS): the kernel wrote "
                                       "argument '%s' (#%d), which the schema does not mark "
                                       "written; declare it in mutates_args (or "
                                       "'Tensor(a!)') or write into a copy",
                          op->name, tt_schema_arg(op->schema, saved[s].arg)->name,
                          saved[s].arg + 1);
        tt_release(now);
    }
    for (int s = 0; s < ns; s++)
        tt_release(saved[s].copy);
    /* The fake kernel on fake copies must give the same metadata. */
    tt_kernel_fn fk = atomic_load(&op->fake.fn);
    if (!st && fk) {
        tt_value fargs[TT_MAX_ARGS], fouts[TT_MAX_RETURNS];
        for (int i = 0; i < nargs; i++)
            fargs[i] = args[i];
        for (int i = 0; i < nargs && !st; i++)
            if (args[i].kind == TT_V_TENSOR && args[i].u.t) {
                fargs[i].u.t = tt_fake_like(args[i].u.t);
                if (!fargs[i].u.t)
                    st = tt_errcode();
            }
        for (int j = 0; j < nouts; j++)
            fouts[j] = tt_v_none();
        if (!st && (st = fk((tt_frame *)&(struct tt_frame){op, fargs, nargs, fouts, nouts, true}))) {
            char inner[1024];
            snprintf(inner, sizeof inner, "%s", tt_errmsg());
            st = tt_error(TT_EOPCHECK, "%s: checked mode (TT_CHECK_OPS): the fake kernel "
                                       "failed on fake copies of the inputs: %s", op->name, inner);
        }
        for (int j = 0; !st && j < nouts; j++) {
            char why[768];
            tt_tensor *r = outs[j].kind == TT_V_TENSOR ? outs[j].u.t : NULL;
            tt_tensor *f = fouts[j].kind == TT_V_TENSOR ? fouts[j].u.t : NULL;
            if (r && f && tt_meta_mismatch(r, f, why, sizeof why))
                st = tt_error(TT_EOPCHECK, "%s: checked mode (TT_CHECK_OPS): output %d: %s",
                              op->name, j, why);
        }
        for (int j = 0; j < nouts; j++)
            tt_value_clear(&fouts[j]);
        for (int i = 0; i < nargs; i++)
            if (args[i].kind == TT_V_TENSOR && args[i].u.t && fargs[i].u.t != args[i].u.t)
                tt_release(fargs[i].u.t);
    }
    return st;
}
