/*
 * dist/internal.h - what dist/'s files share: the MPI communicator of a
 * group, the agreement step that every collective runs first, and the
 * in-place sum of a buffer. Not installed; includes <mpi.h>.
 */
#ifndef TG_DIST_INTERNAL_H
#define TG_DIST_INTERNAL_H

#include <mpi.h>

#include "dist.h"

/* The calls whose signatures the ranks compare (a rank in another call is
 * a disagreement too). */
typedef enum tg_dist_call {
    TG_DIST_ALL_REDUCE = 1,
    TG_DIST_ALL_GATHER,
    TG_DIST_BROADCAST,
    TG_DIST_MODULE,
    TG_DIST_GRADS,
    TG_DIST_SYNC_BN,
} tg_dist_call;

/* The group's communicator (borrowed). */
MPI_Comm tg_dist_comm(const tg_process_group *pg);

/* The agreement step (process_group.c's header comment): every rank calls
 * it, also a rank whose arguments failed (ok false, reported already) or
 * whose x is NULL (silent). Compares call, x's dtype and shape and extra
 * (the root or the op) across the ranks in one MPI_Allreduce. Returns 0
 * when every rank is ok and all agree; otherwise -1, and every rank that
 * was ok reports the same first line under fn. what names x in messages. */
int tg_dist_agree(const tg_process_group *pg, const char *fn,
                  tg_dist_call call, const tg_tensor *x, int64_t extra,
                  bool ok, const char *what);

/* data[0 .. n) = the sum over the ranks of everyone's data[0 .. n), in
 * place (MPI_Allreduce in pieces of at most 2^30 elements). 0 or -1. */
int tg_dist_sum_in_place(const tg_process_group *pg, const char *fn,
                         void *data, int64_t n, tg_dtype dtype);

MPI_Datatype tg_dist_mpi_type(tg_dtype dtype);

/* Reports an MPI error code under fn: "<call> failed: <MPI's text>". */
void tg_dist_mpi_error(const char *fn, const char *call, int rc);

#endif
