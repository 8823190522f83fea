/* tt-difftest's op table, shared by the generator (gen.c) and the
 * reproducer printer (print.c). Internal to tests/difftest. */
#ifndef DT_OPS_H
#define DT_OPS_H

#include "difftest.h"

/* X(ID, short name, built-in ops it exercises) */
#define DT_OPS(X)                                                                           \
    X(ADD, "add", "tt::add.Tensor")                                                         \
    X(SUB, "sub", "tt::sub.Tensor")                                                         \
    X(MUL, "mul", "tt::mul.Tensor")                                                         \
    X(DIV, "div", "tt::div.Tensor")                                                         \
    X(POW, "pow", "tt::pow.Tensor_Tensor")                                                  \
    X(ADDS, "add_scaled", "tt::add.Tensor")                                                 \
    X(ADD_SC, "add_scalar", "tt::add.Scalar")                                               \
    X(SUB_SC, "sub_scalar", "tt::sub.Scalar")                                               \
    X(MUL_SC, "mul_scalar", "tt::mul.Scalar")                                               \
    X(DIV_SC, "div_scalar", "tt::div.Scalar")                                               \
    X(POW_SC, "pow_scalar", "tt::pow.Tensor_Scalar")                                        \
    X(SC_POW, "scalar_pow", "tt::pow.Scalar")                                               \
    X(DIV_MODE, "div_mode", "tt::div.Tensor_mode")                                          \
    X(DIV_SC_MODE, "div_scalar_mode", "tt::div.Scalar_mode")                                \
    X(CMP, "cmp", "tt::eq.Tensor tt::ne.Tensor tt::lt.Tensor tt::le.Tensor tt::gt.Tensor "  \
                  "tt::ge.Tensor")                                                          \
    X(CMP_SC, "cmp_scalar", "tt::eq.Scalar tt::ne.Scalar tt::lt.Scalar tt::le.Scalar "      \
                            "tt::gt.Scalar tt::ge.Scalar")                                  \
    X(WHERE, "where", "tt::where.self")                                                     \
    X(WHERE_SC, "where_scalar", "tt::where.ScalarSelf")                                     \
    X(WHERE_OSC, "where_other_scalar", "tt::where.ScalarOther")                             \
    X(WHERE_SS, "where_scalars", "tt::where.Scalar")                                        \
    X(AS_STRIDED, "as_strided", "tt::as_strided")                                           \
    X(CLAMP, "clamp", "tt::clamp")                                                          \
    X(CLAMP_T, "clamp_tensor", "tt::clamp.Tensor")                                          \
    X(UNARY, "unary", "tt::neg tt::exp tt::log tt::sqrt tt::rsqrt tt::sin tt::cos tt::tanh " \
                      "tt::sigmoid tt::relu tt::gelu tt::abs tt::sign "                      \
                      "tt::acos tt::asin tt::atan tt::acosh tt::asinh tt::atanh "            \
                      "tt::sinh tt::cosh tt::tan tt::erf tt::expm1 tt::log1p "               \
                      "tt::log2 tt::log10 tt::reciprocal tt::floor tt::ceil "                \
                      "tt::trunc tt::round")                                                 \
    X(IADD, "add_", "tt::add_.Tensor")                                                      \
    X(ISUB, "sub_", "tt::sub_.Tensor")                                                      \
    X(IMUL, "mul_", "tt::mul_.Tensor")                                                      \
    X(IDIV, "div_", "tt::div_.Tensor")                                                      \
    X(IADDS, "add_scaled_", "tt::add_.Tensor")                                              \
    X(IMUL_SC, "mul_scalar_", "tt::mul_.Scalar")                                            \
    X(IADD_SC, "add_scalar_", "tt::add_.Scalar")                                            \
    X(ISUB_SC, "sub_scalar_", "tt::sub_.Scalar")                                            \
    X(IDIV_SC, "div_scalar_", "tt::div_.Scalar")                                            \
    X(IDIV_MODE, "div_mode_", "tt::div_.Tensor_mode tt::div_.Scalar_mode")                  \
    X(IRELU, "relu_", "tt::relu_")                                                          \
    X(IZERO, "zero_", "tt::zero_")                                                          \
    X(ICOPY, "copy_", "tt::copy_")                                                          \
    X(IFILL, "fill_", "tt::fill_.Scalar")                                                   \
    X(SUM, "sum", "tt::sum.dim_IntList")                                                    \
    X(MEAN, "mean", "tt::mean.dim")                                                         \
    X(AMAX, "amax", "tt::amax")                                                             \
    X(AMIN, "amin", "tt::amin")                                                             \
    X(SUM_ALL, "sum_all", "tt::sum")                                                        \
    X(MEAN_ALL, "mean_all", "tt::mean")                                                     \
    X(ARGMAX, "argmax", "tt::argmax")                                                       \
    X(SOFTMAX, "softmax", "tt::softmax.int")                                                \
    X(LOG_SOFTMAX, "log_softmax", "tt::log_softmax.int")                                    \
    X(MM, "mm", "tt::mm")                                                                   \
    X(BMM, "bmm", "tt::bmm")                                                                \
    X(MATMUL, "matmul", "tt::matmul")                                                       \
    X(LINEAR, "linear", "tt::linear")                                                       \
    X(VIEW, "view", "tt::view")                                                             \
    X(RESHAPE, "reshape", "tt::reshape")                                                    \
    X(PERMUTE, "permute", "tt::permute")                                                    \
    X(TRANSPOSE, "transpose", "tt::transpose.int")                                          \
    X(T, "t", "tt::t")                                                                      \
    X(NARROW, "narrow", "tt::narrow")                                                       \
    X(SLICE, "slice", "tt::slice.Tensor")                                                   \
    X(SELECT, "select", "tt::select.int")                                                   \
    X(EXPAND, "expand", "tt::expand")                                                       \
    X(SQUEEZE, "squeeze", "tt::squeeze.dim")                                                \
    X(SQUEEZE_ALL, "squeeze_all", "tt::squeeze")                                            \
    X(SQUEEZE_DIMS, "squeeze_dims", "tt::squeeze.dims")                                     \
    X(UNSQUEEZE, "unsqueeze", "tt::unsqueeze")                                              \
    X(FLATTEN, "flatten", "tt::flatten.using_ints")                                         \
    X(CONTIGUOUS, "contiguous", "tt::contiguous")                                           \
    X(CLONE, "clone", "tt::clone")                                                          \
    X(TO_DTYPE, "to_dtype", "tt::_to_copy")                                                 \
    X(DETACH, "detach", "tt::detach")                                                       \
    X(CAT, "cat", "tt::cat")                                                                \
    X(STACK, "stack", "tt::stack")                                                          \
    X(CE, "cross_entropy", "tt::cross_entropy")                                             \
    X(EMBEDDING, "embedding", "tt::embedding")                                              \
    X(LAYER_NORM, "layer_norm", "tt::layer_norm")                                           \
    X(SDPA, "sdpa", "tt::scaled_dot_product_attention")                                     \
    X(GLOBAL_NORM, "global_norm", "tt::global_norm")                                        \
    X(FULL, "full", "tt::full")                                                             \
    X(ARANGE, "arange", "tt::arange.start_step")                                            \
    X(LINSPACE, "linspace", "tt::linspace")                                                 \
    X(BREAK, "graph_break", "")                                                             \
    X(ITEM, "item", "tt::_local_scalar_dense")                                              \
    X(CONV2D, "conv2d", "tt::convolution")                                                  \
    X(CONV1D, "conv1d", "tt::convolution")                                                  \
    X(MAXPOOL2D, "max_pool2d", "tt::max_pool2d_with_indices")                               \
    X(AVGPOOL2D, "avg_pool2d", "tt::avg_pool2d")                                            \
    X(MAXPOOL1D, "max_pool1d", "tt::max_pool1d")                                            \
    X(AVGPOOL1D, "avg_pool1d", "tt::avg_pool1d")                                            \
    X(MAXPOOL3D, "max_pool3d", "tt::max_pool3d_with_indices")                               \
    X(AVGPOOL3D, "avg_pool3d", "tt::avg_pool3d")                                            \
    X(ADAPTIVE, "adaptive_avg_pool2d", "tt::_adaptive_avg_pool2d tt::adaptive_avg_pool1d "  \
                                       "tt::_adaptive_avg_pool3d")                          \
    X(PAD, "pad", "tt::constant_pad_nd tt::reflection_pad1d tt::reflection_pad2d "          \
                  "tt::reflection_pad3d tt::replication_pad1d tt::replication_pad2d "       \
                  "tt::replication_pad3d")                                                  \
    X(UPSAMPLE, "upsample", "tt::upsample_nearest2d.vec tt::upsample_bilinear2d.vec")       \
    X(GRID_SAMPLE, "grid_sample", "tt::grid_sampler_2d")                                    \
    X(BATCH_NORM, "batch_norm", "tt::_native_batch_norm_legit "                             \
                                "tt::_native_batch_norm_legit.no_stats "                    \
                                "tt::_native_batch_norm_legit_no_training")                 \
    X(GROUP_NORM, "group_norm", "tt::native_group_norm")                                    \
    X(NATIVE_LN, "native_layer_norm", "tt::native_layer_norm")                              \
    X(DROPOUT, "dropout", "tt::native_dropout")                                             \
    X(ACT, "activation", "tt::leaky_relu tt::elu tt::hardtanh tt::hardswish "               \
                         "tt::hardsigmoid tt::softplus")                                    \
    X(MSE, "mse_loss", "tt::mse_loss")                                                      \
    X(SMOOTH_L1, "smooth_l1_loss", "tt::smooth_l1_loss")                                    \
    X(BCE_LOGITS, "bce_with_logits", "tt::binary_cross_entropy_with_logits")                \
    X(NLL, "nll_loss", "tt::nll_loss_forward tt::nll_loss2d_forward")                       \
    X(SGD, "sgd_", "tt::sgd_step")                                                          \
    X(SORT, "sort", "tt::sort tt::sort.stable")                                             \
    X(TOPK, "topk", "tt::topk")                                                             \
    X(MAX_DIM, "max_dim", "tt::max.dim tt::min.dim tt::argmin")                             \
    X(KTH, "kthvalue", "tt::kthvalue tt::median.dim tt::median")                            \
    X(CUM, "cumsum", "tt::cumsum tt::cumprod tt::logcumsumexp")                             \
    X(LSE, "logsumexp", "tt::logsumexp tt::prod tt::prod.dim_int")                          \
    X(VAR, "var", "tt::var.correction tt::std.correction")                                  \
    X(MAXIMUM, "maximum", "tt::maximum tt::minimum")                                        \
    X(MODULO, "modulo", "tt::fmod.Tensor tt::remainder.Tensor tt::atan2 tt::fmod.Scalar "  \
                        "tt::remainder.Scalar tt::atan2.out")                               \
    X(CORE_FORMS, "core_forms", "tt::_softmax tt::_log_softmax tt::var.dim tt::addmm "      \
                                "tt::copy tt::fill.Scalar tt::alias")                       \
    X(FLIP, "flip", "tt::flip")                                                             \
    X(ROLL, "roll", "tt::roll")                                                             \
    X(TRIL, "tril", "tt::tril tt::triu")                                                    \
    X(DIAGONAL, "diagonal", "tt::diagonal")                                                 \
    X(GATHER, "gather", "tt::gather")                                                       \
    X(SCATTER, "scatter", "tt::scatter.src tt::scatter.value tt::scatter_add "              \
                          "tt::scatter_reduce.two")                                         \
    X(INDEX_SELECT, "index_select", "tt::index_select")                                     \
    X(INDEX_ADD, "index_add", "tt::index_add")                                              \
    X(INDEX_COPY, "index_copy", "tt::index_copy tt::index_copy_")                           \
    X(SLICE_SCATTER, "slice_scatter", "tt::slice_scatter")                                  \
    X(SELECT_SCATTER, "select_scatter", "tt::select_scatter")                               \
    X(LOGICAL, "logical", "tt::logical_and tt::logical_or tt::logical_xor tt::logical_not") \
    X(BITWISE, "bitwise", "tt::bitwise_and.Tensor tt::bitwise_or.Tensor "                   \
                          "tt::bitwise_xor.Tensor tt::bitwise_and.Scalar "                  \
                          "tt::bitwise_or.Scalar tt::bitwise_xor.Scalar tt::bitwise_not")   \
    X(ISNAN, "isnan", "tt::isnan tt::isinf")                                                \
    X(ANY, "any", "tt::any tt::all tt::any.dim tt::all.dim tt::any.dims tt::all.dims")      \
    X(REPEAT, "repeat", "tt::repeat")                                                       \
    X(FULL_LIKE, "full_like", "tt::full_like tt::scalar_tensor")                             \
    X(SPLIT, "split", "tt::split.Tensor tt::split_with_sizes tt::chunk")                    \
    X(META, "meta_query", "tt::sym_size.int tt::sym_stride.int tt::sym_numel "              \
                          "tt::sym_storage_offset")                                         \
    X(MASKED_FILL, "masked_fill", "tt::masked_fill.Scalar tt::masked_fill.Tensor")          \
    X(MASKED_SCATTER, "masked_scatter", "tt::masked_scatter")                               \
    X(MASKED_SELECT, "masked_select", "tt::masked_select")                                  \
    X(NONZERO, "nonzero", "tt::nonzero")                                                    \
    X(INDEX, "index", "tt::index.Tensor")                                                   \
    X(INDEX_PUT, "index_put", "tt::index_put tt::index_put_")                               \
    X(EMBEDDING_BAG, "embedding_bag", "tt::_embedding_bag")                                 \
    X(RMS_NORM, "rms_norm", "tt::rms_norm")                                                 \
    X(SILU, "silu", "tt::silu")                                                             \
    X(ROTARY, "rotary_embedding", "tt::rotary_embedding")                                   \
    X(BERNOULLI, "bernoulli", "tt::bernoulli tt::bernoulli.p")                              \
    X(RAND_FILL, "uniform_", "tt::uniform_ tt::normal_")                                    \
    X(RAND, "rand", "tt::rand tt::randn")                                                   \
    X(RANDINT, "randint", "tt::randint tt::randint.low")                                    \
    X(RANDPERM, "randperm", "tt::randperm")                                                 \
    X(MULTINOMIAL, "multinomial", "tt::multinomial")                                        \
    X(SDPA_EXT, "sdpa_ext", "tt::scaled_dot_product_attention")                             \
    X(EMPTY, "empty", "tt::empty tt::empty_like tt::empty_strided tt::new_empty "           \
                      "tt::empty.memory_format")                                            \
    X(IM2COL, "im2col", "tt::im2col tt::col2im")                                            \
    X(ADAMW, "adamw_", "tt::adamw_step")                                                    \
    X(INDEX_MASK, "index_mask", "tt::index.Tensor")                                         \
    X(CDIST, "cdist", "tt::_cdist_forward tt::_pdist_forward")

enum {
#define X_ENUM(id, name, covers) OP_##id,
    DT_OPS(X_ENUM)
#undef X_ENUM
    OP_COUNT
};

/* OP_ACT's kinds (mode), and the first of the CNN ops (conv2d ... sgd_),
 * which the generator favours when the inputs are images. */
enum { ACT_LEAKY, ACT_ELU, ACT_HARDTANH, ACT_HARDSWISH, ACT_HARDSIGMOID, ACT_SOFTPLUS, ACT_COUNT };
#define DT_FIRST_CNN OP_CONV2D
/* The first of issue 27's ops (gen_index.c), after the CNN ones. */
#define DT_FIRST_INDEX OP_SORT
/* The first of the advanced indexing, transformer and random ops (gen_adv.c). */
#define DT_FIRST_ADV OP_MASKED_FILL
/* gen_index.c, gen_adv.c: the C call of one of their ops (false: not one). */
bool dt_print_index(FILE *f, const dt_instr *in);
bool dt_print_adv(FILE *f, const dt_instr *in);
extern const char *const dt_act_fn[ACT_COUNT];
extern const char *const dt_pad_modes[3];   /* tt_pad's modes by OP_PAD's mode */
extern const char *const dt_reductions[3];  /* the losses' reductions by mode & 3 */
extern const char *const dt_grid_modes[3];  /* OP_GRID_SAMPLE's by mode & 3 */
extern const char *const dt_grid_pads[3];   /* and by (mode >> 2) & 3 */
/* OP_*POOL*'s and OP_SGD's option structs from the instruction. */
void dt_pool_opts(const dt_instr *in, tt_pool_opts *o);
void dt_pool3d_opts(const dt_instr *in, tt_pool3d_opts *o);
void dt_sgd_opts(const dt_instr *in, tt_sgd_opts *o);

enum { U_NEG, U_EXP, U_LOG, U_SQRT, U_RSQRT, U_SIN, U_COS, U_TANH, U_SIGMOID, U_RELU,
       U_GELU, U_GELU_TANH, U_ABS, U_SIGN,
       /* Core ATen's other math functions; U_FLOOR.. round (piecewise
        * constant, an integer kept as it is) */
       U_ACOS, U_ASIN, U_ATAN, U_ACOSH, U_ASINH, U_ATANH, U_SINH, U_COSH, U_TAN, U_ERF,
       U_EXPM1, U_LOG1P, U_LOG2, U_LOG10, U_RECIPROCAL, U_FLOOR, U_CEIL, U_TRUNC, U_ROUND,
       U_COUNT };

extern const char *const dt_op_names[OP_COUNT];
extern const char *const dt_unary_fn[U_COUNT];    /* the C call of each unary kind */
extern const char *const dt_cmp_fn[6];            /* tt_eq ... tt_ge */
extern const char *const dt_cmp_sc_op[6];         /* tt::eq.Scalar ... */
extern const char *const dt_modes[2];             /* rounding modes */

/* A whole number (passed as an int Scalar, as the library's wrappers do). */
bool dt_integral(double x);
/* Input i's values for value set vs, in its base (stored) layout. */
void dt_input_values(const dt_program *p, int i, uint64_t vs, int64_t n, double *v);
/* Input x's stored sizes bs and viewed sizes vs for batch b; its rank. */
int dt_base_sizes_of(const dt_input *x, int64_t b, int64_t *bs, int64_t *vs);

#endif
