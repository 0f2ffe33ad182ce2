/*
 * Exercise 16: train the MLP with your own backward only (makemore part
 * 4, exercise 4).
 * Statement: docs/exercises/16-train-with-your-backward.md
 * Grade:     meson test -C build --suite exercises ex16 --print-errorlogs
 */
#include "exercises.h"

/* One step: the forward (emb, embcat, hprebn, BatchNorm with the
 * unbiased variance, tanh, logits, tg_cross_entropy), the backward by
 * hand (exercises 15 and 14's BatchNorm in one expression help), then
 * p -= lr * grad for the seven parameters. *loss gets the batch loss,
 * grads the seven gradients (new references), in the order C, W1, b1,
 * W2, b2, bngain, bnbias. Gradients are disabled while this runs: there
 * is no tape to call tg_backward on. */
int ex_train_step(p4_params *p, const tg_tensor *xb, const tg_tensor *yb,
                  double lr, double *loss, tg_tensor *grads[P4_NPARAMS])
{
    EX_NOT_IMPLEMENTED(); // delete this line, then write the function
    (void)p;
    (void)xb;
    (void)yb;
    (void)lr;
    (void)loss;
    (void)grads;
    return -1;
}
