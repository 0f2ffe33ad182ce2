/*
 * examples/snippets/readme_normalization.c - the program README.md shows
 * in "Normalisation layers": LayerNorm and BatchNorm1d modules on one
 * (N, C) batch, train and eval mode, and how a module prints. The README
 * quotes it from #include to the end, with its output.
 */
#include "tapegrad.h"

int main(void)
{
    tg_manual_seed(0);
    tg_tensor *x = tg_randn(TG_SHAPE(32, 64), TG_FLOAT32);  // (N, C)
    tg_module *ln = tg_layer_norm_new(TG_SHAPE(64), 1e-5, true);
    tg_module *bn = tg_batch_norm1d_new(64, NULL);  // PyTorch's defaults
    tg_tensor *a = tg_module_forward(ln, x); // each row: mean 0, variance 1
    tg_tensor *b = tg_module_forward(bn, x); // each column: mean 0, var 1;
                                             // running_mean/var move
    tg_module_train(bn, false);  // eval: normalise with the running stats
    tg_module_print(ln);
    tg_module_print(bn);
    tg_release(b); tg_release(a); tg_release(x);
    tg_module_free(bn); tg_module_free(ln);
    return tg_live_tensors() == 0 ? 0 : 1;
}
