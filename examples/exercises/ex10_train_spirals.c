/*
 * Exercise 10: a training loop for the spirals.
 * Statement: docs/exercises/10-train-spirals.md
 * Grade:     meson test -C build --suite exercises ex10 --print-errorlogs
 */
#include "exercises.h"

/* Trains model on train for `epochs` epochs of mini-batches of
 * batch_size rows, shuffled with g, minimising the mean cross-entropy
 * with opt. Returns the average of the last epoch's batch losses, or NAN
 * on error.
 *
 * Each batch, once tg_batches_next has given it, takes five calls and
 * four releases; docs/training.md, section 1, says which calls and why
 * their order matters. Read each batch loss with tg_item before you
 * release it, and release every tensor of a batch before the next one. */
double ex_train(tg_module *model, tg_optimizer *opt, const tg_dataset *train,
                int epochs, int64_t batch_size, tg_generator *g)
{
    EX_NOT_IMPLEMENTED(); // delete this line, then write the function
    (void)model;
    (void)opt;
    (void)train;
    (void)epochs;
    (void)batch_size;
    (void)g;
    return NAN;
}
