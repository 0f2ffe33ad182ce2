/*
 * tests/autograd/grad_cases_reduce.c - gradcheck cases for the reductions
 * (reduce.c), softmax and log_softmax (softmax.c) and matmul (matmul.c).
 *
 * Inputs are continuous random numbers, so max and min have no ties (a tie
 * is a kink: PyTorch splits the gradient there, finite differences do
 * not; test_grad_reduce.c pins the tie rule instead). var and std rows are
 * never constant, so std stays away from its kink at 0.
 */
#include "grad_cases.h"

/* One case function: f(x) = expr, with x the inputs. */
#define CASE_FN(name, expr)                                                 \
    static tg_tensor *name(const tg_tensor *const *x, int n, void *user)          \
    {                                                                       \
        (void)n, (void)user;                                                \
        return expr;                                                        \
    }

/* ----------------------------------------------------------------- sum */
CASE_FN(sum_d0, tg_sum(x[0], TG_DIMS(0), false))
CASE_FN(sum_d1_keep, tg_sum(x[0], TG_DIMS(1), true))
CASE_FN(sum_dm1, tg_sum(x[0], TG_DIMS(-1), false))
CASE_FN(sum_d0_2, tg_sum(x[0], TG_DIMS(0, 2), false))
CASE_FN(sum_d2_0_keep, tg_sum(x[0], TG_DIMS(2, 0), true))
CASE_FN(sum_all, tg_sum(x[0], NULL, 0, false))
CASE_FN(sum_all_keep, tg_sum(x[0], NULL, 0, true))
CASE_FN(sum_scalar_d0, tg_sum(x[0], TG_DIMS(0), false))

/* ---------------------------------------------------------------- mean */
CASE_FN(mean_d1, tg_mean(x[0], TG_DIMS(1), false))
CASE_FN(mean_d0_2_keep, tg_mean(x[0], TG_DIMS(0, 2), true))
CASE_FN(mean_all, tg_mean(x[0], NULL, 0, false))

/* ------------------------------------------------------------ var, std */
CASE_FN(var0_d1, tg_var(x[0], TG_DIMS(1), 0, false))
CASE_FN(var1_d1, tg_var(x[0], TG_DIMS(1), 1, false))
CASE_FN(var2_d1, tg_var(x[0], TG_DIMS(1), 2, false))
CASE_FN(var1_d0_2_keep, tg_var(x[0], TG_DIMS(0, 2), 1, true))
CASE_FN(var0_all, tg_var(x[0], NULL, 0, 0, false))
CASE_FN(var2_all, tg_var(x[0], NULL, 0, 2, false))
CASE_FN(std0_d1, tg_std(x[0], TG_DIMS(1), 0, false))
CASE_FN(std1_d1, tg_std(x[0], TG_DIMS(1), 1, false))
CASE_FN(std2_d1, tg_std(x[0], TG_DIMS(1), 2, false))
CASE_FN(std1_dm1_0_keep, tg_std(x[0], TG_DIMS(-1, 0), 1, true))
CASE_FN(std0_all, tg_std(x[0], NULL, 0, 0, false))
CASE_FN(std2_all, tg_std(x[0], NULL, 0, 2, false))

/* ------------------------------------------------------------ max, min */
CASE_FN(max_d1, tg_max(x[0], TG_DIMS(1), false))
CASE_FN(max_d0_2_keep, tg_max(x[0], TG_DIMS(0, 2), true))
CASE_FN(max_all, tg_max(x[0], NULL, 0, false))
CASE_FN(min_dm1, tg_min(x[0], TG_DIMS(-1), false))
CASE_FN(min_d0_1_keep, tg_min(x[0], TG_DIMS(0, 1), true))
CASE_FN(min_all, tg_min(x[0], NULL, 0, false))

/* ---------------------------------------------------- softmax, log_softmax */
CASE_FN(softmax_d0, tg_softmax(x[0], 0))
CASE_FN(softmax_d1, tg_softmax(x[0], 1))
CASE_FN(softmax_d2, tg_softmax(x[0], 2))
CASE_FN(softmax_dm1, tg_softmax(x[0], -1))
CASE_FN(log_softmax_d0, tg_log_softmax(x[0], 0))
CASE_FN(log_softmax_d1, tg_log_softmax(x[0], 1))
CASE_FN(log_softmax_d2, tg_log_softmax(x[0], 2))
CASE_FN(log_softmax_dm1, tg_log_softmax(x[0], -1))

/* -------------------------------------------------------------- matmul */
CASE_FN(matmul, tg_matmul(x[0], x[1]))

/* Softmax inputs span [-3, 3): probabilities from about 0.001 to 0.99. */
#define SOFTMAX_IN {3, {2, 3, 4}, .lo = -3, .hi = 3}

const tg_grad_case tg_grad_cases_reduce[] = {
    /* sum */
    {"sum dim 0", sum_d0, 1, {{3, {2, 3, 4}}}},
    {"sum dim 1 keepdim", sum_d1_keep, 1, {{3, {2, 3, 4}}}},
    {"sum dim -1", sum_dm1, 1, {{3, {2, 3, 4}}}},
    {"sum dims (0, 2)", sum_d0_2, 1, {{3, {2, 3, 4}}}},
    {"sum dims (2, 0) keepdim", sum_d2_0_keep, 1, {{3, {2, 3, 4}}}},
    {"sum all", sum_all, 1, {{3, {2, 3, 4}}}},
    {"sum all keepdim", sum_all_keep, 1, {{3, {2, 3, 4}}}},
    {"sum dim 0 of (3,4)T", sum_d0, 1, {{2, {3, 4}, TG_TRANSPOSED}}},
    {"sum dim -1 strided", sum_dm1, 1, {{2, {3, 4}, TG_STRIDED}}},
    {"sum all of a 0-d", sum_all, 1, {{0, {0}}}},
    {"sum dim 0 of a 0-d", sum_scalar_d0, 1, {{0, {0}}}},
    /* mean */
    {"mean dim 1", mean_d1, 1, {{3, {2, 3, 4}}}},
    {"mean dims (0, 2) keepdim", mean_d0_2_keep, 1, {{3, {2, 3, 4}}}},
    {"mean all", mean_all, 1, {{3, {2, 3, 4}}}},
    {"mean dim 1 of (3,4)T", mean_d1, 1, {{2, {3, 4}, TG_TRANSPOSED}}},
    {"mean all of a 0-d", mean_all, 1, {{0, {0}}}},
    /* var */
    {"var correction 0 dim 1", var0_d1, 1, {{3, {2, 3, 4}}}},
    {"var correction 1 dim 1", var1_d1, 1, {{3, {2, 3, 4}}}},
    {"var correction 2 dim 1", var2_d1, 1, {{3, {2, 3, 4}}}},
    {"var correction 1 dims (0, 2) keepdim", var1_d0_2_keep, 1,
     {{3, {2, 3, 4}}}},
    {"var correction 0 all", var0_all, 1, {{3, {2, 3, 4}}}},
    {"var correction 2 all", var2_all, 1, {{3, {2, 3, 4}}}},
    {"var correction 1 dim 1 of (3,4)T", var1_d1, 1,
     {{2, {3, 4}, TG_TRANSPOSED}}},
    {"var correction 1 dim 1 strided", var1_d1, 1,
     {{2, {3, 4}, TG_STRIDED}}},
    /* std */
    {"std correction 0 dim 1", std0_d1, 1, {{3, {2, 3, 4}}}},
    {"std correction 1 dim 1", std1_d1, 1, {{3, {2, 3, 4}}}},
    {"std correction 2 dim 1", std2_d1, 1, {{3, {2, 3, 4}}}},
    {"std correction 1 dims (-1, 0) keepdim", std1_dm1_0_keep, 1,
     {{3, {2, 3, 4}}}},
    {"std correction 0 all", std0_all, 1, {{3, {2, 3, 4}}}},
    {"std correction 2 all", std2_all, 1, {{3, {2, 3, 4}}}},
    {"std correction 1 dim 1 of (3,4)T", std1_d1, 1,
     {{2, {3, 4}, TG_TRANSPOSED}}},
    /* max, min */
    {"max dim 1", max_d1, 1, {{3, {2, 3, 4}}}},
    {"max dims (0, 2) keepdim", max_d0_2_keep, 1, {{3, {2, 3, 4}}}},
    {"max all", max_all, 1, {{3, {2, 3, 4}}}},
    {"max dim 1 of (3,4)T", max_d1, 1, {{2, {3, 4}, TG_TRANSPOSED}}},
    {"max all of a 0-d", max_all, 1, {{0, {0}}}},
    {"min dim -1", min_dm1, 1, {{3, {2, 3, 4}}}},
    {"min dims (0, 1) keepdim", min_d0_1_keep, 1, {{3, {2, 3, 4}}}},
    {"min all", min_all, 1, {{3, {2, 3, 4}}}},
    {"min dim -1 strided", min_dm1, 1, {{2, {3, 4}, TG_STRIDED}}},
    /* softmax, log_softmax along each dim of a 3-D input */
    {"softmax dim 0", softmax_d0, 1, {SOFTMAX_IN}},
    {"softmax dim 1", softmax_d1, 1, {SOFTMAX_IN}},
    {"softmax dim 2", softmax_d2, 1, {SOFTMAX_IN}},
    {"softmax dim -1 of (3,4)T", softmax_dm1, 1,
     {{2, {3, 4}, TG_TRANSPOSED, -3, 3}}},
    {"softmax dim 0 strided", softmax_d0, 1,
     {{2, {3, 4}, TG_STRIDED, -3, 3}}},
    {"softmax of a 0-d", softmax_d0, 1, {{0, {0}}}},
    {"log_softmax dim 0", log_softmax_d0, 1, {SOFTMAX_IN}},
    {"log_softmax dim 1", log_softmax_d1, 1, {SOFTMAX_IN}},
    {"log_softmax dim 2", log_softmax_d2, 1, {SOFTMAX_IN}},
    {"log_softmax dim -1 of (3,4)T", log_softmax_dm1, 1,
     {{2, {3, 4}, TG_TRANSPOSED, -3, 3}}},
    {"log_softmax dim 1 strided", log_softmax_d1, 1,
     {{2, {3, 4}, TG_STRIDED, -3, 3}}},
    {"log_softmax of a 0-d", log_softmax_d0, 1, {{0, {0}}}},
    /* matmul, every shape class */
    {"matmul (3,) @ (3,) dot", matmul, 2, {{1, {3}}, {1, {3}}}},
    {"matmul (4,3) @ (3,) mv", matmul, 2, {{2, {4, 3}}, {1, {3}}}},
    {"matmul (3,) @ (3,5)", matmul, 2, {{1, {3}}, {2, {3, 5}}}},
    {"matmul (4,3) @ (3,5) mm", matmul, 2, {{2, {4, 3}}, {2, {3, 5}}}},
    {"matmul (2,4,3) @ (2,3,5) batched", matmul, 2,
     {{3, {2, 4, 3}}, {3, {2, 3, 5}}}},
    {"matmul (2,4,3) @ (3,5) broadcast", matmul, 2,
     {{3, {2, 4, 3}}, {2, {3, 5}}}},
    {"matmul (4,3) @ (2,3,5) broadcast", matmul, 2,
     {{2, {4, 3}}, {3, {2, 3, 5}}}},
    {"matmul (2,1,3,4) @ (5,4,2) broadcast both", matmul, 2,
     {{4, {2, 1, 3, 4}}, {3, {5, 4, 2}}}},
    {"matmul (2,4,3) @ (3,)", matmul, 2, {{3, {2, 4, 3}}, {1, {3}}}},
    {"matmul (3,) @ (2,3,5)", matmul, 2, {{1, {3}}, {3, {2, 3, 5}}}},
    {"matmul (4,3)T @ (3,5)T", matmul, 2,
     {{2, {4, 3}, TG_TRANSPOSED}, {2, {3, 5}, TG_TRANSPOSED}}},
    {"matmul (2,4,3)T @ (3,5) strided", matmul, 2,
     {{3, {2, 4, 3}, TG_TRANSPOSED}, {2, {3, 5}, TG_STRIDED}}},
    {"matmul (3,) strided @ (3,5)T", matmul, 2,
     {{1, {3}, TG_STRIDED}, {2, {3, 5}, TG_TRANSPOSED}}},
    {"matmul (4,3) @ (3,5), b needs no grad", matmul, 2,
     {{2, {4, 3}}, {2, {3, 5}, .no_grad = true}}},
    {"matmul (4,3) @ (3,), a needs no grad", matmul, 2,
     {{2, {4, 3}, .no_grad = true}, {1, {3}}}},
};
const size_t tg_grad_cases_reduce_count =
    sizeof tg_grad_cases_reduce / sizeof *tg_grad_cases_reduce;
