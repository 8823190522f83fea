/* Matrix products: mm, bmm, matmul, linear. Every result is compared with a
 * plain f64 triple loop over the same logical values, for every dtype and
 * for operands in each memory layout BLAS is fed (row-major, transposed
 * views, rows with a step, and layouts that need a copy); the fake path
 * must give the real output's metadata exactly; every error is checked by
 * status and text. */
#include "tt_test.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* ------------------------------------------------------------- operands */

/* The memory layouts an operand is built in; all give the same logical
 * shape. The comment says how BLAS receives it. */
typedef enum {
    L_CONTIG,   /* row-major: NoTrans, ld = cols */
    L_TRANS,    /* a transposed view: Trans, ld = rows */
    L_ROWSTEP,  /* every other row of a taller matrix: NoTrans, ld = 2*cols */
    L_TRANS_LD, /* transposed view of a row-stepped matrix: Trans, ld = 2*rows */
    L_COLSTEP,  /* every other column: copied first (inner stride 2) */
    L_BCAST,    /* rows expanded from one row (stride 0): copied first */
    L_BATCH,    /* batch dim expanded from 1 (stride 0), or innermost in memory */
    L_COUNT
} layout;

static const char *const layout_names[L_COUNT] = {
    "contig", "trans", "rowstep", "trans_ld", "colstep", "bcast", "batch",
};

static const tt_dtype dtypes[] = {TT_F32, TT_F64, TT_I64, TT_I32, TT_U8};
#define NDTYPES ((int)(sizeof dtypes / sizeof dtypes[0]))

/* Random values of dtype dt in a new contiguous tensor: normal for floats,
 * small integers (0..6, or -3..3 when signed) for the others. */
static tt_tensor *random_values(int nd, const int64_t *sizes, tt_dtype dt)
{
    if (tt_dtype_is_float(dt))
        return tt_randn(nd, sizes, dt);
    tt_tensor *u = tt_rand(nd, sizes, TT_F64);
    tt_tensor *s = tt_mul_scalar(u, 7);
    tt_tensor *v = dt == TT_U8 ? tt_retain(s) : tt_sub_scalar(s, 3);
    tt_tensor *r = tt_to_dtype(v, dt);
    ck_assert_ptr_nonnull(r);
    tt_release(u);
    tt_release(s);
    tt_release(v);
    return r;
}

/* An operand of logical shape (nd, sizes) in layout L with random values.
 * Layouts that do not apply to the shape fall back to contiguous. */
static tt_tensor *make(layout L, int nd, const int64_t *sizes, tt_dtype dt)
{
    int64_t ph[TT_MAX_DIMS];
    memcpy(ph, sizes, sizeof(int64_t) * (size_t)nd);
    tt_tensor *base = NULL, *r = NULL;
    if (nd < 2 && L != L_COLSTEP)
        L = L_CONTIG;
    if (L == L_BATCH && nd < 3)
        L = L_CONTIG;
    switch (L) {
    case L_CONTIG:
        return random_values(nd, sizes, dt);
    case L_TRANS:
        ph[nd - 2] = sizes[nd - 1], ph[nd - 1] = sizes[nd - 2];
        base = random_values(nd, ph, dt);
        r = tt_transpose(base, -1, -2);
        break;
    case L_ROWSTEP:
        ph[nd - 2] *= 2;
        base = random_values(nd, ph, dt);
        r = tt_slice(base, nd - 2, 0, ph[nd - 2], 2);
        break;
    case L_TRANS_LD: {
        ph[nd - 2] = 2 * sizes[nd - 1], ph[nd - 1] = sizes[nd - 2];
        base = random_values(nd, ph, dt);
        tt_tensor *s = tt_slice(base, nd - 2, 0, ph[nd - 2], 2);
        r = tt_transpose(s, -1, -2);
        tt_release(s);
        break;
    }
    case L_COLSTEP:
        ph[nd - 1] *= 2;
        base = random_values(nd, ph, dt);
        r = tt_slice(base, nd - 1, 0, ph[nd - 1], 2);
        break;
    case L_BCAST:
        ph[nd - 2] = 1;
        base = random_values(nd, ph, dt);
        r = tt_expand(base, nd, sizes);
        break;
    case L_BATCH:
        if (sizes[0] % 2) { /* expanded batch */
            ph[0] = 1;
            base = random_values(nd, ph, dt);
            r = tt_expand(base, nd, sizes);
        } else { /* batch innermost but one: [n, B, k] permuted to [B, n, k] */
            int64_t perm[TT_MAX_DIMS];
            for (int d = 0; d < nd; d++)
                perm[d] = d;
            ph[nd - 3] = sizes[nd - 2], ph[nd - 2] = sizes[nd - 3];
            perm[nd - 3] = nd - 2, perm[nd - 2] = nd - 3;
            base = random_values(nd, ph, dt);
            r = tt_permute(base, nd, perm);
        }
        break;
    default:
        break;
    }
    ck_assert_msg(r != NULL, "building layout %s: %s", layout_names[L], tt_errmsg());
    tt_release(base);
    for (int d = 0; d < nd; d++)
        ck_assert_int_eq(tt_dim_size(r, d), sizes[d]);
    return r;
}

/* ------------------------------------------------------------ reference */

/* numpy's matmul on logical values, written out directly. Returns the
 * output's ndim; osz and *out (malloc'd) receive its shape and values. */
static int ref_matmul(int nd1, const int64_t *s1, const double *A, int nd2,
                      const int64_t *s2, const double *B, int64_t *osz, double **out)
{
    int64_t as[TT_MAX_DIMS + 1], bs[TT_MAX_DIMS + 1];
    int na = nd1 == 1 ? 2 : nd1, nb = nd2 == 1 ? 2 : nd2;
    if (nd1 == 1)
        as[0] = 1, as[1] = s1[0];
    else
        memcpy(as, s1, sizeof(int64_t) * (size_t)nd1);
    if (nd2 == 1)
        bs[0] = s2[0], bs[1] = 1;
    else
        memcpy(bs, s2, sizeof(int64_t) * (size_t)nd2);
    int nbat = (na > nb ? na : nb) - 2;
    int64_t bat[TT_MAX_DIMS], nbatch = 1;
    for (int d = 0; d < nbat; d++) {
        int ia = d - (nbat - (na - 2)), ib = d - (nbat - (nb - 2));
        int64_t x = ia >= 0 ? as[ia] : 1, y = ib >= 0 ? bs[ib] : 1;
        bat[d] = x == 1 ? y : x;
        nbatch *= bat[d];
    }
    int64_t n = as[na - 2], k = as[na - 1], m = bs[nb - 1];
    int ond = 0;
    for (int d = 0; d < nbat; d++)
        osz[ond++] = bat[d];
    if (nd1 >= 2)
        osz[ond++] = n;
    if (nd2 >= 2)
        osz[ond++] = m;
    double *o = calloc((size_t)(nbatch * n * m) + 1, sizeof(double));
    ck_assert_ptr_nonnull(o);
    for (int64_t bi = 0; bi < nbatch; bi++) {
        /* Offsets of this batch in A and B (broadcast dims index 0). */
        int64_t rem = bi, offa = 0, offb = 0, sta = n * k, stb = k * m;
        for (int d = nbat - 1; d >= 0; d--) {
            int64_t j = rem % bat[d];
            rem /= bat[d];
            int ia = d - (nbat - (na - 2)), ib = d - (nbat - (nb - 2));
            if (ia >= 0) {
                offa += (as[ia] == 1 ? 0 : j) * sta;
                sta *= as[ia];
            }
            if (ib >= 0) {
                offb += (bs[ib] == 1 ? 0 : j) * stb;
                stb *= bs[ib];
            }
        }
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < m; j++) {
                double acc = 0;
                for (int64_t q = 0; q < k; q++)
                    acc += A[offa + i * k + q] * B[offb + q * m + j];
                o[bi * n * m + i * m + j] = acc;
            }
    }
    *out = o;
    return ond;
}

/* The reference value as the dtype stores it: integers wrap. */
static double as_stored(double v, tt_dtype dt)
{
    switch (dt) {
    case TT_U8: return (double)(uint8_t)(int64_t)v;
    case TT_I32: return (double)(int32_t)(uint32_t)(int64_t)v;
    default: return v;
    }
}

/* Asserts r (the op's result) has shape (ond, osz), dtype dt, contiguous
 * strides and the reference values. */
static void check_result(const tt_tensor *r, tt_dtype dt, int ond, const int64_t *osz,
                         const double *ref, int64_t k, const char *what)
{
    ck_assert_msg(r != NULL, "%s: %s", what, tt_errmsg());
    ck_assert_msg(tt_ndim(r) == ond, "%s: ndim %d, expected %d", what, tt_ndim(r), ond);
    int64_t n = 1;
    for (int d = 0; d < ond; d++) {
        ck_assert_msg(tt_dim_size(r, d) == osz[d], "%s: size[%d] = %lld, expected %lld",
                      what, d, (long long)tt_dim_size(r, d), (long long)osz[d]);
        n *= osz[d];
    }
    ck_assert_int_eq(tt_dtype_of(r), dt);
    ck_assert_msg(tt_is_contiguous(r), "%s: output not contiguous", what);
    ck_assert_int_eq(tt_storage_offset(r), 0);
    double *got = tt_test_values(r);
    double tol = dt == TT_F32 ? 2e-5 * (double)(k + 1) : dt == TT_F64 ? 1e-12 * (double)(k + 1) : 0;
    /* Assert only on a mismatch: every passing Check assertion records its
     * location through a pipe, which is slow per element. */
    for (int64_t i = 0; i < n; i++) {
        double want = as_stored(ref[i], dt);
        if (!(fabs(got[i] - want) <= tol * (1 + fabs(want))))
            ck_abort_msg("%s: element %lld is %.9g, expected %.9g", what, (long long)i,
                         got[i], want);
    }
    free(got);
}

/* The op on fake copies of the inputs gives exactly the real output's
 * metadata. */
typedef tt_tensor *(*binary_op)(const tt_tensor *, const tt_tensor *);
static void check_fake(binary_op op, const tt_tensor *a, const tt_tensor *b,
                       const tt_tensor *real, const char *what)
{
    tt_tensor *fa = tt_fake_like(a), *fb = tt_fake_like(b);
    tt_tensor *f = op(fa, fb);
    tt_test_assert_fake_meta(f, real, what);
    tt_release(f);
    tt_release(fa);
    tt_release(fb);
}

/* Runs op(a, b) for a and b built in layouts la, lb and checks it against
 * the reference and the fake path. */
static void run_case(binary_op op, const char *opname, int nd1, const int64_t *s1,
                     layout la, int nd2, const int64_t *s2, layout lb, tt_dtype dt)
{
    char what[256];
    snprintf(what, sizeof what, "%s %s %dD(%s) x %dD(%s)", opname, tt_dtype_name(dt), nd1,
             layout_names[la], nd2, layout_names[lb]);
    tt_tensor *a = make(la, nd1, s1, dt), *b = make(lb, nd2, s2, dt);
    double *A = tt_test_values(a), *B = tt_test_values(b), *ref;
    int64_t osz[TT_MAX_DIMS + 1];
    int ond = ref_matmul(nd1, s1, A, nd2, s2, B, osz, &ref);
    tt_tensor *r = op(a, b);
    int64_t k = nd1 >= 1 ? s1[nd1 - 1] : 0;
    check_result(r, dt, ond, osz, ref, k, what);
    check_fake(op, a, b, r, what);
    tt_release(r);
    tt_release(a);
    tt_release(b);
    free(A);
    free(B);
    free(ref);
}

/* ------------------------------------------------------------------- mm */

static const int64_t mm_shapes[][3] = { /* n, k, m */
    {1, 1, 1}, {2, 3, 4}, {5, 7, 3}, {1, 9, 1}, {17, 1, 5}, {65, 33, 17},
    /* one output row or column: matrix-vector products (gemv) */
    {1, 7, 5}, {5, 7, 1}, {1, 1, 5}, {5, 1, 1}, {1, 300, 70}, {70, 300, 1},
    {1, 2000, 301}, /* rows split among threads */
    {3001, 64, 1}, {1, 64, 3001}, /* threads take shrinking runs of rows */
    {64, 64, 64}, {100, 80, 90}, {20, 70, 200}, {3, 0, 4}, {0, 3, 4}, {3, 4, 0},
};
#define NMM ((int)(sizeof mm_shapes / sizeof mm_shapes[0]))

START_TEST(test_mm_layouts)
{
    /* One dtype per _i, every shape and layout pair. */
    tt_dtype dt = dtypes[_i];
    for (int s = 0; s < NMM; s++) {
        const int64_t *sh = mm_shapes[s];
        bool big = sh[0] * sh[1] * sh[2] > 100000;
        for (int la = 0; la < L_BATCH; la++)
            for (int lb = 0; lb < L_BATCH; lb++) {
                if (big && la != lb && la != L_CONTIG && lb != L_CONTIG)
                    continue; /* keep the suite fast: the big shapes pair each layout with contig */
                run_case(tt_mm, "mm", 2, (const int64_t[]){sh[0], sh[1]}, (layout)la, 2,
                         (const int64_t[]){sh[1], sh[2]}, (layout)lb, dt);
            }
    }
}
END_TEST

START_TEST(test_mm_k0_gives_zeros)
{
    /* k == 0: a sum over nothing; the output must be zeros even when the
     * allocator hands back a block full of old values. */
    tt_tensor *junk = tt_full(TT_SHAPE(3, 4), 7, TT_F32);
    tt_release(junk);
    tt_tensor *a = tt_empty(TT_SHAPE(3, 0), TT_F32), *b = tt_empty(TT_SHAPE(0, 4), TT_F32);
    tt_tensor *r = tt_mm(a, b);
    ck_assert_ptr_nonnull(r);
    double v;
    for (int64_t i = 0; i < 3; i++)
        for (int64_t j = 0; j < 4; j++) {
            ck_assert_int_eq(tt_get(r, &v, i, j), TT_OK);
            ck_assert_double_eq(v, 0);
        }
    tt_release(r);
    tt_release(a);
    tt_release(b);
}
END_TEST

/* A transposed view reaches BLAS as a transpose, not a copy: the product
 * with it makes exactly the allocations of the product with a contiguous
 * operand (the output's), while a layout BLAS cannot take costs more. */
START_TEST(test_mm_transposed_view_not_copied)
{
    tt_dtype dt = _i ? TT_F64 : TT_F32;
    tt_tensor *a = tt_randn(TT_SHAPE(64, 48), dt);
    tt_tensor *b = tt_randn(TT_SHAPE(32, 48), dt);
    tt_tensor *bt = tt_t(b);                /* [48, 32], strides (1, 48) */
    tt_tensor *bc = tt_contiguous(bt);      /* [48, 32], strides (32, 1) */
    int64_t c0 = tt_debug_alloc_count();
    tt_tensor *r1 = tt_mm(a, bt);
    int64_t c1 = tt_debug_alloc_count();
    tt_tensor *r2 = tt_mm(a, bc);
    int64_t c2 = tt_debug_alloc_count();
    ck_assert_ptr_nonnull(r1);
    ck_assert_ptr_nonnull(r2);
    ck_assert_int_eq(c1 - c0, c2 - c1);
    /* The results agree, so the transposed operand was read as such. */
    double *v1 = tt_test_values(r1), *v2 = tt_test_values(r2);
    for (int i = 0; i < 64 * 32; i++)
        if (fabs(v1[i] - v2[i]) > 1e-4)
            ck_abort_msg("element %d: %g vs %g", i, v1[i], v2[i]);
    free(v1);
    free(v2);
    /* A column-stepped operand needs a copy: more allocations. */
    tt_tensor *wide = tt_randn(TT_SHAPE(48, 64), dt);
    tt_tensor *stepped = tt_slice(wide, 1, 0, 64, 2);
    int64_t c3 = tt_debug_alloc_count();
    tt_tensor *r3 = tt_mm(a, stepped);
    int64_t c4 = tt_debug_alloc_count();
    ck_assert_ptr_nonnull(r3);
    ck_assert_int_gt(c4 - c3, c1 - c0);
    /* linear passes a contiguous weight to BLAS as a transpose: the same
     * allocations as mm with its transposed view, with or without bias. */
    tt_tensor *bias = tt_randn(TT_SHAPE(32), dt);
    int64_t c6 = tt_debug_alloc_count();
    tt_tensor *l1 = tt_linear(a, b, NULL);
    int64_t c7 = tt_debug_alloc_count();
    tt_tensor *l2 = tt_linear(a, b, bias);
    int64_t c8 = tt_debug_alloc_count();
    ck_assert_ptr_nonnull(l1);
    ck_assert_ptr_nonnull(l2);
    ck_assert_int_eq(c7 - c6, c1 - c0);
    ck_assert_int_eq(c8 - c7, c1 - c0);
    /* Both operands transposed views: still only the output. */
    tt_tensor *a2 = tt_randn(TT_SHAPE(48, 64), dt), *a2t = tt_t(a2);
    int64_t c5 = tt_debug_alloc_count();
    tt_tensor *r4 = tt_mm(a2t, bt);
    ck_assert_int_eq(tt_debug_alloc_count() - c5, c1 - c0);
    ck_assert_ptr_nonnull(r4);
    tt_tensor *objs[] = {a, b, bt, bc, r1, r2, wide, stepped, r3, a2, a2t, r4, bias, l1, l2};
    for (size_t i = 0; i < sizeof objs / sizeof objs[0]; i++)
        tt_release(objs[i]);
}
END_TEST

/* GEMMs large enough for OpenBLAS to thread, alone and batched: the
 * user's OpenBLAS thread setting is left as it was, and the batches agree
 * with the single product. (The function is looked up at run time: the
 * suite does not link OpenBLAS itself.) */
START_TEST(test_mm_restores_blas_threads)
{
    void *sym = dlsym(RTLD_DEFAULT, "openblas_get_num_threads");
    ck_assert_ptr_nonnull(sym);
    int (*get)(void);
    memcpy(&get, &sym, sizeof get); /* ISO C has no object-to-function cast */
    int before = get();
    tt_tensor *a = tt_randn(TT_SHAPE(200, 150), TT_F32), *b = tt_randn(TT_SHAPE(150, 170), TT_F32);
    tt_tensor *b3 = tt_expand(b, TT_SHAPE(3, 150, 170));
    tt_tensor *r = tt_mm(a, b), *r3 = tt_matmul(a, b3);
    ck_assert_ptr_nonnull(r);
    ck_assert_ptr_nonnull(r3);
    ck_assert_int_eq(get(), before);
    /* The three batches (b broadcast: the same matrix) equal the mm. */
    double *v = tt_test_values(r), *v3 = tt_test_values(r3);
    for (int i = 0; i < 3 * 200 * 170; i++)
        if (fabs(v3[i] - v[i % (200 * 170)]) > 1e-4)
            ck_abort_msg("batch element %d: %g vs %g", i, v3[i], v[i % (200 * 170)]);
    free(v);
    free(v3);
    tt_release(a);
    tt_release(b);
    tt_release(b3);
    tt_release(r);
    tt_release(r3);
}
END_TEST

/* tt_set_num_threads gives OpenBLAS the same count (at its next GEMM);
 * 0 gives it back the count it started with. */
START_TEST(test_blas_follows_num_threads)
{
    void *sym = dlsym(RTLD_DEFAULT, "openblas_get_num_threads");
    ck_assert_ptr_nonnull(sym);
    int (*get)(void);
    memcpy(&get, &sym, sizeof get);
    int before = get();
    tt_tensor *a = tt_randn(TT_SHAPE(64, 64), TT_F32);
    for (int n = 1; n <= 2; n++) {
        tt_set_num_threads(n);
        tt_tensor *r = tt_mm(a, a);
        ck_assert_ptr_nonnull(r);
        ck_assert_int_eq(get(), n);
        tt_release(r);
    }
    tt_set_num_threads(0);
    tt_tensor *r = tt_mm(a, a);
    ck_assert_int_eq(get(), before);
    tt_release(r);
    tt_release(a);
}
END_TEST

/* Which kernels run is reported: the BLAS, its version, the core and why. */
START_TEST(test_blas_kernels_named)
{
    const char *k = tt_blas_kernels();
    ck_assert_ptr_nonnull(k);
    ck_assert_msg(strncmp(k, "OpenBLAS 0.", 11) == 0 && strstr(k, " kernels ("), "%s", k);
    const char *user = getenv("OPENBLAS_CORETYPE");
    if (user && *user)
        ck_assert_msg(strstr(k, "chosen by OPENBLAS_CORETYPE") != NULL, "%s", k);
    else
        ck_assert_msg(strstr(k, "detected by OpenBLAS") || strstr(k, "chosen by tensortrace"),
                      "%s", k);
}
END_TEST

/* ------------------------------------------------------------------ bmm */

static const int64_t bmm_shapes[][4] = { /* B, n, k, m */
    {1, 1, 1, 1}, {3, 2, 3, 4}, {4, 65, 33, 17}, {5, 8, 8, 8}, {200, 4, 5, 3},
    {40, 24, 24, 24}, /* small GEMMs spread over threads */
    {2, 0, 3, 4}, {2, 3, 0, 4}, {0, 2, 3, 4},
};
#define NBMM ((int)(sizeof bmm_shapes / sizeof bmm_shapes[0]))

START_TEST(test_bmm_layouts)
{
    tt_dtype dt = dtypes[_i];
    static const layout ls[] = {L_CONTIG, L_TRANS, L_ROWSTEP, L_COLSTEP, L_BATCH};
    for (int s = 0; s < NBMM; s++) {
        const int64_t *sh = bmm_shapes[s];
        for (size_t la = 0; la < sizeof ls / sizeof ls[0]; la++)
            for (size_t lb = 0; lb < sizeof ls / sizeof ls[0]; lb++)
                run_case(tt_bmm, "bmm", 3, (const int64_t[]){sh[0], sh[1], sh[2]}, ls[la], 3,
                         (const int64_t[]){sh[0], sh[2], sh[3]}, ls[lb], dt);
    }
}
END_TEST

/* ---------------------------------------------------------------- matmul */

typedef struct {
    int nd1;
    int64_t s1[4];
    int nd2;
    int64_t s2[4];
} mm_case;

static const mm_case matmul_cases[] = {
    {1, {3}, 1, {3}},                  /* dot -> 0-dim */
    {1, {1}, 1, {1}},
    {1, {0}, 1, {0}},                  /* empty dot -> 0 */
    {1, {40}, 1, {40}},
    {2, {2, 3}, 1, {3}},               /* mv */
    {1, {3}, 2, {3, 4}},               /* vector x matrix */
    {2, {2, 3}, 2, {3, 4}},
    {2, {65, 33}, 2, {33, 17}},
    {3, {2, 5, 3}, 1, {3}},            /* folded mv */
    {1, {3}, 3, {2, 3, 4}},            /* vector x batch (transposed fold) */
    {3, {2, 5, 3}, 2, {3, 4}},         /* folded mm */
    {3, {3, 65, 33}, 2, {33, 17}},
    {2, {5, 3}, 3, {2, 3, 4}},         /* matrix x batch: broadcast self */
    {4, {2, 1, 5, 3}, 3, {3, 3, 4}},   /* batch dims broadcast both ways */
    {3, {1, 5, 3}, 3, {2, 3, 4}},
    {4, {4, 2, 5, 3}, 4, {4, 2, 3, 6}},
    {3, {2, 0, 3}, 2, {3, 4}},         /* empty rows */
    {3, {2, 5, 0}, 2, {0, 4}},         /* k == 0 */
    {3, {0, 5, 3}, 3, {1, 3, 4}},      /* empty batch */
    {4, {3, 1, 4, 6}, 1, {6}},
};
#define NMATMUL ((int)(sizeof matmul_cases / sizeof matmul_cases[0]))

START_TEST(test_matmul_cases)
{
    tt_dtype dt = dtypes[_i];
    static const layout ls[] = {L_CONTIG, L_TRANS, L_ROWSTEP, L_COLSTEP, L_TRANS_LD, L_BATCH};
    for (int c = 0; c < NMATMUL; c++) {
        const mm_case *mc = &matmul_cases[c];
        for (size_t la = 0; la < sizeof ls / sizeof ls[0]; la++)
            for (size_t lb = 0; lb < sizeof ls / sizeof ls[0]; lb++)
                run_case(tt_matmul, "matmul", mc->nd1, mc->s1, ls[la], mc->nd2, mc->s2, ls[lb], dt);
    }
}
END_TEST

START_TEST(test_matmul_dot_is_0dim)
{
    tt_tensor *a = tt_from_data(TT_SHAPE(3), TT_I64, (const int64_t[]){1, 2, 3});
    tt_tensor *b = tt_from_data(TT_SHAPE(3), TT_I64, (const int64_t[]){4, 5, 6});
    tt_tensor *r = tt_matmul(a, b);
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(tt_ndim(r), 0);
    double v;
    ck_assert_int_eq(tt_item(r, &v), TT_OK);
    ck_assert_double_eq(v, 32);
    tt_release(r);
    tt_release(a);
    tt_release(b);
}
END_TEST

/* ---------------------------------------------------------------- linear */

typedef struct {
    int ndx;
    int64_t x[3];
    int ndw;
    int64_t w[2];
    int ndb; /* -1: no bias */
    int64_t b[1];
} lin_case;

static const lin_case lin_cases[] = {
    {2, {4, 3}, 2, {6, 3}, -1, {0}},
    {2, {4, 3}, 2, {6, 3}, 1, {6}},
    {2, {4, 3}, 2, {6, 3}, 1, {1}},
    {2, {4, 3}, 2, {6, 3}, 0, {0}},    /* 0-dim bias */
    {3, {2, 5, 3}, 2, {6, 3}, 1, {6}}, /* folded batch */
    {1, {3}, 2, {6, 3}, 1, {6}},       /* 1-d input */
    {2, {4, 3}, 1, {3}, 0, {0}},       /* 1-d weight */
    {2, {0, 3}, 2, {6, 3}, 1, {6}},
    {2, {4, 0}, 2, {6, 0}, 1, {6}},    /* in_features 0: the bias alone */
    {2, {65, 33}, 2, {17, 33}, 1, {17}},
};
#define NLIN ((int)(sizeof lin_cases / sizeof lin_cases[0]))

START_TEST(test_linear_cases)
{
    tt_dtype dt = dtypes[_i];
    static const layout lx[] = {L_CONTIG, L_TRANS, L_COLSTEP};
    for (int c = 0; c < NLIN; c++) {
        const lin_case *lc = &lin_cases[c];
        for (size_t l1 = 0; l1 < 3; l1++)
            for (int wl = 0; wl < 3; wl++) {
                char what[160];
                snprintf(what, sizeof what, "linear %s case %d x(%s) w(%d)", tt_dtype_name(dt),
                         c, layout_names[lx[l1]], wl);
                tt_tensor *x = make(lx[l1], lc->ndx, lc->x, dt);
                /* weight: contiguous (reaches BLAS transposed), a transposed
                 * view (reaches it row-major), or column-stepped (copied). */
                tt_tensor *w = make(wl == 0 ? L_CONTIG : wl == 1 ? L_TRANS : L_COLSTEP,
                                    lc->ndw, lc->w, dt);
                tt_tensor *bias = lc->ndb < 0 ? NULL : make(L_CONTIG, lc->ndb, lc->b, dt);
                double *X = tt_test_values(x), *W = tt_test_values(w), *Bv = bias ? tt_test_values(bias) : NULL;
                /* reference: x @ w^T (+ bias) */
                int64_t out_f = lc->ndw == 2 ? lc->w[0] : 1, in_f = lc->w[lc->ndw - 1];
                double *WT = malloc(sizeof(double) * (size_t)(out_f * in_f + 1));
                for (int64_t o = 0; o < out_f; o++)
                    for (int64_t i = 0; i < in_f; i++)
                        WT[i * out_f + o] = W[o * in_f + i];
                int64_t wts[2] = {in_f, out_f}, osz[TT_MAX_DIMS + 1];
                double *ref;
                int ond = ref_matmul(lc->ndx, lc->x, X, lc->ndw, wts, WT, osz, &ref);
                int64_t n = 1;
                for (int d = 0; d < ond; d++)
                    n *= osz[d];
                for (int64_t i = 0; bias && i < n; i++) {
                    int64_t bn = lc->ndb == 0 ? 1 : lc->b[0];
                    ref[i] += Bv[bn == 1 ? 0 : i % bn];
                }
                tt_tensor *r = tt_linear(x, w, bias);
                check_result(r, dt, ond, osz, ref, in_f, what);
                /* fake */
                tt_tensor *fx = tt_fake_like(x), *fw = tt_fake_like(w);
                tt_tensor *fbias = bias ? tt_fake_like(bias) : NULL;
                tt_tensor *f = tt_linear(fx, fw, fbias);
                tt_test_assert_fake_meta(f, r, what);
                tt_tensor *objs[] = {f, fx, fw, fbias, r, x, w, bias};
                for (size_t i = 0; i < sizeof objs / sizeof objs[0]; i++)
                    tt_release(objs[i]);
                free(X);
                free(W);
                free(Bv);
                free(WT);
                free(ref);
            }
    }
}
END_TEST

/* The boxed kernels (the dispatcher's path) give what the typed fast path
 * gives; linear's bias defaults to None. */
START_TEST(test_boxed_calls)
{
    tt_tensor *x = tt_randn(TT_SHAPE(4, 3), TT_F64), *w = tt_randn(TT_SHAPE(5, 3), TT_F64);
    tt_tensor *b = tt_randn(TT_SHAPE(5), TT_F64), *wt = tt_t(w);
    tt_tensor *direct = tt_linear(x, w, NULL), *direct_b = tt_linear(x, w, b);
    tt_tensor *boxed = tt_call(tt_op_find("tt::linear"), tt_v_tensor(x), tt_v_tensor(w));
    tt_tensor *boxed_b = tt_call(tt_op_find("tt::linear"), tt_v_tensor(x), tt_v_tensor(w),
                                 tt_v_tensor(b));
    tt_tensor *mm = tt_call(tt_op_find("tt::mm"), tt_v_tensor(x), tt_v_tensor(wt));
    tt_tensor *mat = tt_call(tt_op_find("tt::matmul"), tt_v_tensor(x), tt_v_tensor(wt));
    tt_tensor *x3 = tt_unsqueeze(x, 0), *wt3 = tt_unsqueeze(wt, 0);
    tt_tensor *bmm = tt_call(tt_op_find("tt::bmm"), tt_v_tensor(x3), tt_v_tensor(wt3));
    ck_assert_ptr_nonnull(boxed);
    ck_assert_ptr_nonnull(boxed_b);
    ck_assert_ptr_nonnull(mm);
    ck_assert_ptr_nonnull(mat);
    ck_assert_ptr_nonnull(bmm);
    double *v0 = tt_test_values(direct), *v1 = tt_test_values(boxed), *v2 = tt_test_values(mm), *v3 = tt_test_values(mat);
    double *v4 = tt_test_values(bmm), *v5 = tt_test_values(direct_b), *v6 = tt_test_values(boxed_b);
    for (int i = 0; i < 20; i++) {
        ck_assert_double_eq(v0[i], v1[i]);
        ck_assert_double_eq(v0[i], v2[i]);
        ck_assert_double_eq(v0[i], v3[i]);
        ck_assert_double_eq(v0[i], v4[i]);
        ck_assert_double_eq(v5[i], v6[i]);
        ck_assert_double_eq_tol(v5[i] - v0[i], 0, 100); /* bias added somewhere */
    }
    bool differs = false;
    for (int i = 0; i < 20; i++)
        differs = differs || v5[i] != v0[i];
    ck_assert(differs);
    double *vs[] = {v0, v1, v2, v3, v4, v5, v6};
    for (size_t i = 0; i < 7; i++)
        free(vs[i]);
    tt_tensor *objs[] = {x, w, b, wt, direct, direct_b, boxed, boxed_b, mm, mat, x3, wt3, bmm};
    for (size_t i = 0; i < sizeof objs / sizeof objs[0]; i++)
        tt_release(objs[i]);
}
END_TEST

/* Fake inputs with a symbolic size give a symbolic output size. */
START_TEST(test_fake_symbolic)
{
    tt_sym_reset();
    tt_size s0 = tt_sym_new("s", 7);
    tt_tensor *a = tt_fake_empty(2, (const tt_size[]){s0, 3}, TT_F32);
    tt_tensor *b = tt_fake_empty(2, (const tt_size[]){3, 4}, TT_F32);
    tt_tensor *r = tt_mm(a, b);
    ck_assert_ptr_nonnull(r);
    ck_assert(tt_is_fake(r));
    ck_assert_int_eq(tt_dim_size(r, 0), s0);
    ck_assert_int_eq(tt_dim_size(r, 1), 4);
    ck_assert_int_eq(tt_dim_stride(r, 0), 4);
    tt_tensor *a3 = tt_fake_empty(3, (const tt_size[]){2, s0, 3}, TT_F32);
    tt_tensor *r3 = tt_matmul(a3, b);
    ck_assert_ptr_nonnull(r3);
    ck_assert_int_eq(tt_dim_size(r3, 1), s0);
    ck_assert_int_eq(tt_dim_stride(r3, 0), tt_sym_mul(s0, 4));
    tt_tensor *bad = tt_fake_empty(2, (const tt_size[]){4, 4}, TT_F32);
    ck_assert_ptr_null(tt_mm(a, bad));
    ck_assert_error(TT_ESHAPE, "tt::mm: argument 'mat2' (#2): mat1 and mat2 shapes cannot "
                               "be multiplied (s0x3 and 4x4)");
    tt_release(a);
    tt_release(b);
    tt_release(r);
    tt_release(a3);
    tt_release(r3);
    tt_release(bad);
    tt_sym_reset();
}
END_TEST

/* Every allocation of a product that copies an operand can fail; each
 * failure is reported and leaks nothing (the fixture counts). */
START_TEST(test_out_of_memory)
{
    tt_tensor *a = tt_randn(TT_SHAPE(8, 6), TT_F32);
    tt_tensor *wide = tt_randn(TT_SHAPE(6, 10), TT_F32);
    tt_tensor *b = tt_slice(wide, 1, 0, 10, 2); /* needs a copy */
    tt_tensor *w = tt_randn(TT_SHAPE(5, 6), TT_F32), *bias = tt_randn(TT_SHAPE(5), TT_F32);
    for (int op = 0; op < 2; op++) {
        int failures = 0;
        for (int n = 1; n < 20; n++) {
            tt_debug_fail_alloc(n);
            tt_tensor *r = op == 0 ? tt_mm(a, b) : tt_linear(a, w, bias);
            tt_debug_fail_alloc(0);
            if (r) {
                tt_release(r);
                break;
            }
            ck_assert_error(TT_ENOMEM, "out of memory");
            failures++;
        }
        ck_assert_int_ge(failures, op == 0 ? 2 : 1); /* the output (and the copy) */
    }
    tt_tensor *objs[] = {a, wide, b, w, bias};
    for (size_t i = 0; i < 5; i++)
        tt_release(objs[i]);
}
END_TEST

/* ---------------------------------------------------------------- errors */

static tt_tensor *T(int nd, const int64_t *s, tt_dtype dt) { return tt_zeros(nd, s, dt); }

/* Runs `expr`, which must fail with `code` and `msg`, on real and then on
 * fake versions of a, b (and c: linear's bias, may be NULL). */
typedef tt_tensor *(*ternary_op)(const tt_tensor *, const tt_tensor *, const tt_tensor *);
static tt_tensor *mm3(const tt_tensor *a, const tt_tensor *b, const tt_tensor *c) { (void)c; return tt_mm(a, b); }
static tt_tensor *bmm3(const tt_tensor *a, const tt_tensor *b, const tt_tensor *c) { (void)c; return tt_bmm(a, b); }
static tt_tensor *matmul3(const tt_tensor *a, const tt_tensor *b, const tt_tensor *c) { (void)c; return tt_matmul(a, b); }

static void expect_error(ternary_op op, tt_tensor *a, tt_tensor *b, tt_tensor *c,
                         tt_status code, const char *msg)
{
    for (int fake = 0; fake < 2; fake++) {
        tt_tensor *x = fake ? tt_fake_like(a) : tt_retain(a);
        tt_tensor *y = fake ? tt_fake_like(b) : tt_retain(b);
        tt_tensor *z = c ? (fake ? tt_fake_like(c) : tt_retain(c)) : NULL;
        tt_clear_error();
        tt_tensor *r = op(x, y, z);
        ck_assert_msg(r == NULL, "expected failure: %s", msg);
        ck_assert_error(code, msg);
        tt_release(x);
        tt_release(y);
        tt_release(z);
    }
    tt_release(a);
    tt_release(b);
    tt_release(c);
}

START_TEST(test_errors_mm)
{
    expect_error(mm3, T(TT_SHAPE(2, 3, 4), TT_F32), T(TT_SHAPE(4, 5), TT_F32), NULL, TT_ESHAPE,
                 "tt::mm: argument 'self' (#1): self must be a matrix");
    expect_error(mm3, T(TT_SHAPE(2, 3), TT_F32), T(TT_SHAPE(3), TT_F32), NULL, TT_ESHAPE,
                 "tt::mm: argument 'mat2' (#2): mat2 must be a matrix");
    expect_error(mm3, T(TT_SHAPE(2, 3), TT_F32), T(TT_SHAPE(4, 5), TT_F32), NULL, TT_ESHAPE,
                 "tt::mm: argument 'mat2' (#2): mat1 and mat2 shapes cannot be multiplied "
                 "(2x3 and 4x5)");
    expect_error(mm3, T(TT_SHAPE(2, 3), TT_F32), T(TT_SHAPE(3, 5), TT_F64), NULL, TT_EDTYPE,
                 "tt::mm: argument 'mat2' (#2): expected m1 and m2 to have the same dtype, "
                 "but got: float != double");
    expect_error(mm3, T(TT_SHAPE(2, 3), TT_I64), T(TT_SHAPE(3, 5), TT_I32), NULL, TT_EDTYPE,
                 "but got: long int != int");
    expect_error(mm3, T(TT_SHAPE(2, 3), TT_BOOL), T(TT_SHAPE(3, 5), TT_BOOL), NULL, TT_EDTYPE,
                 "tt::mm: argument 'self' (#1): matrix products are not implemented for "
                 "bool tensors");
    tt_tensor *a = T(TT_SHAPE(2, 3), TT_F32);
    tt_clear_error(); /* the errors above were handled: a NULL now is a new mistake */
    ck_assert_ptr_null(tt_mm(a, NULL));
    ck_assert_error(TT_EINVAL, "tt::mm: argument 'mat2' (#2) expects Tensor, got NULL");
    ck_assert_ptr_null(tt_mm(NULL, a));
    ck_assert_error(TT_EINVAL, "tt::mm: argument 'self' (#1) expects Tensor, got NULL");
    tt_release(a);
}
END_TEST

START_TEST(test_errors_bmm)
{
    expect_error(bmm3, T(TT_SHAPE(2, 3), TT_F32), T(TT_SHAPE(2, 3, 4), TT_F32), NULL, TT_ESHAPE,
                 "tt::bmm: argument 'self' (#1): batch1 must be a 3D tensor");
    expect_error(bmm3, T(TT_SHAPE(2, 2, 3), TT_F32), T(TT_SHAPE(1, 2, 3, 4), TT_F32), NULL,
                 TT_ESHAPE, "tt::bmm: argument 'mat2' (#2): batch2 must be a 3D tensor");
    expect_error(bmm3, T(TT_SHAPE(2, 5, 3), TT_F32), T(TT_SHAPE(2, 4, 6), TT_F32), NULL,
                 TT_ESHAPE, "tt::bmm: argument 'mat2' (#2): Expected size for first two "
                            "dimensions of batch2 tensor to be: [2, 3] but got: [2, 4].");
    expect_error(bmm3, T(TT_SHAPE(2, 5, 3), TT_F32), T(TT_SHAPE(1, 3, 6), TT_F32), NULL,
                 TT_ESHAPE, "to be: [2, 3] but got: [1, 3].");
    expect_error(bmm3, T(TT_SHAPE(2, 5, 3), TT_F64), T(TT_SHAPE(2, 3, 6), TT_F32), NULL,
                 TT_EDTYPE, "tt::bmm: argument 'mat2' (#2): expected m1 and m2 to have the "
                            "same dtype, but got: double != float");
}
END_TEST

START_TEST(test_errors_matmul)
{
    expect_error(matmul3, T(0, NULL, TT_F32), T(TT_SHAPE(2, 3), TT_F32), NULL, TT_ESHAPE,
                 "tt::matmul: argument 'self' (#1): both arguments to matmul need to be at "
                 "least 1D, but they are 0D and 2D");
    expect_error(matmul3, T(TT_SHAPE(3), TT_F32), T(0, NULL, TT_F32), NULL, TT_ESHAPE,
                 "tt::matmul: argument 'other' (#2): both arguments to matmul need to be at "
                 "least 1D, but they are 1D and 0D");
    expect_error(matmul3, T(TT_SHAPE(3), TT_F32), T(TT_SHAPE(4), TT_F32), NULL, TT_ESHAPE,
                 "tt::matmul: argument 'other' (#2): inconsistent tensor size, expected tensor "
                 "[3] and src [4] to have the same number of elements, but got 3 and 4 "
                 "elements respectively");
    expect_error(matmul3, T(TT_SHAPE(2, 3), TT_F32), T(TT_SHAPE(4), TT_F32), NULL, TT_ESHAPE,
                 "tt::matmul: argument 'other' (#2): size mismatch, got input (2), mat (2x3), "
                 "vec (4)");
    expect_error(matmul3, T(TT_SHAPE(2, 5, 3), TT_F32), T(TT_SHAPE(4), TT_F32), NULL, TT_ESHAPE,
                 "size mismatch, got input (10), mat (10x3), vec (4)");
    expect_error(matmul3, T(TT_SHAPE(3), TT_F32), T(TT_SHAPE(4, 5), TT_F32), NULL, TT_ESHAPE,
                 "tt::matmul: argument 'other' (#2): mat1 and mat2 shapes cannot be multiplied "
                 "(1x3 and 4x5)");
    expect_error(matmul3, T(TT_SHAPE(2, 5, 3), TT_F32), T(TT_SHAPE(4, 6), TT_F32), NULL,
                 TT_ESHAPE, "mat1 and mat2 shapes cannot be multiplied (10x3 and 4x6)");
    expect_error(matmul3, T(TT_SHAPE(2, 5, 3), TT_F32), T(TT_SHAPE(2, 4, 6), TT_F32), NULL,
                 TT_ESHAPE, "tt::matmul: argument 'other' (#2): Expected size for first two "
                            "dimensions of batch2 tensor to be: [2, 3] but got: [2, 4].");
    expect_error(matmul3, T(TT_SHAPE(2, 5, 3), TT_F32), T(TT_SHAPE(3, 3, 4), TT_F32), NULL,
                 TT_ESHAPE, "tt::matmul: argument 'other' (#2): The size of tensor a (2) must "
                            "match the size of tensor b (3) at non-singleton dimension 0");
    expect_error(matmul3, T(TT_SHAPE(2, 3), TT_F64), T(TT_SHAPE(3), TT_F32), NULL, TT_EDTYPE,
                 "tt::matmul: argument 'other' (#2): expected m1 and m2 to have the same "
                 "dtype, but got: double != float");
    expect_error(matmul3, T(TT_SHAPE(3), TT_U8), T(TT_SHAPE(3), TT_BOOL), NULL, TT_EDTYPE,
                 "tt::matmul: argument 'other' (#2): matrix products are not implemented for "
                 "bool tensors");
}
END_TEST

START_TEST(test_errors_linear)
{
    expect_error(tt_linear, T(TT_SHAPE(2, 3), TT_F32), T(TT_SHAPE(5, 4), TT_F32), NULL,
                 TT_ESHAPE, "tt::linear: argument 'weight' (#2): mat1 and mat2 shapes cannot "
                            "be multiplied (2x3 and 4x5)");
    expect_error(tt_linear, T(TT_SHAPE(2, 2, 3), TT_F32), T(TT_SHAPE(5, 4), TT_F32), NULL,
                 TT_ESHAPE, "(4x3 and 4x5)");
    expect_error(tt_linear, T(TT_SHAPE(2, 3), TT_F32), T(TT_SHAPE(1, 5, 3), TT_F32), NULL,
                 TT_ESHAPE, "tt::linear: argument 'weight' (#2): weight must be a matrix "
                            "[out_features, in_features] or a vector, got a 3D tensor");
    expect_error(tt_linear, T(0, NULL, TT_F32), T(TT_SHAPE(5, 3), TT_F32), NULL, TT_ESHAPE,
                 "tt::linear: argument 'input' (#1): both arguments to matmul need to be at "
                 "least 1D, but they are 0D and 2D");
    expect_error(tt_linear, T(TT_SHAPE(2, 3), TT_F32), T(TT_SHAPE(5, 3), TT_F64), NULL,
                 TT_EDTYPE, "tt::linear: argument 'weight' (#2): expected m1 and m2 to have "
                            "the same dtype, but got: float != double");
    expect_error(tt_linear, T(TT_SHAPE(2, 3), TT_F32), T(TT_SHAPE(5, 3), TT_F32),
                 T(TT_SHAPE(5), TT_F64), TT_EDTYPE,
                 "tt::linear: argument 'bias' (#3): expected bias to have the same dtype as "
                 "input, but got: double != float");
    expect_error(tt_linear, T(TT_SHAPE(2, 3), TT_F32), T(TT_SHAPE(6, 3), TT_F32),
                 T(TT_SHAPE(5), TT_F32), TT_ESHAPE,
                 "tt::linear: argument 'bias' (#3): shape [5] is not broadcastable to the "
                 "output shape [2, 6]");
    expect_error(tt_linear, T(TT_SHAPE(3), TT_F32), T(TT_SHAPE(6, 3), TT_F32),
                 T(TT_SHAPE(1, 6), TT_F32), TT_ESHAPE,
                 "shape [1, 6] is not broadcastable to the output shape [6]");
    tt_tensor *w = T(TT_SHAPE(5, 3), TT_F32);
    tt_clear_error(); /* the errors above were handled: a NULL now is a new mistake */
    ck_assert_ptr_null(tt_linear(NULL, w, NULL));
    ck_assert_error(TT_EINVAL, "tt::linear: argument 'input' (#1) expects Tensor, got NULL");
    tt_release(w);
}
END_TEST

static Suite *linalg_suite(void)
{
    Suite *s = suite_create("ops_linalg");
    TCase *tc = tt_tcase("mm");
    tcase_add_loop_test(tc, test_mm_layouts, 0, NDTYPES);
    tcase_add_test(tc, test_mm_k0_gives_zeros);
    tcase_add_loop_test(tc, test_mm_transposed_view_not_copied, 0, 2);
    tcase_add_test(tc, test_mm_restores_blas_threads);
    tcase_add_test(tc, test_blas_follows_num_threads);
    tcase_add_test(tc, test_blas_kernels_named);
    suite_add_tcase(s, tc);
    tc = tt_tcase("bmm");
    tcase_add_loop_test(tc, test_bmm_layouts, 0, NDTYPES);
    suite_add_tcase(s, tc);
    tc = tt_tcase("matmul");
    tcase_add_loop_test(tc, test_matmul_cases, 0, NDTYPES);
    tcase_add_test(tc, test_matmul_dot_is_0dim);
    suite_add_tcase(s, tc);
    tc = tt_tcase("linear");
    tcase_add_loop_test(tc, test_linear_cases, 0, NDTYPES);
    tcase_add_test(tc, test_boxed_calls);
    suite_add_tcase(s, tc);
    tc = tt_tcase("meta");
    tcase_add_test(tc, test_fake_symbolic);
    tcase_add_test(tc, test_out_of_memory);
    suite_add_tcase(s, tc);
    tc = tt_tcase("errors");
    tcase_add_test(tc, test_errors_mm);
    tcase_add_test(tc, test_errors_bmm);
    tcase_add_test(tc, test_errors_matmul);
    tcase_add_test(tc, test_errors_linear);
    suite_add_tcase(s, tc);
    return s;
}

TT_TEST_MAIN(linalg_suite)
