/*
 * examples/makemore/part3_deep.c - the deeper network at the end of
 * makemore part 3 (the "PyTorch-ifying" section of makemore_part3_bn.ipynb)
 * and the lecture's diagnostics of it: per Tanh layer the activations'
 * mean, std and saturation and their gradients; per 2-D weight its
 * gradient and grad:data ratio; the update:data ratio of every weight at
 * every step; each as numbers and as plots.
 *
 * The network, from the library's modules:
 *   Embedding(27, 10) -> Flatten()
 *   -> 5 x [Linear(., 100, bias=False) -> BatchNorm1d(100) -> Tanh()]
 *   -> Linear(100, 27, bias=False) -> BatchNorm1d(27)
 * with the lecture's initial values: C and each weight drawn from
 * torch.Generator().manual_seed(2147483647) in order, the weights as
 * randn((fan_in, fan_out)) / fan_in**0.5 (a Linear keeps W^T), the last
 * BatchNorm's gain times 0.1 ("make less confident"). The lecture's
 * BatchNorm1d class normalises with the unbiased variance
 * (x.var(0, keepdim=True)), eps 1e-5, momentum 0.1: BatchNorm1d with
 * correction 1. Trained as the lecture's cell does before its `break`:
 * 1001 steps (i = 0 .. 1000) of SGD at lr 0.1 on batches of 32 from the
 * same generator. Then, as the lecture: the tables of the last step, the
 * split losses in eval mode and 20 names sampled from a generator seeded
 * 2147483647 + 10.
 *
 * What it writes into --out (default out/makemore_part3_deep):
 *   histograms.csv  kind,layer,center,density: 100-bin density histograms
 *                   of the last step's Tanh outputs ("act"), their
 *                   gradients ("grad") and the 2-D weights' gradients
 *                   ("wgrad"), as torch.histogram(t, density=True)
 *   update_ratio.csv step,w0,w1,...: log10(std(lr * grad) / std(W)) of the
 *                   2-D weights (C first) after every step (the lecture's ud)
 *   loss.csv        step,loss
 *   activations.png, gradients.png, weight_grads.png, update_ratio.png
 *                   drawn by gnuplot with scripts/plots/part3_deep.gp
 * It exits 1 on an error or a leaked tensor.
 */
#include "tapegrad.h"

#include "../demo_util.h"
#include "part3_model.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#ifndef TG_DATA_DIR
#define TG_DATA_DIR "data"
#endif

#define DEPTH PART3_DEEP_DEPTH
#define BINS 100
#define SATURATED 0.97
#define MAX_PARAMS 32

typedef struct options {
    long long steps, words;
    const char *data, *out;
    bool plots;
} options;

static void usage(FILE *f, const char *prog)
{
    fprintf(f,
            "usage: %s [options]\n"
            "Trains makemore part 3's deeper network (5 x Linear -> "
            "BatchNorm1d -> Tanh)\nas the lecture does and prints and plots "
            "its diagnostics.\n\n"
            "  --steps N    training steps (default 1001: the lecture's "
            "loop up to its break)\n"
            "  --words N    use the first N words of the shuffled list "
            "(default: all)\n"
            "  --data FILE  the word list (default %s/names.txt)\n"
            "  --out DIR    output folder (default out/makemore_part3_deep)\n"
            "  --no-plots   write the CSV files only, do not run gnuplot\n"
            "  --help       this text\n",
            prog, TG_DATA_DIR);
}

static int parse_options(int argc, char **argv, options *o)
{
    *o = (options){1001, 0, TG_DATA_DIR "/names.txt",
                   "out/makemore_part3_deep", true};
    static const char *const names[] = {"--steps", "--words", "--data",
                                        "--out", NULL};
    const char *v = NULL;
    int i = 0, k;
    while ((k = demo_next_option(argc, argv, &i, names, &v, &o->plots)) >=
           0) {
        bool ok = true;
        if (k == 0)
            ok = demo_parse_int(v, 1, 100000000, &o->steps);
        else if (k == 1)
            ok = demo_parse_int(v, 10, 100000000, &o->words);
        else {
            ok = *v != '\0';
            *(k == 2 ? &o->data : &o->out) = v;
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

/* ----------------------------------------------------------------- model */


/* ----------------------------------------------------------- statistics */

static double item_of(tg_tensor *t) // releases t
{
    double v = t ? tg_item(t) : NAN;
    tg_release(t);
    return v;
}

static double mean_of(const tg_tensor *t)
{
    return item_of(tg_mean(t, NULL, 0, false));
}

static double std_of(const tg_tensor *t)
{
    return item_of(tg_std(t, NULL, 0, 1, false));
}

/* (t.abs() > 0.97).float().mean() */
static double saturation_of(const tg_tensor *t)
{
    tg_tensor *a = tg_abs(t);
    tg_tensor *s = tg_gt_scalar(a, SATURATED);
    tg_tensor *f = tg_to_dtype(s, TG_FLOAT32);
    tg_release(s);
    tg_release(a);
    double v = mean_of(f);
    tg_release(f);
    return v;
}

/* One histogram as CSV rows kind,layer,center,density; hx[:-1] as the
 * lecture plots it would be the left edges, the centres read better. */
static int write_histogram(FILE *f, const char *kind, int layer,
                           const tg_tensor *t)
{
    tg_tensor *edges = NULL;
    tg_tensor *h = tg_histogram(t, BINS, true, &edges);
    double d[BINS], e[BINS + 1];
    int rc = h && tg_to_f64_array(h, d) == 0 &&
                     tg_to_f64_array(edges, e) == 0
                 ? 0
                 : -1;
    for (int b = 0; rc == 0 && b < BINS; b++)
        fprintf(f, "%s,%d,%.9g,%.9g\n", kind, layer,
                0.5 * (e[b] + e[b + 1]), d[b]);
    tg_release(edges);
    tg_release(h);
    return rc;
}

/* The lecture's three tables, from the last step's tensors. */
static int print_tables(tg_tensor **acts, const tg_named_tensor *params,
                        int nparams, FILE *hist)
{
    int rc = 0;
    tg_no_grad_begin();
    printf("\nactivation distribution (the last step)\n");
    for (int l = 0; l < DEPTH; l++) {
        int at = 3 * l + 2; // the Tanh's index in the lecture's layers
        printf("layer %d (%10s): mean %+.2f, std %.2f, saturated: %.2f%%\n",
               at, "Tanh", mean_of(acts[l]), std_of(acts[l]),
               saturation_of(acts[l]) * 100);
        rc |= write_histogram(hist, "act", at, acts[l]);
    }
    printf("\ngradient distribution\n");
    for (int l = 0; l < DEPTH; l++) {
        int at = 3 * l + 2;
        const tg_tensor *g = acts[l]->grad;
        printf("layer %d (%10s): mean %+f, std %e\n", at, "Tanh",
               mean_of(g), std_of(g));
        rc |= write_histogram(hist, "grad", at, g);
    }
    printf("\nweights gradient distribution\n");
    for (int i = 0; i < nparams; i++) {
        const tg_tensor *p = params[i].tensor;
        if (p->ndim != 2)
            continue;
        /* the lecture's weights are (fan_in, fan_out); a Linear's are
         * (out, in), and C is (vocab, n_embd) in both */
        bool linear = i > 0;
        char shape[32];
        snprintf(shape, sizeof shape, "(%lld, %lld)",
                 (long long)p->shape[linear ? 1 : 0],
                 (long long)p->shape[linear ? 0 : 1]);
        tg_grad_summary gs;
        if (tg_param_grad_summary(p, &gs) < 0)
            rc = -1;
        printf("weight %10s | mean %+f | std %e | grad:data ratio %e\n",
               shape, gs.grad_mean, gs.grad_std, gs.grad_data);
        rc |= write_histogram(hist, "wgrad", i, p->grad);
    }
    tg_no_grad_end();
    return rc;
}

/* ------------------------------------------------------------------ main */

static int train(const options *o, tg_module *net, const part3_data *d,
                 tg_generator *g, FILE *loss_csv, FILE *ud_csv, FILE *hist)
{
    tg_named_tensor params[MAX_PARAMS];
    int n = tg_module_named_parameters(net, params, MAX_PARAMS);
    if (n < 0 || n > MAX_PARAMS)
        return -1;
    tg_tensor *p[MAX_PARAMS];
    fprintf(ud_csv, "step");
    for (int i = 0; i < n; i++) {
        p[i] = params[i].tensor;
        if (p[i]->ndim == 2)
            fprintf(ud_csv, ",param_%d", i);
    }
    fprintf(ud_csv, "\n");
    fprintf(loss_csv, "step,loss\n");
    part3_progress prog;
    part3_progress_start(&prog, stdout, o->steps);
    const double lr = 0.1; // lr = 0.1 if i < 150000 else 0.01
    int rc = 0;
    for (long long i = 0; i < o->steps && rc == 0; i++) {
        tg_tensor *acts[DEPTH];
        double lv;
        rc = part3_deep_step(net, &d->train, g, lr, acts, &lv);
        if (rc == 0) {
            if (i % 10000 == 0) {
                part3_progress_clear(&prog);
                printf("%7lld/%7lld: %.4f\n", i, o->steps, lv);
            }
            fprintf(loss_csv, "%lld,%.9g\n", i, lv);
            /* ud.append([((lr*p.grad).std() / p.data.std()).log10() ...]) */
            fprintf(ud_csv, "%lld", i);
            tg_no_grad_begin();
            for (int k = 0; k < n; k++)
                if (p[k]->ndim == 2)
                    fprintf(ud_csv, ",%.6g",
                            log10(lr * std_of(p[k]->grad) / std_of(p[k])));
            tg_no_grad_end();
            fprintf(ud_csv, "\n");
            if (i == o->steps - 1) {
                part3_progress_clear(&prog);
                rc = print_tables(acts, params, n, hist);
            }
        }
        for (int l = 0; l < DEPTH; l++)
            tg_release(acts[l]);
        part3_progress_show(&prog, i + 1, lv);
    }
    part3_progress_clear(&prog);
    return rc;
}

static tg_tensor *eval_logits(void *net, const tg_tensor *x)
{
    return tg_module_forward(net, x); // the net is in eval mode here
}

int main(int argc, char **argv)
{
    options o;
    int prc = parse_options(argc, argv, &o);
    if (prc != 0)
        return demo_usage_exit(prc, usage, argv[0]);
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (demo_make_dirs(o.out) != 0)
        return 1;
    int rc = 1;
    part3_data d = {0};
    tg_module *net = NULL;
    FILE *loss_csv = NULL, *ud_csv = NULL, *hist = NULL;
    tg_generator *g = tg_generator_new(PART3_SEED);
    tg_generator *gs = tg_generator_new(PART3_SEED + 10ULL);
    if (!g || !gs || part3_data_load(o.data, o.words, &d) != 0)
        goto done;
    net = part3_deep_new(d.vocab_size, g);
    if (!net)
        goto done;
    /* print(sum(p.nelement() for p in parameters)) */
    printf("%lld\n", (long long)tg_module_num_elements(net));
    loss_csv = demo_open_out(o.out, "loss.csv");
    ud_csv = demo_open_out(o.out, "update_ratio.csv");
    hist = demo_open_out(o.out, "histograms.csv");
    if (!loss_csv || !ud_csv || !hist)
        goto done;
    fprintf(hist, "kind,layer,center,density\n");
    if (train(&o, net, &d, g, loss_csv, ud_csv, hist) != 0)
        goto done;
    FILE *fs[3] = {loss_csv, ud_csv, hist};
    loss_csv = ud_csv = hist = NULL;
    bool written = true;
    for (int i = 0; i < 3; i++) {
        if (ferror(fs[i]))
            written = false;
        if (fclose(fs[i]) != 0)
            written = false;
    }
    if (!written) {
        fprintf(stderr, "cannot write the CSV files in %s\n", o.out);
        goto done;
    }

    /* for layer in layers: layer.training = False; split_loss(...) */
    tg_module_train(net, false);
    printf("\n");
    const char *split_names[2] = {"train", "val"};
    const tg_dataset *splits[2] = {&d.train, &d.val};
    for (int i = 0; i < 2; i++) {
        double loss;
        if (part3_split_loss(eval_logits, net, splits[i], &loss) != 0)
            goto done;
        printf("%s %.17g\n", split_names[i], loss);
    }
    printf("\n");
    for (int i = 0; i < 20; i++) {
        char name[PART3_NAME_MAX];
        if (part3_sample(eval_logits, net, tg_words_vocab(d.words), gs,
                         name) != 0)
            goto done;
        printf("%s\n", name);
    }
    rc = 0;
    if (o.plots && demo_have_gnuplot()) {
        const char *dir = demo_plots_dir();
        const char *const scripts[] = {"part3_deep.gp"};
        if (!demo_scripts_readable(dir, scripts, 1) ||
            demo_run_gnuplot(dir, scripts[0], o.out,
                             "makemore part 3: 5 x (Linear, BatchNorm1d, "
                             "Tanh)",
                             NULL, NULL) != 0)
            rc = 1;
        else
            printf("plots: %s/activations.png, gradients.png, "
                   "weight_grads.png, update_ratio.png\n",
                   o.out);
    }

done:
    if (hist)
        fclose(hist);
    if (ud_csv)
        fclose(ud_csv);
    if (loss_csv)
        fclose(loss_csv);
    tg_module_free(net);
    part3_data_free(&d);
    tg_generator_free(gs);
    tg_generator_free(g);
    return demo_exit_status(rc);
}
