/* Built-in ops: cat and stack.
 *
 * One function computes cat's output metadata the way PyTorch's cat meta
 * function does (checks, legacy skipping of 1-d empty inputs, dim
 * wrapping, type promotion, memory format) and allocates the output; for
 * fake inputs it stops there, so it is both the real and the fake kernel.
 * stack is cat on the inputs (then a view that splits the cat dim) or on
 * the inputs unsqueezed at the end, exactly as PyTorch composes it, so its
 * output strides are PyTorch's too. */
#include "ops_impl.h"

#include <string.h>

/* The data of the cat and stack rows: one backward serves both. */
enum { JOIN_CAT, JOIN_STACK };

/* ---------------------------------------------------------------- helpers */

/* PyTorch skips a 1-d input of size 0 in cat: before tensors could have
 * any empty shape, torch.cat([torch.empty(0), x]) was the way to start an
 * accumulation, and it still is allowed for compatibility. Only a concrete
 * 0 counts. */
static bool cat_skips(const tt_tensor *t)
{
    return t->ndim == 1 && t->sizes[0] == 0;
}

typedef enum { FMT_CONTIGUOUS, FMT_CHANNELS_LAST, FMT_CHANNELS_LAST_3D } mem_format;

/* PyTorch's is_channels_last_strides_2d/_3d: a 4-d (5-d) tensor whose
 * strides order its dims like NHWC (NDHWC). Size-1 dims and a zero C stride
 * fall back to contiguous, as there. Symbolic sizes are judged by their
 * example values; an unbacked one is not channels-last. */
static bool strides_like_channels_last(const tt_tensor *t)
{
    static const int order4[] = {1, 3, 2, 0}, order5[] = {1, 4, 3, 2, 0};
    const int *order = t->ndim == 4 ? order4 : t->ndim == 5 ? order5 : NULL;
    if (!order)
        return false;
    int64_t c_stride = tt_sym_hint(t->strides[1]), min = 0;
    if (c_stride <= 0)
        return false;
    for (int k = 0; k < t->ndim; k++) {
        int d = order[k];
        int64_t size = tt_sym_hint(t->sizes[d]), stride = tt_sym_hint(t->strides[d]);
        if (size <= 0 || stride < min)
            return false;
        /* N111 with equal strides, or an N11W slice: ambiguous, so NCHW. */
        if (d == 0 && min == c_stride)
            return false;
        min = stride;
        if (size > 1 && __builtin_mul_overflow(min, size, &min))
            return false;
    }
    return true;
}

static mem_format suggest_format(const tt_tensor *t)
{
    if (!strides_like_channels_last(t))
        return FMT_CONTIGUOUS;
    return t->ndim == 4 ? FMT_CHANNELS_LAST : FMT_CHANNELS_LAST_3D;
}

/* PyTorch's cat_compute_output_memory_format: the inputs' common suggested
 * format (every input counts, skipped ones too), else contiguous. So only
 * channels-last inputs give a non-contiguous output; other shared layouts
 * (all transposed, say) still give a contiguous one. */
static mem_format output_format(int n, const tt_tensor *const *ts)
{
    mem_format f = suggest_format(ts[0]);
    for (int i = 1; i < n && f != FMT_CONTIGUOUS; i++)
        if (suggest_format(ts[i]) != f)
            return FMT_CONTIGUOUS;
    return f;
}

/* Strides of a new tensor of `sizes` in format f (PyTorch's
 * get_channels_last_strides_2d/_3d: C innermost, then W, H(, D), N). */
static void format_strides(mem_format f, int ndim, const tt_size *sizes, tt_size *st)
{
    if (f == FMT_CONTIGUOUS) {
        tt__contiguous_strides(ndim, sizes, st);
        return;
    }
    st[1] = 1;
    tt_size s = sizes[1];
    for (int d = ndim - 1; d >= 2; d--) {
        st[d] = s;
        s = tt_sym_mul(s, sizes[d]);
    }
    st[0] = s;
}

static char *size_str(tt_size s, char *buf, size_t n)
{
    tt_size_str(s, buf, n);
    return buf;
}

/* ------------------------------------------------------------- copy loops */

/* The contiguous case, as PyTorch's serial cat kernel: the output is `outer`
 * rows; row i is input 0's i-th block, then input 1's, ... Each block is
 * contiguous in its input and in the output, so one memcpy moves it, and
 * the output is written front to back. */
typedef struct {
    const char *src;
    int64_t bytes; /* one block */
} cat_block;

typedef struct {
    char *dst;
    int64_t row; /* bytes of one output row */
    int n;
    const cat_block *blocks;
} cat_plan;

static void cat_rows(int64_t begin, int64_t end, void *ctx)
{
    const cat_plan *p = ctx;
    for (int64_t i = begin; i < end; i++) {
        char *d = p->dst + i * p->row;
        for (int j = 0; j < p->n; j++) {
            memcpy(d, p->blocks[j].src + i * p->blocks[j].bytes, (size_t)p->blocks[j].bytes);
            d += p->blocks[j].bytes;
        }
    }
}

/* True when the block copy applies: a row-major output, more than one row
 * (one row is one memcpy per input, which the strided copy already does in
 * parallel), and every non-empty input row-major in the output's dtype. */
static bool blocks_apply(const tt_tensor *out, int n, const tt_tensor *const *ts, int dim)
{
    if (!tt_is_contiguous(out) || dim == 0)
        return false;
    for (int j = 0; j < n; j++)
        if (!cat_skips(ts[j]) && tt_numel(ts[j]) > 0 &&
            (ts[j]->dtype != out->dtype || !tt_is_contiguous(ts[j])))
            return false;
    return true;
}

/* out[..., off_j : off_j + n_j, ...] = ts[j] along dim, for every input. */
static tt_status cat_copy(tt_tensor *out, int n, const tt_tensor *const *ts, int dim)
{
    size_t es = tt_dtype_size((tt_dtype)out->dtype);
    if (blocks_apply(out, n, ts, dim)) {
        int64_t outer = 1, inner = 1;
        for (int d = 0; d < dim; d++)
            outer *= out->sizes[d];
        for (int d = dim + 1; d < out->ndim; d++)
            inner *= out->sizes[d];
        cat_block *blocks = tt__malloc(sizeof *blocks * (size_t)n);
        if (!blocks)
            return tt_errcode();
        int nb = 0;
        for (int j = 0; j < n; j++)
            if (!cat_skips(ts[j]) && tt_numel(ts[j]) > 0)
                blocks[nb++] = (cat_block){tt__ptr(ts[j]), ts[j]->sizes[dim] * inner * (int64_t)es};
        cat_plan p = {tt__ptr(out), out->sizes[dim] * inner * (int64_t)es, nb, blocks};
        /* Rows in chunks of at least 64 KiB, so threads pay off. */
        tt_parallel_for(outer, 65536 / (p.row > 0 ? p.row : 1) + 1, cat_rows, &p);
        tt__free(blocks);
        return TT_OK;
    }
    /* Any strides or dtypes: each input into its slice of the output, a
     * stack-only alias (the strided copy coalesces and memcpys runs). */
    tt_size off = 0;
    for (int j = 0; j < n; j++) {
        if (cat_skips(ts[j]))
            continue;
        tt_size len = ts[j]->sizes[dim];
        if (tt_numel(ts[j]) > 0) {
            tt_tensor slice;
            memcpy(&slice, out, sizeof slice);
            slice.sizes[dim] = len;
            slice.offset = out->offset + off * out->strides[dim];
            tt__refresh_flags(&slice);
            tt_status st = tt__copy_raw(&slice, ts[j]);
            if (st)
                return st;
        }
        off += len;
    }
    return TT_OK;
}

/* ------------------------------------------------------------------- cat */

/* ts[i] is (A, N_i, B) for dim 1 (1-d (0) inputs skipped); out is
 * (A, sum N_i, B) in the promoted dtype, contiguous unless every input is
 * channels-last. Fake when any input is. `name` is the op the errors name. */
static tt_tensor *cat_impl(const char *name, int n, const tt_tensor *const *ts, int64_t dim)
{
    if (n == 0) {
        tt_error(TT_EINVAL, "%s: expected a non-empty list of Tensors", name);
        return NULL;
    }
    for (int i = 0; i < n; i++)
        if (ts[i]->ndim == 0) {
            tt_error(TT_ESHAPE, "%s: zero-dimensional tensor (at position %d) cannot be "
                                "concatenated", name, i);
            return NULL;
        }
    int valid = -1;
    for (int i = 0; i < n && valid < 0; i++)
        if (!cat_skips(ts[i]))
            valid = i;
    tt_dtype dt = tt__result_type(n, ts, 0, NULL);
    mem_format fmt = output_format(n, ts);
    bool fake = tt__any_fake(n, ts);
    if (valid < 0) {
        /* Every input was skipped: PyTorch returns an empty 1-d tensor and,
         * having no tensor to wrap it against, never looks at dim. */
        tt_size zero = 0;
        return tt__ops_new(fake, 1, &zero, NULL, dt);
    }
    const tt_tensor *first = ts[valid];
    int d = tt__op_dim(name, "dim", 2, dim, first->ndim);
    if (d < 0)
        return NULL;
    tt_size sizes[TT_MAX_DIMS], strides[TT_MAX_DIMS];
    memcpy(sizes, first->sizes, sizeof(tt_size) * (size_t)first->ndim);
    sizes[d] = 0;
    for (int i = 0; i < n; i++) {
        const tt_tensor *t = ts[i];
        if (cat_skips(t))
            continue;
        if (t->ndim != first->ndim) {
            tt_error(TT_ESHAPE, "%s: Tensors must have same number of dimensions: got "
                                "%d and %d (tensor number %d in the list)", name,
                     first->ndim, t->ndim, i);
            return NULL;
        }
        for (int k = 0; k < t->ndim; k++)
            if (k != d && !tt__sz_eq(first->sizes[k], t->sizes[k])) {
                char want[64], got[64];
                tt_error(TT_ESHAPE, "%s: Sizes of tensors must match except in dimension "
                                    "%d. Expected size %s but got size %s for tensor "
                                    "number %d in the list.", name, d,
                         size_str(first->sizes[k], want, sizeof want),
                         size_str(t->sizes[k], got, sizeof got), i);
                return NULL;
            }
        if (tt_size_is_sym(sizes[d]) || tt_size_is_sym(t->sizes[d])) {
            sizes[d] = tt_sym_add(sizes[d], t->sizes[d]);
        } else if (__builtin_add_overflow(sizes[d], t->sizes[d], &sizes[d])) {
            tt_error(TT_ESHAPE, "%s: the concatenated size of dimension %d overflows "
                                "int64", name, d);
            return NULL;
        }
    }
    format_strides(fmt, first->ndim, sizes, strides);
    tt_tensor *out = tt__ops_new(fake, first->ndim, sizes, strides, dt);
    if (!out || fake || tt_numel(out) == 0)
        return out;
    if (cat_copy(out, n, ts, d))
        out = tt_release(out);
    return out;
}

/* ----------------------------------------------------------------- stack */

/* ts[i] are all (A, B); out is (A, n, B) for dim 1. */
static tt_tensor *stack_impl(int n, const tt_tensor *const *ts, int64_t dim)
{
    const char *name = tt__op_label(TT_OP_STACK);
    if (n == 0) {
        tt_error(TT_EINVAL, "%s: expected a non-empty list of Tensors", name);
        return NULL;
    }
    const tt_tensor *t0 = ts[0];
    if (t0->ndim == TT_MAX_DIMS) {
        tt_error(TT_ESHAPE, "%s: stacking %d-dim tensors gives %d dims; tensors have "
                            "at most %d", name, t0->ndim, t0->ndim + 1, TT_MAX_DIMS);
        return NULL;
    }
    int d = tt__op_dim(name, "dim", 2, dim, t0->ndim + 1);
    if (d < 0)
        return NULL;
    for (int i = 1; i < n; i++) {
        bool same = ts[i]->ndim == t0->ndim;
        for (int k = 0; same && k < t0->ndim; k++)
            same = tt__sz_eq(ts[i]->sizes[k], t0->sizes[k]);
        if (!same) {
            char a[256], b[256];
            tt_error(TT_ESHAPE, "%s: stack expects each tensor to be equal size, but got "
                                "%s at entry 0 and %s at entry %d", name,
                     tt_shape_str(t0, a, sizeof a), tt_shape_str(ts[i], b, sizeof b), i);
            return NULL;
        }
    }
    tt_size sizes[TT_MAX_DIMS], strides[TT_MAX_DIMS];
    int nd = t0->ndim + 1;
    for (int k = 0, j = 0; k < nd; k++)
        sizes[k] = k == d ? (tt_size)n : t0->sizes[j++];
    if (d < t0->ndim) {
        /* PyTorch: cat along d, then view (..., n*S, ...) as (..., n, S, ...).
         * Splitting one dim of stride s gives strides (S*s, s), which is what
         * view's computeStride gives here (computed directly, so symbolic S
         * needs no proof that S+S+... equals n*S); an empty result gets
         * view's contiguous strides. */
        tt_tensor *c = cat_impl(name, n, ts, d);
        if (!c)
            return NULL;
        for (int k = 0, j = 0; k < nd; k++) {
            if (k == d)
                strides[k] = tt_sym_mul(t0->sizes[d], c->strides[d]);
            else
                strides[k] = c->strides[j++];
        }
        if (tt_numel(c) == 0)
            tt__contiguous_strides(nd, sizes, strides);
        tt_tensor *out = tt__make_view(c, nd, sizes, strides, c->offset);
        tt_release(c);
        return out;
    }
    /* d is the new last dim: cat of the inputs unsqueezed there (stride 1,
     * as PyTorch's unsqueeze), as stack-only aliases. */
    tt_tensor al_buf[16];
    const tt_tensor *ptrs_buf[16];
    bool heap = n > 16;
    tt_tensor *al = heap ? tt__malloc(sizeof *al * (size_t)n) : al_buf;
    const tt_tensor **ptrs = !heap ? ptrs_buf : al ? tt__malloc(sizeof *ptrs * (size_t)n) : NULL;
    tt_tensor *out = NULL;
    if (ptrs) {
        for (int i = 0; i < n; i++) {
            memcpy(&al[i], ts[i], sizeof al[i]);
            al[i].ndim = (int8_t)nd;
            al[i].sizes[d] = 1;
            al[i].strides[d] = 1;
            tt__refresh_flags(&al[i]);
            ptrs[i] = &al[i];
        }
        out = cat_impl(name, n, ptrs, d);
    }
    if (heap) {
        tt__free(ptrs);
        tt__free(al);
    }
    return out;
}

/* ---------------------------------------------------------------- kernels */

static tt_status cat_kernel(tt_frame *f)
{
    tt_tensor *const *ts;
    int n;
    int64_t dim;
    tt_status st;
    if ((st = tt_arg_tensors(f, 0, &ts, &n)) || (st = tt_arg_int(f, 1, &dim)))
        return st;
    tt_tensor *r = cat_impl(tt__op_label(TT_OP_CAT), n, (const tt_tensor *const *)ts, dim);
    return r ? tt_return(f, 0, r) : tt_errcode();
}

static tt_status stack_kernel(tt_frame *f)
{
    tt_tensor *const *ts;
    int n;
    int64_t dim;
    tt_status st;
    if ((st = tt_arg_tensors(f, 0, &ts, &n)) || (st = tt_arg_int(f, 1, &dim)))
        return st;
    tt_tensor *r = stack_impl(n, (const tt_tensor *const *)ts, dim);
    return r ? tt_return(f, 0, r) : tt_errcode();
}

/* ------------------------------------------------------------ derivatives */

/* cat: each input's gradient is its slice of the output's gradient along
 * the cat dim; stack: its index along the stacked dim. setup_context saves
 * the wrapped dim and each input's extent (-1 for a skipped input). */
static tt_status setup_cat(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                           const tt_value *out, int nout)
{
    (void)nin, (void)nout;
    bool stack = (intptr_t)tt_ctx_userdata(ctx) == JOIN_STACK;
    int n = in[0].n;
    tt_tensor *const *ts = in[0].u.tensors;
    int ndim = tt_ndim(out[0].u.t);
    int64_t dim = in[1].u.i < 0 ? in[1].u.i + ndim : in[1].u.i;
    int64_t ext[256];
    if (n > 256)
        return tt_error(TT_EINVAL, "%s: autograd supports up to 256 inputs (got %d)",
                        tt__op_label(stack ? TT_OP_STACK : TT_OP_CAT), n);
    for (int i = 0; i < n; i++)
        ext[i] = stack ? 1 : cat_skips(ts[i]) ? -1 : tt_dim_size(ts[i], (int)dim);
    tt_status st = tt_ctx_save_int(ctx, "dim", dim);
    return st ? st : tt_ctx_save_ints(ctx, "extents", n, ext);
}

static tt_status cat_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                              tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    bool stack = (intptr_t)tt_ctx_userdata(ctx) == JOIN_STACK;
    int64_t dim;
    const int64_t *ext;
    int n;
    tt_status st;
    if ((st = tt_ctx_get_int(ctx, "dim", &dim)) || (st = tt_ctx_get_ints(ctx, "extents", &ext, &n)))
        return st;
    int base = tt_ctx_input_slot(ctx, 0);
    /* An extent may be a symbol (whose handle is negative): -1 alone marks
     * a skipped input, and offsets add up through tt_sym_add. */
    tt_size offset = 0;
    for (int i = 0; i < n && !st; i++) {
        if (ext[i] == -1)
            continue;
        if (tt_ctx_needs_input_grad(ctx, base + i)) {
            gi[base + i] = stack ? tt_select(g[0], (int)dim, i)
                                 : tt_narrow(g[0], (int)dim, offset, ext[i]);
            if (!gi[base + i])
                st = tt_errcode();
        }
        offset = tt_sym_add(offset, ext[i]);
    }
    return st;
}


/* split_with_sizes, split, chunk (PyTorch's split_with_sizes_backward):
 * the pieces' gradients put back together along the dim; autograd hands
 * zeros for a piece that got none. */
static tt_status setup_split(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                             const tt_value *out, int nout)
{
    (void)nin, (void)out, (void)nout;
    int ndim = tt_ndim(in[0].u.t);
    int64_t dim = in[2].u.i < 0 ? in[2].u.i + ndim : in[2].u.i;
    return tt_ctx_save_int(ctx, "dim", dim);
}

static tt_status split_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                tt_tensor **gi, int ni)
{
    (void)ni;
    int64_t dim;
    tt_status st = tt_ctx_get_int(ctx, "dim", &dim);
    if (st || !tt_ctx_needs_input_grad(ctx, 0))
        return st;
    gi[0] = tt_cat(ng, g, (int)dim);
    return gi[0] ? TT_OK : tt_errcode();
}

/* ------------------------------- repeat, flip, roll, tril, triu, full_like */

/* The data of the remapping rows. */
enum { REMAP_REPEAT, REMAP_FLIP, REMAP_ROLL, REMAP_TRIL, REMAP_TRIU };

/* A copy where each output index reads one input index per dim: map[d][i]
 * is the byte offset in the source of output index i along dim d (flip:
 * s - 1 - i, roll: (i - shift) mod s, repeat: i mod s), so every element
 * costs one table lookup per dim. tril/triu copy and zero the other side
 * of the diagonal. Rows of the last dim run in parallel. */
typedef struct {
    const char *src;
    char *dst;
    int nd;
    int64_t sizes[TT_MAX_DIMS];
    int64_t *map[TT_MAX_DIMS];
    size_t es;
    int tri; /* 0, or REMAP_TRIL / REMAP_TRIU */
    int64_t diag;
} remap_job;

static void remap_rows(int64_t b, int64_t e, void *vj)
{
    const remap_job *j = vj;
    int nd = j->nd;
    int64_t inner = j->sizes[nd - 1], idx[TT_MAX_DIMS] = {0};
    for (int64_t r = b; r < e; r++) {
        int64_t rem = r, base = 0;
        for (int d = nd - 2; d >= 0; d--) {
            idx[d] = rem % j->sizes[d];
            rem /= j->sizes[d];
            base += j->map[d][idx[d]];
        }
        char *o = j->dst + (size_t)(r * inner) * j->es;
        const int64_t *last = j->map[nd - 1];
        switch (j->es) {
        case 1:
            for (int64_t k = 0; k < inner; k++)
                o[k] = j->src[base + last[k]];
            break;
        case 4:
            for (int64_t k = 0; k < inner; k++)
                memcpy(o + 4 * k, j->src + base + last[k], 4);
            break;
        default:
            for (int64_t k = 0; k < inner; k++)
                memcpy(o + 8 * k, j->src + base + last[k], 8);
            break;
        }
        if (j->tri) { /* row idx[nd-2], column k: keep k - row <= diag (tril) */
            int64_t row = idx[nd - 2];
            for (int64_t k = 0; k < inner; k++)
                if (j->tri == REMAP_TRIL ? k - row > j->diag : k - row < j->diag)
                    memset(o + (size_t)k * j->es, 0, j->es);
        }
    }
}

/* Runs the remap of real x into out (contiguous, nd >= 1 dims of sizes),
 * src_index(d, i) giving the source index; maps freed here. */
typedef int64_t (*src_index_fn)(int d, int64_t i, const void *ctx);

static tt_status remap(const tt_tensor *x, tt_tensor *out, int nd, const int64_t *xstrides,
                       src_index_fn fn, const void *ctx, int tri, int64_t diag)
{
    remap_job j = {tt__ptr(x), tt__ptr(out), nd, {0}, {0}, tt_dtype_size((tt_dtype)x->dtype),
                   tri, diag};
    tt_status st = TT_OK;
    for (int d = 0; d < nd && !st; d++) {
        j.sizes[d] = out->sizes[d];
        j.map[d] = tt__malloc(sizeof(int64_t) * (size_t)(j.sizes[d] ? j.sizes[d] : 1));
        if (!j.map[d])
            st = tt_errcode();
        for (int64_t i = 0; !st && i < j.sizes[d]; i++)
            j.map[d][i] = fn(d, i, ctx) * xstrides[d] * (int64_t)j.es;
    }
    int64_t n = tt_numel(out), rows = n ? n / j.sizes[nd - 1] : 0;
    if (!st && rows)
        tt_parallel_for(rows, 32768 / (j.sizes[nd - 1] + 1) + 1, remap_rows, &j);
    for (int d = 0; d < nd; d++)
        tt__free(j.map[d]);
    return st;
}

typedef struct {
    int64_t sizes[TT_MAX_DIMS], shift[TT_MAX_DIMS];
    int lead; /* repeat: output dims before the input's */
    int kind;
} remap_ctx;

static int64_t src_of(int d, int64_t i, const void *vc)
{
    const remap_ctx *c = vc;
    switch (c->kind) {
    case REMAP_REPEAT: return d < c->lead ? 0 : i % c->sizes[d - c->lead];
    case REMAP_FLIP: return c->shift[d] ? c->sizes[d] - 1 - i : i;
    case REMAP_ROLL: {
        int64_t k = (i - c->shift[d]) % c->sizes[d];
        return k < 0 ? k + c->sizes[d] : k;
    }
    default: return i;
    }
}

/* A dims argument (argument argno, named `arg`) into a mask, each dim
 * once. */
static tt_status dims_mask(const char *name, const char *arg, int argno, int n,
                           const int64_t *dims, int ndim, bool *mask)
{
    for (int d = 0; d < TT_MAX_DIMS; d++)
        mask[d] = false;
    for (int i = 0; i < n; i++) {
        int d = tt__op_dim(name, arg, argno, dims[i], ndim);
        if (d < 0)
            return tt_errcode();
        if (d < ndim && mask[d])
            return tt_error(TT_EINVAL, "%s: argument '%s' (#%d): dim %d appears multiple times "
                                       "in the list of dims", name, arg, argno, d);
        if (d < ndim)
            mask[d] = true;
    }
    return TT_OK;
}

/* One function for repeat, flip, roll, tril, triu: metadata (a contiguous
 * output, as PyTorch's), then for real inputs the remap. ints/nints are
 * repeats, flip's dims or roll's shifts; dims/ndims roll's dims; diag
 * tril/triu's diagonal. */
static tt_tensor *remap_impl(int kind, const tt_tensor *a, int nints, const int64_t *ints,
                             int ndims, const int64_t *dims, int64_t diag, bool any_layout)
{
    static const tt_builtin_id ids[] = {TT_OP_REPEAT, TT_OP_FLIP, TT_OP_ROLL, TT_OP_TRIL,
                                        TT_OP_TRIU};
    const char *name = tt__op_label(ids[kind]);
    int nd = a->ndim, ond = nd;
    tt_size osizes[TT_MAX_DIMS];
    remap_ctx c = {.kind = kind};
    bool flat_roll = false;
    for (int d = 0; d < nd; d++)
        osizes[d] = a->sizes[d], c.sizes[d] = a->sizes[d];
    if (kind == REMAP_REPEAT) {
        if (nints < nd)
            return tt_error(TT_EINVAL, "%s: argument 'repeats' (#2): the number of repeat "
                                       "dims (%d) can not be smaller than the number of "
                                       "dimensions of the tensor (%d)", name, nints, nd),
                   NULL;
        if (nints > TT_MAX_DIMS)
            return tt_error(TT_EINVAL, "%s: argument 'repeats' (#2): %d dims, more than %d",
                            name, nints, TT_MAX_DIMS), NULL;
        c.lead = nints - nd;
        ond = nints;
        for (int d = 0; d < nints; d++) {
            if (ints[d] < 0)
                return tt_error(TT_EINVAL, "%s: argument 'repeats' (#2): repeats can not be "
                                           "negative (got %lld at %d)", name,
                                (long long)ints[d], d), NULL;
            tt_size s = d < c.lead ? 1 : a->sizes[d - c.lead];
            osizes[d] = tt_sym_mul(s, ints[d]);
        }
    } else if (kind == REMAP_FLIP) {
        bool mask[TT_MAX_DIMS];
        if (dims_mask(name, "dims", 2, nints, ints, nd, mask))
            return NULL;
        for (int d = 0; d < nd; d++)
            c.shift[d] = mask[d];
    } else if (kind == REMAP_ROLL) {
        if (nints == 0)
            return tt_error(TT_EINVAL, "%s: argument 'shifts' (#2): expects at least one "
                                       "shift", name), NULL;
        if (ndims == 0 && nints != 1)
            return tt_error(TT_EINVAL, "%s: argument 'shifts' (#2): with no dims (a roll of "
                                       "the flattened tensor) expects one shift, got %d", name,
                            nints), NULL;
        if (ndims && nints != ndims)
            return tt_error(TT_EINVAL, "%s: argument 'dims' (#3): shifts and dimensions must "
                                       "align (%d shifts, %d dims)", name, nints, ndims), NULL;
        flat_roll = ndims == 0;
        for (int i = 0; i < ndims; i++) {
            int d = tt__op_dim(name, "dims", 3, dims[i], nd);
            if (d < 0)
                return NULL;
            c.shift[d] += ints[i]; /* a dim named twice rolls twice, as PyTorch */
        }
    } else if (nd < 2) {
        return tt_error(TT_ESHAPE, "%s: argument 'self' (#1): input tensor must have at least "
                                   "2 dimensions (got %d)", name, nd), NULL;
    }
    /* flip keeps the input's layout (PyTorch's goes through
     * TensorIterator); the others are contiguous. */
    tt_size ostrides[TT_MAX_DIMS];
    bool keep_layout = any_layout && kind == REMAP_FLIP && !(a->flags & TT_TF_CONTIGUOUS);
    if (keep_layout)
        tt__elementwise_strides(1, &a, nd, a->sizes, ostrides);
    tt_tensor *out = tt__ops_new(a->storage->fake, ond, osizes, keep_layout ? ostrides : NULL,
                                 (tt_dtype)a->dtype);
    if (!out || a->storage->fake || tt_numel(out) == 0)
        return out;
    if (keep_layout && !(out->flags & TT_TF_CONTIGUOUS)) {
        /* computed contiguous, then copied into the layout */
        tt_tensor *c = remap_impl(kind, a, nints, ints, ndims, dims, diag, false);
        if (!c || tt__copy_raw(out, c))
            out = tt_release(out);
        tt_release(c);
        return out;
    }
    /* Read through the input's strides; repeat's lead dims stride 0, a
     * flattened roll goes through a contiguous copy seen as one dim. */
    int64_t xst[TT_MAX_DIMS];
    tt_tensor *x = tt_retain((tt_tensor *)a), flat, oflat;
    tt_tensor *o = out;
    int rnd = ond;
    for (int d = 0; d < ond; d++)
        xst[d] = kind == REMAP_REPEAT ? (d < c.lead ? 0 : a->strides[d - c.lead])
                                      : a->strides[d];
    if (flat_roll || ond == 0) {
        tt_release(x);
        x = tt__empty_impl(nd, a->sizes, NULL, (tt_dtype)a->dtype, false);
        if (x && tt__copy_raw(x, a))
            x = tt_release(x);
        if (!x)
            return tt_release(out);
        int64_t n = tt_numel(a);
        memcpy(&flat, x, sizeof flat);
        memcpy(&oflat, out, sizeof oflat);
        flat.ndim = oflat.ndim = 1;
        flat.sizes[0] = oflat.sizes[0] = n;
        flat.strides[0] = oflat.strides[0] = 1;
        c.sizes[0] = n;
        c.shift[0] = flat_roll ? ints[0] : 0;
        xst[0] = 1;
        rnd = 1;
        o = &oflat;
    }
    tt_status st = remap(rnd == 1 && o == &oflat ? &flat : x, o, rnd, xst, src_of, &c,
                         kind >= REMAP_TRIL ? kind : 0, diag);
    tt_release(x);
    if (st)
        out = tt_release(out);
    return out;
}

static tt_tensor *remap_op(int kind, const tt_tensor *a, int nints, const int64_t *ints,
                           int ndims, const int64_t *dims, int64_t diag)
{
    return remap_impl(kind, a, nints, ints, ndims, dims, diag, true);
}

static tt_status remap_kernel(tt_frame *f)
{
    int kind = (int)(intptr_t)tt_frame_userdata(f);
    tt_tensor *self;
    const int64_t *ints = NULL, *dims = NULL;
    int nints = 0, ndims = 0;
    int64_t diag = 0;
    tt_status st = tt_arg_tensor(f, 0, &self);
    if (!st && kind <= REMAP_ROLL)
        st = tt_arg_ints(f, 1, &ints, &nints);
    if (!st && kind == REMAP_ROLL)
        st = tt_arg_ints(f, 2, &dims, &ndims);
    if (!st && kind >= REMAP_TRIL)
        st = tt_arg_int(f, 1, &diag);
    if (st)
        return st;
    tt_tensor *r = remap_op(kind, self, nints, ints, ndims, dims, diag);
    return r ? tt_return(f, 0, r) : tt_errcode();
}

/* The arguments the rules read: self's shape for repeat, the int lists
 * (flip's dims, roll's shifts and dims) and the diagonal. */
static tt_status setup_remap(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                             const tt_value *out, int nout)
{
    (void)out, (void)nout;
    tt_status st = tt_ctx_save_shape(ctx, "shape", in[0].u.t);
    for (int i = 1; i < nin && !st; i++)
        if (in[i].kind == TT_V_INTS)
            st = tt_ctx_save_ints(ctx, i == 1 ? "a1" : "a2", in[i].n, in[i].u.ints);
        else if (in[i].kind == TT_V_INT)
            st = tt_ctx_save_int(ctx, "diag", in[i].u.i);
    return st;
}

/* flip: flip the gradient back; roll: roll it by the opposite shifts;
 * tril/triu: the same triangle of the gradient; repeat: the sum over the
 * copies (g viewed as [r0, s0, r1, s1, ...] summed over the r dims). */
static tt_status remap_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    int kind = (int)(intptr_t)tt_ctx_userdata(ctx);
    const int64_t *shape, *a1 = NULL, *a2 = NULL;
    int nd, n1 = 0, n2 = 0;
    int64_t diag = 0;
    tt_status st = tt_ctx_get_ints(ctx, "shape", &shape, &nd);
    if (!st && kind <= REMAP_ROLL)
        st = tt_ctx_get_ints(ctx, "a1", &a1, &n1);
    if (!st && kind == REMAP_ROLL)
        st = tt_ctx_get_ints(ctx, "a2", &a2, &n2);
    if (!st && kind >= REMAP_TRIL)
        st = tt_ctx_get_int(ctx, "diag", &diag);
    if (st || !tt_ctx_needs_input_grad(ctx, 0))
        return st;
    tt_tensor *r = NULL;
    tt_scope_begin();
    switch (kind) {
    case REMAP_FLIP: r = tt_flip(g[0], n1, a1); break;
    case REMAP_ROLL: {
        int64_t neg[TT_MAX_DIMS];
        for (int i = 0; i < n1 && i < TT_MAX_DIMS; i++)
            neg[i] = -a1[i];
        r = tt_roll(g[0], n1, neg, n2, a2);
        break;
    }
    case REMAP_TRIL: r = tt_tril(g[0], diag); break;
    case REMAP_TRIU: r = tt_triu(g[0], diag); break;
    default: {
        /* The leading repeats summed away, then one repeated dim d at a
         * time: g viewed as [before, r, s_d, after] summed over r, so no
         * view has more than 4 dims (viewing every dim split at once took
         * 2 ndim dims, past tt's 8 for a 5-d repeat). */
        int lead = n1 - nd;
        int64_t dims[TT_MAX_DIMS], cur[TT_MAX_DIMS];
        for (int d = 0; d < lead; d++)
            dims[d] = d;
        r = lead ? tt_sum(g[0], lead, dims, false) : g[0];
        for (int d = 0; d < nd; d++)
            cur[d] = tt_sym_mul(a1[lead + d], shape[d]);
        for (int d = 0; r && d < nd; d++) {
            if (a1[lead + d] == 1)
                continue;
            tt_size before = 1, after = 1;
            for (int e = 0; e < d; e++)
                before = tt_sym_mul(before, cur[e]);
            for (int e = d + 1; e < nd; e++)
                after = tt_sym_mul(after, cur[e]);
            tt_tensor *v = tt_reshape(r, 4, (const int64_t[]){before, a1[lead + d], shape[d], after});
            tt_tensor *summed = v ? tt_sum(v, 1, (const int64_t[]){1}, false) : NULL;
            cur[d] = shape[d];
            r = summed ? tt_reshape(summed, nd, cur) : NULL;
        }
        if (r && r == g[0])
            r = tt_clone(r); /* every repeat 1: the gradient itself, as a new tensor */
        break;
    }
    }
    st = tt__put_grad(ctx, gi, 0, tt_keep(r));
    tt_scope_end();
    return st;
}

/* full_like(self, fill_value, *, dtype=None): self's shape and layout
 * (PyTorch's preserve_format), self's dtype unless given. */
static tt_status full_like_kernel(tt_frame *f)
{
    tt_tensor *self;
    double v;
    tt_dtype dt;
    bool none = true;
    tt_status st = tt_arg_tensor(f, 0, &self);
    if (!st)
        st = tt_arg_scalar(f, 1, &v, NULL);
    if (!st)
        st = tt_arg_dtype(f, 2, &dt, &none);
    if (st)
        return st;
    tt_size strides[TT_MAX_DIMS];
    tt__strides_like(self, strides);
    bool fake = self->storage->fake;
    tt_tensor *r = tt__empty_impl(self->ndim, self->sizes, strides,
                                  none ? (tt_dtype)self->dtype : dt, fake);
    if (r && !fake && tt__fill_raw(r, v))
        r = tt_release(r);
    return r ? tt_return(f, 0, r) : tt_errcode();
}

/* scalar_tensor(s, *, dtype=None): a 0-dim tensor, f32 by default
 * (PyTorch's default dtype). */
static tt_status scalar_tensor_kernel(tt_frame *f)
{
    double v;
    tt_dtype dt;
    bool none = true;
    tt_status st = tt_arg_scalar(f, 0, &v, NULL);
    if (!st)
        st = tt_arg_dtype(f, 1, &dt, &none);
    if (st)
        return st;
    bool fake = tt_frame_is_fake(f);
    tt_tensor *r = tt__empty_impl(0, NULL, NULL, none ? TT_F32 : dt, fake);
    if (r && !fake && tt__fill_raw(r, v))
        r = tt_release(r);
    return r ? tt_return(f, 0, r) : tt_errcode();
}

/* ----------------------------------------- split_with_sizes, split, chunk */

/* The data of the splitting rows. */
enum { SPLIT_SIZES, SPLIT_EVEN, SPLIT_CHUNK };

/* "[2, 3, s0]" for a message. */
static char *sizes_text(int n, const tt_size *v, char *buf, size_t cap)
{
    return tt_size_list_str(n, v, false, buf, cap);
}

/* The pieces of self along dim, of the given lengths (validated: each
 * non-negative and summing to the dim's size), as narrow views sharing
 * self's storage (fake with self). Lengths may be symbols: the starts add
 * up through tt_sym_add. n new references into out. */
static tt_status split_pieces(const tt_tensor *self, int d, int n, const tt_size *len,
                              tt_tensor **out)
{
    tt_size start = 0;
    for (int i = 0; i < n; i++) {
        out[i] = tt__narrow_raw(self, d, start, len[i]);
        if (!out[i]) {
            for (int j = 0; j < i; j++)
                out[j] = tt_release(out[j]);
            return tt_errcode();
        }
        start = tt_sym_add(start, len[i]);
    }
    return TT_OK;
}

/* PyTorch's first check of all three: a 0-dim tensor has nothing to split
 * ("split expects at least a 1-dimensional tensor"), then the dim. */
static int split_dim(const char *name, const char *what, const tt_tensor *self, int64_t dim,
                     int dim_argno)
{
    if (tt_ndim(self) == 0) {
        tt_error(TT_EINVAL, "%s: %s expects at least a 1-dimensional tensor (got a 0-dim "
                            "tensor)", name, what);
        return -1;
    }
    return tt__op_dim(name, "dim", dim_argno, dim, tt_ndim(self));
}

/* split_with_sizes: each length non-negative, all summing exactly to the
 * dim's size (both checked before any piece is made, in PyTorch's order:
 * a negative entry first). */
static tt_status split_sizes_impl(const char *name, const tt_tensor *self, int n,
                                  const tt_size *sizes, int64_t dim, tt_tensor **out)
{
    int d = split_dim(name, "split_with_sizes", self, dim, 3);
    if (d < 0)
        return tt_errcode();
    char b[512], c[64];
    if (tt__sizes_check(name, "split_sizes", n, sizes))
        return tt_errcode();
    for (int i = 0; i < n; i++)
        if (tt__sz_lt(sizes[i], 0))
            return tt_error(TT_EINVAL, "%s: split_with_sizes expects split_sizes have only "
                                       "non-negative entries, but got split_sizes=%s",
                            name, sizes_text(n, sizes, b, sizeof b));
    tt_size sum = 0;
    for (int i = 0; i < n; i++)
        sum = tt_sym_add(sum, sizes[i]);
    tt_size ds = tt_sizes(self)[d];
    if (tt__sz_ne(sum, ds))
        return tt_error(TT_EINVAL, "%s: split_with_sizes expects split_sizes to sum exactly "
                                   "to %s (input tensor's size at dimension %d), but got "
                                   "split_sizes=%s",
                        name, size_str(ds, c, sizeof c), d, sizes_text(n, sizes, b, sizeof b));
    return split_pieces(self, d, n, sizes, out);
}

/* How many pieces split.Tensor / chunk make, and their lengths into len
 * (room for cap; *count is set even when it does not fit, so a caller can
 * ask again). PyTorch's split: max(ceil(N / split_size), 1) pieces of
 * split_size, the last one shorter; split_size 0 only when N is 0 (one
 * empty piece). chunk: split_size ceil(N / chunks), so fewer pieces than
 * asked when N does not divide, and `chunks` empty pieces when N is 0.
 * The count is a number of results, so a symbolic N or split_size is
 * specialized to its example value by a guard (tt_size_int), as PyTorch's
 * guard on the number of outputs; the lengths stay symbolic. */
static tt_status even_lengths(const char *name, int kind, const tt_tensor *self, int d,
                              tt_size arg, int cap, tt_size *len, int *count)
{
    tt_size n = tt_sizes(self)[d];
    char b[64];
    tt_size split;
    int64_t pieces;
    if (kind == SPLIT_CHUNK) {
        if (tt__sz_eq(n, 0)) { /* chunks empty pieces */
            pieces = arg;
            split = 0;
        } else {
            /* ceil(N / chunks) = (N + chunks - 1) // chunks */
            split = tt_sym_floordiv(tt_sym_add(n, arg - 1), arg);
            pieces = -1;
        }
    } else {
        split = arg;
        pieces = tt__sz_eq(split, 0) ? 1 : -1;
        if (pieces == 1 && tt__sz_ne(n, 0))
            return tt_error(TT_EINVAL, "%s: split_size can only be 0 if dimension size is "
                                       "0, but got dimension size of %s",
                            name, size_str(n, b, sizeof b));
    }
    if (pieces < 0) {
        /* max(ceil(N / split), 1) */
        tt_size q = tt_sym_floordiv(tt_sym_add(n, tt_sym_sub(split, 1)), split);
        int64_t v = tt_size_is_sym(q) ? tt_size_int(q) : q;
        if (v < 0)
            return tt_errcode() ? tt_errcode()
                                : tt_error(TT_EINVAL, "%s: the number of pieces is not "
                                                      "known", name);
        pieces = v > 1 ? v : 1;
    }
    if (pieces > INT32_MAX)
        return tt_error(TT_EINVAL, "%s: %lld pieces are too many", name, (long long)pieces);
    *count = (int)pieces;
    if (pieces > cap)
        return TT_OK;
    for (int64_t i = 0; i + 1 < pieces; i++)
        len[i] = split;
    /* The last: N - (pieces - 1) * split (0 for an empty dim). */
    len[pieces - 1] = tt_sym_sub(n, tt_sym_mul(pieces - 1, split));
    return TT_OK;
}

/* split.Tensor and chunk: the pieces into *out (a tt__malloc'ed array of
 * *count new references). */
static tt_status split_even_impl(const char *name, int kind, const tt_tensor *self,
                                 tt_size arg, int64_t dim, tt_tensor ***out, int *count)
{
    *out = NULL;
    *count = 0;
    const char *what = kind == SPLIT_CHUNK ? "chunk" : "split";
    int d = split_dim(name, what, self, dim, 3);
    if (d < 0)
        return tt_errcode();
    if (kind == SPLIT_CHUNK && (tt_size_is_sym(arg) || arg <= 0))
        return tt_error(TT_EINVAL, "%s: chunk expects `chunks` to be greater than 0, got: "
                                   "%lld", name, (long long)arg);
    if (kind == SPLIT_EVEN) {
        if (tt__size_check(name, "split_size", -1, arg))
            return tt_errcode();
        if (tt__sz_lt(arg, 0))
            return tt_error(TT_EINVAL, "%s: split expects split_size be non-negative, but "
                                       "got split_size=%lld", name, (long long)arg);
    }
    int n = 0;
    tt_size small[16];
    tt_status st = even_lengths(name, kind, self, d, arg, 16, small, &n);
    if (st)
        return st;
    tt_size *len = small;
    if (n > 16) {
        if (!(len = tt__malloc(sizeof *len * (size_t)n)))
            return tt_errcode();
        st = even_lengths(name, kind, self, d, arg, n, len, &n);
    }
    tt_tensor **ts = st ? NULL : tt__malloc(sizeof *ts * (size_t)n);
    if (!st && !ts)
        st = tt_errcode();
    if (!st && (st = split_pieces(self, d, n, len, ts)))
        tt__free(ts);
    if (len != small)
        tt__free(len);
    if (!st) {
        *out = ts;
        *count = n;
    }
    return st;
}

static tt_status split_kernel(tt_frame *f)
{
    int kind = (int)(intptr_t)tt_frame_userdata(f);
    /* "tt::split", as the wrappers' fast path names it */
    const char *name = tt__op_label(kind == SPLIT_SIZES ? TT_OP_SPLIT_WITH_SIZES
                                    : kind == SPLIT_EVEN ? TT_OP_SPLIT_TENSOR
                                                         : TT_OP_CHUNK);
    tt_tensor *self;
    int64_t dim, arg = 0;
    const int64_t *sizes = NULL;
    int n = 0;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &self)) || (st = tt_arg_int(f, 2, &dim)) ||
        (st = kind == SPLIT_SIZES ? tt_arg_ints(f, 1, &sizes, &n) : tt_arg_int(f, 1, &arg)))
        return st;
    tt_tensor **ts;
    if (kind == SPLIT_SIZES) {
        if (!(ts = tt__malloc(sizeof *ts * (size_t)(n ? n : 1))))
            return tt_errcode();
        st = split_sizes_impl(name, self, n, sizes, dim, ts);
    } else {
        st = split_even_impl(name, kind, self, arg, dim, &ts, &n);
    }
    if (!st)
        st = tt_return_tensors(f, 0, n, ts);
    tt__free(ts);
    return st;
}

#undef TT__FAMILY_SHAPE
#define TT__FAMILY_SHAPE TT__ROW
static const tt__builtin_row rows[] = {TT__FAMILY_ROWS};

tt_status tt__register_shape(tt_library *lib)
{
    return TT__DEFINE_ROWS(lib, rows);
}

/* ---------------------------------------------------------- typed wrappers */

/* The list checks the dispatcher's binding does, for the fast path. */
static tt_status check_list(const char *name, int n, tt_tensor *const *ts)
{
    if (n < 0)
        return tt_error(TT_EINVAL, "%s: argument 'tensors' (#1) has a negative length "
                                   "(%d)", name, n);
    if (n > 0 && !ts)
        return tt_error(TT_EINVAL, "%s: argument 'tensors' (#1) is NULL for %d tensors",
                        name, n);
    for (int i = 0; i < n; i++)
        if (!ts[i])
            return tt_error(TT_EINVAL, "%s: argument 'tensors' (#1) expects a tensor at "
                                       "index %d, got NULL", name, i);
    return TT_OK;
}

tt_tensor *tt_cat(int n, tt_tensor *const *ts, int dim)
{
    if (check_list(tt__op_label(TT_OP_CAT), n, ts))
        return NULL;
    if (tt__fast_path(TT_OP_CAT, n, (const tt_tensor *const *)ts))
        return cat_impl(tt__op_label(TT_OP_CAT), n, (const tt_tensor *const *)ts, dim);
    return tt__call_op(TT_OP_CAT, TT_ARGS(tt_v_tensors(n, ts), tt_v_int(dim)));
}

tt_tensor *tt_stack(int n, tt_tensor *const *ts, int dim)
{
    if (check_list(tt__op_label(TT_OP_STACK), n, ts))
        return NULL;
    if (tt__fast_path(TT_OP_STACK, n, (const tt_tensor *const *)ts))
        return stack_impl(n, (const tt_tensor *const *)ts, dim);
    return tt__call_op(TT_OP_STACK, TT_ARGS(tt_v_tensors(n, ts), tt_v_int(dim)));
}

/* ----------------------------- repeat, flip, roll, tril, triu, full_like */

static tt_tensor *remap_call(int kind, tt_builtin_id id, const tt_tensor *a, int nints,
                             const int64_t *ints, int ndims, const int64_t *dims, int64_t diag)
{
    if ((nints < 0 || (nints > 0 && !ints)) || (ndims < 0 || (ndims > 0 && !dims))) {
        tt_error(TT_EINVAL, "%s: a list argument is NULL or has a negative count",
                 tt__op_label(id));
        return NULL;
    }
    if (tt__fast_path(id, 1, &a))
        return remap_op(kind, a, nints, ints, ndims, dims, diag);
    switch (kind) {
    case REMAP_ROLL:
        return tt__call_op(id, TT_ARGS(tt_v_tensor(a), tt_v_ints(nints, ints),
                                       tt_v_ints(ndims, dims)));
    case REMAP_TRIL:
    case REMAP_TRIU: return tt__call_op(id, TT_ARGS(tt_v_tensor(a), tt_v_int(diag)));
    default: return tt__call_op(id, TT_ARGS(tt_v_tensor(a), tt_v_ints(nints, ints)));
    }
}

tt_tensor *tt_repeat(const tt_tensor *a, int n, const int64_t *repeats)
{
    return remap_call(REMAP_REPEAT, TT_OP_REPEAT, a, n, repeats, 0, NULL, 0);
}

tt_tensor *tt_flip(const tt_tensor *a, int n, const int64_t *dims)
{
    return remap_call(REMAP_FLIP, TT_OP_FLIP, a, n, dims, 0, NULL, 0);
}

tt_tensor *tt_roll(const tt_tensor *a, int nshifts, const int64_t *shifts, int ndims,
                   const int64_t *dims)
{
    return remap_call(REMAP_ROLL, TT_OP_ROLL, a, nshifts, shifts, ndims, dims, 0);
}

tt_tensor *tt_tril(const tt_tensor *a, int64_t diagonal)
{
    return remap_call(REMAP_TRIL, TT_OP_TRIL, a, 0, NULL, 0, NULL, diagonal);
}

tt_tensor *tt_triu(const tt_tensor *a, int64_t diagonal)
{
    return remap_call(REMAP_TRIU, TT_OP_TRIU, a, 0, NULL, 0, NULL, diagonal);
}

tt_tensor *tt_full_like(const tt_tensor *a, double value)
{
    return tt__call_op(TT_OP_FULL_LIKE, TT_ARGS(tt_v_tensor(a), tt_v_float(value), tt_v_none()));
}

tt_tensor *tt_scalar_tensor(double value, tt_dtype dtype)
{
    return tt__call_op(TT_OP_SCALAR_TENSOR, TT_ARGS(tt_v_float(value), tt_v_dtype(dtype)));
}

/* ------------------------------------------ split_with_sizes, split, chunk */

/* Moves the n pieces of ts (an array of new references, tt__malloc'ed,
 * freed here) into the caller's room of cap: all or, when they do not
 * fit, none (released; *npieces still says how many there were). */
static tt_status give_pieces(const char *name, tt_tensor **ts, int n, int cap,
                             tt_tensor **pieces, int *npieces)
{
    if (npieces)
        *npieces = n;
    if (n > cap) {
        for (int i = 0; i < n; i++)
            tt_release(ts[i]);
        tt__free(ts);
        return tt_error(TT_EINVAL, "%s: argument 'pieces' has room for %d tensors, but the "
                                   "split makes %d", name, cap, n);
    }
    memcpy(pieces, ts, sizeof *ts * (size_t)n);
    tt__free(ts);
    return TT_OK;
}

/* The dispatcher's path: the op's Tensor[] result into the caller's room. */
static tt_status split_call(tt_builtin_id id, const tt_value *args, int nargs, int cap,
                            tt_tensor **pieces, int *npieces)
{
    tt_value out = tt_v_none();
    tt_status st = tt_op_call(tt__op(id), args, nargs, &out, 1);
    if (st)
        return st;
    if (out.kind != TT_V_TENSORS) {
        tt_value_clear(&out);
        return tt_error(TT_EINVAL, "%s: expected a Tensor[] result", tt__op_label(id));
    }
    /* The array is the dispatcher's (tt__malloc'ed): give_pieces frees it. */
    return give_pieces(tt__op_label(id), (tt_tensor **)out.u.tensors, out.n, cap, pieces,
                       npieces);
}

tt_status tt_split_with_sizes(const tt_tensor *self, int n, const tt_size *split_sizes,
                              int64_t dim, tt_tensor **pieces)
{
    const char *name = tt__op_label(TT_OP_SPLIT_WITH_SIZES);
    if (n < 0 || (n > 0 && (!split_sizes || !pieces)))
        return tt_error(TT_EINVAL, "%s: argument 'split_sizes' or 'pieces' is NULL or has a "
                                   "negative count (%d)", name, n);
    for (int i = 0; i < n; i++)
        pieces[i] = NULL;
    if (tt__fast_path(TT_OP_SPLIT_WITH_SIZES, 1, &self))
        return split_sizes_impl(name, self, n, split_sizes, dim, pieces);
    return split_call(TT_OP_SPLIT_WITH_SIZES,
                      TT_ARGS(tt_v_tensor(self), tt_v_ints(n, split_sizes), tt_v_int(dim)), n,
                      pieces, NULL);
}

/* split.Tensor and chunk. */
static tt_status split_even_call(int kind, tt_builtin_id id, const tt_tensor *self,
                                 int64_t arg, int64_t dim, int cap, tt_tensor **pieces,
                                 int *npieces)
{
    const char *name = tt__op_label(id);
    if (npieces)
        *npieces = 0;
    if (!npieces || cap < 0 || (cap > 0 && !pieces))
        return tt_error(TT_EINVAL, "%s: argument 'pieces' or 'npieces' is NULL or has a "
                                   "negative room (%d)", name, cap);
    for (int i = 0; i < cap; i++)
        pieces[i] = NULL;
    if (tt__fast_path(id, 1, &self)) {
        tt_tensor **ts;
        int n;
        tt_status st = split_even_impl(name, kind, self, arg, dim, &ts, &n);
        return st ? st : give_pieces(name, ts, n, cap, pieces, npieces);
    }
    return split_call(id, TT_ARGS(tt_v_tensor(self), tt_v_int(arg), tt_v_int(dim)), cap,
                      pieces, npieces);
}

tt_status tt_split(const tt_tensor *self, tt_size split_size, int64_t dim, int cap,
                   tt_tensor **pieces, int *npieces)
{
    return split_even_call(SPLIT_EVEN, TT_OP_SPLIT_TENSOR, self, split_size, dim, cap, pieces,
                           npieces);
}

tt_status tt_chunk(const tt_tensor *self, int64_t chunks, int64_t dim, tt_tensor **pieces,
                   int *npieces)
{
    int cap = chunks < 0 ? 0 : chunks > INT32_MAX ? INT32_MAX : (int)chunks;
    return split_even_call(SPLIT_CHUNK, TT_OP_CHUNK, self, chunks, dim, cap, pieces, npieces);
}
