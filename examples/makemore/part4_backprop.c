/*
 * examples/makemore/part4_backprop.c - makemore part 4, "becoming a
 * backprop ninja", exercises 1 to 3: the MLP's forward cut into every
 * intermediate, loss.backward() on the tape, then the same gradients by
 * hand, each checked against the tape's with tg_cmp, the lecture's cmp().
 *
 *   part4_backprop [--data names.txt]
 *
 * The network and the hand-written backwards are in part4_mlp.c; the
 * training with the hand backward only (exercise 4) is part4_train.c.
 * docs/training.md, section 8, shows and discusses the output.
 */
#include "part4_mlp.h"

#include <stdio.h>
#include <string.h>

#ifndef TG_DATA_DIR
#define TG_DATA_DIR "data"
#endif

int main(int argc, char **argv)
{
    const char *path = TG_DATA_DIR "/names.txt";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--data") == 0 && i + 1 < argc)
            path = argv[++i];
        else {
            fprintf(stderr, "usage: %s [--data names.txt]\n", argv[0]);
            return 2;
        }
    }
    tg_words *words = tg_words_load(path);
    tg_dataset tr = {0}, dev = {0}, te = {0};
    if (!words || tg_words_split(words, 3, 42, &tr, &dev, &te) != 0)
        return 1; // the error is printed
    int64_t vocab = (int64_t)strlen(tg_words_vocab(words));

    /* g = torch.Generator().manual_seed(2147483647); n_embd 10,
     * n_hidden 64; bngain and bnbias from the default generator */
    tg_generator *g = tg_generator_new(P4_SEED);
    tg_generator *torch_default = tg_generator_new(P4_TORCH_DEFAULT_SEED);
    p4_params p;
    if (p4_params_init(&p, vocab, 10, 3, 64, g, torch_default) != 0)
        return 1;
    printf("%lld\n", (long long)p4_params_count(&p)); // parameters
    tg_tensor *list[P4_NPARAMS];
    p4_params_list(&p, list);
    for (int i = 0; i < P4_NPARAMS; i++)
        tg_set_requires_grad(list[i], true);

    /* a batch of 32, the forward, loss.backward() */
    tg_tensor *xb, *yb;
    p4_forward f;
    int rc = -1;
    if (p4_batch(&tr, 32, g, &xb, &yb) != 0)
        goto done_data;
    if (p4_forward_run(&p, xb, yb, &f) != 0)
        goto done_batch;
    if (tg_backward(f.loss) != 0)
        goto done_forward;
    tg_print(f.loss);

    /* Exercise 1: backprop through the whole thing manually */
    printf("\nexercise 1: every intermediate by hand\n");
    p4_grads d;
    if (p4_backward_manual(&p, &f, xb, yb, &d) != 0)
        goto done_forward;
    p4_cmp_row rows[P4_NCMP];
    p4_cmp_rows(&p, &f, &d, rows);
    bool all_close = true;
    for (int i = 0; i < P4_NCMP; i++)
        all_close = tg_cmp(rows[i].name, rows[i].dt, rows[i].t) == 1 &&
                    all_close;

    /* Exercise 2: cross-entropy forward and backward in one go */
    printf("\nexercise 2: cross-entropy in one expression\n");
    tg_no_grad_begin();
    tg_tensor *loss_fast = tg_cross_entropy(f.logits, yb, TG_REDUCTION_MEAN);
    tg_tensor *ldiff = tg_sub(loss_fast, f.loss);
    printf("%.9g diff: %.9g\n", tg_item(loss_fast), tg_item(ldiff));
    tg_tensor *dlogits = p4_cross_entropy_backward(f.logits, yb);
    tg_no_grad_end();
    all_close = tg_cmp("logits", dlogits, f.logits) == 1 && all_close;

    /* Exercise 3: BatchNorm forward and backward in one go */
    printf("\nexercise 3: BatchNorm in one expression\n");
    tg_no_grad_begin();
    tg_tensor *mean = tg_mean(f.hprebn, TG_DIMS(0), true);
    tg_tensor *var = tg_var(f.hprebn, TG_DIMS(0), 1, true);
    tg_tensor *centred = tg_sub(f.hprebn, mean);
    tg_tensor *veps = tg_add_scalar(var, 1e-5);
    tg_tensor *sd = tg_sqrt(veps);
    tg_tensor *gc = tg_mul(p.bngain, centred);
    tg_tensor *norm = tg_div(gc, sd);
    tg_tensor *hpreact_fast = tg_add(norm, p.bnbias);
    tg_tensor *hd = tg_sub(hpreact_fast, f.hpreact);
    tg_tensor *ahd = tg_abs(hd);
    tg_tensor *maxd = tg_max(ahd, NULL, 0, false);
    printf("max diff: %.5g\n", tg_item(maxd));
    tg_tensor *dhprebn =
        p4_batch_norm_backward(d.hpreact, p.bngain, f.bnvar_inv, f.bnraw);
    tg_no_grad_end();
    all_close = tg_cmp("hprebn", dhprebn, f.hprebn) == 1 && all_close;
    rc = all_close ? 0 : 1;

    tg_release(dhprebn), tg_release(maxd), tg_release(ahd);
    tg_release(hd), tg_release(hpreact_fast), tg_release(norm);
    tg_release(gc), tg_release(sd), tg_release(veps), tg_release(centred);
    tg_release(var), tg_release(mean);
    tg_release(dlogits), tg_release(ldiff), tg_release(loss_fast);
    p4_grads_free(&d);
done_forward:
    p4_forward_free(&f);
done_batch:
    tg_release(xb), tg_release(yb);
done_data:
    p4_params_free(&p);
    tg_generator_free(torch_default);
    tg_generator_free(g);
    tg_dataset_free(&tr), tg_dataset_free(&dev), tg_dataset_free(&te);
    tg_words_free(words);
    if (tg_live_tensors() != 0) {
        tg_print_live_tensors(stderr); // each one, with what made it
        return 1;
    }
    return rc;
}
