/*
 * dist/sync_batch_norm.c - BatchNorm whose statistics are those of the
 * whole batch, spread over the ranks (PyTorch's SyncBatchNorm, on CPU).
 *
 * What it is: one differentiable op, tg_sync_batch_norm, equal to
 * tg_batch_norm on the concatenation of the ranks' shards. What it is not:
 * a module (wrap it in a layer of your own), nor a new normalisation: the
 * formulas are BatchNorm's (docs/normalization.md); only where the sums
 * come from changes.
 *
 * Forward. Each rank r has, per channel, its count n_r, mean m_r and
 * M2_r = sum (x - m_r)^2 (two passes over its rows). One all-gather gives
 * every rank all of them, and each combines them in rank order with
 * Chan's parallel formula, skipping ranks with no rows:
 *
 *     n     = n_a + n_b
 *     delta = m_b - m_a
 *     m     = m_a + delta * n_b / n
 *     M2    = M2_a + M2_b + delta^2 * n_a * n_b / n
 *
 * M2 is gathered, not the variance or 1/sqrt(var + eps): M2 keeps its
 * precision when var << eps, where invstd does not. Then var = M2 / n
 * (biased) normalises, and the running variance takes M2 / (n - 1).
 *
 * Backward. With xhat = (x - mean) * invstd, BatchNorm's
 *
 *     dx = w * invstd / n * (n * dy - sum(dy) - xhat * sum(dy * xhat))
 *
 * needs two sums over the WHOLE batch per channel; sum(dy * xhat) =
 * invstd * sum(dy * (x - mean)), so one all-reduce of
 * [sum(dy), sum(dy * (x - mean))] gives both, and every rank applies the
 * formula to its own rows with the global n. The weight and bias
 * gradients stay local (sum(dy * xhat) and sum(dy) over this rank's rows):
 * tg_dist_all_reduce_grads adds them up like every other parameter's.
 *
 * A rank with no rows joins both collectives with zero counts and sums.
 *
 * The arithmetic (a shard's statistics, the combine, the two sums, dx) is
 * autograd/ops/sync_batch_norm_math.c's, shared with
 * tg_batch_norm_virtual_ranks: this file only moves its numbers between
 * the ranks.
 */
#include "internal.h"

#include "../tensor/internal.h"
#include "../autograd/ops/sync_batch_norm_math.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* -------------------------------------------------------------- the op */

typedef struct sync_args {
    tg_process_group *pg;
    tg_tensor *running_mean, *running_var; // (C,) or NULL
    double momentum, eps;
} sync_args;

typedef struct sync_saved {
    tg_process_group *pg; // borrowed: must live until backward
    double n;             // the global count per channel
    bool affine;
} sync_saved;

/* x as doubles in C order, and its (N, C, S) view: S = prod(shape[2:]). */
static double *doubles_of(const tg_tensor *x)
{
    double *v = tg_malloc((size_t)(x->numel + 1) * sizeof *v);
    if (v && tg_to_f64_array(x, v) != 0) {
        free(v);
        return NULL;
    }
    if (!v)
        tg_error("tg_sync_batch_norm", "out of memory for %lld values",
                 (long long)x->numel);
    return v;
}

/* A new tensor of shape like x's (dtype dtype) holding v. */
static tg_tensor *tensor_of(const double *v, const int64_t *shape, int ndim,
                            tg_dtype dtype)
{
    tg_tensor *t = tg_from_array(v, shape, ndim, TG_FLOAT64);
    if (!t || dtype == TG_FLOAT64)
        return t;
    tg_tensor *c = tg_to_dtype(t, dtype);
    tg_release(t);
    return c;
}

static tg_tensor *sync_forward(tg_ctx *ctx, const tg_tensor *const *in,
                               int nin, const void *argp)
{
    static const char *fn = "tg_sync_batch_norm";
    const sync_args *a = argp;
    const tg_tensor *x = in[0];
    const tg_tensor *w = nin > 1 ? in[1] : NULL, *b = nin > 2 ? in[2] : NULL;
    int64_t N = x->shape[0], C = x->shape[1], S = 1;
    for (int d = 2; d < x->ndim; d++)
        S *= x->shape[d];
    double *xv = doubles_of(x);
    tg_tensor *mine = tg_zeros(TG_SHAPE(3, C), TG_FLOAT64);
    if (!xv || !mine) {
        free(xv);
        tg_release(mine);
        return NULL;
    }
    // this rank's count, mean and M2 per channel (two passes)
    tg_sync_bn_shard_stats(xv, N, C, S, tg_data_f64(mine));
    tg_tensor *all = tg_all_gather(a->pg, mine); // (W, 3, C)
    tg_release(mine);
    tg_tensor *mean_t = tg_zeros(TG_SHAPE(C), TG_FLOAT64);
    tg_tensor *invstd_t = tg_zeros(TG_SHAPE(C), TG_FLOAT64);
    double *n = tg_malloc((size_t)(C + 1) * sizeof *n);
    double *m2 = tg_malloc((size_t)(C + 1) * sizeof *m2);
    tg_tensor *y = NULL;
    if (!all || !mean_t || !invstd_t || !n || !m2)
        goto done;
    double *mean = tg_data_f64(mean_t), *invstd = tg_data_f64(invstd_t);
    tg_sync_bn_combine(tg_data_f64(all), tg_process_group_size(a->pg), C, n,
                       mean, m2);
    if (C > 0 && n[0] <= 1) {
        tg_error(fn,
                 "the ranks hold %.0f value(s) per channel in all, fewer "
                 "than 2\n"
                 "  rule: training needs more than 1 value per channel over "
                 "all the ranks (the variance of one value is not defined)\n"
                 "  hint: give the ranks more rows, or call it in eval mode "
                 "(training false)",
                 n[0]);
        goto done;
    }
    for (int64_t c = 0; c < C; c++)
        invstd[c] = 1.0 / sqrt(m2[c] / n[c] + a->eps);
    // y = (x - mean) * invstd * w + b, in double, rounded once
    double *wv = w ? doubles_of(w) : NULL, *bv = b ? doubles_of(b) : NULL;
    tg_sync_bn_normalise(xv, mean, invstd, wv, bv, N, C, S, xv);
    free(wv);
    free(bv);
    y = tensor_of(xv, x->shape, x->ndim, x->dtype);
    // the running statistics: global mean and UNBIASED variance
    if (y && a->running_mean) {
        double mo = a->momentum;
        double *rm = doubles_of(a->running_mean), *rv = doubles_of(a->running_var);
        for (int64_t c = 0; rm && rv && c < C; c++) {
            rm[c] = (1 - mo) * rm[c] + mo * mean[c];
            rv[c] = (1 - mo) * rv[c] + mo * m2[c] / (n[c] - 1);
        }
        tg_tensor *rmt = rm ? tg_from_array(rm, TG_SHAPE(C), TG_FLOAT64) : NULL;
        tg_tensor *rvt = rv ? tg_from_array(rv, TG_SHAPE(C), TG_FLOAT64) : NULL;
        if (!rmt || !rvt || tg_copy_(a->running_mean, rmt) != 0 ||
            tg_copy_(a->running_var, rvt) != 0) {
            tg_release(y);
            y = NULL;
        }
        tg_release(rmt);
        tg_release(rvt);
        free(rm);
        free(rv);
    }
    sync_saved *sv = tg_ctx_data(ctx);
    sv->pg = a->pg;
    sv->n = C > 0 ? n[0] : 0;
    sv->affine = w != NULL;
    if (y && (tg_ctx_save(ctx, x) < 0 || tg_ctx_save(ctx, mean_t) < 0 ||
              tg_ctx_save(ctx, invstd_t) < 0 || (w && tg_ctx_save(ctx, w) < 0))) {
        tg_release(y);
        y = NULL;
    }
done:
    free(xv);
    free(n);
    free(m2);
    tg_release(all);
    tg_release(mean_t);
    tg_release(invstd_t);
    return y;
}

/* In the forward pass this was:
 *     y = (x - mean) * invstd * w + b     (mean, invstd of the whole batch)
 * so, with S1 = sum(dy) and S2 = sum(dy * (x - mean)) over every rank:
 *     dx = w * invstd / n * (n * dy - S1 - (x - mean) * invstd^2 * S2)
 *     dw = invstd * s2,  db = s1          (this rank's rows: s1, s2) */
static int sync_backward(tg_ctx *ctx, const tg_tensor *grad_out,
                         tg_tensor **grad_in)
{
    const sync_saved *sv = tg_ctx_data(ctx);
    const tg_tensor *x = tg_ctx_saved(ctx, 0);
    const double *mean = tg_data_f64(tg_ctx_saved(ctx, 1));
    const double *invstd = tg_data_f64(tg_ctx_saved(ctx, 2));
    int64_t N = x->shape[0], C = x->shape[1], S = 1;
    for (int d = 2; d < x->ndim; d++)
        S *= x->shape[d];
    double *xv = doubles_of(x), *dy = doubles_of(grad_out);
    double *wv = sv->affine ? doubles_of(tg_ctx_saved(ctx, 3)) : NULL;
    tg_tensor *local = tg_zeros(TG_SHAPE(2, C), TG_FLOAT64);
    tg_tensor *total = NULL;
    int rc = -1;
    if (!xv || !dy || (sv->affine && !wv) || !local)
        goto done;
    double *s = tg_data_f64(local); // [s1 (C), s2 (C)] of this rank's rows
    tg_sync_bn_shard_sums(dy, xv, mean, N, C, S, s);
    total = tg_all_reduce(sv->pg, local, TG_REDUCE_SUM); // every rank joins
    if (!total)
        goto done;
    const double *g = tg_data_f64(total);
    double n = sv->n;
    if (tg_ctx_needs_grad(ctx, 0)) {
        double *dx = tg_malloc((size_t)(x->numel + 1) * sizeof *dx);
        if (!dx)
            goto done;
        tg_sync_bn_dx(dy, xv, mean, invstd, wv, g, n, N, C, S, dx);
        grad_in[0] = tensor_of(dx, x->shape, x->ndim, x->dtype);
        free(dx);
        if (!grad_in[0])
            goto done;
    }
    if (sv->affine) {
        double *dw = tg_malloc((size_t)(C + 1) * sizeof *dw);
        if (!dw)
            goto done;
        for (int64_t c = 0; c < C; c++)
            dw[c] = invstd[c] * s[C + c];
        if (tg_ctx_needs_grad(ctx, 1))
            grad_in[1] = tensor_of(dw, TG_SHAPE(C), x->dtype);
        if (tg_ctx_needs_grad(ctx, 2))
            grad_in[2] = tensor_of(s, TG_SHAPE(C), x->dtype);
        free(dw);
    }
    rc = 0;
done:
    free(xv);
    free(dy);
    free(wv);
    tg_release(local);
    tg_release(total);
    return rc;
}

static const tg_function sync_fn = {"SyncBatchNormBackward", sync_forward,
                                    sync_backward, sizeof(sync_saved)};

/* ------------------------------------------------------------- the API */

/* A float tensor of shape (C,) and dtype, or NULL. */
static bool channel_vector_ok(const tg_tensor *t, int64_t C, tg_dtype dtype)
{
    return !t || (t->ndim == 1 && t->shape[0] == C && t->dtype == dtype);
}

tg_tensor *tg_sync_batch_norm(tg_process_group *pg, const tg_tensor *x,
                              tg_tensor *running_mean, tg_tensor *running_var,
                              const tg_tensor *weight, const tg_tensor *bias,
                              bool training, double momentum, double eps)
{
    static const char *fn = "tg_sync_batch_norm";
    if (!pg)
        return NULL;
    if (!training) // the running statistics: nothing to share
        return tg_batch_norm(x, running_mean, running_var, weight, bias, false,
                             momentum, eps);
    bool ok = x != NULL;
    char s[TG_SHAPE_STR_MAX];
    if (ok && (x->ndim < 2 || !tg_dtype_is_float(x->dtype))) {
        tg_error(fn,
                 "cannot normalise a %s %s tensor\n"
                 "  rule: x is (N, C, ...) with at least 2 dims, float32 or "
                 "float64; channel is dim 1",
                 tg_shape_str(x, s), tg_dtype_name(x->dtype));
        ok = false;
    } else if (ok && (!channel_vector_ok(weight, x->shape[1], x->dtype) ||
                      !channel_vector_ok(bias, x->shape[1], x->dtype) ||
                      !channel_vector_ok(running_mean, x->shape[1], x->dtype) ||
                      !channel_vector_ok(running_var, x->shape[1], x->dtype) ||
                      !running_mean != !running_var || !weight != !bias)) {
        tg_error(fn,
                 "weight, bias, running_mean or running_var does not fit x "
                 "of shape %s\n"
                 "  rule: each is (C,) = (%lld,) of x's dtype (%s), or NULL: "
                 "weight with bias, running_mean with running_var",
                 tg_shape_str(x, s), (long long)x->shape[1],
                 tg_dtype_name(x->dtype));
        ok = false;
    }
    // the ranks agree on everything but the number of rows
    tg_tensor *rest = NULL;
    if (ok) {
        int64_t shape[TG_MAX_DIMS];
        memcpy(shape, x->shape, sizeof shape);
        shape[0] = 0;
        rest = tg_empty(shape, x->ndim, x->dtype);
        ok = rest != NULL;
    }
    int rc = tg_dist_agree(pg, fn, TG_DIST_SYNC_BN, rest, 0, ok,
                           "x (its rows aside)");
    tg_release(rest);
    if (rc != 0)
        return NULL;
    sync_args a = {pg, running_mean, running_var, momentum, eps};
    const tg_tensor *in[3] = {x, weight, bias};
    return tg_function_apply(&sync_fn, in, weight ? 3 : 1, &a);
}
