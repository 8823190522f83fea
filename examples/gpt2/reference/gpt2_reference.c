/* A plain-C reference of GPT-2 training: our own re-implementation of
 * llm.c's algorithm (see gpt2_reference.h), for comparison with the
 * tensortrace model. Each layer has a forward and a backward function over
 * float arrays; activations are kept per layer for the backward, which
 * accumulates into gradients (+=) zeroed at its start. Built with -Ofast
 * -march=native -fopenmp, as a hand-written C trainer is: nothing here may
 * depend on infinities or NaNs (-ffinite-math-only). */
#include "gpt2_reference.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define LN_EPS 1e-5f

/* ------------------------------------------------------------- the model */

/* Pointers to each parameter tensor inside one flat array (parameters or
 * gradients), in checkpoint order. */
typedef struct {
    float *wte;      /* (Vp, C) */
    float *wpe;      /* (maxT, C) */
    float *ln1w;     /* (L, C) */
    float *ln1b;     /* (L, C) */
    float *qkvw;     /* (L, 3C, C) */
    float *qkvb;     /* (L, 3C) */
    float *attprojw; /* (L, C, C) */
    float *attprojb; /* (L, C) */
    float *ln2w;     /* (L, C) */
    float *ln2b;     /* (L, C) */
    float *fcw;      /* (L, 4C, C) */
    float *fcb;      /* (L, 4C) */
    float *fcprojw;  /* (L, C, 4C) */
    float *fcprojb;  /* (L, C) */
    float *lnfw;     /* (C) */
    float *lnfb;     /* (C) */
} ref_tensors;

/* Points t's members into base (NULL: only counts); returns the floats. */
static size_t point_tensors(ref_tensors *t, float *base, const gpt2ref_config *c)
{
    size_t C = (size_t)c->channels, L = (size_t)c->num_layers, n = 0;
    float **slot[] = {&t->wte, &t->wpe, &t->ln1w, &t->ln1b, &t->qkvw, &t->qkvb,
                      &t->attprojw, &t->attprojb, &t->ln2w, &t->ln2b, &t->fcw, &t->fcb,
                      &t->fcprojw, &t->fcprojb, &t->lnfw, &t->lnfb};
    size_t size[] = {(size_t)c->padded_vocab_size * C, (size_t)c->max_seq_len * C,
                     L * C, L * C, L * 3 * C * C, L * 3 * C, L * C * C, L * C,
                     L * C, L * C, L * 4 * C * C, L * 4 * C, L * C * 4 * C, L * C, C, C};
    for (size_t i = 0; i < sizeof size / sizeof size[0]; i++) {
        *slot[i] = base ? base + n : NULL;
        n += size[i];
    }
    return n;
}

/* What the forward keeps for the backward; per-layer arrays have L slices. */
typedef struct {
    float *encoded;   /* (B, T, C) token + position embedding */
    float *ln1;       /* (L, B, T, C) */
    float *ln1_mean;  /* (L, B, T) */
    float *ln1_rstd;  /* (L, B, T) */
    float *qkv;       /* (L, B, T, 3C) */
    float *atty;      /* (L, B, T, C) attention output, heads side by side */
    float *att;       /* (L, B, NH, T, T) softmax weights, row t over keys <= t */
    float *residual2; /* (L, B, T, C) x + attention projection */
    float *ln2;       /* (L, B, T, C) */
    float *ln2_mean;  /* (L, B, T) */
    float *ln2_rstd;  /* (L, B, T) */
    float *fch;       /* (L, B, T, 4C) */
    float *fch_gelu;  /* (L, B, T, 4C) */
    float *residual3; /* (L, B, T, C) the block's output */
    float *lnf;       /* (B, T, C) */
    float *lnf_mean;  /* (B, T) */
    float *lnf_rstd;  /* (B, T) */
    float *probs;     /* (B, T, Vp) softmax over the first V columns */
    float *losses;    /* (B, T) */
    /* the backward's scratch, one layer at a time */
    float *dres;      /* (B, T, C) gradient of the residual stream */
    float *dln;       /* (B, T, C) gradient of a layernorm's output */
    float *datty;     /* (B, T, C) */
    float *dqkv;      /* (B, T, 3C) */
    float *dfch;      /* (B, T, 4C) */
    float *dfch_gelu; /* (B, T, 4C) */
    float *dlogits;   /* (B, T, Vp) */
    float *datt_row;  /* (B, NH, T) one row of attention gradients per head */
} ref_acts;

/* Points a's members into base (NULL: only counts); returns the floats. */
static size_t point_acts(ref_acts *a, float *base, const gpt2ref_config *c, size_t B, size_t T)
{
    size_t C = (size_t)c->channels, L = (size_t)c->num_layers, NH = (size_t)c->num_heads;
    size_t Vp = (size_t)c->padded_vocab_size, BT = B * T, n = 0;
    float **slot[] = {&a->encoded, &a->ln1, &a->ln1_mean, &a->ln1_rstd, &a->qkv, &a->atty,
                      &a->att, &a->residual2, &a->ln2, &a->ln2_mean, &a->ln2_rstd, &a->fch,
                      &a->fch_gelu, &a->residual3, &a->lnf, &a->lnf_mean, &a->lnf_rstd,
                      &a->probs, &a->losses, &a->dres, &a->dln, &a->datty, &a->dqkv,
                      &a->dfch, &a->dfch_gelu, &a->dlogits, &a->datt_row};
    size_t size[] = {BT * C, L * BT * C, L * BT, L * BT, L * BT * 3 * C, L * BT * C,
                     L * B * NH * T * T, L * BT * C, L * BT * C, L * BT, L * BT,
                     L * BT * 4 * C, L * BT * 4 * C, L * BT * C, BT * C, BT, BT,
                     BT * Vp, BT, BT * C, BT * C, BT * C, BT * 3 * C,
                     BT * 4 * C, BT * 4 * C, BT * Vp, B * NH * T};
    for (size_t i = 0; i < sizeof size / sizeof size[0]; i++) {
        *slot[i] = base ? base + n : NULL;
        n += size[i];
    }
    return n;
}

struct gpt2ref {
    gpt2ref_config c;
    int B, T;
    size_t nparams;
    float *params, *grads, *m, *v; /* nparams each */
    ref_tensors p, g;              /* into params and grads */
    float *act_memory;
    ref_acts a;
    int *tokens, *targets;         /* (B, T) of the last forward */
};

size_t gpt2ref_num_params(const gpt2ref_config *c)
{
    ref_tensors t;
    return point_tensors(&t, NULL, c);
}

int gpt2ref_config_ok(const gpt2ref_config *c, int B, int T)
{
    return c->num_layers >= 1 && c->num_heads >= 1 && c->channels >= 1 &&
           c->channels % c->num_heads == 0 && c->vocab_size >= 1 &&
           c->padded_vocab_size >= c->vocab_size && c->max_seq_len >= 1 && B >= 1 && T >= 1 &&
           T <= c->max_seq_len;
}

gpt2ref *gpt2ref_new(const gpt2ref_config *c, int B, int T)
{
    if (!gpt2ref_config_ok(c, B, T))
        return NULL;
    gpt2ref *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->c = *c, m->B = B, m->T = T;
    m->nparams = gpt2ref_num_params(c);
    m->params = calloc(m->nparams, sizeof(float));
    m->grads = calloc(m->nparams, sizeof(float));
    m->m = calloc(m->nparams, sizeof(float));
    m->v = calloc(m->nparams, sizeof(float));
    m->act_memory = calloc(point_acts(&m->a, NULL, c, (size_t)B, (size_t)T), sizeof(float));
    m->tokens = calloc((size_t)B * T, sizeof(int));
    m->targets = calloc((size_t)B * T, sizeof(int));
    if (!m->params || !m->grads || !m->m || !m->v || !m->act_memory || !m->tokens ||
        !m->targets) {
        gpt2ref_free(m);
        return NULL;
    }
    point_tensors(&m->p, m->params, c);
    point_tensors(&m->g, m->grads, c);
    point_acts(&m->a, m->act_memory, c, (size_t)B, (size_t)T);
    return m;
}

void gpt2ref_free(gpt2ref *m)
{
    if (!m)
        return;
    free(m->params);
    free(m->grads);
    free(m->m);
    free(m->v);
    free(m->act_memory);
    free(m->tokens);
    free(m->targets);
    free(m);
}

const gpt2ref_config *gpt2ref_get_config(const gpt2ref *m) { return &m->c; }
void gpt2ref_batch_shape(const gpt2ref *m, int *B, int *T) { *B = m->B, *T = m->T; }

float *gpt2ref_params(gpt2ref *m) { return m->params; }
const float *gpt2ref_grads(const gpt2ref *m) { return m->grads; }

void gpt2ref_set_threads(int n)
{
#ifdef _OPENMP
    if (n > 0)
        omp_set_num_threads(n);
#else
    (void)n;
#endif
}

int gpt2ref_threads(void)
{
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

/* ------------------------------------------------------------- embedding */

/* out (B, T, C) = wte[tokens] (Vp, C) + wpe[t] (maxT, C) */
static void encoder_forward(float *out, const int *tokens, const float *wte, const float *wpe,
                            int B, int T, int C)
{
#pragma omp parallel for collapse(2)
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            float *o = out + ((size_t)b * T + t) * C;
            const float *we = wte + (size_t)tokens[b * T + t] * C, *pe = wpe + (size_t)t * C;
            for (int i = 0; i < C; i++)
                o[i] = we[i] + pe[i];
        }
}

/* dwte (Vp, C) and dwpe (maxT, C) += the rows of dout (B, T, C). Serial:
 * two positions may hold the same token. */
static void encoder_backward(float *dwte, float *dwpe, const float *dout, const int *tokens,
                             int B, int T, int C)
{
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            const float *d = dout + ((size_t)b * T + t) * C;
            float *dwe = dwte + (size_t)tokens[b * T + t] * C, *dpe = dwpe + (size_t)t * C;
            for (int i = 0; i < C; i++) {
                dwe[i] += d[i];
                dpe[i] += d[i];
            }
        }
}

/* ------------------------------------------------------------- layernorm */

/* out (N, C) = (inp - mean) * rstd * w + b per row of inp (N, C), with
 * the row's mean and rstd = 1 / sqrt(biased variance + eps) kept (N). */
static void layernorm_forward(float *out, float *mean, float *rstd, const float *inp,
                              const float *w, const float *b, int N, int C)
{
#pragma omp parallel for
    for (int n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * C;
        float *o = out + (size_t)n * C;
        float m = 0, var = 0;
        for (int i = 0; i < C; i++)
            m += x[i];
        m /= C;
        for (int i = 0; i < C; i++)
            var += (x[i] - m) * (x[i] - m);
        float s = 1.0f / sqrtf(var / C + LN_EPS);
        for (int i = 0; i < C; i++)
            o[i] = (x[i] - m) * s * w[i] + b[i];
        mean[n] = m, rstd[n] = s;
    }
}

/* With norm = (inp - mean) * rstd and dnorm = dout * w, per row:
 *   dinp += rstd * (dnorm - mean(dnorm) - norm * mean(dnorm * norm)),
 * and dw += sum over rows of dout * norm, db += sum of dout. */
static void layernorm_backward(float *dinp, float *dw, float *db, const float *dout,
                               const float *inp, const float *w, const float *mean,
                               const float *rstd, int N, int C)
{
#pragma omp parallel for
    for (int n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * C, *d = dout + (size_t)n * C;
        float *dx = dinp + (size_t)n * C, m = mean[n], s = rstd[n];
        float dnorm_mean = 0, dnorm_norm_mean = 0;
        for (int i = 0; i < C; i++) {
            float dnorm = d[i] * w[i];
            dnorm_mean += dnorm;
            dnorm_norm_mean += dnorm * (x[i] - m) * s;
        }
        dnorm_mean /= C;
        dnorm_norm_mean /= C;
        for (int i = 0; i < C; i++)
            dx[i] += s * (d[i] * w[i] - dnorm_mean - (x[i] - m) * s * dnorm_norm_mean);
    }
    /* the parameters' gradients sum over rows: one pass, vectorized over C */
    for (int n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * C, *d = dout + (size_t)n * C;
        float m = mean[n], s = rstd[n];
        for (int i = 0; i < C; i++) {
            dw[i] += d[i] * (x[i] - m) * s;
            db[i] += d[i];
        }
    }
}

/* ---------------------------------------------------------------- matmul */

/* out (N, OC) = inp (N, C) @ w^T + bias, w (OC, C), bias (OC) or NULL.
 * Rows go in blocks of 4 so that each row of w is read once per block;
 * the last block repeats its last row instead of branching (the repeats
 * are computed and not stored). */
static void matmul_forward(float *out, const float *inp, const float *w, const float *bias,
                           int N, int C, int OC)
{
#pragma omp parallel for
    for (int n0 = 0; n0 < N; n0 += 4) {
        const float *x[4];
        for (int r = 0; r < 4; r++)
            x[r] = inp + (size_t)(n0 + r < N ? n0 + r : N - 1) * C;
        for (int o = 0; o < OC; o++) {
            const float *wo = w + (size_t)o * C;
            float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
            for (int i = 0; i < C; i++) {
                s0 += x[0][i] * wo[i];
                s1 += x[1][i] * wo[i];
                s2 += x[2][i] * wo[i];
                s3 += x[3][i] * wo[i];
            }
            float s[4] = {s0, s1, s2, s3}, bo = bias ? bias[o] : 0;
            for (int r = 0; r < 4 && n0 + r < N; r++)
                out[(size_t)(n0 + r) * OC + o] = s[r] + bo;
        }
    }
}

/* y (R, K) += a @ x, x (J, K) row-major, a (R, J) read as a[r * ars + j *
 * ajs] (so a transposed operand needs no copy). A tile of 4 rows x KB
 * columns of y stays in registers while j runs over all of a's columns;
 * what is left (a last block of fewer rows, the columns past the last full
 * tile) goes row by row. */
#define KB 64
static void matmul_accumulate(float *y, const float *a, size_t ars, size_t ajs, const float *x,
                              int R, int J, int K)
{
#pragma omp parallel for
    for (int r0 = 0; r0 < R; r0 += 4) {
        int nr = R - r0 < 4 ? R - r0 : 4, kfull = nr == 4 ? K / KB * KB : 0;
        for (int k0 = 0; k0 < kfull; k0 += KB) {
            float *y0 = y + (size_t)r0 * K + k0, acc0[KB], acc1[KB], acc2[KB], acc3[KB];
            for (int k = 0; k < KB; k++) {
                acc0[k] = y0[k], acc1[k] = y0[K + k];
                acc2[k] = y0[2 * K + k], acc3[k] = y0[3 * K + k];
            }
            for (int j = 0; j < J; j++) {
                const float *aj = a + (size_t)r0 * ars + (size_t)j * ajs;
                const float *xj = x + (size_t)j * K + k0;
                float a0 = aj[0], a1 = aj[ars], a2 = aj[2 * ars], a3 = aj[3 * ars];
                for (int k = 0; k < KB; k++) {
                    acc0[k] += a0 * xj[k];
                    acc1[k] += a1 * xj[k];
                    acc2[k] += a2 * xj[k];
                    acc3[k] += a3 * xj[k];
                }
            }
            for (int k = 0; k < KB; k++) {
                y0[k] = acc0[k], y0[K + k] = acc1[k];
                y0[2 * K + k] = acc2[k], y0[3 * K + k] = acc3[k];
            }
        }
        for (int r = 0; r < nr; r++)
            for (int j = 0; j < J; j++) {
                float ar = a[(size_t)(r0 + r) * ars + (size_t)j * ajs];
                const float *xj = x + (size_t)j * K;
                float *yr = y + (size_t)(r0 + r) * K;
                for (int k = kfull; k < K; k++)
                    yr[k] += ar * xj[k];
            }
    }
}

/* The backward of matmul_forward, accumulating:
 *   dinp (N, C) += dout (N, OC) @ w (OC, C);  dw (OC, C) += dout^T @ inp;
 *   dbias (OC) += the column sums of dout (dbias may be NULL). */
static void matmul_backward(float *dinp, float *dw, float *dbias, const float *dout,
                            const float *inp, const float *w, int N, int C, int OC)
{
    matmul_accumulate(dinp, dout, (size_t)OC, 1, w, N, OC, C);
    matmul_accumulate(dw, dout, 1, (size_t)OC, inp, OC, N, C);
    if (dbias)
        for (int n = 0; n < N; n++)
            for (int o = 0; o < OC; o++)
                dbias[o] += dout[(size_t)n * OC + o];
}

/* ------------------------------------------------------------- attention */

/* Causal self-attention. qkv (B, T, 3C) holds q, k, v at channel offsets
 * 0, C, 2C, head h at [h hs, (h + 1) hs) of each, hs = C / NH. For each
 * (b, t, h): att row t = softmax over keys t2 <= t of q_t . k_t2 / sqrt(hs)
 * (kept in att (B, NH, T, T)); out (B, T, C) = sum_t2 att[t2] v_t2. */
static void attention_forward(float *out, float *att, const float *qkv, int B, int T, int C,
                              int NH)
{
    int hs = C / NH;
    size_t C3 = 3 * (size_t)C;
    float scale = 1.0f / sqrtf((float)hs);
#pragma omp parallel for collapse(3)
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int h = 0; h < NH; h++) {
                const float *q = qkv + ((size_t)b * T + t) * C3 + (size_t)h * hs;
                float *row = att + (((size_t)b * NH + h) * T + t) * T;
                float maxv = -FLT_MAX;
                for (int t2 = 0; t2 <= t; t2++) {
                    const float *k = qkv + ((size_t)b * T + t2) * C3 + C + (size_t)h * hs;
                    float dot = 0;
                    for (int i = 0; i < hs; i++)
                        dot += q[i] * k[i];
                    row[t2] = dot * scale;
                    maxv = row[t2] > maxv ? row[t2] : maxv;
                }
                float sum = 0;
                for (int t2 = 0; t2 <= t; t2++) {
                    row[t2] = expf(row[t2] - maxv);
                    sum += row[t2];
                }
                float inv = 1.0f / sum;
                for (int t2 = 0; t2 <= t; t2++)
                    row[t2] *= inv;
                float *o = out + ((size_t)b * T + t) * C + (size_t)h * hs;
                for (int i = 0; i < hs; i++)
                    o[i] = 0;
                for (int t2 = 0; t2 <= t; t2++) {
                    const float *v = qkv + ((size_t)b * T + t2) * C3 + 2 * (size_t)C +
                                     (size_t)h * hs;
                    for (int i = 0; i < hs; i++)
                        o[i] += row[t2] * v[i];
                }
            }
}

/* The backward of attention_forward, accumulating into dqkv (B, T, 3C)
 * from dout (B, T, C). Per (b, h), for each query t: datt = dout_t . v_t2,
 * dv_t2 += att[t2] dout_t, dpre = att * (datt - sum(att * datt)) (the
 * softmax's backward), dq_t += dpre k_t2 / sqrt(hs), dk_t2 += dpre q_t /
 * sqrt(hs). Parallel over (b, h) only: queries of one head write the same
 * keys' gradients. datt_row (B, NH, T) is scratch. */
static void attention_backward(float *dqkv, float *datt_row, const float *dout,
                               const float *qkv, const float *att, int B, int T, int C, int NH)
{
    int hs = C / NH;
    size_t C3 = 3 * (size_t)C;
    float scale = 1.0f / sqrtf((float)hs);
#pragma omp parallel for collapse(2)
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            float *drow = datt_row + ((size_t)b * NH + h) * T;
            for (int t = 0; t < T; t++) {
                const float *row = att + (((size_t)b * NH + h) * T + t) * T;
                const float *d = dout + ((size_t)b * T + t) * C + (size_t)h * hs;
                size_t qoff = ((size_t)b * T + t) * C3 + (size_t)h * hs;
                const float *q = qkv + qoff;
                float *dq = dqkv + qoff;
                float s = 0;
                for (int t2 = 0; t2 <= t; t2++) {
                    size_t voff = ((size_t)b * T + t2) * C3 + 2 * (size_t)C + (size_t)h * hs;
                    const float *v = qkv + voff;
                    float *dv = dqkv + voff, dot = 0;
                    for (int i = 0; i < hs; i++) {
                        dot += d[i] * v[i];
                        dv[i] += row[t2] * d[i];
                    }
                    drow[t2] = dot;
                    s += row[t2] * dot;
                }
                for (int t2 = 0; t2 <= t; t2++) {
                    size_t koff = ((size_t)b * T + t2) * C3 + C + (size_t)h * hs;
                    const float *k = qkv + koff;
                    float *dk = dqkv + koff, dpre = row[t2] * (drow[t2] - s) * scale;
                    for (int i = 0; i < hs; i++) {
                        dq[i] += dpre * k[i];
                        dk[i] += dpre * q[i];
                    }
                }
            }
        }
}

/* ------------------------------------------------------------------ GELU */

/* GPT-2's GELU, the tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). */
#define GELU_K 0.7978845608028654f /* sqrt(2 / pi) */
#define GELU_A 0.044715f

static void gelu_forward(float *out, const float *inp, size_t n)
{
#pragma omp parallel for
    for (size_t i = 0; i < n; i++) {
        float x = inp[i];
        out[i] = 0.5f * x * (1.0f + tanhf(GELU_K * (x + GELU_A * x * x * x)));
    }
}

/* dinp += dout * gelu'(x), gelu'(x) = 0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u)
 * sqrt(2/pi) (1 + 3 0.044715 x^2), u = sqrt(2/pi) (x + 0.044715 x^3). */
static void gelu_backward(float *dinp, const float *inp, const float *dout, size_t n)
{
#pragma omp parallel for
    for (size_t i = 0; i < n; i++) {
        float x = inp[i], th = tanhf(GELU_K * (x + GELU_A * x * x * x));
        float grad = 0.5f * (1.0f + th) +
                     0.5f * x * (1.0f - th * th) * GELU_K * (1.0f + 3.0f * GELU_A * x * x);
        dinp[i] += grad * dout[i];
    }
}

/* out (n) += inp (n): a residual connection. */
static void residual_add(float *out, const float *inp, size_t n)
{
#pragma omp parallel for
    for (size_t i = 0; i < n; i++)
        out[i] += inp[i];
}

/* ---------------------------------------------------------- the loss */

/* probs (N, Vp) holds the logits on entry; each row becomes the softmax of
 * its first V columns (the padding columns are left out, as the padding
 * rows of wte are no tokens), and losses (N) = -log probs[target]. */
static void crossentropy_softmax_forward(float *probs, float *losses, const int *targets,
                                         int N, int V, int Vp)
{
#pragma omp parallel for
    for (int n = 0; n < N; n++) {
        float *p = probs + (size_t)n * Vp, maxv = p[0], sum = 0;
        for (int i = 1; i < V; i++)
            maxv = p[i] > maxv ? p[i] : maxv;
        for (int i = 0; i < V; i++) {
            p[i] = expf(p[i] - maxv);
            sum += p[i];
        }
        for (int i = 0; i < V; i++)
            p[i] /= sum;
        for (int i = V; i < Vp; i++)
            p[i] = 0;
        losses[n] = -logf(p[targets[n]]);
    }
}

/* dlogits (N, Vp) = (probs - onehot(target)) / N: the gradient of the mean
 * loss; 0 in the padding columns. */
static void crossentropy_softmax_backward(float *dlogits, const float *probs,
                                          const int *targets, int N, int Vp)
{
    float dloss = 1.0f / N;
#pragma omp parallel for
    for (int n = 0; n < N; n++) {
        const float *p = probs + (size_t)n * Vp;
        float *d = dlogits + (size_t)n * Vp;
        for (int i = 0; i < Vp; i++)
            d[i] = p[i] * dloss;
        d[targets[n]] -= dloss;
    }
}

/* ------------------------------------------------------ forward, backward */

float gpt2ref_forward(gpt2ref *m, const int64_t *tokens, const int64_t *targets)
{
    const gpt2ref_config *c = &m->c;
    const ref_tensors *p = &m->p;
    const ref_acts *a = &m->a;
    int B = m->B, T = m->T, C = c->channels, NH = c->num_heads, BT = B * T;
    int V = c->vocab_size, Vp = c->padded_vocab_size;
    size_t BTC = (size_t)BT * C;
    for (int i = 0; i < BT; i++)
        m->tokens[i] = (int)tokens[i], m->targets[i] = (int)targets[i];

    encoder_forward(a->encoded, m->tokens, p->wte, p->wpe, B, T, C);
    const float *x = a->encoded; /* the residual stream entering layer l */
    for (int l = 0; l < c->num_layers; l++) {
        size_t C_l = (size_t)l * C;
        float *ln1 = a->ln1 + l * BTC, *qkv = a->qkv + 3 * l * BTC, *atty = a->atty + l * BTC;
        float *att = a->att + (size_t)l * B * NH * T * T, *residual2 = a->residual2 + l * BTC;
        float *ln2 = a->ln2 + l * BTC, *fch = a->fch + 4 * l * BTC;
        float *fch_gelu = a->fch_gelu + 4 * l * BTC, *residual3 = a->residual3 + l * BTC;
        layernorm_forward(ln1, a->ln1_mean + (size_t)l * BT, a->ln1_rstd + (size_t)l * BT, x,
                          p->ln1w + C_l, p->ln1b + C_l, BT, C);
        matmul_forward(qkv, ln1, p->qkvw + 3 * C_l * C, p->qkvb + 3 * C_l, BT, C, 3 * C);
        attention_forward(atty, att, qkv, B, T, C, NH);
        matmul_forward(residual2, atty, p->attprojw + C_l * C, p->attprojb + C_l, BT, C, C);
        residual_add(residual2, x, BTC);
        layernorm_forward(ln2, a->ln2_mean + (size_t)l * BT, a->ln2_rstd + (size_t)l * BT,
                          residual2, p->ln2w + C_l, p->ln2b + C_l, BT, C);
        matmul_forward(fch, ln2, p->fcw + 4 * C_l * C, p->fcb + 4 * C_l, BT, C, 4 * C);
        gelu_forward(fch_gelu, fch, 4 * BTC);
        matmul_forward(residual3, fch_gelu, p->fcprojw + 4 * C_l * C, p->fcprojb + C_l, BT,
                       4 * C, C);
        residual_add(residual3, residual2, BTC);
        x = residual3;
    }
    layernorm_forward(a->lnf, a->lnf_mean, a->lnf_rstd, x, p->lnfw, p->lnfb, BT, C);
    /* the logits (B, T, Vp) with the tied token embedding, no bias */
    matmul_forward(a->probs, a->lnf, p->wte, NULL, BT, C, Vp);
    crossentropy_softmax_forward(a->probs, a->losses, m->targets, BT, V, Vp);
    double loss = 0;
    for (int i = 0; i < BT; i++)
        loss += a->losses[i];
    return (float)(loss / BT);
}

void gpt2ref_backward(gpt2ref *m)
{
    const gpt2ref_config *c = &m->c;
    const ref_tensors *p = &m->p, *g = &m->g;
    const ref_acts *a = &m->a;
    int B = m->B, T = m->T, C = c->channels, NH = c->num_heads, BT = B * T, L = c->num_layers;
    int Vp = c->padded_vocab_size;
    size_t BTC = (size_t)BT * C;
    memset(m->grads, 0, m->nparams * sizeof(float));
    memset(a->dres, 0, BTC * sizeof(float));
    memset(a->dln, 0, BTC * sizeof(float));

    crossentropy_softmax_backward(a->dlogits, a->probs, m->targets, BT, Vp);
    matmul_backward(a->dln, g->wte, NULL, a->dlogits, a->lnf, p->wte, BT, C, Vp);
    const float *x = a->residual3 + (size_t)(L - 1) * BTC;
    layernorm_backward(a->dres, g->lnfw, g->lnfb, a->dln, x, p->lnfw, a->lnf_mean,
                       a->lnf_rstd, BT, C);
    /* dres is the gradient of the residual stream: each block's output
     * passes it on to its residual2 and its input unchanged (the residual
     * connections), and the branches add theirs. */
    for (int l = L - 1; l >= 0; l--) {
        size_t C_l = (size_t)l * C;
        const float *ln1 = a->ln1 + l * BTC, *qkv = a->qkv + 3 * l * BTC;
        const float *atty = a->atty + l * BTC, *att = a->att + (size_t)l * B * NH * T * T;
        const float *residual2 = a->residual2 + l * BTC, *ln2 = a->ln2 + l * BTC;
        const float *fch = a->fch + 4 * l * BTC, *fch_gelu = a->fch_gelu + 4 * l * BTC;
        x = l == 0 ? a->encoded : a->residual3 + (size_t)(l - 1) * BTC;
        memset(a->dln, 0, BTC * sizeof(float));
        memset(a->datty, 0, BTC * sizeof(float));
        memset(a->dqkv, 0, 3 * BTC * sizeof(float));
        memset(a->dfch, 0, 4 * BTC * sizeof(float));
        memset(a->dfch_gelu, 0, 4 * BTC * sizeof(float));

        /* the MLP branch: residual3 = residual2 + fcproj(gelu(fc(ln2(residual2)))) */
        matmul_backward(a->dfch_gelu, g->fcprojw + 4 * C_l * C, g->fcprojb + C_l, a->dres,
                        fch_gelu, p->fcprojw + 4 * C_l * C, BT, 4 * C, C);
        gelu_backward(a->dfch, fch, a->dfch_gelu, 4 * BTC);
        matmul_backward(a->dln, g->fcw + 4 * C_l * C, g->fcb + 4 * C_l, a->dfch, ln2,
                        p->fcw + 4 * C_l * C, BT, C, 4 * C);
        layernorm_backward(a->dres, g->ln2w + C_l, g->ln2b + C_l, a->dln, residual2,
                           p->ln2w + C_l, a->ln2_mean + (size_t)l * BT,
                           a->ln2_rstd + (size_t)l * BT, BT, C);
        /* the attention branch: residual2 = x + attproj(attention(qkv(ln1(x)))) */
        matmul_backward(a->datty, g->attprojw + C_l * C, g->attprojb + C_l, a->dres, atty,
                        p->attprojw + C_l * C, BT, C, C);
        attention_backward(a->dqkv, a->datt_row, a->datty, qkv, att, B, T, C, NH);
        memset(a->dln, 0, BTC * sizeof(float));
        matmul_backward(a->dln, g->qkvw + 3 * C_l * C, g->qkvb + 3 * C_l, a->dqkv, ln1,
                        p->qkvw + 3 * C_l * C, BT, C, 3 * C);
        layernorm_backward(a->dres, g->ln1w + C_l, g->ln1b + C_l, a->dln, x, p->ln1w + C_l,
                           a->ln1_mean + (size_t)l * BT, a->ln1_rstd + (size_t)l * BT, BT, C);
    }
    encoder_backward(g->wte, g->wpe, a->dres, m->tokens, B, T, C);
}

/* ----------------------------------------------------------------- AdamW */

/* AdamW (Loshchilov and Hutter; decoupled weight decay), per parameter:
 *   m = beta1 m + (1 - beta1) g,  v = beta2 v + (1 - beta2) g^2,
 *   p -= lr (m_hat / (sqrt(v_hat) + eps) + weight_decay p),
 * m_hat = m / (1 - beta1^step), v_hat = v / (1 - beta2^step). */
void gpt2ref_adamw(gpt2ref *m, const gpt2ref_adamw_opts *o, int step)
{
    float b1 = o->beta1, b2 = o->beta2, lr = o->lr, eps = o->eps, wd = o->weight_decay;
    float bc1 = (float)(1 - pow(b1, step)), bc2 = (float)(1 - pow(b2, step));
    float *pp = m->params, *mm = m->m, *vv = m->v;
    const float *gg = m->grads;
#pragma omp parallel for
    for (size_t i = 0; i < m->nparams; i++) {
        float g = gg[i];
        mm[i] = b1 * mm[i] + (1 - b1) * g;
        vv[i] = b2 * vv[i] + (1 - b2) * g * g;
        float m_hat = mm[i] / bc1, v_hat = vv[i] / bc2;
        pp[i] -= lr * (m_hat / (sqrtf(v_hat) + eps) + wd * pp[i]);
    }
}
