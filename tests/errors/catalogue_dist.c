/*
 * tests/errors/catalogue_dist.c - the errors of dist/dist.h, one
 * ERROR_CASE per row of docs/errors.md, in the order of the header's
 * sections.
 *
 * Unlike the other catalogue files these rows run on real MPI processes,
 * 2 ranks, through tests/dist/catalogue_mpi.h (a plain harness: Criterion
 * forks, and MPI does not survive a fork); meson's 'mpi' suite runs them
 * in builds with MPI. The rows about ranks that disagree make the mistake
 * on rank 1 and up (or rank 0 only), and every rank checks the first line
 * it gets: every rank fails, none waits.
 */
#include "../dist/catalogue_mpi.h"

#include <math.h>

/* ----------------------------------------------------- the MPI world */

NEVER_FAILS(tg_dist_init, "returns -1 with MPI's own message (\"MPI_Init "
                         "failed: ...\") only when the MPI installation is "
                         "broken");
NEVER_FAILS(tg_dist_finalize, "returns -1 with MPI's own message "
                              "(\"MPI_Finalize failed: ...\") only when MPI "
                              "itself is broken");

/* --------------------------------------------------- process groups */

ERROR_CASE(tg_process_group_world, out_of_memory,
           "memory runs out (tg_fail_allocations_after)")
{
    tg_fail_allocations_after(0);
    tg_process_group *pg = tg_process_group_world();
    tg_fail_allocations_after(-1);
    EXPECT_ERROR(pg == NULL, "tg_process_group_world: out of memory for a "
                             "process group");
}

ERROR_NOT_TRIGGERED(tg_process_group_world, "MPI has not started, or has finished",
                    "the rows run after MPI started and MPI cannot start "
                    "again once finalized; tapegrad checks it before any "
                    "MPI call that needs it");

ERROR_CASE(tg_process_group_new, null_comm, "comm is MPI_COMM_NULL")
{
    tg_process_group *pg = tg_process_group_new(MPI_COMM_NULL);
    EXPECT_ERROR(pg == NULL, "tg_process_group_new: comm is MPI_COMM_NULL");
}

NEVER_FAILS(tg_process_group_free, "frees; NULL is a no-op");

ERROR_CASE(tg_process_group_rank, null_group,
           "pg is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_process_group_rank(NULL) == -1);
}

ERROR_CASE(tg_process_group_size, null_group,
           "pg is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_process_group_size(NULL) == -1);
}

/* ------------------------------------------------------- collectives */

ERROR_CASE(tg_all_reduce, shape_disagrees,
           "rank 0's x has another shape than the others'")
{
    tg_tensor *x = tg_ones(TG_SHAPE(mt_rank == 0 ? 2 : 3), TG_FLOAT64);
    tg_tensor *y = tg_all_reduce(mt_pg, x, TG_REDUCE_SUM);
    EXPECT_ERROR(y == NULL, "tg_all_reduce: the ranks disagree on the shape "
                            "of x");
    tg_release(y);
    tg_release(x);
}

ERROR_CASE(tg_all_reduce, ndim_disagrees,
           "rank 0's x has another number of dims than the others'")
{
    tg_tensor *x = mt_rank == 0 ? tg_ones(TG_SHAPE(4), TG_FLOAT64)
                                : tg_ones(TG_SHAPE(2, 2), TG_FLOAT64);
    tg_tensor *y = tg_all_reduce(mt_pg, x, TG_REDUCE_SUM);
    EXPECT_ERROR(y == NULL, "tg_all_reduce: the ranks disagree on the number "
                            "of dims of x");
    tg_release(y);
    tg_release(x);
}

ERROR_CASE(tg_all_reduce, dtype_disagrees,
           "rank 0's x has another dtype than the others'")
{
    tg_tensor *x = tg_ones(TG_SHAPE(2), mt_rank == 0 ? TG_FLOAT32
                                                     : TG_FLOAT64);
    tg_tensor *y = tg_all_reduce(mt_pg, x, TG_REDUCE_SUM);
    EXPECT_ERROR(y == NULL, "tg_all_reduce: the ranks disagree on the dtype "
                            "of x");
    tg_release(y);
    tg_release(x);
}

ERROR_CASE(tg_all_reduce, op_disagrees,
           "the ranks pass different ops (sum on rank 0, mean on rank 1)")
{
    tg_tensor *x = tg_ones(TG_SHAPE(2), TG_FLOAT64);
    tg_tensor *y = tg_all_reduce(mt_pg, x, mt_rank == 0 ? TG_REDUCE_SUM
                                                        : TG_REDUCE_MEAN);
    EXPECT_ERROR(y == NULL, "tg_all_reduce: the ranks pass different reduce "
                            "ops");
    tg_release(y);
    tg_release(x);
}

ERROR_CASE(tg_all_reduce, other_rank_failed,
           "another rank passed NULL or bad arguments (checked on the "
           "ranks that did not)")
{
    tg_tensor *x = mt_rank == 0 ? NULL : tg_ones(TG_SHAPE(2), TG_FLOAT64);
    tg_tensor *y = tg_all_reduce(mt_pg, x, TG_REDUCE_SUM);
    catalogue_expect_from_rank(1);
    EXPECT_ERROR(y == NULL, "tg_all_reduce: the call failed on another rank");
    tg_release(y);
    tg_release(x);
}

ERROR_CASE(tg_all_reduce, unknown_op, "op is not a tg_reduce_op")
{
    tg_tensor *x = tg_ones(TG_SHAPE(2), TG_FLOAT64);
    tg_tensor *y = tg_all_reduce(mt_pg, x, (tg_reduce_op)7);
    EXPECT_ERROR(y == NULL, "tg_all_reduce: unknown reduce op 7");
    tg_release(y);
    tg_release(x);
}

ERROR_CASE(tg_all_reduce, int_mean, "the mean of an int64 tensor")
{
    tg_tensor *x = tg_ones(TG_SHAPE(2), TG_INT64);
    tg_tensor *y = tg_all_reduce(mt_pg, x, TG_REDUCE_MEAN);
    EXPECT_ERROR(y == NULL, "tg_all_reduce: cannot take the mean of an int64 "
                            "tensor");
    tg_release(y);
    tg_release(x);
}

ERROR_CASE(tg_all_reduce, null_tensor, "x is NULL on every rank")
{
    EXPECT_SILENT(tg_all_reduce(mt_pg, NULL, TG_REDUCE_SUM) == NULL);
}

ERROR_NOT_TRIGGERED(tg_all_reduce, "%s failed: %s",
                    "MPI reports an error when a process dies or the "
                    "network fails, which a test cannot cause safely");

ERROR_CASE(tg_all_gather, call_disagrees,
           "rank 0 calls tg_all_reduce while the others gather")
{
    tg_tensor *x = tg_ones(TG_SHAPE(2), TG_FLOAT64);
    tg_tensor *y = mt_rank == 0 ? tg_all_reduce(mt_pg, x, TG_REDUCE_SUM)
                                : tg_all_gather(mt_pg, x);
    catalogue_expect_from_rank(1);
    EXPECT_ERROR(y == NULL, "tg_all_gather: the ranks are not all making the "
                            "same call");
    tg_clear_error();
    tg_release(y);
    tg_release(x);
}

ERROR_CASE(tg_all_gather, too_many_dims, "x already has 8 dims")
{
    tg_tensor *x = tg_ones(TG_SHAPE(1, 1, 1, 1, 1, 1, 1, 2), TG_FLOAT64);
    tg_tensor *y = tg_all_gather(mt_pg, x);
    EXPECT_ERROR(y == NULL, "tg_all_gather: cannot stack tensors of 8 dims");
    tg_release(y);
    tg_release(x);
}

ERROR_NOT_TRIGGERED(tg_all_gather,
                    "x has %lld elements, more than one MPI call can move",
                    "needs 2^31 elements per rank (8 GiB of float32 and "
                    "as much again per rank for the result)");

ERROR_CASE(tg_all_gather, null_tensor, "x is NULL on every rank")
{
    EXPECT_SILENT(tg_all_gather(mt_pg, NULL) == NULL);
}

ERROR_CASE(tg_broadcast_, root_disagrees,
           "each rank names itself the root")
{
    tg_tensor *x = tg_ones(TG_SHAPE(2), TG_FLOAT64);
    int rc = tg_broadcast_(mt_pg, x, mt_rank);
    EXPECT_ERROR(rc == -1, "tg_broadcast_: the ranks pass different roots");
    tg_release(x);
}

ERROR_CASE(tg_broadcast_, bad_root, "root is not a rank of the group")
{
    tg_tensor *x = tg_ones(TG_SHAPE(2), TG_FLOAT64);
    int rc = tg_broadcast_(mt_pg, x, 5);
    EXPECT_ERROR(rc == -1, "tg_broadcast_: root 5 is not a rank of the group");
    tg_release(x);
}

ERROR_CASE(tg_broadcast_, null_tensor, "x is NULL on every rank")
{
    EXPECT_SILENT(tg_broadcast_(mt_pg, NULL, 0) == -1);
}

/* ----------------------------------------------------- data parallel */

ERROR_CASE(tg_dist_shard_range, null_out, "start or count is NULL")
{
    int64_t start;
    int rc = tg_dist_shard_range(mt_pg, 10, &start, NULL);
    EXPECT_ERROR(rc == -1, "tg_dist_shard_range: start or count is NULL");
}

ERROR_CASE(tg_dist_shard_range, negative_rows, "n is negative")
{
    int64_t start, count;
    int rc = tg_dist_shard_range(mt_pg, -3, &start, &count);
    EXPECT_ERROR(rc == -1, "tg_dist_shard_range: cannot split -3 rows");
}

ERROR_CASE(tg_dist_shard_range, null_group,
           "pg is NULL (an earlier call failed)")
{
    int64_t start, count;
    EXPECT_SILENT(tg_dist_shard_range(NULL, 10, &start, &count) == -1);
}

ERROR_CASE(tg_dist_shard, scalar, "x is 0-d")
{
    tg_tensor *x = tg_scalar(1, TG_FLOAT64);
    tg_tensor *y = tg_dist_shard(mt_pg, x);
    EXPECT_ERROR(y == NULL, "tg_dist_shard: cannot shard a 0-d tensor");
    tg_release(y);
    tg_release(x);
}

ERROR_CASE(tg_dist_shard, null_tensor, "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_dist_shard(mt_pg, NULL) == NULL);
}

/* A Linear(2, 2) on every rank, with one more on rank 0 when uneven. */
static tg_module *small_model(bool uneven)
{
    if (uneven && mt_rank == 0)
        return TG_SEQUENTIAL(tg_linear_new(2, 2, true),
                             tg_linear_new(2, 2, true));
    return TG_SEQUENTIAL(tg_linear_new(2, 2, true));
}

ERROR_CASE(tg_dist_broadcast_module, tensors_disagree,
           "rank 0's module has more tensors than the others'")
{
    tg_module *m = small_model(true);
    int rc = tg_dist_broadcast_module(mt_pg, m, 0);
    EXPECT_ERROR(rc == -1, "tg_dist_broadcast_module: the ranks disagree on "
                           "the shape of m's (parameters, buffers, 0)");
    tg_module_free(m);
}

ERROR_CASE(tg_dist_broadcast_module, bad_root,
           "root is not a rank of the group")
{
    tg_module *m = small_model(false);
    int rc = tg_dist_broadcast_module(mt_pg, m, -1);
    EXPECT_ERROR(rc == -1, "tg_dist_broadcast_module: cannot broadcast m "
                           "from root -1");
    tg_module_free(m);
}

ERROR_CASE(tg_dist_broadcast_module, out_of_memory,
           "memory runs out (tg_fail_allocations_after)")
{
    tg_module *m = small_model(false);
    // the first allocation is tg_module_named_parameters' own (counting)
    tg_fail_allocations_after(1);
    int rc = tg_dist_broadcast_module(mt_pg, m, 0);
    tg_fail_allocations_after(-1);
    EXPECT_ERROR(rc == -1, "tg_dist_broadcast_module: out of memory for a "
                           "list of 2 tensors");
    tg_module_free(m);
}

ERROR_CASE(tg_dist_broadcast_module, null_module,
           "m is NULL on every rank (an earlier call failed)")
{
    EXPECT_SILENT(tg_dist_broadcast_module(mt_pg, NULL, 0) == -1);
}

ERROR_CASE(tg_dist_all_reduce_grads, params_disagree,
           "rank 0's module has more parameters than the others'")
{
    tg_module *m = small_model(true);
    int rc = tg_dist_all_reduce_grads(mt_pg, m, TG_REDUCE_SUM);
    EXPECT_ERROR(rc == -1, "tg_dist_all_reduce_grads: the ranks disagree on "
                           "the shape of the gradients of m's parameters "
                           "(all in one)");
    tg_module_free(m);
}

ERROR_CASE(tg_dist_all_reduce_grads, unknown_op, "op is not a tg_reduce_op")
{
    tg_module *m = small_model(false);
    int rc = tg_dist_all_reduce_grads(mt_pg, m, (tg_reduce_op)-1);
    EXPECT_ERROR(rc == -1, "tg_dist_all_reduce_grads: unknown reduce op -1 "
                           "for the gradients");
    tg_module_free(m);
}

ERROR_CASE(tg_dist_all_reduce_grads, null_module,
           "m is NULL on every rank (an earlier call failed)")
{
    EXPECT_SILENT(tg_dist_all_reduce_grads(mt_pg, NULL, TG_REDUCE_SUM) == -1);
}

/* ----------------------------------------------------- SyncBatchNorm */

ERROR_CASE(tg_sync_batch_norm, one_dim, "x has fewer than 2 dims")
{
    tg_tensor *x = tg_ones(TG_SHAPE(4), TG_FLOAT64);
    tg_tensor *y = tg_sync_batch_norm(mt_pg, x, NULL, NULL, NULL, NULL, true,
                                      0.1, 1e-5);
    EXPECT_ERROR(y == NULL, "tg_sync_batch_norm: cannot normalise a (4,) "
                            "float64 tensor");
    tg_release(y);
    tg_release(x);
}

ERROR_CASE(tg_sync_batch_norm, weight_shape, "weight is not (C,)")
{
    tg_tensor *x = tg_ones(TG_SHAPE(2, 3), TG_FLOAT64);
    tg_tensor *w = tg_ones(TG_SHAPE(2), TG_FLOAT64);
    tg_tensor *b = tg_zeros(TG_SHAPE(3), TG_FLOAT64);
    tg_tensor *y = tg_sync_batch_norm(mt_pg, x, NULL, NULL, w, b, true, 0.1,
                                      1e-5);
    EXPECT_ERROR(y == NULL, "tg_sync_batch_norm: weight, bias, running_mean "
                            "or running_var does not fit x of shape (2, 3)");
    tg_release(y);
    tg_release(b);
    tg_release(w);
    tg_release(x);
}

ERROR_CASE(tg_sync_batch_norm, one_value,
           "training with 1 value per channel over all the ranks")
{
    tg_tensor *x = tg_ones(TG_SHAPE(mt_rank == 0 ? 1 : 0, 3), TG_FLOAT64);
    tg_tensor *y = tg_sync_batch_norm(mt_pg, x, NULL, NULL, NULL, NULL, true,
                                      0.1, 1e-5);
    EXPECT_ERROR(y == NULL, "tg_sync_batch_norm: the ranks hold 1 value(s) "
                            "per channel in all, fewer than 2");
    tg_release(y);
    tg_release(x);
}

ERROR_CASE(tg_sync_batch_norm, channels_disagree,
           "rank 0 has another number of channels than the others")
{
    tg_tensor *x = tg_ones(TG_SHAPE(4, mt_rank == 0 ? 2 : 3), TG_FLOAT64);
    tg_tensor *y = tg_sync_batch_norm(mt_pg, x, NULL, NULL, NULL, NULL, true,
                                      0.1, 1e-5);
    EXPECT_ERROR(y == NULL, "tg_sync_batch_norm: the ranks disagree on the "
                            "shape of x (its rows aside)");
    tg_release(y);
    tg_release(x);
}

ERROR_NOT_TRIGGERED(tg_sync_batch_norm, "out of memory for %lld values",
                    "the forward allocates after the collectives, and which "
                    "allocation fails first there depends on the tape");

ERROR_CASE(tg_sync_batch_norm, null_tensor,
           "x is NULL on every rank (an earlier call failed)")
{
    EXPECT_SILENT(tg_sync_batch_norm(mt_pg, NULL, NULL, NULL, NULL, NULL,
                                     true, 0.1, 1e-5) == NULL);
}

/* ------------------------------------------------ SyncBatchNorm, the layer */

ERROR_CASE(tg_sync_batch_norm_new, zero_features, "num_features is 0")
{
    tg_module *m = tg_sync_batch_norm_new(mt_pg, 0, NULL);
    EXPECT_ERROR(m == NULL, "tg_sync_batch_norm_new: num_features is 0");
}

ERROR_CASE(tg_sync_batch_norm_new, unbiased_correction,
           "config->correction is 1")
{
    tg_batch_norm_config c = tg_batch_norm_config_defaults();
    c.correction = 1;
    tg_module *m = tg_sync_batch_norm_new(mt_pg, 3, &c);
    EXPECT_ERROR(m == NULL, "tg_sync_batch_norm_new: correction is 1");
}

ERROR_CASE(tg_sync_batch_norm_new, bad_momentum, "momentum is outside [0, 1]")
{
    tg_batch_norm_config c = tg_batch_norm_config_defaults();
    c.momentum = 2;
    tg_module *m = tg_sync_batch_norm_new(mt_pg, 3, &c);
    EXPECT_ERROR(m == NULL, "tg_sync_batch_norm_new: momentum is 2");
}

ERROR_CASE(tg_sync_batch_norm_new, null_group,
           "pg is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_sync_batch_norm_new(NULL, 3, NULL) == NULL);
}

ERROR_CASE(tg_sync_batch_norm_convert, unbiased_correction,
           "a BatchNorm in the tree has correction 1")
{
    tg_batch_norm_config c = tg_batch_norm_config_defaults();
    c.correction = 1;
    tg_module *net = TG_SEQUENTIAL(tg_batch_norm1d_new(3, &c));
    EXPECT_ERROR(tg_sync_batch_norm_convert(&net, mt_pg) == -1,
                 "tg_sync_batch_norm_convert: correction is 1");
    tg_module_free(net);
}

ERROR_CASE(tg_sync_batch_norm_convert, null_module,
           "*m is NULL (an earlier call failed)")
{
    tg_module *none = NULL;
    EXPECT_SILENT(tg_sync_batch_norm_convert(&none, mt_pg) == -1);
}

ERROR_CASE(tg_sync_batch_norm_convert, null_group,
           "pg is NULL (an earlier call failed)")
{
    tg_module *m = tg_tanh_new();
    EXPECT_SILENT(tg_sync_batch_norm_convert(&m, NULL) == -1);
    tg_module_free(m);
}
