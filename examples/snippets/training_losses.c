/*
 * examples/snippets/training_losses.c - the loss code of
 * docs/training.md, section 3: cross-entropy on logits too large for a
 * naive log-sum-exp, and its gradient (softmax minus one-hot); binary
 * cross-entropy with logits at both extremes; and the error for an (N, 1)
 * prediction against an (N,) target. The doc shows excerpts and their
 * output.
 */
#include "tapegrad.h"

#include <stdio.h>

static void cross_entropy(void)
{
    tg_tensor *z = tg_from_array((float[]){1000, -1000, 2, 1, 0, -1},
                                 TG_SHAPE(2, 3), TG_FLOAT32);
    tg_set_requires_grad(z, true);
    tg_tensor *y = tg_from_array((int64_t[]){1, 0}, TG_SHAPE(2), TG_INT64);
    tg_tensor *l = tg_cross_entropy(z, y, TG_REDUCTION_MEAN);
    tg_print(l);
    tg_backward(l);
    tg_print(z->grad);
    tg_release(l);
    tg_release(y);
    tg_release(z);
}

static void binary_cross_entropy(void)
{
    tg_tensor *x = tg_from_array((double[]){-1000, 0, 20, 1000}, TG_SHAPE(4),
                                 TG_FLOAT64);
    tg_set_requires_grad(x, true);
    tg_tensor *t = tg_from_array((double[]){1, 0.5, 1, 0}, TG_SHAPE(4),
                                 TG_FLOAT64);
    tg_tensor *l = tg_binary_cross_entropy_with_logits(x, t,
                                                       TG_REDUCTION_NONE);
    tg_tensor *total = tg_sum(l, NULL, 0, false);
    tg_backward(total);           // so x->grad is dl_i/dx_i
    tg_print(l);
    tg_print(x->grad);
    tg_release(total);
    tg_release(l);
    tg_release(t);
    tg_release(x);
}

static void mse_shapes(void)
{
    tg_set_error_handler(tg_error_handler_quiet); // printed below instead
    tg_tensor *pred = tg_zeros(TG_SHAPE(2, 1), TG_FLOAT32);
    tg_tensor *target = tg_zeros(TG_SHAPE(2), TG_FLOAT32);
    tg_tensor *l = tg_mse_loss(pred, target, TG_REDUCTION_MEAN);
    printf("%s\n", l ? "(no error?)" : tg_last_error());
    tg_set_error_handler(NULL);
    tg_release(l);
    tg_release(target);
    tg_release(pred);
}

int main(void)
{
    printf("== Cross-entropy ==\n");
    cross_entropy();
    printf("\n== Binary cross-entropy with logits ==\n");
    binary_cross_entropy();
    printf("\n== MSE on different shapes ==\n");
    mse_shapes();
    return tg_live_tensors() == 0 ? 0 : 1;
}
