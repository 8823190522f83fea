/* The README's quickstart with a check after each step. The install check
 * (tools/run test) builds it outside the source tree, against the installed
 * library only:
 *     cc outside.c $(pkg-config --cflags --libs tensortrace)
 * and runs it; it exits 0 when every step did what the comments say. (The
 * install check builds and runs the README's own C blocks too.) */
#include <stdio.h>
#include <tensortrace.h>

static int failed;

static void expect(bool ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "quickstart: unexpected: %s (%s)\n", what, tt_errmsg());
        failed = 1;
    }
}

int main(void)
{
    /* Tensors and views: a view shares its tensor's storage. */
    tt_tensor *x = tt_arange(0, 6, 1, TT_F32);  /* 0 1 2 3 4 5 */
    tt_tensor *m = tt_view(x, TT_SHAPE(2, 3));  /* 2x3, no copy */
    tt_tensor *mt = tt_transpose(m, 0, 1);      /* 3x2, strides [1, 3] */
    if (!mt) { /* a NULL from any call: the error says why */
        fprintf(stderr, "%s\n", tt_errmsg());
        return 1;
    }
    tt_set(mt, 42, 2, 0); /* writes m[0][2]: same storage */
    double v = 0;
    tt_get(m, &v, 0, 2);
    expect(v == 42 && tt_same_storage(x, mt), "a write through a view");
    tt_print(m); /* tensor(f32[2, 3], [0, 1, 42, 3, 4, 5]) */

    /* Errors never abort: NULL (or a status) and a sentence. */
    tt_tensor *flat = tt_view(mt, TT_SHAPE(6));
    if (!flat)
        printf("%s: %s\n", tt_status_name(tt_errcode()), tt_errmsg());
    expect(!flat && tt_errcode() == TT_ESHAPE, "tt_view of a transpose fails");

    /* Fake tensors: sizes, strides and dtype, but no bytes. */
    tt_tensor *f = tt_fake_like(mt);
    char desc[64];
    printf("%s, strides [%lld, %lld]\n", tt_describe(f, desc, sizeof desc),
           (long long)tt_dim_stride(f, 0), (long long)tt_dim_stride(f, 1));
    expect(tt_is_fake(f) && tt_dim_stride(f, 0) == 1, "a fake keeps strides");
    expect(tt_data(f) == NULL && tt_errcode() == TT_EFAKE, "a fake has no data");

    /* Scopes: what is made inside is released at the end, unless kept. */
    tt_scope_begin();
    tt_tensor *col = tt_keep(tt_contiguous(tt_select(m, 1, 2))); /* m[:, 2] */
    tt_scope_end();
    expect(col && tt_is_contiguous(col) && tt_numel(col) == 2, "a kept tensor");

    tt_release(col);
    tt_release(f);
    tt_release(mt);
    tt_release(m);
    tt_release(x);
    expect(tt_live_tensors() == 0, "every tensor released");
    return failed;
}
