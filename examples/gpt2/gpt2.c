/* GPT-2 training in C on tensortrace, in the style of llm.c's train_gpt2.c:
 * the same model, the same checkpoint and token files, the same AdamW, but
 * written with ops instead of hand-written loops, so that the whole
 * training step (forward, loss, backward, AdamW) can be traced into one
 * graph and replayed compiled.
 *
 * Files (llm.c's formats, little-endian):
 *   checkpoint: 256 int32 header {20240326, 3, max_seq_len, vocab_size,
 *     num_layers, num_heads, channels, padded_vocab_size, 0...}, then the
 *     float32 parameters in llm.c's order: wte (Vp, C), wpe (maxT, C),
 *     ln1w (L, C), ln1b (L, C), qkvw (L, 3C, C), qkvb (L, 3C),
 *     attprojw (L, C, C), attprojb (L, C), ln2w (L, C), ln2b (L, C),
 *     fcw (L, 4C, C), fcb (L, 4C), fcprojw (L, C, 4C), fcprojb (L, C),
 *     lnfw (C), lnfb (C).
 *   tokens: 256 int32 header {20240520, 1, number of tokens, 0...}, then
 *     the tokens as uint16.
 *
 * Usage: gpt2 [options]  (gpt2 --help lists them)
 * Build: cc gpt2.c $(pkg-config --cflags --libs tensortrace) -lm -o gpt2 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tensortrace.h>
#include <time.h>

#define CKPT_MAGIC 20240326
#define TOKENS_MAGIC 20240520
#define NFIXED 4 /* train_step's inputs before the parameters */

/* ------------------------------------------------------------ the model */

typedef struct {
    int max_seq_len; /* maxT */
    int vocab_size;  /* V */
    int padded_vocab_size; /* Vp: wte's rows, V rounded up */
    int num_layers;  /* L */
    int num_heads;   /* NH */
    int channels;    /* C */
} gpt2_config;

/* The parameter tensors, kinds in llm.c's order; the per-layer kinds have
 * one tensor per layer (llm.c stores them stacked (L, ...); one tensor per
 * layer keeps each layer's gradient its own). */
enum {
    WTE, WPE, LN1W, LN1B, QKVW, QKVB, ATTPROJW, ATTPROJB, LN2W, LN2B,
    FCW, FCB, FCPROJW, FCPROJB, LNFW, LNFB, NUM_KINDS
};
static bool per_layer(int kind) { return kind >= LN1W && kind <= FCPROJB; }

/* Number of parameter tensors: 4 + 12 L. */
static int num_params(const gpt2_config *c) { return 4 + 12 * c->num_layers; }

/* Index of (kind, layer) in the parameter array, in llm.c's file order. */
static int param_index(const gpt2_config *c, int kind, int layer)
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
        p[param_index(c, LN1W, l)],    p[param_index(c, LN1B, l)],
        p[param_index(c, QKVW, l)],    p[param_index(c, QKVB, l)],
        p[param_index(c, ATTPROJW, l)], p[param_index(c, ATTPROJB, l)],
        p[param_index(c, LN2W, l)],    p[param_index(c, LN2B, l)],
        p[param_index(c, FCW, l)],     p[param_index(c, FCB, l)],
        p[param_index(c, FCPROJW, l)], p[param_index(c, FCPROJB, l)],
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

/* GELU, tanh approximation (GPT-2's):
 * 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). */
static tt_tensor *gelu(tt_tensor *x)
{
    tt_tensor *x3 = tt_mul(tt_mul(x, x), x);
    tt_tensor *inner = tt_mul_scalar(tt_add_scaled(x, x3, 0.044715), sqrt(2.0 / M_PI));
    return tt_mul(tt_mul_scalar(x, 0.5), tt_add_scalar(tt_tanh(inner), 1.0));
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
    tt_tensor *fch_gelu = gelu(fch);
    tt_tensor *fcproj = tt_linear(fch_gelu, p->fcprojw, p->fcprojb); /* (B, T, C) */
    return tt_add(residual2, fcproj);
}

/* The mean cross-entropy loss of the next-token predictions. tokens and
 * targets are i64 (B, T), pos the positions 0..T-1 (i64 (T)); p the
 * parameter array; vocab_mask (Vp) is 0 for the vocabulary and -inf for
 * wte's padding rows (NULL when there are none). */
static tt_tensor *gpt2_forward(const gpt2_config *c, tt_tensor **p, tt_tensor *tokens,
                               tt_tensor *targets, tt_tensor *pos, tt_tensor *vocab_mask)
{
    int64_t B = tt_dim_size(tokens, 0), T = tt_dim_size(tokens, 1), C = c->channels;
    tt_tensor *wte = p[param_index(c, WTE, 0)], *wpe = p[param_index(c, WPE, 0)];
    /* token embeddings (B, T, C) + position embeddings (T, C) */
    tt_tensor *x = tt_add(tt_embedding(wte, tokens), tt_embedding(wpe, pos));
    for (int l = 0; l < c->num_layers; l++) {
        gpt2_block blk = block_params(c, p, l);
        x = block_forward(c, &blk, x, B, T);
    }
    x = layernorm(x, p[param_index(c, LNFW, 0)], p[param_index(c, LNFB, 0)], C);
    /* The output projection shares wte (weight tying): logits (B, T, Vp).
     * The padding columns get -inf, so they take no probability, as in
     * llm.c (which leaves them out of its softmax). */
    tt_tensor *logits = tt_linear(x, wte, vocab_mask);
    return tt_cross_entropy(tt_flatten(logits, 0, 1), tt_flatten(targets, 0, 1));
}

/* ------------------------------------------------------- the train step */

typedef struct {
    gpt2_config cfg;
    tt_adamw_opts adamw;
    double clip; /* max gradient norm; 0: no clipping (llm.c's CPU step has none) */
    tt_tensor *vocab_mask; /* see gpt2_forward; a constant of the traced graph */
} step_args;

/* One training step: forward, loss, backward, AdamW. in: tokens (B, T),
 * targets (B, T), pos (T), step (0-dim, the update's number), then the parameters,
 * their first moments and their second moments (num_params each). out[0]:
 * the loss (a new reference). The parameters and moments are updated in
 * place and the gradients cleared. Only ops: it traces into one graph. */
static tt_status train_step(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    const step_args *a = ud;
    const gpt2_config *c = &a->cfg;
    int np = num_params(c);
    tt_tensor **params = in + NFIXED, **m = params + np, **v = m + np;
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

typedef struct {
    gpt2_config cfg;
    int np;
    tt_tensor **t; /* params, m, v: 3 np tensors */
    tt_tensor *step;
} gpt2_state;

static void state_free(gpt2_state *s)
{
    for (int i = 0; s->t && i < 3 * s->np; i++)
        tt_release(s->t[i]);
    free(s->t);
    tt_release(s->step);
    s->t = NULL, s->step = NULL;
}

/* Allocates zero parameters and moments for s->cfg. */
static tt_status state_alloc(gpt2_state *s)
{
    s->np = num_params(&s->cfg);
    s->t = calloc(3 * (size_t)s->np, sizeof *s->t);
    s->step = tt_zeros(0, NULL, TT_F32);
    if (!s->t || !s->step)
        return tt_error(TT_ENOMEM, "gpt2: out of memory");
    for (int kind = 0; kind < NUM_KINDS; kind++)
        for (int l = 0; l < (per_layer(kind) ? s->cfg.num_layers : 1); l++) {
            int64_t sh[2];
            int nd = param_shape(&s->cfg, kind, sh), i = param_index(&s->cfg, kind, l);
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
static tt_status state_init_random(gpt2_state *s, uint64_t seed)
{
    tt_manual_seed(seed);
    const gpt2_config *c = &s->cfg;
    for (int kind = 0; kind < NUM_KINDS; kind++)
        for (int l = 0; l < (per_layer(kind) ? c->num_layers : 1); l++) {
            tt_tensor *p = s->t[param_index(c, kind, l)];
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
static tt_status checkpoint_read(gpt2_state *s, const char *path)
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
    if ((st = state_alloc(s)))
        goto out;
    for (int kind = 0; kind < NUM_KINDS && !st; kind++)
        for (int l = 0; l < (per_layer(kind) ? c->num_layers : 1) && !st; l++) {
            tt_tensor *p = s->t[param_index(c, kind, l)];
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
static tt_status checkpoint_write(const gpt2_state *s, const char *path)
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

typedef struct {
    uint16_t *tok;
    int64_t n;
} token_file;

static tt_status tokens_read(token_file *tf, const char *path)
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
static tt_status tokens_from_text(const char *text, const char *path)
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
static tt_status next_batch(const token_file *tf, int64_t i, int64_t B, int64_t T,
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

/* ----------------------------------------------------------------- main */

typedef struct {
    const char *checkpoint, *tokens, *text, *write_checkpoint, *dot;
    int batch, seq_len, steps, threads, layers, heads, channels, max_seq_len, check;
    double lr, clip;
    bool compiled, quiet;
    uint64_t seed;
} options;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: gpt2 [options]\n"
            "  -c, --checkpoint FILE   llm.c checkpoint to start from (default: random init)\n"
            "  -i, --tokens FILE       llm.c token file to train on\n"
            "      --text FILE         or: a byte-level corpus (vocab 256) from a text file\n"
            "  -b, --batch N           batch size (default 4)\n"
            "  -t, --seq-len N         sequence length (default 64)\n"
            "  -n, --steps N           training steps (default 10)\n"
            "  -l, --lr X              AdamW learning rate (default 1e-4, as llm.c)\n"
            "  -j, --threads N         threads (default: the library's)\n"
            "      --compiled          trace the step once (fullgraph) and replay it\n"
            "      --clip X            clip the gradient norm at X (default 0: off)\n"
            "      --layers N --heads N --channels N --max-seq-len N\n"
            "                          config of a random init (default 2, 4, 64, 256)\n"
            "      --seed N            seed of the random init (default 1337)\n"
            "      --write-checkpoint FILE  write the parameters after training\n"
            "      --check N           run N steps eager and N compiled from the same\n"
            "                          start; fail unless the losses agree\n"
            "      --dot FILE          write the traced step's graph as DOT\n"
            "  -q, --quiet             no per-step lines\n");
}

static bool parse_args(int argc, char **argv, options *o)
{
    *o = (options){.batch = 4, .seq_len = 64, .steps = 10, .lr = 1e-4, .layers = 2,
                   .heads = 4, .channels = 64, .max_seq_len = 256, .seed = 1337};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
#define OPT(s, l) (!strcmp(a, s) || !strcmp(a, l))
        if (OPT("-h", "--help")) {
            usage(stdout);
            exit(0);
        } else if (OPT("--compiled", "--compiled")) {
            o->compiled = true;
            continue;
        } else if (OPT("-q", "--quiet")) {
            o->quiet = true;
            continue;
        }
        if (!v) {
            fprintf(stderr, "gpt2: option %s needs a value (or is unknown)\n", a);
            return false;
        }
        i++;
        if (OPT("-c", "--checkpoint"))
            o->checkpoint = v;
        else if (OPT("-i", "--tokens"))
            o->tokens = v;
        else if (OPT("--text", "--text"))
            o->text = v;
        else if (OPT("--write-checkpoint", "--write-checkpoint"))
            o->write_checkpoint = v;
        else if (OPT("--dot", "--dot"))
            o->dot = v;
        else if (OPT("-b", "--batch"))
            o->batch = atoi(v);
        else if (OPT("-t", "--seq-len"))
            o->seq_len = atoi(v);
        else if (OPT("-n", "--steps"))
            o->steps = atoi(v);
        else if (OPT("-j", "--threads"))
            o->threads = atoi(v);
        else if (OPT("-l", "--lr"))
            o->lr = atof(v);
        else if (OPT("--clip", "--clip"))
            o->clip = atof(v);
        else if (OPT("--layers", "--layers"))
            o->layers = atoi(v);
        else if (OPT("--heads", "--heads"))
            o->heads = atoi(v);
        else if (OPT("--channels", "--channels"))
            o->channels = atoi(v);
        else if (OPT("--max-seq-len", "--max-seq-len"))
            o->max_seq_len = atoi(v);
        else if (OPT("--check", "--check"))
            o->check = atoi(v);
        else if (OPT("--seed", "--seed"))
            o->seed = (uint64_t)atoll(v);
        else {
            fprintf(stderr, "gpt2: unknown option %s\n", a);
            return false;
        }
#undef OPT
    }
    if (o->batch < 1 || o->seq_len < 1 || o->steps < 0 || o->layers < 1 || o->heads < 1 ||
        o->channels % o->heads) {
        fprintf(stderr, "gpt2: batch, seq-len, layers, heads must be positive and channels a "
                        "multiple of heads\n");
        return false;
    }
    return true;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* The inputs of train_step for state s: tokens, targets, pos, step, then
 * s's 3 np tensors. */
static tt_tensor **step_inputs(gpt2_state *s, tt_tensor *tokens, tt_tensor *targets,
                               tt_tensor *pos)
{
    tt_tensor **in = malloc(sizeof *in * (size_t)(NFIXED + 3 * s->np));
    if (!in)
        return NULL;
    in[0] = tokens, in[1] = targets, in[2] = pos, in[3] = s->step;
    memcpy(in + NFIXED, s->t, sizeof *in * (size_t)(3 * s->np));
    return in;
}

/* Trains `steps` steps of state s, eager or compiled (c non-NULL), writing
 * each loss into losses[] (may be NULL) and one line per step unless quiet.
 * *ms gets the time of the steps after the first (the first traces). */
static tt_status train(gpt2_state *s, const token_file *tf, const options *o, tt_compiled *c,
                       step_args *sa, double *losses, double *ms)
{
    int64_t B = o->batch, T = o->seq_len;
    tt_tensor *tokens = tt_zeros(TT_SHAPE(B, T), TT_I64);
    tt_tensor *targets = tt_zeros(TT_SHAPE(B, T), TT_I64);
    tt_tensor *pos = tt_arange(0, (double)T, 1, TT_I64);
    tt_tensor **in = step_inputs(s, tokens, targets, pos);
    tt_status st = tokens && targets && pos && in ? TT_OK : tt_errcode();
    *ms = 0;
    for (int i = 0; i < o->steps && !st; i++) {
        double t0 = now_ms(), loss = NAN;
        tt_tensor *l = NULL;
        if ((st = next_batch(tf, i, B, T, tokens, targets)) || (st = tt_fill_(s->step, i + 1)))
            break;
        st = c ? tt_compiled_call(c, in, &l) : train_step(in, NFIXED + 3 * s->np, &l, 1, sa);
        if (!st)
            st = tt_item(l, &loss);
        tt_release(l);
        double dt = now_ms() - t0;
        if (i > 0)
            *ms += dt;
        if (losses)
            losses[i] = loss;
        if (!st && !o->quiet)
            printf("step %d: train loss %.6f (took %.3f ms)\n", i, loss, dt);
    }
    free(in);
    tt_release(pos);
    tt_release(tokens);
    tt_release(targets);
    return st;
}

/* Starts s from the checkpoint or from a random init of o's config. */
static tt_status state_start(gpt2_state *s, const options *o, int vocab)
{
    if (o->checkpoint)
        return checkpoint_read(s, o->checkpoint);
    s->cfg = (gpt2_config){.max_seq_len = o->max_seq_len, .vocab_size = vocab,
                           .padded_vocab_size = (vocab + 127) / 128 * 128,
                           .num_layers = o->layers, .num_heads = o->heads,
                           .channels = o->channels};
    tt_status st = state_alloc(s);
    return st ? st : state_init_random(s, o->seed);
}

static tt_compiled *compile_step(step_args *sa)
{
    int nin = NFIXED + 3 * num_params(&sa->cfg);
    return tt_compile(train_step, nin, 1,
                      &(tt_trace_opts){.mode = TT_TRACE_SYMBOLIC, .fullgraph = true,
                                       .name = "gpt2_train_step", .ud = sa,
                                       /* B and T vary; the parameters do not */
                                       .dynamic_inputs = NFIXED});
}

int main(int argc, char **argv)
{
    options o;
    token_file tf = {0};
    gpt2_state s = {0};
    tt_compiled *c = NULL;
    step_args sa = {0};
    double *losses = NULL, ms = 0;
    tt_status st = TT_OK;
    char tokpath[4096];
    if (!parse_args(argc, argv, &o))
        return 2;
    if (o.threads > 0)
        tt_set_num_threads(o.threads);
    const char *tokens = o.tokens;
    if (o.text) {
        snprintf(tokpath, sizeof tokpath, "%s.tokens.bin", o.write_checkpoint ? o.write_checkpoint : "gpt2");
        if ((st = tokens_from_text(o.text, tokpath)))
            goto out;
        tokens = tokpath;
    }
    if (!tokens) {
        fprintf(stderr, "gpt2: name a token file (--tokens) or a text file (--text)\n");
        return 2;
    }
    if ((st = tokens_read(&tf, tokens)) || (st = state_start(&s, &o, 256)))
        goto out;
    if (o.seq_len > s.cfg.max_seq_len) {
        st = tt_error(TT_EINVAL, "gpt2: --seq-len %d exceeds the model's max_seq_len %d",
                      o.seq_len, s.cfg.max_seq_len);
        goto out;
    }
    for (int64_t i = 0; i < tf.n; i++)
        if (tf.tok[i] >= s.cfg.vocab_size) {
            st = tt_error(TT_EINVAL, "gpt2: token %d at %lld is outside the vocabulary of %d",
                          tf.tok[i], (long long)i, s.cfg.vocab_size);
            goto out;
        }
    sa = (step_args){.cfg = s.cfg, .clip = o.clip,
                     .adamw = {.lr = o.lr, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8,
                               .weight_decay = 0.0}};
    if (s.cfg.padded_vocab_size > s.cfg.vocab_size) {
        int64_t Vp = s.cfg.padded_vocab_size;
        tt_scope_begin();
        sa.vocab_mask = tt_keep(tt_zeros(1, &Vp, TT_F32));
        tt_tensor *pad = tt_narrow(sa.vocab_mask, 0, s.cfg.vocab_size, Vp - s.cfg.vocab_size);
        st = pad ? tt_fill_(pad, -INFINITY) : tt_errcode();
        tt_scope_end();
        if (st)
            goto out;
    }
    printf("gpt2: %d layers, %d heads, %d channels, vocab %d (padded %d), max_seq_len %d; "
           "batch %d, seq_len %d, %d threads, %s\n", s.cfg.num_layers, s.cfg.num_heads,
           s.cfg.channels, s.cfg.vocab_size, s.cfg.padded_vocab_size, s.cfg.max_seq_len,
           o.batch, o.seq_len, tt_get_num_threads(), o.compiled ? "compiled" : "eager");
    if (o.check > 0) {
        /* Eager, then compiled from the same start: the losses agree. */
        double *le = calloc((size_t)o.check, sizeof *le), *lc = calloc((size_t)o.check, sizeof *lc);
        options oc = o;
        oc.steps = o.check;
        gpt2_state s2 = {0};
        if (!le || !lc)
            st = tt_error(TT_ENOMEM, "gpt2: out of memory");
        if (!st)
            st = train(&s, &tf, &oc, NULL, &sa, le, &ms);
        if (!st)
            st = state_start(&s2, &o, 256);
        if (!st && !(c = compile_step(&sa)))
            st = tt_errcode();
        if (!st)
            st = train(&s2, &tf, &oc, c, &sa, lc, &ms);
        /* Another batch and sequence size replays the same plan: B and T
         * are symbols in it. */
        oc.steps = 1, oc.batch = o.batch + 1, oc.seq_len = o.seq_len / 2 > 1 ? o.seq_len / 2 : 2;
        if (!st)
            st = train(&s2, &tf, &oc, c, &sa, NULL, &ms);
        tt_compile_stats cs;
        tt_compiled_stats(c, &cs);
        if (!st)
            printf("compiled: %lld calls, %lld traced, %lld replayed, %d plan(s) (the last "
                   "call at batch %d, seq_len %d)\n", (long long)cs.calls, (long long)cs.misses,
                   (long long)cs.hits, cs.plans, oc.batch, oc.seq_len);
        if (!st && cs.plans != 1)
            st = tt_error(TT_EINVAL, "gpt2: the step traced %d times (%s)", cs.plans, cs.last_miss);
        for (int i = 0; !st && i < o.check; i++) {
            double rel = fabs(le[i] - lc[i]) / fabs(le[i]);
            printf("check step %d: eager %.6f compiled %.6f (rel diff %.2e)\n", i, le[i], lc[i], rel);
            if (!(rel <= 1e-5))
                st = tt_error(TT_EINVAL, "gpt2: step %d: compiled loss %.9g differs from eager "
                                         "%.9g", i, lc[i], le[i]);
        }
        state_free(&s2);
        free(le);
        free(lc);
        goto out;
    }
    if (o.compiled && !(c = compile_step(&sa))) {
        st = tt_errcode();
        goto out;
    }
    if ((st = train(&s, &tf, &o, c, &sa, NULL, &ms)))
        goto out;
    if (o.steps > 1)
        printf("gpt2: %.1f ms per step, %.0f tokens/s (steps 1..%d)\n", ms / (o.steps - 1),
               (double)o.batch * o.seq_len * (o.steps - 1) / (ms / 1e3), o.steps - 1);
    if (c && o.dot) {
        FILE *f = fopen(o.dot, "w");
        if (!f || tt_graph_write_dot(tt_compiled_graph(c, 0), f))
            st = tt_errcode() ? tt_errcode() : tt_error(TT_EINVAL, "%s: cannot write", o.dot);
        if (f)
            fclose(f);
    }
    if (!st && o.write_checkpoint)
        st = checkpoint_write(&s, o.write_checkpoint);
out:
    if (st)
        fprintf(stderr, "gpt2: %s\n", tt_errmsg());
    tt_compiled_free(c);
    tt_release(sa.vocab_mask);
    state_free(&s);
    free(tf.tok);
    free(losses);
    return st ? 1 : tt_live_tensors() != 0;
}
