/* f32 convolution passes through oneDNN primitives (Debian's libdnnl 2.6,
 * built with OpenMP threading).
 *
 * Each pass (forward, backward-data, backward-weights) of one geometry is a
 * convolution primitive created with format_tag_any, so oneDNN picks its
 * fastest layout (blocked nChw16c and friends on AVX-512), plus a reorder
 * primitive for each operand whose chosen layout differs from our plain
 * NCHW / OIHW one, as PyTorch's mkldnn path does. The primitives of a pass
 * are created once and kept in a small cache keyed by (pass, geometry):
 * creation costs milliseconds (oneDNN generates code), so a training step
 * replayed from a compiled plan creates none. The cache is thread-safe; an
 * entry in use is never destroyed under its user (reference counted).
 *
 * Memory: every primitive runs in user scratchpad mode, its scratchpad and
 * the reordered operands come from our caching allocator
 * (tt__alloc_storage), so oneDNN allocates no tensors of its own and
 * tt_set_allocator sees everything.
 *
 * Threads: Debian's oneDNN runs on OpenMP, whose idle threads spin (libgomp's
 * default OMP_WAIT_POLICY, fixed when libgomp loads, before any code of
 * ours runs): alternating with our pool and OpenBLAS's threads on the same
 * cores, a 0.5 ms convolution took 30 ms. So oneDNN's OpenMP regions run
 * on one thread (omp_set_num_threads(1) on the calling thread for the
 * call, libgomp then starts no workers), and the parallelism is ours: the batch is cut
 * into tt_get_num_threads() chunks, each a primitive call on one of our
 * pool threads (backward-weights chunks write partial gradients, added in
 * chunk order). This also keeps the ThreadSanitizer build clean: no
 * uninstrumented libgomp threads run.
 *
 * A primitive oneDNN cannot create for a geometry is not an error: the
 * caller falls back to im2col + GEMM. A failure while executing one is a tt
 * error naming the pass and oneDNN's status. */
#include "conv_impl.h"
#include "tt_nn.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#include <dnnl.h>

typedef struct {
    int pass; /* CONV_PASS_* */
    int64_t N, C, O, G, in[2], out[2], k[2], s[2], p[2], d[2];
    /* 0, or the channels of the whole output when this pass computes a
     * slice of O of them (backward-weights cut by output channel): the
     * output gradient is then a strided view of the whole one. */
    int64_t o_total;
} prim_key;

/* One operand of a pass: its execution argument, the layout the primitive
 * wants, and the reorder between it and ours (NULL when they agree). */
typedef struct {
    int arg;
    bool output;
    dnnl_memory_desc_t user, prim;
    dnnl_primitive_t reorder;
    size_t reorder_scratch;
} prim_operand;

typedef struct prim_entry {
    prim_key key;
    dnnl_primitive_t prim;
    size_t scratch;
    prim_operand ops[3];
    int refs; /* the cache's one, plus one per user */
    struct prim_entry *next;
    char impl[64]; /* oneDNN's implementation name, for TT_LOG */
} prim_entry;

/* At most this many passes stay cached (ResNet-18's training step needs
 * about 60); the oldest is dropped beyond it. */
#define CACHE_MAX 128

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static prim_entry *cache_head;
static int cache_len;
static atomic_llong primitives_created;
static _Atomic int backend_choice; /* tt_conv_backend */

static dnnl_engine_t engine;
static bool engine_ok;
static pthread_once_t engine_once = PTHREAD_ONCE_INIT;
static void (*omp_set)(int);
static int (*omp_get)(void);

static void engine_init(void)
{
    engine_ok = dnnl_engine_create(&engine, dnnl_cpu, 0) == dnnl_success;
    /* libgomp is loaded with libdnnl; looked up so we need no -fopenmp */
    *(void **)&omp_set = dlsym(RTLD_DEFAULT, "omp_set_num_threads");
    *(void **)&omp_get = dlsym(RTLD_DEFAULT, "omp_get_max_threads");
}

static char version_buf[64];

static void version_fill(void)
{
    const dnnl_version_t *v = dnnl_version();
    snprintf(version_buf, sizeof version_buf, "oneDNN %d.%d.%d (%s)", v->major, v->minor,
             v->patch, v->cpu_runtime == DNNL_RUNTIME_OMP ? "OpenMP" : "threadpool");
}

const char *tt_onednn_version(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, version_fill);
    return version_buf;
}

int64_t tt_debug_conv_primitives(void) { return atomic_load(&primitives_created); }

void tt_debug_conv_backend(tt_conv_backend b) { atomic_store(&backend_choice, (int)b); }

int conv_backend(void) { return atomic_load(&backend_choice); }

/* ----------------------------------------------------------- creation */

static void entry_destroy(prim_entry *e)
{
    if (!e)
        return;
    if (e->prim)
        dnnl_primitive_destroy(e->prim);
    for (int i = 0; i < 3; i++)
        if (e->ops[i].reorder)
            dnnl_primitive_destroy(e->ops[i].reorder);
    tt__free(e);
}

static void dims_of(const prim_key *k, dnnl_dims_t src, dnnl_dims_t wei, int *wnd, dnnl_dims_t dst)
{
    src[0] = k->N, src[1] = k->C, src[2] = k->in[0], src[3] = k->in[1];
    dst[0] = k->N, dst[1] = k->O, dst[2] = k->out[0], dst[3] = k->out[1];
    if (k->G > 1) {
        wei[0] = k->G, wei[1] = k->O / k->G, wei[2] = k->C / k->G;
        wei[3] = k->k[0], wei[4] = k->k[1];
        *wnd = 5;
    } else {
        wei[0] = k->O, wei[1] = k->C, wei[2] = k->k[0], wei[3] = k->k[1];
        *wnd = 4;
    }
}

/* The convolution descriptor of pass `pass` over memory descs (format any). */
static dnnl_status_t conv_desc(const prim_key *k, int pass, const dnnl_memory_desc_t *src,
                               const dnnl_memory_desc_t *wei, const dnnl_memory_desc_t *dst,
                               dnnl_convolution_desc_t *cd)
{
    dnnl_dims_t strides = {k->s[0], k->s[1]}, dil = {k->d[0] - 1, k->d[1] - 1};
    dnnl_dims_t pl = {k->p[0], k->p[1]}, pr;
    for (int i = 0; i < 2; i++) /* what makes out = (in + pl + pr - dk) / s + 1 exact */
        pr[i] = (k->out[i] - 1) * k->s[i] + k->d[i] * (k->k[i] - 1) + 1 - k->in[i] - k->p[i];
    switch (pass) {
    case CONV_PASS_FWD:
        return dnnl_dilated_convolution_forward_desc_init(cd, dnnl_forward_training,
                                                          dnnl_convolution_direct, src, wei,
                                                          NULL, dst, strides, dil, pl, pr);
    case CONV_PASS_BWD_DATA:
        return dnnl_dilated_convolution_backward_data_desc_init(
            cd, dnnl_convolution_direct, src, wei, dst, strides, dil, pl, pr);
    default:
        return dnnl_dilated_convolution_backward_weights_desc_init(
            cd, dnnl_convolution_direct, src, wei, NULL, dst, strides, dil, pl, pr);
    }
}

/* Creates the primitives of pass k into e (zeroed); false when oneDNN
 * has none for it (e is then cleared again). No allocation of ours. */
static bool entry_create(prim_entry *e, const prim_key *k)
{
    dnnl_dims_t src_d, wei_d, dst_d;
    int wnd;
    dims_of(k, src_d, wei_d, &wnd, dst_d);
    dnnl_memory_desc_t user[3], any[3]; /* src, weights, dst */
    dnnl_format_tag_t wtag = wnd == 5 ? dnnl_goihw : dnnl_oihw;
    if (dnnl_memory_desc_init_by_tag(&user[0], 4, src_d, dnnl_f32, dnnl_nchw) ||
        dnnl_memory_desc_init_by_tag(&user[1], wnd, wei_d, dnnl_f32, wtag) ||
        (k->o_total ? dnnl_memory_desc_init_by_strides(
                          &user[2], 4, dst_d, dnnl_f32,
                          (dnnl_dims_t){k->o_total * k->out[0] * k->out[1],
                                        k->out[0] * k->out[1], k->out[1], 1})
                    : dnnl_memory_desc_init_by_tag(&user[2], 4, dst_d, dnnl_f32, dnnl_nchw)) ||
        dnnl_memory_desc_init_by_tag(&any[0], 4, src_d, dnnl_f32, dnnl_format_tag_any) ||
        dnnl_memory_desc_init_by_tag(&any[1], wnd, wei_d, dnnl_f32, dnnl_format_tag_any) ||
        dnnl_memory_desc_init_by_tag(&any[2], 4, dst_d, dnnl_f32, dnnl_format_tag_any))
        return false;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t fwd_pd = NULL, pd = NULL;
    dnnl_convolution_desc_t fd, cd;
    bool ok = dnnl_primitive_attr_create(&attr) == dnnl_success &&
              dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user) ==
                  dnnl_success &&
              conv_desc(k, CONV_PASS_FWD, &any[0], &any[1], &any[2], &fd) == dnnl_success &&
              dnnl_primitive_desc_create(&fwd_pd, &fd, attr, engine, NULL) == dnnl_success;
    if (ok && k->pass != CONV_PASS_FWD)
        ok = conv_desc(k, k->pass, &any[0], &any[1], &any[2], &cd) == dnnl_success &&
             dnnl_primitive_desc_create(&pd, &cd, attr, engine, fwd_pd) == dnnl_success;
    else if (ok) {
        pd = fwd_pd;
        fwd_pd = NULL;
    }
    /* the operands per pass: which tensor (0 src, 1 weights, 2 dst), its
     * argument, whether the pass writes it */
    static const struct {
        int which, arg;
        dnnl_query_t q;
        bool output;
    } roles[3][3] = {
        {{0, DNNL_ARG_SRC, dnnl_query_src_md, false},
         {1, DNNL_ARG_WEIGHTS, dnnl_query_weights_md, false},
         {2, DNNL_ARG_DST, dnnl_query_dst_md, true}},
        {{2, DNNL_ARG_DIFF_DST, dnnl_query_diff_dst_md, false},
         {1, DNNL_ARG_WEIGHTS, dnnl_query_weights_md, false},
         {0, DNNL_ARG_DIFF_SRC, dnnl_query_diff_src_md, true}},
        {{0, DNNL_ARG_SRC, dnnl_query_src_md, false},
         {2, DNNL_ARG_DIFF_DST, dnnl_query_diff_dst_md, false},
         {1, DNNL_ARG_DIFF_WEIGHTS, dnnl_query_diff_weights_md, true}},
    };
    for (int i = 0; ok && i < 3; i++) {
        prim_operand *o = &e->ops[i];
        const dnnl_memory_desc_t *pm = dnnl_primitive_desc_query_md(pd, roles[k->pass][i].q, 0);
        ok = pm != NULL;
        if (!ok)
            break;
        o->arg = roles[k->pass][i].arg;
        o->output = roles[k->pass][i].output;
        o->user = user[roles[k->pass][i].which];
        o->prim = *pm;
        if (dnnl_memory_desc_equal(&o->user, &o->prim))
            continue;
        dnnl_primitive_desc_t rpd = NULL;
        const dnnl_memory_desc_t *from = o->output ? &o->prim : &o->user;
        const dnnl_memory_desc_t *to = o->output ? &o->user : &o->prim;
        ok = dnnl_reorder_primitive_desc_create(&rpd, from, engine, to, engine, attr) ==
                 dnnl_success &&
             dnnl_primitive_create(&o->reorder, rpd) == dnnl_success;
        if (ok) {
            atomic_fetch_add(&primitives_created, 1);
            const dnnl_memory_desc_t *sm =
                dnnl_primitive_desc_query_md(rpd, dnnl_query_scratchpad_md, 0);
            o->reorder_scratch = sm ? dnnl_memory_desc_get_size(sm) : 0;
        }
        if (rpd)
            dnnl_primitive_desc_destroy(rpd);
    }
    if (ok) {
        const dnnl_memory_desc_t *sm = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
        e->scratch = sm ? dnnl_memory_desc_get_size(sm) : 0;
        const char *impl = NULL;
        dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
        snprintf(e->impl, sizeof e->impl, "%s", impl ? impl : "?");
        ok = dnnl_primitive_create(&e->prim, pd) == dnnl_success;
        if (ok)
            atomic_fetch_add(&primitives_created, 1);
    }
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    if (fwd_pd)
        dnnl_primitive_desc_destroy(fwd_pd);
    if (attr)
        dnnl_primitive_attr_destroy(attr);
    if (!ok) { /* what was made is dropped: e marks a refused pass */
        if (e->prim)
            dnnl_primitive_destroy(e->prim);
        for (int i = 0; i < 3; i++)
            if (e->ops[i].reorder)
                dnnl_primitive_destroy(e->ops[i].reorder);
        memset(e, 0, sizeof *e);
    }
    return ok;
}

static void entry_unref(prim_entry *e)
{
    pthread_mutex_lock(&cache_lock);
    bool last = --e->refs == 0;
    pthread_mutex_unlock(&cache_lock);
    if (last)
        entry_destroy(e);
}

/* The cached primitives of a pass (a reference the caller drops with
 * entry_unref), created on first use; NULL when oneDNN has none (*st
 * TT_OK) or when out of memory (*st the error). A pass oneDNN refused is
 * remembered too (prim NULL), so it is not tried again. */
static prim_entry *entry_get(const prim_key *k, tt_status *st)
{
    *st = TT_OK;
    pthread_once(&engine_once, engine_init);
    if (!engine_ok)
        return NULL;
    pthread_mutex_lock(&cache_lock);
    prim_entry *prev = NULL;
    for (prim_entry *e = cache_head; e; prev = e, e = e->next)
        if (memcmp(&e->key, k, sizeof *k) == 0) {
            if (prev) { /* most recent first */
                prev->next = e->next;
                e->next = cache_head;
                cache_head = e;
            }
            e->refs++;
            pthread_mutex_unlock(&cache_lock);
            return e->prim ? e : (entry_unref(e), NULL);
        }
    pthread_mutex_unlock(&cache_lock);
    /* created outside the lock: other passes stay usable meanwhile (two
     * threads may both create the same pass; the second is dropped) */
    /* created for one OpenMP thread: oneDNN sizes a primitive's thread
     * split when it is created (jcp.nthr), and would start that many
     * OpenMP threads whatever the count at execution */
    prim_entry *e = tt__calloc(1, sizeof *e);
    if (!e) {
        *st = tt_errcode();
        return NULL;
    }
    int omp_prev = omp_set && omp_get ? omp_get() : 1;
    if (omp_prev != 1)
        omp_set(1);
    entry_create(e, k);
    if (omp_prev != 1)
        omp_set(omp_prev);
    e->key = *k;
    e->refs = 2;
    prim_entry *drop = NULL;
    pthread_mutex_lock(&cache_lock);
    for (prim_entry *o = cache_head; o; o = o->next)
        if (memcmp(&o->key, k, sizeof *k) == 0) { /* another thread won */
            o->refs++;
            drop = e;
            e = o;
            break;
        }
    if (!drop) {
        e->next = cache_head;
        cache_head = e;
        if (++cache_len > CACHE_MAX) { /* drop the oldest */
            prim_entry **pp = &cache_head;
            while ((*pp)->next)
                pp = &(*pp)->next;
            prim_entry *old = *pp;
            *pp = NULL;
            cache_len--;
            if (--old->refs == 0)
                drop = old;
        }
    }
    pthread_mutex_unlock(&cache_lock);
    if (drop) {
        if (drop->refs > 1) /* the loser of the race: ours alone */
            drop->refs = 0;
        entry_destroy(drop);
    }
    if (!e->prim) {
        entry_unref(e);
        return NULL;
    }
    return e;
}

/* ---------------------------------------------------------- execution */

static tt_status dnnl_fail(const char *what, const prim_entry *e, dnnl_status_t s)
{
    static const char *const passes[3] = {"forward", "backward-data", "backward-weights"};
    return tt_error(TT_EINTERNAL, "tt::convolution: oneDNN %s %s failed (dnnl status %d, %s)",
                    passes[e->key.pass], what, (int)s, e->impl);
}

static dnnl_status_t run(dnnl_primitive_t p, dnnl_stream_t stream, int n,
                         const dnnl_exec_arg_t *args)
{
    dnnl_status_t s = dnnl_primitive_execute(p, stream, n, args);
    return s ? s : dnnl_stream_wait(stream);
}

static size_t align64(size_t n) { return (n + 63) & ~(size_t)63; }

/* The bytes one execution of e needs besides the operands: its scratchpad
 * (shared with the reorders') and the operands in the primitive's layouts. */
static size_t entry_bytes(const prim_entry *e)
{
    size_t scratch = e->scratch, total = 0;
    for (int i = 0; i < 3; i++)
        if (e->ops[i].reorder) {
            total += align64(dnnl_memory_desc_get_size(&e->ops[i].prim));
            if (e->ops[i].reorder_scratch > scratch)
                scratch = e->ops[i].reorder_scratch;
        }
    return total + align64(scratch ? scratch : 1);
}

/* Runs pass e over our buffers ptr[i] (in the order of e->ops) with
 * entry_bytes(e) bytes at block. Calls nothing of tt's (it runs on pool
 * threads): returns oneDNN's status and, on failure, what failed. */
static dnnl_status_t entry_exec(const prim_entry *e, void *const ptr[3], char *block,
                                const char **what)
{
    /* oneDNN's OpenMP regions run on one thread: the calling thread (see
     * the top of the file). The thread's own count is restored after, so
     * a user's OpenMP code on the same thread sees no change. */
    int omp_prev = omp_set && omp_get ? omp_get() : 1;
    if (omp_prev != 1)
        omp_set(1);
    size_t off[3], at = 0;
    for (int i = 0; i < 3; i++)
        if (e->ops[i].reorder) {
            off[i] = at;
            at += align64(dnnl_memory_desc_get_size(&e->ops[i].prim));
        }
    char *scratch = block + at;
    size_t scratch_bytes = entry_bytes(e) - at;
    dnnl_stream_t stream = NULL;
    dnnl_memory_t user[3] = {NULL, NULL, NULL}, prim[3] = {NULL, NULL, NULL}, sp = NULL;
    dnnl_memory_desc_t spd;
    dnnl_dims_t spdims = {(dnnl_dim_t)scratch_bytes};
    *what = "set-up";
    dnnl_status_t s = dnnl_stream_create(&stream, engine, dnnl_stream_default_flags);
    if (!s)
        s = dnnl_memory_desc_init_by_tag(&spd, 1, spdims, dnnl_u8, dnnl_a);
    if (!s)
        s = dnnl_memory_create(&sp, &spd, engine, scratch);
    for (int i = 0; i < 3 && !s; i++) {
        s = dnnl_memory_create(&user[i], &e->ops[i].user, engine, ptr[i]);
        if (!s && e->ops[i].reorder)
            s = dnnl_memory_create(&prim[i], &e->ops[i].prim, engine, block + off[i]);
    }
    for (int i = 0; i < 3 && !s; i++) /* inputs into the primitive's layouts */
        if (e->ops[i].reorder && !e->ops[i].output) {
            dnnl_exec_arg_t a[3] = {{DNNL_ARG_FROM, user[i]}, {DNNL_ARG_TO, prim[i]},
                                    {DNNL_ARG_SCRATCHPAD, sp}};
            *what = "reorder";
            s = run(e->ops[i].reorder, stream, 3, a);
        }
    if (!s) {
        dnnl_exec_arg_t a[4];
        for (int i = 0; i < 3; i++)
            a[i] = (dnnl_exec_arg_t){e->ops[i].arg, prim[i] ? prim[i] : user[i]};
        a[3] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, sp};
        *what = "convolution";
        s = run(e->prim, stream, 4, a);
    }
    for (int i = 0; i < 3 && !s; i++) /* the output back into ours */
        if (e->ops[i].reorder && e->ops[i].output) {
            dnnl_exec_arg_t a[3] = {{DNNL_ARG_FROM, prim[i]}, {DNNL_ARG_TO, user[i]},
                                    {DNNL_ARG_SCRATCHPAD, sp}};
            *what = "reorder";
            s = run(e->ops[i].reorder, stream, 3, a);
        }
    for (int i = 0; i < 3; i++) {
        if (user[i])
            dnnl_memory_destroy(user[i]);
        if (prim[i])
            dnnl_memory_destroy(prim[i]);
    }
    if (sp)
        dnnl_memory_destroy(sp);
    if (stream)
        dnnl_stream_destroy(stream);
    if (omp_prev != 1)
        omp_set(omp_prev);
    return s;
}

/* The batch is cut into one chunk per thread (the last may be shorter),
 * each run as its own primitive call on a pool thread; backward-weights
 * chunks write partial gradients, added afterwards in chunk order. A
 * backward-weights pass whose weights outnumber its input's elements
 * (ResNet's later layers: 2.4M weights from 16K inputs) is cut by output
 * channel instead: each chunk reads the whole input and a slice of the
 * output gradient's channels and writes its own rows of the weight
 * gradient, so there is nothing to add (adding the partials cost more
 * than the convolution there). */
typedef struct {
    prim_entry *full, *last; /* the passes of a full chunk and of the last */
    int64_t chunks, per;     /* chunk count, samples per full chunk */
    int64_t step[3];         /* elements per sample of each operand (0: not batched) */
    void *ptr[3];
    char *block;   /* chunks * bytes, then the partial weight gradients */
    size_t bytes;  /* per chunk */
    float *partial; /* backward-weights: chunks - 1 gradients */
    int64_t wnumel;
    dnnl_status_t st[64];
    const char *what[64];
} chunk_plan;

#define MAX_CHUNKS 64

static void chunk_task(int64_t c0, int64_t c1, void *vp)
{
    chunk_plan *p = vp;
    for (int64_t c = c0; c < c1; c++) {
        const prim_entry *e = c == p->chunks - 1 ? p->last : p->full;
        void *ptr[3];
        for (int i = 0; i < 3; i++)
            ptr[i] = (float *)p->ptr[i] + c * p->per * p->step[i];
        if (p->partial && c > 0) /* backward-weights: dw of chunk c */
            ptr[2] = p->partial + (c - 1) * p->wnumel;
        p->st[c] = entry_exec(e, ptr, p->block + c * p->bytes, &p->what[c]);
    }
}

/* dw += the partials, in chunk order. */
static void partial_sum_task(int64_t i0, int64_t i1, void *vp)
{
    const chunk_plan *p = vp;
    float *dw = p->ptr[2];
    for (int64_t i = i0; i < i1; i++) {
        float v = dw[i];
        for (int64_t c = 1; c < p->chunks; c++)
            v += p->partial[(c - 1) * p->wnumel + i];
        dw[i] = v;
    }
}

tt_status conv_dnnl_run(int pass, const conv_geom *g, void *const ptr[3], bool *ran)
{
    *ran = false;
    if (g->N == 0)
        return TT_OK;
    prim_key k;
    memset(&k, 0, sizeof k); /* compared with memcmp: no stray padding */
    k.pass = pass;
    k.C = g->C, k.O = g->O, k.G = g->G;
    for (int i = 0; i < 2; i++) {
        k.in[i] = g->in[i], k.out[i] = g->out[i], k.k[i] = g->k[i];
        k.s[i] = g->s[i], k.p[i] = g->p[i], k.d[i] = g->d[i];
    }
    int64_t t = tt_get_num_threads();
    t = t < 1 ? 1 : t > MAX_CHUNKS ? MAX_CHUNKS : t;
    int64_t wnumel = g->O * (g->C / g->G) * g->k[0] * g->k[1];
    int64_t xnumel = g->N * g->C * g->in[0] * g->in[1];
    /* by output channel: slices of whole 16-channel blocks (oneDNN's) */
    bool by_o = pass == CONV_PASS_BWD_WEIGHTS && g->G == 1 && t > 1 && wnumel > xnumel &&
                g->O >= 16 * t;
    chunk_plan p = {0};
    int64_t whole = by_o ? g->O : g->N;
    p.per = (whole + t - 1) / t;
    if (by_o)
        p.per = (p.per + 15) / 16 * 16;
    p.chunks = (whole + p.per - 1) / p.per;
    if (by_o)
        k.N = g->N, k.O = p.per, k.o_total = g->O;
    else
        k.N = p.per;
    tt_status st;
    if (!(p.full = entry_get(&k, &st)))
        return st;
    int64_t rest = whole - (p.chunks - 1) * p.per;
    if (by_o)
        k.O = rest;
    else
        k.N = rest;
    p.last = rest == p.per ? p.full : entry_get(&k, &st);
    if (!p.last) {
        entry_unref(p.full);
        return st;
    }
    *ran = true;
    int64_t xs = g->C * g->in[0] * g->in[1], ys = g->O * g->out[0] * g->out[1];
    int64_t steps[3][3] = {{xs, 0, ys}, {ys, 0, xs}, {xs, ys, 0}};
    /* by output channel: x whole; dw rows and dy channels per channel */
    int64_t o_steps[3] = {0, g->out[0] * g->out[1], (g->C / g->G) * g->k[0] * g->k[1]};
    for (int i = 0; i < 3; i++) {
        p.step[i] = by_o ? o_steps[i] : steps[pass][i];
        p.ptr[i] = ptr[i];
    }
    size_t b1 = entry_bytes(p.full), b2 = entry_bytes(p.last);
    p.bytes = align64(b1 > b2 ? b1 : b2);
    p.wnumel = wnumel;
    size_t partial_bytes = pass == CONV_PASS_BWD_WEIGHTS && !by_o
                               ? (size_t)(p.chunks - 1) * (size_t)p.wnumel * 4
                               : 0;
    size_t cap = 0, total = (size_t)p.chunks * p.bytes + partial_bytes;
    p.block = tt__alloc_storage(total, &cap);
    if (!p.block) {
        st = tt_errcode();
        goto out;
    }
    if (partial_bytes)
        p.partial = (float *)(p.block + (size_t)p.chunks * p.bytes);
    tt_parallel_for(p.chunks, 1, chunk_task, &p);
    for (int64_t c = 0; c < p.chunks && !st; c++)
        if (p.st[c])
            st = dnnl_fail(p.what[c], c == p.chunks - 1 ? p.last : p.full, p.st[c]);
    if (!st && p.partial)
        tt_parallel_for(p.wnumel, 16384, partial_sum_task, &p);
    tt__free_storage(p.block, cap);
out:
    if (p.last != p.full) /* one reference per entry_get */
        entry_unref(p.last);
    entry_unref(p.full);
    return st;
}
