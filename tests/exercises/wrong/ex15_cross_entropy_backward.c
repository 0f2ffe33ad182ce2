/*
 * A wrong answer to exercise 15, which its grader must reject: softmax
 * minus the one-hot labels, without the division by the number of rows:
 * the gradient of the summed loss, not of the mean. Right for a batch of
 * one row only.
 */
#include "exercises.h"

tg_tensor *ex_cross_entropy_backward(const tg_tensor *logits,
                                     const tg_tensor *labels)
{
    if (logits == NULL || labels == NULL)
        return NULL;
    tg_tensor *p = tg_softmax(logits, 1);
    tg_tensor *oh = tg_one_hot(labels, logits->shape[1]);
    tg_tensor *out = tg_sub(p, oh); // forgot: / n
    tg_release(oh);
    tg_release(p);
    return out;
}
