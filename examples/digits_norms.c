/*
 * examples/digits_norms.c - BatchNorm's small-batch failure, measured: one
 * small CNN trained on the 8x8 handwritten digits (data/digits.csv.gz)
 * with five normalisations at five batch sizes, several seeds each.
 *
 * The model (about 2,700 parameters), for a (B, 1, 8, 8) batch of images
 * scaled to [0, 1]:
 *
 *   Conv2d(1, 8, 3, padding 1)  -> norm(8)  -> ReLU -> MaxPool2d(2)  (8, 4, 4)
 *   Conv2d(8, 16, 3, padding 1) -> norm(16) -> ReLU -> MaxPool2d(2)  (16, 2, 2)
 *   Flatten -> Linear(64, 10)
 *
 * where norm is one of
 *   none       nothing
 *   batch      BatchNorm2d: statistics per channel over the batch and the
 *              pixels; running statistics in eval mode
 *   group      GroupNorm with 4 groups: per image, over the channels of a
 *              group and the pixels
 *   instance   InstanceNorm2d (affine): per image and channel, over pixels
 *   layer      LayerNorm over (C, H, W): per image, over everything
 * Only BatchNorm mixes the images of a batch, so only BatchNorm should
 * care about the batch size: that is the claim measured here. (It did not
 * hold for the CNN: docs/tutorial/09-normalisation-on-images.md reads
 * the numbers.)
 *
 * --model mlp trains a multilayer perceptron on the 64 pixels instead
 * (about 9,000 parameters):
 *
 *   Flatten -> Linear(64, 64) -> norm(64) -> ReLU
 *           -> Linear(64, 64) -> norm(64) -> ReLU -> Linear(64, 10)
 *
 * with norm none, batch (BatchNorm1d: per feature, over the batch alone),
 * group (GroupNorm, 4 groups of 16 features, per image) or layer
 * (LayerNorm over the 64 features, per image); InstanceNorm has nothing to
 * normalise over there and is left out. BatchNorm1d's statistics come
 * from the B images alone: at batch 2 every feature becomes +-1 (two
 * values minus their mean, over their spread), whatever the image.
 *
 * Training: SGD with momentum 0.9 for EPOCHS epochs over the same 1,438
 * training images (the split has its own seed, the same for every run),
 * the learning rate annealed to 0 by a cosine. The base learning rate is
 * scaled linearly with the batch size (Goyal et al., 2017): lr = LR_32 *
 * B / 32. With a fixed number of epochs a batch of B takes 1438 / B steps
 * per epoch, so B * lr / B, the step each image contributes, is the same at
 * every batch size: the runs differ in how noisy the steps are, and in
 * what BatchNorm sees, not in how far they may move.
 *
 * Measured per run: validation accuracy in eval mode (BatchNorm with its
 * running statistics), and for BatchNorm also with batch statistics: the
 * validation images in batches of the training batch size, in training
 * mode, the running statistics saved before and put back after. The gap
 * between the two is BatchNorm's train/eval mismatch.
 *
 * Written into --out (default out/digits_norms):
 *   runs.csv      one row per run:
 *                 norm,batch_size,seed,lr,steps,train_loss,val_acc,
 *                 val_acc_batch_stats,seconds
 *   summary.csv   per norm and batch size, over the seeds:
 *                 norm,batch_size,runs,mean,std,min,max,
 *                 batch_stats_mean,batch_stats_std
 *   accuracy.png  validation accuracy against batch size, one line per
 *                 norm, error bars one standard deviation over the seeds
 *   bn_gap.png    BatchNorm's accuracy with running statistics and with
 *                 batch statistics against batch size
 * (plots by gnuplot with scripts/plots/digits_*.gp; --no-plots skips them).
 *
 * --quick runs a reduced sweep for the test suite (scripts/
 * check_digits_norms.py reads its summary.csv and checks what the
 * measurements showed): batch sizes 2 and 32, no norm, BatchNorm and
 * GroupNorm, 3 seeds, 4 epochs, in a few seconds.
 *
 * The full sweep, 75 runs, takes about 12 s on one thread of a quiet
 * 2-core machine; most of it is batch 2, 7,190 steps a run. The MLP's 60
 * runs take about 3 s.
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

#ifndef TG_DATA_DIR
#define TG_DATA_DIR "data"
#endif

/* ------------------------------------------------------------ settings */

#define EPOCHS 10          // over the 1,438 training images
#define QUICK_EPOCHS 4
#define LR_32 0.05         // the learning rate at batch size 32
#define MOMENTUM 0.9
#define VAL_FRACTION 0.2   // 359 validation images
#define SPLIT_SEED 0       // the same split for every run
#define SEEDS 3
#define C1 8               // channels of the first conv
#define C2 16              // and of the second
#define GROUPS 4           // GroupNorm's groups, in every layer
#define MLP_WIDTH 64       // the MLP's hidden features
#define EPS 1e-5

typedef enum { NORM_NONE, NORM_BATCH, NORM_GROUP, NORM_INSTANCE,
               NORM_LAYER, NNORMS } norm_kind;
static const char *const norm_names[NNORMS] = {"none", "batch", "group",
                                               "instance", "layer"};
static const char *const norm_labels[NNORMS] = {
    "no norm", "BatchNorm", "GroupNorm", "InstanceNorm", "LayerNorm"};

static const int64_t batch_sizes[] = {2, 4, 8, 32, 128};
#define NBATCH ((int)(sizeof batch_sizes / sizeof *batch_sizes))

typedef enum { MODEL_CNN, MODEL_MLP } model_kind;

typedef struct options {
    bool quick, plots;
    model_kind model;
    int seeds, epochs;
    const char *out, *data;
} options;

/* What one run measured. */
typedef struct run_result {
    double val_acc, batch_stats_acc; // batch_stats_acc NaN but for BatchNorm
    double train_loss, seconds, lr;
    int64_t steps;
} run_result;

static double now_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* ---------------------------------------------------------------- model */

/* The norm layer of kind k over c channels of h x w pixels (hw 0: over c
 * features, the MLP's); NULL for none (and on error, which the library
 * reported: *failed is set then). */
static tg_module *norm_layer(norm_kind k, int64_t c, int64_t hw,
                             bool *failed)
{
    tg_module *m = NULL;
    switch (k) {
    case NORM_NONE:
        return NULL;
    case NORM_BATCH: // eps 1e-5, momentum 0.1, affine
        m = hw ? tg_batch_norm2d_new(c, NULL) : tg_batch_norm1d_new(c, NULL);
        break;
    case NORM_GROUP:
        m = tg_group_norm_new(GROUPS, c, EPS, true);
        break;
    case NORM_INSTANCE:
        m = tg_instance_norm2d_new(c, EPS, 0.1, true, false);
        break;
    case NORM_LAYER:
        m = hw ? tg_layer_norm_new((const int64_t[]){c, hw, hw}, 3, EPS, true)
               : tg_layer_norm_new((const int64_t[]){c}, 1, EPS, true);
        break;
    default:
        break;
    }
    if (!m)
        *failed = true;
    return m;
}

/* conv -> norm -> ReLU -> max pool, appended to seq. */
static int append_block(tg_module *seq, int64_t in, int64_t out, int64_t hw,
                        norm_kind k)
{
    const tg_conv2d_options conv = {.padding = {1, 1}};
    bool failed = false;
    if (tg_sequential_append(seq, tg_conv2d_new(in, out, 3, 3, &conv,
                                                true)) != 0)
        return -1;
    tg_module *norm = norm_layer(k, out, hw, &failed);
    if (failed || (norm && tg_sequential_append(seq, norm) != 0))
        return -1;
    if (tg_sequential_append(seq, tg_relu_new()) != 0 ||
        tg_sequential_append(seq, tg_max_pool2d_new(2, 0, 0)) != 0)
        return -1;
    return 0;
}

/* Linear -> norm -> ReLU over `out` features, appended to seq. */
static int append_dense(tg_module *seq, int64_t in, int64_t out, norm_kind k)
{
    bool failed = false;
    if (tg_sequential_append(seq, tg_linear_new(in, out, true)) != 0)
        return -1;
    tg_module *norm = norm_layer(k, out, 0, &failed);
    if (failed || (norm && tg_sequential_append(seq, norm) != 0))
        return -1;
    return tg_sequential_append(seq, tg_relu_new());
}

/* The CNN or the MLP of the file header, drawn from the default
 * generator. */
static tg_module *build_model(model_kind model, norm_kind k)
{
    tg_module *seq = tg_sequential_new(NULL, 0);
    bool ok = seq != NULL;
    if (ok && model == MODEL_CNN)
        ok = append_block(seq, 1, C1, 8, k) == 0 &&
             append_block(seq, C1, C2, 4, k) == 0 &&
             tg_sequential_append(seq, tg_flatten_new(1, -1)) == 0 &&
             tg_sequential_append(seq, tg_linear_new(C2 * 2 * 2, 10,
                                                     true)) == 0;
    else if (ok)
        ok = tg_sequential_append(seq, tg_flatten_new(1, -1)) == 0 &&
             append_dense(seq, 64, MLP_WIDTH, k) == 0 &&
             append_dense(seq, MLP_WIDTH, MLP_WIDTH, k) == 0 &&
             tg_sequential_append(seq, tg_linear_new(MLP_WIDTH, 10,
                                                     true)) == 0;
    if (!ok) {
        tg_module_free(seq);
        return NULL;
    }
    return seq;
}

/* --------------------------------------------------------- evaluation */

/* Accuracy of m on d in its current mode, in batches of batch images
 * (the last one smaller, or left out when whole), without a tape. -1 on
 * error. */
static double accuracy(tg_module *m, const tg_dataset *d, int64_t batch,
                       bool whole)
{
    int64_t n = d->x->shape[0], correct = 0;
    if (whole)
        n -= n % batch;
    tg_no_grad_begin();
    for (int64_t i = 0; i < n; i += batch) {
        int64_t b = n - i < batch ? n - i : batch;
        tg_tensor *x = tg_narrow(d->x, 0, i, b);
        tg_tensor *y = tg_narrow(d->y, 0, i, b);
        tg_tensor *logits = tg_module_forward(m, x);
        double acc = logits ? tg_accuracy(logits, y) : NAN;
        tg_release(logits);
        tg_release(y);
        tg_release(x);
        if (isnan(acc)) {
            correct = -1;
            break;
        }
        correct += llround(acc * (double)b);
    }
    tg_no_grad_end();
    return correct < 0 ? -1.0 : (double)correct / (double)n;
}

/* BatchNorm's accuracy with batch statistics: d in batches of batch in
 * training mode (whole batches only: the MLP's BatchNorm1d cannot
 * normalise a last batch of one image); every buffer (running mean and
 * variance, the batch count) is saved first and restored after, so the
 * model is unchanged. */
static double batch_stats_accuracy(tg_module *m, const tg_dataset *d,
                                   int64_t batch)
{
    enum { MAX_BUFFERS = 16 };
    tg_named_tensor bufs[MAX_BUFFERS];
    int nb = tg_module_named_buffers(m, bufs, MAX_BUFFERS);
    if (nb < 0 || nb > MAX_BUFFERS)
        return -1.0;
    tg_tensor *saved[MAX_BUFFERS] = {NULL};
    for (int i = 0; i < nb; i++)
        saved[i] = tg_clone(bufs[i].tensor);
    tg_module_train(m, true);
    double acc = accuracy(m, d, batch, true);
    tg_module_train(m, false);
    for (int i = 0; i < nb; i++) {
        if (saved[i] && tg_copy_(bufs[i].tensor, saved[i]) != 0)
            acc = -1.0;
        if (!saved[i])
            acc = -1.0;
        tg_release(saved[i]);
    }
    return acc;
}

/* ------------------------------------------------------------ training */

static int train_run(const options *o, norm_kind k, int64_t batch,
                     uint64_t seed, const tg_dataset *train,
                     const tg_dataset *val, run_result *r)
{
    double t0 = now_seconds();
    tg_manual_seed(seed); // the model's initial weights
    tg_module *m = build_model(o->model, k);
    r->lr = LR_32 * (double)batch / 32.0;
    tg_sgd_config sgd = {.lr = r->lr, .momentum = MOMENTUM};
    tg_optimizer *opt = m ? tg_sgd_new(m, &sgd) : NULL;
    tg_generator *g = opt ? tg_generator_new(seed) : NULL; // batch order
    /* drop_last: a last batch of one image would give BatchNorm one value
     * per channel and pixel position only from that image */
    tg_batches *it = g ? tg_batches_new(train, batch, true, true, g) : NULL;
    int rc = it ? 0 : -1;
    int64_t per_epoch = it ? tg_batches_per_epoch(it) : 0;
    int64_t total = per_epoch * o->epochs, step = 0;
    double loss_sum = 0.0;
    int64_t loss_n = 0;
    for (int epoch = 0; epoch < o->epochs && rc == 0; epoch++) {
        tg_tensor *x, *y;
        loss_sum = 0.0;
        loss_n = 0;
        while (rc == 0 && tg_batches_next(it, &x, &y)) {
            tg_optimizer_set_lr(opt, tg_lr_cosine(r->lr, step, total, 0.0));
            tg_tensor *logits = tg_module_forward(m, x);
            tg_tensor *loss = tg_cross_entropy(logits, y, TG_REDUCTION_MEAN);
            tg_optimizer_zero_grad(opt);
            if (!loss || tg_backward(loss) != 0 ||
                tg_optimizer_step(opt) != 0)
                rc = -1;
            else {
                loss_sum += tg_item(loss);
                loss_n++;
                step++;
            }
            tg_release(loss);
            tg_release(logits);
            tg_release(y);
            tg_release(x);
        }
    }
    if (rc == 0) {
        r->steps = step;
        r->train_loss = loss_sum / (double)loss_n; // the last epoch's
        tg_module_train(m, false);
        r->val_acc = accuracy(m, val, 512, false);
        r->batch_stats_acc = k == NORM_BATCH
                                 ? batch_stats_accuracy(m, val, batch)
                                 : NAN;
        if (r->val_acc < 0 || r->batch_stats_acc < 0)
            rc = -1;
    }
    tg_batches_free(it);
    tg_generator_free(g);
    tg_optimizer_free(opt);
    tg_module_free(m);
    r->seconds = now_seconds() - t0;
    return rc;
}

/* --------------------------------------------------------------- output */

static double mean_of(const double *v, int n)
{
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s += v[i];
    return s / n;
}

/* The sample standard deviation (0 for one value). */
static double std_of(const double *v, int n)
{
    if (n < 2)
        return 0.0;
    double m = mean_of(v, n), s = 0.0;
    for (int i = 0; i < n; i++)
        s += (v[i] - m) * (v[i] - m);
    return sqrt(s / (n - 1));
}

/* --------------------------------------------------------------- options */

static void usage(FILE *f, const char *prog)
{
    fprintf(f,
            "usage: %s [--model cnn|mlp] [--quick] [--seeds N] [--epochs N] "
            "[--out DIR]\n          [--data FILE] [--no-plots]\n"
            "Trains a small CNN on the 8x8 digits with no norm, BatchNorm, "
            "GroupNorm,\nInstanceNorm and LayerNorm at batch sizes 2, 4, 8, "
            "32 and 128, --seeds seeds\neach (default %d), %d epochs, and "
            "writes runs.csv, summary.csv and plots\ninto --out (default "
            "out/digits_norms, or out/digits_norms_mlp).\n"
            "  --model mlp  an MLP on the 64 pixels instead (BatchNorm1d; no "
            "InstanceNorm)\n"
            "  --quick      batch sizes 2 and 32; no norm, BatchNorm and "
            "GroupNorm; %d epochs\n",
            prog, SEEDS, EPOCHS, QUICK_EPOCHS);
}

static int parse_options(int argc, char **argv, options *o)
{
    *o = (options){.plots = true, .seeds = SEEDS, .epochs = 0,
                   .out = NULL, .data = TG_DATA_DIR "/digits.csv.gz"};
    static const char *const names[] = {"--seeds", "--epochs", "--out",
                                        "--data", "--model", NULL};
    const char *value;
    int i = 0, k;
    long long n;
    /* --quick takes no value: read it before demo_next_option sees it */
    for (int a = 1; a < argc; a++)
        if (strcmp(argv[a], "--quick") == 0) {
            o->quick = true;
            memmove(argv + a, argv + a + 1,
                    (size_t)(argc - a - 1) * sizeof *argv);
            argc--;
            a--;
        }
    while ((k = demo_next_option(argc, argv, &i, names, &value, &o->plots)) !=
           DEMO_OPT_END) {
        if (k < 0)
            return k == DEMO_OPT_HELP ? 1 : -1;
        if (k == 0 || k == 1) {
            if (!demo_parse_int(value, 1, 1000, &n)) {
                fprintf(stderr, "%s: expected a whole number from 1 to "
                                "1000, got '%s'\n",
                        names[k], value);
                return -1;
            }
            if (k == 0)
                o->seeds = (int)n;
            else
                o->epochs = (int)n;
        } else if (k == 2)
            o->out = value;
        else if (k == 3)
            o->data = value;
        else if (k == 4) {
            if (strcmp(value, "cnn") != 0 && strcmp(value, "mlp") != 0) {
                fprintf(stderr, "--model: expected cnn or mlp, got '%s'\n",
                        value);
                return -1;
            }
            o->model = value[0] == 'm' ? MODEL_MLP : MODEL_CNN;
        }
    }
    if (!o->out)
        o->out = o->model == MODEL_MLP ? "out/digits_norms_mlp"
                                       : "out/digits_norms";
    if (o->epochs == 0)
        o->epochs = o->quick ? QUICK_EPOCHS : EPOCHS;
    return 0;
}

/* gnuplot variables of the two scripts */
static void gp_settings(FILE *gp, const void *arg)
{
    const options *o = arg;
    fprintf(gp, "seeds = %d\nmlp = %d\n", o->seeds, o->model == MODEL_MLP);
}

int main(int argc, char **argv)
{
    options o;
    int prc = parse_options(argc, argv, &o);
    if (prc != 0)
        return demo_usage_exit(prc, usage, argv[0]);
    if (demo_make_dirs(o.out) != 0)
        return 1;

    /* One thread: the tensors here are small (a batch of 32 is 2,048
     * pixels), and on a shared machine a second thread costs more in
     * waiting than it gives (the quick sweep took 11 s on 2 threads of
     * 2 busy cores, 1.7 s on one); the results are the same either way. */
    tg_set_num_threads(1);
    int rc = 1;
    tg_dataset train = {0}, val = {0};
    FILE *runs = NULL, *summary = NULL;
    double *acc = NULL, *bacc = NULL;
    if (tg_digits_split(o.data, VAL_FRACTION, SPLIT_SEED, &train, &val) != 0)
        goto done;
    /* pixels 0..16 to [0, 1], in place: the sets are this program's */
    tg_tensor *sets[2] = {train.x, val.x};
    for (int s = 0; s < 2; s++) {
        float *p = tg_data_f32(sets[s]);
        for (int64_t i = 0; i < sets[s]->numel; i++)
            p[i] /= 16.0f;
    }
    runs = demo_open_out(o.out, "runs.csv");
    summary = runs ? demo_open_out(o.out, "summary.csv") : NULL;
    acc = malloc((size_t)o.seeds * sizeof *acc);
    bacc = malloc((size_t)o.seeds * sizeof *bacc);
    if (!summary || !acc || !bacc)
        goto done;
    fprintf(runs, "norm,batch_size,seed,lr,steps,train_loss,val_acc,"
                  "val_acc_batch_stats,seconds\n");
    fprintf(summary, "norm,batch_size,runs,mean,std,min,max,"
                     "batch_stats_mean,batch_stats_std\n");

    printf("8x8 digits, %s: %lld training and %lld validation images; %d "
           "epochs, SGD momentum %g,\nlr %g x batch / 32 annealed by a "
           "cosine; %d seeds per cell%s\n\n",
           o.model == MODEL_MLP ? "MLP" : "CNN",
           (long long)train.x->shape[0], (long long)val.x->shape[0],
           o.epochs, MOMENTUM, LR_32, o.seeds, o.quick ? " (--quick)" : "");
    double started = now_seconds();
    int nruns = 0;
    double table[NNORMS][NBATCH], table_std[NNORMS][NBATCH];
    double gap_batch[NBATCH];
    bool done_cell[NNORMS][NBATCH] = {{false}};
    for (int k = 0; k < NNORMS; k++) {
        if (o.quick && k != NORM_NONE && k != NORM_BATCH && k != NORM_GROUP)
            continue;
        if (o.model == MODEL_MLP && k == NORM_INSTANCE)
            continue;
        for (int b = 0; b < NBATCH; b++) {
            int64_t bs = batch_sizes[b];
            if (o.quick && bs != 2 && bs != 32)
                continue;
            for (int s = 0; s < o.seeds; s++) {
                run_result r;
                uint64_t seed = (uint64_t)(s + 1);
                if (train_run(&o, (norm_kind)k, bs, seed, &train, &val,
                              &r) != 0)
                    goto done;
                nruns++;
                acc[s] = r.val_acc;
                bacc[s] = r.batch_stats_acc;
                fprintf(runs, "%s,%lld,%llu,%g,%lld,%.6f,%.6f,%.6f,%.3f\n",
                        norm_names[k], (long long)bs,
                        (unsigned long long)seed, r.lr, (long long)r.steps,
                        r.train_loss, r.val_acc,
                        isnan(r.batch_stats_acc) ? -1.0 : r.batch_stats_acc,
                        r.seconds);
                printf("%-12s batch %3lld  seed %llu  lr %-8g  %5lld steps  "
                       "loss %.3f  val acc %5.1f%%",
                       norm_labels[k], (long long)bs,
                       (unsigned long long)seed, r.lr, (long long)r.steps,
                       r.train_loss, 100.0 * r.val_acc);
                if (k == NORM_BATCH)
                    printf("  (batch stats %5.1f%%)",
                           100.0 * r.batch_stats_acc);
                printf("  %.1f s\n", r.seconds);
                fflush(stdout);
            }
            double lo = acc[0], hi = acc[0];
            for (int s = 1; s < o.seeds; s++) {
                lo = fmin(lo, acc[s]);
                hi = fmax(hi, acc[s]);
            }
            table[k][b] = mean_of(acc, o.seeds);
            table_std[k][b] = std_of(acc, o.seeds);
            done_cell[k][b] = true;
            if (k == NORM_BATCH)
                gap_batch[b] = mean_of(bacc, o.seeds);
            fprintf(summary, "%s,%lld,%d,%.6f,%.6f,%.6f,%.6f", norm_names[k],
                    (long long)bs, o.seeds, table[k][b], table_std[k][b], lo,
                    hi);
            if (k == NORM_BATCH)
                fprintf(summary, ",%.6f,%.6f\n", gap_batch[b],
                        std_of(bacc, o.seeds));
            else
                fprintf(summary, ",,\n");
        }
    }
    double elapsed = now_seconds() - started; // of the sweep

    /* the table: mean validation accuracy (std) over the seeds */
    printf("\nvalidation accuracy (%%), mean (std) over %d seeds:\n\n",
           o.seeds);
    printf("| norm           |");
    for (int b = 0; b < NBATCH; b++)
        if (!o.quick || batch_sizes[b] == 2 || batch_sizes[b] == 32)
            printf(" batch %-8lld |", (long long)batch_sizes[b]);
    printf("\n| -------------- |");
    for (int b = 0; b < NBATCH; b++)
        if (!o.quick || batch_sizes[b] == 2 || batch_sizes[b] == 32)
            printf(" -------------- |");
    printf("\n");
    for (int k = 0; k < NNORMS; k++) {
        bool any = false;
        for (int b = 0; b < NBATCH; b++)
            any = any || done_cell[k][b];
        if (!any)
            continue;
        printf("| %-14s |", norm_labels[k]);
        for (int b = 0; b < NBATCH; b++)
            if (done_cell[k][b])
                printf(" %5.1f (%4.1f)   |", 100.0 * table[k][b],
                       100.0 * table_std[k][b]);
        printf("\n");
        if (k == NORM_BATCH) {
            printf("| %-14s |", "  batch stats");
            for (int b = 0; b < NBATCH; b++)
                if (done_cell[k][b])
                    printf(" %5.1f          |", 100.0 * gap_batch[b]);
            printf("\n");
        }
    }
    printf("\n%d runs in %.0f s\n", nruns, elapsed);
    if (fclose(runs) != 0 || fclose(summary) != 0) {
        runs = summary = NULL;
        fprintf(stderr, "cannot write the CSV files in %s\n", o.out);
        goto done;
    }
    runs = summary = NULL;
    printf("runs.csv and summary.csv in %s/\n", o.out);

    rc = 0;
    if (o.plots && demo_have_gnuplot()) {
        const char *plots_dir = demo_plots_dir();
        const char *const scripts[] = {"digits_accuracy.gp",
                                       "digits_bn_gap.gp"};
        char subtitle[160];
        snprintf(subtitle, sizeof subtitle,
                 "%d epochs, SGD momentum %g, lr %g x batch / 32 (cosine), "
                 "%d seeds",
                 o.epochs, MOMENTUM, LR_32, o.seeds);
        int drawn = 0;
        if (demo_scripts_readable(plots_dir, scripts, 2))
            for (int i = 0; i < 2; i++)
                drawn += demo_run_gnuplot(plots_dir, scripts[i], o.out,
                                          subtitle, gp_settings, &o) == 0;
        if (drawn == 2)
            printf("plots: %s/accuracy.png, %s/bn_gap.png\n", o.out, o.out);
        else
            rc = 1;
    }

done:
    if (runs)
        fclose(runs);
    if (summary)
        fclose(summary);
    free(acc);
    free(bacc);
    tg_dataset_free(&val);
    tg_dataset_free(&train);
    return demo_exit_status(rc);
}
