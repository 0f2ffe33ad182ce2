/*
 * A wrong answer to exercise 09, which its grader must reject: the
 * backward treats rrms = 1 / sqrt(mean(x^2) + eps) as a constant, so dx
 * is rrms * dy * w and misses the term that comes from x_j inside the mean
 * of squares, -xhat_j * rrms * mean(dy * w * xhat). The forward,
 * dweight and the tape are right, so only the checks of dx can see it.
 */
#include "exercises.h"

static tg_tensor *rms_norm_forward(tg_ctx *ctx, const tg_tensor *const *in,
                                   int ninputs, const void *args)
{
    (void)ninputs;
    const tg_tensor *x = in[0], *w = in[1];
    double eps = *(const double *)args;
    tg_tensor *x2 = tg_mul(x, x);
    tg_tensor *ms = tg_mean(x2, TG_DIMS(-1), true);
    tg_tensor *ms_eps = tg_add_scalar(ms, eps);
    tg_tensor *rrms = tg_rsqrt(ms_eps);
    tg_tensor *xhat = tg_mul(x, rrms);
    tg_tensor *y = tg_mul(xhat, w);
    tg_ctx_save(ctx, x);
    tg_ctx_save(ctx, w);
    tg_ctx_save(ctx, rrms);
    tg_release(xhat);
    tg_release(rrms);
    tg_release(ms_eps);
    tg_release(ms);
    tg_release(x2);
    return y;
}

static int rms_norm_backward(tg_ctx *ctx, const tg_tensor *dy,
                             tg_tensor **grads)
{
    const tg_tensor *x = tg_ctx_saved(ctx, 0);
    const tg_tensor *w = tg_ctx_saved(ctx, 1);
    const tg_tensor *rrms = tg_ctx_saved(ctx, 2);
    tg_tensor *xhat = tg_mul(x, rrms);
    tg_tensor *g = tg_mul(dy, w);
    grads[0] = tg_mul(rrms, g); // missing - xhat * rrms * mean(g * xhat)
    tg_tensor *dyx = tg_mul(dy, xhat);
    grads[1] = tg_sum(dyx, TG_DIMS(0), false);
    tg_release(dyx);
    tg_release(g);
    tg_release(xhat);
    return grads[0] && grads[1] ? 0 : -1;
}

static const tg_function rms_norm_fn = {"RMSNormBackward", rms_norm_forward,
                                        rms_norm_backward, 0};

tg_tensor *ex_rms_norm(const tg_tensor *x, const tg_tensor *weight,
                       double eps)
{
    const tg_tensor *in[2] = {x, weight};
    return tg_function_apply(&rms_norm_fn, in, 2, &eps);
}
