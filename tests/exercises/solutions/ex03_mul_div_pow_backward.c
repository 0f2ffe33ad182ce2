/*
 * Reference solution of exercise 03 (docs/exercises/03-mul-div-pow-
 * backward.md).
 *
 * Each output element depends on the elements of a and b at its own
 * position only, so the chain rule is elementwise:
 *   dL/da = grad_out * dout/da,  dL/db = grad_out * dout/db.
 */
#include "exercises.h"

/* Both results or neither: on a failure, release what was made. */
static int both_or_none(tg_tensor **grad_a, tg_tensor **grad_b)
{
    if (*grad_a && *grad_b)
        return 0;
    tg_release(*grad_a);
    tg_release(*grad_b);
    *grad_a = *grad_b = NULL;
    return -1;
}

/* out = a * b: dout/da = b, dout/db = a. */
int ex_mul_backward(const tg_tensor *a, const tg_tensor *b,
                    const tg_tensor *grad_out, tg_tensor **grad_a,
                    tg_tensor **grad_b)
{
    *grad_a = tg_mul(grad_out, b);
    *grad_b = tg_mul(grad_out, a);
    return both_or_none(grad_a, grad_b);
}

/* out = a / b = a * b^-1:
 *   dout/da = 1 / b
 *   dout/db = a * (-1) b^-2 = -a / b^2 */
int ex_div_backward(const tg_tensor *a, const tg_tensor *b,
                    const tg_tensor *grad_out, tg_tensor **grad_a,
                    tg_tensor **grad_b)
{
    *grad_a = tg_div(grad_out, b);
    tg_tensor *q = tg_div(a, b);    // a / b
    tg_tensor *q2 = tg_div(q, b);   // a / b^2
    tg_tensor *gq2 = tg_mul(grad_out, q2);
    *grad_b = tg_neg(gq2);
    tg_release(gq2);
    tg_release(q2);
    tg_release(q);
    return both_or_none(grad_a, grad_b);
}

/* out = a^b = exp(b ln a), a > 0:
 *   dout/da = b a^(b - 1)            (the power rule, b held fixed)
 *   dout/db = exp(b ln a) ln a = a^b ln a */
int ex_pow_backward(const tg_tensor *a, const tg_tensor *b,
                    const tg_tensor *grad_out, tg_tensor **grad_a,
                    tg_tensor **grad_b)
{
    tg_tensor *bm1 = tg_sub_scalar(b, 1.0);
    tg_tensor *p = tg_pow(a, bm1);        // a^(b - 1)
    tg_tensor *da = tg_mul(b, p);         // b a^(b - 1)
    *grad_a = tg_mul(grad_out, da);
    tg_tensor *out = tg_pow(a, b);
    tg_tensor *ln = tg_log(a);
    tg_tensor *db = tg_mul(out, ln);      // a^b ln a
    *grad_b = tg_mul(grad_out, db);
    tg_release(db);
    tg_release(ln);
    tg_release(out);
    tg_release(da);
    tg_release(p);
    tg_release(bm1);
    return both_or_none(grad_a, grad_b);
}
