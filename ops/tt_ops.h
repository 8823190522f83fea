/* tensortrace built-in ops: typed C wrappers over the `tt` op library.
 *
 * Every function here is an op registered in namespace `tt` through the
 * same tt_custom_op_define call a user's custom op uses; the wrapper is the
 * fast path. When no mode, autograd or fake tensor is involved it calls the
 * kernel directly without boxing; otherwise it goes through the dispatcher
 * (so tracing records it, autograd differentiates it, fake tensors get
 * metadata only).
 *
 * Conventions are the runtime's: results are new references (NULL + error
 * on failure), arguments are borrowed, dims may be negative. Broadcasting
 * and type promotion follow PyTorch.
 */
#ifndef TT_OPS_H
#define TT_OPS_H

#include "tt_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif
#pragma GCC visibility push(default) /* the public API: see tt_runtime.h */

/* Registers the built-in library (idempotent; runs automatically when the
 * library is loaded). */
tt_status tt_ops_init(void);

/* What runs the matrix products, e.g. "OpenBLAS 0.3.21, SkylakeX kernels
 * (chosen by tensortrace: the CPU has AVX-512; OpenBLAS detected
 * Haswell)". On a CPU with AVX-512 whose OpenBLAS picked kernels without
 * it, the library switches OpenBLAS to its AVX-512 (SkylakeX) kernels when
 * it loads, unless OPENBLAS_CORETYPE is set (the user's choice is kept).
 * TT_LOG=perf (or blas) prints this line to stderr at load. Static string. */
const char *tt_blas_kernels(void);

/* -------------------------------------------------- elementwise binary */
/* tt::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor */
tt_tensor *tt_add(const tt_tensor *a, const tt_tensor *b);
tt_tensor *tt_sub(const tt_tensor *a, const tt_tensor *b);
tt_tensor *tt_mul(const tt_tensor *a, const tt_tensor *b);
tt_tensor *tt_div(const tt_tensor *a, const tt_tensor *b); /* true division */
tt_tensor *tt_pow(const tt_tensor *a, const tt_tensor *b);
/* a + alpha * b */
tt_tensor *tt_add_scaled(const tt_tensor *a, const tt_tensor *b, double alpha);
/* With a Scalar operand (tt::add.Scalar ...), promoted as a Python number. */
tt_tensor *tt_add_scalar(const tt_tensor *a, double b);
tt_tensor *tt_sub_scalar(const tt_tensor *a, double b);
tt_tensor *tt_mul_scalar(const tt_tensor *a, double b);
tt_tensor *tt_div_scalar(const tt_tensor *a, double b);
/* fmod: the remainder of C's fmod (the sign of a); remainder: Python's
 * % (the sign of b). An integer divisor of zero is refused, as PyTorch
 * (ZeroDivisionError). */
tt_tensor *tt_fmod(const tt_tensor *a, const tt_tensor *b);
tt_tensor *tt_fmod_scalar(const tt_tensor *a, double b);
tt_tensor *tt_remainder(const tt_tensor *a, const tt_tensor *b);
tt_tensor *tt_remainder_scalar(const tt_tensor *a, double b);
/* atan2(a, b): the angle of the point (b, a); integers give f32. */
tt_tensor *tt_atan2(const tt_tensor *a, const tt_tensor *b);
/* atan2.out: atan2(a, b) written into out, which must have the broadcast
 * shape (tt does not resize it) and a dtype the result casts to. */
tt_status tt_atan2_out(tt_tensor *out, const tt_tensor *a, const tt_tensor *b);
tt_tensor *tt_pow_scalar(const tt_tensor *a, double exponent);
/* In place (bump the version counter; the result dtype must fit `a`). */
tt_status tt_add_(tt_tensor *a, const tt_tensor *b);
tt_status tt_sub_(tt_tensor *a, const tt_tensor *b);
tt_status tt_mul_(tt_tensor *a, const tt_tensor *b);
tt_status tt_div_(tt_tensor *a, const tt_tensor *b);
tt_status tt_add_scaled_(tt_tensor *a, const tt_tensor *b, double alpha);
tt_status tt_mul_scalar_(tt_tensor *a, double b);
tt_status tt_add_scalar_(tt_tensor *a, double b); /* tt::add_.Scalar ... */
tt_status tt_sub_scalar_(tt_tensor *a, double b);
tt_status tt_div_scalar_(tt_tensor *a, double b);
/* tt::div.Tensor_mode / div.Scalar_mode: rounding_mode "trunc", "floor"
 * or NULL (true division). Integers stay integers with a rounding mode;
 * an integer division by zero is an error (PyTorch's ZeroDivisionError). */
tt_tensor *tt_div_mode(const tt_tensor *a, const tt_tensor *b, const char *rounding_mode);
tt_tensor *tt_div_scalar_mode(const tt_tensor *a, double b, const char *rounding_mode);
/* tt::pow.Scalar: base ** exponent for a number base (pow(2, x)). */
tt_tensor *tt_scalar_pow(double base, const tt_tensor *exponent);

/* Comparisons give bool tensors. */
tt_tensor *tt_eq(const tt_tensor *a, const tt_tensor *b);
tt_tensor *tt_ne(const tt_tensor *a, const tt_tensor *b);
tt_tensor *tt_lt(const tt_tensor *a, const tt_tensor *b);
tt_tensor *tt_le(const tt_tensor *a, const tt_tensor *b);
tt_tensor *tt_gt(const tt_tensor *a, const tt_tensor *b);
tt_tensor *tt_ge(const tt_tensor *a, const tt_tensor *b);
/* tt::where.self(Tensor condition, Tensor self, Tensor other) -> Tensor */
tt_tensor *tt_where(const tt_tensor *cond, const tt_tensor *a, const tt_tensor *b);
/* tt::where.ScalarSelf / where.ScalarOther: one side a number. The
 * condition may also be uint8 (non-zero is true), as PyTorch 1.13 allows. */
tt_tensor *tt_where_scalar(const tt_tensor *cond, double a, const tt_tensor *b);
tt_tensor *tt_where_other_scalar(const tt_tensor *cond, const tt_tensor *a, double b);

/* --------------------------------------------------- elementwise unary */
tt_tensor *tt_neg(const tt_tensor *a);
tt_tensor *tt_exp(const tt_tensor *a);
tt_tensor *tt_log(const tt_tensor *a);
tt_tensor *tt_sqrt(const tt_tensor *a);
tt_tensor *tt_rsqrt(const tt_tensor *a);
tt_tensor *tt_sin(const tt_tensor *a);
tt_tensor *tt_cos(const tt_tensor *a);
tt_tensor *tt_tanh(const tt_tensor *a);
tt_tensor *tt_sigmoid(const tt_tensor *a);
tt_tensor *tt_relu(const tt_tensor *a);
tt_tensor *tt_gelu(const tt_tensor *a); /* exact (erf) form */
tt_tensor *tt_gelu_tanh(const tt_tensor *a); /* gelu(approximate="tanh") */
tt_tensor *tt_abs(const tt_tensor *a);
/* Core ATen's other math functions (an integer input gives f32, as
 * PyTorch's; floor, ceil, trunc and round keep an integer input as it is;
 * round is half to even). */
tt_tensor *tt_acos(const tt_tensor *a);
tt_tensor *tt_asin(const tt_tensor *a);
tt_tensor *tt_atan(const tt_tensor *a);
tt_tensor *tt_acosh(const tt_tensor *a);
tt_tensor *tt_asinh(const tt_tensor *a);
tt_tensor *tt_atanh(const tt_tensor *a);
tt_tensor *tt_sinh(const tt_tensor *a);
tt_tensor *tt_cosh(const tt_tensor *a);
tt_tensor *tt_tan(const tt_tensor *a);
tt_tensor *tt_erf(const tt_tensor *a);
tt_tensor *tt_expm1(const tt_tensor *a);
tt_tensor *tt_log1p(const tt_tensor *a);
tt_tensor *tt_log2(const tt_tensor *a);
tt_tensor *tt_log10(const tt_tensor *a);
tt_tensor *tt_reciprocal(const tt_tensor *a);
tt_tensor *tt_floor(const tt_tensor *a);
tt_tensor *tt_ceil(const tt_tensor *a);
tt_tensor *tt_trunc(const tt_tensor *a);
tt_tensor *tt_round(const tt_tensor *a);
/* tt::clamp(Tensor self, Scalar? min=None, Scalar? max=None); pass NAN
 * for "no bound". */
tt_tensor *tt_clamp(const tt_tensor *a, double min, double max);
/* tt::clamp.Tensor: bounds that are tensors (broadcast with a), or NULL
 * for none. */
tt_tensor *tt_clamp_tensor(const tt_tensor *a, const tt_tensor *min, const tt_tensor *max);
tt_status tt_relu_(tt_tensor *a);
tt_status tt_zero_(tt_tensor *a);

/* ------------------------------------------------------------ reductions */
/* dims: ndims entries (ndims == 0 reduces over all dims). */
tt_tensor *tt_sum(const tt_tensor *a, int ndims, const int64_t *dims, bool keepdim);
tt_tensor *tt_mean(const tt_tensor *a, int ndims, const int64_t *dims, bool keepdim);
tt_tensor *tt_amax(const tt_tensor *a, int ndims, const int64_t *dims, bool keepdim);
tt_tensor *tt_amin(const tt_tensor *a, int ndims, const int64_t *dims, bool keepdim);
tt_tensor *tt_sum_all(const tt_tensor *a); /* 0-dim result */
tt_tensor *tt_mean_all(const tt_tensor *a);
/* i64 indices of the maximum along dim (first one on ties). */
tt_tensor *tt_argmax(const tt_tensor *a, int dim, bool keepdim);
tt_tensor *tt_softmax(const tt_tensor *a, int dim);
tt_tensor *tt_log_softmax(const tt_tensor *a, int dim);

/* ---------------------------------------------------------------- linalg */
/* OpenBLAS for f32/f64; a transposed operand goes to BLAS as a transpose. */
tt_tensor *tt_mm(const tt_tensor *a, const tt_tensor *b);   /* [n,k]x[k,m] */
tt_tensor *tt_bmm(const tt_tensor *a, const tt_tensor *b);  /* [b,n,k]x[b,k,m] */
tt_tensor *tt_matmul(const tt_tensor *a, const tt_tensor *b); /* numpy rules */
/* x @ w^T + b; b may be NULL. x [..., in], w [out, in], b [out]. */
tt_tensor *tt_linear(const tt_tensor *x, const tt_tensor *w, const tt_tensor *b);
/* tt::addmm: beta * self + alpha * (mat1 @ mat2), self broadcast to the
 * product; with beta 0 self is not read. */
tt_tensor *tt_addmm(const tt_tensor *self, const tt_tensor *mat1, const tt_tensor *mat2,
                    double beta, double alpha);

/* ----------------------------------------------------------------- losses */
/* Mean cross entropy of logits [N, C] against i64 class indices [N]. */
tt_tensor *tt_cross_entropy(const tt_tensor *logits, const tt_tensor *target);
/* tt::cross_entropy's other arguments, PyTorch's: zero-initialise for the
 * defaults. */
typedef struct {
    const char *reduction;   /* "mean" (NULL), "sum" or "none" */
    const tt_tensor *weight; /* one weight per class [C], or NULL */
    bool ignore;             /* true: targets equal to ignore_index count for */
    int64_t ignore_index;    /* nothing (false: PyTorch's default, -100) */
    double label_smoothing;  /* in [0, 1] */
} tt_cross_entropy_opts;
/* logits [C], [N, C] or [N, C, d1, ...] (classes along dim 1) against i64
 * class indices of the logits' shape without the class dim, or class
 * probabilities of the logits' shape and dtype. opts may be NULL. */
tt_tensor *tt_cross_entropy_ex(const tt_tensor *logits, const tt_tensor *target,
                               const tt_cross_entropy_opts *opts);

/* ---------------------------------------------------------------- gradcheck */

/* A model function: reads nin inputs, writes nout outputs (new references).
 * The same signature is what the tracer traces and compiles. */
typedef tt_status (*tt_fn)(tt_tensor **in, int nin, tt_tensor **out, int nout,
                           void *ud);

typedef struct {
    double eps;  /* finite-difference step; 0: 1e-6 */
    double atol; /* 0: 1e-5 */
    double rtol; /* 0: 1e-3 */
} tt_gradcheck_opts;

/* Compares the analytic gradient (tt_grad) of every output element with
 * respect to every element of every input that requires grad against
 * central finite differences, as torch.autograd.gradcheck does. Inputs that
 * require grad must be f64. Returns TT_OK, or TT_EAUTOGRAD with a message
 * naming the output, the input, the elements and both values. opts may be
 * NULL. The inputs' values are restored afterwards. */
tt_status tt_gradcheck(tt_fn fn, int nin, tt_tensor **inputs, int nout,
                       const tt_gradcheck_opts *opts, void *ud);

/* ------------------------------------------------- copies and views */
/* tt::clone / tt::contiguous with PyTorch's memory_format as a string:
 * "preserve_format" (clone's default: the input's layout), "contiguous_format"
 * (contiguous's default), "channels_last" (4-d NCHW with C moving fastest),
 * "channels_last_3d" (5-d). contiguous returns a view when the input is
 * already in that format. */
tt_tensor *tt_clone_format(const tt_tensor *t, const char *memory_format);
tt_tensor *tt_contiguous_format(const tt_tensor *t, const char *memory_format);
/* tt::squeeze.dims: drops those of the n dims that have size 1, at once. */
tt_tensor *tt_squeeze_dims(const tt_tensor *t, int n, const int64_t *dims);

/* ------------------------------------------------------------- shape ops */
tt_tensor *tt_cat(int n, tt_tensor *const *ts, int dim);
tt_tensor *tt_stack(int n, tt_tensor *const *ts, int dim);

/* ----------------------------------------------------------- transformer */
/* tt::embedding: rows of weight [num, dim] picked by i64/i32 indices of any
 * shape: [..., dim]. Its gradient adds up the rows of repeated indices. */
tt_tensor *tt_embedding(const tt_tensor *weight, const tt_tensor *indices);
/* tt::layer_norm: normalizes over the trailing dims normalized_shape (ndims
 * sizes), (x - mean) / sqrt(var + eps), then * weight + bias (each may be
 * NULL; of shape normalized_shape). */
tt_tensor *tt_layer_norm(const tt_tensor *x, int ndims, const int64_t *normalized_shape,
                         const tt_tensor *weight, const tt_tensor *bias, double eps);
/* tt::scaled_dot_product_attention: softmax(q k^T * scale) v per head,
 * q [..., T, D], k [..., S, D], v [..., S, Dv]; is_causal lets query i see
 * keys j <= i; scale <= 0 means 1/sqrt(D). One fused kernel forward and
 * backward (no [T, S] matrix is made). A 4-d result [B, H, T, Dv] is laid
 * out as [B, H, T, Dv].transpose(1, 2) of a contiguous [B, T, H, Dv], as
 * PyTorch's flash attention does, so merging the heads is a view. */
tt_tensor *tt_scaled_dot_product_attention(const tt_tensor *q, const tt_tensor *k,
                                           const tt_tensor *v, bool is_causal, double scale);
/* One AdamW update (torch.optim.AdamW, decoupled weight decay) of param
 * and its moment buffers exp_avg, exp_avg_sq (same shape and dtype, zeros
 * at first) from grad, in place, in one pass (tt::adamw_step). step: a 0-dim
 * tensor holding the update's number (1 for the first; the caller counts),
 * a tensor so that a compiled step reads it anew each call. Call it under
 * tt_no_grad_begin() for a param that requires grad. */
typedef struct {
    double lr, beta1, beta2, eps, weight_decay;
} tt_adamw_opts;
tt_status tt_adamw_(tt_tensor *param, const tt_tensor *grad, tt_tensor *exp_avg,
                    tt_tensor *exp_avg_sq, const tt_tensor *step, const tt_adamw_opts *opts);
/* tt::global_norm: the 2-norm of all elements of n tensors together (a
 * 0-dim tensor; what gradient clipping compares with its maximum). */
tt_tensor *tt_global_norm(int n, tt_tensor *const *ts);
/* tt::rms_norm (PyTorch 2.4's F.rms_norm): each row over the trailing dims
 * normalized_shape (ndims sizes) times 1 / sqrt(mean(x^2) + eps), then
 * times weight (NULL: none; of shape normalized_shape). eps < 0 means
 * None: the epsilon of x's dtype (torch.finfo(dtype).eps). f32, f64. */
tt_tensor *tt_rms_norm(const tt_tensor *x, int ndims, const int64_t *normalized_shape,
                       const tt_tensor *weight, double eps);
/* tt::silu: x * sigmoid(x) (PyTorch's silu, Llama's SwiGLU activation);
 * float inputs only. Fused into compiled pointwise chains. */
tt_tensor *tt_silu(const tt_tensor *x);
/* tt::rotary_embedding: rotates the pairs of x [..., T, D] ([B, H, T, D]
 * queries or keys) by the angles of tables cos, sin [T, D] (row t for
 * position t; slice rows for a decode step):
 *   y[a] = x[a] cos[a] - x[b] sin[a],  y[b] = x[b] cos[b] + x[a] sin[b].
 * interleaved false pairs i with i + D/2: Llama / Hugging Face's
 * x * cos + rotate_half(x) * sin, tables cat(freqs, freqs). interleaved
 * true pairs 2i with 2i + 1: GGML's ROPE and llama2.c (tables repeat each
 * angle twice). f32, f64; D even; differentiable in x, cos and sin. */
tt_tensor *tt_rotary_embedding(const tt_tensor *x, const tt_tensor *cos, const tt_tensor *sin,
                               bool interleaved);
/* tt_scaled_dot_product_attention with grouped-query attention (PyTorch
 * 2.5's enable_gqa=True): k and v [B, Hkv, S, D] with Hkv dividing q's
 * heads Hq; query head h reads key/value head h / (Hq / Hkv), as
 * PyTorch's repeat_interleave of the key/value heads (no copy is made). */
tt_tensor *tt_scaled_dot_product_attention_gqa(const tt_tensor *q, const tt_tensor *k,
                                               const tt_tensor *v, bool is_causal,
                                               double scale);

/* Each wrapper records its caller's line for the graph node it makes (see
 * "Call sites" in tt_dispatch.h). */
/* ----------------- logical, bitwise, maximum, minimum, statistics, shapes */

/* tt::maximum / tt::minimum: the elementwise larger (smaller) of a and b,
 * broadcast, in their promoted dtype; a NaN in either gives NaN. The
 * gradient goes to the operand chosen, half to each where they are equal. */
tt_tensor *tt_maximum(const tt_tensor *a, const tt_tensor *b);
tt_tensor *tt_minimum(const tt_tensor *a, const tt_tensor *b);
/* tt::isnan / tt::isinf: bool tensors (false everywhere for integers). */
tt_tensor *tt_isnan(const tt_tensor *a);
tt_tensor *tt_isinf(const tt_tensor *a);
/* tt::logical_and/or/xor/not: any dtype in (nonzero, NaN too, is true),
 * bool out; the binary ones broadcast. */
tt_tensor *tt_logical_and(const tt_tensor *a, const tt_tensor *b);
tt_tensor *tt_logical_or(const tt_tensor *a, const tt_tensor *b);
tt_tensor *tt_logical_xor(const tt_tensor *a, const tt_tensor *b);
tt_tensor *tt_logical_not(const tt_tensor *a);
/* tt::bitwise_and/or/xor (.Tensor, and .Scalar with an integer b) and
 * tt::bitwise_not: integer and bool tensors only (a float is refused, as
 * PyTorch refuses it); the promoted dtype out (bool: logical). */
tt_tensor *tt_bitwise_and(const tt_tensor *a, const tt_tensor *b);
tt_tensor *tt_bitwise_or(const tt_tensor *a, const tt_tensor *b);
tt_tensor *tt_bitwise_xor(const tt_tensor *a, const tt_tensor *b);
tt_tensor *tt_bitwise_and_scalar(const tt_tensor *a, int64_t b);
tt_tensor *tt_bitwise_or_scalar(const tt_tensor *a, int64_t b);
tt_tensor *tt_bitwise_xor_scalar(const tt_tensor *a, int64_t b);
tt_tensor *tt_bitwise_not(const tt_tensor *a);
/* tt::var.correction / tt::std.correction over ndims dims (0: every dim),
 * dividing by max(0, n - correction) (1: the unbiased estimate, 0: the
 * population's); floats only. */
tt_tensor *tt_var(const tt_tensor *a, int ndims, const int64_t *dims, int64_t correction,
                  bool keepdim);
tt_tensor *tt_std(const tt_tensor *a, int ndims, const int64_t *dims, int64_t correction,
                  bool keepdim);
/* tt::any / tt::all over every element, tt::any.dim / tt::all.dim over
 * one dim: bool results (u8 for a u8 input, as PyTorch 1.13); NaN counts
 * as true. Not differentiable. */
tt_tensor *tt_any(const tt_tensor *a);
tt_tensor *tt_all(const tt_tensor *a);
tt_tensor *tt_any_dim(const tt_tensor *a, int64_t dim, bool keepdim);
tt_tensor *tt_all_dim(const tt_tensor *a, int64_t dim, bool keepdim);
/* tt::any.dims / tt::all.dims (PyTorch 2.2's): over ndims dims (0: every
 * dim, as None). */
tt_tensor *tt_any_dims(const tt_tensor *a, int ndims, const int64_t *dims, bool keepdim);
tt_tensor *tt_all_dims(const tt_tensor *a, int ndims, const int64_t *dims, bool keepdim);
/* tt::repeat: a tiled copy (n >= ndim repeats, extra ones add leading
 * dims); tt::flip: reversed along n dims; tt::roll: shifted cyclically
 * along ndims dims (0 dims: the flattened tensor by one shift); tt::tril /
 * tt::triu: the lower (upper) triangle of the last two dims from the
 * diagonal (0 main, > 0 above), the rest zeros. New tensors laid out as
 * PyTorch 1.13 lays them out (a flip keeps a transposed input's strides). */
tt_tensor *tt_repeat(const tt_tensor *a, int n, const int64_t *repeats);
tt_tensor *tt_flip(const tt_tensor *a, int n, const int64_t *dims);
tt_tensor *tt_roll(const tt_tensor *a, int nshifts, const int64_t *shifts, int ndims,
                   const int64_t *dims);
tt_tensor *tt_tril(const tt_tensor *a, int64_t diagonal);
tt_tensor *tt_triu(const tt_tensor *a, int64_t diagonal);
/* tt::full_like: a's shape, layout and dtype, every element `value`;
 * tt::scalar_tensor: a 0-dim tensor of dtype holding value. */
tt_tensor *tt_full_like(const tt_tensor *a, double value);
tt_tensor *tt_scalar_tensor(double value, tt_dtype dtype);
/* tt::split_with_sizes: self cut along dim into n pieces of the given
 * lengths (each >= 0, summing exactly to self's size there; sizes may be
 * symbols). Each piece is a view of self (a narrow: it shares self's
 * storage, writes through it reach self) and has its own gradient, summed
 * back into self's. pieces (room for n) receives n new references, which
 * the caller releases (tt_release each); on failure none (all NULL). */
tt_status tt_split_with_sizes(const tt_tensor *self, int n, const tt_size *split_sizes,
                              int64_t dim, tt_tensor **pieces);
/* tt::split.Tensor: pieces of split_size along dim, the last one shorter
 * (max(ceil(size / split_size), 1) pieces; split_size 0 only for an empty
 * dim), views of self as tt_split_with_sizes's. pieces has room for cap;
 * *npieces says how many the split makes, also when they do not fit
 * (TT_EINVAL, nothing returned: ask again with that room). The caller
 * releases each piece. */
tt_status tt_split(const tt_tensor *self, tt_size split_size, int64_t dim, int cap,
                   tt_tensor **pieces, int *npieces);
/* tt::chunk: at most `chunks` (> 0) pieces of ceil(size / chunks) along
 * dim, the last one shorter, so fewer than asked when the size does not
 * divide (6 by 4: three pieces of 2); `chunks` empty pieces of an empty
 * dim. pieces needs room for `chunks`; *npieces is how many were made, each
 * a view of self and the caller's to release. */
tt_status tt_chunk(const tt_tensor *self, int64_t chunks, int64_t dim, tt_tensor **pieces,
                   int *npieces);

#ifdef TT_CALLSITES
#define tt_repeat(...) TT_CALLSITE_T(tt_repeat, __VA_ARGS__)
#define tt_flip(...) TT_CALLSITE_T(tt_flip, __VA_ARGS__)
#define tt_roll(...) TT_CALLSITE_T(tt_roll, __VA_ARGS__)
#define tt_tril(...) TT_CALLSITE_T(tt_tril, __VA_ARGS__)
#define tt_triu(...) TT_CALLSITE_T(tt_triu, __VA_ARGS__)
#define tt_full_like(...) TT_CALLSITE_T(tt_full_like, __VA_ARGS__)
#define tt_scalar_tensor(...) TT_CALLSITE_T(tt_scalar_tensor, __VA_ARGS__)
#define tt_split_with_sizes(...) TT_CALLSITE_S(tt_split_with_sizes, __VA_ARGS__)
#define tt_split(...) TT_CALLSITE_S(tt_split, __VA_ARGS__)
#define tt_chunk(...) TT_CALLSITE_S(tt_chunk, __VA_ARGS__)
#define tt_var(...) TT_CALLSITE_T(tt_var, __VA_ARGS__)
#define tt_std(...) TT_CALLSITE_T(tt_std, __VA_ARGS__)
#define tt_any(...) TT_CALLSITE_T(tt_any, __VA_ARGS__)
#define tt_all(...) TT_CALLSITE_T(tt_all, __VA_ARGS__)
#define tt_any_dim(...) TT_CALLSITE_T(tt_any_dim, __VA_ARGS__)
#define tt_any_dims(...) TT_CALLSITE_T(tt_any_dims, __VA_ARGS__)
#define tt_all_dims(...) TT_CALLSITE_T(tt_all_dims, __VA_ARGS__)
#define tt_all_dim(...) TT_CALLSITE_T(tt_all_dim, __VA_ARGS__)
#define tt_maximum(...) TT_CALLSITE_T(tt_maximum, __VA_ARGS__)
#define tt_minimum(...) TT_CALLSITE_T(tt_minimum, __VA_ARGS__)
#define tt_isnan(...) TT_CALLSITE_T(tt_isnan, __VA_ARGS__)
#define tt_isinf(...) TT_CALLSITE_T(tt_isinf, __VA_ARGS__)
#define tt_logical_and(...) TT_CALLSITE_T(tt_logical_and, __VA_ARGS__)
#define tt_logical_or(...) TT_CALLSITE_T(tt_logical_or, __VA_ARGS__)
#define tt_logical_xor(...) TT_CALLSITE_T(tt_logical_xor, __VA_ARGS__)
#define tt_logical_not(...) TT_CALLSITE_T(tt_logical_not, __VA_ARGS__)
#define tt_bitwise_and(...) TT_CALLSITE_T(tt_bitwise_and, __VA_ARGS__)
#define tt_bitwise_or(...) TT_CALLSITE_T(tt_bitwise_or, __VA_ARGS__)
#define tt_bitwise_xor(...) TT_CALLSITE_T(tt_bitwise_xor, __VA_ARGS__)
#define tt_bitwise_and_scalar(...) TT_CALLSITE_T(tt_bitwise_and_scalar, __VA_ARGS__)
#define tt_bitwise_or_scalar(...) TT_CALLSITE_T(tt_bitwise_or_scalar, __VA_ARGS__)
#define tt_bitwise_xor_scalar(...) TT_CALLSITE_T(tt_bitwise_xor_scalar, __VA_ARGS__)
#define tt_bitwise_not(...) TT_CALLSITE_T(tt_bitwise_not, __VA_ARGS__)
#endif

/* ------------------------------------------------------------------ random */

/* Sampling ops. tt has no Generator objects: all of them draw from the
 * global generator (tt_manual_seed), PyTorch's default generator's role.
 * Each call reserves fresh counters, so the same seed gives the same
 * values on every run and thread count, in eager code and in a compiled
 * step that replays the call (which draws anew per call); an elementwise
 * op draws in the tensor's logical order, whatever its layout. The values
 * are not PyTorch's streams; the distributions are. None is
 * differentiable (uniform_ and normal_ pass no gradient to self's old
 * values). */
/* tt::bernoulli: 0 or 1 per element, 1 with the probability self holds
 * there (f32 or f64, each in [0, 1]); self's dtype, contiguous (as
 * PyTorch's). */
tt_tensor *tt_bernoulli(const tt_tensor *self);
/* tt::bernoulli.p: self's shape and dtype (any), contiguous, each element 1
 * with probability p in [0, 1], else 0. */
tt_tensor *tt_bernoulli_p(const tt_tensor *self, double p);
/* tt::uniform_: fills self (f32 or f64) in place with uniform values in
 * [from, to) (from == to: all from). tt::normal_: with normal values of
 * mean `mean` and standard deviation std >= 0. */
tt_status tt_uniform_(tt_tensor *self, double from, double to);
tt_status tt_normal_(tt_tensor *self, double mean, double std);
/* tt::randint.low: a new tensor of the given sizes and dtype (PyTorch's
 * default is TT_I64) of uniform integers in [low, high); the range must
 * fit the dtype. */
tt_tensor *tt_randint(int64_t low, int64_t high, int ndim, const int64_t *sizes,
                      tt_dtype dtype);
/* tt::randperm: a uniformly random permutation of 0..n-1 (n >= 0) in dtype
 * (PyTorch's default TT_I64; not bool). */
tt_tensor *tt_randperm(int64_t n, tt_dtype dtype);
/* tt::multinomial: num_samples category indices (i64) drawn from each row
 * of self (1-d [n] or 2-d [rows, n] non-negative finite weights, f32 or
 * f64, each row summing to more than 0), with or without replacement
 * (without: distinct indices, at most n, in the order drawn). [num_samples]
 * or [rows, num_samples]. */
tt_tensor *tt_multinomial(const tt_tensor *self, int64_t num_samples, bool replacement);

#ifdef TT_CALLSITES
#define tt_bernoulli(...) TT_CALLSITE_T(tt_bernoulli, __VA_ARGS__)
#define tt_bernoulli_p(...) TT_CALLSITE_T(tt_bernoulli_p, __VA_ARGS__)
#define tt_uniform_(...) TT_CALLSITE_S(tt_uniform_, __VA_ARGS__)
#define tt_normal_(...) TT_CALLSITE_S(tt_normal_, __VA_ARGS__)
#define tt_randint(...) TT_CALLSITE_T(tt_randint, __VA_ARGS__)
#define tt_randperm(...) TT_CALLSITE_T(tt_randperm, __VA_ARGS__)
#define tt_multinomial(...) TT_CALLSITE_T(tt_multinomial, __VA_ARGS__)
#endif

#ifdef TT_CALLSITES
#define tt_add(...) TT_CALLSITE_T(tt_add, __VA_ARGS__)
#define tt_sub(...) TT_CALLSITE_T(tt_sub, __VA_ARGS__)
#define tt_mul(...) TT_CALLSITE_T(tt_mul, __VA_ARGS__)
#define tt_div(...) TT_CALLSITE_T(tt_div, __VA_ARGS__)
#define tt_pow(...) TT_CALLSITE_T(tt_pow, __VA_ARGS__)
#define tt_add_scaled(...) TT_CALLSITE_T(tt_add_scaled, __VA_ARGS__)
#define tt_add_scalar(...) TT_CALLSITE_T(tt_add_scalar, __VA_ARGS__)
#define tt_sub_scalar(...) TT_CALLSITE_T(tt_sub_scalar, __VA_ARGS__)
#define tt_mul_scalar(...) TT_CALLSITE_T(tt_mul_scalar, __VA_ARGS__)
#define tt_div_scalar(...) TT_CALLSITE_T(tt_div_scalar, __VA_ARGS__)
#define tt_fmod(...) TT_CALLSITE_T(tt_fmod, __VA_ARGS__)
#define tt_fmod_scalar(...) TT_CALLSITE_T(tt_fmod_scalar, __VA_ARGS__)
#define tt_remainder(...) TT_CALLSITE_T(tt_remainder, __VA_ARGS__)
#define tt_remainder_scalar(...) TT_CALLSITE_T(tt_remainder_scalar, __VA_ARGS__)
#define tt_atan2(...) TT_CALLSITE_T(tt_atan2, __VA_ARGS__)
#define tt_pow_scalar(...) TT_CALLSITE_T(tt_pow_scalar, __VA_ARGS__)
#define tt_add_(...) TT_CALLSITE_S(tt_add_, __VA_ARGS__)
#define tt_atan2_out(...) TT_CALLSITE_S(tt_atan2_out, __VA_ARGS__)
#define tt_sub_(...) TT_CALLSITE_S(tt_sub_, __VA_ARGS__)
#define tt_mul_(...) TT_CALLSITE_S(tt_mul_, __VA_ARGS__)
#define tt_div_(...) TT_CALLSITE_S(tt_div_, __VA_ARGS__)
#define tt_add_scaled_(...) TT_CALLSITE_S(tt_add_scaled_, __VA_ARGS__)
#define tt_mul_scalar_(...) TT_CALLSITE_S(tt_mul_scalar_, __VA_ARGS__)
#define tt_add_scalar_(...) TT_CALLSITE_S(tt_add_scalar_, __VA_ARGS__)
#define tt_sub_scalar_(...) TT_CALLSITE_S(tt_sub_scalar_, __VA_ARGS__)
#define tt_div_scalar_(...) TT_CALLSITE_S(tt_div_scalar_, __VA_ARGS__)
#define tt_div_mode(...) TT_CALLSITE_T(tt_div_mode, __VA_ARGS__)
#define tt_div_scalar_mode(...) TT_CALLSITE_T(tt_div_scalar_mode, __VA_ARGS__)
#define tt_scalar_pow(...) TT_CALLSITE_T(tt_scalar_pow, __VA_ARGS__)
#define tt_eq(...) TT_CALLSITE_T(tt_eq, __VA_ARGS__)
#define tt_ne(...) TT_CALLSITE_T(tt_ne, __VA_ARGS__)
#define tt_lt(...) TT_CALLSITE_T(tt_lt, __VA_ARGS__)
#define tt_le(...) TT_CALLSITE_T(tt_le, __VA_ARGS__)
#define tt_gt(...) TT_CALLSITE_T(tt_gt, __VA_ARGS__)
#define tt_ge(...) TT_CALLSITE_T(tt_ge, __VA_ARGS__)
#define tt_where(...) TT_CALLSITE_T(tt_where, __VA_ARGS__)
#define tt_where_scalar(...) TT_CALLSITE_T(tt_where_scalar, __VA_ARGS__)
#define tt_where_other_scalar(...) TT_CALLSITE_T(tt_where_other_scalar, __VA_ARGS__)
#define tt_neg(...) TT_CALLSITE_T(tt_neg, __VA_ARGS__)
#define tt_exp(...) TT_CALLSITE_T(tt_exp, __VA_ARGS__)
#define tt_log(...) TT_CALLSITE_T(tt_log, __VA_ARGS__)
#define tt_sqrt(...) TT_CALLSITE_T(tt_sqrt, __VA_ARGS__)
#define tt_rsqrt(...) TT_CALLSITE_T(tt_rsqrt, __VA_ARGS__)
#define tt_sin(...) TT_CALLSITE_T(tt_sin, __VA_ARGS__)
#define tt_cos(...) TT_CALLSITE_T(tt_cos, __VA_ARGS__)
#define tt_tanh(...) TT_CALLSITE_T(tt_tanh, __VA_ARGS__)
#define tt_sigmoid(...) TT_CALLSITE_T(tt_sigmoid, __VA_ARGS__)
#define tt_relu(...) TT_CALLSITE_T(tt_relu, __VA_ARGS__)
#define tt_gelu(...) TT_CALLSITE_T(tt_gelu, __VA_ARGS__)
#define tt_gelu_tanh(...) TT_CALLSITE_T(tt_gelu_tanh, __VA_ARGS__)
#define tt_abs(...) TT_CALLSITE_T(tt_abs, __VA_ARGS__)
#define tt_acos(...) TT_CALLSITE_T(tt_acos, __VA_ARGS__)
#define tt_asin(...) TT_CALLSITE_T(tt_asin, __VA_ARGS__)
#define tt_atan(...) TT_CALLSITE_T(tt_atan, __VA_ARGS__)
#define tt_acosh(...) TT_CALLSITE_T(tt_acosh, __VA_ARGS__)
#define tt_asinh(...) TT_CALLSITE_T(tt_asinh, __VA_ARGS__)
#define tt_atanh(...) TT_CALLSITE_T(tt_atanh, __VA_ARGS__)
#define tt_sinh(...) TT_CALLSITE_T(tt_sinh, __VA_ARGS__)
#define tt_cosh(...) TT_CALLSITE_T(tt_cosh, __VA_ARGS__)
#define tt_tan(...) TT_CALLSITE_T(tt_tan, __VA_ARGS__)
#define tt_erf(...) TT_CALLSITE_T(tt_erf, __VA_ARGS__)
#define tt_expm1(...) TT_CALLSITE_T(tt_expm1, __VA_ARGS__)
#define tt_log1p(...) TT_CALLSITE_T(tt_log1p, __VA_ARGS__)
#define tt_log2(...) TT_CALLSITE_T(tt_log2, __VA_ARGS__)
#define tt_log10(...) TT_CALLSITE_T(tt_log10, __VA_ARGS__)
#define tt_reciprocal(...) TT_CALLSITE_T(tt_reciprocal, __VA_ARGS__)
#define tt_floor(...) TT_CALLSITE_T(tt_floor, __VA_ARGS__)
#define tt_ceil(...) TT_CALLSITE_T(tt_ceil, __VA_ARGS__)
#define tt_trunc(...) TT_CALLSITE_T(tt_trunc, __VA_ARGS__)
#define tt_round(...) TT_CALLSITE_T(tt_round, __VA_ARGS__)
#define tt_clamp(...) TT_CALLSITE_T(tt_clamp, __VA_ARGS__)
#define tt_clamp_tensor(...) TT_CALLSITE_T(tt_clamp_tensor, __VA_ARGS__)
#define tt_relu_(...) TT_CALLSITE_S(tt_relu_, __VA_ARGS__)
#define tt_zero_(...) TT_CALLSITE_S(tt_zero_, __VA_ARGS__)
#define tt_sum(...) TT_CALLSITE_T(tt_sum, __VA_ARGS__)
#define tt_mean(...) TT_CALLSITE_T(tt_mean, __VA_ARGS__)
#define tt_amax(...) TT_CALLSITE_T(tt_amax, __VA_ARGS__)
#define tt_amin(...) TT_CALLSITE_T(tt_amin, __VA_ARGS__)
#define tt_sum_all(...) TT_CALLSITE_T(tt_sum_all, __VA_ARGS__)
#define tt_mean_all(...) TT_CALLSITE_T(tt_mean_all, __VA_ARGS__)
#define tt_argmax(...) TT_CALLSITE_T(tt_argmax, __VA_ARGS__)
#define tt_softmax(...) TT_CALLSITE_T(tt_softmax, __VA_ARGS__)
#define tt_log_softmax(...) TT_CALLSITE_T(tt_log_softmax, __VA_ARGS__)
#define tt_mm(...) TT_CALLSITE_T(tt_mm, __VA_ARGS__)
#define tt_bmm(...) TT_CALLSITE_T(tt_bmm, __VA_ARGS__)
#define tt_matmul(...) TT_CALLSITE_T(tt_matmul, __VA_ARGS__)
#define tt_linear(...) TT_CALLSITE_T(tt_linear, __VA_ARGS__)
#define tt_addmm(...) TT_CALLSITE_T(tt_addmm, __VA_ARGS__)
#define tt_cross_entropy(...) TT_CALLSITE_T(tt_cross_entropy, __VA_ARGS__)
#define tt_cross_entropy_ex(...) TT_CALLSITE_T(tt_cross_entropy_ex, __VA_ARGS__)
#define tt_clone_format(...) TT_CALLSITE_T(tt_clone_format, __VA_ARGS__)
#define tt_contiguous_format(...) TT_CALLSITE_T(tt_contiguous_format, __VA_ARGS__)
#define tt_squeeze_dims(...) TT_CALLSITE_T(tt_squeeze_dims, __VA_ARGS__)
#define tt_cat(...) TT_CALLSITE_T(tt_cat, __VA_ARGS__)
#define tt_stack(...) TT_CALLSITE_T(tt_stack, __VA_ARGS__)
#define tt_embedding(...) TT_CALLSITE_T(tt_embedding, __VA_ARGS__)
#define tt_layer_norm(...) TT_CALLSITE_T(tt_layer_norm, __VA_ARGS__)
#define tt_scaled_dot_product_attention(...) TT_CALLSITE_T(tt_scaled_dot_product_attention, __VA_ARGS__)
#define tt_adamw_(...) TT_CALLSITE_S(tt_adamw_, __VA_ARGS__)
#define tt_global_norm(...) TT_CALLSITE_T(tt_global_norm, __VA_ARGS__)
#define tt_rms_norm(...) TT_CALLSITE_T(tt_rms_norm, __VA_ARGS__)
#define tt_silu(...) TT_CALLSITE_T(tt_silu, __VA_ARGS__)
#define tt_rotary_embedding(...) TT_CALLSITE_T(tt_rotary_embedding, __VA_ARGS__)
#define tt_scaled_dot_product_attention_gqa(...) \
    TT_CALLSITE_T(tt_scaled_dot_product_attention_gqa, __VA_ARGS__)
#endif

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif /* TT_OPS_H */
