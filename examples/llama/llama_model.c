/* Llama-2 on tensortrace: the architecture as llama2.c's run.c computes it
 * (RMSNorm, rotary embedding on pairs (2i, 2i+1), grouped-query attention,
 * a SwiGLU feed-forward, a shared or separate classifier), written with
 * ops so that a decode step traces into one graph; its checkpoint and
 * tokenizer files; a KV cache; the sampler. See llama_model.h and
 * docs/llama.md. Public API only. */
#include "llama_model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* -------------------------------------------------------------- configs */

bool llama_config_named(const char *name, llama_config *c)
{
    if (!strcmp(name, "15M"))
        *c = (llama_config){288, 768, 6, 6, 6, 32000, 256, true};
    else if (!strcmp(name, "110M"))
        *c = (llama_config){768, 2048, 12, 12, 12, 32000, 1024, true};
    else if (!strcmp(name, "tiny"))
        *c = (llama_config){64, 176, 2, 4, 2, 300, 64, false};
    else
        return false;
    return true;
}

tt_status llama_config_check(const llama_config *c, const char *what)
{
    if (c->dim <= 0 || c->hidden_dim <= 0 || c->n_layers <= 0 || c->n_heads <= 0 ||
        c->n_kv_heads <= 0 || c->vocab_size <= 0 || c->seq_len <= 0)
        return tt_error(TT_EINVAL,
                        "%s: bad header: dim %d, hidden_dim %d, n_layers %d, n_heads %d, "
                        "n_kv_heads %d, vocab_size %d, seq_len %d: expected positive sizes",
                        what, c->dim, c->hidden_dim, c->n_layers, c->n_heads, c->n_kv_heads,
                        c->vocab_size, c->seq_len);
    if (c->n_heads % c->n_kv_heads)
        return tt_error(TT_EINVAL,
                        "%s: bad header: n_heads %d is not a multiple of n_kv_heads %d", what,
                        c->n_heads, c->n_kv_heads);
    if (c->dim % c->n_heads || (c->dim / c->n_heads) % 2)
        return tt_error(TT_EINVAL,
                        "%s: bad header: dim %d is not n_heads %d times an even head size",
                        what, c->dim, c->n_heads);
    /* the checkpoint's length must stay a size (and its sizes ints) */
    if ((int64_t)c->vocab_size * c->dim > INT32_MAX ||
        (int64_t)c->n_layers * c->hidden_dim * c->dim > INT32_MAX ||
        (int64_t)c->n_layers * c->dim * c->dim > INT32_MAX)
        return tt_error(TT_EINVAL, "%s: bad header: dim %d, hidden_dim %d, n_layers %d, "
                                   "vocab_size %d: expected tensors of fewer than 2^31 floats",
                        what, c->dim, c->hidden_dim, c->n_layers, c->vocab_size);
    return TT_OK;
}

/* The shape of weight i (its number of dims). */
static int weight_shape(const llama_config *c, int i, int64_t *s)
{
    int64_t L = c->n_layers, D = c->dim, H = c->hidden_dim, V = c->vocab_size;
    int64_t kvd = D / c->n_heads * c->n_kv_heads;
    switch (i) {
    case LLAMA_EMB:
    case LLAMA_CLS: s[0] = V, s[1] = D; return 2;
    case LLAMA_RMS_ATT:
    case LLAMA_RMS_FFN: s[0] = L, s[1] = D; return 2;
    case LLAMA_WQ:
    case LLAMA_WO: s[0] = L, s[1] = D, s[2] = D; return 3;
    case LLAMA_WK:
    case LLAMA_WV: s[0] = L, s[1] = kvd, s[2] = D; return 3;
    case LLAMA_W1:
    case LLAMA_W3: s[0] = L, s[1] = H, s[2] = D; return 3;
    case LLAMA_W2: s[0] = L, s[1] = D, s[2] = H; return 3;
    default: s[0] = D; return 1; /* LLAMA_RMS_FINAL */
    }
}

static int64_t shape_numel(int nd, const int64_t *s)
{
    int64_t n = 1;
    for (int d = 0; d < nd; d++)
        n *= s[d];
    return n;
}

/* The floats of llama2.c's two legacy freq_cis tables (real, imaginary:
 * [seq_len, head_size / 2] each), stored after the final RMSNorm weight
 * and skipped by the reader. */
static int64_t freq_cis_floats(const llama_config *c)
{
    return (int64_t)c->seq_len * (c->dim / c->n_heads);
}

int64_t llama_num_params(const llama_config *c)
{
    int64_t s[3], n = 0;
    for (int i = 0; i < LLAMA_NWEIGHTS; i++)
        if (i != LLAMA_CLS || !c->shared_classifier)
            n += shape_numel(weight_shape(c, i, s), s);
    return n;
}

/* The rotary tables of llama2.c: position p, pair i of a head of size hs
 * turns by p * 10000^(-2i / hs). */
static tt_status rope_tables(llama_model *m)
{
    const llama_config *c = &m->cfg;
    int64_t hs = c->dim / c->n_heads, S = c->seq_len;
    float *cv = malloc(sizeof(float) * (size_t)(S * hs));
    float *sv = malloc(sizeof(float) * (size_t)(S * hs));
    if (!cv || !sv) {
        free(cv), free(sv);
        return tt_error(TT_ENOMEM, "llama: out of memory for the rotary tables");
    }
    for (int64_t p = 0; p < S; p++)
        for (int64_t i = 0; i < hs / 2; i++) {
            /* as run.c: in float, freq then the angle */
            float freq = 1.0f / powf(10000.0f, (float)(2 * i) / (float)hs);
            float a = (float)p * freq;
            cv[p * hs + 2 * i] = cv[p * hs + 2 * i + 1] = cosf(a);
            sv[p * hs + 2 * i] = sv[p * hs + 2 * i + 1] = sinf(a);
        }
    m->cos = tt_from_data(2, (int64_t[]){S, hs}, TT_F32, cv);
    m->sin = tt_from_data(2, (int64_t[]){S, hs}, TT_F32, sv);
    free(cv), free(sv);
    return m->cos && m->sin ? TT_OK : tt_errcode();
}

void llama_model_free(llama_model *m)
{
    for (int i = 0; i < LLAMA_NWEIGHTS; i++)
        m->w[i] = tt_release(m->w[i]);
    m->cos = tt_release(m->cos);
    m->sin = tt_release(m->sin);
}

tt_status llama_model_random(llama_model *m, const llama_config *c, uint64_t seed)
{
    tt_status st = llama_config_check(c, "llama: random config");
    if (st)
        return st;
    *m = (llama_model){.cfg = *c};
    tt_manual_seed(seed);
    int64_t s[3];
    for (int i = 0; i < LLAMA_NWEIGHTS && !st; i++) {
        if (i == LLAMA_CLS && c->shared_classifier) {
            m->w[i] = tt_retain(m->w[LLAMA_EMB]);
            continue;
        }
        int nd = weight_shape(c, i, s);
        m->w[i] = tt_randn(nd, s, TT_F32);
        st = m->w[i] ? tt_mul_scalar_(m->w[i], 0.02) : tt_errcode();
        if (!st && (i == LLAMA_RMS_ATT || i == LLAMA_RMS_FFN || i == LLAMA_RMS_FINAL))
            st = tt_add_scalar_(m->w[i], 1.0);
    }
    if (!st)
        st = rope_tables(m);
    if (st)
        llama_model_free(m);
    return st;
}

tt_status llama_checkpoint_read(llama_model *m, const char *path)
{
    *m = (llama_model){0};
    FILE *f = fopen(path, "rb");
    if (!f)
        return tt_error(TT_EINVAL, "%s: cannot open the checkpoint", path);
    int32_t h[7];
    tt_status st = TT_OK;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    if (len < (long)sizeof h || fread(h, sizeof h, 1, f) != 1) {
        fclose(f);
        return tt_error(TT_EINVAL, "%s: truncated: %ld bytes, expected at least the 28 of "
                                   "llama2.c's Config header", path, len);
    }
    llama_config c = {h[0], h[1], h[2], h[3], h[4], abs(h[5]), h[6], h[5] > 0};
    if (h[5] == INT32_MIN)
        c.vocab_size = -1;
    if ((st = llama_config_check(&c, path))) {
        fclose(f);
        return st;
    }
    int64_t want = (int64_t)sizeof h + 4 * (llama_num_params(&c) + freq_cis_floats(&c));
    if ((int64_t)len != want) {
        fclose(f);
        return tt_error(TT_EINVAL,
                        "%s: %s: %ld bytes, expected %lld for dim %d, hidden_dim %d, "
                        "n_layers %d, n_heads %d, n_kv_heads %d, vocab_size %d (%s classifier), "
                        "seq_len %d", path, (int64_t)len < want ? "truncated" : "too long", len,
                        (long long)want, c.dim, c.hidden_dim, c.n_layers, c.n_heads,
                        c.n_kv_heads, c.vocab_size, c.shared_classifier ? "shared" : "separate",
                        c.seq_len);
    }
    m->cfg = c;
    int64_t s[3];
    for (int i = 0; i < LLAMA_NWEIGHTS && !st; i++) {
        if (i == LLAMA_CLS) {
            fseek(f, (long)(4 * freq_cis_floats(&c)), SEEK_CUR); /* the legacy tables */
            if (c.shared_classifier) {
                m->w[i] = tt_retain(m->w[LLAMA_EMB]);
                break;
            }
        }
        int nd = weight_shape(&c, i, s);
        int64_t n = shape_numel(nd, s);
        m->w[i] = tt_empty(nd, s, TT_F32);
        float *p = m->w[i] ? tt_data(m->w[i]) : NULL;
        if (!p)
            st = tt_errcode();
        else if (fread(p, sizeof(float), (size_t)n, f) != (size_t)n)
            st = tt_error(TT_EINVAL, "%s: read error in weight %d", path, i);
    }
    fclose(f);
    if (!st)
        st = rope_tables(m);
    if (st)
        llama_model_free(m);
    return st;
}

tt_status llama_checkpoint_write(const llama_model *m, const char *path)
{
    const llama_config *c = &m->cfg;
    FILE *f = fopen(path, "wb");
    if (!f)
        return tt_error(TT_EINVAL, "%s: cannot create the checkpoint", path);
    int32_t h[7] = {c->dim, c->hidden_dim, c->n_layers, c->n_heads, c->n_kv_heads,
                    c->shared_classifier ? c->vocab_size : -c->vocab_size, c->seq_len};
    bool ok = fwrite(h, sizeof h, 1, f) == 1;
    for (int i = 0; i < LLAMA_NWEIGHTS && ok; i++) {
        if (i == LLAMA_CLS) {
            /* llama2.c's legacy freq_cis tables: real [seq_len, hs/2], then
             * imaginary, the cos and sin of each pair's angle */
            int64_t hs = c->dim / c->n_heads;
            const float *tab[2] = {tt_data(m->cos), tt_data(m->sin)};
            for (int k = 0; k < 2 && ok; k++)
                for (int64_t e = 0; e < c->seq_len * hs && ok; e += 2)
                    ok = fwrite(&tab[k][e], sizeof(float), 1, f) == 1;
            if (c->shared_classifier)
                break;
        }
        tt_tensor *w = tt_contiguous(m->w[i]);
        const float *p = w ? tt_data(w) : NULL;
        size_t n = w ? (size_t)tt_numel(w) : 0;
        ok = p && fwrite(p, sizeof(float), n, f) == n;
        tt_release(w);
    }
    if (fclose(f) || !ok)
        return tt_errcode() ? tt_errcode() : tt_error(TT_EINVAL, "%s: write error", path);
    return TT_OK;
}

/* ------------------------------------------------------------- KV cache */

tt_status llama_cache_alloc(llama_cache *kv, const llama_config *c)
{
    int64_t s[5] = {c->n_layers, 1, c->n_kv_heads, c->seq_len, c->dim / c->n_heads};
    kv->k = tt_zeros(5, s, TT_F32);
    kv->v = tt_zeros(5, s, TT_F32);
    if (kv->k && kv->v)
        return TT_OK;
    llama_cache_free(kv);
    return tt_errcode();
}

void llama_cache_free(llama_cache *kv)
{
    kv->k = tt_release(kv->k);
    kv->v = tt_release(kv->v);
}

void llama_inputs(const llama_model *m, const llama_cache *kv, tt_tensor *tokens,
                  tt_tensor **in)
{
    in[0] = tokens, in[1] = kv->k, in[2] = kv->v;
    for (int i = 0; i < LLAMA_NWEIGHTS; i++)
        in[3 + i] = m->w[i];
    in[3 + LLAMA_NWEIGHTS] = m->cos;
    in[4 + LLAMA_NWEIGHTS] = m->sin;
}

/* ---------------------------------------------------------- the forward */
/* Runs inside the caller's scope: every tensor made here is released when
 * it ends; a NULL from a failed op flows on to the result with the first
 * error kept. */

/* [T, n*hs] -> [1, n, T, hs]: the heads of T positions (a view). */
static tt_tensor *heads(tt_tensor *x, int64_t T, int64_t n, int64_t hs)
{
    return tt_transpose(tt_view(x, 4, (int64_t[]){1, T, n, hs}), 1, 2);
}

tt_tensor *llama_forward(const llama_config *c, tt_tensor **in, tt_size pos, bool causal)
{
    tt_tensor *tokens = in[0], *kc = in[1], *vc = in[2], **w = in + 3;
    tt_tensor *cos = in[3 + LLAMA_NWEIGHTS], *sin = in[4 + LLAMA_NWEIGHTS];
    /* T may be a size symbol too (a traced prefill): sizes are computed
     * with tt_sym_*, never compared in C */
    tt_size T = tt_dim_size(tokens, 0);
    int64_t D = c->dim, H = c->n_heads, KV = c->n_kv_heads;
    int64_t hs = D / H;
    tt_size end = tt_sym_add(pos, T);
    /* the rows of the rotary tables for these positions */
    tt_tensor *cs = tt_narrow(cos, 0, pos, T), *sn = tt_narrow(sin, 0, pos, T);
    tt_tensor *x = tt_embedding(w[LLAMA_EMB], tokens); /* [T, D] */
    for (int l = 0; l < c->n_layers && x; l++) {
        /* each layer's nodes in a named scope ("layer3/attn", "layer3/ffn"):
         * its DOT draws a box per layer */
        char layer[16];
        snprintf(layer, sizeof layer, "layer%d", l);
        tt_scope_name_push(layer);
        tt_scope_name_push("attn");
        /* attention: RMSNorm, q k v, rotary, the cache written at pos */
        tt_tensor *h = tt_rms_norm(x, 1, &D, tt_select(w[LLAMA_RMS_ATT], 0, l), 1e-5);
        tt_tensor *q = heads(tt_linear(h, tt_select(w[LLAMA_WQ], 0, l), NULL), T, H, hs);
        tt_tensor *k = heads(tt_linear(h, tt_select(w[LLAMA_WK], 0, l), NULL), T, KV, hs);
        tt_tensor *v = heads(tt_linear(h, tt_select(w[LLAMA_WV], 0, l), NULL), T, KV, hs);
        q = tt_rotary_embedding(q, cs, sn, true);
        k = tt_rotary_embedding(k, cs, sn, true);
        tt_tensor *kl = tt_select(kc, 0, l), *vl = tt_select(vc, 0, l); /* [1, KV, S, hs] */
        tt_status st = k ? tt_copy_(tt_narrow(kl, 2, pos, T), k) : tt_errcode();
        if (!st)
            st = v ? tt_copy_(tt_narrow(vl, 2, pos, T), v) : tt_errcode();
        if (st) {
            tt_scope_name_pop();
            tt_scope_name_pop();
            return NULL;
        }
        /* every key and value up to this position; a prefill (pos 0)
         * attends causally, a decode step's one query sees all of them */
        tt_tensor *a = tt_scaled_dot_product_attention_gqa(
            q, tt_narrow(kl, 2, 0, end), tt_narrow(vl, 2, 0, end), causal, 0);
        a = tt_reshape(tt_transpose(a, 1, 2), 2, (int64_t[]){T, D});
        x = tt_add(x, tt_linear(a, tt_select(w[LLAMA_WO], 0, l), NULL));
        tt_scope_name_pop();
        tt_scope_name_push("ffn");
        /* SwiGLU: w2(silu(w1 h) * w3 h) */
        h = tt_rms_norm(x, 1, &D, tt_select(w[LLAMA_RMS_FFN], 0, l), 1e-5);
        tt_tensor *g = tt_silu(tt_linear(h, tt_select(w[LLAMA_W1], 0, l), NULL));
        tt_tensor *u = tt_mul(g, tt_linear(h, tt_select(w[LLAMA_W3], 0, l), NULL));
        x = tt_add(x, tt_linear(u, tt_select(w[LLAMA_W2], 0, l), NULL));
        tt_scope_name_pop();
        tt_scope_name_pop();
    }
    /* the last position's logits only: what the next token needs */
    x = tt_rms_norm(tt_narrow(x, 0, tt_sym_sub(T, 1), 1), 1, &D, w[LLAMA_RMS_FINAL], 1e-5);
    tt_tensor *logits = tt_linear(x, w[LLAMA_CLS], NULL); /* [1, V] */
    return tt_view(logits, 1, (int64_t[]){c->vocab_size});
}

/* The prefill as a tt_fn: every token of in[0] from position 0, causal. */
static tt_status prefill_step(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    tt_scope_begin();
    out[0] = tt_keep(llama_forward(ud, in, 0, true));
    tt_scope_end();
    return out[0] ? TT_OK : tt_errcode();
}

tt_compiled *llama_compile_prefill(const llama_config *c)
{
    /* the prompt's length is the symbol; the rest keeps its sizes */
    return tt_compile(prefill_step, LLAMA_NIN, 1,
                      &(tt_trace_opts){.mode = TT_TRACE_SYMBOLIC, .fullgraph = true,
                                       .dynamic_inputs = 1, .ud = (void *)c,
                                       .ud_constant = true, .name = "llama_prefill"});
}

tt_tensor *llama_prefill(const llama_model *m, llama_cache *kv, tt_compiled *c,
                         const int *tokens, int n)
{
    if (n < 1 || n > m->cfg.seq_len) {
        tt_error(TT_EINVAL, "llama_prefill: %d prompt tokens: expected 1 to seq_len %d", n,
                 m->cfg.seq_len);
        return NULL;
    }
    int64_t *t64 = malloc(sizeof *t64 * (size_t)n);
    if (!t64) {
        tt_error(TT_ENOMEM, "llama_prefill: out of memory");
        return NULL;
    }
    for (int i = 0; i < n; i++)
        t64[i] = tokens[i];
    tt_tensor *in[LLAMA_NIN], *logits = NULL;
    tt_tensor *tok = tt_from_data(1, (int64_t[]){n}, TT_I64, t64);
    free(t64);
    if (!tok)
        return NULL;
    llama_inputs(m, kv, tok, in);
    if (c) {
        if (tt_compiled_call(c, in, &logits))
            logits = NULL;
    } else {
        tt_scope_begin();
        logits = tt_keep(llama_forward(&m->cfg, in, 0, true));
        tt_scope_end();
    }
    tt_release(tok);
    return logits;
}

tt_status llama_decode_step(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    /* a size symbol when traced symbolically; outside a compiled call, 0
     * with an error that fails the call */
    tt_size pos = tt_fn_arg_int(0);
    tt_scope_begin();
    out[0] = tt_keep(llama_forward(ud, in, pos, false));
    tt_scope_end();
    return out[0] ? TT_OK : tt_errcode();
}

tt_compiled *llama_compile_decode(const llama_config *c)
{
    /* only the token is a dynamic input (its size 1 specializes); the
     * caches and weights keep their sizes, the position is the symbol */
    return tt_compile(llama_decode_step, LLAMA_NIN, 1,
                      &(tt_trace_opts){.mode = TT_TRACE_SYMBOLIC, .fullgraph = true,
                                       .dynamic_inputs = 1, .dynamic_args = 1,
                                       .ud = (void *)c, .ud_constant = true,
                                       .name = "llama_decode"});
}

tt_tensor *llama_decode(const llama_model *m, llama_cache *kv, tt_compiled *c, int token,
                        int64_t pos)
{
    if (pos < 0 || pos >= m->cfg.seq_len) {
        tt_error(TT_EINVAL, "llama_decode: position %lld: expected 0 to seq_len - 1 = %d",
                 (long long)pos, m->cfg.seq_len - 1);
        return NULL;
    }
    int64_t t = token;
    tt_tensor *tok = tt_from_data(1, (int64_t[]){1}, TT_I64, &t), *in[LLAMA_NIN], *out = NULL;
    if (!tok)
        return NULL;
    llama_inputs(m, kv, tok, in);
    if (c) {
        const tt_value arg = tt_v_int(pos);
        if (tt_compiled_call_args(c, in, &out, &arg, 1))
            out = NULL;
    } else {
        tt_scope_begin();
        out = tt_keep(llama_forward(&m->cfg, in, pos, false));
        tt_scope_end();
    }
    tt_release(tok);
    return out;
}

/* -------------------------------------------------------------- sampler */

tt_status llama_sample(const tt_tensor *logits, double temperature, double topp, int *token)
{
    double v = -1;
    tt_status st;
    tt_scope_begin();
    if (temperature <= 0) {
        st = tt_item(tt_argmax(logits, 0, false), &v);
    } else {
        tt_tensor *probs = tt_softmax(tt_div_scalar(logits, temperature), 0);
        if (topp <= 0 || topp >= 1) {
            st = tt_item(tt_multinomial(probs, 1, true), &v);
        } else {
            /* the nucleus: the most likely tokens until their mass passes
             * topp (the one that passes it included) */
            tt_tensor *idx = NULL;
            tt_tensor *sorted = tt_sort(probs, 0, true, &idx);
            if (idx)
                tt_scope_adopt(idx);
            tt_tensor *before = tt_sub(tt_cumsum(sorted, 0), sorted); /* mass before each */
            tt_tensor *out = tt_gt(before, tt_scalar(topp, TT_F32));
            tt_tensor *kept = tt_masked_fill(sorted, out, 0);
            kept = tt_div(kept, tt_sum_all(kept));
            tt_tensor *j = tt_multinomial(kept, 1, true);
            st = tt_item(tt_index_select(idx, 0, j), &v);
        }
    }
    tt_scope_end();
    *token = (int)v;
    return st;
}

/* ------------------------------------------------------------ tokenizer */

void llama_tokenizer_free(llama_tokenizer *t)
{
    for (int i = 0; t->vocab && i < t->vocab_size; i++)
        free(t->vocab[i]);
    free(t->vocab);
    free(t->scores);
    free(t->sorted);
    *t = (llama_tokenizer){0};
}

static const llama_tokenizer *sort_tok;
static int cmp_tokens(const void *a, const void *b)
{
    return strcmp(sort_tok->vocab[*(const int *)a], sort_tok->vocab[*(const int *)b]);
}

tt_status llama_tokenizer_read(llama_tokenizer *t, const char *path, int vocab_size)
{
    *t = (llama_tokenizer){.vocab_size = vocab_size};
    FILE *f = fopen(path, "rb");
    if (!f)
        return tt_error(TT_EINVAL, "%s: cannot open the tokenizer", path);
    tt_status st = TT_OK;
    t->vocab = calloc((size_t)vocab_size, sizeof *t->vocab);
    t->scores = calloc((size_t)vocab_size, sizeof *t->scores);
    t->sorted = calloc((size_t)vocab_size, sizeof *t->sorted);
    if (!t->vocab || !t->scores || !t->sorted)
        st = tt_error(TT_ENOMEM, "%s: out of memory", path);
    if (!st && (fread(&t->max_token_length, 4, 1, f) != 1 || t->max_token_length < 1 ||
                t->max_token_length > 4096))
        st = tt_error(TT_EINVAL, "%s: bad tokenizer header: expected max_token_length in "
                                 "1..4096", path);
    for (int i = 0; i < vocab_size && !st; i++) {
        int32_t len;
        if (fread(&t->scores[i], 4, 1, f) != 1 || fread(&len, 4, 1, f) != 1) {
            st = tt_error(TT_EINVAL, "%s: truncated: %d of the %d tokens the model's "
                                     "vocab_size expects", path, i, vocab_size);
            break;
        }
        if (len < 0 || len > t->max_token_length) {
            st = tt_error(TT_EINVAL, "%s: token %d has length %d: expected 0..%d", path, i,
                          len, t->max_token_length);
            break;
        }
        if (!(t->vocab[i] = malloc((size_t)len + 1)))
            st = tt_error(TT_ENOMEM, "%s: out of memory", path);
        else if (fread(t->vocab[i], 1, (size_t)len, f) != (size_t)len)
            st = tt_error(TT_EINVAL, "%s: truncated in token %d", path, i);
        else
            t->vocab[i][len] = '\0';
    }
    fclose(f);
    if (st) {
        llama_tokenizer_free(t);
        return st;
    }
    for (int i = 0; i < 256; i++)
        t->byte_pieces[2 * i] = (char)i, t->byte_pieces[2 * i + 1] = '\0';
    for (int i = 0; i < vocab_size; i++)
        t->sorted[i] = i;
    sort_tok = t;
    qsort(t->sorted, (size_t)vocab_size, sizeof(int), cmp_tokens);
    return TT_OK;
}

/* The token whose string is s (the lowest id among equal strings), or -1. */
static int lookup(const llama_tokenizer *t, const char *s)
{
    int lo = 0, hi = t->vocab_size - 1, found = -1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2, c = strcmp(s, t->vocab[t->sorted[mid]]);
        if (c == 0)
            found = t->sorted[mid], hi = mid - 1;
        else if (c < 0)
            hi = mid - 1;
        else
            lo = mid + 1;
    }
    return found;
}

tt_status llama_encode(const llama_tokenizer *t, const char *text, bool bos, bool eos,
                       int *tokens, int *n)
{
    char *buf = malloc((size_t)t->max_token_length * 2 + 3);
    if (!buf)
        return tt_error(TT_ENOMEM, "llama_encode: out of memory");
    int nt = 0;
    if (bos)
        tokens[nt++] = 1;
    if (text[0]) { /* sentencepiece's dummy prefix: a leading space */
        int sp = lookup(t, " ");
        if (sp >= 0)
            tokens[nt++] = sp;
    }
    /* one token per UTF-8 character, or its bytes' tokens */
    size_t len = 0;
    for (const char *c = text; *c; c++) {
        if ((*c & 0xC0) != 0x80)
            len = 0; /* a character's first byte */
        buf[len++] = *c;
        buf[len] = '\0';
        if ((c[1] & 0xC0) == 0x80 && len < 4)
            continue; /* more bytes of this character */
        int id = lookup(t, buf);
        if (id >= 0) {
            tokens[nt++] = id;
        } else {
            for (size_t i = 0; i < len; i++) { /* byte fallback: <0xXX> is 3 + byte */
                int b = (unsigned char)buf[i] + 3;
                tokens[nt++] = b < t->vocab_size ? b : 0; /* <unk> in a smaller vocabulary */
            }
        }
        len = 0;
    }
    /* merge the best-scored adjacent pair while one is a token */
    for (;;) {
        float best = -1e10f;
        int best_id = -1, best_at = -1;
        for (int i = 0; i + 1 < nt; i++) {
            if (strlen(t->vocab[tokens[i]]) + strlen(t->vocab[tokens[i + 1]]) >
                (size_t)t->max_token_length * 2)
                continue;
            sprintf(buf, "%s%s", t->vocab[tokens[i]], t->vocab[tokens[i + 1]]);
            int id = lookup(t, buf);
            if (id >= 0 && t->scores[id] > best)
                best = t->scores[id], best_id = id, best_at = i;
        }
        if (best_at < 0)
            break;
        tokens[best_at] = best_id;
        memmove(&tokens[best_at + 1], &tokens[best_at + 2],
                sizeof(int) * (size_t)(nt - best_at - 2));
        nt--;
    }
    if (eos)
        tokens[nt++] = 2;
    free(buf);
    *n = nt;
    return TT_OK;
}

const char *llama_decode_piece(const llama_tokenizer *t, int prev, int token)
{
    if (token < 0 || token >= t->vocab_size)
        return "";
    const char *piece = t->vocab[token];
    if (prev == 1 && piece[0] == ' ')
        piece++; /* after BOS, sentencepiece strips the leading space */
    unsigned char b;
    if (sscanf(piece, "<0x%02hhX>", &b) == 1)
        piece = t->byte_pieces + b * 2;
    return piece;
}

static bool put_token(FILE *f, float score, const char *s, int len)
{
    int32_t l = len;
    return fwrite(&score, 4, 1, f) == 1 && fwrite(&l, 4, 1, f) == 1 &&
           fwrite(s, 1, (size_t)len, f) == (size_t)len;
}

tt_status llama_tokenizer_write_bytes(const char *path, int vocab_size)
{
    if (vocab_size < 260)
        return tt_error(TT_EINVAL, "%s: a byte tokenizer needs a vocab_size of at least 260, "
                                   "got %d", path, vocab_size);
    FILE *f = fopen(path, "wb");
    if (!f)
        return tt_error(TT_EINVAL, "%s: cannot create the tokenizer", path);
    int32_t maxlen = 16;
    bool ok = fwrite(&maxlen, 4, 1, f) == 1;
    ok = ok && put_token(f, 0, "<unk>", 5) && put_token(f, 0, "\n<s>\n", 5) &&
         put_token(f, 0, "\n</s>\n", 6);
    char s[32];
    for (int b = 0; b < 256 && ok; b++) {
        snprintf(s, sizeof s, "<0x%02X>", b);
        ok = put_token(f, 0, s, 6);
    }
    int n = 259;
    /* the printable characters, the frequent ones first */
    const char *first = " abcdefghijklmnopqrstuvwxyz";
    char chars[96];
    int nc = 0;
    for (const char *c = first; *c; c++)
        chars[nc++] = *c;
    for (int c = 33; c < 127; c++)
        if (!strchr(first, c))
            chars[nc++] = (char)c;
    for (int i = 0; i < nc && n < vocab_size && ok; i++, n++)
        ok = put_token(f, 0, &chars[i], 1);
    /* merges: pairs, triples, then quadruples of the first 27
     * characters, scored so that earlier ones win */
    int na = (int)strlen(first);
    for (int len = 2, count = na * na; len <= 4 && ok; len++, count *= na) {
        for (int i = 0; i < count && n < vocab_size && ok; i++, n++) {
            int r = i;
            for (int k = len - 1; k >= 0; k--, r /= na)
                s[k] = first[r % na];
            ok = put_token(f, -(float)n, s, len);
        }
    }
    for (; n < vocab_size && ok; n++) {
        int l = snprintf(s, sizeof s, "<pad%d>", n);
        ok = put_token(f, -1e9f, s, l);
    }
    if (fclose(f) || !ok)
        return tt_error(TT_EINVAL, "%s: write error", path);
    return TT_OK;
}
