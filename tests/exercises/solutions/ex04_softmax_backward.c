/*
 * Reference solution of exercise 04 (docs/exercises/04-softmax-backward.md).
 *
 * For one row, y_i = exp(x_i) / sum_k exp(x_k), so
 *   dy_i/dx_j = y_i (delta_ij - y_j)
 *   dL/dx_j = sum_i g_i y_i (delta_ij - y_j) = y_j (g_j - sum_i g_i y_i).
 */
#include "exercises.h"

tg_tensor *ex_softmax_backward(const tg_tensor *y, const tg_tensor *grad_y)
{
    tg_tensor *gy = tg_mul(grad_y, y);                  // g_i y_i
    tg_tensor *dot = tg_sum(gy, TG_DIMS(-1), true);     // (rows, 1)
    tg_tensor *centred = tg_sub(grad_y, dot);           // g_j - sum_i g_i y_i
    tg_tensor *dx = tg_mul(y, centred);
    tg_release(centred);
    tg_release(dot);
    tg_release(gy);
    return dx;
}
