/*
 * Reference solution of exercise 10 (docs/exercises/10-train-spirals.md).
 *
 * For each batch: forward, loss, zero the gradients, backward, step, in
 * that order (backward adds into .grad, so the zeroing must come before
 * it). The value returned is the average of the last epoch's batch
 * losses, read with tg_item before the loss is released.
 */
#include "exercises.h"

double ex_train(tg_module *model, tg_optimizer *opt, const tg_dataset *train,
                int epochs, int64_t batch_size, tg_generator *g)
{
    tg_batches *batches = tg_batches_new(train, batch_size, true, false, g);
    if (!batches)
        return NAN;
    double epoch_loss = NAN;
    for (int epoch = 0; epoch < epochs; epoch++) {
        double sum = 0.0;
        int64_t n = 0;
        tg_tensor *x, *y;
        while (tg_batches_next(batches, &x, &y)) {
            tg_tensor *logits = tg_module_forward(model, x);
            tg_tensor *loss = tg_cross_entropy(logits, y, TG_REDUCTION_MEAN);
            tg_optimizer_zero_grad(opt);
            int rc = tg_backward(loss);
            if (rc == 0)
                rc = tg_optimizer_step(opt);
            sum += tg_item(loss);
            n++;
            tg_release(loss);
            tg_release(logits);
            tg_release(y);
            tg_release(x);
            if (rc != 0) {
                tg_batches_free(batches);
                return NAN;
            }
        }
        epoch_loss = sum / (double)n; // NaN for an epoch without batches
    }
    tg_batches_free(batches);
    return epoch_loss;
}
