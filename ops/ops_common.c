/* Registration of the built-in library and the helpers op families share. */
#include "ops_impl.h"
#include "vec_math.h"

#include <assert.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* ------------------------------------------------------ streaming stores */

/* The last-level cache's size from Linux's sysfs (which reads it right
 * under a hypervisor where glibc's sysconf, from cpuid, can be 10x off);
 * 32 MB when it does not say. */
static int64_t last_level_cache_bytes(void)
{
    int64_t bytes = (int64_t)32 << 20;
    FILE *f = fopen("/sys/devices/system/cpu/cpu0/cache/index3/size", "r");
    if (f) {
        long long v = 0;
        char unit = 0;
        if (fscanf(f, "%lld%c", &v, &unit) >= 1 && v > 0)
            bytes = (int64_t)v << (unit == 'K' ? 10 : unit == 'M' ? 20 : 0);
        fclose(f);
    }
    return bytes;
}

bool tt__stream_worthwhile(int64_t bytes)
{
#if defined(__SSE2__)
    static _Atomic int64_t llc; /* two first calls may race: both store the same */
    if (llc == 0)
        llc = last_level_cache_bytes();
    return bytes > llc;
#else
    (void)bytes;
    return false;
#endif
}

void tt__stream_copy(char *dst, const char *src, size_t bytes)
{
#if defined(__SSE2__)
    if (tt__cpu_vector_level() == 2 && tt__stream_copy_avx512(dst, src, bytes))
        return;
    size_t head = (size_t)(-(uintptr_t)dst & 15); /* to the first aligned byte */
    if (head > bytes)
        head = bytes;
    memcpy(dst, src, head);
    dst += head, src += head, bytes -= head;
    for (; bytes >= 16; dst += 16, src += 16, bytes -= 16)
        _mm_stream_si128((__m128i *)(void *)dst, _mm_loadu_si128((const __m128i *)(const void *)src));
    memcpy(dst, src, bytes);
#else
    memcpy(dst, src, bytes);
#endif
}

void tt__stream_fence(void)
{
#if defined(__SSE2__)
    _mm_sfence();
#endif
}

/* ------------------------------------------------------------ the library */

static tt_library *builtin_lib;
static tt_status init_status;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static void init(void)
{
    tt_status (*families[])(tt_library *) = {
        tt__register_views,  tt__register_binary, tt__register_unary,
        tt__register_where_clamp, tt__register_reduce, tt__register_linalg,
        tt__register_shape, tt__register_loss, tt__register_factories,
        tt__register_embedding, tt__register_normalization, tt__register_attention,
        tt__register_optimizer, tt__register_conv, tt__register_pooling,
        tt__register_pad_upsample, tt__register_activation, tt__register_dropout,
        tt__register_channel_norm, tt__register_indexing, tt__register_advanced_index,
        tt__register_sort_scan, tt__register_stats, tt__register_random,
        tt__register_distance, tt__register_grid_sample, tt__register_pool3d,
    };
    builtin_lib = tt__builtin_library_new();
    if (!builtin_lib) {
        init_status = tt_errcode();
        return;
    }
    for (size_t i = 0; i < sizeof families / sizeof families[0]; i++)
        if ((init_status = families[i](builtin_lib)))
            return;
    /* Every id of the table has its op: a row that no family expanded
     * would leave a NULL that built-ins call through. */
    for (int id = 0; id < TT_OP_COUNT; id++)
        assert(tt__builtins[id]);
}

tt_status tt_ops_init(void)
{
    pthread_once(&init_once, init);
    if (init_status)
        return tt_error(init_status, "tt_ops_init: registering the built-in ops "
                                     "failed: %s", tt_errmsg());
    return TT_OK;
}

/* The built-ins are there as soon as the library is loaded, so that user
 * code never has to remember an init call. The library is never freed. */
__attribute__((constructor)) static void load(void)
{
    if (tt_ops_init())
        fprintf(stderr, "tensortrace: %s\n", tt_errmsg());
}

tt_status tt__define_builtins(tt_library *lib, const tt__builtin_row *rows, int n)
{
    for (int i = 0; i < n; i++) {
        tt_op *op = tt_custom_op_define(lib, &rows[i].spec);
        if (!op)
            return tt_errcode();
        tt__set_builtin(rows[i].id, op, rows[i].flags);
    }
    return TT_OK;
}

/* ---------------------------------------------------------------- helpers */

tt_tensor *tt__ops_new(bool fake, int ndim, const tt_size *sizes,
                       const tt_size *strides, tt_dtype dt)
{
    return tt__empty_impl(ndim, sizes, strides, dt, fake);
}

bool tt__any_fake(int n, const tt_tensor *const *ts)
{
    for (int i = 0; i < n; i++)
        if (ts[i] && ts[i]->storage->fake)
            return true;
    return false;
}

tt_status tt__broadcast(const char *op, int n, const tt_tensor *const *ts,
                        const char *const *names, const int *argno, int *ndim,
                        tt_size *sizes)
{
    int nd = 0;
    for (int i = 0; i < n; i++)
        if (ts[i]->ndim > nd)
            nd = ts[i]->ndim;
    for (int d = 0; d < nd; d++)
        sizes[d] = 1;
    for (int i = 0; i < n; i++) {
        const tt_tensor *t = ts[i];
        for (int k = 0; k < t->ndim; k++) {
            int d = nd - t->ndim + k;
            tt_size s = t->sizes[k];
            /* Under a symbolic trace these comparisons become guards. */
            if (tt__sz_is_one(s))
                continue;
            if (tt__sz_is_one(sizes[d])) {
                sizes[d] = s;
            } else if (!tt__sz_eq(sizes[d], s)) {
                char a[256], b[256];
                /* The shape so far, from the earlier arguments. */
                tt_tensor tmp;
                memset(&tmp, 0, sizeof tmp);
                tmp.ndim = (int8_t)nd;
                memcpy(tmp.sizes, sizes, sizeof(tt_size) * (size_t)nd);
                return tt_error(TT_ESHAPE, "%s: argument '%s' (#%d): shape %s is not "
                                           "broadcastable to %s", op, names[i],
                                argno[i], tt_shape_str(t, a, sizeof a),
                                tt_shape_str(&tmp, b, sizeof b));
            }
        }
    }
    *ndim = nd;
    return TT_OK;
}

void tt__broadcast_alias(tt_tensor *out, const tt_tensor *t, int ndim,
                         const tt_size *sizes)
{
    memcpy(out, t, sizeof *out);
    out->ndim = (int8_t)ndim;
    for (int d = ndim - 1; d >= 0; d--) {
        int k = d - (ndim - t->ndim);
        out->sizes[d] = sizes[d];
        out->strides[d] = k >= 0 && tt__sz_eq(t->sizes[k], sizes[d]) ? t->strides[k] : 0;
    }
}

void tt__elementwise_strides(int n, const tt_tensor *const *ins, int ndim,
                             const tt_size *sizes, tt_size *strides)
{
    /* Fast setups first, as TensorIterator: all inputs contiguous (or
     * nothing to follow) gives a contiguous output; inputs all of the
     * output's shape, dense and with equal strides give those strides. */
    bool all_contig = true, same_dense = true;
    for (int i = 0; i < n; i++)
        all_contig = all_contig && (ins[i]->flags & TT_TF_CONTIGUOUS);
    if (all_contig || n == 0 || ndim <= 1) { /* (the eager hot path: first) */
        tt__contiguous_strides(ndim, sizes, strides);
        return;
    }
    for (int i = 0; i < n; i++) {
        bool full = ins[i]->ndim == ndim;
        for (int d = 0; full && d < ndim; d++)
            full = tt__sz_eq(ins[i]->sizes[d], sizes[d]);
        same_dense = same_dense && full && tt__is_non_overlapping_and_dense(ins[i]) &&
                     memcmp(ins[i]->strides, ins[0]->strides, sizeof(tt_size) * (size_t)ndim) == 0;
    }
    if (same_dense) {
        memcpy(strides, ins[0]->strides, sizeof(tt_size) * (size_t)ndim);
        return;
    }
    /* Otherwise lay the output out in the order of the inputs' broadcast
     * strides (the runtime's preserve-format rule, over several inputs). */
    tt_tensor al[8];
    const tt_size *bs[8];
    int na = n < 8 ? n : 8;
    for (int i = 0; i < na; i++) {
        tt__broadcast_alias(&al[i], ins[i], ndim, sizes);
        bs[i] = al[i].strides;
    }
    tt__dense_strides_in_order(na, bs, ndim, sizes, strides);
}

/* PyTorch's combine_categories(higher, lower). */
static int combine(int higher, int lower) /* dtypes, -1 = undefined */
{
    if (higher < 0)
        return lower;
    if (lower < 0)
        return higher;
    if (tt_dtype_is_float((tt_dtype)higher))
        return higher;
    if (higher == TT_BOOL || tt_dtype_is_float((tt_dtype)lower))
        return (int)tt_promote_types((tt_dtype)higher, (tt_dtype)lower);
    return higher;
}

tt_dtype tt__result_type(int n, const tt_tensor *const *ts, int nscalars,
                         const tt_value *scalars)
{
    int dim = -1, zero = -1, wrapped = -1;
    for (int i = 0; i < n; i++) {
        if (!ts[i])
            continue;
        int *slot = ts[i]->ndim > 0 ? &dim : &zero;
        *slot = *slot < 0 ? ts[i]->dtype : (int)tt_promote_types((tt_dtype)*slot, (tt_dtype)ts[i]->dtype);
    }
    for (int i = 0; i < nscalars; i++) {
        /* Python numbers: float -> the default float dtype (f32). */
        int d = scalars[i].kind == TT_V_FLOAT ? TT_F32 : scalars[i].kind == TT_V_BOOL ? TT_BOOL : TT_I64;
        wrapped = wrapped < 0 ? d : (int)tt_promote_types((tt_dtype)wrapped, (tt_dtype)d);
    }
    int r = combine(dim, combine(zero, wrapped));
    return r < 0 ? TT_F32 : (tt_dtype)r;
}

int tt__op_dim(const char *op, const char *arg, int argno, int64_t dim, int ndim)
{
    int n = ndim > 0 ? ndim : 1;
    if (dim < -n || dim >= n) {
        tt_error(TT_EINVAL, "%s: argument '%s' (#%d): dimension out of range (expected "
                            "to be in range of [%d, %d], but got %lld)", op, arg, argno,
                 -n, n - 1, (long long)dim);
        return -1;
    }
    return (int)(dim < 0 ? dim + n : dim);
}

bool tt__channels_last_like(const tt_tensor *t)
{
    if (tt_ndim(t) != 4)
        return false;
    const tt_size *sz = tt_sizes(t), *st = tt_strides(t);
    if (tt__sz_eq(st[1], 0))
        return false;
    tt_size min = 0;
    static const int order[4] = {1, 3, 2, 0};
    for (int i = 0; i < 4; i++) {
        int d = order[i];
        if (tt__sz_eq(sz[d], 0) || tt__sz_lt(st[d], min))
            return false;
        if (d == 0 && tt__sz_eq(min, st[1]))
            return false;
        min = st[d];
        if (tt__sz_gt(sz[d], 1))
            min = tt_sym_mul(min, sz[d]);
    }
    return true;
}

void tt__channels_last_strides(int nd, const tt_size *sizes, tt_size *strides)
{
    /* C moves fastest, then the spatial dims from the last, then N. */
    tt_size step = 1;
    strides[1] = step;
    if (tt__sz_gt(sizes[1], 1))
        step = tt_sym_mul(step, sizes[1]);
    for (int d = nd - 1; d >= 2; d--) {
        strides[d] = step;
        if (tt__sz_gt(sizes[d], 1))
            step = tt_sym_mul(step, sizes[d]);
    }
    strides[0] = step;
}

void tt__nchw_out_strides(const tt_tensor *like, int nd, const tt_size *sizes, tt_size *strides)
{
    if (nd == 4 && tt__channels_last_like(like)) {
        strides[1] = 1;
        strides[3] = sizes[1];
        strides[2] = tt_sym_mul(strides[3], sizes[3]);
        strides[0] = tt_sym_mul(strides[2], sizes[2]);
    } else {
        tt__contiguous_strides(nd, sizes, strides);
    }
}
