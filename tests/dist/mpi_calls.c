/*
 * Counts the collective calls a test makes: MPI_Allreduce and MPI_Allgather
 * are interposed here (the profiling interface, PMPI_*, does the work), so
 * a test can check that a step talks to the other ranks, or that it does
 * not. Linked only into the tests that read mt_mpi_calls.
 */
#include "mpi_test.h"

#include <mpi.h>

int mt_mpi_calls;

int MPI_Allreduce(const void *send, void *recv, int count, MPI_Datatype type,
                  MPI_Op op, MPI_Comm comm)
{
    mt_mpi_calls++;
    return PMPI_Allreduce(send, recv, count, type, op, comm);
}

int MPI_Allgather(const void *send, int scount, MPI_Datatype stype,
                  void *recv, int rcount, MPI_Datatype rtype, MPI_Comm comm)
{
    mt_mpi_calls++;
    return PMPI_Allgather(send, scount, stype, recv, rcount, rtype, comm);
}
