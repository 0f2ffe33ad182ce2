/*
 * tests/autograd/grad_cases_group_norm.c - gradcheck cases for GroupNorm
 * and InstanceNorm (autograd/ops/group_norm.c), fused and composed, in the
 * layouts (N, C), (N, C, L) and (N, C, H, W), contiguous, transposed and
 * strided.
 *
 * Each case checks the full Jacobian of the output with respect to x,
 * weight and bias (those that require grad), so a wrong backward cannot
 * hide behind a loss like sum(y), whose x-gradient is zero for a
 * normaliser whatever the backward says. Which of weight and bias a case
 * passes is in its function's name. x spans [-1, 1): each group has a
 * spread of about 0.3 or more, so rstd stays moderate.
 *
 * No running statistic is updated inside a case (gradcheck runs f many
 * times): InstanceNorm's training cases pass none; its eval cases pass
 * them as inputs that need no gradient.
 */
#include "grad_cases.h"

/* name(x) = GroupNorm with G groups, weight w and bias b. */
#define GN_FN(name, G, w, b, composed, eps)                                 \
    static tg_tensor *name(const tg_tensor *const *x, int n, void *ctx)     \
    {                                                                       \
        (void)n, (void)ctx;                                                 \
        return composed ? tg_group_norm_composed(x[0], G, w, b, eps)        \
                        : tg_group_norm(x[0], G, w, b, eps);                \
    }

GN_FN(gn2_wb, 2, x[1], x[2], false, 1e-5)
GN_FN(gn1_wb, 1, x[1], x[2], false, 1e-5)
GN_FN(gn3_none, 3, NULL, NULL, false, 1e-5)
GN_FN(gn2_w, 2, x[1], NULL, false, 1e-5)
GN_FN(gn2_b_eps, 2, NULL, x[1], false, 0.5)
GN_FN(gnc2_wb, 2, x[1], x[2], true, 1e-5)
GN_FN(gnc1_none, 1, NULL, NULL, true, 1e-5)

/* InstanceNorm with the input's statistics, no running ones. */
#define IN_FN(name, w, b)                                                   \
    static tg_tensor *name(const tg_tensor *const *x, int n, void *ctx)     \
    {                                                                       \
        (void)n, (void)ctx;                                                 \
        return tg_instance_norm(x[0], NULL, NULL, w, b, true, 0.1, 1e-5);   \
    }

IN_FN(in_wb, x[1], x[2])
IN_FN(in_none, NULL, NULL)

/* InstanceNorm with the running statistics x[1], x[2] (no gradient; eval
 * reads them, never writes) and weight x[3]. */
static tg_tensor *in_eval_w(const tg_tensor *const *x, int n, void *ctx)
{
    (void)n, (void)ctx;
    tg_tensor *rm = (tg_tensor *)x[1], *rv = (tg_tensor *)x[2];
    return tg_instance_norm(x[0], rm, rv, x[3], NULL, false, 0.1, 1e-5);
}

#define CONT TG_CONTIGUOUS
#define TRAN TG_TRANSPOSED
#define STRD TG_STRIDED
#define VEC(c, layout) {1, {c}, layout}
#define RVAR(c) {1, {c}, CONT, 0.5, 2.0, .no_grad = true}
#define RMEAN(c) {1, {c}, CONT, .no_grad = true}

const tg_grad_case tg_grad_cases_group_norm[] = {
    /* GroupNorm, fused: (N, C), (N, C, L), (N, C, H, W) */
    {"group_norm (3,4) G=2", gn2_wb, 3,
     {{2, {3, 4}, CONT}, VEC(4, CONT), VEC(4, CONT)}},
    {"group_norm (3,4)T G=2", gn2_wb, 3,
     {{2, {3, 4}, TRAN}, VEC(4, STRD), VEC(4, CONT)}},
    {"group_norm (3,4) strided G=2", gn2_wb, 3,
     {{2, {3, 4}, STRD}, VEC(4, CONT), VEC(4, STRD)}},
    {"group_norm (2,4,3) G=2", gn2_wb, 3,
     {{3, {2, 4, 3}, CONT}, VEC(4, CONT), VEC(4, CONT)}},
    {"group_norm (2,4,3)T G=2", gn2_wb, 3,
     {{3, {2, 4, 3}, TRAN}, VEC(4, CONT), VEC(4, STRD)}},
    {"group_norm (2,4,3) strided G=1", gn1_wb, 3,
     {{3, {2, 4, 3}, STRD}, VEC(4, CONT), VEC(4, CONT)}},
    {"group_norm (2,6,2,2) G=3 no affine", gn3_none, 1,
     {{4, {2, 6, 2, 2}, CONT}}},
    {"group_norm (2,4,2,3)T G=2", gn2_wb, 3,
     {{4, {2, 4, 2, 3}, TRAN}, VEC(4, CONT), VEC(4, CONT)}},
    {"group_norm (2,4,3,2) strided G=2 weight only", gn2_w, 2,
     {{4, {2, 4, 3, 2}, STRD}, VEC(4, STRD)}},
    {"group_norm (2,4,3) bias only eps 0.5", gn2_b_eps, 2,
     {{3, {2, 4, 3}, CONT}, VEC(4, CONT)}},
    {"group_norm (2,4,3), x needs no grad", gn2_wb, 3,
     {{3, {2, 4, 3}, CONT, .no_grad = true}, VEC(4, CONT), VEC(4, CONT)}},
    /* GroupNorm, composed */
    {"group_norm_composed (2,4,3)T G=2", gnc2_wb, 3,
     {{3, {2, 4, 3}, TRAN}, VEC(4, CONT), VEC(4, STRD)}},
    {"group_norm_composed (2,2,2,3) strided G=1", gnc1_none, 1,
     {{4, {2, 2, 2, 3}, STRD}}},
    /* InstanceNorm: training (the input's statistics) and eval */
    {"instance_norm (2,3,4)", in_wb, 3,
     {{3, {2, 3, 4}, CONT}, VEC(3, CONT), VEC(3, CONT)}},
    {"instance_norm (2,3,4)T", in_wb, 3,
     {{3, {2, 3, 4}, TRAN}, VEC(3, STRD), VEC(3, CONT)}},
    {"instance_norm (2,2,3,2) strided no affine", in_none, 1,
     {{4, {2, 2, 3, 2}, STRD}}},
    {"instance_norm (2,2,2,3)T", in_wb, 3,
     {{4, {2, 2, 2, 3}, TRAN}, VEC(2, CONT), VEC(2, CONT)}},
    {"instance_norm eval (3,4), running stats given", in_eval_w, 4,
     {{2, {3, 4}, CONT}, RMEAN(4), RVAR(4), VEC(4, CONT)}},
    {"instance_norm eval (2,3,2,2)T, running stats given", in_eval_w, 4,
     {{4, {2, 3, 2, 2}, TRAN}, RMEAN(3), RVAR(3), VEC(3, STRD)}},
};
const size_t tg_grad_cases_group_norm_count =
    sizeof tg_grad_cases_group_norm / sizeof *tg_grad_cases_group_norm;
