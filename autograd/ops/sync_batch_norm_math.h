/*
 * autograd/ops/sync_batch_norm_math.h - the arithmetic of BatchNorm over a
 * batch split into shards (SyncBatchNorm), as plain loops on doubles with
 * no tensors, no tape and no MPI: per-shard statistics, Chan's combine in
 * shard order, the backward's two sums and the input gradient with the
 * global count. tg_batch_norm_virtual_ranks (sync_batch_norm_math.c) and
 * dist/sync_batch_norm.c both run on these, so the single-process and the
 * MPI forms share one implementation. Not installed.
 *
 * Every array is a contiguous (N, C, S) block in C order (x as BatchNorm
 * sees it: S = prod(shape[2:])) or a per-channel vector of C values.
 */
#ifndef TG_SYNC_BATCH_NORM_MATH_H
#define TG_SYNC_BATCH_NORM_MATH_H

#include <stdint.h>

/* One shard's statistics per channel, written as stats[0..3C):
 * [count (C), mean (C), M2 (C)] with M2 = sum((x - mean)^2), two passes
 * over the shard's N rows. A shard with no values has count 0, mean 0 and
 * M2 0. */
void tg_sync_bn_shard_stats(const double *x, int64_t N, int64_t C,
                            int64_t S, double *stats);

/* Chan's parallel formula over W shards' stats (W blocks of 3C, as
 * tg_sync_bn_shard_stats writes them), in shard order, shards with count
 * 0 skipped:
 *     n = n_a + n_b,  delta = mean_b - mean_a
 *     mean = mean_a + delta * n_b / n
 *     M2   = M2_a + M2_b + delta^2 * n_a * n_b / n
 * Writes the combined count, mean and M2 of each channel (C each). With
 * no values at all, n = mean = M2 = 0. */
void tg_sync_bn_combine(const double *stats, int world, int64_t C,
                        double *n, double *mean, double *m2);

/* The backward's two sums over one shard, per channel, written as
 * sums[0..2C): [sum(dy) (C), sum(dy * (x - mean)) (C)], mean being the
 * global mean. Summed over the shards (in any order), they are the
 * whole batch's sums. */
void tg_sync_bn_shard_sums(const double *dy, const double *x,
                           const double *mean, int64_t N, int64_t C,
                           int64_t S, double *sums);

/* y = (x - mean) * invstd * w + b per channel; w and b may be NULL (1 and
 * 0). y may be x. */
void tg_sync_bn_normalise(const double *x, const double *mean,
                          const double *invstd, const double *w,
                          const double *b, int64_t N, int64_t C, int64_t S,
                          double *y);

/* The input gradient of one shard's rows, with the WHOLE batch's sums
 * (S1 = sums[c], S2 = sums[C + c], as tg_sync_bn_shard_sums summed over
 * the shards) and its count n per channel:
 *     dx = w * invstd / n * (n * dy - S1 - (x - mean) * invstd^2 * S2)
 * w may be NULL (1). */
void tg_sync_bn_dx(const double *dy, const double *x, const double *mean,
                   const double *invstd, const double *w,
                   const double *sums, double n, int64_t N, int64_t C,
                   int64_t S, double *dx);

#endif
