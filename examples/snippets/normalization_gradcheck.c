/*
 * examples/snippets/normalization_gradcheck.c - the program of
 * docs/normalization.md, section 6: a LayerNorm of your own (over the last
 * dim, no affine part) written as a tg_function, and gradcheck on it in
 * float64 with a weighted loss, sum(y * r).
 *
 * The second half makes the mistake section 6 warns about: a backward
 * that forgets path (c) of section 3 (rstd treated as a constant). The
 * weighted loss catches it; the loss sum(y) does not, because a normalised
 * row sums to zero whatever x is.
 */
#include "tapegrad.h"
#include <stdio.h>

/* forward: LayerNorm over the last dim, no affine part. Saves xhat and
 * rstd (index 0 and 1). */
static tg_tensor *my_norm_forward(tg_ctx *ctx, const tg_tensor *const *in,
                                  int nin, const void *args)
{
    (void)nin, (void)args;
    tg_tensor *mean = tg_mean(in[0], TG_DIMS(-1), true);
    tg_tensor *xc = tg_sub(in[0], mean);
    tg_tensor *var = tg_var(in[0], TG_DIMS(-1), 0, true);   // biased
    tg_tensor *var_eps = tg_add_scalar(var, 1e-5);
    tg_tensor *rstd = tg_rsqrt(var_eps);
    tg_tensor *xhat = tg_mul(xc, rstd);
    tg_ctx_save(ctx, xhat);
    tg_ctx_save(ctx, rstd);
    tg_release(rstd); tg_release(var_eps); tg_release(var);
    tg_release(xc); tg_release(mean);
    return xhat;
}

/* dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), section 3 */
static int my_norm_backward(tg_ctx *ctx, const tg_tensor *g,
                            tg_tensor **grad_in)
{
    const tg_tensor *xhat = tg_ctx_saved(ctx, 0), *rstd = tg_ctx_saved(ctx, 1);
    tg_tensor *g_mean = tg_mean(g, TG_DIMS(-1), true);
    tg_tensor *gx = tg_mul(g, xhat);
    tg_tensor *gx_mean = tg_mean(gx, TG_DIMS(-1), true);
    tg_tensor *t = tg_mul(xhat, gx_mean);      // path (c), through rstd
    tg_tensor *centred = tg_sub(g, g_mean);
    tg_tensor *d = tg_sub(centred, t);
    grad_in[0] = tg_mul(d, rstd);
    tg_release(d); tg_release(centred); tg_release(t);
    tg_release(gx_mean); tg_release(gx); tg_release(g_mean);
    return grad_in[0] ? 0 : -1;
}

static const tg_function my_norm_fn = {"MyNormBackward", my_norm_forward,
                                       my_norm_backward, 0};

/* What gradcheck differentiates: loss = sum(my_norm(x) * r), with r a
 * fixed random tensor of x's shape passed through user. */
static tg_tensor *weighted_loss(const tg_tensor *const *in, int n, void *user)
{
    (void)n;
    const tg_tensor *x = in[0];
    tg_tensor *y = tg_function_apply(&my_norm_fn, &x, 1, NULL);
    tg_tensor *yr = tg_mul(y, user);
    tg_tensor *loss = tg_sum(yr, NULL, 0, false);
    tg_release(yr);
    tg_release(y);
    return loss;
}

/* The mistake: path (c) forgotten, dx = rstd * (g - mean(g)). */
static int forgetful_backward(tg_ctx *ctx, const tg_tensor *g,
                              tg_tensor **grad_in)
{
    const tg_tensor *rstd = tg_ctx_saved(ctx, 1);
    tg_tensor *g_mean = tg_mean(g, TG_DIMS(-1), true);
    tg_tensor *centred = tg_sub(g, g_mean);
    grad_in[0] = tg_mul(centred, rstd);
    tg_release(centred); tg_release(g_mean);
    return grad_in[0] ? 0 : -1;
}

static const tg_function forgetful_fn = {"ForgetfulNormBackward",
                                         my_norm_forward, forgetful_backward,
                                         0};

/* sum(forgetful(x) * r), or sum(forgetful(x)) when user is NULL. */
static tg_tensor *forgetful_loss(const tg_tensor *const *in, int n, void *user)
{
    (void)n;
    const tg_tensor *x = in[0];
    tg_tensor *y = tg_function_apply(&forgetful_fn, &x, 1, NULL);
    tg_tensor *yr = user ? tg_mul(y, user) : tg_retain(y);
    tg_tensor *loss = tg_sum(yr, NULL, 0, false);
    tg_release(yr);
    tg_release(y);
    return loss;
}

/* Returns 0 when the weighted loss catches the forgetful backward and
 * sum(y) does not, as section 6 says. */
static int forgotten_path_c(tg_tensor *x, tg_tensor *r)
{
    tg_gradcheck_options opts = tg_gradcheck_defaults();
    opts.report = stdout;   // the report is printed here, not on stderr
    tg_gradcheck_result res;
    printf("path (c) forgotten, loss sum(y * r):\n");
    int weighted = tg_gradcheck(forgetful_loss, r, &x, 1, &opts, &res);
    int plain = tg_gradcheck(forgetful_loss, NULL, &x, 1, &opts, &res);
    printf("path (c) forgotten, loss sum(y): %s\n",
           plain == 1 ? "passed" : "FAILED");
    return weighted == 0 && plain == 1 ? 0 : 1;
}

int main(void)
{
    tg_manual_seed(0);
    tg_tensor *x = tg_randn(TG_SHAPE(4, 6), TG_FLOAT64);  // float64 for
    tg_tensor *r = tg_randn(TG_SHAPE(4, 6), TG_FLOAT64);  // the defaults
    tg_set_requires_grad(x, true);
    tg_gradcheck_result res;
    int ok = tg_gradcheck(weighted_loss, r, &x, 1, NULL, &res);
    printf("gradcheck: %s\n", ok == 1 ? "passed" : "FAILED");
    int caught = forgotten_path_c(x, r) == 0;
    tg_release(r);
    tg_release(x);
    return ok == 1 && caught ? 0 : 1;
}
