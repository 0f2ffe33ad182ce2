/*
 * examples/tutorial/07_training.c - the program of tutorial chapter 7
 * (docs/tutorial/07-training-the-mlp.md): a complete, small training run.
 * A 2 -> 64 -> 64 -> 3 MLP with BatchNorm and ReLU learns to tell apart
 * the three arms of a spiral, with SGD, momentum and a cosine learning-rate
 * schedule, in well under a second.
 *
 * It shows the loop every training program repeats (forward, loss,
 * zero_grad, backward, step), the switch between training and eval mode,
 * who releases what, and the loss a model should start from. The full
 * demo, with three variants, logs and plots, is examples/train_mlp.c;
 * docs/training.md explains the layers, losses and optimisers.
 *
 * Exit status 0 when the run ends with every tensor released and the
 * validation accuracy above 90%, which it reaches with these settings.
 */
#include "tapegrad.h"

#include <math.h>
#include <stdio.h>

#define EPOCHS 40
#define LR 0.1 // the starting learning rate, annealed to 0 by a cosine

/* Cross-entropy and accuracy of model on a whole dataset, in eval mode and
 * without recording a tape; the model is left in eval mode. */
static void evaluate(tg_module *model, const tg_dataset *d, double *loss,
                     double *acc)
{
    tg_module_train(model, false);               // model.eval()
    tg_no_grad_begin();                          // with torch.no_grad():
    tg_tensor *logits = tg_module_forward(model, d->x);
    tg_tensor *l = tg_cross_entropy(logits, d->y, TG_REDUCTION_MEAN);
    tg_no_grad_end();
    *loss = tg_item(l);
    *acc = tg_accuracy(logits, d->y);
    tg_release(l);
    tg_release(logits);
}

int main(void)
{
    /* The data: 3 spiral arms of 300 points, a fifth held out. Its own
     * generator: the same points and batches whatever the model draws. */
    tg_generator *g = tg_generator_new(0);
    tg_dataset all = {0}, train = {0}, val = {0};
    tg_make_spirals(300, 3, 0.03, g, &all);        // x (900, 2), y (900,)
    tg_dataset_split(&all, 0.2, g, &train, &val);  // 720 and 180 points
    tg_batches *batches = tg_batches_new(&train, 64, true, false, g);

    /* The model and the optimiser */
    tg_manual_seed(0);                             // the Linear weights
    tg_module *model = tg_mlp_new(2, TG_SHAPE(64, 64), 3, TG_NORM_BATCH,
                                  TG_ACT_RELU);
    tg_sgd_config cfg = {.lr = LR};
    cfg.momentum = 0.9;
    tg_optimizer *opt = tg_sgd_new(model, &cfg);
    if (!batches || !model || !opt)
        return 1;                                  // the error is printed
    tg_module_print(model);

    double val_loss, val_acc;
    evaluate(model, &val, &val_loss, &val_acc);
    printf("before training: val loss %.4f (ln 3 = %.4f), val acc %.1f%%\n",
           val_loss, log(3.0), 100 * val_acc);

    int64_t total_steps = EPOCHS * tg_batches_per_epoch(batches);
    for (int epoch = 1; epoch <= EPOCHS; epoch++) {
        tg_module_train(model, true);              // model.train()
        double loss_sum = 0;
        int steps = 0;
        tg_tensor *x, *y;
        while (tg_batches_next(batches, &x, &y)) { // x (64, 2), y (64,)
            int64_t t = tg_optimizer_steps(opt);   // steps taken so far
            tg_optimizer_set_lr(opt, tg_lr_cosine(LR, t, total_steps, 0.0));
            tg_tensor *logits = tg_module_forward(model, x);   // 1. forward
            tg_tensor *loss = tg_cross_entropy(logits, y,      // 2. loss
                                               TG_REDUCTION_MEAN);
            tg_optimizer_zero_grad(opt);           // 3. every p->grad = 0
            if (tg_backward(loss) != 0 ||          // 4. p->grad += dloss/dp
                tg_optimizer_step(opt) != 0)       // 5. p -= lr * velocity
                return 1;                          // (the error is printed)
            loss_sum += tg_item(loss);
            steps++;
            tg_release(loss);
            tg_release(logits);
            tg_release(y);
            tg_release(x);
        }
        evaluate(model, &val, &val_loss, &val_acc);
        if (epoch == 1 || epoch % 5 == 0)
            printf("epoch %2d  train loss %.4f  val loss %.4f  "
                   "val acc %5.1f%%\n",
                   epoch, loss_sum / steps, val_loss, 100 * val_acc);
    }

    tg_optimizer_free(opt);
    tg_module_free(model);
    tg_batches_free(batches);
    tg_dataset_free(&val);
    tg_dataset_free(&train);
    tg_dataset_free(&all);
    tg_generator_free(g);
    printf("live tensors: %lld\n", (long long)tg_live_tensors());
    return tg_live_tensors() == 0 && val_acc > 0.9 ? 0 : 1;
}
