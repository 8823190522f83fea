/* An independent forward of llama2.c's checkpoint as plain loops over
 * float arrays, one token at a time with its own KV cache, no tensortrace
 * call (our own code from the model's mathematics, in the style of
 * examples/gpt2/reference): what `llama --check` compares the logits of
 * the tensortrace model with. */
#include "llama_reference.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct llama_ref {
    int dim, hidden, layers, heads, kv_heads, vocab, seq_len;
    float *data; /* the whole file after the header */
    const float *emb, *rms_att, *wq, *wk, *wv, *wo, *rms_ffn, *w1, *w2, *w3, *rms_final, *cls;
    float *x, *xb, *xb2, *hb, *hb2, *q, *att, *logits, *kcache, *vcache;
};

void llama_ref_free(llama_ref *r)
{
    if (!r)
        return;
    free(r->data), free(r->x), free(r->xb), free(r->xb2), free(r->hb), free(r->hb2);
    free(r->q), free(r->att), free(r->logits), free(r->kcache), free(r->vcache);
    free(r);
}

llama_ref *llama_ref_load(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    int32_t h[7];
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    llama_ref *r = calloc(1, sizeof *r);
    if (!r || len < 28 || fread(h, 4, 7, f) != 7) {
        fclose(f), free(r);
        return NULL;
    }
    r->dim = h[0], r->hidden = h[1], r->layers = h[2], r->heads = h[3], r->kv_heads = h[4];
    r->vocab = abs(h[5]), r->seq_len = h[6];
    size_t n = (size_t)(len - 28) / 4;
    r->data = malloc(n * 4);
    if (!r->data || fread(r->data, 4, n, f) != n) {
        fclose(f), llama_ref_free(r);
        return NULL;
    }
    fclose(f);
    size_t D = (size_t)r->dim, L = (size_t)r->layers, H = (size_t)r->hidden;
    size_t hs = D / (size_t)r->heads, kvd = hs * (size_t)r->kv_heads;
    const float *p = r->data;
    r->emb = p, p += (size_t)r->vocab * D;
    r->rms_att = p, p += L * D;
    r->wq = p, p += L * D * D;
    r->wk = p, p += L * kvd * D;
    r->wv = p, p += L * kvd * D;
    r->wo = p, p += L * D * D;
    r->rms_ffn = p, p += L * D;
    r->w1 = p, p += L * H * D;
    r->w2 = p, p += L * D * H;
    r->w3 = p, p += L * H * D;
    r->rms_final = p, p += D;
    p += (size_t)r->seq_len * hs; /* the two legacy freq_cis tables */
    r->cls = h[5] > 0 ? r->emb : p;
    size_t S = (size_t)r->seq_len;
    r->x = calloc(D, 4), r->xb = calloc(D, 4), r->xb2 = calloc(D, 4);
    r->hb = calloc(H, 4), r->hb2 = calloc(H, 4), r->q = calloc(D, 4);
    r->att = calloc(S, 4), r->logits = calloc((size_t)r->vocab, 4);
    r->kcache = calloc(L * S * kvd, 4), r->vcache = calloc(L * S * kvd, 4);
    if (!r->x || !r->xb || !r->xb2 || !r->hb || !r->hb2 || !r->q || !r->att || !r->logits ||
        !r->kcache || !r->vcache) {
        llama_ref_free(r);
        return NULL;
    }
    return r;
}

int llama_ref_vocab(const llama_ref *r) { return r->vocab; }

static void rmsnorm(float *o, const float *x, const float *w, int n)
{
    double ss = 0;
    for (int j = 0; j < n; j++)
        ss += (double)x[j] * x[j];
    float s = (float)(1.0 / sqrt(ss / n + 1e-5));
    for (int j = 0; j < n; j++)
        o[j] = w[j] * (s * x[j]);
}

/* o[d] = W[d, n] x[n] */
static void matvec(float *o, const float *x, const float *w, int n, int d)
{
    for (int i = 0; i < d; i++) {
        double v = 0;
        for (int j = 0; j < n; j++)
            v += (double)w[(size_t)i * n + j] * x[j];
        o[i] = (float)v;
    }
}

const float *llama_ref_forward(llama_ref *r, int token, int pos)
{
    int D = r->dim, hs = D / r->heads, kvd = hs * r->kv_heads, grp = r->heads / r->kv_heads;
    int H = r->hidden, S = r->seq_len;
    memcpy(r->x, r->emb + (size_t)token * D, (size_t)D * 4);
    for (int l = 0; l < r->layers; l++) {
        float *kc = r->kcache + (size_t)l * S * kvd, *vc = r->vcache + (size_t)l * S * kvd;
        float *k = kc + (size_t)pos * kvd, *v = vc + (size_t)pos * kvd;
        rmsnorm(r->xb, r->x, r->rms_att + (size_t)l * D, D);
        matvec(r->q, r->xb, r->wq + (size_t)l * D * D, D, D);
        matvec(k, r->xb, r->wk + (size_t)l * kvd * D, D, kvd);
        matvec(v, r->xb, r->wv + (size_t)l * kvd * D, D, kvd);
        /* rotate each head's pairs (2i, 2i+1) by pos * 10000^(-2i/hs) */
        for (int e = 0; e < D; e += 2) {
            int i = e % hs;
            float freq = 1.0f / powf(10000.0f, (float)i / (float)hs);
            float a = (float)pos * freq, c = cosf(a), s = sinf(a);
            for (int which = 0; which < (e < kvd ? 2 : 1); which++) {
                float *vec = which ? k : r->q, v0 = vec[e], v1 = vec[e + 1];
                vec[e] = v0 * c - v1 * s;
                vec[e + 1] = v0 * s + v1 * c;
            }
        }
        /* each query head attends over positions 0..pos of its kv head */
        for (int h = 0; h < r->heads; h++) {
            const float *q = r->q + h * hs;
            int kh = h / grp;
            double mx = -INFINITY, sum = 0;
            for (int t = 0; t <= pos; t++) {
                double sc = 0;
                for (int j = 0; j < hs; j++)
                    sc += (double)q[j] * kc[(size_t)t * kvd + kh * hs + j];
                r->att[t] = (float)(sc / sqrt((double)hs));
                if (r->att[t] > mx)
                    mx = r->att[t];
            }
            for (int t = 0; t <= pos; t++)
                sum += r->att[t] = (float)exp(r->att[t] - mx);
            float *o = r->xb + h * hs;
            for (int j = 0; j < hs; j++) {
                double acc = 0;
                for (int t = 0; t <= pos; t++)
                    acc += (double)r->att[t] / sum * vc[(size_t)t * kvd + kh * hs + j];
                o[j] = (float)acc;
            }
        }
        matvec(r->xb2, r->xb, r->wo + (size_t)l * D * D, D, D);
        for (int j = 0; j < D; j++)
            r->x[j] += r->xb2[j];
        /* the feed-forward: w2(silu(w1 x) * w3 x) */
        rmsnorm(r->xb, r->x, r->rms_ffn + (size_t)l * D, D);
        matvec(r->hb, r->xb, r->w1 + (size_t)l * H * D, D, H);
        matvec(r->hb2, r->xb, r->w3 + (size_t)l * H * D, D, H);
        for (int j = 0; j < H; j++)
            r->hb[j] = r->hb[j] / (1.0f + expf(-r->hb[j])) * r->hb2[j];
        matvec(r->xb2, r->hb, r->w2 + (size_t)l * D * H, H, D);
        for (int j = 0; j < D; j++)
            r->x[j] += r->xb2[j];
    }
    rmsnorm(r->xb, r->x, r->rms_final, D);
    matvec(r->logits, r->xb, r->cls, D, r->vocab);
    return r->logits;
}
