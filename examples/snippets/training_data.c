/*
 * examples/snippets/training_data.c - the data code of docs/training.md,
 * section 6: a seeded toy dataset, a train/validation split, and one epoch
 * of shuffled mini-batches, each a pair of new tensors the loop releases.
 * The doc shows excerpts and their output.
 */
#include "tapegrad.h"

#include <stdio.h>

int main(void)
{
    tg_generator *g = tg_generator_new(0);
    tg_dataset all = {0}, train = {0}, val = {0};
    tg_make_blobs(6, 2, 0.1, g, &all);             // x (12, 2), y (12,)
    tg_dataset_split(&all, 0.25, g, &train, &val); // 9 and 3 rows
    tg_batches *batches = tg_batches_new(&train, 4, true, false, g);
    printf("batches per epoch: %lld\n",
           (long long)tg_batches_per_epoch(batches));

    tg_tensor *x, *y;
    while (tg_batches_next(batches, &x, &y)) {   // one epoch
        /* x (B, D), y (B,): new tensors, released by you */
        char shape[TG_SHAPE_STR_MAX];
        printf("x %s, y ", tg_shape_str(x, shape));
        tg_print(y);
        tg_release(x);
        tg_release(y);
    }

    tg_batches_free(batches);
    tg_dataset_free(&val);
    tg_dataset_free(&train);
    tg_dataset_free(&all);
    tg_generator_free(g);
    return tg_live_tensors() == 0 ? 0 : 1;
}
