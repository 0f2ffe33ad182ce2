/*
 * Reference solution of exercise 05 (docs/exercises/05-layer-norm-forward.md).
 *
 * Per row of C values:
 *   mean = sum(x) / C
 *   var  = sum((x - mean)^2) / C       biased: LayerNorm divides by C
 *   rstd = 1 / sqrt(var + eps)         eps inside the sqrt
 *   y    = (x - mean) * rstd * weight + bias
 * The variance is the mean of the squared deviations (two passes), not
 * E[x^2] - E[x]^2, which cancels to noise when |mean| >> std.
 */
#include "exercises.h"

tg_tensor *ex_layer_norm_forward(const tg_tensor *x, const tg_tensor *weight,
                                 const tg_tensor *bias, double eps,
                                 tg_tensor **mean, tg_tensor **rstd)
{
    const int64_t rows = x->shape[0];
    tg_tensor *mu = tg_mean(x, TG_DIMS(-1), true);     // (rows, 1)
    tg_tensor *xc = tg_sub(x, mu);                     // x - mean
    tg_tensor *sq = tg_mul(xc, xc);
    tg_tensor *var = tg_mean(sq, TG_DIMS(-1), true);   // (rows, 1)
    tg_tensor *var_eps = tg_add_scalar(var, eps);
    tg_tensor *rs = tg_rsqrt(var_eps);                 // (rows, 1)
    tg_tensor *xhat = tg_mul(xc, rs);                  // (rows, C)
    tg_tensor *scaled = weight ? tg_mul(xhat, weight) : tg_retain(xhat);
    tg_tensor *y = bias ? tg_add(scaled, bias) : tg_retain(scaled);
    *mean = tg_reshape(mu, &rows, 1);                  // (rows,)
    *rstd = tg_reshape(rs, &rows, 1);
    tg_release(scaled);
    tg_release(xhat);
    tg_release(rs);
    tg_release(var_eps);
    tg_release(var);
    tg_release(sq);
    tg_release(xc);
    tg_release(mu);
    return y;
}
