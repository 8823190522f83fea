/* Error paths of the runtime: each failing call returns NULL (or a status,
 * or -1 for the size queries), sets the status and a message naming the
 * call, the argument and what was expected, and leaves nothing alive.
 * Both the status and the text are asserted. */
#include "tt_test.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#define A(...) ((const int64_t[]){__VA_ARGS__})

/* Asserts that `call` returned NULL with (code, needle) and that the
 * number of live tensors did not change. */
#define ck_assert_fails(call, code, needle)                                    \
    do {                                                                       \
        int64_t live_ = tt_live_tensors(), stor_ = tt_live_storages();        \
        tt_clear_error();                                                      \
        tt_tensor *r_ = (call);                                                \
        ck_assert_msg(r_ == NULL, "%s succeeded", #call);                      \
        ck_assert_error(code, needle);                                         \
        ck_assert_int_eq(tt_live_tensors(), live_);                            \
        ck_assert_int_eq(tt_live_storages(), stor_);                           \
    } while (0)

/* The same for calls returning a tt_status. */
#define ck_assert_status(call, code, needle)                                   \
    do {                                                                       \
        int64_t live_ = tt_live_tensors();                                     \
        tt_clear_error();                                                      \
        tt_status st_ = (call);                                                \
        ck_assert_msg(st_ == (code), "%s returned %s: %s", #call,             \
                      tt_status_name(st_), tt_errmsg());                       \
        ck_assert_error(code, needle);                                         \
        ck_assert_int_eq(tt_live_tensors(), live_);                            \
    } while (0)

/* ============================================================ the state */

START_TEST(test_error_state)
{
    tt_clear_error();
    ck_assert_int_eq(tt_errcode(), TT_OK);
    ck_assert_str_eq(tt_errmsg(), "");
    ck_assert_int_eq(tt_error(TT_ESHAPE, "mylib::crop: argument '%s' expects int[%d], got int[%d]",
                              "box", 4, 3),
                     TT_ESHAPE);
    ck_assert_int_eq(tt_errcode(), TT_ESHAPE);
    ck_assert_str_eq(tt_errmsg(), "mylib::crop: argument 'box' expects int[4], got int[3]");
    /* A successful call leaves the last error in place. */
    tt_tensor *t = tt_zeros(TT_SHAPE(2), TT_F32);
    ck_assert_ptr_nonnull(t);
    ck_assert_int_eq(tt_errcode(), TT_ESHAPE);
    tt_release(t);
    /* A message may quote the previous one. */
    tt_error(TT_EINVAL, "inner %d", 1);
    tt_error(TT_EINTERNAL, "outer: %s", tt_errmsg());
    ck_assert_str_eq(tt_errmsg(), "outer: inner 1");
    ck_assert_int_eq(tt_errcode(), TT_EINTERNAL);
    /* Long messages are cut, not overrun. */
    char big[5000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    tt_error(TT_EINVAL, "%s", big);
    ck_assert_uint_gt(strlen(tt_errmsg()), 1000);
    ck_assert_uint_lt(strlen(tt_errmsg()), sizeof big - 1);
    tt_clear_error();
    ck_assert_int_eq(tt_errcode(), TT_OK);
    ck_assert_str_eq(tt_errmsg(), "");
}
END_TEST

START_TEST(test_status_names)
{
    static const char *const names[] = {
        "TT_OK", "TT_EINVAL", "TT_ENOMEM", "TT_EFAKE", "TT_ESHAPE", "TT_EDTYPE",
        "TT_ESCHEMA", "TT_ENOTFOUND", "TT_EEXIST", "TT_ENOKERNEL", "TT_EAUTOGRAD",
        "TT_EGRAPHBREAK", "TT_EGUARD", "TT_EOPCHECK", "TT_EINTERNAL", "TT_EEXPECT",
    };
    ck_assert_int_eq(TT_STATUS_COUNT, (int)(sizeof names / sizeof names[0]));
    for (int s = 0; s < TT_STATUS_COUNT; s++)
        ck_assert_str_eq(tt_status_name((tt_status)s), names[s]);
    ck_assert_str_eq(tt_status_name(TT_STATUS_COUNT), "TT_E?");
    ck_assert_str_eq(tt_status_name((tt_status)-1), "TT_E?");
}
END_TEST

static void *other_thread(void *arg)
{
    (void)arg;
    tt_clear_error();
    tt_tensor *t = tt_empty(TT_SHAPE(-1), TT_F32);
    bool ok = t == NULL && tt_errcode() == TT_EINVAL;
    return ok ? (void *)1 : NULL;
}

START_TEST(test_error_per_thread)
{
    tt_error(TT_EDTYPE, "mine");
    pthread_t th;
    void *ret = NULL;
    ck_assert_int_eq(pthread_create(&th, NULL, other_thread, NULL), 0);
    ck_assert_int_eq(pthread_join(th, &ret), 0);
    ck_assert_ptr_eq(ret, (void *)1);
    ck_assert_int_eq(tt_errcode(), TT_EDTYPE);
    ck_assert_str_eq(tt_errmsg(), "mine");
}
END_TEST

/* ============================================================ factories */

START_TEST(test_negative_size)
{
    ck_assert_fails(tt_empty(TT_SHAPE(2, -3), TT_F32), TT_EINVAL,
                    "tt_empty: argument 'size' has a negative dimension -3 at index 1");
    ck_assert_fails(tt_zeros(TT_SHAPE(-1), TT_I64), TT_EINVAL, "negative dimension -1 at index 0");
    ck_assert_fails(tt_ones(TT_SHAPE(4, 4, -2), TT_U8), TT_EINVAL, "negative dimension -2");
    ck_assert_fails(tt_full(TT_SHAPE(-5), 1.0, TT_BOOL), TT_EINVAL, "negative dimension -5");
    ck_assert_fails(tt_rand(TT_SHAPE(-5), TT_F32), TT_EINVAL, "negative dimension -5");
    ck_assert_fails(tt_randn(TT_SHAPE(2, -5), TT_F64), TT_EINVAL, "negative dimension -5");
    ck_assert_fails(tt_fake_empty(TT_SHAPE(3, -7), TT_F32), TT_EINVAL,
                    "tt_fake_empty: argument 'size' has a negative dimension -7 at index 1");
    ck_assert_fails(tt_empty_strided(TT_SHAPE(-1), A(1), TT_F32), TT_EINVAL,
                    "tt_empty_strided: argument 'size' has a negative dimension -1");
    ck_assert_fails(tt_from_data(TT_SHAPE(-2), TT_F32, "data"), TT_EINVAL,
                    "tt_from_data: argument 'size' has a negative dimension -2 at index 0");
    float buf[4];
    ck_assert_fails(tt_from_buffer(TT_SHAPE(2, -2), NULL, TT_F32, buf, sizeof buf, NULL, NULL),
                    TT_EINVAL, "tt_from_buffer: argument 'size' has a negative dimension -2");
    tt_tensor *like = tt_zeros(TT_SHAPE(2), TT_F32);
    ck_assert_fails(tt_new_empty(like, TT_SHAPE(-4)), TT_EINVAL, "negative dimension -4");
    tt_release(like);
    /* Negative strides. */
    ck_assert_fails(tt_empty_strided(TT_SHAPE(2, 2), A(2, -1), TT_F32), TT_EINVAL,
                    "tt_empty_strided: argument 'stride' has a negative value -1 at index 1");
    ck_assert_fails(tt_fake_empty_strided(TT_SHAPE(2), A(-3), TT_F32), TT_EINVAL,
                    "argument 'stride' has a negative value -3 at index 0");
    ck_assert_fails(tt_from_buffer(TT_SHAPE(2), A(-1), TT_F32, buf, sizeof buf, NULL, NULL),
                    TT_EINVAL, "tt_from_buffer: argument 'strides' has a negative value -1");
}
END_TEST

START_TEST(test_too_many_dims)
{
    int64_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    ck_assert_fails(tt_empty(9, nine, TT_F32), TT_EINVAL,
                    "tt_empty: argument 'size' has 9 dimensions; tensors have 0 to 8");
    ck_assert_fails(tt_empty(-1, nine, TT_F32), TT_EINVAL, "argument 'size' has -1 dimensions");
    ck_assert_fails(tt_zeros(9, nine, TT_F32), TT_EINVAL, "has 9 dimensions; tensors have 0 to 8");
    ck_assert_fails(tt_fake_empty(9, nine, TT_F32), TT_EINVAL,
                    "tt_fake_empty: argument 'size' has 9 dimensions");
    ck_assert_fails(tt_from_data(9, nine, TT_F32, nine), TT_EINVAL,
                    "tt_from_data: argument 'size' has 9 dimensions");
    ck_assert_fails(tt_from_buffer(9, nine, NULL, TT_F32, nine, sizeof nine, NULL, NULL),
                    TT_EINVAL, "tt_from_buffer: argument 'size' has 9 dimensions");
    tt_tensor *t = tt_zeros(8, nine, TT_F32);
    ck_assert_ptr_nonnull(t);
    ck_assert_fails(tt_unsqueeze(t, 0), TT_EINVAL, "tt_unsqueeze: a tensor has at most 8 dimensions");
    ck_assert_fails(tt_view(t, 9, nine), TT_EINVAL,
                    "tt_view: argument 'size' has 9 dimensions; tensors have 0 to 8");
    ck_assert_fails(tt_reshape(t, 9, nine), TT_EINVAL, "tt_reshape: argument 'size' has 9 dimensions");
    ck_assert_fails(tt_expand(t, 9, nine), TT_EINVAL,
                    "tt_expand: the number of sizes provided (9) must be greater or equal to "
                    "the number of dimensions in the tensor (8) and at most 8");
    ck_assert_fails(tt_as_strided(t, 9, nine, nine, 0), TT_EINVAL,
                    "tt_as_strided: argument 'size' has 9 dimensions");
    ck_assert_fails(tt_new_empty(t, 9, nine), TT_EINVAL, "argument 'size' has 9 dimensions");
    tt_release(t);
}
END_TEST

START_TEST(test_size_overflow)
{
    /* The element count overflows int64. */
    ck_assert_fails(tt_empty(TT_SHAPE(1LL << 40, 1LL << 40), TT_F32), TT_EINVAL,
                    "tt_empty: the number of elements of size [1099511627776, 1099511627776] "
                    "overflows int64");
    ck_assert_fails(tt_fake_empty(TT_SHAPE(1LL << 40, 1LL << 40), TT_F32), TT_EINVAL,
                    "tt_fake_empty: the number of elements of size [1099511627776, "
                    "1099511627776] overflows int64");
    ck_assert_fails(tt_zeros(TT_SHAPE(3, 1LL << 47, 1LL << 47), TT_U8), TT_EINVAL,
                    "overflows int64");
    /* 2^48 and more is no size (TT_SIZE_LIMIT): what C arithmetic on a
     * symbolic size gives. */
    ck_assert_fails(tt_zeros(TT_SHAPE(3, INT64_MAX), TT_U8), TT_EINVAL,
                    "tt_zeros: argument 'size' has 9223372036854775807 at index 1, which is no "
                    "size");
    ck_assert_fails(tt_from_data(TT_SHAPE(1LL << 40, 1LL << 40), TT_F32, "x"), TT_EINVAL,
                    "tt_from_data: the number of elements of size");
    /* The element count fits, the byte size does not. */
    ck_assert_fails(tt_empty(TT_SHAPE(1LL << 31, 1LL << 31), TT_I64), TT_EINVAL,
                    "tt_empty: the byte size of the requested tensor overflows (2 dims of i64)");
    ck_assert_fails(tt_empty(TT_SHAPE(1LL << 47, 1LL << 15), TT_F32), TT_EINVAL,
                    "the byte size of the requested tensor overflows (2 dims of f32)");
    ck_assert_fails(tt_empty_strided(TT_SHAPE(2), A(INT64_MAX), TT_U8), TT_EINVAL,
                    "tt_empty_strided: argument 'stride' has 9223372036854775807 at index 0, "
                    "which is no size");
    /* No elements: any sizes are fine (PyTorch), strides computed without
     * the product past the outermost dim. */
    tt_tensor *e = tt_empty(TT_SHAPE(1LL << 40, 1LL << 40, 0), TT_F32);
    ck_assert_msg(e != NULL, "%s", tt_errmsg());
    ck_assert_int_eq(tt_numel(e), 0);
    ck_assert_int_eq(tt_dim_stride(e, 0), 1LL << 40);
    ck_assert_int_eq(tt_dim_stride(e, 1), 1);
    ck_assert_uint_eq(tt_storage_nbytes(e), 0);
    tt_release(e);
    e = tt_zeros(TT_SHAPE(1LL << 40, 1LL << 40, 0), TT_F32); /* a fill of nothing */
    ck_assert_msg(e != NULL, "%s", tt_errmsg());
    tt_tensor *c = tt_clone(e);
    ck_assert_msg(c != NULL, "%s", tt_errmsg());
    ck_assert_int_eq(tt_numel(c), 0);
    tt_release(c);
    tt_release(e);
    /* A fake tensor needs no bytes, but its byte count must fit the
     * limit real tensors have: 2^63 bytes are refused, 2^61 are fine. */
    ck_assert_fails(tt_fake_empty(TT_SHAPE(1LL << 30, 1LL << 30), TT_F64), TT_EINVAL,
                    "tt_fake_empty: the byte size of the requested tensor overflows (2 dims of f64)");
    tt_tensor *f = tt_fake_empty(TT_SHAPE(1LL << 29, 1LL << 29), TT_F64);
    ck_assert_msg(f != NULL, "%s", tt_errmsg());
    ck_assert_uint_eq(tt_storage_nbytes(f), (size_t)1 << 61);
    tt_release(f);
}
END_TEST

START_TEST(test_bad_dtype)
{
    ck_assert_fails(tt_empty(TT_SHAPE(2), (tt_dtype)99), TT_EINVAL,
                    "tt_empty: argument 'dtype' is not a dtype (got 99)");
    ck_assert_fails(tt_fake_empty(TT_SHAPE(2), (tt_dtype)-1), TT_EINVAL,
                    "tt_fake_empty: argument 'dtype' is not a dtype (got -1)");
    float buf[2];
    ck_assert_fails(tt_from_buffer(TT_SHAPE(2), NULL, (tt_dtype)6, buf, sizeof buf, NULL, NULL),
                    TT_EINVAL, "tt_from_buffer: argument 'dtype' is not a dtype (got 6)");
    tt_tensor *t = tt_zeros(TT_SHAPE(2), TT_F32);
    ck_assert_fails(tt_to_dtype(t, (tt_dtype)7), TT_EINVAL,
                    "tt_to_dtype: argument 'dtype' is not a dtype (got 7)");
    tt_release(t);
    for (tt_dtype d = TT_I64; d <= TT_BOOL; d++) {
        char want[128];
        snprintf(want, sizeof want, "tt_randn: argument 'dtype' expects a floating point "
                                    "dtype (f32 or f64), got %s", tt_dtype_name(d));
        ck_assert_fails(tt_randn(TT_SHAPE(2), d), TT_EDTYPE, want);
        ck_assert_fails(tt_rand(TT_SHAPE(2), d), TT_EDTYPE, "tt_rand: argument 'dtype' expects a floating point");
    }
}
END_TEST

START_TEST(test_null_sizes)
{
    ck_assert_fails(tt_empty(2, NULL, TT_F32), TT_EINVAL,
                    "tt_empty: argument 'size' is NULL for 2 dimensions");
    ck_assert_fails(tt_empty_strided(TT_SHAPE(2), NULL, TT_F32), TT_EINVAL,
                    "tt_empty_strided: argument 'stride' is NULL");
    ck_assert_fails(tt_fake_empty_strided(TT_SHAPE(2), NULL, TT_F32), TT_EINVAL,
                    "tt_fake_empty_strided: argument 'stride' is NULL");
    ck_assert_fails(tt_from_data(TT_SHAPE(2, 3), TT_F32, NULL), TT_EINVAL,
                    "tt_from_data: argument 'data' is NULL for 6 elements");
    ck_assert_fails(tt_from_buffer(TT_SHAPE(2), NULL, TT_F32, NULL, 8, NULL, NULL), TT_EINVAL,
                    "tt_from_buffer: argument 'data' is NULL");
    tt_tensor *t = tt_zeros(TT_SHAPE(2, 3), TT_F32);
    ck_assert_fails(tt_view(t, 2, NULL), TT_EINVAL, "tt_view: argument 'size' is NULL for 2 dimensions");
    ck_assert_fails(tt_reshape(t, 1, NULL), TT_EINVAL, "tt_reshape: argument 'size' is NULL");
    ck_assert_fails(tt_expand(t, 2, NULL), TT_EINVAL, "tt_expand: argument 'size' is NULL for 2 dimensions");
    ck_assert_fails(tt_permute(t, 2, NULL), TT_EINVAL, "tt_permute: argument 'dims' is NULL for 2 dimensions");
    ck_assert_fails(tt_as_strided(t, 1, NULL, A(1), 0), TT_EINVAL,
                    "tt_as_strided: argument 'size' is NULL for 1 dimensions");
    ck_assert_fails(tt_as_strided(t, 1, A(2), NULL, 0), TT_EINVAL,
                    "tt_as_strided: argument 'stride' is NULL");
    ck_assert_fails(tt_new_empty(t, 1, NULL), TT_EINVAL, "argument 'size' is NULL for 1 dimensions");
    tt_release(t);
}
END_TEST

START_TEST(test_from_buffer_errors)
{
    float buf[6];
    int calls = 0;
    ck_assert_fails(tt_from_buffer(TT_SHAPE(2, 4), NULL, TT_F32, buf, sizeof buf, NULL, &calls),
                    TT_EINVAL, "tt_from_buffer: argument 'nbytes' is 24 but the tensor needs 32 bytes");
    ck_assert_fails(tt_from_buffer(TT_SHAPE(3, 2), A(1, 4), TT_F32, buf, sizeof buf, NULL, NULL),
                    TT_EINVAL, "argument 'nbytes' is 24 but the tensor needs 28 bytes");
    ck_assert_fails(tt_from_buffer(TT_SHAPE(4), NULL, TT_F64, buf, 31, NULL, NULL), TT_EINVAL,
                    "argument 'nbytes' is 31 but the tensor needs 32 bytes");
    ck_assert_fails(tt_from_buffer(TT_SHAPE(2), A(INT64_MAX), TT_F32, buf, sizeof buf, NULL, NULL),
                    TT_EINVAL, "tt_from_buffer: argument 'strides' has 9223372036854775807 at "
                    "index 0, which is no size");
    /* A zero-element tensor needs nothing. */
    tt_tensor *t = tt_from_buffer(TT_SHAPE(0, 5), NULL, TT_F32, NULL, 0, NULL, NULL);
    ck_assert_msg(t != NULL, "%s", tt_errmsg());
    tt_release(t);
}
END_TEST

START_TEST(test_arange_linspace_errors)
{
    ck_assert_fails(tt_arange(0, 5, 0, TT_F32), TT_EINVAL,
                    "tt_arange: argument 'step' must be nonzero and the bounds finite "
                    "(got start=0, end=5, step=0)");
    ck_assert_fails(tt_arange(0, 5, -1, TT_I64), TT_EINVAL,
                    "tt_arange: upper bound and larger bound inconsistent with step sign "
                    "(start=0, end=5, step=-1)");
    ck_assert_fails(tt_arange(5, 0, 1, TT_I64), TT_EINVAL,
                    "inconsistent with step sign (start=5, end=0, step=1)");
    ck_assert_fails(tt_arange(0, INFINITY, 1, TT_F64), TT_EINVAL, "the bounds finite (got start=0, end=inf");
    ck_assert_fails(tt_arange(NAN, 1, 1, TT_F64), TT_EINVAL, "must be nonzero and the bounds finite");
    ck_assert_fails(tt_arange(0, 1e300, 1e-300, TT_F64), TT_EINVAL, "tt_arange:");
    ck_assert_fails(tt_arange(0, 1e18, 1, TT_F64), TT_EINVAL, "tt_arange: 1e+18 elements is too many");
    ck_assert_fails(tt_linspace(0, 1, -1, TT_F32), TT_EINVAL,
                    "tt_linspace: argument 'steps' must be non-negative (got -1)");
}
END_TEST

/* ================================================================ views */

START_TEST(test_as_strided_bounds)
{
    tt_tensor *t = tt_zeros(TT_SHAPE(4, 5), TT_F32); /* 80 bytes */
    ck_assert_fails(tt_as_strided(t, TT_SHAPE(5, 5), A(5, 1), 0), TT_EINVAL,
                    "tt_as_strided: sizes [5, 5], strides [5, 1], storage offset 0, and "
                    "itemsize 4 requiring a storage size of 100 are out of bounds for "
                    "storage of size 80");
    ck_assert_fails(tt_as_strided(t, TT_SHAPE(1), A(1), 20), TT_EINVAL,
                    "storage offset 20, and itemsize 4 requiring a storage size of 84 are out "
                    "of bounds for storage of size 80");
    ck_assert_fails(tt_as_strided(t, TT_SHAPE(2, 2), A(19, 1), 0), TT_EINVAL,
                    "requiring a storage size of 84");
    ck_assert_fails(tt_as_strided(t, TT_SHAPE(3), A(INT64_MAX), 0), TT_EINVAL,
                    "tt_as_strided: argument 'stride' has 9223372036854775807 at index 0, which "
                    "is no size");
    ck_assert_fails(tt_as_strided(t, TT_SHAPE(3), A(1LL << 47), 0), TT_EINVAL,
                    "are out of bounds for storage of size");
    ck_assert_fails(tt_as_strided(t, TT_SHAPE(2), A(-1), 4), TT_EINVAL,
                    "tt_as_strided: negative strides are not supported (argument 'stride' "
                    "has -1 at index 0)");
    ck_assert_fails(tt_as_strided(t, TT_SHAPE(2), A(1), -1), TT_EINVAL,
                    "tt_as_strided: argument 'storage_offset' must be non-negative (got -1)");
    ck_assert_fails(tt_as_strided(t, TT_SHAPE(2, -1), A(1, 1), 0), TT_EINVAL,
                    "tt_as_strided: argument 'size' has a negative dimension -1 at index 1");
    /* The bound is the storage, not the view: a narrow view can reach it all. */
    tt_tensor *n = tt_narrow(t, 0, 1, 1);
    tt_tensor *all = tt_as_strided(n, TT_SHAPE(20), A(1), 0);
    ck_assert_msg(all != NULL, "%s", tt_errmsg());
    ck_assert_fails(tt_as_strided(n, TT_SHAPE(21), A(1), 0), TT_EINVAL,
                    "requiring a storage size of 84 are out of bounds for storage of size 80");
    tt_release(all);
    tt_release(n);
    /* Fakes are checked against their storage size too. */
    tt_tensor *f = tt_fake_empty(TT_SHAPE(3), TT_F64);
    ck_assert_fails(tt_as_strided(f, TT_SHAPE(4), A(1), 0), TT_EINVAL,
                    "requiring a storage size of 32 are out of bounds for storage of size 24");
    tt_release(f);
    tt_release(t);
}
END_TEST

START_TEST(test_permute_errors)
{
    tt_tensor *t = tt_zeros(TT_SHAPE(2, 3, 4), TT_F32);
    ck_assert_fails(tt_permute(t, TT_SHAPE(0, 0, 1)), TT_EINVAL,
                    "tt_permute: duplicate dims are not allowed (dim 0 appears twice in "
                    "argument 'dims')");
    ck_assert_fails(tt_permute(t, TT_SHAPE(2, 1, -1)), TT_EINVAL,
                    "duplicate dims are not allowed (dim 2 appears twice");
    ck_assert_fails(tt_permute(t, TT_SHAPE(0, 1, 3)), TT_EINVAL,
                    "tt_permute: argument 'dims' has 3 at index 2, out of range for a 3-dim "
                    "tensor (expected [-3, 2])");
    ck_assert_fails(tt_permute(t, TT_SHAPE(-4, 1, 2)), TT_EINVAL,
                    "argument 'dims' has -4 at index 0, out of range");
    ck_assert_fails(tt_permute(t, TT_SHAPE(0, 1)), TT_EINVAL,
                    "tt_permute: number of dims don't match in permute (input has 3 dims, "
                    "argument 'dims' has 2)");
    ck_assert_fails(tt_permute(t, TT_SHAPE(0, 1, 2, 3)), TT_EINVAL,
                    "(input has 3 dims, argument 'dims' has 4)");
    tt_release(t);
}
END_TEST

START_TEST(test_view_errors)
{
    tt_tensor *t = tt_zeros(TT_SHAPE(2, 3, 4), TT_F32);
    tt_tensor *tr = tt_transpose(t, 0, 2); /* [4, 3, 2] strides [1, 4, 12] */
    ck_assert_fails(tt_view(tr, TT_SHAPE(24)), TT_ESHAPE,
                    "tt_view: view size [24] is not compatible with input tensor's size "
                    "[4, 3, 2] and stride [1, 4, 12] (at least one dimension spans across "
                    "two contiguous subspaces). Use tt_reshape instead.");
    ck_assert_fails(tt_view(tr, TT_SHAPE(12, -1)), TT_ESHAPE, "view size [12, 2] is not compatible");
    ck_assert_fails(tt_view(t, TT_SHAPE(-1, -1)), TT_EINVAL,
                    "tt_view: only one dimension can be inferred");
    ck_assert_fails(tt_reshape(t, TT_SHAPE(-1, 2, -1)), TT_EINVAL,
                    "tt_reshape: only one dimension can be inferred");
    ck_assert_fails(tt_view(t, TT_SHAPE(5, 5)), TT_ESHAPE,
                    "tt_view: shape '[5, 5]' is invalid for input of size 24");
    ck_assert_fails(tt_view(t, TT_SHAPE(5, -1)), TT_ESHAPE,
                    "tt_view: shape '[5, -1]' is invalid for input of size 24");
    ck_assert_fails(tt_reshape(t, TT_SHAPE(25)), TT_ESHAPE,
                    "tt_reshape: shape '[25]' is invalid for input of size 24");
    ck_assert_fails(tt_view(t, TT_SHAPE(0, -1)), TT_ESHAPE,
                    "shape '[0, -1]' is invalid for input of size 24");
    ck_assert_fails(tt_view(t, TT_SHAPE(4, -2, 3)), TT_EINVAL,
                    "tt_view: invalid shape dimension -2");
    ck_assert_fails(tt_view(t, TT_SHAPE(1LL << 40, 1LL << 40)), TT_ESHAPE,
                    "shape '[1099511627776, 1099511627776]' is invalid for input of size 24");
    ck_assert_fails(tt_view(t, 0, NULL), TT_ESHAPE, "shape '[]' is invalid for input of size 24");
    tt_tensor *e = tt_zeros(TT_SHAPE(0, 3), TT_F32);
    ck_assert_fails(tt_view(e, TT_SHAPE(-1, 0)), TT_ESHAPE,
                    "shape '[-1, 0]' is invalid for input of size 0");
    tt_release(e);
    tt_release(tr);
    tt_release(t);
}
END_TEST

START_TEST(test_expand_errors)
{
    tt_tensor *t = tt_zeros(TT_SHAPE(3, 2), TT_F32);
    ck_assert_fails(tt_expand(t, TT_SHAPE(3, 4)), TT_ESHAPE,
                    "tt_expand: the expanded size of the tensor (4) must match the existing "
                    "size (2) at non-singleton dimension 1.  Target sizes: [3, 4].  Tensor "
                    "sizes: [3, 2]");
    ck_assert_fails(tt_expand(t, TT_SHAPE(2, 6, 2)), TT_ESHAPE,
                    "expanded size of the tensor (6) must match the existing size (3) at "
                    "non-singleton dimension 1");
    ck_assert_fails(tt_expand(t, TT_SHAPE(2)), TT_EINVAL,
                    "tt_expand: the number of sizes provided (1) must be greater or equal to "
                    "the number of dimensions in the tensor (2)");
    ck_assert_fails(tt_expand(t, TT_SHAPE(-1, 3, 2)), TT_EINVAL,
                    "tt_expand: the expanded size of the tensor (-1) isn't allowed in a "
                    "leading, non-existing dimension 0");
    ck_assert_fails(tt_expand(t, TT_SHAPE(3, -2)), TT_ESHAPE,
                    "the expanded size of the tensor (-2) must match the existing size (2)");
    tt_tensor *one = tt_zeros(TT_SHAPE(1), TT_F32);
    ck_assert_fails(tt_expand(one, TT_SHAPE(-3)), TT_ESHAPE,
                    "the expanded size of the tensor (-3) must match the existing size (1)");
    ck_assert_fails(tt_expand(one, TT_SHAPE(-2, 4)), TT_EINVAL,
                    "the expanded size of the tensor (-2) isn't allowed in a leading, "
                    "non-existing dimension 0");
    /* As PyTorch ("numel: integer multiplication overflow"): a view whose
     * element count overflows int64 is not made. */
    ck_assert_fails(tt_expand(one, TT_SHAPE(1LL << 40, 1LL << 40)), TT_EINVAL,
                    "tt_expand: the number of elements of size [1099511627776, "
                    "1099511627776] overflows int64");
    tt_tensor *empty = tt_expand(one, TT_SHAPE(0, 1LL << 40, 1LL << 40));
    ck_assert_ptr_nonnull(empty); /* no elements: any size, as PyTorch */
    ck_assert_int_eq(tt_numel(empty), 0);
    tt_release(empty);
    tt_release(one);
    tt_release(t);
}
END_TEST

/* The inputs of the range rows, made again for each row by the "ranges"
 * TCase's fixture. */
static struct {
    tt_tensor *t, *t3, *z, *s, *three;
} in;

static void ranges_setup(void)
{
    tt_test_setup();
    in.t = tt_zeros(TT_SHAPE(3, 4), TT_F32);
    in.t3 = tt_zeros(TT_SHAPE(2, 3, 4), TT_F32);
    in.z = tt_zeros(TT_SHAPE(4, 0), TT_F32);
    in.s = tt_scalar(1, TT_F32);
    in.three = tt_zeros(TT_SHAPE(1, 2, 3), TT_F32);
    ck_assert(in.t && in.t3 && in.z && in.s && in.three);
}

static void ranges_teardown(void)
{
    tt_tensor *all[] = {in.t, in.t3, in.z, in.s, in.three};
    for (int k = 0; k < TT_TABLE_LEN(all); k++)
        tt_release(all[k]);
    memset(&in, 0, sizeof in);
    tt_test_teardown();
}

/* X(name, call, expected status, texts the message contains); t is
 * [3, 4], z [4, 0], s 0-dim, three [1, 2, 3]. */
#define RANGE_ERRORS(X)                                                        \
    X(narrow_start_above, tt_narrow(in.t, 0, 4, 0), TT_EINVAL,                 \
      "tt_narrow: start out of range (expected to be in range of [-3, 3], but got 4)") \
    X(narrow_start_below, tt_narrow(in.t, 1, -5, 1), TT_EINVAL,                \
      "start out of range (expected to be in range of [-4, 4], but got -5)")   \
    X(narrow_end_past_size, tt_narrow(in.t, 0, 2, 2), TT_EINVAL,               \
      "tt_narrow: start (2) + length (2) exceeds dimension size (3)")          \
    X(narrow_negative_start_end_past_size, tt_narrow(in.t, 0, -1, 2), TT_EINVAL, \
      "start (2) + length (2) exceeds dimension size (3)")                     \
    X(narrow_length_overflows, tt_narrow(in.t, 0, 1, INT64_MAX), TT_EINVAL,    \
      "start (1) + length (9223372036854775807) exceeds dimension size (3)")   \
    X(narrow_negative_length, tt_narrow(in.t, 1, 0, -1), TT_EINVAL,            \
      "tt_narrow: argument 'length' must be non-negative (got -1)")            \
    X(select_index_above, tt_select(in.t, 0, 3), TT_EINVAL,                    \
      "tt_select: index 3 out of range for tensor of size [3, 4] at dimension 0") \
    X(select_index_below, tt_select(in.t, -1, -5), TT_EINVAL,                  \
      "tt_select: index -5 out of range for tensor of size [3, 4] at dimension 1") \
    X(select_index_int64_min, tt_select(in.t, 1, INT64_MIN), TT_EINVAL,        \
      "out of range for tensor of size [3, 4]")                                \
    X(slice_step_zero, tt_slice(in.t, 0, 0, 3, 0), TT_EINVAL,                  \
      "tt_slice: argument 'step' must be positive (got 0)")                    \
    X(slice_step_negative, tt_slice(in.t, 0, 3, 0, -1), TT_EINVAL,             \
      "argument 'step' must be positive (got -1)")                             \
    X(select_empty_dim, tt_select(in.z, 1, 0), TT_EINVAL,                      \
      "index 0 out of range for tensor of size [4, 0] at dimension 1")         \
    X(narrow_0dim, tt_narrow(in.s, 0, 0, 1), TT_EINVAL,                        \
      "tt_narrow: narrow() cannot be applied to a 0-dim tensor")               \
    X(select_0dim, tt_select(in.s, 0, 0), TT_EINVAL,                           \
      "tt_select: select() cannot be applied to a 0-dim tensor")               \
    X(slice_0dim, tt_slice(in.s, 0, 0, 1, 1), TT_EINVAL,                       \
      "tt_slice: slice() cannot be applied to a 0-dim tensor")                 \
    X(t_3d, tt_t(in.three), TT_EINVAL,                                         \
      "tt_t: expects a tensor with <= 2 dimensions, but self is 3D")           \
    X(flatten_start_after_end, tt_flatten(in.three, 2, 1), TT_EINVAL,          \
      "tt_flatten: flatten() has invalid args: start_dim (2) cannot come after end_dim (1)")

TT_ERROR_TABLE(RANGE_ERRORS, range_errors);

/* One row of RANGE_ERRORS per iteration. */
START_TEST(test_narrow_select_slice_range)
{
    tt_test_run_error_case(&range_errors[_i], _i);
}
END_TEST

/* Every call that takes a dim, with one out of range of t3 [2, 3, 4]: each
 * row of DIM_CALLS runs with each of bad_dims (the row's dim, bad_dim),
 * and its message must say which range and which dim, after the call's
 * name where the row gives it. */
static const int bad_dims[] = {3, -4, 100, INT32_MIN};
#define NBAD TT_TABLE_LEN(bad_dims)
static int bad_dim;

#define DIM_CALLS(X)                                                           \
    X(dim_size, tt_dim_size(in.t3, bad_dim), TT_EINVAL, "tt_dim_size: ")       \
    X(dim_stride, tt_dim_stride(in.t3, bad_dim), TT_EINVAL, "tt_dim_stride: ") \
    X(transpose_dim0, tt_transpose(in.t3, bad_dim, 0), TT_EINVAL, NULL)        \
    X(transpose_dim1, tt_transpose(in.t3, 0, bad_dim), TT_EINVAL, "tt_transpose: ") \
    X(narrow, tt_narrow(in.t3, bad_dim, 0, 1), TT_EINVAL, "tt_narrow: ")       \
    X(slice, tt_slice(in.t3, bad_dim, 0, 1, 1), TT_EINVAL, "tt_slice: ")       \
    X(select, tt_select(in.t3, bad_dim, 0), TT_EINVAL, "tt_select: ")          \
    X(squeeze, tt_squeeze(in.t3, bad_dim), TT_EINVAL, "tt_squeeze: ")          \
    X(flatten_start, tt_flatten(in.t3, bad_dim, -1), TT_EINVAL, NULL)          \
    X(flatten_end, tt_flatten(in.t3, 0, bad_dim), TT_EINVAL, "tt_flatten: ")

TT_ERROR_TABLE(DIM_CALLS, dim_calls);

/* Row i: call i / NBAD with bad_dims[i % NBAD]. */
START_TEST(test_dim_out_of_range)
{
    tt_error_case c = dim_calls[_i / NBAD];
    char name[64], want[160];
    bad_dim = bad_dims[_i % NBAD];
    snprintf(name, sizeof name, "%s, dim %d", c.name, bad_dim);
    snprintf(want, sizeof want, "dimension out of range (expected to be in range of [-3, 2], "
                                "but got %d)", bad_dim);
    c.name = name;
    c.needles[1] = c.needles[0];
    c.needles[0] = want;
    tt_test_run_error_case(&c, _i);
}
END_TEST

/* unsqueeze takes one more position; a 0-dim tensor accepts dims 0 and -1
 * where a dim is a position, but has no size or stride to ask for. */
#define DIM_ERRORS(X)                                                          \
    X(unsqueeze_above, tt_unsqueeze(in.t3, 4), TT_EINVAL,                      \
      "tt_unsqueeze: dimension out of range (expected to be in range of [-4, 3], but got 4)") \
    X(unsqueeze_below, tt_unsqueeze(in.t3, -5), TT_EINVAL, "[-4, 3], but got -5") \
    X(transpose_0dim, tt_transpose(in.s, 1, 0), TT_EINVAL,                     \
      "tt_transpose: dimension out of range (expected to be in range of [-1, 0], but got 1)") \
    X(squeeze_0dim, tt_squeeze(in.s, -2), TT_EINVAL,                           \
      "tt_squeeze: dimension out of range (expected to be in range of [-1, 0], but got -2)") \
    X(unsqueeze_0dim, tt_unsqueeze(in.s, 2), TT_EINVAL,                        \
      "tt_unsqueeze: dimension out of range (expected to be in range of [-1, 0], but got 2)") \
    X(dim_size_0dim, tt_dim_size(in.s, 0), TT_EINVAL,                          \
      "tt_dim_size: a 0-dim tensor has no dimension 0")                        \
    X(dim_stride_0dim, tt_dim_stride(in.s, -1), TT_EINVAL,                     \
      "tt_dim_stride: a 0-dim tensor has no dimension -1")

TT_ERROR_TABLE(DIM_ERRORS, dim_errors);

/* One row of DIM_ERRORS per iteration. */
START_TEST(test_dim_out_of_range_edges)
{
    tt_test_run_error_case(&dim_errors[_i], _i);
}
END_TEST

/* ========================================================= NULL tensors */

static void noop_loop(char **data, const int64_t *strides, int64_t n, void *ctx)
{
    (void)data, (void)strides, (void)n, (void)ctx;
}

START_TEST(test_null_tensor_arguments)
{
    const tt_tensor *N = NULL;
    tt_tensor *t = tt_zeros(TT_SHAPE(2, 3), TT_F32);
#define NULL_SELF(fn, call) ck_assert_fails(call, TT_EINVAL, fn ": argument 'self' expects a tensor, got NULL")
    NULL_SELF("tt_new_empty", tt_new_empty(N, TT_SHAPE(2)));
    NULL_SELF("tt_empty_like", tt_empty_like(N));
    NULL_SELF("tt_fake_like", tt_fake_like(N));
    NULL_SELF("tt_view", tt_view(N, TT_SHAPE(6)));
    NULL_SELF("tt_reshape", tt_reshape(N, TT_SHAPE(6)));
    NULL_SELF("tt_permute", tt_permute(N, TT_SHAPE(1, 0)));
    NULL_SELF("tt_transpose", tt_transpose(N, 0, 1));
    NULL_SELF("tt_t", tt_t(N));
    NULL_SELF("tt_narrow", tt_narrow(N, 0, 0, 1));
    NULL_SELF("tt_slice", tt_slice(N, 0, 0, 1, 1));
    NULL_SELF("tt_select", tt_select(N, 0, 0));
    NULL_SELF("tt_expand", tt_expand(N, TT_SHAPE(2, 3)));
    NULL_SELF("tt_squeeze", tt_squeeze(N, 0));
    NULL_SELF("tt_squeeze_all", tt_squeeze_all(N));
    NULL_SELF("tt_unsqueeze", tt_unsqueeze(N, 0));
    NULL_SELF("tt_flatten", tt_flatten(N, 0, -1));
    NULL_SELF("tt_as_strided", tt_as_strided(N, TT_SHAPE(1), A(1), 0));
    NULL_SELF("tt_detach", tt_detach(N));
    NULL_SELF("tt_contiguous", tt_contiguous(N));
    NULL_SELF("tt_clone", tt_clone(N));
    NULL_SELF("tt_to_dtype", tt_to_dtype(N, TT_F64));
#undef NULL_SELF
    double v;
    float buf[6];
    ck_assert_status(tt_copy_(NULL, t), TT_EINVAL, "tt_copy_: argument 'self' expects a tensor, got NULL");
    ck_assert_status(tt_copy_(t, NULL), TT_EINVAL, "tt_copy_: argument 'src' expects a tensor, got NULL");
    ck_assert_status(tt_fill_(NULL, 1), TT_EINVAL, "tt_fill_: argument 'self' expects a tensor, got NULL");
    ck_assert_status(tt_item(N, &v), TT_EINVAL, "tt_item: argument 'self' expects a tensor, got NULL");
    ck_assert_status(tt_get(N, &v, 0, 0), TT_EINVAL, "tt_get: argument 'self' expects a tensor, got NULL");
    ck_assert_status(tt_set(NULL, 1, 0, 0), TT_EINVAL, "tt_set: argument 'self' expects a tensor, got NULL");
    ck_assert_status(tt_to_buffer(N, buf, sizeof buf), TT_EINVAL,
                     "tt_to_buffer: argument 'self' expects a tensor, got NULL");
    tt_clear_error();
    ck_assert_ptr_null(tt_data(N));
    ck_assert_error(TT_EINVAL, "tt_data: argument 'self' expects a tensor, got NULL");
    tt_clear_error();
    ck_assert_int_eq(tt_dim_size(N, 0), -1);
    ck_assert_error(TT_EINVAL, "tt_dim_size: argument 'self' expects a tensor, got NULL");
    tt_clear_error();
    ck_assert_int_eq(tt_dim_stride(N, 0), -1);
    ck_assert_error(TT_EINVAL, "tt_dim_stride: argument 'self' expects a tensor, got NULL");
    tt_tensor *ops[2] = {t, NULL};
    ck_assert_status(tt_for_each(2, ops, noop_loop, NULL), TT_EINVAL, "tt_for_each: operand 1 is NULL");
    ck_assert_status(tt_for_each(1, NULL, noop_loop, NULL), TT_EINVAL,
                     "tt_for_each: expects 1 to 8 operands and a loop function (got 1)");
    ck_assert_status(tt_for_each(1, ops, NULL, NULL), TT_EINVAL, "tt_for_each: expects 1 to 8 operands");
    /* Queries and reference counting accept NULL quietly (libratbag's
     * unref convention), returning neutral values. */
    tt_clear_error();
    ck_assert_int_eq(tt_ndim(N), 0);
    ck_assert_ptr_null(tt_sizes(N));
    ck_assert_ptr_null(tt_strides(N));
    ck_assert_int_eq(tt_numel(N), 0);
    ck_assert_int_eq(tt_storage_offset(N), 0);
    ck_assert_uint_eq(tt_storage_nbytes(N), 0);
    ck_assert(!tt_is_contiguous(N) && !tt_is_fake(N) && !tt_has_sym_sizes(N));
    ck_assert(!tt_same_storage(N, t) && !tt_same_storage(t, N));
    ck_assert_uint_eq(tt_version(N), 0);
    tt_bump_version(NULL);
    ck_assert_ptr_null(tt_retain(NULL));
    ck_assert_ptr_null(tt_release(NULL));
    ck_assert_ptr_null(tt_keep(NULL));
    ck_assert_int_eq(tt_errcode(), TT_OK);
    tt_release(t);
}
END_TEST

/* ========================================================= data access */

START_TEST(test_fake_data_errors)
{
    tt_tensor *f = tt_fake_empty(TT_SHAPE(4, 5), TT_I32);
    tt_tensor *row = tt_select(f, 0, 1);
    double v;
    int32_t buf[20];
    tt_clear_error();
    ck_assert_ptr_null(tt_data(f));
    ck_assert_error(TT_EFAKE, "tt_data: cannot access the data of fake i32[4, 5]: a "
                              "fake tensor has sizes, strides and dtype but no storage");
    ck_assert_status(tt_item(row, &v), TT_EFAKE, "tt_item: cannot access the data of fake i32[5]");
    ck_assert_status(tt_get(f, &v, 0, 0), TT_EFAKE, "tt_get: cannot access the data of fake i32[4, 5]");
    ck_assert_status(tt_set(row, 1, 0), TT_EFAKE, "tt_set: cannot access the data of fake i32[5]");
    ck_assert_status(tt_to_buffer(f, buf, sizeof buf), TT_EFAKE,
                     "tt_to_buffer: cannot access the data of fake i32[4, 5]");
    ck_assert_error(TT_EFAKE, "(called from ");
    ck_assert_error(TT_EFAKE, "test_errors.c:");
    ck_assert_error(TT_EFAKE, "in test_fake_data_errors_fn)");
    tt_tensor *ops[1] = {row};
    ck_assert_status(tt_for_each(1, ops, noop_loop, NULL), TT_EFAKE,
                     "tt_for_each: operand 0 is a fake tensor; kernels cannot run on fake tensors");
    tt_tensor *real = tt_zeros(TT_SHAPE(5), TT_I32);
    ck_assert_status(tt_copy_(real, row), TT_EFAKE, "tt_copy_: cannot copy a fake tensor into a real one");
    ck_assert_status(tt_copy_(row, NULL), TT_EINVAL, "tt_copy_: argument 'src' expects a tensor, got NULL");
    /* A broadcast error is found on fakes too. */
    tt_tensor *three = tt_fake_empty(TT_SHAPE(3), TT_I32);
    ck_assert_status(tt_copy_(row, three), TT_ESHAPE,
                     "tt_copy_: argument 'src' of shape [3] cannot be broadcast to the "
                     "destination's shape [5]");
    tt_release(three);
    tt_release(real);
    tt_release(row);
    tt_release(f);
}
END_TEST

START_TEST(test_item_get_set_errors)
{
    tt_tensor *t = tt_zeros(TT_SHAPE(2, 3), TT_F32);
    double v;
    ck_assert_status(tt_item(t, &v), TT_EINVAL,
                     "tt_item: a tensor with 6 elements cannot be converted to a number (f32[2, 3])");
    tt_tensor *e = tt_zeros(TT_SHAPE(0), TT_I64);
    ck_assert_status(tt_item(e, &v), TT_EINVAL, "tt_item: a tensor with 0 elements cannot be converted");
    tt_release(e);
    ck_assert_status(tt_get(t, &v, 0), TT_EINVAL, "tt_get: expected 2 indices for a 2-dim tensor, got 1");
    ck_assert_status(tt_get(t, &v, 0, 0, 0), TT_EINVAL, "tt_get: expected 2 indices for a 2-dim tensor, got 3");
    ck_assert_status(tt_get(t, &v, 0, 3), TT_EINVAL,
                     "tt_get: index 3 is out of bounds for dimension 1 with size 3");
    ck_assert_status(tt_get(t, &v, -3, 0), TT_EINVAL,
                     "tt_get: index -3 is out of bounds for dimension 0 with size 2");
    ck_assert_status(tt_set(t, 1, 2, 0), TT_EINVAL,
                     "tt_set: index 2 is out of bounds for dimension 0 with size 2");
    ck_assert_status(tt_set(t, 1, 0), TT_EINVAL, "tt_set: expected 2 indices for a 2-dim tensor, got 1");
    ck_assert_uint_eq(tt_version(t), 0); /* failed writes do not count */
    /* Negative indices within range are Python's. */
    ck_assert_int_eq(tt_set(t, 5, -1, -1), TT_OK);
    ck_assert_int_eq(tt_get(t, &v, 1, 2), TT_OK);
    ck_assert_double_eq(v, 5);
    tt_tensor *s = tt_scalar(3, TT_F32);
    ck_assert_status(tt_get(s, &v, 0), TT_EINVAL, "tt_get: expected 0 indices for a 0-dim tensor, got 1");
    tt_release(s);
    float buf[7];
    ck_assert_status(tt_to_buffer(t, buf, 20), TT_EINVAL,
                     "tt_to_buffer: argument 'nbytes' expects 24 bytes for f32[2, 3], got 20");
    ck_assert_status(tt_to_buffer(t, buf, 28), TT_EINVAL, "expects 24 bytes for f32[2, 3], got 28");
    tt_release(t);
}
END_TEST

/* ================================================================ copies */

START_TEST(test_copy_errors)
{
    tt_tensor *dst = tt_zeros(TT_SHAPE(2, 3), TT_F32);
    tt_tensor *four = tt_zeros(TT_SHAPE(4), TT_F32);
    tt_tensor *big = tt_zeros(TT_SHAPE(1, 2, 3), TT_F32);
    tt_tensor *col = tt_zeros(TT_SHAPE(3, 1), TT_F32);
    ck_assert_status(tt_copy_(dst, four), TT_ESHAPE,
                     "tt_copy_: argument 'src' of shape [4] cannot be broadcast to the "
                     "destination's shape [2, 3]");
    /* As PyTorch: src may not have more dims than the destination. */
    ck_assert_status(tt_copy_(dst, big), TT_ESHAPE, "argument 'src' of shape [1, 2, 3] cannot be broadcast");
    ck_assert_status(tt_copy_(dst, col), TT_ESHAPE, "argument 'src' of shape [3, 1] cannot be broadcast");
    ck_assert_uint_eq(tt_version(dst), 0);
    /* Memory overlap (PyTorch's rules): the destination may not repeat an
     * element, and source and destination may not partly overlap. */
    tt_tensor *row = tt_zeros(TT_SHAPE(3), TT_F32);
    tt_tensor *ex = tt_expand(row, TT_SHAPE(2, 3));
    ck_assert_status(tt_copy_(ex, dst), TT_EINVAL,
                     "tt_copy_: unsupported operation: more than one element of the written-to "
                     "tensor refers to a single memory location. Please clone() the tensor "
                     "before performing the operation.");
    tt_tensor *v = tt_arange(0, 10, 1, TT_F64);
    tt_tensor *a = tt_slice(v, 0, 1, 10, 1), *b = tt_slice(v, 0, 0, 9, 1);
    ck_assert_status(tt_copy_(a, b), TT_EINVAL,
                     "tt_copy_: unsupported operation: some elements of the input tensor and the "
                     "written-to tensor refer to a single memory location. Please clone() the "
                     "tensor before performing the operation.");
    ck_assert_status(tt_copy_(b, a), TT_EINVAL, "some elements of the input tensor and the written-to tensor");
    tt_tensor *nine = tt_narrow(v, 0, 0, 9);
    tt_tensor *sq = tt_view(nine, TT_SHAPE(3, 3));
    tt_tensor *sqt = tt_t(sq);
    ck_assert_status(tt_copy_(sq, sqt), TT_EINVAL, "some elements of the input tensor");
    /* Nothing was written. */
    for (int64_t i = 0; i < 10; i++) {
        double x;
        ck_assert_int_eq(tt_get(v, &x, i), TT_OK);
        ck_assert_double_eq(x, (double)i);
    }
    ck_assert_uint_eq(tt_version(v), 0);
    /* Disjoint parts of one storage are fine. */
    tt_tensor *lo = tt_narrow(v, 0, 0, 5), *hi = tt_narrow(v, 0, 5, 5);
    ck_assert_int_eq(tt_copy_(lo, hi), TT_OK);
    double x;
    ck_assert_int_eq(tt_get(v, &x, 0), TT_OK);
    ck_assert_double_eq(x, 5);
    tt_release(hi);
    tt_release(lo);
    tt_release(sqt);
    tt_release(sq);
    tt_release(nine);
    tt_release(b);
    tt_release(a);
    tt_release(v);
    tt_release(ex);
    tt_release(row);
    tt_release(col);
    tt_release(big);
    tt_release(four);
    tt_release(dst);
}
END_TEST

START_TEST(test_for_each_errors)
{
    tt_tensor *a = tt_zeros(TT_SHAPE(2, 3), TT_F32), *b = tt_zeros(TT_SHAPE(3), TT_F32);
    tt_tensor *ops[9] = {a, b, a, a, a, a, a, a, a};
    ck_assert_status(tt_for_each(2, ops, noop_loop, NULL), TT_ESHAPE,
                     "tt_for_each: operand 1 has shape [3], operand 0 has [2, 3] (expand to "
                     "broadcast first)");
    ck_assert_status(tt_for_each(0, ops, noop_loop, NULL), TT_EINVAL,
                     "tt_for_each: expects 1 to 8 operands and a loop function (got 0)");
    ck_assert_status(tt_for_each(9, ops, noop_loop, NULL), TT_EINVAL, "expects 1 to 8 operands and a loop function (got 9)");
    tt_release(a);
    tt_release(b);
}
END_TEST

START_TEST(test_real_tensor_symbolic_size)
{
    tt_sym_reset();
    tt_size s = tt_sym_new("s", 4);
    ck_assert_fails(tt_empty(1, (const int64_t[]){s}, TT_F32), TT_EINVAL,
                    "tt_empty: a real tensor cannot have symbolic sizes (dimension 0); use a fake tensor");
    ck_assert_fails(tt_zeros(2, (const int64_t[]){2, s}, TT_F32), TT_EINVAL,
                    "a real tensor cannot have symbolic sizes (dimension 1)");
    ck_assert_fails(tt_empty_strided(TT_SHAPE(2), (const int64_t[]){s}, TT_F32), TT_EINVAL,
                    "tt_empty_strided: a real tensor cannot have symbolic sizes (dimension 0)");
    tt_sym_reset();
}
END_TEST

/* ================================================ the first cause wins */

/* A fake kernel that reads data: TT_EFAKE. */
static tt_status peek_fake(tt_frame *f)
{
    tt_tensor *x;
    tt_status st = tt_arg_tensor(f, 0, &x);
    if (st)
        return st;
    const float *p = tt_data(x);
    return p ? tt_return(f, 0, tt_new_empty(x, TT_SHAPE(1))) : tt_errcode();
}

static tt_status copy_kernel(tt_frame *f)
{
    tt_tensor *x;
    tt_status st = tt_arg_tensor(f, 0, &x);
    return st ? st : tt_return(f, 0, tt_clone(x));
}

/* Calls nest in C: when an op gets the NULL a failed call returned, the
 * failed call's error is reported (its code, op and message) with the
 * later calls added as context, for a shape error, a fake kernel reading
 * data and an allocation failure at the innermost of three calls. */
START_TEST(test_nested_calls_keep_first_cause)
{
    tt_tensor *x = NN(tt_randn(TT_SHAPE(4, 3), TT_F32)), *w = NN(tt_randn(TT_SHAPE(5, 2), TT_F32));
    tt_tensor *b = NN(tt_zeros(TT_SHAPE(5), TT_F32));
    ck_assert_fails(tt_softmax(tt_relu(tt_linear(x, w, b)), 1), TT_ESHAPE,
                    "tt::linear: argument 'weight' (#2)");
    ck_assert_str_eq(strstr(tt_errmsg(), " (then "),
                     " (then tt::relu: argument 'self' (#1) expects Tensor, got NULL) (then "
                     "tt::softmax.int: argument 'self' (#1) expects Tensor, got NULL)");
    ck_assert_msg(strncmp(tt_errmsg(), "tt::linear: ", 12) == 0, "%s", tt_errmsg());

    tt_library *lib = tt_library_new(TT_LIB_DEF, "firstcause");
    ck_assert_ptr_nonnull(lib);
    tt_op *peek = tt_custom_op_define(lib, &(tt_custom_op_spec){
        .schema = "firstcause::peek(Tensor x) -> Tensor", .kernel = copy_kernel,
        .fake = peek_fake});
    ck_assert_ptr_nonnull(peek);
    tt_tensor *fx = NN(tt_fake_like(x));
    ck_assert_fails(tt_sum_all(tt_exp(tt_call(peek, tt_v_tensor(fx)))), TT_EFAKE,
                    "firstcause::peek: the fake kernel read tensor data");
    ck_assert_ptr_nonnull(strstr(tt_errmsg(), "(then tt::exp: argument 'self' (#1) expects "
                                              "Tensor, got NULL) (then tt::sum: argument "
                                              "'self' (#1) expects Tensor, got NULL)"));

    /* The first allocation of the chain (tt_sin's output) fails. */
    tt_clear_error();
    tt_debug_fail_alloc(1);
    tt_tensor *r = tt_mul(x, tt_exp(tt_sin(x)));
    tt_debug_fail_alloc(0);
    ck_assert_ptr_null(r);
    ck_assert_error(TT_ENOMEM, "out of memory");
    /* The allocator names the user's call it failed in. */
    ck_assert_msg(strstr(tt_errmsg(), "bytes failed in tt_sin, called from ") &&
                      strstr(tt_errmsg(), "test_errors.c:") &&
                      strstr(tt_errmsg(), " in test_nested_calls_keep_first_cause_fn (injected"),
                  "%s", tt_errmsg());
    ck_assert_ptr_nonnull(strstr(tt_errmsg(), "(then tt::exp: argument 'self' (#1) expects "
                                              "Tensor, got NULL) (then tt::mul.Tensor: "
                                              "argument 'other' (#2) expects Tensor, got "
                                              "NULL)"));

    /* Looking at an error changes nothing; once acknowledged with
     * tt_clear_error, a NULL is the caller's own mistake. */
    tt_clear_error();
    ck_assert_fails(tt_exp(NULL), TT_EINVAL,
                    "tt::exp: argument 'self' (#1) expects Tensor, got NULL");
    tt_error(TT_ESHAPE, "an earlier failure");
    (void)tt_errcode();
    (void)tt_errmsg();
    tt_tensor *e = tt_exp(NULL);
    ck_assert_ptr_null(e);
    ck_assert_error(TT_ESHAPE, "an earlier failure (then tt::exp: argument 'self' (#1) "
                               "expects Tensor, got NULL)");
    tt_clear_error();
    ck_assert_ptr_null(tt_exp(NULL));
    ck_assert_error(TT_EINVAL, "tt::exp: argument 'self' (#1) expects Tensor, got NULL");
    tt_release(fx);
    tt_library_free(lib);
    tt_release(b);
    tt_release(w);
    tt_release(x);
}
END_TEST

/* A backward whose n-th allocation fails reports TT_ENOMEM, for every n. */
static tt_tensor *make_loss(tt_tensor *x, tt_tensor *w)
{
    tt_scope_begin();
    tt_tensor *loss = tt_keep(tt_sum_all(tt_tanh(tt_softmax(tt_matmul(x, w), 1))));
    tt_scope_end();
    return loss;
}

START_TEST(test_backward_out_of_memory)
{
    tt_tensor *x = NN(tt_randn(TT_SHAPE(4, 3), TT_F32)), *w = NN(tt_randn(TT_SHAPE(3, 5), TT_F32));
    OK(tt_set_requires_grad(w, true));
    int64_t n = 0;
    for (int warm = 0; warm < 2; warm++) { /* the second run counts: no first-use set-up */
        OK(tt_set_grad(w, NULL));
        tt_tensor *loss = NN(make_loss(x, w));
        int64_t before = tt_debug_alloc_count();
        OK(tt_backward(loss, NULL));
        n = tt_debug_alloc_count() - before;
        tt_release(loss);
    }
    ck_assert_int_gt(n, 3);
    for (int64_t k = 1; k <= n; k++) {
        OK(tt_set_grad(w, NULL));
        tt_tensor *loss = NN(make_loss(x, w));
        tt_clear_error();
        tt_debug_fail_alloc(k);
        tt_status st = tt_backward(loss, NULL);
        tt_debug_fail_alloc(0);
        ck_assert_msg(st == TT_ENOMEM, "allocation %lld of %lld: %s: %s", (long long)k,
                      (long long)n, tt_status_name(st), tt_errmsg());
        ck_assert_ptr_nonnull(strstr(tt_errmsg(), "out of memory"));
        tt_release(loss);
    }
    tt_release(w);
    tt_release(x);
}
END_TEST


static Suite *errors_suite(void)
{
    Suite *s = suite_create("errors");
    TCase *tc = tt_tcase("state");
    tcase_add_test(tc, test_error_state);
    tcase_add_test(tc, test_status_names);
    tcase_add_test(tc, test_error_per_thread);
    suite_add_tcase(s, tc);

    tc = tt_tcase("factories");
    tcase_add_test(tc, test_negative_size);
    tcase_add_test(tc, test_too_many_dims);
    tcase_add_test(tc, test_size_overflow);
    tcase_add_test(tc, test_bad_dtype);
    tcase_add_test(tc, test_null_sizes);
    tcase_add_test(tc, test_from_buffer_errors);
    tcase_add_test(tc, test_arange_linspace_errors);
    tcase_add_test(tc, test_real_tensor_symbolic_size);
    suite_add_tcase(s, tc);

    tc = tt_tcase("views");
    tcase_add_test(tc, test_as_strided_bounds);
    tcase_add_test(tc, test_permute_errors);
    tcase_add_test(tc, test_view_errors);
    tcase_add_test(tc, test_expand_errors);
    suite_add_tcase(s, tc);

    tc = tt_tcase_with("ranges", ranges_setup, ranges_teardown);
    tcase_add_loop_test(tc, test_narrow_select_slice_range, 0, TT_TABLE_LEN(range_errors));
    tcase_add_loop_test(tc, test_dim_out_of_range, 0, TT_TABLE_LEN(dim_calls) * NBAD);
    tcase_add_loop_test(tc, test_dim_out_of_range_edges, 0, TT_TABLE_LEN(dim_errors));
    suite_add_tcase(s, tc);

    tc = tt_tcase("arguments");
    tcase_add_test(tc, test_null_tensor_arguments);
    suite_add_tcase(s, tc);

    tc = tt_tcase("data");
    tcase_add_test(tc, test_fake_data_errors);
    tcase_add_test(tc, test_item_get_set_errors);
    tcase_add_test(tc, test_copy_errors);
    tcase_add_test(tc, test_for_each_errors);
    tcase_add_test(tc, test_nested_calls_keep_first_cause);
    tcase_add_test(tc, test_backward_out_of_memory);
    suite_add_tcase(s, tc);
    return s;
}

TT_TEST_MAIN(errors_suite)
