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
