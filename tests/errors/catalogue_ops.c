/*
 * tests/errors/catalogue_ops.c - the errors of autograd/ops.h, one ERROR_CASE per
 * row of docs/errors.md (see catalogue.h).
 */
#include "catalogue.h"

ERROR_CASE(tg_reshape, numel_mismatch,
           "the new shape has a different number of elements")
{
    tg_tensor *x = tg_zeros((int64_t[]){2, 3}, 2, TG_FLOAT32);
    tg_tensor *y = tg_reshape(x, (int64_t[]){4}, 1);
    EXPECT_ERROR(y == NULL,
                 "tg_reshape: cannot reshape a tensor of shape (2, 3) (6 elements) into shape (4,) (4 elements)");
    tg_release(x);
}

ERROR_CASE(tg_reshape, null_tensor, "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_reshape(NULL, (int64_t[]){4}, 1) == NULL);
}
