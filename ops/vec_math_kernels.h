/* Internal: tanh, gelu, gelu(approximate="tanh") and gelu's derivatives
 * written once over a vector type, for vec_math.c (AVX2, 8 lanes) and vec_math_avx512.c
 * (AVX-512F, 16 lanes). The includer defines V (the vector type) and the
 * operations below; everything here inlines into its loop.
 *
 * Why not SLEEF for these three: its tanhf and erff are accurate to 1 ULP
 * but cost 4-6x an exp (a call each, long polynomials and range splits),
 * so tanh and gelu ran at a fifth of the memory bandwidth the other
 * elementwise ops reach. Here they are built on one short inline exp,
 * with no division (a reciprocal estimate refined once instead):
 *
 *   exp(x)   Cody-Waite reduction x = n ln2 + r, |r| <= ln2/2, then
 *            e^r - 1 by its Taylor series to r^7 (truncation < 1e-9
 *            relative) and 2^n put in the exponent: about 1 ULP.
 *   tanh(x)  odd, so on a = |x|: -m / (2 + m) with m = e^(-2a) - 1
 *            from an expm1 that does not cancel near 0: within 4 ULP.
 *   gelu(x)  x Phi(x) with Phi from erfc(|x|/sqrt2) by Abramowitz and
 *            Stegun 7.1.26 (absolute error <= 1.5e-7), the approximation
 *            PyTorch's own vectorized CPU erf uses; for x < 0, Phi is
 *            erfc/2 itself rather than 1 - (1 - erfc)/2, which loses
 *            nothing to cancellation.
 *   gelu_tanh(x) = 0.5 x (1 + tanh(u)) = x / (1 + e^(-2u)),
 *            u = sqrt(2/pi) (x + 0.044715 x^3).
 *
 * The includer provides:
 *   V_SET1(c) V_ADD(a,b) V_SUB(a,b) V_MUL(a,b) V_DIV(a,b)
 *   V_FMA(a,b,c) = a*b + c    V_ABS(a)    V_MIN(a,b) V_MAX(a,b)
 *   V_RCP(a)     the CPU's estimate of 1/a (12 bits or better)
 *   V_ROUND(a)   float rounded to the nearest integer (as float)
 *   V_POW2(n)    2^n for integral float n in [-126, 127]
 *   V_SIGN(x)    x's sign bit alone;  V_OR(a,b) bitwise or
 *   V_LT_SEL(a, b, x, y)  lanes where a < b take x, the others y
 *   V_NAN_SEL(x, y)       lanes where x is NaN take x, the others y */

/* e^r - 1 by its series to r^7 for |r| <= ln2/2 (truncation below 1e-9
 * relative), after the Cody-Waite reduction x = n ln2 + r (ln2's high
 * part has trailing zeros, so n ln2_hi is exact); *s receives 2^n. */
static inline V vk_exp_parts(V x, V *s)
{
    V n = V_ROUND(V_MUL(x, V_SET1(1.44269504088896341f)));
    V r = V_FMA(n, V_SET1(-0.693145751953125f), x);
    r = V_FMA(n, V_SET1(-1.428606765330187045e-06f), r);
    V p = V_SET1(1.0f / 5040);
    p = V_FMA(p, r, V_SET1(1.0f / 720));
    p = V_FMA(p, r, V_SET1(1.0f / 120));
    p = V_FMA(p, r, V_SET1(1.0f / 24));
    p = V_FMA(p, r, V_SET1(1.0f / 6));
    p = V_FMA(p, r, V_SET1(0.5f));
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

/* e^x - 1 for x in [-87, 0], with no cancellation near 0: 2^n (e^r - 1) +
 * (2^n - 1); for n = 0 that is the series itself, for n <= -1 the two
 * terms cannot cancel (the result is below -0.29). */
static inline V vk_expm1(V x)
{
    V s, q = vk_exp_parts(x, &s);
    return V_FMA(s, q, V_SUB(s, V_SET1(1.0f)));
}

/* 1/d for d in [1, 2^64]: the CPU's estimate and one Newton step, within
 * an ULP of the quotient at a fraction of a division's cost. */
static inline V vk_recip(V d)
{
    V r = V_RCP(d);
    return V_MUL(r, V_FMA(V_SUB(V_SET1(0.0f), d), r, V_SET1(2.0f)));
}

static inline V vk_tanh(V x)
{
    V e = vk_expm1(V_MAX(V_MUL(V_ABS(x), V_SET1(-2.0f)), V_SET1(-87.0f)));
    V y = V_MUL(V_SUB(V_SET1(0.0f), e), vk_recip(V_ADD(V_SET1(2.0f), e)));
    return V_NAN_SEL(x, V_OR(y, V_SIGN(x)));
}

/* Phi(x), the normal distribution function, for gelu and its derivative;
 * *e_half_x2 receives e^(-x^2/2) (0 past |x| = 9.25 sqrt2), which the
 * derivative needs too. */
static inline V vk_phi(V x, V *e_half_x2)
{
    V a = V_MUL(V_ABS(x), V_SET1(0.70710678118654752440f));
    /* Past 9.25, erfc is below the smallest normal float: there Phi is 0
     * or 1. The clamp keeps e^(-a^2) inside vk_exp's range (-a^2 >= -87)
     * and 1/(1 + p a) finite at infinity; the select then makes it 0. */
    V ac = V_MIN(a, V_SET1(9.25f));
    V t = vk_recip(V_FMA(ac, V_SET1(0.3275911f), V_SET1(1.0f)));
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

/* A NaN x needs no select: x * Phi is NaN whatever Phi is. */
static inline V vk_gelu(V x)
{
    V e;
    return V_MUL(x, vk_phi(x, &e));
}

/* g * gelu'(x) = g (Phi(x) + x e^(-x^2/2) / sqrt(2 pi)). */
static inline V vk_gelu_backward(V g, V x)
{
    V e, phi = vk_phi(x, &e);
    V dy = V_FMA(V_MUL(x, V_SET1(0.39894228040143267794f)), e, phi);
    return V_NAN_SEL(x, V_MUL(g, dy));
}

/* g * d/dx [0.5 x (1 + tanh u)], u = sqrt(2/pi) (x + 0.044715 x^3):
 * 0.5 (1 + t) + 0.5 x (1 - t^2) u', t = tanh u. Both 1 + t and 1 - t^2
 * cancel in the tails, so they come from E = e^(-2|u|) instead:
 * 1 + t = 2/(1 + E) (u >= 0) or 2E/(1 + E) (u < 0), 1 - t^2 = 4E/(1 + E)^2. */
static inline V vk_gelu_tanh_backward(V g, V x)
{
    V x2 = V_MUL(x, x);
    V u = V_MUL(V_SET1(0.79788456080286535588f), V_FMA(V_MUL(V_SET1(0.044715f), x), x2, x));
    V du = V_MUL(V_SET1(0.79788456080286535588f), V_FMA(V_SET1(3 * 0.044715f), x2, V_SET1(1.0f)));
    V e = vk_exp(V_MAX(V_MUL(V_ABS(u), V_SET1(-2.0f)), V_SET1(-87.0f)));
    V r = vk_recip(V_ADD(V_SET1(1.0f), e));
    V one_plus_t = V_MUL(V_SET1(2.0f), V_LT_SEL(u, V_SET1(0.0f), V_MUL(e, r), r));
    V sech2 = V_MUL(V_MUL(V_SET1(4.0f), e), V_MUL(r, r));
    V dy = V_MUL(V_SET1(0.5f), V_FMA(V_MUL(x, sech2), du, one_plus_t));
    return V_NAN_SEL(x, V_MUL(g, dy));
}

static inline V vk_gelu_tanh(V x)
{
    V u = V_MUL(V_SET1(0.79788456080286535588f),
                V_FMA(V_MUL(V_SET1(0.044715f), x), V_MUL(x, x), x));
    V m = V_MUL(u, V_SET1(-2.0f));
    V e = vk_exp(V_MIN(V_MAX(m, V_SET1(-87.0f)), V_SET1(88.0f)));
    /* Past e^88 the result is x times a number below 1e-38: x * 0, which
     * keeps -inf * 0 = NaN as the formula gives. */
    V y = V_LT_SEL(V_SET1(88.0f), m, V_MUL(x, V_SET1(0.0f)),
                   V_DIV(x, V_ADD(V_SET1(1.0f), e)));
    return V_NAN_SEL(x, y);
}
