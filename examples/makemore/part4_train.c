/*
 * examples/makemore/part4_train.c - makemore part 4, exercise 4: "putting
 * it all together", the MLP (n_hidden 200) trained with the hand-written
 * backward only. Nothing is recorded on a tape and tg_backward is never
 * called: part4_mlp.c's p4_train_step computes every gradient itself.
 *
 *   part4_train [--steps 200000] [--samples 20] [--eval-rows N]
 *               [--data names.txt]
 *
 * As the lecture: batches of 32, lr 0.1 and then 0.01 from step 100000
 * (half of the steps, whatever --steps is), the loss printed every 10000
 * steps; then the BatchNorm statistics measured over the whole training
 * set, the train and val losses, and names sampled from a generator
 * seeded 2147483647 + 10. --eval-rows N calibrates and evaluates on the
 * first N rows of each set only (a quick smoke run: the test suite's,
 * which also runs under valgrind). docs/backprop-ninja.md shows a full
 * run.
 */
#include "part4_mlp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef TG_DATA_DIR
#define TG_DATA_DIR "data"
#endif

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The first n rows of x (all of them when n is 0 or more than x has), a
 * new reference. */
static tg_tensor *head(const tg_tensor *x, long n)
{
    int64_t rows = x->shape[0];
    return tg_narrow(x, 0, 0, n > 0 && n < rows ? n : rows);
}

int main(int argc, char **argv)
{
    const char *path = TG_DATA_DIR "/names.txt";
    long max_steps = 200000, samples = 20, eval_rows = 0; // 0: all
    for (int i = 1; i < argc; i++) {
        char *end = NULL;
        if (strcmp(argv[i], "--data") == 0 && i + 1 < argc)
            path = argv[++i];
        else if (strcmp(argv[i], "--steps") == 0 && i + 1 < argc)
            max_steps = strtol(argv[++i], &end, 10);
        else if (strcmp(argv[i], "--samples") == 0 && i + 1 < argc)
            samples = strtol(argv[++i], &end, 10);
        else if (strcmp(argv[i], "--eval-rows") == 0 && i + 1 < argc)
            eval_rows = strtol(argv[++i], &end, 10);
        else
            end = argv[i];
        if (end != NULL && (*end != '\0' || max_steps < 1 || samples < 0 ||
                            eval_rows < 0)) {
            fprintf(stderr, "usage: %s [--steps N >= 1] [--samples N >= 0] "
                    "[--eval-rows N >= 1] [--data names.txt]\n", argv[0]);
            return 2;
        }
    }
    tg_words *words = tg_words_load(path);
    tg_dataset tr = {0}, dev = {0}, te = {0};
    if (!words || tg_words_split(words, 3, 42, &tr, &dev, &te) != 0)
        return 1; // the error is printed
    const char *itos = tg_words_vocab(words);
    int64_t vocab = (int64_t)strlen(itos);

    tg_generator *g = tg_generator_new(P4_SEED);
    tg_generator *torch_default = tg_generator_new(P4_TORCH_DEFAULT_SEED);
    p4_params p;
    if (p4_params_init(&p, vocab, 10, 3, 200, g, torch_default) != 0)
        return 1;
    printf("%lld\n", (long long)p4_params_count(&p)); // parameters

    int rc = 0;
    double start = now();
    for (long i = 0; i < max_steps && rc == 0; i++) {
        tg_tensor *xb, *yb;
        double loss;
        rc = p4_batch(&tr, 32, g, &xb, &yb);
        /* lr = 0.1 if i < 100000 else 0.01, as a share of the run */
        double lr = i < max_steps / 2 ? 0.1 : 0.01;
        if (rc == 0)
            rc = p4_train_step(&p, xb, yb, lr, &loss, NULL);
        tg_release(xb), tg_release(yb);
        if (rc == 0 && i % 10000 == 0)
            printf("%7ld/%7ld: %.4f\n", i, max_steps, loss);
    }
    double seconds = now() - start;

    /* the sets to evaluate: all of them, or their first eval_rows rows */
    tg_tensor *xtr = head(tr.x, eval_rows), *ytr = head(tr.y, eval_rows);
    tg_tensor *xdev = head(dev.x, eval_rows), *ydev = head(dev.y, eval_rows);
    tg_tensor *bnmean = NULL, *bnvar = NULL;
    if (rc == 0)
        rc = p4_calibrate(&p, xtr, &bnmean, &bnvar);
    if (rc == 0) {
        printf("train %.6f\n", p4_split_loss(&p, bnmean, bnvar, xtr, ytr));
        printf("val %.6f\n", p4_split_loss(&p, bnmean, bnvar, xdev, ydev));
        /* g = torch.Generator().manual_seed(2147483647 + 10) */
        tg_generator *gs = tg_generator_new(P4_SEED + 10);
        char name[256];
        for (long k = 0; k < samples && rc == 0; k++) {
            rc = p4_sample(&p, bnmean, bnvar, 3, itos, gs, name,
                           sizeof name);
            if (rc == 0)
                printf("%s\n", name);
        }
        tg_generator_free(gs);
    }
    fprintf(stderr, "%ld steps in %.1f s (%.1f us per step)\n", max_steps,
            seconds, 1e6 * seconds / (double)max_steps);

    tg_release(bnmean), tg_release(bnvar);
    tg_release(xtr), tg_release(ytr), tg_release(xdev), tg_release(ydev);
    p4_params_free(&p);
    tg_generator_free(torch_default);
    tg_generator_free(g);
    tg_dataset_free(&tr), tg_dataset_free(&dev), tg_dataset_free(&te);
    tg_words_free(words);
    if (tg_live_tensors() != 0) {
        tg_print_live_tensors(stderr); // each one, with what made it
        return 1;
    }
    return rc == 0 ? 0 : 1;
}
