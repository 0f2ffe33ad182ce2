/*
 * examples/snippets/readme_training.c - the program README.md shows in
 * "Training a small model": spirals, a train/validation split, an MLP with
 * BatchNorm, SGD with momentum, 40 epochs of shuffled mini-batches, and the
 * validation accuracy in eval mode. The README quotes it from #include to
 * the end, with its output. examples/train_mlp.c is the full demo.
 */
#include "tapegrad.h"

#include <stdio.h>

int main(void)
{
    tg_manual_seed(0);
    tg_dataset all = {0}, train = {0}, val = {0};
    tg_make_spirals(500, 3, 0.03, NULL, &all);  // x (1500, 2), labels (1500,)
    tg_dataset_split(&all, 0.2, NULL, &train, &val);
    tg_module *mlp = tg_mlp_new(2, TG_SHAPE(64, 64), 3, TG_NORM_BATCH,
                                TG_ACT_RELU);
    tg_sgd_config c = {.lr = 0.1};
    c.momentum = 0.9;
    tg_optimizer *opt = tg_sgd_new(mlp, &c);
    tg_batches *batches = tg_batches_new(&train, 64, true, false, NULL);
    tg_tensor *x, *y;
    for (int epoch = 0; epoch < 40; epoch++) {
        while (tg_batches_next(batches, &x, &y)) {  // one epoch
            tg_tensor *logits = tg_module_forward(mlp, x);
            tg_tensor *loss = tg_cross_entropy(logits, y, TG_REDUCTION_MEAN);
            tg_optimizer_zero_grad(opt);
            tg_backward(loss);
            tg_optimizer_step(opt);
            tg_release(loss); tg_release(logits); tg_release(x); tg_release(y);
        }
    }
    tg_module_train(mlp, false);  // BatchNorm: running statistics
    tg_no_grad_begin();           // evaluation: nothing to record
    tg_tensor *logits = tg_module_forward(mlp, val.x);
    tg_no_grad_end();
    printf("validation accuracy %.3f\n", tg_accuracy(logits, val.y));
    tg_release(logits);
    tg_batches_free(batches); tg_optimizer_free(opt); tg_module_free(mlp);
    tg_dataset_free(&val); tg_dataset_free(&train); tg_dataset_free(&all);
    return tg_live_tensors() == 0 ? 0 : 1;
}
