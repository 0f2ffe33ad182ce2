/*
 * Exercise 03: the backward of mul, div and pow.
 * Statement: docs/exercises/03-mul-div-pow-backward.md
 * Grade:     meson test -C build --suite exercises ex03 --print-errorlogs
 */
#include "exercises.h"

/* out = a * b, a / b and a ** b elementwise, a and b of one shape (for
 * pow, a > 0). Given grad_out = dL/dout, each function stores dL/da in
 * *grad_a and dL/db in *grad_b: two new references, float64, the shape
 * of a. Returns 0, or -1 when an op fails.
 *
 * Every output element depends on one element of a and one of b, so
 * each gradient is grad_out times a partial derivative, element by
 * element: differentiate with respect to a holding b fixed, then the
 * other way round. For d/db of a ** b, first rewrite a ** b with exp
 * and ln. */
int ex_mul_backward(const tg_tensor *a, const tg_tensor *b,
                    const tg_tensor *grad_out, tg_tensor **grad_a,
                    tg_tensor **grad_b)
{
    EX_NOT_IMPLEMENTED(); // delete this line, then write the function
    (void)a;
    (void)b;
    (void)grad_out;
    (void)grad_a;
    (void)grad_b;
    return -1;
}

int ex_div_backward(const tg_tensor *a, const tg_tensor *b,
                    const tg_tensor *grad_out, tg_tensor **grad_a,
                    tg_tensor **grad_b)
{
    EX_NOT_IMPLEMENTED(); // delete this line, then write the function
    (void)a;
    (void)b;
    (void)grad_out;
    (void)grad_a;
    (void)grad_b;
    return -1;
}

int ex_pow_backward(const tg_tensor *a, const tg_tensor *b,
                    const tg_tensor *grad_out, tg_tensor **grad_a,
                    tg_tensor **grad_b)
{
    EX_NOT_IMPLEMENTED(); // delete this line, then write the function
    (void)a;
    (void)b;
    (void)grad_out;
    (void)grad_a;
    (void)grad_b;
    return -1;
}
