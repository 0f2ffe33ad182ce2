/*
 * tests/errors/catalogue_autograd.c - the errors of autograd/autograd.h, one ERROR_CASE per
 * row of docs/errors.md (see catalogue.h).
 */
#include "catalogue.h"

ERROR_CASE(tg_backward, non_scalar_root,
           "the root has more than one element and no gradient is given")
{
    tg_tensor *x = tg_ones((int64_t[]){3}, 1, TG_FLOAT32);
    tg_set_requires_grad(x, true);
    tg_tensor *y = tg_mul_scalar(x, 2.0);
    EXPECT_ERROR(tg_backward(y) == -1, 
                 "tg_backward: cannot start from a tensor of shape (3,) without its gradient");
    tg_release(y);
    tg_release(x);
}
