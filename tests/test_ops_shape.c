/* The view and copy ops through the dispatcher, and cat/stack against
 * reference loops. */
#include "tt_test.h"

#include <stdint.h>
#include <stdio.h>

/* ------------------------------------------------------------------ helpers */

static const tt_dtype all_dtypes[] = {TT_F32, TT_F64, TT_I64, TT_I32, TT_U8, TT_BOOL};
#define NDTYPES 6

/* Advances a row-major multi-index; false after the last one. */
static bool next_idx(int nd, const tt_size *sizes, int64_t *idx)
{
    for (int d = nd - 1; d >= 0; d--) {
        if (++idx[d] < sizes[d])
            return true;
        idx[d] = 0;
    }
    return false;
}

static int64_t numel_of(int nd, const tt_size *sizes)
{
    int64_t n = 1;
    for (int d = 0; d < nd; d++)
        n *= sizes[d];
    return n;
}

static double get(const tt_tensor *t, const int64_t *idx)
{
    double v = 0;
    ck_assert_int_eq(tt_get_at(t, tt_ndim(t), idx, &v, TT_HERE), TT_OK);
    return v;
}

/* Small distinct values that every dtype holds exactly. */
static double pattern(int64_t k, int seed, tt_dtype dt)
{
    int64_t v = (k * 7 + seed * 3 + 1) % 23;
    return dt == TT_BOOL ? (double)(v % 2) : (double)v;
}

static void fill_pattern(tt_tensor *t, int seed)
{
    int nd = tt_ndim(t);
    int64_t idx[TT_MAX_DIMS] = {0}, k = 0;
    if (numel_of(nd, tt_sizes(t)) == 0)
        return;
    do {
        ck_assert_int_eq(tt_set_at(t, nd, idx, pattern(k++, seed, tt_dtype_of(t)), TT_HERE),
                         TT_OK);
    } while (next_idx(nd, tt_sizes(t), idx));
}

enum { L_CONTIG, L_TRANSPOSED, L_SLICED, L_EXPANDED, L_OFFSET, NLAYOUTS };
static const char *const layout_names[] = {"contig", "transposed", "sliced", "expanded",
                                           "offset"};

/* A tensor of `sizes` (nd >= 1) in one of the layouts, filled with a
 * pattern. The base it views is released (the view holds the storage). */
static tt_tensor *make_input(int nd, const int64_t *sizes, tt_dtype dt, int layout, int seed)
{
    int64_t bs[TT_MAX_DIMS];
    memcpy(bs, sizes, sizeof(int64_t) * (size_t)nd);
    if (layout == L_TRANSPOSED && nd < 2)
        layout = L_SLICED;
    if (layout == L_TRANSPOSED) {
        bs[nd - 1] = sizes[nd - 2];
        bs[nd - 2] = sizes[nd - 1];
    } else if (layout == L_SLICED) {
        bs[nd - 1] = 2 * sizes[nd - 1];
    } else if (layout == L_EXPANDED) {
        bs[0] = 1;
    } else if (layout == L_OFFSET) {
        bs[0] = sizes[0] + 1;
    }
    tt_tensor *base = tt_empty(nd, bs, dt);
    ck_assert_ptr_nonnull(base);
    fill_pattern(base, seed);
    tt_tensor *v;
    switch (layout) {
    case L_TRANSPOSED: v = tt_transpose(base, -1, -2); break;
    case L_SLICED: v = tt_slice(base, -1, 0, INT64_MAX, 2); break;
    case L_EXPANDED: v = tt_expand(base, nd, sizes); break;
    case L_OFFSET: v = tt_narrow(base, 0, 1, sizes[0]); break;
    default: v = tt_retain(base); break;
    }
    tt_release(base);
    ck_assert_ptr_nonnull(v);
    return v;
}

/* Same metadata: dtype, fake-ness, sizes, strides, offset. */
static void assert_same_meta(const tt_tensor *a, const tt_tensor *b, const char *what)
{
    char s1[128], s2[128], t1[128], t2[128];
    ck_assert_msg(tt_ndim(a) == tt_ndim(b) && tt_dtype_of(a) == tt_dtype_of(b) &&
                      tt_is_fake(a) == tt_is_fake(b),
                  "%s: %s vs %s", what, tt_describe(a, s1, sizeof s1),
                  tt_describe(b, s2, sizeof s2));
    for (int d = 0; d < tt_ndim(a); d++)
        ck_assert_msg(tt_sizes(a)[d] == tt_sizes(b)[d] && tt_strides(a)[d] == tt_strides(b)[d],
                      "%s: %s %s vs %s %s", what, tt_shape_str(a, s1, sizeof s1),
                      tt_strides_str(a, t1, sizeof t1), tt_shape_str(b, s2, sizeof s2),
                      tt_strides_str(b, t2, sizeof t2));
    ck_assert_msg(tt_storage_offset(a) == tt_storage_offset(b), "%s: offset %lld vs %lld",
                  what, (long long)tt_storage_offset(a), (long long)tt_storage_offset(b));
}

static void assert_same_values(const tt_tensor *a, const tt_tensor *b)
{
    int nd = tt_ndim(a);
    int64_t idx[TT_MAX_DIMS] = {0};
    if (tt_numel(a) == 0)
        return;
    do
        ck_assert_double_eq(get(a, idx), get(b, idx));
    while (next_idx(nd, tt_sizes(a), idx));
}

static void assert_strides(const tt_tensor *t, int nd, const int64_t *want)
{
    char s[128];
    ck_assert_int_eq(tt_ndim(t), nd);
    for (int d = 0; d < nd; d++)
        ck_assert_msg(tt_strides(t)[d] == want[d], "strides %s, dim %d should be %lld",
                      tt_strides_str(t, s, sizeof s), d, (long long)want[d]);
}

/* ------------------------------------------------ view ops through the ops */

/* A view or copy op called through the dispatcher, beside the runtime
 * function it must agree with; args are the op's arguments after self. */
typedef struct {
    const char *op;
    int nargs;
    tt_value args[4];
    tt_tensor *(*direct)(const tt_tensor *x, const tt_value *a);
} view_case;

static tt_tensor *d_view(const tt_tensor *x, const tt_value *a) { return tt_view(x, a[0].n, a[0].u.ints); }
static tt_tensor *d_reshape(const tt_tensor *x, const tt_value *a) { return tt_reshape(x, a[0].n, a[0].u.ints); }
static tt_tensor *d_permute(const tt_tensor *x, const tt_value *a) { return tt_permute(x, a[0].n, a[0].u.ints); }
static tt_tensor *d_transpose(const tt_tensor *x, const tt_value *a) { return tt_transpose(x, (int)a[0].u.i, (int)a[1].u.i); }
static tt_tensor *d_t(const tt_tensor *x, const tt_value *a) { (void)a; return tt_t(x); }
static tt_tensor *d_narrow(const tt_tensor *x, const tt_value *a) { return tt_narrow(x, (int)a[0].u.i, a[1].u.i, a[2].u.i); }
/* None bounds: the whole dim. */
static tt_tensor *d_slice(const tt_tensor *x, const tt_value *a)
{
    return tt_slice(x, (int)a[0].u.i, a[1].kind == TT_V_NONE ? 0 : a[1].u.i,
                    a[2].kind == TT_V_NONE ? INT64_MAX : a[2].u.i, a[3].u.i);
}
static tt_tensor *d_slice_none(const tt_tensor *x, const tt_value *a) { return tt_slice(x, (int)a[0].u.i, 0, INT64_MAX, 1); }
static tt_tensor *d_select(const tt_tensor *x, const tt_value *a) { return tt_select(x, (int)a[0].u.i, a[1].u.i); }
static tt_tensor *d_expand(const tt_tensor *x, const tt_value *a) { return tt_expand(x, a[0].n, a[0].u.ints); }
static tt_tensor *d_squeeze_dim(const tt_tensor *x, const tt_value *a) { return tt_squeeze(x, (int)a[0].u.i); }
static tt_tensor *d_squeeze(const tt_tensor *x, const tt_value *a) { (void)a; return tt_squeeze_all(x); }
static tt_tensor *d_unsqueeze(const tt_tensor *x, const tt_value *a) { return tt_unsqueeze(x, (int)a[0].u.i); }
static tt_tensor *d_flatten(const tt_tensor *x, const tt_value *a) { return tt_flatten(x, (int)a[0].u.i, (int)a[1].u.i); }
static tt_tensor *d_flatten_all(const tt_tensor *x, const tt_value *a) { (void)a; return tt_flatten(x, 0, -1); }
static tt_tensor *d_as_strided(const tt_tensor *x, const tt_value *a) { return tt_as_strided(x, a[0].n, a[0].u.ints, a[1].u.ints, a[2].u.i); }
static tt_tensor *d_as_strided_none(const tt_tensor *x, const tt_value *a) { return tt_as_strided(x, a[0].n, a[0].u.ints, a[1].u.ints, tt_storage_offset(x)); }
static tt_tensor *d_detach(const tt_tensor *x, const tt_value *a) { (void)a; return tt_detach(x); }
static tt_tensor *d_contiguous(const tt_tensor *x, const tt_value *a) { (void)a; return tt_contiguous(x); }
static tt_tensor *d_clone(const tt_tensor *x, const tt_value *a) { (void)a; return tt_clone(x); }
static tt_tensor *d_to_copy(const tt_tensor *x, const tt_value *a) { return tt_to_dtype(x, a[0].u.dtype); }

static bool is_copy_op(const char *op)
{
    return !strcmp(op, "tt::clone") || !strcmp(op, "tt::_to_copy");
}

static bool may_alias_op(const char *op)
{
    return !strcmp(op, "tt::contiguous") || !strcmp(op, "tt::reshape") ||
           !strcmp(op, "tt::flatten.using_ints");
}

/* Runs one case on x both ways: results must agree in metadata, aliasing
 * and values, or both fail with the same status and message. Returns
 * whether it succeeded. */
static bool run_view_case(const view_case *c, const tt_tensor *x)
{
    const tt_op *op = tt_op_find(c->op);
    ck_assert_msg(op != NULL, "%s: %s", c->op, tt_errmsg());
    tt_clear_error();
    tt_tensor *want = c->direct(x, c->args);
    tt_status want_st = tt_errcode();
    char want_msg[512], got_msg[512];
    tt_test_errmsg_core(want_msg, sizeof want_msg);
    tt_value args[5] = {tt_v_tensor(x)};
    for (int i = 0; i < c->nargs; i++)
        args[i + 1] = c->args[i];
    tt_clear_error();
    tt_tensor *got = tt_op_call1(op, args, c->nargs + 1);
    char d[128];
    tt_describe(x, d, sizeof d);
    if (!want) {
        ck_assert_msg(!got, "%s on %s: the op succeeded, the runtime failed with %s",
                      c->op, d, want_msg);
        tt_test_errmsg_core(got_msg, sizeof got_msg);
        ck_assert_msg(tt_errcode() == want_st && !strcmp(got_msg, want_msg),
                      "%s on %s: op error '%s', runtime error '%s'", c->op, d, got_msg,
                      want_msg);
        return false;
    }
    ck_assert_msg(got != NULL, "%s on %s: %s", c->op, d, tt_errmsg());
    assert_same_meta(got, want, c->op);
    ck_assert_msg(got != x, "%s returned its input object", c->op);
    /* Views alias, copies do not, the "may alias" ops as the runtime did. */
    ck_assert_int_eq(tt_same_storage(got, x), tt_same_storage(want, x));
    if (is_copy_op(c->op))
        ck_assert(!tt_same_storage(got, x));
    else if (!may_alias_op(c->op))
        ck_assert(tt_same_storage(got, x));
    if (!tt_is_fake(x))
        assert_same_values(got, want);
    tt_release(got);
    tt_release(want);
    return true;
}

START_TEST(test_view_ops_match_runtime)
{
    view_case cases[] = {
        {"tt::view", 1, {tt_v_ints(TT_INTS(4, -1))}, d_view},
        {"tt::view", 1, {tt_v_ints(TT_INTS(-1))}, d_view},
        {"tt::reshape", 1, {tt_v_ints(TT_INTS(4, -1))}, d_reshape},
        {"tt::reshape", 1, {tt_v_ints(TT_INTS(-1))}, d_reshape},
        {"tt::permute", 1, {tt_v_ints(TT_INTS(2, 0, 1))}, d_permute},
        {"tt::permute", 1, {tt_v_ints(TT_INTS(-1, 0))}, d_permute},
        {"tt::transpose.int", 2, {tt_v_int(0), tt_v_int(-1)}, d_transpose},
        {"tt::transpose.int", 2, {tt_v_int(0), tt_v_int(3)}, d_transpose},
        {"tt::t", 0, {tt_v_none()}, d_t},
        {"tt::narrow", 3, {tt_v_int(-1), tt_v_int(1), tt_v_int(2)}, d_narrow},
        {"tt::narrow", 3, {tt_v_int(0), tt_v_int(-1), tt_v_int(1)}, d_narrow},
        {"tt::slice.Tensor", 4, {tt_v_int(1), tt_v_int(0), tt_v_int(3), tt_v_int(2)}, d_slice},
        {"tt::slice.Tensor", 4, {tt_v_int(-1), tt_v_int(-3), tt_v_int(100), tt_v_int(1)}, d_slice},
        {"tt::slice.Tensor", 1, {tt_v_int(-1)}, d_slice_none},
        {"tt::slice.Tensor", 4, {tt_v_int(-1), tt_v_none(), tt_v_int(3), tt_v_int(2)}, d_slice},
        {"tt::slice.Tensor", 4, {tt_v_int(-1), tt_v_int(1), tt_v_none(), tt_v_int(1)}, d_slice},
        {"tt::select.int", 2, {tt_v_int(1), tt_v_int(-1)}, d_select},
        {"tt::select.int", 2, {tt_v_int(0), tt_v_int(7)}, d_select},
        {"tt::expand", 1, {tt_v_ints(TT_INTS(2, -1, -1, -1))}, d_expand},
        {"tt::expand", 2, {tt_v_ints(TT_INTS(5, 2, 3, 4)), tt_v_bool(true)}, d_expand},
        {"tt::squeeze.dim", 1, {tt_v_int(1)}, d_squeeze_dim},
        {"tt::squeeze", 0, {tt_v_none()}, d_squeeze},
        {"tt::unsqueeze", 1, {tt_v_int(-1)}, d_unsqueeze},
        {"tt::unsqueeze", 1, {tt_v_int(1)}, d_unsqueeze},
        {"tt::flatten.using_ints", 0, {tt_v_none()}, d_flatten_all},
        {"tt::flatten.using_ints", 2, {tt_v_int(1), tt_v_int(2)}, d_flatten},
        {"tt::as_strided", 2, {tt_v_ints(TT_INTS(2, 2)), tt_v_ints(TT_INTS(1, 2))}, d_as_strided_none},
        {"tt::as_strided", 3, {tt_v_ints(TT_INTS(2, 2)), tt_v_ints(TT_INTS(1, 2)), tt_v_int(1)}, d_as_strided},
        {"tt::as_strided", 3, {tt_v_ints(TT_INTS(2)), tt_v_ints(TT_INTS(1000)), tt_v_int(0)}, d_as_strided},
        {"tt::detach", 0, {tt_v_none()}, d_detach},
        {"tt::contiguous", 0, {tt_v_none()}, d_contiguous},
        {"tt::clone", 0, {tt_v_none()}, d_clone},
        {"tt::_to_copy", 1, {tt_v_dtype(TT_F64)}, d_to_copy},
        {"tt::_to_copy", 1, {tt_v_dtype(TT_I32)}, d_to_copy},
    };
    int ncases = (int)(sizeof cases / sizeof cases[0]);
    /* Inputs: a 3-d tensor in every layout, a 2-d, a size-1-dim and a 0-dim
     * one; each real and fake. */
    tt_tensor *ins[16];
    int nin = 0;
    for (int l = 0; l < NLAYOUTS; l++)
        ins[nin++] = make_input(3, (const int64_t[]){2, 3, 4}, TT_F32, l, l);
    ins[nin++] = make_input(2, (const int64_t[]){3, 4}, TT_I64, L_CONTIG, 1);
    ins[nin++] = make_input(3, (const int64_t[]){2, 1, 4}, TT_U8, L_SLICED, 2);
    ins[nin++] = tt_scalar(5, TT_F64);
    int nreal = nin;
    for (int i = 0; i < nreal; i++)
        ins[nin++] = tt_fake_like(ins[i]);
    int ok = 0, failed = 0;
    for (int c = 0; c < ncases; c++)
        for (int i = 0; i < nin; i++)
            run_view_case(&cases[c], ins[i]) ? ok++ : failed++;
    /* Both paths were exercised, successes and failures alike. */
    ck_assert_int_gt(ok, 300);
    ck_assert_int_gt(failed, 60);
    for (int i = 0; i < nin; i++)
        tt_release(ins[i]);
}
END_TEST

START_TEST(test_contiguous_op_new_object)
{
    tt_tensor *x = tt_zeros(TT_SHAPE(2, 3), TT_F32);
    tt_tensor *direct = tt_contiguous(x);
    /* The runtime's fast path makes a new view too, as the op does (a
     * scope then owns it like any result). */
    ck_assert_ptr_ne(direct, x);
    ck_assert(tt_same_storage(direct, x));
    assert_same_meta(direct, x, "contiguous (direct)");
    tt_tensor *viaop = tt_call(tt_op_find("tt::contiguous"), tt_v_tensor(x));
    ck_assert_ptr_nonnull(viaop);
    ck_assert_ptr_ne(viaop, x);
    ck_assert(tt_same_storage(viaop, x));
    assert_same_meta(viaop, x, "contiguous");
    tt_tensor *xt = tt_t(x);
    tt_tensor *c = tt_call(tt_op_find("tt::contiguous"), tt_v_tensor(xt));
    ck_assert(!tt_same_storage(c, x));
    assert_strides(c, 2, (const int64_t[]){2, 1});
    tt_release(c);
    tt_release(xt);
    tt_release(viaop);
    tt_release(direct);
    tt_release(x);
}
END_TEST

START_TEST(test_view_op_errors)
{
    tt_tensor *x = tt_zeros(TT_SHAPE(2, 3), TT_F32);
    /* A dim outside int's range is refused, not truncated into range. */
    ck_assert_ptr_null(tt_call(tt_op_find("tt::transpose.int"), tt_v_tensor(x),
                               tt_v_int(INT64_C(1) << 32), tt_v_int(0)));
    ck_assert_error(TT_EINVAL, "tt::transpose.int: argument 'dim0' (#2): dimension out of "
                               "range (expected to be in range of [-2, 1], but got 4294967296)");
    ck_assert_ptr_null(tt_call(tt_op_find("tt::unsqueeze"), tt_v_tensor(x),
                               tt_v_int(-(INT64_C(1) << 40))));
    ck_assert_error(TT_EINVAL, "tt::unsqueeze: argument 'dim' (#2): dimension out of range "
                               "(expected to be in range of [-3, 2]");
    ck_assert_ptr_null(tt_call(tt_op_find("tt::as_strided"), tt_v_tensor(x),
                               tt_v_ints(TT_INTS(2, 2)), tt_v_ints(TT_INTS(1))));
    ck_assert_error(TT_EINVAL, "tt::as_strided: mismatch in length of strides and shape "
                               "(argument 'size' (#2) has 2 entries, argument 'stride' "
                               "(#3) has 1)");
    /* Argument types are checked against the schema. */
    ck_assert_ptr_null(tt_call(tt_op_find("tt::view"), tt_v_tensor(x), tt_v_int(6)));
    ck_assert_error(TT_EINVAL, "tt::view: argument 'size' (#2) expects SymInt[]");
    ck_assert_ptr_null(tt_call(tt_op_find("tt::select.int"), tt_v_tensor(x), tt_v_int(0)));
    ck_assert_error(TT_EINVAL, "tt::select.int: missing argument 'index' (#3)");
    tt_release(x);
}
END_TEST

START_TEST(test_copy_fill_ops)
{
    const tt_op *copy = tt_op_find("tt::copy_"), *fill = tt_op_find("tt::fill_.Scalar");
    ck_assert_ptr_nonnull(copy);
    ck_assert_ptr_nonnull(fill);
    tt_tensor *dst = tt_zeros(TT_SHAPE(2, 3), TT_F64);
    tt_tensor *src = make_input(1, (const int64_t[]){3}, TT_I32, L_SLICED, 4);
    uint64_t v0 = tt_version(dst);
    tt_tensor *r = tt_call(copy, tt_v_tensor(dst), tt_v_tensor(src));
    ck_assert_ptr_eq(r, dst); /* returns its mutated argument */
    tt_release(r);
    /* One write, one version step (the dispatcher bumps; the kernel does not). */
    ck_assert_uint_eq(tt_version(dst), v0 + 1);
    for (int64_t i = 0; i < 2; i++)
        for (int64_t j = 0; j < 3; j++)
            ck_assert_double_eq(get(dst, (int64_t[]){i, j}), get(src, (int64_t[]){j}));
    r = tt_call(fill, tt_v_tensor(dst), tt_v_float(2.5));
    tt_release(r);
    ck_assert_uint_eq(tt_version(dst), v0 + 2);
    ck_assert_double_eq(get(dst, (int64_t[]){1, 2}), 2.5);
    r = tt_call(fill, tt_v_tensor(src), tt_v_int(7));
    tt_release(r);
    ck_assert_double_eq(get(src, (int64_t[]){2}), 7);
    /* Fake: metadata only, the same shape checks, the version still moves. */
    tt_tensor *fdst = tt_fake_like(dst), *fsrc = tt_fake_like(src);
    uint64_t fv = tt_version(fdst);
    tt_release(tt_call(copy, tt_v_tensor(fdst), tt_v_tensor(src)));
    tt_release(tt_call(copy, tt_v_tensor(fdst), tt_v_tensor(fsrc)));
    tt_release(tt_call(fill, tt_v_tensor(fdst), tt_v_float(1)));
    ck_assert_uint_eq(tt_version(fdst), fv + 3);
    tt_tensor *bad = tt_zeros(TT_SHAPE(4), TT_F32);
    ck_assert_ptr_null(tt_call(copy, tt_v_tensor(dst), tt_v_tensor(bad)));
    char msg[512], fmsg[512];
    tt_test_errmsg_core(msg, sizeof msg);
    ck_assert_error(TT_ESHAPE, "tt_copy_: argument 'src' of shape [4] cannot be broadcast "
                               "to the destination's shape [2, 3]");
    tt_tensor *fbad = tt_fake_like(bad);
    ck_assert_ptr_null(tt_call(copy, tt_v_tensor(fdst), tt_v_tensor(fbad)));
    /* the fake kernel says what the real one does */
    ck_assert_str_eq(tt_test_errmsg_core(fmsg, sizeof fmsg), msg);
    ck_assert_ptr_null(tt_call(copy, tt_v_tensor(dst), tt_v_tensor(fsrc)));
    ck_assert_error(TT_EFAKE, "tt_copy_: cannot copy a fake tensor into a real one");
    ck_assert_uint_eq(tt_version(dst), v0 + 2);
    tt_release(fbad);
    tt_release(bad);
    tt_release(fdst);
    tt_release(fsrc);
    tt_release(src);
    tt_release(dst);
}
END_TEST

/* ------------------------------------------------------------ a test mode */

#define MAX_REC 64
typedef struct {
    tt_mode m; /* first, so the handler can cast */
    const char *names[MAX_REC];
    int n;
} recorder;

static tt_status rec_call(tt_mode *m, const tt_op *op, const tt_value *args, int nargs,
                          tt_value *outs, int nouts)
{
    recorder *r = (recorder *)m;
    if (r->n < MAX_REC)
        r->names[r->n++] = tt_op_name(op);
    return tt_op_redispatch(op, args, nargs, outs, nouts);
}

START_TEST(test_runtime_views_dispatch_under_mode)
{
    recorder rec = {.m = {.call = rec_call}};
    tt_tensor *x = make_input(3, (const int64_t[]){2, 3, 4}, TT_F32, L_CONTIG, 0);
    tt_tensor *y = tt_zeros(TT_SHAPE(2, 3), TT_F32);
    /* No mode: the runtime functions run directly. */
    ck_assert(tt_dispatch_is_trivial(1, (const tt_tensor *[]){x}));
    tt_tensor *plain = tt_transpose(x, 0, 1);
    ck_assert_int_eq(tt_mode_push(&rec.m), TT_OK);
    ck_assert(!tt_dispatch_is_trivial(1, (const tt_tensor *[]){x}));
    tt_tensor *outs[32];
    int k = 0;
    outs[k++] = tt_transpose(x, 0, 1);
    outs[k++] = tt_view(x, TT_SHAPE(6, 4));
    outs[k++] = tt_reshape(x, TT_SHAPE(-1));
    outs[k++] = tt_permute(x, TT_SHAPE(2, 0, 1));
    outs[k++] = tt_t(y);
    outs[k++] = tt_narrow(x, 1, 1, 2);
    outs[k++] = tt_slice(x, 2, 0, 4, 2);
    outs[k++] = tt_select(x, 0, 1);
    outs[k++] = tt_expand(y, TT_SHAPE(4, 2, 3));
    outs[k++] = tt_squeeze(x, 0);
    outs[k++] = tt_squeeze_all(x);
    outs[k++] = tt_unsqueeze(x, 0);
    outs[k++] = tt_flatten(x, 0, 1);
    outs[k++] = tt_as_strided(x, TT_SHAPE(2), (const int64_t[]){3}, 1);
    outs[k++] = tt_detach(x);
    outs[k++] = tt_contiguous(x);
    outs[k++] = tt_clone(x);
    outs[k++] = tt_to_dtype(x, TT_I64);
    outs[k++] = tt_cat(2, (tt_tensor *[]){x, x}, 0);
    outs[k++] = tt_stack(2, (tt_tensor *[]){y, y}, 1);
    ck_assert_int_eq(tt_fill_(y, 3), TT_OK);
    ck_assert_int_eq(tt_copy_(y, x /* wrong shape: fails inside the op */), TT_ESHAPE);
    ck_assert_ptr_eq(tt_mode_pop(), &rec.m);
    for (int i = 0; i < k; i++)
        ck_assert_msg(outs[i] != NULL, "call %d failed under the mode", i);
    /* Each call is recorded once, by its op name; the runtime calls kernels
     * make (narrow -> slice, t -> transpose, flatten -> reshape) are not. */
    static const char *const want[] = {
        "tt::transpose.int", "tt::view", "tt::reshape", "tt::permute", "tt::t",
        "tt::narrow", "tt::slice.Tensor", "tt::select.int", "tt::expand",
        "tt::squeeze.dim", "tt::squeeze", "tt::unsqueeze", "tt::flatten.using_ints",
        "tt::as_strided", "tt::detach", "tt::contiguous", "tt::clone", "tt::_to_copy",
        "tt::cat", "tt::stack", "tt::fill_.Scalar", "tt::copy_",
    };
    int nwant = (int)(sizeof want / sizeof want[0]);
    ck_assert_int_eq(rec.n, nwant);
    for (int i = 0; i < nwant; i++)
        ck_assert_str_eq(rec.names[i], want[i]);
    assert_same_meta(outs[0], plain, "transpose under a mode");
    ck_assert(tt_same_storage(outs[0], x));
    /* Popped: the same calls no longer reach the mode. */
    tt_tensor *after = tt_transpose(x, 0, 1);
    tt_release(tt_narrow(x, 1, 1, 2));
    ck_assert_int_eq(rec.n, nwant);
    assert_same_meta(after, plain, "transpose after the mode");
    ck_assert_double_eq(get(y, (int64_t[]){1, 1}), 3);
    tt_release(after);
    for (int i = 0; i < k; i++)
        tt_release(outs[i]);
    tt_release(plain);
    tt_release(y);
    tt_release(x);
}
END_TEST

/* A mode that refuses every op: a call that reaches it fails. */
static tt_status refuse_call(tt_mode *m, const tt_op *op, const tt_value *args, int nargs,
                             tt_value *outs, int nouts)
{
    (void)m, (void)args, (void)nargs, (void)outs, (void)nouts;
    return tt_error(TT_EGRAPHBREAK, "refused %s", tt_op_name(op));
}

START_TEST(test_mode_sees_views_only_when_on)
{
    tt_mode refuse = {.call = refuse_call};
    tt_tensor *x = tt_zeros(TT_SHAPE(2, 3), TT_F32);
    ck_assert_int_eq(tt_mode_push(&refuse), TT_OK);
    ck_assert_ptr_null(tt_transpose(x, 0, 1));
    ck_assert_error(TT_EGRAPHBREAK, "refused tt::transpose.int");
    ck_assert_ptr_null(tt_select(x, 0, 1));
    ck_assert_error(TT_EGRAPHBREAK, "refused tt::select.int");
    ck_assert_int_eq(tt_fill_(x, 1), TT_EGRAPHBREAK);
    ck_assert_ptr_eq(tt_mode_pop(), &refuse);
    tt_tensor *t = tt_transpose(x, 0, 1);
    ck_assert_ptr_nonnull(t);
    ck_assert_int_eq(tt_fill_(x, 1), TT_OK);
    tt_release(t);
    tt_release(x);
}
END_TEST

/* ------------------------------------------------------------ cat / stack */

/* Checks out == cat(ts, dim) element by element (dim already wrapped; 1-d
 * empty inputs skipped), in out's dtype. */
static void check_cat_values(const tt_tensor *out, int n, tt_tensor *const *ts, int dim)
{
    int nd = tt_ndim(out);
    int64_t idx[TT_MAX_DIMS] = {0}, in_idx[TT_MAX_DIMS];
    if (tt_numel(out) == 0)
        return;
    do {
        int64_t pos = idx[dim];
        int j = 0;
        for (; j < n; j++) {
            if (tt_ndim(ts[j]) == 1 && tt_sizes(ts[j])[0] == 0)
                continue; /* skipped by cat */
            if (pos < tt_sizes(ts[j])[dim])
                break;
            pos -= tt_sizes(ts[j])[dim];
        }
        ck_assert_int_lt(j, n);
        memcpy(in_idx, idx, sizeof in_idx);
        in_idx[dim] = pos;
        double want = get(ts[j], in_idx);
        if (tt_dtype_of(out) == TT_BOOL)
            want = want != 0;
        ck_assert_double_eq(get(out, idx), want);
    } while (next_idx(nd, tt_sizes(out), idx));
}

/* Checks out == stack(ts, dim). */
static void check_stack_values(const tt_tensor *out, int n, tt_tensor *const *ts, int dim)
{
    int nd = tt_ndim(out);
    int64_t idx[TT_MAX_DIMS] = {0}, in_idx[TT_MAX_DIMS];
    ck_assert_int_eq(tt_sizes(out)[dim], n);
    if (tt_numel(out) == 0)
        return;
    do {
        for (int d = 0, k = 0; d < nd; d++)
            if (d != dim)
                in_idx[k++] = idx[d];
        ck_assert_double_eq(get(out, idx), get(ts[idx[dim]], in_idx));
    } while (next_idx(nd, tt_sizes(out), idx));
}

/* The fake path: the same call on fake copies gives the real metadata. */
static void check_fake_meta(const tt_tensor *real, int n, tt_tensor *const *ts, int dim,
                            bool stack)
{
    tt_tensor *fk[8];
    for (int i = 0; i < n; i++)
        fk[i] = tt_fake_like(ts[i]);
    tt_tensor *f = stack ? tt_stack(n, fk, dim) : tt_cat(n, fk, dim);
    ck_assert_msg(f != NULL, "%s", tt_errmsg());
    ck_assert(tt_is_fake(f));
    ck_assert_int_eq(tt_dtype_of(f), tt_dtype_of(real));
    for (int d = 0; d < tt_ndim(real); d++) {
        ck_assert_int_eq(tt_sizes(f)[d], tt_sizes(real)[d]);
        ck_assert_int_eq(tt_strides(f)[d], tt_strides(real)[d]);
    }
    ck_assert_int_eq(tt_ndim(f), tt_ndim(real));
    ck_assert_int_eq(tt_storage_offset(f), tt_storage_offset(real));
    /* And through the dispatcher (mixed real and fake inputs give fake). */
    tt_tensor *mixed[8];
    for (int i = 0; i < n; i++)
        mixed[i] = i % 2 ? fk[i] : ts[i];
    tt_tensor *g = tt_call(tt_op_find(stack ? "tt::stack" : "tt::cat"), tt_v_tensors(n, mixed),
                           tt_v_int(dim));
    ck_assert_ptr_nonnull(g);
    ck_assert(n == 1 || tt_is_fake(g));
    for (int d = 0; d < tt_ndim(real); d++)
        ck_assert_int_eq(tt_strides(g)[d], tt_strides(real)[d]);
    tt_release(g);
    tt_release(f);
    for (int i = 0; i < n; i++)
        tt_release(fk[i]);
}

START_TEST(test_cat_table)
{
    /* 3 inputs of (2, 3, 4) with sizes 2, 1, 3 along the cat dim; every
     * dtype x dim x layout mix, against the reference loop. */
    const int along[3] = {2, 1, 3};
    int runs = 0;
    for (int di = 0; di < NDTYPES; di++)
        for (int dim = -3; dim < 3; dim++)
            for (int lay = 0; lay < NLAYOUTS; lay++) {
                tt_dtype dt = all_dtypes[di];
                int d = dim < 0 ? dim + 3 : dim;
                tt_tensor *ts[3];
                for (int i = 0; i < 3; i++) {
                    int64_t s[3] = {2, 3, 4};
                    s[d] = along[i];
                    ts[i] = make_input(3, s, dt, (lay + i) % NLAYOUTS, i);
                }
                tt_tensor *out = tt_cat(3, ts, dim);
                ck_assert_msg(out != NULL, "%s %s dim %d: %s", tt_dtype_name(dt),
                              layout_names[lay], dim, tt_errmsg());
                ck_assert_int_eq(tt_dtype_of(out), dt);
                ck_assert_int_eq(tt_sizes(out)[d], 6);
                ck_assert(tt_is_contiguous(out)); /* only channels-last keeps a layout */
                check_cat_values(out, 3, ts, d);
                check_fake_meta(out, 3, ts, dim, false);
                tt_release(out);
                for (int i = 0; i < 3; i++)
                    tt_release(ts[i]);
                runs++;
            }
    ck_assert_int_eq(runs, NDTYPES * 6 * NLAYOUTS);
}
END_TEST

START_TEST(test_cat_promotion)
{
    static const tt_dtype pairs[][2] = {
        {TT_I32, TT_F32}, {TT_BOOL, TT_U8}, {TT_I64, TT_F64}, {TT_BOOL, TT_I32},
        {TT_U8, TT_I64}, {TT_F32, TT_F64}, {TT_BOOL, TT_F32}, {TT_U8, TT_I32},
    };
    for (size_t p = 0; p < sizeof pairs / sizeof pairs[0]; p++)
        for (int lay = 0; lay < NLAYOUTS; lay++) {
            tt_tensor *ts[3] = {
                make_input(2, (const int64_t[]){3, 2}, pairs[p][0], lay, 1),
                make_input(2, (const int64_t[]){3, 3}, pairs[p][1], L_CONTIG, 2),
                make_input(2, (const int64_t[]){3, 1}, pairs[p][0], L_SLICED, 3),
            };
            tt_tensor *out = tt_cat(3, ts, 1);
            ck_assert_ptr_nonnull(out);
            ck_assert_int_eq(tt_dtype_of(out), tt_promote_types(pairs[p][0], pairs[p][1]));
            check_cat_values(out, 3, ts, 1);
            check_fake_meta(out, 3, ts, 1, false);
            tt_release(out);
            for (int i = 0; i < 3; i++)
                tt_release(ts[i]);
        }
}
END_TEST

START_TEST(test_cat_empty)
{
    tt_tensor *e1 = tt_empty(TT_SHAPE(0), TT_F64);
    tt_tensor *x = make_input(2, (const int64_t[]){2, 3}, TT_F32, L_TRANSPOSED, 1);
    /* A 1-d [0] input is skipped, wherever it is, whatever dim says; it
     * still takes part in the dtype. */
    tt_tensor *out = tt_cat(3, (tt_tensor *[]){e1, x, e1}, 1);
    ck_assert_ptr_nonnull(out);
    ck_assert_int_eq(tt_dtype_of(out), TT_F64);
    ck_assert_int_eq(tt_ndim(out), 2);
    ck_assert_int_eq(tt_sizes(out)[1], 3);
    check_cat_values(out, 3, (tt_tensor *[]){e1, x, e1}, 1);
    check_fake_meta(out, 3, (tt_tensor *[]){e1, x, e1}, 1, false);
    tt_release(out);
    /* Dim wraps against the first tensor that is not skipped. */
    out = tt_cat(2, (tt_tensor *[]){e1, x}, -1);
    ck_assert_int_eq(tt_sizes(out)[0], 2);
    ck_assert_int_eq(tt_sizes(out)[1], 3);
    tt_release(out);
    /* Only skipped inputs: an empty 1-d result; dim is never checked. */
    out = tt_cat(2, (tt_tensor *[]){e1, e1}, 7);
    ck_assert_ptr_nonnull(out);
    ck_assert_int_eq(tt_ndim(out), 1);
    ck_assert_int_eq(tt_sizes(out)[0], 0);
    tt_release(out);
    /* Other empty shapes are not skipped: they must match. */
    tt_tensor *e2 = tt_empty(TT_SHAPE(2, 0), TT_I32);
    out = tt_cat(2, (tt_tensor *[]){e2, x}, 1);
    ck_assert_ptr_nonnull(out);
    ck_assert_int_eq(tt_dtype_of(out), TT_F32);
    check_cat_values(out, 2, (tt_tensor *[]){e2, x}, 1);
    tt_release(out);
    out = tt_cat(2, (tt_tensor *[]){e2, e2}, 0);
    ck_assert_int_eq(tt_sizes(out)[0], 4);
    ck_assert_int_eq(tt_sizes(out)[1], 0);
    check_fake_meta(out, 2, (tt_tensor *[]){e2, e2}, 0, false);
    tt_release(out);
    ck_assert_ptr_null(tt_cat(2, (tt_tensor *[]){e2, x}, 0));
    ck_assert_error(TT_ESHAPE, "tt::cat: Sizes of tensors must match except in dimension 0. "
                               "Expected size 0 but got size 3 for tensor number 1 in the list.");
    /* One input: a copy, not an alias. */
    out = tt_cat(1, &x, 0);
    ck_assert(!tt_same_storage(out, x));
    check_cat_values(out, 1, &x, 0);
    tt_release(out);
    tt_release(e2);
    tt_release(x);
    tt_release(e1);
}
END_TEST

START_TEST(test_cat_channels_last)
{
    /* (N, C, H, W) = (2, 3, 2, 2) channels-last: permute of NHWC. */
    tt_tensor *a = make_input(4, (const int64_t[]){2, 2, 2, 3}, TT_F32, L_CONTIG, 1);
    tt_tensor *b = make_input(4, (const int64_t[]){2, 2, 2, 5}, TT_F32, L_CONTIG, 2);
    tt_tensor *ca = tt_permute(a, TT_SHAPE(0, 3, 1, 2)), *cb = tt_permute(b, TT_SHAPE(0, 3, 1, 2));
    tt_tensor *out = tt_cat(2, (tt_tensor *[]){ca, cb}, 1);
    /* PyTorch: all inputs channels-last -> a channels-last output. */
    assert_strides(out, 4, (const int64_t[]){2 * 2 * 8, 1, 2 * 8, 8});
    check_cat_values(out, 2, (tt_tensor *[]){ca, cb}, 1);
    check_fake_meta(out, 2, (tt_tensor *[]){ca, cb}, 1, false);
    tt_release(out);
    out = tt_cat(2, (tt_tensor *[]){ca, ca}, 0);
    assert_strides(out, 4, (const int64_t[]){12, 1, 6, 3});
    check_cat_values(out, 2, (tt_tensor *[]){ca, ca}, 0);
    tt_release(out);
    /* One contiguous input -> contiguous. */
    tt_tensor *c = tt_contiguous(cb);
    out = tt_cat(2, (tt_tensor *[]){ca, c}, 1);
    assert_strides(out, 4, (const int64_t[]){32, 4, 2, 1});
    check_cat_values(out, 2, (tt_tensor *[]){ca, c}, 1);
    check_fake_meta(out, 2, (tt_tensor *[]){ca, c}, 1, false);
    tt_release(out);
    /* N111 tensors are ambiguous; PyTorch calls them contiguous. */
    tt_tensor *n1 = tt_zeros(TT_SHAPE(2, 1, 1, 1), TT_F32);
    out = tt_cat(2, (tt_tensor *[]){n1, n1}, 3);
    assert_strides(out, 4, (const int64_t[]){2, 2, 2, 1});
    tt_release(out);
    tt_release(n1);
    /* 5-d: channels-last-3d, C innermost then W, H, D, N. */
    tt_tensor *a5 = make_input(5, (const int64_t[]){2, 2, 2, 2, 3}, TT_I32, L_CONTIG, 3);
    tt_tensor *c5 = tt_permute(a5, TT_SHAPE(0, 4, 1, 2, 3));
    out = tt_cat(2, (tt_tensor *[]){c5, c5}, 1);
    assert_strides(out, 5, (const int64_t[]){48, 1, 24, 12, 6});
    check_cat_values(out, 2, (tt_tensor *[]){c5, c5}, 1);
    check_fake_meta(out, 2, (tt_tensor *[]){c5, c5}, 1, false);
    tt_release(out);
    tt_release(c5);
    tt_release(a5);
    /* Other shared layouts (both transposed) do not carry over. */
    tt_tensor *ta = tt_transpose(a, 0, 3), *tb = tt_transpose(a, 0, 3);
    out = tt_cat(2, (tt_tensor *[]){ta, tb}, 0);
    ck_assert(tt_is_contiguous(out));
    tt_release(out);
    /* Stack: cat along dim then a view, so dim 0..3 keep channels-last
     * strides split at the new dim; at the end, an unsqueezed 5-d input is
     * not channels-last-3d, so the result is contiguous. */
    out = tt_stack(2, (tt_tensor *[]){ca, ca}, 0);
    assert_strides(out, 5, (const int64_t[]){24, 12, 1, 6, 3});
    check_stack_values(out, 2, (tt_tensor *[]){ca, ca}, 0);
    check_fake_meta(out, 2, (tt_tensor *[]){ca, ca}, 0, true);
    tt_release(out);
    out = tt_stack(2, (tt_tensor *[]){ca, ca}, 1);
    assert_strides(out, 5, (const int64_t[]){24, 3, 1, 12, 6});
    check_stack_values(out, 2, (tt_tensor *[]){ca, ca}, 1);
    check_fake_meta(out, 2, (tt_tensor *[]){ca, ca}, 1, true);
    tt_release(out);
    out = tt_stack(2, (tt_tensor *[]){ca, ca}, 4);
    ck_assert(tt_is_contiguous(out));
    check_stack_values(out, 2, (tt_tensor *[]){ca, ca}, 4);
    tt_release(out);
    tt_release(ta);
    tt_release(tb);
    tt_release(c);
    tt_release(ca);
    tt_release(cb);
    tt_release(a);
    tt_release(b);
}
END_TEST

START_TEST(test_stack_table)
{
    int runs = 0;
    for (int di = 0; di < NDTYPES; di++)
        for (int dim = -3; dim < 3; dim++)
            for (int lay = 0; lay < NLAYOUTS; lay++) {
                tt_dtype dt = all_dtypes[di];
                int d = dim < 0 ? dim + 3 : dim;
                tt_tensor *ts[3];
                for (int i = 0; i < 3; i++)
                    ts[i] = make_input(2, (const int64_t[]){3, 4}, dt, (lay + i) % NLAYOUTS, i);
                tt_tensor *out = tt_stack(3, ts, dim);
                ck_assert_msg(out != NULL, "%s", tt_errmsg());
                ck_assert_int_eq(tt_ndim(out), 3);
                ck_assert_int_eq(tt_dtype_of(out), dt);
                ck_assert(tt_is_contiguous(out));
                check_stack_values(out, 3, ts, d);
                check_fake_meta(out, 3, ts, dim, true);
                tt_release(out);
                for (int i = 0; i < 3; i++)
                    tt_release(ts[i]);
                runs++;
            }
    ck_assert_int_eq(runs, NDTYPES * 6 * NLAYOUTS);
    /* 0-dim inputs stack into a vector; mixed dtypes promote. */
    tt_tensor *s[3] = {tt_scalar(1, TT_I32), tt_scalar(2.5, TT_F32), tt_scalar(1, TT_BOOL)};
    tt_tensor *out = tt_stack(3, s, 0);
    ck_assert_int_eq(tt_ndim(out), 1);
    ck_assert_int_eq(tt_dtype_of(out), TT_F32);
    check_stack_values(out, 3, s, 0);
    check_fake_meta(out, 3, s, -1, true);
    tt_release(out);
    /* Empty inputs: [0] tensors stack to [n, 0] (cat skips them, the view
     * of an empty result is contiguous). */
    tt_tensor *e[2] = {tt_empty(TT_SHAPE(0), TT_F32), tt_empty(TT_SHAPE(0), TT_U8)};
    out = tt_stack(2, e, 0);
    ck_assert_int_eq(tt_sizes(out)[0], 2);
    ck_assert_int_eq(tt_sizes(out)[1], 0);
    assert_strides(out, 2, (const int64_t[]){1, 1});
    check_fake_meta(out, 2, e, 0, true);
    tt_release(out);
    out = tt_stack(2, e, 1);
    ck_assert_int_eq(tt_sizes(out)[0], 0);
    ck_assert_int_eq(tt_sizes(out)[1], 2);
    tt_release(out);
    for (int i = 0; i < 3; i++)
        tt_release(s[i]);
    tt_release(e[0]);
    tt_release(e[1]);
}
END_TEST

START_TEST(test_symbolic_fake)
{
    tt_sym_reset();
    tt_size s0 = tt_sym_new("s", 5), u0 = tt_sym_new("u", -1);
    for (int k = 0; k < 2; k++) {
        tt_size s = k ? u0 : s0;
        tt_tensor *a = tt_fake_empty(2, (const tt_size[]){s, 3}, TT_F32);
        tt_tensor *b = tt_fake_empty(2, (const tt_size[]){s, 3}, TT_I64);
        tt_tensor *c = tt_cat(2, (tt_tensor *[]){a, b}, 0);
        ck_assert_msg(c != NULL, "%s", tt_errmsg());
        ck_assert(tt_size_is_sym(tt_sizes(c)[0]));
        ck_assert_int_eq(tt_sym_hint(tt_sizes(c)[0]), k ? -1 : 10);
        ck_assert_int_eq(tt_sizes(c)[1], 3);
        ck_assert_int_eq(tt_strides(c)[0], 3);
        tt_release(c);
        c = tt_cat(2, (tt_tensor *[]){a, b}, 1);
        ck_assert_int_eq(tt_sizes(c)[0], s);
        ck_assert_int_eq(tt_sizes(c)[1], 6);
        tt_release(c);
        /* Stacking needs no proof that s + s = 2 * s, even unbacked. */
        tt_tensor *st = tt_stack(2, (tt_tensor *[]){a, b}, 0);
        ck_assert_msg(st != NULL, "%s", tt_errmsg());
        tt_tensor *like = tt_fake_empty(3, (const tt_size[]){2, s, 3}, TT_F32);
        assert_same_meta(st, like, "symbolic stack");
        tt_release(like);
        tt_release(st);
        tt_release(a);
        tt_release(b);
    }
    tt_sym_reset();
}
END_TEST

START_TEST(test_cat_large_blocks)
{
    /* Big enough for the parallel block copy, with an offset input. */
    tt_tensor *a = make_input(2, (const int64_t[]){64, 1000}, TT_F32, L_OFFSET, 1);
    tt_tensor *b = make_input(2, (const int64_t[]){64, 3001}, TT_F32, L_CONTIG, 2);
    tt_tensor *e = tt_empty(TT_SHAPE(0), TT_F32);
    tt_tensor *ts[3] = {a, e, b};
    tt_tensor *out = tt_cat(3, ts, 1);
    ck_assert_ptr_nonnull(out);
    const float *pa = tt_data(a), *pb = tt_data(b), *po = tt_data(out);
    for (int64_t i = 0; i < 64; i++) {
        ck_assert_mem_eq(po + i * 4001, pa + i * 1000, 1000 * sizeof(float));
        ck_assert_mem_eq(po + i * 4001 + 1000, pb + i * 3001, 3001 * sizeof(float));
    }
    tt_release(out);
    tt_release(e);
    tt_release(a);
    tt_release(b);
}
END_TEST

START_TEST(test_cat_stack_errors)
{
    tt_tensor *a = tt_zeros(TT_SHAPE(3, 2), TT_F32), *b = tt_zeros(TT_SHAPE(4, 5), TT_F32);
    tt_tensor *c = tt_zeros(TT_SHAPE(2, 3), TT_F32), *d = tt_zeros(TT_SHAPE(2, 4), TT_F32);
    tt_tensor *z = tt_scalar(1, TT_F32), *v = tt_zeros(TT_SHAPE(2, 3, 1), TT_F32);
    tt_tensor *big = tt_zeros(TT_SHAPE(1, 1, 1, 1, 1, 1, 1, 1), TT_F32);
    const tt_op *cat = tt_op_find("tt::cat"), *stack = tt_op_find("tt::stack");
    /* Each error, from the typed wrapper and through the dispatcher. */
    for (int via = 0; via < 2; via++) {
#define CAT(n, list, dim)                                                          \
    (via ? tt_call(cat, tt_v_tensors((n), (list)), tt_v_int(dim)) : tt_cat((n), (list), (dim)))
#define STACK(n, list, dim)                                                        \
    (via ? tt_call(stack, tt_v_tensors((n), (list)), tt_v_int(dim))                \
         : tt_stack((n), (list), (dim)))
        ck_assert_ptr_null(CAT(0, NULL, 0));
        ck_assert_error(TT_EINVAL, "tt::cat: expected a non-empty list of Tensors");
        ck_assert_ptr_null(CAT(2, ((tt_tensor *[]){a, b}), 1));
        ck_assert_error(TT_ESHAPE, "tt::cat: Sizes of tensors must match except in dimension 1. "
                                   "Expected size 3 but got size 4 for tensor number 1 in the list.");
        ck_assert_ptr_null(CAT(2, ((tt_tensor *[]){a, z}), 0));
        ck_assert_error(TT_ESHAPE, "tt::cat: zero-dimensional tensor (at position 1) cannot be "
                                   "concatenated");
        ck_assert_ptr_null(CAT(2, ((tt_tensor *[]){c, v}), 0));
        ck_assert_error(TT_ESHAPE, "tt::cat: Tensors must have same number of dimensions: got 2 "
                                   "and 3");
        ck_assert_ptr_null(CAT(2, ((tt_tensor *[]){c, c}), 2));
        ck_assert_error(TT_EINVAL, "tt::cat: argument 'dim' (#2): dimension out of range "
                                   "(expected to be in range of [-2, 1], but got 2)");
        ck_assert_ptr_null(CAT(2, ((tt_tensor *[]){c, c}), -3));
        ck_assert_error(TT_EINVAL, "but got -3)");
        ck_assert_ptr_null(STACK(0, NULL, 0));
        ck_assert_error(TT_EINVAL, "tt::stack: expected a non-empty list of Tensors");
        ck_assert_ptr_null(STACK(2, ((tt_tensor *[]){c, d}), 0));
        ck_assert_error(TT_ESHAPE, "tt::stack: stack expects each tensor to be equal size, but "
                                   "got [2, 3] at entry 0 and [2, 4] at entry 1");
        ck_assert_ptr_null(STACK(3, ((tt_tensor *[]){c, c, v}), 2));
        ck_assert_error(TT_ESHAPE, "got [2, 3] at entry 0 and [2, 3, 1] at entry 2");
        ck_assert_ptr_null(STACK(2, ((tt_tensor *[]){c, c}), 3));
        ck_assert_error(TT_EINVAL, "tt::stack: argument 'dim' (#2): dimension out of range "
                                   "(expected to be in range of [-3, 2], but got 3)");
        ck_assert_ptr_null(STACK(2, ((tt_tensor *[]){big, big}), 0));
        ck_assert_error(TT_ESHAPE, "tt::stack: stacking 8-dim tensors gives 9 dims");
#undef CAT
#undef STACK
    }
    /* List checks of the typed wrappers. */
    ck_assert_ptr_null(tt_cat(2, (tt_tensor *[]){a, NULL}, 0));
    ck_assert_error(TT_EINVAL, "tt::cat: argument 'tensors' (#1) expects a tensor at index 1, "
                               "got NULL");
    ck_assert_ptr_null(tt_stack(-1, (tt_tensor *[]){a}, 0));
    ck_assert_error(TT_EINVAL, "tt::stack: argument 'tensors' (#1) has a negative length (-1)");
    ck_assert_ptr_null(tt_cat(2, NULL, 0));
    ck_assert_error(TT_EINVAL, "tt::cat: argument 'tensors' (#1) is NULL for 2 tensors");
    tt_tensor *r = tt_stack(2, (tt_tensor *[]){z, z}, -1); /* 0-dim is fine for stack */
    ck_assert_int_eq(tt_sizes(r)[0], 2);
    tt_release(r);
    tt_release(a);
    tt_release(b);
    tt_release(c);
    tt_release(d);
    tt_release(z);
    tt_release(v);
    tt_release(big);
}
END_TEST

START_TEST(test_cat_stack_out_of_memory)
{
    /* Every allocation of cat (block and strided paths) and of stack (the
     * heap aliases past 16 inputs) fails cleanly in turn. */
    tt_tensor *ts[20];
    for (int i = 0; i < 20; i++)
        ts[i] = make_input(2, (const int64_t[]){2, 3}, i % 2 ? TT_F32 : TT_I32,
                           i % 3 ? L_CONTIG : L_TRANSPOSED, i);
    for (int which = 0; which < 4; which++) {
        bool done = false;
        for (int64_t n = 1; !done && n < 200; n++) {
            tt_debug_fail_alloc(n);
            tt_tensor *out = which == 0   ? tt_cat(20, ts, 1)
                             : which == 1 ? tt_cat(3, (tt_tensor *[]){ts[1], ts[3], ts[5]}, 1)
                             : which == 2 ? tt_stack(20, ts, 2)
                                          : tt_stack(20, ts, 0);
            tt_debug_fail_alloc(0);
            if (out) {
                done = true;
                tt_release(out);
            } else {
                ck_assert_error(TT_ENOMEM, "");
            }
        }
        ck_assert(done);
    }
    for (int i = 0; i < 20; i++)
        tt_release(ts[i]);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("ops_shape");
    TCase *tc = tt_tcase("views");
    tcase_add_test(tc, test_view_ops_match_runtime);
    tcase_add_test(tc, test_contiguous_op_new_object);
    tcase_add_test(tc, test_view_op_errors);
    tcase_add_test(tc, test_copy_fill_ops);
    suite_add_tcase(s, tc);
    tc = tt_tcase("modes");
    tcase_add_test(tc, test_runtime_views_dispatch_under_mode);
    tcase_add_test(tc, test_mode_sees_views_only_when_on);
    suite_add_tcase(s, tc);
    tc = tt_tcase("cat_stack");
    tcase_add_test(tc, test_cat_table);
    tcase_add_test(tc, test_cat_promotion);
    tcase_add_test(tc, test_cat_empty);
    tcase_add_test(tc, test_cat_channels_last);
    tcase_add_test(tc, test_stack_table);
    tcase_add_test(tc, test_symbolic_fake);
    tcase_add_test(tc, test_cat_large_blocks);
    tcase_add_test(tc, test_cat_stack_errors);
    tcase_add_test(tc, test_cat_stack_out_of_memory);
    suite_add_tcase(s, tc);
    return s;
}

TT_TEST_MAIN(make_suite)
