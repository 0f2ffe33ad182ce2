/*
 * examples/tutorial/08_diagnostics.c - the program of tutorial chapter 8
 * (docs/tutorial/08-reading-the-diagnostic-plots.md): the numbers behind
 * makemore part 3's diagnostic plots, small enough to print, for a deep
 * tanh MLP (5 hidden blocks Linear -> [BatchNorm] -> Tanh of 100 units,
 * then a Linear to 3 classes) on a batch of spiral points.
 *
 *   1. activations at initialisation, for four weight scales ("gains"):
 *      each tanh layer's std and saturation (the share of |t| > 0.97), and
 *      the deepest layer's histogram drawn with characters;
 *   2. the gradients dL/dt reaching each tanh layer, for the same gains;
 *   3. the update:data ratio log10(std(lr * dL/dW) / std(W)) of each
 *      weight over a few SGD steps, for three learning rates.
 *
 * The weights start as the demo examples/deep_mlp_diagnostics.c starts
 * them: tg_linear_new's U(-k, k), k = 1 / sqrt(fan_in), rescaled to the
 * std gain / sqrt(fan_in) (the output layer: 0.1 / sqrt(fan_in)), biases
 * 0. That demo runs the full study with plots; this program prints the
 * essentials in well under a second. Std is the unbiased one, as
 * torch.std. Exit status 0 when every tensor is released.
 */
#include "tapegrad.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEPTH 5
#define WIDTH 100
#define SATURATED 0.97 // |tanh| beyond this passes back < 6% of a gradient

/* ----------------------------------------------------------- the model */

/* In place, without recording: t = t * s. */
static void scale_(tg_tensor *t, double s)
{
    tg_no_grad_begin();
    tg_tensor *scaled = tg_mul_scalar(t, s);
    tg_copy_(t, scaled);
    tg_release(scaled);
    tg_no_grad_end();
}

/* A Linear whose weight has std gain / sqrt(fan_in) and whose bias (if
 * any) is 0. tg_linear_new draws U(-k, k), k = 1 / sqrt(fan_in), whose std
 * is k / sqrt(3): times gain * sqrt(3) gives gain / sqrt(fan_in). */
static tg_module *linear(int64_t in, int64_t out, bool bias, double gain)
{
    tg_module *l = tg_linear_new(in, out, bias);
    scale_(tg_module_parameter(l, "weight"), gain * sqrt(3.0));
    if (bias) {
        tg_no_grad_begin();
        tg_fill_(tg_module_parameter(l, "bias"), 0.0);
        tg_no_grad_end();
    }
    return l;
}

/* DEPTH x (Linear -> [BatchNorm1d] -> Tanh) -> Linear, after
 * tg_manual_seed(0): every model starts from the same draws. A Linear in
 * front of a BatchNorm has no bias (the BatchNorm subtracts it anyway). */
static tg_module *deep_mlp(double gain, bool batch_norm)
{
    tg_manual_seed(0);
    tg_module *seq = tg_sequential_new(NULL, 0);
    for (int l = 0; l < DEPTH; l++) {
        tg_sequential_append(seq, linear(l == 0 ? 2 : WIDTH, WIDTH,
                                         !batch_norm, gain));
        if (batch_norm)
            tg_sequential_append(seq, tg_batch_norm1d_new(WIDTH, NULL));
        tg_sequential_append(seq, tg_tanh_new());
    }
    tg_sequential_append(seq, linear(WIDTH, 3, true, 0.1));
    return seq;
}

/* The forward pass layer by layer, keeping each Tanh output in acts[]
 * (new references) with its gradient retained, as makemore's
 * t.retain_grad(). Returns the logits (new reference). */
static tg_tensor *forward(tg_module *seq, const tg_tensor *x,
                          tg_tensor **acts)
{
    tg_tensor *h = NULL; // the output of child i
    int l = 0;
    for (int i = 0; i < tg_module_num_children(seq); i++) {
        tg_module *child = tg_module_child_at(seq, i);
        tg_tensor *next = tg_module_forward(child, i == 0 ? x : h);
        tg_release(h);
        h = next;
        if (strcmp(tg_module_get_type(child)->name, "Tanh") == 0) {
            tg_retain_grad(h);
            acts[l++] = tg_retain(h);
        }
    }
    return h;
}

/* ------------------------------------------------------------ summaries */

static double std_of(const tg_tensor *t)
{
    tg_tensor *s = tg_std(t, NULL, 0, 1, false);
    double v = tg_item(s);
    tg_release(s);
    return v;
}

/* The share of |t| > SATURATED. */
static double saturation(const tg_tensor *t)
{
    tg_tensor *a = tg_abs(t);
    tg_tensor *sat = tg_gt_scalar(a, SATURATED); // int64 0 or 1
    tg_tensor *satf = tg_to_dtype(sat, TG_FLOAT64);
    tg_tensor *share = tg_mean(satf, NULL, 0, false);
    double v = tg_item(share);
    tg_release(share);
    tg_release(satf);
    tg_release(sat);
    tg_release(a);
    return v;
}

/* The histogram of t over [-1, 1] in 40 bins, drawn as one line of
 * characters from ' ' (empty) to '@' (the fullest bin). */
static void sparkline(const tg_tensor *t)
{
    enum { BINS = 40 };
    static const char levels[] = " .:-=+*#%@";
    int64_t count[BINS] = {0}, most = 1;
    double *v = malloc((size_t)t->numel * sizeof *v);
    if (!v || tg_to_f64_array(t, v) != 0) {
        free(v);
        return;
    }
    for (int64_t i = 0; i < t->numel; i++) {
        int b = (int)floor((v[i] + 1.0) / 2.0 * BINS); // bin of width 0.05
        b = b < 0 ? 0 : b >= BINS ? BINS - 1 : b;      // t = 1 in the last
        count[b]++;
    }
    free(v);
    for (int b = 0; b < BINS; b++)
        most = count[b] > most ? count[b] : most;
    printf("-1 |");
    for (int b = 0; b < BINS; b++) // a non-empty bin shows at least '.'
        putchar(levels[(count[b] * 9 + most - 1) / most]);
    printf("| 1\n");
}

/* ------------------------------------------------- 1 and 2: initialisation */

typedef struct setting {
    const char *label;
    double gain;
    bool batch_norm;
} setting;

static const setting settings[] = {
    {"gain 0.5", 0.5, false},
    {"gain 1", 1.0, false},
    {"gain 5/3", 5.0 / 3.0, false},
    {"gain 3", 3.0, false},
    {"gain 3, BatchNorm", 3.0, true},
};
#define NSETTINGS ((int)(sizeof settings / sizeof *settings))

static void at_initialisation(const tg_dataset *batch)
{
    double act_std[NSETTINGS][DEPTH], sat[NSETTINGS][DEPTH];
    double grad_std[NSETTINGS][DEPTH];
    tg_tensor *deepest[NSETTINGS];
    for (int s = 0; s < NSETTINGS; s++) {
        tg_module *m = deep_mlp(settings[s].gain, settings[s].batch_norm);
        tg_tensor *acts[DEPTH] = {0};
        tg_tensor *logits = forward(m, batch->x, acts);
        tg_tensor *loss = tg_cross_entropy(logits, batch->y,
                                           TG_REDUCTION_MEAN);
        tg_backward(loss);
        for (int l = 0; l < DEPTH; l++) {
            act_std[s][l] = std_of(acts[l]);
            sat[s][l] = saturation(acts[l]);
            grad_std[s][l] = std_of(acts[l]->grad);
        }
        deepest[s] = tg_detach(acts[DEPTH - 1]);
        for (int l = 0; l < DEPTH; l++)
            tg_release(acts[l]);
        tg_release(loss);
        tg_release(logits);
        tg_module_free(m);
    }

    printf("== 1. Activations at initialisation ==\n");
    printf("tanh output per layer: std (saturated %%), on %lld spiral "
           "points\n", (long long)batch->x->shape[0]);
    printf("%-18s", "");
    for (int l = 0; l < DEPTH; l++)
        printf("      layer %d", l + 1); // as wide as a column below
    printf("\n");
    for (int s = 0; s < NSETTINGS; s++) {
        printf("%-18s", settings[s].label);
        for (int l = 0; l < DEPTH; l++)
            printf(" %.2f (%4.1f%%)", act_std[s][l], 100 * sat[s][l]);
        printf("\n");
    }
    printf("histogram of layer %d's outputs:\n", DEPTH);
    for (int s = 0; s < NSETTINGS; s++) {
        printf("%-18s", settings[s].label);
        sparkline(deepest[s]);
        tg_release(deepest[s]);
    }

    printf("\n== 2. Gradients at initialisation ==\n");
    printf("std of dL/dt per tanh layer, and the first layer's over the "
           "deepest's\n");
    printf("%-18s", "");
    for (int l = 0; l < DEPTH; l++)
        printf("  layer %d", l + 1);
    printf("  first/deepest\n");
    for (int s = 0; s < NSETTINGS; s++) {
        printf("%-18s", settings[s].label);
        for (int l = 0; l < DEPTH; l++)
            printf("  %.1e", grad_std[s][l]);
        printf("%15.2f\n", grad_std[s][0] / grad_std[s][DEPTH - 1]);
    }
}

/* ------------------------------------------------- 3. update to data */

/* log10(std(lr * dL/dW) / std(W)) of each weight, averaged over steps
 * 11 to STEPS of plain SGD (the first ten are left out: the ratio moves
 * most at the start). */
#define STEPS 30
static void update_ratio(const tg_dataset *train, double lr,
                         double *ratio)
{
    tg_module *m = deep_mlp(5.0 / 3.0, false);
    tg_sgd_config c = {.lr = lr}; // no momentum, as makemore
    tg_optimizer *opt = tg_sgd_new(m, &c);
    tg_generator *g = tg_generator_new(1); // the same batches for every lr
    tg_batches *batches = tg_batches_new(train, 32, true, true, g);
    tg_tensor *W[DEPTH + 1];
    for (int i = 0, k = 0; i < tg_module_num_children(m); i++) {
        tg_module *child = tg_module_child_at(m, i);
        if (strcmp(tg_module_get_type(child)->name, "Linear") == 0)
            W[k++] = tg_module_parameter(child, "weight"); // borrowed
    }
    for (int i = 0; i <= DEPTH; i++)
        ratio[i] = 0;
    for (int step = 1; step <= STEPS; step++) {
        tg_tensor *x, *y;
        if (!tg_batches_next(batches, &x, &y))
            tg_batches_next(batches, &x, &y); // the next epoch
        tg_tensor *logits = tg_module_forward(m, x);
        tg_tensor *loss = tg_cross_entropy(logits, y, TG_REDUCTION_MEAN);
        tg_optimizer_zero_grad(opt);
        tg_backward(loss);
        tg_optimizer_step(opt);
        if (step > 10)
            for (int i = 0; i <= DEPTH; i++)
                ratio[i] += log10(lr * std_of(W[i]->grad) / std_of(W[i])) /
                            (STEPS - 10);
        tg_release(loss);
        tg_release(logits);
        tg_release(y);
        tg_release(x);
    }
    tg_batches_free(batches);
    tg_generator_free(g);
    tg_optimizer_free(opt);
    tg_module_free(m);
}

static void update_to_data(const tg_dataset *train)
{
    printf("\n== 3. Update to data ==\n");
    printf("log10(std(lr * dL/dW) / std(W)) per weight, gain 5/3, mean "
           "over SGD steps 11-%d\n", STEPS);
    printf("%-9s", "");
    for (int i = 1; i <= DEPTH + 1; i++)
        printf("     W%d", i);
    printf(" (output)\n");
    const double lrs[] = {0.01, 0.1, 1.0};
    for (int k = 0; k < 3; k++) {
        double ratio[DEPTH + 1];
        update_ratio(train, lrs[k], ratio);
        printf("lr %-6g ", lrs[k]);
        for (int i = 0; i <= DEPTH; i++)
            printf(" %6.2f", ratio[i]);
        printf("\n");
    }
}

int main(void)
{
    /* 3-arm spirals as in the demo, with 100 points per class, noise 0.1 */
    tg_generator *g = tg_generator_new(0);
    tg_dataset data = {0};
    tg_make_spirals(100, 3, 0.1, g, &data);
    at_initialisation(&data);
    update_to_data(&data);
    tg_dataset_free(&data);
    tg_generator_free(g);
    printf("\nlive tensors: %lld\n", (long long)tg_live_tensors());
    return tg_live_tensors() == 0 && tg_tape_size() == 0 ? 0 : 1;
}
