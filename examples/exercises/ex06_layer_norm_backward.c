/*
 * Exercise 06: the LayerNorm backward, in Karpathy's form.
 * Statement: docs/exercises/06-layer-norm-backward.md
 * Grade:     meson test -C build --suite exercises ex06 --print-errorlogs
 */
#include "exercises.h"

/* The forward was, per row of x (rows, C):
 *   xhat = (x - mean) * rstd,  y = xhat * weight + bias
 * with mean and rstd (rows,) given. From dy = dL/dy (rows, C), store
 * dL/dx (rows, C), dL/dweight (C,) and dL/dbias (C,) in *dx, *dweight and
 * *dbias: three new references, float64. Returns 0, or -1 on error.
 *
 * Recompute xhat from mean and rstd (reshape them to (rows, 1) so they
 * broadcast against x). weight and bias are shared by every row: which
 * dim do their gradients sum over? For dx, x reaches xhat along three
 * paths: directly, through mean and through rstd. */
int ex_layer_norm_backward(const tg_tensor *dy, const tg_tensor *x,
                           const tg_tensor *weight, const tg_tensor *mean,
                           const tg_tensor *rstd, tg_tensor **dx,
                           tg_tensor **dweight, tg_tensor **dbias)
{
    EX_NOT_IMPLEMENTED(); // delete this line, then write the function
    (void)dy;
    (void)x;
    (void)weight;
    (void)mean;
    (void)rstd;
    (void)dx;
    (void)dweight;
    (void)dbias;
    return -1;
}
