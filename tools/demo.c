/* tt-demo: a first tour of the tensortrace runtime (`tools/run demo`).
 *
 * Each step prints one line saying what it shows, then what the runtime
 * did. The program exits 0 only when every step behaved as described, so
 * the tour doubles as a smoke test. It uses nothing but the public API
 * (tensortrace.h), the way an application would.
 *
 * The tour grows with the project: custom ops, tracing and opcheck join it
 * as they land (DESIGN.md, "Tools").
 */
#include <stdbool.h>
#include <stdio.h>

#include "tensortrace.h"

static int failures;

/* Notes a step that did not behave as the tour says; the tour goes on, so
 * one run shows every difference. */
static void expect(bool ok, const char *what)
{
    if (!ok) {
        printf("  !! unexpected: %s\n", what);
        failures++;
    }
}

/* A NULL from a call that should have worked: show the library's message. */
static bool check_made(const tt_tensor *t, const char *what)
{
    if (!t) {
        printf("  !! %s failed: %s: %s\n", what, tt_status_name(tt_errcode()),
               tt_errmsg());
        failures++;
    }
    return t != NULL;
}

static void step(const char *title)
{
    printf("\n== %s\n", title);
}

/* One line of metadata: "x     f32[2, 3]  strides [3, 1]  offset 0". */
static void show(const char *label, const tt_tensor *t)
{
    char desc[128], strides[128];
    printf("  %-6s %s  strides %s  offset %lld\n", label,
           tt_describe(t, desc, sizeof desc),
           tt_strides_str(t, strides, sizeof strides),
           (long long)tt_storage_offset(t));
}

/* The values, in logical order. */
static void show_values(const tt_tensor *t)
{
    printf("  ");
    tt_print(t);
}

static bool same_metadata(const tt_tensor *a, const tt_tensor *b)
{
    if (tt_ndim(a) != tt_ndim(b) || tt_storage_offset(a) != tt_storage_offset(b))
        return false;
    for (int d = 0; d < tt_ndim(a); d++)
        if (tt_sizes(a)[d] != tt_sizes(b)[d] || tt_strides(a)[d] != tt_strides(b)[d])
            return false;
    return true;
}

/* Views: one storage, several ways of looking at it. */
static void tour_views(void)
{
    step("1. tt_arange makes 0..5; tt_view shapes them as 2x3 without a copy");
    tt_tensor *flat = tt_arange(0, 6, 1, TT_F32);
    tt_tensor *x = tt_view(flat, TT_SHAPE(2, 3));
    tt_tensor *xt = NULL;
    if (!check_made(flat, "tt_arange") || !check_made(x, "tt_view"))
        goto out;
    show("x", x);
    show_values(x);

    step("2. tt_transpose swaps strides; both views share x's storage");
    xt = tt_transpose(x, 0, 1);
    if (!check_made(xt, "tt_transpose"))
        goto out;
    show("x.T", xt);
    show_values(xt);
    printf("  tt_same_storage(x, x.T) = %s, tt_is_contiguous(x.T) = %s\n",
           tt_same_storage(x, xt) ? "true" : "false",
           tt_is_contiguous(xt) ? "true" : "false");
    expect(tt_same_storage(x, xt) && tt_same_storage(flat, x), "views alias");
    expect(!tt_is_contiguous(xt), "a transpose is not contiguous");

    step("3. A write through x.T[2][1] is seen at x[1][2]; the version counter moves");
    uint64_t before = tt_version(x);
    double seen = 0;
    if (tt_set(xt, 100, 2, 1) || tt_get(x, &seen, 1, 2)) {
        expect(false, tt_errmsg());
        goto out;
    }
    printf("  x[1][2] = %g, version %llu -> %llu (shared by every view)\n", seen,
           (unsigned long long)before, (unsigned long long)tt_version(x));
    show_values(x);
    expect(seen == 100, "the write shows through the other view");
    expect(tt_version(x) == before + 1 && tt_version(flat) == tt_version(x),
           "one bump, visible from every view");
out:
    tt_release(xt);
    tt_release(x);
    tt_release(flat);
}

/* Fake tensors: all the metadata, no bytes. */
static void tour_fake(void)
{
    step("4. tt_fake_like keeps sizes, strides and offset of a permuted, narrowed view");
    tt_tensor *flat = tt_arange(0, 24, 1, TT_F32);
    tt_tensor *base = tt_view(flat, TT_SHAPE(2, 3, 4));
    tt_tensor *perm = NULL, *real = NULL, *fake = NULL, *fake_t = NULL;
    if (!check_made(base, "tt_arange + tt_view"))
        goto out;
    perm = tt_permute(base, TT_SHAPE(2, 0, 1));  /* [4, 2, 3] */
    real = tt_narrow(perm, 0, 1, 2);             /* [2, 2, 3], offset 1 */
    fake = tt_fake_like(real);
    if (!check_made(real, "tt_permute + tt_narrow") || !check_made(fake, "tt_fake_like"))
        goto out;
    show("view", real);
    show("fake", fake);
    printf("  storage size: %zu bytes for the view, %zu for the fake (none allocated)\n",
           tt_storage_nbytes(real), tt_storage_nbytes(fake));
    expect(tt_is_fake(fake) && !tt_is_fake(real), "only the copy is fake");
    expect(same_metadata(real, fake), "same sizes, strides and offset");
    expect(tt_storage_nbytes(real) == tt_storage_nbytes(fake), "same storage size");

    step("5. Views of a fake tensor share its fake storage; reading its data fails");
    fake_t = tt_transpose(fake, 1, 2); /* "fake.T" below */
    if (!check_made(fake_t, "tt_transpose of a fake tensor"))
        goto out;
    show("fake.T", fake_t);
    printf("  tt_same_storage(fake, fake.T) = %s\n",
           tt_same_storage(fake, fake_t) ? "true" : "false");
    expect(tt_same_storage(fake, fake_t), "fake views alias");
    const void *p = tt_data(fake);
    printf("  tt_data(fake) = %s, %s:\n    %s\n", p ? "a pointer" : "NULL",
           tt_status_name(tt_errcode()), tt_errmsg());
    expect(p == NULL && tt_errcode() == TT_EFAKE, "tt_data fails with TT_EFAKE");
    tt_clear_error();
out:
    tt_release(fake_t);
    tt_release(fake);
    tt_release(real);
    tt_release(perm);
    tt_release(base);
    tt_release(flat);
}

/* Errors: a NULL (or a status) and a sentence, never an abort. */
static void tour_errors(void)
{
    step("6. tt_view of a transposed tensor cannot work without a copy: a clear error");
    tt_tensor *seq = tt_arange(0, 6, 1, TT_F32);
    tt_tensor *x = tt_view(seq, TT_SHAPE(2, 3));
    tt_tensor *xt = tt_t(x), *flat = NULL;
    if (!check_made(xt, "tt_arange + tt_view + tt_t"))
        goto out;
    tt_tensor *bad = tt_view(xt, TT_SHAPE(6));
    printf("  tt_view(x.T, [6]) = %s, %s:\n    %s\n", bad ? "a tensor" : "NULL",
           tt_status_name(tt_errcode()), tt_errmsg());
    expect(bad == NULL && tt_errcode() == TT_ESHAPE, "tt_view fails with TT_ESHAPE");
    tt_release(bad);
    tt_clear_error();

    flat = tt_reshape(xt, TT_SHAPE(6));
    if (!check_made(flat, "tt_reshape"))
        goto out;
    printf("  tt_reshape(x.T, [6]) copies instead: ");
    tt_print(flat);
    expect(!tt_same_storage(flat, xt), "reshape of a non-viewable tensor copies");
out:
    tt_release(flat);
    tt_release(xt);
    tt_release(x);
    tt_release(seq);
}

/* Scopes: nested calls with no releases, and no leaks. */
static void tour_scopes(void)
{
    step("7. A scope releases its temporaries at tt_scope_end; tt_keep saves one");
    int64_t before = tt_live_tensors();
    tt_scope_begin();
    tt_tensor *grid = tt_view(tt_arange(0, 12, 1, TT_F32), TT_SHAPE(3, 4));
    /* Column 2 of grid, copied out: a NULL anywhere flows through to here. */
    tt_tensor *col = tt_keep(tt_contiguous(tt_select(tt_t(grid), 0, 2)));
    int64_t inside = tt_live_tensors();
    tt_scope_end();
    int64_t after = tt_live_tensors();
    if (!check_made(col, "the column of grid"))
        return;
    show_values(col);
    printf("  live tensors: %lld before, %lld inside, %lld after tt_scope_end (the kept one)\n",
           (long long)before, (long long)inside, (long long)after);
    expect(inside == before + 5, "arange, view, t, select and contiguous are live");
    expect(after == before + 1, "only the kept tensor survives the scope");
    tt_release(col); /* kept tensors belong to the caller */
}

int main(void)
{
    printf("tensortrace: a tour of the runtime\n");
    tour_views();
    tour_fake();
    tour_errors();
    tour_scopes();

    printf("\n== live tensors at exit: %lld, storages: %lld\n",
           (long long)tt_live_tensors(), (long long)tt_live_storages());
    expect(tt_live_tensors() == 0 && tt_live_storages() == 0,
           "everything was released");
    if (failures) {
        printf("%d step(s) did not behave as expected\n", failures);
        return 1;
    }
    printf("every step behaved as expected\n");
    return 0;
}
