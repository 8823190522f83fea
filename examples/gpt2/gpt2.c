/* GPT-2 training in C on tensortrace, in the style of llm.c's train_gpt2.c:
 * the same model, the same checkpoint and token files, the same AdamW, but
 * written with ops (gpt2_model.c), so that the whole training step can be
 * traced into one graph and replayed compiled. The files' formats are in
 * the README ("GPT-2") and gpt2.h.
 *
 * Usage: gpt2 [options]  (gpt2 --help lists them)
 * Build: cc -Ofast -march=native -fopenmp -c reference/gpt2_reference.c
 *        cc gpt2.c gpt2_model.c reference/gpt2_reference_tt.c gpt2_reference.o -fopenmp \
 *           $(pkg-config --cflags --libs tensortrace tensortrace-render) -lm -o gpt2
 * (the plain-C reference alone gets -Ofast, as meson builds it). */
#include "gpt2.h"
#include "reference/gpt2_reference_tt.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ----------------------------------------------------------------- main */

typedef struct {
    const char *checkpoint, *tokens, *text, *write_checkpoint, *dot, *block_svg;
    int batch, seq_len, steps, threads, layers, heads, channels, max_seq_len, check;
    double lr, clip;
    bool compiled, quiet, reference;
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
            "      --reference         train with the plain-C reference instead (our own\n"
            "                          re-implementation of llm.c's algorithm, OpenMP\n"
            "                          threads); with --check, it joins the check\n"
            "      --clip X            clip the gradient norm at X (default 0: off)\n"
            "      --layers N --heads N --channels N --max-seq-len N\n"
            "                          config of a random init (default 2, 4, 64, 256)\n"
            "      --seed N            seed of the random init (default 1337)\n"
            "      --write-checkpoint FILE  write the parameters after training\n"
            "      --check N           run N steps eager and N compiled from the same\n"
            "                          start; fail unless the losses agree, and\n"
            "                          unless tt_explain_run sees no graph break\n"
            "      --dot FILE          write the compiled step's graph as DOT\n"
            "      --block-svg FILE    trace one transformer block (fake tensors) and\n"
            "                          render its graph to FILE (SVG; FILE.dot beside it)\n"
            "  -q, --quiet             no per-step lines, no progress bar\n");
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
        } else if (OPT("--reference", "--reference")) {
            o->reference = true;
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
        else if (OPT("--block-svg", "--block-svg"))
            o->block_svg = v;
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
    if (o->reference && (o->compiled || o->dot)) {
        fprintf(stderr, "gpt2: --reference trains with the plain-C reference; it does not "
                        "combine with --compiled or --dot\n");
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


/* Trains `steps` steps of state s, eager, compiled (c non-NULL) or with
 * the plain-C reference (r non-NULL, holding s's parameters), writing each
 * loss into losses[] (may be NULL) and, unless quiet, one line per step
 * or a progress bar on a terminal. *ms gets the time of the steps after
 * the first (the first traces). */
static tt_status train(gpt2_state *s, const gpt2_tokens *tf, const options *o, tt_compiled *c,
                       gpt2ref *r, gpt2_step_args *sa, double *losses, double *ms)
{
    int64_t B = o->batch, T = o->seq_len;
    tt_tensor *tokens = tt_zeros(TT_SHAPE(B, T), TT_I64);
    tt_tensor *targets = tt_zeros(TT_SHAPE(B, T), TT_I64);
    tt_tensor *pos = tt_arange(0, (double)T, 1, TT_I64);
    tt_tensor **in = gpt2_step_inputs(s, tokens, targets, pos);
    tt_progress *bar = tt_progress_begin(r ? "reference" : c ? "compiled" : "eager", o->steps,
                                         o->quiet ? TT_PROGRESS_QUIET : 0);
    /* The bar says what the step lines would on the same terminal; they
     * still go to a stdout that is a file. */
    bool lines = !o->quiet && (!tt_progress_visible(bar) || !isatty(STDOUT_FILENO));
    tt_status st = tokens && targets && pos && in && bar ? TT_OK : tt_errcode();
    *ms = 0;
    for (int i = 0; i < o->steps && !st; i++) {
        double t0 = now_ms(), loss = NAN;
        tt_tensor *l = NULL;
        if ((st = gpt2_next_batch(tf, i, B, T, tokens, targets)) || (st = tt_fill_(s->step, i + 1)))
            break;
        if (r)
            st = gpt2_reference_step(r, tokens, targets, i + 1, sa, &loss);
        else
            st = c ? tt_compiled_call(c, in, &l) : gpt2_train_step(in, GPT2_NFIXED + 3 * s->np, &l, 1, sa);
        if (!st && !r)
            st = tt_item(l, &loss);
        tt_release(l);
        double dt = now_ms() - t0;
        if (i > 0)
            *ms += dt;
        if (losses)
            losses[i] = loss;
        char extra[32];
        snprintf(extra, sizeof extra, "loss %.4f", loss);
        tt_progress_update(bar, i + 1, extra);
        if (!st && lines)
            printf("step %d: train loss %.6f (took %.3f ms)\n", i, loss, dt);
    }
    tt_progress_end(bar);
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
        return gpt2_checkpoint_read(s, o->checkpoint);
    s->cfg = (gpt2_config){.max_seq_len = o->max_seq_len, .vocab_size = vocab,
                           .padded_vocab_size = (vocab + 127) / 128 * 128,
                           .num_layers = o->layers, .num_heads = o->heads,
                           .channels = o->channels};
    tt_status st = gpt2_state_alloc(s);
    return st ? st : gpt2_state_init_random(s, o->seed);
}

/* Runs one step of s under tt_explain_run (as `tt explain` does): prints
 * its report and fails unless the step is one graph with no break. */
static tt_status explain_step(gpt2_state *s, const gpt2_tokens *tf, const options *o,
                              gpt2_step_args *sa)
{
    int64_t B = o->batch, T = o->seq_len;
    tt_tensor *tokens = tt_zeros(TT_SHAPE(B, T), TT_I64);
    tt_tensor *targets = tt_zeros(TT_SHAPE(B, T), TT_I64);
    tt_tensor *pos = tt_arange(0, (double)T, 1, TT_I64);
    tt_tensor **in = gpt2_step_inputs(s, tokens, targets, pos);
    tt_status st = tokens && targets && pos && in ? TT_OK : tt_errcode();
    if (!st && !(st = gpt2_next_batch(tf, 0, B, T, tokens, targets)) &&
        !(st = tt_fill_(s->step, 1))) {
        tt_explain *e = tt_explain_run(gpt2_train_step, GPT2_NFIXED + 3 * s->np, in,
                                       &(tt_trace_opts){.name = "gpt2_train_step", .ud = sa});
        char *text = e ? tt_explain_to_text(e) : NULL;
        if (!text)
            st = tt_errcode();
        else
            printf("%s", text);
        if (!st && tt_explain_break_count(e) != 0)
            st = tt_error(TT_EINVAL, "gpt2: the step breaks the graph");
        free(text);
        tt_explain_free(e);
    }
    free(in);
    tt_release(pos);
    tt_release(targets);
    tt_release(tokens);
    return st;
}

/* Traces one transformer block of o's config on fake tensors (batch 4,
 * sequence 64) and writes its graph as DOT and SVG. */
static tt_status block_picture(const options *o)
{
    gpt2_config c = {.max_seq_len = o->max_seq_len, .vocab_size = 256,
                     .padded_vocab_size = 256, .num_layers = o->layers,
                     .num_heads = o->heads, .channels = o->channels};
    tt_tensor *in[13];
    tt_status st = gpt2_block_inputs(&c, 4, 64, in);
    if (st)
        return st;
    tt_graph *g = tt_trace(gpt2_block_fn, 13, in,
                           &(tt_trace_opts){.mode = TT_TRACE_FAKE, .fullgraph = true,
                                            .name = "gpt2_block", .ud = &c});
    char dot[4096];
    snprintf(dot, sizeof dot, "%s.dot", o->block_svg);
    FILE *f = g ? fopen(dot, "w") : NULL;
    if (!g)
        st = tt_errcode();
    else if (!f)
        st = tt_error(TT_EINVAL, "%s: cannot create", dot);
    else if (!(st = tt_graph_write_dot(g, f)))
        st = tt_graph_render(g, "svg", o->block_svg);
    if (f)
        fclose(f);
    if (!st)
        printf("gpt2: one block, %d nodes: %s and %s\n", tt_graph_num_nodes(g), dot,
               o->block_svg);
    tt_graph_free(g);
    for (int i = 0; i < 13; i++)
        tt_release(in[i]);
    return st;
}

int main(int argc, char **argv)
{
    options o;
    gpt2_tokens tf = {0};
    gpt2_state s = {0};
    tt_compiled *c = NULL;
    gpt2ref *r = NULL;
    gpt2_step_args sa = {0};
    double *losses = NULL, ms = 0;
    tt_status st = TT_OK;
    char tokpath[4096];
    if (!parse_args(argc, argv, &o))
        return 2;
    if (o.threads > 0)
        tt_set_num_threads(o.threads);
    if (o.reference)
        gpt2ref_set_threads(o.threads);
    if (o.block_svg) {
        st = block_picture(&o);
        goto out;
    }
    const char *tokens = o.tokens;
    if (o.text) {
        snprintf(tokpath, sizeof tokpath, "%s.tokens.bin", o.write_checkpoint ? o.write_checkpoint : "gpt2");
        if ((st = gpt2_tokens_from_text(o.text, tokpath)))
            goto out;
        tokens = tokpath;
    }
    if (!tokens) {
        fprintf(stderr, "gpt2: name a token file (--tokens) or a text file (--text)\n");
        return 2;
    }
    if ((st = gpt2_tokens_read(&tf, tokens)) || (st = state_start(&s, &o, 256)))
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
    if ((st = gpt2_step_args_init(&sa, &s.cfg, o.lr, o.clip)))
        goto out;
    printf("gpt2: %d layers, %d heads, %d channels, vocab %d (padded %d), max_seq_len %d; "
           "batch %d, seq_len %d, %d threads, %s\n", s.cfg.num_layers, s.cfg.num_heads,
           s.cfg.channels, s.cfg.vocab_size, s.cfg.padded_vocab_size, s.cfg.max_seq_len,
           o.batch, o.seq_len, o.reference && !o.check ? gpt2ref_threads() : tt_get_num_threads(),
           o.reference && !o.check ? "reference (plain C)" : o.compiled ? "compiled" : "eager");
    if (o.check > 0) {
        /* Eager, then compiled from the same start: the losses agree. */
        double *le = calloc((size_t)o.check, sizeof *le), *lc = calloc((size_t)o.check, sizeof *lc);
        double *lr = calloc((size_t)o.check, sizeof *lr);
        options oc = o;
        oc.steps = o.check;
        gpt2_state s2 = {0}, s3 = {0};
        if (!le || !lc || !lr)
            st = tt_error(TT_ENOMEM, "gpt2: out of memory");
        if (!st)
            st = train(&s, &tf, &oc, NULL, NULL, &sa, le, &ms);
        if (!st)
            st = state_start(&s2, &o, 256);
        if (!st && !(c = gpt2_compile_step(&sa)))
            st = tt_errcode();
        if (!st)
            st = train(&s2, &tf, &oc, c, NULL, &sa, lc, &ms);
        /* --reference: the plain-C reference from the same start too */
        if (!st && o.reference && !(st = state_start(&s3, &o, 256)) &&
            !(r = gpt2_reference_from_state(&s3, o.batch, o.seq_len)))
            st = tt_errcode();
        if (!st && r)
            st = train(&s3, &tf, &oc, NULL, r, &sa, lr, &ms);
        /* Another batch and sequence size replays the same plan: B and T
         * are symbols in it. */
        oc.steps = 1, oc.batch = o.batch + 1, oc.seq_len = o.seq_len / 2 > 1 ? o.seq_len / 2 : 2;
        if (!st)
            st = train(&s2, &tf, &oc, c, NULL, &sa, NULL, &ms);
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
            printf("check step %d: eager %.6f compiled %.6f (rel diff %.2e)", i, le[i], lc[i], rel);
            if (r) /* issue 16's tolerance for the reference */
                printf(" reference %.6f (rel diff %.2e)", lr[i], fabs(lr[i] - le[i]) / fabs(le[i]));
            printf("\n");
            if (!(rel <= 1e-5))
                st = tt_error(TT_EINVAL, "gpt2: step %d: compiled loss %.9g differs from eager "
                                         "%.9g", i, lc[i], le[i]);
            else if (r && !(fabs(lr[i] - le[i]) <= 1e-4 * fabs(le[i])))
                st = tt_error(TT_EINVAL, "gpt2: step %d: the reference's loss %.9g differs from "
                                         "eager %.9g by more than 1e-4 relative", i, lr[i], le[i]);
        }
        if (!st) /* a data read or an op without a fake kernel would show here */
            st = explain_step(&s2, &tf, &o, &sa);
        gpt2_state_free(&s2);
        gpt2_state_free(&s3);
        free(le);
        free(lc);
        free(lr);
        goto out;
    }
    if (o.compiled && !(c = gpt2_compile_step(&sa))) {
        st = tt_errcode();
        goto out;
    }
    if (o.reference && !(r = gpt2_reference_from_state(&s, o.batch, o.seq_len))) {
        st = tt_errcode();
        goto out;
    }
    if ((st = train(&s, &tf, &o, c, r, &sa, NULL, &ms)))
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
    if (!st && r && o.write_checkpoint) /* the reference trained its own copy */
        st = gpt2_reference_to_state(r, &s);
    if (!st && o.write_checkpoint)
        st = gpt2_checkpoint_write(&s, o.write_checkpoint);
out:
    if (st)
        fprintf(stderr, "gpt2: %s\n", tt_errmsg());
    tt_compiled_free(c);
    gpt2ref_free(r);
    gpt2_step_args_free(&sa);
    gpt2_state_free(&s);
    free(tf.tok);
    free(losses);
    return st ? 1 : tt_live_tensors() != 0;
}
