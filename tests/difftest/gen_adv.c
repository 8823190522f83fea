/* tt-difftest: advanced indexing and masks, the transformer ops, the
 * random ops (masked_fill ... multinomial) and pairwise distances (cdist,
 * pdist): their shape/dtype rules (PyTorch's), random arguments, calls
 * through the public wrappers and their printed C. gen.c's model(),
 * propose(), exec1() and print.c hand these ops here, as they hand issue
 * 27's to gen_index.c.
 *
 * Index tensors and masks are constants the program builds with
 * tt_from_data (the printed program holds their values), a function of
 * the instruction (adv_index_data, adv_mask_data), in range for the dim
 * they index. index_put without accumulate gets unique indices (PyTorch
 * leaves the winner of repeated ones open).
 *
 * nonzero and masked_select have data-dependent sizes (an unbacked
 * symbol in symbolic traces) that the model has no size for: the
 * instruction reduces them to a static shape in the same call (a sum
 * over the data-dependent dim, after a cumsum that makes the result
 * depend on the elements' order), so the data-dependent tensor is always
 * made and consumed inside a traced program.
 *
 * The random ops draw from the global generator, which the runner seeds
 * (tt_manual_seed) before every call, eager and compiled alike; the
 * library promises the same draws in a compiled step (tt_ops.h, "Sampling
 * ops"), so values are compared as any other op's. */
#include "dt_gen.h"

#include <math.h>
#include <string.h>


/* The data of an instruction's constants: g = a seed (a whole number). */
static uint64_t adv_seed(const dt_instr *in) { return (uint64_t)(isnan(in->g) ? 0 : in->g); }
static uint64_t hash(uint64_t s, int64_t e, int salt)
{
    uint64_t x = s * 7919 + (uint64_t)e * 104729 + (uint64_t)salt * 1299709 + 17;
    x ^= x >> 29;
    x *= 0x9e3779b97f4a7c15ull;
    return x ^ (x >> 32);
}
static int64_t numel_of(int nd, const int64_t *s)
{
    int64_t n = 1;
    for (int k = 0; k < nd; k++) n *= s[k];
    return n;
}

/* ------------------------------------------------------------ constants */

/* A constant mask: rank i[0] (<= self's), sizes i[1..], about half set. */
static int adv_mask_data(const dt_instr *in, int64_t *sizes, int64_t *vals)
{
    int nd = (int)in->i[0];
    for (int k = 0; k < nd; k++) sizes[k] = in->i[1 + k];
    int64_t n = numel_of(nd, sizes);
    for (int64_t e = 0; e < n; e++) vals[e] = (int64_t)(hash(adv_seed(in), e, 1) % 2);
    return nd;
}
/* sdpa_ext's mask: rank i[2], sizes i[3..]; bool with key 0 always seen
 * (a row with no key is NaN), or float (& 8) values 0, -1, 0.5. */
static int sdpa_mask_data(const dt_instr *in, int64_t *sizes, double *vals)
{
    int nd = (int)in->i[2];
    for (int k = 0; k < nd; k++) sizes[k] = in->i[3 + k];
    int64_t n = numel_of(nd, sizes), cols = sizes[nd - 1];
    for (int64_t e = 0; e < n; e++) {
        uint64_t h = hash(adv_seed(in), e, 6);
        vals[e] = in->mode & 8 ? (h % 3 == 0 ? 0 : h % 3 == 1 ? -1 : 0.5) : (e % cols == 0 || h % 3 != 0);
    }
    return nd;
}
static int64_t mask_count(const dt_instr *in)
{
    int64_t s[DT_MAX_ND], v[4096], c = 0;
    int nd = adv_mask_data(in, s, v);
    for (int64_t e = 0; e < numel_of(nd, s); e++) c += v[e];
    return c;
}

/* index / index_put: mode bits 0..4 the dims given an index (ni entries,
 * the others None), i[0] the indices' broadcast rank (1 or 2), i[1..2]
 * their broadcast shape, i[3] bit 2k + j: index k has size 1 on dim j
 * (broadcast), i[4] the dims' sizes (ix_range); mode & 0x80 negative
 * values too. */
static bool ix_present(const dt_instr *in, int k) { return (in->mode >> k) & 1; }
/* Index k's values are in [0, n) (or [-n, n)), n in 6 bits of i[4]: the
 * dim's size, 2 for the batch (B >= 2, and a constant cannot follow B). */
static int64_t ix_range(const dt_instr *in, int k) { return (in->i[4] >> (6 * k)) & 63; }
static int64_t ix_ranges(const dt_vtype *A, int n)
{
    int64_t x = 0;
    for (int k = 0; k < n; k++) x |= (A->s[k] == DT_B ? 2 : A->s[k] & 63) << (6 * k);
    return x;
}
static int adv_index_sizes(const dt_instr *in, int k, int64_t *sizes)
{
    int nd = (int)in->i[0];
    for (int j = 0; j < nd; j++) sizes[j] = (in->i[3] >> (2 * k + j)) & 1 ? 1 : in->i[1 + j];
    return nd;
}
/* put without accumulate: one 1-d index, values a rotation (unique). */
static bool put_unique(const dt_instr *in) { return in->op == OP_INDEX_PUT && !(in->mode & 0x20); }
static int adv_index_data(const dt_instr *in, int k, int64_t n, int64_t *sizes, int64_t *vals)
{
    int nd = adv_index_sizes(in, k, sizes);
    int64_t tot = numel_of(nd, sizes);
    for (int64_t e = 0; e < tot; e++) {
        int64_t v = put_unique(in) ? (int64_t)((adv_seed(in) + (uint64_t)e) % (uint64_t)n)
                                   : (int64_t)(hash(adv_seed(in), e, 2 + k) % (uint64_t)n);
        if ((in->mode & 0x80) && (hash(adv_seed(in), e, 9) & 1)) v -= n; /* the same position, negative */
        vals[e] = v;
    }
    return nd;
}

/* embedding_bag: i[1] indices into i[0] rows, i[2] bags; offsets start at
 * 0, non-decreasing (empty bags too); & 4 include_last_offset (a last
 * offset, the number of indices). */
static int64_t bag_indices(const dt_instr *in, int64_t *v)
{
    for (int64_t e = 0; e < in->i[1]; e++) v[e] = (int64_t)(hash(adv_seed(in), e, 3) % (uint64_t)in->i[0]);
    return in->i[1];
}
static int64_t bag_offsets(const dt_instr *in, int64_t *v)
{
    int64_t n = in->i[2];
    v[0] = 0;
    for (int64_t b = 1; b < n; b++) {
        int64_t step = (int64_t)(hash(adv_seed(in), b, 4) % 3);
        v[b] = v[b - 1] + step > in->i[1] ? in->i[1] : v[b - 1] + step;
    }
    if (in->mode & 4) v[n++] = in->i[1];
    return n;
}
static int64_t bag_weights(const dt_instr *in, double *w)
{
    for (int64_t e = 0; e < in->i[1]; e++) w[e] = (double)((int64_t)(hash(adv_seed(in), e, 5) % 9) - 4) / 4;
    return in->i[1];
}

/* ------------------------------------------------------------ rules */

/* gen.c's in-place rule (as index_copy_'s): a writable target that no
 * gradient reads, whose write lands in every alias of its storage. */
static bool inplace_ok(const dt_program *p, const dt_vtype *T, const dt_vtype *A, const dt_vtype *B)
{
    bool grad = p->grad != 0;
    if (!A->writable || A->rg || (grad && (T[A->root].rg || T[A->root].saved || (B && B->rg))))
        return false;
    if (A->root < p->nin && (p->in[A->root].val == VAL_INDEX || (grad && p->in[A->root].rg)))
        return false;
    return !B || B->root != A->root; /* an overlapping source */
}
static void inplace_mark(dt_vtype *T, int slot, const dt_vtype *A, bool fuzzy)
{
    for (int k = 0; fuzzy && k < slot; k++)
        if (T[k].root == A->root) T[k].fuzzy = true;
}

/* A value a dtype holds exactly (as FULL's rule). */
static bool fits(tt_dtype dt, double x)
{
    return !((!is_f(dt) && !dt_integral(x)) || (dt == TT_BOOL && x != 0 && x != 1) || (dt == TT_U8 && x < 0));
}

/* A constant mask of rank i[0] <= A's whose sizes are A's trailing ones
 * or 1 (1 on the batch: a constant has no B). */
static bool mask_ok(const dt_instr *in, const dt_vtype *A)
{
    int nd = (int)in->i[0];
    int64_t n = 1;
    if (nd < 0 || nd > A->nd) return false;
    for (int k = 0; k < nd; k++) {
        int64_t x = A->s[A->nd - nd + k], m = in->i[1 + k];
        if (m < 1 || (m != 1 && (x == DT_B || m != x))) return false;
        n *= m;
    }
    return n <= 4096; /* adv_mask_data's buffers */
}

/* tt_index's result shape (PyTorch's rule: adjacent indexed dims are
 * replaced in place by the indices' broadcast shape, else it comes
 * first); false when the entries do not fit A. */
static bool index_shape(const dt_instr *in, const dt_vtype *A, int *nr, int64_t *r)
{
    int n = in->ni, ind = (int)in->i[0], first = -1, last = -1, np = 0;
    if (n < 1 || n > A->nd || ind < 1 || ind > 2 || (in->mode & 31) >> n) return false;
    for (int k = 0; k < n; k++)
        if (ix_present(in, k)) {
            if (first < 0) first = k;
            last = k;
            np++;
        }
    if (!np || in->i[1] < 1 || in->i[2] < 1 || in->i[1] * (ind > 1 ? in->i[2] : 1) > 64) return false;
    if (put_unique(in)) {
        int64_t m = A->s[first] == DT_B ? 2 : A->s[first];
        if (np != 1 || ind != 1 || in->i[1] > m || in->i[3]) return false;
    }
    /* the indices' broadcast shape: 1 where every index has size 1 */
    int64_t bs[2] = {1, 1}, is[2];
    for (int q = 0; q < n; q++) {
        if (!ix_present(in, q)) continue;
        adv_index_sizes(in, q, is);
        for (int j = 0; j < ind; j++) if (is[j] > bs[j]) bs[j] = is[j];
    }
    bool adjacent = last - first + 1 == np;
    int k = 0;
    if (!adjacent)
        for (int j = 0; j < ind; j++) r[k++] = bs[j];
    for (int d = 0; d < A->nd; d++) {
        if (d < n && ix_present(in, d)) {
            if (adjacent && d == first)
                for (int j = 0; j < ind; j++) r[k++] = bs[j];
            continue;
        }
        if (k >= DT_MAX_ND) return false;
        r[k++] = A->s[d];
    }
    if (k > DT_MAX_ND) return false;
    *nr = k;
    return true;
}

static bool model_adv(const dt_program *p, const dt_instr *in, dt_vtype *T, int slot, dt_vtype *res)
{
    const dt_vtype *A = in->a >= 0 && in->a < slot ? &T[in->a] : NULL;
    const dt_vtype *B = in->b >= 0 && in->b < slot ? &T[in->b] : NULL;
    const dt_vtype *C = in->c >= 0 && in->c < slot ? &T[in->c] : NULL;
    int64_t r[DT_MAX_ND + 1] = {0};
    int nr = 0;
    switch (in->op) {
    case OP_RANDPERM: {
        /* n i[0], dtype mode */
        tt_dtype dt = (tt_dtype)in->mode;
        if (A || (int)dt < 0 || dt >= TT_DTYPE_COUNT || dt == TT_BOOL || in->i[0] < 1 || in->i[0] > 16) return false;
        r[0] = in->i[0];
        *res = fresh(dt, 1, r, slot);
        return true;
    }
    default: break;
    }
    if (!A) return false;
    bool f = is_f(A->dt);
    switch (in->op) {
    case OP_MASKED_FILL: {
        /* mode & 1: the value is b (a 0-dim tensor of self's dtype), else
         * f; & 2: the mask is c (a bool slot broadcast with self), else a
         * constant (i[0], i[1..]) */
        bool tv = in->mode & 1, sm = in->mode & 2;
        if (tv ? (!B || B->nd != 0 || B->dt != A->dt) : (B || !fits(A->dt, in->f))) return false;
        if (sm) {
            if (!C || C->dt != TT_BOOL || C->fuzzy || !bcast(A->nd, A->s, C->nd, C->s, &nr, r)) return false;
        } else {
            if (C || !mask_ok(in, A)) return false;
            nr = A->nd;
            memcpy(r, A->s, sizeof(int64_t) * (size_t)nr);
        }
        *res = fresh(A->dt, nr, r, slot);
        res->fuzzy = A->fuzzy || (tv && B->fuzzy);
        res->rg = f && (A->rg || (tv && B->rg));
        return true;
    }
    case OP_MASKED_SCATTER: {
        /* constant mask; b the source (self's dtype), enough elements */
        int nb;
        if (!B || B->dt != A->dt || !mask_ok(in, A) || in->c >= 0) return false;
        /* the mask broadcast to self sets count times the dims it
         * broadcasts over: the source needs that many (B on as many of
         * its dims, B >= 2 unknown) */
        int64_t need = mask_count(in), have = cnumel(B, &nb);
        int nbA = 0, mnd = (int)in->i[0];
        for (int k = 0; k < A->nd; k++) {
            int mk = k - (A->nd - mnd);
            if (mk >= 0 && in->i[1 + mk] != 1) continue;
            if (A->s[k] == DT_B) nbA++;
            else need *= A->s[k];
        }
        if (need && (have < need || nb < nbA)) return false;
        *res = fresh(A->dt, A->nd, A->s, slot);
        res->fuzzy = A->fuzzy || B->fuzzy;
        res->rg = f && (A->rg || B->rg);
        return true;
    }
    case OP_MASKED_SELECT: {
        /* the sum of masked_select's cumsum (mode & 1: of itself); & 2:
         * the mask is c (a bool slot), else a constant */
        if (in->mode & 2) {
            if (!C || C->dt != TT_BOOL || C->fuzzy || !bcast(A->nd, A->s, C->nd, C->s, &nr, r)) return false;
        } else if (C || !mask_ok(in, A)) {
            return false;
        }
        if (A->fuzzy && !f) return false;
        *res = fresh(f ? A->dt : TT_I64, 0, r, slot);
        res->fuzzy = f;
        res->rg = f && A->rg;
        return true;
    }
    case OP_INDEX_MASK: {
        /* a[c] with c a bool program value of a's leading dims (its
         * nonzero: a data-dependent count), summed over that count
         * (mode & 1: after a cumsum): a's other dims */
        if (!C || C->dt != TT_BOOL || C->fuzzy || C->nd < 1 || C->nd > A->nd || (A->fuzzy && !f)) return false;
        for (int k = 0; k < C->nd; k++)
            if (C->s[k] != A->s[k]) return false;
        nr = A->nd - C->nd;
        memcpy(r, A->s + C->nd, sizeof(int64_t) * (size_t)nr);
        *res = fresh(f ? A->dt : TT_I64, nr, r, slot);
        res->fuzzy = f;
        res->rg = f && A->rg;
        return true;
    }
    case OP_NONZERO:
        /* [nd] i64: nonzero(a)'s columns summed (mode & 1: after a cumsum) */
        if (A->fuzzy || A->nd < 1) return false;
        r[0] = A->nd;
        *res = fresh(TT_I64, 1, r, slot);
        return true;
    case OP_INDEX: case OP_INDEX_PUT: {
        /* put: b the values (broadcast to the index's result, self's
         * dtype); & 0x20 accumulate, & 0x40 in place */
        if (!index_shape(in, A, &nr, r)) return false;
        for (int k = 0; k < in->ni; k++)
            if (A->s[k] != DT_B && (A->s[k] < 1 || A->s[k] > 63)) return false;
        if (in->i[4] != ix_ranges(A, in->ni)) return false;
        if (in->op == OP_INDEX) {
            if (B) return false;
            *res = fresh(A->dt, nr, r, slot);
            res->fuzzy = A->fuzzy;
            res->rg = A->rg;
            return true;
        }
        int nb2;
        int64_t r2[DT_MAX_ND + 1];
        bool acc = in->mode & 0x20;
        if (!B || B->dt != A->dt || !bcast(nr, r, B->nd, B->s, &nb2, r2) || nb2 != nr ||
            memcmp(r, r2, sizeof(int64_t) * (size_t)nr))
            return false;
        if (acc && A->dt == TT_BOOL) return false;
        bool fz = A->fuzzy || B->fuzzy || (acc && f);
        if (in->mode & 0x40) {
            if (!inplace_ok(p, T, A, B)) return false;
            *res = *A;
            inplace_mark(T, slot, A, fz);
            res->fuzzy |= fz;
            return true;
        }
        *res = fresh(A->dt, A->nd, A->s, slot);
        res->fuzzy = fz;
        res->rg = f && (A->rg || B->rg);
        return true;
    }
    case OP_EMBEDDING_BAG: {
        /* weight a [N, D]; mode & 3 sum, mean, max; & 4 include_last_offset,
         * & 8 per_sample_weights (sum), & 16 padding_idx i[3], & 32
         * scale_grad_by_freq */
        int m = in->mode & 3;
        if (!f || A->nd != 2 || A->s[0] == DT_B || A->s[0] < 1 || A->s[0] > 63 || m > 2) return false;
        if (in->i[0] != A->s[0] || in->i[1] < 1 || in->i[1] > 16 || in->i[2] < 1 || in->i[2] > 6) return false;
        if ((in->mode & 8) && m != 0) return false;
        if ((in->mode & 16) && (in->i[3] < 0 || in->i[3] >= A->s[0])) return false;
        if (m == 2 && A->fuzzy && A->rg) return false; /* ties split max's gradient */
        r[0] = in->i[2];
        r[1] = A->s[1];
        *res = fresh(A->dt, 2, r, slot);
        res->fuzzy = A->fuzzy || m != 2;
        res->rg = A->rg;
        return true;
    }
    case OP_RMS_NORM: {
        /* over the last ni dims; mode & 1 weight b (their shape), & 2 eps
         * None (the dtype's) */
        if (!f || in->ni < 1 || in->ni > 2 || in->ni > A->nd) return false;
        if (in->mode & 1) {
            if (!B || B->dt != A->dt || B->nd != in->ni ||
                memcmp(B->s, A->s + A->nd - in->ni, sizeof(int64_t) * (size_t)in->ni))
                return false;
        } else if (B) {
            return false;
        }
        *res = fresh(A->dt, A->nd, A->s, slot);
        res->fuzzy = true;
        res->rg = A->rg || (B && B->rg);
        return true;
    }
    case OP_CDIST: {
        /* mode & 1: pdist(a [N, M], f) (N concrete: the result has N(N-1)/2);
         * else cdist(a [.., P, M], b [.., R, M], f) with compute_mode
         * ((mode >> 1) & 3) - 1 (-1 None; 1 the matrix-product form) */
        if (!f || A->nd < 2 || !(in->f >= 0)) return false;
        int64_t m = A->s[A->nd - 1];
        if (in->mode & 1) {
            /* N >= 2: pdist of one row is empty, and the programs keep
             * every size positive */
            if (B || A->nd != 2 || A->s[0] == DT_B || A->s[0] < 2) return false;
            r[0] = A->s[0] * (A->s[0] - 1) / 2;
            *res = fresh(A->dt, 1, r, slot);
        } else {
            if (!B || B->dt != A->dt || B->nd < 2 || B->s[B->nd - 1] != m) return false;
            if (!bcast(A->nd - 2, A->s, B->nd - 2, B->s, &nr, r) || nr + 2 > DT_MAX_ND) return false;
            r[nr] = A->s[A->nd - 2];
            r[nr + 1] = B->s[B->nd - 2];
            *res = fresh(A->dt, nr + 2, r, slot);
        }
        res->fuzzy = true;
        res->rg = A->rg || (B && B->rg);
        return true;
    }
    case OP_SILU:
        if (!f) return false;
        *res = fresh(A->dt, A->nd, A->s, slot);
        res->fuzzy = true;
        res->rg = A->rg;
        return true;
    case OP_ROTARY: {
        /* x [..., T, D], tables b (cos), c (sin) [T, D]; mode & 1 interleaved */
        if (!f || A->nd < 2 || !B || !C || B->dt != A->dt || C->dt != A->dt) return false;
        int64_t t = A->s[A->nd - 2], d = A->s[A->nd - 1];
        if (d == DT_B || d % 2) return false;
        if (B->nd != 2 || C->nd != 2 || B->s[0] != t || B->s[1] != d || C->s[0] != t || C->s[1] != d) return false;
        *res = fresh(A->dt, A->nd, A->s, slot);
        res->fuzzy = true;
        res->rg = A->rg || B->rg || C->rg;
        return true;
    }
    case OP_BERNOULLI:
        /* mode & 1: bernoulli.p (p = f, any dtype); else bernoulli of
         * clamp(a, 0, 1) (float): 0 or 1, exactly, when both sides draw alike */
        if (in->mode & 1 ? !(in->f >= 0 && in->f <= 1) : (!f || A->fuzzy)) return false;
        *res = fresh(A->dt, A->nd, A->s, slot);
        return true;
    case OP_RAND_FILL: {
        /* mode & 1 normal_(f, |g|), else uniform_(f, f + |g|): in place */
        if (!f || isnan(in->g) || !inplace_ok(p, T, A, NULL)) return false;
        *res = *A;
        inplace_mark(T, slot, A, true);
        res->fuzzy = true;
        return true;
    }
    case OP_RAND: case OP_RANDINT: {
        /* a's shape (batch read from it), dtype mode; rand: & 16 randn;
         * randint: [i[0], i[0] + i[1]) (& 32 and i[0] 0: randint(high)) */
        tt_dtype dt = (tt_dtype)(in->mode & 15);
        if ((int)dt >= TT_DTYPE_COUNT) return false;
        if (in->op == OP_RAND && !is_f(dt)) return false;
        if (in->op == OP_RANDINT && (dt == TT_BOOL || in->i[1] < 1 || in->i[1] > 8 || in->i[0] < -4 || in->i[0] > 4 ||
                                     (dt == TT_U8 && in->i[0] < 0)))
            return false;
        *res = fresh(dt, A->nd, A->s, slot);
        res->fuzzy = in->op == OP_RAND && (in->mode & 16); /* randn's transcendental math */
        return true;
    }
    case OP_MULTINOMIAL: {
        /* weights clamp(|a|, 0.5, 4) [n] or [rows, n]; i[1] samples, mode
         * & 1 with replacement (else at most n) */
        int64_t n = A->nd ? A->s[A->nd - 1] : 0;
        if (!f || A->fuzzy || A->nd < 1 || A->nd > 2 || n == DT_B || n < 1 || in->i[1] < 1 || in->i[1] > 8) return false;
        if (!(in->mode & 1) && in->i[1] > n) return false;
        nr = A->nd;
        if (nr == 2) r[0] = A->s[0];
        r[nr - 1] = in->i[1];
        *res = fresh(TT_I64, nr, r, slot);
        return true;
    }
    case OP_SDPA_EXT: {
        /* self-attention on a [.., T, D] (float): mode & 3: 0 an attn_mask
         * (constant, adv_mask_data's [.., T, T] suffix; & 8 float, else
         * bool with key 0 always seen), 1 causal with window i[0], 2
         * grouped-query (key = value = a's first i[1] heads of dim -3),
         * 3 both 0 and 2; & 4 scale 0.5 */
        int m = in->mode & 3, nd = A->nd;
        if (!f || nd < 2 || nd > 4) return false;
        int64_t t = A->s[nd - 2];
        if (m == 1 && (in->i[0] < 1 || in->i[0] > 4)) return false;
        if (m >= 2) {
            int64_t h = nd >= 3 ? A->s[nd - 3] : 0;
            if (nd < 3 || h == DT_B || in->i[1] < 1 || h % in->i[1]) return false;
        }
        if (m == 0 || m == 3) {
            int mnd = (int)in->i[2];
            if (mnd < 1 || mnd > 2 || in->i[3] * (mnd > 1 ? in->i[4] : 1) > 64) return false; /* its buffers */
            for (int k = 0; k < mnd; k++) {
                int64_t ms = in->i[3 + k];
                if (ms != 1 && (t == DT_B || ms != t)) return false;
            }
        }
        *res = fresh(A->dt, nd, A->s, slot);
        res->fuzzy = true;
        res->rg = A->rg;
        res->contig = false;
        return true;
    }
    case OP_EMPTY: {
        /* mode & 3: empty (dtype mode >> 2; & 32 as empty.memory_format,
         * channels last for 4 dims), empty_like, empty_strided (& 16 the
         * last two dims' strides swapped), new_empty (a's sizes reversed):
         * values unspecified, so the instruction fills them with f */
        int m = in->mode & 3;
        tt_dtype dt = m == 0 || m == 2 ? (tt_dtype)((in->mode >> 2) & 3) : A->dt;
        if (!fits(dt, in->f)) return false;
        nr = A->nd;
        for (int k = 0; k < nr; k++) r[k] = m == 3 ? A->s[nr - 1 - k] : A->s[k];
        *res = fresh(dt, nr, r, slot);
        bool cl = m == 0 && (in->mode & 32) && nr == 4;
        res->contig = (m == 0 && !cl) || m == 3 || (m == 1 && A->contig) || (m == 2 && !(in->mode & 16));
        return true;
    }
    case OP_IM2COL: {
        /* x [N, C, H, W] or [C, H, W] (float, C H W known): kernel i[0],
         * i[1], dilation i[2], padding i[3], stride i[4]; mode & 1:
         * col2im(im2col(x)) back to [.., C, H, W] */
        int nd = A->nd;
        if (!f || (nd != 3 && nd != 4)) return false;
        int64_t c = A->s[nd - 3], h = A->s[nd - 2], w = A->s[nd - 1];
        int64_t kh = in->i[0], kw = in->i[1], dl = in->i[2], pd = in->i[3], st = in->i[4];
        if (c == DT_B || h == DT_B || w == DT_B || kh < 1 || kw < 1 || dl < 1 || pd < 0 || st < 1) return false;
        int64_t oh = (h + 2 * pd - dl * (kh - 1) - 1), ow = (w + 2 * pd - dl * (kw - 1) - 1);
        if (oh < 0 || ow < 0) return false;
        oh = oh / st + 1, ow = ow / st + 1;
        if (in->mode & 1) {
            *res = fresh(A->dt, nd, A->s, slot);
            res->fuzzy = true;
        } else {
            nr = 0;
            if (nd == 4) r[nr++] = A->s[0];
            r[nr++] = c * kh * kw;
            r[nr++] = oh * ow;
            *res = fresh(A->dt, nr, r, slot);
            res->fuzzy = A->fuzzy;
        }
        res->rg = A->rg;
        return true;
    }
    case OP_ADAMW: {
        /* param a (in place), grad b (a's shape and dtype); the moment
         * buffers b / 2 and b * b and step i[0] made in the call; & 1
         * weight decay 0.01 */
        if (!f || !B || B->dt != A->dt || B->nd != A->nd || in->i[0] < 1 || in->i[0] > 3 ||
            memcmp(B->s, A->s, sizeof(int64_t) * (size_t)A->nd) || !inplace_ok(p, T, A, B))
            return false;
        *res = *A;
        inplace_mark(T, slot, A, true);
        res->fuzzy = true;
        return true;
    }
    default:
        return false;
    }
}

bool dt_model_adv(const dt_program *p, const dt_instr *in, dt_vtype *T, int slot, dt_vtype *res)
{
    if (!model_adv(p, in, T, slot, res))
        return false;
    /* silu and the like keep a transposed self's layout, as PyTorch's
     * elementwise ops do (seeds 3085, 5278): as in gen_index.c, a result
     * is known contiguous only when self is, or made from sizes alone */
    bool factory = in->op == OP_RAND || in->op == OP_RANDINT || in->op == OP_RANDPERM ||
                   (in->op == OP_EMPTY && ((in->mode & 3) == 0 || (in->mode & 3) == 3));
    if (!factory && in->a >= 0 && !T[in->a].contig) res->contig = false;
    return true;
}

/* ------------------------------------------------------- proposals */

void dt_adv_operands(int op, bool *b, bool *c)
{
    *b = op == OP_MASKED_FILL || op == OP_MASKED_SCATTER || op == OP_INDEX_PUT || op == OP_RMS_NORM ||
         op == OP_ROTARY || op == OP_ADAMW || op == OP_CDIST;
    *c = op == OP_MASKED_FILL || op == OP_MASKED_SELECT || op == OP_ROTARY || op == OP_INDEX_MASK;
}

/* A slot with these sizes and dtype (-1: none found). */
static int find_shaped(rng *r, const dt_vtype *T, int nslots, tt_dtype dt, int nd, const int64_t *s, bool bool_ok)
{
    int start = rint_(r, nslots > 0 ? nslots : 1);
    for (int t = 0; t < nslots; t++) {
        int b = (start + t) % nslots;
        if (T[b].nd == nd && (bool_ok ? T[b].dt == TT_BOOL && !T[b].fuzzy : T[b].dt == dt) &&
            !memcmp(T[b].s, s, sizeof(int64_t) * (size_t)nd))
            return b;
    }
    return -1;
}

/* A constant mask for A: its trailing dims, some 1. */
static void propose_mask(rng *r, const dt_vtype *A, dt_instr *in)
{
    int nd = A->nd ? A->nd - (A->nd > 1 && rbool(r, 25)) : 0;
    in->i[0] = nd;
    for (int k = 0; k < nd; k++) {
        int64_t x = A->s[A->nd - nd + k];
        in->i[1 + k] = x == DT_B || rbool(r, 15) ? 1 : x;
    }
}

void dt_propose_adv(rng *r, const dt_program *p, const dt_vtype *T, int nslots, int op, dt_instr *in)
{
    (void)p;
    const dt_vtype *A = &T[in->a];
    int nd = A->nd;
    in->g = (double)rint_(r, 100000);
    in->mode = rint_(r, 256);
    switch (op) {
    case OP_MASKED_FILL: case OP_MASKED_SELECT: {
        propose_mask(r, A, in);
        if (op == OP_MASKED_FILL) {
            in->b = -1;
            if (in->mode & 1) in->b = find_shaped(r, T, nslots, A->dt, 0, (const int64_t[1]){0}, false);
            if (in->b < 0) in->mode &= ~1;
        }
        in->c = -1;
        if (in->mode & 2) {
            /* a bool slot of a's shape, or of its last dims */
            in->c = find_shaped(r, T, nslots, TT_BOOL, nd, A->s, true);
            if (in->c < 0 && nd) in->c = find_shaped(r, T, nslots, TT_BOOL, nd - 1, A->s + 1, true);
            if (in->c < 0) in->mode &= ~2;
        }
        break;
    }
    case OP_MASKED_SCATTER:
        propose_mask(r, A, in);
        in->c = -1;
        in->b = rbool(r, 40) ? in->a : rint_(r, nslots);
        for (int t = 0; t < 12 && T[in->b].dt != A->dt; t++) in->b = rint_(r, nslots);
        break;
    case OP_NONZERO: break;
    case OP_INDEX_MASK:
        /* a bool value of a's shape or its leading dims */
        in->c = -1;
        for (int k = nd; k >= 1 && in->c < 0; k--)
            if (k == nd || rbool(r, 50)) in->c = find_shaped(r, T, nslots, TT_BOOL, k, A->s, true);
        break;
    case OP_INDEX: case OP_INDEX_PUT: {
        if (!nd) break;
        in->ni = 1 + rint_(r, nd);
        int present = 0;
        while (!present) present = rint_(r, 1 << in->ni);
        if (op == OP_INDEX_PUT && !(in->mode & 0x20)) present = 1 << rint_(r, in->ni); /* unique: one index */
        in->mode = (in->mode & ~31) | present;
        in->i[0] = 1 + (rbool(r, 30) && !put_unique(in));
        in->i[1] = 1 + rint_(r, 4);
        in->i[2] = 1 + rint_(r, 3);
        in->i[3] = put_unique(in) ? 0 : rbool(r, 40) ? rint_(r, 1 << 10) : 0;
        if (put_unique(in)) {
            int k = 0;
            while (!ix_present(in, k)) k++;
            int64_t m = A->s[k] == DT_B ? 2 : A->s[k];
            in->i[1] = 1 + rint_(r, (int)m);
        }
        in->i[4] = ix_ranges(A, in->ni);
        if (op == OP_INDEX_PUT) {
            /* values: a slot broadcasting to the result (often 0-dim or self) */
            int nr;
            int64_t s[DT_MAX_ND + 1];
            in->b = -1;
            if (index_shape(in, A, &nr, s)) {
                for (int t = 0; t < 40 && in->b < 0; t++) {
                    int b = rint_(r, nslots), n2;
                    int64_t s2[DT_MAX_ND + 1];
                    if (T[b].dt == A->dt && bcast(nr, s, T[b].nd, T[b].s, &n2, s2) && n2 == nr &&
                        !memcmp(s, s2, sizeof(int64_t) * (size_t)nr))
                        in->b = b;
                }
            }
            if (in->b < 0) in->b = in->a;
        }
        break;
    }
    case OP_EMBEDDING_BAG:
        in->i[0] = nd == 2 ? A->s[0] : 1;
        in->i[1] = 1 + rint_(r, 8);
        in->i[2] = 1 + rint_(r, 4);
        in->i[3] = rint_(r, (int)(in->i[0] > 0 && in->i[0] < 64 ? in->i[0] : 1));
        in->mode &= 63;
        if ((in->mode & 3) == 3) in->mode &= ~3;
        if (in->mode & 3) in->mode &= ~8;
        break;
    case OP_RMS_NORM:
        in->ni = nd > 1 && rbool(r, 30) ? 2 : 1;
        in->b = -1;
        if ((in->mode & 1) && nd >= in->ni) in->b = find_shaped(r, T, nslots, A->dt, in->ni, A->s + nd - in->ni, false);
        if (in->b < 0) in->mode &= ~1;
        break;
    case OP_CDIST: {
        /* p 0 (counts), 1, 1.5, 2, 3 or inf; x2 a slot of x1's dtype and
         * columns (x1 itself at times) */
        static const double ps[] = {0, 1, 1.5, 2, 2, 3, INFINITY};
        in->f = ps[rint_(r, 7)];
        in->mode &= 7;
        in->b = -1;
        if (in->mode & 1) break;
        int start = rint_(r, nslots);
        for (int t = 0; t < nslots && in->b < 0 && nd >= 2; t++) {
            int b = (start + t) % nslots;
            if (T[b].dt == A->dt && T[b].nd >= 2 && T[b].s[T[b].nd - 1] == A->s[nd - 1] &&
                (b != in->a || rbool(r, 30)))
                in->b = b;
        }
        if (in->b < 0) in->b = in->a;
        break;
    }
    case OP_ROTARY:
        in->b = in->c = -1;
        if (nd >= 2) {
            in->b = find_shaped(r, T, nslots, A->dt, 2, A->s + nd - 2, false);
            in->c = rbool(r, 30) ? in->b : find_shaped(r, T, nslots, A->dt, 2, A->s + nd - 2, false);
        }
        break;
    case OP_BERNOULLI: {
        static const double ps[] = {0, 0.25, 0.5, 0.75, 1};
        in->f = ps[rint_(r, 5)];
        break;
    }
    case OP_RAND_FILL: in->g = rint_(r, 4) * 0.5; break;
    case OP_RAND: case OP_RANDINT: {
        static const tt_dtype fd[] = {TT_F32, TT_F64}, id[] = {TT_I64, TT_I32, TT_U8, TT_F32, TT_F64};
        in->mode = (in->mode & 48) | (int)(op == OP_RAND ? fd[rint_(r, 2)] : id[rint_(r, 5)]);
        in->i[0] = rint_(r, 7) - 3;
        in->i[1] = 1 + rint_(r, 6);
        break;
    }
    case OP_RANDPERM: {
        static const tt_dtype dts[] = {TT_I64, TT_I32, TT_U8, TT_F32, TT_F64};
        in->a = -1;
        in->mode = (int)dts[rint_(r, 5)];
        in->i[0] = 1 + rint_(r, 8);
        break;
    }
    case OP_MULTINOMIAL: {
        int64_t n = nd && A->s[nd - 1] != DT_B ? A->s[nd - 1] : 4;
        in->i[1] = 1 + rint_(r, (int)(n < 8 ? n : 8));
        if ((in->mode & 1) && rbool(r, 50)) in->i[1] = 1 + rint_(r, 8);
        break;
    }
    case OP_SDPA_EXT: {
        int64_t t = nd >= 2 ? A->s[nd - 2] : 1, h = nd >= 3 && A->s[nd - 3] != DT_B ? A->s[nd - 3] : 1;
        in->i[0] = 1 + rint_(r, 4);
        in->i[1] = 1;
        for (int64_t d = 1; d <= h; d++) if (h % d == 0 && rbool(r, 50)) in->i[1] = d;
        in->i[2] = 1 + rbool(r, 60);
        for (int k = 0; k < 2; k++) in->i[3 + k] = t == DT_B || rbool(r, 20) ? 1 : t;
        in->mode &= 15;
        break;
    }
    case OP_EMPTY: in->mode &= 63; break;
    case OP_IM2COL:
        in->i[0] = 1 + rint_(r, 3);
        in->i[1] = 1 + rint_(r, 3);
        in->i[2] = rbool(r, 20) ? 2 : 1;
        in->i[3] = rint_(r, 2);
        in->i[4] = 1 + rbool(r, 30);
        break;
    case OP_ADAMW:
        in->b = rbool(r, 30) ? in->a : rint_(r, nslots);
        for (int t = 0; t < 24; t++) {
            int b = rint_(r, nslots);
            if (T[b].dt == A->dt && T[b].nd == nd && !memcmp(T[b].s, A->s, sizeof(int64_t) * (size_t)nd) &&
                T[b].root != A->root) { in->b = b; break; }
        }
        in->i[0] = 1 + rint_(r, 3);
        break;
    default: break;
    }
}

/* ------------------------------------------------------ execution */

static tt_tensor *make_mask(const dt_instr *in)
{
    int64_t s[DT_MAX_ND], v[4096];
    int nd = adv_mask_data(in, s, v);
    tt_tensor *t = tt_from_data(nd, s, TT_I64, v);
    return t ? tt_to_dtype(t, TT_BOOL) : NULL;
}

/* The n entries of an index (NULL: None), from a's sizes; false on error. */
static bool make_indices(const dt_instr *in, tt_tensor **ix)
{
    for (int k = 0; k < in->ni; k++) {
        ix[k] = NULL;
        if (!ix_present(in, k)) continue;
        int64_t s[2], v[64];
        int nd = adv_index_data(in, k, ix_range(in, k), s, v);
        if (!(ix[k] = tt_from_data(nd, s, TT_I64, v))) return false;
    }
    return true;
}

tt_tensor *dt_exec_adv(const dt_instr *in, tt_tensor **S)
{
    tt_tensor *a = in->a >= 0 ? S[in->a] : NULL, *b = in->b >= 0 ? S[in->b] : NULL;
    tt_tensor *c = in->c >= 0 ? S[in->c] : NULL, *m = NULL, *t = NULL;
    switch (in->op) {
    case OP_MASKED_FILL:
        if (!(m = c ? c : make_mask(in))) return NULL;
        return in->mode & 1 ? tt_masked_fill_tensor(a, m, b) : tt_masked_fill(a, m, in->f);
    case OP_MASKED_SCATTER:
        if (!(m = make_mask(in))) return NULL;
        return tt_masked_scatter(a, m, b);
    case OP_MASKED_SELECT:
        if (!(m = c ? c : make_mask(in)) || !(t = tt_masked_select(a, m))) return NULL;
        if (!(in->mode & 1) && !(t = tt_cumsum(t, 0))) return NULL;
        return tt_sum_all(t);
    case OP_INDEX_MASK:
        if (!(t = tt_index(a, 1, &c))) return NULL;
        if ((in->mode & 1) && !(t = tt_cumsum(t, 0))) return NULL;
        return tt_sum(t, 1, (const int64_t[]){0}, false);
    case OP_NONZERO:
        if (!(t = tt_nonzero(a))) return NULL;
        if ((in->mode & 1) && !(t = tt_cumsum(t, 0))) return NULL;
        return tt_sum(t, 1, (const int64_t[]){0}, false);
    case OP_INDEX: case OP_INDEX_PUT: {
        tt_tensor *ix[DT_MAX_ND];
        if (!make_indices(in, ix)) return NULL;
        if (in->op == OP_INDEX) return tt_index(a, in->ni, ix);
        if (in->mode & 0x40) return tt_index_put_(a, in->ni, ix, b, in->mode & 0x20) == TT_OK ? a : NULL;
        return tt_index_put(a, in->ni, ix, b, in->mode & 0x20);
    }
    case OP_EMBEDDING_BAG: {
        int64_t iv[16], ov[8], n;
        double wv[16];
        n = bag_indices(in, iv);
        tt_tensor *ix = tt_from_data(1, &n, TT_I64, iv), *w = NULL;
        n = bag_offsets(in, ov);
        tt_tensor *off = tt_from_data(1, &n, TT_I64, ov);
        if (!ix || !off) return NULL;
        if (in->mode & 8) {
            n = bag_weights(in, wv);
            if (!(w = tt_from_data(1, &n, TT_F64, wv)) || !(w = tt_to_dtype(w, tt_dtype_of(a)))) return NULL;
        }
        tt_embedding_bag_opts o = {.mode = in->mode & 3, .scale_grad_by_freq = in->mode & 32,
                                   .include_last_offset = in->mode & 4, .per_sample_weights = w,
                                   .padding = in->mode & 16, .padding_idx = in->i[3]};
        return tt_embedding_bag(a, ix, off, &o);
    }
    case OP_RMS_NORM: {
        int64_t ns[2];
        int nd = tt_ndim(a);
        for (int k = 0; k < in->ni; k++) ns[k] = tt_dim_size(a, nd - in->ni + k);
        return tt_rms_norm(a, in->ni, ns, b, in->mode & 2 ? -1.0 : 1e-5);
    }
    case OP_CDIST:
        return in->mode & 1 ? tt_pdist(a, in->f)
                            : tt_cdist_ex(a, b, in->f, ((in->mode >> 1) & 3) - 1);
    case OP_SILU: return tt_silu(a);
    case OP_ROTARY: return tt_rotary_embedding(a, b, c, in->mode & 1);
    case OP_BERNOULLI:
        if (in->mode & 1) return tt_bernoulli_p(a, in->f);
        return (t = tt_clamp(a, 0, 1)) ? tt_bernoulli(t) : NULL;
    case OP_RAND_FILL: {
        double sd = fabs(in->g);
        tt_status st = in->mode & 1 ? tt_normal_(a, in->f, sd) : tt_uniform_(a, in->f, in->f + sd);
        return st == TT_OK ? a : NULL;
    }
    case OP_RAND: case OP_RANDINT: {
        int nd = tt_ndim(a);
        int64_t s[DT_MAX_ND];
        tt_dtype dt = (tt_dtype)(in->mode & 15);
        for (int k = 0; k < nd; k++) s[k] = tt_dim_size(a, k);
        if (in->op == OP_RANDINT && in->i[0] == 0 && (in->mode & 32)) /* tt::randint(high, size): no wrapper */
            return tt_call(tt_op_find("tt::randint"), tt_v_int(in->i[1]), tt_v_ints(nd, s), tt_v_dtype(dt));
        if (in->op == OP_RANDINT) return tt_randint(in->i[0], in->i[0] + in->i[1], nd, s, dt);
        return in->mode & 16 ? tt_randn(nd, s, dt) : tt_rand(nd, s, dt);
    }
    case OP_RANDPERM: return tt_randperm(in->i[0], (tt_dtype)in->mode);
    case OP_MULTINOMIAL:
        if (!(t = tt_abs(a)) || !(t = tt_clamp(t, 0.5, 4))) return NULL;
        return tt_multinomial(t, in->i[1], in->mode & 1);
    case OP_SDPA_EXT: {
        int m = in->mode & 3, nd = tt_ndim(a);
        tt_tensor *kv = a;
        tt_value mask = tt_v_none();
        if (m >= 2 && !(kv = tt_narrow(a, nd - 3, 0, in->i[1]))) return NULL;
        if (m == 0 || m == 3) {
            int64_t s[2];
            double v[64];
            int mnd = sdpa_mask_data(in, s, v);
            if (!(t = tt_from_data(mnd, s, TT_F64, v)) ||
                !(t = tt_to_dtype(t, in->mode & 8 ? tt_dtype_of(a) : TT_BOOL)))
                return NULL;
            mask = tt_v_tensor(t);
        }
        return tt_call(tt_op_find("tt::scaled_dot_product_attention"), tt_v_tensor(a), tt_v_tensor(kv),
                       tt_v_tensor(kv), mask, tt_v_float(0), tt_v_bool(m == 1),
                       in->mode & 4 ? tt_v_float(0.5) : tt_v_none(), tt_v_bool(m >= 2),
                       tt_v_int(m == 1 ? in->i[0] : 0));
    }
    case OP_EMPTY: {
        int nd = tt_ndim(a), m = in->mode & 3;
        int64_t s[DT_MAX_ND], st[DT_MAX_ND];
        tt_dtype dt = (tt_dtype)((in->mode >> 2) & 3);
        for (int k = 0; k < nd; k++) s[k] = tt_dim_size(a, m == 3 ? nd - 1 - k : k);
        /* sizes may be symbols (every dim of a symbolic trace's inputs) */
        for (int64_t k = nd - 1, x = 1; k >= 0; k--) st[k] = x, x = tt_sym_mul(x, s[k]);
        if (m == 2 && (in->mode & 16) && nd >= 2) { /* the last two dims laid out transposed */
            st[nd - 1] = s[nd - 2];
            st[nd - 2] = 1;
        }
        if (m == 0 && (in->mode & 32))
            t = tt_call(tt_op_find("tt::empty.memory_format"), tt_v_ints(nd, s), tt_v_dtype(dt),
                        tt_v_none(), tt_v_none(), tt_v_none(), tt_v_int(nd == 4 ? 2 : 0));
        else
            t = m == 0 ? tt_empty(nd, s, dt) : m == 1 ? tt_empty_like(a) : m == 2 ? tt_empty_strided(nd, s, st, dt)
                                                                                 : tt_new_empty(a, nd, s);
        return t && tt_fill_(t, in->f) == TT_OK ? t : NULL;
    }
    case OP_IM2COL: {
        int nd = tt_ndim(a);
        const int64_t k2[2] = {in->i[0], in->i[1]}, d2[2] = {in->i[2], in->i[2]}, p2[2] = {in->i[3], in->i[3]},
                      s2[2] = {in->i[4], in->i[4]};
        if (!(t = tt_im2col(a, k2, d2, p2, s2)) || !(in->mode & 1)) return t;
        const int64_t o2[2] = {tt_dim_size(a, nd - 2), tt_dim_size(a, nd - 1)};
        return tt_col2im(t, o2, k2, d2, p2, s2);
    }
    case OP_ADAMW: {
        tt_tensor *ea = tt_mul_scalar(b, 0.5), *eq = tt_mul(b, b), *step = tt_scalar((double)in->i[0], TT_F32);
        if (!ea || !eq || !step) return NULL;
        tt_adamw_opts o = {.lr = 0.1, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = in->mode & 1 ? 0.01 : 0};
        return tt_adamw_(a, b, ea, eq, step, &o) == TT_OK ? a : NULL;
    }
    default:
        tt_error(TT_EINVAL, "difftest: unknown op %d", in->op);
        return NULL;
    }
}

/* ---------------------------------------------------------- printing */

static const char *tf(bool x) { return x ? "true" : "false"; }
static const char *dtn(int d)
{
    static const char *n[] = {"TT_F32", "TT_F64", "TT_I64", "TT_I32", "TT_U8", "TT_BOOL"};
    return d >= 0 && d < TT_DTYPE_COUNT ? n[d] : "TT_F32";
}

static void pr_list(FILE *f, int64_t n, const int64_t *v)
{
    fprintf(f, "(const int64_t[]){");
    for (int64_t k = 0; k < n; k++) fprintf(f, "%s%lld", k ? ", " : "", (long long)v[k]);
    fprintf(f, n ? "}" : "0}");
}

static void pr_mask(FILE *f, const dt_instr *in)
{
    if (in->c >= 0) { fprintf(f, "v%d", in->c); return; }
    int64_t s[DT_MAX_ND], v[4096];
    int nd = adv_mask_data(in, s, v);
    fprintf(f, "mskt(%d, ", nd);
    pr_list(f, nd, s);
    fprintf(f, ", ");
    pr_list(f, numel_of(nd, s), v);
    fprintf(f, ")");
}

/* The index entries: a compound literal of ixt() and NULL. */
static void pr_indices(FILE *f, const dt_instr *in)
{
    fprintf(f, "(tt_tensor *[]){");
    for (int k = 0; k < in->ni; k++) {
        fprintf(f, "%s", k ? ", " : "");
        if (!ix_present(in, k)) { fprintf(f, "NULL"); continue; }
        int64_t s[2], v[64];
        int nd = adv_index_data(in, k, ix_range(in, k), s, v);
        fprintf(f, "ixt(%d, ", nd);
        pr_list(f, nd, s);
        fprintf(f, ", ");
        pr_list(f, numel_of(nd, s), v);
        fprintf(f, ")");
    }
    fprintf(f, "}");
}

bool dt_print_adv(FILE *f, const dt_instr *in)
{
    int A = in->a, B = in->b, C = in->c;
    switch (in->op) {
    case OP_MASKED_FILL:
        fprintf(f, "tt_masked_fill%s(v%d, ", in->mode & 1 ? "_tensor" : "", A);
        pr_mask(f, in);
        if (in->mode & 1) fprintf(f, ", v%d)", B);
        else fprintf(f, ", %.17g)", in->f);
        return true;
    case OP_MASKED_SCATTER:
        fprintf(f, "tt_masked_scatter(v%d, ", A);
        pr_mask(f, in);
        fprintf(f, ", v%d)", B);
        return true;
    case OP_MASKED_SELECT:
        fprintf(f, "tt_sum_all(%stt_masked_select(v%d, ", in->mode & 1 ? "" : "tt_cumsum(", A);
        pr_mask(f, in);
        fprintf(f, ")%s)", in->mode & 1 ? "" : ", 0)");
        return true;
    case OP_NONZERO:
        fprintf(f, "tt_sum(%stt_nonzero(v%d)%s, 1, (const int64_t[]){0}, false)", in->mode & 1 ? "tt_cumsum(" : "", A,
                in->mode & 1 ? ", 0)" : "");
        return true;
    case OP_INDEX_MASK:
        fprintf(f, "tt_sum(%stt_index(v%d, 1, (tt_tensor *[]){v%d})%s, 1, (const int64_t[]){0}, false)",
                in->mode & 1 ? "tt_cumsum(" : "", A, C, in->mode & 1 ? ", 0)" : "");
        return true;
    case OP_INDEX:
        fprintf(f, "tt_index(v%d, %d, ", A, in->ni);
        pr_indices(f, in);
        fprintf(f, ")");
        return true;
    case OP_INDEX_PUT:
        fprintf(f, "%stt_index_put%s(v%d, %d, ", in->mode & 0x40 ? "ok_then(" : "", in->mode & 0x40 ? "_" : "", A, in->ni);
        pr_indices(f, in);
        fprintf(f, ", v%d, %s)", B, tf(in->mode & 0x20));
        if (in->mode & 0x40) fprintf(f, ", v%d)", A);
        return true;
    case OP_EMBEDDING_BAG: {
        int64_t iv[16], ov[8], n;
        double wv[16];
        fprintf(f, "tt_embedding_bag(v%d, ", A);
        n = bag_indices(in, iv);
        fprintf(f, "ixt(1, (const int64_t[]){%lld}, ", (long long)n);
        pr_list(f, n, iv);
        n = bag_offsets(in, ov);
        fprintf(f, "), ixt(1, (const int64_t[]){%lld}, ", (long long)n);
        pr_list(f, n, ov);
        fprintf(f, "), &(tt_embedding_bag_opts){.mode = %d, .scale_grad_by_freq = %s, .include_last_offset = %s, "
                   ".padding = %s, .padding_idx = %lld, .per_sample_weights = ",
                in->mode & 3, tf(in->mode & 32), tf(in->mode & 4), tf(in->mode & 16), (long long)in->i[3]);
        if (in->mode & 8) {
            n = bag_weights(in, wv);
            fprintf(f, "tt_to_dtype(tt_from_data(1, (const int64_t[]){%lld}, TT_F64, (const double[]){", (long long)n);
            for (int64_t k = 0; k < n; k++) fprintf(f, "%s%.17g", k ? ", " : "", wv[k]);
            fprintf(f, "}), tt_dtype_of(v%d))})", A);
        } else {
            fprintf(f, "NULL})");
        }
        return true;
    }
    case OP_RMS_NORM:
        fprintf(f, "tt_rms_norm(v%d, %d, sizes_of(v%d) + tt_ndim(v%d) - %d, ", A, in->ni, A, A, in->ni);
        if (in->mode & 1) fprintf(f, "v%d", B);
        else fprintf(f, "NULL");
        fprintf(f, ", %s)", in->mode & 2 ? "-1.0" : "1e-5");
        return true;
    case OP_CDIST: {
        char p[32];
        if (isinf(in->f)) snprintf(p, sizeof p, "INFINITY");
        else snprintf(p, sizeof p, "%.17g", in->f);
        if (in->mode & 1) fprintf(f, "tt_pdist(v%d, %s)", A, p);
        else fprintf(f, "tt_cdist_ex(v%d, v%d, %s, %d)", A, B, p, ((in->mode >> 1) & 3) - 1);
        return true;
    }
    case OP_SILU: fprintf(f, "tt_silu(v%d)", A); return true;
    case OP_ROTARY: fprintf(f, "tt_rotary_embedding(v%d, v%d, v%d, %s)", A, B, C, tf(in->mode & 1)); return true;
    case OP_BERNOULLI:
        if (in->mode & 1) fprintf(f, "tt_bernoulli_p(v%d, %.17g)", A, in->f);
        else fprintf(f, "tt_bernoulli(tt_clamp(v%d, 0, 1))", A);
        return true;
    case OP_RAND_FILL:
        fprintf(f, "ok_then(");
        if (in->mode & 1) fprintf(f, "tt_normal_(v%d, %.17g, %.17g)", A, in->f, fabs(in->g));
        else fprintf(f, "tt_uniform_(v%d, %.17g, %.17g)", A, in->f, in->f + fabs(in->g));
        fprintf(f, ", v%d)", A);
        return true;
    case OP_RAND:
        fprintf(f, "tt_%s(tt_ndim(v%d), sizes_of(v%d), %s)", in->mode & 16 ? "randn" : "rand", A, A, dtn(in->mode & 15));
        return true;
    case OP_RANDINT:
        if (in->i[0] == 0 && (in->mode & 32)) {
            fprintf(f, "tt_call(tt_op_find(\"tt::randint\"), tt_v_int(%lld), tt_v_ints(tt_ndim(v%d), sizes_of(v%d)), tt_v_dtype(%s))",
                    (long long)in->i[1], A, A, dtn(in->mode & 15));
            return true;
        }
        fprintf(f, "tt_randint(%lld, %lld, tt_ndim(v%d), sizes_of(v%d), %s)", (long long)in->i[0],
                (long long)(in->i[0] + in->i[1]), A, A, dtn(in->mode & 15));
        return true;
    case OP_RANDPERM: fprintf(f, "tt_randperm(%lld, %s)", (long long)in->i[0], dtn(in->mode)); return true;
    case OP_MULTINOMIAL:
        fprintf(f, "tt_multinomial(tt_clamp(tt_abs(v%d), 0.5, 4), %lld, %s)", A, (long long)in->i[1], tf(in->mode & 1));
        return true;
    case OP_SDPA_EXT: {
        int m = in->mode & 3;
        char kv[64];
        if (m >= 2) snprintf(kv, sizeof kv, "tt_narrow(v%d, tt_ndim(v%d) - 3, 0, %lld)", A, A, (long long)in->i[1]);
        else snprintf(kv, sizeof kv, "v%d", A);
        fprintf(f, "tt_call(tt_op_find(\"tt::scaled_dot_product_attention\"), tt_v_tensor(v%d), tt_v_tensor(%s), "
                   "tt_v_tensor(%s), ", A, kv, kv);
        if (m == 0 || m == 3) {
            int64_t s[2];
            double v[64];
            int mnd = sdpa_mask_data(in, s, v);
            fprintf(f, "tt_v_tensor(tt_to_dtype(tt_from_data(%d, ", mnd);
            pr_list(f, mnd, s);
            fprintf(f, ", TT_F64, (const double[]){");
            for (int64_t k = 0; k < numel_of(mnd, s); k++) fprintf(f, "%s%g", k ? ", " : "", v[k]);
            if (in->mode & 8) fprintf(f, "}), tt_dtype_of(v%d)))", A);
            else fprintf(f, "}), TT_BOOL))");
        } else {
            fprintf(f, "tt_v_none()");
        }
        fprintf(f, ", tt_v_float(0), tt_v_bool(%s), %s, tt_v_bool(%s), tt_v_int(%lld))", tf(m == 1),
                in->mode & 4 ? "tt_v_float(0.5)" : "tt_v_none()", tf(m >= 2), (long long)(m == 1 ? in->i[0] : 0));
        return true;
    }
    case OP_EMPTY: {
        /* sizes of a (reversed for new_empty), then filled with f */
        int m = in->mode & 3;
        const char *dt = dtn((in->mode >> 2) & 3);
        fprintf(f, "fill_then(");
        if (m == 0 && (in->mode & 32))
            fprintf(f, "tt_call(tt_op_find(\"tt::empty.memory_format\"), tt_v_ints(tt_ndim(v%d), "
                       "sizes_of(v%d)), tt_v_dtype(%s), tt_v_none(), tt_v_none(), tt_v_none(), "
                       "tt_v_int(tt_ndim(v%d) == 4 ? 2 : 0))", A, A, dt, A);
        else if (m == 0) fprintf(f, "tt_empty(tt_ndim(v%d), sizes_of(v%d), %s)", A, A, dt);
        else if (m == 1) fprintf(f, "tt_empty_like(v%d)", A);
        else if (m == 2) fprintf(f, "empty_strided_of(v%d, %d, %s)", A, !!(in->mode & 16), dt);
        else fprintf(f, "tt_new_empty(v%d, tt_ndim(v%d), reversed_sizes_of(v%d))", A, A, A);
        fprintf(f, ", %.17g)", in->f);
        return true;
    }
    case OP_IM2COL: {
        char args[160];
        snprintf(args, sizeof args, "(const int64_t[]){%lld, %lld}, (const int64_t[]){%lld, %lld}, "
                 "(const int64_t[]){%lld, %lld}, (const int64_t[]){%lld, %lld}", (long long)in->i[0],
                 (long long)in->i[1], (long long)in->i[2], (long long)in->i[2], (long long)in->i[3],
                 (long long)in->i[3], (long long)in->i[4], (long long)in->i[4]);
        if (in->mode & 1)
            fprintf(f, "tt_col2im(tt_im2col(v%d, %s), sizes_of(v%d) + tt_ndim(v%d) - 2, %s)", A, args, A, A, args);
        else
            fprintf(f, "tt_im2col(v%d, %s)", A, args);
        return true;
    }
    case OP_ADAMW:
        fprintf(f, "ok_then(tt_adamw_(v%d, v%d, tt_mul_scalar(v%d, 0.5), tt_mul(v%d, v%d), tt_scalar(%lld, TT_F32), "
                   "&(tt_adamw_opts){.lr = 0.1, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = %s}), v%d)",
                A, B, B, B, B, (long long)in->i[0], in->mode & 1 ? "0.01" : "0", A);
        return true;
    default: return false;
    }
}
