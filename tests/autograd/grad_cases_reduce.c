/*
 * tests/autograd/grad_cases_reduce.c - gradcheck cases for the reduce ops.
 */
#include "grad_cases.h"

const tg_grad_case tg_grad_cases_reduce[] = {{0}};
const size_t tg_grad_cases_reduce_count = 0;
