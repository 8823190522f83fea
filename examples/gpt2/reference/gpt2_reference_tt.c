/* The plain-C reference on examples/gpt2's state and batches (see
 * gpt2_reference_tt.h). Public API only. */
#include "gpt2_reference_tt.h"

#include <stdlib.h>
#include <string.h>

/* The reference's config of the same model as c. */
static gpt2ref_config ref_config(const gpt2_config *c)
{
    return (gpt2ref_config){.max_seq_len = c->max_seq_len, .vocab_size = c->vocab_size,
                            .padded_vocab_size = c->padded_vocab_size,
                            .num_layers = c->num_layers, .num_heads = c->num_heads,
                            .channels = c->channels};
}

gpt2ref *gpt2_reference_from_state(const gpt2_state *s, int B, int T)
{
    const gpt2_config *c = &s->cfg;
    gpt2ref_config rc = ref_config(c);
    if (!gpt2ref_config_ok(&rc, B, T)) {
        tt_error(TT_EINVAL, "gpt2_reference_from_state: batch %d x %d does not fit the model "
                            "(max_seq_len %d; layers %d, heads %d, channels %d, vocab %d "
                            "padded to %d)", B, T, c->max_seq_len, c->num_layers,
                 c->num_heads, c->channels, c->vocab_size, c->padded_vocab_size);
        return NULL;
    }
    gpt2ref *r = gpt2ref_new(&rc, B, T);
    if (!r) {
        tt_error(TT_ENOMEM, "gpt2_reference_from_state: out of memory");
        return NULL;
    }
    /* the state's tensors are in checkpoint order, as the reference's array */
    float *p = gpt2ref_params(r);
    for (int i = 0; i < s->np; i++) {
        size_t n = (size_t)tt_numel(s->t[i]);
        if (tt_to_buffer(s->t[i], p, n * sizeof(float))) {
            gpt2ref_free(r);
            return NULL;
        }
        p += n;
    }
    return r;
}

tt_status gpt2_reference_to_state(gpt2ref *r, gpt2_state *s)
{
    const float *p = gpt2ref_params(r);
    const gpt2ref_config *rc = gpt2ref_get_config(r), sc = ref_config(&s->cfg);
    tt_status st = TT_OK;
    if (memcmp(rc, &sc, sizeof sc))
        return tt_error(TT_EINVAL, "gpt2_reference_to_state: argument 's': a model of %d "
                                   "layers, %d heads, %d channels, vocab %d (padded %d), "
                                   "max_seq_len %d, expected the reference's %d, %d, %d, %d "
                                   "(%d), %d", sc.num_layers, sc.num_heads, sc.channels,
                        sc.vocab_size, sc.padded_vocab_size, sc.max_seq_len, rc->num_layers,
                        rc->num_heads, rc->channels, rc->vocab_size, rc->padded_vocab_size,
                        rc->max_seq_len);
    tt_no_grad_begin();
    for (int i = 0; !st && i < s->np; i++) {
        tt_tensor *src = tt_from_data(tt_ndim(s->t[i]), tt_sizes(s->t[i]), TT_F32, p);
        st = src ? tt_copy_(s->t[i], src) : tt_errcode();
        tt_release(src);
        p += tt_numel(s->t[i]);
    }
    tt_no_grad_end();
    return st;
}

/* Copies a batch tensor (i64 (B, T)) into ids, checking every id < V. */
static tt_status read_ids(const tt_tensor *t, const char *arg, int B, int T, int V, int64_t *ids)
{
    const char *fn = "gpt2_reference_step";
    if (tt_dtype_of(t) != TT_I64 || tt_ndim(t) != 2 || tt_dim_size(t, 0) != B ||
        tt_dim_size(t, 1) != T) {
        char d[64];
        return tt_error(TT_EINVAL, "%s: argument '%s': expected i64[%d, %d] (the reference's "
                                   "batch), got %s", fn, arg, B, T, tt_describe(t, d, sizeof d));
    }
    tt_status st = tt_to_buffer(t, ids, sizeof *ids * (size_t)B * T);
    for (int i = 0; !st && i < B * T; i++)
        if (ids[i] < 0 || ids[i] >= V)
            st = tt_error(TT_EINVAL, "%s: argument '%s': token %lld at %d is outside the "
                                     "vocabulary of %d", fn, arg, (long long)ids[i], i, V);
    return st;
}

tt_status gpt2_reference_step(gpt2ref *r, const tt_tensor *tokens, const tt_tensor *targets,
                              int step, const gpt2_step_args *a, double *loss)
{
    int B, T;
    gpt2ref_batch_shape(r, &B, &T);
    if (step < 1)
        return tt_error(TT_EINVAL, "gpt2_reference_step: argument 'step': expected an update "
                                   "number >= 1, got %d", step);
    if (a->clip > 0)
        return tt_error(TT_EINVAL, "gpt2_reference_step: gradient clipping (clip %g) is not "
                                   "part of the reference; expected clip 0", a->clip);
    int64_t *ids = malloc(2 * sizeof *ids * (size_t)B * T);
    if (!ids)
        return tt_error(TT_ENOMEM, "gpt2_reference_step: out of memory");
    tt_status st = read_ids(tokens, "tokens", B, T, a->cfg.vocab_size, ids);
    if (!st)
        st = read_ids(targets, "targets", B, T, a->cfg.vocab_size, ids + (size_t)B * T);
    if (!st) {
        gpt2ref_adamw_opts o = {.lr = (float)a->adamw.lr, .beta1 = (float)a->adamw.beta1,
                                .beta2 = (float)a->adamw.beta2, .eps = (float)a->adamw.eps,
                                .weight_decay = (float)a->adamw.weight_decay};
        *loss = gpt2ref_forward(r, ids, ids + (size_t)B * T);
        gpt2ref_backward(r);
        gpt2ref_adamw(r, &o, step);
    }
    free(ids);
    return st;
}
