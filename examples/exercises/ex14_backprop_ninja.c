/*
 * Exercise 14: backprop through the whole MLP by hand (makemore part 4,
 * exercise 1).
 * Statement: docs/exercises/14-backprop-ninja.md
 * Grade:     meson test -C build --suite exercises ex14 --print-errorlogs
 */
#include "exercises.h"

/* Fill every field of *d: dlogprobs, dprobs, dcounts_sum_inv, ... back to
 * dC, each the gradient of f->loss with respect to that variable, with
 * that variable's shape. The forward is in
 * examples/makemore/part4_mlp.c (p4_forward_run), one lecture line per
 * intermediate: go through it from the bottom up. A variable used twice
 * (bndiff, counts, hprebn) gets the sum of both contributions. */
int ex_backprop_ninja(const p4_params *p, const p4_forward *f,
                      const tg_tensor *xb, const tg_tensor *yb, p4_grads *d)
{
    EX_NOT_IMPLEMENTED(); // delete this line, then write the function
    (void)p;
    (void)f;
    (void)xb;
    (void)yb;
    (void)d;
    return -1;
}
