/*
 * examples/snippets/normalization_modules.c - the module code of
 * docs/normalization.md: the batch statistics a BatchNorm module does not
 * keep, obtained by calling the op on the module's own tensors (section
 * 7); how the modules print (section 7); and the error for a training
 * batch of one value per channel (section 2).
 */
#include "tapegrad.h"

#include <stdio.h>

/* The batch statistics of x as bn would compute them, without moving its
 * running statistics. */
static void batch_statistics(tg_module *bn, const tg_tensor *x)
{
    tg_tensor *mean, *invstd;
    tg_batch_norm_options o = tg_batch_norm_defaults();
    o.momentum = TG_EXACT_ZERO; // look without moving the running statistics
    tg_tensor *y = tg_batch_norm_ex(x, tg_module_buffer(bn, "running_mean"),
                                    tg_module_buffer(bn, "running_var"),
                                    tg_module_parameter(bn, "weight"),
                                    tg_module_parameter(bn, "bias"), &o,
                                    &mean, &invstd);   // (C,) each
    printf("batch mean    ");
    tg_print(mean);
    printf("batch invstd  ");
    tg_print(invstd);
    printf("running_mean  ");
    tg_print(tg_module_buffer(bn, "running_mean")); // unchanged: zeros
    tg_release(invstd);
    tg_release(mean);
    tg_release(y);
}

static void printing(void)
{
    tg_batch_norm_config cumulative = tg_batch_norm_config_defaults();
    cumulative.cumulative = true;           // PyTorch's momentum=None
    tg_batch_norm_config makemore = tg_batch_norm_config_defaults();
    makemore.correction = 1;                // unbiased training variance
    tg_module *mods[] = {
        tg_batch_norm1d_new(3, NULL),
        tg_batch_norm1d_new(3, &cumulative),
        tg_batch_norm1d_new(3, &makemore),
        tg_layer_norm_new(TG_SHAPE(4), 1e-5, true),
    };
    for (int i = 0; i < 4; i++) {
        tg_module_print(mods[i]);
        tg_module_free(mods[i]);
    }
}

int main(void)
{
    printf("== The batch statistics (section 7) ==\n");
    tg_manual_seed(0);
    tg_tensor *x = tg_randn(TG_SHAPE(8, 3), TG_FLOAT32);
    tg_module *bn = tg_batch_norm1d_new(3, NULL);
    batch_statistics(bn, x);

    printf("\n== Printing (section 7) ==\n");
    printing();

    printf("\n== One value per channel (section 2) ==\n");
    tg_set_error_handler(tg_error_handler_quiet);
    tg_tensor *one = tg_narrow(x, 0, 0, 1);     // (1, 3): n = 1
    tg_tensor *y = tg_module_forward(bn, one);  // training mode: refused
    printf("%s\n", y ? "(no error?)" : tg_last_error());
    tg_set_error_handler(NULL);

    tg_release(y);
    tg_release(one);
    tg_release(x);
    tg_module_free(bn);
    return tg_live_tensors() == 0 ? 0 : 1;
}
