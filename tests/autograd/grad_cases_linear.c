/*
 * tests/autograd/grad_cases_linear.c - gradcheck cases for tg_linear
 * (autograd/ops/linear.c) with respect to x, the weight and the bias: a
 * 2-D, a 1-D and a 3-D x, no bias, transposed and strided operands, and
 * inputs that need no gradient. The map is linear in each input, so any
 * values do.
 */
#include "grad_cases.h"

static tg_tensor *f_linear(const tg_tensor *const *x, int n, void *ctx)
{
    (void)ctx;
    return tg_linear(x[0], x[1], n > 2 ? x[2] : NULL);
}

#define CONT TG_CONTIGUOUS
#define TRAN TG_TRANSPOSED
#define STRD TG_STRIDED

const tg_grad_case tg_grad_cases_linear[] = {
    {"linear (4,3) W (5,3) b (5,)", f_linear, 3,
     {{2, {4, 3}, CONT}, {2, {5, 3}, CONT}, {1, {5}, CONT}}},
    {"linear (3,) W (2,3) b (2,)", f_linear, 3,
     {{1, {3}, CONT}, {2, {2, 3}, CONT}, {1, {2}, CONT}}},
    {"linear (2,3,4) W (3,4) b (3,)", f_linear, 3,
     {{3, {2, 3, 4}, CONT}, {2, {3, 4}, CONT}, {1, {3}, CONT}}},
    {"linear (4,3)T W (2,3)T b strided", f_linear, 3,
     {{2, {4, 3}, TRAN}, {2, {2, 3}, TRAN}, {1, {2}, STRD}}},
    {"linear (2,3,4)T W strided, no bias", f_linear, 2,
     {{3, {2, 3, 4}, TRAN}, {2, {3, 4}, STRD}}},
    {"linear (4,3) strided, W needs no grad", f_linear, 3,
     {{2, {4, 3}, STRD}, {2, {2, 3}, CONT, .no_grad = true},
      {1, {2}, CONT}}},
    {"linear x needs no grad", f_linear, 3,
     {{2, {4, 3}, CONT, .no_grad = true}, {2, {2, 3}, CONT},
      {1, {2}, CONT}}},
};
const size_t tg_grad_cases_linear_count =
    sizeof tg_grad_cases_linear / sizeof *tg_grad_cases_linear;
