/* tensortrace dist: data-parallel training over MPI.
 *
 * A process group made from an MPI communicator; collectives as ops in
 * namespace `dist`, defined through the same custom-op API as a user's op
 * (a kernel over MPI, a fake kernel, a derivative), so they run eagerly,
 * differentiate, and trace into graphs as opaque nodes; and a data-parallel
 * helper that averages gradients across ranks in buckets while the
 * backward is still running, as PyTorch's DistributedDataParallel does.
 *
 * Lives in its own library, libtensortrace-dist (pkg-config module
 * tensortrace-dist), so the core library has no MPI dependency. The
 * conventions are the runtime's (see tt_runtime.h): results are new
 * references or NULL with the error set; statuses with tt_errmsg().
 *
 * MPI threading: collectives are called from the thread that made the
 * group (MPI_THREAD_FUNNELED when this library initialises MPI).
 */
#ifndef TT_DIST_H
#define TT_DIST_H

#include "tt_ops.h"

#ifdef __cplusplus
extern "C" {
#endif

#pragma GCC visibility push(default) /* the public API: see tt_runtime.h */

/* -------------------------------------------------------- process group */

typedef struct {
    /* A pointer to the MPI_Comm to use (the group works on a duplicate
     * of it, so its traffic never mixes with the caller's); NULL:
     * MPI_COMM_WORLD. See tt_dist_init_comm below for a typed form. */
    const void *mpi_comm;
} tt_dist_opts;

/* Makes the process group (one per process, like torch.distributed's
 * default group). Initialises MPI (MPI_Init_thread, FUNNELED) only when
 * the caller has not; collective over the communicator's ranks. opts may
 * be NULL. TT_EEXIST when a group exists already. */
tt_status tt_dist_init(const tt_dist_opts *opts);
/* Frees the group; finalises MPI only when tt_dist_init initialised it
 * (MPI cannot be initialised twice in a process, so after that no group
 * can be made again). Collective. TT_OK when there is no group. */
tt_status tt_dist_finalize(void);
bool tt_dist_is_initialized(void);
/* This process's rank and the number of ranks; -1 with the error set when
 * there is no group. */
int tt_dist_rank(void);
int tt_dist_world_size(void);
/* Waits for every rank of the group. */
tt_status tt_dist_barrier(void);

/* ------------------------------------------------------------ collectives */

/* The ops (defined on first use of this library's API; tt_op_find
 * finds them after that):
 *   dist::all_reduce(Tensor x, str op="sum") -> Tensor
 *   dist::broadcast(Tensor x, int src=0) -> Tensor
 *   dist::all_gather(Tensor x) -> Tensor        (ranks' x stacked along dim 0)
 *   dist::reduce_scatter(Tensor x, str op="sum") -> Tensor (dim 0 split in ranks)
 * Reductions: "sum", "avg" (floating point only), "max", "min". Dtypes
 * f32, f64, i64, i32. Every rank must call the same collectives in the
 * same order with the same shapes and dtypes; in checked mode
 * (tt_checked_mode) the ranks exchange shapes first and a mismatch is an
 * error on every rank instead of a hang or a truncated message.
 * Derivatives, as torch.distributed.nn.functional: all_reduce sum/avg ->
 * all_reduce of the gradient with the same op (max/min have none);
 * broadcast -> the sum of the gradients on src, zeros elsewhere;
 * all_gather -> reduce_scatter sum; reduce_scatter sum/avg -> all_gather
 * (divided by the world size for avg). On fake tensors the ops only make
 * metadata, which is what a trace wants; outside a trace (no fake mode)
 * that would skip the communication, so it is an error. */
tt_status tt_dist_ops_init(void);
tt_tensor *tt_dist_all_reduce(const tt_tensor *x, const char *op);
tt_tensor *tt_dist_broadcast(const tt_tensor *x, int src);
tt_tensor *tt_dist_all_gather(const tt_tensor *x);
tt_tensor *tt_dist_reduce_scatter(const tt_tensor *x, const char *op);

/* ------------------------------------------------------- data parallel */

/* Averages the .grad of each of the n parameters across ranks, in buckets
 * of about bucket_bytes (0: 4 MiB) of one dtype each: one dist::all_reduce
 * (avg) per bucket, through the dispatcher, so inside a trace each bucket
 * is an opaque node of the graph. Each parameter's .grad becomes a view
 * of its bucket's result; a parameter with no .grad on this rank takes
 * part with zeros (and gets the average). Blocking; tt_ddp_backward is the
 * overlapping form for eager training. */
tt_status tt_dist_average_grads(int n, tt_tensor *const *params, size_t bucket_bytes);

typedef struct {
    size_t bucket_bytes; /* 0: 4 MiB */
} tt_ddp_opts;

typedef struct tt_ddp tt_ddp;
/* A data-parallel wrapper of n parameters (borrowed: they must outlive
 * it; floating point leaves that require grad). Makes every rank's
 * parameters equal to rank 0's (a broadcast), as DDP does at
 * construction. Buckets are filled in reverse parameter order, the order
 * in which a backward usually produces the gradients. opts may be NULL. */
tt_ddp *tt_ddp_new(int n, tt_tensor *const *params, const tt_ddp_opts *opts);
tt_ddp *tt_ddp_free(tt_ddp *d); /* NULL-safe; returns NULL */
/* tt_backward(loss) whose gradients end averaged across ranks: as soon as
 * every gradient of a bucket is final (the autograd engine's
 * gradient-ready hook), the bucket's non-blocking MPI_Iallreduce starts,
 * so communication overlaps the rest of the backward; buckets start in
 * the same order on every rank. Returns once all are done and each .grad
 * holds the average. Inside a trace it is tt_backward followed by
 * tt_dist_average_grads, so the collectives are graph nodes. */
tt_status tt_ddp_backward(tt_ddp *d, tt_tensor *loss);

typedef struct {
    int buckets;          /* buckets per backward */
    int started_early;    /* of the last backward: buckets whose reduction
                             started before the backward had finished */
    int64_t backwards;    /* tt_ddp_backward calls that succeeded */
} tt_ddp_stats;
void tt_ddp_get_stats(const tt_ddp *d, tt_ddp_stats *out);

/* The caller's line for the graph nodes these record (see "Call sites" in
 * tt_dispatch.h). */
#ifdef TT_CALLSITES
#define tt_dist_all_reduce(...) TT_CALLSITE_T(tt_dist_all_reduce, __VA_ARGS__)
#define tt_dist_broadcast(...) TT_CALLSITE_T(tt_dist_broadcast, __VA_ARGS__)
#define tt_dist_all_gather(...) TT_CALLSITE_T(tt_dist_all_gather, __VA_ARGS__)
#define tt_dist_reduce_scatter(...) TT_CALLSITE_T(tt_dist_reduce_scatter, __VA_ARGS__)
#define tt_dist_average_grads(...) TT_CALLSITE_S(tt_dist_average_grads, __VA_ARGS__)
#define tt_ddp_backward(...) TT_CALLSITE_S(tt_ddp_backward, __VA_ARGS__)
#endif

#pragma GCC visibility pop

/* With <mpi.h> included first: the group over a communicator of yours. */
#ifdef MPI_VERSION
static inline tt_status tt_dist_init_comm(MPI_Comm comm)
{
    tt_dist_opts o = {&comm};
    return tt_dist_init(&o);
}
#endif

#ifdef __cplusplus
}
#endif
#endif /* TT_DIST_H */
