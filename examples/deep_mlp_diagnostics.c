/*
 * examples/deep_mlp_diagnostics.c - the diagnostics of makemore part 3
 * (SEMANTICS.md section 7) on a deep tanh MLP: how activations, their
 * gradients, the weight gradients and the size of the updates look layer
 * by layer, without normalisation, with BatchNorm and with LayerNorm.
 *
 * The model: --depth hidden blocks Linear -> [norm] -> Tanh of --width
 * units, then a Linear to the classes. The Linear in front of BatchNorm
 * has no bias: BatchNorm subtracts each feature's batch mean, which
 * removes any per-feature bias, and its own bias takes its place
 * (makemore). The Linear in front of LayerNorm keeps its bias: LayerNorm
 * subtracts each row's mean over the features, which leaves a per-feature
 * bias in place, and without one LayerNorm(W x) = LayerNorm(W (c x)) for
 * any c > 0, so the first block would see the direction of the 2-D input
 * but not its radius, which the spirals need (measured with PyTorch on
 * this setup: training loss 1.07 without the bias against 0.69 with it
 * after 2000 steps). The weights start as tg_linear_new draws
 * them, U(-k, k) with k = 1 / sqrt(fan_in), whose std is k / sqrt(3); they
 * are then scaled by gain * sqrt(3) so that their std is the
 * gain / sqrt(fan_in) of Kaiming's initialisation (makemore draws normal
 * weights with that std; the shape of the distribution matters less than
 * its std). Tanh's gain is 5/3. The output layer's std is 0.1 / sqrt(fan_in)
 * instead, so that the first predictions are nearly uniform (makemore's
 * "make the last layer less confident"), and biases start at 0.
 *
 * The variants, all from the same initial draws, data and batches:
 *   none        no normalisation, gain 5/3
 *   batchnorm   BatchNorm1d after each hidden Linear, gain 5/3
 *   layernorm   LayerNorm after each hidden Linear, gain 5/3
 *   none_gain1  no normalisation, gain 1: makemore's cautionary case,
 *               where tanh's squashing is not compensated
 *
 * The data: 3-arm spirals (nn/data.c), not blobs: blobs are separated
 * within a few hundred steps, after which the loss and every gradient go
 * to 0 whatever the normalisation (measured with PyTorch, blobs of spread
 * 0.5, no norm: loss 0.03 after 100 steps, 5e-4 after 1000); the spirals
 * are far from solved after 1000 steps, so the gradients stay
 * informative for the whole run.
 *
 * Trained with plain SGD (no momentum, as makemore) on mini-batches of 32.
 * At the first step (the first forward and backward, from the initial
 * weights) and at the last, it prints for every Tanh output t: mean, std,
 * saturation (the share of |t| > 0.97) and the mean and std of dL/dt
 * (kept with tg_retain_grad); for every 2-D weight W: its shape, the mean
 * and std of dL/dW and grad:data = std(dL/dW) / std(W). After every step
 * it records log10(std(lr * dL/dW) / std(W)) for every W, the size of an
 * update relative to the weight (makemore: about -3 is healthy).
 *
 * What it writes into --out (default out/deep_mlp_diagnostics):
 *   histograms.csv    variant,step,kind,layer,center,density: 100-bin
 *                     density histograms (tg_histogram) of the activations,
 *                     their gradients and the weight gradients
 *   layers.csv        the printed tables, one row per layer or weight
 *   update_ratio.csv  variant,step,weight_1,...: the log10 ratios of
 *                     every step
 *   loss.csv          variant,step,loss
 *   activations_<v>.png, gradients_<v>.png, weight_grads_<v>.png,
 *   update_ratio.png  drawn by gnuplot with scripts/plots/diag_*.gp
 * where <v> is a variant's name. The scripts are found in TG_PLOTS_DIR
 * (the environment variable, else the folder this program was built
 * with).
 *
 * Std is the unbiased one (correction 1), as torch.std and makemore.
 * It is a demo, not a test: the closing comparison only reports what
 * this run's numbers show. It exits 1 on an error or a leaked tensor.
 * What it shares with train_mlp.c (reading the options, making the output
 * folder, running gnuplot, the check at exit) is in demo_util.c.
 */
#include "tapegrad.h"

#include "demo_util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- settings */

#define DEFAULT_STEPS 1000
#define DEFAULT_WIDTH 100
#define DEFAULT_DEPTH 5
#define DEFAULT_LR 0.1
#define DEFAULT_SEED 0
#define MAX_DEPTH 32
#define MAX_WIDTH 4096

#define BATCH 32
#define CLASSES 3
#define POINTS_PER_CLASS 300
#define NOISE 0.1
#define BINS 100           // histogram bins, as makemore
#define SATURATED 0.97     // |tanh| above this counts as saturated
#define TANH_GAIN (5.0 / 3.0)
#define OUTPUT_SCALE 0.1   // the last layer's std, times 1 / sqrt(fan_in)
#define LAST_STEPS 100     // averages "at the end" are over these steps

typedef struct options {
    int steps;
    int64_t width;
    int depth;
    double lr;
    uint64_t seed;
    const char *out;
    bool plots;
} options;

typedef struct variant {
    const char *name;  // in file names and in the CSV
    const char *label; // in the output and the plots
    const char *block; // one hidden block, as printed
    tg_norm_kind norm;
    double gain;
    const char *gain_text;
} variant;

static const variant variants[] = {
    {"none", "no norm", "Linear -> Tanh", TG_NORM_NONE, TANH_GAIN, "5/3"},
    {"batchnorm", "BatchNorm", "Linear (no bias) -> BatchNorm1d -> Tanh",
     TG_NORM_BATCH, TANH_GAIN, "5/3"},
    {"layernorm", "LayerNorm", "Linear -> LayerNorm -> Tanh", TG_NORM_LAYER,
     TANH_GAIN, "5/3"},
    {"none_gain1", "no norm, gain 1", "Linear -> Tanh", TG_NORM_NONE, 1.0,
     "1"},
};
#define NVARIANTS ((int)(sizeof variants / sizeof *variants))

/* --------------------------------------------------------------- options */

static void usage(FILE *f, const char *prog)
{
    fprintf(f,
            "usage: %s [options]\n"
            "Trains a deep tanh MLP on 3-arm spirals without normalisation, "
            "with BatchNorm,\nwith LayerNorm, and without normalisation at "
            "gain 1, and prints and plots\nmakemore part 3's diagnostics: "
            "activation, gradient and weight-gradient\nstatistics per layer, "
            "and update-to-data ratios over the steps.\n\n"
            "  --steps N    SGD steps on mini-batches of %d (default %d)\n"
            "  --width N    units per hidden layer (default %d)\n"
            "  --depth N    hidden layers, 1 to %d (default %d)\n"
            "  --lr X       learning rate (default %g)\n"
            "  --seed N     seed of the data, weights and batches (default "
            "%d)\n"
            "  --out DIR    output folder (default out/deep_mlp_diagnostics)\n"
            "  --no-plots   write the CSV files only, do not run gnuplot\n"
            "  --help       this text\n",
            prog, BATCH, DEFAULT_STEPS, DEFAULT_WIDTH, MAX_DEPTH,
            DEFAULT_DEPTH, DEFAULT_LR, DEFAULT_SEED);
}

/* 0 to run, 1 for --help, -1 (with a message) for bad options. */
static int parse_options(int argc, char **argv, options *o)
{
    *o = (options){DEFAULT_STEPS, DEFAULT_WIDTH, DEFAULT_DEPTH, DEFAULT_LR,
                   DEFAULT_SEED, "out/deep_mlp_diagnostics", true};
    static const char *const names[] = {"--steps", "--width", "--depth",
                                        "--lr", "--seed", "--out", NULL};
    const char *v = NULL;
    int i = 0, k;
    while ((k = demo_next_option(argc, argv, &i, names, &v, &o->plots)) >= 0) {
        long long n = 0;
        bool ok = true;
        switch (k) {
        case 0:
            ok = demo_parse_int(v, 1, 10000000, &n);
            o->steps = (int)n;
            break;
        case 1:
            ok = demo_parse_int(v, 1, MAX_WIDTH, &n);
            o->width = n;
            break;
        case 2:
            ok = demo_parse_int(v, 1, MAX_DEPTH, &n);
            o->depth = (int)n;
            break;
        case 3:
            ok = demo_parse_positive(v, &o->lr);
            break;
        case 4:
            ok = demo_parse_int(v, 0, INT64_MAX, &n);
            o->seed = (uint64_t)n;
            break;
        default:
            ok = *v != '\0';
            o->out = v;
            break;
        }
        if (!ok) {
            fprintf(stderr, "bad value for %s: '%s'\n", names[k], v);
            return -1;
        }
    }
    if (k != DEMO_OPT_END)
        return k == DEMO_OPT_HELP ? 1 : -1;
    return 0;
}

/* ----------------------------------------------------------------- files */

/* The output files, opened once, written by every variant. */
typedef struct outputs {
    FILE *hist, *layers, *ratio, *loss;
} outputs;

static FILE *open_csv(const char *dir, const char *name, const char *header)
{
    FILE *f = demo_open_out(dir, name);
    if (f)
        fprintf(f, "%s\n", header);
    return f;
}

static int open_outputs(const char *dir, int nweights, outputs *w)
{
    w->hist = open_csv(dir, "histograms.csv",
                       "variant,step,kind,layer,center,density");
    w->layers = open_csv(dir, "layers.csv",
                         "variant,step,kind,layer,shape,mean,std,"
                         "saturation,grad_mean,grad_std,grad_data_ratio");
    char header[64 + 16 * (MAX_DEPTH + 1)];
    int len = snprintf(header, sizeof header, "variant,step");
    for (int i = 1; i <= nweights; i++)
        len += snprintf(header + len, sizeof header - (size_t)len,
                        ",weight_%d", i);
    w->ratio = open_csv(dir, "update_ratio.csv", header);
    w->loss = open_csv(dir, "loss.csv", "variant,step,loss");
    return w->hist && w->layers && w->ratio && w->loss ? 0 : -1;
}

/* Closes every file; -1 if one could not be written completely. */
static int close_outputs(outputs *w)
{
    FILE *fs[] = {w->hist, w->layers, w->ratio, w->loss};
    int rc = 0;
    for (int i = 0; i < 4; i++)
        if (fs[i] && (ferror(fs[i]) || fclose(fs[i]) != 0))
            rc = -1;
    *w = (outputs){0};
    return rc;
}

/* ----------------------------------------------------------------- model */

/* The model and the tensors the diagnostics look at, borrowed from it. */
typedef struct model {
    tg_module *seq;
    int nlayers;                       // children of seq
    int tanh_at[MAX_DEPTH];            // child index of each Tanh
    tg_tensor *weights[MAX_DEPTH + 1]; // each Linear's weight, in order
    int nweights;
} model;

/* In place, without recording: t = t * s. */
static int scale_(tg_tensor *t, double s)
{
    tg_no_grad_begin();
    tg_tensor *scaled = tg_mul_scalar(t, s);
    int rc = scaled ? tg_copy_(t, scaled) : -1;
    tg_release(scaled);
    tg_no_grad_end();
    return rc;
}

/* A Linear initialised as at the top of the file: weights of std
 * scale / sqrt(fan_in), bias 0. NULL on error. */
static tg_module *linear(int64_t in, int64_t out, bool bias, double scale)
{
    tg_module *l = tg_linear_new(in, out, bias);
    if (!l)
        return NULL;
    /* U(-k, k) has std k / sqrt(3): times scale * sqrt(3) gives std
     * scale * k = scale / sqrt(fan_in) */
    int rc = scale_(tg_module_parameter(l, "weight"), scale * sqrt(3.0));
    if (rc == 0 && bias) {
        tg_no_grad_begin();
        rc = tg_fill_(tg_module_parameter(l, "bias"), 0.0);
        tg_no_grad_end();
    }
    if (rc != 0) {
        tg_module_free(l);
        return NULL;
    }
    return l;
}

static int model_build(const options *o, const variant *v, model *m)
{
    memset(m, 0, sizeof *m);
    tg_manual_seed(o->seed); // the same draws for every variant
    m->seq = tg_sequential_new(NULL, 0);
    if (!m->seq)
        return -1;
    /* each append takes the new layer, also when it fails */
    for (int l = 0; l < o->depth; l++) {
        int64_t in = l == 0 ? 2 : o->width;
        bool bias = v->norm != TG_NORM_BATCH; // see the top of the file
        if (tg_sequential_append(m->seq, linear(in, o->width, bias,
                                                v->gain)) != 0)
            return -1;
        if (v->norm == TG_NORM_BATCH &&
            tg_sequential_append(m->seq,
                                 tg_batch_norm1d_new(o->width, NULL)) != 0)
            return -1;
        if (v->norm == TG_NORM_LAYER &&
            tg_sequential_append(m->seq, tg_layer_norm_new(&o->width, 1,
                                                           1e-5, true)) != 0)
            return -1;
        if (tg_sequential_append(m->seq, tg_tanh_new()) != 0)
            return -1;
        m->tanh_at[l] = tg_module_num_children(m->seq) - 1;
    }
    if (tg_sequential_append(m->seq, linear(o->width, CLASSES, true,
                                            OUTPUT_SCALE)) != 0)
        return -1;
    m->nlayers = tg_module_num_children(m->seq);
    for (int i = 0; i < m->nlayers; i++) {
        tg_module *c = tg_module_child_at(m->seq, i);
        if (strcmp(tg_module_get_type(c)->name, "Linear") == 0)
            m->weights[m->nweights++] = tg_module_parameter(c, "weight");
    }
    return 0;
}

/* The forward pass, child by child, keeping each Tanh output in acts[]
 * (new references; with their gradient retained when `retain`). Returns
 * the logits, or NULL. */
static tg_tensor *forward(const model *m, int depth, const tg_tensor *x,
                          bool retain, tg_tensor **acts)
{
    tg_tensor *h = NULL; // the output of child i
    for (int i = 0, l = 0; i < m->nlayers; i++) {
        tg_module *child = tg_module_child_at(m->seq, i);
        tg_tensor *next = tg_module_forward(child, i == 0 ? x : h);
        tg_release(h);
        h = next;
        if (!h)
            return NULL;
        if (l < depth && i == m->tanh_at[l]) {
            if (retain && tg_retain_grad(h) != 0) {
                tg_release(h);
                return NULL;
            }
            acts[l++] = tg_retain(h);
        }
    }
    return h;
}

/* ------------------------------------------------------------ statistics */

/* What the tables show for one tensor. */
typedef struct tstats {
    double mean, std, saturation; // saturation: share of |t| > SATURATED
} tstats;

/* mean, unbiased std and saturation of t, computed without recording. */
static int stats_of(const tg_tensor *t, tstats *s)
{
    tg_no_grad_begin();
    tg_tensor *mean = tg_mean(t, NULL, 0, false);
    tg_tensor *std = tg_std(t, NULL, 0, 1, false);
    tg_tensor *a = tg_abs(t);
    tg_tensor *sat = tg_gt_scalar(a, SATURATED); // int64 0/1
    tg_tensor *satf = tg_to_dtype(sat, TG_FLOAT64);
    tg_tensor *share = tg_mean(satf, NULL, 0, false);
    tg_no_grad_end();
    int rc = mean && std && share ? 0 : -1;
    s->mean = tg_item(mean);
    s->std = tg_item(std);
    /* a NaN is neither saturated nor not: no share then */
    s->saturation = isnan(s->mean) ? NAN : tg_item(share);
    tg_release(share);
    tg_release(satf);
    tg_release(sat);
    tg_release(a);
    tg_release(std);
    tg_release(mean);
    return rc;
}

/* One snapshot: the statistics of every layer at one step. */
typedef struct snapshot {
    int step;
    tstats act[MAX_DEPTH], grad[MAX_DEPTH];   // tanh outputs, dL/d(output)
    tstats wgrad[MAX_DEPTH + 1];              // dL/dW per weight
    double grad_data[MAX_DEPTH + 1];          // std(dL/dW) / std(W)
} snapshot;

/* Appends the 100-bin density histogram of t to the CSV. A tensor with a
 * NaN or an infinity has none (tg_histogram refuses it): nothing is
 * written for it, and 1 is returned. */
static int write_histogram(FILE *f, const char *variant, int step,
                           const char *kind, int layer, const tg_tensor *t)
{
    tg_tensor *edges = NULL;
    tg_error_handler prev = tg_set_error_handler(tg_error_handler_quiet);
    tg_tensor *h = tg_histogram(t, BINS, true, &edges);
    tg_set_error_handler(prev);
    if (!h)
        return 1;
    const double *d = tg_data_f64(h), *e = tg_data_f64(edges);
    for (int i = 0; i < BINS; i++)
        fprintf(f, "%s,%d,%s,%d,%.9g,%.9g\n", variant, step, kind, layer,
                0.5 * (e[i] + e[i + 1]), d[i]);
    tg_release(edges);
    tg_release(h);
    return 0;
}

/* The statistics and histograms of one step, from the forward's Tanh
 * outputs (with retained gradients) and the weights' gradients. */
static int take_snapshot(const model *m, int depth, tg_tensor *const *acts,
                         const variant *v, int step, snapshot *s,
                         outputs *w, int *missing)
{
    s->step = step;
    int skipped = 0;
    for (int l = 0; l < depth; l++) {
        const tg_tensor *g = acts[l]->grad;
        if (!g || stats_of(acts[l], &s->act[l]) != 0 ||
            stats_of(g, &s->grad[l]) != 0)
            return -1;
        skipped += write_histogram(w->hist, v->name, step, "activation",
                                   l + 1, acts[l]);
        skipped += write_histogram(w->hist, v->name, step, "gradient", l + 1,
                                   g);
        fprintf(w->layers, "%s,%d,tanh,%d,,%.6g,%.6g,%.6g,%.6g,%.6g,\n",
                v->name, step, l + 1, s->act[l].mean, s->act[l].std,
                s->act[l].saturation, s->grad[l].mean, s->grad[l].std);
    }
    for (int i = 0; i < m->nweights; i++) {
        const tg_tensor *W = m->weights[i];
        tg_grad_summary gs;
        if (!W->grad || tg_param_grad_summary(W, &gs) != 0)
            return -1;
        s->wgrad[i] = (tstats){gs.grad_mean, gs.grad_std, NAN};
        s->grad_data[i] = gs.grad_data;
        tstats ws;
        if (stats_of(W, &ws) != 0) // the weight's own mean, for the CSV
            return -1;
        skipped += write_histogram(w->hist, v->name, step, "weight_grad",
                                   i + 1, W->grad);
        fprintf(w->layers, "%s,%d,weight,%d,%lldx%lld,%.6g,%.6g,,%.6g,%.6g,"
                           "%.6g\n",
                v->name, step, i + 1, (long long)W->shape[0],
                (long long)W->shape[1], ws.mean, ws.std, s->wgrad[i].mean,
                s->wgrad[i].std, s->grad_data[i]);
    }
    if (skipped)
        printf("  (step %d: %d histograms left out: NaN or inf values)\n",
               step, skipped);
    *missing += skipped;
    return 0;
}

static void print_snapshot(const model *m, int depth, const snapshot *s,
                           const char *when)
{
    printf("step %d (%s)\n", s->step, when);
    printf("  %-10s %9s %8s %10s   %11s %10s\n", "layer", "act mean",
           "act std", "saturated", "grad mean", "grad std");
    for (int l = 0; l < depth; l++)
        printf("  %2d (tanh)  %+9.4f %8.4f %9.2f%%   %+11.3e %10.3e\n", l + 1,
               s->act[l].mean, s->act[l].std, 100.0 * s->act[l].saturation,
               s->grad[l].mean, s->grad[l].std);
    printf("  %-10s %-11s %11s %10s %10s\n", "weight", "shape", "grad mean",
           "grad std", "grad:data");
    for (int i = 0; i < m->nweights; i++) {
        char shape[32];
        snprintf(shape, sizeof shape, "(%lld, %lld)",
                 (long long)m->weights[i]->shape[0],
                 (long long)m->weights[i]->shape[1]);
        printf("  %2d%-8s %-11s %+11.3e %10.3e %10.3e\n", i + 1,
               i + 1 == m->nweights ? " (out)" : "", shape,
               s->wgrad[i].mean, s->wgrad[i].std, s->grad_data[i]);
    }
}

/* ------------------------------------------------------------- training */

/* What one variant leaves for the closing comparison and the plots. */
typedef struct result {
    snapshot first, last;
    double first_loss;
    double end_loss;            // mean over the last LAST_STEPS steps
    double end_ratio[MAX_DEPTH + 1]; // mean log10 update ratio, same steps
    int nweights;
    bool diverged;              // a loss became NaN or infinite
    int missing;                // histograms left out (NaN or inf values)
    double ratio_lo, ratio_hi;  // range of the finite log10 ratios
} result;

/* The next mini-batch, starting a new epoch when one ends. */
static bool next_batch(tg_batches *b, tg_tensor **x, tg_tensor **y)
{
    return tg_batches_next(b, x, y) || tg_batches_next(b, x, y);
}

/* The unbiased std of t, computed without recording; NaN on error. */
static double std_of(const tg_tensor *t)
{
    tg_no_grad_begin();
    tg_tensor *s = tg_std(t, NULL, 0, 1, false);
    tg_no_grad_end();
    double v = tg_item(s);
    tg_release(s);
    return v;
}

/* log10(std(lr * grad) / std(W)) for every weight, after the update. */
static void update_ratios(const model *m, double lr, double *out)
{
    for (int i = 0; i < m->nweights; i++)
        out[i] = log10(lr * std_of(m->weights[i]->grad) /
                       std_of(m->weights[i]));
}

static int train_variant(const options *o, const variant *v,
                         const tg_dataset *data, outputs *w, result *r)
{
    memset(r, 0, sizeof *r);
    r->ratio_lo = INFINITY;
    r->ratio_hi = -INFINITY;
    model m = {0};
    tg_generator *g = tg_generator_new(o->seed); // the same batches for all
    tg_batches *batches = g ? tg_batches_new(data, BATCH, true, true, g)
                            : NULL;
    tg_optimizer *opt = NULL;
    int rc = -1;
    if (!batches || model_build(o, v, &m) != 0)
        goto done;
    tg_sgd_config cfg = {.lr = o->lr};
    opt = tg_sgd_new(m.seq, &cfg);
    if (!opt)
        goto done;
    r->nweights = m.nweights;
    int last_from = o->steps > LAST_STEPS ? o->steps - LAST_STEPS + 1 : 1;
    int nlast = 0;
    for (int step = 1; step <= o->steps; step++) {
        bool snap = step == 1 || step == o->steps;
        tg_tensor *x = NULL, *y = NULL, *acts[MAX_DEPTH] = {0};
        if (!next_batch(batches, &x, &y))
            goto done;
        tg_tensor *logits = forward(&m, o->depth, x, snap, acts);
        tg_tensor *loss = tg_cross_entropy(logits, y, TG_REDUCTION_MEAN);
        tg_optimizer_zero_grad(opt);
        int ok = loss && tg_backward(loss) == 0;
        double lv = ok ? tg_item(loss) : NAN;
        if (ok && !isfinite(lv) && !r->diverged) {
            r->diverged = true;
            printf("  the loss is %g at step %d: training diverged\n", lv,
                   step);
        }
        fprintf(w->loss, "%s,%d,%.9g\n", v->name, step, lv);
        if (step == 1)
            r->first_loss = lv;
        if (ok && snap)
            ok = take_snapshot(&m, o->depth, acts, v, step,
                               step == 1 ? &r->first : &r->last, w,
                               &r->missing) == 0;
        double ratio[MAX_DEPTH + 1];
        if (ok)
            ok = tg_optimizer_step(opt) == 0;
        if (ok)
            update_ratios(&m, o->lr, ratio);
        if (ok) {
            fprintf(w->ratio, "%s,%d", v->name, step);
            for (int i = 0; i < m.nweights; i++) {
                fprintf(w->ratio, ",%.6g", ratio[i]);
                if (isfinite(ratio[i])) {
                    r->ratio_lo = fmin(r->ratio_lo, ratio[i]);
                    r->ratio_hi = fmax(r->ratio_hi, ratio[i]);
                }
            }
            fputc('\n', w->ratio);
        }
        if (ok && step >= last_from) {
            nlast++;
            r->end_loss += lv;
            for (int i = 0; i < m.nweights; i++)
                r->end_ratio[i] += ratio[i];
        }
        for (int l = 0; l < o->depth; l++)
            tg_release(acts[l]);
        tg_release(loss);
        tg_release(logits);
        tg_release(x);
        tg_release(y);
        if (!ok)
            goto done;
    }
    r->end_loss /= nlast;
    for (int i = 0; i < m.nweights; i++)
        r->end_ratio[i] /= nlast;
    if (o->steps == 1)
        r->last = r->first;

    print_snapshot(&m, o->depth, &r->first,
                   "the first forward and backward, from the initial "
                   "weights");
    if (o->steps > 1)
        print_snapshot(&m, o->depth, &r->last, "the last");
    printf("  loss %.4f at step 1, %.4f averaged over the last %d steps\n",
           r->first_loss, r->end_loss, nlast);
    printf("  log10 update:data per weight, mean over the last %d steps:\n ",
           nlast);
    for (int i = 0; i < m.nweights; i++)
        printf(" %.2f", r->end_ratio[i]);
    printf("\n");
    rc = 0;
done:
    tg_optimizer_free(opt);
    tg_module_free(m.seq);
    tg_batches_free(batches);
    tg_generator_free(g);
    return rc;
}

/* ------------------------------------------------------ the comparison */

/* The label of the variant with the smallest (or largest) value, among
 * those whose value is finite; "none (no finite value)" if none is. */
static const char *best_of(const double *v, bool smallest)
{
    int best = -1;
    for (int i = 0; i < NVARIANTS; i++)
        if (isfinite(v[i]) &&
            (best < 0 || (smallest ? v[i] < v[best] : v[i] > v[best])))
            best = i;
    return best < 0 ? "none (no finite value)" : variants[best].label;
}

/* The closing section: comparisons computed from this run's numbers. */
static void print_comparison(const options *o, const result *r)
{
    int L = o->depth - 1; // the deepest tanh layer
    printf("\nWhat to look for (computed from this run)\n");

    printf("\n1. Saturation (share of |tanh| > %.2f) of the deepest tanh "
           "layer (%d),\n   step 1 -> step %d:\n",
           SATURATED, o->depth, o->steps);
    double sat_first[NVARIANTS], sat_last[NVARIANTS];
    for (int i = 0; i < NVARIANTS; i++) {
        sat_first[i] = r[i].first.act[L].saturation;
        sat_last[i] = r[i].last.act[L].saturation;
        printf("   %-16s %6.2f%% -> %6.2f%%\n", variants[i].label,
               100 * sat_first[i], 100 * sat_last[i]);
    }
    printf("   lowest at the end: %s\n   highest at the end: %s\n",
           best_of(sat_last, true), best_of(sat_last, false));

    printf("\n2. Activation std from the first to the deepest tanh layer, "
           "step 1\n   (a ratio below 1: the signal shrinks with depth):\n");
    for (int i = 0; i < NVARIANTS; i++)
        printf("   %-16s %.3f -> %.3f  (ratio %.2f)\n", variants[i].label,
               r[i].first.act[0].std, r[i].first.act[L].std,
               r[i].first.act[L].std / r[i].first.act[0].std);

    printf("\n3. Gradient std of the tanh outputs, first vs deepest layer, "
           "step 1\n   (far from 1: gradients shrink or grow on their way "
           "back):\n");
    for (int i = 0; i < NVARIANTS; i++)
        printf("   %-16s %.3e vs %.3e  (first / deepest %.2f)\n",
               variants[i].label, r[i].first.grad[0].std,
               r[i].first.grad[L].std,
               r[i].first.grad[0].std / r[i].first.grad[L].std);

    int n = r[0].nweights;
    printf("\n4. log10 update:data of the hidden weights, mean over the "
           "last %d steps\n   (makemore's rule of thumb: about -3; spread: "
           "max - min over the %d\n   hidden weights):\n",
           o->steps < LAST_STEPS ? o->steps : LAST_STEPS, n - 1);
    double dist[NVARIANTS], spread[NVARIANTS];
    for (int i = 0; i < NVARIANTS; i++) {
        double lo = INFINITY, hi = -INFINITY, mean = 0;
        for (int k = 0; k < n - 1; k++) {
            lo = fmin(lo, r[i].end_ratio[k]);
            hi = fmax(hi, r[i].end_ratio[k]);
            mean += r[i].end_ratio[k] / (n - 1);
        }
        dist[i] = fabs(mean + 3.0);
        spread[i] = hi - lo;
        if (isfinite(spread[i]))
            printf("   %-16s mean %6.2f, range [%6.2f, %6.2f], spread "
                   "%.2f\n",
                   variants[i].label, mean, lo, hi, spread[i]);
        else
            printf("   %-16s (not finite: a gradient was 0, NaN or inf)\n",
                   variants[i].label);
    }
    printf("   closest to -3 on average: %s\n   most even across layers: %s\n",
           best_of(dist, true), best_of(spread, true));

    double loss[NVARIANTS];
    printf("\n5. Training loss, mean over the last %d steps:\n",
           o->steps < LAST_STEPS ? o->steps : LAST_STEPS);
    for (int i = 0; i < NVARIANTS; i++) {
        loss[i] = r[i].end_loss;
        printf("   %-16s %.4f%s\n", variants[i].label, loss[i],
               r[i].diverged ? " (diverged)" : "");
    }
    printf("   lowest: %s\n", best_of(loss, true));
}

/* ----------------------------------------------------------------- plots */

/* The legends of one variant's histogram plots, as gnuplot variables
 * key_<kind>_<a|b>_<i> (a: the first step, b: the last). */
static void gp_keys(FILE *gp, const result *r, int depth)
{
    const snapshot *snaps[2] = {&r->first, &r->last};
    for (int s = 0; s < 2; s++) {
        const snapshot *p = snaps[s];
        char name[64], value[160];
        for (int l = 0; l < depth; l++) {
            snprintf(name, sizeof name, "key_act_%c_%d", 'a' + s, l + 1);
            snprintf(value, sizeof value,
                     "layer %d (tanh): mean %+.2f, std %.2f, saturated "
                     "%.1f%%",
                     l + 1, p->act[l].mean, p->act[l].std,
                     100 * p->act[l].saturation);
            demo_gp_set(gp, name, value);
            snprintf(name, sizeof name, "key_grad_%c_%d", 'a' + s, l + 1);
            snprintf(value, sizeof value,
                     "layer %d (tanh): mean %+.1e, std %.1e", l + 1,
                     p->grad[l].mean, p->grad[l].std);
            demo_gp_set(gp, name, value);
        }
        for (int i = 0; i < r->nweights; i++) {
            snprintf(name, sizeof name, "key_wgrad_%c_%d", 'a' + s, i + 1);
            snprintf(value, sizeof value,
                     "weight %d%s: std %.1e, grad:data %.1e", i + 1,
                     i + 1 == r->nweights ? " (out)" : "", p->wgrad[i].std,
                     p->grad_data[i]);
            demo_gp_set(gp, name, value);
        }
    }
}

/* What one plot is drawn from: a variant v and its result r, or v NULL
 * and r the results of every variant (for the plot of them all). */
typedef struct plot_of {
    const options *o;
    const variant *v;
    const result *r;
} plot_of;

/* The demo's own gnuplot variables for one plot (a plot_of). */
static void gp_settings(FILE *gp, const void *arg)
{
    const plot_of *p = arg;
    const options *o = p->o;
    fprintf(gp, "depth = %d\nnweights = %d\nstep_a = %d\nstep_b = %d\n",
            o->depth, o->depth + 1, 1, o->steps);
    if (p->v) {
        demo_gp_set(gp, "variant", p->v->name);
        demo_gp_set(gp, "label", p->v->label);
        gp_keys(gp, p->r, o->depth);
    } else {
        for (int i = 0; i < NVARIANTS; i++) {
            char name[32];
            snprintf(name, sizeof name, "variant_%d", i + 1);
            demo_gp_set(gp, name, variants[i].name);
            snprintf(name, sizeof name, "label_%d", i + 1);
            demo_gp_set(gp, name, variants[i].label);
        }
        fprintf(gp, "nvariants = %d\n", NVARIANTS);
        /* one y range for all panels, -4 .. -2 at least, from the finite
         * ratios (gnuplot's stats would stop at a column of infinities) */
        double lo = -4, hi = -2;
        for (int i = 0; i < NVARIANTS; i++) {
            lo = fmin(lo, p->r[i].ratio_lo);
            hi = fmax(hi, p->r[i].ratio_hi);
        }
        fprintf(gp, "ylo = %g\nyhi = %g\n", floor(lo), ceil(hi));
    }
}

/* Draws every plot; returns the number of scripts that failed. */
static int draw_plots(const options *o, const result *r)
{
    const char *plots_dir = demo_plots_dir();
    char subtitle[256];
    snprintf(subtitle, sizeof subtitle,
             "%d x (Linear %lld -> [norm] -> Tanh), SGD lr %g, batch %d, "
             "seed %llu",
             o->depth, (long long)o->width, o->lr, BATCH,
             (unsigned long long)o->seed);
    /* the first three are drawn for each variant, the last for them all */
    const char *const scripts[] = {"diag_activations.gp", "diag_gradients.gp",
                                   "diag_weight_grads.gp",
                                   "diag_update_ratio.gp"};
    if (!demo_scripts_readable(plots_dir, scripts, 4))
        return 1;
    int failed = 0, drawn = 0;
    printf("\n");
    for (int i = 0; i < NVARIANTS; i++) {
        if (r[i].missing) { // gnuplot cannot draw a curve with no points
            printf("no histogram plots for %s: some values were NaN or "
                   "inf\n",
                   variants[i].label);
            continue;
        }
        plot_of p = {o, &variants[i], &r[i]};
        for (int k = 0; k < 3; k++)
            failed += demo_run_gnuplot(plots_dir, scripts[k], o->out,
                                       subtitle, gp_settings, &p) != 0;
        drawn++;
    }
    plot_of all_variants = {o, NULL, r};
    failed += demo_run_gnuplot(plots_dir, scripts[3], o->out,
                               subtitle, gp_settings, &all_variants) != 0;
    if (!failed) {
        printf("plots in %s/:\nupdate_ratio.png", o->out);
        if (drawn) {
            printf(", and for <v> in");
            for (int i = 0, k = 0; i < NVARIANTS; i++)
                if (!r[i].missing)
                    printf("%s %s", k++ ? "," : "", variants[i].name);
            printf(":\nactivations_<v>.png, gradients_<v>.png, "
                   "weight_grads_<v>.png");
        }
        printf("\n");
    }
    return failed;
}

/* ------------------------------------------------------------------ main */

int main(int argc, char **argv)
{
    options o;
    int prc = parse_options(argc, argv, &o);
    if (prc != 0)
        return demo_usage_exit(prc, usage, argv[0]);
    if (demo_make_dirs(o.out) != 0)
        return 1;

    int rc = 1;
    tg_dataset data = {0};
    outputs w = {0};
    result *res = calloc(NVARIANTS, sizeof *res);
    tg_generator *g = tg_generator_new(o.seed);
    if (!res || !g || tg_make_spirals(POINTS_PER_CLASS, CLASSES, NOISE, g,
                                      &data) != 0)
        goto done;
    if (open_outputs(o.out, o.depth + 1, &w) != 0)
        goto done;

    printf("%d-arm spirals, %lld points (seed %llu); mini-batches of %d, "
           "SGD lr %g, %d steps\n",
           CLASSES, (long long)data.x->shape[0], (unsigned long long)o.seed,
           BATCH, o.lr, o.steps);
    printf("MLP: %d x (Linear %lld -> [norm] -> Tanh) -> Linear %d\n"
           "hidden weights: std gain / sqrt(fan_in); output weights: std "
           "%g / sqrt(fan_in)\n"
           "std is unbiased; saturated means |t| > %.2f\n",
           o.depth, (long long)o.width, CLASSES, OUTPUT_SCALE, SATURATED);
    for (int i = 0; i < NVARIANTS; i++) {
        printf("\n== %s: %d x (%s), gain %s ==\n", variants[i].label,
               o.depth, variants[i].block, variants[i].gain_text);
        if (train_variant(&o, &variants[i], &data, &w, &res[i]) != 0)
            goto done;
    }
    if (close_outputs(&w) != 0) {
        fprintf(stderr, "cannot write the CSV files in %s\n", o.out);
        goto done;
    }
    print_comparison(&o, res);
    printf("\nCSV files in %s/:\nhistograms.csv, layers.csv, "
           "update_ratio.csv, loss.csv\n",
           o.out);

    rc = 0;
    if (o.plots && demo_have_gnuplot() && draw_plots(&o, res) != 0)
        rc = 1;

done:
    close_outputs(&w);
    free(res);
    tg_dataset_free(&data);
    tg_generator_free(g);
    return demo_exit_status(rc);
}
