/* examples/gpt2 against its plain-C reference (examples/gpt2/reference, our
 * own re-implementation of llm.c's algorithm): on one random checkpoint
 * written with gpt2's writer and one token file, the first 10 losses of
 * tensortrace eager, compiled and the reference agree to 1e-4 relative
 * (issue 16's tolerance), and so do the first step's gradients; the
 * reference's connection to the gpt2 state reports each misuse by status
 * and text. */
#include "tt_test.h"

#include "gpt2.h"
#include "gpt2_reference_tt.h"

#include <math.h>
#include <unistd.h>

/* A tiny config with a padded vocabulary (64 -> 128), so the padding path
 * of the logits is exercised. */
enum { L_ = 2, NH_ = 2, C_ = 32, MAXT = 32, V_ = 64, VP = 128, B_ = 2, T_ = 16, STEPS = 10 };

static char dir[64], ckpt[128], toks[128];

/* Writes a random checkpoint and a token file of random ids < V into a
 * fresh directory (once per test process: each test forks). */
static void files_setup(void)
{
    tt_test_setup();
    snprintf(dir, sizeof dir, "/tmp/tt_test_gpt2_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(ckpt, sizeof ckpt, "%s/model.bin", dir);
    snprintf(toks, sizeof toks, "%s/tokens.bin", dir);
    gpt2_state s = {.cfg = {.max_seq_len = MAXT, .vocab_size = V_, .padded_vocab_size = VP,
                            .num_layers = L_, .num_heads = NH_, .channels = C_}};
    OK(gpt2_state_alloc(&s));
    OK(gpt2_state_init_random(&s, 42));
    OK(gpt2_checkpoint_write(&s, ckpt));
    gpt2_state_free(&s);
    /* a byte-level "text" whose bytes are ids < V, 12 batches long */
    char text[160];
    snprintf(text, sizeof text, "%s/text", dir);
    FILE *f = fopen(text, "wb");
    ck_assert_ptr_nonnull(f);
    uint64_t x = 88172645463325252ull;
    for (int i = 0; i < 12 * B_ * T_ + 1; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        fputc((int)(x % V_), f);
    }
    fclose(f);
    OK(gpt2_tokens_from_text(text, toks));
    unlink(text);
}

static void files_teardown(void)
{
    unlink(ckpt);
    unlink(toks);
    rmdir(dir);
    tt_test_teardown();
}

/* A training run from the checkpoint on the tokens, as gpt2 makes it. */
typedef struct {
    gpt2_state s;
    gpt2_tokens tf;
    gpt2_step_args sa;
    tt_tensor *tokens, *targets, *pos, **in;
} run;

static void run_start(run *r, double lr)
{
    memset(r, 0, sizeof *r);
    OK(gpt2_checkpoint_read(&r->s, ckpt));
    OK(gpt2_tokens_read(&r->tf, toks));
    OK(gpt2_step_args_init(&r->sa, &r->s.cfg, lr, 0));
    r->tokens = NN(tt_zeros(TT_SHAPE(B_, T_), TT_I64));
    r->targets = NN(tt_zeros(TT_SHAPE(B_, T_), TT_I64));
    r->pos = NN(tt_arange(0, T_, 1, TT_I64));
    r->in = NN(gpt2_step_inputs(&r->s, r->tokens, r->targets, r->pos));
}

/* Step i of a tensortrace run (batch i is the token file's window i; AdamW
 * update i + 1), eager or compiled (c); returns the loss. */
static double run_step(run *r, int i, tt_compiled *c)
{
    tt_tensor *l = NULL;
    double loss;
    OK(gpt2_next_batch(&r->tf, i, B_, T_, r->tokens, r->targets));
    OK(tt_fill_(r->s.step, i + 1));
    OK(c ? tt_compiled_call(c, r->in, &l)
         : gpt2_train_step(r->in, GPT2_NFIXED + 3 * r->s.np, &l, 1, &r->sa));
    OK(tt_item(l, &loss));
    tt_release(l);
    return loss;
}

static void run_end(run *r)
{
    free(r->in);
    tt_release(r->pos);
    tt_release(r->targets);
    tt_release(r->tokens);
    gpt2_step_args_free(&r->sa);
    gpt2_state_free(&r->s);
    free(r->tf.tok);
}

typedef enum { EAGER, COMPILED, REFERENCE } mode;

/* The first STEPS losses of a run at learning rate 1e-3. */
static void train(mode md, double *losses)
{
    run u;
    run_start(&u, 1e-3);
    tt_compiled *c = md == COMPILED ? NN(gpt2_compile_step(&u.sa)) : NULL;
    gpt2ref *r = md == REFERENCE ? NN(gpt2_reference_from_state(&u.s, B_, T_)) : NULL;
    for (int i = 0; i < STEPS; i++) {
        if (!r) {
            losses[i] = run_step(&u, i, c);
            continue;
        }
        OK(gpt2_next_batch(&u.tf, i, B_, T_, u.tokens, u.targets));
        OK(gpt2_reference_step(r, u.tokens, u.targets, i + 1, &u.sa, &losses[i]));
    }
    gpt2ref_free(r);
    tt_compiled_free(c);
    run_end(&u);
}

START_TEST(test_losses_agree)
{
    double le[STEPS], lc[STEPS], lr[STEPS], worst = 0;
    train(EAGER, le);
    train(COMPILED, lc);
    train(REFERENCE, lr);
    for (int i = 0; i < STEPS; i++) {
        double re = fabs(lr[i] - le[i]) / fabs(le[i]), rc = fabs(lr[i] - lc[i]) / fabs(lc[i]);
        ck_assert_msg(re <= 1e-4 && rc <= 1e-4, "step %d: reference %.9g, eager %.9g, compiled "
                      "%.9g", i, lr[i], le[i], lc[i]);
        worst = fmax(worst, fmax(re, rc));
    }
    /* the model learns: the last loss is below the first */
    ck_assert_double_lt(lr[STEPS - 1], lr[0]);
    printf("gpt2 reference: %d losses agree with eager and compiled, max rel diff %.2e\n",
           STEPS, worst);
}
END_TEST

/* The first step's gradients. tensortrace's are read from AdamW's first
 * moment: with beta1 = 0 (and lr = 0, so nothing else moves) it is the
 * gradient itself after one update. Each parameter tensor's gradient
 * agrees with the reference's to 1e-4 in norm (relative to its norm). */
START_TEST(test_first_step_gradients)
{
    run u;
    run_start(&u, 0);
    u.sa.adamw.beta1 = 0;
    gpt2_state *s = &u.s;
    gpt2ref *r = NN(gpt2_reference_from_state(s, B_, T_));
    double loss = run_step(&u, 0, NULL);

    int64_t *ids = tt_data(u.tokens), *next = tt_data(u.targets);
    double rloss = gpt2ref_forward(r, ids, next);
    gpt2ref_backward(r);
    ck_assert_double_eq_tol(rloss, loss, 1e-4 * loss);
    const float *g = gpt2ref_grads(r);
    double worst = 0;
    for (int i = 0; i < s->np; i++) {
        double *tg = tt_test_values(s->t[s->np + i]), diff = 0, norm = 0;
        int64_t n = tt_numel(s->t[i]);
        for (int64_t j = 0; j < n; j++) {
            diff += (g[j] - tg[j]) * (g[j] - tg[j]);
            norm += tg[j] * tg[j];
        }
        ck_assert_msg(norm > 0, "parameter %d: a zero gradient", i);
        ck_assert_msg(sqrt(diff) <= 1e-4 * sqrt(norm), "parameter %d: gradient differs by "
                      "%.3g of its norm", i, sqrt(diff / norm));
        worst = fmax(worst, sqrt(diff / norm));
        g += n;
        free(tg);
    }
    printf("gpt2 reference: first-step gradients of %d tensors agree, max rel diff (norm) "
           "%.2e\n", s->np, worst);
    gpt2ref_free(r);
    run_end(&u);
}
END_TEST

/* gpt2_reference_to_state gives the reference's parameters back to a
 * state: after a step, the state holds what the reference trained. */
START_TEST(test_reference_to_state)
{
    gpt2_state s = {0};
    gpt2_step_args sa;
    OK(gpt2_checkpoint_read(&s, ckpt));
    OK(gpt2_step_args_init(&sa, &s.cfg, 1e-2, 0));
    gpt2ref *r = NN(gpt2_reference_from_state(&s, B_, T_));
    tt_tensor *tokens = NN(tt_full(TT_SHAPE(B_, T_), 3, TT_I64));
    double loss;
    OK(gpt2_reference_step(r, tokens, tokens, 1, &sa, &loss));
    OK(gpt2_reference_to_state(r, &s));
    const float *p = gpt2ref_params(r);
    for (int i = 0; i < s.np; i++) {
        double *v = tt_test_values(s.t[i]);
        for (int64_t j = 0; j < tt_numel(s.t[i]); j++)
            ck_assert_msg(v[j] == p[j], "parameter %d element %lld", i, (long long)j);
        p += tt_numel(s.t[i]);
        free(v);
    }
    tt_release(tokens);
    gpt2ref_free(r);
    gpt2_step_args_free(&sa);
    gpt2_state_free(&s);
}
END_TEST

START_TEST(test_reference_errors)
{
    gpt2_state s = {0}, other = {.cfg = {.max_seq_len = MAXT, .vocab_size = V_,
                                         .padded_vocab_size = VP, .num_layers = 1,
                                         .num_heads = NH_, .channels = C_}};
    gpt2_step_args sa;
    double loss = 0;
    OK(gpt2_checkpoint_read(&s, ckpt));
    OK(gpt2_state_alloc(&other));
    OK(gpt2_step_args_init(&sa, &s.cfg, 1e-3, 0));
    ck_assert_ptr_null(gpt2_reference_from_state(&s, B_, MAXT + 1));
    ck_assert_error(TT_EINVAL, "gpt2_reference_from_state: batch 2 x 33 does not fit the "
                               "model (max_seq_len 32; layers 2, heads 2, channels 32, vocab "
                               "64 padded to 128)");
    gpt2ref *r = NN(gpt2_reference_from_state(&s, B_, T_));
    tt_tensor *ok = NN(tt_zeros(TT_SHAPE(B_, T_), TT_I64));
    tt_tensor *wide = NN(tt_zeros(TT_SHAPE(B_, T_ + 1), TT_I64));
    tt_tensor *f32 = NN(tt_zeros(TT_SHAPE(B_, T_), TT_F32));
    tt_tensor *big = NN(tt_full(TT_SHAPE(B_, T_), V_, TT_I64));

    struct {
        tt_tensor *tokens, *targets;
        int step;
        double clip;
        const char *msg;
    } bad[] = {
        {wide, ok, 1, 0, "gpt2_reference_step: argument 'tokens': expected i64[2, 16] (the "
                         "reference's batch), got i64[2, 17]"},
        {ok, f32, 1, 0, "gpt2_reference_step: argument 'targets': expected i64[2, 16] (the "
                        "reference's batch), got f32[2, 16]"},
        {ok, big, 1, 0, "gpt2_reference_step: argument 'targets': token 64 at 0 is outside "
                        "the vocabulary of 64"},
        {ok, ok, 0, 0, "gpt2_reference_step: argument 'step': expected an update number >= "
                       "1, got 0"},
        {ok, ok, 1, 1, "gpt2_reference_step: gradient clipping (clip 1) is not part of the "
                       "reference; expected clip 0"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sa.clip = bad[i].clip;
        ck_assert_int_eq(gpt2_reference_step(r, bad[i].tokens, bad[i].targets, bad[i].step,
                                             &sa, &loss), TT_EINVAL);
        ck_assert_error(TT_EINVAL, bad[i].msg);
    }
    ck_assert_double_eq(loss, 0); /* no step ran */
    ck_assert_int_eq(gpt2_reference_to_state(r, &other), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "gpt2_reference_to_state: argument 's': a model of 1 layers, 2 "
                               "heads, 32 channels, vocab 64 (padded 128), max_seq_len 32, "
                               "expected the reference's 2, 2, 32, 64 (128), 32");
    tt_release(big);
    tt_release(f32);
    tt_release(wide);
    tt_release(ok);
    gpt2ref_free(r);
    gpt2_step_args_free(&sa);
    gpt2_state_free(&other);
    gpt2_state_free(&s);
}
END_TEST

static Suite *gpt2_suite(void)
{
    Suite *s = suite_create("gpt2");
    TCase *tc = tt_tcase_with("reference", files_setup, files_teardown);
    tcase_add_test(tc, test_losses_agree);
    tcase_add_test(tc, test_first_step_gradients);
    tcase_add_test(tc, test_reference_to_state);
    tcase_add_test(tc, test_reference_errors);
    suite_add_tcase(s, tc);
    return s;
}

TT_TEST_MAIN(gpt2_suite)
