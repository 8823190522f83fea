/* Compiled plans' passes: elementwise fusion (ReLU's backward mask
 * included), GEMM epilogues (the SGD update folded into the weight
 * gradient's GEMM), results written in place, and the memory plan; each
 * switched off alone, the compiled training step still equals the eager
 * one. */
#include "mlp_step.h"
#include "tt_test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* Values within rtol of each other (relative, with an absolute floor). */
static void assert_close(const tt_tensor *a, const tt_tensor *b, double rtol, const char *what)
{
    ck_assert_msg(a && b && tt_numel(a) == tt_numel(b), "%s: shapes differ", what);
    double *va = tt_test_values(a), *vb = tt_test_values(b);
    for (int64_t i = 0; i < tt_numel(a); i++)
        ck_assert_msg(fabs(va[i] - vb[i]) <= rtol * fmax(fabs(vb[i]), 1e-3),
                      "%s: element %lld is %.9g, expected %.9g", what, (long long)i, va[i],
                      vb[i]);
    free(va);
    free(vb);
}

/* The bench's MLP step (tools/mlp_step.h), smaller: in = x [16, 20],
 * labels [16], then w1 [32, 20], b1, w2 [16, 32], b2, w3 [10, 16], b3. */
enum { NIN = 8 };

static tt_status mlp_step(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    return tt_mlp_sgd_step(in, 0.05, &out[0]);
}

static const int64_t shapes[NIN][2] = {{16, 20}, {16, 0}, {32, 20}, {32, 0},
                                       {16, 32}, {16, 0}, {10, 16}, {10, 0}};

/* Fresh inputs: the same values on every call (seeded). */
static void make_inputs(tt_tensor **in)
{
    int64_t labels[16];
    for (int i = 0; i < 16; i++)
        labels[i] = (i * 7) % 10;
    tt_manual_seed(77);
    for (int i = 0; i < NIN; i++) {
        int nd = shapes[i][1] ? 2 : 1;
        if (i == 1) {
            in[i] = NN(tt_from_data(1, shapes[i], TT_I64, labels));
            continue;
        }
        tt_tensor *r = NN(tt_randn(nd, shapes[i], TT_F32));
        in[i] = NN(tt_mul_scalar(r, 0.3));
        tt_release(r);
        if (i >= 2)
            OK(tt_set_requires_grad(in[i], true));
    }
}

static void release_all(tt_tensor **t, int n)
{
    for (int i = 0; i < n; i++)
        t[i] = tt_release(t[i]);
}

/* Runs `steps` compiled steps on ci and eager steps on ei (equal initial
 * values) and compares the losses and the parameters after each. */
static void train_both(tt_compiled *c, tt_tensor **ci, tt_tensor **ei, int steps,
                       const char *variant)
{
    for (int s = 0; s < steps; s++) {
        tt_tensor *lc = NULL, *le = NULL;
        OK(tt_compiled_call(c, ci, &lc));
        OK(mlp_step(ei, NIN, &le, 1, NULL));
        char what[96];
        snprintf(what, sizeof what, "%s: loss at step %d", variant, s);
        assert_close(lc, le, 1e-4, what);
        for (int p = 2; p < NIN; p++) {
            snprintf(what, sizeof what, "%s: parameter %d after step %d", variant, p, s);
            assert_close(ci[p], ei[p], 1e-4, what);
        }
        tt_release(lc);
        tt_release(le);
    }
}

static const unsigned variants[] = {
    0, TT_PASS_FUSE, TT_PASS_EPILOGUE, TT_PASS_INPLACE, TT_PASS_MEMPLAN,
    TT_PASS_FUSE | TT_PASS_EPILOGUE | TT_PASS_INPLACE | TT_PASS_MEMPLAN,
};

/* Every pass on, each off alone, all off: the compiled step equals eager,
 * and the stats say what each pass did. */
START_TEST(test_passes_equal_eager)
{
    unsigned off = variants[_i];
    tt_tensor *ci[NIN], *ei[NIN];
    make_inputs(ci);
    make_inputs(ei);
    tt_compiled *c = NN(tt_compile(mlp_step, NIN, 1, &(tt_trace_opts){
        .fullgraph = true, .passes_off = off}));
    char variant[32];
    snprintf(variant, sizeof variant, "passes_off %#x", off);
    train_both(c, ci, ei, 4, variant);
    tt_compile_stats st;
    tt_compiled_stats(c, &st);
    ck_assert_int_eq(st.plans, 1);
    ck_assert_int_eq(st.hits, 3);
    /* The three weight updates fold into their gradients' GEMMs. */
    ck_assert_int_eq(st.epilogues, off & TT_PASS_EPILOGUE ? 0 : 3);
    if (off & TT_PASS_FUSE) {
        ck_assert_int_eq(st.fused_steps, 0);
    } else {
        /* Two ReLU backward masks (gt, mul) fuse; with in place on, the
         * two forward ReLUs run over their linear's output too. */
        ck_assert_int_eq(st.fused_steps, off & TT_PASS_INPLACE ? 2 : 4);
        ck_assert_int_eq(st.fused_ops, off & TT_PASS_INPLACE ? 4 : 6);
    }
    if (off & TT_PASS_MEMPLAN)
        ck_assert_int_eq(st.planned_bytes, 0);
    else
        ck_assert_int_gt(st.planned_bytes, 0);
    tt_compiled_free(c);
    release_all(ci, NIN);
    release_all(ei, NIN);
}
END_TEST

/* A counting allocator: the hook calls a replay makes. */
static int64_t hook_allocs;

static void *counting_alloc(size_t size, size_t align, void *ud)
{
    (void)ud;
    hook_allocs++;
    void *p = NULL;
    return posix_memalign(&p, align < sizeof(void *) ? sizeof(void *) : align,
                          size ? size : 1) == 0 ? p : NULL;
}

static void counting_free(void *p, void *ud)
{
    (void)ud;
    free(p);
}

/* After the first call (which records) and one replay (which warms the
 * small-object caches up), a replayed step asks the allocator for
 * nothing, and the plan's block keeps its size. Under AddressSanitizer the
 * library's caches are bypassed (runtime/alloc.c), so every tensor struct
 * is an allocator call there: only the block's size is checked. */
#if defined(__SANITIZE_ADDRESS__)
#define CACHES 0
#else
#define CACHES 1
#endif
START_TEST(test_replay_makes_no_allocator_calls)
{
    tt_set_allocator(&(tt_allocator){counting_alloc, counting_free, NULL});
    tt_tensor *in[NIN];
    make_inputs(in);
    tt_compiled *c = NN(tt_compile(mlp_step, NIN, 1, &(tt_trace_opts){.fullgraph = true}));
    int64_t bytes = -1;
    for (int k = 0; k < 4; k++) {
        int64_t before = hook_allocs;
        tt_tensor *loss = NULL;
        OK(tt_compiled_call(c, in, &loss));
        tt_release(loss);
        tt_compile_stats st;
        tt_compiled_stats(c, &st);
        if (k >= 2) {
            ck_assert_msg(!CACHES || hook_allocs == before, "replay %d made %lld allocator calls", k,
                          (long long)(hook_allocs - before));
            ck_assert_int_eq(st.planned_bytes, bytes);
        }
        bytes = st.planned_bytes;
    }
    ck_assert_int_gt(bytes, 0);
    tt_compiled_free(c);
    release_all(in, NIN);
    tt_set_allocator(NULL);
}
END_TEST

/* relu(x * 2 + 1) @ w, summed: intermediates whose sizes follow x's rows. */
static tt_status rows_model(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_scope_begin();
    tt_tensor *h = tt_relu(tt_add_scalar(tt_mul_scalar(in[0], 2), 1));
    out[0] = tt_keep(tt_sum_all(tt_matmul(h, in[1])));
    tt_scope_end();
    return out[0] ? TT_OK : tt_errcode();
}

/* Released tensor structs wait in a per-thread quarantine (16 of them,
 * runtime/alloc.c) before their memory serves new tensors, and switching
 * allocators empties it: fill it, as a running program has, so the counts
 * below see the steady state rather than its first 64 releases. */
static void warm_quarantine(void)
{
    for (int i = 0; i < 200; i++)
        tt_release(tt_empty(TT_SHAPE(1), TT_F32));
}

/* A symbolic plan's one memory plan serves every binding of its symbols.
 * More rows than planned for: that call takes the allocator for what
 * grew (0 planned bytes after it) and the next plans again; from then on,
 * 200 rows and every smaller binding replay with no allocator call and
 * the same block (the first replay after a plan warms the small-object
 * caches, as in test_replay_makes_no_allocator_calls). Every call equals
 * eager. */
START_TEST(test_symbolic_plan_any_binding)
{
    tt_set_allocator(&(tt_allocator){counting_alloc, counting_free, NULL});
    warm_quarantine();
    tt_tensor *w = NN(tt_randn(TT_SHAPE(16, 8), TT_F32));
    tt_compiled *c = NN(tt_compile(rows_model, 2, 1,
                                   &(tt_trace_opts){.fullgraph = true,
                                                    .mode = TT_TRACE_SYMBOLIC}));
    static const int64_t rows[] = {64, 64, 64, 200, 200, 200, 200, 64, 30, 90, 120, 200, 2};
    int64_t bytes_64 = 0, bytes_200 = 0;
    for (int k = 0; k < TT_TABLE_LEN(rows); k++) {
        tt_tensor *x = NN(tt_randn(TT_SHAPE(rows[k], 16), TT_F32));
        tt_tensor *in[2] = {x, w}, *got = NULL, *want = NULL;
        int64_t before = hook_allocs;
        OK(tt_compiled_call(c, in, &got));
        int64_t calls = hook_allocs - before;
        OK(rows_model(in, 2, &want, 1, NULL));
        assert_close(got, want, 1e-5, "symbolic plan, any binding");
        tt_compile_stats st;
        tt_compiled_stats(c, &st);
        ck_assert_int_eq(st.plans, 1);
        if (k == 3) /* outgrown: planned again on the next call */
            ck_assert_int_eq(st.planned_bytes, 0);
        else
            ck_assert_int_gt(st.planned_bytes, 0);
        if (k == 2)
            bytes_64 = st.planned_bytes;
        if (k == 5)
            bytes_200 = st.planned_bytes;
        if (k > 5)
            ck_assert_int_eq(st.planned_bytes, bytes_200);
        if (k == 2 || k >= 6)
            ck_assert_msg(!CACHES || calls == 0, "call %d (%lld rows) made %lld allocator calls",
                          k, (long long)rows[k], (long long)calls);
        tt_release(got);
        tt_release(want);
        tt_release(x);
    }
    ck_assert_int_gt(bytes_200, bytes_64);
    tt_compiled_free(c);
    tt_release(w);
    tt_set_allocator(NULL);
}
END_TEST

/* A size that grows by one every call (a decode step's position): the
 * plan is made again only when a buffer outgrows its room, which doubles
 * each time, so 300 calls plan a handful of times, and every call equals
 * eager. */
START_TEST(test_symbolic_plan_growing_binding)
{
    tt_tensor *w = NN(tt_randn(TT_SHAPE(16, 8), TT_F32));
    tt_compiled *c = NN(tt_compile(rows_model, 2, 1,
                                   &(tt_trace_opts){.fullgraph = true,
                                                    .mode = TT_TRACE_SYMBOLIC}));
    int replans = 0;
    for (int64_t r = 2; r < 300; r++) {
        tt_tensor *x = NN(tt_randn(TT_SHAPE(r, 16), TT_F32));
        tt_tensor *in[2] = {x, w}, *got = NULL, *want = NULL;
        OK(tt_compiled_call(c, in, &got));
        OK(rows_model(in, 2, &want, 1, NULL));
        assert_close(got, want, 1e-5, "growing binding");
        tt_compile_stats st;
        tt_compiled_stats(c, &st);
        replans += st.planned_bytes == 0;
        tt_release(got);
        tt_release(want);
        tt_release(x);
    }
    ck_assert_msg(replans >= 1 && replans <= 10, "planned again %d times", replans);
    tt_compiled_free(c);
    tt_release(w);
}
END_TEST

/* Inputs sharing memory (x and b1 are two parts of one buffer) take the
 * plan's safe path, the graph's own ops, and still equal eager. */
START_TEST(test_aliased_inputs_take_the_safe_path)
{
    tt_tensor *ci[NIN], *ei[NIN];
    make_inputs(ci);
    make_inputs(ei);
    tt_compiled *c = NN(tt_compile(mlp_step, NIN, 1, &(tt_trace_opts){.fullgraph = true}));
    tt_tensor *loss = NULL;
    OK(tt_compiled_call(c, ci, &loss)); /* traced with separate inputs */
    tt_release(loss);
    OK(mlp_step(ei, NIN, &loss, 1, NULL));
    tt_release(loss);
    /* One buffer holding x, then b1. */
    tt_tensor *flat = NN(tt_empty(TT_SHAPE(16 * 20 + 32), TT_F32));
    tt_tensor *xpart = NN(tt_narrow(flat, 0, 0, 16 * 20)), *bpart = NN(tt_narrow(flat, 0, 320, 32));
    tt_tensor *x = NN(tt_view(xpart, TT_SHAPE(16, 20)));
    tt_no_grad_begin();
    OK(tt_copy_(x, ci[0]));
    OK(tt_copy_(bpart, ci[3]));
    tt_no_grad_end();
    OK(tt_set_requires_grad(bpart, true));
    tt_release(ci[0]);
    tt_release(ci[3]);
    ci[0] = x;
    ci[3] = bpart;
    ck_assert(tt_same_storage(ci[0], ci[3]));
    train_both(c, ci, ei, 3, "aliased inputs");
    tt_compile_stats st;
    tt_compiled_stats(c, &st);
    ck_assert_int_eq(st.plans, 1);
    tt_release(flat);
    tt_release(xpart);
    tt_compiled_free(c);
    release_all(ci, NIN);
    release_all(ei, NIN);
}
END_TEST

/* ------------------------------------------- a run that leaves the record */

static tt_tensor *stash;
static int quirk_calls;

/* mylib::quirk(x) = 2x. On its second call it keeps its scratch tensor
 * (a block of the memory plan on a replay) past the end of the run, which
 * the recorded first call did not: the plan must give that block up to
 * the tensor and stop planning, not reuse it under it. */
static tt_status quirk_kernel(tt_frame *f)
{
    tt_tensor *x;
    tt_status st = tt_arg_tensor(f, 0, &x);
    if (st)
        return st;
    tt_tensor *scratch = tt_zeros(TT_SHAPE(64), TT_F32);
    if (!scratch)
        return tt_errcode();
    if (++quirk_calls == 2)
        stash = scratch;
    else
        tt_release(scratch);
    return tt_return(f, 0, tt_mul_scalar(x, 2.0));
}

static tt_status quirk_fake(tt_frame *f)
{
    tt_tensor *x;
    tt_status st = tt_arg_tensor(f, 0, &x);
    return st ? st : tt_return(f, 0, tt_empty_like(x));
}

static tt_status quirk_fn(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    const tt_op *op = ud;
    tt_scope_begin();
    tt_tensor *y = tt_call(op, tt_v_tensor(tt_sin(in[0])));
    out[0] = y ? tt_keep(tt_exp(y)) : NULL;
    tt_scope_end();
    return out[0] ? TT_OK : tt_errcode();
}

START_TEST(test_run_keeping_a_planned_block)
{
    tt_library *lib = NN(tt_library_new(TT_LIB_DEF, "mylib"));
    const tt_op *op = NN(tt_custom_op_define(lib, &(tt_custom_op_spec){
        .schema = "mylib::quirk(Tensor x) -> Tensor", .kernel = quirk_kernel,
        .fake = quirk_fake}));
    quirk_calls = 0;
    tt_tensor *x = NN(tt_randn(TT_SHAPE(50), TT_F32));
    tt_compiled *c = NN(tt_compile(quirk_fn, 1, 1, &(tt_trace_opts){.ud = (void *)op}));
    for (int k = 0; k < 4; k++) {
        tt_tensor *y = NULL, *want = NULL;
        OK(tt_compiled_call(c, &x, &y));
        int calls = quirk_calls;
        quirk_calls = 5; /* the eager reference keeps nothing */
        OK(quirk_fn(&x, 1, &want, 1, (void *)op));
        quirk_calls = calls;
        char what[32];
        snprintf(what, sizeof what, "call %d", k);
        assert_close(y, want, 1e-6, what);
        tt_release(y);
        tt_release(want);
        tt_compile_stats st;
        tt_compiled_stats(c, &st);
        /* Planned after the first call; given up after the second. */
        if (k == 0)
            ck_assert_int_gt(st.planned_bytes, 0);
        if (k >= 1)
            ck_assert_int_eq(st.planned_bytes, 0);
    }
    /* The kept scratch lives in the given-up block and is still whole. */
    ck_assert_ptr_nonnull(stash);
    double *v = tt_test_values(stash);
    for (int i = 0; i < 64; i++)
        ck_assert_double_eq(v[i], 0);
    free(v);
    stash = tt_release(stash);
    tt_compiled_free(c);
    tt_release(x);
    tt_library_free(lib);
}
END_TEST

/* ------------------------------------------------- custom pointwise ops */

/* Custom ops tagged pointwise, with fake kernels: the fusion pass puts
 * them into an elementwise chain, running their kernels chunk by chunk. */
static int pw_ndim_seen, pw_calls;

/* f32 tensors only (as the test uses them), contiguous: a plain C loop. */
static tt_status pw_loop(tt_frame *f, tt_tensor *x, tt_tensor *y, double a, double b)
{
    if (tt_dtype_of(x) != TT_F32 || !tt_is_contiguous(x) || (y && !tt_is_contiguous(y)))
        return tt_frame_fail(f, TT_EINVAL, "expects contiguous f32 tensors");
    pw_ndim_seen = tt_ndim(x);
    pw_calls++;
    tt_tensor *r = tt_empty_like(x);
    float *o = r ? tt_data(r) : NULL;
    const float *px = tt_data(x), *py = y ? tt_data(y) : NULL;
    for (int64_t i = 0; o && i < tt_numel(x); i++)
        o[i] = py ? px[i] * py[i] + px[i] : (float)a * px[i] + (float)b;
    return r ? tt_return(f, 0, r) : tt_errcode();
}

/* pw::affine(Tensor x, float a, float b): a * x + b. */
static tt_status affine_kernel(tt_frame *f)
{
    tt_tensor *x;
    double a, b;
    tt_status st = tt_arg_tensor(f, 0, &x);
    if (!st)
        st = tt_arg_float(f, 1, &a);
    if (!st)
        st = tt_arg_float(f, 2, &b);
    return st ? st : pw_loop(f, x, NULL, a, b);
}

/* pw::mix(Tensor x, Tensor y): x * y + x. */
static tt_status mix_kernel(tt_frame *f)
{
    tt_tensor *x, *y;
    tt_status st = tt_arg_tensor(f, 0, &x);
    if (!st)
        st = tt_arg_tensor(f, 1, &y);
    return st ? st : pw_loop(f, x, y, 0, 0);
}

/* A kernel whose result's dtype differs from what its fake kernel says. */
static tt_status wrong_dtype_kernel(tt_frame *f)
{
    tt_tensor *x;
    tt_status st = tt_arg_tensor(f, 0, &x);
    return st ? st : tt_return(f, 0, tt_to_dtype(x, TT_F64));
}

static tt_status like_fake(tt_frame *f)
{
    tt_tensor *x;
    tt_status st = tt_arg_tensor(f, 0, &x);
    return st ? st : tt_return(f, 0, tt_empty_like(x));
}

static tt_op *pw_affine, *pw_mix, *pw_plain, *pw_bad;

static tt_library *define_pointwise(void)
{
    tt_library *lib = NN(tt_library_new(TT_LIB_DEF, "pw"));
    pw_affine = NN(tt_custom_op_define(lib, &(tt_custom_op_spec){
        .schema = "pw::affine(Tensor x, float a, float b) -> Tensor", .kernel = affine_kernel,
        .fake = like_fake, .tags = TT_TAG_POINTWISE}));
    pw_mix = NN(tt_custom_op_define(lib, &(tt_custom_op_spec){
        .schema = "pw::mix(Tensor x, Tensor y) -> Tensor", .kernel = mix_kernel,
        .fake = like_fake, .tags = TT_TAG_POINTWISE}));
    pw_plain = NN(tt_custom_op_define(lib, &(tt_custom_op_spec){
        .schema = "pw::plain(Tensor x, float a, float b) -> Tensor", .kernel = affine_kernel,
        .fake = like_fake}));
    pw_bad = NN(tt_custom_op_define(lib, &(tt_custom_op_spec){
        .schema = "pw::bad(Tensor x) -> Tensor", .kernel = wrong_dtype_kernel,
        .fake = like_fake, .tags = TT_TAG_POINTWISE}));
    return lib;
}

/* relu -> affine -> mix (with the second input) -> mul_scalar -> neg. */
static tt_status pointwise_chain(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    tt_op *mid = ud;
    tt_scope_begin();
    tt_tensor *a = tt_call(mid, tt_v_tensor(tt_relu(in[0])), tt_v_float(0.5), tt_v_float(1));
    tt_tensor *m = tt_call(pw_mix, tt_v_tensor(a), tt_v_tensor(in[1]));
    out[0] = tt_keep(tt_neg(tt_mul_scalar(m, 3)));
    tt_scope_end();
    return out[0] ? TT_OK : tt_errcode();
}

START_TEST(test_custom_pointwise_fuses)
{
    tt_library *lib = define_pointwise();
    /* Small; rows that split into chunks of different sizes; 1-D. */
    static const int64_t shapes[][2] = {{4, 3}, {300, 100}, {50000, 0}};
    for (int k = 0; k < 3; k++) {
        int nd = shapes[k][1] ? 2 : 1;
        tt_tensor *in[2] = {NN(tt_randn(nd, shapes[k], TT_F32)),
                            NN(tt_randn(nd, shapes[k], TT_F32))};
        tt_tensor *want, *got;
        OK(pointwise_chain(in, 2, &want, 1, pw_affine));
        for (int fuse = 0; fuse < 2; fuse++) {
            tt_compiled *c = NN(tt_compile(pointwise_chain, 2, 1, &(tt_trace_opts){
                .fullgraph = true, .ud = pw_affine, .passes_off = fuse ? 0 : TT_PASS_FUSE}));
            for (int call = 0; call < 2; call++) {
                pw_calls = 0;
                OK(tt_compiled_call(c, in, &got));
                assert_close(got, want, 1e-6, "a chain with custom pointwise ops");
                tt_release(got);
                /* Chunks are whole rows: the kernels see the inputs' rank. */
                ck_assert_int_eq(pw_ndim_seen, nd);
                if (fuse)
                    ck_assert_int_eq(pw_calls, k == 0 ? 2 : k == 1 ? 4 : 8);
            }
            tt_compile_stats st;
            tt_compiled_stats(c, &st);
            ck_assert_int_eq(st.fused_steps, fuse ? 1 : 0);
            ck_assert_int_eq(st.fused_ops, fuse ? 5 : 0);
            tt_compiled_free(c);
        }
        /* Without the tag the op stays a step of its own, and the chain
         * is cut there: mix, mul_scalar and neg fuse. */
        tt_compiled *c = NN(tt_compile(pointwise_chain, 2, 1, &(tt_trace_opts){
            .fullgraph = true, .ud = pw_plain}));
        OK(tt_compiled_call(c, in, &got));
        assert_close(got, want, 1e-6, "a chain cut by an untagged custom op");
        tt_release(got);
        tt_compile_stats st;
        tt_compiled_stats(c, &st);
        ck_assert_int_eq(st.fused_steps, 1);
        ck_assert_int_eq(st.fused_ops, 3);
        tt_compiled_free(c);
        tt_release(want);
        release_all(in, 2);
    }
    tt_library_free(lib);
}
END_TEST

/* (x * 2 + y) -> tanh -> * x: one fused chain of built-ins. */
static tt_status builtin_chain(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_scope_begin();
    tt_tensor *t = tt_tanh(tt_add(tt_mul_scalar(in[0], 2), in[1]));
    out[0] = tt_keep(tt_mul(t, in[0]));
    tt_scope_end();
    return out[0] ? TT_OK : tt_errcode();
}

/* A fused chain over more than the cache streams its output through a
 * staging block: bit for bit the eager result (whose ops stream too), f32
 * and f64, with a length that is no multiple of the block. */
START_TEST(test_fused_chain_streamed)
{
    int64_t n = tt_test_last_level_cache_bytes() / 12 + 4099;
    for (int d = 0; d < 2; d++) {
        tt_dtype dt = d ? TT_F64 : TT_F32;
        int64_t len = d ? n / 2 + 1 : n;
        tt_tensor *in[2] = {NN(tt_randn(TT_SHAPE(len), dt)), NN(tt_randn(TT_SHAPE(len), dt))};
        tt_tensor *want, *got;
        OK(builtin_chain(in, 2, &want, 1, NULL));
        tt_compiled *c = NN(tt_compile(builtin_chain, 2, 1, &(tt_trace_opts){.fullgraph = true}));
        OK(tt_compiled_call(c, in, &got));
        tt_test_assert_same_bits(got, want, tt_dtype_name(dt));
        tt_compile_stats st;
        tt_compiled_stats(c, &st);
        ck_assert_int_eq(st.fused_steps, 1);
        tt_release(got);
        tt_release(want);
        tt_compiled_free(c);
        release_all(in, 2);
    }
}
END_TEST

/* relu -> bad -> neg: bad's kernel returns f64 where its fake kernel said
 * f32. Eager calls do not check that; the fused chain must not copy f64
 * bytes as f32, so it fails naming the op. */
static tt_status bad_chain(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_scope_begin();
    out[0] = tt_keep(tt_neg(tt_call(pw_bad, tt_v_tensor(tt_relu(in[0])))));
    tt_scope_end();
    return out[0] ? TT_OK : tt_errcode();
}

START_TEST(test_custom_pointwise_wrong_output)
{
    tt_library *lib = define_pointwise();
    tt_tensor *x = NN(tt_randn(TT_SHAPE(4, 3), TT_F32)), *got = NULL;
    tt_compiled *c = NN(tt_compile(bad_chain, 1, 1, &(tt_trace_opts){.fullgraph = true}));
    ck_assert_int_eq(tt_compiled_call(c, &x, &got), TT_EOPCHECK);
    ck_assert_ptr_null(got);
    ck_assert_error(TT_EOPCHECK, "pw::bad: tagged pointwise and fused into an elementwise "
                                 "chain, its kernel returned f64[4, 3] for a chunk "
                                 "f32[4, 3]; a pointwise op returns its inputs' shape and "
                                 "the dtype its fake kernel gives (f32)");
    tt_compiled_free(c);
    tt_release(x);
    tt_library_free(lib);
}
END_TEST

static Suite *plan_suite(void)
{
    Suite *s = suite_create("plan");
    TCase *tc = tt_tcase("passes");
    tcase_add_loop_test(tc, test_passes_equal_eager, 0,
                        (int)(sizeof variants / sizeof variants[0]));
    tcase_add_test(tc, test_aliased_inputs_take_the_safe_path);
    tcase_add_test(tc, test_custom_pointwise_fuses);
    tcase_add_test(tc, test_fused_chain_streamed);
    tcase_add_test(tc, test_custom_pointwise_wrong_output);
    suite_add_tcase(s, tc);
    tc = tt_tcase("memory");
    tcase_add_test(tc, test_replay_makes_no_allocator_calls);
    tcase_add_test(tc, test_symbolic_plan_any_binding);
    tcase_add_test(tc, test_symbolic_plan_growing_binding);
    tcase_add_test(tc, test_run_keeping_a_planned_block);
    suite_add_tcase(s, tc);
    return s;
}

TT_TEST_MAIN(plan_suite)
