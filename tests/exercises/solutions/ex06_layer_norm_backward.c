/*
 * Reference solution of exercise 06 (docs/exercises/06-layer-norm-backward.md).
 *
 * In the forward pass this was, per row:
 *   xhat = (x - mean) * rstd,  y = xhat * weight + bias
 * so now we have (docs/normalization.md section 3; llm.c's
 * layernorm_backward, where dnorm is g and norm is xhat):
 *   g       = dy * weight                      the gradient reaching xhat
 *   dx      = rstd * (g - mean(g) - xhat * mean(g * xhat))   means per row
 *   dweight = sum over rows of dy * xhat
 *   dbias   = sum over rows of dy
 */
#include "exercises.h"

int ex_layer_norm_backward(const tg_tensor *dy, const tg_tensor *x,
                           const tg_tensor *weight, const tg_tensor *mean,
                           const tg_tensor *rstd, tg_tensor **dx,
                           tg_tensor **dweight, tg_tensor **dbias)
{
    const int64_t col[2] = {x->shape[0], 1};
    tg_tensor *mu = tg_reshape(mean, col, 2);          // (rows, 1)
    tg_tensor *rs = tg_reshape(rstd, col, 2);          // (rows, 1)
    tg_tensor *xc = tg_sub(x, mu);
    tg_tensor *xhat = tg_mul(xc, rs);                  // (rows, C)
    tg_tensor *g = tg_mul(dy, weight);                 // dnorm
    tg_tensor *g_mean = tg_mean(g, TG_DIMS(-1), true); // (rows, 1)
    tg_tensor *gx = tg_mul(g, xhat);
    tg_tensor *gx_mean = tg_mean(gx, TG_DIMS(-1), true);
    tg_tensor *along = tg_mul(xhat, gx_mean);          // through rstd
    tg_tensor *centred = tg_sub(g, g_mean);            // through mean
    tg_tensor *d = tg_sub(centred, along);
    tg_tensor *dyx = tg_mul(dy, xhat);
    *dx = tg_mul(d, rs);
    *dweight = tg_sum(dyx, TG_DIMS(0), false);         // (C,)
    *dbias = tg_sum(dy, TG_DIMS(0), false);
    tg_release(dyx);
    tg_release(d);
    tg_release(centred);
    tg_release(along);
    tg_release(gx_mean);
    tg_release(gx);
    tg_release(g_mean);
    tg_release(g);
    tg_release(xhat);
    tg_release(xc);
    tg_release(rs);
    tg_release(mu);
    return *dx && *dweight && *dbias ? 0 : -1;
}
