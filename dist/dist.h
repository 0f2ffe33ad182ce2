/*
 * dist/dist.h - data-parallel training over MPI: a process group, the
 * collectives on tensors (all-reduce, all-gather, broadcast) and the
 * helpers of data-parallel SGD (the same parameters on every process, a
 * shard of the batch per process, gradients summed in one call), and
 * SyncBatchNorm (BatchNorm with the statistics of the whole batch).
 *
 * Built only when meson finds MPI (-Dmpi=auto|enabled|disabled);
 * tapegrad.h includes this header when it was (dist/config.h defines
 * TG_HAVE_MPI). It does not include <mpi.h>: a program that only uses
 * what is declared here compiles with a plain C compiler. Run the
 * program under mpirun, one process per rank (docs/distributed.md).
 *
 * Every collective is called by every process of the group, in the same
 * order, with tensors of the same shape and dtype. Before moving any
 * data, each call compares a small signature (which call, dtype, shape,
 * root) across the ranks in one MPI_Allreduce, so a disagreement is an
 * error on every rank, never a hang or a silently wrong sum. The results
 * are plain tensors with no history: collectives are not recorded on the
 * tape. Arguments are borrowed; tensors returned are new references.
 */
#ifndef TG_DIST_H
#define TG_DIST_H

#include "../nn/nn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------- the MPI world */

/* Starts MPI (MPI_Init) unless the program already did; argc and argv may
 * be NULL (MPI may remove its own options from them). Returns 0 or -1;
 * argc and argv borrowed. */
int tg_dist_init(int *argc, char ***argv);
/* Ends MPI (MPI_Finalize) if tg_dist_init started it and it is still
 * running; call it once at the end, after freeing every process group.
 * Returns 0 or -1. */
int tg_dist_finalize(void);

/* ---------------------------------------------------------- process groups */

/* The processes that train together: a duplicate of an MPI communicator,
 * so the library's messages never mix with the program's own. */
typedef struct tg_process_group tg_process_group;

/* A group over MPI_COMM_WORLD (every process mpirun started). MPI must be
 * running (tg_dist_init). The caller frees it with
 * tg_process_group_free(). */
tg_process_group *tg_process_group_world(void);
#ifdef MPI_VERSION // declared when <mpi.h> is included before this header
/* A group over the processes of comm (duplicated: comm stays the
 * caller's). The caller frees it with tg_process_group_free(). */
tg_process_group *tg_process_group_new(MPI_Comm comm);
#endif
/* Takes ownership of the group pg and frees it (MPI_Comm_free: every rank
 * calls it). NULL-safe. */
void tg_process_group_free(tg_process_group *pg);
/* This process's rank in [0, size), and the number of processes; -1 with
 * an error when pg is NULL. pg is borrowed. */
int tg_process_group_rank(const tg_process_group *pg);
int tg_process_group_size(const tg_process_group *pg);

/* ------------------------------------------------------------- collectives */
/* float32, float64 and int64 tensors of any shape and layout (a
 * non-contiguous tensor is copied first). Sums add the ranks' values in
 * the order the MPI library chooses; Open MPI gives every rank the same
 * bits. Arguments borrowed. */

/* How tg_all_reduce combines the ranks' tensors. */
typedef enum tg_reduce_op {
    TG_REDUCE_SUM = 0,
    TG_REDUCE_MEAN = 1, // the sum divided by the number of ranks (floats only)
} tg_reduce_op;

/* The elementwise sum (or mean) of x over the ranks, on every rank. New
 * reference; arguments borrowed. */
tg_tensor *tg_all_reduce(tg_process_group *pg, const tg_tensor *x,
                         tg_reduce_op op);
/* Every rank's x stacked in rank order: (size, *x.shape) on every rank.
 * New reference; arguments borrowed. */
tg_tensor *tg_all_gather(tg_process_group *pg, const tg_tensor *x);
/* In place: x = root's x on every rank (a write: x's version goes up; a
 * leaf that requires grad needs tg_no_grad_begin). Returns 0 or -1;
 * arguments borrowed. */
int tg_broadcast_(tg_process_group *pg, tg_tensor *x, int root);

/* ----------------------------------------------------------- data parallel */
/* Data-parallel SGD: every rank holds the same model, takes its own shard
 * of the batch, and after backward the ranks add their gradients, so each
 * makes the same step. With shards of different sizes, compute each
 * rank's loss as the SUM of its samples' losses divided by the GLOBAL
 * batch size, and add the gradients (TG_REDUCE_SUM): averaging per-rank
 * means weighs a small shard like a big one (docs/distributed.md). */

/* The rows [*start, *start + *count) of n that rank takes: n split into
 * size parts in rank order, the first n % size ranks one row longer
 * (numpy.array_split). A rank may get no rows. Returns 0 or -1; pg is
 * borrowed; start and count borrowed (the answer is written there). */
int tg_dist_shard_range(const tg_process_group *pg, int64_t n,
                        int64_t *start, int64_t *count);
/* This rank's rows of x (dim 0), as tg_dist_shard_range: a view sharing
 * x's storage, (count, ...) and possibly (0, ...). New reference;
 * arguments borrowed. */
tg_tensor *tg_dist_shard(const tg_process_group *pg, const tg_tensor *x);
/* Copies every parameter and buffer of m from root to every rank (in no
 * grad mode), so the ranks start from the same model. m must have the
 * same tensors, shapes and dtypes on every rank. Returns 0 or -1;
 * arguments borrowed. */
int tg_dist_broadcast_module(tg_process_group *pg, tg_module *m, int root);
/* After backward: every parameter's .grad becomes the sum (or the mean)
 * of the ranks' .grad, through ONE all-reduce of one flat buffer holding
 * every gradient (float64 if any parameter is, else float32). A
 * parameter without a .grad (no backward reached it here) counts as
 * zeros and receives one. Returns 0 or -1; arguments borrowed. */
int tg_dist_all_reduce_grads(tg_process_group *pg, tg_module *m,
                             tg_reduce_op op);

/* ------------------------------------------------------- SyncBatchNorm */

/* tg_batch_norm over the batch spread across the ranks (each passes its
 * own rows; a rank may have none): in training, every rank normalises
 * with the mean and the biased variance of ALL the ranks' rows, updates
 * running_mean and running_var with the global mean and unbiased
 * variance, and its backward uses the global sums; so the result equals
 * tg_batch_norm on the concatenated batch (dist/sync_batch_norm.c). Every
 * rank calls it, and runs the backward, empty or not. In eval (training
 * false) it is tg_batch_norm with the running statistics, with no
 * communication. x is (N, C, ...), float32 or float64; weight, bias,
 * running_mean and running_var are (C,) of x's dtype, or NULL in pairs.
 * The weight and bias gradients are this rank's part: add them over the
 * ranks with tg_dist_all_reduce_grads, as any parameter's. pg must live
 * until the backward has run. New reference; arguments borrowed
 * (running_mean and running_var are updated in place). */
tg_tensor *tg_sync_batch_norm(tg_process_group *pg, const tg_tensor *x,
                              tg_tensor *running_mean, tg_tensor *running_var,
                              const tg_tensor *weight, const tg_tensor *bias,
                              bool training, double momentum, double eps);

/* ------------------------------------------------ SyncBatchNorm, the layer */

/* nn.SyncBatchNorm(num_features, process_group=pg): BatchNorm over the
 * batch the ranks of pg hold together, for inputs (N, C, ...) of any
 * number of dims >= 2. The same parameters and buffers as
 * tg_batch_norm1d_new ("weight", "bias", "running_mean", "running_var",
 * "num_batches_tracked") and the same settings (config NULL: the defaults;
 * correction must be 0). In training every rank calls its forward and
 * backward (tg_sync_batch_norm); in eval it uses the running statistics
 * and does not communicate, so ranks may evaluate different amounts of
 * data. Prints as PyTorch's: SyncBatchNorm(3, eps=1e-05, momentum=0.1,
 * affine=True, track_running_stats=True). pg is borrowed and must outlive
 * the module. The caller frees the module with tg_module_free() (unless a
 * parent takes it); config borrowed. */
tg_module *tg_sync_batch_norm_new(tg_process_group *pg, int64_t num_features,
                                  const tg_batch_norm_config *config);
/* nn.SyncBatchNorm.convert_sync_batchnorm(module, pg): replaces every
 * BatchNorm1d and BatchNorm2d in the tree *m by a SyncBatchNorm over pg
 * that takes over its parameter and buffer tensors (the same tensors, so
 * an optimiser made before keeps working), its settings and its
 * train/eval mode. When *m is itself a BatchNorm, it is freed and *m
 * becomes the new layer; *m must then be the caller's own (no parent).
 * Returns the number of layers replaced, or -1 (a BatchNorm with
 * correction 1 cannot be converted; layers before it may have been).
 * m borrowed (*m may be replaced, as above); pg borrowed, must outlive the
 * modules. */
int tg_sync_batch_norm_convert(tg_module **m, tg_process_group *pg);

#ifdef __cplusplus
}
#endif

#endif
