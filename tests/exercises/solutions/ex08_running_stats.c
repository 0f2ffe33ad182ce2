/*
 * Reference solution of exercise 08 (docs/exercises/08-running-stats.md).
 *
 * An exponential moving average of each batch statistic, per channel:
 *   running = (1 - momentum) * running + momentum * batch
 * with batch = x.mean(0) for the mean and the UNBIASED x.var(0,
 * correction=1) for the variance, although the forward normalised with
 * the biased one (PyTorch's choice: the buffer estimates the variance of
 * the whole population, for eval).
 */
#include "exercises.h"

/* *running = (1 - momentum) * running + momentum * batch, in place. */
static int update(tg_tensor *running, const tg_tensor *batch,
                  double momentum)
{
    tg_tensor *kept = tg_mul_scalar(running, 1.0 - momentum);
    tg_tensor *added = tg_mul_scalar(batch, momentum);
    tg_tensor *sum = tg_add(kept, added);
    int rc = sum ? tg_copy_(running, sum) : -1;
    tg_release(sum);
    tg_release(added);
    tg_release(kept);
    return rc;
}

int ex_update_running_stats(tg_tensor *running_mean, tg_tensor *running_var,
                            const tg_tensor *x, double momentum)
{
    tg_tensor *mean = tg_mean(x, TG_DIMS(0), false);    // (C,)
    tg_tensor *var = tg_var(x, TG_DIMS(0), 1, false);   // unbiased, (C,)
    int rc = -1;
    if (mean && var && update(running_mean, mean, momentum) == 0 &&
        update(running_var, var, momentum) == 0)
        rc = 0;
    tg_release(var);
    tg_release(mean);
    return rc;
}
