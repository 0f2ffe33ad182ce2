/*
 * A wrong answer to exercise 05, which its grader must reject: the
 * variance is the unbiased one, sum((x - mean)^2) / (C - 1), which is
 * tg_var's and torch.var's default (correction 1). LayerNorm divides by C.
 * The numbers look plausible (each row comes out with a variance a little
 * under 1), and a row of one element gives NaN.
 */
#include "exercises.h"

tg_tensor *ex_layer_norm_forward(const tg_tensor *x, const tg_tensor *weight,
                                 const tg_tensor *bias, double eps,
                                 tg_tensor **mean, tg_tensor **rstd)
{
    const int64_t rows = x->shape[0];
    tg_tensor *mu = tg_mean(x, TG_DIMS(-1), true);
    tg_tensor *xc = tg_sub(x, mu);
    tg_tensor *var = tg_var(x, TG_DIMS(-1), 1, true); // wrong: correction 1
    tg_tensor *var_eps = tg_add_scalar(var, eps);
    tg_tensor *rs = tg_rsqrt(var_eps);
    tg_tensor *xhat = tg_mul(xc, rs);
    tg_tensor *scaled = weight ? tg_mul(xhat, weight) : tg_retain(xhat);
    tg_tensor *y = bias ? tg_add(scaled, bias) : tg_retain(scaled);
    *mean = tg_reshape(mu, &rows, 1);
    *rstd = tg_reshape(rs, &rows, 1);
    tg_release(scaled);
    tg_release(xhat);
    tg_release(rs);
    tg_release(var_eps);
    tg_release(var);
    tg_release(xc);
    tg_release(mu);
    return y;
}
