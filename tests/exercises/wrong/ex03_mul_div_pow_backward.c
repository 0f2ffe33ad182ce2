/*
 * A wrong answer to exercise 03, which its grader must reject: mul and
 * div are right, but pow's dL/da uses b a^b, the power rule with the
 * exponent left alone instead of lowered by one (d/da a^b = b a^(b-1)).
 * dL/db is right.
 */
#include "exercises.h"

static int both_or_none(tg_tensor **grad_a, tg_tensor **grad_b)
{
    if (*grad_a && *grad_b)
        return 0;
    tg_release(*grad_a);
    tg_release(*grad_b);
    *grad_a = *grad_b = NULL;
    return -1;
}

int ex_mul_backward(const tg_tensor *a, const tg_tensor *b,
                    const tg_tensor *grad_out, tg_tensor **grad_a,
                    tg_tensor **grad_b)
{
    *grad_a = tg_mul(grad_out, b);
    *grad_b = tg_mul(grad_out, a);
    return both_or_none(grad_a, grad_b);
}

int ex_div_backward(const tg_tensor *a, const tg_tensor *b,
                    const tg_tensor *grad_out, tg_tensor **grad_a,
                    tg_tensor **grad_b)
{
    *grad_a = tg_div(grad_out, b);
    tg_tensor *q = tg_div(a, b);
    tg_tensor *q2 = tg_div(q, b);
    tg_tensor *gq2 = tg_mul(grad_out, q2);
    *grad_b = tg_neg(gq2);
    tg_release(gq2);
    tg_release(q2);
    tg_release(q);
    return both_or_none(grad_a, grad_b);
}

int ex_pow_backward(const tg_tensor *a, const tg_tensor *b,
                    const tg_tensor *grad_out, tg_tensor **grad_a,
                    tg_tensor **grad_b)
{
    tg_tensor *out = tg_pow(a, b);
    tg_tensor *da = tg_mul(b, out);       // wrong: b a^b, not b a^(b - 1)
    *grad_a = tg_mul(grad_out, da);
    tg_tensor *ln = tg_log(a);
    tg_tensor *db = tg_mul(out, ln);
    *grad_b = tg_mul(grad_out, db);
    tg_release(db);
    tg_release(ln);
    tg_release(da);
    tg_release(out);
    return both_or_none(grad_a, grad_b);
}
