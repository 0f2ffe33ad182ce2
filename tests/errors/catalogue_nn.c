/*
 * tests/errors/catalogue_nn.c - the errors of nn/nn.h, one ERROR_CASE per
 * row of docs/errors.md (see catalogue.h).
 */
#include "catalogue.h"

ERROR_CASE(tg_linear_new, zero_features, "in_features is 0")
{
    tg_module *m = tg_linear_new(0, 4, true);
    EXPECT_ERROR(m == NULL, 
                 "tg_linear_new: cannot make a Linear layer with in_features 0 and out_features 4");
}
