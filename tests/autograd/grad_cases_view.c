/*
 * tests/autograd/grad_cases_view.c - gradcheck cases for the view ops.
 */
#include "grad_cases.h"

const tg_grad_case tg_grad_cases_view[] = {{0}};
const size_t tg_grad_cases_view_count = 0;
