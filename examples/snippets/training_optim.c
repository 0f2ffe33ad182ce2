/*
 * examples/snippets/training_optim.c - the optimiser code of
 * docs/training.md, section 4: an SGD configured field by field, and a
 * step schedule that divides the learning rate by 10 every 30 epochs,
 * applied between epochs. The model is a linear classifier on three blobs;
 * what it learns is not the point here. The doc shows excerpts and their
 * output.
 */
#include "tapegrad.h"

#include <stdio.h>

/* One pass over the batches: forward, loss, zero_grad, backward, step. */
static int train_one_epoch(tg_module *model, tg_optimizer *opt,
                           tg_batches *batches)
{
    int rc = 0;
    tg_tensor *x, *y;
    while (tg_batches_next(batches, &x, &y)) {
        tg_tensor *logits = tg_module_forward(model, x);
        tg_tensor *loss = tg_cross_entropy(logits, y, TG_REDUCTION_MEAN);
        tg_optimizer_zero_grad(opt);
        if (tg_backward(loss) != 0 || tg_optimizer_step(opt) != 0)
            rc = -1;
        tg_release(loss);
        tg_release(logits);
        tg_release(y);
        tg_release(x);
    }
    return rc;
}

int main(void)
{
    tg_manual_seed(0);
    tg_dataset data = {0};
    tg_make_blobs(50, 3, 0.5, NULL, &data);       // x (150, 2), y (150,)
    tg_batches *batches = tg_batches_new(&data, 30, true, false, NULL);
    tg_module *model = tg_linear_new(2, 3, true);

    tg_sgd_config c = {.lr = 0.1};
    c.momentum = 0.9;
    c.weight_decay = 5e-4;
    tg_optimizer *opt = tg_sgd_new(model, &c);

    int rc = 0;
    for (int epoch = 0; epoch < 90; epoch++) {
        tg_optimizer_set_lr(opt, tg_lr_step(0.1, epoch, 30, 0.1));
        rc |= train_one_epoch(model, opt, batches);
        if (epoch % 30 == 0 || epoch % 30 == 29)
            printf("epoch %2d  lr %g  steps so far %lld\n", epoch,
                   tg_optimizer_lr(opt), (long long)tg_optimizer_steps(opt));
    }

    tg_optimizer_free(opt);
    tg_module_free(model);
    tg_batches_free(batches);
    tg_dataset_free(&data);
    return rc == 0 && tg_live_tensors() == 0 ? 0 : 1;
}
