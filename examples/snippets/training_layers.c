/*
 * examples/snippets/training_layers.c - the layer code of
 * docs/training.md, section 2: an MLP and how it prints, its parameter
 * and buffer names, a Linear initialised as PyTorch's after the same
 * seed, Dropout in training and eval mode, and a Sequential built in one
 * expression. The doc shows excerpts and their output.
 */
#include "tapegrad.h"

#include <stdio.h>

/* Prints the dotted names of m's parameters, then of its buffers. */
static void list_names(const tg_module *m)
{
    tg_named_tensor named[32];
    int n = tg_module_named_parameters(m, named, 32);
    printf("parameters:");
    for (int i = 0; i < n && i < 32; i++)
        printf(" %s", named[i].name);
    n = tg_module_named_buffers(m, named, 32);
    printf("\nbuffers:");
    for (int i = 0; i < n && i < 32; i++)
        printf(" %s", named[i].name);
    printf("\n");
}

static void mlp(void)
{
    tg_manual_seed(0);
    tg_module *mlp = tg_mlp_new(2, TG_SHAPE(64, 64), 3, TG_NORM_BATCH,
                                TG_ACT_RELU);
    tg_module_print(mlp);
    list_names(mlp);
    printf("elements: %lld\n", (long long)tg_module_num_elements(mlp));
    tg_module_free(mlp);
}

static void linear(void)
{
    tg_manual_seed(0);
    tg_module *fc = tg_linear_new(3, 2, true);
    tg_print(tg_module_parameter(fc, "weight"));
    tg_print(tg_module_parameter(fc, "bias"));
    tg_module_free(fc);
}

static void dropout(void)
{
    tg_module *d = tg_dropout_new(0.5);
    tg_manual_seed(0);
    tg_tensor *x = tg_ones(TG_SHAPE(2, 4), TG_FLOAT32);
    tg_tensor *y = tg_module_forward(d, x);    // training mode
    tg_print(y);
    tg_module_train(d, false);
    tg_tensor *z = tg_module_forward(d, x);    // eval mode: z == x
    tg_print(z);
    tg_release(z);
    tg_release(y);
    tg_release(x);
    tg_module_free(d);
}

static int sequential(void)
{
    tg_module *net = TG_SEQUENTIAL(tg_linear_new(2, 4, true), tg_tanh_new(),
                                   tg_dropout_new(0.1),
                                   tg_linear_new(4, 1, false));
    if (!net)
        return 1;
    tg_module_print(net);
    tg_module_free(net);
    return 0;
}

int main(void)
{
    printf("== An MLP ==\n");
    mlp();
    printf("\n== Linear ==\n");
    linear();
    printf("\n== Dropout ==\n");
    dropout();
    printf("\n== Sequential ==\n");
    int rc = sequential();
    return rc == 0 && tg_live_tensors() == 0 ? 0 : 1;
}
