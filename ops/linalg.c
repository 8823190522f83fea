/* Built-in ops: matrix products — mm, bmm, matmul (numpy/PyTorch rules) and
 * linear — through OpenBLAS for f32/f64 and a plain loop for integers.
 *
 * As in binary.c and unary.c, one function per op checks the arguments, computes
 * the output's metadata and allocates it, and stops there for fake inputs,
 * so the same code is the real kernel and the fake kernel. Every op then
 * ends in one batched-GEMM engine (gemm_run) over "matrix views": stack
 * aliases of the operands shaped [batch..., rows, cols] (a 1-d operand gets
 * a size-1 dim), whose batch dims broadcast by stride 0.
 *
 * The BLAS capability predicate (blas_layout, like ggml-blas supports_op):
 * an operand whose matrices are row-major with a unit column stride goes to
 * BLAS as NoTrans with ld = its row stride; one whose matrices are
 * column-major (a transposed view) goes as Trans with ld = its column
 * stride. Neither is copied. Anything else (a slice with a step in the
 * inner dim, an expanded matrix) is made contiguous first. Outputs are
 * contiguous, as PyTorch's.
 *
 * Threads: Debian's OpenBLAS runs on its own pthread pool and threads a
 * large GEMM by itself, so large GEMMs are called from the calling thread,
 * never from inside one of our OpenMP regions (two pools on two cores
 * would oversubscribe). Only batches of small GEMMs (m*n*k at most
 * OpenBLAS's single-thread threshold) are spread over our threads: OpenBLAS
 * runs each of those on the thread that called it, so the pools never run
 * at once. Measured on the 2-core machine: after a threaded call
 * OpenBLAS's worker spins (yielding) for ~0.1 s, and our OpenMP kernels
 * right after it ran no slower; splitting large GEMMs over our own threads
 * with OpenBLAS switched to one thread instead measured the same within
 * 3% (an MLP step of linear, relu, linear, add at sizes 256-1024), so the
 * simpler arrangement stays. */
#include "ops_impl.h"
#include "ops_plan.h"
#include "vec_math.h"

#include <cblas.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Work (multiply-adds) below which a chunk of batches is not worth a
 * thread. */
#define BATCH_GRAIN_WORK (1 << 18)

/* ------------------------------------------------------------- messages */

/* The op's name and its two tensor arguments (#1 and #2), for messages. */
typedef struct {
    tt_builtin_id op;
    const char *a, *b;
} names;

static const names MM = {TT_OP_MM, "self", "mat2"};
static const names BMM = {TT_OP_BMM, "self", "mat2"};
static const names MATMUL = {TT_OP_MATMUL, "self", "other"};
static const names LINEAR = {TT_OP_LINEAR, "input", "weight"};

/* Fails naming the op and argument #argno (3 is linear's bias). */
static tt_tensor *fail(const names *nm, int argno, tt_status code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static tt_tensor *fail(const names *nm, int argno, tt_status code, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const char *arg = argno == 1 ? nm->a : argno == 2 ? nm->b : "bias";
    tt_error(code, "%s: argument '%s' (#%d): %s", tt__op_label(nm->op), arg, argno, msg);
    return NULL;
}

/* PyTorch's names of dtypes in these messages ("float != double"). */
static const char *torch_name(tt_dtype dt)
{
    switch (dt) {
    case TT_F32: return "float";
    case TT_F64: return "double";
    case TT_I64: return "long int";
    case TT_I32: return "int";
    case TT_U8: return "unsigned char";
    case TT_BOOL: return "bool";
    default: return "?";
    }
}

typedef char szbuf[32];
static const char *sz(szbuf buf, tt_size s)
{
    tt_size_str(s, buf, sizeof(szbuf));
    return buf;
}

static char *shape_str(int nd, const tt_size *sizes, char *buf, size_t n)
{
    tt_tensor tmp;
    memset(&tmp, 0, sizeof tmp);
    tmp.ndim = (int8_t)nd;
    memcpy(tmp.sizes, sizes, sizeof(tt_size) * (size_t)nd);
    return tt_shape_str(&tmp, buf, n);
}

static tt_size prod(int n, const tt_size *s)
{
    tt_size p = 1;
    for (int i = 0; i < n; i++)
        p = tt_sym_mul(p, s[i]);
    return p;
}

/* PyTorch never promotes in a matrix product: both operands must have one
 * dtype, and bool has no kernel. */
static bool check_dtypes(const names *nm, const tt_tensor *a, const tt_tensor *b)
{
    if ((tt_dtype)a->dtype == TT_BOOL || (tt_dtype)b->dtype == TT_BOOL) {
        fail(nm, a->dtype == TT_BOOL ? 1 : 2, TT_EDTYPE,
             "matrix products are not implemented for bool tensors");
        return false;
    }
    if (a->dtype != b->dtype) {
        fail(nm, 2, TT_EDTYPE, "expected m1 and m2 to have the same dtype, but got: %s != %s",
             torch_name((tt_dtype)a->dtype), torch_name((tt_dtype)b->dtype));
        return false;
    }
    return true;
}

/* ------------------------------------------------------------ the engine */

/* One batched product: for every batch index, out (n x m, contiguous) =
 * a (n x k) @ b (k x m), plus out's previous value when `accumulate`. */
typedef struct gemm_plan gemm_plan;
struct gemm_plan {
    tt_dtype dt;
    int nb;                                       /* batch dims */
    int64_t bsizes[TT_MAX_DIMS];
    int64_t sa[TT_MAX_DIMS], sb[TT_MAX_DIMS];     /* batch strides (elements) */
    int64_t n, k, m;
    int64_t as0, as1, bs0, bs1;                   /* matrix strides */
    const char *pa, *pb;
    char *po;
    int64_t ldo;                                  /* output row stride: m */
    bool accumulate;
    double alpha;                                 /* scales a @ b (floats only) */
    bool blas, ta, tb;
    int64_t lda, ldb;
    void (*naive)(const gemm_plan *p, const char *a, const char *b, char *o);
};

/* The capability predicate: how an r x c matrix with element strides (s0,
 * s1) goes to BLAS without a copy. Row-major with a unit column stride ->
 * NoTrans, ld = s0 (>= c); column-major (a transposed view) -> Trans, ld =
 * s1 (>= r). The stride of a size-1 dim never moves, so it is ignored (a
 * strided vector is a 1 x k matrix in column-major order). False: copy. */
static bool blas_layout(int64_t r, int64_t c, int64_t s0, int64_t s1, bool *trans,
                        int64_t *ld)
{
    int64_t lo = c > 1 ? c : 1;
    if ((s1 == 1 || c <= 1) && (r <= 1 || s0 >= lo)) {
        *trans = false;
        *ld = r <= 1 ? lo : s0;
        if (*ld <= INT_MAX)
            return true;
    }
    lo = r > 1 ? r : 1;
    if ((s0 == 1 || r <= 1) && (c <= 1 || s1 >= lo)) {
        *trans = true;
        *ld = c <= 1 ? lo : s1;
        return *ld <= INT_MAX;
    }
    return false;
}

static bool matrix_blas_ok(const tt_tensor *t)
{
    bool tr;
    int64_t ld;
    int d = t->ndim;
    return blas_layout(t->sizes[d - 2], t->sizes[d - 1], t->strides[d - 2],
                       t->strides[d - 1], &tr, &ld);
}

/* The loop for integers (and for floats too large for BLAS's int sizes):
 * correct, not fast. Integers accumulate in uint64_t so that overflow
 * wraps as in PyTorch instead of being undefined; their alpha is taken as
 * an integer (truncated), as PyTorch's integer addmm takes it. */
#define SCALE_FLOAT(acc, alpha) ((double)(acc) * (alpha))
#define SCALE_INT(acc, alpha) ((acc) * (uint64_t)(int64_t)(alpha))
#define NAIVE(SUF, T, ACC, SCALE)                                              \
    static void naive_##SUF(const gemm_plan *p, const char *a, const char *b,  \
                            char *o)                                           \
    {                                                                          \
        const T *A = (const T *)a, *B = (const T *)b;                          \
        T *O = (T *)o;                                                         \
        for (int64_t i = 0; i < p->n; i++)                                     \
            for (int64_t j = 0; j < p->m; j++) {                               \
                ACC acc = 0;                                                   \
                for (int64_t q = 0; q < p->k; q++)                             \
                    acc += (ACC)A[i * p->as0 + q * p->as1] *                   \
                           (ACC)B[q * p->bs0 + j * p->bs1];                    \
                if (p->alpha != 1)                                             \
                    acc = (ACC)SCALE(acc, p->alpha);                           \
                O[i * p->ldo + j] = (T)(p->accumulate ? (ACC)O[i * p->ldo + j] + acc : acc); \
            }                                                                  \
    }
NAIVE(f32, float, double, SCALE_FLOAT)
NAIVE(f64, double, double, SCALE_FLOAT)
NAIVE(i64, int64_t, uint64_t, SCALE_INT)
NAIVE(i32, int32_t, uint64_t, SCALE_INT)
NAIVE(u8, uint8_t, uint64_t, SCALE_INT)

// a is (n,k), b is (k,m), both in the plan's layout; o is (n,m) contiguous
static void gemm_one(const gemm_plan *p, const char *a, const char *b, char *o)
{
    if (!p->blas) {
        p->naive(p, a, b, o);
        return;
    }
    enum CBLAS_TRANSPOSE ta = p->ta ? CblasTrans : CblasNoTrans;
    enum CBLAS_TRANSPOSE tb = p->tb ? CblasTrans : CblasNoTrans;
    if (p->dt == TT_F32)
        cblas_sgemm(CblasRowMajor, ta, tb, (blasint)p->n, (blasint)p->m, (blasint)p->k,
                    (float)p->alpha, (const float *)a, (blasint)p->lda, (const float *)b,
                    (blasint)p->ldb, p->accumulate ? 1.0f : 0.0f, (float *)o,
                    (blasint)p->ldo);
    else
        cblas_dgemm(CblasRowMajor, ta, tb, (blasint)p->n, (blasint)p->m, (blasint)p->k,
                    p->alpha, (const double *)a, (blasint)p->lda, (const double *)b,
                    (blasint)p->ldb, p->accumulate ? 1.0 : 0.0, (double *)o,
                    (blasint)p->ldo);
}

/* ------------------------------------------------ matrix-vector products */

/* A product with one output row or column (a decoder's classifier: [1,
 * 288] x [32000, 288]^T) is bandwidth-bound: every weight read once.
 * OpenBLAS's sgemm with M = 1 runs it far below the memory rate; its
 * sgemv does better. Measured (CPU time, one thread, on a busy machine):
 * sgemm 3.4-3.7 ms, sgemv 2.0-2.3 ms, reading the weights alone 0.95-1.3
 * ms. A loop of our own written for the compiler (16 lanes, four rows at
 * a time) came out at 1.8-2.7 ms; written with AVX-512 FMAs, eight rows
 * at a time, it reads the weights at 0.79-1.05 of the plain read's speed
 * against sgemv's 0.62-0.77 (vec_math_avx512.c), so rows
 * dotted with a contiguous vector (x W^T, W row-major: a linear layer's
 * step) run there on an AVX-512 CPU, split by rows across the threads;
 * the rest go to gemv. Returns false when the operands do not fit gemv's
 * one stride per vector (BLAS's gemm runs then). */
typedef struct {
    const float *m, *x;
    float *y;
    int64_t ld, k, incy;
    float alpha;
    bool accumulate;
} gemv_rows_job;

static void gemv_rows_task(int64_t r0, int64_t r1, void *vp)
{
    const gemv_rows_job *j = vp;
    if (tt__gemv_rows_f32_avx512(j->m, j->ld, j->x, j->k, j->y, j->incy, r0, r1, j->alpha,
                                 j->accumulate))
        return;
    /* a build without the AVX-512 kernels (no SLEEF) on an AVX-512 CPU:
     * the same rows through sgemv, never left unwritten */
    cblas_sgemv(CblasRowMajor, CblasNoTrans, (blasint)(r1 - r0), (blasint)j->k, j->alpha,
                j->m + r0 * j->ld, (blasint)j->ld, j->x, 1, j->accumulate ? 1.0f : 0.0f,
                j->y + r0 * j->incy, (blasint)j->incy);
}

static bool gemv_try(const gemm_plan *p)
{
    if (!p->blas || (p->n != 1 && p->m != 1) || p->k < 1)
        return false;
    bool row = p->n == 1; /* y[m] = x[k] @ B[k, m]; else y[n] = A[n, k] @ x[k] */
    int64_t incx = row ? p->as1 : p->bs0, incy = row ? 1 : p->ldo;
    if (p->k == 1)
        incx = 1;
    if (incx <= 0 || incx > INT_MAX || incy > INT_MAX)
        return false;
    /* the matrix as BLAS has it (blas_layout): rows x cols, row-major,
     * transposed or not */
    bool trans = row ? !p->tb : p->ta;
    int64_t rows = row ? (p->tb ? p->m : p->k) : (p->ta ? p->k : p->n);
    int64_t cols = row ? (p->tb ? p->k : p->m) : (p->ta ? p->n : p->k);
    int64_t ld = row ? p->ldb : p->lda;
    const char *mat = row ? p->pb : p->pa, *x = row ? p->pa : p->pb;
    enum CBLAS_TRANSPOSE t = trans ? CblasTrans : CblasNoTrans;
    if (p->dt == TT_F32 && !trans && incx == 1 && tt__cpu_vector_level() == 2) {
        gemv_rows_job j = {(const float *)mat, (const float *)x, (float *)p->po, ld, cols, incy,
                           (float)p->alpha, p->accumulate};
        /* in parallel past ~256 KB of the matrix; threads take runs of
         * whole blocks of 8 rows, at least ~32 KB, as they finish */
        int64_t cl = cols > 0 ? cols : 1;
        int64_t grain = ((65536 / cl) + 7) & ~(int64_t)7, take = ((8192 / cl) + 7) & ~(int64_t)7;
        tt__parallel_for_guided(rows, grain > 8 ? grain : 8, take > 8 ? take : 8,
                                gemv_rows_task, &j);
        return true;
    }
    if (p->dt == TT_F32)
        cblas_sgemv(CblasRowMajor, t, (blasint)rows, (blasint)cols, (float)p->alpha,
                    (const float *)mat, (blasint)ld, (const float *)x, (blasint)incx,
                    p->accumulate ? 1.0f : 0.0f, (float *)p->po, (blasint)incy);
    else
        cblas_dgemv(CblasRowMajor, t, (blasint)rows, (blasint)cols, p->alpha,
                    (const double *)mat, (blasint)ld, (const double *)x, (blasint)incx,
                    p->accumulate ? 1.0 : 0.0, (double *)p->po, (blasint)incy);
    return true;
}

/* Where batch i's matrices start. */
static void batch_ptrs(const gemm_plan *p, int64_t i, const char **a, const char **b,
                       char **o)
{
    int64_t es = (int64_t)tt_dtype_size(p->dt), rem = i, oa = 0, ob = 0;
    for (int d = p->nb - 1; d >= 0; d--) {
        int64_t j = rem % p->bsizes[d];
        rem /= p->bsizes[d];
        oa += j * p->sa[d];
        ob += j * p->sb[d];
    }
    *a = p->pa + oa * es;
    *b = p->pb + ob * es;
    *o = p->po + i * p->n * p->ldo * es;
}

static void run_batches(int64_t begin, int64_t end, void *ctx)
{
    const gemm_plan *p = ctx;
    for (int64_t i = begin; i < end; i++) {
        const char *a, *b;
        char *o;
        batch_ptrs(p, i, &a, &b, &o);
        gemm_one(p, a, b, o);
    }
}

/* out^T = b^T a^T: swaps the operands' roles. With n == 1 the contiguous
 * output [batch, 1, m] has the memory of [batch, m, 1], so the swapped
 * problem writes the same bytes. Applying it twice restores the plan. */
static void swap_operands(gemm_plan *p)
{
    int64_t t;
    const char *pt = p->pa;
    p->pa = p->pb;
    p->pb = pt;
    for (int d = 0; d < p->nb; d++) {
        t = p->sa[d], p->sa[d] = p->sb[d], p->sb[d] = t;
    }
    t = p->n, p->n = p->m, p->m = t;
    int64_t as0 = p->as0, as1 = p->as1;
    p->as0 = p->bs1, p->as1 = p->bs0;
    p->bs0 = as1, p->bs1 = as0;
}

static bool batch_invariant(const gemm_plan *p, const int64_t *s)
{
    for (int d = 0; d < p->nb; d++)
        if (p->bsizes[d] != 1 && s[d] != 0)
            return false;
    return true;
}

/* PyTorch's matmul folding: when b is the same matrix for every batch and
 * a's rows over all batches are evenly strided, the batch is one GEMM with
 * batch*n rows (one large call, in which BLAS packs b once and which
 * OpenBLAS threads, instead of many small ones). False (plan unchanged)
 * when it does not apply. */
static bool fold_batch(gemm_plan *p)
{
    if (p->nb == 0 || !batch_invariant(p, p->sb))
        return false;
    /* Collapse (batch..., n) into one dim, innermost first: an outer dim
     * joins when its stride is the inner block's stride times its size. */
    int64_t rows = p->n, stride = p->as0;
    bool have = p->n != 1;
    for (int d = p->nb - 1; d >= 0; d--) {
        if (p->bsizes[d] == 1)
            continue;
        if (!have) {
            rows = p->bsizes[d], stride = p->sa[d], have = true;
        } else if (p->sa[d] == stride * rows) {
            rows *= p->bsizes[d];
        } else {
            return false;
        }
    }
    bool tr = false;
    int64_t ld = 0;
    if (p->blas && (rows > INT_MAX || !blas_layout(rows, p->k, stride, p->as1, &tr, &ld)))
        return false;
    p->n = rows;
    p->as0 = stride;
    p->nb = 0;
    return true;
}

/* Brings a matrix view to a layout BLAS takes: itself, or a contiguous copy
 * in *owned (released by the caller). */
static const tt_tensor *blas_operand(const tt_tensor *t, tt_tensor **owned)
{
    if (matrix_blas_ok(t))
        return t;
    *owned = tt__empty_impl(t->ndim, t->sizes, NULL, (tt_dtype)t->dtype, false);
    if (*owned && tt__copy_raw(*owned, t))
        *owned = tt_release(*owned);
    return *owned;
}

/* Batch strides of a matrix view t aligned to the plan's nb broadcast batch
 * dims (0 where t is broadcast). */
static void batch_strides(const gemm_plan *p, const tt_tensor *t, int64_t *s)
{
    int tb = t->ndim - 2;
    for (int d = 0; d < p->nb; d++) {
        int j = d - (p->nb - tb);
        s[d] = j >= 0 && t->sizes[j] == p->bsizes[d] ? t->strides[j] : 0;
    }
}

/* Computes out (contiguous, [batch..., n, m] in memory) = a @ b for the
 * real matrix views a [ba..., n, k] and b [bb..., k, m], whose batch dims
 * broadcast to (nb, bs). out already holds the bias when `accumulate`. */
static tt_status gemm_run(const tt_tensor *a, const tt_tensor *b, int nb, const tt_size *bs,
                          tt_tensor *out, bool accumulate, double alpha)
{
    static void (*const naive[TT_DTYPE_COUNT])(const gemm_plan *, const char *,
                                                const char *, char *) = {
        [TT_F32] = naive_f32, [TT_F64] = naive_f64, [TT_I64] = naive_i64,
        [TT_I32] = naive_i32, [TT_U8] = naive_u8,
    };
    gemm_plan p;
    memset(&p, 0, sizeof p);
    p.dt = (tt_dtype)out->dtype;
    p.nb = nb;
    for (int d = 0; d < nb; d++)
        p.bsizes[d] = bs[d];
    p.n = a->sizes[a->ndim - 2];
    p.k = a->sizes[a->ndim - 1];
    p.m = b->sizes[b->ndim - 1];
    p.accumulate = accumulate;
    p.alpha = alpha;
    p.naive = naive[p.dt];
    if (p.k == 0) /* a sum of nothing: zeros, or the bias already there */
        return accumulate ? TT_OK : tt__fill_raw(out, 0);
    p.blas = (p.dt == TT_F32 || p.dt == TT_F64) && p.n <= INT_MAX && p.m <= INT_MAX &&
             p.k <= INT_MAX;
    if (p.blas)
        tt__blas_sync_threads();
    tt_tensor *ca = NULL, *cb = NULL;
    tt_status st = TT_OK;
    if (p.blas && (!(a = blas_operand(a, &ca)) || !(b = blas_operand(b, &cb)))) {
        st = tt_errcode();
        goto done;
    }
    batch_strides(&p, a, p.sa);
    batch_strides(&p, b, p.sb);
    p.as0 = a->strides[a->ndim - 2], p.as1 = a->strides[a->ndim - 1];
    p.bs0 = b->strides[b->ndim - 2], p.bs1 = b->strides[b->ndim - 1];
    p.pa = tt__ptr(a), p.pb = tt__ptr(b), p.po = tt__ptr(out);
    if (!fold_batch(&p) && p.n == 1 && p.nb > 0 && batch_invariant(&p, p.sa)) {
        /* A vector times a batch of matrices: fold the transposed problem. */
        swap_operands(&p);
        if (!fold_batch(&p))
            swap_operands(&p);
    }
    if (p.blas && (!blas_layout(p.n, p.k, p.as0, p.as1, &p.ta, &p.lda) ||
                   !blas_layout(p.k, p.m, p.bs0, p.bs1, &p.tb, &p.ldb)))
        p.blas = false; /* unreachable after blas_operand; stay correct anyway */
    p.ldo = p.m;
    int64_t nbatch = 1;
    for (int d = 0; d < p.nb; d++)
        nbatch *= p.bsizes[d];
    double mnk = (double)p.n * (double)p.m * (double)p.k;
    if (nbatch == 1 && p.blas && gemv_try(&p)) {
        /* done: a matrix-vector product */
    } else if (nbatch > 1 && (!p.blas || mnk <= TT_BLAS_SINGLE_THREAD_MNK)) {
        int64_t grain = mnk >= BATCH_GRAIN_WORK ? 1 : (int64_t)(BATCH_GRAIN_WORK / mnk);
        tt_parallel_for(nbatch, grain, run_batches, &p);
    } else {
        run_batches(0, nbatch, &p);
    }
done:
    tt_release(ca);
    tt_release(cb);
    return st;
}

/* ------------------------------------------------------- shared metadata */

/* A matrix view of t: t itself when it has >= 2 dims; a 1-d t becomes
 * [1, k] (row, a left operand) or [k, 1] (column, a right operand). */
static void as_matrix(tt_tensor *out, const tt_tensor *t, bool row)
{
    memcpy(out, t, sizeof *out);
    if (t->ndim != 1)
        return;
    out->ndim = 2;
    if (row) {
        out->sizes[1] = t->sizes[0], out->strides[1] = t->strides[0];
        out->sizes[0] = 1, out->strides[0] = 1;
    } else {
        out->sizes[1] = 1, out->strides[1] = 1;
    }
}

/* The output `osz` of a @ b for matrix views whose batch dims broadcast to
 * (nb, bs): allocated contiguous (fake when an input is) and, for real
 * inputs, computed, with `bias` (may be NULL; broadcast to the output)
 * added. Returns a new reference or NULL with the error set. */
static tt_tensor *product_scaled(const names *nm, const tt_tensor *a, const tt_tensor *b,
                                 const tt_tensor *bias, int nb, const tt_size *bs, int ond,
                                 const tt_size *osz, double beta, double alpha);

static tt_tensor *product(const names *nm, const tt_tensor *a, const tt_tensor *b,
                          const tt_tensor *bias, int nb, const tt_size *bs, int ond,
                          const tt_size *osz)
{
    return product_scaled(nm, a, b, bias, nb, bs, ond, osz, 1.0, 1.0);
}

/* out *= beta, out fresh and contiguous (addmm's scaled self). */
static void scale_raw(tt_tensor *out, double beta)
{
    int64_t n = tt_numel(out);
    char *p = tt__ptr(out);
    tt_dtype dt = (tt_dtype)out->dtype;
    size_t es = tt_dtype_size(dt);
    if (dt == TT_F32)
        for (int64_t i = 0; i < n; i++)
            ((float *)p)[i] *= (float)beta;
    else if (dt == TT_F64)
        for (int64_t i = 0; i < n; i++)
            ((double *)p)[i] *= beta;
    else if (dt == TT_I64) /* integers: beta truncated, products wrap (PyTorch's) */
        for (int64_t i = 0; i < n; i++)
            ((int64_t *)p)[i] = (int64_t)((uint64_t)((int64_t *)p)[i] * (uint64_t)(int64_t)beta);
    else
        for (int64_t i = 0; i < n; i++)
            tt__store(p + (size_t)i * es, dt,
                      (double)(int64_t)((uint64_t)(int64_t)tt__load(p + (size_t)i * es, dt) *
                                        (uint64_t)(int64_t)beta));
}

/* product, with out = beta * bias + alpha * (a @ b) (addmm's). */
static tt_tensor *product_scaled(const names *nm, const tt_tensor *a, const tt_tensor *b,
                                 const tt_tensor *bias, int nb, const tt_size *bs, int ond,
                                 const tt_size *osz, double beta, double alpha)
{
    tt_dtype dt = (tt_dtype)a->dtype;
    bool fake = a->storage->fake || b->storage->fake || (bias && bias->storage->fake);
    if (bias) {
        if ((tt_dtype)bias->dtype != dt)
            return fail(nm, 3, TT_EDTYPE, "expected bias to have the same dtype as input, "
                                          "but got: %s != %s",
                        torch_name((tt_dtype)bias->dtype), torch_name(dt));
        /* The bias is added into the output: it may broadcast, not grow it. */
        bool ok = bias->ndim <= ond;
        for (int i = 0; ok && i < bias->ndim; i++) {
            tt_size s = bias->sizes[i], o = osz[ond - bias->ndim + i];
            ok = tt__sz_is_one(s) || tt__sz_eq(s, o);
        }
        if (!ok) {
            char s1[256], s2[256];
            return fail(nm, 3, TT_ESHAPE, "shape %s is not broadcastable to the output "
                                          "shape %s", tt_shape_str(bias, s1, sizeof s1),
                        shape_str(ond, osz, s2, sizeof s2));
        }
    }
    tt_tensor *out = tt__ops_new(fake, ond, osz, NULL, dt);
    if (!out || fake || tt_numel(out) == 0)
        return out;
    if (bias && beta == 0)
        bias = NULL; /* as PyTorch: self is not read (its NaNs do not leak) */
    if (bias && tt__copy_raw(out, bias))
        return tt_release(out);
    if (bias && beta != 1)
        scale_raw(out, beta);
    if (gemm_run(a, b, nb, bs, out, bias != NULL, alpha))
        out = tt_release(out);
    return out;
}

bool tt__gemm_accumulate_fits(const tt_tensor *out, const tt_tensor *a, const tt_tensor *b)
{
    tt_dtype dt = (tt_dtype)out->dtype;
    return (dt == TT_F32 || dt == TT_F64) && a->dtype == out->dtype &&
           b->dtype == out->dtype && a->ndim == 2 && b->ndim == 2 && out->ndim == 2 &&
           !((a->flags | b->flags | out->flags) & TT_TF_HAS_SYM) &&
           a->sizes[0] == out->sizes[0] && b->sizes[1] == out->sizes[1] &&
           a->sizes[1] == b->sizes[0] && tt_is_contiguous(out) && out->sizes[0] <= INT_MAX &&
           out->sizes[1] <= INT_MAX && a->sizes[1] <= INT_MAX && matrix_blas_ok(a) &&
           matrix_blas_ok(b);
}

tt_status tt__gemm_accumulate(tt_tensor *out, const tt_tensor *a, const tt_tensor *b,
                              double alpha)
{
    bool fits = tt__gemm_accumulate_fits(out, a, b) && !a->storage->fake &&
                !b->storage->fake && !out->storage->fake && out->storage != a->storage &&
                out->storage != b->storage;
    if (!fits)
        return tt_error(TT_EINVAL, "tt__gemm_accumulate: the operands do not fit one BLAS "
                                   "GEMM into the output");
    return gemm_run(a, b, 0, NULL, out, true, alpha);
}

/* ------------------------------------------------------------------- ops */

// a is (n,k), b is (k,m); out is (n,m)
static tt_tensor *mm_impl(const tt_tensor *a, const tt_tensor *b)
{
    szbuf s0, s1, s2, s3;
    if (a->ndim != 2)
        return fail(&MM, 1, TT_ESHAPE, "self must be a matrix (got a %dD tensor)", a->ndim);
    if (b->ndim != 2)
        return fail(&MM, 2, TT_ESHAPE, "mat2 must be a matrix (got a %dD tensor)", b->ndim);
    if (!check_dtypes(&MM, a, b))
        return NULL;
    if (!tt__sz_eq(a->sizes[1], b->sizes[0]))
        return fail(&MM, 2, TT_ESHAPE, "mat1 and mat2 shapes cannot be multiplied (%sx%s and %sx%s)",
                    sz(s0, a->sizes[0]), sz(s1, a->sizes[1]), sz(s2, b->sizes[0]),
                    sz(s3, b->sizes[1]));
    tt_size osz[2] = {a->sizes[0], b->sizes[1]};
    return product(&MM, a, b, NULL, 0, NULL, 2, osz);
}

// a is (B,n,k), b is (B,k,m); out is (B,n,m)
static tt_tensor *bmm_impl(const tt_tensor *a, const tt_tensor *b)
{
    szbuf s0, s1, s2, s3;
    if (a->ndim != 3)
        return fail(&BMM, 1, TT_ESHAPE, "batch1 must be a 3D tensor (got a %dD tensor)", a->ndim);
    if (b->ndim != 3)
        return fail(&BMM, 2, TT_ESHAPE, "batch2 must be a 3D tensor (got a %dD tensor)", b->ndim);
    if (!check_dtypes(&BMM, a, b))
        return NULL;
    if (!tt__sz_eq(a->sizes[0], b->sizes[0]) || !tt__sz_eq(a->sizes[2], b->sizes[1]))
        return fail(&BMM, 2, TT_ESHAPE, "Expected size for first two dimensions of batch2 "
                                        "tensor to be: [%s, %s] but got: [%s, %s].",
                    sz(s0, a->sizes[0]), sz(s1, a->sizes[2]), sz(s2, b->sizes[0]),
                    sz(s3, b->sizes[1]));
    tt_size osz[3] = {a->sizes[0], a->sizes[1], b->sizes[2]};
    return product(&BMM, a, b, NULL, 1, a->sizes, 3, osz);
}

/* The message for mismatched inner sizes, phrased as PyTorch's matmul
 * phrases it for the path it takes (dot, mv, mm on folded rows, bmm). */
static tt_tensor *inner_mismatch(const names *nm, int d1, int d2, const tt_tensor *ma,
                                 const tt_tensor *mb, int nb, const tt_size *bs)
{
    szbuf s0, s1, s2, s3;
    tt_size n = ma->sizes[ma->ndim - 2], k1 = ma->sizes[ma->ndim - 1];
    tt_size k2 = mb->sizes[mb->ndim - 2], m = mb->sizes[mb->ndim - 1];
    tt_size batch = prod(nb, bs);
    if (d1 == 1 && d2 == 1)
        return fail(nm, 2, TT_ESHAPE, "inconsistent tensor size, expected tensor [%s] and src "
                                      "[%s] to have the same number of elements, but got %s "
                                      "and %s elements respectively",
                    sz(s0, k1), sz(s1, k2), sz(s2, k1), sz(s3, k2));
    if (d2 == 1 || (d1 == 1 && d2 >= 3)) {
        /* Matrix-vector, the batch folded into the matrix's rows (for a
         * vector on the left, into the rows of the transposed batch). */
        tt_size rows = tt_sym_mul(batch, d2 == 1 ? n : m);
        szbuf s4;
        return fail(nm, 2, TT_ESHAPE, "size mismatch, got input (%s), mat (%sx%s), vec (%s)",
                    sz(s0, rows), sz(s1, rows), sz(s2, d2 == 1 ? k1 : k2),
                    sz(s4, d2 == 1 ? k2 : k1));
    }
    if (d2 == 2)
        return fail(nm, 2, TT_ESHAPE, "mat1 and mat2 shapes cannot be multiplied (%sx%s and %sx%s)",
                    sz(s0, tt_sym_mul(batch, n)), sz(s1, k1), sz(s2, k2), sz(s3, m));
    return fail(nm, 2, TT_ESHAPE, "Expected size for first two dimensions of batch2 tensor "
                                  "to be: [%s, %s] but got: [%s, %s].",
                sz(s0, batch), sz(s1, k1), sz(s2, batch), sz(s3, k2));
}

/* numpy's matmul: 1-d x 1-d is a dot product (0-dim result), a 1-d operand
 * is a row on the left and a column on the right (its dim dropped from the
 * result), and dims before the last two are batch dims that broadcast.
 * `bias` (linear's) is added to the result; may be NULL. */
// a is (..., n, k) or (k); b is (..., k, m) or (k); out is (batch..., n, m) without the 1-d dims
static tt_tensor *matmul_impl(const names *nm, const tt_tensor *a, const tt_tensor *b,
                              const tt_tensor *bias)
{
    int d1 = a->ndim, d2 = b->ndim;
    if (d1 == 0 || d2 == 0)
        return fail(nm, d1 == 0 ? 1 : 2, TT_ESHAPE, "both arguments to matmul need to be "
                                                   "at least 1D, but they are %dD and %dD",
                    d1, d2);
    if (!check_dtypes(nm, a, b))
        return NULL;
    tt_tensor ma, mb;
    as_matrix(&ma, a, true);
    as_matrix(&mb, b, false);
    int nba = ma.ndim - 2, nbb = mb.ndim - 2, nb = nba > nbb ? nba : nbb;
    tt_size bs[TT_MAX_DIMS];
    for (int d = 0; d < nb; d++) {
        int ia = d - (nb - nba), ib = d - (nb - nbb);
        tt_size sa = ia >= 0 ? ma.sizes[ia] : 1, sb = ib >= 0 ? mb.sizes[ib] : 1;
        if (tt__sz_is_one(sa) || tt__sz_eq(sa, sb)) {
            bs[d] = sb;
        } else if (tt__sz_is_one(sb)) {
            bs[d] = sa;
        } else {
            szbuf s0, s1;
            return fail(nm, 2, TT_ESHAPE, "The size of tensor a (%s) must match the size of "
                                          "tensor b (%s) at non-singleton dimension %d",
                        sz(s0, sa), sz(s1, sb), d);
        }
    }
    if (!tt__sz_eq(ma.sizes[nba + 1], mb.sizes[nbb]))
        return inner_mismatch(nm, d1, d2, &ma, &mb, nb, bs);
    tt_size osz[TT_MAX_DIMS + 1];
    int ond = nb;
    memcpy(osz, bs, sizeof(tt_size) * (size_t)nb);
    if (d1 >= 2)
        osz[ond++] = ma.sizes[nba];
    if (d2 >= 2)
        osz[ond++] = mb.sizes[nbb + 1];
    return product(nm, &ma, &mb, bias, nb, bs, ond, osz);
}

/* addmm(self, mat1, mat2, beta, alpha) = beta self + alpha mat1 @ mat2,
 * self broadcast to the product's [n, m]; with beta 0, self is not read. */
static const names ADDMM = {TT_OP_ADDMM, "mat1", "mat2"};
static tt_tensor *addmm_impl(const tt_tensor *self, const tt_tensor *m1, const tt_tensor *m2,
                             double beta, double alpha)
{
    const char *op = tt__op_label(TT_OP_ADDMM);
    szbuf s0, s1, s2, s3;
    for (int i = 0; i < 2; i++) {
        const tt_tensor *m = i ? m2 : m1;
        if (m->ndim != 2) {
            tt_error(TT_ESHAPE, "%s: argument '%s' (#%d): expected a matrix (2-D), got a "
                                "%dD tensor", op, i ? "mat2" : "mat1", 2 + i, m->ndim);
            return NULL;
        }
    }
    if (self->dtype != m1->dtype || !check_dtypes(&ADDMM, m1, m2)) {
        if (self->dtype != m1->dtype)
            tt_error(TT_EDTYPE, "%s: argument 'self' (#1): expected the dtype of mat1 (%s), got "
                                "%s", op, tt_dtype_name((tt_dtype)m1->dtype),
                     tt_dtype_name((tt_dtype)self->dtype));
        return NULL;
    }
    if (!tt__sz_eq(m1->sizes[1], m2->sizes[0])) {
        tt_error(TT_ESHAPE, "%s: argument 'mat2' (#3): mat1 and mat2 shapes cannot be "
                            "multiplied (%sx%s and %sx%s)", op, sz(s0, m1->sizes[0]),
                 sz(s1, m1->sizes[1]), sz(s2, m2->sizes[0]), sz(s3, m2->sizes[1]));
        return NULL;
    }
    tt_size osz[2] = {m1->sizes[0], m2->sizes[1]};
    bool fits = self->ndim <= 2;
    for (int i = 0; fits && i < self->ndim; i++) {
        tt_size s = self->sizes[i], o = osz[2 - self->ndim + i];
        fits = tt__sz_is_one(s) || tt__sz_eq(s, o);
    }
    if (!fits) {
        char a[256], b[256];
        tt_error(TT_ESHAPE, "%s: argument 'self' (#1): shape %s cannot be broadcast to the "
                            "product's shape %s", op, tt_shape_str(self, a, sizeof a),
                 shape_str(2, osz, b, sizeof b));
        return NULL;
    }
    return product_scaled(&ADDMM, m1, m2, self, 0, NULL, 2, osz, beta, alpha);
}

/* PyTorch's addmm-style linear: x @ w^T + bias, with w^T a stack alias of
 * the weight (its strides swapped), so a contiguous weight reaches BLAS as
 * a Trans operand and is never copied. A 1-d weight is a vector (w.t() of
 * a vector is itself), as in PyTorch; unlike PyTorch we also take one with
 * a bias for a 2-d input, which PyTorch's addmm fast path refuses only as
 * an artifact of that path. */
// x is (..., in), w is (out, in), bias is (out); out is (..., out)
static tt_tensor *linear_impl(const tt_tensor *x, const tt_tensor *w, const tt_tensor *bias)
{
    if (w->ndim != 1 && w->ndim != 2)
        return fail(&LINEAR, 2, TT_ESHAPE, "weight must be a matrix [out_features, "
                                           "in_features] or a vector, got a %dD tensor",
                    w->ndim);
    tt_tensor wt;
    memcpy(&wt, w, sizeof wt);
    if (w->ndim == 2) {
        wt.sizes[0] = w->sizes[1], wt.sizes[1] = w->sizes[0];
        wt.strides[0] = w->strides[1], wt.strides[1] = w->strides[0];
    }
    return matmul_impl(&LINEAR, x, &wt, bias);
}

/* --------------------------------------------------------------- kernels */

static tt_status two_tensors(tt_frame *f, tt_tensor **a, tt_tensor **b)
{
    tt_status st = tt_arg_tensor(f, 0, a);
    return st ? st : tt_arg_tensor(f, 1, b);
}

static tt_status mm_kernel(tt_frame *f)
{
    tt_tensor *a, *b;
    tt_status st = two_tensors(f, &a, &b);
    if (st)
        return st;
    tt_tensor *r = mm_impl(a, b);
    return r ? tt_return(f, 0, r) : tt_errcode();
}

static tt_status bmm_kernel(tt_frame *f)
{
    tt_tensor *a, *b;
    tt_status st = two_tensors(f, &a, &b);
    if (st)
        return st;
    tt_tensor *r = bmm_impl(a, b);
    return r ? tt_return(f, 0, r) : tt_errcode();
}

static tt_status matmul_kernel(tt_frame *f)
{
    tt_tensor *a, *b;
    tt_status st = two_tensors(f, &a, &b);
    if (st)
        return st;
    tt_tensor *r = matmul_impl(&MATMUL, a, b, NULL);
    return r ? tt_return(f, 0, r) : tt_errcode();
}

static tt_status addmm_kernel(tt_frame *f)
{
    tt_tensor *self, *m1, *m2;
    double beta = 1, alpha = 1;
    tt_status st;
    if ((st = tt_arg_tensor(f, 0, &self)) || (st = tt_arg_tensor(f, 1, &m1)) ||
        (st = tt_arg_tensor(f, 2, &m2)) || (st = tt_arg_scalar(f, 3, &beta, NULL)) ||
        (st = tt_arg_scalar(f, 4, &alpha, NULL)))
        return st;
    tt_tensor *r = addmm_impl(self, m1, m2, beta, alpha);
    return r ? tt_return(f, 0, r) : tt_errcode();
}

static tt_status linear_kernel(tt_frame *f)
{
    tt_tensor *x, *w, *bias = NULL;
    tt_status st = two_tensors(f, &x, &w);
    if (!st)
        st = tt_arg_tensor(f, 2, &bias);
    if (st)
        return st;
    tt_tensor *r = linear_impl(x, w, bias);
    return r ? tt_return(f, 0, r) : tt_errcode();
}

/* ------------------------------------------------------------ derivatives */

/* Written with ops (traced like the forward). A gradient of broadcast
 * batch dims is summed back to each input's shape by the engine. */

static tt_status setup_two(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                           const tt_value *out, int nout)
{
    (void)out, (void)nout;
    tt_tensor *ts[3] = {in[0].u.t, in[1].u.t, nin > 2 && in[2].kind == TT_V_TENSOR ? in[2].u.t : NULL};
    return tt_ctx_save_for_backward(ctx, 2, ts);
}


/* matmul (and mm, bmm): with 1-d operands lifted to matrices as the
 * forward does (a [k] as [1, k], b [k] as [k, 1]), dA = G B^T and
 * dB = A^T G, then the added dims dropped again. */
static tt_status matmul_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                 tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    tt_tensor *a = tt_ctx_saved(ctx, 0), *b = tt_ctx_saved(ctx, 1);
    bool a1 = tt_ndim(a) == 1, b1 = tt_ndim(b) == 1;
    tt_status st = TT_OK;
    tt_scope_begin();
    tt_tensor *A = a1 ? tt_unsqueeze(a, 0) : a, *B = b1 ? tt_unsqueeze(b, -1) : b, *G = g[0];
    if (a1) /* [..., m] -> [..., 1, m]; a 0-dim result (both 1-d) -> [1] */
        G = tt_unsqueeze(G, b1 ? 0 : -2);
    if (b1)
        G = tt_unsqueeze(G, -1);
    if (tt_ctx_needs_input_grad(ctx, 0)) {
        tt_tensor *da = tt_matmul(G, tt_transpose(B, -1, -2));
        if (da && a1)
            da = tt_squeeze(da, -2);
        st = tt__put_grad(ctx, gi, 0, tt_keep(da));
    }
    if (!st && tt_ctx_needs_input_grad(ctx, 1)) {
        tt_tensor *db = tt_matmul(tt_transpose(A, -1, -2), G);
        if (db && b1)
            db = tt_squeeze(db, -1);
        st = tt__put_grad(ctx, gi, 1, tt_keep(db));
    }
    tt_scope_end();
    return st;
}

/* linear: y = x W^T + b: dx = g W, dW = g^T x over all leading dims,
 * db = g (the engine sums it to [out]). */
/* addmm: mat1, mat2, and beta and alpha. */
static tt_status setup_addmm(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                             const tt_value *out, int nout)
{
    (void)out, (void)nout;
    double beta = 1, alpha = 1;
    if (nin > 3)
        beta = in[3].kind == TT_V_FLOAT ? in[3].u.f : in[3].kind == TT_V_BOOL ? in[3].u.b
                                                                              : (double)in[3].u.i;
    if (nin > 4)
        alpha = in[4].kind == TT_V_FLOAT ? in[4].u.f : in[4].kind == TT_V_BOOL ? in[4].u.b
                                                                               : (double)in[4].u.i;
    tt_status st = tt_ctx_save_float(ctx, "beta", beta);
    if (!st)
        st = tt_ctx_save_float(ctx, "alpha", alpha);
    return st ? st : tt_ctx_save_for_backward(ctx, 2, (tt_tensor *[]){in[1].u.t, in[2].u.t});
}

/* derivatives.yaml: self: beta g (summed to self's shape by the engine);
 * mat1: alpha g mat2^T; mat2: alpha mat1^T g. */
static tt_status addmm_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    double beta = 1, alpha = 1;
    tt_status st = tt_ctx_get_float(ctx, "beta", &beta);
    if (!st)
        st = tt_ctx_get_float(ctx, "alpha", &alpha);
    if (st)
        return st;
    tt_tensor *m1 = tt_ctx_saved(ctx, 0), *m2 = tt_ctx_saved(ctx, 1);
    tt_scope_begin();
    if (tt_ctx_needs_input_grad(ctx, 0))
        st = tt__put_grad(ctx, gi, 0, tt_keep(tt_mul_scalar(g[0], beta)));
    if (!st && tt_ctx_needs_input_grad(ctx, 1))
        st = tt__put_grad(ctx, gi, 1, tt_keep(tt_mul_scalar(tt_mm(g[0], tt_t(m2)), alpha)));
    if (!st && tt_ctx_needs_input_grad(ctx, 2))
        st = tt__put_grad(ctx, gi, 2, tt_keep(tt_mul_scalar(tt_mm(tt_t(m1), g[0]), alpha)));
    tt_scope_end();
    return st;
}

static tt_status setup_linear(tt_autograd_ctx *ctx, const tt_value *in, int nin,
                              const tt_value *out, int nout)
{
    return setup_two(ctx, in, nin, out, nout);
}

static tt_status linear_backward(tt_autograd_ctx *ctx, tt_tensor *const *g, int ng,
                                 tt_tensor **gi, int ni)
{
    (void)ng, (void)ni;
    tt_tensor *x = tt_ctx_saved(ctx, 0), *w = tt_ctx_saved(ctx, 1);
    tt_status st = TT_OK;
    tt_scope_begin();
    if (tt_ndim(w) == 1) {
        /* y = x @ w (out dim dropped): dx = g[..., None] * w, dw = g[...,
         * None] * x summed over the leading dims (by the engine, as for a
         * broadcast operand). */
        tt_tensor *g1 = tt_unsqueeze(g[0], -1);
        if (tt_ctx_needs_input_grad(ctx, 0))
            st = tt__put_grad(ctx, gi, 0, tt_keep(tt_mul(g1, w)));
        if (!st && tt_ctx_needs_input_grad(ctx, 1))
            st = tt__put_grad(ctx, gi, 1, tt_keep(tt_mul(g1, x)));
    } else {
        if (tt_ctx_needs_input_grad(ctx, 0))
            st = tt__put_grad(ctx, gi, 0, tt_keep(tt_matmul(g[0], w)));
        if (!st && tt_ctx_needs_input_grad(ctx, 1)) {
            /* Flatten the leading dims: [N, out]^T @ [N, in] -> [out, in];
             * a 1-d x is one row. */
            int64_t out_f = tt_sizes(w)[0], in_f = tt_sizes(w)[1];
            tt_tensor *g2 = tt_reshape(g[0], 2, (int64_t[]){-1, out_f});
            tt_tensor *x2 = tt_reshape(x, 2, (int64_t[]){-1, in_f});
            st = tt__put_grad(ctx, gi, 1, tt_keep(tt_mm(tt_t(g2), x2)));
        }
    }
    if (!st && tt_ctx_num_inputs(ctx) > 2 && tt_ctx_needs_input_grad(ctx, 2))
        st = tt__put_grad(ctx, gi, 2, tt_retain(g[0]));
    tt_scope_end();
    return st;
}

#undef TT__FAMILY_LINALG
#define TT__FAMILY_LINALG TT__ROW
static const tt__builtin_row rows[] = {TT__FAMILY_ROWS};

tt_status tt__register_linalg(tt_library *lib)
{
    return TT__DEFINE_ROWS(lib, rows);
}

/* ---------------------------------------------------------- typed wrappers */

/* The fast path: no mode, grad or fake tensor in play, so the op's work
 * runs directly; otherwise the call goes through the dispatcher. */
tt_tensor *tt_mm(const tt_tensor *a, const tt_tensor *b)
{
    if (tt__fast_path(TT_OP_MM, 2, (const tt_tensor *[]){a, b}))
        return mm_impl(a, b);
    return tt__call_op(TT_OP_MM, TT_ARGS(tt_v_tensor(a), tt_v_tensor(b)));
}

tt_tensor *tt_bmm(const tt_tensor *a, const tt_tensor *b)
{
    if (tt__fast_path(TT_OP_BMM, 2, (const tt_tensor *[]){a, b}))
        return bmm_impl(a, b);
    return tt__call_op(TT_OP_BMM, TT_ARGS(tt_v_tensor(a), tt_v_tensor(b)));
}

tt_tensor *tt_matmul(const tt_tensor *a, const tt_tensor *b)
{
    if (tt__fast_path(TT_OP_MATMUL, 2, (const tt_tensor *[]){a, b}))
        return matmul_impl(&MATMUL, a, b, NULL);
    return tt__call_op(TT_OP_MATMUL, TT_ARGS(tt_v_tensor(a), tt_v_tensor(b)));
}

tt_tensor *tt_addmm(const tt_tensor *self, const tt_tensor *mat1, const tt_tensor *mat2,
                    double beta, double alpha)
{
    return tt__call_op(TT_OP_ADDMM, TT_ARGS(tt_v_tensor(self), tt_v_tensor(mat1),
                                            tt_v_tensor(mat2), scalar_value(beta),
                                            scalar_value(alpha)));
}

tt_tensor *tt_linear(const tt_tensor *x, const tt_tensor *w, const tt_tensor *b)
{
    /* A NULL bias is None, not a missing tensor: leave it out of the
     * triviality test (which refuses NULL). */
    if (tt__fast_path(TT_OP_LINEAR, b ? 3 : 2, (const tt_tensor *[]){x, w, b}))
        return linear_impl(x, w, b);
    return tt__call_op(TT_OP_LINEAR, TT_ARGS(tt_v_tensor(x), tt_v_tensor(w),
                                    b ? tt_v_tensor(b) : tt_v_none()));
}
