/* Padding (constant, reflection, replication) and upsampling (nearest, bilinear), with their backward ops.
 *
 * constant_pad_nd is a fill and one strided copy (any dtype; negative pads
 * crop). Reflection and replication (of the last 1, 2 or 3 dims) and
 * nearest upsampling are one gather over [planes, D, H, W] through index
 * maps (each output depth, row and column names its source), and their
 * backward ops the matching
 * scatter-add; bilinear upsampling has its own loop with PyTorch's source
 * indices and weights. Kernels read and write through strides and run in
 * parallel over the planes. */
/* transformer_impl.h for the small argument checks the op families share
 * (want_float, want_sizes, is_fake). */
#include "transformer_impl.h"
#include "tt_nn.h"

#include <math.h>

/* The rows' data: a padding's kind is its number of spatial dims and
 * whether it reflects or replicates. */
enum {
    PAD_REFLECT1D, PAD_REPLICATE1D, PAD_REFLECT2D, PAD_REPLICATE2D, PAD_REFLECT3D,
    PAD_REPLICATE3D
};
#define PAD_SPATIAL(kind) ((kind) / 2 + 1)
#define PAD_REFLECTS(kind) ((kind) % 2 == 0)

static const tt_builtin_id pad_ids[] = {
    TT_OP_REFLECTION_PAD1D, TT_OP_REPLICATION_PAD1D, TT_OP_REFLECTION_PAD2D,
    TT_OP_REPLICATION_PAD2D, TT_OP_REFLECTION_PAD3D, TT_OP_REPLICATION_PAD3D};
static const tt_builtin_id pad_bw_ids[] = {
    TT_OP_REFLECTION_PAD1D_BACKWARD, TT_OP_REPLICATION_PAD1D_BACKWARD,
    TT_OP_REFLECTION_PAD2D_BACKWARD, TT_OP_REPLICATION_PAD2D_BACKWARD,
    TT_OP_REFLECTION_PAD3D_BACKWARD, TT_OP_REPLICATION_PAD3D_BACKWARD};

/* size + delta for a size that may be symbolic; concrete results may be
 * negative (the callers refuse them). */
static tt_size size_plus(tt_size s, int64_t delta)
{
    if (!tt_size_is_sym(s))
        return s + delta;
    return delta >= 0 ? tt_sym_add(s, delta) : tt_sym_sub(s, -delta);
}

/* ======================================================== constant_pad_nd */

/* tt::constant_pad_nd: pad[2i], pad[2i + 1] pad the i-th dim from the last
 * before and after (negative: crop); new elements are `value`. Any dtype.
 * The layout is self's suggested one (channels last stays). */
static tt_tensor *constant_pad(const tt_tensor *x, int n, const int64_t *pad, double value,
                               bool fake)
{
    const char *op = tt__op_label(TT_OP_CONSTANT_PAD_ND);
    int nd = tt_ndim(x);
    if (n % 2) {
        tt_error(TT_EINVAL, "%s: argument 'pad' (#2): length of pad must be even but instead "
                            "it equals %d", op, n);
        return NULL;
    }
    if (n > 2 * nd) {
        tt_error(TT_EINVAL, "%s: argument 'pad' (#2): length of pad should be no more than "
                            "twice the number of dimensions of the input; pad length is %d "
                            "while the input has %d dimensions", op, n, nd);
        return NULL;
    }
    tt_size sizes[TT_MAX_DIMS], strides[TT_MAX_DIMS];
    int64_t lo[TT_MAX_DIMS] = {0};
    for (int d = 0; d < nd; d++)
        sizes[d] = tt_sizes(x)[d];
    for (int i = 0; i < n / 2; i++) {
        int d = nd - 1 - i;
        int64_t l = pad[2 * i], r = pad[2 * i + 1];
        if (l > TT_SIZE_LIMIT || r > TT_SIZE_LIMIT || l < -TT_SIZE_LIMIT || r < -TT_SIZE_LIMIT) {
            tt_error(TT_EINVAL, "%s: argument 'pad' (#2): pad %lld, %lld of dim %d is out of "
                                "range", op, (long long)l, (long long)r, d);
            return NULL;
        }
        lo[d] = l;
        sizes[d] = size_plus(size_plus(sizes[d], l), r);
        if (tt_errcode())
            return NULL;
        if (tt__sz_lt(sizes[d], 0)) {
            char s1[32];
            tt_size_str(tt_sizes(x)[d], s1, sizeof s1);
            tt_error(TT_ESHAPE, "%s: argument 'pad' (#2): the input size %s of dim %d plus "
                                "padding %lld, %lld is negative", op, s1, d, (long long)l,
                     (long long)r);
            return NULL;
        }
    }
    bool crop_only = true;
    for (int i = 0; i < n; i++)
        crop_only = crop_only && pad[i] <= 0;
    if (crop_only) {
        /* PyTorch clones the narrowed input then: its layout is the
         * view's (preserve_format; an empty view keeps its strides). The
         * view's offset does not change its layout. */
        bool empty = false;
        for (int d = 0; d < nd; d++)
            empty = empty || tt__sz_eq(sizes[d], 0);
        tt_tensor *v = empty ? NULL
                             : tt__as_strided_raw(x, nd, sizes, tt_strides(x),
                                                  tt_storage_offset(x));
        if (!empty && !v)
            return NULL;
        if (v)
            tt__strides_like(v, strides);
        else /* decided here, not by a density test symbols cannot answer */
            memcpy(strides, tt_strides(x), sizeof(tt_size) * (size_t)nd);
        tt_release(v);
    } else {
        tt__nchw_out_strides(x, nd, sizes, strides);
    }
    fake = fake || is_fake(x);
    tt_tensor *y = tt__ops_new(fake, nd, sizes, strides, tt_dtype_of(x));
    if (!y || fake)
        return y;
    /* The overlap of x and y: x from max(-lo, 0), y from max(lo, 0). */
    int64_t csz[TT_MAX_DIMS], xst[TT_MAX_DIMS], yst[TT_MAX_DIMS];
    int64_t xoff = tt_storage_offset(x), yoff = tt_storage_offset(y);
    bool empty = false;
    for (int d = 0; d < nd; d++) {
        int64_t xs = lo[d] < 0 ? -lo[d] : 0, ys = lo[d] > 0 ? lo[d] : 0;
        int64_t c = tt_sizes(x)[d] - xs < sizes[d] - ys ? tt_sizes(x)[d] - xs : sizes[d] - ys;
        csz[d] = c > 0 ? c : 0;
        empty = empty || csz[d] == 0;
        xst[d] = tt_strides(x)[d], yst[d] = tt_strides(y)[d];
        xoff += xs * xst[d], yoff += ys * yst[d];
    }
    tt_status st = tt__fill_raw(y, value);
    if (!st && !empty) {
        tt_tensor *xv = tt__as_strided_raw(x, nd, csz, xst, xoff);
        tt_tensor *yv = xv ? tt__as_strided_raw(y, nd, csz, yst, yoff) : NULL;
        st = yv ? tt__copy_raw(yv, xv) : tt_errcode();
        tt_release(yv);
        tt_release(xv);
    }
    return st ? tt_release(y) : y;
}

static tt_status constant_pad_kernel(tt_frame *f)
{
    tt_tensor *x;
    const int64_t *pad;
    int n;
    double v;
    bool integral;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &x)) || (st = tt_arg_ints(f, 1, &pad, &n)) ||
        (st = tt_arg_scalar(f, 2, &v, &integral)))
        return st;
    tt_tensor *y = constant_pad(x, n, pad, v, tt_frame_is_fake(f));
    return y ? tt_return(f, 0, y) : tt_errcode();
}

static tt_status setup_constant_pad(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                                    const tt_value *out, int nout)
{
    (void)nin, (void)out, (void)nout;
    return tt_ctx_save_ints(ctx, "pad", in[1].n, in[1].u.ints);
}

/* PyTorch's derivative: the gradient padded by the negated pads (what
 * was added is cropped, what was cropped comes back as zeros). */
static tt_status constant_pad_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                       tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    const int64_t *pad;
    int n;
    tt_status st = tt_ctx_get_ints(ctx, "pad", &pad, &n);
    if (st)
        return st;
    int64_t neg[2 * TT_MAX_DIMS];
    for (int i = 0; i < n && i < 2 * TT_MAX_DIMS; i++)
        neg[i] = -pad[i];
    return tt__put_grad(ctx, gi, 0,
                        tt__call_op(TT_OP_CONSTANT_PAD_ND,
                                    TT_ARGS(tt_v_tensor(g[0]), tt_v_ints(n, neg), tt_v_int(0))));
}

/* ============================================================ index maps */

/* One gather (or, backward, scatter-add) over [planes, D, H, W] (1-d and
 * 2-d maps have D, and 1-d H, of 1): output depth od reads input depth
 * md[od], row oh row mh[oh], column ow column mw[ow]. "in" is the input (or
 * grad_input), "out" the output (or grad_output); strides in elements. */
typedef struct {
    char *in, *out;
    const int64_t *md, *mh, *mw;
    int64_t lead[2]; /* the leading dims' sizes: [N, C], [1, C] or [1, 1] */
    int64_t OD, OH, OW;
    int64_t is[5], os[5];
} map_plan;

/* n, c, d, h, w strides of t whose last sp dims are the spatial ones;
 * missing dims have stride 0. */
static void map_strides(const tt_tensor *t, int sp, int64_t s[5])
{
    int nd = tt_ndim(t), lead = nd - sp;
    s[0] = lead >= 2 ? tt_strides(t)[lead - 2] : 0;
    s[1] = lead >= 1 ? tt_strides(t)[lead - 1] : 0;
    for (int i = 0; i < 3; i++)
        s[2 + i] = i >= 3 - sp ? tt_strides(t)[nd - 3 + i] : 0;
}

static void map_lead(const tt_tensor *t, int sp, int64_t lead[2])
{
    int nd = tt_ndim(t), l = nd - sp;
    lead[0] = l >= 2 ? tt_sizes(t)[l - 2] : 1;
    lead[1] = l >= 1 ? tt_sizes(t)[l - 1] : 1;
}

#define MAP_LOOPS(T, BODY)                                                     \
    {                                                                          \
        map_plan *p = vp;                                                      \
        for (int64_t pl = b; pl < e; pl++) {                                   \
            int64_t n = pl / p->lead[1], c = pl % p->lead[1];                  \
            T *in = (T *)p->in + n * p->is[0] + c * p->is[1];                  \
            T *out = (T *)p->out + n * p->os[0] + c * p->os[1];                \
            for (int64_t od = 0; od < p->OD; od++)                             \
                for (int64_t oh = 0; oh < p->OH; oh++) {                       \
                    T *irow = in + p->md[od] * p->is[2] + p->mh[oh] * p->is[3]; \
                    T *orow = out + od * p->os[2] + oh * p->os[3];             \
                    for (int64_t ow = 0; ow < p->OW; ow++)                     \
                        BODY;                                                  \
                }                                                              \
        }                                                                      \
    }
#define MAP_FNS(T)                                                             \
    CPU_CLONES static void gather_##T(int64_t b, int64_t e, void *vp)          \
        MAP_LOOPS(T, orow[ow * p->os[4]] = irow[p->mw[ow] * p->is[4]])         \
    static void scatter_##T(int64_t b, int64_t e, void *vp)                    \
        MAP_LOOPS(T, irow[p->mw[ow] * p->is[4]] += orow[ow * p->os[4]])
MAP_FNS(float)
MAP_FNS(double)

/* Runs the gather (forward) or scatter (backward) of in/out over their
 * last sp dims through maps[0..sp) (depth, rows, columns: the outer ones
 * a 1-d or 2-d map lacks are left out). */
static void run_map(bool scatter, tt_tensor *in, tt_tensor *out, int sp,
                    const int64_t *const *maps)
{
    static const int64_t zero = 0;
    map_plan p = {.in = tt__ptr(in), .out = tt__ptr(out), .md = &zero, .mh = &zero,
                  .OD = 1, .OH = 1};
    int nd = tt_ndim(out);
    const int64_t **dst[3] = {&p.md, &p.mh, &p.mw};
    int64_t *len[3] = {&p.OD, &p.OH, &p.OW};
    for (int i = 0; i < sp; i++) {
        *dst[3 - sp + i] = maps[i];
        *len[3 - sp + i] = tt_sizes(out)[nd - sp + i];
    }
    map_lead(out, sp, p.lead);
    map_strides(in, sp, p.is);
    map_strides(out, sp, p.os);
    bool f64 = tt_dtype_of(in) == TT_F64;
    int64_t grain = 65536 / (p.OD * p.OH * p.OW + 1) + 1;
    tt_parallel_for(p.lead[0] * p.lead[1], grain,
                    scatter ? (f64 ? scatter_double : scatter_float)
                            : (f64 ? gather_double : gather_float),
                    &p);
}

/* ====================================================== reflection, replication */

/* PyTorch's source index of output j along a dim of `in` elements padded
 * by l before (negative: cropped); reflection mirrors about the edge
 * elements, replication repeats them. */
static int64_t pad_src(bool reflect, int64_t j, int64_t in, int64_t l)
{
    int64_t i_start = l < 0 ? -l : 0, o_start = l > 0 ? l : 0, ip;
    if (j < l)
        ip = reflect ? 2 * l - j : l;
    else if (j < in + l)
        ip = j;
    else
        ip = reflect ? 2 * (in + l - 1) - j : in + l - 1;
    return ip - o_start + i_start;
}

/* The checks of PyTorch's reflection_pad / replication_pad, and the
 * output's sizes. pad is (left, right[, top, bottom[, front, back]]). */
static tt_status pad_check(int kind, const char *op, int argno_x, const tt_tensor *x,
                           const int64_t *pad, tt_size *sizes)
{
    tt_status st;
    char s1[128];
    if ((st = want_float(op, "self", argno_x, x)))
        return st;
    int nd = tt_ndim(x), sp = PAD_SPATIAL(kind);
    bool ok = nd == sp + 1 || nd == sp + 2;
    for (int d = nd == sp + 2 ? 1 : 0; ok && d < nd; d++)
        ok = !tt__sz_eq(tt_sizes(x)[d], 0);
    if (!ok)
        return tt_error(TT_ESHAPE, "%s: argument 'self' (#%d): expected a %d-d or %d-d (batch "
                                   "mode) tensor with non-zero sizes (the batch may be 0), "
                                   "got %s", op, argno_x, sp + 1, sp + 2,
                        tt_shape_str(x, s1, sizeof s1));
    for (int d = 0; d < nd; d++)
        sizes[d] = tt_sizes(x)[d];
    for (int i = 0; i < sp; i++) {
        int d = nd - 1 - i;
        int64_t l = pad[2 * i], r = pad[2 * i + 1];
        if (l > TT_SIZE_LIMIT || r > TT_SIZE_LIMIT || l < -TT_SIZE_LIMIT || r < -TT_SIZE_LIMIT)
            return tt_error(TT_EINVAL, "%s: argument 'padding' (#%d): padding (%lld, %lld) is "
                                       "out of range", op, argno_x + 1, (long long)l,
                            (long long)r);
        if (PAD_REFLECTS(kind) && (!tt__sz_lt(l, tt_sizes(x)[d]) ||
                                   !tt__sz_lt(r, tt_sizes(x)[d])))
            return tt_error(TT_EINVAL, "%s: argument 'padding' (#%d): padding size should be "
                                       "less than the corresponding input dimension, but got "
                                       "padding (%lld, %lld) at dimension %d of input %s",
                            op, argno_x + 1, (long long)l, (long long)r, d,
                            tt_shape_str(x, s1, sizeof s1));
        sizes[d] = size_plus(size_plus(sizes[d], l), r);
        if (tt_errcode())
            return tt_errcode();
        /* PyTorch 1.13 gives an empty result for a 2-d or 3-d crop to
         * exactly nothing, and refuses it in 1-d */
        int least = sp == 1 ? 1 : 0;
        if (tt__sz_lt(sizes[d], least))
            return tt_error(TT_ESHAPE, "%s: argument 'padding' (#%d): input %s padded by "
                                       "(%lld, %lld) at dimension %d gives an output size "
                                       "below %d", op, argno_x + 1,
                            tt_shape_str(x, s1, sizeof s1), (long long)l, (long long)r, d,
                            least);
        /* an empty dim is specialized (a guard), as PyTorch's 0 and 1 are:
         * strides past it count it as 1, which a symbol cannot say */
        if (tt_size_is_sym(sizes[d]) && tt__sz_eq(sizes[d], 0))
            sizes[d] = 0;
    }
    return TT_OK;
}

/* The index maps of a padding, outermost spatial dim first (depth, rows,
 * columns, as many as it pads), written into maps[]. NULL on allocation
 * failure; else the block to free. */
static int64_t *pad_maps(int kind, const tt_tensor *x, const tt_tensor *y, const int64_t *pad,
                         int64_t *maps[3])
{
    int nd = tt_ndim(x), sp = PAD_SPATIAL(kind);
    int64_t total = 1;
    for (int i = 0; i < sp; i++)
        total += tt_sizes(y)[nd - sp + i];
    int64_t *block = tt__malloc(sizeof(int64_t) * (size_t)total);
    if (!block)
        return NULL;
    int64_t *at = block;
    for (int i = 0; i < sp; i++) {
        int d = nd - sp + i, k = sp - 1 - i; /* pad pair k pads dim d */
        maps[i] = at;
        for (int64_t j = 0; j < tt_sizes(y)[d]; j++)
            *at++ = pad_src(PAD_REFLECTS(kind), j, tt_sizes(x)[d], pad[2 * k]);
    }
    return block;
}

/* tt::reflection_pad1d/2d/3d and tt::replication_pad1d/2d/3d (the row's
 * data says which): contiguous results, as PyTorch's. */
static tt_tensor *pad_op(int kind, const tt_tensor *x, const int64_t *pad, bool fake)
{
    const char *op = tt__op_label(pad_ids[kind]);
    tt_size sizes[5];
    if (pad_check(kind, op, 1, x, pad, sizes))
        return NULL;
    fake = fake || is_fake(x);
    tt_tensor *y = tt__ops_new(fake, tt_ndim(x), sizes, NULL, tt_dtype_of(x));
    if (!y || fake)
        return y;
    int64_t *maps[3], *block = pad_maps(kind, x, y, pad, maps);
    if (!block) {
        tt_error(TT_ENOMEM, "%s: out of memory for the index maps", op);
        return tt_release(y);
    }
    run_map(false, (tt_tensor *)x, y, PAD_SPATIAL(kind), (const int64_t *const *)maps);
    tt__free(block);
    return y;
}

static tt_status pad_kernel(tt_frame *f)
{
    int kind = (int)(intptr_t)tt_frame_userdata(f);
    tt_tensor *x;
    const int64_t *pad;
    int n;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &x)) || (st = tt_arg_ints(f, 1, &pad, &n)))
        return st;
    tt_tensor *y = pad_op(kind, x, pad, tt_frame_is_fake(f));
    return y ? tt_return(f, 0, y) : tt_errcode();
}

/* tt::*_pad*_backward(grad_output, self, padding): grad_input contiguous
 * with self's sizes, each output gradient added at its source. */
static tt_status pad_backward_kernel(tt_frame *f)
{
    int kind = (int)(intptr_t)tt_frame_userdata(f);
    tt_tensor *g, *x;
    const int64_t *pad;
    int n;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &g)) || (st = tt_arg_tensor(f, 1, &x)) ||
        (st = tt_arg_ints(f, 2, &pad, &n)))
        return st;
    const char *op = tt__op_label(pad_bw_ids[kind]);
    tt_size osz[5];
    if ((st = pad_check(kind, op, 2, x, pad, osz)) ||
        (st = want_same_dtype(op, "grad_output", 1, g, x)) ||
        (st = want_sizes(op, "grad_output", 1, g, tt_ndim(x), osz)))
        return st;
    bool fake = tt_frame_is_fake(f) || is_fake(g) || is_fake(x);
    tt_tensor *gi = tt__ops_new(fake, tt_ndim(x), tt_sizes(x), NULL, tt_dtype_of(x));
    if (!gi || fake)
        return gi ? tt_return(f, 0, gi) : tt_errcode();
    memset(tt__ptr(gi), 0, (size_t)tt_numel(gi) * tt_dtype_size(tt_dtype_of(gi)));
    int64_t *maps[3], *block = pad_maps(kind, x, g, pad, maps);
    if (!block) {
        tt_release(gi);
        return tt_frame_fail(f, TT_ENOMEM, "out of memory for the index maps");
    }
    run_map(true, gi, g, PAD_SPATIAL(kind), (const int64_t *const *)maps);
    tt__free(block);
    return tt_return(f, 0, gi);
}

static tt_status setup_pad(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                           const tt_value *out, int nout)
{
    (void)nin, (void)out, (void)nout;
    tt_status st = tt_ctx_save_ints(ctx, "padding", in[1].n, in[1].u.ints);
    return st ? st : tt_ctx_save_for_backward(ctx, 1, &in[0].u.t);
}

static tt_status pad_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng, tt_tensor **gi,
                              int ni)
{
    (void)ng, (void)ni;
    int kind = (int)(intptr_t)tt_ctx_userdata(ctx);
    const int64_t *pad;
    int n;
    tt_status st = tt_ctx_get_ints(ctx, "padding", &pad, &n);
    if (st)
        return st;
    return tt__put_grad(ctx, gi, 0,
                        tt__call_op(pad_bw_ids[kind],
                                    TT_ARGS(tt_v_tensor(g[0]), tt_v_tensor(tt_ctx_saved(ctx, 0)),
                                            tt_v_ints(n, pad))));
}

/* ============================================================ upsampling */

/* An upsampling call: the input's [N, C, H, W] sizes, the output's H and
 * W, the scale factors (0: none) and align_corners (bilinear). */
typedef struct {
    tt_size in[4], out[2];
    double scale[2];
    bool align;
} up_args;

/* PyTorch's upsample .vec argument forms: exactly one of output_size (two
 * sizes) and scale_factors (two factors; the size is floor(in * factor));
 * then upsample_2d_common_check: 4-d, non-empty but for N, sizes > 0. */
static tt_status up_resolve(const char *op, const tt_size *in, int nos, const int64_t *os,
                            int nsf, const double *sf, up_args *u)
{
    char s1[128];
    for (int d = 0; d < 4; d++)
        u->in[d] = in[d];
    u->scale[0] = u->scale[1] = 0;
    if ((nos < 0) == (nsf < 0))
        return tt_error(TT_EINVAL, "%s: must specify exactly one of output_size and "
                                   "scale_factors", op);
    if (nos >= 0) {
        if (nos != 2)
            return tt_error(TT_EINVAL, "%s: argument 'output_size': expected 2 sizes, got %d",
                            op, nos);
        u->out[0] = os[0], u->out[1] = os[1];
    } else {
        if (nsf != 2)
            return tt_error(TT_EINVAL, "%s: argument 'scale_factors': expected 2 factors, got "
                                       "%d", op, nsf);
        for (int i = 0; i < 2; i++) {
            /* floor(size * factor) has no exact symbolic form here: a
             * symbolic size is specialized to its value (a guard). */
            int64_t isz = tt_size_is_sym(in[2 + i]) ? tt_size_int(in[2 + i]) : in[2 + i];
            if (isz < 0)
                return tt_errcode() ? tt_errcode() : TT_EINVAL;
            double o = (double)isz * sf[i];
            if (!(o < (double)TT_SIZE_LIMIT) || !(o > -(double)TT_SIZE_LIMIT))
                return tt_error(TT_EINVAL, "%s: argument 'scale_factors': factor %g gives an "
                                           "output size out of range", op, sf[i]);
            u->out[i] = (int64_t)o; /* C's truncation, as PyTorch's cast */
            u->scale[i] = sf[i];
        }
    }
    bool ok = true;
    for (int d = 1; d < 4; d++)
        ok = ok && tt__sz_gt(in[d], 0);
    if (!ok)
        return tt_error(TT_ESHAPE, "%s: expected a non-empty 4-d [N, C, H, W] input (N may be "
                                   "0), got %s", op, tt_size_list_str(4, in, false, s1,
                                                                      sizeof s1));
    if (!tt__sz_gt(u->out[0], 0) || !tt__sz_gt(u->out[1], 0)) {
        char a[32], b[32], c[32], d[32];
        tt_size_str(in[2], a, sizeof a), tt_size_str(in[3], b, sizeof b);
        tt_size_str(u->out[0], c, sizeof c), tt_size_str(u->out[1], d, sizeof d);
        return tt_error(TT_EINVAL, "%s: input and output sizes should be greater than 0, but "
                                   "got input (H: %s, W: %s) output (H: %s, W: %s)", op, a, b,
                        c, d);
    }
    return TT_OK;
}

/* output_size (SymInt[]?) and scale_factors (float[]?) from the frame:
 * n -1 for None. */
static tt_status up_frame_args(tt_frame *f, int ios, int isf, const int64_t **os, int *nos,
                               const double **sf, int *nsf)
{
    tt_status st;
    *nos = *nsf = -1;
    if (!tt_arg_is_none(f, ios) && (st = tt_arg_ints(f, ios, os, nos)))
        return st;
    if (!tt_arg_is_none(f, isf) && (st = tt_arg_floats(f, isf, sf, nsf)))
        return st;
    return TT_OK;
}

/* PyTorch's compute_scales_value and area_pixel_compute_scale, in T (the
 * kernel's opmath type: float for f32, double for f64). */
#define UP_SCALES(T)                                                           \
    static T scales_value_##T(double scale, int64_t in, int64_t out)           \
    {                                                                          \
        return scale > 0 ? (T)(1.0 / scale) : (T)in / (T)out;                  \
    }                                                                          \
    static T area_scale_##T(int64_t in, int64_t out, bool align, double scale) \
    {                                                                          \
        if (!align)                                                            \
            return scales_value_##T(scale, in, out);                           \
        return out > 1 ? (T)(in - 1) / (T)(out - 1) : (T)0;                    \
    }
UP_SCALES(float)
UP_SCALES(double)

/* Nearest source indices along one dim, as PyTorch 1.13 computes them:
 * the forward (compute_indices_weights_nearest) in the input's type,
 * floored in float (floorf), the backward (nearest_idx) in float with its
 * shortcuts for equal and doubled sizes. Both clamp to the last index. */
static void nearest_map(bool backward, bool f64, int64_t in, int64_t out, double scale,
                        int64_t *m)
{
    for (int64_t i = 0; i < out; i++) {
        int64_t k;
        if (backward)
            k = out == in       ? i
                : out == 2 * in ? i >> 1
                                : (int64_t)floorf((float)i * scales_value_float(scale, in, out));
        else if (f64)
            k = (int64_t)floorf((float)(area_scale_double(in, out, false, scale) * (double)i));
        else
            k = (int64_t)floorf(area_scale_float(in, out, false, scale) * (float)i);
        m[i] = k < in - 1 ? k : in - 1;
    }
}

/* tt::upsample_nearest2d.vec: output (oh, ow) is input (mh[oh], mw[ow]);
 * the layout follows the input's (channels last stays). */
static tt_tensor *upsample_nearest(const tt_tensor *x, const up_args *u, bool fake)
{
    tt_size sizes[4] = {u->in[0], u->in[1], u->out[0], u->out[1]}, strides[4];
    tt__nchw_out_strides(x, 4, sizes, strides);
    fake = fake || is_fake(x);
    tt_tensor *y = tt__ops_new(fake, 4, sizes, strides, tt_dtype_of(x));
    if (!y || fake)
        return y;
    int64_t *mh = tt__malloc(sizeof(int64_t) * (size_t)(u->out[0] + u->out[1]));
    if (!mh) {
        tt_error(TT_ENOMEM, "tt::upsample_nearest2d: out of memory for the index maps");
        return tt_release(y);
    }
    bool f64 = tt_dtype_of(x) == TT_F64;
    nearest_map(false, f64, u->in[2], u->out[0], u->scale[0], mh);
    nearest_map(false, f64, u->in[3], u->out[1], u->scale[1], mh + u->out[0]);
    run_map(false, (tt_tensor *)x, y, 2, (const int64_t *const[]){mh, mh + u->out[0]});
    tt__free(mh);
    return y;
}

/* The bilinear source rows (or columns) of each output index: i0, i1 and
 * weights l0, l1, by PyTorch's compute_source_index_and_lambda. */
#define LINEAR_MAP(T)                                                          \
    static void linear_map_##T(int64_t in, int64_t out, bool align, double scale, int64_t *i0, \
                               int64_t *i1, T *l0, T *l1)                      \
    {                                                                          \
        T ratio = area_scale_##T(in, out, align, scale);                       \
        for (int64_t o = 0; o < out; o++) {                                    \
            if (in == out) {                                                   \
                i0[o] = i1[o] = o, l0[o] = 1, l1[o] = 0;                       \
                continue;                                                      \
            }                                                                  \
            T real = align ? ratio * (T)o : ratio * ((T)o + (T)0.5) - (T)0.5;  \
            real = real < 0 ? 0 : real;                                        \
            int64_t k = (int64_t)real;                                         \
            k = k < in - 1 ? k : in - 1;                                       \
            i0[o] = k, i1[o] = k + (k < in - 1 ? 1 : 0);                       \
            T lam = real - (T)k;                                               \
            lam = lam < 0 ? 0 : lam > 1 ? 1 : lam;                             \
            l1[o] = lam, l0[o] = (T)1 - lam;                                   \
        }                                                                      \
    }
LINEAR_MAP(float)
LINEAR_MAP(double)

typedef struct {
    char *in, *out;
    const int64_t *h0, *h1, *w0, *w1;
    const void *lh0, *lh1, *lw0, *lw1;
    int64_t C, OH, OW;
    int64_t is[5], os[5]; /* as map_strides gives them: [2] unused */
} bil_plan;

#define BIL_FNS(T)                                                             \
    CPU_CLONES static void bil_fwd_##T(int64_t b, int64_t e, void *vp)         \
    {                                                                          \
        bil_plan *p = vp;                                                      \
        const T *lh0 = p->lh0, *lh1 = p->lh1, *lw0 = p->lw0, *lw1 = p->lw1;    \
        for (int64_t pl = b; pl < e; pl++) {                                   \
            int64_t n = pl / p->C, c = pl % p->C;                              \
            const T *x = (const T *)p->in + n * p->is[0] + c * p->is[1];       \
            T *y = (T *)p->out + n * p->os[0] + c * p->os[1];                  \
            for (int64_t oh = 0; oh < p->OH; oh++) {                           \
                const T *r0 = x + p->h0[oh] * p->is[3], *r1 = x + p->h1[oh] * p->is[3]; \
                for (int64_t ow = 0; ow < p->OW; ow++) {                       \
                    int64_t a = p->w0[ow] * p->is[4], bb = p->w1[ow] * p->is[4]; \
                    y[oh * p->os[3] + ow * p->os[4]] =                         \
                        lh0[oh] * (lw0[ow] * r0[a] + lw1[ow] * r0[bb]) +       \
                        lh1[oh] * (lw0[ow] * r1[a] + lw1[ow] * r1[bb]);        \
                }                                                              \
            }                                                                  \
        }                                                                      \
    }                                                                          \
    static void bil_bwd_##T(int64_t b, int64_t e, void *vp)                    \
    {                                                                          \
        bil_plan *p = vp;                                                      \
        const T *lh0 = p->lh0, *lh1 = p->lh1, *lw0 = p->lw0, *lw1 = p->lw1;    \
        for (int64_t pl = b; pl < e; pl++) {                                   \
            int64_t n = pl / p->C, c = pl % p->C;                              \
            T *gi = (T *)p->in + n * p->is[0] + c * p->is[1];                  \
            const T *go = (const T *)p->out + n * p->os[0] + c * p->os[1];     \
            for (int64_t oh = 0; oh < p->OH; oh++) {                           \
                T *r0 = gi + p->h0[oh] * p->is[3], *r1 = gi + p->h1[oh] * p->is[3]; \
                for (int64_t ow = 0; ow < p->OW; ow++) {                       \
                    int64_t a = p->w0[ow] * p->is[4], bb = p->w1[ow] * p->is[4]; \
                    T g = go[oh * p->os[3] + ow * p->os[4]];                   \
                    r0[a] += lh0[oh] * lw0[ow] * g;                            \
                    r0[bb] += lh0[oh] * lw1[ow] * g;                           \
                    r1[a] += lh1[oh] * lw0[ow] * g;                            \
                    r1[bb] += lh1[oh] * lw1[ow] * g;                           \
                }                                                              \
            }                                                                  \
        }                                                                      \
    }
BIL_FNS(float)
BIL_FNS(double)

/* Runs bilinear forward (in -> out) or backward (out's gradient added
 * into in) for input sizes u->in and output sizes u->out. */
static tt_status run_bilinear(bool backward, tt_tensor *in, tt_tensor *out, const up_args *u)
{
    bool f64 = tt_dtype_of(in) == TT_F64;
    size_t es = f64 ? sizeof(double) : sizeof(float);
    int64_t OH = u->out[0], OW = u->out[1], H = u->in[2], W = u->in[3];
    char *buf = tt__malloc((sizeof(int64_t) * 2 + es * 2) * (size_t)(OH + OW));
    if (!buf)
        return tt_error(TT_ENOMEM, "tt::upsample_bilinear2d: out of memory for the weights");
    int64_t *h0 = (int64_t *)buf, *h1 = h0 + OH, *w0 = h1 + OH, *w1 = w0 + OW;
    char *l = (char *)(w1 + OW);
    void *lh0 = l, *lh1 = l + es * OH, *lw0 = l + es * 2 * OH, *lw1 = l + es * (2 * OH + OW);
    if (f64) {
        linear_map_double(H, OH, u->align, u->scale[0], h0, h1, lh0, lh1);
        linear_map_double(W, OW, u->align, u->scale[1], w0, w1, lw0, lw1);
    } else {
        linear_map_float(H, OH, u->align, u->scale[0], h0, h1, lh0, lh1);
        linear_map_float(W, OW, u->align, u->scale[1], w0, w1, lw0, lw1);
    }
    bil_plan p = {.in = tt__ptr(in), .out = tt__ptr(out), .h0 = h0, .h1 = h1, .w0 = w0,
                  .w1 = w1, .lh0 = lh0, .lh1 = lh1, .lw0 = lw0, .lw1 = lw1,
                  .C = u->in[1], .OH = OH, .OW = OW};
    map_strides(in, 2, p.is);
    map_strides(out, 2, p.os);
    int64_t grain = 16384 / (OH * OW + 1) + 1;
    tt_parallel_for(u->in[0] * u->in[1], grain,
                    backward ? (f64 ? bil_bwd_double : bil_bwd_float)
                             : (f64 ? bil_fwd_double : bil_fwd_float),
                    &p);
    tt__free(buf);
    return TT_OK;
}

/* tt::upsample_nearest2d.vec / tt::upsample_bilinear2d.vec: output_size
 * (nos sizes, -1 for None) or scale_factors (nsf, -1 for None). The
 * layout follows the input's (channels last stays). */
static tt_tensor *upsample(bool bilinear, const tt_tensor *x, int nos, const int64_t *os,
                           bool align, int nsf, const double *sf, bool fake)
{
    const char *op = tt__op_label(bilinear ? TT_OP_UPSAMPLE_BILINEAR2D_VEC
                                           : TT_OP_UPSAMPLE_NEAREST2D_VEC);
    up_args u;
    if (want_float(op, "input", 1, x))
        return NULL;
    if (tt_ndim(x) != 4) {
        char s1[128];
        tt_error(TT_ESHAPE, "%s: argument 'input' (#1): expected a 4-d [N, C, H, W] tensor, "
                            "got %s", op, tt_shape_str(x, s1, sizeof s1));
        return NULL;
    }
    if (up_resolve(op, tt_sizes(x), nos, os, nsf, sf, &u))
        return NULL;
    u.align = align;
    if (!bilinear)
        return upsample_nearest(x, &u, fake);
    tt_size sizes[4] = {u.in[0], u.in[1], u.out[0], u.out[1]}, strides[4];
    tt__nchw_out_strides(x, 4, sizes, strides);
    fake = fake || is_fake(x);
    tt_tensor *y = tt__ops_new(fake, 4, sizes, strides, tt_dtype_of(x));
    if (y && !fake && run_bilinear(false, (tt_tensor *)x, y, &u))
        y = tt_release(y);
    return y;
}

/* Both forward rows (data 1: bilinear, which has align_corners). */
static tt_status upsample_kernel(tt_frame *f)
{
    bool bilinear = (intptr_t)tt_frame_userdata(f) == 1;
    tt_tensor *x;
    const int64_t *os = NULL;
    const double *sf = NULL;
    int nos, nsf;
    bool align = false;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &x)) || (bilinear && (st = tt_arg_bool(f, 2, &align))) ||
        (st = up_frame_args(f, 1, bilinear ? 3 : 2, &os, &nos, &sf, &nsf)))
        return st;
    tt_tensor *y = upsample(bilinear, x, nos, os, align, nsf, sf, tt_frame_is_fake(f));
    return y ? tt_return(f, 0, y) : tt_errcode();
}

/* The backward ops: (grad_output, output_size?, input_size, [align_corners,]
 * scale_factors?). grad_input has input_size, in grad_output's layout. */
static tt_status upsample_backward_kernel(tt_frame *f)
{
    bool bilinear = (intptr_t)tt_frame_userdata(f) == 1;
    tt_builtin_id id = bilinear ? TT_OP_UPSAMPLE_BILINEAR2D_BACKWARD_VEC
                                : TT_OP_UPSAMPLE_NEAREST2D_BACKWARD_VEC;
    const char *op = tt__op_label(id);
    tt_tensor *g;
    const int64_t *os = NULL, *is;
    const double *sf = NULL;
    int nos, nsf, nis;
    bool align = false;
    up_args u;
    tt_status st;
    int isf = bilinear ? 4 : 3;
    if ((st = tt_arg_tensor(f, 0, &g)) || (st = tt_arg_ints(f, 2, &is, &nis)) ||
        (bilinear && (st = tt_arg_bool(f, 3, &align))) ||
        (st = up_frame_args(f, 1, isf, &os, &nos, &sf, &nsf)) ||
        (st = want_float(op, "grad_output", 1, g)))
        return st;
    if (nis != 4)
        return tt_frame_fail(f, TT_EINVAL, "argument 'input_size' (#3): expected 4 sizes "
                                           "[N, C, H, W], got %d", nis);
    if ((st = up_resolve(op, is, nos, os, nsf, sf, &u)))
        return st;
    u.align = align;
    tt_size osz[4] = {is[0], is[1], u.out[0], u.out[1]}, strides[4];
    if ((st = want_sizes(op, "grad_output", 1, g, 4, osz)))
        return st;
    tt__nchw_out_strides(g, 4, is, strides);
    bool fake = tt_frame_is_fake(f) || is_fake(g);
    tt_tensor *gi = tt__ops_new(fake, 4, is, strides, tt_dtype_of(g));
    if (!gi || fake)
        return gi ? tt_return(f, 0, gi) : tt_errcode();
    memset(tt__ptr(gi), 0, (size_t)tt_numel(gi) * tt_dtype_size(tt_dtype_of(gi)));
    if (bilinear) {
        st = run_bilinear(true, gi, g, &u);
    } else {
        int64_t *mh = tt__malloc(sizeof(int64_t) * (size_t)(u.out[0] + u.out[1]));
        if (!mh) {
            st = tt_frame_fail(f, TT_ENOMEM, "out of memory for the index maps");
        } else {
            nearest_map(true, false, is[2], u.out[0], u.scale[0], mh);
            nearest_map(true, false, is[3], u.out[1], u.scale[1], mh + u.out[0]);
            run_map(true, gi, g, 2, (const int64_t *const[]){mh, mh + u.out[0]});
            tt__free(mh);
        }
    }
    if (st) {
        tt_release(gi);
        return st;
    }
    return tt_return(f, 0, gi);
}

/* Saves the input's sizes and the call's arguments (output_size or
 * scale_factors as given; align_corners for bilinear). */
static tt_status setup_upsample(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                                const tt_value *out, int nout)
{
    (void)nin, (void)nout;
    bool bilinear = (intptr_t)tt_ctx_userdata(ctx) == 1;
    int isf = bilinear ? 3 : 2;
    tt_status st = tt_ctx_save_shape(ctx, "input_size", in[0].u.t);
    /* The output's H and W stand for output_size in both forms: the
     * scale factors are kept too, for the source indices. */
    if (!st)
        st = tt_ctx_save_ints(ctx, "output_size", 2, tt_sizes(out[0].u.t) + 2);
    if (!st && in[isf].kind == TT_V_FLOATS) {
        st = tt_ctx_save_float(ctx, "sh", in[isf].u.floats[0]);
        if (!st)
            st = tt_ctx_save_float(ctx, "sw", in[isf].u.floats[1]);
    }
    if (!st)
        st = tt_ctx_save_int(ctx, "align", bilinear && in[2].u.b);
    return st ? st : tt_ctx_save_int(ctx, "has_scales", in[isf].kind == TT_V_FLOATS);
}

static tt_status upsample_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                   tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    bool bilinear = (intptr_t)tt_ctx_userdata(ctx) == 1;
    const int64_t *is, *os;
    int nis, nos;
    int64_t align, has_scales;
    double s[2] = {0, 0};
    tt_status st;
    if ((st = tt_ctx_get_ints(ctx, "input_size", &is, &nis)) ||
        (st = tt_ctx_get_ints(ctx, "output_size", &os, &nos)) ||
        (st = tt_ctx_get_int(ctx, "align", &align)) ||
        (st = tt_ctx_get_int(ctx, "has_scales", &has_scales)))
        return st;
    if (has_scales &&
        ((st = tt_ctx_get_float(ctx, "sh", &s[0])) || (st = tt_ctx_get_float(ctx, "sw", &s[1]))))
        return st;
    /* PyTorch's derivative passes both output_size and the scale factors
     * to the backward op; the .vec form takes one, so scale factors go
     * alone (the output size follows from them). */
    tt_value osv = has_scales ? tt_v_none() : tt_v_ints(2, os);
    tt_value sfv = has_scales ? tt_v_floats(2, s) : tt_v_none();
    tt_tensor *r = bilinear
                       ? tt__call_op(TT_OP_UPSAMPLE_BILINEAR2D_BACKWARD_VEC,
                                     TT_ARGS(tt_v_tensor(g[0]), osv, tt_v_ints(nis, is),
                                             tt_v_bool(align), sfv))
                       : tt__call_op(TT_OP_UPSAMPLE_NEAREST2D_BACKWARD_VEC,
                                     TT_ARGS(tt_v_tensor(g[0]), osv, tt_v_ints(nis, is), sfv));
    return tt__put_grad(ctx, gi, 0, r);
}

#undef TT__FAMILY_PAD_UPSAMPLE
#define TT__FAMILY_PAD_UPSAMPLE TT__ROW
static const tt__builtin_row rows[] = {TT__FAMILY_ROWS};

tt_status tt__register_pad_upsample(tt_library *lib)
{
    return TT__DEFINE_ROWS(lib, rows);
}

/* ---------------------------------------------------------- typed wrappers */

tt_tensor *tt_pad(const tt_tensor *x, int n, const int64_t *pads, const char *mode, double value)
{
    if (n < 0 || (n > 0 && !pads)) {
        tt_error(TT_EINVAL, "tt_pad: arguments 'n' and 'pads': expected n >= 0 pads, got n = %d "
                            "and pads %s", n, pads ? "given" : "NULL");
        return NULL;
    }
    if (!mode || !strcmp(mode, "constant")) {
        if (tt__fast_path(TT_OP_CONSTANT_PAD_ND, 1, &x))
            return constant_pad(x, n, pads, value, false);
        return tt__call_op(TT_OP_CONSTANT_PAD_ND,
                           TT_ARGS(tt_v_tensor(x), tt_v_ints(n, pads), tt_v_float(value)));
    }
    bool reflect = !strcmp(mode, "reflect");
    if (!reflect && strcmp(mode, "replicate")) {
        tt_error(TT_EINVAL, "tt_pad: argument 'mode': expected 'constant', 'reflect' or "
                            "'replicate', got '%s'", mode);
        return NULL;
    }
    if (n != 2 && n != 4 && n != 6) {
        tt_error(TT_EINVAL, "tt_pad: mode '%s' pads the last one, two or three dims: expected "
                            "2, 4 or 6 pads, got %d", mode, n);
        return NULL;
    }
    int kind = (n / 2 - 1) * 2 + !reflect;
    if (tt__fast_path(pad_ids[kind], 1, &x))
        return pad_op(kind, x, pads, false);
    return tt__call_op(pad_ids[kind], TT_ARGS(tt_v_tensor(x), tt_v_ints(n, pads)));
}

tt_tensor *tt_upsample_nearest2d(const tt_tensor *x, int64_t out_h, int64_t out_w)
{
    const int64_t os[2] = {out_h, out_w};
    if (tt__fast_path(TT_OP_UPSAMPLE_NEAREST2D_VEC, 1, &x))
        return upsample(false, x, 2, os, false, -1, NULL, false);
    return tt__call_op(TT_OP_UPSAMPLE_NEAREST2D_VEC,
                       TT_ARGS(tt_v_tensor(x), tt_v_ints(2, os), tt_v_none()));
}

tt_tensor *tt_upsample_nearest2d_scale(const tt_tensor *x, double scale_h, double scale_w)
{
    const double sf[2] = {scale_h, scale_w};
    if (tt__fast_path(TT_OP_UPSAMPLE_NEAREST2D_VEC, 1, &x))
        return upsample(false, x, -1, NULL, false, 2, sf, false);
    return tt__call_op(TT_OP_UPSAMPLE_NEAREST2D_VEC,
                       TT_ARGS(tt_v_tensor(x), tt_v_none(), tt_v_floats(2, sf)));
}

tt_tensor *tt_upsample_bilinear2d(const tt_tensor *x, int64_t out_h, int64_t out_w,
                                  bool align_corners)
{
    const int64_t os[2] = {out_h, out_w};
    if (tt__fast_path(TT_OP_UPSAMPLE_BILINEAR2D_VEC, 1, &x))
        return upsample(true, x, 2, os, align_corners, -1, NULL, false);
    return tt__call_op(TT_OP_UPSAMPLE_BILINEAR2D_VEC,
                       TT_ARGS(tt_v_tensor(x), tt_v_ints(2, os), tt_v_bool(align_corners),
                               tt_v_none()));
}

tt_tensor *tt_upsample_bilinear2d_scale(const tt_tensor *x, double scale_h, double scale_w,
                                        bool align_corners)
{
    const double sf[2] = {scale_h, scale_w};
    if (tt__fast_path(TT_OP_UPSAMPLE_BILINEAR2D_VEC, 1, &x))
        return upsample(true, x, -1, NULL, align_corners, 2, sf, false);
    return tt__call_op(TT_OP_UPSAMPLE_BILINEAR2D_VEC,
                       TT_ARGS(tt_v_tensor(x), tt_v_none(), tt_v_bool(align_corners),
                               tt_v_floats(2, sf)));
}
