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
            tt_size_list_str(real->ndim, real->strides, true, a, sizeof a);
            tt_size_list_str(fake->ndim, fake->strides, true, b, sizeof b);
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

/* Copies of the tensors (list members too) the schema does not mark
 * written. */
typedef struct {
    int arg, elem; /* elem: the index in a Tensor[] argument, -1 for a Tensor */
    tt_tensor *t, *copy;
} saved_arg;

static tt_tensor *copy_of(const tt_tensor *t)
{
    tt_tensor *c = tt__empty_impl(t->ndim, t->sizes, NULL, (tt_dtype)t->dtype, false);
    if (c && tt__copy_raw(c, t))
        c = tt_release(c);
    return c;
}

tt_status tt__checked_call(const tt_op *op, const tt_value *args, int nargs, tt_value *outs,
                           int nouts, tt_kernel_fn k)
{
    int ns = 0, cap = 0;
    tt_status st = TT_OK;
    for (int i = 0; i < nargs; i++)
        if (!(op->mutated >> i & 1))
            cap += args[i].kind == TT_V_TENSOR ? 1 : args[i].kind == TT_V_TENSORS ? args[i].n : 0;
    saved_arg *saved = tt__calloc((size_t)(cap ? cap : 1), sizeof *saved);
    if (!saved)
        return tt_errcode();
    for (int i = 0; i < nargs && !st; i++) {
        if (op->mutated >> i & 1)
            continue;
        bool list = args[i].kind == TT_V_TENSORS;
        int n = list ? args[i].n : args[i].kind == TT_V_TENSOR;
        for (int j = 0; j < n && !st; j++) {
            tt_tensor *t = list ? args[i].u.tensors[j] : args[i].u.t;
            if (!t)
                continue;
            saved[ns] = (saved_arg){i, list ? j : -1, t, copy_of(t)};
            st = saved[ns].copy ? TT_OK : tt_errcode();
            ns += !st;
        }
    }
    if (!st)
        st = k((tt_frame *)&(struct tt_frame){op, args, nargs, outs, nouts, false});
    /* Undeclared writes: compare element bytes with the copies. */
    for (int s = 0; !st && s < ns; s++) {
        tt_tensor *now = copy_of(saved[s].t);
        st = now ? TT_OK : tt_errcode();
        size_t bytes = st ? 0 : (size_t)tt_numel(now) * tt_dtype_size((tt_dtype)now->dtype);
        if (!st && bytes && memcmp(tt__ptr(now), tt__ptr(saved[s].copy), bytes) != 0) {
            char elem[48] = "";
            if (saved[s].elem >= 0)
                snprintf(elem, sizeof elem, " (tensor %d of the list)", saved[s].elem);
            st = tt_error(TT_EOPCHECK, "%s: checked mode (TT_CHECK_OPS): the kernel wrote "
                                       "argument '%s' (#%d)%s, which the schema does not "
                                       "mark written; declare it in mutates_args (or "
                                       "'Tensor(a!)') or write into a copy",
                          op->name, tt_schema_arg(op->schema, saved[s].arg)->name,
                          saved[s].arg + 1, elem);
        }
        tt_release(now);
    }
    for (int s = 0; s < ns; s++)
        tt_release(saved[s].copy);
    tt__free(saved);
    /* The fake kernel on fake copies must give the same metadata. */
    tt_kernel_fn fk = atomic_load(&op->fake.fn);
    if (!st && fk) {
        tt_value fargs[TT_MAX_ARGS], fouts[TT_MAX_RETURNS];
        tt_tensor **flists[TT_MAX_ARGS] = {0}; /* fake copies of list members */
        for (int i = 0; i < nargs; i++)
            fargs[i] = args[i];
        for (int i = 0; i < nargs && !st; i++) {
            if (args[i].kind == TT_V_TENSOR && args[i].u.t) {
                fargs[i].u.t = tt_fake_like(args[i].u.t);
                if (!fargs[i].u.t)
                    st = tt_errcode();
            } else if (args[i].kind == TT_V_TENSORS) {
                tt_tensor *const *ts = args[i].u.tensors;
                flists[i] = tt__calloc((size_t)(args[i].n ? args[i].n : 1), sizeof *ts);
                st = flists[i] ? TT_OK : tt_errcode();
                for (int j = 0; !st && j < args[i].n; j++)
                    if (ts[j] && !(flists[i][j] = tt_fake_like(ts[j])))
                        st = tt_errcode();
                fargs[i].u.tensors = flists[i];
            }
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
            if (outs[j].kind == TT_V_TENSORS || fouts[j].kind == TT_V_TENSORS) {
                int nr = outs[j].kind == TT_V_TENSORS ? outs[j].n : 0;
                int nf = fouts[j].kind == TT_V_TENSORS ? fouts[j].n : 0;
                if (nr != nf)
                    st = tt_error(TT_EOPCHECK, "%s: checked mode (TT_CHECK_OPS): output %d: "
                                               "the real kernel returns %d tensors, the fake "
                                               "kernel %d", op->name, j, nr, nf);
                for (int m = 0; !st && m < nr; m++) {
                    tt_tensor *r = outs[j].u.tensors[m], *f = fouts[j].u.tensors[m];
                    if (r && f && tt_meta_mismatch(r, f, why, sizeof why))
                        st = tt_error(TT_EOPCHECK, "%s: checked mode (TT_CHECK_OPS): output "
                                                   "%d, tensor %d: %s", op->name, j, m, why);
                }
                continue;
            }
            tt_tensor *r = outs[j].kind == TT_V_TENSOR ? outs[j].u.t : NULL;
            tt_tensor *f = fouts[j].kind == TT_V_TENSOR ? fouts[j].u.t : NULL;
            if (r && f && tt_meta_mismatch(r, f, why, sizeof why))
                st = tt_error(TT_EOPCHECK, "%s: checked mode (TT_CHECK_OPS): output %d: %s",
                              op->name, j, why);
        }
        for (int j = 0; j < nouts; j++)
            tt_value_clear(&fouts[j]);
        for (int i = 0; i < nargs; i++) {
            if (args[i].kind == TT_V_TENSOR && args[i].u.t && fargs[i].u.t != args[i].u.t)
                tt_release(fargs[i].u.t);
            for (int j = 0; flists[i] && j < args[i].n; j++)
                tt_release(flists[i][j]);
            tt__free(flists[i]);
        }
    }
    return st;
}
