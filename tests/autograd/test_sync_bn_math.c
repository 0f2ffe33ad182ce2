/*
 * tests/autograd/test_sync_bn_math.c - SyncBatchNorm's arithmetic as
 * plain functions (autograd/ops/sync_batch_norm_math.c), with no MPI: a
 * shard's count, mean and M2, Chan's combine in shard order with empty
 * shards skipped, the backward's two sums and dx with the global count.
 *
 * Hand-checked values first (exact: every number is a small dyadic
 * rational), then the whole pipeline split into W = 1..5 shards against
 * the NumPy references of scripts/reference/gen_sync_batch_norm.py (the
 * whole batch computed in one piece with correctly rounded sums), and a
 * batch whose variance is far below eps. Each comparison is also fed a
 * wrong combine or a wrong count to show that it can fail.
 *
 * Tolerances: the C code adds in double in shard order, the reference is
 * correctly rounded; values are O(1..100) over 22 values per channel, so
 * the differences are a few ulp: 1e-12 relative (plus 1e-12 absolute for
 * values near 0) leaves a margin of ~1000 and is still far below what a
 * wrong formula changes (percent). The tiny-variance M2 is checked to
 * 1e-6 relative: its values are 1e4 +- 1e-4, stored with an absolute
 * precision of 2e-12, so a deviation keeps ~8 digits (measured: 2e-9);
 * E[x^2] - E[x]^2 loses all of them.
 */
#include "../common.h"
#include "autograd/ops/sync_batch_norm_math.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------ by hand */

TG_TEST(sync_bn_math, shard_stats_by_hand)
{
    // one channel, S = 1: shard a = {1, 2}, shard b = {3, 4, 5}
    const double a[] = {1, 2}, b[] = {3, 4, 5};
    double sa[3], sb[3];
    tg_sync_bn_shard_stats(a, 2, 1, 1, sa);
    tg_sync_bn_shard_stats(b, 3, 1, 1, sb);
    cr_assert(sa[0] == 2 && sa[1] == 1.5 && sa[2] == 0.5);
    cr_assert(sb[0] == 3 && sb[1] == 4 && sb[2] == 2);
}

TG_TEST(sync_bn_math, shard_stats_of_an_empty_shard)
{
    double s[6] = {-1, -1, -1, -1, -1, -1};
    tg_sync_bn_shard_stats(NULL, 0, 2, 3, s);
    for (int k = 0; k < 6; k++)
        cr_assert(s[k] == 0, "stats[%d] = %g", k, s[k]);
}

TG_TEST(sync_bn_math, shard_stats_channels_and_positions)
{
    // (N, C, S) = (2, 2, 2): channel 0 holds 1, 3, 5, 7; channel 1 holds
    // 10, 10, 20, 20
    const double x[] = {1, 3, 10, 10, 5, 7, 20, 20};
    double s[6];
    tg_sync_bn_shard_stats(x, 2, 2, 2, s);
    // count, mean, M2: channel 0: 4, 4, 9+1+1+9 = 20; channel 1: 4, 15, 100
    const double want[] = {4, 4, 4, 15, 20, 100};
    for (int k = 0; k < 6; k++)
        cr_assert(s[k] == want[k], "stats[%d] = %g, want %g", k, s[k],
                  want[k]);
}

TG_TEST(sync_bn_math, chan_combine_by_hand)
{
    // {1, 2} and {3, 4, 5}: n 5, mean 3, M2 = 0.5 + 2 + 2.5^2 * 6 / 5 = 10
    // = sum((1..5 - 3)^2)
    const double stats[] = {2, 1.5, 0.5, 3, 4, 2};
    double n, mean, m2;
    tg_sync_bn_combine(stats, 2, 1, &n, &mean, &m2);
    cr_assert(n == 5 && mean == 3 && m2 == 10, "n %g mean %g M2 %g", n, mean,
              m2);
}

TG_TEST(sync_bn_math, chan_combine_skips_empty_shards)
{
    // an empty shard first, between and last; its mean is NaN on purpose:
    // read, it would make everything NaN
    const double stats[] = {0, NAN, NAN, 2, 1.5, 0.5, 0, NAN, NAN,
                            3, 4,   2,   0, NAN, NAN};
    double n, mean, m2;
    tg_sync_bn_combine(stats, 5, 1, &n, &mean, &m2);
    cr_assert(n == 5 && mean == 3 && m2 == 10, "n %g mean %g M2 %g", n, mean,
              m2);
    // every shard empty: no values, zeros
    tg_sync_bn_combine(stats, 1, 1, &n, &mean, &m2);
    cr_assert(n == 0 && mean == 0 && m2 == 0);
}

TG_TEST(sync_bn_math, chan_combine_follows_shard_order)
{
    // the same shards the other way round: the same (exact) answer
    const double stats[] = {3, 4, 2, 2, 1.5, 0.5};
    double n, mean, m2;
    tg_sync_bn_combine(stats, 2, 1, &n, &mean, &m2);
    cr_assert(n == 5 && mean == 3 && m2 == 10);
}

TG_TEST(sync_bn_math, backward_sums_and_dx_by_hand)
{
    // x = {1, 2, 3, 4, 5}, mean 3, M2 10, n 5, dy = {1, 0, 0, 0, 0}, w 2,
    // invstd taken as 0.5 (exact). Shards {1, 2}, {3, 4, 5}:
    const double x[] = {1, 2, 3, 4, 5}, dy[] = {1, 0, 0, 0, 0};
    const double mean = 3, invstd = 0.5, w = 2;
    double sa[2], sb[2];
    tg_sync_bn_shard_sums(dy, x, &mean, 2, 1, 1, sa);
    tg_sync_bn_shard_sums(dy + 2, x + 2, &mean, 3, 1, 1, sb);
    cr_assert(sa[0] == 1 && sa[1] == -2 && sb[0] == 0 && sb[1] == 0);
    double sums[2] = {sa[0] + sb[0], sa[1] + sb[1]}, dx[5];
    tg_sync_bn_dx(dy, x, &mean, &invstd, &w, sums, 5, 5, 1, 1, dx);
    // dx_i = w r / n (n dy_i - 1 - (x_i - 3) r^2 (-2))
    //      = 0.2 (5 dy_i - 1 + 0.5 (x_i - 3))
    const double want[] = {0.6, -0.3, -0.2, -0.1, 0.0};
    for (int i = 0; i < 5; i++)
        cr_assert(fabs(dx[i] - want[i]) <= 1e-15, "dx[%d] = %.17g, want %g",
                  i, dx[i], want[i]);
}

TG_TEST(sync_bn_math, normalise_by_hand)
{
    const double x[] = {1, 5}, mean = 3, invstd = 0.5, w = 3, b = 1;
    double y[2];
    tg_sync_bn_normalise(x, &mean, &invstd, &w, &b, 2, 1, 1, y);
    cr_assert(y[0] == -2 && y[1] == 4);
    tg_sync_bn_normalise(x, &mean, &invstd, NULL, NULL, 2, 1, 1, y);
    cr_assert(y[0] == -1 && y[1] == 1);
}

/* --------------------------------------------- against NumPy, W shards */

/* The reference array `name` as a malloc'd array of doubles. */
static double *ref_doubles(const char *name, int64_t *numel)
{
    tg_tensor *t = tg_test_load_ref(name);
    double *v = malloc((size_t)(t->numel + 1) * sizeof *v);
    cr_assert(v && tg_to_f64_array(t, v) == 0);
    if (numel)
        *numel = t->numel;
    tg_release(t);
    return v;
}

/* |a - b| <= rtol |b| + atol for every element; prints the first miss. */
static bool all_close(const double *a, const double *b, int64_t n,
                      double rtol, double atol, const char *what)
{
    for (int64_t i = 0; i < n; i++)
        if (!(fabs(a[i] - b[i]) <= rtol * fabs(b[i]) + atol)) {
            cr_log_info("%s[%lld]: %.17g, want %.17g", what, (long long)i,
                        a[i], b[i]);
            return false;
        }
    return true;
}

/* numpy.array_split's rows of shard r of W. */
static void split(int64_t N, int W, int r, int64_t *start, int64_t *count)
{
    int64_t base = N / W, extra = N % W;
    *start = r * base + (r < extra ? r : extra);
    *count = base + (r < extra);
}

enum { N = 11, C = 3, S = 2, ROW = C * S };

typedef enum mistake {
    NONE,
    NO_DELTA_TERM, // M2 = sum of the shards' M2: the spread between means lost
    LOCAL_COUNT,   // dx of each shard with its own count, not the global n
} mistake;

/* The pipeline on W shards of the reference batch, as W ranks run it:
 * stats per shard, combine, normalise, per-shard sums added in shard
 * order, dx per shard with the totals. Writes mean, M2 (C), y, dx (N*ROW)
 * and sums (2C). */
static void pipeline(const double *x, const double *dy, const double *w,
                     const double *b, int W, mistake m, double *mean,
                     double *m2, double *y, double *sums, double *dx)
{
    double stats[5 * 3 * C], n[C], invstd[C], part[2 * C];
    for (int r = 0; r < W; r++) {
        int64_t start, count;
        split(N, W, r, &start, &count);
        tg_sync_bn_shard_stats(x + start * ROW, count, C, S,
                               stats + r * 3 * C);
    }
    tg_sync_bn_combine(stats, W, C, n, mean, m2);
    if (m == NO_DELTA_TERM)
        for (int c = 0; c < C; c++) {
            m2[c] = 0;
            for (int r = 0; r < W; r++)
                m2[c] += stats[r * 3 * C + 2 * C + c];
        }
    for (int c = 0; c < C; c++)
        invstd[c] = 1.0 / sqrt(m2[c] / n[c] + 1e-5);
    tg_sync_bn_normalise(x, mean, invstd, w, b, N, C, S, y);
    memset(sums, 0, 2 * C * sizeof *sums);
    for (int r = 0; r < W; r++) {
        int64_t start, count;
        split(N, W, r, &start, &count);
        tg_sync_bn_shard_sums(dy + start * ROW, x + start * ROW, mean, count,
                              C, S, part);
        for (int k = 0; k < 2 * C; k++)
            sums[k] += part[k];
    }
    for (int r = 0; r < W; r++) {
        int64_t start, count;
        split(N, W, r, &start, &count);
        double nn = m == LOCAL_COUNT ? (double)(count * S) : n[0];
        if (count > 0)
            tg_sync_bn_dx(dy + start * ROW, x + start * ROW, mean, invstd, w,
                          sums, nn, count, C, S, dx + start * ROW);
    }
}

/* Runs the pipeline on W shards and compares every output with NumPy's;
 * true when all agree. */
static bool pipeline_matches_numpy(int W, mistake m)
{
    double *x = ref_doubles("sync_bn_x", NULL);
    double *dy = ref_doubles("sync_bn_dy", NULL);
    double *w = ref_doubles("sync_bn_w", NULL);
    double *b = ref_doubles("sync_bn_b", NULL);
    double *rmean = ref_doubles("sync_bn_mean", NULL);
    double *rm2 = ref_doubles("sync_bn_m2", NULL);
    double *ry = ref_doubles("sync_bn_y", NULL);
    double *rsums = ref_doubles("sync_bn_sums", NULL);
    double *rdx = ref_doubles("sync_bn_dx", NULL);
    double mean[C], m2[C], y[N * ROW], sums[2 * C], dx[N * ROW];
    pipeline(x, dy, w, b, W, m, mean, m2, y, sums, dx);
    bool ok = all_close(mean, rmean, C, 1e-12, 1e-12, "mean") &&
              all_close(m2, rm2, C, 1e-12, 0, "M2") &&
              all_close(y, ry, N * ROW, 1e-12, 1e-12, "y") &&
              all_close(sums, rsums, 2 * C, 1e-12, 1e-12, "sums") &&
              all_close(dx, rdx, N * ROW, 1e-12, 1e-12, "dx");
    free(x), free(dy), free(w), free(b), free(rmean), free(rm2), free(ry);
    free(rsums), free(rdx);
    return ok;
}

TG_TEST(sync_bn_math, shards_match_numpy_for_1_to_5_ranks)
{
    for (int W = 1; W <= 5; W++)
        cr_assert(pipeline_matches_numpy(W, NONE), "W = %d", W);
}

TG_TEST(sync_bn_math, shards_with_empty_ones_match_numpy)
{
    // 11 rows on up to 5 shards leaves none empty; the same batch as one
    // shard of rows plus empty shards around it: the combine and the sums
    // must ignore them
    double *x = ref_doubles("sync_bn_x", NULL);
    double *rm2 = ref_doubles("sync_bn_m2", NULL);
    double *rmean = ref_doubles("sync_bn_mean", NULL);
    double stats[4 * 3 * C], n[C], mean[C], m2[C];
    tg_sync_bn_shard_stats(x, 0, C, S, stats);                // empty
    tg_sync_bn_shard_stats(x, 4, C, S, stats + 3 * C);        // rows 0..3
    tg_sync_bn_shard_stats(x + 4 * ROW, 0, C, S, stats + 6 * C); // empty
    tg_sync_bn_shard_stats(x + 4 * ROW, 7, C, S, stats + 9 * C); // rows 4..10
    tg_sync_bn_combine(stats, 4, C, n, mean, m2);
    cr_assert(n[0] == N * S && n[2] == N * S);
    cr_assert(all_close(mean, rmean, C, 1e-12, 1e-12, "mean"));
    cr_assert(all_close(m2, rm2, C, 1e-12, 0, "M2"));
    free(x), free(rm2), free(rmean);
}

TG_TEST(sync_bn_math, the_comparison_catches_a_missing_delta_term)
{
    // W = 1 has no spread between shards, so the mistake shows from W = 2
    cr_assert(pipeline_matches_numpy(1, NO_DELTA_TERM));
    for (int W = 2; W <= 5; W++)
        cr_assert(!pipeline_matches_numpy(W, NO_DELTA_TERM), "W = %d", W);
}

TG_TEST(sync_bn_math, the_comparison_catches_a_local_count)
{
    for (int W = 2; W <= 5; W++)
        cr_assert(!pipeline_matches_numpy(W, LOCAL_COUNT), "W = %d", W);
}

/* ------------------------------------------------ variance far below eps */

TG_TEST(sync_bn_math, tiny_variance_keeps_its_digits)
{
    enum { TN = 9, TC = 2 };
    double *x = ref_doubles("sync_bn_tiny_x", NULL);
    double *rmean = ref_doubles("sync_bn_tiny_mean", NULL);
    double *rm2 = ref_doubles("sync_bn_tiny_m2", NULL);
    double *ry = ref_doubles("sync_bn_tiny_y", NULL);
    for (int W = 1; W <= 5; W++) {
        double stats[5 * 3 * TC], n[TC], mean[TC], m2[TC], invstd[TC];
        double y[TN * TC];
        for (int r = 0; r < W; r++) {
            int64_t start, count;
            split(TN, W, r, &start, &count);
            tg_sync_bn_shard_stats(x + start * TC, count, TC, 1,
                                   stats + r * 3 * TC);
        }
        tg_sync_bn_combine(stats, W, TC, n, mean, m2);
        cr_assert(all_close(mean, rmean, TC, 1e-15, 0, "mean"), "W = %d", W);
        cr_assert(all_close(m2, rm2, TC, 1e-6, 0, "M2"), "W = %d", W);
        for (int c = 0; c < TC; c++)
            invstd[c] = 1.0 / sqrt(m2[c] / n[c] + 1e-5);
        tg_sync_bn_normalise(x, mean, invstd, NULL, NULL, TN, TC, 1, y);
        // y ~ 3e-2: its error is invstd (~316) times x - mean's (~2e-12)
        cr_assert(all_close(y, ry, TN * TC, 1e-6, 1e-9, "y"), "W = %d", W);
    }
    // and E[x^2] - E[x]^2, the one-pass formula, fails the same check
    double m2[TC];
    for (int c = 0; c < TC; c++) {
        double s = 0, q = 0;
        for (int i = 0; i < TN; i++)
            s += x[i * TC + c], q += x[i * TC + c] * x[i * TC + c];
        m2[c] = q - s * s / TN;
    }
    cr_assert(!all_close(m2, rm2, TC, 1e-6, 0, "one-pass M2"));
    free(x), free(rmean), free(rm2), free(ry);
}
