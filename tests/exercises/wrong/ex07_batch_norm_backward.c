/*
 * A wrong answer to exercise 07, which its grader must reject: makemore
 * part 4's formula copied from the lecture,
 *   dx = weight * rstd / N * (N dy - sum(dy) - N/(N-1) * xhat * sum(dy * xhat))
 * The lecture's forward normalised with the unbiased variance (divided by
 * N - 1), which is where the factor N/(N-1) comes from; this exercise's
 * forward divides by N, as PyTorch does, and has no such factor.
 */
#include "exercises.h"

int ex_batch_norm_backward(const tg_tensor *dy, const tg_tensor *x,
                           const tg_tensor *weight, const tg_tensor *mean,
                           const tg_tensor *rstd, tg_tensor **dx,
                           tg_tensor **dweight, tg_tensor **dbias)
{
    const double n = (double)x->shape[0];
    tg_tensor *xc = tg_sub(x, mean);
    tg_tensor *xhat = tg_mul(xc, rstd);
    tg_tensor *dyx = tg_mul(dy, xhat);
    tg_tensor *s1 = tg_sum(dy, TG_DIMS(0), false);
    tg_tensor *s2 = tg_sum(dyx, TG_DIMS(0), false);
    tg_tensor *ndy = tg_mul_scalar(dy, n);
    tg_tensor *t1 = tg_sub(ndy, s1);
    tg_tensor *t2 = tg_mul(xhat, s2);
    tg_tensor *t2n = tg_mul_scalar(t2, n / (n - 1)); // wrong: the lecture's
    tg_tensor *bracket = tg_sub(t1, t2n);            // unbiased factor
    tg_tensor *wr = tg_mul(weight, rstd);
    tg_tensor *scale = tg_div_scalar(wr, n);
    *dx = tg_mul(scale, bracket);
    *dweight = s2;
    *dbias = s1;
    tg_release(scale);
    tg_release(wr);
    tg_release(bracket);
    tg_release(t2n);
    tg_release(t2);
    tg_release(t1);
    tg_release(ndy);
    tg_release(dyx);
    tg_release(xhat);
    tg_release(xc);
    return *dx && *dweight && *dbias ? 0 : -1;
}
