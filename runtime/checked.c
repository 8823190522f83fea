/* Checked mode: every eager call of a custom op also runs its fake kernel
 * on fake copies of the inputs and compares the outputs' metadata, and
 * checks that no argument the schema does not mark written was written.
 * So a fake kernel that drifts from its real kernel is caught on the
 * first call that shows it, not deep inside a compiled graph. On with
 * tt_set_checked_mode(true) or the environment variable TT_CHECK_OPS=1. */
#include "dispatch_impl.h"
#include "contract_impl.h"

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

/* ------------------------------------------------------------- aliasing */

/* Output or argument value v's tensor m (m < value_count(v)). */
static int value_count(const tt_value *v)
{
    return v->kind == TT_V_TENSOR ? v->u.t != NULL : v->kind == TT_V_TENSORS ? v->n : 0;
}

static const tt_tensor *value_tensor(const tt_value *v, int m)
{
    return v->kind == TT_V_TENSOR ? v->u.t : v->u.tensors[m];
}

/* " (tensor 2 of the list)" for a list member, "" for a plain tensor. */
static const char *elem_str(const tt_value *v, int m, char *buf, size_t n)
{
    if (v->kind == TT_V_TENSORS)
        snprintf(buf, n, " (tensor %d of the list)", m);
    else
        buf[0] = '\0';
    return buf;
}

static bool same_storage(const tt_tensor *a, const tt_tensor *b)
{
    return a && b && a->storage == b->storage;
}

/* The schema declares that return `ret` may alias argument `arg`:
 * Tensor(a) / Tensor(a!) with one alias set on both. */
static bool declared(const tt_schema *s, int ret, int arg)
{
    const tt_arg *r = tt_schema_return(s, ret), *a = tt_schema_arg(s, arg);
    return r->alias_set && a->alias_set && strcmp(r->alias_set, a->alias_set) == 0;
}

bool tt__alias_violation(const tt_schema *s, const tt_value *args, int nargs,
                         const tt_value *outs, int nouts, char *why, size_t n)
{
    static const char rule[] = "a custom op's outputs may not alias any inputs or other returns";
    char e1[48], e2[48];
    for (int j = 0; j < nouts; j++)
        for (int m = 0; m < value_count(&outs[j]); m++) {
            const tt_tensor *o = value_tensor(&outs[j], m);
            for (int i = 0; o && i < nargs; i++) {
                if (declared(s, j, i))
                    continue;
                for (int k = 0; k < value_count(&args[i]); k++) {
                    const tt_tensor *t = value_tensor(&args[i], k);
                    if (!same_storage(o, t))
                        continue;
                    const tt_arg *a = tt_schema_arg(s, i);
                    char what[160];
                    if (o == t)
                        snprintf(what, sizeof what, "is argument '%s' (#%d)%s itself", a->name,
                                 i + 1, elem_str(&args[i], k, e2, sizeof e2));
                    else
                        snprintf(what, sizeof what, "shares storage with argument '%s' (#%d)%s "
                                 "(it is a view of it)", a->name, i + 1,
                                 elem_str(&args[i], k, e2, sizeof e2));
                    if (a->is_write)
                        snprintf(why, n, "output %d%s %s, but the schema declares no alias: %s. "
                                 "'%s' is written by the op, and an op that returns what it "
                                 "writes is an in-place op (named 'name_', returning 'Tensor(a!) "
                                 "self') or an out= op (overload 'out', returning 'Tensor(a!) "
                                 "out'); otherwise return a new tensor (tt_clone of it)", j,
                                 elem_str(&outs[j], m, e1, sizeof e1), what, rule, a->name);
                    else
                        snprintf(why, n, "output %d%s %s, but the schema declares no alias: %s. "
                                 "Return a new tensor (tt_clone of it), or declare the alias "
                                 "(Tensor(a) on the argument and on the return)", j,
                                 elem_str(&outs[j], m, e1, sizeof e1), what, rule);
                    return true;
                }
            }
            /* Among outputs: two declared views of inputs may share (a
             * split); anything else is two names for one buffer. */
            for (int j2 = 0; o && j2 <= j; j2++)
                for (int m2 = 0; m2 < (j2 < j ? value_count(&outs[j2]) : m); m2++) {
                    if (!same_storage(o, value_tensor(&outs[j2], m2)) ||
                        (tt_schema_return(s, j)->alias_set && tt_schema_return(s, j2)->alias_set))
                        continue;
                    char o1[64];
                    snprintf(o1, sizeof o1, "%d%s", j2, elem_str(&outs[j2], m2, e1, sizeof e1));
                    snprintf(why, n, "outputs %s and %d%s share storage: %s; return each as its "
                             "own tensor (tt_clone)", o1, j, elem_str(&outs[j], m, e2, sizeof e2),
                             rule);
                    return true;
                }
        }
    return false;
}

/* What output (j, m) aliases: a bit per argument it shares storage with,
 * and the first earlier output it shares storage with (-1: none). */
static uint64_t alias_args(const tt_value *args, int nargs, const tt_tensor *o)
{
    uint64_t mask = 0;
    for (int i = 0; o && i < nargs; i++)
        for (int k = 0; k < value_count(&args[i]); k++)
            if (same_storage(o, value_tensor(&args[i], k)))
                mask |= 1ull << i;
    return mask;
}

static int alias_outs(const tt_value *outs, int j, int m, const tt_tensor *o)
{
    for (int j2 = 0; o && j2 <= j; j2++)
        for (int m2 = 0; m2 < (j2 < j ? value_count(&outs[j2]) : m); m2++)
            if (same_storage(o, value_tensor(&outs[j2], m2)))
                return j2;
    return -1;
}

static void describe_alias(const tt_schema *s, uint64_t mask, int other, int arg, char *buf,
                           size_t n)
{
    if (arg >= 0 && (mask >> arg & 1))
        snprintf(buf, n, "shares storage with argument '%s' (#%d)",
                 tt_schema_arg(s, arg)->name, arg + 1);
    else if (other >= 0)
        snprintf(buf, n, "shares storage with output %d", other);
    else
        snprintf(buf, n, "shares storage with no argument (a new tensor)");
}

bool tt__alias_mismatch(const tt_schema *s, const tt_value *rargs, const tt_value *routs,
                        const tt_value *fargs, const tt_value *fouts, int nargs,
                        int nouts, char *why, size_t n)
{
    for (int j = 0; j < nouts; j++) {
        int cnt = value_count(&routs[j]) < value_count(&fouts[j]) ? value_count(&routs[j])
                                                                   : value_count(&fouts[j]);
        for (int m = 0; m < cnt; m++) {
            const tt_tensor *r = value_tensor(&routs[j], m), *f = value_tensor(&fouts[j], m);
            uint64_t rm = alias_args(rargs, nargs, r), fm = alias_args(fargs, nargs, f);
            int ro = alias_outs(routs, j, m, r), fo = alias_outs(fouts, j, m, f);
            if (rm == fm && ro == fo)
                continue;
            int arg = -1;
            for (int i = 0; i < nargs && arg < 0; i++)
                if ((rm ^ fm) >> i & 1)
                    arg = i;
            char a[160], b[160], e[48];
            describe_alias(s, rm, ro, arg, a, sizeof a);
            describe_alias(s, fm, fo, arg, b, sizeof b);
            snprintf(why, n, "output %d%s: aliasing differs: the real kernel's output %s, the "
                     "fake kernel's %s. The fake kernel must return views where the real "
                     "kernel does, and new tensors where it does", j,
                     elem_str(&routs[j], m, e, sizeof e), a, b);
            return true;
        }
    }
    return false;
}

/* ------------------------------------------------------------ snapshots */

typedef struct {
    int arg, elem; /* elem: the index in a Tensor[] argument, -1 for a Tensor */
    const tt_tensor *t;
    tt_tensor *copy; /* a contiguous copy of the values; NULL for a fake */
    int ndim;
    tt_size sizes[TT_MAX_DIMS], strides[TT_MAX_DIMS], offset;
} snapshot;

struct tt__snapshots {
    const tt_schema *schema;
    int n;
    snapshot s[];
};

static tt_tensor *copy_of(const tt_tensor *t)
{
    tt_tensor *c = tt__empty_impl(t->ndim, t->sizes, NULL, (tt_dtype)t->dtype, false);
    if (c && tt__copy_raw(c, t))
        c = tt_release(c);
    return c;
}

tt__snapshots *tt__snapshots_take(const tt_schema *schema, const tt_value *args, int nargs)
{
    int cap = 0;
    for (int i = 0; i < nargs; i++)
        if (!tt_schema_arg(schema, i)->is_write)
            cap += value_count(&args[i]);
    tt__snapshots *s = tt__calloc(1, sizeof *s + sizeof(snapshot) * (size_t)cap);
    if (!s)
        return NULL;
    s->schema = schema;
    for (int i = 0; i < nargs; i++) {
        if (tt_schema_arg(schema, i)->is_write)
            continue;
        for (int k = 0; k < value_count(&args[i]); k++) {
            const tt_tensor *t = value_tensor(&args[i], k);
            if (!t)
                continue;
            snapshot *p = &s->s[s->n];
            *p = (snapshot){i, args[i].kind == TT_V_TENSORS ? k : -1, t, NULL, t->ndim, {0},
                            {0}, t->offset};
            memcpy(p->sizes, t->sizes, sizeof(tt_size) * (size_t)t->ndim);
            memcpy(p->strides, t->strides, sizeof(tt_size) * (size_t)t->ndim);
            if (!t->storage->fake && !(p->copy = copy_of(t))) {
                tt__snapshots_free(s);
                return NULL;
            }
            s->n++;
        }
    }
    return s;
}

/* How snapshot p's tensor changed, into how ("" when it did not). */
static tt_status describe_change(const snapshot *p, char *how, size_t n)
{
    const tt_tensor *t = p->t;
    char a[256], b[256];
    how[0] = '\0';
    if (t->ndim != p->ndim || memcmp(t->sizes, p->sizes, sizeof(tt_size) * (size_t)p->ndim)) {
        tt_size_list_str(p->ndim, p->sizes, true, a, sizeof a);
        tt_size_list_str(t->ndim, t->sizes, true, b, sizeof b);
        snprintf(how, n, "its shape changed from %s to %s", a, b);
        return TT_OK;
    }
    if (memcmp(t->strides, p->strides, sizeof(tt_size) * (size_t)p->ndim) ||
        t->offset != p->offset) {
        tt_size_list_str(p->ndim, p->strides, true, a, sizeof a);
        tt_size_list_str(t->ndim, t->strides, true, b, sizeof b);
        snprintf(how, n, "its strides/offset changed from %s+%lld to %s+%lld", a,
                 (long long)p->offset, b, (long long)t->offset);
        return TT_OK;
    }
    if (!p->copy || tt_numel(p->copy) == 0)
        return TT_OK;
    tt_tensor *now = copy_of(t);
    if (!now)
        return tt_errcode();
    size_t es = tt_dtype_size((tt_dtype)t->dtype);
    int64_t count = 0, first = -1, numel = tt_numel(now);
    const char *x = tt__ptr(p->copy), *y = tt__ptr(now);
    for (int64_t e = 0; e < numel; e++)
        if (memcmp(x + (size_t)e * es, y + (size_t)e * es, es)) {
            if (first < 0)
                first = e;
            count++;
        }
    if (count)
        snprintf(how, n, "%lld of its %lld elements changed, the first at flat index %lld: "
                 "%g before, %g after", (long long)count, (long long)numel, (long long)first,
                 tt__load(x + (size_t)first * es, (tt_dtype)t->dtype),
                 tt__load(y + (size_t)first * es, (tt_dtype)t->dtype));
    tt_release(now);
    return TT_OK;
}

bool tt__snapshots_changed(const tt__snapshots *s, char *why, size_t n, tt_status *st)
{
    *st = TT_OK;
    for (int k = 0; k < s->n; k++) {
        char how[1200], elem[48] = "";
        if ((*st = describe_change(&s->s[k], how, sizeof how)))
            return true;
        if (!how[0])
            continue;
        const char *name = tt_schema_arg(s->schema, s->s[k].arg)->name;
        if (s->s[k].elem >= 0)
            snprintf(elem, sizeof elem, " (tensor %d of the list)", s->s[k].elem);
        snprintf(why, n, "the kernel wrote argument '%s' (#%d)%s, which the schema does not "
                 "mark written (%s); declare it (mutates_args = \"%s\", or 'Tensor(a!) %s' in "
                 "the schema), or write into a copy", name, s->s[k].arg + 1, elem, how, name,
                 name);
        return true;
    }
    return false;
}

void tt__snapshots_free(tt__snapshots *s)
{
    for (int k = 0; s && k < s->n; k++)
        tt_release(s->s[k].copy);
    tt__free(s);
}

/* ---------------------------------------------------------- checked call */

tt_status tt__checked_call(const tt_opdef *op, const tt_value *args, int nargs, tt_value *outs,
                           int nouts, tt_kernel_fn k)
{
    static const char ctx[] = "checked mode (TT_CHECK_OPS)";
    char why[1536];
    tt__snapshots *snaps = tt__snapshots_take(op->schema, args, nargs);
    tt_status st = snaps ? k((tt_frame *)&(struct tt_frame){op, args, nargs, outs, nouts, false})
                         : tt_errcode();
    tt_status read_st;
    if (!st && tt__snapshots_changed(snaps, why, sizeof why, &read_st))
        st = read_st ? read_st : tt_error(TT_EOPCHECK, "%s: %s: %s", op->name, ctx, why);
    tt__snapshots_free(snaps);
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
        if (!st && tt__alias_mismatch(op->schema, args, outs, fargs, fouts, nargs, nouts, why,
                                      sizeof why))
            st = tt_error(TT_EOPCHECK, "%s: %s: %s", op->name, ctx, why);
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
