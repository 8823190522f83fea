/* Llama-2 on tensortrace: the model as llama2.c's run.c computes it, its
 * checkpoint and tokenizer files, a KV cache, prefill, a decode step that
 * compiles once for every position, and the sampler (llama_model.c).
 * Used by the llama program (examples/llama/llama.c) and by the bench.
 * Public API only.
 *
 * Ownership as in tensortrace: functions returning tensors return new
 * references; arguments are borrowed; a struct owns its tensors. */
#ifndef LLAMA_MODEL_H
#define LLAMA_MODEL_H

#include <stdbool.h>
#include <stdint.h>
#include <tensortrace.h>

/* llama2.c's Config, the checkpoint's header (7 int32 in this order; a
 * negative vocab_size in the file means the classifier is not shared with
 * the token embedding). */
typedef struct {
    int dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len;
    bool shared_classifier;
} llama_config;

/* llama2.c's configurations: "15M" (dim 288, 6 layers, 6 heads, vocab
 * 32000, seq_len 256), "110M" (dim 768, 12 layers, 12 heads, seq_len 1024)
 * and "tiny" (dim 64, 2 layers, 4 heads, 2 key/value heads, vocab 300,
 * seq_len 64, unshared classifier: the test's). False for another name. */
bool llama_config_named(const char *name, llama_config *c);
/* An error naming `what` unless c is a usable config (positive sizes,
 * n_heads a multiple of n_kv_heads, dim a multiple of n_heads, an even
 * head size). */
tt_status llama_config_check(const llama_config *c, const char *what);
int64_t llama_num_params(const llama_config *c); /* the floats of the weights */

/* The weights, in the checkpoint's order, each layer's stacked as
 * llama2.c stores them ([n_layers, out, in] for the matrices, [out, in] as
 * its matmul reads them). */
enum {
    LLAMA_EMB,       /* [vocab, dim] */
    LLAMA_RMS_ATT,   /* [L, dim] */
    LLAMA_WQ,        /* [L, dim, dim] */
    LLAMA_WK,        /* [L, kv_dim, dim] */
    LLAMA_WV,        /* [L, kv_dim, dim] */
    LLAMA_WO,        /* [L, dim, dim] */
    LLAMA_RMS_FFN,   /* [L, dim] */
    LLAMA_W1,        /* [L, hidden, dim] */
    LLAMA_W2,        /* [L, dim, hidden] */
    LLAMA_W3,        /* [L, hidden, dim] */
    LLAMA_RMS_FINAL, /* [dim] */
    LLAMA_CLS,       /* [vocab, dim]: LLAMA_EMB again when shared */
    LLAMA_NWEIGHTS
};

typedef struct {
    llama_config cfg;
    tt_tensor *w[LLAMA_NWEIGHTS];
    /* The rotary tables, built once: [seq_len, head_size], row p holding
     * the angles of position p, each twice (pairs (2i, 2i+1), llama2.c's
     * form). */
    tt_tensor *cos, *sin;
} llama_model;

/* A model of config c with seeded random weights (normal * 0.02; the
 * RMSNorm weights 1 + normal * 0.02), made in memory. */
tt_status llama_model_random(llama_model *m, const llama_config *c, uint64_t seed);
/* llama2.c's checkpoint: read checks the header and the file's length
 * (an error naming the file and what was expected, never a crash). */
tt_status llama_checkpoint_read(llama_model *m, const char *path);
tt_status llama_checkpoint_write(const llama_model *m, const char *path);
void llama_model_free(llama_model *m);

/* The KV cache: keys and values of every layer, [L, 1, n_kv_heads,
 * seq_len, head_size], zeros at first; the steps write row pos. */
typedef struct {
    tt_tensor *k, *v;
} llama_cache;
tt_status llama_cache_alloc(llama_cache *kv, const llama_config *c);
void llama_cache_free(llama_cache *kv);

/* The inputs of a forward: tokens (i64 [T]), the cache's k and v, the
 * weights, cos, sin. llama_inputs fills in[LLAMA_NIN] (borrowed). */
enum { LLAMA_NIN = 3 + LLAMA_NWEIGHTS + 2 };
void llama_inputs(const llama_model *m, const llama_cache *kv, tt_tensor *tokens,
                  tt_tensor **in);

/* The forward of T tokens at positions pos .. pos+T-1, writing their keys
 * and values into the cache; returns the logits of the last token
 * ([vocab]). A prefill is pos 0 with causal attention, a decode step one
 * token (T 1, not causal: it sees every key up to pos). pos (a traced
 * decode step) and T (a traced prefill) may be size symbols. */
tt_tensor *llama_forward(const llama_config *c, tt_tensor **in, tt_size pos, bool causal);
/* Prefill: the prompt tokens[0..n-1] at positions 0..n-1 in one call,
 * compiled through c (from llama_compile_prefill: traced in fullgraph
 * symbolic mode with the prompt's length a symbol, so one plan serves
 * every length from 2 on) or eager (c NULL); the logits of the last. */
tt_compiled *llama_compile_prefill(const llama_config *c);
tt_tensor *llama_prefill(const llama_model *m, llama_cache *kv, tt_compiled *c,
                         const int *tokens, int n);
/* One decode step as a tt_fn (ud: the llama_config): in as llama_inputs
 * with one token, the position the compiled call's scalar argument 0 (a
 * dynamic int: tt_fn_arg_int), never state behind ud; out[0]: the logits. */
tt_status llama_decode_step(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud);
/* The step compiled: fullgraph, symbolic, argument 0 dynamic, so one plan
 * serves every position from 2 on. */
tt_compiled *llama_compile_decode(const llama_config *c);
/* One decode step of `token` at pos: compiled through c, or eager (c
 * NULL: llama_forward with a concrete pos). */
tt_tensor *llama_decode(const llama_model *m, llama_cache *kv, tt_compiled *c, int token,
                        int64_t pos);

/* llama2.c's sampler, built from ops on the logits [vocab]: temperature 0
 * is argmax; else softmax(logits / temperature), then multinomial (the
 * global generator: tt_manual_seed), restricted to the top-p nucleus when
 * 0 < topp < 1 (sort descending, cumsum, cut, renormalize). */
tt_status llama_sample(const tt_tensor *logits, double temperature, double topp, int *token);

/* llama2.c's tokenizer.bin: int32 max_token_length, then per token: f32
 * score, int32 len, len bytes. Tokens 0, 1, 2: <unk>, BOS, EOS. */
typedef struct {
    int vocab_size;
    int max_token_length;
    char **vocab;
    float *scores;
    int *sorted; /* token ids sorted by their string, for lookups */
    char byte_pieces[512];
} llama_tokenizer;
tt_status llama_tokenizer_read(llama_tokenizer *t, const char *path, int vocab_size);
void llama_tokenizer_free(llama_tokenizer *t);
/* run.c's encode: an optional BOS, a leading " " (the dummy prefix) when
 * text is not empty, a token per UTF-8 character (or its bytes' <0xXX>
 * tokens), then merges of the best-scored pair while one exists; EOS
 * optionally. tokens must hold strlen(text) + 3. */
tt_status llama_encode(const llama_tokenizer *t, const char *text, bool bos, bool eos,
                       int *tokens, int *n);
/* The text of token after prev: the leading space stripped after BOS,
 * "<0xXX>" as its byte. */
const char *llama_decode_piece(const llama_tokenizer *t, int prev, int token);
/* A byte-level tokenizer of vocab_size (>= 260) tokens for tests and the
 * demo: <unk>, BOS, EOS, the 256 byte tokens, the printable ASCII
 * characters, then pairs, triples and quadruples of " " and lowercase
 * letters (scored so that shorter, earlier merges win), then padding
 * tokens if any are still needed. */
tt_status llama_tokenizer_write_bytes(const char *path, int vocab_size);

#endif
