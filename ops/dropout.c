/* Built-in ops: dropout (native_dropout: seeded, the mask an output) and
 * its backward, native_dropout_backward.
 *
 * The draws come from the global generator (tt_manual_seed), one uniform
 * per element in the input's logical (row-major) order, whatever its
 * layout: the same seed gives the same mask for a contiguous input and a
 * transposed copy of it, and each call reserves fresh counters, so a
 * compiled step that replays the op draws a new mask per call, the masks
 * eager code would draw in the same order. */
#include "transformer_impl.h"
#include "tt_nn.h"

typedef struct {
    double keep; /* 1 - p: an element is kept when its draw u < keep */
    double scale;
} drop_k;

/* Operands: out, mask, input, u (f64 uniforms), or for the backward out,
 * grad, mask. out = (x * mask) * scale in the input's dtype, as PyTorch's
 * input.mul(mask).mul_(scale). */
#define DROP_LOOP(T)                                                           \
    static void drop_loop_##T(char **d, const int64_t *st, int64_t n, void *vk) \
    {                                                                          \
        const drop_k *k = vk;                                                  \
        T scale = (T)k->scale;                                                 \
        for (int64_t i = 0; i < n; i++) {                                      \
            bool keep = *(const double *)(d[3] + i * st[3]) < k->keep;         \
            T x = *(const T *)(d[2] + i * st[2]);                              \
            *(bool *)(d[1] + i * st[1]) = keep;                                \
            *(T *)(d[0] + i * st[0]) = (keep ? x : (T)0) * scale;              \
        }                                                                      \
    }                                                                          \
    static void drop_bwd_loop_##T(char **d, const int64_t *st, int64_t n, void *vk) \
    {                                                                          \
        const drop_k *k = vk;                                                  \
        T scale = (T)k->scale;                                                 \
        for (int64_t i = 0; i < n; i++) {                                      \
            T g = *(const T *)(d[1] + i * st[1]);                              \
            bool m = *(const bool *)(d[2] + i * st[2]);                        \
            *(T *)(d[0] + i * st[0]) = (m ? g : (T)0) * scale;                 \
        }                                                                      \
    }
DROP_LOOP(float)
DROP_LOOP(double)

/* native_dropout's two outputs into out[] (new references): train (true
 * or None, as PyTorch's `!train.has_value() || *train`) zeroes each
 * element with probability p and scales the rest by 1 / (1 - p) (p = 1:
 * all zeros); otherwise a copy of input and an all-true mask. Both
 * outputs take input's layout. */
static tt_status dropout_forward(const tt_tensor *x, double p, bool train, bool fake,
                                 tt_tensor **out)
{
    const char *op = tt__op_label(TT_OP_NATIVE_DROPOUT);
    tt_status st;
    out[0] = out[1] = NULL;
    if (!(p >= 0 && p <= 1))
        return tt_error(TT_EINVAL, "%s: argument 'p' (#2): expected a probability in [0, 1], "
                                   "got %g",
                        op, p);
    if (train && (st = want_float(op, "input", 1, x)))
        return st;
    fake = fake || is_fake(x);
    tt_size strides[TT_MAX_DIMS];
    tt__strides_like(x, strides);
    out[0] = tt__ops_new(fake, tt_ndim(x), tt_sizes(x), strides, tt_dtype_of(x));
    out[1] = tt__ops_new(fake, tt_ndim(x), tt_sizes(x), strides, TT_BOOL);
    if (!out[0] || !out[1])
        goto fail;
    if (fake)
        return TT_OK;
    if (!train) {
        if (tt__copy_raw(out[0], x) || tt__fill_raw(out[1], 1))
            goto fail;
        return TT_OK;
    }
    /* One draw per element, also for p = 0 and p = 1, so the generator
     * advances by numel whatever p is. */
    int64_t sizes[TT_MAX_DIMS];
    for (int d = 0; d < tt_ndim(x); d++)
        sizes[d] = tt_sizes(x)[d];
    tt_tensor *u = tt__random_raw(tt_ndim(x), sizes, TT_F64, false);
    if (!u)
        goto fail;
    drop_k k = {.keep = 1 - p, .scale = p == 1 ? 0 : 1 / (1 - p)};
    st = tt_for_each(4, (tt_tensor *[]){out[0], out[1], (tt_tensor *)x, u},
                     tt_dtype_of(x) == TT_F64 ? drop_loop_double : drop_loop_float, &k);
    tt_release(u);
    if (st)
        goto fail;
    return TT_OK;
fail:
    out[0] = tt_release(out[0]);
    out[1] = tt_release(out[1]);
    return tt_errcode();
}

/* tt::native_dropout(input, p, train?) -> (output, mask) */
static tt_status dropout_kernel(tt_frame *f)
{
    tt_tensor *x;
    double p;
    bool train = true;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &x)) || (st = tt_arg_float(f, 1, &p)))
        return st;
    if (!tt_arg_is_none(f, 2) && (st = tt_arg_bool(f, 2, &train)))
        return st;
    tt_tensor *out[2];
    if ((st = dropout_forward(x, p, train, tt_frame_is_fake(f), out)))
        return st;
    st = tt_return(f, 0, out[0]);
    if (st) {
        tt_release(out[1]);
        return st;
    }
    return tt_return(f, 1, out[1]);
}

/* grad_output * mask * scale, laid out as grad_output. */
static tt_tensor *dropout_backward_impl(const tt_tensor *g, const tt_tensor *mask, double scale,
                                        bool fake)
{
    const char *op = tt__op_label(TT_OP_NATIVE_DROPOUT_BACKWARD);
    if (want_float(op, "grad_output", 1, g))
        return NULL;
    if (tt_dtype_of(mask) != TT_BOOL) {
        tt_error(TT_EDTYPE, "%s: argument 'mask' (#2): expected bool, got %s", op,
                 tt_dtype_name(tt_dtype_of(mask)));
        return NULL;
    }
    if (want_sizes(op, "mask", 2, mask, tt_ndim(g), tt_sizes(g)))
        return NULL;
    fake = fake || is_fake(g) || is_fake(mask);
    tt_size strides[TT_MAX_DIMS];
    tt__strides_like(g, strides);
    tt_tensor *out = tt__ops_new(fake, tt_ndim(g), tt_sizes(g), strides, tt_dtype_of(g));
    if (!out || fake)
        return out;
    drop_k k = {.scale = scale};
    if (tt_for_each(3, (tt_tensor *[]){out, (tt_tensor *)g, (tt_tensor *)mask},
                    tt_dtype_of(g) == TT_F64 ? drop_bwd_loop_double : drop_bwd_loop_float, &k))
        out = tt_release(out);
    return out;
}

/* tt::native_dropout_backward(grad_output, mask, scale) -> Tensor */
static tt_status dropout_backward_kernel(tt_frame *f)
{
    tt_tensor *g, *mask;
    double scale;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &g)) || (st = tt_arg_tensor(f, 1, &mask)) ||
        (st = tt_arg_float(f, 2, &scale)))
        return st;
    tt_tensor *out = dropout_backward_impl(g, mask, scale, tt_frame_is_fake(f));
    return out ? tt_return(f, 0, out) : tt_errcode();
}

/* The derivative scales by 1 / (1 - p) in training (0 for p = 1), by 1
 * otherwise; it reads the mask (output 1). PyTorch's derivatives.yaml
 * takes a None train as 1 here although its forward trains then: this
 * scale follows the forward, so the gradient is the forward's. */
static tt_status setup_dropout(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                               const tt_value *out, int nout)
{
    (void)nin, (void)nout;
    double p = in[1].u.f;
    bool train = in[2].kind == TT_V_NONE || in[2].u.b;
    tt_status st = tt_ctx_save_for_backward(ctx, 1, &out[1].u.t);
    return st ? st : tt_ctx_save_float(ctx, "scale", !train ? 1 : p == 1 ? 0 : 1 / (1 - p));
}

static tt_status dropout_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                  tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    double scale;
    tt_status st = tt_ctx_get_float(ctx, "scale", &scale);
    if (st)
        return st;
    tt_tensor *r = tt__call_op(TT_OP_NATIVE_DROPOUT_BACKWARD,
                               TT_ARGS(tt_v_tensor(g[0]), tt_v_tensor(tt_ctx_saved(ctx, 0)),
                                       tt_v_float(scale)));
    return tt__put_grad(ctx, gi, 0, r);
}

/* native_dropout_backward is linear in grad_output: its derivative is
 * itself, with the same mask and scale. */
static tt_status setup_dropout_backward(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                                        const tt_value *out, int nout)
{
    (void)nin, (void)out, (void)nout;
    tt_status st = tt_ctx_save_for_backward(ctx, 1, &in[1].u.t);
    return st ? st : tt_ctx_save_float(ctx, "scale", in[2].u.f);
}

static tt_status dropout_backward_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                           tt_tensor **gi, int ni)
{
    return dropout_backward(ctx, g, ng, gi, ni);
}

#undef TT__FAMILY_DROPOUT
#define TT__FAMILY_DROPOUT TT__ROW
static const tt__builtin_row rows[] = {TT__FAMILY_ROWS};

tt_status tt__register_dropout(tt_library *lib)
{
    return TT__DEFINE_ROWS(lib, rows);
}

/* ---------------------------------------------------------- typed wrappers */

tt_tensor *tt_dropout(const tt_tensor *x, double p, bool training)
{
    if (!(p >= 0 && p <= 1)) { /* F.dropout checks p also when not training */
        tt_error(TT_EINVAL, "tt_dropout: argument 'p': expected a probability in [0, 1], "
                            "got %g",
                 p);
        return NULL;
    }
    /* Not training: x's values. A view rather than x retained, so that in a
     * scope the scope owns the result as any other (a retained x would
     * outlive the scope's end by the extra reference). */
    if (x && !training)
        return tt_view(x, tt_ndim(x), tt_sizes(x));
    tt_tensor *out[2] = {NULL, NULL};
    tt_status st;
    if (x && tt__fast_path(TT_OP_NATIVE_DROPOUT, 1, &x)) {
        st = dropout_forward(x, p, true, false, out);
    } else {
        st = call_results(TT_OP_NATIVE_DROPOUT,
                          TT_ARGS(tt_v_tensor(x), tt_v_float(p), tt_v_bool(true)), out, 2);
    }
    return st ? NULL : first_result(out, 2);
}
