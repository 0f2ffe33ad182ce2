/*
 * Exercise 09: RMSNorm as an op of your own, with its backward.
 * Statement: docs/exercises/09-rms-norm.md
 * Grade:     meson test -C build --suite exercises ex09 --print-errorlogs
 */
#include "exercises.h"

/* y = x / sqrt(mean(x^2, -1) + eps) * weight for x (rows, C) and weight
 * (C,), both float64. Returns y, (rows, C), float64: a new reference,
 * made by tg_function_apply so that the tape records one node named
 * "RMSNormBackward".
 *
 * examples/custom_op.c shows the three pieces a tg_function needs: a
 * forward that saves what the backward will use, a backward that stores
 * one gradient per input, and the tg_function that names them. Write the
 * first two above this function as static functions. eps is a double,
 * not a tensor: pass it to the forward through tg_function_apply's args.
 * Derive dL/dx on paper first: x_j appears twice in y_j (as itself and
 * inside rms), and once in every other y_i of its row (inside rms). */
tg_tensor *ex_rms_norm(const tg_tensor *x, const tg_tensor *weight,
                       double eps)
{
    EX_NOT_IMPLEMENTED(); // delete this line, then write the function
    (void)x;
    (void)weight;
    (void)eps;
    return NULL;
}
