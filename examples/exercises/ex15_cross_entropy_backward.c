/*
 * Exercise 15: the cross-entropy backward in one expression (makemore
 * part 4, exercise 2).
 * Statement: docs/exercises/15-cross-entropy-backward.md
 * Grade:     meson test -C build --suite exercises ex15 --print-errorlogs
 */
#include "exercises.h"

/* loss = mean over the N rows of -log(softmax(logits)[i, labels[i]]).
 * Return dL/dlogits (N, C), in logits' dtype: work out the derivative on
 * paper first, simplify it, then write it with a few tensor ops. */
tg_tensor *ex_cross_entropy_backward(const tg_tensor *logits,
                                     const tg_tensor *labels)
{
    EX_NOT_IMPLEMENTED(); // delete this line, then write the function
    (void)logits;
    (void)labels;
    return NULL;
}
