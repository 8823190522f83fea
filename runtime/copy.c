/* Copies between any strides and dtypes, fill, contiguous/clone. */
#include "tensor_impl.h"

#include <string.h>

/* A stack-only alias of t with other sizes/strides, for iteration. It is
 * never retained, released or counted. */
static void alias_as(tt_tensor *out, const tt_tensor *t, int ndim,
                     const tt_size *sizes, const tt_size *strides)
{
    memcpy(out, t, sizeof *out);
    out->ndim = (int8_t)ndim;
    memcpy(out->sizes, sizes, sizeof(tt_size) * (size_t)ndim);
    memcpy(out->strides, strides, sizeof(tt_size) * (size_t)ndim);
}

/* src's strides when broadcast to `dst`'s shape, or an error. */
static tt_status broadcast_to(const char *fn, const tt_tensor *src,
                              const tt_tensor *dst, tt_size *strides)
{
    if (src->ndim > dst->ndim)
        goto bad;
    for (int i = dst->ndim - 1; i >= 0; i--) {
        int j = i - (dst->ndim - src->ndim);
        if (j < 0)
            strides[i] = 0;
        else if (tt__sz_eq(src->sizes[j], dst->sizes[i]))
            strides[i] = src->strides[j];
        else if (tt__sz_is_one(src->sizes[j]))
            strides[i] = 0;
        else
            goto bad;
    }
    return TT_OK;
bad:;
    char a[256], b[256];
    return tt_error(TT_ESHAPE, "%s: argument 'src' of shape %s cannot be broadcast "
                               "to the destination's shape %s", fn,
                    tt_shape_str(src, a, sizeof a), tt_shape_str(dst, b, sizeof b));
}

#define COPY_LOOP(name, T)                                                     \
    static void name(char **d, const int64_t *s, int64_t n, void *ctx)        \
    {                                                                          \
        (void)ctx;                                                             \
        char *o = d[0], *i = d[1];                                             \
        if (s[0] == sizeof(T) && s[1] == sizeof(T)) {                          \
            memcpy(o, i, (size_t)n * sizeof(T));                               \
            return;                                                            \
        }                                                                      \
        for (int64_t k = 0; k < n; k++)                                        \
            *(T *)(o + k * s[0]) = *(const T *)(i + k * s[1]);                 \
    }
COPY_LOOP(copy1, uint8_t)
COPY_LOOP(copy4, uint32_t)
COPY_LOOP(copy8, uint64_t)

typedef struct {
    tt_dtype out, in;
} convert_ctx;

static void convert_loop(char **d, const int64_t *s, int64_t n, void *vctx)
{
    const convert_ctx *c = vctx;
    for (int64_t k = 0; k < n; k++)
        tt__store(d[0] + k * s[0], c->out, tt__load(d[1] + k * s[1], c->in));
}

/* f32 <-> f64 are worth a direct loop: every autocast-free model mixes them. */
static void f32_to_f64(char **d, const int64_t *s, int64_t n, void *ctx)
{
    (void)ctx;
    for (int64_t k = 0; k < n; k++)
        *(double *)(d[0] + k * s[0]) = *(const float *)(d[1] + k * s[1]);
}

static void f64_to_f32(char **d, const int64_t *s, int64_t n, void *ctx)
{
    (void)ctx;
    for (int64_t k = 0; k < n; k++)
        *(float *)(d[0] + k * s[0]) = (float)*(const double *)(d[1] + k * s[1]);
}

/* PyTorch's memory-overlap rules for a write (at::has_internal_overlap,
 * at::get_overlap_status). A destination with elements sharing memory
 * cannot be written; a source overlapping the destination other than
 * exactly would be read after being overwritten (and the inner loop's
 * memcpy would be undefined). A non-dense operand is "too hard" for
 * PyTorch, which lets the copy through; so do we. */
enum { OVERLAP_NO, OVERLAP_FULL, OVERLAP_PARTIAL };

static int overlap_status(const tt_tensor *a, const tt_tensor *b)
{
    if (a == b)
        return OVERLAP_FULL;
    if (a->storage != b->storage || tt_numel(a) == 0 || tt_numel(b) == 0 ||
        !tt__is_non_overlapping_and_dense(a) || !tt__is_non_overlapping_and_dense(b))
        return OVERLAP_NO;
    if ((a->flags | b->flags) & TT_TF_HAS_SYM) {
        /* Symbolic extents (a symbolic trace): the same rule, its
         * comparisons decided through guards. */
        tt_size ea = (tt_size)tt_dtype_size((tt_dtype)a->dtype);
        tt_size eb = (tt_size)tt_dtype_size((tt_dtype)b->dtype);
        tt_size a0 = tt_sym_mul(a->offset, ea), a1 = tt_sym_add(a0, tt_sym_mul(tt_numel(a), ea));
        tt_size b0 = tt_sym_mul(b->offset, eb), b1 = tt_sym_add(b0, tt_sym_mul(tt_numel(b), eb));
        if (tt__sz_eq(a0, b0) && tt__sz_eq(a1, b1)) {
            bool same = a->ndim == b->ndim;
            for (int d = 0; same && d < a->ndim; d++)
                same = tt__sz_eq(a->strides[d], b->strides[d]);
            return same ? OVERLAP_FULL : OVERLAP_PARTIAL;
        }
        return tt__sz_lt(a0, b1) && tt__sz_lt(b0, a1) ? OVERLAP_PARTIAL : OVERLAP_NO;
    }
    size_t ea = tt_dtype_size((tt_dtype)a->dtype), eb = tt_dtype_size((tt_dtype)b->dtype);
    size_t a0 = (size_t)a->offset * ea, a1 = a0 + (size_t)tt_numel(a) * ea;
    size_t b0 = (size_t)b->offset * eb, b1 = b0 + (size_t)tt_numel(b) * eb;
    if (a0 == b0 && a1 == b1)
        return a->ndim == b->ndim &&
                       !memcmp(a->strides, b->strides, sizeof(tt_size) * (size_t)a->ndim)
                   ? OVERLAP_FULL
                   : OVERLAP_PARTIAL;
    return a0 < b1 && b0 < a1 ? OVERLAP_PARTIAL : OVERLAP_NO;
}

tt_status tt__check_write(const char *fn, const tt_tensor *dst, const tt_tensor *src)
{
    if (!src && !tt__is_non_overlapping_and_dense(dst))
        for (int d = 0; d < dst->ndim; d++)
            if (dst->strides[d] == 0 && tt__sz_gt(dst->sizes[d], 1))
                return tt_error(TT_EINVAL, "%s: unsupported operation: more than one "
                                           "element of the written-to tensor refers to a "
                                           "single memory location. Please clone() the "
                                           "tensor before performing the operation.", fn);
    if (src && overlap_status(dst, src) == OVERLAP_PARTIAL)
        return tt_error(TT_EINVAL, "%s: unsupported operation: some elements of the input "
                                   "tensor and the written-to tensor refer to a single "
                                   "memory location. Please clone() the tensor before "
                                   "performing the operation.", fn);
    return TT_OK;
}

tt_status tt__copy_raw(tt_tensor *dst, const tt_tensor *src)
{
    tt_size st[TT_MAX_DIMS];
    tt_status e = broadcast_to("tt_copy_", src, dst, st);
    if (e || (e = tt__check_write("tt_copy_", dst, NULL)) ||
        (e = tt__check_write("tt_copy_", dst, src)))
        return e;
    int ov = overlap_status(dst, src);
    if (ov == OVERLAP_FULL && dst->dtype == src->dtype)
        return TT_OK; /* every element onto itself */
    tt_tensor in;
    alias_as(&in, src, dst->ndim, dst->sizes, st);
    tt_tensor *ops[2] = {dst, &in};
    tt_dtype od = (tt_dtype)dst->dtype, id = (tt_dtype)src->dtype;
    if (od == id) {
        size_t es = tt_dtype_size(od);
        return tt_for_each(2, ops, es == 1 ? copy1 : es == 4 ? copy4 : copy8, NULL);
    }
    if (od == TT_F64 && id == TT_F32)
        return tt_for_each(2, ops, f32_to_f64, NULL);
    if (od == TT_F32 && id == TT_F64)
        return tt_for_each(2, ops, f64_to_f32, NULL);
    convert_ctx c = {od, id};
    return tt_for_each(2, ops, convert_loop, &c);
}

#define FILL_LOOP(name, T)                                                     \
    static void name(char **d, const int64_t *s, int64_t n, void *ctx)        \
    {                                                                          \
        T v = *(const T *)ctx;                                                 \
        for (int64_t k = 0; k < n; k++)                                        \
            *(T *)(d[0] + k * s[0]) = v;                                       \
    }
FILL_LOOP(fill1, uint8_t)
FILL_LOOP(fill4, uint32_t)
FILL_LOOP(fill8, uint64_t)

tt_status tt__fill_raw(tt_tensor *t, double value)
{
    /* Store the value once in t's dtype, then splat its bytes. */
    uint64_t bits = 0;
    tt__store(&bits, (tt_dtype)t->dtype, value);
    size_t es = tt_dtype_size((tt_dtype)t->dtype);
    return tt_for_each(1, &t, es == 1 ? fill1 : es == 4 ? fill4 : fill8, &bits);
}

/* ------------------------------------------------------- direct paths */

/* The public tt_copy_ & co. (ops/view_front.c) check their tensors, call
 * their op when a mode, fake mode or autograd needs it, and else land
 * here. */

tt_status tt__copy_direct(tt_tensor *dst, const tt_tensor *src)
{
    tt_status st;
    if (dst->storage->fake || src->storage->fake) {
        /* Metadata only: check the broadcast, write nothing. */
        tt_size strides[TT_MAX_DIMS];
        if ((st = broadcast_to("tt_copy_", src, dst, strides)))
            return st;
        if (!dst->storage->fake)
            return tt_error(TT_EFAKE, "tt_copy_: cannot copy a fake tensor into "
                                      "a real one");
    } else if ((st = tt__copy_raw(dst, src))) {
        return st;
    }
    tt_bump_version(dst);
    return TT_OK;
}

tt_status tt__fill_direct(tt_tensor *t, double value)
{
    tt_status st;
    if (!t->storage->fake && (st = tt__fill_raw(t, value)))
        return st;
    tt_bump_version(t);
    return TT_OK;
}

static tt_tensor *copy_into_new(const tt_tensor *t, const tt_size *strides,
                                tt_dtype dt)
{
    tt_tensor *out = tt__empty_impl(t->ndim, t->sizes, strides, dt, t->storage->fake);
    if (out && !t->storage->fake && tt__copy_raw(out, t))
        out = tt_release(out);
    return out;
}

tt_tensor *tt__contiguous_raw(const tt_tensor *t)
{
    /* Already contiguous: a new tensor viewing t (as the contiguous op's
     * kernel returns), not t itself with one more reference. Inside a
     * scope that extra reference would belong to nobody (t already has its
     * scope slot), so t would outlive tt_scope_end; a new tensor goes to
     * the scope like any result, and outside one the caller owns it. */
    if (t->flags & TT_TF_CONTIGUOUS)
        return tt__make_view(t, t->ndim, t->sizes, t->strides, t->offset);
    return copy_into_new(t, NULL, (tt_dtype)t->dtype);
}

tt_tensor *tt__clone_raw(const tt_tensor *t)
{
    tt_size st[TT_MAX_DIMS];
    tt__strides_like(t, st);
    return copy_into_new(t, st, (tt_dtype)t->dtype);
}

tt_tensor *tt__to_dtype_raw(const tt_tensor *t, tt_dtype dt)
{
    if ((unsigned)dt >= TT_DTYPE_COUNT) {
        tt_error(TT_EINVAL, "tt_to_dtype: argument 'dtype' is not a dtype (got %d)",
                 (int)dt);
        return NULL;
    }
    tt_size st[TT_MAX_DIMS];
    tt__strides_like(t, st);
    return copy_into_new(t, st, dt);
}
