/* tt-difftest: the op table, the shape/dtype model, the generator and the
 * interpreter (dt_program_fn). See difftest.h. */
#include "dt_gen.h"

#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

const char *const dt_op_names[OP_COUNT] = {
#define X_NAME(id, name, covers) name,
    DT_OPS(X_NAME)
#undef X_NAME
};
static const char *op_covers[] = {
#define X_COV(id, name, covers) covers,
    DT_OPS(X_COV)
#undef X_COV
};

int dt_plant;

const char *dt_op_name(int op) { return op >= 0 && op < OP_COUNT ? dt_op_names[op] : "?"; }
int dt_op_count(void) { return OP_COUNT; }
const char *dt_op_covers(int op) { return op >= 0 && op < OP_COUNT ? op_covers[op] : ""; }

const char *const dt_unary_fn[U_COUNT] = {"tt_neg", "tt_exp", "tt_log", "tt_sqrt", "tt_rsqrt",
                                          "tt_sin", "tt_cos", "tt_tanh", "tt_sigmoid", "tt_relu",
                                          "tt_gelu", "tt_gelu_tanh", "tt_abs", "sign",
                                          "tt_acos", "tt_asin", "tt_atan", "tt_acosh", "tt_asinh", "tt_atanh",
                                          "tt_sinh", "tt_cosh", "tt_tan", "tt_erf", "tt_expm1", "tt_log1p",
                                          "tt_log2", "tt_log10", "tt_reciprocal", "tt_floor", "tt_ceil", "tt_trunc",
                                          "tt_round"};
const char *const dt_cmp_fn[6] = {"tt_eq", "tt_ne", "tt_lt", "tt_le", "tt_gt", "tt_ge"};
const char *const dt_cmp_sc_op[6] = {"tt::eq.Scalar", "tt::ne.Scalar", "tt::lt.Scalar",
                                     "tt::le.Scalar", "tt::gt.Scalar", "tt::ge.Scalar"};
const char *const dt_modes[2] = {"trunc", "floor"};
static const tt_dtype all_dt[] = {TT_F32, TT_F64, TT_I64, TT_I32, TT_U8, TT_BOOL};

/* ------------------------------------------------------------------ rng */

uint64_t rnext(rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
int rint_(rng *r, int n) { return n <= 0 ? 0 : (int)(rnext(r) % (uint64_t)n); }
bool rbool(rng *r, int pct) { return rint_(r, 100) < pct; }

/* ---------------------------------------------------------------- model */

bool is_f(tt_dtype d) { return d == TT_F32 || d == TT_F64; }
static int rank_of(tt_dtype d)
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
/* With these dtypes PyTorch's lattice is a chain. */
static tt_dtype promote(tt_dtype a, tt_dtype b) { return rank_of(a) >= rank_of(b) ? a : b; }
static bool can_cast(tt_dtype from, tt_dtype to)
{
    if (is_f(from) && !is_f(to))
        return false;
    if (from != TT_BOOL && to == TT_BOOL)
        return false;
    return true;
}

/* PyTorch's result_type: dimensioned tensors over 0-dim tensors over
 * Python numbers, a lower group winning only with a higher category. */
typedef struct { bool has[3]; tt_dtype dt[3]; } rstate;
static void rs_tensor(rstate *s, const dt_vtype *v)
{
    int g = v->nd == 0 ? 1 : 0;
    s->dt[g] = s->has[g] ? promote(s->dt[g], v->dt) : v->dt;
    s->has[g] = true;
}
bool dt_integral(double x) { return x == floor(x) && fabs(x) < 9e15; }
static void rs_scalar(rstate *s, double x)
{
    tt_dtype d = dt_integral(x) ? TT_I64 : TT_F32; /* the library passes whole numbers as ints */
    s->dt[2] = s->has[2] ? promote(s->dt[2], d) : d;
    s->has[2] = true;
}
static void combine(bool hh, tt_dtype h, bool hl, tt_dtype l, bool *ho, tt_dtype *o)
{
    *ho = hh || hl;
    if (!hh) { *o = l; return; }
    if (!hl || is_f(h)) { *o = h; return; }
    if (h == TT_BOOL || is_f(l)) { *o = promote(h, l); return; }
    *o = h;
}
static tt_dtype rs_result(const rstate *s)
{
    bool h1, h2;
    tt_dtype d1, d2;
    combine(s->has[1], s->dt[1], s->has[2], s->dt[2], &h1, &d1);
    combine(s->has[0], s->dt[0], h1, d1, &h2, &d2);
    return d2;
}

bool bcast(int na, const int64_t *a, int nb, const int64_t *b, int *nr, int64_t *r)
{
    int n = na > nb ? na : nb;
    if (n > DT_MAX_ND)
        return false;
    for (int i = 0; i < n; i++) {
        int64_t x = i < n - na ? 1 : a[i - (n - na)];
        int64_t y = i < n - nb ? 1 : b[i - (n - nb)];
        if (x == y || y == 1) r[i] = x;
        else if (x == 1) r[i] = y;
        else return false;
    }
    *nr = n;
    return true;
}

int64_t cnumel(const dt_vtype *v, int *nb) /* concrete part; *nb: batch dims */
{
    int64_t n = 1;
    *nb = 0;
    for (int i = 0; i < v->nd; i++) {
        if (v->s[i] == DT_B) (*nb)++;
        else n *= v->s[i];
    }
    return n;
}
static int normdim(int64_t d, int nd) { return (int)(d < 0 ? d + nd : d); }
static bool dim_ok(int64_t d, int nd)
{
    int m = nd == 0 ? 1 : nd;
    return d >= -m && d < m;
}

dt_vtype fresh(tt_dtype dt, int nd, const int64_t *s, int slot)
{
    dt_vtype v;
    memset(&v, 0, sizeof v);
    v.dt = dt;
    v.nd = nd;
    if (nd)
        memcpy(v.s, s, sizeof(int64_t) * (size_t)nd);
    v.writable = true;
    v.contig = true;
    v.root = slot;
    return v;
}

/* The instruction's result, or false when it is not a valid call. T holds
 * the slots before it; `slot` is its own. The rules are PyTorch's. */
static bool model(const dt_program *p, const dt_instr *in, dt_vtype *T, int slot, dt_vtype *res)
{
    const dt_vtype *A = in->a >= 0 && in->a < slot ? &T[in->a] : NULL;
    const dt_vtype *B = in->b >= 0 && in->b < slot ? &T[in->b] : NULL;
    const dt_vtype *C = in->c >= 0 && in->c < slot ? &T[in->c] : NULL;
    bool needA = in->op != OP_FULL && in->op != OP_ARANGE && in->op != OP_LINSPACE && in->op != OP_BREAK &&
                 in->op != OP_RANDPERM;
    if (needA && !A)
        return false;
    if (in->a >= slot || in->b >= slot || in->c >= slot || in->d >= slot)
        return false;
    rstate rs;
    memset(&rs, 0, sizeof rs);
    int nr = 0;
    int64_t r[DT_MAX_ND + 1] = {0};
    bool grad = p->grad != 0;
    switch (in->op) {
    case OP_ADD: case OP_SUB: case OP_MUL: case OP_DIV: case OP_POW: case OP_ADDS:
    case OP_CMP: case OP_DIV_MODE: {
        if (!B || !bcast(A->nd, A->s, B->nd, B->s, &nr, r))
            return false;
        rs_tensor(&rs, A);
        rs_tensor(&rs, B);
        tt_dtype d = rs_result(&rs);
        bool anyb = A->dt == TT_BOOL || B->dt == TT_BOOL;
        if (in->op == OP_SUB && anyb) return false;
        if (in->op == OP_DIV && anyb) return false;
        if (in->op == OP_POW && (!is_f(A->dt) || B->dt == TT_BOOL)) return false;
        if (in->op == OP_ADDS && (d == TT_BOOL || (!is_f(d) && !dt_integral(in->f)))) return false;
        if (in->op == OP_DIV_MODE && (!is_f(B->dt) || anyb || A->fuzzy || B->fuzzy)) return false;
        if (in->op == OP_CMP && (A->fuzzy || B->fuzzy)) return false;
        if (in->op == OP_CMP) d = TT_BOOL;
        if (in->op == OP_DIV) d = is_f(d) ? d : TT_F32;
        *res = fresh(d, nr, r, slot);
        res->contig = A->contig && B->contig;
        res->fuzzy = is_f(d) && in->op != OP_CMP;
        res->rg = (A->rg || B->rg) && is_f(d) && in->op != OP_CMP;
        return true;
    }
    case OP_ADD_SC: case OP_SUB_SC: case OP_MUL_SC: case OP_DIV_SC: case OP_POW_SC:
    case OP_DIV_SC_MODE: case OP_CMP_SC: {
        rs_tensor(&rs, A);
        rs_scalar(&rs, in->f);
        tt_dtype d = rs_result(&rs);
        if (A->dt == TT_BOOL && in->op != OP_CMP_SC) return false;
        if (in->op == OP_DIV_SC && !is_f(d)) d = TT_F32;
        if (in->op == OP_POW_SC && !is_f(A->dt) && !(dt_integral(in->f) && in->f >= 0)) return false;
        if (in->op == OP_DIV_SC_MODE && (in->f == 0 || A->fuzzy)) return false;
        if (in->op == OP_CMP_SC && A->fuzzy) return false;
        if (in->op == OP_CMP_SC) d = TT_BOOL;
        *res = fresh(d, A->nd, A->s, slot);
        res->contig = A->contig;
        res->fuzzy = is_f(d) && in->op != OP_CMP_SC;
        res->rg = A->rg && is_f(d) && in->op != OP_CMP_SC;
        return true;
    }
    case OP_SC_POW:
        if (!is_f(A->dt) || !(in->f > 0))
            return false;
        *res = fresh(A->dt, A->nd, A->s, slot);
        res->contig = A->contig;
        res->fuzzy = true;
        res->rg = A->rg;
        return true;
    case OP_WHERE: case OP_WHERE_SC: case OP_WHERE_OSC: case OP_CLAMP_T: {
        /* where: a = condition (bool), b/c the values; clamp_tensor: a
         * self, b min, c max (either may be absent). */
        int n1, n2;
        int64_t r1[DT_MAX_ND + 1] = {0};
        if (in->op == OP_WHERE || in->op == OP_WHERE_SC || in->op == OP_WHERE_OSC) {
            if (A->dt != TT_BOOL) return false;
            const dt_vtype *X = in->op == OP_WHERE_SC ? NULL : B;
            const dt_vtype *Y = in->op == OP_WHERE_OSC ? NULL : (in->op == OP_WHERE ? C : B);
            if ((in->op != OP_WHERE_SC && !X) || (in->op != OP_WHERE_OSC && !Y)) return false;
            n1 = A->nd;
            memcpy(r1, A->s, sizeof r1);
            if (X) { if (!bcast(n1, r1, X->nd, X->s, &n2, r)) return false; n1 = n2; memcpy(r1, r, sizeof r); rs_tensor(&rs, X); }
            if (Y) { if (!bcast(n1, r1, Y->nd, Y->s, &n2, r)) return false; n1 = n2; memcpy(r1, r, sizeof r); rs_tensor(&rs, Y); }
            if (in->op != OP_WHERE) rs_scalar(&rs, in->f);
            tt_dtype d = rs_result(&rs);
            *res = fresh(d, n1, r1, slot);
            res->fuzzy = (X && X->fuzzy) || (Y && Y->fuzzy);
            res->rg = is_f(d) && ((X && X->rg) || (Y && Y->rg));
            res->contig = false;
            return true;
        }
        if (!B && !C) return false;
        if (A->dt == TT_BOOL) return false;
        n1 = A->nd;
        memcpy(r1, A->s, sizeof r1);
        rs_tensor(&rs, A);
        if (B) { if (B->dt == TT_BOOL || !bcast(n1, r1, B->nd, B->s, &n2, r)) return false; n1 = n2; memcpy(r1, r, sizeof r); rs_tensor(&rs, B); }
        if (C) { if (C->dt == TT_BOOL || !bcast(n1, r1, C->nd, C->s, &n2, r)) return false; n1 = n2; memcpy(r1, r, sizeof r); rs_tensor(&rs, C); }
        tt_dtype d = rs_result(&rs);
        *res = fresh(d, n1, r1, slot);
        res->fuzzy = A->fuzzy || (B && B->fuzzy) || (C && C->fuzzy);
        res->rg = is_f(d) && (A->rg || (B && B->rg) || (C && C->rg));
        res->contig = false;
        return true;
    }
    case OP_WHERE_SS:
        if (A->dt != TT_BOOL) return false;
        rs_scalar(&rs, in->f);
        rs_scalar(&rs, in->g);
        *res = fresh(rs_result(&rs), A->nd, A->s, slot);
        res->contig = A->contig;
        return true;
    case OP_AS_STRIDED: {
        /* over the storage of a tensor that has at least its concrete
         * numel of elements (not an expand: its storage is smaller) */
        int nbd;
        int64_t n = cnumel(A, &nbd), hi = in->i[4];
        if (!A->writable || A->rg || in->ni < 1 || in->ni > 2 || in->i[4] < 0) return false;
        for (int k = 0; k < in->ni; k++) {
            if (in->i[k] < 1 || in->i[2 + k] < 0) return false;
            hi += (in->i[k] - 1) * in->i[2 + k];
            r[k] = in->i[k];
        }
        if (hi >= n) return false;
        *res = *A;
        res->nd = in->ni;
        memcpy(res->s, r, sizeof(int64_t) * (size_t)in->ni);
        res->contig = false;
        res->writable = false; /* may overlap itself */
        return true;
    }
    case OP_CLAMP:
        if (A->dt == TT_BOOL || (!is_f(A->dt) && ((!isnan(in->f) && !dt_integral(in->f)) ||
                                                  (!isnan(in->g) && !dt_integral(in->g)))))
            return false;
        if (isnan(in->f) && isnan(in->g))
            return false;
        *res = fresh(A->dt, A->nd, A->s, slot);
        res->fuzzy = A->fuzzy;
        res->rg = A->rg;
        res->contig = A->contig;
        return true;
    case OP_UNARY: {
        int u = in->mode;
        if (u < 0 || u >= U_COUNT || A->dt == TT_BOOL) return false;
        tt_dtype d = A->dt;
        bool rounds = u >= U_FLOOR && u <= U_ROUND, step = u == U_SIGN || rounds;
        bool fl = u == U_EXP || u == U_LOG || u == U_SQRT || u == U_RSQRT || u == U_SIN ||
                  u == U_COS || u == U_TANH || u == U_SIGMOID || (u >= U_ACOS && !rounds);
        if (fl && !is_f(d)) d = TT_F32;
        if ((u == U_GELU || u == U_GELU_TANH) && !is_f(d)) return false;
        /* a step of a value known only to rounding could land either side */
        if (step && (A->fuzzy || A->rg)) return false;
        if (u == U_NEG && d == TT_U8) return false;
        *res = fresh(d, A->nd, A->s, slot);
        res->contig = A->contig;
        res->fuzzy = is_f(d) && (A->fuzzy || !(u == U_NEG || u == U_ABS || u == U_RELU || step));
        res->rg = A->rg && is_f(d) && !step;
        return true;
    }
    case OP_IADD: case OP_ISUB: case OP_IMUL: case OP_IDIV: case OP_IADDS:
    case OP_IMUL_SC: case OP_IADD_SC: case OP_ISUB_SC: case OP_IDIV_SC: case OP_IDIV_MODE:
    case OP_IRELU: case OP_IZERO: case OP_ICOPY: case OP_IFILL: {
        if (!A->writable || A->rg || (grad && (T[A->root].rg || T[A->root].saved)))
            return false;
        /* An index input keeps its values in range for embedding and
         * cross_entropy, which read it: it is never written. */
        if (A->root < p->nin && p->in[A->root].val == VAL_INDEX)
            return false;
        if (grad && slot - p->nin >= 0 && A->root < p->nin && p->in[A->root].rg)
            return false;
        bool two = in->op == OP_IADD || in->op == OP_ISUB || in->op == OP_IMUL ||
                   in->op == OP_IDIV || in->op == OP_IADDS || in->op == OP_ICOPY ||
                   (in->op == OP_IDIV_MODE && B);
        tt_dtype d = A->dt;
        if (two) {
            if (!B || (grad && B->rg) || !bcast(A->nd, A->s, B->nd, B->s, &nr, r) || nr != A->nd)
                return false;
            for (int i = 0; i < nr; i++)
                if (r[i] != A->s[i]) return false;
            rs_tensor(&rs, A);
            rs_tensor(&rs, B);
            d = rs_result(&rs);
            bool anyb = A->dt == TT_BOOL || B->dt == TT_BOOL;
            if (in->op == OP_ISUB && anyb) return false;
            if (in->op == OP_IDIV || in->op == OP_IDIV_MODE) {
                if (anyb) return false;
                if (in->op == OP_IDIV && !is_f(d)) d = TT_F32;
                if (in->op == OP_IDIV_MODE && (!is_f(B->dt) || A->fuzzy || B->fuzzy)) return false;
            }
            if (in->op == OP_IADDS && (d == TT_BOOL || (!is_f(d) && !dt_integral(in->f)))) return false;
            if (in->op == OP_ICOPY) d = A->dt;
            /* copy_ from a tensor that overlaps the target's memory:
             * PyTorch refuses partial overlap; keep it out. */
            if (B->root == A->root && in->b != in->a) return false;
            if (in->op == OP_ICOPY && is_f(B->dt) && !is_f(A->dt) && B->fuzzy) return false;
            if (!can_cast(d, A->dt)) return false;
        } else if (in->op == OP_IMUL_SC || in->op == OP_IADD_SC || in->op == OP_ISUB_SC ||
                   in->op == OP_IDIV_SC || in->op == OP_IDIV_MODE) {
            if (A->dt == TT_BOOL) return false;
            rs_tensor(&rs, A);
            rs_scalar(&rs, in->f);
            d = rs_result(&rs);
            if (in->op == OP_IDIV_SC && !is_f(d)) d = TT_F32;
            if (in->op == OP_IDIV_MODE && (in->f == 0 || A->fuzzy)) return false;
            if (!can_cast(d, A->dt)) return false;
        } else if (in->op == OP_IRELU) {
            if (A->dt == TT_BOOL) return false;
        } else if (in->op == OP_IFILL) {
            if (!is_f(A->dt) && !dt_integral(in->f)) return false;
            if (A->dt == TT_BOOL && in->f != 0 && in->f != 1) return false;
            if (A->dt == TT_U8 && in->f < 0) return false;
        }
        *res = *A;
        /* The write lands in every alias of A's storage. */
        bool fz = is_f(A->dt) && (in->op != OP_IZERO && in->op != OP_IFILL &&
                                  in->op != OP_IRELU && in->op != OP_ICOPY);
        if (in->op == OP_ICOPY && B->fuzzy) fz = true;
        if (in->op == OP_IRELU && A->fuzzy) fz = true;
        if (fz) {
            for (int i = 0; i < slot; i++)
                if (T[i].root == A->root) T[i].fuzzy = true;
            res->fuzzy = true;
        }
        return true;
    }
    case OP_SUM: case OP_MEAN: case OP_AMAX: case OP_AMIN: case OP_SOFTMAX:
    case OP_LOG_SOFTMAX: case OP_ARGMAX: {
        if (A->nd == 0 && in->op != OP_SOFTMAX && in->op != OP_LOG_SOFTMAX) return false;
        bool keep = in->mode & 1;
        bool seen[DT_MAX_ND] = {0};
        int nd = in->op == OP_SUM || in->op == OP_MEAN || in->op == OP_AMAX || in->op == OP_AMIN ? in->ni : 1;
        if (nd < 1) return false;
        for (int k = 0; k < nd; k++) {
            if (!dim_ok(in->i[k], A->nd)) return false;
            int d = A->nd ? normdim(in->i[k], A->nd) : 0;
            if (seen[d]) return false;
            seen[d] = true;
        }
        tt_dtype d = A->dt;
        if (in->op == OP_SUM && !is_f(d)) d = TT_I64;
        if ((in->op == OP_MEAN || in->op == OP_SOFTMAX || in->op == OP_LOG_SOFTMAX) && !is_f(d)) return false;
        if ((in->op == OP_AMAX || in->op == OP_AMIN || in->op == OP_ARGMAX) && d == TT_BOOL) return false;
        if (in->op == OP_ARGMAX) { if (A->fuzzy) return false; d = TT_I64; }
        if (in->op == OP_SOFTMAX || in->op == OP_LOG_SOFTMAX) {
            *res = fresh(d, A->nd, A->s, slot);
        } else {
            nr = 0;
            for (int k = 0; k < A->nd; k++) {
                if (!seen[k]) r[nr++] = A->s[k];
                else if (keep) r[nr++] = 1;
            }
            *res = fresh(d, nr, r, slot);
        }
        res->fuzzy = is_f(d) && (A->fuzzy || in->op == OP_SUM || in->op == OP_MEAN ||
                                 in->op == OP_SOFTMAX || in->op == OP_LOG_SOFTMAX);
        res->rg = A->rg && is_f(d);
        return true;
    }
    case OP_SUM_ALL: case OP_MEAN_ALL: {
        tt_dtype d = A->dt;
        if (in->op == OP_SUM_ALL && !is_f(d)) d = TT_I64;
        if (in->op == OP_MEAN_ALL && !is_f(d)) return false;
        *res = fresh(d, 0, NULL, slot);
        res->fuzzy = is_f(d);
        res->rg = A->rg && is_f(d);
        return true;
    }
    case OP_MM: case OP_BMM: case OP_MATMUL: case OP_LINEAR: {
        if (!B || !is_f(A->dt) || A->dt != B->dt) return false;
        if (in->op == OP_MM) {
            if (A->nd != 2 || B->nd != 2 || A->s[1] != B->s[0]) return false;
            r[0] = A->s[0]; r[1] = B->s[1]; nr = 2;
        } else if (in->op == OP_BMM) {
            if (A->nd != 3 || B->nd != 3 || A->s[0] != B->s[0] || A->s[2] != B->s[1]) return false;
            r[0] = A->s[0]; r[1] = A->s[1]; r[2] = B->s[2]; nr = 3;
        } else if (in->op == OP_LINEAR) {
            if (A->nd < 1 || B->nd != 2 || A->s[A->nd - 1] != B->s[1]) return false;
            if (C && (C->dt != A->dt || C->nd != 1 || C->s[0] != B->s[0])) return false;
            memcpy(r, A->s, sizeof(int64_t) * (size_t)A->nd);
            r[A->nd - 1] = B->s[0];
            nr = A->nd;
        } else {
            if (A->nd < 1 || B->nd < 1) return false;
            int64_t ka = A->s[A->nd - 1], kb = B->nd == 1 ? B->s[0] : B->s[B->nd - 2];
            if (ka != kb) return false;
            if (A->nd == 1 && B->nd == 1) { nr = 0; }
            else if (A->nd == 1) { memcpy(r, B->s, sizeof(int64_t) * (size_t)B->nd); nr = B->nd; memmove(r + nr - 2, r + nr - 1, sizeof(int64_t)); nr--; }
            else if (B->nd == 1) { memcpy(r, A->s, sizeof(int64_t) * (size_t)A->nd); nr = A->nd - 1; }
            else {
                if (!bcast(A->nd - 2, A->s, B->nd - 2, B->s, &nr, r)) return false;
                if (nr + 2 > DT_MAX_ND) return false;
                r[nr++] = A->s[A->nd - 2];
                r[nr++] = B->s[B->nd - 1];
            }
        }
        *res = fresh(A->dt, nr, r, slot);
        res->fuzzy = true;
        res->rg = A->rg || B->rg || (C && C->rg);
        res->contig = in->op != OP_MATMUL; /* matmul of a 1-d operand may be a view */
        return true;
    }
    case OP_VIEW: case OP_RESHAPE: {
        if (in->op == OP_VIEW && !A->contig) return false;
        if (in->ni > DT_MAX_ND) return false;
        int nba, nbb = 0;
        int64_t na = cnumel(A, &nba), nb = 1;
        for (int k = 0; k < in->ni; k++) {
            if (in->i[k] == DT_B) nbb++;
            else if (in->i[k] < 1) return false;
            else nb *= in->i[k];
        }
        if (na != nb || nba != nbb || (nbb && !(in->bslot >= 0 && in->bslot < slot &&
                                                dim_ok(in->bdim, T[in->bslot].nd) &&
                                                T[in->bslot].nd > 0 &&
                                                T[in->bslot].s[normdim(in->bdim, T[in->bslot].nd)] == DT_B)))
            return false;
        /* With two batch dims merged or split, the shape depends on B
         * in ways one product cannot say; keep the batch dims in order
         * and whole. */
        if (nbb > 1) return false;
        *res = *A;
        res->nd = in->ni;
        memcpy(res->s, in->i, sizeof(int64_t) * (size_t)in->ni);
        res->contig = A->contig;
        return true;
    }
    case OP_PERMUTE: {
        if (in->ni != A->nd) return false;
        bool seen[DT_MAX_ND] = {0};
        for (int k = 0; k < in->ni; k++) {
            if (!dim_ok(in->i[k], A->nd) || A->nd == 0) return false;
            int d = normdim(in->i[k], A->nd);
            if (seen[d]) return false;
            seen[d] = true;
            r[k] = A->s[d];
        }
        *res = *A;
        memcpy(res->s, r, sizeof(int64_t) * (size_t)A->nd);
        res->contig = false;
        return true;
    }
    case OP_TRANSPOSE: case OP_T: {
        int64_t d0 = in->i[0], d1 = in->i[1];
        if (in->op == OP_T) {
            if (A->nd > 2) return false;
            d0 = 0;
            d1 = A->nd == 2 ? 1 : 0;
        }
        if (!dim_ok(d0, A->nd) || !dim_ok(d1, A->nd)) return false;
        *res = *A;
        if (A->nd) {
            int x = normdim(d0, A->nd), y = normdim(d1, A->nd);
            res->s[x] = A->s[y];
            res->s[y] = A->s[x];
            if (x != y) res->contig = false;
        }
        return true;
    }
    case OP_NARROW: case OP_SLICE: case OP_SELECT: {
        if (A->nd == 0 || !dim_ok(in->i[0], A->nd)) return false;
        int d = normdim(in->i[0], A->nd);
        int64_t sz = A->s[d];
        *res = *A;
        res->contig = false;
        if (in->op == OP_SELECT) {
            if (sz == DT_B ? in->i[1] != 0 : (in->i[1] < -sz || in->i[1] >= sz)) return false;
            memmove(res->s + d, res->s + d + 1, sizeof(int64_t) * (size_t)(A->nd - d - 1));
            res->nd--;
            return true;
        }
        if (sz == DT_B) return false;
        if (in->op == OP_NARROW) {
            if (in->i[1] < 0 || in->i[2] < 1 || in->i[1] + in->i[2] > sz) return false;
            res->s[d] = in->i[2];
            return true;
        }
        /* slice: start, end, step (>= 1); Python's clamping */
        int64_t st = in->i[1], en = in->i[2], step = in->i[3];
        if (step < 1) return false;
        if (st < 0) st += sz;
        if (en < 0) en += sz;
        st = st < 0 ? 0 : (st > sz ? sz : st);
        en = en < st ? st : (en > sz ? sz : en);
        res->s[d] = (en - st + step - 1) / step;
        /* no empty tensors: amax, argmax and friends refuse them, as
         * PyTorch does, and the model does not track emptiness */
        return res->s[d] >= 1;
    }
    case OP_EXPAND: {
        if (in->ni < A->nd || in->ni > DT_MAX_ND) return false;
        int off = in->ni - A->nd;
        for (int k = 0; k < in->ni; k++) {
            int64_t t = in->i[k];
            if (t == DT_B && !(in->bslot >= 0 && in->bslot < slot && dim_ok(in->bdim, T[in->bslot].nd) &&
                               T[in->bslot].nd > 0 && T[in->bslot].s[normdim(in->bdim, T[in->bslot].nd)] == DT_B))
                return false;
            if (t != DT_B && t < 1) return false;
            if (k >= off) {
                int64_t s = A->s[k - off];
                if (s != t && s != 1) return false;
            }
            r[k] = t;
        }
        *res = *A;
        res->nd = in->ni;
        memcpy(res->s, r, sizeof(int64_t) * (size_t)in->ni);
        res->writable = false;
        res->contig = false;
        return true;
    }
    case OP_SQUEEZE: case OP_UNSQUEEZE: case OP_SQUEEZE_ALL: case OP_SQUEEZE_DIMS: case OP_FLATTEN: {
        *res = *A;
        if (in->op == OP_UNSQUEEZE) {
            if (A->nd >= DT_MAX_ND || in->i[0] < -(A->nd + 1) || in->i[0] > A->nd) return false;
            int d = (int)(in->i[0] < 0 ? in->i[0] + A->nd + 1 : in->i[0]);
            memmove(res->s + d + 1, res->s + d, sizeof(int64_t) * (size_t)(A->nd - d));
            res->s[d] = 1;
            res->nd++;
            return true;
        }
        if (in->op == OP_FLATTEN) {
            if (!dim_ok(in->i[0], A->nd) || !dim_ok(in->i[1], A->nd)) return false;
            if (A->nd == 0) { res->nd = 1; res->s[0] = 1; return true; }
            int s0 = normdim(in->i[0], A->nd), s1 = normdim(in->i[1], A->nd);
            if (s0 > s1) return false;
            int64_t prod = 1;
            int nbd = 0;
            for (int k = s0; k <= s1; k++) {
                if (A->s[k] == DT_B) nbd++;
                else prod *= A->s[k];
            }
            if (nbd > 1 || (nbd == 1 && prod != 1)) return false; /* B*k is no size of the model */
            nr = 0;
            for (int k = 0; k < s0; k++) r[nr++] = A->s[k];
            r[nr++] = nbd ? DT_B : prod;
            for (int k = s1 + 1; k < A->nd; k++) r[nr++] = A->s[k];
            res->nd = nr;
            memcpy(res->s, r, sizeof(int64_t) * (size_t)nr);
            res->contig = A->contig;
            return true;
        }
        bool drop[DT_MAX_ND] = {0};
        if (in->op == OP_SQUEEZE_ALL) {
            for (int k = 0; k < A->nd; k++) drop[k] = A->s[k] == 1;
        } else {
            int n = in->op == OP_SQUEEZE ? 1 : in->ni;
            for (int k = 0; k < n; k++) {
                if (!dim_ok(in->i[k], A->nd)) return false;
                if (A->nd == 0) continue;
                int d = normdim(in->i[k], A->nd);
                if (in->op == OP_SQUEEZE_DIMS && drop[d]) return false;
                drop[d] = A->s[d] == 1;
            }
        }
        nr = 0;
        for (int k = 0; k < A->nd; k++)
            if (!drop[k]) r[nr++] = A->s[k];
        res->nd = nr;
        memcpy(res->s, r, sizeof(int64_t) * (size_t)nr);
        return true;
    }
    case OP_CONTIGUOUS: case OP_CLONE: case OP_DETACH:
        *res = *A;
        if (in->op == OP_CONTIGUOUS) { res->contig = true; res->writable = true; }
        if (in->op == OP_CLONE) { res->root = slot; res->writable = true; res->contig = A->contig; res->saved = false; }
        if (in->op == OP_DETACH) res->rg = false;
        return true;
    case OP_TO_DTYPE: {
        tt_dtype d = (tt_dtype)in->mode;
        if ((int)d < 0 || d >= TT_DTYPE_COUNT) return false;
        if (is_f(A->dt) && !is_f(d) && A->fuzzy) return false;
        *res = fresh(d, A->nd, A->s, slot);
        res->fuzzy = A->fuzzy && is_f(d);
        res->rg = A->rg && is_f(d);
        res->contig = A->contig;
        if (d == A->dt) res->root = A->root; /* may return self (PyTorch's to() does) */
        return true;
    }
    case OP_CAT: case OP_STACK: {
        const dt_vtype *L[3] = {A, B, C};
        int n = C ? 3 : (B ? 2 : 1);
        if (n == 1 && in->op == OP_CAT && !B) { /* one tensor is fine */ }
        if (in->op == OP_CAT && A->nd == 0) return false;
        int nd = in->op == OP_STACK ? A->nd + 1 : A->nd;
        if (nd > DT_MAX_ND || !dim_ok(in->i[0], nd)) return false;
        int d = normdim(in->i[0], nd);
        int64_t tot = 0;
        bool fz = false, rgx = false;
        for (int k = 0; k < n; k++) {
            if (!L[k] || L[k]->dt != A->dt || L[k]->nd != A->nd) return false;
            for (int j = 0; j < A->nd; j++)
                if ((in->op == OP_STACK || j != d) && L[k]->s[j] != A->s[j]) return false;
            if (in->op == OP_CAT) { if (L[k]->s[d] == DT_B) return false; tot += L[k]->s[d]; }
            fz |= L[k]->fuzzy;
            rgx |= L[k]->rg;
        }
        if (in->op == OP_CAT) {
            *res = fresh(A->dt, A->nd, A->s, slot);
            res->s[d] = tot;
        } else {
            nr = 0;
            for (int j = 0; j < nd; j++) r[j] = j < d ? A->s[j] : (j == d ? n : A->s[j - 1]);
            *res = fresh(A->dt, nd, r, slot);
        }
        res->fuzzy = fz;
        res->rg = rgx && is_f(A->dt);
        return true;
    }
    case OP_CE: {
        /* logits [N, C] float, target an index input [N] with values < C */
        if (!B || !is_f(A->dt) || A->nd != 2 || B->nd != 1 || B->dt != TT_I64) return false;
        if (in->b >= p->nin || p->in[in->b].val != VAL_INDEX || B->root != in->b) return false;
        if (A->s[0] != B->s[0] || A->s[1] == DT_B || A->s[1] < p->in[in->b].range) return false;
        *res = fresh(A->dt, 0, NULL, slot);
        res->fuzzy = true;
        res->rg = A->rg;
        return true;
    }
    case OP_EMBEDDING: {
        if (!B || !is_f(A->dt) || A->nd != 2 || B->dt != TT_I64 || A->s[0] == DT_B) return false;
        if (in->b >= p->nin || p->in[in->b].val != VAL_INDEX || B->root != in->b) return false;
        if (A->s[0] < p->in[in->b].range || B->nd + 1 > DT_MAX_ND) return false;
        memcpy(r, B->s, sizeof(int64_t) * (size_t)B->nd);
        r[B->nd] = A->s[1];
        *res = fresh(A->dt, B->nd + 1, r, slot);
        res->fuzzy = A->fuzzy;
        res->rg = A->rg;
        return true;
    }
    case OP_LAYER_NORM: {
        if (!is_f(A->dt) || A->nd < 1) return false;
        int64_t last = A->s[A->nd - 1];
        for (const dt_vtype *W = B;; W = C) {
            if (W && (W->dt != A->dt || W->nd != 1 || W->s[0] != last)) return false;
            if (W == C) break;
        }
        *res = fresh(A->dt, A->nd, A->s, slot);
        res->fuzzy = true;
        res->rg = A->rg || (B && B->rg) || (C && C->rg);
        return true;
    }
    case OP_SDPA:
        if (A->dt != TT_F32 || A->nd < 2 || A->nd > 4) return false;
        *res = fresh(A->dt, A->nd, A->s, slot);
        res->fuzzy = true;
        res->rg = A->rg;
        res->contig = false;
        return true;
    case OP_GLOBAL_NORM:
        if (!is_f(A->dt) || (B && B->dt != A->dt)) return false;
        *res = fresh(A->dt, 0, NULL, slot);
        res->fuzzy = true;
        return true;
    case OP_FULL: {
        /* the shape of slot a (batch read from it), fill f, dtype mode */
        if (!A) return false;
        tt_dtype d = (tt_dtype)in->mode;
        if ((int)d < 0 || d >= TT_DTYPE_COUNT) return false;
        if (!is_f(d) && !dt_integral(in->f)) return false;
        if (d == TT_BOOL && in->f != 0 && in->f != 1) return false;
        if (d == TT_U8 && in->f < 0) return false;
        *res = fresh(d, A->nd, A->s, slot);
        return true;
    }
    case OP_ARANGE: {
        tt_dtype d = (tt_dtype)in->mode;
        if ((int)d < 0 || d >= TT_DTYPE_COUNT || d == TT_BOOL || in->i[0] < 1 || in->i[0] > 8) return false;
        r[0] = in->i[0];
        *res = fresh(d, 1, r, slot);
        return true;
    }
    case OP_LINSPACE: {
        /* float only: PyTorch's integer linspace rounds in ways of its own */
        tt_dtype d = (tt_dtype)in->mode;
        if ((d != TT_F32 && d != TT_F64) || in->i[0] < 1 || in->i[0] > 8) return false;
        r[0] = in->i[0];
        *res = fresh(d, 1, r, slot);
        res->fuzzy = true;
        return true;
    }
    case OP_BREAK:
        if (A) return false;
        *res = fresh(TT_F32, 0, NULL, slot);
        return true;
    case OP_ITEM:
        /* a * item(sum(b)): reads b's data (a break under a trace) */
        if (!B || A->dt == TT_BOOL || !is_f(A->dt) || B->fuzzy) return false;
        *res = fresh(A->dt, A->nd, A->s, slot);
        res->fuzzy = true;
        res->rg = A->rg;
        res->contig = A->contig;
        return true;
    default:
        /* the CNN ops' rules are gen_cnn.c's, issue 27's gen_index.c's,
         * the advanced indexing, transformer and random ops' gen_adv.c's */
        if (in->op >= DT_FIRST_ADV) return in->op < OP_COUNT && dt_model_adv(p, in, T, slot, res);
        if (in->op >= DT_FIRST_INDEX) return in->op < OP_COUNT && dt_model_index(p, in, T, slot, res);
        return in->op >= DT_FIRST_CNN && dt_model_cnn(p, in, T, slot, res);
    }
}

/* model(), then: the operands of a result that requires grad may be saved
 * for its backward, so their storage must not be written in place later
 * (autograd's version check would refuse it, as PyTorch's does). */
static bool model_step(const dt_program *p, const dt_instr *in, dt_vtype *T, int slot, dt_vtype *res)
{
    if (!model(p, in, T, slot, res))
        return false;
    if (res->rg) {
        int ops[4] = {in->a, in->b, in->c, in->d};
        for (int k = 0; k < 4; k++)
            if (ops[k] >= 0 && ops[k] < slot) T[T[ops[k]].root].saved = true;
        if (res->root >= 0 && res->root < slot) T[res->root].saved = true;
        res->saved = true;
    }
    return true;
}

static void input_types(const dt_program *p, dt_vtype *T)
{
    for (int i = 0; i < p->nin; i++) {
        const dt_input *x = &p->in[i];
        T[i] = fresh(x->dt, x->nd, x->s, i);
        T[i].rg = x->rg;
        T[i].writable = x->lay != LAY_EXPANDED;
        T[i].contig = x->lay == LAY_CONTIG;
    }
}

bool dt_validate(const dt_program *p, dt_vtype *types)
{
    dt_vtype T[DT_MAX_SLOTS];
    if (p->nin < 1 || p->nin > DT_MAX_IN || p->n < 0 || p->n > DT_MAX_INS || p->nout < 1 ||
        p->nout > DT_MAX_OUT)
        return false;
    input_types(p, T);
    for (int k = 0; k < p->n; k++)
        if (!model_step(p, &p->ins[k], T, p->nin + k, &T[p->nin + k]))
            return false;
    bool rg_out = false;
    for (int j = 0; j < p->nout; j++) {
        if (p->out[j] < 0 || p->out[j] >= p->nin + p->n)
            return false;
        rg_out |= T[p->out[j]].rg;
    }
    if (p->grad && !rg_out) /* the loss needs an output that requires grad */
        return false;
    if (types)
        memcpy(types, T, sizeof(dt_vtype) * (size_t)(p->nin + p->n));
    return true;
}

/* ------------------------------------------------------------ generator */

static bool in_list(const char *list, const char *name);

static bool op_enabled(const dt_genopts *o, int op)
{
    if (o->no_inplace && ((op >= OP_IADD && op <= OP_IFILL) || op == OP_SGD || op == OP_RAND_FILL || op == OP_ADAMW))
        return false;
    if (o->no_breaks && (op == OP_BREAK || op == OP_ITEM))
        return false;
    if (o->no_ops && in_list(o->no_ops, dt_op_names[op]))
        return false;
    return !o->ops || in_list(o->ops, dt_op_names[op]);
}

static bool in_list(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *s = list; *s;) {
        const char *e = strchr(s, ',');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        if (len == n && !strncmp(s, name, n))
            return true;
        if (!e)
            break;
        s = e + 1;
    }
    return false;
}

static const int64_t base_sizes[] = {1, 2, 3, 4, 5};

static void gen_inputs(dt_program *p, rng *r, const dt_genopts *o)
{
    /* A base shape the inputs take suffixes of (dims randomly 1), so
     * broadcasting ops find partners; some inputs are free. */
    int64_t base[DT_MAX_ND];
    int bnd = 1 + rint_(r, 3);
    base[0] = o->no_batch ? 2 + rint_(r, 3) : DT_B;
    for (int k = 1; k < bnd; k++) base[k] = base_sizes[1 + rint_(r, 4)];
    p->nin = 1 + rint_(r, 4);
    /* Images for the CNN ops (conv2d ... sgd_): input 0 is [N, C, H, W]
     * or [N, C, L] (float), then a parameter vector the ops slice their
     * weights from, the running statistics [C] of a batch norm, and
     * class indices [N, H, W] / [N] for nll_loss; the others as usual. */
    int first = 0;
    if (p->cnn) {
        tt_dtype fd = rbool(r, 70) ? TT_F32 : TT_F64;
        /* [N, C, D, H, W] now and then, for the 3-d pools */
        bnd = rbool(r, 70) ? 4 : rbool(r, 25) ? 5 : 3;
        for (int k = 1; k < bnd; k++) base[k] = k == 1 ? 1 + rint_(r, 4) : 2 + rint_(r, 5);
        dt_input *x = &p->in[first++];
        memset(x, 0, sizeof *x);
        x->dt = fd;
        x->nd = bnd;
        memcpy(x->s, base, sizeof(int64_t) * (size_t)bnd);
        x = &p->in[first++];
        memset(x, 0, sizeof *x);
        x->dt = fd;
        x->nd = 1;
        x->s[0] = 160;
        if (rbool(r, 60)) {
            for (int k = 0; k < 2; k++) {
                x = &p->in[first++];
                memset(x, 0, sizeof *x);
                x->dt = fd;
                x->nd = 1;
                x->s[0] = base[1];
                x->val = VAL_POS;
            }
        }
        if (base[1] >= 2 && rbool(r, 70)) {
            /* x's shape without C (nll_loss on x's log_softmax), or [N] */
            x = &p->in[first++];
            memset(x, 0, sizeof *x);
            x->dt = TT_I64;
            x->val = VAL_INDEX;
            x->range = 2;
            x->nd = rbool(r, 70) ? bnd - 1 : 1;
            x->s[0] = base[0];
            for (int k = 1; k < x->nd; k++) x->s[k] = base[k + 1];
        }
        p->nin = first + rint_(r, DT_MAX_IN - first + 1);
        if (p->nin > DT_MAX_IN) p->nin = DT_MAX_IN;
    }
    for (int i = 0; i < p->nin; i++) {
        dt_input *x = &p->in[i];
        if (i < first) goto layout;
        memset(x, 0, sizeof *x);
        int pick = rint_(r, 100);
        x->dt = pick < 45 ? TT_F32 : pick < 60 ? TT_F64 : pick < 72 ? TT_I64 : pick < 82 ? TT_I32
              : pick < 90 ? TT_U8 : TT_BOOL;
        if (i == 0 || rbool(r, 60)) {
            int drop = i == 0 ? 0 : rint_(r, bnd + 1);
            x->nd = bnd - drop;
            for (int k = 0; k < x->nd; k++) {
                x->s[k] = base[drop + k];
                if (i > 0 && rbool(r, 20)) x->s[k] = 1;
            }
        } else {
            x->nd = rint_(r, 4);
            for (int k = 0; k < x->nd; k++) x->s[k] = base_sizes[rint_(r, 5)];
        }
        if (i > 0 && rbool(r, 12)) { /* class indices for cross_entropy / embedding */
            x->dt = TT_I64;
            x->val = VAL_INDEX;
            x->range = 2;
            x->nd = 1;
            x->s[0] = rbool(r, 50) ? base[0] : 3;
        }
    layout:
        x->lay = LAY_CONTIG;
        if (!o->no_layouts && x->nd >= 1 && rbool(r, 50)) {
            x->lay = (dt_layout)(1 + rint_(r, LAY_COUNT - 1));
            if (x->lay == LAY_TRANSPOSED && x->nd < 2) x->lay = LAY_STRIDED;
            if (x->lay == LAY_EXPANDED) {
                x->lay_dim = rint_(r, x->nd);
                if (x->s[x->lay_dim] == 1) x->lay = LAY_CONTIG;
            }
            if (x->lay == LAY_OFFSET && x->s[0] == DT_B) x->lay = LAY_STRIDED;
        }
        x->rg = false;
    }
    if (!o->no_grad && rbool(r, 40)) {
        p->grad = 1 + rint_(r, 2);
        for (int i = 0; i < p->nin; i++)
            if (is_f(p->in[i].dt) && p->in[i].val == VAL_NORMAL && rbool(r, 70))
                p->in[i].rg = true;
        if (!dt_num_rg(p)) p->grad = 0;
    }
}

static int pick_slot(rng *r, int nslots)
{
    /* favour recent slots, so programs are chains more than fans */
    if (rbool(r, 60)) {
        int k = nslots - 1 - rint_(r, 4);
        return k < 0 ? 0 : k;
    }
    return rint_(r, nslots);
}

double pick_scalar(rng *r)
{
    static const double v[] = {2, -1, 3, 0.5, 1.5, -0.25, 1, 0, 4};
    return v[rint_(r, 9)];
}

/* A random instruction of kind `op` over the slots so far (the model
 * decides whether it is valid). */
static void propose(rng *r, const dt_program *p, const dt_vtype *T, int nslots, int op, dt_instr *in)
{
    memset(in, 0, sizeof *in);
    in->op = op;
    in->a = pick_slot(r, nslots);
    in->b = rint_(r, nslots);
    in->c = rbool(r, 70) ? rint_(r, nslots) : -1;
    in->d = -1;
    in->f = pick_scalar(r);
    in->g = NAN;
    in->bslot = -1;
    const dt_vtype *A = &T[in->a];
    int nd = A->nd;
    for (int k = 0; k < DT_MAX_ND + 1; k++) in->i[k] = nd ? rint_(r, 2 * nd) - nd : 0;
    in->ni = 1;
    switch (op) {
    case OP_CMP: case OP_CMP_SC: in->mode = rint_(r, 6); break;
    case OP_DIV_MODE: case OP_DIV_SC_MODE: case OP_IDIV_MODE:
        in->mode = rint_(r, 2);
        if (op == OP_IDIV_MODE && rbool(r, 50)) in->b = -1;
        break;
    case OP_WHERE_SC: case OP_WHERE_OSC: in->c = -1; break;
    case OP_CLAMP:
        in->f = rbool(r, 70) ? pick_scalar(r) - 1 : NAN;
        in->g = rbool(r, 70) ? pick_scalar(r) + 1 : NAN;
        break;
    case OP_CLAMP_T: if (rbool(r, 30)) in->b = -1; break;
    case OP_WHERE_SS: in->g = pick_scalar(r); break;
    case OP_AS_STRIDED:
        in->ni = 1 + rint_(r, 2);
        in->i[0] = 1 + rint_(r, 4);
        in->i[1] = 1 + rint_(r, 3);
        in->i[2] = rint_(r, 3);
        in->i[3] = rint_(r, 3);
        in->i[4] = rint_(r, 3);
        break;
    case OP_UNARY: in->mode = rint_(r, U_COUNT); break;
    case OP_SUM: case OP_MEAN: case OP_AMAX: case OP_AMIN:
        in->ni = 1 + (nd > 1 && rbool(r, 30));
        in->mode = rint_(r, 2);
        break;
    case OP_ARGMAX: in->mode = rint_(r, 2); break;
    case OP_MM: case OP_BMM: case OP_MATMUL: case OP_LINEAR: {
        /* look for a partner with the right inner size */
        for (int t = 0; t < 12; t++) {
            int b = rint_(r, nslots);
            if (T[b].dt == A->dt && T[b].nd >= 1) { in->b = b; break; }
        }
        if (op == OP_LINEAR && rbool(r, 50)) in->c = -1;
        break;
    }
    case OP_VIEW: case OP_RESHAPE: {
        /* a factorization of A's concrete numel, batch kept as DT_B */
        int nbd;
        int64_t n = cnumel(A, &nbd);
        in->ni = 0;
        if (nbd == 1) {
            for (int k = 0; k < nd; k++) if (A->s[k] == DT_B) { in->bslot = in->a; in->bdim = k; }
        }
        int bpos = nbd ? rint_(r, 3) : -1;
        while ((n > 1 || rbool(r, 30) || bpos >= in->ni) && in->ni < DT_MAX_ND) {
            if (in->ni == bpos) { in->i[in->ni++] = DT_B; continue; }
            int64_t f = 1;
            for (int64_t d = 2; d <= n; d++)
                if (n % d == 0) { f = d; if (rbool(r, 50)) break; }
            if (rbool(r, 25)) f = n;
            in->i[in->ni++] = f;
            n /= f;
            if (n == 1 && bpos < in->ni && rbool(r, 70)) break;
        }
        if (nbd && bpos >= in->ni) in->i[in->ni++] = DT_B;
        if (in->ni == 0 && n == 1 && rbool(r, 50)) in->i[in->ni++] = 1;
        if (rbool(r, 20) && in->ni > 0 && in->i[in->ni - 1] != DT_B && op == OP_RESHAPE) {
            /* a -1 entry: the library infers it; the model knows it */
        }
        break;
    }
    case OP_PERMUTE:
        in->ni = nd;
        for (int k = 0; k < nd; k++) in->i[k] = k;
        for (int k = nd - 1; k > 0; k--) {
            int j = rint_(r, k + 1);
            int64_t t = in->i[k]; in->i[k] = in->i[j]; in->i[j] = t;
        }
        if (rbool(r, 30) && nd) in->i[0] -= nd;
        break;
    case OP_NARROW: case OP_SLICE: case OP_SELECT:
        if (nd) {
            int d = rint_(r, nd);
            int64_t sz = A->s[d] == DT_B ? 1 : A->s[d];
            in->i[0] = rbool(r, 30) ? d - nd : d;
            in->i[1] = rint_(r, (int)sz);
            in->i[2] = op == OP_NARROW ? 1 + rint_(r, (int)(sz - in->i[1])) : in->i[1] + 1 + rint_(r, (int)sz);
            in->i[3] = 1 + rint_(r, 2);
            if (op == OP_SLICE && rbool(r, 20)) in->i[1] = -1 - rint_(r, (int)sz);
        }
        break;
    case OP_EXPAND: {
        int extra = rbool(r, 30) ? 1 : 0;
        in->ni = nd + extra;
        for (int k = 0; k < in->ni; k++) {
            int64_t s = k < extra ? 1 : A->s[k - extra];
            if (s == 1 && rbool(r, 60)) s = 2 + rint_(r, 3);
            in->i[k] = s;
        }
        /* expand a 1 to the batch, read from a slot that has it */
        for (int t = 0; t < 6 && in->ni; t++) {
            int b = rint_(r, nslots);
            for (int k = 0; k < T[b].nd; k++)
                if (T[b].s[k] == DT_B) {
                    int j = rint_(r, in->ni);
                    int64_t s = j < extra ? 1 : A->s[j - extra];
                    if (s == 1) { in->i[j] = DT_B; in->bslot = b; in->bdim = k; }
                    t = 6;
                    break;
                }
        }
        break;
    }
    case OP_SQUEEZE_DIMS: in->ni = 1 + (nd > 1 && rbool(r, 50)); break;
    case OP_UNSQUEEZE: in->i[0] = rint_(r, 2 * nd + 2) - nd - 1; break;
    case OP_FLATTEN:
        if (nd && in->i[0] > in->i[1]) { int64_t t = in->i[0]; in->i[0] = in->i[1]; in->i[1] = t; }
        break;
    case OP_TO_DTYPE: case OP_FULL: case OP_ARANGE: case OP_LINSPACE:
        in->mode = (int)all_dt[rint_(r, 6)];
        if (op == OP_ARANGE || op == OP_LINSPACE) {
            in->i[0] = 1;
            for (int k = 0; k < nd; k++) if (A->s[k] != DT_B) in->i[0] = A->s[k];
            in->a = -1;
        }
        break;
    case OP_CAT: case OP_STACK:
        in->b = rbool(r, 30) ? in->a : in->b;
        if (op == OP_STACK) in->i[0] = rint_(r, 2 * nd + 2) - nd - 1;
        break;
    case OP_CE: case OP_EMBEDDING:
        for (int i = 0; i < p->nin; i++)
            if (p->in[i].val == VAL_INDEX && rbool(r, 70)) in->b = i;
        break;
    case OP_LAYER_NORM:
        if (rbool(r, 50)) in->b = -1;
        if (rbool(r, 50)) in->c = -1;
        break;
    case OP_GLOBAL_NORM: in->c = -1; if (rbool(r, 50)) in->b = -1; break;
    case OP_BREAK: in->a = in->b = in->c = -1; break;
    default:
        if (op >= DT_FIRST_ADV) dt_propose_adv(r, p, T, nslots, op, in);
        else if (op >= DT_FIRST_INDEX) dt_propose_index(r, p, T, nslots, op, in);
        else if (op >= DT_FIRST_CNN) dt_propose_cnn(r, p, T, nslots, op, in);
        break;
    }
}

/* Clears the operand fields op does not read (propose fills them all), so
 * a slot's readers are exactly the instructions that use it. */
static void clear_unused(dt_instr *in)
{
    bool b = false, c = false;
    switch (in->op) {
    case OP_ADD: case OP_SUB: case OP_MUL: case OP_DIV: case OP_POW: case OP_ADDS: case OP_CMP:
    case OP_DIV_MODE: case OP_WHERE_SC: case OP_WHERE_OSC: case OP_IADD: case OP_ISUB:
    case OP_IMUL: case OP_IDIV: case OP_IADDS: case OP_ICOPY: case OP_IDIV_MODE: case OP_MM:
    case OP_BMM: case OP_MATMUL: case OP_CE: case OP_EMBEDDING: case OP_GLOBAL_NORM: case OP_ITEM:
    case OP_MSE: case OP_SMOOTH_L1: case OP_NLL: case OP_GRID_SAMPLE:
        b = true; break;
    case OP_WHERE: case OP_CLAMP_T: case OP_LINEAR: case OP_CAT: case OP_STACK: case OP_LAYER_NORM:
    case OP_BATCH_NORM: case OP_BCE_LOGITS: case OP_SGD:
        b = c = true; break;
    default:
        if (in->op >= DT_FIRST_ADV) dt_adv_operands(in->op, &b, &c);
        else b = in->op >= DT_FIRST_INDEX && dt_index_uses_b(in->op);
        break;
    }
    bool d = in->op == OP_CONV2D || in->op == OP_CONV1D || in->op == OP_BATCH_NORM ||
             in->op == OP_GROUP_NORM || in->op == OP_NATIVE_LN || in->op == OP_BCE_LOGITS ||
             in->op == OP_NLL;
    if (!b) in->b = -1;
    if (!c) in->c = -1;
    if (!d) in->d = -1;
    bool bs = false;
    if (in->op == OP_VIEW || in->op == OP_RESHAPE || in->op == OP_EXPAND)
        for (int k = 0; k < in->ni; k++) bs |= in->i[k] == DT_B;
    if (!bs) in->bslot = -1, in->bdim = 0;
}

void dt_generate(dt_program *p, uint64_t seed, const dt_genopts *o)
{
    rng r = {seed * 0x2545f4914f6cdd1dull + 1};
    memset(p, 0, sizeof *p);
    p->seed = seed;
    int cnn_ops[OP_COUNT], ncnn = 0;
    for (int op = DT_FIRST_CNN; op < DT_FIRST_INDEX; op++)
        if (op_enabled(o, op)) cnn_ops[ncnn++] = op;
    /* image programs: always when only CNN ops are asked for */
    p->cnn = ncnn && (o->ops || rbool(&r, 40));
    gen_inputs(p, &r, o);
    int lo = o->min_ins > 0 ? o->min_ins : 5, hi = o->max_ins > 0 ? o->max_ins : 40;
    if (hi > DT_MAX_INS) hi = DT_MAX_INS;
    int want = lo + rint_(&r, hi - lo + 1);
    dt_vtype T[DT_MAX_SLOTS];
    input_types(p, T);
    int ops[OP_COUNT], nops = 0;
    for (int op = 0; op < OP_COUNT; op++)
        if (op_enabled(o, op)) ops[nops++] = op;
    for (int tries = 0; p->n < want && tries < want * 60 && nops; tries++) {
        int op = p->cnn && rbool(&r, 50) ? cnn_ops[rint_(&r, ncnn)] : ops[rint_(&r, nops)];
        if ((op == OP_BREAK || op == OP_ITEM) && rbool(&r, 70)) continue; /* rare */
        int slot = p->nin + p->n;
        dt_instr in;
        propose(&r, p, T, slot, op, &in);
        clear_unused(&in); /* before the model, which must not see stray operands */
        dt_vtype save[DT_MAX_SLOTS];
        memcpy(save, T, sizeof(dt_vtype) * (size_t)slot);
        if (model_step(p, &in, T, slot, &T[slot])) {
            p->ins[p->n++] = in;
        } else {
            memcpy(T, save, sizeof(dt_vtype) * (size_t)slot); /* an in-place rule may have marked */
        }
    }
    int ns = p->nin + p->n;
    /* outputs: the last slot, and a few others (inputs are checked anyway) */
    p->out[p->nout++] = ns - 1;
    while (p->nout < DT_MAX_OUT && rbool(&r, 40) && ns > p->nin) {
        int s = p->nin + rint_(&r, p->n);
        p->out[p->nout++] = s;
    }
    if (p->grad) {
        bool any = false;
        for (int j = 0; j < p->nout; j++) any |= T[p->out[j]].rg;
        for (int s = ns - 1; !any && s >= p->nin; s--)
            if (T[s].rg && p->nout < DT_MAX_OUT) { p->out[p->nout++] = s; any = true; }
        if (!any) {
            p->grad = 0;
            for (int i = 0; i < p->nin; i++) p->in[i].rg = false;
            if (!dt_validate(p, NULL)) { /* rg decided some choices: start over without */
                dt_genopts o2 = *o;
                o2.no_grad = true;
                dt_generate(p, seed, &o2);
            }
        }
    }
}

int dt_num_rg(const dt_program *p)
{
    int n = 0;
    for (int i = 0; i < p->nin; i++) n += p->in[i].rg;
    return n;
}

int dt_num_outputs(const dt_program *p) { return p->nout + (p->grad ? dt_num_rg(p) : 0); }

bool dt_has_break(const dt_program *p)
{
    for (int k = 0; k < p->n; k++)
        if (p->ins[k].op == OP_BREAK || p->ins[k].op == OP_ITEM) return true;
    return false;
}

int dt_op_of_last(const dt_program *p) { return p->n ? p->ins[p->n - 1].op : -1; }


/* ---------------------------------------------------------- interpreter */

/* The sizes of instruction `in` (a DT_B entry read with tt_dim_size). */
static void shape_of(const dt_instr *in, tt_tensor **S, int64_t *out)
{
    for (int k = 0; k < in->ni; k++)
        out[k] = in->i[k] == DT_B ? tt_dim_size(S[in->bslot], in->bdim) : in->i[k];
}

static tt_tensor *unary(int u, tt_tensor *a)
{
    switch (u) {
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
    case U_GELU_TANH: return tt_gelu_tanh(a);
    case U_ABS: return tt_abs(a);
    case U_SIGN: return tt_call(tt_op_find("tt::sign"), tt_v_tensor(a));
    case U_ACOS: return tt_acos(a);
    case U_ASIN: return tt_asin(a);
    case U_ATAN: return tt_atan(a);
    case U_ACOSH: return tt_acosh(a);
    case U_ASINH: return tt_asinh(a);
    case U_ATANH: return tt_atanh(a);
    case U_SINH: return tt_sinh(a);
    case U_COSH: return tt_cosh(a);
    case U_TAN: return tt_tan(a);
    case U_ERF: return tt_erf(a);
    case U_EXPM1: return tt_expm1(a);
    case U_LOG1P: return tt_log1p(a);
    case U_LOG2: return tt_log2(a);
    case U_LOG10: return tt_log10(a);
    case U_RECIPROCAL: return tt_reciprocal(a);
    case U_FLOOR: return tt_floor(a);
    case U_CEIL: return tt_ceil(a);
    case U_TRUNC: return tt_trunc(a);
    default: return tt_round(a);
    }
}

static tt_tensor *cmp(int m, tt_tensor *a, tt_tensor *b)
{
    switch (m) {
    case 0: return tt_eq(a, b);
    case 1: return tt_ne(a, b);
    case 2: return tt_lt(a, b);
    case 3: return tt_le(a, b);
    case 4: return tt_gt(a, b);
    default: return tt_ge(a, b);
    }
}

/* A number as the library's wrappers pass it: whole numbers as ints (so
 * an integer tensor stays one), the rule the model assumes. */
static tt_value num(double v) { return dt_integral(v) ? tt_v_int((int64_t)v) : tt_v_float(v); }

/* An in-place call's status as the slot's value (the target itself). */
static tt_tensor *inplace(tt_status st, tt_tensor *a) { return st == TT_OK ? a : NULL; }
static tt_tensor *inplace_op(tt_tensor *r, tt_tensor *a)
{
    if (!r)
        return NULL;
    tt_release(r); /* the extra reference an in-place op call returns */
    return a;
}

static tt_tensor *exec1(const dt_program *p, const dt_instr *in, tt_tensor **S)
{
    (void)p;
    tt_tensor *a = in->a >= 0 ? S[in->a] : NULL, *b = in->b >= 0 ? S[in->b] : NULL;
    tt_tensor *c = in->c >= 0 ? S[in->c] : NULL;
    int64_t sh[DT_MAX_ND + 1];
    switch (in->op) {
    case OP_ADD: return tt_add(a, b);
    case OP_SUB: return tt_sub(a, b);
    case OP_MUL: return tt_mul(a, b);
    case OP_DIV: return tt_div(a, b);
    case OP_POW: return tt_pow(a, b);
    case OP_ADDS: return tt_add_scaled(a, b, in->f);
    case OP_ADD_SC: return tt_add_scalar(a, in->f);
    case OP_SUB_SC: return tt_sub_scalar(a, in->f);
    case OP_MUL_SC: return tt_mul_scalar(a, in->f);
    case OP_DIV_SC: return tt_div_scalar(a, in->f);
    case OP_POW_SC: return tt_pow_scalar(a, in->f);
    case OP_SC_POW: return tt_scalar_pow(in->f, a);
    case OP_DIV_MODE: return tt_div_mode(a, b, dt_modes[in->mode & 1]);
    case OP_DIV_SC_MODE: return tt_div_scalar_mode(a, in->f, dt_modes[in->mode & 1]);
    case OP_CMP: return cmp(in->mode, a, b);
    case OP_CMP_SC: return tt_call(tt_op_find(dt_cmp_sc_op[in->mode]), tt_v_tensor(a), num(in->f));
    case OP_WHERE: return tt_where(a, b, c);
    case OP_WHERE_SC: return tt_where_scalar(a, in->f, b);
    case OP_WHERE_OSC: return tt_where_other_scalar(a, b, in->f);
    case OP_WHERE_SS: return tt_call(tt_op_find("tt::where.Scalar"), tt_v_tensor(a), num(in->f), num(in->g));
    case OP_AS_STRIDED: {
        int64_t sz[2] = {in->i[0], in->i[1]}, st[2] = {in->i[2], in->i[3]};
        return tt_as_strided(a, in->ni, sz, st, in->i[4]);
    }
    case OP_CLAMP: return tt_clamp(a, in->f, in->g);
    case OP_CLAMP_T: return tt_clamp_tensor(a, b, c);
    case OP_UNARY:
        /* --self-test plants bugs in what the tracer sees (fake tensors):
         * a wrong op (1) or a crash (2) */
        if (dt_plant && in->mode == U_NEG && tt_is_fake(a)) {
            if (dt_plant == 2)
                raise(SIGSEGV);
            return tt_abs(a);
        }
        return unary(in->mode, a);
    case OP_IADD: return inplace(tt_add_(a, b), a);
    case OP_ISUB: return inplace(tt_sub_(a, b), a);
    case OP_IMUL: return inplace(tt_mul_(a, b), a);
    case OP_IDIV: return inplace(tt_div_(a, b), a);
    case OP_IADDS: return inplace(tt_add_scaled_(a, b, in->f), a);
    case OP_IMUL_SC: return inplace(tt_mul_scalar_(a, in->f), a);
    case OP_IADD_SC: return inplace(tt_add_scalar_(a, in->f), a);
    case OP_ISUB_SC: return inplace(tt_sub_scalar_(a, in->f), a);
    case OP_IDIV_SC: return inplace(tt_div_scalar_(a, in->f), a);
    case OP_IDIV_MODE:
        if (b)
            return inplace_op(tt_call(tt_op_find("tt::div_.Tensor_mode"), tt_v_tensor(a),
                                      tt_v_tensor(b), tt_v_str(dt_modes[in->mode & 1])), a);
        return inplace_op(tt_call(tt_op_find("tt::div_.Scalar_mode"), tt_v_tensor(a),
                                  num(in->f), tt_v_str(dt_modes[in->mode & 1])), a);
    case OP_IRELU: return inplace(tt_relu_(a), a);
    case OP_IZERO: return inplace(tt_zero_(a), a);
    case OP_ICOPY: return inplace(tt_copy_(a, b), a);
    case OP_IFILL: return inplace(tt_fill_(a, in->f), a);
    case OP_SUM: return tt_sum(a, in->ni, in->i, in->mode & 1);
    case OP_MEAN: return tt_mean(a, in->ni, in->i, in->mode & 1);
    case OP_AMAX: return tt_amax(a, in->ni, in->i, in->mode & 1);
    case OP_AMIN: return tt_amin(a, in->ni, in->i, in->mode & 1);
    case OP_SUM_ALL: return tt_sum_all(a);
    case OP_MEAN_ALL: return tt_mean_all(a);
    case OP_ARGMAX: return tt_argmax(a, (int)in->i[0], in->mode & 1);
    case OP_SOFTMAX: return tt_softmax(a, (int)in->i[0]);
    case OP_LOG_SOFTMAX: return tt_log_softmax(a, (int)in->i[0]);
    case OP_MM: return tt_mm(a, b);
    case OP_BMM: return tt_bmm(a, b);
    case OP_MATMUL: return tt_matmul(a, b);
    case OP_LINEAR: return tt_linear(a, b, c);
    case OP_VIEW: shape_of(in, S, sh); return tt_view(a, in->ni, sh);
    case OP_RESHAPE: shape_of(in, S, sh); return tt_reshape(a, in->ni, sh);
    case OP_PERMUTE: return tt_permute(a, in->ni, in->i);
    case OP_TRANSPOSE: return tt_transpose(a, (int)in->i[0], (int)in->i[1]);
    case OP_T: return tt_t(a);
    case OP_NARROW: return tt_narrow(a, (int)in->i[0], in->i[1], in->i[2]);
    case OP_SLICE: return tt_slice(a, (int)in->i[0], in->i[1], in->i[2], in->i[3]);
    case OP_SELECT: return tt_select(a, (int)in->i[0], in->i[1]);
    case OP_EXPAND: shape_of(in, S, sh); return tt_expand(a, in->ni, sh);
    case OP_SQUEEZE: return tt_squeeze(a, (int)in->i[0]);
    case OP_SQUEEZE_ALL: return tt_squeeze_all(a);
    case OP_SQUEEZE_DIMS: return tt_squeeze_dims(a, in->ni, in->i);
    case OP_UNSQUEEZE: return tt_unsqueeze(a, (int)in->i[0]);
    case OP_FLATTEN: return tt_flatten(a, (int)in->i[0], (int)in->i[1]);
    case OP_CONTIGUOUS: return tt_contiguous(a);
    case OP_CLONE: return tt_clone(a);
    case OP_TO_DTYPE: return tt_to_dtype(a, (tt_dtype)in->mode);
    case OP_DETACH: return tt_detach(a);
    case OP_CAT: case OP_STACK: {
        tt_tensor *ts[3] = {a, b, c};
        int n = c ? 3 : (b ? 2 : 1);
        return in->op == OP_CAT ? tt_cat(n, ts, (int)in->i[0]) : tt_stack(n, ts, (int)in->i[0]);
    }
    case OP_CE: return tt_cross_entropy(a, b);
    case OP_EMBEDDING: return tt_embedding(a, b);
    case OP_LAYER_NORM: {
        int64_t last = tt_dim_size(a, -1);
        return tt_layer_norm(a, 1, &last, b, c, 1e-5);
    }
    case OP_SDPA: return tt_scaled_dot_product_attention(a, a, a, in->mode & 1, 0);
    case OP_GLOBAL_NORM: {
        tt_tensor *ts[2] = {a, b};
        return tt_global_norm(b ? 2 : 1, ts);
    }
    case OP_FULL: {
        int n = tt_ndim(a);
        int64_t s[DT_MAX_ND];
        for (int k = 0; k < n; k++) s[k] = tt_dim_size(a, k);
        return tt_full(n, s, in->f, (tt_dtype)in->mode);
    }
    case OP_ARANGE: return tt_arange(0, (double)in->i[0], 1, (tt_dtype)in->mode);
    case OP_LINSPACE: return tt_linspace(-1, 2, in->i[0], (tt_dtype)in->mode);
    case OP_BREAK: {
        /* an explicit break; the value is a constant */
        tt_status st = tt_graph_break("difftest: explicit break");
        if (st != TT_OK && tt_errcode() != TT_EGRAPHBREAK)
            return NULL;
        if (st != TT_OK && st != TT_EGRAPHBREAK)
            return NULL;
        tt_clear_error();
        return tt_scalar(1.0, TT_F32);
    }
    case OP_ITEM: {
        /* tt_item, or (mode & 1) its op, tt::_local_scalar_dense */
        tt_tensor *s = tt_sum_all(b);
        double v = 0;
        if (!s)
            return NULL;
        tt_status st;
        if (in->mode & 1) {
            tt_value n = {0};
            st = tt_op_call(tt_op_find("tt::_local_scalar_dense"), (tt_value[]){tt_v_tensor(s)}, 1,
                            &n, 1);
            if (st == TT_OK)
                v = n.kind == TT_V_FLOAT ? n.u.f : n.kind == TT_V_INT ? (double)n.u.i : n.u.b;
        } else {
            st = tt_item(s, &v);
        }
        if (st != TT_OK && st != TT_EGRAPHBREAK)
            return NULL;
        tt_clear_error();
        return tt_mul_scalar(a, v > 0 ? 1.0 : 2.0);
    }
    default:
        if (in->op >= DT_FIRST_ADV && in->op < OP_COUNT)
            return dt_exec_adv(in, S);
        if (in->op >= DT_FIRST_INDEX && in->op < OP_COUNT)
            return dt_exec_index(in, S);
        if (in->op >= DT_FIRST_CNN && in->op < OP_COUNT)
            return dt_exec_cnn(in, S);
        tt_error(TT_EINVAL, "difftest: unknown op %d", in->op);
        return NULL;
    }
}

static bool out_is_float(const tt_tensor *t) { return tt_dtype_is_float(tt_dtype_of(t)); }

tt_status dt_program_fn(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    const dt_program *p = ud;
    tt_tensor *S[DT_MAX_SLOTS];
    tt_status st = TT_OK;
    int nrg = dt_num_rg(p);
    if (nin != p->nin || nout != dt_num_outputs(p))
        return tt_error(TT_EINVAL, "difftest: program wants %d inputs, %d outputs", p->nin,
                        dt_num_outputs(p));
    for (int j = 0; j < nout; j++)
        out[j] = NULL;
    tt_scope_begin();
    for (int i = 0; i < nin; i++)
        S[i] = in[i];
    for (int k = 0; k < p->n; k++) {
        S[p->nin + k] = exec1(p, &p->ins[k], S);
        if (!S[p->nin + k]) {
            st = tt_errcode() != TT_OK ? tt_errcode() : TT_EINTERNAL;
            goto done;
        }
    }
    for (int j = 0; j < p->nout; j++)
        out[j] = tt_retain(S[p->out[j]]);
    if (p->grad && nrg) {
        tt_tensor *loss = NULL, *X[DT_MAX_IN], *G[DT_MAX_IN] = {0};
        int nx = 0;
        for (int i = 0; i < nin; i++)
            if (p->in[i].rg) X[nx++] = in[i];
        for (int j = 0; j < p->nout; j++) {
            if (!out_is_float(out[j]) || !tt_requires_grad(out[j]))
                continue;
            tt_tensor *s = tt_sum_all(out[j]);
            loss = loss ? tt_add(loss, s) : s;
            if (!loss) { st = tt_errcode(); goto done; }
        }
        if (!loss) {
            st = tt_error(TT_EINVAL, "difftest: no output requires grad");
            goto done;
        }
        if (p->grad == 1) {
            st = tt_grad(1, &loss, NULL, nx, X, G);
            for (int i = 0; i < nx; i++)
                if (G[i]) tt_scope_adopt(G[i]);
        } else {
            st = tt_backward(loss, NULL);
            for (int i = 0; st == TT_OK && i < nx; i++) {
                G[i] = tt_get_grad(X[i]);
                if (G[i]) tt_scope_adopt(G[i]);
                else G[i] = tt_zeros(tt_ndim(X[i]), tt_sizes(X[i]), tt_dtype_of(X[i]));
            }
        }
        if (st != TT_OK)
            goto done;
        for (int i = 0; i < nx; i++) {
            if (!G[i]) { st = tt_errcode() != TT_OK ? tt_errcode() : TT_EINTERNAL; goto done; }
            out[p->nout + i] = tt_retain(G[i]);
        }
        /* one SGD step on the writable parameters */
        tt_no_grad_begin();
        for (int i = 0, k = 0; i < nin; i++) {
            if (!p->in[i].rg)
                continue;
            if (st == TT_OK && p->in[i].lay != LAY_EXPANDED)
                st = tt_add_scaled_(in[i], G[k], -0.5);
            k++;
        }
        tt_no_grad_end();
    }
done:
    tt_scope_end();
    if (st != TT_OK)
        for (int j = 0; j < nout; j++)
            out[j] = tt_release(out[j]);
    return st;
}

/* ---------------------------------------------------------------- inputs */

void dt_input_values(const dt_program *p, int i, uint64_t vs, int64_t n, double *v)
{
    const dt_input *x = &p->in[i];
    rng r = {p->seed * 31 + vs * 0x9e3779b97f4a7c15ull + (uint64_t)i * 1000003};
    for (int64_t k = 0; k < n; k++) {
        switch (x->dt) {
        case TT_F32: case TT_F64:
            v[k] = x->val == VAL_POS ? (rint_(&r, 16) + 1) / 8.0 : (rint_(&r, 33) - 16) / 8.0;
            break;
        case TT_U8: v[k] = rint_(&r, 9); break;
        case TT_BOOL: v[k] = rint_(&r, 2); break;
        default: v[k] = x->val == VAL_INDEX ? rint_(&r, (int)x->range) : rint_(&r, 9) - 4; break;
        }
    }
}

/* The stored (base) sizes of input i and how the input views them. */
int dt_base_sizes_of(const dt_input *x, int64_t b, int64_t *bs, int64_t *vs)
{
    for (int k = 0; k < x->nd; k++)
        bs[k] = vs[k] = x->s[k] == DT_B ? b : x->s[k];
    switch (x->lay) {
    case LAY_TRANSPOSED: { int64_t t = bs[x->nd - 1]; bs[x->nd - 1] = bs[x->nd - 2]; bs[x->nd - 2] = t; break; }
    case LAY_STRIDED: bs[x->nd - 1] *= 2; break;
    case LAY_OFFSET: bs[0] += 1; break;
    case LAY_EXPANDED: bs[x->lay_dim] = 1; break;
    default: break;
    }
    return x->nd;
}

static tt_tensor *make_input(const dt_program *p, int i, int64_t b, uint64_t vs)
{
    const dt_input *x = &p->in[i];
    int64_t bs[DT_MAX_ND], s[DT_MAX_ND], n = 1;
    int nd = dt_base_sizes_of(x, b, bs, s);
    for (int k = 0; k < nd; k++) n *= bs[k];
    double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
    if (!v) { tt_error(TT_ENOMEM, "difftest: input values"); return NULL; }
    dt_input_values(p, i, vs, n, v);
    tt_tensor *d = tt_from_data(nd, bs, TT_F64, v), *base = d ? tt_to_dtype(d, x->dt) : NULL, *t = NULL;
    free(v);
    tt_release(d);
    if (!base) return NULL;
    switch (x->lay) {
    case LAY_TRANSPOSED: t = tt_transpose(base, -1, -2); break;
    case LAY_STRIDED: t = tt_slice(base, -1, 0, bs[nd - 1], 2); break;
    case LAY_OFFSET: t = tt_narrow(base, 0, 1, s[0]); break;
    case LAY_EXPANDED: t = tt_expand(base, nd, s); break;
    default: t = tt_retain(base); break;
    }
    tt_release(base);
    if (t && x->rg && tt_set_requires_grad(t, true) != TT_OK)
        t = tt_release(t);
    return t;
}

tt_status dt_make_inputs(const dt_program *p, int64_t b, uint64_t vs, tt_tensor **in)
{
    for (int i = 0; i < p->nin; i++) {
        in[i] = make_input(p, i, b, vs);
        if (!in[i]) {
            tt_status st = tt_errcode();
            for (int j = 0; j < i; j++) in[j] = tt_release(in[j]);
            return st != TT_OK ? st : TT_EINTERNAL;
        }
    }
    return TT_OK;
}
