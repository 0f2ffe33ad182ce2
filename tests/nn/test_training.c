/*
 * tests/nn/test_training.c - end-to-end behaviour of training: the toy MLP
 * of examples/train_mlp.c (Linear -> norm -> ReLU blocks, tg_mlp_new) on
 * seeded 3-arm spirals, SGD with momentum, mini-batches, cross-entropy.
 *
 * What it asserts:
 *  - with BatchNorm, and with LayerNorm, a fixed number of steps reaches a
 *    high validation accuracy (measured in eval mode, so the BatchNorm
 *    model is judged with its running statistics);
 *  - without normalisation the same steps still reduce the loss by a large
 *    factor (the demo shows it is slower; here only that it learns);
 *  - training is deterministic: two runs from one seed give bit-identical
 *    losses at every step, and a different seed gives different ones (so
 *    the comparison can fail);
 *  - the demo's premise: after the same seed, the three variants start
 *    from the same Linear weights (the norm layers draw nothing).
 * It is not a timing test and not a reference comparison: the parts are
 * checked against NumPy and PyTorch in their own tests (test_layers,
 * test_optim, test_loss, test_data, test_norm_modules).
 *
 * The setting is the demo's own, so the test also guards what the demo
 * shows; see SETTING below for the numbers measured and the margins left.
 */
#include "../common.h"

#include <math.h>
#include <string.h>

/* ---------------------------------------------------------------- setting */

/*
 * SETTING: the demo's defaults (examples/train_mlp.c), seed 0: 3-arm
 * spirals of 500 points per class with noise 0.03, a fifth held out
 * (1200 training and 300 validation points); MLP 2 -> 64 -> 64 -> 3 with
 * Linear -> norm -> ReLU blocks; SGD, momentum 0.9, lr 0.1 annealed to 0
 * by a cosine over the run; batches of 64, reshuffled every epoch; 40
 * epochs = 760 steps.
 *
 * Measured (validation accuracy after the 760 steps, in eval mode):
 *
 *   seed        0       1       2       3       4
 *   no norm   77.7%   85.0%   85.0%   85.3%   86.7%
 *   BatchNorm 96.0%   95.7%   96.0%   95.7%   96.0%
 *   LayerNorm 97.0%   97.0%   95.7%   96.3%   97.0%
 *
 * About 97-98% is the ceiling of this data: the radius of the points is
 * uniform in [0, 1], so a few percent of them lie near the centre, where
 * the three arms meet closer than the noise; more steps (80 epochs) give
 * at most 98%. So the accuracy threshold, 94% (282 of 300 points), sits
 * 1.7 points below the lowest of the ten normalised runs above: a change
 * of rounding (another compiler, other kernels) moves a run along another
 * trajectory like another seed does, and should not fail the test. It is
 * still far above what the same net without normalisation reaches in the
 * same steps (78-87%): a norm layer that does not normalise fails it,
 * and so would a backward wrong enough to slow training to that level.
 *
 * The plain net's loss on the whole training set (eval mode) goes from
 * 1.112 (near ln 3 = 1.0986, as it must be for small initial logits) to
 * 0.494 at seed 0, and from 1.102-1.117 to 0.279-0.440 at seeds 1-4: a
 * 55-75% drop. The test asks for 40% (final < 0.6 x initial); a net that
 * does not learn stays near ln 3.
 *
 * Runtime: 3 x 760 steps plus 8 runs of 57; measured 2-3.5 s normally
 * and 12-15 s with AddressSanitizer and UBSan (two cores, other tests
 * running alongside).
 */
#define CLASSES 3
#define POINTS_PER_CLASS 500
#define NOISE 0.03
#define VAL_FRACTION 0.2
#define WIDTH 64
#define DEPTH 2
#define BATCH 64
#define EPOCHS 40
#define LR 0.1
#define MOMENTUM 0.9
#define MAX_STEPS 1000

#define ACC_THRESHOLD 0.94
#define LOSS_RATIO 0.6

/* What one training run measured. */
typedef struct run {
    double loss[MAX_STEPS]; // the mini-batch loss of each step
    int steps;
    double initial_loss; // on the whole training set, before training
    double final_loss;   // on the whole training set, after (eval mode)
    double val_acc;      // after training, eval mode
} run;

/* Loss and accuracy of m on d in eval mode, without a tape. */
static void evaluate(tg_module *m, const tg_dataset *d, double *loss,
                     double *acc)
{
    tg_module_train(m, false);
    tg_no_grad_begin();
    tg_tensor *logits = tg_module_forward(m, d->x);
    tg_tensor *l = tg_cross_entropy(logits, d->y, TG_REDUCTION_MEAN);
    *loss = l ? tg_item(l) : NAN;
    *acc = logits ? tg_accuracy(logits, d->y) : NAN;
    tg_no_grad_end();
    tg_module_train(m, true);
    tg_release(l);
    tg_release(logits);
    cr_assert(isfinite(*loss) && isfinite(*acc), "%s", tg_last_error());
}

/* Trains a fresh model with the given normalisation for `epochs` epochs,
 * as the demo does: the data and split from a generator seeded with seed,
 * the initial weights from tg_manual_seed(seed), the batch order from a
 * generator seeded with seed + 1. */
static void train(tg_norm_kind norm, uint64_t seed, int epochs, run *r)
{
    memset(r, 0, sizeof *r);
    tg_dataset all = {0}, tr = {0}, val = {0};
    tg_generator *g = tg_generator_new(seed);
    tg_generator *gb = tg_generator_new(seed + 1);
    cr_assert(g && gb);
    cr_assert(tg_make_spirals(POINTS_PER_CLASS, CLASSES, NOISE, g, &all) == 0,
              "%s", tg_last_error());
    cr_assert(tg_dataset_split(&all, VAL_FRACTION, g, &tr, &val) == 0, "%s",
              tg_last_error());

    int64_t hidden[DEPTH];
    for (int i = 0; i < DEPTH; i++)
        hidden[i] = WIDTH;
    tg_manual_seed(seed);
    tg_module *m = tg_mlp_new(2, hidden, DEPTH, CLASSES, norm, TG_ACT_RELU);
    cr_assert(m != NULL, "%s", tg_last_error());
    tg_sgd_config cfg = {.lr = LR};
    cfg.momentum = MOMENTUM;
    tg_optimizer *opt = tg_sgd_new(m, &cfg);
    cr_assert(opt != NULL, "%s", tg_last_error());
    /* 1200 training points in batches of 64: the last of each epoch has
     * 48, never a single sample (which BatchNorm cannot train on) */
    tg_batches *it = tg_batches_new(&tr, BATCH, true, false, gb);
    cr_assert(it != NULL, "%s", tg_last_error());
    int64_t total = tg_batches_per_epoch(it) * epochs;
    cr_assert(total <= MAX_STEPS);

    double acc;
    evaluate(m, &tr, &r->initial_loss, &acc);
    for (int e = 0; e < epochs; e++) {
        tg_tensor *x, *y;
        while (tg_batches_next(it, &x, &y)) {
            tg_optimizer_set_lr(opt, tg_lr_cosine(LR, r->steps, total, 0.0));
            tg_tensor *logits = tg_module_forward(m, x);
            tg_tensor *loss = tg_cross_entropy(logits, y, TG_REDUCTION_MEAN);
            cr_assert(loss != NULL, "%s", tg_last_error());
            tg_optimizer_zero_grad(opt);
            cr_assert(tg_backward(loss) == 0, "%s", tg_last_error());
            cr_assert(tg_optimizer_step(opt) == 0, "%s", tg_last_error());
            r->loss[r->steps++] = tg_item(loss);
            tg_release(loss);
            tg_release(logits);
            tg_release(y);
            tg_release(x);
        }
    }
    cr_assert(r->steps == total);
    evaluate(m, &tr, &r->final_loss, &acc);
    double val_loss;
    evaluate(m, &val, &val_loss, &r->val_acc);

    tg_batches_free(it);
    tg_optimizer_free(opt);
    tg_module_free(m);
    tg_dataset_free(&val);
    tg_dataset_free(&tr);
    tg_dataset_free(&all);
    tg_generator_free(gb);
    tg_generator_free(g);
}

/* ------------------------------------------------------------------ tests */

/* Each run is large (8 KB of losses): static, not on the stack. */
static run a, b;

TG_TEST(training, batchnorm_reaches_high_val_accuracy)
{
    train(TG_NORM_BATCH, 0, EPOCHS, &a);
    cr_assert(a.val_acc >= ACC_THRESHOLD,
              "BatchNorm: val accuracy %.4f < %.2f", a.val_acc,
              ACC_THRESHOLD);
}

TG_TEST(training, layernorm_reaches_high_val_accuracy)
{
    train(TG_NORM_LAYER, 0, EPOCHS, &a);
    cr_assert(a.val_acc >= ACC_THRESHOLD,
              "LayerNorm: val accuracy %.4f < %.2f", a.val_acc,
              ACC_THRESHOLD);
}

TG_TEST(training, plain_mlp_reduces_the_loss)
{
    train(TG_NORM_NONE, 0, EPOCHS, &a);
    /* 3 balanced classes and small initial logits: the loss starts near
     * ln 3 = 1.0986 (measured 1.102 to 1.130 for seeds 0-4 and 7) */
    cr_assert(fabs(a.initial_loss - log(3.0)) < 0.05,
              "initial loss %.4f is not near ln 3", a.initial_loss);
    cr_assert(a.final_loss < LOSS_RATIO * a.initial_loss,
              "plain MLP: loss %.4f -> %.4f, less than a %.0f%% drop",
              a.initial_loss, a.final_loss, 100.0 * (1.0 - LOSS_RATIO));
}

/* Three epochs (57 steps): two reshuffles of the batches, BatchNorm's
 * running statistics, the momentum buffers and the schedule all take
 * part. */
TG_TEST(training, same_seed_gives_identical_losses)
{
    for (int norm = TG_NORM_NONE; norm <= TG_NORM_LAYER; norm++) {
        train((tg_norm_kind)norm, 7, 3, &a);
        train((tg_norm_kind)norm, 7, 3, &b);
        cr_assert(a.steps == 57 && b.steps == 57);
        /* bit for bit: no tolerance */
        cr_assert(memcmp(a.loss, b.loss, sizeof a.loss) == 0,
                  "norm %d: two runs from seed 7 differ", norm);
        cr_assert(a.val_acc == b.val_acc && a.final_loss == b.final_loss);
    }
}

/* The comparison above can fail: another seed (other data, weights and
 * batches) changes the losses. */
TG_TEST(training, different_seed_gives_different_losses)
{
    train(TG_NORM_BATCH, 7, 3, &a);
    train(TG_NORM_BATCH, 8, 3, &b);
    cr_assert(memcmp(a.loss, b.loss, sizeof a.loss) != 0);
    int same = 0;
    for (int i = 0; i < a.steps; i++)
        same += a.loss[i] == b.loss[i];
    cr_assert(same == 0, "%d of %d losses equal across seeds", same,
              a.steps);
}

/* The Linear layers' parameters of an MLP, in order, into v (at most max
 * values); returns how many. */
static int64_t linear_values(const tg_module *m, double *v, int64_t max)
{
    int64_t n = 0;
    for (int i = 0; i < tg_module_num_children(m); i++) {
        tg_module *c = tg_module_child_at(m, i);
        cr_assert(c != NULL);
        if (strcmp(tg_module_get_type(c)->name, "Linear") != 0)
            continue;
        const char *names[2] = {"weight", "bias"};
        for (int k = 0; k < 2; k++) {
            tg_tensor *p = tg_module_parameter(c, names[k]);
            cr_assert(p != NULL && n + p->numel <= max);
            cr_assert(tg_to_f64_array(p, v + n) == 0);
            n += p->numel;
        }
    }
    return n;
}

TG_TEST(training, variants_start_from_the_same_linear_weights)
{
    /* 2*64+64 + 64*64+64 + 64*3+3 = 4547 values per MLP */
    static double v[3][4547];
    int64_t n[3], hidden[DEPTH] = {WIDTH, WIDTH};
    for (int norm = TG_NORM_NONE; norm <= TG_NORM_LAYER; norm++) {
        tg_manual_seed(0);
        tg_module *m = tg_mlp_new(2, hidden, DEPTH, CLASSES,
                                  (tg_norm_kind)norm, TG_ACT_RELU);
        cr_assert(m != NULL, "%s", tg_last_error());
        /* 3 Linear layers, with a norm layer after the first two or not */
        cr_assert(tg_module_num_children(m) == (norm ? 7 : 5));
        n[norm] = linear_values(m, v[norm], 4547);
        tg_module_free(m);
    }
    cr_assert(n[0] == 4547 && n[1] == 4547 && n[2] == 4547);
    cr_assert(memcmp(v[0], v[1], sizeof v[0]) == 0);
    cr_assert(memcmp(v[0], v[2], sizeof v[0]) == 0);
    /* and a different seed gives different weights */
    tg_manual_seed(1);
    tg_module *m = tg_mlp_new(2, hidden, DEPTH, CLASSES, TG_NORM_NONE,
                              TG_ACT_RELU);
    cr_assert(m != NULL);
    cr_assert(linear_values(m, v[1], 4547) == 4547);
    tg_module_free(m);
    cr_assert(memcmp(v[0], v[1], sizeof v[0]) != 0);
}
