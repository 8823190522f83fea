/* Llama-2 inference in C on tensortrace, in the style of llama2.c's run.c:
 * the same checkpoint and tokenizer files, the same forward and sampler,
 * written with ops (llama_model.c): the prompt is prefilled in one call,
 * then each token is decoded by one step traced once into one graph and
 * replayed compiled at every position, its KV cache an input written in
 * place, its position a scalar argument. docs/llama.md tells the whole
 * loop.
 *
 * Usage: llama [options]  (llama --help lists them)
 * Build: cc llama.c llama_model.c llama_reference.c \
 *           $(pkg-config --cflags --libs tensortrace tensortrace-render) -lm -o llama */
#include "llama_model.h"
#include "llama_reference.h"
#include "tt_render.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    const char *checkpoint, *tokenizer, *prompt, *write_random, *write_random_path,
        *write_tokenizer, *dot, *html;
    int steps, threads, dot_depth;
    bool dot_merge;
    double temperature, topp;
    uint64_t seed;
    bool eager, check, quiet;
} options;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: llama [options]\n"
            "  --checkpoint PATH     llama2.c checkpoint (model.bin)\n"
            "  --tokenizer PATH      llama2.c tokenizer.bin (vocab_size tokens)\n"
            "  --prompt STR          the prompt (default: empty, BOS alone)\n"
            "  --steps N             positions to run, prompt included, as llama2.c\n"
            "                        (default 256; 0 or more than seq_len: seq_len)\n"
            "  --temperature F       0: greedy (argmax); default 1.0\n"
            "  --topp F              top-p (nucleus) sampling in (0, 1); default 0.9\n"
            "  --seed N              the sampler's seed (default 42)\n"
            "  --threads N           threads (default: the library's)\n"
            "  --eager               prefill and decode eagerly instead of compiled\n"
            "  --write-random {15M,110M,tiny} PATH\n"
            "                        write a checkpoint of that config with random\n"
            "                        weights (seeded by --seed)\n"
            "  --write-tokenizer PATH write a byte-level tokenizer of the vocab_size of\n"
            "                        --write-random's config, else of --checkpoint's\n"
            "  --check               the test: tiny random checkpoints, prefill and\n"
            "                        decode eager and compiled against each other and\n"
            "                        a plain-C forward, one plan for positions >= 2,\n"
            "                        the loader's errors\n"
            "  -q, --quiet           no generated text, no progress bar (which shows\n"
            "                        when the text goes to a file, not the terminal)\n"
            "  --dot PATH            write the compiled decode step's graph as DOT, a\n"
            "                        cluster per layer (render: dot -Tsvg PATH)\n"
            "  --dot-depth N         with --dot: draw the scopes N deep as one box each\n"
            "                        (1: a box per layer)\n"
            "  --dot-merge           with --dot-depth: draw repeated layers as one box\n"
            "                        (\"layer0 ... layer11, x12\")\n"
            "  --html PATH           write the compiled decode step's graph as one HTML\n"
            "                        page: layers fold, nodes show their details\n");
}

static bool parse_args(int argc, char **argv, options *o)
{
    *o = (options){.prompt = "", .steps = 256, .temperature = 1.0, .topp = 0.9, .seed = 42};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            exit(0);
        } else if (!strcmp(a, "--eager")) {
            o->eager = true;
            continue;
        } else if (!strcmp(a, "--check")) {
            o->check = true;
            continue;
        } else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
            o->quiet = true;
            continue;
        } else if (!strcmp(a, "--dot-merge")) {
            o->dot_merge = true;
            continue;
        }
        if (!v) {
            fprintf(stderr, "llama: option %s needs a value (or is unknown)\n", a);
            return false;
        }
        i++;
        if (!strcmp(a, "--checkpoint"))
            o->checkpoint = v;
        else if (!strcmp(a, "--tokenizer"))
            o->tokenizer = v;
        else if (!strcmp(a, "--prompt"))
            o->prompt = v;
        else if (!strcmp(a, "--steps"))
            o->steps = atoi(v);
        else if (!strcmp(a, "--temperature"))
            o->temperature = atof(v);
        else if (!strcmp(a, "--topp"))
            o->topp = atof(v);
        else if (!strcmp(a, "--seed"))
            o->seed = (uint64_t)atoll(v);
        else if (!strcmp(a, "--threads"))
            o->threads = atoi(v);
        else if (!strcmp(a, "--dot"))
            o->dot = v;
        else if (!strcmp(a, "--dot-depth"))
            o->dot_depth = atoi(v);
        else if (!strcmp(a, "--html"))
            o->html = v;
        else if (!strcmp(a, "--write-tokenizer"))
            o->write_tokenizer = v;
        else if (!strcmp(a, "--write-random")) {
            o->write_random = v;
            if (i + 1 >= argc) {
                fprintf(stderr, "llama: --write-random needs a config and a path\n");
                return false;
            }
            o->write_random_path = argv[++i];
        } else {
            fprintf(stderr, "llama: unknown option %s\n", a);
            return false;
        }
    }
    if (o->steps < 0 || o->temperature < 0) {
        fprintf(stderr, "llama: --steps and --temperature must not be negative\n");
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

/* What a generation did: the tokens of every position (prompt included),
 * the logits that chose each token after the prompt, the times. */
typedef struct {
    int *tokens, n, nprompt;
    float *logits; /* [n - nprompt][vocab] */
    double prefill_ms, decode_ms;
    int decode_timed;
} run_record;

static void record_free(run_record *r)
{
    free(r->tokens), free(r->logits);
    *r = (run_record){0};
}

/* Prefill the prompt (compiled through cp, or eager), then decode up to
 * `steps` positions (compiled through c, or eager), sampling each next
 * token; prints the pieces
 * unless tok is NULL or quiet, with a progress bar on a terminal when they
 * go to a file. keep_bos: go on past a sampled BOS (the check), else stop
 * there as llama2.c does. */
static tt_status generate(const llama_model *m, const llama_tokenizer *tok, const int *prompt,
                          int nprompt, int steps, tt_compiled *cp, tt_compiled *c,
                          const options *o, bool keep_bos, run_record *rec)
{
    const llama_config *cfg = &m->cfg;
    llama_cache kv = {0};
    tt_status st = llama_cache_alloc(&kv, cfg);
    if (st)
        return st;
    if (steps <= 0 || steps > cfg->seq_len)
        steps = cfg->seq_len;
    if (nprompt >= steps)
        steps = nprompt + 1 <= cfg->seq_len ? nprompt + 1 : nprompt;
    *rec = (run_record){.nprompt = nprompt};
    rec->tokens = malloc(sizeof(int) * (size_t)steps);
    rec->logits = malloc(sizeof(float) * (size_t)cfg->vocab_size * (size_t)(steps - nprompt + 1));
    if (!rec->tokens || !rec->logits) {
        llama_cache_free(&kv);
        return tt_error(TT_ENOMEM, "llama: out of memory");
    }
    memcpy(rec->tokens, prompt, sizeof(int) * (size_t)nprompt);
    rec->n = nprompt;
    tt_manual_seed(o->seed);
    bool show = tok && !o->quiet;
    /* Text streaming on the terminal is progress enough. */
    tt_progress *bar = tt_progress_begin(
        "tokens", steps - nprompt, show && !isatty(STDOUT_FILENO) ? 0 : TT_PROGRESS_QUIET);
    if (!bar) {
        llama_cache_free(&kv);
        return tt_errcode();
    }
    for (int i = 1; show && i < nprompt; i++) { /* BOS is not printed */
        printf("%s", llama_decode_piece(tok, prompt[i - 1], prompt[i]));
        fflush(stdout);
    }
    double t0 = now_ms();
    tt_tensor *logits = llama_prefill(m, &kv, cp, prompt, nprompt);
    rec->prefill_ms = now_ms() - t0;
    if (!logits)
        st = tt_errcode();
    for (int pos = nprompt; !st && pos < steps; pos++) {
        int next;
        st = tt_to_buffer(logits, rec->logits + (size_t)(pos - nprompt) * cfg->vocab_size,
                          sizeof(float) * (size_t)cfg->vocab_size);
        if (!st)
            st = llama_sample(logits, o->temperature, o->topp, &next);
        logits = tt_release(logits);
        if (st)
            break;
        rec->tokens[rec->n++] = next;
        tt_progress_update(bar, pos - nprompt + 1, NULL);
        if (show) {
            const char *p = llama_decode_piece(tok, rec->tokens[pos - 1], next);
            /* as llama2.c: a piece of one byte only when printable or space */
            if (!p[0] || p[1] || isprint((unsigned char)p[0]) || isspace((unsigned char)p[0]))
                printf("%s", p);
            fflush(stdout);
        }
        if ((next == 1 && !keep_bos) || pos + 1 >= steps)
            break;
        t0 = now_ms();
        if (!(logits = llama_decode(m, &kv, c, next, pos)))
            st = tt_errcode();
        /* the first decode call traces and compiles: left out of the rate */
        if (pos > nprompt)
            rec->decode_ms += now_ms() - t0, rec->decode_timed++;
    }
    if (show)
        printf("\n");
    tt_progress_end(bar);
    tt_release(logits);
    llama_cache_free(&kv);
    return st;
}

/* ------------------------------------------------------------- --check */

static double max_abs_diff(const float *a, const float *b, int n)
{
    double d = 0;
    for (int i = 0; i < n; i++)
        if (!(fabs((double)a[i] - b[i]) <= d))
            d = fabs((double)a[i] - b[i]);
    return d;
}

/* Eager and compiled from one checkpoint, with this prompt and sampler:
 * the same tokens, logits to 1e-5, and both the plain-C forward's to 1e-4;
 * the compiled step traced once for the positions >= 2. */
static tt_status check_run(const char *ckpt, const llama_tokenizer *tok, const char *prompt,
                           const options *o)
{
    llama_model m = {0};
    tt_compiled *c = NULL, *cp = NULL;
    run_record re = {0}, rc = {0};
    llama_ref *ref = NULL;
    int *pt = malloc(sizeof(int) * (strlen(prompt) + 3)), np = 0;
    tt_status st = pt ? llama_checkpoint_read(&m, ckpt) : tt_error(TT_ENOMEM, "llama: out of memory");
    if (!st)
        st = llama_encode(tok, prompt, true, false, pt, &np);
    int steps = np + 12;
    if (!st)
        st = generate(&m, tok, pt, np, steps, NULL, NULL, o, true, &re);
    if (!st && (!(c = llama_compile_decode(&m.cfg)) || !(cp = llama_compile_prefill(&m.cfg))))
        st = tt_errcode();
    if (!st)
        st = generate(&m, tok, pt, np, steps, cp, c, o, true, &rc);
    const int V = m.cfg.vocab_size;
    double dmax = 0, rmax = 0;
    if (!st && rc.n != re.n)
        st = tt_error(TT_EINVAL, "check: compiled made %d tokens, eager %d", rc.n, re.n);
    for (int i = np; !st && i < re.n; i++) {
        double d = max_abs_diff(rc.logits + (size_t)(i - np) * V, re.logits + (size_t)(i - np) * V, V);
        dmax = d > dmax ? d : dmax;
        if (!(d <= 1e-5))
            st = tt_error(TT_EINVAL, "check: position %d: compiled logits differ from eager's by "
                                     "%.3g (> 1e-5)", i - 1, d);
        else if (rc.tokens[i] != re.tokens[i])
            st = tt_error(TT_EINVAL, "check: position %d: compiled sampled %d, eager %d", i,
                          rc.tokens[i], re.tokens[i]);
    }
    /* the plain-C forward, fed eager's tokens one position at a time */
    if (!st && !(ref = llama_ref_load(ckpt)))
        st = tt_error(TT_EINVAL, "check: the reference cannot read %s", ckpt);
    for (int pos = 0; !st && pos + 1 < re.n; pos++) {
        const float *lr = llama_ref_forward(ref, re.tokens[pos], pos);
        if (pos + 1 < np)
            continue; /* the prefill returns the last prompt position's logits */
        double d = max_abs_diff(lr, re.logits + (size_t)(pos + 1 - np) * V, V);
        rmax = d > rmax ? d : rmax;
        if (!(d <= 1e-4))
            st = tt_error(TT_EINVAL, "check: position %d: eager logits differ from the plain-C "
                                     "forward's by %.3g (> 1e-4)", pos, d);
    }
    /* one plan for every position from 2 on (0 and 1 are specialized) */
    tt_compile_stats cs = {0};
    if (c)
        tt_compiled_stats(c, &cs);
    int64_t specialized = np < 2 ? 2 - np : 0;
    if (!st && cs.misses != specialized + 1)
        st = tt_error(TT_EINVAL, "check: the decode step traced %lld times for positions %d.."
                                 "%d, expected %lld (last miss: %s)", (long long)cs.misses, np,
                      re.n - 2, (long long)specialized + 1, cs.last_miss);
    tt_compile_stats ps = {0};
    if (cp)
        tt_compiled_stats(cp, &ps);
    if (!st && (ps.calls != 1 || ps.misses != 1))
        st = tt_error(TT_EINVAL, "check: the compiled prefill: %lld calls, %lld traced; "
                                 "expected 1 and 1", (long long)ps.calls, (long long)ps.misses);
    /* each layer's nodes carry its scopes (layerN/attn, layerN/ffn) */
    const tt_graph *dg = c ? tt_compiled_graph(c, 0) : NULL;
    for (int l = 0; !st && dg && l < m.cfg.n_layers; l++)
        for (int part = 0; !st && part < 2; part++) {
            char want[32];
            snprintf(want, sizeof want, "layer%d/%s", l, part ? "ffn" : "attn");
            int n = 0;
            for (int k = 0; k < tt_graph_num_nodes(dg); k++)
                n += tt_graph_node_scope(dg, k) && !strcmp(tt_graph_node_scope(dg, k), want);
            if (!n)
                st = tt_error(TT_EINVAL, "check: no node of the decode graph is in scope %s",
                              want);
        }
    if (!st)
        printf("check %s, prompt \"%s\" (%d tokens), temperature %g, topp %g: %d tokens equal; "
               "compiled-eager logits %.2g, eager-reference %.2g; decode calls %lld, traced "
               "%lld (%lld specialized), replayed %lld\n", ckpt, prompt, np, o->temperature,
               o->topp, re.n - np, dmax, rmax, (long long)cs.calls, (long long)cs.misses,
               (long long)specialized, (long long)cs.hits);
    llama_ref_free(ref);
    record_free(&re), record_free(&rc);
    tt_compiled_free(c);
    tt_compiled_free(cp);
    llama_model_free(&m);
    free(pt);
    return st;
}

/* One compiled prefill serves prompts of any length from 2 on (the length
 * is a symbol): lengths 18, 5 and 40 trace once, each equal to eager's
 * logits, and eager's cache rows equal the compiled call's. */
static tt_status check_prefill_lengths(const char *ckpt)
{
    llama_model m = {0};
    llama_cache ke = {0}, kc = {0};
    tt_compiled *cp = NULL;
    tt_status st = llama_checkpoint_read(&m, ckpt);
    if (!st && !(st = llama_cache_alloc(&ke, &m.cfg)) && !(st = llama_cache_alloc(&kc, &m.cfg)) &&
        !(cp = llama_compile_prefill(&m.cfg)))
        st = tt_errcode();
    const int lens[3] = {18, 5, 40};
    int toks[40];
    for (int i = 0; i < 40; i++)
        toks[i] = (i * 37 + 11) % m.cfg.vocab_size;
    for (int k = 0; k < 3 && !st; k++) {
        tt_tensor *le = llama_prefill(&m, &ke, NULL, toks, lens[k]);
        tt_tensor *lc = le ? llama_prefill(&m, &kc, cp, toks, lens[k]) : NULL;
        tt_tensor *d[3] = {lc ? tt_sub(le, lc) : NULL, lc ? tt_sub(ke.k, kc.k) : NULL,
                           lc ? tt_sub(ke.v, kc.v) : NULL};
        for (int j = 0; j < 3 && !st; j++) {
            tt_scope_begin(); /* the temporaries of max |d| */
            tt_tensor *a = d[j] ? tt_amax(tt_abs(d[j]), 0, NULL, false) : NULL;
            double v = NAN;
            if (!a || (st = tt_item(a, &v)))
                st = tt_errcode() ? tt_errcode() : TT_EINVAL;
            else if (!(v <= 1e-5))
                st = tt_error(TT_EINVAL, "check: a compiled prefill of %d tokens differs from "
                                         "eager's by %.3g (%s)", lens[k], v,
                              j ? "the cache" : "the logits");
            tt_scope_end();
        }
        for (int j = 0; j < 3; j++)
            tt_release(d[j]);
        tt_release(le), tt_release(lc);
    }
    tt_compile_stats cs = {0};
    if (cp)
        tt_compiled_stats(cp, &cs);
    if (!st && cs.misses != 1)
        st = tt_error(TT_EINVAL, "check: the prefill traced %lld times for prompts of 18, 5 and "
                                 "40 tokens, expected once (last miss: %s)", (long long)cs.misses,
                      cs.last_miss);
    if (!st)
        printf("check: one compiled prefill for prompts of 18, 5 and 40 tokens: %lld calls, "
               "%lld traced, equal to eager (logits and cache)\n", (long long)cs.calls,
               (long long)cs.misses);
    tt_compiled_free(cp);
    llama_cache_free(&ke), llama_cache_free(&kc);
    llama_model_free(&m);
    return st;
}

/* The sampler on known probabilities [0.05, 0.5, 0.15, 0.3]: greedy is
 * token 1; top-p 0.7 keeps the nucleus {1, 3} (0.5, then 0.8 > 0.7) and
 * draws both; plain sampling draws all four. */
static tt_status check_sampler(void)
{
    const float p[4] = {0.05f, 0.5f, 0.15f, 0.3f};
    float lg[4];
    for (int i = 0; i < 4; i++)
        lg[i] = logf(p[i]);
    tt_tensor *logits = tt_from_data(1, (int64_t[]){4}, TT_F32, lg);
    tt_status st = logits ? TT_OK : tt_errcode();
    int tok = -1, seen[2][4] = {{0}};
    if (!st && !(st = llama_sample(logits, 0, 0.9, &tok)) && tok != 1)
        st = tt_error(TT_EINVAL, "check: greedy sampled %d, expected 1", tok);
    tt_manual_seed(3);
    for (int k = 0; k < 2 && !st; k++)
        for (int i = 0; i < 400 && !st; i++)
            if (!(st = llama_sample(logits, 1.0, k ? 1.0 : 0.7, &tok)) && (tok < 0 || tok > 3))
                st = tt_error(TT_EINVAL, "check: sampled %d of 4 tokens", tok);
            else if (!st)
                seen[k][tok]++;
    if (!st && (seen[0][0] || seen[0][2] || !seen[0][1] || !seen[0][3]))
        st = tt_error(TT_EINVAL, "check: top-p 0.7 drew %d, %d, %d, %d times tokens 0..3; "
                                 "expected only tokens 1 and 3", seen[0][0], seen[0][1],
                      seen[0][2], seen[0][3]);
    if (!st && (!seen[1][0] || !seen[1][1] || !seen[1][2] || !seen[1][3]))
        st = tt_error(TT_EINVAL, "check: plain sampling never drew one of the 4 tokens");
    if (!st)
        printf("check: sampler: greedy 1; top-p 0.7 drew tokens 1 and 3 %d and %d times of 400 "
               "(0.625 expected for 1); plain %d, %d, %d, %d\n", seen[0][1], seen[0][3],
               seen[1][0], seen[1][1], seen[1][2], seen[1][3]);
    tt_release(logits);
    return st;
}

/* A checkpoint that is not what its header says is a clear error naming
 * the file and what was expected. */
static tt_status check_errors(const char *good)
{
    FILE *f = fopen(good, "rb");
    if (!f)
        return tt_error(TT_EINVAL, "check: cannot read %s", good);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)len);
    bool ok = buf && fread(buf, 1, (size_t)len, f) == (size_t)len;
    fclose(f);
    tt_status st = ok ? TT_OK : tt_error(TT_EINVAL, "check: cannot read %s", good);
    const struct {
        const char *file;
        long len;
        int field, value;
        const char *expect;
    } cases[] = {
        {"llama_check_truncated.bin", len - 100, -1, 0, "truncated"},
        {"llama_check_short.bin", 10, -1, 0, "truncated: 10 bytes, expected at least the 28"},
        {"llama_check_heads.bin", len, 3, 3, "n_heads 3 is not a multiple of n_kv_heads 2"},
        {"llama_check_dim.bin", len, 0, 66, "dim 66 is not n_heads 4 times an even head size"},
        {"llama_check_zero.bin", len, 2, 0, "expected positive sizes"},
        {"llama_check_long.bin", len + 4, -1, 0, "too long"},
    };
    for (size_t i = 0; !st && i < sizeof cases / sizeof *cases; i++) {
        FILE *w = fopen(cases[i].file, "wb");
        if (!w) {
            st = tt_error(TT_EINVAL, "check: cannot create %s", cases[i].file);
            break;
        }
        char *copy = calloc(1, (size_t)cases[i].len + 4);
        memcpy(copy, buf, (size_t)(cases[i].len < len ? cases[i].len : len));
        if (cases[i].field >= 0)
            memcpy(copy + 4 * cases[i].field, &cases[i].value, 4);
        fwrite(copy, 1, (size_t)cases[i].len, w);
        fclose(w);
        free(copy);
        llama_model m;
        tt_status e = llama_checkpoint_read(&m, cases[i].file);
        if (!e) {
            llama_model_free(&m);
            st = tt_error(TT_EINVAL, "check: %s loaded", cases[i].file);
        } else if (!strstr(tt_errmsg(), cases[i].file) || !strstr(tt_errmsg(), cases[i].expect)) {
            st = tt_error(TT_EINVAL, "check: %s: the message \"%s\" does not name the file and "
                                     "\"%s\"", cases[i].file, tt_errmsg(), cases[i].expect);
        } else {
            printf("check: %s refused: %s\n", cases[i].file, tt_errmsg());
        }
    }
    free(buf);
    return st;
}

static tt_status check(const options *o)
{
    /* the tiny config with a separate classifier, then a shared one */
    llama_config cfg;
    llama_config_named("tiny", &cfg);
    const char *ckpts[2] = {"llama_check_tiny.bin", "llama_check_tiny_shared.bin"};
    tt_status st = llama_tokenizer_write_bytes("llama_check_tok.bin", cfg.vocab_size);
    for (int k = 0; k < 2 && !st; k++) {
        llama_model m;
        cfg.shared_classifier = k == 1;
        if (!(st = llama_model_random(&m, &cfg, o->seed + (uint64_t)k))) {
            st = llama_checkpoint_write(&m, ckpts[k]);
            llama_model_free(&m);
        }
    }
    llama_tokenizer tok = {0};
    if (!st)
        st = llama_tokenizer_read(&tok, "llama_check_tok.bin", cfg.vocab_size);
    /* the encoder and decoder give the prompt back */
    int ids[64], n = 0;
    const char *text = "Once upon a time, {}";
    if (!st)
        st = llama_encode(&tok, text, true, false, ids, &n);
    char back[128] = "";
    for (int i = 1; !st && i < n; i++)
        strncat(back, llama_decode_piece(&tok, ids[i - 1], ids[i]), sizeof back - strlen(back) - 1);
    if (!st && strcmp(back, text))
        st = tt_error(TT_EINVAL, "check: \"%s\" encoded and decoded is \"%s\"", text, back);
    options oc = *o;
    oc.quiet = true;
    /* greedy with a prompt; top-p from BOS alone (positions 1, 2, ...:
     * the specialized ones too); plain temperature sampling */
    const struct {
        double temperature, topp;
        const char *prompt;
    } runs[] = {{0, 0.9, "Once upon a time"}, {1.0, 0.9, ""}, {0.8, 1.0, "a"}};
    for (int k = 0; k < 2 && !st; k++)
        for (size_t r = 0; r < sizeof runs / sizeof *runs && !st; r++) {
            oc.temperature = runs[r].temperature, oc.topp = runs[r].topp;
            st = check_run(ckpts[k], &tok, runs[r].prompt, &oc);
        }
    if (!st)
        st = check_sampler();
    if (!st)
        st = check_prefill_lengths(ckpts[0]);
    if (!st)
        st = check_errors(ckpts[0]);
    llama_tokenizer_free(&tok);
    if (!st)
        printf("check: ok\n");
    return st;
}

int main(int argc, char **argv)
{
    options o;
    if (!parse_args(argc, argv, &o))
        return 2;
    if (o.threads > 0)
        tt_set_num_threads(o.threads);
    tt_status st = TT_OK;
    llama_model m = {0};
    llama_tokenizer tok = {0};
    tt_compiled *c = NULL, *cp = NULL;
    run_record rec = {0};
    int *pt = NULL;
    llama_config wc;
    if (o.check) {
        st = check(&o);
        goto out;
    }
    if (o.write_random) {
        if (!llama_config_named(o.write_random, &wc)) {
            fprintf(stderr, "llama: --write-random %s: expected 15M, 110M or tiny\n",
                    o.write_random);
            return 2;
        }
        if (!(st = llama_model_random(&m, &wc, o.seed))) {
            st = llama_checkpoint_write(&m, o.write_random_path);
            llama_model_free(&m);
        }
        if (st)
            goto out;
        printf("llama: wrote %s: the %s config with random weights (%lld parameters)\n",
               o.write_random_path, o.write_random, (long long)llama_num_params(&wc));
    }
    if (!o.checkpoint && !(o.write_tokenizer && o.write_random)) {
        fprintf(stderr, "llama: name a checkpoint (--checkpoint), or --write-random\n");
        return 2;
    }
    if (o.checkpoint && (st = llama_checkpoint_read(&m, o.checkpoint)))
        goto out;
    if (o.write_tokenizer) {
        int vocab = o.write_random ? wc.vocab_size : m.cfg.vocab_size;
        if ((st = llama_tokenizer_write_bytes(o.write_tokenizer, vocab)))
            goto out;
        printf("llama: wrote %s: a byte-level tokenizer of %d tokens\n", o.write_tokenizer,
               vocab);
    }
    if (!o.checkpoint)
        goto out;
    if (!o.tokenizer) {
        fprintf(stderr, "llama: name a tokenizer (--tokenizer)\n");
        st = TT_EINVAL;
        goto out;
    }
    if ((st = llama_tokenizer_read(&tok, o.tokenizer, m.cfg.vocab_size)))
        goto out;
    int np = 0;
    if (!(pt = malloc(sizeof(int) * (strlen(o.prompt) + 3)))) {
        st = tt_error(TT_ENOMEM, "llama: out of memory");
        goto out;
    }
    if ((st = llama_encode(&tok, o.prompt, true, false, pt, &np)))
        goto out;
    if (np >= m.cfg.seq_len) {
        st = tt_error(TT_EINVAL, "llama: the prompt is %d tokens, the model's seq_len %d", np,
                      m.cfg.seq_len);
        goto out;
    }
    printf("llama: dim %d, %d layers, %d heads (%d key/value), vocab %d, seq_len %d; %d "
           "threads, %s decode\n", m.cfg.dim, m.cfg.n_layers, m.cfg.n_heads, m.cfg.n_kv_heads,
           m.cfg.vocab_size, m.cfg.seq_len, tt_get_num_threads(),
           o.eager ? "eager prefill and" : "compiled prefill and");
    if (!o.eager && (!(c = llama_compile_decode(&m.cfg)) ||
                     !(cp = llama_compile_prefill(&m.cfg)))) {
        st = tt_errcode();
        goto out;
    }
    if ((st = generate(&m, &tok, pt, np, o.steps, cp, c, &o, false, &rec)))
        goto out;
    printf("llama: prefill %d tokens in %.1f ms (%.1f tok/s%s); decode %.1f tok/s (%d tokens, "
           "the first%s left out)\n", np, rec.prefill_ms, np / (rec.prefill_ms / 1e3),
           cp ? ", tracing and compiling included" : "",
           rec.decode_timed ? rec.decode_timed / (rec.decode_ms / 1e3) : 0.0, rec.decode_timed,
           c ? ", which compiles," : "");
    if (c) {
        tt_compile_stats cs;
        tt_compiled_stats(c, &cs);
        printf("llama: the decode step: %lld calls, %lld traced, %lld replayed\n",
               (long long)cs.calls, (long long)cs.misses, (long long)cs.hits);
    }
    if (o.dot) {
        const tt_graph *g = c ? tt_compiled_graph(c, 0) : NULL;
        FILE *f = g ? fopen(o.dot, "w") : NULL;
        if (!g)
            st = tt_error(TT_EINVAL, "llama: --dot needs a compiled decode step (not --eager, "
                                     "and at least two steps)");
        else if (!f)
            st = tt_error(TT_EINVAL, "llama: cannot write %s", o.dot);
        else {
            char *text = o.dot_merge ? tt_graph_to_dot_merged(g, o.dot_depth)
                                     : tt_graph_to_dot_collapsed(g, o.dot_depth);
            if (!text || fputs(text, f) < 0)
                st = text ? tt_error(TT_EINVAL, "llama: cannot write %s", o.dot) : tt_errcode();
            else
                printf("llama: wrote %s: the decode step, %d nodes\n", o.dot,
                       tt_graph_num_nodes(g));
            free(text);
        }
        if (f)
            fclose(f);
    }
    if (o.html && !st) {
        const tt_graph *g = c ? tt_compiled_graph(c, 0) : NULL;
        if (!g)
            st = tt_error(TT_EINVAL, "llama: --html needs a compiled decode step (not --eager, "
                                     "and at least two steps)");
        else if (!(st = tt_graph_write_html(g, o.html)))
            printf("llama: wrote %s: the decode step, %d nodes\n", o.html, tt_graph_num_nodes(g));
    }
out:
    if (st)
        fprintf(stderr, "llama: %s\n", tt_errmsg());
    record_free(&rec);
    free(pt);
    tt_compiled_free(c);
    tt_compiled_free(cp);
    llama_tokenizer_free(&tok);
    llama_model_free(&m);
    if (!st && tt_live_tensors() != 0) {
        fprintf(stderr, "llama: %lld tensors still alive at exit\n",
                (long long)tt_live_tensors());
        return 1;
    }
    return st ? 1 : 0;
}
