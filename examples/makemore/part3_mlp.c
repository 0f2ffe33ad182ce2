/*
 * examples/makemore/part3_mlp.c - makemore part 3 (Karpathy's lecture
 * "Activations & Gradients, BatchNorm", makemore_part3_bn.ipynb) in C:
 * the character-level MLP with a hand-written BatchNorm trained on
 * data/names.txt, printing what the notebook prints.
 *
 * The network and the loop are the lecture's, line by line
 * (part3_model.c quotes the Python): 32033 names split 80/10/10 after
 * random.seed(42); a 3-character context embedded in 10 dimensions, a
 * Linear layer of 200 units without bias, BatchNorm with the batch's mean
 * and unbiased std and running statistics (momentum 0.001), tanh, and a
 * Linear layer to the 27 characters; 12097 parameters drawn from
 * torch.Generator().manual_seed(2147483647); 200000 steps of SGD on
 * batches of 32 drawn from the same generator, lr 0.1 then 0.01 from step
 * 100000. Then the loss on the training and validation sets with the
 * running statistics, and 20 names sampled from a generator seeded
 * 2147483647 + 10.
 *
 * The random numbers are PyTorch's (the same initial weights and batches,
 * bit for bit) and so is the step-0 loss; from then on the float32 sums
 * of the gradients are done in another order than PyTorch's, so the
 * losses differ in their last bits (1 or 2 ulps over the first 300
 * steps, which tests/examples/test_makemore_part3.c checks against
 * PyTorch). docs/tutorial/makemore-part3.md compares a whole run with
 * the lecture's printed numbers.
 *
 * What it writes into --out (default out/makemore_part3):
 *   loss.csv    step,loss,log10_loss,mean_log10_loss_1000: every step
 *               (log10_loss is the lecture's lossi; the last column, on
 *               every 1000th row, the mean of the 1000 values up to it)
 *   samples.txt the sampled names
 *   loss.png    log10 of the loss per step and its mean over each 1000
 *               steps, drawn by gnuplot with scripts/plots/part3_loss.gp
 *
 * When stdout is a terminal a progress line (steps/s, ETA) is rewritten
 * in place between the lecture's lines; in a file there are only those.
 * It exits 1 on an error or a leaked tensor.
 */
#include "tapegrad.h"

#include "../demo_util.h"
#include "part3_model.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef TG_DATA_DIR
#define TG_DATA_DIR "data"
#endif

typedef struct options {
    long long steps, decay_at, print_every;
    long long words; // 0: all
    const char *out;
    const char *data;
    bool plots;
} options;

static void usage(FILE *f, const char *prog)
{
    fprintf(f,
            "usage: %s [options]\n"
            "Trains makemore part 3's MLP with BatchNorm on names.txt, as "
            "the lecture does,\nand prints what the lecture prints.\n\n"
            "  --steps N        training steps (default %d)\n"
            "  --decay-at N     lr 0.1 before step N, 0.01 from it "
            "(default %d)\n"
            "  --print-every N  print the loss every N steps (default "
            "10000)\n"
            "  --words N        use the first N words of the shuffled list "
            "(default: all)\n"
            "  --data FILE      the word list (default %s/names.txt)\n"
            "  --out DIR        output folder (default out/makemore_part3)\n"
            "  --no-plots       write the CSV file only, do not run "
            "gnuplot\n"
            "  --help           this text\n",
            prog, PART3_MAX_STEPS, PART3_DECAY_AT, TG_DATA_DIR);
}

static int parse_options(int argc, char **argv, options *o)
{
    *o = (options){PART3_MAX_STEPS, PART3_DECAY_AT, 10000, 0,
                   "out/makemore_part3", TG_DATA_DIR "/names.txt", true};
    static const char *const names[] = {"--steps", "--decay-at",
                                        "--print-every", "--words", "--data",
                                        "--out", NULL};
    const char *v = NULL;
    int i = 0, k;
    while ((k = demo_next_option(argc, argv, &i, names, &v, &o->plots)) >=
           0) {
        bool ok = true;
        switch (k) {
        case 0:
            ok = demo_parse_int(v, 1, 100000000, &o->steps);
            break;
        case 1:
            ok = demo_parse_int(v, 0, 100000000, &o->decay_at);
            break;
        case 2:
            ok = demo_parse_int(v, 1, 100000000, &o->print_every);
            break;
        case 3:
            ok = demo_parse_int(v, 10, 100000000, &o->words);
            break;
        case 4:
            ok = *v != '\0';
            o->data = v;
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

/* v as Python's repr of a float prints it: the fewest digits that read
 * back as the same double (loss.item() is a float32 widened to double). */
static void print_py_float(double v)
{
    char buf[40];
    for (int p = 1; p <= 17; p++) {
        snprintf(buf, sizeof buf, "%.*g", p, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    if (!strpbrk(buf, ".einn"))
        strcat(buf, ".0");
    printf("%s", buf);
}

/* The lecture's print(itos): {1: 'a', 2: 'b', ..., 0: '.'} */
static void print_itos(const char *itos)
{
    size_t n = strlen(itos);
    printf("{");
    for (size_t i = 1; i < n; i++)
        printf("%zu: '%c', ", i, itos[i]);
    printf("0: '%c'}\n", itos[0]);
}

static void print_shapes(const tg_dataset *d)
{
    char xs[TG_SHAPE_STR_MAX], ys[TG_SHAPE_STR_MAX];
    printf("X %s Y %s\n", tg_shape_str(d->x, xs), tg_shape_str(d->y, ys));
}

/* Trains m, printing the lecture's lines and writing loss.csv. */
static int train(const options *o, part3_mlp *m, const part3_data *d,
                 tg_generator *g, FILE *csv)
{
    part3_progress prog;
    part3_progress_start(&prog, stdout, o->steps);
    fprintf(csv, "step,loss,log10_loss,mean_log10_loss_1000\n");
    double block = 0.0; // sum of log10(loss) over the current 1000 steps
    for (long long i = 0; i < o->steps; i++) {
        double loss;
        if (part3_mlp_step(m, &d->train, g, part3_lr(i, o->decay_at), &loss,
                           NULL) != 0)
            return -1;
        /* if i % 10000 == 0: print(f'{i:7d}/{max_steps:7d}: ...') */
        if (i % o->print_every == 0) {
            part3_progress_clear(&prog);
            printf("%7lld/%7lld: %.4f\n", i, o->steps, loss);
        }
        /* lossi.append(loss.log10().item()) */
        /* and, for the plot, their mean over each 1000 steps, at its last
         * step: torch.tensor(lossi).view(-1, 1000).mean(1) */
        block += log10(loss);
        fprintf(csv, "%lld,%.9g,%.9g,", i, loss, log10(loss));
        if ((i + 1) % 1000 == 0) {
            fprintf(csv, "%.9g\n", block / 1000.0);
            block = 0.0;
        } else
            fprintf(csv, "\n");
        part3_progress_show(&prog, i + 1, loss);
    }
    part3_progress_clear(&prog);
    double s = part3_progress_elapsed(&prog);
    printf("(%lld steps in %.1f s: %.0f steps/s, %d thread%s)\n", o->steps,
           s, (double)o->steps / s, tg_get_num_threads(),
           tg_get_num_threads() == 1 ? "" : "s");
    return 0;
}

int main(int argc, char **argv)
{
    options o;
    int prc = parse_options(argc, argv, &o);
    if (prc != 0)
        return demo_usage_exit(prc, usage, argv[0]);
    setvbuf(stdout, NULL, _IOLBF, 0); // a log file shows each line at once
    if (demo_make_dirs(o.out) != 0)
        return 1;

    int rc = 1;
    part3_data d = {0};
    part3_mlp m = {0};
    FILE *csv = NULL, *names = NULL;
    tg_generator *g = tg_generator_new(PART3_SEED);
    tg_generator *gs = tg_generator_new(PART3_SEED + 10ULL);
    if (!g || !gs || part3_data_load(o.data, o.words, &d) != 0)
        goto done;
    const char *itos = tg_words_vocab(d.words);
    long long nwords = tg_words_count(d.words);
    if (o.words > 0 && o.words < nwords)
        nwords = o.words;
    printf("%lld\n", nwords); // len(words)
    print_itos(itos);
    printf("%lld\n", (long long)d.vocab_size);
    print_shapes(&d.train);
    print_shapes(&d.val);
    print_shapes(&d.test);

    if (part3_mlp_init(&m, d.vocab_size, g) != 0)
        goto done;
    tg_tensor *params[PART3_NPARAMS];
    part3_mlp_parameters(&m, params);
    int64_t nparams = 0;
    for (int i = 0; i < PART3_NPARAMS; i++)
        nparams += params[i]->numel;
    printf("%lld\n", (long long)nparams); // number of parameters in total

    csv = demo_open_out(o.out, "loss.csv");
    if (!csv || train(&o, &m, &d, g, csv) != 0)
        goto done;
    if (fclose(csv) != 0) {
        csv = NULL;
        fprintf(stderr, "cannot write %s/loss.csv\n", o.out);
        goto done;
    }
    csv = NULL;

    /* split_loss('train'); split_loss('val') */
    const char *split_names[2] = {"train", "val"};
    const tg_dataset *splits[2] = {&d.train, &d.val};
    for (int i = 0; i < 2; i++) {
        double loss;
        if (part3_split_loss(part3_mlp_logits, &m, splits[i], &loss) != 0)
            goto done;
        printf("%s ", split_names[i]);
        print_py_float(loss);
        printf("\n");
    }

    /* g = torch.Generator().manual_seed(2147483647 + 10); 20 names */
    names = demo_open_out(o.out, "samples.txt");
    if (!names)
        goto done;
    for (int i = 0; i < 20; i++) {
        char name[PART3_NAME_MAX];
        if (part3_sample(part3_mlp_logits, &m, itos, gs, name) != 0)
            goto done;
        printf("%s\n", name);
        fprintf(names, "%s\n", name);
    }
    if (fclose(names) != 0) {
        names = NULL;
        fprintf(stderr, "cannot write %s/samples.txt\n", o.out);
        goto done;
    }
    names = NULL;
    printf("loss.csv and samples.txt in %s/\n", o.out);

    rc = 0;
    if (o.plots && demo_have_gnuplot()) {
        const char *dir = demo_plots_dir();
        const char *const scripts[] = {"part3_loss.gp"};
        if (!demo_scripts_readable(dir, scripts, 1) ||
            demo_run_gnuplot(dir, scripts[0], o.out,
                             "makemore part 3: MLP with BatchNorm", NULL,
                             NULL) != 0)
            rc = 1;
        else
            printf("plot: %s/loss.png\n", o.out);
    }

done:
    if (names)
        fclose(names);
    if (csv)
        fclose(csv);
    part3_mlp_free(&m);
    part3_data_free(&d);
    tg_generator_free(gs);
    tg_generator_free(g);
    return demo_exit_status(rc);
}
