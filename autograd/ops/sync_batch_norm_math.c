/*
 * autograd/ops/sync_batch_norm_math.c - BatchNorm over a batch split into
 * shards, the way SyncBatchNorm computes it: each shard's count, mean and
 * M2, Chan's combine in shard order, and a backward made of two sums per
 * channel that add up over the shards. Then tg_batch_norm_virtual_ranks,
 * which runs that arithmetic on W shards of one batch in one process.
 *
 * What it is: the shared arithmetic of dist/sync_batch_norm.c (which sends
 * the same per-shard numbers through MPI) and a differentiable op that
 * shows, with no MPI at all, what W ranks compute together. What it is
 * not: a faster BatchNorm (batch_norm.c is that; the result here is the
 * same up to rounding), nor a different normalisation. The math is
 * derived in docs/distributed.md; BatchNorm's own in docs/normalization.md.
 *
 * Forward. Shard r holds rows [start_r, start_r + N_r) of x (numpy's
 * array_split: the first N % W shards one row longer; a shard may be
 * empty). Per channel, shard r has count n_r = N_r * S, mean m_r and
 * M2_r = sum((x - m_r)^2). Combined in shard order, skipping empty ones:
 *
 *     n     = n_a + n_b
 *     delta = m_b - m_a
 *     m     = m_a + delta * n_b / n
 *     M2    = M2_a + M2_b + delta^2 * n_a * n_b / n
 *
 * var = M2 / n (biased) normalises; the running variance takes
 * M2 / (n - 1). M2 is what travels, not var or invstd: it keeps its
 * precision when var << eps.
 *
 * Backward. BatchNorm's closed form
 *
 *     dx = w * invstd / n * (n * dy - sum(dy) - xhat * sum(dy * xhat))
 *
 * needs two sums over the whole batch; with xhat = (x - mean) * invstd,
 * sum(dy * xhat) = invstd * sum(dy * (x - mean)), so each shard sends
 * [sum(dy), sum(dy * (x - mean))] and each applies the formula to its own
 * rows with the global n.
 */
#include "../internal.h"
#include "sync_batch_norm_math.h"

#include <math.h>
#include <stdlib.h>

/* ------------------------------------------------------- the arithmetic */

void tg_sync_bn_shard_stats(const double *x, int64_t N, int64_t C,
                            int64_t S, double *stats)
{
    double *count = stats, *mean = stats + C, *m2 = stats + 2 * C;
    for (int64_t c = 0; c < C; c++) {
        double sum = 0.0, q = 0.0, n = (double)(N * S);
        for (int64_t i = 0; i < N; i++)
            for (int64_t s = 0; s < S; s++)
                sum += x[(i * C + c) * S + s];
        double m = n > 0 ? sum / n : 0.0;
        for (int64_t i = 0; i < N; i++)
            for (int64_t s = 0; s < S; s++) {
                double d = x[(i * C + c) * S + s] - m;
                q += d * d;
            }
        count[c] = n;
        mean[c] = m;
        m2[c] = q;
    }
}

void tg_sync_bn_combine(const double *stats, int world, int64_t C,
                        double *n, double *mean, double *m2)
{
    for (int64_t c = 0; c < C; c++) {
        double na = 0.0, ma = 0.0, qa = 0.0;
        for (int r = 0; r < world; r++) {
            const double *s = stats + (int64_t)r * 3 * C;
            double nb = s[c], mb = s[C + c], qb = s[2 * C + c];
            if (nb == 0)
                continue; // an empty shard adds nothing (its mean is no number)
            double tot = na + nb, delta = mb - ma;
            ma += delta * nb / tot;
            qa += qb + delta * delta * na * nb / tot;
            na = tot;
        }
        n[c] = na;
        mean[c] = ma;
        m2[c] = qa;
    }
}

void tg_sync_bn_shard_sums(const double *dy, const double *x,
                           const double *mean, int64_t N, int64_t C,
                           int64_t S, double *sums)
{
    for (int64_t c = 0; c < 2 * C; c++)
        sums[c] = 0.0;
    for (int64_t i = 0; i < N; i++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t s = 0; s < S; s++) {
                int64_t at = (i * C + c) * S + s;
                sums[c] += dy[at];
                sums[C + c] += dy[at] * (x[at] - mean[c]);
            }
}

void tg_sync_bn_normalise(const double *x, const double *mean,
                          const double *invstd, const double *w,
                          const double *b, int64_t N, int64_t C, int64_t S,
                          double *y)
{
    for (int64_t i = 0; i < N; i++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t s = 0; s < S; s++) {
                int64_t at = (i * C + c) * S + s;
                double v = (x[at] - mean[c]) * invstd[c];
                y[at] = v * (w ? w[c] : 1.0) + (b ? b[c] : 0.0);
            }
}

/* In the forward pass this was:
 *     y = (x - mean) * invstd * w + b     (mean, invstd of the whole batch)
 * so, with S1 = sum(dy) and S2 = sum(dy * (x - mean)) over every shard:
 *     dx = w * invstd / n * (n * dy - S1 - (x - mean) * invstd^2 * S2) */
void tg_sync_bn_dx(const double *dy, const double *x, const double *mean,
                   const double *invstd, const double *w,
                   const double *sums, double n, int64_t N, int64_t C,
                   int64_t S, double *dx)
{
    for (int64_t i = 0; i < N; i++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t s = 0; s < S; s++) {
                int64_t at = (i * C + c) * S + s;
                double r = invstd[c];
                dx[at] = (w ? w[c] : 1.0) * r / n *
                         (n * dy[at] - sums[c] -
                          (x[at] - mean[c]) * r * r * sums[C + c]);
            }
}

/* ------------------------------------------------------- virtual ranks */

/* The rows [start, start + count) of N that shard r of W takes: the first
 * N % W shards one row longer (tg_dist_shard_range's split). */
static void shard_rows(int64_t N, int W, int r, int64_t *start,
                       int64_t *count)
{
    int64_t base = N / W, extra = N % W;
    *start = r * base + (r < extra ? r : extra);
    *count = base + (r < extra ? 1 : 0);
}

/* Inputs: 0 x, 1 weight, 2 bias. Saved: 0 x, 1 mean (C,), 2 invstd (C,),
 * both float64, 3 weight when there is one. */
typedef struct virtual_ctx {
    int64_t N, C, S; // x as a contiguous (N, C, S) block
    int world;
    double n; // values per channel in the whole batch
    bool has_weight;
} virtual_ctx;

/* x's values as a new contiguous array of doubles (free()), or NULL after
 * an error. */
static double *doubles_of(const tg_tensor *x)
{
    double *v = tg_malloc((size_t)(x->numel + 1) * sizeof *v);
    if (v && tg_to_f64_array(x, v) != 0) {
        free(v);
        return NULL;
    }
    return v;
}

/* forward: y = (x - mean) * invstd * w + b with the whole batch's mean and
 * invstd, assembled from the shards (above). Each shard's [sum(dy),
 * sum(dy * (x - mean))] is taken on its own rows and the shards' sums are
 * added in shard order, as an all-reduce would; then every row gets
 * tg_sync_bn_dx with the totals, and
 *     dw = invstd * sum(dy * (x - mean)),  db = sum(dy). */
static int virtual_backward(tg_node *node, const tg_tensor *g,
                            tg_tensor **grads)
{
    const virtual_ctx *c = tg_node_ctx(node);
    const int64_t C = c->C, rowsize = c->C * c->S;
    const tg_tensor *x = tg_node_saved(node, 0);
    const double *mean = (const double *)tg_base_ptr(tg_node_saved(node, 1));
    const double *invstd =
        (const double *)tg_base_ptr(tg_node_saved(node, 2));
    double *xv = doubles_of(x), *dy = doubles_of(g);
    double *wv = c->has_weight ? doubles_of(tg_node_saved(node, 3)) : NULL;
    double *sums = tg_malloc((size_t)(4 * C + 1) * sizeof *sums);
    double *dx = tg_node_needs_grad(node, 0)
                     ? tg_malloc((size_t)(x->numel + 1) * sizeof *dx)
                     : NULL;
    int rc = -1;
    if (!xv || !dy || (c->has_weight && !wv) || !sums ||
        (tg_node_needs_grad(node, 0) && !dx))
        goto done;
    double *total = sums, *mine = sums + 2 * C; // (2C,) each
    for (int64_t k = 0; k < 2 * C; k++)
        total[k] = 0.0;
    for (int r = 0; r < c->world; r++) {
        int64_t start, count;
        shard_rows(c->N, c->world, r, &start, &count);
        tg_sync_bn_shard_sums(dy + start * rowsize, xv + start * rowsize,
                              mean, count, C, c->S, mine);
        for (int64_t k = 0; k < 2 * C; k++)
            total[k] += mine[k];
    }
    if (dx) {
        tg_sync_bn_dx(dy, xv, mean, invstd, wv, total, c->n, c->N, C, c->S,
                      dx);
        if (!(grads[0] = tg_alloc_from_f64(dx, x->shape, x->ndim, x->dtype)))
            goto done;
    }
    for (int64_t k = 0; k < C; k++)
        mine[k] = invstd[k] * total[C + k]; // dw = sum(dy * xhat)
    if (tg_node_needs_grad(node, 1) &&
        !(grads[1] = tg_alloc_from_f64(mine, &c->C, 1, x->dtype)))
        goto done;
    if (tg_node_needs_grad(node, 2) &&
        !(grads[2] = tg_alloc_from_f64(total, &c->C, 1, x->dtype)))
        goto done;
    rc = 0;
done:
    if (rc != 0) // every way here is a failed allocation
        tg_error("tg_batch_norm_virtual_ranks",
                 "out of memory in the backward");
    free(xv);
    free(dy);
    free(wv);
    free(sums);
    free(dx);
    return rc;
}
static const tg_op virtual_op = {"SyncBatchNormBackward",
                                 virtual_backward, sizeof(virtual_ctx)};

/* running = (1 - momentum) * running + momentum * batch, in place and
 * without a gradient, with the same tensor ops (and so the same roundings)
 * as tg_batch_norm's update. batch is (C,) float64. 0 or -1. */
static int running_move(tg_tensor *running, const double *batch, int64_t C,
                        double momentum)
{
    tg_no_grad_begin();
    tg_tensor *b = tg_alloc_from_f64(batch, &C, 1, TG_FLOAT64);
    tg_tensor *kept = b ? tg_mul_scalar(running, 1.0 - momentum) : NULL;
    tg_tensor *added = kept ? tg_mul_scalar(b, momentum) : NULL;
    tg_tensor *sum = added ? tg_add(kept, added) : NULL;
    int rc = sum && tg_copy_(running, sum) == 0 ? 0 : -1;
    tg_release(sum);
    tg_release(added);
    tg_release(kept);
    tg_release(b);
    tg_no_grad_end();
    return rc;
}

static tg_tensor *virtual_training(const tg_tensor *x, int W,
                                   tg_tensor *running_mean,
                                   tg_tensor *running_var,
                                   const tg_tensor *weight,
                                   const tg_tensor *bias,
                                   const tg_batch_norm_options *o)
{
    int64_t N = x->shape[0], C = x->shape[1], S = 1;
    for (int d = 2; d < x->ndim; d++)
        S *= x->shape[d];
    const int64_t rowsize = C * S;
    double *xv = doubles_of(x);
    double *wv = weight ? doubles_of(weight) : NULL;
    double *bv = bias ? doubles_of(bias) : NULL;
    double *stats = tg_malloc((size_t)(3 * C * W + 1) * sizeof *stats);
    double *m2 = tg_malloc((size_t)(2 * C + 1) * sizeof *m2);
    tg_tensor *mean_t = tg_alloc(&C, 1, TG_FLOAT64);
    tg_tensor *invstd_t = tg_alloc(&C, 1, TG_FLOAT64);
    tg_tensor *out = NULL;
    if (!xv || (weight && !wv) || (bias && !bv) || !stats || !m2 ||
        !mean_t || !invstd_t)
        goto done;
    double *n = m2 + C; // (C,): the whole batch's count per channel
    double *mean = (double *)tg_base_ptr(mean_t);
    double *invstd = (double *)tg_base_ptr(invstd_t);
    for (int r = 0; r < W; r++) {
        int64_t start, count;
        shard_rows(N, W, r, &start, &count);
        tg_sync_bn_shard_stats(xv + start * rowsize, count, C, S,
                               stats + (int64_t)r * 3 * C);
    }
    tg_sync_bn_combine(stats, W, C, n, mean, m2);
    for (int64_t c = 0; c < C; c++) { // var + eps = 0 gives invstd 0, as BatchNorm
        double v = m2[c] / n[c] + o->eps;
        invstd[c] = n[c] > 0 && v > 0 ? 1.0 / sqrt(v) : 0.0;
    }
    tg_sync_bn_normalise(xv, mean, invstd, wv, bv, N, C, S, xv);
    out = tg_alloc_from_f64(xv, x->shape, x->ndim, x->dtype);
    tg_node *node = tg_record(&virtual_op, &out, TG_INPUTS(x, weight, bias));
    if (node) {
        virtual_ctx *c = tg_node_ctx(node);
        *c = (virtual_ctx){N, C, S, W, (double)(N * S), weight != NULL};
        if (tg_node_save(node, x) < 0 || tg_node_save(node, mean_t) < 0 ||
            tg_node_save(node, invstd_t) < 0 ||
            (weight && tg_node_save(node, weight) < 0)) {
            tg_release(out);
            out = NULL;
        }
    }
    // last, so that a failure leaves the running statistics alone; an
    // empty batch has no statistics to add
    if (out && running_mean && N * S > 0) {
        for (int64_t c = 0; c < C; c++)
            m2[c] /= n[c] - 1.0; // the unbiased variance
        if (running_move(running_mean, mean, C, o->momentum) != 0 ||
            running_move(running_var, m2, C, o->momentum) != 0) {
            tg_release(out);
            out = NULL;
        }
    }
done:
    if (!out && (!xv || (weight && !wv) || (bias && !bv) || !stats || !m2 ||
                 !mean_t || !invstd_t))
        tg_error("tg_batch_norm_virtual_ranks",
                 "out of memory for the statistics of %d shards", W);
    free(xv);
    free(wv);
    free(bv);
    free(stats);
    free(m2);
    tg_release(mean_t);
    tg_release(invstd_t);
    return out;
}

tg_tensor *tg_batch_norm_virtual_ranks(const tg_tensor *x, int world_size,
                                       tg_tensor *running_mean,
                                       tg_tensor *running_var,
                                       const tg_tensor *weight,
                                       const tg_tensor *bias,
                                       const tg_batch_norm_options *opts)
{
    static const char *fn = "tg_batch_norm_virtual_ranks";
    tg_batch_norm_options o = tg_batch_norm_options_resolve(opts);
    if (!x)
        return NULL;
    tg_check_alive(fn, x);
    tg_check_alive(fn, running_mean);
    tg_check_alive(fn, running_var);
    tg_check_alive(fn, weight);
    tg_check_alive(fn, bias);
    if (world_size < 1) {
        tg_error(fn,
                 "world_size is %d\n"
                 "  rule: the batch is split into world_size >= 1 shards, "
                 "one per simulated rank\n"
                 "  hint: world_size 1 is plain BatchNorm; use the number "
                 "of processes you want to imitate",
                 world_size);
        return NULL;
    }
    if (o.correction != 0) {
        tg_error(fn,
                 "correction is %lld\n"
                 "  rule: SyncBatchNorm normalises with the biased variance "
                 "(correction 0), as PyTorch's does\n"
                 "  hint: leave correction at 0 (tg_batch_norm_defaults())",
                 (long long)o.correction);
        return NULL;
    }
    if (tg_batch_norm_args_check(fn, x, running_mean, running_var, weight,
                                 bias, &o) < 0)
        return NULL;
    if (o.eval) // the running statistics: no shard has anything to add
        return tg_batch_norm_ex(x, running_mean, running_var, weight, bias,
                                &o, NULL, NULL);
    return virtual_training(x, world_size, running_mean, running_var, weight,
                            bias, &o);
}
