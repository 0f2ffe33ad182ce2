/*
 * Reference solution of exercise 09 (docs/exercises/09-rms-norm.md).
 *
 * Forward, per row of C elements:
 *   ms   = mean(x^2)                 (rows, 1)
 *   rrms = 1 / sqrt(ms + eps)        (rows, 1)
 *   xhat = x * rrms                  (rows, C)
 *   y    = xhat * w                  (rows, C)
 * Saved: x, w and rrms; xhat is recomputed in backward.
 *
 * Backward, with g = dy * w (the gradient reaching xhat) and, since ms
 * holds every x_j of the row, d rrms / d x_j = -rrms^3 x_j / C:
 *   dx_j = rrms g_j + sum_i g_i x_i (-rrms^3 x_j / C)
 *        = rrms (g_j - xhat_j mean(g * xhat))
 *   dw   = sum over rows of dy * xhat
 */
#include "exercises.h"

static tg_tensor *rms_norm_forward(tg_ctx *ctx, const tg_tensor *const *in,
                                   int ninputs, const void *args)
{
    (void)ninputs;
    const tg_tensor *x = in[0], *w = in[1];
    double eps = *(const double *)args;
    tg_tensor *x2 = tg_mul(x, x);
    tg_tensor *ms = tg_mean(x2, TG_DIMS(-1), true);   // (rows, 1)
    tg_tensor *ms_eps = tg_add_scalar(ms, eps);
    tg_tensor *rrms = tg_rsqrt(ms_eps);                // (rows, 1)
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

/* In the forward this was: y = x * rrms * w. */
static int rms_norm_backward(tg_ctx *ctx, const tg_tensor *dy,
                             tg_tensor **grads)
{
    const tg_tensor *x = tg_ctx_saved(ctx, 0);
    const tg_tensor *w = tg_ctx_saved(ctx, 1);
    const tg_tensor *rrms = tg_ctx_saved(ctx, 2);
    tg_tensor *xhat = tg_mul(x, rrms);
    tg_tensor *g = tg_mul(dy, w);                          // dL/dxhat
    tg_tensor *gx = tg_mul(g, xhat);
    tg_tensor *m = tg_mean(gx, TG_DIMS(-1), true);         // (rows, 1)
    tg_tensor *xm = tg_mul(xhat, m);
    tg_tensor *diff = tg_sub(g, xm);
    grads[0] = tg_mul(rrms, diff);                         // dx (rows, C)
    tg_tensor *dyx = tg_mul(dy, xhat);
    grads[1] = tg_sum(dyx, TG_DIMS(0), false);             // dw (C,)
    tg_release(dyx);
    tg_release(diff);
    tg_release(xm);
    tg_release(m);
    tg_release(gx);
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
