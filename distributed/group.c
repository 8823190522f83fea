/* The process group: one per process, over a duplicate of an MPI
 * communicator (MPI_COMM_WORLD unless the caller passes one), like
 * torch.distributed's default group. MPI is initialised here only when
 * the caller has not done it, and finalised only if it was. */
#include "dist_impl.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

static struct {
    bool active;
    bool we_initialized_mpi; /* so tt_dist_finalize finalises only our MPI */
    MPI_Comm comm;
    int rank, size;
    pthread_t thread; /* the thread MPI is funnelled through */
} group;

MPI_Comm tt__dist_comm(void) { return group.comm; }

bool tt_dist_is_initialized(void) { return group.active; }

tt_status tt__dist_mpi_status(const char *who, const char *call, int rc)
{
    if (rc == MPI_SUCCESS)
        return TT_OK;
    char text[MPI_MAX_ERROR_STRING + 1] = "";
    int len = 0;
    if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS)
        snprintf(text, sizeof text, "MPI error %d", rc);
    return tt_error(TT_EINTERNAL, "%s: %s failed: %s", who, call, text);
}

tt_status tt__dist_check_caller(const char *who)
{
    if (!group.active)
        return tt_error(TT_EINVAL, "%s: no process group: call tt_dist_init first "
                                   "(on every rank)", who);
    if (!pthread_equal(pthread_self(), group.thread))
        return tt_error(TT_EINVAL, "%s: called from a thread other than the one that made "
                                   "the process group (MPI is used as "
                                   "MPI_THREAD_FUNNELED)", who);
    return TT_OK;
}

tt_status tt_dist_init(const tt_dist_opts *opts)
{
    const char *fn = "tt_dist_init";
    if (group.active)
        return tt_error(TT_EEXIST, "%s: the process group exists already (rank %d of %d); "
                                   "call tt_dist_finalize first", fn, group.rank, group.size);
    int inited = 0, finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized)
        return tt_error(TT_EINVAL, "%s: MPI was finalized in this process, and MPI cannot be "
                                   "initialised twice", fn);
    MPI_Initialized(&inited);
    if (!inited) {
        int provided = 0;
        tt_status st = tt__dist_mpi_status(
            fn, "MPI_Init_thread", MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided));
        if (st)
            return st;
        group.we_initialized_mpi = true;
    }
    MPI_Comm base = MPI_COMM_WORLD;
    if (opts && opts->mpi_comm)
        base = *(const MPI_Comm *)opts->mpi_comm;
    if (base == MPI_COMM_NULL)
        return tt_error(TT_EINVAL, "%s: argument 'opts->mpi_comm' is MPI_COMM_NULL; expected "
                                   "a communicator this rank belongs to", fn);
    /* A duplicate: our messages never match the caller's, and errors come
     * back as codes instead of aborting the job. */
    MPI_Comm comm;
    tt_status st = tt__dist_mpi_status(fn, "MPI_Comm_dup", MPI_Comm_dup(base, &comm));
    if (st)
        return st;
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm, &group.rank);
    MPI_Comm_size(comm, &group.size);
    group.comm = comm;
    group.thread = pthread_self();
    group.active = true;
    st = tt_dist_ops_init();
    if (st)
        tt_dist_finalize();
    return st;
}

tt_status tt_dist_finalize(void)
{
    if (!group.active)
        return TT_OK;
    tt_status st = tt__dist_check_caller("tt_dist_finalize");
    if (st)
        return st;
    group.active = false;
    st = tt__dist_mpi_status("tt_dist_finalize", "MPI_Comm_free", MPI_Comm_free(&group.comm));
    if (group.we_initialized_mpi) {
        group.we_initialized_mpi = false;
        tt_status fst = tt__dist_mpi_status("tt_dist_finalize", "MPI_Finalize", MPI_Finalize());
        st = st ? st : fst;
    }
    return st;
}

int tt_dist_rank(void)
{
    if (!group.active) {
        tt__dist_check_caller("tt_dist_rank");
        return -1;
    }
    return group.rank;
}

int tt_dist_world_size(void)
{
    if (!group.active) {
        tt__dist_check_caller("tt_dist_world_size");
        return -1;
    }
    return group.size;
}

tt_status tt_dist_barrier(void)
{
    tt_status st = tt__dist_check_caller("tt_dist_barrier");
    return st ? st : tt__dist_mpi_status("tt_dist_barrier", "MPI_Barrier",
                                         MPI_Barrier(group.comm));
}

/* ------------------------------------------------------ shared helpers */

MPI_Datatype tt__dist_mpi_type(tt_dtype dt)
{
    switch (dt) {
    case TT_F32: return MPI_FLOAT;
    case TT_F64: return MPI_DOUBLE;
    case TT_I64: return MPI_INT64_T;
    case TT_I32: return MPI_INT32_T;
    default: return MPI_DATATYPE_NULL;
    }
}

static const char *const red_names[TT_RED_COUNT] = {"sum", "avg", "max", "min"};

int tt__dist_red_from_name(const char *name)
{
    for (int r = 0; name && r < TT_RED_COUNT; r++)
        if (strcmp(name, red_names[r]) == 0)
            return r;
    return -1;
}

const char *tt__dist_red_name(tt_red r) { return r < TT_RED_COUNT ? red_names[r] : "?"; }

MPI_Op tt__dist_red_mpi_op(tt_red r)
{
    return r == TT_RED_MAX ? MPI_MAX : r == TT_RED_MIN ? MPI_MIN : MPI_SUM;
}

void tt__dist_divide(void *p, int64_t n, tt_dtype dt, int by)
{
    if (dt == TT_F32) {
        float *v = p;
        for (int64_t i = 0; i < n; i++)
            v[i] /= (float)by;
    } else if (dt == TT_F64) {
        double *v = p;
        for (int64_t i = 0; i < n; i++)
            v[i] /= by;
    }
}
