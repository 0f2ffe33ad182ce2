/*
 * A wrong answer to exercise 08, which its grader must reject: the batch
 * variance that goes into running_var is the biased one (correction 0),
 * the one the training forward normalises with. The buffer holds the
 * unbiased one (correction 1). The two differ by the factor N / (N - 1):
 * 2 for a batch of two, 1.03 for a batch of 32, which is why the slip
 * goes unnoticed with large batches.
 */
#include "exercises.h"

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
    tg_tensor *mean = tg_mean(x, TG_DIMS(0), false);
    tg_tensor *var = tg_var(x, TG_DIMS(0), 0, false); // wrong: correction 0
    int rc = -1;
    if (mean && var && update(running_mean, mean, momentum) == 0 &&
        update(running_var, var, momentum) == 0)
        rc = 0;
    tg_release(var);
    tg_release(mean);
    return rc;
}
