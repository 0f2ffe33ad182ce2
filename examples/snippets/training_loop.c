/*
 * examples/snippets/training_loop.c - the complete training loop of
 * docs/training.md, section 1: two moons, a 2 -> 32 -> 32 -> 2 MLP with
 * ReLU, Adam, 20 epochs of mini-batches of 32, the validation loss and
 * accuracy every 5 epochs, and a checkpoint. The doc shows it from
 * #include to the end, with its output.
 *
 * It writes the checkpoint into moons_model/ in the current folder.
 */
#include "tapegrad.h"   // tensor/, autograd/ and nn/
#include <stdio.h>

int main(void)
{
    /* data: two moons, 200 points per class; a fifth held out */
    tg_generator *g = tg_generator_new(0);       // data, split and batch order
    tg_dataset all, train, val;
    tg_make_moons(200, 0.1, g, &all);            // x (400, 2), y (400,)
    tg_dataset_split(&all, 0.2, g, &train, &val);
    tg_batches *batches = tg_batches_new(&train, 32, true, false, g);

    /* model and optimiser */
    tg_manual_seed(0);                           // the Linear weights
    tg_module *model = tg_mlp_new(2, TG_SHAPE(32, 32), 2,
                                  TG_NORM_NONE, TG_ACT_RELU);
    tg_adam_config cfg = {.lr = 1e-2};
    tg_optimizer *opt = tg_adam_new(model, &cfg);

    for (int epoch = 1; epoch <= 20; epoch++) {
        tg_module_train(model, true);            // model.train()
        tg_tensor *x, *y;
        while (tg_batches_next(batches, &x, &y)) {
            tg_tensor *logits = tg_module_forward(model, x);
            tg_tensor *loss = tg_cross_entropy(logits, y, TG_REDUCTION_MEAN);
            tg_optimizer_zero_grad(opt);
            if (tg_backward(loss) != 0 || tg_optimizer_step(opt) != 0)
                return 1;                        // the message is printed
            tg_release(loss);
            tg_release(logits);
            tg_release(y);
            tg_release(x);
        }

        tg_module_train(model, false);           // model.eval()
        tg_no_grad_begin();                      // with torch.no_grad():
        tg_tensor *logits = tg_module_forward(model, val.x);
        tg_tensor *loss = tg_cross_entropy(logits, val.y, TG_REDUCTION_MEAN);
        tg_no_grad_end();
        if (epoch % 5 == 0)
            printf("epoch %2d  val loss %.4f  val acc %.1f%%\n", epoch,
                   tg_item(loss), 100 * tg_accuracy(logits, val.y));
        tg_release(loss);
        tg_release(logits);
    }

    tg_module_save(model, "moons_model");        // one .npy per tensor
    tg_optimizer_free(opt);
    tg_module_free(model);
    tg_batches_free(batches);
    tg_dataset_free(&val);
    tg_dataset_free(&train);
    tg_dataset_free(&all);
    tg_generator_free(g);
    printf("live tensors: %lld\n", (long long)tg_live_tensors());
    return tg_live_tensors() == 0 ? 0 : 1;
}
