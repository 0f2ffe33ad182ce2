/*
 * Exercise 04: the backward of softmax.
 * Statement: docs/exercises/04-softmax-backward.md
 * Grade:     meson test -C build --suite exercises ex04 --print-errorlogs
 */
#include "exercises.h"

/* y = softmax(x) along the last dim of a (rows, n) x; grad_y = dL/dy.
 * Returns dL/dx, (rows, n), float64: a new reference.
 *
 * Work it out on paper first: dy_i/dx_j for one row, then dL/dx_j as a
 * sum over i. The result needs y and grad_y only, not x. */
tg_tensor *ex_softmax_backward(const tg_tensor *y, const tg_tensor *grad_y)
{
    EX_NOT_IMPLEMENTED(); // delete this line, then write the function
    (void)y;
    (void)grad_y;
    return NULL;
}
