/*
 * bench/ddp_step.c - the time of one data-parallel training step and the
 * part of it spent in communication, on however many processes mpirun
 * starts (bench/ddp_bench.sh runs it at 1, 2 and 4):
 *
 *     mpirun -n W ./build/bench/ddp_step [--steps S] [--batch B] [--width H]
 *
 * The step is examples/ddp_train.c's SyncBatchNorm one: an MLP
 * 2 -> H -> H -> 3 (Linear -> SyncBatchNorm -> ReLU), the global batch of
 * B rows split over the ranks, loss = sum of cross-entropies / B, backward,
 * tg_dist_all_reduce_grads, an SGD step. Its collectives: per step, an
 * all-reduce of the loss, per SyncBatchNorm layer an agreement and an
 * all-gather in the forward and an all-reduce in the backward, and the one
 * all-reduce of the gradients, each collective preceded by its one-number
 * signature check.
 *
 * Measured per step, on every rank: wall time (MPI_Wtime), the wall time
 * inside MPI_Allreduce, MPI_Allgather and MPI_Bcast (wrapped through MPI's
 * profiling interface, PMPI_), and the process's CPU time
 * (CLOCK_PROCESS_CPUTIME_ID: with more processes than cores, wall time
 * includes waiting for a core, CPU time does not, though MPI's busy
 * polling while it waits counts as CPU time). After W warm-up steps, the
 * means over the steps are taken on each rank, and rank 0 prints one CSV
 * line with the slowest rank's: world,batch,width,steps,step_ms,comm_ms,
 * comm_share,cpu_ms.
 */
#include "tapegrad.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double comm_seconds; // wall time inside the collectives

int MPI_Allreduce(const void *send, void *recv, int count, MPI_Datatype type,
                  MPI_Op op, MPI_Comm comm)
{
    double t = PMPI_Wtime();
    int rc = PMPI_Allreduce(send, recv, count, type, op, comm);
    comm_seconds += PMPI_Wtime() - t;
    return rc;
}
int MPI_Allgather(const void *send, int scount, MPI_Datatype stype,
                  void *recv, int rcount, MPI_Datatype rtype, MPI_Comm comm)
{
    double t = PMPI_Wtime();
    int rc = PMPI_Allgather(send, scount, stype, recv, rcount, rtype, comm);
    comm_seconds += PMPI_Wtime() - t;
    return rc;
}
int MPI_Bcast(void *buf, int count, MPI_Datatype type, int root,
              MPI_Comm comm)
{
    double t = PMPI_Wtime();
    int rc = PMPI_Bcast(buf, count, type, root, comm);
    comm_seconds += PMPI_Wtime() - t;
    return rc;
}

static double cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    if (tg_dist_init(&argc, &argv) != 0)
        return 1;
    long steps = 200, batch = 256, width = 128;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--steps") == 0)
            steps = atol(argv[i + 1]);
        else if (strcmp(argv[i], "--batch") == 0)
            batch = atol(argv[i + 1]);
        else if (strcmp(argv[i], "--width") == 0)
            width = atol(argv[i + 1]);
    }
    tg_process_group *pg = tg_process_group_world();
    if (!pg || steps < 1 || batch < 2 || width < 1)
        return 1;
    int rank = tg_process_group_rank(pg), world = tg_process_group_size(pg);

    tg_dataset d = {0};
    tg_generator *g = tg_generator_new(0);
    tg_make_spirals(batch, 3, 0.03, g, &d); // 3 * batch rows
    tg_tensor *x = tg_narrow(d.x, 0, 0, batch), *y = tg_narrow(d.y, 0, 0, batch);
    tg_tensor *xs = tg_dist_shard(pg, x), *ys = tg_dist_shard(pg, y);
    const int64_t hidden[2] = {width, width};
    tg_manual_seed(0);
    tg_module *m = tg_mlp_new(2, hidden, 2, 3, TG_NORM_BATCH, TG_ACT_RELU);
    int status = tg_sync_batch_norm_convert(&m, pg) == 2 ? 0 : 1;
    tg_optimizer *opt = tg_sgd_new(m, &(tg_sgd_config){.lr = 0.01});
    double wall = 0, comm = 0, cpu = 0;
    for (long s = -world; s < steps && status == 0 && opt; s++) {
        double c0 = comm_seconds, t0 = MPI_Wtime(), p0 = cpu_seconds();
        tg_optimizer_zero_grad(opt);
        tg_tensor *logits = tg_module_forward(m, xs);
        tg_tensor *sum = tg_cross_entropy(logits, ys, TG_REDUCTION_SUM);
        tg_tensor *loss = tg_mul_scalar(sum, 1.0 / (double)batch);
        tg_tensor *total = tg_all_reduce(pg, loss, TG_REDUCE_SUM);
        if (!total || tg_backward(loss) != 0 ||
            tg_dist_all_reduce_grads(pg, m, TG_REDUCE_SUM) != 0 ||
            tg_optimizer_step(opt) != 0)
            status = 1;
        if (s >= 0) { // the first W steps warm up
            wall += MPI_Wtime() - t0;
            comm += comm_seconds - c0;
            cpu += cpu_seconds() - p0;
        }
        tg_release(total), tg_release(loss), tg_release(sum);
        tg_release(logits);
    }
    double mine[3] = {wall / steps, comm / steps, cpu / steps}, worst[3];
    PMPI_Reduce(mine, worst, 3, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0 && status == 0)
        printf("%d,%ld,%ld,%ld,%.4f,%.4f,%.3f,%.4f\n", world, batch, width,
               steps, 1e3 * worst[0], 1e3 * worst[1], worst[1] / worst[0],
               1e3 * worst[2]);
    tg_optimizer_free(opt);
    tg_module_free(m);
    tg_release(ys), tg_release(xs), tg_release(y), tg_release(x);
    tg_dataset_free(&d);
    tg_generator_free(g);
    tg_process_group_free(pg);
    tg_dist_finalize();
    return status;
}
