/*
 * A wrong answer to exercise 02, which its grader must reject: it takes
 * the mean over the broadcast dims instead of the sum. The shape is right
 * and so is the "spread" of the numbers, but each read of a broadcast
 * element contributes its own gradient, and those add: averaging them
 * divides the true gradient by the number of copies.
 */
#include "exercises.h"

tg_tensor *ex_sum_to_shape(const tg_tensor *grad, const int64_t *shape,
                           int ndim)
{
    if (!grad)
        return NULL;
    int lead = grad->ndim - ndim;
    int dims[TG_MAX_DIMS], ndims = 0;
    for (int d = 0; d < grad->ndim; d++)
        if (d < lead || (shape[d - lead] == 1 && grad->shape[d] != 1))
            dims[ndims++] = d;
    if (ndims == 0)
        return tg_clone(grad);
    tg_tensor *summed = tg_mean(grad, dims, ndims, true); // wrong: a mean
    tg_tensor *result = tg_reshape(summed, shape, ndim);
    tg_release(summed);
    return result;
}
