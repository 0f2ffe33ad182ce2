/*
 * examples/train_mlp.c - the main demo: one small MLP trained three times
 * on 3-arm spirals, without normalisation, with BatchNorm and with
 * LayerNorm, to see in numbers and pictures what normalisation does.
 *
 * The three runs differ in the normalisation layer only: the same data and
 * train/validation split, the same initial Linear weights (the generator is
 * re-seeded before each model is built, and the norm layers draw no random
 * numbers, so every Linear gets the same values: checked below), the same
 * mini-batches in the same order, the same optimiser and learning-rate
 * schedule. Each hidden block is Linear -> norm -> ReLU (tg_mlp_new).
 *
 * What it writes into --out (default out/train_mlp):
 *   log.csv           one row per epoch per variant:
 *                     variant,epoch,step,train_loss,train_acc,val_loss,val_acc
 *   points.csv        the data: x,y,label,split (train or val)
 *   regions_<v>.csv   the class each trained model predicts on a 150 x 150
 *                     grid over the data (x,y,class; a blank line after each
 *                     row of the grid, as gnuplot's `with image` reads it)
 *   models/<v>/       the trained parameters and buffers (tg_module_save;
 *                     np.load reads each file)
 *   loss.png, accuracy.png, decision_regions.png
 *                     drawn by gnuplot with the scripts in scripts/plots/
 * where <v> is none, batchnorm or layernorm.
 *
 * How the numbers are measured: train_loss and train_acc are averaged over
 * the epoch's mini-batches as they were trained on (training mode, so the
 * BatchNorm variant normalises with each batch's statistics); val_loss and
 * val_acc are computed after the epoch on the validation set in eval mode
 * (BatchNorm then uses its running statistics) without recording a tape.
 *
 * The default settings, and what they show: see DEFAULTS below.
 *
 * It is a demo, not a test (tests/nn/test_training.c is the test), but it
 * checks what it claims: the same initial Linear weights in every variant,
 * and every tensor released at the end (exit 1 otherwise). What it shares
 * with deep_mlp_diagnostics.c (reading the options, making the output
 * folder, running gnuplot, the check at exit) is in demo_util.c.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L // clock_gettime
#endif

#include "tapegrad.h"

#include "demo_util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ------------------------------------------------------------- settings */

/*
 * DEFAULTS: how they were chosen, and what they show.
 *
 * The question is what normalisation changes for plain SGD with momentum,
 * so the settings are ordinary ones (2 x 64 hidden units, batch 64,
 * momentum 0.9, 40 epochs of 19 steps, lr annealed by a cosine) and the
 * learning rate, 0.1, is one at which the un-normalised net does learn,
 * but slowly. The spirals' noise, 0.03, keeps the arms apart except near
 * the centre, where they meet: 97-98% is about the best any variant
 * reaches, and the points it misses are there. The settings were chosen
 * from a grid (batch 64 or 128, lr 0.05 to 0.2, depth 2 or 3) run on
 * seeds 0, 1 and 2 together, then checked on seeds 3 and 4; seed 0 stayed
 * the default. On every seed both normalised nets pass 95% in 40 epochs
 * and the plain one does not: it is a matter of speed, not of what the
 * plain net can learn, and of these settings (--epochs 80, --optimizer
 * adam, --lr 0.3 and --depth 3 change the picture). The numbers of a run,
 * and of those other settings, are in docs/training.md, section 7, which
 * the test suite checks against the program's output.
 *
 * Two things to notice in the output. BatchNorm's training loss stays
 * higher than its validation loss: training mode normalises each batch of
 * 64 with that batch's own mean and variance, estimates that move from
 * batch to batch by about 1/8 of a feature's spread, while the spiral arms
 * are only about a tenth of the data's width apart; evaluation uses the
 * running averages instead. And the same net trained in PyTorch 1.13 from
 * the same points, initial weights, batch order and schedule gives the
 * same losses to about 7 digits over the first epochs; over 40 epochs the
 * float32 rounding differences grow, and the final validation accuracies
 * differ by a point or so.
 */
#define DEFAULT_WIDTH 64
#define DEFAULT_DEPTH 2
#define DEFAULT_BATCH 64
#define DEFAULT_EPOCHS 40
#define DEFAULT_SEED 0
#define DEFAULT_LR_SGD 0.1
#define DEFAULT_LR_ADAM 0.01
#define SGD_MOMENTUM 0.9

/* The data: 3 spiral arms of POINTS_PER_CLASS points, jittered by NOISE;
 * VAL_FRACTION of them held out for validation. */
#define CLASSES 3
#define POINTS_PER_CLASS 500
#define NOISE 0.03
#define VAL_FRACTION 0.2

#define GRID 150 // decision-region grid, GRID x GRID points

/* Limits of the options (the data has 1200 training points). */
#define MAX_DEPTH 16
#define MAX_WIDTH 4096
#define MAX_BATCH 1200
#define MAX_EPOCHS 10000
#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_(x)

typedef struct options {
    int64_t width;      // units per hidden layer
    int depth;          // hidden layers
    int64_t batch_size;
    double lr;          // base learning rate (cosine-annealed to 0)
    int epochs;
    uint64_t seed;
    bool adam;          // else SGD with momentum
    const char *out;    // output folder
    bool plots;
} options;

typedef struct variant {
    const char *name;  // in file names and in the CSV
    const char *label; // in the output and the plots
    tg_norm_kind norm;
} variant;

static const variant variants[] = {
    {"none", "no norm", TG_NORM_NONE},
    {"batchnorm", "BatchNorm", TG_NORM_BATCH},
    {"layernorm", "LayerNorm", TG_NORM_LAYER},
};
#define NVARIANTS ((int)(sizeof variants / sizeof *variants))

/* What the summary table shows for one variant. */
typedef struct summary {
    double final_val_acc, best_val_acc, final_loss, seconds;
    int best_epoch;         // first epoch with the best validation accuracy
    int epoch_90, epoch_95; // first epoch with val_acc >= 90% / 95%; 0: never
    bool diverged;          // the training loss became NaN or infinite
} summary;

/* ------------------------------------------------------------- options */

static void usage(FILE *f, const char *prog)
{
    fprintf(f,
            "usage: %s [options]\n"
            "Trains one MLP on 3-arm spirals three times (no normalisation, "
            "BatchNorm,\nLayerNorm) and writes logs, models and plots.\n\n"
            "  --width N          units per hidden layer (default %d)\n"
            "  --depth N          hidden layers (default %d)\n"
            "  --batch-size N     mini-batch size, at least 2 (default %d)\n"
            "  --lr X             base learning rate, annealed to 0 by a "
            "cosine\n"
            "                     (default %g for sgd, %g for adam)\n"
            "  --epochs N         passes over the training set (default %d)\n"
            "  --seed N           seed of the data, weights and batches "
            "(default %d)\n"
            "  --optimizer NAME   sgd (momentum %g) or adam (default sgd)\n"
            "  --out DIR          output folder (default out/train_mlp)\n"
            "  --no-plots         write the CSV files only, do not run "
            "gnuplot\n"
            "  --help             this text\n\n"
            "The plots are drawn by gnuplot with the scripts in %s\n"
            "(the environment variable TG_PLOTS_DIR names another folder).\n",
            prog, DEFAULT_WIDTH, DEFAULT_DEPTH, DEFAULT_BATCH, DEFAULT_LR_SGD,
            DEFAULT_LR_ADAM, DEFAULT_EPOCHS, DEFAULT_SEED, SGD_MOMENTUM,
            TG_PLOTS_DIR);
}

/* Parses the command line into o. Returns 0, 1 for --help, or -1 after
 * printing what is wrong. */
static int parse_options(int argc, char **argv, options *o)
{
    bool lr_set = false;
    *o = (options){DEFAULT_WIDTH, DEFAULT_DEPTH, DEFAULT_BATCH,
                   DEFAULT_LR_SGD, DEFAULT_EPOCHS, DEFAULT_SEED,
                   false, "out/train_mlp", true};
    static const char *const names[] = {"--width", "--depth", "--batch-size",
                                        "--lr", "--epochs", "--seed",
                                        "--optimizer", "--out", NULL};
    const char *value = NULL;
    int i = 0, k;
    while ((k = demo_next_option(argc, argv, &i, names, &value,
                                 &o->plots)) >= 0) {
        const char *name = names[k];
        long long v = 0;
        bool ok = true;
        const char *expected = NULL;
        if (strcmp(name, "--width") == 0) {
            ok = demo_parse_int(value, 1, MAX_WIDTH, &v);
            expected = "an integer from 1 to " STRINGIFY(MAX_WIDTH);
            o->width = v;
        } else if (strcmp(name, "--depth") == 0) {
            ok = demo_parse_int(value, 1, MAX_DEPTH, &v);
            expected = "an integer from 1 to " STRINGIFY(MAX_DEPTH);
            o->depth = (int)v;
        } else if (strcmp(name, "--batch-size") == 0) {
            /* BatchNorm cannot train on a batch of one sample */
            ok = demo_parse_int(value, 2, MAX_BATCH, &v);
            expected = "an integer from 2 to " STRINGIFY(MAX_BATCH);
            o->batch_size = v;
        } else if (strcmp(name, "--epochs") == 0) {
            ok = demo_parse_int(value, 1, MAX_EPOCHS, &v);
            expected = "an integer from 1 to " STRINGIFY(MAX_EPOCHS);
            o->epochs = (int)v;
        } else if (strcmp(name, "--seed") == 0) {
            ok = demo_parse_int(value, 0, 0x7fffffffffffffffLL, &v);
            expected = "an integer from 0 to 2^63 - 1";
            o->seed = (uint64_t)v;
        } else if (strcmp(name, "--lr") == 0) {
            ok = demo_parse_positive(value, &o->lr);
            expected = "a number > 0, such as 0.1 or 3e-4";
            lr_set = true;
        } else if (strcmp(name, "--optimizer") == 0) {
            ok = strcmp(value, "sgd") == 0 || strcmp(value, "adam") == 0;
            expected = "sgd or adam";
            o->adam = strcmp(value, "adam") == 0;
        } else { // --out
            ok = *value != '\0';
            expected = "a folder name";
            o->out = value;
        }
        if (!ok) {
            fprintf(stderr, "bad value for %s: '%s' (expected %s)\n", name,
                    value, expected);
            return -1;
        }
    }
    if (k != DEMO_OPT_END)
        return k == DEMO_OPT_HELP ? 1 : -1;
    if (!lr_set)
        o->lr = o->adam ? DEFAULT_LR_ADAM : DEFAULT_LR_SGD;
    return 0;
}

/* ------------------------------------------------------------- helpers */

/* x, with the sign of a NaN dropped (printf shows it as "-nan"). */
static double unsigned_nan(double x)
{
    return isnan(x) ? fabs(x) : x;
}

/* Decimal digits of n >= 0. */
static int digits(int n)
{
    int d = 1;
    while (n >= 10) {
        n /= 10;
        d++;
    }
    return d;
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---------------------------------------------------------------- model */

/* The model of one variant, built right after tg_manual_seed(seed) so that
 * every variant draws the same Linear weights. */
static tg_module *build_model(const options *o, tg_norm_kind norm)
{
    int64_t hidden[MAX_DEPTH];
    for (int i = 0; i < o->depth; i++)
        hidden[i] = o->width;
    tg_manual_seed(o->seed);
    return tg_mlp_new(2, hidden, o->depth, CLASSES, norm, TG_ACT_RELU);
}

/* The Linear layers' parameters of m, in order, as one array of doubles
 * (malloc'd; *n elements). NULL on error. */
static double *linear_values(const tg_module *m, int64_t *n)
{
    int nchildren = tg_module_num_children(m);
    int64_t total = 0;
    double *v = NULL;
    for (int pass = 0; pass < 2; pass++) {
        int64_t at = 0;
        for (int i = 0; i < nchildren; i++) {
            tg_module *c = tg_module_child_at(m, i);
            if (!c || strcmp(tg_module_get_type(c)->name, "Linear") != 0)
                continue;
            const char *names[2] = {"weight", "bias"};
            for (int k = 0; k < 2; k++) {
                tg_tensor *p = tg_module_parameter(c, names[k]);
                if (!p) {
                    free(v);
                    return NULL;
                }
                if (pass == 1 && tg_to_f64_array(p, v + at) != 0) {
                    free(v);
                    return NULL;
                }
                at += p->numel;
            }
        }
        if (pass == 0) {
            total = at;
            v = malloc((size_t)(total > 0 ? total : 1) * sizeof *v);
            if (!v)
                return NULL;
        }
    }
    *n = total;
    return v;
}

/* ------------------------------------------------------------- training */

/* Loss and accuracy of m on d in eval mode, without a tape. */
static int evaluate(tg_module *m, const tg_dataset *d, double *loss,
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
    int rc = l ? 0 : -1;
    tg_release(l);
    tg_release(logits);
    return rc;
}

/* Trains one variant from scratch and logs each epoch to log (and a line
 * to stdout). The trained model is returned in *out. Returns 0 or -1. */
static int train_variant(const options *o, const variant *v,
                         const tg_dataset *train, const tg_dataset *val,
                         FILE *log, summary *s, tg_module **out)
{
    *out = NULL;
    *s = (summary){0};
    s->best_val_acc = -1.0;
    tg_module *m = build_model(o, v->norm);
    if (!m)
        return -1;

    tg_optimizer *opt;
    if (o->adam) {
        tg_adam_config c = {.lr = o->lr};
        opt = tg_adam_new(m, &c);
    } else {
        tg_sgd_config c = {.lr = o->lr};
        c.momentum = SGD_MOMENTUM;
        opt = tg_sgd_new(m, &c);
    }
    /* The batch order has its own generator, seeded the same way for every
     * variant: the same batches in the same order. A last batch of a single
     * sample is dropped (BatchNorm cannot train on one sample); otherwise
     * every sample is used every epoch. */
    tg_generator *g = tg_generator_new(o->seed + 1);
    int64_t n = train->x->shape[0];
    bool drop_last = n % o->batch_size == 1;
    tg_batches *it = opt && g ? tg_batches_new(train, o->batch_size, true,
                                               drop_last, g)
                              : NULL;
    if (!it) {
        tg_generator_free(g);
        tg_optimizer_free(opt);
        tg_module_free(m);
        return -1;
    }

    int64_t per_epoch = tg_batches_per_epoch(it);
    int64_t total_steps = per_epoch * o->epochs, step = 0;
    double started = now_seconds();
    int rc = 0;
    for (int epoch = 1; epoch <= o->epochs && rc == 0; epoch++) {
        double loss_sum = 0.0, correct = 0.0, t0 = now_seconds();
        int64_t seen = 0;
        tg_tensor *x, *y;
        while (tg_batches_next(it, &x, &y)) {
            /* cosine annealing per step, from lr down to 0 at the end */
            tg_optimizer_set_lr(opt, tg_lr_cosine(o->lr, step, total_steps,
                                                  0.0));
            tg_tensor *logits = tg_module_forward(m, x);
            tg_tensor *loss = tg_cross_entropy(logits, y, TG_REDUCTION_MEAN);
            tg_optimizer_zero_grad(opt);
            if (!loss || tg_backward(loss) != 0 ||
                tg_optimizer_step(opt) != 0)
                rc = -1;
            else {
                int64_t b = x->shape[0];
                double acc = tg_accuracy(logits, y);
                loss_sum += tg_item(loss) * (double)b;
                correct += acc * (double)b;
                seen += b;
                step++;
            }
            tg_release(loss);
            tg_release(logits);
            tg_release(y);
            tg_release(x);
            if (rc != 0)
                break; // the error is printed; the batches go with `it`
        }
        if (rc != 0)
            break;
        double elapsed = now_seconds() - t0;
        double train_loss = loss_sum / (double)seen;
        double train_acc = correct / (double)seen;
        double val_loss, val_acc;
        if (evaluate(m, val, &val_loss, &val_acc) != 0) {
            rc = -1;
            break;
        }
        /* a diverged run writes nan (not the C library's "-nan") */
        fprintf(log, "%s,%d,%lld,%.9g,%.6f,%.9g,%.6f\n", v->name, epoch,
                (long long)step, unsigned_nan(train_loss), train_acc,
                unsigned_nan(val_loss), val_acc);
        printf("%-9s  epoch %*d/%d  train loss %.4f  acc %5.1f%%  "
               "val loss %.4f  acc %5.1f%%  %5.0f steps/s\n",
               v->label, digits(o->epochs), epoch, o->epochs, train_loss,
               100.0 * train_acc, val_loss, 100.0 * val_acc,
               (double)per_epoch / elapsed);

        if (!isfinite(train_loss))
            s->diverged = true;
        if (val_acc > s->best_val_acc) {
            s->best_val_acc = val_acc;
            s->best_epoch = epoch;
        }
        if (!s->epoch_90 && val_acc >= 0.90)
            s->epoch_90 = epoch;
        if (!s->epoch_95 && val_acc >= 0.95)
            s->epoch_95 = epoch;
        s->final_val_acc = val_acc;
        s->final_loss = train_loss;
    }
    s->seconds = now_seconds() - started;

    tg_batches_free(it);
    tg_generator_free(g);
    tg_optimizer_free(opt);
    if (rc != 0) {
        tg_module_free(m);
        return -1;
    }
    *out = m;
    return 0;
}

/* ---------------------------------------------------------------- output */

/* The data points: x,y,label,split. */
static int write_points(const char *dir, const tg_dataset *train,
                        const tg_dataset *val)
{
    FILE *f = demo_open_out(dir, "points.csv");
    if (!f)
        return -1;
    fprintf(f, "x,y,label,split\n");
    const tg_dataset *sets[2] = {train, val};
    const char *names[2] = {"train", "val"};
    int rc = 0;
    for (int s = 0; s < 2 && rc == 0; s++) {
        int64_t n = sets[s]->x->shape[0];
        double *x = malloc((size_t)(2 * n) * sizeof *x);
        double *y = malloc((size_t)n * sizeof *y);
        if (!x || !y || tg_to_f64_array(sets[s]->x, x) != 0 ||
            tg_to_f64_array(sets[s]->y, y) != 0)
            rc = -1;
        for (int64_t i = 0; rc == 0 && i < n; i++)
            fprintf(f, "%.9g,%.9g,%d,%s\n", x[2 * i], x[2 * i + 1],
                    (int)y[i], names[s]);
        free(y);
        free(x);
    }
    if (fclose(f) != 0)
        rc = -1;
    return rc;
}

/* The square grid of GRID x GRID points over the data (with a margin),
 * y outer, x inner: a new (GRID * GRID, 2) float32 tensor. */
static tg_tensor *make_grid(const tg_dataset *d)
{
    int64_t n = d->x->shape[0];
    double *x = malloc((size_t)(2 * n) * sizeof *x);
    if (!x || tg_to_f64_array(d->x, x) != 0) {
        free(x);
        return NULL;
    }
    double lo = INFINITY, hi = -INFINITY;
    for (int64_t i = 0; i < 2 * n; i++) {
        lo = fmin(lo, x[i]);
        hi = fmax(hi, x[i]);
    }
    free(x);
    double margin = 0.1 * (hi - lo);
    lo -= margin;
    hi += margin;
    float *g = malloc((size_t)GRID * GRID * 2 * sizeof *g);
    if (!g)
        return NULL;
    for (int r = 0; r < GRID; r++)
        for (int c = 0; c < GRID; c++) {
            /* pixel centres */
            g[2 * (r * GRID + c)] =
                (float)(lo + (hi - lo) * (c + 0.5) / GRID);
            g[2 * (r * GRID + c) + 1] =
                (float)(lo + (hi - lo) * (r + 0.5) / GRID);
        }
    tg_tensor *t = tg_from_array(g, TG_SHAPE(GRID * GRID, 2), TG_FLOAT32);
    free(g);
    return t;
}

/* The class m predicts at every grid point (eval mode), as
 * regions_<variant>.csv: x,y,class with a blank line after each grid row. */
static int write_regions(const char *dir, const variant *v, tg_module *m,
                         const tg_tensor *grid)
{
    tg_module_train(m, false);
    tg_no_grad_begin();
    tg_tensor *logits = tg_module_forward(m, grid);
    tg_tensor *cls = tg_argmax(logits, 1, false); // (GRID * GRID,) int64
    tg_no_grad_end();
    tg_module_train(m, true);

    int rc = -1;
    double *k = cls ? malloc((size_t)cls->numel * sizeof *k) : NULL;
    double *xy = k ? malloc((size_t)grid->numel * sizeof *xy) : NULL;
    char name[64];
    snprintf(name, sizeof name, "regions_%s.csv", v->name);
    if (xy && tg_to_f64_array(cls, k) == 0 &&
        tg_to_f64_array(grid, xy) == 0) {
        FILE *f = demo_open_out(dir, name);
        if (f) {
            fprintf(f, "x,y,class\n");
            for (int64_t i = 0; i < cls->numel; i++) {
                fprintf(f, "%.6g,%.6g,%d\n", xy[2 * i], xy[2 * i + 1],
                        (int)k[i]);
                if ((i + 1) % GRID == 0)
                    fputc('\n', f);
            }
            rc = fclose(f) == 0 ? 0 : -1;
        }
    }
    free(xy);
    free(k);
    tg_release(cls);
    tg_release(logits);
    return rc;
}

/* ----------------------------------------------------------------- plots */

/* The demo's own gnuplot variables: label_<v>, each variant's legend,
 * from sums (NVARIANTS summaries). */
static void gp_labels(FILE *gp, const void *sums)
{
    const summary *s = sums;
    for (int i = 0; i < NVARIANTS; i++) {
        char name[64], value[128];
        snprintf(name, sizeof name, "label_%s", variants[i].name);
        snprintf(value, sizeof value, "%s: val acc %.1f%%",
                 variants[i].label, 100.0 * s[i].final_val_acc);
        demo_gp_set(gp, name, value);
    }
}

/* ------------------------------------------------------------------ main */

/* The table at the end, e.g.
 *
 *               validation accuracy  first epoch at     train
 *   variant     final  best (epoch)    90%      95%      loss  time s  params
 *   no norm     77.7%  78.7% (35)        -        -    0.4942    0.52    4547
 */
static void print_summary(const options *o, const summary *sums,
                          const int64_t *params)
{
    printf("Summary after %d epochs:\n", o->epochs);
    printf("%-10s  %-19s  %-14s  %8s\n", "", "validation accuracy",
           "first epoch at", "train");
    printf("%-10s  %5s  %-12s  %5s  %7s  %8s  %6s  %6s\n", "variant",
           "final", "best (epoch)", "90%", "95%", "loss", "time s",
           "params");
    for (int i = 0; i < NVARIANTS; i++) {
        const summary *s = &sums[i];
        char e90[16] = "-", e95[16] = "-", best[32], loss[32];
        if (s->epoch_90)
            snprintf(e90, sizeof e90, "%d", s->epoch_90);
        if (s->epoch_95)
            snprintf(e95, sizeof e95, "%d", s->epoch_95);
        snprintf(best, sizeof best, "%.1f%% (%d)", 100.0 * s->best_val_acc,
                 s->best_epoch);
        double l = unsigned_nan(s->final_loss);
        snprintf(loss, sizeof loss, fabs(l) < 1e4 ? "%.4f" : "%.3g", l);
        printf("%-10s  %4.1f%%  %-12s  %5s  %7s  %8s  %6.2f  %6lld%s\n",
               variants[i].label, 100.0 * s->final_val_acc, best, e90, e95,
               loss, s->seconds, (long long)params[i],
               s->diverged ? "  (diverged)" : "");
    }
    printf("Validation accuracy is measured in eval mode (BatchNorm uses its "
           "running\nstatistics); the train loss is the mean over the last "
           "epoch's batches in\ntraining mode, where BatchNorm normalises "
           "with each batch's own statistics.\n");
}

int main(int argc, char **argv)
{
    options o;
    int prc = parse_options(argc, argv, &o);
    if (prc != 0)
        return demo_usage_exit(prc, usage, argv[0]);

    char models[4096];
    if (!demo_join(models, sizeof models, o.out, "models"))
        return 1;
    if (demo_make_dirs(models) != 0)
        return 1;

    int rc = 1;
    tg_dataset all = {0}, train = {0}, val = {0};
    tg_tensor *grid = NULL;
    FILE *log = NULL;
    double *init = NULL;
    int64_t ninit = 0;
    summary sums[NVARIANTS] = {{0}};
    int64_t params[NVARIANTS] = {0};

    /* The data has a generator of its own: the same points and split
     * whatever the models draw. */
    tg_generator *g = tg_generator_new(o.seed);
    if (!g || tg_make_spirals(POINTS_PER_CLASS, CLASSES, NOISE, g, &all) ||
        tg_dataset_split(&all, VAL_FRACTION, g, &train, &val))
        goto done;
    grid = make_grid(&all);
    if (!grid || write_points(o.out, &train, &val) != 0)
        goto done;
    log = demo_open_out(o.out, "log.csv");
    if (!log)
        goto done;
    fprintf(log, "variant,epoch,step,train_loss,train_acc,val_loss,"
                 "val_acc\n");

    printf("%d-arm spirals: %lld training and %lld validation points "
           "(seed %llu)\n",
           CLASSES, (long long)train.x->shape[0],
           (long long)val.x->shape[0], (unsigned long long)o.seed);
    printf("MLP 2");
    for (int i = 0; i < o.depth; i++)
        printf(" -> %lld", (long long)o.width);
    printf(" -> %d, each hidden layer Linear -> [norm] -> ReLU\n", CLASSES);
    if (o.adam)
        printf("Adam, lr %g", o.lr);
    else
        printf("SGD with momentum %g, lr %g", SGD_MOMENTUM, o.lr);
    printf(" annealed to 0 by a cosine; batch size %lld; %d epochs\n\n",
           (long long)o.batch_size, o.epochs);

    for (int i = 0; i < NVARIANTS; i++) {
        const variant *v = &variants[i];
        tg_module *m = build_model(&o, v->norm);
        if (!m)
            goto done;
        params[i] = tg_module_num_elements(m);
        /* the claim of the demo: every variant starts from the same Linear
         * weights */
        int64_t nv = 0;
        double *vals = linear_values(m, &nv);
        bool same = vals && (i == 0 || (nv == ninit &&
                             memcmp(vals, init, (size_t)nv * sizeof *vals) ==
                                 0));
        if (i == 0)
            init = vals, ninit = nv;
        else
            free(vals);
        tg_module_free(m);
        if (!same) {
            fprintf(stderr, "%s: the initial Linear weights differ from the "
                            "first variant's\n",
                    v->label);
            goto done;
        }

        if (train_variant(&o, v, &train, &val, log, &sums[i], &m) != 0)
            goto done;
        char dir[4096];
        int saved = demo_join(dir, sizeof dir, models, v->name)
                        ? tg_module_save(m, dir)
                        : -1;
        int wrote = write_regions(o.out, v, m, grid);
        tg_module_free(m);
        if (saved != 0 || wrote != 0)
            goto done;
        printf("\n");
    }
    if (fclose(log) != 0) {
        log = NULL;
        fprintf(stderr, "cannot write %s/log.csv\n", o.out);
        goto done;
    }
    log = NULL;

    print_summary(&o, sums, params);
    printf("\nlogs, decision regions and models in %s/\n", o.out);

    rc = 0;
    if (o.plots && demo_have_gnuplot()) {
        const char *plots_dir = demo_plots_dir();
        char subtitle[256];
        if (o.adam)
            snprintf(subtitle, sizeof subtitle, "Adam lr %g", o.lr);
        else
            snprintf(subtitle, sizeof subtitle, "SGD momentum %g, lr %g",
                     SGD_MOMENTUM, o.lr);
        size_t len = strlen(subtitle);
        snprintf(subtitle + len, sizeof subtitle - len,
                 " (cosine), %d x %lld hidden, batch %lld, seed %llu",
                 o.depth, (long long)o.width, (long long)o.batch_size,
                 (unsigned long long)o.seed);
        const char *const scripts[] = {"train_loss.gp", "train_accuracy.gp",
                                       "decision_regions.gp"};
        int drawn = 0;
        if (demo_scripts_readable(plots_dir, scripts, 3))
            for (int i = 0; i < 3; i++)
                drawn += demo_run_gnuplot(plots_dir, scripts[i], o.out,
                                          subtitle, gp_labels, sums) == 0;
        if (drawn == 3)
            printf("plots: %s/loss.png, %s/accuracy.png, "
                   "%s/decision_regions.png\n",
                   o.out, o.out, o.out);
        else
            rc = 1;
    }

done:
    if (log)
        fclose(log);
    free(init);
    tg_release(grid);
    tg_dataset_free(&val);
    tg_dataset_free(&train);
    tg_dataset_free(&all);
    tg_generator_free(g);
    return demo_exit_status(rc);
}
