/*
 * examples/snippets/training_checkpoints.c - the checkpoint errors of
 * docs/training.md, section 5. It saves the untrained model of section 1
 * (2 -> 32 -> 32 -> 2, ReLU) into moons_model/ in the current folder, then
 * loads it into three models it does not fit: one with 16 hidden units,
 * one with BatchNorm, and the right one converted to float64. Each load
 * fails before changing anything, and the program prints why.
 */
#include "tapegrad.h"

#include <stdio.h>

/* Loads moons_model into m, which must fail; prints the message. */
static int load_must_fail(tg_module *m)
{
    int rc = tg_module_load(m, "moons_model");
    printf("%s\n\n", rc != 0 ? tg_last_error() : "(loaded?)");
    tg_module_free(m);
    return rc != 0 ? 0 : 1;
}

int main(void)
{
    tg_manual_seed(0);
    tg_module *model = tg_mlp_new(2, TG_SHAPE(32, 32), 2, TG_NORM_NONE,
                                  TG_ACT_RELU);
    if (tg_module_save(model, "moons_model") != 0)
        return 1;

    tg_set_error_handler(tg_error_handler_quiet); // printed below instead
    int unexpected = 0;
    unexpected += load_must_fail(tg_mlp_new(2, TG_SHAPE(16, 16), 2,
                                            TG_NORM_NONE, TG_ACT_RELU));
    unexpected += load_must_fail(tg_mlp_new(2, TG_SHAPE(32, 32), 2,
                                            TG_NORM_BATCH, TG_ACT_RELU));
    tg_module_to_dtype(model, TG_FLOAT64);
    unexpected += load_must_fail(model);
    tg_set_error_handler(NULL);
    return unexpected == 0 && tg_live_tensors() == 0 ? 0 : 1;
}
