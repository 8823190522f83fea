/* Helpers shared by the runtime's tensor suites (test_tensor.c,
 * test_views.c): references computed by index arithmetic, input layouts,
 * metadata checks. */
#ifndef TT_TENSOR_HELPERS_H
#define TT_TENSOR_HELPERS_H

#include "tt_test.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define A(...) ((const int64_t[]){__VA_ARGS__})
#define NDT 6
static const tt_dtype all_dtypes[NDT] = {TT_F32, TT_F64, TT_I64, TT_I32, TT_U8, TT_BOOL};

/* ------------------------------------------------------------ helpers */

static inline int64_t prod(int n, const int64_t *s)
{
    int64_t k = 1;
    for (int i = 0; i < n; i++)
        k *= s[i];
    return k;
}

/* What storing v into dtype dt and reading it back gives (PyTorch's
 * conversions: floats truncate toward zero into integers, integers wrap
 * into u8, anything nonzero is true). */
static inline double conv(double v, tt_dtype dt)
{
    switch (dt) {
    case TT_F32: return (double)(float)v;
    case TT_F64: return v;
    case TT_I64: return (double)(int64_t)v;
    case TT_I32: return (double)(int32_t)(int64_t)v;
    case TT_U8: return (double)(uint8_t)(int64_t)v;
    case TT_BOOL: return v != 0 ? 1.0 : 0.0;
    default: return NAN;
    }
}

/* Row-major position k of sizes -> multi-index. */
static inline void unravel(int n, const tt_size *sizes, int64_t k, int64_t *idx)
{
    for (int d = n - 1; d >= 0; d--) {
        idx[d] = k % sizes[d];
        k /= sizes[d];
    }
}

static inline double get(const tt_tensor *t, const int64_t *idx)
{
    double v = NAN;
    tt_status st = tt_get_at(t, tt_ndim(t), idx, &v, TT_HERE);
    ck_assert_msg(st == TT_OK, "tt_get failed: %s", tt_errmsg());
    return v;
}

static inline double getflat(const tt_tensor *t, int64_t k)
{
    int64_t idx[TT_MAX_DIMS];
    unravel(tt_ndim(t), tt_sizes(t), k, idx);
    return get(t, idx);
}

/* Storage position (in elements) of the element at idx. */
static inline int64_t elem_off(const tt_tensor *t, const int64_t *idx)
{
    int64_t o = tt_storage_offset(t);
    for (int d = 0; d < tt_ndim(t); d++)
        o += idx[d] * tt_strides(t)[d];
    return o;
}

static inline int64_t flat_off(const tt_tensor *t, int64_t k)
{
    int64_t idx[TT_MAX_DIMS];
    unravel(tt_ndim(t), tt_sizes(t), k, idx);
    return elem_off(t, idx);
}

/* Asserts ndim, sizes, strides (when given) and storage offset exactly. */
static inline void expect_meta(const tt_tensor *t, int n, const int64_t *sizes,
                        const int64_t *strides, int64_t offset)
{
    char d[256], s[256];
    ck_assert_msg(t != NULL, "expected a tensor, got NULL: %s", tt_errmsg());
    tt_describe(t, d, sizeof d);
    tt_strides_str(t, s, sizeof s);
    ck_assert_msg(tt_ndim(t) == n, "%s: ndim %d, expected %d", d, tt_ndim(t), n);
    for (int i = 0; i < n; i++) {
        ck_assert_msg(tt_sizes(t)[i] == sizes[i], "%s: size[%d] is %lld, expected %lld",
                      d, i, (long long)tt_sizes(t)[i], (long long)sizes[i]);
        if (strides)
            ck_assert_msg(tt_strides(t)[i] == strides[i],
                          "%s strides %s: stride[%d] expected %lld", d, s, i,
                          (long long)strides[i]);
    }
    ck_assert_msg(tt_storage_offset(t) == offset, "%s: offset %lld, expected %lld", d,
                  (long long)tt_storage_offset(t), (long long)offset);
}

/* PyTorch's contiguous strides (size-0/1 dims count as 1). */
static inline void contig_strides(int n, const int64_t *sizes, int64_t *st)
{
    int64_t s = 1;
    for (int i = n - 1; i >= 0; i--) {
        st[i] = s;
        s *= sizes[i] > 1 ? sizes[i] : 1;
    }
}

/* A contiguous tensor of the given sizes holding 1, 2, 3... */
static inline tt_tensor *counting(int n, const int64_t *sizes, tt_dtype dt)
{
    int64_t k = prod(n, sizes);
    tt_tensor *a = tt_arange(1, (double)k + 1, 1, dt);
    ck_assert_msg(a != NULL, "%s", tt_errmsg());
    tt_tensor *v = tt_view(a, n, sizes);
    ck_assert_msg(v != NULL, "%s", tt_errmsg());
    tt_release(a);
    return v;
}

/* Input layouts for the view and copy tables. */
enum { L_CONTIG, L_TRANSPOSED, L_SLICED, L_EXPANDED, L_PERMUTED, NLAYOUTS };
static const char *const layout_name[] = {"contiguous", "transposed", "sliced",
                                          "expanded", "permuted"};

/* A tensor of logical sizes s laid out as `layout` over a counting base. */
static inline tt_tensor *make_input(int layout, int n, const int64_t *s, tt_dtype dt)
{
    int64_t b[TT_MAX_DIMS], perm[TT_MAX_DIMS];
    for (int i = 0; i < n; i++)
        b[i] = s[i];
    tt_tensor *base = NULL, *out = NULL;
    if (layout == L_TRANSPOSED && n >= 2) {
        b[n - 1] = s[n - 2];
        b[n - 2] = s[n - 1];
        base = counting(n, b, dt);
        out = tt_transpose(base, -1, -2);
    } else if (layout == L_SLICED && n >= 1) {
        b[0] = 2 * s[0] + 1;
        base = counting(n, b, dt);
        out = tt_slice(base, 0, 1, INT64_MAX, 2);
    } else if (layout == L_EXPANDED && n >= 1) {
        b[n - 1] = 1;
        base = counting(n, b, dt);
        out = tt_expand(base, n, s);
    } else if (layout == L_PERMUTED && n >= 2) {
        for (int i = 0; i < n; i++) {
            b[i] = s[n - 1 - i];
            perm[i] = n - 1 - i;
        }
        base = counting(n, b, dt);
        out = tt_permute(base, n, perm);
    } else {
        return counting(n, s, dt);
    }
    ck_assert_msg(out != NULL, "%s: %s", layout_name[layout], tt_errmsg());
    tt_release(base);
    expect_meta(out, n, s, NULL, tt_storage_offset(out));
    return out;
}

/* out[oidx] must be the element of in at the index f computes: same
 * storage position and same value. */
typedef void (*map_fn)(const int64_t *oidx, int64_t *iidx, const void *ctx);

static inline void expect_view_of(const tt_tensor *out, const tt_tensor *in, map_fn f,
                           const void *ctx, const char *what)
{
    ck_assert_msg(tt_same_storage(out, in), "%s: not a view", what);
    ck_assert_int_eq(tt_dtype_of(out), tt_dtype_of(in));
    int64_t n = tt_numel(out);
    int64_t oidx[TT_MAX_DIMS], iidx[TT_MAX_DIMS];
    for (int64_t k = 0; k < n; k++) {
        unravel(tt_ndim(out), tt_sizes(out), k, oidx);
        f(oidx, iidx, ctx);
        ck_assert_msg(elem_off(out, oidx) == elem_off(in, iidx),
                      "%s: element %lld is at %lld, expected %lld", what, (long long)k,
                      (long long)elem_off(out, oidx), (long long)elem_off(in, iidx));
        ck_assert_msg(get(out, oidx) == get(in, iidx), "%s: element %lld", what,
                      (long long)k);
    }
}

/* Every element of a equals the element of b at the same row-major position. */
static inline void expect_same_values(const tt_tensor *a, const tt_tensor *b, const char *what)
{
    ck_assert_msg(tt_numel(a) == tt_numel(b), "%s: numel", what);
    for (int64_t k = 0; k < tt_numel(a); k++)
        ck_assert_msg(getflat(a, k) == getflat(b, k), "%s: element %lld: %g != %g",
                      what, (long long)k, getflat(a, k), getflat(b, k));
}

typedef struct {
    int n;
    int64_t s[TT_MAX_DIMS];
} shape;

static const shape view_shapes[] = {
    {3, {2, 3, 4}}, {3, {3, 1, 2}}, {1, {5}}, {0, {0}},
    {3, {2, 0, 3}}, {4, {2, 3, 1, 2}}, {2, {1, 1}},
};
#define NVIEW_SHAPES (int)(sizeof view_shapes / sizeof view_shapes[0])

#endif
