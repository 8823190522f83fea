/* Views: new tensors over the same storage with other sizes, strides and
 * offset. Error messages follow PyTorch's wording where it has one.
 *
 * These are the views' direct paths (tt__view_raw & co.): they dispatch
 * nothing. The public tt_view & co. (ops/view_front.c) check the tensor,
 * call the op when a mode, fake mode or autograd needs it, and else land
 * here; so do the ops' kernels (ops/view_ops.c). */
#include "tensor_impl.h"

#include <stdio.h>
#include <string.h>


/* Resolves a -1 in `sizes` against numel; checks the count matches. */
static tt_status infer_size(const char *fn, const tt_tensor *t, int ndim,
                            const int64_t *sizes, tt_size *out)
{
    if (ndim < 0 || ndim > TT_MAX_DIMS)
        return tt_error(TT_EINVAL, "%s: argument 'size' has %d dimensions; "
                                   "tensors have 0 to %d", fn, ndim, TT_MAX_DIMS);
    if (ndim > 0 && !sizes)
        return tt_error(TT_EINVAL, "%s: argument 'size' is NULL for %d dimensions",
                        fn, ndim);
    int infer = -1;
    tt_size known = 1;
    bool overflow = false;
    if (tt__sizes_check(fn, "size", ndim, sizes))
        return tt_errcode();
    for (int i = 0; i < ndim; i++) {
        if (sizes[i] == -1) {
            if (infer >= 0)
                return tt_error(TT_EINVAL, "%s: only one dimension can be inferred", fn);
            infer = i;
        } else if (sizes[i] < 0 && !tt_size_is_sym(sizes[i])) {
            return tt_error(TT_EINVAL, "%s: invalid shape dimension %lld", fn,
                            (long long)sizes[i]);
        } else if (tt_size_is_sym(known) || tt_size_is_sym(sizes[i])) {
            known = tt_sym_mul(known, sizes[i]);
        } else if (__builtin_mul_overflow(known, sizes[i], &known)) {
            overflow = true; /* matches no tensor's numel */
        }
        out[i] = sizes[i];
    }
    tt_size numel = tt_numel(t);
    if (overflow)
        goto bad;
    if (infer >= 0 && known != 0 && !tt_size_is_sym(known) && !tt_size_is_sym(numel) &&
        numel % known == 0) {
        out[infer] = numel / known;
        return TT_OK;
    }
    /* Symbolic: the count must divide (or match), decided through guards. */
    if (infer >= 0 && (tt_size_is_sym(known) || tt_size_is_sym(numel)) && known != 0 &&
        tt__sz_eq(tt_sym_mod(numel, known), 0)) {
        out[infer] = tt_sym_floordiv(numel, known);
        return TT_OK;
    }
    /* A guard on backed sizes, a graph break on data-dependent ones (their
     * hints are both -1, which would compare equal). */
    if (infer < 0 && tt__sz_eq(known, numel))
        return TT_OK;
bad:;
    char shape[256];
    tt_size_list_str(ndim, sizes, false, shape, sizeof shape);
    char n[64];
    tt_size_str(numel, n, sizeof n);
    return tt_error(TT_ESHAPE, "%s: shape '%s' is invalid for input of size %s",
                    fn, shape, n);
}

/* PyTorch's computeStride: strides for viewing (osz, ost) as nsz without a
 * copy, or false when some new dim would span two non-contiguous chunks. */
static bool view_strides(int on, const tt_size *osz, const tt_size *ost, int nn,
                         const tt_size *nsz, tt_size *nst)
{
    tt_size numel = 1;
    for (int i = 0; i < on; i++)
        numel = tt_sym_mul(numel, osz[i]);
    if (numel == 0 || on == 0) {
        tt__contiguous_strides(nn, nsz, nst);
        return true;
    }
    int vd = nn - 1;
    tt_size chunk = ost[on - 1], tnumel = 1, vnumel = 1;
    for (int td = on - 1; td >= 0; td--) {
        tnumel = tt_sym_mul(tnumel, osz[td]);
        if (td == 0 ||
            (!tt__sz_is_one(osz[td - 1]) && tt__sz_ne(ost[td - 1], tt_sym_mul(tnumel, chunk)))) {
            while (vd >= 0 && (tt__sz_lt(vnumel, tnumel) || tt__sz_is_one(nsz[vd]))) {
                nst[vd] = tt_sym_mul(vnumel, chunk);
                vnumel = tt_sym_mul(vnumel, nsz[vd]);
                vd--;
            }
            if (tt__sz_ne(vnumel, tnumel))
                return false;
            if (td > 0) {
                chunk = ost[td - 1];
                tnumel = 1;
                vnumel = 1;
            }
        }
    }
    return vd == -1;
}

tt_tensor *tt__view_raw(const tt_tensor *t, int ndim, const int64_t *sizes)
{
    tt_size nsz[TT_MAX_DIMS], nst[TT_MAX_DIMS];
    if (infer_size("tt_view", t, ndim, sizes, nsz))
        return NULL;
    if (!view_strides(t->ndim, t->sizes, t->strides, ndim, nsz, nst)) {
        char a[256], b[256], c[256];
        tt_size_list_str(ndim, nsz, false, c, sizeof c);
        tt_error(TT_ESHAPE,
                 "tt_view: view size %s is not compatible with input tensor's "
                 "size %s and stride %s (at least one dimension spans across "
                 "two contiguous subspaces). Use tt_reshape instead.",
                 c, tt_shape_str(t, a, sizeof a), tt_strides_str(t, b, sizeof b));
        return NULL;
    }
    return tt__make_view(t, ndim, nsz, nst, t->offset);
}

tt_tensor *tt__reshape_raw(const tt_tensor *t, int ndim, const int64_t *sizes)
{
    tt_size nsz[TT_MAX_DIMS], nst[TT_MAX_DIMS];
    if (infer_size("tt_reshape", t, ndim, sizes, nsz))
        return NULL;
    if (view_strides(t->ndim, t->sizes, t->strides, ndim, nsz, nst))
        return tt__make_view(t, ndim, nsz, nst, t->offset);
    /* No view exists: copy to contiguous memory, then view that. */
    tt_tensor *c = tt__contiguous_raw(t);
    if (!c)
        return NULL;
    tt__contiguous_strides(ndim, nsz, nst);
    tt_tensor *v = tt__make_view(c, ndim, nsz, nst, c->offset);
    tt_release(c);
    return v;
}

tt_tensor *tt__permute_raw(const tt_tensor *t, int ndim, const int64_t *dims)
{
    if (ndim > 0 && !dims) {
        tt_error(TT_EINVAL, "tt_permute: argument 'dims' is NULL for %d dimensions", ndim);
        return NULL;
    }
    if (ndim != t->ndim) {
        tt_error(TT_EINVAL, "tt_permute: number of dims don't match in permute "
                            "(input has %d dims, argument 'dims' has %d)",
                 t->ndim, ndim);
        return NULL;
    }
    tt_size sz[TT_MAX_DIMS], st[TT_MAX_DIMS];
    bool seen[TT_MAX_DIMS] = {false};
    for (int i = 0; i < ndim; i++) {
        if (dims[i] < -ndim || dims[i] >= ndim) {
            tt_error(TT_EINVAL, "tt_permute: argument 'dims' has %lld at index %d, "
                                "out of range for a %d-dim tensor (expected "
                                "[%d, %d])", (long long)dims[i], i, ndim, -ndim,
                     ndim - 1);
            return NULL;
        }
        int d = (int)(dims[i] < 0 ? dims[i] + ndim : dims[i]);
        if (seen[d]) {
            tt_error(TT_EINVAL, "tt_permute: duplicate dims are not allowed "
                                "(dim %d appears twice in argument 'dims')", d);
            return NULL;
        }
        seen[d] = true;
        sz[i] = t->sizes[d];
        st[i] = t->strides[d];
    }
    return tt__make_view(t, ndim, sz, st, t->offset);
}

tt_tensor *tt__transpose_raw(const tt_tensor *t, int dim0, int dim1)
{
    int a = tt__wrap_dim("tt_transpose", dim0, t->ndim);
    int b = a < 0 ? -1 : tt__wrap_dim("tt_transpose", dim1, t->ndim);
    if (b < 0)
        return NULL;
    if (t->ndim == 0)
        return tt__make_view(t, 0, NULL, NULL, t->offset);
    tt_size sz[TT_MAX_DIMS], st[TT_MAX_DIMS];
    memcpy(sz, t->sizes, sizeof sz);
    memcpy(st, t->strides, sizeof st);
    sz[a] = t->sizes[b], sz[b] = t->sizes[a];
    st[a] = t->strides[b], st[b] = t->strides[a];
    return tt__make_view(t, t->ndim, sz, st, t->offset);
}

tt_tensor *tt__t_raw(const tt_tensor *t)
{
    if (t->ndim > 2) {
        tt_error(TT_EINVAL, "tt_t: expects a tensor with <= 2 dimensions, but "
                            "self is %dD", t->ndim);
        return NULL;
    }
    return t->ndim < 2 ? tt__make_view(t, t->ndim, t->sizes, t->strides, t->offset)
                       : tt__transpose_raw(t, 0, 1);
}

/* True when v is a handle the shape environment knows. A start, end or
 * index in the handle range that it does not know is a plain (very
 * negative) integer from C, such as INT64_MIN for "from the start", as a
 * Python int is never a SymInt. */
static bool known_sym(tt_size v)
{
    if (!tt_size_is_sym(v))
        return false;
    if (tt_sym_add(v, 0) != -1)
        return true;
    tt_clear_error(); /* asked, not failed */
    return false;
}

/* v as an argument of the arithmetic: a known symbol or a plain integer;
 * one below every size that is no symbol becomes the least such integer
 * (every comparison with a size answers the same). */
static tt_size int_arg(tt_size v)
{
    return tt_size_is_sym(v) && !known_sym(v) ? TT_SYM_BASE + 1 : v;
}

tt_size tt__view_int_arg(tt_size v) { return int_arg(v); }

/* A size or an integer argument as text for a message: "8", "s0",
 * "s0 - 1", "-9223372036854775808". */
static const char *sz_text(tt_size s, char *buf, size_t n)
{
    if (tt_size_is_sym(s) && known_sym(s)) {
        /* with this trace's value where it has one: a decode step called
         * past its cache says "start (s5 = 8)", not only "start (s5)" */
        tt_size_str(s, buf, n);
        int64_t hint = tt_sym_hint(s);
        size_t used = strlen(buf);
        if (hint >= 0 && used < n)
            snprintf(buf + used, n - used, " = %lld", (long long)hint);
    } else
        snprintf(buf, n, "%lld", (long long)s);
    return buf;
}

/* The view of `len` elements of t's dim d from `start` every `step`
 * (checked by the caller). */
static tt_tensor *range_view(const tt_tensor *t, int d, tt_size start, tt_size len,
                             tt_size step)
{
    tt_size sz[TT_MAX_DIMS], st[TT_MAX_DIMS];
    memcpy(sz, t->sizes, sizeof sz);
    memcpy(st, t->strides, sizeof st);
    sz[d] = len;
    st[d] = tt_sym_mul(t->strides[d], step);
    tt_size off = tt_sym_add(t->offset, tt_sym_mul(start, t->strides[d]));
    if (len == -1 || st[d] == -1 || off == -1)
        return NULL; /* the symbolic arithmetic failed; its error is set */
    return tt__make_view(t, t->ndim, sz, st, off);
}

/* Sizes, starts, ends and indices may be symbols (PyTorch's SymInt
 * arguments): every decision below goes through tt__sz_*, which guards on
 * symbols, and arithmetic through tt_sym_*. */
tt_tensor *tt__slice_raw(const tt_tensor *t, int dim, int64_t start, int64_t end,
                         int64_t step)
{
    /* (tt_slice did this before dispatch already; twice is the same.) */
    start = int_arg(start), end = int_arg(end), step = int_arg(step);
    if (t->ndim == 0) {
        tt_error(TT_EINVAL, "tt_slice: slice() cannot be applied to a 0-dim tensor");
        return NULL;
    }
    int d = tt__wrap_dim("tt_slice", dim, t->ndim);
    if (d < 0)
        return NULL;
    char b1[64];
    if (tt__sz_le(step, 0)) {
        tt_error(TT_EINVAL, "tt_slice: argument 'step' must be positive (got %s)",
                 sz_text(step, b1, sizeof b1));
        return NULL;
    }
    tt_size n = t->sizes[d];
    /* Python's clamping of out-of-range bounds. */
    if (tt__sz_lt(start, 0))
        start = tt_sym_add(start, n);
    if (tt__sz_lt(end, 0))
        end = tt_sym_add(end, n);
    if (tt__sz_lt(start, 0))
        start = 0;
    else if (tt__sz_gt(start, n))
        start = n;
    if (tt__sz_lt(end, start))
        end = start;
    else if (tt__sz_gt(end, n))
        end = n;
    tt_size len;
    if (tt__sz_concrete2(start, end) && !tt_size_is_sym(step))
        len = (end - start + step - 1) / step;
    else if (tt__sz_eq(step, 1))
        len = tt_sym_sub(end, start);
    else
        len = tt_sym_floordiv(tt_sym_add(tt_sym_sub(end, start), tt_sym_sub(step, 1)), step);
    return range_view(t, d, start, len, step);
}

tt_tensor *tt__narrow_raw(const tt_tensor *t, int dim, int64_t start, int64_t len)
{
    if (t->ndim == 0) {
        tt_error(TT_EINVAL, "tt_narrow: narrow() cannot be applied to a 0-dim tensor");
        return NULL;
    }
    int d = tt__wrap_dim("tt_narrow", dim, t->ndim);
    if (d < 0 || (tt_size_is_sym(start) && tt__size_check("tt_narrow", "start", -1, start)) ||
        (tt_size_is_sym(len) && tt__size_check("tt_narrow", "length", -1, len)))
        return NULL;
    tt_size n = t->sizes[d];
    char b1[64], b2[64], b3[64];
    if (tt__sz_lt(int_arg(len), 0)) {
        tt_error(TT_EINVAL, "tt_narrow: argument 'length' must be non-negative (got %s)",
                 sz_text(len, b1, sizeof b1));
        return NULL;
    }
    tt_size neg_n = tt_sym_sub(0, n);
    if (tt__sz_lt(int_arg(start), neg_n) || tt__sz_gt(start, n)) {
        tt_error(TT_EINVAL, "tt_narrow: start out of range (expected to be in range "
                            "of [%s, %s], but got %s)", sz_text(neg_n, b1, sizeof b1),
                 sz_text(n, b2, sizeof b2), sz_text(start, b3, sizeof b3));
        return NULL;
    }
    if (tt__sz_lt(start, 0))
        start = tt_sym_add(start, n);
    if (tt__sz_gt(len, tt_sym_sub(n, start))) { /* (start + len could overflow) */
        tt_error(TT_EINVAL, "tt_narrow: start (%s) + length (%s) exceeds "
                            "dimension size (%s)", sz_text(start, b1, sizeof b1),
                 sz_text(len, b2, sizeof b2), sz_text(n, b3, sizeof b3));
        return NULL;
    }
    /* The view directly (not tt_slice(start, start + len)), so that its
     * size is len itself and not the expression (start + len) - start. */
    return range_view(t, d, start, len, 1);
}

tt_tensor *tt__select_raw(const tt_tensor *t, int dim, int64_t index)
{
    if (t->ndim == 0) {
        tt_error(TT_EINVAL, "tt_select: select() cannot be applied to a 0-dim tensor");
        return NULL;
    }
    int d = tt__wrap_dim("tt_select", dim, t->ndim);
    if (d < 0)
        return NULL;
    tt_size n = t->sizes[d];
    if (tt__sz_lt(int_arg(index), tt_sym_sub(0, n)) || tt__sz_ge(index, n)) {
        char s[256], i[64];
        tt_error(TT_EINVAL, "tt_select: index %s out of range for tensor of size "
                            "%s at dimension %d", sz_text(index, i, sizeof i),
                 tt_shape_str(t, s, sizeof s), d);
        return NULL;
    }
    if (tt__sz_lt(index, 0))
        index = tt_sym_add(index, n);
    tt_size sz[TT_MAX_DIMS], st[TT_MAX_DIMS];
    int k = 0;
    for (int i = 0; i < t->ndim; i++)
        if (i != d) {
            sz[k] = t->sizes[i];
            st[k++] = t->strides[i];
        }
    tt_size off = tt_sym_add(t->offset, tt_sym_mul(index, t->strides[d]));
    if (off == -1)
        return NULL; /* the symbolic arithmetic failed; its error is set */
    return tt__make_view(t, t->ndim - 1, sz, st, off);
}

tt_tensor *tt__expand_raw(const tt_tensor *t, int ndim, const int64_t *sizes)
{
    char a[256], b[256];
    if (ndim > 0 && !sizes) {
        tt_error(TT_EINVAL, "tt_expand: argument 'size' is NULL for %d dimensions", ndim);
        return NULL;
    }
    if (ndim <= TT_MAX_DIMS && tt__sizes_check("tt_expand", "size", ndim, sizes))
        return NULL;
    if (ndim < t->ndim || ndim > TT_MAX_DIMS) {
        tt_error(TT_EINVAL, "tt_expand: the number of sizes provided (%d) must be "
                            "greater or equal to the number of dimensions in the "
                            "tensor (%d) and at most %d", ndim, t->ndim, TT_MAX_DIMS);
        return NULL;
    }
    tt_size sz[TT_MAX_DIMS], st[TT_MAX_DIMS];
    for (int i = ndim - 1; i >= 0; i--) {
        int j = i - (ndim - t->ndim); /* matching dim of t, or < 0 */
        int64_t want = sizes[i];
        if (j < 0) {
            if (want < 0 && !tt_size_is_sym(want)) {
                tt_error(TT_EINVAL, "tt_expand: the expanded size of the tensor "
                                    "(%lld) isn't allowed in a leading, "
                                    "non-existing dimension %d", (long long)want, i);
                return NULL;
            }
            /* PyTorch's inferExpandGeometry: a new leading dim of size 1
             * gets the stride of a contiguous outer dim; others step 0. */
            sz[i] = want;
            /* (t->ndim first: a 0-dim t expanded to a data-dependent
             * size, a sum's gradient, asks nothing of that size) */
            st[i] = t->ndim > 0 && tt__sz_is_one(want) ? tt_sym_mul(sz[i + 1], st[i + 1]) : 0;
            continue;
        }
        if (want == -1)
            want = t->sizes[j];
        if (t->sizes[j] == 1 && tt_size_is_sym(want)) {
            /* A size 1 broadcast to a symbol asks nothing of it: a backed
             * symbol is never 1 (0 and 1 are specialized), and a
             * data-dependent one (nonzero's count) has no value to ask. */
            sz[i] = want;
            st[i] = 0;
        } else if (tt__sz_eq(t->sizes[j], want)) {
            sz[i] = want;
            st[i] = t->strides[j];
        } else if (tt__sz_is_one(t->sizes[j]) && (want >= 0 || tt_size_is_sym(want))) {
            sz[i] = want;
            st[i] = 0;
        } else {
            char w[64], have[64];
            tt_size_str(want, w, sizeof w);
            tt_size_str(t->sizes[j], have, sizeof have);
            tt_size_list_str(ndim, sizes, false, a, sizeof a);
            tt_error(TT_ESHAPE, "tt_expand: the expanded size of the tensor (%s) "
                                "must match the existing size (%s) at non-singleton "
                                "dimension %d.  Target sizes: %s.  Tensor sizes: %s",
                     w, have, i, a, tt_shape_str(t, b, sizeof b));
            return NULL;
        }
    }
    /* As PyTorch: a view whose element count overflows int64 is refused
     * (broadcasting a [1, 1] to [2^40, 2^40] is not a tensor). */
    if (tt__check_sizes("tt_expand", ndim, sz, NULL))
        return NULL;
    return tt__make_view(t, ndim, sz, st, t->offset);
}

tt_tensor *tt__squeeze_raw(const tt_tensor *t, int dim)
{
    int d = tt__wrap_dim("tt_squeeze", dim, t->ndim);
    if (d < 0)
        return NULL;
    if (t->ndim == 0 || !tt__sz_is_one(t->sizes[d]))
        return tt__make_view(t, t->ndim, t->sizes, t->strides, t->offset);
    tt_size sz[TT_MAX_DIMS], st[TT_MAX_DIMS];
    int k = 0;
    for (int i = 0; i < t->ndim; i++)
        if (i != d) {
            sz[k] = t->sizes[i];
            st[k++] = t->strides[i];
        }
    return tt__make_view(t, k, sz, st, t->offset);
}

tt_tensor *tt__squeeze_all_raw(const tt_tensor *t)
{
    tt_size sz[TT_MAX_DIMS], st[TT_MAX_DIMS];
    int k = 0;
    for (int i = 0; i < t->ndim; i++)
        if (!tt__sz_is_one(t->sizes[i])) {
            sz[k] = t->sizes[i];
            st[k++] = t->strides[i];
        }
    return tt__make_view(t, k, sz, st, t->offset);
}

tt_tensor *tt__unsqueeze_raw(const tt_tensor *t, int dim)
{
    int d = tt__wrap_dim("tt_unsqueeze", dim, t->ndim + 1);
    if (d < 0)
        return NULL;
    if (t->ndim == TT_MAX_DIMS) {
        tt_error(TT_EINVAL, "tt_unsqueeze: a tensor has at most %d dimensions",
                 TT_MAX_DIMS);
        return NULL;
    }
    tt_size sz[TT_MAX_DIMS], st[TT_MAX_DIMS];
    for (int i = 0, k = 0; i <= t->ndim; i++) {
        if (i == d) {
            sz[i] = 1;
            /* PyTorch: the new dim's stride is size*stride of the next. */
            st[i] = d < t->ndim ? tt_sym_mul(t->sizes[d], t->strides[d]) : 1;
            continue;
        }
        sz[i] = t->sizes[k];
        st[i] = t->strides[k++];
    }
    return tt__make_view(t, t->ndim + 1, sz, st, t->offset);
}

tt_tensor *tt__flatten_raw(const tt_tensor *t, int start_dim, int end_dim)
{
    if (t->ndim == 0) {
        int64_t one = 1;
        return tt__reshape_raw(t, 1, &one);
    }
    int s = tt__wrap_dim("tt_flatten", start_dim, t->ndim);
    int e = s < 0 ? -1 : tt__wrap_dim("tt_flatten", end_dim, t->ndim);
    if (e < 0)
        return NULL;
    if (s > e) {
        tt_error(TT_EINVAL, "tt_flatten: flatten() has invalid args: start_dim (%d) "
                            "cannot come after end_dim (%d)", s, e);
        return NULL;
    }
    int64_t sz[TT_MAX_DIMS];
    int k = 0;
    for (int i = 0; i < t->ndim; i++) {
        if (i > s && i <= e) {
            sz[k - 1] = tt_sym_mul(sz[k - 1], t->sizes[i]);
            continue;
        }
        sz[k++] = t->sizes[i];
    }
    return tt__reshape_raw(t, k, sz);
}

tt_status tt__as_strided_check(int ndim, const int64_t *sizes, const int64_t *strides,
                               int64_t storage_offset)
{
    const char *fn = "tt_as_strided";
    tt_status st;
    if ((st = tt__check_sizes(fn, ndim, sizes, NULL)) ||
        (strides && (st = tt__sizes_check(fn, "stride", ndim, strides))) ||
        (st = tt__size_check(fn, "storage_offset", -1, storage_offset)))
        return st;
    return TT_OK;
}

tt_tensor *tt__as_strided_raw(const tt_tensor *t, int ndim, const int64_t *sizes,
                              const int64_t *strides, int64_t storage_offset)
{
    const char *fn = "tt_as_strided";
    if (tt__as_strided_check(ndim, sizes, strides, storage_offset) ||
        tt__check_sizes(fn, ndim, sizes, NULL))
        return NULL;
    if (ndim > 0 && !strides) {
        tt_error(TT_EINVAL, "%s: argument 'stride' is NULL", fn);
        return NULL;
    }
    for (int i = 0; i < ndim; i++)
        if (strides[i] < 0 && !tt_size_is_sym(strides[i])) {
            tt_error(TT_EINVAL, "%s: negative strides are not supported (argument "
                                "'stride' has %lld at index %d)", fn,
                     (long long)strides[i], i);
            return NULL;
        }
    if (storage_offset < 0 && !tt_size_is_sym(storage_offset)) {
        tt_error(TT_EINVAL, "%s: argument 'storage_offset' must be non-negative "
                            "(got %lld)", fn, (long long)storage_offset);
        return NULL;
    }
    size_t elem = tt_dtype_size((tt_dtype)t->dtype), need = 0;
    bool sym = tt_size_is_sym(storage_offset);
    for (int i = 0; i < ndim; i++)
        sym = sym || tt_size_is_sym(sizes[i]) || tt_size_is_sym(strides[i]);
    /* A fake storage over symbolic sizes has no byte count to check, also
     * through a view of concrete sizes (x of [1, s0] viewed as [2] after
     * a guard s0 == 2). */
    bool check = !sym && !(t->storage->fake && t->storage->sym_extent);
    bool fits = check && tt__span_bytes(ndim, sizes, strides, storage_offset, elem, &need);
    if (check && (!fits || need > t->storage->nbytes)) {
        char a[256], b[256], n[64];
        tt_size_list_str(ndim, sizes, false, a, sizeof a);
        tt_size_list_str(ndim, strides, false, b, sizeof b);
        if (fits)
            snprintf(n, sizeof n, "%zu", need);
        else
            snprintf(n, sizeof n, "more than 2^63 bytes"); /* (the span overflows) */
        tt_error(TT_EINVAL, "%s: sizes %s, strides %s, storage offset %lld, and "
                            "itemsize %zu requiring a storage size of %s are out "
                            "of bounds for storage of size %zu", fn, a, b,
                 (long long)storage_offset, elem, n, t->storage->nbytes);
        return NULL;
    }
    return tt__make_view(t, ndim, sizes, strides, storage_offset);
}

tt_tensor *tt__detach_raw(const tt_tensor *t)
{
    return tt__make_view(t, t->ndim, t->sizes, t->strides, t->offset);
}
