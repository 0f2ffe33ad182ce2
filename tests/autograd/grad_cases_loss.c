/* placeholder */
#include "grad_cases.h"
const tg_grad_case tg_grad_cases_loss[] = {{0}};
const size_t tg_grad_cases_loss_count = 0;
