/* Built-in ops: the activations a convolutional network uses (leaky_relu,
 * elu, hardtanh, hardswish, hardsigmoid, softplus), each with PyTorch's
 * backward op (leaky_relu_backward, ...) as its derivative, so a traced
 * backward reads as in an exported PyTorch program: one node per
 * activation.
 *
 * One function computes an output's metadata (the input's shape, PyTorch's
 * elementwise output strides) and, for real inputs only, its values, so
 * the fake kernel is the kernel itself. Each formula is written once, in
 * the type it computes in (f32 in f32, as PyTorch's CPU kernels), in
 * ops/pointwise_ops.h, whose lists the fusion pass expands too, so a
 * compiled chain fuses the forward activations and agrees with eager bit
 * for bit. */
#include "elementwise_impl.h"
#include "pointwise_ops.h"
#include "tt_nn.h"

/* The activations, the row's data (runtime/builtin_ops.h); a forward row
 * and its backward row carry the same kind. */
typedef enum {
    ACT_LEAKY_RELU,
    ACT_ELU,
    ACT_HARDTANH,
    ACT_HARDSWISH,
    ACT_HARDSIGMOID,
    ACT_SOFTPLUS,
    ACT_COUNT
} act_kind;

/* Each kind's forward and backward op, for messages and backward rules. */
static const tt_builtin_id act_fwd[ACT_COUNT] = {
    TT_OP_LEAKY_RELU, TT_OP_ELU, TT_OP_HARDTANH, TT_OP_HARDSWISH, TT_OP_HARDSIGMOID,
    TT_OP_SOFTPLUS};
static const tt_builtin_id act_bwd[ACT_COUNT] = {
    TT_OP_LEAKY_RELU_BACKWARD, TT_OP_ELU_BACKWARD, TT_OP_HARDTANH_BACKWARD,
    TT_OP_HARDSWISH_BACKWARD, TT_OP_HARDSIGMOID_BACKWARD, TT_OP_SOFTPLUS_BACKWARD};
/* PyTorch's kernel names, which its dtype errors quote. */
static const char *const act_cpu_name[ACT_COUNT] = {
    "leaky_relu_cpu", "elu_cpu", "hardtanh", "hardswish_cpu", "hardsigmoid_cpu",
    "softplus_cpu"};

/* The Scalar parameters, in schema order:
 *   leaky_relu  negative_slope
 *   elu         alpha, scale, input_scale (the backward: and is_result)
 *   hardtanh    min_val, max_val
 *   softplus    beta, threshold */
#define ACT_MAXP 4
static const int act_nparams[ACT_COUNT] = {1, 3, 2, 0, 0, 2};
static const double act_defaults[ACT_COUNT][ACT_MAXP] = {
    [ACT_LEAKY_RELU] = {0.01}, [ACT_ELU] = {1, 1, 1}, [ACT_HARDTANH] = {-1, 1},
    [ACT_SOFTPLUS] = {1, 20}};

/* ------------------------------------------------------------ formulas */

/* y = f(a) and dL/dx = b(g, x) for kind k, parameters p, in type T. The
 * expressions follow PyTorch's CPU kernels (activation.cpp, 1.13). */
#define ACT_FORMULAS(T, EXP, EXPM1, LOG1P)                                     \
    static inline T act_fwd_##T(act_kind k, const T *p, T a)                   \
    {                                                                          \
        switch (k) {                                                           \
        case ACT_LEAKY_RELU: return TT_LEAKY_RELU(T, a, p[0]);                 \
        case ACT_ELU: return TT_ELU(T, EXPM1, a, p[0], p[1], p[2]);            \
        /* clamp: NaN kept; max_val when min_val > max_val, as PyTorch's */   \
        case ACT_HARDTANH: return TT_HARDTANH(T, a, p[0], p[1]);               \
        case ACT_HARDSWISH: return TT_HARDSWISH(T, a);                         \
        case ACT_HARDSIGMOID: return TT_HARDSIGMOID(T, a);                     \
        case ACT_SOFTPLUS: return TT_SOFTPLUS(T, EXP, LOG1P, a, p[0], p[1]);   \
        default: return a;                                                     \
        }                                                                      \
    }                                                                          \
    /* x is self, or elu's result when p[3] (is_result) is set. */            \
    static inline T act_bwd_##T(act_kind k, const T *p, T g, T x)              \
    {                                                                          \
        switch (k) {                                                           \
        case ACT_LEAKY_RELU: return x > 0 ? g : g * p[0];                      \
        case ACT_ELU: {                                                        \
            T neg = (T)(p[0] * p[1]);                                          \
            if (p[3] != 0)                                                     \
                return x <= 0 ? g * p[2] * (x + neg) : g * p[1];               \
            return x <= 0 ? g * p[2] * neg * EXP(x * p[2]) : g * p[1];         \
        }                                                                      \
        case ACT_HARDTANH: return x <= p[0] || x >= p[1] ? (T)0 : g;           \
        case ACT_HARDSWISH: /* PyTorch's vectorized rule: g from 3 on */    \
            return x < (T)-3 ? (T)0 : x >= (T)3 ? g : g * (x / (T)3 + (T)0.5); \
        case ACT_HARDSIGMOID: return x > (T)-3 && x < (T)3 ? g * (T)(1.0 / 6) : (T)0; \
        case ACT_SOFTPLUS: {                                                   \
            T z = EXP(x * p[0]);                                               \
            return x * p[0] > p[1] ? g : g * z / (z + (T)1);                   \
        }                                                                      \
        default: return g;                                                     \
        }                                                                      \
    }
ACT_FORMULAS(float, expf, expm1f, log1pf)
ACT_FORMULAS(double, exp, expm1, log1p)

/* ---------------------------------------------------------------- loops */

typedef struct {
    act_kind kind;
    tt_dtype dt;
    float pf[ACT_MAXP];
    double pd[ACT_MAXP];
} act_ctx;

static act_ctx act_ctx_make(act_kind kind, tt_dtype dt, const double *p)
{
    act_ctx c = {.kind = kind, .dt = dt};
    for (int i = 0; i < ACT_MAXP; i++)
        c.pf[i] = (float)p[i], c.pd[i] = p[i];
    return c;
}

/* One loop per kind and float type, the kind a constant, so the formula's
 * switch folds away and a contiguous loop vectorizes. Operands: out, x
 * (forward) or out, grad, x (backward). */
#define ACT_LOOPS(T, P, K)                                                     \
    static void act_f_##T##_##K(char **d, const int64_t *s, int64_t n, void *vc) \
    {                                                                          \
        const T *p = ((const act_ctx *)vc)->P;                                 \
        if (s[0] == sizeof(T) && s[1] == sizeof(T)) {                          \
            T *restrict o = (T *)d[0];                                         \
            const T *restrict x = (const T *)d[1];                             \
            for (int64_t i = 0; i < n; i++)                                    \
                o[i] = act_fwd_##T(K, p, x[i]);                                \
            return;                                                            \
        }                                                                      \
        for (int64_t i = 0; i < n; i++)                                        \
            *(T *)(d[0] + i * s[0]) = act_fwd_##T(K, p, *(const T *)(d[1] + i * s[1])); \
    }                                                                          \
    static void act_b_##T##_##K(char **d, const int64_t *s, int64_t n, void *vc) \
    {                                                                          \
        const T *p = ((const act_ctx *)vc)->P;                                 \
        if (s[0] == sizeof(T) && s[1] == sizeof(T) && s[2] == sizeof(T)) {     \
            T *restrict o = (T *)d[0];                                         \
            const T *restrict g = (const T *)d[1], *restrict x = (const T *)d[2]; \
            for (int64_t i = 0; i < n; i++)                                    \
                o[i] = act_bwd_##T(K, p, g[i], x[i]);                          \
            return;                                                            \
        }                                                                      \
        for (int64_t i = 0; i < n; i++)                                        \
            *(T *)(d[0] + i * s[0]) = act_bwd_##T(K, p, *(const T *)(d[1] + i * s[1]), \
                                                  *(const T *)(d[2] + i * s[2])); \
    }
#define ACT_KIND_LOOPS(K) ACT_LOOPS(float, pf, K) ACT_LOOPS(double, pd, K)
ACT_KIND_LOOPS(ACT_LEAKY_RELU)
ACT_KIND_LOOPS(ACT_ELU)
ACT_KIND_LOOPS(ACT_HARDTANH)
ACT_KIND_LOOPS(ACT_HARDSWISH)
ACT_KIND_LOOPS(ACT_HARDSIGMOID)
ACT_KIND_LOOPS(ACT_SOFTPLUS)

#define ACT_ROW(PRE, T)                                                        \
    {PRE##_##T##_ACT_LEAKY_RELU, PRE##_##T##_ACT_ELU, PRE##_##T##_ACT_HARDTANH, \
     PRE##_##T##_ACT_HARDSWISH, PRE##_##T##_ACT_HARDSIGMOID, PRE##_##T##_ACT_SOFTPLUS}
static const tt_loop_fn act_fwd_loops[2][ACT_COUNT] = {ACT_ROW(act_f, float),
                                                       ACT_ROW(act_f, double)};
static const tt_loop_fn act_bwd_loops[2][ACT_COUNT] = {ACT_ROW(act_b, float),
                                                       ACT_ROW(act_b, double)};

/* hardtanh's integers: through f64, exact for them (the limits are
 * whole numbers by then). */
static void act_f_any(char **d, const int64_t *s, int64_t n, void *vc)
{
    const act_ctx *c = vc;
    for (int64_t i = 0; i < n; i++) {
        double a = tt__load(d[1] + i * s[1], c->dt);
        tt__store(d[0] + i * s[0], c->dt, act_fwd_double(c->kind, c->pd, a));
    }
}

static tt_loop_fn loop_for(const tt_loop_fn (*table)[ACT_COUNT], tt_loop_fn any, act_kind k,
                           tt_dtype dt)
{
    return dt == TT_F32 ? table[0][k] : dt == TT_F64 ? table[1][k] : any;
}

/* ------------------------------------------------------------- forward */

/* PyTorch's dtype rules: floating point only, but hardtanh (a clamp) takes
 * integers too, not bool. */
static tt_status act_check_dtype(act_kind k, const char *name, const char *arg, int argno,
                                 tt_dtype dt)
{
    if (tt_dtype_is_float(dt))
        return TT_OK;
    if (k == ACT_HARDTANH && dt != TT_BOOL)
        return TT_OK;
    if (k == ACT_HARDTANH)
        return tt_error(TT_EDTYPE, "%s: argument '%s' (#%d): Bool inputs not supported for "
                                   "hardtanh", name, arg, argno);
    return tt_error(TT_EDTYPE, "%s: argument '%s' (#%d): \"%s\" not implemented for %s "
                               "tensors; expects a floating point tensor", name, arg, argno,
                    act_cpu_name[k], tt_dtype_name(dt));
}

/* activation k of x with parameters p: a new tensor of x's shape, dtype
 * and layout (fake for a fake x). */
static tt_tensor *act_forward(act_kind k, const tt_tensor *x, const double *p)
{
    const char *name = tt__op_label(act_fwd[k]);
    tt_dtype dt = tt_dtype_of(x);
    if (act_check_dtype(k, name, "self", 1, dt))
        return NULL;
    double ip[ACT_MAXP];
    if (!tt_dtype_is_float(dt)) { /* hardtanh: PyTorch truncates the limits */
        for (int i = 0; i < ACT_MAXP; i++)
            ip[i] = trunc(p[i]);
        p = ip;
        if (dt == TT_U8 && (p[0] < 0 || p[1] < 0)) {
            tt_error(TT_EINVAL, "%s: argument '%s' (#%d): cannot do hardtanh on an unsigned "
                                "type with negative limits (got %g)", name,
                     p[0] < 0 ? "min_val" : "max_val", p[0] < 0 ? 2 : 3, p[0] < 0 ? p[0] : p[1]);
            return NULL;
        }
    }
    tt_size strides[TT_MAX_DIMS];
    tt__elementwise_strides(1, &x, x->ndim, x->sizes, strides);
    bool fake = x->storage->fake;
    tt_tensor *out = tt__ops_new(fake, x->ndim, x->sizes, strides, dt);
    if (!out || fake || tt_numel(out) == 0)
        return out;
    act_ctx c = act_ctx_make(k, dt, p);
    tt_status st = tt__for_each_in(2, 1, (tt_tensor *[]){out, (tt_tensor *)x},
                                   loop_for(act_fwd_loops, act_f_any, k, dt), &c);
    return st ? tt_release(out) : out;
}

/* Reads Scalar arguments first.. of kind k into p, PyTorch's default for
 * one the call left out. */
static tt_status act_params(tt_frame *f, act_kind k, int first, double *p)
{
    for (int i = 0; i < ACT_MAXP; i++)
        p[i] = act_defaults[k][i];
    for (int i = 0; i < act_nparams[k]; i++) {
        tt_status st = tt_frame_nargs(f) > first + i ? tt_arg_float(f, first + i, &p[i]) : TT_OK;
        if (st)
            return st;
    }
    return TT_OK;
}

static tt_status act_kernel(tt_frame *f)
{
    act_kind k = (act_kind)KIND_OF(tt_frame_userdata(f));
    tt_tensor *x;
    double p[ACT_MAXP];
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &x)) || (st = act_params(f, k, 1, p)))
        return st;
    tt_tensor *r = act_forward(k, x, p);
    return r ? tt_return(f, 0, r) : tt_errcode();
}

/* ------------------------------------------------------------ backward */

/* The backward op of kind k: grad_output g against x (self, or elu's
 * result with is_result), broadcast together, in their result dtype. */
static tt_tensor *act_backward(act_kind k, const tt_tensor *g, const tt_tensor *x,
                               const double *p, int xargno)
{
    const char *name = tt__op_label(act_bwd[k]);
    const tt_tensor *ins[2] = {g, x};
    const char *xname = k == ACT_ELU ? "self_or_result" : "self";
    int nd;
    tt_size sizes[TT_MAX_DIMS], strides[TT_MAX_DIMS];
    if (tt__broadcast(name, 2, ins, (const char *[]){"grad_output", xname},
                      (const int[]){1, xargno}, &nd, sizes))
        return NULL;
    tt_dtype dt = tt__result_type(2, ins, 0, NULL);
    if (act_check_dtype(k, name, xname, xargno, dt))
        return NULL;
    if (k == ACT_HARDTANH && !tt_dtype_is_float(dt)) {
        tt_error(TT_EDTYPE, "%s: argument 'self' (#2): expects floating point tensors, got %s",
                 name, tt_dtype_name(dt));
        return NULL;
    }
    if (k == ACT_LEAKY_RELU && p[3] != 0 && p[0] < 0) {
        tt_error(TT_EINVAL, "%s: argument 'negative_slope' (#3): In-place leakyReLu backward "
                            "calculation is triggered with a negative slope (%g) which is not "
                            "supported (self_is_result needs negative_slope >= 0)",
                 name, p[0]);
        return NULL;
    }
    /* PyTorch's leaky_relu_backward iterates self first, the others
     * grad_output first: the output's layout follows that operand. */
    const tt_tensor *order[2] = {k == ACT_LEAKY_RELU ? x : g, k == ACT_LEAKY_RELU ? g : x};
    tt__elementwise_strides(2, order, nd, sizes, strides);
    bool fake = tt__any_fake(2, ins);
    tt_tensor *out = tt__ops_new(fake, nd, sizes, strides, dt);
    if (!out || fake || tt_numel(out) == 0)
        return out;
    tt_tensor *cg = as_dtype(g, dt), *cx = cg ? as_dtype(x, dt) : NULL;
    tt_status st = cx ? TT_OK : tt_errcode();
    if (!st) {
        tt_tensor bg, bx;
        tt__broadcast_alias(&bg, cg, nd, sizes);
        tt__broadcast_alias(&bx, cx, nd, sizes);
        act_ctx c = act_ctx_make(k, dt, p);
        st = tt_for_each(3, (tt_tensor *[]){out, &bg, &bx},
                         loop_for(act_bwd_loops, NULL, k, dt), &c);
    }
    tt_release(cg);
    tt_release(cx);
    return st ? tt_release(out) : out;
}

/* The backward ops' schemas are PyTorch's:
 *   leaky_relu_backward(grad_output, self, negative_slope, self_is_result)
 *   elu_backward(grad_output, alpha, scale, input_scale, is_result,
 *                self_or_result)
 *   hardtanh_backward(grad_output, self, min_val, max_val)
 *   hardswish_backward(grad_output, self), hardsigmoid_backward(...)
 *   softplus_backward(grad_output, self, beta, threshold) */
static tt_status act_backward_kernel(tt_frame *f)
{
    act_kind k = (act_kind)KIND_OF(tt_frame_userdata(f));
    tt_tensor *g, *x;
    double p[ACT_MAXP];
    bool flag = false;
    int xarg = k == ACT_ELU ? 5 : 1;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &g)) || (st = tt_arg_tensor(f, xarg, &x)) ||
        (st = act_params(f, k, k == ACT_ELU ? 1 : 2, p)))
        return st;
    if (k == ACT_LEAKY_RELU && (st = tt_arg_bool(f, 3, &flag)))
        return st;
    if (k == ACT_ELU && (st = tt_arg_bool(f, 4, &flag)))
        return st;
    p[3] = flag; /* leaky_relu's self_is_result, elu's is_result */
    tt_tensor *r = act_backward(k, g, x, p, xarg + 1);
    return r ? tt_return(f, 0, r) : tt_errcode();
}

/* Saves self and the parameters (PyTorch's derivatives.yaml passes self,
 * not the result, to each backward op). */
static tt_status setup_act(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                           const tt_value *out, int nout)
{
    (void)out, (void)nout;
    act_kind k = (act_kind)KIND_OF(tt_ctx_userdata(ctx));
    tt_status st = tt_ctx_save_for_backward(ctx, 1, (tt_tensor *[]){in[0].u.t});
    for (int i = 0; i < act_nparams[k] && !st; i++) {
        double v = act_defaults[k][i];
        if (1 + i < nin)
            v = in[1 + i].kind == TT_V_FLOAT ? in[1 + i].u.f
              : in[1 + i].kind == TT_V_BOOL ? in[1 + i].u.b : (double)in[1 + i].u.i;
        st = tt_ctx_save_float(ctx, (const char *[]){"p0", "p1", "p2"}[i], v);
    }
    return st;
}

static tt_status act_derivative(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    act_kind k = (act_kind)KIND_OF(tt_ctx_userdata(ctx));
    double p[3] = {0};
    tt_status st = TT_OK;
    for (int i = 0; i < act_nparams[k] && !st; i++)
        st = tt_ctx_get_float(ctx, (const char *[]){"p0", "p1", "p2"}[i], &p[i]);
    if (st)
        return st;
    tt_tensor *x = tt_ctx_saved(ctx, 0), *r;
    tt_value gv = tt_v_tensor(g[0]), xv = tt_v_tensor(x);
    switch (k) {
    case ACT_LEAKY_RELU:
        r = tt__call_op(act_bwd[k], TT_ARGS(gv, xv, tt_v_float(p[0]), tt_v_bool(false)));
        break;
    case ACT_ELU:
        r = tt__call_op(act_bwd[k], TT_ARGS(gv, tt_v_float(p[0]), tt_v_float(p[1]),
                                            tt_v_float(p[2]), tt_v_bool(false), xv));
        break;
    case ACT_HARDTANH:
    case ACT_SOFTPLUS:
        r = tt__call_op(act_bwd[k], TT_ARGS(gv, xv, tt_v_float(p[0]), tt_v_float(p[1])));
        break;
    default:
        r = tt__call_op(act_bwd[k], TT_ARGS(gv, xv));
        break;
    }
    return tt__put_grad(ctx, gi, 0, r);
}

#undef TT__FAMILY_ACTIVATION
#define TT__FAMILY_ACTIVATION TT__ROW
static const tt__builtin_row rows[] = {TT__FAMILY_ROWS};

tt_status tt__register_activation(tt_library *lib)
{
    return TT__DEFINE_ROWS(lib, rows);
}

/* ---------------------------------------------------------- typed wrappers */

/* Calls activation k with its parameters p (the schema's, all given). */
static tt_tensor *act_call(act_kind k, const tt_tensor *x, const double *p)
{
    if (tt__fast_path(act_fwd[k], 1, &x))
        return act_forward(k, x, p);
    tt_value args[1 + ACT_MAXP];
    args[0] = tt_v_tensor(x);
    for (int i = 0; i < act_nparams[k]; i++)
        args[1 + i] = tt_v_float(p[i]);
    return tt__call_op(act_fwd[k], args, 1 + act_nparams[k]);
}

tt_tensor *tt_leaky_relu(const tt_tensor *x, double negative_slope)
{
    return act_call(ACT_LEAKY_RELU, x, (double[ACT_MAXP]){negative_slope});
}

tt_tensor *tt_elu(const tt_tensor *x, double alpha)
{
    return act_call(ACT_ELU, x, (double[ACT_MAXP]){alpha, 1, 1});
}

tt_tensor *tt_hardtanh(const tt_tensor *x, double min_val, double max_val)
{
    return act_call(ACT_HARDTANH, x, (double[ACT_MAXP]){min_val, max_val});
}

tt_tensor *tt_hardswish(const tt_tensor *x)
{
    return act_call(ACT_HARDSWISH, x, (double[ACT_MAXP]){0});
}

tt_tensor *tt_hardsigmoid(const tt_tensor *x)
{
    return act_call(ACT_HARDSIGMOID, x, (double[ACT_MAXP]){0});
}

tt_tensor *tt_softplus(const tt_tensor *x, double beta, double threshold)
{
    return act_call(ACT_SOFTPLUS, x, (double[ACT_MAXP]){beta, threshold});
}
