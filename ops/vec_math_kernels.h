/* Internal: exp, sin, tanh, gelu, gelu(approximate="tanh") and gelu's
 * derivatives written once over a vector type, for vec_math.c (AVX2, 8
 * lanes) and vec_math_avx512.c (AVX-512F, 16 lanes). The includer defines
 * V (the vector type) and the operations below; everything here inlines
 * into its loop.
 *
 * Why not SLEEF for these: its tanhf and erff are accurate to 1 ULP but
 * cost 4-6x an exp (a call each, long polynomials and range splits), so
 * tanh and gelu ran at a fifth of the memory bandwidth the other
 * elementwise ops reach; its expf (1 ULP too) costs about 1.6x ours, which
 * kept exp under the bandwidth once outputs were streamed, and its sinf
 * is a call per vector, which does not interleave (vk_sin). Here exp and
 * sin are a reduction and a polynomial; tanh and gelu one short inline
 * exp, a few multiply-adds and one division each: the divider runs beside
 * the FMA units, so a division costs less than a refined reciprocal
 * estimate, and it is exact where AVX2's 12-bit estimate refined once is
 * not (tanh came to 4.7 ULP that way).
 *
 *   exp(x)   Cody-Waite reduction x = n ln2 + r, |r| <= ln2/2, then
 *            e^r - 1 = r + r^2 P(r), P the minimax quartic (relative
 *            error of e^r - 1 below 1.4e-8), and 2^n put in the exponent;
 *            the exp op itself (vk_exp_any) takes P one degree higher,
 *            so that it stays within 1 ULP, and covers every float.
 *   2^t      t = n + f, |f| <= 1/2: 2^f by the minimax sextic (relative
 *            error 1.9e-9; gelu's, the quintic, 7.5e-8), then 2^n by
 *            V_LDEXP.
 *   tanh(x)  odd, so on a = |x|: -m / (2 + m) with m = e^(-2a) - 1
 *            = 2^n (e^r - 1) + (2^n - 1), which does not cancel near 0
 *            (for n = 0 it is the series itself; for n <= -1 the two
 *            terms cannot cancel): within 3 ULP.
 *   gelu(x)  x Phi(x) = x / (1 + e^(-g(x))), g = log(Phi / (1 - Phi)),
 *            Phi's logit, which is odd and smooth: g(x) = x q(x^2) with q
 *            a sextic fitted (Lawson's weighted minimax) to the error the
 *            tests allow gelu, 4 ULP + 4e-7, the absolute error PyTorch's
 *            own vectorized erf has (1.5e-7 in erf); it uses 0.17 of that
 *            (0.3 with rounding). No erf and no cancellation: for x < 0
 *            the quotient is small itself, and infinities and NaN come
 *            out as x * Phi gives them.
 *   gelu_tanh(x) = 0.5 x (1 + tanh(u)) = x / (1 + e^(-2u)),
 *            u = sqrt(2/pi) (x + 0.044715 x^3): the same quotient.
 *   sin(x)   (-1)^n sin(r), r = |x| - n pi in three parts, for |x| up to
 *            1000; SLEEF's kernel past that (vk_sin says more).
 *   gelu's derivatives keep Phi from erfc by Abramowitz and Stegun 7.1.26
 *            (absolute error <= 1.5e-7), as PyTorch's vectorized erf: they
 *            need e^(-x^2/2) anyway, and erfc is that times a polynomial.
 * tools/vec_math_fit.py fits the polynomials (and reproduces them).
 *
 * The includer provides:
 *   V_SET1(c) V_ADD(a,b) V_SUB(a,b) V_MUL(a,b) V_DIV(a,b)
 *   V_FMA(a,b,c) = a*b + c    V_ABS(a)
 *   V_MIN(a,b) V_MAX(a,b)  b when a or b is NaN (the x86 rule), so NaN
 *                passes through V_MIN(c, x) and V_MAX(c, x)
 *   V_ROUND(a)   float rounded to the nearest integer (as float)
 *   V_POW2(n)    2^n for integral float n in [-126, 127]
 *   V_LDEXP(p,n) p 2^n, rounded (to 0 or infinity past float's range), for
 *                p in [0.5, 2] and integral float n in [-150, 150]
 *   V_SIGN(x)    x's sign bit alone;  V_OR(a,b) V_XOR(a,b) bitwise
 *   V_ODD_SIGN(n) the sign bit where integral float n is odd
 *   V_LT_SEL(a, b, x, y)  lanes where a < b take x, the others y
 *   V_NAN_SEL(x, y)       lanes where x is NaN take x, the others y
 *   V_ALL_LT(a, b)        whether a < b in every lane
 *   V_LOADU(p), V_WIDTH   an unaligned load, the lanes of V
 * and, for the drivers at the end (vk_unary, vk_binary), SLEEF's kernels
 * V_SLEEF_LOG(v) V_SLEEF_SIN(v) V_SLEEF_COS(v) and its loops:
 * VK_LOOP_STEPS(F, AT, FULL, STEP4) runs o[i] = F(x[i]) (or F(a[i], b[i]))
 * over n floats, STEP4 taking four vectors a step, AT the head and the
 * tail, with non-temporal stores when `stream` is true, and returns true;
 * VK_UNARY_LOOP(F) and VK_BINARY_LOOP(F) are it with the includer's own
 * VK_STEP4. */

/* The Cody-Waite reduction x = n ln2 + r, |r| <= ln2/2 (ln2's high part
 * has trailing zeros, so n ln2_hi is exact): returns r, *n receives n. */
static inline V vk_exp_reduce(V x, V *n)
{
    *n = V_ROUND(V_MUL(x, V_SET1(1.44269504088896341f)));
    V r = V_FMA(*n, V_SET1(-0.693145751953125f), x);
    return V_FMA(*n, V_SET1(-1.428606765330187045e-06f), r);
}

/* e^r - 1 = r + r^2 P(r) for |r| <= ln2/2, after vk_exp_reduce; *s
 * receives 2^n. P is the minimax quartic for the relative error of
 * e^r - 1 (below 1.4e-8; Taylor's series needs a sextic). */
static inline V vk_exp_parts(V x, V *s)
{
    V n, r = vk_exp_reduce(x, &n);
    V p = V_SET1(1.388252247e-03f);
    p = V_FMA(p, r, V_SET1(8.366513997e-03f));
    p = V_FMA(p, r, V_SET1(4.166720062e-02f));
    p = V_FMA(p, r, V_SET1(1.666654348e-01f));
    p = V_FMA(p, r, V_SET1(4.999999702e-01f));
    *s = V_POW2(n);
    return V_FMA(V_MUL(p, r), r, r);
}

/* e^x for x in [-87, 88] (callers clamp: below, e^x underflows the normal
 * range; above, it overflows): 2^n (1 + (e^r - 1)). */
static inline V vk_exp(V x)
{
    V s, q = vk_exp_parts(x, &s);
    return V_FMA(s, q, s);
}

/* e^x for every float x, the exp op's kernel: within 1 ULP (0.991 at
 * worst, checked on every float; SLEEF's u10 kernel, used before, has
 * 0.988) in about 0.6 of SLEEF's time, which kept exp below the memory
 * bandwidth. The same reduction as vk_exp with P one degree higher
 * (relative error of e^r - 1 below 2.4e-10, so the one rounding of
 * 1 + (e^r - 1) is nearly all the error). Clamped to [-104, 89]: below,
 * e^x rounds to 0; above, to infinity, which V_LDEXP gives (n = 129);
 * results in the subnormal range come out of V_LDEXP rounded. NaN passes
 * the clamps (V_MAX(c, NaN) is NaN) and every step after them. */
static inline V vk_exp_any(V x)
{
    V n, r = vk_exp_reduce(V_MIN(V_SET1(89.0f), V_MAX(V_SET1(-104.0f), x)), &n);
    V p = V_SET1(1.984587725e-04f);
    p = V_FMA(p, r, V_SET1(1.394061721e-03f));
    p = V_FMA(p, r, V_SET1(8.333389647e-03f));
    p = V_FMA(p, r, V_SET1(4.166636243e-02f));
    p = V_FMA(p, r, V_SET1(1.666666567e-01f));
    p = V_FMA(p, r, V_SET1(5.000000000e-01f));
    return V_LDEXP(V_ADD(V_SET1(1.0f), V_FMA(V_MUL(p, r), r, r)), n);
}

/* t = n + f, |f| <= 1/2, for 2^t = 2^n 2^f: returns f, *n receives n.
 * t is clamped to [-150, 150] first, where 2^t is 0 or infinity anyway:
 * the clamps keep t - round(t) finite at infinity and pass NaN. */
static inline V vk_exp2_reduce(V t, V *n)
{
    t = V_MIN(V_SET1(150.0f), V_MAX(V_SET1(-150.0f), t));
    *n = V_ROUND(t);
    return V_SUB(t, *n);
}

/* 2^t for any t: 0 below -150, infinity above 150, NaN for NaN. */
static inline V vk_exp2(V t)
{
    V n, f = vk_exp2_reduce(t, &n);
    V p = V_SET1(1.534581243e-04f);
    p = V_FMA(p, f, V_SET1(1.339993207e-03f));
    p = V_FMA(p, f, V_SET1(9.618489072e-03f));
    p = V_FMA(p, f, V_SET1(5.550328642e-02f));
    p = V_FMA(p, f, V_SET1(2.402264625e-01f));
    p = V_FMA(p, f, V_SET1(6.931471825e-01f));
    p = V_FMA(p, f, V_SET1(1.0f));
    return V_LDEXP(p, n);
}

/* vk_exp2 with 2^f one degree lower (relative error 7.5e-8), for gelu
 * alone: its quotient x / (1 + 2^t) damps 2^t's error by
 * Phi (1 - Phi) <= 1/4 against a bound of 4 ULP + 4e-7, and it stays at
 * 0.29 of that bound; gelu_tanh's bound (4 ULP + 1e-8) does not allow it
 * (1.12 times the bound near x = -1.87). One FMA fewer: 5% of gelu. */
static inline V vk_exp2_quintic(V t)
{
    V n, f = vk_exp2_reduce(t, &n);
    V p = V_SET1(1.327647245e-03f);
    p = V_FMA(p, f, V_SET1(9.675541893e-03f));
    p = V_FMA(p, f, V_SET1(5.550713092e-02f));
    p = V_FMA(p, f, V_SET1(2.402212024e-01f));
    p = V_FMA(p, f, V_SET1(6.931469440e-01f));
    p = V_FMA(p, f, V_SET1(1.000000119e+00f));
    return V_LDEXP(p, n);
}

/* x / (1 + e), e = 2^t: gelu's x Phi with Phi = 1 / (1 + 2^t). Where
 * 2^t is infinite this is -0 for finite x < 0 and NaN for x = -inf
 * (x * Phi = -inf * 0, as PyTorch's formula gives); a NaN x gives NaN. */
static inline V vk_x_over_1p(V x, V e)
{
    return V_DIV(x, V_ADD(V_SET1(1.0f), e));
}

/* On t = -2 min(|x|, 9) (past 9, tanh rounds to 1), so n is in [-26, 0]
 * and one FMA with float(ln2) reduces well enough: its error
 * n (ln2 - float(ln2)), below 5e-8, reaches m only times 2^n. Then
 * m / (-2 - m) = -m / (2 + m), +0 for x = +-0, and the sign comes from x.
 * A NaN x passes the clamp (V_MIN(c, NaN) is NaN) and every step after. */
static inline V vk_tanh(V x)
{
    V t = V_MUL(V_MIN(V_SET1(9.0f), V_ABS(x)), V_SET1(-2.0f));
    V n = V_ROUND(V_MUL(t, V_SET1(1.44269504088896341f)));
    V r = V_FMA(n, V_SET1(-0.693147180559945309f), t);
    V p = V_SET1(1.388252247e-03f);
    p = V_FMA(p, r, V_SET1(8.366513997e-03f));
    p = V_FMA(p, r, V_SET1(4.166720062e-02f));
    p = V_FMA(p, r, V_SET1(1.666654348e-01f));
    p = V_FMA(p, r, V_SET1(4.999999702e-01f));
    V s = V_POW2(n), q = V_FMA(V_MUL(p, r), r, r);
    V m = V_FMA(s, q, V_SUB(s, V_SET1(1.0f)));
    return V_OR(V_DIV(m, V_SUB(V_SET1(-2.0f), m)), V_SIGN(x));
}

/* x / (1 + 2^t) with t = -log2(e) g(x) = x q(x^2), q the sextic below.
 * q stays negative and decreasing for every x^2 (checked to 1e4; past
 * that its leading term rules), so t runs to +inf as x -> -inf and to
 * -inf as x -> +inf, where vk_exp2_quintic clamps it. */
static inline V vk_gelu(V x)
{
    V s = V_MUL(x, x);
    V q = V_SET1(-5.193576680e-09f);
    q = V_FMA(q, s, V_SET1(3.842103240e-07f));
    q = V_FMA(q, s, V_SET1(-1.143680402e-05f));
    q = V_FMA(q, s, V_SET1(1.592551125e-04f));
    q = V_FMA(q, s, V_SET1(9.613469592e-05f));
    q = V_FMA(q, s, V_SET1(-1.048395038e-01f));
    q = V_FMA(q, s, V_SET1(-2.302206755e+00f));
    return vk_x_over_1p(x, vk_exp2_quintic(V_MUL(x, q)));
}

/* x / (1 + e^(-2u)) = x / (1 + 2^t), t = -2 log2(e) u. */
static inline V vk_gelu_tanh(V x)
{
    const double c1 = -2 * 1.44269504088896341 * 0.79788456080286535588;
    return vk_x_over_1p(x, vk_exp2(V_MUL(x, V_FMA(V_SET1((float)(c1 * 0.044715)), V_MUL(x, x),
                                                  V_SET1((float)c1)))));
}

/* Phi(x), the normal distribution function, for gelu's derivative;
 * *e_half_x2 receives e^(-x^2/2) (0 past |x| = 9.25 sqrt2), which the
 * derivative needs too. */
static inline V vk_phi(V x, V *e_half_x2)
{
    V a = V_MUL(V_ABS(x), V_SET1(0.70710678118654752440f));
    /* Past 9.25, erfc is below the smallest normal float: there Phi is 0
     * or 1. The clamp keeps e^(-a^2) inside vk_exp's range (-a^2 >= -87)
     * and 1/(1 + p a) finite at infinity; the select then makes it 0. */
    V ac = V_MIN(a, V_SET1(9.25f));
    V t = V_DIV(V_SET1(1.0f), V_FMA(ac, V_SET1(0.3275911f), V_SET1(1.0f)));
    /* A&S's coefficients, halved (exactly) to give erfc / 2. */
    V p = V_SET1(1.061405429f / 2);
    p = V_FMA(p, t, V_SET1(-1.453152027f / 2));
    p = V_FMA(p, t, V_SET1(1.421413741f / 2));
    p = V_FMA(p, t, V_SET1(-0.284496736f / 2));
    p = V_FMA(p, t, V_SET1(0.254829592f / 2));
    V e = V_LT_SEL(a, V_SET1(9.25f), vk_exp(V_MUL(V_SUB(V_SET1(0.0f), ac), ac)), V_SET1(0.0f));
    V half_erfc = V_MUL(V_MUL(p, t), e);
    *e_half_x2 = e;
    return V_LT_SEL(x, V_SET1(0.0f), half_erfc, V_SUB(V_SET1(1.0f), half_erfc));
}

/* g * gelu'(x) = g (Phi(x) + x e^(-x^2/2) / sqrt(2 pi)). */
/* a + b: scatter_add's row that starts from self, streamed out */
static inline V vk_add(V a, V b) { return V_ADD(a, b); }

static inline V vk_gelu_backward(V g, V x)
{
    V e, phi = vk_phi(x, &e);
    V dy = V_FMA(V_MUL(x, V_SET1(0.39894228040143267794f)), e, phi);
    return V_NAN_SEL(x, V_MUL(g, dy));
}

/* g * d/dx [0.5 x (1 + tanh u)], u = sqrt(2/pi) (x + 0.044715 x^3):
 * 0.5 (1 + t) + 0.5 x (1 - t^2) u', t = tanh u. Both 1 + t and 1 - t^2
 * cancel in the tails, so they come from E = e^(-2u) (vk_gelu_tanh's
 * 2^t) instead: 0.5 (1 + t) = 1/(1 + E) = r and 1 - t^2 = 4 (E r) r.
 * Past |x| = 10 the derivative is 0 or 1 to float precision (|u| > 43,
 * E r r < 2^-125): x is clamped there, which keeps E finite and x u'
 * small. At +-inf PyTorch's formula gives NaN (inf * 0), and so does
 * adding x - x (0 for finite x); NaN stays NaN. */
static inline V vk_gelu_tanh_backward(V g, V x)
{
    const double c1 = -2 * 1.44269504088896341 * 0.79788456080286535588;
    V xc = V_MIN(V_SET1(10.0f), V_MAX(V_SET1(-10.0f), x)), s = V_MUL(xc, xc);
    V e = vk_exp2(V_MUL(xc, V_FMA(V_SET1((float)(c1 * 0.044715)), s, V_SET1((float)c1))));
    V r = V_DIV(V_SET1(1.0f), V_ADD(V_SET1(1.0f), e));
    /* 2 u' = 2 sqrt(2/pi) (1 + 3 0.044715 x^2) */
    V du2 = V_FMA(V_SET1((float)(6 * 0.044715 * 0.79788456080286535588)), s,
                  V_SET1((float)(2 * 0.79788456080286535588)));
    V dy = V_FMA(V_MUL(xc, du2), V_MUL(V_MUL(e, r), r), r);
    return V_MUL(g, V_ADD(dy, V_SUB(x, x)));
}

/* sin(x) = (-1)^n sin(r), r = |x| - n pi, |r| <= pi/2, with pi in three
 * float parts (from pi to 80 digits: a double's pi is off by most of the
 * last part): for n <= 318 (|x| up to 1000) |x| - n pi_hi is exact inside
 * its FMA and the other two parts leave r its relative precision, so
 * r + r^3 P(r^2) (P the minimax cubic for sin's relative error, 6e-9) is
 * within 1.9 ULP there. Lanes with larger n (and infinite or NaN ones) take SLEEF's
 * result, whose reduction covers every float: vk_sin_fix. Inline, four
 * vectors interleave, where SLEEF's calls run one after the other. */
static inline V vk_sin_small(V x, V *n)
{
    V a = V_ABS(x);
    *n = V_ROUND(V_MUL(a, V_SET1(0.318309886183790671538f)));
    V r = V_FMA(*n, V_SET1(-3.141592741e+00f), a);
    r = V_FMA(*n, V_SET1(8.742277657e-08f), r);
    r = V_FMA(*n, V_SET1(3.430249020e-15f), r);
    V s = V_MUL(r, r);
    V p = V_SET1(2.605780310e-06f);
    p = V_FMA(p, s, V_SET1(-1.980960224e-04f));
    p = V_FMA(p, s, V_SET1(8.333066478e-03f));
    p = V_FMA(p, s, V_SET1(-1.666665971e-01f));
    V y = V_FMA(V_MUL(p, s), r, r);
    return V_XOR(y, V_XOR(V_SIGN(x), V_ODD_SIGN(*n)));
}

#define VK_SIN_N_MAX 318.5f

static inline V vk_sin_fix(V x, V n, V y)
{
    return V_LT_SEL(n, V_SET1(VK_SIN_N_MAX), y, V_SLEEF_SIN(x));
}

static inline V vk_sin(V x)
{
    V n, y = vk_sin_small(x, &n);
    return V_ALL_LT(n, V_SET1(VK_SIN_N_MAX)) ? y : vk_sin_fix(x, n, y);
}

/* sin's VK_STEP4: the four vectors first, then one check of their n for
 * all four (a branch between them would keep them apart, and a check per
 * vector costs about what interleaving gains). */
#define VK_SIN_STEP4(F, FULL, STORE)                                           \
    for (; k + 4 * V_WIDTH <= n; k += 4 * V_WIDTH) {                           \
        V x0_ = V_LOADU(x + k), x1_ = V_LOADU(x + k + V_WIDTH);                \
        V x2_ = V_LOADU(x + k + 2 * V_WIDTH), x3_ = V_LOADU(x + k + 3 * V_WIDTH); \
        V n0_, n1_, n2_, n3_;                                                  \
        V y0_ = vk_sin_small(x0_, &n0_), y1_ = vk_sin_small(x1_, &n1_);        \
        V y2_ = vk_sin_small(x2_, &n2_), y3_ = vk_sin_small(x3_, &n3_);        \
        if (!V_ALL_LT(V_MAX(V_MAX(n0_, n1_), V_MAX(n2_, n3_)), V_SET1(VK_SIN_N_MAX))) { \
            y0_ = vk_sin_fix(x0_, n0_, y0_), y1_ = vk_sin_fix(x1_, n1_, y1_);  \
            y2_ = vk_sin_fix(x2_, n2_, y2_), y3_ = vk_sin_fix(x3_, n3_, y3_);  \
        }                                                                      \
        STORE(o + k, y0_);                                                     \
        STORE(o + k + V_WIDTH, y1_);                                           \
        STORE(o + k + 2 * V_WIDTH, y2_);                                       \
        STORE(o + k + 3 * V_WIDTH, y3_);                                       \
    }                                                                          \
    for (; k + V_WIDTH <= n; k += V_WIDTH)                                     \
        STORE(o + k, FULL(F, k))

static inline V vk_sigmoid(V x)
{
    return V_DIV(V_SET1(1.0f), V_ADD(V_SET1(1.0f), vk_exp_any(V_SUB(V_SET1(0.0f), x))));
}

/* x sigmoid(x), as the scalar formula x / (1 + exp(-x)). */
static inline V vk_silu(V x)
{
    return V_DIV(x, V_ADD(V_SET1(1.0f), vk_exp_any(V_SUB(V_SET1(0.0f), x))));
}

/* o[i] = f(x[i]) for TT_VEC_* op f; false for an op without a kernel.
 * One loop per kernel (not one loop around a switch), so each keeps its
 * constants in registers and its iterations overlap. */
static inline bool vk_unary(int op, float *o, const float *x, int64_t n)
{
    bool stream = (op & TT_VEC_STREAM) != 0;
    switch (op & ~TT_VEC_STREAM) {
#define PW_VEC(fn) VK_UNARY_LOOP(fn)
#define PW_VEC_STEPS(fn, step4) VK_LOOP_STEPS(fn, VK_UNARY_AT, VK_UNARY_FULL, step4)
#define PW_NOVEC return false
#define VK_CASE(K, ROW, F32, F64, VEC) case TT_VEC_##K: VEC;
    TT_POINTWISE_UNARY(VK_CASE)
#undef VK_CASE
#undef PW_VEC
#undef PW_VEC_STEPS
#undef PW_NOVEC
    default: return false;
    }
}

/* o[i] = f(a[i], b[i]) for TT_VEC2_* op f, as vk_unary. */
static inline bool vk_binary(int op, float *o, const float *a, const float *b, int64_t n)
{
    bool stream = (op & TT_VEC_STREAM) != 0;
    switch (op & ~TT_VEC_STREAM) {
    case TT_VEC2_GELU_BACKWARD: VK_BINARY_LOOP(vk_gelu_backward);
    case TT_VEC2_GELU_TANH_BACKWARD: VK_BINARY_LOOP(vk_gelu_tanh_backward);
    case TT_VEC2_ADD: VK_BINARY_LOOP(vk_add);
    default: return false;
    }
}
