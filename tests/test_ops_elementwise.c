/* The elementwise family: every op against a reference loop in f64 over
 * dtype x shape x layout tables, PyTorch's type promotion, output strides
 * as TensorIterator lays them out, fake (meta) outputs equal to real ones,
 * in-place semantics, and every error with its message. */
#include "tt_test.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define NDT 6
static const tt_dtype dtypes[NDT] = {TT_F32, TT_F64, TT_I64, TT_I32, TT_U8, TT_BOOL};

/* ------------------------------------------------------------ values */

static uint64_t rng_state = 88172645463325252ull;

static uint64_t next_u64(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* What values a generated input holds. */
typedef enum { V_ANY, V_POS, V_SMALL } vkind;

static double gen(tt_dtype dt, vkind k)
{
    uint64_t r = next_u64();
    double u = (double)(r >> 11) / 9007199254740992.0; /* [0, 1) */
    switch (dt) {
    case TT_BOOL: return (double)(r & 1);
    case TT_U8: return k == V_SMALL ? (double)(r % 4) : (double)(r % 10);
    case TT_I32:
    case TT_I64:
        return k == V_POS ? (double)(1 + r % 6) : k == V_SMALL ? (double)(r % 4)
                                                               : (double)((int)(r % 11) - 5);
    default:
        return k == V_POS ? 0.1 + 3 * u : k == V_SMALL ? 3 * u : -3 + 6 * u;
    }
}

static void put(void *buf, tt_dtype dt, int64_t i, double v)
{
    switch (dt) {
    case TT_F32: ((float *)buf)[i] = (float)v; break;
    case TT_F64: ((double *)buf)[i] = v; break;
    case TT_I64: ((int64_t *)buf)[i] = (int64_t)v; break;
    case TT_I32: ((int32_t *)buf)[i] = (int32_t)v; break;
    case TT_U8: ((uint8_t *)buf)[i] = (uint8_t)v; break;
    default: ((bool *)buf)[i] = v != 0; break;
    }
}

static double get(const void *buf, tt_dtype dt, int64_t i)
{
    switch (dt) {
    case TT_F32: return ((const float *)buf)[i];
    case TT_F64: return ((const double *)buf)[i];
    case TT_I64: return (double)((const int64_t *)buf)[i];
    case TT_I32: return ((const int32_t *)buf)[i];
    case TT_U8: return ((const uint8_t *)buf)[i];
    default: return ((const bool *)buf)[i];
    }
}

static int64_t prod(int nd, const int64_t *s)
{
    int64_t n = 1;
    for (int i = 0; i < nd; i++)
        n *= s[i];
    return n;
}

static tt_tensor *filled(tt_dtype dt, int nd, const int64_t *sizes, vkind k)
{
    int64_t n = prod(nd, sizes);
    void *buf = malloc((size_t)(n ? n : 1) * 8);
    for (int64_t i = 0; i < n; i++)
        put(buf, dt, i, gen(dt, k));
    tt_tensor *t = tt_from_data(nd, sizes, dt, buf);
    free(buf);
    ck_assert_msg(t != NULL, "tt_from_data: %s", tt_errmsg());
    return t;
}

/* The layouts an input comes in, all with the same logical sizes. */
typedef enum { L_CONTIG, L_TRANS, L_SLICE, L_EXPAND, L_COUNT } layout;
static const char *const layout_names[L_COUNT] = {"contiguous", "transposed", "sliced", "expanded"};

static tt_tensor *make(tt_dtype dt, int nd, const int64_t *sizes, layout l, vkind k)
{
    int64_t bs[TT_MAX_DIMS];
    memcpy(bs, sizes, sizeof(int64_t) * (size_t)nd);
    tt_tensor *base, *t;
    if (l == L_TRANS && nd >= 2) {
        bs[0] = sizes[nd - 1];
        bs[nd - 1] = sizes[0];
        base = filled(dt, nd, bs, k);
        t = tt_transpose(base, 0, nd - 1);
    } else if (l == L_SLICE && nd >= 1) {
        bs[nd - 1] = 2 * sizes[nd - 1] + 1;
        base = filled(dt, nd, bs, k);
        t = tt_slice(base, nd - 1, 1, bs[nd - 1], 2);
    } else if (l == L_EXPAND && nd >= 1 && sizes[0] != 1) {
        bs[0] = 1;
        base = filled(dt, nd, bs, k);
        t = tt_expand(base, nd, sizes);
    } else {
        return filled(dt, nd, sizes, k);
    }
    ck_assert_msg(t != NULL, "making a %s input: %s", layout_names[l], tt_errmsg());
    tt_release(base);
    return t;
}

/* The elements of t in logical order, as doubles (n: room in out). */
static void read_all(const tt_tensor *t, double *out, int64_t n)
{
    int64_t numel = tt_numel(t);
    ck_assert_int_le(numel, n);
    size_t es = tt_dtype_size(tt_dtype_of(t));
    void *buf = malloc((size_t)(numel ? numel : 1) * es);
    ck_assert_int_eq(tt_to_buffer(t, buf, (size_t)numel * es), TT_OK);
    for (int64_t i = 0; i < numel; i++)
        out[i] = get(buf, tt_dtype_of(t), i);
    free(buf);
}

/* ------------------------------------------------- PyTorch's promotion */

static int rank(tt_dtype d)
{
    switch (d) {
    case TT_BOOL: return 0;
    case TT_U8: return 1;
    case TT_I32: return 2;
    case TT_I64: return 3;
    case TT_F32: return 4;
    default: return 5;
    }
}

static bool isf(tt_dtype d) { return d == TT_F32 || d == TT_F64; }

/* For this set of dtypes the lattice is a chain. */
static tt_dtype promote(tt_dtype a, tt_dtype b) { return rank(a) >= rank(b) ? a : b; }

static int combine(int hi, int lo)
{
    if (hi < 0)
        return lo;
    if (lo < 0)
        return hi;
    if (isf((tt_dtype)hi))
        return hi;
    if (hi == TT_BOOL || isf((tt_dtype)lo))
        return promote((tt_dtype)hi, (tt_dtype)lo);
    return hi;
}

/* result_type of tensors (dtype, ndim) and Python scalars ('i', 'f', 'b'):
 * dimensioned tensors decide, 0-dim tensors and then scalars only raise
 * the category; a Python float is the default dtype f32. */
static tt_dtype ref_type(int n, const tt_dtype *dt, const int *nd, const char *scalars)
{
    int dim = -1, zero = -1, wrapped = -1;
    for (int i = 0; i < n; i++) {
        int *slot = nd[i] > 0 ? &dim : &zero;
        *slot = *slot < 0 ? (int)dt[i] : (int)promote((tt_dtype)*slot, dt[i]);
    }
    for (const char *s = scalars; s && *s; s++) {
        tt_dtype d = *s == 'f' ? TT_F32 : *s == 'b' ? TT_BOOL : TT_I64;
        wrapped = wrapped < 0 ? (int)d : (int)promote((tt_dtype)wrapped, d);
    }
    return (tt_dtype)combine(dim, combine(zero, wrapped));
}

/* v converted to dt as a C cast does (integers wrap). */
static double castv(tt_dtype dt, double v)
{
    switch (dt) {
    case TT_F32: return (float)v;
    case TT_F64: return v;
    case TT_I64: return (double)(int64_t)v;
    case TT_I32: return (int32_t)(int64_t)v;
    case TT_U8: return (uint8_t)(int64_t)v;
    default: return v != 0;
    }
}

static bool close_to(tt_dtype dt, double got, double want)
{
    if (isnan(want))
        return isnan(got);
    if (isinf(want))
        return got == want;
    if (dt == TT_F32)
        return fabs(got - want) <= 2e-5 * fabs(want) + 2e-5;
    if (dt == TT_F64)
        return fabs(got - want) <= 1e-12 * fabs(want) + 1e-12;
    return got == want;
}

static void assert_strides(const tt_tensor *t, int nd, const int64_t *want, const char *what)
{
    char s[128];
    tt_strides_str(t, s, sizeof s);
    ck_assert_msg(tt_ndim(t) == nd, "%s: %d dims", what, tt_ndim(t));
    for (int d = 0; d < nd; d++)
        ck_assert_msg(tt_dim_stride(t, d) == want[d], "%s: strides %s, dim %d should be %lld",
                      what, s, d, (long long)want[d]);
}

/* Index of output element idx (of shape nd, s) in a row-major input of
 * shape (ni, si) broadcast to it. */
static int64_t bidx(int nd, const int64_t *idx, int ni, const int64_t *si)
{
    int64_t off = 0;
    for (int k = 0; k < ni; k++)
        off = off * si[k] + (si[k] == 1 ? 0 : idx[nd - ni + k]);
    return off;
}

static void next_index(int nd, const int64_t *s, int64_t *idx)
{
    for (int d = nd - 1; d >= 0; d--) {
        if (++idx[d] < s[d])
            return;
        idx[d] = 0;
    }
}

/* The broadcast shape of two shapes (they are compatible in the tables). */
static int bshape(int na, const int64_t *a, int nb, const int64_t *b, int64_t *out)
{
    int nd = na > nb ? na : nb;
    for (int d = 0; d < nd; d++) {
        int64_t x = d - (nd - na) >= 0 ? a[d - (nd - na)] : 1;
        int64_t y = d - (nd - nb) >= 0 ? b[d - (nd - nb)] : 1;
        out[d] = x == 1 ? y : x;
    }
    return nd;
}

/* ---------------------------------------------------------- binary ops */

typedef enum {
    B_ADD, B_SUB, B_MUL, B_DIV, B_POW, B_EQ, B_NE, B_LT, B_LE, B_GT, B_GE, B_COUNT
} bop;

static const char *const bop_names[B_COUNT] = {"add", "sub", "mul", "div", "pow", "eq",
                                               "ne", "lt", "le", "gt", "ge"};
static const char *const bop_tensor_ops[B_COUNT] = {
    "tt::add.Tensor", "tt::sub.Tensor", "tt::mul.Tensor", "tt::div.Tensor",
    "tt::pow.Tensor_Tensor", "tt::eq.Tensor", "tt::ne.Tensor", "tt::lt.Tensor",
    "tt::le.Tensor", "tt::gt.Tensor", "tt::ge.Tensor"};
static const char *const bop_scalar_ops[B_COUNT] = {
    "tt::add.Scalar", "tt::sub.Scalar", "tt::mul.Scalar", "tt::div.Scalar",
    "tt::pow.Tensor_Scalar", "tt::eq.Scalar", "tt::ne.Scalar", "tt::lt.Scalar",
    "tt::le.Scalar", "tt::gt.Scalar", "tt::ge.Scalar"};

static bool is_cmp(bop op) { return op >= B_EQ; }

static double ref_ipow(int64_t b, int64_t e)
{
    if (e < 0)
        return b == 1 ? 1 : b == -1 ? (e % 2 ? -1 : 1) : 0;
    int64_t r = 1;
    for (int64_t i = 0; i < e; i++)
        r *= b;
    return (double)r;
}

/* One element of op in the common dtype c. */
static double ref_bin(bop op, tt_dtype c, double a, double b, double alpha)
{
    a = castv(c, a);
    b = castv(c, b);
    bool bl = c == TT_BOOL;
    switch (op) {
    case B_ADD: return bl ? (a != 0 || (alpha != 0 && b != 0)) : castv(c, a + alpha * b);
    case B_SUB: return castv(c, a - alpha * b);
    case B_MUL: return bl ? (a != 0 && b != 0) : castv(c, a * b);
    case B_DIV: return a / b;
    case B_POW:
        if (bl)
            return a != 0 || b == 0;
        return isf(c) ? pow(a, b) : castv(c, ref_ipow((int64_t)a, (int64_t)b));
    case B_EQ: return a == b;
    case B_NE: return a != b;
    case B_LT: return a < b;
    case B_LE: return a <= b;
    case B_GT: return a > b;
    default: return a >= b;
    }
}

/* The dtype computations run in, and whether the call must fail. */
static tt_dtype bin_common(bop op, tt_dtype rt)
{
    return op == B_DIV && !isf(rt) ? TT_F32 : rt;
}

/* Runs op through its typed wrapper (alpha through tt_add_scaled, or the
 * dispatcher for sub). */
static tt_tensor *run_bin(bop op, const tt_tensor *a, const tt_tensor *b, double alpha)
{
    switch (op) {
    case B_ADD: return alpha == 1 ? tt_add(a, b) : tt_add_scaled(a, b, alpha);
    case B_SUB:
        if (alpha == 1)
            return tt_sub(a, b);
        /* A whole alpha as an int: a float one is refused for integers. */
        return tt_call(tt_op_find("tt::sub.Tensor"), tt_v_tensor(a), tt_v_tensor(b),
                       alpha == floor(alpha) ? tt_v_int((int64_t)alpha) : tt_v_float(alpha));
    case B_MUL: return tt_mul(a, b);
    case B_DIV: return tt_div(a, b);
    case B_POW: return tt_pow(a, b);
    case B_EQ: return tt_eq(a, b);
    case B_NE: return tt_ne(a, b);
    case B_LT: return tt_lt(a, b);
    case B_LE: return tt_le(a, b);
    case B_GT: return tt_gt(a, b);
    default: return tt_ge(a, b);
    }
}

static const struct {
    int na;
    int64_t a[3];
    int nb;
    int64_t b[3];
} bshapes[] = {
    {2, {2, 3}, 2, {2, 3}}, {2, {2, 3}, 1, {3}},      {2, {2, 3}, 0, {0}},
    {0, {0}, 2, {2, 3}},    {0, {0}, 0, {0}},         {3, {4, 1, 3}, 2, {2, 1}},
    {2, {0, 3}, 1, {3}},    {2, {2, 0}, 2, {2, 1}},   {1, {1}, 1, {5}},
    {2, {3, 1}, 2, {1, 4}}, {3, {2, 3, 4}, 3, {2, 3, 4}},
};
static const layout layout_pairs[][2] = {
    {L_CONTIG, L_CONTIG}, {L_TRANS, L_CONTIG}, {L_CONTIG, L_TRANS}, {L_SLICE, L_EXPAND},
    {L_EXPAND, L_SLICE},  {L_TRANS, L_TRANS},  {L_SLICE, L_SLICE},
};
#define NLP (int)(sizeof layout_pairs / sizeof layout_pairs[0])
#define NBS (int)(sizeof bshapes / sizeof bshapes[0])

/* Checks out = op(a, b) against the reference, plus the fake and the
 * boxed (dispatcher) paths. */
static void check_binary(bop op, const tt_tensor *a, const tt_tensor *b, double alpha,
                         bool boxed_too, const char *what)
{
    tt_dtype da = tt_dtype_of(a), db = tt_dtype_of(b);
    int na = tt_ndim(a), nb = tt_ndim(b);
    tt_dtype rt = ref_type(2, (tt_dtype[]){da, db}, (int[]){na, nb}, NULL);
    tt_dtype c = bin_common(op, rt);
    tt_dtype out_dt = is_cmp(op) ? TT_BOOL : c;
    tt_tensor *fa = tt_fake_like(a), *fb = tt_fake_like(b);
    tt_clear_error();
    tt_tensor *r = run_bin(op, a, b, alpha);
    tt_tensor *fr = run_bin(op, fa, fb, alpha);
    bool int_alpha_error = (op == B_ADD || op == B_SUB) && !isf(c) && alpha != floor(alpha);
    if (op == B_SUB && c == TT_BOOL) {
        ck_assert_msg(!r && !fr, "%s: bool subtraction was accepted", what);
        ck_assert_error(TT_EDTYPE, "tt::sub: subtraction, the '-' operator, with two bool "
                                   "tensors is not supported; use logical xor instead");
    } else if (op == B_SUB && (da == TT_BOOL || db == TT_BOOL)) {
        /* PyTorch refuses any bool operand of a subtraction. */
        ck_assert_msg(!r && !fr, "%s: subtraction of a bool was accepted", what);
        ck_assert_error(TT_EDTYPE, da == TT_BOOL
                                       ? "tt::sub: argument 'self' (#1): subtraction, the '-' "
                                         "operator, with a bool tensor is not supported"
                                       : "tt::sub: argument 'other' (#2): subtraction, the '-' "
                                         "operator, with a bool tensor is not supported");
    } else if (op == B_POW && c == TT_BOOL) {
        ck_assert_msg(!r && !fr, "%s: bool ** bool was accepted", what);
        ck_assert_error(TT_EDTYPE, "tt::pow: argument 'self' (#1): not implemented for bool "
                                   "tensors");
    } else if (int_alpha_error) {
        ck_assert_msg(!r && !fr, "%s: float alpha with integers was accepted", what);
        ck_assert_error(TT_EINVAL, "argument 'alpha': for integral input tensors, "
                                   "alpha must not be a floating point number (got 0.5)");
    } else {
        ck_assert_msg(r != NULL, "%s: %s", what, tt_errmsg());
        ck_assert_msg(fr != NULL, "%s (fake): %s", what, tt_errmsg());
        ck_assert_msg(tt_dtype_of(r) == out_dt, "%s: dtype %s, expected %s", what,
                      tt_dtype_name(tt_dtype_of(r)), tt_dtype_name(out_dt));
        tt_test_assert_fake_meta(fr, r, what);
        int64_t s[TT_MAX_DIMS], sa[TT_MAX_DIMS], sb[TT_MAX_DIMS], idx[TT_MAX_DIMS] = {0};
        for (int d = 0; d < na; d++)
            sa[d] = tt_dim_size(a, d);
        for (int d = 0; d < nb; d++)
            sb[d] = tt_dim_size(b, d);
        int nd = bshape(na, sa, nb, sb, s);
        ck_assert_int_eq(tt_ndim(r), nd);
        for (int d = 0; d < nd; d++)
            ck_assert_int_eq(tt_dim_size(r, d), s[d]);
        int64_t n = prod(nd, s);
        static double va[4096], vb[4096], vr[4096];
        read_all(a, va, 4096);
        read_all(b, vb, 4096);
        read_all(r, vr, 4096);
        for (int64_t i = 0; i < n; i++, next_index(nd, s, idx)) {
            double x = va[bidx(nd, idx, na, sa)], y = vb[bidx(nd, idx, nb, sb)];
            double want = ref_bin(op, c, x, y, alpha);
            ck_assert_msg(close_to(out_dt, vr[i], want), "%s: element %lld: %s(%g, %g) = %g, "
                          "expected %g", what, (long long)i, bop_names[op], x, y, vr[i], want);
        }
        /* The boxed path gives the same. */
        tt_tensor *boxed = NULL;
        if (alpha == 1 && boxed_too) {
            boxed = tt_call(tt_op_find(bop_tensor_ops[op]), tt_v_tensor(a), tt_v_tensor(b));
            ck_assert_msg(boxed != NULL, "%s (boxed): %s", what, tt_errmsg());
            ck_assert_int_eq(tt_dtype_of(boxed), out_dt);
            static double vx[4096];
            read_all(boxed, vx, 4096);
            for (int64_t i = 0; i < n; i++)
                ck_assert_msg(close_to(out_dt, vx[i], vr[i]) || (isnan(vx[i]) && isnan(vr[i])),
                              "%s (boxed): element %lld", what, (long long)i);
            char s1[128], s2[128];
            ck_assert_str_eq(tt_strides_str(boxed, s1, sizeof s1), tt_strides_str(r, s2, sizeof s2));
        }
        tt_release(boxed);
    }
    tt_release(r);
    tt_release(fr);
    tt_release(fa);
    tt_release(fb);
}

static vkind b_kind(bop op) { return op == B_POW ? V_SMALL : V_ANY; }

START_TEST(test_binary_tables)
{
    bop op = (bop)_i;
    char what[256];
    for (int ia = 0; ia < NDT; ia++)
        for (int ib = 0; ib < NDT; ib++)
            for (int s = 0; s < NBS; s++)
                for (int l = 0; l < NLP; l++) {
                    /* Every dtype pair on the first layouts; the strided
                     * ones with same and neighbouring dtypes (to keep
                     * the suite fast under the sanitizers). */
                    if (l >= 3 && ib != ia && ib != (ia + 1) % NDT)
                        continue;
                    tt_dtype da = dtypes[ia], db = dtypes[ib];
                    tt_tensor *a = make(da, bshapes[s].na, bshapes[s].a, layout_pairs[l][0], V_ANY);
                    tt_tensor *b = make(db, bshapes[s].nb, bshapes[s].b, layout_pairs[l][1],
                                        b_kind(op));
                    char sa[64], sb[64];
                    snprintf(what, sizeof what, "%s(%s %s %s, %s %s %s)", bop_names[op],
                             tt_dtype_name(da), tt_shape_str(a, sa, sizeof sa),
                             layout_names[layout_pairs[l][0]], tt_dtype_name(db),
                             tt_shape_str(b, sb, sizeof sb), layout_names[layout_pairs[l][1]]);
                    /* The boxed path and the alphas on a few layouts. */
                    check_binary(op, a, b, 1, l < 2, what);
                    if ((op == B_ADD || op == B_SUB) && l < 3) {
                        check_binary(op, a, b, 2, false, what);
                        check_binary(op, a, b, 0.5, false, what);
                    }
                    tt_release(a);
                    tt_release(b);
                }
}
END_TEST

/* The Scalar overloads, through the dispatcher with each kind of Python
 * number, and the typed wrappers. */
START_TEST(test_binary_scalar_tables)
{
    bop op = (bop)_i;
    const tt_op *h = tt_op_find(bop_scalar_ops[op]);
    ck_assert_msg(h != NULL, "%s", tt_errmsg());
    static const struct {
        int nd;
        int64_t s[3];
    } shapes[] = {{2, {2, 3}}, {0, {0}}, {1, {0}}, {3, {3, 1, 2}}};
    const tt_value scalars[] = {tt_v_int(2), tt_v_int(-1), tt_v_float(2.5), tt_v_float(2.0),
                                tt_v_bool(true), tt_v_bool(false)};
    char what[256];
    static double va[4096], vr[4096];
    for (int id = 0; id < NDT; id++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            for (int l = 0; l < L_COUNT; l++)
                for (size_t k = 0; k < sizeof scalars / sizeof scalars[0]; k++) {
                    tt_dtype dt = dtypes[id];
                    tt_tensor *a = make(dt, shapes[s].nd, shapes[s].s, (layout)l, V_ANY);
                    tt_value sc = scalars[k];
                    char kind = sc.kind == TT_V_FLOAT ? 'f' : sc.kind == TT_V_BOOL ? 'b' : 'i';
                    double sv = sc.kind == TT_V_FLOAT ? sc.u.f : sc.kind == TT_V_BOOL ? sc.u.b
                                                                                      : (double)sc.u.i;
                    char sh[64];
                    snprintf(what, sizeof what, "%s(%s %s %s, %c %g)", bop_scalar_ops[op],
                             tt_dtype_name(dt), tt_shape_str(a, sh, sizeof sh), layout_names[l],
                             kind, sv);
                    tt_dtype rt = ref_type(1, &dt, (int[]){shapes[s].nd}, (char[]){kind, 0});
                    tt_dtype c = bin_common(op, rt), out_dt = is_cmp(op) ? TT_BOOL : c;
                    tt_tensor *fa = tt_fake_like(a);
                    tt_clear_error();
                    tt_tensor *r = tt_call(h, tt_v_tensor(a), sc);
                    tt_tensor *fr = tt_call(h, tt_v_tensor(fa), sc);
                    if (op == B_SUB && (c == TT_BOOL || dt == TT_BOOL || kind == 'b')) {
                        ck_assert_msg(!r && !fr, "%s: accepted", what);
                        ck_assert_error(TT_EDTYPE, "subtraction, the '-' operator");
                    } else if (op == B_POW && c == TT_BOOL) {
                        ck_assert_msg(!r && !fr, "%s: accepted", what);
                        ck_assert_error(TT_EDTYPE, "tt::pow: argument 'self' (#1): not "
                                                   "implemented for bool tensors");
                    } else if (op == B_POW && !isf(dt) && kind == 'i' && sv < 0) {
                        ck_assert_msg(!r && !fr, "%s: accepted", what);
                        ck_assert_error(TT_EINVAL, "tt::pow: integers to negative integer powers "
                                                   "are not allowed");
                    } else {
                        ck_assert_msg(r && fr, "%s: %s", what, tt_errmsg());
                        ck_assert_msg(tt_dtype_of(r) == out_dt, "%s: dtype %s, expected %s", what,
                                      tt_dtype_name(tt_dtype_of(r)), tt_dtype_name(out_dt));
                        tt_test_assert_fake_meta(fr, r, what);
                        read_all(a, va, 4096);
                        read_all(r, vr, 4096);
                        for (int64_t i = 0; i < tt_numel(a); i++)
                            ck_assert_msg(close_to(out_dt, vr[i], ref_bin(op, c, va[i], sv, 1)),
                                          "%s: element %lld is %g, expected %g", what,
                                          (long long)i, vr[i], ref_bin(op, c, va[i], sv, 1));
                        /* The typed wrappers agree (they pass whole
                         * numbers as ints, as a C caller means them). */
                        tt_tensor *w = NULL;
                        if (sc.kind != TT_V_BOOL && (sc.kind == TT_V_INT || sv != floor(sv))) {
                            switch (op) {
                            case B_ADD: w = tt_add_scalar(a, sv); break;
                            case B_SUB: w = tt_sub_scalar(a, sv); break;
                            case B_MUL: w = tt_mul_scalar(a, sv); break;
                            case B_DIV: w = tt_div_scalar(a, sv); break;
                            case B_POW: w = tt_pow_scalar(a, sv); break;
                            default: break;
                            }
                        }
                        if (w) {
                            static double vw[4096];
                            ck_assert_int_eq(tt_dtype_of(w), out_dt);
                            read_all(w, vw, 4096);
                            for (int64_t i = 0; i < tt_numel(a); i++)
                                ck_assert_msg(close_to(out_dt, vw[i], vr[i]), "%s (wrapper)", what);
                        }
                        tt_release(w);
                    }
                    tt_release(r);
                    tt_release(fr);
                    tt_release(fa);
                    tt_release(a);
                }
}
END_TEST

START_TEST(test_promotion_cases)
{
    /* The cases PyTorch users meet most, written out. */
    static const struct {
        tt_dtype a;
        int na;
        tt_dtype b;
        int nb;
        bop op;
        tt_dtype want;
    } cases[] = {
        {TT_I32, 1, TT_F32, 1, B_ADD, TT_F32},  {TT_F32, 1, TT_F64, 0, B_ADD, TT_F32},
        {TT_I64, 1, TT_F64, 0, B_ADD, TT_F64},  {TT_I32, 1, TT_I64, 0, B_ADD, TT_I32},
        {TT_BOOL, 1, TT_BOOL, 1, B_ADD, TT_BOOL}, {TT_I32, 1, TT_I32, 1, B_DIV, TT_F32},
        {TT_I64, 1, TT_I64, 0, B_DIV, TT_F32},  {TT_U8, 1, TT_I32, 1, B_MUL, TT_I32},
        {TT_BOOL, 1, TT_U8, 0, B_ADD, TT_U8},   {TT_I32, 0, TT_F64, 0, B_ADD, TT_F64},
        {TT_F64, 0, TT_F32, 1, B_ADD, TT_F32},  {TT_BOOL, 1, TT_F64, 0, B_MUL, TT_F64},
        {TT_I32, 1, TT_F32, 1, B_LT, TT_BOOL},  {TT_F64, 1, TT_I32, 1, B_POW, TT_F64},
        {TT_U8, 1, TT_U8, 1, B_SUB, TT_U8},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t s3[1] = {3};
        tt_tensor *a = make(cases[i].a, cases[i].na, s3, L_CONTIG, V_POS);
        tt_tensor *b = make(cases[i].b, cases[i].nb, s3, L_CONTIG, V_POS);
        tt_tensor *r = run_bin(cases[i].op, a, b, 1);
        ck_assert_msg(r != NULL, "case %zu: %s", i, tt_errmsg());
        ck_assert_msg(tt_dtype_of(r) == cases[i].want, "case %zu: %s %s %s gives %s, expected %s",
                      i, tt_dtype_name(cases[i].a), bop_names[cases[i].op], tt_dtype_name(cases[i].b),
                      tt_dtype_name(tt_dtype_of(r)), tt_dtype_name(cases[i].want));
        tt_release(r);
        tt_release(a);
        tt_release(b);
    }
    /* With Python numbers. */
    tt_tensor *i64 = tt_arange(0, 3, 1, TT_I64), *bl = tt_ones(TT_SHAPE(3), TT_BOOL);
    tt_tensor *f64 = tt_ones(TT_SHAPE(3), TT_F64), *i32z = tt_scalar(3, TT_I32);
    const struct {
        tt_tensor *t;
        tt_value v;
        const char *op;
        tt_dtype want;
    } sc[] = {
        {i64, tt_v_float(2.5), "tt::add.Scalar", TT_F32}, {i64, tt_v_int(2), "tt::add.Scalar", TT_I64},
        {bl, tt_v_int(2), "tt::add.Scalar", TT_I64},      {bl, tt_v_float(2.5), "tt::mul.Scalar", TT_F32},
        {bl, tt_v_bool(true), "tt::add.Scalar", TT_BOOL}, {f64, tt_v_float(2.5), "tt::add.Scalar", TT_F64},
        {i64, tt_v_int(2), "tt::div.Scalar", TT_F32},     {i64, tt_v_float(0.5), "tt::pow.Tensor_Scalar", TT_F32},
        {i32z, tt_v_int(7), "tt::mul.Scalar", TT_I32},    {i32z, tt_v_float(1.0), "tt::sub.Scalar", TT_F32},
        {i64, tt_v_float(2.0), "tt::mul.Scalar", TT_F32}, {i64, tt_v_float(1.5), "tt::lt.Scalar", TT_BOOL},
    };
    for (size_t i = 0; i < sizeof sc / sizeof sc[0]; i++) {
        tt_tensor *r = tt_call(tt_op_find(sc[i].op), tt_v_tensor(sc[i].t), sc[i].v);
        ck_assert_msg(r != NULL, "%s: %s", sc[i].op, tt_errmsg());
        ck_assert_msg(tt_dtype_of(r) == sc[i].want, "scalar case %zu (%s): %s, expected %s", i,
                      sc[i].op, tt_dtype_name(tt_dtype_of(r)), tt_dtype_name(sc[i].want));
        tt_release(r);
    }
    /* Values: bool + bool is logical or; int / int is true division;
     * i64 tensor + 2.5 is computed in f32. */
    bool x[4] = {true, true, false, false}, y[4] = {true, false, true, false};
    tt_tensor *bx = tt_from_data(TT_SHAPE(4), TT_BOOL, x), *by = tt_from_data(TT_SHAPE(4), TT_BOOL, y);
    tt_tensor *bor = tt_add(bx, by), *band = tt_mul(bx, by);
    bool want_or[4] = {true, true, true, false}, want_and[4] = {true, false, false, false}, got[4];
    ck_assert_int_eq(tt_to_buffer(bor, got, sizeof got), TT_OK);
    ck_assert_mem_eq(got, want_or, sizeof got);
    ck_assert_int_eq(tt_to_buffer(band, got, sizeof got), TT_OK);
    ck_assert_mem_eq(got, want_and, sizeof got);
    int32_t n7[2] = {7, -7}, n2[2] = {2, 2};
    tt_tensor *i7 = tt_from_data(TT_SHAPE(2), TT_I32, n7), *i2 = tt_from_data(TT_SHAPE(2), TT_I32, n2);
    tt_tensor *q = tt_div(i7, i2);
    float fq[2];
    ck_assert_int_eq(tt_to_buffer(q, fq, sizeof fq), TT_OK);
    ck_assert(fq[0] == 3.5f && fq[1] == -3.5f);
    tt_tensor *p = tt_add_scalar(i64, 2.5);
    float fp[3];
    ck_assert_int_eq(tt_dtype_of(p), TT_F32);
    ck_assert_int_eq(tt_to_buffer(p, fp, sizeof fp), TT_OK);
    ck_assert(fp[0] == 2.5f && fp[2] == 4.5f);
    tt_tensor *e = tt_exp(i7);
    ck_assert_int_eq(tt_dtype_of(e), TT_F32);
    tt_release(e);
    tt_release(p);
    tt_release(q);
    tt_release(i7);
    tt_release(i2);
    tt_release(bor);
    tt_release(band);
    tt_release(bx);
    tt_release(by);
    tt_release(i64);
    tt_release(bl);
    tt_release(f64);
    tt_release(i32z);
}
END_TEST

START_TEST(test_integer_edge_values)
{
    /* Integer pow with negative exponents as PyTorch's powi; u8 wraps. */
    int64_t base[6] = {2, -2, 1, -1, 0, 3}, ex[6] = {-1, -3, -5, -3, 2, 0};
    tt_tensor *b = tt_from_data(TT_SHAPE(6), TT_I64, base), *e = tt_from_data(TT_SHAPE(6), TT_I64, ex);
    tt_tensor *p = tt_pow(b, e);
    int64_t got[6], want[6] = {0, 0, 1, -1, 0, 1};
    ck_assert_int_eq(tt_to_buffer(p, got, sizeof got), TT_OK);
    ck_assert_mem_eq(got, want, sizeof got);
    uint8_t u[3] = {1, 200, 0}, v[3] = {2, 100, 1};
    tt_tensor *ua = tt_from_data(TT_SHAPE(3), TT_U8, u), *ub = tt_from_data(TT_SHAPE(3), TT_U8, v);
    tt_tensor *d = tt_sub(ua, ub), *s = tt_add(ua, ub), *n = tt_neg(ua);
    uint8_t gd[3], gs[3], gn[3];
    ck_assert_int_eq(tt_to_buffer(d, gd, 3), TT_OK);
    ck_assert_int_eq(tt_to_buffer(s, gs, 3), TT_OK);
    ck_assert_int_eq(tt_to_buffer(n, gn, 3), TT_OK);
    ck_assert(gd[0] == 255 && gd[1] == 100 && gd[2] == 255);
    ck_assert(gs[0] == 3 && gs[1] == 44 && gs[2] == 1);
    ck_assert(gn[0] == 255 && gn[1] == 56 && gn[2] == 0);
    /* Float division by zero: inf and nan, as IEEE. */
    float fz[3] = {1, -1, 0}, zero[3] = {0, 0, 0};
    tt_tensor *fa = tt_from_data(TT_SHAPE(3), TT_F32, fz), *fb = tt_from_data(TT_SHAPE(3), TT_F32, zero);
    tt_tensor *q = tt_div(fa, fb);
    float gq[3];
    ck_assert_int_eq(tt_to_buffer(q, gq, sizeof gq), TT_OK);
    ck_assert(isinf(gq[0]) && gq[0] > 0 && isinf(gq[1]) && gq[1] < 0 && isnan(gq[2]));
    tt_tensor *ts[] = {b, e, p, ua, ub, d, s, n, fa, fb, q};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
        tt_release(ts[i]);
}
END_TEST

/* ----------------------------------------------------------- unary ops */

typedef enum {
    U_NEG, U_EXP, U_LOG, U_SQRT, U_RSQRT, U_SIN, U_COS, U_TANH, U_SIGMOID, U_RELU,
    U_GELU, U_ABS, U_SIGN, U_COUNT
} uop;

static const char *const uop_names[U_COUNT] = {
    "tt::neg", "tt::exp", "tt::log", "tt::sqrt", "tt::rsqrt", "tt::sin", "tt::cos",
    "tt::tanh", "tt::sigmoid", "tt::relu", "tt::gelu", "tt::abs", "tt::sign"};

static tt_tensor *run_un(uop op, const tt_tensor *a)
{
    switch (op) {
    case U_NEG: return tt_neg(a);
    case U_EXP: return tt_exp(a);
    case U_LOG: return tt_log(a);
    case U_SQRT: return tt_sqrt(a);
    case U_RSQRT: return tt_rsqrt(a);
    case U_SIN: return tt_sin(a);
    case U_COS: return tt_cos(a);
    case U_TANH: return tt_tanh(a);
    case U_SIGMOID: return tt_sigmoid(a);
    case U_RELU: return tt_relu(a);
    case U_GELU: return tt_gelu(a);
    case U_ABS: return tt_abs(a);
    default: return tt_call(tt_op_find("tt::sign"), tt_v_tensor(a));
    }
}

static bool un_keeps_dtype(uop op)
{
    return op == U_NEG || op == U_RELU || op == U_ABS || op == U_SIGN;
}

static double ref_un(uop op, tt_dtype dt, double a)
{
    a = castv(dt, a);
    switch (op) {
    case U_NEG: return castv(dt, -a);
    case U_EXP: return exp(a);
    case U_LOG: return log(a);
    case U_SQRT: return sqrt(a);
    case U_RSQRT: return 1 / sqrt(a);
    case U_SIN: return sin(a);
    case U_COS: return cos(a);
    case U_TANH: return tanh(a);
    case U_SIGMOID: return 1 / (1 + exp(-a));
    case U_RELU: return a <= 0 ? 0 : a; /* NaN stays NaN, as PyTorch's relu */
    case U_GELU: return 0.5 * a * (1 + erf(a / sqrt(2.0)));
    case U_ABS: return fabs(a);
    default: return (a > 0) - (a < 0);
    }
}

START_TEST(test_unary_tables)
{
    uop op = (uop)_i;
    static const struct {
        int nd;
        int64_t s[3];
    } shapes[] = {{0, {0}}, {1, {5}}, {2, {2, 3}}, {3, {3, 4, 2}}, {2, {0, 3}}, {2, {2, 0}},
                  {1, {300}}};
    char what[256];
    static double va[4096], vr[4096];
    for (int id = 0; id < NDT; id++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            for (int l = 0; l < L_COUNT; l++) {
                tt_dtype dt = dtypes[id];
                tt_tensor *a = make(dt, shapes[s].nd, shapes[s].s, (layout)l, V_ANY);
                tt_tensor *fa = tt_fake_like(a);
                char sh[64];
                snprintf(what, sizeof what, "%s(%s %s %s)", uop_names[op], tt_dtype_name(dt),
                         tt_shape_str(a, sh, sizeof sh), layout_names[l]);
                tt_clear_error();
                tt_tensor *r = run_un(op, a), *fr = run_un(op, fa);
                if (dt == TT_BOOL && (op == U_NEG || op == U_RELU || op == U_ABS)) {
                    ck_assert_msg(!r && !fr, "%s: accepted", what);
                    char msg[128];
                    snprintf(msg, sizeof msg, "%s: argument 'self' (#1): not supported for bool "
                                              "tensors", uop_names[op]);
                    ck_assert_error(TT_EDTYPE, msg);
                    if (op == U_NEG)
                        ck_assert_error(TT_EDTYPE, "; use logical not instead");
                } else if (op == U_GELU && !isf(dt)) {
                    /* PyTorch's gelu has no integer kernels. */
                    ck_assert_msg(!r && !fr, "%s: accepted", what);
                    char msg[128];
                    snprintf(msg, sizeof msg, "tt::gelu: argument 'self' (#1): not implemented "
                                              "for %s tensors; expects a floating point tensor",
                             tt_dtype_name(dt));
                    ck_assert_error(TT_EDTYPE, msg);
                } else {
                    ck_assert_msg(r && fr, "%s: %s", what, tt_errmsg());
                    tt_dtype want = un_keeps_dtype(op) || isf(dt) ? dt : TT_F32;
                    ck_assert_msg(tt_dtype_of(r) == want, "%s: dtype %s, expected %s", what,
                                  tt_dtype_name(tt_dtype_of(r)), tt_dtype_name(want));
                    tt_test_assert_fake_meta(fr, r, what);
                    ck_assert_int_eq(tt_numel(r), tt_numel(a));
                    read_all(a, va, 4096);
                    read_all(r, vr, 4096);
                    for (int64_t i = 0; i < tt_numel(a); i++) {
                        double w = ref_un(op, want, va[i]);
                        ck_assert_msg(close_to(want, vr[i], w), "%s: element %lld: f(%g) = %g, "
                                      "expected %g", what, (long long)i, va[i], vr[i], w);
                    }
                }
                tt_release(r);
                tt_release(fr);
                tt_release(fa);
                tt_release(a);
            }
}
END_TEST

START_TEST(test_unary_special_values)
{
    float v[6] = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1e-30f};
    tt_tensor *x = tt_from_data(TT_SHAPE(6), TT_F32, v);
    static double xv[6], out[6];
    read_all(x, xv, 6);
    for (int op = 0; op < U_COUNT; op++) {
        tt_tensor *r = run_un((uop)op, x);
        ck_assert_msg(r != NULL, "%s: %s", uop_names[op], tt_errmsg());
        read_all(r, out, 6);
        for (int i = 0; i < 6; i++) {
            double w = ref_un((uop)op, TT_F32, xv[i]);
            /* sign(NaN) is 0 in PyTorch too: (0 < a) - (a < 0). */
            ck_assert_msg(close_to(TT_F32, out[i], w), "%s(%g) = %g, expected %g",
                          uop_names[op], xv[i], out[i], w);
        }
        tt_release(r);
    }
    tt_release(x);
}
END_TEST

/* The f32 vector kernels of contiguous tensors (ops/vec_math*.c): tanh,
 * gelu and gelu(approximate="tanh") have kernels of their own, checked
 * here over a dense range against double precision, with a length whose
 * tail does not fill a vector (meson runs this suite twice: as the CPU
 * chooses, and with TT_NO_AVX512 on the AVX2 kernels). Bounds: tanh
 * within 3 ULP; gelu_tanh within 4 ULP plus 1e-8 (its negative tail is a
 * difference of near-equal terms); gelu within 4 ULP plus 4e-7, the
 * accuracy of PyTorch's vectorized gelu (its erf is Abramowitz and Stegun
 * 7.1.26, absolute error 1.5e-7) and of the scalar 0.5 x (1 + erff) in
 * the negative tail. Their derivatives (gelu_backward, both forms) have
 * kernels too, within 8 ULP plus 8e-7 (erf) or 2e-7 (tanh): the
 * derivative crosses zero at gelu's minimum (x near -0.75), where its
 * two terms cancel. */
static double ulp_f32(double v)
{
    float f = fabsf((float)v);
    return f < 1.2e-38f ? 1.4e-45 : (double)(nextafterf(f, INFINITY) - f);
}

/* Kernel k of the vector kernel tests: 0 tanh, 1 gelu, 2 gelu_tanh,
 * 3 gelu_backward, 4 gelu_backward(approximate="tanh"), on t (and the
 * gradient tg). Returns a new reference. */
static tt_tensor *vec_kernel_run(int k, tt_tensor *t, tt_tensor *tg)
{
    const tt_op *gb = tt_op_find("tt::gelu_backward");
    return k == 0   ? tt_tanh(t)
         : k == 1 ? tt_gelu(t)
         : k == 2 ? tt_gelu_tanh(t)
                  : tt_call(gb, tt_v_tensor(tg), tt_v_tensor(t),
                            tt_v_str(k == 3 ? "none" : "tanh"));
}

/* Kernel k's value at x = a (gradient g) in double, by PyTorch's formulas. */
static double vec_kernel_ref(int k, double a, double g)
{
    double b = 0.79788456080286535588, c = 0.044715;
    double th = tanh(b * (a + c * a * a * a));
    return k == 0   ? tanh(a)
         : k == 1 ? 0.5 * a * (1 + erf(a / sqrt(2.0)))
         : k == 2 ? 0.5 * a * (1 + th)
         : k == 3 ? g * (0.5 * (1 + erf(a / sqrt(2.0))) + a * exp(-0.5 * a * a) / sqrt(2 * M_PI))
                  : g * (0.5 * (1 + th) + 0.5 * a * (1 - th * th) * b * (1 + 3 * c * a * a));
}

/* Kernel k's error bound at the exact value w (see above). */
static double vec_kernel_bound(int k, double w)
{
    return (k == 0 ? 3 : k < 3 ? 4 : 8) * ulp_f32(w) +
           (k == 0 ? 0 : k == 1 ? 4e-7 : k == 2 ? 1e-8 : k == 3 ? 8e-7 : 2e-7);
}

static const char *vec_kernel_names[] = {"tanh", "gelu", "gelu_tanh", "gelu_backward",
                                         "gelu_backward tanh"};

START_TEST(test_vector_kernels_dense)
{
    enum { N = 2000003 };
    float *x = malloc(sizeof *x * N), *g = malloc(sizeof *g * N);
    for (int i = 0; i < N; i++) {
        x[i] = -20.0f + 40.0f * (float)i / (N - 1); /* past every clamp */
        g[i] = 0.5f + (float)(i % 7) / 4;
    }
    tt_tensor *t = tt_from_data(TT_SHAPE(N), TT_F32, x);
    tt_tensor *tg = tt_from_data(TT_SHAPE(N), TT_F32, g);
    for (int k = 0; k < 5; k++) {
        tt_tensor *r = NN(vec_kernel_run(k, t, tg));
        const float *o = tt_data(r);
        double worst = 0, at = 0;
        for (int i = 0; i < N; i++) {
            double w = vec_kernel_ref(k, x[i], g[i]);
            double e = fabs(o[i] - w) / vec_kernel_bound(k, w);
            if (e > worst)
                worst = e, at = x[i];
        }
        ck_assert_msg(worst <= 1, "%s: error %.2f times the bound at x = %.9g",
                      vec_kernel_names[k], worst, at);
        tt_release(r);
    }
    tt_release(t);
    tt_release(tg);
    free(x);
    free(g);
}
END_TEST

/* The same kernels at NaN, infinities, zeros, tiny and huge values (a full
 * vector and a tail): NaN where PyTorch's formula gives NaN (gelu and the
 * derivatives at -inf, the derivatives at +inf), otherwise within the
 * bounds above, as the scalar loops of a CPU without the kernels. */
START_TEST(test_vector_kernels_special)
{
    enum { N = 19 };
    float x[N] = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1e-30f, -1e-30f, 1e-40f, -1e-40f,
                  9.5f, -9.5f, 10.5f, -10.5f, 30, -30, 1e30f, -1e30f, 3e38f, -3e38f};
    float g[N];
    for (int i = 0; i < N; i++)
        g[i] = 1.5f;
    tt_tensor *t = tt_from_data(TT_SHAPE(N), TT_F32, x);
    tt_tensor *tg = tt_from_data(TT_SHAPE(N), TT_F32, g);
    for (int k = 0; k < 5; k++) {
        tt_tensor *r = NN(vec_kernel_run(k, t, tg));
        const float *o = tt_data(r);
        for (int i = 0; i < N; i++) {
            double w = vec_kernel_ref(k, x[i], g[i]);
            ck_assert_msg(isnan(w) ? isnan(o[i])
                                    : o[i] == w || fabs(o[i] - w) <= vec_kernel_bound(k, w),
                          "%s(%g) = %g, expected %g", vec_kernel_names[k], x[i], o[i], w);
        }
        tt_release(r);
    }
    tt_release(t);
    tt_release(tg);
}
END_TEST

/* n floats evenly spaced from lo to hi, then the s values of edge: a new
 * array, for the kernel tests below (free it). */
static float *grid_and_edges(float lo, float hi, int n, const float *edge, int s)
{
    float *x = malloc(sizeof *x * (size_t)(n + s));
    ck_assert_ptr_nonnull(x);
    for (int i = 0; i < n; i++)
        x[i] = lo + (hi - lo) * (float)i / (n - 1);
    memcpy(x + n, edge, sizeof *edge * (size_t)s);
    return x;
}

/* exp's vector kernel (ops/vec_math_kernels.h, our own since it runs at
 * 0.6 of SLEEF's cost) within 1 ULP over its whole range, dense, and at
 * the edges: the last finite result and the first infinite one, results
 * that round into the subnormals and to 0, NaN and the infinities. The
 * 1-ULP claim was checked on every float by hand (0.991 at worst). */
START_TEST(test_exp_kernel)
{
    enum { N = 200003, S = 14 };
    const float edge[S] = {88.72283f, 88.72284f, 88.7f, -87.33655f, -87.5f, -100.0f,
                           -103.27893f, -103.97208f, -104.5f, 1e-30f, -0.0f, NAN,
                           INFINITY, -INFINITY};
    float *x = grid_and_edges(-105.0f, 90.0f, N, edge, S);
    tt_tensor *t = tt_from_data(TT_SHAPE(N + S), TT_F32, x);
    tt_tensor *r = NN(tt_exp(t));
    const float *o = tt_data(r);
    for (int i = 0; i < N + S; i++) {
        double w = exp((double)x[i]);
        if (isnan(w) || w > FLT_MAX || (float)w == 0)
            ck_assert_msg(isnan(w) ? isnan(o[i]) : o[i] == (float)w, "exp(%.9g) = %g, expected %g",
                          x[i], o[i], (double)(float)w);
        else
            ck_assert_msg(fabs(o[i] - w) <= ulp_f32(w), "exp(%.9g) = %.9g, expected %.9g (%.2f ULP)",
                          x[i], o[i], w, fabs(o[i] - w) / ulp_f32(w));
    }
    tt_release(r);
    tt_release(t);
    free(x);
}
END_TEST

/* sin's vector kernel: inline for |x| up to 1000 (within 1.9 ULP, checked
 * on every float by hand), SLEEF's 3.5-ULP kernel past that: within 3.5
 * ULP (and 1e-45 for results that round to a subnormal) densely across
 * the switch, and at the edges: zeros, subnormals, floats next to
 * multiples of pi (where r is smallest), either side of 1000 in one
 * vector, huge values, the infinities and NaN. Each element's result
 * depends on it alone, not on its neighbours. */
START_TEST(test_sin_kernel)
{
    enum { N = 400003, S = 18 };
    const float edge[S] = {0.0f, -0.0f, 1e-40f, -1e-30f, 3.14159274f, -6.28318548f,
                           355.0f, 710.0f, 999.99f, 1000.01f, -1000.5f, 102.101761f,
                           1e5f, -3e7f, 1e30f, INFINITY, -INFINITY, NAN};
    float *x = grid_and_edges(-1100.0f, 1100.0f, N, edge, S);
    tt_tensor *t = tt_from_data(TT_SHAPE(N + S), TT_F32, x);
    tt_tensor *r = NN(tt_sin(t));
    const float *o = tt_data(r);
    for (int i = 0; i < N + S; i++) {
        double w = sin((double)x[i]);
        if (isnan(w))
            ck_assert_msg(isnan(o[i]), "sin(%g) = %g, expected NaN", x[i], o[i]);
        else
            ck_assert_msg(fabs(o[i] - w) <= 3.5 * ulp_f32(w) && !signbit(o[i]) == !signbit(w),
                          "sin(%.9g) = %.9g, expected %.9g (%.2f ULP)", x[i], o[i], w,
                          fabs(o[i] - w) / ulp_f32(w));
    }
    /* The floats next to every multiple of pi up to 1000 (and a little
     * past), where r = |x| - n pi is smallest and any error in pi's parts
     * shows most: a wrong last part once cost 22 ULP at 161 pi. */
    enum { K = 330 };
    float *near = malloc(sizeof *near * 3 * K);
    for (int k = 1; k <= K; k++) {
        float f = (float)(k * M_PI);
        near[3 * k - 3] = nextafterf(f, 0), near[3 * k - 2] = f;
        near[3 * k - 1] = nextafterf(f, INFINITY);
    }
    tt_tensor *tn = tt_from_data(TT_SHAPE(3 * K), TT_F32, near);
    tt_tensor *rn = NN(tt_sin(tn));
    const float *on = tt_data(rn);
    for (int i = 0; i < 3 * K; i++) {
        double w = sin((double)near[i]);
        ck_assert_msg(fabs(on[i] - w) <= 3.5 * ulp_f32(w), "sin(%.9g) = %.9g, expected %.9g (%.2f ULP)",
                      near[i], on[i], w, fabs(on[i] - w) / ulp_f32(w));
    }
    tt_release(rn);
    tt_release(tn);
    free(near);
    /* The same values one at a time, and with a neighbour past 1000. */
    for (int i = N; i < N + S; i++) {
        float pair[2] = {x[i], 5000.0f};
        tt_tensor *one = tt_from_data(TT_SHAPE(2), TT_F32, pair);
        tt_tensor *ro = NN(tt_sin(one));
        const float *v = tt_data(ro);
        ck_assert_msg(memcmp(&v[0], &o[i], sizeof(float)) == 0,
                      "sin(%g) next to 5000 = %.9g, among small values %.9g", x[i], v[0], o[i]);
        tt_release(ro);
        tt_release(one);
    }
    tt_release(r);
    tt_release(t);
    free(x);
}
END_TEST

START_TEST(test_gelu_backward)
{
    /* gelu's derivative op (used by autograd): g * (Phi(x) + x phi(x)),
     * broadcast and promoted like a binary op, floats only. */
    const tt_op *op = tt_op_find("tt::gelu_backward");
    ck_assert_msg(op != NULL, "%s", tt_errmsg());
    static const tt_dtype pairs[][2] = {{TT_F32, TT_F32}, {TT_F64, TT_F32}, {TT_F32, TT_F64},
                                        {TT_I64, TT_F32}};
    static double vg[64], vx[64], vr[64];
    for (size_t k = 0; k < sizeof pairs / sizeof pairs[0]; k++)
        for (int l = 0; l < L_COUNT; l++) {
            tt_tensor *g = make(pairs[k][0], 1, (const int64_t[]){3}, L_CONTIG, V_ANY);
            tt_tensor *x = make(pairs[k][1], 2, (const int64_t[]){4, 3}, (layout)l, V_ANY);
            tt_tensor *fg = tt_fake_like(g), *fx = tt_fake_like(x);
            tt_tensor *r = tt_call(op, tt_v_tensor(g), tt_v_tensor(x));
            tt_tensor *fr = tt_call(op, tt_v_tensor(fg), tt_v_tensor(fx));
            ck_assert_msg(r && fr, "pair %zu: %s", k, tt_errmsg());
            tt_dtype want = ref_type(2, pairs[k], (int[]){1, 2}, NULL);
            ck_assert_int_eq(tt_dtype_of(r), want);
            tt_test_assert_fake_meta(fr, r, "gelu_backward");
            read_all(g, vg, 64);
            read_all(x, vx, 64);
            read_all(r, vr, 64);
            for (int i = 0; i < 12; i++) {
                double xv = castv(want, vx[i]), gv = castv(want, vg[i % 3]);
                double w = gv * (0.5 * (1 + erf(xv / sqrt(2.0))) +
                                 xv * exp(-0.5 * xv * xv) / sqrt(2 * M_PI));
                ck_assert_msg(close_to(want, vr[i], w), "pair %zu, layout %d, element %d: %g, "
                              "expected %g", k, l, i, vr[i], w);
            }
            tt_tensor *ts[] = {g, x, fg, fx, r, fr};
            for (int i = 0; i < 6; i++)
                tt_release(ts[i]);
        }
    tt_tensor *i = tt_ones(TT_SHAPE(3), TT_I32), *b = tt_ones(TT_SHAPE(4), TT_F32);
    ck_assert_ptr_null(tt_call(op, tt_v_tensor(i), tt_v_tensor(i)));
    ck_assert_error(TT_EDTYPE, "tt::gelu_backward: expects floating point tensors, got i32");
    ck_assert_ptr_null(tt_call(op, tt_v_tensor(i), tt_v_tensor(b)));
    ck_assert_error(TT_ESHAPE, "tt::gelu_backward: argument 'self' (#2): shape [4] is not "
                               "broadcastable to [3]");
    tt_release(i);
    tt_release(b);
}
END_TEST

/* ------------------------------------------------------- where, clamp */

START_TEST(test_where_tables)
{
    static const struct {
        int n[3];
        int64_t s[3][3];
    } shapes[] = {
        {{2, 2, 2}, {{2, 3}, {2, 3}, {2, 3}}},
        {{2, 1, 0}, {{2, 3}, {3}, {0}}},
        {{1, 2, 2}, {{3}, {2, 1}, {2, 3}}},
        {{0, 1, 1}, {{0}, {2}, {2}}},
        {{2, 1, 1}, {{0, 2}, {2}, {1}}},
        {{0, 0, 0}, {{0}, {0}, {0}}},
    };
    static const layout lays[][3] = {
        {L_CONTIG, L_CONTIG, L_CONTIG}, {L_TRANS, L_CONTIG, L_CONTIG},
        {L_CONTIG, L_TRANS, L_SLICE},   {L_EXPAND, L_SLICE, L_TRANS},
    };
    char what[256];
    static double vc[4096], va[4096], vb[4096], vr[4096];
    for (int ia = 0; ia < NDT; ia++)
        for (int ib = 0; ib < NDT; ib++)
            for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
                for (size_t l = 0; l < sizeof lays / sizeof lays[0]; l++) {
                    tt_dtype da = dtypes[ia], db = dtypes[ib];
                    tt_tensor *c = make(TT_BOOL, shapes[s].n[0], shapes[s].s[0], lays[l][0], V_ANY);
                    tt_tensor *a = make(da, shapes[s].n[1], shapes[s].s[1], lays[l][1], V_ANY);
                    tt_tensor *b = make(db, shapes[s].n[2], shapes[s].s[2], lays[l][2], V_ANY);
                    tt_tensor *fc = tt_fake_like(c), *fa = tt_fake_like(a), *fb = tt_fake_like(b);
                    snprintf(what, sizeof what, "where(shapes #%zu, %s, %s, layouts #%zu)", s,
                             tt_dtype_name(da), tt_dtype_name(db), l);
                    tt_tensor *r = tt_where(c, a, b), *fr = tt_where(fc, fa, fb);
                    /* One fake operand is enough for a fake result. */
                    tt_tensor *mixed = tt_where(c, fa, b);
                    ck_assert_msg(r && fr && mixed, "%s: %s", what, tt_errmsg());
                    tt_dtype want = ref_type(2, (tt_dtype[]){da, db},
                                             (int[]){shapes[s].n[1], shapes[s].n[2]}, NULL);
                    ck_assert_msg(tt_dtype_of(r) == want, "%s: dtype %s, expected %s", what,
                                  tt_dtype_name(tt_dtype_of(r)), tt_dtype_name(want));
                    tt_test_assert_fake_meta(fr, r, what);
                    tt_test_assert_fake_meta(mixed, r, what);
                    int64_t sz[3][TT_MAX_DIMS], out[TT_MAX_DIMS], tmp[TT_MAX_DIMS], idx[TT_MAX_DIMS] = {0};
                    for (int k = 0; k < 3; k++)
                        memcpy(sz[k], shapes[s].s[k], sizeof shapes[s].s[k]);
                    int nd = bshape(shapes[s].n[0], sz[0], shapes[s].n[1], sz[1], tmp);
                    nd = bshape(nd, tmp, shapes[s].n[2], sz[2], out);
                    read_all(c, vc, 4096);
                    read_all(a, va, 4096);
                    read_all(b, vb, 4096);
                    read_all(r, vr, 4096);
                    for (int64_t i = 0; i < prod(nd, out); i++, next_index(nd, out, idx)) {
                        bool cv = vc[bidx(nd, idx, shapes[s].n[0], sz[0])] != 0;
                        double w = cv ? castv(want, va[bidx(nd, idx, shapes[s].n[1], sz[1])])
                                      : castv(want, vb[bidx(nd, idx, shapes[s].n[2], sz[2])]);
                        ck_assert_msg(close_to(want, vr[i], w), "%s: element %lld is %g, expected %g",
                                      what, (long long)i, vr[i], w);
                    }
                    tt_release(mixed);
                    tt_tensor *ts[] = {c, a, b, fc, fa, fb, r, fr};
                    for (int k = 0; k < 8; k++)
                        tt_release(ts[k]);
                }
}
END_TEST

START_TEST(test_clamp_tables)
{
    static const struct {
        tt_value lo, hi;
    } bounds[] = {
        {{TT_V_INT, 0, {.i = 0}}, {TT_V_NONE, 0, {0}}},
        {{TT_V_NONE, 0, {0}}, {TT_V_INT, 0, {.i = 2}}},
        {{TT_V_INT, 0, {.i = -1}}, {TT_V_INT, 0, {.i = 2}}},
        {{TT_V_FLOAT, 0, {.f = 0.5}}, {TT_V_NONE, 0, {0}}},
        {{TT_V_FLOAT, 0, {.f = -1.5}}, {TT_V_FLOAT, 0, {.f = 2.5}}},
        {{TT_V_INT, 0, {.i = 2}}, {TT_V_INT, 0, {.i = -1}}}, /* min > max: max wins */
        {{TT_V_FLOAT, 0, {.f = 1.0}}, {TT_V_NONE, 0, {0}}},   /* a float, though whole */
        {{TT_V_BOOL, 0, {.b = true}}, {TT_V_NONE, 0, {0}}},
    };
    static const struct {
        int nd;
        int64_t s[3];
    } shapes[] = {{2, {2, 3}}, {0, {0}}, {2, {0, 2}}, {3, {2, 3, 2}}};
    const tt_op *h = tt_op_find("tt::clamp");
    char what[256];
    static double va[4096], vr[4096];
    for (int id = 0; id < NDT; id++)
        for (size_t k = 0; k < sizeof bounds / sizeof bounds[0]; k++)
            for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
                for (int l = 0; l < L_COUNT; l++) {
                    tt_dtype dt = dtypes[id];
                    tt_value lo = bounds[k].lo, hi = bounds[k].hi;
                    tt_tensor *a = make(dt, shapes[s].nd, shapes[s].s, (layout)l, V_ANY);
                    tt_tensor *fa = tt_fake_like(a);
                    snprintf(what, sizeof what, "clamp(%s, bounds #%zu, shape #%zu, %s)",
                             tt_dtype_name(dt), k, s, layout_names[l]);
                    tt_tensor *r = tt_call(h, tt_v_tensor(a), lo, hi);
                    tt_tensor *fr = tt_call(h, tt_v_tensor(fa), lo, hi);
                    ck_assert_msg(r && fr, "%s: %s", what, tt_errmsg());
                    char sc[3] = {0}, *p = sc;
                    double lov = -INFINITY, hiv = INFINITY;
                    if (lo.kind != TT_V_NONE) {
                        *p++ = lo.kind == TT_V_FLOAT ? 'f' : lo.kind == TT_V_BOOL ? 'b' : 'i';
                        lov = lo.kind == TT_V_FLOAT ? lo.u.f : lo.kind == TT_V_BOOL ? lo.u.b : (double)lo.u.i;
                    }
                    if (hi.kind != TT_V_NONE) {
                        *p++ = hi.kind == TT_V_FLOAT ? 'f' : 'i';
                        hiv = hi.kind == TT_V_FLOAT ? hi.u.f : (double)hi.u.i;
                    }
                    tt_dtype want = ref_type(1, &dt, (int[]){shapes[s].nd}, sc);
                    ck_assert_msg(tt_dtype_of(r) == want, "%s: dtype %s, expected %s", what,
                                  tt_dtype_name(tt_dtype_of(r)), tt_dtype_name(want));
                    tt_test_assert_fake_meta(fr, r, what);
                    read_all(a, va, 4096);
                    read_all(r, vr, 4096);
                    /* Bounds compare in the result's dtype, as PyTorch casts
                     * them (-1 is 255 for uint8). */
                    double lo_c = !isinf(lov) ? castv(want, lov) : lov;
                    double hi_c = !isinf(hiv) ? castv(want, hiv) : hiv;
                    for (int64_t i = 0; i < tt_numel(a); i++) {
                        double v = castv(want, va[i]);
                        if (v < lo_c)
                            v = lo_c;
                        if (v > hi_c)
                            v = hi_c;
                        v = castv(want, v);
                        ck_assert_msg(close_to(want, vr[i], v), "%s: element %lld: clamp(%g) = %g, "
                                      "expected %g", what, (long long)i, va[i], vr[i], v);
                    }
                    /* tt_clamp (NAN: no bound) agrees for numeric bounds. */
                    if (lo.kind != TT_V_BOOL && !(lo.kind == TT_V_FLOAT && lo.u.f == floor(lo.u.f))) {
                        tt_tensor *w = tt_clamp(a, lo.kind == TT_V_NONE ? NAN : lov,
                                                hi.kind == TT_V_NONE ? NAN : hiv);
                        ck_assert_msg(w != NULL, "%s (tt_clamp): %s", what, tt_errmsg());
                        ck_assert_int_eq(tt_dtype_of(w), want);
                        static double vw[4096];
                        read_all(w, vw, 4096);
                        ck_assert_mem_eq(vw, vr, sizeof(double) * (size_t)tt_numel(a));
                        tt_release(w);
                    }
                    tt_release(r);
                    tt_release(fr);
                    tt_release(fa);
                    tt_release(a);
                }
}
END_TEST

START_TEST(test_clamp_nan)
{
    float v[4] = {NAN, -5, 0.5f, 5};
    tt_tensor *x = tt_from_data(TT_SHAPE(4), TT_F32, v);
    tt_tensor *u = tt_unsqueeze(x, 0);
    tt_tensor *e = tt_expand(u, TT_SHAPE(2, 4));
    tt_tensor *d = tt_to_dtype(x, TT_F64);
    /* The contiguous f32 loop, the general strided loop, and f64. */
    const tt_tensor *ins[3] = {x, e, d};
    for (int pass = 0; pass < 3; pass++) {
        tt_tensor *r = tt_clamp(ins[pass], -1, 1);
        double got[8];
        read_all(r, got, 8);
        ck_assert_msg(isnan(got[0]) && got[1] == -1 && got[2] == 0.5 && got[3] == 1,
                      "pass %d: %g %g %g %g", pass, got[0], got[1], got[2], got[3]);
        tt_release(r);
    }
    tt_release(d);
    tt_release(e);
    tt_release(u);
    tt_release(x);
}
END_TEST

/* ------------------------------------------------------ output strides */

START_TEST(test_output_strides)
{
    tt_scope_begin(); /* everything made here goes at the end */
    float base[24];
    for (int i = 0; i < 24; i++)
        base[i] = (float)i;
    tt_tensor *c23 = tt_from_data(TT_SHAPE(2, 3), TT_F32, base);
    tt_tensor *c32 = tt_from_data(TT_SHAPE(3, 2), TT_F32, base);
    tt_tensor *t23 = tt_t(c32);                                    /* [2,3] strides [1,2] */
    tt_tensor *c234 = tt_from_data(TT_SHAPE(2, 3, 4), TT_F32, base);
    tt_tensor *p423 = tt_permute(c234, TT_SHAPE(2, 0, 1));         /* [4,2,3] strides [1,12,4] */
    tt_tensor *c423 = tt_from_data(TT_SHAPE(4, 2, 3), TT_F32, base);
    tt_tensor *v3 = tt_from_data(TT_SHAPE(3), TT_F32, base);
    tt_tensor *s0 = tt_scalar(2, TT_F64);
    tt_tensor *r13 = tt_from_data(TT_SHAPE(1, 3), TT_F32, base);
    tt_tensor *e23 = tt_expand(r13, TT_SHAPE(2, 3));              /* strides [0,1] */
    tt_tensor *c46 = tt_from_data(TT_SHAPE(4, 6), TT_F32, base);
    tt_tensor *sl = tt_slice(c46, 1, 0, 6, 2);                     /* [4,3] strides [6,2] */
    tt_tensor *slt = tt_t(sl);                                     /* [3,4] strides [2,6] */
    tt_tensor *i32t = tt_to_dtype(c32, TT_I32);
    tt_tensor *i32tt = tt_t(i32t);                                 /* i32 [2,3] strides [1,2] */
    tt_tensor *e03 = tt_zeros(TT_SHAPE(0, 3), TT_F32);
    tt_tensor *e30 = tt_t(e03);                                    /* [3,0] strides [1,3] */
    tt_tensor *bc = tt_ones(TT_SHAPE(4, 2, 3), TT_BOOL);
    tt_tensor *bcp = tt_permute(tt_ones(TT_SHAPE(2, 3, 4), TT_BOOL), TT_SHAPE(2, 0, 1));

    const struct {
        const char *what;
        tt_tensor *r;
        int nd;
        int64_t want[3];
    } cases[] = {
        {"contiguous + contiguous", tt_add(c23, c23), 2, {3, 1}},
        {"transposed + contiguous: the first operand decides", tt_add(t23, c23), 2, {1, 2}},
        {"contiguous + transposed", tt_add(c23, t23), 2, {3, 1}},
        {"transposed + transposed", tt_mul(t23, t23), 2, {1, 2}},
        {"permuted + contiguous", tt_add(p423, c423), 3, {1, 12, 4}},
        {"contiguous + permuted", tt_add(c423, p423), 3, {6, 3, 1}},
        {"permuted + broadcast [3]", tt_sub(p423, v3), 3, {1, 12, 4}},
        {"broadcast [3] + permuted: broadcast dims defer", tt_sub(v3, p423), 3, {1, 12, 4}},
        {"permuted + 0-dim", tt_mul(p423, s0), 3, {1, 12, 4}},
        {"expanded + transposed: the expanded dim defers", tt_add(e23, t23), 2, {1, 2}},
        {"unary of permuted", tt_exp(p423), 3, {1, 12, 4}},
        {"unary of transposed slice (not dense)", tt_neg(slt), 2, {1, 3}},
        {"unary of row-major slice (not dense)", tt_neg(sl), 2, {3, 1}},
        {"unary of expanded", tt_sigmoid(e23), 2, {3, 1}},
        {"dtype change keeps the layout", tt_add(i32tt, c23), 2, {1, 2}},
        {"int to float unary keeps the layout", tt_sqrt(i32tt), 2, {1, 2}},
        {"comparison of transposed", tt_lt(t23, c23), 2, {1, 2}},
        {"empty transposed: contiguous", tt_neg(e30), 2, {1, 1}},
        {"empty + broadcast", tt_add(e03, v3), 2, {3, 1}},
        {"where with permuted condition", tt_where(bcp, c423, c423), 3, {1, 12, 4}},
        {"where with contiguous condition", tt_where(bc, p423, c423), 3, {6, 3, 1}},
        {"clamp of transposed", tt_clamp(t23, 0, 3), 2, {1, 2}},
        {"clamp of permuted int to float", tt_clamp(tt_permute(tt_to_dtype(c234, TT_I64),
                                                              TT_SHAPE(2, 0, 1)), 0.5, NAN),
         3, {1, 12, 4}},
        {"0-dim + 0-dim", tt_add(s0, s0), 0, {0}},
        {"scalar overload of transposed", tt_add_scalar(t23, 1.5), 2, {1, 2}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ck_assert_msg(cases[i].r != NULL, "%s: %s", cases[i].what, tt_errmsg());
        assert_strides(cases[i].r, cases[i].nd, cases[i].want, cases[i].what);
        ck_assert_int_eq(tt_storage_offset(cases[i].r), 0);
    }
    tt_scope_end();
}
END_TEST

/* --------------------------------------------------------------- in place */

typedef enum { I_ADD, I_SUB, I_MUL, I_DIV, I_ADD_SCALED, I_MUL_SCALAR, I_RELU, I_ZERO, I_COUNT } iop;
static const char *const iop_names[I_COUNT] = {"add_", "sub_", "mul_", "div_", "add_scaled_",
                                               "mul_scalar_", "relu_", "zero_"};

static tt_status run_inplace(iop op, tt_tensor *a, const tt_tensor *b)
{
    switch (op) {
    case I_ADD: return tt_add_(a, b);
    case I_SUB: return tt_sub_(a, b);
    case I_MUL: return tt_mul_(a, b);
    case I_DIV: return tt_div_(a, b);
    case I_ADD_SCALED: return tt_add_scaled_(a, b, 3);
    case I_MUL_SCALAR: return tt_mul_scalar_(a, 3);
    case I_RELU: return tt_relu_(a);
    default: return tt_zero_(a);
    }
}

/* The out-of-place result the in-place op must equal. */
static tt_tensor *run_outplace(iop op, const tt_tensor *a, const tt_tensor *b)
{
    switch (op) {
    case I_ADD: return tt_add(a, b);
    case I_SUB: return tt_sub(a, b);
    case I_MUL: return tt_mul(a, b);
    case I_DIV: return tt_div(a, b);
    case I_ADD_SCALED: return tt_add_scaled(a, b, 3);
    case I_MUL_SCALAR: return tt_mul_scalar(a, 3);
    case I_RELU: return tt_relu(a);
    default: return tt_mul_scalar(a, 0);
    }
}

static bool fits(tt_dtype from, tt_dtype to)
{
    return !(isf(from) && !isf(to)) && !(from != TT_BOOL && to == TT_BOOL);
}

START_TEST(test_inplace_tables)
{
    iop op = (iop)_i;
    static const struct {
        int na;
        int64_t a[3];
        int nb;
        int64_t b[3];
    } shapes[] = {{2, {2, 3}, 2, {2, 3}}, {2, {2, 3}, 1, {3}}, {2, {2, 3}, 0, {0}},
                  {0, {0}, 0, {0}},       {2, {0, 3}, 1, {1}}, {3, {2, 3, 4}, 2, {3, 1}},
                  {1, {3}, 2, {2, 3}},    {0, {0}, 1, {1}}};
    static const layout lays[] = {L_CONTIG, L_TRANS, L_SLICE};
    char what[256];
    static double before[4096], after[4096], want[4096];
    for (int ia = 0; ia < NDT; ia++)
        for (int ib = 0; ib < NDT; ib++)
            for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
                for (size_t l = 0; l < 3; l++)
                    for (int mode = 0; mode < 2; mode++) {
                        tt_dtype da = dtypes[ia], db = dtypes[ib];
                        if (op >= I_MUL_SCALAR && ib > 0)
                            continue; /* b unused */
                        tt_tensor *a = make(da, shapes[s].na, shapes[s].a, lays[l], V_ANY);
                        tt_tensor *b = make(db, shapes[s].nb, shapes[s].b, lays[(l + 1) % 3], V_ANY);
                        char sa[64];
                        snprintf(what, sizeof what, "%s(%s %s %s, %s)%s", iop_names[op],
                                 tt_dtype_name(da), tt_shape_str(a, sa, sizeof sa),
                                 layout_names[lays[l]], tt_dtype_name(db),
                                 mode ? " through the dispatcher" : "");
                        tt_clear_error();
                        tt_tensor *ref = run_outplace(op, a, b);
                        read_all(a, before, 4096);
                        const void *data = tt_data(a);
                        uint64_t v0 = tt_version(a);
                        /* mode 1: a fake operand elsewhere forces the boxed path
                         * without changing a's values. */
                        tt_status st;
                        if (mode) {
                            static const char *const names[I_COUNT] = {
                                "tt::add_.Tensor", "tt::sub_.Tensor", "tt::mul_.Tensor",
                                "tt::div_.Tensor", "tt::add_.Tensor", "tt::mul_.Scalar",
                                "tt::relu_", "tt::zero_"};
                            tt_value args[3] = {tt_v_tensor(a), tt_v_tensor(b), tt_v_int(3)};
                            int nargs = op == I_ADD_SCALED ? 3 : op >= I_RELU ? 1 : 2;
                            if (op == I_MUL_SCALAR)
                                args[1] = tt_v_int(3);
                            tt_value out;
                            st = tt_op_call(tt_op_find(names[op]), args, nargs, &out, 1);
                            if (!st) {
                                ck_assert_ptr_eq(out.u.t, a);
                                tt_value_clear(&out);
                            }
                        } else {
                            st = run_inplace(op, a, b);
                        }
                        tt_dtype rdt = ref ? tt_dtype_of(ref) : da;
                        bool shape_ok = !ref || tt_ndim(ref) == tt_ndim(a);
                        for (int d = 0; ref && shape_ok && d < tt_ndim(a); d++)
                            shape_ok = tt_dim_size(ref, d) == tt_dim_size(a, d);
                        if (!ref) {
                            /* The out-of-place form fails: so does this one. */
                            ck_assert_msg(st != TT_OK, "%s: accepted", what);
                        } else if (!shape_ok) {
                            ck_assert_msg(st == TT_ESHAPE, "%s: %s", what, tt_errmsg());
                            ck_assert_error(TT_ESHAPE, "_: output with shape [");
                            ck_assert_error(TT_ESHAPE, "] doesn't match the broadcast shape [");
                        } else if (!fits(rdt, da) && op != I_ZERO) {
                            ck_assert_msg(st == TT_EDTYPE, "%s: %s", what, tt_errmsg());
                            char msg[160];
                            snprintf(msg, sizeof msg, "_: result type %s can't be cast to the "
                                     "desired output type %s", tt_dtype_name(rdt), tt_dtype_name(da));
                            ck_assert_error(TT_EDTYPE, msg);
                        } else {
                            ck_assert_msg(st == TT_OK, "%s: %s", what, tt_errmsg());
                            ck_assert_uint_eq(tt_version(a), v0 + 1);
                            ck_assert_ptr_eq(tt_data(a), data);
                            ck_assert_int_eq(tt_dtype_of(a), da);
                            read_all(ref, want, 4096);
                            read_all(a, after, 4096);
                            for (int64_t i = 0; i < tt_numel(a); i++) {
                                double w = castv(da, op == I_ZERO ? 0 : want[i]);
                                ck_assert_msg(close_to(da, after[i], w), "%s: element %lld is %g, expected %g (was %g)",
                                              what, (long long)i, after[i], w, before[i]);
                            }
                        }
                        if (st != TT_OK) {
                            /* A refused call writes nothing. */
                            ck_assert_uint_eq(tt_version(a), v0);
                            read_all(a, after, 4096);
                            ck_assert_mem_eq(after, before, sizeof(double) * (size_t)tt_numel(a));
                        }
                        tt_release(ref);
                        tt_release(a);
                        tt_release(b);
                    }
}
END_TEST

START_TEST(test_inplace_view_leaves_rest)
{
    /* Writing through a strided view touches exactly its elements. */
    float base[12];
    for (int i = 0; i < 12; i++)
        base[i] = (float)i;
    tt_tensor *x = tt_from_data(TT_SHAPE(3, 4), TT_F32, base);
    tt_tensor *cols = tt_slice(x, 1, 1, 4, 2);  /* columns 1 and 3 */
    tt_tensor *one = tt_ones(TT_SHAPE(1), TT_F32);
    uint64_t v0 = tt_version(x);
    ck_assert_int_eq(tt_add_scaled_(cols, one, 100), TT_OK);
    ck_assert_uint_eq(tt_version(x), v0 + 1); /* the base sees the bump */
    float got[12];
    ck_assert_int_eq(tt_to_buffer(x, got, sizeof got), TT_OK);
    for (int i = 0; i < 12; i++)
        ck_assert_float_eq(got[i], (float)i + ((i % 4) % 2 == 1 ? 100 : 0));
    ck_assert_int_eq(tt_zero_(cols), TT_OK);
    ck_assert_int_eq(tt_relu_(x), TT_OK);
    ck_assert_int_eq(tt_to_buffer(x, got, sizeof got), TT_OK);
    for (int i = 0; i < 12; i++)
        ck_assert_float_eq(got[i], (i % 4) % 2 == 1 ? 0 : (float)i);
    tt_release(one);
    tt_release(cols);
    tt_release(x);
}
END_TEST

START_TEST(test_inplace_aliasing)
{
    /* Operands that alias the output read their values before any write. */
    float v[6] = {1, 2, 3, 4, 5, 6}, got[9];
    tt_tensor *x = tt_from_data(TT_SHAPE(6), TT_F32, v);
    ck_assert_int_eq(tt_add_(x, x), TT_OK);
    ck_assert_int_eq(tt_to_buffer(x, got, 6 * sizeof(float)), TT_OK);
    for (int i = 0; i < 6; i++)
        ck_assert_float_eq(got[i], 2 * v[i]);
    tt_release(x);

    /* An input overlapping the output other than exactly is refused with
     * PyTorch's message (a shifted view, a transpose of a square matrix,
     * a row of the matrix itself), and nothing is written. */
    x = tt_from_data(TT_SHAPE(6), TT_F32, v);
    tt_tensor *hi = tt_slice(x, 0, 1, 6, 1), *lo = tt_slice(x, 0, 0, 5, 1);
    float m[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    tt_tensor *sq = tt_from_data(TT_SHAPE(3, 3), TT_F32, m);
    tt_tensor *sqt = tt_t(sq), *row = tt_select(sq, 0, 0);
    uint64_t v0 = tt_version(x), v1 = tt_version(sq);
    tt_status sts[4] = {tt_add_(hi, lo), tt_add_(sq, sqt), tt_mul_(sq, row),
                        tt_op_call(tt_op_find("tt::sub_.Tensor"),
                                   (tt_value[]){tt_v_tensor(lo), tt_v_tensor(hi)}, 2,
                                   &(tt_value){0}, 1)};
    for (int i = 0; i < 4; i++)
        ck_assert_msg(sts[i] == TT_EINVAL, "call %d: %s", i, tt_errmsg());
    ck_assert_error(TT_EINVAL, "tt::sub_: unsupported operation: some elements of the input "
                               "tensor and the written-to tensor refer to a single memory "
                               "location. Please clone() the tensor before performing the "
                               "operation.");
    ck_assert_uint_eq(tt_version(x), v0);
    ck_assert_uint_eq(tt_version(sq), v1);
    ck_assert_int_eq(tt_to_buffer(x, got, 6 * sizeof(float)), TT_OK);
    ck_assert_mem_eq(got, v, sizeof v);
    ck_assert_int_eq(tt_to_buffer(sq, got, sizeof got), TT_OK);
    ck_assert_mem_eq(got, m, sizeof m);
    /* unary in place: relu_ into a shifted view of its own input cannot
     * be written as an op with two tensors; copy_ can. */
    ck_assert_int_eq(tt_copy_(hi, lo), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt_copy_: unsupported operation: some elements of the input");
    tt_release(row);
    tt_release(sqt);
    tt_release(sq);
    tt_release(hi);
    tt_release(lo);
    tt_release(x);

    /* An operand that is not dense is too hard to decide (PyTorch lets it
     * through and its result then depends on the order of the writes);
     * here the input is read in full before the write: x[:, 1:] *= x[:, :2]. */
    x = tt_from_data(TT_SHAPE(3, 3), TT_F32, m);
    tt_tensor *right = tt_slice(x, 1, 1, 3, 1), *left = tt_slice(x, 1, 0, 2, 1);
    ck_assert_int_eq(tt_mul_(right, left), TT_OK);
    ck_assert_int_eq(tt_to_buffer(x, got, sizeof got), TT_OK);
    for (int i = 0; i < 3; i++) {
        ck_assert_float_eq(got[i * 3], m[i * 3]);
        ck_assert_float_eq(got[i * 3 + 1], m[i * 3 + 1] * m[i * 3]);
        ck_assert_float_eq(got[i * 3 + 2], m[i * 3 + 2] * m[i * 3 + 1]);
    }
    tt_release(right);
    tt_release(left);
    tt_release(x);
}
END_TEST

START_TEST(test_inplace_overlapping_output_refused)
{
    /* An expanded tensor has many elements at one address: writing into
     * it is refused, as PyTorch does. */
    float v[3] = {1, 2, 3};
    tt_tensor *r = tt_from_data(TT_SHAPE(1, 3), TT_F32, v);
    tt_tensor *e = tt_expand(r, TT_SHAPE(4, 3));
    tt_tensor *o = tt_ones(TT_SHAPE(4, 3), TT_F32);
    uint64_t v0 = tt_version(r);
    tt_status sts[4] = {tt_add_(e, o), tt_mul_scalar_(e, 2), tt_relu_(e),
                        tt_op_call(tt_op_find("tt::add_.Tensor"),
                                   (tt_value[]){tt_v_tensor(e), tt_v_tensor(o)}, 2,
                                   &(tt_value){0}, 1)};
    for (int i = 0; i < 4; i++)
        ck_assert_msg(sts[i] == TT_EINVAL, "call %d: %s", i, tt_errmsg());
    ck_assert_error(TT_EINVAL, "tt::add_: unsupported operation: more than one element of the "
                               "written-to tensor refers to a single memory location. Please "
                               "clone() the tensor before performing the operation.");
    ck_assert_uint_eq(tt_version(r), v0);
    float got[3];
    ck_assert_int_eq(tt_to_buffer(r, got, sizeof got), TT_OK);
    ck_assert_mem_eq(got, v, sizeof v);
    /* Filling is fine: every element gets the same value anyway. */
    ck_assert_int_eq(tt_zero_(e), TT_OK);
    tt_release(o);
    tt_release(e);
    tt_release(r);
}
END_TEST

START_TEST(test_inplace_dtype_rules)
{
    int64_t iv[3] = {1, 2, 3};
    tt_tensor *i64 = tt_from_data(TT_SHAPE(3), TT_I64, iv);
    tt_tensor *f32 = tt_ones(TT_SHAPE(3), TT_F32);
    tt_tensor *f64 = tt_full(TT_SHAPE(3), 0.25, TT_F64);
    tt_tensor *bl = tt_ones(TT_SHAPE(3), TT_BOOL);
    tt_tensor *i32 = tt_ones(TT_SHAPE(3), TT_I32);
    ck_assert_int_eq(tt_add_(i64, f32), TT_EDTYPE);
    ck_assert_error(TT_EDTYPE, "tt::add_: result type f32 can't be cast to the desired output type i64");
    ck_assert_int_eq(tt_div_(i64, i64), TT_EDTYPE);
    ck_assert_error(TT_EDTYPE, "tt::div_: result type f32 can't be cast to the desired output type i64");
    ck_assert_int_eq(tt_mul_scalar_(i64, 2.5), TT_EDTYPE);
    ck_assert_error(TT_EDTYPE, "tt::mul_: result type f32 can't be cast to the desired output type i64");
    ck_assert_int_eq(tt_add_(bl, i32), TT_EDTYPE);
    ck_assert_error(TT_EDTYPE, "result type i32 can't be cast to the desired output type bool");
    /* Widening and same-category writes are fine. */
    ck_assert_int_eq(tt_add_(f32, f64), TT_OK); /* computed in f64, stored as f32 */
    ck_assert_int_eq(tt_add_(i32, bl), TT_OK);
    ck_assert_int_eq(tt_add_(i64, i32), TT_OK);
    ck_assert_int_eq(tt_mul_scalar_(i64, 2), TT_OK); /* an int scalar keeps i64 */
    int64_t gi[3];
    ck_assert_int_eq(tt_to_buffer(i64, gi, sizeof gi), TT_OK);
    ck_assert(gi[0] == 2 * (1 + 2) && gi[2] == 2 * (3 + 2)); /* i32 was 2 by then */
    float gf[3];
    ck_assert_int_eq(tt_to_buffer(f32, gf, sizeof gf), TT_OK);
    ck_assert_float_eq(gf[1], 1.25f);
    /* Shape: the result must have self's shape. */
    tt_tensor *m = tt_ones(TT_SHAPE(2, 3), TT_F32);
    ck_assert_int_eq(tt_add_(f32, m), TT_ESHAPE);
    ck_assert_error(TT_ESHAPE, "tt::add_: output with shape [3] doesn't match the broadcast shape [2, 3]");
    tt_tensor *f4 = tt_ones(TT_SHAPE(4), TT_F32);
    ck_assert_int_eq(tt_mul_(f32, f4), TT_ESHAPE);
    ck_assert_error(TT_ESHAPE, "tt::mul: argument 'other' (#2): shape [4] is not broadcastable to [3]");
    tt_tensor *ts[] = {i64, f32, f64, bl, i32, m, f4};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
        tt_release(ts[i]);
}
END_TEST

START_TEST(test_inplace_fake)
{
    tt_tensor *x = tt_ones(TT_SHAPE(2, 3), TT_F32), *y = tt_ones(TT_SHAPE(3), TT_F32);
    tt_tensor *fx = tt_fake_like(x), *fy = tt_fake_like(y);
    uint64_t v0 = tt_version(fx);
    ck_assert_int_eq(tt_add_(fx, fy), TT_OK);
    ck_assert_int_eq(tt_relu_(fx), TT_OK);
    ck_assert_int_eq(tt_zero_(fx), TT_OK);
    ck_assert_int_eq(tt_mul_scalar_(fx, 2), TT_OK);
    ck_assert_uint_eq(tt_version(fx), v0 + 4);
    /* A real self with a fake other: the fake kernel runs, nothing is written. */
    ck_assert_int_eq(tt_add_(x, fy), TT_OK);
    float got[6];
    ck_assert_int_eq(tt_to_buffer(x, got, sizeof got), TT_OK);
    ck_assert_float_eq(got[0], 1);
    /* The meta checks run on fake tensors too. */
    ck_assert_int_eq(tt_add_(fy, fx), TT_ESHAPE);
    ck_assert_error(TT_ESHAPE, "tt::add_: output with shape [3] doesn't match the broadcast shape [2, 3]");
    tt_tensor *ri = tt_ones(TT_SHAPE(3), TT_I64), *fi = tt_fake_like(ri);
    ck_assert_int_eq(tt_add_(fi, fy), TT_EDTYPE);
    ck_assert_error(TT_EDTYPE, "result type f32 can't be cast to the desired output type i64");
    tt_release(fi);
    tt_release(ri);
    tt_release(fx);
    tt_release(fy);
    tt_release(x);
    tt_release(y);
}
END_TEST

/* ----------------------------------------------------------------- errors */

/* The inputs of the error rows, made again for each row by the "errors"
 * TCase's fixture: a [2, 3] f32, b4 [4] f32, bl [3] bool, i [3] i32, and
 * fake copies of the first three. */
static struct {
    tt_tensor *a, *b4, *bl, *i, *fa, *fb4, *fbl;
} in;

static void errors_setup(void)
{
    tt_test_setup();
    in.a = tt_ones(TT_SHAPE(2, 3), TT_F32), in.b4 = tt_ones(TT_SHAPE(4), TT_F32);
    in.bl = tt_ones(TT_SHAPE(3), TT_BOOL), in.i = tt_ones(TT_SHAPE(3), TT_I32);
    in.fa = tt_fake_like(in.a), in.fb4 = tt_fake_like(in.b4), in.fbl = tt_fake_like(in.bl);
    ck_assert(in.a && in.b4 && in.bl && in.i && in.fa && in.fb4 && in.fbl);
}

static void errors_teardown(void)
{
    tt_tensor *all[] = {in.a, in.b4, in.bl, in.i, in.fa, in.fb4, in.fbl};
    for (int k = 0; k < TT_TABLE_LEN(all); k++)
        tt_release(all[k]);
    memset(&in, 0, sizeof in);
    tt_test_teardown();
}

/* X(name, call, expected status, texts the message contains). The errors
 * metadata decides, once on real and once on fake operands (x [2, 3] f32,
 * y [4] f32, z [3] bool), named pre##...: */
#define META_ERRORS(X, pre, x, y, z)                                           \
    X(pre##add_not_broadcastable, tt_add(x, y), TT_ESHAPE,                     \
      "tt::add: argument 'other' (#2): shape [4] is not broadcastable to [2, 3]") \
    X(pre##lt_not_broadcastable, tt_lt(x, y), TT_ESHAPE,                       \
      "tt::lt: argument 'other' (#2): shape [4] is not broadcastable")         \
    X(pre##pow_not_broadcastable, tt_pow(y, x), TT_ESHAPE,                     \
      "tt::pow: argument 'other' (#2): shape [2, 3] is not broadcastable")     \
    X(pre##where_not_broadcastable, tt_where(z, x, y), TT_ESHAPE,              \
      "tt::where: argument 'other' (#3): shape [4] is not broadcastable to [2, 3]") \
    X(pre##where_f32_condition, tt_where(x, x, x), TT_EDTYPE,                  \
      "tt::where: argument 'condition' (#1) expects a bool tensor, got f32")   \
    X(pre##sub_bools, tt_sub(z, z), TT_EDTYPE,                                 \
      "tt::sub: subtraction, the '-' operator, with two bool tensors is "      \
      "not supported; use logical xor instead")                                \
    X(pre##neg_bool, tt_neg(z), TT_EDTYPE,                                     \
      "tt::neg: argument 'self' (#1): not supported for bool tensors; use logical not instead") \
    X(pre##relu_bool, tt_relu(z), TT_EDTYPE,                                   \
      "tt::relu: argument 'self' (#1): not supported for bool tensors")        \
    X(pre##clamp_no_bounds, tt_clamp(x, NAN, NAN), TT_EINVAL,                  \
      "tt::clamp: at least one of 'min' or 'max' must not be None")

/* A float alpha is refused for integers even when whole (PyTorch looks at
 * the Scalar's kind), a bool one unless the result is bool. NULL operands
 * are named, on every path. */
#define ELEMENTWISE_ERRORS(X)                                                  \
    META_ERRORS(X, real_, in.a, in.b4, in.bl)                                  \
    META_ERRORS(X, fake_, in.fa, in.fb4, in.fbl)                               \
    X(add_scaled_int_float_alpha, tt_add_scaled(in.i, in.i, 0.5), TT_EINVAL,   \
      "tt::add: argument 'alpha': for integral input tensors, alpha "          \
      "must not be a floating point number (got 0.5)")                         \
    X(sub_int_whole_float_alpha,                                               \
      tt_call(add_sub_op(1), tt_v_tensor(in.i), tt_v_tensor(in.i), tt_v_float(2.0)), TT_EINVAL, \
      "tt::sub: argument 'alpha': for integral input tensors, alpha "          \
      "must not be a floating point number (got 2)")                           \
    X(add_int_bool_alpha,                                                      \
      tt_call(add_sub_op(0), tt_v_tensor(in.i), tt_v_tensor(in.i), tt_v_bool(true)), TT_EDTYPE, \
      "tt::add: argument 'alpha': a bool alpha is only supported for "         \
      "bool results (the result is i32)")                                      \
    X(add_bool_float_alpha,                                                    \
      tt_call(add_sub_op(0), tt_v_tensor(in.bl), tt_v_tensor(in.bl), tt_v_float(2.0)), TT_EINVAL, \
      "tt::add: argument 'alpha': for integral input tensors")                 \
    X(sub_bool_self, tt_call(add_sub_op(1), tt_v_tensor(in.bl), tt_v_tensor(in.i)), TT_EDTYPE, \
      "tt::sub: argument 'self' (#1): subtraction, the '-' operator, "         \
      "with a bool tensor is not supported; to invert a mask use "             \
      "logical not instead")                                                   \
    X(add_scaled__int_float_alpha, tt_add_scaled_(in.i, in.i, 0.5), TT_EINVAL, \
      "alpha must not be a floating point number")                             \
    X(add_null_self, tt_add(NULL, in.a), TT_EINVAL,                            \
      "tt::add.Tensor: argument 'self' (#1) expects Tensor, got NULL")         \
    X(mul_null_other, tt_mul(in.a, NULL), TT_EINVAL,                           \
      "tt::mul.Tensor: argument 'other' (#2) expects Tensor, got NULL")        \
    X(exp_null_self, tt_exp(NULL), TT_EINVAL,                                  \
      "tt::exp: argument 'self' (#1) expects Tensor, got NULL")                \
    X(where_null_self, tt_where(in.bl, NULL, in.a), TT_EINVAL,                 \
      "tt::where.self: argument 'self' (#2) expects Tensor, got NULL")         \
    X(clamp_null_self, tt_clamp(NULL, 0, 1), TT_EINVAL,                        \
      "tt::clamp: argument 'self' (#1) expects Tensor, got NULL")              \
    X(add_scalar_null_self, tt_add_scalar(NULL, 1), TT_EINVAL,                 \
      "tt::add.Scalar: argument 'self' (#1) expects Tensor, got NULL")         \
    X(add__null_self, tt_add_(NULL, in.a), TT_EINVAL,                          \
      "tt::add_.Tensor: argument 'self' (#1) expects Tensor, got NULL")        \
    X(zero__null_self, tt_zero_(NULL), TT_EINVAL,                              \
      "tt::zero_: argument 'self' (#1) expects Tensor, got NULL")              \
    X(relu__null_self, tt_relu_(NULL), TT_EINVAL, NULL)                        \
    X(mul_scalar__null_self, tt_mul_scalar_(NULL, 2), TT_EINVAL,               \
      "tt::mul_.Scalar: argument 'self' (#1) expects Tensor, got NULL")

/* tt::add.Tensor (0) or tt::sub.Tensor (1), for the boxed calls. */
static const tt_op *add_sub_op(int sub)
{
    const tt_op *o = tt_op_find(sub ? "tt::sub.Tensor" : "tt::add.Tensor");
    ck_assert_msg(o != NULL, "%s", tt_errmsg());
    return o;
}

TT_ERROR_TABLE(ELEMENTWISE_ERRORS, elementwise_errors);

/* One row of ELEMENTWISE_ERRORS per iteration. */
START_TEST(test_errors)
{
    tt_test_run_error_case(&elementwise_errors[_i], _i);
}
END_TEST

/* A bool alpha for a bool result, an int alpha for a float one. */
START_TEST(test_alpha_accepted)
{
    const tt_op *add = add_sub_op(0);
    tt_tensor *ok1 = tt_call(add, tt_v_tensor(in.bl), tt_v_tensor(in.bl), tt_v_bool(true));
    tt_tensor *ok2 = tt_call(add, tt_v_tensor(in.a), tt_v_tensor(in.a), tt_v_int(2));
    ck_assert_msg(ok1 && ok2, "%s", tt_errmsg());
    tt_release(ok1);
    tt_release(ok2);
}
END_TEST

START_TEST(test_oom)
{
    /* Every allocation of a call can fail: the call fails cleanly with
     * TT_ENOMEM and leaves nothing behind. */
    tt_tensor *a = tt_ones(TT_SHAPE(2, 3), TT_I32), *b = tt_ones(TT_SHAPE(3), TT_F64);
    tt_tensor *at_base = tt_ones(TT_SHAPE(3, 2), TT_F32), *at = tt_t(at_base);
    tt_tensor *bl = tt_ones(TT_SHAPE(2, 3), TT_BOOL);
    int64_t live = tt_live_tensors();
    for (int which = 0; which < 6; which++) {
        int failures = 0;
        for (int64_t n = 1; n < 200; n++) {
            tt_debug_fail_alloc(n);
            tt_tensor *r = NULL;
            tt_status st = TT_OK;
            switch (which) {
            case 0: r = tt_add(a, b); break;
            case 1: r = tt_exp(at); break;
            case 2: r = tt_where(bl, a, b); break;
            case 3: r = tt_clamp(at, 0, 0.5); break;
            case 4: st = tt_add_(at, b); break;
            default: r = tt_call(tt_op_find("tt::mul.Scalar"), tt_v_tensor(at), tt_v_float(2)); break;
            }
            tt_debug_fail_alloc(0);
            if (r || (which == 4 && st == TT_OK)) {
                tt_release(r);
                ck_assert_int_eq(tt_live_tensors(), live);
                break;
            }
            failures++;
            ck_assert_msg(tt_errcode() == TT_ENOMEM, "call %d, allocation %lld: %s", which,
                          (long long)n, tt_errmsg());
            ck_assert_int_eq(tt_live_tensors(), live);
        }
        ck_assert_int_gt(failures, 0);
    }
    tt_release(a);
    tt_release(b);
    tt_release(at);
    tt_release(at_base);
    tt_release(bl);
}
END_TEST

/* --------------------------------------------------------------- suite */

/* A transposed operand is read through a row-major tile buffer (sizes
 * that are no multiple of the tile, every element size): the results are
 * those of the same op on contiguous copies, bit for bit. */
START_TEST(test_transposed_operands_tiled)
{
    static const tt_dtype dts[] = {TT_F32, TT_F64, TT_I32, TT_U8};
    for (int d = 0; d < 4; d++) {
        tt_tensor *a0 = NN(tt_randn(TT_SHAPE(70, 130), TT_F64));
        tt_tensor *b0 = NN(tt_randn(TT_SHAPE(130, 70), TT_F64));
        tt_tensor *as = NN(tt_mul_scalar(a0, 20)), *bs = NN(tt_mul_scalar(b0, 20));
        tt_tensor *a = NN(tt_to_dtype(as, dts[d])), *b = NN(tt_to_dtype(bs, dts[d]));
        tt_tensor *at = NN(tt_t(a)), *atc = NN(tt_contiguous(at));
        tt_tensor *r = NN(tt_add(at, b)), *want = NN(tt_add(atc, b));
        tt_test_assert_same_bits(r, want, tt_dtype_name(dts[d]));
        tt_tensor *r2 = NN(tt_mul(b, at)), *want2 = NN(tt_mul(b, atc));
        tt_test_assert_same_bits(r2, want2, tt_dtype_name(dts[d]));
        if (dts[d] == TT_F32 || dts[d] == TT_F64) {
            tt_tensor *s = NN(tt_sin(at)), *ws = NN(tt_sin(atc));
            tt_test_assert_same_bits(s, ws, "sin");
            tt_release(s);
            tt_release(ws);
        }
        tt_tensor *all[] = {a0, b0, as, bs, a, b, at, atc, r, want, r2, want2};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
            tt_release(all[i]);
    }
}
END_TEST

/* Outputs larger than the cache are streamed (written with non-temporal
 * stores, through a staging block for the plain loops, directly by the
 * vector kernels): bit for bit what the same op gives on small windows of
 * the input, which are not streamed. The length is odd, so the second
 * thread's chunk starts off a line boundary; the windows cover the
 * start, the chunk boundary at n/2 and the end. */
START_TEST(test_streamed_outputs)
{
    int64_t n = tt_test_last_level_cache_bytes() / 8 + 4099;
    tt_tensor *a = NN(tt_randn(TT_SHAPE(n), TT_F32)), *b = NN(tt_randn(TT_SHAPE(n), TT_F32));
    tt_tensor *a64 = NN(tt_to_dtype(a, TT_F64));
    const int64_t windows[][2] = {{0, 37}, {n / 2 - 50, 100}, {n / 2 + 1, 33},
                                  {n / 3, 1000}, {n - 77, 77}};
    for (int op = 0; op < 8; op++) {
        static const char *names[] = {"add", "mul", "gt", "neg", "exp", "tanh", "gelu", "exp f64"};
        tt_tensor *x = op == 7 ? a64 : a;
        tt_tensor *(*unary)(const tt_tensor *) = op == 3 ? tt_neg : op == 4 || op == 7 ? tt_exp
                                               : op == 5 ? tt_tanh : op == 6 ? tt_gelu : NULL;
        tt_tensor *(*binary)(const tt_tensor *, const tt_tensor *) =
            op == 0 ? tt_add : op == 1 ? tt_mul : op == 2 ? tt_gt : NULL;
        tt_tensor *r = NN(unary ? unary(x) : binary(x, b));
        for (size_t w = 0; w < sizeof windows / sizeof windows[0]; w++) {
            int64_t at = windows[w][0], len = windows[w][1];
            tt_tensor *xs = NN(tt_narrow(x, 0, at, len)), *bs = NN(tt_narrow(b, 0, at, len));
            tt_tensor *rs = NN(tt_narrow(r, 0, at, len));
            tt_tensor *want = NN(unary ? unary(xs) : binary(xs, bs));
            tt_test_assert_same_bits(rs, want, names[op]);
            tt_release(xs);
            tt_release(bs);
            tt_release(rs);
            tt_release(want);
        }
        tt_release(r);
    }
    tt_release(a);
    tt_release(b);
    tt_release(a64);
}
END_TEST

/* Integer overflow wraps, as PyTorch's kernels do on every CPU, instead of
 * being undefined behaviour in C (the ASan+UBSan pass runs this):
 * inf -> i64 saturates to INT64_MAX, and INT64_MAX * 3 wraps to
 * 2^63 - 3 (PyTorch 1.13: tensor([2**63-1]) * 3 == 9223372036854775805). */
START_TEST(test_integer_overflow_wraps)
{
    tt_scope_begin();
    tt_tensor *inf = tt_full(TT_SHAPE(2), INFINITY, TT_F64);
    tt_tensor *big = tt_to_dtype(inf, TT_I64);
    ck_assert_ptr_nonnull(big);
    ck_assert_int_eq(((const int64_t *)tt_data(big))[0], INT64_MAX);
    tt_tensor *m = tt_mul_scalar(big, 3);
    ck_assert_ptr_nonnull(m);
    ck_assert_int_eq(((const int64_t *)tt_data(m))[1], INT64_MAX - 2);
    tt_tensor *p = tt_add_scalar(big, 1);
    ck_assert_int_eq(((const int64_t *)tt_data(p))[0], INT64_MIN);
    tt_tensor *n = tt_neg(p), *a = tt_abs(p);
    ck_assert_int_eq(((const int64_t *)tt_data(n))[0], INT64_MIN);
    ck_assert_int_eq(((const int64_t *)tt_data(a))[0], INT64_MIN);
    tt_tensor *d = tt_sub(p, big); /* INT64_MIN - INT64_MAX = 1 */
    ck_assert_int_eq(((const int64_t *)tt_data(d))[0], 1);
    int32_t v32[2] = {INT32_MAX, INT32_MIN};
    tt_tensor *i = tt_from_data(TT_SHAPE(2), TT_I32, v32);
    tt_tensor *i2 = tt_mul(i, i);
    ck_assert_int_eq(((const int32_t *)tt_data(i2))[0], 1); /* (2^31-1)^2 mod 2^32 */
    ck_assert_int_eq(((const int32_t *)tt_data(i2))[1], 0);
    tt_scope_end();
    ck_assert_int_eq(tt_live_tensors(), 0);
}
END_TEST

/* fmod and remainder of integers: x % -1 is 0 for INT64_MIN too (C's
 * INT64_MIN % -1 traps, and PyTorch 1.13 dies of SIGFPE there); a zero
 * divisor and bool operands are refused with the op named. */
START_TEST(test_integer_modulo_edges)
{
    tt_scope_begin();
    int64_t av[4] = {INT64_MIN, -7, 7, INT64_MAX}, bv[4] = {-1, 2, -2, -1};
    tt_tensor *a = tt_from_data(TT_SHAPE(4), TT_I64, av);
    tt_tensor *b = tt_from_data(TT_SHAPE(4), TT_I64, bv);
    const int64_t want_fmod[4] = {0, -1, 1, 0}, want_rem[4] = {0, 1, -1, 0};
    tt_tensor *f = tt_fmod(a, b), *r = tt_remainder(a, b);
    ck_assert_ptr_nonnull(f);
    ck_assert_ptr_nonnull(r);
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(((const int64_t *)tt_data(f))[i], want_fmod[i]);
        ck_assert_int_eq(((const int64_t *)tt_data(r))[i], want_rem[i]);
    }
    tt_tensor *z = tt_zeros(TT_SHAPE(4), TT_I64);
    ck_assert_ptr_null(tt_fmod(a, z));
    ck_assert_error(TT_EINVAL, "tt::fmod: argument 'other' (#2): integer division by zero "
                               "(ZeroDivisionError)");
    ck_assert_ptr_null(tt_remainder_scalar(a, 0));
    ck_assert_error(TT_EINVAL, "tt::remainder: argument 'other' (#2): integer division by "
                               "zero (ZeroDivisionError)");
    tt_tensor *m = tt_gt(a, b);
    ck_assert_ptr_null(tt_remainder(m, m));
    ck_assert_error(TT_EDTYPE, "tt::remainder: argument 'self' (#1): not implemented for bool "
                               "tensors");
    /* a float divisor of zero is NaN, as fmod's */
    tt_tensor *x = tt_full(TT_SHAPE(2), 3, TT_F32);
    tt_tensor *n = tt_fmod_scalar(x, 0.0);
    ck_assert(isnan(((const float *)tt_data(n))[0]));
    tt_scope_end();
    ck_assert_int_eq(tt_live_tensors(), 0);
}
END_TEST

static Suite *elementwise_suite(void)
{
    Suite *s = suite_create("ops_elementwise");
    TCase *tc = tt_tcase("binary");
    tcase_add_loop_test(tc, test_binary_tables, 0, B_COUNT);
    tcase_add_loop_test(tc, test_binary_scalar_tables, 0, B_COUNT);
    tcase_add_test(tc, test_promotion_cases);
    tcase_add_test(tc, test_transposed_operands_tiled);
    tcase_add_test(tc, test_streamed_outputs);
    tcase_add_test(tc, test_integer_edge_values);
    suite_add_tcase(s, tc);

    tc = tt_tcase("unary");
    tcase_add_loop_test(tc, test_unary_tables, 0, U_COUNT);
    tcase_add_test(tc, test_unary_special_values);
    tcase_add_test(tc, test_vector_kernels_dense);
    tcase_add_test(tc, test_vector_kernels_special);
    tcase_add_test(tc, test_exp_kernel);
    tcase_add_test(tc, test_sin_kernel);
    tcase_add_test(tc, test_gelu_backward);
    suite_add_tcase(s, tc);

    tc = tt_tcase("where_clamp");
    tcase_add_test(tc, test_where_tables);
    tcase_add_test(tc, test_clamp_tables);
    tcase_add_test(tc, test_clamp_nan);
    suite_add_tcase(s, tc);

    tc = tt_tcase("strides");
    tcase_add_test(tc, test_output_strides);
    suite_add_tcase(s, tc);

    tc = tt_tcase("inplace");
    tcase_add_loop_test(tc, test_inplace_tables, 0, I_COUNT);
    tcase_add_test(tc, test_inplace_view_leaves_rest);
    tcase_add_test(tc, test_inplace_aliasing);
    tcase_add_test(tc, test_inplace_overlapping_output_refused);
    tcase_add_test(tc, test_inplace_dtype_rules);
    tcase_add_test(tc, test_inplace_fake);
    suite_add_tcase(s, tc);

    tc = tt_tcase("errors");
    tcase_add_test(tc, test_integer_overflow_wraps);
    tcase_add_test(tc, test_integer_modulo_edges);
    tcase_add_test(tc, test_oom);
    suite_add_tcase(s, tc);

    tc = tt_tcase_with("error_table", errors_setup, errors_teardown);
    tcase_add_loop_test(tc, test_errors, 0, TT_TABLE_LEN(elementwise_errors));
    tcase_add_test(tc, test_alpha_accepted);
    suite_add_tcase(s, tc);
    return s;
}

TT_TEST_MAIN(elementwise_suite)
