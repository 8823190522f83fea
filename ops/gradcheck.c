/* tt_gradcheck: analytic gradients against central finite differences. */
#include "ops_impl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define MAX_IO 16

/* Offset (in elements) of the flat, row-major element k of t. */
static int64_t element_offset(const tt_tensor *t, int64_t k)
{
    int64_t off = 0;
    for (int d = t->ndim - 1; d >= 0; d--) {
        off += (k % t->sizes[d]) * t->strides[d];
        k /= t->sizes[d];
    }
    return off;
}

static double *slot(const tt_tensor *t, int64_t k)
{
    return (double *)tt__ptr(t) + element_offset(t, k);
}

static void release_all(tt_tensor **ts, int n)
{
    for (int i = 0; i < n; i++)
        ts[i] = tt_release(ts[i]);
}

/* Runs fn and checks its outputs. */
static tt_status run(tt_fn fn, int nin, tt_tensor **in, int nout, tt_tensor **out, void *ud)
{
    for (int i = 0; i < nout; i++)
        out[i] = NULL;
    tt_status st = fn(in, nin, out, nout, ud);
    if (!st)
        for (int i = 0; i < nout; i++)
            if (!out[i]) {
                st = tt_error(TT_EINVAL, "tt_gradcheck: the function returned no tensor "
                                         "for output %d", i);
                break;
            }
    if (st) {
        if (tt_errcode() == TT_OK)
            tt_error(st, "tt_gradcheck: the function failed (%s)", tt_status_name(st));
        release_all(out, nout);
    }
    return st;
}

/* Output element j of every output as f64, from a no-grad run. */
static tt_status eval_outputs(tt_fn fn, int nin, tt_tensor **in, int nout, void *ud,
                              double **vals, const int64_t *nel)
{
    tt_tensor *out[MAX_IO];
    tt_no_grad_begin();
    tt_status st = run(fn, nin, in, nout, out, ud);
    tt_no_grad_end();
    for (int o = 0; !st && o < nout; o++) {
        if (tt_numel(out[o]) != nel[o]) {
            st = tt_error(TT_ESHAPE, "tt_gradcheck: output %d changed size between runs", o);
            break;
        }
        tt_tensor *c = tt_to_dtype(out[o], TT_F64);
        st = c ? tt_to_buffer(c, vals[o], sizeof(double) * (size_t)nel[o]) : tt_errcode();
        tt_release(c);
    }
    /* On a failed run, run() has already released and cleared out[]. */
    release_all(out, nout);
    return st;
}

tt_status tt_gradcheck(tt_fn fn, int nin, tt_tensor **inputs, int nout,
                       const tt_gradcheck_opts *opts, void *ud)
{
    const char *name = "tt_gradcheck";
    double eps = opts && opts->eps > 0 ? opts->eps : 1e-6;
    double atol = opts && opts->atol > 0 ? opts->atol : 1e-5;
    double rtol = opts && opts->rtol > 0 ? opts->rtol : 1e-3;
    if (!fn || nin < 1 || nin > MAX_IO || !inputs || nout < 1 || nout > MAX_IO)
        return tt_error(TT_EINVAL, "%s: expects a function, 1 to %d inputs and 1 to %d "
                                   "outputs", name, MAX_IO, MAX_IO);
    int nrg = 0;
    for (int i = 0; i < nin; i++) {
        tt_status st = TT_CHECK_TENSOR(name, "inputs", inputs[i]);
        if (st)
            return st;
        if (!tt_requires_grad(inputs[i]))
            continue;
        if (inputs[i]->dtype != TT_F64)
            return tt_error(TT_EDTYPE, "%s: input %d is %s; inputs that require grad must "
                                       "be f64 for finite differences to be accurate",
                            name, i, tt_dtype_name((tt_dtype)inputs[i]->dtype));
        if (inputs[i]->storage->fake)
            return tt_error(TT_EFAKE, "%s: input %d is a fake tensor", name, i);
        nrg++;
    }
    if (nrg == 0)
        return tt_error(TT_EINVAL, "%s: no input requires grad; nothing to check", name);

    /* Output sizes from a first run. */
    tt_tensor *out[MAX_IO];
    int64_t nel[MAX_IO];
    tt_status st = run(fn, nin, inputs, nout, out, ud);
    if (st)
        return st;
    tt_tensor *templ[MAX_IO];
    for (int o = 0; o < nout; o++) {
        nel[o] = tt_numel(out[o]);
        templ[o] = out[o];
    }
    double *plus[MAX_IO] = {0}, *minus[MAX_IO] = {0};
    for (int o = 0; !st && o < nout; o++) {
        plus[o] = tt__calloc((size_t)(nel[o] ? nel[o] : 1), sizeof(double));
        minus[o] = tt__calloc((size_t)(nel[o] ? nel[o] : 1), sizeof(double));
        if (!plus[o] || !minus[o])
            st = tt_errcode();
    }

    int64_t total = 0; /* elements over all outputs */
    for (int o = 0; o < nout; o++)
        total += nel[o];
    for (int i = 0; !st && i < nin; i++) {
        tt_tensor *x = inputs[i];
        if (!tt_requires_grad(x))
            continue;
        int64_t nx = tt_numel(x);
        /* Numerical Jacobian, one input element (column) at a time. */
        int64_t njac = nx * total;
        double *jac = tt__calloc((size_t)(njac > 0 ? njac : 1), sizeof(double));
        if (!jac) {
            st = tt_errcode();
            break;
        }
        for (int64_t k = 0; !st && k < nx; k++) {
            double *p = slot(x, k), orig = *p;
            *p = orig + eps;
            st = eval_outputs(fn, nin, inputs, nout, ud, plus, nel);
            *p = orig - eps;
            if (!st)
                st = eval_outputs(fn, nin, inputs, nout, ud, minus, nel);
            *p = orig;
            for (int o = 0, base = 0; !st && o < nout; base += (int)nel[o], o++)
                for (int64_t j = 0; j < nel[o]; j++)
                    jac[k * total + base + j] = (plus[o][j] - minus[o][j]) / (2 * eps);
        }
        /* Analytic Jacobian, one output element (row) at a time, with a
         * one-hot gradient through tt_grad. */
        for (int o = 0, base = 0; !st && o < nout; base += (int)nel[o], o++) {
            if (!tt_dtype_is_float((tt_dtype)templ[o]->dtype))
                continue;
            for (int64_t j = 0; !st && j < nel[o]; j++) {
                tt_tensor *fresh[MAX_IO], *g = NULL, *onehot = NULL;
                st = run(fn, nin, inputs, nout, fresh, ud);
                if (st)
                    break;
                if (tt_requires_grad(fresh[o])) {
                    onehot = tt__empty_impl(fresh[o]->ndim, fresh[o]->sizes, NULL,
                                            (tt_dtype)fresh[o]->dtype, false);
                    st = onehot ? tt__fill_raw(onehot, 0) : tt_errcode();
                    if (!st) {
                        tt__store(tt__ptr(onehot) + j * (int64_t)tt_dtype_size((tt_dtype)onehot->dtype),
                                  (tt_dtype)onehot->dtype, 1.0);
                        st = tt_grad(1, &fresh[o], &onehot, 1, &x, &g);
                    }
                }
                for (int64_t k = 0; !st && k < nx; k++) {
                    double ana = g ? *slot(g, k) : 0, num = jac[k * total + base + j];
                    if (!(fabs(ana - num) <= atol + rtol * fabs(num)))
                        st = tt_error(TT_EAUTOGRAD,
                                      "%s: Jacobian mismatch for output %d with respect to "
                                      "input %d at input element %lld, output element "
                                      "%lld: numerical %.10g, analytical %.10g (atol %g, "
                                      "rtol %g)", name, o, i, (long long)k, (long long)j,
                                      num, ana, atol, rtol);
                }
                tt_release(g);
                tt_release(onehot);
                release_all(fresh, nout);
            }
        }
        tt__free(jac);
    }
    for (int o = 0; o < nout; o++) {
        tt__free(plus[o]);
        tt__free(minus[o]);
    }
    release_all(out, nout);
    return st;
}
