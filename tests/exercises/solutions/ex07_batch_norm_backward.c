/*
 * Reference solution of exercise 07 (docs/exercises/07-batch-norm-backward.md).
 *
 * In the forward pass this was, per channel (column) over the N rows:
 *   xhat = (x - mean) * rstd,  y = xhat * weight + bias
 * with the biased variance (divided by N), so now we have
 * (docs/normalization.md section 4, k = 0), sums over the batch:
 *   dx      = weight * rstd / N * (N * dy - sum(dy) - xhat * sum(dy * xhat))
 *   dweight = sum(dy * xhat)
 *   dbias   = sum(dy)
 */
#include "exercises.h"

int ex_batch_norm_backward(const tg_tensor *dy, const tg_tensor *x,
                           const tg_tensor *weight, const tg_tensor *mean,
                           const tg_tensor *rstd, tg_tensor **dx,
                           tg_tensor **dweight, tg_tensor **dbias)
{
    const double n = (double)x->shape[0];
    tg_tensor *xc = tg_sub(x, mean);                  // (N, C) - (C,)
    tg_tensor *xhat = tg_mul(xc, rstd);
    tg_tensor *dyx = tg_mul(dy, xhat);
    tg_tensor *s1 = tg_sum(dy, TG_DIMS(0), false);    // sum(dy), (C,)
    tg_tensor *s2 = tg_sum(dyx, TG_DIMS(0), false);   // sum(dy * xhat)
    tg_tensor *ndy = tg_mul_scalar(dy, n);
    tg_tensor *t1 = tg_sub(ndy, s1);                  // N dy - sum(dy)
    tg_tensor *t2 = tg_mul(xhat, s2);
    tg_tensor *bracket = tg_sub(t1, t2);
    tg_tensor *wr = tg_mul(weight, rstd);             // (C,)
    tg_tensor *scale = tg_div_scalar(wr, n);          // weight * rstd / N
    *dx = tg_mul(scale, bracket);
    *dweight = s2;
    *dbias = s1;
    tg_release(scale);
    tg_release(wr);
    tg_release(bracket);
    tg_release(t2);
    tg_release(t1);
    tg_release(ndy);
    tg_release(dyx);
    tg_release(xhat);
    tg_release(xc);
    return *dx && *dweight && *dbias ? 0 : -1;
}
