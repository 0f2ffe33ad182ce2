/*
 * examples/makemore/part3_modules.c - makemore part 3's network built
 * from the library's modules, as the lecture's "PyTorch-ifying" section
 * builds it from layer classes, and trained side by side with the raw
 * version of part3_mlp.c to show that both compute the same thing:
 *
 *   Embedding(27, 10) -> Flatten() -> Linear(30, 200, bias=False)
 *   -> BatchNorm1d(200, eps=0, momentum=0.001, correction=1) -> Tanh()
 *   -> Linear(200, 27)
 *
 * Both start from the same numbers (the raw network's draws from
 * torch.Generator().manual_seed(2147483647) are copied into the modules;
 * a Linear keeps its weight as (out, in), so it gets W^T) and see the same
 * batches (each has its own generator with that seed, advanced past the
 * same initial draws).
 *
 * What is the same, and what is not:
 *   - Training. BatchNorm1d with eps 0 and correction 1 normalises with
 *     the batch's mean and unbiased std, as the lecture's hand-written
 *     (hpreact - bnmeani) / bnstdi, and the update is the same
 *     p += -lr * grad. The fused BatchNorm computes (x - mean) * (1 / std)
 *     and its own backward, and x @ W^T runs the matrix product on a
 *     transposed weight, so the float32 roundings differ: the losses
 *     differ in their last bits (measured: at most 4.8e-7, 2 ulps, over
 *     2000 steps).
 *   - Evaluation. The raw network keeps a running mean of the batch std;
 *     BatchNorm1d, as PyTorch's, a running mean of the variance, and
 *     divides by its square root. sqrt(mean(var)) >= mean(sqrt(var)), so
 *     the split losses differ a little more (see the output).
 * The lecture's BatchNorm1d class (eps 1e-5, momentum 0.1, var) is
 * PyTorch's default; the settings here are the ones that reproduce its
 * first network.
 *
 * It prints the loss of both every --print-every steps, their largest
 * difference, the split losses of both, and 20 names sampled from the
 * modules. It exits 1 on an error or a leaked tensor.
 */
#include "tapegrad.h"

#include "../demo_util.h"
#include "part3_model.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#ifndef TG_DATA_DIR
#define TG_DATA_DIR "data"
#endif

typedef struct options {
    long long steps, decay_at, print_every;
    long long words; // 0: all
    const char *data;
} options;

static void usage(FILE *f, const char *prog)
{
    fprintf(f,
            "usage: %s [options]\n"
            "Trains makemore part 3's MLP twice from the same start, as raw "
            "tensors and as\nmodules (Embedding, Flatten, Linear, "
            "BatchNorm1d, Tanh, Linear), and compares.\n\n"
            "  --steps N        training steps (default 20000)\n"
            "  --decay-at N     lr 0.1 before step N, 0.01 from it "
            "(default %d)\n"
            "  --print-every N  print the losses every N steps (default "
            "2000)\n"
            "  --words N        use the first N words of the shuffled list "
            "(default: all)\n"
            "  --data FILE      the word list (default %s/names.txt)\n"
            "  --help           this text\n",
            prog, PART3_DECAY_AT, TG_DATA_DIR);
}

static int parse_options(int argc, char **argv, options *o)
{
    *o = (options){20000, PART3_DECAY_AT, 2000, 0, TG_DATA_DIR "/names.txt"};
    static const char *const names[] = {"--steps", "--decay-at",
                                        "--print-every", "--words", "--data",
                                        NULL};
    const char *v = NULL;
    bool plots = false; // no plots here; --no-plots is accepted
    int i = 0, k;
    while ((k = demo_next_option(argc, argv, &i, names, &v, &plots)) >= 0) {
        bool ok = true;
        if (k == 0)
            ok = demo_parse_int(v, 1, 100000000, &o->steps);
        else if (k == 1)
            ok = demo_parse_int(v, 0, 100000000, &o->decay_at);
        else if (k == 2)
            ok = demo_parse_int(v, 1, 100000000, &o->print_every);
        else if (k == 3)
            ok = demo_parse_int(v, 10, 100000000, &o->words);
        else {
            ok = *v != '\0';
            o->data = v;
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

int main(int argc, char **argv)
{
    options o;
    int prc = parse_options(argc, argv, &o);
    if (prc != 0)
        return demo_usage_exit(prc, usage, argv[0]);
    setvbuf(stdout, NULL, _IOLBF, 0); // a log file shows each line at once

    int rc = 1;
    part3_data d = {0};
    part3_mlp raw = {0}, start = {0};
    tg_module *net = NULL;
    tg_generator *g_raw = tg_generator_new(PART3_SEED);
    tg_generator *g_mod = tg_generator_new(PART3_SEED);
    tg_generator *gs = tg_generator_new(PART3_SEED + 10ULL);
    if (!g_raw || !g_mod || !gs || part3_data_load(o.data, o.words, &d) != 0)
        goto done;
    /* the same draws twice: one copy trains raw, the other is copied into
     * the modules (and leaves g_mod where g_raw is) */
    if (part3_mlp_init(&raw, d.vocab_size, g_raw) != 0 ||
        part3_mlp_init(&start, d.vocab_size, g_mod) != 0)
        goto done;
    net = part3_modules_new(&start, d.vocab_size);
    part3_mlp_free(&start);
    if (!net)
        goto done;
    if (tg_module_print(net) != 0)
        goto done;
    printf("%lld parameters\n\n", (long long)tg_module_num_elements(net));

    printf("%15s  %9s  %9s  %10s\n", "step", "raw", "modules",
           "difference");
    part3_progress prog;
    part3_progress_start(&prog, stdout, o.steps);
    double max_diff = 0.0;
    long long max_at = 0;
    for (long long i = 0; i < o.steps; i++) {
        double lr = part3_lr(i, o.decay_at), l_raw, l_mod;
        if (part3_mlp_step(&raw, &d.train, g_raw, lr, &l_raw, NULL) != 0 ||
            part3_modules_step(net, &d.train, g_mod, lr, &l_mod) != 0)
            goto done;
        double diff = fabs(l_raw - l_mod);
        if (!(diff <= max_diff)) { // a NaN is the largest difference
            max_diff = diff;
            max_at = i;
        }
        if (i % o.print_every == 0 || i == o.steps - 1) {
            part3_progress_clear(&prog);
            printf("%7lld/%7lld  %9.6f  %9.6f  %10.2e\n", i, o.steps, l_raw,
                   l_mod, diff);
        }
        part3_progress_show(&prog, i + 1, l_mod);
    }
    part3_progress_clear(&prog);
    printf("largest difference %.2e, at step %lld\n\n", max_diff, max_at);

    const char *split_names[2] = {"train", "val"};
    const tg_dataset *splits[2] = {&d.train, &d.val};
    printf("%5s  %9s  %9s  (running statistics: std / var)\n", "split",
           "raw", "modules");
    for (int i = 0; i < 2; i++) {
        double a, b;
        if (part3_split_loss(part3_mlp_logits, &raw, splits[i], &a) != 0 ||
            part3_split_loss(part3_modules_logits, net, splits[i], &b) != 0)
            goto done;
        printf("%5s  %9.6f  %9.6f\n", split_names[i], a, b);
    }

    printf("\nsampled from the modules:\n");
    const char *itos = tg_words_vocab(d.words);
    for (int i = 0; i < 20; i++) {
        char name[PART3_NAME_MAX];
        if (part3_sample(part3_modules_logits, net, itos, gs, name) != 0)
            goto done;
        printf("%s\n", name);
    }
    rc = 0;

done:
    tg_module_free(net);
    part3_mlp_free(&start);
    part3_mlp_free(&raw);
    part3_data_free(&d);
    tg_generator_free(gs);
    tg_generator_free(g_mod);
    tg_generator_free(g_raw);
    return demo_exit_status(rc);
}
