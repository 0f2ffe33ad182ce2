/*
 * tests/autograd/grad_cases_loss.c - gradcheck cases for the losses
 * (autograd/ops/loss.c): mse_loss and binary_cross_entropy_with_logits
 * with respect to both the input and the target, nll_loss and
 * cross_entropy with respect to their (N, C) or (C,) input, each with the
 * three reductions and on transposed and strided layouts.
 *
 * Reduction none gives a vector output, so the full Jacobian is checked
 * there, not just one weighted sum of it.
 *
 * The labels are no input (int64, no gradient): a case function makes
 * them from the constant LABELS below, label i being LABELS[i] % C, so
 * gradcheck's many calls all see the same labels. Logits and targets of
 * bce are drawn from [-3, 3) and [0, 1); the other inputs from [-1, 1).
 * None of these losses has a kink, so any values do.
 */
#include "grad_cases.h"

static const int64_t LABELS[] = {2, 0, 1, 2, 1, 0, 3, 1};

/* Labels for x: (N,) for x (N, C), 0-d for x (C,). New reference. */
static tg_tensor *labels_for(const tg_tensor *x)
{
    int64_t C = x->shape[x->ndim - 1];
    if (x->ndim == 1)
        return tg_scalar((double)(LABELS[0] % C), TG_INT64);
    int64_t N = x->shape[0], y[8];
    for (int64_t i = 0; i < N && i < 8; i++)
        y[i] = LABELS[i] % C;
    return tg_from_array(y, &N, 1, TG_INT64);
}

/* name(x) = loss(x[0], x[1], reduction) for mse and bce. */
#define PAIR_FN(name, loss, reduction)                                      \
    static tg_tensor *name(const tg_tensor *const *x, int n, void *user)         \
    {                                                                       \
        (void)n, (void)user;                                                \
        return loss(x[0], x[1], reduction);                                 \
    }

/* name(x) = loss(x[0], labels, reduction) for nll and cross_entropy. */
#define CLASS_FN(name, loss, reduction)                                     \
    static tg_tensor *name(const tg_tensor *const *x, int n, void *user)         \
    {                                                                       \
        (void)n, (void)user;                                                \
        tg_tensor *labels = labels_for(x[0]);                               \
        tg_tensor *out = loss(x[0], labels, reduction);                     \
        tg_release(labels);                                                 \
        return out;                                                         \
    }

PAIR_FN(mse_mean, tg_mse_loss, TG_REDUCTION_MEAN)
PAIR_FN(mse_sum, tg_mse_loss, TG_REDUCTION_SUM)
PAIR_FN(mse_none, tg_mse_loss, TG_REDUCTION_NONE)
PAIR_FN(bce_mean, tg_binary_cross_entropy_with_logits, TG_REDUCTION_MEAN)
PAIR_FN(bce_sum, tg_binary_cross_entropy_with_logits, TG_REDUCTION_SUM)
PAIR_FN(bce_none, tg_binary_cross_entropy_with_logits, TG_REDUCTION_NONE)
CLASS_FN(nll_mean, tg_nll_loss, TG_REDUCTION_MEAN)
CLASS_FN(nll_sum, tg_nll_loss, TG_REDUCTION_SUM)
CLASS_FN(nll_none, tg_nll_loss, TG_REDUCTION_NONE)
CLASS_FN(ce_mean, tg_cross_entropy, TG_REDUCTION_MEAN)
CLASS_FN(ce_sum, tg_cross_entropy, TG_REDUCTION_SUM)
CLASS_FN(ce_none, tg_cross_entropy, TG_REDUCTION_NONE)

#define CONT TG_CONTIGUOUS
#define TRAN TG_TRANSPOSED
#define STRD TG_STRIDED
/* bce's logits and targets */
#define LOGITS(r, c, layout) {2, {r, c}, layout, -3.0, 3.0}
#define TARGETS(r, c, layout) {2, {r, c}, layout, 0.0, 1.0}

const tg_grad_case tg_grad_cases_loss[] = {
    /* mse: both inputs, every reduction and layout */
    {"mse_loss mean (3,4)", mse_mean, 2,
     {{2, {3, 4}, CONT}, {2, {3, 4}, CONT}}},
    {"mse_loss sum (3,4)T", mse_sum, 2,
     {{2, {3, 4}, TRAN}, {2, {3, 4}, CONT}}},
    {"mse_loss none (3,4) strided", mse_none, 2,
     {{2, {3, 4}, STRD}, {2, {3, 4}, TRAN}}},
    {"mse_loss mean (2,3,2)T, target strided", mse_mean, 2,
     {{3, {2, 3, 2}, TRAN}, {3, {2, 3, 2}, STRD}}},
    {"mse_loss none (5,)", mse_none, 2, {{1, {5}, CONT}, {1, {5}, STRD}}},
    {"mse_loss sum 0-d", mse_sum, 2, {{0, {0}, CONT}, {0, {0}, CONT}}},
    {"mse_loss mean (3,4), target needs no grad", mse_mean, 2,
     {{2, {3, 4}, TRAN}, {2, {3, 4}, CONT, .no_grad = true}}},
    {"mse_loss none (3,4), input needs no grad", mse_none, 2,
     {{2, {3, 4}, CONT, .no_grad = true}, {2, {3, 4}, STRD}}},

    /* binary cross-entropy with logits: both inputs */
    {"bce_with_logits mean (3,4)", bce_mean, 2,
     {LOGITS(3, 4, CONT), TARGETS(3, 4, CONT)}},
    {"bce_with_logits sum (3,4)T", bce_sum, 2,
     {LOGITS(3, 4, TRAN), TARGETS(3, 4, STRD)}},
    {"bce_with_logits none (3,4) strided", bce_none, 2,
     {LOGITS(3, 4, STRD), TARGETS(3, 4, TRAN)}},
    {"bce_with_logits mean (4,2)T, targets need no grad", bce_mean, 2,
     {LOGITS(4, 2, TRAN), {2, {4, 2}, CONT, 0.0, 1.0, .no_grad = true}}},
    {"bce_with_logits none (6,)", bce_none, 2,
     {{1, {6}, CONT, -3.0, 3.0}, {1, {6}, STRD, 0.0, 1.0}}},

    /* nll: the log-probability input */
    {"nll_loss mean (4,3)", nll_mean, 1, {{2, {4, 3}, CONT}}},
    {"nll_loss sum (4,3)T", nll_sum, 1, {{2, {4, 3}, TRAN}}},
    {"nll_loss none (5,4) strided", nll_none, 1, {{2, {5, 4}, STRD}}},
    {"nll_loss none (4,3)T", nll_none, 1, {{2, {4, 3}, TRAN}}},
    {"nll_loss mean (4,), 0-d label", nll_mean, 1, {{1, {4}, CONT}}},
    {"nll_loss none (4,) strided, 0-d label", nll_none, 1, {{1, {4}, STRD}}},

    /* cross_entropy: log_softmax then nll, two nodes */
    {"cross_entropy mean (4,3)", ce_mean, 1, {{2, {4, 3}, CONT}}},
    {"cross_entropy sum (4,3)T", ce_sum, 1, {{2, {4, 3}, TRAN}}},
    {"cross_entropy none (5,4) strided", ce_none, 1, {{2, {5, 4}, STRD}}},
    {"cross_entropy none (3,4)T", ce_none, 1, {{2, {3, 4}, TRAN}}},
    {"cross_entropy mean (8,3) logits in [-3, 3)", ce_mean, 1,
     {{2, {8, 3}, CONT, -3.0, 3.0}}},
    {"cross_entropy sum (5,) strided, 0-d label", ce_sum, 1,
     {{1, {5}, STRD}}},
    {"cross_entropy none (5,), 0-d label", ce_none, 1, {{1, {5}, CONT}}},
};
const size_t tg_grad_cases_loss_count =
    sizeof tg_grad_cases_loss / sizeof *tg_grad_cases_loss;
