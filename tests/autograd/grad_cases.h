/*
 * tests/autograd/grad_cases.h - the table behind the one parameterised
 * gradcheck over every differentiable op (test_grad_ops.c).
 *
 * Each op family lists its cases in grad_cases_<family>.c: a function of
 * the inputs (usually one op call) and how to make each input. Inputs are
 * float64, drawn uniformly from [lo, hi) by a seeded generator (with a
 * random sign when `signed_mag`, so |x| stays in [lo, hi): away from the
 * kink of abs or relu at 0), and laid out contiguously, transposed (the
 * last two dims swapped in memory) or as every second element of a larger
 * tensor, so backward is checked on non-contiguous inputs too.
 */
#ifndef TG_TESTS_GRAD_CASES_H
#define TG_TESTS_GRAD_CASES_H

#include <stddef.h>
#include <stdint.h>

#include "tapegrad.h"

typedef enum tg_case_layout {
    TG_CONTIGUOUS = 0,
    TG_TRANSPOSED, // needs ndim >= 2: made as (..., n, m), then transposed
    TG_STRIDED,    // every second element along the last dim
} tg_case_layout;

typedef struct tg_case_input {
    int ndim;
    int64_t shape[4];
    tg_case_layout layout;
    double lo, hi;    // the range of values (0, 0 means [-1, 1))
    bool signed_mag;  // values are +-[lo, hi)
    bool no_grad;     // an input that does not require grad
} tg_case_input;

typedef struct tg_grad_case {
    const char *name;
    tg_gradcheck_fn f;
    int ninputs;
    tg_case_input in[4];
    double atol, rtol; // 0 means gradcheck's defaults
} tg_grad_case;

extern const tg_grad_case tg_grad_cases_elementwise[];
extern const size_t tg_grad_cases_elementwise_count;
extern const tg_grad_case tg_grad_cases_view[];
extern const size_t tg_grad_cases_view_count;
extern const tg_grad_case tg_grad_cases_reduce[];
extern const size_t tg_grad_cases_reduce_count;
extern const tg_grad_case tg_grad_cases_norm[];
extern const size_t tg_grad_cases_norm_count;
extern const tg_grad_case tg_grad_cases_loss[];
extern const size_t tg_grad_cases_loss_count;
extern const tg_grad_case tg_grad_cases_join[];
extern const size_t tg_grad_cases_join_count;
extern const tg_grad_case tg_grad_cases_index[];
extern const size_t tg_grad_cases_index_count;
extern const tg_grad_case tg_grad_cases_conv[];
extern const size_t tg_grad_cases_conv_count;
extern const tg_grad_case tg_grad_cases_group_norm[];
extern const size_t tg_grad_cases_group_norm_count;
extern const tg_grad_case tg_grad_cases_linear[];
extern const size_t tg_grad_cases_linear_count;

#endif
