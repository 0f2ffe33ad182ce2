/*
 * tests/autograd/grad_cases_elementwise.c - gradcheck cases for the
 * elementwise ops (arith.c, unary.c, activation.c, compare.c).
 */
#include "grad_cases.h"

static tg_tensor *f_add(tg_tensor *const *x, int n, void *ctx)
{
    (void)n, (void)ctx;
    return tg_add(x[0], x[1]);
}

static tg_tensor *f_mul(tg_tensor *const *x, int n, void *ctx)
{
    (void)n, (void)ctx;
    return tg_mul(x[0], x[1]);
}

const tg_grad_case tg_grad_cases_elementwise[] = {
    {"add (2,3)+(2,3)", f_add, 2, {{2, {2, 3}}, {2, {2, 3}}}},
    {"add (2,3)+(3,) broadcast", f_add, 2, {{2, {2, 3}}, {1, {3}}}},
    {"add (4,1,3)+(2,1) broadcast both", f_add, 2,
     {{3, {4, 1, 3}}, {2, {2, 1}}}},
    {"add (3,4)T + (3,4) strided", f_add, 2,
     {{2, {3, 4}, TG_TRANSPOSED}, {2, {3, 4}, TG_STRIDED}}},
    {"add with a scalar tensor", f_add, 2, {{2, {2, 3}}, {0, {0}}}},
    {"mul (2,3)*(2,3)", f_mul, 2, {{2, {2, 3}}, {2, {2, 3}}}},
    {"mul (2,3)*(3,) broadcast", f_mul, 2, {{2, {2, 3}}, {1, {3}}}},
    {"mul (3,1)*(1,4) outer", f_mul, 2, {{2, {3, 1}}, {2, {1, 4}}}},
    {"mul (3,4)T * (3,4) strided", f_mul, 2,
     {{2, {3, 4}, TG_TRANSPOSED}, {2, {3, 4}, TG_STRIDED}}},
    {"mul, b needs no grad", f_mul, 2,
     {{2, {2, 3}}, {2, {2, 3}, .no_grad = true}}},
};
const size_t tg_grad_cases_elementwise_count =
    sizeof tg_grad_cases_elementwise / sizeof *tg_grad_cases_elementwise;
