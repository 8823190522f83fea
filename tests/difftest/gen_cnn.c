/* tt-difftest: the CNN ops (conv2d ... sgd_): their shape/dtype rules
 * (PyTorch's), random arguments and calls through the public wrappers.
 * gen.c's model(), propose() and exec1() hand these ops here. */
#include "dt_gen.h"

#include <math.h>
#include <string.h>

/* ------------------------------------------------------- CNN op rules */

/* D, a parameter vector ([n] of dtype dt, n >= need) the op slices its
 * weights from. */
static bool param_ok(const dt_vtype *D, tt_dtype dt, int64_t need)
{
    return D && D->nd == 1 && D->dt == dt && D->s[0] != DT_B && D->s[0] >= need;
}
/* An operand the op writes in place (batch_norm's running statistics,
 * sgd_'s parameter and buffer): the in-place entries' rules. */
static bool written_ok(const dt_program *p, const dt_vtype *T, const dt_vtype *X)
{
    bool grad = p->grad != 0;
    if (!X->writable || X->rg || (grad && (T[X->root].rg || T[X->root].saved)))
        return false;
    if (X->root < p->nin && p->in[X->root].val == VAL_INDEX)
        return false;
    return !(grad && X->root < p->nin && p->in[X->root].rg);
}
/* The write lands in every alias of the root's storage. */
static void mark_written(dt_vtype *T, int root, int slot)
{
    for (int i = 0; i < slot; i++)
        if (T[i].root == root && is_f(T[i].dt)) T[i].fuzzy = true;
}
/* Padding, upsampling and transposed convolutions grow their input: a
 * chain of them must stay small (the batch counted as 8). */
static bool too_big(const dt_vtype *v)
{
    double n = 1;
    for (int k = 0; k < v->nd; k++) n *= v->s[k] == DT_B ? 8 : (double)v->s[k];
    return n > 4096;
}
/* PyTorch's output sizes of a convolution and a pooling. */
static int64_t conv_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool tr, int64_t op)
{
    if (tr)
        return (in - 1) * s - 2 * p + d * (k - 1) + op + 1;
    int64_t num = in + 2 * p - d * (k - 1) - 1;
    return num < 0 ? 0 : num / s + 1;
}
static int64_t pool_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil)
{
    int64_t num = in + 2 * p - d * (k - 1) - 1 + (ceil ? s - 1 : 0);
    if (num < 0)
        return 0;
    int64_t o = num / s + 1;
    /* the last window must start inside the input or its left padding */
    if (ceil && (o - 1) * s >= in + p)
        o--;
    return o;
}

bool dt_model_cnn(const dt_program *p, const dt_instr *in, dt_vtype *T, int slot, dt_vtype *res)
{
    const dt_vtype *A = in->a >= 0 && in->a < slot ? &T[in->a] : NULL;
    const dt_vtype *B = in->b >= 0 && in->b < slot ? &T[in->b] : NULL;
    const dt_vtype *C = in->c >= 0 && in->c < slot ? &T[in->c] : NULL;
    const dt_vtype *D = in->d >= 0 && in->d < slot ? &T[in->d] : NULL;
    int nr = 0;
    int64_t r[DT_MAX_ND + 1] = {0};
    bool grad = p->grad != 0;
    if (!A)
        return false;
    switch (in->op) {
    case OP_CONV2D: case OP_CONV1D: {
        /* x [N, C, *sp] or unbatched [C, *sp]; the weight [O, C/g, k...]
         * (transposed: [C, O/g, k...]) and the bias [O] are read from the
         * parameter vector D */
        int sp = in->op == OP_CONV2D ? 2 : 1;
        if (!is_f(A->dt) || (A->nd != sp + 2 && A->nd != sp + 1)) return false;
        int cd = A->nd - sp - 1;
        int64_t cin = A->s[cd], o = in->i[0], g = in->mode & 0xff, st = in->i[3], pd = in->i[4];
        int64_t dl = in->i[5], opad = (in->mode >> 12) & 0xf;
        bool tr = in->mode & 0x200, bias = in->mode & 0x100;
        if (cin == DT_B || g < 1 || o < 1 || cin % g || o % g || st < 1 || pd < 0 || dl < 1)
            return false;
        if (in->g != (double)cin) return false; /* exec1 builds the weight from g */
        /* PyTorch: output padding below the stride or the dilation */
        if (opad && (!tr || (opad >= st && opad >= dl))) return false;
        int64_t nw = tr ? cin * (o / g) : o * (cin / g);
        nr = A->nd;
        memcpy(r, A->s, sizeof(int64_t) * (size_t)nr);
        r[cd] = o;
        for (int k = 0; k < sp; k++) {
            int64_t ks = in->i[1 + k], x = A->s[cd + 1 + k];
            if (x == DT_B || ks < 1) return false;
            nw *= ks;
            int64_t y = conv_out(x, ks, st, pd, dl, tr, opad);
            if (y < 1) return false;
            r[cd + 1 + k] = y;
        }
        if (!param_ok(D, A->dt, nw + (bias ? o : 0))) return false;
        *res = fresh(A->dt, nr, r, slot);
        if (too_big(res)) return false;
        res->fuzzy = true;
        res->rg = A->rg || D->rg;
        res->contig = A->contig;
        /* & 0x400: relu(conv) in one instruction, a chain nothing else
         * reads, which compiled plans fold into tt::_convolution_pointwise
         * (the random mix of ops never gives one); not transposed (the
         * pass leaves those), not under gradients (relu's at rounded 0s) */
        if ((in->mode & 0x400) && (tr || res->rg)) return false;
        return true;
    }
    case OP_MAXPOOL2D: case OP_AVGPOOL2D: case OP_MAXPOOL1D: case OP_AVGPOOL1D: {
        int sp = in->op == OP_MAXPOOL2D || in->op == OP_AVGPOOL2D ? 2 : 1;
        bool mx = in->op == OP_MAXPOOL2D || in->op == OP_MAXPOOL1D;
        if (!is_f(A->dt) || (A->nd != sp + 1 && A->nd != sp + 2)) return false;
        int64_t dl = in->i[4] ? in->i[4] : 1;
        if ((!mx && dl != 1) || dl < 1 || in->i[5] < 0) return false;
        /* avg_pool1d has no divisor_override in PyTorch */
        if (in->i[5] && in->op != OP_AVGPOOL2D) return false;
        if ((in->mode & 2) && mx) return false;
        *res = fresh(A->dt, A->nd, A->s, slot);
        for (int k = 0; k < sp; k++) {
            int d = A->nd - sp + k;
            int64_t ks = in->i[k], st = in->i[2] ? in->i[2] : ks, pd = in->i[3], x = A->s[d];
            if (x == DT_B || ks < 1 || st < 1 || pd < 0 || pd > ks / 2) return false;
            int64_t y = pool_out(x, ks, st, pd, dl, in->mode & 1);
            if (y < 1) return false;
            /* a dilated window wholly in the padding has no maximum
             * (PyTorch's index is then out of the plane) */
            for (int64_t o = 0; mx && o < y; o++) {
                bool any = false;
                for (int64_t j = 0; j < ks; j++) {
                    int64_t pos = o * st - pd + j * dl;
                    any |= pos >= 0 && pos < x;
                }
                if (!any) return false;
            }
            res->s[d] = y;
        }
        res->fuzzy = !mx || A->fuzzy;
        res->rg = A->rg;
        res->contig = A->contig;
        return true;
    }
    case OP_MAXPOOL3D: case OP_AVGPOOL3D: {
        /* i[0..2] kernel, i[3] stride (0: the kernel), i[4] padding, i[5]
         * dilation (max) or divisor_override (avg); mode as the others' */
        bool mx = in->op == OP_MAXPOOL3D;
        if (!is_f(A->dt) || (A->nd != 4 && A->nd != 5)) return false;
        int64_t dl = mx && in->i[5] ? in->i[5] : 1;
        if (dl < 1 || (!mx && in->i[5] < 0) || ((in->mode & 2) && mx)) return false;
        *res = fresh(A->dt, A->nd, A->s, slot);
        for (int k = 0; k < 3; k++) {
            int d = A->nd - 3 + k;
            int64_t ks = in->i[k], st = in->i[3] ? in->i[3] : ks, pd = in->i[4], x = A->s[d];
            if (x == DT_B || ks < 1 || st < 1 || pd < 0 || pd > ks / 2) return false;
            /* avg_pool3d wants each input size at least the kernel (padding aside) */
            if (!mx && x < ks) return false;
            int64_t y = pool_out(x, ks, st, pd, dl, in->mode & 1);
            if (y < 1) return false;
            for (int64_t o = 0; mx && o < y; o++) {
                bool any = false;
                for (int64_t j = 0; j < ks; j++) {
                    int64_t pos = o * st - pd + j * dl;
                    any |= pos >= 0 && pos < x;
                }
                if (!any) return false;
            }
            res->s[d] = y;
        }
        res->fuzzy = !mx || A->fuzzy;
        res->rg = A->rg;
        res->contig = true; /* PyTorch 1.13's 3-d pools: contiguous out */
        return true;
    }
    case OP_ADAPTIVE:
        /* mode 2: adaptive_avg_pool3d of a [C, D, H, W] or [N, C, D, H, W]
         * to i[0] x i[1] x i[2] (contiguous out) */
        if (in->mode == 2) {
            if (!is_f(A->dt) || (A->nd != 4 && A->nd != 5) || in->i[0] < 1 || in->i[1] < 1 ||
                in->i[2] < 1)
                return false;
            for (int k = A->nd - 3; k < A->nd; k++)
                if (A->s[k] == DT_B) return false;
            *res = fresh(A->dt, A->nd, A->s, slot);
            for (int k = 0; k < 3; k++) res->s[A->nd - 3 + k] = in->i[k];
            if (too_big(res)) return false;
            res->fuzzy = true;
            res->rg = A->rg;
            res->contig = true;
            return true;
        }
        /* mode & 1: adaptive_avg_pool1d of a [C, L] or [N, C, L] to i[1] */
        if (in->mode & 1) {
            if (!is_f(A->dt) || (A->nd != 2 && A->nd != 3) || in->i[1] < 1) return false;
            if (A->s[A->nd - 1] == DT_B) return false;
            *res = fresh(A->dt, A->nd, A->s, slot);
            res->s[A->nd - 1] = in->i[1];
            res->fuzzy = true;
            res->rg = A->rg;
            res->contig = A->contig;
            return true;
        }
        if (!is_f(A->dt) || (A->nd != 3 && A->nd != 4) || in->i[0] < 1 || in->i[1] < 1) return false;
        if (A->s[A->nd - 1] == DT_B || A->s[A->nd - 2] == DT_B) return false;
        *res = fresh(A->dt, A->nd, A->s, slot);
        res->s[A->nd - 2] = in->i[0];
        res->s[A->nd - 1] = in->i[1];
        if (too_big(res)) return false;
        res->fuzzy = true;
        res->rg = A->rg;
        res->contig = A->contig;
        return true;
    case OP_PAD: {
        /* mode 0 constant (any dtype, negative pads crop), 1 reflect and 2
         * replicate (the last n / 2 dims of an (n / 2 + 1)- or
         * (n / 2 + 2)-d input) */
        int n = in->ni, m = in->mode;
        if (n < 2 || n % 2 || n > 6 || n / 2 > A->nd || m < 0 || m > 2) return false;
        if (m == 0) {
            if (!is_f(A->dt) && !dt_integral(in->f)) return false;
            if (A->dt == TT_BOOL && in->f != 0 && in->f != 1) return false;
            if (A->dt == TT_U8 && in->f < 0) return false;
        } else {
            if (!is_f(A->dt)) return false;
            if (A->nd != n / 2 + 1 && A->nd != n / 2 + 2) return false;
        }
        *res = fresh(A->dt, A->nd, A->s, slot);
        for (int k = 0; k < n / 2; k++) {
            int d = A->nd - 1 - k;
            int64_t x = A->s[d], lo = in->i[2 * k], hi = in->i[2 * k + 1];
            if (x == DT_B || (m != 0 && (lo < 0 || hi < 0))) return false;
            if (m == 1 && (lo >= x || hi >= x)) return false;
            if (x + lo + hi < 1) return false;
            res->s[d] = x + lo + hi;
        }
        if (too_big(res)) return false;
        res->fuzzy = A->fuzzy;
        res->rg = A->rg && is_f(A->dt);
        return true;
    }
    case OP_UPSAMPLE: {
        /* mode & 3: nearest by size, nearest by scale, bilinear by size,
         * bilinear by scale; mode & 4: align_corners (bilinear) */
        int m = in->mode & 3;
        if (!is_f(A->dt) || A->nd != 4 || A->s[2] == DT_B || A->s[3] == DT_B) return false;
        if ((in->mode & 4) && m < 2) return false;
        int64_t oh = in->i[0], ow = in->i[1];
        if (m & 1) {
            if (!(in->f > 0 && in->g > 0)) return false;
            oh = (int64_t)floor((double)A->s[2] * in->f);
            ow = (int64_t)floor((double)A->s[3] * in->g);
        }
        if (oh < 1 || ow < 1) return false;
        *res = fresh(A->dt, 4, A->s, slot);
        res->s[2] = oh;
        res->s[3] = ow;
        if (too_big(res)) return false;
        res->fuzzy = m >= 2 || A->fuzzy;
        res->rg = A->rg;
        res->contig = A->contig;
        return true;
    }
    case OP_GRID_SAMPLE: {
        /* a [N, C, H, W] sampled at the grid b[:, :2] permuted to
         * [N, Ho, Wo, 2]; mode & 3 interpolation, (mode >> 2) & 3 padding,
         * & 16 align_corners. The grid's values pick pixels (floor,
         * round): it must be exact on both sides (not fuzzy). */
        int im = in->mode & 3, pm = (in->mode >> 2) & 3;
        if (!B || !is_f(A->dt) || A->nd != 4 || B->nd != 4 || B->dt != A->dt || im > 2 || pm > 2)
            return false;
        if (B->fuzzy || B->s[0] != A->s[0] || A->s[2] == DT_B || A->s[3] == DT_B) return false;
        if (B->s[1] == DT_B || B->s[1] < 2 || B->s[2] == DT_B || B->s[3] == DT_B) return false;
        int64_t rs[4] = {A->s[0], A->s[1], B->s[2], B->s[3]};
        *res = fresh(A->dt, 4, rs, slot);
        if (too_big(res)) return false;
        res->fuzzy = true;
        res->rg = A->rg || B->rg;
        return true;
    }
    case OP_BATCH_NORM: {
        /* x [N, C, *]; b running_mean, c running_var ([C], written in
         * training); D the parameter vector: weight, bias. mode & 1
         * training, & 2 weight, & 4 bias. */
        bool train = in->mode & 1, w = in->mode & 2, bi = in->mode & 4;
        if (!is_f(A->dt) || A->nd < 2 || A->s[1] == DT_B || in->g != (double)A->s[1]) return false;
        int64_t ch = A->s[1];
        if ((B == NULL) != (C == NULL) || (!train && !B)) return false;
        for (const dt_vtype *X = B;; X = C) {
            if (X && (X->dt != A->dt || X->nd != 1 || X->s[0] != ch)) return false;
            if (X == C) break;
        }
        if ((w || bi) && !param_ok(D, A->dt, 2 * ch)) return false;
        if (!(w || bi) && D) return false;
        if (train) {
            int nbd;
            int64_t per = cnumel(A, &nbd) / ch;
            if (!nbd && per <= 1) return false; /* PyTorch: more than one value per channel */
            if (B) {
                if (!written_ok(p, T, B) || !written_ok(p, T, C)) return false;
                if (B->root == C->root || B->root == A->root || C->root == A->root) return false;
                mark_written(T, B->root, slot);
                mark_written(T, C->root, slot);
            }
        }
        *res = fresh(A->dt, A->nd, A->s, slot);
        res->fuzzy = true;
        res->rg = A->rg || (D && D->rg);
        res->contig = A->contig;
        return true;
    }
    case OP_GROUP_NORM: {
        bool w = in->mode & 2, bi = in->mode & 4;
        if (!is_f(A->dt) || A->nd < 2 || A->s[1] == DT_B || in->i[0] < 1 || A->s[1] % in->i[0]) return false;
        if (in->g != (double)A->s[1]) return false;
        if ((w || bi) && !param_ok(D, A->dt, 2 * A->s[1])) return false;
        if (!(w || bi) && D) return false;
        *res = fresh(A->dt, A->nd, A->s, slot);
        res->fuzzy = true;
        res->rg = A->rg || (D && D->rg);
        res->contig = A->contig;
        return true;
    }
    case OP_NATIVE_LN: {
        /* over the last i[0] dims; mode & 3: which result (out, mean,
         * rstd); & 4 weight, & 8 bias (from D) */
        int k = (int)in->i[0], which = in->mode & 3;
        bool w = in->mode & 4, bi = in->mode & 8;
        if (!is_f(A->dt) || k < 1 || k > A->nd || which > 2) return false;
        int64_t n = 1;
        if (k > 2) return false;
        for (int j = A->nd - k; j < A->nd; j++) {
            if (A->s[j] == DT_B || A->s[j] != in->i[1 + j - (A->nd - k)]) return false;
            n *= A->s[j];
        }
        if ((w || bi) && !param_ok(D, A->dt, 2 * n)) return false;
        if (!(w || bi) && D) return false;
        *res = fresh(A->dt, A->nd, A->s, slot);
        if (which)
            for (int j = A->nd - k; j < A->nd; j++) res->s[j] = 1;
        res->fuzzy = true;
        /* mean and rstd require grad too, as PyTorch's (their gradients
         * are dropped) */
        res->rg = A->rg || (D && D->rg);
        return true;
    }
    case OP_DROPOUT: {
        /* mode 0: p 0, training; 1: p 1, training; 2: not training (x
         * itself); 3: p = f, training (random: both sides seeded alike) */
        int m = in->mode;
        if (!is_f(A->dt) || m < 0 || m > 3 || !(in->f >= 0 && in->f <= 1)) return false;
        /* Not training (mode 2) gives a view of x (FINDINGS F20, fixed);
         * a random mask (mode 3) matches eager's after any dropouts, dead
         * ones included (F21, fixed: plans keep every draw). */
        if (m == 2) { /* a view of x, as F.dropout returns x itself */
            *res = *A;
            return true;
        }
        *res = fresh(A->dt, A->nd, A->s, slot);
        res->fuzzy = A->fuzzy || m == 3;
        res->rg = A->rg;
        res->contig = A->contig;
        return true;
    }
    case OP_ACT: {
        int m = in->mode;
        if (m < 0 || m >= ACT_COUNT || A->dt == TT_BOOL) return false;
        if (m == ACT_HARDTANH) {
            if (isnan(in->f) || isnan(in->g)) return false;
            /* integers too (I64, I32), with whole bounds */
            if (!is_f(A->dt) && (A->dt == TT_U8 || !dt_integral(in->f) || !dt_integral(in->g)))
                return false;
        } else if (!is_f(A->dt)) {
            return false;
        }
        if (m == ACT_SOFTPLUS && (in->f == 0 || isnan(in->g))) return false;
        *res = fresh(A->dt, A->nd, A->s, slot);
        res->fuzzy = is_f(A->dt) && (A->fuzzy || m != ACT_HARDTANH);
        res->rg = A->rg && is_f(A->dt);
        res->contig = A->contig;
        return true;
    }
    case OP_MSE: case OP_SMOOTH_L1: case OP_BCE_LOGITS: {
        /* mode & 3: reduction mean, sum, none */
        int red = in->mode & 3;
        if (!B || !is_f(A->dt) || B->dt != A->dt || red > 2) return false;
        if (!bcast(A->nd, A->s, B->nd, B->s, &nr, r)) return false;
        if (in->op == OP_SMOOTH_L1 && !(in->f >= 0)) return false;
        if (in->op == OP_BCE_LOGITS) {
            /* y of x's shape; weight (c) and pos_weight (d) broadcast to it */
            if (A->nd != B->nd || memcmp(A->s, B->s, sizeof(int64_t) * (size_t)A->nd)) return false;
            for (const dt_vtype *X = C;; X = D) {
                int n2;
                int64_t r2[DT_MAX_ND + 1];
                if (X && (X->dt != A->dt || !bcast(A->nd, A->s, X->nd, X->s, &n2, r2) || n2 != A->nd ||
                          memcmp(r2, A->s, sizeof(int64_t) * (size_t)A->nd)))
                    return false;
                if (X == D) break;
            }
        } else if (C || D) {
            return false;
        }
        *res = fresh(A->dt, red == 2 ? nr : 0, r, slot);
        res->fuzzy = true;
        res->rg = A->rg || B->rg || (C && C->rg) || (D && D->rg);
        /* unreduced, it is elementwise: laid out like its inputs (seed
         * 3085: after sdpa_ext's transposed result, view refused) */
        if (red == 2 && (!A->contig || !B->contig)) res->contig = false;
        return true;
    }
    case OP_NLL: {
        /* log_probs [N, C] or [N, C, d...]; target b an index input of
         * that shape without C; mode & 3 reduction, & 4 weight (D's
         * first C), & 8 ignore_index i[0] */
        int red = in->mode & 3;
        if (!B || !is_f(A->dt) || A->nd < 2 || A->nd > 4 || B->dt != TT_I64 || red > 2) return false;
        if (in->b >= p->nin || p->in[in->b].val != VAL_INDEX || B->root != in->b) return false;
        if (A->s[1] == DT_B || A->s[1] < p->in[in->b].range || B->nd != A->nd - 1) return false;
        if ((in->mode & 4) && in->g != (double)A->s[1]) return false;
        for (int k = 0; k < B->nd; k++)
            if (B->s[k] != A->s[k == 0 ? 0 : k + 1]) return false;
        if (in->mode & 4) {
            /* the weight is no differentiable input (PyTorch's) */
            if (!param_ok(D, A->dt, A->s[1]) || (grad && D->rg)) return false;
        } else if (D) {
            return false;
        }
        *res = fresh(A->dt, red == 2 ? B->nd : 0, B->s, slot);
        res->fuzzy = true;
        res->rg = A->rg;
        return true;
    }
    case OP_SGD: {
        /* param a and (with momentum) buffer c updated in place from
         * grad b; mode & 1 momentum 0.9, & 2 nesterov, & 4 maximize,
         * & 8 weight_decay 0.1, & 16 dampening 0.5; f lr; i[0] step */
        bool mom = in->mode & 1;
        if (!is_f(A->dt) || !B || B->dt != A->dt || B->nd != A->nd || (mom != (C != NULL))) return false;
        if (memcmp(A->s, B->s, sizeof(int64_t) * (size_t)A->nd)) return false;
        if ((in->mode & 2) && (!mom || (in->mode & 16))) return false;
        if (!(in->f >= 0) || in->i[0] < 1) return false;
        if (!written_ok(p, T, A) || (grad && B->rg) || B->root == A->root) return false;
        if (A->root < p->nin && p->in[A->root].val == VAL_POS) return false;
        if (C) {
            if (C->dt != A->dt || C->nd != A->nd || memcmp(A->s, C->s, sizeof(int64_t) * (size_t)A->nd))
                return false;
            if (!written_ok(p, T, C) || C->root == A->root || C->root == B->root) return false;
            mark_written(T, C->root, slot);
        }
        mark_written(T, A->root, slot);
        *res = *A;
        res->fuzzy = true;
        return true;
    }
    default:
        return false;
    }
}

/* A slot of rank >= minnd whose dims after the first are concrete (an
 * image [N, C, H, W], [N, C, L], [N, C]), else `dflt`. */
static int pick_image(rng *r, const dt_vtype *T, int nslots, int minnd, int dflt)
{
    for (int t = 0; t < 12; t++) {
        int s = t < 4 ? nslots - 1 - rint_(r, 3) : rint_(r, nslots);
        if (s < 0 || T[s].nd < minnd || !is_f(T[s].dt)) continue;
        bool ok = true;
        for (int k = 1; k < T[s].nd; k++) ok &= T[s].s[k] != DT_B;
        if (ok) return s;
    }
    return dflt;
}
/* A parameter vector for the weights: a 1-d slot of dtype dt. */
static int find_param(rng *r, const dt_vtype *T, int nslots, tt_dtype dt)
{
    int best = -1;
    for (int s = 0; s < nslots; s++)
        if (T[s].nd == 1 && T[s].dt == dt && T[s].s[0] != DT_B && T[s].s[0] >= 16 &&
            (best < 0 || rbool(r, 30)))
            best = s;
    return best;
}

void dt_propose_cnn(rng *r, const dt_program *p, const dt_vtype *T, int nslots, int op, dt_instr *in)
{
    const dt_vtype *A = &T[in->a];
    switch (op) {
    case OP_CONV2D: case OP_CONV1D: {
        int sp = op == OP_CONV2D ? 2 : 1;
        in->a = pick_image(r, T, nslots, sp + 1, in->a);
        A = &T[in->a];
        int cd = A->nd - sp - 1;
        int64_t cin = cd >= 0 && A->s[cd] != DT_B ? A->s[cd] : 1;
        bool tr = rbool(r, 25);
        int64_t g = 1;
        if (rbool(r, 40)) g = cin; /* depthwise (with a multiplier below) */
        else if (cin % 2 == 0 && rbool(r, 30)) g = 2;
        in->i[0] = g * (1 + rint_(r, g > 1 ? 2 : 4));
        in->i[1] = 1 + rint_(r, 3);
        in->i[2] = 1 + rint_(r, 3);
        in->i[3] = 1 + (rbool(r, 30) ? rint_(r, 2) + 1 : 0);
        in->i[4] = rbool(r, 50) ? rint_(r, 3) : 0;
        in->i[5] = rbool(r, 20) ? 2 : 1;
        /* output_padding (transposed only): below the stride or the
         * dilation, as PyTorch requires (FINDINGS F22, fixed) */
        int64_t most = in->i[3] > in->i[5] ? in->i[3] : in->i[5];
        int64_t opad = tr && rbool(r, 40) ? rint_(r, (int)most) : 0;
        in->mode = (int)g | (rbool(r, 60) ? 0x100 : 0) | (tr ? 0x200 : 0) | (int)(opad << 12) |
                   (!tr && rbool(r, 30) ? 0x400 : 0);
        in->g = (double)cin;
        in->d = find_param(r, T, nslots, A->dt);
        break;
    }
    case OP_MAXPOOL2D: case OP_AVGPOOL2D: case OP_MAXPOOL1D: case OP_AVGPOOL1D: {
        bool two = op == OP_MAXPOOL2D || op == OP_AVGPOOL2D, mx = op == OP_MAXPOOL2D || op == OP_MAXPOOL1D;
        in->a = pick_image(r, T, nslots, two ? 3 : 2, in->a);
        in->i[0] = 1 + rint_(r, 3);
        in->i[1] = two ? 1 + rint_(r, 3) : 0;
        in->i[2] = rbool(r, 40) ? 0 : 1 + rint_(r, 3);
        int64_t kmin = two && in->i[1] < in->i[0] ? in->i[1] : in->i[0];
        in->i[3] = rbool(r, 50) ? rint_(r, (int)(kmin / 2 + 1)) : 0;
        in->i[4] = mx && rbool(r, 25) ? 2 : 0;
        in->i[5] = op == OP_AVGPOOL2D && rbool(r, 25) ? 1 + rint_(r, 5) : 0;
        in->mode = (rbool(r, 40) ? 1 : 0) | (!mx && rbool(r, 50) ? 2 : 0);
        break;
    }
    case OP_MAXPOOL3D: case OP_AVGPOOL3D: {
        bool mx = op == OP_MAXPOOL3D;
        in->a = pick_image(r, T, nslots, 4, in->a);
        int64_t kmin = 3;
        for (int k = 0; k < 3; k++) {
            in->i[k] = 1 + rint_(r, 3);
            kmin = in->i[k] < kmin ? in->i[k] : kmin;
        }
        in->i[3] = rbool(r, 40) ? 0 : 1 + rint_(r, 3);
        in->i[4] = rbool(r, 50) ? rint_(r, (int)(kmin / 2 + 1)) : 0;
        in->i[5] = mx ? (rbool(r, 25) ? 2 : 0) : (rbool(r, 25) ? 1 + rint_(r, 5) : 0);
        in->mode = (rbool(r, 40) ? 1 : 0) | (!mx && rbool(r, 50) ? 2 : 0);
        break;
    }
    case OP_ADAPTIVE:
        in->mode = rint_(r, 3);
        in->a = pick_image(r, T, nslots, in->mode == 2 ? 4 : in->mode ? 2 : 3, in->a);
        in->i[0] = 1 + rint_(r, 5);
        in->i[1] = 1 + rint_(r, 5);
        in->i[2] = 1 + rint_(r, 5);
        break;
    case OP_PAD: {
        in->a = pick_image(r, T, nslots, 3, in->a);
        A = &T[in->a];
        in->mode = rint_(r, 3);
        if (in->mode == 0)
            in->ni = 2 * (1 + rint_(r, 3));
        else { /* pad the last nd - 1 or nd - 2 dims: at least one, at most 3 */
            int sp = A->nd <= 2 || rbool(r, 50) ? A->nd - 1 : A->nd - 2;
            in->ni = 2 * (sp < 3 ? sp : 3);
        }
        for (int k = 0; k < in->ni; k++) {
            int d = A->nd - 1 - k / 2;
            int64_t x = d >= 0 && A->s[d] != DT_B ? A->s[d] : 1;
            in->i[k] = in->mode == 1 ? rint_(r, (int)x) : in->mode == 2 ? rint_(r, 3) : rint_(r, 4) - 1;
        }
        in->f = rbool(r, 50) ? 0 : pick_scalar(r);
        break;
    }
    case OP_UPSAMPLE: {
        static const double sc[] = {0.5, 1.5, 2, 2.5, 3};
        in->a = pick_image(r, T, nslots, 4, in->a);
        in->mode = rint_(r, 4);
        if (in->mode >= 2 && rbool(r, 50)) in->mode |= 4;
        in->i[0] = 1 + rint_(r, 8);
        in->i[1] = 1 + rint_(r, 8);
        in->f = sc[rint_(r, 5)];
        in->g = rbool(r, 50) ? in->f : sc[rint_(r, 5)];
        break;
    }
    case OP_GRID_SAMPLE:
        in->a = pick_image(r, T, nslots, 4, in->a);
        /* the grid from an exact image of the same batch, often a itself */
        in->b = in->a;
        for (int t = 0; t < 20 && T[in->a].nd == 4; t++) {
            int s = rint_(r, nslots);
            if (T[s].nd == 4 && T[s].dt == T[in->a].dt && !T[s].fuzzy &&
                T[s].s[0] == T[in->a].s[0] && rbool(r, 50)) {
                in->b = s;
                break;
            }
        }
        in->mode = rint_(r, 3) | (rint_(r, 3) << 2) | (rbool(r, 50) ? 16 : 0);
        break;
    case OP_BATCH_NORM: case OP_GROUP_NORM: case OP_NATIVE_LN: {
        in->a = pick_image(r, T, nslots, 3, in->a);
        A = &T[in->a];
        int64_t ch = A->nd >= 2 && A->s[1] != DT_B ? A->s[1] : 1;
        in->b = in->c = -1;
        in->g = (double)ch;
        if (op == OP_BATCH_NORM) {
            in->mode = rbool(r, 60) ? 1 : 0;
            /* running statistics: [C] slots of x's dtype, the VAL_POS
             * inputs first */
            if (!(in->mode & 1) || rbool(r, 70)) {
                for (int t = 0; t < 30 && (in->b < 0 || in->c < 0); t++) {
                    int s = rint_(r, nslots);
                    if (T[s].nd != 1 || T[s].dt != A->dt || T[s].s[0] != ch) continue;
                    bool pos = s < p->nin && p->in[s].val == VAL_POS;
                    if (in->c < 0 && (pos || t > 20)) in->c = s;
                    else if (in->b < 0 && s != in->c) in->b = s;
                }
            }
            in->f = rbool(r, 50) ? 0.1 : 0.5;
        } else if (op == OP_GROUP_NORM) {
            int64_t g = 1;
            for (int64_t d = 1; d <= ch; d++) if (ch % d == 0 && rbool(r, 50)) g = d;
            in->i[0] = g;
        } else {
            in->i[0] = 1 + (A->nd > 2 && rbool(r, 40));
            for (int j = 0; j < in->i[0]; j++) in->i[1 + j] = A->nd >= in->i[0] ? A->s[A->nd - (int)in->i[0] + j] : 1;
            in->mode = rint_(r, 3);
            if (rbool(r, 50)) in->mode |= 4;
            if (rbool(r, 50)) in->mode |= 8;
        }
        if (op != OP_NATIVE_LN) {
            if (rbool(r, 60)) in->mode |= 2;
            if (rbool(r, 60)) in->mode |= 4;
        }
        in->d = (op == OP_NATIVE_LN ? in->mode & 12 : in->mode & 6) ? find_param(r, T, nslots, A->dt) : -1;
        break;
    }
    case OP_DROPOUT:
        in->mode = rint_(r, 4);
        in->f = in->mode == 0 ? 0 : in->mode == 1 ? 1 : 0.5;
        break;
    case OP_ACT: {
        static const double slope[] = {0.01, 0.2, 0.5, -0.5, 1.5};
        in->mode = rint_(r, ACT_COUNT);
        /* favour chains of activations (one fused plan) */
        if (rbool(r, 60)) in->a = nslots - 1;
        switch (in->mode) {
        case ACT_LEAKY: in->f = slope[rint_(r, 5)]; break;
        case ACT_ELU: in->f = rbool(r, 50) ? 1 : slope[rint_(r, 5)]; break;
        case ACT_HARDTANH: in->f = -1 - rint_(r, 2) * 0.5; in->g = 1 + rint_(r, 3) * 0.5; break;
        case ACT_SOFTPLUS:
            in->f = rbool(r, 50) ? 1 : (rbool(r, 50) ? 2 : 0.5);
            in->g = rbool(r, 50) ? 20 : 1 + rint_(r, 2);
            break;
        default: break;
        }
        break;
    }
    case OP_MSE: case OP_SMOOTH_L1: case OP_BCE_LOGITS: {
        static const double beta[] = {0, 0.5, 1, 2};
        in->mode = rint_(r, 3);
        in->f = beta[rint_(r, 4)];
        /* a partner of a's shape */
        for (int t = 0; t < 20; t++) {
            int b = rint_(r, nslots);
            if (T[b].dt == A->dt && T[b].nd == A->nd && rbool(r, 50)) { in->b = b; break; }
        }
        in->c = op == OP_BCE_LOGITS && rbool(r, 40) ? rint_(r, nslots) : -1;
        in->d = op == OP_BCE_LOGITS && rbool(r, 40) ? rint_(r, nslots) : -1;
        break;
    }
    case OP_NLL:
        /* a target, then log-probabilities of its shape with C inserted */
        for (int i = 0; i < p->nin; i++)
            if (p->in[i].val == VAL_INDEX && (in->b < 0 || in->b >= p->nin || rbool(r, 50))) in->b = i;
        for (int t = 0; in->b >= 0 && in->b < p->nin && t < 3 * nslots; t++) {
            int s = t < nslots ? nslots - 1 - t : rint_(r, nslots);
            const dt_vtype *X = &T[s], *Y = &T[in->b];
            bool ok = is_f(X->dt) && X->nd == Y->nd + 1 && X->nd >= 2 && X->s[1] != DT_B && X->s[1] >= 2;
            for (int k = 0; ok && k < Y->nd; k++) ok = X->s[k == 0 ? 0 : k + 1] == Y->s[k];
            if (ok) { in->a = s; break; }
        }
        A = &T[in->a];
        in->mode = rint_(r, 3) | (rbool(r, 40) ? 4 : 0) | (rbool(r, 40) ? 8 : 0);
        in->i[0] = rbool(r, 30) ? -100 : rint_(r, 2);
        in->g = A->nd >= 2 ? (double)A->s[1] : 0;
        in->d = in->mode & 4 ? find_param(r, T, nslots, A->dt) : -1;
        break;
    case OP_SGD: {
        in->mode = rint_(r, 32);
        in->f = rbool(r, 50) ? 0.1 : 0.5;
        in->i[0] = 1 + rint_(r, 2);
        in->c = -1;
        /* a writable parameter with a gradient-like partner of its shape */
        for (int t = 0; t < 40; t++) {
            int a = rint_(r, nslots), b = rint_(r, nslots);
            if (!T[a].writable || T[a].rg || !is_f(T[a].dt) || T[b].root == T[a].root) continue;
            if (T[b].dt == T[a].dt && T[b].nd == T[a].nd &&
                !memcmp(T[a].s, T[b].s, sizeof(int64_t) * (size_t)T[a].nd)) {
                in->a = a;
                in->b = b;
                break;
            }
        }
        A = &T[in->a];
        if (in->mode & 1)
            for (int t = 0; t < 40; t++) {
                int c = rint_(r, nslots);
                if (T[c].dt == A->dt && T[c].nd == A->nd && T[c].writable && c != in->b &&
                    T[c].root != A->root && !memcmp(T[c].s, A->s, sizeof(int64_t) * (size_t)A->nd)) {
                    in->c = c;
                    break;
                }
            }
        break;
    }
    default: break;
    }
}

/* An in-place call's status as the slot's value (the target itself). */
static tt_tensor *inplace(tt_status st, tt_tensor *a) { return st == TT_OK ? a : NULL; }

/* n elements of the parameter vector d from off, viewed as sizes s. */
static tt_tensor *param_view(tt_tensor *d, int64_t off, int nd, const int64_t *s)
{
    int64_t n = 1;
    for (int k = 0; k < nd; k++) n *= s[k];
    tt_tensor *v = tt_narrow(d, 0, off, n);
    return v ? tt_reshape(v, nd, s) : NULL;
}

const char *const dt_pad_modes[3] = {"constant", "reflect", "replicate"};
const char *const dt_reductions[3] = {"mean", "sum", "none"};
const char *const dt_grid_modes[3] = {"bilinear", "nearest", "bicubic"};
const char *const dt_grid_pads[3] = {"zeros", "border", "reflection"};
const char *const dt_act_fn[ACT_COUNT] = {"tt_leaky_relu", "tt_elu", "tt_hardtanh",
                                          "tt_hardswish", "tt_hardsigmoid", "tt_softplus"};

void dt_pool_opts(const dt_instr *in, tt_pool_opts *o)
{
    memset(o, 0, sizeof *o);
    o->kernel[0] = in->i[0];
    o->kernel[1] = in->i[1];
    o->stride[0] = o->stride[1] = in->i[2];
    o->padding[0] = o->padding[1] = in->i[3];
    o->dilation[0] = o->dilation[1] = in->i[4];
    o->divisor_override = in->i[5];
    o->ceil_mode = in->mode & 1;
    o->exclude_pad = in->mode & 2;
}

void dt_pool3d_opts(const dt_instr *in, tt_pool3d_opts *o)
{
    memset(o, 0, sizeof *o);
    bool mx = in->op == OP_MAXPOOL3D;
    for (int k = 0; k < 3; k++) {
        o->kernel[k] = in->i[k];
        o->stride[k] = in->i[3];
        o->padding[k] = in->i[4];
        o->dilation[k] = mx ? in->i[5] : 0;
    }
    o->divisor_override = mx ? 0 : in->i[5];
    o->ceil_mode = in->mode & 1;
    o->exclude_pad = in->mode & 2;
}

void dt_sgd_opts(const dt_instr *in, tt_sgd_opts *o)
{
    memset(o, 0, sizeof *o);
    o->lr = in->f;
    o->momentum = in->mode & 1 ? 0.9 : 0;
    o->nesterov = in->mode & 2;
    o->maximize = in->mode & 4;
    o->weight_decay = in->mode & 8 ? 0.1 : 0;
    o->dampening = in->mode & 16 ? 0.5 : 0;
}

tt_tensor *dt_exec_cnn(const dt_instr *in, tt_tensor **S)
{
    tt_tensor *a = in->a >= 0 ? S[in->a] : NULL, *b = in->b >= 0 ? S[in->b] : NULL;
    tt_tensor *c = in->c >= 0 ? S[in->c] : NULL, *d = in->d >= 0 ? S[in->d] : NULL;
    switch (in->op) {
    case OP_CONV2D: case OP_CONV1D: {
        int sp = in->op == OP_CONV2D ? 2 : 1, cd = tt_ndim(a) - sp - 1;
        int64_t cin = (int64_t)in->g, o = in->i[0], g = in->mode & 0xff;
        bool tr = in->mode & 0x200;
        (void)cd;
        int64_t ws[4] = {tr ? cin : o, tr ? o / g : cin / g, in->i[1], in->i[2]}, nw = 1;
        for (int k = 0; k < sp + 2; k++) nw *= ws[k];
        tt_tensor *w = param_view(d, 0, sp + 2, ws);
        tt_tensor *bias = in->mode & 0x100 ? param_view(d, nw, 1, &o) : NULL;
        if (!w || ((in->mode & 0x100) && !bias)) return NULL;
        tt_conv_opts co = {.stride = {in->i[3], in->i[3]}, .padding = {in->i[4], in->i[4]},
                           .dilation = {in->i[5], in->i[5]}, .groups = g, .transposed = tr};
        co.output_padding[0] = co.output_padding[1] = (in->mode >> 12) & 0xf;
        tt_tensor *y = sp == 2 ? tt_conv2d(a, w, bias, &co) : tt_conv1d(a, w, bias, &co);
        return y && (in->mode & 0x400) ? tt_relu(y) : y;
    }
    case OP_MAXPOOL2D: case OP_AVGPOOL2D: case OP_MAXPOOL1D: case OP_AVGPOOL1D: {
        tt_pool_opts po;
        dt_pool_opts(in, &po);
        switch (in->op) {
        case OP_MAXPOOL2D: return tt_max_pool2d(a, &po);
        case OP_AVGPOOL2D: return tt_avg_pool2d(a, &po);
        case OP_MAXPOOL1D: return tt_max_pool1d(a, &po);
        default: return tt_avg_pool1d(a, &po);
        }
    }
    case OP_MAXPOOL3D: case OP_AVGPOOL3D: {
        tt_pool3d_opts po;
        dt_pool3d_opts(in, &po);
        return in->op == OP_MAXPOOL3D ? tt_max_pool3d(a, &po) : tt_avg_pool3d(a, &po);
    }
    case OP_ADAPTIVE:
        if (in->mode == 2) return tt_adaptive_avg_pool3d(a, in->i[0], in->i[1], in->i[2]);
        return in->mode & 1 ? tt_adaptive_avg_pool1d(a, in->i[1])
                            : tt_adaptive_avg_pool2d(a, in->i[0], in->i[1]);
    case OP_PAD: return tt_pad(a, in->ni, in->i, dt_pad_modes[in->mode], in->f);
    case OP_UPSAMPLE: {
        bool ac = in->mode & 4;
        switch (in->mode & 3) {
        case 0: return tt_upsample_nearest2d(a, in->i[0], in->i[1]);
        case 1: return tt_upsample_nearest2d_scale(a, in->f, in->g);
        case 2: return tt_upsample_bilinear2d(a, in->i[0], in->i[1], ac);
        default: return tt_upsample_bilinear2d_scale(a, in->f, in->g, ac);
        }
    }
    case OP_GRID_SAMPLE: {
        tt_tensor *n2 = tt_narrow(b, 1, 0, 2);
        tt_tensor *grid = n2 ? tt_permute(n2, 4, (const int64_t[]){0, 2, 3, 1}) : NULL;
        if (!grid) return NULL;
        return tt_grid_sample(a, grid, dt_grid_modes[in->mode & 3],
                              dt_grid_pads[(in->mode >> 2) & 3], in->mode & 16);
    }
    case OP_BATCH_NORM: case OP_GROUP_NORM: {
        int64_t ch = (int64_t)in->g; /* the model's C: no C arithmetic on a symbolic size */
        tt_tensor *w = in->mode & 2 ? param_view(d, 0, 1, &ch) : NULL;
        tt_tensor *bias = in->mode & 4 ? param_view(d, ch, 1, &ch) : NULL;
        if (((in->mode & 2) && !w) || ((in->mode & 4) && !bias)) return NULL;
        if (in->op == OP_GROUP_NORM) return tt_group_norm(a, in->i[0], w, bias, 1e-5);
        return tt_batch_norm(a, w, bias, b, c, in->mode & 1, in->f, 1e-5);
    }
    case OP_NATIVE_LN: {
        int k = (int)in->i[0];
        int64_t ns[2] = {in->i[1], in->i[2]}, n = 1;
        for (int j = 0; j < k; j++) n *= ns[j];
        tt_tensor *w = in->mode & 4 ? param_view(d, 0, k, ns) : NULL;
        tt_tensor *bias = in->mode & 8 ? param_view(d, n, k, ns) : NULL;
        tt_tensor *mean = NULL, *rstd = NULL;
        if (((in->mode & 4) && !w) || ((in->mode & 8) && !bias)) return NULL;
        tt_tensor *y = tt_native_layer_norm(a, k, ns, w, bias, 1e-5, &mean, &rstd);
        if (!y) return NULL;
        /* all three belong to the scope; the slot is one of them */
        return (in->mode & 3) == 0 ? y : (in->mode & 3) == 1 ? mean : rstd;
    }
    case OP_DROPOUT: return tt_dropout(a, in->f, in->mode != 2);
    case OP_ACT:
        switch (in->mode) {
        case ACT_LEAKY: return tt_leaky_relu(a, in->f);
        case ACT_ELU: return tt_elu(a, in->f);
        case ACT_HARDTANH: return tt_hardtanh(a, in->f, in->g);
        case ACT_HARDSWISH: return tt_hardswish(a);
        case ACT_HARDSIGMOID: return tt_hardsigmoid(a);
        default: return tt_softplus(a, in->f, in->g);
        }
    case OP_MSE: return tt_mse_loss(a, b, dt_reductions[in->mode & 3]);
    case OP_SMOOTH_L1: return tt_smooth_l1_loss(a, b, dt_reductions[in->mode & 3], in->f);
    case OP_BCE_LOGITS:
        return tt_binary_cross_entropy_with_logits(a, b, c, d, dt_reductions[in->mode & 3]);
    case OP_NLL: {
        int64_t ch = (int64_t)in->g;
        tt_nll_loss_opts no = {.reduction = dt_reductions[in->mode & 3], .ignore = in->mode & 8,
                               .ignore_index = in->i[0]};
        if (in->mode & 4 && !(no.weight = param_view(d, 0, 1, &ch))) return NULL;
        return tt_nll_loss(a, b, &no);
    }
    case OP_SGD: {
        tt_sgd_opts so;
        dt_sgd_opts(in, &so);
        tt_tensor *step = tt_scalar((double)in->i[0], TT_I64);
        if (!step) return NULL;
        return inplace(tt_sgd_(a, b, c, step, &so), a);
    }
    default:
        tt_error(TT_EINVAL, "difftest: unknown op %d", in->op);
        return NULL;
    }
}
