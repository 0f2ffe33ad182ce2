/*
 * A reference solution to exercise 16: the lecture's exercise 4 step,
 * written out in examples/makemore/part4_mlp.c (p4_train_step): the
 * forward, the cross-entropy backward of exercise 15, the BatchNorm
 * backward in one expression, and p.data += -lr * grad.
 */
#include "exercises.h"

int ex_train_step(p4_params *p, const tg_tensor *xb, const tg_tensor *yb,
                  double lr, double *loss, tg_tensor *grads[P4_NPARAMS])
{
    return p4_train_step(p, xb, yb, lr, loss, grads);
}
