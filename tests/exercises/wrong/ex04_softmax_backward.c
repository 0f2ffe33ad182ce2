/*
 * A wrong answer to exercise 04, which its grader must reject: the sum
 * sum_i g_i y_i is taken down each column (dim 0) instead of along each
 * row, a slip that gives the right shape and plausible numbers.
 */
#include "exercises.h"

tg_tensor *ex_softmax_backward(const tg_tensor *y, const tg_tensor *grad_y)
{
    tg_tensor *gy = tg_mul(grad_y, y);
    tg_tensor *dot = tg_sum(gy, TG_DIMS(0), true); // wrong dim
    tg_tensor *centred = tg_sub(grad_y, dot);
    tg_tensor *dx = tg_mul(y, centred);
    tg_release(centred);
    tg_release(dot);
    tg_release(gy);
    return dx;
}
