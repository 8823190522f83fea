/* Every typed wrapper of ops/tt_ops.h reaches the op its name says, with
 * its arguments in the op's order (issue 25). A wrapper has two paths: with
 * no mode, autograd or fake tensor it calls the kernel directly (the fast
 * path, which skips the dispatcher); otherwise it boxes its arguments and
 * calls its op. A wrapper that names the wrong overload or boxes its
 * arguments in another order than its fast path passes them would be
 * silent in every other suite. Here each row calls its wrapper once without
 * a mode and once under a recording mode, and asserts exactly one op call,
 * the expected op, given the arguments its schema wants in that order,
 * and the same result: dtype, sizes, strides, storage offset and elements
 * bit for bit (for an in-place wrapper, the tensors it wrote too).
 * tests/check_wrappers.py fails when a wrapper declared in ops/tt_ops.h
 * has no row here, or a row names no wrapper. */
#include "mode_test.h"

#include <stdarg.h>

/* --------------------------------------------------------------- inputs */

/* Made by the fixture, outside any mode (the factories and views are op
 * calls a mode would see). Values are mixed in sign and distinct between
 * A and B, so a swapped pair of arguments changes the result. */
static tt_tensor *A, *B, *P;    /* f32 [2, 3]; P is positive (log, sqrt) */
static tt_tensor *C;            /* bool [2, 3]: A < B */
static tt_tensor *M;            /* f32 [3, 2] */
static tt_tensor *A3, *B3, *P3; /* f32 [1, 2, 3]: A, B and P as batches */
static tt_tensor *M3;           /* f32 [1, 3, 2] */
static tt_tensor *AT;           /* f32 [3, 2]: A transposed (not contiguous) */
static tt_tensor *U;            /* f32 [2, 1, 3]: A with a size-1 dim */
static tt_tensor *V2, *V3;      /* f32 [2] and [3] */
static tt_tensor *LO, *HI;      /* f32 [3]: clamp bounds */
static tt_tensor *TGT, *IDX;    /* i64 [2] class indices, i64 [3] rows */
static tt_tensor *STEP;         /* f32 0-dim: the AdamW step number */
static tt_tensor *X4, *W4;      /* f32 [1, 2, 3, 3] image, [2, 2, 2, 2] conv weight */
static tt_tensor *RM, *RV;      /* f32 [3]: batch norm running stats (RV positive) */
static tt_tensor *XP;           /* f32 [1, 2, 3, 4]: an image batch (pooling, padding) */
static tt_tensor *GI, *I10;     /* i64 [2, 3] gather/scatter positions in [0, 2); i64 {1, 0} */
static tt_tensor *OFFS;         /* i64 [2] {0, 2}: embedding_bag's offsets */
static tt_tensor *PR;           /* f32 [2, 3]: probabilities (bernoulli, multinomial) */
/* Made afresh for every call, outside the mode, as clones of A, B and P:
 * what an in-place wrapper writes (W; W2 and W3 for the AdamW moment
 * buffers: W3, the squares', must not be negative). */
static tt_tensor *W, *W2, *W3;

static tt_tensor *f32(int n, const int64_t *shape, const float *v)
{
    tt_tensor *t = tt_from_data(n, shape, TT_F32, v);
    ck_assert_msg(t != NULL, "tt_from_data: %s", tt_errmsg());
    return t;
}

static void inputs_make(void)
{
    tt_test_setup();
    static const float a[6] = {-1.5f, 0.25f, 2.0f, -0.75f, 3.0f, 1.25f};
    static const float b[6] = {0.5f, 2.0f, -1.0f, 1.5f, -2.5f, 0.75f};
    static const float p[6] = {0.5f, 1.5f, 2.25f, 3.0f, 0.75f, 4.0f};
    static const float m[6] = {1.0f, -2.0f, 0.5f, 3.0f, -1.5f, 2.5f};
    static const float v2[2] = {0.125f, -0.5f}, v3[3] = {0.5f, -1.0f, 2.0f};
    static const float lo[3] = {-1.0f, -0.5f, 0.0f}, hi[3] = {1.0f, 0.5f, 2.0f};
    static const int64_t tgt[2] = {2, 0}, idx[3] = {1, 0, 1};
    const int64_t s23[2] = {2, 3}, s32[2] = {3, 2}, s123[3] = {1, 2, 3}, s132[3] = {1, 3, 2};
    const int64_t s2[1] = {2}, s3[1] = {3};
    A = f32(2, s23, a), B = f32(2, s23, b), P = f32(2, s23, p), M = f32(2, s32, m);
    A3 = f32(3, s123, a), B3 = f32(3, s123, b), P3 = f32(3, s123, p), M3 = f32(3, s132, m);
    V2 = f32(1, s2, v2), V3 = f32(1, s3, v3), LO = f32(1, s3, lo), HI = f32(1, s3, hi);
    C = NN(tt_lt(A, B));
    AT = NN(tt_transpose(A, 0, 1));
    U = NN(tt_view(A, TT_SHAPE(2, 1, 3)));
    TGT = NN(tt_from_data(1, s2, TT_I64, tgt));
    IDX = NN(tt_from_data(1, s3, TT_I64, idx));
    STEP = NN(tt_scalar(3, TT_F32));
    static const float x4[18] = {1.5f, -2.0f, 0.5f, 3.0f, -1.0f, 2.5f, 0.25f, -0.5f, 1.0f,
                                 -3.0f, 2.0f, 0.75f, -1.25f, 1.75f, -2.5f, 0.5f, 2.25f, -0.75f};
    static const float w4[16] = {0.5f, -1.0f, 1.5f, 0.25f, -0.75f, 2.0f, -1.5f, 1.0f,
                                 1.25f, 0.5f, -2.0f, 0.75f, -0.25f, 1.0f, 0.5f, -1.25f};
    X4 = f32(4, (const int64_t[]){1, 2, 3, 3}, x4);
    W4 = f32(4, (const int64_t[]){2, 2, 2, 2}, w4);
    RM = f32(1, s3, v3), RV = f32(1, s3, hi);
    static float xp[24];
    for (int i = 0; i < 24; i++) /* distinct, mixed in sign, not monotone */
        xp[i] = (float)((i * 7) % 24 - 11) * 0.5f;
    XP = f32(4, (const int64_t[]){1, 2, 3, 4}, xp);
    static const int64_t gi[6] = {1, 0, 1, 1, 1, 0}, i10[2] = {1, 0};
    GI = NN(tt_from_data(2, s23, TT_I64, gi));
    I10 = NN(tt_from_data(1, s2, TT_I64, i10));
    OFFS = NN(tt_from_data(1, s2, TT_I64, (const int64_t[]){0, 2}));
    static const float pr[6] = {0.25f, 0.0f, 0.75f, 1.0f, 0.5f, 0.125f};
    PR = f32(2, s23, pr);
}

static void inputs_free(void)
{
    tt_tensor **all[] = {&A, &B, &P, &C, &M, &A3, &B3, &P3, &M3, &AT, &U, &V2, &V3,
                         &LO, &HI, &TGT, &IDX, &STEP, &X4, &W4, &RM, &RV, &XP,
                         &GI, &I10, &OFFS, &PR};
    for (int i = 0; i < TT_TABLE_LEN(all); i++) {
        tt_release(*all[i]);
        *all[i] = NULL;
    }
    tt_test_teardown();
}

/* An in-place wrapper's row gives back what it wrote (a new reference, as
 * the other rows' results are); its status must be TT_OK. */
static tt_tensor *wrote(tt_status st, const char *what)
{
    ck_assert_msg(st == TT_OK, "%s: %s: %s", what, tt_status_name(st), tt_errmsg());
    return tt_retain(W);
}
#define INPLACE(call) wrote((call), #call)

static const int64_t dim1[1] = {1}, dims01[2] = {0, 1}, norm3[1] = {3};

/* {A, B}, for the wrappers taking a list. */
static tt_tensor *const *pair(void)
{
    static tt_tensor *ab[2];
    ab[0] = A, ab[1] = B;
    return ab;
}

static const tt_conv_opts conv_opts = {.stride = {2, 1}, .padding = {1, 0}};
static const int64_t k12[2] = {1, 2}, k22[2] = {2, 2}, one2[2] = {1, 1}, zero2[2] = {0, 0},
                     out14[2] = {1, 4};

/* Pooling: a 2x2 window, stride 1, padding 1 on H, dilation left 0 (1). */
static const tt_pool_opts pool_opts = {
    .kernel = {2, 2}, .stride = {1, 1}, .padding = {1, 0}};

/* tt_max_pool2d_with_indices's indices (its values are tt_max_pool2d's row). */
static tt_tensor *pool_indices(void)
{
    tt_tensor *ind = NULL, *y = tt_max_pool2d_with_indices(XP, &pool_opts, &ind);
    tt_release(y);
    return ind;
}

/* tt_max_pool3d_with_indices's indices, XP as a [C, D, H, W] volume. */
static tt_tensor *pool3d_indices(void)
{
    tt_tensor *ind = NULL;
    tt_tensor *y = tt_max_pool3d_with_indices(
        XP, &(tt_pool3d_opts){.kernel = {2, 2, 2}, .stride = {1, 1, 1}, .padding = {1, 0, 1}},
        &ind);
    tt_release(y);
    return ind;
}

/* [None, IDX], for the advanced-indexing wrappers (x[:, IDX]). */
static tt_tensor *const *none_idx(void)
{
    static tt_tensor *l[2];
    l[0] = NULL, l[1] = IDX;
    return l;
}

/* The splitting wrappers return their pieces through an array: the row
 * compares the last piece (a view at an offset into A) and releases the
 * others. */
static tt_tensor *last_piece(tt_status st, tt_tensor **p, int n, const char *what)
{
    ck_assert_msg(st == TT_OK, "%s: %s: %s", what, tt_status_name(st), tt_errmsg());
    for (int i = 0; i + 1 < n; i++)
        tt_release(p[i]);
    return p[n - 1];
}
static tt_tensor *split_sizes_last(void)
{
    tt_tensor *p[2];
    return last_piece(tt_split_with_sizes(A, 2, (const tt_size[]){1, 2}, -1, p), p, 2,
                      "tt_split_with_sizes");
}
static tt_tensor *split_last(void)
{
    tt_tensor *p[2];
    int n = 0;
    tt_status st = tt_split(AT, 2, 0, 2, p, &n);
    return last_piece(st, p, n, "tt_split");
}
static tt_tensor *chunk_last(void)
{
    tt_tensor *p[3];
    int n = 0;
    tt_status st = tt_chunk(A, 3, 1, p, &n);
    return last_piece(st, p, n, "tt_chunk");
}

static const tt_adamw_opts adamw_opts = {
    .lr = 0.01, .beta1 = 0.8, .beta2 = 0.9, .eps = 1e-6, .weight_decay = 0.1};
static const tt_sgd_opts sgd_opts = {
    .lr = 0.01, .momentum = 0.9, .dampening = 0.1, .weight_decay = 0.01};

/* ---------------------------------------------------------------- table */

/* One row per wrapper: its name (tests/check_wrappers.py reads it), the op
 * it must reach, the arguments that op must get, in its schema's order
 * (tensors by their names above, defaults filled in; see runtime/
 * builtin_ops.h for the schemas), and a call with the inputs above. */
#define WRAPPERS(X)                                                                             \
    X(tt_add, "tt::add.Tensor", "A, B, 1", tt_add(A, B))                                        \
    X(tt_sub, "tt::sub.Tensor", "A, B, 1", tt_sub(A, B))                                        \
    X(tt_mul, "tt::mul.Tensor", "A, B", tt_mul(A, B))                                           \
    X(tt_div, "tt::div.Tensor", "A, B", tt_div(A, B))                                           \
    X(tt_pow, "tt::pow.Tensor_Tensor", "P, B", tt_pow(P, B))                                    \
    X(tt_add_scaled, "tt::add.Tensor", "A, B, -2.5", tt_add_scaled(A, B, -2.5))                 \
    X(tt_add_scalar, "tt::add.Scalar", "A, 0.75, 1", tt_add_scalar(A, 0.75))                    \
    X(tt_sub_scalar, "tt::sub.Scalar", "A, 0.75, 1", tt_sub_scalar(A, 0.75))                    \
    X(tt_mul_scalar, "tt::mul.Scalar", "A, -3", tt_mul_scalar(A, -3))                           \
    X(tt_div_scalar, "tt::div.Scalar", "A, 0.3", tt_div_scalar(A, 0.3))                         \
    X(tt_fmod, "tt::fmod.Tensor", "A, B", tt_fmod(A, B))                                        \
    X(tt_fmod_scalar, "tt::fmod.Scalar", "A, 0.3", tt_fmod_scalar(A, 0.3))                      \
    X(tt_remainder, "tt::remainder.Tensor", "A, B", tt_remainder(A, B))                         \
    X(tt_remainder_scalar, "tt::remainder.Scalar", "A, -0.3", tt_remainder_scalar(A, -0.3))     \
    X(tt_atan2, "tt::atan2", "A, B", tt_atan2(A, B))                                            \
    X(tt_atan2_out, "tt::atan2.out", "A, B, W", INPLACE(tt_atan2_out(W, A, B)))               \
    X(tt_pow_scalar, "tt::pow.Tensor_Scalar", "P, 1.5", tt_pow_scalar(P, 1.5))                  \
    X(tt_add_, "tt::add_.Tensor", "W, B, 1", INPLACE(tt_add_(W, B)))                            \
    X(tt_sub_, "tt::sub_.Tensor", "W, B, 1", INPLACE(tt_sub_(W, B)))                            \
    X(tt_mul_, "tt::mul_.Tensor", "W, B", INPLACE(tt_mul_(W, B)))                               \
    X(tt_div_, "tt::div_.Tensor", "W, B", INPLACE(tt_div_(W, B)))                               \
    X(tt_add_scaled_, "tt::add_.Tensor", "W, B, 0.3", INPLACE(tt_add_scaled_(W, B, 0.3)))       \
    X(tt_mul_scalar_, "tt::mul_.Scalar", "W, -1.25", INPLACE(tt_mul_scalar_(W, -1.25)))         \
    X(tt_add_scalar_, "tt::add_.Scalar", "W, 0.1, 1", INPLACE(tt_add_scalar_(W, 0.1)))          \
    X(tt_sub_scalar_, "tt::sub_.Scalar", "W, 0.1, 1", INPLACE(tt_sub_scalar_(W, 0.1)))          \
    X(tt_div_scalar_, "tt::div_.Scalar", "W, 0.7", INPLACE(tt_div_scalar_(W, 0.7)))             \
    X(tt_div_mode, "tt::div.Tensor_mode", "A, B, 'floor'", tt_div_mode(A, B, "floor"))          \
    X(tt_div_scalar_mode, "tt::div.Scalar_mode", "A, 0.7, 'trunc'",                             \
      tt_div_scalar_mode(A, 0.7, "trunc"))                                                      \
    X(tt_scalar_pow, "tt::pow.Scalar", "2.5, A", tt_scalar_pow(2.5, A))                         \
    X(tt_eq, "tt::eq.Tensor", "A, U", tt_eq(A, U))                                              \
    X(tt_ne, "tt::ne.Tensor", "A, B", tt_ne(A, B))                                              \
    X(tt_lt, "tt::lt.Tensor", "A, B", tt_lt(A, B))                                              \
    X(tt_le, "tt::le.Tensor", "A, B", tt_le(A, B))                                              \
    X(tt_gt, "tt::gt.Tensor", "A, B", tt_gt(A, B))                                              \
    X(tt_ge, "tt::ge.Tensor", "A, B", tt_ge(A, B))                                              \
    X(tt_where, "tt::where.self", "C, A, B", tt_where(C, A, B))                                 \
    X(tt_where_scalar, "tt::where.ScalarSelf", "C, 2.5, B", tt_where_scalar(C, 2.5, B))         \
    X(tt_where_other_scalar, "tt::where.ScalarOther", "C, A, -4",                               \
      tt_where_other_scalar(C, A, -4))                                                          \
    X(tt_neg, "tt::neg", "A", tt_neg(A))                                                        \
    X(tt_exp, "tt::exp", "A", tt_exp(A))                                                        \
    X(tt_log, "tt::log", "P", tt_log(P))                                                        \
    X(tt_sqrt, "tt::sqrt", "P", tt_sqrt(P))                                                     \
    X(tt_rsqrt, "tt::rsqrt", "P", tt_rsqrt(P))                                                  \
    X(tt_sin, "tt::sin", "A", tt_sin(A))                                                        \
    X(tt_cos, "tt::cos", "A", tt_cos(A))                                                        \
    X(tt_tanh, "tt::tanh", "A", tt_tanh(A))                                                     \
    X(tt_sigmoid, "tt::sigmoid", "A", tt_sigmoid(A))                                            \
    X(tt_relu, "tt::relu", "A", tt_relu(A))                                                     \
    X(tt_gelu, "tt::gelu", "A, 'none'", tt_gelu(A))                                             \
    X(tt_gelu_tanh, "tt::gelu", "A, 'tanh'", tt_gelu_tanh(A))                                   \
    X(tt_abs, "tt::abs", "A", tt_abs(A))                                                        \
    X(tt_acos, "tt::acos", "A", tt_acos(A))                                                     \
    X(tt_asin, "tt::asin", "A", tt_asin(A))                                                     \
    X(tt_atan, "tt::atan", "A", tt_atan(A))                                                     \
    X(tt_acosh, "tt::acosh", "A", tt_acosh(A))                                                  \
    X(tt_asinh, "tt::asinh", "A", tt_asinh(A))                                                  \
    X(tt_atanh, "tt::atanh", "A", tt_atanh(A))                                                  \
    X(tt_sinh, "tt::sinh", "A", tt_sinh(A))                                                     \
    X(tt_cosh, "tt::cosh", "A", tt_cosh(A))                                                     \
    X(tt_tan, "tt::tan", "A", tt_tan(A))                                                        \
    X(tt_erf, "tt::erf", "A", tt_erf(A))                                                        \
    X(tt_expm1, "tt::expm1", "A", tt_expm1(A))                                                  \
    X(tt_log1p, "tt::log1p", "A", tt_log1p(A))                                                  \
    X(tt_log2, "tt::log2", "A", tt_log2(A))                                                     \
    X(tt_log10, "tt::log10", "A", tt_log10(A))                                                  \
    X(tt_reciprocal, "tt::reciprocal", "A", tt_reciprocal(A))                                   \
    X(tt_floor, "tt::floor", "A", tt_floor(A))                                                  \
    X(tt_ceil, "tt::ceil", "A", tt_ceil(A))                                                     \
    X(tt_trunc, "tt::trunc", "A", tt_trunc(A))                                                  \
    X(tt_round, "tt::round", "A", tt_round(A))                                                  \
    X(tt_clamp, "tt::clamp", "A, -1, 1.5", tt_clamp(A, -1, 1.5))                                \
    X(tt_clamp_tensor, "tt::clamp.Tensor", "A, LO, HI", tt_clamp_tensor(A, LO, HI))             \
    X(tt_relu_, "tt::relu_", "W", INPLACE(tt_relu_(W)))                                         \
    X(tt_zero_, "tt::zero_", "W", INPLACE(tt_zero_(W)))                                         \
    X(tt_sum, "tt::sum.dim_IntList", "A, [1], true, None", tt_sum(A, 1, dim1, true))            \
    X(tt_mean, "tt::mean.dim", "A, [1], false, None", tt_mean(A, 1, dim1, false))               \
    X(tt_amax, "tt::amax", "A, [1], true", tt_amax(A, 1, dim1, true))                           \
    X(tt_amin, "tt::amin", "A, [0, 1], false", tt_amin(A, 2, dims01, false))                    \
    X(tt_sum_all, "tt::sum", "A, None", tt_sum_all(A))                                          \
    X(tt_mean_all, "tt::mean", "A, None", tt_mean_all(A))                                       \
    X(tt_argmax, "tt::argmax", "A, 1, true", tt_argmax(A, 1, true))                             \
    X(tt_softmax, "tt::softmax.int", "A, 0, None", tt_softmax(A, 0))                            \
    X(tt_log_softmax, "tt::log_softmax.int", "A, -1, None", tt_log_softmax(A, -1))              \
    X(tt_mm, "tt::mm", "A, M", tt_mm(A, M))                                                     \
    X(tt_addmm, "tt::addmm", "V2, A, M, 0.5, 2", tt_addmm(V2, A, M, 0.5, 2))                    \
    X(tt_bmm, "tt::bmm", "A3, M3", tt_bmm(A3, M3))                                              \
    X(tt_matmul, "tt::matmul", "A3, M", tt_matmul(A3, M))                                       \
    X(tt_linear, "tt::linear", "A, B, V2", tt_linear(A, B, V2))                                 \
    X(tt_cross_entropy, "tt::cross_entropy", "A, TGT, 'mean', None, -100, 0",                   \
      tt_cross_entropy(A, TGT))                                                                 \
    X(tt_cross_entropy_ex, "tt::cross_entropy", "A, TGT, 'sum', V3, 0, 0.25",                   \
      tt_cross_entropy_ex(A, TGT, &(tt_cross_entropy_opts){                                     \
          .reduction = "sum", .weight = V3, .ignore = true, .ignore_index = 0,                  \
          .label_smoothing = 0.25}))                                                            \
    X(tt_clone_format, "tt::clone", "AT, 'contiguous_format'",                                  \
      tt_clone_format(AT, "contiguous_format"))                                                 \
    X(tt_contiguous_format, "tt::contiguous", "AT, 'contiguous_format'",                        \
      tt_contiguous_format(AT, "contiguous_format"))                                            \
    X(tt_squeeze_dims, "tt::squeeze.dims", "U, [1]", tt_squeeze_dims(U, 1, dim1))               \
    X(tt_cat, "tt::cat", "[A, B], 1", tt_cat(2, pair(), 1))                                     \
    X(tt_stack, "tt::stack", "[A, B], -1", tt_stack(2, pair(), -1))                             \
    X(tt_embedding, "tt::embedding", "A, IDX, -1, false, false", tt_embedding(A, IDX))          \
    X(tt_layer_norm, "tt::layer_norm", "A, [3], V3, LO, 0.001",                                 \
      tt_layer_norm(A, 1, norm3, V3, LO, 1e-3))                                                 \
    X(tt_scaled_dot_product_attention, "tt::scaled_dot_product_attention",                      \
      "A3, B3, P3, None, 0, true, 0.75, false, 0",                                                      \
      tt_scaled_dot_product_attention(A3, B3, P3, true, 0.75))                                  \
    X(tt_adamw_, "tt::adamw_step", "W, A, W2, W3, STEP, 0.01, 0.8, 0.9, 1e-06, 0.1",            \
      INPLACE(tt_adamw_(W, A, W2, W3, STEP, &adamw_opts)))                                      \
    X(tt_global_norm, "tt::global_norm", "[A, B]", tt_global_norm(2, pair()))                  \
    X(tt_rms_norm, "tt::rms_norm", "A, [3], V3, 0.001", tt_rms_norm(A, 1, norm3, V3, 1e-3))   \
    X(tt_silu, "tt::silu", "A", tt_silu(A))                                                     \
    X(tt_rotary_embedding, "tt::rotary_embedding", "AT, M, M, true",                          \
      tt_rotary_embedding(AT, M, M, true))                                                      \
    X(tt_scaled_dot_product_attention_gqa, "tt::scaled_dot_product_attention",                  \
      "A3, B3, P3, None, 0, false, None, true, 0",                                               \
      tt_scaled_dot_product_attention_gqa(A3, B3, P3, false, 0))                                \
    /* ---- ops/tt_nn.h: convolution */                                                        \
    X(tt_conv2d, "tt::convolution", "X4, W4, V2, [2, 1], [1, 0], [1, 1], false, [0, 0], 1",      \
      tt_conv2d(X4, W4, V2, &conv_opts))                                                        \
    X(tt_conv1d, "tt::convolution", "U, U, V2, [1], [0], [1], false, [0], 1",                   \
      tt_conv1d(U, U, V2, NULL))                                                                \
    X(tt_im2col, "tt::im2col", "X4, [2, 2], [1, 1], [0, 0], [1, 1]",                            \
      tt_im2col(X4, k22, one2, zero2, one2))                                                    \
    X(tt_col2im, "tt::col2im", "A3, [1, 4], [1, 2], [1, 1], [0, 0], [1, 1]",                    \
      tt_col2im(A3, out14, k12, one2, zero2, one2))                                             \
    /* ---- ops/tt_nn.h: pooling, padding, upsampling */                                       \
    X(tt_max_pool2d, "tt::max_pool2d_with_indices", "XP, [3, 2], [], [1, 1], [1, 1], false",    \
      tt_max_pool2d(XP, &(tt_pool_opts){.kernel = {3, 2}, .padding = {1, 1}}))                  \
    X(tt_max_pool2d_with_indices, "tt::max_pool2d_with_indices",                                \
      "XP, [2, 2], [1, 1], [1, 0], [1, 1], false", pool_indices())                             \
    X(tt_avg_pool2d, "tt::avg_pool2d", "XP, [2, 3], [1, 2], [1, 1], true, false, 5",           \
      tt_avg_pool2d(XP, &(tt_pool_opts){.kernel = {2, 3}, .stride = {1, 2}, .padding = {1, 1},  \
                                        .ceil_mode = true, .exclude_pad = true,                 \
                                        .divisor_override = 5}))                                \
    X(tt_adaptive_avg_pool2d, "tt::_adaptive_avg_pool2d", "XP, [2, 3]",                         \
      tt_adaptive_avg_pool2d(XP, 2, 3))                                                         \
    X(tt_max_pool1d, "tt::max_pool1d", "A3, [2], [], [1], [1], false",                          \
      tt_max_pool1d(A3, &(tt_pool_opts){.kernel = {2}, .padding = {1}}))                        \
    X(tt_avg_pool1d, "tt::avg_pool1d", "A3, [2], [1], [0], true, true",                         \
      tt_avg_pool1d(A3, &(tt_pool_opts){.kernel = {2}, .stride = {1}, .ceil_mode = true}))      \
    X(tt_adaptive_avg_pool1d, "tt::adaptive_avg_pool1d", "A3, [2]",                             \
      tt_adaptive_avg_pool1d(A3, 2))                                                            \
    X(tt_max_pool3d, "tt::max_pool3d_with_indices",                                             \
      "XP, [2, 2, 3], [], [1, 1, 1], [1, 1, 1], false",                                         \
      tt_max_pool3d(XP, &(tt_pool3d_opts){.kernel = {2, 2, 3}, .padding = {1, 1, 1}}))          \
    X(tt_max_pool3d_with_indices, "tt::max_pool3d_with_indices",                                \
      "XP, [2, 2, 2], [1, 1, 1], [1, 0, 1], [1, 1, 1], false", pool3d_indices())               \
    X(tt_avg_pool3d, "tt::avg_pool3d", "XP, [2, 2, 3], [1, 2, 1], [1, 1, 1], true, false, 5",  \
      tt_avg_pool3d(XP, &(tt_pool3d_opts){.kernel = {2, 2, 3}, .stride = {1, 2, 1},             \
                                          .padding = {1, 1, 1}, .ceil_mode = true,              \
                                          .exclude_pad = true, .divisor_override = 5}))         \
    X(tt_adaptive_avg_pool3d, "tt::_adaptive_avg_pool3d", "XP, [1, 2, 3]",                      \
      tt_adaptive_avg_pool3d(XP, 1, 2, 3))                                                      \
    X(tt_pad, "tt::reflection_pad2d", "XP, [1, 2, 0, 1]",                                      \
      tt_pad(XP, 4, (const int64_t[]){1, 2, 0, 1}, "reflect", 0))                               \
    X(tt_upsample_nearest2d, "tt::upsample_nearest2d.vec", "XP, [5, 6], None",                  \
      tt_upsample_nearest2d(XP, 5, 6))                                                          \
    X(tt_upsample_nearest2d_scale, "tt::upsample_nearest2d.vec", "XP, None, [1.5, 2]",          \
      tt_upsample_nearest2d_scale(XP, 1.5, 2))                                                  \
    X(tt_upsample_bilinear2d, "tt::upsample_bilinear2d.vec", "XP, [5, 7], true, None",          \
      tt_upsample_bilinear2d(XP, 5, 7, true))                                                   \
    X(tt_upsample_bilinear2d_scale, "tt::upsample_bilinear2d.vec", "XP, None, false, [2, 1.5]", \
      tt_upsample_bilinear2d_scale(XP, 2, 1.5, false))                                          \
    /* W4 [2, 2, 2, 2] is an input and a grid (points beyond [-1, 1]) */                       \
    X(tt_grid_sample, "tt::grid_sampler_2d", "W4, W4, 2, 1, true",                              \
      tt_grid_sample(W4, W4, "bicubic", "border", true))                                        \
    /* ---- ops/tt_nn.h: normalization, dropout */                                             \
    X(tt_batch_norm, "tt::_native_batch_norm_legit", "A, V3, LO, RM, RV, true, 0.1, 1e-05",     \
      tt_batch_norm(A, V3, LO, RM, RV, true, 0.1, 1e-5))                                        \
    /* Seeded in the call, so both paths draw the same mask. */                                 \
    X(tt_dropout, "tt::native_dropout", "A, 0.5, true",                                         \
      (tt_manual_seed(5), tt_dropout(A, 0.5, true)))                                            \
    X(tt_group_norm, "tt::native_group_norm", "A3, V2, None, 1, 2, 3, 2, 0.001",                \
      tt_group_norm(A3, 2, V2, NULL, 1e-3))                                                     \
    X(tt_native_layer_norm, "tt::native_layer_norm", "A, [3], V3, LO, 0.001",                  \
      tt_native_layer_norm(A, 1, norm3, V3, LO, 1e-3, NULL, NULL))                              \
    /* ---- ops/tt_nn.h: activations, losses, SGD */                                          \
    X(tt_leaky_relu, "tt::leaky_relu", "A, 0.2", tt_leaky_relu(A, 0.2))                        \
    X(tt_elu, "tt::elu", "A, 0.5, 1, 1", tt_elu(A, 0.5))                                        \
    X(tt_hardtanh, "tt::hardtanh", "A, -0.5, 2", tt_hardtanh(A, -0.5, 2))                       \
    X(tt_hardswish, "tt::hardswish", "A", tt_hardswish(A))                                      \
    X(tt_hardsigmoid, "tt::hardsigmoid", "A", tt_hardsigmoid(A))                                \
    X(tt_softplus, "tt::softplus", "A, 2, 3", tt_softplus(A, 2, 3))                             \
    X(tt_nll_loss, "tt::nll_loss_forward", "A, TGT, V3, 2, 0",                                  \
      tt_nll_loss(A, TGT, &(tt_nll_loss_opts){                                                  \
          .reduction = "sum", .weight = V3, .ignore = true, .ignore_index = 0}))                \
    X(tt_mse_loss, "tt::mse_loss", "A, B, 0", tt_mse_loss(A, B, "none"))                        \
    X(tt_binary_cross_entropy_with_logits, "tt::binary_cross_entropy_with_logits",              \
      "A, P, V3, LO, 2", tt_binary_cross_entropy_with_logits(A, P, V3, LO, "sum"))              \
    X(tt_smooth_l1_loss, "tt::smooth_l1_loss", "A, B, 1, 0.5",                                  \
      tt_smooth_l1_loss(A, B, "mean", 0.5))                                                     \
    X(tt_cdist, "tt::_cdist_forward", "A3, B3, 2, None", tt_cdist(A3, B3, 2))                   \
    X(tt_cdist_ex, "tt::_cdist_forward", "A, B, 1.5, 2", tt_cdist_ex(A, B, 1.5, 2))             \
    X(tt_pdist, "tt::_pdist_forward", "AT, 3", tt_pdist(AT, 3))                                 \
    X(tt_sgd_, "tt::sgd_step", "W, A, W2, STEP, 0.01, 0.9, 0.1, 0.01, false, false",            \
      INPLACE(tt_sgd_(W, A, W2, STEP, &sgd_opts)))                                       \
    /* ---- ops/tt_index.h: gather, scatter, index_select */                            \
    X(tt_gather, "tt::gather", "A, 0, GI, false", tt_gather(A, 0, GI))                          \
    X(tt_scatter, "tt::scatter.src", "A, 0, GI, B", tt_scatter(A, 0, GI, B))                     \
    X(tt_scatter_value, "tt::scatter.value", "A, 1, GI, -2.5", tt_scatter_value(A, 1, GI, -2.5)) \
    X(tt_scatter_add, "tt::scatter_add", "A, 0, GI, B", tt_scatter_add(A, 0, GI, B))             \
    X(tt_scatter_reduce, "tt::scatter_reduce.two", "A, 0, GI, B, 'amax', false",                 \
      tt_scatter_reduce(A, 0, GI, B, "amax", false))                                             \
    X(tt_index_select, "tt::index_select", "A, 1, TGT", tt_index_select(A, 1, TGT))              \
    X(tt_index_copy, "tt::index_copy", "A, 0, I10, B", tt_index_copy(A, 0, I10, B))              \
    X(tt_index_copy_, "tt::index_copy_", "W, 0, I10, B", INPLACE(tt_index_copy_(W, 0, I10, B)))  \
    X(tt_index_add, "tt::index_add", "A, 0, I10, B, 0.5", tt_index_add(A, 0, I10, B, 0.5))       \
    X(tt_slice_scatter, "tt::slice_scatter", "A, B, 0, 0, 2, 1",                                 \
      tt_slice_scatter(A, B, 0, 0, 2, 1))                                                        \
    X(tt_select_scatter, "tt::select_scatter", "A, V3, 0, 1", tt_select_scatter(A, V3, 0, 1))    \
    X(tt_diagonal, "tt::diagonal", "A, 1, 0, 1", tt_diagonal(A, 1, 0, 1))                        \
    /* ---- ops/tt_index.h: advanced indexing, masks */                                    \
    X(tt_masked_fill, "tt::masked_fill.Scalar", "A, C, -1.5", tt_masked_fill(A, C, -1.5))     \
    X(tt_masked_fill_tensor, "tt::masked_fill.Tensor", "A, C, STEP",                            \
      tt_masked_fill_tensor(A, C, STEP))                                                        \
    X(tt_index, "tt::index.Tensor", "A, [None, IDX]", tt_index(A, 2, none_idx()))              \
    X(tt_index_put, "tt::index_put", "A, [None, IDX], V3, true",                                \
      tt_index_put(A, 2, none_idx(), V3, true))                                                 \
    X(tt_index_put_, "tt::index_put_", "W, [None, IDX], V3, false",                             \
      INPLACE(tt_index_put_(W, 2, none_idx(), V3, false)))                                      \
    X(tt_nonzero, "tt::nonzero", "C", tt_nonzero(C))                                           \
    X(tt_masked_scatter, "tt::masked_scatter", "A, C, B", tt_masked_scatter(A, C, B))           \
    X(tt_masked_select, "tt::masked_select", "A, C", tt_masked_select(A, C))                    \
    X(tt_embedding_ex, "tt::embedding", "A, IDX, 1, true, false",                               \
      tt_embedding_ex(A, IDX, 1, true))                                                         \
    X(tt_embedding_bag, "tt::_embedding_bag", "A, IDX, OFFS, true, 2, false, None, false, 0",    \
      tt_embedding_bag(A, IDX, OFFS, &(tt_embedding_bag_opts){                                  \
          .mode = 2, .scale_grad_by_freq = true, .padding = true}))                             \
    /* ---- ops/tt_index.h: sorting, selection, scans */                                   \
    X(tt_sort, "tt::sort", "A, 1, true", tt_sort(A, 1, true, NULL))                             \
    X(tt_sort_stable, "tt::sort.stable", "A, true, 0, false",                                   \
      tt_sort_stable(A, true, 0, false, NULL))                                                  \
    X(tt_argsort, "tt::sort", "A, -1, false", tt_argsort(A, -1, false))                         \
    X(tt_topk, "tt::topk", "A, 2, 1, false, true", tt_topk(A, 2, 1, false, true, NULL))         \
    X(tt_max_dim, "tt::max.dim", "A, 0, true", tt_max_dim(A, 0, true, NULL))                    \
    X(tt_min_dim, "tt::min.dim", "A, 1, false", tt_min_dim(A, 1, false, NULL))                  \
    X(tt_argmin, "tt::argmin", "A, 1, true", tt_argmin(A, 1, true))                             \
    X(tt_kthvalue, "tt::kthvalue", "A, 2, 1, true", tt_kthvalue(A, 2, 1, true, NULL))           \
    X(tt_median_dim, "tt::median.dim", "A, 0, false", tt_median_dim(A, 0, false, NULL))         \
    X(tt_median, "tt::median", "A", tt_median(A))                                               \
    X(tt_cumsum, "tt::cumsum", "A, 1, None", tt_cumsum(A, 1))                                   \
    X(tt_cumsum_dtype, "tt::cumsum", "A, 0, f64", tt_cumsum_dtype(A, 0, TT_F64))                \
    X(tt_cumprod, "tt::cumprod", "A, -1, None", tt_cumprod(A, -1))                              \
    X(tt_logcumsumexp, "tt::logcumsumexp", "A, 0", tt_logcumsumexp(A, 0))                       \
    X(tt_logsumexp, "tt::logsumexp", "A, [0, 1], true", tt_logsumexp(A, 2, dims01, true))       \
    X(tt_prod, "tt::prod", "A, None", tt_prod(A))                                               \
    X(tt_prod_dim, "tt::prod.dim_int", "A, 1, false, None", tt_prod_dim(A, 1, false))           \
    /* ---- ops/tt_ops.h: logical, bitwise, maximum, minimum, statistics, shapes */         \
    X(tt_maximum, "tt::maximum", "A, B", tt_maximum(A, B))                                      \
    X(tt_minimum, "tt::minimum", "A, U", tt_minimum(A, U))                                      \
    X(tt_isnan, "tt::isnan", "A", tt_isnan(A))                                                  \
    X(tt_isinf, "tt::isinf", "IDX", tt_isinf(IDX))                                              \
    X(tt_logical_and, "tt::logical_and", "A, C", tt_logical_and(A, C))                          \
    X(tt_logical_or, "tt::logical_or", "C, IDX", tt_logical_or(C, IDX))                         \
    X(tt_logical_xor, "tt::logical_xor", "A, B", tt_logical_xor(A, B))                          \
    X(tt_logical_not, "tt::logical_not", "C", tt_logical_not(C))                                \
    X(tt_bitwise_and, "tt::bitwise_and.Tensor", "C, IDX", tt_bitwise_and(C, IDX))               \
    X(tt_bitwise_or, "tt::bitwise_or.Tensor", "IDX, C", tt_bitwise_or(IDX, C))                  \
    X(tt_bitwise_xor, "tt::bitwise_xor.Tensor", "C, C", tt_bitwise_xor(C, C))                   \
    X(tt_bitwise_and_scalar, "tt::bitwise_and.Scalar", "IDX, 6", tt_bitwise_and_scalar(IDX, 6)) \
    X(tt_bitwise_or_scalar, "tt::bitwise_or.Scalar", "C, 2", tt_bitwise_or_scalar(C, 2))        \
    X(tt_bitwise_xor_scalar, "tt::bitwise_xor.Scalar", "IDX, -3",                               \
      tt_bitwise_xor_scalar(IDX, -3))                                                           \
    X(tt_bitwise_not, "tt::bitwise_not", "IDX", tt_bitwise_not(IDX))                            \
    X(tt_var, "tt::var.correction", "A, [1], 0, true", tt_var(A, 1, dim1, 0, true))             \
    X(tt_std, "tt::std.correction", "A, None, 2, false", tt_std(A, 0, NULL, 2, false))          \
    X(tt_any, "tt::any", "C", tt_any(C))                                                        \
    X(tt_all, "tt::all", "IDX", tt_all(IDX))                                                    \
    X(tt_any_dim, "tt::any.dim", "A, 0, false", tt_any_dim(A, 0, false))                        \
    X(tt_any_dims, "tt::any.dims", "A, [0, 1], true",                                           \
      tt_any_dims(A, 2, (int64_t[]){0, 1}, true))                                               \
    X(tt_all_dims, "tt::all.dims", "A, None, false", tt_all_dims(A, 0, NULL, false))            \
    X(tt_all_dim, "tt::all.dim", "C, -1, true", tt_all_dim(C, -1, true))                        \
    X(tt_repeat, "tt::repeat", "A, [2, 1, 3]", tt_repeat(A, 3, (const int64_t[]){2, 1, 3}))    \
    X(tt_flip, "tt::flip", "A, [0, 1]", tt_flip(A, 2, dims01))                                  \
    X(tt_roll, "tt::roll", "A, [-2, 1], [1, 0]",                                                \
      tt_roll(A, 2, (const int64_t[]){-2, 1}, 2, (const int64_t[]){1, 0}))                      \
    X(tt_tril, "tt::tril", "A, 1", tt_tril(A, 1))                                               \
    X(tt_triu, "tt::triu", "AT, -1", tt_triu(AT, -1))                                           \
    X(tt_full_like, "tt::full_like", "AT, 2.5, None", tt_full_like(AT, 2.5))                    \
    X(tt_scalar_tensor, "tt::scalar_tensor", "-1.5, f64", tt_scalar_tensor(-1.5, TT_F64))       \
    X(tt_split_with_sizes, "tt::split_with_sizes", "A, [1, 2], -1", split_sizes_last())        \
    X(tt_split, "tt::split.Tensor", "AT, 2, 0", split_last())                                   \
    X(tt_chunk, "tt::chunk", "A, 3, 1", chunk_last())                                           \
    /* ---- ops/tt_ops.h: random */                                                            \
    X(tt_bernoulli, "tt::bernoulli", "PR", (tt_manual_seed(3), tt_bernoulli(PR)))               \
    X(tt_bernoulli_p, "tt::bernoulli.p", "AT, 0.25",                                            \
      (tt_manual_seed(3), tt_bernoulli_p(AT, 0.25)))                                            \
    X(tt_uniform_, "tt::uniform_", "W, -2, 3.5",                                                \
      (tt_manual_seed(4), INPLACE(tt_uniform_(W, -2, 3.5))))                                    \
    X(tt_normal_, "tt::normal_", "W, 1.5, 0.25",                                                \
      (tt_manual_seed(4), INPLACE(tt_normal_(W, 1.5, 0.25))))                                   \
    X(tt_randint, "tt::randint.low", "-3, 7, [2, 3], i32",                                      \
      (tt_manual_seed(5), tt_randint(-3, 7, 2, (const int64_t[]){2, 3}, TT_I32)))               \
    X(tt_randperm, "tt::randperm", "9, i64", (tt_manual_seed(6), tt_randperm(9, TT_I64)))       \
    X(tt_multinomial, "tt::multinomial", "PR, 2, false",                                        \
      (tt_manual_seed(7), tt_multinomial(PR, 2, false)))                                        \

typedef struct {
    const char *name; /* the wrapper */
    const char *op;   /* the op it reaches */
    const char *args; /* the arguments the op gets, in its order (args_mode) */
    tt_tensor *(*call)(void);
} wrapper_case;

#define WRAPPER_FN_(name, op, args, call)                                      \
    static tt_tensor *wrapper_##name(void) { return (call); }
#define WRAPPER_ROW_(name, op, args, call) {#name, op, args, wrapper_##name},
WRAPPERS(WRAPPER_FN_)
static const wrapper_case wrappers[] = {WRAPPERS(WRAPPER_ROW_)};

/* ------------------------------------------------------ the op's args */

/* Comparing the two paths catches a wrapper whose boxed call disagrees
 * with its fast path; a wrapper with no fast path of its own (it always
 * boxes) or one wrong in both the same way would pass. So the mode also
 * writes down the arguments its op got, in the op's order, tensors by
 * their name above, and each row says what the op's schema wants. */
typedef struct {
    rec_mode rec; /* first: its handler finds the rest from m->ud */
    char args[512];
} args_mode;

static const char *tensor_name(const tt_tensor *t)
{
    if (!t)
        return "None";
    const struct {
        const char *name;
        const tt_tensor *t;
    } named[] = {{"A", A},   {"B", B},   {"P", P},     {"C", C},     {"M", M},   {"A3", A3},
                 {"B3", B3}, {"P3", P3}, {"M3", M3},   {"AT", AT},   {"U", U},   {"V2", V2},
                 {"V3", V3}, {"LO", LO}, {"HI", HI},   {"TGT", TGT}, {"IDX", IDX},
                 {"STEP", STEP}, {"W", W}, {"W2", W2}, {"W3", W3},
                 {"X4", X4}, {"W4", W4}, {"RM", RM}, {"RV", RV}, {"XP", XP},
                 {"GI", GI}, {"I10", I10}, {"OFFS", OFFS}, {"PR", PR}};
    for (int i = 0; i < TT_TABLE_LEN(named); i++)
        if (named[i].t == t)
            return named[i].name;
    return "?";
}

/* Appends printf-style text to buf (of size n), truncating. */
static void append(char *buf, size_t n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void append(char *buf, size_t n, const char *fmt, ...)
{
    size_t len = strlen(buf);
    va_list ap;
    va_start(ap, fmt);
    if (len < n)
        vsnprintf(buf + len, n - len, fmt, ap);
    va_end(ap);
}

static void describe_arg(char *buf, size_t n, const tt_value *v)
{
    switch (v->kind) {
    case TT_V_NONE: append(buf, n, "None"); break;
    case TT_V_TENSOR: append(buf, n, "%s", tensor_name(v->u.t)); break;
    case TT_V_INT: append(buf, n, "%lld", (long long)v->u.i); break;
    case TT_V_FLOAT: append(buf, n, "%g", v->u.f); break;
    case TT_V_BOOL: append(buf, n, "%s", v->u.b ? "true" : "false"); break;
    case TT_V_STR: append(buf, n, "'%s'", v->u.s); break;
    case TT_V_DTYPE: append(buf, n, "%s", tt_dtype_name(v->u.dtype)); break;
    case TT_V_FLOATS:
        append(buf, n, "[");
        for (int k = 0; k < v->n; k++)
            append(buf, n, "%s%g", k ? ", " : "", v->u.floats[k]);
        append(buf, n, "]");
        break;
    case TT_V_INTS:
    case TT_V_TENSORS:
        append(buf, n, "[");
        for (int k = 0; k < v->n; k++) {
            if (v->kind == TT_V_INTS)
                append(buf, n, "%s%lld", k ? ", " : "", (long long)v->u.ints[k]);
            else
                append(buf, n, "%s%s", k ? ", " : "", tensor_name(v->u.tensors[k]));
        }
        append(buf, n, "]");
        break;
    default: append(buf, n, "<kind %d>", (int)v->kind); break;
    }
}

static tt_status args_call(tt_mode *m, const tt_op *op, const tt_value *args, int nargs,
                           tt_value *outs, int nouts)
{
    args_mode *am = m->ud;
    if (am->rec.ncalls == 0)
        for (int i = 0; i < nargs; i++) {
            if (i)
                append(am->args, sizeof am->args, ", ");
            describe_arg(am->args, sizeof am->args, &args[i]);
        }
    return rec_call(m, op, args, nargs, outs, nouts);
}

/* ---------------------------------------------------------------- runner */

/* What one call gave: its result and the three tensors it may write. */
typedef struct {
    tt_tensor *out, *w[3];
} wrapper_run;

/* Calls row c's wrapper on fresh workspaces, under `rm` when it is not
 * NULL (pushed only around the call itself). */
static wrapper_run run_row(const wrapper_case *c, rec_mode *rm)
{
    W = NN(tt_clone(A)), W2 = NN(tt_clone(B)), W3 = NN(tt_clone(P));
    if (rm)
        ck_assert_int_eq(tt_mode_push(&rm->mode), TT_OK);
    tt_clear_error();
    wrapper_run r = {c->call(), {W, W2, W3}};
    if (rm)
        ck_assert_msg(tt_mode_pop() == &rm->mode, "%s: the mode was not on top after the call",
                      c->name);
    ck_assert_msg(r.out != NULL, "%s%s failed: %s", c->name, rm ? " (under a mode)" : "",
                  tt_errmsg());
    W = W2 = W3 = NULL;
    return r;
}

static void wrapper_run_free(wrapper_run *r)
{
    tt_release(r->out);
    for (int k = 0; k < 3; k++)
        tt_release(r->w[k]);
}

/* Same dtype, sizes, strides, storage offset and elements bit for bit. */
static void assert_same_result(const tt_tensor *direct, const tt_tensor *moded,
                               const char *what)
{
    ck_assert_msg(tt_dtype_of(direct) == tt_dtype_of(moded), "%s: dtype %s vs %s under the mode",
                  what, tt_dtype_name(tt_dtype_of(direct)), tt_dtype_name(tt_dtype_of(moded)));
    ck_assert_msg(tt_ndim(direct) == tt_ndim(moded), "%s: %d dims vs %d under the mode", what,
                  tt_ndim(direct), tt_ndim(moded));
    for (int d = 0; d < tt_ndim(direct); d++) {
        ck_assert_msg(tt_dim_size(direct, d) == tt_dim_size(moded, d),
                      "%s: size %d is %lld vs %lld under the mode", what, d,
                      (long long)tt_dim_size(direct, d), (long long)tt_dim_size(moded, d));
        ck_assert_msg(tt_dim_stride(direct, d) == tt_dim_stride(moded, d),
                      "%s: stride %d is %lld vs %lld under the mode", what, d,
                      (long long)tt_dim_stride(direct, d), (long long)tt_dim_stride(moded, d));
    }
    ck_assert_msg(tt_storage_offset(direct) == tt_storage_offset(moded),
                  "%s: storage offset %lld vs %lld under the mode", what,
                  (long long)tt_storage_offset(direct), (long long)tt_storage_offset(moded));
    tt_test_assert_same_bits(direct, moded, what);
}

/* Row i: the fast path, then the same call under a recording mode, which
 * must see exactly one call, of the row's op, and give the same result
 * and the same writes. */
START_TEST(test_wrapper_calls_its_op)
{
    const wrapper_case *c = &wrappers[_i];
    wrapper_run direct = run_row(c, NULL);
    args_mode am;
    memset(&am, 0, sizeof am);
    rec_init(&am.rec, NULL);
    am.rec.mode.call = args_call;
    rec_mode *rm = &am.rec;
    wrapper_run moded = run_row(c, rm);
    ck_assert_msg(rm->ncalls == 1 && strcmp(rm->log, c->op) == 0,
                  "row %d (%s): expected one call of %s, the mode saw %d: \"%s\"", _i, c->name,
                  c->op, rm->ncalls, rm->log);
    ck_assert_msg(strcmp(am.args, c->args) == 0,
                  "row %d (%s): %s got (%s), expected (%s)", _i, c->name, c->op, am.args,
                  c->args);
    char what[160];
    snprintf(what, sizeof what, "row %d (%s): the result", _i, c->name);
    assert_same_result(direct.out, moded.out, what);
    for (int k = 0; k < 3; k++) {
        snprintf(what, sizeof what, "row %d (%s): written tensor %d", _i, c->name, k);
        assert_same_result(direct.w[k], moded.w[k], what);
    }
    wrapper_run_free(&direct);
    wrapper_run_free(&moded);
}
END_TEST

static Suite *wrappers_suite(void)
{
    Suite *s = suite_create("wrappers");
    TCase *tc = tt_tcase_with("wrappers", inputs_make, inputs_free);
    tcase_add_loop_test(tc, test_wrapper_calls_its_op, 0, TT_TABLE_LEN(wrappers));
    suite_add_tcase(s, tc);
    return s;
}

TT_TEST_MAIN(wrappers_suite)
