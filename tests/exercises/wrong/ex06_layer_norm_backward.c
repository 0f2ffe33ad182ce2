/*
 * A wrong answer to exercise 06, which its grader must reject: rstd is
 * treated as a constant, so the path from x through the variance (path (c)
 * of docs/normalization.md section 3) is missing:
 *   dx = rstd * (g - mean(g))      instead of
 *   dx = rstd * (g - mean(g) - xhat * mean(g * xhat))
 * Its rows still sum to zero, and it is right for any dy that makes g
 * constant along the row, which is why a loss of sum(y) cannot catch it.
 */
#include "exercises.h"

int ex_layer_norm_backward(const tg_tensor *dy, const tg_tensor *x,
                           const tg_tensor *weight, const tg_tensor *mean,
                           const tg_tensor *rstd, tg_tensor **dx,
                           tg_tensor **dweight, tg_tensor **dbias)
{
    const int64_t col[2] = {x->shape[0], 1};
    tg_tensor *mu = tg_reshape(mean, col, 2);
    tg_tensor *rs = tg_reshape(rstd, col, 2);
    tg_tensor *xc = tg_sub(x, mu);
    tg_tensor *xhat = tg_mul(xc, rs);
    tg_tensor *g = tg_mul(dy, weight);
    tg_tensor *g_mean = tg_mean(g, TG_DIMS(-1), true);
    tg_tensor *centred = tg_sub(g, g_mean); // wrong: no xhat * mean(g * xhat)
    tg_tensor *dyx = tg_mul(dy, xhat);
    *dx = tg_mul(centred, rs);
    *dweight = tg_sum(dyx, TG_DIMS(0), false);
    *dbias = tg_sum(dy, TG_DIMS(0), false);
    tg_release(dyx);
    tg_release(centred);
    tg_release(g_mean);
    tg_release(g);
    tg_release(xhat);
    tg_release(xc);
    tg_release(rs);
    tg_release(mu);
    return *dx && *dweight && *dbias ? 0 : -1;
}
