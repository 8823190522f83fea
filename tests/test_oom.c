/* Out of memory: representative sequences (runtime calls; the built-in ops
 * eager, on their fast and general paths) are each run once to
 * count its allocation requests, then once per request with that request
 * failing (tt_debug_fail_alloc). Each time, the call that made the request
 * must fail with TT_ENOMEM and "out of memory", no earlier call may have
 * swallowed the failure, the sequence stops there, and after its clean-up
 * nothing is alive. A counting allocator hook then shows that all memory
 * goes through tt_set_allocator and comes back. */
#include "tt_test.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define A(...) ((const int64_t[]){__VA_ARGS__})

/* ------------------------------------------------------------ sequence */

typedef struct {
    tt_tensor *held[128];
    int n;
    int64_t fail_at;     /* absolute request number that fails, 0: none */
    const char *failed;  /* label of the step that failed */
    const char *swallowed; /* a step that passed the failing request and succeeded */
    int released;        /* from_buffer release callbacks */
    bool buffer_made;    /* the from_buffer tensor exists (owns the callback) */
    int scope_depth;     /* scopes to close on the way out */
} run;

static void on_release(void *data, void *ctx)
{
    (void)data;
    ((run *)ctx)->released++;
}

/* A step succeeded: it must not have consumed the failing request. */
static bool passed(run *r, const char *label)
{
    if (r->fail_at && tt_debug_alloc_count() >= r->fail_at && !r->swallowed)
        r->swallowed = label;
    return true;
}

/* Holds t (a new reference) for release at the end; false when the step
 * failed. */
static bool hold(run *r, tt_tensor *t, const char *label)
{
    if (!t) {
        r->failed = label;
        return false;
    }
    if (r->n < (int)(sizeof r->held / sizeof r->held[0]))
        r->held[r->n++] = t;
    return passed(r, label);
}

static bool ok(run *r, tt_status st, const char *label)
{
    if (st != TT_OK) {
        r->failed = label;
        return false;
    }
    return passed(r, label);
}

/* A symbolic operation: 0 means it could not allocate its expression. */
static bool sym(run *r, tt_size s, const char *label)
{
    if (s == 0) {
        r->failed = label;
        return false;
    }
    return passed(r, label);
}

#define HOLD(call) hold(r, (call), #call)
/* This suite's OK records a failed step of the run instead of asserting. */
#undef OK
#define OK(call) ok(r, (call), #call)
#define SYM(var, call) sym(r, (var) = (call), #call)

static float buffer[24];

/* Makes fresh symbols until the environment holds `to` nodes. */
static bool pad(run *r, int from, int to)
{
    for (int i = from; i < to; i++) {
        tt_size u;
        if (!SYM(u, tt_sym_new("u", -1)))
            return false;
    }
    return true;
}

static tt_status sequence(run *r)
{
    tt_tensor *a, *b, *c, *d, *f, *tmp, *k, *fs, *scoped = NULL;
    tt_size s0, s1, e;
    float out[24];
    tt_sym_reset(); /* the shape environment starts empty every run */

    /* factories */
    if (!HOLD(a = tt_zeros(TT_SHAPE(4, 6), TT_F32)) ||
        !HOLD(b = tt_arange(0, 24, 1, TT_F64)) ||
        !HOLD(tt_ones(TT_SHAPE(3), TT_I64)) ||
        !HOLD(tt_full(TT_SHAPE(2, 2), 7, TT_U8)) ||
        !HOLD(tt_scalar(1, TT_BOOL)) ||
        !HOLD(tt_linspace(0, 1, 5, TT_F32)) ||
        !HOLD(tt_rand(TT_SHAPE(3, 3), TT_F32)) ||
        !HOLD(tt_randn(TT_SHAPE(5), TT_F64)) ||
        !HOLD(tt_from_data(TT_SHAPE(2), TT_I32, (const int32_t[]){1, 2})) ||
        !HOLD(tt_empty_strided(TT_SHAPE(2, 3), A(1, 2), TT_F32)) ||
        !HOLD(tt_new_empty(a, TT_SHAPE(5))))
        return tt_errcode();
    r->buffer_made = false;
    tmp = tt_from_buffer(TT_SHAPE(4, 6), NULL, TT_F32, buffer, sizeof buffer, on_release, r);
    r->buffer_made = tmp != NULL;
    if (!hold(r, tmp, "tt_from_buffer"))
        return tt_errcode();
    /* views, reshape with a copy, copies */
    if (!HOLD(c = tt_view(b, TT_SHAPE(4, 6))) ||
        !HOLD(d = tt_transpose(c, 0, 1)) ||
        !HOLD(tt_permute(c, TT_SHAPE(1, 0))) ||
        !HOLD(tt_slice(d, 0, 1, 6, 2)) ||
        !HOLD(tt_narrow(d, 1, 1, 2)) ||
        !HOLD(tt_select(d, -1, 0)) ||
        !HOLD(tmp = tt_unsqueeze(a, 0)) ||
        !HOLD(tt_expand(tmp, TT_SHAPE(3, 4, 6))) ||
        !HOLD(tt_squeeze_all(c)) ||
        !HOLD(tt_flatten(d, 0, 1)) || /* copies: d is transposed */
        !HOLD(tt_as_strided(b, TT_SHAPE(2, 2), A(1, 1), 3)) ||
        !HOLD(tt_detach(d)) ||
        !HOLD(tt_reshape(d, TT_SHAPE(24))) ||
        !HOLD(tt_reshape(c, TT_SHAPE(2, 12))) ||
        !HOLD(tt_clone(d)) ||
        !HOLD(tt_contiguous(d)) ||
        !HOLD(tt_to_dtype(d, TT_I32)) ||
        !HOLD(tt_empty_like(d)) ||
        !OK(tt_copy_(a, c)) ||
        !OK(tt_fill_(d, 2)) ||
        !OK(tt_to_buffer(a, out, sizeof out)))
        return tt_errcode();
    /* fake tensors */
    if (!HOLD(f = tt_fake_empty(TT_SHAPE(1 << 20, 1 << 20), TT_F32)) ||
        !HOLD(tt_fake_empty_strided(TT_SHAPE(3, 4), A(1, 3), TT_F64)) ||
        !HOLD(tt_fake_like(d)) ||
        !HOLD(tmp = tt_t(f)) ||
        !HOLD(tt_contiguous(tmp)) ||
        !HOLD(tt_reshape(tmp, TT_SHAPE(-1))) ||
        !HOLD(tt_new_empty(f, TT_SHAPE(2))) ||
        !OK(tt_copy_(tmp, tmp)))
        return tt_errcode();
    /* Symbolic sizes. The shape environment keeps its nodes in arrays
     * that grow when the 65th, 129th, 257th... node is made, so most
     * operations allocate nothing: pad with fresh symbols so that the
     * fake tensor's stride expression, a subtraction and a numel each
     * make the node that needs the arrays to grow. */
    if (!SYM(s0, tt_sym_new("s", 8)) || !SYM(s1, tt_sym_new("s", 3)) ||
        !pad(r, 2, 64) ||
        !HOLD(fs = tt_fake_empty(3, (const tt_size[]){2, s0, s1}, TT_F32)) || /* 65: s0*s1 */
        !SYM(e, tt_sym_add(s0, 4)) ||                                    /* 66 */
        !pad(r, 66, 128) ||
        !SYM(e, tt_sym_sub(s1, s0)) ||                                   /* 129, 130 */
        !pad(r, 130, 256) ||
        !SYM(e, tt_numel(fs)) ||                                         /* 257, 258 */
        !SYM(e, tt_sym_floordiv(e, 2)) ||
        !HOLD(tt_transpose(fs, 0, 2)) ||
        !HOLD(tt_clone(fs)) ||
        !HOLD(tt_fake_like(fs)))
        return tt_errcode();
    /* scopes: more tensors than the slot array starts with, a kept one,
     * a nested scope */
    tt_scope_begin();
    r->scope_depth = 1;
    for (int i = 0; i < 70; i++) {
        /* owned by the scope: not held */
        if (!(tmp = tt_full(TT_SHAPE(2), i, TT_F32))) {
            r->failed = "tt_full in scope";
            return tt_errcode();
        }
        passed(r, "tt_full in scope");
    }
    tt_scope_begin();
    r->scope_depth = 2;
    if (!HOLD(k = tt_retain(tt_zeros(TT_SHAPE(2), TT_F32))))
        return tt_errcode();
    if (!(scoped = tt_ones(TT_SHAPE(3), TT_F32))) {
        r->failed = "tt_ones in nested scope";
        return tt_errcode();
    }
    passed(r, "tt_ones in nested scope");
    tt_keep(scoped);
    tt_scope_end();
    r->scope_depth = 1;
    tt_keep(scoped);
    tt_scope_end();
    r->scope_depth = 0;
    if (!hold(r, scoped, "kept tensor") || !HOLD(tt_view(scoped, TT_SHAPE(1, 3))))
        return tt_errcode();
    return TT_OK;
}

/* Releases what a run made, whether it finished or not. */
static void cleanup(run *r)
{
    while (r->scope_depth > 0) {
        tt_scope_end();
        r->scope_depth--;
    }
    for (int i = r->n - 1; i >= 0; i--)
        tt_release(r->held[i]);
    r->n = 0;
    tt_sym_reset();
}

/* Runs `seq` once to count its requests, then once per request with that
 * request failing: each run stops there with TT_ENOMEM and "out of
 * memory", no step swallows the failure, and nothing is left alive.
 * Returns the number of requests. */
static int64_t fail_each_request(tt_status (*seq)(run *r))
{
    run r = {0};
    int64_t base = tt_debug_alloc_count();
    tt_status st = seq(&r);
    ck_assert_msg(st == TT_OK, "the sequence failed at '%s': %s", r.failed, tt_errmsg());
    int64_t count = tt_debug_alloc_count() - base;
    cleanup(&r);
    ck_assert_int_eq(tt_live_tensors(), 0);
    ck_assert_int_eq(tt_live_storages(), 0);

    for (int64_t k = 1; k <= count; k++) {
        run q = {0};
        tt_clear_error();
        int64_t start = tt_debug_alloc_count();
        q.fail_at = start + k;
        tt_debug_fail_alloc(k);
        st = seq(&q);
        int64_t reached = tt_debug_alloc_count() - start;
        tt_debug_fail_alloc(0);
        ck_assert_msg(!q.swallowed, "request %lld: '%s' succeeded although its allocation "
                                    "failed (%s)", (long long)k, q.swallowed, tt_errmsg());
        ck_assert_msg(st == TT_ENOMEM, "request %lld: the sequence returned %s at '%s': %s",
                      (long long)k, tt_status_name(st), q.failed ? q.failed : "(end)",
                      tt_errmsg());
        ck_assert_error(TT_ENOMEM, "out of memory");
        ck_assert_msg(reached == k, "request %lld: '%s' made %lld more requests after the "
                                    "failing one", (long long)k, q.failed,
                      (long long)(reached - k));
        cleanup(&q);
        /* The borrowed buffer's callback ran once if its tensor was made. */
        ck_assert_int_eq(q.released, q.buffer_made ? 1 : 0);
        ck_assert_msg(tt_live_tensors() == 0, "request %lld ('%s'): %lld tensors left",
                      (long long)k, q.failed, (long long)tt_live_tensors());
        ck_assert_msg(tt_live_storages() == 0, "request %lld ('%s'): %lld storages left",
                      (long long)k, q.failed, (long long)tt_live_storages());
    }
    /* Nothing is left armed: the sequence runs through again. */
    run again = {0};
    ck_assert_int_eq(seq(&again), TT_OK);
    cleanup(&again);
    return count;
}

START_TEST(test_fail_every_allocation)
{
    ck_assert_int_gt(fail_each_request(sequence), 200);
}
END_TEST

/* A step inside a scope: the scope owns t, so it is not held. */
static bool scoped_step(run *r, tt_tensor *t, const char *label)
{
    if (!t) {
        r->failed = label;
        return false;
    }
    return passed(r, label);
}
#define S(var, call) scoped_step(r, (var) = (call), #call)

/* The built-in ops, eager, one call per step (a failure is the step's
 * own): each family on its fast path and its general one (broadcast,
 * mixed dtypes, strided, in place, scalar forms). Everything is made in a
 * scope, which cleanup closes. */
static tt_status ops_sequence(run *r)
{
    tt_tensor *a, *b, *c, *bt, *i, *t, *m, *w, *wt, *m3, *mt3, *x, *y;
    tt_scope_begin();
    r->scope_depth = 1;
    if (!S(a, tt_arange(0, 12, 1, TT_F32)) || !S(b, tt_view(a, TT_SHAPE(3, 4))) ||
        !S(c, tt_transpose(b, 0, 1)) || !S(bt, tt_t(b)) ||
        !S(i, tt_arange(0, 4, 1, TT_I64)) ||
        !S(t, tt_add(a, a)) || !S(t, tt_mul(b, i)) || !S(t, tt_sub(c, bt)) ||
        !S(t, tt_div(b, i)) || !S(t, tt_pow_scalar(b, 2)) || !S(t, tt_add_scaled(b, i, 2)) ||
        !S(t, tt_lt(b, i)) || !S(t, tt_exp(a)) || !S(t, tt_sin(c)) || !S(t, tt_neg(i)) ||
        !S(t, tt_gelu(b)) || !S(t, tt_gt(c, bt)) || !S(t, tt_where(t, c, bt)) ||
        !S(t, tt_clamp(b, 1, 5)) || !OK(tt_add_(b, i)) || !OK(tt_mul_scalar_(c, 3)) ||
        !OK(tt_relu_(b)))
        return tt_errcode();
    if (!S(t, tt_sum(b, 1, A(1), true)) || !S(t, tt_mean_all(c)) ||
        !S(t, tt_amax(c, 1, A(0), false)) || !S(t, tt_argmax(b, 1, false)) ||
        !S(t, tt_softmax(c, 1)) || !S(t, tt_log_softmax(b, 0)))
        return tt_errcode();
    if (!S(m, tt_randn(TT_SHAPE(8, 16), TT_F32)) || !S(w, tt_randn(TT_SHAPE(4, 16), TT_F32)) ||
        !S(wt, tt_t(w)) || !S(t, tt_mm(m, wt)) || !S(t, tt_matmul(m, wt)) ||
        !S(t, tt_linear(m, w, NULL)) || !S(m3, tt_view(m, TT_SHAPE(2, 4, 16))) ||
        !S(mt3, tt_transpose(m3, 1, 2)) || !S(t, tt_bmm(m3, mt3)))
        return tt_errcode();
    if (!S(t, tt_cat(2, (tt_tensor *[]){b, b}, 0)) ||
        !S(t, tt_stack(2, (tt_tensor *[]){c, c}, 1)) ||
        !S(x, tt_randn(TT_SHAPE(5, 3), TT_F32)) ||
        !S(y, tt_from_data(TT_SHAPE(5), TT_I64, (const int64_t[]){0, 1, 2, 1, 0})) ||
        !S(t, tt_cross_entropy(x, y)))
        return tt_errcode();
    return TT_OK;
}

START_TEST(test_fail_ops)
{
    ck_assert_int_gt(fail_each_request(ops_sequence), 50);
}
END_TEST



/* Single calls whose failure paths the sequence reaches only partly. */
START_TEST(test_fail_single_calls)
{
    float buf[4] = {0};
    tt_tensor *t = tt_zeros(TT_SHAPE(2, 2), TT_F32);
    tt_tensor *tr = tt_t(t);
    /* reshape of a transposed view copies: storage header, data, tensor,
     * then the view of the copy. Each can fail; the copy goes too. */
    int64_t before = tt_debug_alloc_count();
    tt_tensor *r = tt_reshape(tr, TT_SHAPE(4));
    ck_assert_int_eq(tt_debug_alloc_count() - before, 4);
    tt_release(r);
    for (int k = 1; k <= 4; k++) {
        tt_debug_fail_alloc(k);
        r = tt_reshape(tr, TT_SHAPE(4));
        tt_debug_fail_alloc(0);
        ck_assert_ptr_null(r);
        ck_assert_error(TT_ENOMEM, "out of memory");
        ck_assert_int_eq(tt_live_tensors(), 2);
        ck_assert_int_eq(tt_live_storages(), 1);
    }
    /* tt_to_buffer wraps the destination in a tensor: two requests. */
    for (int k = 1; k <= 2; k++) {
        tt_debug_fail_alloc(k);
        tt_status st = tt_to_buffer(tr, buf, sizeof buf);
        tt_debug_fail_alloc(0);
        ck_assert_int_eq(st, TT_ENOMEM);
        ck_assert_error(TT_ENOMEM, "out of memory");
        ck_assert_int_eq(tt_live_tensors(), 2);
    }
    tt_debug_fail_alloc(3);
    ck_assert_int_eq(tt_to_buffer(tr, buf, sizeof buf), TT_OK);
    tt_debug_fail_alloc(0);
    tt_release(tr);
    tt_release(t);
    /* The message names the size of the failed request. */
    tt_debug_fail_alloc(2);
    ck_assert_ptr_null(tt_empty(TT_SHAPE(1000), TT_F64));
    tt_debug_fail_alloc(0);
    ck_assert_error(TT_ENOMEM, "out of memory: allocation of 8000 bytes failed");
    /* Symbolic operations report it as 0 with the error set. */
    tt_sym_reset();
    tt_debug_fail_alloc(1);
    ck_assert_int_eq(tt_sym_new("s", 2), 0);
    tt_debug_fail_alloc(0);
    ck_assert_error(TT_ENOMEM, "out of memory");
    tt_size s0 = tt_sym_new("s", 2), s1 = tt_sym_new("s", 5);
    ck_assert(tt_size_is_sym(s0));
    char name[16];
    tt_size_str(s0, name, sizeof name);
    ck_assert_str_eq(name, "s0"); /* the failed one took no name */
    /* Expression nodes live in arrays that grow at 64 nodes: make the
     * next new node need them to grow, and fail that. */
    for (int i = 2; i < 64; i++)
        ck_assert(tt_size_is_sym(tt_sym_new("u", -1)));
    for (int k = 1; k <= 2; k++) {
        int64_t before = tt_debug_alloc_count();
        tt_debug_fail_alloc(k);
        tt_clear_error();
        tt_size d = tt_sym_sub(s1, s0); /* s1 + (-1)*s0: the first node fails */
        tt_debug_fail_alloc(0);
        ck_assert_msg(d == 0, "tt_sym_sub gave %lld", (long long)d);
        ck_assert_error(TT_ENOMEM, "out of memory");
        ck_assert_int_eq(tt_debug_alloc_count() - before, k);
    }
    tt_size d = tt_sym_sub(s1, s0);
    ck_assert_int_eq(tt_sym_hint(d), 3);
    tt_size_str(d, name, sizeof name);
    ck_assert_str_eq(name, "s1 + -s0");
    tt_sym_reset();
}
END_TEST

/* ------------------------------------------------------- the hook */

typedef struct {
    atomic_llong live, total, allocs, frees, aligned64;
    bool fail;
} hook_stats;

static hook_stats hs;

/* Blocks carry their size in a 64-byte header, so free can count. */
static void *stats_alloc(size_t size, size_t align, void *ud)
{
    hook_stats *s = ud;
    if (s->fail)
        return NULL;
    void *p = NULL;
    if (posix_memalign(&p, 64, size + 64) != 0)
        return NULL;
    *(size_t *)p = size;
    atomic_fetch_add(&s->live, (long long)size);
    atomic_fetch_add(&s->total, (long long)size);
    atomic_fetch_add(&s->allocs, 1);
    if (align == 64)
        atomic_fetch_add(&s->aligned64, 1);
    ck_assert_msg(align && (align & (align - 1)) == 0, "alignment %zu is no power of two", align);
    return (char *)p + 64;
}

static void stats_free(void *p, void *ud)
{
    hook_stats *s = ud;
    if (!p)
        return;
    char *b = (char *)p - 64;
    atomic_fetch_sub(&s->live, (long long)*(size_t *)b);
    atomic_fetch_add(&s->frees, 1);
    free(b);
}

START_TEST(test_custom_allocator)
{
    memset(&hs, 0, sizeof hs);
    tt_set_allocator(&(tt_allocator){stats_alloc, stats_free, &hs});
    run r = {0};
    int64_t base = tt_debug_alloc_count();
    ck_assert_int_eq(sequence(&r), TT_OK);
    /* A tensor's data is 64-byte aligned. */
    tt_tensor *t = tt_empty(TT_SHAPE(3), TT_F32);
    ck_assert_uint_eq((uintptr_t)tt_data(t) % 64, 0);
    tt_release(t);
    /* At most one hook call per request (none for a cache hit; under ASan
     * the caches are bypassed, so every request calls it). */
    int64_t requests = tt_debug_alloc_count() - base;
    cleanup(&r);
    ck_assert_int_gt(hs.allocs, 10);
    ck_assert_int_le(hs.allocs, requests);
    ck_assert_int_gt(hs.aligned64, 0);
    ck_assert_int_gt(hs.total, 24 * 8); /* at least the data of the tensors */
    /* The caches hold some blocks back; emptying them returns everything. */
    tt_empty_cache();
    ck_assert_int_eq(hs.live, 0);
    ck_assert_int_eq(hs.allocs, hs.frees);

    /* A hook that fails: every allocating call fails cleanly. */
    hs.fail = true;
    ck_assert_ptr_null(tt_zeros(TT_SHAPE(4), TT_F32));
    ck_assert_error(TT_ENOMEM, "out of memory");
    ck_assert_ptr_null(tt_fake_empty(TT_SHAPE(4), TT_F32));
    ck_assert_error(TT_ENOMEM, "out of memory");
    ck_assert_int_eq(tt_sym_new("s", 1), 0);
    ck_assert_error(TT_ENOMEM, "out of memory");
    run q = {0};
    ck_assert_int_eq(sequence(&q), TT_ENOMEM);
    ck_assert_str_eq(q.failed, "a = tt_zeros(TT_SHAPE(4, 6), TT_F32)");
    cleanup(&q);
    ck_assert_int_eq(tt_live_tensors(), 0);
    hs.fail = false;

    /* Restoring the default gives the hook back its cached blocks. */
    t = tt_ones(TT_SHAPE(100), TT_F64);
    tt_release(t);
    tt_set_allocator(NULL);
    ck_assert_int_eq(hs.live, 0);
    long long allocs = hs.allocs;
    t = tt_ones(TT_SHAPE(100), TT_F64);
    ck_assert_int_eq(hs.allocs, allocs); /* the default is in place again */
    tt_release(t);
}
END_TEST

static Suite *oom_suite(void)
{
    Suite *s = suite_create("oom");
    TCase *tc = tt_tcase("injected failures");
    tcase_add_test(tc, test_fail_every_allocation);
    tcase_add_test(tc, test_fail_ops);
    tcase_add_test(tc, test_fail_single_calls);
    suite_add_tcase(s, tc);
    tc = tt_tcase("allocator hook");
    tcase_add_test(tc, test_custom_allocator);
    suite_add_tcase(s, tc);
    return s;
}

TT_TEST_MAIN(oom_suite)
