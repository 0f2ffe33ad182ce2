/*
 * tests/reliability/test_soak.c - a long training run that must not grow.
 *
 * 10,000 steps of a toy MLP on seeded spirals, as a student would write
 * the loop: shuffled mini-batches that cycle through 1,250 epochs,
 * cross-entropy, Adam (so optimiser state exists), zero_grad before each
 * backward, retain_grad on the logits and a look at their gradient, and
 * after every epoch an evaluation in eval mode under no_grad. The model
 * mixes what the library has to keep alive between steps: LayerNorm,
 * BatchNorm's running statistics, Dropout's masks (SOAK_MODEL below).
 *
 * What it asserts:
 *  - the live tensors, live storages and tape nodes after every epoch are
 *    EXACTLY those after the first epoch (counts_flat);
 *  - resident memory after step 10,000 is within SOAK_RSS_MARGIN_KB of its
 *    value after the warm-up, step 500 (rss_flat). Not under AddressSanitizer
 *    or ThreadSanitizer, nor under valgrind: their allocators keep freed
 *    blocks in quarantine and map shadow memory, so resident memory no
 *    longer follows what the program holds; the test log says when the
 *    check is skipped. The
 *    counts are checked in every build;
 *  - both checkers can fail: the same loop leaking one tensor per step is
 *    caught by counts_flat, with the growth stated, and leaking a 4 KiB
 *    tensor per step is caught by rss_flat.
 * The numbers measured are printed to stderr (the test log).
 *
 * Not a speed test (nothing is timed) and not an accuracy test
 * (tests/nn/test_training.c judges learning).
 */
#include "../common.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SOAK_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SOAK_SANITIZED 1
#endif
#endif
#ifndef SOAK_SANITIZED
#define SOAK_SANITIZED 0
#endif

/* ---------------------------------------------------------------- setting */

/*
 * SOAK_MODEL: 3-arm spirals, 100 points per class, a fifth held out (240
 * training and 60 validation points), batches of 32 reshuffled every
 * epoch: 7 batches of 32 and one of 16, so two batch shapes alternate and
 * 8 steps make an epoch. The net is 2 -> 32 -> 32 -> 3:
 *   Linear -> LayerNorm -> ReLU -> Linear -> BatchNorm1d -> Tanh ->
 *   Dropout(0.1) -> Linear
 * trained with Adam at lr 1e-2. Small on purpose: measured on a loaded
 * 2-core machine, the 10,000 steps take about 2 s in the default build and
 * 10 s under ASan+UBSan.
 */
#define SOAK_STEPS 10000
#define SOAK_WARMUP_STEP 500
#define SOAK_BATCH 32

/*
 * SOAK_RSS_MARGIN_KB: how far resident memory may move between the
 * warm-up and the end. A loop that releases everything it makes holds the
 * same blocks after every step. The warm-up lets the first epochs settle:
 * Adam's moments and the gradients appear at the first step, and malloc's
 * per-thread cache fills with freed chunks of each size (glibc counts them
 * as in use; measured with mallinfo2, the bytes in use rise by about 22 KB
 * over the first 15 epochs, then stay the same to the byte through epoch
 * 1,250). After it, resident memory still creeps as malloc first touches
 * pages of its arena, of the stack and of the code: measured from step 500
 * to step 10,000 in five runs, +36 to +128 KiB. The margin, 512 KiB, is 4x
 * that and far below any per-step leak: the smallest tensor a loop can
 * forget (a 0-d loss: its struct, its storage and a node, over 300 bytes)
 * left behind every step adds about 3 MB over those 9,500 steps, and
 * anything that leaks 56 bytes per step or more exceeds the margin.
 */
#define SOAK_RSS_MARGIN_KB 512

/* ---------------------------------------------------------------- checkers */

/* The library's counters at one moment. */
typedef struct soak_sample {
    int64_t step;     // steps taken when it was read
    int64_t tensors;  // tg_live_tensors()
    int64_t storages; // tg_live_storages()
    int64_t tape;     // tg_tape_size()
} soak_sample;

static soak_sample soak_read(int64_t step)
{
    return (soak_sample){step, tg_live_tensors(), tg_live_storages(),
                         tg_tape_size()};
}

/* True when every sample has exactly the counts of s[0] (the counters
 * after the first epoch). Otherwise report names the first counter that
 * moved, the sample where it first did, and its growth from s[0] to the
 * last sample, in total and per step. */
static bool counts_flat(const soak_sample *s, int n, char *report,
                        size_t size)
{
    static const char *const names[] = {"live tensors", "live storages",
                                        "tape nodes"};
    if (n < 1) {
        snprintf(report, size, "no sample: the run ended before an epoch");
        return false;
    }
    for (int i = 1; i < n; i++) {
        const int64_t now[3] = {s[i].tensors, s[i].storages, s[i].tape};
        const int64_t first[3] = {s[0].tensors, s[0].storages, s[0].tape};
        for (int c = 0; c < 3; c++) {
            if (now[c] == first[c])
                continue;
            const int64_t last[3] = {s[n - 1].tensors, s[n - 1].storages,
                                     s[n - 1].tape};
            int64_t steps = s[n - 1].step - s[0].step;
            snprintf(report, size,
                     "%s: %lld after step %lld, %lld after step %lld "
                     "(first change); %lld after step %lld: %+lld in "
                     "%lld steps, %+.3f per step",
                     names[c], (long long)first[c], (long long)s[0].step,
                     (long long)now[c], (long long)s[i].step,
                     (long long)last[c], (long long)s[n - 1].step,
                     (long long)(last[c] - first[c]), (long long)steps,
                     steps > 0 ? (double)(last[c] - first[c]) / (double)steps
                               : 0.0);
            return false;
        }
    }
    snprintf(report, size,
             "flat over %d samples: %lld tensors, %lld storages, %lld tape "
             "nodes",
             n, (long long)s[0].tensors, (long long)s[0].storages,
             (long long)s[0].tape);
    return true;
}

/* Resident memory of this process in KiB (/proc/self/statm), or -1. */
static long rss_kb(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long size = 0, resident = -1;
    if (!f)
        return -1;
    if (fscanf(f, "%ld %ld", &size, &resident) != 2)
        resident = -1;
    fclose(f);
    return resident < 0 ? -1 : resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/* True when resident memory at end_step (end_kb) is at most margin_kb
 * above its value at warm_step (warm_kb); report states the growth, in
 * total and per step, either way. */
static bool rss_flat(long warm_kb, int64_t warm_step, long end_kb,
                     int64_t end_step, long margin_kb, char *report,
                     size_t size)
{
    long growth = end_kb - warm_kb;
    int64_t steps = end_step - warm_step;
    bool ok = warm_kb > 0 && end_kb > 0 && growth <= margin_kb;
    snprintf(report, size,
             "resident memory %ld KiB after step %lld, %ld KiB after step "
             "%lld: %+ld KiB in %lld steps (%+.1f bytes per step), %s the "
             "margin of %ld KiB",
             warm_kb, (long long)warm_step, end_kb, (long long)end_step,
             growth, (long long)steps,
             steps > 0 ? (double)growth * 1024.0 / (double)steps : 0.0,
             ok ? "within" : "beyond", margin_kb);
    return ok;
}

/* ------------------------------------------------------------- the loop */

/* What a run leaks on purpose, for the tests that feed the checkers a
 * wrong answer. The leaked tensors are kept so that the test can release
 * them once the checker has spoken (the library cannot tell them from
 * tensors a user keeps on purpose). */
typedef enum soak_leak {
    LEAK_NONE,
    LEAK_BATCH_LABELS, // one more reference to each batch's y: 1 tensor/step
    LEAK_4KIB,         // a 1024-element float32 tensor per step
} soak_leak;

typedef struct soak_run {
    /* in */
    int64_t steps;
    int64_t warm_step;
    soak_leak leak;
    /* out */
    soak_sample *epochs; // (nepochs,) after each epoch's evaluation
    int nepochs;
    long warm_kb, end_kb;
    double first_loss, last_loss; // mean training loss of epoch 1 / last
    double accuracy;              // validation accuracy after the last epoch
    tg_tensor **leaked;           // (nleaked,)
    int64_t nleaked;
} soak_run;

static tg_module *soak_model(void)
{
    tg_module *m = tg_sequential_new(NULL, 0);
    tg_module *layers[] = {
        tg_linear_new(2, 32, true),
        tg_layer_norm_new(TG_SHAPE(32), 1e-5, true),
        tg_relu_new(),
        tg_linear_new(32, 32, true),
        tg_batch_norm1d_new(32, NULL),
        tg_tanh_new(),
        tg_dropout_new(0.1),
        tg_linear_new(32, 3, true),
    };
    for (size_t i = 0; i < sizeof layers / sizeof *layers; i++)
        cr_assert_eq(tg_sequential_append(m, layers[i]), 0, "%s",
                     tg_last_error());
    return m;
}

/* Accuracy on val in eval mode, under no_grad, as after every epoch. */
static double soak_evaluate(tg_module *m, const tg_dataset *val)
{
    tg_module_train(m, false);
    tg_no_grad_begin();
    tg_tensor *logits = tg_module_forward(m, val->x);
    tg_tensor *loss = tg_cross_entropy(logits, val->y, TG_REDUCTION_MEAN);
    tg_no_grad_end();
    cr_assert_not_null(loss, "%s", tg_last_error());
    double acc = tg_accuracy(logits, val->y);
    tg_release(loss);
    tg_release(logits);
    tg_module_train(m, true);
    return acc;
}

/* One training step; returns the loss. */
static double soak_step(tg_module *m, tg_optimizer *opt, tg_tensor *x,
                        tg_tensor *y)
{
    tg_tensor *logits = tg_module_forward(m, x);
    tg_retain_grad(logits); // to look at dL/dlogits, as a student does
    tg_tensor *loss = tg_cross_entropy(logits, y, TG_REDUCTION_MEAN);
    cr_assert_not_null(loss, "%s", tg_last_error());
    tg_optimizer_zero_grad(opt);
    cr_assert_eq(tg_backward(loss), 0, "%s", tg_last_error());
    cr_assert_not_null(logits->grad, "retain_grad kept no gradient");
    cr_assert_eq(tg_optimizer_step(opt), 0, "%s", tg_last_error());
    double v = tg_item(loss);
    tg_release(loss);
    tg_release(logits);
    return v;
}

static void soak(soak_run *r)
{
    tg_manual_seed(0); // the Linear weights and the dropout masks
    tg_generator *g = tg_generator_new(0); // data, split and batch order
    tg_dataset all = {0}, train = {0}, val = {0};
    cr_assert_eq(tg_make_spirals(100, 3, 0.03, g, &all), 0, "%s",
                 tg_last_error());
    cr_assert_eq(tg_dataset_split(&all, 0.2, g, &train, &val), 0, "%s",
                 tg_last_error());
    tg_batches *batches = tg_batches_new(&train, SOAK_BATCH, true, false, g);
    tg_module *m = soak_model();
    tg_adam_config cfg = {.lr = 1e-2};
    tg_optimizer *opt = tg_adam_new(m, &cfg);
    cr_assert(batches && opt, "%s", tg_last_error());
    int64_t per_epoch = tg_batches_per_epoch(batches);

    r->nepochs = 0;
    r->epochs = calloc((size_t)(r->steps / per_epoch + 2), sizeof *r->epochs);
    r->nleaked = 0;
    r->leaked = calloc((size_t)r->steps, sizeof *r->leaked);
    cr_assert(r->epochs && r->leaked);
    r->warm_kb = r->end_kb = -1;

    int64_t step = 0;
    while (step < r->steps) {
        double loss_sum = 0;
        int64_t nbatches = 0;
        tg_tensor *x, *y;
        while (step < r->steps && tg_batches_next(batches, &x, &y)) {
            loss_sum += soak_step(m, opt, x, y);
            nbatches++;
            if (r->leak == LEAK_BATCH_LABELS)
                r->leaked[r->nleaked++] = tg_retain(y);
            else if (r->leak == LEAK_4KIB)
                r->leaked[r->nleaked++] =
                    tg_zeros(TG_SHAPE(1024), TG_FLOAT32);
            tg_release(x);
            tg_release(y);
            step++;
            if (step == r->warm_step)
                r->warm_kb = rss_kb();
        }
        r->accuracy = soak_evaluate(m, &val);
        double mean = loss_sum / (double)(nbatches > 0 ? nbatches : 1);
        if (r->nepochs == 0)
            r->first_loss = mean;
        r->last_loss = mean;
        if (nbatches == per_epoch) // counts compare at epoch boundaries
            r->epochs[r->nepochs++] = soak_read(step);
    }
    r->end_kb = rss_kb();

    tg_optimizer_free(opt);
    tg_module_free(m);
    tg_batches_free(batches);
    tg_dataset_free(&val);
    tg_dataset_free(&train);
    tg_dataset_free(&all);
    tg_generator_free(g);
}

static void soak_run_free(soak_run *r)
{
    for (int64_t i = 0; i < r->nleaked; i++)
        tg_release(r->leaked[i]);
    free(r->leaked);
    free(r->epochs);
}

/* ------------------------------------------------------------------ tests */

TG_TEST(soak, ten_thousand_steps_stay_flat)
{
    soak_run r = {.steps = SOAK_STEPS, .warm_step = SOAK_WARMUP_STEP};
    soak(&r);
    char report[512];
    bool flat = counts_flat(r.epochs, r.nepochs, report, sizeof report);
    fprintf(stderr,
            "soak: %lld steps in %d epochs; mean training loss %.4f in "
            "epoch 1, %.4f in the last; validation accuracy %.3f\n"
            "soak: counts after epoch 1 (step %lld): %lld tensors, %lld "
            "storages, %lld tape nodes\n"
            "soak: %s\n",
            (long long)SOAK_STEPS, r.nepochs, r.first_loss, r.last_loss,
            r.accuracy, (long long)r.epochs[0].step,
            (long long)r.epochs[0].tensors, (long long)r.epochs[0].storages,
            (long long)r.epochs[0].tape, report);
    cr_assert(flat, "%s", report);
    cr_assert_eq(r.nepochs, SOAK_STEPS / 8, "8 steps per epoch expected");
    cr_assert(r.last_loss < r.first_loss, "the loop did not train: %s",
              report);

    if (SOAK_SANITIZED || tg_test_under_valgrind()) {
        fprintf(stderr,
                "soak: resident memory not checked: %s, whose allocator "
                "and shadow memory decouple it from what the program "
                "holds (%ld KiB after step %d, %ld KiB after step %d)\n",
                SOAK_SANITIZED ? "built with a sanitizer"
                               : "running under valgrind",
                r.warm_kb, SOAK_WARMUP_STEP, r.end_kb, SOAK_STEPS);
    } else {
        bool ok = rss_flat(r.warm_kb, SOAK_WARMUP_STEP, r.end_kb, SOAK_STEPS,
                           SOAK_RSS_MARGIN_KB, report, sizeof report);
        fprintf(stderr, "soak: %s\n", report);
        cr_assert(ok, "%s", report);
    }
    soak_run_free(&r);
}

/* The wrong answer for counts_flat: the same loop keeping one more
 * reference to every batch's labels (tensor and storage stay). 50 epochs
 * are enough to see it. */
TG_TEST(soak, leaking_one_tensor_per_step_is_caught)
{
    soak_run r = {.steps = 400, .warm_step = 100,
                  .leak = LEAK_BATCH_LABELS};
    soak(&r);
    char report[512];
    bool flat = counts_flat(r.epochs, r.nepochs, report, sizeof report);
    fprintf(stderr, "soak (leaking one tensor per step): %s\n", report);
    cr_assert_not(flat, "a leak of one tensor per step went unnoticed");
    cr_assert(strstr(report, "live tensors: ") == report, "%s", report);
    /* 49 epochs of 8 steps after the first sample: +392, +1 per step. */
    cr_assert(strstr(report, "+392 in 392 steps, +1.000 per step"), "%s",
              report);
    cr_assert_eq(r.nleaked, 400);
    soak_run_free(&r);
}

/* counts_flat on samples made by hand: it compares storages and tape
 * nodes too (a storage can outlive its tensors in a leaked view; a leaked
 * graph keeps nodes), and names the counter that moved. */
TG_TEST(soak, counts_flat_names_each_counter)
{
    soak_sample s[3] = {{8, 40, 30, 0}, {16, 40, 30, 0}, {24, 40, 30, 0}};
    char report[512];
    cr_assert(counts_flat(s, 3, report, sizeof report), "%s", report);
    cr_assert_not(counts_flat(s, 0, report, sizeof report));
    s[2].storages = 31;
    cr_assert_not(counts_flat(s, 3, report, sizeof report));
    cr_assert(strstr(report, "live storages: 30 after step 8, 31 after "
                             "step 24"), "%s", report);
    s[2].storages = 30;
    s[1].tape = 13;
    s[2].tape = 26;
    cr_assert_not(counts_flat(s, 3, report, sizeof report));
    cr_assert(strstr(report, "tape nodes: 0 after step 8, 13 after step 16 "
                             "(first change); 26 after step 24: +26 in 16 "
                             "steps, +1.625 per step"), "%s", report);
}

/* The wrong answer for rss_flat: a 4 KiB tensor kept every step for 1,000
 * steps (4,096 bytes of data, the tensor and storage structs, malloc's
 * overhead: measured +6.2 MB) is far beyond the margin. */
TG_TEST(soak, leaking_4kib_per_step_is_caught_by_rss)
{
    if (SOAK_SANITIZED || tg_test_under_valgrind()) {
        fprintf(stderr, "soak (leaking 4 KiB per step): resident memory "
                        "not checked under %s\n",
                SOAK_SANITIZED ? "a sanitizer" : "valgrind");
        return;
    }
    soak_run r = {.steps = 1100, .warm_step = 100, .leak = LEAK_4KIB};
    soak(&r);
    char report[512];
    bool ok = rss_flat(r.warm_kb, 100, r.end_kb, 1100, SOAK_RSS_MARGIN_KB,
                       report, sizeof report);
    fprintf(stderr, "soak (leaking 4 KiB per step): %s\n", report);
    cr_assert_not(ok, "a leak of 4 KiB per step went unnoticed: %s", report);
    cr_assert(r.end_kb - r.warm_kb >= 4000, "%s", report);
    soak_run_free(&r);
}
