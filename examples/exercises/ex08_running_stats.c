/*
 * Exercise 08: BatchNorm's running statistics.
 * Statement: docs/exercises/08-running-stats.md
 * Grade:     meson test -C build --suite exercises ex08 --print-errorlogs
 */
#include "exercises.h"

/* What BatchNorm1d does to its buffers in a training forward on x (N, C),
 * N >= 2, as PyTorch:
 *   running_mean = (1 - momentum) * running_mean + momentum * x.mean(0)
 *   running_var  = (1 - momentum) * running_var
 *                  + momentum * x.var(0, correction=1)
 * running_mean and running_var (C,) are updated in place: the caller
 * keeps its pointers and reads the new values through them. Returns 0, or
 * -1 on error.
 *
 * A tensor op returns a new tensor; to change the buffer itself, copy the
 * result into it (tensor/tensor.h lists the in-place functions). Which
 * variance goes into the buffer: the one the forward normalised with? */
int ex_update_running_stats(tg_tensor *running_mean, tg_tensor *running_var,
                            const tg_tensor *x, double momentum)
{
    EX_NOT_IMPLEMENTED(); // delete this line, then write the function
    (void)running_mean;
    (void)running_var;
    (void)x;
    (void)momentum;
    return -1;
}
