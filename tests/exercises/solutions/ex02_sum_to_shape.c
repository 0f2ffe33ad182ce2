/*
 * Reference solution of exercise 02 (docs/exercises/02-sum-to-shape.md).
 *
 * Broadcasting lined the input's shape up with grad's at the last dim. An
 * input element is read once at every position of the dims broadcasting
 * added in front and of the dims where the input has size 1 and grad does
 * not; the gradients of all those reads add up (the multivariate chain
 * rule sums over every path). So grad is summed over those dims, with
 * keepdim so that the remaining dims keep their places, and the leading
 * size-1 dims left by keepdim are dropped by the reshape.
 */
#include "exercises.h"

tg_tensor *ex_sum_to_shape(const tg_tensor *grad, const int64_t *shape,
                           int ndim)
{
    if (!grad)
        return NULL;
    int lead = grad->ndim - ndim; // dims broadcasting added in front
    int dims[TG_MAX_DIMS], ndims = 0;
    for (int d = 0; d < grad->ndim; d++)
        if (d < lead || (shape[d - lead] == 1 && grad->shape[d] != 1))
            dims[ndims++] = d;
    /* Nothing to sum: tg_sum would read an empty dim list as "every dim",
     * so return a copy instead. */
    if (ndims == 0)
        return tg_clone(grad);
    tg_tensor *summed = tg_sum(grad, dims, ndims, true);
    tg_tensor *result = tg_reshape(summed, shape, ndim);
    tg_release(summed);
    return result;
}
