/*
 * Exercise 07: the BatchNorm backward in one expression.
 * Statement: docs/exercises/07-batch-norm-backward.md
 * Grade:     meson test -C build --suite exercises ex07 --print-errorlogs
 */
#include "exercises.h"

/* The forward was BatchNorm1d in training on x (N, C), per channel c (a
 * column) over the batch:
 *   mean = x.mean(0), var = x.var(0, correction=0),
 *   rstd = 1 / sqrt(var + eps), xhat = (x - mean) * rstd,
 *   y = xhat * weight + bias
 * with mean and rstd (C,) given. From dy = dL/dy (N, C), store dL/dx
 * (N, C), dL/dweight (C,) and dL/dbias (C,) in *dx, *dweight and *dbias:
 * three new references, float64. Returns 0, or -1 on error.
 *
 * Here the groups are columns, so every per-group sum runs over dim 0.
 * The variance divides by N, not N - 1: makemore part 4's closed form has
 * a factor that belongs to the other choice (see the statement). */
int ex_batch_norm_backward(const tg_tensor *dy, const tg_tensor *x,
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
