/*
 * tests/errors/catalogue_tensor.c - the errors of tensor/tensor.h, one ERROR_CASE per
 * row of docs/errors.md (see catalogue.h).
 */
#include "catalogue.h"

ERROR_CASE(tg_zeros, negative_size, "a size in the shape is negative")
{
    tg_tensor *x = tg_zeros((int64_t[]){2, -3}, 2, TG_FLOAT32);
    EXPECT_ERROR(x == NULL, "tg_zeros: invalid shape (2, -3)");
}

NEVER_FAILS(tg_live_tensors, "returns a count");
