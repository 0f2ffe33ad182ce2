/*
 * A wrong answer to exercise 10, which its grader must reject: the loop
 * never zeroes the gradients. tg_backward adds into each parameter's
 * .grad, so every step uses the sum of all the gradients so far; the loss
 * and the accuracy show it only after a few steps, and with momentum the
 * sum soon makes the weights blow up. Everything else is right.
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
            int rc = tg_backward(loss); // no tg_optimizer_zero_grad first
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
        epoch_loss = sum / (double)n;
    }
    tg_batches_free(batches);
    return epoch_loss;
}
