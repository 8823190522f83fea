/* gather, scatter, index_select, index_copy/add, slice/select_scatter and
 * diagonal (issue 27, ops/indexing.c): what the differential file
 * (tests/data/torch_ref.txt) cannot say. Values against plain loops in the
 * test over dims and layouts, large enough to run in parallel; gradcheck
 * of every derivative in f64; every error path's status and message; a
 * failing in-place call that leaves its target as it was; repeated
 * positions of scatter_add, scatter_reduce and index_add combined in index
 * order, the same bits on 1 and 2 threads; a traced + compiled run with a
 * symbolic batch size equal to eager, backward included; index_copy_ kept
 * by a compiled graph (a KV cache's write); diagonal a view sharing its
 * base's storage and version; symbolic sizes through the fake path; zero
 * live tensors at the end of each test (the fixture checks). */
#include "tt_test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        if (!(cond))                                                           \
            ck_abort_msg(__VA_ARGS__);                                         \
    } while (0)

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static int64_t numel_of(int nd, const int64_t *sizes)
{
    int64_t n = 1;
    for (int d = 0; d < nd; d++)
        n *= sizes[d];
    return n;
}

/* Distinct values in a scrambled order (no ties: amax's gradient is then
 * defined, and no zeros: prod's), as f64 converted to dt. */
static tt_tensor *values(int nd, const int64_t *sizes, tt_dtype dt)
{
    int64_t n = numel_of(nd, sizes);
    double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++)
        v[i] = (double)((i * 7919) % (n * 2 + 1)) / 8.0 - (double)n / 8.0 - 0.0625;
    tt_tensor *t = NN(tt_from_data(nd, sizes, TT_F64, v));
    free(v);
    tt_tensor *r = NN(tt_to_dtype(t, dt));
    tt_release(t);
    return r;
}

/* i64 indices in [0, bound), random (repeats likely). */
static tt_tensor *rand_index(int nd, const int64_t *sizes, int64_t bound)
{
    int64_t n = numel_of(nd, sizes);
    int64_t *v = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++)
        v[i] = (int64_t)(rng() % (uint64_t)bound);
    tt_tensor *t = NN(tt_from_data(nd, sizes, TT_I64, v));
    free(v);
    return t;
}

/* [rows, k] i64: each row k distinct values of [0, bound) (a shuffle's
 * first k), so scatter's positions never collide within a row. */
static tt_tensor *row_perm_index(int64_t rows, int64_t k, int64_t bound)
{
    int64_t *v = malloc(sizeof(int64_t) * (size_t)(rows * k + 1));
    int64_t *p = malloc(sizeof(int64_t) * (size_t)bound);
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t i = 0; i < bound; i++)
            p[i] = i;
        for (int64_t i = 0; i < k; i++) {
            int64_t j = i + (int64_t)(rng() % (uint64_t)(bound - i)), t = p[i];
            p[i] = p[j], p[j] = t;
            v[r * k + i] = p[i];
        }
    }
    tt_tensor *t = NN(tt_from_data(2, (int64_t[]){rows, k}, TT_I64, v));
    free(v);
    free(p);
    return t;
}

static tt_tensor *i64s(int n, const int64_t *v)
{
    return NN(tt_from_data(1, (int64_t[]){n}, TT_I64, v));
}

/* ---------------------------------------------------- values vs loops */

/* Element at logical coordinates c of any-strided t, as double. */
static double at(const tt_tensor *t, const int64_t *c)
{
    int64_t off = 0;
    for (int d = 0; d < tt_ndim(t); d++)
        off += c[d] * tt_strides(t)[d];
    const char *p = tt_data(t);
    switch (tt_dtype_of(t)) {
    case TT_F64: return ((const double *)p)[off];
    case TT_F32: return ((const float *)p)[off];
    case TT_I64: return (double)((const int64_t *)p)[off];
    default: ck_abort_msg("at(): dtype"); return 0;
    }
}

/* The coordinates of element i of sizes (row-major). */
static void coords(int nd, const int64_t *sizes, int64_t i, int64_t *c)
{
    for (int d = nd - 1; d >= 0; d--) {
        c[d] = i % sizes[d];
        i /= sizes[d];
    }
}

/* The unit-step paths (gather, scatter, scatter_add along a last dim
 * contiguous everywhere, i64 index) in f32, f64 and i32, rows long enough
 * for the row prefetch (3000 elements), against loops; scatter_add's
 * repeated positions summed in increasing order. */
START_TEST(test_last_dim_unit_paths)
{
    const tt_dtype dts[3] = {TT_F32, TT_F64, TT_I32};
    const int64_t sizes[2] = {5, 3000}, isz[2] = {5, 2500};
    for (int di = 0; di < 3; di++) {
        tt_dtype dt = dts[di];
        tt_tensor *self = values(2, sizes, dt), *src = values(2, isz, dt);
        tt_tensor *idx = rand_index(2, isz, sizes[1]);
        tt_tensor *uniq = row_perm_index(5, 2500, sizes[1]);
        tt_tensor *g = NN(tt_gather(self, 1, idx));
        tt_tensor *sc = NN(tt_scatter(self, 1, uniq, src));
        tt_tensor *sa = dt == TT_I32 ? NULL : NN(tt_scatter_add(self, 1, idx, src));
        double *sv = tt_test_values(self), *srv = tt_test_values(src), *gv = tt_test_values(g);
        double *scv = tt_test_values(sc), *sav = sa ? tt_test_values(sa) : NULL;
        double *want_sc = tt_test_values(self), *want_sa = tt_test_values(self);
        const int64_t *ip = tt_data(idx), *up = tt_data(uniq);
        for (int64_t r = 0; r < 5; r++)
            for (int64_t j = 0; j < 2500; j++) {
                int64_t k = ip[r * 2500 + j];
                CHECK(gv[r * 2500 + j] == sv[r * 3000 + k], "%s gather [%lld, %lld]",
                      tt_dtype_name(dt), (long long)r, (long long)j);
                want_sc[r * 3000 + up[r * 2500 + j]] = srv[r * 2500 + j];
                want_sa[r * 3000 + k] = dt == TT_F32
                    ? (double)((float)want_sa[r * 3000 + k] + (float)srv[r * 2500 + j])
                    : want_sa[r * 3000 + k] + srv[r * 2500 + j];
            }
        for (int64_t i = 0; i < 5 * 3000; i++) {
            CHECK(scv[i] == want_sc[i], "%s scatter element %lld", tt_dtype_name(dt),
                  (long long)i);
            if (sav)
                CHECK(sav[i] == want_sa[i], "%s scatter_add element %lld: %g vs %g",
                      tt_dtype_name(dt), (long long)i, sav[i], want_sa[i]);
        }
        free(sv), free(srv), free(gv), free(scv), free(sav), free(want_sc), free(want_sa);
        tt_release(g), tt_release(sc), tt_release(sa), tt_release(idx), tt_release(uniq);
        tt_release(self), tt_release(src);
    }
    /* gather along dim 0 by an index naming whole rows (copied as rows),
     * one of them with its last element naming another row */
    const int64_t xs[2] = {7, 3000};
    tt_tensor *x = values(2, xs, TT_F32);
    int64_t *iv = malloc(sizeof *iv * 5 * 3000);
    for (int64_t i = 0; i < 5 * 3000; i++)
        iv[i] = (i / 3000 * 3) % 7;
    iv[2 * 3000 + 2999] = 1;
    tt_tensor *ri = NN(tt_from_data(TT_SHAPE(5, 3000), TT_I64, iv));
    tt_tensor *g = NN(tt_gather(x, 0, ri));
    double *xv = tt_test_values(x), *gv = tt_test_values(g);
    for (int64_t i = 0; i < 5 * 3000; i++)
        CHECK(gv[i] == xv[iv[i] * 3000 + i % 3000], "row gather element %lld", (long long)i);
    free(xv), free(gv), free(iv);
    tt_release(g), tt_release(ri), tt_release(x);
}
END_TEST

/* The bounds check of a large index runs in parallel and still names the
 * first value out of range (here two, in different chunks). */
START_TEST(test_index_check_names_first_bad)
{
    const int64_t n = 200000;
    int64_t *iv = calloc((size_t)n, sizeof *iv);
    iv[70000] = 99, iv[150000] = 77;
    tt_tensor *idx = NN(tt_from_data(TT_SHAPE(n), TT_I64, iv));
    tt_tensor *x = NN(tt_zeros(TT_SHAPE(5), TT_F32));
    ck_assert_ptr_null(tt_gather(x, 0, idx));
    ck_assert_int_eq(tt_errcode(), TT_EINVAL);
    ck_assert_msg(strstr(tt_errmsg(), "index 99 is out of bounds for dimension 0 with size 5"),
                  "message: %s", tt_errmsg());
    tt_clear_error();
    tt_release(x), tt_release(idx);
    free(iv);
    /* a row gather along dim 0 checks its values as it copies, cut into
     * row ranges across threads: still the first bad value (row 100) */
    const int64_t rows = 400, cols = 500;
    iv = calloc((size_t)(rows * cols), sizeof *iv);
    iv[300 * cols + 10] = 99, iv[100 * cols + 480] = 77, iv[100 * cols + 481] = -3;
    idx = NN(tt_from_data(TT_SHAPE(rows, cols), TT_I64, iv));
    x = NN(tt_zeros(TT_SHAPE(5, cols), TT_F32));
    ck_assert_ptr_null(tt_gather(x, 0, idx));
    ck_assert_int_eq(tt_errcode(), TT_EINVAL);
    ck_assert_msg(strstr(tt_errmsg(), "tt::gather: argument 'index' (#3): index 77 is out of "
                                      "bounds for dimension 0 with size 5, called from"),
                  "message: %s", tt_errmsg());
    tt_clear_error();
    tt_release(x), tt_release(idx);
    free(iv);
}
END_TEST

/* scatter_add along dim 0 by an index that covers self's other dims
 * starts each row from self where a position first names it and copies
 * the rows no position names: rows named several times, rows never
 * named, a row of mixed values (which copies the rest first), in f32 and
 * i64 and across two threads' blocks, against a loop; a bad value still
 * fails with the first one's message. */
START_TEST(test_scatter_add_rows_from_self)
{
    const int64_t rows = 300, cols = 96, n = 500;
    for (int dt = 0; dt < 2; dt++)
        for (int mixed = 0; mixed < 2; mixed++) {
            tt_dtype type = dt ? TT_I64 : TT_F32;
            int64_t *iv = malloc(sizeof *iv * (size_t)(n * cols));
            for (int64_t j = 0; j < n; j++)
                for (int64_t t = 0; t < cols; t++)
                    iv[j * cols + t] = (j * 7) % 250; /* rows 250.. never named */
            if (mixed)
                for (int64_t t = 0; t < cols; t++)
                    iv[123 * cols + t] = (t * 13) % rows;
            tt_tensor *idx = NN(tt_from_data(TT_SHAPE(n, cols), TT_I64, iv));
            tt_tensor *self = values(2, (int64_t[]){rows, cols}, type);
            tt_tensor *src = values(2, (int64_t[]){n, cols}, type);
            tt_tensor *s = NN(tt_scatter_add(self, 0, idx, src));
            double *want = tt_test_values(self), *sv = tt_test_values(src);
            for (int64_t i = 0; i < n * cols; i++)
                want[iv[i] * cols + i % cols] += sv[i];
            double *got = tt_test_values(s);
            for (int64_t i = 0; i < rows * cols; i++)
                CHECK(got[i] == want[i], "dtype %d mixed %d: element %lld: %g vs %g", dt, mixed,
                      (long long)i, got[i], want[i]);
            free(got), free(want), free(sv);
            tt_release(s);
            if (mixed) {
                iv[400 * cols + 5] = rows, iv[200 * cols + 90] = -1;
                tt_tensor *bad = NN(tt_from_data(TT_SHAPE(n, cols), TT_I64, iv));
                ck_assert_ptr_null(tt_scatter_add(self, 0, bad, src));
                ck_assert_int_eq(tt_errcode(), TT_EINVAL);
                ck_assert_msg(strstr(tt_errmsg(), "tt::scatter_add: argument 'index' (#3): "
                                                  "index -1 is out of bounds for dimension 0 "
                                                  "with size 300"),
                              "message: %s", tt_errmsg());
                tt_clear_error();
                tt_release(bad);
            }
            free(iv);
            tt_release(idx), tt_release(self), tt_release(src);
        }
}
END_TEST

/* Outputs larger than the last-level cache are written around it (rows
 * streamed by gather, index_select and scatter_add's first add to a row):
 * each against a plain loop, bit for bit, with rows named twice (a
 * second add reads what the streamed stores wrote) and rows never named
 * (copied from self). */
START_TEST(test_streamed_rows)
{
    const int64_t cols = 1024, rows = tt_test_last_level_cache_bytes() / (4 * cols) + 16;
    int64_t *iv = malloc(sizeof *iv * (size_t)(rows * cols)), *rv = malloc(sizeof *rv * (size_t)rows);
    for (int64_t j = 0; j < rows; j++) {
        rv[j] = (j * 7) % (rows - 5); /* the last five rows never named */
        for (int64_t t = 0; t < cols; t++)
            iv[j * cols + t] = rv[j];
    }
    tt_tensor *idx = NN(tt_from_data(TT_SHAPE(rows, cols), TT_I64, iv));
    tt_tensor *sel = NN(tt_from_data(TT_SHAPE(rows), TT_I64, rv));
    tt_tensor *self = NN(tt_randn(TT_SHAPE(rows, cols), TT_F32));
    tt_tensor *src = NN(tt_randn(TT_SHAPE(rows, cols), TT_F32));
    tt_tensor *g = NN(tt_gather(self, 0, idx)), *is = NN(tt_index_select(self, 0, sel));
    tt_tensor *sa = NN(tt_scatter_add(self, 0, idx, src));
    const float *x = tt_data(self), *y = tt_data(src);
    const float *gp = tt_data(g), *ip = tt_data(is), *sp = tt_data(sa);
    float *want = malloc(sizeof *want * (size_t)(rows * cols));
    memcpy(want, x, sizeof *want * (size_t)(rows * cols));
    for (int64_t j = 0; j < rows; j++)
        for (int64_t t = 0; t < cols; t++)
            want[rv[j] * cols + t] += y[j * cols + t];
    int64_t bad_g = -1, bad_i = -1, bad_s = -1;
    for (int64_t e = 0; e < rows * cols; e++) {
        float row_val = x[rv[e / cols] * cols + e % cols];
        if (bad_g < 0 && memcmp(&gp[e], &row_val, sizeof row_val) != 0)
            bad_g = e;
        if (bad_i < 0 && memcmp(&ip[e], &row_val, sizeof row_val) != 0)
            bad_i = e;
        if (bad_s < 0 && memcmp(&sp[e], &want[e], sizeof *want) != 0)
            bad_s = e;
    }
    ck_assert_msg(bad_g < 0 && bad_i < 0 && bad_s < 0,
                  "first wrong element: gather %lld, index_select %lld, scatter_add %lld",
                  (long long)bad_g, (long long)bad_i, (long long)bad_s);
    free(want), free(iv), free(rv);
    tt_release(g), tt_release(is), tt_release(sa);
    tt_release(idx), tt_release(sel), tt_release(self), tt_release(src);
}
END_TEST

/* gather and scatter_add over every dim of a [6, 70, 90] tensor (above the
 * parallel threshold), contiguous and permuted, against loops. */
START_TEST(test_gather_scatter_add_loops)
{
    const int64_t sizes[3] = {6, 70, 90};
    for (int perm = 0; perm < 2; perm++)
        for (int dim = 0; dim < 3; dim++) {
            tt_tensor *x = values(3, sizes, TT_F64), *self = x;
            if (perm) { /* the same logical tensor, dims 0 and 2 swapped in memory */
                tt_tensor *b = NN(tt_transpose(x, 0, 2));
                tt_tensor *c = NN(tt_contiguous(b));
                self = NN(tt_transpose(c, 0, 2));
                tt_release(b);
                tt_release(c);
                tt_release(x);
            }
            int64_t isz[3] = {5, 60, 80};
            isz[dim] = 97; /* longer than self along dim: repeats */
            tt_tensor *idx = rand_index(3, isz, sizes[dim]);
            tt_tensor *src = values(3, isz, TT_F64);
            tt_tensor *g = NN(tt_gather(self, dim, idx));
            tt_tensor *s = NN(tt_scatter_add(self, dim, idx, src));
            int64_t n = numel_of(3, isz), c[3], sc[3];
            const int64_t *ip = tt_data(idx);
            const double *gp = tt_data(g);
            double *want = tt_test_values(self);
            for (int64_t i = 0; i < n; i++) {
                coords(3, isz, i, c);
                memcpy(sc, c, sizeof sc);
                sc[dim] = ip[i];
                CHECK(gp[i] == at(self, sc), "gather dim %d perm %d: element %lld", dim, perm,
                      (long long)i);
                want[(sc[0] * sizes[1] + sc[1]) * sizes[2] + sc[2]] += at(src, c);
            }
            double *got = tt_test_values(s);
            for (int64_t i = 0; i < numel_of(3, sizes); i++)
                CHECK(got[i] == want[i], "scatter_add dim %d perm %d: element %lld: %g vs %g",
                      dim, perm, (long long)i, got[i], want[i]);
            free(got);
            free(want);
            tt_release(g);
            tt_release(s);
            tt_release(src);
            tt_release(idx);
            tt_release(self);
        }
}
END_TEST

/* index_select, index_copy, index_add along each dim against loops. */
START_TEST(test_index_along_loops)
{
    const int64_t sizes[3] = {7, 50, 40};
    for (int dim = 0; dim < 3; dim++) {
        tt_tensor *x = values(3, sizes, TT_F64);
        tt_tensor *idx = rand_index(1, (int64_t[]){9}, sizes[dim]);
        tt_tensor *sel = NN(tt_index_select(x, dim, idx));
        int64_t osz[3] = {sizes[0], sizes[1], sizes[2]}, c[3], sc[3];
        osz[dim] = 9;
        const int64_t *ip = tt_data(idx);
        const double *sp = tt_data(sel);
        for (int64_t i = 0; i < numel_of(3, osz); i++) {
            coords(3, osz, i, c);
            memcpy(sc, c, sizeof sc);
            sc[dim] = ip[c[dim]];
            CHECK(sp[i] == at(x, sc), "index_select dim %d: element %lld", dim, (long long)i);
        }
        /* index_add of sel * 1 back at the same positions: x + alpha * sel
         * summed over repeats, in index order */
        tt_tensor *add = NN(tt_index_add(x, dim, idx, sel, 0.5));
        double *want = tt_test_values(x), *got = tt_test_values(add);
        for (int64_t i = 0; i < numel_of(3, osz); i++) {
            coords(3, osz, i, c);
            memcpy(sc, c, sizeof sc);
            sc[dim] = ip[c[dim]];
            want[(sc[0] * sizes[1] + sc[1]) * sizes[2] + sc[2]] += 0.5 * sp[i];
        }
        for (int64_t i = 0; i < numel_of(3, sizes); i++)
            CHECK(got[i] == want[i], "index_add dim %d: element %lld", dim, (long long)i);
        free(want);
        free(got);
        /* index_copy with distinct positions: those slices replaced */
        int64_t d3[3] = {sizes[dim] - 1, 0, 2};
        tt_tensor *i3 = i64s(3, d3);
        int64_t ssz[3] = {sizes[0], sizes[1], sizes[2]};
        ssz[dim] = 3;
        tt_tensor *source = values(3, ssz, TT_F64);
        tt_tensor *cp = NN(tt_index_copy(x, dim, i3, source));
        for (int64_t i = 0; i < numel_of(3, sizes); i++) {
            coords(3, sizes, i, c);
            int k = c[dim] == d3[0] ? 0 : c[dim] == d3[1] ? 1 : c[dim] == d3[2] ? 2 : -1;
            memcpy(sc, c, sizeof sc);
            sc[dim] = k;
            double w = k < 0 ? at(x, c) : at(source, sc);
            CHECK(at(cp, c) == w, "index_copy dim %d: element %lld", dim, (long long)i);
        }
        tt_release(cp);
        tt_release(source);
        tt_release(i3);
        tt_release(add);
        tt_release(sel);
        tt_release(idx);
        tt_release(x);
    }
}
END_TEST

/* ----------------------------------------------- repeated positions */

/* Every combination of repeated positions in index order, as a loop over
 * positions does: f32 sums whose order shows in the bits, on [rows, n]
 * with `slots` targets per row, equal to the loop bit for bit on 1 and on
 * 2 threads. */
static void dup_reference(const char *reduce, bool include_self, int64_t rows, int64_t n,
                          int64_t slots, const float *self, const float *src,
                          const int64_t *idx, float *out)
{
    int64_t *count = calloc((size_t)(rows * slots), sizeof(int64_t));
    for (int64_t i = 0; i < rows * slots; i++)
        out[i] = self[i];
    if (!include_self)
        for (int64_t r = 0; r < rows; r++)
            for (int64_t j = 0; j < n; j++) {
                float id = !strcmp(reduce, "prod") ? 1.0f
                           : !strcmp(reduce, "amax") ? -INFINITY
                           : !strcmp(reduce, "amin") ? INFINITY : 0.0f;
                out[r * slots + idx[r * n + j]] = id;
            }
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j = 0; j < n; j++) {
            float *o = &out[r * slots + idx[r * n + j]], s = src[r * n + j];
            if (!strcmp(reduce, "prod"))
                *o = *o * s;
            else if (!strcmp(reduce, "amax"))
                *o = s > *o ? s : *o;
            else if (!strcmp(reduce, "amin"))
                *o = s < *o ? s : *o;
            else
                *o = *o + s;
            count[r * slots + idx[r * n + j]]++;
        }
    if (!strcmp(reduce, "mean"))
        for (int64_t i = 0; i < rows * slots; i++) {
            int64_t c = count[i] + include_self;
            out[i] = out[i] / (float)(c ? c : 1);
        }
    free(count);
}

START_TEST(test_repeated_positions_in_order)
{
    static const char *const reduces[] = {"add", "sum", "prod", "mean", "amax", "amin"};
    const int64_t shapes[2][3] = {{1, 200000, 7}, {64, 4096, 16}}; /* rows, n, slots */
    for (int si = 0; si < 2; si++) {
        int64_t rows = shapes[si][0], n = shapes[si][1], slots = shapes[si][2];
        tt_tensor *self = tt_test_randn(2, (int64_t[]){rows, slots}, TT_F32);
        tt_tensor *src64 = tt_test_randn(2, (int64_t[]){rows, n}, TT_F64);
        /* products of many values near 1 stay finite */
        tt_tensor *src64b = NN(tt_mul_scalar(src64, 0.001));
        tt_tensor *src64c = NN(tt_add_scalar(src64b, 1));
        tt_tensor *src = NN(tt_to_dtype(src64c, TT_F32));
        tt_tensor *idx = rand_index(2, (int64_t[]){rows, n}, slots);
        float *want = malloc(sizeof(float) * (size_t)(rows * slots));
        for (int ri = 0; ri < TT_TABLE_LEN(reduces); ri++)
            for (int inc = 0; inc < 2; inc++) {
                const char *red = reduces[ri];
                if (ri == 0 && !inc)
                    continue;
                dup_reference(ri == 0 ? "sum" : red, inc, rows, n, slots, tt_data(self),
                              tt_data(src), tt_data(idx), want);
                tt_tensor *got[2];
                for (int th = 0; th < 2; th++) {
                    tt_set_num_threads(th + 1);
                    got[th] = ri == 0 ? NN(tt_scatter_add(self, 1, idx, src))
                                      : NN(tt_scatter_reduce(self, 1, idx, src, red, inc));
                }
                tt_set_num_threads(0);
                tt_test_assert_same_bits(got[0], got[1], red);
                const float *g = tt_data(got[0]);
                for (int64_t i = 0; i < rows * slots; i++)
                    CHECK(memcmp(&g[i], &want[i], sizeof(float)) == 0,
                          "%s include_self %d [%lld, %lld]: element %lld: %.9g vs %.9g", red,
                          inc, (long long)rows, (long long)n, (long long)i, g[i], want[i]);
                tt_release(got[0]);
                tt_release(got[1]);
            }
        /* index_add: rows of a [n, 4] source into [slots, 4] */
        tt_tensor *flat = NN(tt_view(idx, 1, (int64_t[]){rows * n}));
        tt_tensor *first = NN(tt_narrow(flat, 0, 0, n));
        tt_tensor *base = tt_test_randn(2, (int64_t[]){slots, 4}, TT_F32);
        tt_tensor *source = tt_test_randn(2, (int64_t[]){n, 4}, TT_F32);
        tt_tensor *a[2];
        for (int th = 0; th < 2; th++) {
            tt_set_num_threads(th + 1);
            a[th] = NN(tt_index_add(base, 0, first, source, 1));
        }
        tt_set_num_threads(0);
        tt_test_assert_same_bits(a[0], a[1], "index_add");
        const float *bp = tt_data(base), *sp = tt_data(source), *ap = tt_data(a[0]);
        const int64_t *ip = tt_data(first);
        float *acc = malloc(sizeof(float) * (size_t)(slots * 4));
        memcpy(acc, bp, sizeof(float) * (size_t)(slots * 4));
        for (int64_t i = 0; i < n; i++)
            for (int c = 0; c < 4; c++)
                acc[ip[i] * 4 + c] = acc[ip[i] * 4 + c] + sp[i * 4 + c];
        ck_assert(memcmp(acc, ap, sizeof(float) * (size_t)(slots * 4)) == 0);
        free(acc);
        tt_release(a[0]);
        tt_release(a[1]);
        tt_release(base);
        tt_release(source);
        tt_release(first);
        tt_release(flat);
        free(want);
        tt_release(idx);
        tt_release(src);
        tt_release(src64c);
        tt_release(src64b);
        tt_release(src64);
        tt_release(self);
    }
}
END_TEST

/* NaN wins amax and amin in either order and -inf stays -inf without
 * self (the identity is an infinity, not the largest finite value), as
 * PyTorch 1.13's answers below. */
START_TEST(test_nan_and_infinities)
{
    const double nan = NAN, inf = INFINITY;
    tt_tensor *self = NN(tt_from_data(1, (int64_t[]){3}, TT_F64, (double[]){1, 2, 3}));
    tt_tensor *idx = i64s(4, (const int64_t[]){0, 0, 1, 2});
    tt_tensor *srcs[2] = {NN(tt_from_data(1, (int64_t[]){4}, TT_F64, (double[]){nan, 5, -inf, -inf})),
                          NN(tt_from_data(1, (int64_t[]){4}, TT_F64, (double[]){5, nan, -inf, -inf}))};
    static const struct {
        const char *red;
        bool inc;
        double want[3];
    } rows[] = {{"amax", true, {NAN, 2, 3}},     {"amax", false, {NAN, -INFINITY, -INFINITY}},
                {"amin", true, {NAN, -INFINITY, -INFINITY}},
                {"amin", false, {NAN, -INFINITY, -INFINITY}},
                {"sum", false, {NAN, -INFINITY, -INFINITY}},
                {"prod", true, {NAN, -INFINITY, -INFINITY}},
                {"mean", false, {NAN, -INFINITY, -INFINITY}}};
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < TT_TABLE_LEN(rows); i++) {
            tt_tensor *r = NN(tt_scatter_reduce(self, 0, idx, srcs[k], rows[i].red, rows[i].inc));
            const double *p = tt_data(r);
            for (int j = 0; j < 3; j++)
                ck_assert_msg(isnan(rows[i].want[j]) ? isnan(p[j]) : p[j] == rows[i].want[j],
                              "%s include_self %d, src %d: element %d is %g", rows[i].red,
                              rows[i].inc, k, j, p[j]);
            tt_release(r);
        }
    tt_release(srcs[0]);
    tt_release(srcs[1]);
    tt_release(idx);
    tt_release(self);
}
END_TEST

/* ------------------------------------------------------------ models */

/* Each model reads x [B, 5] (f64, requires grad), idx2 [B, 3] (i64, each
 * row distinct positions in [0, 5)) and idx1 {4, 0, 2}. */
typedef tt_tensor *(*model_fn)(tt_tensor *x, tt_tensor *idx2, tt_tensor *idx1);

static tt_tensor *src_of(tt_tensor *x, int64_t k) /* x's first k columns, times 1.5 */
{
    tt_tensor *s = tt_slice(x, 1, 0, k, 1);
    tt_tensor *r = s ? tt_mul_scalar(s, 1.5) : NULL;
    tt_release(s);
    return r;
}

static tt_tensor *m_gather(tt_tensor *x, tt_tensor *i2, tt_tensor *i1)
{
    (void)i1;
    return tt_gather(x, 1, i2);
}
static tt_tensor *m_scatter(tt_tensor *x, tt_tensor *i2, tt_tensor *i1)
{
    (void)i1;
    tt_tensor *s = src_of(x, 3), *r = s ? tt_scatter(x, 1, i2, s) : NULL;
    tt_release(s);
    return r;
}
/* src larger than the index: its gradient is zero past the index */
static tt_tensor *m_scatter_big_src(tt_tensor *x, tt_tensor *i2, tt_tensor *i1)
{
    (void)i1;
    tt_tensor *s = tt_mul_scalar(x, -0.5), *r = s ? tt_scatter(x, 1, i2, s) : NULL;
    tt_release(s);
    return r;
}
static tt_tensor *m_scatter_value(tt_tensor *x, tt_tensor *i2, tt_tensor *i1)
{
    (void)i1;
    return tt_scatter_value(x, 1, i2, 0.75);
}
static tt_tensor *m_scatter_add(tt_tensor *x, tt_tensor *i2, tt_tensor *i1)
{
    (void)i1;
    tt_tensor *s = tt_mul_scalar(x, 0.25), *r = s ? tt_scatter_add(x, 1, i2, s) : NULL;
    tt_release(s);
    return r;
}
#define M_REDUCE(name, red, inc)                                               \
    static tt_tensor *m_##name(tt_tensor *x, tt_tensor *i2, tt_tensor *i1)     \
    {                                                                          \
        (void)i1;                                                              \
        /* a [B, 6] source: two positions per target on average */             \
        tt_tensor *a = src_of(x, 3), *a2 = a ? tt_mul_scalar(a, -0.7) : NULL;  \
        tt_tensor *b = a2 ? tt_cat(2, (tt_tensor *[]){a, a2}, 1) : NULL;        \
        tt_tensor *j = i2 ? tt_cat(2, (tt_tensor *[]){i2, i2}, 1) : NULL;       \
        tt_tensor *c = b ? tt_add_scalar(b, 0.3) : NULL;                       \
        tt_tensor *r = c && j ? tt_scatter_reduce(x, 1, j, c, red, inc) : NULL; \
        tt_release(a);                                                         \
        tt_release(a2);                                                        \
        tt_release(b);                                                         \
        tt_release(c);                                                         \
        tt_release(j);                                                         \
        return r;                                                              \
    }
M_REDUCE(sum, "sum", true)
M_REDUCE(sum_ex, "sum", false)
M_REDUCE(prod, "prod", true)
M_REDUCE(prod_ex, "prod", false)
M_REDUCE(mean, "mean", true)
M_REDUCE(mean_ex, "mean", false)
M_REDUCE(amax, "amax", true)
M_REDUCE(amax_ex, "amax", false)
M_REDUCE(amin, "amin", true)
M_REDUCE(amin_ex, "amin", false)
static tt_tensor *m_index_select(tt_tensor *x, tt_tensor *i2, tt_tensor *i1)
{
    (void)i2;
    return tt_index_select(x, 1, i1);
}
static tt_tensor *m_index_copy(tt_tensor *x, tt_tensor *i2, tt_tensor *i1)
{
    (void)i2;
    tt_tensor *s = src_of(x, 3), *r = s ? tt_index_copy(x, 1, i1, s) : NULL;
    tt_release(s);
    return r;
}
/* index_copy_ into a copy of x: the in-place form's derivative */
static tt_tensor *m_index_copy_(tt_tensor *x, tt_tensor *i2, tt_tensor *i1)
{
    (void)i2;
    tt_tensor *s = src_of(x, 3), *y = s ? tt_mul_scalar(x, 2) : NULL;
    if (y && tt_index_copy_(y, 1, i1, s))
        y = tt_release(y);
    tt_release(s);
    return y;
}
static tt_tensor *m_index_add(tt_tensor *x, tt_tensor *i2, tt_tensor *i1)
{
    (void)i2;
    tt_tensor *s = src_of(x, 3), *r = s ? tt_index_add(x, 1, i1, s, -2.5) : NULL;
    tt_release(s);
    return r;
}
static tt_tensor *m_slice_scatter(tt_tensor *x, tt_tensor *i2, tt_tensor *i1)
{
    (void)i2, (void)i1;
    tt_tensor *s = src_of(x, 2), *r = s ? tt_slice_scatter(x, s, 1, 1, 5, 2) : NULL;
    tt_release(s);
    return r;
}
static tt_tensor *m_select_scatter(tt_tensor *x, tt_tensor *i2, tt_tensor *i1)
{
    (void)i2, (void)i1;
    tt_tensor *s = tt_select(x, 1, 0), *t = s ? tt_mul_scalar(s, 3) : NULL;
    tt_tensor *r = t ? tt_select_scatter(x, t, 1, 3) : NULL;
    tt_release(s);
    tt_release(t);
    return r;
}
static tt_tensor *m_diagonal(tt_tensor *x, tt_tensor *i2, tt_tensor *i1)
{
    (void)i2, (void)i1;
    tt_tensor *t = tt_t(x), *d = t ? tt_diagonal(t, -1, 1, 0) : NULL;
    tt_tensor *r = d ? tt_mul_scalar(d, 2) : NULL;
    tt_release(t);
    tt_release(d);
    return r;
}

static const struct {
    const char *name;
    model_fn fn;
} models[] = {
    {"gather", m_gather},
    {"scatter", m_scatter},
    {"scatter src larger", m_scatter_big_src},
    {"scatter value", m_scatter_value},
    {"scatter_add", m_scatter_add},
    {"scatter_reduce sum", m_sum},
    {"scatter_reduce sum exclude", m_sum_ex},
    {"scatter_reduce prod", m_prod},
    {"scatter_reduce prod exclude", m_prod_ex},
    {"scatter_reduce mean", m_mean},
    {"scatter_reduce mean exclude", m_mean_ex},
    {"scatter_reduce amax", m_amax},
    {"scatter_reduce amax exclude", m_amax_ex},
    {"scatter_reduce amin", m_amin},
    {"scatter_reduce amin exclude", m_amin_ex},
    {"index_select", m_index_select},
    {"index_copy", m_index_copy},
    {"index_copy_", m_index_copy_},
    {"index_add", m_index_add},
    {"slice_scatter", m_slice_scatter},
    {"select_scatter", m_select_scatter},
    {"diagonal", m_diagonal},
};

/* The model's inputs for batch B. */
static void model_inputs(int64_t B, tt_tensor **in)
{
    in[0] = values(2, (int64_t[]){B, 5}, TT_F64);
    OK(tt_set_requires_grad(in[0], true));
    in[1] = row_perm_index(B, 3, 5);
    in[2] = i64s(3, (const int64_t[]){4, 0, 2});
}

static void release3(tt_tensor **in)
{
    for (int i = 0; i < 3; i++)
        tt_release(in[i]);
}

static tt_status f_forward(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    out[0] = (*(model_fn *)ud)(in[0], in[1], in[2]);
    return out[0] ? TT_OK : tt_errcode();
}

/* out[0] the model's result, out[1] d(sum(result^2))/dx. */
static tt_status f_model(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout;
    model_fn m = *(model_fn *)ud;
    tt_scope_begin();
    tt_status st = tt_test_keep_value_and_grad(m(in[0], in[1], in[2]), in[0], out);
    tt_scope_end();
    return st;
}

START_TEST(test_gradcheck)
{
    model_fn m = models[_i].fn;
    tt_tensor *in[3];
    model_inputs(3, in);
    tt_status st = tt_gradcheck(f_forward, 3, in, 1, NULL, &m);
    ck_assert_msg(st == TT_OK, "%s: %s", models[_i].name, tt_errmsg());
    release3(in);
}
END_TEST

/* A symbolic trace compiled once runs batches of 3 and 4: forward and
 * backward equal eager. */
START_TEST(test_compiled_equals_eager)
{
    model_fn m = models[_i].fn;
    tt_compiled *c = NN(tt_compile(f_model, 3, 2,
                                   &(tt_trace_opts){.mode = TT_TRACE_SYMBOLIC, .ud = &m,
                                                    .ud_constant = true, .fullgraph = true}));
    for (int64_t B = 3; B <= 4; B++) {
        tt_tensor *in[3], *ce[2], *ee[2];
        model_inputs(B, in);
        tt_status st = tt_compiled_call(c, in, ce);
        ck_assert_msg(st == TT_OK, "%s: compiled call, B = %lld: %s", models[_i].name,
                      (long long)B, tt_errmsg());
        OK(f_model(in, 3, ee, 2, &m));
        for (int i = 0; i < 2; i++) {
            char what[96];
            snprintf(what, sizeof what, "%s: output %d, B = %lld", models[_i].name, i,
                     (long long)B);
            tt_test_assert_close(ce[i], ee[i], 1e-12, what);
            tt_release(ce[i]);
            tt_release(ee[i]);
        }
        release3(in);
    }
    tt_clear_error();
    tt_compiled_free(c);
    ck_assert_msg(tt_errcode() == TT_OK, "%s: freeing the plan: %s", models[_i].name,
                  tt_errmsg());
}
END_TEST

/* ----------------------------------------------------- index_copy_ */

/* A KV cache's write: cache [8, 4] gets new [1, 4] at row pos; the
 * function returns the cache's sum. A compiled graph must keep the
 * write into its input. */
static tt_status f_cache(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_status st = tt_index_copy_(in[0], 0, in[1], in[2]);
    out[0] = st ? NULL : tt_sum_all(in[0]);
    return out[0] ? TT_OK : tt_errcode();
}

START_TEST(test_index_copy_compiled_keeps_write)
{
    tt_compiled *c = NN(tt_compile(f_cache, 3, 1,
                                   &(tt_trace_opts){.mode = TT_TRACE_SYMBOLIC,
                                                    .fullgraph = true}));
    tt_tensor *cache = NN(tt_zeros(2, (int64_t[]){8, 4}, TT_F32));
    tt_tensor *eager = NN(tt_zeros(2, (int64_t[]){8, 4}, TT_F32));
    for (int64_t pos = 0; pos < 8; pos += 3) {
        tt_tensor *p = i64s(1, &pos);
        tt_tensor *nw = NN(tt_full(2, (int64_t[]){1, 4}, (double)pos + 1, TT_F32));
        tt_tensor *in[3] = {cache, p, nw}, *out, *eout;
        uint64_t v0 = tt_version(cache);
        OK(tt_compiled_call(c, in, &out));
        ck_assert_msg(tt_version(cache) > v0, "the compiled write bumps the cache's version");
        in[0] = eager;
        OK(f_cache(in, 3, &eout, 1, NULL));
        tt_test_assert_same_bits(cache, eager, "cache after the write");
        tt_test_assert_same_bits(out, eout, "the sum after the write");
        ck_assert_double_eq(((const float *)tt_data(cache))[pos * 4 + 3], (double)pos + 1);
        tt_release(out);
        tt_release(eout);
        tt_release(nw);
        tt_release(p);
    }
    tt_release(eager);
    tt_release(cache);
    tt_compiled_free(c);
}
END_TEST

/* An index out of range fails before any write: the target keeps every
 * value and its version. */
START_TEST(test_failed_write_changes_nothing)
{
    tt_tensor *x = values(2, (int64_t[]){4, 3}, TT_F64), *before = NN(tt_clone(x));
    tt_tensor *src = values(2, (int64_t[]){3, 3}, TT_F64);
    tt_tensor *bad = i64s(3, (const int64_t[]){0, 2, 4}); /* the last is out of range */
    uint64_t v = tt_version(x);
    ck_assert_int_eq(tt_index_copy_(x, 0, bad, src), TT_EINVAL);
    ck_assert_msg(strstr(tt_errmsg(), "index 4 is out of bounds for dimension 0 with size 4"),
                  "%s", tt_errmsg());
    tt_test_assert_same_bits(x, before, "after the failed index_copy_");
    ck_assert_int_eq(tt_version(x), v);
    tt_release(bad);
    tt_release(src);
    tt_release(before);
    tt_release(x);
}
END_TEST

/* -------------------------------------------------------------- diagonal */

START_TEST(test_diagonal_is_a_view)
{
    tt_tensor *x = values(2, (int64_t[]){3, 4}, TT_F64);
    tt_tensor *d = NN(tt_diagonal(x, 1, 0, 1));
    ck_assert_int_eq(tt_ndim(d), 1);
    ck_assert_int_eq(tt_sizes(d)[0], 3);
    ck_assert_int_eq(tt_strides(d)[0], 5);
    ck_assert_int_eq(tt_storage_offset(d), 1);
    ck_assert_ptr_eq(tt_data(d), (const double *)tt_data(x) + 1);
    uint64_t v = tt_version(x);
    OK(tt_fill_(d, 9));
    ck_assert_msg(tt_version(x) > v, "a write through the view bumps the base's version");
    const double *p = tt_data(x);
    ck_assert(p[1] == 9 && p[6] == 9 && p[11] == 9 && p[0] != 9);
    tt_release(d);
    /* an empty diagonal keeps the offset; dims may be negative */
    d = NN(tt_diagonal(x, -7, -1, -2));
    ck_assert_int_eq(tt_sizes(d)[0], 0);
    tt_release(d);
    /* the gradient of a view of a view (diagonal of a transpose) */
    tt_tensor *w = values(3, (int64_t[]){2, 3, 4}, TT_F64);
    OK(tt_set_requires_grad(w, true));
    tt_tensor *dd = NN(tt_diagonal(w, 0, 2, 0)), *s = NN(tt_sum_all(dd));
    OK(tt_backward(s, NULL));
    tt_tensor *g = NN(tt_get_grad(w));
    const double *gp = tt_data(g);
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 3; b++)
            for (int c = 0; c < 4; c++)
                CHECK(gp[(a * 3 + b) * 4 + c] == (a == c ? 1 : 0), "grad [%d, %d, %d]", a, b, c);
    tt_release(g);
    tt_release(s);
    tt_release(dd);
    tt_release(w);
    tt_release(x);
}
END_TEST

/* ---------------------------------------------------- symbolic sizes */

START_TEST(test_symbolic_sizes)
{
    tt_sym_reset();
    tt_size b = tt_sym_new("s", 6);
    tt_tensor *x = NN(tt_fake_empty(2, (tt_size[]){b, 5}, TT_F32));
    tt_tensor *i2 = NN(tt_fake_empty(2, (tt_size[]){b, 3}, TT_I64));
    tt_tensor *i1 = NN(tt_fake_empty(1, (tt_size[]){b}, TT_I64));
    tt_tensor *y = NN(tt_gather(x, 1, i2));
    ck_assert(tt_is_fake(y) && tt_sizes(y)[0] == b && tt_sizes(y)[1] == 3);
    tt_release(y);
    tt_tensor *s3 = NN(tt_fake_empty(2, (tt_size[]){b, 3}, TT_F32));
    y = NN(tt_scatter_add(x, 1, i2, s3));
    ck_assert(tt_sizes(y)[0] == b && tt_sizes(y)[1] == 5);
    tt_release(y);
    tt_release(s3);
    y = NN(tt_scatter_reduce(x, 1, i2, x, "amax", false));
    ck_assert(tt_sizes(y)[0] == b && tt_sizes(y)[1] == 5);
    tt_release(y);
    y = NN(tt_index_select(x, 0, i1)); /* [b, 5] again, from the index's length */
    ck_assert(tt_sizes(y)[0] == b && tt_strides(y)[1] == 1);
    tt_release(y);
    y = NN(tt_index_select(x, 1, i1)); /* [b, b] */
    ck_assert(tt_sizes(y)[1] == b);
    tt_release(y);
    y = NN(tt_diagonal(x, 0, 0, 1)); /* min(b, 5): b >= 5 guarded on the hint 6 */
    ck_assert_int_eq(tt_sizes(y)[0], 5);
    tt_release(y);
    tt_tensor *s = NN(tt_fake_empty(2, (tt_size[]){b, 2}, TT_F32));
    y = NN(tt_slice_scatter(x, s, 1, 1, 5, 2));
    ck_assert(tt_sizes(y)[0] == b);
    tt_release(y);
    tt_release(s);
    tt_release(i1);
    tt_release(i2);
    tt_release(x);
    tt_sym_reset();
}
END_TEST

/* ---------------------------------------------------------------- errors */

static struct {
    tt_tensor *x, *x1, *xi, *xb, *i2, *i2_32, *i_big, *i_neg, *i1, *i1_32, *i1_big, *if32,
        *src, *src_small, *src_f32, *s3, *g, *x0, *i0;
} in;

static void errors_setup(void)
{
    tt_test_setup();
    in.x = values(2, (int64_t[]){3, 4}, TT_F64);
    in.x1 = values(1, (int64_t[]){4}, TT_F64);
    in.xi = values(2, (int64_t[]){3, 4}, TT_I64);
    in.xb = NN(tt_to_dtype(in.x, TT_BOOL));
    in.i2 = NN(tt_from_data(2, (int64_t[]){2, 3}, TT_I64, (int64_t[]){0, 1, 2, 3, 2, 1}));
    in.i2_32 = NN(tt_to_dtype(in.i2, TT_I32));
    in.i_big = NN(tt_from_data(2, (int64_t[]){2, 3}, TT_I64, (int64_t[]){0, 1, 7, 3, 2, 1}));
    in.i_neg = NN(tt_from_data(2, (int64_t[]){2, 3}, TT_I64, (int64_t[]){0, -1, 2, 3, 2, 1}));
    in.i1 = i64s(3, (const int64_t[]){2, 0, 1});
    in.i1_32 = NN(tt_to_dtype(in.i1, TT_I32));
    in.i1_big = i64s(3, (const int64_t[]){2, 0, 5});
    in.if32 = NN(tt_to_dtype(in.i1, TT_F32));
    in.src = values(2, (int64_t[]){3, 4}, TT_F64);
    in.src_small = values(2, (int64_t[]){2, 2}, TT_F64);
    in.src_f32 = values(2, (int64_t[]){3, 4}, TT_F32);
    in.s3 = values(2, (int64_t[]){3, 3}, TT_F64);
    in.g = values(1, (int64_t[]){2}, TT_F64);
    in.x0 = NN(tt_scalar(2, TT_F64));
    in.i0 = NN(tt_empty(1, (int64_t[]){0}, TT_I64));
}

static void errors_teardown(void)
{
    tt_tensor **all = (tt_tensor **)&in;
    for (size_t i = 0; i < sizeof in / sizeof(tt_tensor *); i++)
        all[i] = tt_release(all[i]);
    tt_test_teardown();
}

static tt_tensor *op_call(const char *name, int n, const tt_value *args)
{
    return tt_op_call1(tt_op_find(name), args, n);
}
#define CALL(name, ...)                                                        \
    op_call(name, (int)(sizeof((tt_value[]){__VA_ARGS__}) / sizeof(tt_value)), \
            (const tt_value[]){__VA_ARGS__})

#define INDEX_ERRORS(X)                                                        \
    X(gather_dim, tt_gather(in.x, 2, in.i2), TT_EINVAL,                        \
      "tt::gather: argument 'dim' (#2): dimension out of range (expected to "  \
      "be in range of [-2, 1], but got 2)")                                    \
    X(gather_i32, tt_gather(in.x, 1, in.i2_32), TT_EDTYPE,                     \
      "tt::gather: argument 'index' (#3): expected i64 indices, got i32")      \
    X(gather_ndim, tt_gather(in.x, 1, in.i1), TT_ESHAPE,                       \
      "tt::gather: argument 'index' (#3): expected as many dims as 'self' "    \
      "(2), got 1")                                                            \
    X(gather_larger, tt_gather(in.src_small, 0, in.i2), TT_ESHAPE,             \
      "tt::gather: argument 'index' (#3): size does not match at dimension "   \
      "1: expected index [2, 3] to be smaller than self [2, 2] apart from "    \
      "dimension 0")                                                           \
    X(gather_range, tt_gather(in.x, 1, in.i_big), TT_EINVAL,                   \
      "tt::gather: argument 'index' (#3): index 7 is out of bounds for "       \
      "dimension 1 with size 4")                                               \
    X(gather_negative, tt_gather(in.x, 0, in.i_neg), TT_EINVAL,                \
      "index -1 is out of bounds for dimension 0 with size 3")                 \
    X(scatter_dtype, tt_scatter(in.x, 1, in.i2, in.src_f32), TT_EDTYPE,        \
      "tt::scatter: argument 'src' (#4): expected f64 like 'self', got f32")   \
    X(scatter_src_small, tt_scatter(in.x, 1, in.i2, in.src_small), TT_ESHAPE,  \
      "tt::scatter: argument 'index' (#3): expected index [2, 3] to be "       \
      "smaller than self [3, 4] apart from dimension 1 and to be smaller "     \
      "size than src [2, 2]")                                                  \
    X(scatter_src_ndim, tt_scatter_add(in.x, 1, in.i2, in.g), TT_ESHAPE,       \
      "tt::scatter_add: argument 'src' (#4): expected as many dims as "        \
      "'index' (2), got 1")                                                    \
    X(scatter_range, tt_scatter_value(in.x, 1, in.i_big, 1), TT_EINVAL,        \
      "tt::scatter: argument 'index' (#3): index 7 is out of bounds for "      \
      "dimension 1 with size 4")                                               \
    X(scatter_i32, tt_scatter_add(in.x, 1, in.i2_32, in.src), TT_EDTYPE,       \
      "tt::scatter_add: argument 'index' (#3): expected i64 indices, got i32") \
    X(reduce_name, tt_scatter_reduce(in.x, 1, in.i2, in.src, "max", true),     \
      TT_EINVAL, "tt::scatter_reduce: argument 'reduce' (#5): expected one of " \
      "sum, prod, mean, amax or amin, got \"max\"")                            \
    X(reduce_name_boxed,                                                       \
      CALL("tt::scatter_reduce.two", tt_v_tensor(in.x), tt_v_int(1),           \
           tt_v_tensor(in.i2), tt_v_tensor(in.src), tt_v_str("min"),           \
           tt_v_bool(true)),                                                   \
      TT_EINVAL, "got \"min\"")                                                \
    X(reduce_mean_bool, tt_scatter_reduce(in.xb, 1, in.i2, in.xb, "mean", true), \
      TT_EDTYPE, "tt::scatter_reduce: argument 'self' (#1): reduce \"mean\" "  \
      "is not implemented for bool")                                           \
    X(select_2d, tt_index_select(in.x, 1, in.i2), TT_ESHAPE,                   \
      "tt::index_select: argument 'index' (#3): expected a 0-dim or 1-dim "    \
      "index, got 2 dims")                                                     \
    X(select_float, tt_index_select(in.x, 1, in.if32), TT_EDTYPE,              \
      "tt::index_select: argument 'index' (#3): expected i64 or i32 "          \
      "indices, got f32")                                                      \
    X(select_scalar_none, tt_index_select(in.x0, 0, in.i0), TT_ESHAPE,         \
      "tt::index_select: argument 'index' (#3): a 0-dim self needs at least "  \
      "one index, got none")                                                   \
    X(select_range, tt_index_select(in.x, 1, in.i1_big), TT_EINVAL,            \
      "tt::index_select: argument 'index' (#3): index 5 is out of bounds for " \
      "dimension 1 with size 4")                                               \
    X(copy_i32, tt_index_copy(in.x, 1, in.i1_32, in.s3), TT_EDTYPE,            \
      "tt::index_copy: argument 'index' (#3): expected i64 indices, got i32")  \
    X(copy_count, tt_index_copy(in.x, 1, in.i1, in.src), TT_ESHAPE,            \
      "tt::index_copy: argument 'index' (#3): number of indices (3) should "   \
      "be equal to source.size(dim) (4), for dim 1")                           \
    X(copy_slices, tt_index_copy(in.x, 0, in.i1, in.s3), TT_ESHAPE,            \
      "tt::index_copy: argument 'source' (#4): expected source [3, 3] to "     \
      "match self [3, 4] apart from dimension 0")                              \
    X(copy_dtype, tt_index_copy(in.x, 1, in.i1, in.src_f32), TT_EDTYPE,        \
      "tt::index_copy: argument 'source' (#4): expected f64 like 'self', got " \
      "f32")                                                                   \
    X(copy_ndim, tt_index_copy(in.x, 0, in.i1, in.g), TT_ESHAPE,               \
      "tt::index_copy: argument 'source' (#4): expected as many dims as "      \
      "'self' (2), got 1")                                                     \
    X(copy__range, tt_index_copy_(in.x, 1, in.i1_big, in.s3), TT_EINVAL,       \
      "tt::index_copy_: argument 'index' (#3): index 5 is out of bounds for "  \
      "dimension 1 with size 4")                                               \
    X(add_range, tt_index_add(in.x, 1, in.i1_big, in.s3, 1), TT_EINVAL,        \
      "tt::index_add: argument 'index' (#3): index 5 is out of bounds")        \
    X(add_dtype, tt_index_add(in.xi, 1, in.i1, in.s3, 1), TT_EDTYPE,           \
      "tt::index_add: argument 'source' (#4): expected i64 like 'self', got "  \
      "f64")                                                                   \
    X(slice_src_shape, tt_slice_scatter(in.x, in.s3, 1, 0, 4, 2), TT_ESHAPE,   \
      "tt::slice_scatter: argument 'src' (#2): expected src to have a size "   \
      "equal to the slice of self: src size = [3, 3], slice size = [3, 2]")    \
    X(slice_dim, tt_slice_scatter(in.x, in.s3, 3, 0, 4, 2), TT_EINVAL,         \
      "tt::slice_scatter: argument 'dim' (#3): dimension out of range")        \
    X(select_index, tt_select_scatter(in.x, in.g, 1, 7), TT_EINVAL,            \
      "tt::select_scatter: ")                                                  \
    X(select_src_shape, tt_select_scatter(in.x, in.g, 1, 2), TT_ESHAPE,        \
      "tt::select_scatter: argument 'src' (#2): expected src to have a size "  \
      "equal to the slice of self: src size = [2], slice size = [3]")          \
    X(diagonal_same, tt_diagonal(in.x, 0, 1, -1), TT_EINVAL,                   \
      "tt::diagonal: argument 'dim2' (#4): diagonal dimensions cannot be "     \
      "identical 1, -1")                                                       \
    X(diagonal_1d, tt_diagonal(in.x1, 0, 0, 1), TT_ESHAPE,                     \
      "tt::diagonal: argument 'self' (#1): expected at least 2 dims, got 1")   \
    X(diagonal_dim, tt_diagonal(in.x, 0, 0, 2), TT_EINVAL,                     \
      "tt::diagonal: argument 'dim2' (#4): dimension out of range")            \
    X(diagonal_bw_shape,                                                       \
      CALL("tt::diagonal_backward", tt_v_tensor(in.g),                         \
           tt_v_ints(2, (const int64_t[]){3, 4}), tt_v_int(0), tt_v_int(0),    \
           tt_v_int(1)),                                                       \
      TT_ESHAPE, "tt::diagonal_backward: argument 'grad_output' (#1): "        \
      "expected shape [3], got [2]")

TT_ERROR_TABLE(INDEX_ERRORS, index_errors);

START_TEST(test_errors)
{
    tt_test_run_error_case(&index_errors[_i], _i);
}
END_TEST

static Suite *index_suite(void)
{
    Suite *s = suite_create("ops_index");
    TCase *tc = tt_tcase("values");
    tcase_add_test(tc, test_gather_scatter_add_loops);
    tcase_add_test(tc, test_last_dim_unit_paths);
    tcase_add_test(tc, test_index_check_names_first_bad);
    tcase_add_test(tc, test_scatter_add_rows_from_self);
    tcase_add_test(tc, test_streamed_rows);
    tcase_add_test(tc, test_index_along_loops);
    tcase_add_test(tc, test_repeated_positions_in_order);
    tcase_add_test(tc, test_nan_and_infinities);
    tcase_add_test(tc, test_index_copy_compiled_keeps_write);
    tcase_add_test(tc, test_failed_write_changes_nothing);
    tcase_add_test(tc, test_diagonal_is_a_view);
    tcase_add_test(tc, test_symbolic_sizes);
    suite_add_tcase(s, tc);
    tc = tt_tcase("every derivative");
    tcase_add_loop_test(tc, test_gradcheck, 0, TT_TABLE_LEN(models));
    tcase_add_loop_test(tc, test_compiled_equals_eager, 0, TT_TABLE_LEN(models));
    suite_add_tcase(s, tc);
    tc = tt_tcase_with("errors", errors_setup, errors_teardown);
    tcase_add_loop_test(tc, test_errors, 0, TT_TABLE_LEN(index_errors));
    suite_add_tcase(s, tc);
    return s;
}

TT_TEST_MAIN(index_suite)
