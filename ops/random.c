/* Built-in ops: random sampling (bernoulli, bernoulli.p, uniform_,
 * normal_, randint, randint.low, randperm, multinomial).
 *
 * tt has no Generator objects: every op draws from the global generator
 * (tt_manual_seed), so PyTorch's `Generator? generator` arguments are
 * left out of the schemas. The draws are counter-based
 * (tt__random_raw): each call reserves fresh counters, so a compiled step
 * that replays the op draws anew per call, the same values eager code
 * draws in the same order; and an elementwise op draws one value per
 * element in the tensor's logical (row-major) order whatever its layout,
 * so a transposed input gives the transposed result of a contiguous one.
 * Values are not PyTorch's streams (another generator); the
 * distributions are. All rows are tagged nondeterministic_seeded. */
#include "ops_impl.h"

#include <float.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool fake_t(const tt_tensor *t) { return t && t->storage->fake; }

static bool is_float(tt_dtype dt) { return dt == TT_F32 || dt == TT_F64; }

/* f64 uniforms in [0, 1) (or standard normals) of the given sizes, one
 * per element in row-major order; reserves numel counters (2 * numel for
 * normals, drawn here by Box-Muller from two uniforms so the counters of
 * a later call never repeat this one's). */
static tt_tensor *draws(int ndim, const tt_size *sizes, bool normal);

typedef struct {
    double *p;
    const double *u;
} bm_ctx;

static void box_muller(int64_t b, int64_t e, void *vc)
{
    const bm_ctx *c = vc;
    for (int64_t i = b; i < e; i++) {
        double u1 = c->u[2 * i], u2 = c->u[2 * i + 1];
        c->p[i] = sqrt(-2.0 * log(1.0 - u1)) * cos(6.283185307179586 * u2);
    }
}

static tt_tensor *draws(int ndim, const tt_size *sizes, bool normal)
{
    if (!normal)
        return tt__random_raw(ndim, sizes, TT_F64, false);
    tt_tensor *z = tt__empty_impl(ndim, sizes, NULL, TT_F64, false);
    if (!z)
        return NULL;
    int64_t n = tt_numel(z), n2 = 2 * n;
    tt_tensor *u = tt__random_raw(1, &n2, TT_F64, false);
    if (!u)
        return tt_release(z);
    bm_ctx c = {(double *)tt__ptr(z), (const double *)tt__ptr(u)};
    tt_parallel_for(n, 1 << 15, box_muller, &c);
    tt_release(u);
    return z;
}

/* Stores 0 or 1 in any dtype. */
static inline void store01(char *p, tt_dtype dt, bool one)
{
    switch (dt) {
    case TT_BOOL: *(bool *)p = one; break;
    case TT_U8: *(uint8_t *)p = one; break;
    case TT_I32: *(int32_t *)p = one; break;
    case TT_I64: *(int64_t *)p = one; break;
    case TT_F32: *(float *)p = one; break;
    default: *(double *)p = one; break;
    }
}

/* ---------------------------------------------------------------- bernoulli */

typedef struct {
    tt_dtype dt;
    double p; /* bernoulli.p's probability */
    atomic_int bad;
} bern_k;

/* Operands: out, self (probabilities), u. */
static void bern_tensor_loop(char **d, const int64_t *st, int64_t n, void *vk)
{
    bern_k *k = vk;
    for (int64_t i = 0; i < n; i++) {
        double p = k->dt == TT_F32 ? *(const float *)(d[1] + i * st[1])
                                   : *(const double *)(d[1] + i * st[1]);
        if (!(p >= 0 && p <= 1))
            atomic_store_explicit(&k->bad, 1, memory_order_relaxed);
        store01(d[0] + i * st[0], k->dt, *(const double *)(d[2] + i * st[2]) < p);
    }
}

/* Operands: out, u. */
static void bern_p_loop(char **d, const int64_t *st, int64_t n, void *vk)
{
    bern_k *k = vk;
    for (int64_t i = 0; i < n; i++)
        store01(d[0] + i * st[0], k->dt, *(const double *)(d[1] + i * st[1]) < k->p);
}

/* bernoulli(self) (p_tensor: self holds the probabilities, floats only)
 * or bernoulli.p(self, p) (any dtype: self gives only the shape, layout
 * and dtype). The result is contiguous, as PyTorch's (its bernoulli
 * allocates with LEGACY_CONTIGUOUS_MEMORY_FORMAT), whatever self's layout. */
static tt_tensor *bernoulli_impl(const tt_tensor *x, bool p_tensor, double p, bool fake)
{
    tt_builtin_id id = p_tensor ? TT_OP_BERNOULLI : TT_OP_BERNOULLI_P;
    const char *op = tt__op_label(id);
    tt_dtype dt = tt_dtype_of(x);
    if (p_tensor && !is_float(dt)) {
        tt_error(TT_EDTYPE, "%s: argument 'self' (#1): expected probabilities of dtype f32 "
                            "or f64, got %s",
                 op, tt_dtype_name(dt));
        return NULL;
    }
    if (!p_tensor && !(p >= 0 && p <= 1)) {
        tt_error(TT_EINVAL, "%s: argument 'p' (#2): expected a probability in [0, 1], got %g",
                 op, p);
        return NULL;
    }
    fake = fake || fake_t(x);
    tt_tensor *out = tt__ops_new(fake, tt_ndim(x), tt_sizes(x), NULL, dt);
    if (!out || fake)
        return out;
    tt_tensor *u = draws(tt_ndim(x), tt_sizes(x), false);
    if (!u)
        return tt_release(out);
    bern_k k = {.dt = dt, .p = p};
    tt_status st = p_tensor ? tt_for_each(3, (tt_tensor *[]){out, (tt_tensor *)x, u},
                                          bern_tensor_loop, &k)
                            : tt_for_each(2, (tt_tensor *[]){out, u}, bern_p_loop, &k);
    tt_release(u);
    if (!st && atomic_load(&k.bad)) {
        tt_error(TT_EINVAL, "%s: argument 'self' (#1): expected every probability in [0, 1], "
                            "found one outside (or NaN)",
                 op);
        st = TT_EINVAL;
    }
    return st ? tt_release(out) : out;
}

/* tt::bernoulli(Tensor self) -> Tensor */
static tt_status bernoulli_kernel(tt_frame *f)
{
    tt_tensor *x;
    tt_status st = tt_arg_tensor(f, 0, &x);
    if (st)
        return st;
    tt_tensor *out = bernoulli_impl(x, true, 0, tt_frame_is_fake(f));
    return out ? tt_return(f, 0, out) : tt_errcode();
}

/* tt::bernoulli.p(Tensor self, float p) -> Tensor */
static tt_status bernoulli_p_kernel(tt_frame *f)
{
    tt_tensor *x;
    double p;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &x)) || (st = tt_arg_float(f, 1, &p)))
        return st;
    tt_tensor *out = bernoulli_impl(x, false, p, tt_frame_is_fake(f));
    return out ? tt_return(f, 0, out) : tt_errcode();
}

/* ---------------------------------------------------- uniform_, normal_ */

typedef struct {
    double a, b;   /* uniform: from, to - from; normal: mean, std */
    double top;    /* uniform: the largest value below `to` in the dtype */
    bool clip;     /* uniform with from < to: keep results below `to` */
} fill_k;

/* Operands: self, r (f64 draws). */
#define FILL_LOOP(T)                                                           \
    static void fill_loop_##T(char **d, const int64_t *st, int64_t n, void *vk) \
    {                                                                          \
        const fill_k *k = vk;                                                  \
        for (int64_t i = 0; i < n; i++) {                                      \
            T v = (T)(k->a + k->b * *(const double *)(d[1] + i * st[1]));      \
            if (k->clip && v > (T)k->top)                                      \
                v = (T)k->top; /* rounding may reach `to` */                   \
            *(T *)(d[0] + i * st[0]) = v;                                      \
        }                                                                      \
    }
FILL_LOOP(float)
FILL_LOOP(double)

/* uniform_(self, from, to) or normal_(self, mean, std), in place. */
static tt_status fill_random(tt_tensor *self, bool normal, double a, double b, bool fake)
{
    tt_builtin_id id = normal ? TT_OP_NORMAL_ : TT_OP_UNIFORM_;
    const char *op = tt__op_label(id);
    tt_dtype dt = tt_dtype_of(self);
    if (!is_float(dt))
        return tt_error(TT_EDTYPE, "%s: argument 'self' (#1): expected f32 or f64, got %s", op,
                        tt_dtype_name(dt));
    double max = dt == TT_F32 ? FLT_MAX : DBL_MAX;
    fill_k k = {.a = a};
    if (normal) {
        if (!(b >= 0))
            return tt_error(TT_EINVAL, "%s: argument 'std' (#3): expected std >= 0, got %g", op,
                            b);
        if (!isfinite(a) || !isfinite(b))
            return tt_error(TT_EINVAL, "%s: expected a finite 'mean' and 'std', got mean=%g, "
                                       "std=%g",
                            op, a, b);
        k.b = b;
    } else {
        if (!(fabs(a) <= max))
            return tt_error(TT_EINVAL, "%s: argument 'from' (#2): %g is out of bounds for %s",
                            op, a, tt_dtype_name(dt));
        if (!(fabs(b) <= max))
            return tt_error(TT_EINVAL, "%s: argument 'to' (#3): %g is out of bounds for %s", op,
                            b, tt_dtype_name(dt));
        if (a > b)
            return tt_error(TT_EINVAL, "%s: expected from <= to (a [from, to) range), got "
                                       "from=%g > to=%g",
                            op, a, b);
        if (!(b - a <= max))
            return tt_error(TT_EINVAL, "%s: to - from = %g is out of bounds for %s", op, b - a,
                            tt_dtype_name(dt));
        k.b = b - a;
        k.clip = a < b;
        k.top = dt == TT_F32 ? (double)nextafterf((float)b, -INFINITY) : nextafter(b, -INFINITY);
        if (k.top < a)
            k.top = a;
    }
    if (fake || fake_t(self))
        return TT_OK;
    tt_status st = tt__check_write(op, self, NULL);
    if (st)
        return st;
    tt_tensor *r = draws(tt_ndim(self), tt_sizes(self), normal);
    if (!r)
        return tt_errcode();
    st = tt_for_each(2, (tt_tensor *[]){self, r}, dt == TT_F32 ? fill_loop_float : fill_loop_double,
                     &k);
    tt_release(r);
    return st;
}

/* tt::uniform_(Tensor(a!) self, float from=0., float to=1.) and
 * tt::normal_(Tensor(a!) self, float mean=0., float std=1.) */
static tt_status fill_kernel(tt_frame *f)
{
    tt_tensor *self;
    double a, b;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &self)) || (st = tt_arg_float(f, 1, &a)) ||
        (st = tt_arg_float(f, 2, &b)))
        return st;
    bool normal = (intptr_t)tt_frame_userdata(f) == 1;
    if ((st = fill_random(self, normal, a, b, tt_frame_is_fake(f))))
        return st;
    return tt_return_self(f, 0, 0);
}

/* The result does not depend on self's old values: no gradient flows to
 * them (PyTorch's zeros_like(grad)). */
static tt_status fill_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng, tt_tensor **gi,
                               int ni)
{
    (void)ctx, (void)g, (void)ng, (void)gi, (void)ni;
    return TT_OK;
}

/* ---------------------------------------------------------------- randint */

/* The integers a dtype holds exactly: [lo, hi]. */
static void dtype_int_range(tt_dtype dt, double *lo, double *hi)
{
    switch (dt) {
    case TT_BOOL: *lo = 0, *hi = 1; break;
    case TT_U8: *lo = 0, *hi = 255; break;
    case TT_I32: *lo = INT32_MIN, *hi = INT32_MAX; break;
    case TT_F32: *lo = -16777216.0, *hi = 16777216.0; break;       /* 2^24 */
    case TT_F64: *lo = -9007199254740992.0, *hi = 9007199254740992.0; /* 2^53 */ break;
    default: *lo = (double)INT64_MIN, *hi = (double)INT64_MAX; break;
    }
}

typedef struct {
    char *p;
    const double *u;
    tt_dtype dt;
    int64_t low;
    uint64_t range; /* high - low */
} randint_ctx;

static void randint_chunk(int64_t b, int64_t e, void *vc)
{
    const randint_ctx *c = vc;
    size_t es = tt_dtype_size(c->dt);
    for (int64_t i = b; i < e; i++) {
        uint64_t off = (uint64_t)(c->u[i] * (double)c->range);
        if (off >= c->range) /* u * range may round up to range */
            off = c->range - 1;
        int64_t v = (int64_t)((uint64_t)c->low + off);
        char *p = c->p + (size_t)i * es;
        switch (c->dt) {
        case TT_BOOL: *(bool *)p = v != 0; break;
        case TT_U8: *(uint8_t *)p = (uint8_t)v; break;
        case TT_I32: *(int32_t *)p = (int32_t)v; break;
        case TT_I64: *(int64_t *)p = v; break;
        case TT_F32: *(float *)p = (float)v; break;
        default: *(double *)p = (double)v; break;
        }
    }
}

/* randint(low, high, size, dtype): uniform integers in [low, high). */
static tt_tensor *randint_impl(tt_builtin_id id, int64_t low, int64_t high, int n,
                               const tt_size *sizes, tt_dtype dt, bool fake)
{
    const char *op = tt__op_label(id);
    int harg = id == TT_OP_RANDINT ? 1 : 2;
    if (low >= high) {
        tt_error(TT_EINVAL, "%s: argument 'high' (#%d): expected low < high, got low=%lld >= "
                            "high=%lld",
                 op, harg, (long long)low, (long long)high);
        return NULL;
    }
    double lo, hi;
    dtype_int_range(dt, &lo, &hi);
    if ((double)low < lo || (double)(high - 1) > hi) {
        tt_error(TT_EINVAL, "%s: the range [%lld, %lld) is out of bounds for dtype %s", op,
                 (long long)low, (long long)high, tt_dtype_name(dt));
        return NULL;
    }
    tt_tensor *out = tt__empty_named(op, n, sizes, NULL, dt, fake);
    if (!out || fake)
        return out;
    tt_tensor *u = draws(n, sizes, false);
    if (!u)
        return tt_release(out);
    randint_ctx c = {tt__ptr(out), (const double *)tt__ptr(u), dt, low, (uint64_t)high - (uint64_t)low};
    tt_parallel_for(tt_numel(out), 1 << 15, randint_chunk, &c);
    tt_release(u);
    return out;
}

/* The dtype argument: None is i64 here (the schemas' default is long). */
static tt_status int_dtype_arg(tt_frame *f, int i, tt_dtype *dt)
{
    bool none = true;
    tt_status st = tt_arg_dtype(f, i, dt, &none);
    if (!st && none)
        *dt = TT_I64;
    return st;
}

/* tt::randint(int high, SymInt[] size, *, ScalarType? dtype=long) and
 * tt::randint.low(int low, int high, SymInt[] size, *, ScalarType? dtype=long) */
static tt_status randint_kernel(tt_frame *f)
{
    bool has_low = (intptr_t)tt_frame_userdata(f) == 1;
    int64_t low = 0, high;
    const int64_t *sz;
    int n;
    tt_dtype dt;
    tt_status st;
    int k = has_low ? 1 : 0;
    if ((has_low && (st = tt_arg_int(f, 0, &low))) || (st = tt_arg_int(f, k, &high)) ||
        (st = tt_arg_ints(f, k + 1, &sz, &n)) || (st = int_dtype_arg(f, k + 2, &dt)))
        return st;
    tt_tensor *out = randint_impl(has_low ? TT_OP_RANDINT_LOW : TT_OP_RANDINT, low, high, n, sz,
                                  dt, tt_frame_is_fake(f));
    return out ? tt_return(f, 0, out) : tt_errcode();
}

/* ---------------------------------------------------------------- randperm */

/* randperm(n, dtype): a uniformly random permutation of 0..n-1, by
 * Fisher-Yates over n draws (linear time, as PyTorch's CPU kernel). */
static tt_tensor *randperm_impl(tt_size n, tt_dtype dt, bool fake)
{
    const char *op = tt__op_label(TT_OP_RANDPERM);
    if (!tt_size_is_sym(n) && n < 0) {
        tt_error(TT_EINVAL, "%s: argument 'n' (#1): expected n >= 0, got %lld", op,
                 (long long)n);
        return NULL;
    }
    if (dt == TT_BOOL) {
        tt_error(TT_EDTYPE, "%s: argument 'dtype': not implemented for bool", op);
        return NULL;
    }
    double lo, hi;
    dtype_int_range(dt, &lo, &hi);
    if (!tt_size_is_sym(n) && n > 0 && (double)(n - 1) > hi) {
        tt_error(TT_EINVAL, "%s: argument 'n' (#1): %lld values do not fit dtype %s (at most "
                            "%.17g)",
                 op, (long long)n, tt_dtype_name(dt), hi + 1);
        return NULL;
    }
    tt_tensor *out = tt__empty_named(op, 1, &n, NULL, dt, fake);
    if (!out || fake)
        return out;
    tt_tensor *u = draws(1, &n, false);
    int64_t *perm = dt == TT_I64 ? (int64_t *)tt__ptr(out) : malloc((size_t)(n ? n : 1) * sizeof *perm);
    if (!u || !perm) {
        if (u && !perm)
            tt_error(TT_ENOMEM, "%s: out of memory for %lld indices", op, (long long)n);
        if (perm && dt != TT_I64)
            free(perm);
        tt_release(u);
        return tt_release(out);
    }
    const double *ud = (const double *)tt__ptr(u);
    for (int64_t i = 0; i < n; i++)
        perm[i] = i;
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)(ud[i] * (double)(i + 1));
        if (j > i)
            j = i;
        int64_t t = perm[i];
        perm[i] = perm[j], perm[j] = t;
    }
    if (dt != TT_I64) {
        char *p = tt__ptr(out);
        size_t es = tt_dtype_size(dt);
        for (int64_t i = 0; i < n; i++)
            tt__store(p + (size_t)i * es, dt, (double)perm[i]);
        free(perm);
    }
    tt_release(u);
    return out;
}

/* tt::randperm(SymInt n, *, ScalarType? dtype=long) */
static tt_status randperm_kernel(tt_frame *f)
{
    int64_t n;
    tt_dtype dt;
    tt_status st;
    if ((st = tt_arg_int(f, 0, &n)) || (st = int_dtype_arg(f, 1, &dt)))
        return st;
    tt_tensor *out = randperm_impl(n, dt, tt_frame_is_fake(f));
    return out ? tt_return(f, 0, out) : tt_errcode();
}

/* ------------------------------------------------------------- multinomial */

typedef struct {
    const double *p; /* [rows, n] probabilities, contiguous f64 */
    const double *u; /* [rows, draws_per_row] uniforms */
    int64_t *out;    /* [rows, k] */
    int64_t n, k, per_row;
    bool replacement;
    atomic_int bad; /* 1: a bad element, 2: a row summing to 0; first row + 1 in bad_row */
    atomic_llong bad_row;
} mn_ctx;

typedef struct {
    double key;
    int64_t i;
} mn_key;

static int mn_key_cmp(const void *a, const void *b)
{
    const mn_key *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

static void mn_fail(mn_ctx *c, int why, int64_t row)
{
    int expected = 0;
    if (atomic_compare_exchange_strong(&c->bad, &expected, why))
        atomic_store(&c->bad_row, (long long)row);
}

/* Rows b..e: with replacement, each sample inverts the row's cumulative
 * sums at a uniform (binary search); without, the exponential race: row
 * element i gets key E_i / p_i with E_i ~ Exp(1), and the k smallest keys
 * in increasing order are the categories drawn one after another without
 * replacement (the first to "arrive" is drawn with probability p_i / sum,
 * the next among the rest likewise). Zero-probability categories come
 * last (key +inf), as PyTorch also draws them once the others run out. */
static void mn_rows(int64_t b, int64_t e, void *vc)
{
    mn_ctx *c = vc;
    double *cum = NULL;
    mn_key *keys = NULL;
    size_t n = (size_t)(c->n ? c->n : 1); /* malloc(0) may be NULL */
    if (c->replacement)
        cum = malloc(n * sizeof *cum);
    else
        keys = malloc(n * sizeof *keys);
    if (!cum && !keys) {
        mn_fail(c, 3, b);
        return;
    }
    for (int64_t r = b; r < e; r++) {
        const double *p = c->p + r * c->n;
        const double *u = c->u + r * c->per_row;
        int64_t *o = c->out + r * c->k;
        double sum = 0;
        for (int64_t i = 0; i < c->n; i++) {
            if (!(p[i] >= 0 && p[i] < INFINITY)) {
                mn_fail(c, 1, r);
                goto done;
            }
            sum += p[i];
            if (cum)
                cum[i] = sum;
        }
        if (!(sum > 0)) {
            mn_fail(c, 2, r);
            goto done;
        }
        if (c->replacement) {
            for (int64_t s = 0; s < c->k; s++) {
                double t = u[s] * sum;
                /* The first i with cum[i] > t; never a zero-probability
                 * category (its cum equals the one before it). */
                int64_t lo = 0, hi = c->n - 1;
                while (lo < hi) {
                    int64_t mid = lo + (hi - lo) / 2;
                    if (cum[mid] > t)
                        hi = mid;
                    else
                        lo = mid + 1;
                }
                while (lo > 0 && p[lo] == 0) /* t rounded up to the total */
                    lo--;
                o[s] = lo;
            }
        } else {
            for (int64_t i = 0; i < c->n; i++) {
                double ex = -log1p(-u[i]); /* Exp(1); u < 1 */
                keys[i].key = p[i] > 0 ? ex / p[i] : INFINITY;
                keys[i].i = i;
            }
            qsort(keys, (size_t)c->n, sizeof *keys, mn_key_cmp);
            for (int64_t s = 0; s < c->k; s++)
                o[s] = keys[s].i;
        }
    }
done:
    free(cum);
    free(keys);
}

/* multinomial(self, num_samples, replacement): i64 [num_samples] for a
 * 1-d self, [rows, num_samples] for a 2-d one. */
static tt_tensor *multinomial_impl(const tt_tensor *x, int64_t k, bool replacement, bool fake)
{
    const char *op = tt__op_label(TT_OP_MULTINOMIAL);
    int nd = tt_ndim(x);
    if (nd != 1 && nd != 2) {
        tt_error(TT_ESHAPE, "%s: argument 'self' (#1): expected 1 or 2 dims (probabilities), "
                            "got %d",
                 op, nd);
        return NULL;
    }
    if (!is_float(tt_dtype_of(x))) {
        tt_error(TT_EDTYPE, "%s: argument 'self' (#1): expected f32 or f64 probabilities, got "
                            "%s",
                 op, tt_dtype_name(tt_dtype_of(x)));
        return NULL;
    }
    if (k <= 0) {
        tt_error(TT_EINVAL, "%s: argument 'num_samples' (#2): expected a positive number of "
                            "samples, got %lld",
                 op, (long long)k);
        return NULL;
    }
    tt_size ncat = tt_sizes(x)[nd - 1];
    if (!replacement && !tt_size_is_sym(ncat) && k > ncat) {
        tt_error(TT_EINVAL, "%s: argument 'num_samples' (#2): cannot draw %lld samples without "
                            "replacement from %lld categories",
                 op, (long long)k, (long long)ncat);
        return NULL;
    }
    fake = fake || fake_t(x);
    tt_size osz[2] = {nd == 2 ? tt_sizes(x)[0] : k, k};
    tt_tensor *out = tt__ops_new(fake, nd, osz, NULL, TT_I64);
    if (!out || fake)
        return out;
    int64_t rows = nd == 2 ? tt_sizes(x)[0] : 1;
    if (rows == 0)
        return out;
    tt_tensor *p = tt__to_dtype_raw(x, TT_F64); /* a contiguous f64 copy */
    if (p && !tt_is_contiguous(p)) {
        tt_tensor *pc = tt__contiguous_raw(p);
        tt_release(p);
        p = pc;
    }
    int64_t per_row = replacement ? k : ncat;
    tt_size usz[2] = {rows, per_row};
    tt_tensor *u = p ? draws(2, usz, false) : NULL;
    if (!u) {
        tt_release(p);
        return tt_release(out);
    }
    mn_ctx c = {.p = (const double *)tt__ptr(p), .u = (const double *)tt__ptr(u),
                .out = (int64_t *)tt__ptr(out), .n = ncat, .k = k,
                .per_row = per_row, .replacement = replacement};
    int64_t grain = ncat * (replacement ? 1 : 8) > 4096 ? 1 : 4096 / (ncat + 1) + 1;
    tt_parallel_for(rows, grain, mn_rows, &c);
    tt_release(p);
    tt_release(u);
    int why = atomic_load(&c.bad);
    if (why) {
        long long r = atomic_load(&c.bad_row);
        char where[48] = "";
        if (nd == 2)
            snprintf(where, sizeof where, " (row %lld)", r);
        if (why == 1)
            tt_error(TT_EINVAL, "%s: argument 'self' (#1): the probabilities%s contain inf, NaN "
                                "or an element < 0",
                     op, where);
        else if (why == 2)
            tt_error(TT_EINVAL, "%s: argument 'self' (#1): invalid distribution%s: the "
                                "probabilities sum to 0",
                     op, where);
        else
            tt_error(TT_ENOMEM, "%s: out of memory for a row of %lld categories", op,
                     (long long)ncat);
        return tt_release(out);
    }
    return out;
}

/* tt::multinomial(Tensor self, int num_samples, bool replacement=False) */
static tt_status multinomial_kernel(tt_frame *f)
{
    tt_tensor *x;
    int64_t k;
    bool repl;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &x)) || (st = tt_arg_int(f, 1, &k)) ||
        (st = tt_arg_bool(f, 2, &repl)))
        return st;
    tt_tensor *out = multinomial_impl(x, k, repl, tt_frame_is_fake(f));
    return out ? tt_return(f, 0, out) : tt_errcode();
}

#undef TT__FAMILY_RANDOM
#define TT__FAMILY_RANDOM TT__ROW
static const tt__builtin_row rows[] = {TT__FAMILY_ROWS};

tt_status tt__register_random(tt_library *lib)
{
    return TT__DEFINE_ROWS(lib, rows);
}

/* ---------------------------------------------------------- typed wrappers */

tt_tensor *tt_bernoulli(const tt_tensor *self)
{
    if (self && tt__fast_path(TT_OP_BERNOULLI, 1, &self))
        return bernoulli_impl(self, true, 0, false);
    return tt__call_op(TT_OP_BERNOULLI, TT_ARGS(tt_v_tensor(self)));
}

tt_tensor *tt_bernoulli_p(const tt_tensor *self, double p)
{
    if (self && tt__fast_path(TT_OP_BERNOULLI_P, 1, &self))
        return bernoulli_impl(self, false, p, false);
    return tt__call_op(TT_OP_BERNOULLI_P, TT_ARGS(tt_v_tensor(self), tt_v_float(p)));
}

static tt_status fill_wrapper(tt_builtin_id id, tt_tensor *self, double a, double b)
{
    if (self && tt__fast_path(id, 1, (const tt_tensor *[]){self})) {
        tt_status st = fill_random(self, id == TT_OP_NORMAL_, a, b, false);
        if (!st)
            tt_bump_version(self);
        return st;
    }
    return tt__call_op_status(id, TT_ARGS(tt_v_tensor(self), tt_v_float(a), tt_v_float(b)));
}

tt_status tt_uniform_(tt_tensor *self, double from, double to)
{
    return fill_wrapper(TT_OP_UNIFORM_, self, from, to);
}

tt_status tt_normal_(tt_tensor *self, double mean, double std)
{
    return fill_wrapper(TT_OP_NORMAL_, self, mean, std);
}

tt_tensor *tt_randint(int64_t low, int64_t high, int ndim, const int64_t *sizes, tt_dtype dtype)
{
    if (tt__fast_path(TT_OP_RANDINT_LOW, 0, NULL))
        return randint_impl(TT_OP_RANDINT_LOW, low, high, ndim, sizes, dtype, false);
    return tt__call_op(TT_OP_RANDINT_LOW, TT_ARGS(tt_v_int(low), tt_v_int(high),
                                                  tt_v_ints(ndim, sizes), tt_v_dtype(dtype)));
}

tt_tensor *tt_randperm(int64_t n, tt_dtype dtype)
{
    if (tt__fast_path(TT_OP_RANDPERM, 0, NULL))
        return randperm_impl(n, dtype, false);
    return tt__call_op(TT_OP_RANDPERM, TT_ARGS(tt_v_int(n), tt_v_dtype(dtype)));
}

tt_tensor *tt_multinomial(const tt_tensor *self, int64_t num_samples, bool replacement)
{
    if (self && tt__fast_path(TT_OP_MULTINOMIAL, 1, &self))
        return multinomial_impl(self, num_samples, replacement, false);
    return tt__call_op(TT_OP_MULTINOMIAL, TT_ARGS(tt_v_tensor(self), tt_v_int(num_samples),
                                                  tt_v_bool(replacement)));
}
