/* The runtime's views (view/reshape, permute/transpose/t, narrow/slice/
 * select, expand, squeeze/unsqueeze, flatten, as_strided) over tables of
 * shapes and input layouts, each element checked against index arithmetic
 * on the base tensor, and sizes, strides and offset exactly. */
#include "tensor_helpers.h"

/* ================================================================ views */

/* Whether `in` (with elements) can be viewed as ns without a copy, by brute
 * force: the strides of the dims of size > 1 are read off the input, then
 * every element must land where the input's row-major order puts it.
 * nst[d] is left -1 for dims of size <= 1 (any stride does). */
static bool view_oracle(const tt_tensor *in, int nn, const int64_t *ns, int64_t *nst)
{
    int64_t base = tt_storage_offset(in), inner = 1;
    for (int d = nn - 1; d >= 0; d--) {
        nst[d] = ns[d] > 1 ? flat_off(in, inner) - base : -1;
        inner *= ns[d];
    }
    int64_t idx[TT_MAX_DIMS];
    for (int64_t k = 0; k < tt_numel(in); k++) {
        unravel(nn, ns, k, idx);
        int64_t off = base;
        for (int d = 0; d < nn; d++)
            if (ns[d] > 1)
                off += idx[d] * nst[d];
        if (off != flat_off(in, k))
            return false;
    }
    for (int d = 0; d < nn; d++)
        if (ns[d] > 1 && nst[d] < 0)
            return false;
    return true;
}

/* Targets for view/reshape by element count. */
static int view_targets(int64_t numel, int64_t (*out)[TT_MAX_DIMS], int *nd)
{
    static const struct {
        int64_t numel;
        int n;
        int64_t s[5];
    } table[] = {
        {24, 1, {24}}, {24, 2, {4, 6}}, {24, 2, {2, 12}}, {24, 3, {2, 3, 4}},
        {24, 2, {6, 4}}, {24, 4, {2, 2, 2, 3}}, {24, 2, {1, 24}}, {24, 2, {24, 1}},
        {24, 4, {2, 3, 1, 4}}, {24, 5, {1, 2, 3, 4, 1}}, {24, 2, {-1, 4}},
        {24, 3, {2, -1, 3}}, {24, 3, {3, 2, 4}},
        {6, 1, {6}}, {6, 2, {3, 2}}, {6, 3, {1, 6, 1}}, {6, 1, {-1}}, {6, 3, {2, 1, 3}},
        {6, 2, {2, 3}}, {6, 3, {3, 1, 2}},
        {12, 1, {12}}, {12, 2, {3, 4}}, {12, 2, {6, 2}}, {12, 4, {2, 3, 1, 2}},
        {12, 2, {-1, 2}}, {12, 3, {2, 2, 3}},
        {5, 1, {5}}, {5, 2, {5, 1}}, {5, 2, {1, 5}}, {5, 1, {-1}},
        {1, 0, {0}}, {1, 1, {1}}, {1, 2, {1, 1}}, {1, 1, {-1}},
        {0, 1, {0}}, {0, 2, {3, 0}}, {0, 3, {0, 2, 3}}, {0, 2, {6, 0}},
    };
    int k = 0;
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (table[i].numel == numel) {
            nd[k] = table[i].n;
            memcpy(out[k], table[i].s, sizeof table[i].s);
            k++;
        }
    return k;
}

static void resolve(int n, const int64_t *s, int64_t numel, int64_t *out)
{
    int64_t known = 1;
    for (int i = 0; i < n; i++)
        if (s[i] != -1)
            known *= s[i];
    for (int i = 0; i < n; i++)
        out[i] = s[i] == -1 ? numel / known : s[i];
}

START_TEST(test_view_reshape_table)
{
    int checked_views = 0, checked_copies = 0;
    for (int l = 0; l < NLAYOUTS; l++)
        for (int sh = 0; sh < NVIEW_SHAPES; sh++) {
            const shape *S = &view_shapes[sh];
            tt_tensor *in = make_input(l, S->n, S->s, TT_F64);
            int64_t numel = tt_numel(in);
            int64_t targets[40][TT_MAX_DIMS];
            int nds[40];
            int nt = view_targets(numel, targets, nds);
            ck_assert_int_gt(nt, 0);
            for (int k = 0; k < nt; k++) {
                int nn = nds[k];
                int64_t ns[TT_MAX_DIMS], nst[TT_MAX_DIMS], cst[TT_MAX_DIMS];
                resolve(nn, targets[k], numel, ns);
                contig_strides(nn, ns, cst);
                bool possible = numel == 0 || view_oracle(in, nn, ns, nst);
                char what[160], a[64];
                tt_shape_str(in, a, sizeof a);
                snprintf(what, sizeof what, "%s %s -> view %d dims", layout_name[l], a, nn);

                tt_tensor *v = tt_view(in, nn, targets[k]);
                if (possible) {
                    ck_assert_msg(v != NULL, "%s: %s", what, tt_errmsg());
                    expect_meta(v, nn, ns, NULL, tt_storage_offset(in));
                    ck_assert_msg(tt_same_storage(v, in), "%s", what);
                    if (numel == 0) {
                        /* PyTorch: the same shape keeps its strides, any
                         * other gets contiguous ones. */
                        bool same = nn == tt_ndim(in) && !memcmp(ns, tt_sizes(in), 8 * (size_t)nn);
                        expect_meta(v, nn, ns, same ? tt_strides(in) : cst, tt_storage_offset(in));
                    } else if (tt_is_contiguous(in)) {
                        expect_meta(v, nn, ns, cst, tt_storage_offset(in));
                    } else {
                        for (int d = 0; d < nn; d++)
                            if (ns[d] > 1)
                                ck_assert_msg(tt_strides(v)[d] == nst[d],
                                              "%s: stride[%d] %lld, expected %lld", what, d,
                                              (long long)tt_strides(v)[d], (long long)nst[d]);
                    }
                    for (int64_t e = 0; e < numel; e++)
                        ck_assert_msg(flat_off(v, e) == flat_off(in, e), "%s: element %lld",
                                      what, (long long)e);
                    expect_same_values(v, in, what);
                    tt_release(v);
                    checked_views++;
                } else {
                    ck_assert_msg(v == NULL, "%s: expected no view", what);
                    ck_assert_error(TT_ESHAPE, "is not compatible with input tensor's size");
                    ck_assert_error(TT_ESHAPE, "Use tt_reshape instead.");
                }

                tt_tensor *r = tt_reshape(in, nn, targets[k]);
                ck_assert_msg(r != NULL, "%s: reshape: %s", what, tt_errmsg());
                expect_meta(r, nn, ns, NULL, possible ? tt_storage_offset(in) : 0);
                /* A copy only when no view exists. */
                ck_assert_msg(tt_same_storage(r, in) == possible, "%s: reshape %s", what,
                              possible ? "copied" : "aliases");
                if (!possible) {
                    expect_meta(r, nn, ns, cst, 0);
                    ck_assert(tt_is_contiguous(r));
                    checked_copies++;
                }
                expect_same_values(r, in, what);
                tt_release(r);
            }
            tt_release(in);
        }
    ck_assert_int_gt(checked_views, 100);
    ck_assert_int_gt(checked_copies, 20);
}
END_TEST

/* Cases where PyTorch's computeStride gives specific strides, also for
 * size-1 dims. */
START_TEST(test_view_strides_pytorch)
{
    /* [2, 3, 4] with strides [12, 1, 3]: the last two dims swapped. */
    tt_tensor *base = counting(TT_SHAPE(2, 4, 3), TT_F32);
    tt_tensor *tr = tt_transpose(base, 1, 2);
    tt_tensor *v = tt_view(tr, TT_SHAPE(2, 3, 2, 2));
    expect_meta(v, 4, A(2, 3, 2, 2), A(12, 1, 6, 3), 0);
    tt_release(v);
    v = tt_view(tr, TT_SHAPE(2, 3, 1, 4));
    expect_meta(v, 4, A(2, 3, 1, 4), A(12, 1, 12, 3), 0);
    tt_release(v);
    v = tt_view(tr, TT_SHAPE(1, 2, 3, 4));
    expect_meta(v, 4, A(1, 2, 3, 4), A(24, 12, 1, 3), 0);
    tt_release(v);
    ck_assert_ptr_null(tt_view(tr, TT_SHAPE(6, 4)));
    ck_assert_error(TT_ESHAPE, "tt_view: view size [6, 4] is not compatible with input "
                               "tensor's size [2, 3, 4] and stride [12, 1, 3]");
    /* Sliced with a step: [2, 3, 4] strides [24, 4, 1] offset 12. */
    tt_tensor *b2 = counting(TT_SHAPE(5, 3, 4), TT_F32);
    tt_tensor *sl = tt_slice(b2, 0, 1, 5, 2);
    expect_meta(sl, 3, A(2, 3, 4), A(24, 4, 1), 12);
    v = tt_view(sl, TT_SHAPE(2, 1, 12));
    expect_meta(v, 3, A(2, 1, 12), A(24, 12, 1), 12);
    tt_release(v);
    /* Expanded: [2, 3, 4] strides [3, 1, 0]. */
    tt_tensor *b3 = counting(TT_SHAPE(2, 3, 1), TT_F32);
    tt_tensor *ex = tt_expand(b3, TT_SHAPE(2, 3, 4));
    expect_meta(ex, 3, A(2, 3, 4), A(3, 1, 0), 0);
    v = tt_view(ex, TT_SHAPE(6, 4));
    expect_meta(v, 2, A(6, 4), A(1, 0), 0);
    tt_release(v);
    v = tt_view(ex, TT_SHAPE(6, 2, 2));
    expect_meta(v, 3, A(6, 2, 2), A(1, 0, 0), 0);
    tt_release(v);
    /* 0-dim <-> one element. */
    tt_tensor *s = tt_scalar(4, TT_I32);
    v = tt_view(s, TT_SHAPE(1, 1));
    expect_meta(v, 2, A(1, 1), A(1, 1), 0);
    tt_tensor *back = tt_view(v, 0, NULL);
    expect_meta(back, 0, NULL, NULL, 0);
    double x;
    ck_assert_int_eq(tt_item(back, &x), TT_OK);
    ck_assert_double_eq(x, 4);
    tt_release(back);
    tt_release(v);
    tt_release(s);
    tt_release(ex);
    tt_release(b3);
    tt_release(sl);
    tt_release(b2);
    tt_release(tr);
    tt_release(base);
}
END_TEST

START_TEST(test_flatten)
{
    static const struct {
        int start, end;
    } ranges[] = {{0, -1}, {1, 2}, {0, 0}, {-2, -1}, {1, -1}, {0, 1}};
    for (int l = 0; l < NLAYOUTS; l++) {
        tt_tensor *in = make_input(l, TT_SHAPE(2, 3, 4), TT_F64);
        for (size_t r = 0; r < sizeof ranges / sizeof ranges[0]; r++) {
            int s = ranges[r].start < 0 ? ranges[r].start + 3 : ranges[r].start;
            int e = ranges[r].end < 0 ? ranges[r].end + 3 : ranges[r].end;
            int64_t ns[3];
            int nn = 0;
            for (int d = 0; d < 3; d++) {
                if (d > s && d <= e)
                    ns[nn - 1] *= tt_sizes(in)[d];
                else
                    ns[nn++] = tt_sizes(in)[d];
            }
            int64_t nst[3];
            bool possible = view_oracle(in, nn, ns, nst);
            tt_tensor *f = tt_flatten(in, ranges[r].start, ranges[r].end);
            expect_meta(f, nn, ns, NULL, possible ? tt_storage_offset(in) : 0);
            ck_assert(tt_same_storage(f, in) == possible);
            expect_same_values(f, in, layout_name[l]);
            tt_release(f);
        }
        tt_release(in);
    }
    /* 0-dim flattens to one element. */
    tt_tensor *s = tt_scalar(2, TT_F32);
    tt_tensor *f = tt_flatten(s, 0, -1);
    expect_meta(f, 1, A(1), A(1), 0);
    ck_assert(tt_same_storage(f, s));
    tt_release(f);
    tt_release(s);
}
END_TEST

typedef struct {
    int n;
    int64_t perm[TT_MAX_DIMS];
} perm_ctx;

static void map_perm(const int64_t *o, int64_t *i, const void *vctx)
{
    const perm_ctx *c = vctx;
    for (int k = 0; k < c->n; k++)
        i[c->perm[k]] = o[k];
}

/* Calls fn for every permutation of 0..n-1. */
static int for_each_perm(int n, void (*fn)(const int64_t *perm, void *ud), void *ud)
{
    int64_t p[TT_MAX_DIMS];
    int count = 0;
    int64_t total = 1;
    for (int i = 2; i <= n; i++)
        total *= i;
    for (int64_t code = 0; code < total; code++) {
        /* Decode `code` as a Lehmer code. */
        bool used[TT_MAX_DIMS] = {false};
        int64_t c = code;
        for (int i = 0; i < n; i++) {
            int64_t f = 1;
            for (int j = 2; j < n - i; j++)
                f *= j;
            int64_t pick = c / f;
            c %= f;
            for (int j = 0; j < n; j++)
                if (!used[j] && pick-- == 0) {
                    p[i] = j;
                    used[j] = true;
                    break;
                }
        }
        fn(p, ud);
        count++;
    }
    return count;
}

static void check_one_perm(const int64_t *perm, void *ud)
{
    const tt_tensor *in = ud;
    int n = tt_ndim(in);
    perm_ctx c = {.n = n};
    int64_t sz[TT_MAX_DIMS], st[TT_MAX_DIMS], negperm[TT_MAX_DIMS];
    for (int k = 0; k < n; k++) {
        c.perm[k] = perm[k];
        sz[k] = tt_sizes(in)[perm[k]];
        st[k] = tt_strides(in)[perm[k]];
        negperm[k] = k % 2 ? perm[k] - n : perm[k]; /* negative dims too */
    }
    tt_tensor *p = tt_permute(in, n, negperm);
    expect_meta(p, n, sz, st, tt_storage_offset(in));
    expect_view_of(p, in, map_perm, &c, "permute");
    tt_release(p);
}

START_TEST(test_permute_transpose_t)
{
    int perms = 0;
    for (int l = 0; l < NLAYOUTS; l++)
        for (int sh = 0; sh < NVIEW_SHAPES; sh++) {
            const shape *S = &view_shapes[sh];
            tt_tensor *in = make_input(l, S->n, S->s, TT_F64);
            perms += for_each_perm(S->n, check_one_perm, in);
            int n = S->n;
            for (int a = -n; a < (n ? n : 1); a++)
                for (int b = -n; b < (n ? n : 1); b++) {
                    if (n == 0 && (a < -1 || b < -1))
                        continue;
                    tt_tensor *t = tt_transpose(in, a, b);
                    perm_ctx c = {.n = n};
                    int64_t sz[TT_MAX_DIMS], st[TT_MAX_DIMS];
                    for (int k = 0; k < n; k++)
                        c.perm[k] = k;
                    if (n > 0) {
                        int x = a < 0 ? a + n : a, y = b < 0 ? b + n : b;
                        c.perm[x] = y;
                        c.perm[y] = x;
                    }
                    for (int k = 0; k < n; k++) {
                        sz[k] = tt_sizes(in)[c.perm[k]];
                        st[k] = tt_strides(in)[c.perm[k]];
                    }
                    expect_meta(t, n, sz, st, tt_storage_offset(in));
                    expect_view_of(t, in, map_perm, &c, "transpose");
                    tt_release(t);
                }
            if (n <= 2) {
                tt_tensor *t = tt_t(in);
                perm_ctx c = {.n = n, .perm = {n == 2 ? 1 : 0, 0}};
                int64_t sz[2], st[2];
                for (int k = 0; k < n; k++) {
                    sz[k] = tt_sizes(in)[c.perm[k]];
                    st[k] = tt_strides(in)[c.perm[k]];
                }
                expect_meta(t, n, sz, st, tt_storage_offset(in));
                expect_view_of(t, in, map_perm, &c, "t");
                tt_release(t);
            }
            tt_release(in);
        }
    ck_assert_int_eq(perms, NLAYOUTS * (6 + 6 + 1 + 1 + 6 + 24 + 2));
}
END_TEST

typedef struct {
    int dim;
    int64_t start, step;
} slice_ctx;

static void map_slice(const int64_t *o, int64_t *i, const void *vctx)
{
    const slice_ctx *c = vctx;
    for (int k = 0; k < TT_MAX_DIMS; k++)
        i[k] = o[k];
    i[c->dim] = c->start + o[c->dim] * c->step;
}

/* Python's slice clamping, written out independently. */
static void py_slice(int64_t n, int64_t start, int64_t end, int64_t step, int64_t *first,
                     int64_t *len)
{
    if (start < 0)
        start = start + n < 0 ? 0 : start + n;
    if (start > n)
        start = n;
    if (end < 0)
        end = end + n < 0 ? 0 : end + n;
    if (end > n)
        end = n;
    *first = start;
    *len = end > start ? (end - start + step - 1) / step : 0;
}

START_TEST(test_narrow_slice_select)
{
    static const int64_t slices[][3] = {
        {0, INT64_MAX, 1}, {1, INT64_MAX, 2}, {-2, 100, 1}, {-100, 2, 1}, {1, -1, 1},
        {5, 2, 1}, {0, 3, 3}, {INT64_MIN, INT64_MAX, 2}, {2, 2, 1}, {-1, INT64_MAX, 1},
    };
    int nslices = 0, nnarrow = 0, nselect = 0;
    for (int l = 0; l < NLAYOUTS; l++)
        for (int sh = 0; sh < NVIEW_SHAPES; sh++) {
            const shape *S = &view_shapes[sh];
            int n = S->n;
            if (n == 0)
                continue;
            tt_tensor *in = make_input(l, n, S->s, TT_F64);
            for (int dim = -n; dim < n; dim++) {
                int d = dim < 0 ? dim + n : dim;
                int64_t size = tt_sizes(in)[d], stride = tt_strides(in)[d];
                for (size_t s = 0; s < sizeof slices / sizeof slices[0]; s++) {
                    int64_t first, len;
                    py_slice(size, slices[s][0], slices[s][1], slices[s][2], &first, &len);
                    tt_tensor *v = tt_slice(in, dim, slices[s][0], slices[s][1], slices[s][2]);
                    int64_t sz[TT_MAX_DIMS], st[TT_MAX_DIMS];
                    memcpy(sz, tt_sizes(in), sizeof sz);
                    memcpy(st, tt_strides(in), sizeof st);
                    sz[d] = len;
                    st[d] = stride * slices[s][2];
                    expect_meta(v, n, sz, st, tt_storage_offset(in) + first * stride);
                    slice_ctx c = {d, first, slices[s][2]};
                    expect_view_of(v, in, map_slice, &c, "slice");
                    tt_release(v);
                    nslices++;
                }
                /* narrow: every valid (start, length), start also negative */
                for (int64_t start = -size; start <= size; start++)
                    for (int64_t len = 0; len <= size - (start < 0 ? start + size : start); len++) {
                        int64_t s0 = start < 0 ? start + size : start;
                        tt_tensor *v = tt_narrow(in, dim, start, len);
                        int64_t sz[TT_MAX_DIMS], st[TT_MAX_DIMS];
                        memcpy(sz, tt_sizes(in), sizeof sz);
                        memcpy(st, tt_strides(in), sizeof st);
                        sz[d] = len;
                        expect_meta(v, n, sz, st, tt_storage_offset(in) + s0 * stride);
                        slice_ctx c = {d, s0, 1};
                        expect_view_of(v, in, map_slice, &c, "narrow");
                        tt_release(v);
                        nnarrow++;
                    }
                /* select: every index, positive and negative */
                for (int64_t idx = -size; idx < size; idx++) {
                    int64_t i0 = idx < 0 ? idx + size : idx;
                    tt_tensor *v = tt_select(in, dim, idx);
                    int64_t sz[TT_MAX_DIMS], st[TT_MAX_DIMS];
                    for (int k = 0, j = 0; k < n; k++)
                        if (k != d) {
                            sz[j] = tt_sizes(in)[k];
                            st[j++] = tt_strides(in)[k];
                        }
                    expect_meta(v, n - 1, sz, st, tt_storage_offset(in) + i0 * stride);
                    int64_t oidx[TT_MAX_DIMS], iidx[TT_MAX_DIMS];
                    for (int64_t e = 0; e < tt_numel(v); e++) {
                        unravel(n - 1, tt_sizes(v), e, oidx);
                        for (int k = 0, j = 0; k < n; k++)
                            iidx[k] = k == d ? i0 : oidx[j++];
                        ck_assert(elem_off(v, oidx) == elem_off(in, iidx));
                        ck_assert(get(v, oidx) == get(in, iidx));
                    }
                    ck_assert(tt_same_storage(v, in));
                    tt_release(v);
                    nselect++;
                }
            }
            tt_release(in);
        }
    ck_assert_int_gt(nslices, 500);
    ck_assert_int_gt(nnarrow, 500);
    ck_assert_int_gt(nselect, 100);
}
END_TEST

typedef struct {
    int nin, nout;
    const tt_size *in_sizes;
} expand_ctx;

static void map_expand(const int64_t *o, int64_t *i, const void *vctx)
{
    const expand_ctx *c = vctx;
    for (int k = 0; k < c->nin; k++) {
        int ko = k + c->nout - c->nin;
        i[k] = c->in_sizes[k] == 1 ? 0 : o[ko];
    }
}

START_TEST(test_expand)
{
    static const struct {
        int nin;
        int64_t in[3];
        int nout;
        int64_t target[4], sizes[4];
    } cases[] = {
        {2, {3, 1}, 3, {2, 3, 4}, {2, 3, 4}},
        {2, {3, 1}, 2, {3, -1}, {3, 1}},
        {2, {3, 1}, 3, {1, 3, 5}, {1, 3, 5}},
        {2, {3, 1}, 4, {2, 1, -1, 0}, {2, 1, 3, 0}},
        {1, {3}, 2, {1, 3}, {1, 3}},
        {1, {3}, 3, {2, 1, 3}, {2, 1, 3}},
        {1, {1}, 1, {7}, {7}},
        {0, {0}, 2, {2, 3}, {2, 3}},
        {0, {0}, 1, {1}, {1}},
        {3, {1, 2, 1}, 3, {-1, -1, -1}, {1, 2, 1}},
        {3, {1, 2, 1}, 3, {4, 2, 5}, {4, 2, 5}},
    };
    for (int l = 0; l < NLAYOUTS; l++)
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            tt_tensor *in = make_input(l, cases[c].nin, cases[c].in, TT_F64);
            tt_tensor *e = tt_expand(in, cases[c].nout, cases[c].target);
            ck_assert_msg(e != NULL, "case %zu: %s", c, tt_errmsg());
            /* PyTorch's inferExpandGeometry, from the right: an existing
             * dim keeps its stride unless broadcast (0); a new leading dim
             * of size 1 gets size*stride of the next one, others 0; every
             * dim of a 0-dim input gets 0. */
            int64_t st[4];
            int nin = cases[c].nin, nout = cases[c].nout;
            for (int i = nout - 1; i >= 0; i--) {
                int j = i - (nout - nin);
                int64_t want = cases[c].sizes[i];
                if (j >= 0)
                    st[i] = tt_sizes(in)[j] == want ? tt_strides(in)[j] : 0;
                else if (want == 1 && nin > 0)
                    st[i] = cases[c].sizes[i + 1] * st[i + 1];
                else
                    st[i] = 0;
            }
            expect_meta(e, nout, cases[c].sizes, st, tt_storage_offset(in));
            expand_ctx x = {nin, nout, tt_sizes(in)};
            expect_view_of(e, in, map_expand, &x, "expand");
            tt_release(e);
            tt_release(in);
        }
    /* Concrete PyTorch results. */
    tt_tensor *v = tt_zeros(TT_SHAPE(3), TT_F32);
    tt_tensor *e = tt_expand(v, TT_SHAPE(1, 3));
    expect_meta(e, 2, A(1, 3), A(3, 1), 0);
    tt_release(e);
    e = tt_expand(v, TT_SHAPE(2, 1, 3));
    expect_meta(e, 3, A(2, 1, 3), A(0, 3, 1), 0);
    tt_release(e);
    tt_release(v);
}
END_TEST

static void map_identity(const int64_t *o, int64_t *i, const void *vctx)
{
    const int *n = vctx;
    for (int k = 0; k < *n; k++)
        i[k] = o[k];
}

typedef struct {
    int nin;
    bool keep[TT_MAX_DIMS + 1]; /* per input dim: present in the output */
    int inserted;               /* output dim that is new, or -1 */
} squeeze_ctx;

static void map_squeeze(const int64_t *o, int64_t *i, const void *vctx)
{
    const squeeze_ctx *c = vctx;
    int j = 0;
    for (int k = 0; k < c->nin; k++) {
        if (j == c->inserted)
            j++;
        i[k] = c->keep[k] ? o[j++] : 0;
    }
}

START_TEST(test_squeeze_unsqueeze)
{
    int count = 0;
    for (int l = 0; l < NLAYOUTS; l++)
        for (int sh = 0; sh < NVIEW_SHAPES; sh++) {
            const shape *S = &view_shapes[sh];
            int n = S->n;
            tt_tensor *in = make_input(l, n, S->s, TT_F64);
            /* squeeze(dim) */
            for (int dim = n ? -n : -1; dim < (n ? n : 1); dim++) {
                int d = dim < 0 ? dim + (n ? n : 1) : dim;
                tt_tensor *q = tt_squeeze(in, dim);
                squeeze_ctx c = {.nin = n, .inserted = -1};
                int64_t sz[TT_MAX_DIMS], st[TT_MAX_DIMS];
                int k = 0;
                for (int i = 0; i < n; i++) {
                    c.keep[i] = !(i == d && tt_sizes(in)[i] == 1);
                    if (c.keep[i]) {
                        sz[k] = tt_sizes(in)[i];
                        st[k++] = tt_strides(in)[i];
                    }
                }
                expect_meta(q, k, sz, st, tt_storage_offset(in));
                expect_view_of(q, in, map_squeeze, &c, "squeeze");
                tt_release(q);
                count++;
            }
            /* squeeze_all */
            {
                tt_tensor *q = tt_squeeze_all(in);
                squeeze_ctx c = {.nin = n, .inserted = -1};
                int64_t sz[TT_MAX_DIMS], st[TT_MAX_DIMS];
                int k = 0;
                for (int i = 0; i < n; i++) {
                    c.keep[i] = tt_sizes(in)[i] != 1;
                    if (c.keep[i]) {
                        sz[k] = tt_sizes(in)[i];
                        st[k++] = tt_strides(in)[i];
                    }
                }
                expect_meta(q, k, sz, st, tt_storage_offset(in));
                expect_view_of(q, in, map_squeeze, &c, "squeeze_all");
                tt_release(q);
            }
            /* unsqueeze at every position, negative too */
            for (int dim = -(n + 1); dim <= n; dim++) {
                int d = dim < 0 ? dim + n + 1 : dim;
                tt_tensor *u = tt_unsqueeze(in, dim);
                int64_t sz[TT_MAX_DIMS], st[TT_MAX_DIMS];
                for (int i = 0, k = 0; i <= n; i++) {
                    if (i == d) {
                        sz[i] = 1;
                        /* PyTorch: size*stride of the dim it goes before, 1 at the end */
                        st[i] = d < n ? tt_sizes(in)[d] * tt_strides(in)[d] : 1;
                    } else {
                        sz[i] = tt_sizes(in)[k];
                        st[i] = tt_strides(in)[k++];
                    }
                }
                expect_meta(u, n + 1, sz, st, tt_storage_offset(in));
                squeeze_ctx c = {.nin = n, .inserted = d};
                for (int i = 0; i < n; i++)
                    c.keep[i] = true;
                expect_view_of(u, in, map_squeeze, &c, "unsqueeze");
                /* squeeze undoes it */
                tt_tensor *q = tt_squeeze(u, dim);
                expect_meta(q, n, tt_sizes(in), tt_strides(in), tt_storage_offset(in));
                tt_release(q);
                tt_release(u);
                count++;
            }
            /* detach: same everything, same storage */
            tt_tensor *dt = tt_detach(in);
            expect_meta(dt, n, tt_sizes(in), tt_strides(in), tt_storage_offset(in));
            expect_view_of(dt, in, map_identity, &n, "detach");
            tt_release(dt);
            tt_release(in);
        }
    ck_assert_int_gt(count, 100);
    /* A concrete case: [3] -> unsqueeze(0) has strides [3, 1], (1) [1, 1]. */
    tt_tensor *v = tt_zeros(TT_SHAPE(3), TT_F32);
    tt_tensor *u = tt_unsqueeze(v, 0);
    expect_meta(u, 2, A(1, 3), A(3, 1), 0);
    tt_release(u);
    u = tt_unsqueeze(v, -1);
    expect_meta(u, 2, A(3, 1), A(1, 1), 0);
    tt_release(u);
    tt_release(v);
}
END_TEST

typedef struct {
    int n;
    const int64_t *strides;
    int64_t offset;
} strided_ctx;

START_TEST(test_as_strided)
{
    tt_tensor *base = counting(TT_SHAPE(4, 5), TT_F64); /* 20 elements: 1..20 */
    tt_tensor *view = tt_narrow(base, 0, 1, 2);          /* offset 5 */
    static const struct {
        int n;
        int64_t sizes[3], strides[3], offset;
    } cases[] = {
        {2, {2, 2}, {1, 2}, 0},
        {1, {20}, {1}, 0},
        {2, {3, 3}, {1, 1}, 4},   /* overlapping windows */
        {2, {5, 4}, {1, 5}, 0},   /* transpose */
        {3, {2, 2, 2}, {10, 0, 3}, 1},
        {1, {1}, {100}, 19},      /* last element; size-1 stride is free */
        {0, {0}, {0}, 7},
        {1, {0}, {1}, 20},        /* empty at the end */
    };
    tt_tensor *sources[2] = {base, view};
    for (int src = 0; src < 2; src++)
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            tt_tensor *t = tt_as_strided(sources[src], cases[c].n, cases[c].sizes,
                                         cases[c].strides, cases[c].offset);
            ck_assert_msg(t != NULL, "case %zu: %s", c, tt_errmsg());
            expect_meta(t, cases[c].n, cases[c].sizes, cases[c].strides, cases[c].offset);
            ck_assert(tt_same_storage(t, base));
            int64_t idx[3];
            for (int64_t e = 0; e < tt_numel(t); e++) {
                unravel(cases[c].n, cases[c].sizes, e, idx);
                int64_t off = cases[c].offset;
                for (int d = 0; d < cases[c].n; d++)
                    off += idx[d] * cases[c].strides[d];
                ck_assert_double_eq(get(t, idx), (double)(off + 1));
            }
            tt_release(t);
        }
    tt_release(view);
    tt_release(base);
}
END_TEST

START_TEST(test_views_of_8_dims)
{
    int64_t sz[8] = {2, 1, 2, 1, 2, 1, 2, 1};
    tt_tensor *t = counting(8, sz, TT_I64);
    int64_t perm[8] = {7, 6, 5, 4, 3, 2, 1, 0};
    tt_tensor *p = tt_permute(t, 8, perm);
    int64_t psz[8], pst[8], st[8];
    contig_strides(8, sz, st);
    for (int i = 0; i < 8; i++) {
        psz[i] = sz[7 - i];
        pst[i] = st[7 - i];
    }
    expect_meta(p, 8, psz, pst, 0);
    tt_tensor *q = tt_squeeze_all(p);
    expect_meta(q, 4, A(2, 2, 2, 2), A(1, 2, 4, 8), 0);
    tt_tensor *r = tt_reshape(q, TT_SHAPE(16));
    ck_assert(!tt_same_storage(r, q));
    static const double want[16] = {1, 9, 5, 13, 3, 11, 7, 15, 2, 10, 6, 14, 4, 12, 8, 16};
    for (int i = 0; i < 16; i++)
        ck_assert_double_eq(getflat(r, i), want[i]);
    tt_release(r);
    tt_release(q);
    tt_release(p);
    tt_release(t);
}
END_TEST


/* ------------------------------------------- metadata as values */

static int64_t call_int(const char *op, tt_tensor *t, int64_t dim, bool has_dim)
{
    tt_value out = {0};
    tt_value args[2] = {tt_v_tensor(t), tt_v_int(dim)};
    tt_status st = tt_op_call(tt_op_find(op), args, has_dim ? 2 : 1, &out, 1);
    ck_assert_msg(st == TT_OK, "%s: %s", op, tt_errmsg());
    ck_assert_int_eq(out.kind, TT_V_INT);
    return out.u.i;
}

START_TEST(test_meta_queries_eager)
{
    tt_tensor *x = NN(tt_zeros(TT_SHAPE(2, 3, 4), TT_F32));
    tt_tensor *v = NN(tt_narrow(x, 1, 1, 2)); /* [2, 2, 4], strides [12, 4, 1], offset 4 */
    ck_assert_int_eq(call_int("tt::sym_size.int", v, -2, true), 2);
    ck_assert_int_eq(call_int("tt::sym_size.int", v, 2, true), 4);
    ck_assert_int_eq(call_int("tt::sym_stride.int", v, 0, true), 12);
    ck_assert_int_eq(call_int("tt::sym_numel", v, 0, false), 16);
    ck_assert_int_eq(call_int("tt::sym_storage_offset", v, 0, false), 4);
    tt_value out;
    ck_assert_int_eq(tt_op_call(tt_op_find("tt::sym_size.int"),
                                (tt_value[]){tt_v_tensor(v), tt_v_int(-4)}, 2, &out, 1),
                     TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt::sym_size.int: argument 'dim' (#2): dimension out of range "
                               "(expected to be in range of [-3, 2], but got -4)");
    tt_tensor *s = NN(tt_scalar_tensor(2.5, TT_F64));
    ck_assert_int_eq(tt_op_call(tt_op_find("tt::sym_stride.int"),
                                (tt_value[]){tt_v_tensor(s), tt_v_int(0)}, 2, &out, 1),
                     TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt::sym_stride.int: argument 'dim' (#2): a 0-dim tensor has no "
                               "dim 0");
    /* _local_scalar_dense: a number of the element's kind */
    ck_assert_int_eq(tt_op_call(tt_op_find("tt::_local_scalar_dense"),
                                (tt_value[]){tt_v_tensor(s)}, 1, &out, 1), TT_OK);
    ck_assert(out.kind == TT_V_FLOAT && out.u.f == 2.5);
    int64_t big = (INT64_C(1) << 60) + 1;
    tt_tensor *i = NN(tt_from_data(TT_SHAPE(1), TT_I64, &big));
    ck_assert_int_eq(tt_op_call(tt_op_find("tt::_local_scalar_dense"),
                                (tt_value[]){tt_v_tensor(i)}, 1, &out, 1), TT_OK);
    ck_assert(out.kind == TT_V_INT && out.u.i == big);
    bool yes = true;
    tt_tensor *b = NN(tt_from_data(TT_SHAPE(1, 1), TT_BOOL, &yes));
    ck_assert_int_eq(tt_op_call(tt_op_find("tt::_local_scalar_dense"),
                                (tt_value[]){tt_v_tensor(b)}, 1, &out, 1), TT_OK);
    ck_assert(out.kind == TT_V_BOOL && out.u.b);
    ck_assert_int_eq(tt_op_call(tt_op_find("tt::_local_scalar_dense"),
                                (tt_value[]){tt_v_tensor(v)}, 1, &out, 1), TT_EINVAL);
    ck_assert_error(TT_EINVAL, "tt::_local_scalar_dense: argument 'self' (#1): expected a tensor "
                               "with one element, got shape [2, 2, 4]");
    tt_clear_error();
    tt_release(b), tt_release(i), tt_release(s), tt_release(v), tt_release(x);
}
END_TEST

/* A traced function that views its input through a size it asked for by
 * op: the node is in the graph, the size is the input's symbol, and the
 * compiled function follows a new size. */
static tt_status f_size_by_op(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_value n = {0};
    tt_status st = tt_op_call(tt_op_find("tt::sym_numel"), (tt_value[]){tt_v_tensor(in[0])}, 1,
                              &n, 1);
    out[0] = st ? NULL : tt_view(in[0], 1, (const tt_size[]){n.u.i});
    return out[0] ? TT_OK : tt_errcode();
}

static tt_status f_item_by_op(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_value v = {0};
    tt_status st = tt_op_call(tt_op_find("tt::_local_scalar_dense"),
                              (tt_value[]){tt_v_tensor(in[0])}, 1, &v, 1);
    out[0] = st ? NULL : tt_mul_scalar(in[0], v.u.f);
    return st ? st : out[0] ? TT_OK : tt_errcode();
}

START_TEST(test_meta_queries_traced)
{
    tt_tensor *x = NN(tt_ones(TT_SHAPE(2, 3), TT_F32));
    tt_graph *g = NN(tt_trace(f_size_by_op, 1, &x, &(tt_trace_opts){.mode = TT_TRACE_SYMBOLIC,
                                                                   .fullgraph = true}));
    OK(tt_expect_graph_text(g, "def forward(in0: \"f32[s0, s1]\"):\n"
                               "    sym_numel: \"SymInt\" = tt::sym_numel(in0)\n"
                               "    view: \"f32[s0*s1]\" = tt::view(in0, [s0*s1])\n"
                               "    return (view,)\n", 0));
    tt_graph_free(g);
    tt_compiled *c = NN(tt_compile(f_size_by_op, 1, 1, &(tt_trace_opts){.mode = TT_TRACE_SYMBOLIC,
                                                                         .fullgraph = true}));
    for (int k = 0; k < 2; k++) {
        tt_tensor *in = NN(tt_ones(TT_SHAPE(2 + k, 3 + 2 * k), TT_F32)), *r;
        OK(tt_compiled_call(c, &in, &r));
        ck_assert_int_eq(tt_ndim(r), 1);
        ck_assert_int_eq(tt_sizes(r)[0], (2 + k) * (3 + 2 * k));
        tt_release(r), tt_release(in);
    }
    tt_tensor *wide = NN(tt_ones(TT_SHAPE(7, 9), TT_F32));
    OK(tt_expect_no_recompile(c, 2, (tt_tensor **const[]){&x, &wide}));
    tt_release(wide);
    tt_compiled_free(c);
    /* an element's value is data: a break naming this file's line */
    tt_tensor *one = NN(tt_ones(TT_SHAPE(1), TT_F32));
    ck_assert_ptr_null(tt_trace(f_item_by_op, 1, &one, &(tt_trace_opts){.mode = TT_TRACE_SYMBOLIC,
                                                                      .fullgraph = true}));
    ck_assert_error(TT_EGRAPHBREAK, "tt::_local_scalar_dense reads the data of fake f32[1]");
    ck_assert_error(TT_EGRAPHBREAK, "test_views.c");
    /* a real trace would bake the number into the graph: a break too */
    ck_assert_ptr_null(tt_trace(f_item_by_op, 1, &one, &(tt_trace_opts){.mode = TT_TRACE_REAL}));
    ck_assert_error(TT_EGRAPHBREAK, "tt::_local_scalar_dense reads the data of f32[1]");
    tt_clear_error();
    /* compiled without fullgraph, the number is read at each call */
    c = NN(tt_compile(f_item_by_op, 1, 1, &(tt_trace_opts){.mode = TT_TRACE_SYMBOLIC}));
    for (int k = 2; k < 5; k++) {
        tt_tensor *in = NN(tt_full(1, (const int64_t[]){1}, k, TT_F32)), *r;
        OK(tt_compiled_call(c, &in, &r));
        double v;
        OK(tt_item(r, &v));
        ck_assert_double_eq(v, k * k);
        tt_release(r), tt_release(in);
    }
    tt_compiled_free(c);
    tt_clear_error();
    tt_release(one), tt_release(x);
}
END_TEST

static Suite *views_suite(void)
{
    Suite *s = suite_create("views");
    TCase *tc = tt_tcase("views");
    tcase_add_test(tc, test_view_reshape_table);
    tcase_add_test(tc, test_view_strides_pytorch);
    tcase_add_test(tc, test_flatten);
    tcase_add_test(tc, test_permute_transpose_t);
    tcase_add_test(tc, test_narrow_slice_select);
    tcase_add_test(tc, test_expand);
    tcase_add_test(tc, test_squeeze_unsqueeze);
    tcase_add_test(tc, test_as_strided);
    tcase_add_test(tc, test_views_of_8_dims);
    tcase_add_test(tc, test_meta_queries_eager);
    tcase_add_test(tc, test_meta_queries_traced);
    suite_add_tcase(s, tc);
    return s;
}

TT_TEST_MAIN(views_suite)
