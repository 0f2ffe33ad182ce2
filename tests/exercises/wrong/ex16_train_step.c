/*
 * A wrong answer to exercise 16, which its grader must reject: the
 * gradients are right, but the update has lost its minus sign
 * (p.data += lr * grad where the lecture writes p.data += -lr * grad),
 * so every step climbs the loss instead of descending it.
 */
#include "exercises.h"

int ex_train_step(p4_params *p, const tg_tensor *xb, const tg_tensor *yb,
                  double lr, double *loss, tg_tensor *grads[P4_NPARAMS])
{
    return p4_train_step(p, xb, yb, -lr, loss, grads);
}
