/*
 * tests/autograd/grad_cases_norm.c - gradcheck cases for LayerNorm
 * (layer_norm.c) and BatchNorm (batch_norm.c), fused and composed.
 *
 * Each case checks the full Jacobian of the op's output with respect to x,
 * weight and bias (those that require grad), so the trap of a loss like
 * sum(y), whose x-gradient is zero for a normaliser whatever the backward
 * says, does not apply here (test_norm_grad.c shows the trap).
 *
 * normalized_shape is read off x: a case function for k trailing dims
 * normalises over the last k dims of x[0]. Which of weight and bias a
 * case passes is in its function's name; inputs it does not pass are
 * simply not listed. x spans [-1, 1): every row and channel has a spread
 * of about 0.3 or more, so rstd stays moderate and nothing comes near the
 * kink of sqrt at 0.
 *
 * No running statistic is updated inside a case (gradcheck runs f many
 * times): training cases pass NULL running statistics; eval cases pass
 * them as inputs that need no gradient, or make constants inside f.
 */
#include "grad_cases.h"

/* ------------------------------------------------------------- LayerNorm */

/* LayerNorm over the last k dims of x, fused or composed, eps given. */
static tg_tensor *ln(const tg_tensor *const *x, int k, const tg_tensor *w,
                     const tg_tensor *b, bool composed, double eps)
{
    int64_t ns[TG_MAX_DIMS];
    for (int i = 0; i < k; i++)
        ns[i] = x[0]->shape[x[0]->ndim - k + i];
    return composed ? tg_layer_norm_composed(x[0], ns, k, w, b, eps)
                    : tg_layer_norm(x[0], ns, k, w, b, eps);
}

/* name(x) = LayerNorm over the last k dims with weight w and bias b. */
#define LN_FN(name, k, w, b, composed, eps)                                 \
    static tg_tensor *name(const tg_tensor *const *x, int n, void *user)         \
    {                                                                       \
        (void)n, (void)user;                                                \
        return ln(x, k, w, b, composed, eps);                               \
    }

LN_FN(ln1_wb, 1, x[1], x[2], false, 1e-5)
LN_FN(ln2_wb, 2, x[1], x[2], false, 1e-5)
LN_FN(ln3_wb, 3, x[1], x[2], false, 1e-5)
LN_FN(ln1_none, 1, NULL, NULL, false, 1e-5)
LN_FN(ln2_none, 2, NULL, NULL, false, 1e-5)
LN_FN(ln1_w, 1, x[1], NULL, false, 1e-5)
LN_FN(ln2_b, 2, NULL, x[1], false, 1e-5)
/* A large eps changes rstd a lot: a backward that forgot eps, or put it
 * outside the sqrt, would show here. */
LN_FN(ln1_wb_eps, 1, x[1], x[2], false, 0.5)
LN_FN(lnc1_wb, 1, x[1], x[2], true, 1e-5)
LN_FN(lnc2_wb, 2, x[1], x[2], true, 1e-5)
LN_FN(lnc3_none, 3, NULL, NULL, true, 1e-5)
LN_FN(lnc1_w, 1, x[1], NULL, true, 1e-5)
LN_FN(lnc2_b_eps, 2, NULL, x[1], true, 0.5)

/* ------------------------------------------------------------- BatchNorm */

static tg_batch_norm_options bn_opts(bool training, int64_t correction,
                                     double eps)
{
    tg_batch_norm_options o = tg_batch_norm_defaults();
    o.eval = !training;
    o.correction = correction;
    o.eps = eps;
    return o;
}

/* Training: batch statistics, no running statistics to update. */
#define BN_TRAIN_FN(name, w, b, correction, composed, eps)                  \
    static tg_tensor *name(const tg_tensor *const *x, int n, void *user)         \
    {                                                                       \
        (void)n, (void)user;                                                \
        tg_batch_norm_options o = bn_opts(true, correction, eps);           \
        return composed                                                     \
                   ? tg_batch_norm_composed(x[0], NULL, NULL, w, b, &o)     \
                   : tg_batch_norm_ex(x[0], NULL, NULL, w, b, &o, NULL,     \
                                      NULL);                                \
    }

BN_TRAIN_FN(bn_wb, x[1], x[2], 0, false, 1e-5)
BN_TRAIN_FN(bn_none, NULL, NULL, 0, false, 1e-5)
BN_TRAIN_FN(bn_w, x[1], NULL, 0, false, 1e-5)
BN_TRAIN_FN(bn_b, NULL, x[1], 0, false, 1e-5)
BN_TRAIN_FN(bn_wb_c1, x[1], x[2], 1, false, 1e-5)
BN_TRAIN_FN(bn_none_c1, NULL, NULL, 1, false, 1e-5)
BN_TRAIN_FN(bn_wb_eps, x[1], x[2], 0, false, 0.5)
BN_TRAIN_FN(bnc_wb, x[1], x[2], 0, true, 1e-5)
BN_TRAIN_FN(bnc_wb_c1, x[1], x[2], 1, true, 1e-5)
BN_TRAIN_FN(bnc_none, NULL, NULL, 0, true, 1e-5)

/* Eval with the running statistics as inputs x[1], x[2] that need no
 * gradient (running_var drawn from [0.5, 2)); weight and bias follow when
 * given. */
#define BN_EVAL_FN(name, w, b, composed)                                    \
    static tg_tensor *name(const tg_tensor *const *x, int n, void *user)         \
    {                                                                       \
        (void)n, (void)user;                                                \
        tg_batch_norm_options o = bn_opts(false, 0, 1e-5);                  \
        /* eval mode reads the running statistics, never writes them */     \
        tg_tensor *rm = (tg_tensor *)x[1], *rv = (tg_tensor *)x[2];         \
        return composed ? tg_batch_norm_composed(x[0], rm, rv, w, b, &o)    \
                        : tg_batch_norm_ex(x[0], rm, rv, w, b, &o, NULL,    \
                                           NULL);                           \
    }

BN_EVAL_FN(bn_eval_stats, NULL, NULL, false)
BN_EVAL_FN(bn_eval_stats_w, x[3], NULL, false)
BN_EVAL_FN(bnc_eval_stats, NULL, NULL, true)

/* Eval with weight x[1] and bias x[2] (five tensors do not fit the table):
 * the running statistics are constants made here, mean 0.3 c - 0.2 and
 * var 0.5 + 0.25 c for channel c. correction is ignored in eval. */
static tg_tensor *bn_eval_const(const tg_tensor *const *x, bool composed,
                                bool plain_api, int64_t correction)
{
    int64_t C = x[0]->shape[1];
    tg_tensor *rm = tg_arange(0, (double)C, 1, x[0]->dtype);
    tg_tensor *rv = tg_arange(0, (double)C, 1, x[0]->dtype);
    tg_no_grad_begin();
    tg_tensor *m = tg_mul_scalar(rm, 0.3);
    tg_tensor *v = tg_mul_scalar(rv, 0.25);
    tg_tensor *mean = tg_sub_scalar(m, 0.2);
    tg_tensor *var = tg_add_scalar(v, 0.5);
    tg_no_grad_end();
    tg_batch_norm_options o = bn_opts(false, correction, 1e-5);
    tg_tensor *y =
        plain_api ? tg_batch_norm(x[0], mean, var, x[1], x[2], false, 0.1,
                                  1e-5)
        : composed ? tg_batch_norm_composed(x[0], mean, var, x[1], x[2], &o)
                   : tg_batch_norm_ex(x[0], mean, var, x[1], x[2], &o, NULL,
                                      NULL);
    tg_release(var);
    tg_release(mean);
    tg_release(v);
    tg_release(m);
    tg_release(rv);
    tg_release(rm);
    return y;
}

static tg_tensor *bn_eval_wb(const tg_tensor *const *x, int n, void *user)
{
    (void)n, (void)user;
    return bn_eval_const(x, false, false, 0);
}

static tg_tensor *bn_eval_wb_c1(const tg_tensor *const *x, int n, void *user)
{
    (void)n, (void)user;
    return bn_eval_const(x, false, false, 1);
}

static tg_tensor *bnc_eval_wb(const tg_tensor *const *x, int n, void *user)
{
    (void)n, (void)user;
    return bn_eval_const(x, true, false, 0);
}

static tg_tensor *bn_plain_eval_wb(const tg_tensor *const *x, int n, void *user)
{
    (void)n, (void)user;
    return bn_eval_const(x, false, true, 0);
}

/* tg_batch_norm, the torch.nn.functional-style entry, in training. */
static tg_tensor *bn_plain_train_wb(const tg_tensor *const *x, int n, void *user)
{
    (void)n, (void)user;
    return tg_batch_norm(x[0], NULL, NULL, x[1], x[2], true, 0.1, 1e-5);
}

/* ----------------------------------------------------------- the cases */

/* Layouts, short: contiguous, transposed, every second element. */
#define CONT TG_CONTIGUOUS
#define TRAN TG_TRANSPOSED
#define STRD TG_STRIDED
/* A channel vector of C values: weight, bias or running_mean. */
#define VEC(c, layout) {1, {c}, layout}
/* A running variance: positive, away from 0. */
#define RVAR(c) {1, {c}, CONT, 0.5, 2.0, .no_grad = true}
#define RMEAN(c) {1, {c}, CONT, .no_grad = true}

const tg_grad_case tg_grad_cases_norm[] = {
    /* LayerNorm, fused: 1, 2 and 3 normalised dims, every layout */
    {"layer_norm (3,5) over (5,)", ln1_wb, 3,
     {{2, {3, 5}, CONT}, VEC(5, CONT), VEC(5, CONT)}},
    {"layer_norm (3,5)T over (5,)", ln1_wb, 3,
     {{2, {3, 5}, TRAN}, VEC(5, STRD), VEC(5, CONT)}},
    {"layer_norm (3,5) strided over (5,)", ln1_wb, 3,
     {{2, {3, 5}, STRD}, VEC(5, CONT), VEC(5, STRD)}},
    {"layer_norm (2,3,4) over (3,4)", ln2_wb, 3,
     {{3, {2, 3, 4}, CONT}, {2, {3, 4}, CONT}, {2, {3, 4}, CONT}}},
    {"layer_norm (2,3,4)T over (3,4), weight and bias T", ln2_wb, 3,
     {{3, {2, 3, 4}, TRAN}, {2, {3, 4}, TRAN}, {2, {3, 4}, TRAN}}},
    {"layer_norm (2,3,4) strided over (3,4)", ln2_wb, 3,
     {{3, {2, 3, 4}, STRD}, {2, {3, 4}, STRD}, {2, {3, 4}, CONT}}},
    {"layer_norm (2,2,2,3) over (2,2,3)", ln3_wb, 3,
     {{4, {2, 2, 2, 3}, CONT}, {3, {2, 2, 3}, CONT}, {3, {2, 2, 3}, CONT}}},
    {"layer_norm (2,2,3)T over all 3 dims (one row)", ln3_wb, 3,
     {{3, {2, 2, 3}, TRAN}, {3, {2, 2, 3}, CONT}, {3, {2, 2, 3}, TRAN}}},
    {"layer_norm (4,3) no affine", ln1_none, 1, {{2, {4, 3}, CONT}}},
    {"layer_norm (2,3,4)T over (3,4) no affine", ln2_none, 1,
     {{3, {2, 3, 4}, TRAN}}},
    {"layer_norm (3,4) strided weight only", ln1_w, 2,
     {{2, {3, 4}, STRD}, VEC(4, CONT)}},
    {"layer_norm (2,3,4) over (3,4) bias only", ln2_b, 2,
     {{3, {2, 3, 4}, CONT}, {2, {3, 4}, CONT}}},
    {"layer_norm (3,5) eps 0.5", ln1_wb_eps, 3,
     {{2, {3, 5}, CONT}, VEC(5, CONT), VEC(5, CONT)}},
    {"layer_norm (3,5), x needs no grad", ln1_wb, 3,
     {{2, {3, 5}, CONT, .no_grad = true}, VEC(5, CONT), VEC(5, CONT)}},
    {"layer_norm (3,5), weight needs no grad", ln1_wb, 3,
     {{2, {3, 5}, TRAN}, {1, {5}, CONT, .no_grad = true}, VEC(5, CONT)}},
    /* LayerNorm, composed */
    {"layer_norm_composed (3,5) over (5,)", lnc1_wb, 3,
     {{2, {3, 5}, CONT}, VEC(5, CONT), VEC(5, CONT)}},
    {"layer_norm_composed (2,3,4)T over (3,4)", lnc2_wb, 3,
     {{3, {2, 3, 4}, TRAN}, {2, {3, 4}, CONT}, {2, {3, 4}, TRAN}}},
    {"layer_norm_composed (2,2,2,3) strided over (2,2,3)", lnc3_none, 1,
     {{4, {2, 2, 2, 3}, STRD}}},
    {"layer_norm_composed (3,4)T weight only", lnc1_w, 2,
     {{2, {3, 4}, TRAN}, VEC(4, STRD)}},
    {"layer_norm_composed (2,3,4) bias only eps 0.5", lnc2_b_eps, 2,
     {{3, {2, 3, 4}, CONT}, {2, {3, 4}, STRD}}},

    /* BatchNorm training, fused: (N,C), (N,C,L), (N,C,H,W) */
    {"batch_norm train (4,3)", bn_wb, 3,
     {{2, {4, 3}, CONT}, VEC(3, CONT), VEC(3, CONT)}},
    {"batch_norm train (4,3)T", bn_wb, 3,
     {{2, {4, 3}, TRAN}, VEC(3, STRD), VEC(3, CONT)}},
    {"batch_norm train (4,3) strided", bn_wb, 3,
     {{2, {4, 3}, STRD}, VEC(3, CONT), VEC(3, STRD)}},
    {"batch_norm train (3,2,4)", bn_wb, 3,
     {{3, {3, 2, 4}, CONT}, VEC(2, CONT), VEC(2, CONT)}},
    {"batch_norm train (3,2,4)T", bn_wb, 3,
     {{3, {3, 2, 4}, TRAN}, VEC(2, CONT), VEC(2, CONT)}},
    {"batch_norm train (2,2,2,3)", bn_wb, 3,
     {{4, {2, 2, 2, 3}, CONT}, VEC(2, CONT), VEC(2, CONT)}},
    {"batch_norm train (2,2,2,3) strided", bn_wb, 3,
     {{4, {2, 2, 2, 3}, STRD}, VEC(2, STRD), VEC(2, CONT)}},
    {"batch_norm train (2,2,3,2)T", bn_wb, 3,
     {{4, {2, 2, 3, 2}, TRAN}, VEC(2, CONT), VEC(2, STRD)}},
    {"batch_norm train (5,2) no affine", bn_none, 1, {{2, {5, 2}, CONT}}},
    {"batch_norm train (2,3,3)T weight only", bn_w, 2,
     {{3, {2, 3, 3}, TRAN}, VEC(3, CONT)}},
    {"batch_norm train (4,3) strided bias only", bn_b, 2,
     {{2, {4, 3}, STRD}, VEC(3, CONT)}},
    {"batch_norm train (4,3) correction 1", bn_wb_c1, 3,
     {{2, {4, 3}, CONT}, VEC(3, CONT), VEC(3, CONT)}},
    {"batch_norm train (2,2,3)T correction 1 no affine", bn_none_c1, 1,
     {{3, {2, 2, 3}, TRAN}}},
    {"batch_norm train (2,2,2,2) strided correction 1", bn_wb_c1, 3,
     {{4, {2, 2, 2, 2}, STRD}, VEC(2, CONT), VEC(2, CONT)}},
    {"batch_norm train (4,3) eps 0.5", bn_wb_eps, 3,
     {{2, {4, 3}, CONT}, VEC(3, CONT), VEC(3, CONT)}},
    {"batch_norm train (4,3), x needs no grad", bn_wb, 3,
     {{2, {4, 3}, CONT, .no_grad = true}, VEC(3, CONT), VEC(3, CONT)}},
    {"batch_norm train (3,2,4), weight needs no grad", bn_wb, 3,
     {{3, {3, 2, 4}, CONT}, {1, {2}, CONT, .no_grad = true}, VEC(2, CONT)}},
    {"tg_batch_norm train (3,2,2)T", bn_plain_train_wb, 3,
     {{3, {3, 2, 2}, TRAN}, VEC(2, CONT), VEC(2, CONT)}},
    /* BatchNorm eval, fused */
    {"batch_norm eval (4,3), running stats given", bn_eval_stats, 3,
     {{2, {4, 3}, CONT}, RMEAN(3), RVAR(3)}},
    {"batch_norm eval (2,3,2)T, running stats given, weight", bn_eval_stats_w,
     4, {{3, {2, 3, 2}, TRAN}, RMEAN(3), RVAR(3), VEC(3, CONT)}},
    {"batch_norm eval (4,3)", bn_eval_wb, 3,
     {{2, {4, 3}, TRAN}, VEC(3, CONT), VEC(3, STRD)}},
    {"batch_norm eval (2,2,2,3) strided", bn_eval_wb, 3,
     {{4, {2, 2, 2, 3}, STRD}, VEC(2, CONT), VEC(2, CONT)}},
    {"batch_norm eval (1,3): one sample is fine in eval", bn_eval_wb, 3,
     {{2, {1, 3}, CONT}, VEC(3, CONT), VEC(3, CONT)}},
    {"batch_norm eval (3,2,4) correction 1", bn_eval_wb_c1, 3,
     {{3, {3, 2, 4}, CONT}, VEC(2, CONT), VEC(2, CONT)}},
    {"tg_batch_norm eval (3,2,2)", bn_plain_eval_wb, 3,
     {{3, {3, 2, 2}, CONT}, VEC(2, CONT), VEC(2, CONT)}},
    /* BatchNorm, composed */
    {"batch_norm_composed train (4,3)", bnc_wb, 3,
     {{2, {4, 3}, CONT}, VEC(3, CONT), VEC(3, CONT)}},
    {"batch_norm_composed train (3,2,4)T correction 1", bnc_wb_c1, 3,
     {{3, {3, 2, 4}, TRAN}, VEC(2, STRD), VEC(2, CONT)}},
    {"batch_norm_composed train (2,2,2,3) strided no affine", bnc_none, 1,
     {{4, {2, 2, 2, 3}, STRD}}},
    {"batch_norm_composed eval (2,2,2,2)T", bnc_eval_wb, 3,
     {{4, {2, 2, 2, 2}, TRAN}, VEC(2, CONT), VEC(2, CONT)}},
    {"batch_norm_composed eval (4,3) strided, running stats given",
     bnc_eval_stats, 3, {{2, {4, 3}, STRD}, RMEAN(3), RVAR(3)}},
};
const size_t tg_grad_cases_norm_count =
    sizeof tg_grad_cases_norm / sizeof *tg_grad_cases_norm;
