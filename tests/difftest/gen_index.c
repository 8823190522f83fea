/* tt-difftest: issue 27's ops (sort ... full_like): their shape/dtype
 * rules (PyTorch's), random arguments, calls through the public wrappers
 * and their printed C. gen.c's model(), propose(), exec1() and print.c
 * hand these ops here.
 *
 * Index tensors are constants the program builds with tt_from_data (the
 * printed program holds their values): their shape is in the instruction
 * (i[1..]), their values a function of the instruction (dt_index_data), in
 * range for the operand they index. Where PyTorch leaves the result open
 * (scatter and index_copy with duplicate positions) the indices are
 * unique along the scattered dim. */
#include "dt_gen.h"

#include <math.h>
#include <string.h>

static int ndim_of(int64_t d, int nd) { return (int)(d < 0 ? d + nd : d); }
static bool dimok(int64_t d, int nd) { return nd > 0 && d >= -nd && d < nd; }

/* The instruction's index: i[0] the dim, i[1..ind] its sizes, g = n +
 * 64 * seed with n the size of the dim it indexes (values in [0, n)). */
static int64_t ix_n(const dt_instr *in) { return (int64_t)in->g % 64; }
static int64_t ix_seed(const dt_instr *in) { return (int64_t)in->g / 64; }
/* Duplicates allowed (gather, index_select, scatter_add ...) or values
 * unique along the dim (scatter, index_copy). */
static bool ix_unique(const dt_instr *in)
{
    return (in->op == OP_SCATTER && (in->mode & 3) < 2) || in->op == OP_INDEX_COPY;
}
/* The index's rank: 1 for index_select/add/copy, self's for the others. */
static int ix_nd(const dt_instr *in) { return in->op == OP_GATHER || in->op == OP_SCATTER ? in->ni : 1; }

int dt_index_data(const dt_instr *in, int64_t *sizes, int64_t *vals)
{
    int nd = ix_nd(in), dim = in->op == OP_GATHER || in->op == OP_SCATTER ? ndim_of(in->i[0], nd) : 0;
    int64_t n = ix_n(in), seed = ix_seed(in), tot = 1;
    for (int k = 0; k < nd; k++) sizes[k] = in->i[1 + k], tot *= sizes[k];
    for (int64_t e = 0; e < tot; e++) {
        int64_t c[DT_MAX_ND], r = e, h = seed;
        for (int k = nd - 1; k >= 0; k--) c[k] = r % sizes[k], r /= sizes[k];
        if (ix_unique(in)) {
            /* a rotation of 0..size-1 per position off dim: unique */
            for (int k = 0; k < nd; k++) if (k != dim) h += c[k] * (k + 3);
            vals[e] = (c[dim] + h) % n;
        } else {
            uint64_t x = (uint64_t)(seed * 7919 + e * 104729 + 17);
            x ^= x >> 7;
            x *= 0x9e3779b97f4a7c15ull;
            vals[e] = (int64_t)((x >> 33) % (uint64_t)n);
        }
    }
    return nd;
}

/* ------------------------------------------------------------ rules */

static bool same_shape(const dt_vtype *A, const dt_vtype *B)
{
    return A->nd == B->nd && !memcmp(A->s, B->s, sizeof(int64_t) * (size_t)A->nd);
}
/* A selection (sort, max ...) reads values' order: on rounded values
 * eager and compiled may pick different elements, which a gradient shows. */
static bool order_ok(const dt_vtype *A, bool indices)
{
    return !(A->fuzzy && (indices || A->rg));
}

/* OP_SPLIT: along a dim of size sz (i[3]), mode 0 split.Tensor by i[1],
 * 1 chunk into i[1], 2 split_with_sizes [i[1], sz - i[1]]; piece i[2]
 * modulo the count. Its start and length; false if the split is refused
 * or makes more than DT_SPLIT_MAX pieces. */
#define DT_SPLIT_MAX 16
static bool split_piece(const dt_instr *in, int64_t sz, int64_t *start, int64_t *len)
{
    int64_t a = in->i[1], step, n;
    switch (in->mode % 3) {
    case 0: if (a < 1) return false; step = a; break;
    case 1: if (a < 1 || a > DT_SPLIT_MAX) return false; step = (sz + a - 1) / a; break;
    default:
        if (a < 0 || a > sz) return false;
        *start = in->i[2] % 2 ? a : 0;
        *len = in->i[2] % 2 ? sz - a : a;
        return true;
    }
    n = step ? (sz + step - 1) / step : 1;
    if (n < 1 || n > DT_SPLIT_MAX) return false;
    *start = (in->i[2] % n) * step;
    *len = sz - *start < step ? sz - *start : step;
    return true;
}

static bool model_index(const dt_program *p, const dt_instr *in, dt_vtype *T, int slot, dt_vtype *res)
{
    const dt_vtype *A = in->a >= 0 && in->a < slot ? &T[in->a] : NULL;
    const dt_vtype *B = in->b >= 0 && in->b < slot ? &T[in->b] : NULL;
    int64_t r[DT_MAX_ND + 1] = {0};
    if (in->op == OP_FULL_LIKE) {
        /* mode & 1 scalar_tensor (dtype mode >> 1) or full_like(a) */
        tt_dtype dt = in->mode & 1 ? (tt_dtype)((in->mode >> 1) % TT_DTYPE_COUNT) : A ? A->dt : TT_F32;
        if ((in->mode & 1) == !!A) return false;
        if ((!is_f(dt) && !dt_integral(in->f)) || (dt == TT_BOOL && in->f != 0 && in->f != 1) ||
            (dt == TT_U8 && in->f < 0))
            return false;
        *res = fresh(dt, A ? A->nd : 0, A ? A->s : r, slot);
        if (A) res->contig = A->contig;
        return true;
    }
    if (!A) return false;
    int d = dimok(in->i[0], A->nd) ? ndim_of(in->i[0], A->nd) : -1;
    bool f = is_f(A->dt);
    switch (in->op) {
    case OP_SORT: {
        /* mode & 3: sort's values, sort's indices, argsort, sort_stable's
         * values; & 4 descending */
        bool ix = (in->mode & 3) == 1 || (in->mode & 3) == 2;
        if (d < 0 || A->dt == TT_BOOL || !order_ok(A, ix)) return false;
        *res = fresh(ix ? TT_I64 : A->dt, A->nd, A->s, slot);
        res->fuzzy = !ix && A->fuzzy;
        res->rg = !ix && A->rg;
        return true;
    }
    case OP_TOPK: {
        /* i[1] = k; mode & 1 largest, & 2 sorted, & 4 the indices */
        bool ix = in->mode & 4;
        if (d < 0 || A->dt == TT_BOOL || A->s[d] == DT_B || in->i[1] < 1 || in->i[1] > A->s[d]) return false;
        if (!order_ok(A, ix)) return false;
        *res = fresh(ix ? TT_I64 : A->dt, A->nd, A->s, slot);
        res->s[d] = in->i[1];
        res->fuzzy = !ix && A->fuzzy;
        res->rg = !ix && A->rg;
        return true;
    }
    case OP_MAX_DIM: case OP_KTH: {
        /* max_dim: mode & 1 keepdim, & 2 min, & 4 indices, & 8 argmin.
         * kthvalue: mode & 3: kthvalue (k i[1]), median_dim, median of
         * all; & 4 keepdim, & 8 indices */
        bool kth = in->op == OP_KTH, all = kth && (in->mode & 3) == 2;
        bool keep = kth ? in->mode & 4 : in->mode & 1;
        bool ix = kth ? (in->mode & 8) && !all : (in->mode & 12) != 0;
        if (A->dt == TT_BOOL || (!all && d < 0) || !order_ok(A, ix)) return false;
        if (kth && (in->mode & 3) == 3) return false;
        if (kth && (in->mode & 3) == 0 && (A->s[d] == DT_B || in->i[1] < 1 || in->i[1] > A->s[d])) return false;
        int nr = 0;
        for (int k = 0; !all && k < A->nd; k++)
            if (k != d) r[nr++] = A->s[k];
            else if (keep) r[nr++] = 1;
        *res = fresh(ix ? TT_I64 : A->dt, nr, r, slot);
        res->fuzzy = !ix && A->fuzzy;
        res->rg = !ix && A->rg && f;
        return true;
    }
    case OP_CUM: {
        /* mode: cumsum, cumprod, logcumsumexp (floats) */
        int m = in->mode;
        if (d < 0 || m < 0 || m > 2 || (m == 2 && !f)) return false;
        *res = fresh(f ? A->dt : TT_I64, A->nd, A->s, slot);
        res->fuzzy = f;
        res->rg = f && A->rg;
        return true;
    }
    case OP_LSE: {
        /* mode & 3: logsumexp over i[0] (and i[1] when ni 2), prod of
         * all, prod over i[0]; & 4 keepdim */
        int m = in->mode & 3;
        bool keep = in->mode & 4;
        if (m > 2 || (m != 1 && d < 0)) return false;
        tt_dtype dt = m == 0 ? (f ? A->dt : TT_F32) : (f ? A->dt : TT_I64);
        bool seen[DT_MAX_ND] = {0};
        if (m == 0)
            for (int k = 0; k < in->ni; k++) {
                if (!dimok(in->i[k], A->nd) || seen[ndim_of(in->i[k], A->nd)]) return false;
                seen[ndim_of(in->i[k], A->nd)] = true;
            }
        else if (m == 2) seen[d] = true;
        else {
            /* a product of every element: few of them, or it overflows */
            int nb;
            if (cnumel(A, &nb) > 16 || nb) return false;
        }
        int nr = 0;
        for (int k = 0; m != 1 && k < A->nd; k++)
            if (!seen[k]) r[nr++] = A->s[k];
            else if (keep) r[nr++] = 1;
        *res = fresh(dt, nr, r, slot);
        res->fuzzy = is_f(dt);
        res->rg = f && A->rg;
        return true;
    }
    case OP_VAR: {
        /* over i[0] (and i[1] when ni 2); mode & 1 keepdim, & 2 std, & 4
         * correction 1 */
        bool seen[DT_MAX_ND] = {0};
        if (!f || A->nd == 0) return false;
        for (int k = 0; k < in->ni; k++) {
            if (!dimok(in->i[k], A->nd) || seen[ndim_of(in->i[k], A->nd)]) return false;
            seen[ndim_of(in->i[k], A->nd)] = true;
        }
        int nr = 0;
        for (int k = 0; k < A->nd; k++)
            if (!seen[k]) r[nr++] = A->s[k];
            else if (in->mode & 1) r[nr++] = 1;
        *res = fresh(A->dt, nr, r, slot);
        res->fuzzy = true;
        res->rg = A->rg;
        return true;
    }
    case OP_MAXIMUM: {
        /* mode & 1 minimum; same dtypes (no promotion to model) */
        int nr;
        if (!B || B->dt != A->dt || A->dt == TT_BOOL || !bcast(A->nd, A->s, B->nd, B->s, &nr, r)) return false;
        if ((A->fuzzy || B->fuzzy) && (A->rg || B->rg)) return false; /* ties split the gradient */
        *res = fresh(A->dt, nr, r, slot);
        res->fuzzy = A->fuzzy || B->fuzzy;
        res->rg = f && (A->rg || B->rg);
        return true;
    }
    case OP_CORE_FORMS: {
        /* Core ATen's forms of ops the tester has otherwise, mode % 7:
         * _softmax, _log_softmax, var.dim over i[0] (mode & 8 unbiased,
         * & 16 keepdim), addmm(b's first row, a, b), copy(a, a),
         * fill.Scalar(a, f), alias(a) */
        int m = in->mode % 7;
        if (m <= 2) {
            if (!f || !dimok(in->i[0], A->nd)) return false;
            int nr = 0, dd = ndim_of(in->i[0], A->nd);
            for (int k = 0; k < A->nd; k++)
                if (m < 2 || k != dd) r[nr++] = A->s[k];
                else if (in->mode & 16) r[nr++] = 1;
            *res = fresh(A->dt, nr, r, slot);
            res->fuzzy = true;
            res->rg = A->rg;
        } else if (m == 3) {
            if (!f || !B || B->dt != A->dt || A->nd != 2 || B->nd != 2 || B->s[0] != A->s[1])
                return false;
            int64_t o[2] = {A->s[0], B->s[1]};
            *res = fresh(A->dt, 2, o, slot);
            res->fuzzy = true;
            res->rg = A->rg || B->rg;
        } else if (m == 6) {
            *res = *A; /* a view of all of a */
        } else {
            *res = fresh(A->dt, A->nd, A->s, slot);
            res->fuzzy = m == 4 && A->fuzzy;
            res->rg = f && A->rg;
        }
        return true;
    }
    case OP_MODULO: {
        /* mode % 5: fmod, remainder, atan2 of two tensors of one float
         * dtype; fmod, remainder by a Scalar (modulo_scalar). Their steps
         * jump where a quotient crosses an integer (atan2's where y crosses
         * 0 left of the origin): inputs known only to rounding are kept
         * out. fmod is exact; the others round. atan2 with (mode / 5) odd
         * is atan2.out into a clone of a (b broadcast to a's shape; not
         * differentiable, so neither may require grad). */
        int m = in->mode % 5, nr;
        if (A->fuzzy || !is_f(A->dt)) return false;
        if (m < 3) {
            if (!B || B->dt != A->dt || B->fuzzy || !bcast(A->nd, A->s, B->nd, B->s, &nr, r)) return false;
            if (m == 2 && (in->mode / 5) & 1 &&
                (A->rg || B->rg || nr != A->nd || memcmp(r, A->s, sizeof(int64_t) * (size_t)nr)))
                return false;
            *res = fresh(A->dt, nr, r, slot);
            res->rg = f && (A->rg || B->rg);
        } else {
            *res = fresh(A->dt, A->nd, A->s, slot);
            res->rg = f && A->rg;
        }
        res->fuzzy = m != 0 && m != 3;
        return true;
    }
    case OP_FLIP: case OP_ROLL: {
        /* flip over ni dims i[0..]; roll: ni dims i[0..], shifts i[3..]
         * (ni 0: the flattened tensor by i[3]) */
        bool seen[DT_MAX_ND] = {0};
        if (in->ni > 2 || (in->op == OP_FLIP && in->ni < 1) || in->ni < 0) return false;
        for (int k = 0; k < in->ni; k++) {
            if (!dimok(in->i[k], A->nd) || seen[ndim_of(in->i[k], A->nd)]) return false;
            seen[ndim_of(in->i[k], A->nd)] = true;
        }
        *res = fresh(A->dt, A->nd, A->s, slot);
        res->fuzzy = A->fuzzy;
        res->rg = A->rg;
        return true;
    }
    case OP_TRIL:
        /* mode & 1 triu; diagonal i[1] */
        if (A->nd < 2) return false;
        *res = fresh(A->dt, A->nd, A->s, slot);
        res->fuzzy = A->fuzzy;
        res->rg = A->rg;
        return true;
    case OP_DIAGONAL: {
        /* a view: offset i[1], dims i[2], i[3] */
        if (A->nd < 2 || !dimok(in->i[2], A->nd) || !dimok(in->i[3], A->nd)) return false;
        int d1 = ndim_of(in->i[2], A->nd), d2 = ndim_of(in->i[3], A->nd);
        int64_t s1 = A->s[d1], s2 = A->s[d2], off = in->i[1];
        if (d1 == d2 || s1 == DT_B || s2 == DT_B) return false;
        int64_t len = off >= 0 ? (s1 < s2 - off ? s1 : s2 - off) : (s1 + off < s2 ? s1 + off : s2);
        if (len < 1) return false;
        *res = *A;
        int nr = 0;
        for (int k = 0; k < A->nd; k++) if (k != d1 && k != d2) res->s[nr++] = A->s[k];
        res->s[nr++] = len;
        res->nd = nr;
        res->contig = false;
        return true;
    }
    case OP_GATHER: case OP_SCATTER: {
        /* index of self's rank (ni), sizes i[1..]; gather: <= self's off
         * dim. scatter (b the src, self's dtype): mode & 3: src, value f,
         * add, reduce (& 0x70 the reduction, & 0x80 include_self);
         * index <= src's everywhere, <= self's off dim */
        int m = in->mode & 3;
        bool sc = in->op == OP_SCATTER, src = sc && m != 1;
        if (d < 0 || in->ni != A->nd || A->s[d] == DT_B || A->s[d] >= 64 || ix_n(in) != A->s[d]) return false;
        if (src && (!B || B->dt != A->dt || B->nd != A->nd)) return false;
        if (sc && !src && (B || (!f && !dt_integral(in->f)) || (A->dt == TT_BOOL && in->f != 0 && in->f != 1) ||
                           (A->dt == TT_U8 && in->f < 0)))
            return false;
        if (sc && m == 3 && ((in->mode >> 4) & 7) > 4) return false;
        if (sc && m >= 2 && A->dt == TT_BOOL) return false;
        for (int k = 0; k < A->nd; k++) {
            int64_t x = in->i[1 + k];
            if (x < 1 || (k != d && A->s[k] != DT_B && x > A->s[k]) || (A->s[k] == DT_B && k != d && x > 2)) return false;
            if (src && (B->s[k] == DT_B ? x > 2 : x > B->s[k])) return false;
            if (sc && ix_unique(in) && k == d && x > A->s[d]) return false;
            r[k] = x;
        }
        int64_t tot = 1;
        for (int k = 0; k < A->nd; k++) tot *= r[k];
        if (tot > 4096) return false; /* dt_index_data's buffers */
        if (!sc) {
            *res = fresh(A->dt, A->nd, r, slot);
            res->fuzzy = A->fuzzy;
            res->rg = A->rg;
            return true;
        }
        *res = fresh(A->dt, A->nd, A->s, slot);
        res->fuzzy = A->fuzzy || (src && B->fuzzy) || (f && m >= 2);
        res->rg = f && (A->rg || (src && B->rg));
        /* amax/amin/prod reductions' gradients pick among ties */
        if (res->rg && m == 3 && ((in->mode >> 4) & 7) >= 2 && res->fuzzy) return false;
        return true;
    }
    case OP_INDEX_SELECT: case OP_INDEX_ADD: case OP_INDEX_COPY: {
        /* a 1-d index of length i[1] into dim i[0]; add/copy: b the
         * source (self's shape but i[1] on dim), add: alpha f */
        bool sel = in->op == OP_INDEX_SELECT;
        if (d < 0 || in->ni != 1 || A->s[d] == DT_B || A->s[d] >= 64 || ix_n(in) != A->s[d] || in->i[1] < 1 ||
            in->i[1] > 4096)
            return false;
        if (in->op == OP_INDEX_COPY && in->i[1] > A->s[d]) return false;
        if (!sel) {
            if (!B || B->dt != A->dt || B->nd != A->nd || A->dt == TT_BOOL) return false;
            for (int k = 0; k < A->nd; k++)
                if (B->s[k] != (k == d ? in->i[1] : A->s[k])) return false;
            if (in->op == OP_INDEX_ADD && !f && !dt_integral(in->f)) return false;
            if (in->op == OP_INDEX_ADD && A->dt == TT_U8 && in->f < 0) return false;
            if (in->op == OP_INDEX_COPY && (in->mode & 1)) {
                /* index_copy_: gen.c's in-place rules; the write lands
                 * in every alias of self's storage */
                bool grad = p->grad != 0;
                if (!A->writable || A->rg || (grad && (T[A->root].rg || T[A->root].saved || B->rg)))
                    return false;
                if (A->root < p->nin && (p->in[A->root].val == VAL_INDEX || (grad && p->in[A->root].rg)))
                    return false;
                if (B->root == A->root) return false; /* overlapping source */
                *res = *A;
                for (int k = 0; B->fuzzy && k < slot; k++)
                    if (T[k].root == A->root) T[k].fuzzy = true;
                res->fuzzy |= B->fuzzy;
                return true;
            }
            *res = fresh(A->dt, A->nd, A->s, slot);
            res->fuzzy = A->fuzzy || B->fuzzy || (f && in->op == OP_INDEX_ADD);
            res->rg = f && (A->rg || B->rg);
            return true;
        }
        *res = fresh(A->dt, A->nd, A->s, slot);
        res->s[d] = in->i[1];
        res->fuzzy = A->fuzzy;
        res->rg = A->rg;
        return true;
    }
    case OP_SLICE_SCATTER: case OP_SELECT_SCATTER: {
        /* b the src: self's slice i[1]:i[2]:i[3] along dim (slice), or
         * self's shape without dim (select at i[1]) */
        bool sl = in->op == OP_SLICE_SCATTER;
        if (d < 0 || A->s[d] == DT_B || !B || B->dt != A->dt || B->nd != A->nd - (sl ? 0 : 1)) return false;
        int64_t n = A->s[d], st = in->i[1], en = in->i[2], step = in->i[3];
        if (sl && (st < 0 || en > n || st >= en || step < 1)) return false;
        if (!sl && (st < -n || st >= n)) return false;
        for (int k = 0, j = 0; k < A->nd; k++) {
            if (k == d && !sl) continue;
            int64_t want = k == d ? (en - st + step - 1) / step : A->s[k];
            if (B->s[j++] != want) return false;
        }
        *res = fresh(A->dt, A->nd, A->s, slot);
        res->fuzzy = A->fuzzy || B->fuzzy;
        res->rg = f && (A->rg || B->rg);
        return true;
    }
    case OP_LOGICAL: case OP_BITWISE: {
        /* mode & 3: and, or, xor, not; bitwise: & 4 with the integer
         * scalar i[1] (not on bool: PyTorch makes that i64). Values read
         * as true/false or bits: not on rounded values. */
        int m = in->mode & 3, nr = A->nd;
        bool bw = in->op == OP_BITWISE, sc = bw && (in->mode & 4) && m != 3;
        memcpy(r, A->s, sizeof(int64_t) * (size_t)A->nd);
        if (A->fuzzy || (bw && f) || (sc && (A->dt == TT_BOOL || in->i[1] < 0 || in->i[1] > 7))) return false;
        if (m != 3 && !sc) {
            if (!B || B->fuzzy || !bcast(A->nd, A->s, B->nd, B->s, &nr, r)) return false;
            if (bw && B->dt != A->dt) return false;
        }
        *res = fresh(bw ? A->dt : TT_BOOL, nr, r, slot);
        return true;
    }
    case OP_ISNAN:
        *res = fresh(TT_BOOL, A->nd, A->s, slot);
        res->contig = A->contig;
        return !A->fuzzy;
    case OP_ANY: {
        /* mode & 1 all, & 2 over dim i[0], & 4 keepdim, & 8 as any.dims /
         * all.dims ([i[0]], or None: every dim, kept with & 4) */
        bool dm = in->mode & 2, every_kept = (in->mode & 8) && !dm && (in->mode & 4);
        if (A->fuzzy || (dm && d < 0)) return false;
        int nr = 0;
        for (int k = 0; dm && k < A->nd; k++)
            if (k != d) r[nr++] = A->s[k];
            else if (in->mode & 4) r[nr++] = 1;
        for (int k = 0; every_kept && k < A->nd; k++)
            r[nr++] = 1;
        *res = fresh(A->dt == TT_U8 ? TT_U8 : TT_BOOL, nr, r, slot);
        return true;
    }
    case OP_REPEAT: {
        /* ni repeats (>= A's rank) i[0..]; a batch dim repeated once */
        int extra = in->ni - A->nd;
        double tot = 1;
        if (extra < 0 || in->ni > DT_MAX_ND) return false;
        for (int k = 0; k < in->ni; k++) {
            int64_t x = k < extra ? 1 : A->s[k - extra], rp = in->i[k];
            if (rp < 1 || (x == DT_B && rp != 1)) return false;
            r[k] = x == DT_B ? DT_B : x * rp;
            tot *= x == DT_B ? 8 : (double)r[k];
        }
        if (tot > 4096) return false;
        *res = fresh(A->dt, in->ni, r, slot);
        res->fuzzy = A->fuzzy;
        res->rg = A->rg;
        return true;
    }
    case OP_META:
        /* A rebuilt from its metadata as the ops give it: as_strided (a
         * view like A), or (mode & 1) a flat view of a contiguous A by
         * its numel (no batch dim: the model has no product of sizes);
         * as_strided has no derivative */
        if (!(in->mode & 1) && A->rg) return false;
        *res = *A;
        if (in->mode & 1) {
            int64_t n = 1;
            if (!A->contig) return false;
            for (int k = 0; k < A->nd; k++) {
                if (A->s[k] == DT_B) return false;
                n *= A->s[k];
            }
            res->nd = 1;
            res->s[0] = n;
        }
        return true;
    case OP_SPLIT: {
        /* one piece, a view of A as narrow's (the others released) */
        int64_t start, len;
        if (!dimok(in->i[0], A->nd)) return false;
        int d = ndim_of(in->i[0], A->nd);
        if (A->s[d] == DT_B || A->s[d] != in->i[3] || in->i[2] < 0 ||
            !split_piece(in, A->s[d], &start, &len) || len < 1)
            return false;
        *res = *A;
        res->s[d] = len;
        res->contig = false;
        return true;
    }
    default:
        return false;
    }
}

bool dt_model_index(const dt_program *p, const dt_instr *in, dt_vtype *T, int slot, dt_vtype *res)
{
    if (!model_index(p, in, T, slot, res))
        return false;
    /* sort's results are laid out like self, and so is flip's (seed
     * 10667: PyTorch's preserve format, though tt_ops.h says flip gives
     * a contiguous copy): any result is known contiguous only when self
     * is */
    if (in->a >= 0 && !T[in->a].contig) res->contig = false;
    return true;
}

/* ------------------------------------------------------- proposals */

/* A slot of a's dtype and rank (b's rules then check the sizes). */
/* OP_MODULO's Scalar divisor, from the mode's high bits. */
static double modulo_scalar(const dt_instr *in)
{
    static const double v[4] = {2.5, -1.5, 3, -0.75};
    return v[(in->mode / 5) & 3];
}

static int partner(rng *r, const dt_vtype *T, int nslots, const dt_vtype *A, bool shape)
{
    for (int t = 0; t < 24; t++) {
        int b = t < nslots ? nslots - 1 - t : rint_(r, nslots);
        if (T[b].dt == A->dt && T[b].nd == A->nd && (!shape || same_shape(&T[b], A) || rbool(r, 30)) && rbool(r, 60))
            return b;
    }
    return rint_(r, nslots);
}

bool dt_index_uses_b(int op)
{
    return op == OP_MAXIMUM || op == OP_MODULO || op == OP_CORE_FORMS || op == OP_SCATTER || op == OP_INDEX_ADD || op == OP_INDEX_COPY ||
           op == OP_SLICE_SCATTER || op == OP_SELECT_SCATTER || op == OP_LOGICAL || op == OP_BITWISE;
}

void dt_propose_index(rng *r, const dt_program *p, const dt_vtype *T, int nslots, int op, dt_instr *in)
{
    (void)p;
    const dt_vtype *A = &T[in->a];
    int nd = A->nd;
    int d = nd ? rint_(r, nd) : 0;
    int64_t sz = nd && A->s[d] != DT_B ? A->s[d] : 2;
    in->i[0] = nd && rbool(r, 30) ? d - nd : d;
    in->mode = op == OP_CUM ? rint_(r, 3) : rint_(r, 256);
    switch (op) {
    case OP_TOPK: case OP_KTH:
        in->i[1] = 1 + rint_(r, (int)sz);
        break;
    case OP_LSE: case OP_VAR: case OP_FLIP: case OP_ROLL:
        in->ni = op == OP_ROLL && rbool(r, 20) ? 0 : 1 + (nd > 1 && rbool(r, 30));
        if (op == OP_LSE) in->mode &= 7;
        for (int k = 1; k < in->ni; k++) in->i[k] = rint_(r, nd);
        for (int k = 3; k < 5; k++) in->i[k] = rint_(r, 7) - 3;
        break;
    case OP_TRIL: in->i[1] = rint_(r, 5) - 2; break;
    case OP_DIAGONAL: {
        in->i[1] = rint_(r, 5) - 2;
        in->i[2] = nd >= 2 ? nd - 2 - (nd > 2 && rbool(r, 30)) : 0;
        in->i[3] = nd - 1;
        if (rbool(r, 30)) { int64_t t = in->i[2]; in->i[2] = in->i[3]; in->i[3] = t; }
        break;
    }
    case OP_MAXIMUM: case OP_MODULO: in->b = partner(r, T, nslots, A, true); break;
    case OP_CORE_FORMS: in->b = partner(r, T, nslots, A, false); break;
    case OP_GATHER: case OP_SCATTER: {
        in->ni = nd;
        in->b = op == OP_SCATTER ? partner(r, T, nslots, A, true) : -1;
        const dt_vtype *S = op == OP_SCATTER && in->b >= 0 ? &T[in->b] : A;
        bool src = op == OP_SCATTER && (in->mode & 3) != 1 && S->nd == nd;
        for (int k = 0; k < nd; k++) {
            /* index <= self off dim (and on dim when unique), <= src */
            int64_t lim = 4;
            if (k != d || (op == OP_SCATTER && (in->mode & 3) < 2)) lim = A->s[k] == DT_B ? 2 : A->s[k];
            if (src) { int64_t sl = S->s[k] == DT_B ? 2 : S->s[k]; lim = sl < lim ? sl : lim; }
            in->i[1 + k] = 1 + rint_(r, (int)(lim < 1 ? 1 : lim));
        }
        if (op == OP_SCATTER && (in->mode & 3) == 1) in->b = -1;
        in->g = (double)(sz + 64 * rint_(r, 1000));
        break;
    }
    case OP_INDEX_SELECT: case OP_INDEX_ADD: case OP_INDEX_COPY:
        in->ni = 1;
        in->i[1] = 1 + rint_(r, 4);
        in->g = (double)(sz + 64 * rint_(r, 1000));
        if (op != OP_INDEX_SELECT) {
            /* a source: often self, or one differing only on dim */
            in->b = in->a;
            for (int t = 0; t < 24; t++) {
                int b = rint_(r, nslots);
                const dt_vtype *X = &T[b];
                bool ok = X->dt == A->dt && X->nd == nd && nd && X->s[d] != DT_B;
                for (int k = 0; ok && k < nd; k++) ok = k == d || X->s[k] == A->s[k];
                if (ok && rbool(r, 50)) { in->b = b; break; }
            }
            in->i[1] = T[in->b].nd > d ? T[in->b].s[d] : 1;
        }
        break;
    case OP_SLICE_SCATTER: case OP_SELECT_SCATTER: {
        /* a src of the slice's shape: one differing on dim (slice) or
         * with dim dropped (select), else a = b's rule fails */
        bool sl = op == OP_SLICE_SCATTER;
        in->b = -1;
        for (int t = 0; t < 40 && nd; t++) {
            int b = t < nslots ? nslots - 1 - t : rint_(r, nslots);
            const dt_vtype *X = &T[b];
            bool ok = X->dt == A->dt && X->nd == nd - (sl ? 0 : 1) && (!sl || (X->s[d] != DT_B && X->s[d] <= sz));
            for (int k = 0, j = 0; ok && k < nd; k++) {
                if (k == d && !sl) continue;
                ok = k == d || X->s[j] == A->s[k];
                j++;
            }
            if (ok) { in->b = b; break; }
        }
        int64_t m = sl && in->b >= 0 ? T[in->b].s[d] : 1;
        in->i[3] = sl && (m - 1) * 2 + 1 <= sz && rbool(r, 40) ? 2 : 1;
        int64_t span = (m - 1) * in->i[3] + 1;
        in->i[1] = sl ? rint_(r, (int)(sz - span + 1 > 0 ? sz - span + 1 : 1)) : rint_(r, (int)(2 * sz)) - sz;
        in->i[2] = in->i[1] + span;
        break;
    }
    case OP_LOGICAL: case OP_BITWISE:
        in->b = partner(r, T, nslots, A, false);
        in->i[1] = rint_(r, 8);
        if ((in->mode & 3) == 3 || (op == OP_BITWISE && (in->mode & 4))) in->b = -1; /* unary */
        break;
    case OP_REPEAT:
        in->ni = nd + (nd < DT_MAX_ND && rbool(r, 30));
        for (int k = 0; k < in->ni; k++) in->i[k] = 1 + (rbool(r, 40) ? rint_(r, 2) : 0);
        break;
    case OP_FULL_LIKE:
        if (in->mode & 1) in->a = -1;
        break;
    case OP_SPLIT:
        if (nd) {
            int d = rint_(r, nd);
            int64_t sz = A->s[d] == DT_B ? 1 : A->s[d];
            in->i[0] = rbool(r, 30) ? d - nd : d;
            in->i[1] = in->mode % 3 == 2 ? rint_(r, (int)sz + 1) : 1 + rint_(r, (int)(sz < 6 ? sz : 6));
            in->i[2] = rint_(r, 8);
            in->i[3] = sz;
        }
        break;
    default: break;
    }
}

/* ------------------------------------------------------ execution */

static const char *const reduce_names[5] = {"sum", "prod", "mean", "amax", "amin"};

/* One of a (values, indices) pair: both belong to the scope. *ix is read
 * after the call that sets it (an argument's order is unspecified). */
static tt_tensor *pick2(tt_tensor *v, tt_tensor **ix, bool want_ix) { return !v ? NULL : want_ix ? *ix : v; }

static tt_tensor *make_index(const dt_instr *in)
{
    int64_t s[DT_MAX_ND], v[4096];
    int nd = dt_index_data(in, s, v);
    return tt_from_data(nd, s, TT_I64, v);
}

/* One of the size-query ops on t (dim < 0: none); INT64_MIN on failure. */
static tt_size meta_query(const char *op, tt_tensor *t, int dim)
{
    tt_value out = {0}, args[2] = {tt_v_tensor(t), tt_v_int(dim)};
    if (tt_op_call(tt_op_find(op), args, dim < 0 ? 1 : 2, &out, 1) != TT_OK) return INT64_MIN;
    return out.u.i;
}

tt_tensor *dt_exec_index(const dt_instr *in, tt_tensor **S)
{
    tt_tensor *a = in->a >= 0 ? S[in->a] : NULL, *b = in->b >= 0 ? S[in->b] : NULL, *ix = NULL;
    int dim = (int)in->i[0];
    switch (in->op) {
    case OP_SORT: {
        bool desc = in->mode & 4;
        switch (in->mode & 3) {
        case 0: return tt_sort(a, dim, desc, NULL);
        case 1: return pick2(tt_sort(a, dim, desc, &ix), &ix, true);
        case 2: return tt_argsort(a, dim, desc);
        default: return tt_sort_stable(a, true, dim, desc, NULL);
        }
    }
    case OP_TOPK:
        if (in->mode & 4) return pick2(tt_topk(a, in->i[1], dim, in->mode & 1, in->mode & 2, &ix), &ix, true);
        return tt_topk(a, in->i[1], dim, in->mode & 1, in->mode & 2, NULL);
    case OP_MAX_DIM: {
        bool keep = in->mode & 1;
        if (in->mode & 8) return tt_argmin(a, dim, keep);
        tt_tensor *(*fn)(const tt_tensor *, int, bool, tt_tensor **) = in->mode & 2 ? tt_min_dim : tt_max_dim;
        if (in->mode & 4) return pick2(fn(a, dim, keep, &ix), &ix, true);
        return fn(a, dim, keep, NULL);
    }
    case OP_KTH: {
        bool keep = in->mode & 4, wix = in->mode & 8;
        switch (in->mode & 3) {
        case 0: return pick2(tt_kthvalue(a, in->i[1], dim, keep, wix ? &ix : NULL), &ix, wix);
        case 1: return pick2(tt_median_dim(a, dim, keep, wix ? &ix : NULL), &ix, wix);
        default: return tt_median(a);
        }
    }
    case OP_CUM:
        return in->mode == 0 ? tt_cumsum(a, dim) : in->mode == 1 ? tt_cumprod(a, dim) : tt_logcumsumexp(a, dim);
    case OP_LSE:
        switch (in->mode & 3) {
        case 0: return tt_logsumexp(a, in->ni, in->i, in->mode & 4);
        case 1: return tt_prod(a);
        default: return tt_prod_dim(a, dim, in->mode & 4);
        }
    case OP_VAR:
        return (in->mode & 2 ? tt_std : tt_var)(a, in->ni, in->i, in->mode & 4 ? 1 : 0, in->mode & 1);
    case OP_MAXIMUM: return in->mode & 1 ? tt_minimum(a, b) : tt_maximum(a, b);
    case OP_CORE_FORMS:
        switch (in->mode % 7) {
        case 0: case 1:
            return tt_call(tt_op_find(in->mode % 7 ? "tt::_log_softmax" : "tt::_softmax"),
                           tt_v_tensor(a), tt_v_int(dim), tt_v_bool(false));
        case 2:
            return tt_call(tt_op_find("tt::var.dim"), tt_v_tensor(a), tt_v_ints(1, &in->i[0]),
                           tt_v_bool(in->mode & 8), tt_v_bool(in->mode & 16));
        case 3: return tt_addmm(tt_select(b, 0, 0), a, b, 0.5, -1.5);
        case 4: return tt_call(tt_op_find("tt::copy"), tt_v_tensor(a), tt_v_tensor(a));
        case 5: return tt_call(tt_op_find("tt::fill.Scalar"), tt_v_tensor(a), tt_v_float(in->f));
        default: return tt_call(tt_op_find("tt::alias"), tt_v_tensor(a));
        }
    case OP_MODULO:
        switch (in->mode % 5) {
        case 0: return tt_fmod(a, b);
        case 1: return tt_remainder(a, b);
        case 2: {
            if (!((in->mode / 5) & 1)) return tt_atan2(a, b);
            tt_tensor *out = tt_clone(a);
            if (out && tt_atan2_out(out, a, b)) out = tt_release(out);
            return out;
        }
        case 3: return tt_fmod_scalar(a, modulo_scalar(in));
        default: return tt_remainder_scalar(a, modulo_scalar(in));
        }
    case OP_FLIP: return tt_flip(a, in->ni, in->i);
    case OP_ROLL: return tt_roll(a, in->ni ? in->ni : 1, in->i + 3, in->ni, in->i);
    case OP_TRIL: return in->mode & 1 ? tt_triu(a, in->i[1]) : tt_tril(a, in->i[1]);
    case OP_DIAGONAL: return tt_diagonal(a, in->i[1], (int)in->i[2], (int)in->i[3]);
    case OP_SLICE_SCATTER: return tt_slice_scatter(a, b, dim, in->i[1], in->i[2], in->i[3]);
    case OP_SELECT_SCATTER: return tt_select_scatter(a, b, dim, in->i[1]);
    case OP_LOGICAL:
        switch (in->mode & 3) {
        case 0: return tt_logical_and(a, b);
        case 1: return tt_logical_or(a, b);
        case 2: return tt_logical_xor(a, b);
        default: return tt_logical_not(a);
        }
    case OP_BITWISE:
        if ((in->mode & 3) == 3) return tt_bitwise_not(a);
        if (in->mode & 4) {
            int64_t x = in->i[1];
            return (in->mode & 3) == 0 ? tt_bitwise_and_scalar(a, x) : (in->mode & 3) == 1 ? tt_bitwise_or_scalar(a, x)
                                                                                        : tt_bitwise_xor_scalar(a, x);
        }
        return (in->mode & 3) == 0 ? tt_bitwise_and(a, b) : (in->mode & 3) == 1 ? tt_bitwise_or(a, b) : tt_bitwise_xor(a, b);
    case OP_ISNAN: return in->mode & 1 ? tt_isinf(a) : tt_isnan(a);
    case OP_ANY:
        if (in->mode & 8)
            return (in->mode & 1 ? tt_all_dims : tt_any_dims)(a, in->mode & 2 ? 1 : 0, in->i,
                                                              in->mode & 4);
        if (in->mode & 2) return (in->mode & 1 ? tt_all_dim : tt_any_dim)(a, dim, in->mode & 4);
        return in->mode & 1 ? tt_all(a) : tt_any(a);
    case OP_REPEAT: return tt_repeat(a, in->ni, in->i);
    case OP_FULL_LIKE:
        if (in->mode & 1) return tt_scalar_tensor(in->f, (tt_dtype)((in->mode >> 1) % TT_DTYPE_COUNT));
        return tt_full_like(a, in->f);
    case OP_META: {
        tt_size sizes[TT_MAX_DIMS], strides[TT_MAX_DIMS], off;
        int nd = tt_ndim(a);
        if (in->mode & 1) {
            off = meta_query("tt::sym_numel", a, -1);
            return off == INT64_MIN ? NULL : tt_view(a, 1, &off);
        }
        for (int d = 0; d < nd; d++) {
            sizes[d] = meta_query("tt::sym_size.int", a, d);
            strides[d] = meta_query("tt::sym_stride.int", a, d);
            if (sizes[d] == INT64_MIN || strides[d] == INT64_MIN) return NULL;
        }
        off = meta_query("tt::sym_storage_offset", a, -1);
        return off == INT64_MIN ? NULL : tt_as_strided(a, nd, sizes, strides, off);
    }
    case OP_SPLIT: {
        /* the sizes come from the model (i[3]), never from C arithmetic
         * on a traced size */
        tt_tensor *pieces[DT_SPLIT_MAX] = {0};
        int n = 0;
        tt_status st;
        if (in->mode % 3 == 0)
            st = tt_split(a, in->i[1], dim, DT_SPLIT_MAX, pieces, &n);
        else if (in->mode % 3 == 1)
            st = tt_chunk(a, in->i[1], dim, pieces, &n);
        else
            st = tt_split_with_sizes(a, n = 2, (const tt_size[]){in->i[1], in->i[3] - in->i[1]}, dim,
                                     pieces);
        if (st) return NULL;
        int k = (int)(in->i[2] % n);
        for (int j = 0; j < n; j++)
            if (j != k) tt_release(pieces[j]);
        return pieces[k];
    }
    default: break;
    }
    if (!(ix = make_index(in)))
        return NULL;
    switch (in->op) {
    case OP_GATHER: return tt_gather(a, dim, ix);
    case OP_SCATTER:
        switch (in->mode & 3) {
        case 0: return tt_scatter(a, dim, ix, b);
        case 1: return tt_scatter_value(a, dim, ix, in->f);
        case 2: return tt_scatter_add(a, dim, ix, b);
        default: return tt_scatter_reduce(a, dim, ix, b, reduce_names[(in->mode >> 4) & 7], in->mode & 0x80);
        }
    case OP_INDEX_SELECT: return tt_index_select(a, dim, ix);
    case OP_INDEX_ADD: return tt_index_add(a, dim, ix, b, in->f);
    case OP_INDEX_COPY:
        if (in->mode & 1) return tt_index_copy_(a, dim, ix, b) == TT_OK ? a : NULL;
        return tt_index_copy(a, dim, ix, b);
    default:
        tt_error(TT_EINVAL, "difftest: unknown op %d", in->op);
        return NULL;
    }
}

/* ---------------------------------------------------------- printing */

static const char *tf(bool b) { return b ? "true" : "false"; }

static void pr_list(FILE *f, int n, const int64_t *v)
{
    fprintf(f, "(const int64_t[]){");
    for (int k = 0; k < n; k++) fprintf(f, "%s%lld", k ? ", " : "", (long long)v[k]);
    fprintf(f, n ? "}" : "0}");
}

static void pr_index(FILE *f, const dt_instr *in)
{
    int64_t s[DT_MAX_ND], v[4096], n = 1;
    int nd = dt_index_data(in, s, v);
    for (int k = 0; k < nd; k++) n *= s[k];
    fprintf(f, "ixt(%d, ", nd);
    pr_list(f, nd, s);
    fprintf(f, ", ");
    pr_list(f, (int)n, v);
    fprintf(f, ")");
}

bool dt_print_index(FILE *f, const dt_instr *in)
{
    int A = in->a, B = in->b, dim = (int)in->i[0];
    switch (in->op) {
    case OP_SORT: {
        const char *desc = tf(in->mode & 4);
        switch (in->mode & 3) {
        case 0: fprintf(f, "tt_sort(v%d, %d, %s, NULL)", A, dim, desc); break;
        case 1: fprintf(f, "pick2(tt_sort(v%d, %d, %s, &ix_out), 1)", A, dim, desc); break;
        case 2: fprintf(f, "tt_argsort(v%d, %d, %s)", A, dim, desc); break;
        default: fprintf(f, "tt_sort_stable(v%d, true, %d, %s, NULL)", A, dim, desc); break;
        }
        return true;
    }
    case OP_TOPK:
        fprintf(f, "%stt_topk(v%d, %lld, %d, %s, %s, %s)%s", in->mode & 4 ? "pick2(" : "", A, (long long)in->i[1], dim,
                tf(in->mode & 1), tf(in->mode & 2), in->mode & 4 ? "&ix_out" : "NULL", in->mode & 4 ? ", 1)" : "");
        return true;
    case OP_MAX_DIM:
        if (in->mode & 8) fprintf(f, "tt_argmin(v%d, %d, %s)", A, dim, tf(in->mode & 1));
        else
            fprintf(f, "%stt_%s_dim(v%d, %d, %s, %s)%s", in->mode & 4 ? "pick2(" : "", in->mode & 2 ? "min" : "max", A,
                    dim, tf(in->mode & 1), in->mode & 4 ? "&ix_out" : "NULL", in->mode & 4 ? ", 1)" : "");
        return true;
    case OP_KTH: {
        bool w = in->mode & 8;
        if ((in->mode & 3) == 2) { fprintf(f, "tt_median(v%d)", A); return true; }
        fprintf(f, "%s", w ? "pick2(" : "");
        if ((in->mode & 3) == 0) fprintf(f, "tt_kthvalue(v%d, %lld, ", A, (long long)in->i[1]);
        else fprintf(f, "tt_median_dim(v%d, ", A);
        fprintf(f, "%d, %s, %s)%s", dim, tf(in->mode & 4), w ? "&ix_out" : "NULL", w ? ", 1)" : "");
        return true;
    }
    case OP_CUM:
        fprintf(f, "tt_%s(v%d, %d)", in->mode == 0 ? "cumsum" : in->mode == 1 ? "cumprod" : "logcumsumexp", A, dim);
        return true;
    case OP_LSE:
        if ((in->mode & 3) == 0) { fprintf(f, "tt_logsumexp(v%d, %d, ", A, in->ni); pr_list(f, in->ni, in->i); fprintf(f, ", %s)", tf(in->mode & 4)); }
        else if ((in->mode & 3) == 1) fprintf(f, "tt_prod(v%d)", A);
        else fprintf(f, "tt_prod_dim(v%d, %d, %s)", A, dim, tf(in->mode & 4));
        return true;
    case OP_VAR:
        fprintf(f, "tt_%s(v%d, %d, ", in->mode & 2 ? "std" : "var", A, in->ni);
        pr_list(f, in->ni, in->i);
        fprintf(f, ", %d, %s)", in->mode & 4 ? 1 : 0, tf(in->mode & 1));
        return true;
    case OP_MAXIMUM: fprintf(f, "tt_%s(v%d, v%d)", in->mode & 1 ? "minimum" : "maximum", A, B); return true;
    case OP_CORE_FORMS:
        switch (in->mode % 7) {
        case 0: case 1:
            fprintf(f, "tt_call(tt_op_find(\"tt::%s\"), tt_v_tensor(v%d), tt_v_int(%d), "
                       "tt_v_bool(false))", in->mode % 7 ? "_log_softmax" : "_softmax", A, dim);
            return true;
        case 2:
            fprintf(f, "tt_call(tt_op_find(\"tt::var.dim\"), tt_v_tensor(v%d), "
                       "tt_v_ints(1, (int64_t[]){%d}), tt_v_bool(%s), tt_v_bool(%s))",
                    A, (int)in->i[0], tf(in->mode & 8), tf(in->mode & 16));
            return true;
        case 3: fprintf(f, "tt_addmm(tt_select(v%d, 0, 0), v%d, v%d, 0.5, -1.5)", B, A, B); return true;
        case 4: fprintf(f, "tt_call(tt_op_find(\"tt::copy\"), tt_v_tensor(v%d), tt_v_tensor(v%d))", A, A); return true;
        case 5:
            fprintf(f, "tt_call(tt_op_find(\"tt::fill.Scalar\"), tt_v_tensor(v%d), tt_v_float(%.17g))", A, in->f);
            return true;
        default: fprintf(f, "tt_call(tt_op_find(\"tt::alias\"), tt_v_tensor(v%d))", A); return true;
        }
    case OP_MODULO: {
        static const char *const fn[5] = {"fmod", "remainder", "atan2", "fmod_scalar",
                                          "remainder_scalar"};
        int m = in->mode % 5;
        if (m == 2 && (in->mode / 5) & 1)
            fprintf(f, "({ tt_tensor *o = tt_clone(v%d); tt_atan2_out(o, v%d, v%d); o; })", A, A, B);
        else if (m < 3) fprintf(f, "tt_%s(v%d, v%d)", fn[m], A, B);
        else fprintf(f, "tt_%s(v%d, %g)", fn[m], A, modulo_scalar(in));
        return true;
    }
    case OP_FLIP: fprintf(f, "tt_flip(v%d, %d, ", A, in->ni); pr_list(f, in->ni, in->i); fprintf(f, ")"); return true;
    case OP_ROLL:
        fprintf(f, "tt_roll(v%d, %d, ", A, in->ni ? in->ni : 1);
        pr_list(f, in->ni ? in->ni : 1, in->i + 3);
        fprintf(f, ", %d, ", in->ni);
        pr_list(f, in->ni, in->i);
        fprintf(f, ")");
        return true;
    case OP_TRIL: fprintf(f, "tt_%s(v%d, %lld)", in->mode & 1 ? "triu" : "tril", A, (long long)in->i[1]); return true;
    case OP_DIAGONAL:
        fprintf(f, "tt_diagonal(v%d, %lld, %d, %d)", A, (long long)in->i[1], (int)in->i[2], (int)in->i[3]);
        return true;
    case OP_GATHER: fprintf(f, "tt_gather(v%d, %d, ", A, dim); pr_index(f, in); fprintf(f, ")"); return true;
    case OP_SCATTER: {
        static const char *fn[4] = {"tt_scatter", "tt_scatter_value", "tt_scatter_add", "tt_scatter_reduce"};
        fprintf(f, "%s(v%d, %d, ", fn[in->mode & 3], A, dim);
        pr_index(f, in);
        if ((in->mode & 3) == 1) fprintf(f, ", %.17g)", in->f);
        else if ((in->mode & 3) == 3)
            fprintf(f, ", v%d, \"%s\", %s)", B, reduce_names[(in->mode >> 4) & 7], tf(in->mode & 0x80));
        else fprintf(f, ", v%d)", B);
        return true;
    }
    case OP_INDEX_SELECT: fprintf(f, "tt_index_select(v%d, %d, ", A, dim); pr_index(f, in); fprintf(f, ")"); return true;
    case OP_INDEX_ADD:
        fprintf(f, "tt_index_add(v%d, %d, ", A, dim); pr_index(f, in); fprintf(f, ", v%d, %.17g)", B, in->f);
        return true;
    case OP_INDEX_COPY:
        /* index_copy_ (mode & 1): its status as the target, or NULL */
        fprintf(f, "%stt_index_copy%s(v%d, %d, ", in->mode & 1 ? "ok_then(" : "", in->mode & 1 ? "_" : "", A, dim);
        pr_index(f, in);
        if (in->mode & 1) fprintf(f, ", v%d), v%d)", B, A);
        else fprintf(f, ", v%d)", B);
        return true;
    case OP_SLICE_SCATTER:
        fprintf(f, "tt_slice_scatter(v%d, v%d, %d, %lld, %lld, %lld)", A, B, dim, (long long)in->i[1],
                (long long)in->i[2], (long long)in->i[3]);
        return true;
    case OP_SELECT_SCATTER: fprintf(f, "tt_select_scatter(v%d, v%d, %d, %lld)", A, B, dim, (long long)in->i[1]); return true;
    case OP_LOGICAL: case OP_BITWISE: {
        static const char *nm[4] = {"and", "or", "xor", "not"};
        const char *kind = in->op == OP_LOGICAL ? "logical" : "bitwise";
        int m = in->mode & 3;
        if (m == 3) fprintf(f, "tt_%s_not(v%d)", kind, A);
        else if (in->op == OP_BITWISE && (in->mode & 4)) fprintf(f, "tt_bitwise_%s_scalar(v%d, %lld)", nm[m], A, (long long)in->i[1]);
        else fprintf(f, "tt_%s_%s(v%d, v%d)", kind, nm[m], A, B);
        return true;
    }
    case OP_ISNAN: fprintf(f, "tt_%s(v%d)", in->mode & 1 ? "isinf" : "isnan", A); return true;
    case OP_ANY:
        if (in->mode & 8)
            fprintf(f, "tt_%s_dims(v%d, %d, (int64_t[]){%d}, %s)", in->mode & 1 ? "all" : "any", A,
                    in->mode & 2 ? 1 : 0, (int)in->i[0], tf(in->mode & 4));
        else if (in->mode & 2) fprintf(f, "tt_%s_dim(v%d, %d, %s)", in->mode & 1 ? "all" : "any", A, dim, tf(in->mode & 4));
        else fprintf(f, "tt_%s(v%d)", in->mode & 1 ? "all" : "any", A);
        return true;
    case OP_REPEAT: fprintf(f, "tt_repeat(v%d, %d, ", A, in->ni); pr_list(f, in->ni, in->i); fprintf(f, ")"); return true;
    case OP_META:
        if (in->mode & 1) fprintf(f, "tt_view(v%d, 1, (tt_size[]){sym_numel(v%d)})", A, A);
        else fprintf(f, "tt_as_strided(v%d, from sym_size.int, sym_stride.int, sym_storage_offset)", A);
        return true;
    case OP_SPLIT: {
        /* piece(call, k): the k-th of the pieces, the others released */
        int64_t start = 0, len = 0, n;
        split_piece(in, in->i[3], &start, &len);
        n = in->mode % 3 == 2 ? 2 : in->mode % 3 == 0 ? (in->i[3] + in->i[1] - 1) / in->i[1] : 0;
        if (in->mode % 3 == 0)
            fprintf(f, "piece(tt_split(v%d, %lld, %d, 16, p, &n), %lld)", A, (long long)in->i[1], dim,
                    (long long)(in->i[2] % (n ? n : 1)));
        else if (in->mode % 3 == 1)
            fprintf(f, "piece(tt_chunk(v%d, %lld, %d, p, &n), starting at %lld)", A, (long long)in->i[1],
                    dim, (long long)start);
        else
            fprintf(f, "piece(tt_split_with_sizes(v%d, 2, (tt_size[]){%lld, %lld}, %d, p), %lld)", A,
                    (long long)in->i[1], (long long)(in->i[3] - in->i[1]), dim, (long long)(in->i[2] % 2));
        return true;
    }
    case OP_FULL_LIKE:
        if (in->mode & 1) {
            static const char *dn[] = {"TT_F32", "TT_F64", "TT_I64", "TT_I32", "TT_U8", "TT_BOOL"};
            fprintf(f, "tt_scalar_tensor(%.17g, %s)", in->f, dn[(in->mode >> 1) % TT_DTYPE_COUNT]);
        } else {
            fprintf(f, "tt_full_like(v%d, %.17g)", A, in->f);
        }
        return true;
    default: return false;
    }
}
