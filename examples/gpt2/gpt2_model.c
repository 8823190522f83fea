/* GPT-2 on tensortrace: the model in the style of llm.c's train_gpt2.c,
 * written with ops instead of hand-written loops, so that the whole
 * training step (forward, loss, backward, AdamW) traces into one graph and
 * replays compiled; and llm.c's file formats (see gpt2.h and the README).
 * Public API only. */
#include "gpt2.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CKPT_MAGIC 20240326
#define TOKENS_MAGIC 20240520

/* ------------------------------------------------------------ the model */


static bool per_layer(int kind) { return kind >= LN1W && kind <= FCPROJB; }

/* Number of parameter tensors: 4 + 12 L. */
int gpt2_num_params(const gpt2_config *c) { return 4 + 12 * c->num_layers; }

/* Index of (kind, layer) in the parameter array, in llm.c's file order. */
int gpt2_param_index(const gpt2_config *c, int kind, int layer)
{
    if (kind <= WPE)
        return kind;
    if (per_layer(kind))
        return 2 + (kind - LN1W) * c->num_layers + layer;
    return 2 + 12 * c->num_layers + (kind - LNFW);
}

/* Shape of one tensor of `kind` (per layer for the per-layer kinds). */
static int param_shape(const gpt2_config *c, int kind, int64_t *s)
{
    int64_t C = c->channels;
    switch (kind) {
    case WTE: s[0] = c->padded_vocab_size, s[1] = C; return 2;
    case WPE: s[0] = c->max_seq_len, s[1] = C; return 2;
    case QKVW: s[0] = 3 * C, s[1] = C; return 2;
    case QKVB: s[0] = 3 * C; return 1;
    case ATTPROJW: s[0] = C, s[1] = C; return 2;
    case FCW: s[0] = 4 * C, s[1] = C; return 2;
    case FCB: s[0] = 4 * C; return 1;
    case FCPROJW: s[0] = C, s[1] = 4 * C; return 2;
    default: s[0] = C; return 1; /* layer norms and the other biases */
    }
}

/* The parameters of one transformer block (borrowed from the array). */
typedef struct {
    tt_tensor *ln1w, *ln1b, *qkvw, *qkvb, *attprojw, *attprojb;
    tt_tensor *ln2w, *ln2b, *fcw, *fcb, *fcprojw, *fcprojb;
} gpt2_block;

static gpt2_block block_params(const gpt2_config *c, tt_tensor **p, int l)
{
    return (gpt2_block){
        p[gpt2_param_index(c, LN1W, l)],    p[gpt2_param_index(c, LN1B, l)],
        p[gpt2_param_index(c, QKVW, l)],    p[gpt2_param_index(c, QKVB, l)],
        p[gpt2_param_index(c, ATTPROJW, l)], p[gpt2_param_index(c, ATTPROJB, l)],
        p[gpt2_param_index(c, LN2W, l)],    p[gpt2_param_index(c, LN2B, l)],
        p[gpt2_param_index(c, FCW, l)],     p[gpt2_param_index(c, FCB, l)],
        p[gpt2_param_index(c, FCPROJW, l)], p[gpt2_param_index(c, FCPROJB, l)],
    };
}

/* ---------------------------------------------------------- the forward */
/* Every function below runs inside the step's scope: the tensors it makes
 * are released when the step ends, and a NULL from a failed op flows on to
 * the loss, which is then NULL with the first error kept. */

static tt_tensor *layernorm(tt_tensor *x, tt_tensor *w, tt_tensor *b, int64_t C)
{
    return tt_layer_norm(x, 1, &C, w, b, 1e-5);
}

/* Causal self-attention. qkv is (B, T, 3C); returns (B, T, C). */
static tt_tensor *attention(tt_tensor *qkv, int64_t B, int64_t T, int NH, int64_t C)
{
    int64_t hs = C / NH;
    /* (B, T, 3, NH, hs) -> (3, B, NH, T, hs): q, k, v are views. */
    tt_tensor *h = tt_permute(tt_view(qkv, TT_SHAPE(B, T, 3, NH, hs)), TT_SHAPE(2, 0, 3, 1, 4));
    tt_tensor *q = tt_select(h, 0, 0), *k = tt_select(h, 0, 1), *v = tt_select(h, 0, 2);
    tt_tensor *y = tt_scaled_dot_product_attention(q, k, v, true, 0); /* (B, NH, T, hs) */
    /* y's memory is (B, T, NH, hs): merging the heads back is a view. */
    return tt_reshape(tt_transpose(y, 1, 2), TT_SHAPE(B, T, C));
}

/* One transformer block: x + attn(ln1(x)), then + mlp(ln2(x)). x is
 * (B, T, C). */
static tt_tensor *block_forward(const gpt2_config *c, const gpt2_block *p, tt_tensor *x,
                                int64_t B, int64_t T)
{
    int64_t C = c->channels;
    tt_tensor *ln1 = layernorm(x, p->ln1w, p->ln1b, C);         /* (B, T, C) */
    tt_tensor *qkv = tt_linear(ln1, p->qkvw, p->qkvb);           /* (B, T, 3C) */
    tt_tensor *atty = attention(qkv, B, T, c->num_heads, C);    /* (B, T, C) */
    tt_tensor *attproj = tt_linear(atty, p->attprojw, p->attprojb);
    tt_tensor *residual2 = tt_add(x, attproj);
    tt_tensor *ln2 = layernorm(residual2, p->ln2w, p->ln2b, C);
    tt_tensor *fch = tt_linear(ln2, p->fcw, p->fcb);             /* (B, T, 4C) */
    tt_tensor *fch_gelu = tt_gelu_tanh(fch);                     /* GPT-2's GELU */
    tt_tensor *fcproj = tt_linear(fch_gelu, p->fcprojw, p->fcprojb); /* (B, T, C) */
    return tt_add(residual2, fcproj);
}

tt_status gpt2_block_fn(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    const gpt2_config *c = ud;
    gpt2_block p = {in[1], in[2], in[3], in[4], in[5], in[6],
                    in[7], in[8], in[9], in[10], in[11], in[12]};
    tt_scope_begin();
    tt_tensor *y = block_forward(c, &p, in[0], tt_dim_size(in[0], 0), tt_dim_size(in[0], 1));
    out[0] = tt_keep(y);
    tt_scope_end();
    return out[0] ? TT_OK : tt_errcode();
}

tt_status gpt2_block_inputs(const gpt2_config *c, int64_t B, int64_t T, tt_tensor **in)
{
    int kinds[12] = {LN1W, LN1B, QKVW, QKVB, ATTPROJW, ATTPROJB,
                     LN2W, LN2B, FCW, FCB, FCPROJW, FCPROJB};
    int64_t sh[2];
    memset(in, 0, sizeof *in * 13);
    in[0] = tt_zeros(TT_SHAPE(B, T, c->channels), TT_F32);
    for (int i = 0; i < 12 && in[i]; i++) {
        int nd = param_shape(c, kinds[i], sh);
        in[i + 1] = tt_zeros(nd, sh, TT_F32);
    }
    for (int i = 0; i < 13; i++)
        if (!in[i]) {
            for (int j = 0; j < 13; j++)
                in[j] = tt_release(in[j]);
            return tt_errcode();
        }
    return TT_OK;
}

/* The mean cross-entropy loss of the next-token predictions. tokens and
 * targets are i64 (B, T), pos the positions 0..T-1 (i64 (T)); p the
 * parameter array; vocab_mask (Vp) is 0 for the vocabulary and -inf for
 * wte's padding rows (NULL when there are none). */
static tt_tensor *gpt2_forward(const gpt2_config *c, tt_tensor **p, tt_tensor *tokens,
                               tt_tensor *targets, tt_tensor *pos, tt_tensor *vocab_mask)
{
    int64_t B = tt_dim_size(tokens, 0), T = tt_dim_size(tokens, 1), C = c->channels;
    tt_tensor *wte = p[gpt2_param_index(c, WTE, 0)], *wpe = p[gpt2_param_index(c, WPE, 0)];
    /* token embeddings (B, T, C) + position embeddings (T, C) */
    tt_tensor *x = tt_add(tt_embedding(wte, tokens), tt_embedding(wpe, pos));
    for (int l = 0; l < c->num_layers; l++) {
        gpt2_block blk = block_params(c, p, l);
        x = block_forward(c, &blk, x, B, T);
    }
    x = layernorm(x, p[gpt2_param_index(c, LNFW, 0)], p[gpt2_param_index(c, LNFB, 0)], C);
    /* The output projection shares wte (weight tying): logits (B, T, Vp).
     * The padding columns get -inf, so they take no probability, as in
     * llm.c (which leaves them out of its softmax). */
    tt_tensor *logits = tt_linear(x, wte, vocab_mask);
    return tt_cross_entropy(tt_flatten(logits, 0, 1), tt_flatten(targets, 0, 1));
}

/* ------------------------------------------------------- the train step */


/* One training step: forward, loss, backward, AdamW. in: tokens (B, T),
 * targets (B, T), pos (T), step (0-dim, the update's number), then the parameters,
 * their first moments and their second moments (num_params each). out[0]:
 * the loss (a new reference). The parameters and moments are updated in
 * place and the gradients cleared. Only ops: it traces into one graph. */
tt_status gpt2_train_step(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    const gpt2_step_args *a = ud;
    const gpt2_config *c = &a->cfg;
    int np = gpt2_num_params(c);
    tt_tensor **params = in + GPT2_NFIXED, **m = params + np, **v = m + np;
    tt_status st = TT_OK;
    tt_scope_begin();
    tt_tensor *loss = gpt2_forward(c, params, in[0], in[1], in[2], a->vocab_mask);
    st = loss ? tt_backward(loss, NULL) : tt_errcode();
    tt_tensor **grads = calloc((size_t)np, sizeof *grads);
    if (!st && !grads)
        st = tt_error(TT_ENOMEM, "train_step: out of memory");
    for (int i = 0; !st && i < np; i++)
        if (!(grads[i] = tt_get_grad(params[i])))
            st = tt_errcode();
    tt_no_grad_begin();
    if (!st && a->clip > 0) {
        /* torch.nn.utils.clip_grad_norm_: scale by min(1, max / norm). */
        tt_tensor *norm = tt_global_norm(np, grads);
        tt_tensor *coef = tt_clamp(tt_div(tt_scalar(a->clip, TT_F32),
                                          tt_add_scalar(norm, 1e-6)), NAN, 1.0);
        for (int i = 0; !st && i < np; i++)
            st = coef ? tt_mul_(grads[i], coef) : tt_errcode();
    }
    for (int i = 0; !st && i < np; i++)
        st = tt_adamw_(params[i], grads[i], m[i], v[i], in[3], &a->adamw);
    tt_no_grad_end();
    for (int i = 0; !st && i < np; i++)
        st = tt_set_grad(params[i], NULL);
    for (int i = 0; grads && i < np; i++)
        tt_release(grads[i]);
    free(grads);
    out[0] = st ? NULL : tt_keep(loss);
    tt_scope_end();
    return st;
}

/* ----------------------------------------------------------- the state */


void gpt2_state_free(gpt2_state *s)
{
    for (int i = 0; s->t && i < 3 * s->np; i++)
        tt_release(s->t[i]);
    free(s->t);
    tt_release(s->step);
    s->t = NULL, s->step = NULL;
}

/* Allocates zero parameters and moments for s->cfg. */
tt_status gpt2_state_alloc(gpt2_state *s)
{
    s->np = gpt2_num_params(&s->cfg);
    s->t = calloc(3 * (size_t)s->np, sizeof *s->t);
    s->step = tt_zeros(0, NULL, TT_F32);
    if (!s->t || !s->step)
        return tt_error(TT_ENOMEM, "gpt2: out of memory");
    for (int kind = 0; kind < NUM_KINDS; kind++)
        for (int l = 0; l < (per_layer(kind) ? s->cfg.num_layers : 1); l++) {
            int64_t sh[2];
            int nd = param_shape(&s->cfg, kind, sh), i = gpt2_param_index(&s->cfg, kind, l);
            for (int j = 0; j < 3; j++)
                if (!(s->t[j * s->np + i] = tt_zeros(nd, sh, TT_F32)))
                    return tt_errcode();
            tt_status st = tt_set_requires_grad(s->t[i], true);
            if (st)
                return st;
        }
    return TT_OK;
}

/* GPT-2's initialization: weights normal(0, 0.02), the two residual
 * projections (attprojw, fcprojw) scaled by 1/sqrt(2 L), biases 0, layer
 * norm weights 1; wte's padding rows 0. */
tt_status gpt2_state_init_random(gpt2_state *s, uint64_t seed)
{
    tt_manual_seed(seed);
    const gpt2_config *c = &s->cfg;
    for (int kind = 0; kind < NUM_KINDS; kind++)
        for (int l = 0; l < (per_layer(kind) ? c->num_layers : 1); l++) {
            tt_tensor *p = s->t[gpt2_param_index(c, kind, l)];
            tt_status st;
            double std = 0.02;
            if (kind == ATTPROJW || kind == FCPROJW)
                std /= sqrt(2.0 * c->num_layers);
            tt_no_grad_begin();
            if (kind == LN1W || kind == LN2W || kind == LNFW) {
                st = tt_fill_(p, 1);
            } else if (tt_ndim(p) == 1) {
                st = tt_fill_(p, 0);
            } else {
                tt_scope_begin();
                tt_tensor *r = tt_mul_scalar(tt_randn(tt_ndim(p), tt_sizes(p), TT_F32), std);
                if (r && kind == WTE)
                    tt_fill_(tt_narrow(r, 0, c->vocab_size, c->padded_vocab_size - c->vocab_size), 0);
                st = r ? tt_copy_(p, r) : tt_errcode();
                tt_scope_end();
            }
            tt_no_grad_end();
            if (st)
                return st;
        }
    return TT_OK;
}

/* ---------------------------------------------------------------- files */

static tt_status read_ints(FILE *f, int32_t *h, const char *path)
{
    if (fread(h, sizeof(int32_t), 256, f) != 256)
        return tt_error(TT_EINVAL, "%s: shorter than its 1024-byte header", path);
    return TT_OK;
}

/* Loads an llm.c checkpoint into a fresh state. */
tt_status gpt2_checkpoint_read(gpt2_state *s, const char *path)
{
    FILE *f = fopen(path, "rb");
    int32_t h[256];
    tt_status st = TT_OK;
    float *buf = NULL;
    if (!f)
        return tt_error(TT_EINVAL, "%s: cannot open the checkpoint", path);
    if ((st = read_ints(f, h, path)))
        goto out;
    if (h[0] != CKPT_MAGIC || (h[1] != 3 && h[1] != 1)) {
        st = tt_error(TT_EINVAL, "%s: not an llm.c float32 checkpoint (magic %d, version %d; "
                                 "expected %d, version 3)", path, h[0], h[1], CKPT_MAGIC);
        goto out;
    }
    s->cfg = (gpt2_config){.max_seq_len = h[2], .vocab_size = h[3], .num_layers = h[4],
                           .num_heads = h[5], .channels = h[6],
                           .padded_vocab_size = h[1] == 3 ? h[7] : h[3]};
    const gpt2_config *c = &s->cfg;
    if (c->num_layers < 1 || c->num_heads < 1 || c->channels % c->num_heads ||
        c->vocab_size < 1 || c->padded_vocab_size < c->vocab_size || c->max_seq_len < 1) {
        st = tt_error(TT_EINVAL, "%s: inconsistent header (layers %d, heads %d, channels %d, "
                                 "vocab %d padded to %d, max_seq_len %d)", path, c->num_layers,
                      c->num_heads, c->channels, c->vocab_size, c->padded_vocab_size,
                      c->max_seq_len);
        goto out;
    }
    if ((st = gpt2_state_alloc(s)))
        goto out;
    for (int kind = 0; kind < NUM_KINDS && !st; kind++)
        for (int l = 0; l < (per_layer(kind) ? c->num_layers : 1) && !st; l++) {
            tt_tensor *p = s->t[gpt2_param_index(c, kind, l)];
            size_t n = (size_t)tt_numel(p);
            float *nb = realloc(buf, n * sizeof(float));
            if (!nb) {
                st = tt_error(TT_ENOMEM, "gpt2: out of memory");
                break;
            }
            buf = nb;
            if (fread(buf, sizeof(float), n, f) != n) {
                st = tt_error(TT_EINVAL, "%s: ends before the parameters do", path);
                break;
            }
            tt_tensor *src = tt_from_data(tt_ndim(p), tt_sizes(p), TT_F32, buf);
            tt_no_grad_begin();
            st = src ? tt_copy_(p, src) : tt_errcode();
            tt_no_grad_end();
            tt_release(src);
        }
out:
    free(buf);
    fclose(f);
    return st;
}

/* Writes the parameters as an llm.c checkpoint (version 3). */
tt_status gpt2_checkpoint_write(const gpt2_state *s, const char *path)
{
    const gpt2_config *c = &s->cfg;
    int32_t h[256] = {CKPT_MAGIC, 3, c->max_seq_len, c->vocab_size, c->num_layers,
                      c->num_heads, c->channels, c->padded_vocab_size};
    FILE *f = fopen(path, "wb");
    tt_status st = TT_OK;
    if (!f)
        return tt_error(TT_EINVAL, "%s: cannot create the checkpoint", path);
    if (fwrite(h, sizeof h, 1, f) != 1)
        st = tt_error(TT_EINVAL, "%s: write failed", path);
    for (int i = 0; i < s->np && !st; i++) {
        size_t n = (size_t)tt_numel(s->t[i]);
        float *buf = malloc(n * sizeof(float));
        if (!buf)
            st = tt_error(TT_ENOMEM, "gpt2: out of memory");
        else if (!(st = tt_to_buffer(s->t[i], buf, n * sizeof(float))) &&
                 fwrite(buf, sizeof(float), n, f) != n)
            st = tt_error(TT_EINVAL, "%s: write failed", path);
        free(buf);
    }
    if (fclose(f) && !st)
        st = tt_error(TT_EINVAL, "%s: write failed", path);
    return st;
}


tt_status gpt2_tokens_read(gpt2_tokens *tf, const char *path)
{
    FILE *f = fopen(path, "rb");
    int32_t h[256];
    tt_status st;
    if (!f)
        return tt_error(TT_EINVAL, "%s: cannot open the token file", path);
    if (!(st = read_ints(f, h, path)) && (h[0] != TOKENS_MAGIC || h[1] != 1 || h[2] < 2))
        st = tt_error(TT_EINVAL, "%s: not an llm.c token file (magic %d, version %d, %d "
                                 "tokens; expected %d, version 1, at least 2 tokens)",
                      path, h[0], h[1], h[2], TOKENS_MAGIC);
    if (!st) {
        tf->n = h[2];
        tf->tok = malloc(sizeof(uint16_t) * (size_t)tf->n);
        if (!tf->tok)
            st = tt_error(TT_ENOMEM, "gpt2: out of memory");
        else if (fread(tf->tok, sizeof(uint16_t), (size_t)tf->n, f) != (size_t)tf->n)
            st = tt_error(TT_EINVAL, "%s: holds fewer tokens than its header says", path);
    }
    fclose(f);
    return st;
}

/* A byte-level corpus: every byte of a text file is a token (vocab 256),
 * written as an llm.c token file. */
tt_status gpt2_tokens_from_text(const char *text, const char *path)
{
    FILE *in = fopen(text, "rb"), *out = NULL;
    tt_status st = TT_OK;
    uint16_t *tok = NULL;
    int64_t n = 0, cap = 0;
    int ch;
    if (!in)
        return tt_error(TT_EINVAL, "%s: cannot open the text file", text);
    while ((ch = fgetc(in)) != EOF) {
        if (n == cap) {
            cap = cap ? 2 * cap : 65536;
            uint16_t *nt = realloc(tok, sizeof *tok * (size_t)cap);
            if (!nt) {
                st = tt_error(TT_ENOMEM, "gpt2: out of memory");
                goto out;
            }
            tok = nt;
        }
        tok[n++] = (uint16_t)ch;
    }
    int32_t h[256] = {TOKENS_MAGIC, 1, (int32_t)n};
    if (!(out = fopen(path, "wb")) || fwrite(h, sizeof h, 1, out) != 1 ||
        fwrite(tok, sizeof *tok, (size_t)n, out) != (size_t)n)
        st = tt_error(TT_EINVAL, "%s: cannot write the token file", path);
out:
    if (out && fclose(out) && !st)
        st = tt_error(TT_EINVAL, "%s: write failed", path);
    fclose(in);
    free(tok);
    return st;
}

/* Batch `i` as llm.c's DataLoader makes it: B*T+1 consecutive tokens from
 * position i*B*T (wrapping around), inputs then targets shifted by one. */
tt_status gpt2_next_batch(const gpt2_tokens *tf, int64_t i, int64_t B, int64_t T,
                            tt_tensor *tokens, tt_tensor *targets)
{
    int64_t n = B * T, windows = (tf->n - 1) / n;
    if (windows < 1)
        return tt_error(TT_EINVAL, "gpt2: %lld tokens are fewer than one batch of %lld + 1",
                        (long long)tf->n, (long long)n);
    int64_t start = (i % windows) * n;
    int64_t *x = tt_data(tokens), *y = tt_data(targets);
    if (!x || !y)
        return tt_errcode();
    for (int64_t j = 0; j < n; j++) {
        x[j] = tf->tok[start + j];
        y[j] = tf->tok[start + j + 1];
    }
    return TT_OK;
}

/* ------------------------------------------------------ compiled step */

/* The inputs of gpt2_train_step for state s: tokens, targets, pos, step, then
 * s's 3 np tensors. */
tt_tensor **gpt2_step_inputs(gpt2_state *s, tt_tensor *tokens, tt_tensor *targets,
                             tt_tensor *pos)
{
    tt_tensor **in = malloc(sizeof *in * (size_t)(GPT2_NFIXED + 3 * s->np));
    if (!in)
        return NULL;
    in[0] = tokens, in[1] = targets, in[2] = pos, in[3] = s->step;
    memcpy(in + GPT2_NFIXED, s->t, sizeof *in * (size_t)(3 * s->np));
    return in;
}

tt_compiled *gpt2_compile_step(gpt2_step_args *sa)
{
    int nin = GPT2_NFIXED + 3 * gpt2_num_params(&sa->cfg);
    return tt_compile(gpt2_train_step, nin, 1,
                      &(tt_trace_opts){.mode = TT_TRACE_SYMBOLIC, .fullgraph = true,
                                       .name = "gpt2_train_step", .ud = sa,
                                       /* a changed hyperparameter traces again */
                                       .ud_size = sizeof *sa,
                                       /* B and T vary; the parameters do not */
                                       .dynamic_inputs = GPT2_NFIXED});
}

tt_status gpt2_step_args_init(gpt2_step_args *a, const gpt2_config *c, double lr, double clip)
{
    *a = (gpt2_step_args){.cfg = *c, .clip = clip,
                          .adamw = {.lr = lr, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8,
                                    .weight_decay = 0.0}};
    if (c->padded_vocab_size == c->vocab_size)
        return TT_OK;
    int64_t Vp = c->padded_vocab_size;
    tt_status st;
    tt_scope_begin();
    a->vocab_mask = tt_keep(tt_zeros(1, &Vp, TT_F32));
    tt_tensor *pad = tt_narrow(a->vocab_mask, 0, c->vocab_size, Vp - c->vocab_size);
    st = pad ? tt_fill_(pad, -INFINITY) : tt_errcode();
    tt_scope_end();
    return st;
}

void gpt2_step_args_free(gpt2_step_args *a)
{
    a->vocab_mask = tt_release(a->vocab_mask);
}
