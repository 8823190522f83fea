/* Internal to distributed/: the process group's communicator and the helpers the
 * collectives and the data-parallel helper share. Not installed. */
#ifndef TT_DIST_IMPL_H
#define TT_DIST_IMPL_H

#include <mpi.h>

#include "tt_dist.h"

/* The group's communicator (a duplicate of the user's, with
 * MPI_ERRORS_RETURN), its rank and size. Valid while tt_dist_is_initialized. */
MPI_Comm tt__dist_comm(void);
/* TT_OK when a group exists and the caller is the thread that made it
 * (MPI_THREAD_FUNNELED); otherwise the error, naming `who`. */
tt_status tt__dist_check_caller(const char *who);
/* The MPI datatype of a dtype, MPI_DATATYPE_NULL for the ones the
 * collectives do not take (u8, bool). */
MPI_Datatype tt__dist_mpi_type(tt_dtype dt);
/* Sets the error "<who>: <call> failed: <MPI's message>" and returns
 * TT_EINTERNAL; TT_OK when rc is MPI_SUCCESS. */
tt_status tt__dist_mpi_status(const char *who, const char *call, int rc);

/* The reductions, in the order of their names. */
typedef enum { TT_RED_SUM, TT_RED_AVG, TT_RED_MAX, TT_RED_MIN, TT_RED_COUNT } tt_red;
/* "sum" -> TT_RED_SUM ...; -1 when unknown. */
int tt__dist_red_from_name(const char *name);
const char *tt__dist_red_name(tt_red r);
/* The MPI op that computes r (avg: MPI_SUM, then a division). */
MPI_Op tt__dist_red_mpi_op(tt_red r);
/* Divides n floating point elements at p by the world size (avg). */
void tt__dist_divide(void *p, int64_t n, tt_dtype dt, int by);

#endif /* TT_DIST_IMPL_H */
