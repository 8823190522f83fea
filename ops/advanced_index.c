/* Built-in ops of the ADV_INDEX family (runtime/builtin_ops.h): masked_fill,
 * PyTorch's advanced indexing (index.Tensor, index_put, index_put_) and
 * nonzero.
 *
 * Advanced indexing follows PyTorch's AdvancedIndex: a bool (or uint8)
 * index is its nonzero, one long index per dim it covers; the long indices
 * broadcast together to a shape B; the result holds B in place of the
 * indexed dims when those are adjacent, else B first and the other dims
 * after in order. Every element of the result is then a pair (b, r): b a
 * position of B, r one of the dims no index covers. Both kernels work on
 * two offset tables per side, one over b and one over r, built once
 * (linear in B and R), so the copy loop is a sum and a load. */
#include "elementwise_impl.h"
#include "tt_index.h"

#include <float.h>

static bool is_fake_t(const tt_tensor *t) { return t && t->storage->fake; }

/* ------------------------------------------------------------ masked_fill */

typedef struct {
    uint64_t value; /* the fill value's bytes in the result's dtype */
    size_t es;
} fill_ctx;

/* The unit-step run for one element size: a select the compiler
 * vectorizes (a copy per element through memcpy of a runtime size does
 * not; 16M f32 ran at a tenth of memory speed). */
#define FILL_RUN(T)                                                              \
    do {                                                                         \
        T *restrict o = (T *)d[0], fill;                                         \
        const T *restrict x = (const T *)d[1];                                   \
        const uint8_t *restrict m = (const uint8_t *)d[2];                       \
        memcpy(&fill, &c->value, sizeof fill);                                   \
        for (int64_t k = 0; k < n; k++) {                                        \
            T v = x[k]; /* read always: a plain load, not a masked one */        \
            o[k] = m[k] ? fill : v;                                              \
        }                                                                        \
    } while (0)

CPU_CLONES static void masked_fill_loop(char **d, const int64_t *s, int64_t n, void *vctx)
{
    const fill_ctx *c = vctx;
    if (s[0] == (int64_t)c->es && s[1] == (int64_t)c->es && s[2] == 1) {
        switch (c->es) {
        case 1: FILL_RUN(uint8_t); return;
        case 2: FILL_RUN(uint16_t); return;
        case 4: FILL_RUN(uint32_t); return;
        case 8: FILL_RUN(uint64_t); return;
        default: break;
        }
    }
    for (int64_t k = 0; k < n; k++) {
        bool m = *(const uint8_t *)(d[2] + k * s[2]) != 0; /* bool or uint8 */
        memcpy(d[0] + k * s[0], m ? (const char *)&c->value : d[1] + k * s[1], c->es);
    }
}

/* Whether v does not fit dtype dt, as c10's checked conversion of a
 * Scalar decides: integers may wrap into an unsigned type from as far
 * below 0 as its maximum (-1 is 255 in uint8), floats may not; a float
 * type takes infinities and NaN, but no finite value past its range. */
static bool overflows(double v, bool integral, tt_dtype dt)
{
    switch (dt) {
    case TT_U8: return integral ? v > 255 || v < -255 : !(v >= 0 && v <= 255);
    case TT_I32: return !(v >= -2147483648.0 && v <= 2147483647.0);
    case TT_I64: return !(v >= -9223372036854775808.0 && v < 9223372036854775808.0);
    case TT_F32: return isfinite(v) && fabs(v) > FLT_MAX;
    default: return false; /* bool, f64 */
    }
}

/* self with value where mask holds: the broadcast shape of the two,
 * contiguous (PyTorch clones the expanded self contiguous, then fills).
 * value is read only for real inputs (value_t, a 0-dim tensor, or v). */
static tt_tensor *masked_fill(const tt_tensor *self, const tt_tensor *mask,
                              const tt_tensor *value_t, double v, bool is_int_scalar)
{
    const char *op = tt__op_label(TT_OP_MASKED_FILL_SCALAR);
    tt_dtype mdt = tt_dtype_of(mask), dt = tt_dtype_of(self);
    /* uint8 masks: PyTorch 1.13 takes them (deprecated, with a warning). */
    if (mdt != TT_BOOL && mdt != TT_U8) {
        tt_error(TT_EDTYPE, "%s: argument 'mask' (#2): expected a bool mask, got %s", op,
                 tt_dtype_name(mdt));
        return NULL;
    }
    if (value_t && tt_ndim(value_t) != 0) {
        tt_error(TT_ESHAPE, "%s: argument 'value' (#3): expected a 0-dim value tensor, got "
                            "%d dims", op, tt_ndim(value_t));
        return NULL;
    }
    const tt_tensor *ins[2] = {self, mask};
    int nd;
    tt_size sizes[TT_MAX_DIMS];
    if (tt__broadcast(op, 2, ins, (const char *[]){"self", "mask"}, (const int[]){1, 2}, &nd,
                      sizes))
        return NULL;
    bool fake = tt__any_fake(2, ins) || is_fake_t(value_t);
    tt_tensor *out = tt__ops_new(fake, nd, sizes, NULL, dt);
    if (!out || fake || tt_numel(out) == 0)
        return out;
    bool integral = !value_t ? v == floor(v) && is_int_scalar
                             : !tt_dtype_is_float(tt_dtype_of(value_t));
    if (value_t)
        v = tt__load(tt__ptr(value_t), tt_dtype_of(value_t));
    if (overflows(v, integral, dt)) {
        tt_error(TT_EINVAL, "%s: argument 'value' (#3): value %g cannot be converted to %s "
                            "without overflow", op, v, tt_dtype_name(dt));
        return tt_release(out);
    }
    fill_ctx c = {0, tt_dtype_size(dt)};
    tt__store(&c.value, dt, v); /* PyTorch casts: 2.7 is 2 in an int tensor */
    if (tt_is_contiguous(self) && tt_is_contiguous(mask) && tt_numel(self) == tt_numel(out) &&
        tt_numel(mask) == tt_numel(out)) {
        /* one flat range, its result streamed past the cache when large,
         * as the elementwise ops' */
        flat_job j = {.loop = masked_fill_loop,
                      .data = {tt__ptr(out), tt__ptr(self), tt__ptr(mask)},
                      .strides = {(int64_t)c.es, (int64_t)c.es, 1},
                      .nops = 3,
                      .ctx = &c};
        run_flat(&j, tt_numel(out));
        return out;
    }
    tt_tensor xs, xm;
    tt__broadcast_alias(&xs, self, nd, sizes);
    tt__broadcast_alias(&xm, mask, nd, sizes);
    if (tt_for_each(3, (tt_tensor *[]){out, &xs, &xm}, masked_fill_loop, &c))
        return tt_release(out);
    return out;
}

static tt_status masked_fill_kernel(tt_frame *f)
{
    tt_tensor *self, *mask, *value = NULL;
    double v = 0;
    bool integral = false;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &self)) || (st = tt_arg_tensor(f, 1, &mask)))
        return st;
    if (tt_frame_arg(f, 2)->kind == TT_V_TENSOR)
        st = tt_arg_tensor(f, 2, &value);
    else
        st = tt_arg_scalar(f, 2, &v, &integral);
    if (st)
        return st;
    tt_tensor *r = masked_fill(self, mask, value, v, integral);
    return r ? tt_return(f, 0, r) : tt_errcode();
}

/* Saves the mask (slot 0). */
static tt_status setup_masked_fill(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                                   const tt_value *out, int nout)
{
    (void)nin, (void)out, (void)nout;
    return tt_ctx_save_for_backward(ctx, 1, (tt_tensor *[]){in[1].u.t});
}

/* PyTorch's: self gets grad.masked_fill(mask, 0) (the engine sums it back
 * to self's shape); a value tensor gets the sum of grad where mask holds. */
static tt_status masked_fill_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                      tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    tt_status st = TT_OK;
    tt_tensor *mask = SAVED(0);
    if (NEED(0))
        st = tt__put_grad(ctx, gi, 0, tt_where_scalar(mask, 0, g[0]));
    if (!st && KIND_OF(tt_ctx_userdata(ctx)) == 1 && NEED(2)) {
        tt_scope_begin();
        tt_tensor *r = tt_keep(tt_sum_all(tt_where_other_scalar(mask, g[0], 0)));
        tt_scope_end();
        st = tt__put_grad(ctx, gi, 2, r);
    }
    return st;
}

/* ------------------------------------ masked_scatter and masked_select */

static inline void copy_elem(char *d, const char *s, size_t es)
{
    switch (es) {
    case 8: memcpy(d, s, 8); break;
    case 4: memcpy(d, s, 4); break;
    case 2: memcpy(d, s, 2); break;
    default: memcpy(d, s, 1); break;
    }
}

/* A new contiguous copy of t broadcast to (nd, sizes) (real tensors). */
static tt_tensor *dense_over(const tt_tensor *t, int nd, const tt_size *sizes)
{
    tt_tensor *out = tt__ops_new(false, nd, sizes, NULL, tt_dtype_of(t));
    tt_tensor al;
    tt__broadcast_alias(&al, t, nd, sizes);
    tt__refresh_flags(&al);
    if (out && tt__copy_raw(out, &al))
        out = tt_release(out);
    return out;
}

static tt_status want_mask(const char *op, const tt_tensor *mask)
{
    tt_dtype mdt = tt_dtype_of(mask);
    if (mdt == TT_BOOL || mdt == TT_U8) /* uint8: PyTorch 1.13 takes it, deprecated */
        return TT_OK;
    return tt_error(TT_EDTYPE, "%s: argument 'mask' (#2): expected a bool mask, got %s", op,
                    tt_dtype_name(mdt));
}

/* The broadcast shape of a and the mask, a contiguous copy of the mask
 * over it (real calls), and its count of set elements. */
static tt_status mask_over(const char *op, const tt_tensor *a, const char *aname,
                           const tt_tensor *mask, int *nd, tt_size *sizes, tt_tensor **mc,
                           int64_t *count)
{
    const tt_tensor *ins[2] = {a, mask};
    tt_status st = tt__broadcast(op, 2, ins, (const char *[]){aname, "mask"},
                                 (const int[]){1, 2}, nd, sizes);
    if (st || !mc)
        return st;
    *mc = dense_over(mask, *nd, sizes);
    if (!*mc)
        return tt_errcode();
    const uint8_t *m = (const uint8_t *)tt__ptr(*mc);
    int64_t n = tt_numel(*mc), c = 0;
    for (int64_t i = 0; i < n; i++)
        c += m[i] != 0;
    *count = c;
    return TT_OK;
}

/* masked_scatter(self, mask, source): self (broadcast with mask, in a new
 * contiguous tensor) with source's elements, in source's row-major order,
 * written where mask holds, in the result's row-major order. */
static tt_tensor *masked_scatter(const tt_tensor *self, const tt_tensor *mask,
                                 const tt_tensor *source)
{
    const char *op = tt__op_label(TT_OP_MASKED_SCATTER);
    if (want_mask(op, mask))
        return NULL;
    if (tt_dtype_of(source) != tt_dtype_of(self)) {
        tt_error(TT_EDTYPE, "%s: argument 'source' (#3): expected self and source to have the "
                            "same dtype, got %s and %s", op, tt_dtype_name(tt_dtype_of(self)),
                 tt_dtype_name(tt_dtype_of(source)));
        return NULL;
    }
    bool fake = is_fake_t(self) || is_fake_t(mask) || is_fake_t(source);
    int nd;
    tt_size sizes[TT_MAX_DIMS];
    tt_tensor *mc = NULL;
    int64_t count = 0;
    if (mask_over(op, self, "self", mask, &nd, sizes, fake ? NULL : &mc, &count))
        return NULL;
    tt_tensor *out = NULL;
    if (!fake && count > tt_numel(source)) {
        tt_error(TT_ESHAPE, "%s: argument 'source' (#3): the mask has %lld set elements, the "
                            "source only %lld", op, (long long)count,
                 (long long)tt_numel(source));
        goto done;
    }
    out = tt__ops_new(fake, nd, sizes, NULL, tt_dtype_of(self));
    if (!out || fake)
        goto done;
    tt_tensor al;
    tt__broadcast_alias(&al, self, nd, sizes);
    tt__refresh_flags(&al);
    tt_tensor *sc = tt__copy_raw(out, &al) ? NULL : tt__contiguous_raw(source);
    if (!sc) {
        out = tt_release(out);
        goto done;
    }
    size_t es = tt_dtype_size(tt_dtype_of(self));
    const uint8_t *m = (const uint8_t *)tt__ptr(mc);
    const char *sp = tt__ptr(sc);
    char *op_ = tt__ptr(out);
    for (int64_t i = 0, k = 0, n = tt_numel(out); i < n; i++)
        if (m[i])
            copy_elem(op_ + (size_t)i * es, sp + (size_t)(k++) * es, es);
    tt_release(sc);
done:
    tt_release(mc);
    return out;
}

static tt_status masked_scatter_kernel(tt_frame *f)
{
    tt_tensor *self, *mask, *source;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &self)) || (st = tt_arg_tensor(f, 1, &mask)) ||
        (st = tt_arg_tensor(f, 2, &source)))
        return st;
    tt_tensor *r = masked_scatter(self, mask, source);
    return r ? tt_return(f, 0, r) : tt_errcode();
}

/* masked_scatter_backward(grad, mask, sizes): the gradient of source, of
 * shape sizes: grad's elements where mask holds, in order, then zeros
 * (PyTorch 2's op of that name; its size needs no data, so it traces). */
static tt_status masked_scatter_backward_kernel(tt_frame *f)
{
    const char *op = tt__op_label(TT_OP_MASKED_SCATTER_BACKWARD);
    tt_tensor *g, *mask;
    const int64_t *sz;
    int nd;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &g)) || (st = tt_arg_tensor(f, 1, &mask)) ||
        (st = tt_arg_ints(f, 2, &sz, &nd)) || (st = want_mask(op, mask)))
        return st;
    bool fake = tt_frame_is_fake(f) || is_fake_t(g) || is_fake_t(mask);
    int bnd;
    tt_size bs[TT_MAX_DIMS];
    tt_tensor *mc = NULL;
    int64_t count = 0;
    if ((st = mask_over(op, g, "grad_output", mask, &bnd, bs, fake ? NULL : &mc, &count)))
        return st;
    tt_tensor *out = tt__ops_new(fake, nd, sz, NULL, tt_dtype_of(g));
    if (!out || fake) {
        tt_release(mc);
        return out ? tt_return(f, 0, out) : tt_errcode();
    }
    if (count > tt_numel(out)) {
        st = tt_error(TT_ESHAPE, "%s: the mask has %lld set elements, the source only %lld", op,
                      (long long)count, (long long)tt_numel(out));
    } else {
        tt_tensor *gc = dense_over(g, bnd, bs);
        if (!gc) {
            st = tt_errcode();
        } else {
            size_t es = tt_dtype_size(tt_dtype_of(g));
            memset(tt__ptr(out), 0, (size_t)tt_numel(out) * es);
            const uint8_t *m = (const uint8_t *)tt__ptr(mc);
            for (int64_t i = 0, k = 0, n = tt_numel(gc); i < n; i++)
                if (m[i])
                    copy_elem(tt__ptr(out) + (size_t)(k++) * es, tt__ptr(gc) + (size_t)i * es, es);
            tt_release(gc);
        }
    }
    tt_release(mc);
    if (st) {
        tt_release(out);
        return st;
    }
    return tt_return(f, 0, out);
}

/* masked_scatter: self gets grad where mask does not hold; source gets
 * masked_scatter_backward (the engine sums self's back to its shape). */
static tt_status setup_masked_scatter(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                                      const tt_value *out, int nout)
{
    (void)nin, (void)out, (void)nout;
    tt_status st = tt_ctx_save_for_backward(ctx, 1, (tt_tensor *[]){in[1].u.t});
    return st ? st : tt_ctx_save_shape(ctx, "source", in[2].u.t);
}

static tt_status masked_scatter_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                         tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    tt_status st = TT_OK;
    tt_tensor *mask = SAVED(0);
    if (NEED(0))
        st = tt__put_grad(ctx, gi, 0, tt_where_scalar(mask, 0, g[0]));
    if (!st && NEED(2)) {
        const int64_t *shape;
        int nd;
        if ((st = tt_ctx_get_ints(ctx, "source", &shape, &nd)))
            return st;
        st = tt__put_grad(ctx, gi, 2,
                          tt__call_op(TT_OP_MASKED_SCATTER_BACKWARD,
                                      TT_ARGS(tt_v_tensor(g[0]), tt_v_tensor(mask),
                                              tt_v_ints(nd, shape))));
    }
    return st;
}

/* ------------------------------------------------------ nonzero positions */

/* The positions of the non-zero elements of a contiguous tensor, in
 * row-major order, for nonzero and for a mask used as an index: in
 * parallel, in chunks counted first and then written from their offsets
 * in the count (the same result on any thread count). col[j] receives
 * dim j's coordinate of each position. */
enum { NZ_CHUNKS = 64 };
typedef struct {
    const char *p;
    tt_dtype dt; /* x != 0 per dtype: NaN counts, -0.0 does not */
    int nd;
    const tt_size *sizes;
    int64_t n, per;
    int64_t count[NZ_CHUNKS + 1]; /* per chunk, then their offsets */
    int64_t *col[TT_MAX_DIMS];
} nz_scan;

/* M(T) for the C type of dtype dt (bool and u8 read as bytes). */
#define NZ_BY_DTYPE(dt, M)                                                     \
    switch (dt) {                                                              \
    case TT_F64: M(double); break;                                             \
    case TT_F32: M(float); break;                                              \
    case TT_I64: M(int64_t); break;                                            \
    case TT_I32: M(int32_t); break;                                            \
    default: M(uint8_t); break;                                                \
    }

/* Non-zero elements among [b, e), one loop per dtype (it vectorizes). */
#define NZ_COUNT(T_)                                                           \
    do {                                                                       \
        const T_ *x = (const T_ *)z->p;                                        \
        for (int64_t i = b; i < e; i++)                                        \
            k += x[i] != 0;                                                    \
    } while (0)

static void nz_count_task(int64_t c0, int64_t c1, void *vp)
{
    nz_scan *z = vp;
    for (int64_t c = c0; c < c1; c++) {
        int64_t b = c * z->per, e = b + z->per < z->n ? b + z->per : z->n, k = 0;
        NZ_BY_DTYPE(z->dt, NZ_COUNT);
        z->count[c] = k;
    }
}

/* The positions of the run's non-zero elements, written without a branch
 * on the data (a random mask mispredicted about every other element):
 * each element writes its coordinates at `at`, which only a non-zero
 * one moves on. Up to `end`, the chunk's own part of the output: once
 * there, the rest of the chunk is zeros. */
#define NZ_ROW(T_)                                                             \
    do {                                                                       \
        const T_ *x = (const T_ *)z->p + i;                                    \
        for (int64_t t = 0; t < run && at < end; t++) {                        \
            for (int j = 0; j < last; j++)                                     \
                z->col[j][at] = pos[j];                                        \
            z->col[last][at] = pos[last] + t;                                  \
            at += x[t] != 0;                                                   \
        }                                                                      \
    } while (0)

static void nz_write_task(int64_t c0, int64_t c1, void *vp)
{
    nz_scan *z = vp;
    for (int64_t c = c0; c < c1; c++) {
        int64_t b = c * z->per, e = b + z->per < z->n ? b + z->per : z->n;
        int64_t at = z->count[c], pos[TT_MAX_DIMS] = {0};
        for (int64_t j = z->nd - 1, rem = b; j >= 0; j--) { /* b's coordinates */
            pos[j] = z->sizes[j] ? rem % z->sizes[j] : 0;
            rem = z->sizes[j] ? rem / z->sizes[j] : 0;
        }
        const int last = z->nd - 1;
        const int64_t end = z->count[c + 1]; /* where the next chunk starts */
        if (last < 0) /* a 0-dim tensor: no coordinates to write */
            continue;
        for (int64_t i = b; i < e && at < end;) {
            /* along the last dim at once, then the next row's coordinates */
            int64_t run = z->sizes[last] - pos[last];
            run = run < e - i ? run : e - i;
            NZ_BY_DTYPE(z->dt, NZ_ROW);
            i += run;
            pos[last] += run;
            for (int j = last; j > 0 && pos[j] >= z->sizes[j]; j--)
                pos[j] = 0, pos[j - 1]++;
        }
    }
}

/* Counts t's non-zero elements (contiguous t) into z; nz_write then
 * writes their coordinates into z->col. */
static int64_t nz_count(nz_scan *z, const tt_tensor *t)
{
    z->p = tt__ptr(t);
    z->dt = tt_dtype_of(t);
    z->nd = tt_ndim(t);
    z->sizes = tt_sizes(t);
    z->n = tt_numel(t);
    z->per = (z->n + NZ_CHUNKS - 1) / NZ_CHUNKS;
    if (z->per < 1)
        z->per = 1;
    int64_t chunks = (z->n + z->per - 1) / z->per, total = 0;
    tt_parallel_for(chunks, (32768 + z->per - 1) / z->per, nz_count_task, z);
    for (int64_t c = 0; c < chunks; c++) {
        int64_t k = z->count[c];
        z->count[c] = total;
        total += k;
    }
    z->count[chunks] = total;
    return total;
}

static void nz_write(nz_scan *z)
{
    int64_t chunks = (z->n + z->per - 1) / z->per;
    tt_parallel_for(chunks, (32768 + z->per - 1) / z->per, nz_write_task, z);
}

/* The nonzero positions of a real bool/uint8 mask as `k` i64 tensors of
 * its count, one per mask dim, in row-major order. */
static tt_status mask_indices(const tt_tensor *mask, tt_tensor **out)
{
    int k = tt_ndim(mask);
    tt_tensor *mc = tt__contiguous_raw(mask);
    if (!mc)
        return tt_errcode();
    nz_scan z;
    int64_t count = nz_count(&z, mc);
    tt_status st = TT_OK;
    for (int j = 0; j < k && !st; j++)
        if (!(out[j] = tt__ops_new(false, 1, &count, NULL, TT_I64)))
            st = tt_errcode();
        else
            z.col[j] = (int64_t *)tt__ptr(out[j]);
    if (!st && count > 0)
        nz_write(&z);
    tt_release(mc);
    return st;
}

/* masked_select's values: chunk c of the mask (as nz_count cut it) copies
 * the selected elements of src from its offset, without a branch on the
 * mask, as nz_write_task writes positions. */
typedef struct {
    nz_scan z;
    const char *src;
    char *dst;
    size_t es;
} nz_select;

#define NZ_SELECT(T_)                                                          \
    do {                                                                       \
        const T_ *x = (const T_ *)s->src;                                      \
        T_ *o = (T_ *)s->dst;                                                  \
        for (int64_t i = b; i < e && at < end; i++) {                          \
            o[at] = x[i];                                                      \
            at += m[i] != 0;                                                   \
        }                                                                      \
    } while (0)

static void nz_select_task(int64_t c0, int64_t c1, void *vp)
{
    nz_select *s = vp;
    const uint8_t *m = (const uint8_t *)s->z.p;
    for (int64_t c = c0; c < c1; c++) {
        int64_t b = c * s->z.per, e = b + s->z.per < s->z.n ? b + s->z.per : s->z.n;
        int64_t at = s->z.count[c], end = s->z.count[c + 1];
        switch (s->es) {
        case 8: NZ_SELECT(uint64_t); break;
        case 4: NZ_SELECT(uint32_t); break;
        case 2: NZ_SELECT(uint16_t); break;
        default: NZ_SELECT(uint8_t); break;
        }
    }
}

/* masked_select(self, mask) -> 1-d: self's elements (broadcast with mask)
 * where mask holds, in row-major order. The count is data: a fake call
 * makes an unbacked size, at most the broadcast numel when known. */
static tt_tensor *masked_select(tt_frame *f, const tt_tensor *self, const tt_tensor *mask)
{
    const char *op = tt__op_label(TT_OP_MASKED_SELECT);
    if (want_mask(op, mask))
        return NULL;
    bool fake = is_fake_t(self) || is_fake_t(mask);
    int nd;
    tt_size sizes[TT_MAX_DIMS];
    tt_tensor *mc = NULL;
    int64_t count = 0;
    if (mask_over(op, self, "self", mask, &nd, sizes, fake ? NULL : &mc, &count))
        return NULL;
    if (fake) {
        if (!f) {
            tt_error(TT_EINTERNAL, "%s: a fake input outside a fake kernel", op);
            return NULL;
        }
        tt_size numel = 1;
        bool sym = false;
        for (int d = 0; d < nd; d++) {
            sym = sym || tt_size_is_sym(sizes[d]);
            numel = sym ? 0 : numel * sizes[d];
        }
        tt_size u = sym ? tt_frame_new_dynamic_size(f)
                        : tt_frame_new_dynamic_size_bounded(f, 0, numel);
        return u ? tt__ops_new(true, 1, &u, NULL, tt_dtype_of(self)) : NULL;
    }
    tt_tensor *out = tt__ops_new(false, 1, &count, NULL, tt_dtype_of(self));
    tt_tensor *sc = out ? dense_over(self, nd, sizes) : NULL;
    if (sc) {
        nz_select sel = {.src = tt__ptr(sc), .dst = tt__ptr(out),
                         .es = tt_dtype_size(tt_dtype_of(self))};
        nz_count(&sel.z, mc); /* its chunks' offsets; the total is count */
        int64_t chunks = (sel.z.n + sel.z.per - 1) / sel.z.per;
        tt_parallel_for(chunks, (32768 + sel.z.per - 1) / sel.z.per, nz_select_task, &sel);
    } else {
        out = tt_release(out);
    }
    tt_release(sc);
    tt_release(mc);
    return out;
}

static tt_status masked_select_kernel(tt_frame *f)
{
    tt_tensor *self, *mask;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &self)) || (st = tt_arg_tensor(f, 1, &mask)))
        return st;
    tt_tensor *r = masked_select(tt_frame_is_fake(f) ? f : NULL, self, mask);
    return r ? tt_return(f, 0, r) : tt_errcode();
}

/* masked_select: PyTorch's masked_select_backward, zeros of the broadcast
 * shape with grad scattered where mask holds (the engine sums it back to
 * self's shape). */
static tt_status setup_masked_select(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                                     const tt_value *out, int nout)
{
    (void)nin, (void)out, (void)nout;
    const tt_tensor *ins[2] = {in[0].u.t, in[1].u.t};
    int nd;
    tt_size sizes[TT_MAX_DIMS];
    tt_status st = tt__broadcast(tt__op_label(TT_OP_MASKED_SELECT), 2, ins,
                                 (const char *[]){"self", "mask"}, (const int[]){1, 2}, &nd,
                                 sizes);
    if (!st)
        st = tt_ctx_save_for_backward(ctx, 1, (tt_tensor *[]){in[1].u.t});
    return st ? st : tt_ctx_save_ints(ctx, "shape", nd, sizes);
}

static tt_status masked_select_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                        tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    if (!NEED(0))
        return TT_OK;
    const int64_t *shape;
    int nd;
    tt_status st = tt_ctx_get_ints(ctx, "shape", &shape, &nd);
    if (st)
        return st;
    tt_scope_begin();
    tt_tensor *z = tt__call_op(TT_OP_FULL, TT_ARGS(tt_v_ints(nd, shape), tt_v_int(0),
                                                   tt_v_dtype(tt_dtype_of(g[0]))));
    tt_tensor *r = tt_keep(z ? tt_masked_scatter(z, SAVED(0), g[0]) : NULL);
    tt_scope_end();
    return tt__put_grad(ctx, gi, 0, r);
}

/* ---------------------------------------------------- advanced indexing */

/* An indexing call taken apart. idx[k] (a new reference, i64) indexes
 * self's dim dims[k]; the idx broadcast to bsizes (bnd dims). The result
 * has rnd dims: B at result dims [bpos, bpos + bnd), and the dims no index
 * covers (rest_self[j] of self, at result dim rest_out[j]). */
typedef struct {
    int nidx, dims[TT_MAX_DIMS];
    tt_tensor *idx[TT_MAX_DIMS];
    int bnd, bpos;
    tt_size bsizes[TT_MAX_DIMS];
    int rnd;
    tt_size rsizes[TT_MAX_DIMS];
    int nrest, rest_self[TT_MAX_DIMS], rest_out[TT_MAX_DIMS];
} ix_plan;

/* True when self or any index of the plan is fake. */
static bool plan_fake(const ix_plan *p, const tt_tensor *self)
{
    bool fake = is_fake_t(self);
    for (int k = 0; k < p->nidx; k++)
        fake = fake || is_fake_t(p->idx[k]);
    return fake;
}

static void plan_free(ix_plan *p)
{
    for (int k = 0; k < p->nidx; k++)
        tt_release(p->idx[k]);
    p->nidx = 0;
}

/* t seen broadcast to (nd, sizes), as tt__broadcast_alias, without
 * comparing symbolic sizes (the broadcast was checked): only a concrete 1
 * broadcast to another size steps 0. */
static void ix_alias(tt_tensor *out, const tt_tensor *t, int nd, const tt_size *sizes)
{
    memcpy(out, t, sizeof *out);
    out->ndim = (int8_t)nd;
    for (int d = nd - 1; d >= 0; d--) {
        int k = d - (nd - t->ndim);
        bool one = k < 0 || (t->sizes[k] == 1 && sizes[d] != 1);
        out->sizes[d] = sizes[d];
        out->strides[d] = one ? 0 : t->strides[k];
    }
}

/* A size only the real kernel will know (a bool index's count). */
static bool unbacked(tt_size s) { return tt_size_is_sym(s) && tt_sym_hint(s) < 0; }

/* The index tensors' broadcast shape. An unbacked size cannot be
 * compared while tracing; here it takes the other tensors' size when
 * they have one other than 1 (the only size with which the real call can
 * succeed: the real kernel, whose sizes are known, checks it), as
 * PyTorch's deferred runtime asserts do. */
static tt_status broadcast_indices(const char *op, ix_plan *p)
{
    bool any = false;
    for (int k = 0; k < p->nidx; k++)
        for (int j = 0; j < tt_ndim(p->idx[k]); j++)
            any = any || unbacked(tt_sizes(p->idx[k])[j]);
    if (!any) {
        const char *names[TT_MAX_DIMS];
        int argno[TT_MAX_DIMS];
        for (int k = 0; k < p->nidx; k++)
            names[k] = "indices", argno[k] = 2;
        return tt__broadcast(op, p->nidx, (const tt_tensor *const *)p->idx, names, argno, &p->bnd,
                             p->bsizes);
    }
    p->bnd = 0;
    for (int k = 0; k < p->nidx; k++)
        p->bnd = tt_ndim(p->idx[k]) > p->bnd ? tt_ndim(p->idx[k]) : p->bnd;
    for (int d = 0; d < p->bnd; d++) {
        tt_size r = 1, u = 0;
        bool known = false;
        for (int k = 0; k < p->nidx; k++) {
            int j = d - (p->bnd - tt_ndim(p->idx[k]));
            tt_size s = j >= 0 ? tt_sizes(p->idx[k])[j] : 1;
            if (unbacked(s)) {
                u = u ? u : s;
            } else if (!tt__sz_eq(s, 1)) {
                if (known && !tt__sz_eq(r, s))
                    return tt_error(TT_ESHAPE, "%s: argument 'indices' (#2): shape mismatch: "
                                               "indexing tensors could not be broadcast together",
                                    op);
                r = s, known = true;
            }
        }
        p->bsizes[d] = known || !u ? r : u;
    }
    return TT_OK;
}

/* Reads `indices` (n entries, NULL for None) against self: PyTorch's
 * expandTensors, broadcast and result placement. `f` is the frame of a
 * fake call (a bool index then has a data-dependent count); NULL
 * otherwise. argno is the indices' 1-based position, for messages. */
static tt_status plan_make(const char *op, tt_frame *f, const tt_tensor *self,
                           tt_tensor *const *indices, int n, ix_plan *p)
{
    char s1[128], s2[128];
    memset(p, 0, sizeof *p);
    int nd = tt_ndim(self);
    if (n > nd)
        return tt_error(TT_EINVAL, "%s: argument 'indices' (#2): too many indices for tensor "
                                   "of dimension %d (got %d)", op, nd, n);
    bool fake = is_fake_t(self);
    for (int i = 0; i < n; i++)
        fake = fake || is_fake_t(indices[i]);
    bool covered[TT_MAX_DIMS] = {false};
    int d = 0;
    tt_status st = TT_OK;
    for (int i = 0; i < n && !st; i++) {
        const tt_tensor *t = indices[i];
        if (!t) {
            d++;
            continue;
        }
        tt_dtype dt = tt_dtype_of(t);
        if (dt == TT_BOOL || dt == TT_U8) {
            int k = tt_ndim(t);
            if (k == 0) {
                st = tt_error(TT_EINVAL, "%s: argument 'indices' (#2): index %d is a 0-dim bool "
                                         "mask, which selects no dim (not supported)", op, i);
                break;
            }
            if (d + k > nd) {
                st = tt_error(TT_EINVAL, "%s: argument 'indices' (#2): too many indices for "
                                         "tensor of dimension %d (got %d)", op, nd, d + k);
                break;
            }
            for (int j = 0; j < k && !st; j++)
                if (!tt_size_eq(tt_sizes(t)[j], tt_sizes(self)[d + j]))
                    st = tt_error(TT_EINVAL, "%s: argument 'indices' (#2): the shape of the mask "
                                             "%s at index %d does not match the shape of the "
                                             "indexed tensor %s at index %d", op,
                                  tt_shape_str(t, s1, sizeof s1), j,
                                  tt_shape_str(self, s2, sizeof s2), d + j);
            if (st)
                break;
            tt_tensor *cols[TT_MAX_DIMS] = {NULL};
            if (fake) {
                /* How many elements are set is data: a new unbacked size. */
                int64_t bound = -1;
                tt_size mn = tt_numel(t);
                if (!tt_size_is_sym(mn))
                    bound = mn;
                tt_size u = 0;
                if (!f)
                    st = tt_error(TT_EINTERNAL, "%s: a fake bool index outside a fake kernel", op);
                else if (!(u = bound >= 0 ? tt_frame_new_dynamic_size_bounded(f, 0, bound)
                                          : tt_frame_new_dynamic_size(f)))
                    st = tt_errcode();
                for (int j = 0; j < k && !st; j++)
                    if (!(cols[j] = tt__ops_new(true, 1, &u, NULL, TT_I64)))
                        st = tt_errcode();
            } else {
                st = mask_indices(t, cols);
            }
            for (int j = 0; j < k; j++) {
                if (!cols[j])
                    continue;
                p->dims[p->nidx] = d + j;
                p->idx[p->nidx++] = cols[j];
                covered[d + j] = true;
            }
            d += k;
        } else if (dt == TT_I64) {
            p->dims[p->nidx] = d;
            p->idx[p->nidx++] = tt_retain((tt_tensor *)t);
            covered[d++] = true;
        } else {
            st = tt_error(TT_EDTYPE, "%s: argument 'indices' (#2): tensors used as indices must "
                                     "be long, byte or bool tensors, got %s at index %d", op,
                          tt_dtype_name(dt), i);
        }
    }
    if (!st && p->nidx == 0)
        st = tt_error(TT_EINVAL, "%s: argument 'indices' (#2): expected at least one index "
                                 "tensor, got only None", op);
    if (!st)
        st = broadcast_indices(op, p);
    if (st) {
        plan_free(p);
        return st;
    }
    /* Adjacent indexed dims: B in their place; else B first. */
    bool adjacent = p->dims[p->nidx - 1] - p->dims[0] == p->nidx - 1;
    p->bpos = adjacent ? p->dims[0] : 0;
    if (p->bnd + nd - p->nidx > TT_MAX_DIMS) {
        plan_free(p);
        return tt_error(TT_ESHAPE, "%s: the result would have %d dims, at most %d", op,
                        p->bnd + nd - p->nidx, TT_MAX_DIMS);
    }
    int o = 0;
    for (int dd = 0; dd < nd; dd++) {
        if (dd == (adjacent ? p->dims[0] : 0))
            for (int j = 0; j < p->bnd; j++)
                p->rsizes[o++] = p->bsizes[j];
        if (covered[dd])
            continue;
        p->rest_self[p->nrest] = dd;
        p->rest_out[p->nrest++] = o;
        p->rsizes[o++] = tt_sizes(self)[dd];
    }
    p->rnd = o;
    return TT_OK;
}

/* The result's strides, as PyTorch's TensorIterator lays out index's
 * output: from self restrided (stride 0 on B, self's on the other dims;
 * self's indexed dims moved to the front when B goes first) and the index
 * tensors viewed over the result's dims. */
static void plan_result_strides(const ix_plan *p, const tt_tensor *self, tt_size *strides)
{
    tt_tensor al[1 + TT_MAX_DIMS];
    const tt_tensor *ins[1 + TT_MAX_DIMS];
    memcpy(&al[0], self, sizeof al[0]);
    al[0].ndim = (int8_t)p->rnd;
    for (int j = 0; j < p->bnd; j++) {
        al[0].sizes[p->bpos + j] = p->bsizes[j];
        al[0].strides[p->bpos + j] = 0;
    }
    for (int j = 0; j < p->nrest; j++) {
        al[0].sizes[p->rest_out[j]] = tt_sizes(self)[p->rest_self[j]];
        al[0].strides[p->rest_out[j]] = tt_strides(self)[p->rest_self[j]];
    }
    tt__refresh_flags(&al[0]);
    ins[0] = &al[0];
    int n = p->nidx < 7 ? p->nidx : 7; /* tt__elementwise_strides reads 8 */
    for (int k = 0; k < n; k++) {
        tt_tensor e;
        ix_alias(&e, p->idx[k], p->bnd, p->bsizes);
        memcpy(&al[1 + k], p->idx[k], sizeof al[0]);
        tt_tensor *a = &al[1 + k];
        a->ndim = (int8_t)p->rnd;
        for (int dd = 0; dd < p->rnd; dd++) {
            a->sizes[dd] = 1;
            a->strides[dd] = dd < p->bpos ? 0 : 1;
        }
        for (int j = 0; j < p->bnd; j++) {
            a->sizes[p->bpos + j] = e.sizes[j];
            a->strides[p->bpos + j] = e.strides[j];
        }
        tt__refresh_flags(a);
        tt_tensor b;
        ix_alias(&b, a, p->rnd, p->rsizes);
        al[1 + k] = b;
        tt__refresh_flags(&al[1 + k]);
        ins[1 + k] = &al[1 + k];
    }
    tt__elementwise_strides(1 + n, ins, p->rnd, p->rsizes, strides);
}

/* Offsets of the (b, r) pairs: over B (row-major), self's element through
 * the indices (checked against their dims first: a bad index fails before
 * anything is written) and a result-shaped tensor's (`res`: strides over
 * the result's dims); over R, the same two through the rest dims. */
typedef struct {
    int64_t B, R;
    int64_t *self_b, *res_b, *self_r, *res_r; /* one allocation */
} ix_offsets;

static void offsets_free(ix_offsets *o)
{
    tt__free(o->self_b);
    o->self_b = NULL;
}

static tt_status offsets_make(const char *op, const ix_plan *p, const tt_tensor *self,
                              const tt_size *self_strides, const tt_size *res_strides,
                              ix_offsets *o)
{
    int64_t B = 1, R = 1;
    for (int j = 0; j < p->bnd; j++)
        B *= p->bsizes[j];
    for (int j = 0; j < p->nrest; j++)
        R *= tt_sizes(self)[p->rest_self[j]];
    o->B = B, o->R = R;
    size_t n = 2 * (size_t)B + 2 * (size_t)R;
    o->self_b = tt__malloc(sizeof(int64_t) * (n ? n : 1));
    if (!o->self_b)
        return tt_error(TT_ENOMEM, "%s: out of memory for %lld index offsets", op, (long long)n);
    o->res_b = o->self_b + B, o->self_r = o->res_b + B, o->res_r = o->self_r + R;
    /* Over B: the indices seen broadcast, with a row-major counter. */
    tt_tensor e[TT_MAX_DIMS];
    const char *base[TT_MAX_DIMS];
    for (int k = 0; k < p->nidx; k++) {
        ix_alias(&e[k], p->idx[k], p->bnd, p->bsizes);
        base[k] = tt__ptr(p->idx[k]);
    }
    int64_t pos[TT_MAX_DIMS] = {0}, ioff[TT_MAX_DIMS] = {0}, roff = 0;
    for (int64_t b = 0; b < B; b++) {
        int64_t so = 0;
        for (int k = 0; k < p->nidx; k++) {
            int64_t v = ((const int64_t *)base[k])[ioff[k]];
            int64_t size = tt_sizes(self)[p->dims[k]];
            if (v < -size || v >= size) {
                offsets_free(o);
                return tt_error(TT_EINVAL, "%s: argument 'indices' (#2): index %lld is out of "
                                           "bounds for dimension %d with size %lld", op,
                                (long long)v, p->dims[k], (long long)size);
            }
            so += (v < 0 ? v + size : v) * self_strides[p->dims[k]];
        }
        o->self_b[b] = so;
        o->res_b[b] = roff;
        for (int j = p->bnd - 1; j >= 0; j--) {
            for (int k = 0; k < p->nidx; k++)
                ioff[k] += e[k].strides[j];
            roff += res_strides[p->bpos + j];
            if (++pos[j] < p->bsizes[j])
                break;
            for (int k = 0; k < p->nidx; k++)
                ioff[k] -= e[k].strides[j] * p->bsizes[j];
            roff -= res_strides[p->bpos + j] * p->bsizes[j];
            pos[j] = 0;
        }
    }
    /* Over R: the rest dims, row-major in the result's order. */
    int64_t rpos[TT_MAX_DIMS] = {0}, so = 0;
    roff = 0;
    for (int64_t r = 0; r < R; r++) {
        o->self_r[r] = so;
        o->res_r[r] = roff;
        for (int j = p->nrest - 1; j >= 0; j--) {
            int64_t size = tt_sizes(self)[p->rest_self[j]];
            so += self_strides[p->rest_self[j]];
            roff += res_strides[p->rest_out[j]];
            if (++rpos[j] < size)
                break;
            so -= self_strides[p->rest_self[j]] * size;
            roff -= res_strides[p->rest_out[j]] * size;
            rpos[j] = 0;
        }
    }
    return TT_OK;
}

/* The index tensors made contiguous (the offset walk reads them through
 * broadcast strides of a contiguous base; a view keeps its offset). */
static tt_status plan_contiguous_indices(ix_plan *p)
{
    for (int k = 0; k < p->nidx; k++) {
        tt_tensor *c = tt__contiguous_raw(p->idx[k]);
        if (!c)
            return tt_errcode();
        tt_release(p->idx[k]);
        p->idx[k] = c;
    }
    return TT_OK;
}

typedef struct {
    const ix_offsets *o;
    const char *src;
    char *dst;
    size_t es;
    tt_dtype dt;
    bool accumulate;
} ix_copy;

/* index: result[res_b + res_r] = self[self_b + self_r], over flat (b, r). */
static void index_task(int64_t begin, int64_t end, void *vp)
{
    const ix_copy *c = vp;
    const ix_offsets *o = c->o;
    size_t es = c->es;
    for (int64_t i = begin; i < end;) {
        int64_t b = i / o->R, r = i % o->R, stop = end - i < o->R - r ? r + (end - i) : o->R;
        const char *s = c->src + o->self_b[b] * (int64_t)es;
        char *d = c->dst + o->res_b[b] * (int64_t)es;
        for (; r < stop; r++, i++)
            copy_elem(d + o->res_r[r] * (int64_t)es, s + o->self_r[r] * (int64_t)es, es);
    }
}

static inline void add_elem(char *d, const char *s, tt_dtype dt)
{
    switch (dt) {
    case TT_F64: *(double *)d += *(const double *)s; break;
    case TT_F32: *(float *)d += *(const float *)s; break;
    case TT_I64: *(int64_t *)d = (int64_t)((uint64_t) * (int64_t *)d + (uint64_t) * (const int64_t *)s); break;
    case TT_I32: *(int32_t *)d = (int32_t)((uint32_t) * (int32_t *)d + (uint32_t) * (const int32_t *)s); break;
    case TT_U8: *(uint8_t *)d = (uint8_t)(*(uint8_t *)d + *(const uint8_t *)s); break;
    default: *(uint8_t *)d = (*(uint8_t *)d | *(const uint8_t *)s) != 0; break; /* bool */
    }
}

/* index_put: out[self_b + self_r] (+)= values[res_b + res_r]. Each task
 * owns a range of r, which no other r shares a destination with, and
 * visits b in order: with duplicate indices the last write wins (and sums
 * add up in the same order) on any thread count. */
static void put_task(int64_t begin, int64_t end, void *vp)
{
    const ix_copy *c = vp;
    const ix_offsets *o = c->o;
    int64_t es = (int64_t)c->es;
    for (int64_t b = 0; b < o->B; b++) {
        char *d = c->dst + o->self_b[b] * es;
        const char *s = c->src + o->res_b[b] * es;
        if (c->accumulate)
            for (int64_t r = begin; r < end; r++)
                add_elem(d + o->self_r[r] * es, s + o->res_r[r] * es, c->dt);
        else
            for (int64_t r = begin; r < end; r++)
                copy_elem(d + o->self_r[r] * es, s + o->res_r[r] * es, c->es);
    }
}

#define IX_GRAIN 32768

/* index.Tensor: self[indices]. */
static tt_tensor *index_impl(tt_frame *f, const tt_tensor *self, tt_tensor *const *indices,
                             int n)
{
    const char *op = tt__op_label(TT_OP_INDEX_TENSOR);
    ix_plan p;
    if (plan_make(op, f, self, indices, n, &p))
        return NULL;
    bool fake = plan_fake(&p, self);
    tt_size strides[TT_MAX_DIMS];
    plan_result_strides(&p, self, strides);
    tt_tensor *out = tt__ops_new(fake, p.rnd, p.rsizes, strides, tt_dtype_of(self));
    if (!out || fake || tt_numel(out) == 0) {
        /* Empty results still check the indices (PyTorch's kernel would
         * not run, but a bad index is a bad index). */
        if (out && !fake && !plan_contiguous_indices(&p)) {
            ix_offsets o;
            if (offsets_make(op, &p, self, tt_strides(self), strides, &o))
                out = tt_release(out);
            else
                offsets_free(&o);
        }
        plan_free(&p);
        return out;
    }
    ix_offsets o;
    tt_status st = plan_contiguous_indices(&p);
    if (!st)
        st = offsets_make(op, &p, self, tt_strides(self), strides, &o);
    if (!st) {
        size_t es = tt_dtype_size(tt_dtype_of(self));
        ix_copy c = {&o, tt__ptr(self), tt__ptr(out), es, tt_dtype_of(self), false};
        tt_parallel_for(o.B * o.R, IX_GRAIN, index_task, &c);
        offsets_free(&o);
    }
    plan_free(&p);
    return st ? tt_release(out) : out;
}

/* index_put / index_put_: writes values (broadcast to the indexing
 * result's shape) into `out` (self's copy, or self in place). */
static tt_status put_impl(const char *op, tt_frame *f, const tt_tensor *self, tt_tensor *out,
                          tt_tensor *const *indices, int n, const tt_tensor *values,
                          bool accumulate)
{
    char s1[128], s2[128];
    if (tt_dtype_of(values) != tt_dtype_of(self))
        return tt_error(TT_EDTYPE, "%s: argument 'values' (#3): index_put requires the source "
                                   "and destination dtypes match, got %s for the destination "
                                   "and %s for the source", op, tt_dtype_name(tt_dtype_of(self)),
                        tt_dtype_name(tt_dtype_of(values)));
    ix_plan p;
    tt_status st = plan_make(op, f, self, indices, n, &p);
    if (st)
        return st;
    /* values must broadcast to the result's shape (not the other way). */
    int vnd = tt_ndim(values);
    bool ok = vnd <= p.rnd;
    for (int j = 0; ok && j < vnd; j++) {
        tt_size vs = tt_sizes(values)[vnd - 1 - j], rs = p.rsizes[p.rnd - 1 - j];
        /* An unbacked size (a bool index's count, in a trace) is checked
         * by the real kernel, which knows it. */
        ok = unbacked(vs) || unbacked(rs) || tt__sz_eq(vs, 1) || tt__sz_eq(vs, rs);
    }
    if (!ok) {
        tt_tensor shape_of;
        memcpy(&shape_of, values, sizeof shape_of);
        shape_of.ndim = (int8_t)p.rnd;
        memcpy(shape_of.sizes, p.rsizes, sizeof(tt_size) * (size_t)p.rnd);
        st = tt_error(TT_ESHAPE, "%s: argument 'values' (#3): shape mismatch: value tensor of "
                                 "shape %s cannot be broadcast to indexing result of shape %s",
                      op, tt_shape_str(values, s1, sizeof s1),
                      tt_shape_str(&shape_of, s2, sizeof s2));
        plan_free(&p);
        return st;
    }
    if (plan_fake(&p, out) || is_fake_t(values)) {
        plan_free(&p);
        return TT_OK;
    }
    /* values in self's own memory (x.index_put_(i, x[j]...)) are read
     * from a copy: the writes must not change what is still to be read. */
    tt_tensor *vcopy = NULL;
    if (values->storage == out->storage) {
        if (!(vcopy = tt__clone_raw(values))) {
            plan_free(&p);
            return tt_errcode();
        }
        values = vcopy;
    }
    tt_tensor va;
    tt__broadcast_alias(&va, values, p.rnd, p.rsizes);
    ix_offsets o;
    st = plan_contiguous_indices(&p);
    if (!st)
        st = offsets_make(op, &p, out, tt_strides(out), va.strides, &o);
    if (!st) {
        tt_dtype dt = tt_dtype_of(self);
        ix_copy c = {&o, tt__ptr(&va), tt__ptr(out), tt_dtype_size(dt), dt, accumulate};
        int64_t grain = o.B * o.R > IX_GRAIN ? (IX_GRAIN + o.B - 1) / (o.B ? o.B : 1) : o.R + 1;
        tt_parallel_for(o.R, grain < 1 ? 1 : grain, put_task, &c);
        offsets_free(&o);
    }
    tt_release(vcopy);
    plan_free(&p);
    return st;
}

static tt_tensor *index_put(tt_frame *f, const tt_tensor *self, tt_tensor *const *indices, int n,
                            const tt_tensor *values, bool accumulate)
{
    const char *op = tt__op_label(TT_OP_INDEX_PUT);
    tt_size strides[TT_MAX_DIMS];
    tt__strides_like(self, strides); /* PyTorch: clone(preserve_format), then put */
    bool fake = is_fake_t(self);
    tt_tensor *out = tt__ops_new(fake, tt_ndim(self), tt_sizes(self), strides,
                                 tt_dtype_of(self));
    if (!out)
        return NULL;
    if ((!fake && tt__copy_raw(out, self)) ||
        put_impl(op, f, self, out, indices, n, values, accumulate))
        return tt_release(out);
    return out;
}

static tt_status index_kernel(tt_frame *f)
{
    tt_tensor *self, *const *ix;
    int n;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &self)) || (st = tt_arg_tensors(f, 1, &ix, &n)))
        return st;
    tt_tensor *r = index_impl(tt_frame_is_fake(f) ? f : NULL, self, ix, n);
    return r ? tt_return(f, 0, r) : tt_errcode();
}

static tt_status index_put_kernel(tt_frame *f)
{
    tt_tensor *self, *values, *const *ix;
    int n;
    bool acc;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &self)) || (st = tt_arg_tensors(f, 1, &ix, &n)) ||
        (st = tt_arg_tensor(f, 2, &values)) || (st = tt_arg_bool(f, 3, &acc)))
        return st;
    tt_frame *ff = tt_frame_is_fake(f) ? f : NULL;
    if (KIND_OF(tt_frame_userdata(f)) == 1) { /* index_put_: in place */
        const char *op = tt__op_label(TT_OP_INDEX_PUT_);
        if ((st = check_inplace_overlap(tt__op_label(TT_OP_INDEX_PUT), self, 1,
                                        (const tt_tensor *[]){values})) ||
            (st = put_impl(op, ff, self, self, ix, n, values, acc)))
            return st;
        return tt_return_self(f, 0, 0);
    }
    tt_tensor *r = index_put(ff, self, ix, n, values, acc);
    return r ? tt_return(f, 0, r) : tt_errcode();
}

/* index and index_put save their index list (slots 0..n-1, NULL for
 * None), its length and self's shape. */
static tt_status setup_index(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                             const tt_value *out, int nout)
{
    (void)nin, (void)out, (void)nout;
    tt_status st = tt_ctx_save_for_backward(ctx, in[1].n, in[1].u.tensors);
    if (!st)
        st = tt_ctx_save_int(ctx, "n", in[1].n);
    if (!st)
        st = tt_ctx_save_shape(ctx, "shape", in[0].u.t);
    return st;
}

static tt_status saved_indices(tt_autograd_ctx *ctx, tt_tensor **ix, int *n)
{
    int64_t k;
    tt_status st = tt_ctx_get_int(ctx, "n", &k);
    if (st)
        return st;
    for (int i = 0; i < k; i++)
        ix[i] = SAVED(i);
    *n = (int)k;
    return TT_OK;
}

/* PyTorch's index_backward: zeros of self's shape, grad put at the
 * indices with accumulation (repeated indices add up). */
static tt_status index_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    if (!NEED(0))
        return TT_OK;
    tt_tensor *ix[TT_MAX_DIMS];
    int n;
    const int64_t *shape;
    int nd;
    tt_status st = saved_indices(ctx, ix, &n);
    if (!st)
        st = tt_ctx_get_ints(ctx, "shape", &shape, &nd);
    if (st)
        return st;
    tt_scope_begin();
    tt_tensor *z = tt__call_op(TT_OP_FULL, TT_ARGS(tt_v_ints(nd, shape), tt_v_int(0),
                                                   tt_v_dtype(tt_dtype_of(g[0]))));
    tt_tensor *r = tt_keep(z ? tt_index_put(z, n, ix, g[0], true) : NULL);
    tt_scope_end();
    return tt__put_grad(ctx, gi, 0, r);
}

/* index_put: self gets grad with the written places zeroed (all of grad
 * when accumulating); values get grad[indices] (the engine sums it back
 * to values' shape). */
static tt_status setup_index_put(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                                 const tt_value *out, int nout)
{
    tt_status st = setup_index(ctx, in, nin, out, nout);
    return st ? st : tt_ctx_save_int(ctx, "accumulate", in[3].u.b);
}

static tt_status index_put_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                    tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    tt_tensor *ix[TT_MAX_DIMS];
    int n;
    int64_t acc;
    tt_status st = saved_indices(ctx, ix, &n);
    if (!st)
        st = tt_ctx_get_int(ctx, "accumulate", &acc);
    if (st)
        return st;
    int vslot = tt_ctx_input_slot(ctx, 2);
    if (NEED(0)) {
        tt_tensor *r;
        if (acc) {
            r = tt_retain(g[0]);
        } else {
            tt_scope_begin();
            r = tt_keep(tt_index_put(g[0], n, ix, tt_scalar(0, tt_dtype_of(g[0])), false));
            tt_scope_end();
        }
        if ((st = tt__put_grad(ctx, gi, 0, r)))
            return st;
    }
    if (NEED(vslot))
        st = tt__put_grad(ctx, gi, vslot, tt_index(g[0], n, ix));
    return st;
}

/* ---------------------------------------------------------------- nonzero */

/* nonzero's [count, nd] result, laid out as PyTorch's: the transpose of
 * an [nd, count] (strides 1, count; also for a count of 0). */
static tt_tensor *nonzero_new(bool fake, tt_size count, int nd)
{
    return tt__ops_new(fake, 2, (const tt_size[]){count, nd}, (const tt_size[]){1, count},
                       TT_I64);
}

/* nonzero(self) -> [n, ndim] i64: the positions of the non-zero elements
 * in row-major order. n is data: a fake call makes a new unbacked size
 * (at most self's numel when that is known). */
static tt_tensor *nonzero(tt_frame *f, const tt_tensor *self)
{
    const char *op = tt__op_label(TT_OP_NONZERO);
    int nd = tt_ndim(self);
    if (is_fake_t(self)) {
        if (!f) {
            tt_error(TT_EINTERNAL, "%s: a fake input outside a fake kernel", op);
            return NULL;
        }
        tt_size numel = tt_numel(self);
        tt_size u = tt_size_is_sym(numel) ? tt_frame_new_dynamic_size(f)
                                          : tt_frame_new_dynamic_size_bounded(f, 0, numel);
        if (!u && tt_errcode())
            return NULL;
        return nonzero_new(true, u, nd);
    }
    tt_tensor *c = tt__contiguous_raw(self);
    if (!c)
        return NULL;
    nz_scan z;
    int64_t count = nz_count(&z, c);
    tt_tensor *out = nonzero_new(false, count, nd);
    if (out && count > 0) {
        for (int j = 0; j < nd; j++) /* column j holds dim j: stride count */
            z.col[j] = (int64_t *)tt__ptr(out) + j * count;
        nz_write(&z);
    }
    tt_release(c);
    return out;
}

static tt_status nonzero_kernel(tt_frame *f)
{
    tt_tensor *self;
    tt_status st = tt_arg_tensor(f, 0, &self);
    if (st)
        return st;
    tt_tensor *r = nonzero(tt_frame_is_fake(f) ? f : NULL, self);
    return r ? tt_return(f, 0, r) : tt_errcode();
}

#undef TT__FAMILY_ADV_INDEX
#define TT__FAMILY_ADV_INDEX TT__ROW
static const tt__builtin_row rows[] = {TT__FAMILY_ROWS};

tt_status tt__register_advanced_index(tt_library *lib)
{
    return TT__DEFINE_ROWS(lib, rows);
}

/* ---------------------------------------------------------- typed wrappers */

tt_tensor *tt_masked_fill(const tt_tensor *self, const tt_tensor *mask, double value)
{
    const tt_tensor *ts[2] = {self, mask};
    if (tt__fast_path(TT_OP_MASKED_FILL_SCALAR, 2, ts))
        return masked_fill(self, mask, NULL, value, true);
    return tt__call_op(TT_OP_MASKED_FILL_SCALAR,
                       TT_ARGS(tt_v_tensor(self), tt_v_tensor(mask), scalar_value(value)));
}

tt_tensor *tt_masked_fill_tensor(const tt_tensor *self, const tt_tensor *mask,
                                 const tt_tensor *value)
{
    const tt_tensor *ts[3] = {self, mask, value};
    if (tt__fast_path(TT_OP_MASKED_FILL_TENSOR, 3, ts))
        return masked_fill(self, mask, value, 0, false);
    return tt__call_op(TT_OP_MASKED_FILL_TENSOR,
                       TT_ARGS(tt_v_tensor(self), tt_v_tensor(mask), tt_v_tensor(value)));
}

/* The fast path when no index (or self) needs the dispatcher. */
static bool index_fast(tt_builtin_id id, const tt_tensor *self, int n,
                       tt_tensor *const *indices, const tt_tensor *values)
{
    const tt_tensor *ts[2 + TT_MAX_DIMS];
    int k = 0;
    ts[k++] = self;
    if (values)
        ts[k++] = values;
    for (int i = 0; i < n && i < TT_MAX_DIMS; i++)
        if (indices[i])
            ts[k++] = indices[i];
    return n <= TT_MAX_DIMS && tt__fast_path(id, k, ts);
}

tt_tensor *tt_index(const tt_tensor *self, int n, tt_tensor *const *indices)
{
    if (index_fast(TT_OP_INDEX_TENSOR, self, n, indices, NULL))
        return index_impl(NULL, self, indices, n);
    return tt__call_op(TT_OP_INDEX_TENSOR, TT_ARGS(tt_v_tensor(self), tt_v_tensors(n, indices)));
}

tt_tensor *tt_index_put(const tt_tensor *self, int n, tt_tensor *const *indices,
                        const tt_tensor *values, bool accumulate)
{
    if (index_fast(TT_OP_INDEX_PUT, self, n, indices, values))
        return index_put(NULL, self, indices, n, values, accumulate);
    return tt__call_op(TT_OP_INDEX_PUT, TT_ARGS(tt_v_tensor(self), tt_v_tensors(n, indices),
                                                tt_v_tensor(values), tt_v_bool(accumulate)));
}

tt_status tt_index_put_(tt_tensor *self, int n, tt_tensor *const *indices,
                        const tt_tensor *values, bool accumulate)
{
    if (index_fast(TT_OP_INDEX_PUT_, self, n, indices, values)) {
        const char *op = tt__op_label(TT_OP_INDEX_PUT_);
        tt_status st = check_inplace_overlap(tt__op_label(TT_OP_INDEX_PUT), self, 1,
                                             (const tt_tensor *[]){values});
        if (!st)
            st = put_impl(op, NULL, self, self, indices, n, values, accumulate);
        if (!st)
            tt_bump_version(self);
        return st;
    }
    return tt__call_op_status(TT_OP_INDEX_PUT_,
                              TT_ARGS(tt_v_tensor(self), tt_v_tensors(n, indices),
                                      tt_v_tensor(values), tt_v_bool(accumulate)));
}

tt_tensor *tt_nonzero(const tt_tensor *self)
{
    if (tt__fast_path(TT_OP_NONZERO, 1, &self))
        return nonzero(NULL, self);
    return tt__call_op(TT_OP_NONZERO, TT_ARGS(tt_v_tensor(self)));
}

tt_tensor *tt_masked_scatter(const tt_tensor *self, const tt_tensor *mask,
                             const tt_tensor *source)
{
    const tt_tensor *ts[3] = {self, mask, source};
    if (tt__fast_path(TT_OP_MASKED_SCATTER, 3, ts))
        return masked_scatter(self, mask, source);
    return tt__call_op(TT_OP_MASKED_SCATTER,
                       TT_ARGS(tt_v_tensor(self), tt_v_tensor(mask), tt_v_tensor(source)));
}

tt_tensor *tt_masked_select(const tt_tensor *self, const tt_tensor *mask)
{
    const tt_tensor *ts[2] = {self, mask};
    if (tt__fast_path(TT_OP_MASKED_SELECT, 2, ts))
        return masked_select(NULL, self, mask);
    return tt__call_op(TT_OP_MASKED_SELECT, TT_ARGS(tt_v_tensor(self), tt_v_tensor(mask)));
}
